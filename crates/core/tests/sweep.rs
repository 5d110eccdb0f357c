//! The seed sweep: generated scenarios hold their invariants and replay identically, the
//! checker catches what it is meant to catch, the minimizer keeps only what a failure
//! needs, and the bugs the sweep found (`tests/sweep/*.yaml`) stay fixed.

// Tests read the regression scenarios from the repository.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::cluster::sweep::{self, Plan, DEFAULT_DURATION, SETTLE};
use kubeloop_core::cluster::Cluster;
use kubeloop_core::foundation::api::{get_array, get_str, rid};

const HALF_HOUR: u64 = 30 * 60 * 1000;

fn regression(name: &str) -> String {
    let path = format!("{}/../../tests/sweep/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn cluster_after(text: &str, end: u64) -> Cluster {
    let sc = sweep::scenario(text).expect("the scenario parses");
    let mut c = Cluster::new(sc.config(None, true));
    c.add_steps(sc.steps.clone());
    c.run_until(end);
    c
}

#[test]
fn every_scenario_the_sweep_found_now_holds() {
    let dir = format!("{}/../../tests/sweep", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(&dir).expect("tests/sweep").map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert!(names.len() >= 3, "{names:?}");
    for n in names {
        if let Err(v) = sweep::run(&regression(&n), DEFAULT_DURATION) {
            panic!("{n}: {v}");
        }
    }
}

#[test]
fn the_pod_garbage_collector_deletes_pods_of_a_deleted_node() {
    let c = cluster_after(&regression("orphaned-pods.yaml"), DEFAULT_DURATION);
    assert!(c.api.store.list(rid::POD, None).all(|p| get_str(p, &["spec", "nodeName"]) != Some("node-c")));
    // Marked Failed with the DisruptionTarget condition, then deleted with grace period 0,
    // 40 to 60 seconds after the node went (at 900 s).
    let gc: Vec<_> = c.api.trace.requests().iter().filter(|r| r.user == "system:serviceaccount:kube-system:pod-garbage-collector").collect();
    let verbs: Vec<(&str, u16)> = gc.iter().filter(|r| r.verb != "get").map(|r| (r.verb.as_str(), r.code)).collect();
    assert_eq!(verbs, [("patch", 200), ("delete", 200)], "{gc:?}");
    let deleted_at = gc.last().unwrap().t;
    assert!((940_000..=960_000).contains(&deleted_at), "deleted at {deleted_at}");
    let msg = c.api.trace.records().iter().find(|r| r.stage == "pod-gc").map(|r| r.message.clone());
    assert_eq!(msg.as_deref(), Some("pod garbage collector: bound to node node-c, which no longer exists: force-deleted"));
}

#[test]
fn pods_are_ready_again_when_their_node_returns() {
    let c = cluster_after(&regression("ready-after-node-returns.yaml"), DEFAULT_DURATION);
    let on_b: Vec<_> = c.api.store.list(rid::POD, None).filter(|p| get_str(p, &["spec", "nodeName"]) == Some("node-b")).collect();
    assert_eq!(on_b.len(), 1);
    let ready = get_array(on_b[0], &["status", "conditions"]).iter().find(|c| get_str(c, &["type"]) == Some("Ready")).cloned();
    assert_eq!(ready.as_ref().and_then(|r| get_str(r, &["status"])), Some("True"), "{ready:?}");
}

#[test]
fn generated_seeds_hold_and_replay_identically() {
    for seed in 1..=3 {
        let text = sweep::generate(seed, HALF_HOUR).render();
        let a = sweep::run(&text, HALF_HOUR).unwrap_or_else(|v| panic!("seed {seed}: {v}"));
        let b = sweep::run(&text, HALF_HOUR).unwrap();
        assert_eq!(a, b, "seed {seed} replays");
        assert!(a.checks > a.tasks && a.requests > 100, "seed {seed}: {a:?}");
    }
    assert_ne!(sweep::generate(1, HALF_HOUR), sweep::generate(2, HALF_HOUR));
}

#[test]
fn a_plan_renders_to_the_scenario_it_describes() {
    for seed in [7, 40] {
        let plan = sweep::generate(seed, DEFAULT_DURATION);
        let sc = sweep::scenario(&plan.render()).unwrap_or_else(|v| panic!("seed {seed}: {v}"));
        assert_eq!(sc.steps.len(), plan.steps.len(), "seed {seed}");
        assert!(plan.steps.iter().all(|(at, _)| *at <= DEFAULT_DURATION - SETTLE), "seed {seed}: a step in the quiet end");
    }
}

#[test]
fn a_workload_that_cannot_converge_is_reported() {
    let text = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: forever}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: busybox:1.36, command: [sleep, '100000']}]\n";
    let v = sweep::run(text, DEFAULT_DURATION).expect_err("a Job that sleeps past the end does not converge");
    assert_eq!(v.invariant, "every workload converges once faults clear");
    assert!(v.message.contains("forever"), "{v}");
}

#[test]
fn the_minimizer_keeps_only_the_steps_a_failure_needs() {
    let steps: Vec<(u64, String)> = (0..13).map(|i| (i * 1000, format!("kubectl: \"step {i}\""))).collect();
    let plan = Plan { seed: 9, end: DEFAULT_DURATION, steps };
    let broken = sweep::Violation { invariant: "synthetic", t: 0, message: String::new() };
    let mut runs = 0;
    let small = sweep::minimize(&plan, &broken, |p| {
        runs += 1;
        let has = |i: u64| p.steps.iter().any(|(at, _)| *at == i * 1000);
        (has(3) && has(11)).then(|| broken.clone())
    });
    let kept: Vec<u64> = small.steps.iter().map(|(at, _)| at / 1000).collect();
    assert_eq!(kept, [3, 11]);
    assert!(runs < 40, "{runs} trial runs");
}

#[test]
fn a_writer_that_spins_is_reported() {
    use kubeloop_core::apiserver::Credentials;
    use kubeloop_core::cluster::{Action, Config};
    let mut c = Cluster::new(Config::default());
    c.run_until(1_000);
    let mut checker = sweep::Checker::new(&c);
    let many: String = (0..=sweep::MAX_WRITES_PER_SECOND).map(|i| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-{i}}}\n---\n")).collect();
    c.act(Credentials::Token("admin-token".into()), Action::Apply { text: many, file: "many.yaml".into() });
    let v = checker.after_task(&c).expect_err("201 writes in one second");
    assert_eq!(v.invariant, "no loop spins");
    assert!(v.message.starts_with("admin made more than 200 writes in one second"), "{v}");
}

#[test]
fn faults_left_at_the_end_are_named() {
    let text = |steps: &str| format!("apiVersion: kubeloop.dev/v1alpha1\nkind: Scenario\nmetadata: {{name: f}}\nspec:\n  steps:\n{steps}");
    let sc = sweep::scenario(&text("  - at: 20s\n    fault: {nodeUp: node-a}\n  - at: 10s\n    fault: {nodeDown: node-a}\n  - at: 30s\n    fault: etcdDown\n"))
        .unwrap();
    assert_eq!(sweep::faults_left(&sc.steps), ["etcd goes down: the API server is up but cannot read or write"]);
    // Convergence is not owed while a fault lasts: the Job that cannot finish is not reported.
    let job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: forever}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: busybox:1.36, command: [sleep, '100000']}]\n";
    let faulted = format!(
        "{}  - at: 30s\n    fault: {{nodeDown: node-b}}\n  - at: 40s\n    apply: |\n{}",
        text(""),
        job.lines().map(|l| format!("      {l}\n")).collect::<String>()
    );
    assert!(sweep::run(&faulted, DEFAULT_DURATION).is_ok());
}

#[test]
fn a_mount_that_meets_a_down_driver_after_its_attachment_retries_until_it_returns() {
    let c = cluster_after(&regression("mount-while-driver-down.yaml"), DEFAULT_DURATION);
    let failed: Vec<_> =
        c.api.trace.records().iter().filter(|r| r.object == "Pod/default/ss-web-2" && r.message.starts_with("MountVolume.MountDevice failed")).collect();
    // The driver is down from 1841 s to 2375 s: retries back off from 500 ms, doubling.
    assert!(failed.len() >= 8, "{}", failed.len());
    assert!(failed.iter().all(|r| (1_841_000..2_375_000).contains(&r.t)));
    let pod = c.api.store.get_by(rid::POD, "default", "ss-web-2").expect("ss-web-2");
    assert_eq!(get_str(pod, &["status", "phase"]), Some("Running"));
}

#[test]
fn a_recreate_deployment_whose_replica_sets_were_scaled_by_hand_stays_as_kubernetes_leaves_it() {
    let c = cluster_after(&regression("recreate-scaled-by-hand.yaml"), DEFAULT_DURATION);
    let d = c.api.store.get_by(rid::DEPLOYMENT, "default", "d-web").expect("d-web");
    assert_eq!(kubeloop_core::foundation::api::get_i64(d, &["status", "replicas"]), Some(14));
    let sizes: Vec<i64> =
        c.api.store.list(rid::REPLICASET, Some("default")).map(|rs| kubeloop_core::foundation::api::get_i64(rs, &["spec", "replicas"]).unwrap_or(0)).collect();
    assert_eq!(sizes, [7, 7]);
    // And the sweep accepts it as converged.
    sweep::run(&regression("recreate-scaled-by-hand.yaml"), DEFAULT_DURATION).expect("the checker knows the case");
}

#[test]
fn a_status_the_kubelet_could_not_write_while_etcd_was_down_is_posted_at_its_next_batch() {
    let c = cluster_after(&regression("status-while-etcd-down.yaml"), DEFAULT_DURATION);
    for p in c.api.store.list(rid::POD, Some("default")) {
        assert_eq!(get_str(p, &["status", "phase"]), Some("Running"), "{}", kubeloop_core::foundation::api::name(p));
    }
    // etcd and node-b come back at 2400 s; the batch after that writes the status.
    let written = c
        .api
        .trace
        .requests()
        .iter()
        .find(|r| r.t >= 2_400_000 && r.user == "system:node:node-b" && r.object.ends_with("/status") && r.object.starts_with("Pod/") && r.code == 200);
    let t = written.map(|r| r.t);
    assert!(t.is_some_and(|t| t <= 2_410_000), "{t:?}");
}

#[test]
fn a_statefulset_that_adopts_pods_without_its_claims_stays_as_kubernetes_leaves_it() {
    let c = cluster_after(&regression("statefulset-adopts-pods-without-claims.yaml"), DEFAULT_DURATION);
    let pods: Vec<_> = c.api.store.list(rid::POD, Some("default")).map(|p| kubeloop_core::foundation::api::name(p).to_string()).collect();
    assert_eq!(pods, ["ss-api-0", "ss-api-1", "ss-api-2"]);
    let refused =
        c.api.store.list(rid::EVENT, Some("default")).any(|e| {
            get_str(e, &["reason"]) == Some("FailedUpdate") && get_str(e, &["message"]).is_some_and(|m| m.contains("pod updates may not change fields"))
        });
    assert!(refused, "a FailedUpdate event says why");
    sweep::run(&regression("statefulset-adopts-pods-without-claims.yaml"), DEFAULT_DURATION).expect("the checker knows the case");
}

#[test]
fn a_clone_is_the_same_cluster_at_the_same_moment() {
    // Generated seeds take nodes, etcd, the API server, controllers and drivers down and
    // up: a copy taken mid-run, faults in flight, must go on exactly as the original.
    for seed in [4, 5] {
        let text = sweep::generate(seed, HALF_HOUR).render();
        let mut a = cluster_after(&text, HALF_HOUR / 3);
        let mut b = a.clone();
        a.run_until(HALF_HOUR);
        b.run_until(HALF_HOUR);
        let whole = cluster_after(&text, HALF_HOUR);
        assert_eq!(sweep::fingerprint(&a), sweep::fingerprint(&whole), "seed {seed}: the original");
        assert_eq!(sweep::fingerprint(&b), sweep::fingerprint(&whole), "seed {seed}: the copy");
        assert_eq!(a.tasks_run, b.tasks_run, "seed {seed}");
    }
}
