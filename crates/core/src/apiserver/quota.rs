//! ResourceQuota: the usage evaluators and the admission check, shared with the resource
//! quota controller (which lives among the loops and recomputes `status.used`).
//!
//! Ported from `k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go`
//! (`CheckRequest`, its messages), `k8s.io/apiserver/pkg/quota/v1` (`resources.go`:
//! `Add`, `Mask`, `LessThanOrEqual`, `CalculateUsage`; `generic/evaluator.go`: the
//! object-count evaluator, `Matches`, `CalculateUsageStats`) and
//! `pkg/quota/v1/evaluator/core` (`pods.go`, `services.go`, `persistent_volume_claims.go`,
//! `registry.go` for the legacy object-count names).
//!
//! A quantity keeps its format (decimal or binary suffix) as `resource.Quantity` does, so
//! that sums print the way the API server writes them (`128Mi` + `128Mi` is `256Mi`, and a
//! zero takes the format of what is added to it).

use crate::foundation::api::{get, get_array, get_i64, get_str, rid, ResourceId, ResourceInfo, RESOURCES};
use crate::foundation::sim::{parse_rfc3339, Millis};
use crate::foundation::sort::{CollectTree, Sort};
use crate::foundation::value::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// A quantity in milli-units with its format (`resource.Quantity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Amount {
    pub milli: i64,
    /// `BinarySI` (`Ki` ... `Ei` suffixes), else `DecimalSI`.
    pub binary: bool,
}

impl Amount {
    pub fn count(n: i64) -> Self {
        Amount { milli: n.saturating_mul(1000), binary: false }
    }
    pub fn parse(v: &Value) -> Option<Self> {
        let text = match v {
            Value::String(s) => s.trim().to_string(),
            Value::Number(n) => n.to_string(),
            _ => return None,
        };
        let q = crate::foundation::quantity::parse(&text).ok()?;
        Some(Amount { milli: q.milli, binary: q.binary })
    }
    /// `Quantity.Add`: a zero takes the other's format.
    fn add(self, other: Amount) -> Amount {
        let binary = if self.milli == 0 { other.binary } else { self.binary };
        Amount { milli: self.milli.saturating_add(other.milli), binary }
    }
    /// `Quantity.String()`: the canonical form.
    pub fn render(&self) -> String {
        let m = self.milli;
        if self.binary && m % 1000 == 0 && (m / 1000).unsigned_abs() >= 1024 {
            return crate::foundation::quantity::format_bytes(m);
        }
        crate::foundation::quantity::canonical(&format!("{m}m"))
    }
}

/// A `ResourceList`, ordered by name.
pub type ResourceList = BTreeMap<String, Amount>;

/// The resource list in a JSON map (`spec.hard`, `status.used`); unparseable values are skipped.
pub fn parse_list(v: Option<&Value>) -> ResourceList {
    v.and_then(Value::as_object).into_iter().flatten().filter_map(|(k, q)| Amount::parse(q).map(|a| (k.to_string(), a))).collect_tree()
}

/// A resource list as the API server serialises it.
pub fn list_json(l: &ResourceList) -> Value {
    let m: Map = l.iter().map(|(k, v)| (k.as_str(), json!(v.render()))).collect();
    Value::Object(m)
}

/// `quota.Add`.
pub fn add(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = a.clone();
    for (k, v) in b {
        let slot = out.entry(k.clone()).or_default();
        *slot = slot.add(*v);
    }
    out
}

/// `quota.Mask`: only the named resources.
pub fn mask<'a>(l: &ResourceList, names: impl IntoIterator<Item = &'a String>) -> ResourceList {
    let names: BTreeSet<&String> = names.into_iter().collect_tree();
    l.iter().filter(|(k, _)| names.contains(k)).map(|(k, v)| (k.clone(), *v)).collect_tree()
}

/// `quota.Equals`: the same names with the same values.
pub fn equals(a: &ResourceList, b: &ResourceList) -> bool {
    a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|o| o.milli == v.milli))
}

/// `quota.LessThanOrEqual`: whether every value of `a` named in `b` is at most `b`'s, and
/// the names that are not.
fn less_than_or_equal(a: &ResourceList, b: &ResourceList) -> (bool, Vec<String>) {
    let exceeded: Vec<String> = b.iter().filter(|(k, v)| a.get(*k).is_some_and(|o| o.milli > v.milli)).map(|(k, _)| k.clone()).collect();
    (exceeded.is_empty(), exceeded)
}

/// `prettyPrint`: `pods=1,requests.cpu=500m`, sorted by name.
pub fn pretty_print(l: &ResourceList) -> String {
    l.iter().map(|(k, v)| format!("{k}={}", v.render())).collect::<Vec<_>>().join(",")
}

// ---- scopes --------------------------------------------------------------------------

/// A `ScopedResourceSelectorRequirement` (a `spec.scopes` entry is one with `Exists`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub name: String,
    pub operator: String,
    pub values: Vec<String>,
}

/// `getScopeSelectorsFromQuota`: `spec.scopes`, then `spec.scopeSelector.matchExpressions`.
pub fn scope_selectors(quota: &Value) -> Vec<Scope> {
    let mut out: Vec<Scope> = get_array(quota, &["spec", "scopes"])
        .iter()
        .filter_map(Value::as_str)
        .map(|s| Scope { name: s.to_string(), operator: "Exists".into(), values: vec![] })
        .collect();
    for e in get_array(quota, &["spec", "scopeSelector", "matchExpressions"]) {
        out.push(Scope {
            name: get_str(e, &["scopeName"]).unwrap_or("").to_string(),
            operator: get_str(e, &["operator"]).unwrap_or("").to_string(),
            values: get_array(e, &["values"]).iter().filter_map(Value::as_str).map(str::to_string).collect(),
        });
    }
    out
}

/// A scope selector against the one label a scope exposes (`ScopedResourceSelectorRequirementsAsSelector`).
fn selector_matches(s: &Scope, value: Option<&str>) -> bool {
    match s.operator.as_str() {
        "In" => value.is_some_and(|v| s.values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !s.values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        _ => false,
    }
}

// ---- evaluators ----------------------------------------------------------------------

/// The resource names quota tracks for pods (`podResources`).
const POD_RESOURCES: &[&str] = &[
    "count/pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];
/// Quota on these obliges every container to state them (`validationSet`).
const VALIDATION_SET: &[&str] = &["cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"];
const SERVICE_RESOURCES: &[&str] = &["count/services", "services", "services.loadbalancers", "services.nodeports"];
const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";

/// What measures a resource's usage (`quota.Evaluator`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evaluator {
    Pod,
    Service,
    PersistentVolumeClaim,
    /// `generic.NewObjectCountEvaluator`: `count/<resource>[.<group>]` and, for the
    /// kinds quota counted before `count/`, their legacy name.
    ObjectCount {
        count: String,
        alias: Option<&'static str>,
    },
}

/// `ObjectCountQuotaResourceNameFor`.
pub fn object_count_name(res: &ResourceInfo) -> String {
    if res.group.is_empty() {
        format!("count/{}", res.plural)
    } else {
        format!("count/{}.{}", res.plural, res.group)
    }
}

/// The evaluator for a resource; none for what quota ignores (cluster-scoped kinds, the
/// metrics views, Events as the admission configuration's `ignoredResources`).
pub fn evaluator_for(r: ResourceId) -> Option<Evaluator> {
    let res = RESOURCES.get(r)?;
    if !res.namespaced || crate::foundation::api::is_metrics(r) || r == rid::EVENT || r == rid::HPA_V1 {
        return None;
    }
    Some(match r {
        rid::POD => Evaluator::Pod,
        rid::SERVICE => Evaluator::Service,
        rid::PVC => Evaluator::PersistentVolumeClaim,
        _ => {
            let alias = match res.plural {
                "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" if res.group.is_empty() => Some(res.plural),
                _ => None,
            };
            Evaluator::ObjectCount { count: object_count_name(res), alias }
        }
    })
}

/// Every resource whose evaluator tracks one of `names`, with that evaluator.
pub fn evaluators_for(names: &[String]) -> Vec<(ResourceId, Evaluator)> {
    (0..RESOURCES.len()).filter_map(|r| evaluator_for(r).map(|e| (r, e))).filter(|(_, e)| !e.matching_resources(names).is_empty()).collect()
}

fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

impl Evaluator {
    /// `Handles`: which operations can change this resource's usage.
    pub fn handles(&self, operation: &str, subresource: &str) -> bool {
        match self {
            Evaluator::Pod => subresource.is_empty() && operation == "CREATE",
            Evaluator::Service | Evaluator::PersistentVolumeClaim => subresource.is_empty() && (operation == "CREATE" || operation == "UPDATE"),
            Evaluator::ObjectCount { .. } => subresource.is_empty() && operation == "CREATE",
        }
    }

    /// `MatchingResources`: the names among `input` this evaluator measures.
    pub fn matching_resources(&self, input: &[String]) -> Vec<String> {
        input
            .iter()
            .filter(|n| match self {
                Evaluator::Pod => {
                    POD_RESOURCES.contains(&n.as_str())
                        || n.starts_with("hugepages-")
                        || n.starts_with("requests.hugepages-")
                        // Extended resources are quota'd as `requests.<name>` only.
                        || (n.starts_with("requests.") && !is_native(n.trim_start_matches("requests.")))
                }
                Evaluator::Service => SERVICE_RESOURCES.contains(&n.as_str()),
                Evaluator::PersistentVolumeClaim => {
                    ["count/persistentvolumeclaims", "persistentvolumeclaims", "requests.storage"].contains(&n.as_str())
                        || n.ends_with(&format!("{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"))
                        || n.ends_with(&format!("{STORAGE_CLASS_SUFFIX}requests.storage"))
                }
                Evaluator::ObjectCount { count, alias } => n.as_str() == count || Some(n.as_str()) == *alias,
            })
            .cloned()
            .collect()
    }

    /// The scope functions: `podMatchesScopeFunc`, `pvcMatchesScopeFunc`, and
    /// `MatchesNoScopeFunc` (nothing matches a scope) for the rest.
    pub fn matches_scope(&self, s: &Scope, obj: &Value) -> bool {
        match self {
            Evaluator::Pod => match s.name.as_str() {
                "Terminating" => is_terminating(obj),
                "NotTerminating" => !is_terminating(obj),
                "BestEffort" => is_best_effort(obj),
                "NotBestEffort" => !is_best_effort(obj),
                "PriorityClass" => {
                    let class = get_str(obj, &["spec", "priorityClassName"]).filter(|c| !c.is_empty());
                    if s.operator == "Exists" {
                        class.is_some()
                    } else {
                        selector_matches(s, class)
                    }
                }
                "CrossNamespacePodAffinity" => uses_cross_namespace_affinity(obj),
                _ => false,
            },
            Evaluator::PersistentVolumeClaim if s.name == "VolumeAttributesClass" => {
                let names: BTreeSet<&str> = [
                    get_str(obj, &["spec", "volumeAttributesClassName"]),
                    get_str(obj, &["status", "currentVolumeAttributesClassName"]),
                    get_str(obj, &["status", "modifyVolumeStatus", "targetVolumeAttributesClassName"]),
                ]
                .into_iter()
                .flatten()
                .filter(|n| !n.is_empty())
                .collect_tree();
                if s.operator == "Exists" {
                    return !names.is_empty();
                }
                if names.is_empty() {
                    return selector_matches(s, None);
                }
                names.iter().any(|n| selector_matches(s, Some(n)))
            }
            _ => false,
        }
    }

    /// `generic.Matches`: the quota limits one of this evaluator's resources and every
    /// one of its scopes matches the object.
    pub fn matches(&self, quota: &Value, obj: &Value) -> bool {
        let hard: Vec<String> = parse_list(get(quota, &["status", "hard"])).into_keys().collect();
        !self.matching_resources(&hard).is_empty() && scope_selectors(quota).iter().all(|s| self.matches_scope(s, obj))
    }

    /// `Usage`: what one object uses.
    pub fn usage(&self, obj: &Value, now: Millis) -> ResourceList {
        let mut out = ResourceList::new();
        match self {
            Evaluator::Pod => {
                // The object count covers every stored pod; compute resources only those
                // that have not ended (`QuotaV1Pod`).
                out.insert("count/pods".into(), Amount::count(1));
                if quota_v1_pod(obj, now) {
                    out = add(&out, &compute_usage(&pod_resources(obj, "requests"), &pod_resources(obj, "limits")));
                }
            }
            Evaluator::Service => {
                let ports = get_array(obj, &["spec", "ports"]);
                out.insert("count/services".into(), Amount::count(1));
                out.insert("services".into(), Amount::count(1));
                out.insert("services.loadbalancers".into(), Amount::default());
                out.insert("services.nodeports".into(), Amount::default());
                match get_str(obj, &["spec", "type"]) {
                    Some("NodePort") => {
                        out.insert("services.nodeports".into(), Amount::count(ports.len() as i64));
                    }
                    Some("LoadBalancer") => {
                        let n = if crate::foundation::api::get_bool(obj, &["spec", "allocateLoadBalancerNodePorts"]) == Some(false) {
                            ports.iter().filter(|p| get_i64(p, &["nodePort"]).unwrap_or(0) != 0).count()
                        } else {
                            ports.len()
                        };
                        out.insert("services.nodeports".into(), Amount::count(n as i64));
                        out.insert("services.loadbalancers".into(), Amount::count(1));
                    }
                    _ => {}
                }
            }
            Evaluator::PersistentVolumeClaim => {
                out.insert("persistentvolumeclaims".into(), Amount::count(1));
                out.insert("count/persistentvolumeclaims".into(), Amount::count(1));
                let class = get_str(obj, &["spec", "storageClassName"])
                    .or_else(|| crate::foundation::api::annotation(obj, "volume.beta.kubernetes.io/storage-class"))
                    .unwrap_or("");
                if !class.is_empty() {
                    out.insert(format!("{class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"), Amount::count(1));
                }
                if let Some(storage) = pvc_storage(obj) {
                    out.insert("requests.storage".into(), storage);
                    if !class.is_empty() {
                        out.insert(format!("{class}{STORAGE_CLASS_SUFFIX}requests.storage"), storage);
                    }
                }
            }
            Evaluator::ObjectCount { count, alias } => {
                out.insert(count.clone(), Amount::count(1));
                if let Some(a) = alias {
                    out.insert(a.to_string(), Amount::count(1));
                }
            }
        }
        out
    }

    /// `Constraints`: what the object must state for a quota on `required`. Only pods have
    /// any: quota on cpu or memory obliges each container to request (or limit) it.
    pub fn constraints(&self, required: &[String], obj: &Value) -> Result<(), String> {
        if *self != Evaluator::Pod {
            return Ok(());
        }
        let required: BTreeSet<&str> = required.iter().map(String::as_str).filter(|r| VALIDATION_SET.contains(r)).collect_tree();
        let mut missing: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for list in ["containers", "initContainers"] {
            for c in get_array(obj, &["spec", list]) {
                let have = compute_usage(&parse_list(get(c, &["resources", "requests"])), &parse_list(get(c, &["resources", "limits"])));
                for r in &required {
                    if !have.contains_key(*r) {
                        missing.entry(r).or_default().insert(get_str(c, &["name"]).unwrap_or("").to_string());
                    }
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let parts: Vec<String> = missing.iter().map(|(r, names)| format!("{r} for: {}", names.iter().cloned().collect::<Vec<_>>().join(","))).collect();
        Err(format!("must specify {}", parts.join("; ")))
    }
}

/// `podComputeUsageHelper`.
fn compute_usage(requests: &ResourceList, limits: &ResourceList) -> ResourceList {
    let mut out = ResourceList::new();
    out.insert("pods".into(), Amount::count(1));
    for r in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(q) = requests.get(r) {
            out.insert(r.to_string(), *q);
            out.insert(format!("requests.{r}"), *q);
        }
        if let Some(q) = limits.get(r) {
            out.insert(format!("limits.{r}"), *q);
        }
    }
    for (k, q) in requests {
        if k.starts_with("hugepages-") {
            out.insert(k.clone(), *q);
            out.insert(format!("requests.{k}"), *q);
        } else if !is_native(k) {
            out.insert(format!("requests.{k}"), *q);
        }
    }
    out
}

/// `resourcehelper.PodRequests` / `PodLimits`: the containers' sum, at least each init
/// container's (plus the sidecars started before it), with sidecars adding to the sum,
/// plus the pod's overhead.
pub fn pod_resources(pod: &Value, field: &str) -> ResourceList {
    let mut sum = ResourceList::new();
    for c in get_array(pod, &["spec", "containers"]) {
        sum = add(&sum, &parse_list(get(c, &["resources", field])));
    }
    let mut sidecars = ResourceList::new();
    let mut init_max = ResourceList::new();
    for c in get_array(pod, &["spec", "initContainers"]) {
        let own = parse_list(get(c, &["resources", field]));
        let need = if get_str(c, &["restartPolicy"]) == Some("Always") {
            sum = add(&sum, &own);
            sidecars = add(&sidecars, &own);
            sidecars.clone()
        } else {
            add(&own, &sidecars)
        };
        for (k, v) in need {
            let slot = init_max.entry(k).or_insert(v);
            if v.milli > slot.milli {
                *slot = v;
            }
        }
    }
    for (k, v) in init_max {
        let slot = sum.entry(k).or_insert(v);
        if v.milli > slot.milli {
            *slot = v;
        }
    }
    add(&sum, &parse_list(get(pod, &["spec", "overhead"])))
}

/// `QuotaV1Pod`: terminal pods, and pods whose deletion is past its grace period, are not
/// charged compute resources.
pub fn quota_v1_pod(pod: &Value, now: Millis) -> bool {
    if matches!(get_str(pod, &["status", "phase"]), Some("Succeeded" | "Failed")) {
        return false;
    }
    if let (Some(ts), Some(grace)) =
        (get_str(pod, &["metadata", "deletionTimestamp"]).and_then(parse_rfc3339), get_i64(pod, &["metadata", "deletionGracePeriodSeconds"]))
    {
        if now > ts.saturating_add(grace.saturating_mul(1000) as Millis) {
            return false;
        }
    }
    true
}

fn is_terminating(pod: &Value) -> bool {
    get_i64(pod, &["spec", "activeDeadlineSeconds"]).is_some_and(|d| d >= 0)
}

fn is_best_effort(pod: &Value) -> bool {
    crate::apiserver::defaults::qos_class(get(pod, &["spec"]).unwrap_or(&Value::Null)) == "BestEffort"
}

fn uses_cross_namespace_affinity(pod: &Value) -> bool {
    let cross = |t: &Value| !get_array(t, &["namespaces"]).is_empty() || get(t, &["namespaceSelector"]).is_some_and(|s| !s.is_null());
    ["podAffinity", "podAntiAffinity"].iter().any(|a| {
        get_array(pod, &["spec", "affinity", a, "requiredDuringSchedulingIgnoredDuringExecution"]).iter().any(cross)
            || get_array(pod, &["spec", "affinity", a, "preferredDuringSchedulingIgnoredDuringExecution"])
                .iter()
                .any(|w| get(w, &["podAffinityTerm"]).is_some_and(cross))
    })
}

/// A claim's storage: its request, or what was allocated when that is more, rounded up to
/// whole bytes.
fn pvc_storage(pvc: &Value) -> Option<Amount> {
    let round = |a: Amount| Amount { milli: a.milli.div_euclid(1000).saturating_add(i64::from(a.milli.rem_euclid(1000) != 0)).saturating_mul(1000), ..a };
    let requested = get(pvc, &["spec", "resources", "requests", "storage"]).and_then(Amount::parse).map(round)?;
    match get(pvc, &["status", "allocatedResources", "storage"]).and_then(Amount::parse) {
        Some(a) if a.milli > requested.milli => Some(round(a)),
        _ => Some(requested),
    }
}

// ---- admission -----------------------------------------------------------------------

/// What the admission check decided for one request.
#[derive(Debug, Default)]
pub struct Charge {
    /// The quotas whose `status.used` the request raises, with their new usage.
    pub charged: Vec<(usize, ResourceList)>,
}

/// `CheckRequest`: whether the object fits every quota of its namespace that matches it.
/// On success, the new usage of each quota it is charged to; on failure, the message the
/// API server wraps in a 403.
pub fn check_request(quotas: &[&Value], ev: &Evaluator, operation: &str, obj: &Value, old: Option<&Value>, now: Millis) -> Result<Charge, String> {
    let mut interesting = Vec::new();
    for (i, q) in quotas.iter().enumerate() {
        if !ev.matches(q, obj) {
            continue;
        }
        let name = crate::foundation::api::name(q);
        let hard: Vec<String> = parse_list(get(q, &["status", "hard"])).into_keys().collect();
        let restricted = ev.matching_resources(&hard);
        ev.constraints(&restricted, obj).map_err(|e| format!("failed quota: {name}: {e}"))?;
        let used = get(q, &["status", "used"]).and_then(Value::as_object);
        if restricted.iter().any(|r| used.is_none_or(|u| !u.contains_key(r.as_str()))) {
            let mut names = restricted.clone();
            names.sort_stable();
            return Err(format!("status unknown for quota: {name}, resources: {}", names.join(",")));
        }
        interesting.push(i);
    }
    if interesting.is_empty() {
        return Ok(Charge::default());
    }
    let input = ev.usage(obj, now);
    let negative: Vec<&String> = input.iter().filter(|(_, v)| v.milli < 0).map(|(k, _)| k).collect();
    if !negative.is_empty() {
        let names: Vec<&str> = negative.iter().map(|s| s.as_str()).collect();
        return Err(format!("quota usage is negative for resource(s): {}", names.join(",")));
    }
    let mut deltas: BTreeMap<usize, ResourceList> = interesting.iter().map(|i| (*i, input.clone())).collect_tree();
    if operation == "UPDATE" {
        let Some(prev) = old else { return Err("unable to get previous usage since prior version of object was not found".into()) };
        if !crate::foundation::api::resource_version(prev).is_empty() {
            let prev_usage = ev.usage(prev, now);
            // `SubtractWithNonNegativeResult`.
            let delta: ResourceList =
                input.iter().map(|(k, v)| (k.clone(), Amount { milli: (v.milli - prev_usage.get(k).map_or(0, |p| p.milli)).max(0), ..*v })).collect();
            for i in &interesting {
                if ev.matches(quotas[*i], prev) {
                    deltas.insert(*i, delta.clone());
                }
            }
        }
    }
    for d in deltas.values_mut() {
        d.retain(|_, v| v.milli != 0);
    }
    deltas.retain(|_, d| !d.is_empty());
    let mut charge = Charge::default();
    for (i, delta) in deltas {
        let q = quotas[i];
        let hard = parse_list(get(q, &["status", "hard"]));
        let used = parse_list(get(q, &["status", "used"]));
        let requested = mask(&delta, hard.keys());
        let new_usage = add(&used, &requested);
        let masked = mask(&new_usage, requested.keys());
        let (allowed, exceeded) = less_than_or_equal(&masked, &hard);
        if !allowed {
            return Err(format!(
                "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                crate::foundation::api::name(q),
                pretty_print(&mask(&requested, &exceeded)),
                pretty_print(&mask(&used, &exceeded)),
                pretty_print(&mask(&hard, &exceeded))
            ));
        }
        charge.charged.push((i, new_usage));
    }
    Ok(charge)
}

// ---- the controller's computation ----------------------------------------------------

/// `quota.CalculateUsage`: what the objects of a namespace use of a quota's hard
/// resources. `objects` lists a resource's objects in the quota's namespace.
pub fn calculate_usage<'a>(quota: &Value, objects: &dyn Fn(ResourceId) -> Vec<&'a Value>, now: Millis) -> ResourceList {
    let hard: Vec<String> = parse_list(get(quota, &["spec", "hard"])).into_keys().collect();
    let scopes = scope_selectors(quota);
    let evaluators = evaluators_for(&hard);
    let matched: BTreeSet<String> = evaluators.iter().flat_map(|(_, e)| e.matching_resources(&hard)).collect_tree();
    let mut usage = ResourceList::new();
    for (r, ev) in &evaluators {
        // `CalculateUsageStats`: each tracked resource starts at zero.
        let mut stats: ResourceList = ev.matching_resources(&hard).into_iter().map(|n| (n, Amount::default())).collect();
        for o in objects(*r) {
            if scopes.iter().all(|s| ev.matches_scope(s, o)) {
                stats = add(&stats, &ev.usage(o, now));
            }
        }
        usage = add(&usage, &stats);
    }
    mask(&usage, &matched)
}

/// The status the resource quota controller writes (`syncResourceQuota`): `hard` mirrors
/// the spec, `used` is the observed usage of the hard resources, earlier observations
/// kept for what could not be measured. `None` when nothing changed.
pub fn quota_status(quota: &Value, observed: &ResourceList) -> Option<Value> {
    let spec_hard = parse_list(get(quota, &["spec", "hard"]));
    let status_hard = get(quota, &["status", "hard"]);
    let status_used = get(quota, &["status", "used"]);
    let mut dirty = status_hard.is_none() || status_used.is_none() || !equals(&parse_list(status_hard), &spec_hard);
    let mut used = parse_list(status_used);
    for (k, v) in observed {
        used.insert(k.clone(), *v);
    }
    let used = mask(&used, spec_hard.keys());
    dirty = dirty || !equals(&used, &parse_list(status_used));
    // A hard limit written another way (`1000` for `1k`) is mirrored as the server prints it.
    let hard_json = list_json(&spec_hard);
    dirty = dirty || status_hard != Some(&hard_json);
    // Empty lists are not serialised (`omitempty`).
    dirty.then(|| {
        let mut st = Map::new();
        if !spec_hard.is_empty() {
            st.insert("hard", hard_json);
        }
        if !used.is_empty() {
            st.insert("used", list_json(&used));
        }
        Value::Object(st)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quota(hard: Value, used: Value) -> Value {
        json!({"metadata": {"name": "compute", "namespace": "dev", "resourceVersion": "5"}, "spec": {"hard": hard.clone()}, "status": {"hard": hard, "used": used}})
    }

    fn pod(containers: Value) -> Value {
        json!({"metadata": {"name": "web", "namespace": "dev"}, "spec": {"containers": containers}, "status": {"phase": "Pending"}})
    }

    #[test]
    fn sums_keep_the_format_of_what_was_added_to_zero() {
        let a = parse_list(Some(&json!({"m": "0", "c": "250m"})));
        let b = parse_list(Some(&json!({"m": "128Mi", "c": "750m"})));
        let s = add(&add(&a, &b), &b);
        assert_eq!(list_json(&s), json!({"c": "1750m", "m": "256Mi"}));
        assert_eq!(Amount::parse(&json!("1.5Gi")).unwrap().render(), "1536Mi");
        assert_eq!(Amount::parse(&json!("2000")).unwrap().render(), "2k");
        assert_eq!(Amount::parse(&json!("1000m")).unwrap().render(), "1");
    }

    #[test]
    fn a_pod_over_the_pod_count_is_refused_with_upstreams_message() {
        let q = quota(json!({"pods": "2"}), json!({"pods": "2"}));
        let p = pod(json!([{"name": "nginx"}]));
        let e = check_request(&[&q], &Evaluator::Pod, "CREATE", &p, None, 0).unwrap_err();
        assert_eq!(e, "exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2");
        let q = quota(json!({"pods": "3"}), json!({"pods": "2"}));
        let c = check_request(&[&q], &Evaluator::Pod, "CREATE", &p, None, 0).unwrap();
        assert_eq!(list_json(&c.charged[0].1), json!({"pods": "3"}));
    }

    #[test]
    fn compute_quota_needs_every_container_to_state_its_resources() {
        let q = quota(
            json!({"limits.cpu": "2", "limits.memory": "2Gi", "requests.cpu": "1"}),
            json!({"limits.cpu": "0", "limits.memory": "0", "requests.cpu": "0"}),
        );
        let p = pod(json!([{"name": "nginx", "resources": {"requests": {"cpu": "100m"}}}, {"name": "app", "resources": {}}]));
        let e = check_request(&[&q], &Evaluator::Pod, "CREATE", &p, None, 0).unwrap_err();
        assert_eq!(e, "failed quota: compute: must specify limits.cpu for: app,nginx; limits.memory for: app,nginx; requests.cpu for: app");
    }

    #[test]
    fn exceeding_compute_quota_lists_only_the_exceeded_resources() {
        let q = quota(json!({"requests.cpu": "1", "requests.memory": "1Gi"}), json!({"requests.cpu": "800m", "requests.memory": "512Mi"}));
        let p = pod(json!([{"name": "nginx", "resources": {"requests": {"cpu": "300m", "memory": "256Mi"}}}]));
        let e = check_request(&[&q], &Evaluator::Pod, "CREATE", &p, None, 0).unwrap_err();
        assert_eq!(e, "exceeded quota: compute, requested: requests.cpu=300m, used: requests.cpu=800m, limited: requests.cpu=1");
        let ok = pod(json!([{"name": "nginx", "resources": {"requests": {"cpu": "200m", "memory": "256Mi"}}}]));
        let c = check_request(&[&q], &Evaluator::Pod, "CREATE", &ok, None, 0).unwrap();
        assert_eq!(list_json(&c.charged[0].1), json!({"requests.cpu": "1", "requests.memory": "768Mi"}));
    }

    #[test]
    fn a_quota_without_usage_yet_refuses_what_it_would_count() {
        let q = json!({"metadata": {"name": "fresh"}, "spec": {"hard": {"pods": "1"}}, "status": {"hard": {"pods": "1"}}});
        let e = check_request(&[&q], &Evaluator::Pod, "CREATE", &pod(json!([{"name": "c"}])), None, 0).unwrap_err();
        assert_eq!(e, "status unknown for quota: fresh, resources: pods");
    }

    #[test]
    fn scopes_decide_which_pods_a_quota_counts() {
        let mut q = quota(json!({"pods": "1"}), json!({"pods": "1"}));
        q["spec"]["scopes"] = json!(["BestEffort"]);
        let burstable = pod(json!([{"name": "c", "resources": {"requests": {"cpu": "1"}}}]));
        assert!(check_request(&[&q], &Evaluator::Pod, "CREATE", &burstable, None, 0).unwrap().charged.is_empty());
        assert!(check_request(&[&q], &Evaluator::Pod, "CREATE", &pod(json!([{"name": "c"}])), None, 0).is_err());
        let mut pc = quota(json!({"pods": "5"}), json!({"pods": "0"}));
        pc["spec"]["scopeSelector"] = json!({"matchExpressions": [{"operator": "In", "scopeName": "PriorityClass", "values": ["high"]}]});
        let mut high = pod(json!([{"name": "c"}]));
        assert!(!Evaluator::Pod.matches(&pc, &high));
        high["spec"]["priorityClassName"] = json!("high");
        assert!(Evaluator::Pod.matches(&pc, &high));
        let mut t = pod(json!([{"name": "c"}]));
        t["spec"]["activeDeadlineSeconds"] = json!(30);
        let s = Scope { name: "Terminating".into(), operator: "Exists".into(), values: vec![] };
        assert!(Evaluator::Pod.matches_scope(&s, &t));
        assert!(!Evaluator::Pod.matches_scope(&s, &high));
        // Services match no scope: a scoped quota never counts them.
        assert!(!Evaluator::Service.matches(&q, &json!({"spec": {}})));
    }

    #[test]
    fn terminal_and_expired_pods_keep_only_their_object_count() {
        let mut p = pod(json!([{"name": "c", "resources": {"requests": {"cpu": "1"}}}]));
        assert_eq!(Evaluator::Pod.usage(&p, 0).get("requests.cpu").map(|a| a.milli), Some(1000));
        p["status"]["phase"] = json!("Succeeded");
        let u = Evaluator::Pod.usage(&p, 0);
        assert_eq!(u.keys().collect::<Vec<_>>(), vec!["count/pods"]);
        let mut d = pod(json!([{"name": "c"}]));
        d["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:30Z");
        d["metadata"]["deletionGracePeriodSeconds"] = json!(30);
        assert!(quota_v1_pod(&d, 59_000));
        assert!(!quota_v1_pod(&d, 60_001));
    }

    #[test]
    fn services_claims_and_object_counts_measure_their_own_names() {
        let lb = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}});
        assert_eq!(
            list_json(&Evaluator::Service.usage(&lb, 0)),
            json!({"count/services": "1", "services": "1", "services.loadbalancers": "1", "services.nodeports": "2"})
        );
        let pvc = json!({"spec": {"storageClassName": "gold", "resources": {"requests": {"storage": "1.5Gi"}}}});
        assert_eq!(
            list_json(&Evaluator::PersistentVolumeClaim.usage(&pvc, 0)),
            json!({"count/persistentvolumeclaims": "1", "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
                "gold.storageclass.storage.k8s.io/requests.storage": "1536Mi", "persistentvolumeclaims": "1", "requests.storage": "1536Mi"})
        );
        let cm = evaluator_for(rid::CONFIGMAP).unwrap();
        assert_eq!(list_json(&cm.usage(&json!({}), 0)), json!({"configmaps": "1", "count/configmaps": "1"}));
        let dep = evaluator_for(rid::DEPLOYMENT).unwrap();
        assert_eq!(dep.matching_resources(&["count/deployments.apps".into(), "pods".into()]), vec!["count/deployments.apps".to_string()]);
        assert!(evaluator_for(rid::EVENT).is_none() && evaluator_for(rid::NODE).is_none());
    }

    #[test]
    fn updates_are_charged_only_their_growth() {
        let q = quota(json!({"services.nodeports": "2"}), json!({"services.nodeports": "1"}));
        let old = json!({"metadata": {"resourceVersion": "3"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        let new = json!({"metadata": {"resourceVersion": "3"}, "spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 81}]}});
        let c = check_request(&[&q], &Evaluator::Service, "UPDATE", &new, Some(&old), 0).unwrap();
        assert_eq!(list_json(&c.charged[0].1), json!({"services.nodeports": "2"}));
        let three = json!({"metadata": {"resourceVersion": "3"}, "spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 81}, {"port": 82}]}});
        let e = check_request(&[&q], &Evaluator::Service, "UPDATE", &three, Some(&old), 0).unwrap_err();
        assert_eq!(e, "exceeded quota: compute, requested: services.nodeports=2, used: services.nodeports=1, limited: services.nodeports=2");
    }

    #[test]
    fn the_controller_mirrors_hard_and_counts_what_matches() {
        let q = json!({"metadata": {"name": "q", "namespace": "dev"}, "spec": {"hard": {"pods": "10", "requests.memory": "1Gi", "count/configmaps": "5"}}});
        let pods = [pod(json!([{"name": "a", "resources": {"requests": {"memory": "128Mi"}}}])), {
            let mut p = pod(json!([{"name": "b", "resources": {"requests": {"memory": "128Mi"}}}]));
            p["status"]["phase"] = json!("Failed");
            p
        }];
        let cms = [json!({}), json!({})];
        let objects = |r: ResourceId| -> Vec<&Value> {
            match r {
                rid::POD => pods.iter().collect(),
                rid::CONFIGMAP => cms.iter().collect(),
                _ => vec![],
            }
        };
        let used = calculate_usage(&q, &objects, 0);
        let status = quota_status(&q, &used).unwrap();
        assert_eq!(
            status,
            json!({"hard": {"count/configmaps": "5", "pods": "10", "requests.memory": "1Gi"}, "used": {"count/configmaps": "2", "pods": "1", "requests.memory": "128Mi"}})
        );
        let mut synced = q.clone();
        synced["status"] = status;
        assert!(quota_status(&synced, &used).is_none());
    }
}
