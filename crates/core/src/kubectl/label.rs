//! `kubectl label` and `kubectl annotate` (`k8s.io/kubectl/pkg/cmd/label`, `.../annotate`).

use super::*;

/// `kubectl label|annotate TYPE NAME... KEY=VALUE... KEY-... [--overwrite]`: a merge patch
/// of the object's labels or annotations.
pub(super) fn label(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str, verb: &str) -> Vec<String> {
    let field = if verb == "label" { "labels" } else { "annotations" };
    let overwrite = f.get("--overwrite") == Some("true");
    let (pairs, rest): (Vec<String>, Vec<String>) =
        f.positional.iter().cloned().partition(|p| p.contains('=') || (p.ends_with('-') && !p.contains('/') && f.positional.first() != Some(p)));
    let f2 =
        Flags { positional: rest, namespace: f.namespace.clone(), selector: f.selector.clone(), all_namespaces: f.all_namespaces, values: f.values.clone() };
    if pairs.is_empty() {
        return vec![format!("error: at least one {} update is required", if verb == "label" { "label" } else { "annotation" })];
    }
    match targets(api, creds, &f2, ns) {
        Err(e) => vec![e],
        Ok(ts) => {
            let mut lines = Vec::new();
            for (r, name) in ts {
                let target_ns = if RESOURCES[r].namespaced { ns } else { "" };
                let live = match api.handle(Request::new(Verb::Get, r, target_ns, &name, creds.clone())) {
                    Ok(o) => o,
                    Err(s) => {
                        lines.push(s.kubectl_message(None, ""));
                        continue;
                    }
                };
                let mut m = Map::new();
                let mut err = None;
                for p in &pairs {
                    if let Some((k, v)) = p.split_once('=') {
                        if let Some(cur) = api::get(&live, &["metadata", field, k]).and_then(Value::as_str) {
                            if cur != v && !overwrite {
                                err = Some(format!("error: '{k}' already has a value ({cur}), and --overwrite is false"));
                            }
                        }
                        m.insert(k.to_string(), json!(v));
                    } else if let Some(k) = p.strip_suffix('-') {
                        m.insert(k.to_string(), Value::Null);
                    }
                }
                if let Some(e) = err {
                    lines.push(e);
                    continue;
                }
                let before = api::resource_version(&live).to_string();
                match api.handle(Request::patch(r, target_ns, &name, PatchType::Merge, json!({"metadata": {field: m}}), creds.clone())) {
                    Ok(after) if api::resource_version(&after) == before => {
                        lines.push(format!("{}/{name} not {}", kind_prefix(r), if verb == "label" { "labeled" } else { "annotated" }))
                    }
                    Ok(_) => lines.push(format!("{}/{name} {}", kind_prefix(r), if verb == "label" { "labeled" } else { "annotated" })),
                    Err(s) => lines.push(s.kubectl_message(None, "")),
                }
            }
            lines
        }
    }
}
