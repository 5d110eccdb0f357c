//! ResourceQuota and LimitRange as users meet them: admission refusing what does not fit
//! (with the API server's words), the quota controller giving usage back as objects go,
//! scopes, object counts, LimitRange defaults and refusals, and kubectl's views.

// Tests build their fixtures in memory; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::Credentials;
use kubeloop_core::cluster::{Action, Cluster, Config};
use kubeloop_core::foundation::api::{get, get_str, rid};
use kubeloop_core::foundation::value::Value;

fn admin() -> Credentials {
    Credentials::Token("admin-token".into())
}

fn apply(c: &mut Cluster, text: &str) -> Vec<String> {
    let out = c.act(admin(), Action::Apply { text: text.into(), file: "t.yaml".into() }).output;
    c.run_to_quiet(600_000);
    out
}

fn kubectl(c: &mut Cluster, line: &str) -> Vec<String> {
    let out = c.act(admin(), Action::Kubectl(line.into())).output;
    c.run_to_quiet(600_000);
    out
}

fn used(c: &Cluster, ns: &str, name: &str) -> Value {
    let q = c.api.store.get_by(rid::RESOURCEQUOTA, ns, name).expect("quota");
    get(q, &["status", "used"]).cloned().unwrap_or(Value::Null)
}

fn pod(name: &str, resources: &str) -> String {
    format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: dev}}\nspec:\n  containers:\n  - name: nginx\n    image: nginx:1.27\n    resources: {resources}\n")
}

fn cluster() -> Cluster {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, "apiVersion: v1\nkind: Namespace\nmetadata: {name: dev}\n");
    c
}

#[test]
fn the_pod_count_refuses_the_third_pod_and_deletes_give_it_back() {
    let mut c = cluster();
    assert_eq!(
        apply(&mut c, "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: small, namespace: dev}\nspec:\n  hard: {pods: \"2\"}\n"),
        vec!["resourcequota/small created"]
    );
    // The controller mirrors hard into status and counts what exists.
    let q = c.api.store.get_by(rid::RESOURCEQUOTA, "dev", "small").unwrap();
    assert_eq!(get(q, &["status", "hard"]), Some(&kubeloop_core::foundation::value::json!({"pods": "2"})));
    assert_eq!(used(&c, "dev", "small"), kubeloop_core::foundation::value::json!({"pods": "0"}));
    assert_eq!(apply(&mut c, &pod("a", "{}")), vec!["pod/a created"]);
    assert_eq!(used(&c, "dev", "small")["pods"], "1");
    assert_eq!(apply(&mut c, &pod("b", "{}")), vec!["pod/b created"]);
    let out = apply(&mut c, &pod("c", "{}"));
    assert_eq!(out, vec![
        "Error from server (Forbidden): error when creating \"t.yaml\": pods \"c\" is forbidden: exceeded quota: small, requested: pods=1, used: pods=2, limited: pods=2"
    ]);
    assert!(c.api.store.get_by(rid::POD, "dev", "c").is_none());
    // Deleting a pod gives its share back once it is gone.
    kubectl(&mut c, "delete pod a -n dev");
    assert_eq!(used(&c, "dev", "small")["pods"], "1");
    assert_eq!(apply(&mut c, &pod("c", "{}")), vec!["pod/c created"]);
    assert_eq!(used(&c, "dev", "small")["pods"], "2");
    let get = kubectl(&mut c, "get quota -n dev");
    assert_eq!(get[0].split_whitespace().collect::<Vec<_>>(), vec!["NAME", "AGE", "REQUEST", "LIMIT"]);
    assert!(get[1].starts_with("small ") && get[1].contains("pods: 2/2"), "{get:?}");
}

#[test]
fn compute_quota_requires_limits_and_counts_requests() {
    let mut c = cluster();
    apply(
        &mut c,
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: compute, namespace: dev}\nspec:\n  hard: {requests.cpu: \"1\", requests.memory: 1Gi, limits.cpu: \"2\", limits.memory: 2Gi}\n",
    );
    let out = apply(&mut c, &pod("bare", "{}"));
    assert_eq!(out, vec![
        "Error from server (Forbidden): error when creating \"t.yaml\": pods \"bare\" is forbidden: failed quota: compute: must specify limits.cpu for: nginx; limits.memory for: nginx; requests.cpu for: nginx; requests.memory for: nginx"
    ]);
    let sized = "{requests: {cpu: 600m, memory: 256Mi}, limits: {cpu: \"1\", memory: 512Mi}}";
    assert_eq!(apply(&mut c, &pod("one", sized)), vec!["pod/one created"]);
    assert_eq!(
        used(&c, "dev", "compute"),
        kubeloop_core::foundation::value::json!({"limits.cpu": "1", "limits.memory": "512Mi", "requests.cpu": "600m", "requests.memory": "256Mi"})
    );
    let out = apply(&mut c, &pod("two", sized));
    assert_eq!(out, vec![
        "Error from server (Forbidden): error when creating \"t.yaml\": pods \"two\" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1"
    ]);
    let d = kubectl(&mut c, "describe quota compute -n dev");
    assert_eq!(
        d,
        vec![
            "Name:            compute",
            "Namespace:       dev",
            "Resource         Used   Hard",
            "--------         ----   ----",
            "limits.cpu       1      2",
            "limits.memory    512Mi  2Gi",
            "requests.cpu     600m   1",
            "requests.memory  256Mi  1Gi",
        ]
    );
    let g = kubectl(&mut c, "get quota -n dev");
    assert!(g[1].contains("requests.cpu: 600m/1, requests.memory: 256Mi/1Gi") && g[1].ends_with("limits.cpu: 1/2, limits.memory: 512Mi/2Gi"), "{g:?}");
}

#[test]
fn a_terminated_pod_stops_counting() {
    let mut c = cluster();
    apply(&mut c, "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: dev}\nspec:\n  hard: {pods: \"5\", count/pods: \"5\"}\n");
    apply(
        &mut c,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: once, namespace: dev}\nspec:\n  restartPolicy: Never\n  containers:\n  - {name: c, image: busybox:1.36, command: [sh, -c, 'exit 0']}\n",
    );
    c.run_until(c.now + 60_000);
    c.run_to_quiet(600_000);
    let p = c.api.store.get_by(rid::POD, "dev", "once").unwrap();
    assert_eq!(get_str(p, &["status", "phase"]), Some("Succeeded"));
    // `pods` counts live pods; `count/pods` every stored one.
    assert_eq!(used(&c, "dev", "q"), kubeloop_core::foundation::value::json!({"count/pods": "1", "pods": "0"}));
}

#[test]
fn scopes_select_what_a_quota_counts() {
    let mut c = cluster();
    apply(&mut c, "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: besteffort, namespace: dev}\nspec:\n  hard: {pods: \"1\"}\n  scopes: [BestEffort]\n");
    assert_eq!(apply(&mut c, &pod("be", "{}")), vec!["pod/be created"]);
    // A burstable pod is not counted by a BestEffort quota.
    assert_eq!(apply(&mut c, &pod("burst", "{requests: {cpu: 100m}}")), vec!["pod/burst created"]);
    let out = apply(&mut c, &pod("be2", "{}"));
    assert_eq!(out, vec![
        "Error from server (Forbidden): error when creating \"t.yaml\": pods \"be2\" is forbidden: exceeded quota: besteffort, requested: pods=1, used: pods=1, limited: pods=1"
    ]);
    assert_eq!(used(&c, "dev", "besteffort")["pods"], "1");
    let d = kubectl(&mut c, "describe quota besteffort -n dev");
    assert_eq!(d[2], "Scopes:     BestEffort");
    assert_eq!(d[3], " * Matches all pods that do not have resource requirements set. These pods have a best effort quality of service.");
    // A PriorityClass scope selector counts only pods of that class.
    apply(&mut c, "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n");
    apply(
        &mut c,
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: high, namespace: dev}\nspec:\n  hard: {pods: \"0\"}\n  scopeSelector:\n    matchExpressions: [{operator: In, scopeName: PriorityClass, values: [high]}]\n",
    );
    assert_eq!(apply(&mut c, &pod("plain", "{requests: {cpu: 100m}}")), vec!["pod/plain created"]);
    let high = pod("vip", "{requests: {cpu: 100m}}").replace("spec:\n", "spec:\n  priorityClassName: high\n");
    assert_eq!(apply(&mut c, &high), vec![
        "Error from server (Forbidden): error when creating \"t.yaml\": pods \"vip\" is forbidden: exceeded quota: high, requested: pods=1, used: pods=0, limited: pods=0"
    ]);
}

#[test]
fn object_counts_follow_creates_and_deletes() {
    let mut c = cluster();
    apply(
        &mut c,
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: objects, namespace: dev}\nspec:\n  hard: {configmaps: \"2\", count/deployments.apps: \"1\", services.nodeports: \"1\", services.loadbalancers: \"0\"}\n",
    );
    let cm = |n: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}, namespace: dev}}\ndata: {{a: b}}\n");
    assert_eq!(apply(&mut c, &cm("one")), vec!["configmap/one created"]);
    // kube-root-ca.crt is a ConfigMap too: the namespace controller made it.
    assert_eq!(used(&c, "dev", "objects")["configmaps"], "2");
    assert_eq!(apply(&mut c, &cm("two")), vec![
        "Error from server (Forbidden): error when creating \"t.yaml\": configmaps \"two\" is forbidden: exceeded quota: objects, requested: configmaps=1, used: configmaps=2, limited: configmaps=2"
    ]);
    kubectl(&mut c, "delete configmap one -n dev");
    assert_eq!(used(&c, "dev", "objects")["configmaps"], "1");
    assert_eq!(apply(&mut c, &cm("two")), vec!["configmap/two created"]);
    let dep = |n: &str| {
        format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {n}, namespace: dev}}\nspec:\n  replicas: 0\n  selector: {{matchLabels: {{app: {n}}}}}\n  template:\n    metadata: {{labels: {{app: {n}}}}}\n    spec:\n      containers: [{{name: c, image: nginx:1.27}}]\n")
    };
    assert_eq!(apply(&mut c, &dep("a")), vec!["deployment.apps/a created"]);
    assert_eq!(apply(&mut c, &dep("b")), vec![
        "Error from server (Forbidden): error when creating \"t.yaml\": deployments.apps \"b\" is forbidden: exceeded quota: objects, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1"
    ]);
    let lb = "apiVersion: v1\nkind: Service\nmetadata: {name: lb, namespace: dev}\nspec:\n  type: LoadBalancer\n  ports: [{port: 80}]\n";
    assert_eq!(apply(&mut c, lb), vec![
        "Error from server (Forbidden): error when creating \"t.yaml\": services \"lb\" is forbidden: exceeded quota: objects, requested: services.loadbalancers=1, used: services.loadbalancers=0, limited: services.loadbalancers=0"
    ]);
    let np = "apiVersion: v1\nkind: Service\nmetadata: {name: np, namespace: dev}\nspec:\n  type: NodePort\n  ports: [{port: 80}]\n";
    assert_eq!(apply(&mut c, np), vec!["service/np created"]);
    assert_eq!(used(&c, "dev", "objects")["services.nodeports"], "1");
}

#[test]
fn a_dry_run_is_checked_but_not_charged() {
    let mut c = cluster();
    apply(&mut c, "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: dev}\nspec:\n  hard: {pods: \"1\"}\n");
    let body = kubeloop_core::foundation::value::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}});
    let mut req = kubeloop_core::apiserver::Request::create(rid::POD, "dev", body.clone(), admin());
    req.dry_run = true;
    assert!(c.api.handle(req).is_ok());
    assert_eq!(used(&c, "dev", "q")["pods"], "0");
    // The check itself runs: a quota already full refuses the dry run too.
    assert!(c.api.handle(kubeloop_core::apiserver::Request::create(rid::POD, "dev", body.clone(), admin())).is_ok());
    let mut req = kubeloop_core::apiserver::Request::create(rid::POD, "dev", body, admin());
    req.dry_run = true;
    assert_eq!(c.api.handle(req).unwrap_err().code, 403);
}

const LIMITS: &str = "apiVersion: v1
kind: LimitRange
metadata: {name: limits, namespace: dev}
spec:
  limits:
  - type: Container
    min: {cpu: 100m}
    max: {cpu: \"1\", memory: 1Gi}
    defaultRequest: {cpu: 200m, memory: 128Mi}
  - type: PersistentVolumeClaim
    min: {storage: 1Gi}
    max: {storage: 2Gi}
";

#[test]
fn a_limit_range_fills_defaults_and_refuses_what_is_out_of_bounds() {
    let mut c = cluster();
    assert_eq!(apply(&mut c, LIMITS), vec!["limitrange/limits created"]);
    // The Container item's default limit is its max (`SetDefaults_LimitRangeItem`).
    let lr = c.api.store.get_by(rid::LIMITRANGE, "dev", "limits").unwrap();
    assert_eq!(
        get(lr, &["spec", "limits", "0", "default"]).or_else(|| lr["spec"]["limits"][0].get("default")),
        Some(&kubeloop_core::foundation::value::json!({"cpu": "1", "memory": "1Gi"}))
    );
    assert_eq!(apply(&mut c, &pod("defaulted", "{}")), vec!["pod/defaulted created"]);
    let p = c.api.store.get_by(rid::POD, "dev", "defaulted").unwrap();
    assert_eq!(
        p["spec"]["containers"][0]["resources"],
        kubeloop_core::foundation::value::json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "200m", "memory": "128Mi"}})
    );
    assert_eq!(
        p["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container nginx; cpu, memory limit for container nginx"
    );
    let out = apply(&mut c, &pod("small", "{requests: {cpu: 50m}, limits: {memory: 2Gi}}"));
    assert_eq!(out, vec![
        "Error from server (Forbidden): error when creating \"t.yaml\": pods \"small\" is forbidden: [minimum cpu usage per Container is 100m, but request is 50m, maximum memory usage per Container is 1Gi, but limit is 2Gi]"
    ]);
    let out = apply(&mut c, &pod("big", "{limits: {cpu: \"2\"}}"));
    assert_eq!(
        out,
        vec!["Error from server (Forbidden): error when creating \"t.yaml\": pods \"big\" is forbidden: maximum cpu usage per Container is 1, but limit is 2"]
    );
    let claim = |n: &str, size: &str| {
        format!("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: {n}, namespace: dev}}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {{requests: {{storage: {size}}}}}\n")
    };
    let out = apply(&mut c, &claim("huge", "5Gi"));
    assert_eq!(out, vec![
        "Error from server (Forbidden): error when creating \"t.yaml\": persistentvolumeclaims \"huge\" is forbidden: maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi"
    ]);
    let d = kubectl(&mut c, "describe limits limits -n dev");
    assert_eq!(
        d,
        vec![
            "Name:                  limits",
            "Namespace:             dev",
            "Type                   Resource  Min   Max  Default Request  Default Limit  Max Limit/Request Ratio",
            "----                   --------  ---   ---  ---------------  -------------  -----------------------",
            "Container              cpu       100m  1    200m             1              -",
            "Container              memory    -     1Gi  128Mi            1Gi            -",
            "PersistentVolumeClaim  storage   1Gi   2Gi  -                -              -",
        ]
    );
}

#[test]
fn limit_ranges_are_validated_with_upstreams_messages() {
    let mut c = cluster();
    let out = apply(
        &mut c,
        "apiVersion: v1\nkind: LimitRange\nmetadata: {name: bad, namespace: dev}\nspec:\n  limits:\n  - type: Container\n    min: {cpu: \"2\"}\n    max: {cpu: \"1\"}\n",
    );
    assert_eq!(out.len(), 1);
    assert!(out[0].contains("The LimitRange \"bad\" is invalid: "), "{out:?}");
    assert!(out[0].contains("spec.limits[0].min[cpu]: Invalid value: \"2\": min value 2 is greater than max value 1"), "{out:?}");
    let out = apply(&mut c, "apiVersion: v1\nkind: LimitRange\nmetadata: {name: pvc, namespace: dev}\nspec:\n  limits:\n  - type: PersistentVolumeClaim\n");
    assert!(out[0].contains("spec.limits[0].limits: Required value: either minimum or maximum storage value is required, but neither was provided"), "{out:?}");
}
