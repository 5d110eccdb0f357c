//! `kubectl config`: the terminal's kubeconfig, one context per user of the cluster
//! (`kubeloop` for admin, `NAME@kubeloop` for the others, as `kubeloop serve` writes it),
//! each with its namespace (`k8s.io/kubectl/pkg/cmd/config`).

use super::Flags;
use crate::foundation::sort::Sort;
use crate::foundation::status::API_SERVER;
use crate::kubectl::printers::table;

/// One context: the user it runs as and its default namespace.
#[derive(Debug, Clone, PartialEq)]
pub struct Context {
    pub name: String,
    pub user: String,
    pub namespace: String,
}

/// The contexts and the current one.
#[derive(Debug, Clone, PartialEq)]
pub struct Kubeconfig {
    pub contexts: Vec<Context>,
    pub current: String,
}

impl Default for Kubeconfig {
    fn default() -> Self {
        Kubeconfig::for_users(&[])
    }
}

impl Kubeconfig {
    /// `kubeloop` (admin) and `NAME@kubeloop` for each other user, all in `default`.
    pub fn for_users(users: &[&str]) -> Kubeconfig {
        let mut contexts = vec![Context { name: "kubeloop".into(), user: "admin".into(), namespace: "default".into() }];
        for u in users.iter().filter(|u| **u != "admin") {
            contexts.push(Context { name: format!("{u}@kubeloop"), user: u.to_string(), namespace: "default".into() });
        }
        Kubeconfig { contexts, current: "kubeloop".into() }
    }

    pub fn current(&self) -> Option<&Context> {
        self.contexts.iter().find(|c| c.name == self.current)
    }

    /// The current context's namespace (`default` if it names none).
    pub fn namespace(&self) -> &str {
        self.current().map(|c| c.namespace.as_str()).filter(|n| !n.is_empty()).unwrap_or("default")
    }

    /// The user the current context runs as.
    pub fn user(&self) -> &str {
        self.current().map_or("admin", |c| c.user.as_str())
    }

    /// `line` with `--namespace=NS` after its verb when the current context's namespace is
    /// not `default` and the line names none (for the commands that read `-n` themselves).
    pub fn with_namespace(&self, line: &str) -> String {
        let ns = self.namespace();
        let words: Vec<&str> = line.split(' ').collect();
        let before: Vec<&str> = words.iter().take_while(|w| **w != "--").copied().collect();
        let named =
            before.iter().any(|w| matches!(*w, "-n" | "--namespace" | "-A" | "--all-namespaces") || w.starts_with("--namespace=") || w.starts_with("-n="));
        if ns == "default" || named {
            return line.to_string();
        }
        let verb_at = usize::from(words.first() == Some(&"kubectl"));
        let mut out: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        if out.len() > verb_at {
            out.insert(verb_at + 1, format!("--namespace={ns}"));
        }
        out.join(" ")
    }

    /// Make the first context of `user` current (the page's user menu), unless the
    /// current one is already theirs.
    pub fn use_user(&mut self, user: &str) {
        if self.user() == user {
            return;
        }
        if let Some(c) = self.contexts.iter().find(|c| c.user == user) {
            self.current = c.name.clone();
        }
    }

    /// `kubectl config view`: secrets redacted, as kubectl prints them.
    fn view(&self, minify: bool) -> Vec<String> {
        let mut contexts: Vec<&Context> = self.contexts.iter().filter(|c| !minify || c.name == self.current).collect();
        contexts.sort_stable_by(|a, b| a.name.cmp(&b.name));
        let mut users: Vec<&str> = contexts.iter().map(|c| c.user.as_str()).collect();
        users.sort_stable();
        users.dedup();
        let mut out = vec![
            "apiVersion: v1".to_string(),
            "clusters:".into(),
            "- cluster:".into(),
            "    certificate-authority-data: DATA+OMITTED".into(),
            format!("    server: https://{API_SERVER}"),
            "  name: kubeloop".into(),
            "contexts:".into(),
        ];
        for c in contexts {
            out.extend(["- context:".to_string(), "    cluster: kubeloop".into()]);
            if !c.namespace.is_empty() {
                out.push(format!("    namespace: {}", c.namespace));
            }
            out.extend([format!("    user: {}", c.user), format!("  name: {}", c.name)]);
        }
        out.extend([format!("current-context: {}", self.current), "kind: Config".into(), "preferences: {}".into(), "users:".into()]);
        for u in users {
            out.extend([format!("- name: {u}"), "  user:".into(), "    token: REDACTED".into()]);
        }
        out
    }
}

/// Where the terminal's kubectl keeps its kubeconfig (its messages name the file).
pub const PATH: &str = "/root/.kube/config";

pub(super) fn config(kc: &mut Kubeconfig, f: &Flags) -> Vec<String> {
    let sub = f.positional.first().map(String::as_str).unwrap_or("");
    let arg = f.positional.get(1);
    match sub {
        "current-context" => vec![kc.current.clone()],
        "view" => kc.view(f.get("--minify") == Some("true")),
        "get-contexts" => {
            let mut contexts: Vec<&Context> = kc.contexts.iter().filter(|c| arg.is_none_or(|a| *a == c.name)).collect();
            if let Some(a) = arg.filter(|_| contexts.is_empty()) {
                return vec![format!("error: context {a} not found")];
            }
            contexts.sort_stable_by(|a, b| a.name.cmp(&b.name));
            if f.get("--output") == Some("name") {
                return contexts.iter().map(|c| c.name.clone()).collect();
            }
            let mut rows = Vec::new();
            if f.get("--no-headers") != Some("true") {
                rows.push(["CURRENT", "NAME", "CLUSTER", "AUTHINFO", "NAMESPACE"].map(String::from).to_vec());
            }
            for c in contexts {
                let cur = if c.name == kc.current { "*" } else { "" };
                rows.push(vec![cur.into(), c.name.clone(), "kubeloop".into(), c.user.clone(), c.namespace.clone()]);
            }
            table(&rows).lines().map(str::to_string).collect()
        }
        "get-clusters" => vec!["NAME".into(), "kubeloop".into()],
        "get-users" => {
            let mut users: Vec<&str> = kc.contexts.iter().map(|c| c.user.as_str()).collect();
            users.sort_stable();
            users.dedup();
            std::iter::once("NAME".to_string()).chain(users.into_iter().map(str::to_string)).collect()
        }
        "use-context" | "use" => match arg {
            None => vec!["error: Unexpected args: []".into(), "See 'kubectl config use-context -h' for help and examples".into()],
            Some(name) if kc.contexts.iter().any(|c| c.name == *name) => {
                kc.current = name.clone();
                vec![format!("Switched to context \"{name}\".")]
            }
            Some(name) => vec![format!("error: no context exists with the name: \"{name}\"")],
        },
        "set-context" => {
            let current = f.get("--current") == Some("true");
            let name = match (arg, current) {
                (Some(_), true) => return vec!["error: you cannot specify a context name and --current".into()],
                (Some(n), false) => n.clone(),
                (None, true) => kc.current.clone(),
                (None, false) => return vec!["error: you must specify a non-empty context name or --current".into()],
            };
            let existed = kc.contexts.iter().any(|c| c.name == name);
            if !existed {
                kc.contexts.push(Context { name: name.clone(), user: String::new(), namespace: String::new() });
            }
            let Some(c) = kc.contexts.iter_mut().find(|c| c.name == name) else { return vec![] };
            if let Some(ns) = f.get("--namespace").or(f.namespace.as_deref()) {
                c.namespace = ns.to_string();
            }
            if let Some(u) = f.get("--user") {
                c.user = u.to_string();
            }
            vec![format!("Context \"{name}\" {}.", if existed { "modified" } else { "created" })]
        }
        "delete-context" => match &f.positional[1..] {
            [name] if kc.contexts.iter().any(|c| c.name == *name) => {
                kc.contexts.retain(|c| c.name != *name);
                let mut out = Vec::new();
                if kc.current == *name {
                    out.push("warning: this removed your active context, use \"kubectl config use-context\" to select a different one".into());
                }
                out.push(format!("deleted context {name} from {PATH}"));
                out
            }
            [name] => vec![format!("error: cannot delete context {name}, not in {PATH}")],
            _ => usage("Delete the specified context from the kubeconfig.", "Delete the context for the minikube cluster", "delete-context minikube", "delete-context NAME"),
        },
        "rename-context" => match &f.positional[1..] {
            [old, new] if !kc.contexts.iter().any(|c| c.name == *old) => vec![format!("error: cannot rename the context {old:?}, it's not in {PATH}")],
            [old, new] if kc.contexts.iter().any(|c| c.name == *new) => {
                vec![format!("error: cannot rename the context {old:?}, the context {new:?} already exists in {PATH}")]
            }
            [old, new] => {
                for c in kc.contexts.iter_mut().filter(|c| c.name == *old) {
                    c.name = new.clone();
                }
                if kc.current == *old {
                    kc.current = new.clone();
                }
                vec![format!("Context {old:?} renamed to {new:?}.")]
            }
            args => {
                let mut out = usage(
                    "Renames a context from the kubeconfig file.\n\n CONTEXT_NAME is the context name that you want to change.\n\n NEW_NAME is the new name you want to set.\n\n Note: If the context being renamed is the 'current-context', this field will also be updated.",
                    "Rename the context 'old-name' to 'new-name' in your kubeconfig file",
                    "rename-context old-name new-name",
                    "rename-context CONTEXT_NAME NEW_NAME",
                );
                out.push(format!("error: Unexpected args: [{}]", args.join(" ")));
                out
            }
        },
        "" => vec!["error: kubectl config needs a subcommand: current-context, view, get-contexts, use-context, set-context, rename-context, delete-context, get-clusters or get-users".into()],
        other => vec![format!(
            "error: kubeloop's kubeconfig has one cluster and a context per user; \"kubectl config {other}\" is not supported (current-context, view, get-contexts, use-context, set-context --namespace|--user, rename-context, delete-context, get-clusters and get-users are)"
        )],
    }
}

/// What kubectl prints for a config command given no argument: its help.
fn usage(what: &str, example: &str, line: &str, synopsis: &str) -> Vec<String> {
    what.lines()
        .map(str::to_string)
        .chain([
            String::new(),
            "Examples:".into(),
            format!("  # {example}"),
            format!("  kubectl config {line}"),
            String::new(),
            "Usage:".into(),
            format!("  kubectl config {synopsis} [options]"),
            String::new(),
            "Use \"kubectl options\" for a list of global command-line options (applies to all commands).".into(),
        ])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubectl::args::parse_flags;

    fn run(kc: &mut Kubeconfig, line: &str) -> Vec<String> {
        let args: Vec<String> = line.split(' ').map(str::to_string).collect();
        config(kc, &parse_flags(&args).unwrap())
    }

    #[test]
    fn contexts_switch_and_keep_their_namespace() {
        let mut kc = Kubeconfig::for_users(&["admin", "ajay"]);
        assert_eq!(
            run(&mut kc, "get-contexts"),
            [
                "CURRENT   NAME            CLUSTER    AUTHINFO   NAMESPACE",
                "          ajay@kubeloop   kubeloop   ajay       default",
                "*         kubeloop        kubeloop   admin      default"
            ]
        );
        assert_eq!(run(&mut kc, "set-context --current --namespace=payments"), ["Context \"kubeloop\" modified."]);
        assert_eq!(kc.namespace(), "payments");
        assert_eq!(run(&mut kc, "use-context ajay@kubeloop"), ["Switched to context \"ajay@kubeloop\"."]);
        assert_eq!((kc.user(), kc.namespace()), ("ajay", "default"));
        assert_eq!(run(&mut kc, "use-context nope"), ["error: no context exists with the name: \"nope\""]);
        assert_eq!(run(&mut kc, "current-context"), ["ajay@kubeloop"]);
        let view = run(&mut kc, "view --minify").join("\n");
        assert!(view.contains("    namespace: default\n    user: ajay\n  name: ajay@kubeloop\ncurrent-context: ajay@kubeloop"), "{view}");
        assert!(view.contains("    token: REDACTED") && !view.contains("admin"), "{view}");
    }

    #[test]
    fn contexts_are_renamed_and_deleted_as_kubectl_does_in_its_file() {
        let mut kc = Kubeconfig::for_users(&["admin", "ajay"]);
        assert_eq!(run(&mut kc, "rename-context kubeloop admin"), ["Context \"kubeloop\" renamed to \"admin\"."]);
        assert_eq!(kc.current, "admin");
        assert_eq!(run(&mut kc, "rename-context nope x"), ["error: cannot rename the context \"nope\", it's not in /root/.kube/config"]);
        assert_eq!(
            run(&mut kc, "rename-context admin ajay@kubeloop"),
            ["error: cannot rename the context \"admin\", the context \"ajay@kubeloop\" already exists in /root/.kube/config"]
        );
        assert_eq!(run(&mut kc, "rename-context a").last().unwrap(), "error: Unexpected args: [a]");
        assert_eq!(run(&mut kc, "delete-context ajay@kubeloop"), ["deleted context ajay@kubeloop from /root/.kube/config"]);
        assert_eq!(run(&mut kc, "delete-context nope"), ["error: cannot delete context nope, not in /root/.kube/config"]);
        assert_eq!(
            run(&mut kc, "delete-context admin"),
            [
                "warning: this removed your active context, use \"kubectl config use-context\" to select a different one",
                "deleted context admin from /root/.kube/config"
            ]
        );
        assert!(kc.current().is_none());
        assert_eq!(run(&mut kc, "get-contexts"), ["CURRENT   NAME   CLUSTER   AUTHINFO   NAMESPACE"]);
    }
}
