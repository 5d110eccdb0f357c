//! The page's cluster view, kept as a controller keeps its caches: informers on Pods and
//! Nodes, and what the view draws folded in from their deltas (each node's pods and the
//! resources they request, the pods not scheduled, the pods by phase). Drawing a node then
//! costs its own pods, not a walk over every pod of the cluster, so a view of 5,000 nodes
//! draws the few in sight while 150,000 pods change.

use crate::apiserver::store::{EventType, Store};
use crate::foundation::api::{self, get_str, rid, Object};
use crate::foundation::pod::condition;
use crate::loops::informer::Informer;
use crate::loops::scheduler::pod_requests;
use std::collections::{BTreeMap, BTreeSet};

/// What one node holds: its pods (namespace, name) in order, and what the ones still
/// running request.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct NodeTally {
    pub pods: BTreeSet<(String, String)>,
    /// millicores
    pub cpu: i128,
    /// bytes
    pub memory: i128,
}

#[derive(Debug, Clone)]
pub struct NodeView {
    pods: Informer,
    nodes: Informer,
    /// node name -> its pods; "" holds the pods not scheduled.
    by_node: BTreeMap<String, NodeTally>,
    /// The nodes' names in order, for the rows in sight.
    names: Vec<String>,
    /// status.phase -> pods
    phases: BTreeMap<String, usize>,
    ready_nodes: usize,
}

impl Default for NodeView {
    fn default() -> Self {
        NodeView {
            pods: Informer::new(rid::POD),
            nodes: Informer::new(rid::NODE),
            by_node: BTreeMap::new(),
            names: Vec::new(),
            phases: BTreeMap::new(),
            ready_nodes: 0,
        }
    }
}

fn node_of(p: &Object) -> &str {
    get_str(p, &["spec", "nodeName"]).unwrap_or("")
}

fn phase(p: &Object) -> &str {
    get_str(p, &["status", "phase"]).unwrap_or("Pending")
}

fn still_running(p: &Object) -> bool {
    !matches!(phase(p), "Succeeded" | "Failed")
}

fn node_ready(n: &Object) -> bool {
    condition(n, "Ready").and_then(|c| get_str(c, &["status"])) == Some("True")
}

impl NodeView {
    /// Fold in what changed in `store` since the last look.
    pub fn sync(&mut self, store: &Store) {
        for d in self.pods.sync(store).deltas {
            if let Some(old) = &d.old {
                self.forget(old);
            }
            if d.kind != EventType::Deleted {
                self.count(&d.object);
            }
        }
        let nodes = self.nodes.sync(store);
        for d in &nodes.deltas {
            let was = d.old.as_ref().is_some_and(node_ready);
            let is = d.kind != EventType::Deleted && node_ready(&d.object);
            self.ready_nodes = self.ready_nodes + usize::from(is) - usize::from(was);
        }
        if nodes.deltas.iter().any(|d| d.kind != EventType::Modified) {
            self.names = self.nodes.list(None).map(|n| api::name(n).to_string()).collect();
        }
    }

    fn count(&mut self, p: &Object) {
        let t = self.by_node.entry(node_of(p).to_string()).or_default();
        t.pods.insert((api::namespace(p).to_string(), api::name(p).to_string()));
        if still_running(p) {
            let r = pod_requests(p);
            t.cpu += r.cpu;
            t.memory += r.memory / 1000;
        }
        *self.phases.entry(phase(p).to_string()).or_default() += 1;
    }

    fn forget(&mut self, p: &Object) {
        let node = node_of(p);
        if let Some(t) = self.by_node.get_mut(node) {
            t.pods.remove(&(api::namespace(p).to_string(), api::name(p).to_string()));
            if still_running(p) {
                let r = pod_requests(p);
                t.cpu -= r.cpu;
                t.memory -= r.memory / 1000;
            }
            if t.pods.is_empty() {
                self.by_node.remove(node);
            }
        }
        if let Some(n) = self.phases.get_mut(phase(p)) {
            *n -= 1;
            if *n == 0 {
                self.phases.remove(phase(p));
            }
        }
    }

    /// The nodes in name order.
    pub fn node_names(&self) -> &[String] {
        &self.names
    }

    pub fn node(&self, name: &str) -> Option<&Object> {
        self.nodes.get("", name)
    }

    /// A node's pods and what they request; the pods not scheduled for `""`.
    pub fn on_node(&self, name: &str) -> Option<&NodeTally> {
        self.by_node.get(name)
    }

    pub fn pod(&self, namespace: &str, name: &str) -> Option<&Object> {
        self.pods.get(namespace, name)
    }

    /// Pods by `status.phase`, in name order.
    pub fn phases(&self) -> &BTreeMap<String, usize> {
        &self.phases
    }

    pub fn pod_count(&self) -> usize {
        self.pods.len()
    }

    pub fn ready_nodes(&self) -> usize {
        self.ready_nodes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::Sandbox;

    /// What the view holds, computed again from the whole store.
    fn from_scratch(store: &Store) -> (BTreeMap<String, NodeTally>, BTreeMap<String, usize>, usize) {
        let mut by_node: BTreeMap<String, NodeTally> = BTreeMap::new();
        let mut phases: BTreeMap<String, usize> = BTreeMap::new();
        for p in store.list(rid::POD, None) {
            let t = by_node.entry(node_of(p).to_string()).or_default();
            t.pods.insert((api::namespace(p).to_string(), api::name(p).to_string()));
            if still_running(p) {
                let r = pod_requests(p);
                t.cpu += r.cpu;
                t.memory += r.memory / 1000;
            }
            *phases.entry(phase(p).to_string()).or_default() += 1;
        }
        let ready = store.list(rid::NODE, None).filter(|n| node_ready(n)).count();
        (by_node, phases, ready)
    }

    #[test]
    fn the_view_follows_pods_as_they_are_scheduled_finish_and_go() {
        let text = "apiVersion: kubeloop.dev/v1alpha1\nkind: Scenario\nspec:\n  nodes:\n  - {name: w, count: 3, capacity: {cpu: \"4\", memory: 8Gi}}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 7\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - {name: c, image: nginx:1.27, resources: {requests: {cpu: 100m, memory: 64Mi}}}\n---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: once}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - {name: c, image: busybox:1.36, command: [sh, -c, 'exit 0'], resources: {requests: {cpu: 1}}}\n";
        let mut sb = Sandbox::new(text, Some(3));
        let mut view = NodeView::default();
        let mut seen = BTreeSet::new();
        for _ in 0..60 {
            sb.advance(500);
            view.sync(&sb.cluster.api.store);
            let (by_node, phases, ready) = from_scratch(&sb.cluster.api.store);
            assert_eq!(view.by_node, by_node, "at {}", sb.cluster.now);
            assert_eq!(view.phases, phases);
            assert_eq!(view.ready_nodes, ready);
            assert_eq!(view.node_names(), ["w-1", "w-2", "w-3"]);
            seen.extend(phases.keys().cloned());
        }
        // Pods went from Pending to Running, and the Job's to Succeeded (requests no longer counted).
        assert!(seen.contains("Pending") && seen.contains("Running") && seen.contains("Succeeded"), "{seen:?}");
        assert_eq!(view.pod_count(), 8);
        let used: i128 = view.by_node.iter().filter(|(n, _)| !n.is_empty()).map(|(_, t)| t.cpu).sum();
        assert_eq!(used, 700);
        // Scaled to nothing: the pods leave their nodes.
        sb.kubectl("scale deployment web --replicas=0");
        sb.advance(60_000);
        view.sync(&sb.cluster.api.store);
        assert_eq!(view.by_node, from_scratch(&sb.cluster.api.store).0);
        assert_eq!(view.pod_count(), 1);
        // A node that stops reporting is counted out of the Ready ones.
        sb.fault("nodeDown", "w-2").expect("a node of the cluster");
        sb.advance(60_000);
        view.sync(&sb.cluster.api.store);
        assert_eq!(view.ready_nodes(), 2);
        assert_eq!(view.ready_nodes(), from_scratch(&sb.cluster.api.store).2);
    }
}
