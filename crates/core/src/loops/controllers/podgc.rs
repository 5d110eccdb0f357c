//! The pod garbage collector (`pkg/controller/podgc/gc_controller.go`).
//!
//! Every 20 seconds (`gcCheckPeriod`) it looks at all pods and force-deletes (grace period
//! 0) four kinds nobody else will clean up:
//!
//! - terminated pods (Succeeded or Failed) beyond `--terminated-pod-gc-threshold` (12500),
//!   evicted ones first, then the oldest;
//! - terminating pods on a node that is not Ready and carries the
//!   `node.kubernetes.io/out-of-service` taint;
//! - orphans: pods bound to a node that no longer exists. A missing node is quarantined
//!   for 40 seconds (`quarantineTime`) and then read from the API server, so a node that
//!   is only slow to appear in the cache is not mistaken for a deleted one. Its pods get
//!   the `DisruptionTarget` condition (`DeletionByPodGC`, "PodGC: node no longer exists");
//! - terminating pods that were never scheduled.
//!
//! Before deleting a pod that is not terminal, it is marked `Failed` — an orphan has no
//! kubelet left to do so.
//!
//! The gc pass is the same every 20 seconds; the simulation only wakes the controller on
//! that grid while some pod is a candidate, which changes nothing it does.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, Request, Verb};
use crate::foundation::api::{self, get_array, get_str, rid, Object, ResourceId};
use crate::foundation::sim::Millis;
use crate::foundation::sort::Sort;
use crate::foundation::value::{json, Value};
use crate::loops::informer::Informer;
use crate::loops::{req_as, Controller, Cx};
use std::collections::{BTreeMap, BTreeSet};

/// `gcCheckPeriod`.
pub const CHECK_PERIOD: Millis = 20_000;
/// `quarantineTime`.
pub const QUARANTINE: Millis = 40_000;
/// kube-controller-manager's `--terminated-pod-gc-threshold` default.
pub const TERMINATED_THRESHOLD: usize = 12_500;
const OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";
const NAME: &str = "pod-garbage-collector";

type Key = (String, String);

#[derive(Clone)]
pub struct PodGcController {
    user: UserInfo,
    pods: Informer,
    nodes: Informer,
    /// Pods by the node they are bound to, and the unscheduled ones under "".
    by_node: BTreeMap<String, BTreeSet<Key>>,
    terminated: BTreeSet<Key>,
    terminating: BTreeSet<Key>,
    /// `nodeQueue`: missing nodes and when their quarantine ends.
    quarantine: BTreeMap<String, Millis>,
    /// Whether a gc pass is already due at the next tick of the 20-second grid.
    ticking: bool,
    threshold: usize,
}

impl Default for PodGcController {
    fn default() -> Self {
        Self::new()
    }
}

fn terminated(pod: &Value) -> bool {
    !matches!(get_str(pod, &["status", "phase"]), None | Some("Pending" | "Running" | "Unknown"))
}

fn node_of(pod: &Value) -> &str {
    get_str(pod, &["spec", "nodeName"]).unwrap_or("")
}

impl PodGcController {
    pub fn new() -> Self {
        Self::with_threshold(TERMINATED_THRESHOLD)
    }

    pub fn with_threshold(threshold: usize) -> Self {
        PodGcController {
            user: UserInfo::controller(NAME),
            pods: Informer::new(rid::POD),
            nodes: Informer::new(rid::NODE),
            by_node: BTreeMap::new(),
            terminated: BTreeSet::new(),
            terminating: BTreeSet::new(),
            quarantine: BTreeMap::new(),
            ticking: false,
            threshold,
        }
    }

    fn creds(&self) -> Credentials {
        Credentials::User(self.user.clone())
    }

    fn forget(&mut self, pod: &Value, key: &Key) {
        let node = node_of(pod);
        if let Some(s) = self.by_node.get_mut(node) {
            s.remove(key);
            if s.is_empty() {
                self.by_node.remove(node);
            }
        }
        self.terminated.remove(key);
        self.terminating.remove(key);
    }

    fn sync(&mut self, cx: &mut Cx) {
        self.nodes.sync(&cx.api.store);
        for d in self.pods.sync(&cx.api.store).deltas {
            let key = api::queue_key(&d.object);
            if let Some(old) = &d.old {
                self.forget(old, &key);
            }
            if d.kind == EventType::Deleted {
                self.forget(&d.object, &key);
                continue;
            }
            self.by_node.entry(node_of(&d.object).to_string()).or_default().insert(key.clone());
            if terminated(&d.object) {
                self.terminated.insert(key.clone());
            }
            if api::is_deleting(&d.object) {
                self.terminating.insert(key);
            }
        }
    }

    /// Whether a gc pass could find anything to do.
    fn candidates(&self) -> bool {
        self.terminated.len() > self.threshold
            || !self.quarantine.is_empty()
            || self.by_node.keys().any(|n| !n.is_empty() && self.nodes.get("", n).is_none())
            || self.terminating.iter().any(|k| self.pods.get(&k.0, &k.1).is_some_and(|p| node_of(p).is_empty() || self.out_of_service(node_of(p))))
    }

    fn out_of_service(&self, node: &str) -> bool {
        let Some(n) = self.nodes.get("", node) else { return false };
        let ready = get_array(n, &["status", "conditions"]).iter().any(|c| get_str(c, &["type"]) == Some("Ready") && get_str(c, &["status"]) == Some("True"));
        !ready && get_array(n, &["spec", "taints"]).iter().any(|t| get_str(t, &["key"]) == Some(OUT_OF_SERVICE))
    }

    fn tick_soon(&mut self, cx: &mut Cx) {
        if !self.ticking && self.candidates() {
            self.ticking = true;
            cx.after(CHECK_PERIOD - cx.now % CHECK_PERIOD, "gc".to_string());
        }
    }

    fn pods_of<'a>(&'a self, keys: impl Iterator<Item = &'a Key> + 'a) -> Vec<Object> {
        keys.filter_map(|k| self.pods.get(&k.0, &k.1).cloned()).collect()
    }

    /// `gc`: the four passes, in upstream's order.
    fn gc(&mut self, cx: &mut Cx) {
        cx.user = self.user.name.clone();
        if self.threshold > 0 && self.terminated.len() > self.threshold {
            let mut pods = self.pods_of(self.terminated.iter());
            sort_for_deletion(&mut pods);
            let extra = pods.len() - self.threshold;
            for p in &pods[..extra] {
                self.mark_failed_and_delete(cx, p, None, format!("more than {} terminated pods: the oldest are deleted", self.threshold));
            }
        }
        let mut on_out_of_service = self.pods_of(self.terminating.iter());
        on_out_of_service.retain(|p| !node_of(p).is_empty() && self.out_of_service(node_of(p)));
        sort_for_deletion(&mut on_out_of_service);
        for p in &on_out_of_service {
            self.mark_failed_and_delete(cx, p, None, format!("terminating on node {} (not Ready, tainted {OUT_OF_SERVICE})", node_of(p)));
        }
        self.gc_orphaned(cx);
        let unscheduled: Vec<Object> = self.pods_of(self.terminating.iter()).into_iter().filter(|p| node_of(p).is_empty()).collect();
        for p in &unscheduled {
            self.mark_failed_and_delete(cx, p, None, "terminating and never scheduled".to_string());
        }
    }

    fn gc_orphaned(&mut self, cx: &mut Cx) {
        let missing: Vec<String> = self.by_node.keys().filter(|n| !n.is_empty() && self.nodes.get("", n).is_none()).cloned().collect();
        for n in missing {
            self.quarantine.entry(n).or_insert(cx.now + QUARANTINE);
        }
        // `discoverDeletedNodes`: nodes whose quarantine is over, read from the API.
        let due: Vec<String> = self.quarantine.iter().filter(|(_, at)| **at <= cx.now).map(|(n, _)| n.clone()).collect();
        let mut deleted = Vec::new();
        for n in due {
            self.quarantine.remove(&n);
            if self.nodes.get("", &n).is_some() {
                continue;
            }
            let get = Request::new(Verb::Get, rid::NODE, "", &n, self.creds());
            match cx.api.handle(req_as(get, NAME, &self.user)) {
                Err(s) if s.code == 404 => deleted.push(n),
                // Found after all, or the API server did not answer: looked at again at
                // the next pass if still missing.
                _ => {}
            }
        }
        for n in deleted {
            let pods = self.pods_of(self.by_node.get(&n).into_iter().flatten());
            let cond = json!({"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC", "message": "PodGC: node no longer exists"});
            for p in &pods {
                self.mark_failed_and_delete(cx, p, Some(&cond), format!("bound to node {n}, which no longer exists"));
            }
        }
    }

    /// `markFailedAndDeletePodWithCondition`.
    fn mark_failed_and_delete(&mut self, cx: &mut Cx, pod: &Object, condition: Option<&Value>, why: String) {
        let (ns, name) = (api::namespace(pod).to_string(), api::name(pod).to_string());
        if !terminated(pod) {
            let mut holder = json!({"status": pod.get("status").cloned().unwrap_or(json!({}))});
            holder["status"]["phase"] = json!("Failed");
            if let Some(c) = condition {
                let s = |f: &str| get_str(c, &[f]).map(str::to_string);
                let (t, st, reason, msg) = (s("type").unwrap_or_default(), s("status").unwrap_or_default(), s("reason"), s("message"));
                crate::apiserver::set_condition(&mut holder, &t, &st, reason.as_deref(), msg.as_deref(), cx.now);
            }
            let mut body = json!({"metadata": {"uid": api::uid(pod)}});
            body["status"] = holder["status"].take();
            let patch = Request::patch(rid::POD, &ns, &name, crate::apiserver::PatchType::Merge, body, self.creds()).with_sub("status");
            if cx.api.handle(req_as(patch, NAME, &self.user)).is_err() {
                return;
            }
        }
        let mut del = Request::delete(rid::POD, &ns, &name, self.creds());
        del.grace_period = Some(0);
        if cx.api.handle(req_as(del, NAME, &self.user)).is_ok() {
            cx.trace(Flow::ReplicaSetController, "pod-gc", format!("Pod/{ns}/{name}"), "ok", "", format!("pod garbage collector: {why}: force-deleted"));
        }
    }
}

/// `byEvictionAndCreationTimestamp`: evicted pods first, then the oldest, then by name.
fn sort_for_deletion(pods: &mut [Object]) {
    pods.sort_stable_by(|a, b| {
        let evicted = |p: &Value| get_str(p, &["status", "phase"]) == Some("Failed") && get_str(p, &["status", "reason"]) == Some("Evicted");
        let created = |p: &Value| get_str(p, &["metadata", "creationTimestamp"]).unwrap_or("").to_string();
        evicted(b).cmp(&evicted(a)).then_with(|| created(a).cmp(&created(b))).then_with(|| api::name(a).cmp(api::name(b)))
    });
}

impl Controller for PodGcController {
    fn name(&self) -> &'static str {
        NAME
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::POD, rid::NODE]
    }
    fn run(&mut self, cx: &mut Cx) {
        self.sync(cx);
        self.tick_soon(cx);
    }
    fn timer(&mut self, cx: &mut Cx, _key: &str) {
        self.ticking = false;
        self.sync(cx);
        self.gc(cx);
        self.sync(cx);
        self.tick_soon(cx);
    }
    fn restart(&mut self) {
        *self = Self::with_threshold(self.threshold);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicted_pods_go_first_then_the_oldest() {
        let pod = |name: &str, created: &str, reason: Option<&str>| -> Object {
            let mut p = json!({"metadata": {"name": name, "creationTimestamp": created}, "status": {"phase": "Failed"}});
            if let Some(r) = reason {
                p["status"]["reason"] = json!(r);
            }
            Object::new(p)
        };
        let mut pods = vec![
            pod("c", "2026-01-01T00:00:02Z", None),
            pod("b", "2026-01-01T00:00:01Z", None),
            pod("e", "2026-01-01T00:00:09Z", Some("Evicted")),
            pod("a", "2026-01-01T00:00:01Z", None),
        ];
        sort_for_deletion(&mut pods);
        let names: Vec<&str> = pods.iter().map(|p| api::name(p)).collect();
        assert_eq!(names, ["e", "a", "b", "c"]);
        assert!(terminated(&json!({"status": {"phase": "Succeeded"}})));
        assert!(!terminated(&json!({"status": {"phase": "Running"}})));
        assert!(!terminated(&json!({})));
    }
}
