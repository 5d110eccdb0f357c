//! Kubernetes' own validation rules with their field-error wording
//! (`pkg/apis/core/validation/validation.go`, `pkg/apis/apps/validation/validation.go`,
//! `k8s.io/apimachinery/pkg/util/validation/validation.go`). They run after defaulting
//! and schema decoding, on the object as it would be stored.

use crate::foundation::api::{get, get_array, get_i64, get_str};
use crate::foundation::status::{render_value, FieldError};
use crate::foundation::value::{json, Map, Value};

const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const QUALIFIED_NAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

fn is_alnum_lower(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

pub fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty() && s.len() <= 63 && s.chars().all(|c| is_alnum_lower(c) || c == '-') && s.starts_with(is_alnum_lower) && s.ends_with(is_alnum_lower)
}

pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

pub fn is_dns1035_label(s: &str) -> bool {
    is_dns1123_label(s) && s.starts_with(|c: char| c.is_ascii_lowercase())
}

fn dns_errors(field: &str, value: &str, kind: NameKind) -> Vec<FieldError> {
    let v = json!(value);
    let (ok, max, msg) = match kind {
        NameKind::Subdomain => (is_dns1123_subdomain(value), 253, DNS1123_SUBDOMAIN_MSG),
        NameKind::Label => (is_dns1123_label(value), 63, DNS1123_LABEL_MSG),
        NameKind::Dns1035 => (is_dns1035_label(value), 63, DNS1035_LABEL_MSG),
    };
    let mut errs = Vec::new();
    if value.len() > max {
        errs.push(FieldError::invalid(field, &v, format!("must be no more than {max} characters")));
    }
    if !ok {
        errs.push(FieldError::invalid(field, &v, msg));
    }
    errs
}

#[derive(Clone, Copy)]
enum NameKind {
    Subdomain,
    Label,
    Dns1035,
}

fn is_label_value(s: &str) -> bool {
    s.is_empty()
        || (s.len() <= 63
            && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && s.starts_with(|c: char| c.is_ascii_alphanumeric())
            && s.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

fn qualified_name_errors(field: &str, key: &str) -> Vec<FieldError> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let mut errs = Vec::new();
    let v = json!(key);
    if let Some(p) = prefix {
        if !is_dns1123_subdomain(p) {
            errs.push(FieldError::invalid(field, &v, format!("prefix part {DNS1123_SUBDOMAIN_MSG}")));
        }
    }
    if name.is_empty() {
        errs.push(FieldError::invalid(field, &v, "name part must be non-empty"));
    } else if name.len() > 63 {
        errs.push(FieldError::invalid(field, &v, "name part must be no more than 63 characters"));
    } else if !(name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric()))
    {
        errs.push(FieldError::invalid(field, &v, QUALIFIED_NAME_MSG));
    }
    errs
}

fn validate_labels(field: &str, labels: Option<&Map>, errs: &mut Vec<FieldError>) {
    for (k, v) in labels.into_iter().flatten() {
        errs.extend(qualified_name_errors(field, k));
        let s = v.as_str().unwrap_or("");
        if s.len() > 63 {
            errs.push(FieldError::invalid(field, v, "must be no more than 63 characters"));
        }
        if !is_label_value(s) {
            errs.push(FieldError::invalid(field, v, LABEL_VALUE_MSG));
        }
    }
}

/// ObjectMeta checks common to every kind (`ValidateObjectMeta`).
fn validate_meta(obj: &Value, namespaced: bool, name_kind: NameKind, errs: &mut Vec<FieldError>) {
    let name = get_str(obj, &["metadata", "name"]).unwrap_or("");
    let gen = get_str(obj, &["metadata", "generateName"]).unwrap_or("");
    if name.is_empty() && gen.is_empty() {
        errs.push(FieldError::required("metadata.name", "name or generateName is required"));
    } else if !name.is_empty() {
        errs.extend(dns_errors("metadata.name", name, name_kind));
    }
    let ns = get_str(obj, &["metadata", "namespace"]).unwrap_or("");
    if namespaced {
        if ns.is_empty() {
            errs.push(FieldError::required("metadata.namespace", ""));
        }
    } else if !ns.is_empty() {
        errs.push(FieldError::forbidden("metadata.namespace", "not allowed on this type"));
    }
    validate_labels("metadata.labels", get(obj, &["metadata", "labels"]).and_then(Value::as_object), errs);
    for k in get(obj, &["metadata", "annotations"]).and_then(Value::as_object).into_iter().flatten().map(|(k, _)| k) {
        errs.extend(qualified_name_errors("metadata.annotations", k));
    }
}

fn validate_container(path: &str, c: &Value, volumes: &[String], errs: &mut Vec<FieldError>) {
    let name = get_str(c, &["name"]).unwrap_or("");
    if name.is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    } else {
        errs.extend(dns_errors(&format!("{path}.name"), name, NameKind::Label));
    }
    let image = get_str(c, &["image"]).unwrap_or("");
    if image.trim().is_empty() {
        errs.push(FieldError::required(format!("{path}.image"), ""));
    }
    if let Some(p) = get(c, &["imagePullPolicy"]) {
        let s = p.as_str().unwrap_or("");
        if !["Always", "IfNotPresent", "Never"].contains(&s) {
            errs.push(FieldError::not_supported(format!("{path}.imagePullPolicy"), p, &["Always", "IfNotPresent", "Never"]));
        }
    }
    let mut port_names = Vec::new();
    for (i, p) in get_array(c, &["ports"]).iter().enumerate() {
        let cp = get_i64(p, &["containerPort"]).unwrap_or(0);
        if get(p, &["containerPort"]).is_none() {
            errs.push(FieldError::required(format!("{path}.ports[{i}].containerPort"), ""));
        } else if !(1..=65535).contains(&cp) {
            errs.push(FieldError::invalid(format!("{path}.ports[{i}].containerPort"), &json!(cp), "must be between 1 and 65535, inclusive"));
        }
        if let Some(n) = get_str(p, &["name"]) {
            if port_names.contains(&n) {
                errs.push(FieldError::duplicate(format!("{path}.ports[{i}].name"), &json!(n)));
            }
            port_names.push(n);
        }
        if let Some(proto) = get(p, &["protocol"]) {
            if !["TCP", "UDP", "SCTP"].contains(&proto.as_str().unwrap_or("")) {
                errs.push(FieldError::not_supported(format!("{path}.ports[{i}].protocol"), proto, &["SCTP", "TCP", "UDP"]));
            }
        }
    }
    for (i, m) in get_array(c, &["volumeMounts"]).iter().enumerate() {
        let n = get_str(m, &["name"]).unwrap_or("");
        if !volumes.iter().any(|v| v == n) {
            errs.push(FieldError::new(
                crate::foundation::status::FieldErrorKind::NotFound,
                format!("{path}.volumeMounts[{i}].name"),
                Some(render_value(&json!(n))),
                "",
            ));
        }
        if get_str(m, &["mountPath"]).unwrap_or("").is_empty() {
            errs.push(FieldError::required(format!("{path}.volumeMounts[{i}].mountPath"), ""));
        }
    }
    let req = get(c, &["resources", "requests"]).and_then(Value::as_object);
    let lim = get(c, &["resources", "limits"]).and_then(Value::as_object);
    if let (Some(req), Some(lim)) = (req, lim) {
        for (r, rv) in req {
            if let Some(lv) = lim.get(r) {
                if let (Some(a), Some(b)) = (crate::foundation::quantity::value_milli(rv), crate::foundation::quantity::value_milli(lv)) {
                    if a > b {
                        errs.push(FieldError::invalid(
                            format!("{path}.resources.requests"),
                            &json!(rv.as_str().map(str::to_string).unwrap_or_else(|| rv.to_string())),
                            format!("must be less than or equal to {r} limit of {}", lv.as_str().map(str::to_string).unwrap_or_else(|| lv.to_string())),
                        ));
                    }
                }
            }
        }
    }
}

/// PodSpec checks (`ValidatePodSpec`); `path` is `spec` or `spec.template.spec`.
pub fn validate_pod_spec(path: &str, spec: &Value, errs: &mut Vec<FieldError>) {
    validate_pod_spec_with(path, spec, &[], errs)
}

/// PodSpec checks where mounts may also name `extra` volumes (a StatefulSet's
/// volumeClaimTemplates).
pub fn validate_pod_spec_with(path: &str, spec: &Value, extra: &[String], errs: &mut Vec<FieldError>) {
    let mut volumes: Vec<String> = extra.to_vec();
    for (i, v) in get_array(spec, &["volumes"]).iter().enumerate() {
        let n = get_str(v, &["name"]).unwrap_or("").to_string();
        if n.is_empty() {
            errs.push(FieldError::required(format!("{path}.volumes[{i}].name"), ""));
        } else if volumes.contains(&n) {
            errs.push(FieldError::duplicate(format!("{path}.volumes[{i}].name"), &json!(n)));
        } else {
            errs.extend(dns_errors(&format!("{path}.volumes[{i}].name"), &n, NameKind::Label));
        }
        volumes.push(n);
    }
    let containers = get_array(spec, &["containers"]);
    if containers.is_empty() {
        errs.push(FieldError::required(format!("{path}.containers"), ""));
    }
    let mut names: Vec<&str> = Vec::new();
    for (list, items) in [("initContainers", get_array(spec, &["initContainers"])), ("containers", containers)] {
        for (i, c) in items.iter().enumerate() {
            let p = format!("{path}.{list}[{i}]");
            validate_container(&p, c, &volumes, errs);
            let n = get_str(c, &["name"]).unwrap_or("");
            if !n.is_empty() {
                if names.contains(&n) {
                    errs.push(FieldError::duplicate(format!("{p}.name"), &json!(n)));
                }
                names.push(n);
            }
        }
    }
    if let Some(rp) = get(spec, &["restartPolicy"]) {
        if !["Always", "OnFailure", "Never"].contains(&rp.as_str().unwrap_or("")) {
            errs.push(FieldError::not_supported(format!("{path}.restartPolicy"), rp, &["Always", "OnFailure", "Never"]));
        }
    }
    if let Some(dp) = get(spec, &["dnsPolicy"]) {
        if !["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"].contains(&dp.as_str().unwrap_or("")) {
            errs.push(FieldError::not_supported(format!("{path}.dnsPolicy"), dp, &["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"]));
        }
    }
    if let Some(g) = get_i64(spec, &["terminationGracePeriodSeconds"]) {
        if g < 0 {
            errs.push(FieldError::invalid(format!("{path}.terminationGracePeriodSeconds"), &json!(g), "must be greater than or equal to 0"));
        }
    }
    for (i, t) in get_array(spec, &["tolerations"]).iter().enumerate() {
        let op = get_str(t, &["operator"]).unwrap_or("Equal");
        if op == "Exists" && !get_str(t, &["value"]).unwrap_or("").is_empty() {
            errs.push(FieldError::invalid(format!("{path}.tolerations[{i}].operator"), &json!(op), "value must be empty when `operator` is 'Exists'"));
        }
        if !["Equal", "Exists"].contains(&op) {
            errs.push(FieldError::not_supported(format!("{path}.tolerations[{i}].operator"), &json!(op), &["Equal", "Exists"]));
        }
        if let Some(e) = get(t, &["effect"]) {
            if !["NoSchedule", "PreferNoSchedule", "NoExecute", ""].contains(&e.as_str().unwrap_or("")) {
                errs.push(FieldError::not_supported(format!("{path}.tolerations[{i}].effect"), e, &["NoExecute", "NoSchedule", "PreferNoSchedule"]));
            }
        }
    }
}

fn validate_replicas(path: &str, obj: &Value, errs: &mut Vec<FieldError>) {
    if let Some(r) = get_i64(obj, &["spec", "replicas"]) {
        if r < 0 {
            errs.push(FieldError::invalid(path, &json!(r), "must be greater than or equal to 0"));
        }
    }
}

/// Selector, template labels and template checks shared by Deployment, ReplicaSet,
/// DaemonSet and StatefulSet (`ValidateDeploymentSpec`, `ValidateReplicaSetSpec`).
fn validate_workload_template(kind: &str, obj: &Value, errs: &mut Vec<FieldError>) {
    let selector = get(obj, &["spec", "selector"]);
    let labels = get(obj, &["spec", "template", "metadata", "labels"]).and_then(Value::as_object);
    match selector {
        None | Some(Value::Null) => errs.push(FieldError::required("spec.selector", "")),
        Some(sel) => {
            let empty = sel.get("matchLabels").and_then(Value::as_object).is_none_or(|m| m.is_empty())
                && sel.get("matchExpressions").and_then(Value::as_array).is_none_or(|a| a.is_empty());
            if empty {
                errs.push(FieldError::new(
                    crate::foundation::status::FieldErrorKind::Invalid,
                    "spec.selector",
                    Some("v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}".into()),
                    format!("empty selector is invalid for {}", kind.to_lowercase()),
                ));
            } else if !crate::foundation::labels::selector_matches(Some(sel), labels) {
                errs.push(FieldError::new(
                    crate::foundation::status::FieldErrorKind::Invalid,
                    "spec.template.metadata.labels",
                    Some(go_map(labels)),
                    "`selector` does not match template `labels`",
                ));
            }
        }
    }
    validate_labels("spec.template.metadata.labels", labels, errs);
    let claims: Vec<String> =
        get_array(obj, &["spec", "volumeClaimTemplates"]).iter().filter_map(|c| get_str(c, &["metadata", "name"])).map(str::to_string).collect();
    match get(obj, &["spec", "template", "spec"]) {
        Some(spec) => {
            validate_pod_spec_with("spec.template.spec", spec, &claims, errs);
            if kind != "Job" {
                if let Some(rp) = get(spec, &["restartPolicy"]) {
                    if rp.as_str() != Some("Always") {
                        errs.push(FieldError::not_supported("spec.template.spec.restartPolicy", rp, &["Always"]));
                    }
                }
            }
        }
        None => errs.push(FieldError::required("spec.template.spec.containers", "")),
    }
}

/// Go's `%#v` of a `map[string]string` (`map[string]string{"app":"web"}`).
fn go_map(m: Option<&Map>) -> String {
    match m {
        None => "map[string]string(nil)".into(),
        Some(m) => {
            let parts: Vec<String> = m.iter().map(|(k, v)| format!("{:?}:{:?}", k, v.as_str().unwrap_or(""))).collect();
            format!("map[string]string{{{}}}", parts.join(", "))
        }
    }
}

fn int_or_percent(v: Option<&Value>, replicas_hint: i64, round_up: bool) -> Option<i64> {
    match v? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => {
            let p: i64 = s.strip_suffix('%')?.parse().ok()?;
            let x = p * replicas_hint;
            Some(if round_up { (x + 99) / 100 } else { x / 100 })
        }
        _ => None,
    }
}

fn validate_strategy(obj: &Value, errs: &mut Vec<FieldError>) {
    let st = get(obj, &["spec", "strategy"]);
    let ty = st.and_then(|s| s.get("type"));
    match ty.and_then(Value::as_str) {
        Some("Recreate") => {
            if st.and_then(|s| s.get("rollingUpdate")).is_some_and(|r| !r.is_null()) {
                errs.push(FieldError::forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"));
            }
        }
        Some("RollingUpdate") => {
            let ru = st.and_then(|s| s.get("rollingUpdate"));
            for f in ["maxSurge", "maxUnavailable"] {
                if let Some(v) = ru.and_then(|r| r.get(f)) {
                    let path = format!("spec.strategy.rollingUpdate.{f}");
                    match v {
                        Value::String(s) => match s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
                            None => errs.push(FieldError::invalid(&path, v, "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")),
                            Some(p) if p > 100 && f == "maxUnavailable" => errs.push(FieldError::invalid(&path, v, "must not be greater than 100%")),
                            _ => {}
                        },
                        Value::Number(n) if n.as_i64().unwrap_or(0) < 0 => errs.push(FieldError::invalid(&path, v, "must be greater than or equal to 0")),
                        _ => {}
                    }
                }
            }
            let surge = int_or_percent(ru.and_then(|r| r.get("maxSurge")), 100, true).unwrap_or(0);
            let unavail = int_or_percent(ru.and_then(|r| r.get("maxUnavailable")), 100, false).unwrap_or(0);
            if surge == 0 && unavail == 0 {
                errs.push(FieldError::invalid(
                    "spec.strategy.rollingUpdate.maxUnavailable",
                    ru.and_then(|r| r.get("maxUnavailable")).unwrap_or(&json!(0)),
                    "may not be 0 when `maxSurge` is 0",
                ));
            }
        }
        _ => {
            if let Some(t) = ty {
                errs.push(FieldError::not_supported("spec.strategy.type", t, &["Recreate", "RollingUpdate"]));
            }
        }
    }
    for f in ["revisionHistoryLimit", "minReadySeconds", "progressDeadlineSeconds"] {
        if let Some(v) = get_i64(obj, &["spec", f]) {
            if v < 0 {
                errs.push(FieldError::invalid(format!("spec.{f}"), &json!(v), "must be greater than or equal to 0"));
            }
        }
    }
    if let (Some(p), Some(m)) = (get_i64(obj, &["spec", "progressDeadlineSeconds"]), get_i64(obj, &["spec", "minReadySeconds"])) {
        if p <= m {
            errs.push(FieldError::invalid("spec.progressDeadlineSeconds", &json!(p), "must be greater than minReadySeconds"));
        }
    }
}

fn validate_service(obj: &Value, errs: &mut Vec<FieldError>) {
    let ty = get(obj, &["spec", "type"]);
    let tys = ty.and_then(Value::as_str).unwrap_or("ClusterIP");
    if !["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"].contains(&tys) {
        errs.push(FieldError::not_supported("spec.type", ty.unwrap_or(&Value::Null), &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]));
    }
    let ports = get_array(obj, &["spec", "ports"]);
    let headless = get_str(obj, &["spec", "clusterIP"]) == Some("None");
    if ports.is_empty() && tys != "ExternalName" && !headless {
        errs.push(FieldError::required("spec.ports", ""));
    }
    let mut names = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        let port = get_i64(p, &["port"]).unwrap_or(0);
        if !(1..=65535).contains(&port) {
            errs.push(FieldError::invalid(format!("spec.ports[{i}].port"), &json!(port), "must be between 1 and 65535, inclusive"));
        }
        let n = get_str(p, &["name"]).unwrap_or("");
        if ports.len() > 1 && n.is_empty() {
            errs.push(FieldError::required(format!("spec.ports[{i}].name"), ""));
        }
        if !n.is_empty() {
            if names.contains(&n) {
                errs.push(FieldError::duplicate(format!("spec.ports[{i}].name"), &json!(n)));
            }
            names.push(n);
        }
        if let Some(np) = get_i64(p, &["nodePort"]) {
            if tys == "ClusterIP" {
                errs.push(FieldError::forbidden(format!("spec.ports[{i}].nodePort"), "may not be used when `type` is 'ClusterIP'"));
            } else if !(30000..=32767).contains(&np) {
                errs.push(FieldError::invalid(
                    format!("spec.ports[{i}].nodePort"),
                    &json!(np),
                    "provided port is not in the valid range. The range of valid ports is 30000-32767",
                ));
            }
        }
    }
}

/// All create-time checks for `kind`.
pub fn validate(kind: &str, namespaced: bool, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name_kind = match kind {
        "Namespace" => NameKind::Label,
        "Service" => NameKind::Dns1035,
        _ => NameKind::Subdomain,
    };
    // Role-like objects allow any path segment name; the real API only forbids `.`/`..`/`/`/`%`.
    if matches!(kind, "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding") {
        let n = get_str(obj, &["metadata", "name"]).unwrap_or("");
        if n.is_empty() && get_str(obj, &["metadata", "generateName"]).is_none() {
            errs.push(FieldError::required("metadata.name", "name or generateName is required"));
        } else if n == "." || n == ".." || n.contains('/') || n.contains('%') {
            errs.push(FieldError::invalid("metadata.name", &json!(n), "may not contain '/' or '%' and may not be '.' or '..'"));
        }
    } else {
        validate_meta(obj, namespaced, name_kind, &mut errs);
    }
    match kind {
        "Pod" => match get(obj, &["spec"]) {
            Some(spec) => validate_pod_spec("spec", spec, &mut errs),
            None => errs.push(FieldError::required("spec.containers", "")),
        },
        "Deployment" => {
            validate_replicas("spec.replicas", obj, &mut errs);
            validate_workload_template(kind, obj, &mut errs);
            validate_strategy(obj, &mut errs);
        }
        "ReplicaSet" | "StatefulSet" => {
            validate_replicas("spec.replicas", obj, &mut errs);
            validate_workload_template(kind, obj, &mut errs);
        }
        "DaemonSet" => validate_workload_template(kind, obj, &mut errs),
        "Service" => validate_service(obj, &mut errs),
        "RoleBinding" | "ClusterRoleBinding" => {
            if get_str(obj, &["roleRef", "name"]).unwrap_or("").is_empty() {
                errs.push(FieldError::required("roleRef.name", ""));
            }
            let rk = get(obj, &["roleRef", "kind"]).cloned().unwrap_or(Value::Null);
            let allowed: &[&str] = if kind == "RoleBinding" { &["ClusterRole", "Role"] } else { &["ClusterRole"] };
            if !allowed.contains(&rk.as_str().unwrap_or("")) {
                errs.push(FieldError::not_supported("roleRef.kind", &rk, allowed));
            }
        }
        "ValidatingAdmissionPolicy" => {
            let vals = get_array(obj, &["spec", "validations"]);
            for (i, v) in vals.iter().enumerate() {
                let e = get_str(v, &["expression"]).unwrap_or("");
                if e.trim().is_empty() {
                    errs.push(FieldError::required(format!("spec.validations[{i}].expression"), "expression is not specified"));
                } else if let Err(msg) = crate::apiserver::admission::compile_check(e) {
                    errs.push(FieldError::invalid(format!("spec.validations[{i}].expression"), &json!(e), format!("compilation failed: {msg}")));
                }
            }
            if vals.is_empty() && get_array(obj, &["spec", "auditAnnotations"]).is_empty() {
                errs.push(FieldError::required("spec.validations", "validations or auditAnnotations must contain at least one item"));
            }
        }
        "ValidatingAdmissionPolicyBinding" => {
            if get_str(obj, &["spec", "policyName"]).unwrap_or("").is_empty() {
                errs.push(FieldError::required("spec.policyName", ""));
            }
            let actions = get_array(obj, &["spec", "validationActions"]);
            if actions.is_empty() {
                errs.push(FieldError::required("spec.validationActions", "at least one validation action is required"));
            }
            for (i, a) in actions.iter().enumerate() {
                if !["Deny", "Warn", "Audit"].contains(&a.as_str().unwrap_or("")) {
                    errs.push(FieldError::not_supported(format!("spec.validationActions[{i}]"), a, &["Audit", "Deny", "Warn"]));
                }
            }
        }
        _ => {}
    }
    errs
}

/// Update-time checks: immutable fields (`ValidateObjectMetaUpdate`, selector
/// immutability of apps/v1, `ValidatePodUpdate`).
pub fn validate_update(kind: &str, old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if matches!(kind, "Deployment" | "ReplicaSet" | "DaemonSet" | "StatefulSet") && get(old, &["spec", "selector"]) != get(new, &["spec", "selector"]) {
        errs.push(FieldError::new(
            crate::foundation::status::FieldErrorKind::Invalid,
            "spec.selector",
            Some(format!(
                "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}}",
                go_map(get(new, &["spec", "selector", "matchLabels"]).and_then(Value::as_object))
            )),
            "field is immutable",
        ));
    }
    if kind == "Pod" {
        let strip = |v: &Value| -> Value {
            let mut s = v.get("spec").cloned().unwrap_or(Value::Null);
            for list in ["containers", "initContainers"] {
                if let Some(cs) = s.get_mut(list).and_then(Value::as_array_mut) {
                    for c in cs {
                        if let Some(m) = c.as_object_mut() {
                            m.remove("image");
                        }
                    }
                }
            }
            if let Some(m) = s.as_object_mut() {
                m.remove("activeDeadlineSeconds");
                m.remove("tolerations");
                m.remove("terminationGracePeriodSeconds");
                // nodeName is set through the binding subresource, never by an update.
            }
            s
        };
        if strip(old) != strip(new) {
            errs.push(FieldError::forbidden(
                "spec",
                "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
            ));
        }
    }
    if kind == "Service" {
        let oc = get_str(old, &["spec", "clusterIP"]).unwrap_or("");
        let nc = get_str(new, &["spec", "clusterIP"]).unwrap_or("");
        if !nc.is_empty() && oc != nc {
            errs.push(FieldError::invalid("spec.clusterIPs[0]", &json!(nc), "may not change once set"));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment() -> Value {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}}}});
        crate::apiserver::defaults::apply("Deployment", &mut d);
        d
    }

    #[test]
    fn a_good_deployment_passes() {
        assert!(validate("Deployment", true, &deployment()).is_empty());
    }

    #[test]
    fn selector_must_match_template_labels() {
        let mut d = deployment();
        d["spec"]["template"]["metadata"]["labels"] = json!({"app": "other"});
        let e = validate("Deployment", true, &d);
        assert_eq!(
            e[0].to_string(),
            "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"other\"}: `selector` does not match template `labels`"
        );
    }

    #[test]
    fn negative_replicas_and_bad_names() {
        let mut d = deployment();
        d["spec"]["replicas"] = json!(-1);
        d["metadata"]["name"] = json!("Web");
        let e: Vec<String> = validate("Deployment", true, &d).iter().map(|e| e.to_string()).collect();
        assert!(e.contains(&"spec.replicas: Invalid value: -1: must be greater than or equal to 0".to_string()), "{e:?}");
        assert!(e.iter().any(|s| s.starts_with("metadata.name: Invalid value: \"Web\": a lowercase RFC 1123 subdomain")), "{e:?}");
    }

    #[test]
    fn containers_and_images_are_required() {
        let mut d = deployment();
        d["spec"]["template"]["spec"]["containers"] = json!([{"name": "x"}]);
        let e: Vec<String> = validate("Deployment", true, &d).iter().map(|e| e.to_string()).collect();
        assert_eq!(e, vec!["spec.template.spec.containers[0].image: Required value"]);
        let p = json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": []}});
        let e: Vec<String> = validate("Pod", true, &p).iter().map(|e| e.to_string()).collect();
        assert_eq!(e, vec!["spec.containers: Required value"]);
    }

    #[test]
    fn selectors_are_immutable() {
        let old = deployment();
        let mut new = deployment();
        new["spec"]["selector"] = json!({"matchLabels": {"app": "x"}});
        let e = validate_update("Deployment", &old, &new);
        assert!(e[0].to_string().ends_with("field is immutable"));
    }

    #[test]
    fn service_names_are_dns1035_labels() {
        let s = json!({"metadata": {"name": "1web", "namespace": "default"}, "spec": {"ports": [{"port": 80}]}});
        let e = validate("Service", true, &s);
        assert!(e[0].detail.starts_with("a DNS-1035 label"));
    }
}
