//! Kubernetes' own validation rules with their field-error wording
//! (`pkg/apis/core/validation/validation.go`, `pkg/apis/apps/validation/validation.go`,
//! `k8s.io/apimachinery/pkg/util/validation/validation.go`). They run after defaulting
//! and schema decoding, on the object as it would be stored.

use crate::foundation::api::{get, get_array, get_i64, get_str};
use crate::foundation::status::{render_value, FieldError};
use crate::foundation::value::{json, Map, Value};

use crate::foundation::labels::{label_key_errors, label_value_errors, matches_dns1123_label, matches_dns1123_subdomain, DNS1123_SUBDOMAIN_MSG};
use crate::foundation::sort::CollectTree;

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
/// `apimachineryvalidation.IsNegativeErrorMsg` (`api/validation/generic.go`).
const IS_NEGATIVE_MSG: &str = "must be greater than or equal to 0";

fn matches_dns1035_label(s: &str) -> bool {
    matches_dns1123_label(s) && s.starts_with(|c: char| c.is_ascii_lowercase())
}

/// `validation.IsDNS1123Label` finds nothing to say.
pub fn is_dns1123_label(s: &str) -> bool {
    s.len() <= 63 && matches_dns1123_label(s)
}

/// `validation.IsDNS1123Subdomain` finds nothing to say: 253 bytes at most, each
/// dot-separated part of any length (63 is a label's limit, not a subdomain part's).
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && matches_dns1123_subdomain(s)
}

pub fn is_dns1035_label(s: &str) -> bool {
    s.len() <= 63 && matches_dns1035_label(s)
}

/// The messages of `IsDNS1123Subdomain`, `IsDNS1123Label` and `IsDNS1035Label`
/// (`pkg/util/validation/validation.go`), each an Invalid error on `field`: the length
/// error and the format error are independent, so a long but well-formed name gets one.
pub(super) fn dns_errors(field: &str, value: &str, kind: NameKind) -> Vec<FieldError> {
    let v = json!(value);
    let (max, msg) = match kind {
        NameKind::Subdomain => (253, (!matches_dns1123_subdomain(value)).then_some(DNS1123_SUBDOMAIN_MSG)),
        NameKind::Label => (
            63,
            match (matches_dns1123_label(value), matches_dns1123_subdomain(value)) {
                (true, _) => None,
                // A valid subdomain but not a label: "since we already checked length, it
                // must be dots".
                (false, true) => Some("must not contain dots"),
                (false, false) => Some(DNS1123_LABEL_MSG),
            },
        ),
        NameKind::Dns1035 => (63, (!matches_dns1035_label(value)).then_some(DNS1035_LABEL_MSG)),
        NameKind::Any => return Vec::new(),
    };
    let mut errs = Vec::new();
    if value.len() > max {
        errs.push(FieldError::invalid(field, &v, format!("must be no more than {max} characters")));
    }
    if let Some(msg) = msg {
        errs.push(FieldError::invalid(field, &v, msg));
    }
    errs
}

/// Which `ValidateNameFunc` a kind's `metadata.name` gets: `NameIsDNSSubdomain` for most
/// (`ValidateConfigMapName`, `ValidatePodName`, `ValidateDeploymentName`, ...),
/// `NameIsDNSLabel` for namespaces, `NameIsDNS1035Label` for services.
#[derive(Clone, Copy)]
pub(super) enum NameKind {
    Subdomain,
    Label,
    Dns1035,
    /// Any name (`ValidateCertificateRequestName`: "We don't care what you call your
    /// certificate requests.").
    Any,
}

/// `ValidateLabels` (`apis/meta/v1/validation`): `IsQualifiedName` on each key and
/// `IsValidLabelValue` on each value, both from the `content` package.
fn validate_labels(field: &str, labels: Option<&Map>, errs: &mut Vec<FieldError>) {
    for (k, v) in labels.into_iter().flatten() {
        for msg in label_key_errors(k) {
            errs.push(FieldError::invalid(field, &json!(k), msg));
        }
        for msg in label_value_errors(v.as_str().unwrap_or("")) {
            errs.push(FieldError::invalid(field, v, msg));
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
    // ValidateAnnotations: "QualifiedName except that case doesn't matter", and at most
    // 256 KiB of keys and values in all (kubectl apply's last-applied copy counts).
    let mut size = 0;
    for (k, v) in get(obj, &["metadata", "annotations"]).and_then(Value::as_object).into_iter().flatten() {
        for msg in label_key_errors(&k.to_ascii_lowercase()) {
            errs.push(FieldError::invalid("metadata.annotations", &json!(k), msg));
        }
        size += k.len() + v.as_str().map_or(0, str::len);
    }
    if size > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long("metadata.annotations", TOTAL_ANNOTATION_SIZE_LIMIT));
    }
}

/// `TotalAnnotationSizeLimitB`: 256 KiB.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;
/// `core.MaxSecretSize`, which also bounds a ConfigMap: 1 MiB.
pub const MAX_SECRET_SIZE: usize = 1024 * 1024;

/// The bytes a base64 value of `data`/`binaryData` stands for.
fn decoded_len(v: &Value) -> usize {
    let s = v.as_str().unwrap_or("");
    let pad = s.bytes().rev().take_while(|b| *b == b'=').count();
    (s.len() / 4 * 3).saturating_sub(pad)
        + match s.len() % 4 {
            2 => 1,
            3 => 2,
            _ => 0,
        }
}

/// `ValidateConfigMap` and `ValidateSecret`: the values together within 1 MiB.
#[inline(never)]
fn validate_data_size(kind: &str, obj: &Value, errs: &mut Vec<FieldError>) {
    let values = |field: &str| get(obj, &[field]).and_then(Value::as_object).into_iter().flatten().map(|(_, v)| v);
    let size: usize = match kind {
        "ConfigMap" => values("data").map(|v| v.as_str().map_or(0, str::len)).sum::<usize>() + values("binaryData").map(decoded_len).sum::<usize>(),
        _ => values("data").map(decoded_len).sum(),
    };
    if size > MAX_SECRET_SIZE {
        errs.push(FieldError::too_long(if kind == "ConfigMap" { "[]" } else { "data" }, MAX_SECRET_SIZE));
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
    validate_resource_requirements(&format!("{path}.resources"), get(c, &["resources"]), errs);
}

/// A quantity's text: a string as written, a number as its JSON text (what
/// `Quantity.UnmarshalJSON` reads).
fn quantity_text(v: &Value) -> String {
    v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())
}

/// `Quantity.String()`: the canonical form upstream puts in its messages.
fn quantity_string(v: &Value) -> String {
    crate::foundation::quantity::canonical(quantity_text(v).trim())
}

fn quantity_of(v: &Value) -> Option<crate::foundation::quantity::Quantity> {
    crate::foundation::quantity::parse(quantity_text(v).trim()).ok()
}

/// `ValidateLimitRange` (`pkg/apis/core/validation`): one item per type, a known type,
/// no defaults on a Pod item, a storage bound on a claim item, and the bounds in order
/// (min <= default request <= default <= max, a ratio of at least 1 and at most max/min).
#[inline(never)]
fn validate_limit_range(obj: &Value, errs: &mut Vec<FieldError>) {
    let mut types = std::collections::BTreeSet::new();
    for (i, item) in get_array(obj, &["spec", "limits"]).iter().enumerate() {
        let idx = format!("spec.limits[{i}]");
        let ty = get_str(item, &["type"]).unwrap_or("");
        if !ty.contains('/') && !["Pod", "Container", "PersistentVolumeClaim"].contains(&ty) {
            errs.push(FieldError::invalid(format!("{idx}.type"), &json!(ty), "must be a standard limit type or fully qualified"));
        }
        if !types.insert(ty.to_string()) {
            errs.push(FieldError::duplicate(format!("{idx}.type"), &json!(ty)));
        }
        let list = |f: &str| -> std::collections::BTreeMap<String, Value> {
            get(item, &[f]).and_then(Value::as_object).into_iter().flatten().map(|(k, v)| (k.to_string(), v.clone())).collect_tree()
        };
        let (max, min, ratio) = (list("max"), list("min"), list("maxLimitRequestRatio"));
        let (mut default, mut default_request) = (std::collections::BTreeMap::new(), std::collections::BTreeMap::new());
        if ty == "Pod" {
            for f in ["default", "defaultRequest"] {
                if !list(f).is_empty() {
                    errs.push(FieldError::forbidden(format!("{idx}.{f}"), "may not be specified when `type` is 'Pod'"));
                }
            }
        } else {
            default = list("default");
            default_request = list("defaultRequest");
        }
        if ty == "PersistentVolumeClaim" && !min.contains_key("storage") && !max.contains_key("storage") {
            errs.push(FieldError::required(format!("{idx}.limits"), "either minimum or maximum storage value is required, but neither was provided"));
        }
        let keys: std::collections::BTreeSet<&String> =
            max.keys().chain(min.keys()).chain(default.keys()).chain(default_request.keys()).chain(ratio.keys()).collect_tree();
        let q = |m: &std::collections::BTreeMap<String, Value>, k: &str| m.get(k).and_then(|v| quantity_of(v).map(|q| (q.milli, quantity_string(v))));
        for k in keys {
            let (mn, mx, df, dr, ra) = (q(&min, k), q(&max, k), q(&default, k), q(&default_request, k), q(&ratio, k));
            let inv = |errs: &mut Vec<FieldError>, f: &str, v: &str, msg: String| errs.push(FieldError::invalid(format!("{idx}.{f}[{k}]"), &json!(v), msg));
            if let (Some(a), Some(b)) = (&mn, &mx) {
                if a.0 > b.0 {
                    inv(errs, "min", &a.1, format!("min value {} is greater than max value {}", a.1, b.1));
                }
            }
            if let (Some(r), Some(a)) = (&dr, &mn) {
                if a.0 > r.0 {
                    inv(errs, "defaultRequest", &r.1, format!("min value {} is greater than default request value {}", a.1, r.1));
                }
            }
            if let (Some(r), Some(b)) = (&dr, &mx) {
                if r.0 > b.0 {
                    inv(errs, "defaultRequest", &r.1, format!("default request value {} is greater than max value {}", r.1, b.1));
                }
            }
            if let (Some(r), Some(d)) = (&dr, &df) {
                if r.0 > d.0 {
                    inv(errs, "defaultRequest", &r.1, format!("default request value {} is greater than default limit value {}", r.1, d.1));
                }
            }
            if let (Some(d), Some(a)) = (&df, &mn) {
                if a.0 > d.0 {
                    inv(errs, "default", &a.1, format!("min value {} is greater than default value {}", a.1, d.1));
                }
            }
            if let (Some(d), Some(b)) = (&df, &mx) {
                if d.0 > b.0 {
                    inv(errs, "default", &b.1, format!("default value {} is greater than max value {}", d.1, b.1));
                }
            }
            if let Some(r) = &ra {
                if r.0 < 1000 {
                    inv(errs, "maxLimitRequestRatio", &r.1, format!("ratio {} is less than 1", r.1));
                }
                if let (Some(a), Some(b)) = (&mn, &mx) {
                    let limit = b.0 as f64 / a.0 as f64;
                    if r.0 as f64 / 1000.0 > limit {
                        inv(errs, "maxLimitRequestRatio", &r.1, format!("ratio {} is greater than max/min = {limit:.6}", r.1));
                    }
                }
            }
            // Resources that cannot be overcommitted need default == defaultRequest.
            let overcommit = !k.starts_with("hugepages-") && (!k.contains('/') || k.contains("kubernetes.io/"));
            if let (false, Some(d), Some(r)) = (overcommit, &df, &dr) {
                if d.0 != r.0 {
                    inv(errs, "defaultRequest", &r.1, format!("default value {} must equal to defaultRequest value {} in {k}", d.1, r.1));
                }
            }
        }
    }
}

/// `ValidateResourceQuantityValue` -> `ValidateNonnegativeQuantity`: a negative quantity
/// is `Invalid value: "-8": must be greater than or equal to 0`.
fn validate_nonnegative_quantity(field: &str, v: &Value, errs: &mut Vec<FieldError>) {
    if quantity_of(v).is_some_and(|q| q.is_negative()) {
        errs.push(FieldError::invalid(field, &json!(quantity_string(v)), IS_NEGATIVE_MSG));
    }
}

/// `validateResourceRequirements` (container `resources`, and the pod-level
/// `spec.resources`): each limit, then each request, must be non-negative, and a
/// request may not exceed its limit.
fn validate_resource_requirements(path: &str, resources: Option<&Value>, errs: &mut Vec<FieldError>) {
    let req = resources.and_then(|r| r.get("requests")).and_then(Value::as_object);
    let lim = resources.and_then(|r| r.get("limits")).and_then(Value::as_object);
    for (r, lv) in lim.into_iter().flatten() {
        validate_nonnegative_quantity(&format!("{path}.limits[{r}]"), lv, errs);
    }
    for (r, rv) in req.into_iter().flatten() {
        validate_nonnegative_quantity(&format!("{path}.requests[{r}]"), rv, errs);
        let Some(lv) = lim.and_then(|l| l.get(r)) else { continue };
        if let (Some(a), Some(b)) = (quantity_of(rv), quantity_of(lv)) {
            if a.milli > b.milli {
                errs.push(FieldError::invalid(
                    format!("{path}.requests"),
                    &json!(quantity_string(rv)),
                    format!("must be less than or equal to {r} limit of {}", quantity_string(lv)),
                ));
            }
        }
    }
}

/// `ValidateNonnegativeField` (`api/validation/generic.go`).
fn validate_nonnegative_field(field: &str, v: Option<i64>, errs: &mut Vec<FieldError>) {
    if let Some(n) = v.filter(|n| *n < 0) {
        errs.push(FieldError::invalid(field, &json!(n), IS_NEGATIVE_MSG));
    }
}

/// `validateLivenessProbe`, `validateReadinessProbe`, `validateStartupProbe` and the
/// numeric checks of their shared `validateProbe` (`pkg/apis/core/validation`).
fn validate_probes(path: &str, c: &Value, errs: &mut Vec<FieldError>) {
    for kind in ["livenessProbe", "readinessProbe", "startupProbe"] {
        let Some(probe) = get(c, &[kind]).filter(|p| !p.is_null()) else { continue };
        let p = format!("{path}.{kind}");
        for f in ["initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"] {
            validate_nonnegative_field(&format!("{p}.{f}"), get_i64(probe, &[f]), errs);
        }
        let grace = get_i64(probe, &["terminationGracePeriodSeconds"]);
        if let Some(g) = grace.filter(|g| *g <= 0) {
            errs.push(FieldError::invalid(format!("{p}.terminationGracePeriodSeconds"), &json!(g), "must be greater than 0"));
        }
        if kind == "readinessProbe" {
            if let Some(g) = grace {
                errs.push(FieldError::invalid(format!("{p}.terminationGracePeriodSeconds"), &json!(g), "must not be set for readinessProbes"));
            }
        } else {
            // SetDefaults_Probe turns an unset or zero successThreshold into 1.
            let st = get_i64(probe, &["successThreshold"]).filter(|s| *s != 0).unwrap_or(1);
            if st != 1 {
                errs.push(FieldError::invalid(format!("{p}.successThreshold"), &json!(st), "must be 1"));
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
            // validateContainers / validateInitContainers: probes are checked on regular
            // containers and restartable (sidecar) init containers, forbidden on others.
            if list == "containers" || get_str(c, &["restartPolicy"]) == Some("Always") {
                validate_probes(&p, c, errs);
            } else {
                for kind in ["livenessProbe", "readinessProbe", "startupProbe"] {
                    if get(c, &[kind]).is_some_and(|v| !v.is_null()) {
                        errs.push(FieldError::forbidden(format!("{p}.{kind}"), "may not be set for init containers without restartPolicy=Always"));
                    }
                }
            }
        }
    }
    // validatePodResources (PodLevelResources, on by default since 1.34).
    if let Some(r) = get(spec, &["resources"]).filter(|r| !r.is_null()) {
        validate_resource_requirements(&format!("{path}.resources"), Some(r), errs);
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
    // ValidatePodSpec: `value < 1 || value > math.MaxInt32` ->
    // validation.InclusiveRangeError(1, math.MaxInt32).
    if let Some(a) = get_i64(spec, &["activeDeadlineSeconds"]) {
        if !(1..=i64::from(i32::MAX)).contains(&a) {
            errs.push(FieldError::invalid(format!("{path}.activeDeadlineSeconds"), &json!(a), "must be between 1 and 2147483647, inclusive"));
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
/// `ValidateReplicationControllerSpec`: a plain, non-empty label map as the selector.
#[inline(never)]
fn validate_rc_template(obj: &Value, errs: &mut Vec<FieldError>) {
    let selector = get(obj, &["spec", "selector"]).and_then(Value::as_object);
    if selector.is_none_or(|m| m.is_empty()) {
        errs.push(FieldError::required("spec.selector", ""));
    }
    let Some(template) = get(obj, &["spec", "template"]) else {
        errs.push(FieldError::required("spec.template", ""));
        return;
    };
    let labels = get(template, &["metadata", "labels"]).and_then(Value::as_object);
    if let Some(sel) = selector.filter(|m| !m.is_empty()) {
        if !crate::foundation::labels::map_matches(sel, labels) {
            errs.push(FieldError::new(
                crate::foundation::status::FieldErrorKind::Invalid,
                "spec.template.metadata.labels",
                Some(go_map(labels)),
                "selector does not match template labels",
            ));
        }
    }
    validate_labels("spec.template.metadata.labels", labels, errs);
    match get(template, &["spec"]) {
        Some(spec) => {
            validate_pod_spec_with("spec.template.spec", spec, &[], errs);
            if let Some(rp) = get(spec, &["restartPolicy"]) {
                if rp.as_str() != Some("Always") {
                    errs.push(FieldError::not_supported("spec.template.spec.restartPolicy", rp, &["Always"]));
                }
            }
        }
        None => errs.push(FieldError::required("spec.template.spec.containers", "")),
    }
}

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
                    format!("empty selector is invalid for {}", kind.to_ascii_lowercase()),
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

/// `validateJobSpec` (pkg/apis/batch/validation): counts, completion mode, the pod
/// template and its restart policy.
#[inline(never)]
fn validate_job_spec(path: &str, spec: &Value, errs: &mut Vec<FieldError>) {
    for f in ["parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "backoffLimitPerIndex", "maxFailedIndexes", "ttlSecondsAfterFinished"] {
        if let Some(n) = get_i64(spec, &[f]) {
            if n < 0 {
                errs.push(FieldError::invalid(format!("{path}.{f}"), &json!(n), "must be greater than or equal to 0"));
            }
        }
    }
    let mode = get(spec, &["completionMode"]).cloned().unwrap_or(Value::Null);
    match mode.as_str() {
        None | Some("NonIndexed") => {}
        Some("Indexed") => {
            if get_i64(spec, &["completions"]).is_none() {
                errs.push(FieldError::required(format!("{path}.completions"), "when completion mode is Indexed"));
            }
        }
        Some(_) => errs.push(FieldError::not_supported(format!("{path}.completionMode"), &mode, &["NonIndexed", "Indexed"])),
    }
    match get(spec, &["template", "spec"]) {
        Some(pod) => {
            validate_pod_spec_with(&format!("{path}.template.spec"), pod, &[], errs);
            let rp = get(pod, &["restartPolicy"]).cloned().unwrap_or(json!(""));
            if !matches!(rp.as_str(), Some("OnFailure" | "Never")) {
                errs.push(FieldError::not_supported(format!("{path}.template.spec.restartPolicy"), &rp, &["OnFailure", "Never"]));
            }
        }
        None => errs.push(FieldError::required(format!("{path}.template.spec.containers"), "")),
    }
}

/// `ValidateCronJobCreate`: the schedule (parsed as robfig/cron's `ParseStandard`), the
/// time zone's form, the concurrency policy and the Job template. A zone kubeloop cannot
/// compute passes, as it would on a cluster whose tz database has it; the controller says
/// that it does not know it.
#[inline(never)]
fn validate_cronjob(obj: &Value, errs: &mut Vec<FieldError>) {
    let schedule = get_str(obj, &["spec", "schedule"]).unwrap_or("");
    let tz = get_str(obj, &["spec", "timeZone"]);
    if schedule.is_empty() {
        errs.push(FieldError::required("spec.schedule", ""));
    } else if let Err(e) = crate::foundation::cron::parse_standard(schedule) {
        errs.push(FieldError::invalid("spec.schedule", &json!(schedule), e));
    } else if schedule.contains("TZ") && tz.is_some() {
        errs.push(FieldError::invalid("spec.schedule", &json!(schedule), "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"));
    }
    if let Some(tz) = tz {
        if tz.is_empty() {
            errs.push(FieldError::invalid("spec.timeZone", &json!(tz), "timeZone must be nil or non-empty string"));
        } else if tz
            .split('/')
            .any(|p| p == "." || p == ".." || p.starts_with('-') || p.is_empty() || !p.chars().all(|c| c.is_ascii_alphanumeric() || "_-+".contains(c)))
        {
            errs.push(FieldError::invalid("spec.timeZone", &json!(tz), format!("unknown time zone {tz}")));
        } else if tz.eq_ignore_ascii_case("Local") {
            errs.push(FieldError::invalid("spec.timeZone", &json!(tz), "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"));
        }
    }
    let policy = get(obj, &["spec", "concurrencyPolicy"]).cloned().unwrap_or(json!(""));
    if !matches!(policy.as_str(), Some("Allow" | "Forbid" | "Replace")) {
        errs.push(FieldError::not_supported("spec.concurrencyPolicy", &policy, &["Allow", "Forbid", "Replace"]));
    }
    for f in ["startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"] {
        if let Some(n) = get_i64(obj, &["spec", f]) {
            if n < 0 {
                errs.push(FieldError::invalid(format!("spec.{f}"), &json!(n), "must be greater than or equal to 0"));
            }
        }
    }
    validate_job_spec("spec.jobTemplate.spec", get(obj, &["spec", "jobTemplate", "spec"]).unwrap_or(&Value::Null), errs);
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

#[inline(never)]
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
        "CertificateSigningRequest" => NameKind::Any,
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
        "Job" => validate_job_spec("spec", get(obj, &["spec"]).unwrap_or(&Value::Null), &mut errs),
        "CronJob" => validate_cronjob(obj, &mut errs),
        "ReplicationController" => {
            validate_replicas("spec.replicas", obj, &mut errs);
            validate_rc_template(obj, &mut errs);
        }
        "ResourceQuota" => validate_resource_quota(obj, &mut errs),
        "LimitRange" => validate_limit_range(obj, &mut errs),
        "ConfigMap" | "Secret" => validate_data_size(kind, obj, &mut errs),
        "Service" => validate_service(obj, &mut errs),
        "PersistentVolume" => validate_pv_spec(obj, &mut errs),
        "PersistentVolumeClaim" => validate_pvc_spec("spec", get(obj, &["spec"]).unwrap_or(&Value::Null), &mut errs),
        "StorageClass" => validate_storage_class(obj, &mut errs),
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

/// ValidateResourceQuotaSpec: ValidateResourceQuantityValue on each hard limit.
#[inline(never)]
fn validate_resource_quota(obj: &Value, errs: &mut Vec<FieldError>) {
    for (r, q) in get(obj, &["spec", "hard"]).and_then(Value::as_object).into_iter().flatten() {
        validate_nonnegative_quantity(&format!("spec.hard[{r}]"), q, errs);
    }
}

/// Update-time checks: immutable fields (`ValidateObjectMetaUpdate`, selector
/// immutability of apps/v1, `ValidatePodUpdate`).
pub fn validate_update(kind: &str, old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    // A StatefulSet's selector is covered by the check of its whole spec below.
    if matches!(kind, "Deployment" | "ReplicaSet" | "DaemonSet") && get(old, &["spec", "selector"]) != get(new, &["spec", "selector"]) {
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
    if kind == "StatefulSet" {
        validate_statefulset_update(old, new, &mut errs);
    }
    match kind {
        "PersistentVolume" => validate_pv_update(old, new, &mut errs),
        "PersistentVolumeClaim" => validate_pvc_update(old, new, &mut errs),
        "StorageClass" => validate_storage_class_update(old, new, &mut errs),
        _ => {}
    }
    if kind == "Job" {
        validate_job_update(old, new, &mut errs);
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

/// `ValidatePodEphemeralContainersUpdate`: ephemeral containers are only ever added (an
/// existing one may be neither removed nor changed), and each is a container without
/// what an ephemeral one may not have, named apart from every other container, targeting
/// one that exists (`validateEphemeralContainers`).
#[inline(never)]
pub fn validate_ephemeral_update(old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let list = |v: &Value| get_array(v, &["spec", "ephemeralContainers"]).to_vec();
    let (before, after) = (list(old), list(new));
    for o in &before {
        let name = get_str(o, &["name"]).unwrap_or("");
        match after.iter().find(|n| get_str(n, &["name"]) == Some(name)) {
            None => errs.push(FieldError::forbidden("spec.ephemeralContainers", format!("existing ephemeral containers {name:?} may not be removed\n"))),
            Some(n) if n != o => {
                errs.push(FieldError::forbidden("spec.ephemeralContainers", format!("existing ephemeral containers {name:?} may not be changed\n")))
            }
            Some(_) => {}
        }
    }
    let spec = new.get("spec").unwrap_or(&Value::Null);
    let volumes: Vec<String> = get_array(spec, &["volumes"]).iter().filter_map(|v| get_str(v, &["name"])).map(str::to_string).collect();
    let mut names: Vec<&str> =
        get_array(spec, &["initContainers"]).iter().chain(get_array(spec, &["containers"])).filter_map(|c| get_str(c, &["name"])).collect();
    let targets = names.clone();
    for (i, c) in after.iter().enumerate() {
        let p = format!("spec.ephemeralContainers[{i}]");
        validate_container(&p, c, &volumes, &mut errs);
        for (field, key) in [
            ("ports", "ports"),
            ("resources", "resources"),
            ("livenessProbe", "livenessProbe"),
            ("readinessProbe", "readinessProbe"),
            ("startupProbe", "startupProbe"),
            ("lifecycle", "lifecycle"),
        ] {
            let set = c
                .get(key)
                .is_some_and(|v| !(v.is_null() || v.as_object().is_some_and(|m| m.iter().next().is_none()) || v.as_array().is_some_and(Vec::is_empty)));
            if set {
                errs.push(FieldError::forbidden(format!("{p}.{field}"), "cannot be set for an Ephemeral Container"));
            }
        }
        let n = get_str(c, &["name"]).unwrap_or("");
        if !n.is_empty() {
            if names.contains(&n) {
                errs.push(FieldError::duplicate(format!("{p}.name"), &json!(n)));
            }
            names.push(n);
        }
        if let Some(t) = get_str(c, &["targetContainerName"]).filter(|t| !t.is_empty()) {
            if !targets.contains(&t) {
                errs.push(FieldError::new(crate::foundation::status::FieldErrorKind::NotFound, format!("{p}.targetContainerName"), Some(format!("{t:?}")), ""));
            }
        }
    }
    errs
}

/// `ValidateStatefulSetUpdate`: only the fields it names may change in a set's spec.
fn validate_statefulset_update(old: &Value, new: &Value, errs: &mut Vec<FieldError>) {
    const MUTABLE: [&str; 7] =
        ["replicas", "ordinals", "template", "updateStrategy", "revisionHistoryLimit", "persistentVolumeClaimRetentionPolicy", "minReadySeconds"];
    let rest = |o: &Value| -> Value {
        let mut spec = o.get("spec").cloned().unwrap_or(Value::Null);
        if let Some(m) = spec.as_object_mut() {
            for f in MUTABLE {
                m.remove(f);
            }
        }
        spec
    };
    if rest(old) != rest(new) {
        errs.push(FieldError::forbidden(
            "spec",
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ));
    }
}

/// `ValidateJobSpecUpdate` (pkg/apis/batch/validation) with the options the Job strategy
/// gives it: completions (an Indexed Job's only together with parallelism, as
/// `ElasticIndexedJob` allows), selector, pod template (its scheduling directives, labels
/// and annotations mutable while the Job is suspended and has never started),
/// completionMode, podFailurePolicy, backoffLimitPerIndex, managedBy and successPolicy.
///
/// The bad value is printed as the API server prints it where that is a number, a string or
/// a label selector; for the structs (`core.PodTemplateSpec`, `batch.PodFailurePolicy`,
/// `batch.SuccessPolicy`) the API server prints Go's `%#v` dump, pointers as memory
/// addresses, which kubeloop shortens to the type name and `{...}`.
#[inline(never)]
fn validate_job_update(old: &Value, new: &Value, errs: &mut Vec<FieldError>) {
    let spec = |o: &Value, f: &str| get(o, &["spec", f]).filter(|v| !v.is_null()).cloned();
    let immutable = |errs: &mut Vec<FieldError>, f: &str, go_type: Option<&str>| {
        let (a, b) = (spec(old, f), spec(new, f));
        if a != b {
            let value = match (&b, go_type) {
                (None, _) => "null".to_string(),
                (Some(_), Some(t)) => format!("{t}{{...}}"),
                (Some(v), None) => crate::foundation::status::render_value(v),
            };
            errs.push(FieldError::new(crate::foundation::status::FieldErrorKind::Invalid, format!("spec.{f}"), Some(value), "field is immutable"));
        }
    };
    let indexed = get_str(new, &["spec", "completionMode"]) == Some("Indexed");
    let (old_c, new_c) = (spec(old, "completions"), spec(new, "completions"));
    if old_c != new_c {
        if !indexed {
            immutable(errs, "completions", None);
        } else if let Some(c) = &new_c {
            if Some(c) != spec(new, "parallelism").as_ref() {
                errs.push(FieldError::invalid("spec.completions", c, "can only be modified in tandem with spec.parallelism"));
            }
        }
    }
    if spec(old, "selector") != spec(new, "selector") {
        errs.push(FieldError::new(
            crate::foundation::status::FieldErrorKind::Invalid,
            "spec.selector",
            Some(match get(new, &["spec", "selector"]).filter(|v| !v.is_null()) {
                None => "null".to_string(),
                Some(_) => format!(
                    "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}}",
                    go_map(get(new, &["spec", "selector", "matchLabels"]).and_then(Value::as_object))
                ),
            }),
            "field is immutable",
        ));
    }
    // `validatePodTemplateUpdate`: with `AllowMutableSchedulingDirectives`, the old
    // template takes the new one's node affinity, node selector, tolerations, scheduling
    // gates, labels and annotations before the comparison.
    let suspended_never_started = get(old, &["spec", "suspend"]).and_then(Value::as_bool) == Some(true) && get(old, &["status", "startTime"]).is_none();
    let mut old_t = get(old, &["spec", "template"]).cloned().unwrap_or(Value::Null);
    let new_t = get(new, &["spec", "template"]).cloned().unwrap_or(Value::Null);
    if suspended_never_started {
        for f in ["labels", "annotations"] {
            match get(&new_t, &["metadata", f]) {
                Some(v) => crate::foundation::api::set(&mut old_t, &["metadata", f], v.clone()),
                None => {
                    if let Some(m) = old_t.get_mut("metadata").and_then(Value::as_object_mut) {
                        m.remove(f);
                    }
                }
            }
        }
        for f in ["nodeSelector", "tolerations", "schedulingGates"] {
            match get(&new_t, &["spec", f]) {
                Some(v) => crate::foundation::api::set(&mut old_t, &["spec", f], v.clone()),
                None => {
                    if let Some(m) = old_t.get_mut("spec").and_then(Value::as_object_mut) {
                        m.remove(f);
                    }
                }
            }
        }
        match get(&new_t, &["spec", "affinity", "nodeAffinity"]) {
            Some(na) => crate::foundation::api::set(&mut old_t, &["spec", "affinity", "nodeAffinity"], na.clone()),
            None => {
                if let Some(m) = old_t.get_mut("spec").and_then(|s| s.get_mut("affinity")).and_then(Value::as_object_mut) {
                    m.remove("nodeAffinity");
                }
            }
        }
        // An affinity left with nothing in it counts as none.
        if get(&new_t, &["spec", "affinity"]).is_none() && get(&old_t, &["spec", "affinity"]).and_then(Value::as_object).is_some_and(|m| m.is_empty()) {
            if let Some(m) = old_t.get_mut("spec").and_then(Value::as_object_mut) {
                m.remove("affinity");
            }
        }
    }
    if old_t != new_t {
        errs.push(FieldError::new(
            crate::foundation::status::FieldErrorKind::Invalid,
            "spec.template",
            Some("core.PodTemplateSpec{...}".to_string()),
            "field is immutable",
        ));
    }
    immutable(errs, "completionMode", None);
    immutable(errs, "podFailurePolicy", Some("batch.PodFailurePolicy"));
    immutable(errs, "backoffLimitPerIndex", None);
    immutable(errs, "managedBy", None);
    immutable(errs, "successPolicy", Some("batch.SuccessPolicy"));
}

// ---- storage: PersistentVolume, PersistentVolumeClaim, StorageClass -------------------
// `ValidatePersistentVolumeSpec`, `ValidatePersistentVolumeClaimSpec` and their updates
// (`pkg/apis/core/validation/validation.go`), `ValidateStorageClass(Update)`
// (`pkg/apis/storage/validation/validation.go`).

/// `supportedAccessModes`, as `sets.List` orders them.
const ACCESS_MODES: [&str; 4] = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"];
const VOLUME_MODES: [&str; 2] = ["Block", "Filesystem"];
/// The volume sources a PersistentVolume may name, in the order upstream checks them.
const PV_SOURCES: [&str; 22] = [
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "flocker",
    "nfs",
    "rbd",
    "quobyte",
    "cephfs",
    "iscsi",
    "cinder",
    "fc",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "scaleIO",
    "local",
    "storageos",
    "csi",
];

fn validate_access_modes(path: &str, spec: &Value, required_detail: &str, errs: &mut Vec<FieldError>) {
    let modes = get_array(spec, &["accessModes"]);
    if modes.is_empty() {
        errs.push(FieldError::required(format!("{path}.accessModes"), required_detail));
    }
    let (mut rwop, mut other) = (false, false);
    for m in modes {
        let s = m.as_str().unwrap_or("");
        if !ACCESS_MODES.contains(&s) {
            errs.push(FieldError::not_supported(format!("{path}.accessModes"), m, &ACCESS_MODES));
        } else if s == "ReadWriteOncePod" {
            rwop = true;
        } else {
            other = true;
        }
    }
    if rwop && other {
        errs.push(FieldError::forbidden(format!("{path}.accessModes"), "may not use ReadWriteOncePod with other access modes"));
    }
}

/// `ValidatePositiveQuantityValue`.
fn validate_positive_quantity(field: &str, v: &Value, errs: &mut Vec<FieldError>) -> bool {
    match quantity_of(v) {
        Some(q) if q.milli > 0 => true,
        _ => {
            errs.push(FieldError::invalid(field, &json!(quantity_string(v)), "must be greater than zero"));
            false
        }
    }
}

fn validate_class_name(field: &str, v: Option<&Value>, errs: &mut Vec<FieldError>) {
    if let Some(name) = v.and_then(Value::as_str).filter(|n| !n.is_empty()) {
        errs.extend(dns_errors(field, name, NameKind::Subdomain));
    }
}

#[inline(never)]
fn validate_pv_spec(obj: &Value, errs: &mut Vec<FieldError>) {
    let spec = get(obj, &["spec"]).unwrap_or(&Value::Null);
    validate_access_modes("spec", spec, "", errs);
    let cap = get(spec, &["capacity"]).and_then(Value::as_object);
    if cap.is_none_or(|c| c.is_empty()) {
        errs.push(FieldError::required("spec.capacity", ""));
    }
    if cap.is_none_or(|c| !c.contains_key("storage") || c.len() > 1) {
        // Go prints the ResourceList with `%#v`.
        let shown = match cap {
            None => "core.ResourceList(nil)".to_string(),
            Some(c) => {
                let items: Vec<String> = c.iter().map(|(k, v)| format!("{k:?}:{:?}", quantity_string(v))).collect();
                format!("core.ResourceList{{{}}}", items.join(", "))
            }
        };
        errs.push(FieldError::new(crate::foundation::status::FieldErrorKind::NotSupported, "spec.capacity", Some(shown), "supported values: \"storage\""));
    }
    for (r, q) in cap.into_iter().flatten() {
        validate_positive_quantity(&format!("spec.capacity[{r}]"), q, errs);
    }
    if let Some(p) = get(spec, &["persistentVolumeReclaimPolicy"]).filter(|p| p.as_str().is_some_and(|s| !s.is_empty())) {
        if !["Delete", "Recycle", "Retain"].contains(&p.as_str().unwrap_or("")) {
            errs.push(FieldError::not_supported("spec.persistentVolumeReclaimPolicy", p, &["Delete", "Recycle", "Retain"]));
        }
    }
    let mut sources = 0;
    for src in PV_SOURCES {
        if get(spec, &[src]).is_none_or(Value::is_null) {
            continue;
        }
        if sources > 0 && src != "flexVolume" {
            errs.push(FieldError::forbidden(format!("spec.{src}"), "may not specify more than 1 volume type"));
            continue;
        }
        sources += 1;
        match src {
            "csi" => {
                for f in ["driver", "volumeHandle"] {
                    if get_str(spec, &["csi", f]).unwrap_or("").is_empty() {
                        errs.push(FieldError::required(format!("spec.csi.{f}"), ""));
                    }
                }
            }
            "hostPath" | "local" if get_str(spec, &[src, "path"]).unwrap_or("").is_empty() => {
                errs.push(FieldError::required(format!("spec.{src}.path"), ""));
            }
            "nfs" => {
                if get_str(spec, &["nfs", "server"]).unwrap_or("").is_empty() {
                    errs.push(FieldError::required("spec.nfs.server", ""));
                }
                if get_str(spec, &["nfs", "path"]).unwrap_or("").is_empty() {
                    errs.push(FieldError::required("spec.nfs.path", ""));
                }
            }
            _ => {}
        }
        if src == "local" && get(spec, &["nodeAffinity", "required"]).is_none_or(Value::is_null) {
            errs.push(FieldError::required("spec.nodeAffinity", "Local volume requires node affinity"));
        }
    }
    if sources == 0 {
        errs.push(FieldError::required("spec", "must specify a volume type"));
    }
    validate_class_name("spec.storageClassName", get(spec, &["storageClassName"]), errs);
    if let Some(m) = get(spec, &["volumeMode"]).filter(|m| !m.is_null()) {
        if !VOLUME_MODES.contains(&m.as_str().unwrap_or("")) {
            errs.push(FieldError::not_supported("spec.volumeMode", m, &VOLUME_MODES));
        }
    }
}

/// `ValidatePersistentVolumeClaimSpec` (also a StatefulSet's volumeClaimTemplates').
#[inline(never)]
pub fn validate_pvc_spec(path: &str, spec: &Value, errs: &mut Vec<FieldError>) {
    validate_access_modes(path, spec, "at least 1 access mode is required", errs);
    match get(spec, &["resources", "requests", "storage"]) {
        None => errs.push(FieldError::required(format!("{path}.resources[storage]"), "")),
        Some(q) => {
            if validate_positive_quantity(&format!("{path}.resources[storage]"), q, errs) {
                validate_nonnegative_quantity(&format!("{path}.resources[storage]"), q, errs);
            }
        }
    }
    validate_class_name(&format!("{path}.storageClassName"), get(spec, &["storageClassName"]), errs);
    if let Some(m) = get(spec, &["volumeMode"]).filter(|m| !m.is_null()) {
        if !VOLUME_MODES.contains(&m.as_str().unwrap_or("")) {
            errs.push(FieldError::not_supported(format!("{path}.volumeMode"), m, &VOLUME_MODES));
        }
    }
}

#[inline(never)]
fn validate_storage_class(obj: &Value, errs: &mut Vec<FieldError>) {
    let provisioner = get_str(obj, &["provisioner"]).unwrap_or("");
    if provisioner.is_empty() {
        errs.push(FieldError::required("provisioner", ""));
    } else {
        for msg in label_key_errors(&provisioner.to_ascii_lowercase()) {
            errs.push(FieldError::invalid("provisioner", &json!(provisioner), msg));
        }
    }
    for (k, _) in get(obj, &["parameters"]).and_then(Value::as_object).into_iter().flatten() {
        if k.is_empty() {
            errs.push(FieldError::invalid("parameters", &json!(k), "field can not be empty."));
        }
    }
    if let Some(p) = get(obj, &["reclaimPolicy"]).filter(|p| p.as_str().is_some_and(|s| !s.is_empty())) {
        if !["Delete", "Retain"].contains(&p.as_str().unwrap_or("")) {
            errs.push(FieldError::not_supported("reclaimPolicy", p, &["Delete", "Retain"]));
        }
    }
    match get(obj, &["volumeBindingMode"]) {
        None | Some(Value::Null) => errs.push(FieldError::required("volumeBindingMode", "")),
        Some(m) if !["Immediate", "WaitForFirstConsumer"].contains(&m.as_str().unwrap_or("")) => {
            errs.push(FieldError::not_supported("volumeBindingMode", m, &["Immediate", "WaitForFirstConsumer"]))
        }
        Some(_) => {}
    }
}

fn storage_quantity(o: &Value, path: &[&str]) -> Option<i64> {
    get(o, path).and_then(quantity_of).map(|q| q.milli)
}

/// `ValidatePersistentVolumeUpdate`: the volume source and the volume mode are fixed.
/// (Upstream appends a `cmp.Diff` of the two sources to the message; kubeloop does not.)
#[inline(never)]
fn validate_pv_update(old: &Value, new: &Value, errs: &mut Vec<FieldError>) {
    let source = |o: &Value| -> Vec<Option<Value>> { PV_SOURCES.iter().map(|s| get(o, &["spec", s]).cloned()).collect() };
    if source(old) != source(new) {
        errs.push(FieldError::forbidden("spec.persistentvolumesource", "spec.persistentvolumesource is immutable after creation"));
    }
    if get(old, &["spec", "volumeMode"]) != get(new, &["spec", "volumeMode"]) {
        let v = get(new, &["spec", "volumeMode"]).cloned().unwrap_or(Value::Null);
        errs.push(FieldError::invalid("volumeMode", &v, "field is immutable"));
    }
}

/// `ValidatePersistentVolumeClaimUpdate`: the spec is fixed but for `volumeName` (set
/// once) and, for a Bound claim, the storage request; the request may not shrink to or
/// below the capacity in status (`RecoverVolumeExpansionFailure` is on by default).
/// (Upstream appends a `cmp.Diff` of the two specs to the message; kubeloop does not.)
fn validate_pvc_update(old: &Value, new: &Value, errs: &mut Vec<FieldError>) {
    let mut old_spec = old.get("spec").cloned().unwrap_or(json!({}));
    let mut new_spec = new.get("spec").cloned().unwrap_or(json!({}));
    if get_str(old, &["spec", "volumeName"]).unwrap_or("").is_empty() {
        match new_spec.get("volumeName").cloned() {
            Some(v) => crate::foundation::api::set(&mut old_spec, &["volumeName"], v),
            None => {
                if let Some(m) = old_spec.as_object_mut() {
                    m.remove("volumeName");
                }
            }
        }
    }
    // A claim without a class may get one once (the retroactive default class).
    if get(old, &["spec", "storageClassName"]).is_none_or(Value::is_null)
        && crate::foundation::api::annotation(old, "volume.beta.kubernetes.io/storage-class").is_none()
    {
        match new_spec.get("storageClassName").cloned() {
            Some(v) => crate::foundation::api::set(&mut old_spec, &["storageClassName"], v),
            None => {
                if let Some(m) = old_spec.as_object_mut() {
                    m.remove("storageClassName");
                }
            }
        }
    }
    let bound = get_str(new, &["status", "phase"]) == Some("Bound");
    if bound && get(&new_spec, &["resources", "requests"]).is_some() {
        match get(old, &["spec", "resources", "requests", "storage"]).cloned() {
            Some(v) => crate::foundation::api::set(&mut new_spec, &["resources", "requests", "storage"], v),
            None => {
                if let Some(m) = new_spec.get_mut("resources").and_then(|r| r.get_mut("requests")).and_then(Value::as_object_mut) {
                    m.remove("storage");
                }
            }
        }
    }
    if bound && new_spec.get("volumeAttributesClassName").is_some() {
        match old_spec.get("volumeAttributesClassName").cloned() {
            Some(v) => crate::foundation::api::set(&mut new_spec, &["volumeAttributesClassName"], v),
            None => {
                if let Some(m) = new_spec.as_object_mut() {
                    m.remove("volumeAttributesClassName");
                }
            }
        }
    }
    if old_spec != new_spec {
        errs.push(FieldError::forbidden("spec", "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"));
    }
    let old_size = storage_quantity(old, &["spec", "resources", "requests", "storage"]).unwrap_or(0);
    let new_size = storage_quantity(new, &["spec", "resources", "requests", "storage"]).unwrap_or(0);
    let status_size = storage_quantity(old, &["status", "capacity", "storage"]).unwrap_or(0);
    if new_size < old_size && new_size <= status_size {
        errs.push(FieldError::forbidden("spec.resources.requests.storage", "field can not be less than status.capacity"));
    }
    if get(old, &["spec", "volumeMode"]) != get(new, &["spec", "volumeMode"]) {
        let v = get(new, &["spec", "volumeMode"]).cloned().unwrap_or(Value::Null);
        errs.push(FieldError::invalid("volumeMode", &v, "field is immutable"));
    }
}

fn validate_storage_class_update(old: &Value, new: &Value, errs: &mut Vec<FieldError>) {
    let params = |o: &Value| get(o, &["parameters"]).filter(|p| p.as_object().is_some_and(|m| !m.is_empty())).cloned();
    if params(old) != params(new) {
        errs.push(FieldError::forbidden("parameters", "updates to parameters are forbidden."));
    }
    if get(old, &["provisioner"]) != get(new, &["provisioner"]) {
        errs.push(FieldError::forbidden("provisioner", "updates to provisioner are forbidden."));
    }
    if get(old, &["reclaimPolicy"]) != get(new, &["reclaimPolicy"]) {
        errs.push(FieldError::forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."));
    }
    if get(old, &["volumeBindingMode"]) != get(new, &["volumeBindingMode"]) {
        let v = get(new, &["volumeBindingMode"]).cloned().unwrap_or(Value::Null);
        errs.push(FieldError::invalid("volumeBindingMode", &v, "field is immutable"));
    }
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

    fn pod_errors(spec: Value) -> Vec<String> {
        let p = json!({"metadata": {"name": "p", "namespace": "default"}, "spec": spec});
        validate("Pod", true, &p).iter().map(|e| e.to_string()).collect()
    }

    /// `ValidateResourceQuantityValue` -> `ValidateNonnegativeQuantity`
    /// (pkg/apis/core/validation/validation.go), reached from `validateResourceRequirements`
    /// for limits then requests, on containers, init containers and pod-level resources.
    #[test]
    fn negative_quantities_fail_validate_nonnegative_quantity() {
        let e = pod_errors(json!({"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "-8"}}}]}));
        assert_eq!(e, vec!["spec.containers[0].resources.requests[cpu]: Invalid value: \"-8\": must be greater than or equal to 0"]);
        let e = pod_errors(json!({
            "initContainers": [{"name": "init", "image": "i", "resources": {"limits": {"memory": "-1024Mi"}}}],
            "containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": -2}, "requests": {"cpu": "-0.5"}}}],
            "resources": {"requests": {"memory": "-1"}}
        }));
        assert_eq!(
            e,
            vec![
                "spec.initContainers[0].resources.limits[memory]: Invalid value: \"-1Gi\": must be greater than or equal to 0",
                "spec.containers[0].resources.limits[cpu]: Invalid value: \"-2\": must be greater than or equal to 0",
                "spec.containers[0].resources.requests[cpu]: Invalid value: \"-500m\": must be greater than or equal to 0",
                // Upstream still compares the two negative values.
                "spec.containers[0].resources.requests: Invalid value: \"-500m\": must be less than or equal to cpu limit of -2",
                "spec.resources.requests[memory]: Invalid value: \"-1\": must be greater than or equal to 0",
            ]
        );
        // Quantities print as Quantity.String() does, in the request/limit message too.
        let e =
            pod_errors(json!({"containers": [{"name": "c", "image": "i", "resources": {"requests": {"memory": "2048Mi"}, "limits": {"memory": "1024Mi"}}}]}));
        assert_eq!(e, vec!["spec.containers[0].resources.requests: Invalid value: \"2Gi\": must be less than or equal to memory limit of 1Gi"]);
        // Huge but valid quantities are fine (they saturate, they do not wrap negative).
        assert!(
            pod_errors(json!({"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1E"}, "limits": {"cpu": "1e18"}}}]})).is_empty()
        );
        let q = json!({"metadata": {"name": "q", "namespace": "default"}, "spec": {"hard": {"pods": "-1", "cpu": "2"}}});
        let e: Vec<String> = validate("ResourceQuota", true, &q).iter().map(|e| e.to_string()).collect();
        assert_eq!(e, vec!["spec.hard[pods]: Invalid value: \"-1\": must be greater than or equal to 0"]);
    }

    /// `NameIsDNSSubdomain` / `IsDNS1123Subdomain` (util/validation/validation.go): 253
    /// bytes, no per-part limit, and the length and format errors are independent;
    /// `NameIsDNSLabel` (namespaces) and `NameIsDNS1035Label` (services) keep 63.
    #[test]
    fn names_follow_is_dns1123_subdomain_and_label() {
        let cm = |name: &str| -> Vec<String> {
            let o = json!({"metadata": {"name": name, "namespace": "default"}});
            validate("ConfigMap", true, &o).iter().map(|e| e.to_string()).collect()
        };
        assert!(cm(&"a".repeat(64)).is_empty(), "ValidateConfigMapName is NameIsDNSSubdomain");
        assert!(cm(&format!("{}.b", "a".repeat(200))).is_empty());
        let long = "a".repeat(254);
        assert_eq!(cm(&long), vec![format!("metadata.name: Invalid value: {long:?}: must be no more than 253 characters")]);
        let long_bad = format!("-{}", "a".repeat(253));
        let e = cm(&long_bad);
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[0].ends_with("must be no more than 253 characters") && e[1].contains("a lowercase RFC 1123 subdomain"));
        let ns = |name: &str| -> Vec<String> { validate("Namespace", false, &json!({"metadata": {"name": name}})).iter().map(|e| e.to_string()).collect() };
        assert_eq!(ns("a.b"), vec!["metadata.name: Invalid value: \"a.b\": must not contain dots"]);
        assert_eq!(ns(&"a".repeat(64)), vec![format!("metadata.name: Invalid value: {:?}: must be no more than 63 characters", "a".repeat(64))]);
        let svc = json!({"metadata": {"name": "a".repeat(64), "namespace": "default"}, "spec": {"ports": [{"port": 80}]}});
        let e = validate("Service", true, &svc);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].detail, "must be no more than 63 characters");
    }

    /// `ValidateLabels` / `ValidateAnnotations` use the `content` package, whose length
    /// errors say "bytes" (api/validate/content/kube.go), and annotation keys are
    /// checked lower-cased.
    #[test]
    fn labels_use_content_is_label_key_and_value() {
        let o = json!({"metadata": {"name": "c", "namespace": "default", "labels": {"app": "v".repeat(64)}, "annotations": {"Example.COM/Key": "x", "a/b/c": "y"}}});
        let e: Vec<String> = validate("ConfigMap", true, &o).iter().map(|e| e.to_string()).collect();
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[0].starts_with("metadata.labels: Invalid value: \"vvvv") && e[0].ends_with(": must be no more than 63 bytes"), "{e:?}");
        assert!(e[1].starts_with("metadata.annotations: Invalid value: \"a/b/c\": a valid label key must consist"), "{e:?}");
    }

    /// `ValidatePodSpec`: activeDeadlineSeconds outside [1, MaxInt32] gets
    /// `validation.InclusiveRangeError(1, math.MaxInt32)`; `validateProbe` applies
    /// `ValidateNonnegativeField` to each probe count and period, and requires a positive
    /// terminationGracePeriodSeconds; liveness/startup successThreshold must be 1.
    #[test]
    fn active_deadline_and_probe_fields_match_validate_pod_spec_and_validate_probe() {
        let c = |probes: Value| {
            let mut c = json!({"name": "c", "image": "i"});
            for (k, v) in probes.as_object().unwrap() {
                c[k.as_str()] = v.clone();
            }
            c
        };
        assert_eq!(
            pod_errors(json!({"containers": [c(json!({}))], "activeDeadlineSeconds": -5})),
            vec!["spec.activeDeadlineSeconds: Invalid value: -5: must be between 1 and 2147483647, inclusive"]
        );
        assert_eq!(pod_errors(json!({"containers": [c(json!({}))], "activeDeadlineSeconds": 0})).len(), 1);
        assert!(pod_errors(json!({"containers": [c(json!({}))], "activeDeadlineSeconds": 1})).is_empty());
        let probe = json!({"exec": {"command": ["true"]}, "initialDelaySeconds": -1, "timeoutSeconds": -2, "periodSeconds": -3, "successThreshold": -4, "failureThreshold": -5, "terminationGracePeriodSeconds": 0});
        let e = pod_errors(
            json!({"containers": [c(json!({"livenessProbe": probe, "readinessProbe": {"tcpSocket": {"port": 80}, "terminationGracePeriodSeconds": 5}}))]}),
        );
        assert_eq!(
            e,
            vec![
                "spec.containers[0].livenessProbe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0",
                "spec.containers[0].livenessProbe.timeoutSeconds: Invalid value: -2: must be greater than or equal to 0",
                "spec.containers[0].livenessProbe.periodSeconds: Invalid value: -3: must be greater than or equal to 0",
                "spec.containers[0].livenessProbe.successThreshold: Invalid value: -4: must be greater than or equal to 0",
                "spec.containers[0].livenessProbe.failureThreshold: Invalid value: -5: must be greater than or equal to 0",
                "spec.containers[0].livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0",
                "spec.containers[0].livenessProbe.successThreshold: Invalid value: -4: must be 1",
                "spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes",
            ]
        );
        // validateInitContainers: probes only on restartable (sidecar) init containers.
        let init = json!({"name": "init", "image": "i", "startupProbe": {"exec": {"command": ["true"]}, "timeoutSeconds": -1}});
        assert_eq!(
            pod_errors(json!({"initContainers": [init], "containers": [c(json!({}))]})),
            vec!["spec.initContainers[0].startupProbe: Forbidden: may not be set for init containers without restartPolicy=Always"]
        );
        let mut sidecar = init.clone();
        sidecar["restartPolicy"] = json!("Always");
        assert_eq!(
            pod_errors(json!({"initContainers": [sidecar], "containers": [c(json!({}))]})),
            vec!["spec.initContainers[0].startupProbe.timeoutSeconds: Invalid value: -1: must be greater than or equal to 0"]
        );
    }
}
