//! The Deployment controller (`pkg/controller/deployment/`: `sync.go`, `rolling.go`,
//! `recreate.go`, `progress.go`, `util/deployment_util.go`).
//!
//! Each sync does one kind of change (create the new ReplicaSet, scale it up, scale old
//! ones down, clean up history) and then recomputes status and conditions; the watch
//! events its own writes cause bring it back for the next step, exactly like the real
//! controller. The surge/unavailable arithmetic and the status computation are pure
//! functions with unit tests.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, Request};
use crate::foundation::api::{self, get, get_array, get_i64, get_str, rid, Object, ResourceId};
use crate::foundation::pod::pod_is_active;
use crate::foundation::sim::{parse_rfc3339, rfc3339, Millis};
use crate::foundation::sort::{CollectTree, Sort};
use crate::foundation::value::{json, Map, Value};
use crate::loops::events::Source;
use crate::loops::informer::Informer;
use crate::loops::{req_as, Controller, Cx};
use std::collections::BTreeSet;

pub const REVISION: &str = "deployment.kubernetes.io/revision";
pub const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
pub const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
pub const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
const HASH_LABEL: &str = "pod-template-hash";

/// Resolve an int-or-percent against `total` (`intstr.GetScaledValueFromIntOrPercent`).
pub fn scaled(v: Option<&Value>, total: i64, round_up: bool) -> i64 {
    match v {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        Some(Value::String(s)) => match s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
            Some(p) => {
                let x = p * total;
                if round_up {
                    (x + 99).div_euclid(100)
                } else {
                    x.div_euclid(100)
                }
            }
            None => s.parse().unwrap_or(0),
        },
        _ => 0,
    }
}

/// (maxSurge, maxUnavailable) for `replicas` (`ResolveFenceposts`).
pub fn fenceposts(d: &Value) -> (i64, i64) {
    if get_str(d, &["spec", "strategy", "type"]) != Some("RollingUpdate") {
        return (0, 0);
    }
    let replicas = get_i64(d, &["spec", "replicas"]).unwrap_or(1);
    let ru = get(d, &["spec", "strategy", "rollingUpdate"]);
    let surge = scaled(ru.and_then(|r| r.get("maxSurge")), replicas, true);
    let mut unavailable = scaled(ru.and_then(|r| r.get("maxUnavailable")), replicas, false);
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    (surge, unavailable)
}

pub fn max_unavailable(d: &Value) -> i64 {
    let replicas = get_i64(d, &["spec", "replicas"]).unwrap_or(1);
    if get_str(d, &["spec", "strategy", "type"]) != Some("RollingUpdate") || replicas == 0 {
        return 0;
    }
    fenceposts(d).1.min(replicas)
}

pub fn max_surge(d: &Value) -> i64 {
    if get_str(d, &["spec", "strategy", "type"]) != Some("RollingUpdate") {
        return 0;
    }
    fenceposts(d).0
}

/// FNV-32a over the template and the collision count, encoded with the apiserver's
/// alphabet (`controller.ComputeHash`, `rand.SafeEncodeString`). Kubernetes hashes Go's
/// dump of the struct; kubeloop hashes the canonical JSON, so values differ from a real
/// cluster's while keeping their form and stability.
pub fn pod_template_hash(template: &Value, collision_count: Option<i64>) -> String {
    let mut h: u32 = 0x811c9dc5;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            h ^= *b as u32;
            h = h.wrapping_mul(0x01000193);
        }
    };
    feed(serde_json::to_string(template).unwrap_or_default().as_bytes());
    if let Some(c) = collision_count {
        feed(&(c as u32).to_le_bytes());
        feed(&[0, 0, 0, 0]);
    }
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    h.to_string().bytes().map(|b| ALPHANUMS[b as usize % ALPHANUMS.len()] as char).collect()
}

fn template_without_hash(t: &Value) -> Value {
    let mut t = t.clone();
    if let Some(l) = t.get_mut("metadata").and_then(|m| m.get_mut("labels")).and_then(Value::as_object_mut) {
        l.remove(HASH_LABEL);
        if l.is_empty() {
            if let Some(m) = t.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("labels");
            }
        }
    }
    t
}

fn replicas(o: &Value) -> i64 {
    get_i64(o, &["spec", "replicas"]).unwrap_or(0)
}
fn st(o: &Value, f: &str) -> i64 {
    get_i64(o, &["status", f]).unwrap_or(0)
}
fn revision(rs: &Value) -> i64 {
    api::annotation(rs, REVISION).and_then(|r| r.parse().ok()).unwrap_or(0)
}
fn created(o: &Value) -> Millis {
    get_str(o, &["metadata", "creationTimestamp"]).and_then(parse_rfc3339).unwrap_or(0)
}

/// `HasProgressDeadline`: progressDeadlineSeconds is set and is not MaxInt32.
pub fn has_progress_deadline(d: &Value) -> bool {
    get_i64(d, &["spec", "progressDeadlineSeconds"]).is_some_and(|s| s != i32::MAX as i64)
}

/// The Deployment annotations a ReplicaSet never gets (`annotationsToSkip`).
const ANNOTATIONS_TO_SKIP: [&str; 6] =
    ["kubectl.kubernetes.io/last-applied-configuration", REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS, "deprecated.deployment.rollback.to"];

/// `maxRevHistoryLengthInChars`: the longest revision-history annotation kept.
const MAX_REV_HISTORY_LENGTH_IN_CHARS: usize = 2000;

/// `SetNewReplicaSetAnnotations`: copy the Deployment's annotations (but those skipped) to
/// the new ReplicaSet, raise its revision to `new_revision` keeping the old one in its
/// revision history, and, for a ReplicaSet about to be created, set the replicas
/// annotations. True when an annotation changed.
pub fn set_new_rs_annotations(d: &Value, rs: &mut Value, new_revision: &str, exists: bool) -> bool {
    // copyDeploymentAnnotationsToReplicaSet
    let mut changed = false;
    let from: Vec<(String, Value)> =
        get(d, &["metadata", "annotations"]).and_then(Value::as_object).into_iter().flatten().map(|(k, v)| (k.to_string(), v.clone())).collect();
    let ann = api::entry(rs, &["metadata", "annotations"]);
    for (k, v) in from {
        if ANNOTATIONS_TO_SKIP.contains(&k.as_str()) || ann.get(k.as_str()) == Some(&v) {
            continue;
        }
        ann.insert(k.as_str(), v);
        changed = true;
    }
    let old_revision = ann.get(REVISION).and_then(Value::as_str).map(str::to_string);
    let old_int = match old_revision.as_deref() {
        None | Some("") => 0,
        Some(r) => match r.parse::<i64>() {
            Ok(n) => n,
            Err(_) => return false,
        },
    };
    let Ok(new_int) = new_revision.parse::<i64>() else { return false };
    if old_int < new_int {
        ann.insert(REVISION, json!(new_revision));
        changed = true;
        // A ReplicaSet that had a revision is being rolled back to: keep the old one.
        if let Some(old) = &old_revision {
            let history = ann.get(REVISION_HISTORY).and_then(Value::as_str).unwrap_or("").to_string();
            if history.is_empty() {
                ann.insert(REVISION_HISTORY, json!(old));
            } else {
                let olds: Vec<&str> = history.split(',').collect();
                let mut total = history.len() + old.len() + 1;
                let mut start = 0;
                while total > MAX_REV_HISTORY_LENGTH_IN_CHARS && start < olds.len() {
                    total -= olds[start].len() + 1;
                    start += 1;
                }
                if total <= MAX_REV_HISTORY_LENGTH_IN_CHARS {
                    let mut kept: Vec<&str> = olds[start..].to_vec();
                    kept.push(old);
                    ann.insert(REVISION_HISTORY, json!(kept.join(",")));
                }
            }
        }
    }
    if !exists {
        // SetReplicasAnnotations
        let desired = replicas(d).to_string();
        let max = (replicas(d) + max_surge(d)).to_string();
        for (k, v) in [(DESIRED_REPLICAS, desired), (MAX_REPLICAS, max)] {
            if ann.get(k).and_then(Value::as_str) != Some(v.as_str()) {
                ann.insert(k, json!(v));
                changed = true;
            }
        }
    }
    changed
}

/// `getReplicaSetFraction`: how many replicas `rs` gains (or loses) when the Deployment's
/// largest size goes from the one annotated on `rs` to the current one.
fn rs_fraction(rs: &Value, d: &Value) -> i64 {
    if replicas(d) == 0 {
        return -replicas(rs);
    }
    let max_now = replicas(d) + max_surge(d);
    let before = match api::annotation(rs, MAX_REPLICAS).and_then(|v| v.parse::<i64>().ok()) {
        Some(v) if v != 0 => v,
        // Fall back to the current deployment size.
        _ => match st(d, "replicas") {
            0 => return 0,
            n => n,
        },
    };
    let scaled = replicas(rs) as f64 * (max_now as f64 / before as f64);
    scaled.round() as i64 - replicas(rs)
}

/// `GetReplicaSetProportion`: the fraction, bounded by what is still to be added or removed.
fn rs_proportion(rs: &Value, d: &Value, to_add: i64, added: i64) -> i64 {
    if replicas(rs) == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = rs_fraction(rs, d);
    let allowed = to_add - added;
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

/// Replicas the new ReplicaSet should have now (`NewRSNewReplicas`).
pub fn new_rs_new_replicas(d: &Value, all: &[Object], new_spec: i64) -> i64 {
    let want = replicas(d);
    match get_str(d, &["spec", "strategy", "type"]) {
        Some("RollingUpdate") => {
            let current: i64 = all.iter().map(|r| replicas(r)).sum();
            let max_total = want + max_surge(d);
            if current >= max_total {
                return new_spec;
            }
            let scale_up = max_total - current;
            new_spec + scale_up.min(want - new_spec)
        }
        _ => want,
    }
}

/// The pure status computation (`calculateStatus`), conditions excluded.
pub fn calculate_status(d: &Value, all: &[Object], new_rs: Option<&Object>) -> Map {
    let available: i64 = all.iter().map(|r| st(r, "availableReplicas")).sum();
    let total_spec: i64 = all.iter().map(|r| replicas(r)).sum();
    let mut s = Map::new();
    let mut put = |k: &str, v: i64, omit_zero: bool| {
        if v != 0 || !omit_zero {
            s.insert(k.to_string(), json!(v));
        }
    };
    put("observedGeneration", api::generation(d), true);
    put("replicas", all.iter().map(|r| st(r, "replicas")).sum(), true);
    put("updatedReplicas", new_rs.map(|r| st(r, "replicas")).unwrap_or(0), true);
    put("readyReplicas", all.iter().map(|r| st(r, "readyReplicas")).sum(), true);
    put("availableReplicas", available, true);
    put("unavailableReplicas", (total_spec - available).max(0), true);
    put("terminatingReplicas", all.iter().map(|r| st(r, "terminatingReplicas")).sum(), false);
    if let Some(c) = get(d, &["status", "collisionCount"]) {
        s.insert("collisionCount", c.clone());
    }
    s
}

/// `SetDeploymentCondition`: same status and reason is a no-op; otherwise the old entry
/// goes and the new one is appended, keeping lastTransitionTime if the status is unchanged.
pub fn set_condition(conds: &mut Vec<Value>, ty: &str, status: &str, reason: &str, message: &str, now: Millis) {
    let ts = rfc3339(now);
    let mut c = json!({"type": ty, "status": status, "lastUpdateTime": ts, "lastTransitionTime": ts, "reason": reason, "message": message});
    if let Some(i) = conds.iter().position(|x| get_str(x, &["type"]) == Some(ty)) {
        let cur = &conds[i];
        if get_str(cur, &["status"]) == Some(status) && get_str(cur, &["reason"]) == Some(reason) {
            return;
        }
        if get_str(cur, &["status"]) == Some(status) {
            c["lastTransitionTime"] = cur.get("lastTransitionTime").cloned().unwrap_or(json!(ts));
        }
        conds.remove(i);
    }
    conds.push(c);
}

fn get_condition<'a>(conds: &'a [Value], ty: &str) -> Option<&'a Value> {
    conds.iter().find(|c| get_str(c, &["type"]) == Some(ty))
}

#[derive(Clone)]
pub struct DeploymentController {
    user: UserInfo,
    source: Source,
    deployments: Informer,
    rss: Informer,
    pods: Informer,
    queue: BTreeSet<(String, String)>,
    /// Rollouts waiting on their progress deadline, and when it falls due.
    deadlines: std::collections::BTreeMap<(String, String), Millis>,
}

impl Default for DeploymentController {
    fn default() -> Self {
        Self::new()
    }
}

impl DeploymentController {
    pub fn new() -> Self {
        let user = UserInfo::controller("deployment-controller");
        DeploymentController {
            source: Source { component: "deployment-controller", host: String::new(), user: user.clone() },
            user,
            deployments: Informer::new(rid::DEPLOYMENT),
            rss: Informer::new(rid::REPLICASET),
            pods: Informer::new(rid::POD),
            queue: BTreeSet::new(),
            deadlines: std::collections::BTreeMap::new(),
        }
    }

    fn creds(&self) -> Credentials {
        Credentials::User(self.user.clone())
    }

    /// Write a Deployment's status (unconditionally, as UpdateStatus after a fresh read).
    fn write_status(&self, cx: &mut Cx, d: &Object, status: Value) -> Option<Object> {
        let mut body = (**d).clone();
        body["status"] = status;
        if let Some(m) = body.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        cx.api
            .handle(req_as(
                Request::update(rid::DEPLOYMENT, api::namespace(d), api::name(d), body, self.creds()).with_sub("status"),
                "deployment-controller",
                &self.user,
            ))
            .ok()
    }

    fn write_conditions(&self, cx: &mut Cx, d: &mut Object, conds: Vec<Value>) {
        let mut status = d.get("status").cloned().unwrap_or(json!({}));
        status["conditions"] = Value::Array(conds);
        if let Some(n) = self.write_status(cx, d, status) {
            *d = n;
        }
    }

    fn enqueue_owner(&mut self, o: &Value) {
        if let Some(r) = api::controller_ref(o) {
            if get_str(r, &["kind"]) == Some("Deployment") {
                self.queue.insert((api::namespace(o).to_string(), get_str(r, &["name"]).unwrap_or("").to_string()));
            }
        } else {
            for d in self.deployments.list(Some(api::namespace(o))) {
                if crate::foundation::labels::selector_matches(get(d, &["spec", "selector"]), api::labels(o)) {
                    self.queue.insert((api::namespace(o).to_string(), api::name(d).to_string()));
                }
            }
        }
    }

    fn sync_informers(&mut self, cx: &mut Cx) {
        let r = self.deployments.sync(&cx.api.store);
        if let Some(m) = r.relisted {
            cx.trace(Flow::Etcd, "watch", "Deployment".into(), "relist", "", format!("410 Gone from the watch cache ({m}): relisted Deployments"));
        }
        for d in r.deltas {
            if d.kind != EventType::Deleted {
                if d.kind == EventType::Added && cx.tracing() {
                    cx.trace(
                        Flow::DeploymentController,
                        "watch",
                        format!("Deployment/{}/{}", api::namespace(&d.object), api::name(&d.object)),
                        "ok",
                        api::resource_version(&d.object),
                        "deployment-controller sees the Deployment".into(),
                    );
                }
                self.queue.insert((api::namespace(&d.object).to_string(), api::name(&d.object).to_string()));
            }
        }
        let r = self.rss.sync(&cx.api.store);
        for d in r.deltas {
            self.enqueue_owner(&d.object);
            if let Some(old) = &d.old {
                if api::controller_ref(old).map(|r| r.get("uid")) != api::controller_ref(&d.object).map(|r| r.get("uid")) {
                    self.enqueue_owner(old);
                }
            }
        }
        let r = self.pods.sync(&cx.api.store);
        for d in r.deltas {
            // Recreate waits for old pods to stop running.
            let stopped = d.kind == EventType::Deleted || d.old.as_ref().is_some_and(|o| pod_is_active(o) && !pod_is_active(&d.object));
            if stopped {
                if let Some(rs_ref) = api::controller_ref(&d.object) {
                    let rs_name = get_str(rs_ref, &["name"]).unwrap_or("");
                    if let Some(rs) = self.rss.get(api::namespace(&d.object), rs_name).cloned() {
                        self.enqueue_owner(&rs);
                    }
                }
            }
        }
    }

    fn scale_rs(&mut self, cx: &mut Cx, d: &Value, rs: &Object, to: i64) -> bool {
        let from = replicas(rs);
        let desired = replicas(d).to_string();
        let max = (replicas(d) + max_surge(d)).to_string();
        if from == to && api::annotation(rs, DESIRED_REPLICAS) == Some(desired.as_str()) && api::annotation(rs, MAX_REPLICAS) == Some(max.as_str()) {
            return false;
        }
        let mut body = (**rs).clone();
        body["spec"]["replicas"] = json!(to);
        let ann = api::entry(&mut body, &["metadata", "annotations"]);
        ann.insert(DESIRED_REPLICAS, json!(desired));
        ann.insert(MAX_REPLICAS, json!(max));
        let ns = api::namespace(rs).to_string();
        let name = api::name(rs).to_string();
        match cx.api.handle(req_as(Request::update(rid::REPLICASET, &ns, &name, body, self.creds()), "deployment-controller", &self.user)) {
            Ok(stored) => {
                if from != to {
                    let dir = if to > from { "up" } else { "down" };
                    let msg = format!("Scaled {dir} replica set {name} from {from} to {to}");
                    cx.trace(Flow::DeploymentController, "scale", format!("ReplicaSet/{ns}/{name}"), "ok", api::resource_version(&stored), msg.clone());
                    cx.event(&self.source, d, None, "Normal", "ScalingReplicaSet", &msg, None);
                }
                true
            }
            Err(_) => false,
        }
    }

    #[inline(never)]
    fn sync(&mut self, cx: &mut Cx, key: &(String, String)) {
        let Some(d) = self.deployments.get(&key.0, &key.1).cloned() else { return };
        let dname = format!("Deployment/{}/{}", key.0, key.1);
        let selector = get(&d, &["spec", "selector"]).cloned();
        let empty_selector = selector
            .as_ref()
            .is_none_or(|s| get(s, &["matchLabels"]).and_then(Value::as_object).is_none_or(|m| m.is_empty()) && get_array(s, &["matchExpressions"]).is_empty());
        if empty_selector {
            cx.event(&self.source, &d, None, "Warning", "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.", None);
            return;
        }
        // Claim ReplicaSets: owned ones, and orphans the selector matches.
        let uid = api::uid(&d).to_string();
        let mut all: Vec<Object> = Vec::new();
        let candidates: Vec<Object> = self.rss.list(Some(&key.0)).cloned().collect();
        for rs in candidates {
            match api::controller_ref(&rs) {
                Some(r) if get_str(r, &["uid"]) == Some(uid.as_str()) => all.push(rs),
                None if !api::is_deleting(&d) && !api::is_deleting(&rs) && crate::foundation::labels::selector_matches(selector.as_ref(), api::labels(&rs)) => {
                    let mut refs = get_array(&rs, &["metadata", "ownerReferences"]).to_vec();
                    refs.push(api::owner_reference(&d));
                    let patch = json!({"metadata": {"ownerReferences": refs}});
                    if let Ok(adopted) = cx.api.handle(req_as(
                        Request::patch(rid::REPLICASET, &key.0, api::name(&rs), crate::apiserver::PatchType::Merge, patch, self.creds()),
                        "deployment-controller",
                        &self.user,
                    )) {
                        cx.trace(
                            Flow::DeploymentController,
                            "adopt",
                            format!("ReplicaSet/{}/{}", key.0, api::name(&rs)),
                            "ok",
                            api::resource_version(&adopted),
                            format!("{dname} adopted ReplicaSet {}", api::name(&rs)),
                        );
                        all.push(adopted);
                    }
                }
                _ => {}
            }
        }
        all.sort_stable_by(|a, b| created(a).cmp(&created(b)).then(api::name(a).cmp(api::name(b))));
        if api::is_deleting(&d) {
            self.sync_deployment_status(cx, &d, &all, None);
            return;
        }
        let template = get(&d, &["spec", "template"]).cloned().unwrap_or(json!({}));
        let tmpl_key = template_without_hash(&template);
        let new_rs =
            all.iter().filter(|rs| get(rs, &["spec", "template"]).map(template_without_hash).as_ref() == Some(&tmpl_key)).min_by_key(|rs| created(rs)).cloned();
        let old: Vec<Object> = all.iter().filter(|rs| new_rs.as_ref().is_none_or(|n| api::uid(n) != api::uid(rs))).cloned().collect();
        let paused = api::get_bool(&d, &["spec", "paused"]).unwrap_or(false);
        // `checkPausedConditions`: an Unknown Progressing condition while paused, so that
        // a resumed rollout does not time out for the time it spent paused; but a
        // reported lack of progress is never overwritten with it.
        let progressing_reason = get_condition(get_array(&d, &["status", "conditions"]), "Progressing").and_then(|c| get_str(c, &["reason"]));
        if has_progress_deadline(&d) && progressing_reason != Some("ProgressDeadlineExceeded") {
            let paused_cond = progressing_reason == Some("DeploymentPaused");
            if paused != paused_cond {
                let mut conds = get_array(&d, &["status", "conditions"]).to_vec();
                if paused {
                    set_condition(&mut conds, "Progressing", "Unknown", "DeploymentPaused", "Deployment is paused", cx.now);
                } else {
                    set_condition(&mut conds, "Progressing", "Unknown", "DeploymentResumed", "Deployment is resumed", cx.now);
                }
                let mut d = d.clone();
                self.write_conditions(cx, &mut d, conds);
                return;
            }
        }
        // A changed replica count is a scaling event, handled proportionally.
        let want = replicas(&d).to_string();
        let active: Vec<&Object> = all.iter().filter(|r| replicas(r) > 0).collect();
        let scaling = active.iter().any(|r| api::annotation(r, DESIRED_REPLICAS).is_some_and(|v| v != want));
        if paused || scaling {
            self.scale(cx, &d, new_rs.as_ref(), &all);
            if paused {
                self.cleanup(cx, &d, &old);
            }
            let all = self.refresh(&all);
            let new_rs = new_rs.and_then(|n| all.iter().find(|r| api::uid(r) == api::uid(&n)).cloned());
            self.sync_deployment_status(cx, &d, &all, new_rs.as_ref());
            return;
        }
        let mut d = d;
        if get_str(&d, &["spec", "strategy", "type"]) == Some("Recreate") {
            self.recreate(cx, &mut d, new_rs, &old, &all);
        } else {
            self.rolling(cx, &mut d, new_rs, &old, &all);
        }
    }

    fn refresh(&self, all: &[Object]) -> Vec<Object> {
        all.iter().filter_map(|r| self.rss.get(api::namespace(r), api::name(r)).cloned()).collect()
    }

    /// Find or create the new ReplicaSet, syncing revision annotations.
    fn new_replica_set(&mut self, cx: &mut Cx, d: &mut Object, existing: Option<Object>, old: &[Object], all: &[Object], create: bool) -> Option<Object> {
        let max_old = old.iter().map(|r| revision(r)).max().unwrap_or(0);
        let rev = (max_old + 1).to_string();
        let ns = api::namespace(d).to_string();
        if let Some(rs) = existing {
            let mut body = (*rs).clone();
            let annotations_updated = set_new_rs_annotations(d, &mut body, &rev, true);
            let min_ready = get(d, &["spec", "minReadySeconds"]).cloned();
            let min_ready_needs_update = get_i64(&rs, &["spec", "minReadySeconds"]).unwrap_or(0) != get_i64(d, &["spec", "minReadySeconds"]).unwrap_or(0);
            if annotations_updated || min_ready_needs_update {
                match min_ready {
                    Some(m) => body["spec"]["minReadySeconds"] = m,
                    None => {
                        if let Some(s) = body.get_mut("spec").and_then(Value::as_object_mut) {
                            s.remove("minReadySeconds");
                        }
                    }
                }
                if let Ok(r) =
                    cx.api.handle(req_as(Request::update(rid::REPLICASET, &ns, api::name(&rs), body, self.creds()), "deployment-controller", &self.user))
                {
                    return Some(r);
                }
            }
            // Progressing: FoundNewReplicaSet once.
            let conds = get_array(d, &["status", "conditions"]);
            if has_progress_deadline(d) && get_condition(conds, "Progressing").is_none() {
                let mut c = conds.to_vec();
                set_condition(&mut c, "Progressing", "True", "FoundNewReplicaSet", &format!("Found new replica set {:?}", api::name(&rs)), cx.now);
                self.write_conditions(cx, d, c);
            }
            return Some(rs);
        }
        if !create {
            return None;
        }
        let collision = get_i64(d, &["status", "collisionCount"]);
        let template = get(d, &["spec", "template"]).cloned().unwrap_or(json!({}));
        let hash = pod_template_hash(&template, collision);
        let mut new_template = template.clone();
        api::entry(&mut new_template, &["metadata", "labels"]).insert(HASH_LABEL, json!(hash));
        let mut selector = get(d, &["spec", "selector"]).cloned().unwrap_or(json!({}));
        api::entry(&mut selector, &["matchLabels"]).insert(HASH_LABEL, json!(hash));
        let mut labels = get(&template, &["metadata", "labels"]).cloned().unwrap_or(json!({}));
        api::entry(&mut labels, &[]).insert(HASH_LABEL, json!(hash));
        let n = new_rs_new_replicas(d, all, 0);
        let mut stub = json!({"metadata": {"annotations": {}}});
        set_new_rs_annotations(d, &mut stub, &rev, false);
        let annotations = stub["metadata"]["annotations"].take();
        let name = format!("{}-{hash}", api::name(d));
        let mut body = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": ns, "labels": labels, "annotations": annotations, "ownerReferences": [api::owner_reference(d)]},
            "spec": {"replicas": n, "selector": selector, "template": new_template}});
        if let Some(m) = get(d, &["spec", "minReadySeconds"]) {
            body["spec"]["minReadySeconds"] = m.clone();
        }
        match cx.api.handle(req_as(Request::create(rid::REPLICASET, &ns, body, self.creds()), "deployment-controller", &self.user)) {
            Ok(rs) => {
                cx.trace(
                    Flow::DeploymentController,
                    "create-replicaset",
                    format!("ReplicaSet/{ns}/{name}"),
                    "ok",
                    api::resource_version(&rs),
                    format!("Deployment/{ns}/{} has no ReplicaSet for its template: created {name} with {n} replicas", api::name(d)),
                );
                if n > 0 {
                    cx.event(&self.source, d, None, "Normal", "ScalingReplicaSet", &format!("Scaled up replica set {name} from 0 to {n}"), None);
                }
                let mut conds = get_array(d, &["status", "conditions"]).to_vec();
                set_condition(&mut conds, "Progressing", "True", "NewReplicaSetCreated", &format!("Created new replica set {name:?}"), cx.now);
                self.write_conditions(cx, d, conds);
                Some(rs)
            }
            Err(s) if s.code == 409 && s.reason == "AlreadyExists" => {
                // A ReplicaSet with our name but another template: bump collisionCount.
                let count = collision.unwrap_or(0) + 1;
                let mut status = d.get("status").cloned().unwrap_or(json!({}));
                status["collisionCount"] = json!(count);
                if let Some(n) = self.write_status(cx, d, status) {
                    *d = n;
                }
                None
            }
            Err(s) => {
                let msg = format!("Failed to create new replica set {name:?}: {}", s.message);
                cx.event(&self.source, d, None, "Warning", "ReplicaSetCreateError", &msg, None);
                let mut conds = get_array(d, &["status", "conditions"]).to_vec();
                set_condition(&mut conds, "Progressing", "False", "ReplicaSetCreateError", &msg, cx.now);
                self.write_conditions(cx, d, conds);
                None
            }
        }
    }

    fn rolling(&mut self, cx: &mut Cx, d: &mut Object, existing: Option<Object>, old: &[Object], all: &[Object]) {
        let Some(new_rs) = self.new_replica_set(cx, d, existing.clone(), old, all, true) else { return };
        let mut all: Vec<Object> = old.to_vec();
        all.push(new_rs.clone());
        if existing.is_none() {
            // The new ReplicaSet was just created at its first size.
            self.sync_status(cx, d, &all, Some(&new_rs));
            return;
        }
        // Scale up the new ReplicaSet.
        let want = replicas(d);
        let new_spec = replicas(&new_rs);
        if new_spec != want {
            let to = if new_spec > want { want } else { new_rs_new_replicas(d, &all, new_spec) };
            if to != new_spec && self.scale_rs(cx, d, &new_rs, to) {
                let all = self.refresh(&all);
                let n = all.iter().find(|r| api::uid(r) == api::uid(&new_rs)).cloned();
                self.sync_status(cx, d, &all, n.as_ref());
                return;
            }
        }
        // Scale down old ReplicaSets.
        if self.reconcile_old(cx, d, &new_rs, old, &all) {
            let all = self.refresh(&all);
            let n = all.iter().find(|r| api::uid(r) == api::uid(&new_rs)).cloned();
            self.sync_status(cx, d, &all, n.as_ref());
            return;
        }
        let status = calculate_status(d, &all, Some(&new_rs));
        if complete(d, &status) {
            self.cleanup(cx, d, old);
        }
        self.sync_status(cx, d, &all, Some(&new_rs));
    }

    /// `reconcileOldReplicaSets`: clean up unhealthy replicas, then scale down within
    /// maxUnavailable.
    fn reconcile_old(&mut self, cx: &mut Cx, d: &Object, new_rs: &Object, old: &[Object], all: &[Object]) -> bool {
        let old_count: i64 = old.iter().map(|r| replicas(r)).sum();
        if old_count == 0 {
            return false;
        }
        let all_count: i64 = all.iter().map(|r| replicas(r)).sum();
        let min_available = replicas(d) - max_unavailable(d);
        let new_unavailable = replicas(new_rs) - st(new_rs, "availableReplicas");
        let max_scaled_down = all_count - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return false;
        }
        let mut sorted: Vec<Object> = old.to_vec();
        sorted.sort_stable_by(|a, b| created(a).cmp(&created(b)).then(api::name(a).cmp(api::name(b))));
        let mut cleaned = 0;
        let mut changed = false;
        for rs in &sorted {
            if cleaned >= max_scaled_down {
                break;
            }
            let spec = replicas(rs);
            let avail = st(rs, "availableReplicas");
            if spec == 0 || spec == avail {
                continue;
            }
            let n = (max_scaled_down - cleaned).min(spec - avail);
            if self.scale_rs(cx, d, rs, spec - n) {
                changed = true;
            }
            cleaned += n;
        }
        if changed {
            return true;
        }
        let available: i64 = all.iter().map(|r| st(r, "availableReplicas")).sum();
        if available <= min_available {
            return false;
        }
        let mut total = available - min_available;
        for rs in &sorted {
            if total <= 0 {
                break;
            }
            let spec = replicas(rs);
            if spec == 0 {
                continue;
            }
            let n = spec.min(total);
            if self.scale_rs(cx, d, rs, spec - n) {
                changed = true;
            }
            total -= n;
        }
        changed
    }

    fn recreate(&mut self, cx: &mut Cx, d: &mut Object, existing: Option<Object>, old: &[Object], all: &[Object]) {
        let new_rs = self.new_replica_set(cx, d, existing, old, all, false);
        let mut scaled = false;
        for rs in old.iter().filter(|r| replicas(r) > 0) {
            scaled |= self.scale_rs(cx, d, rs, 0);
        }
        if scaled {
            let all = self.refresh(all);
            self.sync_status(cx, d, &all, new_rs.as_ref());
            return;
        }
        // Wait until no old pod is running.
        let old_uids: BTreeSet<&str> = old.iter().map(|r| api::uid(r)).collect_tree();
        let running = self.pods.list(Some(api::namespace(d))).any(|p| {
            api::controller_ref(p).and_then(|r| get_str(r, &["uid"])).is_some_and(|u| old_uids.contains(u))
                && !matches!(get_str(p, &["status", "phase"]), Some("Succeeded") | Some("Failed"))
        });
        if running {
            self.sync_status(cx, d, all, new_rs.as_ref());
            return;
        }
        let new_rs = match new_rs {
            Some(r) => r,
            None => match self.new_replica_set(cx, d, None, old, all, true) {
                Some(r) => {
                    let mut a = old.to_vec();
                    a.push(r.clone());
                    self.sync_status(cx, d, &a, Some(&r));
                    return;
                }
                None => return,
            },
        };
        if replicas(&new_rs) != replicas(d) {
            self.scale_rs(cx, d, &new_rs, replicas(d));
        }
        let all = self.refresh(all);
        let n = all.iter().find(|r| api::uid(r) == api::uid(&new_rs)).cloned();
        let status = calculate_status(d, &all, n.as_ref());
        if complete(d, &status) {
            self.cleanup(cx, d, old);
        }
        self.sync_status(cx, d, &all, n.as_ref());
    }

    /// Proportional scaling (`sync.go` scale).
    fn scale(&mut self, cx: &mut Cx, d: &Object, new_rs: Option<&Object>, all: &[Object]) {
        let active: Vec<Object> = all.iter().filter(|r| replicas(r) > 0).cloned().collect();
        let want = replicas(d);
        if active.len() <= 1 {
            let target = active.first().cloned().or_else(|| new_rs.cloned());
            if let Some(rs) = target {
                self.scale_rs(cx, d, &rs, want);
            }
            return;
        }
        // A saturated new ReplicaSet (`IsSaturated`): the old ones go to zero.
        if let Some(n) = new_rs {
            let desired = api::annotation(n, DESIRED_REPLICAS).and_then(|v| v.parse::<i64>().ok());
            if replicas(n) == want && desired == Some(want) && st(n, "availableReplicas") == want {
                for old in active.iter().filter(|r| api::uid(r) != api::uid(n)) {
                    self.scale_rs(cx, d, old, 0);
                }
                return;
            }
        }
        // Proportional scaling is for rolling updates only.
        if get_str(d, &["spec", "strategy", "type"]) != Some("RollingUpdate") {
            return;
        }
        let allowed = if want > 0 { want + max_surge(d) } else { 0 };
        let current: i64 = active.iter().map(|r| replicas(r)).sum();
        let to_add = allowed - current;
        // Larger ReplicaSets first; among equals, newer ones first when scaling up and
        // older ones first when scaling down (`ReplicaSetsBySizeNewer`/`BySizeOlder`).
        let mut sorted = active.clone();
        if to_add > 0 {
            sorted.sort_stable_by(|a, b| replicas(b).cmp(&replicas(a)).then(created(b).cmp(&created(a))).then(api::name(b).cmp(api::name(a))));
        } else if to_add < 0 {
            sorted.sort_stable_by(|a, b| replicas(b).cmp(&replicas(a)).then(created(a).cmp(&created(b))).then(api::name(a).cmp(api::name(b))));
        }
        let mut added = 0i64;
        let mut sizes: Vec<i64> = Vec::with_capacity(sorted.len());
        for rs in &sorted {
            let share = rs_proportion(rs, d, to_add, added);
            sizes.push(replicas(rs) + share);
            added += share;
        }
        // Leftovers go to the largest ReplicaSet.
        if to_add != 0 {
            sizes[0] = (sizes[0] + to_add - added).max(0);
        }
        // Every ReplicaSet is written when its size or its replicas annotations are out of
        // date, even when nothing is added or removed: the fresh desired-replicas
        // annotation is what ends the scaling event.
        for (rs, size) in sorted.iter().zip(sizes) {
            self.scale_rs(cx, d, rs, size);
        }
    }

    /// Delete old ReplicaSets beyond revisionHistoryLimit (`cleanupDeployment`).
    fn cleanup(&mut self, cx: &mut Cx, d: &Object, old: &[Object]) {
        let limit = get_i64(d, &["spec", "revisionHistoryLimit"]).unwrap_or(10);
        let mut alive: Vec<&Object> = old.iter().filter(|r| !api::is_deleting(r)).collect();
        let diff = alive.len() as i64 - limit;
        if diff <= 0 {
            return;
        }
        alive.sort_stable_by(|a, b| revision(a).cmp(&revision(b)).then(created(a).cmp(&created(b))));
        for rs in alive.into_iter().take(diff as usize) {
            if st(rs, "replicas") != 0 || replicas(rs) != 0 || api::generation(rs) > st(rs, "observedGeneration") {
                continue;
            }
            let ns = api::namespace(rs).to_string();
            let name = api::name(rs).to_string();
            if cx.api.handle(req_as(Request::delete(rid::REPLICASET, &ns, &name, self.creds()), "deployment-controller", &self.user)).is_ok() {
                cx.trace(
                    Flow::DeploymentController,
                    "cleanup",
                    format!("ReplicaSet/{ns}/{name}"),
                    "ok",
                    "",
                    format!("deleted old ReplicaSet {name} beyond revisionHistoryLimit {limit}"),
                );
            }
        }
    }

    /// `syncRolloutStatus`: status, Available, progress against the deadline, ReplicaFailure.
    fn sync_status(&mut self, cx: &mut Cx, d: &Object, all: &[Object], new_rs: Option<&Object>) {
        self.update_status(cx, d, all, new_rs, true);
    }

    /// `syncDeploymentStatus`, for scaling events, paused and deleted Deployments: the
    /// replica counts and Available only; every other condition is kept as it is.
    fn sync_deployment_status(&mut self, cx: &mut Cx, d: &Object, all: &[Object], new_rs: Option<&Object>) {
        self.update_status(cx, d, all, new_rs, false);
    }

    fn update_status(&mut self, cx: &mut Cx, d: &Object, all: &[Object], new_rs: Option<&Object>, rollout: bool) {
        let mut status = calculate_status(d, all, new_rs);
        let mut conds = get_array(d, &["status", "conditions"]).to_vec();
        let available: i64 = status.get("availableReplicas").and_then(Value::as_i64).unwrap_or(0);
        if available >= replicas(d) - max_unavailable(d) {
            set_condition(&mut conds, "Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.", cx.now);
        } else {
            set_condition(&mut conds, "Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.", cx.now);
        }
        let deadline = get_i64(d, &["spec", "progressDeadlineSeconds"]).filter(|_| rollout && has_progress_deadline(d));
        // If there is no progressDeadlineSeconds set, remove any Progressing condition.
        if rollout && !has_progress_deadline(d) {
            conds.retain(|c| get_str(c, &["type"]) != Some("Progressing"));
        }
        let cur = get_condition(&conds, "Progressing").cloned();
        let updated = status.get("updatedReplicas").and_then(Value::as_i64).unwrap_or(0);
        let total = status.get("replicas").and_then(Value::as_i64).unwrap_or(0);
        let is_complete = total == updated && cur.as_ref().and_then(|c| get_str(c, &["reason"])) == Some("NewReplicaSetAvailable");
        let mut requeue_at = None;
        if let Some(deadline) = deadline {
            if !is_complete {
                let rs_name = new_rs.map(|r| api::name(r).to_string());
                if complete(d, &status) {
                    let msg = match &rs_name {
                        Some(n) => format!("ReplicaSet {n:?} has successfully progressed."),
                        None => format!("Deployment {:?} has successfully progressed.", api::name(d)),
                    };
                    set_condition(&mut conds, "Progressing", "True", "NewReplicaSetAvailable", &msg, cx.now);
                } else if progressing(d, &status) {
                    let msg = match &rs_name {
                        Some(n) => format!("ReplicaSet {n:?} is progressing."),
                        None => format!("Deployment {:?} is progressing.", api::name(d)),
                    };
                    let ts = rfc3339(cx.now);
                    let mut c = json!({"type": "Progressing", "status": "True", "lastUpdateTime": ts, "lastTransitionTime": ts, "reason": "ReplicaSetUpdated", "message": msg});
                    if let Some(i) = conds.iter().position(|x| get_str(x, &["type"]) == Some("Progressing")) {
                        if get_str(&conds[i], &["status"]) == Some("True") {
                            c["lastTransitionTime"] = conds[i]["lastTransitionTime"].clone();
                        }
                        conds.remove(i);
                    }
                    conds.push(c);
                } else if let Some(c) = get_condition(&conds, "Progressing") {
                    let reason = get_str(c, &["reason"]).unwrap_or("");
                    let from = get_str(c, &["lastUpdateTime"]).and_then(parse_rfc3339).unwrap_or(cx.now);
                    let due = from + deadline as Millis * 1000;
                    if reason != "NewReplicaSetAvailable" && reason != "ProgressDeadlineExceeded" && cx.now > due {
                        let msg = match &rs_name {
                            Some(n) => format!("ReplicaSet {n:?} has timed out progressing."),
                            None => format!("Deployment {:?} has timed out progressing.", api::name(d)),
                        };
                        set_condition(&mut conds, "Progressing", "False", "ProgressDeadlineExceeded", &msg, cx.now);
                        cx.trace(Flow::DeploymentController, "progress", format!("Deployment/{}/{}", api::namespace(d), api::name(d)), "error", "", msg);
                    } else if reason != "NewReplicaSetAvailable" && reason != "ProgressDeadlineExceeded" {
                        requeue_at = Some(due + 1000 - cx.now.min(due));
                    }
                }
            }
        }
        // ReplicaFailure mirrors the ReplicaSets' condition.
        let failure = all.iter().find_map(|r| crate::foundation::pod::condition(r, "ReplicaFailure").cloned());
        if rollout {
            conds.retain(|c| get_str(c, &["type"]) != Some("ReplicaFailure"));
        }
        if let Some(f) = failure.filter(|_| rollout) {
            conds.push(json!({"type": "ReplicaFailure", "status": "True", "lastUpdateTime": rfc3339(cx.now), "lastTransitionTime": f.get("lastTransitionTime").cloned().unwrap_or(json!(rfc3339(cx.now))),
                "reason": get_str(&f, &["reason"]).unwrap_or(""), "message": get_str(&f, &["message"]).unwrap_or("")}));
        }
        if !conds.is_empty() {
            status.insert("conditions", json!(conds));
        }
        let new_status = Value::Object(status);
        // The Deployment carries its new ReplicaSet's revision (`SetDeploymentRevision`).
        let revision_now = new_rs.and_then(|r| api::annotation(r, REVISION)).map(str::to_string);
        let revision_changed = revision_now.is_some() && revision_now.as_deref() != api::annotation(d, REVISION);
        if d.get("status") != Some(&new_status) || revision_changed {
            let mut d2 = (**d).clone();
            if let Some(rv) = &revision_now {
                api::entry(&mut d2, &["metadata", "annotations"]).insert(REVISION, json!(rv));
            }
            let d2 = Object::new(d2);
            if let Some(s) = self.write_status(cx, &d2, new_status) {
                if complete(&s, s.get("status").and_then(Value::as_object).unwrap_or(&Map::new()))
                    && !complete(d, d.get("status").and_then(Value::as_object).unwrap_or(&Map::new()))
                {
                    cx.trace(
                        Flow::DeploymentController,
                        "status",
                        format!("Deployment/{}/{}", api::namespace(d), api::name(d)),
                        "ok",
                        api::resource_version(&s),
                        format!("deployment {:?} successfully rolled out", api::name(d)),
                    );
                }
            }
        }
        // A rollout still short of its deadline will change the Progressing condition:
        // the run is not quiet until then.
        // A status-only sync does not requeue, and a deadline already waited on stays,
        // unless nothing can progress now (paused or deleted).
        let key = (api::namespace(d).to_string(), api::name(d).to_string());
        let paused = api::get_bool(d, &["spec", "paused"]).unwrap_or(false);
        match requeue_at {
            Some(delay) => {
                self.deadlines.insert(key, cx.now + delay);
            }
            None if rollout || paused || api::is_deleting(d) => {
                self.deadlines.remove(&key);
            }
            None => {}
        }
        if let Some(delay) = requeue_at {
            cx.every(delay, format!("{}/{}", api::namespace(d), api::name(d)));
        }
    }
}

/// `DeploymentComplete`.
pub fn complete(d: &Value, s: &Map) -> bool {
    let g = |k: &str| s.get(k).and_then(Value::as_i64).unwrap_or(0);
    let want = replicas(d);
    g("updatedReplicas") == want && g("replicas") == want && g("availableReplicas") == want && g("observedGeneration") >= api::generation(d)
}

/// `DeploymentProgressing`: compared with the status stored before this sync.
fn progressing(d: &Value, new: &Map) -> bool {
    let g = |k: &str| new.get(k).and_then(Value::as_i64).unwrap_or(0);
    let old_updated = st(d, "updatedReplicas");
    let old_old = st(d, "replicas") - old_updated;
    let new_old = g("replicas") - g("updatedReplicas");
    g("updatedReplicas") > old_updated
        || new_old < old_old
        || g("readyReplicas") > st(d, "readyReplicas")
        || g("availableReplicas") > st(d, "availableReplicas")
}

impl Controller for DeploymentController {
    fn name(&self) -> &'static str {
        "deployment-controller"
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::DEPLOYMENT, rid::REPLICASET, rid::POD]
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
    fn busy(&self, now: Millis) -> bool {
        !self.queue.is_empty() || self.deadlines.values().any(|t| now <= *t)
    }
    fn restart(&mut self) {
        *self = Self::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn dep(replicas: i64, surge: Value, unavail: Value) -> Value {
        json!({"metadata": {"generation": 1}, "spec": {"replicas": replicas, "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavail}}}})
    }

    #[test]
    fn fenceposts_match_the_reference_table() {
        for (r, s, u) in [(0, 0, 0), (1, 1, 0), (3, 1, 0), (4, 1, 1), (5, 2, 1), (10, 3, 2)] {
            let d = dep(r, json!("25%"), json!("25%"));
            assert_eq!((max_surge(&d), max_unavailable(&d)), (s, u), "replicas {r}");
        }
        let d = dep(3, json!(0), json!(0));
        assert_eq!(fenceposts(&d), (0, 1));
    }

    #[test]
    fn new_rs_starts_at_full_size_without_old_replicas() {
        let d = dep(3, json!("25%"), json!("25%"));
        assert_eq!(new_rs_new_replicas(&d, &[], 0), 3);
        let old: Object = Arc::new(json!({"spec": {"replicas": 3}}));
        assert_eq!(new_rs_new_replicas(&d, std::slice::from_ref(&old), 0), 1);
        let newrs: Object = Arc::new(json!({"spec": {"replicas": 1}}));
        assert_eq!(new_rs_new_replicas(&d, &[old, newrs], 1), 1);
    }

    #[test]
    fn hashes_are_stable_and_use_the_safe_alphabet() {
        let t = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        let a = pod_template_hash(&t, None);
        assert_eq!(a, pod_template_hash(&t, None));
        assert_ne!(a, pod_template_hash(&t, Some(1)));
        assert!(a.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)) && (1..=10).contains(&a.len()), "{a}");
    }

    #[test]
    fn conditions_move_last_when_they_change() {
        let mut c = vec![];
        set_condition(&mut c, "Progressing", "True", "NewReplicaSetCreated", "x", 0);
        set_condition(&mut c, "Available", "False", "MinimumReplicasUnavailable", "y", 0);
        set_condition(&mut c, "Available", "True", "MinimumReplicasAvailable", "z", 5000);
        set_condition(&mut c, "Progressing", "True", "NewReplicaSetAvailable", "w", 6000);
        let order: Vec<&str> = c.iter().map(|x| x["type"].as_str().unwrap()).collect();
        assert_eq!(order, vec!["Available", "Progressing"]);
        assert_eq!(c[1]["lastTransitionTime"], rfc3339(0));
        assert_eq!(c[1]["lastUpdateTime"], rfc3339(6000));
    }

    #[test]
    fn new_replica_sets_get_the_deployment_annotations_but_the_skipped_ones() {
        let mut d = dep(3, json!(1), json!(0));
        d["metadata"]["annotations"] = json!({"kubernetes.io/change-cause": "v2", "kubectl.kubernetes.io/last-applied-configuration": "{}",
            REVISION: "7", DESIRED_REPLICAS: "9", MAX_REPLICAS: "9", "deprecated.deployment.rollback.to": "1", "team": "a"});
        let mut rs = json!({"metadata": {"annotations": {REVISION: "1", DESIRED_REPLICAS: "3", MAX_REPLICAS: "4"}}});
        assert!(set_new_rs_annotations(&d, &mut rs, "3", true));
        assert_eq!(
            rs["metadata"]["annotations"],
            json!({REVISION: "3", REVISION_HISTORY: "1", DESIRED_REPLICAS: "3", MAX_REPLICAS: "4", "kubernetes.io/change-cause": "v2", "team": "a"})
        );
        // Nothing left to copy, and the revision is not lowered.
        assert!(!set_new_rs_annotations(&d, &mut rs, "2", true));
        let mut created = json!({});
        assert!(set_new_rs_annotations(&d, &mut created, "1", false));
        assert_eq!(
            created["metadata"]["annotations"],
            json!({REVISION: "1", DESIRED_REPLICAS: "3", MAX_REPLICAS: "4", "kubernetes.io/change-cause": "v2", "team": "a"})
        );
    }

    #[test]
    fn proportions_round_like_the_go_float_arithmetic() {
        // 11 * (15 / 22) is 7.499999999999999 in float64: rounds to 7, where 165 / 22 gives 8.
        let d = dep(14, json!(1), json!(0));
        let rs = json!({"metadata": {"annotations": {MAX_REPLICAS: "22"}}, "spec": {"replicas": 11}});
        assert_eq!(rs_fraction(&rs, &d), -4);
        assert_eq!(rs_proportion(&rs, &d, -7, 0), -4);
        assert_eq!(rs_proportion(&rs, &d, -2, 0), -2);
        assert_eq!(rs_proportion(&rs, &d, 0, 0), 0);
    }

    #[test]
    fn status_sums_replica_sets() {
        let d = json!({"metadata": {"generation": 3}, "spec": {"replicas": 3}});
        let a: Object = Arc::new(json!({"spec": {"replicas": 2}, "status": {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2}}));
        let b: Object = Arc::new(json!({"spec": {"replicas": 1}, "status": {"replicas": 1}}));
        let s = calculate_status(&d, &[a, b.clone()], Some(&b));
        assert_eq!(s["replicas"], 3);
        assert_eq!(s["updatedReplicas"], 1);
        assert_eq!(s["availableReplicas"], 2);
        assert_eq!(s["unavailableReplicas"], 1);
        assert_eq!(s["observedGeneration"], 3);
    }
}
