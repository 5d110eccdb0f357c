//! `kubectl port-forward TYPE/NAME [LOCAL:]REMOTE...` (`k8s.io/kubectl/pkg/cmd/portforward`):
//! the pod a pod, workload or Service names, and each port pair, a Service's port
//! translated to the pod's (`translateServicePortToTargetPort`) and a named port looked up
//! in the pod. The cluster keeps the forwards the terminal opens; `curl localhost:PORT`
//! then reaches the pod through its node's kubelet.

use super::*;

/// What a port-forward line asks for: the pod, and each (local, remote) port pair; a
/// local port of None is one the system picks.
#[derive(Debug, Clone, PartialEq)]
pub struct PortForward {
    pub namespace: String,
    pub pod: String,
    pub ports: Vec<(Option<u16>, u16)>,
}

/// Parse a port-forward line, find its pod and check it runs. Err is what kubectl prints.
pub fn port_forward_prepare(api: &mut ApiServer, creds: &Credentials, ns: &str, line: &str) -> Result<PortForward, Vec<String>> {
    let words = split_args(line).map_err(|e| vec![format!("error: {e}")])?;
    let words: Vec<String> = words.into_iter().skip_while(|a| a == "kubectl").collect();
    let words = flags::check(&words)?;
    let f = parse_flags(&words[1..]).map_err(|e| vec![format!("error: {e}")])?;
    if let Some(a) = f.get("--address").filter(|a| !a.split(',').all(|a| matches!(a.trim(), "localhost" | "127.0.0.1" | "::1"))) {
        return Err(vec![format!("error: kubeloop's terminal forwards ports on its own machine's loopback only (localhost, 127.0.0.1, ::1), not on {a}")]);
    }
    let ns = f.namespace.clone().unwrap_or_else(|| ns.to_string());
    let (Some(target), specs) = (f.positional.first(), &f.positional.get(1..).unwrap_or(&[])) else {
        return Err(usage());
    };
    if specs.is_empty() {
        return Err(usage());
    }
    let target = if target.contains('/') { target.clone() } else { format!("pod/{target}") };
    let mut ignored = Vec::new();
    let by = service_as_selector(api, creds, &target, &ns)?;
    let pod = logs::pod_for_target(api, creds, &by, &ns, &mut ignored)?;
    let service = match target.split_once('/') {
        Some(("svc" | "service" | "services", name)) => Some(fetch(api, creds, api::rid::SERVICE, &ns, name).map_err(|e| vec![e])?),
        _ => None,
    };
    let mut ports = Vec::new();
    for spec in specs.iter() {
        let (local, remote) = match spec.split_once(':') {
            Some((l, r)) => (Some(l), r),
            None => (None, spec.as_str()),
        };
        // A Service's port becomes the pod's: its targetPort, by number or by name.
        let (remote_spec, local_default) = match &service {
            Some(svc) => {
                let p = api::get_array(svc, &["spec", "ports"])
                    .iter()
                    .find(|p| api::get_i64(p, &["port"]).map(|n| n.to_string()).as_deref() == Some(remote) || get_str(p, &["name"]) == Some(remote))
                    .cloned();
                let Some(p) = p else {
                    return Err(vec![format!("error: Service {} does not have a service port {remote}", api::name(svc))]);
                };
                let port = api::get_i64(&p, &["port"]).unwrap_or(0).to_string();
                let target = match api::get(&p, &["targetPort"]) {
                    Some(Value::String(s)) => s.to_string(),
                    Some(v) if v.as_i64().is_some() => v.as_i64().unwrap_or(0).to_string(),
                    _ => port.clone(),
                };
                (target, port)
            }
            None => (remote.to_string(), remote.to_string()),
        };
        let remote = match remote_spec.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => named_port(&pod, &remote_spec)?,
        };
        let local = match local {
            None => Some(local_default.parse::<u16>().unwrap_or(remote)),
            Some("") | Some("0") => None,
            Some(l) => match l.parse::<u16>() {
                Ok(n) => Some(n),
                Err(_) => return Err(vec![format!("error: Error parsing local port '{l}': strconv.ParseUint: parsing \"{l}\": invalid syntax")]),
            },
        };
        ports.push((local, remote));
    }
    let phase = get_str(&pod, &["status", "phase"]).unwrap_or("Pending");
    if phase != "Running" {
        return Err(vec![format!("error: unable to forward port because pod is not running. Current status={phase}")]);
    }
    Ok(PortForward { namespace: ns, pod: api::name(&pod).to_string(), ports })
}

fn usage() -> Vec<String> {
    vec!["error: TYPE/NAME and list of ports are required for port-forward".into(), "See 'kubectl port-forward -h' for help and examples".into()]
}

/// A Service is found by the pods its selector picks, as a workload is.
fn service_as_selector(api: &mut ApiServer, creds: &Credentials, target: &str, ns: &str) -> Result<String, Vec<String>> {
    match target.split_once('/') {
        Some(("svc" | "service" | "services", name)) => {
            let svc = fetch(api, creds, api::rid::SERVICE, ns, name).map_err(|e| vec![e])?;
            if api::get(&svc, &["spec", "selector"]).and_then(Value::as_object).is_none_or(|m| m.iter().next().is_none()) {
                return Err(vec![format!("error: cannot attach to *v1.Service: invalid service '{name}': Service is defined without a selector")]);
            }
            Ok(format!("service/{name}"))
        }
        _ => Ok(target.to_string()),
    }
}

/// A container port by name (`util.LookupContainerPortNumberByName`).
fn named_port(pod: &Value, name: &str) -> Result<u16, Vec<String>> {
    for c in api::get_array(pod, &["spec", "containers"]) {
        for p in api::get_array(c, &["ports"]) {
            if get_str(p, &["name"]) == Some(name) {
                return Ok(api::get_i64(p, &["containerPort"]).unwrap_or(0) as u16);
            }
        }
    }
    Err(vec![format!("error: Pod '{}' does not have a named port '{name}'", api::name(pod))])
}
