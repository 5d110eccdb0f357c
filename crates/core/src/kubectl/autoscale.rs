//! `kubectl autoscale (TYPE NAME | TYPE/NAME) [--min=MINPODS] --max=MAXPODS [--cpu-percent=CPU]`
//! (`k8s.io/kubectl/pkg/cmd/autoscale/autoscale.go`): an `autoscaling/v2`
//! HorizontalPodAutoscaler for a Deployment, ReplicaSet, StatefulSet or
//! ReplicationController.

use super::*;

/// `parseResourceInput`: `70%` is a utilization, `500m` (CPU) or `200Mi` (memory) a value,
/// a bare number is millicores or MiB.
fn target(input: &str, resource: &str) -> Result<Value, String> {
    let digits: String = input.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    let unit = &input[digits.len()..];
    if digits.is_empty() || !unit.chars().all(|c| c.is_ascii_alphabetic() || c == '%') {
        return Err("invalid input format".into());
    }
    let value: i64 = digits.split('.').next().unwrap_or("").parse().map_err(|e: std::num::ParseIntError| e.to_string())?;
    Ok(match unit {
        "%" => json!({"type": "Utilization", "averageUtilization": value}),
        "m" if resource == "cpu" => json!({"type": "Value", "value": input}),
        "M" | "Mi" | "Gi" | "Ki" => json!({"type": "Value", "value": input}),
        _ if resource == "cpu" => json!({"type": "Value", "value": format!("{value}m")}),
        _ => json!({"type": "Value", "value": format!("{value}Mi")}),
    })
}

pub(super) fn autoscale(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let int = |k: &str| {
        f.get(k)
            .map(|v| v.parse::<i64>().map_err(|_| format!("error: invalid argument {v:?} for \"{k}\" flag: strconv.ParseInt: parsing {v:?}: invalid syntax")))
    };
    let (min, max, cpu_percent) = match (int("--min").transpose(), int("--max").transpose(), int("--cpu-percent").transpose()) {
        (Ok(a), Ok(b), Ok(c)) => (a.unwrap_or(-1), b, c.unwrap_or(-1)),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return vec![e],
    };
    let Some(max) = max else { return vec!["error: required flag(s) \"max\" not set".into()] };
    if max < 1 {
        return vec![format!("error: --max=MAXPODS is required and must be at least 1, max: {max}")];
    }
    if max < min {
        return vec![format!("error: --max=MAXPODS must be larger or equal to --min=MINPODS, max: {max}, min: {min}")];
    }
    let cpu = f.get("--cpu").unwrap_or("");
    if cpu_percent != 0 && !cpu.is_empty() && f.get("--cpu-percent").is_some() {
        return vec![format!("error: --cpu-percent and --cpu are mutually exclusive, CPUPercent: {cpu_percent}, CPU: {cpu}")];
    }
    let targets = match targets(api, creds, f, ns) {
        Ok(t) => t,
        Err(e) => return vec![e],
    };
    let mut out = Vec::new();
    for (r, name) in targets {
        let res = &RESOURCES[r];
        if !matches!(res.kind, "Deployment" | "ReplicaSet" | "StatefulSet" | "ReplicationController") {
            out.push(format!(
                "error: cannot autoscale a {}: could not find scale subresource for {} in discovery information",
                res.kind,
                res.qualified_resource()
            ));
            continue;
        }
        if let Err(e) = fetch(api, creds, r, ns, &name) {
            out.push(e);
            continue;
        }
        let mut metrics = Vec::new();
        if cpu_percent > 0 {
            metrics.push(json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": cpu_percent}}}));
        }
        for (flag, resource) in [("--cpu", "cpu"), ("--memory", "memory")] {
            if let Some(v) = f.get(flag).filter(|v| !v.is_empty()) {
                match target(v, resource) {
                    Ok(t) => metrics.push(json!({"type": "Resource", "resource": {"name": resource, "target": t}})),
                    Err(e) => {
                        out.push(format!("error: failed to create v2 HorizontalPodAutoscaler: {e}"));
                        return out;
                    }
                }
            }
        }
        let hpa_name = f.get("--name").filter(|n| !n.is_empty()).unwrap_or(&name).to_string();
        let mut hpa = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": hpa_name},
            "spec": {"scaleTargetRef": {"apiVersion": res.api_version(), "kind": res.kind, "name": name}, "maxReplicas": max}});
        if min > 0 {
            hpa["spec"]["minReplicas"] = json!(min);
        }
        if !metrics.is_empty() {
            hpa["spec"]["metrics"] = Value::Array(metrics);
        }
        let mut req = Request::create(api::rid::HPA, ns, hpa, creds.clone());
        req.field_manager = "kubectl-autoscale".into();
        match api.handle(req) {
            Ok(o) => out.push(with_warnings(api, format!("horizontalpodautoscaler.autoscaling/{} autoscaled", api::name(&o)))),
            Err(s) => out.push(s.kubectl_message(None, "creating")),
        }
    }
    out
}
