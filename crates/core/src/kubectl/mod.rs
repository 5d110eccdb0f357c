//! Layer 4, the client: kubectl as scenarios and the page's terminal run it, one file per
//! command family, printing what kubectl prints (`k8s.io/kubectl/pkg/cmd/...`). It reaches
//! the cluster through the API server and knows nothing of the loops. Requests carry every
//! write; `get -w`, Tab completion and `auth can-i` still read the API server's store and
//! RBAC directly instead of sending a watch, a list or a SelfSubjectAccessReview.

use crate::apiserver::{ApiServer, Credentials, KubeletClient, PatchType, Request, Verb};
use crate::foundation::api::{self, get_str, resource_for_kind, resource_for_name, ResourceId, RESOURCES};
use crate::foundation::sort::Sort;
use crate::foundation::status::Status;
use crate::foundation::value::{json, Map, Value};

pub mod config;
pub mod describe;
pub mod diff;
pub mod explain;
mod flags;
mod flagset;
pub mod gotemplate;
pub mod goyaml;
pub mod jsonpath;
pub mod printers;

mod apply;
mod args;
mod auth;
mod autoscale;
mod certificate;
mod completion;
mod create;
pub mod debug;
mod delete;
mod drain;
pub mod edit;
mod events;
mod exec;
mod get;
mod help;
mod info;
mod label;
mod logs;
mod patch;
mod portforward;
mod rollout;
pub mod run;
mod scale;
mod set;
mod taint;
mod top;
pub mod wait;

pub use apply::{apply_object, apply_object_dry, apply_server_side, apply_text, three_way};
use args::*;
pub use args::{heredoc, heredoc_open, split_args, verb_of};
use auth::*;
use autoscale::autoscale;
pub use completion::{commands, complete};
use create::*;
use delete::*;
use drain::*;
pub use exec::{attach_prepare, exec_finish, exec_prepare, interactive_shell, AttachTarget, ExecTarget};
use get::*;
pub use get::{run_watching, Watch};
use label::*;
pub use logs::{follow as logs_follow, logs, LogFollow};
pub use portforward::{port_forward_prepare, PortForward};
use rollout::*;
use scale::*;
use set::*;
use taint::*;
use top::top;

/// `deployment.apps/web`, `pod/x` (the name printer's prefix).
pub fn kind_prefix(r: ResourceId) -> String {
    let res = &RESOURCES[r];
    if res.group.is_empty() {
        res.kind.to_ascii_lowercase()
    } else {
        format!("{}.{}", res.kind.to_ascii_lowercase(), res.group)
    }
}

fn retrieval_error(s: &Status, r: ResourceId, name: &str, ns: &str, file: &str) -> String {
    let res = &RESOURCES[r];
    let gv = res.api_version();
    let reason = if s.reason.is_empty() { String::new() } else { format!(" ({})", s.reason) };
    format!(
        "Error from server{reason}: error when retrieving current configuration of:\nResource: \"{gv}, Resource={}\", GroupVersionKind: \"{gv}, Kind={}\"\nName: {name:?}, Namespace: {ns:?}\nfrom server for: {file:?}: {}",
        res.plural, res.kind, s.message
    )
}

/// kubectl prints the server's warnings (`Warning: ...`) before the result.
fn with_warnings(api: &ApiServer, line: String) -> String {
    let mut out: Vec<String> = api.warnings.iter().map(|w| format!("Warning: {w}")).collect();
    out.push(line);
    out.join("\n")
}

/// The lines for each document of a `-f` file: kubectl's parse error for a broken one,
/// `each`'s lines for an object.
/// Whether a line kubectl printed reports a failure: its `error:` and `Error from server`
/// lines, and the `The KIND "NAME" is invalid: …` of a refused object.
pub fn is_error_line(l: &str) -> bool {
    l.starts_with("error") || l.starts_with("Error") || l.starts_with("The request is invalid") || (l.starts_with("The ") && l.contains(" is invalid: "))
}

pub fn each_document(text: &str, file: &str, each: impl FnMut(Value) -> Vec<String>) -> Vec<String> {
    each_document_in(text, file, &Namespace::default(), each)
}

/// The namespace a command puts the objects of its files in: the one `-n` names
/// (`enforce`: an object that names another is refused, as kubectl refuses it), else the
/// context's.
#[derive(Debug, Clone)]
pub struct Namespace {
    pub name: String,
    pub enforce: bool,
}

impl Default for Namespace {
    fn default() -> Self {
        Namespace { name: "default".into(), enforce: false }
    }
}

/// As [`each_document`], each namespaced object without a namespace given `ns`'s (as
/// kubectl's resource builder sets it before sending, so that the last-applied
/// configuration names it).
pub fn each_document_in(text: &str, file: &str, ns: &Namespace, mut each: impl FnMut(Value) -> Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    for doc in crate::foundation::manifest::parse(text) {
        for d in &doc.diagnostics {
            out.push(format!("error: error parsing {file}: error converting YAML to JSON: {}", d.message));
        }
        if let Some(mut obj) = doc.object {
            let namespaced =
                resource_for_kind(get_str(&obj, &["apiVersion"]).unwrap_or(""), get_str(&obj, &["kind"]).unwrap_or("")).map(|r| RESOURCES[r].namespaced);
            if namespaced == Some(true) {
                let own = api::namespace(&obj).to_string();
                if own.is_empty() {
                    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                        m.insert("namespace", json!(ns.name));
                    }
                } else if ns.enforce && own != ns.name {
                    out.push(format!(
                        "error: the namespace from the provided object \"{own}\" does not match the namespace \"{}\". You must pass '--namespace={own}' to perform this operation.",
                        ns.name
                    ));
                    continue;
                }
            }
            out.extend(each(obj));
        }
    }
    out
}

/// Resolve `TYPE NAME...`, `TYPE/NAME` or `TYPE -l SELECTOR` to (resource, names).
fn targets(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Result<Vec<(ResourceId, String)>, String> {
    let mut out = Vec::new();
    let first = f.positional.first().ok_or("error: you must specify the type of resource to get")?;
    if first.contains('/') {
        for p in &f.positional {
            let (t, n) = p.split_once('/').ok_or_else(|| "error: there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'kubectl get resource/<resource_name>' instead of 'kubectl get resource resource/<resource_name>'".to_string())?;
            let r = resource_for_name(t).ok_or_else(|| format!("error: the server doesn't have a resource type {t:?}"))?;
            out.push((r, n.to_string()));
        }
        return Ok(out);
    }
    let r = resource_for_name(first).ok_or_else(|| format!("error: the server doesn't have a resource type {first:?}"))?;
    let fields = f.get("--field-selector");
    if f.selector.is_some() || fields.is_some() {
        let selector = match &f.selector {
            Some(sel) => Some(crate::foundation::labels::Selector::parse(sel).map_err(|e| format!("error: {e}"))?),
            None => None,
        };
        let fields = match fields {
            Some(fs) => Some(crate::apiserver::fields::FieldSelector::parse(RESOURCES[r].kind, fs).map_err(|s| s.kubectl_message(None, ""))?),
            None => None,
        };
        let list = api
            .handle(Request::new(Verb::List, r, if RESOURCES[r].namespaced { ns } else { "" }, "", creds.clone()))
            .map_err(|s| s.kubectl_message(None, ""))?;
        for item in api::get_array(&list, &["items"]) {
            let labels_ok = selector.as_ref().is_none_or(|s| s.matches(api::labels(item)));
            let fields_ok = fields.as_ref().is_none_or(|fs| fs.matches(RESOURCES[r].kind, item));
            if labels_ok && fields_ok {
                out.push((r, api::name(item).to_string()));
            }
        }
        if out.is_empty() {
            return Err(if RESOURCES[r].namespaced { format!("No resources found in {ns} namespace.") } else { "No resources found".to_string() });
        }
        return Ok(out);
    }
    for n in &f.positional[1..] {
        out.push((r, n.clone()));
    }
    if out.is_empty() {
        return Err("error: resource(s) were provided, but no name was specified".to_string());
    }
    Ok(out)
}

/// Run a kubectl command line (without the leading `kubectl`); a line may carry a
/// here-document for `-f -`.
pub fn run(api: &mut ApiServer, creds: &Credentials, line: &str) -> Vec<String> {
    run_in(api, creds, &mut config::Kubeconfig::default(), line)
}

/// As [`run`], with the terminal's kubeconfig: its current context's namespace is the
/// default, and `kubectl config` reads and changes it.
pub fn run_in(api: &mut ApiServer, creds: &Credentials, kc: &mut config::Kubeconfig, line: &str) -> Vec<String> {
    run_in_waiting(api, creds, kc, line).0
}

/// What a command keeps printing as the run goes on: `get -w`'s rows, or a `kubectl wait`
/// that is not over yet.
#[derive(Debug, Clone)]
pub enum Follow {
    Watch(Watch),
    Wait(wait::Wait),
    Logs(LogFollow),
}

impl Follow {
    /// Lines since the last poll, and whether the command is over (a container's log is
    /// read from its node's kubelet).
    pub fn poll(&mut self, api: &ApiServer, kubelet: Option<&dyn KubeletClient>) -> (Vec<String>, bool) {
        match self {
            Follow::Watch(w) => (w.poll(api), false),
            Follow::Wait(w) => w.poll(api),
            Follow::Logs(l) => l.poll(api, kubelet),
        }
    }
}

/// As [`run_in`]; a `kubectl wait` that is not over yet also gives its [`wait::Wait`], to
/// poll as the simulation runs (alone, `run_in` prints only what a first look finds).
pub fn run_in_waiting(api: &mut ApiServer, creds: &Credentials, kc: &mut config::Kubeconfig, line: &str) -> (Vec<String>, Option<wait::Wait>) {
    let mut waiting = None;
    let out = dispatch(api, creds, kc, line, &mut waiting);
    (out, waiting)
}

/// Who a command line (`logs`, `exec`, which the cluster runs itself) acts as, after its
/// `--token`, `--as` and `--as-group`; Err is what kubectl prints instead.
pub fn line_identity(api: &ApiServer, creds: &Credentials, kc: &config::Kubeconfig, line: &str) -> Result<Credentials, Vec<String>> {
    let args = split_args(line).map_err(|e| vec![format!("error: {e}")])?;
    let args: Vec<String> = args.into_iter().skip_while(|a| a == "kubectl").collect();
    let args = flags::check(&args)?;
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let f = parse_flags(&args[1.min(end)..end]).map_err(|e| vec![format!("error: {e}")])?;
    auth::identity(api, creds, kc, &f)
}

fn dispatch(api: &mut ApiServer, creds: &Credentials, kc: &mut config::Kubeconfig, line: &str, waiting: &mut Option<wait::Wait>) -> Vec<String> {
    let (line, stdin) = heredoc(line);
    let line = line.as_str();
    let args = match split_args(line) {
        Ok(a) => a,
        Err(e) => return vec![format!("error: {e}")],
    };
    let args: Vec<String> = if args.first().map(String::as_str) == Some("kubectl") { args[1..].to_vec() } else { args };
    // `kubectl`, `kubectl help [COMMAND]`, `kubectl --help`, `kubectl alpha`.
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] | ["help"] | ["--help" | "-h", ..] => return help::top(),
        ["help", path @ ..] => return flags::help(&path.join(" ")),
        ["options", ..] => {
            return vec![
                "kubeloop acts on these of kubectl's global options: -n/--namespace, --as, --as-group, --token and --context; all of them are listed at https://kubernetes.io/docs/reference/kubectl/kubectl/".into(),
            ]
        }
        ["alpha", ..] => return vec!["No alpha commands are available in this version of kubectl".into()],
        ["kuberc", ..] => {
            return vec![
                "error: kubectl kuberc edits the kuberc file in your home directory (aliases and default flags), and this terminal has no files of its own: the real kubectl reads its kuberc against `kubeloop serve` too".into(),
            ]
        }
        _ => {}
    }
    let Some(verb) = args.first().cloned() else { return vec!["error: no command given".into()] };
    // Every flag checked against the command's, and written `--NAME=VALUE`.
    let args = match flags::check(&args) {
        Ok(a) => a,
        Err(e) => return e,
    };
    // `run`'s words after `--` are the container's, not kubectl's; its `--stdin` and
    // `--tty` attach.
    let (args, after_dashes) = match args.iter().position(|a| a == "--") {
        Some(i) if verb == "run" || verb == "create" => (args[..i].to_vec(), args[i + 1..].to_vec()),
        _ => (args, Vec::new()),
    };
    let mut attach = (false, false);
    let args: Vec<String> = match verb.as_str() {
        "run" => args
            .into_iter()
            .filter_map(|a| match a.as_str() {
                "--stdin=true" => {
                    attach.0 = true;
                    None
                }
                "--tty=true" => {
                    attach.1 = true;
                    None
                }
                "--stdin=false" | "--tty=false" => None,
                _ => Some(a),
            })
            .collect(),
        _ => args,
    };
    let f = match parse_flags(&args[1..]) {
        Ok(f) => f,
        Err(e) => return vec![format!("error: {e}")],
    };
    // `--token`, `--as` and `--as-group` change who every request of the line is from.
    let creds = &if matches!(verb.as_str(), "config" | "completion") {
        creds.clone()
    } else {
        match auth::identity(api, creds, kc, &f) {
            Ok(c) => c,
            Err(e) => return e,
        }
    };
    // `--context NAME`: its namespace is the default (its user is the identity's).
    let context_ns = f.get("--context").and_then(|n| kc.contexts.iter().find(|c| c.name == n)).map(|c| c.namespace.clone()).filter(|n| !n.is_empty());
    let ns = f.namespace.clone().or(context_ns).unwrap_or_else(|| kc.namespace().to_string());
    let target_ns = Namespace { name: ns.clone(), enforce: f.namespace.is_some() };
    if api.down_since.is_some() && verb != "config" {
        return unreachable_server(&verb, &f, stdin.as_deref());
    }
    match verb.as_str() {
        "apply" if f.get("--server-side").is_some_and(|v| v != "false") => match manifest_input(&f, stdin.as_deref()) {
            Ok((text, file)) => {
                let force = f.get("--force-conflicts").is_some_and(|v| v != "false");
                crate::kubectl::apply::apply_server_side_in(api, creds, &text, file, &target_ns, f.get("--field-manager").unwrap_or("kubectl"), force)
            }
            Err(e) => vec![e],
        },
        "apply" if f.positional.first().map(String::as_str) == Some("view-last-applied") => apply::view_last_applied(api, creds, &f, &ns),
        "apply" if f.positional.first().map(String::as_str) == Some("set-last-applied") => match manifest_input(&f, stdin.as_deref()) {
            Ok((text, file)) => apply::set_last_applied(api, creds, &text, file, &target_ns, switch(&f, "--create-annotation")),
            Err(_) if f.get("--filename").is_none() => no_resources_named(),
            // An empty stdin holds no object to visit.
            Err(e) if e.contains("no objects passed") => vec![],
            Err(e) => vec![e],
        },
        "apply" if f.positional.first().map(String::as_str) == Some("edit-last-applied") => {
            edit::edit(api, creds, &Flags { positional: f.positional[1..].to_vec(), ..f.clone() }, &ns, stdin.as_deref(), edit::Mode::LastApplied)
        }
        "apply" if switch(&f, "--prune") || f.selector.is_some() => {
            let (prune, all) = (switch(&f, "--prune"), switch(&f, "--all"));
            if prune && all && f.selector.is_some() {
                return vec!["error: cannot set --all and --selector at the same time".into()];
            }
            if prune && !all && f.selector.is_none() {
                return vec!["error: all resources selected for prune without explicitly passing --all. To prune all resources, pass the --all flag. If you did not mean to prune all resources, specify a label selector".into()];
            }
            let selector = match f.selector.as_deref().map(crate::foundation::labels::Selector::parse).transpose() {
                Ok(s) => s,
                Err(e) => return vec![format!("error: {e}")],
            };
            match manifest_input(&f, stdin.as_deref()) {
                Ok((text, file)) => apply::apply_selected(api, creds, &text, file, &target_ns, selector.as_ref(), prune),
                Err(e) => vec![e],
            }
        }
        "apply" => match manifest_input(&f, stdin.as_deref()) {
            Ok((text, file)) => apply::apply_text_in(api, creds, &text, file, &target_ns),
            Err(e) => vec![e],
        },
        "diff" => match manifest_input(&f, stdin.as_deref()) {
            Ok((text, file)) => crate::kubectl::diff::diff_text_in(api, creds, &text, file, &target_ns),
            Err(e) => vec![e],
        },
        "create" if f.get("--filename").is_some() => match manifest_input(&f, stdin.as_deref()) {
            Ok((text, file)) => create_from(api, creds, &text, file, &target_ns),
            Err(e) => vec![e],
        },
        "replace" => match manifest_input(&f, stdin.as_deref()) {
            Ok((text, file)) => create::replace_from(api, creds, &text, file, &target_ns, f.get("--force") == Some("true")),
            Err(e) => vec![e
                .replace("no objects passed to apply", "no objects passed to replace")
                .replace("must specify one of -f and -k", "must specify --filename to replace")],
        },
        "get" => get(api, creds, &f, &ns),
        "auth" if f.positional.first().map(String::as_str) == Some("can-i") => can_i(api, creds, &f, &ns),
        "auth" if f.positional.first().map(String::as_str) == Some("whoami") => auth::whoami(api, creds, &f),
        "rollout" if f.positional.first().map(String::as_str) == Some("status") => rollout_status(api, creds, &f, &ns),
        "rollout" if f.positional.first().map(String::as_str) == Some("restart") => rollout_restart(api, creds, &f, &ns),
        "rollout" if f.positional.first().map(String::as_str) == Some("history") => rollout_history(api, creds, &f, &ns),
        "rollout" if f.positional.first().map(String::as_str) == Some("undo") => rollout_undo(api, creds, &f, &ns),
        "rollout" if f.positional.first().map(String::as_str) == Some("pause") => rollout_pause(api, creds, &f, &ns, true),
        "rollout" if f.positional.first().map(String::as_str) == Some("resume") => rollout_pause(api, creds, &f, &ns, false),
        "set" if f.positional.first().map(String::as_str) == Some("image") => set_image(api, creds, &f, &ns),
        "set" if f.positional.first().map(String::as_str) == Some("env") => set_env(api, creds, &f, &ns),
        "set" if f.positional.first().map(String::as_str) == Some("resources") => set_resources(api, creds, &f, &ns),
        "set" if matches!(f.positional.first().map(String::as_str), Some("serviceaccount" | "sa")) => set_serviceaccount(api, creds, &f, &ns),
        "set" if f.positional.first().map(String::as_str) == Some("subject") => set_subject(api, creds, &f, &ns),
        "set" if f.positional.first().map(String::as_str) == Some("selector") => set_selector(api, creds, &f, &ns),
        "api-resources" => api_resources(),
        "explain" => explain::command(&f),
        "describe" => describe::command(api, creds, &f, &ns),
        "taint" => taint(api, creds, &f),
        "create" => create(api, creds, &f, &ns, &after_dashes),
        "drain" => {
            let mut out = run(api, creds, &format!("cordon {}", f.positional.join(" ")));
            if out.iter().any(|l| is_error_line(l)) {
                return out;
            }
            out.extend(drain(api, creds, &f));
            out
        }
        "config" => config::config(kc, &f),
        "scale" => scale(api, creds, &f, &ns),
        "autoscale" => autoscale(api, creds, &f, &ns),
        "top" => top(api, creds, &f, &ns),
        "delete" => delete(api, creds, &f, &ns),
        "cordon" | "uncordon" => cordon(api, creds, &f, &verb),
        "certificate" if matches!(f.positional.first().map(String::as_str), Some("approve" | "deny")) => certificate::modify(api, creds, &f),
        "label" | "annotate" => label(api, creds, &f, &ns, &verb),
        "patch" => patch::patch(api, creds, &f, &ns),
        "edit" => edit::edit(api, creds, &f, &ns, stdin.as_deref(), edit::Mode::Object),
        "run" => run::run_pod(api, creds, &f, &ns, &after_dashes, attach),
        "expose" => run::expose(api, creds, &f, &ns),
        "version" => info::version(api, creds, &f),
        "api-versions" => info::api_versions(&f),
        "cluster-info" => info::cluster_info(api, creds, &f),
        "events" => events::events(api, creds, &f, &ns),
        // Commands that need what a terminal in a sandbox has not: say so, and where to go.
        "proxy" => vec![
            "error: kubectl proxy serves the API server on a local port, and this terminal has no local ports: run `kubeloop serve` and the real `kubectl proxy` against it".into(),
        ],
        "plugin" => vec!["error: kubectl plugins are programs found on your PATH, and this terminal runs no programs of yours: the real kubectl runs them against `kubeloop serve`".into()],
        "kustomize" => vec![KUSTOMIZE.into()],
        "cp" => vec![
            "error: kubectl cp copies between your machine and a container (through tar in the container), and this terminal has no files of its own: the real `kubectl cp` works against `kubeloop serve`; here, kubectl exec POD -- cat FILE shows a file".into(),
        ],
        "completion" => match f.positional.as_slice() {
            [] => vec!["error: Shell not specified.".into(), "See 'kubectl completion -h' for help and examples".into()],
            [shell] if matches!(shell.as_str(), "bash" | "zsh" | "fish" | "powershell") => vec![format!(
                "error: kubectl completion {shell} prints a script for your {shell} to load, and this terminal is not {shell}: it completes commands, flags and names with Tab itself. The real `kubectl completion {shell}` completes against `kubeloop serve` too"
            )],
            [shell] => vec![format!("error: Unsupported shell type {shell:?}."), "See 'kubectl completion -h' for help and examples".into()],
            _ => vec!["error: Too many arguments. Expected only the shell type.".into(), "See 'kubectl completion -h' for help and examples".into()],
        },
        "wait" => {
            let (out, w) = wait::start(api, creds, &f, &ns);
            *waiting = w;
            out
        }
        // A command group without one of its subcommands (`DefaultSubCommandRun`): kubectl
        // prints the group's help, or refuses an unknown subcommand.
        group if !flags::kubectl_subcommands(group).is_empty() => match f.positional.first() {
            None => vec![format!("kubectl {group} needs a subcommand: {}", flags::kubectl_subcommands(group).join(", "))],
            Some(sub) => vec![format!("error: unknown command {sub:?}"), format!("See 'kubectl {group} -h' for help and examples")],
        },
        other => vec![format!(
            "error: kubeloop does not support \"kubectl {other}\" yet (it runs {}; `curl localhost:PORT` reaches a port-forward)",
            commands().join(", ")
        )],
    }
}

/// Why `kubectl kustomize` and `-k` do not run here.
const KUSTOMIZE: &str = "error: kustomize builds manifests from a directory of files (kustomization.yaml, bases, overlays), and this terminal has no directories: the real `kubectl kustomize DIR` and `kubectl apply -k DIR`, which build on your side, work against `kubeloop serve`";

/// What kubectl prints when nothing answers at the API server's address: a command with
/// files first fails to download the OpenAPI document it validates them against.
fn unreachable_server(verb: &str, f: &Flags, stdin: Option<&str>) -> Vec<String> {
    let server = crate::foundation::status::API_SERVER;
    if matches!(verb, "apply" | "create" | "replace") && f.get("--filename").is_some() && f.get("--validate") != Some("false") {
        if let Ok((_, file)) = manifest_input(f, stdin) {
            return vec![format!(
                "error: error validating {file:?}: error validating data: failed to download openapi: Get \"https://{server}/openapi/v2?timeout=32s\": dial tcp {server}: connect: connection refused; if you choose to ignore these errors, turn validation off with --validate=false"
            )];
        }
    }
    vec![crate::foundation::status::connection_refused_line()]
}

/// The objects named after a subcommand (`rollout status deployment/web`).
fn sub_targets(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Result<Vec<(ResourceId, String)>, String> {
    targets(api, creds, &Flags { positional: f.positional[1..].to_vec(), ..f.clone() }, ns)
}

/// kubectl's answer to a command that names no object (`resource.Builder`'s usage error).
fn no_resources_named() -> Vec<String> {
    [
        "error: You must provide one or more resources by argument or filename.",
        "Example resource specifications include:",
        "   '-f rsrc.yaml'",
        "   '--filename=rsrc.json'",
        "   '<resource> <name>'",
        "   '<resource>'",
    ]
    .map(String::from)
    .to_vec()
}

/// GET one object, or kubectl's line for why not.
fn fetch(api: &mut ApiServer, creds: &Credentials, r: ResourceId, ns: &str, name: &str) -> Result<crate::foundation::api::Object, String> {
    api.handle(Request::new(Verb::Get, r, ns, name, creds.clone())).map_err(|s| s.kubectl_message(None, ""))
}

/// `kubectl api-resources`: the kinds kubeloop serves.
fn api_resources() -> Vec<String> {
    let mut rows: Vec<&crate::foundation::api::ResourceInfo> = RESOURCES.iter().collect();
    rows.sort_stable_by_key(|r| (r.group, r.plural));
    let mut table = vec![vec!["NAME".to_string(), "SHORTNAMES".into(), "APIVERSION".into(), "NAMESPACED".into(), "KIND".into()]];
    table.extend(rows.into_iter().map(|r| vec![r.plural.to_string(), r.short_names.join(","), r.api_version(), r.namespaced.to_string(), r.kind.to_string()]));
    crate::kubectl::printers::table(&table).lines().map(str::to_string).collect()
}

/// Run `each` on every object a `rollout SUBCOMMAND TYPE/NAME...` names, as fetched; its
/// lines, or why an object could not be fetched, in order.
fn each_fetched(
    api: &mut ApiServer,
    creds: &Credentials,
    f: &Flags,
    ns: &str,
    mut each: impl FnMut(&mut ApiServer, ResourceId, &str, &Value) -> Vec<String>,
) -> Vec<String> {
    let ts = match sub_targets(api, creds, f, ns) {
        Ok(ts) => ts,
        Err(e) => return vec![e],
    };
    let mut out = Vec::new();
    for (r, name) in ts {
        match fetch(api, creds, r, ns, &name) {
            Ok(d) => out.extend(each(api, r, &name, &d)),
            Err(e) => out.push(e),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_and_plugin_say_why_they_do_not_apply() {
        let mut api = ApiServer::new(1, false);
        let admin = Credentials::User(crate::apiserver::rbac::UserInfo::admin());
        for (line, why) in [("proxy --port=8001", "no local ports"), ("plugin list", "runs no programs of yours")] {
            let out = run(&mut api, &admin, line);
            assert!(out.len() == 1 && out[0].starts_with("error: ") && out[0].contains(why), "{line}: {out:?}");
        }
    }

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(split_args("scale rs -l 'app=web' --replicas=5").unwrap(), vec!["scale", "rs", "-l", "app=web", "--replicas=5"]);
        assert_eq!(split_args(r#"annotate pod x note="a b""#).unwrap(), vec!["annotate", "pod", "x", "note=a b"]);
        assert!(split_args("label 'x").is_err());
    }

    #[test]
    fn three_way_patch_drops_removed_fields() {
        let last = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"replicas": 2}});
        let new = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"replicas": 3}});
        let live = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"replicas": 2, "paused": false}});
        assert_eq!(three_way(Some(&last), &new, &live), json!({"metadata": {"labels": {"b": null}}, "spec": {"replicas": 3}}));
    }
}
