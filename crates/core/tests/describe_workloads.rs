//! `kubectl describe` of workloads that live controllers act on, end to end: the objects
//! are applied, reconciled and described through the API server, and the text is what
//! kubectl 1.36's describers (`k8s.io/kubectl/pkg/describe`) print for them.

// Tests build their fixtures in memory; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::Credentials;
use kubeloop_core::cluster::{Action, Cluster, Config};
use kubeloop_core::foundation::api::{self, get_str, rid};
use kubeloop_core::foundation::sim::parse_rfc3339;

fn admin() -> Credentials {
    Credentials::Token("admin-token".into())
}

fn apply(c: &mut Cluster, text: &str) -> Vec<String> {
    c.act(admin(), Action::Apply { text: text.into(), file: "test.yaml".into() }).output
}

fn kubectl(c: &mut Cluster, line: &str) -> String {
    c.act(admin(), Action::Kubectl(line.into())).output.join("\n")
}

const RC: &str = "apiVersion: v1
kind: ReplicationController
metadata:
  name: nginx
spec:
  replicas: 2
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports:
        - containerPort: 80
";

#[test]
fn a_replication_controller_is_described_with_its_pods_template_and_events() {
    let mut c = Cluster::new(Config::default());
    assert_eq!(apply(&mut c, RC), ["replicationcontroller/nginx created"]);
    c.run_to_quiet(600_000);
    let out = kubectl(&mut c, "describe rc nginx");
    // The selector and the object's labels are defaulted from the template's labels.
    let head = "\
Name:         nginx
Namespace:    default
Selector:     app=nginx
Labels:       app=nginx
Annotations:  <none>
Replicas:     2 current / 2 desired
Pods Status:  2 Running / 0 Waiting / 0 Succeeded / 0 Failed
Pod Template:
  Labels:  app=nginx
  Containers:
   nginx:
    Image:         nginx:1.27
    Port:          80/TCP
    Host Port:     0/TCP
    Environment:   <none>
    Mounts:        <none>
  Volumes:         <none>
  Node-Selectors:  <none>
  Tolerations:     <none>
Events:
  Type    Reason            Age   From                    Message
  ----    ------            ----  ----                    -------";
    assert!(out.starts_with(head), "{out}");
    // One SuccessfulCreate per pod; both are seconds old, so the Age column is four wide.
    let mut rows: Vec<&str> = out[head.len()..].lines().filter(|l| !l.is_empty()).collect();
    rows.sort_unstable();
    let mut want: Vec<String> = c
        .api
        .store
        .list(rid::POD, Some("default"))
        .map(|p| {
            let event = c
                .api
                .store
                .list(rid::EVENT, Some("default"))
                .find(|e| get_str(e, &["message"]) == Some(&format!("Created pod: {}", api::name(p))))
                .expect("an event for each pod");
            let secs = (c.api.now - parse_rfc3339(get_str(event, &["lastTimestamp"]).unwrap()).unwrap()) / 1000;
            assert!(secs < 100, "{secs}");
            format!("  Normal  SuccessfulCreate  {:<4}  replication-controller  Created pod: {}", format!("{secs}s"), api::name(p))
        })
        .collect();
    want.sort_unstable();
    assert_eq!(rows, want, "{out}");
    assert_eq!(want.len(), 2);
}

#[test]
fn a_disruption_budget_is_described_with_the_status_its_controller_keeps() {
    let mut c = Cluster::new(Config::default());
    apply(
        &mut c,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n",
    );
    c.run_to_quiet(600_000);
    apply(
        &mut c,
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: web\nspec:\n  minAvailable: 2\n  selector:\n    matchLabels: {app: web}\n---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: any-web\nspec:\n  maxUnavailable: 34%\n  selector:\n    matchExpressions:\n    - {key: tier, operator: DoesNotExist}\n    - {key: app, operator: In, values: [web, shop]}\n",
    );
    c.run_to_quiet(600_000);
    assert_eq!(
        kubectl(&mut c, "describe pdb web"),
        "\
Name:           web
Namespace:      default
Min available:  2
Selector:       app=web
Status:
    Allowed disruptions:  1
    Current:              3
    Desired:              2
    Total:                3
Events:                   <none>"
    );
    // 34% of 3 pods rounds up to 2 that may be unavailable; requirements print sorted by key.
    assert_eq!(
        kubectl(&mut c, "describe poddisruptionbudgets/any-web"),
        "\
Name:             any-web
Namespace:        default
Max unavailable:  34%
Selector:         app in (shop,web),!tier
Status:
    Allowed disruptions:  2
    Current:              3
    Desired:              1
    Total:                3
Events:                   <none>"
    );
}

#[test]
fn kinds_without_a_describer_say_which_ones_have_one() {
    let mut c = Cluster::new(Config::default());
    assert_eq!(
        kubectl(&mut c, "describe configmap kube-root-ca.crt"),
        "error: kubeloop cannot describe configmaps yet (it describes pods, deployments, replicasets, replicationcontrollers, statefulsets, daemonsets, jobs, cronjobs, poddisruptionbudgets, horizontalpodautoscalers, services, nodes, namespaces, resourcequotas, limitranges, persistentvolumeclaims, persistentvolumes, storageclasses and certificatesigningrequests)"
    );
}
