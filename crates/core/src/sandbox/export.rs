//! From the sandbox to a real cluster: one shell script that writes a kind configuration
//! matching the simulated nodes (their zones and other labels as node labels), taints the
//! nodes as they are tainted here, and applies the editor's manifests.
//!
//! kind names its nodes itself (`kubeloop-control-plane`, `kubeloop-worker`,
//! `kubeloop-worker2`, …), in the order of the configuration; the script says which
//! simulated node each one stands for. What kubeloop only simulates is said in comments at
//! the top: node capacities (kind's nodes share the host), the scenario's users and timed
//! steps, images of `registry.example`, and the simulated webhook backends.

use super::Sandbox;
use crate::foundation::api::{self, rid, Object};
use crate::foundation::value::Value;

/// The kind cluster's name, and so its nodes' prefix.
pub const CLUSTER: &str = "kubeloop";

/// Labels kind or the kubelet set on their own.
fn own_label(k: &str) -> bool {
    k.starts_with("kubernetes.io/")
        || k.starts_with("beta.kubernetes.io/")
        || k.starts_with("node-role.kubernetes.io/")
        || k == "node.kubernetes.io/exclude-from-external-load-balancers"
}

/// Taints a real cluster manages itself (the control plane's, the node lifecycle's).
fn own_taint(t: &Value) -> bool {
    let key = api::get_str(t, &["key"]).unwrap_or("");
    key == "node-role.kubernetes.io/control-plane" || key.starts_with("node.kubernetes.io/") || key.starts_with("node.cloudprovider.kubernetes.io/")
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// The editor's documents without the `Scenario` one (which is kubeloop's, not the API's).
pub fn manifests(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut docs = Vec::new();
    for d in crate::foundation::manifest::parse(text) {
        let scenario = d.object.as_ref().is_some_and(|o| {
            api::get_str(o, &["kind"]) == Some("Scenario") && api::get_str(o, &["apiVersion"]).is_some_and(|v| v.starts_with("kubeloop.dev/"))
        });
        if scenario || d.object.is_none() {
            continue;
        }
        let (start, end) = (d.start_line.saturating_sub(1).min(lines.len()), d.end_line.min(lines.len()));
        let body = lines[start..end].iter().filter(|l| l.trim() != "---").copied().collect::<Vec<_>>().join("\n");
        docs.push(body.trim_matches('\n').to_string());
    }
    docs.join("\n---\n")
}

/// The script.
pub fn kind_script(sb: &Sandbox) -> String {
    let nodes: Vec<&Object> = sb.cluster.api.store.list(rid::NODE, None).collect();
    let is_cp = |n: &Object| api::labels(n).is_some_and(|l| l.contains_key("node-role.kubernetes.io/control-plane"));
    // kind wants a control plane first; a scenario without one gets kind's own.
    let first_cp = nodes.iter().position(|n| is_cp(n));
    let ordered: Vec<&Object> =
        first_cp.map(|i| nodes[i]).into_iter().chain(nodes.iter().enumerate().filter(|(i, _)| Some(*i) != first_cp).map(|(_, n)| *n)).collect();
    let mut config = format!("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nname: {CLUSTER}\nnodes:\n");
    let mut mapping = Vec::new();
    let mut taints = Vec::new();
    let mut workers = 0;
    if ordered.first().is_none_or(|n| !is_cp(n)) {
        config.push_str("- role: control-plane\n");
        mapping.push(format!("#   {CLUSTER}-control-plane: kind's own (the sandbox has no control-plane node)"));
    }
    for n in &ordered {
        let (role, kind_name) = if is_cp(n) {
            ("control-plane", format!("{CLUSTER}-control-plane"))
        } else {
            workers += 1;
            ("worker", if workers == 1 { format!("{CLUSTER}-worker") } else { format!("{CLUSTER}-worker{workers}") })
        };
        config.push_str(&format!("- role: {role}\n"));
        let labels: Vec<(String, String)> = api::labels(n)
            .map(|m| m.iter().filter(|(k, _)| !own_label(k)).map(|(k, v)| (k.to_string(), v.as_str().unwrap_or("").to_string())).collect())
            .unwrap_or_default();
        if !labels.is_empty() {
            config.push_str("  labels:\n");
            for (k, v) in labels {
                config.push_str(&format!("    {k}: {}\n", quoted(&v)));
            }
        }
        mapping.push(format!("#   {kind_name}: the sandbox's {}", api::name(n)));
        for t in api::get_array(n, &["spec", "taints"]).iter().filter(|t| !own_taint(t)) {
            let key = api::get_str(t, &["key"]).unwrap_or("");
            let value = api::get_str(t, &["value"]).map(|v| format!("={v}")).unwrap_or_default();
            let effect = api::get_str(t, &["effect"]).unwrap_or("NoSchedule");
            taints.push(format!("kubectl taint nodes {kind_name} {key}{value}:{effect} --overwrite"));
        }
    }
    let text = manifests(&sb.text);
    let mut notes = vec![
        "# Node capacities are not exported: kind's nodes share this machine's CPU and memory.".to_string(),
        "# The Scenario document (seed, users, images, timed steps and faults) is kubeloop's own".to_string(),
        "# and is not exported; its users' tokens mean nothing to a real API server.".to_string(),
    ];
    if text.contains("registry.example/") {
        notes.push("# Images from registry.example are kubeloop's stand-ins: no registry serves them.".into());
    }
    if text.contains("kubeloop.dev/allow-if") {
        notes.push("# Webhooks with kubeloop.dev/allow-if have simulated backends: a real cluster needs a".into());
        notes.push("# webhook server behind their Service, or their requests fail (failurePolicy decides).".into());
    }
    format!(
        "#!/bin/sh\n# Made by kubeloop from the sandbox at t = {:.1} s (seed {}).\n# It creates a kind cluster like the simulated one and applies the editor's manifests.\n# Needs kind and kubectl: https://kind.sigs.k8s.io/\n#\n# kind names the nodes; they stand for the sandbox's:\n{}\n#\n{}\nset -eu\n\ncat > kind-{CLUSTER}.yaml <<'KUBELOOP_KIND'\n{config}KUBELOOP_KIND\n\ncat > {CLUSTER}-manifests.yaml <<'KUBELOOP_MANIFESTS'\n{text}\nKUBELOOP_MANIFESTS\n\nkind create cluster --config kind-{CLUSTER}.yaml\n{}kubectl apply -f {CLUSTER}-manifests.yaml\n",
        sb.cluster.now as f64 / 1000.0,
        sb.seed,
        mapping.join("\n"),
        notes.join("\n"),
        taints.iter().map(|t| format!("{t}\n")).collect::<String>(),
    )
}
