//! `kubectl scale` through the `scale` subresource (`k8s.io/kubectl/pkg/cmd/scale`).

use super::*;

/// `kubectl scale TYPE NAME... --replicas=N`: through the `scale` subresource.
pub(super) fn scale(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let Some(replicas) = f.get("--replicas").and_then(|v| v.parse::<i64>().ok()) else {
        return vec!["error: The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0".into()];
    };
    match targets(api, creds, f, ns) {
        Err(e) => vec![e],
        Ok(ts) => ts
            .into_iter()
            .map(|(r, name)| {
                match api.handle(Request::patch(r, ns, &name, PatchType::Merge, json!({"spec": {"replicas": replicas}}), creds.clone()).with_sub("scale")) {
                    Ok(_) => format!("{}/{name} scaled", kind_prefix(r)),
                    Err(s) => s.kubectl_message(None, ""),
                }
            })
            .collect(),
    }
}
