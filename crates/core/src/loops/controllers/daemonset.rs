//! The DaemonSet controller (`pkg/controller/daemon`: `daemon_controller.go`, `update.go`,
//! `util/daemonset_util.go`).
//!
//! A sync lists the nodes, claims the set's pods, finds or records the ControllerRevision of
//! the current template, decides per node whether a daemon pod should run there
//! ([`node_should_run`]: node selector, required node affinity, taints against the pod's
//! tolerations), plans the creations and deletions purely ([`manage`], then
//! [`rolling_update`]), writes them through the API server and records the status
//! ([`status`]). Pods are created with `generateName` and a required node affinity on
//! `metadata.name`; the default scheduler binds them.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, PatchType, Request, Verb};
use crate::foundation::api::{self, get, get_array, get_i64, get_str, rid, Object, ResourceId};
use crate::foundation::labels::selector_matches;
use crate::foundation::pod::{condition, pod_is_available, pod_is_ready};
use crate::foundation::sim::{parse_rfc3339, Millis};
use crate::foundation::sort::{CollectTree, Sort};
use crate::foundation::value::{json, Value};
use crate::loops::controllers::deployment::pod_template_hash;
use crate::loops::controllers::history::{self, REVISION_HASH_LABEL};
use crate::loops::events::Source;
use crate::loops::informer::{Informer, WatchState};
use crate::loops::scheduler::{node_affinity_matches, tolerates};
use crate::loops::{req_as, Controller, Cx};
use std::collections::{BTreeMap, BTreeSet};

/// `extensions.DaemonSetTemplateGenerationKey`.
pub const TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";
/// The annotation the API server keeps the template generation in.
pub const TEMPLATE_GENERATION_ANNOTATION: &str = "deprecated.daemonset.template.generation";
/// `BurstReplicas`: creations or deletions per sync.
pub const BURST_REPLICAS: usize = 250;

const COMPONENT: &str = "daemonset-controller";
const BACKOFF_INITIAL: Millis = 1000;
const BACKOFF_MAX: Millis = 15 * 60 * 1000;

/// `v1helper.AddOrUpdateTolerationInPodSpec`: a toleration equal in key, operator, value
/// and effect is replaced; otherwise it is appended.
fn add_or_update_toleration(spec: &mut Value, t: Value) {
    let same = |a: &Value, b: &Value| ["key", "operator", "value", "effect"].iter().all(|k| get_str(a, &[k]).unwrap_or("") == get_str(b, &[k]).unwrap_or(""));
    let mut list: Vec<Value> = get_array(spec, &["tolerations"]).to_vec();
    if let Some(i) = list.iter().position(|x| same(x, &t)) {
        if list[i] == t {
            return;
        }
        list[i] = t;
    } else {
        list.push(t);
    }
    spec["tolerations"] = Value::Array(list);
}

/// `util.AddOrUpdateDaemonPodTolerations`: daemon pods survive node problems and
/// cordoning, without a tolerationSeconds.
pub fn add_daemon_tolerations(spec: &mut Value) {
    for (key, effect) in [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ] {
        add_or_update_toleration(spec, json!({"key": key, "operator": "Exists", "effect": effect}));
    }
    if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        add_or_update_toleration(spec, json!({"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"}));
    }
}

/// `util.ReplaceDaemonSetPodNodeNameNodeAffinity`: the required node affinity becomes one
/// term, `metadata.name In [node]`.
pub fn replace_node_name_affinity(spec: &mut Value, node: &str) {
    let selector = json!({"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]});
    match get(spec, &["affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"]) {
        Some(_) => {
            spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] = selector["nodeSelectorTerms"].clone()
        }
        None => api::set(spec, &["affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"], selector),
    }
}

/// `util.GetTargetNodeName`: the node a daemon pod is bound or meant to be bound to.
pub fn target_node(pod: &Value) -> Option<String> {
    if let Some(n) = get_str(pod, &["spec", "nodeName"]).filter(|n| !n.is_empty()) {
        return Some(n.to_string());
    }
    for term in get_array(pod, &["spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"]) {
        for f in get_array(term, &["matchFields"]) {
            let values = get_array(f, &["values"]);
            if get_str(f, &["key"]) == Some("metadata.name") && get_str(f, &["operator"]) == Some("In") && values.len() == 1 {
                return values[0].as_str().map(str::to_string);
            }
        }
    }
    None
}

fn generation(ds: &Value) -> Option<i64> {
    api::annotation(ds, TEMPLATE_GENERATION_ANNOTATION).and_then(|g| g.parse().ok())
}

/// `util.IsPodUpdated`: the revision hash matches, or the template generation does.
pub fn is_pod_updated(pod: &Value, hash: &str, generation: Option<i64>) -> bool {
    let template = generation.is_some_and(|g| api::label(pod, TEMPLATE_GENERATION_LABEL) == Some(g.to_string().as_str()));
    (!hash.is_empty() && api::label(pod, REVISION_HASH_LABEL) == Some(hash)) || template
}

/// `util.CreatePodTemplate`: the template with the daemon tolerations and the generation
/// and hash labels.
pub fn pod_template(ds: &Value, hash: &str) -> Value {
    let mut t = get(ds, &["spec", "template"]).cloned().unwrap_or_else(|| json!({}));
    if !t["spec"].is_object() {
        t["spec"] = json!({});
    }
    add_daemon_tolerations(&mut t["spec"]);
    let labels = api::entry(&mut t, &["metadata", "labels"]);
    if let Some(g) = generation(ds) {
        labels.insert(TEMPLATE_GENERATION_LABEL, json!(g.to_string()));
    }
    if !hash.is_empty() {
        labels.insert(REVISION_HASH_LABEL, json!(hash));
    }
    t
}

/// `NodeShouldRunDaemonPod`: (should run, should continue running). A node whose taints
/// the pod does not tolerate gets no new pod; a pod already there stays unless a
/// NoExecute taint is untolerated.
pub fn node_should_run(node: &Value, ds: &Value) -> (bool, bool) {
    let template_node = get_str(ds, &["spec", "template", "spec", "nodeName"]).unwrap_or("");
    if !template_node.is_empty() && template_node != api::name(node) {
        return (false, false);
    }
    let mut pod = json!({"metadata": get(ds, &["spec", "template", "metadata"]).cloned().unwrap_or_else(|| json!({})),
        "spec": get(ds, &["spec", "template", "spec"]).cloned().unwrap_or_else(|| json!({}))});
    add_daemon_tolerations(&mut pod["spec"]);
    if !node_affinity_matches(&pod, node) {
        return (false, false);
    }
    let tolerations = get_array(&pod, &["spec", "tolerations"]);
    let taints = get_array(node, &["spec", "taints"]);
    let untolerated = |effects: &[&str]| taints.iter().any(|t| effects.contains(&get_str(t, &["effect"]).unwrap_or("")) && !tolerates(tolerations, t));
    if untolerated(&["NoSchedule", "NoExecute"]) {
        return (false, !untolerated(&["NoExecute"]));
    }
    (true, true)
}

fn created(p: &Value) -> Millis {
    get_str(p, &["metadata", "creationTimestamp"]).and_then(parse_rfc3339).unwrap_or(0)
}

/// `podByCreationTimestampAndPhase`: scheduled first, then oldest, then by name.
fn sort_pods(pods: &mut [Object]) {
    pods.sort_stable_by(|a, b| {
        let unbound = |p: &Value| get_str(p, &["spec", "nodeName"]).is_none_or(str::is_empty);
        unbound(a).cmp(&unbound(b)).then(created(a).cmp(&created(b))).then_with(|| api::name(a).cmp(api::name(b)))
    });
}

fn int_or_percent(v: Option<&Value>, total: i64, default: i64) -> i64 {
    match v {
        Some(Value::String(s)) if s.ends_with('%') => {
            let pct: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
            (pct * total + 99) / 100
        }
        Some(Value::String(s)) => s.parse().unwrap_or(default),
        Some(v) => v.as_i64().unwrap_or(default),
        None => default,
    }
}

fn rolling(ds: &Value) -> bool {
    get_str(ds, &["spec", "updateStrategy", "type"]).unwrap_or("RollingUpdate") == "RollingUpdate"
}

/// `util.SurgeCount` / `util.UnavailableCount` (percentages round up).
pub fn surge_and_unavailable(ds: &Value, desired: i64) -> (i64, i64) {
    if !rolling(ds) {
        return (0, 0);
    }
    let ru = get(ds, &["spec", "updateStrategy", "rollingUpdate"]);
    let surge = int_or_percent(ru.and_then(|r| r.get("maxSurge")), desired, 0);
    let unavailable = int_or_percent(ru.and_then(|r| r.get("maxUnavailable")), desired, 1);
    (surge, unavailable)
}

fn allows_surge(ds: &Value) -> bool {
    surge_and_unavailable(ds, 1).0 != 0
}

/// Node name -> the set's pods meant for it, each list sorted oldest first.
pub type NodePods = BTreeMap<String, Vec<Object>>;

/// What `manage` decides: nodes that need a pod, pods to delete with the reason, failed
/// pods found (they get the FailedDaemonPod event) and nodes whose failed pods wait out a
/// back-off.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Manage {
    pub create: Vec<String>,
    pub delete: Vec<(String, String)>,
    pub failed: Vec<(String, String)>,
    pub backing_off: Vec<String>,
}

/// `manage` and `podsShouldBeOnNode`. `in_backoff` says whether a node's failed pods must
/// wait before the next deletion.
pub fn manage(ds: &Value, nodes: &[Object], node_pods: &NodePods, hash: &str, now: Millis, in_backoff: &dyn Fn(&str) -> bool) -> Manage {
    let obj = format!("DaemonSet/{}/{}", api::namespace(ds), api::name(ds));
    let min_ready = get_i64(ds, &["spec", "minReadySeconds"]).unwrap_or(0);
    let mut m = Manage::default();
    for node in nodes {
        let nname = api::name(node).to_string();
        let (should_run, should_continue) = node_should_run(node, ds);
        let pods = node_pods.get(&nname).cloned().unwrap_or_default();
        let exists = !pods.is_empty();
        if should_run && !exists {
            m.create.push(nname);
        } else if should_continue {
            let mut running: Vec<Object> = Vec::new();
            for p in &pods {
                if api::is_deleting(p) {
                    continue;
                }
                match get_str(p, &["status", "phase"]) {
                    Some("Failed") => {
                        if in_backoff(&nname) {
                            m.backing_off.push(nname.clone());
                            continue;
                        }
                        m.failed.push((api::name(p).to_string(), nname.clone()));
                        m.delete
                            .push((api::name(p).to_string(), format!("{obj}: {} on {nname} failed; deleting it so that a new one is created", api::name(p))));
                    }
                    Some("Succeeded") => {
                        m.delete.push((api::name(p).to_string(), format!("{obj}: {} on {nname} succeeded; a daemon pod must keep running", api::name(p))))
                    }
                    _ => running.push(p.clone()),
                }
            }
            sort_pods(&mut running);
            if !allows_surge(ds) {
                for p in running.iter().skip(1) {
                    m.delete.push((
                        api::name(p).to_string(),
                        format!("{obj} keeps one pod per node: deleting {} on {nname}, newer than {}", api::name(p), api::name(&running[0])),
                    ));
                }
                continue;
            }
            let (mut oldest_new, mut oldest_old): (Option<&Object>, Option<&Object>) = (None, None);
            for p in &running {
                let slot = if api::label(p, REVISION_HASH_LABEL) == Some(hash) { &mut oldest_new } else { &mut oldest_old };
                if slot.is_none() {
                    *slot = Some(p);
                } else {
                    m.delete.push((api::name(p).to_string(), format!("{obj} keeps at most one old and one new pod on {nname}: deleting {}", api::name(p))));
                }
            }
            if let (Some(new), Some(old)) = (oldest_new, oldest_old) {
                if !pod_is_ready(old) || pod_is_available(new, min_ready, now) {
                    m.delete.push((
                        api::name(old).to_string(),
                        format!("{obj}: the new pod {} on {nname} is available; deleting the old {}", api::name(new), api::name(old)),
                    ));
                }
            }
        } else if exists {
            for p in pods.iter().filter(|p| !api::is_deleting(p)) {
                m.delete.push((
                    api::name(p).to_string(),
                    format!("{obj} no longer runs on {nname} (node selector, affinity or taints): deleting {}", api::name(p)),
                ));
            }
        }
    }
    // Unscheduled pods meant for nodes that no longer exist are never scheduled.
    let names: BTreeSet<&str> = nodes.iter().map(|n| api::name(n)).collect_tree();
    for (nname, pods) in node_pods {
        if names.contains(nname.as_str()) {
            continue;
        }
        for p in pods {
            if get_str(p, &["spec", "nodeName"]).is_none_or(str::is_empty) && !api::is_deleting(p) {
                m.delete.push((api::name(p).to_string(), format!("{obj}: node {nname} is gone; deleting its unscheduled pod {}", api::name(p))));
            }
        }
    }
    m
}

/// `findUpdatedPodsOnNode`: the node's new and old pod, or None when it has more than one
/// of either.
fn updated_pods_on_node<'a>(pods: &'a [Object], hash: &str, generation: Option<i64>) -> Option<(Option<&'a Object>, Option<&'a Object>)> {
    let (mut new, mut old) = (None, None);
    for p in pods.iter().filter(|p| !api::is_deleting(p)) {
        let slot = if is_pod_updated(p, hash, generation) { &mut new } else { &mut old };
        if slot.is_some() {
            return None;
        }
        *slot = Some(p);
    }
    Some((new, old))
}

/// `rollingUpdate`: old pods to delete and nodes to surge onto, within maxUnavailable and
/// maxSurge.
pub fn rolling_update(ds: &Value, nodes: &[Object], node_pods: &NodePods, hash: &str, now: Millis) -> (Vec<(String, String)>, Vec<String>) {
    let obj = format!("DaemonSet/{}/{}", api::namespace(ds), api::name(ds));
    let min_ready = get_i64(ds, &["spec", "minReadySeconds"]).unwrap_or(0);
    let gen = generation(ds);
    let desired = nodes.iter().filter(|n| node_should_run(n, ds).0).count() as i64;
    let (max_surge, mut max_unavailable) = surge_and_unavailable(ds, desired);
    if desired > 0 && max_unavailable == 0 && max_surge == 0 {
        max_unavailable = 1;
    }
    let available = |p: &Value| pod_is_available(p, min_ready, now);
    if max_surge == 0 {
        let mut unavailable = 0;
        let mut replacements: Vec<(String, String)> = Vec::new();
        let mut candidates: Vec<(String, String)> = Vec::new();
        for (nname, pods) in node_pods {
            let Some((new, old)) = updated_pods_on_node(pods, hash, gen) else {
                unavailable += 1;
                continue;
            };
            match (new, old) {
                (None, None) | (Some(_), Some(_)) => unavailable += 1,
                (Some(n), None) => {
                    if !available(n) {
                        unavailable += 1;
                    }
                }
                (None, Some(o)) => {
                    if !available(o) {
                        replacements
                            .push((api::name(o).to_string(), format!("{obj} rolls {nname}: the old pod {} is unavailable, replacing it", api::name(o))));
                        unavailable += 1;
                    } else if unavailable < max_unavailable {
                        candidates.push((
                            api::name(o).to_string(),
                            format!("{obj} rolls {nname} to revision {hash}: deleting the old pod {} (maxUnavailable {max_unavailable})", api::name(o)),
                        ));
                    }
                }
            }
        }
        let remaining = (max_unavailable - unavailable).clamp(0, candidates.len() as i64) as usize;
        replacements.extend(candidates.into_iter().take(remaining));
        return (replacements, Vec::new());
    }
    let mut delete: Vec<(String, String)> = Vec::new();
    let mut should_not_run: Vec<(String, String)> = Vec::new();
    let mut candidates: Vec<String> = Vec::new();
    let mut allowed: Vec<String> = Vec::new();
    let (mut surge, mut num_available) = (0i64, 0i64);
    let node = |n: &str| nodes.iter().find(|x| api::name(x) == n);
    for (nname, pods) in node_pods {
        let Some((new, old)) = updated_pods_on_node(pods, hash, gen) else {
            surge += 1;
            continue;
        };
        match (old, new) {
            (Some(o), _) if available(o) => num_available += 1,
            (None, Some(n)) if available(n) => num_available += 1,
            _ => {}
        }
        match (old, new) {
            (None, _) => {}
            (Some(o), None) => {
                let runs = node(nname).is_some_and(|n| node_should_run(n, ds).0);
                if !available(o) {
                    if !runs {
                        delete.push((api::name(o).to_string(), format!("{obj}: {} on {nname} is unavailable and no longer belongs there", api::name(o))));
                        continue;
                    }
                    allowed.push(nname.clone());
                } else {
                    if !runs {
                        should_not_run.push((api::name(o).to_string(), format!("{obj} no longer runs on {nname}: deleting {}", api::name(o))));
                        continue;
                    }
                    if surge >= max_surge {
                        continue;
                    }
                    candidates.push(nname.clone());
                }
            }
            (Some(o), Some(n)) => {
                if !available(n) {
                    surge += 1;
                    continue;
                }
                delete.push((
                    api::name(o).to_string(),
                    format!("{obj}: the new pod {} on {nname} is available; deleting the old {}", api::name(n), api::name(o)),
                ));
            }
        }
    }
    let deletable = (num_available - desired).min(should_not_run.len() as i64);
    if deletable > 0 {
        delete.extend(should_not_run.into_iter().take(deletable as usize));
    }
    let remaining = (max_surge - surge).clamp(0, candidates.len() as i64) as usize;
    allowed.extend(candidates.into_iter().take(remaining));
    (delete, allowed)
}

/// `updateDaemonSetStatus`: counts over the eligible nodes' oldest pods.
pub fn status(ds: &Value, nodes: &[Object], node_pods: &NodePods, hash: &str, now: Millis) -> Value {
    let min_ready = get_i64(ds, &["spec", "minReadySeconds"]).unwrap_or(0);
    let gen = generation(ds);
    let (mut desired, mut current, mut misscheduled, mut ready, mut updated, mut available) = (0, 0, 0, 0, 0, 0);
    for node in nodes {
        let (should_run, _) = node_should_run(node, ds);
        let pods: Vec<Object> = node_pods.get(api::name(node)).map(|v| v.iter().filter(|p| !terminal_and_deleting(p)).cloned().collect()).unwrap_or_default();
        if should_run {
            desired += 1;
            if let Some(p) = pods.first() {
                current += 1;
                if pod_is_ready(p) {
                    ready += 1;
                    if pod_is_available(p, min_ready, now) {
                        available += 1;
                    }
                }
                if is_pod_updated(p, hash, gen) {
                    updated += 1;
                }
            }
        } else if !pods.is_empty() {
            misscheduled += 1;
        }
    }
    let mut s = ds.get("status").and_then(Value::as_object).cloned().unwrap_or_default();
    s.insert("observedGeneration", json!(api::generation(ds)));
    s.insert("desiredNumberScheduled", json!(desired));
    s.insert("currentNumberScheduled", json!(current));
    s.insert("numberMisscheduled", json!(misscheduled));
    s.insert("numberReady", json!(ready));
    for (k, v) in [("updatedNumberScheduled", updated), ("numberAvailable", available), ("numberUnavailable", desired - available)] {
        if v != 0 {
            s.insert(k, json!(v));
        } else {
            s.remove(k);
        }
    }
    Value::Object(s)
}

fn terminal_and_deleting(p: &Value) -> bool {
    matches!(get_str(p, &["status", "phase"]), Some("Failed") | Some("Succeeded")) && api::is_deleting(p)
}

#[derive(Clone)]
pub struct DaemonSetController {
    user: UserInfo,
    source: Source,
    sets: Informer,
    pods: Informer,
    nodes: Informer,
    revisions: Informer,
    queue: BTreeSet<(String, String)>,
    /// `failedPodsBackoff`: "ns/ds/node" -> (last update, current delay).
    backoff: BTreeMap<String, (Millis, Millis)>,
}

impl Default for DaemonSetController {
    fn default() -> Self {
        Self::new()
    }
}

impl DaemonSetController {
    pub fn new() -> Self {
        let user = UserInfo::controller("daemon-set-controller");
        DaemonSetController {
            source: Source { component: COMPONENT, host: String::new(), user: user.clone() },
            user,
            sets: Informer::new(rid::DAEMONSET),
            pods: Informer::new(rid::POD),
            nodes: Informer::new(rid::NODE),
            revisions: Informer::new(rid::CONTROLLERREVISION),
            queue: BTreeSet::new(),
            backoff: BTreeMap::new(),
        }
    }

    fn creds(&self) -> Credentials {
        Credentials::User(self.user.clone())
    }

    fn call(&self, cx: &mut Cx, r: Request) -> Result<Object, crate::foundation::status::Status> {
        cx.api.handle(req_as(r, COMPONENT, &self.user))
    }

    fn owner_of(o: &Value) -> Option<String> {
        let r = api::controller_ref(o)?;
        (get_str(r, &["kind"]) == Some("DaemonSet")).then(|| get_str(r, &["name"]).unwrap_or("").to_string())
    }

    fn enqueue_all(&mut self) {
        let all: Vec<(String, String)> = self.sets.list(None).map(|s| (api::namespace(s).to_string(), api::name(s).to_string())).collect();
        self.queue.extend(all);
    }

    fn drop_caches(&mut self) {
        if self.pods.state != WatchState::Empty {
            self.pods = Informer::new(rid::POD);
            self.nodes = Informer::new(rid::NODE);
            self.revisions = Informer::new(rid::CONTROLLERREVISION);
        }
    }

    fn sync_informers(&mut self, cx: &mut Cx) {
        let fresh = self.sets.state == WatchState::Empty;
        for d in self.sets.sync(&cx.api.store).deltas {
            if d.kind != EventType::Deleted {
                self.queue.insert((api::namespace(&d.object).to_string(), api::name(&d.object).to_string()));
            }
        }
        if self.sets.is_empty() && !fresh {
            // Nothing to reconcile: a cluster without DaemonSets keeps no copy of its pods,
            // nodes and revisions for this loop. They are listed again when a set appears.
            self.drop_caches();
            return;
        }
        for d in self.revisions.sync(&cx.api.store).deltas {
            if let Some(owner) = Self::owner_of(&d.object) {
                self.queue.insert((api::namespace(&d.object).to_string(), owner));
            }
        }
        let mut nodes_changed = false;
        for d in self.nodes.sync(&cx.api.store).deltas {
            // Heartbeats change only condition times: they do not matter here
            // (`shouldIgnoreNodeUpdate`).
            let conds = |n: &Value| -> Vec<(String, String)> {
                get_array(n, &["status", "conditions"])
                    .iter()
                    .map(|c| (get_str(c, &["type"]).unwrap_or("").to_string(), get_str(c, &["status"]).unwrap_or("").to_string()))
                    .collect()
            };
            nodes_changed |= match &d.old {
                None => true,
                Some(o) => {
                    d.kind == EventType::Deleted
                        || o.get("spec") != d.object.get("spec")
                        || api::labels(o) != api::labels(&d.object)
                        || conds(o) != conds(&d.object)
                }
            };
        }
        if nodes_changed {
            self.enqueue_all();
        }
        for d in self.pods.sync(&cx.api.store).deltas {
            let ns = api::namespace(&d.object).to_string();
            if let Some(o) = d.old.as_ref().and_then(|o| Self::owner_of(o)) {
                self.queue.insert((ns.clone(), o));
            }
            match Self::owner_of(&d.object) {
                Some(o) => {
                    self.queue.insert((ns, o));
                }
                None if d.kind != EventType::Deleted && !api::is_deleting(&d.object) => {
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
            let msg = format!("listed {} DaemonSets, {} Nodes and {} Pods", self.sets.len(), self.nodes.len(), self.pods.len());
            cx.trace(Flow::ReplicaSetController, "list", "DaemonSet".into(), "ok", &cx.api.store.revision().to_string(), msg);
        }
    }

    /// `getDaemonPods` (`ClaimPods`): adopt matching orphans, release what no longer matches.
    fn claim_pods(&self, cx: &mut Cx, ds: &Object) -> Vec<Object> {
        let ns = api::namespace(ds).to_string();
        let selector = get(ds, &["spec", "selector"]);
        let uid = api::uid(ds).to_string();
        let mut out = Vec::new();
        let candidates: Vec<Object> = self.pods.list(Some(&ns)).cloned().collect();
        for p in candidates {
            let matches = selector_matches(selector, api::labels(&p));
            match api::controller_ref(&p) {
                Some(r) if get_str(r, &["uid"]) == Some(uid.as_str()) => {
                    if matches {
                        out.push(p);
                    } else {
                        let patch = json!({"metadata": {"ownerReferences": [{"$patch": "delete", "uid": uid}], "uid": api::uid(&p)}});
                        let _ = self.call(cx, Request::patch(rid::POD, &ns, api::name(&p), PatchType::Strategic, patch, self.creds()));
                    }
                }
                Some(_) => {}
                None if matches && !api::is_deleting(&p) => {
                    let mut refs = get_array(&p, &["metadata", "ownerReferences"]).to_vec();
                    refs.push(api::owner_reference(ds));
                    let patch = json!({"metadata": {"ownerReferences": refs, "uid": api::uid(&p)}});
                    if let Ok(a) = self.call(cx, Request::patch(rid::POD, &ns, api::name(&p), PatchType::Strategic, patch, self.creds())) {
                        cx.trace(
                            Flow::ReplicaSetController,
                            "adopt",
                            format!("Pod/{ns}/{}", api::name(&p)),
                            "ok",
                            api::resource_version(&a),
                            format!("DaemonSet/{ns}/{} adopted orphan pod {}", api::name(ds), api::name(&p)),
                        );
                        out.push(a);
                    }
                }
                None => {}
            }
        }
        out
    }

    /// `constructHistory`: the current revision (recorded if missing) and the old ones.
    fn construct_history(&self, cx: &mut Cx, ds: &Object) -> Result<(Object, Vec<Object>), String> {
        let ns = api::namespace(ds).to_string();
        let selector = get(ds, &["spec", "selector"]);
        let patch = history::template_patch(ds);
        let mut current: Vec<Object> = Vec::new();
        let mut old: Vec<Object> = Vec::new();
        let listed: Vec<Object> = self.revisions.list(Some(&ns)).filter(|r| selector_matches(selector, api::labels(r))).cloned().collect();
        for r in listed {
            let r = match api::controller_ref(&r) {
                Some(c) if get_str(c, &["uid"]) == Some(api::uid(ds)) => r,
                Some(_) => continue,
                None => {
                    let body = json!({"metadata": {"ownerReferences": [api::owner_reference(ds)], "uid": api::uid(&r)}});
                    match self.call(cx, Request::patch(rid::CONTROLLERREVISION, &ns, api::name(&r), PatchType::Strategic, body, self.creds())) {
                        Ok(a) => a,
                        Err(_) => continue,
                    }
                }
            };
            if r.get("data") == Some(&patch) {
                current.push(r);
            } else {
                old.push(r);
            }
        }
        let next = old.iter().map(|r| history::revision_number(r)).max().unwrap_or(0) + 1;
        let cur = if current.is_empty() {
            self.snapshot(cx, ds, next)?
        } else {
            // `dedupCurHistories`: keep the newest equal revision.
            history::sort_by_revision(&mut current);
            let keep = current.pop().unwrap_or_default();
            for dup in current {
                let _ = self.call(cx, Request::delete(rid::CONTROLLERREVISION, &ns, api::name(&dup), self.creds()));
            }
            if history::revision_number(&keep) < next {
                let mut body = (*keep).clone();
                body["revision"] = json!(next);
                self.call(cx, Request::update(rid::CONTROLLERREVISION, &ns, api::name(&keep), body, self.creds())).map_err(|s| s.message)?
            } else {
                keep
            }
        };
        Ok((cur, old))
    }

    /// `snapshot`: record the template as a revision named `<ds>-<hash>`.
    fn snapshot(&self, cx: &mut Cx, ds: &Object, revision: i64) -> Result<Object, String> {
        let ns = api::namespace(ds).to_string();
        let collision = get_i64(ds, &["status", "collisionCount"]);
        let template = get(ds, &["spec", "template"]).cloned().unwrap_or_else(|| json!({}));
        let hash = pod_template_hash(&template, collision);
        let name = format!("{}-{hash}", api::name(ds));
        let mut labels = get(ds, &["spec", "template", "metadata", "labels"]).and_then(Value::as_object).cloned().unwrap_or_default();
        labels.insert(REVISION_HASH_LABEL, json!(hash));
        let mut body = json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": name, "namespace": ns, "labels": Value::Object(labels), "ownerReferences": [api::owner_reference(ds)]},
            "data": history::template_patch(ds), "revision": revision});
        if let Some(a) = get(ds, &["metadata", "annotations"]) {
            body["metadata"]["annotations"] = a.clone();
        }
        match self.call(cx, Request::create(rid::CONTROLLERREVISION, &ns, body.clone(), self.creds())) {
            Ok(r) => {
                cx.trace(
                    Flow::ReplicaSetController,
                    "create-revision",
                    format!("ControllerRevision/{ns}/{name}"),
                    "ok",
                    api::resource_version(&r),
                    format!("DaemonSet/{ns}/{} recorded its pod template as revision {revision} ({name})", api::name(ds)),
                );
                Ok(r)
            }
            Err(s) if s.code == 409 => {
                let existing = self.call(cx, Request::new(Verb::Get, rid::CONTROLLERREVISION, &ns, &name, self.creds())).map_err(|s| s.message)?;
                if existing.get("data") == body.get("data") {
                    return Ok(existing);
                }
                // A hash collision: count it so that the next hash differs.
                let mut upd = (**ds).clone();
                upd["status"]["collisionCount"] = json!(collision.unwrap_or(0) + 1);
                if let Some(m) = upd.get_mut("metadata").and_then(Value::as_object_mut) {
                    m.remove("resourceVersion");
                }
                let _ = self.call(cx, Request::update(rid::DAEMONSET, &ns, api::name(ds), upd, self.creds()).with_sub("status"));
                Err(format!("found a stale dsHistory {name} of DaemonSet {ns}/{}, collisionCount raised", api::name(ds)))
            }
            Err(s) => Err(s.message),
        }
    }

    fn backoff_next(&mut self, key: String, now: Millis) -> Millis {
        let e = self.backoff.entry(key).or_insert((now, 0));
        let expired = now.saturating_sub(e.0) > 2 * BACKOFF_MAX;
        e.1 = if e.1 == 0 || expired { BACKOFF_INITIAL } else { (e.1 * 2).min(BACKOFF_MAX) };
        e.0 = now;
        e.1
    }

    #[inline(never)]
    fn sync(&mut self, cx: &mut Cx, key: &(String, String)) {
        let Some(ds) = self.sets.get(&key.0, &key.1).cloned() else { return };
        let ns = key.0.clone();
        let obj = format!("DaemonSet/{}/{}", key.0, key.1);
        if get(&ds, &["spec", "selector"]).and_then(Value::as_object).is_some_and(|m| m.is_empty()) {
            cx.event(&self.source, &ds, None, "Warning", "SelectingAll", "This daemon set is selecting all pods. A non-empty selector is required.", None);
            return;
        }
        if api::is_deleting(&ds) {
            return;
        }
        let nodes: Vec<Object> = self.nodes.list(None).cloned().collect();
        let pods = self.claim_pods(cx, &ds);
        let (cur, old) = match self.construct_history(cx, &ds) {
            Ok(h) => h,
            Err(msg) => {
                cx.trace(Flow::ReplicaSetController, "create-revision", obj, "error", "", msg);
                cx.every(5000, format!("{}/{}", key.0, key.1));
                return;
            }
        };
        let hash = api::label(&cur, REVISION_HASH_LABEL).unwrap_or("").to_string();
        let mut node_pods: NodePods = BTreeMap::new();
        for p in &pods {
            if let Some(n) = target_node(p) {
                node_pods.entry(n).or_default().push(p.clone());
            }
        }
        for v in node_pods.values_mut() {
            sort_pods(v);
        }
        let prefix = format!("{}/{}/", key.0, key.1);
        let backoff = &self.backoff;
        let now = cx.now;
        let in_backoff = |node: &str| backoff.get(&format!("{prefix}{node}")).is_some_and(|(last, delay)| now.saturating_sub(*last) < *delay);
        let m = manage(&ds, &nodes, &node_pods, &hash, cx.now, &in_backoff);
        for node in &m.backing_off {
            let k = format!("{prefix}{node}");
            let delay = self.backoff.get(&k).map(|(last, d)| (last + d).saturating_sub(cx.now)).unwrap_or(BACKOFF_INITIAL);
            cx.every(delay.max(1), format!("{}/{}", key.0, key.1));
        }
        for (pod, node) in &m.failed {
            self.backoff_next(format!("{prefix}{node}"), cx.now);
            let msg = format!("Found failed daemon pod {ns}/{pod} on node {node}, will try to kill it");
            cx.event(&self.source, &ds, None, "Warning", "FailedDaemonPod", &msg, None);
        }
        let changed = !m.create.is_empty() || !m.delete.is_empty();
        let mut failed = self.sync_nodes(cx, &ds, &m.delete, &m.create, &hash);
        // Rolling updates wait until the pods just created or deleted are seen.
        if !changed && !failed && rolling(&ds) {
            let (delete, create) = rolling_update(&ds, &nodes, &node_pods, &hash, cx.now);
            failed = self.sync_nodes(cx, &ds, &delete, &create, &hash);
        }
        if failed {
            cx.every(5000, format!("{}/{}", key.0, key.1));
        }
        // `cleanupHistory`: old revisions beyond the limit whose hash no pod carries.
        let limit = get_i64(&ds, &["spec", "revisionHistoryLimit"]).unwrap_or(10).max(0) as usize;
        if old.len() > limit {
            let live: BTreeSet<&str> = pods.iter().filter_map(|p| api::label(p, REVISION_HASH_LABEL)).collect_tree();
            let mut old = old.clone();
            history::sort_by_revision(&mut old);
            let mut to_kill = old.len() - limit;
            for r in &old {
                if to_kill == 0 {
                    break;
                }
                if api::label(r, REVISION_HASH_LABEL).is_some_and(|h| live.contains(h)) {
                    continue;
                }
                let _ = self.call(cx, Request::delete(rid::CONTROLLERREVISION, &ns, api::name(r), self.creds()));
                to_kill -= 1;
            }
        }
        // Status, from the pods as the informer has them.
        let new_status = status(&ds, &nodes, &node_pods, &hash, cx.now);
        if ds.get("status") != Some(&new_status) {
            let mut body = (*ds).clone();
            body["status"] = new_status.clone();
            if let Some(m) = body.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("resourceVersion");
            }
            let _ = self.call(cx, Request::update(rid::DAEMONSET, &ns, &key.1, body, self.creds()).with_sub("status"));
        }
        let min_ready = get_i64(&ds, &["spec", "minReadySeconds"]).unwrap_or(0);
        if min_ready > 0 && get_i64(&new_status, &["numberReady"]) != Some(get_i64(&new_status, &["numberAvailable"]).unwrap_or(0)) {
            let due = pods
                .iter()
                .filter(|p| pod_is_ready(p) && !pod_is_available(p, min_ready, cx.now))
                .filter_map(|p| condition(p, "Ready").and_then(|c| get_str(c, &["lastTransitionTime"])).and_then(parse_rfc3339))
                .map(|since| since + min_ready as Millis * 1000)
                .min();
            if let Some(due) = due {
                cx.after(due.saturating_sub(cx.now).max(1), format!("{}/{}", key.0, key.1));
            }
        }
    }

    /// `syncNodes`: create pods for `create` nodes in slow-start batches, then delete; true
    /// when a write failed.
    fn sync_nodes(&mut self, cx: &mut Cx, ds: &Object, delete: &[(String, String)], create: &[String], hash: &str) -> bool {
        let ns = api::namespace(ds).to_string();
        let obj = format!("DaemonSet/{ns}/{}", api::name(ds));
        let template = pod_template(ds, hash);
        let mut failed = false;
        let create = &create[..create.len().min(BURST_REPLICAS)];
        let mut batch = 1;
        let mut i = 0;
        'batches: while i < create.len() {
            let end = (i + batch).min(create.len());
            for node in &create[i..end] {
                let mut spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
                replace_node_name_affinity(&mut spec, node);
                let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"generateName": format!("{}-", api::name(ds)), "namespace": ns, "ownerReferences": [api::owner_reference(ds)]},
                    "spec": spec});
                for f in ["labels", "annotations", "finalizers"] {
                    if let Some(v) = get(&template, &["metadata", f]) {
                        pod["metadata"][f] = v.clone();
                    }
                }
                match self.call(cx, Request::create(rid::POD, &ns, pod, self.creds())) {
                    Ok(p) => {
                        let pname = api::name(&p).to_string();
                        cx.trace(
                            Flow::ReplicaSetController,
                            "create-pod",
                            format!("Pod/{ns}/{pname}"),
                            "ok",
                            api::resource_version(&p),
                            format!("{obj} wants a pod on {node}: created {pname} (nodeName empty; its node affinity on metadata.name leaves the scheduler only {node})"),
                        );
                        cx.event(&self.source, ds, None, "Normal", "SuccessfulCreate", &format!("Created pod: {pname}"), None);
                    }
                    Err(s) => {
                        if !s.message.contains("because it is being terminated") {
                            cx.event(&self.source, ds, None, "Warning", "FailedCreate", &format!("Error creating: {}", s.message), None);
                        }
                        cx.trace(
                            Flow::ReplicaSetController,
                            "create-pod",
                            format!("Pod/{ns}/{}-", api::name(ds)),
                            "error",
                            "",
                            format!("Error creating: {}", s.message),
                        );
                        failed = true;
                        break 'batches;
                    }
                }
            }
            i = end;
            batch *= 2;
        }
        for (pod, why) in delete.iter().take(BURST_REPLICAS) {
            match self.call(cx, Request::delete(rid::POD, &ns, pod, self.creds())) {
                Ok(_) => {
                    cx.trace(Flow::ReplicaSetController, "delete-pod", format!("Pod/{ns}/{pod}"), "ok", "", why.clone());
                    cx.event(&self.source, ds, None, "Normal", "SuccessfulDelete", &format!("Deleted pod: {pod}"), None);
                }
                Err(s) if s.code == 404 => {}
                Err(s) => {
                    cx.event(&self.source, ds, None, "Warning", "FailedDelete", &format!("Error deleting: {}", s.message), None);
                    failed = true;
                }
            }
        }
        failed
    }
}

impl Controller for DaemonSetController {
    fn name(&self) -> &'static str {
        "daemon-set-controller"
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::DAEMONSET, rid::POD, rid::NODE, rid::CONTROLLERREVISION]
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

    fn ds(extra_spec: Value) -> Value {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "default", "uid": "ds-uid", "generation": 1},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
                "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "a", "image": "busybox"}]}}}});
        if let (Some(s), Some(e)) = (d["spec"].as_object_mut(), extra_spec.as_object()) {
            for (k, v) in e.iter() {
                s.insert(k.clone(), v.clone());
            }
        }
        d
    }

    fn node(name: &str, labels: Value, taints: Value) -> Object {
        Arc::new(json!({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}}))
    }

    fn pod(name: &str, node: &str, hash: &str, ready: bool) -> Object {
        let mut p = json!({"metadata": {"name": name, "labels": {"app": "agent", REVISION_HASH_LABEL: hash}, "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"nodeName": node}, "status": {"phase": "Running"}});
        if ready {
            p["status"]["conditions"] = json!([{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]);
        }
        Arc::new(p)
    }

    fn never(_: &str) -> bool {
        false
    }

    #[test]
    fn without_daemonsets_the_loop_keeps_no_pods_or_nodes() {
        let admin = || Credentials::User(UserInfo::admin());
        let mut api = crate::apiserver::ApiServer::new(1, true);
        for o in crate::apiserver::rbac::bootstrap_policy() {
            api.bootstrap_object(o);
        }
        api.bootstrap_object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}));
        api.bootstrap_object(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": "default"}}));
        api.bootstrap_object(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}));
        for i in 0..3 {
            let p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("other-{i}"), "namespace": "default", "labels": {"app": "other"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}});
            api.handle(Request::create(rid::POD, "default", p, admin())).unwrap();
        }
        let mut c = DaemonSetController::new();
        crate::loops::run_once(&mut c, &mut api, 1000);
        crate::loops::run_once(&mut c, &mut api, 1005);
        assert!(c.pods.is_empty() && c.pods.state == WatchState::Empty, "no DaemonSet: no copy of the pods");
        assert!(c.nodes.is_empty() && c.revisions.state == WatchState::Empty);
        let mut d = ds(json!({}));
        d["metadata"] = json!({"name": "agent", "namespace": "default"});
        api.handle(Request::create(rid::DAEMONSET, "default", d, admin())).unwrap();
        crate::loops::run_once(&mut c, &mut api, 2000);
        assert_eq!((c.pods.len(), c.nodes.len()), (3, 1), "the first set lists pods and nodes");
        let mine = api.store.list(rid::POD, Some("default")).filter(|p| api::controller_ref(p).is_some()).count();
        assert_eq!(mine, 1, "and puts a pod on the node");
    }

    #[test]
    fn daemon_tolerations_are_added_once_and_replace_equal_ones() {
        let mut spec =
            json!({"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]});
        add_daemon_tolerations(&mut spec);
        let t = spec["tolerations"].as_array().unwrap();
        assert_eq!(t.len(), 6);
        assert_eq!(t[0], json!({"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}), "replaced in place");
        assert_eq!(t[1]["key"], "node.kubernetes.io/not-ready");
        add_daemon_tolerations(&mut spec);
        assert_eq!(spec["tolerations"].as_array().unwrap().len(), 6);
        let mut host = json!({"hostNetwork": true});
        add_daemon_tolerations(&mut host);
        assert_eq!(host["tolerations"][6]["key"], "node.kubernetes.io/network-unavailable");
    }

    #[test]
    fn the_node_affinity_names_the_node() {
        let mut spec = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]}}}});
        replace_node_name_affinity(&mut spec, "node-a");
        assert_eq!(
            spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"],
            json!({"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}]})
        );
        let p = json!({"spec": spec});
        assert_eq!(target_node(&p).as_deref(), Some("node-a"));
        let mut empty = json!({});
        replace_node_name_affinity(&mut empty, "n");
        assert_eq!(target_node(&json!({"spec": empty})).as_deref(), Some("n"));
    }

    #[test]
    fn taints_selectors_and_affinity_decide_eligibility() {
        let d = ds(json!({}));
        let cp = node("cp", json!({}), json!([{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]));
        assert_eq!(node_should_run(&cp, &d), (false, true), "a NoSchedule taint: no new pod, an existing one stays");
        let evict = node("x", json!({}), json!([{"key": "dedicated", "value": "db", "effect": "NoExecute"}]));
        assert_eq!(node_should_run(&evict, &d), (false, false));
        let not_ready = node("nr", json!({}), json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]));
        assert_eq!(node_should_run(&not_ready, &d), (true, true), "the daemon tolerations cover node problems");
        let plain = node("a", json!({"disk": "hdd"}), json!([]));
        assert_eq!(node_should_run(&plain, &d), (true, true));
        let sel = ds(json!({"template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"nodeSelector": {"disk": "ssd"}, "containers": []}}}));
        assert_eq!(node_should_run(&plain, &sel), (false, false));
        let tol = ds(json!({"template": {"metadata": {"labels": {"app": "agent"}},
            "spec": {"tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}], "containers": []}}}));
        assert_eq!(node_should_run(&cp, &tol), (true, true));
    }

    #[test]
    fn manage_creates_on_eligible_nodes_and_deletes_elsewhere() {
        let d = ds(json!({}));
        let nodes = vec![
            node("cp", json!({}), json!([{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}])),
            node("a", json!({}), json!([])),
            node("b", json!({}), json!([])),
        ];
        let mut np: NodePods = BTreeMap::new();
        np.insert("a".into(), vec![pod("agent-1", "a", "h1", true)]);
        let m = manage(&d, &nodes, &np, "h1", 0, &never);
        assert_eq!(m.create, vec!["b".to_string()]);
        assert!(m.delete.is_empty());
        // Two pods on one node: the newer goes.
        let mut newer = (*pod("agent-2", "a", "h1", true)).clone();
        newer["metadata"]["creationTimestamp"] = json!("2026-01-01T00:01:00Z");
        np.insert("a".into(), vec![pod("agent-1", "a", "h1", true), Arc::new(newer)]);
        let m = manage(&d, &nodes, &np, "h1", 0, &never);
        assert_eq!(m.delete.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(), vec!["agent-2"]);
        // A failed pod is deleted unless its node is backing off.
        let mut f = (*pod("agent-3", "b", "h1", false)).clone();
        f["status"]["phase"] = json!("Failed");
        np.insert("a".into(), vec![pod("agent-1", "a", "h1", true)]);
        np.insert("b".into(), vec![Arc::new(f)]);
        let m = manage(&d, &nodes, &np, "h1", 0, &never);
        assert_eq!(m.failed, vec![("agent-3".to_string(), "b".to_string())]);
        let m = manage(&d, &nodes, &np, "h1", 0, &|n: &str| n == "b");
        assert!(m.failed.is_empty() && m.delete.is_empty());
        assert_eq!(m.backing_off, vec!["b".to_string()]);
    }

    #[test]
    fn rolling_update_replaces_within_max_unavailable() {
        let d = ds(json!({}));
        let nodes: Vec<Object> = ["a", "b", "c"].iter().map(|n| node(n, json!({}), json!([]))).collect();
        let mut np: NodePods = BTreeMap::new();
        for n in ["a", "b", "c"] {
            np.insert(n.into(), vec![pod(&format!("agent-{n}"), n, "old", true)]);
        }
        let (del, create) = rolling_update(&d, &nodes, &np, "new", 0);
        assert_eq!(del.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(), vec!["agent-a"]);
        assert!(create.is_empty());
        // An unavailable new pod uses up the budget.
        np.insert("a".into(), vec![pod("agent-a2", "a", "new", false)]);
        let (del, _) = rolling_update(&d, &nodes, &np, "new", 0);
        assert!(del.is_empty());
        // maxSurge 1: a new pod is created beside an old one first.
        let surge = ds(json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}}));
        for n in ["a", "b", "c"] {
            np.insert(n.into(), vec![pod(&format!("agent-{n}"), n, "old", true)]);
        }
        let (del, create) = rolling_update(&surge, &nodes, &np, "new", 0);
        assert!(del.is_empty());
        assert_eq!(create, vec!["a".to_string()]);
    }

    #[test]
    fn status_counts_each_eligible_node_once() {
        let d = ds(json!({"minReadySeconds": 30}));
        let nodes = vec![
            node("cp", json!({}), json!([{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}])),
            node("a", json!({}), json!([])),
            node("b", json!({}), json!([])),
        ];
        let mut np: NodePods = BTreeMap::new();
        np.insert("a".into(), vec![pod("agent-a", "a", "h", true)]);
        np.insert("cp".into(), vec![pod("agent-cp", "cp", "h", true)]);
        let s = status(&d, &nodes, &np, "h", 10_000);
        assert_eq!(s["desiredNumberScheduled"], 2);
        assert_eq!(s["currentNumberScheduled"], 1);
        assert_eq!(s["numberMisscheduled"], 1);
        assert_eq!(s["numberReady"], 1);
        assert_eq!(s["updatedNumberScheduled"], 1);
        assert!(s.get("numberAvailable").is_none(), "ready for 10 s of the 30 required");
        assert_eq!(s["numberUnavailable"], 2);
        let s = status(&d, &nodes, &np, "h", 40_000);
        assert_eq!(s["numberAvailable"], 1);
        assert_eq!(s["numberUnavailable"], 1);
    }
}
