//! `kubectl logs` (`k8s.io/kubectl/pkg/cmd/logs`): the pod a TYPE/NAME picks, the default
//! container, and the lines the API server reads from the node's kubelet.

use super::*;
use crate::foundation::sort::Sort;

/// The order `kubectl logs TYPE/NAME` picks a pod in (`podutils.ByLogging`): scheduled,
/// running, ready (longest first), most restarts, oldest.
pub(super) fn logging_rank(p: &Value) -> (bool, u8, bool, String, i64, String) {
    let phase = match get_str(p, &["status", "phase"]) {
        Some("Running") => 0,
        Some("Unknown") => 1,
        Some("Pending") => 2,
        _ => 3,
    };
    let ready = api::get_array(p, &["status", "conditions"]).iter().find(|c| get_str(c, &["type"]) == Some("Ready"));
    let is_ready = ready.is_some_and(|c| get_str(c, &["status"]) == Some("True"));
    let since = if is_ready { ready.and_then(|c| get_str(c, &["lastTransitionTime"])).unwrap_or("").to_string() } else { "~".into() };
    let restarts: i64 = api::get_array(p, &["status", "containerStatuses"]).iter().filter_map(|c| api::get_i64(c, &["restartCount"])).sum();
    let created = get_str(p, &["metadata", "creationTimestamp"]).unwrap_or("~").to_string();
    (get_str(p, &["spec", "nodeName"]).is_none(), phase, !is_ready, since, -restarts, created)
}

/// `kubectl logs POD|TYPE/NAME [-c CONTAINER] [--previous] [--tail N]`: what the container
/// wrote, read through the API server from the node's kubelet.
pub fn logs(api: &mut ApiServer, kubelet: Option<&dyn KubeletClient>, creds: &Credentials, line: &str) -> Vec<String> {
    let args = match split_args(line) {
        Ok(a) => a,
        Err(e) => return vec![format!("error: {e}")],
    };
    let args: Vec<String> = args.into_iter().skip_while(|a| a == "kubectl").collect();
    let args = match super::flags::check(&args) {
        Ok(a) => a[1..].to_vec(),
        Err(e) => return e,
    };
    let f = match parse_flags(&args) {
        Ok(f) => f,
        Err(e) => return vec![format!("error: {e}")],
    };
    let ns = f.namespace.clone().unwrap_or_else(|| "default".into());
    let mut out = Vec::new();
    let Some(target) = f.positional.first() else {
        return vec!["error: expected POD or TYPE/NAME is a required argument for the logs command".into()];
    };
    let pod = match pod_for_target(api, creds, target, &ns, &mut out) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let pod_name = api::name(&pod).to_string();
    let container = default_container(&pod, f.get("--container"), &mut out);
    let previous = f.get("--previous") == Some("true");
    match api.pod_logs(creds.clone(), &ns, &pod_name, Some(&container), previous, kubelet) {
        Ok(text) => {
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            if let Some(n) = f.get("--tail").and_then(|t| t.parse::<i64>().ok()).filter(|n| *n >= 0) {
                lines = lines.split_off(lines.len().saturating_sub(n as usize));
            }
            out.extend(lines);
        }
        Err(s) => out.push(s.kubectl_message(None, "")),
    }
    out
}

/// The pod a `POD` or `TYPE/NAME` argument names (`polymorphichelpers`): for a workload,
/// the best of its pods for logging, with kubectl's note when there were several.
pub(super) fn pod_for_target(
    api: &mut ApiServer,
    creds: &Credentials,
    target: &str,
    ns: &str,
    out: &mut Vec<String>,
) -> Result<crate::foundation::api::Object, Vec<String>> {
    let ns = ns.to_string();
    let pod = match target.split_once('/') {
        None | Some(("pod" | "pods" | "po", _)) => {
            let name = target.split_once('/').map(|(_, n)| n).unwrap_or(target);
            match fetch(api, creds, api::rid::POD, &ns, name) {
                Ok(p) => p,
                Err(e) => return Err(vec![e]),
            }
        }
        Some((t, name)) => {
            let Some(r) = resource_for_name(t) else { return Err(vec![format!("error: the server doesn't have a resource type {t:?}")]) };
            let owner = match fetch(api, creds, r, &ns, name) {
                Ok(o) => o,
                Err(e) => return Err(vec![e]),
            };
            let selector = api::get(&owner, &["spec", "selector"]).cloned();
            let pods = match api.handle(Request::new(Verb::List, api::rid::POD, &ns, "", creds.clone())) {
                Ok(l) => l,
                Err(s) => return Err(vec![s.kubectl_message(None, "")]),
            };
            let mut matching: Vec<&Value> =
                api::get_array(&pods, &["items"]).iter().filter(|p| crate::foundation::labels::selector_matches(selector.as_ref(), api::labels(p))).collect();
            matching.sort_stable_by_key(|p| logging_rank(p));
            let Some(first) = matching.first() else { return Err(vec!["error: timed out waiting for the condition".to_string()]) };
            if matching.len() > 1 {
                out.push(format!("Found {} pods, using pod/{}", matching.len(), api::name(first)));
            }
            crate::foundation::api::Object::new((*first).clone())
        }
    };
    Ok(pod)
}

/// `-c` or the default container (`kubectl.kubernetes.io/default-container`, else the
/// first), with kubectl's "Defaulted container" note when the pod has several.
pub(super) fn default_container(pod: &Value, flag: Option<&str>, out: &mut Vec<String>) -> String {
    let names: Vec<&str> = api::get_array(pod, &["spec", "containers"]).iter().filter_map(|c| get_str(c, &["name"])).collect();
    match flag {
        Some(c) => c.to_string(),
        None => {
            let chosen = api::annotation(pod, "kubectl.kubernetes.io/default-container")
                .filter(|d| names.contains(d))
                .or(names.first().copied())
                .unwrap_or("")
                .to_string();
            if names.len() > 1 {
                out.push(format!("Defaulted container {chosen:?} out of: {}", names.join(", ")));
            }
            chosen
        }
    }
}
