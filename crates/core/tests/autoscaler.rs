//! The cluster autoscaler end to end: Pending pods grow a node group after its boot time,
//! the group's max holds, and nodes left underused are drained and removed unless a
//! PodDisruptionBudget forbids it.

// Tests build their fixtures in memory; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::Credentials;
use kubeloop_core::cluster::scenario::{add_file, Scenario};
use kubeloop_core::cluster::{Action, Cluster};
use kubeloop_core::foundation::api::{self, get_array, get_str, rid};

const SCENARIO: &str = "apiVersion: kubeloop.dev/v1alpha1
kind: Scenario
metadata: {name: autoscaling}
spec:
  nodes:
  - name: control-plane
    capacity: {cpu: \"4\", memory: 8Gi}
    labels: {node-role.kubernetes.io/control-plane: \"\"}
    taints: [{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}]
  nodeGroups:
  - name: workers
    min: 1
    max: 3
    bootTime: 90s
    template:
      capacity: {cpu: \"2\", memory: 4Gi}
      labels: {pool: workers}
";

fn deployment(replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n        resources: {{requests: {{cpu: 900m}}}}\n"
    )
}

fn cluster() -> Cluster {
    let mut sc = Scenario::default();
    add_file(&mut sc, "autoscaling.yaml", SCENARIO);
    assert!(sc.errors.is_empty(), "{:?}", sc.errors);
    Cluster::new(sc.config(None, true))
}

fn apply(c: &mut Cluster, text: &str) -> Vec<String> {
    c.act(Credentials::Token("admin-token".into()), Action::Apply { text: text.into(), file: "test.yaml".into() }).output
}

fn kubectl(c: &mut Cluster, cmd: &str) -> Vec<String> {
    c.act(Credentials::Token("admin-token".into()), Action::Kubectl(cmd.into())).output
}

fn events(c: &Cluster, reason: &str) -> Vec<String> {
    c.api
        .store
        .list(rid::EVENT, None)
        .filter(|e| get_str(e, &["reason"]) == Some(reason))
        .map(|e| {
            format!(
                "{}/{}: {}",
                get_str(e, &["involvedObject", "kind"]).unwrap_or(""),
                get_str(e, &["involvedObject", "name"]).unwrap_or(""),
                get_str(e, &["message"]).unwrap_or("")
            )
        })
        .collect()
}

fn group_nodes(c: &Cluster) -> Vec<String> {
    c.api.store.list(rid::NODE, None).map(|n| api::name(n).to_string()).filter(|n| n.starts_with("workers-")).collect()
}

fn pod_nodes(c: &Cluster) -> Vec<(String, String)> {
    c.api
        .store
        .list(rid::POD, Some("default"))
        .filter(|p| !api::is_deleting(p))
        .map(|p| (get_str(p, &["status", "phase"]).unwrap_or("").to_string(), get_str(p, &["spec", "nodeName"]).unwrap_or("<none>").to_string()))
        .collect()
}

fn trace(c: &Cluster, component: &str) -> Vec<String> {
    c.api.trace.records().iter().filter(|r| r.component == component && r.request.is_none()).map(|r| format!("{} {}", r.t, r.message)).collect()
}

fn node_ready(c: &Cluster, name: &str) -> bool {
    c.api.store.get_by(rid::NODE, "", name).is_some_and(|n| {
        get_array(n, &["status", "conditions"]).iter().any(|c| get_str(c, &["type"]) == Some("Ready") && get_str(c, &["status"]) == Some("True"))
    })
}

/// Two pods on the group's one node, then six: four stay Pending until two nodes boot.
fn scaled_up() -> Cluster {
    let mut c = cluster();
    apply(&mut c, &deployment(2));
    c.run_to_quiet(600_000);
    apply(&mut c, &deployment(6));
    c.run_to_quiet(3_600_000);
    c
}

#[test]
fn a_cluster_without_node_groups_has_no_autoscaler() {
    let plain = Cluster::new(kubeloop_core::cluster::Config::default());
    assert!(!plain.controller_names().contains(&"cluster-autoscaler"));
    assert!(plain.api.store.get_by(rid::SERVICEACCOUNT, "kube-system", "cluster-autoscaler").is_none());
    let c = cluster();
    assert_eq!(c.controller_names().last(), Some(&"cluster-autoscaler"), "registered after every other loop");
    assert!(c.api.store.get_by(rid::SERVICEACCOUNT, "kube-system", "cluster-autoscaler").is_some());
    assert_eq!(group_nodes(&c), vec!["workers-1"], "the group's min nodes run from the start");
}

#[test]
fn pending_pods_trigger_a_scale_up_and_run_on_the_nodes_that_boot() {
    let mut c = cluster();
    apply(&mut c, &deployment(2));
    c.run_to_quiet(600_000);
    assert_eq!(pod_nodes(&c), vec![("Running".to_string(), "workers-1".to_string()); 2]);
    let start = c.now;
    apply(&mut c, &deployment(6));
    // Two 900m pods fill a 2-cpu node: four wait for the next scan.
    c.run_until(start + 11_000);
    let pending = pod_nodes(&c).iter().filter(|(phase, _)| phase == "Pending").count();
    assert_eq!(pending, 4);
    let triggered = events(&c, "TriggeredScaleUp");
    assert_eq!(triggered.len(), 4, "{triggered:?}");
    assert!(triggered.iter().all(|e| e.ends_with(": pod triggered scale-up: [{workers 1->3 (max: 3)}]")), "{triggered:?}");
    let decided = c.api.trace.records().iter().find(|r| r.component == "cluster-autoscaler" && r.stage == "scale-up").expect("a scale-up record");
    assert_eq!(decided.flow, kubeloop_core::apiserver::trace::Flow::Pending);
    assert!(decided.message.starts_with("4 pods unschedulable; node group workers can fit them: scaling 1 -> 3 (a node boots in 90s"), "{}", decided.message);
    // The machines boot for 90s before their kubelets register the Nodes.
    let scaled_at = decided.t;
    c.run_until(scaled_at + 89_000);
    assert_eq!(group_nodes(&c), vec!["workers-1"]);
    c.run_until(scaled_at + 90_001);
    assert_eq!(group_nodes(&c), vec!["workers-1", "workers-2", "workers-3"]);
    assert!(!node_ready(&c, "workers-2"), "NotReady until its network is up");
    assert!(c.api.store.get_by(rid::LEASE, "kube-node-lease", "workers-2").is_some());
    c.run_to_quiet(3_600_000);
    assert!(node_ready(&c, "workers-2") && node_ready(&c, "workers-3"));
    let mut placed = pod_nodes(&c);
    placed.sort();
    let expected: Vec<(String, String)> =
        ["workers-1", "workers-1", "workers-2", "workers-2", "workers-3", "workers-3"].iter().map(|n| ("Running".to_string(), n.to_string())).collect();
    assert_eq!(placed, expected);
    assert!(events(&c, "NotTriggerScaleUp").is_empty(), "pods waiting for booting nodes trigger nothing more");
    assert_eq!(events(&c, "TriggeredScaleUp").len(), 4, "one scale-up, not one per scan");
}

#[test]
fn the_groups_max_holds_and_the_pod_is_told_why() {
    let mut c = scaled_up();
    apply(&mut c, &deployment(7));
    c.run_to_quiet(3_600_000);
    assert_eq!(group_nodes(&c), vec!["workers-1", "workers-2", "workers-3"]);
    let pending: Vec<(String, String)> = pod_nodes(&c).into_iter().filter(|(phase, _)| phase == "Pending").collect();
    assert_eq!(pending.len(), 1);
    let why = events(&c, "NotTriggerScaleUp");
    assert_eq!(why.len(), 1, "{why:?}");
    assert!(why[0].ends_with(": pod didn't trigger scale-up: 1 max node group size reached"), "{why:?}");
}

#[test]
fn underused_nodes_are_drained_and_removed_after_the_unneeded_time() {
    let mut c = scaled_up();
    let down = c.now;
    kubectl(&mut c, "scale deployment web --replicas=3");
    // Unneeded for 10 minutes first: at 9 the three nodes are all still there.
    c.run_until(down + 9 * 60_000);
    assert_eq!(group_nodes(&c).len(), 3);
    assert!(events(&c, "ScaleDown").is_empty());
    c.run_to_quiet(3_600_000);
    assert_eq!(group_nodes(&c).len(), 2, "one node's pod moves to the other half-used node");
    let removed = ["workers-1", "workers-2", "workers-3"].into_iter().find(|n| !group_nodes(&c).iter().any(|g| g == n)).expect("a node went");
    let scale_down = events(&c, "ScaleDown");
    assert!(scale_down.contains(&format!("Node/{removed}: marked the node as toBeDeleted/unschedulable")), "{scale_down:?}");
    assert!(scale_down.iter().any(|e| e.starts_with("Pod/web-") && e.ends_with(": deleting pod for node scale down")), "{scale_down:?}");
    assert!(c.api.store.get_by(rid::LEASE, "kube-node-lease", removed).is_none(), "the Lease goes with its Node");
    let pods = pod_nodes(&c);
    assert_eq!(pods.len(), 3);
    assert!(pods.iter().all(|(phase, node)| phase == "Running" && node != removed), "{pods:?}");
    let tainted = c
        .api
        .trace
        .records()
        .iter()
        .find(|r| r.component == "cluster-autoscaler" && r.message.contains("tainted ToBeDeletedByClusterAutoscaler:NoSchedule"))
        .expect("a taint record");
    assert!(tainted.t >= down + 10 * 60_000, "removed at {} after the scale-down at {down}", tainted.t);
}

#[test]
fn a_budget_that_allows_no_disruption_keeps_the_node() {
    // The same cluster without a budget drains a node and evicts its pod.
    let mut twin = scaled_up();
    kubectl(&mut twin, "scale deployment web --replicas=3");
    twin.run_to_quiet(3_600_000);
    let evicted: Vec<String> = events(&twin, "ScaleDown")
        .iter()
        .filter(|e| e.ends_with(": deleting pod for node scale down"))
        .map(|e| e.trim_start_matches("Pod/").split(':').next().unwrap_or("").to_string())
        .collect();
    assert_eq!(evicted.len(), 1, "{evicted:?}");

    let mut c = scaled_up();
    kubectl(&mut c, "scale deployment web --replicas=3");
    // The three pods that stay may be disrupted by none.
    apply(&mut c, "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web}\nspec:\n  minAvailable: 3\n  selector: {matchLabels: {app: web}}\n");
    c.run_to_quiet(3_600_000);
    c.run_until(c.now + 30 * 60_000);
    let pod = c.api.store.get_by(rid::POD, "default", &evicted[0]).expect("the pod the twin evicted is still there");
    assert!(!api::is_deleting(pod));
    let node = get_str(pod, &["spec", "nodeName"]).unwrap_or("").to_string();
    assert!(group_nodes(&c).contains(&node), "{node} stays");
    assert!(!events(&c, "ScaleDown").iter().any(|e| e.starts_with("Pod/")), "no pod is evicted");
    assert!(events(&c, "ScaleDownFailed").is_empty(), "the budget is read before a drain starts, not found out by it");
    let blocked = trace(&c, "cluster-autoscaler");
    let reason = format!("node {node} is underutilized but can't be removed: not enough pod disruption budget to move default/{}", evicted[0]);
    assert!(blocked.iter().any(|l| l.ends_with(&reason)), "{blocked:?}");
}
