//! `kubectl delete` with `--cascade`, `--grace-period` and `--force` (`k8s.io/kubectl/pkg/cmd/delete`).

use super::*;

/// `kubectl delete TYPE NAME... [--cascade=background|foreground|orphan] [--grace-period=N] [--force] [--ignore-not-found]`.
pub(super) fn delete(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let cascade = f.get("--cascade").unwrap_or("background");
    let mut lines = Vec::new();
    let propagation = match cascade {
        "background" | "true" => "Background",
        "foreground" => "Foreground",
        "orphan" => "Orphan",
        "false" => {
            lines.push("warning: --cascade=false is deprecated (boolean value) and can be replaced with --cascade=orphan.".to_string());
            "Orphan"
        }
        other => return vec![format!("error: invalid cascade value ({other}). Must be \"background\", \"foreground\", or \"orphan\"")],
    };
    let grace = f.get("--grace-period").and_then(|g| g.parse::<i64>().ok());
    let force = f.get("--force") == Some("true");
    // kubectl ignores what is already gone when asked, and always for --all.
    let ignore_not_found = f.get("--ignore-not-found").map_or(f.get("--all") == Some("true"), |v| v == "true");
    if force && grace == Some(0) {
        lines.push("Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely.".into());
    }
    match targets(api, creds, f, ns) {
        Err(e) => lines.push(e),
        Ok(ts) => {
            for (r, name) in ts {
                let mut req = Request::delete(r, ns, &name, creds.clone());
                req.propagation = Some(propagation.into());
                req.grace_period = grace;
                match api.handle(req) {
                    Ok(_) => {
                        let what = if force && grace == Some(0) { "force deleted" } else { "deleted" };
                        let base = format!("{} {name:?} {what}", kind_prefix(r));
                        lines.push(if RESOURCES[r].namespaced { format!("{base} from {ns} namespace") } else { base });
                    }
                    Err(s) if ignore_not_found && s.code == 404 => {}
                    Err(s) => lines.push(s.kubectl_message(None, "")),
                }
            }
        }
    }
    lines
}
