//! `kubectl create -f` and `kubectl create TYPE NAME`, building objects as kubectl's generators
//! do (`k8s.io/kubectl/pkg/cmd/create`).

use super::*;

/// `kubectl create deployment|namespace|configmap NAME ...`, built as kubectl's generators
/// build them (`k8s.io/kubectl/pkg/cmd/create`).
/// `kubectl create -f FILE`: each object created as written.
pub(super) fn create_from(api: &mut ApiServer, creds: &Credentials, text: &str, file: &str, ns: &Namespace) -> Vec<String> {
    each_document_in(text, file, ns, |obj| {
        let Some(r) = resource_for_kind(get_str(&obj, &["apiVersion"]).unwrap_or(""), get_str(&obj, &["kind"]).unwrap_or("")) else {
            return vec![format!("error: resource mapping not found for name: {:?} from {file:?}", api::name(&obj))];
        };
        let ns = if RESOURCES[r].namespaced { Some(api::namespace(&obj)).filter(|n| !n.is_empty()).unwrap_or("default").to_string() } else { String::new() };
        match api.handle(Request::create(r, &ns, obj, creds.clone())) {
            Ok(o) => vec![with_warnings(api, format!("{}/{} created", kind_prefix(r), api::name(&o)))],
            Err(s) => vec![s.kubectl_message(Some(file), "creating")],
        }
    })
}

/// Standard base64 with padding, as Secrets carry their data.
pub(super) fn base64_std(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// `--from-literal=k=v` pairs.
pub(super) fn literals(f: &Flags) -> Result<Vec<(String, String)>, String> {
    f.values
        .iter()
        .filter(|(n, _)| n == "--from-literal")
        .map(|(_, lit)| {
            lit.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())).ok_or_else(|| format!("error: invalid literal source {lit}, expected key=value"))
        })
        .collect()
}

/// `--verb=get,list --resource=pods,deployments.apps` as RBAC rules, one per API group.
pub(super) fn role_rules(f: &Flags) -> Result<Vec<Value>, String> {
    let all = |k: &str| f.values.iter().filter(|(n, _)| n == k).flat_map(|(_, v)| v.split(',').map(str::to_string).collect::<Vec<_>>()).collect::<Vec<_>>();
    let verbs = all("--verb");
    if verbs.is_empty() {
        return Err("error: at least one verb must be specified".into());
    }
    let resources = all("--resource");
    if resources.is_empty() {
        return Err("error: at least one resource must be specified".into());
    }
    let mut rules: Vec<(String, Vec<String>)> = Vec::new();
    for r in resources {
        let (plural, group) = match resource_for_name(r.split('.').next().unwrap_or(&r)) {
            Some(id) if !r.contains('.') => (RESOURCES[id].plural.to_string(), RESOURCES[id].group.to_string()),
            _ => match r.split_once('.') {
                Some((p, g)) => (p.to_string(), g.to_string()),
                None => return Err(format!("error: resource {r:?} not found")),
            },
        };
        match rules.iter_mut().find(|(g, _)| *g == group) {
            Some((_, rs)) => rs.push(plural),
            None => rules.push((group, vec![plural])),
        }
    }
    Ok(rules.into_iter().map(|(g, rs)| json!({"apiGroups": [g], "resources": rs, "verbs": verbs.clone()})).collect())
}

/// Whether a `--rule` has kubectl's form, `host/path=svcname:svcport[,tls[=secret]]`
/// (`create_ingress.go`'s `ruleRegex`: host of word characters, `*`, `-`, `.`; a path
/// without `,` or `=`; service name and port of word characters and `-`).
fn ingress_rule_ok(rule: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let Some((host, rest)) = rule.split_once('/') else { return false };
    let Some((path, rest)) = rest.split_once('=') else { return false };
    let Some((svc, rest)) = rest.split_once(':') else { return false };
    let (port, tls) = match rest.split_once(',') {
        Some((p, t)) => (p, Some(t)),
        None => (rest, None),
    };
    let tls_ok = tls.is_none_or(|t| t.strip_prefix("tls").is_some_and(|t| t.strip_prefix('=').unwrap_or(t).chars().all(word)));
    host.chars().all(|c| word(c) || c == '*' || c == '.')
        && !path.contains([',', '\n'])
        && !svc.is_empty()
        && svc.chars().all(word)
        && !port.is_empty()
        && port.chars().all(word)
        && tls_ok
}

/// `kubectl create ingress NAME --rule=... [--default-backend=SVC:PORT] [--class=C]
/// [--annotation=K=V]`, built as `create_ingress.go` builds it: a rule's path ending in `*`
/// is a Prefix (else Exact), rules of one host share its paths, `,tls[=secret]` adds the
/// host to that secret's TLS entry.
fn ingress(name: &str, ns: &str, rules: &[String], default_backend: Option<&str>, class: Option<&str>, annotations: &[String]) -> Result<Value, String> {
    if default_backend.is_none_or(str::is_empty) && rules.is_empty() {
        return Err("not enough information provided: every ingress has to either specify a default-backend (which catches all traffic) or a list of rules (which catch specific paths)".into());
    }
    if let Some(r) = rules.iter().find(|r| !ingress_rule_ok(r)) {
        return Err(format!("rule {r} is invalid and should be in format host/path=svcname:svcport[,tls[=secret]]"));
    }
    if let Some(a) = annotations.iter().find(|a| !a.contains('=')) {
        return Err(format!("annotation {a} is invalid and should be in format key=[value]"));
    }
    if default_backend.is_some_and(|d| !d.is_empty() && d.split(':').count() != 2) {
        return Err("default-backend should be in format servicename:serviceport".into());
    }
    // intstr.Parse: a number is a port number, anything else a port name.
    let backend = |svc: &str| {
        let (name, port) = svc.split_once(':').unwrap_or((svc, ""));
        let port = match port.parse::<i32>() {
            Ok(n) => json!({"number": n}),
            Err(_) => json!({"name": port}),
        };
        json!({"service": {"name": name, "port": port}})
    };
    let mut spec = Map::new();
    if let Some(c) = class.filter(|c| !c.is_empty()) {
        spec.insert("ingressClassName", json!(c));
    }
    if let Some(d) = default_backend.filter(|d| !d.is_empty()) {
        spec.insert("defaultBackend", backend(d));
    }
    let mut tls: Vec<(String, Vec<String>)> = Vec::new();
    let mut tls_hosts: Vec<String> = Vec::new();
    let mut host_rules: Vec<(String, Vec<Value>)> = Vec::new();
    for rule in rules {
        let host = rule.split_once('/').map_or("", |(h, _)| h).to_string();
        if let Some((_, t)) = rule.split_once(',') {
            let secret = t.split_once('=').map_or("", |(_, s)| s).to_string();
            if !tls_hosts.contains(&host) {
                match tls.iter_mut().find(|(s, _)| *s == secret) {
                    Some((_, hosts)) => hosts.push(host.clone()),
                    None if !host.is_empty() || !secret.is_empty() => tls.push((secret, if host.is_empty() { vec![] } else { vec![host.clone()] })),
                    None => {}
                }
                tls_hosts.push(host.clone());
            }
        }
        let path_svc = rule.split(',').next().unwrap_or("").split_once('/').map_or("", |(_, p)| p);
        let (path, svc) = path_svc.split_once('=').unwrap_or((path_svc, ""));
        let mut path = format!("/{path}");
        let mut kind = "Exact";
        if path.ends_with('*') {
            path.pop();
            kind = "Prefix";
        }
        let entry = json!({"backend": backend(svc), "path": path, "pathType": kind});
        match host_rules.iter_mut().find(|(h, _)| *h == host) {
            Some((_, paths)) => paths.push(entry),
            None => host_rules.push((host, vec![entry])),
        }
    }
    if !tls.is_empty() {
        let entries: Vec<Value> = tls
            .into_iter()
            .map(|(secret, hosts)| {
                let mut e = Map::new();
                if !hosts.is_empty() {
                    e.insert("hosts", json!(hosts));
                }
                if !secret.is_empty() {
                    e.insert("secretName", json!(secret));
                }
                Value::Object(e)
            })
            .collect();
        spec.insert("tls", Value::Array(entries));
    }
    if !host_rules.is_empty() {
        let entries: Vec<Value> = host_rules
            .into_iter()
            .map(|(host, paths)| {
                let mut e = Map::new();
                if !host.is_empty() {
                    e.insert("host", json!(host));
                }
                e.insert("http", json!({"paths": paths}));
                Value::Object(e)
            })
            .collect();
        spec.insert("rules", Value::Array(entries));
    }
    let mut meta = json!({"name": name, "namespace": ns});
    if !annotations.is_empty() {
        let a: Map = annotations.iter().filter_map(|a| a.split_once('=')).map(|(k, v)| (k.to_string(), json!(v))).collect();
        meta["annotations"] = Value::Object(a);
    }
    Ok(json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta, "spec": Value::Object(spec)}))
}

/// `kubectl create TYPE NAME ...`, building the object as kubectl's generators do.
pub(super) fn create(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str, after_dashes: &[String]) -> Vec<String> {
    let supported = "deployment, namespace, configmap, secret generic, serviceaccount, service clusterip|nodeport|loadbalancer, ingress, job, cronjob, role, clusterrole, rolebinding, clusterrolebinding, poddisruptionbudget, priorityclass, quota and token";
    let Some(what) = f.positional.first() else {
        return vec![format!("error: kubeloop creates {supported} (kubectl create TYPE NAME ...); use the editor for anything else")];
    };
    if what == "token" {
        return token(api, creds, f, ns);
    }
    // `secret generic NAME`, `service clusterip NAME`: a sub-type comes first.
    let (sub, name) = match what.as_str() {
        "secret" | "service" | "svc" => (f.positional.get(1).map(String::as_str), f.positional.get(2)),
        _ => (None, f.positional.get(1)),
    };
    let Some(name) = name else { return vec!["error: exactly one NAME is required, got 0".into()] };
    let all = |k: &str| f.values.iter().filter(|(n, _)| n == k).map(|(_, v)| v.clone()).collect::<Vec<_>>();
    let kind = match (what.as_str(), sub) {
        ("secret", Some("generic")) => Some("Secret"),
        ("service" | "svc", Some("clusterip" | "nodeport" | "loadbalancer")) => Some("Service"),
        ("secret" | "service" | "svc", _) => None,
        ("pdb", _) => Some("PodDisruptionBudget"),
        ("pc", _) => Some("PriorityClass"),
        ("cj", _) => Some("CronJob"),
        _ => resource_for_name(what).map(|r| RESOURCES[r].kind),
    };
    let body = match kind {
        Some("Deployment") => {
            let images = all("--image");
            if images.is_empty() {
                return vec!["error: required flag(s) \"image\" not set".into()];
            }
            let port = f.get("--port").and_then(|p| p.parse::<i64>().ok());
            let containers: Vec<Value> = images
                .iter()
                .map(|img| {
                    // The container is named after the image: `registry/x/nginx:1.27` -> `nginx`.
                    let base = img.rsplit('/').next().unwrap_or(img);
                    let cname = base.split(['@', ':']).next().unwrap_or(base).to_string();
                    let mut c = json!({"name": cname, "image": img, "resources": {}});
                    if let Some(p) = port {
                        c["ports"] = json!([{"containerPort": p}]);
                    }
                    c
                })
                .collect();
            let replicas = f.get("--replicas").and_then(|r| r.parse::<i64>().ok()).unwrap_or(1);
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "strategy": {},
                    "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": containers}}}})
        }
        Some("Namespace") => json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
        Some("ConfigMap") => {
            let data: Map = match literals(f) {
                Ok(l) => l.into_iter().map(|(k, v)| (k, json!(v))).collect(),
                Err(e) => return vec![e],
            };
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": data})
        }
        Some("Secret") => {
            let data: Map = match literals(f) {
                Ok(l) => l.into_iter().map(|(k, v)| (k, json!(base64_std(v.as_bytes())))).collect(),
                Err(e) => return vec![e],
            };
            // Without --type the API server defaults it (Opaque).
            let mut v = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns}, "data": data});
            if let Some(ty) = f.get("--type") {
                v["type"] = json!(ty);
            }
            v
        }
        Some("ServiceAccount") => json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}}),
        Some("Service") => {
            let ty = match sub {
                Some("nodeport") => "NodePort",
                Some("loadbalancer") => "LoadBalancer",
                _ => "ClusterIP",
            };
            let mut ports = Vec::new();
            for spec in all("--tcp").iter().flat_map(|t| t.split(',').map(str::to_string).collect::<Vec<_>>()) {
                let (port, target) = spec.split_once(':').unwrap_or((&spec, &spec));
                let (Ok(p), Ok(t)) = (port.parse::<i64>(), target.parse::<i64>()) else {
                    return vec![format!("error: invalid port spec {spec:?}: expected port:targetPort")];
                };
                let mut entry = json!({"name": format!("{p}-{t}"), "port": p, "protocol": "TCP", "targetPort": t});
                if let (Some(np), "NodePort") = (f.get("--node-port").and_then(|n| n.parse::<i64>().ok()), ty) {
                    entry["nodePort"] = json!(np);
                }
                ports.push(entry);
            }
            if ports.is_empty() && ty != "ClusterIP" {
                return vec!["error: at least one tcp port specifier must be provided".into()];
            }
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
                "spec": {"ports": ports, "selector": {"app": name}, "type": ty}})
        }
        Some("Job") => {
            let Some(image) = f.get("--image") else { return vec!["error: required flag(s) \"image\" not set".into()] };
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
                "spec": {"template": {"metadata": {}, "spec": {"containers": [{"name": name, "image": image, "resources": {}}], "restartPolicy": "Never"}}}})
        }
        Some("CronJob") => {
            let Some(image) = f.get("--image") else { return vec!["error: required flag(s) \"image\", \"schedule\" not set".into()] };
            let Some(schedule) = f.get("--schedule") else { return vec!["error: required flag(s) \"schedule\" not set".into()] };
            let mut container = json!({"name": name, "image": image, "resources": {}});
            if !after_dashes.is_empty() {
                container["command"] = json!(after_dashes);
            }
            let restart = f.get("--restart").unwrap_or("OnFailure");
            json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name, "namespace": ns},
                "spec": {"jobTemplate": {"metadata": {"name": name}, "spec": {"template": {"metadata": {}, "spec": {"containers": [container], "restartPolicy": restart}}}}, "schedule": schedule}})
        }
        Some("PriorityClass") => {
            let value = match f.get("--value").map(str::parse::<i64>) {
                None => 0,
                Some(Ok(v)) => v,
                Some(Err(_)) => {
                    return vec![format!(
                        "error: invalid argument {:?} for \"--value\" flag: strconv.ParseInt: parsing {:?}: invalid syntax",
                        f.get("--value").unwrap_or(""),
                        f.get("--value").unwrap_or("")
                    )]
                }
            };
            let mut v = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value,
                "preemptionPolicy": f.get("--preemption-policy").unwrap_or("PreemptLowerPriority")});
            if f.get("--global-default") == Some("true") {
                v["globalDefault"] = json!(true);
            }
            if let Some(d) = f.get("--description").filter(|d| !d.is_empty()) {
                v["description"] = json!(d);
            }
            v
        }
        Some(k @ ("Role" | "ClusterRole")) => match role_rules(f) {
            Ok(rules) => {
                let mut v = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": k, "metadata": {"name": name}, "rules": rules});
                if k == "Role" {
                    v["metadata"]["namespace"] = json!(ns);
                }
                v
            }
            Err(e) => return vec![e],
        },
        Some(k @ ("RoleBinding" | "ClusterRoleBinding")) => {
            let role_ref = match (f.get("--role"), f.get("--clusterrole")) {
                (Some(r), None) if k == "RoleBinding" => json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": r}),
                (None, Some(r)) => json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": r}),
                _ => {
                    return vec![if k == "RoleBinding" {
                        "error: exactly one of clusterrole or role must be specified"
                    } else {
                        "error: required flag(s) \"clusterrole\" not set"
                    }
                    .into()]
                }
            };
            let mut subjects = Vec::new();
            for u in all("--user") {
                subjects.push(json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": u}));
            }
            for g in all("--group") {
                subjects.push(json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}));
            }
            for sa in all("--serviceaccount") {
                let Some((sns, sname)) = sa.split_once(':') else { return vec!["error: serviceaccount must be <namespace>:<name>".into()] };
                subjects.push(json!({"kind": "ServiceAccount", "name": sname, "namespace": sns}));
            }
            let mut v = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": k, "metadata": {"name": name}, "roleRef": role_ref, "subjects": subjects});
            if k == "RoleBinding" {
                v["metadata"]["namespace"] = json!(ns);
            }
            v
        }
        Some("PodDisruptionBudget") => {
            let Some(sel) = f.selector.as_deref() else { return vec!["error: a selector must be specified".into()] };
            if crate::foundation::labels::Selector::parse(sel).is_err() {
                return vec![format!("error: invalid selector {sel:?}")];
            }
            let match_labels: Map = sel.split(',').filter_map(|p| p.split_once('=')).map(|(k, v)| (k.trim().to_string(), json!(v.trim()))).collect();
            let bound = |v: &str| v.parse::<i64>().map(|n| json!(n)).unwrap_or_else(|_| json!(v));
            let mut spec = json!({"selector": {"matchLabels": match_labels}});
            match (f.get("--min-available"), f.get("--max-unavailable")) {
                (Some(m), None) => spec["minAvailable"] = bound(m),
                (None, Some(m)) => spec["maxUnavailable"] = bound(m),
                _ => return vec!["error: one of min-available or max-unavailable must be specified".into()],
            }
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": ns}, "spec": spec})
        }
        Some("Ingress") => match ingress(name, ns, &all("--rule"), f.get("--default-backend"), f.get("--class"), &all("--annotation")) {
            Ok(v) => v,
            Err(e) => return vec![format!("error: {e}")],
        },
        Some("ResourceQuota") => {
            let hard: Map = f.get("--hard").unwrap_or("").split(',').filter_map(|p| p.split_once('=')).map(|(k, v)| (k.to_string(), json!(v))).collect();
            json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name, "namespace": ns}, "spec": {"hard": hard}})
        }
        _ => return vec![format!("error: kubeloop does not support \"kubectl create {what}\" yet (it creates {supported})")],
    };
    let r = resource_for_kind(get_str(&body, &["apiVersion"]).unwrap_or(""), get_str(&body, &["kind"]).unwrap_or("")).unwrap_or(0);
    let ns = if RESOURCES[r].namespaced { ns } else { "" };
    let dry = match super::run::dry_run(f) {
        Ok(d) => d,
        Err(e) => return vec![e],
    };
    let output = f.get("--output");
    if dry == super::run::DryRun::Client {
        let mut body = body;
        // kubectl names the namespace of a generated object only when -n gave it.
        if f.namespace.is_none() {
            if let Some(m) = body.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("namespace");
            }
        }
        // The typed object's empty status, as kubectl prints it.
        match RESOURCES[r].kind {
            "Deployment" | "Job" | "CronJob" | "ResourceQuota" => body["status"] = json!({}),
            "Namespace" => {
                body["spec"] = json!({});
                body["status"] = json!({});
            }
            "Service" | "Ingress" => body["status"] = json!({"loadBalancer": {}}),
            "PodDisruptionBudget" => body["status"] = json!({"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0}),
            _ => {}
        }
        return super::run::print_made(r, &body, " created", dry, output).unwrap_or_else(|e| vec![e]);
    }
    let mut req = Request::create(r, ns, body, creds.clone());
    req.dry_run = dry == super::run::DryRun::Server;
    match api.handle(req) {
        Ok(o) => super::run::print_made(r, &o, " created", dry, output).unwrap_or_else(|e| vec![e]),
        Err(s) => vec![format!("error: failed to create {}: {}", RESOURCES[r].singular, s.message)],
    }
}

/// `kubectl replace -f FILE [--force]`: each object is written whole over the stored one
/// (a PUT; without a resourceVersion, unconditionally); `--force` deletes it and creates
/// it again.
pub(super) fn replace_from(api: &mut ApiServer, creds: &Credentials, text: &str, file: &str, ns: &Namespace, force: bool) -> Vec<String> {
    each_document_in(text, file, ns, |obj| {
        let Some(r) = resource_for_kind(get_str(&obj, &["apiVersion"]).unwrap_or(""), get_str(&obj, &["kind"]).unwrap_or("")) else {
            return vec![format!("error: resource mapping not found for name: {:?} from {file:?}", api::name(&obj))];
        };
        let ns = if RESOURCES[r].namespaced { api::namespace(&obj).to_string() } else { String::new() };
        let name = api::name(&obj).to_string();
        let mut out = Vec::new();
        if force {
            match api.handle(Request::new(Verb::Delete, r, &ns, &name, creds.clone())) {
                Ok(_) => out.push(format!("{} {name:?} deleted", kind_prefix(r))),
                Err(s) if s.code == 404 => {}
                Err(s) => return vec![s.kubectl_message(Some(file), "deleting")],
            }
            let mut fresh = obj;
            if let Some(m) = fresh.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("resourceVersion");
                m.remove("uid");
            }
            match api.handle(Request::create(r, &ns, fresh, creds.clone())) {
                Ok(o) => out.push(with_warnings(api, format!("{}/{} replaced", kind_prefix(r), api::name(&o)))),
                Err(s) => out.push(s.kubectl_message(Some(file), "creating")),
            }
            return out;
        }
        match api.handle(Request::update(r, &ns, &name, obj, creds.clone())) {
            Ok(o) => vec![with_warnings(api, format!("{}/{} replaced", kind_prefix(r), api::name(&o)))],
            Err(s) => vec![s.kubectl_message(Some(file), "replacing")],
        }
    })
}

/// `kubectl create token SERVICE_ACCOUNT` (`k8s.io/kubectl/pkg/cmd/create/create_token.go`):
/// a TokenRequest to the account's `token` subresource; prints the token (or, with -o, the
/// TokenRequest the server answered).
fn token(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let name = match &f.positional[1..] {
        [name] => name,
        other => {
            return vec![format!("error: exactly one NAME is required, got {}", other.len()), "See 'kubectl create token -h' for help and examples".into()]
        }
    };
    let all = |k: &str| f.values.iter().filter(|(n, _)| n == k).map(|(_, v)| v.clone()).collect::<Vec<_>>();
    let audiences = all("--audience");
    let duration = f.get("--duration").unwrap_or("0");
    let seconds = match go_duration_ms(duration).map(|ms| if ms % 1000 == 0 { Ok(ms / 1000) } else { Err(()) }) {
        Ok(s) => s,
        Err(e) => {
            return vec![format!("error: invalid argument {duration:?} for \"--duration\" flag: {e}"), "See 'kubectl create token --help' for usage.".into()]
        }
    };
    let (kind, bound, uid) =
        (f.get("--bound-object-kind").unwrap_or(""), f.get("--bound-object-name").unwrap_or(""), f.get("--bound-object-uid").unwrap_or(""));
    let problem = match seconds {
        Err(()) => Some("--duration cannot be expressed in units less than seconds"),
        Ok(s) if s < 0 => Some("--duration must be greater than or equal to 0"),
        _ if audiences.iter().any(String::is_empty) => Some("--audience must not be an empty string"),
        _ if kind.is_empty() && !bound.is_empty() => Some("--bound-object-name can only be set if --bound-object-kind is provided"),
        _ if kind.is_empty() && !uid.is_empty() => Some("--bound-object-uid can only be set if --bound-object-kind is provided"),
        _ if !kind.is_empty() && !matches!(kind, "Node" | "Pod" | "Secret") => Some("supported --bound-object-kind values are Node, Pod, Secret"),
        _ if !kind.is_empty() && bound.is_empty() => Some("--bound-object-name is required if --bound-object-kind is provided"),
        _ => None,
    };
    if let Some(p) = problem {
        return vec![format!("error: {p}")];
    }
    let mut spec = json!({"audiences": audiences});
    if let Ok(s @ 1..) = seconds {
        spec["expirationSeconds"] = json!(s);
    }
    if !kind.is_empty() {
        spec["boundObjectRef"] = json!({"kind": kind, "apiVersion": "v1", "name": bound, "uid": uid});
    }
    let body = json!({"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1", "metadata": {"creationTimestamp": null}, "spec": spec, "status": {"token": "", "expirationTimestamp": null}});
    let mut req = Request::create(crate::foundation::api::rid::SERVICEACCOUNT, ns, body, creds.clone()).with_sub("token");
    req.name = name.clone();
    let out = match api.handle(req) {
        Ok(o) => o,
        Err(s) => return vec![format!("error: failed to create token: {}", s.message)],
    };
    match f.get("--output").unwrap_or("") {
        "" => vec![get_str(&out, &["status", "token"]).unwrap_or("").to_string()],
        "name" => vec![format!("tokenrequest.authentication.k8s.io/{name}")],
        "json" => {
            use super::auth::Typed::{O, V};
            let at = |path: &[&str]| V(crate::foundation::api::get(&out, path).cloned().unwrap_or(Value::Null));
            let mut spec = vec![("audiences", at(&["spec", "audiences"])), ("expirationSeconds", at(&["spec", "expirationSeconds"]))];
            spec.push(("boundObjectRef", at(&["spec", "boundObjectRef"])));
            vec![super::auth::typed_json(&O(vec![
                ("kind", at(&["kind"])),
                ("apiVersion", at(&["apiVersion"])),
                (
                    "metadata",
                    O(vec![("name", at(&["metadata", "name"])), ("namespace", at(&["metadata", "namespace"])), ("creationTimestamp", V(Value::Null))]),
                ),
                ("spec", O(spec)),
                ("status", O(vec![("token", at(&["status", "token"])), ("expirationTimestamp", at(&["status", "expirationTimestamp"]))])),
            ]))]
        }
        o => print_review(&out, o),
    }
}

/// Go's `time.ParseDuration` as pflag reads a duration flag, in milliseconds (what kubectl
/// takes finer is not simulated); Err is Go's message.
pub(super) fn go_duration_ms(s: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {s:?}");
    let (negative, rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut nanos: f64 = 0.0;
    let mut rest = rest;
    while !rest.is_empty() {
        let n = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let num: f64 = rest[..n].parse().map_err(|_| invalid())?;
        rest = &rest[n..];
        let u = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let unit = match &rest[..u] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "" => return Err(format!("time: missing unit in duration {s:?}")),
            other => return Err(format!("time: unknown unit {other:?} in duration {s:?}")),
        };
        nanos += num * unit;
        rest = &rest[u..];
    }
    let ms = (nanos / 1e6).round() as i64;
    Ok(if negative { -ms } else { ms })
}
/// A TokenRequest or SelfSubjectReview printed with `-o yaml|json`, or kubectl's error for
/// a format its printers lack (`-o name` is the caller's).
pub(super) fn print_review(obj: &Value, output: &str) -> Vec<String> {
    match output {
        "yaml" => vec![crate::kubectl::goyaml::to_yaml(obj).trim_end().to_string()],
        "json" => vec![super::get::json_indent4(obj)],
        o => vec![format!(
            "error: unable to match a printer suitable for the output format \"{o}\", allowed formats are: go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,yaml"
        )],
    }
}
