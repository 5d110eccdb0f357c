//! The StatefulSet controller (`pkg/controller/statefulset`: `stateful_set.go`,
//! `stateful_set_control.go`, `stateful_pod_control.go`, `stateful_set_utils.go`).
//!
//! A sync reads the set, its pods and its ControllerRevisions from the informers, adopts
//! orphans and releases pods it no longer selects, finds the current and update revisions
//! (creating one when the template changed), plans purely ([`plan`]) what `updateStatefulSet`
//! would do — in `OrderedReady` mode it stops at the first pod that blocks — carries the
//! plan out through the API server, writes the status and truncates the history. Pods are
//! named `<set>-<ordinal>`; each gets the claims of the set's `volumeClaimTemplates`,
//! created before it as `<template>-<set>-<ordinal>`.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, PatchType, Request, Verb};
use crate::foundation::api::{self, get, get_array, get_i64, get_str, rid, Object, ResourceId};
use crate::foundation::labels::selector_matches;
use crate::foundation::pod::{condition, pod_is_available, pod_is_ready};
use crate::foundation::sim::{parse_rfc3339, Millis};
use crate::foundation::sort::{CollectTree, Sort};
use crate::foundation::value::{json, Map, Value};
use crate::loops::controllers::history;
use crate::loops::events::Source;
use crate::loops::informer::{Informer, WatchState};
use crate::loops::{req_as, Controller, Cx};
use std::collections::{BTreeMap, BTreeSet};

/// `apps.StatefulSetPodNameLabel`.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// `apps.PodIndexLabel`.
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

const COMPONENT: &str = "statefulset-controller";
/// `MaxBatchSize`: upstream's bound on the creations in flight at once in Parallel mode;
/// here the creations of one sync, so that a sync's work stays bounded whatever
/// `spec.replicas` says.
pub const MAX_BATCH_SIZE: usize = 500;

/// `getParentNameAndOrdinal`: `(.*)-([0-9]+)$`, the ordinal an int32.
pub fn parent_and_ordinal(pod_name: &str) -> Option<(&str, i64)> {
    let (parent, ord) = pod_name.rsplit_once('-')?;
    if ord.is_empty() || !ord.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: i64 = ord.parse().ok()?;
    (n <= i32::MAX as i64).then_some((parent, n))
}

pub fn ordinal(pod: &Value) -> i64 {
    parent_and_ordinal(api::name(pod)).map(|(_, o)| o).unwrap_or(-1)
}

fn start_ordinal(set: &Value) -> i64 {
    get_i64(set, &["spec", "ordinals", "start"]).unwrap_or(0)
}

fn replicas(set: &Value) -> i64 {
    get_i64(set, &["spec", "replicas"]).unwrap_or(1)
}

fn in_ordinal_range(pod: &Value, set: &Value) -> bool {
    let o = ordinal(pod);
    o >= start_ordinal(set) && o < start_ordinal(set) + replicas(set)
}

fn is_member_of(set: &Value, pod: &Value) -> bool {
    parent_and_ordinal(api::name(pod)).is_some_and(|(p, _)| p == api::name(set))
}

fn phase(p: &Value) -> &str {
    get_str(p, &["status", "phase"]).unwrap_or("")
}
fn is_created(p: &Value) -> bool {
    !phase(p).is_empty()
}
fn running_and_ready(p: &Value) -> bool {
    phase(p) == "Running" && pod_is_ready(p)
}
fn running_and_available(p: &Value, min_ready: i64, now: Millis) -> bool {
    pod_is_available(p, min_ready, now)
}
pub fn pod_revision(p: &Value) -> &str {
    api::label(p, history::REVISION_HASH_LABEL).unwrap_or("")
}
fn min_ready(set: &Value) -> i64 {
    get_i64(set, &["spec", "minReadySeconds"]).unwrap_or(0)
}
fn monotonic(set: &Value) -> bool {
    get_str(set, &["spec", "podManagementPolicy"]) != Some("Parallel")
}
fn strategy(set: &Value) -> &str {
    get_str(set, &["spec", "updateStrategy", "type"]).unwrap_or("RollingUpdate")
}

/// `getPersistentVolumeClaimName`.
pub fn claim_name(template: &str, set: &str, ordinal: i64) -> String {
    format!("{template}-{set}-{ordinal}")
}

/// `getPersistentVolumeClaims`: the claims a pod of `ordinal` needs, by template name
/// (ordered by name; upstream's map has no order). Labels: the template's, then the
/// selector's matchLabels over them.
pub fn claims_for(set: &Value, ordinal: i64) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for t in get_array(set, &["spec", "volumeClaimTemplates"]) {
        let tname = get_str(t, &["metadata", "name"]).unwrap_or("").to_string();
        let mut claim = t.clone();
        claim["apiVersion"] = json!("v1");
        claim["kind"] = json!("PersistentVolumeClaim");
        if let Some(m) = claim.as_object_mut() {
            m.remove("status");
        }
        api::set(&mut claim, &["metadata", "name"], json!(claim_name(&tname, api::name(set), ordinal)));
        api::set(&mut claim, &["metadata", "namespace"], json!(api::namespace(set)));
        let match_labels = get(set, &["spec", "selector", "matchLabels"]).and_then(Value::as_object).cloned();
        match (api::labels(&claim).cloned(), match_labels) {
            (Some(mut l), Some(m)) => {
                for (k, v) in m.iter() {
                    l.insert(k.clone(), v.clone());
                }
                api::set(&mut claim, &["metadata", "labels"], Value::Object(l));
            }
            (None, Some(m)) => api::set(&mut claim, &["metadata", "labels"], Value::Object(m)),
            _ => {}
        }
        out.insert(tname, claim);
    }
    out
}

/// `updateStorage`: the claims' volumes first, then the pod's other volumes.
fn update_storage(set: &Value, pod: &mut Value) {
    let claims = claims_for(set, ordinal(pod));
    let mut volumes: Vec<Value> = claims.iter().map(|(name, c)| json!({"name": name, "persistentVolumeClaim": {"claimName": api::name(c)}})).collect();
    for v in get_array(pod, &["spec", "volumes"]) {
        if !claims.contains_key(get_str(v, &["name"]).unwrap_or("")) {
            volumes.push(v.clone());
        }
    }
    if !volumes.is_empty() {
        api::set(pod, &["spec", "volumes"], Value::Array(volumes));
    }
}

fn storage_matches(set: &Value, pod: &Value) -> bool {
    let o = ordinal(pod);
    if o < 0 {
        return false;
    }
    let vols = get_array(pod, &["spec", "volumes"]);
    get_array(set, &["spec", "volumeClaimTemplates"]).iter().all(|t| {
        let tname = get_str(t, &["metadata", "name"]).unwrap_or("");
        vols.iter().any(|v| {
            get_str(v, &["name"]) == Some(tname) && get_str(v, &["persistentVolumeClaim", "claimName"]) == Some(claim_name(tname, api::name(set), o).as_str())
        })
    })
}

/// `updateIdentity`: the pod-name and pod-index labels.
fn update_identity(set: &Value, pod: &mut Value) {
    let o = ordinal(pod);
    let name = format!("{}-{o}", api::name(set));
    let labels = api::entry(pod, &["metadata", "labels"]);
    labels.insert(POD_NAME_LABEL, json!(name));
    labels.insert(POD_INDEX_LABEL, json!(o.to_string()));
}

fn identity_matches(set: &Value, pod: &Value) -> bool {
    match parent_and_ordinal(api::name(pod)) {
        Some((parent, o)) => {
            parent == api::name(set) && api::namespace(pod) == api::namespace(set) && api::label(pod, POD_NAME_LABEL) == Some(api::name(pod)) && o >= 0
        }
        None => false,
    }
}

/// `newStatefulSetPod`: the template as a pod named for `ordinal`, with its hostname,
/// subdomain, identity labels and claim volumes.
pub fn new_pod(set: &Value, ordinal: i64) -> Value {
    let name = format!("{}-{ordinal}", api::name(set));
    let template = get(set, &["spec", "template"]).cloned().unwrap_or_else(|| json!({}));
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "generateName": format!("{}-", api::name(set)), "namespace": api::namespace(set),
            "ownerReferences": [api::owner_reference(set)]},
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({}))});
    for f in ["labels", "annotations", "finalizers"] {
        if let Some(v) = get(&template, &["metadata", f]) {
            pod["metadata"][f] = v.clone();
        }
    }
    update_identity(set, &mut pod);
    pod["spec"]["hostname"] = json!(name);
    if let Some(svc) = get_str(set, &["spec", "serviceName"]).filter(|s| !s.is_empty()) {
        pod["spec"]["subdomain"] = json!(svc);
    }
    update_storage(set, &mut pod);
    pod
}

/// `newVersionedStatefulSetPod`, with Go's operator precedence kept:
/// `(RollingUpdate && rollingUpdate == nil && ord < start+currentReplicas) || (rollingUpdate != nil && ord < start+partition)`.
pub fn new_versioned_pod(current_set: &Value, update_set: &Value, current: &str, update: &str, ordinal: i64) -> Value {
    let ru = get(current_set, &["spec", "updateStrategy", "rollingUpdate"]).filter(|v| !v.is_null());
    let start = start_ordinal(current_set);
    let at_current =
        (strategy(current_set) == "RollingUpdate" && ru.is_none() && ordinal < start + get_i64(current_set, &["status", "currentReplicas"]).unwrap_or(0))
            || ru.is_some_and(|r| ordinal < start + get_i64(r, &["partition"]).unwrap_or(0));
    let (set, rev) = if at_current { (current_set, current) } else { (update_set, update) };
    let mut pod = new_pod(set, ordinal);
    api::entry(&mut pod, &["metadata", "labels"]).insert(history::REVISION_HASH_LABEL, json!(rev));
    pod
}

/// `getPersistentVolumeClaimRetentionPolicy`: (whenDeleted, whenScaled), Retain by default.
fn retention(set: &Value) -> (&str, &str) {
    (
        get_str(set, &["spec", "persistentVolumeClaimRetentionPolicy", "whenDeleted"]).unwrap_or("Retain"),
        get_str(set, &["spec", "persistentVolumeClaimRetentionPolicy", "whenScaled"]).unwrap_or("Retain"),
    )
}

fn has_owner_ref(claim: &Value, owner_uid: &str) -> bool {
    get_array(claim, &["metadata", "ownerReferences"]).iter().any(|r| get_str(r, &["uid"]) == Some(owner_uid))
}

fn matches_ref(r: &Value, owner: &Value, kind: &str) -> bool {
    get_str(r, &["kind"]) == Some(kind) && get_str(r, &["name"]) == Some(api::name(owner))
}

/// `hasUnexpectedController`: a controller reference to something other than the set or pod.
fn has_unexpected_controller(claim: &Value, set: &Value, pod: &Value) -> bool {
    get_array(claim, &["metadata", "ownerReferences"]).iter().any(|r| {
        get_str(r, &["uid"]) != Some(api::uid(set)) && get_str(r, &["uid"]) != Some(api::uid(pod)) && r.get("controller").and_then(Value::as_bool) == Some(true)
    })
}

/// `isClaimOwnerUpToDate`: the claim's references agree with the retention policy.
pub fn claim_owner_up_to_date(claim: &Value, set: &Value, pod: &Value) -> bool {
    let stale = |owner: &Value, kind: &str| {
        get_array(claim, &["metadata", "ownerReferences"])
            .iter()
            .find(|r| matches_ref(r, owner, kind))
            .is_some_and(|r| get_str(r, &["uid"]) != Some(api::uid(owner)))
    };
    if stale(set, "StatefulSet") || stale(pod, "Pod") {
        return true;
    }
    let (on_set, on_pod) = (has_owner_ref(claim, api::uid(set)), has_owner_ref(claim, api::uid(pod)));
    if has_unexpected_controller(claim, set, pod) {
        return !(on_set || on_pod);
    }
    // `hasNonControllerOwner`: our reference without controller: true needs rewriting.
    let non_controller = get_array(claim, &["metadata", "ownerReferences"]).iter().any(|r| {
        (get_str(r, &["uid"]) == Some(api::uid(set)) || get_str(r, &["uid"]) == Some(api::uid(pod)))
            && r.get("controller").and_then(Value::as_bool) != Some(true)
    });
    if non_controller {
        return false;
    }
    let scaled_down = !in_ordinal_range(pod, set);
    match retention(set) {
        ("Delete", "Retain") => on_set && !on_pod,
        ("Retain", "Delete") => !on_set && scaled_down == on_pod,
        ("Delete", "Delete") => scaled_down != on_set && scaled_down == on_pod,
        _ => !on_set && !on_pod,
    }
}

/// `updateClaimOwnerRefForSetAndPod`: the claim's references rewritten for the policy.
pub fn update_claim_owner_refs(claim: &mut Value, set: &Value, pod: &Value) {
    let unexpected = has_unexpected_controller(claim, set, pod);
    let mut refs: Vec<Value> = get_array(claim, &["metadata", "ownerReferences"])
        .iter()
        .filter(|r| !matches_ref(r, set, "StatefulSet") && !matches_ref(r, pod, "Pod"))
        .cloned()
        .collect();
    if !unexpected {
        let scaled_down = !in_ordinal_range(pod, set);
        let mut add = |owner: &Value, api_version: &str, kind: &str| {
            if !refs.iter().any(|r| get_str(r, &["uid"]) == Some(api::uid(owner))) {
                refs.push(json!({"apiVersion": api_version, "kind": kind, "name": api::name(owner), "uid": api::uid(owner),
                    "controller": true, "blockOwnerDeletion": true}));
            }
        };
        match retention(set) {
            ("Delete", "Retain") => add(set, "apps/v1", "StatefulSet"),
            ("Retain", "Delete") if scaled_down => add(pod, "v1", "Pod"),
            ("Delete", "Delete") if scaled_down => add(pod, "v1", "Pod"),
            ("Delete", "Delete") => add(set, "apps/v1", "StatefulSet"),
            _ => {}
        }
    }
    if refs.is_empty() {
        if let Some(m) = claim.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("ownerReferences");
        }
    } else {
        api::set(claim, &["metadata", "ownerReferences"], Value::Array(refs));
    }
}

/// One write `updateStatefulSet` decides on.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Create a pod (its missing claims first); `why` explains the decision.
    Create {
        pod: Value,
        why: String,
    },
    /// A Pending pod's claims: create the missing ones, fix their references.
    Claims {
        pod: Object,
    },
    /// Restore a pod's identity, storage or claim references.
    Update {
        pod: Value,
    },
    /// Fix a condemned pod's claim references for the retention policy.
    Retention {
        pod: Object,
    },
    Delete {
        pod: String,
        why: String,
    },
}

/// What a sync of one StatefulSet does: its writes in order, where it stopped waiting,
/// and the status to record.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub steps: Vec<Step>,
    pub waiting: Option<String>,
    pub status: Value,
    /// A Parallel set reached [`MAX_BATCH_SIZE`] creations: the next sync, which the new
    /// pods' events bring, makes more.
    pub more: bool,
}

/// The revisions a sync works with: names and the set as each recorded it.
pub struct Revisions<'a> {
    pub current: &'a str,
    pub update: &'a str,
    pub current_set: &'a Value,
    pub update_set: &'a Value,
    pub collision_count: i64,
}

#[derive(Default, Debug, Clone, Copy, PartialEq)]
struct Counts {
    replicas: i64,
    ready: i64,
    available: i64,
    current: i64,
    updated: i64,
}

fn count(pods: &[&Value], min_ready: i64, now: Millis, current: &str, update: &str) -> Counts {
    let mut c = Counts::default();
    for p in pods {
        if is_created(p) {
            c.replicas += 1;
        }
        if running_and_ready(p) {
            c.ready += 1;
            if running_and_available(p, min_ready, now) {
                c.available += 1;
            }
        }
        if is_created(p) && !api::is_deleting(p) {
            if pod_revision(p) == current {
                c.current += 1;
            }
            if pod_revision(p) == update {
                c.updated += 1;
            }
        }
    }
    c
}

/// `getStatefulSetMaxUnavailable`: an int or a percentage of replicas rounded up, at least 1.
pub fn max_unavailable(set: &Value) -> i64 {
    let n = replicas(set);
    let v = get(set, &["spec", "updateStrategy", "rollingUpdate", "maxUnavailable"]);
    let m = match v {
        Some(Value::String(s)) if s.ends_with('%') => {
            let pct: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
            (pct * n + 99) / 100
        }
        Some(v) => v.as_i64().unwrap_or(1),
        None => 1,
    };
    m.max(1)
}

/// `isUnavailable`: not available for `minReadySeconds`, or terminating.
fn unavailable(p: &Value, min_ready: i64, now: Millis) -> bool {
    !running_and_available(p, min_ready, now) || api::is_deleting(p)
}

/// The pure core of `updateStatefulSet` and `updateStatefulSetAfterInvariantEstablished`.
/// `claims` looks a claim up by name in the cache.
///
/// Upstream fills a slice of `replicas` entries, one per ordinal, with a new pod for each
/// missing one. Here a missing ordinal's pod is built only when the plan reaches it, so that
/// the work of a sync follows the pods that exist and the creations made, not
/// `spec.replicas` (which the API lets be 2^31-1). A Parallel set creates at most
/// [`MAX_BATCH_SIZE`] pods per sync and says so in `more`.
pub fn plan(set: &Value, revs: &Revisions, pods: &[Object], claims: &dyn Fn(&str) -> Option<Object>, now: Millis) -> Plan {
    let n = replicas(set).max(0);
    let start = start_ordinal(set);
    let min_ready = min_ready(set);
    let obj = format!("StatefulSet/{}/{}", api::namespace(set), api::name(set));
    // In-range pods by index (ordinal - start), and condemned pods.
    let mut existing: BTreeMap<i64, Object> = BTreeMap::new();
    let mut condemned: Vec<Object> = Vec::new();
    for p in pods {
        if in_ordinal_range(p, set) {
            existing.insert(ordinal(p) - start, p.clone());
        } else if ordinal(p) >= 0 {
            condemned.push(p.clone());
        }
    }
    let slot = |i: i64| -> Value {
        match existing.get(&i) {
            Some(p) => (**p).clone(),
            None => new_versioned_pod(revs.current_set, revs.update_set, revs.current, revs.update, start + i),
        }
    };
    // The lowest index with no pod (a pod not created yet is unavailable).
    let mut first_missing = None;
    let mut expect = 0;
    for &i in existing.keys() {
        if i != expect {
            break;
        }
        expect += 1;
    }
    if expect < n {
        first_missing = Some(expect);
    }
    condemned.sort_stable_by_key(|p| std::cmp::Reverse(ordinal(p)));
    let first_existing_unavailable = existing.iter().find(|(_, p)| unavailable(p, min_ready, now)).map(|(i, _)| *i);
    let first_unhealthy: Option<String> = match (first_missing, first_existing_unavailable) {
        (Some(a), Some(b)) => Some(api::name(&slot(a.min(b))).to_string()),
        (Some(a), None) | (None, Some(a)) => Some(api::name(&slot(a)).to_string()),
        (None, None) => condemned.iter().rev().find(|p| unavailable(p, min_ready, now)).map(|p| api::name(p).to_string()),
    };

    let all: Vec<&Value> = pods.iter().map(|p| &**p).collect();
    let counts = count(&all, min_ready, now, revs.current, revs.update);
    let mut out = Plan { steps: Vec::new(), waiting: None, status: Value::Null, more: false };
    let finish = |mut out: Plan, c: Counts| {
        out.status = status(set, revs, c);
        out
    };
    if api::is_deleting(set) {
        return finish(out, counts);
    }
    let mono = monotonic(set);
    let policy_word = if mono { "OrderedReady" } else { "Parallel" };
    let desired = n;

    // Each replica in ordinal order (`processReplica`): the existing pods, and the missing
    // ordinals as the walk reaches them.
    let mut created = 0usize;
    let mut i = 0i64;
    while i < n {
        let Some(p) = existing.get(&i).cloned() else {
            let pod = slot(i);
            let name = api::name(&pod).to_string();
            let why = if mono && i > 0 {
                format!("{obj} wants {desired} replicas: created {name} ({policy_word}: {} is Running and Ready)", api::name(&slot(i - 1)))
            } else if mono {
                format!("{obj} wants {desired} replicas: created {name} ({policy_word}: the lowest ordinal goes first)")
            } else {
                format!("{obj} wants {desired} replicas: created {name} ({policy_word}: without waiting for the others)")
            };
            out.steps.push(Step::Create { pod, why });
            if mono {
                return finish(out, counts);
            }
            created += 1;
            if created >= MAX_BATCH_SIZE {
                out.more = true;
                return finish(out, counts);
            }
            i += 1;
            continue;
        };
        let pod: &Value = &p;
        let name = api::name(pod).to_string();
        if matches!(phase(pod), "Failed" | "Succeeded") {
            if !api::is_deleting(pod) {
                out.steps
                    .push(Step::Delete { pod: name.clone(), why: format!("{obj}: {name} has phase {}; deleting it so that it is created again", phase(pod)) });
            }
            if mono {
                out.waiting = Some(format!("{obj} waits: {name} is being replaced ({policy_word})"));
                return finish(out, counts);
            }
            i += 1;
            continue;
        }
        if phase(pod) == "Pending" {
            let missing = claims_for(set, ordinal(pod)).values().any(|c| claims(api::name(c)).is_none());
            let stale_refs = claims_for(set, ordinal(pod)).values().filter_map(|c| claims(api::name(c))).any(|c| !claim_owner_up_to_date(&c, set, pod));
            if missing || stale_refs {
                out.steps.push(Step::Claims { pod: p.clone() });
            }
        }
        if api::is_deleting(pod) && mono {
            out.waiting = Some(format!("{obj} waits: {name} is terminating ({policy_word})"));
            return finish(out, counts);
        }
        if !running_and_ready(pod) && mono {
            out.waiting = Some(format!("{obj} waits: {name} is not Running and Ready yet ({policy_word})"));
            return finish(out, counts);
        }
        if !running_and_available(pod, min_ready, now) && mono {
            out.waiting = Some(format!("{obj} waits: {name} is Ready but not yet available (minReadySeconds: {min_ready}, {policy_word})"));
            return finish(out, counts);
        }
        let retention_ok =
            claims_for(revs.update_set, ordinal(pod)).values().filter_map(|c| claims(api::name(c))).all(|c| claim_owner_up_to_date(&c, revs.update_set, pod));
        if !(identity_matches(set, pod) && storage_matches(set, pod) && retention_ok) {
            out.steps.push(Step::Update { pod: pod.clone() });
        }
        i += 1;
    }

    // Condemned pods' claims follow the retention policy before the pods go.
    for p in &condemned {
        let ok = claims_for(revs.update_set, ordinal(p)).values().filter_map(|c| claims(api::name(c))).all(|c| claim_owner_up_to_date(&c, revs.update_set, p));
        if !ok {
            out.steps.push(Step::Retention { pod: p.clone() });
        }
    }

    // Scale down, highest ordinal first (`processCondemned`).
    for p in &condemned {
        let name = api::name(p).to_string();
        if api::is_deleting(p) {
            if mono {
                out.waiting = Some(format!("{obj} waits: {name} is terminating before the next scale-down ({policy_word})"));
                return finish(out, counts);
            }
            continue;
        }
        let is_first = first_unhealthy.as_deref() == Some(name.as_str());
        if mono && !is_first && !running_and_ready(p) {
            out.waiting = Some(format!(
                "{obj} waits: {} must be Running and Ready before {name} is deleted ({policy_word})",
                first_unhealthy.as_deref().unwrap_or(&name)
            ));
            return finish(out, counts);
        }
        if mono && !is_first && !running_and_available(p, min_ready, now) {
            out.waiting =
                Some(format!("{obj} waits: {} must be available before {name} is deleted ({policy_word})", first_unhealthy.as_deref().unwrap_or(&name)));
            return finish(out, counts);
        }
        let why = format!("{obj} has {} pods, wants {desired}: deleting {name} (highest ordinal first)", pods.len());
        out.steps.push(Step::Delete { pod: name, why });
        if mono {
            return finish(out, counts);
        }
    }

    if strategy(set) == "OnDelete" {
        return finish(out, counts);
    }

    // Rolling update with maxUnavailable, highest ordinal first, down to the partition. A
    // missing ordinal counts as unavailable; its pod will be made at the right revision.
    let mut counts = counts;
    let update_min = get_i64(set, &["spec", "updateStrategy", "rollingUpdate", "partition"]).unwrap_or(0).max(0);
    let max_unavailable = max_unavailable(set);
    let unavailable_pods = (n - existing.len() as i64) + existing.values().filter(|p| unavailable(p, min_ready, now)).count() as i64;
    if unavailable_pods >= max_unavailable {
        let stale = existing.range(update_min..).any(|(_, p)| pod_revision(p) != revs.update);
        if stale {
            out.waiting = Some(format!("{obj} waits: {unavailable_pods} pod(s) unavailable, maxUnavailable is {max_unavailable} (RollingUpdate)"));
        }
        return finish(out, counts);
    }
    let mut to_delete = max_unavailable - unavailable_pods;
    for (_, p) in existing.range(update_min..).rev() {
        if to_delete == 0 {
            break;
        }
        if pod_revision(p) != revs.update && !api::is_deleting(p) {
            let name = api::name(p).to_string();
            out.steps.push(Step::Delete {
                pod: name.clone(),
                why: format!(
                    "{obj} rolls to revision {}: deleting {name}, which is at {} (highest ordinal first, maxUnavailable {max_unavailable})",
                    revs.update,
                    pod_revision(p)
                ),
            });
            to_delete -= 1;
            counts.current -= 1;
        }
    }
    finish(out, counts)
}

/// The status `updateStatefulSet` records, after `completeRollingUpdate`; zero counts
/// omitted as Go's omitempty does, `replicas` and `availableReplicas` always written.
fn status(set: &Value, revs: &Revisions, mut c: Counts) -> Value {
    let mut current_revision = revs.current.to_string();
    if strategy(set) == "RollingUpdate" && c.updated == c.replicas && c.ready == c.replicas {
        c.current = c.updated;
        current_revision = revs.update.to_string();
    }
    let mut s = Map::new();
    s.insert("observedGeneration", json!(api::generation(set)));
    s.insert("replicas", json!(c.replicas));
    for (k, v) in [("readyReplicas", c.ready), ("currentReplicas", c.current), ("updatedReplicas", c.updated)] {
        if v != 0 {
            s.insert(k, json!(v));
        }
    }
    s.insert("availableReplicas", json!(c.available));
    if !current_revision.is_empty() {
        s.insert("currentRevision", json!(current_revision));
    }
    if !revs.update.is_empty() {
        s.insert("updateRevision", json!(revs.update));
    }
    s.insert("collisionCount", json!(revs.collision_count));
    Value::Object(s)
}

/// `inconsistentStatus`: whether the recorded status must be rewritten.
fn inconsistent(set: &Value, new: &Value) -> bool {
    let old = set.get("status").cloned().unwrap_or(Value::Null);
    let num = |v: &Value, k: &str| get_i64(v, &[k]).unwrap_or(0);
    let st = |v: &Value, k: &str| get_str(v, &[k]).unwrap_or("").to_string();
    num(new, "observedGeneration") > num(&old, "observedGeneration")
        || ["replicas", "currentReplicas", "readyReplicas", "updatedReplicas", "availableReplicas"].iter().any(|k| num(new, k) != num(&old, k))
        || ["currentRevision", "updateRevision"].iter().any(|k| st(new, k) != st(&old, k))
}

#[derive(Clone)]
pub struct StatefulSetController {
    user: UserInfo,
    source: Source,
    sets: Informer,
    pods: Informer,
    revisions: Informer,
    claims: Informer,
    queue: BTreeSet<(String, String)>,
    /// The last wait traced per set, so that a wait is traced when it starts.
    waits: BTreeMap<(String, String), String>,
}

impl Default for StatefulSetController {
    fn default() -> Self {
        Self::new()
    }
}

impl StatefulSetController {
    pub fn new() -> Self {
        let user = UserInfo::controller("statefulset-controller");
        StatefulSetController {
            source: Source { component: COMPONENT, host: String::new(), user: user.clone() },
            user,
            sets: Informer::new(rid::STATEFULSET),
            pods: Informer::new(rid::POD),
            revisions: Informer::new(rid::CONTROLLERREVISION),
            claims: Informer::new(rid::PVC),
            queue: BTreeSet::new(),
            waits: BTreeMap::new(),
        }
    }

    fn creds(&self) -> Credentials {
        Credentials::User(self.user.clone())
    }

    fn call(&self, cx: &mut Cx, r: Request) -> Result<Object, crate::foundation::status::Status> {
        cx.api.handle(req_as(r, COMPONENT, &self.user))
    }

    fn owner_of(o: &Value, kind: &str) -> Option<String> {
        let r = api::controller_ref(o)?;
        (get_str(r, &["kind"]) == Some(kind)).then(|| get_str(r, &["name"]).unwrap_or("").to_string())
    }

    fn drop_caches(&mut self) {
        if self.pods.state != WatchState::Empty {
            self.pods = Informer::new(rid::POD);
            self.revisions = Informer::new(rid::CONTROLLERREVISION);
            self.claims = Informer::new(rid::PVC);
        }
    }

    fn sync_informers(&mut self, cx: &mut Cx) {
        let fresh = self.sets.state == WatchState::Empty;
        for d in self.sets.sync(&cx.api.store).deltas {
            let key = (api::namespace(&d.object).to_string(), api::name(&d.object).to_string());
            if d.kind == EventType::Deleted {
                self.waits.remove(&key);
            } else {
                self.queue.insert(key);
            }
        }
        if self.sets.is_empty() && !fresh {
            // Nothing to reconcile: a cluster without StatefulSets keeps no copy of its pods,
            // revisions and claims for this loop. They are listed again when a set appears.
            self.drop_caches();
            return;
        }
        // Revisions are only listed: upstream's controller has no event handler on them, so
        // a revision the garbage collector deletes from a set being deleted in the
        // foreground does not wake it to record the revision again.
        self.revisions.sync(&cx.api.store);
        self.claims.sync(&cx.api.store);
        for d in self.pods.sync(&cx.api.store).deltas {
            let ns = api::namespace(&d.object).to_string();
            let owner = Self::owner_of(&d.object, "StatefulSet");
            let old_owner = d.old.as_ref().and_then(|o| Self::owner_of(o, "StatefulSet"));
            if let Some(o) = &old_owner {
                self.queue.insert((ns.clone(), o.clone()));
            }
            match owner {
                Some(o) => {
                    self.queue.insert((ns, o));
                }
                None if d.kind != EventType::Deleted && !api::is_deleting(&d.object) => {
                    // An orphan may be adopted by a set that selects it.
                    let matching: Vec<String> = self
                        .sets
                        .list(Some(&ns))
                        .filter(|s| selector_matches(get(s, &["spec", "selector"]), api::labels(&d.object)))
                        .map(|s| api::name(s).to_string())
                        .collect();
                    for s in matching {
                        self.queue.insert((ns.clone(), s));
                    }
                }
                None => {}
            }
        }
        if fresh {
            let msg = format!("listed {} StatefulSets and {} Pods", self.sets.len(), self.pods.len());
            cx.trace(Flow::ReplicaSetController, "list", "StatefulSet".into(), "ok", &cx.api.store.revision().to_string(), msg);
        }
    }

    /// `getPodsForStatefulSet`: pods it controls and orphans it may adopt, whose names make
    /// them members; controlled pods it no longer selects are released.
    fn claim_pods(&self, cx: &mut Cx, set: &Object) -> Vec<Object> {
        let ns = api::namespace(set).to_string();
        let selector = get(set, &["spec", "selector"]);
        let uid = api::uid(set).to_string();
        let mut out = Vec::new();
        let candidates: Vec<Object> = self.pods.list(Some(&ns)).cloned().collect();
        for p in candidates {
            let matches = selector_matches(selector, api::labels(&p)) && is_member_of(set, &p);
            match api::controller_ref(&p) {
                Some(r) if get_str(r, &["uid"]) == Some(uid.as_str()) => {
                    if matches {
                        out.push(p);
                    } else if !api::is_deleting(set) {
                        let patch = json!({"metadata": {"ownerReferences": [{"$patch": "delete", "uid": uid}], "uid": api::uid(&p)}});
                        let _ = self.call(cx, Request::patch(rid::POD, &ns, api::name(&p), PatchType::Strategic, patch, self.creds()));
                    }
                }
                Some(_) => {}
                None => {
                    if matches && !api::is_deleting(&p) && !api::is_deleting(set) {
                        let mut refs = get_array(&p, &["metadata", "ownerReferences"]).to_vec();
                        refs.push(api::owner_reference(set));
                        let patch = json!({"metadata": {"ownerReferences": refs, "uid": api::uid(&p)}});
                        if let Ok(adopted) = self.call(cx, Request::patch(rid::POD, &ns, api::name(&p), PatchType::Strategic, patch, self.creds())) {
                            cx.trace(
                                Flow::ReplicaSetController,
                                "adopt",
                                format!("Pod/{ns}/{}", api::name(&p)),
                                "ok",
                                api::resource_version(&adopted),
                                format!("StatefulSet/{ns}/{} adopted orphan pod {}", api::name(set), api::name(&p)),
                            );
                            out.push(adopted);
                        }
                    }
                }
            }
        }
        out.sort_stable_by_key(|p| ordinal(p));
        out
    }

    /// `ListRevisions` and `adoptOrphanRevisions`: the set's revisions and matching orphans.
    fn revisions_for(&self, cx: &mut Cx, set: &Object) -> Vec<Object> {
        let ns = api::namespace(set).to_string();
        let selector = get(set, &["spec", "selector"]);
        let mut out = Vec::new();
        let listed: Vec<Object> = self.revisions.list(Some(&ns)).filter(|r| selector_matches(selector, api::labels(r))).cloned().collect();
        for r in listed {
            match api::controller_ref(&r) {
                Some(c) if get_str(c, &["uid"]) == Some(api::uid(set)) => out.push(r),
                Some(_) => {}
                None => {
                    if api::is_deleting(set) {
                        continue;
                    }
                    let patch = json!({"metadata": {"ownerReferences": [api::owner_reference(set)], "uid": api::uid(&r)}});
                    if let Ok(a) = self.call(cx, Request::patch(rid::CONTROLLERREVISION, &ns, api::name(&r), PatchType::Strategic, patch, self.creds())) {
                        out.push(a);
                    }
                }
            }
        }
        history::sort_by_revision(&mut out);
        out
    }

    /// `getStatefulSetRevisions`: the current and update revisions and the collision count;
    /// creates the update revision or renumbers an equal older one.
    fn get_revisions(&self, cx: &mut Cx, set: &Object, revisions: &[Object]) -> Result<(Object, Object, i64), String> {
        let ns = api::namespace(set).to_string();
        let mut collision = get_i64(set, &["status", "collisionCount"]).unwrap_or(0);
        let next = history::next_revision(revisions);
        let candidate = history::new_revision(
            set,
            get(set, &["spec", "template", "metadata", "labels"]).and_then(Value::as_object),
            history::template_patch(set),
            next,
            collision,
        );
        let mut candidate = candidate;
        if let Some(anns) = get(set, &["metadata", "annotations"]).cloned() {
            candidate["metadata"]["annotations"] = anns;
        }
        let equal = history::find_equal(revisions, &candidate);
        let update: Object = if let (Some(last), Some(eq)) = (revisions.last(), equal.last()) {
            if history::equal_revision(last, eq) {
                last.clone()
            } else {
                // Back to an earlier template: that revision becomes the newest.
                let mut body = (***eq).clone();
                body["revision"] = json!(next);
                self.call(cx, Request::update(rid::CONTROLLERREVISION, &ns, api::name(eq), body, self.creds())).map_err(|s| s.message)?
            }
        } else {
            // `CreateControllerRevision`: a new name for each collision with different data.
            loop {
                let hash = history::hash_revision(&candidate["data"], Some(collision));
                let mut body = candidate.clone();
                body["metadata"]["name"] = json!(history::revision_name(api::name(set), &hash));
                let name = get_str(&body, &["metadata", "name"]).unwrap_or("").to_string();
                match self.call(cx, Request::create(rid::CONTROLLERREVISION, &ns, body, self.creds())) {
                    Ok(r) => {
                        cx.trace(
                            Flow::ReplicaSetController,
                            "create-revision",
                            format!("ControllerRevision/{ns}/{name}"),
                            "ok",
                            api::resource_version(&r),
                            format!("StatefulSet/{ns}/{} recorded its pod template as revision {next} ({name})", api::name(set)),
                        );
                        break r;
                    }
                    Err(s) if s.code == 409 => {
                        let existing = self.call(cx, Request::new(Verb::Get, rid::CONTROLLERREVISION, &ns, &name, self.creds())).map_err(|s| s.message)?;
                        if existing.get("data") == candidate.get("data") {
                            break existing;
                        }
                        collision += 1;
                    }
                    Err(s) => return Err(s.message),
                }
            }
        };
        let current = revisions.iter().find(|r| Some(api::name(r)) == get_str(set, &["status", "currentRevision"])).cloned().unwrap_or_else(|| update.clone());
        Ok((current, update, collision))
    }

    #[inline(never)]
    fn sync(&mut self, cx: &mut Cx, key: &(String, String)) {
        let Some(set) = self.sets.get(&key.0, &key.1).cloned() else { return };
        let obj = format!("StatefulSet/{}/{}", key.0, key.1);
        let revisions = self.revisions_for(cx, &set);
        let pods = self.claim_pods(cx, &set);
        let (current, update, collision) = match self.get_revisions(cx, &set, &revisions) {
            Ok(r) => r,
            Err(msg) => {
                cx.trace(Flow::ReplicaSetController, "create-revision", obj, "error", "", msg);
                cx.every(5000, format!("{}/{}", key.0, key.1));
                return;
            }
        };
        let current_set = history::apply_revision(&set, &current);
        let update_set = history::apply_revision(&set, &update);
        let revs = Revisions {
            current: api::name(&current),
            update: api::name(&update),
            current_set: &current_set,
            update_set: &update_set,
            collision_count: collision,
        };
        let claims = &self.claims;
        let ns = key.0.clone();
        let lookup = |name: &str| claims.get(&ns, name).cloned();
        let plan = plan(&set, &revs, &pods, &lookup, cx.now);
        let mut failed = false;
        for step in &plan.steps {
            if !self.execute(cx, &set, &update_set, step) {
                failed = true;
                break;
            }
        }
        match &plan.waiting {
            Some(w) if !failed => {
                if self.waits.get(key) != Some(w) {
                    cx.trace(Flow::ReplicaSetController, "wait", obj.clone(), "pending", "", w.clone());
                    self.waits.insert(key.clone(), w.clone());
                }
            }
            _ => {
                self.waits.remove(key);
            }
        }
        if failed {
            cx.every(5000, format!("{}/{}", key.0, key.1));
        }
        // Status (`updateStatefulSetStatus`).
        if inconsistent(&set, &plan.status) {
            let mut body = (*set).clone();
            let mut status = plan.status.clone();
            if let Some(conds) = get(&set, &["status", "conditions"]) {
                status["conditions"] = conds.clone();
            }
            body["status"] = status;
            if let Some(m) = body.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("resourceVersion");
            }
            let _ = self.call(cx, Request::update(rid::STATEFULSET, &key.0, &key.1, body, self.creds()).with_sub("status"));
        }
        // `truncateHistory`: live revisions are the current, the update and the pods'.
        let mut live: BTreeSet<String> = pods.iter().map(|p| pod_revision(p).to_string()).collect_tree();
        live.insert(api::name(&current).to_string());
        live.insert(api::name(&update).to_string());
        let limit = get_i64(&set, &["spec", "revisionHistoryLimit"]).unwrap_or(10);
        let doomed: Vec<String> = history::to_truncate(&revisions, &live, limit).iter().map(|r| api::name(r).to_string()).collect();
        for name in doomed {
            let _ = self.call(cx, Request::delete(rid::CONTROLLERREVISION, &key.0, &name, self.creds()));
        }
        // Availability after minReadySeconds needs a later look.
        let min_ready = min_ready(&set);
        if min_ready > 0 {
            let due = pods
                .iter()
                .filter(|p| running_and_ready(p) && !pod_is_available(p, min_ready, cx.now))
                .filter_map(|p| condition(p, "Ready").and_then(|c| get_str(c, &["lastTransitionTime"])).and_then(parse_rfc3339))
                .map(|since| since + min_ready as Millis * 1000)
                .min();
            if let Some(due) = due {
                cx.after(due.saturating_sub(cx.now).max(1), format!("{}/{}", key.0, key.1));
            }
        }
    }

    fn pod_event(&self, cx: &mut Cx, set: &Value, verb: &str, pod: &str, err: Option<&str>) {
        let title = format!("{}{}", &verb[..1].to_ascii_uppercase(), &verb[1..]);
        match err {
            None => cx.event(
                &self.source,
                set,
                None,
                "Normal",
                &format!("Successful{title}"),
                &format!("{verb} Pod {pod} in StatefulSet {} successful", api::name(set)),
                None,
            ),
            Some(e) => cx.event(
                &self.source,
                set,
                None,
                "Warning",
                &format!("Failed{title}"),
                &format!("{verb} Pod {pod} in StatefulSet {} failed error: {e}", api::name(set)),
                None,
            ),
        }
    }

    /// `createPersistentVolumeClaims`: the pod's missing claims; the error, aggregated.
    fn create_claims(&self, cx: &mut Cx, set: &Value, pod: &Value) -> Result<(), String> {
        let ns = api::namespace(set).to_string();
        let mut errs = Vec::new();
        for claim in claims_for(set, ordinal(pod)).into_values() {
            let cname = api::name(&claim).to_string();
            match self.claims.get(&ns, &cname) {
                None => {
                    let r = self.call(cx, Request::create(rid::PVC, &ns, claim, self.creds()));
                    let set_name = api::name(set);
                    let pod_name = api::name(pod);
                    match r {
                        Ok(c) => {
                            cx.trace(
                                Flow::ReplicaSetController,
                                "create-claim",
                                format!("PersistentVolumeClaim/{ns}/{cname}"),
                                "ok",
                                api::resource_version(&c),
                                format!("StatefulSet/{ns}/{set_name} created claim {cname} for {pod_name} from volumeClaimTemplates"),
                            );
                            let msg = format!("create Claim {cname} Pod {pod_name} in StatefulSet {set_name} success");
                            cx.event(&self.source, set, None, "Normal", "SuccessfulCreate", &msg, None);
                        }
                        Err(s) => {
                            errs.push(format!("failed to create PVC {cname}: {}", s.message));
                            if s.code != 409 {
                                let msg = format!("create Claim {cname} for Pod {pod_name} in StatefulSet {set_name} failed error: {}", s.message);
                                cx.event(&self.source, set, None, "Warning", "FailedCreate", &msg, None);
                            }
                        }
                    }
                }
                Some(c) if api::is_deleting(c) => errs.push(format!("pvc {cname} is being deleted")),
                Some(_) => {}
            }
        }
        if errs.is_empty() {
            Ok(())
        } else if errs.len() == 1 {
            Err(errs.remove(0))
        } else {
            Err(format!("[{}]", errs.join(", ")))
        }
    }

    /// `UpdatePodClaimForRetentionPolicy`: rewrite the references of the pod's claims.
    fn fix_claim_refs(&self, cx: &mut Cx, set: &Value, pod: &Value) -> Result<(), String> {
        let ns = api::namespace(set).to_string();
        for claim in claims_for(set, ordinal(pod)).into_values() {
            let cname = api::name(&claim).to_string();
            let Some(c) = self.claims.get(&ns, &cname).cloned() else { continue };
            if has_unexpected_controller(&c, set, pod) {
                let msg = format!(
                    "PersistentVolumeClaim {cname} has a conflicting OwnerReference that acts as a manging controller, the retention policy is ignored for this claim"
                );
                cx.event(&self.source, set, None, "Warning", "ConflictingController", &msg, None);
            }
            if !claim_owner_up_to_date(&c, set, pod) {
                let mut body = (*c).clone();
                update_claim_owner_refs(&mut body, set, pod);
                self.call(cx, Request::update(rid::PVC, &ns, &cname, body, self.creds()))
                    .map_err(|s| format!("could not update claim {cname} for delete policy ownerRefs: {}", s.message))?;
            }
        }
        Ok(())
    }

    /// Carry out one step; false when it failed and the sync should stop.
    fn execute(&mut self, cx: &mut Cx, set: &Object, update_set: &Value, step: &Step) -> bool {
        let ns = api::namespace(set).to_string();
        match step {
            Step::Create { pod, why } => {
                let name = api::name(pod).to_string();
                if let Err(e) = self.create_claims(cx, set, pod) {
                    self.pod_event(cx, set, "create", &name, Some(&e));
                    return false;
                }
                match self.call(cx, Request::create(rid::POD, &ns, pod.clone(), self.creds())) {
                    Ok(created) => {
                        cx.trace(Flow::ReplicaSetController, "create-pod", format!("Pod/{ns}/{name}"), "ok", api::resource_version(&created), why.clone());
                        if let Err(e) = self.fix_claim_refs(cx, set, &created) {
                            self.pod_event(cx, set, "update", &name, Some(&e));
                            return false;
                        }
                        self.pod_event(cx, set, "create", &name, None);
                        true
                    }
                    Err(s) => {
                        cx.trace(
                            Flow::ReplicaSetController,
                            "create-pod",
                            format!("Pod/{ns}/{name}"),
                            "error",
                            "",
                            format!("Error creating {name}: {}", s.message),
                        );
                        if s.code != 409 {
                            self.pod_event(cx, set, "create", &name, Some(&s.message));
                        }
                        false
                    }
                }
            }
            Step::Claims { pod } => {
                if let Err(e) = self.create_claims(cx, set, pod) {
                    cx.trace(Flow::ReplicaSetController, "create-claim", format!("Pod/{ns}/{}", api::name(pod)), "error", "", e);
                    return false;
                }
                if let Err(e) = self.fix_claim_refs(cx, set, pod) {
                    self.pod_event(cx, set, "update", api::name(pod), Some(&e));
                    return false;
                }
                true
            }
            Step::Retention { pod } => self.fix_claim_refs(cx, update_set, pod).is_ok(),
            Step::Update { pod } => {
                let mut body = pod.clone();
                let name = api::name(pod).to_string();
                if !identity_matches(update_set, &body) {
                    update_identity(update_set, &mut body);
                }
                if !storage_matches(update_set, &body) {
                    update_storage(update_set, &mut body);
                    if let Err(e) = self.create_claims(cx, update_set, &body) {
                        self.pod_event(cx, set, "update", &name, Some(&e));
                        return false;
                    }
                }
                if let Err(e) = self.fix_claim_refs(cx, update_set, &body) {
                    self.pod_event(cx, set, "update", &name, Some(&e));
                    return false;
                }
                if let Some(m) = body.get_mut("metadata").and_then(Value::as_object_mut) {
                    m.remove("resourceVersion");
                }
                match self.call(cx, Request::update(rid::POD, &ns, &name, body, self.creds())) {
                    Ok(_) => {
                        self.pod_event(cx, set, "update", &name, None);
                        true
                    }
                    Err(s) => {
                        self.pod_event(cx, set, "update", &name, Some(&s.message));
                        false
                    }
                }
            }
            Step::Delete { pod, why } => match self.call(cx, Request::delete(rid::POD, &ns, pod, self.creds())) {
                Ok(_) => {
                    cx.trace(Flow::ReplicaSetController, "delete-pod", format!("Pod/{ns}/{pod}"), "ok", "", why.clone());
                    self.pod_event(cx, set, "delete", pod, None);
                    true
                }
                Err(s) => {
                    self.pod_event(cx, set, "delete", pod, Some(&s.message));
                    s.code == 404
                }
            },
        }
    }
}

impl Controller for StatefulSetController {
    fn name(&self) -> &'static str {
        "statefulset-controller"
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::STATEFULSET, rid::POD, rid::PVC]
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

    fn set(replicas: i64, policy: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": "default", "uid": "set-uid", "generation": 1},
            "spec": {"replicas": replicas, "serviceName": "nginx", "podManagementPolicy": policy,
                "selector": {"matchLabels": {"app": "nginx"}},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                "template": {"metadata": {"labels": {"app": "nginx"}}, "spec": {"containers": [{"name": "nginx", "image": "nginx:1"}]}},
                "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}})
    }

    fn pod(set: &Value, ord: i64, rev: &str, phase: &str, ready: bool) -> Object {
        let mut p = new_pod(set, ord);
        p["metadata"]["labels"][history::REVISION_HASH_LABEL] = json!(rev);
        p["metadata"]["uid"] = json!(format!("pod-{ord}"));
        p["status"] = json!({"phase": phase});
        if ready {
            p["status"]["conditions"] = json!([{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]);
        }
        Arc::new(p)
    }

    fn revs<'a>(s: &'a Value, cur: &'a str, upd: &'a str) -> Revisions<'a> {
        Revisions { current: cur, update: upd, current_set: s, update_set: s, collision_count: 0 }
    }

    fn no_claims(_: &str) -> Option<Object> {
        None
    }

    fn created(p: &Plan) -> Vec<String> {
        p.steps.iter().filter_map(|s| if let Step::Create { pod, .. } = s { Some(api::name(pod).to_string()) } else { None }).collect()
    }
    fn deleted(p: &Plan) -> Vec<String> {
        p.steps.iter().filter_map(|s| if let Step::Delete { pod, .. } = s { Some(pod.clone()) } else { None }).collect()
    }

    #[test]
    fn ordinals_parse_like_the_upstream_regexp() {
        assert_eq!(parent_and_ordinal("web-0"), Some(("web", 0)));
        assert_eq!(parent_and_ordinal("my-web-12"), Some(("my-web", 12)));
        assert_eq!(parent_and_ordinal("web"), None);
        assert_eq!(parent_and_ordinal("web-x1"), None);
        assert_eq!(parent_and_ordinal("web-99999999999"), None, "not an int32");
    }

    #[test]
    fn a_new_pod_has_its_identity_and_claims() {
        let s = set(3, "OrderedReady");
        let p = new_versioned_pod(&s, &s, "web-a", "web-b", 2);
        assert_eq!(p["metadata"]["name"], "web-2");
        assert_eq!(p["metadata"]["generateName"], "web-");
        assert_eq!(p["metadata"]["labels"][POD_NAME_LABEL], "web-2");
        assert_eq!(p["metadata"]["labels"][POD_INDEX_LABEL], "2");
        assert_eq!(p["metadata"]["labels"]["app"], "nginx");
        assert_eq!(p["metadata"]["labels"][history::REVISION_HASH_LABEL], "web-b", "partition 0: the update revision");
        assert_eq!(p["spec"]["hostname"], "web-2");
        assert_eq!(p["spec"]["subdomain"], "nginx");
        assert_eq!(p["spec"]["volumes"], json!([{"name": "www", "persistentVolumeClaim": {"claimName": "www-web-2"}}]));
        assert_eq!(p["metadata"]["ownerReferences"][0]["uid"], "set-uid");
        let claims = claims_for(&s, 2);
        assert_eq!(api::name(&claims["www"]), "www-web-2");
        assert_eq!(claims["www"]["metadata"]["labels"], json!({"app": "nginx"}));
        // Below the partition a pod is made at the current revision.
        let mut parted = s.clone();
        parted["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = json!(2);
        assert_eq!(new_versioned_pod(&parted, &parted, "web-a", "web-b", 1)["metadata"]["labels"][history::REVISION_HASH_LABEL], "web-a");
        assert_eq!(new_versioned_pod(&parted, &parted, "web-a", "web-b", 2)["metadata"]["labels"][history::REVISION_HASH_LABEL], "web-b");
    }

    #[test]
    fn ordered_ready_creates_one_pod_and_waits_for_it() {
        let s = set(3, "OrderedReady");
        let p = plan(&s, &revs(&s, "r1", "r1"), &[], &no_claims, 0);
        assert_eq!(created(&p), vec!["web-0"]);
        let pods = vec![pod(&s, 0, "r1", "Running", false)];
        let p = plan(&s, &revs(&s, "r1", "r1"), &pods, &no_claims, 0);
        assert!(created(&p).is_empty());
        assert_eq!(p.waiting.as_deref(), Some("StatefulSet/default/web waits: web-0 is not Running and Ready yet (OrderedReady)"));
        let pods = vec![pod(&s, 0, "r1", "Running", true)];
        let p = plan(&s, &revs(&s, "r1", "r1"), &pods, &no_claims, 0);
        assert_eq!(created(&p), vec!["web-1"]);
        assert_eq!(p.status["replicas"], 1);
        assert_eq!(p.status["readyReplicas"], 1);
        assert_eq!(p.status["availableReplicas"], 1);
    }

    #[test]
    fn parallel_creates_all_at_once() {
        let s = set(3, "Parallel");
        let p = plan(&s, &revs(&s, "r1", "r1"), &[], &no_claims, 0);
        assert_eq!(created(&p), vec!["web-0", "web-1", "web-2"]);
        assert!(p.waiting.is_none());
    }

    #[test]
    fn scale_down_goes_from_the_highest_ordinal_one_at_a_time() {
        let s = set(1, "OrderedReady");
        let pods: Vec<Object> = (0..3).map(|i| pod(&s, i, "r1", "Running", true)).collect();
        let p = plan(&s, &revs(&s, "r1", "r1"), &pods, &no_claims, 0);
        assert_eq!(deleted(&p), vec!["web-2"]);
        let mut terminating = (*pods[2]).clone();
        terminating["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:01:00Z");
        let pods2 = vec![pods[0].clone(), pods[1].clone(), Arc::new(terminating)];
        let p = plan(&s, &revs(&s, "r1", "r1"), &pods2, &no_claims, 0);
        assert!(deleted(&p).is_empty());
        assert!(p.waiting.unwrap().contains("web-2 is terminating"));
        // Parallel deletes every condemned pod at once.
        let s = set(1, "Parallel");
        let p = plan(&s, &revs(&s, "r1", "r1"), &pods, &no_claims, 0);
        assert_eq!(deleted(&p), vec!["web-2", "web-1"]);
    }

    #[test]
    fn a_rolling_update_deletes_the_highest_stale_ordinal_and_respects_the_partition() {
        let s = set(3, "OrderedReady");
        let pods: Vec<Object> = (0..3).map(|i| pod(&s, i, "r1", "Running", true)).collect();
        let p = plan(&s, &revs(&s, "r1", "r2"), &pods, &no_claims, 0);
        assert_eq!(deleted(&p), vec!["web-2"]);
        assert_eq!(p.status["currentReplicas"], 2, "the deleted pod no longer counts as current");
        assert_eq!(p.status["currentRevision"], "r1");
        assert_eq!(p.status["updateRevision"], "r2");
        // web-2 updated but not ready: nothing else goes.
        let pods2 = vec![pods[0].clone(), pods[1].clone(), pod(&s, 2, "r2", "Running", false)];
        let p = plan(&s, &revs(&s, "r1", "r2"), &pods2, &no_claims, 0);
        assert!(deleted(&p).is_empty());
        // A partition of 2 keeps web-0 and web-1.
        let mut parted = s.clone();
        parted["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = json!(2);
        let pods3 = vec![pods[0].clone(), pods[1].clone(), pod(&s, 2, "r2", "Running", true)];
        let p = plan(&parted, &revs(&parted, "r1", "r2"), &pods3, &no_claims, 0);
        assert!(deleted(&p).is_empty());
        // maxUnavailable 2 deletes two at once.
        let mut wide = s.clone();
        wide["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = json!(2);
        let p = plan(&wide, &revs(&wide, "r1", "r2"), &pods, &no_claims, 0);
        assert_eq!(deleted(&p), vec!["web-2", "web-1"]);
        // OnDelete leaves them.
        let mut od = s.clone();
        od["spec"]["updateStrategy"] = json!({"type": "OnDelete"});
        assert!(deleted(&plan(&od, &revs(&od, "r1", "r2"), &pods, &no_claims, 0)).is_empty());
    }

    #[test]
    fn a_finished_rolling_update_makes_the_update_revision_current() {
        let s = set(2, "OrderedReady");
        let pods: Vec<Object> = (0..2).map(|i| pod(&s, i, "r2", "Running", true)).collect();
        let p = plan(&s, &revs(&s, "r1", "r2"), &pods, &no_claims, 0);
        assert_eq!(p.status["currentRevision"], "r2");
        assert_eq!(p.status["currentReplicas"], 2);
        assert_eq!(p.status["updatedReplicas"], 2);
        assert_eq!(p.status["collisionCount"], 0);
    }

    #[test]
    fn failed_pods_are_deleted_to_be_recreated() {
        let s = set(2, "OrderedReady");
        let pods = vec![pod(&s, 0, "r1", "Failed", false)];
        let p = plan(&s, &revs(&s, "r1", "r1"), &pods, &no_claims, 0);
        assert_eq!(deleted(&p), vec!["web-0"]);
        assert!(created(&p).is_empty());
    }

    #[test]
    fn retention_policy_sets_owner_references() {
        let mut s = set(1, "OrderedReady");
        s["spec"]["persistentVolumeClaimRetentionPolicy"] = json!({"whenDeleted": "Delete", "whenScaled": "Delete"});
        let p0 = pod(&s, 0, "r1", "Running", true);
        let p3 = pod(&s, 3, "r1", "Running", true);
        let mut claim = claims_for(&s, 0)["www"].clone();
        assert!(!claim_owner_up_to_date(&claim, &s, &p0));
        update_claim_owner_refs(&mut claim, &s, &p0);
        assert_eq!(claim["metadata"]["ownerReferences"][0]["kind"], "StatefulSet");
        assert_eq!(claim["metadata"]["ownerReferences"][0]["controller"], true);
        assert!(claim_owner_up_to_date(&claim, &s, &p0));
        // A scaled-down pod owns its claim instead.
        let mut claim3 = claims_for(&s, 3)["www"].clone();
        update_claim_owner_refs(&mut claim3, &s, &p3);
        assert_eq!(claim3["metadata"]["ownerReferences"][0]["kind"], "Pod");
        assert_eq!(claim3["metadata"]["ownerReferences"].as_array().unwrap().len(), 1);
        // Retain/Retain: no references at all.
        let r = set(1, "OrderedReady");
        let plain = claims_for(&r, 0)["www"].clone();
        assert!(claim_owner_up_to_date(&plain, &r, &p0));
    }

    #[test]
    fn a_huge_replica_count_plans_only_what_one_sync_does() {
        // The API takes replicas up to 2^31-1; a plan must not build a pod per ordinal.
        let s = set(i64::from(i32::MAX), "OrderedReady");
        let p = plan(&s, &revs(&s, "r1", "r1"), &[], &no_claims, 0);
        assert_eq!(created(&p), vec!["web-0"]);
        assert!(!p.more);
        let s = set(i64::from(i32::MAX), "Parallel");
        let p = plan(&s, &revs(&s, "r1", "r1"), &[], &no_claims, 0);
        assert_eq!(created(&p).len(), MAX_BATCH_SIZE, "Parallel creates a bounded batch per sync");
        assert_eq!(created(&p).last().map(String::as_str), Some("web-499"));
        assert!(p.more, "and comes back for the rest");
        // With the first pods there, the next sync goes on from the first missing ordinal.
        let pods: Vec<Object> = (0..3).map(|i| pod(&s, i, "r1", "Running", true)).collect();
        let p = plan(&s, &revs(&s, "r1", "r1"), &pods, &no_claims, 0);
        assert_eq!(created(&p).first().map(String::as_str), Some("web-3"));
        // Three replicas need no second batch.
        let s = set(3, "Parallel");
        assert!(!plan(&s, &revs(&s, "r1", "r1"), &[], &no_claims, 0).more);
    }

    #[test]
    fn pods_within_min_ready_seconds_count_as_unavailable_for_a_rolling_update() {
        // Upstream's `isUnavailable` looks at availability (minReadySeconds), not readiness:
        // a Parallel set whose pods became Ready 10 s ago with minReadySeconds 30 has every
        // pod unavailable, so the rolling update deletes none.
        let mut s = set(3, "Parallel");
        s["spec"]["minReadySeconds"] = json!(30);
        let pods: Vec<Object> = (0..3).map(|i| pod(&s, i, "r1", "Running", true)).collect();
        let p = plan(&s, &revs(&s, "r1", "r2"), &pods, &no_claims, 10_000);
        assert!(deleted(&p).is_empty(), "{:?}", p.steps);
        assert_eq!(p.waiting.as_deref(), Some("StatefulSet/default/web waits: 3 pod(s) unavailable, maxUnavailable is 1 (RollingUpdate)"));
        // Once available, the highest ordinal goes.
        let p = plan(&s, &revs(&s, "r1", "r2"), &pods, &no_claims, 40_000);
        assert_eq!(deleted(&p), vec!["web-2"]);
    }

    fn seeded_api() -> crate::apiserver::ApiServer {
        let mut api = crate::apiserver::ApiServer::new(1, true);
        for o in crate::apiserver::rbac::bootstrap_policy() {
            api.bootstrap_object(o);
        }
        api.bootstrap_object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}));
        api.bootstrap_object(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": "default"}}));
        for i in 0..3 {
            let p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("other-{i}"), "namespace": "default", "labels": {"app": "other"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}});
            api.handle(Request::create(rid::POD, "default", p, Credentials::User(UserInfo::admin()))).unwrap();
        }
        api
    }

    #[test]
    fn without_statefulsets_the_loop_keeps_no_pods() {
        let mut api = seeded_api();
        let mut c = StatefulSetController::new();
        crate::loops::run_once(&mut c, &mut api, 1000);
        crate::loops::run_once(&mut c, &mut api, 1005);
        assert!(c.pods.is_empty() && c.pods.state == WatchState::Empty, "no StatefulSet: no copy of the pods");
        assert_eq!(c.claims.state, WatchState::Empty);
        let mut s = set(1, "OrderedReady");
        s["metadata"] = json!({"name": "web", "namespace": "default"});
        api.handle(Request::create(rid::STATEFULSET, "default", s, Credentials::User(UserInfo::admin()))).unwrap();
        crate::loops::run_once(&mut c, &mut api, 2000);
        assert_eq!(c.pods.len(), 3, "the first set lists the pods");
        assert!(api.store.get_by(rid::POD, "default", "web-0").is_some());
    }

    #[test]
    fn max_unavailable_rounds_percentages_up() {
        let mut s = set(10, "OrderedReady");
        assert_eq!(max_unavailable(&s), 1);
        s["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = json!("25%");
        assert_eq!(max_unavailable(&s), 3);
        s["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = json!(0);
        assert_eq!(max_unavailable(&s), 1);
    }
}
