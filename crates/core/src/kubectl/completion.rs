//! Tab completion of commands, subcommands, resource types and names, for the page's terminal.

use super::*;
use crate::foundation::sort::Sort;

/// The commands the terminal knows, for completion.
pub const COMMANDS: &[&str] = &[
    "annotate",
    "api-resources",
    "api-versions",
    "apply",
    "auth",
    "cluster-info",
    "config",
    "cordon",
    "create",
    "delete",
    "describe",
    "diff",
    "drain",
    "events",
    "exec",
    "explain",
    "expose",
    "get",
    "label",
    "logs",
    "patch",
    "plugin",
    "proxy",
    "replace",
    "rollout",
    "run",
    "scale",
    "set",
    "taint",
    "uncordon",
    "version",
    "wait",
];

/// The second word of commands that have subcommands.
pub(super) fn subcommands(command: &str) -> &'static [&'static str] {
    match command {
        "rollout" => &["history", "pause", "restart", "resume", "status", "undo"],
        "set" => &["env", "image", "resources", "selector", "serviceaccount", "subject"],
        "auth" => &["can-i"],
        "config" => &["current-context", "get-clusters", "get-contexts", "get-users", "set-context", "use-context", "view"],
        "create" => &[
            "clusterrole",
            "clusterrolebinding",
            "configmap",
            "cronjob",
            "deployment",
            "ingress",
            "job",
            "namespace",
            "poddisruptionbudget",
            "priorityclass",
            "quota",
            "role",
            "rolebinding",
            "secret",
            "service",
            "serviceaccount",
        ],
        _ => &[],
    }
}

/// Completions for the last word of a command line: commands first, then resource types,
/// then names of objects of that type in the namespace (`-n`) or `default`.
pub fn complete(api: &ApiServer, line: &str) -> Vec<String> {
    let ends_with_space = line.ends_with(' ');
    let mut words: Vec<&str> = line.split_whitespace().collect();
    if words.first() == Some(&"kubectl") {
        words.remove(0);
    }
    let partial = if ends_with_space { "" } else { words.pop().unwrap_or("") };
    let positional: Vec<&str> = words.iter().copied().filter(|w| !w.starts_with('-')).collect();
    let ns = words.iter().position(|w| *w == "-n" || *w == "--namespace").and_then(|i| words.get(i + 1)).copied().unwrap_or("default");
    // Subcommands that take the type as their second word.
    let type_at = match positional.first() {
        Some(&"rollout") | Some(&"set") | Some(&"auth") => 2,
        _ => 1,
    };
    let mut out: Vec<String> = if partial.starts_with("--") {
        super::flags::completions(&words)
    } else if positional.is_empty() {
        COMMANDS.iter().map(|c| c.to_string()).collect()
    } else if positional.len() == 1 && !subcommands(positional[0]).is_empty() {
        subcommands(positional[0]).iter().map(|c| c.to_string()).collect()
    } else if matches!(positional.first(), Some(&"logs") | Some(&"exec")) && positional.len() == 1 {
        // `logs` and `exec` take pod names directly.
        api.store.list(crate::foundation::api::rid::POD, Some(ns)).map(|o| api::name(o).to_string()).collect()
    } else if matches!(positional.first(), Some(&("run" | "version" | "api-versions" | "cluster-info" | "events"))) {
        // These take no resource type (run's first word is the new pod's name).
        vec![]
    } else if positional.len() == type_at {
        RESOURCES.iter().flat_map(|r| std::iter::once(r.plural).chain(r.short_names.iter().copied())).map(str::to_string).collect()
    } else if let Some(r) = positional.get(type_at).and_then(|t| resource_for_name(t)) {
        let ns = if RESOURCES[r].namespaced { Some(ns) } else { None };
        api.store.list(r, ns).map(|o| api::name(o).to_string()).collect()
    } else {
        vec![]
    };
    out.retain(|c| c.starts_with(partial));
    out.sort_stable();
    out.dedup();
    out
}
