//! `kubectl set image` (`k8s.io/kubectl/pkg/cmd/set/set_image.go`).

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
