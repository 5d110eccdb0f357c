//! Every manifest of the Kubernetes website examples (tests/corpus) applied to a fresh
//! cluster: what a real 1.36 API server accepts is accepted, and the few files it rejects
//! are rejected with its error.

// Tests read their fixtures from disk; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::Credentials;
use kubeloop_core::cluster::{Action, Cluster, Config};
use std::path::{Path, PathBuf};

fn corpus_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/kubernetes-website-examples");
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("corpus folder") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "yaml") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_website_examples_apply_as_on_a_real_cluster() {
    let files = corpus_files();
    assert!(files.len() > 100, "corpus missing: {} files", files.len());
    let mut rejected = Vec::new();
    for f in &files {
        let rel = f.to_string_lossy().split("kubernetes-website-examples/").nth(1).unwrap_or("").to_string();
        let text = std::fs::read_to_string(f).expect("read");
        let mut c = Cluster::new(Config { trace: false, ..Default::default() });
        // The docs create a page's namespace first (`kubectl create namespace ...`).
        for doc in kubeloop_core::foundation::manifest::parse(&text) {
            if let Some(ns) = doc.object.as_ref().and_then(|o| o.get("metadata")).and_then(|m| m.get("namespace")).and_then(|n| n.as_str()) {
                let ns_text = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n");
                c.act(Credentials::Token("admin-token".into()), Action::Apply { text: ns_text, file: "namespace.yaml".into() });
            }
        }
        c.run_until(1_000);
        let out = c.act(Credentials::Token("admin-token".into()), Action::Apply { text, file: rel.clone() });
        for line in out.output {
            if !(line.ends_with(" created") || line.ends_with(" configured") || line.ends_with(" unchanged")) {
                rejected.push(format!("{rel}: {line}"));
            }
        }
        // Let the loops run a little: nothing may panic on real manifests.
        c.run_until(30_000);
    }
    let expected = [
        "application/job/cronjob.yaml: error: resource mapping not found for name: \"hello\" namespace: \"\" from \"application/job/cronjob.yaml\": no matches for kind \"CronJob\" in version \"batch/v1beta1\"\nensure CRDs are installed first",
        // The page assumes a ServiceAccount created beforehand.
        "pods/pod-projected-svc-token.yaml: Error from server (Forbidden): error when creating \"pods/pod-projected-svc-token.yaml\": pods \"nginx\" is forbidden: error looking up service account default/build-robot: serviceaccount \"build-robot\" not found",
        // Field names are case-sensitive since the API server's strict decoder.
        "pods/probe/grpc-liveness.yaml: Error from server (BadRequest): error when creating \"pods/probe/grpc-liveness.yaml\": Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \"spec.containers[0].livenessProbe.gRPC\"",
        "pods/pod-with-node-affinity.yaml: Error from server (BadRequest): error when creating \"pods/pod-with-node-affinity.yaml\": Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal array into Go struct field NodeAffinity.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution of type v1.NodeSelector",
    ];
    let mut expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    // Admission policies written against the long-gone v1alpha1 API.
    for (file, name) in [
        ("access/deployment-replicas-policy.yaml", "deploy-replica-policy.example.com"),
        ("access/validating-admission-policy-match-conditions.yaml", "demo-policy.example.com"),
        ("validatingadmissionpolicy/basic-example-binding.yaml", "demo-binding-test.example.com"),
    ] {
        let kind = if name.contains("binding") { "ValidatingAdmissionPolicyBinding" } else { "ValidatingAdmissionPolicy" };
        expected.push(format!("{file}: error: resource mapping not found for name: {name:?} namespace: \"\" from {file:?}: no matches for kind {kind:?} in version \"admissionregistration.k8s.io/v1alpha1\"\nensure CRDs are installed first"));
    }
    expected.sort();
    rejected.sort();
    assert_eq!(rejected, expected, "rejections differ from a real API server's");
}

/// Apply website examples to one cluster (admin) and run it for `ms`.
fn run_examples(files: &[&str], ms: u64) -> Cluster {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/kubernetes-website-examples");
    let mut c = Cluster::new(Config { trace: false, ..Default::default() });
    for f in files {
        let text = std::fs::read_to_string(root.join(f)).expect("example");
        let out = c.act(Credentials::Token("admin-token".into()), Action::Apply { text, file: f.to_string() });
        assert!(out.output.iter().all(|l| l.ends_with(" created")), "{f}: {:?}", out.output);
    }
    c.run_until(ms);
    c
}

fn kubectl(c: &mut Cluster, line: &str) -> Vec<String> {
    c.act(Credentials::Token("admin-token".into()), Action::Kubectl(line.to_string())).output
}

fn events_of(c: &Cluster, pod: &str) -> Vec<String> {
    use kubeloop_core::foundation::api::{get_str, rid};
    c.api
        .store
        .list(rid::EVENT, None)
        .filter(|e| get_str(e, &["involvedObject", "name"]) == Some(pod))
        .map(|e| format!("{} {}", get_str(e, &["reason"]).unwrap_or(""), get_str(e, &["message"]).unwrap_or("")))
        .collect()
}

#[test]
fn the_website_container_tutorials_do_what_their_pages_say() {
    // Configure Liveness, Readiness and Startup Probes: the exec probe finds /tmp/healthy
    // gone after 30s and the container is restarted; the HTTP server answers 500 after 10s.
    let mut c = run_examples(&["pods/probe/exec-liveness.yaml", "pods/probe/http-liveness.yaml", "pods/probe/tcp-liveness-readiness.yaml"], 100_000);
    let ev = events_of(&c, "liveness-exec");
    assert!(ev.contains(&"Unhealthy Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory".to_string()), "{ev:?}");
    assert!(ev.contains(&"Killing Container liveness failed liveness probe, will be restarted".to_string()), "{ev:?}");
    let ev = events_of(&c, "liveness-http");
    assert!(ev.contains(&"Unhealthy Liveness probe failed: HTTP probe failed with statuscode: 500".to_string()), "{ev:?}");
    let get = kubectl(&mut c, "get pods");
    assert!(get.iter().any(|l| l.starts_with("goproxy ") && l.contains("1/1     Running   0")), "{get:?}");
    assert!(get.iter().any(|l| l.starts_with("liveness-exec ") && l.contains("Running   1 (")), "{get:?}");
    // Init containers: wget fills the shared emptyDir before nginx serves it.
    let mut c = run_examples(&["pods/init-containers.yaml", "pods/multi-container/shared-volume.yaml", "pods/lifecycle-events.yaml"], 30_000);
    let page = kubectl(&mut c, "exec init-demo -- curl -s localhost");
    assert!(page.iter().any(|l| l.contains("http://info.cern.ch")), "{page:?}");
    assert_eq!(kubectl(&mut c, "exec shared-volume-example -c web -- curl -s localhost"), vec!["Hello from the init container"]);
    // The postStart handler wrote its file.
    assert_eq!(kubectl(&mut c, "exec lifecycle-demo -- cat /usr/share/message"), vec!["Hello from the postStart handler"]);
    // ConfigMaps as environment variables and as files.
    let mut c = run_examples(&["configmap/configmap-multikeys.yaml", "pods/pod-configmap-envFrom.yaml"], 30_000);
    let env = kubectl(&mut c, "logs dapi-test-pod");
    assert!(env.contains(&"SPECIAL_LEVEL=very".to_string()) && env.contains(&"SPECIAL_TYPE=charm".to_string()), "{env:?}");
    let get = kubectl(&mut c, "get pod dapi-test-pod");
    assert!(get[1].contains("0/1     Completed   0"), "{get:?}");
    let mut c = run_examples(&["configmap/configmap-multikeys.yaml", "pods/pod-configmap-volume.yaml"], 30_000);
    assert_eq!(kubectl(&mut c, "logs dapi-test-pod"), vec!["SPECIAL_LEVEL", "SPECIAL_TYPE"]);
}

#[test]
fn kinds_no_loop_acts_on_say_so_where_the_person_looks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/kubernetes-website-examples");
    let mut c = Cluster::new(Config::default());
    let mut warned = Vec::new();
    for f in ["service/networking/minimal-ingress.yaml", "service/networking/network-policy-default-deny-all.yaml"] {
        let text = std::fs::read_to_string(root.join(f)).expect("example");
        let out = c.act(Credentials::Token("admin-token".into()), Action::Apply { text, file: f.to_string() });
        warned.extend(out.output);
    }
    assert_eq!(
        warned,
        [
            "Warning: kubeloop stores networking.k8s.io/v1 Ingress but simulates no controller for it\ningress.networking.k8s.io/minimal-ingress created",
            "Warning: kubeloop stores networking.k8s.io/v1 NetworkPolicy but simulates no controller for it\nnetworkpolicy.networking.k8s.io/default-deny-all created",
        ]
    );
    let noted: Vec<&str> = c.api.trace.records().iter().filter(|r| r.stage == "not-simulated").map(|r| r.object.as_str()).collect();
    assert_eq!(noted, ["Ingress/default/minimal-ingress", "NetworkPolicy/default/default-deny-all"]);
    // A kind a loop acts on is created without the warning.
    let out = kubectl(&mut c, "create deployment web --image=nginx:1.27");
    assert_eq!(out, ["deployment.apps/web created"]);
}

#[test]
fn the_website_workload_examples_converge_as_their_pages_say() {
    use kubeloop_core::foundation::api::{self, get_str, rid};
    let pods_of = |c: &Cluster, prefix: &str| -> Vec<(String, String)> {
        c.api
            .store
            .list(rid::POD, None)
            .filter(|p| api::name(p).starts_with(prefix))
            .map(|p| (api::name(p).to_string(), get_str(p, &["status", "phase"]).unwrap_or("").to_string()))
            .collect()
    };
    // A DaemonSet runs on every node whose taints it tolerates: the older page tolerates
    // only the `master` taint of clusters before 1.24, so it stays off this control plane;
    // the newer one tolerates `control-plane` too.
    for (file, prefix, nodes) in [("controllers/daemonset.yaml", "fluentd-elasticsearch-", 3), ("controllers/fluentd-daemonset.yaml", "fluentd-", 4)] {
        let c = run_examples(&[file], 60_000);
        let running = pods_of(&c, prefix).iter().filter(|(_, phase)| phase == "Running").count();
        assert_eq!(running, nodes, "{file}: {:?}", pods_of(&c, prefix));
    }
    // The StatefulSet of the concepts page asks for a storage class no provisioner serves:
    // its claim stays Pending, web-0 stays unschedulable, and OrderedReady creates no web-1.
    let c = run_examples(&["controllers/statefulset.yaml"], 60_000);
    assert_eq!(pods_of(&c, "web-"), [("web-0".to_string(), "Pending".to_string())]);
    let claim = c.api.store.get_by(rid::PVC, "default", "www-web-0").expect("claim from the template");
    assert_eq!(claim["status"]["phase"], "Pending");
    assert!(events_of(&c, "web-0")
        .iter()
        .any(|e| e.starts_with("FailedScheduling 0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims.")));
    // The pi Job completes and its log holds the digits.
    let mut c = run_examples(&["controllers/job.yaml"], 120_000);
    let job = c.api.store.get_by(rid::JOB, "default", "pi").unwrap().clone();
    assert_eq!(job["status"]["succeeded"], 1);
    assert!(kubectl(&mut c, "logs job/pi")[0].starts_with("3.14159265358979323846264338327950288419716939937510"));
    // The zookeeper tutorial's budget (maxUnavailable 1) expects the StatefulSet's three
    // replicas; their claims get the default class, so all three run and one may be
    // disrupted.
    let c = run_examples(&["application/zookeeper/zookeeper.yaml"], 60_000);
    let pdb = c.api.store.get_by(rid::PDB, "default", "zk-pdb").unwrap();
    let s = |f: &str| pdb["status"][f].as_i64();
    assert_eq!((s("expectedPods"), s("desiredHealthy"), s("currentHealthy"), s("disruptionsAllowed")), (Some(3), Some(2), Some(3), Some(1)));
}

#[test]
fn the_website_persistent_volume_tutorial_binds_its_claim_and_serves_from_the_volume() {
    use kubeloop_core::foundation::api::{get_str, rid};
    // Configure a Pod to Use a PersistentVolume for Storage: a hostPath volume of class
    // `manual` (no StorageClass object), a claim that binds to it at once, nginx serving it.
    let mut c = run_examples(&["pods/storage/pv-volume.yaml", "pods/storage/pv-claim.yaml", "pods/storage/pv-pod.yaml"], 60_000);
    let claim = c.api.store.get_by(rid::PVC, "default", "task-pv-claim").expect("claim");
    assert_eq!(get_str(claim, &["spec", "volumeName"]), Some("task-pv-volume"));
    assert_eq!(get_str(claim, &["status", "phase"]), Some("Bound"));
    let pod = c.api.store.get_by(rid::POD, "default", "task-pv-pod").expect("pod");
    assert_eq!(get_str(pod, &["status", "phase"]), Some("Running"));
    assert_eq!(
        kubectl(&mut c, "get pv task-pv-volume")[1].split_whitespace().collect::<Vec<_>>()[..7],
        ["task-pv-volume", "10Gi", "RWO", "Retain", "Bound", "default/task-pv-claim", "manual"]
    );
    // The page writes index.html on the node; here a shell in the pod writes it.
    kubectl(&mut c, "exec task-pv-pod -- sh -c 'echo Hello from Kubernetes storage > /usr/share/nginx/html/index.html'");
    assert_eq!(kubectl(&mut c, "exec task-pv-pod -- curl -s http://localhost/"), ["Hello from Kubernetes storage"]);
    // A new pod on the same claim sees the file: it lives on the volume, not in the container.
    kubectl(&mut c, "delete pod task-pv-pod");
    c.run_until(c.now + 60_000);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/kubernetes-website-examples");
    let text = std::fs::read_to_string(root.join("pods/storage/pv-pod.yaml")).expect("example");
    c.act(Credentials::Token("admin-token".into()), Action::Apply { text, file: "pv-pod.yaml".into() });
    c.run_until(c.now + 60_000);
    assert_eq!(kubectl(&mut c, "exec task-pv-pod -- cat /usr/share/nginx/html/index.html"), ["Hello from Kubernetes storage"]);
}

#[test]
fn the_website_quota_and_limit_range_pages_converge() {
    use kubeloop_core::foundation::api::rid;
    use kubeloop_core::foundation::value::json;
    // Configure Memory and CPU Quotas / Quotas for API Objects / Limit Priority Class
    // consumption: each quota's status mirrors its hard limits and counts what is there.
    let mut c = run_examples(
        &[
            "admin/resource/quota-mem-cpu.yaml",
            "admin/resource/quota-objects.yaml",
            "policy/priority-class-resourcequota.yaml",
            "admin/resource/cpu-constraints.yaml",
            "admin/resource/storagelimits.yaml",
        ],
        10_000,
    );
    let status = |c: &Cluster, name: &str| c.api.store.get_by(rid::RESOURCEQUOTA, "default", name).expect("quota")["status"].clone();
    assert_eq!(
        status(&c, "mem-cpu-demo"),
        json!({"hard": {"limits.cpu": "2", "limits.memory": "2Gi", "requests.cpu": "1", "requests.memory": "1Gi"},
            "used": {"limits.cpu": "0", "limits.memory": "0", "requests.cpu": "0", "requests.memory": "0"}})
    );
    assert_eq!(
        status(&c, "object-quota-demo"),
        json!({"hard": {"persistentvolumeclaims": "1", "services.loadbalancers": "2", "services.nodeports": "0"},
            "used": {"persistentvolumeclaims": "0", "services.loadbalancers": "0", "services.nodeports": "0"}})
    );
    // A quota without hard limits tracks nothing.
    assert_eq!(status(&c, "pods-cluster-services"), json!({}));
    // The CPU constraints page: the LimitRange gets its defaults from max.
    let lr = c.api.store.get_by(rid::LIMITRANGE, "default", "cpu-min-max-demo-lr").unwrap();
    assert_eq!(lr["spec"]["limits"][0]["default"], json!({"cpu": "800m"}));
    assert_eq!(lr["spec"]["limits"][0]["defaultRequest"], json!({"cpu": "800m"}));
    // A pod without memory settings is refused by the compute quota, as the page warns.
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: quota-mem-cpu-demo}\nspec:\n  containers:\n  - {name: quota-mem-cpu-demo-ctr, image: nginx}\n";
    let out = c.act(Credentials::Token("admin-token".into()), Action::Apply { text: pod.into(), file: "pod.yaml".into() }).output;
    assert_eq!(out, vec!["Error from server (Forbidden): error when creating \"pod.yaml\": pods \"quota-mem-cpu-demo\" is forbidden: failed quota: mem-cpu-demo: must specify limits.memory for: quota-mem-cpu-demo-ctr; requests.memory for: quota-mem-cpu-demo-ctr"]);
    // Quotas for API objects: the second claim is over `persistentvolumeclaims: 1`.
    let claim = |n: &str| {
        format!("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: {n}}}\nspec:\n  storageClassName: manual\n  accessModes: [ReadWriteOnce]\n  resources: {{requests: {{storage: 1Gi}}}}\n")
    };
    let out = c.act(Credentials::Token("admin-token".into()), Action::Apply { text: claim("pvc-quota-demo"), file: "pvc.yaml".into() }).output;
    // (Whether the storage loops warn about claims is theirs to say.)
    assert!(out.concat().ends_with("persistentvolumeclaim/pvc-quota-demo created"), "{out:?}");
    c.run_until(c.now + 5_000);
    let out = c.act(Credentials::Token("admin-token".into()), Action::Apply { text: claim("pvc-quota-demo-2"), file: "pvc.yaml".into() }).output;
    assert_eq!(out, vec!["Error from server (Forbidden): error when creating \"pvc.yaml\": persistentvolumeclaims \"pvc-quota-demo-2\" is forbidden: exceeded quota: object-quota-demo, requested: persistentvolumeclaims=1, used: persistentvolumeclaims=1, limited: persistentvolumeclaims=1"]);
    // The memory defaults page: a pod without settings gets the defaults.
    let mut c = Cluster::new(Config { trace: false, ..Default::default() });
    kubectl(&mut c, "create namespace default-mem-example");
    c.run_until(2_000);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/kubernetes-website-examples");
    let text = std::fs::read_to_string(root.join("admin/resource/memory-defaults.yaml")).expect("example");
    c.act(Credentials::Token("admin-token".into()), Action::Apply { text, file: "memory-defaults.yaml".into() });
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: default-mem-demo, namespace: default-mem-example}\nspec:\n  containers:\n  - {name: default-mem-demo-ctr, image: nginx}\n";
    c.act(Credentials::Token("admin-token".into()), Action::Apply { text: pod.into(), file: "pod.yaml".into() });
    let p = c.api.store.get_by(rid::POD, "default-mem-example", "default-mem-demo").expect("pod");
    assert_eq!(p["spec"]["containers"][0]["resources"], json!({"limits": {"memory": "512Mi"}, "requests": {"memory": "256Mi"}}));
}
