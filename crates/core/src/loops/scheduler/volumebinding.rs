//! The scheduler's volume plugins: VolumeBinding (`plugins/volumebinding`: `binder.go`,
//! `volume_binding.go`) and VolumeZone (`plugins/volumezone`).
//!
//! PreFilter sorts a pod's claims into bound ones and WaitForFirstConsumer ones still to
//! bind; a missing or terminating claim, or an unbound claim of a class that binds at once,
//! keeps the pod out of every node. Filter checks a node against the volumes of bound claims
//! (their node affinity, the zone labels of old volumes) and, for claims to bind, looks for
//! an Available volume that admits the node or a class that can provision there. Once a
//! node is chosen, PreBind pre-binds the chosen volumes and marks the claims to provision
//! with `volume.kubernetes.io/selected-node`, then waits — without binding the pod — until
//! the PV controller and the provisioner have bound every claim (up to `bindTimeout`,
//! 600 s): the wait a learner sees as a Pending pod whose claim is being provisioned.

use crate::apiserver::{Credentials, Request};
use crate::foundation::api::{self, get, get_array, get_str, rid, Object};
use crate::foundation::sim::Millis;
use crate::foundation::sort::Sort;
use crate::foundation::value::{json, Value};
use crate::foundation::volume::{self as vol, ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE};
use crate::loops::informer::Informer;

pub const ERR_BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
pub const ERR_NODE_CONFLICT: &str = "node(s) had volume node affinity conflict";
pub const ERR_PV_NOT_EXIST: &str = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
/// VolumeZone's `ErrReasonConflict`.
pub const ERR_ZONE_CONFLICT: &str = "node(s) had no available volume zone";

/// How long PreBind waits for the claims to be bound (the scheduler's `bindTimeoutSeconds`).
pub const BIND_TIMEOUT: Millis = 600_000;

/// The zone and region labels VolumeZone compares (`topologyLabels`).
const ZONE_LABELS: [&str; 4] =
    ["failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/zone", "topology.kubernetes.io/region"];

/// A pod's claims after PreFilter (`GetPodVolumeClaims`).
#[derive(Default)]
pub struct PodClaims {
    pub bound: Vec<Object>,
    /// Unbound claims of WaitForFirstConsumer classes: the scheduler binds them.
    pub to_bind: Vec<Object>,
}

impl PodClaims {
    pub fn is_empty(&self) -> bool {
        self.bound.is_empty() && self.to_bind.is_empty()
    }
}

/// What binding a pod's claims on one node takes (`PodVolumes`).
#[derive(Default)]
pub struct PodVolumes {
    /// Claims and the Available volumes chosen for them.
    pub static_bindings: Vec<(Object, Object)>,
    /// Claims a provisioner will make a volume for.
    pub provisions: Vec<Object>,
}

/// A pod whose volumes are being bound before the pod itself (PreBind's wait).
#[derive(Debug, Clone)]
pub struct Waiting {
    pub node: String,
    /// (volume, claim) pre-bound by the scheduler.
    pub bindings: Vec<(String, String)>,
    /// Claims marked for provisioning.
    pub provisions: Vec<String>,
    pub deadline: Millis,
}

/// The informers VolumeBinding reads.
#[derive(Clone)]
pub struct Volumes {
    pub claims: Informer,
    pub pvs: Informer,
    pub classes: Informer,
}

impl Volumes {
    pub fn new() -> Self {
        Volumes { claims: Informer::new(rid::PVC), pvs: Informer::new(rid::PV), classes: Informer::new(rid::STORAGECLASS) }
    }

    /// Sync the caches; whether a claim, volume or class changed (a cluster event that may
    /// let waiting pods through).
    pub fn sync(&mut self, store: &crate::apiserver::store::Store) -> bool {
        let a = !self.claims.sync(store).deltas.is_empty();
        let b = !self.pvs.sync(store).deltas.is_empty();
        let c = !self.classes.sync(store).deltas.is_empty();
        a || b || c
    }

    fn delay_binding(&self, claim: &Value) -> bool {
        let class = vol::claim_class(claim);
        !class.is_empty() && self.classes.get("", class).is_some_and(|c| get_str(c, &["volumeBindingMode"]) == Some("WaitForFirstConsumer"))
    }

    /// PreFilter: the pod's claims, or the reason no node can take it (unresolvable).
    pub fn pre_filter(&self, pod: &Value) -> Result<PodClaims, String> {
        let ns = api::namespace(pod);
        let mut out = PodClaims::default();
        let mut unbound_immediate = false;
        for v in get_array(pod, &["spec", "volumes"]) {
            let Some(name) = get_str(v, &["persistentVolumeClaim", "claimName"]) else { continue };
            let Some(claim) = self.claims.get(ns, name) else {
                return Err(format!("persistentvolumeclaim \"{name}\" not found"));
            };
            if api::is_deleting(claim) {
                return Err(format!("persistentvolumeclaim \"{name}\" is being deleted"));
            }
            if vol::is_claim_fully_bound(claim) {
                out.bound.push(claim.clone());
            } else if self.delay_binding(claim) && get_str(claim, &["spec", "volumeName"]).unwrap_or("").is_empty() {
                out.to_bind.push(claim.clone());
            } else {
                unbound_immediate = true;
            }
        }
        if unbound_immediate {
            return Err("pod has unbound immediate PersistentVolumeClaims".into());
        }
        Ok(out)
    }

    /// VolumeBinding's Filter on one node (`FindPodVolumes`): the plan, or the reasons.
    pub fn filter(&self, claims: &PodClaims, node: &Value) -> Result<PodVolumes, Vec<&'static str>> {
        let labels = api::labels(node);
        let mut reasons = Vec::new();
        let mut out = PodVolumes::default();
        // Bound claims: their volumes must exist and admit the node.
        let (mut bound_ok, mut pvs_found) = (true, true);
        for c in &claims.bound {
            match self.pvs.get("", get_str(c, &["spec", "volumeName"]).unwrap_or("")) {
                None => {
                    pvs_found = false;
                    break;
                }
                Some(pv) if !vol::node_affinity_admits(pv, labels) => {
                    bound_ok = false;
                    break;
                }
                Some(_) => {}
            }
        }
        let mut unbound_ok = true;
        if !claims.to_bind.is_empty() {
            let mut to_provision: Vec<&Object> = Vec::new();
            let mut to_match: Vec<&Object> = Vec::new();
            for c in &claims.to_bind {
                match api::annotation(c, ANN_SELECTED_NODE) {
                    Some(n) if n != api::name(node) => {
                        unbound_ok = false;
                        break;
                    }
                    Some(_) => to_provision.push(c),
                    None => to_match.push(c),
                }
            }
            if unbound_ok {
                // Smallest requests first, each taking the smallest volume that fits.
                to_match.sort_stable_by_key(|c| {
                    get(c, &["spec", "resources", "requests", "storage"]).and_then(crate::foundation::quantity::value_milli).unwrap_or(0)
                });
                let mut chosen: Vec<String> = Vec::new();
                for c in to_match {
                    let class = vol::claim_class(c);
                    let excluded: Vec<&str> = chosen.iter().map(String::as_str).collect();
                    let candidates = self.pvs.list(None).filter(|pv| vol::volume_class(pv) == class);
                    match vol::find_matching_volume(c, candidates.map(|o| &**o), Some(labels), &excluded, true) {
                        Some(pv) => {
                            chosen.push(api::name(pv).to_string());
                            let pv = self.pvs.get("", api::name(pv)).cloned().expect("listed from this cache");
                            out.static_bindings.push((c.clone(), pv));
                        }
                        None => {
                            unbound_ok = false;
                            to_provision.push(c);
                        }
                    }
                }
                // Claims without a volume: can their class provision one on this node?
                if !to_provision.is_empty() {
                    unbound_ok = true;
                    for c in to_provision {
                        let Some(class) = self.classes.get("", vol::claim_class(c)) else {
                            unbound_ok = false;
                            break;
                        };
                        let provisioner = get_str(class, &["provisioner"]).unwrap_or("");
                        let topologies = get_array(class, &["allowedTopologies"]);
                        let fits = topologies.is_empty() || topologies.iter().any(|t| topology_term_matches(t, node));
                        if provisioner.is_empty() || provisioner == vol::NOT_SUPPORTED_PROVISIONER || !fits {
                            unbound_ok = false;
                            break;
                        }
                        out.provisions.push(c.clone());
                    }
                }
            }
        }
        if !bound_ok {
            reasons.push(ERR_NODE_CONFLICT);
        }
        if !unbound_ok {
            reasons.push(ERR_BIND_CONFLICT);
        }
        if !pvs_found {
            reasons.push(ERR_PV_NOT_EXIST);
        }
        if reasons.is_empty() {
            Ok(out)
        } else {
            Err(reasons)
        }
    }

    /// VolumeZone's Filter: every bound volume labelled with a zone or region must be in
    /// one the node has (a label value may list several zones joined by `__`).
    pub fn zone_filter(&self, claims: &PodClaims, node: &Value) -> bool {
        for c in &claims.bound {
            let Some(pv) = self.pvs.get("", get_str(c, &["spec", "volumeName"]).unwrap_or("")) else { continue };
            for key in ZONE_LABELS {
                let Some(want) = api::label(pv, key) else { continue };
                let Some(have) = api::label(node, key) else { return false };
                if !want.split("__").any(|z| z == have) {
                    return false;
                }
            }
        }
        true
    }

    /// PreBind's API updates (`bindAPIUpdate`): each chosen volume pre-bound to its claim,
    /// each claim to provision marked with the node. The requests, and what to wait for.
    pub fn bind_requests(&self, plan: &PodVolumes, node: &str, now: Millis, creds: &Credentials) -> (Vec<Request>, Waiting) {
        let mut reqs = Vec::new();
        let mut waiting = Waiting { node: node.to_string(), bindings: vec![], provisions: vec![], deadline: now + BIND_TIMEOUT };
        for (claim, pv) in &plan.static_bindings {
            let mut body = (**pv).clone();
            api::set(
                &mut body,
                &["spec", "claimRef"],
                json!({"kind": "PersistentVolumeClaim", "namespace": api::namespace(claim), "name": api::name(claim), "uid": api::uid(claim), "apiVersion": "v1", "resourceVersion": api::resource_version(claim)}),
            );
            api::set(&mut body, &["metadata", "annotations", ANN_BOUND_BY_CONTROLLER], json!("yes"));
            reqs.push(Request::update(rid::PV, "", api::name(pv), body, creds.clone()));
            waiting.bindings.push((api::name(pv).to_string(), api::name(claim).to_string()));
        }
        for claim in &plan.provisions {
            let mut body = (**claim).clone();
            api::set(&mut body, &["metadata", "annotations", ANN_SELECTED_NODE], json!(node));
            reqs.push(Request::update(rid::PVC, api::namespace(claim), api::name(claim), body, creds.clone()));
            waiting.provisions.push(api::name(claim).to_string());
        }
        (reqs, waiting)
    }

    /// PreBind's wait (`checkBindings`): done, not yet, or why binding failed.
    pub fn check(&self, ns: &str, w: &Waiting, node: &Value) -> Result<bool, String> {
        let labels = api::labels(node);
        for (pv_name, claim_name) in &w.bindings {
            let (Some(pv), Some(claim)) = (self.pvs.get("", pv_name), self.claims.get(ns, claim_name)) else {
                return Err(format!("failed to check binding: persistentvolumeclaim \"{claim_name}\" or persistentvolume \"{pv_name}\" not found"));
            };
            if !vol::node_affinity_admits(pv, labels) {
                return Err(format!("pv \"{pv_name}\" node affinity doesn't match node \"{}\"", w.node));
            }
            if get_str(pv, &["spec", "claimRef", "uid"]).unwrap_or("").is_empty() {
                return Err(format!("ClaimRef got reset for pv \"{pv_name}\""));
            }
            if !vol::is_claim_fully_bound(claim) {
                return Ok(false);
            }
        }
        for claim_name in &w.provisions {
            let Some(claim) = self.claims.get(ns, claim_name) else {
                return Err(format!("failed to check provisioning pvc: persistentvolumeclaim \"{claim_name}\" not found"));
            };
            if api::annotation(claim, ANN_SELECTED_NODE) != Some(w.node.as_str()) {
                return Err(format!("provisioning failed for PVC \"{claim_name}\""));
            }
            if let Some(pv_name) = get_str(claim, &["spec", "volumeName"]).filter(|n| !n.is_empty()) {
                let Some(pv) = self.pvs.get("", pv_name) else { return Ok(false) };
                if !vol::node_affinity_admits(pv, labels) {
                    return Err(format!("pv \"{pv_name}\" node affinity doesn't match node \"{}\"", w.node));
                }
            }
            if !vol::is_claim_fully_bound(claim) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// A StorageClass `allowedTopologies` term (`MatchTopologySelectorTerms`): every
/// expression's key has one of its values on the node.
fn topology_term_matches(term: &Value, node: &Value) -> bool {
    get_array(term, &["matchLabelExpressions"]).iter().all(|e| {
        let key = get_str(e, &["key"]).unwrap_or("");
        api::label(node, key).is_some_and(|v| get_array(e, &["values"]).iter().any(|x| x.as_str() == Some(v)))
    })
}
