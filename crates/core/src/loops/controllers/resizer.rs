//! The simulated CSI drivers' external-resizer sidecars (`kubernetes-csi/external-resizer`
//! v2.2, `pkg/controller/controller.go`, `expand_and_recover.go`, `resize_status.go`;
//! `RecoverVolumeExpansionFailure` is GA in 1.36).
//!
//! A Bound claim whose request exceeds its capacity, on a volume of a driver of the
//! cluster, is grown in three writes and a call: the claim's status gets the condition
//! `Resizing`, `allocatedResources` (the size being reached) and
//! `allocatedResourceStatuses.storage: ControllerResizeInProgress`, with the event
//! `Resizing`; ControllerExpandVolume takes the driver's `expand_ms`; the volume's
//! `spec.capacity` becomes the new size; then, as the driver needs the file system grown on
//! the node (`node_expansion_required`), the claim waits in `NodeResizePending` with the
//! condition `FileSystemResizePending` for the kubelet that mounts it (`loops/kubelet/
//! expand.rs`), or else its capacity is the new size at once (`VolumeResizeSuccessful`).
//! `kubectl get pvc` shows the old capacity until the end. A driver that is down fails the
//! call with gRPC `Unavailable` (`VolumeResizeFailed`, nothing else changes) and the claim
//! is retried with the sidecar's back-off, 1 s doubling to 5 min.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, PatchType, Request};
use crate::foundation::api::{self, get, get_str, rid, ResourceId};
use crate::foundation::quantity::format_bytes;
use crate::foundation::sim::{rfc3339, Millis};
use crate::foundation::value::{json, Value};
use crate::foundation::volume::{
    claim_needs_resize, resize_status, storage_size, with_resize_condition, CONTROLLER_RESIZE_IN_PROGRESS, NODE_RESIZE_IN_PROGRESS, NODE_RESIZE_PENDING,
};
use crate::loops::controllers::provisioner::{backoff, UNAVAILABLE};
use crate::loops::csi::{csi_source, CsiDriverSpec};
use crate::loops::events::Source;
use crate::loops::informer::Informer;
use crate::loops::{req_as, Controller, Cx, Fault};
use std::collections::{BTreeMap, BTreeSet};

const NAME: &str = "csi-resizer";

type Key = (String, String);

#[derive(Clone)]
pub struct CsiResizer {
    user: UserInfo,
    drivers: Vec<CsiDriverSpec>,
    /// Each driver's event source (`external-resizer <driver>`).
    sources: BTreeMap<String, Source>,
    claims: Informer,
    volumes: Informer,
    down: crate::loops::csi::DownDrivers,
    /// ControllerExpandVolume calls in flight: claim → the size asked for.
    expanding: BTreeMap<Key, i64>,
    /// Failures so far and the time of the next attempt, by claim.
    failures: BTreeMap<Key, (u32, Millis)>,
    queue: BTreeSet<Key>,
}

impl CsiResizer {
    pub fn new(drivers: &[CsiDriverSpec]) -> Self {
        let user = UserInfo::controller(crate::apiserver::rbac::CSI_PROVISIONER_ACCOUNT);
        let sources = crate::loops::csi::sidecar_sources(drivers, &user, |d| format!("external-resizer {d}"));
        CsiResizer {
            user,
            drivers: drivers.to_vec(),
            sources,
            claims: Informer::new(rid::PVC),
            volumes: Informer::new(rid::PV),
            down: Default::default(),
            expanding: BTreeMap::new(),
            failures: BTreeMap::new(),
            queue: BTreeSet::new(),
        }
    }

    fn driver(&self, name: &str) -> Option<&CsiDriverSpec> {
        self.drivers.iter().find(|d| d.name == name)
    }

    fn event(&self, cx: &mut Cx, driver: &str, obj: &Value, ty: &str, reason: &str, message: &str) {
        if let Some(src) = self.sources.get(driver) {
            cx.event(src, obj, None, ty, reason, message, None);
        }
    }

    /// The claim and its volume, when the volume is one of this sidecar's drivers
    /// (`CanSupport`: `spec.csi.driver` names it).
    fn claim_and_volume(&self, key: &Key) -> Option<(Value, Value, String)> {
        let claim = self.claims.get(&key.0, &key.1)?;
        let pv = self.volumes.get("", get_str(claim, &["spec", "volumeName"]).filter(|v| !v.is_empty())?)?;
        let (driver, _) = csi_source(pv)?;
        self.driver(driver)?;
        Some(((**claim).clone(), (**pv).clone(), driver.to_string()))
    }

    /// The size to reach: the one already allocated while an expansion is under way,
    /// else the request (`expand_and_recover.go`).
    fn target(claim: &Value) -> Option<i64> {
        let allocated = storage_size(claim, &["status", "allocatedResources", "storage"]);
        match resize_status(claim) {
            Some(_) if allocated.is_some() => allocated,
            _ => storage_size(claim, &["spec", "resources", "requests", "storage"]),
        }
    }

    fn patch_claim_status(&self, cx: &mut Cx, claim: &Value, status: Value) -> Option<Value> {
        let body = json!({"metadata": {"resourceVersion": api::resource_version(claim)}, "status": status});
        let r =
            Request::patch(rid::PVC, api::namespace(claim), api::name(claim), PatchType::Merge, body, Credentials::User(self.user.clone())).with_sub("status");
        cx.api.handle(req_as(r, NAME, &self.user)).ok().map(|o| (*o).clone())
    }

    fn fail(&mut self, cx: &mut Cx, key: &Key, driver: &str, claim: &Value, pv: &str) {
        self.event(cx, driver, claim, "Warning", "VolumeResizeFailed", &format!("resize volume {pv:?} by resizer {driver:?} failed: {UNAVAILABLE}"));
        cx.trace(
            Flow::NodeError,
            "expand-volume",
            format!("PersistentVolumeClaim/{}/{}", key.0, key.1),
            "error",
            api::resource_version(claim),
            format!("{driver}: ControllerExpandVolume {pv} failed: the driver is unavailable"),
        );
        let n = self.failures.get(key).map(|(n, _)| n + 1).unwrap_or(1);
        let delay = backoff(n);
        self.failures.insert(key.clone(), (n, cx.now + delay));
        cx.every(delay, format!("retry/{}/{}", key.0, key.1));
    }

    /// `syncPVC`.
    #[inline(never)]
    fn sync(&mut self, cx: &mut Cx, key: &Key) {
        let Some((claim, pv, driver)) = self.claim_and_volume(key) else { return };
        if !claim_needs_resize(&claim) || self.expanding.contains_key(key) || self.failures.get(key).is_some_and(|(_, at)| *at > cx.now) {
            return;
        }
        let Some(target) = Self::target(&claim) else { return };
        let status = resize_status(&claim);
        if storage_size(&pv, &["spec", "capacity", "storage"]).unwrap_or(0) >= target {
            // The disk already has the size: only the node's part (or the record) is left.
            if !matches!(status, Some(NODE_RESIZE_PENDING | NODE_RESIZE_IN_PROGRESS)) {
                self.expanded_to(cx, &claim, &driver, target);
            }
            return;
        }
        // `markControllerResizeInProgress`, then the `Resizing` event of each attempt.
        let now = rfc3339(cx.now);
        let allocated = format_bytes(target);
        let status = json!({
            "conditions": with_resize_condition(&claim, false, Some(("Resizing", "", &now))),
            "allocatedResources": {"storage": allocated},
            "allocatedResourceStatuses": {"storage": CONTROLLER_RESIZE_IN_PROGRESS},
        });
        let claim = if claim.get("status").is_some_and(|s| status.as_object().is_some_and(|m| m.iter().all(|(k, v)| s.get(k.as_str()) == Some(v)))) {
            claim
        } else {
            match self.patch_claim_status(cx, &claim, status) {
                Some(c) => c,
                None => return,
            }
        };
        let pv_name = api::name(&pv).to_string();
        self.event(cx, &driver, &claim, "Normal", "Resizing", &format!("External resizer is resizing volume {pv_name}"));
        if self.down.contains(&driver) {
            self.fail(cx, key, &driver, &claim, &pv_name);
            return;
        }
        let ms = self.driver(&driver).map(|d| d.expand_ms).unwrap_or(0);
        self.expanding.insert(key.clone(), target);
        cx.after(ms, format!("expand/{}/{}", key.0, key.1));
        cx.trace(
            Flow::DeploymentController,
            "expand-volume",
            format!("PersistentVolumeClaim/{}/{}", key.0, key.1),
            "ok",
            api::resource_version(&claim),
            format!("{driver}: ControllerExpandVolume {pv_name} to {allocated} ({})", crate::loops::kubelet::go_duration(ms)),
        );
    }

    /// ControllerExpandVolume returned: the volume's capacity is the new size.
    fn expand_returned(&mut self, cx: &mut Cx, key: &Key) {
        let Some(target) = self.expanding.remove(key) else { return };
        self.claims.sync(&cx.api.store);
        self.volumes.sync(&cx.api.store);
        let Some((claim, pv, driver)) = self.claim_and_volume(key) else { return };
        if self.down.contains(&driver) {
            self.fail(cx, key, &driver, &claim, api::name(&pv));
            return;
        }
        self.failures.remove(key);
        let body = json!({"metadata": {"resourceVersion": api::resource_version(&pv)}, "spec": {"capacity": {"storage": format_bytes(target)}}});
        let r = Request::patch(rid::PV, "", api::name(&pv), PatchType::Merge, body, Credentials::User(self.user.clone()));
        if cx.api.handle(req_as(r, NAME, &self.user)).is_err() {
            self.queue.insert(key.clone());
            return;
        }
        self.expanded_to(cx, &claim, &driver, target);
    }

    /// After the disk has grown: hand the file system to the node, or finish.
    fn expanded_to(&mut self, cx: &mut Cx, claim: &Value, driver: &str, target: i64) {
        let node_expansion = self.driver(driver).is_some_and(|d| d.node_expansion_required);
        let now = rfc3339(cx.now);
        let key = api::queue_key(claim);
        let obj = format!("PersistentVolumeClaim/{}/{}", key.0, key.1);
        if node_expansion {
            // `markForPendingNodeExpansion`: the old `Resizing` condition is kept.
            let msg = "Waiting for user to (re-)start a pod to finish file system resize of volume on node.";
            let status = json!({
                "conditions": with_resize_condition(claim, true, Some(("FileSystemResizePending", msg, &now))),
                "allocatedResourceStatuses": {"storage": NODE_RESIZE_PENDING},
            });
            if let Some(c) = self.patch_claim_status(cx, claim, status) {
                self.event(cx, driver, &c, "Normal", "FileSystemResizeRequired", "Require file system resize of volume on node");
                cx.trace(
                    Flow::DeploymentController,
                    "expand-volume",
                    obj,
                    "ok",
                    api::resource_version(&c),
                    format!("{driver}: the disk is {}; the node must grow its file system", format_bytes(target)),
                );
            }
            return;
        }
        // `markOverallExpansionAsFinished`.
        let mut statuses = get(claim, &["status", "allocatedResourceStatuses"]).and_then(Value::as_object).cloned().unwrap_or_default();
        statuses.remove("storage");
        let status = json!({
            "capacity": {"storage": format_bytes(target)},
            "conditions": with_resize_condition(claim, false, None),
            "allocatedResourceStatuses": if statuses.is_empty() { json!(null) } else { json!({"storage": null}) },
        });
        if let Some(c) = self.patch_claim_status(cx, claim, status) {
            self.event(cx, driver, &c, "Normal", "VolumeResizeSuccessful", "Resize volume succeeded");
            cx.trace(
                Flow::DeploymentController,
                "expand-volume",
                obj,
                "ok",
                api::resource_version(&c),
                format!("{driver}: resized to {}", format_bytes(target)),
            );
        }
    }
}

impl Controller for CsiResizer {
    fn name(&self) -> &'static str {
        NAME
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::PVC, rid::PV]
    }
    fn run(&mut self, cx: &mut Cx) {
        for d in self.claims.sync(&cx.api.store).deltas {
            if d.kind == EventType::Deleted {
                let k = api::queue_key(&d.object);
                self.failures.remove(&k);
                continue;
            }
            self.queue.insert(api::queue_key(&d.object));
        }
        // A claim waits for its volume to appear in the cache.
        for d in self.volumes.sync(&cx.api.store).deltas {
            if let Some(r) = get(&d.object, &["spec", "claimRef"]).filter(|r| !r.is_null()) {
                self.queue.insert((get_str(r, &["namespace"]).unwrap_or("").to_string(), get_str(r, &["name"]).unwrap_or("").to_string()));
            }
        }
        while let Some(k) = self.queue.pop_first() {
            self.sync(cx, &k);
        }
    }
    fn timer(&mut self, cx: &mut Cx, key: &str) {
        let split = |k: &str| k.split_once('/').map(|(ns, n)| (ns.to_string(), n.to_string()));
        if let Some(k) = key.strip_prefix("expand/").and_then(split) {
            self.expand_returned(cx, &k);
        } else if let Some(k) = key.strip_prefix("retry/").and_then(split) {
            self.queue.insert(k);
        }
        self.run(cx);
    }
    fn busy(&self, _now: Millis) -> bool {
        !self.queue.is_empty()
    }
    fn fault(&mut self, _cx: &mut Cx, fault: &Fault) -> bool {
        self.down.take(&self.drivers, fault)
    }
    fn restart(&mut self) {
        let down = std::mem::take(&mut self.down);
        let drivers = std::mem::take(&mut self.drivers);
        *self = Self::new(&drivers);
        self.down = down;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_is_the_allocated_size_while_an_expansion_is_under_way() {
        let claim = |status: Value| json!({"spec": {"resources": {"requests": {"storage": "3Gi"}}}, "status": status});
        assert_eq!(CsiResizer::target(&claim(json!({"capacity": {"storage": "1Gi"}}))), Some((3i64 << 30) * 1000));
        let pending = claim(json!({"allocatedResources": {"storage": "2Gi"}, "allocatedResourceStatuses": {"storage": NODE_RESIZE_PENDING}}));
        assert_eq!(CsiResizer::target(&pending), Some((2i64 << 30) * 1000));
        let done = claim(json!({"allocatedResources": {"storage": "2Gi"}}));
        assert_eq!(CsiResizer::target(&done), Some((3i64 << 30) * 1000), "a finished expansion leaves allocatedResources; the request counts");
    }
}
