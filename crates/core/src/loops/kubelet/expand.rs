//! The node's part of growing a claim (`pkg/volume/util/operationexecutor/
//! node_expander.go`, `operation_generator.go` `GenerateExpandInUseVolumeFunc`,
//! `pkg/volume/csi/expander.go`): once the external-resizer has grown the disk and left the
//! claim in `NodeResizePending`, the kubelet that mounts it runs NodeExpandVolume (the
//! driver grows the file system), marking the claim `NodeResizeInProgress` first and, once
//! done, writing the volume's capacity into the claim's status and clearing the resize
//! conditions, with the event `FileSystemResizeSuccessful` on the pod and the claim.
//!
//! A mounted volume is grown online at the pod's next periodic sync (`--sync-frequency`,
//! 1 min: the desired-state populator re-reads a pod's claims only when its pod worker
//! syncs it); a volume that is not mounted is grown when a pod next mounts it. While the
//! driver's node plugin is down the call fails (`VolumeResizeFailed` on the pod) and the
//! next sync tries again.

use super::{Key, Kubelets, Stage};
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, PatchType, Request};
use crate::foundation::api::{self, get, get_array, get_str, rid};
use crate::foundation::sim::Millis;
use crate::foundation::value::{json, Value};
use crate::foundation::volume::{awaits_node_expansion, storage_size, with_resize_condition, NODE_RESIZE_IN_PROGRESS};
use crate::loops::csi::{claimed_volume, csi_source};
use crate::loops::{req_as, Cx};
use std::collections::BTreeSet;

/// `--sync-frequency`: how often a pod worker syncs a running pod.
pub const POD_SYNC_PERIOD_MS: Millis = 60_000;

impl Kubelets {
    /// Claims left for the nodes to grow: each pod that has one mounted grows it at its
    /// next periodic sync.
    pub(super) fn schedule_node_expansion(&mut self, cx: &mut Cx, claims: &BTreeSet<Key>) {
        let mut due = Vec::new();
        for (ni, n) in self.nodes.iter_mut().enumerate().filter(|(_, n)| !n.down) {
            for (key, rt) in n.pods.iter_mut().filter(|(_, rt)| matches!(rt.stage, Stage::Sandbox | Stage::Containers)) {
                let Some(pod) = self.pods.get(&key.0, &key.1) else { continue };
                for v in get_array(pod, &["spec", "volumes"]) {
                    let Some(claim) = get_str(v, &["persistentVolumeClaim", "claimName"]) else { continue };
                    if claims.contains(&(key.0.clone(), claim.to_string())) && rt.resize_due.insert(claim.to_string()) {
                        let since = cx.now.saturating_sub(rt.started) % POD_SYNC_PERIOD_MS;
                        due.push((ni, key.clone(), rt.epoch, claim.to_string(), POD_SYNC_PERIOD_MS - since));
                    }
                }
            }
        }
        for (ni, key, epoch, claim, delay) in due {
            cx.after(delay, Self::timer_key(&self.nodes[ni].name, &key, epoch, &format!("expand:{claim}")));
        }
    }

    /// NodeExpandVolume for one claim of a pod on node `ni`, if its disk is larger than its
    /// file system.
    #[inline(never)]
    pub(super) fn node_expand(&mut self, cx: &mut Cx, ni: usize, key: &Key, claim_name: &str) {
        let Some(pod) = self.pods.get(&key.0, &key.1).cloned() else { return };
        let Some(claim) = self.pvcs.get(&key.0, claim_name).map(|c| (**c).clone()) else { return };
        if !awaits_node_expansion(&claim) {
            return;
        }
        let Ok(pv) = claimed_volume(&key.0, claim_name, &self.pvcs, &self.pvs) else { return };
        let Some((driver, _)) = csi_source(&pv) else { return };
        let new_size = storage_size(&pv, &["spec", "capacity", "storage"]).unwrap_or(0);
        if new_size <= storage_size(&claim, &["status", "capacity", "storage"]).unwrap_or(0) {
            return;
        }
        let pv_name = api::name(&pv).to_string();
        let node_name = self.nodes[ni].name.clone();
        let src = self.nodes[ni].source.clone();
        let obj = format!("Pod/{}/{}", key.0, key.1);
        let read_only = get_array(&pod, &["spec", "volumes"]).iter().any(|v| {
            get_str(v, &["persistentVolumeClaim", "claimName"]) == Some(claim_name) && api::get_bool(v, &["persistentVolumeClaim", "readOnly"]) == Some(true)
        });
        if read_only {
            let msg = format!("MountVolume.NodeExpandVolume failed for volume {pv_name:?} requested read-only file system");
            cx.event(&src, &pod, None, "Warning", "FileSystemResizeFailed", &msg, None);
            cx.trace(Flow::NodeError, "expand-volume", obj, "error", "", msg);
            return;
        }
        if self.drivers_down.contains(driver) || !self.drivers.iter().any(|d| d.name == driver) {
            // The node plugin is not registered: a transient failure, retried by the next sync.
            let msg = format!(
                "NodeExpandVolume.NodeExpandVolume failed for volume {pv_name:?} : driver name {driver} not found in the list of registered CSI drivers"
            );
            cx.event(&src, &pod, None, "Warning", "VolumeResizeFailed", &msg, None);
            cx.trace(Flow::NodeError, "expand-volume", obj, "error", "", msg);
            if let Some(rt) = self.nodes[ni].pods.get_mut(key) {
                if rt.resize_due.insert(claim_name.to_string()) {
                    let epoch = rt.epoch;
                    cx.after(POD_SYNC_PERIOD_MS, Self::timer_key(&node_name, key, epoch, &format!("expand:{claim_name}")));
                }
            }
            return;
        }
        let user = self.nodes[ni].user.clone();
        let patch = |cx: &mut Cx, claim: &Value, status: Value| -> Option<Value> {
            let body = json!({"metadata": {"resourceVersion": api::resource_version(claim)}, "status": status});
            let r = Request::patch(rid::PVC, &key.0, claim_name, PatchType::Merge, body, Credentials::User(user.clone())).with_sub("status");
            cx.api.handle(req_as(r, "kubelet", &user)).ok().map(|o| (*o).clone())
        };
        // `MarkNodeExpansionInProgress`, the call, then `MarkFSResizeFinished`.
        let Some(claim) = patch(cx, &claim, json!({"allocatedResourceStatuses": {"storage": NODE_RESIZE_IN_PROGRESS}})) else { return };
        let others = get(&claim, &["status", "allocatedResourceStatuses"]).and_then(Value::as_object).is_some_and(|m| m.len() > 1);
        let status = json!({
            "capacity": {"storage": get(&pv, &["spec", "capacity", "storage"]).cloned().unwrap_or(json!("0"))},
            "conditions": with_resize_condition(&claim, false, None),
            "allocatedResourceStatuses": if others { json!({"storage": null}) } else { json!(null) },
        });
        let Some(claim) = patch(cx, &claim, status) else { return };
        let msg = format!("MountVolume.NodeExpandVolume succeeded for volume {pv_name:?} {node_name}");
        cx.event(&src, &pod, None, "Normal", "FileSystemResizeSuccessful", &msg, None);
        cx.event(&src, &claim, None, "Normal", "FileSystemResizeSuccessful", &msg, None);
        let size = get_str(&claim, &["status", "capacity", "storage"]).unwrap_or("").to_string();
        cx.trace(
            Flow::Runtime,
            "expand-volume",
            obj,
            "ok",
            api::resource_version(&claim),
            format!("kubelet on {node_name} grows the file system of {pv_name} to {size} (NodeExpandVolume); claim {claim_name} is {size}"),
        );
    }
}
