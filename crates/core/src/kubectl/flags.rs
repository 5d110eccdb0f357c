//! Which flags a command line may carry, checked before the command runs: kubectl's own
//! (`flagset.rs`, from the real binary's help) parsed as cobra and pflag parse them, and,
//! of those, the ones kubeloop simulates. A flag kubectl does not know gets kubectl's
//! `unknown flag` error and usage hint; a flag kubectl knows but kubeloop does not act on
//! is refused by name rather than ignored.

use super::flagset::{COMMANDS, GLOBAL};

/// One flag of a command.
#[derive(Debug, Clone, Copy)]
struct Spec<'a> {
    long: &'a str,
    short: Option<char>,
    /// true or false, rather than a value.
    switch: bool,
}

fn specs(flags: &str) -> impl Iterator<Item = Spec<'_>> {
    flags.split_whitespace().map(|t| {
        let (short, rest) = match t.split_once(':') {
            Some((s, r)) => (s.chars().next(), r),
            None => (None, t),
        };
        let (long, switch) = match rest.strip_suffix('!') {
            Some(l) => (l, true),
            None => (rest, false),
        };
        Spec { long, short, switch }
    })
}

fn entry(path: &str) -> Option<&'static (&'static str, &'static str, &'static str, &'static str)> {
    COMMANDS.binary_search_by(|e| e.0.cmp(path)).ok().map(|i| &COMMANDS[i])
}

/// The value a flag takes when it is given bare (pflag's NoOptDefVal): `--dry-run` means
/// `--dry-run=unchanged` (which kubectl reads as client), and so on.
fn bare_value(long: &str) -> Option<&'static str> {
    match long {
        "dry-run" => Some("unchanged"),
        "cascade" => Some("background"),
        "validate" => Some("strict"),
        _ => None,
    }
}

/// The flags of each command that kubeloop acts on, beyond the global `--namespace`,
/// `--as` and `--as-group`: (command, the subcommands kubeloop runs, the flags any of them
/// takes). A command absent here is one kubeloop does not run at all, and says so itself.
const SIMULATED: &[(&str, &str, &str)] = &[
    ("annotate", "", "field-selector overwrite selector"),
    ("api-resources", "", ""),
    ("api-versions", "", ""),
    // `-R` recurses into the directories `-f` names; the terminal's files (stdin, the
    // editor) are never directories, so it changes nothing, as in kubectl with a file.
    ("apply", "", "all filename server-side force-conflicts field-manager prune recursive selector validate"),
    ("apply edit-last-applied", "", ""),
    ("apply set-last-applied", "", "create-annotation filename"),
    ("apply view-last-applied", "", "all output selector"),
    ("attach", "", "container quiet stdin tty"),
    ("auth", "can-i whoami", "all-namespaces"),
    ("auth whoami", "", "output"),
    ("autoscale", "", "cpu cpu-percent max memory min name"),
    ("certificate", "approve deny", "force"),
    ("cluster-info", "", ""),
    ("completion", "", ""),
    ("config", "current-context view get-contexts get-clusters get-users use-context set-context rename-context delete-context", "minify output no-headers current namespace user"),
    ("cordon", "", ""),
    (
        "create",
        "clusterrole clusterrolebinding configmap cronjob deployment ingress job namespace poddisruptionbudget priorityclass quota role rolebinding secret service serviceaccount token",
        "filename recursive output dry-run validate image replicas port schedule restart clusterrole description from-literal global-default group hard max-unavailable min-available node-port preemption-policy resource role serviceaccount tcp type user value verb selector annotation class default-backend rule audience duration bound-object-kind bound-object-name bound-object-uid",
    ),
    ("debug", "", "arguments-only container copy-to image image-pull-policy profile quiet replace same-node set-image share-processes stdin target tty"),
    ("delete", "", "all all-namespaces cascade field-selector force grace-period ignore-not-found selector wait"),
    ("describe", "", "all-namespaces chunk-size selector"),
    ("diff", "", "filename recursive"),
    ("drain", "", "force ignore-daemonsets delete-emptydir-data chunk-size"),
    ("edit", "", "output-patch subresource"),
    ("events", "", "all-namespaces chunk-size for no-headers output types watch"),
    ("exec", "", "container quiet stdin tty"),
    ("explain", "", "recursive"),
    ("expose", "", "cluster-ip dry-run external-ip labels load-balancer-ip name output port protocol selector session-affinity target-port type"),
    ("get", "", "all-namespaces chunk-size field-selector ignore-not-found label-columns no-headers output raw selector show-kind show-labels show-managed-fields sort-by template watch"),
    ("kustomize", "", ""),
    ("label", "", "field-selector overwrite selector"),
    ("logs", "", "all-containers container follow prefix previous selector since since-time tail timestamps"),
    ("patch", "", "patch subresource type"),
    ("port-forward", "", "address"),
    ("replace", "", "filename force recursive validate"),
    ("rollout", "history pause restart resume status undo", "selector to-revision"),
    (
        "run",
        "",
        "annotations attach command dry-run env expose image image-pull-policy labels leave-stdin-open output pod-running-timeout port privileged quiet restart rm stdin tty",
    ),
    ("scale", "", "replicas selector"),
    ("set", "env image resources selector serviceaccount subject", "containers env group limits list requests selector serviceaccount user"),
    ("taint", "", "overwrite"),
    ("top", "node pod", "all-namespaces containers no-headers selector show-capacity sort-by"),
    ("uncordon", "", ""),
    ("version", "", "client output"),
    ("wait", "", "all field-selector for selector timeout"),
];

/// The command paths kubeloop runs (`get`, `apply view-last-applied`).
pub(super) fn simulated_paths() -> impl Iterator<Item = &'static str> {
    SIMULATED.iter().map(|s| s.0)
}

/// Whether kubectl has the command `path` (`get`, `rollout status`).
#[cfg(test)]
pub(super) fn known(path: &str) -> bool {
    entry(path).is_some()
}

/// All of kubectl's subcommands of `command` (`rollout`: history, pause, ...).
pub(super) fn kubectl_subcommands(command: &str) -> Vec<&'static str> {
    entry(command).map(|e| e.3.split_whitespace().collect()).unwrap_or_default()
}

/// The subcommands kubeloop runs of `command`.
pub(super) fn simulated_subcommands(command: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    for (path, subs, _) in SIMULATED {
        if *path == command {
            out.extend(subs.split_whitespace());
        } else if let Some(sub) = path.strip_prefix(command).and_then(|r| r.strip_prefix(' ')) {
            out.push(sub);
        }
    }
    out
}

const GLOBAL_SIMULATED: &[&str] = &["namespace", "as", "as-group", "token", "context"];

/// The words after `kubectl` (the command first), checked and written in one form: each
/// flag as `--NAME=VALUE` (switches as `--NAME=true|false`, one-letter forms and bare
/// values resolved), positional words and everything after `--` as they were. Err is what
/// kubectl (or kubeloop, for a flag it does not simulate) prints instead of running.
pub(crate) fn check(words: &[String]) -> Result<Vec<String>, Vec<String>> {
    let Some((path, e)) = resolve(words) else { return Ok(words.to_vec()) };
    let before_dashes = words.iter().position(|w| w == "--").unwrap_or(words.len());
    if words[..before_dashes].iter().any(|w| w == "-h" || w == "--help") {
        return Err(help(&path));
    }
    let usage = |msg: String| vec![format!("error: {msg}"), format!("See 'kubectl {path} --help' for usage.")];
    let find = |pred: &dyn Fn(&Spec) -> bool| specs(e.2).find(|s| pred(s)).or_else(|| specs(GLOBAL).find(|s| pred(s)));
    let (simulated, acts_on) = simulated(&path);
    // A command kubeloop does not run refuses itself; its flags are not checked here.
    let runs = simulated.is_some();
    let mut out = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if w == "--" {
            out.extend_from_slice(&words[i..]);
            break;
        }
        if w == "-h" || w == "--help" || w == "-" || !w.starts_with('-') {
            out.push(w.clone());
            i += 1;
            continue;
        }
        let mut given: Vec<(Spec, String)> = Vec::new();
        if let Some(body) = w.strip_prefix("--") {
            let (name, value) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (body, None),
            };
            let Some(spec) = find(&|s| s.long == name) else { return Err(usage(format!("unknown flag: --{name}"))) };
            let value = match value {
                Some(v) => v,
                None if spec.switch => "true".into(),
                None => match bare_value(name) {
                    Some(v) => v.into(),
                    None => {
                        i += 1;
                        words.get(i).cloned().ok_or_else(|| usage(format!("flag needs an argument: --{name}")))?
                    }
                },
            };
            given.push((spec, value));
        } else {
            // One-letter flags, several in one word (`-it`), a value attached (`-nkube-system`,
            // `-n=kube-system`) or in the next word.
            let letters: Vec<char> = w[1..].chars().collect();
            let mut j = 0;
            while j < letters.len() {
                let c = letters[j];
                let Some(spec) = find(&|s| s.short == Some(c)) else { return Err(usage(format!("unknown shorthand flag: {c:?} in {w}"))) };
                let rest: String = letters[j + 1..].iter().collect();
                if spec.switch {
                    if let Some(v) = rest.strip_prefix('=') {
                        given.push((spec, v.to_string()));
                        break;
                    }
                    given.push((spec, "true".into()));
                    j += 1;
                    continue;
                }
                let value = if let Some(v) = rest.strip_prefix('=') {
                    v.to_string()
                } else if !rest.is_empty() {
                    rest
                } else {
                    i += 1;
                    words.get(i).cloned().ok_or_else(|| usage(format!("flag needs an argument: {c:?} in -{c}")))?
                };
                given.push((spec, value));
                break;
            }
        }
        for (spec, value) in given {
            let value = if spec.switch {
                match parse_bool(&value) {
                    Some(b) => b.to_string(),
                    None => {
                        let name = match spec.short {
                            Some(c) if !w.starts_with("--") => format!("-{c}, --{}", spec.long),
                            _ => format!("--{}", spec.long),
                        };
                        return Err(usage(format!("invalid argument {value:?} for {name:?} flag: strconv.ParseBool: parsing {value:?}: invalid syntax")));
                    }
                }
            } else {
                value
            };
            if runs && !acts_on(spec.long) {
                return Err(vec![format!(
                    "error: kubeloop does not simulate --{} of kubectl {path}; the flags it acts on there: {}",
                    spec.long,
                    acted_on(e.2, simulated.unwrap_or(""))
                )]);
            }
            out.push(format!("--{}={value}", spec.long));
        }
        i += 1;
    }
    Ok(out)
}

/// `kubectl COMMAND --help` (and `kubectl help COMMAND`): kubeloop does not carry
/// kubectl's help pages; where the page is, and the flags kubeloop acts on there.
pub(super) fn help(path: &str) -> Vec<String> {
    // The reference's pages: `kubectl_rollout/kubectl_rollout_status/`.
    let words: Vec<&str> = path.split(' ').collect();
    let page = (1..=words.len()).map(|n| format!("kubectl_{}/", words[..n].join("_"))).collect::<String>();
    let page = format!("https://kubernetes.io/docs/reference/kubectl/generated/{page}");
    let mut out = vec![format!("kubeloop does not carry kubectl's help pages: kubectl {path}'s is at {page}")];
    let Some(e) = entry(path) else {
        out[0] = format!("error: unknown command {path:?} for \"kubectl\"");
        return out;
    };
    match simulated(path).0 {
        Some(flags) => {
            if !e.3.is_empty() {
                let subs = simulated_subcommands(path);
                out.push(format!("Its subcommands kubeloop runs: {}", subs.join(", ")));
            }
            out.push(format!("The flags kubeloop acts on there: {}", acted_on(e.2, flags)));
        }
        None => out.push(format!("kubeloop does not run kubectl {path}.")),
    }
    out
}

type Entry = (&'static str, &'static str, &'static str, &'static str);

/// The command path a line names (`rollout status`, `create deployment` for `create
/// deploy`) and its entry: each subcommand (or alias) is the first positional word after
/// the last, as cobra finds it. None for a command kubectl does not have.
fn resolve<S: AsRef<str>>(words: &[S]) -> Option<(String, &'static Entry)> {
    let verb = words.first()?.as_ref();
    let mut e = entry(verb)?;
    let mut path = verb.to_string();
    let words: Vec<String> = words.iter().map(|w| w.as_ref().to_string()).collect();
    let mut from = 1;
    while !e.3.is_empty() {
        let Some((i, w)) = positional_words(&words[from..], e.2).next() else { break };
        let found = e.3.split_whitespace().find_map(|s| {
            let child = entry(&format!("{path} {s}"))?;
            (s == w || child.1.split_whitespace().any(|a| a == w)).then_some((s, child))
        });
        let Some((s, child)) = found else { break };
        path = format!("{path} {s}");
        from += i + 1;
        e = child;
    }
    Some((path, e))
}

/// For a command path kubeloop runs, the flags its command takes (`SIMULATED`'s), and
/// whether kubeloop acts on a flag there; None for a command kubeloop does not run.
fn simulated(path: &str) -> (Option<&'static str>, impl Fn(&str) -> bool) {
    let mut words = path.split(' ');
    let verb = words.next().unwrap_or("");
    let sub = words.next();
    // An entry for the whole path (`apply view-last-applied`) first, else the command's.
    let flags = SIMULATED
        .iter()
        .find(|s| s.0 == path && s.1.is_empty())
        .or_else(|| SIMULATED.iter().find(|s| s.0 == verb && sub.is_none_or(|sub| s.1.split_whitespace().any(|x| x == sub))))
        .map(|s| s.2);
    (flags, move |long: &str| GLOBAL_SIMULATED.contains(&long) || flags.is_some_and(|f| f.split_whitespace().any(|x| x == long)))
}

/// The flags Tab completes after a command's words: those kubeloop acts on for that
/// command (all of kubectl's for a command kubeloop does not run), as `--NAME`.
pub(super) fn completions(words: &[&str]) -> Vec<String> {
    let Some((path, e)) = resolve(words) else { return Vec::new() };
    let (simulated, acts_on) = simulated(&path);
    specs(e.2).chain(specs(GLOBAL)).filter(|s| simulated.is_none() || acts_on(s.long)).map(|s| format!("--{}", s.long)).collect()
}

/// The flags of a command that kubeloop acts on, as `--a, --b` (globals last).
fn acted_on(command_flags: &str, simulated: &str) -> String {
    let mut names: Vec<String> = specs(command_flags).filter(|s| simulated.split_whitespace().any(|f| f == s.long)).map(|s| format!("--{}", s.long)).collect();
    names.extend(GLOBAL_SIMULATED.iter().map(|g| format!("--{g}")));
    names.join(", ")
}

/// Go's strconv.ParseBool.
fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// The positional words of `words` and their indices, skipping flags (and the values of
/// the flags in `flags` or the global ones that take one), up to `--`.
fn positional_words<'w>(words: &'w [String], flags: &'static str) -> impl Iterator<Item = (usize, &'w str)> {
    let takes_value = move |w: &str| {
        let pred = |s: &Spec| {
            if let Some(long) = w.strip_prefix("--") {
                s.long == long && !s.switch && bare_value(long).is_none()
            } else {
                w.len() == 2 && s.short == w[1..].chars().next() && !s.switch
            }
        };
        specs(flags).any(|s| pred(&s)) || specs(GLOBAL).any(|s| pred(&s))
    };
    let mut skip = false;
    words.iter().enumerate().take_while(|(_, w)| *w != "--").filter_map(move |(i, w)| {
        if skip {
            skip = false;
            return None;
        }
        if w.starts_with('-') && w.len() > 1 {
            skip = !w.contains('=') && takes_value(w);
            return None;
        }
        Some((i, w.as_str()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn flags_are_written_long_with_their_values() {
        assert_eq!(
            check(&words("get pods -n kube-system -owide -l app=web -A")).unwrap(),
            words("get pods --namespace=kube-system --output=wide --selector=app=web --all-namespaces=true")
        );
        assert_eq!(
            check(&words("run x --image nginx -it --restart=Never -- sh -c ls")).unwrap(),
            words("run x --image=nginx --stdin=true --tty=true --restart=Never -- sh -c ls")
        );
        assert_eq!(check(&words("delete deploy web --cascade")).unwrap(), words("delete deploy web --cascade=background"));
        assert_eq!(check(&words("get pods --watch=T")).unwrap(), words("get pods --watch=true"));
    }

    #[test]
    fn unknown_flags_get_kubectls_error_and_usage_hint() {
        assert_eq!(check(&words("get pods --foo")).unwrap_err(), ["error: unknown flag: --foo", "See 'kubectl get --help' for usage."]);
        assert_eq!(check(&words("get pods -x")).unwrap_err(), ["error: unknown shorthand flag: 'x' in -x", "See 'kubectl get --help' for usage."]);
        assert_eq!(check(&words("get pods -n")).unwrap_err(), ["error: flag needs an argument: 'n' in -n", "See 'kubectl get --help' for usage."]);
        assert_eq!(
            check(&words("get pods --ignore-not-found=maybe")).unwrap_err()[0],
            "error: invalid argument \"maybe\" for \"--ignore-not-found\" flag: strconv.ParseBool: parsing \"maybe\": invalid syntax"
        );
        // The subcommand's own help is named, found past flags and by alias.
        assert_eq!(check(&words("rollout -n x status --foo")).unwrap_err()[1], "See 'kubectl rollout status --help' for usage.");
        assert_eq!(check(&words("create deploy web --image=nginx --tcp=80")).unwrap_err()[0], "error: unknown flag: --tcp");
    }

    #[test]
    fn flags_kubeloop_does_not_act_on_are_refused_by_name() {
        let e = check(&words("get pods --subresource=status")).unwrap_err();
        assert!(e[0].starts_with("error: kubeloop does not simulate --subresource of kubectl get; the flags it acts on there: --all-namespaces, "), "{e:?}");
        assert!(check(&words("get pods --server=https://x")).unwrap_err()[0].contains("--server"));
        // A command kubeloop does not run is not checked beyond kubectl's own flags.
        assert!(check(&words("port-forward pod/web 8080:80 --address=0.0.0.0")).is_ok());
        assert!(check(&words("port-forward pod/web --nope")).is_err());
    }

    #[test]
    fn tab_completes_the_flags_kubeloop_acts_on() {
        let get = completions(&["get", "pods"]);
        assert!(get.iter().any(|f| f == "--no-headers") && get.iter().any(|f| f == "--namespace"), "{get:?}");
        assert!(!get.iter().any(|f| f == "--subresource" || f == "--server"), "{get:?}");
        let status = completions(&["rollout", "status"]);
        assert!(status.iter().any(|f| f == "--selector") && !status.iter().any(|f| f == "--to-revision"), "{status:?}");
        // For a command kubeloop does not run, kubectl's own.
        assert!(completions(&["port-forward"]).iter().any(|f| f == "--address"));
        assert!(completions(&["frobnicate"]).is_empty());
    }

    #[test]
    fn the_table_is_sorted_and_every_simulated_flag_is_kubectls() {
        assert!(COMMANDS.windows(2).all(|w| w[0].0 < w[1].0));
        for (verb, subs, flags) in SIMULATED {
            let mut paths: Vec<String> = std::iter::once(verb.to_string()).chain(subs.split_whitespace().map(|s| format!("{verb} {s}"))).collect();
            // `create service nodeport`: the subcommands' own subcommands.
            let mut k = 1;
            while k < paths.len() {
                let deeper: Vec<String> = entry(&paths[k]).map_or("", |e| e.3).split_whitespace().map(|s| format!("{} {s}", paths[k])).collect();
                paths.extend(deeper);
                k += 1;
            }
            for p in &paths {
                assert!(entry(p).is_some(), "kubectl has no command {p}");
            }
            for f in flags.split_whitespace() {
                assert!(paths.iter().any(|p| specs(entry(p).unwrap().2).any(|s| s.long == f)), "no {verb} command of kubectl takes --{f}");
            }
        }
    }
}
