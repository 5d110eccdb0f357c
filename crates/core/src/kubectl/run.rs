//! `kubectl run` and `kubectl expose`: a Pod from flags, and a Service for an object that
//! already runs (`k8s.io/kubectl/pkg/cmd/run`, `.../generate/versioned/run.go`,
//! `.../cmd/expose`), with `--dry-run` and `-o` as kubectl prints them.

use super::args::{heredoc, parse_flags, split_args, switch};
use super::{fetch, get::json_indent4, kind_prefix, Flags};
use crate::apiserver::{ApiServer, Credentials, Request};
use crate::foundation::api::{self, get_array, get_str, rid, ResourceId, RESOURCES};
use crate::foundation::value::{json, Map, Value};

/// `--dry-run`: none, client or server (`unchanged`, a bare `--dry-run`, means client).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum DryRun {
    None,
    Client,
    Server,
}

pub(super) fn dry_run(f: &Flags) -> Result<DryRun, String> {
    match f.get("--dry-run") {
        None | Some("none") | Some("false") => Ok(DryRun::None),
        Some("client") | Some("true") | Some("unchanged") => Ok(DryRun::Client),
        Some("server") => Ok(DryRun::Server),
        Some(v) => Err(format!("error: Invalid dry-run value ({v}). Must be \"none\", \"server\", or \"client\".")),
    }
}

/// What kubectl prints for an object it made: `pod/x created`, `-o name|yaml|json`.
pub(super) fn print_made(r: ResourceId, obj: &Value, verb: &str, dry: DryRun, output: Option<&str>) -> Result<Vec<String>, String> {
    let mut obj = obj.clone();
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    match output {
        None | Some("") => {
            let suffix = match dry {
                DryRun::None => "",
                DryRun::Client => " (dry run)",
                DryRun::Server => " (server dry run)",
            };
            Ok(vec![format!("{}/{}{verb}{suffix}", kind_prefix(r), api::name(&obj))])
        }
        Some("name") => Ok(vec![format!("{}/{}", kind_prefix(r), api::name(&obj))]),
        Some("yaml") => Ok(vec![crate::kubectl::goyaml::to_yaml(&obj).trim_end().to_string()]),
        Some("json") => Ok(vec![json_indent4(&obj)]),
        Some(o) => {
            Err(format!("error: unable to match a printer suitable for the output format \"{o}\", allowed formats are: json,name,yaml (kubeloop's subset)"))
        }
    }
}

/// Send a create (as a server dry run if asked); the stored (or would-be) object.
fn send_create(api: &mut ApiServer, creds: &Credentials, r: ResourceId, ns: &str, body: Value, dry: DryRun) -> Result<Value, String> {
    let mut req = Request::create(r, ns, body, creds.clone());
    req.dry_run = dry == DryRun::Server;
    api.handle(req).map(|o| (*o).clone()).map_err(|s| s.kubectl_message(None, ""))
}

/// `key=value,key2=value2` (`--labels`).
fn label_map(spec: &str) -> Result<Map, String> {
    let mut m = Map::new();
    for part in spec.split(',') {
        let Some((k, v)) = part.split_once('=') else { return Err(format!("error: unexpected label spec: {part}")) };
        if k.is_empty() {
            return Err("error: unexpected empty label key".into());
        }
        m.insert(k, json!(v));
    }
    Ok(m)
}

/// Whether `image` is a reference a registry would take: a lowercase path of
/// `[a-z0-9._-]` components, an optional `:tag`, an optional `@algorithm:hex` digest.
pub(super) fn valid_image(image: &str) -> bool {
    let (rest, digest) = match image.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (image, None),
    };
    if let Some(d) = digest {
        let Some((alg, hex)) = d.split_once(':') else { return false };
        if alg.is_empty() || hex.len() < 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return false;
        }
    }
    // A tag follows the last `:` after the last `/` (a registry's port comes before a `/`).
    let (path, tag) = match rest.rfind(':') {
        Some(i) if !rest[i..].contains('/') => (&rest[..i], Some(&rest[i + 1..])),
        _ => (rest, None),
    };
    if let Some(t) = tag {
        if t.is_empty() || t.len() > 128 || !t.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) || t.starts_with(['.', '-']) {
            return false;
        }
    }
    let mut parts = path.split('/').peekable();
    let mut first = true;
    while let Some(p) = parts.next() {
        if p.is_empty() {
            return false;
        }
        // The first of several components may be a registry host (`localhost:5000`, `Registry.Example`).
        let host = first && parts.peek().is_some() && (p.contains(['.', ':']) || p == "localhost");
        let ok = if host {
            p.chars().all(|c| c.is_ascii_alphanumeric() || ".-:".contains(c))
        } else {
            p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c)) && !p.starts_with(['.', '_', '-'])
        };
        if !ok {
            return false;
        }
        first = false;
    }
    true
}

/// `kubectl run NAME --image=IMAGE [flags] [-- ARGS...]`.
pub(super) fn run_pod(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str, after_dashes: &[String], attach: (bool, bool)) -> Vec<String> {
    let usage = |m: &str| vec![format!("error: {m}"), "See 'kubectl run -h' for help and examples".to_string()];
    let Some(image) = f.get("--image") else { return vec!["error: required flag(s) \"image\" not set".into()] };
    let Some(name) = f.positional.first() else { return usage("NAME is required for run") };
    if image.is_empty() {
        return vec!["error: --image is required".into()];
    }
    if !valid_image(image) {
        return vec![format!("error: Invalid image name \"{image}\": invalid reference format")];
    }
    let (stdin, tty) = attach;
    if tty && !stdin {
        return usage("-i/--stdin is required for containers with -t/--tty=true");
    }
    let port = f.get("--port");
    if f.get("--expose") == Some("true") && port.is_none_or(str::is_empty) {
        return usage("--port must be set when exposing a service");
    }
    let restart = match f.get("--restart") {
        None => "Always",
        Some("") if stdin => "OnFailure",
        Some("") => "Always",
        Some(r @ ("Always" | "OnFailure" | "Never")) => r,
        Some(r) => return usage(&format!("invalid restart policy: {r}")),
    };
    let attached = stdin || f.get("--attach") == Some("true");
    if f.get("--rm") == Some("true") && !attached {
        return usage("--rm should only be used for attached containers");
    }
    let dry = match dry_run(f) {
        Ok(d) => d,
        Err(e) => return vec![e],
    };
    if dry != DryRun::None && attached {
        return usage("--dry-run=[server|client] can't be used with attached containers options (--attach, --stdin, or --tty)");
    }
    if let Some(p) = f.get("--image-pull-policy") {
        if !matches!(p, "" | "Always" | "IfNotPresent" | "Never") {
            return usage(&format!("invalid image pull policy: {p}"));
        }
    }
    let labels = match f.get("--labels").or(f.get("-l")).filter(|l| !l.is_empty()) {
        Some(l) => match label_map(l) {
            Ok(m) => m,
            Err(e) => return vec![e],
        },
        None => [("run".to_string(), json!(name))].into_iter().collect(),
    };
    let mut container = json!({"name": name, "image": image, "resources": {}});
    if !after_dashes.is_empty() {
        let key = if f.get("--command") == Some("true") { "command" } else { "args" };
        container[key] = json!(after_dashes);
    }
    let mut env = Vec::new();
    for e in f.values.iter().filter(|(k, _)| k == "--env").map(|(_, v)| v) {
        match e.split_once('=') {
            Some((k, v)) if !k.is_empty() => env.push(json!({"name": k, "value": v})),
            _ => return vec![format!("error: invalid env: {e}")],
        }
    }
    if !env.is_empty() {
        container["env"] = json!(env);
    }
    if let Some(p) = f.get("--image-pull-policy").filter(|p| !p.is_empty()) {
        container["imagePullPolicy"] = json!(p);
    }
    if let Some(p) = port.filter(|p| !p.is_empty()) {
        let Ok(n) = p.parse::<i64>() else { return vec![format!("error: strconv.Atoi: parsing {p:?}: invalid syntax")] };
        container["ports"] = json!([{"containerPort": n}]);
    }
    if f.get("--privileged") == Some("true") {
        container["securityContext"] = json!({"privileged": true});
    }
    if stdin {
        container["stdin"] = json!(true);
        container["stdinOnce"] = json!(f.get("--leave-stdin-open") != Some("true"));
    }
    if tty {
        container["tty"] = json!(true);
    }
    let mut meta = json!({"name": name, "labels": labels.clone()});
    let annotations: Map =
        f.values.iter().filter(|(k, _)| k == "--annotations").filter_map(|(_, v)| v.split_once('=')).map(|(k, v)| (k.to_string(), json!(v))).collect();
    if !annotations.is_empty() {
        meta["annotations"] = Value::Object(annotations);
    }
    if f.namespace.is_some() {
        meta["namespace"] = json!(ns);
    }
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
        "spec": {"containers": [container], "dnsPolicy": "ClusterFirst", "restartPolicy": restart}, "status": {}});
    if attached && !stdin {
        // Attaching to a container's output only is `logs -f`, which kubeloop's terminal
        // does not stream.
        return vec![format!(
            "error: kubeloop's terminal attaches to a container's stdin (-i, with -t for a terminal), not to its output alone (--attach): use kubectl logs {name}"
        )];
    }
    if stdin {
        // `-i`: the container's stdin stays open for kubectl to attach to, once only
        // unless --leave-stdin-open; kubectl prints nothing until it attaches.
        let c = &mut pod["spec"]["containers"][0];
        c["stdin"] = json!(true);
        if f.get("--leave-stdin-open") != Some("true") {
            c["stdinOnce"] = json!(true);
        }
        if tty {
            c["tty"] = json!(true);
        }
        return match send_create(api, creds, rid::POD, ns, pod, DryRun::None) {
            Ok(_) => vec![],
            Err(e) => vec![e],
        };
    }
    let output = f.get("--output");
    let mut out = Vec::new();
    if f.get("--expose") == Some("true") {
        let p: i64 = port.and_then(|p| p.parse().ok()).unwrap_or(0);
        let mut svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"ports": [{"port": p, "protocol": "TCP", "targetPort": p}], "selector": labels.clone()}, "status": {"loadBalancer": {}}});
        if f.get("--labels").is_some() {
            svc["metadata"]["labels"] = Value::Object(labels.clone());
        }
        let made = if dry == DryRun::Client { Ok(svc) } else { send_create(api, creds, rid::SERVICE, ns, svc, dry) };
        match made.and_then(|s| print_made(rid::SERVICE, &s, " created", dry, output)) {
            Ok(lines) => out.extend(lines),
            Err(e) => return vec![e],
        }
        if matches!(output, Some("yaml")) {
            out.push("---".into());
        }
    }
    let made = if dry == DryRun::Client { Ok(pod) } else { send_create(api, creds, rid::POD, ns, pod, dry) };
    match made.and_then(|p| print_made(rid::POD, &p, " created", dry, output)) {
        Ok(lines) => out.extend(lines),
        Err(e) => out.push(e),
    }
    out
}

/// Ports a workload's containers declare, in order, without repeats: (port, protocol).
fn container_ports(pod_spec: &Value) -> Vec<(i64, String)> {
    let mut out: Vec<(i64, String)> = Vec::new();
    for c in get_array(pod_spec, &["containers"]) {
        for p in get_array(c, &["ports"]) {
            let Some(n) = p["containerPort"].as_i64() else { continue };
            let proto = get_str(p, &["protocol"]).unwrap_or("TCP").to_string();
            if !out.contains(&(n, proto.clone())) {
                out.push((n, proto));
            }
        }
    }
    out
}

/// `kubectl expose TYPE NAME` / `TYPE/NAME` with `--port`, `--target-port`, `--type`,
/// `--name`, `--protocol`, `--selector`, `--labels`, `--cluster-ip`, `--external-ip`,
/// `--session-affinity`, `--load-balancer-ip`.
pub(super) fn expose(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let (ty, name) = match f.positional.as_slice() {
        [] => return super::no_resources_named(),
        [one] => match one.split_once('/') {
            Some((t, n)) => (t.to_string(), n.to_string()),
            None => return vec!["error: resource(s) were provided, but no name was specified".into()],
        },
        [t, n, ..] => (t.clone(), n.clone()),
    };
    let Some(r) = api::resource_for_name(&ty) else { return vec![format!("error: the server doesn't have a resource type \"{ty}\"")] };
    let obj = match fetch(api, creds, r, ns, &name) {
        Ok(o) => (*o).clone(),
        Err(e) => return vec![e],
    };
    let kind = RESOURCES[r].kind;
    let dry = match dry_run(f) {
        Ok(d) => d,
        Err(e) => return vec![e],
    };
    // The selector and the ports, from the object when not given.
    let introspected: Result<(Map, Vec<(i64, String)>), String> = match kind {
        "Pod" => match api::labels(&obj).filter(|l| !l.is_empty()) {
            Some(l) => Ok((l.clone(), container_ports(&obj["spec"]))),
            None => Err("the pod has no labels and cannot be exposed".into()),
        },
        "Service" => match obj["spec"]["selector"].as_object() {
            Some(s) => Ok((
                s.clone(),
                get_array(&obj, &["spec", "ports"])
                    .iter()
                    .filter_map(|p| Some((p["port"].as_i64()?, get_str(p, &["protocol"]).unwrap_or("TCP").to_string())))
                    .collect(),
            )),
            None => Err("the service has no pod selector set".into()),
        },
        "ReplicationController" => match obj["spec"]["selector"].as_object() {
            Some(s) => Ok((s.clone(), container_ports(&obj["spec"]["template"]["spec"]))),
            None => Err("invalid replicationcontroller: no selectors, therefore cannot be exposed".into()),
        },
        "Deployment" | "ReplicaSet" => {
            let sel = &obj["spec"]["selector"];
            let what = kind.to_ascii_lowercase();
            if get_array(sel, &["matchExpressions"]).is_empty() {
                match sel["matchLabels"].as_object().filter(|m| !m.is_empty()) {
                    Some(m) => Ok((m.clone(), container_ports(&obj["spec"]["template"]["spec"]))),
                    None => Err(format!("invalid {what}: no selectors, therefore cannot be exposed")),
                }
            } else {
                Err(format!("couldn't convert expressions - \"{}\" to map-based selector format", sel["matchExpressions"]))
            }
        }
        _ => {
            let group = RESOURCES[r].group;
            return vec![format!("error: cannot expose a {kind}{}", if group.is_empty() { String::new() } else { format!(".{group}") })];
        }
    };
    let selector = match f.get("--selector").or(f.selector.as_deref()) {
        Some(s) => match label_map(s) {
            Ok(m) => m,
            Err(e) => return vec![e],
        },
        None => match &introspected {
            Ok((s, _)) => s.clone(),
            Err(e) => return vec![format!("error: couldn't retrieve selectors via --selector flag or introspection: {e}")],
        },
    };
    let found: Vec<(i64, String)> = introspected.map(|(_, p)| p).unwrap_or_default();
    let ports: Vec<(i64, Option<String>)> = match f.get("--port") {
        Some(p) => {
            let Ok(n) = p.parse::<i64>() else { return vec![format!("error: strconv.Atoi: parsing {p:?}: invalid syntax")] };
            let protos: Vec<String> = found.iter().filter(|(q, _)| *q == n).map(|(_, pr)| pr.clone()).collect();
            if protos.is_empty() {
                vec![(n, None)]
            } else {
                protos.into_iter().map(|pr| (n, Some(pr))).collect()
            }
        }
        None => found.into_iter().map(|(n, pr)| (n, Some(pr))).collect(),
    };
    let headless = f.get("--cluster-ip") == Some("None");
    if ports.is_empty() && !headless {
        return vec!["error: couldn't find port via --port flag or introspection".into()];
    }
    let many_protocols = |n: i64| ports.iter().filter(|(q, _)| *q == n).count() > 1;
    let target = f.get("--target-port").map(|t| t.parse::<i64>().map(|n| json!(n)).unwrap_or_else(|_| json!(t)));
    let entries: Vec<Value> = ports
        .iter()
        .enumerate()
        .map(|(i, (n, proto))| {
            let protocol = f.get("--protocol").map(str::to_string).or(proto.clone()).unwrap_or_else(|| "TCP".into());
            let mut e = json!({"port": n, "protocol": protocol.clone(), "targetPort": target.clone().unwrap_or_else(|| json!(n))});
            if many_protocols(*n) {
                e["name"] = json!(format!("port-{n}-{}", protocol.to_ascii_lowercase()));
            } else if ports.len() > 1 {
                e["name"] = json!(format!("port-{}", i + 1));
            }
            e
        })
        .collect();
    let svc_name: String = f.get("--name").map(str::to_string).unwrap_or_else(|| name.chars().take(63).collect());
    let mut meta = json!({"name": svc_name});
    let labels = match f.get("--labels") {
        Some(l) => match label_map(l) {
            Ok(m) => Some(m),
            Err(e) => return vec![e],
        },
        None => api::labels(&obj).filter(|l| !l.is_empty()).cloned(),
    };
    if let Some(l) = labels {
        meta["labels"] = Value::Object(l);
    }
    if f.namespace.is_some() {
        meta["namespace"] = json!(ns);
    }
    let mut spec = json!({"ports": entries, "selector": selector});
    if let Some(t) = f.get("--type").filter(|t| !t.is_empty()) {
        spec["type"] = json!(t);
    }
    if let Some(ip) = f.get("--cluster-ip").filter(|t| !t.is_empty()) {
        spec["clusterIP"] = json!(ip);
    }
    if let Some(ip) = f.get("--external-ip").filter(|t| !t.is_empty()) {
        spec["externalIPs"] = json!([ip]);
    }
    if let Some(a) = f.get("--session-affinity").filter(|t| !t.is_empty()) {
        if !matches!(a, "None" | "ClientIP") {
            return vec![format!("error: unknown session affinity: {a}")];
        }
        spec["sessionAffinity"] = json!(a);
    }
    if let (Some(ip), Some("LoadBalancer")) = (f.get("--load-balancer-ip").filter(|t| !t.is_empty()), f.get("--type")) {
        spec["loadBalancerIP"] = json!(ip);
    }
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec, "status": {"loadBalancer": {}}});
    let made = if dry == DryRun::Client { Ok(svc) } else { send_create(api, creds, rid::SERVICE, ns, svc, dry) };
    match made.and_then(|s| print_made(rid::SERVICE, &s, " exposed", dry, f.get("--output"))) {
        Ok(lines) => lines,
        Err(e) => vec![e],
    }
}

#[cfg(test)]
mod tests {
    use super::valid_image;

    #[test]
    fn image_references_are_checked_as_a_registry_would() {
        for ok in [
            "nginx",
            "nginx:1.27",
            "registry.k8s.io/pause:3.10",
            "localhost:5000/app",
            "busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "a/b/c:v1.0-rc.1",
        ] {
            assert!(valid_image(ok), "{ok}");
        }
        for bad in ["Nginx", "nginx:", "nginx::1", "/nginx", "nginx/", "ng inx", "nginx@sha256:xyz", "nginx:-1"] {
            assert!(!valid_image(bad), "{bad}");
        }
    }
}

/// What `kubectl run -i` (or `kubectl debug -i`) attaches to once it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct RunAttach {
    pub namespace: String,
    pub pod: String,
    pub container: String,
    /// What kubectl waits for before it attaches.
    pub wait: WaitFor,
    pub rm: bool,
    pub restart: String,
    pub tty: bool,
    pub quiet: bool,
}

/// What kubectl waits for before attaching.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WaitFor {
    /// `kubectl run`: the pod running and ready (`podRunningAndReady`).
    PodReady,
    /// `kubectl debug --copy-to`, `node/NAME`: the container running (or terminated).
    Container,
    /// `kubectl debug`: the ephemeral container running (or terminated).
    Ephemeral,
}

/// The attach a `kubectl run -i` line asks for (None for any other line).
pub fn run_attach(kc: &super::config::Kubeconfig, line: &str) -> Option<RunAttach> {
    let (line, _) = heredoc(line);
    let words: Vec<String> = split_args(&line).ok()?.into_iter().skip_while(|w| w == "kubectl").collect();
    if words.first().map(String::as_str) != Some("run") {
        return None;
    }
    let words = super::flags::check(&words).ok()?;
    let end = words.iter().position(|w| w == "--").unwrap_or(words.len());
    let (mut stdin, mut tty) = (false, false);
    let words: Vec<String> = words[1..end]
        .iter()
        .filter(|w| match w.as_str() {
            "--stdin=true" => {
                stdin = true;
                false
            }
            "--tty=true" => {
                tty = true;
                false
            }
            _ => true,
        })
        .cloned()
        .collect();
    let f = parse_flags(&words).ok()?;
    if !stdin {
        return None;
    }
    let restart = match f.get("--restart") {
        None => "Always",
        Some("") => "OnFailure",
        Some(r) => r,
    };
    let pod = f.positional.first()?.clone();
    Some(RunAttach {
        namespace: f.namespace.clone().unwrap_or_else(|| kc.namespace().to_string()),
        container: pod.clone(),
        pod,
        wait: WaitFor::PodReady,
        rm: switch(&f, "--rm"),
        restart: restart.to_string(),
        tty,
        quiet: switch(&f, "--quiet"),
    })
}
