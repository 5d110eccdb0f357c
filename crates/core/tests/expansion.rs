//! Growing a claim end to end: the expand controller's `ExternalExpanding`, the
//! external-resizer's ControllerExpandVolume (the claim's `allocatedResources`, its
//! `Resizing` and `FileSystemResizePending` conditions, the volume's new capacity), the
//! kubelet's NodeExpandVolume online at the pod's next sync or when a pod next mounts the
//! claim, a driver that is down, a driver that needs no node step, and a volume no resizer
//! serves.

// Tests build their fixtures in memory; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::Credentials;
use kubeloop_core::cluster::{Action, Cluster, Config, Fault};
use kubeloop_core::foundation::api::{get, get_array, get_str, rid, Object};
use kubeloop_core::foundation::value::json;
use kubeloop_core::loops::csi::CsiDriverSpec;

const DRIVER: &str = "disk.csi.kubeloop.dev";

fn admin() -> Credentials {
    Credentials::Token("admin-token".into())
}

fn apply(c: &mut Cluster, text: &str) -> Vec<String> {
    c.act(admin(), Action::Apply { text: text.into(), file: "test.yaml".into() }).output
}

fn kubectl(c: &mut Cluster, line: &str) -> Vec<String> {
    c.act(admin(), Action::Kubectl(line.into())).output
}

fn pvc(c: &Cluster, name: &str) -> Object {
    c.api.store.get_by(rid::PVC, "default", name).cloned().expect("claim exists")
}

fn pv_of(c: &Cluster, claim: &str) -> Object {
    let name = get_str(&pvc(c, claim), &["spec", "volumeName"]).unwrap_or("").to_string();
    c.api.store.get_by(rid::PV, "", &name).cloned().expect("volume exists")
}

fn capacity(o: &Object) -> String {
    get_str(o, &["status", "capacity", "storage"]).or_else(|| get_str(o, &["spec", "capacity", "storage"])).unwrap_or("-").to_string()
}

fn resize_status(o: &Object) -> Option<String> {
    get_str(o, &["status", "allocatedResourceStatuses", "storage"]).map(str::to_string)
}

fn conditions(o: &Object) -> Vec<String> {
    get_array(o, &["status", "conditions"]).iter().map(|c| get_str(c, &["type"]).unwrap_or("").to_string()).collect()
}

/// The events about `involved`, in order, as `reason: message (source)`.
fn events(c: &Cluster, involved: &str) -> Vec<String> {
    let mut evs: Vec<(String, String)> = c
        .api
        .store
        .list(rid::EVENT, None)
        .filter(|e| get_str(e, &["involvedObject", "name"]) == Some(involved))
        .map(|e| {
            let t = get_str(e, &["firstTimestamp"]).unwrap_or("").to_string();
            let src = get_str(e, &["source", "component"]).unwrap_or("");
            (t, format!("{}: {} ({src})", get_str(e, &["reason"]).unwrap_or(""), get_str(e, &["message"]).unwrap_or("")))
        })
        .collect();
    evs.sort();
    evs.into_iter().map(|(_, e)| e).collect()
}

const FAST: &str = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: fast\nprovisioner: disk.csi.kubeloop.dev\nvolumeBindingMode: Immediate\nallowVolumeExpansion: true\n---\n";

fn claim(name: &str, size: &str) -> String {
    format!(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: {name}\nspec:\n  storageClassName: fast\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: {size}\n---\n"
    )
}

fn pod(name: &str, claim: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: c\n    image: busybox:1.36\n    command: [sleep, '3600']\n    volumeMounts:\n    - {{name: d, mountPath: /data}}\n  volumes:\n  - name: d\n    persistentVolumeClaim: {{claimName: {claim}}}\n"
    )
}

fn running(c: &Cluster, name: &str) -> bool {
    c.api.store.get_by(rid::POD, "default", name).is_some_and(|p| get_str(p, &["status", "phase"]) == Some("Running"))
}

/// A Bound 1Gi claim `data` of the `fast` class, mounted by a running pod `app`.
fn mounted(config: Config) -> Cluster {
    let mut c = Cluster::new(config);
    apply(&mut c, &(FAST.to_string() + &claim("data", "1Gi")));
    c.run_until(10_000);
    apply(&mut c, &pod("app", "data"));
    c.run_until(30_000);
    assert!(running(&c, "app"));
    c
}

#[test]
fn a_mounted_claim_grows_online_disk_first_then_its_file_system_at_the_next_pod_sync() {
    let mut c = mounted(Config::default());
    let out = kubectl(&mut c, r#"patch pvc data -p '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}'"#);
    assert_eq!(out, ["persistentvolumeclaim/data patched"]);
    let asked = c.now;
    // The resizer marks the claim, then ControllerExpandVolume takes the driver's 2 s.
    c.run_until(asked + 1_000);
    let cl = pvc(&c, "data");
    assert_eq!(resize_status(&cl).as_deref(), Some("ControllerResizeInProgress"));
    assert_eq!(cl["status"]["allocatedResources"], json!({"storage": "2Gi"}));
    assert_eq!(conditions(&cl), ["Resizing"]);
    assert_eq!(capacity(&pv_of(&c, "data")), "1Gi");
    c.run_until(asked + 3_000);
    let cl = pvc(&c, "data");
    assert_eq!(capacity(&pv_of(&c, "data")), "2Gi", "the disk has grown");
    assert_eq!(capacity(&cl), "1Gi", "the claim shows its file system's size until the node grows it");
    assert_eq!(resize_status(&cl).as_deref(), Some("NodeResizePending"));
    assert_eq!(conditions(&cl), ["Resizing", "FileSystemResizePending"]);
    let pending = get_array(&cl, &["status", "conditions"]).iter().find(|c| c["type"] == "FileSystemResizePending").cloned().expect("condition");
    assert_eq!(pending["message"], "Waiting for user to (re-)start a pod to finish file system resize of volume on node.");
    assert!(kubectl(&mut c, "get pvc data")[1].contains(" 1Gi "), "{:?}", kubectl(&mut c, "get pvc data"));
    // The pod's next periodic sync (a minute after its start, and every minute) grows it.
    c.run_until(asked + 61_000);
    let cl = pvc(&c, "data");
    assert_eq!(capacity(&cl), "2Gi");
    assert_eq!(resize_status(&cl), None);
    assert!(conditions(&cl).is_empty(), "{:?}", conditions(&cl));
    assert_eq!(cl["status"]["allocatedResources"], json!({"storage": "2Gi"}), "kept, as upstream keeps it");
    assert!(kubectl(&mut c, "get pvc data")[1].contains(" 2Gi "), "{:?}", kubectl(&mut c, "get pvc data"));
    let pv = get_str(&cl, &["spec", "volumeName"]).unwrap_or("").to_string();
    let node = get_str(c.api.store.get_by(rid::POD, "default", "app").expect("pod"), &["spec", "nodeName"]).unwrap_or("").to_string();
    let evs = events(&c, "data");
    let from = evs.iter().position(|e| e.starts_with("ExternalExpanding")).expect("ExternalExpanding");
    assert_eq!(
        evs[from..],
        [
            "ExternalExpanding: waiting for an external controller to expand this PVC (volume_expand)".to_string(),
            format!("Resizing: External resizer is resizing volume {pv} (external-resizer {DRIVER})"),
            format!("FileSystemResizeRequired: Require file system resize of volume on node (external-resizer {DRIVER})"),
            format!("FileSystemResizeSuccessful: MountVolume.NodeExpandVolume succeeded for volume {pv:?} {node} (kubelet)"),
        ]
    );
    assert!(events(&c, "app").contains(&format!("FileSystemResizeSuccessful: MountVolume.NodeExpandVolume succeeded for volume {pv:?} {node} (kubelet)")));
    // describe shows the new capacity; the conditions table is gone with the conditions.
    let d = kubectl(&mut c, "describe pvc data").join("\n");
    assert!(d.contains("Capacity:      2Gi"), "{d}");
    assert!(!d.contains("Conditions:"), "{d}");
}

#[test]
fn describe_shows_the_resize_conditions_while_the_node_step_is_pending() {
    let mut c = mounted(Config::default());
    kubectl(&mut c, r#"patch pvc data -p '{"spec":{"resources":{"requests":{"storage":"3Gi"}}}}'"#);
    c.run_until(c.now + 5_000);
    let d = kubectl(&mut c, "describe pvc data").join("\n");
    assert!(d.contains("Capacity:      1Gi"), "{d}");
    assert!(d.contains("\nConditions:\n  Type                      Status  LastProbeTime                     LastTransitionTime"), "{d}");
    assert!(d.contains("  FileSystemResizePending   True    Mon, 01 Jan 0001 00:00:00 +0000 "), "{d}");
    assert!(d.contains("Waiting for user to (re-)start a pod to finish file system resize of volume on node."), "{d}");
}

#[test]
fn a_claim_no_pod_mounts_waits_for_the_next_mount_to_grow_its_file_system() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &(FAST.to_string() + &claim("data", "1Gi")));
    c.run_until(10_000);
    kubectl(&mut c, r#"patch pvc data -p '{"spec":{"resources":{"requests":{"storage":"5Gi"}}}}'"#);
    c.run_until(200_000);
    let cl = pvc(&c, "data");
    assert_eq!(capacity(&pv_of(&c, "data")), "5Gi");
    assert_eq!((capacity(&cl), resize_status(&cl).as_deref()), ("1Gi".to_string(), Some("NodeResizePending")), "no node has it mounted");
    apply(&mut c, &pod("app", "data"));
    c.run_until(230_000);
    assert!(running(&c, "app"));
    let cl = pvc(&c, "data");
    assert_eq!((capacity(&cl), resize_status(&cl)), ("5Gi".to_string(), None), "grown as it was mounted");
}

#[test]
fn a_driver_that_is_down_fails_the_expansion_until_it_comes_back() {
    let mut c = mounted(Config::default());
    c.act(admin(), Action::Fault(Fault::StorageDriverDown(DRIVER.into())));
    kubectl(&mut c, r#"patch pvc data -p '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}'"#);
    c.run_until(c.now + 20_000);
    let cl = pvc(&c, "data");
    assert_eq!(resize_status(&cl).as_deref(), Some("ControllerResizeInProgress"), "Unavailable is not final: the status stays");
    assert_eq!(capacity(&pv_of(&c, "data")), "1Gi");
    let pv = get_str(&cl, &["spec", "volumeName"]).unwrap_or("").to_string();
    let failed = c.api.store.list(rid::EVENT, None).find(|e| get_str(e, &["reason"]) == Some("VolumeResizeFailed")).cloned().expect("VolumeResizeFailed");
    assert_eq!(get_str(&failed, &["type"]), Some("Warning"));
    assert!(
        get_str(&failed, &["message"])
            .unwrap_or("")
            .starts_with(&format!("resize volume {pv:?} by resizer \"{DRIVER}\" failed: rpc error: code = Unavailable desc = ")),
        "{failed:?}"
    );
    let count = failed["count"].as_i64().unwrap_or(0);
    assert!((4..=6).contains(&count), "1, 2, 4, 8 s back-off in 20 s: {count}");
    c.act(admin(), Action::Fault(Fault::StorageDriverUp(DRIVER.into())));
    c.run_until(c.now + 100_000);
    let cl = pvc(&c, "data");
    assert_eq!((capacity(&cl), resize_status(&cl)), ("2Gi".to_string(), None), "the next retry and the next pod sync finish it");
}

#[test]
fn a_node_plugin_that_is_down_fails_node_expansion_until_the_next_sync_after_it_returns() {
    let mut c = mounted(Config::default());
    kubectl(&mut c, r#"patch pvc data -p '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}'"#);
    c.run_until(c.now + 5_000);
    assert_eq!(resize_status(&pvc(&c, "data")).as_deref(), Some("NodeResizePending"));
    c.act(admin(), Action::Fault(Fault::StorageDriverDown(DRIVER.into())));
    c.run_until(c.now + 70_000);
    let pv = get_str(&pvc(&c, "data"), &["spec", "volumeName"]).unwrap_or("").to_string();
    assert!(
        events(&c, "app").contains(&format!(
            "VolumeResizeFailed: NodeExpandVolume.NodeExpandVolume failed for volume {pv:?} : driver name {DRIVER} not found in the list of registered CSI drivers (kubelet)"
        )),
        "{:?}",
        events(&c, "app")
    );
    assert_eq!(capacity(&pvc(&c, "data")), "1Gi");
    c.act(admin(), Action::Fault(Fault::StorageDriverUp(DRIVER.into())));
    c.run_until(c.now + 61_000);
    assert_eq!(capacity(&pvc(&c, "data")), "2Gi");
}

#[test]
fn a_driver_that_needs_no_node_step_finishes_in_the_resizer() {
    let driver = CsiDriverSpec { node_expansion_required: false, ..CsiDriverSpec::default() };
    let mut c = mounted(Config { storage_drivers: vec![driver], ..Config::default() });
    kubectl(&mut c, r#"patch pvc data -p '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}'"#);
    c.run_until(c.now + 3_000);
    let cl = pvc(&c, "data");
    assert_eq!((capacity(&cl), resize_status(&cl)), ("2Gi".to_string(), None));
    assert!(conditions(&cl).is_empty());
    assert_eq!(
        events(&c, "data").last().map(String::as_str),
        Some(format!("VolumeResizeSuccessful: Resize volume succeeded (external-resizer {DRIVER})").as_str())
    );
}

#[test]
fn a_volume_no_resizer_serves_keeps_its_size_and_says_why() {
    let mut c = Cluster::new(Config::default());
    apply(
        &mut c,
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: manual\nprovisioner: kubernetes.io/no-provisioner\nallowVolumeExpansion: true\n---\napiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: local\nspec:\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  storageClassName: manual\n  hostPath: {path: /data/local}\n---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\nspec:\n  storageClassName: manual\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n",
    );
    c.run_until(5_000);
    kubectl(&mut c, r#"patch pvc data -p '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}'"#);
    c.run_until(120_000);
    let cl = pvc(&c, "data");
    assert_eq!((capacity(&cl), resize_status(&cl)), ("1Gi".to_string(), None));
    assert_eq!(get(&pv_of(&c, "data"), &["spec", "capacity", "storage"]), Some(&json!("1Gi")));
    assert_eq!(events(&c, "data").last().map(String::as_str), Some("ExternalExpanding: waiting for an external controller to expand this PVC (volume_expand)"));
}
