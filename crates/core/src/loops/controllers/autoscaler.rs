//! The cluster autoscaler (`kubernetes/autoscaler`, `cluster-autoscaler/`: `core/static_autoscaler.go`,
//! `core/scaleup/orchestrator/orchestrator.go`, `core/scaledown/`, `simulator/drainability/rules/`,
//! `processors/status/eventing_scale_up_processor.go`), over node groups the scenario declares
//! and the simulated machines under the cluster.
//!
//! Node autoscaling reacts to Pending pods, not to CPU graphs: every 10s (`--scan-interval`)
//! it lists the pods the scheduler marked `PodScheduled=False, reason Unschedulable`, leaves
//! out those that fit on a node that exists or is still booting, and asks of each node group
//! whether a new node from its template would take the rest. It simulates the scheduler's
//! node filters ([`SimNode`]: resources, node selector and affinity, taints and tolerations,
//! host ports) against the template, packs the pods onto as few new nodes as fit (first fit,
//! as `BinpackingNodeEstimator`), caps that at the group's `max`, and picks the option that
//! helps the most pods (then the fewest nodes, then the group's name: upstream's default
//! expander picks at random). The pods get `TriggeredScaleUp`; the group's new machines
//! boot for `bootTime` before their kubelets register Nodes: the capacity a spike waits
//! for is the boot time. When no group helps, the pods get `NotTriggerScaleUp` with the
//! reasons counted per group (at most every 5 minutes per pod while unchanged, as
//! client-go's spam filter refills).
//!
//! Scale-down: a node of a group whose pods request less than half of its allocatable cpu
//! and memory (`--scale-down-utilization-threshold` 0.5), whose pods may all be moved
//! (the drainability rules: a pod without a controller, a kube-system pod without a
//! PodDisruptionBudget, a pod with local storage, one annotated not safe to evict, or one
//! whose budget allows no disruption blocks the node) and fit on the other nodes, is
//! unneeded; after 10 minutes unneeded (`--scale-down-unneeded-time`), and not within 10
//! minutes of a scale-up (`--scale-down-delay-after-add`) or 3 of a failed scale-down, and
//! never below the group's `min`, it is tainted `ToBeDeletedByClusterAutoscaler:NoSchedule`,
//! its pods are evicted through the eviction subresource (refusals retried every 10s for
//! 2 minutes), and once they are gone the Node is deleted and its machine terminated.
//! One node drains at a time (`--max-drain-parallelism` 1); empty ones go together.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, Request};
use crate::foundation::api::{self, get, get_array, get_i64, get_str, rid, Object, ResourceId};
use crate::foundation::pod::condition;
use crate::foundation::sim::Millis;
use crate::foundation::sort::CollectTree;
use crate::foundation::value::{json, Value};
use crate::loops::events::Source;
use crate::loops::informer::Informer;
use crate::loops::kubelet::node::{node_object, NodeSpec};
use crate::loops::scheduler::SimNode;
use crate::loops::{req_as, Controller, Cx};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// `--scan-interval`.
pub const SCAN_INTERVAL: Millis = 10_000;
/// `--scale-down-unneeded-time`.
pub const SCALE_DOWN_UNNEEDED_TIME: Millis = 600_000;
/// `--scale-down-delay-after-add`.
pub const SCALE_DOWN_DELAY_AFTER_ADD: Millis = 600_000;
/// `--scale-down-delay-after-failure`.
pub const SCALE_DOWN_DELAY_AFTER_FAILURE: Millis = 180_000;
/// `--scale-down-utilization-threshold`.
pub const UTILIZATION_THRESHOLD: f64 = 0.5;
/// `DefaultEvictionRetryTime`.
pub const EVICTION_RETRY: Millis = 10_000;
/// `--max-pod-eviction-time`.
pub const MAX_POD_EVICTION_TIME: Millis = 120_000;
/// `DefaultPodEvictionHeadroom`: the wait for evicted pods past their grace period.
pub const POD_EVICTION_HEADROOM: Millis = 30_000;
/// `--max-graceful-termination-sec`.
pub const MAX_GRACEFUL_TERMINATION: i64 = 600;
/// How often a drain looks whether its pods are gone (`waitPodsToDisappear`).
const DRAIN_POLL: Millis = 5_000;
/// client-go's event spam filter refills one event per 5 minutes per object.
const EVENT_REFILL: Millis = 300_000;
pub const TO_BE_DELETED_TAINT: &str = "ToBeDeletedByClusterAutoscaler";
/// Taints that stand for a node condition (`taints.NodeConditionTaints`).
const NODE_CONDITION_TAINTS: &[&str] = &[
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/network-unavailable",
    "node.kubernetes.io/pid-pressure",
    "node.cloudprovider.kubernetes.io/uninitialized",
    "node.cloudprovider.kubernetes.io/shutdown",
];
const SAFE_TO_EVICT: &str = "cluster-autoscaler.kubernetes.io/safe-to-evict";
const SAFE_TO_EVICT_LOCAL_VOLUMES: &str = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes";

/// A node group as the scenario declares it (a cloud provider's instance group).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeGroup {
    pub name: String,
    pub min: usize,
    pub max: usize,
    /// What each of its nodes has: capacity, labels, taints (`name` is unused).
    pub template: NodeSpec,
    /// From the cloud's create call to the kubelet registering the Node.
    pub boot: Millis,
}

impl NodeGroup {
    /// The group's `n`th machine (1-based: `workers-1`, `workers-2`, ...).
    pub fn node_spec(&self, n: usize) -> NodeSpec {
        let mut s = self.template.clone();
        s.name = format!("{}-{n}", self.name);
        s
    }
    /// The Node a new machine of the group would register, for the simulation.
    pub fn template_node(&self) -> Object {
        let mut spec = self.template.clone();
        spec.name = format!("template-node-for-{}", self.name);
        Arc::new(node_object(&spec, 0, 1, 0))
    }
}

/// `ScaleUpInfo.String()`: `{workers 1->2 (max: 5)}`.
pub fn scale_up_info(group: &str, current: usize, new: usize, max: usize) -> String {
    format!("{{{group} {current}->{new} (max: {max})}}")
}

/// `ReasonsMessage`: each reason with the number of groups that gave it (sorted here,
/// where Go's map order is random).
pub fn reasons_message(per_group: &[Vec<String>]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for reasons in per_group {
        for r in reasons {
            *counts.entry(r.as_str()).or_default() += 1;
        }
    }
    counts.iter().map(|(r, n)| format!("{n} {r}")).collect::<Vec<_>>().join(", ")
}

/// A group as the scale-up sees it: its template, size and limit.
#[derive(Debug, Clone)]
pub struct GroupState<'a> {
    pub group: &'a NodeGroup,
    pub target: usize,
}

/// What one scan decides for the unschedulable pods.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScaleUpPlan {
    /// Pods that fit on a node that exists or is booting: the scheduler will place them.
    pub fit_upcoming: Vec<usize>,
    /// The chosen group, its new node count, and the pods those nodes take.
    pub scale_up: Option<(usize, usize, Vec<usize>)>,
    /// With no scale-up: each remaining pod with the reasons of each group.
    pub no_scale_up: Vec<(usize, Vec<Vec<String>>)>,
}

/// The scale-up decision (`ScaleUpOrchestrator.ScaleUp` after `FilterOutSchedulable`):
/// `snapshot` holds the nodes that exist and those still booting, with their pods.
pub fn plan_scale_up(pods: &[Object], snapshot: &mut [SimNode], groups: &[GroupState]) -> ScaleUpPlan {
    let mut plan = ScaleUpPlan::default();
    let mut rest = Vec::new();
    for (i, p) in pods.iter().enumerate() {
        match snapshot.iter_mut().find(|n| n.fits(p).is_ok()) {
            Some(n) => {
                n.add(p);
                plan.fit_upcoming.push(i);
            }
            None => rest.push(i),
        }
    }
    if rest.is_empty() {
        return plan;
    }
    let mut best: Option<(usize, usize, Vec<usize>)> = None;
    let mut reasons: BTreeMap<usize, Vec<Vec<String>>> = BTreeMap::new();
    for (gi, g) in groups.iter().enumerate() {
        if g.target >= g.group.max {
            for &i in &rest {
                reasons.entry(i).or_default().push(vec!["max node group size reached".into()]);
            }
            continue;
        }
        let template = SimNode::new(g.group.template_node());
        let mut fitting = Vec::new();
        for &i in &rest {
            match template.fits(&pods[i]) {
                Ok(()) => fitting.push(i),
                Err(r) => reasons.entry(i).or_default().push(r),
            }
        }
        // BinpackingNodeEstimator: first fit on the new nodes, a fresh one when none takes it.
        let mut nodes: Vec<(SimNode, Vec<usize>)> = Vec::new();
        for i in fitting {
            match nodes.iter_mut().find(|(n, _)| n.fits(&pods[i]).is_ok()) {
                Some((n, placed)) => {
                    n.add(&pods[i]);
                    placed.push(i);
                }
                None => {
                    let mut n = template.clone();
                    n.add(&pods[i]);
                    nodes.push((n, vec![i]));
                }
            }
        }
        let room = g.group.max - g.target;
        nodes.truncate(room);
        let helped: Vec<usize> = nodes.iter().flat_map(|(_, p)| p.iter().copied()).collect();
        if helped.is_empty() {
            continue;
        }
        let better = match &best {
            None => true,
            Some((_, count, pods)) => helped.len() > pods.len() || helped.len() == pods.len() && nodes.len() < *count,
        };
        if better {
            best = Some((gi, nodes.len(), helped));
        }
    }
    match best {
        Some(b) => plan.scale_up = Some(b),
        None => plan.no_scale_up = rest.iter().map(|i| (*i, reasons.remove(i).unwrap_or_default())).collect(),
    }
    plan
}

/// Whether a pod's volumes hold data on the node (`drain.HasBlockingLocalStorage`): an
/// emptyDir not in memory, or a hostPath, unless named in the safe-to-evict-local-volumes
/// annotation.
pub fn has_blocking_local_storage(pod: &Value) -> bool {
    let allowed: BTreeSet<&str> = api::annotation(pod, SAFE_TO_EVICT_LOCAL_VOLUMES).map(|s| s.split(',').map(str::trim).collect_tree()).unwrap_or_default();
    get_array(pod, &["spec", "volumes"]).iter().any(|v| {
        let local = v.get("hostPath").is_some() || v.get("emptyDir").is_some_and(|e| get_str(e, &["medium"]) != Some("Memory"));
        local && !allowed.contains(get_str(v, &["name"]).unwrap_or(""))
    })
}

fn is_daemonset_pod(pod: &Value) -> bool {
    api::controller_ref(pod).and_then(|r| get_str(r, &["kind"])) == Some("DaemonSet")
}

fn is_mirror_pod(pod: &Value) -> bool {
    api::annotation(pod, "kubernetes.io/config.mirror").is_some()
}

fn pdb_matches(pdb: &Value, pod: &Value) -> bool {
    api::namespace(pdb) == api::namespace(pod)
        && get(pdb, &["spec", "selector"]).is_some()
        && crate::foundation::labels::selector_matches(get(pdb, &["spec", "selector"]), api::labels(pod))
}

/// The drainability rules in upstream's order (`rules.Default`): why `pod` keeps its node
/// from being removed, if it does. `remaining` holds each budget's disruptions left in
/// this simulation (by namespace and name), taken as pods are planned to move.
pub fn drain_blocker(pod: &Value, pdbs: &[Object], remaining: &mut BTreeMap<(String, String), i64>) -> Option<String> {
    let (ns, name) = (api::namespace(pod), api::name(pod));
    let safe = api::annotation(pod, SAFE_TO_EVICT) == Some("true");
    let matching: Vec<&Object> = pdbs.iter().filter(|b| pdb_matches(b, pod)).collect();
    if !safe {
        if api::controller_ref(pod).is_none() {
            return Some(format!("{ns}/{name} is not replicated"));
        }
        if ns == "kube-system" && matching.is_empty() {
            return Some(format!("non-daemonset, non-mirrored, non-pdb-assigned kube-system pod present: {name}"));
        }
        if api::annotation(pod, SAFE_TO_EVICT) == Some("false") {
            return Some(format!("pod annotated as not safe to evict present: {name}"));
        }
        if has_blocking_local_storage(pod) {
            return Some(format!("pod with local storage present: {name}"));
        }
    }
    for b in &matching {
        let key = (api::namespace(b).to_string(), api::name(b).to_string());
        let left = *remaining.entry(key).or_insert_with(|| get_i64(b, &["status", "disruptionsAllowed"]).unwrap_or(0));
        if left < 1 {
            return Some(format!("not enough pod disruption budget to move {ns}/{name}"));
        }
    }
    for b in &matching {
        if let Some(left) = remaining.get_mut(&(api::namespace(b).to_string(), api::name(b).to_string())) {
            *left -= 1;
        }
    }
    None
}

/// A node's utilization as the scale-down reads it (`utilization.Calculate`): the larger
/// of requested cpu and memory over allocatable.
pub fn utilization(node: &SimNode) -> f64 {
    let (cpu, mem) = node.utilization();
    cpu.max(mem)
}

/// Why a node of a group stays (`simulator.UnremovableReason`), or the pods to move.
#[derive(Debug, Clone, PartialEq)]
pub enum Removal {
    NotUnderutilized(f64),
    Blocked(String),
    NoPlaceToMovePods(String),
    /// Removable: the pods that must move (DaemonSet and mirror pods stay out), each with
    /// the node the simulation moved it to.
    Removable(Vec<(Object, String)>),
}

/// Whether `node` may go (`RemovalSimulator.SimulateNodeRemoval`): under the utilization
/// threshold, every pod drainable, and each one fitting on another node of `others`
/// (which take the moved pods, so that later candidates see them).
pub fn simulate_removal(node: &SimNode, pods: &[Object], others: &mut [SimNode], pdbs: &[Object], remaining: &mut BTreeMap<(String, String), i64>) -> Removal {
    let u = utilization(node);
    if u >= UTILIZATION_THRESHOLD {
        return Removal::NotUnderutilized(u);
    }
    let moving: Vec<Object> = pods.iter().filter(|p| !is_daemonset_pod(p) && !is_mirror_pod(p)).cloned().collect();
    let mut trial = remaining.clone();
    for p in &moving {
        if let Some(why) = drain_blocker(p, pdbs, &mut trial) {
            return Removal::Blocked(why);
        }
    }
    let mut placed = others.to_vec();
    let mut moves = Vec::new();
    for p in moving {
        match placed.iter_mut().find(|n| n.fits(&p).is_ok()) {
            Some(n) => {
                n.add(&p);
                moves.push((p, n.name().to_string()));
            }
            None => return Removal::NoPlaceToMovePods(format!("no place to move pod {}/{}", api::namespace(&p), api::name(&p))),
        }
    }
    *remaining = trial;
    others.clone_from_slice(&placed);
    Removal::Removable(moves)
}

/// A node being drained and deleted.
#[derive(Debug, Clone)]
struct Deletion {
    group: usize,
    started: Millis,
    /// Pods still to evict: namespace, name, grace seconds, last refusal.
    to_evict: Vec<(String, String, i64, String)>,
    /// Evicted pods, with their grace period.
    evicted: Vec<(String, String, i64)>,
    /// When the last eviction went through (the wait for pods to go runs from it).
    evictions_done: Option<Millis>,
}

/// The cloud's side of a group: its target size and the machines it has made.
#[derive(Debug, Clone)]
struct Cloud {
    group: NodeGroup,
    target: usize,
    instances: BTreeSet<String>,
    next: usize,
}

#[derive(Clone)]
pub struct ClusterAutoscaler {
    user: UserInfo,
    source: Source,
    /// The machines and target sizes: the cloud's, so they outlive a restart of the loop.
    clouds: Vec<Cloud>,
    nodes: Informer,
    pods: Informer,
    pdbs: Informer,
    started: bool,
    /// Pods or nodes changed since the last scan: the next scan has something to look at.
    dirty: bool,
    unneeded: BTreeMap<String, Millis>,
    /// The reason a group's node stays, as last traced.
    unremovable: BTreeMap<String, String>,
    deletions: BTreeMap<String, Deletion>,
    last_scale_up: Option<Millis>,
    last_failure: Option<Millis>,
    /// NotTriggerScaleUp as last recorded per pod: message and time.
    reported: BTreeMap<(String, String), (String, Millis)>,
}

impl ClusterAutoscaler {
    /// The autoscaler over `groups`, whose first `min` machines already run
    /// (`workers-1`...).
    pub fn new(groups: &[NodeGroup]) -> Self {
        let user = UserInfo::controller("cluster-autoscaler");
        ClusterAutoscaler {
            source: Source { component: "cluster-autoscaler", host: String::new(), user: user.clone() },
            user,
            clouds: groups
                .iter()
                .map(|g| Cloud { group: g.clone(), target: g.min, instances: (1..=g.min).map(|i| g.node_spec(i).name).collect_tree(), next: g.min + 1 })
                .collect(),
            nodes: Informer::new(rid::NODE),
            pods: Informer::new(rid::POD),
            pdbs: Informer::new(rid::PDB),
            started: false,
            dirty: false,
            unneeded: BTreeMap::new(),
            unremovable: BTreeMap::new(),
            deletions: BTreeMap::new(),
            last_scale_up: None,
            last_failure: None,
            reported: BTreeMap::new(),
        }
    }

    fn creds(&self) -> Credentials {
        Credentials::User(self.user.clone())
    }

    fn group_of(&self, node: &str) -> Option<usize> {
        self.clouds.iter().position(|c| c.instances.contains(node))
    }

    fn sync(&mut self, cx: &mut Cx) {
        self.nodes.sync(&cx.api.store);
        self.pods.sync(&cx.api.store);
        self.pdbs.sync(&cx.api.store);
    }

    fn bound_pods(&self, node: &str) -> Vec<Object> {
        self.pods
            .list(None)
            .filter(|p| {
                get_str(p, &["spec", "nodeName"]) == Some(node)
                    && !api::is_deleting(p)
                    && !matches!(get_str(p, &["status", "phase"]), Some("Succeeded" | "Failed"))
            })
            .cloned()
            .collect()
    }

    /// Nodes the simulation may place pods on: Ready, without a taint that says they are
    /// not yet (or no longer) ready (`NodeConditionTaints`), not on their way out.
    fn usable(node: &Value) -> bool {
        let ready = condition(node, "Ready").and_then(|c| get_str(c, &["status"])) == Some("True");
        ready
            && !api::is_deleting(node)
            && !get_array(node, &["spec", "taints"]).iter().any(|t| {
                let key = get_str(t, &["key"]).unwrap_or("");
                key == TO_BE_DELETED_TAINT || NODE_CONDITION_TAINTS.contains(&key)
            })
    }

    /// The snapshot: every usable node with its pods.
    fn snapshot(&self) -> Vec<SimNode> {
        self.nodes
            .list(None)
            .filter(|n| Self::usable(n))
            .map(|n| {
                let mut s = SimNode::new(n.clone());
                for p in self.bound_pods(api::name(n)) {
                    s.add(&p);
                }
                s
            })
            .collect()
    }

    /// Machines a group has whose Nodes are not up yet: still booting, or registered and
    /// not Ready or still tainted not-ready (`GetUpcomingNodes`).
    fn upcoming(&self, gi: usize) -> usize {
        let starting = |node: &Value| {
            condition(node, "Ready").and_then(|c| get_str(c, &["status"])) != Some("True")
                || get_array(node, &["spec", "taints"]).iter().any(|t| {
                    matches!(
                        get_str(t, &["key"]),
                        Some("node.kubernetes.io/not-ready" | "node.kubernetes.io/network-unavailable" | "node.cloudprovider.kubernetes.io/uninitialized")
                    )
                })
        };
        self.clouds[gi].instances.iter().filter(|n| !self.deletions.contains_key(*n) && self.nodes.get("", n).is_none_or(|o| starting(o))).count()
    }

    fn unschedulable_pods(&self) -> Vec<Object> {
        self.pods
            .list(None)
            .filter(|p| {
                get_str(p, &["spec", "nodeName"]).is_none_or(str::is_empty)
                    && !api::is_deleting(p)
                    && get_str(p, &["spec", "schedulerName"]).unwrap_or("default-scheduler") == "default-scheduler"
                    && condition(p, "PodScheduled")
                        .is_some_and(|c| get_str(c, &["status"]) == Some("False") && get_str(c, &["reason"]) == Some("Unschedulable"))
            })
            .cloned()
            .collect()
    }

    fn scan(&mut self, cx: &mut Cx) {
        self.dirty = false;
        self.sync(cx);
        self.scale_up(cx);
        self.scale_down(cx);
    }

    fn scale_up(&mut self, cx: &mut Cx) {
        let pods = self.unschedulable_pods();
        let live: BTreeSet<(String, String)> = pods.iter().map(|p| (api::namespace(p).to_string(), api::name(p).to_string())).collect_tree();
        self.reported.retain(|k, _| live.contains(k));
        if pods.is_empty() {
            return;
        }
        let mut snapshot = self.snapshot();
        for gi in 0..self.clouds.len() {
            let template = self.clouds[gi].group.template_node();
            for _ in 0..self.upcoming(gi) {
                snapshot.push(SimNode::new(template.clone()));
            }
        }
        let states: Vec<GroupState> = self.clouds.iter().map(|c| GroupState { group: &c.group, target: c.target }).collect();
        let plan = plan_scale_up(&pods, &mut snapshot, &states);
        if let Some((gi, count, helped)) = plan.scale_up {
            let (current, max, boot) = (self.clouds[gi].target, self.clouds[gi].group.max, self.clouds[gi].group.boot);
            let name = self.clouds[gi].group.name.clone();
            let new = current + count;
            let mut names = Vec::new();
            for _ in 0..count {
                let c = &mut self.clouds[gi];
                let spec = c.group.node_spec(c.next);
                c.next += 1;
                c.instances.insert(spec.name.clone());
                names.push(spec.name.clone());
                cx.provision(spec, boot);
            }
            self.clouds[gi].target = new;
            self.last_scale_up = Some(cx.now);
            let info = format!("[{}]", scale_up_info(&name, current, new, max));
            let n = helped.len();
            cx.trace(
                Flow::Pending,
                "scale-up",
                format!("NodeGroup/{name}"),
                "ok",
                "",
                format!(
                    "{n} pod{} unschedulable; node group {name} can fit {}: scaling {current} -> {new} (a node boots in {}s: {})",
                    if n == 1 { "" } else { "s" },
                    if n == 1 { "it" } else { "them" },
                    boot / 1000,
                    names.join(", ")
                ),
            );
            for i in helped {
                let p = &pods[i];
                self.reported.remove(&(api::namespace(p).to_string(), api::name(p).to_string()));
                cx.event(&self.source, p, None, "Normal", "TriggeredScaleUp", &format!("pod triggered scale-up: {info}"), None);
            }
            return;
        }
        let mut traced = Vec::new();
        for (i, reasons) in plan.no_scale_up {
            let p = &pods[i];
            let key = (api::namespace(p).to_string(), api::name(p).to_string());
            let msg = format!("pod didn't trigger scale-up: {}", reasons_message(&reasons));
            if self.reported.get(&key).is_some_and(|(m, at)| *m == msg && cx.now < at + EVENT_REFILL) {
                continue;
            }
            cx.event(&self.source, p, None, "Normal", "NotTriggerScaleUp", &msg, None);
            traced.push(format!("Pod/{}/{}: {}", key.0, key.1, reasons_message(&reasons)));
            self.reported.insert(key, (msg, cx.now));
        }
        if !traced.is_empty() {
            cx.trace(
                Flow::Pending,
                "scale-up",
                "NodeGroup".into(),
                "pending",
                "",
                format!("no node group can take the unschedulable pods, so none grows: {}", traced.join("; ")),
            );
        }
    }

    fn in_cooldown(&self, now: Millis) -> bool {
        self.last_scale_up.is_some_and(|t| now < t + SCALE_DOWN_DELAY_AFTER_ADD) || self.last_failure.is_some_and(|t| now < t + SCALE_DOWN_DELAY_AFTER_FAILURE)
    }

    fn scale_down(&mut self, cx: &mut Cx) {
        let mut others = self.snapshot();
        let pdbs: Vec<Object> = self.pdbs.list(None).cloned().collect();
        let mut remaining = BTreeMap::new();
        let mut seen = BTreeSet::new();
        let mut removable: Vec<(String, usize, usize)> = Vec::new();
        // Pods the simulation moved onto a node: a later candidate must move them too.
        let mut moved_to: BTreeMap<String, Vec<Object>> = BTreeMap::new();
        let candidates: Vec<(String, usize)> = self
            .clouds
            .iter()
            .enumerate()
            .flat_map(|(gi, c)| c.instances.iter().map(move |n| (n.clone(), gi)))
            .filter(|(n, _)| !self.deletions.contains_key(n))
            .collect();
        for (name, gi) in candidates {
            let Some(node) = self.nodes.get("", &name).cloned() else { continue };
            if !Self::usable(&node) {
                continue;
            }
            seen.insert(name.clone());
            let Some(pos) = others.iter().position(|n| n.name() == name) else { continue };
            let mut pods = self.bound_pods(&name);
            pods.extend(moved_to.remove(&name).unwrap_or_default());
            let me = others[pos].clone();
            let mut rest: Vec<SimNode> = others.iter().enumerate().filter(|(i, _)| *i != pos).map(|(_, n)| n.clone()).collect();
            match simulate_removal(&me, &pods, &mut rest, &pdbs, &mut remaining) {
                Removal::Removable(moving) => {
                    others = rest;
                    for (p, dest) in &moving {
                        moved_to.entry(dest.clone()).or_default().push(p.clone());
                    }
                    self.unremovable.remove(&name);
                    let since = *self.unneeded.entry(name.clone()).or_insert(cx.now);
                    if since == cx.now {
                        cx.trace(
                            Flow::Kubelet,
                            "scale-down",
                            format!("Node/{name}"),
                            "ok",
                            "",
                            format!(
                                "node {name} is unneeded: its pods request {:.0}% of it and {}; it goes after {} min unneeded",
                                utilization(&me) * 100.0,
                                if moving.is_empty() { "none needs to move".to_string() } else { format!("{} can move to other nodes", moving.len()) },
                                SCALE_DOWN_UNNEEDED_TIME / 60_000
                            ),
                        );
                    }
                    removable.push((name, gi, moving.len()));
                }
                other => {
                    self.unneeded.remove(&name);
                    let why = match other {
                        Removal::Blocked(w) | Removal::NoPlaceToMovePods(w) => w,
                        Removal::NotUnderutilized(_) | Removal::Removable(_) => String::new(),
                    };
                    if why.is_empty() {
                        self.unremovable.remove(&name);
                    } else if self.unremovable.get(&name) != Some(&why) {
                        cx.trace(
                            Flow::Kubelet,
                            "scale-down",
                            format!("Node/{name}"),
                            "pending",
                            "",
                            format!("node {name} is underutilized but can't be removed: {why}"),
                        );
                        self.unremovable.insert(name, why);
                    }
                }
            }
        }
        self.unneeded.retain(|n, _| seen.contains(n));
        if self.in_cooldown(cx.now) {
            return;
        }
        let mut draining = !self.deletions.is_empty();
        for (name, gi, moving) in removable {
            let moving = self.bound_pods(&name).iter().filter(|p| !is_daemonset_pod(p) && !is_mirror_pod(p)).count().max(moving);
            if self.unneeded.get(&name).is_none_or(|since| cx.now < since + SCALE_DOWN_UNNEEDED_TIME) {
                continue;
            }
            if self.clouds[gi].target <= self.clouds[gi].group.min {
                continue;
            }
            if moving > 0 && draining {
                continue;
            }
            draining |= moving > 0;
            self.start_deletion(cx, &name, gi);
        }
    }

    fn start_deletion(&mut self, cx: &mut Cx, name: &str, gi: usize) {
        let Some(node) = self.nodes.get("", name).cloned() else { return };
        let mut body = (*node).clone();
        let secs = crate::foundation::sim::epoch() + (cx.now / 1000) as i64;
        let mut taints = get_array(&node, &["spec", "taints"]).to_vec();
        taints.push(json!({"key": TO_BE_DELETED_TAINT, "value": secs.to_string(), "effect": "NoSchedule"}));
        body["spec"]["taints"] = json!(taints);
        let user = self.user.clone();
        if let Err(s) = cx.api.handle(req_as(Request::update(rid::NODE, "", name, body, self.creds()), "cluster-autoscaler", &user)) {
            cx.event(
                &self.source,
                &node,
                None,
                "Warning",
                "ScaleDownFailed",
                &format!("failed to mark the node as toBeDeleted/unschedulable: {}", s.message),
                None,
            );
            return;
        }
        cx.event(&self.source, &node, None, "Normal", "ScaleDown", "marked the node as toBeDeleted/unschedulable", None);
        let group = self.clouds[gi].group.name.clone();
        let (old, new) = (self.clouds[gi].target, self.clouds[gi].target - 1);
        self.clouds[gi].target = new;
        let since = self.unneeded.get(name).copied().unwrap_or(cx.now);
        let pods = self.bound_pods(name);
        let names: Vec<&str> = pods.iter().filter(|p| !is_daemonset_pod(p) && !is_mirror_pod(p)).map(|p| api::name(p)).collect();
        cx.trace(
            Flow::Kubelet,
            "scale-down",
            format!("Node/{name}"),
            "ok",
            "",
            format!(
                "node {name} unneeded for {} min: tainted {TO_BE_DELETED_TAINT}:NoSchedule, node group {group} {old} -> {new}{}",
                (cx.now - since) / 60_000,
                if names.is_empty() { "; it is empty".to_string() } else { format!("; evicting {}", names.join(", ")) }
            ),
        );
        // The DaemonSet pods go too, best effort (`DaemonSetEvictionForOccupiedNodes`).
        let to_evict = pods
            .iter()
            .filter(|p| !is_mirror_pod(p))
            .map(|p| {
                let grace = get_i64(p, &["spec", "terminationGracePeriodSeconds"]).unwrap_or(30).min(MAX_GRACEFUL_TERMINATION);
                (api::namespace(p).to_string(), api::name(p).to_string(), grace, String::new())
            })
            .collect();
        self.deletions.insert(name.to_string(), Deletion { group: gi, started: cx.now, to_evict, evicted: vec![], evictions_done: None });
        self.drain(cx, name);
    }

    /// One step of a drain: evict what is left, then delete the Node once its pods are gone.
    fn drain(&mut self, cx: &mut Cx, name: &str) {
        self.sync(cx);
        let Some(mut d) = self.deletions.remove(name) else { return };
        let user = self.user.clone();
        let mut left = Vec::new();
        for (ns, pod, grace, last) in std::mem::take(&mut d.to_evict) {
            let Some(p) = self.pods.get(&ns, &pod).cloned() else { continue };
            if last.is_empty() {
                cx.event(&self.source, &p, None, "Normal", "ScaleDown", "deleting pod for node scale down", None);
            }
            let body = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": ns}, "deleteOptions": {"gracePeriodSeconds": grace}});
            let mut req = Request::create(rid::POD, &ns, body, self.creds()).with_sub("eviction");
            req.name = pod.clone();
            match cx.api.handle(req_as(req, "cluster-autoscaler", &user)) {
                Ok(_) => d.evicted.push((ns, pod, grace)),
                Err(s) if s.code == 404 => {}
                Err(s) => left.push((ns, pod, grace, s.message)),
            }
        }
        d.to_evict = left;
        if !d.to_evict.is_empty() {
            if cx.now >= d.started + MAX_POD_EVICTION_TIME {
                let errors: Vec<String> =
                    d.to_evict.iter().map(|(ns, pod, _, last)| format!("failed to evict pod {ns}/{pod} within allowed timeout (last error: {last})")).collect();
                for (ns, pod, _, _) in &d.to_evict {
                    if let Some(p) = self.pods.get(ns, pod).cloned() {
                        cx.event(&self.source, &p, None, "Warning", "ScaleDownFailed", "failed to delete pod for ScaleDown", None);
                    }
                }
                self.fail(cx, name, d.group, &format!("Failed to drain node /{name}, due to following errors: [{}]", errors.join(" ")));
                return;
            }
            self.deletions.insert(name.to_string(), d);
            cx.after(EVICTION_RETRY, format!("drain|{name}"));
            return;
        }
        let done = *d.evictions_done.get_or_insert(cx.now);
        let remaining: Vec<&(String, String, i64)> =
            d.evicted.iter().filter(|(ns, pod, _)| self.pods.get(ns, pod).is_some_and(|p| get_str(p, &["spec", "nodeName"]) == Some(name))).collect();
        if remaining.is_empty() {
            self.delete_node(cx, name, d.group);
            return;
        }
        let longest = remaining.iter().map(|(_, _, g)| *g).max().unwrap_or(0);
        if cx.now >= done + longest as Millis * 1000 + POD_EVICTION_HEADROOM {
            self.fail(cx, name, d.group, &format!("Failed to drain node /{name}: pods remaining after timeout"));
            return;
        }
        self.deletions.insert(name.to_string(), d);
        cx.after(DRAIN_POLL, format!("drain|{name}"));
    }

    /// `CleanUpAndRecordFailedScaleDownEvent`: the taint goes, the group keeps the node.
    fn fail(&mut self, cx: &mut Cx, name: &str, gi: usize, err: &str) {
        self.clouds[gi].target += 1;
        self.last_failure = Some(cx.now);
        self.unneeded.remove(name);
        if let Some(node) = self.nodes.get("", name).cloned() {
            cx.event(&self.source, &node, None, "Warning", "ScaleDownFailed", &format!("failed to drain and delete node: {err}"), None);
            self.clean_taint(cx, &node);
        }
        cx.trace(Flow::Kubelet, "scale-down", format!("Node/{name}"), "error", "", format!("scale-down of {name} failed: {err}; its taint is removed"));
    }

    fn clean_taint(&mut self, cx: &mut Cx, node: &Object) -> bool {
        let taints = get_array(node, &["spec", "taints"]);
        let kept: Vec<Value> = taints.iter().filter(|t| get_str(t, &["key"]) != Some(TO_BE_DELETED_TAINT)).cloned().collect();
        if kept.len() == taints.len() {
            return false;
        }
        let mut body = (**node).clone();
        if kept.is_empty() {
            if let Some(spec) = body.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove("taints");
            }
        } else {
            body["spec"]["taints"] = json!(kept);
        }
        let user = self.user.clone();
        cx.api.handle(req_as(Request::update(rid::NODE, "", api::name(node), body, self.creds()), "cluster-autoscaler", &user)).is_ok()
    }

    fn delete_node(&mut self, cx: &mut Cx, name: &str, gi: usize) {
        let user = self.user.clone();
        let _ = cx.api.handle(req_as(Request::delete(rid::NODE, "", name, self.creds()), "cluster-autoscaler", &user));
        cx.terminate(name);
        self.clouds[gi].instances.remove(name);
        self.unneeded.remove(name);
        let group = self.clouds[gi].group.name.clone();
        cx.trace(
            Flow::Kubelet,
            "scale-down",
            format!("Node/{name}"),
            "ok",
            "",
            format!("node {name} is drained: deleted the Node and terminated its machine (node group {group} now has {})", self.clouds[gi].target),
        );
    }

    /// At start, what an earlier run left: `ToBeDeleted` taints of drains it did not finish.
    fn clean_up(&mut self, cx: &mut Cx) {
        self.sync(cx);
        let tainted: Vec<Object> = self
            .nodes
            .list(None)
            .filter(|n| get_array(n, &["spec", "taints"]).iter().any(|t| get_str(t, &["key"]) == Some(TO_BE_DELETED_TAINT)))
            .cloned()
            .collect();
        for node in tainted {
            if self.clean_taint(cx, &node) {
                let name = api::name(&node).to_string();
                if let Some(gi) = self.group_of(&name) {
                    if self.clouds[gi].target < self.clouds[gi].instances.len() {
                        self.clouds[gi].target += 1;
                    }
                }
                cx.event(
                    &self.source,
                    &node,
                    None,
                    "Normal",
                    "ClusterAutoscalerCleanup",
                    &format!("removed {TO_BE_DELETED_TAINT} taints from node {name}"),
                    None,
                );
            }
        }
    }
}

impl Controller for ClusterAutoscaler {
    fn name(&self) -> &'static str {
        "cluster-autoscaler"
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::POD, rid::NODE]
    }
    /// A change does not make it act (it looks every scan interval); it only means the next
    /// scan may have work, so the run is not quiet until that scan.
    fn run(&mut self, cx: &mut Cx) {
        if !self.started {
            self.started = true;
            self.clean_up(cx);
            cx.every(SCAN_INTERVAL, "scan");
        }
        self.dirty = true;
    }
    fn timer(&mut self, cx: &mut Cx, key: &str) {
        if key == "scan" {
            self.scan(cx);
            cx.every(SCAN_INTERVAL, "scan");
        } else if let Some(node) = key.strip_prefix("drain|") {
            self.drain(cx, node);
        }
    }
    /// Until the next scan after a change, and while a node counts down its unneeded time
    /// or drains: what it will do needs nothing else to change.
    fn busy(&self, _now: Millis) -> bool {
        self.dirty
            || !self.deletions.is_empty()
            || self.unneeded.keys().any(|n| self.group_of(n).is_some_and(|gi| self.clouds[gi].target > self.clouds[gi].group.min))
    }
    fn restart(&mut self) {
        let clouds = std::mem::take(&mut self.clouds);
        let groups: Vec<NodeGroup> = clouds.iter().map(|c| c.group.clone()).collect();
        *self = ClusterAutoscaler::new(&groups);
        self.clouds = clouds;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(name: &str, cpu: &str, max: usize) -> NodeGroup {
        let mut t = NodeSpec::worker("", "zone-a", cpu, "8Gi");
        t.labels.insert("pool", json!(name));
        NodeGroup { name: name.into(), min: 1, max, template: t, boot: 90_000 }
    }

    fn pod(name: &str, cpu: &str, extra: Value) -> Object {
        let mut p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u1", "controller": true}]},
            "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]}});
        if let (Some(m), Some(e)) = (p.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                if k == "spec" {
                    for (sk, sv) in v.as_object().into_iter().flatten() {
                        m.get_mut("spec").and_then(Value::as_object_mut).map(|s| s.insert(sk.clone(), sv.clone()));
                    }
                } else {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
        Arc::new(p)
    }

    #[test]
    fn pods_pack_onto_as_few_new_nodes_as_fit_within_max() {
        let g = group("workers", "4", 5);
        let pods: Vec<Object> = (0..5).map(|i| pod(&format!("p{i}"), "1500m", json!({}))).collect();
        // Two 1.5-cpu pods per 4-cpu node: five pods need three nodes.
        let plan = plan_scale_up(&pods, &mut [], &[GroupState { group: &g, target: 1 }]);
        assert_eq!(plan.scale_up, Some((0, 3, vec![0, 1, 2, 3, 4])));
        // Room for one more node only: it takes the first two pods.
        let plan = plan_scale_up(&pods, &mut [], &[GroupState { group: &g, target: 4 }]);
        assert_eq!(plan.scale_up, Some((0, 1, vec![0, 1])));
    }

    #[test]
    fn pods_that_fit_a_booting_node_trigger_nothing() {
        let g = group("workers", "4", 5);
        let pods = vec![pod("a", "1", json!({})), pod("b", "3500m", json!({}))];
        let mut snapshot = vec![SimNode::new(g.template_node())];
        let plan = plan_scale_up(&pods, &mut snapshot, &[GroupState { group: &g, target: 2 }]);
        assert_eq!(plan.fit_upcoming, vec![0]);
        assert_eq!(plan.scale_up, Some((0, 1, vec![1])));
    }

    #[test]
    fn no_scale_up_gives_each_groups_reason() {
        let small = group("small", "2", 3);
        let full = group("full", "8", 2);
        let pods = vec![pod("big", "4", json!({})), pod("picky", "100m", json!({"spec": {"nodeSelector": {"disk": "ssd"}}}))];
        let plan = plan_scale_up(&pods, &mut [], &[GroupState { group: &small, target: 1 }, GroupState { group: &full, target: 2 }]);
        assert_eq!(plan.scale_up, None);
        let messages: Vec<String> =
            plan.no_scale_up.iter().map(|(i, r)| format!("{}: pod didn't trigger scale-up: {}", api::name(&pods[*i]), reasons_message(r))).collect();
        assert_eq!(
            messages,
            vec![
                "big: pod didn't trigger scale-up: 1 Insufficient cpu, 1 max node group size reached",
                "picky: pod didn't trigger scale-up: 1 max node group size reached, 1 node(s) didn't match Pod's node affinity/selector",
            ]
        );
    }

    #[test]
    fn a_tainted_template_takes_only_tolerating_pods() {
        let mut g = group("gpu", "8", 3);
        g.template.taints.push(json!({"key": "gpu", "value": "true", "effect": "NoSchedule"}));
        let plain = pod("plain", "1", json!({}));
        let tolerant = pod("tolerant", "1", json!({"spec": {"tolerations": [{"key": "gpu", "operator": "Exists"}]}}));
        let plan = plan_scale_up(&[plain, tolerant], &mut [], &[GroupState { group: &g, target: 1 }]);
        assert_eq!(plan.scale_up, Some((0, 1, vec![1])));
    }

    #[test]
    fn scale_up_info_reads_as_upstream_prints_it() {
        assert_eq!(format!("pod triggered scale-up: [{}]", scale_up_info("workers", 1, 2, 5)), "pod triggered scale-up: [{workers 1->2 (max: 5)}]");
    }

    #[test]
    fn drainability_rules_block_as_upstream_defaults_do() {
        let mut left = BTreeMap::new();
        let bare = Arc::new(json!({"metadata": {"name": "solo", "namespace": "default"}, "spec": {}}));
        assert_eq!(drain_blocker(&bare, &[], &mut left).as_deref(), Some("default/solo is not replicated"));
        let sys = pod("dns", "100m", json!({}));
        let mut sys = (*sys).clone();
        sys["metadata"]["namespace"] = json!("kube-system");
        assert_eq!(drain_blocker(&sys, &[], &mut left).as_deref(), Some("non-daemonset, non-mirrored, non-pdb-assigned kube-system pod present: dns"));
        let local = pod("cache", "100m", json!({"spec": {"volumes": [{"name": "scratch", "emptyDir": {}}]}}));
        assert_eq!(drain_blocker(&local, &[], &mut left).as_deref(), Some("pod with local storage present: cache"));
        let memory = pod("tmpfs", "100m", json!({"spec": {"volumes": [{"name": "scratch", "emptyDir": {"medium": "Memory"}}]}}));
        assert_eq!(drain_blocker(&memory, &[], &mut left), None);
        let mut labelled = (*pod("web-1", "100m", json!({}))).clone();
        labelled["metadata"]["labels"] = json!({"app": "web"});
        let pdb = Arc::new(
            json!({"metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": {"matchLabels": {"app": "web"}}}, "status": {"disruptionsAllowed": 1}}),
        );
        assert_eq!(drain_blocker(&labelled, std::slice::from_ref(&pdb), &mut left), None);
        // The budget allowed one disruption, which the first pod took.
        assert_eq!(drain_blocker(&labelled, &[pdb], &mut left).as_deref(), Some("not enough pod disruption budget to move default/web-1"));
    }

    #[test]
    fn a_node_goes_only_under_half_used_and_with_room_elsewhere() {
        let g = group("workers", "4", 5);
        let mut node = SimNode::new(g.template_node());
        let p = pod("p", "1", json!({}));
        node.add(&p);
        let mut none: Vec<SimNode> = vec![];
        assert_eq!(
            simulate_removal(&node, std::slice::from_ref(&p), &mut none, &[], &mut BTreeMap::new()),
            Removal::NoPlaceToMovePods("no place to move pod default/p".into())
        );
        let mut others = vec![SimNode::new(g.template_node())];
        assert_eq!(
            simulate_removal(&node, std::slice::from_ref(&p), &mut others, &[], &mut BTreeMap::new()),
            Removal::Removable(vec![(p.clone(), "template-node-for-workers".into())])
        );
        assert!((utilization(&others[0]) - 0.25).abs() < 1e-9, "the moved pod now counts on the other node");
        let big = pod("big", "2", json!({}));
        let mut busy = SimNode::new(g.template_node());
        busy.add(&big);
        assert_eq!(simulate_removal(&busy, &[big], &mut others, &[], &mut BTreeMap::new()), Removal::NotUnderutilized(0.5));
    }
}
