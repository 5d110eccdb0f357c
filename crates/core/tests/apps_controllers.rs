//! The StatefulSet and DaemonSet controllers against what a real cluster does with the
//! website's manifests and with small sets written here: ordinal order, readiness gates,
//! scale-down and rolling-update order, claims left unbound, one daemon pod per node.

// Tests build their fixtures in memory; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::Credentials;
use kubeloop_core::cluster::{Action, Cluster, Config};
use kubeloop_core::foundation::api::{self, get, get_array, get_i64, get_str, rid, Object};
use kubeloop_core::foundation::pod::pod_is_ready;
use std::path::Path;

fn admin() -> Credentials {
    Credentials::Token("admin-token".into())
}

fn apply(c: &mut Cluster, text: &str) -> Vec<String> {
    c.act(admin(), Action::Apply { text: text.into(), file: "test.yaml".into() }).output
}

fn example(file: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/kubernetes-website-examples");
    std::fs::read_to_string(root.join(file)).expect("example")
}

fn pod(c: &Cluster, ns: &str, name: &str) -> Option<Object> {
    c.api.store.get_by(rid::POD, ns, name).cloned()
}

fn ready(c: &Cluster, ns: &str, name: &str) -> bool {
    pod(c, ns, name).is_some_and(|p| pod_is_ready(&p) && !api::is_deleting(&p))
}

fn events(c: &Cluster, involved: &str) -> Vec<String> {
    c.api
        .store
        .list(rid::EVENT, None)
        .filter(|e| get_str(e, &["involvedObject", "name"]) == Some(involved))
        .map(|e| format!("{} {}", get_str(e, &["reason"]).unwrap_or(""), get_str(e, &["message"]).unwrap_or("")))
        .collect()
}

/// Requests of `verb` on objects starting with `prefix` made by `user`, in order.
fn requests(c: &Cluster, verb: &str, prefix: &str, user: &str) -> Vec<String> {
    c.api
        .trace
        .requests()
        .iter()
        .filter(|r| r.verb == verb && r.object.starts_with(prefix) && r.user.ends_with(user) && r.code < 300)
        .map(|r| r.object.clone())
        .collect()
}

fn sts(replicas: i64, image: &str, policy: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: web\nspec:\n  serviceName: nginx\n  replicas: {replicas}\n  podManagementPolicy: {policy}\n  selector:\n    matchLabels: {{app: nginx}}\n  template:\n    metadata:\n      labels: {{app: nginx}}\n    spec:\n      terminationGracePeriodSeconds: 10\n      containers:\n      - name: nginx\n        image: {image}\n        ports:\n        - containerPort: 80\n          name: web\n"
    )
}

/// Run in small steps, checking `invariant` after each.
fn run_checking(c: &mut Cluster, until: u64, mut invariant: impl FnMut(&Cluster)) {
    let start = c.now;
    let mut t = start;
    while t < start + until {
        t += 50;
        c.run_until(t);
        invariant(c);
    }
}

#[test]
fn ordered_ready_creates_each_pod_after_its_predecessor_is_ready() {
    let mut c = Cluster::new(Config::default());
    assert_eq!(apply(&mut c, &sts(3, "nginx:1.27", "OrderedReady")), vec!["statefulset.apps/web created"]);
    run_checking(&mut c, 60_000, |c| {
        if pod(c, "default", "web-1").is_some() {
            assert!(ready(c, "default", "web-0"), "web-1 exists while web-0 is not Ready");
        }
        if pod(c, "default", "web-2").is_some() {
            assert!(ready(c, "default", "web-1"), "web-2 exists while web-1 is not Ready");
        }
    });
    c.run_to_quiet(120_000);
    let creates = requests(&c, "create", "Pod/default/", "statefulset-controller");
    assert_eq!(creates, vec!["Pod/default/web-0", "Pod/default/web-1", "Pod/default/web-2"]);
    let p1 = pod(&c, "default", "web-1").expect("web-1");
    assert_eq!(api::label(&p1, "statefulset.kubernetes.io/pod-name"), Some("web-1"));
    assert_eq!(api::label(&p1, "apps.kubernetes.io/pod-index"), Some("1"));
    assert_eq!(get_str(&p1, &["spec", "hostname"]), Some("web-1"));
    assert_eq!(get_str(&p1, &["spec", "subdomain"]), Some("nginx"));
    assert_eq!(get_str(&p1, &["metadata", "generateName"]), Some("web-"));
    let set = c.api.store.get_by(rid::STATEFULSET, "default", "web").unwrap().clone();
    let rev = get_str(&set, &["status", "updateRevision"]).expect("updateRevision").to_string();
    assert_eq!(api::label(&p1, "controller-revision-hash"), Some(rev.as_str()));
    assert!(c.api.store.get_by(rid::CONTROLLERREVISION, "default", &rev).is_some(), "the revision {rev} is stored");
    for (k, v) in [("replicas", 3), ("readyReplicas", 3), ("currentReplicas", 3), ("updatedReplicas", 3), ("availableReplicas", 3), ("observedGeneration", 1)] {
        assert_eq!(get_i64(&set, &["status", k]), Some(v), "{k}");
    }
    assert_eq!(get_str(&set, &["status", "currentRevision"]), Some(rev.as_str()));
    assert_eq!(get_i64(&set, &["status", "collisionCount"]), Some(0));
    let ev = events(&c, "web");
    assert!(ev.contains(&"SuccessfulCreate create Pod web-0 in StatefulSet web successful".to_string()), "{ev:?}");
    // The trace tells why the next pod came when it did.
    let why: Vec<&str> =
        c.api.trace.records().iter().filter(|r| r.component == "statefulset-controller" && r.stage == "create-pod").map(|r| r.message.as_str()).collect();
    assert_eq!(why[1], "StatefulSet/default/web wants 3 replicas: created web-1 (OrderedReady: web-0 is Running and Ready)");
    assert!(c
        .api
        .trace
        .records()
        .iter()
        .any(|r| r.stage == "wait" && r.message == "StatefulSet/default/web waits: web-0 is not Running and Ready yet (OrderedReady)"));
}

#[test]
fn parallel_creates_every_pod_without_waiting() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &sts(3, "nginx:1.27", "Parallel"));
    c.run_until(c.now + 20);
    // All three are created before any is Ready.
    assert_eq!(requests(&c, "create", "Pod/default/", "statefulset-controller").len(), 3);
    assert!(!ready(&c, "default", "web-0"));
    c.run_to_quiet(120_000);
    assert!((0..3).all(|i| ready(&c, "default", &format!("web-{i}"))));
}

#[test]
fn scale_down_removes_the_highest_ordinal_first_one_at_a_time() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &sts(3, "nginx:1.27", "OrderedReady"));
    c.run_to_quiet(120_000);
    assert_eq!(apply(&mut c, &sts(1, "nginx:1.27", "OrderedReady")), vec!["statefulset.apps/web configured"]);
    run_checking(&mut c, 60_000, |c| {
        if pod(c, "default", "web-1").is_some_and(|p| api::is_deleting(&p)) {
            assert!(pod(c, "default", "web-2").is_none(), "web-1 is deleted while web-2 still terminates");
        }
    });
    c.run_to_quiet(120_000);
    assert_eq!(requests(&c, "delete", "Pod/default/", "statefulset-controller"), vec!["Pod/default/web-2", "Pod/default/web-1"]);
    assert!(pod(&c, "default", "web-1").is_none() && pod(&c, "default", "web-2").is_none());
    assert!(ready(&c, "default", "web-0"));
    assert!(events(&c, "web").contains(&"SuccessfulDelete delete Pod web-2 in StatefulSet web successful".to_string()));
    let set = c.api.store.get_by(rid::STATEFULSET, "default", "web").unwrap();
    assert_eq!(get_i64(set, &["status", "replicas"]), Some(1));
}

#[test]
fn a_rolling_update_replaces_pods_from_the_highest_ordinal_down() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &sts(3, "nginx:1.26", "OrderedReady"));
    c.run_to_quiet(120_000);
    let first = get_str(c.api.store.get_by(rid::STATEFULSET, "default", "web").unwrap(), &["status", "currentRevision"]).unwrap().to_string();
    apply(&mut c, &sts(3, "nginx:1.27", "OrderedReady"));
    run_checking(&mut c, 90_000, |c| {
        // maxUnavailable 1: at most one pod is missing, terminating or not Ready.
        let unavailable = (0..3).filter(|i| !ready(c, "default", &format!("web-{i}"))).count();
        assert!(unavailable <= 1, "{unavailable} pods unavailable at {}", c.now);
    });
    c.run_to_quiet(180_000);
    assert_eq!(requests(&c, "delete", "Pod/default/", "statefulset-controller"), vec!["Pod/default/web-2", "Pod/default/web-1", "Pod/default/web-0"]);
    let set = c.api.store.get_by(rid::STATEFULSET, "default", "web").unwrap().clone();
    let update = get_str(&set, &["status", "updateRevision"]).unwrap().to_string();
    assert_ne!(update, first);
    assert_eq!(get_str(&set, &["status", "currentRevision"]), Some(update.as_str()), "a finished update becomes current");
    assert_eq!(get_i64(&set, &["status", "updatedReplicas"]), Some(3));
    for i in 0..3 {
        let p = pod(&c, "default", &format!("web-{i}")).unwrap();
        assert_eq!(api::label(&p, "controller-revision-hash"), Some(update.as_str()));
        assert_eq!(get_array(&p, &["spec", "containers"])[0]["image"].as_str(), Some("nginx:1.27"));
    }
    let revs: Vec<i64> = c.api.store.list(rid::CONTROLLERREVISION, Some("default")).filter_map(|r| get_i64(r, &["revision"])).collect();
    assert_eq!(revs.len(), 2, "both templates are kept as history");
}

#[test]
fn the_website_statefulset_creates_claims_that_stay_unbound() {
    let mut c = Cluster::new(Config::default());
    let out = apply(&mut c, &example("controllers/statefulset.yaml"));
    assert_eq!(out, vec!["service/nginx created", "statefulset.apps/web created"]);
    c.run_to_quiet(120_000);
    let claim = c.api.store.get_by(rid::PVC, "default", "www-web-0").expect("claim www-web-0").clone();
    assert_eq!(get(&claim, &["metadata", "labels"]).cloned(), Some(kubeloop_core::foundation::value::json!({"app": "nginx"})));
    assert_eq!(get_str(&claim, &["spec", "storageClassName"]), Some("my-storage-class"));
    assert_eq!(get_str(&claim, &["status", "phase"]), Some("Pending"));
    assert!(get(&claim, &["metadata", "ownerReferences"]).is_none(), "Retain/Retain: the claim outlives the set");
    let p = pod(&c, "default", "web-0").expect("web-0");
    assert_eq!(get_str(&p, &["status", "phase"]), Some("Pending"));
    assert_eq!(get_array(&p, &["spec", "volumes"]).first().and_then(|v| get_str(v, &["persistentVolumeClaim", "claimName"])), Some("www-web-0"));
    let msg = "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.";
    let scheduled = get_array(&p, &["status", "conditions"]).iter().find(|c| get_str(c, &["type"]) == Some("PodScheduled")).cloned().expect("PodScheduled");
    assert_eq!(get_str(&scheduled, &["message"]), Some(msg));
    assert!(events(&c, "web-0").contains(&format!("FailedScheduling {msg}")));
    assert!(pod(&c, "default", "web-1").is_none(), "OrderedReady waits for web-0");
    let ev = events(&c, "web");
    assert!(ev.contains(&"SuccessfulCreate create Claim www-web-0 Pod web-0 in StatefulSet web success".to_string()), "{ev:?}");
    assert!(ev.contains(&"SuccessfulCreate create Pod web-0 in StatefulSet web successful".to_string()), "{ev:?}");
    let set = c.api.store.get_by(rid::STATEFULSET, "default", "web").unwrap();
    assert_eq!(get_i64(set, &["status", "replicas"]), Some(1));
    assert_eq!(get_i64(set, &["status", "availableReplicas"]), Some(0));
    assert!(get(set, &["status", "readyReplicas"]).is_none());
    // The template's claim was defaulted as the API server does.
    assert_eq!(get_str(&get_array(set, &["spec", "volumeClaimTemplates"])[0], &["spec", "volumeMode"]), Some("Filesystem"));
}

#[test]
fn the_website_web_statefulset_waits_on_its_first_claim() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &example("application/web/web.yaml"));
    c.run_to_quiet(120_000);
    assert!(c.api.store.get_by(rid::PVC, "default", "www-web-0").is_some());
    // Claims are simulated since #13: the default class provisions once the scheduler
    // picks a node, so web-0 may run and web-1 follow; what stays is the order.
    let pods = requests(&c, "create", "Pod/default/", "statefulset-controller");
    assert_eq!(pods.first().map(String::as_str), Some("Pod/default/web-0"));
    let claims = requests(&c, "create", "PersistentVolumeClaim/default/", "statefulset-controller");
    assert_eq!(claims.first().map(String::as_str), Some("PersistentVolumeClaim/default/www-web-0"), "the claim before its pod");
    // Parallel creates both pods and both claims.
    let text = example("application/web/web.yaml")
        .replace("  replicas: 2\n", "  replicas: 2\n  podManagementPolicy: Parallel\n")
        .replace("name: web\n", "name: par\n");
    apply(&mut c, &text);
    c.run_to_quiet(120_000);
    assert!(c.api.store.get_by(rid::PVC, "default", "www-par-0").is_some() && c.api.store.get_by(rid::PVC, "default", "www-par-1").is_some());
}

#[test]
fn a_retention_policy_makes_the_set_own_its_claims() {
    let mut c = Cluster::new(Config::default());
    let text = example("application/web/web.yaml")
        .replace("  replicas: 2\n", "  replicas: 2\n  persistentVolumeClaimRetentionPolicy:\n    whenDeleted: Delete\n    whenScaled: Retain\n");
    apply(&mut c, &text);
    c.run_to_quiet(120_000);
    let set = c.api.store.get_by(rid::STATEFULSET, "default", "web").unwrap().clone();
    let claim = c.api.store.get_by(rid::PVC, "default", "www-web-0").unwrap();
    let refs = get_array(claim, &["metadata", "ownerReferences"]);
    assert_eq!(refs.len(), 1);
    assert_eq!(get_str(&refs[0], &["kind"]), Some("StatefulSet"));
    assert_eq!(get_str(&refs[0], &["uid"]), Some(api::uid(&set)));
}

fn daemon_pods(c: &Cluster, ns: &str, ds: &str) -> Vec<Object> {
    c.api
        .store
        .list(rid::POD, Some(ns))
        .filter(|p| api::controller_ref(p).and_then(|r| get_str(r, &["name"])) == Some(ds) && !api::is_deleting(p))
        .cloned()
        .collect()
}

fn nodes_of(pods: &[Object]) -> Vec<String> {
    let mut v: Vec<String> = pods.iter().map(|p| get_str(p, &["spec", "nodeName"]).unwrap_or("").to_string()).collect();
    v.sort();
    v
}

#[test]
fn a_daemonset_runs_one_pod_per_schedulable_worker() {
    let mut c = Cluster::new(Config::default());
    // The example tolerates the old master taint only: the control-plane node is left out.
    assert_eq!(apply(&mut c, &example("controllers/daemonset.yaml")), vec!["daemonset.apps/fluentd-elasticsearch created"]);
    c.run_to_quiet(120_000);
    let pods = daemon_pods(&c, "kube-system", "fluentd-elasticsearch");
    assert_eq!(nodes_of(&pods), vec!["node-a", "node-b", "node-c"]);
    let p = &pods[0];
    assert!(api::name(p).starts_with("fluentd-elasticsearch-"));
    let hash = api::label(p, "controller-revision-hash").expect("hash label").to_string();
    let rev = c.api.store.get_by(rid::CONTROLLERREVISION, "kube-system", &format!("fluentd-elasticsearch-{hash}")).expect("revision");
    assert_eq!(get_i64(rev, &["revision"]), Some(1));
    let terms = get_array(p, &["spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"]);
    assert_eq!(terms.len(), 1);
    let field = &get_array(&terms[0], &["matchFields"])[0];
    assert_eq!(get_str(field, &["key"]), Some("metadata.name"));
    assert_eq!(get_array(field, &["values"])[0].as_str(), get_str(p, &["spec", "nodeName"]));
    let keys: Vec<&str> = get_array(p, &["spec", "tolerations"]).iter().filter_map(|t| get_str(t, &["key"])).collect();
    assert_eq!(
        keys,
        vec![
            "node-role.kubernetes.io/master",
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
            "node.kubernetes.io/disk-pressure",
            "node.kubernetes.io/memory-pressure",
            "node.kubernetes.io/pid-pressure",
            "node.kubernetes.io/unschedulable",
        ]
    );
    assert!(get_array(p, &["spec", "tolerations"]).iter().all(|t| get(t, &["tolerationSeconds"]).is_none()), "never evicted for node problems");
    let ds = c.api.store.get_by(rid::DAEMONSET, "kube-system", "fluentd-elasticsearch").unwrap();
    assert_eq!(get_i64(ds, &["status", "desiredNumberScheduled"]), Some(3));
    assert_eq!(get_i64(ds, &["status", "currentNumberScheduled"]), Some(3));
    assert_eq!(get_i64(ds, &["status", "numberMisscheduled"]), Some(0));
    assert_eq!(get_i64(ds, &["status", "updatedNumberScheduled"]), Some(3));
    assert_eq!(get_i64(ds, &["status", "observedGeneration"]), Some(1));
    let ready = get_i64(ds, &["status", "numberReady"]).unwrap();
    assert_eq!(ready, pods.iter().filter(|p| pod_is_ready(p)).count() as i64);
    assert_eq!(get_i64(ds, &["status", "numberAvailable"]).unwrap_or(0) + get_i64(ds, &["status", "numberUnavailable"]).unwrap_or(0), 3);
    let ev = events(&c, "fluentd-elasticsearch");
    for p in &pods {
        assert!(ev.contains(&format!("SuccessfulCreate Created pod: {}", api::name(p))), "{ev:?}");
    }
}

#[test]
fn a_daemonset_that_tolerates_the_control_plane_runs_there_too() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &example("controllers/fluentd-daemonset.yaml"));
    c.run_to_quiet(120_000);
    assert_eq!(nodes_of(&daemon_pods(&c, "kube-system", "fluentd-elasticsearch")), vec!["control-plane", "node-a", "node-b", "node-c"]);
    let ds = c.api.store.get_by(rid::DAEMONSET, "kube-system", "fluentd-elasticsearch").unwrap();
    assert_eq!(get_i64(ds, &["status", "desiredNumberScheduled"]), Some(4));
    // numberReady and numberAvailable count the pods the kubelets made Ready.
    let pods = daemon_pods(&c, "kube-system", "fluentd-elasticsearch");
    let ready = pods.iter().filter(|p| pod_is_ready(p)).count() as i64;
    assert_eq!(get_i64(ds, &["status", "numberReady"]), Some(ready));
    assert_eq!(get_i64(ds, &["status", "numberUnavailable"]).unwrap_or(0), 4 - ready);
}

#[test]
fn a_daemonset_follows_nodes_as_they_come_and_go() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &example("application/basic-daemonset.yaml"));
    c.run_to_quiet(120_000);
    assert_eq!(nodes_of(&daemon_pods(&c, "default", "example-daemonset")), vec!["node-a", "node-b", "node-c"]);
    // A node that registers later gets a pod aimed at it.
    let node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-d\n  labels:\n    kubernetes.io/hostname: node-d\n";
    assert_eq!(apply(&mut c, node), vec!["node/node-d created"]);
    c.run_to_quiet(120_000);
    let pods = daemon_pods(&c, "default", "example-daemonset");
    assert_eq!(pods.len(), 4);
    assert!(pods.iter().any(|p| kubeloop_core::loops::controllers::daemonset::target_node(p).as_deref() == Some("node-d")));
    let ds = c.api.store.get_by(rid::DAEMONSET, "default", "example-daemonset").unwrap();
    assert_eq!(get_i64(ds, &["status", "desiredNumberScheduled"]), Some(4));
    // The node goes again: its pod, never started there, is removed.
    c.act(admin(), Action::Kubectl("delete node node-d".into()));
    c.run_to_quiet(120_000);
    assert_eq!(daemon_pods(&c, "default", "example-daemonset").len(), 3);
    let ds = c.api.store.get_by(rid::DAEMONSET, "default", "example-daemonset").unwrap();
    assert_eq!(get_i64(ds, &["status", "desiredNumberScheduled"]), Some(3));
}

fn agent(image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent\nspec:\n  selector:\n    matchLabels: {{app: agent}}\n  template:\n    metadata:\n      labels: {{app: agent}}\n    spec:\n      terminationGracePeriodSeconds: 5\n      containers:\n      - name: agent\n        image: {image}\n"
    )
}

#[test]
fn a_daemonset_rolls_its_pods_one_node_at_a_time() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &agent("nginx:1.26"));
    c.run_to_quiet(120_000);
    let ds = c.api.store.get_by(rid::DAEMONSET, "default", "agent").unwrap();
    assert_eq!(get_i64(ds, &["status", "numberReady"]), Some(3));
    assert_eq!(get_i64(ds, &["status", "numberAvailable"]), Some(3));
    assert!(get(ds, &["status", "numberUnavailable"]).is_none());
    assert_eq!(apply(&mut c, &agent("nginx:1.27")), vec!["daemonset.apps/agent configured"]);
    run_checking(&mut c, 90_000, |c| {
        let ready_nodes = daemon_pods(c, "default", "agent").iter().filter(|p| pod_is_ready(p)).count();
        assert!(ready_nodes >= 2, "more than one node without a ready daemon pod at {}", c.now);
    });
    c.run_to_quiet(180_000);
    let pods = daemon_pods(&c, "default", "agent");
    assert_eq!(nodes_of(&pods), vec!["node-a", "node-b", "node-c"]);
    assert!(pods.iter().all(|p| get_array(p, &["spec", "containers"])[0]["image"].as_str() == Some("nginx:1.27")));
    let ds = c.api.store.get_by(rid::DAEMONSET, "default", "agent").unwrap();
    assert_eq!(get_i64(ds, &["status", "updatedNumberScheduled"]), Some(3));
    assert_eq!(get_i64(ds, &["status", "numberReady"]), Some(3));
    assert_eq!(get_i64(ds, &["status", "observedGeneration"]), Some(2));
    let hashes: std::collections::BTreeSet<&str> = pods.iter().filter_map(|p| api::label(p, "controller-revision-hash")).collect();
    assert_eq!(hashes.len(), 1);
    assert_eq!(c.api.store.list(rid::CONTROLLERREVISION, Some("default")).count(), 2);
    let deletes = requests(&c, "delete", "Pod/default/agent-", "daemon-set-controller");
    assert_eq!(deletes.len(), 3, "one old pod per node: {deletes:?}");
    assert!(events(&c, "agent").iter().filter(|e| e.starts_with("SuccessfulDelete Deleted pod: agent-")).count() == 3);
}

#[test]
fn a_statefulset_spec_changes_only_in_the_fields_the_api_allows() {
    let mut c = Cluster::new(Config::default());
    assert_eq!(apply(&mut c, &sts(1, "nginx:1.27", "OrderedReady")), vec!["statefulset.apps/web created"]);
    // Scaling and a new image are allowed.
    assert_eq!(apply(&mut c, &sts(2, "nginx:1.28", "OrderedReady")), vec!["statefulset.apps/web configured"]);
    // The pod management policy, the service name and the selector are not, and the API says
    // so once for the whole spec.
    let forbidden = "StatefulSet.apps \"web\" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden";
    let out = apply(&mut c, &sts(2, "nginx:1.28", "Parallel"));
    assert!(out[0].contains(forbidden), "{out:?}");
    let out = apply(&mut c, &sts(2, "nginx:1.28", "OrderedReady").replace("serviceName: nginx", "serviceName: other"));
    assert!(out[0].contains(forbidden), "{out:?}");
    let out = apply(&mut c, &sts(2, "nginx:1.28", "OrderedReady").replace("{app: nginx}", "{app: nginx2}"));
    assert!(out[0].contains(forbidden) && !out[0].contains("spec.selector"), "{out:?}");
}

#[test]
fn a_statefulset_with_the_largest_replica_count_creates_in_bounded_steps() {
    let mut c = Cluster::new(Config::default());
    let text = sts(2147483647, "nginx:1.27", "Parallel");
    assert_eq!(apply(&mut c, &text), vec!["statefulset.apps/web created"]);
    c.run_until(c.now + 6);
    let first = c.api.store.list(rid::POD, Some("default")).filter(|p| api::name(p).starts_with("web-")).count();
    assert!(first >= 500 && first % 500 == 0, "each sync creates one batch of 500: {first}");
    c.run_until(c.now + 10);
    let made = c.api.store.list(rid::POD, Some("default")).filter(|p| api::name(p).starts_with("web-")).count();
    assert!(made > first && made % 500 == 0, "and the syncs its pods' events bring go on: {made}");
}
