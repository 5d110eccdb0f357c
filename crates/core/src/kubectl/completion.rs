//! Tab completion of commands, subcommands, resource types and names, for the page's terminal.

use super::*;
use crate::foundation::sort::Sort;

/// The commands the terminal knows, for completion.
/// The commands the terminal runs (those kubeloop simulates, and `proxy` and `plugin`,
/// which say why they do not apply here), from the flag table so that they cannot drift.
pub fn commands() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = super::flags::simulated_paths().map(|p| p.split(' ').next().unwrap_or(p)).collect();
    out.extend(["proxy", "plugin"]);
    out.sort_unstable();
    out.dedup();
    out
}

/// The second word of commands that have subcommands (`rollout status`, `apply
/// view-last-applied`), from the same table.
pub(super) fn subcommands(command: &str) -> Vec<&'static str> {
    let mut out = super::flags::simulated_subcommands(command);
    out.sort_unstable();
    out.dedup();
    out
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
        Some(&"rollout") | Some(&"set") | Some(&"auth") | Some(&"apply") if positional.len() > 1 && !subcommands(positional[0]).is_empty() => 2,
        _ => 1,
    };
    let mut out: Vec<String> = if partial.starts_with("--") {
        super::flags::completions(&words)
    } else if positional.is_empty() {
        commands().into_iter().map(str::to_string).collect()
    } else if positional.len() == 1 && !subcommands(positional[0]).is_empty() {
        subcommands(positional[0]).iter().map(|c| c.to_string()).collect()
    } else if matches!(positional.first(), Some(&("logs" | "exec" | "attach" | "debug" | "port-forward"))) && positional.len() == 1 {
        // These take pod names directly.
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
