//! The scheduler's volume plugins: VolumeBinding's PreFilter, Filter and PreBind wait, and
//! VolumeZone. The claims here use classes no provisioner serves, so the test itself plays
//! the PV controller where a binding must complete.

// Tests build their fixtures in memory; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::{Credentials, Request};
use kubeloop_core::cluster::{Action, Cluster, Config};
use kubeloop_core::foundation::api::{self, get_str, rid};
use kubeloop_core::foundation::value::json;

fn admin() -> Credentials {
    Credentials::Token("admin-token".into())
}

fn apply(c: &mut Cluster, text: &str) {
    let out = c.act(admin(), Action::Apply { text: text.to_string(), file: "t.yaml".into() }).output;
    assert!(out.iter().all(|l| !l.starts_with("error") && !l.starts_with("Error")), "{out:?}");
    c.run_to_quiet(60_000);
}

const CLASSES: &str = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: late}\nprovisioner: example.com/slow\nvolumeBindingMode: WaitForFirstConsumer\n---\napiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: local}\nprovisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\n";

fn claim(name: &str, class: &str) -> String {
    format!("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: {name}}}\nspec:\n  storageClassName: {class}\n  accessModes: [ReadWriteOnce]\n  resources: {{requests: {{storage: 1Gi}}}}\n")
}

fn pod(name: &str, claim: &str) -> String {
    format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers:\n  - name: app\n    image: nginx:1.27\n    volumeMounts: [{{name: data, mountPath: /data}}]\n  volumes:\n  - name: data\n    persistentVolumeClaim: {{claimName: {claim}}}\n")
}

fn pv(name: &str, class: &str, zone: &str) -> String {
    format!("apiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: {name}}}\nspec:\n  storageClassName: {class}\n  capacity: {{storage: 5Gi}}\n  accessModes: [ReadWriteOnce]\n  hostPath: {{path: /mnt/{name}}}\n  nodeAffinity:\n    required:\n      nodeSelectorTerms:\n      - matchExpressions:\n        - {{key: topology.kubernetes.io/zone, operator: In, values: [{zone}]}}\n")
}

fn node_of(c: &Cluster, name: &str) -> Option<String> {
    c.api.store.get_by(rid::POD, "default", name).and_then(|p| get_str(p, &["spec", "nodeName"]).map(str::to_string))
}

fn scheduled_message(c: &Cluster, name: &str) -> String {
    let p = c.api.store.get_by(rid::POD, "default", name).expect("pod");
    kubeloop_core::foundation::pod::condition(p, "PodScheduled").and_then(|c| get_str(c, &["message"])).unwrap_or("").to_string()
}

/// What the PV controller does once a volume and claim point at each other: the claim's
/// `volumeName`, its bind-completed annotation and phase, the volume's phase.
fn complete_binding(c: &mut Cluster, claim: &str, volume: &str) {
    let mut cl = (**c.api.store.get_by(rid::PVC, "default", claim).expect("claim")).clone();
    if get_str(&cl, &["spec", "volumeName"]).is_none() {
        api::set(&mut cl, &["spec", "volumeName"], json!(volume));
        api::set(&mut cl, &["metadata", "annotations", "pv.kubernetes.io/bind-completed"], json!("yes"));
        let cl = c.request(Request::update(rid::PVC, "default", claim, cl, admin())).expect("claim update");
        let mut st = (*cl).clone();
        api::set(&mut st, &["status", "phase"], json!("Bound"));
        c.request(Request::update(rid::PVC, "default", claim, st, admin()).with_sub("status")).expect("claim status");
    }
    c.run_to_quiet(60_000);
}

#[test]
fn a_wait_for_first_consumer_claim_is_marked_with_the_chosen_node_and_the_pod_waits_for_its_volume() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, CLASSES);
    apply(&mut c, &claim("data", "late"));
    apply(&mut c, &pod("app", "data"));
    let cl = c.api.store.get_by(rid::PVC, "default", "data").expect("claim");
    let selected = api::annotation(cl, "volume.kubernetes.io/selected-node").expect("the scheduler marks the claim").to_string();
    assert!(selected.starts_with("node-"), "{selected}");
    // PreBind waits: the pod is not bound and nothing says it failed.
    assert_eq!(node_of(&c, "app"), None);
    assert_eq!(scheduled_message(&c, "app"), "");
    // The provisioner makes a volume in the node's zone; the PV controller binds it.
    let zone = format!("zone-{}", &selected["node-".len()..]);
    let uid = api::uid(c.api.store.get_by(rid::PVC, "default", "data").expect("claim")).to_string();
    let mut v = kubeloop_core::foundation::manifest::parse_value(&pv("pvc-data", "late", &zone)).expect("yaml");
    api::set(&mut v, &["spec", "claimRef"], json!({"kind": "PersistentVolumeClaim", "namespace": "default", "name": "data", "uid": uid, "apiVersion": "v1"}));
    c.request(Request::create(rid::PV, "", v, admin())).expect("pv");
    complete_binding(&mut c, "data", "pvc-data");
    assert_eq!(node_of(&c, "app").as_deref(), Some(selected.as_str()));
}

#[test]
fn an_available_volume_pins_the_pod_to_its_zone_and_is_pre_bound_by_the_scheduler() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, CLASSES);
    apply(&mut c, &pv("disk-b", "local", "zone-b"));
    let mut v = (**c.api.store.get_by(rid::PV, "", "disk-b").expect("pv")).clone();
    api::set(&mut v, &["status", "phase"], json!("Available"));
    c.request(Request::update(rid::PV, "", "disk-b", v, admin()).with_sub("status")).expect("pv status");
    apply(&mut c, &claim("data", "local"));
    apply(&mut c, &pod("app", "data"));
    let v = c.api.store.get_by(rid::PV, "", "disk-b").expect("pv");
    assert_eq!(get_str(v, &["spec", "claimRef", "name"]), Some("data"), "the scheduler pre-binds the volume");
    assert_eq!(api::annotation(v, "pv.kubernetes.io/bound-by-controller"), Some("yes"));
    complete_binding(&mut c, "data", "disk-b");
    assert_eq!(node_of(&c, "app").as_deref(), Some("node-b"));
}

#[test]
fn a_bound_volume_in_another_zone_is_a_node_affinity_conflict() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, CLASSES);
    apply(&mut c, &pv("disk-c", "local", "zone-c"));
    apply(&mut c, &claim("data", "local"));
    let uid = api::uid(c.api.store.get_by(rid::PVC, "default", "data").expect("claim")).to_string();
    let mut v = (**c.api.store.get_by(rid::PV, "", "disk-c").expect("pv")).clone();
    api::set(&mut v, &["spec", "claimRef"], json!({"kind": "PersistentVolumeClaim", "namespace": "default", "name": "data", "uid": uid, "apiVersion": "v1"}));
    c.request(Request::update(rid::PV, "", "disk-c", v, admin())).expect("pv");
    complete_binding(&mut c, "data", "disk-c");
    // The only node of zone-c cannot take pods.
    c.act(admin(), Action::Kubectl("kubectl cordon node-c".into()));
    apply(&mut c, &pod("app", "data"));
    assert_eq!(node_of(&c, "app"), None);
    assert_eq!(
        scheduled_message(&c, "app"),
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, 2 node(s) had volume node affinity conflict. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    );
    c.act(admin(), Action::Kubectl("kubectl uncordon node-c".into()));
    c.run_to_quiet(60_000);
    assert_eq!(node_of(&c, "app").as_deref(), Some("node-c"));
}

#[test]
fn a_claim_with_no_volume_and_no_provisioner_finds_no_node() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, CLASSES);
    apply(&mut c, &claim("data", "local"));
    apply(&mut c, &pod("app", "data"));
    assert_eq!(node_of(&c, "app"), None);
    let msg = scheduled_message(&c, "app");
    assert!(msg.contains("3 node(s) didn't find available persistent volumes to bind"), "{msg}");
}

#[test]
fn volume_zone_keeps_pods_with_zone_labelled_volumes_in_that_zone() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, CLASSES);
    let zoned = "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: old-disk\n  labels: {topology.kubernetes.io/zone: zone-a__zone-b}\nspec:\n  storageClassName: local\n  capacity: {storage: 5Gi}\n  accessModes: [ReadWriteOnce]\n  hostPath: {path: /mnt/old}\n";
    apply(&mut c, zoned);
    apply(&mut c, &claim("data", "local"));
    let uid = api::uid(c.api.store.get_by(rid::PVC, "default", "data").expect("claim")).to_string();
    let mut v = (**c.api.store.get_by(rid::PV, "", "old-disk").expect("pv")).clone();
    api::set(&mut v, &["spec", "claimRef"], json!({"kind": "PersistentVolumeClaim", "namespace": "default", "name": "data", "uid": uid, "apiVersion": "v1"}));
    c.request(Request::update(rid::PV, "", "old-disk", v, admin())).expect("pv");
    complete_binding(&mut c, "data", "old-disk");
    c.act(admin(), Action::Kubectl("kubectl cordon node-a".into()));
    c.act(admin(), Action::Kubectl("kubectl cordon node-b".into()));
    apply(&mut c, &pod("app", "data"));
    let msg = scheduled_message(&c, "app");
    assert!(msg.contains("1 node(s) had no available volume zone"), "{msg}");
    c.act(admin(), Action::Kubectl("kubectl uncordon node-b".into()));
    c.run_to_quiet(60_000);
    assert_eq!(node_of(&c, "app").as_deref(), Some("node-b"));
}

#[test]
fn a_missing_claim_keeps_the_pod_off_every_node() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &pod("app", "nope"));
    assert_eq!(
        scheduled_message(&c, "app"),
        "0/4 nodes are available: persistentvolumeclaim \"nope\" not found. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    );
}
