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

/// What drain does with one pod (`k8s.io/kubectl/pkg/drain/filters.go`): evict it, leave
/// it with a warning, or refuse to drain the node, each with the message drain groups by.
enum PodDelete {
    Evict(Option<&'static str>),
    Leave(Option<String>),
    Refuse(String),
}

/// drain's filters in its order, the first that keeps a pod deciding: DaemonSet-managed
/// pods stay (`--ignore-daemonsets` to go on), mirror pods stay, pods with emptyDir need
/// `--delete-emptydir-data`, pods without a controller need `--force`.
fn filter(api: &mut ApiServer, creds: &Credentials, p: &Value, f: &Flags) -> PodDelete {
    let owner = api::controller_ref(p);
    if let Some(o) = owner.filter(|o| get_str(o, &["kind"]) == Some("DaemonSet")) {
        let name = get_str(o, &["name"]).unwrap_or("");
        if let Err(s) = api.handle(Request::new(Verb::Get, crate::foundation::api::rid::DAEMONSET, api::namespace(p), name, creds.clone())) {
            return if s.code == 404 && switch(f, "--force") { PodDelete::Evict(None) } else { PodDelete::Refuse(s.message.clone()) };
        }
        if !switch(f, "--ignore-daemonsets") {
            return PodDelete::Refuse("DaemonSet-managed Pods (use --ignore-daemonsets to ignore)".into());
        }
        return PodDelete::Leave(Some("ignoring DaemonSet-managed Pods".into()));
    }
    if api::annotation(p, "kubernetes.io/config.mirror").is_some() {
        return PodDelete::Leave(None);
    }
    let local = api::get_array(p, &["spec", "volumes"]).iter().any(|v| v.get("emptyDir").is_some());
    if local && !switch(f, "--delete-emptydir-data") {
        return PodDelete::Refuse("Pods with local storage (use --delete-emptydir-data to override)".into());
    }
    match owner {
        Some(_) => PodDelete::Evict(None),
        None if switch(f, "--force") => PodDelete::Evict(Some("deleting Pods that declare no controller")),
        None => PodDelete::Refuse("cannot delete Pods that declare no controller (use --force to override)".into()),
    }
}

/// Group `namespace/name` by message, in the order messages first appear.
fn grouped(items: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, Vec<&str>)> = Vec::new();
    for (msg, pod) in items {
        match out.iter_mut().find(|(m, _)| m == msg) {
            Some((_, pods)) => pods.push(pod),
            None => out.push((msg.clone(), vec![pod])),
        }
    }
    out.into_iter().map(|(m, pods)| (m, pods.join(", "))).collect()
}

/// The eviction half of `kubectl drain NODE`: every pod on the node that drain's filters
/// let go is evicted through the eviction subresource.
pub(super) fn drain(api: &mut ApiServer, creds: &Credentials, f: &Flags) -> Vec<String> {
    let mut out = Vec::new();
    for n in &f.positional {
        let list = match api.handle(Request::new(Verb::List, crate::foundation::api::rid::POD, "", "", creds.clone())) {
            Ok(l) => l,
            Err(s) => return vec![s.kubectl_message(None, "")],
        };
        let on_node: Vec<Value> = api::get_array(&list, &["items"])
            .iter()
            .filter(|p| {
                get_str(p, &["spec", "nodeName"]) == Some(n.as_str()) && !matches!(get_str(p, &["status", "phase"]), Some("Succeeded") | Some("Failed"))
            })
            .cloned()
            .collect();
        let (mut pods, mut warnings, mut refusals) = (Vec::new(), Vec::new(), Vec::new());
        for p in on_node {
            let id = format!("{}/{}", api::namespace(&p), api::name(&p));
            match filter(api, creds, &p, f) {
                PodDelete::Evict(warning) => {
                    if let Some(w) = warning {
                        warnings.push((w.to_string(), id));
                    }
                    pods.push(p);
                }
                PodDelete::Leave(warning) => warnings.extend(warning.map(|w| (w, id))),
                PodDelete::Refuse(msg) => refusals.push((msg, id)),
            }
        }
        if !refusals.is_empty() {
            // In the order of drain's filters (kubectl's own order is a Go map's).
            let rank = |m: &str| {
                [m.starts_with("DaemonSet"), m.starts_with("Pods with local"), m.starts_with("cannot delete Pods that")].iter().position(|b| *b).unwrap_or(0)
            };
            let mut groups = grouped(&refusals);
            groups.sort_stable_by_key(|(m, _)| rank(m));
            let errs: Vec<String> = groups
                .into_iter()
                .map(
                    |(m, pods)| if m.to_ascii_lowercase().starts_with("cannot delete") { format!("{m}: {pods}") } else { format!("cannot delete {m}: {pods}") },
                )
                .collect();
            let err = if errs.len() == 1 { errs[0].clone() } else { format!("[{}]", errs.join(", ")) };
            out.push(format!("error: unable to drain node {n:?} due to error: {err}, continuing command..."));
            out.push("There are pending nodes to be drained:".into());
            out.push(format!(" {n}"));
            // One error is kubectl's `error: ...`; several, one per line.
            if errs.len() == 1 {
                out.push(format!("error: {err}"));
            } else {
                out.extend(errs);
            }
            continue;
        }
        if !warnings.is_empty() {
            let w: Vec<String> = grouped(&warnings).into_iter().map(|(m, pods)| format!("{m}: {pods}")).collect();
            out.push(format!("Warning: {}", w.join("; ")));
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
