//! `kubectl set image|env|resources|serviceaccount|subject|selector`
//! (`k8s.io/kubectl/pkg/cmd/set`).

use super::*;

/// `kubectl set image TYPE/NAME CONTAINER=IMAGE...`: a strategic merge patch of the pod
/// template's containers.
pub(super) fn set_image(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let (pairs, objs): (Vec<&String>, Vec<&String>) = f.positional[1..].iter().partition(|a| a.contains('='));
    if pairs.is_empty() || objs.is_empty() {
        return vec!["error: at least one image update is required".into()];
    }
    let rest = Flags { positional: objs.into_iter().cloned().collect(), ..f.clone() };
    let ts = match targets(api, creds, &rest, ns) {
        Ok(ts) => ts,
        Err(e) => return vec![e],
    };
    let mut out = Vec::new();
    for (r, name) in ts {
        let live = match fetch(api, creds, r, ns, &name) {
            Ok(o) => o,
            Err(e) => {
                out.push(e);
                continue;
            }
        };
        let names: Vec<&str> = api::get_array(&live, &["spec", "template", "spec", "containers"]).iter().filter_map(|c| get_str(c, &["name"])).collect();
        let mut containers = Vec::new();
        for p in &pairs {
            let (c, image) = p.split_once('=').unwrap_or((p.as_str(), ""));
            if c == "*" {
                containers.extend(names.iter().map(|n| json!({"name": n, "image": image})));
            } else if names.contains(&c) {
                containers.push(json!({"name": c, "image": image}));
            } else {
                out.push(format!("error: unable to find container named {c:?}"));
            }
        }
        if containers.is_empty() {
            continue;
        }
        let patch = json!({"spec": {"template": {"spec": {"containers": containers}}}});
        out.push(match api.handle(Request::patch(r, ns, &name, PatchType::Strategic, patch, creds.clone())) {
            Ok(_) => format!("{}/{name} image updated", kind_prefix(r)),
            Err(s) => s.kubectl_message(None, ""),
        });
    }
    out
}

/// The containers of a pod template that `-c`/`--containers` names (a glob of `*`).
fn chosen_containers<'a>(live: &'a Value, f: &Flags) -> Vec<&'a Value> {
    let pattern = f.get("--containers").unwrap_or("*");
    let matches = |n: &str| match pattern.split_once('*') {
        Some((pre, post)) => n.len() >= pre.len() + post.len() && n.starts_with(pre) && n.ends_with(post),
        None => n == pattern,
    };
    api::get_array(live, &["spec", "template", "spec", "containers"]).iter().filter(|c| matches(get_str(c, &["name"]).unwrap_or(""))).collect()
}

/// A strategic merge patch of a pod template's containers under `kubectl-set`: kubectl's
/// line for it (`deployment.apps/web env updated`) or the server's refusal.
fn patch_containers(api: &mut ApiServer, creds: &Credentials, target: (ResourceId, &str, &str), containers: Vec<Value>, what: &str) -> String {
    patch_set(api, creds, target, json!({"spec": {"template": {"spec": {"containers": containers}}}}), what)
}

/// A strategic merge patch under `kubectl-set`: kubectl's line for it or the server's refusal.
fn patch_set(api: &mut ApiServer, creds: &Credentials, (r, ns, name): (ResourceId, &str, &str), patch: Value, what: &str) -> String {
    let mut req = Request::patch(r, ns, name, PatchType::Strategic, patch, creds.clone());
    req.field_manager = "kubectl-set".into();
    match api.handle(req) {
        Ok(_) => format!("{}/{name} {what}", kind_prefix(r)),
        Err(s) => s.kubectl_message(None, ""),
    }
}

/// A `set SUBCOMMAND` line's changes (the words `is_change` picks), and the line without
/// them, whose words after the subcommand name the objects.
fn split_changes(f: &Flags, is_change: impl Fn(&str) -> bool) -> Result<(Vec<String>, Flags), String> {
    let (changes, objs): (Vec<&String>, Vec<&String>) = f.positional[1..].iter().partition(|a| is_change(a));
    if objs.is_empty() {
        return Err("error: You must provide one or more resources by argument or filename.".into());
    }
    let positional = std::iter::once(f.positional[0].clone()).chain(objs.into_iter().cloned()).collect();
    Ok((changes.into_iter().cloned().collect(), Flags { positional, ..f.clone() }))
}

/// One env line of `set env --list`.
fn env_line(e: &Value) -> String {
    let n = get_str(e, &["name"]).unwrap_or("");
    let from = |k: &str, p: &str| get_str(e, &["valueFrom", k, p]).map(str::to_string);
    if let Some(v) = get_str(e, &["value"]) {
        format!("{n}={v}")
    } else if let (Some(cm), Some(key)) = (from("configMapKeyRef", "name"), from("configMapKeyRef", "key")) {
        format!("# {n} from configmap {cm}, key {key}")
    } else if let (Some(s), Some(key)) = (from("secretKeyRef", "name"), from("secretKeyRef", "key")) {
        format!("# {n} from secret {s}, key {key}")
    } else if let Some(p) = from("fieldRef", "fieldPath") {
        format!("# {n} from field path {p}")
    } else if let Some(res) = from("resourceFieldRef", "resource") {
        format!("# {n} from resource {res}")
    } else {
        format!("{n}=")
    }
}

/// `kubectl set env TYPE/NAME KEY=VALUE... KEY-... [-c CONTAINER] [--list]`: a strategic
/// merge patch of the pod template's containers' `env` (`set_env.go`).
pub(super) fn set_env(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let (mut changes, objs) = match split_changes(f, |a| a.contains('=') || (a.ends_with('-') && !a.contains('/'))) {
        Ok(c) => c,
        Err(e) => return vec![e],
    };
    changes.extend(f.values.iter().filter(|(k, _)| k == "--env").map(|(_, v)| v.clone()));
    let list = f.get("--list") == Some("true");
    each_fetched(api, creds, &objs, ns, |api, r, name, live| {
        if list {
            let mut out = Vec::new();
            for c in chosen_containers(live, f) {
                out.push(format!("# {} {name}, container {}", RESOURCES[r].kind, get_str(c, &["name"]).unwrap_or("")));
                out.extend(api::get_array(c, &["env"]).iter().map(env_line));
            }
            return out;
        }
        let mut containers = Vec::new();
        for c in chosen_containers(live, f) {
            let has = |k: &str, v: Option<&str>| {
                api::get_array(c, &["env"])
                    .iter()
                    .any(|e| get_str(e, &["name"]) == Some(k) && (v.is_none() || (get_str(e, &["value"]) == v && e.get("valueFrom").is_none())))
            };
            let mut env: Vec<Value> = Vec::new();
            for ch in &changes {
                match ch.split_once('=') {
                    // A variable that already has the value is no change (and no write).
                    Some((k, v)) if has(k, Some(v)) => {}
                    Some((k, v)) => env.push(json!({"name": k, "value": v})),
                    None if has(ch.trim_end_matches('-'), None) => env.push(json!({"name": ch.trim_end_matches('-'), "$patch": "delete"})),
                    None => {}
                }
            }
            if !env.is_empty() {
                containers.push(json!({"name": get_str(c, &["name"]).unwrap_or(""), "env": env}));
            }
        }
        if containers.is_empty() {
            return vec![];
        }
        vec![patch_containers(api, creds, (r, ns, name), containers, "env updated")]
    })
}

/// `kubectl set resources TYPE/NAME [-c CONTAINER] --limits=cpu=200m,memory=512Mi
/// --requests=...`: the containers' resources, merged into what they had
/// (`set_resources.go`).
pub(super) fn set_resources(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let parse = |flag: &str| -> Result<Map, String> {
        let mut m = Map::new();
        for part in f.get(flag).unwrap_or("").split(',').filter(|p| !p.is_empty()) {
            let Some((k, v)) = part.split_once('=') else { return Err(format!("error: invalid argument syntax {part}, expected <resource>=<value>")) };
            m.insert(k, json!(v));
        }
        Ok(m)
    };
    let mut resources = Map::new();
    for (flag, key) in [("--limits", "limits"), ("--requests", "requests")] {
        match parse(flag) {
            Ok(m) if m.is_empty() => {}
            Ok(m) => {
                resources.insert(key, Value::Object(m));
            }
            Err(e) => return vec![e],
        }
    }
    if resources.is_empty() {
        return vec!["error: you must specify an update to requests or limits (in the form of --requests/--limits)".into()];
    }
    let objs = match split_changes(f, |_| false) {
        Ok((_, o)) => o,
        Err(e) => return vec![e],
    };
    each_fetched(api, creds, &objs, ns, |api, r, name, live| {
        let containers: Vec<Value> =
            chosen_containers(live, f).iter().map(|c| json!({"name": get_str(c, &["name"]).unwrap_or(""), "resources": resources.clone()})).collect();
        if containers.is_empty() {
            return vec![format!("error: unable to find container named {}", f.get("--containers").unwrap_or("*"))];
        }
        vec![patch_containers(api, creds, (r, ns, name), containers, "resource requirements updated")]
    })
}

/// The pod spec inside an object kubectl's `UpdatePodSpecForObjectFn` reaches, as a patch
/// that sets `fields` there: a pod's own, a CronJob's job template's, else the pod
/// template's. None for a kind without one.
fn pod_spec_patch(kind: &str, fields: Value) -> Option<Value> {
    Some(match kind {
        "Pod" => json!({"spec": fields}),
        "CronJob" => json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": fields}}}}}),
        "Deployment" | "ReplicaSet" | "ReplicationController" | "DaemonSet" | "StatefulSet" | "Job" => json!({"spec": {"template": {"spec": fields}}}),
        _ => return None,
    })
}

/// `kubectl set serviceaccount TYPE NAME SERVICE_ACCOUNT` (`set_serviceaccount.go`): the
/// pod spec's `serviceAccountName`.
pub(super) fn set_serviceaccount(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let Some(sa) = f.positional.last().filter(|_| f.positional.len() > 1).cloned() else {
        return vec!["error: serviceaccount is required".into()];
    };
    let objs = Flags { positional: f.positional[..f.positional.len() - 1].to_vec(), ..f.clone() };
    if objs.positional.len() < 2 {
        return vec!["error: You must provide one or more resources by argument or filename.".into()];
    }
    each_fetched(api, creds, &objs, ns, |api, r, name, _| match pod_spec_patch(RESOURCES[r].kind, json!({"serviceAccountName": sa})) {
        Some(patch) => vec![patch_set(api, creds, (r, ns, name), patch, "serviceaccount updated")],
        None => vec![format!("error: failed to patch ServiceAccountName {} {name:?} does not have a pod template", RESOURCES[r].kind)],
    })
}

/// `kubectl set subject (rolebinding|clusterrolebinding) NAME [--user=U] [--group=G]
/// [--serviceaccount=NS:NAME]` (`set_subject.go`): the subjects added, each once.
pub(super) fn set_subject(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let all = |k: &str| f.values.iter().filter(|(n, _)| n == k).flat_map(|(_, v)| v.split(',').map(str::to_string).collect::<Vec<_>>()).collect::<Vec<_>>();
    let (users, groups, sas) = (all("--user"), all("--group"), all("--serviceaccount"));
    if users.is_empty() && groups.is_empty() && sas.is_empty() {
        return vec!["error: you must specify at least one value of user, group or serviceaccount".into()];
    }
    let mut wanted: Vec<Value> = Vec::new();
    for u in &users {
        wanted.push(json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": u}));
    }
    for g in &groups {
        wanted.push(json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}));
    }
    for sa in &sas {
        match sa.split_once(':') {
            Some((n, name)) if !n.is_empty() && !name.is_empty() => wanted.push(json!({"kind": "ServiceAccount", "name": name, "namespace": n})),
            _ => return vec!["error: serviceaccount must be <namespace>:<name>".into()],
        }
    }
    each_fetched(api, creds, f, ns, |api, r, name, live| {
        if !matches!(RESOURCES[r].kind, "RoleBinding" | "ClusterRoleBinding") {
            return vec![format!("error: {}/{name} setting subjects is only supported for RoleBinding/ClusterRoleBinding", RESOURCES[r].plural)];
        }
        let mut subjects: Vec<Value> = api::get_array(live, &["subjects"]).to_vec();
        let before = subjects.len();
        for w in &wanted {
            if !subjects.contains(w) {
                subjects.push(w.clone());
            }
        }
        // Nothing new: no patch, and kubectl prints nothing.
        if subjects.len() == before {
            return vec![];
        }
        let ns = if RESOURCES[r].namespaced { ns } else { "" };
        vec![patch_set(api, creds, (r, ns, name), json!({"subjects": subjects}), "subjects updated")]
    })
}

/// `kubectl set selector TYPE NAME KEY=VALUE,...` (`set_selector.go`): a Service's
/// selector replaced by the one given.
pub(super) fn set_selector(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let Some(expr) = f.positional.last().filter(|_| f.positional.len() > 2).cloned() else {
        return vec!["error: one selector is required".into()];
    };
    let objs = Flags { positional: f.positional[..f.positional.len() - 1].to_vec(), ..f.clone() };
    if let Err(e) = sub_targets(api, creds, &objs, ns) {
        return vec![e];
    }
    let mut selector = Map::new();
    for part in expr.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('=') {
            Some((k, v)) if !k.is_empty() && !v.starts_with('=') => selector.insert(k.trim(), json!(v.trim())),
            _ => return vec![format!("error: {part:?} is not a selector of KEY=VALUE pairs (kubeloop sets a Service's selector, which has no expressions)")],
        };
    }
    each_fetched(api, creds, &objs, ns, |api, r, name, live| {
        if RESOURCES[r].kind != "Service" {
            return vec!["error: setting a selector is only supported for Services".into()];
        }
        // Keys the old selector had and the new one lacks are removed.
        let mut patch = selector.clone();
        for (k, _) in api::get(live, &["spec", "selector"]).and_then(Value::as_object).into_iter().flatten() {
            if !selector.contains_key(k) {
                patch.insert(k.to_string(), Value::Null);
            }
        }
        vec![patch_set(api, creds, (r, ns, name), json!({"spec": {"selector": patch}}), "selector updated")]
    })
}
