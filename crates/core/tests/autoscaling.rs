//! The HorizontalPodAutoscaler walkthrough of the Kubernetes docs, metrics-server and
//! `kubectl top`, and the autoscaling/v1 corpus example, each run on a whole cluster.

// Tests build their fixtures in memory; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::trace::Flow;
use kubeloop_core::apiserver::{Credentials, Request, Verb};
use kubeloop_core::cluster::{Action, Cluster, Config};
use kubeloop_core::foundation::api::{self, get_array, get_i64, get_str, rid};

fn admin() -> Credentials {
    Credentials::Token("admin-token".into())
}

fn apply(c: &mut Cluster, text: &str) -> Vec<String> {
    c.act(admin(), Action::Apply { text: text.into(), file: "test.yaml".into() }).output
}

fn kubectl(c: &mut Cluster, line: &str) -> Vec<String> {
    c.act(admin(), Action::Kubectl(line.into())).output
}

const PHP_APACHE: &str = include_str!("../../../tests/corpus/kubernetes-website-examples/application/php-apache.yaml");

const LOAD_GENERATOR: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: load-generator\nspec:\n  restartPolicy: Never\n  containers:\n  - name: load-generator\n    image: busybox:1.28\n    command: [\"/bin/sh\", \"-c\", \"while sleep 0.01; do wget -q -O- http://php-apache; done\"]\n";

fn replicas(c: &Cluster) -> i64 {
    c.api.store.get_by(rid::DEPLOYMENT, "default", "php-apache").and_then(|d| get_i64(d, &["spec", "replicas"])).unwrap_or(-1)
}

fn hpa(c: &Cluster) -> kubeloop_core::foundation::api::Object {
    c.api.store.get_by(rid::HPA, "default", "php-apache").cloned().expect("the HPA exists")
}

fn condition<'a>(h: &'a kubeloop_core::foundation::value::Value, ty: &str) -> (&'a str, &'a str) {
    let c = get_array(h, &["status", "conditions"]).iter().find(|c| get_str(c, &["type"]) == Some(ty)).expect("condition");
    (get_str(c, &["status"]).unwrap_or(""), get_str(c, &["reason"]).unwrap_or(""))
}

fn events(c: &Cluster, reason: &str) -> Vec<String> {
    c.api
        .store
        .list(rid::EVENT, Some("default"))
        .filter(|e| get_str(e, &["reason"]) == Some(reason))
        .map(|e| get_str(e, &["message"]).unwrap_or("").to_string())
        .collect()
}

#[test]
fn the_php_apache_walkthrough_scales_up_under_load_and_down_after_the_stabilization_window() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, PHP_APACHE);
    c.run_until(20_000);
    assert_eq!(
        kubectl(&mut c, "autoscale deployment php-apache --cpu-percent=50 --min=1 --max=10"),
        vec!["horizontalpodautoscaler.autoscaling/php-apache autoscaled"]
    );
    c.run_until(60_000);
    // Idle: 0% of the request, one replica.
    let h = hpa(&c);
    assert_eq!(get_i64(&h, &["status", "currentMetrics", "0", "resource", "current", "averageUtilization"]), None, "the list index is not a key");
    assert_eq!(get_array(&h, &["status", "currentMetrics"])[0]["resource"]["current"]["averageUtilization"], 0);
    assert_eq!(condition(&h, "ScalingActive"), ("True", "ValidMetricFound"));
    assert_eq!(
        kubectl(&mut c, "get hpa")[1].split_whitespace().collect::<Vec<_>>()[..7],
        ["php-apache", "Deployment/php-apache", "cpu:", "0%/50%", "1", "10", "1"]
    );
    assert_eq!(replicas(&c), 1);

    apply(&mut c, LOAD_GENERATOR);
    c.run_until(240_000);
    let up = replicas(&c);
    assert!((5..=8).contains(&up), "700m of demand against 200m requests at 50%: about 7 replicas, got {up}");
    let rescales = events(&c, "SuccessfulRescale");
    assert_eq!(rescales[0], "New size: 4; reason: cpu resource utilization (percentage of request) above target");
    let first =
        c.api.trace.records().iter().find(|r| r.stage == "hpa" && r.message.contains("scaling Deployment/php-apache from 1 to 4")).expect("a decision record");
    assert_eq!(first.flow, Flow::DeploymentController);
    // The first window after the load began was partly idle; the pod is capped at its 500m limit.
    let (head, tail) = first.message.split_once("% of request").expect("a utilization");
    let seen: i64 = head.trim_start_matches("HorizontalPodAutoscaler/default/php-apache: cpu ").parse().expect(head);
    assert!((200..=250).contains(&seen), "{}", first.message);
    assert!(tail.starts_with(" (target 50%) over 1 pod: desired 5 (capped at 4 by the scale-up limit)"), "{}", first.message);
    // kubectl top sees the load spread over the replicas.
    let top = kubectl(&mut c, "top pods");
    assert_eq!(top[0].split_whitespace().collect::<Vec<_>>(), ["NAME", "CPU(cores)", "MEMORY(bytes)"]);
    let php: Vec<i64> =
        top.iter().filter(|l| l.starts_with("php-apache-")).map(|l| l.split_whitespace().nth(1).unwrap().trim_end_matches('m').parse().unwrap()).collect();
    assert!(php.len() >= 4 && php.iter().sum::<i64>() >= 600, "{top:?}");

    // The load stops: utilization falls at once, replicas only after five minutes.
    c.request(Request::new(Verb::Delete, rid::POD, "default", "load-generator", admin())).unwrap();
    c.run_until(330_000);
    assert_eq!(replicas(&c), up, "the scale-down stabilization window holds the count");
    assert_eq!(condition(&hpa(&c), "AbleToScale"), ("True", "ScaleDownStabilized"));
    c.run_until(900_000);
    assert_eq!(replicas(&c), 1);
    assert!(events(&c, "SuccessfulRescale").iter().any(|m| m == "New size: 1; reason: All metrics below target"));
    assert_eq!(kubectl(&mut c, "get hpa")[1].split_whitespace().nth(3), Some("0%/50%"));
}

#[test]
fn without_cpu_requests_the_hpa_reports_why_it_cannot_compute_a_count() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, include_str!("../../../tests/corpus/kubernetes-website-examples/controllers/frontend.yaml"));
    let out = apply(&mut c, include_str!("../../../tests/corpus/kubernetes-website-examples/controllers/hpa-rs.yaml"));
    assert_eq!(out, vec!["horizontalpodautoscaler.autoscaling/frontend-scaler created"]);
    // Created as v1, stored once, visible as v2 with the CPU target as a metric.
    let v2 = c.request(Request::new(Verb::Get, rid::HPA, "default", "frontend-scaler", admin())).unwrap();
    assert_eq!(v2["apiVersion"], "autoscaling/v2");
    assert_eq!(v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 50);
    c.run_until(120_000);
    let v1 = c.request(Request::new(Verb::Get, rid::HPA_V1, "default", "frontend-scaler", admin())).unwrap();
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 50);
    assert_eq!(v1["status"]["currentReplicas"], 3);
    let conds = api::annotation(&v1, "autoscaling.alpha.kubernetes.io/conditions").expect("conditions ride in an annotation");
    assert!(conds.contains(r#""type":"ScalingActive","status":"False""#), "{conds}");
    let h = c.api.store.get_by(rid::HPA, "default", "frontend-scaler").unwrap().clone();
    let active = get_array(&h, &["status", "conditions"]).iter().find(|c| get_str(c, &["type"]) == Some("ScalingActive")).unwrap().clone();
    assert_eq!(active["reason"], "FailedGetResourceMetric");
    let msg = get_str(&active, &["message"]).unwrap();
    assert!(
        msg.starts_with(
            "the HPA was unable to compute the replica count: failed to get cpu utilization: missing request for cpu in container php-redis of Pod frontend-"
        ),
        "{msg}"
    );
    let failed = events(&c, "FailedComputeMetricsReplicas");
    // Before metrics-server's second scrape there are no metrics at all.
    assert!(failed.iter().any(|m| m == "invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API"), "{failed:?}");
    assert!(events(&c, "FailedGetResourceMetric")
        .iter()
        .any(|m| m == "failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API"));
    assert!(failed.iter().any(|m| m.starts_with("invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: failed to get cpu utilization: missing request for cpu in container php-redis of Pod frontend-")), "{failed:?}");
    // A v1 update changes the one stored object.
    let mut body = (*v1).clone();
    body["spec"]["maxReplicas"] = 4.into();
    c.request(Request::update(rid::HPA_V1, "default", "frontend-scaler", body, admin())).unwrap();
    assert_eq!(c.api.store.get_by(rid::HPA, "default", "frontend-scaler").unwrap()["spec"]["maxReplicas"], 4);
    assert_eq!(c.api.store.count(rid::HPA_V1), 0, "nothing is stored under v1");
}

#[test]
fn before_two_scrapes_top_says_metrics_are_not_available_and_then_prints_them() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: busy\nspec:\n  containers:\n  - name: busy\n    image: busybox:1.36\n    command: [sh, -c, 'while true; do :; done']\n    resources: {limits: {cpu: 300m}}\n");
    assert_eq!(kubectl(&mut c, "top pods"), vec!["error: metrics not available yet"]);
    assert_eq!(kubectl(&mut c, "top nodes"), vec!["error: metrics not available yet"]);
    c.run_until(60_000);
    // A busy loop uses what its CPU limit lets it.
    assert_eq!(kubectl(&mut c, "top pods"), vec!["NAME   CPU(cores)   MEMORY(bytes)", "busy   300m         1Mi"]);
    let nodes = kubectl(&mut c, "top nodes");
    assert_eq!(nodes[0], "NAME            CPU(cores)   CPU(%)   MEMORY(bytes)   MEMORY(%)");
    let node = c.api.store.get_by(rid::POD, "default", "busy").and_then(|p| get_str(p, &["spec", "nodeName"]).map(str::to_string)).unwrap();
    let row = nodes.iter().find(|l| l.starts_with(&node)).unwrap().split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(row[1..3], ["325m".to_string(), "8%".to_string()], "the pod and the node's own 25m, of 4 cores");
    assert_eq!(kubectl(&mut c, "top pod nope"), vec!["Error from server (NotFound): podmetrics.metrics.k8s.io \"default/nope\" not found"]);
    // Read-only, served from scrapes, never stored.
    let e = c.request(Request::create(rid::PODMETRICS, "default", kubeloop_core::foundation::value::json!({}), admin())).unwrap_err();
    assert_eq!(e.code, 405);
    assert_eq!(c.api.store.count(rid::PODMETRICS), 0);
}

#[test]
fn a_scenario_load_steps_up_at_its_time_and_top_shows_it() {
    let mut sc = kubeloop_core::cluster::scenario::Scenario::default();
    kubeloop_core::cluster::scenario::add_file(
        &mut sc,
        "s.yaml",
        "apiVersion: kubeloop.dev/v1alpha1\nkind: Scenario\nspec:\n  images: [{name: registry.example/api:1, cpu: {from: 100m, to: 900m, at: 60s}, memory: 64Mi}]\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: api}\nspec:\n  containers: [{name: api, image: registry.example/api:1}]\n",
    );
    assert!(sc.errors.is_empty(), "{:?}", sc.errors);
    let mut c = Cluster::new(sc.config(None, true));
    c.add_steps(sc.steps.clone());
    c.run_until(50_000);
    assert_eq!(kubectl(&mut c, "top pod api")[1].split_whitespace().collect::<Vec<_>>(), ["api", "100m", "64Mi"]);
    c.run_until(100_000);
    assert_eq!(kubectl(&mut c, "top pod api")[1].split_whitespace().collect::<Vec<_>>(), ["api", "900m", "64Mi"]);
}

#[test]
fn describe_hpa_prints_the_walkthrough_hpa_as_kubectl_does() {
    let mut c = Cluster::new(Config::default());
    apply(&mut c, PHP_APACHE);
    c.run_until(20_000);
    kubectl(&mut c, "autoscale deployment php-apache --cpu-percent=50 --min=1 --max=10");
    apply(&mut c, LOAD_GENERATOR);
    c.run_until(120_000);
    let out = kubectl(&mut c, "describe hpa php-apache");
    assert_eq!(kubectl(&mut c, "describe horizontalpodautoscaler php-apache"), out);
    assert_eq!(kubectl(&mut c, "describe hpa/php-apache"), out);
    // What the describer prints comes from the stored status, whatever the load made of it.
    let h = hpa(&c);
    let current = &get_array(&h, &["status", "currentMetrics"])[0]["resource"]["current"];
    let (utilization, average) = (current["averageUtilization"].as_i64().unwrap(), current["averageValue"].as_str().unwrap().to_string());
    assert!(utilization > 50, "the load is on: {utilization}%");
    let (now, want) = (get_i64(&h, &["status", "currentReplicas"]).unwrap(), get_i64(&h, &["status", "desiredReplicas"]).unwrap());
    assert!(now >= 4, "scaled up: {now}");
    // The first eleven lines share one column block, as wide as the metric line.
    let head = [
        "Name:".to_string(),
        "Namespace:".into(),
        "Labels:".into(),
        "Annotations:".into(),
        "CreationTimestamp:".into(),
        "Reference:".into(),
        "Metrics:".into(),
        "  resource cpu on pods  (as a percentage of request):".into(),
        "Min replicas:".into(),
        "Max replicas:".into(),
        "Deployment pods:".into(),
    ];
    let values = [
        "php-apache".to_string(),
        "default".into(),
        "<none>".into(),
        "<none>".into(),
        "Thu, 01 Jan 2026 00:00:20 +0000".into(),
        "Deployment/php-apache".into(),
        "( current / target )".into(),
        format!("{utilization}% ({average}) / 50%"),
        "1".into(),
        "10".into(),
        format!("{now} current / {want} desired"),
    ];
    let expected: Vec<String> = head.iter().zip(&values).map(|(k, v)| format!("{k:<55}{v}")).collect();
    assert_eq!(out[..11], expected[..], "{out:#?}");
    assert_eq!(
        out[11..17],
        [
            "Conditions:",
            "  Type            Status  Reason              Message",
            "  ----            ------  ------              -------",
            "  AbleToScale     True    ReadyForNewScale    recommended size matches current size",
            "  ScalingActive   True    ValidMetricFound    the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)",
            "  ScalingLimited  False   DesiredWithinRange  the desired count is within the acceptable range",
        ],
        "{out:#?}"
    );
    assert_eq!(out[17], "Events:");
    assert_eq!(out[18].split_whitespace().collect::<Vec<_>>(), ["Type", "Reason", "Age", "From", "Message"]);
    // Each rescale the controller recorded is a row, oldest first, from the HPA controller.
    let rows: Vec<String> = out[20..]
        .iter()
        .filter(|l| l.starts_with("  Normal   SuccessfulRescale "))
        .map(|l| l.split_once("horizontal-pod-autoscaler  ").expect(l).1.to_string())
        .collect();
    assert_eq!(rows, events(&c, "SuccessfulRescale"));
    assert!(rows.len() >= 2 && rows.last().unwrap().starts_with(&format!("New size: {now}; ")), "{rows:?}");
}
