//! Admission as users meet it through kubectl: policy parameters, Warn actions, and
//! mutating webhooks that inject into pods.

// Tests build their fixtures in memory; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::Credentials;
use kubeloop_core::cluster::{Action, Cluster, Config};
use kubeloop_core::foundation::api::{get_array, get_str, rid};

fn apply(c: &mut Cluster, text: &str) -> Vec<String> {
    let out = c.act(Credentials::Token("admin-token".into()), Action::Apply { text: text.into(), file: "t.yaml".into() }).output;
    c.run_to_quiet(600_000);
    out
}

const POLICY: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replica-limit}
spec:
  failurePolicy: Fail
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}
  validations:
  - expression: \"object.spec.replicas <= int(params.data.maxReplicas)\"
    messageExpression: \"'at most ' + params.data.maxReplicas + ' replicas, got ' + string(object.spec.replicas)\"
";

fn deployment(replicas: u32) -> String {
    format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers: [{{name: web, image: nginx:1.27}}]\n")
}

#[test]
fn policy_parameters_come_from_the_bound_configmap() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, POLICY);
    apply(&mut c, "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: replica-limit-binding}\nspec:\n  policyName: replica-limit\n  validationActions: [Deny]\n  paramRef: {name: limits, namespace: default, parameterNotFoundAction: Deny}\n");
    // No params yet: the binding denies.
    let out = apply(&mut c, &deployment(3));
    assert_eq!(out, vec!["The deployments \"web\" is invalid: : ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-binding' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"]);
    apply(&mut c, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: limits}\ndata: {maxReplicas: \"2\"}\n");
    let out = apply(&mut c, &deployment(3));
    assert_eq!(out, vec!["The deployments \"web\" is invalid: : ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-binding' denied request: at most 2 replicas, got 3"]);
    assert_eq!(apply(&mut c, &deployment(2)), vec!["deployment.apps/web created"]);
}

#[test]
fn a_policy_whose_param_kind_is_not_served_fails_closed() {
    let mut c = Cluster::new(Config::default());
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/corpus/kubernetes-website-examples/validatingadmissionpolicy/");
    let policy = std::fs::read_to_string(format!("{dir}policy-with-param.yaml")).unwrap();
    let binding = std::fs::read_to_string(format!("{dir}binding-with-param.yaml")).unwrap();
    assert_eq!(apply(&mut c, &policy), vec!["validatingadmissionpolicy.admissionregistration.k8s.io/replicalimit-policy.example.com created"]);
    assert_eq!(apply(&mut c, &binding), vec!["validatingadmissionpolicybinding.admissionregistration.k8s.io/replicalimit-binding-test.example.com created"]);
    apply(&mut c, "apiVersion: v1\nkind: Namespace\nmetadata: {name: test, labels: {environment: test}}\n");
    let out = apply(&mut c, &deployment(1).replace("name: web}", "name: web, namespace: test}"));
    assert_eq!(out, vec!["The deployments \"web\" is invalid: : ValidatingAdmissionPolicy 'replicalimit-policy.example.com' with binding 'replicalimit-binding-test.example.com' denied request: failed to configure policy: failed to find resource referenced by paramKind: 'rules.example.com/v1, Kind=ReplicaLimit'"]);
    // Namespaces the binding does not select are not affected.
    assert_eq!(apply(&mut c, &deployment(1)), vec!["deployment.apps/web created"]);
}

#[test]
fn a_warn_action_lets_the_request_through_with_a_warning() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: small}\nspec:\n  matchConstraints:\n    resourceRules:\n    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}\n  validations:\n  - {expression: \"object.spec.replicas <= 1\", message: \"prefer a single replica\"}\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: small-warn}\nspec: {policyName: small, validationActions: [Warn]}\n");
    let out = apply(&mut c, &deployment(3));
    assert_eq!(
        out,
        vec![
            "Warning: Validation failed for ValidatingAdmissionPolicy 'small' with binding 'small-warn': prefer a single replica\ndeployment.apps/web created"
        ]
    );
}

#[test]
fn a_mutating_webhook_injects_a_sidecar() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, "apiVersion: v1\nkind: Namespace\nmetadata: {name: mesh}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: injector, namespace: mesh}\nspec:\n  selector: {matchLabels: {app: injector}}\n  template:\n    metadata: {labels: {app: injector}}\n    spec:\n      containers: [{name: injector, image: registry.example/injector:1.0}]\n---\napiVersion: v1\nkind: Service\nmetadata: {name: injector, namespace: mesh}\nspec:\n  selector: {app: injector}\n  ports: [{port: 443}]\n");
    apply(&mut c, "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata:\n  name: sidecar-injector\n  annotations:\n    kubeloop.dev/patch: |\n      metadata: {annotations: {sidecar.example.com/injected: \"true\"}}\n      spec:\n        containers:\n        - {name: proxy, image: registry.example/proxy:1.0}\nwebhooks:\n- name: inject.sidecar.example.com\n  clientConfig: {service: {name: injector, namespace: mesh, path: /mutate}}\n  rules: [{apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], resources: [pods]}]\n  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: default}}\n  sideEffects: None\n  admissionReviewVersions: [v1]\n");
    apply(&mut c, "apiVersion: v1\nkind: Pod\nmetadata: {name: app}\nspec:\n  containers: [{name: app, image: nginx:1.27}]\n");
    let pod = c.api.store.get_by(rid::POD, "default", "app").expect("pod");
    let names: Vec<&str> = get_array(pod, &["spec", "containers"]).iter().filter_map(|c| get_str(c, &["name"])).collect();
    assert_eq!(names, vec!["app", "proxy"]);
    assert_eq!(pod["spec"]["containers"][1]["imagePullPolicy"], "IfNotPresent", "injected containers are defaulted too");
    assert_eq!(get_str(pod, &["metadata", "annotations", "sidecar.example.com/injected"]), Some("true"));
    let statuses = get_array(pod, &["status", "containerStatuses"]);
    assert_eq!(statuses.len(), 2);
    assert!(statuses.iter().all(|s| s["ready"] == true), "both containers run");
}

/// A policy over a list literal of `n` numbers, with these validations.
fn costly_policy(n: usize, validations: &[&str]) -> String {
    let list: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    let mut p = format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {{name: costly}}\nspec:\n  failurePolicy: Fail\n  matchConstraints:\n    resourceRules:\n    - {{apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}}\n  variables:\n  - {{name: l, expression: \"[{}]\"}}\n  validations:\n",
        list.join(", ")
    );
    for v in validations {
        p.push_str(&format!("  - expression: \"{v}\"\n"));
    }
    p + "---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: costly}\nspec:\n  policyName: costly\n  validationActions: [Deny]\n"
}

#[test]
fn cel_stops_at_the_per_expression_limit_and_the_binding_budget() {
    // Six nested `all` over 20 numbers: 64 million iterations, stopped at cel-go's
    // per-call limit with its message (upstream took 12 s here before the limit).
    let six =
        "variables.l.all(a, variables.l.all(b, variables.l.all(c, variables.l.all(d, variables.l.all(e, variables.l.all(f, a + b + c + d + e + f >= 0))))))";
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &costly_policy(20, &[six]));
    let out = apply(&mut c, &deployment(1));
    assert_eq!(
        out,
        vec![format!("The deployments \"web\" is invalid: : ValidatingAdmissionPolicy 'costly' with binding 'costly' denied request: expression '{six}' resulted in error: operation cancelled: actual cost limit exceeded")]
    );
    // Three nested over 40 stay under the per-call limit, but fourteen of them pass the
    // binding's budget of 10,000,000: one decision for the policy.
    let three = "variables.l.all(a, variables.l.all(b, variables.l.all(c, a + b + c >= 0)))";
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &costly_policy(40, &[three]));
    assert_eq!(apply(&mut c, &deployment(1)), vec!["deployment.apps/web created"]);
    let mut c = Cluster::new(Config::default());
    apply(&mut c, &costly_policy(40, &[three; 14]));
    let out = apply(&mut c, &deployment(1));
    assert_eq!(
        out,
        vec!["The deployments \"web\" is invalid: : ValidatingAdmissionPolicy 'costly' with binding 'costly' denied request: validation failed due to running out of cost budget, no further validation rules will be run"]
    );
}
