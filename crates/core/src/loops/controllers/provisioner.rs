//! The controller side of the simulated CSI drivers: one external-provisioner for all of
//! them (kubernetes-csi/external-provisioner `pkg/controller/controller.go` over
//! sig-storage-lib-external-provisioner v13 `controller/controller.go`).
//!
//! A claim is provisioned when the PV controller has annotated it with
//! `volume.kubernetes.io/storage-provisioner` naming a known driver, it has no volume, and
//! (for a `WaitForFirstConsumer` class) the scheduler has chosen its node. The event
//! `Provisioning` is followed, `provision_ms` later, by a PersistentVolume named
//! `pvc-<claim uid>` and `ProvisioningSucceeded`; the PV controller then binds the two.
//! The volume is zonal when the driver is: its node affinity is the selected node's zone,
//! or for an immediately bound claim a zone chosen from the claim's uid among the nodes'
//! zones. While a driver is down (`Fault::StorageDriverDown`) CreateVolume and DeleteVolume
//! fail with gRPC `Unavailable`, reported as upstream reports them and retried with the
//! sidecar's exponential back-off (1 s doubling to 5 min, `--retry-interval-start/max`).
//! Released volumes of a Delete class are deleted (DeleteVolume takes `provision_ms` too),
//! then the PV object, then the provisioner's finalizer.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, PatchType, Request, Verb};
use crate::foundation::api::{self, get, get_array, get_str, rid, ResourceId};
use crate::foundation::sim::Millis;
use crate::foundation::sort::CollectTree;
use crate::foundation::value::{json, Value};
use crate::loops::controllers::persistentvolume::{
    claim_class, claim_ref, ANN_BETA_STORAGE_PROVISIONER, ANN_DYNAMICALLY_PROVISIONED, ANN_SELECTED_NODE, ANN_STORAGE_PROVISIONER,
};
use crate::loops::csi::{CsiDriverSpec, ZONE_KEY};
use crate::loops::events::Source;
use crate::loops::informer::Informer;
use crate::loops::{req_as, Controller, Cx, Fault};
use std::collections::{BTreeMap, BTreeSet};

/// The finalizer the provisioner puts on the volumes it makes (`AddFinalizer(true)`).
pub const FINALIZER_PV: &str = "external-provisioner.volume.kubernetes.io/finalizer";
const PROVISIONER_ID_KEY: &str = "storage.kubernetes.io/csiProvisionerIdentity";
const NAME: &str = "csi-provisioner";
/// `--retry-interval-start` and `--retry-interval-max`.
const RETRY_START: Millis = 1_000;
const RETRY_MAX: Millis = 300_000;
/// What a call to a driver that is down returns (the sidecar cannot reach its socket).
pub const UNAVAILABLE: &str =
    "rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial unix /csi/csi.sock: connect: connection refused\"";

/// The exponential failure back-off of the sidecar's work queue after `failures` failures.
pub fn backoff(failures: u32) -> Millis {
    RETRY_START.saturating_mul(1u64 << failures.saturating_sub(1).min(20)).min(RETRY_MAX)
}

/// The zone a zonal volume is created in: the selected node's, else one of the nodes'
/// zones chosen by the claim's uid (a stand-in for the driver's pick among all topologies).
pub fn pick_zone(selected_node_zone: Option<&str>, zones: &BTreeSet<String>, claim_uid: &str) -> Option<String> {
    if let Some(z) = selected_node_zone {
        return Some(z.to_string());
    }
    if zones.is_empty() {
        return None;
    }
    let h = claim_uid.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    zones.iter().nth((h % zones.len() as u64) as usize).cloned()
}

/// The PersistentVolume external-provisioner writes for a claim.
pub fn provisioned_volume(driver: &CsiDriverSpec, identity: &str, claim: &Value, class: &Value, zone: Option<&str>) -> Value {
    let name = format!("pvc-{}", api::uid(claim));
    let fs_type = get_str(class, &["parameters", "csi.storage.k8s.io/fstype"]).unwrap_or("ext4");
    let mut attrs = json!({PROVISIONER_ID_KEY: identity});
    for (k, v) in get(class, &["parameters"]).and_then(Value::as_object).into_iter().flatten() {
        if !k.starts_with("csi.storage.k8s.io/") {
            attrs[k.as_str()] = v.clone();
        }
    }
    let mut pv = json!({
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": name,
            "annotations": {
                ANN_DYNAMICALLY_PROVISIONED: driver.name,
                "volume.kubernetes.io/provisioner-deletion-secret-name": "",
                "volume.kubernetes.io/provisioner-deletion-secret-namespace": "",
            },
            "finalizers": [FINALIZER_PV],
        },
        "spec": {
            "accessModes": get(claim, &["spec", "accessModes"]).cloned().unwrap_or(json!([])),
            "capacity": {"storage": get(claim, &["spec", "resources", "requests", "storage"]).cloned().unwrap_or(json!("0"))},
            "csi": {"driver": driver.name, "volumeHandle": format!("vol-{}", api::uid(claim)), "fsType": fs_type, "volumeAttributes": attrs},
            "persistentVolumeReclaimPolicy": get_str(class, &["reclaimPolicy"]).unwrap_or("Delete"),
            "storageClassName": claim_class(claim),
            "volumeMode": get_str(claim, &["spec", "volumeMode"]).unwrap_or("Filesystem"),
            "claimRef": claim_ref(claim),
        },
    });
    if let Some(m) = get(class, &["mountOptions"]).filter(|m| !m.is_null()) {
        api::set(&mut pv, &["spec", "mountOptions"], m.clone());
    }
    if let (true, Some(z)) = (driver.zonal, zone) {
        api::set(
            &mut pv,
            &["spec", "nodeAffinity"],
            json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE_KEY, "operator": "In", "values": [z]}]}]}}),
        );
    }
    pv
}

#[derive(Clone)]
pub struct CsiProvisioner {
    user: UserInfo,
    drivers: Vec<CsiDriverSpec>,
    /// Each driver's event source (`<driver>_<host>`, as the sidecar names its recorder).
    sources: BTreeMap<String, Source>,
    claims: Informer,
    volumes: Informer,
    classes: Informer,
    nodes: Informer,
    down: crate::loops::csi::DownDrivers,
    /// CreateVolume calls in flight: claim uid -> claim key.
    creating: BTreeMap<String, (String, String)>,
    /// DeleteVolume calls in flight, by volume name.
    deleting: BTreeSet<String>,
    /// Failures so far and the time of the next attempt, by claim uid or volume name.
    failures: BTreeMap<String, (u32, Millis)>,
    claim_queue: BTreeSet<(String, String)>,
    volume_queue: BTreeSet<String>,
}

impl CsiProvisioner {
    pub fn new(drivers: &[CsiDriverSpec]) -> Self {
        let user = UserInfo::controller(crate::apiserver::rbac::CSI_PROVISIONER_ACCOUNT);
        let sources = crate::loops::csi::sidecar_sources(drivers, &user, |d| format!("{d}_csi-controller-0"));
        CsiProvisioner {
            user,
            drivers: drivers.to_vec(),
            sources,
            claims: Informer::new(rid::PVC),
            volumes: Informer::new(rid::PV),
            classes: Informer::new(rid::STORAGECLASS),
            nodes: Informer::new(rid::NODE),
            down: Default::default(),
            creating: BTreeMap::new(),
            deleting: BTreeSet::new(),
            failures: BTreeMap::new(),
            claim_queue: BTreeSet::new(),
            volume_queue: BTreeSet::new(),
        }
    }

    fn driver(&self, name: &str) -> Option<&CsiDriverSpec> {
        self.drivers.iter().find(|d| d.name == name)
    }

    fn identity(&self, d: &CsiDriverSpec) -> String {
        // The sidecar's start in Unix milliseconds, a number, the driver.
        format!("{}-8081-{}", crate::foundation::sim::epoch().saturating_mul(1000), d.name)
    }

    fn creds(&self) -> Credentials {
        Credentials::User(self.user.clone())
    }

    fn event(&self, cx: &mut Cx, driver: &str, obj: &Value, ty: &str, reason: &str, message: &str) {
        if let Some(src) = self.sources.get(driver) {
            cx.event(src, obj, None, ty, reason, message, None);
        }
    }

    /// `shouldProvision`: the driver a claim waits for, if this provisioner should act.
    fn should_provision(&self, claim: &Value) -> Option<String> {
        if !get_str(claim, &["spec", "volumeName"]).unwrap_or("").is_empty() || api::is_deleting(claim) {
            return None;
        }
        let p = api::annotation(claim, ANN_STORAGE_PROVISIONER).or_else(|| api::annotation(claim, ANN_BETA_STORAGE_PROVISIONER))?;
        self.driver(p)?;
        let class = self.classes.get("", claim_class(claim))?;
        if get_str(class, &["volumeBindingMode"]) == Some("WaitForFirstConsumer") && api::annotation(claim, ANN_SELECTED_NODE).unwrap_or("").is_empty() {
            return None;
        }
        Some(p.to_string())
    }

    fn waiting(&self, key: &str, now: Millis) -> bool {
        self.failures.get(key).is_some_and(|(_, at)| *at > now)
    }

    fn fail(&mut self, cx: &mut Cx, key: &str, timer: String) {
        let n = self.failures.get(key).map(|(n, _)| n + 1).unwrap_or(1);
        let delay = backoff(n);
        self.failures.insert(key.to_string(), (n, cx.now + delay));
        cx.every(delay, timer);
    }

    #[inline(never)]
    fn process_claim(&mut self, cx: &mut Cx, key: &(String, String)) {
        let Some(claim) = self.claims.get(&key.0, &key.1).map(|c| (**c).clone()) else { return };
        let Some(driver) = self.should_provision(&claim) else { return };
        let uid = api::uid(&claim).to_string();
        if self.creating.contains_key(&uid) || self.waiting(&uid, cx.now) || self.volumes.get("", &format!("pvc-{uid}")).is_some() {
            return;
        }
        self.event(cx, &driver, &claim, "Normal", "Provisioning", &format!("External provisioner is provisioning volume for claim \"{}/{}\"", key.0, key.1));
        if self.down.contains(&driver) {
            self.event(cx, &driver, &claim, "Warning", "ProvisioningFailed", UNAVAILABLE);
            self.fail(cx, &uid, format!("retry/{}/{}", key.0, key.1));
            return;
        }
        let ms = self.driver(&driver).map(|d| d.provision_ms).unwrap_or(0);
        self.creating.insert(uid.clone(), key.clone());
        cx.after(ms, format!("create/{uid}"));
        cx.trace(
            Flow::DeploymentController,
            "create-volume",
            format!("PersistentVolumeClaim/{}/{}", key.0, key.1),
            "ok",
            "",
            format!("{driver}: CreateVolume pvc-{uid} ({ms} ms)"),
        );
    }

    /// CreateVolume returned: write the PersistentVolume.
    fn created(&mut self, cx: &mut Cx, uid: &str) {
        let Some(key) = self.creating.remove(uid) else { return };
        self.claims.sync(&cx.api.store);
        self.volumes.sync(&cx.api.store);
        let Some(claim) = self.claims.get(&key.0, &key.1).filter(|c| api::uid(c) == uid).map(|c| (**c).clone()) else { return };
        let Some(driver_name) = self.should_provision(&claim) else { return };
        if self.down.contains(&driver_name) {
            self.event(cx, &driver_name, &claim, "Warning", "ProvisioningFailed", UNAVAILABLE);
            self.fail(cx, uid, format!("retry/{}/{}", key.0, key.1));
            return;
        }
        let Some(driver) = self.driver(&driver_name).cloned() else { return };
        let Some(class) = self.classes.get("", claim_class(&claim)).map(|c| (**c).clone()) else { return };
        let zones: BTreeSet<String> = self.nodes.list(None).filter_map(|n| api::label(n, ZONE_KEY)).map(str::to_string).collect_tree();
        let selected = api::annotation(&claim, ANN_SELECTED_NODE).and_then(|n| self.nodes.get("", n)).and_then(|n| api::label(n, ZONE_KEY)).map(str::to_string);
        let zone = pick_zone(selected.as_deref(), &zones, uid);
        let pv = provisioned_volume(&driver, &self.identity(&driver), &claim, &class, zone.as_deref());
        let name = api::name(&pv).to_string();
        let req = Request::create(rid::PV, "", pv, self.creds());
        match cx.api.handle(req_as(req, NAME, &self.user)) {
            Ok(_) => {
                self.failures.remove(uid);
                self.event(cx, &driver_name, &claim, "Normal", "ProvisioningSucceeded", &format!("Successfully provisioned volume {name}"));
            }
            Err(s) if s.code == 409 => {
                self.failures.remove(uid);
            }
            Err(s) => {
                self.event(cx, &driver_name, &claim, "Warning", "ProvisioningFailed", &s.message);
                self.fail(cx, uid, format!("retry/{}/{}", key.0, key.1));
            }
        }
    }

    /// `shouldDelete`: a Released volume of the Delete policy that a known driver made.
    fn should_delete(&self, v: &Value) -> Option<String> {
        let driver = api::annotation(v, ANN_DYNAMICALLY_PROVISIONED)?;
        self.driver(driver)?;
        (get_str(v, &["status", "phase"]) == Some("Released") && get_str(v, &["spec", "persistentVolumeReclaimPolicy"]) == Some("Delete"))
            .then(|| driver.to_string())
    }

    #[inline(never)]
    fn process_volume(&mut self, cx: &mut Cx, name: &str) {
        let Some(v) = self.volumes.get("", name).map(|v| (**v).clone()) else { return };
        let Some(driver) = self.should_delete(&v) else { return };
        if self.deleting.contains(name) || self.waiting(name, cx.now) {
            return;
        }
        if self.down.contains(&driver) {
            self.event(cx, &driver, &v, "Warning", "VolumeFailedDelete", UNAVAILABLE);
            self.fail(cx, name, format!("retry-delete/{name}"));
            return;
        }
        let ms = self.driver(&driver).map(|d| d.provision_ms).unwrap_or(0);
        self.deleting.insert(name.to_string());
        cx.after(ms, format!("delete/{name}"));
        cx.trace(Flow::DeploymentController, "delete-volume", format!("PersistentVolume/{name}"), "ok", "", format!("{driver}: DeleteVolume {name} ({ms} ms)"));
    }

    /// DeleteVolume returned: delete the PersistentVolume, then drop the finalizer.
    fn deleted(&mut self, cx: &mut Cx, name: &str) {
        if !self.deleting.remove(name) {
            return;
        }
        self.volumes.sync(&cx.api.store);
        let Some(v) = self.volumes.get("", name).map(|v| (**v).clone()) else { return };
        let Some(driver) = self.should_delete(&v) else { return };
        if self.down.contains(&driver) {
            self.event(cx, &driver, &v, "Warning", "VolumeFailedDelete", UNAVAILABLE);
            self.fail(cx, name, format!("retry-delete/{name}"));
            return;
        }
        self.failures.remove(name);
        let del = Request::delete(rid::PV, "", name, self.creds());
        if cx.api.handle(req_as(del, NAME, &self.user)).is_err() {
            return;
        }
        let get = Request::new(Verb::Get, rid::PV, "", name, self.creds());
        let Ok(fresh) = cx.api.handle(req_as(get, NAME, &self.user)) else { return };
        let rest: Vec<Value> = get_array(&fresh, &["metadata", "finalizers"]).iter().filter(|f| f.as_str() != Some(FINALIZER_PV)).cloned().collect();
        if rest.len() != get_array(&fresh, &["metadata", "finalizers"]).len() {
            let patch = json!({"metadata": {"finalizers": rest, "resourceVersion": api::resource_version(&fresh)}});
            let req = Request::patch(rid::PV, "", name, PatchType::Merge, patch, self.creds());
            let _ = cx.api.handle(req_as(req, NAME, &self.user));
        }
    }
}

impl Controller for CsiProvisioner {
    fn name(&self) -> &'static str {
        NAME
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::PVC, rid::PV, rid::STORAGECLASS]
    }
    fn run(&mut self, cx: &mut Cx) {
        self.nodes.sync(&cx.api.store);
        let class_changed = !self.classes.sync(&cx.api.store).deltas.is_empty();
        for d in self.claims.sync(&cx.api.store).deltas {
            if d.kind != EventType::Deleted {
                self.claim_queue.insert(api::queue_key(&d.object));
            }
        }
        for d in self.volumes.sync(&cx.api.store).deltas {
            if d.kind != EventType::Deleted {
                self.volume_queue.insert(api::name(&d.object).to_string());
            }
        }
        if class_changed {
            let all: Vec<(String, String)> = self.claims.list(None).map(|c| api::queue_key(c)).collect();
            self.claim_queue.extend(all);
        }
        while let Some(k) = self.claim_queue.pop_first() {
            self.process_claim(cx, &k);
        }
        while let Some(n) = self.volume_queue.pop_first() {
            self.process_volume(cx, &n);
        }
    }
    fn timer(&mut self, cx: &mut Cx, key: &str) {
        if let Some(uid) = key.strip_prefix("create/") {
            self.created(cx, uid);
        } else if let Some(name) = key.strip_prefix("delete/") {
            self.deleted(cx, name);
        } else if let Some(k) = key.strip_prefix("retry/") {
            if let Some((ns, name)) = k.split_once('/') {
                self.claim_queue.insert((ns.to_string(), name.to_string()));
            }
        } else if let Some(name) = key.strip_prefix("retry-delete/") {
            self.volume_queue.insert(name.to_string());
        }
        self.run(cx);
    }
    fn busy(&self, _now: Millis) -> bool {
        !self.claim_queue.is_empty() || !self.volume_queue.is_empty()
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
    fn back_off_doubles_to_five_minutes() {
        assert_eq!([1, 2, 3, 4].map(backoff), [1_000, 2_000, 4_000, 8_000]);
        assert_eq!(backoff(12), RETRY_MAX);
        assert_eq!(backoff(200), RETRY_MAX);
    }

    #[test]
    fn zones_follow_the_selected_node_else_the_claim() {
        let zones: BTreeSet<String> = ["zone-a", "zone-b", "zone-c"].iter().map(|z| z.to_string()).collect();
        assert_eq!(pick_zone(Some("zone-b"), &zones, "u"), Some("zone-b".into()));
        let a = pick_zone(None, &zones, "3f2a");
        assert_eq!(a, pick_zone(None, &zones, "3f2a"), "the same claim, the same zone");
        assert!(a.is_some_and(|z| zones.contains(&z)));
        assert_eq!(pick_zone(None, &BTreeSet::new(), "u"), None);
    }

    #[test]
    fn the_volume_is_written_as_external_provisioner_writes_it() {
        let claim = json!({"metadata": {"name": "data", "namespace": "default", "uid": "abc", "resourceVersion": "7"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "standard", "volumeMode": "Filesystem"}});
        let class = json!({"metadata": {"name": "standard"}, "provisioner": "d", "reclaimPolicy": "Retain", "parameters": {"type": "ssd"}});
        let pv = provisioned_volume(&CsiDriverSpec::disk("d"), "id-d", &claim, &class, Some("zone-a"));
        assert_eq!(api::name(&pv), "pvc-abc");
        assert_eq!(pv["spec"]["capacity"]["storage"], "1Gi");
        assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
        assert_eq!(pv["spec"]["csi"]["fsType"], "ext4");
        assert_eq!(pv["spec"]["csi"]["volumeAttributes"], json!({PROVISIONER_ID_KEY: "id-d", "type": "ssd"}));
        assert_eq!(pv["spec"]["claimRef"]["uid"], "abc");
        assert_eq!(pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"], json!(["zone-a"]));
        assert_eq!(pv["metadata"]["finalizers"], json!([FINALIZER_PV]));
        let mut flat = CsiDriverSpec::disk("d");
        flat.zonal = false;
        assert!(provisioned_volume(&flat, "id", &claim, &class, Some("zone-a"))["spec"].get("nodeAffinity").is_none());
    }
}
