//! The aggregation layer: kube-apiserver's own group-versions listed as Local APIServices,
//! and an APIService backed by a Service reported unavailable, with the availability
//! controller's reasons, because nothing serves its group.

// Tests build their fixtures in memory; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::Credentials;
use kubeloop_core::cluster::{Action, Cluster, Config};
use kubeloop_core::foundation::api::{get_array, get_str, rid};

fn admin() -> Credentials {
    Credentials::Token("admin-token".into())
}

fn run(c: &mut Cluster, action: Action) -> Vec<String> {
    c.act(admin(), action).output
}

fn available(c: &Cluster, name: &str) -> (String, String) {
    let a = c.api.store.get_by(rid::APISERVICE, "", name).expect("apiservice").clone();
    let cond = get_array(&a, &["status", "conditions"]).iter().find(|c| get_str(c, &["type"]) == Some("Available")).cloned().expect("condition");
    (get_str(&cond, &["reason"]).unwrap_or("").to_string(), get_str(&cond, &["message"]).unwrap_or("").to_string())
}

const WARDLE: &str = "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: v1alpha1.wardle.k8s.io\nspec:\n  insecureSkipTLSVerify: true\n  group: wardle.k8s.io\n  groupPriorityMinimum: 1000\n  versionPriority: 15\n  service:\n    name: api\n    namespace: wardle\n  version: v1alpha1\n";

#[test]
fn builtin_groups_are_local_and_an_aggregated_one_is_unavailable_with_the_reason() {
    let mut c = Cluster::new(Config::default());
    let out = run(&mut c, Action::Kubectl("get apiservices".into()));
    assert_eq!(out[0].split_whitespace().collect::<Vec<_>>(), ["NAME", "SERVICE", "AVAILABLE", "AGE"]);
    assert!(out.iter().any(|l| l.split_whitespace().take(3).collect::<Vec<_>>() == ["v1.apps", "Local", "True"]), "{out:?}");
    assert!(out.iter().any(|l| l.starts_with("v1.   ")), "the core group's name is `v1.`: {out:?}");
    run(&mut c, Action::Apply { text: WARDLE.into(), file: "api-service.yaml".into() });
    c.run_until(1_000);
    assert_eq!(available(&c, "v1alpha1.wardle.k8s.io"), ("ServiceNotFound".into(), "service/api in \"wardle\" is not present".into()));
    let out = run(&mut c, Action::Kubectl("get apiservice v1alpha1.wardle.k8s.io".into()));
    assert_eq!(out[1].split_whitespace().take(4).collect::<Vec<_>>(), ["v1alpha1.wardle.k8s.io", "wardle/api", "False", "(ServiceNotFound)"]);
    // A Service with no pods behind it: no endpoints.
    let svc = "apiVersion: v1\nkind: Namespace\nmetadata: {name: wardle}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: api, namespace: wardle}\nspec:\n  selector: {app: wardle}\n  ports: [{port: 443, targetPort: 443}]\n";
    run(&mut c, Action::Apply { text: svc.into(), file: "svc.yaml".into() });
    c.run_until(2_000);
    assert_eq!(
        available(&c, "v1alpha1.wardle.k8s.io"),
        ("MissingEndpoints".into(), "endpoints for service/api in \"wardle\" have no addresses with port name \"\"".into())
    );
    // A second create conflicts, as on a real cluster.
    let again = run(&mut c, Action::Kubectl(format!("create -f - <<EOF\n{WARDLE}EOF")));
    assert_eq!(
        again,
        ["Error from server (AlreadyExists): error when creating \"STDIN\": apiservices.apiregistration.k8s.io \"v1alpha1.wardle.k8s.io\" already exists"]
    );
}
