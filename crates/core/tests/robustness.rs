//! Nothing a user writes may crash the engine: random manifests of every served kind, and
//! random edits of real ones, are applied and the loops run over whatever was accepted.

// Tests build their fixtures in memory; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::Credentials;
use kubeloop_core::cluster::{Action, Cluster, Config};
use kubeloop_core::foundation::api::RESOURCES;
use kubeloop_core::foundation::value::{json, Value};
use proptest::prelude::*;

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..5).prop_map(|n| json!(n)),
        prop_oneof![Just("web"), Just(""), Just("nginx:1.27"), Just("25%"), Just("100m"), Just("Always"), Just("RollingUpdate"), Just("a b"), Just("-x-")]
            .prop_map(|s| json!(s)),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("spec".to_string()),
                    Just("replicas".to_string()),
                    Just("selector".to_string()),
                    Just("matchLabels".to_string()),
                    Just("template".to_string()),
                    Just("metadata".to_string()),
                    Just("labels".to_string()),
                    Just("containers".to_string()),
                    Just("name".to_string()),
                    Just("image".to_string()),
                    Just("ports".to_string()),
                    Just("strategy".to_string()),
                    Just("status".to_string()),
                    Just("ownerReferences".to_string()),
                    Just("finalizers".to_string()),
                    Just("x".to_string()),
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn manifest() -> impl Strategy<Value = Value> {
    (0..RESOURCES.len(), value(), value(), prop_oneof![Just("web"), Just("Web!"), Just("")]).prop_map(|(r, spec, meta, name)| {
        let res = &RESOURCES[r];
        let mut m = json!({"apiVersion": res.api_version(), "kind": res.kind, "metadata": {"name": name}, "spec": spec});
        if let Value::Object(extra) = meta {
            for (k, v) in extra {
                m["metadata"][k] = v;
            }
        }
        m
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn random_manifests_never_crash_the_cluster(docs in proptest::collection::vec(manifest(), 1..6)) {
        let mut c = Cluster::new(Config { trace: false, ..Config::default() });
        let text: Vec<String> = docs.iter().map(kubeloop_core::kubectl::goyaml::to_yaml).collect();
        let out = c.act(Credentials::Token("admin-token".into()), Action::Apply { text: text.join("---\n"), file: "fuzz.yaml".into() });
        prop_assert_eq!(out.output.len(), docs.len());
        c.run_until(60_000);
    }

    #[test]
    fn broken_yaml_is_reported_not_fatal(text in "[a-z:{}\\[\\]\\- \\n\"']{0,200}") {
        let mut c = Cluster::new(Config { trace: false, ..Config::default() });
        c.act(Credentials::Token("admin-token".into()), Action::Apply { text, file: "junk.yaml".into() });
        c.run_until(5_000);
    }
}

fn odd_workload() -> impl Strategy<Value = Value> {
    (
        (-2i64..6, 0usize..5, 0usize..3, 0usize..3),
        (0usize..5, 0usize..5, 0usize..4, -1i64..70_000),
        (0usize..3, any::<bool>(), 0usize..4),
    )
        .prop_map(|((replicas, image, sel, tmpl), (surge, unavail, cpu, port), (kind, node_selector, name))| {
            let images = ["nginx:1.27", "", "registry.example/x:1", "UPPER", "busybox"];
            let labels = [json!({"app": "a"}), json!({"app": "b"}), json!({})];
            let pct = [json!("25%"), json!(0), json!("0%"), json!("200%"), json!(3)];
            let cpus = ["100m", "0", "1000", "-1"];
            let names = ["a", "b", "c", "a"];
            let mut container = json!({"name": "c", "image": images[image], "resources": {"requests": {"cpu": cpus[cpu]}}, "ports": [{"containerPort": port, "hostPort": port}]});
            if image == 4 {
                container["command"] = json!(["sleep", "3600"]);
            }
            let mut pod_spec = json!({"containers": [container]});
            if node_selector {
                pod_spec["nodeSelector"] = json!({"topology.kubernetes.io/zone": "zone-b"});
            }
            let template = json!({"metadata": {"labels": labels[tmpl].clone()}, "spec": pod_spec.clone()});
            match kind {
                0 => json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": names[name]},
                    "spec": {"replicas": replicas, "selector": {"matchLabels": labels[sel].clone()}, "template": template,
                        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": pct[surge].clone(), "maxUnavailable": pct[unavail].clone()}}}}),
                1 => json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": names[name]},
                    "spec": {"replicas": replicas, "selector": {"matchLabels": labels[sel].clone()}, "template": template}}),
                _ => json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": names[name]},
                    "spec": {"selector": labels[sel].clone(), "ports": [{"port": port.clamp(1, 65535), "targetPort": port}]}}),
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn odd_but_well_typed_workloads_never_crash_the_loops(docs in proptest::collection::vec(odd_workload(), 1..5), scale in 0i64..4) {
        let mut c = Cluster::new(Config { trace: false, ..Config::default() });
        let text: Vec<String> = docs.iter().map(kubeloop_core::kubectl::goyaml::to_yaml).collect();
        let out = c.act(Credentials::Token("admin-token".into()), Action::Apply { text: text.join("---\n"), file: "odd.yaml".into() });
        prop_assert_eq!(out.output.len(), docs.len());
        c.run_until(30_000);
        c.act(Credentials::Token("admin-token".into()), Action::Kubectl(format!("scale deployment a --replicas={scale}")));
        c.act(Credentials::Token("admin-token".into()), Action::Fault(kubeloop_core::cluster::Fault::NodeDown("node-a".into())));
        c.run_until(120_000);
        c.act(Credentials::Token("admin-token".into()), Action::Kubectl("delete rs b --cascade=foreground".into()));
        c.run_until(200_000);
    }
}
