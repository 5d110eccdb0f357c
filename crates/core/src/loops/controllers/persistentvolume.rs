//! The PersistentVolume controller, kube-controller-manager's `persistentvolume-binder`
//! (`pkg/controller/volume/persistentvolume/pv_controller.go`, `pv_controller_base.go`,
//! `index.go`; the matching in `k8s.io/component-helpers/storage/volume`).
//!
//! It binds claims to volumes and keeps both phases: a claim without a volume gets the
//! smallest Available volume of its class, access modes and selector (`findBestMatchForClaim`),
//! or one pre-bound to it; a claim whose class binds `WaitForFirstConsumer` waits for the
//! scheduler's `volume.kubernetes.io/selected-node` before anything is provisioned; a claim
//! with a class and no volume is handed to the class's external provisioner (the claim gets
//! `volume.kubernetes.io/storage-provisioner`, the event `ExternalProvisioning`), whose
//! volume, created with a `claimRef`, this controller then binds. A volume whose claim is
//! gone is Released and reclaimed by its policy: Retain keeps it, Delete leaves it to the
//! external provisioner that made it. Claims and volumes are synced again every 15 s
//! (`--pvclaimbinder-sync-period`), which repeats the waiting events as upstream does.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, Request, Verb};
use crate::foundation::api::{self, get, get_array, get_str, rid, ResourceId};
use crate::foundation::sim::Millis;
use crate::foundation::sort::{CollectTree, Sort};
use crate::foundation::value::{json, Value};
use crate::loops::events::Source;
use crate::loops::informer::Informer;
use crate::loops::{req_as, Controller, Cx};
use std::collections::BTreeSet;

pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
pub const ANN_DYNAMICALLY_PROVISIONED: &str = "pv.kubernetes.io/provisioned-by";
pub const ANN_STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
pub const ANN_BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
const ANN_BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// `--pvclaimbinder-sync-period`.
pub const SYNC_PERIOD: Millis = 15_000;

const NAME: &str = "persistentvolume-controller";

// ---- pure helpers (`k8s.io/component-helpers/storage/volume/helpers.go`) ------------

/// `GetPersistentVolumeClaimClass`: the beta annotation, else `spec.storageClassName`.
pub fn claim_class(claim: &Value) -> &str {
    api::annotation(claim, ANN_BETA_STORAGE_CLASS).or_else(|| get_str(claim, &["spec", "storageClassName"])).unwrap_or("")
}

/// `GetPersistentVolumeClass`.
pub fn volume_class(volume: &Value) -> &str {
    api::annotation(volume, ANN_BETA_STORAGE_CLASS).or_else(|| get_str(volume, &["spec", "storageClassName"])).unwrap_or("")
}

/// `IsVolumeBoundToClaim`: the volume's claimRef names the claim (and its uid, if set).
pub fn is_volume_bound_to_claim(volume: &Value, claim: &Value) -> bool {
    let Some(r) = get(volume, &["spec", "claimRef"]).filter(|r| !r.is_null()) else { return false };
    if get_str(r, &["name"]).unwrap_or("") != api::name(claim) || get_str(r, &["namespace"]).unwrap_or("") != api::namespace(claim) {
        return false;
    }
    let uid = get_str(r, &["uid"]).unwrap_or("");
    uid.is_empty() || uid == api::uid(claim)
}

/// A request or capacity in bytes (milli-units rounded up).
fn storage_bytes(v: Option<&Value>) -> i64 {
    let Some(v) = v else { return 0 };
    let text = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
    crate::foundation::quantity::parse(text.trim()).map(|q| q.milli.saturating_add(999) / 1000).unwrap_or(0)
}

fn volume_mode(o: &Value) -> &str {
    get_str(o, &["spec", "volumeMode"]).unwrap_or("Filesystem")
}

fn access_modes(o: &Value, path: &[&str]) -> BTreeSet<String> {
    get_array(o, path).iter().filter_map(Value::as_str).map(str::to_string).collect_tree()
}

/// `CheckAccessModes`: the volume offers every mode the claim asks for.
pub fn check_access_modes(claim: &Value, volume: &Value) -> bool {
    access_modes(claim, &["spec", "accessModes"]).is_subset(&access_modes(volume, &["spec", "accessModes"]))
}

/// `checkVolumeSatisfyClaim`: why a volume the claim names cannot serve it.
pub fn check_volume_satisfy_claim(volume: &Value, claim: &Value) -> Result<(), String> {
    if api::is_deleting(volume) {
        return Err(format!("the volume is marked for deletion {:?}", api::name(volume)));
    }
    if storage_bytes(get(volume, &["spec", "capacity", "storage"])) < storage_bytes(get(claim, &["spec", "resources", "requests", "storage"])) {
        return Err("requested PV is too small".into());
    }
    if volume_class(volume) != claim_class(claim) {
        return Err("storageClassName does not match".into());
    }
    if volume_mode(volume) != volume_mode(claim) {
        return Err("incompatible volumeMode".into());
    }
    if !check_access_modes(claim, volume) {
        return Err("incompatible accessMode".into());
    }
    Ok(())
}

/// `findBestMatchForClaim` (`index.go`) over `FindMatchingVolume`: volumes are grouped by
/// their access modes; groups that offer all the claim's modes are tried fewest modes
/// first, and in each a volume pre-bound to the claim wins, else the smallest Available
/// one of the claim's class whose labels match its selector. Under delayed binding only a
/// pre-bound volume is taken here (the scheduler picks the others).
pub fn find_best_match<'a>(claim: &Value, volumes: &[&'a Value], delay_binding: bool) -> Option<&'a Value> {
    let wanted = access_modes(claim, &["spec", "accessModes"]);
    let mut groups: Vec<BTreeSet<String>> = volumes.iter().map(|v| access_modes(v, &["spec", "accessModes"])).filter(|m| wanted.is_subset(m)).collect();
    groups.sort_stable_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
    groups.dedup();
    let requested = storage_bytes(get(claim, &["spec", "resources", "requests", "storage"]));
    let class = claim_class(claim);
    let selector = get(claim, &["spec", "selector"]).filter(|s| !s.is_null());
    for group in groups {
        let mut smallest: Option<(&Value, i64)> = None;
        for v in volumes.iter().copied().filter(|v| access_modes(v, &["spec", "accessModes"]) == group) {
            if get(v, &["spec", "claimRef"]).is_some_and(|r| !r.is_null()) && !is_volume_bound_to_claim(v, claim) {
                continue;
            }
            let size = storage_bytes(get(v, &["spec", "capacity", "storage"]));
            if size < requested || volume_mode(v) != volume_mode(claim) || api::is_deleting(v) {
                continue;
            }
            if is_volume_bound_to_claim(v, claim) {
                return Some(v);
            }
            if delay_binding {
                continue;
            }
            if get_str(v, &["status", "phase"]) != Some("Available") {
                continue;
            }
            if selector.is_some() && !crate::foundation::labels::selector_matches(selector, api::labels(v)) {
                continue;
            }
            if volume_class(v) != class {
                continue;
            }
            if smallest.is_none_or(|(_, s)| s > size) {
                smallest = Some((v, size));
            }
        }
        if let Some((v, _)) = smallest {
            return Some(v);
        }
    }
    None
}

/// An `ObjectReference` to a claim (`reference.GetReference`), a volume's `claimRef`.
pub fn claim_ref(claim: &Value) -> Value {
    json!({
        "kind": "PersistentVolumeClaim",
        "namespace": api::namespace(claim),
        "name": api::name(claim),
        "uid": api::uid(claim),
        "apiVersion": "v1",
        "resourceVersion": api::resource_version(claim),
    })
}

/// The names of the claims a pod's volumes use.
pub fn pod_claims(pod: &Value) -> Vec<String> {
    get_array(pod, &["spec", "volumes"])
        .iter()
        .filter_map(|v| {
            get_str(v, &["persistentVolumeClaim", "claimName"])
                .map(str::to_string)
                .or_else(|| v.get("ephemeral").filter(|e| !e.is_null()).map(|_| format!("{}-{}", api::name(pod), get_str(v, &["name"]).unwrap_or(""))))
        })
        .collect()
}

/// `util.IsPodTerminated`.
pub fn pod_terminated(pod: &Value) -> bool {
    matches!(get_str(pod, &["status", "phase"]), Some("Succeeded" | "Failed"))
        || (api::is_deleting(pod)
            && crate::foundation::api::get_array(pod, &["status", "containerStatuses"]).iter().all(|c| get(c, &["state", "running"]).is_none()))
}

// ---- the controller ------------------------------------------------------------------

type Key = (String, String);

#[derive(Clone)]
pub struct PersistentVolumeController {
    user: UserInfo,
    src: Source,
    claims: Informer,
    volumes: Informer,
    classes: Informer,
    pods: Informer,
    claim_queue: BTreeSet<Key>,
    volume_queue: BTreeSet<String>,
    resync_armed: bool,
}

impl Default for PersistentVolumeController {
    fn default() -> Self {
        Self::new()
    }
}

impl PersistentVolumeController {
    pub fn new() -> Self {
        let user = UserInfo::controller("persistent-volume-binder");
        PersistentVolumeController {
            src: Source { component: NAME, host: String::new(), user: user.clone() },
            user,
            claims: Informer::new(rid::PVC),
            volumes: Informer::new(rid::PV),
            classes: Informer::new(rid::STORAGECLASS),
            pods: Informer::new(rid::POD),
            claim_queue: BTreeSet::new(),
            volume_queue: BTreeSet::new(),
            resync_armed: false,
        }
    }

    fn creds(&self) -> Credentials {
        Credentials::User(self.user.clone())
    }

    fn write(&self, cx: &mut Cx, req: Request) -> Option<Value> {
        cx.api.handle(req_as(req, NAME, &self.user)).ok().map(|o| (*o).clone())
    }

    fn event(&self, cx: &mut Cx, obj: &Value, ty: &str, reason: &str, message: &str) {
        cx.event(&self.src, obj, None, ty, reason, message, None);
    }

    fn is_delay_binding(&self, claim: &Value) -> bool {
        let class = claim_class(claim);
        !class.is_empty() && self.classes.get("", class).is_some_and(|c| get_str(c, &["volumeBindingMode"]) == Some("WaitForFirstConsumer"))
    }

    /// `updateClaimStatus`: the phase, and the volume's access modes and capacity (set when
    /// the claim becomes Bound) or none.
    fn update_claim_status(&self, cx: &mut Cx, claim: &Value, phase: &str, volume: Option<&Value>) -> Option<Value> {
        let mut new = claim.clone();
        api::set(&mut new, &["status", "phase"], json!(phase));
        match volume {
            None => {
                if let Some(st) = new.get_mut("status").and_then(Value::as_object_mut) {
                    st.remove("accessModes");
                    st.remove("capacity");
                }
            }
            Some(v) => {
                api::set(&mut new, &["status", "accessModes"], get(v, &["spec", "accessModes"]).cloned().unwrap_or(json!([])));
                if get_str(claim, &["status", "phase"]) != Some(phase) {
                    api::set(&mut new, &["status", "capacity"], get(v, &["spec", "capacity"]).cloned().unwrap_or(json!({})));
                }
            }
        }
        if new.get("status") == claim.get("status") {
            return Some(claim.clone());
        }
        let req = Request::update(rid::PVC, api::namespace(claim), api::name(claim), new, self.creds()).with_sub("status");
        self.write(cx, req)
    }

    fn update_volume_phase(&self, cx: &mut Cx, volume: &Value, phase: &str, message: &str) -> Option<Value> {
        if get_str(volume, &["status", "phase"]) == Some(phase) {
            return Some(volume.clone());
        }
        let mut new = volume.clone();
        api::set(&mut new, &["status", "phase"], json!(phase));
        if message.is_empty() {
            if let Some(st) = new.get_mut("status").and_then(Value::as_object_mut) {
                st.remove("message");
            }
        } else {
            api::set(&mut new, &["status", "message"], json!(message));
        }
        let req = Request::update(rid::PV, "", api::name(volume), new, self.creds()).with_sub("status");
        let out = self.write(cx, req);
        if out.is_some() {
            cx.trace(
                Flow::DeploymentController,
                "volume-phase",
                format!("PersistentVolume/{}", api::name(volume)),
                "ok",
                "",
                format!("volume {} entered phase {phase}", api::name(volume)),
            );
        }
        out
    }

    fn update_volume_phase_with_event(&self, cx: &mut Cx, volume: &Value, phase: &str, ty: &str, reason: &str, message: &str) {
        if get_str(volume, &["status", "phase"]) == Some(phase) {
            return;
        }
        if let Some(v) = self.update_volume_phase(cx, volume, phase, message) {
            self.event(cx, &v, ty, reason, message);
        }
    }

    /// `bind`: the volume first (claimRef, then phase Bound), then the claim (volumeName
    /// and annotations, then status Bound).
    fn bind(&self, cx: &mut Cx, volume: &Value, claim: &Value) -> Option<()> {
        let mut volume = volume.clone();
        let should_bind = !is_volume_bound_to_claim(&volume, claim) || get_str(&volume, &["spec", "claimRef", "uid"]).unwrap_or("").is_empty();
        if should_bind {
            let pre_bound = get(&volume, &["spec", "claimRef"]).is_some_and(|r| !r.is_null());
            let mut new = volume.clone();
            api::set(&mut new, &["spec", "claimRef"], claim_ref(claim));
            if !pre_bound && api::annotation(&new, ANN_BOUND_BY_CONTROLLER).is_none() {
                api::set(&mut new, &["metadata", "annotations", ANN_BOUND_BY_CONTROLLER], json!("yes"));
            }
            volume = self.write(cx, Request::update(rid::PV, "", api::name(&volume), new, self.creds()))?;
        }
        let volume = self.update_volume_phase(cx, &volume, "Bound", "")?;
        let mut claim = claim.clone();
        let mut new = claim.clone();
        let mut dirty = false;
        if get_str(&claim, &["spec", "volumeName"]) != Some(api::name(&volume)) {
            dirty = true;
            api::set(&mut new, &["spec", "volumeName"], json!(api::name(&volume)));
            if api::annotation(&new, ANN_BOUND_BY_CONTROLLER).is_none() {
                api::set(&mut new, &["metadata", "annotations", ANN_BOUND_BY_CONTROLLER], json!("yes"));
            }
        }
        if api::annotation(&new, ANN_BIND_COMPLETED).is_none() {
            dirty = true;
            api::set(&mut new, &["metadata", "annotations", ANN_BIND_COMPLETED], json!("yes"));
        }
        if dirty {
            claim = self.write(cx, Request::update(rid::PVC, api::namespace(&claim), api::name(&claim), new, self.creds()))?;
        }
        let was_bound = get_str(&claim, &["status", "phase"]) == Some("Bound");
        self.update_claim_status(cx, &claim, "Bound", Some(&volume))?;
        if !was_bound {
            cx.trace(
                Flow::DeploymentController,
                "bind",
                format!("PersistentVolumeClaim/{}/{}", api::namespace(&claim), api::name(&claim)),
                "ok",
                "",
                format!("claim {}/{} bound to volume {}", api::namespace(&claim), api::name(&claim), api::name(&volume)),
            );
        }
        Some(())
    }

    #[inline(never)]
    fn sync_claim(&mut self, cx: &mut Cx, claim: &Value) {
        if api::annotation(claim, ANN_BIND_COMPLETED).is_none() {
            self.sync_unbound_claim(cx, claim);
        } else {
            self.sync_bound_claim(cx, claim);
        }
    }

    fn sync_unbound_claim(&mut self, cx: &mut Cx, claim: &Value) {
        let volume_name = get_str(claim, &["spec", "volumeName"]).unwrap_or("").to_string();
        if volume_name.is_empty() {
            let delay = self.is_delay_binding(claim);
            let volumes: Vec<&Value> = self.volumes.list(None).map(|o| &**o).collect();
            if let Some(v) = find_best_match(claim, &volumes, delay).cloned() {
                self.bind(cx, &v, claim);
                return;
            }
            // `assignDefaultStorageClass`: a claim that names no class gets the default.
            if get(claim, &["spec", "storageClassName"]).is_none_or(Value::is_null) && api::annotation(claim, ANN_BETA_STORAGE_CLASS).is_none() {
                if let Some(class) = crate::apiserver::admission::default_storage_class(&cx.api.store) {
                    let mut new = claim.clone();
                    api::set(&mut new, &["spec", "storageClassName"], json!(api::name(&class)));
                    self.write(cx, Request::update(rid::PVC, api::namespace(claim), api::name(claim), new, self.creds()));
                    return;
                }
            }
            let class = claim_class(claim).to_string();
            if delay && api::annotation(claim, ANN_SELECTED_NODE).is_none() {
                self.emit_for_unbound_delay_binding(cx, claim);
            } else if !class.is_empty() {
                self.provision_claim(cx, claim, &class);
                return;
            } else {
                self.event(cx, claim, "Normal", "FailedBinding", "no persistent volumes available for this claim and no storage class is set");
            }
            self.update_claim_status(cx, claim, "Pending", None);
            return;
        }
        let Some(volume) = self.volumes.get("", &volume_name).map(|v| (**v).clone()) else {
            self.update_claim_status(cx, claim, "Pending", None);
            return;
        };
        if get(&volume, &["spec", "claimRef"]).is_none_or(Value::is_null) {
            match check_volume_satisfy_claim(&volume, claim) {
                Err(e) => {
                    self.event(cx, claim, "Warning", "VolumeMismatch", &format!("Cannot bind to requested volume {:?}: {e}", api::name(&volume)));
                    self.update_claim_status(cx, claim, "Pending", None);
                }
                Ok(()) => {
                    self.bind(cx, &volume, claim);
                }
            }
        } else if is_volume_bound_to_claim(&volume, claim) {
            self.bind(cx, &volume, claim);
        } else {
            self.event(cx, claim, "Warning", "FailedBinding", &format!("volume {:?} already bound to a different claim.", api::name(&volume)));
            if api::annotation(claim, ANN_BOUND_BY_CONTROLLER).is_none() {
                self.update_claim_status(cx, claim, "Pending", None);
            }
        }
    }

    /// `emitEventForUnboundDelayBindingClaim`.
    fn emit_for_unbound_delay_binding(&self, cx: &mut Cx, claim: &Value) {
        let key = api::name(claim);
        let pods: Vec<String> = self
            .pods
            .list(Some(api::namespace(claim)))
            .filter(|p| !pod_terminated(p) && get_str(p, &["spec", "nodeName"]).unwrap_or("").is_empty() && pod_claims(p).iter().any(|c| c == key))
            .map(|p| api::name(p).to_string())
            .collect();
        let (reason, message) = match pods.len() {
            0 => ("WaitForFirstConsumer", "waiting for first consumer to be created before binding".to_string()),
            1 => ("WaitForPodScheduled", format!("waiting for pod {} to be scheduled", pods[0])),
            _ => ("WaitForPodScheduled", format!("waiting for pods {} to be scheduled", pods.join(","))),
        };
        self.event(cx, claim, "Normal", reason, &message);
    }

    /// `provisionClaim` for an external provisioner (`provisionClaimOperationExternal`):
    /// annotate the claim with the class's provisioner and say who is expected to act.
    fn provision_claim(&self, cx: &mut Cx, claim: &Value, class: &str) {
        let Some(sc) = self.classes.get("", class).cloned() else {
            self.event(cx, claim, "Warning", "ProvisioningFailed", &format!("storageclass.storage.k8s.io {class:?} not found"));
            return;
        };
        let provisioner = get_str(&sc, &["provisioner"]).unwrap_or("").to_string();
        if provisioner.starts_with("kubernetes.io/") {
            // No in-tree volume plugin provisions in kubeloop.
            self.event(cx, claim, "Warning", "ProvisioningFailed", &format!("no volume plugin matched name: {provisioner}"));
            return;
        }
        let mut claim = claim.clone();
        if api::annotation(&claim, ANN_STORAGE_PROVISIONER) != Some(&provisioner) || api::annotation(&claim, ANN_BETA_STORAGE_PROVISIONER) != Some(&provisioner)
        {
            let mut new = claim.clone();
            api::set(&mut new, &["metadata", "annotations", ANN_STORAGE_PROVISIONER], json!(provisioner));
            api::set(&mut new, &["metadata", "annotations", ANN_BETA_STORAGE_PROVISIONER], json!(provisioner));
            match self.write(cx, Request::update(rid::PVC, api::namespace(&claim), api::name(&claim), new, self.creds())) {
                Some(c) => claim = c,
                None => return,
            }
        }
        let msg = format!(
            "Waiting for a volume to be created either by the external provisioner '{provisioner}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered."
        );
        self.event(cx, &claim, "Normal", "ExternalProvisioning", &msg);
    }

    fn sync_bound_claim(&mut self, cx: &mut Cx, claim: &Value) {
        let volume_name = get_str(claim, &["spec", "volumeName"]).unwrap_or("");
        if volume_name.is_empty() {
            self.claim_lost(cx, claim, "ClaimLost", "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!");
            return;
        }
        let Some(volume) = self.volumes.get("", volume_name).map(|v| (**v).clone()) else {
            self.claim_lost(cx, claim, "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!");
            return;
        };
        let ref_uid = get_str(&volume, &["spec", "claimRef", "uid"]);
        if get(&volume, &["spec", "claimRef"]).is_none_or(Value::is_null) || ref_uid == Some(api::uid(claim)) {
            self.bind(cx, &volume, claim);
        } else {
            self.claim_lost(cx, claim, "ClaimMisbound", "Two claims are bound to the same volume, this one is bound incorrectly");
        }
    }

    /// `updateClaimStatusWithEvent` to Lost.
    fn claim_lost(&self, cx: &mut Cx, claim: &Value, reason: &str, message: &str) {
        if get_str(claim, &["status", "phase"]) == Some("Lost") {
            return;
        }
        if let Some(c) = self.update_claim_status(cx, claim, "Lost", None) {
            self.event(cx, &c, "Warning", reason, message);
        }
    }

    #[inline(never)]
    fn sync_volume(&mut self, cx: &mut Cx, volume: &Value) {
        let Some(r) = get(volume, &["spec", "claimRef"]).filter(|r| !r.is_null()) else {
            self.update_volume_phase(cx, volume, "Available", "");
            return;
        };
        let uid = get_str(r, &["uid"]).unwrap_or("");
        if uid.is_empty() {
            // Pre-bound to a claim by name: the claim's sync binds it.
            self.update_volume_phase(cx, volume, "Available", "");
            return;
        }
        let (ns, name) = (get_str(r, &["namespace"]).unwrap_or("").to_string(), get_str(r, &["name"]).unwrap_or("").to_string());
        let mut claim = self.claims.get(&ns, &name).map(|c| (**c).clone());
        if claim.is_none() && !matches!(get_str(volume, &["status", "phase"]), Some("Released" | "Failed")) {
            // The claim may be newer than the cache: ask the API server.
            let get = Request::new(Verb::Get, rid::PVC, &ns, &name, self.creds());
            claim = cx.api.handle(req_as(get, NAME, &self.user)).ok().map(|c| (*c).clone());
        }
        if claim.as_ref().is_some_and(|c| api::uid(c) != uid) {
            claim = None;
        }
        match claim {
            None => {
                let mut volume = volume.clone();
                if !matches!(get_str(&volume, &["status", "phase"]), Some("Released" | "Failed")) {
                    match self.update_volume_phase(cx, &volume, "Released", "") {
                        Some(v) => volume = v,
                        None => return,
                    }
                }
                self.reclaim_volume(cx, &volume);
            }
            Some(c) if get_str(&c, &["spec", "volumeName"]).unwrap_or("").is_empty() => {
                // Bound volume, Pending claim: the claim's sync finishes the binding.
                self.claim_queue.insert(api::queue_key(&c));
            }
            Some(c) if get_str(&c, &["spec", "volumeName"]) == Some(api::name(volume)) => {
                self.update_volume_phase(cx, volume, "Bound", "");
            }
            Some(_) => {
                if api::annotation(volume, ANN_DYNAMICALLY_PROVISIONED).is_some()
                    && get_str(volume, &["spec", "persistentVolumeReclaimPolicy"]) == Some("Delete")
                {
                    let mut volume = volume.clone();
                    if !matches!(get_str(&volume, &["status", "phase"]), Some("Released" | "Failed")) {
                        match self.update_volume_phase(cx, &volume, "Released", "") {
                            Some(v) => volume = v,
                            None => return,
                        }
                    }
                    self.reclaim_volume(cx, &volume);
                } else {
                    self.unbind_volume(cx, volume);
                }
            }
        }
    }

    /// `unbindVolume`: roll back a binding the claim did not take.
    fn unbind_volume(&self, cx: &mut Cx, volume: &Value) {
        let mut new = volume.clone();
        if api::annotation(volume, ANN_BOUND_BY_CONTROLLER).is_some() {
            if let Some(m) = new.get_mut("spec").and_then(Value::as_object_mut) {
                m.remove("claimRef");
            }
            if let Some(a) = new.get_mut("metadata").and_then(|m| m.get_mut("annotations")).and_then(Value::as_object_mut) {
                a.remove(ANN_BOUND_BY_CONTROLLER);
            }
        } else {
            api::set(&mut new, &["spec", "claimRef", "uid"], json!(""));
        }
        if let Some(v) = self.write(cx, Request::update(rid::PV, "", api::name(volume), new, self.creds())) {
            self.update_volume_phase(cx, &v, "Available", "");
        }
    }

    /// `reclaimVolume`: Retain keeps the volume; Delete leaves a dynamically provisioned
    /// volume to its external provisioner (no in-tree deleter runs in kubeloop).
    fn reclaim_volume(&self, cx: &mut Cx, volume: &Value) {
        match get_str(volume, &["spec", "persistentVolumeReclaimPolicy"]).unwrap_or("") {
            "Retain" => {}
            "Delete" => {
                let external = api::annotation(volume, ANN_DYNAMICALLY_PROVISIONED).is_some_and(|p| !p.starts_with("kubernetes.io/"));
                if !external {
                    let msg = format!("error getting deleter volume plugin for volume {:?}: no deletable volume plugin matched", api::name(volume));
                    self.update_volume_phase_with_event(cx, volume, "Failed", "Warning", "VolumeFailedDelete", &msg);
                }
            }
            "Recycle" => {
                self.update_volume_phase_with_event(cx, volume, "Failed", "Warning", "VolumeFailedRecycle", "No recycler plugin found for the volume!")
            }
            _ => self.update_volume_phase_with_event(
                cx,
                volume,
                "Failed",
                "Warning",
                "VolumeUnknownReclaimPolicy",
                "Volume has unrecognized PersistentVolumeReclaimPolicy",
            ),
        }
    }

    fn needs_resync(&self) -> bool {
        self.claims.list(None).any(|c| get_str(c, &["status", "phase"]) != Some("Bound") && !api::is_deleting(c))
    }
}

impl Controller for PersistentVolumeController {
    fn name(&self) -> &'static str {
        NAME
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::PVC, rid::PV, rid::STORAGECLASS, rid::POD]
    }
    fn run(&mut self, cx: &mut Cx) {
        for d in self.claims.sync(&cx.api.store).deltas {
            if d.kind != EventType::Deleted {
                self.claim_queue.insert(api::queue_key(&d.object));
            }
            // A claim's volume learns of the claim's changes (its deletion above all).
            if let Some(v) = get_str(&d.object, &["spec", "volumeName"]).filter(|v| !v.is_empty()) {
                self.volume_queue.insert(v.to_string());
            }
        }
        for d in self.volumes.sync(&cx.api.store).deltas {
            if d.kind != EventType::Deleted {
                self.volume_queue.insert(api::name(&d.object).to_string());
            }
        }
        let class_changed = !self.classes.sync(&cx.api.store).deltas.is_empty();
        let mut pod_claims_changed = Vec::new();
        for d in self.pods.sync(&cx.api.store).deltas {
            for c in pod_claims(&d.object) {
                pod_claims_changed.push((api::namespace(&d.object).to_string(), c));
            }
        }
        // Pods matter only to claims waiting for their first consumer (the event names them).
        for k in pod_claims_changed {
            if self.claims.get(&k.0, &k.1).is_some_and(|c| api::annotation(c, ANN_BIND_COMPLETED).is_none()) {
                self.claim_queue.insert(k);
            }
        }
        if class_changed {
            let pending: Vec<Key> = self.claims.list(None).filter(|c| api::annotation(c, ANN_BIND_COMPLETED).is_none()).map(|c| api::queue_key(c)).collect();
            self.claim_queue.extend(pending);
        }
        // Volumes first, as the controller's volume worker usually wins the race to a fresh
        // volume (a new one becomes Available before a claim looks for it).
        while let Some(name) = self.volume_queue.pop_first() {
            if let Some(v) = self.volumes.get("", &name).map(|v| (**v).clone()) {
                self.sync_volume(cx, &v);
            }
            self.volumes.sync(&cx.api.store);
        }
        while let Some(k) = self.claim_queue.pop_first() {
            self.claims.sync(&cx.api.store);
            self.volumes.sync(&cx.api.store);
            if let Some(c) = self.claims.get(&k.0, &k.1).map(|c| (**c).clone()) {
                self.sync_claim(cx, &c);
            }
        }
        if !self.resync_armed && self.needs_resync() {
            self.resync_armed = true;
            cx.every(SYNC_PERIOD, "resync");
        }
    }
    fn timer(&mut self, cx: &mut Cx, key: &str) {
        if key == "resync" {
            self.resync_armed = false;
            self.claims.sync(&cx.api.store);
            let keys: Vec<Key> = self.claims.list(None).filter(|c| get_str(c, &["status", "phase"]) != Some("Bound")).map(|c| api::queue_key(c)).collect();
            self.claim_queue.extend(keys);
            let released: Vec<String> = self
                .volumes
                .list(None)
                .filter(|v| matches!(get_str(v, &["status", "phase"]), Some("Released" | "Failed")))
                .map(|v| api::name(v).to_string())
                .collect();
            self.volume_queue.extend(released);
        }
        self.run(cx);
    }
    fn busy(&self, _now: Millis) -> bool {
        !self.claim_queue.is_empty() || !self.volume_queue.is_empty()
    }
    fn restart(&mut self) {
        *self = Self::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pv(name: &str, size: &str, class: &str, modes: &[&str], phase: &str) -> Value {
        json!({"metadata": {"name": name, "labels": {"tier": "fast"}}, "spec": {"capacity": {"storage": size}, "storageClassName": class, "accessModes": modes, "csi": {"driver": "d", "volumeHandle": name}}, "status": {"phase": phase}})
    }
    fn pvc(size: &str, class: &str, modes: &[&str]) -> Value {
        json!({"metadata": {"name": "data", "namespace": "default", "uid": "u1"}, "spec": {"resources": {"requests": {"storage": size}}, "storageClassName": class, "accessModes": modes}})
    }

    #[test]
    fn the_smallest_available_volume_of_the_class_wins() {
        let vols = [
            pv("big", "10Gi", "manual", &["ReadWriteOnce"], "Available"),
            pv("small", "2Gi", "manual", &["ReadWriteOnce"], "Available"),
            pv("tiny", "500Mi", "manual", &["ReadWriteOnce"], "Available"),
            pv("other-class", "1Gi", "fast", &["ReadWriteOnce"], "Available"),
            pv("pending", "1Gi", "manual", &["ReadWriteOnce"], "Pending"),
        ];
        let refs: Vec<&Value> = vols.iter().collect();
        let m = find_best_match(&pvc("1Gi", "manual", &["ReadWriteOnce"]), &refs, false).map(api::name);
        assert_eq!(m, Some("small"));
        assert_eq!(find_best_match(&pvc("20Gi", "manual", &["ReadWriteOnce"]), &refs, false), None, "nothing is large enough");
        assert_eq!(find_best_match(&pvc("1Gi", "manual", &["ReadWriteMany"]), &refs, false), None, "no volume offers RWX");
        assert_eq!(find_best_match(&pvc("1Gi", "manual", &["ReadWriteOnce"]), &refs, true), None, "delayed binding leaves the choice to the scheduler");
    }

    #[test]
    fn fewer_access_modes_are_preferred_and_pre_binding_wins() {
        let mut vols = vec![pv("rwx", "1Gi", "", &["ReadWriteOnce", "ReadWriteMany"], "Available"), pv("rwo", "5Gi", "", &["ReadWriteOnce"], "Available")];
        let claim = pvc("1Gi", "", &["ReadWriteOnce"]);
        assert_eq!(find_best_match(&claim, &vols.iter().collect::<Vec<_>>(), false).map(api::name), Some("rwo"));
        vols.push(pv("mine", "9Gi", "", &["ReadWriteOnce", "ReadWriteMany"], "Pending"));
        api::set(&mut vols[2], &["spec", "claimRef"], json!({"namespace": "default", "name": "data"}));
        assert_eq!(find_best_match(&claim, &vols.iter().collect::<Vec<_>>(), true).map(api::name), Some("mine"), "pre-bound, even under delayed binding");
        api::set(&mut vols[2], &["spec", "claimRef", "uid"], json!("other"));
        assert_eq!(find_best_match(&claim, &vols.iter().collect::<Vec<_>>(), false).map(api::name), Some("rwo"), "bound to another claim");
    }

    #[test]
    fn a_selector_filters_by_labels() {
        let vols = [pv("a", "1Gi", "", &["ReadWriteOnce"], "Available")];
        let mut claim = pvc("1Gi", "", &["ReadWriteOnce"]);
        api::set(&mut claim, &["spec", "selector"], json!({"matchLabels": {"tier": "slow"}}));
        assert_eq!(find_best_match(&claim, &vols.iter().collect::<Vec<_>>(), false), None);
        api::set(&mut claim, &["spec", "selector"], json!({"matchLabels": {"tier": "fast"}}));
        assert!(find_best_match(&claim, &vols.iter().collect::<Vec<_>>(), false).is_some());
    }

    #[test]
    fn a_named_volume_is_checked_against_the_claim() {
        let v = pv("a", "1Gi", "manual", &["ReadWriteOnce"], "Available");
        assert_eq!(check_volume_satisfy_claim(&v, &pvc("2Gi", "manual", &["ReadWriteOnce"])), Err("requested PV is too small".into()));
        assert_eq!(check_volume_satisfy_claim(&v, &pvc("1Gi", "fast", &["ReadWriteOnce"])), Err("storageClassName does not match".into()));
        assert_eq!(check_volume_satisfy_claim(&v, &pvc("1Gi", "manual", &["ReadOnlyMany"])), Err("incompatible accessMode".into()));
        assert_eq!(check_volume_satisfy_claim(&v, &pvc("1Gi", "manual", &["ReadWriteOnce"])), Ok(()));
    }
}
