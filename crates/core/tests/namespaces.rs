//! Namespace deletion as kube-controller-manager and the API server do it: content deleted
//! resource by resource (pods first), the deletion conditions while a finalizer holds an
//! object, a merge patch that releases it, NamespaceLifecycle's refusals, and the
//! namespaces that may not be deleted.

// Tests build their fixtures in memory; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::{Credentials, Request};
use kubeloop_core::cluster::{Action, Cluster, Config};
use kubeloop_core::foundation::api::{self, get_array, get_str, rid};
use kubeloop_core::foundation::value::{json, Value};

fn admin() -> Credentials {
    Credentials::Token("admin-token".into())
}

fn apply(c: &mut Cluster, text: &str) -> Vec<String> {
    c.act(admin(), Action::Apply { text: text.into(), file: "t.yaml".into() }).output
}

fn kubectl(c: &mut Cluster, line: &str) -> Vec<String> {
    c.act(admin(), Action::Kubectl(line.into())).output
}

fn namespace(c: &Cluster, name: &str) -> Option<Value> {
    c.api.store.get_by(rid::NAMESPACE, "", name).map(|o| (**o).clone())
}

/// (type, status, reason, message) of each deletion condition, in order.
fn conditions(ns: &Value) -> Vec<(String, String, String, String)> {
    get_array(ns, &["status", "conditions"])
        .iter()
        .map(|c| {
            let s = |k: &str| get_str(c, &[k]).unwrap_or("").to_string();
            (s("type"), s("status"), s("reason"), s("message"))
        })
        .collect()
}

fn cond(ty: &str, status: &str, reason: &str, message: &str) -> (String, String, String, String) {
    (ty.into(), status.into(), reason.into(), message.into())
}

const SHOP: &str = "apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.27}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
data: {mode: fast}
";

#[test]
fn a_namespace_is_emptied_pods_first_then_finalized_and_removed() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, SHOP);
    c.run_to_quiet(600_000);
    assert_eq!(c.api.store.list(rid::POD, Some("shop")).count(), 2);
    let ns = namespace(&c, "shop").unwrap();
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(ns["status"], json!({"phase": "Active"}));

    assert_eq!(kubectl(&mut c, "delete namespace shop"), vec!["namespace \"shop\" deleted"]);
    let ns = namespace(&c, "shop").unwrap();
    assert_eq!(ns["status"]["phase"], "Terminating");
    assert!(api::is_deleting(&ns));
    assert!(ns["metadata"].get("deletionGracePeriodSeconds").is_none(), "a namespace has no grace period");
    let table = kubectl(&mut c, "get ns shop");
    assert_eq!(table[0], "NAME   STATUS        AGE");
    assert!(table[1].starts_with("shop   Terminating   "), "{table:?}");

    // Nothing happens for 5s (namespaceDeletionGracePeriod); then the pods go first, alone.
    let deleted_at = c.now;
    c.run_until(deleted_at + 4_000);
    assert!(c.api.store.list(rid::POD, Some("shop")).all(|p| !api::is_deleting(p)));
    c.run_until(deleted_at + 5_100);
    assert!(c.api.store.list(rid::POD, Some("shop")).all(|p| api::is_deleting(p)), "the pods are terminating");
    assert!(!api::is_deleting(c.api.store.get_by(rid::CONFIGMAP, "shop", "settings").unwrap()), "other content waits for the pods");
    assert!(c.api.store.get_by(rid::DEPLOYMENT, "shop", "web").is_some());
    // Kubernetes 1.36 reports no content totals while the pods remain (kubernetes#138208).
    let ns = namespace(&c, "shop").unwrap();
    assert_eq!(
        conditions(&ns),
        vec![
            cond("NamespaceDeletionDiscoveryFailure", "False", "ResourcesDiscovered", "All resources successfully discovered"),
            cond("NamespaceDeletionGroupVersionParsingFailure", "False", "ParsedGroupVersions", "All legacy kube types successfully parsed"),
            cond("NamespaceDeletionContentFailure", "False", "ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
            cond("NamespaceContentRemaining", "False", "ContentRemoved", "All content successfully removed"),
            cond("NamespaceFinalizersRemaining", "False", "ContentHasNoFinalizers", "All content-preserving finalizers finished"),
        ]
    );
    // The pods were deleted before anything else; the ReplicaSet controller's attempts to
    // replace them meet NamespaceLifecycle.
    let deletes: Vec<&str> = c
        .api
        .trace
        .requests()
        .iter()
        .filter(|r| r.user.contains("namespace-controller") && r.verb == "delete")
        .map(|r| r.object.split('/').next().unwrap_or(""))
        .collect();
    assert_eq!(deletes, ["Pod", "Pod"], "only the pods so far");

    c.run_until(deleted_at + 120_000);
    assert!(namespace(&c, "shop").is_none(), "finalized and removed");
    for r in [rid::POD, rid::DEPLOYMENT, rid::REPLICASET, rid::SERVICE, rid::CONFIGMAP, rid::SERVICEACCOUNT, rid::ENDPOINTSLICE, rid::EVENT] {
        assert_eq!(c.api.store.list(r, Some("shop")).count(), 0, "{}", api::RESOURCES[r].plural);
    }
    assert_eq!(kubectl(&mut c, "get ns shop"), vec!["Error from server (NotFound): namespaces \"shop\" not found"]);
}

const STUCK: &str = "apiVersion: v1
kind: Namespace
metadata: {name: stuck}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: keep
  namespace: stuck
  finalizers: [example.com/keep]
data: {a: b}
---
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: stuck}
stringData: {t: x}
";

fn stuck_cluster() -> Cluster {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, STUCK);
    c.run_to_quiet(600_000);
    assert_eq!(kubectl(&mut c, "delete ns stuck"), vec!["namespace \"stuck\" deleted"]);
    let t = c.now;
    c.run_until(t + 60_000);
    c
}

#[test]
fn a_finalizer_nothing_removes_holds_the_namespace_with_conditions_until_it_is_patched_away() {
    let mut c = stuck_cluster();
    let ns = namespace(&c, "stuck").expect("still there");
    assert_eq!(ns["status"]["phase"], "Terminating");
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(
        conditions(&ns),
        vec![
            cond("NamespaceDeletionDiscoveryFailure", "False", "ResourcesDiscovered", "All resources successfully discovered"),
            cond("NamespaceDeletionGroupVersionParsingFailure", "False", "ParsedGroupVersions", "All legacy kube types successfully parsed"),
            cond("NamespaceDeletionContentFailure", "False", "ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
            cond("NamespaceContentRemaining", "True", "SomeResourcesRemain", "Some resources are remaining: configmaps. has 1 resource instances"),
            cond(
                "NamespaceFinalizersRemaining",
                "True",
                "SomeFinalizersRemain",
                "Some content in the namespace has finalizers remaining: example.com/keep in 1 resource instances"
            ),
        ]
    );
    // The rest is gone; the held ConfigMap waits with its deletionTimestamp.
    assert!(c.api.store.get_by(rid::SECRET, "stuck", "token").is_none());
    assert!(c.api.store.get_by(rid::CONFIGMAP, "stuck", "kube-root-ca.crt").is_none());
    let keep = c.api.store.get_by(rid::CONFIGMAP, "stuck", "keep").expect("held").clone();
    assert!(api::is_deleting(&keep));
    // It stays so: the controller keeps checking (every 15/2+1 = 8s) and changes nothing.
    let rv = api::resource_version(&ns).to_string();
    let t = c.now;
    c.run_until(t + 120_000);
    let later = namespace(&c, "stuck").expect("still there");
    assert_eq!(api::resource_version(&later), rv, "no status write while nothing changes");

    // kubectl shows it.
    let describe = kubectl(&mut c, "describe ns stuck");
    assert_eq!(describe[0], "Name:         stuck");
    assert_eq!(describe[1], "Labels:       kubernetes.io/metadata.name=stuck");
    assert_eq!(describe[3], "Status:       Terminating");
    assert_eq!(describe[4], "Conditions:");
    assert!(
        describe[5].starts_with("  Type                                         Status  LastTransitionTime               Reason                Message"),
        "{:?}",
        describe[5]
    );
    assert!(
        describe.iter().any(|l| l.starts_with("  NamespaceFinalizersRemaining                 True    ")
            && l.ends_with("SomeFinalizersRemain  Some content in the namespace has finalizers remaining: example.com/keep in 1 resource instances")),
        "{describe:#?}"
    );
    assert_eq!(&describe[describe.len() - 3..], ["No resource quota.", "", "No LimitRange resource."]);

    // A second delete is refused while the controller's finalizer is there.
    assert_eq!(
        kubectl(&mut c, "delete ns stuck"),
        vec!["Error from server (Conflict): Operation cannot be fulfilled on namespaces \"stuck\": The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system."]
    );
    // Deleting the held object again changes nothing and says so as kubectl does.
    assert_eq!(kubectl(&mut c, "delete cm keep -n stuck"), vec!["configmap \"keep\" deleted from stuck namespace"]);

    // Patch the finalizer away: the ConfigMap goes, and at the next check the namespace.
    assert_eq!(kubectl(&mut c, "patch cm keep -n stuck --type=merge -p '{\"metadata\":{\"finalizers\":null}}'"), vec!["configmap/keep patched"]);
    assert!(c.api.store.get_by(rid::CONFIGMAP, "stuck", "keep").is_none());
    let t = c.now;
    c.run_until(t + 30_000);
    assert!(namespace(&c, "stuck").is_none());
}

#[test]
fn creates_into_a_terminating_or_missing_namespace_are_refused_with_upstreams_status() {
    let mut c = stuck_cluster();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "new", "namespace": "stuck"}});
    let err = c.request(Request::create(rid::CONFIGMAP, "stuck", cm, admin())).unwrap_err();
    // The body exactly as the API server writes it.
    assert_eq!(
        String::from_utf8(err.to_wire()).unwrap(),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"new\" is forbidden: unable to create new content in namespace stuck because it is being terminated","reason":"Forbidden","details":{"name":"new","kind":"configmaps","causes":[{"reason":"NamespaceTerminating","message":"namespace stuck is being terminated","field":"metadata.namespace"}]},"code":403}
"#
    );
    // A generated name is what the message names.
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "web-", "namespace": "stuck"}, "spec": {"containers": [{"name": "a", "image": "nginx"}]}});
    let err = c.request(Request::create(rid::POD, "stuck", pod, admin())).unwrap_err();
    assert_eq!(err.message, "pods \"web-\" is forbidden: unable to create new content in namespace stuck because it is being terminated");
    // Updates and deletes of what is there still pass.
    let patched = kubectl(&mut c, "label cm keep -n stuck tier=x");
    assert_eq!(patched, vec!["configmap/keep labeled"]);
    // kubectl's line for it.
    let out = kubectl(&mut c, "create configmap other -n stuck");
    assert_eq!(out, vec!["error: failed to create configmap: configmaps \"other\" is forbidden: unable to create new content in namespace stuck because it is being terminated"]);
    // A namespace that does not exist.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "nowhere"}});
    let err = c.request(Request::create(rid::CONFIGMAP, "nowhere", cm, admin())).unwrap_err();
    assert_eq!((err.code, err.reason.as_str(), err.message.as_str()), (404, "NotFound", "namespaces \"nowhere\" not found"));
}

#[test]
fn default_kube_system_and_kube_public_may_not_be_deleted() {
    let mut c = Cluster::new(Config::default());
    for ns in ["default", "kube-system", "kube-public"] {
        assert_eq!(
            kubectl(&mut c, &format!("delete namespace {ns}")),
            vec![format!("Error from server (Forbidden): namespaces \"{ns}\" is forbidden: this namespace may not be deleted")]
        );
        assert!(!api::is_deleting(&namespace(&c, ns).unwrap()));
    }
    // kube-node-lease is not immortal.
    assert_eq!(kubectl(&mut c, "delete namespace kube-node-lease"), vec!["namespace \"kube-node-lease\" deleted"]);
}

#[test]
fn metadata_finalizers_hold_a_finalized_namespace() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, "apiVersion: v1\nkind: Namespace\nmetadata: {name: held, finalizers: [example.com/ns]}\n");
    c.run_to_quiet(600_000);
    kubectl(&mut c, "delete ns held");
    let t = c.now;
    c.run_until(t + 30_000);
    let ns = namespace(&c, "held").expect("held by its metadata finalizer");
    assert_eq!(ns["spec"]["finalizers"], json!([]), "the controller finalized it");
    assert_eq!(ns["metadata"]["finalizers"], json!(["example.com/ns"]));
    // With `spec.finalizers` empty a delete is the generic one: accepted, nothing changes.
    assert_eq!(kubectl(&mut c, "delete ns held"), vec!["namespace \"held\" deleted"]);
    assert_eq!(kubectl(&mut c, "patch ns held --type=merge -p '{\"metadata\":{\"finalizers\":null}}'"), vec!["namespace/held patched"]);
    assert!(namespace(&c, "held").is_none());
}

#[test]
fn kubectl_patch_reports_no_change_and_bad_input() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n");
    assert_eq!(kubectl(&mut c, "patch cm c -p '{\"data\":{\"a\":\"b\"}}'"), vec!["configmap/c patched (no change)"]);
    assert_eq!(kubectl(&mut c, "patch cm c -p '{\"data\":{\"a\":\"z\"}}'"), vec!["configmap/c patched"]);
    assert_eq!(c.api.store.get_by(rid::CONFIGMAP, "default", "c").unwrap()["data"]["a"], "z");
    assert_eq!(kubectl(&mut c, "patch cm c --type=json -p '[{\"op\":\"remove\",\"path\":\"/data/a\"}]'"), vec!["configmap/c patched"]);
    assert_eq!(kubectl(&mut c, "patch cm c"), vec!["error: must specify --patch or --patch-file containing the contents of the patch"]);
    assert_eq!(kubectl(&mut c, "patch cm c --type=xml -p '{}'"), vec!["error: --type must be one of [json merge strategic], not \"xml\""]);
    assert_eq!(kubectl(&mut c, "patch cm missing -p '{}'"), vec!["Error from server (NotFound): configmaps \"missing\" not found"]);
}
