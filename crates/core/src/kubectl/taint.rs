//! `kubectl taint nodes` (`k8s.io/kubectl/pkg/cmd/taint`).

use super::*;

/// `kubectl taint nodes NAME KEY[=VALUE]:EFFECT[-]...`.
pub(super) fn taint(api: &mut ApiServer, creds: &Credentials, f: &Flags) -> Vec<String> {
    let p = &f.positional;
    let (names, specs): (Vec<&String>, Vec<&String>) = match p.first().map(String::as_str) {
        Some(t) if resource_for_name(t) == Some(crate::foundation::api::rid::NODE) => p[1..].iter().partition(|a| !a.contains(':') && !a.ends_with('-')),
        Some(t) if t.starts_with("node/") || t.starts_with("nodes/") => p.iter().partition(|a| !a.contains(':') && !a.ends_with('-')),
        _ => return vec!["error: at least one taint update is required (kubectl taint nodes NAME KEY=VALUE:EFFECT)".into()],
    };
    if specs.is_empty() {
        return vec!["error: at least one taint update is required".into()];
    }
    let mut out = Vec::new();
    for n in names {
        let n = n.rsplit('/').next().unwrap_or(n);
        let node = match api.handle(Request::new(Verb::Get, crate::foundation::api::rid::NODE, "", n, creds.clone())) {
            Ok(o) => o,
            Err(s) => {
                out.push(s.kubectl_message(None, ""));
                continue;
            }
        };
        let mut taints: Vec<Value> = api::get_array(&node, &["spec", "taints"]).to_vec();
        let mut removed = false;
        let mut added = false;
        for spec in &specs {
            if let Some(rm) = spec.strip_suffix('-') {
                let (key, effect) = rm.split_once(':').map_or((rm, None), |(k, e)| (k, Some(e)));
                let before = taints.len();
                taints.retain(|t| !(get_str(t, &["key"]) == Some(key) && effect.is_none_or(|e| get_str(t, &["effect"]) == Some(e))));
                if taints.len() == before {
                    out.push(format!("error: taint {rm:?} not found"));
                    return out;
                }
                removed = true;
            } else {
                let Some((kv, effect)) = spec.split_once(':') else {
                    return vec![format!("error: invalid taint spec: {spec}")];
                };
                if !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
                    return vec![format!("error: invalid taint effect: {effect}, unsupported taint effect")];
                }
                let (key, value) = kv.split_once('=').map_or((kv, None), |(k, v)| (k, Some(v)));
                if taints.iter().any(|t| get_str(t, &["key"]) == Some(key) && get_str(t, &["effect"]) == Some(effect)) && f.get("--overwrite").is_none() {
                    return vec![format!("error: node {n} already has {key} taint(s) with same effect(s) and --overwrite is false")];
                }
                taints.retain(|t| !(get_str(t, &["key"]) == Some(key) && get_str(t, &["effect"]) == Some(effect)));
                let mut t = json!({"key": key, "effect": effect});
                if let Some(v) = value {
                    t["value"] = json!(v);
                }
                taints.push(t);
                added = true;
            }
        }
        let patch = json!({"spec": {"taints": taints}});
        out.push(match api.handle(Request::patch(crate::foundation::api::rid::NODE, "", n, PatchType::Merge, patch, creds.clone())) {
            Ok(_) if added && removed => format!("node/{n} modified"),
            Ok(_) if removed => format!("node/{n} untainted"),
            Ok(_) => format!("node/{n} tainted"),
            Err(s) => s.kubectl_message(None, ""),
        });
    }
    out
}
