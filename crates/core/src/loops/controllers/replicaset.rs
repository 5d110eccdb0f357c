//! The ReplicaSet controller (`pkg/controller/replicaset/replica_set.go`), which also runs
//! ReplicationControllers as upstream does (`pkg/controller/replication`: the same sync
//! over core/v1 objects whose selector is a plain label map).
//!
//! A sync reads from the informer caches, checks expectations, claims its pods, computes
//! the plan purely ([`plan`]), writes through the API server, computes status purely
//! ([`status`]) and requeues. Pods are created from the template with `generateName` in
//! slow-start batches (1, 2, 4, ...), at most 500 per sync; surplus pods are ranked for
//! deletion by [`rank_for_deletion`].

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::apiserver::{PatchType, Request};
use crate::foundation::api::{self, get, get_array, get_i64, get_str, rid, Object, ResourceId};
use crate::foundation::pod::{condition, pod_is_active, pod_is_available, pod_is_ready};
use crate::foundation::sim::{parse_rfc3339, Millis};
use crate::foundation::sort::Sort;
use crate::foundation::value::{json, Value};
use crate::loops::events::Source;
use crate::loops::informer::Informer;
use crate::loops::{req_as, Controller, Cx};
use std::collections::{BTreeMap, BTreeSet, HashMap};

pub const BURST_REPLICAS: usize = 500;

/// Pods an RS expects to see created or deleted before it acts again
/// (`pkg/controller/controller_utils.go` ControllerExpectations).
#[derive(Debug, Default, Clone)]
pub struct Expectations {
    pub adds: i64,
    pub dels: BTreeSet<String>,
}

impl Expectations {
    pub fn satisfied(&self) -> bool {
        self.adds <= 0 && self.dels.is_empty()
    }
}

fn restarts(p: &Value) -> i64 {
    get_array(p, &["status", "containerStatuses"]).iter().map(|c| get_i64(c, &["restartCount"]).unwrap_or(0)).max().unwrap_or(0)
}

fn log_bucket(now: Millis, t: Option<Millis>) -> i64 {
    match t {
        None => -1,
        Some(t) if now <= t => -1,
        Some(t) => (63 - ((now - t) * 1_000_000).leading_zeros()) as i64,
    }
}

/// Order pods so that the first ones are the best to delete (`ActivePodsWithRanks`).
/// `rank` is the number of related active pods on the same node.
pub fn rank_for_deletion(pods: &mut [(Object, i64)], now: Millis) {
    fn phase_rank(p: &Value) -> i32 {
        match get_str(p, &["status", "phase"]).unwrap_or("") {
            "Pending" => 0,
            "Unknown" => 1,
            "Running" => 2,
            _ => 0,
        }
    }
    pods.sort_stable_by(|(a, ra), (b, rb)| {
        let assigned = |p: &Value| get_str(p, &["spec", "nodeName"]).is_some_and(|n| !n.is_empty());
        let cost = |p: &Value| api::annotation(p, "controller.kubernetes.io/pod-deletion-cost").and_then(|c| c.parse::<i32>().ok()).unwrap_or(0);
        let ready_at = |p: &Value| condition(p, "Ready").and_then(|c| get_str(c, &["lastTransitionTime"])).and_then(parse_rfc3339);
        let created = |p: &Value| get_str(p, &["metadata", "creationTimestamp"]).and_then(parse_rfc3339);
        assigned(a)
            .cmp(&assigned(b))
            .then(phase_rank(a).cmp(&phase_rank(b)))
            .then(pod_is_ready(a).cmp(&pod_is_ready(b)))
            .then(cost(a).cmp(&cost(b)))
            .then(rb.cmp(ra))
            .then_with(|| {
                if pod_is_ready(a) && pod_is_ready(b) {
                    let (ba, bb) = (log_bucket(now, ready_at(a)), log_bucket(now, ready_at(b)));
                    if ba != bb {
                        return ba.cmp(&bb);
                    }
                }
                std::cmp::Ordering::Equal
            })
            .then(restarts(b).cmp(&restarts(a)))
            .then_with(|| log_bucket(now, created(a)).cmp(&log_bucket(now, created(b))))
            .then_with(|| api::uid(a).cmp(api::uid(b)))
    });
}

/// What a sync should do: create `n` pods, or delete these pods.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    Nothing,
    Create(usize),
    Delete(Vec<String>),
}

/// Planning when no pod must go: only the counts matter.
pub fn plan_counts(replicas: i64, active: i64) -> Plan {
    if active < replicas {
        Plan::Create(((replicas - active) as usize).min(BURST_REPLICAS))
    } else {
        Plan::Nothing
    }
}

/// The pure planning step: compare active pods with `spec.replicas`.
pub fn plan(replicas: i64, active: &[(Object, i64)], now: Millis) -> Plan {
    let diff = active.len() as i64 - replicas;
    if diff < 0 {
        Plan::Create(((-diff) as usize).min(BURST_REPLICAS))
    } else if diff > 0 {
        let mut ranked = active.to_vec();
        rank_for_deletion(&mut ranked, now);
        let n = (diff as usize).min(BURST_REPLICAS);
        Plan::Delete(ranked.iter().take(n).map(|(p, _)| api::name(p).to_string()).collect())
    } else {
        Plan::Nothing
    }
}

/// What a ReplicaSet's pods add up to (kept incrementally by the controller).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub active: i64,
    pub fully_labeled: i64,
    pub ready: i64,
    pub terminating: i64,
}

impl Counts {
    /// One pod's contribution to its ReplicaSet's counts.
    pub fn of(pod: &Value, template_labels: &crate::foundation::value::Map) -> Counts {
        let active = pod_is_active(pod);
        Counts {
            active: active as i64,
            fully_labeled: (active && crate::foundation::labels::map_matches(template_labels, api::labels(pod))) as i64,
            ready: (active && pod_is_ready(pod)) as i64,
            terminating: api::is_deleting(pod) as i64,
        }
    }
    fn add(&mut self, o: Counts, sign: i64) {
        self.active += sign * o.active;
        self.fully_labeled += sign * o.fully_labeled;
        self.ready += sign * o.ready;
        self.terminating += sign * o.terminating;
    }
}

fn template_labels(rs: &Value) -> crate::foundation::value::Map {
    get(rs, &["spec", "template", "metadata", "labels"]).and_then(Value::as_object).cloned().unwrap_or_default()
}

/// The pure status computation (`calculateStatus`) from pods.
pub fn status(rs: &Value, pods: &[Object], now: Millis, failure: Option<(&str, &str)>) -> Value {
    let min_ready = get_i64(rs, &["spec", "minReadySeconds"]).unwrap_or(0);
    let labels = template_labels(rs);
    let mut c = Counts::default();
    for p in pods {
        c.add(Counts::of(p, &labels), 1);
    }
    let available = pods.iter().filter(|p| pod_is_active(p) && pod_is_available(p, min_ready, now)).count() as i64;
    status_from_counts(rs, c, available, now, failure)
}

/// Status from counts; `available` is counted by the caller (it depends on time).
pub fn status_from_counts(rs: &Value, c: Counts, available: i64, now: Millis, failure: Option<(&str, &str)>) -> Value {
    let mut s = json!({
        "replicas": c.active,
        "fullyLabeledReplicas": c.fully_labeled,
        "readyReplicas": c.ready,
        "availableReplicas": available,
        "terminatingReplicas": c.terminating,
        "observedGeneration": api::generation(rs),
    });
    // Zero counts are omitted, as Go's omitempty does.
    if let Some(m) = s.as_object_mut() {
        for k in ["fullyLabeledReplicas", "readyReplicas", "availableReplicas"] {
            if m.get(k) == Some(&json!(0)) {
                m.remove(k);
            }
        }
    }
    let mut conds: Vec<Value> = get_array(rs, &["status", "conditions"]).iter().filter(|c| get_str(c, &["type"]) != Some("ReplicaFailure")).cloned().collect();
    if let Some((reason, msg)) = failure {
        // `SetCondition`: a condition of the same status and reason stays as it is, message
        // included (a refusal names a new generated pod each time; rewriting it would wake
        // this loop again at once).
        match condition(rs, "ReplicaFailure").filter(|c| get_str(c, &["status"]) == Some("True") && get_str(c, &["reason"]) == Some(reason)) {
            Some(prev) => conds.push(prev.clone()),
            None => conds.push(json!({"type": "ReplicaFailure", "status": "True", "reason": reason, "message": msg,
                "lastTransitionTime": crate::foundation::sim::rfc3339(now)})),
        }
    }
    if !conds.is_empty() {
        s["conditions"] = Value::Array(conds);
    }
    s
}

/// The kind a [`ReplicaSetController`] runs.
pub struct Kind {
    pub resource: ResourceId,
    pub kind: &'static str,
    pub component: &'static str,
    watches: &'static [ResourceId],
}

pub const REPLICA_SET: Kind = Kind { resource: rid::REPLICASET, kind: "ReplicaSet", component: "replicaset-controller", watches: &[rid::REPLICASET, rid::POD] };
pub const REPLICATION_CONTROLLER: Kind = Kind {
    resource: rid::REPLICATIONCONTROLLER,
    kind: "ReplicationController",
    component: "replication-controller",
    watches: &[rid::REPLICATIONCONTROLLER, rid::POD],
};

/// An owner's selector as a LabelSelector: a ReplicationController's is a plain map.
pub fn selector_of(owner: &Value) -> Option<Value> {
    let sel = get(owner, &["spec", "selector"])?;
    if get_str(owner, &["kind"]) == Some("ReplicationController") {
        Some(json!({"matchLabels": sel.clone()}))
    } else {
        Some(sel.clone())
    }
}

#[derive(Clone)]
pub struct ReplicaSetController {
    kind: &'static Kind,
    user: UserInfo,
    source: Source,
    rs: Informer,
    pods: Informer,
    /// controller uid -> pod keys (namespace, name)
    by_owner: HashMap<String, BTreeSet<(String, String)>>,
    expectations: BTreeMap<(String, String), Expectations>,
    queue: BTreeSet<(String, String)>,
    failures: BTreeMap<(String, String), (String, String)>,
    /// Failed syncs in a row per key, for the work queue's exponential back-off.
    retries: BTreeMap<(String, String), u32>,
    /// controller uid -> what its pods add up to
    counts: HashMap<String, Counts>,
    /// pod -> (owner uid, the contribution it made)
    contributions: HashMap<(String, String), (String, Counts)>,
    /// Active pods without a controller, candidates for adoption.
    orphans: BTreeSet<(String, String)>,
    /// Bursts of creates that go on in a later task.
    bursts: BTreeMap<(String, String), Burst>,
}

impl Default for ReplicaSetController {
    fn default() -> Self {
        Self::new()
    }
}

impl ReplicaSetController {
    pub fn new() -> Self {
        Self::for_kind(&REPLICA_SET)
    }

    /// The replication controller: the same loop over ReplicationControllers.
    pub fn replication() -> Self {
        Self::for_kind(&REPLICATION_CONTROLLER)
    }

    fn for_kind(kind: &'static Kind) -> Self {
        let user = UserInfo::controller(kind.component);
        ReplicaSetController {
            kind,
            source: Source { component: kind.component, host: String::new(), user: user.clone() },
            user,
            rs: Informer::new(kind.resource),
            pods: Informer::new(rid::POD),
            by_owner: HashMap::new(),
            expectations: BTreeMap::new(),
            queue: BTreeSet::new(),
            failures: BTreeMap::new(),
            retries: BTreeMap::new(),
            counts: HashMap::new(),
            contributions: HashMap::new(),
            orphans: BTreeSet::new(),
            bursts: BTreeMap::new(),
        }
    }

    /// Move a pod's contribution from what it was to what it is.
    fn recount(&mut self, key: &(String, String), now: Option<(&str, &Value)>) {
        if let Some((uid, c)) = self.contributions.remove(key) {
            if let Some(total) = self.counts.get_mut(&uid) {
                total.add(c, -1);
            }
        }
        if let Some((uid, pod)) = now {
            let empty = crate::foundation::value::Map::new();
            let rs = api::controller_ref(pod).and_then(|r| get_str(r, &["name"])).and_then(|n| self.rs.get(&key.0, n));
            let labels = rs.and_then(|rs| get(rs, &["spec", "template", "metadata", "labels"])).and_then(Value::as_object).unwrap_or(&empty);
            let c = Counts::of(pod, labels);
            self.counts.entry(uid.to_string()).or_default().add(c, 1);
            self.contributions.insert(key.clone(), (uid.to_string(), c));
        }
    }

    fn owner_of(&self, p: &Value) -> Option<(String, String)> {
        let r = api::controller_ref(p)?;
        (get_str(r, &["kind"]) == Some(self.kind.kind))
            .then(|| (get_str(r, &["uid"]).unwrap_or("").to_string(), get_str(r, &["name"]).unwrap_or("").to_string()))
    }

    fn sync_informers(&mut self, cx: &mut Cx) {
        let fresh = self.rs.state == crate::loops::informer::WatchState::Empty;
        let r = self.rs.sync(&cx.api.store);
        if let Some(m) = r.relisted {
            let kind = self.kind.kind;
            cx.trace(Flow::Etcd, "watch", kind.into(), "relist", "", format!("410 Gone from the watch cache ({m}): relisted {kind}s"));
        }
        for d in r.deltas {
            let key = (api::namespace(&d.object).to_string(), api::name(&d.object).to_string());
            if d.kind == EventType::Deleted {
                self.expectations.remove(&key);
            } else {
                if d.old.as_ref().is_some_and(|o| template_labels(o) != template_labels(&d.object)) {
                    let uid = api::uid(&d.object).to_string();
                    let owned: Vec<(String, String)> = self.by_owner.get(&uid).map(|s| s.iter().cloned().collect()).unwrap_or_default();
                    for k in owned {
                        if let Some(p) = self.pods.get(&k.0, &k.1).cloned() {
                            self.recount(&k, Some((&uid, &p)));
                        }
                    }
                }
                self.queue.insert(key);
            }
        }
        let r = self.pods.sync(&cx.api.store);
        if let Some(m) = r.relisted {
            cx.trace(Flow::Etcd, "watch", "Pod".into(), "relist", "", format!("410 Gone from the watch cache ({m}): relisted Pods"));
        }
        if fresh {
            let (n_rs, n_pods) = (self.rs.len(), self.pods.len());
            cx.trace(
                Flow::ReplicaSetController,
                "list",
                self.kind.kind.into(),
                "ok",
                &cx.api.store.revision().to_string(),
                format!("listed {n_rs} {}s and {n_pods} Pods", self.kind.kind),
            );
        }
        for d in r.deltas {
            let ns = api::namespace(&d.object).to_string();
            let name = api::name(&d.object).to_string();
            let owner = self.owner_of(&d.object);
            let old_owner = d.old.as_ref().and_then(|o| self.owner_of(o));
            let pkey = (ns.clone(), name.clone());
            match (&owner, d.kind) {
                (Some((uid, _)), k) if k != EventType::Deleted => self.recount(&pkey, Some((uid, &d.object))),
                _ => self.recount(&pkey, None),
            }
            if owner.is_none() && d.kind != EventType::Deleted && pod_is_active(&d.object) {
                self.orphans.insert(pkey.clone());
            } else {
                self.orphans.remove(&pkey);
            }
            if let Some((uid, _)) = &old_owner {
                if owner.as_ref().map(|o| &o.0) != Some(uid) || d.kind == EventType::Deleted {
                    if let Some(set) = self.by_owner.get_mut(uid) {
                        set.remove(&(ns.clone(), name.clone()));
                    }
                }
            }
            match &owner {
                Some((uid, rs_name)) => {
                    let rs_key = (ns.clone(), rs_name.clone());
                    match d.kind {
                        EventType::Deleted => {
                            if let Some(set) = self.by_owner.get_mut(uid) {
                                set.remove(&(ns.clone(), name.clone()));
                            }
                            if let Some(e) = self.expectations.get_mut(&rs_key) {
                                e.dels.remove(&name);
                            }
                        }
                        EventType::Added => {
                            self.by_owner.entry(uid.clone()).or_default().insert((ns.clone(), name.clone()));
                            if let Some(e) = self.expectations.get_mut(&rs_key) {
                                e.adds -= 1;
                            }
                        }
                        EventType::Modified => {
                            if old_owner.as_ref().map(|o| &o.0) != Some(uid) {
                                self.by_owner.entry(uid.clone()).or_default().insert((ns.clone(), name.clone()));
                            }
                            if api::is_deleting(&d.object) && d.old.as_ref().is_some_and(|o| !api::is_deleting(o)) {
                                if let Some(e) = self.expectations.get_mut(&rs_key) {
                                    e.dels.remove(&name);
                                }
                            }
                        }
                    }
                    self.queue.insert(rs_key);
                    if let Some((_, old_name)) = &old_owner {
                        if old_name != rs_name {
                            self.queue.insert((ns.clone(), old_name.clone()));
                        }
                    }
                }
                None => {
                    if let Some((_, old_name)) = old_owner {
                        self.queue.insert((ns.clone(), old_name));
                    }
                    // An orphan may be adopted by a ReplicaSet whose selector matches it.
                    if d.kind != EventType::Deleted && pod_is_active(&d.object) {
                        for rs in self.rs.list(Some(&ns)) {
                            if crate::foundation::labels::selector_matches(selector_of(rs).as_ref(), api::labels(&d.object)) {
                                self.queue.insert((ns.clone(), api::name(rs).to_string()));
                            }
                        }
                    }
                }
            }
        }
    }

    fn owned_pods(&self, rs: &Value) -> Vec<Object> {
        let ns = api::namespace(rs);
        self.by_owner
            .get(api::uid(rs))
            .map(|set| {
                set.iter().filter_map(|(n, name)| self.pods.get(n, name).cloned()).filter(|p| p.get("metadata").is_some() && ns == api::namespace(p)).collect()
            })
            .unwrap_or_default()
    }

    #[inline(never)]
    fn sync(&mut self, cx: &mut Cx, key: &(String, String)) {
        let Some(rs) = self.rs.get(&key.0, &key.1).cloned() else { return };
        let obj_name = format!("{}/{}/{}", self.kind.kind, key.0, key.1);
        let satisfied = self.expectations.get(key).is_none_or(Expectations::satisfied);
        // Claim orphans that match the selector (`ClaimPods`); release pods that no longer match.
        let selector = selector_of(&rs);
        if !api::is_deleting(&rs) {
            let orphans: Vec<Object> = self
                .orphans
                .iter()
                .filter(|(ns, _)| *ns == key.0)
                .filter_map(|(ns, n)| self.pods.get(ns, n))
                .filter(|p| {
                    api::controller_ref(p).is_none() && pod_is_active(p) && crate::foundation::labels::selector_matches(selector.as_ref(), api::labels(p))
                })
                .cloned()
                .collect();
            for p in orphans {
                let mut refs = get_array(&p, &["metadata", "ownerReferences"]).to_vec();
                refs.push(api::owner_reference(&rs));
                let patch = json!({"metadata": {"ownerReferences": refs, "uid": api::uid(&p)}});
                let r = cx.api.handle(req_as(
                    Request::patch(rid::POD, &key.0, api::name(&p), PatchType::Strategic, patch, crate::apiserver::Credentials::User(self.user.clone())),
                    self.kind.component,
                    &self.user,
                ));
                if r.is_ok() {
                    cx.trace(
                        Flow::ReplicaSetController,
                        "adopt",
                        format!("Pod/{}/{}", key.0, api::name(&p)),
                        "ok",
                        "",
                        format!("{obj_name} adopted orphan pod {}", api::name(&p)),
                    );
                }
            }
        }
        let mut failure: Option<(String, String)> = self.failures.get(key).cloned();
        let counts = self.counts.get(api::uid(&rs)).copied().unwrap_or_default();
        if satisfied && !api::is_deleting(&rs) {
            let replicas = get_i64(&rs, &["spec", "replicas"]).unwrap_or(1);
            // Only a surplus needs the pods themselves, to rank them.
            let ranked: Vec<(Object, i64)> = if counts.active > replicas {
                let active: Vec<Object> = self.owned_pods(&rs).into_iter().filter(|p| pod_is_active(p)).collect();
                let mut per_node: BTreeMap<&str, i64> = BTreeMap::new();
                for p in &active {
                    if let Some(n) = get_str(p, &["spec", "nodeName"]) {
                        *per_node.entry(n).or_default() += 1;
                    }
                }
                active.iter().map(|p| (p.clone(), get_str(p, &["spec", "nodeName"]).and_then(|n| per_node.get(n).copied()).unwrap_or(0))).collect()
            } else {
                Vec::new()
            };
            let active_len = counts.active;
            let decision = if ranked.is_empty() { plan_counts(replicas, active_len) } else { plan(replicas, &ranked, cx.now) };
            match decision {
                Plan::Nothing => {
                    failure = None;
                }
                Plan::Create(n) => {
                    failure = self.create_pods(cx, &rs, key, n);
                    if n == BURST_REPLICAS {
                        cx.after(1000, format!("{}/{}", key.0, key.1));
                    }
                }
                Plan::Delete(names) => {
                    self.expectations.insert(key.clone(), Expectations { adds: 0, dels: names.iter().cloned().collect() });
                    failure = None;
                    for n in names {
                        let r = cx.api.handle(req_as(
                            Request::delete(rid::POD, &key.0, &n, crate::apiserver::Credentials::User(self.user.clone())),
                            self.kind.component,
                            &self.user,
                        ));
                        match r {
                            Ok(_) => {
                                cx.trace(
                                    Flow::ReplicaSetController,
                                    "delete-pod",
                                    format!("Pod/{}/{n}", key.0),
                                    "ok",
                                    "",
                                    format!("{obj_name} has {active_len} pods, wants {replicas}: deleting {n}"),
                                );
                                cx.event(&self.source, &rs, None, "Normal", "SuccessfulDelete", &format!("Deleted pod: {n}"), None);
                            }
                            Err(s) => {
                                if let Some(e) = self.expectations.get_mut(key) {
                                    e.dels.remove(&n);
                                }
                                if s.code != 404 {
                                    let msg = format!("Error deleting: {}", s.message);
                                    cx.event(&self.source, &rs, None, "Warning", "FailedDelete", &msg, None);
                                    failure = Some(("FailedDelete".into(), s.message.clone()));
                                }
                            }
                        }
                    }
                }
            }
            match &failure {
                Some(f) => {
                    self.failures.insert(key.clone(), f.clone());
                }
                None => {
                    self.failures.remove(key);
                }
            }
        }
        // Status, from the counts as they are now.
        let counts = self.counts.get(api::uid(&rs)).copied().unwrap_or_default();
        let min_ready = get_i64(&rs, &["spec", "minReadySeconds"]).unwrap_or(0);
        let (available, waiting) = if min_ready <= 0 {
            (counts.ready, false)
        } else {
            let pods = self.owned_pods(&rs);
            let avail = pods.iter().filter(|p| pod_is_active(p) && pod_is_available(p, min_ready, cx.now)).count() as i64;
            (avail, pods.iter().any(|p| pod_is_ready(p) && !pod_is_available(p, min_ready, cx.now)))
        };
        let new_status = status_from_counts(&rs, counts, available, cx.now, failure.as_ref().map(|(a, b)| (a.as_str(), b.as_str())));
        if rs.get("status") != Some(&new_status) {
            let mut body = (*rs).clone();
            body["status"] = new_status;
            if let Some(m) = body.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("resourceVersion");
            }
            let _ = cx.api.handle(req_as(
                Request::update(self.kind.resource, &key.0, &key.1, body, crate::apiserver::Credentials::User(self.user.clone())).with_sub("status"),
                self.kind.component,
                &self.user,
            ));
        }
        // Availability after minReadySeconds needs a later look.
        if waiting {
            cx.after(min_ready as Millis * 1000 + 1, format!("{}/{}", key.0, key.1));
        }
    }

    /// Create `n` pods in slow-start batches; returns the failure, if any. A burst of more
    /// than [`CREATES_PER_TASK`] goes on in later tasks at the same moment.
    fn create_pods(&mut self, cx: &mut Cx, rs: &Object, key: &(String, String), n: usize) -> Option<(String, String)> {
        self.expectations.insert(key.clone(), Expectations { adds: n as i64, dels: BTreeSet::new() });
        let template = get(rs, &["spec", "template"]).cloned().unwrap_or(json!({}));
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": format!("{}-", key.1), "namespace": key.0,
            "ownerReferences": [api::owner_reference(rs)]}, "spec": template.get("spec").cloned().unwrap_or(json!({}))});
        for f in ["labels", "annotations", "finalizers"] {
            if let Some(v) = get(&template, &["metadata", f]) {
                pod["metadata"][f] = v.clone();
            }
        }
        let burst = Burst { rs: rs.clone(), pod, n, remaining: n, batch: 1, left_in_batch: 1, created: 0, failed: None };
        self.go_on_creating(cx, key, burst)
    }

    /// Create what is left of a burst, at most [`CREATES_PER_TASK`] pods in this task.
    fn go_on_creating(&mut self, cx: &mut Cx, key: &(String, String), mut b: Burst) -> Option<(String, String)> {
        let mut this_task = 0;
        while b.remaining > 0 {
            if this_task == CREATES_PER_TASK {
                self.bursts.insert(key.clone(), b);
                cx.after(0, format!("{BURST_KEY}{}/{}", key.0, key.1));
                return None;
            }
            this_task += 1;
            let r = cx.api.handle(req_as(
                Request::create(rid::POD, &key.0, b.pod.clone(), crate::apiserver::Credentials::User(self.user.clone())),
                self.kind.component,
                &self.user,
            ));
            match r {
                Ok(p) => {
                    b.created += 1;
                    let pname = api::name(&p).to_string();
                    if cx.tracing() {
                        cx.trace(
                            Flow::ReplicaSetController,
                            "create-pod",
                            format!("Pod/{}/{pname}", key.0),
                            "ok",
                            api::resource_version(&p),
                            format!("{}/{}/{} wants {} more: created {pname} (nodeName empty)", self.kind.kind, key.0, key.1, b.n - b.created + 1),
                        );
                    }
                    cx.event(&self.source, &b.rs, None, "Normal", "SuccessfulCreate", &format!("Created pod: {pname}"), None);
                }
                Err(s) => {
                    if let Some(e) = self.expectations.get_mut(key) {
                        e.adds -= 1;
                    }
                    let terminating = s.message.contains("because it is being terminated");
                    if !terminating {
                        cx.event(&self.source, &b.rs, None, "Warning", "FailedCreate", &format!("Error creating: {}", s.message), None);
                    }
                    cx.trace(
                        Flow::ReplicaSetController,
                        "create-pod",
                        format!("Pod/{}/{}-", key.0, key.1),
                        "error",
                        "",
                        format!("Error creating: {}", s.message),
                    );
                    b.failed = Some(("FailedCreate".to_string(), s.message.clone()));
                }
            }
            b.remaining -= 1;
            b.left_in_batch -= 1;
            if b.left_in_batch > 0 && b.remaining > 0 {
                continue;
            }
            // The batch is over.
            if b.failed.is_some() {
                // Skip the remaining batches; their expectations are lowered.
                if let Some(e) = self.expectations.get_mut(key) {
                    e.adds -= b.remaining as i64;
                }
                // Retry with the work queue's back-off (`DefaultControllerRateLimiter`:
                // 5ms doubling per failure, at most 1000s).
                let n = self.retries.entry(key.clone()).or_insert(0);
                let delay = (5u64 << (*n).min(20)).min(1_000_000);
                *n += 1;
                cx.every(delay as Millis, format!("{}/{}", key.0, key.1));
                return b.failed;
            }
            b.batch *= 2;
            b.left_in_batch = b.batch.min(b.remaining);
        }
        self.retries.remove(key);
        None
    }
}

/// The most pods one task creates: a larger burst (up to [`BURST_REPLICAS`]) goes on in
/// later tasks at the same moment, its slow-start batches unchanged, so no single task of
/// the simulation (a page's frame) grows with the burst. The sync that started it waits on
/// its expectations meanwhile, as one blocked in `slowStartBatch` would.
pub const CREATES_PER_TASK: usize = 64;

/// The timer key prefix of a burst's next part.
const BURST_KEY: &str = "burst:";

/// A burst of creates under way: the owner, the pod to create, how many in all and still
/// to create, the slow-start batch and what is left of it, and the batch's failure.
#[derive(Debug, Clone)]
struct Burst {
    rs: Object,
    pod: Value,
    n: usize,
    remaining: usize,
    batch: usize,
    left_in_batch: usize,
    created: usize,
    failed: Option<(String, String)>,
}

impl Controller for ReplicaSetController {
    fn name(&self) -> &'static str {
        self.kind.component
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        self.kind.watches
    }
    fn run(&mut self, cx: &mut Cx) {
        self.sync_informers(cx);
        while let Some(k) = self.queue.pop_first() {
            self.sync(cx, &k);
        }
    }
    fn timer(&mut self, cx: &mut Cx, key: &str) {
        if let Some(rest) = key.strip_prefix(BURST_KEY) {
            let Some((ns, name)) = rest.split_once('/') else { return };
            let key = (ns.to_string(), name.to_string());
            // A burst's next part (none after a restart: a restarted controller starts over).
            // Only the burst goes on here: the next sync comes with the watch, as after a
            // burst made in one task, never at the same moment (which would let bursts follow
            // one another without the clock moving).
            if let Some(b) = self.bursts.remove(&key) {
                if let Some(f) = self.go_on_creating(cx, &key, b) {
                    // The sync that started the burst has passed: the next one (the
                    // retry's) reports it.
                    self.failures.insert(key.clone(), f);
                    self.queue.insert(key);
                }
            }
            return;
        }
        if let Some((ns, name)) = key.split_once('/') {
            self.queue.insert((ns.to_string(), name.to_string()));
        }
        self.run(cx);
    }
    fn busy(&self, _now: Millis) -> bool {
        !self.queue.is_empty()
    }
    fn restart(&mut self) {
        *self = Self::for_kind(self.kind);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn pod(name: &str, node: Option<&str>, phase: &str, ready: bool) -> (Object, i64) {
        let mut p = json!({"metadata": {"name": name, "uid": name, "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": {}, "status": {"phase": phase}});
        if let Some(n) = node {
            p["spec"]["nodeName"] = json!(n);
        }
        if ready {
            p["status"]["conditions"] = json!([{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:10Z"}]);
        }
        (Arc::new(p), 1)
    }

    #[test]
    fn plans_creates_up_to_the_burst_limit() {
        assert_eq!(plan(3, &[], 0), Plan::Create(3));
        assert_eq!(plan(1000, &[], 0), Plan::Create(BURST_REPLICAS));
        assert_eq!(plan(1, &[pod("a", Some("n"), "Running", true)], 0), Plan::Nothing);
    }

    #[test]
    fn scale_down_prefers_unscheduled_then_pending_then_not_ready() {
        let pods = vec![
            pod("running", Some("n1"), "Running", true),
            pod("pending", Some("n1"), "Pending", false),
            pod("unassigned", None, "Pending", false),
            pod("notready", Some("n2"), "Running", false),
        ];
        assert_eq!(plan(1, &pods, 60_000), Plan::Delete(vec!["unassigned".into(), "pending".into(), "notready".into()]));
    }

    fn seeded_api() -> crate::apiserver::ApiServer {
        let mut api = crate::apiserver::ApiServer::new(1, true);
        for o in crate::apiserver::rbac::bootstrap_policy() {
            api.bootstrap_object(o);
        }
        api.bootstrap_object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}));
        api.bootstrap_object(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": "default"}}));
        let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
              "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}});
        api.handle(crate::apiserver::Request::create(rid::REPLICASET, "default", rs, crate::apiserver::Credentials::User(UserInfo::admin()))).unwrap();
        api
    }

    #[test]
    fn a_large_burst_goes_on_in_later_tasks_with_its_slow_start_batches() {
        let mut api = seeded_api();
        let rs = api.store.get_by(rid::REPLICASET, "default", "web").unwrap();
        let mut scaled = (**rs).clone();
        scaled["spec"]["replicas"] = json!(600);
        api.handle(crate::apiserver::Request::update(rid::REPLICASET, "default", "web", scaled, crate::apiserver::Credentials::User(UserInfo::admin())))
            .unwrap();
        let mut rsc = ReplicaSetController::new();
        let mut timers = crate::loops::run_once(&mut rsc, &mut api, 1000);
        let mut counts = vec![api.store.count(rid::POD)];
        while let Some(i) = timers.iter().position(|(_, k, _)| k.starts_with(BURST_KEY)) {
            let (at, key, _) = timers.remove(i);
            assert_eq!((at, key.as_str()), (1000, "burst:default/web"), "the rest at the same moment");
            // Between parts, a sync waits on the burst's expectations.
            crate::loops::run_once(&mut rsc, &mut api, 1000);
            assert_eq!(api.store.count(rid::POD), *counts.last().unwrap());
            timers = crate::loops::timer_once(&mut rsc, &mut api, 1000, &key);
            counts.push(api.store.count(rid::POD));
        }
        // The burst of 500 (BURST_REPLICAS) in slow-start batches 1, 2, 4, ..., 128 and the
        // last 245, 64 creates a task; its last part starts no other burst.
        assert_eq!(counts, [64, 128, 192, 256, 320, 384, 448, 500]);
        let creates = api.trace.requests().iter().filter(|r| r.verb == "create" && r.object.starts_with("Pod/")).count();
        assert_eq!(creates, 500);
        // The next sync (the watch's) sees the burst and makes the last 100, in two parts.
        let timers = crate::loops::run_once(&mut rsc, &mut api, 1005);
        assert_eq!(api.store.count(rid::POD), 564);
        assert!(timers.contains(&(1005, "burst:default/web".to_string(), false)), "{timers:?}");
        crate::loops::timer_once(&mut rsc, &mut api, 1005, "burst:default/web");
        assert_eq!(api.store.count(rid::POD), 600);
        crate::loops::run_once(&mut rsc, &mut api, 1010);
        assert_eq!(api.store.count(rid::POD), 600, "expectations met, nothing more to create");
        let rs = api.store.get_by(rid::REPLICASET, "default", "web").unwrap();
        assert_eq!(rs["status"]["replicas"], 600);
    }

    #[test]
    fn a_sync_creates_the_missing_pods_once_and_expectations_hold_the_next_sync() {
        let mut api = seeded_api();
        let mut rsc = ReplicaSetController::new();
        crate::loops::run_once(&mut rsc, &mut api, 1000);
        assert_eq!(api.store.count(rid::POD), 3, "three pods created in slow-start batches 1 and 2");
        let creates = api.trace.requests().iter().filter(|r| r.verb == "create" && r.object.starts_with("Pod/")).count();
        assert_eq!(creates, 3);
        let events = api.trace.requests().iter().filter(|r| r.verb == "create" && r.object.starts_with("Event/")).count();
        assert_eq!(events, 3, "one SuccessfulCreate each");
        // The pods are now in the informer; expectations are met and nothing more is created.
        crate::loops::run_once(&mut rsc, &mut api, 1005);
        assert_eq!(api.store.count(rid::POD), 3);
        let rs = api.store.get_by(rid::REPLICASET, "default", "web").unwrap();
        assert_eq!(rs["status"]["replicas"], 3);
        assert!(rs["status"].get("readyReplicas").is_none());
    }

    #[test]
    fn a_lowered_replica_count_deletes_the_lowest_ranked_pods() {
        let mut api = seeded_api();
        let mut rsc = ReplicaSetController::new();
        crate::loops::run_once(&mut rsc, &mut api, 1000);
        crate::loops::run_once(&mut rsc, &mut api, 1005);
        let admin = crate::apiserver::Credentials::User(UserInfo::admin());
        api.handle(crate::apiserver::Request::patch(
            rid::REPLICASET,
            "default",
            "web",
            crate::apiserver::PatchType::Merge,
            json!({"spec": {"replicas": 1}}),
            admin,
        ))
        .unwrap();
        crate::loops::run_once(&mut rsc, &mut api, 2000);
        let deletes = api.trace.requests().iter().filter(|r| r.verb == "delete" && r.object.starts_with("Pod/")).count();
        assert_eq!(deletes, 2);
        assert_eq!(api.store.count(rid::POD), 1, "unscheduled pods go at once, without a grace period");
    }

    #[test]
    fn status_counts_ready_and_available() {
        let rs = json!({"metadata": {"generation": 2}, "spec": {"minReadySeconds": 30, "template": {"metadata": {"labels": {"app": "web"}}}}});
        let mut a = (*pod("a", Some("n"), "Running", true).0).clone();
        a["metadata"]["labels"] = json!({"app": "web"});
        let b = pod("b", Some("n"), "Running", false).0;
        let s = status(&rs, &[Arc::new(a), b], 20_000, None);
        assert_eq!(s["replicas"], 2);
        assert_eq!(s["readyReplicas"], 1);
        assert!(s.get("availableReplicas").is_none());
        assert_eq!(s["observedGeneration"], 2);
        let s = status(&rs, &[], 20_000, Some(("FailedCreate", "quota")));
        assert_eq!(s["conditions"][0]["reason"], "FailedCreate");
        // The same failure again keeps the condition as it was (`SetCondition`): a refusal
        // naming another generated pod does not rewrite the status.
        let mut failed = rs.clone();
        failed["status"] = s;
        let again = status(&failed, &[], 40_000, Some(("FailedCreate", "quota, another pod")));
        assert_eq!(again["conditions"][0]["message"], "quota");
        assert_eq!(again["conditions"][0]["lastTransitionTime"], crate::foundation::sim::rfc3339(20_000));
    }
}
