//! Node failure handling: the node lifecycle controller and the taint eviction controller
//! (`pkg/controller/nodelifecycle/node_lifecycle_controller.go`,
//! `pkg/controller/tainteviction/taint_eviction.go`).
//!
//! Every 5s (`--node-monitor-period`) the lifecycle controller looks at each node's last
//! heartbeat (its Lease, or the Ready condition) and, as upstream's `nodeHealthMap`, notes
//! by its own clock when it last saw that heartbeat change (`probeTimestamp`); a node not
//! seen to change for the 50s grace period is silent. A controller that starts (or
//! restarts after losing its leader lease) gives every node a fresh grace period, so that
//! the stale leases it finds after an API server outage do not condemn every node. A silent node's
//! conditions go Unknown, it gets the `unreachable` NoSchedule and NoExecute taints, and its
//! pods are marked not Ready. The taint eviction controller deletes pods on NoExecute-tainted
//! nodes when their tolerations run out (300s by default, added by DefaultTolerationSeconds),
//! so that their owners replace them.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, Request};
use crate::foundation::api::{self, get, get_array, get_i64, get_str, rid, Object, ResourceId};
use crate::foundation::pod::condition;
use crate::foundation::sim::{parse_rfc3339, rfc3339, Millis};
use crate::foundation::value::{json, Value};
use crate::loops::events::Source;
use crate::loops::informer::Informer;
use crate::loops::scheduler::tolerates;
use crate::loops::{req_as, Controller, Cx};
use std::collections::{BTreeMap, BTreeSet};

pub const GRACE: Millis = 50_000;
pub const MONITOR_PERIOD: Millis = 5_000;
const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
const NOT_READY: &str = "node.kubernetes.io/not-ready";

#[derive(Clone)]
pub struct NodeLifecycleController {
    user: UserInfo,
    source: Source,
    nodes: Informer,
    leases: Informer,
    pods: Informer,
    started: bool,
    /// Per node: the last heartbeat seen and when this controller saw it change.
    probes: BTreeMap<String, (Millis, Millis)>,
}

impl Default for NodeLifecycleController {
    fn default() -> Self {
        Self::new()
    }
}

fn last_heartbeat(node: &Value, lease: Option<&Object>) -> Millis {
    let l = lease.and_then(|l| get_str(l, &["spec", "renewTime"])).and_then(parse_rfc3339).unwrap_or(0);
    let r = condition(node, "Ready").and_then(|c| get_str(c, &["lastHeartbeatTime"])).and_then(parse_rfc3339).unwrap_or(0);
    l.max(r)
}

fn ready_status(node: &Value) -> &str {
    condition(node, "Ready").and_then(|c| get_str(c, &["status"])).unwrap_or("Unknown")
}

impl NodeLifecycleController {
    pub fn new() -> Self {
        let user = UserInfo::controller("node-controller");
        NodeLifecycleController {
            source: Source { component: "node-controller", host: String::new(), user: user.clone() },
            user,
            nodes: Informer::new(rid::NODE),
            leases: Informer::new(rid::LEASE),
            pods: Informer::new(rid::POD),
            started: false,
            probes: BTreeMap::new(),
        }
    }

    /// `probeTimestamp`: when a change of the node's heartbeat was last observed.
    fn probe(&mut self, now: Millis, name: &str, heartbeat: Millis) -> Millis {
        let e = self.probes.entry(name.to_string()).or_insert((heartbeat, now));
        if heartbeat > e.0 {
            *e = (heartbeat, now);
        }
        e.1
    }

    fn creds(&self) -> Credentials {
        Credentials::User(self.user.clone())
    }

    fn monitor(&mut self, cx: &mut Cx) {
        self.nodes.sync(&cx.api.store);
        self.leases.sync(&cx.api.store);
        self.pods.sync(&cx.api.store);
        let nodes: Vec<Object> = self.nodes.list(None).cloned().collect();
        for node in nodes {
            let name = api::name(&node).to_string();
            let lease = self.leases.get("kube-node-lease", &name);
            let last = last_heartbeat(&node, lease);
            let probed = self.probe(cx.now, &name, last);
            let mut node = node;
            if cx.now > probed + GRACE && ready_status(&node) != "Unknown" {
                node = self.mark_unknown(cx, &node, &name);
            }
            self.reconcile_taints(cx, &node, &name);
        }
    }

    fn mark_unknown(&mut self, cx: &mut Cx, node: &Object, name: &str) -> Object {
        let mut body = (**node).clone();
        let ts = rfc3339(cx.now);
        if let Some(conds) = body["status"]["conditions"].as_array_mut() {
            for c in conds.iter_mut() {
                let ty = get_str(c, &["type"]).unwrap_or("");
                if ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"].contains(&ty) {
                    c["status"] = json!("Unknown");
                    c["reason"] = json!("NodeStatusUnknown");
                    c["message"] = json!("Kubelet stopped posting node status.");
                    c["lastTransitionTime"] = json!(ts);
                }
            }
        }
        if let Some(m) = body.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        let stored = match cx.api.handle(req_as(Request::update(rid::NODE, "", name, body, self.creds()).with_sub("status"), "node-controller", &self.user)) {
            Ok(s) => s,
            // Not written (the API server is unreachable): tried again at the next period.
            Err(_) => return node.clone(),
        };
        cx.trace(
            Flow::NodeError,
            "node-lifecycle",
            format!("Node/{name}"),
            "error",
            "",
            format!("no heartbeat from {name} for {}s: conditions Unknown (Kubelet stopped posting node status.)", GRACE / 1000),
        );
        cx.event(&self.source, node, None, "Normal", "NodeNotReady", &format!("Node {name} status is now: NodeNotReady"), None);
        // MarkPodsNotReady
        let pods: Vec<Object> = self.pods.list(None).filter(|p| get_str(p, &["spec", "nodeName"]) == Some(name)).cloned().collect();
        for p in pods {
            if condition(&p, "Ready").and_then(|c| get_str(c, &["status"])) == Some("False") {
                continue;
            }
            let mut pb = (*p).clone();
            if let Some(conds) = pb["status"]["conditions"].as_array_mut() {
                for c in conds.iter_mut() {
                    if get_str(c, &["type"]) == Some("Ready") {
                        c["status"] = json!("False");
                        c["lastTransitionTime"] = json!(ts);
                    }
                }
            }
            if let Some(m) = pb.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("resourceVersion");
            }
            let _ = cx.api.handle(req_as(
                Request::update(rid::POD, api::namespace(&p), api::name(&p), pb, self.creds()).with_sub("status"),
                "node-controller",
                &self.user,
            ));
            cx.event(&self.source, &p, None, "Warning", "NodeNotReady", "Node is not ready", None);
        }
        stored
    }

    fn reconcile_taints(&mut self, cx: &mut Cx, node: &Object, name: &str) {
        let status = ready_status(node);
        let want: Option<&str> = match status {
            "Unknown" => Some(UNREACHABLE),
            "False" => Some(NOT_READY),
            _ => None,
        };
        let taints = get_array(node, &["spec", "taints"]).to_vec();
        let mut next: Vec<Value> = taints
            .iter()
            .filter(|t| {
                let k = get_str(t, &["key"]).unwrap_or("");
                (k != UNREACHABLE && k != NOT_READY) || Some(k) == want
            })
            .cloned()
            .collect();
        if let Some(k) = want {
            for effect in ["NoSchedule", "NoExecute"] {
                if !next.iter().any(|t| get_str(t, &["key"]) == Some(k) && get_str(t, &["effect"]) == Some(effect)) {
                    let mut t = json!({"key": k, "effect": effect});
                    if effect == "NoExecute" {
                        t["timeAdded"] = json!(rfc3339(cx.now));
                    }
                    next.push(t);
                }
            }
        }
        if next == taints {
            return;
        }
        let mut body = (**node).clone();
        body["spec"]["taints"] = json!(next);
        if let Some(m) = body.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        if cx.api.handle(req_as(Request::update(rid::NODE, "", name, body, self.creds()), "node-controller", &self.user)).is_ok() {
            let msg = match want {
                Some(k) => format!("tainted {name} with {k}:NoSchedule and {k}:NoExecute"),
                None => format!("{name} is Ready again: removed its not-ready/unreachable taints"),
            };
            cx.trace(if want.is_some() { Flow::NodeError } else { Flow::Kubelet }, "node-lifecycle", format!("Node/{name}"), "ok", "", msg);
        }
    }
}

impl Controller for NodeLifecycleController {
    fn name(&self) -> &'static str {
        "node-lifecycle-controller"
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::NODE]
    }
    fn run(&mut self, cx: &mut Cx) {
        if !self.started {
            self.started = true;
            cx.every(MONITOR_PERIOD, "monitor");
        }
        // Taints follow Ready changes right away (a kubelet posting Ready again).
        self.nodes.sync(&cx.api.store);
        let nodes: Vec<Object> = self.nodes.list(None).cloned().collect();
        for n in nodes {
            if ready_status(&n) == "True" {
                let name = api::name(&n).to_string();
                self.reconcile_taints(cx, &n, &name);
            }
        }
    }
    fn timer(&mut self, cx: &mut Cx, _key: &str) {
        self.monitor(cx);
        cx.every(MONITOR_PERIOD, "monitor");
    }
    fn busy(&self, now: Millis) -> bool {
        // A silent node whose grace period has not yet run out will change state.
        self.nodes.list(None).any(|n| {
            let last = last_heartbeat(n, self.leases.get("kube-node-lease", api::name(n)));
            let probed = self.probes.get(api::name(n)).filter(|(seen, _)| *seen >= last).map(|(_, at)| *at).unwrap_or(last);
            ready_status(n) != "Unknown" && now > probed + 15_000
        })
    }
    fn restart(&mut self) {
        *self = Self::new();
    }
}

#[derive(Clone)]
pub struct TaintEvictionController {
    user: UserInfo,
    source: Source,
    nodes: Informer,
    pods: Informer,
    queue: BTreeSet<String>,
}

impl Default for TaintEvictionController {
    fn default() -> Self {
        Self::new()
    }
}

/// When a pod must leave a node with these NoExecute taints: `Some(0)` now, `Some(t)` at
/// `t`, `None` never (`getMinTolerationTime`).
pub fn eviction_time(pod: &Value, taints: &[Value]) -> Option<Option<Millis>> {
    let tolerations = get_array(pod, &["spec", "tolerations"]);
    let mut at: Option<Millis> = None;
    let mut any = false;
    for t in taints.iter().filter(|t| get_str(t, &["effect"]) == Some("NoExecute")) {
        any = true;
        let added = get_str(t, &["timeAdded"]).and_then(parse_rfc3339).unwrap_or(0);
        let matching: Vec<&Value> = tolerations.iter().filter(|tol| tolerates(std::slice::from_ref(tol), t)).collect();
        if matching.is_empty() {
            return Some(Some(0));
        }
        let secs = matching.iter().filter_map(|tol| get_i64(tol, &["tolerationSeconds"])).min();
        if let Some(s) = secs {
            let due = added + (s.max(0) as Millis) * 1000;
            at = Some(at.map_or(due, |a| a.min(due)));
        }
    }
    any.then_some(at)
}

impl TaintEvictionController {
    pub fn new() -> Self {
        let user = UserInfo::controller("taint-eviction-controller");
        TaintEvictionController {
            source: Source { component: "taint-eviction-controller", host: String::new(), user: user.clone() },
            user,
            nodes: Informer::new(rid::NODE),
            pods: Informer::new(rid::POD),
            queue: BTreeSet::new(),
        }
    }

    fn check(&mut self, cx: &mut Cx, ns: &str, name: &str, schedule: bool) {
        let Some(pod) = self.pods.get(ns, name).cloned() else { return };
        if api::is_deleting(&pod) {
            return;
        }
        let Some(node) = get_str(&pod, &["spec", "nodeName"]).and_then(|n| self.nodes.get("", n)).cloned() else { return };
        let taints = get_array(&node, &["spec", "taints"]).to_vec();
        match eviction_time(&pod, &taints) {
            None | Some(None) => {}
            Some(Some(at)) if at <= cx.now => {
                cx.event(&self.source, &pod, None, "Normal", "TaintManagerEviction", &format!("Marking for deletion Pod {ns}/{name}"), None);
                // `addConditionAndDeletePod`: the pod is told why before it is deleted, so a
                // Job's podFailurePolicy can tell a disruption from a failure.
                let mut holder = json!({"status": {"conditions": get(&pod, &["status", "conditions"]).cloned().unwrap_or(json!([]))}});
                crate::apiserver::set_condition(
                    &mut holder,
                    "DisruptionTarget",
                    "True",
                    Some("DeletionByTaintManager"),
                    Some("Taint manager: deleting due to NoExecute taint"),
                    cx.now,
                );
                if get(&holder, &["status", "conditions"]) != get(&pod, &["status", "conditions"]) {
                    let body = json!({"metadata": {"uid": api::uid(&pod)}, "status": {"conditions": holder["status"]["conditions"].take()}});
                    let patch =
                        Request::patch(rid::POD, ns, name, crate::apiserver::PatchType::Merge, body, Credentials::User(self.user.clone())).with_sub("status");
                    if cx.api.handle(req_as(patch, "taint-eviction-controller", &self.user)).is_err() {
                        // Not written: the worker tries again.
                        cx.every(10_000, format!("{ns}/{name}"));
                        return;
                    }
                }
                let r =
                    cx.api.handle(req_as(Request::delete(rid::POD, ns, name, Credentials::User(self.user.clone())), "taint-eviction-controller", &self.user));
                if r.is_ok() {
                    cx.trace(
                        Flow::NodeError,
                        "eviction",
                        format!("Pod/{ns}/{name}"),
                        "ok",
                        "",
                        format!("node {} is tainted NoExecute and the pod's toleration ran out: evicted", api::name(&node)),
                    );
                }
            }
            Some(Some(at)) => {
                if schedule {
                    cx.after(at - cx.now, format!("{ns}/{name}"));
                }
            }
        }
    }
}

impl Controller for TaintEvictionController {
    fn name(&self) -> &'static str {
        "taint-eviction-controller"
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::NODE, rid::POD]
    }
    fn run(&mut self, cx: &mut Cx) {
        let node_deltas = self.nodes.sync(&cx.api.store).deltas;
        let pod_deltas = self.pods.sync(&cx.api.store).deltas;
        for d in node_deltas {
            let before: Vec<Value> = d.old.as_ref().map(|o| get_array(o, &["spec", "taints"]).to_vec()).unwrap_or_default();
            let after = get_array(&d.object, &["spec", "taints"]);
            if before.as_slice() != after && after.iter().any(|t| get_str(t, &["effect"]) == Some("NoExecute")) {
                let n = api::name(&d.object).to_string();
                for p in self.pods.list(None) {
                    if get_str(p, &["spec", "nodeName"]) == Some(n.as_str()) {
                        self.queue.insert(format!("{}/{}", api::namespace(p), api::name(p)));
                    }
                }
            }
        }
        for d in pod_deltas {
            let newly_bound = get_str(&d.object, &["spec", "nodeName"]).is_some() && d.old.as_ref().is_none_or(|o| get_str(o, &["spec", "nodeName"]).is_none());
            if newly_bound {
                let tainted = get_str(&d.object, &["spec", "nodeName"])
                    .and_then(|n| self.nodes.get("", n))
                    .is_some_and(|n| get_array(n, &["spec", "taints"]).iter().any(|t| get_str(t, &["effect"]) == Some("NoExecute")));
                if tainted {
                    self.queue.insert(format!("{}/{}", api::namespace(&d.object), api::name(&d.object)));
                }
            }
        }
        while let Some(k) = self.queue.pop_first() {
            if let Some((ns, name)) = k.split_once('/') {
                self.check(cx, ns, name, true);
            }
        }
    }
    fn timer(&mut self, cx: &mut Cx, key: &str) {
        self.nodes.sync(&cx.api.store);
        self.pods.sync(&cx.api.store);
        if let Some((ns, name)) = key.split_once('/') {
            self.check(cx, ns, name, false);
        }
    }
    fn restart(&mut self) {
        *self = Self::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eviction_waits_for_the_smallest_toleration() {
        let taint = json!({"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": "2026-01-01T00:01:00Z"});
        let pod = json!({"spec": {"tolerations": [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]}});
        assert_eq!(eviction_time(&pod, std::slice::from_ref(&taint)), Some(Some(60_000 + 300_000)));
        assert_eq!(eviction_time(&json!({"spec": {}}), std::slice::from_ref(&taint)), Some(Some(0)));
        let forever = json!({"spec": {"tolerations": [{"operator": "Exists"}]}});
        assert_eq!(eviction_time(&forever, &[taint]), Some(None));
        assert_eq!(eviction_time(&pod, &[]), None);
    }
}
