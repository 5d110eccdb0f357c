//! The disruption controller (`pkg/controller/disruption/disruption.go`): keeps each
//! PodDisruptionBudget's status — how many selected pods are healthy, how many must be,
//! and so how many voluntary disruptions (evictions) are allowed right now. The eviction
//! subresource reads that status and decrements it, recording the pod in `disruptedPods`
//! until this controller sees the pod go (or two minutes pass).

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, Request};
use crate::foundation::api::{self, get, get_i64, get_str, rid, Object, ResourceId};
use crate::foundation::pod::pod_is_ready;
use crate::foundation::sim::{parse_rfc3339, rfc3339, Millis};
use crate::foundation::value::{json, Map, Value};
use crate::loops::controllers::deployment::scaled;
use crate::loops::events::Source;
use crate::loops::informer::Informer;
use crate::loops::{req_as, Controller, Cx};
use std::collections::{BTreeMap, BTreeSet};

/// How long an eviction's entry in `disruptedPods` holds without the pod being deleted
/// (`DeletionTimeout`).
pub const DELETION_TIMEOUT_MS: Millis = 2 * 60 * 1000;

/// What a budget's status works out to, before it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    pub expected: i64,
    pub desired_healthy: i64,
    pub current_healthy: i64,
    pub disrupted: BTreeMap<String, String>,
    /// Selected pods that no controller owns (a warning when the budget needs scales).
    pub unmanaged: Vec<String>,
}

/// The controllers whose scale a budget reads (`finders`): a pod's controller, or the
/// Deployment over its ReplicaSet, with `spec.replicas`.
pub trait Scales {
    fn scale_of(&self, namespace: &str, owner: &Value) -> Option<(String, i64)>;
}

/// `getExpectedScale`: the sum of the replicas of the controllers of the selected pods,
/// each controller counted once. Unowned pods are listed; a pod whose controller has no
/// scale is an error.
fn expected_scale(pods: &[&Object], scales: &dyn Scales, unmanaged: &mut Vec<String>) -> Result<i64, String> {
    let mut seen: BTreeMap<String, i64> = BTreeMap::new();
    for p in pods {
        let Some(r) = api::controller_ref(p) else {
            unmanaged.push(api::name(p).to_string());
            continue;
        };
        match scales.scale_of(api::namespace(p), r) {
            Some((uid, n)) => {
                seen.insert(uid, n);
            }
            None => return Err(format!("found no controllers for pod {:?}", api::name(p))),
        }
    }
    Ok(seen.values().sum())
}

/// The pure status computation (`getExpectedPodCount`, `countHealthyPods`,
/// `buildDisruptedPodMap`).
pub fn compute(pdb: &Value, pods: &[&Object], scales: &dyn Scales, now: Millis) -> Result<Budget, String> {
    let mut unmanaged = Vec::new();
    let (expected, desired_healthy) = match (get(pdb, &["spec", "maxUnavailable"]), get(pdb, &["spec", "minAvailable"])) {
        (Some(max), _) => {
            let expected = expected_scale(pods, scales, &mut unmanaged)?;
            let max = scaled(Some(max), expected, true);
            (expected, (expected - max).max(0))
        }
        (None, Some(Value::Number(n))) => (pods.len() as i64, n.as_i64().unwrap_or(0)),
        (None, Some(min)) => {
            let expected = expected_scale(pods, scales, &mut unmanaged)?;
            (expected, scaled(Some(min), expected, true))
        }
        (None, None) => (pods.len() as i64, pods.len() as i64),
    };
    // Evictions not yet followed by the pod's deletion hold for DeletionTimeout.
    let mut disrupted = BTreeMap::new();
    if let Some(m) = get(pdb, &["status", "disruptedPods"]).and_then(Value::as_object) {
        for (name, t) in m.iter() {
            let Some(pod) = pods.iter().find(|p| api::name(p) == name.as_str()) else { continue };
            if api::is_deleting(pod) {
                continue;
            }
            let at = t.as_str().and_then(parse_rfc3339).unwrap_or(0);
            if at + DELETION_TIMEOUT_MS > now {
                disrupted.insert(name.to_string(), t.as_str().unwrap_or("").to_string());
            }
        }
    }
    let current_healthy = pods.iter().filter(|p| !api::is_deleting(p) && !disrupted.contains_key(api::name(p)) && pod_is_ready(p)).count() as i64;
    Ok(Budget { expected, desired_healthy, current_healthy, disrupted, unmanaged })
}

/// The status object for a computed budget (`updatePdbStatus`, `UpdateDisruptionAllowedCondition`).
pub fn status(pdb: &Value, b: &Budget, now: Millis) -> Value {
    let allowed = (b.current_healthy - b.desired_healthy).max(0);
    let mut s = json!({
        "observedGeneration": api::generation(pdb),
        "disruptionsAllowed": allowed,
        "currentHealthy": b.current_healthy,
        "desiredHealthy": b.desired_healthy,
        "expectedPods": b.expected,
    });
    if !b.disrupted.is_empty() {
        let m: Map = b.disrupted.iter().map(|(k, v)| (k.as_str(), json!(v))).collect();
        s["disruptedPods"] = Value::Object(m);
    }
    let (st, reason) = if allowed > 0 { ("True", "SufficientPods") } else { ("False", "InsufficientPods") };
    s["conditions"] = json!([condition(pdb, st, reason, "", now)]);
    s
}

/// The `DisruptionAllowed` condition, keeping its transition time while its status holds.
fn condition(pdb: &Value, status: &str, reason: &str, message: &str, now: Millis) -> Value {
    let prev = crate::foundation::pod::condition(pdb, "DisruptionAllowed");
    let since = prev
        .filter(|c| get_str(c, &["status"]) == Some(status))
        .and_then(|c| get_str(c, &["lastTransitionTime"]))
        .map(str::to_string)
        .unwrap_or_else(|| rfc3339(now));
    json!({"type": "DisruptionAllowed", "status": status, "reason": reason, "message": message,
        "observedGeneration": api::generation(pdb), "lastTransitionTime": since})
}

struct Owners<'a> {
    rs: &'a Informer,
    deployments: &'a Informer,
    rcs: &'a Informer,
    sets: &'a Informer,
}

impl Scales for Owners<'_> {
    fn scale_of(&self, ns: &str, owner: &Value) -> Option<(String, i64)> {
        let name = get_str(owner, &["name"])?;
        let uid = get_str(owner, &["uid"]).unwrap_or("");
        let found = |inf: &Informer| inf.get(ns, name).filter(|o| api::uid(o) == uid).cloned();
        let replicas = |o: &Value| (api::uid(o).to_string(), get_i64(o, &["spec", "replicas"]).unwrap_or(1));
        match get_str(owner, &["kind"])? {
            "ReplicaSet" => {
                let rs = found(self.rs)?;
                // A Deployment's ReplicaSet is scaled by the Deployment.
                if let Some(d) = api::controller_ref(&rs).filter(|r| get_str(r, &["kind"]) == Some("Deployment")) {
                    let dn = get_str(d, &["name"]).unwrap_or("");
                    if let Some(dep) = self.deployments.get(ns, dn).filter(|o| Some(api::uid(o)) == get_str(d, &["uid"])) {
                        return Some(replicas(dep));
                    }
                }
                Some(replicas(&rs))
            }
            "ReplicationController" => found(self.rcs).map(|o| replicas(&o)),
            "StatefulSet" => found(self.sets).map(|o| replicas(&o)),
            _ => None,
        }
    }
}

#[derive(Clone)]
pub struct DisruptionController {
    user: UserInfo,
    source: Source,
    pdbs: Informer,
    pods: Informer,
    rs: Informer,
    deployments: Informer,
    rcs: Informer,
    sets: Informer,
    queue: BTreeSet<(String, String)>,
}

impl Default for DisruptionController {
    fn default() -> Self {
        Self::new()
    }
}

impl DisruptionController {
    pub fn new() -> Self {
        let user = UserInfo::controller("disruption-controller");
        DisruptionController {
            source: Source { component: "controllermanager", host: String::new(), user: user.clone() },
            user,
            pdbs: Informer::new(rid::PDB),
            pods: Informer::new(rid::POD),
            rs: Informer::new(rid::REPLICASET),
            deployments: Informer::new(rid::DEPLOYMENT),
            rcs: Informer::new(rid::REPLICATIONCONTROLLER),
            sets: Informer::new(rid::STATEFULSET),
            queue: BTreeSet::new(),
        }
    }

    /// Queue the budgets in `ns` that select a pod with these labels.
    fn queue_for(&mut self, ns: &str, labels: Option<&Map>) {
        for pdb in self.pdbs.list(Some(ns)) {
            if crate::foundation::labels::selector_matches(get(pdb, &["spec", "selector"]), labels) {
                self.queue.insert((ns.to_string(), api::name(pdb).to_string()));
            }
        }
    }

    fn sync_informers(&mut self, cx: &mut Cx) {
        for d in self.pdbs.sync(&cx.api.store).deltas {
            self.queue.insert((api::namespace(&d.object).to_string(), api::name(&d.object).to_string()));
        }
        let deltas = self.pods.sync(&cx.api.store).deltas;
        // Owners only matter for scales; their changes requeue every budget of the namespace.
        let mut owner_namespaces = BTreeSet::new();
        for inf in [&mut self.rs, &mut self.deployments, &mut self.rcs, &mut self.sets] {
            for d in inf.sync(&cx.api.store).deltas {
                owner_namespaces.insert(api::namespace(&d.object).to_string());
            }
        }
        if self.pdbs.is_empty() {
            return;
        }
        for d in deltas {
            let ns = api::namespace(&d.object).to_string();
            self.queue_for(&ns, api::labels(&d.object));
            if let Some(old) = &d.old {
                if api::labels(old) != api::labels(&d.object) {
                    self.queue_for(&ns, api::labels(old));
                }
            }
        }
        for ns in owner_namespaces {
            let names: Vec<String> = self.pdbs.list(Some(&ns)).map(|p| api::name(p).to_string()).collect();
            for n in names {
                self.queue.insert((ns.clone(), n));
            }
        }
    }

    #[inline(never)]
    fn sync(&mut self, cx: &mut Cx, key: &(String, String)) {
        let Some(pdb) = self.pdbs.get(&key.0, &key.1).cloned() else { return };
        if api::is_deleting(&pdb) {
            return;
        }
        let selector = get(&pdb, &["spec", "selector"]);
        let pods: Vec<&Object> = self.pods.list(Some(&key.0)).filter(|p| crate::foundation::labels::selector_matches(selector, api::labels(p))).collect();
        let obj = format!("PodDisruptionBudget/{}/{}", key.0, key.1);
        if pods.is_empty() {
            cx.event(&self.source, &pdb, None, "Normal", "NoPods", "No matching pods found", None);
        }
        let owners = Owners { rs: &self.rs, deployments: &self.deployments, rcs: &self.rcs, sets: &self.sets };
        let computed = compute(&pdb, &pods, &owners, cx.now);
        let new_status = match &computed {
            Ok(b) => {
                if !b.unmanaged.is_empty() {
                    let msg = format!(
                        "Pods selected by this PodDisruptionBudget (selector: {}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.",
                        go_selector(selector)
                    );
                    cx.event(&self.source, &pdb, None, "Warning", "UnmanagedPods", &msg, None);
                }
                status(&pdb, b, cx.now)
            }
            Err(e) => {
                cx.event(
                    &self.source,
                    &pdb,
                    None,
                    "Warning",
                    "CalculateExpectedPodCountFailed",
                    &format!("Failed to calculate the number of expected pods: {e}"),
                    None,
                );
                // failSafe: no disruption is allowed while the status cannot be worked out.
                let mut s = pdb.get("status").cloned().unwrap_or_else(|| json!({}));
                s["disruptionsAllowed"] = json!(0);
                s["observedGeneration"] = json!(api::generation(&pdb));
                s["conditions"] = json!([condition(&pdb, "False", "SyncFailed", e, cx.now)]);
                s
            }
        };
        // The earliest moment a disrupted pod's entry expires needs a later look.
        if let Ok(b) = &computed {
            if let Some(first) = b.disrupted.values().filter_map(|t| parse_rfc3339(t)).min() {
                cx.after((first + DELETION_TIMEOUT_MS).saturating_sub(cx.now) + 1, format!("{}/{}", key.0, key.1));
            }
        }
        if pdb.get("status") == Some(&new_status) {
            return;
        }
        let mut body = (*pdb).clone();
        body["status"] = new_status.clone();
        if let Some(m) = body.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        let r = cx.api.handle(req_as(
            Request::update(rid::PDB, &key.0, &key.1, body, Credentials::User(self.user.clone())).with_sub("status"),
            "disruption-controller",
            &self.user,
        ));
        if let Ok(stored) = r {
            let n = |f: &str| get_i64(&new_status, &[f]).unwrap_or(0);
            cx.trace(
                Flow::Ready,
                "disruption-budget",
                obj,
                "ok",
                api::resource_version(&stored),
                format!(
                    "{} of {} expected pods healthy, {} must be: {} disruption(s) allowed",
                    n("currentHealthy"),
                    n("expectedPods"),
                    n("desiredHealthy"),
                    n("disruptionsAllowed")
                ),
            );
        }
    }
}

/// A label selector as Go's `%v` prints a `*metav1.LabelSelector` in the unmanaged-pods
/// warning.
fn go_selector(sel: Option<&Value>) -> String {
    let labels: Vec<String> = sel
        .and_then(|s| s.get("matchLabels"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}:{}", v.as_str().unwrap_or("")))
        .collect();
    format!("&LabelSelector{{MatchLabels:map[string]string{{{},}},MatchExpressions:[]LabelSelectorRequirement{{}},}}", labels.join(","))
}

impl Controller for DisruptionController {
    fn name(&self) -> &'static str {
        "disruption-controller"
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::PDB, rid::POD, rid::REPLICASET, rid::DEPLOYMENT, rid::REPLICATIONCONTROLLER, rid::STATEFULSET]
    }
    fn run(&mut self, cx: &mut Cx) {
        self.sync_informers(cx);
        while let Some(k) = self.queue.pop_first() {
            self.sync(cx, &k);
        }
    }
    fn timer(&mut self, cx: &mut Cx, key: &str) {
        if let Some((ns, name)) = key.split_once('/') {
            self.queue.insert((ns.to_string(), name.to_string()));
        }
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
    use std::sync::Arc;

    struct Fixed(i64);
    impl Scales for Fixed {
        fn scale_of(&self, _ns: &str, owner: &Value) -> Option<(String, i64)> {
            (get_str(owner, &["kind"]) == Some("ReplicaSet")).then(|| (get_str(owner, &["uid"]).unwrap_or("").to_string(), self.0))
        }
    }

    fn pod(name: &str, ready: bool, owner: Option<&str>) -> Object {
        let mut p = json!({"metadata": {"name": name, "namespace": "default", "uid": name}, "status": {"phase": "Running"}});
        if ready {
            p["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
        }
        if let Some(kind) = owner {
            p["metadata"]["ownerReferences"] = json!([{"kind": kind, "name": "web", "uid": "rs-1", "controller": true}]);
        }
        Arc::new(p)
    }

    #[test]
    fn min_available_as_a_number_counts_the_selected_pods() {
        let pdb = json!({"metadata": {"generation": 1}, "spec": {"minAvailable": 2}});
        let pods = [pod("a", true, None), pod("b", true, None), pod("c", false, None)];
        let refs: Vec<&Object> = pods.iter().collect();
        let b = compute(&pdb, &refs, &Fixed(5), 0).unwrap();
        assert_eq!((b.expected, b.desired_healthy, b.current_healthy), (3, 2, 2));
        let s = status(&pdb, &b, 0);
        assert_eq!(s["disruptionsAllowed"], 0);
        assert_eq!(s["conditions"][0]["reason"], "InsufficientPods");
    }

    #[test]
    fn max_unavailable_reads_the_controllers_scale_and_rounds_up() {
        let pdb = json!({"metadata": {"generation": 1}, "spec": {"maxUnavailable": "30%"}});
        let pods = [pod("a", true, Some("ReplicaSet")), pod("b", true, Some("ReplicaSet")), pod("c", true, Some("ReplicaSet"))];
        let refs: Vec<&Object> = pods.iter().collect();
        let b = compute(&pdb, &refs, &Fixed(3), 0).unwrap();
        // 30% of 3 rounds up to 1 unavailable: 2 must stay healthy.
        assert_eq!((b.expected, b.desired_healthy, b.current_healthy), (3, 2, 3));
        assert_eq!(status(&pdb, &b, 0)["disruptionsAllowed"], 1);
    }

    #[test]
    fn a_pod_whose_controller_has_no_scale_fails_the_sync() {
        let pdb = json!({"spec": {"maxUnavailable": 1}});
        let pods = [pod("a", true, Some("DaemonSet"))];
        let refs: Vec<&Object> = pods.iter().collect();
        assert_eq!(compute(&pdb, &refs, &Fixed(1), 0).unwrap_err(), "found no controllers for pod \"a\"");
    }

    #[test]
    fn a_recent_eviction_is_not_counted_healthy_until_it_expires() {
        let pdb = json!({"spec": {"minAvailable": 1}, "status": {"disruptedPods": {"a": "2026-01-01T00:00:00Z"}}});
        let pods = [pod("a", true, None), pod("b", true, None)];
        let refs: Vec<&Object> = pods.iter().collect();
        assert_eq!(compute(&pdb, &refs, &Fixed(1), 60_000).unwrap().current_healthy, 1);
        assert_eq!(compute(&pdb, &refs, &Fixed(1), DELETION_TIMEOUT_MS + 1).unwrap().current_healthy, 2);
    }
}
