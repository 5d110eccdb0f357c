//! The built-in loops' writes in `managedFields`: each under its program's name, with the
//! fields it set (not those mutating admission added), status writes under `status`.

use kubeloop_core::apiserver::Credentials;
use kubeloop_core::cluster::{Action, Cluster, Config};
use kubeloop_core::foundation::api::{get_array, get_str, rid};
use kubeloop_core::foundation::value::Value;

fn managers(obj: &Value) -> Vec<(String, String)> {
    get_array(obj, &["metadata", "managedFields"])
        .iter()
        .map(|e| (get_str(e, &["manager"]).unwrap_or("").to_string(), get_str(e, &["subresource"]).unwrap_or("").to_string()))
        .collect()
}

#[test]
fn controllers_and_kubelets_record_what_they_set() {
    let mut c = Cluster::new(Config::default());
    let d = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: nginx}]\n";
    c.act(Credentials::Token("admin-token".into()), Action::Apply { text: d.into(), file: "d.yaml".into() });
    c.run_to_quiet(120_000);
    let pod = c.api.store.list(rid::POD, Some("default")).next().expect("a pod").clone();
    assert_eq!(managers(&pod), [("kube-controller-manager".to_string(), String::new()), ("kubelet".to_string(), "status".to_string())]);
    let entries = get_array(&pod, &["metadata", "managedFields"]);
    let kcm = &entries[0]["fieldsV1"];
    assert!(kcm["f:metadata"].get("f:generateName").is_some(), "{kcm:?}");
    assert!(kcm["f:metadata"]["f:labels"].get(".").is_some());
    // The service account admission plugin's volume is nobody's.
    assert!(kcm["f:spec"].get("f:volumes").is_none() && kcm["f:spec"].get("f:serviceAccountName").is_none(), "{kcm:?}");
    let kubelet = &entries[1]["fieldsV1"]["f:status"];
    assert!(kubelet["f:conditions"].get(".").is_none(), "a list is owned through its items");
    assert!(kubelet["f:conditions"]["k:{\"type\":\"Ready\"}"].get(".").is_some());
    let rs = c.api.store.list(rid::REPLICASET, Some("default")).next().expect("a ReplicaSet").clone();
    assert_eq!(managers(&rs), [("kube-controller-manager".to_string(), String::new()), ("kube-controller-manager".to_string(), "status".to_string())]);
    let deploy = c.api.store.get_by(rid::DEPLOYMENT, "default", "web").expect("the Deployment").clone();
    assert_eq!(managers(&deploy), [("kubectl-client-side-apply".to_string(), String::new()), ("kube-controller-manager".to_string(), "status".to_string())]);
    let scheduled = c.api.store.list(rid::EVENT, Some("default")).find(|e| get_str(e, &["reason"]) == Some("Scheduled")).expect("a Scheduled event").clone();
    assert_eq!(managers(&scheduled), [("kube-scheduler".to_string(), String::new())]);
}
