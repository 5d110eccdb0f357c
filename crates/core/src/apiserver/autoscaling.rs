//! `autoscaling/v1` and `autoscaling/v2` HorizontalPodAutoscalers are two versions of one
//! stored object (`pkg/apis/autoscaling/v1/conversion.go`): objects are stored as v2, and
//! a v1 request is converted at the API boundary. v1 has only `targetCPUUtilizationPercentage`;
//! the other metrics, the current metrics, the conditions and `behavior` ride along in the
//! `autoscaling.alpha.kubernetes.io/...` annotations, written as Go's `encoding/json`
//! writes them (struct field order), so that nothing is lost on a round trip.

use super::*;

const METRIC_SPECS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const METRIC_STATUSES: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
const TOLERANCE_DOWN: &str = "autoscaling.alpha.kubernetes.io/scale-down-tolerance";
const TOLERANCE_UP: &str = "autoscaling.alpha.kubernetes.io/scale-up-tolerance";
const ROUND_TRIP: [&str; 6] = [METRIC_SPECS, METRIC_STATUSES, CONDITIONS, BEHAVIOR, TOLERANCE_DOWN, TOLERANCE_UP];

/// `autoscaling.DefaultCPUUtilization`.
pub const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// A JSON object with its fields in the given order, `None` fields left out (omitempty).
fn ordered(fields: &[(&str, Option<String>)]) -> String {
    let body: Vec<String> = fields.iter().filter_map(|(k, v)| v.as_ref().map(|v| format!("{}:{v}", enc_str(k)))).collect();
    format!("{{{}}}", body.join(","))
}

fn enc_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn enc(v: Option<&Value>) -> Option<String> {
    v.filter(|v| !v.is_null()).map(|v| serde_json::to_string(v).unwrap_or_default())
}

fn s_at(v: &Value, path: &[&str]) -> Option<String> {
    get_str(v, path).map(enc_str)
}

/// A LabelSelector in Go's field order (`matchLabels`, then `matchExpressions`).
fn selector(v: Option<&Value>) -> Option<String> {
    let v = v.filter(|v| v.is_object())?;
    let exprs = v.get("matchExpressions").and_then(Value::as_array).map(|l| {
        let items: Vec<String> =
            l.iter().map(|e| ordered(&[("key", s_at(e, &["key"])), ("operator", s_at(e, &["operator"])), ("values", enc(e.get("values")))])).collect();
        format!("[{}]", items.join(","))
    });
    Some(ordered(&[("matchLabels", enc(v.get("matchLabels"))), ("matchExpressions", exprs)]))
}

fn target_ref(v: Option<&Value>) -> Option<String> {
    let v = v?;
    Some(ordered(&[
        ("kind", Some(s_at(v, &["kind"]).unwrap_or_else(|| enc_str("")))),
        ("name", Some(s_at(v, &["name"]).unwrap_or_else(|| enc_str("")))),
        ("apiVersion", s_at(v, &["apiVersion"])),
    ]))
}

fn zero_quantity(v: Option<String>) -> Option<String> {
    Some(v.unwrap_or_else(|| enc_str("0")))
}

/// `Convert_autoscaling_MetricSpec_To_v1_MetricSpec`, as JSON text.
fn spec_to_v1(m: &Value) -> String {
    let t = |p: &[&str]| get(m, p);
    let ty = get_str(m, &["type"]).unwrap_or("");
    let object = t(&["object"]).map(|o| {
        ordered(&[
            ("target", target_ref(o.get("describedObject"))),
            ("metricName", Some(s_at(o, &["metric", "name"]).unwrap_or_else(|| enc_str("")))),
            ("targetValue", zero_quantity(s_at(o, &["target", "value"]))),
            ("selector", selector(get(o, &["metric", "selector"]))),
            ("averageValue", s_at(o, &["target", "averageValue"])),
        ])
    });
    let pods = t(&["pods"]).map(|p| {
        ordered(&[
            ("metricName", Some(s_at(p, &["metric", "name"]).unwrap_or_else(|| enc_str("")))),
            ("targetAverageValue", zero_quantity(s_at(p, &["target", "averageValue"]))),
            ("selector", selector(get(p, &["metric", "selector"]))),
        ])
    });
    let resource = t(&["resource"]).map(|r| {
        ordered(&[
            ("name", s_at(r, &["name"])),
            ("targetAverageUtilization", enc(get(r, &["target", "averageUtilization"]))),
            ("targetAverageValue", s_at(r, &["target", "averageValue"])),
        ])
    });
    let container = t(&["containerResource"]).map(|r| {
        ordered(&[
            ("name", s_at(r, &["name"])),
            ("targetAverageUtilization", enc(get(r, &["target", "averageUtilization"]))),
            ("targetAverageValue", s_at(r, &["target", "averageValue"])),
            ("container", s_at(r, &["container"])),
        ])
    });
    let external = t(&["external"]).map(|e| {
        ordered(&[
            ("metricName", Some(s_at(e, &["metric", "name"]).unwrap_or_else(|| enc_str("")))),
            ("metricSelector", selector(get(e, &["metric", "selector"]))),
            ("targetValue", s_at(e, &["target", "value"])),
            ("targetAverageValue", s_at(e, &["target", "averageValue"])),
        ])
    });
    ordered(&[
        ("type", Some(enc_str(ty))),
        ("object", object),
        ("pods", pods),
        ("resource", resource),
        ("containerResource", container),
        ("external", external),
    ])
}

/// `Convert_autoscaling_MetricStatus_To_v1_MetricStatus`, as JSON text.
fn status_to_v1(m: &Value) -> String {
    let t = |p: &[&str]| get(m, p);
    let ty = get_str(m, &["type"]).unwrap_or("");
    let object = t(&["object"]).map(|o| {
        ordered(&[
            ("target", target_ref(o.get("describedObject"))),
            ("metricName", Some(s_at(o, &["metric", "name"]).unwrap_or_else(|| enc_str("")))),
            ("currentValue", zero_quantity(s_at(o, &["current", "value"]))),
            ("selector", selector(get(o, &["metric", "selector"]))),
            ("averageValue", s_at(o, &["current", "averageValue"])),
        ])
    });
    let pods = t(&["pods"]).map(|p| {
        ordered(&[
            ("metricName", Some(s_at(p, &["metric", "name"]).unwrap_or_else(|| enc_str("")))),
            ("currentAverageValue", zero_quantity(s_at(p, &["current", "averageValue"]))),
            ("selector", selector(get(p, &["metric", "selector"]))),
        ])
    });
    let resource = t(&["resource"]).map(|r| {
        ordered(&[
            ("name", s_at(r, &["name"])),
            ("currentAverageUtilization", enc(get(r, &["current", "averageUtilization"]))),
            ("currentAverageValue", zero_quantity(s_at(r, &["current", "averageValue"]))),
        ])
    });
    let container = t(&["containerResource"]).map(|r| {
        ordered(&[
            ("name", s_at(r, &["name"])),
            ("currentAverageUtilization", enc(get(r, &["current", "averageUtilization"]))),
            ("currentAverageValue", zero_quantity(s_at(r, &["current", "averageValue"]))),
            ("container", s_at(r, &["container"])),
        ])
    });
    let external = t(&["external"]).map(|e| {
        ordered(&[
            ("metricName", Some(s_at(e, &["metric", "name"]).unwrap_or_else(|| enc_str("")))),
            ("metricSelector", selector(get(e, &["metric", "selector"]))),
            ("currentValue", zero_quantity(s_at(e, &["current", "value"]))),
            ("currentAverageValue", s_at(e, &["current", "averageValue"])),
        ])
    });
    ordered(&[
        ("type", Some(enc_str(ty))),
        ("object", object),
        ("pods", pods),
        ("resource", resource),
        ("containerResource", container),
        ("external", external),
    ])
}

fn condition_to_v1(c: &Value) -> String {
    ordered(&[
        ("type", Some(s_at(c, &["type"]).unwrap_or_else(|| enc_str("")))),
        ("status", Some(s_at(c, &["status"]).unwrap_or_else(|| enc_str("")))),
        ("lastTransitionTime", s_at(c, &["lastTransitionTime"])),
        ("reason", s_at(c, &["reason"])),
        ("message", s_at(c, &["message"])),
    ])
}

/// The internal `HorizontalPodAutoscalerBehavior` marshalled as upstream does: an internal
/// type without JSON tags, so Go's field names, and `null` for unset pointers.
fn behavior_to_json(b: &Value) -> String {
    let rules = |r: Option<&Value>| {
        r.map(|r| {
            let policies = r.get("policies").and_then(Value::as_array).map(|l| {
                let items: Vec<String> = l
                    .iter()
                    .map(|p| ordered(&[("Type", s_at(p, &["type"])), ("Value", enc(p.get("value"))), ("PeriodSeconds", enc(p.get("periodSeconds")))]))
                    .collect();
                format!("[{}]", items.join(","))
            });
            ordered(&[
                ("StabilizationWindowSeconds", Some(enc(r.get("stabilizationWindowSeconds")).unwrap_or_else(|| "null".into()))),
                ("SelectPolicy", Some(s_at(r, &["selectPolicy"]).unwrap_or_else(|| "null".into()))),
                ("Policies", Some(policies.unwrap_or_else(|| "null".into()))),
                ("Tolerance", Some(s_at(r, &["tolerance"]).unwrap_or_else(|| "null".into()))),
            ])
        })
        .unwrap_or_else(|| "null".into())
    };
    ordered(&[("ScaleUp", Some(rules(b.get("scaleUp")))), ("ScaleDown", Some(rules(b.get("scaleDown"))))])
}

fn behavior_from_json(text: &str) -> Option<Value> {
    let v: Value = serde_json::from_str(text).ok()?;
    // Go's decoder matches field names case-insensitively.
    let field = |o: &Value, name: &str| o.as_object().and_then(|m| m.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone()));
    let rules = |r: Option<Value>| -> Option<Value> {
        let r = r.filter(|r| r.is_object())?;
        let mut out = json!({});
        for (go, api) in [("StabilizationWindowSeconds", "stabilizationWindowSeconds"), ("SelectPolicy", "selectPolicy"), ("Tolerance", "tolerance")] {
            if let Some(x) = field(&r, go).filter(|x| !x.is_null()) {
                out[api] = x;
            }
        }
        if let Some(Value::Array(ps)) = field(&r, "Policies") {
            let list: Vec<Value> = ps
                .iter()
                .map(|p| json!({"type": field(p, "Type").unwrap_or(Value::Null), "value": field(p, "Value").unwrap_or(Value::Null), "periodSeconds": field(p, "PeriodSeconds").unwrap_or(Value::Null)}))
                .collect();
            out["policies"] = Value::Array(list);
        }
        Some(out)
    };
    let mut b = json!({});
    if let Some(u) = rules(field(&v, "ScaleUp")) {
        b["scaleUp"] = u;
    }
    if let Some(d) = rules(field(&v, "ScaleDown")) {
        b["scaleDown"] = d;
    }
    (b.as_object().is_some_and(|m| !m.is_empty())).then_some(b)
}

fn is_cpu_utilization(m: &Value) -> bool {
    get_str(m, &["type"]) == Some("Resource")
        && get_str(m, &["resource", "name"]) == Some("cpu")
        && get(m, &["resource", "target", "averageUtilization"]).is_some()
}

fn drop_round_trip(meta: &mut crate::foundation::value::Map) {
    if let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
        for k in ROUND_TRIP {
            a.remove(k);
        }
        if a.is_empty() {
            meta.remove("annotations");
        }
    }
}

/// A stored (v2) HorizontalPodAutoscaler as `autoscaling/v1` shows it.
pub fn hpa_to_v1(v2: &Value) -> Value {
    let mut out = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler"});
    let mut meta = v2.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    drop_round_trip(&mut meta);
    let mut notes: Vec<(&str, String)> = Vec::new();
    let metrics = get_array(v2, &["spec", "metrics"]);
    let mut spec = json!({"scaleTargetRef": get(v2, &["spec", "scaleTargetRef"]).cloned().unwrap_or(json!({})), "maxReplicas": get(v2, &["spec", "maxReplicas"]).cloned().unwrap_or(json!(0))});
    if let Some(m) = get(v2, &["spec", "minReplicas"]) {
        spec["minReplicas"] = m.clone();
    }
    if let Some(cpu) = metrics.iter().find(|m| is_cpu_utilization(m)) {
        spec["targetCPUUtilizationPercentage"] = get(cpu, &["resource", "target", "averageUtilization"]).cloned().unwrap_or(Value::Null);
    }
    let others: Vec<String> = metrics.iter().filter(|m| !is_cpu_utilization(m)).map(spec_to_v1).collect();
    if !others.is_empty() {
        notes.push((METRIC_SPECS, format!("[{}]", others.join(","))));
    }
    let current = get_array(v2, &["status", "currentMetrics"]);
    if !current.is_empty() {
        notes.push((METRIC_STATUSES, format!("[{}]", current.iter().map(status_to_v1).collect::<Vec<_>>().join(","))));
    }
    if let Some(b) = get(v2, &["spec", "behavior"]).filter(|b| !b.is_null()) {
        notes.push((BEHAVIOR, behavior_to_json(b)));
    }
    let conds = get_array(v2, &["status", "conditions"]);
    if !conds.is_empty() {
        notes.push((CONDITIONS, format!("[{}]", conds.iter().map(condition_to_v1).collect::<Vec<_>>().join(","))));
    }
    if !notes.is_empty() {
        let a = meta.entry("annotations".to_string()).or_insert_with(|| json!({}));
        if let Some(a) = a.as_object_mut() {
            for (k, v) in notes {
                a.insert(k.to_string(), json!(v));
            }
        }
    }
    out["metadata"] = Value::Object(meta);
    out["spec"] = spec;
    if let Some(st) = v2.get("status") {
        let mut status = json!({});
        for k in ["observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas"] {
            if let Some(x) = st.get(k) {
                status[k] = x.clone();
            }
        }
        if get(st, &["desiredReplicas"]).is_none() {
            status["desiredReplicas"] = json!(0);
        }
        if let Some(u) = current
            .iter()
            .find(|m| get_str(m, &["type"]) == Some("Resource") && get_str(m, &["resource", "name"]) == Some("cpu"))
            .and_then(|m| get(m, &["resource", "current", "averageUtilization"]))
        {
            status["currentCPUUtilizationPercentage"] = u.clone();
        }
        out["status"] = status;
    }
    out
}

fn spec_from_v1(m: &Value) -> Value {
    let ty = get_str(m, &["type"]).unwrap_or("");
    let mut out = json!({"type": ty});
    let sel = |v: Option<&Value>| v.cloned();
    if let Some(r) = m.get("resource") {
        let util = r.get("targetAverageUtilization").cloned();
        let mut target = json!({"type": if util.is_some() { "Utilization" } else { "AverageValue" }});
        if let Some(u) = util {
            target["averageUtilization"] = u;
        }
        if let Some(a) = r.get("targetAverageValue") {
            target["averageValue"] = a.clone();
        }
        out["resource"] = json!({"name": r.get("name").cloned().unwrap_or(json!("")), "target": target});
    }
    if let Some(r) = m.get("containerResource") {
        let util = r.get("targetAverageUtilization").cloned();
        let mut target = json!({"type": if util.is_some() { "Utilization" } else { "AverageValue" }});
        if let Some(u) = util {
            target["averageUtilization"] = u;
        }
        if let Some(a) = r.get("targetAverageValue") {
            target["averageValue"] = a.clone();
        }
        out["containerResource"] =
            json!({"name": r.get("name").cloned().unwrap_or(json!("")), "container": r.get("container").cloned().unwrap_or(json!("")), "target": target});
    }
    if let Some(p) = m.get("pods") {
        let mut metric = json!({"name": p.get("metricName").cloned().unwrap_or(json!(""))});
        if let Some(s) = sel(p.get("selector")) {
            metric["selector"] = s;
        }
        out["pods"] = json!({"metric": metric, "target": {"type": "AverageValue", "averageValue": p.get("targetAverageValue").cloned().unwrap_or(json!("0"))}});
    }
    if let Some(o) = m.get("object") {
        let mut metric = json!({"name": o.get("metricName").cloned().unwrap_or(json!(""))});
        if let Some(s) = sel(o.get("selector")) {
            metric["selector"] = s;
        }
        let avg = o.get("averageValue").cloned();
        let mut target = json!({"type": if avg.is_none() { "Value" } else { "AverageValue" }, "value": o.get("targetValue").cloned().unwrap_or(json!("0"))});
        if let Some(a) = avg {
            target["averageValue"] = a;
        }
        out["object"] = json!({"describedObject": o.get("target").cloned().unwrap_or(json!({})), "metric": metric, "target": target});
    }
    if let Some(e) = m.get("external") {
        let mut metric = json!({"name": e.get("metricName").cloned().unwrap_or(json!(""))});
        if let Some(s) = sel(e.get("metricSelector")) {
            metric["selector"] = s;
        }
        let value = e.get("targetValue").cloned();
        let mut target = json!({"type": if value.is_none() { "AverageValue" } else { "Value" }});
        if let Some(v) = value {
            target["value"] = v;
        }
        if let Some(a) = e.get("targetAverageValue") {
            target["averageValue"] = a.clone();
        }
        out["external"] = json!({"metric": metric, "target": target});
    }
    out
}

fn status_from_v1(m: &Value) -> Value {
    let ty = get_str(m, &["type"]).unwrap_or("");
    let mut out = json!({"type": ty});
    let current = |util: Option<&Value>, avg: Option<&Value>| {
        let mut c = json!({});
        if let Some(u) = util {
            c["averageUtilization"] = u.clone();
        }
        if let Some(a) = avg {
            c["averageValue"] = a.clone();
        }
        c
    };
    if let Some(r) = m.get("resource") {
        out["resource"] =
            json!({"name": r.get("name").cloned().unwrap_or(json!("")), "current": current(r.get("currentAverageUtilization"), r.get("currentAverageValue"))});
    }
    if let Some(r) = m.get("containerResource") {
        out["containerResource"] = json!({"name": r.get("name").cloned().unwrap_or(json!("")), "container": r.get("container").cloned().unwrap_or(json!("")),
            "current": current(r.get("currentAverageUtilization"), r.get("currentAverageValue"))});
    }
    if let Some(p) = m.get("pods") {
        let mut metric = json!({"name": p.get("metricName").cloned().unwrap_or(json!(""))});
        if let Some(s) = p.get("selector") {
            metric["selector"] = s.clone();
        }
        out["pods"] = json!({"metric": metric, "current": current(None, p.get("currentAverageValue"))});
    }
    if let Some(o) = m.get("object") {
        let mut metric = json!({"name": o.get("metricName").cloned().unwrap_or(json!(""))});
        if let Some(s) = o.get("selector") {
            metric["selector"] = s.clone();
        }
        let mut cur = current(None, o.get("averageValue"));
        cur["value"] = o.get("currentValue").cloned().unwrap_or(json!("0"));
        out["object"] = json!({"describedObject": o.get("target").cloned().unwrap_or(json!({})), "metric": metric, "current": cur});
    }
    if let Some(e) = m.get("external") {
        let mut metric = json!({"name": e.get("metricName").cloned().unwrap_or(json!(""))});
        if let Some(s) = e.get("metricSelector") {
            metric["selector"] = s.clone();
        }
        let mut cur = current(None, e.get("currentAverageValue"));
        cur["value"] = e.get("currentValue").cloned().unwrap_or(json!("0"));
        out["external"] = json!({"metric": metric, "current": cur});
    }
    out
}

/// An `autoscaling/v1` HorizontalPodAutoscaler as it is stored (v2).
pub fn hpa_to_v2(v1: &Value) -> Value {
    let mut out = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler"});
    let mut meta = v1.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    let note = |k: &str| api::annotation(v1, k).map(str::to_string);
    let parse_list =
        |text: Option<String>| -> Option<Vec<Value>> { text.and_then(|t| serde_json::from_str::<Value>(&t).ok()).and_then(|v| v.as_array().cloned()) };
    let mut spec = json!({"scaleTargetRef": get(v1, &["spec", "scaleTargetRef"]).cloned().unwrap_or(json!({}))});
    for k in ["minReplicas", "maxReplicas"] {
        if let Some(x) = get(v1, &["spec", k]) {
            spec[k] = x.clone();
        }
    }
    let mut metrics: Vec<Value> = parse_list(note(METRIC_SPECS)).unwrap_or_default().iter().map(spec_from_v1).collect();
    if let Some(cpu) = get(v1, &["spec", "targetCPUUtilizationPercentage"]).filter(|v| !v.is_null()) {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": cpu.clone()}}}));
    }
    if metrics.is_empty() {
        metrics
            .push(json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}));
    }
    spec["metrics"] = Value::Array(metrics);
    if let Some(b) = note(BEHAVIOR).and_then(|t| behavior_from_json(&t)) {
        spec["behavior"] = b;
    }
    if let Some(st) = v1.get("status") {
        let mut status = json!({});
        for k in ["observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas"] {
            if let Some(x) = st.get(k) {
                status[k] = x.clone();
            }
        }
        if let Some(list) = parse_list(note(METRIC_STATUSES)) {
            status["currentMetrics"] = Value::Array(list.iter().map(status_from_v1).collect());
        } else if let Some(u) = st.get("currentCPUUtilizationPercentage") {
            status["currentMetrics"] = json!([{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": u.clone()}}}]);
        }
        if let Some(list) = parse_list(note(CONDITIONS)) {
            status["conditions"] = Value::Array(list);
        }
        out["status"] = status;
    }
    drop_round_trip(&mut meta);
    out["metadata"] = Value::Object(meta);
    out["spec"] = spec;
    out
}

/// `SetDefaults_HorizontalPodAutoscaler` (`pkg/apis/autoscaling/v2/defaults.go`).
pub fn default_v2(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) else { return };
    if spec.get("minReplicas").is_none_or(Value::is_null) {
        spec["minReplicas"] = json!(1);
    }
    if spec.get("metrics").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        spec["metrics"] =
            json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]);
    }
    if let Some(b) = spec.get_mut("behavior").filter(|b| b.is_object()) {
        let up = json!({"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]});
        let down = json!({"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]});
        for (k, defaults) in [("scaleUp", up), ("scaleDown", down)] {
            let mut rules = defaults;
            if let Some(given) = b.get(k).and_then(Value::as_object) {
                for (f, v) in given {
                    if !v.is_null() {
                        rules[f.as_str()] = v.clone();
                    }
                }
            }
            b[k] = rules;
        }
    }
}

impl ApiServer {
    /// A request for `autoscaling/v1`: its body converted to v2 after strict decoding in
    /// v1 terms, a patch applied to the v1 view of the stored object, the answer converted
    /// back.
    #[inline(never)]
    pub(super) fn handle_hpa_v1(&mut self, mut req: Request) -> Result<Object, Status> {
        let v1 = &RESOURCES[api::rid::HPA_V1];
        let ns = if req.namespace.is_empty() && req.verb != Verb::List {
            req.body.as_ref().map(api::namespace).filter(|n| !n.is_empty()).unwrap_or("default").to_string()
        } else {
            req.namespace.clone()
        };
        let mut warnings = Vec::new();
        match req.verb {
            Verb::Create | Verb::Update => {
                if let Some(body) = req.body.as_mut() {
                    self.decode(v1, body, req.protobuf, req.field_validation)?;
                    warnings = std::mem::take(&mut self.warnings);
                    *body = hpa_to_v2(body);
                }
            }
            Verb::Patch(ty) => {
                if let Some(current) = self.store.get_by(api::rid::HPA, &ns, &req.name).cloned() {
                    let mut view = hpa_to_v1(&current);
                    let body = req.body.take().unwrap_or(Value::Null);
                    match ty {
                        PatchType::Merge => patch::merge(&mut view, &body),
                        PatchType::Strategic => patch::strategic_merge(&mut view, &body),
                        PatchType::Json => patch::json_patch(&mut view, &body).map_err(|e| e.status())?,
                        PatchType::Apply { force } => {
                            view = managed::apply(Some(&view), &body, &req.field_manager, force, &v1.api_version(), v1.kind, &req.subresource, self.now)?;
                        }
                    }
                    api::set(&mut view, &["metadata", "resourceVersion"], json!(api::resource_version(&current)));
                    req.verb = Verb::Update;
                    req.body = Some(hpa_to_v2(&view));
                } else if let Some(body) = req.body.as_mut() {
                    *body = hpa_to_v2(body);
                }
            }
            Verb::Get | Verb::List | Verb::Delete => {}
        }
        req.resource = api::rid::HPA;
        req.protobuf = true;
        let out = self.handle(req);
        self.warnings.splice(0..0, warnings);
        let out = out?;
        if get_str(&out, &["kind"]) == Some("HorizontalPodAutoscalerList") {
            let items: Vec<Value> = get_array(&out, &["items"]).iter().map(hpa_to_v1).collect();
            let mut list = (*out).clone();
            list["apiVersion"] = json!("autoscaling/v1");
            list["items"] = Value::Array(items);
            return Ok(Object::new(list));
        }
        if get_str(&out, &["kind"]) == Some("HorizontalPodAutoscaler") {
            return Ok(Object::new(hpa_to_v1(&out)));
        }
        Ok(out)
    }
}

use crate::foundation::api::get_array;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_cpu_target_round_trips_and_other_metrics_ride_in_annotations() {
        let v2 = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 10,
              "metrics": [{"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
                          {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]},
            "status": {"currentReplicas": 1, "desiredReplicas": 1,
              "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 48, "averageValue": "4m"}}}],
              "conditions": [{"type": "AbleToScale", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "ReadyForNewScale", "message": "m"}]}});
        let v1 = hpa_to_v1(&v2);
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 50);
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 48);
        assert_eq!(api::annotation(&v1, METRIC_SPECS), Some(r#"[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"100Mi"}}]"#));
        assert_eq!(
            api::annotation(&v1, METRIC_STATUSES),
            Some(r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":48,"currentAverageValue":"4m"}}]"#)
        );
        assert_eq!(
            api::annotation(&v1, CONDITIONS),
            Some(r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"ReadyForNewScale","message":"m"}]"#)
        );
        let back = hpa_to_v2(&v1);
        assert_eq!(back["spec"]["metrics"], v2["spec"]["metrics"]);
        assert_eq!(back["status"]["currentMetrics"], v2["status"]["currentMetrics"]);
        assert_eq!(back["status"]["conditions"], v2["status"]["conditions"]);
        assert!(back["metadata"].get("annotations").is_none(), "round-trip annotations are dropped once converted");
    }

    #[test]
    fn a_v1_object_without_a_target_gets_the_default_cpu_target_and_behavior_survives() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "x"},
            "spec": {"scaleTargetRef": {"kind": "ReplicaSet", "name": "frontend"}, "maxReplicas": 3}});
        let v2 = hpa_to_v2(&v1);
        assert_eq!(v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], DEFAULT_CPU_UTILIZATION);
        let mut with_behavior = v2.clone();
        with_behavior["spec"]["behavior"] = json!({"scaleDown": {"stabilizationWindowSeconds": 60}});
        default_v2(&mut with_behavior);
        let v1 = hpa_to_v1(&with_behavior);
        let text = api::annotation(&v1, BEHAVIOR).unwrap();
        assert!(
            text.starts_with(r#"{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":4,"PeriodSeconds":15}"#),
            "{text}"
        );
        assert_eq!(hpa_to_v2(&v1)["spec"]["behavior"], with_behavior["spec"]["behavior"]);
    }
}
