//! `kubectl patch` (`k8s.io/kubectl/pkg/cmd/patch`): a strategic merge, JSON merge or JSON
//! patch sent as written, and the name printer's `patched` or `patched (no change)`.

use super::*;

/// `kubectl patch TYPE NAME... -p PATCH [--type strategic|merge|json] [--subresource status]`.
pub(super) fn patch(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let ty = match f.get("--type").unwrap_or("strategic") {
        "strategic" => PatchType::Strategic,
        "merge" => PatchType::Merge,
        "json" => PatchType::Json,
        other => return vec![format!("error: --type must be one of [json merge strategic], not {other:?}")],
    };
    let Some(text) = f.get("--patch").filter(|p| !p.is_empty()) else {
        return vec!["error: must specify --patch or --patch-file containing the contents of the patch".into()];
    };
    // `yaml.ToJSON`: the patch may be written as YAML.
    let body = match serde_json::from_str::<Value>(text).or_else(|_| crate::foundation::manifest::parse_value(text).map_err(|e| e.message)) {
        Ok(v) => v,
        Err(e) => return vec![format!("error: unable to parse {text:?}: {e}")],
    };
    let subresource = f.get("--subresource").unwrap_or("").to_string();
    // `SupportedSubresources` of kubectl patch.
    if !matches!(subresource.as_str(), "" | "status" | "scale" | "resize") {
        return vec![format!("error: invalid subresource value: {subresource:?}. Must be one of [status scale resize]")];
    }
    let ts = match targets(api, creds, f, ns) {
        Ok(ts) => ts,
        Err(e) => return vec![e],
    };
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
        let mut req = Request::patch(r, target_ns, &name, ty, body.clone(), creds.clone());
        req.subresource = subresource.clone();
        match api.handle(req) {
            // `didPatch`: whether the object the server returned differs from the one read.
            Ok(after) => {
                let what = if *after == *live { "patched (no change)" } else { "patched" };
                lines.push(with_warnings(api, format!("{}/{name} {what}", kind_prefix(r))));
            }
            Err(s) => lines.push(s.kubectl_message(None, "")),
        }
    }
    lines
}
