//! Storage binding end to end: the default StorageClass and CSIDriver, static volumes bound
//! by size, class and access modes, Retain against Delete, WaitForFirstConsumer waiting for
//! the scheduler's node, Immediate provisioning, a driver that goes down and comes back,
//! claims kept while a pod uses them, and the API server's storage validation.

// Tests build their fixtures in memory; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::{Credentials, PatchType, Request, Verb};
use kubeloop_core::cluster::{Action, Cluster, Config, Fault};
use kubeloop_core::foundation::api::{self, get, get_array, get_str, rid, Object};
use kubeloop_core::foundation::value::json;

fn admin() -> Credentials {
    Credentials::Token("admin-token".into())
}

fn apply(c: &mut Cluster, text: &str) -> Vec<String> {
    c.act(admin(), Action::Apply { text: text.into(), file: "test.yaml".into() }).output
}

fn kubectl(c: &mut Cluster, line: &str) -> Vec<String> {
    c.act(admin(), Action::Kubectl(line.into())).output
}

fn pvc(c: &Cluster, name: &str) -> Option<Object> {
    c.api.store.get_by(rid::PVC, "default", name).cloned()
}

fn pv(c: &Cluster, name: &str) -> Option<Object> {
    c.api.store.get_by(rid::PV, "", name).cloned()
}

fn phase(o: &Option<Object>) -> String {
    o.as_ref().and_then(|o| get_str(o, &["status", "phase"])).unwrap_or("-").to_string()
}

fn events(c: &Cluster, involved: &str) -> Vec<String> {
    let mut evs: Vec<(String, String)> = c
        .api
        .store
        .list(rid::EVENT, None)
        .filter(|e| get_str(e, &["involvedObject", "name"]) == Some(involved))
        .map(|e| {
            let t = get_str(e, &["firstTimestamp"]).unwrap_or("").to_string();
            (t, format!("{} {}", get_str(e, &["reason"]).unwrap_or(""), get_str(e, &["message"]).unwrap_or("")))
        })
        .collect();
    evs.sort();
    evs.into_iter().map(|(_, e)| e).collect()
}

fn static_pv(name: &str, size: &str, class: &str, modes: &str, policy: &str) -> String {
    format!(
        "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: {name}\nspec:\n  capacity: {{storage: {size}}}\n  accessModes: {modes}\n  persistentVolumeReclaimPolicy: {policy}\n  storageClassName: \"{class}\"\n  hostPath: {{path: /data/{name}}}\n---\n"
    )
}

fn claim(name: &str, size: &str, class: Option<&str>, modes: &str) -> String {
    let class = class.map(|c| format!("  storageClassName: \"{c}\"\n")).unwrap_or_default();
    format!("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: {name}\nspec:\n{class}  accessModes: {modes}\n  resources:\n    requests:\n      storage: {size}\n---\n")
}

const FAST: &str = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: fast\nprovisioner: disk.csi.kubeloop.dev\nvolumeBindingMode: Immediate\nallowVolumeExpansion: true\n---\n";

#[test]
fn a_fresh_cluster_has_the_standard_class_and_the_driver() {
    let mut c = Cluster::new(Config::default());
    let sc = c.api.store.get_by(rid::STORAGECLASS, "", "standard").cloned().expect("standard class");
    assert_eq!(api::annotation(&sc, "storageclass.kubernetes.io/is-default-class"), Some("true"));
    assert_eq!(get_str(&sc, &["provisioner"]), Some("disk.csi.kubeloop.dev"));
    assert_eq!(get_str(&sc, &["volumeBindingMode"]), Some("WaitForFirstConsumer"));
    assert_eq!(get_str(&sc, &["reclaimPolicy"]), Some("Delete"));
    let d = c.api.store.get_by(rid::CSIDRIVER, "", "disk.csi.kubeloop.dev").cloned().expect("CSIDriver");
    assert_eq!(d["spec"]["attachRequired"], true);
    assert_eq!(d["spec"]["fsGroupPolicy"], "ReadWriteOnceWithFSType");
    assert_eq!(d["spec"]["volumeLifecycleModes"], json!(["Persistent"]));
    let out = kubectl(&mut c, "get sc");
    assert_eq!(out[0].split_whitespace().collect::<Vec<_>>(), ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE"]);
    assert!(out[1].starts_with("standard (default)   disk.csi.kubeloop.dev   Delete          WaitForFirstConsumer   false"), "{out:?}");
}

#[test]
fn a_claim_binds_the_smallest_static_volume_of_its_class_and_modes() {
    let mut c = Cluster::new(Config::default());
    let mut text = String::new();
    text.push_str(&static_pv("pv-10g", "10Gi", "manual", "[ReadWriteOnce]", "Retain"));
    text.push_str(&static_pv("pv-2g", "2Gi", "manual", "[ReadWriteOnce]", "Retain"));
    text.push_str(&static_pv("pv-1g-rox", "1Gi", "manual", "[ReadOnlyMany]", "Retain"));
    text.push_str(&static_pv("pv-1g-other", "1Gi", "other", "[ReadWriteOnce]", "Retain"));
    apply(&mut c, &text);
    c.run_until(2_000);
    assert_eq!(phase(&pv(&c, "pv-2g")), "Available");
    let created = pv(&c, "pv-2g").unwrap();
    assert_eq!(get_array(&created, &["metadata", "finalizers"]), [json!("kubernetes.io/pv-protection")]);
    apply(&mut c, &claim("data", "1500Mi", Some("manual"), "[ReadWriteOnce]"));
    c.run_until(4_000);
    let cl = pvc(&c, "data").unwrap();
    assert_eq!(phase(&Some(cl.clone())), "Bound");
    assert_eq!(get_str(&cl, &["spec", "volumeName"]), Some("pv-2g"), "the smallest volume that fits");
    assert_eq!(api::annotation(&cl, "pv.kubernetes.io/bind-completed"), Some("yes"));
    assert_eq!(api::annotation(&cl, "pv.kubernetes.io/bound-by-controller"), Some("yes"));
    assert_eq!(cl["status"]["capacity"]["storage"], "2Gi");
    assert_eq!(cl["status"]["accessModes"], json!(["ReadWriteOnce"]));
    assert_eq!(get_array(&cl, &["metadata", "finalizers"]), [json!("kubernetes.io/pvc-protection")]);
    let v = pv(&c, "pv-2g").unwrap();
    assert_eq!(phase(&Some(v.clone())), "Bound");
    assert_eq!(get_str(&v, &["spec", "claimRef", "name"]), Some("data"));
    assert_eq!(get_str(&v, &["spec", "claimRef", "uid"]), Some(api::uid(&cl)));
    assert_eq!(api::annotation(&v, "pv.kubernetes.io/bound-by-controller"), Some("yes"));
    // A claim for a mode no volume offers stays Pending; a claim with no class at all says so.
    apply(&mut c, &claim("rwx", "1Gi", Some("manual"), "[ReadWriteMany]"));
    apply(&mut c, &claim("classless", "1Gi", Some(""), "[ReadWriteOnce]"));
    c.run_until(6_000);
    assert_eq!(phase(&pvc(&c, "rwx")), "Pending");
    assert_eq!(events(&c, "classless"), ["FailedBinding no persistent volumes available for this claim and no storage class is set"]);
    let out = kubectl(&mut c, "get pvc data");
    assert_eq!(
        out[0].split_whitespace().collect::<Vec<_>>(),
        ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE"]
    );
    assert!(out[1].starts_with("data   Bound    pv-2g    2Gi        RWO            manual         <unset>"), "{out:?}");
    let out = kubectl(&mut c, "get pv pv-2g");
    assert!(out[1].starts_with("pv-2g   2Gi        RWO            Retain           Bound    default/data   manual         <unset>"), "{out:?}");
}

#[test]
fn retain_keeps_a_released_volume_and_a_static_delete_volume_fails() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &(static_pv("keep", "1Gi", "manual", "[ReadWriteOnce]", "Retain") + &claim("a", "1Gi", Some("manual"), "[ReadWriteOnce]")));
    c.run_until(3_000);
    assert_eq!(phase(&pvc(&c, "a")), "Bound");
    kubectl(&mut c, "delete pvc a");
    c.run_until(6_000);
    assert!(pvc(&c, "a").is_none(), "no pod uses it: the protection finalizer goes");
    assert_eq!(phase(&pv(&c, "keep")), "Released");
    c.run_until(60_000);
    assert_eq!(phase(&pv(&c, "keep")), "Released", "Retain: nothing reclaims it");
    // A new claim does not get a Released volume.
    apply(&mut c, &claim("b", "1Gi", Some("manual"), "[ReadWriteOnce]"));
    c.run_until(63_000);
    assert_eq!(phase(&pvc(&c, "b")), "Pending");

    apply(&mut c, &(static_pv("gone", "1Gi", "slow", "[ReadWriteOnce]", "Delete") + &claim("d", "1Gi", Some("slow"), "[ReadWriteOnce]")));
    c.run_until(66_000);
    kubectl(&mut c, "delete pvc d");
    c.run_until(70_000);
    let v = pv(&c, "gone");
    assert_eq!(phase(&v), "Failed", "no in-tree deleter for a static volume");
    assert_eq!(events(&c, "gone"), ["VolumeFailedDelete error getting deleter volume plugin for volume \"gone\": no deletable volume plugin matched"]);
}

#[test]
fn wait_for_first_consumer_waits_for_the_selected_node() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &claim("data", "1Gi", None, "[ReadWriteOnce]"));
    c.run_until(20_000);
    let cl = pvc(&c, "data").unwrap();
    assert_eq!(get_str(&cl, &["spec", "storageClassName"]), Some("standard"), "DefaultStorageClass");
    assert_eq!(phase(&Some(cl)), "Pending");
    assert!(c.api.store.list(rid::PV, None).next().is_none(), "nothing is provisioned before a node is chosen");
    let evs = events(&c, "data");
    assert_eq!(evs, ["WaitForFirstConsumer waiting for first consumer to be created before binding"]);
    let ev = c.api.store.list(rid::EVENT, None).find(|e| get_str(e, &["reason"]) == Some("WaitForFirstConsumer")).cloned().unwrap();
    assert_eq!(get_str(&ev, &["source", "component"]), Some("persistentvolume-controller"));
    assert!(ev["count"].as_i64().unwrap_or(0) >= 2, "repeated on each 15 s resync");

    // The scheduler's part, done here by hand: it chose node-b.
    let patch = json!({"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "node-b"}}});
    c.request(Request::patch(rid::PVC, "default", "data", PatchType::Merge, patch, admin())).expect("annotate");
    c.run_until(21_000);
    let cl = pvc(&c, "data").unwrap();
    assert_eq!(api::annotation(&cl, "volume.kubernetes.io/storage-provisioner"), Some("disk.csi.kubeloop.dev"));
    assert_eq!(api::annotation(&cl, "volume.beta.kubernetes.io/storage-provisioner"), Some("disk.csi.kubeloop.dev"));
    assert_eq!(phase(&Some(cl.clone())), "Pending", "CreateVolume takes 3 s");
    c.run_until(25_000);
    let cl = pvc(&c, "data").unwrap();
    assert_eq!(phase(&Some(cl.clone())), "Bound");
    let name = format!("pvc-{}", api::uid(&cl));
    let v = pv(&c, &name).expect("provisioned volume");
    assert_eq!(api::annotation(&v, "pv.kubernetes.io/provisioned-by"), Some("disk.csi.kubeloop.dev"));
    assert_eq!(
        get_array(&v, &["metadata", "finalizers"]),
        [json!("external-provisioner.volume.kubernetes.io/finalizer"), json!("kubernetes.io/pv-protection")]
    );
    assert_eq!(
        v["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0],
        json!({"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-b"]})
    );
    assert_eq!(v["spec"]["persistentVolumeReclaimPolicy"], "Delete");
    assert_eq!(v["spec"]["csi"]["driver"], "disk.csi.kubeloop.dev");
    assert_eq!(v["spec"]["capacity"]["storage"], "1Gi");
    assert_eq!(phase(&Some(v)), "Bound");
    let evs = events(&c, "data");
    assert_eq!(
        &evs[1..],
        [
            "ExternalProvisioning Waiting for a volume to be created either by the external provisioner 'disk.csi.kubeloop.dev' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.".to_string(),
            "Provisioning External provisioner is provisioning volume for claim \"default/data\"".to_string(),
            format!("ProvisioningSucceeded Successfully provisioned volume {name}"),
        ]
    );
}

#[test]
fn immediate_classes_provision_at_once_and_delete_with_the_claim() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &(FAST.to_string() + &claim("data", "2Gi", Some("fast"), "[ReadWriteOnce]")));
    c.run_until(5_000);
    let cl = pvc(&c, "data").unwrap();
    assert_eq!(phase(&Some(cl.clone())), "Bound");
    let name = format!("pvc-{}", api::uid(&cl));
    let v = pv(&c, &name).expect("volume");
    let zone = v["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"][0].as_str().unwrap_or("").to_string();
    assert!(["zone-a", "zone-b", "zone-c"].contains(&zone.as_str()), "{zone}");
    kubectl(&mut c, "delete pvc data");
    c.run_until(7_000);
    assert!(pvc(&c, "data").is_none());
    assert_eq!(phase(&pv(&c, &name)), "Released");
    c.run_until(12_000);
    assert!(pv(&c, &name).is_none(), "the provisioner deleted the volume, then the finalizers went");
}

#[test]
fn a_driver_that_is_down_fails_provisioning_until_it_comes_back() {
    let mut c = Cluster::new(Config::default());
    assert_eq!(c.act(admin(), Action::Fault(Fault::StorageDriverDown("disk.csi.kubeloop.dev".into()))).output, Vec::<String>::new());
    apply(&mut c, &(FAST.to_string() + &claim("data", "1Gi", Some("fast"), "[ReadWriteOnce]")));
    c.run_until(20_000);
    assert_eq!(phase(&pvc(&c, "data")), "Pending");
    let failed = c.api.store.list(rid::EVENT, None).find(|e| get_str(e, &["reason"]) == Some("ProvisioningFailed")).cloned().expect("ProvisioningFailed");
    assert_eq!(get_str(&failed, &["type"]), Some("Warning"));
    assert!(get_str(&failed, &["message"]).unwrap_or("").starts_with("rpc error: code = Unavailable desc = "), "{failed:?}");
    let count = failed["count"].as_i64().unwrap_or(0);
    assert!((4..=6).contains(&count), "1, 2, 4, 8 s back-off in 20 s: {count}");
    c.act(admin(), Action::Fault(Fault::StorageDriverUp("disk.csi.kubeloop.dev".into())));
    c.run_until(60_000);
    assert_eq!(phase(&pvc(&c, "data")), "Bound", "the next retry succeeds");
    let out = c.act(admin(), Action::Fault(Fault::StorageDriverDown("nope.csi".into()))).output;
    assert_eq!(out, ["error: no storage driver named \"nope.csi\""]);
}

#[test]
fn a_claim_in_use_stays_terminating_until_its_pod_is_gone() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &(static_pv("vol", "1Gi", "manual", "[ReadWriteOnce]", "Retain") + &claim("data", "1Gi", Some("manual"), "[ReadWriteOnce]")));
    c.run_until(3_000);
    apply(
        &mut c,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: user\nspec:\n  nodeName: node-a\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: c\n    image: busybox:1.36\n    command: [sleep, '3600']\n  volumes:\n  - name: d\n    persistentVolumeClaim: {claimName: data}\n",
    );
    c.run_until(5_000);
    kubectl(&mut c, "delete pvc data --wait=false");
    c.run_until(20_000);
    let cl = pvc(&c, "data").expect("still there");
    assert!(api::is_deleting(&cl));
    assert_eq!(get_array(&cl, &["metadata", "finalizers"]), [json!("kubernetes.io/pvc-protection")]);
    assert!(kubectl(&mut c, "get pvc data")[1].starts_with("data   Terminating   vol"), "{:?}", kubectl(&mut c, "get pvc data"));
    assert_eq!(phase(&pv(&c, "vol")), "Bound");
    kubectl(&mut c, "delete pod user --wait=false");
    c.run_until(40_000);
    assert!(pod_gone(&c, "user"));
    assert!(pvc(&c, "data").is_none(), "released once no pod uses it");
    assert_eq!(phase(&pv(&c, "vol")), "Released");
    // A Bound volume keeps its protection while deleted.
    apply(&mut c, &(static_pv("vol2", "1Gi", "m2", "[ReadWriteOnce]", "Retain") + &claim("c2", "1Gi", Some("m2"), "[ReadWriteOnce]")));
    c.run_until(43_000);
    kubectl(&mut c, "delete pv vol2 --wait=false");
    c.run_until(50_000);
    assert!(pv(&c, "vol2").is_some_and(|v| api::is_deleting(&v)), "Bound: kept");
    kubectl(&mut c, "delete pvc c2");
    c.run_until(55_000);
    assert!(pv(&c, "vol2").is_none(), "Released: the finalizer goes");
}

fn pod_gone(c: &Cluster, name: &str) -> bool {
    c.api.store.get_by(rid::POD, "default", name).is_none()
}

#[test]
fn the_api_server_validates_storage_objects_with_upstream_messages() {
    let mut c = Cluster::new(Config::default());
    let out = apply(&mut c, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: bad\nspec:\n  resources: {requests: {storage: 1Gi}}\n");
    assert!(out.iter().any(|l| l.contains("spec.accessModes: Required value: at least 1 access mode is required")), "{out:?}");
    let out = apply(&mut c, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: bad\nspec:\n  accessModes: [ReadWriteOnce]\n");
    assert!(out.iter().any(|l| l.contains("spec.resources[storage]: Required value")), "{out:?}");
    let out =
        apply(&mut c, "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: bad\nspec:\n  accessModes: [ReadWriteSometimes]\n  hostPath: {path: /x}\n");
    assert!(out.iter().any(|l| l.contains("spec.capacity: Required value")), "{out:?}");
    assert!(
        out.iter().any(|l| l.contains("spec.accessModes: Unsupported value: \"ReadWriteSometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"")),
        "{out:?}"
    );
    let out =
        apply(&mut c, "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: bad\nspec:\n  accessModes: [ReadWriteOnce]\n  capacity: {storage: 1Gi}\n");
    assert!(out.iter().any(|l| l.contains("spec: Required value: must specify a volume type")), "{out:?}");

    // A pending claim's spec is fixed.
    apply(&mut c, &claim("data", "1Gi", Some("manual"), "[ReadWriteOnce]"));
    let out = apply(&mut c, &claim("data", "2Gi", Some("manual"), "[ReadWriteOnce]"));
    assert!(
        out.iter()
            .any(|l| l.contains("spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims")),
        "{out:?}"
    );
    // A bound claim may grow only when its class allows expansion.
    apply(&mut c, &(static_pv("vol", "5Gi", "manual", "[ReadWriteOnce]", "Retain") + &claim("data", "1Gi", Some("manual"), "[ReadWriteOnce]")));
    c.run_until(3_000);
    assert_eq!(phase(&pvc(&c, "data")), "Bound");
    let out = apply(&mut c, &claim("data", "2Gi", Some("manual"), "[ReadWriteOnce]"));
    assert!(
        out.iter().any(|l| l.contains(
            "persistentvolumeclaims \"data\" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"
        )),
        "{out:?}"
    );
    // A class that allows expansion admits the larger request (tests/expansion.rs follows it).
    apply(&mut c, &(FAST.to_string() + &claim("grow", "1Gi", Some("fast"), "[ReadWriteOnce]")));
    c.run_until(c.now + 10_000);
    assert_eq!(phase(&pvc(&c, "grow")), "Bound");
    let out = apply(&mut c, &claim("grow", "2Gi", Some("fast"), "[ReadWriteOnce]"));
    assert_eq!(out, ["persistentvolumeclaim/grow configured"]);
    // StorageClass fields that may not change.
    let out = apply(
        &mut c,
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: standard\n  annotations: {storageclass.kubernetes.io/is-default-class: \"true\"}\nprovisioner: other.csi\nreclaimPolicy: Retain\nvolumeBindingMode: WaitForFirstConsumer\n",
    );
    assert!(out.iter().any(|l| l.contains("provisioner: Forbidden: updates to provisioner are forbidden.")), "{out:?}");
    assert!(out.iter().any(|l| l.contains("reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.")), "{out:?}");
    let sc = c.request(Request::new(Verb::Get, rid::STORAGECLASS, "", "standard", admin())).unwrap();
    assert_eq!(get(&sc, &["provisioner"]), Some(&json!("disk.csi.kubeloop.dev")));
}

#[test]
fn describe_shows_claims_volumes_and_classes_as_kubectl_does() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &(FAST.to_string() + &claim("data", "2Gi", Some("fast"), "[ReadWriteOnce]")));
    apply(
        &mut c,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: user\nspec:\n  nodeName: node-a\n  containers:\n  - name: c\n    image: busybox:1.36\n    command: [sleep, '3600']\n  volumes:\n  - name: d\n    persistentVolumeClaim: {claimName: data}\n",
    );
    c.run_until(10_000);
    let uid = api::uid(&pvc(&c, "data").unwrap()).to_string();
    let out = kubectl(&mut c, "describe pvc data");
    let text = out.join("\n");
    for line in [
        "Name:          data".to_string(),
        "Namespace:     default".to_string(),
        "StorageClass:  fast".to_string(),
        "Status:        Bound".to_string(),
        format!("Volume:        pvc-{uid}"),
        "Annotations:   pv.kubernetes.io/bind-completed: yes".to_string(),
        "Finalizers:    [kubernetes.io/pvc-protection]".to_string(),
        "Capacity:      2Gi".to_string(),
        "Access Modes:  RWO".to_string(),
        "VolumeMode:    Filesystem".to_string(),
        "Used By:       user".to_string(),
    ] {
        assert!(out.contains(&line), "{line:?} in\n{text}");
    }
    assert!(text.contains("Normal  ProvisioningSucceeded"), "{text}");
    let out = kubectl(&mut c, &format!("describe pv pvc-{uid}"));
    let text = out.join("\n");
    for line in [
        "Finalizers:        [external-provisioner.volume.kubernetes.io/finalizer kubernetes.io/pv-protection external-attacher/disk-csi-kubeloop-dev]",
        "StorageClass:      fast",
        "Status:            Bound",
        "Claim:             default/data",
        "Reclaim Policy:    Delete",
        "Node Affinity:     ",
        "  Required Terms:  ",
        "Source:",
        "    Type:              CSI (a Container Storage Interface (CSI) volume source)",
        "    Driver:            disk.csi.kubeloop.dev",
        "    FSType:            ext4",
    ] {
        assert!(out.iter().any(|l| l == line), "{line:?} in\n{text}");
    }
    assert!(out.iter().any(|l| l.starts_with("    Term 0:        topology.kubernetes.io/zone in [zone-")), "{text}");
    assert!(out.iter().any(|l| l.starts_with("    VolumeAttributes:      storage.kubernetes.io/csiProvisionerIdentity=")), "{text}");
    let out = kubectl(&mut c, "describe sc standard");
    assert_eq!(
        out,
        [
            "Name:                  standard",
            "IsDefaultClass:        Yes",
            "Annotations:           storageclass.kubernetes.io/is-default-class=true",
            "Provisioner:           disk.csi.kubeloop.dev",
            "Parameters:            <none>",
            "AllowVolumeExpansion:  <unset>",
            "MountOptions:          <none>",
            "ReclaimPolicy:         Delete",
            "VolumeBindingMode:     WaitForFirstConsumer",
            "Events:                <none>",
        ]
    );
}
