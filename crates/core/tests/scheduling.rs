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
    let scored = c.api.trace.records().iter().find(|r| r.stage == "score").map(|r| r.message.clone()).unwrap();
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

fn worker(name: &str, zone: &str) -> kubeloop_core::cluster::NodeSpec {
    kubeloop_core::cluster::NodeSpec::worker(name, zone, "4", "8Gi")
}

fn node_of(c: &Cluster, ns: &str, name: &str) -> Option<String> {
    c.api.store.get_by(rid::POD, ns, name).and_then(|p| get_str(p, &["spec", "nodeName"])).map(str::to_string)
}

fn scheduled_message(c: &Cluster, ns: &str, name: &str) -> String {
    let p = c.api.store.get_by(rid::POD, ns, name).expect("pod");
    kubeloop_core::foundation::pod::condition(p, "PodScheduled").and_then(|c| get_str(c, &["message"])).unwrap_or("").to_string()
}

#[test]
fn nodes_report_ephemeral_storage_and_pods_requesting_it_schedule() {
    // Two nodes: one as the default worker (no ephemeral-storage in its capacity), one
    // whose scenario capacity sets its own.
    let mut small = worker("small", "zone-a");
    small.capacity.insert("ephemeral-storage", kubeloop_core::foundation::value::json!("10Gi"));
    let mut c = Cluster::new(Config { nodes: vec![worker("disk", "zone-a"), small], ..Config::default() });
    let disk = c.api.store.get_by(rid::NODE, "", "disk").expect("node");
    // kind reports the host's disk, capacity and allocatable alike (its kubelet config sets
    // the nodefs eviction thresholds to 0%).
    assert_eq!(get_str(disk, &["status", "capacity", "ephemeral-storage"]), Some("102626232Ki"));
    assert_eq!(get_str(disk, &["status", "allocatable", "ephemeral-storage"]), Some("102626232Ki"));
    let small = c.api.store.get_by(rid::NODE, "", "small").expect("node");
    assert_eq!(get_str(small, &["status", "capacity", "ephemeral-storage"]), Some("10Gi"));
    assert_eq!(get_str(small, &["status", "allocatable", "ephemeral-storage"]), Some("10Gi"));
    let pod = |n: &str, node: &str, q: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {n}}}\nspec:\n  nodeSelector: {{kubernetes.io/hostname: {node}}}\n  containers:\n  - name: c\n    image: nginx:1.27\n    resources: {{requests: {{ephemeral-storage: {q}}}}}\n")
    };
    run(&mut c, Action::Apply { text: pod("scratch", "disk", "2Gi"), file: "a.yaml".into() });
    assert_eq!(node_of(&c, "default", "scratch").as_deref(), Some("disk"), "{}", scheduled_message(&c, "default", "scratch"));
    run(&mut c, Action::Apply { text: pod("fits", "small", "6Gi"), file: "b.yaml".into() });
    assert_eq!(node_of(&c, "default", "fits").as_deref(), Some("small"), "{}", scheduled_message(&c, "default", "fits"));
    // 6Gi of the small node's 10Gi are taken: another 6Gi does not fit there.
    run(&mut c, Action::Apply { text: pod("toobig", "small", "6Gi"), file: "c.yaml".into() });
    assert_eq!(node_of(&c, "default", "toobig"), None);
    assert_eq!(
        scheduled_message(&c, "default", "toobig"),
        "0/2 nodes are available: 1 Insufficient ephemeral-storage, 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
    );
}

#[test]
fn a_deleted_node_no_longer_counts_in_failed_scheduling() {
    let mut c = Cluster::new(Config::default());
    // The scheduler has seen all four nodes (it placed a pod) before node-c goes.
    run(&mut c, Action::Apply { text: deployment("web", 1, ""), file: "web.yaml".into() });
    assert_eq!(placement(&c, "web-").len(), 1);
    assert_eq!(run(&mut c, Action::Kubectl("delete node node-c".into())), vec!["node \"node-c\" deleted"]);
    let pod =
        "apiVersion: v1\nkind: Pod\nmetadata: {name: nowhere}\nspec:\n  nodeSelector: {disktype: ssd}\n  containers:\n  - name: c\n    image: nginx:1.27\n";
    run(&mut c, Action::Apply { text: pod.into(), file: "p.yaml".into() });
    assert_eq!(
        scheduled_message(&c, "default", "nowhere"),
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    );
}

#[test]
fn existing_pods_anti_affinity_applies_per_zone_and_honours_term_namespaces() {
    // Two nodes in each of zone-a and zone-b, one in zone-c. A guard in namespace ops sits
    // on one node of each zone; its required anti-affinity keeps app=web pods out of its
    // whole zone when the term's namespaces cover the web pod's namespace.
    let nodes = vec![worker("a1", "zone-a"), worker("a2", "zone-a"), worker("b1", "zone-b"), worker("b2", "zone-b"), worker("c1", "zone-c")];
    let mut c = Cluster::new(Config { nodes, ..Config::default() });
    let ns = "apiVersion: v1\nkind: Namespace\nmetadata: {name: ops}\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n  labels: {team: web}\n";
    run(&mut c, Action::Apply { text: ns.into(), file: "ns.yaml".into() });
    let guard = |name: &str, node: &str, ns_fields: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: ops}}\nspec:\n  nodeName: {node}\n  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - topologyKey: topology.kubernetes.io/zone\n        labelSelector:\n          matchLabels: {{app: web}}\n{ns_fields}  containers:\n  - name: c\n    image: nginx:1.27\n"
        )
    };
    // zone-a: the term names the shop namespace.
    run(&mut c, Action::Apply { text: guard("guard-a", "a1", "        namespaces: [shop]\n"), file: "ga.yaml".into() });
    // zone-b: the term selects namespaces labelled team=web.
    run(&mut c, Action::Apply { text: guard("guard-b", "b1", "        namespaceSelector:\n          matchLabels: {team: web}\n"), file: "gb.yaml".into() });
    // zone-c: no namespaces and no selector: only the guard's own namespace (ops).
    run(&mut c, Action::Apply { text: guard("guard-c", "c1", ""), file: "gc.yaml".into() });
    let web = |name: &str, zone: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: shop\n  labels: {{app: web}}\nspec:\n  nodeSelector: {{topology.kubernetes.io/zone: {zone}}}\n  containers:\n  - name: c\n    image: nginx:1.27\n")
    };
    run(&mut c, Action::Apply { text: web("web-a", "zone-a"), file: "wa.yaml".into() });
    run(&mut c, Action::Apply { text: web("web-b", "zone-b"), file: "wb.yaml".into() });
    run(&mut c, Action::Apply { text: web("web-c", "zone-c"), file: "wc.yaml".into() });
    assert_eq!(node_of(&c, "shop", "web-a"), None, "a2 is in guard-a's zone");
    assert_eq!(
        scheduled_message(&c, "shop", "web-a"),
        "0/5 nodes are available: 2 node(s) didn't satisfy existing pods anti-affinity rules, 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/5 nodes are available: 2 No preemption victims found for incoming pod, 3 Preemption is not helpful for scheduling."
    );
    assert_eq!(node_of(&c, "shop", "web-b"), None, "b2 is in guard-b's zone");
    assert_eq!(node_of(&c, "shop", "web-c").as_deref(), Some("c1"), "guard-c's term is about namespace ops only");
    // The same web pod in namespace ops is kept out of zone-c by guard-c.
    let ops_web = web("web-ops", "zone-c").replace("namespace: shop", "namespace: ops");
    run(&mut c, Action::Apply { text: ops_web, file: "wo.yaml".into() });
    assert_eq!(node_of(&c, "ops", "web-ops"), None);
}

fn bare_pod(name: &str, node: &str, labels: &str, requests: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  labels: {{{labels}}}\nspec:\n  nodeName: {node}\n  containers:\n  - name: c\n    image: nginx:1.27\n    resources: {{requests: {{{requests}}}}}\n"
    )
}

#[test]
fn do_not_schedule_spread_constraints_are_not_scored() {
    // zone-a holds two matching pods, zone-b one busy pod that does not match. A pod whose
    // only constraint is DoNotSchedule (maxSkew 3: both zones pass the filter) is placed by
    // the resource scores alone, on the emptier node n-a: PodTopologySpread scores only
    // ScheduleAnyway constraints.
    let nodes =
        vec![kubeloop_core::cluster::NodeSpec::worker("n-a", "zone-a", "8", "16Gi"), kubeloop_core::cluster::NodeSpec::worker("n-b", "zone-b", "8", "16Gi")];
    let mut c = Cluster::new(Config { nodes, ..Config::default() });
    run(&mut c, Action::Apply { text: bare_pod("m1", "n-a", "app: s", "cpu: 10m, memory: 10Mi"), file: "m1.yaml".into() });
    run(&mut c, Action::Apply { text: bare_pod("m2", "n-a", "app: s", "cpu: 10m, memory: 10Mi"), file: "m2.yaml".into() });
    run(&mut c, Action::Apply { text: bare_pod("busy", "n-b", "app: other", "cpu: 1, memory: 1Gi"), file: "busy.yaml".into() });
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: incoming\n  labels: {app: s}\nspec:\n  topologySpreadConstraints:\n  - maxSkew: 3\n    topologyKey: topology.kubernetes.io/zone\n    whenUnsatisfiable: DoNotSchedule\n    labelSelector:\n      matchLabels: {app: s}\n  containers:\n  - name: c\n    image: nginx:1.27\n";
    run(&mut c, Action::Apply { text: pod.into(), file: "p.yaml".into() });
    assert_eq!(node_of(&c, "default", "incoming").as_deref(), Some("n-a"));
}

#[test]
fn schedule_anyway_spread_scores_nodes_without_the_key_lowest() {
    // rack r1 has two nodes (one matching pod on r1-x); n-none has no rack label. Upstream
    // ignores nodes missing a constraint's topology key (score 0) and gives both r1 nodes
    // the same spread score, so the emptier r1 node wins.
    let mut nodes = vec![worker("r1-x", "zone-a"), worker("r1-y", "zone-a"), worker("n-none", "zone-a")];
    for n in &mut nodes[..2] {
        n.labels.insert("rack", kubeloop_core::foundation::value::json!("r1"));
    }
    let mut c = Cluster::new(Config { nodes, ..Config::default() });
    run(&mut c, Action::Apply { text: bare_pod("m1", "r1-x", "app: s", "cpu: 100m"), file: "m1.yaml".into() });
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: incoming\n  labels: {app: s}\nspec:\n  topologySpreadConstraints:\n  - maxSkew: 1\n    topologyKey: rack\n    whenUnsatisfiable: ScheduleAnyway\n    labelSelector:\n      matchLabels: {app: s}\n  containers:\n  - name: c\n    image: nginx:1.27\n";
    run(&mut c, Action::Apply { text: pod.into(), file: "p.yaml".into() });
    assert_eq!(node_of(&c, "default", "incoming").as_deref(), Some("r1-y"));
}

/// The system default's zone spreading reads per-owner zone counts the scheduler keeps; in
/// this (debug) build each is checked against the sum over every node as pods come and go,
/// a node changes zone and another is deleted.
#[test]
fn kept_zone_counts_follow_pods_and_nodes() {
    use kubeloop_core::loops::kubelet::node::NodeSpec;
    let nodes = (0..6).map(|i| NodeSpec::worker(&format!("n{i}"), &format!("zone-{}", i % 3), "8", "32Gi")).collect();
    let mut c = Cluster::new(Config { seed: 3, nodes, trace: false, ..Config::default() });
    let apply = |c: &mut Cluster, n: u32| {
        c.act(admin(), Action::Apply { text: deployment("web", n, ""), file: "d.yaml".into() });
    };
    apply(&mut c, 30);
    c.run_until(10_000);
    c.act(admin(), Action::Kubectl("label node n1 topology.kubernetes.io/zone=zone-9 --overwrite".into()));
    apply(&mut c, 10);
    c.run_until(20_000);
    c.act(admin(), Action::Kubectl("delete node n2".into()));
    apply(&mut c, 40);
    c.run_until(60_000);
    let placed = placement(&c, "web-");
    assert_eq!(placed.get("<none>"), None, "every pod placed: {placed:?}");
    assert_eq!(placed.values().sum::<usize>(), 40);
    assert!(placed.contains_key("n1"), "the relabelled node still takes pods: {placed:?}");
}
