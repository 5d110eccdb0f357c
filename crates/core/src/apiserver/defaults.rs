//! Defaulting, as the API server applies it when it decodes a request
//! (`pkg/apis/core/v1/defaults.go`, `pkg/apis/apps/v1/defaults.go`). Pod templates get the
//! PodSpec and container defaults; Pod-only defaults apply to real Pods.

use crate::foundation::api::{entry, get, get_str};
use crate::foundation::value::{json, Map, Value};

fn default(m: &mut Map, key: &str, v: Value) {
    if !m.contains_key(key) || m[key].is_null() {
        m.insert(key.to_string(), v);
    }
}

/// `Always` for `:latest` or an untagged, undigested image, else `IfNotPresent`.
pub fn image_pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return if tag_of(image.split('@').next().unwrap_or("")) == Some("latest") { "Always" } else { "IfNotPresent" };
    }
    match tag_of(image) {
        None | Some("latest") => "Always",
        Some(_) => "IfNotPresent",
    }
}

/// The tag of an image reference (`nginx:1.25` -> `1.25`; `registry:5000/x` -> none).
pub fn tag_of(image: &str) -> Option<&str> {
    let last = image.rsplit('/').next().unwrap_or(image);
    last.split_once(':').map(|(_, t)| t)
}

fn default_probe(p: &mut Value) {
    if let Some(m) = p.as_object_mut() {
        default(m, "timeoutSeconds", json!(1));
        default(m, "periodSeconds", json!(10));
        default(m, "successThreshold", json!(1));
        default(m, "failureThreshold", json!(3));
        if let Some(h) = m.get_mut("httpGet").and_then(Value::as_object_mut) {
            default(h, "scheme", json!("HTTP"));
            default(h, "path", json!("/"));
        }
    }
}

fn default_container(c: &mut Value, is_pod: bool) {
    let Some(m) = c.as_object_mut() else { return };
    default(m, "terminationMessagePath", json!("/dev/termination-log"));
    default(m, "terminationMessagePolicy", json!("File"));
    if let Some(img) = m.get("image").and_then(Value::as_str).map(str::to_string) {
        default(m, "imagePullPolicy", json!(image_pull_policy(&img)));
    }
    default(m, "resources", json!({}));
    if is_pod {
        // Requests default to limits, per resource.
        if let Some(limits) = m.get("resources").and_then(|r| r.get("limits")).and_then(Value::as_object).cloned() {
            let res = m.get_mut("resources").and_then(Value::as_object_mut);
            if let Some(res) = res {
                let req = res.entry("requests").or_insert_with(|| json!({}));
                if let Some(req) = req.as_object_mut() {
                    for (k, v) in limits {
                        req.entry(k).or_insert(v);
                    }
                }
            }
        }
    }
    if let Some(ports) = m.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports {
            if let Some(pm) = p.as_object_mut() {
                default(pm, "protocol", json!("TCP"));
            }
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = m.get_mut(probe) {
            default_probe(p);
        }
    }
}

/// PodSpec defaults; `is_pod` adds the Pod-only ones.
pub fn default_pod_spec(spec: &mut Value, is_pod: bool) {
    let Some(m) = spec.as_object_mut() else { return };
    default(m, "dnsPolicy", json!("ClusterFirst"));
    default(m, "restartPolicy", json!("Always"));
    default(m, "securityContext", json!({}));
    default(m, "terminationGracePeriodSeconds", json!(30));
    default(m, "schedulerName", json!("default-scheduler"));
    if is_pod {
        default(m, "enableServiceLinks", json!(true));
    }
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        if let Some(cs) = m.get_mut(list).and_then(Value::as_array_mut) {
            for c in cs {
                default_container(c, is_pod);
            }
        }
    }
    if let Some(vols) = m.get_mut("volumes").and_then(Value::as_array_mut) {
        for v in vols {
            let Some(vm) = v.as_object_mut() else { continue };
            for src in ["configMap", "secret"] {
                if let Some(s) = vm.get_mut(src).and_then(Value::as_object_mut) {
                    default(s, "defaultMode", json!(420));
                }
            }
            if let Some(p) = vm.get_mut("projected").and_then(Value::as_object_mut) {
                default(p, "defaultMode", json!(420));
            }
        }
    }
}

/// QoS class from requests and limits (`pkg/apis/core/v1/helper/qos/qos.go`).
pub fn qos_class(spec: &Value) -> &'static str {
    let containers = crate::foundation::api::get_array(spec, &["containers"]);
    let mut any = false;
    let mut guaranteed = true;
    for c in containers {
        let req = get(c, &["resources", "requests"]).and_then(Value::as_object);
        let lim = get(c, &["resources", "limits"]).and_then(Value::as_object);
        for r in ["cpu", "memory"] {
            let rq = req.and_then(|m| m.get(r));
            let lm = lim.and_then(|m| m.get(r));
            if rq.is_some() || lm.is_some() {
                any = true;
            }
            match (rq, lm) {
                (Some(a), Some(b)) if crate::foundation::quantity::value_milli(a) == crate::foundation::quantity::value_milli(b) => {}
                _ => guaranteed = false,
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// Apply the defaults of `kind` to a request body.
pub fn apply(kind: &str, obj: &mut Value) {
    match kind {
        "Pod" => {
            if let Some(spec) = obj.get_mut("spec") {
                default_pod_spec(spec, true);
            }
        }
        // SetDefaults_LimitRangeItem: a Container item's default limit is its max, its
        // default request its default limit, else its min.
        "Deployment" => {
            let spec = entry(obj, &["spec"]);
            default(spec, "replicas", json!(1));
            default(spec, "revisionHistoryLimit", json!(10));
            default(spec, "progressDeadlineSeconds", json!(600));
            default_strategy(spec, "strategy", &[("maxSurge", json!("25%")), ("maxUnavailable", json!("25%"))]);
            template(obj);
        }
        "ReplicaSet" => {
            default(entry(obj, &["spec"]), "replicas", json!(1));
            template(obj);
        }
        "Service" => default_service(obj),
        "Namespace" => {
            let n = crate::foundation::api::name(obj).to_string();
            entry(obj, &["metadata", "labels"]).insert("kubernetes.io/metadata.name", json!(n));
            default(entry(obj, &["spec"]), "finalizers", json!(["kubernetes"]));
            default(entry(obj, &["status"]), "phase", json!("Active"));
        }
        // The typed object's status always holds its (empty) load balancer status, as
        // the API server stores and returns it.
        // The other kinds out of line: crates/split keeps a first visit's download to what
        // it runs.
        _ => apply_more(kind, obj),
    }
}

/// [`apply`] for the kinds the page's example does not create, each kind's defaults a
/// function of its own (moved out of a first visit's download with the others: crates/split).
#[inline(never)]
fn apply_more(kind: &str, obj: &mut Value) {
    match kind {
        "LimitRange" => {
            #[inline(never)]
            fn defaults(obj: &mut Value) {
                if let Some(items) = obj.get_mut("spec").and_then(|s| s.get_mut("limits")).and_then(Value::as_array_mut) {
                    for item in items.iter_mut().filter(|i| get_str(i, &["type"]) == Some("Container")) {
                        let list = |i: &Value, f: &str| i.get(f).and_then(Value::as_object).cloned().unwrap_or_default();
                        let (max, min) = (list(item, "max"), list(item, "min"));
                        let mut default_limit = list(item, "default");
                        for (k, v) in max.iter() {
                            default_limit.entry(k.clone()).or_insert_with(|| v.clone());
                        }
                        let mut default_request = list(item, "defaultRequest");
                        for (k, v) in default_limit.iter().chain(min.iter()) {
                            default_request.entry(k.clone()).or_insert_with(|| v.clone());
                        }
                        if let Some(m) = item.as_object_mut() {
                            for (f, l) in [("default", default_limit), ("defaultRequest", default_request)] {
                                if !l.is_empty() {
                                    m.insert(f.to_string(), Value::Object(l));
                                }
                            }
                        }
                    }
                }
            }
            defaults(obj)
        }
        "ReplicationController" => {
            #[inline(never)]
            fn defaults(obj: &mut Value) {
                // SetDefaults_ReplicationController: the template's labels fill an empty
                // selector and empty object labels.
                let labels = get(obj, &["spec", "template", "metadata", "labels"]).filter(|l| l.as_object().is_some_and(|m| !m.is_empty())).cloned();
                if let Some(labels) = labels {
                    let spec = entry(obj, &["spec"]);
                    if spec.get("selector").and_then(Value::as_object).is_none_or(|m| m.is_empty()) {
                        spec.insert("selector", labels.clone());
                    }
                    let meta = entry(obj, &["metadata"]);
                    if meta.get("labels").and_then(Value::as_object).is_none_or(|m| m.is_empty()) {
                        meta.insert("labels", labels);
                    }
                }
                default(entry(obj, &["spec"]), "replicas", json!(1));
                template(obj);
            }
            defaults(obj)
        }
        "DaemonSet" => {
            #[inline(never)]
            fn defaults(obj: &mut Value) {
                let spec = entry(obj, &["spec"]);
                default(spec, "revisionHistoryLimit", json!(10));
                default_strategy(spec, "updateStrategy", &[("maxUnavailable", json!(1)), ("maxSurge", json!(0))]);
                template(obj);
            }
            defaults(obj)
        }
        "StatefulSet" => {
            #[inline(never)]
            fn defaults(obj: &mut Value) {
                let spec = entry(obj, &["spec"]);
                default(spec, "replicas", json!(1));
                default(spec, "podManagementPolicy", json!("OrderedReady"));
                default(spec, "revisionHistoryLimit", json!(10));
                default(spec, "persistentVolumeClaimRetentionPolicy", json!({"whenDeleted": "Retain", "whenScaled": "Retain"}));
                default_strategy(spec, "updateStrategy", &[("partition", json!(0))]);
                // The generated defaulter runs SetDefaults_PersistentVolumeClaim(Spec) on each
                // volumeClaimTemplate.
                if let Some(ts) = obj.get_mut("spec").and_then(|s| s.get_mut("volumeClaimTemplates")).and_then(Value::as_array_mut) {
                    for t in ts.iter_mut().filter(|t| t.is_object()) {
                        default(entry(t, &["spec"]), "volumeMode", json!("Filesystem"));
                        default(entry(t, &["status"]), "phase", json!("Pending"));
                    }
                }
                template(obj);
            }
            defaults(obj)
        }
        // `SetDefaults_Job` (pkg/apis/batch/v1/defaults.go).
        "Job" => {
            #[inline(never)]
            fn defaults(obj: &mut Value) {
                let spec = entry(obj, &["spec"]);
                let unset = |m: &Map, k: &str| m.get(k).is_none_or(Value::is_null);
                if unset(spec, "completions") && unset(spec, "parallelism") {
                    spec.insert("completions", json!(1));
                }
                default(spec, "parallelism", json!(1));
                let per_index = !unset(spec, "backoffLimitPerIndex");
                default(spec, "backoffLimit", json!(if per_index { i64::from(i32::MAX) } else { 6 }));
                default(spec, "completionMode", json!("NonIndexed"));
                default(spec, "suspend", json!(false));
                let has_pfp = !unset(spec, "podFailurePolicy");
                if let Some(rules) = spec.get_mut("podFailurePolicy").and_then(|p| p.get_mut("rules")).and_then(Value::as_array_mut) {
                    for rule in rules {
                        if let Some(patterns) = rule.get_mut("onPodConditions").and_then(Value::as_array_mut) {
                            for p in patterns.iter_mut().filter_map(Value::as_object_mut) {
                                if p.get("status").and_then(Value::as_str).unwrap_or("").is_empty() {
                                    p.insert("status", json!("True"));
                                }
                            }
                        }
                    }
                }
                default(spec, "podReplacementPolicy", json!(if has_pfp { "Failed" } else { "TerminatingOrFailed" }));
                default(spec, "manualSelector", json!(false));
                template(obj);
            }
            defaults(obj)
        }
        // `SetDefaults_CronJob`; the Job template's pod spec gets the pod defaults.
        "CronJob" => {
            #[inline(never)]
            fn defaults(obj: &mut Value) {
                let spec = entry(obj, &["spec"]);
                if spec.get("concurrencyPolicy").and_then(Value::as_str).unwrap_or("").is_empty() {
                    spec.insert("concurrencyPolicy", json!("Allow"));
                }
                default(spec, "suspend", json!(false));
                default(spec, "successfulJobsHistoryLimit", json!(3));
                default(spec, "failedJobsHistoryLimit", json!(1));
                if let Some(pod) = obj
                    .get_mut("spec")
                    .and_then(|s| s.get_mut("jobTemplate"))
                    .and_then(|t| t.get_mut("spec"))
                    .and_then(|s| s.get_mut("template"))
                    .and_then(|t| t.get_mut("spec"))
                {
                    default_pod_spec(pod, false);
                }
            }
            defaults(obj)
        }
        "HorizontalPodAutoscaler" => crate::apiserver::autoscaling::default_v2(obj),
        "Ingress" => {
            #[inline(never)]
            fn defaults(obj: &mut Value) {
                default(entry(obj, &["status"]), "loadBalancer", json!({}));
            }
            defaults(obj)
        }
        "Secret" => {
            #[inline(never)]
            fn defaults(obj: &mut Value) {
                if let Some(m) = obj.as_object_mut() {
                    default(m, "type", json!("Opaque"));
                }
            }
            defaults(obj)
        }
        "PersistentVolumeClaim" => {
            #[inline(never)]
            fn defaults(obj: &mut Value) {
                default(entry(obj, &["spec"]), "volumeMode", json!("Filesystem"));
                default(entry(obj, &["status"]), "phase", json!("Pending"));
            }
            defaults(obj)
        }
        // `SetDefaults_PersistentVolume`.
        "PersistentVolume" => {
            #[inline(never)]
            fn defaults(obj: &mut Value) {
                default(entry(obj, &["status"]), "phase", json!("Pending"));
                let spec = entry(obj, &["spec"]);
                if spec.get("persistentVolumeReclaimPolicy").and_then(Value::as_str).unwrap_or("").is_empty() {
                    spec.insert("persistentVolumeReclaimPolicy", json!("Retain"));
                }
                default(spec, "volumeMode", json!("Filesystem"));
            }
            defaults(obj)
        }
        // `SetDefaults_StorageClass` (pkg/apis/storage/v1/defaults.go).
        "StorageClass" => {
            #[inline(never)]
            fn defaults(obj: &mut Value) {
                if let Some(m) = obj.as_object_mut() {
                    default(m, "reclaimPolicy", json!("Delete"));
                    default(m, "volumeBindingMode", json!("Immediate"));
                }
            }
            defaults(obj)
        }
        // `SetDefaults_CSIDriver`.
        "CSIDriver" => {
            #[inline(never)]
            fn defaults(obj: &mut Value) {
                let spec = entry(obj, &["spec"]);
                default(spec, "attachRequired", json!(true));
                default(spec, "podInfoOnMount", json!(false));
                default(spec, "storageCapacity", json!(false));
                default(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
                if spec.get("volumeLifecycleModes").and_then(Value::as_array).is_none_or(|a| a.is_empty()) {
                    spec.insert("volumeLifecycleModes", json!(["Persistent"]));
                }
                default(spec, "requiresRepublish", json!(false));
                default(spec, "seLinuxMount", json!(false));
            }
            defaults(obj)
        }
        _ => {}
    }
}

/// `<field>: {type: RollingUpdate, rollingUpdate: {...}}`, the workload kinds' update
/// strategy defaults; other strategy types get no rollingUpdate block.
fn default_strategy(spec: &mut Map, field: &str, rolling: &[(&str, Value)]) {
    let st = spec.entry(field).or_insert_with(|| json!({}));
    let Some(s) = st.as_object_mut() else { return };
    default(s, "type", json!("RollingUpdate"));
    if s.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
        let ru = s.entry("rollingUpdate").or_insert_with(|| json!({}));
        if let Some(ru) = ru.as_object_mut() {
            for (k, v) in rolling {
                default(ru, k, v.clone());
            }
        }
    }
}

fn template(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").and_then(|s| s.get_mut("template")).and_then(|t| t.get_mut("spec")) {
        default_pod_spec(spec, false);
    }
}

fn default_service(obj: &mut Value) {
    let spec = entry(obj, &["spec"]);
    default(spec, "type", json!("ClusterIP"));
    default(spec, "sessionAffinity", json!("None"));
    let ty = spec.get("type").and_then(Value::as_str).unwrap_or("ClusterIP").to_string();
    if ty != "ExternalName" {
        default(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if ty == "NodePort" || ty == "LoadBalancer" {
        default(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        default(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports {
            if let Some(pm) = p.as_object_mut() {
                default(pm, "protocol", json!("TCP"));
                let port = pm.get("port").cloned().unwrap_or(Value::Null);
                let tp_missing = match pm.get("targetPort") {
                    None | Some(Value::Null) => true,
                    Some(Value::Number(n)) => n.as_i64() == Some(0),
                    Some(Value::String(s)) => s.is_empty(),
                    _ => false,
                };
                if tp_missing {
                    pm.insert("targetPort", port);
                }
            }
        }
    }
    if get_str(obj, &["spec", "sessionAffinity"]) == Some("ClientIP") {
        let sac = entry(obj, &["spec", "sessionAffinityConfig", "clientIP"]);
        default(sac, "timeoutSeconds", json!(10800));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_policy_follows_the_tag() {
        assert_eq!(image_pull_policy("nginx"), "Always");
        assert_eq!(image_pull_policy("nginx:latest"), "Always");
        assert_eq!(image_pull_policy("nginx:1.25"), "IfNotPresent");
        assert_eq!(image_pull_policy("nginx@sha256:abc"), "IfNotPresent");
        assert_eq!(image_pull_policy("localhost:5000/app"), "Always");
        assert_eq!(image_pull_policy("registry.example/checkout:1.4.2"), "IfNotPresent");
    }

    #[test]
    fn deployment_defaults_match_the_api() {
        let mut d = json!({"kind": "Deployment", "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}]}}}});
        apply("Deployment", &mut d);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["strategy"], json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}));
        assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
        let c = &d["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
        assert_eq!(c["ports"][0]["protocol"], "TCP");
        assert_eq!(c["resources"], json!({}));
        assert!(d["spec"]["template"]["spec"].get("enableServiceLinks").is_none());
    }

    #[test]
    fn recreate_has_no_rolling_update_block() {
        let mut d = json!({"spec": {"strategy": {"type": "Recreate"}}});
        apply("Deployment", &mut d);
        assert!(d["spec"]["strategy"].get("rollingUpdate").is_none());
    }

    #[test]
    fn service_target_port_defaults_to_port() {
        let mut s = json!({"spec": {"ports": [{"port": 80}]}});
        apply("Service", &mut s);
        assert_eq!(s["spec"]["ports"][0], json!({"port": 80, "protocol": "TCP", "targetPort": 80}));
        assert_eq!(s["spec"]["type"], "ClusterIP");
    }

    #[test]
    fn qos_classes() {
        assert_eq!(qos_class(&json!({"containers": [{"name": "a"}]})), "BestEffort");
        assert_eq!(
            qos_class(&json!({"containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]})),
            "Guaranteed"
        );
        assert_eq!(qos_class(&json!({"containers": [{"resources": {"requests": {"cpu": "1"}}}]})), "Burstable");
    }
}
