//! Golden scenario tests: the example scenarios run end to end, their key trace lines and
//! final state are compared with reviewed snapshots in `tests/golden/` (rewrite them with
//! `KUBELOOP_BLESS=1 cargo test`), and each test asserts the behaviour it is named after.

// Tests read their fixtures from disk; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::trace::Flow;
use kubeloop_core::cluster::scenario::{add_file, Scenario};
use kubeloop_core::cluster::Cluster;
use kubeloop_core::foundation::api::{self, get_array, get_str, rid, Object};
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn load(example: &str) -> (Scenario, Cluster) {
    let path = root().join("examples").join(example);
    let text = std::fs::read_to_string(&path).expect("example exists");
    let mut sc = Scenario::default();
    add_file(&mut sc, &format!("examples/{example}"), &text);
    assert!(sc.errors.is_empty(), "{:?}", sc.errors);
    let mut c = Cluster::new(sc.config(None, true));
    c.add_steps(sc.steps.clone());
    (sc, c)
}

fn pods(c: &Cluster) -> Vec<Object> {
    c.api.store.list(rid::POD, None).cloned().collect()
}

fn ready(p: &Object) -> bool {
    kubeloop_core::foundation::pod::pod_is_ready(p)
}

fn events(c: &Cluster, reason: &str) -> Vec<String> {
    c.api.store.list(rid::EVENT, None).filter(|e| get_str(e, &["reason"]) == Some(reason)).map(|e| get_str(e, &["message"]).unwrap_or("").to_string()).collect()
}

/// The lines a reader follows: loop decisions, failure paths, kubectl output, final pods.
fn summary(c: &Cluster) -> String {
    let mut out = String::new();
    for r in c.api.trace.records() {
        let keep = r.request.is_none() && !matches!(r.stage, "queue" | "watch" | "score" | "volumes");
        if keep || (r.request.is_some() && r.flow == Flow::Denied) {
            out.push_str(&format!("{:>9} {:<10} {:<22} {} {}\n", r.t, r.flow.as_str(), r.component, r.object, r.message));
        }
    }
    out.push_str("--- pods\n");
    for p in pods(c) {
        let waiting = get_array(&p, &["status", "containerStatuses"]).iter().find_map(|s| get_str(s, &["state", "waiting", "reason"])).map(str::to_string);
        let status = if api::is_deleting(&p) {
            "Terminating".to_string()
        } else {
            waiting.unwrap_or_else(|| get_str(&p, &["status", "phase"]).unwrap_or("").to_string())
        };
        out.push_str(&format!("{} {} ready={} node={}\n", api::name(&p), status, ready(&p), get_str(&p, &["spec", "nodeName"]).unwrap_or("<none>")));
    }
    out
}

fn golden(name: &str, c: &Cluster) {
    let path = root().join("tests/golden").join(format!("{name}.txt"));
    let actual = summary(c);
    if std::env::var("KUBELOOP_BLESS").is_ok() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, &actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected != actual {
        let diff: Vec<String> = expected
            .lines()
            .zip(actual.lines())
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .take(5)
            .map(|(i, (a, b))| format!("line {}:\n  expected: {a}\n  actual:   {b}", i + 1))
            .collect();
        panic!(
            "{name}: trace differs from tests/golden/{name}.txt (rerun with KUBELOOP_BLESS=1 after reviewing)\n{}\nexpected {} lines, got {}",
            diff.join("\n"),
            expected.lines().count(),
            actual.lines().count()
        );
    }
}

#[test]
fn checkout_reaches_two_ready_pods_and_the_latest_tag_is_denied() {
    let (_, mut c) = load("checkout.yaml");
    c.run_to_quiet(3_600_000);
    let ps = pods(&c);
    assert_eq!(ps.len(), 2);
    assert!(ps.iter().all(ready), "both checkout pods are Ready");
    // The Deployment, its ReplicaSet and the Service's endpoints all agree.
    let d = c.api.store.get_by(rid::DEPLOYMENT, "default", "checkout").expect("deployment");
    assert_eq!(d["status"]["readyReplicas"], 2);
    let conds: Vec<(&str, &str)> =
        get_array(d, &["status", "conditions"]).iter().map(|c| (get_str(c, &["type"]).unwrap_or(""), get_str(c, &["reason"]).unwrap_or(""))).collect();
    assert_eq!(conds, vec![("Available", "MinimumReplicasAvailable"), ("Progressing", "NewReplicaSetAvailable")]);
    let slice = c.api.store.list(rid::ENDPOINTSLICE, Some("default")).find(|s| api::label(s, "kubernetes.io/service-name") == Some("checkout")).expect("slice");
    assert_eq!(get_array(slice, &["endpoints"]).iter().filter(|e| e["conditions"]["ready"] == true).count(), 2);
    // The :latest canary is stopped at validating admission: nothing is stored.
    assert!(c.api.store.get_by(rid::DEPLOYMENT, "default", "checkout-canary").is_none());
    assert!(c.api.store.list(rid::REPLICASET, None).all(|r| !api::name(r).starts_with("checkout-canary")));
    let denial = c.outputs.iter().flat_map(|o| o.output.iter()).find(|l| l.contains("checkout-canary")).expect("kubectl output");
    assert_eq!(
        denial,
        "The deployments \"checkout-canary\" is invalid: : ValidatingAdmissionPolicy 'no-latest-tag' with binding 'no-latest-tag-binding' denied request: images must not use the mutable :latest tag"
    );
    assert!(c.api.trace.records().iter().any(|r| r.flow == Flow::Denied && r.stage == "validating-admission"));
    // Events read like a real cluster's.
    let rs = c.api.store.list(rid::REPLICASET, None).next().expect("rs");
    assert_eq!(events(&c, "ScalingReplicaSet"), vec![format!("Scaled up replica set {} from 0 to 2", api::name(rs))]);
    assert_eq!(events(&c, "SuccessfulCreate").len(), 2);
    assert!(events(&c, "Scheduled").iter().all(|m| m.starts_with("Successfully assigned default/checkout-")));
    assert_eq!(events(&c, "Started"), vec!["Container started".to_string(); 2]);
    golden("checkout", &c);
}

#[test]
fn a_node_failure_is_healed_by_the_reconcile_loops() {
    let (_, mut c) = load("node-failure.yaml");
    // Before the grace period ends the node still looks Ready.
    c.run_until(100_000);
    let node = c.api.store.get_by(rid::NODE, "", "node-b").expect("node").clone();
    assert_eq!(kubeloop_core::foundation::pod::condition(&node, "Ready").and_then(|c| get_str(c, &["status"])), Some("True"));
    // After it, Unknown and tainted; the pod there is not Ready.
    c.run_until(200_000);
    let node = c.api.store.get_by(rid::NODE, "", "node-b").expect("node").clone();
    let ready_cond = kubeloop_core::foundation::pod::condition(&node, "Ready").expect("Ready").clone();
    assert_eq!(ready_cond["status"], "Unknown");
    assert_eq!(ready_cond["message"], "Kubelet stopped posting node status.");
    let taints: Vec<String> =
        get_array(&node, &["spec", "taints"]).iter().map(|t| format!("{}:{}", t["key"].as_str().unwrap_or(""), t["effect"].as_str().unwrap_or(""))).collect();
    assert_eq!(taints, vec!["node.kubernetes.io/unreachable:NoSchedule", "node.kubernetes.io/unreachable:NoExecute"]);
    let on_b: Vec<Object> = pods(&c).into_iter().filter(|p| get_str(p, &["spec", "nodeName"]) == Some("node-b")).collect();
    assert_eq!(on_b.len(), 1);
    assert!(!ready(&on_b[0]));
    // 300s of toleration later the pod is evicted and replaced elsewhere.
    c.run_until(420_000);
    let ps = pods(&c);
    assert_eq!(ps.iter().filter(|p| !api::is_deleting(p) && ready(p)).count(), 3, "three ready replicas again");
    assert!(
        ps.iter().any(|p| api::is_deleting(p) && get_str(p, &["spec", "nodeName"]) == Some("node-b")),
        "the evicted pod stays Terminating while its node is away"
    );
    // It was told why before it was deleted (`addConditionAndDeletePod`).
    let evicted = ps.iter().find(|p| api::is_deleting(p) && get_str(p, &["spec", "nodeName"]) == Some("node-b")).expect("evicted pod");
    let why = kubeloop_core::foundation::pod::condition(evicted, "DisruptionTarget").expect("DisruptionTarget");
    assert_eq!((why["status"].as_str(), why["reason"].as_str()), (Some("True"), Some("DeletionByTaintManager")));
    assert_eq!(why["message"], "Taint manager: deleting due to NoExecute taint");
    assert_eq!(events(&c, "TaintManagerEviction").len(), 1);
    assert_eq!(events(&c, "NodeNotReady").iter().filter(|m| m.as_str() == "Node node-b status is now: NodeNotReady").count(), 1);
    // When the node returns its kubelet finishes the deletion and the taints go.
    c.run_to_quiet(3_600_000);
    let ps = pods(&c);
    assert_eq!(ps.len(), 3);
    assert!(ps.iter().all(|p| ready(p) && get_str(p, &["spec", "nodeName"]) != Some("node-b")));
    let node = c.api.store.get_by(rid::NODE, "", "node-b").expect("node");
    assert!(get_array(node, &["spec", "taints"]).is_empty());
    golden("node-failure", &c);
}

#[test]
fn a_hand_scaled_replicaset_is_scaled_back_by_its_deployment() {
    let (_, mut c) = load("hand-scale.yaml");
    c.run_to_quiet(3_600_000);
    let rs = c.api.store.list(rid::REPLICASET, None).next().expect("rs").clone();
    assert_eq!(rs["spec"]["replicas"], 3);
    assert_eq!(c.api.store.count(rid::POD), 3);
    let scaled = events(&c, "ScalingReplicaSet");
    assert!(scaled.contains(&format!("Scaled down replica set {} from 5 to 3", api::name(&rs))), "{scaled:?}");
    assert_eq!(events(&c, "SuccessfulDelete").len(), 2, "the two surplus pods were deleted");
    assert_eq!(events(&c, "SuccessfulCreate").len(), 5, "three pods, then two more after the hand scale");
    golden("hand-scale", &c);
}

#[test]
fn failure_paths_show_the_real_reasons() {
    let (_, mut c) = load("failures.yaml");
    c.run_until(75_000);
    let status = |name: &str| {
        let p = c.api.store.get_by(rid::POD, "default", name).expect("pod");
        get_array(p, &["status", "containerStatuses"]).iter().find_map(|s| get_str(s, &["state", "waiting", "reason"])).unwrap_or("").to_string()
    };
    assert_eq!(status("typo"), "ImagePullBackOff");
    assert_eq!(status("crasher"), "CrashLoopBackOff");
    assert_eq!(status("needs-config"), "ContainerCreating");
    let big = c.api.store.get_by(rid::POD, "default", "too-big").expect("pod");
    let cond = kubeloop_core::foundation::pod::condition(big, "PodScheduled").expect("condition");
    assert_eq!(cond["reason"], "Unschedulable");
    assert_eq!(
        cond["message"],
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient cpu. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    );
    assert!(events(&c, "FailedMount").contains(&"MountVolume.SetUp failed for volume \"config\" : configmap \"app-config\" not found".to_string()));
    // Identical events are folded into one whose count grows.
    let mount = c.api.store.list(rid::EVENT, None).find(|e| get_str(e, &["reason"]) == Some("FailedMount")).expect("event").clone();
    assert!(mount["count"].as_i64().unwrap_or(0) >= 5, "{}", mount["count"]);
    assert_ne!(mount["firstTimestamp"], mount["lastTimestamp"]);
    assert!(events(&c, "Failed").iter().any(|m| m.starts_with(
        "Failed to pull image \"nginxx:1.27\": rpc error: code = Unknown desc = failed to pull and unpack image \"docker.io/library/nginxx:1.27\""
    )));
    assert!(events(&c, "Failed").contains(&"Error: ImagePullBackOff".to_string()));
    assert!(events(&c, "BackOff").iter().any(|m| m.starts_with("Back-off restarting failed container payments in pod crasher_default(")));
    // The ConfigMap arrives at 90s and the waiting pod starts.
    c.run_until(120_000);
    let p = c.api.store.get_by(rid::POD, "default", "needs-config").expect("pod");
    assert!(ready(p));
    golden("failures", &c);
}

#[test]
fn a_webhook_backend_outage_blocks_writes_until_it_recovers() {
    let (_, mut c) = load("webhook.yaml");
    c.run_to_quiet(3_600_000);
    let lines: Vec<&String> = c.outputs.iter().flat_map(|o| o.output.iter()).collect();
    assert!(lines.iter().any(|l| l.ends_with("admission webhook \"images.policy.example.com\" denied the request: images must be pinned to a version")));
    assert!(lines.iter().any(|l| l.starts_with("Error from server (InternalError): error when creating \"examples/webhook.yaml#steps[3]\": Internal error occurred: failed calling webhook \"images.policy.example.com\"")));
    assert!(lines.iter().any(|l| l.as_str() == "deployment.apps/cart created"));
    assert!(c.api.store.get_by(rid::DEPLOYMENT, "default", "shop").is_none());
    golden("webhook", &c);
}

#[test]
fn one_seed_gives_a_byte_identical_run() {
    let run = |seed: Option<u64>| {
        let (sc, _) = load("checkout.yaml");
        let mut c = Cluster::new(sc.config(seed, true));
        c.add_steps(sc.steps.clone());
        c.run_to_quiet(3_600_000);
        let objects: Vec<&kubeloop_core::foundation::value::Value> = c.api.store.all().map(|o| o.as_ref()).collect();
        serde_json::to_string(&serde_json::json!({"objects": objects, "trace": c.api.trace.records(), "requests": c.api.trace.requests()})).expect("json")
    };
    let a = run(None);
    let b = run(None);
    assert_eq!(a, b);
    let other = run(Some(8));
    assert_ne!(a, other, "another seed gives other names and uids");
}

#[test]
fn bad_input_never_loses_the_other_documents() {
    let mut c = Cluster::new(Default::default());
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: [broken\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replica: 3\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: also-good}\n";
    let out = c.act(
        kubeloop_core::apiserver::Credentials::Token("admin-token".into()),
        kubeloop_core::cluster::Action::Apply { text: text.into(), file: "mixed.yaml".into() },
    );
    assert_eq!(out.output.len(), 5, "{:?}", out.output);
    assert_eq!(out.output[0], "configmap/good created");
    assert!(out.output[1].starts_with("error: error parsing mixed.yaml: error converting YAML to JSON: yaml: line 8: "), "{}", out.output[1]);
    assert!(out.output[2].contains("no matches for kind \"Widget\" in version \"example.com/v1\""));
    assert_eq!(out.output[3], "Error from server (BadRequest): error when creating \"mixed.yaml\": Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: unknown field \"spec.replica\"");
    assert_eq!(out.output[4], "configmap/also-good created");
    assert!(c.api.store.get_by(rid::CONFIGMAP, "default", "good").is_some());
    assert!(c.api.store.get_by(rid::CONFIGMAP, "default", "also-good").is_some());
}

fn pod(c: &Cluster, name: &str) -> Object {
    c.api.store.get_by(rid::POD, "default", name).unwrap_or_else(|| panic!("pod {name}")).clone()
}

fn terminated(p: &Object, list: &str, field: &str) -> (i64, String) {
    let s = get_array(p, &["status", list]).first().cloned().unwrap_or_default();
    let t = &s[field]["terminated"];
    (t["exitCode"].as_i64().unwrap_or(-1), t["reason"].as_str().unwrap_or("").to_string())
}

#[test]
fn containers_run_their_commands_probes_restart_them_and_sidecars_count() {
    let (_, mut c) = load("containers.yaml");
    c.run_until(60_000);
    // Exit codes and phases for each restart policy (`getPhase`).
    let never = pod(&c, "never");
    assert_eq!(never["status"]["phase"], "Failed");
    assert_eq!(terminated(&never, "containerStatuses", "state"), (1, "Error".into()));
    let onfailure = pod(&c, "onfailure");
    assert_eq!(onfailure["status"]["phase"], "Succeeded");
    assert_eq!(terminated(&onfailure, "containerStatuses", "state"), (0, "Completed".into()));
    let always = pod(&c, "always");
    assert_eq!(always["status"]["phase"], "Running");
    assert_eq!(terminated(&always, "containerStatuses", "lastState"), (3, "Error".into()));
    // Over its memory limit: OOMKilled, exit code 137.
    assert_eq!(terminated(&pod(&c, "memory-hog"), "containerStatuses", "lastState"), (137, "OOMKilled".into()));
    // An init container that fails is restarted (restartPolicy Always) and holds the pod.
    let init = pod(&c, "init-fails");
    assert_eq!(init["status"]["phase"], "Pending");
    assert_eq!(terminated(&init, "initContainerStatuses", "lastState"), (2, "Error".into()));
    // The startup probe holds the liveness probe back until the app has started (20s).
    let slow = pod(&c, "slow-start");
    assert_eq!(slow["status"]["containerStatuses"][0]["started"], true);
    assert_eq!(slow["status"]["containerStatuses"][0]["restartCount"], 0);
    assert!(events(&c, "Unhealthy").iter().any(|m| m.starts_with("Startup probe failed")));
    assert!(!events(&c, "Killing").iter().any(|m| m.contains("app failed")));
    // A sidecar starts before the app, keeps running, and counts in READY.
    let side = pod(&c, "with-sidecar");
    assert!(ready(&side));
    assert_eq!(kubeloop_core::kubectl::printers::pod_row(&side, c.now).ready, "2/2");
    // With restartPolicy Never, the sidecar is stopped once the task is done (its trap
    // runs) and not restarted; the pod Succeeded.
    let task = pod(&c, "task-with-sidecar");
    assert_eq!(task["status"]["phase"], "Succeeded");
    assert_eq!(terminated(&task, "initContainerStatuses", "state"), (0, "Completed".into()));
    assert_eq!(task["status"]["initContainerStatuses"][0]["restartCount"], 0);
    c.run_until(90_000);
    // The liveness probe found /tmp/healthy gone, the kubelet killed the container
    // (sh ignores SIGTERM: 30s later, SIGKILL, 137) and started it again.
    let live = pod(&c, "liveness-exec");
    assert_eq!(terminated(&live, "containerStatuses", "lastState"), (137, "Error".into()));
    assert!(events(&c, "Unhealthy").contains(&"Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory".to_string()));
    assert!(events(&c, "Killing").contains(&"Container liveness failed liveness probe, will be restarted".to_string()));
    c.run_until(96_000);
    let out = |cmd: &str| c.outputs.iter().filter(|o| o.command == format!("kubectl {cmd}")).flat_map(|o| o.output.clone()).collect::<Vec<_>>();
    assert_eq!(out("logs never"), vec!["hi"]);
    assert_eq!(out("exec with-sidecar -c app -- sh -c 'ls /opt; exit 4'"), vec!["logs.txt", "command terminated with exit code 4"]);
    assert!(out("logs with-sidecar -c logshipper").iter().filter(|l| *l == "logging").count() >= 8);
    // Graceful termination: nginx stops at SIGTERM; a shell as PID 1 waits for SIGKILL.
    c.run_until(100_000);
    assert!(c.api.store.get_by(rid::POD, "default", "web").is_none());
    assert!(c.api.store.get_by(rid::POD, "default", "slow-start").is_some());
    c.run_until(126_000);
    assert!(c.api.store.get_by(rid::POD, "default", "slow-start").is_none());
    c.run_until(180_000);
    golden("containers", &c);
}

#[test]
fn each_workload_kind_converges_by_its_own_loop() {
    let (_, mut c) = load("workloads.yaml");
    c.run_until(45_000);
    // The StatefulSet created its pods one at a time, each after the previous was Ready.
    let creates: Vec<(u64, String)> =
        c.api.trace.records().iter().filter(|r| r.component == "statefulset-controller" && r.stage == "create-pod").map(|r| (r.t, r.object.clone())).collect();
    let names: Vec<&str> = creates.iter().map(|(_, o)| o.as_str()).collect();
    assert_eq!(names, ["Pod/default/web-0", "Pod/default/web-1", "Pod/default/web-2"]);
    let ready_at = |name: &str| {
        let p = pod(&c, name);
        let t = get_array(&p, &["status", "conditions"])
            .iter()
            .find(|x| get_str(x, &["type"]) == Some("Ready"))
            .and_then(|x| get_str(x, &["lastTransitionTime"]))
            .unwrap()
            .to_string();
        kubeloop_core::foundation::sim::parse_rfc3339(&t).unwrap()
    };
    assert!(creates[1].0 >= ready_at("web-0") && creates[2].0 >= ready_at("web-1"), "OrderedReady: {creates:?}");
    assert_eq!(pod(&c, "web-1")["spec"]["hostname"], "web-1");
    assert_eq!(pod(&c, "web-1")["spec"]["subdomain"], "nginx");
    // One agent per node the DaemonSet's pods tolerate: the control plane is tainted.
    let agents: Vec<String> =
        pods(&c).iter().filter(|p| api::name(p).starts_with("node-agent-")).map(|p| get_str(p, &["spec", "nodeName"]).unwrap_or("").to_string()).collect();
    assert_eq!(agents.iter().cloned().collect::<std::collections::BTreeSet<_>>().into_iter().collect::<Vec<_>>(), ["node-a", "node-b", "node-c"]);
    let ds = c.api.store.get_by(rid::DAEMONSET, "kube-system", "node-agent").unwrap().clone();
    assert_eq!((ds["status"]["desiredNumberScheduled"].as_i64(), ds["status"]["numberReady"].as_i64()), (Some(3), Some(3)));
    // The Jobs ran to completion.
    let job = |n: &str| c.api.store.get_by(rid::JOB, "default", n).unwrap().clone();
    assert_eq!(job("pi")["status"]["succeeded"], 1);
    assert!(get_array(&job("pi"), &["status", "conditions"]).iter().any(|x| get_str(x, &["type"]) == Some("Complete")));
    assert_eq!(job("indexed")["status"]["completedIndexes"], "0-2");
    assert_eq!(c.api.store.get_by(rid::REPLICATIONCONTROLLER, "default", "legacy").unwrap()["status"]["readyReplicas"], 2);
    c.run_until(100_000);
    // Scaled to 1: web-2 went first, then web-1.
    let deletes: Vec<String> =
        c.api.trace.records().iter().filter(|r| r.component == "statefulset-controller" && r.stage == "delete-pod").map(|r| r.object.clone()).collect();
    assert_eq!(deletes, ["Pod/default/web-2", "Pod/default/web-1"]);
    c.run_until(250_000);
    // A Job a minute; the three most recent successful ones are kept.
    let hello: Vec<String> = c.api.store.list(rid::JOB, None).map(|j| api::name(j).to_string()).filter(|n| n.starts_with("hello-")).collect();
    assert_eq!(hello.len(), 3, "{hello:?}");
    let out = |cmd: &str| c.outputs.iter().filter(|o| o.command == format!("kubectl {cmd}")).flat_map(|o| o.output.clone()).collect::<Vec<_>>();
    assert!(out("logs job/pi")[0].starts_with("3.14159265358979323846"));
    golden("workloads", &c);
}

#[test]
fn pending_pods_bring_nodes_from_their_group_late_and_unneeded_ones_go() {
    let (_, mut c) = load("autoscaler.yaml");
    c.run_until(40 * 60_000);
    assert!(!events(&c, "TriggeredScaleUp").is_empty(), "the Pending pods triggered a scale-up");
    assert!(!events(&c, "NotTriggerScaleUp").is_empty(), "the group's max held a pod back");
    golden("autoscaler", &c);
}

#[test]
fn load_scales_the_deployment_through_the_hpa_and_the_window_delays_the_way_down() {
    let (_, mut c) = load("hpa.yaml");
    c.run_until(12 * 60_000);
    let out = |cmd: &str| c.outputs.iter().filter(|o| o.command == format!("kubectl {cmd}")).map(|o| o.output.clone()).collect::<Vec<_>>();
    let replicas_in = |table: &Vec<String>| table[1].split_whitespace().rev().nth(1).map(str::to_string);
    let hpa = out("get hpa");
    // Idle at first, scaled up under load, still up 2 minutes after the load stopped (the
    // 5-minute stabilization window), back to 1 after it.
    assert_eq!(replicas_in(&hpa[0]).as_deref(), Some("1"), "{:?}", hpa[0]);
    let loaded: i64 = replicas_in(&hpa[1]).unwrap().parse().unwrap();
    assert!(loaded > 1, "{:?}", hpa[1]);
    assert_eq!(replicas_in(&hpa[2]).unwrap().parse::<i64>().unwrap(), loaded, "{:?}", hpa[2]);
    assert_eq!(replicas_in(&hpa[3]).as_deref(), Some("1"), "{:?}", hpa[3]);
    assert!(!events(&c, "SuccessfulRescale").is_empty());
    golden("hpa", &c);
}

#[test]
fn a_finalizer_holds_a_terminating_namespace_until_it_is_patched_away() {
    let (_, mut c) = load("namespace-finalizer.yaml");
    c.run_until(95_000);
    let out = |c: &Cluster, cmd: &str| c.outputs.iter().filter(|o| o.command == format!("kubectl {cmd}")).map(|o| o.output.clone()).collect::<Vec<_>>();
    // Stuck: Terminating, the pods and the Deployment gone, the held ConfigMap left.
    let ns = c.api.store.get_by(rid::NAMESPACE, "", "shop").expect("namespace still there");
    assert_eq!(ns["status"]["phase"], "Terminating");
    assert_eq!(c.api.store.list(rid::POD, Some("shop")).count(), 0);
    assert!(c.api.store.get_by(rid::DEPLOYMENT, "shop", "web").is_none());
    assert!(api::is_deleting(c.api.store.get_by(rid::CONFIGMAP, "shop", "keep").expect("held")));
    let describe = out(&c, "describe ns shop").concat();
    assert!(describe.iter().any(|l| l.ends_with("Some resources are remaining: configmaps. has 1 resource instances")), "{describe:#?}");
    assert!(describe.iter().any(|l| l.ends_with("Some content in the namespace has finalizers remaining: example.com/keep in 1 resource instances")));
    assert!(out(&c, "get ns").concat().iter().any(|l| l.starts_with("shop ") && l.contains("Terminating")));
    let all = out(&c, "get all -n shop");
    assert!(all[0].iter().any(|l| l.starts_with("deployment.apps/web ")), "{all:?}");
    assert_eq!(all[1], ["No resources found in shop namespace."]);
    assert_eq!(
        out(&c, "create configmap late -n shop").concat(),
        ["error: failed to create configmap: configmaps \"late\" is forbidden: unable to create new content in namespace shop because it is being terminated"]
    );
    // The patch releases the ConfigMap; the next check finalizes the namespace.
    c.run_until(160_000);
    assert!(c.api.store.get_by(rid::NAMESPACE, "", "shop").is_none());
    assert_eq!(out(&c, "patch configmap keep -n shop --type=merge -p '{\"metadata\":{\"finalizers\":null}}'").concat(), ["configmap/keep patched"]);
    assert!(!out(&c, "get ns").last().expect("second get ns").iter().any(|l| l.starts_with("shop ")));
    golden("namespace-finalizer", &c);
}

#[test]
fn storage_binds_late_attaches_once_and_pins_a_rescheduled_pod_to_its_zone() {
    let (_, mut c) = load("storage.yaml");
    c.run_until(700_000);
    let out = |c: &Cluster, cmd: &str| c.outputs.iter().filter(|o| o.command == format!("kubectl {cmd}")).flat_map(|o| o.output.clone()).collect::<Vec<_>>();
    // WaitForFirstConsumer: each claim was provisioned for the node its pod was given.
    for (claim, name) in [("data-db-0", "db-0"), ("data-db-1", "db-1")] {
        let cl = c.api.store.get_by(rid::PVC, "default", claim).expect("claim");
        let node = api::annotation(cl, "volume.kubernetes.io/selected-node").expect("selected node").to_string();
        assert_eq!(get_str(&pod(&c, name), &["spec", "nodeName"]), Some(node.as_str()));
    }
    assert!(out(&c, "get pvc,pv").iter().filter(|l| l.contains(" Bound ")).count() == 4);
    assert!(events(&c, "FailedAttachVolume")
        .iter()
        .any(|m| m.starts_with("Multi-Attach error for volume \"pvc-") && m.ends_with("Volume is already used by pod(s) db-0")));
    assert!(out(&c, "get pvc").iter().any(|l| l.starts_with("data-db-1   Terminating ")), "a claim in use stays Terminating");
    // The new db-0 cannot follow its disk out of the dead node's zone.
    let describe = out(&c, "describe pod db-0");
    assert!(describe.iter().any(|l| l.contains("2 node(s) had volume node affinity conflict")), "{describe:#?}");
    assert!(events(&c, "FailedScheduling").iter().any(|m| m.contains("persistentvolumeclaim \"nope\" not found")));
    // When its node comes back, db-0 runs there again on the same disk.
    assert!(ready(&pod(&c, "db-0")));
    assert_eq!(get_str(&pod(&c, "db-0"), &["spec", "nodeName"]), Some("node-b"));
    golden("storage", &c);
}

#[test]
fn a_quota_refuses_the_replica_that_does_not_fit() {
    let (_, mut c) = load("quota.yaml");
    c.run_to_quiet(3_600_000);
    // Each pod gets the LimitRange's 400m request: two fit in the quota's one CPU.
    let ps = pods(&c);
    assert_eq!(ps.len(), 2);
    assert!(ps.iter().all(|p| p["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "400m"));
    let failed = events(&c, "FailedCreate");
    assert!(!failed.is_empty());
    // The replica set controller's recorder aggregates the tenth and later of these similar
    // events (differing only in the pod's name) into one.
    assert!(
        failed.iter().all(|m| m.trim_start_matches("(combined from similar events): ").starts_with("Error creating: pods \"web-")
            && m.ends_with("\" is forbidden: exceeded quota: compute, requested: requests.cpu=400m, used: requests.cpu=800m, limited: requests.cpu=1")),
        "{failed:?}"
    );
    let q = c.api.store.get_by(rid::RESOURCEQUOTA, "team-a", "compute").expect("quota");
    assert_eq!(q["status"]["used"]["requests.cpu"], "800m");
    assert_eq!(q["status"]["used"]["limits.memory"], "1Gi");
    let out: Vec<&String> = c.outputs.iter().filter(|o| o.command.contains("quota")).flat_map(|o| o.output.iter()).collect();
    assert!(out.iter().any(|l| l.contains("pods: 2/10, requests.cpu: 800m/1, requests.memory: 512Mi/1Gi")), "{out:?}");
    assert!(out.iter().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["requests.cpu", "800m", "1"]), "{out:?}");
    golden("quota", &c);
}

#[test]
fn a_claim_grows_in_two_loops_disk_then_file_system() {
    let (_, mut c) = load("expansion.yaml");
    c.run_until(310_000);
    let out = |c: &Cluster, cmd: &str| c.outputs.iter().filter(|o| o.command == format!("kubectl {cmd}")).map(|o| o.output.clone()).collect::<Vec<_>>();
    let cap = |lines: &[String]| lines.get(1).and_then(|l| l.split_whitespace().nth(3)).unwrap_or("").to_string();
    // The disk grew at once, the claim only once the kubelet grew the file system.
    let gets = out(&c, "get pvc data");
    assert_eq!(gets.iter().map(|g| cap(g)).collect::<Vec<_>>(), ["1Gi", "2Gi", "4Gi"], "{gets:?}");
    assert!(out(&c, "get pv")[0].iter().any(|l| l.contains(" 2Gi ") && l.contains("default/data")));
    let described = out(&c, "describe pvc data");
    assert!(described[0].iter().any(|l| l.starts_with("  FileSystemResizePending ")), "{:?}", described[0]);
    assert!(described[1]
        .iter()
        .any(|l| l.contains("VolumeResizeFailed") && l.contains("by resizer \"disk.csi.kubeloop.dev\" failed: rpc error: code = Unavailable")));
    // The default class does not allow expansion; no claim shrinks below its capacity.
    let fixed = out(&c, "patch pvc fixed -p '{\"spec\":{\"resources\":{\"requests\":{\"storage\":\"2Gi\"}}}}'").concat();
    assert!(fixed[0].contains("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"), "{fixed:?}");
    let shrink = out(&c, "patch pvc data -p '{\"spec\":{\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}'").concat();
    assert!(shrink[0].ends_with("spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"), "{shrink:?}");
    assert!(events(&c, "FileSystemResizeSuccessful").len() >= 2);
    golden("expansion", &c);
}

#[test]
fn the_data_plane_keeps_running_while_the_control_plane_is_down() {
    let (_, mut c) = load("control-plane-outage.yaml");
    c.run_until(800_000);
    let out = |c: &Cluster, cmd: &str| c.outputs.iter().filter(|o| o.command == format!("kubectl {cmd}")).map(|o| o.output.clone()).collect::<Vec<_>>();
    let refused = "The connection to the server 127.0.0.1:6443 was refused - did you specify the right host or port?";
    assert_eq!(out(&c, "get pods")[0], [refused]);
    assert_eq!(out(&c, "scale deployment web --replicas=5")[0], [refused]);
    // The pods kept running through the outage, and no one noticed node-c dying until the
    // restarted node lifecycle controller's fresh grace period ran out.
    let after = &out(&c, "get pods -o wide")[1];
    assert_eq!(after.iter().filter(|l| l.contains(" Running ")).count(), 3, "{after:?}");
    assert!(out(&c, "get nodes")[0].iter().any(|l| l.starts_with("node-c ") && l.contains(" Ready ")), "still Ready right after the outage");
    assert!(out(&c, "get nodes")[1].iter().any(|l| l.starts_with("node-c ") && l.contains(" NotReady ")));
    let not_ready: Vec<u64> =
        c.api.trace.records().iter().filter(|r| r.stage == "node-lifecycle" && r.message.starts_with("no heartbeat from node-c")).map(|r| r.t).collect();
    assert!(not_ready.first().is_some_and(|t| *t >= 180_000 + 50_000), "{not_ready:?}");
    assert!(c.api.trace.records().iter().any(|r| r.stage == "leader-election" && r.t == 180_000));
    // Only node-a, node-b and node-c's three pods ran: the Service kept its endpoints.
    assert!(c.api.trace.records().iter().any(|r| r.message == "EndpointSlice web-z68bq updated: 2 ready endpoint(s)" && r.t > 230_000));
    // etcd down: the API server answers, with a timeout.
    let timeout = "Error from server (Timeout): Timeout: request did not complete within requested timeout - context deadline exceeded";
    assert_eq!(out(&c, "get pods")[1], [timeout]);
    assert_eq!(out(&c, "scale deployment web --replicas=4"), [vec![timeout.to_string()], vec!["deployment.apps/web scaled".to_string()]]);
    // kube-controller-manager down: deleted pods are not replaced, and the Deployment's
    // status, which no one updates, still says 4/4.
    assert!(out(&c, "get deployment web")[0][1].starts_with("web    4/4 "));
    assert_eq!(out(&c, "get pods")[2].iter().filter(|l| l.contains(" Running ")).count(), 0);
    assert_eq!(out(&c, "get pods")[3].iter().filter(|l| l.contains(" Running ")).count(), 4);
    golden("control-plane-outage", &c);
}

#[test]
fn a_full_etcd_refuses_every_write_until_compacted_defragmented_and_disarmed() {
    let (_, mut c) = load("etcd-quota.yaml");
    c.run_until(250_000);
    let out = |c: &Cluster, cmd: &str| c.outputs.iter().filter(|o| o.command == cmd).map(|o| o.output.clone()).collect::<Vec<_>>();
    let status = out(&c, "etcdctl endpoint status");
    assert!(status[0][0].ends_with(", 2, 191, 191, "), "{status:?}");
    assert!(status[1][0].ends_with("memberID:10276657743932975437 alarm:NOSPACE "), "{status:?}");
    assert_eq!(out(&c, "kubectl scale deployment web --replicas=2")[0], ["Error from server: etcdserver: mvcc: database space exceeded"]);
    assert!(c
        .api
        .trace
        .records()
        .iter()
        .any(|r| r.component == "kubelet" && r.object.ends_with("/status") && r.message == "etcdserver: mvcc: database space exceeded"));
    assert_eq!(
        out(&c, "etcdctl compact 840"),
        [vec!["compacted revision 840".to_string()]],
        "a revision just before the alarm (endpoint status -w json prints the current one: if the fill moves, move this)"
    );
    // The file shrank, the alarm is gone, and writes go through again.
    assert!(status[2][0].ends_with(" 0 B") || !status[2][0].contains("alarm:NOSPACE"), "{status:?}");
    assert_eq!(out(&c, "kubectl scale deployment web --replicas=2")[1], ["deployment.apps/web scaled"]);
    assert!(out(&c, "kubectl get deployment web")[1][1].starts_with("web    2/2 "));
    golden("etcd-quota", &c);
}

#[test]
fn a_noisy_client_fills_its_priority_level_and_no_other() {
    let (_, mut c) = load("overload.yaml");
    c.run_until(62_000);
    let out = |c: &Cluster, cmd: &str| c.outputs.iter().filter(|o| o.command == format!("kubectl {cmd}")).flat_map(|o| o.output.clone()).collect::<Vec<_>>();
    let dump = out(&c, "get --raw /debug/api_priority_and_fairness/dump_priority_levels");
    let row = |level: &str| -> Vec<String> {
        let line = dump.iter().find(|l| l.starts_with(&format!("{level},"))).unwrap_or_else(|| panic!("{level} in {dump:?}"));
        line.split(',').map(|c| c.trim().to_string()).collect()
    };
    assert_eq!(dump[0].split(',').map(str::trim).collect::<Vec<_>>()[..5], ["PriorityLevelName", "ActiveQueues", "IsIdle", "IsQuiescing", "WaitingRequests"]);
    let low = row("workload-low");
    assert!(low[4].parse::<u64>().unwrap() > 0 && low[7].parse::<u64>().unwrap() > 0, "workload-low waits and refuses: {low:?}");
    for level in ["system", "workload-high", "node-high"] {
        let r = row(level);
        assert_eq!((r[4].as_str(), r[7].as_str()), ("0", "0"), "{level} neither waits nor refuses: {r:?}");
        assert!(r[6].parse::<u64>().unwrap() > 0, "{level} dispatched requests: {r:?}");
    }
    // The noisy client's own requests were refused; the quiet one in its level waited but
    // was never refused; the controllers still scale the Deployment.
    let denied: Vec<&str> =
        c.api.trace.records().iter().filter(|r| r.stage == "priority-and-fairness" && r.result == "denied").map(|r| r.user.as_str()).collect();
    assert!(!denied.is_empty() && denied.iter().all(|u| *u == "system:serviceaccount:default:lister"), "{:?}", &denied[..denied.len().min(3)]);
    assert!(c.api.trace.records().iter().any(|r| r.stage == "priority-and-fairness" && r.result == "ok" && r.user == "system:serviceaccount:default:reporter"));
    assert!(out(&c, "get deployment web").iter().any(|l| l.starts_with("web    310/310 ")), "{:?}", out(&c, "get deployment web"));
    assert!(out(&c, "get flowschemas")
        .iter()
        .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["service-accounts", "workload-low", "9000", "ByUser", "31s", "False"]));
}

/// The size limits, each with upstream's words (the objects are made in the test, to keep
/// megabytes out of the repository): a ConfigMap's 1 MiB, the 256 KiB of annotations
/// that a client-side apply's last-applied copy fills first, etcd's 1.5 MiB per object
/// (a server-side apply, which keeps no copy, gets that far), and the 3 MiB of body the
/// API server reads.
#[test]
fn size_limits_refuse_with_upstreams_words() {
    let cm = |name: &str, kib: usize| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  blob: {}\n", "x".repeat(kib * 1024));
    let deploy = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: big\nspec:\n  selector:\n    matchLabels: {{app: big}}\n  template:\n    metadata:\n      labels: {{app: big}}\n    spec:\n      containers:\n      - name: app\n        image: nginx\n        env:\n        - name: BLOB\n          value: {}\n",
        "x".repeat(1600 * 1024)
    );
    let indent = |t: &str| t.lines().map(|l| format!("      {l}\n")).collect::<String>();
    let scenario = format!(
        "apiVersion: kubeloop.dev/v1alpha1\nkind: Scenario\nmetadata:\n  name: size-limits\nspec:\n  steps:\n  - at: 0s\n    apply: |\n{}  - at: 1s\n    apply: |\n{}  - at: 2s\n    serverSide: true\n    apply: |\n{}  - at: 3s\n    serverSide: true\n    apply: |\n{}  - at: 4s\n    serverSide: true\n    apply: |\n{}  - at: 5s\n    serverSide: true\n    apply: |\n{}",
        indent(&cm("dashboards", 300)),
        indent(&cm("large", 1100)),
        indent(&cm("dashboards", 300)),
        indent(&cm("large", 1100)),
        indent(&deploy),
        indent(&cm("huge", 3200)),
    );
    let mut sc = Scenario::default();
    add_file(&mut sc, "size-limits.yaml", &scenario);
    assert!(sc.errors.is_empty(), "{:?}", sc.errors);
    let mut c = Cluster::new(sc.config(None, true));
    c.add_steps(sc.steps.clone());
    c.run_until(10_000);
    let out: Vec<Vec<String>> = c.outputs.iter().map(|o| o.output.clone()).collect();
    let at = |n: usize| &out[n];
    assert_eq!(at(0), &["The ConfigMap \"dashboards\" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes".to_string()]);
    assert_eq!(
        at(1),
        &["The ConfigMap \"large\" is invalid: \n* metadata.annotations: Too long: may not be more than 262144 bytes\n* []: Too long: may not be more than 1048576 bytes".to_string()]
    );
    assert_eq!(at(2), &["configmap/dashboards serverside-applied".to_string()]);
    assert_eq!(at(3), &["The ConfigMap \"large\" is invalid: []: Too long: may not be more than 1048576 bytes".to_string()]);
    assert_eq!(at(4), &["Error from server: etcdserver: request is too large".to_string()]);
    assert_eq!(at(5), &["Error from server (RequestEntityTooLarge): Request entity too large: limit is 3145728".to_string()]);
    assert!(c.api.store.get_by(rid::CONFIGMAP, "default", "dashboards").is_some());
    golden("size-limits", &c);
}
