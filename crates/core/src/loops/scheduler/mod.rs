//! kube-scheduler with the default plugins that decide placement for ordinary workloads
//! (`pkg/scheduler/schedule_one.go`, `framework/plugins/...`, `apis/config/v1`).
//!
//! Filter: NodeUnschedulable, TaintToleration, NodeAffinity (with nodeSelector),
//! NodePorts, NodeResourcesFit, PodTopologySpread, InterPodAffinity. Score:
//! NodeResourcesFit (LeastAllocated, weight 1), NodeResourcesBalancedAllocation (1),
//! TaintToleration (3), NodeAffinity (2), PodTopologySpread (2: the ScheduleAnyway
//! constraints, or the system default ones) and InterPodAffinity (2); the best node wins,
//! ties broken at random. Deleted nodes leave the node list at once.
//! Large clusters use the adaptive percentageOfNodesToScore with a rotating start.
//! A pod that fits nowhere gets the FailedScheduling message kube-scheduler composes,
//! DefaultPreemption looks for lower-priority victims, and the pod waits in the
//! unschedulable queue until a cluster event (with back-off 1s..10s) or the 5-minute flush.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, Request};
use crate::foundation::api::{self, get, get_array, get_i64, get_str, rid, Object, ResourceId};
use crate::foundation::labels::{node_selector_term_matches, selector_matches};
use crate::foundation::quantity::value_milli;
use crate::foundation::sim::{Millis, Rng, Stream};
use crate::foundation::sort::{CollectTree, Sort};
use crate::foundation::value::{json, Value};
use crate::loops::events::Source;
use crate::loops::informer::Informer;
use crate::loops::{req_as, Controller, Cx};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use volumebinding::{PodClaims, Volumes, Waiting};

mod volumebinding;

type Key = (String, String);

/// What a pod asks of a node.
#[derive(Debug, Clone, Default, PartialEq)]
///
/// Milli-units in `i128`: a quantity may be as large as `i64` holds (`8Ei` of memory is
/// 9.2e21 milli-bytes, saturated to `i64::MAX`), and sums of such must neither overflow
/// nor wrap into a pod that fits.
pub struct Requests {
    pub cpu: i128,
    pub memory: i128,
    /// `ephemeral-storage`, milli-bytes.
    pub ephemeral: i128,
    /// Extended resources (`nvidia.com/gpu`, ...), milli-units.
    pub other: BTreeMap<String, i128>,
    /// With the scoring defaults for request-less containers (100m, 200Mi).
    pub nonzero_cpu: i128,
    pub nonzero_memory: i128,
}

/// Sum of container requests, max'ed with each init container (`resourcehelper.PodRequests`).
pub fn pod_requests(pod: &Value) -> Requests {
    let mut r = Requests::default();
    let add = |r: &mut Requests, c: &Value, into: bool| {
        let req = get(c, &["resources", "requests"]).and_then(Value::as_object);
        let q = |k: &str| req.and_then(|m| m.get(k)).and_then(value_milli).map(i128::from);
        let cpu = q("cpu").unwrap_or(0);
        let mem = q("memory").unwrap_or(0);
        let eph = q("ephemeral-storage").unwrap_or(0);
        if into {
            r.cpu += cpu;
            r.memory += mem;
            r.ephemeral += eph;
            r.nonzero_cpu += q("cpu").unwrap_or(100);
            r.nonzero_memory += q("memory").unwrap_or(200 * 1024 * 1024 * 1000);
            for (k, v) in req.into_iter().flatten() {
                if !["cpu", "memory", "ephemeral-storage"].contains(&k.as_str()) {
                    *r.other.entry(k.to_string()).or_default() += i128::from(value_milli(v).unwrap_or(0));
                }
            }
        } else {
            r.cpu = r.cpu.max(cpu);
            r.memory = r.memory.max(mem);
            r.ephemeral = r.ephemeral.max(eph);
        }
    };
    for c in get_array(pod, &["spec", "containers"]) {
        add(&mut r, c, true);
    }
    let mut init = Requests::default();
    for c in get_array(pod, &["spec", "initContainers"]) {
        add(&mut init, c, false);
    }
    r.cpu = r.cpu.max(init.cpu);
    r.memory = r.memory.max(init.memory);
    r.ephemeral = r.ephemeral.max(init.ephemeral);
    r
}

/// Whether `tolerations` tolerate `taint` (`v1helper.TolerationsTolerateTaint`).
pub fn tolerates(tolerations: &[Value], taint: &Value) -> bool {
    let tk = get_str(taint, &["key"]).unwrap_or("");
    let tv = get_str(taint, &["value"]).unwrap_or("");
    let te = get_str(taint, &["effect"]).unwrap_or("");
    tolerations.iter().any(|t| {
        let e = get_str(t, &["effect"]).unwrap_or("");
        if !e.is_empty() && e != te {
            return false;
        }
        let k = get_str(t, &["key"]).unwrap_or("");
        match get_str(t, &["operator"]).unwrap_or("Equal") {
            "Exists" => k.is_empty() || k == tk,
            _ => k == tk && get_str(t, &["value"]).unwrap_or("") == tv,
        }
    })
}

#[derive(Debug, Clone)]
struct NodeInfo {
    name: String,
    obj: Object,
    alloc_cpu: i128,
    alloc_mem: i128,
    alloc_ephemeral: i128,
    alloc_pods: i128,
    alloc_other: BTreeMap<String, i128>,
    req: Requests,
    pods: BTreeSet<Key>,
    /// How many of its pods have each priority (preemption skips a node with none lower).
    priorities: BTreeMap<i64, u32>,
    ports: BTreeSet<(String, i64)>,
    /// Precomputed from the Node so that filtering reads no JSON.
    unschedulable: bool,
    hard_taints: Vec<Value>,
    prefer_taints: Vec<Value>,
    /// The Node is gone: it is no longer listed (upstream's cache drops it from the snapshot),
    /// though its slot stays so that the pods still bound to it can be unaccounted.
    deleted: bool,
    /// The labels topology spreading reads for every node of every cycle.
    hostname: Option<String>,
    zone: Option<String>,
}

impl NodeInfo {
    fn new(obj: Object) -> Self {
        let q = |k: &str| i128::from(get(&obj, &["status", "allocatable", k]).and_then(value_milli).unwrap_or(0));
        let mut other = BTreeMap::new();
        for (k, v) in get(&obj, &["status", "allocatable"]).and_then(Value::as_object).into_iter().flatten() {
            if !["cpu", "memory", "pods", "ephemeral-storage"].contains(&k.as_str()) && !k.starts_with("hugepages-") {
                other.insert(k.to_string(), i128::from(value_milli(v).unwrap_or(0)));
            }
        }
        NodeInfo {
            name: api::name(&obj).to_string(),
            alloc_cpu: q("cpu"),
            alloc_mem: q("memory"),
            alloc_ephemeral: q("ephemeral-storage"),
            alloc_pods: q("pods") / 1000,
            alloc_other: other,
            req: Requests::default(),
            pods: BTreeSet::new(),
            priorities: BTreeMap::new(),
            ports: BTreeSet::new(),
            unschedulable: api::get_bool(&obj, &["spec", "unschedulable"]).unwrap_or(false),
            hard_taints: get_array(&obj, &["spec", "taints"])
                .iter()
                .filter(|t| matches!(get_str(t, &["effect"]), Some("NoSchedule") | Some("NoExecute")))
                .cloned()
                .collect(),
            prefer_taints: get_array(&obj, &["spec", "taints"]).iter().filter(|t| get_str(t, &["effect"]) == Some("PreferNoSchedule")).cloned().collect(),
            deleted: false,
            hostname: api::label(&obj, "kubernetes.io/hostname").map(str::to_string),
            zone: api::label(&obj, "topology.kubernetes.io/zone").map(str::to_string),
            obj,
        }
    }

    /// A label of the Node (the hostname and zone without a lookup).
    fn label(&self, key: &str) -> Option<&str> {
        match key {
            "kubernetes.io/hostname" => self.hostname.as_deref(),
            "topology.kubernetes.io/zone" => self.zone.as_deref(),
            _ => api::label(&self.obj, key),
        }
    }
}

/// What the scheduler keeps about a pod it has placed (its own or bound by others).
#[derive(Debug, Clone)]
struct Placed {
    node: usize,
    anti_affinity: bool,
    req: Requests,
    ports: Vec<(String, i64)>,
    owner: Option<String>,
    priority: i64,
}

fn host_ports(pod: &Value) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for c in get_array(pod, &["spec", "containers"]) {
        for p in get_array(c, &["ports"]) {
            if let Some(hp) = get_i64(p, &["hostPort"]).filter(|h| *h > 0) {
                out.push((get_str(p, &["protocol"]).unwrap_or("TCP").to_string(), hp));
            }
        }
    }
    out
}

/// Add `by` to a zone's count ("" for a node without a zone), without a new key when it has
/// one already.
fn add_to_zone(zones: &mut BTreeMap<String, i64>, zone: Option<&str>, by: i64) {
    let zone = zone.unwrap_or("");
    match zones.get_mut(zone) {
        Some(n) => *n += by,
        None => {
            zones.insert(zone.to_string(), by);
        }
    }
}

fn owner_uid(pod: &Value) -> Option<String> {
    api::controller_ref(pod).and_then(|r| get_str(r, &["uid"])).map(str::to_string)
}

/// Filter failure reasons, and whether preemption could help on that node.
struct NodeStatus {
    reasons: Vec<String>,
    resolvable: bool,
}

/// What one scheduling cycle works out once for its pod (upstream's CycleState).
struct Cycle {
    req: Requests,
    ports: Vec<(String, i64)>,
    affinity: bool,
    /// The pod has `spec.affinity` (its inter-pod terms are checked per node).
    pod_affinity: bool,
    spread: Vec<Spread>,
    existing_anti: BTreeMap<String, BTreeSet<String>>,
    claims: PodClaims,
}

#[derive(Clone)]
pub struct Scheduler {
    user: UserInfo,
    source: Source,
    rng: Rng,
    pods: Informer,
    nodes: Informer,
    infos: Vec<NodeInfo>,
    index: HashMap<String, usize>,
    placed: HashMap<Key, Placed>,
    /// Active queue ordered by priority (highest first), then arrival.
    active: BTreeSet<(i64, u64, Key)>,
    queued: HashMap<Key, (i64, u64)>,
    unschedulable: BTreeMap<Key, u32>,
    seq: u64,
    next_start: usize,
    /// owner uid -> pods per node index (system default spreading).
    owner_nodes: HashMap<String, Vec<u32>>,
    /// owner uid -> its pods per zone over the nodes that exist, for the system default's
    /// zone constraint: summed from `owner_nodes` when first asked, then kept up to date as
    /// pods are placed and removed; all forgotten when a node comes, goes or changes zone.
    owner_zones: std::cell::RefCell<HashMap<String, BTreeMap<String, i64>>>,
    /// Placed pods with required pod anti-affinity (their terms constrain everyone).
    anti_affinity_pods: usize,
    /// Indexes of the nodes that exist (not deleted), in order: the scheduler's node list.
    live: Vec<usize>,
    /// Namespaces, for the namespaceSelector of pod (anti-)affinity terms.
    namespaces: Informer,
    /// Claims, volumes and classes, for VolumeBinding and VolumeZone.
    volumes: Volumes,
    /// Pods whose claims are being bound before them (VolumeBinding's PreBind wait).
    waiting: BTreeMap<Key, Waiting>,
    /// A `drain` timer is due: the queue held more than one task schedules.
    drain_due: bool,
}

/// The most pods one task schedules before the scheduler comes back for the rest at the
/// same moment (`drain`): the real scheduler takes one pod per cycle, and a run interleaves
/// its other loops' work with a long queue, so no single task of the simulation (a page's
/// frame) grows with the queue.
pub const SCHEDULE_PER_TASK: usize = 32;

fn has_required_anti_affinity(pod: &Value) -> bool {
    !get_array(pod, &["spec", "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution"]).is_empty()
}

/// The filters that read only the pod and one node with the pods already on it
/// (NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit): all a
/// simulation of a node that does not exist yet can run ([`SimNode`]).
fn node_filters(info: &NodeInfo, pod: &Value, req: &Requests, ports: &[(String, i64)], affinity: bool) -> Result<(), NodeStatus> {
    let node = &info.obj;
    let tolerations = if info.unschedulable || !info.hard_taints.is_empty() { get_array(pod, &["spec", "tolerations"]) } else { &[] };
    let unresolvable = |r: &str| Err(NodeStatus { reasons: vec![r.to_string()], resolvable: false });
    // NodeUnschedulable
    if info.unschedulable && !tolerates(tolerations, &json!({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})) {
        return unresolvable("node(s) were unschedulable");
    }
    // TaintToleration
    if info.hard_taints.iter().any(|t| !tolerates(tolerations, t)) {
        return unresolvable("node(s) had untolerated taint(s)");
    }
    // NodeAffinity (nodeSelector and required terms)
    if affinity && !node_affinity_matches(pod, node) {
        return unresolvable("node(s) didn't match Pod's node affinity/selector");
    }
    // NodePorts
    for hp in ports {
        if info.ports.contains(hp) {
            return Err(NodeStatus { reasons: vec!["node(s) didn't have free ports for the requested pod ports".into()], resolvable: true });
        }
    }
    // NodeResourcesFit
    let mut reasons = Vec::new();
    let mut resolvable = true;
    if info.pods.len() as i128 + 1 > info.alloc_pods {
        reasons.push("Too many pods".to_string());
    }
    if req.cpu > 0 && req.cpu > info.alloc_cpu - info.req.cpu {
        reasons.push("Insufficient cpu".to_string());
        resolvable &= req.cpu <= info.alloc_cpu;
    }
    if req.memory > 0 && req.memory > info.alloc_mem - info.req.memory {
        reasons.push("Insufficient memory".to_string());
        resolvable &= req.memory <= info.alloc_mem;
    }
    if req.ephemeral > 0 && req.ephemeral > info.alloc_ephemeral - info.req.ephemeral {
        reasons.push("Insufficient ephemeral-storage".to_string());
        resolvable &= req.ephemeral <= info.alloc_ephemeral;
    }
    for (k, v) in &req.other {
        let have = info.alloc_other.get(k).copied().unwrap_or(0);
        if *v > 0 && *v > have - info.req.other.get(k).copied().unwrap_or(0) {
            reasons.push(format!("Insufficient {k}"));
            resolvable &= *v <= have;
        }
    }
    if !reasons.is_empty() {
        return Err(NodeStatus { reasons, resolvable });
    }
    Ok(())
}

/// A node as the scheduler's filters see it, with pods placed on it in a simulation: how
/// the cluster autoscaler asks whether pending pods would fit on a node a group would add
/// (its template) or whether a node's pods could move to the others.
#[derive(Debug, Clone)]
pub struct SimNode(NodeInfo);

impl SimNode {
    pub fn new(node: Object) -> Self {
        SimNode(NodeInfo::new(node))
    }
    pub fn name(&self) -> &str {
        &self.0.name
    }
    /// Account a pod as running here (its requests, host ports and pod slot).
    pub fn add(&mut self, pod: &Value) {
        let r = pod_requests(pod);
        let info = &mut self.0;
        info.req.cpu += r.cpu;
        info.req.memory += r.memory;
        info.req.ephemeral += r.ephemeral;
        for (k, v) in &r.other {
            *info.req.other.entry(k.clone()).or_default() += v;
        }
        info.pods.insert((api::namespace(pod).to_string(), api::name(pod).to_string()));
        info.ports.extend(host_ports(pod));
    }
    /// Whether `pod` passes the node filters here; the reasons as the scheduler words them
    /// if not.
    pub fn fits(&self, pod: &Value) -> Result<(), Vec<String>> {
        node_filters(&self.0, pod, &pod_requests(pod), &host_ports(pod), pod_has_node_affinity(pod)).map_err(|s| s.reasons)
    }
    /// Requested over allocatable cpu and memory, as fractions.
    pub fn utilization(&self) -> (f64, f64) {
        let f = |used: i128, alloc: i128| if alloc > 0 { used as f64 / alloc as f64 } else { 0.0 };
        (f(self.0.req.cpu, self.0.alloc_cpu), f(self.0.req.memory, self.0.alloc_mem))
    }
}

impl Scheduler {
    pub fn new(seed: u64) -> Self {
        let user = UserInfo::new("system:kube-scheduler", &["system:authenticated"]);
        Scheduler {
            source: Source { component: "default-scheduler", host: String::new(), user: user.clone() },
            user,
            rng: Rng::new(seed, Stream::Scheduler),
            pods: Informer::new(rid::POD),
            nodes: Informer::new(rid::NODE),
            infos: vec![],
            index: HashMap::new(),
            placed: HashMap::new(),
            active: BTreeSet::new(),
            queued: HashMap::new(),
            unschedulable: BTreeMap::new(),
            seq: 0,
            next_start: 0,
            owner_nodes: HashMap::new(),
            owner_zones: Default::default(),
            anti_affinity_pods: 0,
            live: Vec::new(),
            namespaces: Informer::new(rid::NAMESPACE),
            volumes: Volumes::new(),
            waiting: BTreeMap::new(),
            drain_due: false,
        }
    }

    fn creds(&self) -> Credentials {
        Credentials::User(self.user.clone())
    }

    fn enqueue(&mut self, key: Key, priority: i64) {
        if self.queued.contains_key(&key) {
            return;
        }
        self.seq += 1;
        self.active.insert((-priority, self.seq, key.clone()));
        self.queued.insert(key, (-priority, self.seq));
    }

    fn dequeue(&mut self, key: &Key) {
        if let Some((p, s)) = self.queued.remove(key) {
            self.active.remove(&(p, s, key.clone()));
        }
        self.unschedulable.remove(key);
    }

    fn account(&mut self, key: &Key, pod: &Value) {
        let Some(node) = get_str(pod, &["spec", "nodeName"]) else { return };
        let Some(&ni) = self.index.get(node) else { return };
        if self.placed.contains_key(key) {
            return;
        }
        let p = Placed {
            node: ni,
            anti_affinity: has_required_anti_affinity(pod),
            req: pod_requests(pod),
            ports: host_ports(pod),
            owner: owner_uid(pod),
            priority: get_i64(pod, &["spec", "priority"]).unwrap_or(0),
        };
        let info = &mut self.infos[ni];
        info.req.cpu += p.req.cpu;
        info.req.memory += p.req.memory;
        info.req.ephemeral += p.req.ephemeral;
        info.req.nonzero_cpu += p.req.nonzero_cpu;
        info.req.nonzero_memory += p.req.nonzero_memory;
        for (k, v) in &p.req.other {
            *info.req.other.entry(k.clone()).or_default() += v;
        }
        info.pods.insert(key.clone());
        *info.priorities.entry(p.priority).or_default() += 1;
        if p.anti_affinity {
            self.anti_affinity_pods += 1;
        }
        for hp in &p.ports {
            info.ports.insert(hp.clone());
        }
        if let Some(o) = &p.owner {
            let total = self.index.len();
            let counts = self.owner_nodes.entry(o.clone()).or_default();
            if counts.len() < total {
                counts.resize(total, 0);
            }
            counts[ni] += 1;
            self.count_in_zone(o, ni, 1);
        }
        self.placed.insert(key.clone(), p);
    }

    fn unaccount(&mut self, key: &Key) {
        let Some(p) = self.placed.remove(key) else { return };
        let info = &mut self.infos[p.node];
        info.req.cpu -= p.req.cpu;
        info.req.memory -= p.req.memory;
        info.req.ephemeral -= p.req.ephemeral;
        info.req.nonzero_cpu -= p.req.nonzero_cpu;
        info.req.nonzero_memory -= p.req.nonzero_memory;
        for (k, v) in &p.req.other {
            *info.req.other.entry(k.clone()).or_default() -= v;
        }
        info.pods.remove(key);
        if let Some(n) = info.priorities.get_mut(&p.priority) {
            *n -= 1;
            if *n == 0 {
                info.priorities.remove(&p.priority);
            }
        }
        if p.anti_affinity {
            self.anti_affinity_pods -= 1;
        }
        for hp in &p.ports {
            info.ports.remove(hp);
        }
        if let Some(o) = &p.owner {
            if let Some(c) = self.owner_nodes.get_mut(o).and_then(|m| m.get_mut(p.node)) {
                if *c > 0 {
                    *c -= 1;
                    self.count_in_zone(o, p.node, -1);
                }
            }
        }
    }

    /// Keep an owner's zone counts, if summed already, as one of its pods is placed on (or
    /// removed from) node `ni`. Nodes that no longer exist are not counted.
    fn count_in_zone(&mut self, owner: &str, ni: usize, by: i64) {
        if self.infos[ni].deleted {
            return;
        }
        if let Some(zones) = self.owner_zones.get_mut().get_mut(owner) {
            add_to_zone(zones, self.infos[ni].zone.as_deref(), by);
        }
    }

    /// An owner's pods per zone ("" for nodes without one) over the nodes that exist.
    fn zone_counts(&self, owner: &str) -> std::cell::Ref<'_, BTreeMap<String, i64>> {
        if !self.owner_zones.borrow().contains_key(owner) {
            let mut zones = BTreeMap::new();
            if let Some(per_node) = self.owner_nodes.get(owner) {
                for &ni in &self.live {
                    let n = i64::from(per_node.get(ni).copied().unwrap_or(0));
                    if n > 0 {
                        add_to_zone(&mut zones, self.infos[ni].zone.as_deref(), n);
                    }
                }
            }
            self.owner_zones.borrow_mut().insert(owner.to_string(), zones);
        }
        std::cell::Ref::map(self.owner_zones.borrow(), |z| &z[owner])
    }

    fn sync_informers(&mut self, cx: &mut Cx) -> bool {
        let mut cluster_event = false;
        let r = self.nodes.sync(&cx.api.store);
        let nodes_changed = !r.deltas.is_empty();
        for d in r.deltas {
            let name = api::name(&d.object).to_string();
            match d.kind {
                EventType::Deleted => {
                    // The cache drops the node (`cache.RemoveNode`): it is no longer filtered,
                    // scored or counted. Its slot stays, so that indexes held elsewhere stay
                    // valid and the pods still bound to it are unaccounted when they go.
                    if let Some(&i) = self.index.get(&name) {
                        self.infos[i].deleted = true;
                        self.owner_zones.get_mut().clear();
                    }
                }
                _ => {
                    let relevant = d.old.as_ref().is_none_or(|o| {
                        o.get("spec") != d.object.get("spec")
                            || o.get("metadata").and_then(|m| m.get("labels")) != d.object.get("metadata").and_then(|m| m.get("labels"))
                            || get(o, &["status", "allocatable"]) != get(&d.object, &["status", "allocatable"])
                    });
                    match self.index.get(&name) {
                        Some(&i) => {
                            let fresh = NodeInfo::new(d.object.clone());
                            let info = &mut self.infos[i];
                            info.obj = fresh.obj;
                            info.alloc_cpu = fresh.alloc_cpu;
                            info.alloc_mem = fresh.alloc_mem;
                            info.alloc_ephemeral = fresh.alloc_ephemeral;
                            info.alloc_pods = fresh.alloc_pods;
                            info.alloc_other = fresh.alloc_other;
                            info.unschedulable = fresh.unschedulable;
                            info.hard_taints = fresh.hard_taints;
                            info.prefer_taints = fresh.prefer_taints;
                            // Relabelled nodes spread by their new hostname and zone.
                            if info.deleted || info.zone != fresh.zone {
                                self.owner_zones.get_mut().clear();
                            }
                            info.hostname = fresh.hostname;
                            info.zone = fresh.zone;
                            info.deleted = false;
                        }
                        None => {
                            self.index.insert(name, self.infos.len());
                            self.infos.push(NodeInfo::new(d.object.clone()));
                            self.owner_zones.get_mut().clear();
                        }
                    }
                    cluster_event |= relevant;
                }
            }
        }
        if nodes_changed {
            self.live = (0..self.infos.len()).filter(|&i| !self.infos[i].deleted).collect();
        }
        self.namespaces.sync(&cx.api.store);
        // A claim, volume or class that appears or changes may let a pod through VolumeBinding.
        cluster_event |= self.volumes.sync(&cx.api.store);
        let r = self.pods.sync(&cx.api.store);
        for d in r.deltas {
            let key = (api::namespace(&d.object).to_string(), api::name(&d.object).to_string());
            let p = &d.object;
            let terminal = matches!(get_str(p, &["status", "phase"]), Some("Succeeded") | Some("Failed"));
            let assigned = get_str(p, &["spec", "nodeName"]).is_some();
            match d.kind {
                EventType::Deleted => {
                    if self.placed.contains_key(&key) {
                        cluster_event = true;
                    }
                    self.unaccount(&key);
                    self.dequeue(&key);
                    self.waiting.remove(&key);
                }
                _ => {
                    if assigned {
                        self.dequeue(&key);
                        if terminal {
                            if self.placed.contains_key(&key) {
                                cluster_event = true;
                            }
                            self.unaccount(&key);
                        } else {
                            self.account(&key, p);
                        }
                    } else if self.waiting.contains_key(&key) {
                        // Assumed on a node while its volumes bind: not queued again.
                    } else if !api::is_deleting(p)
                        && !terminal
                        && get_str(p, &["spec", "schedulerName"]).unwrap_or("default-scheduler") == "default-scheduler"
                        && get_array(p, &["spec", "schedulingGates"]).is_empty()
                    {
                        if !self.unschedulable.contains_key(&key) {
                            let new = d.kind == EventType::Added;
                            if new && cx.tracing() {
                                cx.trace(
                                    Flow::Scheduler,
                                    "queue",
                                    format!("Pod/{}/{}", key.0, key.1),
                                    "ok",
                                    api::resource_version(p),
                                    "scheduler sees an unscheduled pod and queues it".into(),
                                );
                            }
                            self.enqueue(key, get_i64(p, &["spec", "priority"]).unwrap_or(0));
                        }
                    } else {
                        self.dequeue(&key);
                    }
                }
            }
        }
        cluster_event
    }

    /// The filters in upstream's plugin order; a node fails on the first that rejects it.
    fn filter(&self, pod: &Value, cy: &Cycle, ni: usize) -> Result<(), NodeStatus> {
        let info = &self.infos[ni];
        let node = &info.obj;
        node_filters(info, pod, &cy.req, &cy.ports, cy.affinity)?;
        if !cy.claims.is_empty() {
            // VolumeBinding
            if let Err(reasons) = self.volumes.filter(&cy.claims, node) {
                return Err(NodeStatus { reasons: reasons.into_iter().map(str::to_string).collect(), resolvable: false });
            }
            // VolumeZone
            if !self.volumes.zone_filter(&cy.claims, node) {
                return Err(NodeStatus { reasons: vec![volumebinding::ERR_ZONE_CONFLICT.into()], resolvable: false });
            }
        }
        // PodTopologySpread (DoNotSchedule)
        for s in &cy.spread {
            let Some(domain) = api::label(node, &s.key) else {
                return Err(NodeStatus {
                    reasons: vec!["node(s) didn't match pod topology spread constraints (missing required label)".into()],
                    resolvable: false,
                });
            };
            let count = s.counts.get(domain).copied().unwrap_or(0) + u32::from(s.self_match);
            let min = s.min_count();
            if count as i64 - min as i64 > s.max_skew {
                return Err(NodeStatus { reasons: vec!["node(s) didn't match pod topology spread constraints".into()], resolvable: true });
            }
        }
        // InterPodAffinity (required terms)
        if !cy.existing_anti.is_empty() || cy.pod_affinity {
            if let Some(r) = self.inter_pod_affinity(pod, ni, &cy.existing_anti) {
                return Err(NodeStatus { reasons: vec![r.into()], resolvable: r != "node(s) didn't match pod affinity rules" });
            }
        }
        Ok(())
    }

    /// The nodes that exist, in list order (the snapshot's node list).
    fn live_infos(&self) -> impl Iterator<Item = &NodeInfo> + '_ {
        self.live.iter().map(move |&i| &self.infos[i])
    }

    fn pods_in_domain<'a>(&'a self, key: &'a str, domain: &'a str) -> impl Iterator<Item = &'a Object> + 'a {
        self.live_infos().filter(move |i| api::label(&i.obj, key) == Some(domain)).flat_map(move |i| i.pods.iter().filter_map(|k| self.pods.get(&k.0, &k.1)))
    }

    /// Whether `term`, a required pod (anti-)affinity term of a pod in namespace `owner_ns`,
    /// selects `target` (`framework.AffinityTerm.Matches`): the target's namespace is one of
    /// the term's namespaces (`getNamespacesFromPodAffinityTerm`: the owner's own when the
    /// term names none and has no namespaceSelector) or its labels match the
    /// namespaceSelector (null selects nothing, `{}` everything), and the target's labels
    /// match the labelSelector.
    fn term_matches(&self, term: &Value, owner_ns: &str, target: &Value) -> bool {
        let target_ns = api::namespace(target);
        let names = get_array(term, &["namespaces"]);
        let ns_selector = get(term, &["namespaceSelector"]).filter(|s| !s.is_null());
        let named = if names.is_empty() && ns_selector.is_none() { target_ns == owner_ns } else { names.iter().any(|n| n.as_str() == Some(target_ns)) };
        let selected = || ns_selector.is_some_and(|s| selector_matches(Some(s), self.namespaces.get("", target_ns).and_then(|n| api::labels(n))));
        (named || selected()) && selector_matches(get(term, &["labelSelector"]), api::labels(target))
    }

    /// The topology pairs in which an existing pod's required anti-affinity term selects
    /// `pod`, as topology key -> values (`getExistingAntiAffinityCounts`,
    /// `updateWithAntiAffinityTerms`): the pod may not go to a node with any of them.
    fn existing_anti_affinity(&self, pod: &Value) -> BTreeMap<String, BTreeSet<String>> {
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        if self.anti_affinity_pods == 0 {
            return out;
        }
        for info in self.live_infos() {
            for k in &info.pods {
                if !self.placed.get(k).is_some_and(|p| p.anti_affinity) {
                    continue;
                }
                let Some(o) = self.pods.get(&k.0, &k.1) else { continue };
                for term in get_array(o, &["spec", "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution"]) {
                    let key = get_str(term, &["topologyKey"]).unwrap_or("");
                    if let Some(value) = api::label(&info.obj, key) {
                        if self.term_matches(term, api::namespace(o), pod) {
                            out.entry(key.to_string()).or_default().insert(value.to_string());
                        }
                    }
                }
            }
        }
        out
    }

    fn inter_pod_affinity(&self, pod: &Value, ni: usize, existing_anti: &BTreeMap<String, BTreeSet<String>>) -> Option<&'static str> {
        if existing_anti.is_empty() && get(pod, &["spec", "affinity"]).is_none() {
            return None;
        }
        let node = &self.infos[ni].obj;
        let ns = api::namespace(pod);
        for term in get_array(pod, &["spec", "affinity", "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution"]) {
            let key = get_str(term, &["topologyKey"]).unwrap_or("");
            let Some(domain) = api::label(node, key) else { return Some("node(s) didn't match pod affinity rules") };
            let any = self.pods_in_domain(key, domain).any(|o| self.term_matches(term, ns, o));
            if !any {
                // The first pod of a group that matches its own term may start a domain.
                let exists_anywhere =
                    self.live_infos().flat_map(|i| i.pods.iter()).filter_map(|k| self.pods.get(&k.0, &k.1)).any(|o| self.term_matches(term, ns, o));
                if exists_anywhere || !self.term_matches(term, ns, pod) {
                    return Some("node(s) didn't match pod affinity rules");
                }
            }
        }
        for term in get_array(pod, &["spec", "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution"]) {
            let key = get_str(term, &["topologyKey"]).unwrap_or("");
            let Some(domain) = api::label(node, key) else { continue };
            if self.pods_in_domain(key, domain).any(|o| self.term_matches(term, ns, o)) {
                return Some("node(s) didn't match pod anti-affinity rules");
            }
        }
        // Existing pods' anti-affinity against this pod (`satisfyExistingPodsAntiAffinity`):
        // any of the node's topology pairs where an existing pod's term selects it.
        let blocked = api::labels(node)
            .into_iter()
            .flatten()
            .any(|(k, v)| v.as_str().is_some_and(|v| existing_anti.get(k.as_str()).is_some_and(|values| values.contains(v))));
        if blocked {
            return Some("node(s) didn't satisfy existing pods anti-affinity rules");
        }
        None
    }

    /// The pod's DoNotSchedule topology spread constraints, with the matching pods per domain
    /// (PodTopologySpread's PreFilter; ScheduleAnyway ones are scored in [`Self::spread_scores`]).
    fn spread_constraints(&self, pod: &Value) -> Vec<Spread> {
        let ns = api::namespace(pod);
        let mut out = Vec::new();
        for c in get_array(pod, &["spec", "topologySpreadConstraints"]) {
            if get_str(c, &["whenUnsatisfiable"]).unwrap_or("DoNotSchedule") != "DoNotSchedule" {
                continue;
            }
            let key = get_str(c, &["topologyKey"]).unwrap_or("").to_string();
            let sel = get(c, &["labelSelector"]).cloned();
            let mut counts: BTreeMap<String, u32> = BTreeMap::new();
            for info in self.live_infos() {
                if !node_affinity_matches(pod, &info.obj) {
                    continue;
                }
                let Some(domain) = api::label(&info.obj, &key) else { continue };
                let n = info
                    .pods
                    .iter()
                    .filter_map(|k| self.pods.get(&k.0, &k.1))
                    .filter(|o| api::namespace(o) == ns && selector_matches(sel.as_ref(), api::labels(o)))
                    .count() as u32;
                *counts.entry(domain.to_string()).or_default() += n;
            }
            out.push(Spread { key, max_skew: get_i64(c, &["maxSkew"]).unwrap_or(1), self_match: selector_matches(sel.as_ref(), api::labels(pod)), counts });
        }
        out
    }

    /// PodTopologySpread's PreScore, Score and NormalizeScore (`podtopologyspread/scoring.go`):
    /// 0..=100 per feasible node, or `None` when the pod has no ScheduleAnyway constraint to
    /// score (the plugin's Skip).
    fn spread_scores(&self, pod: &Value, feasible: &[usize]) -> Option<Vec<i64>> {
        const HOSTNAME: &str = "kubernetes.io/hostname";
        struct Soft<'a> {
            key: &'a str,
            max_skew: i64,
            selector: Option<&'a Value>,
            /// System default constraints count the pods of the pod's owner.
            owner: Option<&'a Vec<u32>>,
            owner_uid: Option<&'a str>,
            affinity_honor: bool,
            taints_honor: bool,
        }
        let explicit = get_array(pod, &["spec", "topologySpreadConstraints"]);
        let owner = owner_uid(pod);
        let mut soft = Vec::new();
        if !explicit.is_empty() {
            // Only ScheduleAnyway constraints are scored (`filterTopologySpreadConstraints(...,
            // v1.ScheduleAnyway)`); DoNotSchedule ones are filters only.
            for c in explicit.iter().filter(|c| get_str(c, &["whenUnsatisfiable"]) == Some("ScheduleAnyway")) {
                soft.push(Soft {
                    key: get_str(c, &["topologyKey"]).unwrap_or(""),
                    max_skew: get_i64(c, &["maxSkew"]).unwrap_or(1),
                    selector: get(c, &["labelSelector"]),
                    owner: None,
                    owner_uid: None,
                    affinity_honor: get_str(c, &["nodeAffinityPolicy"]) != Some("Ignore"),
                    taints_honor: get_str(c, &["nodeTaintsPolicy"]) == Some("Honor"),
                });
            }
        } else if let Some(o) = owner.as_deref() {
            // The system defaults (`apis/config/v1`): hostname maxSkew 3 and zone maxSkew 5,
            // ScheduleAnyway, over the pods of the same owner.
            static NONE: Vec<u32> = Vec::new();
            let counts = self.owner_nodes.get(o).unwrap_or(&NONE);
            for (key, max_skew) in [(HOSTNAME, 3), ("topology.kubernetes.io/zone", 5)] {
                soft.push(Soft { key, max_skew, selector: None, owner: Some(counts), owner_uid: Some(o), affinity_honor: true, taints_honor: false });
            }
        }
        if soft.is_empty() {
            return None;
        }
        let ns = api::namespace(pod);
        let tolerations = get_array(pod, &["spec", "tolerations"]);
        // Only explicit constraints require every topology key on a node; the system
        // defaults let nodes without a zone still spread by hostname.
        let require_all = !explicit.is_empty();
        let has_keys = |info: &NodeInfo| soft.iter().all(|c| info.label(c.key).is_some());
        let ignored: Vec<bool> = feasible.iter().map(|&ni| require_all && !has_keys(&self.infos[ni])).collect();
        // Most pods say nothing of nodes: their node affinity matches every node.
        let node_constraints = get(pod, &["spec", "nodeSelector"]).is_some() || get(pod, &["spec", "affinity", "nodeAffinity"]).is_some();
        let count_on = |c: &Soft, ni: usize| -> i64 {
            match c.owner {
                Some(per_node) => i64::from(per_node.get(ni).copied().unwrap_or(0)),
                None => self.infos[ni]
                    .pods
                    .iter()
                    .filter_map(|k| self.pods.get(&k.0, &k.1))
                    .filter(|p| api::namespace(p) == ns && !api::is_deleting(p) && selector_matches(c.selector, api::labels(p)))
                    .count() as i64,
            }
        };
        // Per constraint: the weight log(domains + 2), and the matching pods per domain of
        // the scored nodes (a node without the key is in domain "" when keys are optional).
        let scored: Vec<usize> = feasible.iter().zip(&ignored).filter(|(_, ig)| !**ig).map(|(&ni, _)| ni).collect();
        let mut weights = Vec::with_capacity(soft.len());
        let mut domains: Vec<BTreeMap<&str, i64>> = Vec::with_capacity(soft.len());
        for c in &soft {
            if c.key == HOSTNAME {
                // Per-node counts are taken in Score.
                weights.push(((scored.len() + 2) as f64).ln());
                domains.push(BTreeMap::new());
                continue;
            }
            let zeros: BTreeMap<&str, i64> = scored.iter().map(|&ni| (self.infos[ni].label(c.key).unwrap_or(""), 0)).collect_tree();
            weights.push(((zeros.len() + 2) as f64).ln());
            // The matching pods of every existing node, added to its domain.
            let sum_nodes = |counts: &mut BTreeMap<&str, i64>| {
                for &ni in &self.live {
                    // A node with no matching pod adds nothing: skip its checks.
                    let n = count_on(c, ni);
                    if n == 0 {
                        continue;
                    }
                    let info = &self.infos[ni];
                    if require_all && !has_keys(info) {
                        continue;
                    }
                    // matchNodeInclusionPolicies: nodeAffinityPolicy Honor, nodeTaintsPolicy
                    // Ignore unless the constraint says otherwise.
                    if (c.affinity_honor && node_constraints && !node_affinity_matches(pod, &info.obj))
                        || (c.taints_honor && info.hard_taints.iter().any(|t| !tolerates(tolerations, t)))
                    {
                        continue;
                    }
                    if let Some(slot) = counts.get_mut(info.label(c.key).unwrap_or("")) {
                        *slot += n;
                    }
                }
            };
            let counts = match (c.owner_uid, c.key, node_constraints, c.taints_honor, require_all) {
                // The system default's zone constraint, for a pod that says nothing of nodes,
                // counts the owner's pods on every existing node: the kept zone counts are
                // that sum, without a walk over thousands of nodes for each pod.
                (Some(o), "topology.kubernetes.io/zone", false, false, false) => {
                    let zones = self.zone_counts(o);
                    let counts: BTreeMap<&str, i64> = zeros.keys().map(|z| (*z, zones.get(*z).copied().unwrap_or(0))).collect_tree();
                    if cfg!(debug_assertions) {
                        let mut summed = zeros;
                        sum_nodes(&mut summed);
                        assert_eq!(counts, summed, "the kept zone counts of {o}");
                    }
                    counts
                }
                _ => {
                    let mut counts = zeros;
                    sum_nodes(&mut counts);
                    counts
                }
            };
            domains.push(counts);
        }
        // Score: for each constraint whose key the node has, count * weight + (maxSkew - 1).
        let raw: Vec<i64> = feasible
            .iter()
            .zip(&ignored)
            .map(|(&ni, &ig)| {
                if ig {
                    return 0;
                }
                let info = &self.infos[ni];
                let mut score = 0f64;
                for (i, c) in soft.iter().enumerate() {
                    let Some(value) = info.label(c.key) else { continue };
                    let cnt = if c.key == HOSTNAME { count_on(c, ni) } else { domains[i].get(value).copied().unwrap_or(0) };
                    score += cnt as f64 * weights[i] + (c.max_skew - 1) as f64;
                }
                score.round() as i64
            })
            .collect();
        // NormalizeScore: fewer matching pods is better; ignored nodes score 0.
        let (mut min, mut max) = (i64::MAX, 0i64);
        for (r, ig) in raw.iter().zip(&ignored) {
            if !ig {
                min = min.min(*r);
                max = max.max(*r);
            }
        }
        Some(
            raw.iter()
                .zip(&ignored)
                .map(|(r, ig)| {
                    if *ig {
                        0
                    } else if max == 0 {
                        100
                    } else {
                        100 * (max + min - r) / max
                    }
                })
                .collect(),
        )
    }

    /// Weighted scores per feasible node.
    fn score(&self, pod: &Value, req: &Requests, feasible: &[usize]) -> Vec<i64> {
        let n = feasible.len();
        let mut total = vec![0i64; n];
        // NodeResourcesFit (LeastAllocated) and BalancedAllocation, weight 1 each.
        for (i, &ni) in feasible.iter().enumerate() {
            let info = &self.infos[ni];
            let cpu = info.req.nonzero_cpu + req.nonzero_cpu;
            let mem = info.req.nonzero_memory + req.nonzero_memory;
            let least = |used: i128, cap: i128| if cap == 0 || used > cap { 0 } else { ((cap - used) * 100 / cap) as i64 };
            total[i] += (least(cpu, info.alloc_cpu) + least(mem, info.alloc_mem)) / 2;
            let fc = if info.alloc_cpu > 0 { (cpu as f64 / info.alloc_cpu as f64).min(1.0) } else { 1.0 };
            let fm = if info.alloc_mem > 0 { (mem as f64 / info.alloc_mem as f64).min(1.0) } else { 1.0 };
            total[i] += ((1.0 - (fc - fm).abs() / 2.0) * 100.0) as i64;
        }
        // TaintToleration: fewer intolerable PreferNoSchedule taints is better (weight 3).
        let tol = get_array(pod, &["spec", "tolerations"]);
        let raw: Vec<i64> = feasible.iter().map(|&ni| self.infos[ni].prefer_taints.iter().filter(|t| !tolerates(tol, t)).count() as i64).collect();
        let max = raw.iter().copied().max().unwrap_or(0);
        for i in 0..n {
            total[i] += 3 * if max == 0 { 100 } else { 100 - raw[i] * 100 / max };
        }
        // NodeAffinity preferred terms (weight 2).
        let prefs = get_array(pod, &["spec", "affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution"]);
        if !prefs.is_empty() {
            let raw: Vec<i64> = feasible
                .iter()
                .map(|&ni| {
                    let node = &self.infos[ni].obj;
                    prefs
                        .iter()
                        .filter(|p| get(p, &["preference"]).is_some_and(|t| node_selector_term_matches(t, api::labels(node), api::name(node))))
                        .map(|p| get_i64(p, &["weight"]).unwrap_or(0))
                        .sum()
                })
                .collect();
            let max = raw.iter().copied().max().unwrap_or(0);
            for i in 0..n {
                total[i] += 2 * if max == 0 { 0 } else { raw[i] * 100 / max };
            }
        }
        // PodTopologySpread (weight 2).
        if let Some(spread) = self.spread_scores(pod, feasible) {
            for (t, s) in total.iter_mut().zip(spread) {
                *t += 2 * s;
            }
        }
        total
    }

    /// One scheduling cycle for one pod.
    fn schedule_one(&mut self, cx: &mut Cx, key: Key) {
        let Some(pod) = self.pods.get(&key.0, &key.1).cloned() else { return };
        if get_str(&pod, &["spec", "nodeName"]).is_some() || api::is_deleting(&pod) {
            return;
        }
        let obj = format!("Pod/{}/{}", key.0, key.1);
        // The nodes that exist; a deleted one is neither tried nor counted.
        let total = self.live.len();
        if total == 0 {
            self.fail(cx, &pod, &key, "no nodes available to schedule pods".into());
            return;
        }
        let claims = match self.volumes.pre_filter(&pod) {
            Ok(c) => c,
            Err(reason) => {
                // A PreFilter rejection holds for every node, and preemption cannot help.
                let msg = format!(
                    "0/{total} nodes are available: {reason}. preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling."
                );
                self.fail(cx, &pod, &key, msg);
                return;
            }
        };
        let cy = Cycle {
            req: pod_requests(&pod),
            ports: host_ports(&pod),
            affinity: pod_has_node_affinity(&pod),
            pod_affinity: get(&pod, &["spec", "affinity"]).is_some(),
            spread: self.spread_constraints(&pod),
            existing_anti: self.existing_anti_affinity(&pod),
            claims,
        };
        // Adaptive percentageOfNodesToScore.
        let to_find = if total < 100 {
            total
        } else {
            let pct = (50 - total as i64 / 125).max(5) as usize;
            (total * pct / 100).max(100)
        };
        let mut feasible = Vec::new();
        let mut statuses: Vec<(usize, NodeStatus)> = Vec::new();
        let start = self.next_start % total;
        let mut processed = 0;
        for off in 0..total {
            let ni = self.live[(start + off) % total];
            processed += 1;
            match self.filter(&pod, &cy, ni) {
                Ok(()) => {
                    feasible.push(ni);
                    if feasible.len() >= to_find {
                        break;
                    }
                }
                Err(s) => statuses.push((ni, s)),
            }
        }
        self.next_start = (start + processed) % total;
        if feasible.is_empty() {
            self.unschedulable(cx, &pod, &key, &cy.req, &statuses, &obj);
            return;
        }
        let chosen = if feasible.len() == 1 {
            feasible[0]
        } else {
            let scores = self.score(&pod, &cy.req, &feasible);
            let best = scores.iter().copied().max().unwrap_or(0);
            // Reservoir sampling among the best, as selectHost does.
            let mut pick = feasible[0];
            let mut seen = 0u64;
            for (i, &ni) in feasible.iter().enumerate() {
                if scores[i] == best {
                    seen += 1;
                    if self.rng.below(seen) == 0 {
                        pick = ni;
                    }
                }
            }
            if cx.tracing() {
                let mut shown: Vec<String> = feasible.iter().zip(&scores).take(8).map(|(ni, s)| format!("{}={s}", self.infos[*ni].name)).collect();
                if feasible.len() > 8 {
                    shown.push(format!("... {} more", feasible.len() - 8));
                }
                cx.trace(Flow::Scheduler, "score", obj.clone(), "ok", "", format!("{} of {total} nodes feasible; scores {}", feasible.len(), shown.join(", ")));
            }
            pick
        };
        let node = self.infos[chosen].name.clone();
        if !cy.claims.to_bind.is_empty() {
            self.pre_bind_volumes(cx, &key, &pod, &cy.claims, chosen);
            return;
        }
        self.bind(cx, &key, &node);
    }

    /// No node fits the pod: try preemption, then fail the cycle (out of line, as a first
    /// visit never runs it: crates/split).
    #[inline(never)]
    fn unschedulable(&mut self, cx: &mut Cx, pod: &Object, key: &Key, req: &Requests, statuses: &[(usize, NodeStatus)], obj: &str) {
        let total = self.live.len();
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for (_, s) in statuses {
            for r in &s.reasons {
                *counts.entry(r.clone()).or_default() += 1;
            }
        }
        let mut parts: Vec<String> = counts.iter().map(|(r, c)| format!("{c} {r}")).collect();
        parts.sort_stable();
        let mut msg = format!("0/{total} nodes are available: {}.", parts.join(", "));
        match self.preempt(cx, pod, req, statuses) {
            Ok(Some(node)) => {
                cx.trace(
                    Flow::Pending,
                    "preemption",
                    obj.to_string(),
                    "pending",
                    "",
                    format!("preempting lower-priority pods on {node}; nominated node {node}"),
                );
            }
            Ok(None) => {}
            Err(m) => msg = format!("{msg} {m}"),
        }
        self.fail(cx, pod, key, msg);
    }

    /// Bind the pod to its node (DefaultBinder).
    fn bind(&mut self, cx: &mut Cx, key: &Key, node: &str) {
        let obj = format!("Pod/{}/{}", key.0, key.1);
        let body = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": key.1, "namespace": key.0}, "target": {"apiVersion": "v1", "kind": "Node", "name": node}});
        let mut r = Request::create(rid::POD, &key.0, body, self.creds());
        r.name = key.1.clone();
        r.subresource = "binding".into();
        match cx.api.handle(req_as(r, "default-scheduler", &self.user)) {
            Ok(bound) => {
                self.unschedulable.remove(key);
                self.account(key, &bound);
                cx.trace(Flow::Scheduler, "bind", obj, "ok", api::resource_version(&bound), format!("bound to {node}"));
                let msg = format!("Successfully assigned {}/{} to {node}", key.0, key.1);
                cx.event(&self.source, &bound, None, "Normal", "Scheduled", &msg, Some("Binding"));
            }
            Err(s) => {
                cx.trace(Flow::Pending, "bind", obj, "error", "", s.message.clone());
            }
        }
    }

    /// VolumeBinding's Reserve and PreBind: assume the pod on the node, pre-bind the chosen
    /// volumes and mark the claims to provision, then wait for the claims to be bound.
    #[inline(never)]
    fn pre_bind_volumes(&mut self, cx: &mut Cx, key: &Key, pod: &Object, claims: &PodClaims, ni: usize) {
        let node = self.infos[ni].name.clone();
        let obj = format!("Pod/{}/{}", key.0, key.1);
        let Ok(plan) = self.volumes.filter(claims, &self.infos[ni].obj) else { return };
        let (reqs, waiting) = self.volumes.bind_requests(&plan, &node, cx.now, &self.creds());
        for r in reqs {
            let what = format!("{}/{}", api::RESOURCES[r.resource].kind, r.name);
            if let Err(s) = cx.api.handle(req_as(r, "default-scheduler", &self.user)) {
                let msg = format!("running PreBind plugin \"VolumeBinding\": {}", s.message);
                cx.trace(Flow::Pending, "prebind", obj, "error", "", format!("{what}: {}", s.message));
                self.fail_as(cx, pod, key, msg, "SchedulerError");
                return;
            }
        }
        let mut assumed = (**pod).clone();
        api::set(&mut assumed, &["spec", "nodeName"], json!(node));
        self.account(key, &assumed);
        let mut what: Vec<String> = waiting.provisions.iter().map(|c| format!("claim {c} to be provisioned")).collect();
        what.extend(waiting.bindings.iter().map(|(v, c)| format!("claim {c} to bind volume {v}")));
        cx.trace(Flow::Scheduler, "prebind", obj, "pending", "", format!("chose {node}; waiting for {} before binding the pod", what.join(", ")));
        cx.every(volumebinding::BIND_TIMEOUT, format!("volumes/{}/{}", key.0, key.1));
        self.waiting.insert(key.clone(), waiting);
    }

    /// PreBind's wait, checked whenever claims or volumes change and at its deadline.
    fn check_waiting(&mut self, cx: &mut Cx) {
        let keys: Vec<Key> = self.waiting.keys().cloned().collect();
        for key in keys {
            let w = self.waiting[&key].clone();
            let Some(pod) = self.pods.get(&key.0, &key.1).cloned() else {
                self.waiting.remove(&key);
                self.unaccount(&key);
                continue;
            };
            let Some(&ni) = self.index.get(&w.node) else { continue };
            let verdict = match self.volumes.check(&key.0, &w, &self.infos[ni].obj) {
                Ok(false) if cx.now >= w.deadline => Err("timed out waiting for the condition".to_string()),
                v => v,
            };
            match verdict {
                Ok(false) => {}
                Ok(true) => {
                    self.waiting.remove(&key);
                    self.unaccount(&key);
                    self.bind(cx, &key, &w.node);
                }
                Err(e) => {
                    self.waiting.remove(&key);
                    self.unaccount(&key);
                    let msg = format!("running PreBind plugin \"VolumeBinding\": binding volumes: {e}");
                    cx.trace(Flow::Pending, "prebind", format!("Pod/{}/{}", key.0, key.1), "error", "", msg.clone());
                    self.fail_as(cx, &pod, &key, msg, "SchedulerError");
                }
            }
        }
    }

    fn fail(&mut self, cx: &mut Cx, pod: &Object, key: &Key, msg: String) {
        self.fail_as(cx, pod, key, msg, "Unschedulable");
    }

    /// A failed cycle: the PodScheduled condition (`Unschedulable` when no node fits,
    /// `SchedulerError` when a later stage failed), a FailedScheduling event, a retry.
    fn fail_as(&mut self, cx: &mut Cx, pod: &Object, key: &Key, msg: String, reason: &str) {
        let attempts = self.unschedulable.entry(key.clone()).or_insert(0);
        *attempts += 1;
        let obj = format!("Pod/{}/{}", key.0, key.1);
        cx.trace(Flow::Pending, "filter", obj, "pending", api::resource_version(pod), msg.clone());
        let already = crate::foundation::pod::condition(pod, "PodScheduled").is_some_and(|c| get_str(c, &["message"]) == Some(msg.as_str()));
        if !already {
            let mut body = (**pod).clone();
            crate::apiserver::set_condition(&mut body, "PodScheduled", "False", Some(reason), Some(&msg), cx.now);
            if let Some(m) = body.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("resourceVersion");
            }
            let _ = cx.api.handle(req_as(Request::update(rid::POD, &key.0, &key.1, body, self.creds()).with_sub("status"), "default-scheduler", &self.user));
        }
        let event_msg = if msg.len() > 1024 { format!("{} ...", &msg[..1020]) } else { msg };
        cx.event(&self.source, pod, None, "Warning", "FailedScheduling", &event_msg, Some("Scheduling"));
        // Unschedulable pods are flushed back at least every 5 minutes.
        cx.every(300_000, format!("flush/{}/{}", key.0, key.1));
    }

    /// DefaultPreemption: find a node where evicting lower-priority pods makes room.
    ///
    /// As upstream's `Evaluator.DryRunPreemption`: the nodes that failed for a reason
    /// preemption can resolve are tried from a random offset, and the dry run stops once it
    /// has `calculate_num_candidates` candidates (at least 100, or 10% of them). On each, every
    /// lower-priority pod is removed, then the victims are reprieved from the most important
    /// down while the pod still fits (`SelectVictimsOnNode`); the candidate kept is the one
    /// whose most important victim is least important, then the lowest sum of victims'
    /// priorities, then the fewest victims (`pickOneNodeForPreemption`).
    fn preempt(&mut self, cx: &mut Cx, pod: &Value, req: &Requests, statuses: &[(usize, NodeStatus)]) -> Result<Option<String>, String> {
        let total = self.live.len();
        if get_str(pod, &["spec", "preemptionPolicy"]) == Some("Never") {
            return Err("preemption: not eligible due to preemptionPolicy=Never.".into());
        }
        let prio = get_i64(pod, &["spec", "priority"]).unwrap_or(0);
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        let potential: Vec<usize> = statuses.iter().filter(|(_, s)| s.resolvable).map(|(ni, _)| *ni).collect();
        let unresolvable = statuses.len() - potential.len();
        if unresolvable > 0 {
            counts.insert("Preemption is not helpful for scheduling", unresolvable);
        }
        let mut best: Option<(usize, Vec<Key>, Rank)> = None;
        let mut found = 0;
        let offset = if potential.is_empty() { 0 } else { self.rng.below(potential.len() as u64) as usize };
        let wanted = calculate_num_candidates(potential.len());
        for i in 0..potential.len() {
            if found >= wanted {
                break;
            }
            let info = &self.infos[potential[(offset + i) % potential.len()]];
            match self.select_victims(info, prio, req) {
                Some((needed, rank)) => {
                    found += 1;
                    if best.as_ref().is_none_or(|(_, _, r)| rank < *r) {
                        best = Some((potential[(offset + i) % potential.len()], needed, rank));
                    }
                }
                None => *counts.entry("No preemption victims found for incoming pod").or_default() += 1,
            }
        }
        let Some((ni, victims, _)) = best else {
            let mut parts: Vec<String> = counts.iter().map(|(r, c)| format!("{c} {r}")).collect();
            parts.sort_stable();
            return Err(format!("preemption: 0/{total} nodes are available: {}.", parts.join(", ")));
        };
        let node = self.infos[ni].name.clone();
        let ns = api::namespace(pod).to_string();
        let name = api::name(pod).to_string();
        let mut body = pod.clone();
        api::set(&mut body, &["status", "nominatedNodeName"], json!(node));
        if let Some(m) = body.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        let _ = cx.api.handle(req_as(Request::update(rid::POD, &ns, &name, body, self.creds()).with_sub("status"), "default-scheduler", &self.user));
        for (vns, vname) in victims {
            if let Some(v) = self.pods.get(&vns, &vname).cloned() {
                let msg = format!("Preempted by pod {} on node {node}", api::uid(pod));
                cx.event(&self.source, &v, None, "Normal", "Preempted", &msg, Some("Preempting"));
                let _ = cx.api.handle(req_as(Request::delete(rid::POD, &vns, &vname, self.creds()), "default-scheduler", &self.user));
                cx.trace(Flow::Pending, "preemption", format!("Pod/{vns}/{vname}"), "ok", "", msg);
            }
        }
        Ok(Some(node))
    }

    /// `SelectVictimsOnNode` on the scheduler's cache: the pods to evict from the node so
    /// that `req` fits, with the rank `pickOneNodeForPreemption` compares (the most
    /// important victim's priority, the victims' priority sum, their number); None when
    /// evicting every lower-priority pod is not enough, or there is none.
    fn select_victims(&self, info: &NodeInfo, prio: i64, req: &Requests) -> Option<(Vec<Key>, Rank)> {
        if info.priorities.first_key_value().is_none_or(|(lowest, _)| *lowest >= prio) {
            return None;
        }
        let mut victims: Vec<(i64, &Key, &Placed)> =
            info.pods.iter().filter_map(|k| self.placed.get(k).map(|p| (p.priority, k, p))).filter(|(p, _, _)| *p < prio).collect();
        // The most important first, as util.MoreImportantPod orders them.
        victims.sort_stable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        let mut free_cpu = info.alloc_cpu - info.req.cpu;
        let mut free_mem = info.alloc_mem - info.req.memory;
        let mut free_eph = info.alloc_ephemeral - info.req.ephemeral;
        let mut free_pods = info.alloc_pods - info.pods.len() as i128;
        for (_, _, p) in &victims {
            free_cpu += p.req.cpu;
            free_mem += p.req.memory;
            free_eph += p.req.ephemeral;
            free_pods += 1;
        }
        let fits = |cpu: i128, mem: i128, eph: i128, pods: i128| req.cpu <= cpu && req.memory <= mem && req.ephemeral <= eph && pods >= 1;
        if !fits(free_cpu, free_mem, free_eph, free_pods) {
            return None;
        }
        let mut needed = Vec::new();
        let mut top = i64::MIN;
        let mut sum = 0i128;
        for (priority, key, p) in victims {
            // Reprieve the pod when the incoming one still fits with it back.
            if fits(free_cpu - p.req.cpu, free_mem - p.req.memory, free_eph - p.req.ephemeral, free_pods - 1) {
                free_cpu -= p.req.cpu;
                free_mem -= p.req.memory;
                free_eph -= p.req.ephemeral;
                free_pods -= 1;
                continue;
            }
            top = top.max(priority);
            // Upstream sums priority + MaxInt32 + 1 so that negative priorities count.
            sum += i128::from(priority) + i128::from(i32::MAX) + 1;
            needed.push(key.clone());
        }
        if needed.is_empty() {
            return None;
        }
        let n = needed.len();
        Some((needed, (top, sum, n)))
    }

    fn drain_queue(&mut self, cx: &mut Cx) {
        for _ in 0..SCHEDULE_PER_TASK {
            let Some((_, _, key)) = self.active.pop_first() else { return };
            self.queued.remove(&key);
            self.schedule_one(cx, key);
        }
        if !self.active.is_empty() && !self.drain_due {
            self.drain_due = true;
            cx.after(0, "drain");
        }
    }

    /// Move unschedulable pods back to the active queue after their back-off.
    fn flush(&mut self, cx: &mut Cx) {
        for (k, attempts) in &self.unschedulable {
            let backoff = (1000u64 << (attempts.saturating_sub(1)).min(4)).min(10_000);
            cx.after(backoff, format!("retry/{}/{}", k.0, k.1));
        }
    }
}

/// How `pickOneNodeForPreemption` compares candidates, the least first: the most important
/// victim's priority, the sum of the victims' priorities, their number.
type Rank = (i64, i128, usize);

/// DefaultPreemption's `calculateNumCandidates` with its default arguments
/// (minCandidateNodesPercentage 10, minCandidateNodesAbsolute 100).
fn calculate_num_candidates(nodes: usize) -> usize {
    (nodes * 10 / 100).max(100).min(nodes)
}

/// A DoNotSchedule topology spread constraint with the counts it needs.
struct Spread {
    key: String,
    max_skew: i64,
    self_match: bool,
    counts: BTreeMap<String, u32>,
}

impl Spread {
    fn min_count(&self) -> u32 {
        self.counts.values().copied().min().unwrap_or(0)
    }
}

/// Whether a pod constrains nodes by selector or required node affinity at all.
pub fn pod_has_node_affinity(pod: &Value) -> bool {
    get(pod, &["spec", "nodeSelector"]).is_some() || get(pod, &["spec", "affinity", "nodeAffinity"]).is_some()
}

/// nodeSelector and required node affinity (`nodeaffinity.GetRequiredNodeAffinity`).
pub fn node_affinity_matches(pod: &Value, node: &Value) -> bool {
    if let Some(sel) = get(pod, &["spec", "nodeSelector"]).and_then(Value::as_object) {
        if !crate::foundation::labels::map_matches(sel, api::labels(node)) {
            return false;
        }
    }
    let terms = get_array(pod, &["spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"]);
    if get(pod, &["spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"]).is_some() {
        return terms.iter().any(|t| node_selector_term_matches(t, api::labels(node), api::name(node)));
    }
    true
}

impl Controller for Scheduler {
    fn name(&self) -> &'static str {
        "default-scheduler"
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::POD, rid::NODE, rid::PVC, rid::PV, rid::STORAGECLASS]
    }
    fn run(&mut self, cx: &mut Cx) {
        if self.sync_informers(cx) {
            self.flush(cx);
        }
        if !self.waiting.is_empty() {
            self.check_waiting(cx);
        }
        self.drain_queue(cx);
    }
    fn timer(&mut self, cx: &mut Cx, key: &str) {
        if key == "drain" {
            self.drain_due = false;
        }
        if key.starts_with("volumes/") {
            self.sync_informers(cx);
            self.check_waiting(cx);
            return;
        }
        let rest = key.split_once('/').map(|(_, r)| r).unwrap_or("");
        if let Some((ns, name)) = rest.split_once('/') {
            let k = (ns.to_string(), name.to_string());
            if self.unschedulable.contains_key(&k) {
                let prio = self.pods.get(ns, name).and_then(|p| get_i64(p, &["spec", "priority"])).unwrap_or(0);
                self.queued.remove(&k);
                self.enqueue(k, prio);
            }
        }
        self.sync_informers(cx);
        self.drain_queue(cx);
    }
    fn busy(&self, _now: Millis) -> bool {
        !self.active.is_empty()
    }
    fn restart(&mut self) {
        let seed_rng = self.rng.clone();
        *self = Scheduler::new(0);
        self.rng = seed_rng;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preemption_dry_runs_until_a_tenth_of_the_nodes_or_a_hundred_are_candidates() {
        assert_eq!(calculate_num_candidates(0), 0);
        assert_eq!(calculate_num_candidates(7), 7);
        assert_eq!(calculate_num_candidates(100), 100);
        assert_eq!(calculate_num_candidates(999), 100);
        assert_eq!(calculate_num_candidates(5000), 500);
    }

    #[test]
    fn a_long_queue_is_scheduled_a_part_per_task_at_the_same_moment() {
        let mut api = crate::apiserver::ApiServer::new(1, true);
        for o in crate::apiserver::rbac::bootstrap_policy() {
            api.bootstrap_object(o);
        }
        api.bootstrap_object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}));
        api.bootstrap_object(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": "default"}}));
        let node = crate::loops::kubelet::node::NodeSpec::worker("n1", "zone-a", "64", "256Gi");
        api.bootstrap_object(crate::loops::kubelet::node::node_object(&node, 0, 1, 0));
        for i in 0..80 {
            let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("p{i:02}"), "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}});
            api.handle(crate::apiserver::Request::create(rid::POD, "default", pod, Credentials::User(UserInfo::admin()))).unwrap();
        }
        let bound = |api: &crate::apiserver::ApiServer| api.store.list(rid::POD, None).filter(|p| get_str(p, &["spec", "nodeName"]).is_some()).count();
        let mut s = Scheduler::new(1);
        let mut timers = crate::loops::run_once(&mut s, &mut api, 0);
        let mut counts = vec![bound(&api)];
        while let Some(i) = timers.iter().position(|(_, k, _)| k == "drain") {
            assert_eq!(timers.remove(i).0, 0, "the rest at the same moment");
            assert!(s.busy(0));
            timers = crate::loops::timer_once(&mut s, &mut api, 0, "drain");
            counts.push(bound(&api));
        }
        assert_eq!(counts, [32, 64, 80]);
        assert!(!s.busy(0));
    }

    /// The hostname and zone that topology spreading reads for every node are read again
    /// when the node's labels change (they were kept from the node's first sight).
    #[test]
    fn a_relabelled_nodes_zone_and_hostname_are_read_again() {
        let mut api = crate::apiserver::ApiServer::new(1, true);
        for o in crate::apiserver::rbac::bootstrap_policy() {
            api.bootstrap_object(o);
        }
        let node = crate::loops::kubelet::node::NodeSpec::worker("n1", "zone-a", "64", "256Gi");
        api.bootstrap_object(crate::loops::kubelet::node::node_object(&node, 0, 1, 0));
        let mut s = Scheduler::new(1);
        crate::loops::run_once(&mut s, &mut api, 0);
        let labels = |s: &Scheduler| {
            (s.infos[0].label("topology.kubernetes.io/zone").map(str::to_string), s.infos[0].label("kubernetes.io/hostname").map(str::to_string))
        };
        assert_eq!(labels(&s), (Some("zone-a".into()), Some("n1".into())));
        let patch = json!({"metadata": {"labels": {"topology.kubernetes.io/zone": "zone-b", "kubernetes.io/hostname": "n1-renamed"}}});
        let req = crate::apiserver::Request::patch(rid::NODE, "", "n1", crate::apiserver::PatchType::Merge, patch, Credentials::User(UserInfo::admin()));
        api.handle(req).unwrap();
        crate::loops::run_once(&mut s, &mut api, 1);
        assert_eq!(labels(&s), (Some("zone-b".into()), Some("n1-renamed".into())));
    }

    #[test]
    fn requests_sum_containers_and_default_for_scoring() {
        let p = json!({"spec": {"containers": [{"resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}}, {"name": "b"}],
            "initContainers": [{"resources": {"requests": {"cpu": "1"}}}]}});
        let r = pod_requests(&p);
        assert_eq!(r.cpu, 1000);
        assert_eq!(r.memory, 64 * 1024 * 1024 * 1000);
        assert_eq!(r.nonzero_cpu, 350);
    }

    #[test]
    fn ephemeral_storage_requests_sum_containers_and_max_with_init_containers() {
        let p = json!({"spec": {"containers": [{"resources": {"requests": {"ephemeral-storage": "1Gi"}}}, {"resources": {"requests": {"ephemeral-storage": "2Gi"}}}],
            "initContainers": [{"resources": {"requests": {"ephemeral-storage": "5Gi"}}}]}});
        let r = pod_requests(&p);
        assert_eq!(r.ephemeral, 5 * 1024 * 1024 * 1024 * 1000);
        assert!(r.other.is_empty(), "ephemeral-storage is not an extended resource: {:?}", r.other);
    }

    #[test]
    fn tolerations_match_taints() {
        let taint = json!({"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"});
        assert!(!tolerates(&[], &taint));
        assert!(tolerates(&[json!({"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"})], &taint));
        assert!(tolerates(&[json!({"operator": "Exists"})], &taint));
        assert!(!tolerates(&[json!({"key": "x", "operator": "Exists"})], &taint));
    }

    #[test]
    fn node_selectors_and_required_affinity() {
        let node = json!({"metadata": {"name": "n", "labels": {"disktype": "ssd", "topology.kubernetes.io/zone": "zone-a"}}});
        assert!(node_affinity_matches(&json!({"spec": {"nodeSelector": {"disktype": "ssd"}}}), &node));
        assert!(!node_affinity_matches(&json!({"spec": {"nodeSelector": {"disktype": "hdd"}}}), &node));
        let aff = json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-b"]}]}]}}}}});
        assert!(!node_affinity_matches(&aff, &node));
    }
}
