//! Attaching and mounting persistent volumes: the attach/detach controller, the simulated
//! external-attacher and the kubelet's volume manager, with static CSI volumes bound ahead
//! of time to their claims (no PV binder involved).

// Tests build their fixtures in memory; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::{Credentials, PatchType, Request};
use kubeloop_core::cluster::{Action, Cluster, Config, Fault};
use kubeloop_core::foundation::api::{self, get_array, get_str, rid};
use kubeloop_core::foundation::value::json;
use kubeloop_core::loops::csi::{attachment_name, unique_volume_name, DEFAULT_DRIVER};

fn admin() -> Credentials {
    Credentials::Token("admin-token".into())
}

fn apply(c: &mut Cluster, text: &str) -> Vec<String> {
    c.act(admin(), Action::Apply { text: text.into(), file: "test.yaml".into() }).output
}

fn kubectl(c: &mut Cluster, line: &str) -> Vec<String> {
    c.act(admin(), Action::Kubectl(line.into())).output
}

fn fault(c: &mut Cluster, f: Fault) {
    c.act(admin(), Action::Fault(f));
}

fn claim(name: &str, mode: &str) -> String {
    format!(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: {name}\nspec:\n  accessModes: [{mode}]\n  storageClassName: \"\"\n  volumeName: pv-{name}\n  resources:\n    requests:\n      storage: 1Gi\n"
    )
}

/// A static CSI volume for `name`'s claim, pre-bound both ways, the claim marked Bound.
fn bound_volume(c: &mut Cluster, name: &str, mode: &str, zones: &str) {
    apply(c, &claim(name, mode));
    let uid = api::uid(c.api.store.get_by(rid::PVC, "default", name).expect("claim created")).to_string();
    let pv = format!(
        "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: pv-{name}\nspec:\n  capacity:\n    storage: 1Gi\n  accessModes: [{mode}]\n  persistentVolumeReclaimPolicy: Retain\n  storageClassName: \"\"\n  claimRef:\n    namespace: default\n    name: {name}\n    uid: {uid}\n  csi:\n    driver: {DEFAULT_DRIVER}\n    volumeHandle: vol-{name}\n    fsType: ext4\n  nodeAffinity:\n    required:\n      nodeSelectorTerms:\n      - matchExpressions:\n        - {{key: topology.kubernetes.io/zone, operator: In, values: [{zones}]}}\n"
    );
    apply(c, &pv);
    bind(c, name);
}

fn bind(c: &mut Cluster, name: &str) {
    let body = json!({"status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}});
    c.request(Request::patch(rid::PVC, "default", name, PatchType::Merge, body, admin()).with_sub("status")).expect("claim status written");
}

fn pod(name: &str, claim: &str, node: &str, script: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  nodeName: {node}\n  containers:\n  - name: main\n    image: busybox:1.36\n    command: [sh, -c, {script:?}]\n    volumeMounts:\n    - {{name: data, mountPath: /data}}\n  volumes:\n  - name: data\n    persistentVolumeClaim:\n      claimName: {claim}\n"
    )
}

fn phase(c: &Cluster, name: &str) -> String {
    let p = c.api.store.get_by(rid::POD, "default", name).expect("pod exists");
    let waiting = get_array(p, &["status", "containerStatuses"]).iter().find_map(|s| get_str(s, &["state", "waiting", "reason"]));
    waiting.or_else(|| get_str(p, &["status", "phase"])).unwrap_or("").to_string()
}

fn events(c: &Cluster, pod: &str, reason: &str) -> Vec<String> {
    c.api
        .store
        .list(rid::EVENT, Some("default"))
        .filter(|e| get_str(e, &["involvedObject", "name"]) == Some(pod) && get_str(e, &["reason"]) == Some(reason))
        .map(|e| get_str(e, &["message"]).unwrap_or("").to_string())
        .collect()
}

fn node_list(c: &Cluster, node: &str, field: &str) -> Vec<String> {
    let n = c.api.store.get_by(rid::NODE, "", node).expect("node exists");
    get_array(n, &["status", field]).iter().map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| get_str(v, &["name"]).unwrap_or("").to_string())).collect()
}

fn attachments(c: &Cluster) -> Vec<String> {
    c.api
        .store
        .list(rid::VOLUMEATTACHMENT, None)
        .map(|v| format!("{}@{}", get_str(v, &["spec", "source", "persistentVolumeName"]).unwrap_or(""), get_str(v, &["spec", "nodeName"]).unwrap_or("")))
        .collect()
}

#[test]
fn a_csi_volume_is_attached_then_mounted_and_the_pod_runs() {
    let mut c = Cluster::new(Config::default());
    bound_volume(&mut c, "data", "ReadWriteOnce", "zone-a");
    apply(&mut c, &pod("app", "data", "node-a", "sleep 3600"));
    c.run_until(c.now + 1000);
    assert_eq!(phase(&c, "app"), "ContainerCreating", "the volume is not attached yet");
    c.run_until(c.now + 60_000);
    assert_eq!(phase(&c, "app"), "Running");

    let name = attachment_name("vol-data", DEFAULT_DRIVER, "node-a");
    let va = c.api.store.get_by(rid::VOLUMEATTACHMENT, "", &name).expect("VolumeAttachment named as upstream");
    assert_eq!(va["spec"], json!({"attacher": DEFAULT_DRIVER, "nodeName": "node-a", "source": {"persistentVolumeName": "pv-data"}}));
    assert_eq!(va["status"]["attached"], true);
    assert_eq!(va["metadata"]["finalizers"], json!(["external-attacher/disk-csi-kubeloop-dev"]));
    assert_eq!(api::annotation(va, "csi.alpha.kubernetes.io/node-id"), Some("node-a"));
    let pv = c.api.store.get_by(rid::PV, "", "pv-data").unwrap();
    assert!(get_array(pv, &["metadata", "finalizers"]).iter().any(|f| f == "external-attacher/disk-csi-kubeloop-dev"));

    let unique = unique_volume_name(DEFAULT_DRIVER, "vol-data");
    let node = c.api.store.get_by(rid::NODE, "", "node-a").unwrap();
    assert_eq!(node["status"]["volumesAttached"], json!([{"name": unique, "devicePath": ""}]));
    assert_eq!(node_list(&c, "node-a", "volumesInUse"), vec![unique.clone()]);
    assert_eq!(events(&c, "app", "SuccessfulAttachVolume"), vec!["AttachVolume.Attach succeeded for volume \"pv-data\" ".to_string()]);

    // ControllerPublishVolume took the driver's attach time.
    let at = |msg: &str| c.api.trace.records().iter().find(|r| r.component == "csi-attacher" && r.message.contains(msg)).map(|r| r.t).unwrap();
    assert_eq!(at("attached volume") - at("attaching volume"), 2000);

    let out = kubectl(&mut c, "get volumeattachments");
    assert_eq!(out[0].split_whitespace().collect::<Vec<_>>(), ["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"]);
    assert!(out[1].starts_with(&name) && out[1].contains("pv-data") && out[1].contains("node-a") && out[1].contains("true"), "{out:?}");
    let out = kubectl(&mut c, "get csinodes");
    assert_eq!(out.len(), 5, "one CSINode per node: {out:?}");
    assert_eq!(out[2].split_whitespace().take(2).collect::<Vec<_>>(), ["node-a", "1"]);
    let csinode = c.api.store.get_by(rid::CSINODE, "", "node-a").unwrap();
    assert_eq!(csinode["spec"]["drivers"], json!([{"name": DEFAULT_DRIVER, "nodeID": "node-a", "topologyKeys": ["topology.kubernetes.io/zone"]}]));
    assert_eq!(csinode["metadata"]["ownerReferences"][0]["kind"], "Node");
}

#[test]
fn a_read_write_once_volume_attached_elsewhere_gives_the_multi_attach_error_until_it_is_detached() {
    let mut c = Cluster::new(Config::default());
    bound_volume(&mut c, "data", "ReadWriteOnce", "zone-a, zone-b");
    apply(&mut c, &pod("first", "data", "node-a", "sleep 3600"));
    c.run_until(c.now + 30_000);
    assert_eq!(phase(&c, "first"), "Running");
    apply(&mut c, &pod("second", "data", "node-b", "sleep 3600"));
    c.run_until(c.now + 30_000);
    assert_eq!(phase(&c, "second"), "ContainerCreating");
    assert_eq!(
        events(&c, "second", "FailedAttachVolume"),
        vec!["Multi-Attach error for volume \"pv-data\" Volume is already used by pod(s) first".to_string()]
    );
    assert_eq!(attachments(&c), vec!["pv-data@node-a"]);

    // Once the first pod is gone and node-a no longer reports the volume in use, it is
    // detached and attached to node-b.
    kubectl(&mut c, "delete pod first --wait=false");
    c.run_until(c.now + 60_000);
    assert!(node_list(&c, "node-a", "volumesAttached").is_empty());
    assert!(node_list(&c, "node-a", "volumesInUse").is_empty());
    assert_eq!(attachments(&c), vec!["pv-data@node-b"]);
    assert_eq!(phase(&c, "second"), "Running");
}

#[test]
fn a_volume_detaches_after_its_last_pod_is_deleted() {
    let mut c = Cluster::new(Config::default());
    bound_volume(&mut c, "data", "ReadWriteOnce", "zone-a");
    apply(&mut c, &pod("app", "data", "node-a", "sleep 3600"));
    c.run_until(c.now + 30_000);
    assert_eq!(attachments(&c), vec!["pv-data@node-a"]);
    kubectl(&mut c, "delete pod app --wait=false");
    c.run_until(c.now + 60_000);
    assert!(attachments(&c).is_empty());
    assert!(node_list(&c, "node-a", "volumesAttached").is_empty());
    let detached = c.api.trace.records().iter().any(|r| r.component == "csi-attacher" && r.message.contains("detached volume \"pv-data\" from node-a"));
    assert!(detached);
}

#[test]
fn a_missing_or_unbound_claim_keeps_the_pod_container_creating_with_failed_mount() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &pod("app", "data", "node-a", "sleep 3600"));
    c.run_until(c.now + 25_000);
    assert_eq!(phase(&c, "app"), "ContainerCreating");
    let missing = "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC default/data: failed to fetch PVC from API server: persistentvolumeclaims \"data\" not found";
    assert_eq!(events(&c, "app", "FailedMount"), vec![missing.to_string()]);
    let count = c.api.store.list(rid::EVENT, Some("default")).find(|e| get_str(e, &["reason"]) == Some("FailedMount")).and_then(|e| e["count"].as_i64());
    assert_eq!(count, Some(3), "reported by each pod sync, 10s apart");

    // The claim exists but is not bound yet.
    apply(&mut c, &claim("data", "ReadWriteOnce"));
    c.run_until(c.now + 12_000);
    let pending = "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC default/data: PVC default/data has non-bound phase (\"Pending\") or empty pvc.Spec.VolumeName (\"pv-data\")";
    assert!(events(&c, "app", "FailedMount").contains(&pending.to_string()), "{:?}", events(&c, "app", "FailedMount"));
    assert_eq!(phase(&c, "app"), "ContainerCreating");

    // Bound, with its volume: attached, mounted, running.
    let uid = api::uid(c.api.store.get_by(rid::PVC, "default", "data").unwrap()).to_string();
    apply(
        &mut c,
        &format!("apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: pv-data\nspec:\n  capacity: {{storage: 1Gi}}\n  accessModes: [ReadWriteOnce]\n  storageClassName: \"\"\n  claimRef: {{namespace: default, name: data, uid: {uid}}}\n  csi: {{driver: {DEFAULT_DRIVER}, volumeHandle: vol-data}}\n"),
    );
    bind(&mut c, "data");
    c.run_until(c.now + 40_000);
    assert_eq!(phase(&c, "app"), "Running");
}

#[test]
fn a_storage_driver_that_is_down_fails_attach_and_mount_until_it_is_back() {
    let mut c = Cluster::new(Config::default());
    bound_volume(&mut c, "data", "ReadWriteOnce", "zone-a");
    fault(&mut c, Fault::StorageDriverDown(DEFAULT_DRIVER.into()));
    apply(&mut c, &pod("app", "data", "node-a", "sleep 3600"));
    c.run_until(c.now + 20_000);
    assert_eq!(phase(&c, "app"), "ContainerCreating");
    let va = c.api.store.get_by(rid::VOLUMEATTACHMENT, "", &attachment_name("vol-data", DEFAULT_DRIVER, "node-a")).expect("created while the driver is down");
    let err = get_str(va, &["status", "attachError", "message"]).expect("the external-attacher saved the error").to_string();
    assert!(err.starts_with("rpc error: code = Unavailable"), "{err}");
    let failed = events(&c, "app", "FailedAttachVolume");
    assert_eq!(failed, vec![format!("AttachVolume.Attach failed for volume \"pv-data\" : {err}")]);

    fault(&mut c, Fault::StorageDriverUp(DEFAULT_DRIVER.into()));
    c.run_until(c.now + 60_000);
    assert_eq!(phase(&c, "app"), "Running");
    assert_eq!(events(&c, "app", "SuccessfulAttachVolume").len(), 1);

    // Down again before a second pod's mount: the node plugin is not registered.
    bound_volume(&mut c, "more", "ReadWriteOnce", "zone-a");
    apply(&mut c, &pod("other", "more", "node-a", "sleep 3600"));
    let va = attachment_name("vol-more", DEFAULT_DRIVER, "node-a");
    while c.api.store.get_by(rid::VOLUMEATTACHMENT, "", &va).and_then(|v| v["status"]["attached"].as_bool()) != Some(true) {
        c.run_until(c.now + 100);
    }
    fault(&mut c, Fault::StorageDriverDown(DEFAULT_DRIVER.into()));
    c.run_until(c.now + 20_000);
    assert_eq!(phase(&c, "other"), "ContainerCreating");
    let mount = events(&c, "other", "FailedMount");
    assert_eq!(
        mount,
        vec!["MountVolume.MountDevice failed for volume \"pv-more\" : kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name disk.csi.kubeloop.dev not found in the list of registered CSI drivers".to_string()]
    );
    fault(&mut c, Fault::StorageDriverUp(DEFAULT_DRIVER.into()));
    c.run_until(c.now + 40_000);
    assert_eq!(phase(&c, "other"), "Running");
}

#[test]
fn what_one_pod_writes_to_a_volume_the_next_reads_on_another_node() {
    let mut c = Cluster::new(Config::default());
    bound_volume(&mut c, "data", "ReadWriteOnce", "zone-a, zone-b");
    apply(&mut c, &pod("writer", "data", "node-a", "echo written on node-a > /data/note; sleep 3600"));
    c.run_until(c.now + 30_000);
    assert_eq!(phase(&c, "writer"), "Running");
    kubectl(&mut c, "exec writer -- sh -c 'echo and by exec >> /data/note'");
    kubectl(&mut c, "delete pod writer --wait=false");
    c.run_until(c.now + 60_000);
    apply(&mut c, &pod("reader", "data", "node-b", "sleep 3600"));
    c.run_until(c.now + 30_000);
    assert_eq!(phase(&c, "reader"), "Running");
    assert_eq!(kubectl(&mut c, "exec reader -- cat /data/note"), vec!["written on node-a", "and by exec"]);
    // A fresh pod's own layer is not the volume.
    assert_ne!(kubectl(&mut c, "exec reader -- cat /note"), vec!["written on node-a"]);
}

#[test]
fn a_volume_on_a_node_that_is_down_detaches_six_minutes_after_its_pod_is_deleted() {
    let mut c = Cluster::new(Config::default());
    bound_volume(&mut c, "data", "ReadWriteOnce", "zone-a");
    apply(&mut c, &pod("app", "data", "node-a", "sleep 3600"));
    c.run_until(c.now + 30_000);
    assert_eq!(phase(&c, "app"), "Running");
    fault(&mut c, Fault::NodeDown("node-a".into()));
    c.run_until(c.now + 60_000);
    // The kubelet is gone: it still reports the volume in use, and the pod is force-deleted.
    kubectl(&mut c, "delete pod app --grace-period=0 --force");
    let t0 = c.now;
    c.run_until(t0 + 5 * 60_000);
    assert_eq!(attachments(&c), vec!["pv-data@node-a"], "not detached while the node may still use it");
    c.run_until(t0 + 7 * 60_000);
    assert!(attachments(&c).is_empty(), "force-detached after maxWaitForUnmountDuration");
    let forced = c.api.trace.records().iter().find(|r| r.component == "attachdetach-controller" && r.stage == "detach").map(|r| (r.t, r.message.clone()));
    let (t, msg) = forced.expect("detach traced");
    // Six minutes from when the controller saw the pod go (one watch delivery later).
    assert_eq!(t - t0, 6 * 60_000 + 5, "{msg}");
    assert!(msg.contains("maxWaitForUnmountDuration 6m0s expired"), "{msg}");
}
