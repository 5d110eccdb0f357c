//! What the PV controller and the scheduler's VolumeBinding plugin both ask of claims and
//! volumes (`k8s.io/component-helpers/storage/volume`: `pv_helpers.go`, `helpers.go`): a
//! claim's and a volume's class, whether a volume is bound to a claim, its node affinity,
//! and the best matching volume for a claim; and what the expand controller, the
//! external-resizer and the kubelet share about growing a claim (`resize_util.go` in
//! `pkg/volume/util` and external-resizer's `pkg/util`).

use crate::foundation::api::{self, get, get_array, get_str};
use crate::foundation::labels::{node_selector_term_matches, selector_matches};
use crate::foundation::quantity::value_milli;
use crate::foundation::value::{Map, Value};

/// The annotation the scheduler sets on a WaitForFirstConsumer claim for the node it chose.
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// Set by the PV controller on a claim once its binding is complete.
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// Set on a volume (or claim) bound by a controller rather than pre-bound by a user.
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// A StorageClass provisioner that provisions nothing (local volumes).
pub const NOT_SUPPORTED_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// A claim's class (`GetPersistentVolumeClaimClass`): `spec.storageClassName`, else the
/// beta annotation, else "".
pub fn claim_class(claim: &Value) -> &str {
    get_str(claim, &["spec", "storageClassName"]).or_else(|| api::annotation(claim, "volume.beta.kubernetes.io/storage-class")).unwrap_or("")
}

/// A volume's class (`GetPersistentVolumeClass`).
pub fn volume_class(pv: &Value) -> &str {
    get_str(pv, &["spec", "storageClassName"]).or_else(|| api::annotation(pv, "volume.beta.kubernetes.io/storage-class")).unwrap_or("")
}

/// Whether a volume's `claimRef` names this claim (`IsVolumeBoundToClaim`).
pub fn is_volume_bound_to_claim(pv: &Value, claim: &Value) -> bool {
    let Some(r) = get(pv, &["spec", "claimRef"]).filter(|r| !r.is_null()) else { return false };
    if get_str(r, &["name"]) != Some(api::name(claim)) || get_str(r, &["namespace"]) != Some(api::namespace(claim)) {
        return false;
    }
    let uid = get_str(r, &["uid"]).unwrap_or("");
    uid.is_empty() || uid == api::uid(claim)
}

/// Whether a claim is bound to a volume and its binding complete (`isPVCFullyBound`).
pub fn is_claim_fully_bound(claim: &Value) -> bool {
    get_str(claim, &["spec", "volumeName"]).is_some_and(|n| !n.is_empty()) && api::annotation(claim, ANN_BIND_COMPLETED).is_some()
}

/// Whether a volume's required node affinity admits a node with these labels
/// (`CheckNodeAffinity`): no affinity admits every node; the terms are ORed.
pub fn node_affinity_admits(pv: &Value, node_labels: Option<&Map>) -> bool {
    let Some(required) = get(pv, &["spec", "nodeAffinity", "required"]).filter(|r| !r.is_null()) else { return true };
    let terms = get_array(required, &["nodeSelectorTerms"]);
    terms.iter().any(|t| node_selector_term_matches(t, node_labels, ""))
}

fn volume_mode(spec_holder: &Value) -> &str {
    get_str(spec_holder, &["spec", "volumeMode"]).unwrap_or("Filesystem")
}

fn storage(v: &Value, path: &[&str]) -> i64 {
    get(v, path).and_then(value_milli).unwrap_or(0)
}

/// Whether the volume offers every access mode the claim asks for (`CheckAccessModes`).
pub fn access_modes_satisfied(claim: &Value, pv: &Value) -> bool {
    let offered = get_array(pv, &["spec", "accessModes"]);
    get_array(claim, &["spec", "accessModes"]).iter().all(|m| offered.contains(m))
}

/// The best volume for a claim among `volumes` (`FindMatchingVolume`): a volume pre-bound
/// to the claim wins at once (unless its node affinity excludes `node`); otherwise the
/// smallest Available volume of the claim's class, mode and size, selected by the claim's
/// selector, admitting `node` and (on the scheduler's path, `node` given) offering the
/// claim's access modes. `delay_binding` (the PV controller's path for WaitForFirstConsumer
/// claims) returns only pre-bound volumes: the scheduler picks the others. `excluded` are
/// volumes already chosen for the pod's other claims.
pub fn find_matching_volume<'a>(
    claim: &Value,
    volumes: impl IntoIterator<Item = &'a Value>,
    node_labels: Option<Option<&Map>>,
    excluded: &[&str],
    delay_binding: bool,
) -> Option<&'a Value> {
    let requested = storage(claim, &["spec", "resources", "requests", "storage"]);
    let class = claim_class(claim);
    let selector = get(claim, &["spec", "selector"]).filter(|s| !s.is_null());
    let mut best: Option<(&Value, i64)> = None;
    for pv in volumes {
        if excluded.contains(&api::name(pv)) {
            continue;
        }
        if get(pv, &["spec", "claimRef"]).is_some_and(|r| !r.is_null()) && !is_volume_bound_to_claim(pv, claim) {
            continue;
        }
        let size = storage(pv, &["spec", "capacity", "storage"]);
        if size < requested || volume_mode(claim) != volume_mode(pv) {
            continue;
        }
        if get_str(claim, &["spec", "volumeAttributesClassName"]).unwrap_or("") != get_str(pv, &["spec", "volumeAttributesClassName"]).unwrap_or("") {
            continue;
        }
        if api::is_deleting(pv) {
            continue;
        }
        let affinity_ok = node_labels.is_none_or(|l| node_affinity_admits(pv, l));
        if is_volume_bound_to_claim(pv, claim) {
            return affinity_ok.then_some(pv);
        }
        if node_labels.is_none() && delay_binding {
            continue;
        }
        if get_str(pv, &["status", "phase"]) != Some("Available") {
            continue;
        }
        if selector.is_some_and(|s| !selector_matches(Some(s), api::labels(pv))) {
            continue;
        }
        if volume_class(pv) != class || !affinity_ok {
            continue;
        }
        if node_labels.is_some() && !access_modes_satisfied(claim, pv) {
            continue;
        }
        if best.is_none_or(|(_, s)| s > size) {
            best = Some((pv, size));
        }
    }
    best.map(|(pv, _)| pv)
}

// ---- expansion -------------------------------------------------------------------

/// `status.allocatedResourceStatuses["storage"]` while the resizer grows the disk.
pub const CONTROLLER_RESIZE_IN_PROGRESS: &str = "ControllerResizeInProgress";
/// ... after it refused the size for good (`InvalidArgument`, `OutOfRange`, `NotFound`).
pub const CONTROLLER_RESIZE_INFEASIBLE: &str = "ControllerResizeInfeasible";
/// ... once the disk has grown and the file system on the node must follow.
pub const NODE_RESIZE_PENDING: &str = "NodeResizePending";
/// ... while the kubelet runs NodeExpandVolume.
pub const NODE_RESIZE_IN_PROGRESS: &str = "NodeResizeInProgress";
/// The claim conditions of a resize (`PersistentVolumeClaimConditionType`).
pub const RESIZE_CONDITIONS: [&str; 4] = ["Resizing", "FileSystemResizePending", "ControllerResizeError", "NodeResizeError"];

/// A storage size in milli-units (`resource.Quantity` of a claim or volume field).
pub fn storage_size(v: &Value, path: &[&str]) -> Option<i64> {
    get(v, path).and_then(value_milli)
}

/// `allocatedResourceStatuses["storage"]` of a claim.
pub fn resize_status(claim: &Value) -> Option<&str> {
    get_str(claim, &["status", "allocatedResourceStatuses", "storage"])
}

/// The claim's disk has grown and the file system on the node must follow
/// (`allocatedResourceStatuses.storage` is `NodeResizePending` or `NodeResizeInProgress`).
pub fn awaits_node_expansion(claim: &Value) -> bool {
    matches!(resize_status(claim), Some(NODE_RESIZE_PENDING | NODE_RESIZE_IN_PROGRESS))
}

/// `pvcNeedResize`: a Bound claim with a volume that asks for more than its capacity.
pub fn claim_needs_resize(claim: &Value) -> bool {
    let bound = get_str(claim, &["status", "phase"]) == Some("Bound") && !get_str(claim, &["spec", "volumeName"]).unwrap_or("").is_empty();
    let want = storage_size(claim, &["spec", "resources", "requests", "storage"]);
    let have = storage_size(claim, &["status", "capacity", "storage"]).unwrap_or(0);
    bound && want.is_some_and(|w| w > have)
}

/// A claim's `status` with `conditions` set to those it keeps plus `add` (each resize
/// condition type at most once; `lastTransitionTime` kept when the type was already there).
pub fn with_resize_condition(claim: &Value, keep_old: bool, add: Option<(&str, &str, &str)>) -> Vec<Value> {
    let mut out: Vec<Value> = api::get_array(claim, &["status", "conditions"])
        .iter()
        .filter(|c| {
            let t = get_str(c, &["type"]).unwrap_or("");
            !RESIZE_CONDITIONS.contains(&t) || (keep_old && add.is_none_or(|(a, _, _)| a != t))
        })
        .cloned()
        .collect();
    if let Some((ty, message, now)) = add {
        let old = api::get_array(claim, &["status", "conditions"]).iter().find(|c| get_str(c, &["type"]) == Some(ty));
        let since = old.and_then(|c| get_str(c, &["lastTransitionTime"])).unwrap_or(now);
        let mut c = crate::foundation::value::json!({"type": ty, "status": "True", "lastProbeTime": null, "lastTransitionTime": since});
        if !message.is_empty() {
            c["message"] = Value::String(message.into());
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foundation::value::json;

    fn pv(name: &str, size: &str, class: &str, phase: &str) -> Value {
        json!({"metadata": {"name": name}, "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": class}, "status": {"phase": phase}})
    }
    fn claim(size: &str, class: &str) -> Value {
        json!({"metadata": {"name": "data", "namespace": "default", "uid": "u1"}, "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": class, "resources": {"requests": {"storage": size}}}})
    }

    #[test]
    fn the_smallest_available_volume_of_the_class_that_fits_wins() {
        let vols = [
            pv("big", "10Gi", "manual", "Available"),
            pv("small", "2Gi", "manual", "Available"),
            pv("tiny", "500Mi", "manual", "Available"),
            pv("other", "2Gi", "fast", "Available"),
            pv("used", "1Gi", "manual", "Bound"),
        ];
        let c = claim("1Gi", "manual");
        assert_eq!(find_matching_volume(&c, &vols, None, &[], false).map(api::name), Some("small"));
        assert_eq!(find_matching_volume(&c, &vols, None, &["small"], false).map(api::name), Some("big"));
        // The PV controller leaves WaitForFirstConsumer claims to the scheduler.
        assert_eq!(find_matching_volume(&c, &vols, None, &[], true), None);
    }

    #[test]
    fn a_volume_pre_bound_to_the_claim_wins_unless_its_node_affinity_excludes_the_node() {
        let mut pre = pv("pre", "5Gi", "other", "Available");
        crate::foundation::api::set(&mut pre, &["spec", "claimRef"], json!({"name": "data", "namespace": "default"}));
        crate::foundation::api::set(
            &mut pre,
            &["spec", "nodeAffinity", "required", "nodeSelectorTerms"],
            json!([{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}]}]),
        );
        let vols = [pv("small", "2Gi", "manual", "Available"), pre];
        let c = claim("1Gi", "manual");
        assert_eq!(find_matching_volume(&c, &vols, None, &[], true).map(api::name), Some("pre"));
        let a = json!({"topology.kubernetes.io/zone": "zone-a"});
        let b = json!({"topology.kubernetes.io/zone": "zone-b"});
        assert_eq!(find_matching_volume(&c, &vols, Some(a.as_object()), &[], false).map(api::name), Some("pre"));
        assert_eq!(find_matching_volume(&c, &vols, Some(b.as_object()), &[], false), None);
    }

    #[test]
    fn access_modes_and_selectors_filter_on_the_schedulers_path() {
        let mut rwx = pv("rwx", "1Gi", "manual", "Available");
        crate::foundation::api::set(&mut rwx, &["metadata", "labels"], json!({"tier": "gold"}));
        let mut c = claim("1Gi", "manual");
        crate::foundation::api::set(&mut c, &["spec", "accessModes"], json!(["ReadWriteMany"]));
        let labels = json!({});
        assert_eq!(find_matching_volume(&c, [&rwx], Some(labels.as_object()), &[], false), None);
        crate::foundation::api::set(&mut c, &["spec", "accessModes"], json!(["ReadWriteOnce"]));
        crate::foundation::api::set(&mut c, &["spec", "selector"], json!({"matchLabels": {"tier": "silver"}}));
        assert_eq!(find_matching_volume(&c, [&rwx], Some(labels.as_object()), &[], false), None);
        crate::foundation::api::set(&mut c, &["spec", "selector"], json!({"matchLabels": {"tier": "gold"}}));
        assert_eq!(find_matching_volume(&c, [&rwx], Some(labels.as_object()), &[], false).map(api::name), Some("rwx"));
    }
}
