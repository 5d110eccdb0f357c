//! Storage object in-use protection: the controllers that remove the finalizers the
//! StorageObjectInUseProtection admission plugin puts on every claim and volume
//! (`pkg/controller/volume/pvcprotection/pvc_protection_controller.go`,
//! `pkg/controller/volume/pvprotection/pv_protection_controller.go`).
//!
//! A claim being deleted keeps `kubernetes.io/pvc-protection` while a scheduled pod that
//! has not terminated uses it (the informer is asked first, then the API server, as
//! upstream does, so that a pod the cache has not seen yet still counts); a volume being
//! deleted keeps `kubernetes.io/pv-protection` while it is Bound.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, Request, Verb};
use crate::foundation::api::{self, get_array, get_str, rid, ResourceId};
use crate::foundation::sim::Millis;
use crate::foundation::value::{json, Value};
use crate::loops::controllers::persistentvolume::{pod_claims, pod_terminated};
use crate::loops::informer::Informer;
use crate::loops::{req_as, Controller, Cx};
use std::collections::BTreeSet;

pub const PVC_PROTECTION_FINALIZER: &str = "kubernetes.io/pvc-protection";
pub const PV_PROTECTION_FINALIZER: &str = "kubernetes.io/pv-protection";

fn has_finalizer(o: &Value, f: &str) -> bool {
    get_array(o, &["metadata", "finalizers"]).iter().any(|x| x.as_str() == Some(f))
}

fn without_finalizer(o: &Value, f: &str) -> Value {
    let mut new = o.clone();
    let rest: Vec<Value> = get_array(o, &["metadata", "finalizers"]).iter().filter(|x| x.as_str() != Some(f)).cloned().collect();
    api::set(&mut new, &["metadata", "finalizers"], json!(rest));
    new
}

/// `podUsesPVC`: a scheduled pod that has not terminated and names the claim.
pub fn pod_uses_claim(pod: &Value, claim: &str) -> bool {
    !get_str(pod, &["spec", "nodeName"]).unwrap_or("").is_empty() && !pod_terminated(pod) && pod_claims(pod).iter().any(|c| c == claim)
}

#[derive(Clone)]
pub struct PvcProtectionController {
    user: UserInfo,
    claims: Informer,
    pods: Informer,
    queue: BTreeSet<(String, String)>,
}

impl Default for PvcProtectionController {
    fn default() -> Self {
        Self::new()
    }
}

const PVC_NAME: &str = "pvc-protection-controller";
const PV_NAME: &str = "pv-protection-controller";

impl PvcProtectionController {
    pub fn new() -> Self {
        PvcProtectionController { user: UserInfo::controller(PVC_NAME), claims: Informer::new(rid::PVC), pods: Informer::new(rid::POD), queue: BTreeSet::new() }
    }

    fn in_use(&self, cx: &mut Cx, claim: &Value) -> bool {
        let (ns, name) = (api::namespace(claim), api::name(claim));
        if self.pods.list(Some(ns)).any(|p| pod_uses_claim(p, name)) {
            return true;
        }
        // `askAPIServer`: the cache may not have seen a pod yet.
        let list = Request::new(Verb::List, rid::POD, ns, "", Credentials::User(self.user.clone()));
        match cx.api.handle(req_as(list, PVC_NAME, &self.user)) {
            Ok(l) => get_array(&l, &["items"]).iter().any(|p| pod_uses_claim(p, name)),
            Err(_) => true,
        }
    }

    fn process(&mut self, cx: &mut Cx, key: &(String, String)) {
        let Some(claim) = self.claims.get(&key.0, &key.1).map(|c| (**c).clone()) else { return };
        if !api::is_deleting(&claim) || !has_finalizer(&claim, PVC_PROTECTION_FINALIZER) || self.in_use(cx, &claim) {
            return;
        }
        let req = Request::update(rid::PVC, &key.0, &key.1, without_finalizer(&claim, PVC_PROTECTION_FINALIZER), Credentials::User(self.user.clone()));
        if cx.api.handle(req_as(req, PVC_NAME, &self.user)).is_ok() {
            cx.trace(
                Flow::DeploymentController,
                "remove-finalizer",
                format!("PersistentVolumeClaim/{}/{}", key.0, key.1),
                "ok",
                "",
                format!("no pod uses claim {}/{}: removed {PVC_PROTECTION_FINALIZER}", key.0, key.1),
            );
        }
    }
}

impl Controller for PvcProtectionController {
    fn name(&self) -> &'static str {
        PVC_NAME
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::PVC, rid::POD]
    }
    fn run(&mut self, cx: &mut Cx) {
        for d in self.claims.sync(&cx.api.store).deltas {
            if d.kind != EventType::Deleted && api::is_deleting(&d.object) {
                self.queue.insert(api::queue_key(&d.object));
            }
        }
        // A pod that stops using a claim (deleted, terminated) may free it.
        for d in self.pods.sync(&cx.api.store).deltas {
            for c in pod_claims(&d.object) {
                let key = (api::namespace(&d.object).to_string(), c);
                if self.claims.get(&key.0, &key.1).is_some_and(|c| api::is_deleting(c)) {
                    self.queue.insert(key);
                }
            }
        }
        while let Some(k) = self.queue.pop_first() {
            self.process(cx, &k);
        }
    }
    fn timer(&mut self, cx: &mut Cx, _key: &str) {
        self.run(cx);
    }
    fn busy(&self, _now: Millis) -> bool {
        !self.queue.is_empty()
    }
    fn restart(&mut self) {
        *self = Self::new();
    }
}

#[derive(Clone)]
pub struct PvProtectionController {
    user: UserInfo,
    volumes: Informer,
    queue: BTreeSet<String>,
}

impl Default for PvProtectionController {
    fn default() -> Self {
        Self::new()
    }
}

impl PvProtectionController {
    pub fn new() -> Self {
        PvProtectionController { user: UserInfo::controller(PV_NAME), volumes: Informer::new(rid::PV), queue: BTreeSet::new() }
    }
}

impl Controller for PvProtectionController {
    fn name(&self) -> &'static str {
        PV_NAME
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::PV]
    }
    fn run(&mut self, cx: &mut Cx) {
        for d in self.volumes.sync(&cx.api.store).deltas {
            if d.kind != EventType::Deleted && api::is_deleting(&d.object) {
                self.queue.insert(api::name(&d.object).to_string());
            }
        }
        while let Some(name) = self.queue.pop_first() {
            let Some(v) = self.volumes.get("", &name).map(|v| (**v).clone()) else { continue };
            // `isBeingUsed`: a Bound volume is in use.
            if !has_finalizer(&v, PV_PROTECTION_FINALIZER) || get_str(&v, &["status", "phase"]) == Some("Bound") {
                continue;
            }
            let req = Request::update(rid::PV, "", &name, without_finalizer(&v, PV_PROTECTION_FINALIZER), Credentials::User(self.user.clone()));
            if cx.api.handle(req_as(req, PV_NAME, &self.user)).is_ok() {
                cx.trace(
                    Flow::DeploymentController,
                    "remove-finalizer",
                    format!("PersistentVolume/{name}"),
                    "ok",
                    "",
                    format!("volume {name} is not Bound: removed {PV_PROTECTION_FINALIZER}"),
                );
            }
        }
    }
    fn timer(&mut self, cx: &mut Cx, _key: &str) {
        self.run(cx);
    }
    fn busy(&self, _now: Millis) -> bool {
        !self.queue.is_empty()
    }
    fn restart(&mut self) {
        *self = Self::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_scheduled_running_pods_use_a_claim() {
        let pod = |node: &str, phase: &str| json!({"metadata": {"name": "p"}, "spec": {"nodeName": node, "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]}, "status": {"phase": phase}});
        assert!(pod_uses_claim(&pod("node-a", "Running"), "data"));
        assert!(!pod_uses_claim(&pod("node-a", "Running"), "other"));
        assert!(!pod_uses_claim(&pod("", "Pending"), "data"), "an unscheduled pod never started with the claim");
        assert!(!pod_uses_claim(&pod("node-a", "Succeeded"), "data"));
        assert_eq!(
            without_finalizer(&json!({"metadata": {"finalizers": ["a", PVC_PROTECTION_FINALIZER]}}), PVC_PROTECTION_FINALIZER)["metadata"]["finalizers"],
            json!(["a"])
        );
    }
}
