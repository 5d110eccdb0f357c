//! What the loops, kubectl and the page ask of a Pod's status, as
//! `k8s.io/kubernetes/pkg/api/v1/pod` (podutil) answers it.

use crate::foundation::api::{self, get_array, get_str};
use crate::foundation::sim::{parse_rfc3339, Millis};
use crate::foundation::value::Value;

/// Not finished and not being deleted (`controller.IsPodActive`).
/// Whether a command is a shell that reads its commands from stdin (`sh`, `bash` without
/// `-c` or a script).
pub fn interactive_shell(argv: &[String]) -> bool {
    let base = argv.first().map(|a| a.rsplit('/').next().unwrap_or(a)).unwrap_or("");
    matches!(base, "sh" | "bash" | "ash" | "dash" | "zsh") && !argv.iter().skip(1).any(|a| !a.starts_with('-') || a == "-c")
}

pub fn pod_is_active(p: &Value) -> bool {
    let phase = get_str(p, &["status", "phase"]).unwrap_or("");
    phase != "Succeeded" && phase != "Failed" && !api::is_deleting(p)
}

pub fn condition<'a>(obj: &'a Value, ty: &str) -> Option<&'a Value> {
    get_array(obj, &["status", "conditions"]).iter().find(|c| get_str(c, &["type"]) == Some(ty))
}

pub fn pod_is_ready(p: &Value) -> bool {
    condition(p, "Ready").and_then(|c| get_str(c, &["status"])) == Some("True")
}

/// Ready for at least `min_ready` seconds (`podutil.IsPodAvailable`).
pub fn pod_is_available(p: &Value, min_ready: i64, now: Millis) -> bool {
    if !pod_is_ready(p) {
        return false;
    }
    if min_ready <= 0 {
        return true;
    }
    let since = condition(p, "Ready").and_then(|c| get_str(c, &["lastTransitionTime"])).and_then(parse_rfc3339).unwrap_or(0);
    since + (min_ready as Millis) * 1000 <= now
}
