//! The scale benchmark's run, the same natively (`kubeloop bench`) and in the page
//! (`window.wasmBindings.kubeloopBench`): `nodes` workers with room for their share, one
//! Deployment of `pods` replicas applied by an admin, the simulation run until it is quiet.
//! The caller times it with its own clock.

use super::{Action, Cluster, Config};
use crate::apiserver::Credentials;
use crate::foundation::api::rid;
use crate::foundation::sim::Millis;
use crate::foundation::value::json;
use crate::loops::kubelet::node::NodeSpec;

/// etcd's largest recommended quota (8 GiB, the etcd documentation's suggested maximum): a
/// 150,000-pod apply writes more revisions than the 2 GiB default holds before the API
/// server's first compaction, five minutes in.
pub const QUOTA_BYTES: u64 = 8 << 30;

/// The longest simulated time a run may take.
pub const CAP: Millis = 3_600_000;

/// What a run did.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub ready_pods: usize,
    pub simulated_ms: Millis,
    pub api_writes: u64,
    pub wakes: u64,
    pub timers: u64,
}

/// The cluster before the apply: `nodes` workers in three zones, each with room for its
/// share of `pods` (at least the kubelet's default 110).
pub fn cluster(nodes: usize, pods: usize, seed: u64) -> Cluster {
    let per_node = pods.div_ceil(nodes.max(1)).max(1);
    let max_pods = per_node.max(110);
    let specs: Vec<NodeSpec> = (0..nodes)
        .map(|i| {
            let mut n = NodeSpec::worker(&format!("node-{i:05}"), &format!("zone-{}", i % 3), "64", "256Gi");
            n.capacity.insert("pods", json!(max_pods.to_string()));
            n
        })
        .collect();
    Cluster::new(Config { seed, nodes: specs, trace: false, quota_bytes: QUOTA_BYTES, ..Config::default() })
}

/// The Deployment the benchmark applies.
pub fn manifest(pods: usize) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: bench\nspec:\n  replicas: {pods}\n  selector:\n    matchLabels: {{app: bench}}\n  template:\n    metadata:\n      labels: {{app: bench}}\n    spec:\n      containers:\n      - name: app\n        image: registry.example/bench:1.0\n        resources:\n          requests: {{cpu: 10m, memory: 16Mi}}\n"
    )
}

/// The same run as a scenario the page's editor holds (`?bench=NODESxPODS`): the nodes in
/// three zones with room for their share, a quota that holds the apply's revisions, and the
/// Deployment.
pub fn scenario(nodes: usize, pods: usize) -> String {
    let nodes = nodes.clamp(1, super::scenario::MAX_NODES as usize);
    let max_pods = pods.div_ceil(nodes).max(110);
    let mut text = format!(
        "# The scale benchmark: {nodes} nodes, one Deployment of {pods} replicas.\napiVersion: kubeloop.dev/v1alpha1\nkind: Scenario\nmetadata: {{name: bench}}\nspec:\n  etcd: {{quotaBytes: {}Gi}}\n  nodes:\n",
        QUOTA_BYTES >> 30
    );
    for z in 0..3.min(nodes) {
        let count = nodes / 3 + usize::from(z < nodes % 3);
        text += &format!(
            "  - {{name: zone-{z}, count: {count}, capacity: {{cpu: \"64\", memory: 256Gi, pods: \"{max_pods}\"}}, labels: {{topology.kubernetes.io/zone: zone-{z}}}}}\n"
        );
    }
    text + "---\n" + &manifest(pods)
}

/// Apply the Deployment to `cluster` and run until quiet (or [`CAP`]).
pub fn run(cluster: &mut Cluster, pods: usize) -> Result<Outcome, String> {
    let out = cluster.act(Credentials::Token("admin-token".into()), Action::Apply { text: manifest(pods), file: "bench.yaml".into() });
    if !out.output.iter().all(|l| l.ends_with("created")) {
        return Err(out.output.join("\n"));
    }
    let end = cluster.run_to_quiet(CAP);
    let ready_pods = cluster.api.store.list(rid::POD, None).filter(|p| crate::foundation::pod::pod_is_ready(p)).count();
    Ok(Outcome { ready_pods, simulated_ms: end, api_writes: cluster.api.trace.writes, wakes: cluster.tasks_run[0], timers: cluster.tasks_run[1] })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_run_brings_every_pod_ready() {
        let mut c = cluster(3, 20, 1);
        let o = run(&mut c, 20).expect("applied");
        assert_eq!(o.ready_pods, 20);
        assert!(o.api_writes > 20 * 5, "{o:?}");
    }

    #[test]
    fn the_scenario_declares_the_same_cluster() {
        let mut sc = crate::cluster::scenario::Scenario::default();
        crate::cluster::scenario::add_file(&mut sc, "bench.yaml", &scenario(5000, 150_000));
        assert!(sc.errors.is_empty(), "{:?}", sc.errors);
        let nodes = sc.nodes.expect("nodes");
        assert_eq!(nodes.len(), 5000);
        assert_eq!(nodes.iter().filter(|n| n.labels.get("topology.kubernetes.io/zone") == Some(&json!("zone-2"))).count(), 1666);
        assert_eq!(nodes[0].capacity.get("pods"), Some(&json!("110")));
        assert_eq!(sc.etcd_quota, Some(QUOTA_BYTES));
        assert!(matches!(&sc.steps[..], [crate::cluster::Step { action: Action::Apply { text, .. }, .. }] if *text == manifest(150_000).trim_end()));
    }
}
