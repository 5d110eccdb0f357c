//! `kubectl debug` (`k8s.io/kubectl/pkg/cmd/debug`): an ephemeral container added to a
//! running pod (`pods/ephemeralcontainers`, a strategic merge patch), a copy of a pod with
//! a debug container (`--copy-to`), or a pod on a node with the host's root at `/host`
//! (`node/NAME`); with `-i`, the cluster's terminal attaches once the container runs.

use super::args::{parse_flags, split_args, switch};
use super::run::{RunAttach, WaitFor};
use super::*;

/// What kubectl prints for the default profile (`Validate`).
const LEGACY: &str =
    "--profile=legacy is deprecated and planned to be removed in v1.39. It is recommended to specify other profile, for example \"--profile=general\".";

/// Run a `kubectl debug` line: what kubectl printed, and what the terminal attaches to
/// once it runs (`-i`).
pub fn debug(api: &mut ApiServer, creds: &Credentials, ns: &str, line: &str) -> (Vec<String>, Option<RunAttach>) {
    match debug_inner(api, creds, ns, line) {
        Ok(r) => r,
        Err(e) => (e, None),
    }
}

fn debug_inner(api: &mut ApiServer, creds: &Credentials, ns: &str, line: &str) -> Result<(Vec<String>, Option<RunAttach>), Vec<String>> {
    let words: Vec<String> = split_args(line).map_err(|e| vec![format!("error: {e}")])?.into_iter().skip_while(|w| w == "kubectl").collect();
    let words = flags::check(&words)?;
    let end = words.iter().position(|w| w == "--").unwrap_or(words.len());
    let command: Vec<String> = words.get(end + 1..).map(<[String]>::to_vec).unwrap_or_default();
    let f = parse_flags(&words[1..end]).map_err(|e| vec![format!("error: {e}")])?;
    let usage = |m: &str| vec![format!("error: {m}"), "See 'kubectl debug -h' for help and examples".to_string()];
    let (stdin, tty, quiet) = (switch(&f, "--stdin"), switch(&f, "--tty"), switch(&f, "--quiet"));
    let Some(target) = f.positional.first().cloned() else { return Err(no_resources_named()) };
    let ns = f.namespace.clone().unwrap_or_else(|| ns.to_string());
    if tty && !stdin {
        return Err(usage("-i/--stdin is required for containers with -t/--tty=true"));
    }
    let image = f.get("--image").filter(|i| !i.is_empty()).map(str::to_string);
    let copy_to = f.get("--copy-to").filter(|c| !c.is_empty()).map(str::to_string);
    if image.is_none() && copy_to.is_none() {
        return Err(usage("you must specify --image when not using --copy-to."));
    }
    if f.get("--set-image").is_some() && copy_to.is_none() {
        return Err(usage("--set-image may only be used with --copy-to."));
    }
    if let Some(i) = &image {
        if !super::run::valid_image(i) {
            return Err(usage(&format!("invalid image name {i:?}: invalid reference format")));
        }
    }
    let target_container = f.get("--target").filter(|t| !t.is_empty()).map(str::to_string);
    if target_container.is_some() && copy_to.is_some() {
        return Err(usage("--target is incompatible with --copy-to. Use --share-processes instead."));
    }
    let profile = f.get("--profile").unwrap_or("legacy").to_string();
    if !PROFILES.contains(&profile.as_str()) {
        return Err(vec![format!("error: unknown profile: {profile}")]);
    }
    let mut out = Vec::new();
    if profile == "legacy" {
        out.push(LEGACY.to_string());
    }
    let container = |name: &str| {
        let mut c = json!({"name": name, "resources": {}, "terminationMessagePolicy": "File"});
        if let Some(i) = &image {
            c["image"] = json!(i);
        }
        if !command.is_empty() {
            c[if switch(&f, "--arguments-only") { "args" } else { "command" }] = json!(command);
        }
        if stdin {
            c["stdin"] = json!(true);
        }
        if tty {
            c["tty"] = json!(true);
        }
        if let Some(p) = f.get("--image-pull-policy").filter(|p| !p.is_empty()) {
            c["imagePullPolicy"] = json!(p);
        }
        c
    };
    let attach = |pod: &str, name: &str, ephemeral: bool| {
        stdin.then(|| RunAttach {
            namespace: ns.clone(),
            pod: pod.to_string(),
            container: name.to_string(),
            rm: false,
            restart: "Always".into(),
            tty,
            quiet,
            wait: if ephemeral { WaitFor::Ephemeral } else { WaitFor::Container },
        })
    };
    // node/NAME: a pod on that node, in the host's namespaces, its root at /host.
    if let Some(node) = target.strip_prefix("node/").or_else(|| target.strip_prefix("nodes/")) {
        fetch(api, creds, api::rid::NODE, "", node).map_err(|e| vec![e])?;
        let name = f.get("--container").unwrap_or("debugger").to_string();
        let pod_name = format!("node-debugger-{node}-{}", api.client_rng.name_suffix(5));
        let mut c = container(&name);
        // The host's namespaces and its root at /host, as the profile grants them.
        let (host_namespaces, host_root) = match profile.as_str() {
            "legacy" | "general" | "sysadmin" => (true, true),
            "netadmin" => (true, false),
            _ => (false, false),
        };
        if host_root {
            c["volumeMounts"] = json!([{"name": "host-root", "mountPath": "/host"}]);
        }
        secure(&profile, Style::Node, &mut c);
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod_name, "namespace": ns, "labels": {"app.kubernetes.io/managed-by": "kubectl-debug"}},
            "spec": {"containers": [c], "nodeName": node, "restartPolicy": "Never", "tolerations": [{"operator": "Exists"}]}});
        if host_namespaces {
            for k in ["hostIPC", "hostNetwork", "hostPID"] {
                pod["spec"][k] = json!(true);
            }
        }
        if host_root {
            pod["spec"]["volumes"] = json!([{"name": "host-root", "hostPath": {"path": "/"}}]);
        }
        if !quiet {
            out.push(format!("Creating debugging pod {pod_name} with container {name} on node {node}."));
        }
        api.handle(Request::create(api::rid::POD, &ns, pod, creds.clone())).map_err(|s| {
            let mut o = out.clone();
            o.push(s.kubectl_message(None, ""));
            o
        })?;
        return Ok((out, attach(&pod_name, &name, false)));
    }
    let pod_name = target.strip_prefix("pod/").or_else(|| target.strip_prefix("pods/")).unwrap_or(&target).to_string();
    let pod = fetch(api, creds, api::rid::POD, &ns, &pod_name).map_err(|e| {
        let mut o = out.clone();
        o.push(e);
        o
    })?;
    let pod = (*pod).clone();
    let taken = |p: &Value, n: &str| {
        ["initContainers", "containers", "ephemeralContainers"].iter().any(|l| api::get_array(p, &["spec", l]).iter().any(|c| get_str(c, &["name"]) == Some(n)))
    };
    let mut pick_name = |p: &Value, out: &mut Vec<String>| -> String {
        if let Some(n) = f.get("--container").filter(|n| !n.is_empty()) {
            return n.to_string();
        }
        let name = loop {
            let n = format!("debugger-{}", api.client_rng.name_suffix(5));
            if !taken(p, &n) {
                break n;
            }
        };
        if !quiet {
            out.push(format!("Defaulting debug container name to {name}."));
        }
        name
    };
    if let Some(copy) = copy_to {
        // A copy: name, namespace, labels and annotations kept (the legacy profile drops
        // the labels, so no controller or Service picks it); no ephemeral containers; off
        // the node unless --same-node.
        let mut spec = pod.get("spec").cloned().unwrap_or(json!({}));
        if let Some(m) = spec.as_object_mut() {
            m.remove("ephemeralContainers");
            if !switch(&f, "--same-node") {
                m.remove("nodeName");
            }
            if f.get("--share-processes").is_some() {
                m.insert("shareProcessNamespace", json!(switch(&f, "--share-processes")));
            }
        }
        let mut meta = json!({"name": copy, "namespace": ns});
        if profile != "legacy" {
            if spec.get("shareProcessNamespace").is_none_or(Value::is_null) {
                api::set(&mut spec, &["shareProcessNamespace"], json!(true));
            }
            if let Some(m) = spec.as_object_mut() {
                m.remove("initContainers");
            }
            for c in spec.get_mut("containers").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(cm) = c.as_object_mut() {
                    for p in ["livenessProbe", "readinessProbe", "startupProbe"] {
                        cm.remove(p);
                    }
                }
            }
        } else if let Some(a) = pod.get("metadata").and_then(|m| m.get("annotations")) {
            meta["annotations"] = a.clone();
        }
        let mut copied = json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec});
        for pair in f.get("--set-image").unwrap_or("").split(',').filter(|p| !p.is_empty()) {
            let Some((n, img)) = pair.split_once('=') else { return Err(vec![format!("error: invalid image specification: {pair}")]) };
            for c in copied["spec"].get_mut("containers").and_then(Value::as_array_mut).into_iter().flatten() {
                if n == "*" || get_str(c, &["name"]) == Some(n) {
                    c["image"] = json!(img);
                }
            }
        }
        let mut debug_name = None;
        if image.is_some() || !command.is_empty() || f.get("--container").is_some() {
            let name = pick_name(&copied, &mut out);
            let list = copied["spec"].get_mut("containers").and_then(Value::as_array_mut);
            let Some(list) = list else { return Err(vec!["error: the pod has no containers".into()]) };
            let existing = list.iter_mut().find(|c| get_str(c, &["name"]) == Some(name.as_str()));
            match existing {
                Some(c) => {
                    if let Some(i) = &image {
                        c["image"] = json!(i);
                    }
                    if !command.is_empty() {
                        c["command"] = json!(command);
                        if let Some(m) = c.as_object_mut() {
                            m.remove("args");
                        }
                    }
                    c["stdin"] = json!(stdin);
                    c["tty"] = json!(tty);
                }
                None => list.push(container(&name)),
            }
            if let Some(c) = list.iter_mut().find(|c| get_str(c, &["name"]) == Some(name.as_str())) {
                secure(&profile, Style::Copy, c);
            }
            debug_name = Some(name);
        } else if f.get("--set-image").is_none() {
            return Err(usage("you must specify --image, --set-image or command arguments."));
        }
        api.handle(Request::create(api::rid::POD, &ns, copied, creds.clone())).map_err(|s| {
            let mut o = out.clone();
            o.push(s.kubectl_message(None, ""));
            o
        })?;
        if switch(&f, "--replace") {
            let mut req = Request::delete(api::rid::POD, &ns, &pod_name, creds.clone());
            req.body = Some(json!({"gracePeriodSeconds": 0}));
            let _ = api.handle(req);
        }
        return Ok((out, debug_name.and_then(|n| attach(&copy, &n, false))));
    }
    // An ephemeral container in the running pod.
    if let Some(t) = &target_container {
        if !quiet {
            out.push(format!("Targeting container {t:?}. If you don't see processes from this container it may be because the container runtime doesn't support this feature."));
        }
    }
    let name = pick_name(&pod, &mut out);
    let mut c = container(&name);
    if let Some(t) = &target_container {
        c["targetContainerName"] = json!(t);
    }
    secure(&profile, Style::Ephemeral, &mut c);
    let mut modified = pod.clone();
    let list = api::entry(&mut modified, &["spec"]).entry("ephemeralContainers").or_insert_with(|| json!([]));
    if let Some(l) = list.as_array_mut() {
        l.push(c);
    }
    let patch = edit::two_way(&pod, &modified, "");
    let req = Request::patch(api::rid::POD, &ns, &pod_name, PatchType::Strategic, patch, creds.clone()).with_sub("ephemeralcontainers");
    if let Err(s) = api.handle(req) {
        out.push(s.kubectl_message(None, ""));
        return Err(out);
    }
    Ok((out, attach(&pod_name, &name, true)))
}

/// `--profile`'s values (`k8s.io/kubectl/pkg/cmd/debug/profiles.go`).
const PROFILES: &[&str] = &["legacy", "general", "baseline", "restricted", "netadmin", "sysadmin"];

/// How kubectl debugs: an ephemeral container, a copy of the pod, or a pod on a node.
#[derive(Clone, Copy, PartialEq)]
enum Style {
    Ephemeral,
    Copy,
    Node,
}

/// The security context a profile gives the debug container (`Apply`): `general` adds
/// SYS_PTRACE (on a node it clears the context instead); `baseline` clears it;
/// `restricted` clears it, then runs as non-root with every capability dropped, no
/// privilege escalation and the runtime's seccomp profile; `netadmin` adds NET_ADMIN and
/// NET_RAW; `sysadmin` makes it privileged; `legacy` leaves it.
fn secure(profile: &str, style: Style, c: &mut Value) {
    let add = |c: &mut Value, cap: &str| {
        let sc = api::entry(c, &["securityContext", "capabilities"]);
        let list = sc.entry("add").or_insert_with(|| json!([]));
        if let Some(l) = list.as_array_mut() {
            l.push(json!(cap));
        }
    };
    let clear = |c: &mut Value| {
        if let Some(m) = c.as_object_mut() {
            m.remove("securityContext");
        }
    };
    match profile {
        "general" if style == Style::Node => clear(c),
        "general" => add(c, "SYS_PTRACE"),
        "baseline" => clear(c),
        "restricted" => {
            clear(c);
            c["securityContext"] = json!({
                "runAsNonRoot": true,
                "capabilities": {"drop": ["ALL"]},
                "allowPrivilegeEscalation": false,
                "seccompProfile": {"type": "RuntimeDefault"},
            });
        }
        "netadmin" => {
            add(c, "NET_ADMIN");
            add(c, "NET_RAW");
        }
        "sysadmin" => api::set(c, &["securityContext", "privileged"], json!(true)),
        _ => {}
    }
}
