//! `kubectl set image|env|resources` (`k8s.io/kubectl/pkg/cmd/set`).

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
fn patch_containers(api: &mut ApiServer, creds: &Credentials, (r, ns, name): (ResourceId, &str, &str), containers: Vec<Value>, what: &str) -> String {
    let patch = json!({"spec": {"template": {"spec": {"containers": containers}}}});
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
