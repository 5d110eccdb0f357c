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

/// Objects by resource and name, and words.
type Named = (Vec<(ResourceId, String)>, Vec<String>);

/// The objects a `set SUBCOMMAND` line names, and its other words.
fn set_targets(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str, is_change: impl Fn(&str) -> bool) -> Result<Named, String> {
    let (changes, objs): (Vec<&String>, Vec<&String>) = f.positional[1..].iter().partition(|a| is_change(a));
    let rest = Flags { positional: objs.into_iter().cloned().collect(), ..f.clone() };
    if rest.positional.is_empty() {
        return Err("error: You must provide one or more resources by argument or filename.".into());
    }
    Ok((targets(api, creds, &rest, ns)?, changes.into_iter().cloned().collect()))
}

/// `kubectl set env TYPE/NAME KEY=VALUE... KEY-... [-c CONTAINER] [--list]`: a strategic
/// merge patch of the pod template's containers' `env` (`set_env.go`).
pub(super) fn set_env(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let is_change = |a: &str| a.contains('=') || (a.ends_with('-') && !a.contains('/'));
    let (ts, mut changes) = match set_targets(api, creds, f, ns, is_change) {
        Ok(t) => t,
        Err(e) => return vec![e],
    };
    changes.extend(f.values.iter().filter(|(k, _)| k == "--env").map(|(_, v)| v.clone()));
    let list = f.get("--list") == Some("true");
    let mut out = Vec::new();
    for (r, name) in ts {
        let live = match fetch(api, creds, r, ns, &name) {
            Ok(o) => o,
            Err(e) => {
                out.push(e);
                continue;
            }
        };
        if list {
            for c in chosen_containers(&live, f) {
                out.push(format!("# {} {name}, container {}", RESOURCES[r].kind, get_str(c, &["name"]).unwrap_or("")));
                for e in api::get_array(c, &["env"]) {
                    let n = get_str(e, &["name"]).unwrap_or("");
                    let from = |k: &str, p: &[&str]| get_str(e, &[&["valueFrom", k][..], p].concat()).map(str::to_string);
                    out.push(if let Some(v) = get_str(e, &["value"]) {
                        format!("{n}={v}")
                    } else if let (Some(cm), Some(key)) = (from("configMapKeyRef", &["name"]), from("configMapKeyRef", &["key"])) {
                        format!("# {n} from configmap {cm}, key {key}")
                    } else if let (Some(s), Some(key)) = (from("secretKeyRef", &["name"]), from("secretKeyRef", &["key"])) {
                        format!("# {n} from secret {s}, key {key}")
                    } else if let Some(p) = from("fieldRef", &["fieldPath"]) {
                        format!("# {n} from field path {p}")
                    } else if let Some(res) = from("resourceFieldRef", &["resource"]) {
                        format!("# {n} from resource {res}")
                    } else {
                        format!("{n}=")
                    });
                }
            }
            continue;
        }
        let mut containers = Vec::new();
        for c in chosen_containers(&live, f) {
            let mut env: Vec<Value> = Vec::new();
            for ch in &changes {
                match ch.split_once('=') {
                    // A variable that already has the value is no change (and no write).
                    Some((k, v))
                        if api::get_array(c, &["env"])
                            .iter()
                            .any(|e| get_str(e, &["name"]) == Some(k) && get_str(e, &["value"]) == Some(v) && e.get("valueFrom").is_none()) => {}
                    Some((k, v)) => env.push(json!({"name": k, "value": v})),
                    None => {
                        let k = ch.trim_end_matches('-');
                        if api::get_array(c, &["env"]).iter().any(|e| get_str(e, &["name"]) == Some(k)) {
                            env.push(json!({"name": k, "$patch": "delete"}));
                        }
                    }
                }
            }
            if !env.is_empty() {
                containers.push(json!({"name": get_str(c, &["name"]).unwrap_or(""), "env": env}));
            }
        }
        if containers.is_empty() {
            continue;
        }
        let patch = json!({"spec": {"template": {"spec": {"containers": containers}}}});
        let mut req = Request::patch(r, ns, &name, PatchType::Strategic, patch, creds.clone());
        req.field_manager = "kubectl-set".into();
        out.push(match api.handle(req) {
            Ok(_) => format!("{}/{name} env updated", kind_prefix(r)),
            Err(s) => s.kubectl_message(None, ""),
        });
    }
    out
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
    let (limits, requests) = match (parse("--limits"), parse("--requests")) {
        (Ok(l), Ok(r)) => (l, r),
        (Err(e), _) | (_, Err(e)) => return vec![e],
    };
    if limits.is_empty() && requests.is_empty() {
        return vec!["error: you must specify an update to requests or limits (in the form of --requests/--limits)".into()];
    }
    let (ts, _) = match set_targets(api, creds, f, ns, |_| false) {
        Ok(t) => t,
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
        let mut resources = Map::new();
        if !limits.is_empty() {
            resources.insert("limits", Value::Object(limits.clone()));
        }
        if !requests.is_empty() {
            resources.insert("requests", Value::Object(requests.clone()));
        }
        let containers: Vec<Value> =
            chosen_containers(&live, f).iter().map(|c| json!({"name": get_str(c, &["name"]).unwrap_or(""), "resources": resources.clone()})).collect();
        if containers.is_empty() {
            out.push(format!("error: unable to find container named {}", f.get("--containers").unwrap_or("*")));
            continue;
        }
        let patch = json!({"spec": {"template": {"spec": {"containers": containers}}}});
        let mut req = Request::patch(r, ns, &name, PatchType::Strategic, patch, creds.clone());
        req.field_manager = "kubectl-set".into();
        out.push(match api.handle(req) {
            Ok(_) => format!("{}/{name} resource requirements updated", kind_prefix(r)),
            Err(s) => s.kubectl_message(None, ""),
        });
    }
    out
}
