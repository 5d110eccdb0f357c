//! The attach/detach controller (`pkg/controller/volume/attachdetach/`:
//! `attach_detach_controller.go`, `reconciler/reconciler.go`, `statusupdater/`, with the CSI
//! attacher of `pkg/volume/csi/csi_attacher.go`): every volume a pod scheduled to a node
//! needs, when its CSI driver requires attaching, gets a VolumeAttachment for that node;
//! the driver's external-attacher does the attaching (see `csiattacher`). Once attached,
//! the volume is listed in the Node's `status.volumesAttached`, which is what the kubelet
//! waits for before it mounts. A volume no pod on a node needs any more is detached (its
//! VolumeAttachment deleted) once the kubelet no longer reports it in `volumesInUse` — or,
//! on a node that is not Ready, after `maxWaitForUnmountDuration` regardless.
//!
//! The desired state (which volume on which node, for which pods) is worked out afresh
//! from the informers on each pass; the actual state is the VolumeAttachments themselves.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, PatchType, Request};
use crate::foundation::api::{self, get, get_array, get_str, rid, Object, ResourceId};
use crate::foundation::sim::Millis;
use crate::foundation::sort::CollectTree;
use crate::foundation::value::{json, Value};
use crate::loops::csi::{attach_required, attachment_name, claimed_volume, csi_source, multi_attach_allowed, unique_volume_name};
use crate::loops::events::Source;
use crate::loops::informer::Informer;
use crate::loops::{req_as, Controller, Cx};
use std::collections::{BTreeMap, BTreeSet};

/// How long a volume no pod needs stays attached to a node that is not Ready while the
/// node still reports it in use (`--attach-detach-reconcile-max-wait-unmount-duration`).
pub const MAX_WAIT_FOR_UNMOUNT_MS: Millis = 6 * 60 * 1000;

/// A node tainted so is known to be shut down: its volumes detach at once.
pub const OUT_OF_SERVICE_TAINT: &str = "node.kubernetes.io/out-of-service";

const NAME: &str = "attachdetach-controller";

/// One volume a node should have attached (`cache.VolumeToAttach`).
#[derive(Debug, Clone)]
pub struct VolumeToAttach {
    pub pv: String,
    pub driver: String,
    pub handle: String,
    pub multi_attach: bool,
    /// The pods on the node that use it (`ScheduledPods`), in key order.
    pub pods: Vec<Object>,
}

/// Whether the attach/detach controller still counts a pod's volumes as needed
/// (`util.IsPodTerminated`): not once it has finished, nor once it is being deleted and no
/// container runs any more.
fn pod_needs_volumes(pod: &Value) -> bool {
    if matches!(get_str(pod, &["status", "phase"]), Some("Succeeded") | Some("Failed")) {
        return false;
    }
    if api::is_deleting(pod) {
        let running = get_array(pod, &["status", "containerStatuses"]).iter().any(|s| get(s, &["state", "running"]).is_some());
        return running;
    }
    true
}

/// The desired state of the world: (unique volume name, node) → what to attach there
/// (`desired_state_of_world_populator.go`, `util.ProcessPodVolumes`).
pub fn desired_state(pods: &Informer, nodes: &Informer, pvcs: &Informer, pvs: &Informer, csidrivers: &Informer) -> BTreeMap<(String, String), VolumeToAttach> {
    let mut out: BTreeMap<(String, String), VolumeToAttach> = BTreeMap::new();
    for pod in pods.list(None) {
        let Some(node) = get_str(pod, &["spec", "nodeName"]) else { continue };
        if nodes.get("", node).is_none() || !pod_needs_volumes(pod) {
            continue;
        }
        for v in get_array(pod, &["spec", "volumes"]) {
            let Some(claim) = get_str(v, &["persistentVolumeClaim", "claimName"]) else { continue };
            let Ok(pv) = claimed_volume(api::namespace(pod), claim, pvcs, pvs) else { continue };
            let Some((driver, handle)) = csi_source(&pv) else { continue };
            if !attach_required(driver, csidrivers) {
                continue;
            }
            let entry = out.entry((unique_volume_name(driver, handle), node.to_string())).or_insert_with(|| VolumeToAttach {
                pv: api::name(&pv).to_string(),
                driver: driver.to_string(),
                handle: handle.to_string(),
                multi_attach: multi_attach_allowed(&pv),
                pods: Vec::new(),
            });
            if !entry.pods.iter().any(|p| api::uid(p) == api::uid(pod)) {
                entry.pods.push(pod.clone());
            }
        }
    }
    out
}

/// The Multi-Attach error a pod gets when its non-shareable volume is attached to another
/// node (`reconciler.go` `reportMultiAttachError`): the pods in its own namespace that use
/// the volume are named, the others only counted.
pub fn multi_attach_message(pv: &str, pod_namespace: &str, users: &[Object]) -> String {
    let detail = if users.is_empty() {
        "Volume is already exclusively attached to one node and can't be attached to another".to_string()
    } else {
        let local: Vec<&str> = users.iter().filter(|p| api::namespace(p) == pod_namespace).map(|p| api::name(p)).collect();
        let others = users.len() - local.len();
        if local.is_empty() {
            format!("Volume is already used by {others} pod(s) in different namespaces")
        } else if others > 0 {
            format!("Volume is already used by pod(s) {} and {others} pod(s) in different namespaces", local.join(", "))
        } else {
            format!("Volume is already used by pod(s) {}", local.join(", "))
        }
    };
    format!("Multi-Attach error for volume {pv:?} {detail}")
}

#[derive(Clone)]
pub struct AttachDetachController {
    user: UserInfo,
    source: Source,
    pods: Informer,
    nodes: Informer,
    pvcs: Informer,
    pvs: Informer,
    vas: Informer,
    csidrivers: Informer,
    /// Whether the first pass ran (attachments found then were made before this run).
    started: bool,
    /// (unique name, node) → when the volume stopped being needed there.
    detach_requested: BTreeMap<(String, String), Millis>,
    /// (unique name, node) whose Multi-Attach error was reported.
    multi_reported: BTreeSet<(String, String)>,
    /// VolumeAttachments whose attach was reported to their pods.
    attach_reported: BTreeSet<String>,
    /// VolumeAttachment → the attach error last reported (its time and message).
    error_reported: BTreeMap<String, String>,
    dirty: bool,
}

impl Default for AttachDetachController {
    fn default() -> Self {
        Self::new()
    }
}

impl AttachDetachController {
    pub fn new() -> Self {
        let user = UserInfo::controller(NAME);
        AttachDetachController {
            source: Source { component: NAME, host: String::new(), user: user.clone() },
            user,
            pods: Informer::new(rid::POD),
            nodes: Informer::new(rid::NODE),
            pvcs: Informer::new(rid::PVC),
            pvs: Informer::new(rid::PV),
            vas: Informer::new(rid::VOLUMEATTACHMENT),
            csidrivers: Informer::new(rid::CSIDRIVER),
            started: false,
            detach_requested: BTreeMap::new(),
            multi_reported: BTreeSet::new(),
            attach_reported: BTreeSet::new(),
            error_reported: BTreeMap::new(),
            dirty: true,
        }
    }

    fn sync_informers(&mut self, cx: &mut Cx) {
        let mut changed = false;
        for inf in [&mut self.pvs, &mut self.vas, &mut self.csidrivers] {
            changed |= !inf.sync(&cx.api.store).deltas.is_empty();
        }
        // No volume, no attachment: nothing to do, and no pod cache kept meanwhile.
        if self.pvs.is_empty() && self.vas.is_empty() {
            self.dirty |= changed;
            return;
        }
        for inf in [&mut self.pods, &mut self.nodes, &mut self.pvcs] {
            changed |= !inf.sync(&cx.api.store).deltas.is_empty();
        }
        self.dirty |= changed;
    }

    fn request(&self, cx: &mut Cx, r: Request) -> Result<Object, crate::foundation::status::Status> {
        cx.api.handle(req_as(r, NAME, &self.user))
    }

    fn creds(&self) -> Credentials {
        Credentials::User(self.user.clone())
    }

    /// The unique name of the volume a VolumeAttachment attaches, from its PV.
    fn unique_of(&self, va: &Value) -> Option<String> {
        let pv = self.pvs.get("", get_str(va, &["spec", "source", "persistentVolumeName"])?)?;
        let (driver, handle) = csi_source(pv)?;
        Some(unique_volume_name(driver, handle))
    }

    #[inline(never)]
    fn reconcile(&mut self, cx: &mut Cx) {
        let desired = desired_state(&self.pods, &self.nodes, &self.pvcs, &self.pvs, &self.csidrivers);
        let vas: Vec<Object> = self.vas.list(None).cloned().collect();
        if !self.started {
            // Attachments made before this controller (re)started were reported then
            // (the actual state is rebuilt from the nodes' status).
            self.started = true;
            for va in &vas {
                if api::get_bool(va, &["status", "attached"]) == Some(true) {
                    self.attach_reported.insert(api::name(va).to_string());
                }
            }
        }
        let live: BTreeSet<&str> = vas.iter().map(|v| api::name(v)).collect_tree();
        self.attach_reported.retain(|n| live.contains(n.as_str()));
        self.error_reported.retain(|n, _| live.contains(n.as_str()));

        // Detach what no pod needs: first taken off the node's status, then deleted.
        let mut detaching: BTreeSet<String> = BTreeSet::new();
        let mut keys_in_use = BTreeSet::new();
        for va in &vas {
            if api::is_deleting(va) {
                continue;
            }
            let node = get_str(va, &["spec", "nodeName"]).unwrap_or("").to_string();
            let Some(unique) = self.unique_of(va) else { continue };
            let key = (unique.clone(), node.clone());
            if desired.contains_key(&key) {
                continue;
            }
            keys_in_use.insert(key.clone());
            let since = *self.detach_requested.entry(key).or_insert(cx.now);
            let node_obj = self.nodes.get("", &node);
            let mounted = node_obj.is_some_and(|n| get_array(n, &["status", "volumesInUse"]).iter().any(|v| v.as_str() == Some(unique.as_str())));
            let healthy = node_obj.is_some_and(|n| crate::foundation::pod::condition(n, "Ready").and_then(|c| get_str(c, &["status"])) == Some("True"));
            let out_of_service = node_obj.is_some_and(|n| get_array(n, &["spec", "taints"]).iter().any(|t| get_str(t, &["key"]) == Some(OUT_OF_SERVICE_TAINT)));
            let timed_out = cx.now.saturating_sub(since) >= MAX_WAIT_FOR_UNMOUNT_MS;
            let force = !healthy && timed_out;
            if mounted && !force && !out_of_service {
                if !healthy {
                    cx.after(since + MAX_WAIT_FOR_UNMOUNT_MS - cx.now, "force-detach");
                }
                continue;
            }
            detaching.insert(api::name(va).to_string());
            let why = if mounted && force {
                format!(
                    "volume {unique} is not safe to detach from {node}, but maxWaitForUnmountDuration 6m0s expired and the node is not Ready: force detaching"
                )
            } else if mounted {
                format!("volume {unique} is still in use on {node}, which is out of service: detaching")
            } else {
                format!("no pod on {node} uses volume {unique} and the kubelet reports it unmounted: detaching")
            };
            cx.trace(Flow::ReplicaSetController, "detach", format!("VolumeAttachment/{}", api::name(va)), "ok", api::resource_version(va), why);
        }
        self.detach_requested.retain(|k, _| keys_in_use.contains(k));

        self.update_node_status(cx, &vas, &detaching);

        for name in &detaching {
            let r = Request::delete(rid::VOLUMEATTACHMENT, "", name, self.creds());
            if let Err(s) = self.request(cx, r) {
                cx.trace(Flow::NodeError, "detach", format!("VolumeAttachment/{name}"), "error", "", s.message);
            }
        }

        // Attach what pods need.
        let by_name: BTreeMap<&str, &Object> = vas.iter().map(|v| (api::name(v), v)).collect_tree();
        for ((unique, node), want) in &desired {
            let name = attachment_name(&want.handle, &want.driver, node);
            if let Some(va) = by_name.get(name.as_str()) {
                self.report_status(cx, va, want);
                continue;
            }
            let others: Vec<&Object> = vas
                .iter()
                .filter(|v| get_str(v, &["spec", "source", "persistentVolumeName"]) == Some(want.pv.as_str()))
                .filter(|v| get_str(v, &["spec", "nodeName"]) != Some(node.as_str()))
                .collect();
            if !want.multi_attach && !others.is_empty() {
                // An attach or detach elsewhere still in progress: wait for it (the
                // operation is pending). Attached elsewhere: the Multi-Attach error.
                let settled = others
                    .iter()
                    .any(|v| !api::is_deleting(v) && (api::get_bool(v, &["status", "attached"]) == Some(true) || get(v, &["status", "attachError"]).is_some()));
                let key = (unique.clone(), node.clone());
                if settled && self.multi_reported.insert(key) {
                    let other_nodes: BTreeSet<&str> = others.iter().filter_map(|v| get_str(v, &["spec", "nodeName"])).collect_tree();
                    let users: Vec<Object> = desired
                        .iter()
                        .filter(|((u, n), _)| u == unique && other_nodes.contains(n.as_str()))
                        .flat_map(|(_, w)| w.pods.iter().cloned())
                        .collect();
                    for pod in &want.pods {
                        let msg = multi_attach_message(&want.pv, api::namespace(pod), &users);
                        cx.event(&self.source, pod, None, "Warning", "FailedAttachVolume", &msg, None);
                        cx.trace(Flow::NodeError, "attach", format!("Pod/{}/{}", api::namespace(pod), api::name(pod)), "error", "", msg);
                    }
                }
                continue;
            }
            self.multi_reported.remove(&(unique.clone(), node.clone()));
            let body = json!({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": name},
                "spec": {"attacher": want.driver, "nodeName": node, "source": {"persistentVolumeName": want.pv}}});
            match self.request(cx, Request::create(rid::VOLUMEATTACHMENT, "", body, self.creds())) {
                Ok(stored) => cx.trace(
                    Flow::ReplicaSetController,
                    "attach",
                    format!("VolumeAttachment/{name}"),
                    "ok",
                    api::resource_version(&stored),
                    format!("volume {:?} is needed on {node}: VolumeAttachment created for {}'s external-attacher", want.pv, want.driver),
                ),
                Err(s) if s.code == 409 => {}
                Err(s) => cx.trace(Flow::NodeError, "attach", format!("VolumeAttachment/{name}"), "error", "", s.message),
            }
        }
        let wanted: BTreeSet<&(String, String)> = desired.keys().collect_tree();
        self.multi_reported.retain(|k| wanted.contains(k));
    }

    /// Report an attachment's outcome to the pods waiting for it (`operation_generator.go`
    /// `GenerateAttachVolumeFunc`; the CSI attacher's `verifyAttachmentStatus`).
    fn report_status(&mut self, cx: &mut Cx, va: &Value, want: &VolumeToAttach) {
        if api::is_deleting(va) {
            return;
        }
        let name = api::name(va).to_string();
        if api::get_bool(va, &["status", "attached"]) == Some(true) {
            if self.attach_reported.insert(name.clone()) {
                self.error_reported.remove(&name);
                let msg = format!("AttachVolume.Attach succeeded for volume {:?} ", want.pv);
                for pod in &want.pods {
                    cx.event(&self.source, pod, None, "Normal", "SuccessfulAttachVolume", &msg, None);
                }
                let node = get_str(va, &["spec", "nodeName"]).unwrap_or("");
                cx.trace(
                    Flow::ReplicaSetController,
                    "attach",
                    format!("VolumeAttachment/{name}"),
                    "ok",
                    api::resource_version(va),
                    format!("volume {:?} is attached to {node}", want.pv),
                );
            }
            return;
        }
        let Some(err) = get(va, &["status", "attachError"]) else { return };
        let text = get_str(err, &["message"]).unwrap_or("");
        let stamp = format!("{}|{text}", get_str(err, &["time"]).unwrap_or(""));
        if self.error_reported.get(&name) == Some(&stamp) {
            return;
        }
        self.error_reported.insert(name.clone(), stamp);
        let msg = format!("AttachVolume.Attach failed for volume {:?} : {text}", want.pv);
        for pod in &want.pods {
            cx.event(&self.source, pod, None, "Warning", "FailedAttachVolume", &msg, None);
        }
        cx.trace(Flow::NodeError, "attach", format!("VolumeAttachment/{name}"), "error", api::resource_version(va), msg);
    }

    /// `statusupdater`: each node's `status.volumesAttached` lists the volumes attached to it
    /// that are not being detached.
    fn update_node_status(&mut self, cx: &mut Cx, vas: &[Object], detaching: &BTreeSet<String>) {
        let mut per_node: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for va in vas {
            if api::is_deleting(va) || detaching.contains(api::name(va)) || api::get_bool(va, &["status", "attached"]) != Some(true) {
                continue;
            }
            let Some(unique) = self.unique_of(va) else { continue };
            per_node.entry(get_str(va, &["spec", "nodeName"]).unwrap_or("").to_string()).or_default().insert(unique);
        }
        let nodes: Vec<Object> = self.nodes.list(None).cloned().collect();
        for node in nodes {
            let want: Vec<Value> = per_node.get(api::name(&node)).into_iter().flatten().map(|u| json!({"name": u, "devicePath": ""})).collect();
            let have = get_array(&node, &["status", "volumesAttached"]);
            if have == want.as_slice() {
                continue;
            }
            let value = if want.is_empty() { Value::Null } else { Value::Array(want.clone()) };
            let body = json!({"status": {"volumesAttached": value}});
            let r = Request::patch(rid::NODE, "", api::name(&node), PatchType::Merge, body, self.creds()).with_sub("status");
            match self.request(cx, r) {
                Ok(stored) => cx.trace(
                    Flow::ReplicaSetController,
                    "node-status",
                    format!("Node/{}", api::name(&node)),
                    "ok",
                    api::resource_version(&stored),
                    format!("{} volume(s) attached to {}", want.len(), api::name(&node)),
                ),
                Err(s) => cx.trace(Flow::NodeError, "node-status", format!("Node/{}", api::name(&node)), "error", "", s.message),
            }
        }
    }
}

impl Controller for AttachDetachController {
    fn name(&self) -> &'static str {
        NAME
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::POD, rid::NODE, rid::PVC, rid::PV, rid::VOLUMEATTACHMENT, rid::CSIDRIVER]
    }
    fn run(&mut self, cx: &mut Cx) {
        self.sync_informers(cx);
        if !self.dirty || (self.pvs.is_empty() && self.vas.is_empty()) {
            return;
        }
        self.dirty = false;
        self.reconcile(cx);
    }
    fn timer(&mut self, cx: &mut Cx, _key: &str) {
        self.dirty = true;
        self.run(cx);
    }
    fn restart(&mut self) {
        *self = Self::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn pod(ns: &str, name: &str) -> Object {
        Arc::new(json!({"metadata": {"name": name, "namespace": ns, "uid": name}}))
    }

    #[test]
    fn multi_attach_names_pods_of_the_namespace_and_counts_the_others() {
        let users = [pod("default", "web-0"), pod("default", "web-1"), pod("other", "x")];
        assert_eq!(
            multi_attach_message("pvc-1", "default", &users),
            "Multi-Attach error for volume \"pvc-1\" Volume is already used by pod(s) web-0, web-1 and 1 pod(s) in different namespaces"
        );
        assert_eq!(
            multi_attach_message("pvc-1", "team", &users[..2]),
            "Multi-Attach error for volume \"pvc-1\" Volume is already used by 2 pod(s) in different namespaces"
        );
        assert_eq!(
            multi_attach_message("pvc-1", "default", &[]),
            "Multi-Attach error for volume \"pvc-1\" Volume is already exclusively attached to one node and can't be attached to another"
        );
    }

    #[test]
    fn a_deleted_pod_keeps_its_volumes_only_while_a_container_runs() {
        let mut p = json!({"metadata": {"name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"phase": "Running", "containerStatuses": [{"state": {"running": {}}}]}});
        assert!(pod_needs_volumes(&p));
        p["status"]["containerStatuses"] = json!([{"state": {"terminated": {"exitCode": 0}}}]);
        assert!(!pod_needs_volumes(&p));
        assert!(!pod_needs_volumes(&json!({"status": {"phase": "Succeeded"}})));
    }
}
