//! Deployment strategies, deletion propagation, controller restarts and preemption, each
//! checked against what Kubernetes does.

// Tests build their fixtures in memory; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::trace::Flow;
use kubeloop_core::apiserver::{Credentials, Request};
use kubeloop_core::cluster::{Action, Cluster, Config, Fault};
use kubeloop_core::foundation::api::{self, get_array, get_str, rid};

fn admin() -> Credentials {
    Credentials::Token("admin-token".into())
}

fn apply(c: &mut Cluster, text: &str) -> Vec<String> {
    c.act(admin(), Action::Apply { text: text.into(), file: "test.yaml".into() }).output
}

fn deployment(image: &str, strategy: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n  strategy: {strategy}\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: web\n        image: {image}\n"
    )
}

fn scalings(c: &Cluster) -> Vec<String> {
    c.api
        .trace
        .records()
        .iter()
        .filter(|r| r.component == "deployment-controller" && r.stage == "scale" || r.stage == "create-replicaset")
        .map(|r| r.message.clone())
        .collect()
}

fn ready_pods(c: &Cluster) -> usize {
    c.api.store.list(rid::POD, None).filter(|p| !api::is_deleting(p) && kubeloop_core::foundation::pod::pod_is_ready(p)).count()
}

#[test]
fn a_rolling_update_follows_max_surge_and_max_unavailable() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &deployment("nginx:1.26", "{type: RollingUpdate}"));
    c.run_to_quiet(600_000);
    assert_eq!(ready_pods(&c), 3);
    let out = apply(&mut c, &deployment("nginx:1.27", "{type: RollingUpdate}"));
    assert_eq!(out, vec!["deployment.apps/web configured"]);
    c.run_to_quiet(600_000);
    let rss: Vec<_> = c.api.store.list(rid::REPLICASET, None).cloned().collect();
    assert_eq!(rss.len(), 2, "the old ReplicaSet is kept for history");
    let (old, new): (Vec<_>, Vec<_>) = rss.iter().partition(|r| api::annotation(r, "deployment.kubernetes.io/revision") == Some("1"));
    let (old, new) = (api::name(old[0]).to_string(), api::name(new[0]).to_string());
    assert_eq!(new[0..].len(), new.len());
    let s = scalings(&c);
    let rolled: Vec<&String> = s.iter().skip(1).collect();
    // With 3 replicas, 25% surge rounds up to 1 and 25% unavailable rounds down to 0.
    let expected = [
        format!("Deployment/default/web has no ReplicaSet for its template: created {new} with 1 replicas"),
        format!("Scaled down replica set {old} from 3 to 2"),
        format!("Scaled up replica set {new} from 1 to 2"),
        format!("Scaled down replica set {old} from 2 to 1"),
        format!("Scaled up replica set {new} from 2 to 3"),
        format!("Scaled down replica set {old} from 1 to 0"),
    ];
    assert_eq!(rolled, expected.iter().collect::<Vec<_>>());
    let d = c.api.store.get_by(rid::DEPLOYMENT, "default", "web").unwrap();
    assert_eq!(api::annotation(d, "deployment.kubernetes.io/revision"), Some("2"));
    assert_eq!(d["status"]["updatedReplicas"], 3);
    assert_eq!(ready_pods(&c), 3);
}

#[test]
fn recreate_stops_every_old_pod_before_starting_new_ones() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &deployment("nginx:1.26", "{type: Recreate}"));
    c.run_to_quiet(600_000);
    let t0 = c.now;
    apply(&mut c, &deployment("nginx:1.27", "{type: Recreate}"));
    c.run_to_quiet(600_000);
    let s = scalings(&c);
    assert!(s[1].starts_with("Scaled down replica set web-") && s[1].ends_with("from 3 to 0"), "{s:?}");
    assert!(s[2].contains("created web-") && s[2].ends_with("with 3 replicas"), "{s:?}");
    // No new pod existed while an old one was still running.
    let first_new = c.api.trace.records().iter().find(|r| r.stage == "create-pod" && r.t > t0).map(|r| r.t).unwrap();
    let last_old_gone = c.api.trace.records().iter().filter(|r| r.stage == "terminate" && r.message.contains("deleted the pod")).map(|r| r.t).max().unwrap();
    assert!(first_new >= last_old_gone, "new pods at {first_new}ms, last old pod gone at {last_old_gone}ms");
    assert_eq!(ready_pods(&c), 3);
}

fn delete(c: &mut Cluster, cascade: &str) -> Vec<String> {
    c.act(admin(), Action::Kubectl(format!("delete deployment web --cascade={cascade}"))).output
}

#[test]
fn deletion_propagates_in_the_background_by_default() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &deployment("nginx:1.27", "{type: RollingUpdate}"));
    c.run_to_quiet(600_000);
    assert_eq!(delete(&mut c, "background"), vec!["deployment.apps \"web\" deleted from default namespace"]);
    assert!(c.api.store.get_by(rid::DEPLOYMENT, "default", "web").is_none(), "the owner goes at once");
    c.run_to_quiet(600_000);
    assert_eq!(c.api.store.count(rid::REPLICASET), 0);
    assert_eq!(c.api.store.count(rid::POD), 0);
}

#[test]
fn foreground_deletion_waits_for_the_dependents() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &deployment("nginx:1.27", "{type: RollingUpdate}"));
    c.run_to_quiet(600_000);
    delete(&mut c, "foreground");
    let d = c.api.store.get_by(rid::DEPLOYMENT, "default", "web").expect("still there while dependents exist");
    assert!(api::is_deleting(d));
    assert_eq!(get_array(d, &["metadata", "finalizers"]), &[kubeloop_core::json!("foregroundDeletion")]);
    c.run_until(c.now + 50);
    assert!(c.api.store.get_by(rid::DEPLOYMENT, "default", "web").is_some(), "pods are still terminating");
    assert!(c.api.store.list(rid::POD, None).all(|p| api::is_deleting(p)));
    c.run_to_quiet(600_000);
    assert!(c.api.store.get_by(rid::DEPLOYMENT, "default", "web").is_none());
    assert_eq!(c.api.store.count(rid::POD), 0);
}

#[test]
fn orphaning_keeps_the_replicaset_and_a_new_deployment_adopts_it() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &deployment("nginx:1.27", "{type: RollingUpdate}"));
    c.run_to_quiet(600_000);
    let pods_before: Vec<String> = c.api.store.list(rid::POD, None).map(|p| api::name(p).to_string()).collect();
    delete(&mut c, "orphan");
    c.run_to_quiet(600_000);
    assert!(c.api.store.get_by(rid::DEPLOYMENT, "default", "web").is_none());
    let rs = c.api.store.list(rid::REPLICASET, None).next().expect("orphaned ReplicaSet").clone();
    assert!(api::controller_ref(&rs).is_none());
    apply(&mut c, &deployment("nginx:1.27", "{type: RollingUpdate}"));
    c.run_to_quiet(600_000);
    let rs = c.api.store.list(rid::REPLICASET, None).next().expect("adopted").clone();
    assert_eq!(api::controller_ref(&rs).and_then(|r| get_str(r, &["kind"])), Some("Deployment"));
    let pods_after: Vec<String> = c.api.store.list(rid::POD, None).map(|p| api::name(p).to_string()).collect();
    assert_eq!(pods_before, pods_after, "the same pods kept running throughout");
}

#[test]
fn a_stopped_controller_relists_after_its_watch_expires() {
    let mut c = Cluster::new(Config::default());
    c.act(admin(), Action::Fault(Fault::ControllerDown("replicaset-controller".into())));
    apply(&mut c, &deployment("nginx:1.27", "{type: RollingUpdate}"));
    c.run_until(120_000);
    assert_eq!(c.api.store.count(rid::POD), 0, "no pods while the ReplicaSet controller is down");
    assert_eq!(c.api.store.count(rid::REPLICASET), 1);
    c.act(admin(), Action::Fault(Fault::ControllerUp("replicaset-controller".into())));
    c.run_to_quiet(600_000);
    assert_eq!(ready_pods(&c), 3);
    // A restarted controller starts from a fresh list, then reconciles what it finds.
    assert!(
        c.api.trace.records().iter().any(|r| r.component == "replicaset-controller" && r.stage == "list" && r.message == "listed 1 ReplicaSets and 0 Pods"),
        "{:?}",
        c.api.trace.records().iter().filter(|r| r.component == "replicaset-controller" && r.stage == "list").collect::<Vec<_>>()
    );
}

#[test]
fn a_higher_priority_pod_preempts_a_lower_one() {
    let mut nodes = kubeloop_core::cluster::default_nodes();
    nodes.truncate(2); // control plane and node-a only
    let mut c = Cluster::new(Config { nodes, ..Config::default() });
    apply(
        &mut c,
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: low}\nspec:\n  containers:\n  - {name: c, image: nginx:1.27, resources: {requests: {cpu: \"3\"}}}\n",
    );
    c.run_to_quiet(600_000);
    apply(&mut c, "apiVersion: v1\nkind: Pod\nmetadata: {name: urgent}\nspec:\n  priorityClassName: high\n  containers:\n  - {name: c, image: nginx:1.27, resources: {requests: {cpu: \"3\"}}}\n");
    c.run_to_quiet(600_000);
    let urgent = c.api.store.get_by(rid::POD, "default", "urgent").unwrap();
    assert_eq!(get_str(urgent, &["spec", "nodeName"]), Some("node-a"));
    assert_eq!(urgent["spec"]["priority"], 1000);
    assert!(c.api.store.get_by(rid::POD, "default", "low").is_none(), "the victim was deleted");
    let preempted: Vec<String> = c
        .api
        .store
        .list(rid::EVENT, None)
        .filter(|e| get_str(e, &["reason"]) == Some("Preempted"))
        .map(|e| get_str(e, &["message"]).unwrap_or("").to_string())
        .collect();
    assert_eq!(preempted, vec![format!("Preempted by pod {} on node node-a", api::uid(urgent))]);
    assert!(c.api.trace.records().iter().any(|r| r.flow == Flow::Pending && r.stage == "filter" && r.object == "Pod/default/urgent"));
}

#[test]
fn preemption_reprieves_the_victims_it_can_spare_most_important_first() {
    // SelectVictimsOnNode removes every lower-priority pod, then puts back the most important
    // first while the incoming pod still fits: "mid" has to go, "low" is spared, although
    // evicting the least important first would have taken both.
    let mut nodes = kubeloop_core::cluster::default_nodes();
    nodes.truncate(2); // control plane and node-a only
    let mut c = Cluster::new(Config { nodes, ..Config::default() });
    let pod = |name: &str, class: &str, cpu: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  priorityClassName: {class}\n  containers:\n  - {{name: c, image: nginx:1.27, resources: {{requests: {{cpu: {cpu}}}}}}}\n")
    };
    let classes = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: middle}\nvalue: 500\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: bottom}\nvalue: 0\n";
    apply(&mut c, classes);
    apply(&mut c, &format!("{}---\n{}", pod("mid", "middle", "2500m"), pod("low", "bottom", "1")));
    c.run_to_quiet(600_000);
    for name in ["mid", "low"] {
        assert_eq!(get_str(c.api.store.get_by(rid::POD, "default", name).unwrap(), &["spec", "nodeName"]), Some("node-a"), "{name}");
    }
    apply(&mut c, &pod("urgent", "high", "2500m"));
    c.run_to_quiet(600_000);
    assert_eq!(get_str(c.api.store.get_by(rid::POD, "default", "urgent").unwrap(), &["spec", "nodeName"]), Some("node-a"));
    assert!(c.api.store.get_by(rid::POD, "default", "mid").is_none(), "the needed victim was deleted");
    let low = c.api.store.get_by(rid::POD, "default", "low").expect("the spared pod is kept");
    assert_eq!(get_str(low, &["spec", "nodeName"]), Some("node-a"));
}

#[test]
fn an_unauthorized_user_is_denied_with_the_real_message() {
    let mut c = Cluster::new(Config { users: vec![("jane".into(), "jane-token".into(), vec![])], ..Config::default() });
    let out = c.act(Credentials::Token("jane-token".into()), Action::Kubectl("delete pod anything".into())).output;
    assert_eq!(out, vec!["Error from server (Forbidden): pods \"anything\" is forbidden: User \"jane\" cannot delete resource \"pods\" in API group \"\" in the namespace \"default\""]);
    let e = c.api.handle(Request::new(kubeloop_core::apiserver::Verb::List, rid::POD, "default", "", Credentials::Token("wrong".into()))).unwrap_err();
    assert_eq!((e.code, e.reason.as_str()), (401, "Unauthorized"));
}

#[test]
fn a_rollout_that_cannot_progress_exceeds_its_deadline() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &deployment("nginxx:1.27", "{type: RollingUpdate}").replace("replicas: 3", "replicas: 1\n  progressDeadlineSeconds: 60"));
    c.run_until(50_000);
    let d = c.api.store.get_by(rid::DEPLOYMENT, "default", "web").unwrap().clone();
    let progressing = get_array(&d, &["status", "conditions"]).iter().find(|x| x["type"] == "Progressing").unwrap().clone();
    assert_eq!(progressing["status"], "True");
    c.run_until(80_000);
    let d = c.api.store.get_by(rid::DEPLOYMENT, "default", "web").unwrap().clone();
    let progressing = get_array(&d, &["status", "conditions"]).iter().find(|x| x["type"] == "Progressing").unwrap().clone();
    assert_eq!(progressing["status"], "False");
    assert_eq!(progressing["reason"], "ProgressDeadlineExceeded");
    let rs = c.api.store.list(rid::REPLICASET, None).next().unwrap();
    assert_eq!(progressing["message"], format!("ReplicaSet {:?} has timed out progressing.", api::name(rs)));
}

fn kubectl(c: &mut Cluster, cmd: &str) -> Vec<String> {
    c.act(admin(), Action::Kubectl(cmd.into())).output
}

fn replica_sets(c: &Cluster) -> Vec<kubeloop_core::foundation::api::Object> {
    let mut rss: Vec<_> = c.api.store.list(rid::REPLICASET, None).cloned().collect();
    rss.sort_by_key(|r| api::annotation(r, "deployment.kubernetes.io/revision").and_then(|v| v.parse::<i64>().ok()).unwrap_or(0));
    rss
}

/// `getNewReplicaSet` → `SetNewReplicaSetAnnotations`: the Deployment's annotations are
/// copied to its new ReplicaSet on every sync (`copyDeploymentAnnotationsToReplicaSet`),
/// except the ones `skipCopyAnnotation` names.
#[test]
fn a_change_cause_annotated_after_the_rollout_reaches_the_replica_set() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &deployment("nginx:1.27", "{type: RollingUpdate}"));
    c.run_to_quiet(600_000);
    assert_eq!(kubectl(&mut c, "annotate deployment/web kubernetes.io/change-cause=\"image nginx:1.27\""), vec!["deployment.apps/web annotated"]);
    c.run_to_quiet(600_000);
    assert_eq!(kubectl(&mut c, "rollout history deployment/web"), vec!["deployment.apps/web ", "REVISION  CHANGE-CAUSE", "1         image nginx:1.27", ""]);
    // A changed cause is copied again; the apply and revision bookkeeping never are.
    kubectl(&mut c, "annotate deployment/web --overwrite kubernetes.io/change-cause=\"scaled to 3\"");
    c.run_to_quiet(600_000);
    let rss = replica_sets(&c);
    assert_eq!(rss.len(), 1);
    let keys: Vec<&str> = rss[0]["metadata"]["annotations"].as_object().unwrap().keys().map(|k| k.as_str()).collect();
    assert_eq!(
        keys,
        vec![
            "deployment.kubernetes.io/desired-replicas",
            "deployment.kubernetes.io/max-replicas",
            "deployment.kubernetes.io/revision",
            "kubernetes.io/change-cause"
        ]
    );
    assert_eq!(api::annotation(&rss[0], "kubernetes.io/change-cause"), Some("scaled to 3"));
    assert_eq!(kubectl(&mut c, "rollout history deployment/web"), vec!["deployment.apps/web ", "REVISION  CHANGE-CAUSE", "1         scaled to 3", ""]);
}

/// `sync.go` scale: when replicas and maxSurge change together so that nothing is to be
/// added or removed, every ReplicaSet still gets the new desired-replicas and
/// max-replicas annotations (`scaleReplicaSet`), which ends the scaling event and lets
/// the rollout go on.
#[test]
fn changing_replicas_and_max_surge_together_mid_rollout_does_not_freeze_it() {
    let manifest = |image: &str, replicas: i64, surge: i64| {
        deployment(image, &format!("{{type: RollingUpdate, rollingUpdate: {{maxSurge: {surge}, maxUnavailable: 0}}}}"))
            .replace("replicas: 3", &format!("replicas: {replicas}\n  minReadySeconds: 20"))
    };
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &manifest("nginx:1.26", 3, 1));
    c.run_to_quiet(600_000);
    assert_eq!(ready_pods(&c), 3);
    apply(&mut c, &manifest("nginx:1.27", 3, 1));
    // Step until the new ReplicaSet has its first (surge) replica.
    while replica_sets(&c).len() < 2 {
        assert!(c.step(), "the new ReplicaSet is created");
    }
    c.run_until(c.now + 5_000);
    let sizes: Vec<i64> = replica_sets(&c).iter().map(|r| r["spec"]["replicas"].as_i64().unwrap()).collect();
    assert_eq!(sizes, vec![3, 1], "mid-rollout: 3 old and 1 new, none of them available yet");
    // 2 replicas + maxSurge 2 = 4 = the replicas that exist: a scaling event that adds nothing.
    assert_eq!(apply(&mut c, &manifest("nginx:1.27", 2, 2)), vec!["deployment.apps/web configured"]);
    c.run_to_quiet(600_000);
    let rss = replica_sets(&c);
    let sizes: Vec<i64> = rss.iter().map(|r| r["spec"]["replicas"].as_i64().unwrap()).collect();
    assert_eq!(sizes, vec![0, 2], "the rollout completed");
    for rs in &rss {
        assert_eq!(api::annotation(rs, "deployment.kubernetes.io/desired-replicas"), Some("2"), "{}", api::name(rs));
        assert_eq!(api::annotation(rs, "deployment.kubernetes.io/max-replicas"), Some("4"), "{}", api::name(rs));
    }
    let d = c.api.store.get_by(rid::DEPLOYMENT, "default", "web").unwrap();
    assert_eq!((d["status"]["updatedReplicas"].as_i64(), d["status"]["availableReplicas"].as_i64()), (Some(2), Some(2)));
    let progressing = get_array(d, &["status", "conditions"]).iter().find(|x| x["type"] == "Progressing").unwrap().clone();
    assert_eq!(progressing["reason"], "NewReplicaSetAvailable");
    assert_eq!(ready_pods(&c), 2);
}

/// `checkPausedConditions`: "If we have reported lack of progress, do not overwrite it
/// with a paused condition." A paused Deployment is then synced by `sync`, whose
/// `syncDeploymentStatus` only refreshes Available, so the timeout stays (and resuming
/// does not replace it with DeploymentResumed either).
#[test]
fn pausing_a_rollout_that_exceeded_its_deadline_keeps_progress_deadline_exceeded() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &deployment("nginxx:1.27", "{type: RollingUpdate}").replace("replicas: 3", "replicas: 1\n  progressDeadlineSeconds: 60"));
    c.run_until(80_000);
    let conditions = |c: &Cluster| get_array(c.api.store.get_by(rid::DEPLOYMENT, "default", "web").unwrap(), &["status", "conditions"]).to_vec();
    let before = conditions(&c);
    let summary: Vec<(String, String, String)> =
        before.iter().map(|x| (x["type"].as_str().unwrap().into(), x["status"].as_str().unwrap().into(), x["reason"].as_str().unwrap().into())).collect();
    let expected = vec![
        ("Available".to_string(), "False".to_string(), "MinimumReplicasUnavailable".to_string()),
        ("Progressing".to_string(), "False".to_string(), "ProgressDeadlineExceeded".to_string()),
    ];
    assert_eq!(summary, expected);
    assert_eq!(kubectl(&mut c, "rollout pause deployment/web"), vec!["deployment.apps/web paused"]);
    c.run_until(c.now + 120_000);
    let d = c.api.store.get_by(rid::DEPLOYMENT, "default", "web").unwrap();
    assert_eq!(d["spec"]["paused"], true);
    assert_eq!(conditions(&c), before, "the paused Deployment keeps its conditions as they were");
    assert_eq!(kubectl(&mut c, "rollout resume deployment/web"), vec!["deployment.apps/web resumed"]);
    c.run_until(c.now + 120_000);
    assert_eq!(conditions(&c), before, "resuming does not report DeploymentResumed over the timeout");
}

const RC: &str = "apiVersion: v1\nkind: ReplicationController\nmetadata:\n  name: nginx\nspec:\n  replicas: 3\n  template:\n    metadata:\n      labels: {app: nginx}\n    spec:\n      containers:\n      - name: nginx\n        image: nginx:1.27\n        ports:\n        - containerPort: 80\n";

#[test]
fn a_replication_controller_keeps_its_pods_and_orphans_them_when_deleted_through_the_api() {
    let mut c = Cluster::new(Config::default());
    assert_eq!(apply(&mut c, RC), vec!["replicationcontroller/nginx created"]);
    c.run_to_quiet(600_000);
    let rc = c.api.store.get_by(rid::REPLICATIONCONTROLLER, "default", "nginx").unwrap().clone();
    // SetDefaults_ReplicationController fills the selector and labels from the template.
    assert_eq!(rc["spec"]["selector"]["app"], "nginx");
    assert_eq!(rc["metadata"]["labels"]["app"], "nginx");
    assert_eq!(rc["status"]["readyReplicas"], 3);
    assert_eq!(ready_pods(&c), 3);
    let pod = c.api.store.list(rid::POD, None).next().unwrap().clone();
    let owner = &get_array(&pod, &["metadata", "ownerReferences"])[0];
    assert_eq!((get_str(owner, &["kind"]), get_str(owner, &["apiVersion"])), (Some("ReplicationController"), Some("v1")));
    assert!(api::name(&pod).starts_with("nginx-"));
    let rows = kubectl(&mut c, "get rc -o wide");
    assert_eq!(rows[0].split_whitespace().collect::<Vec<_>>(), ["NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]);
    assert_eq!(rows[1].split_whitespace().collect::<Vec<_>>()[..4], ["nginx", "3", "3", "3"]);
    assert_eq!(rows[1].split_whitespace().collect::<Vec<_>>()[5..], ["nginx", "nginx:1.27", "app=nginx"], "{rows:?}");
    // A deleted pod is replaced; a lower count deletes the surplus.
    kubectl(&mut c, &format!("delete pod {}", api::name(&pod)));
    c.run_to_quiet(600_000);
    assert_eq!(ready_pods(&c), 3);
    assert_eq!(kubectl(&mut c, "scale rc nginx --replicas=1"), vec!["replicationcontroller/nginx scaled"]);
    c.run_to_quiet(600_000);
    assert_eq!(ready_pods(&c), 1);
    // core/v1 ReplicationControllers orphan their pods by default when the API is called
    // without a propagation policy (kubectl asks for Background).
    c.request(Request::delete(rid::REPLICATIONCONTROLLER, "default", "nginx", admin())).unwrap();
    c.run_to_quiet(600_000);
    let left: Vec<_> = c.api.store.list(rid::POD, None).filter(|p| !api::is_deleting(p)).collect();
    assert_eq!(left.len(), 1, "the pod outlives its controller");
    assert!(get_array(left[0], &["metadata", "ownerReferences"]).is_empty());
}

#[test]
fn a_replication_controller_whose_selector_misses_its_template_is_refused() {
    let mut c = Cluster::new(Config::default());
    let out = apply(&mut c, &RC.replace("  replicas: 3\n", "  replicas: 3\n  selector: {app: web}\n"));
    assert_eq!(
        out,
        vec!["The ReplicationController \"nginx\" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"nginx\"}: selector does not match template labels"]
    );
}

const BUDGET: &str =
    "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: web-pdb\nspec:\n  minAvailable: 2\n  selector:\n    matchLabels: {app: web}\n";

fn evict(c: &mut Cluster, pod: &str) -> Result<(), kubeloop_core::foundation::status::Status> {
    let body = kubeloop_core::foundation::value::json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": "default"}});
    let mut req = Request::create(rid::POD, "default", body, admin()).with_sub("eviction");
    req.name = pod.to_string();
    c.request(req).map(|_| ())
}

#[test]
fn a_disruption_budget_reports_its_status_and_refuses_the_eviction_that_would_break_it() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &deployment("nginx:1.27", "{type: RollingUpdate}"));
    apply(&mut c, BUDGET);
    c.run_to_quiet(600_000);
    let pdb = c.api.store.get_by(rid::PDB, "default", "web-pdb").unwrap().clone();
    let s = &pdb["status"];
    assert_eq!(
        (s["currentHealthy"].as_i64(), s["desiredHealthy"].as_i64(), s["expectedPods"].as_i64(), s["disruptionsAllowed"].as_i64()),
        (Some(3), Some(2), Some(3), Some(1))
    );
    assert_eq!(s["conditions"][0]["reason"], "SufficientPods");
    let rows = kubectl(&mut c, "get pdb");
    assert_eq!(rows[0].split_whitespace().collect::<Vec<_>>(), ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"]);
    assert_eq!(rows[1].split_whitespace().collect::<Vec<_>>()[..4], ["web-pdb", "2", "N/A", "1"]);
    let pods: Vec<String> = c.api.store.list(rid::POD, None).map(|p| api::name(p).to_string()).collect();
    // The first eviction takes the one allowed disruption; the second, at once, is refused
    // with the budget's numbers as its status holds them: the eviction lowered only
    // disruptionsAllowed, and the controller has not recounted the healthy pods yet.
    evict(&mut c, &pods[0]).expect("first eviction allowed");
    let err = evict(&mut c, &pods[1]).unwrap_err();
    assert_eq!(err.code, 429);
    assert_eq!(err.message, "Cannot evict pod as it would violate the pod's disruption budget.");
    assert_eq!(err.details.as_ref().unwrap()["causes"][0]["message"], "The disruption budget web-pdb needs 2 healthy pods and has 3 currently");
    let pdb = c.api.store.get_by(rid::PDB, "default", "web-pdb").unwrap().clone();
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    assert!(pdb["status"]["disruptedPods"].get(&pods[0]).is_some(), "the eviction is recorded for the controller");
    // Once the replacement is Ready the budget allows one again.
    c.run_to_quiet(600_000);
    let pdb = c.api.store.get_by(rid::PDB, "default", "web-pdb").unwrap().clone();
    assert_eq!(pdb["status"]["disruptionsAllowed"], 1);
    assert!(pdb["status"].get("disruptedPods").is_none(), "the evicted pod is gone, so is its entry");
    evict(&mut c, &pods[1]).expect("allowed again");
}

#[test]
fn a_budget_with_max_unavailable_over_unmanaged_pods_warns() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: lone\n  labels: {app: web}\nspec:\n  containers:\n  - name: c\n    image: nginx:1.27\n");
    apply(&mut c, &BUDGET.replace("minAvailable: 2", "maxUnavailable: 1"));
    c.run_to_quiet(600_000);
    // Unmanaged pods add nothing to the expected count: 0 expected, 1 healthy, 1 allowed.
    let pdb = c.api.store.get_by(rid::PDB, "default", "web-pdb").unwrap().clone();
    assert_eq!((pdb["status"]["expectedPods"].as_i64(), pdb["status"]["disruptionsAllowed"].as_i64()), (Some(0), Some(1)));
    let reasons: Vec<String> = c
        .api
        .store
        .list(rid::EVENT, None)
        .filter(|e| get_str(e, &["involvedObject", "kind"]) == Some("PodDisruptionBudget"))
        .map(|e| format!("{}: {}", get_str(e, &["reason"]).unwrap_or(""), get_str(e, &["message"]).unwrap_or("")))
        .collect();
    assert!(reasons.iter().any(|r| r.starts_with("UnmanagedPods: Pods selected by this PodDisruptionBudget")), "{reasons:?}");
}
