//! `kubectl cordon`, `uncordon` and `drain` (`k8s.io/kubectl/pkg/cmd/drain`, `k8s.io/kubectl/pkg/drain`):
//! drain evicts through the `eviction` subresource, so PodDisruptionBudgets hold.

use super::*;

/// `kubectl cordon|uncordon NODE...`: `spec.unschedulable` patched on or off.
pub(super) fn cordon(api: &mut ApiServer, creds: &Credentials, f: &Flags, verb: &str) -> Vec<String> {
    let want = verb == "cordon";
    let mut lines = Vec::new();
    for n in &f.positional {
        let r = api::rid::NODE;
        let node = match api.handle(Request::new(Verb::Get, r, "", n, creds.clone())) {
            Ok(o) => o,
            Err(s) => {
                lines.push(s.kubectl_message(None, ""));
                continue;
            }
        };
        if api::get_bool(&node, &["spec", "unschedulable"]).unwrap_or(false) == want {
            lines.push(format!("node/{n} already {verb}ed"));
            continue;
        }
        let patch = if want { json!({"spec": {"unschedulable": true}}) } else { json!({"spec": {"unschedulable": null}}) };
        match api.handle(Request::patch(r, "", n, PatchType::Strategic, patch, creds.clone())) {
            Ok(_) => lines.push(format!("node/{n} {verb}ed")),
            Err(s) => lines.push(s.kubectl_message(None, "")),
        }
    }
    lines
}

/// The eviction half of `kubectl drain NODE`: every pod on the node is deleted gracefully
/// (kubeloop has no PodDisruptionBudgets to consult); pods without a controller need
/// `--force`, as in kubectl.
pub(super) fn drain(api: &mut ApiServer, creds: &Credentials, f: &Flags) -> Vec<String> {
    let mut out = Vec::new();
    for n in &f.positional {
        let list = match api.handle(Request::new(Verb::List, crate::foundation::api::rid::POD, "", "", creds.clone())) {
            Ok(l) => l,
            Err(s) => return vec![s.kubectl_message(None, "")],
        };
        let pods: Vec<Value> = api::get_array(&list, &["items"])
            .iter()
            .filter(|p| {
                get_str(p, &["spec", "nodeName"]) == Some(n.as_str()) && !matches!(get_str(p, &["status", "phase"]), Some("Succeeded") | Some("Failed"))
            })
            .cloned()
            .collect();
        let bare: Vec<String> = pods.iter().filter(|p| api::controller_ref(p).is_none()).map(|p| format!("{}/{}", api::namespace(p), api::name(p))).collect();
        if !bare.is_empty() && f.get("--force").is_none() {
            out.push(format!(
                "error: unable to drain node {n:?} due to error: cannot delete Pods that declare no controller (use --force to override): {}, continuing command...",
                bare.join(", ")
            ));
            out.push("There are pending nodes to be drained:".into());
            out.push(format!(" {n}"));
            out.push(format!("error: cannot delete Pods that declare no controller (use --force to override): {}", bare.join(", ")));
            continue;
        }
        if !bare.is_empty() {
            out.push(format!("Warning: deleting Pods that declare no controller: {}", bare.join(", ")));
        }
        for p in &pods {
            out.push(format!("evicting pod {}/{}", api::namespace(p), api::name(p)));
        }
        // Each pod goes through the eviction subresource, so disruption budgets hold; a
        // refused eviction is reported once (kubectl would retry every 5s until --timeout).
        let mut refused = Vec::new();
        for p in &pods {
            let (pns, pname) = (api::namespace(p), api::name(p));
            let body = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pname, "namespace": pns}});
            let mut req = Request::create(crate::foundation::api::rid::POD, pns, body, creds.clone()).with_sub("eviction");
            req.name = pname.to_string();
            match api.handle(req) {
                Ok(_) => out.push(format!("pod/{pname} evicted")),
                Err(s) if s.code == 429 => {
                    out.push(format!("error when evicting pods/{pname:?} -n {pns:?} (will retry after 5s): {}", s.message));
                    refused.push(format!("pods/{pname:?} -n {pns:?}"));
                }
                Err(s) => out.push(s.kubectl_message(None, "")),
            }
        }
        if refused.is_empty() {
            out.push(format!("node/{n} drained"));
        } else {
            out.push(format!(
                "error: unable to drain node {n:?}: {} still protected by a PodDisruptionBudget; run drain again once the budget allows",
                refused.join(", ")
            ));
        }
    }
    out
}
