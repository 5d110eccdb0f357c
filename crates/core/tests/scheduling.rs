//! Placement decisions and the FailedScheduling messages kube-scheduler composes.

// Tests build their fixtures in memory; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::Credentials;
use kubeloop_core::cluster::{Action, Cluster, Config};
use kubeloop_core::foundation::api::{self, get_str, rid};
use std::collections::BTreeMap;

fn admin() -> Credentials {
    Credentials::Token("admin-token".into())
}

fn run(c: &mut Cluster, action: Action) -> Vec<String> {
    let out = c.act(admin(), action).output;
    c.run_to_quiet(600_000);
    out
}

fn deployment(name: &str, replicas: u32, extra_spec: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n{extra_spec}      containers:\n      - name: app\n        image: nginx:1.27\n"
    )
}

fn placement(c: &Cluster, prefix: &str) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for p in c.api.store.list(rid::POD, None).filter(|p| api::name(p).starts_with(prefix)) {
        *m.entry(get_str(p, &["spec", "nodeName"]).unwrap_or("<none>").to_string()).or_default() += 1;
    }
    m
}

fn pending_message(c: &Cluster, prefix: &str) -> Option<String> {
    c.api
        .store
        .list(rid::POD, None)
        .filter(|p| api::name(p).starts_with(prefix) && get_str(p, &["spec", "nodeName"]).is_none())
        .find_map(|p| kubeloop_core::foundation::pod::condition(p, "PodScheduled").and_then(|c| get_str(c, &["message"])).map(str::to_string))
}

#[test]
fn topology_spread_puts_two_pods_in_each_zone() {
    let mut c = Cluster::new(Config::default());
    let spread = "      topologySpreadConstraints:\n      - maxSkew: 1\n        topologyKey: topology.kubernetes.io/zone\n        whenUnsatisfiable: DoNotSchedule\n        labelSelector:\n          matchLabels: {app: spread}\n";
    run(&mut c, Action::Apply { text: deployment("spread", 6, spread), file: "spread.yaml".into() });
    let p = placement(&c, "spread-");
    assert_eq!(p, BTreeMap::from([("node-a".to_string(), 2), ("node-b".to_string(), 2), ("node-c".to_string(), 2)]));
}

#[test]
fn required_anti_affinity_leaves_the_fourth_replica_pending() {
    let mut c = Cluster::new(Config::default());
    let anti = "      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n          - topologyKey: kubernetes.io/hostname\n            labelSelector:\n              matchLabels: {app: solo}\n";
    run(&mut c, Action::Apply { text: deployment("solo", 4, anti), file: "solo.yaml".into() });
    let p = placement(&c, "solo-");
    assert_eq!(p.get("<none>"), Some(&1));
    assert_eq!(p.len(), 4, "one per worker and one pending: {p:?}");
    assert_eq!(
        pending_message(&c, "solo-").as_deref(),
        Some("0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 node(s) didn't match pod anti-affinity rules. preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod.")
    );
}

#[test]
fn a_cordoned_node_gets_no_new_pods_and_uncordoning_lets_pending_pods_in() {
    let mut c = Cluster::new(Config::default());
    for n in ["node-a", "node-b", "node-c"] {
        let out = run(&mut c, Action::Kubectl(format!("cordon {n}")));
        assert_eq!(out, vec![format!("node/{n} cordoned")]);
    }
    assert_eq!(run(&mut c, Action::Kubectl("cordon node-a".into())), vec!["node/node-a already cordoned"]);
    run(&mut c, Action::Apply { text: deployment("web", 2, ""), file: "web.yaml".into() });
    assert_eq!(
        pending_message(&c, "web-").as_deref(),
        Some("0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 node(s) were unschedulable. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.")
    );
    assert_eq!(run(&mut c, Action::Kubectl("uncordon node-b".into())), vec!["node/node-b uncordoned"]);
    assert_eq!(placement(&c, "web-"), BTreeMap::from([("node-b".to_string(), 2)]), "retried after the node changed");
}

#[test]
fn host_ports_conflict_on_a_node() {
    let mut nodes = kubeloop_core::cluster::default_nodes();
    nodes.truncate(2);
    let mut c = Cluster::new(Config { nodes, ..Config::default() });
    let pod = |n: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {n}}}\nspec:\n  containers:\n  - name: c\n    image: nginx:1.27\n    ports:\n    - {{containerPort: 80, hostPort: 8080}}\n")
    };
    run(&mut c, Action::Apply { text: pod("first"), file: "a.yaml".into() });
    run(&mut c, Action::Apply { text: pod("second"), file: "b.yaml".into() });
    let second = c.api.store.get_by(rid::POD, "default", "second").unwrap();
    let msg = kubeloop_core::foundation::pod::condition(second, "PodScheduled").and_then(|c| get_str(c, &["message"])).unwrap_or("").to_string();
    assert_eq!(msg, "0/2 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, 1 node(s) had untolerated taint(s). preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.");
}

#[test]
fn large_clusters_score_a_sample_of_nodes_and_spread_replicas() {
    let nodes: Vec<_> = (0..300).map(|i| kubeloop_core::cluster::NodeSpec::worker(&format!("n{i:03}"), &format!("zone-{}", i % 3), "8", "16Gi")).collect();
    let mut c = Cluster::new(Config { nodes, trace: true, ..Config::default() });
    run(&mut c, Action::Apply { text: deployment("wide", 30, ""), file: "wide.yaml".into() });
    // Adaptive percentageOfNodesToScore: max(5, 50 - 300/125)% = 48% of 300 = 144 nodes.
    let scored = c.api.trace.records.iter().find(|r| r.stage == "score").map(|r| r.message.clone()).unwrap();
    assert!(scored.starts_with("144 of 300 nodes feasible"), "{scored}");
    let p = placement(&c, "wide-");
    assert!(p.values().all(|n| *n == 1), "default spreading puts one replica per node: {p:?}");
}

#[test]
fn petabyte_requests_neither_overflow_nor_wrap_into_a_fit() {
    // 8Ei of memory is past what i64 milli-bytes hold (about 8Pi): the node's allocatable
    // saturates, and the scheduler's scores and sums and describe's totals must neither
    // overflow (a panic) nor wrap (a pod that does not fit placed anyway).
    // Two nodes, so that the scheduler scores them (one feasible node is not scored).
    let nodes = ["big", "big2"].map(|n| kubeloop_core::cluster::NodeSpec::worker(n, "zone-a", "8", "8Ei")).to_vec();
    let mut c = Cluster::new(Config { nodes, ..Config::default() });
    let spec = "      containers:\n      - name: app\n        image: nginx:1.27\n        resources: {requests: {memory: 3Pi}}\n";
    let d = deployment("huge", 5, "").replace("      containers:\n      - name: app\n        image: nginx:1.27\n", spec);
    run(&mut c, Action::Apply { text: d, file: "d.yaml".into() });
    assert_eq!(
        placement(&c, "huge-"),
        BTreeMap::from([("<none>".to_string(), 1), ("big".to_string(), 2), ("big2".to_string(), 2)]),
        "{:?}",
        pending_message(&c, "huge-")
    );
    let msg = pending_message(&c, "huge-").unwrap();
    assert!(msg.contains("Insufficient memory"), "{msg}");
    let out = run(&mut c, Action::Kubectl("describe node big".into())).join("\n");
    assert!(out.contains("Allocated resources:"), "{out}");
}
