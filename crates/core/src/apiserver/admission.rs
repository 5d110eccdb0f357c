//! Admission: the default-on plugins that matter for workloads, ValidatingAdmissionPolicy
//! with real CEL, and admission webhooks whose backends are simulated.
//!
//! Plugins follow `plugin/pkg/admission/{serviceaccount,defaulttolerationseconds,priority,
//! limitranger}` and `k8s.io/apiserver/pkg/admission/plugin/{namespace/lifecycle,
//! policy/validating,webhook}`. CEL is the `cel` crate with the Kubernetes libraries of
//! `kube-cel`.
//!
//! A webhook's backend is the Service its `clientConfig.service` names. The call fails as
//! a real one does when that Service is missing (`service "x" not found`), has no ready
//! endpoints (`connect: connection refused`) or is taken down by a `webhookDown` fault
//! (a hung backend: `context deadline exceeded`); `failurePolicy` then decides. What an
//! available backend answers is declared on the configuration:
//! `kubeloop.dev/allow-if` holds a CEL expression over `object`, `oldObject` and
//! `request` (default `true`), and `kubeloop.dev/deny-message` the message of a denial.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::Store;
use crate::foundation::api::{get, get_array, get_str, ResourceInfo};
use crate::foundation::labels::selector_matches;
use crate::foundation::sort::{CollectTree, Sort};
use crate::foundation::status::Status;
use crate::foundation::value::{json, Value};
use std::collections::BTreeSet;

/// What admission sees of a request (`admission.Attributes`).
pub struct Request<'a> {
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: &'a str,
    pub resource: &'a ResourceInfo,
    pub subresource: &'a str,
    pub namespace: &'a str,
    /// Request name, else `metadata.name`, else `generateName` (`admission/errors.go`).
    pub name: String,
    pub user: &'a UserInfo,
    pub object: Option<&'a Value>,
    pub old_object: Option<&'a Value>,
    pub dry_run: bool,
}

impl Request<'_> {
    fn cel_request(&self) -> Value {
        json!({
            "operation": self.operation,
            "name": self.name,
            "namespace": self.namespace,
            "resource": {"group": self.resource.group, "version": self.resource.version, "resource": self.resource.plural},
            "subResource": self.subresource,
            "kind": {"group": self.resource.group, "version": self.resource.version, "kind": self.resource.kind},
            "userInfo": {"username": self.user.name, "groups": self.user.groups},
            "dryRun": self.dry_run,
        })
    }
}

/// The CEL engine behind admission (see [`crate::apiserver::cel`]).
pub struct CelCache {
    engine: Box<dyn crate::apiserver::cel::CelEngine>,
    /// What the expressions evaluated since the last reset cost together.
    spent: u64,
}

impl Default for CelCache {
    fn default() -> Self {
        CelCache { engine: crate::apiserver::cel::engine(), spent: 0 }
    }
}

/// A copy starts with an empty cache of compiled expressions: they compile again on use.
impl Clone for CelCache {
    fn clone(&self) -> Self {
        CelCache { spent: self.spent, ..CelCache::default() }
    }
}

/// The most one policy binding's expressions may cost together at run time (the API
/// server's `celconfig.RuntimeCELCostBudget`).
pub const RUNTIME_CEL_COST_BUDGET: u64 = 10_000_000;
/// The API server's words when a binding's budget runs out (`plugin/cel/condition.go`).
const OUT_OF_BUDGET: &str = "validation failed due to running out of cost budget, no further validation rules will be run";

/// Whether an expression compiles (used by ValidatingAdmissionPolicy validation).
pub fn compile_check(expr: &str) -> Result<(), String> {
    crate::apiserver::cel::check(expr)
}

fn eval(cache: &mut CelCache, expr: &str, vars: &[(&str, &Value)]) -> Result<Value, String> {
    let out = match cache.engine.reads(expr) {
        Some(reads) => {
            let needed = crate::apiserver::cel::needed(&reads, vars);
            let refs: Vec<(&str, &Value)> = needed.iter().map(|(k, v)| (*k, v)).collect();
            cache.engine.eval(expr, &refs)
        }
        None => cache.engine.eval(expr, vars),
    };
    cache.spent = cache.spent.saturating_add(cache.engine.last_cost());
    out
}

/// A CEL result's type, for messages about a result of the wrong type.
fn cel_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null_type",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "double",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

// ---- matching ----------------------------------------------------------------------

/// A `RuleWithOperations` (webhooks, policy resourceRules) against the request.
fn rule_matches(rule: &Value, req: &Request) -> bool {
    let has = |field: &str, want: &str| get_array(rule, &[field]).iter().any(|v| v.as_str() == Some(want) || v.as_str() == Some("*"));
    if !has("operations", req.operation) || !has("apiGroups", req.resource.group) || !has("apiVersions", req.resource.version) {
        return false;
    }
    let combined = if req.subresource.is_empty() { req.resource.plural.to_string() } else { format!("{}/{}", req.resource.plural, req.subresource) };
    let res_ok = get_array(rule, &["resources"]).iter().any(|r| match r.as_str() {
        Some("*") => req.subresource.is_empty(),
        Some("*/*") => true,
        Some(s) => {
            s == combined
                || (!req.subresource.is_empty() && s == format!("*/{}", req.subresource))
                || (s.ends_with("/*") && req.subresource.is_empty() && s.trim_end_matches("/*") == req.resource.plural)
                || (s.ends_with("/*") && s.trim_end_matches("/*") == req.resource.plural)
        }
        None => false,
    });
    if !res_ok {
        return false;
    }
    match get_str(rule, &["scope"]).unwrap_or("*") {
        "Namespaced" => req.resource.namespaced,
        "Cluster" => !req.resource.namespaced,
        _ => true,
    }
}

/// namespaceSelector and objectSelector (`k8s.io/apiserver/pkg/admission/plugin/webhook/predicates`).
fn selectors_match(holder: &Value, req: &Request, store: &Store) -> bool {
    if let Some(ns_sel) = get(holder, &["namespaceSelector"]) {
        if req.resource.namespaced && !req.namespace.is_empty() {
            let ns = store.get_by(crate::foundation::api::rid::NAMESPACE, "", req.namespace);
            let labels = ns.and_then(|n| crate::foundation::api::labels(n));
            if !selector_matches(Some(ns_sel), labels) {
                return false;
            }
        } else if req.resource.kind == "Namespace" {
            let labels = req.object.and_then(crate::foundation::api::labels);
            if !selector_matches(Some(ns_sel), labels) {
                return false;
            }
        }
    }
    if let Some(obj_sel) = get(holder, &["objectSelector"]) {
        let new_ok = req.object.is_some_and(|o| selector_matches(Some(obj_sel), crate::foundation::api::labels(o)));
        let old_ok = req.old_object.is_some_and(|o| selector_matches(Some(obj_sel), crate::foundation::api::labels(o)));
        if !new_ok && !old_ok {
            return false;
        }
    }
    true
}

fn match_conditions(cache: &mut CelCache, holder: &Value, vars: &[(&str, &Value)]) -> Result<bool, String> {
    for c in get_array(holder, &["matchConditions"]) {
        let expr = get_str(c, &["expression"]).unwrap_or("true");
        match eval(cache, expr, vars)? {
            Value::Bool(true) => {}
            Value::Bool(false) => return Ok(false),
            other => return Err(format!("expression {expr:?} returned {}, want bool", cel_type(&other))),
        }
    }
    Ok(true)
}

// ---- built-in mutating plugins -----------------------------------------------------

/// The annotation that marks a StorageClass as the default.
pub const IS_DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
const BETA_IS_DEFAULT_CLASS: &str = "storageclass.beta.kubernetes.io/is-default-class";

/// `GetDefaultClass` (`pkg/volume/util/storageclass.go`): of the classes annotated as
/// default, the newest (ties: the first by name).
pub fn default_storage_class(store: &Store) -> Option<crate::foundation::api::Object> {
    let mut defaults: Vec<&crate::foundation::api::Object> = store
        .list(crate::foundation::api::rid::STORAGECLASS, None)
        .filter(|c| [IS_DEFAULT_CLASS, BETA_IS_DEFAULT_CLASS].iter().any(|k| crate::foundation::api::annotation(c, k) == Some("true")))
        .collect();
    // RFC 3339 times in UTC sort as text.
    defaults.sort_stable_by(|a, b| {
        let t = |o: &Value| get_str(o, &["metadata", "creationTimestamp"]).unwrap_or("").to_string();
        t(b).cmp(&t(a)).then_with(|| crate::foundation::api::name(a).cmp(crate::foundation::api::name(b)))
    });
    defaults.first().map(|c| (*c).clone())
}

/// DefaultStorageClass (`plugin/pkg/admission/storage/storageclass/setdefault`): a new
/// claim that names no class (neither `storageClassName` nor the beta annotation) gets the
/// default one. An explicit `""` means "no class" and is kept.
pub fn default_storage_class_plugin(store: &Store, pvc: &mut Value) -> Option<String> {
    if get(pvc, &["spec", "storageClassName"]).is_some_and(|v| !v.is_null())
        || crate::foundation::api::annotation(pvc, "volume.beta.kubernetes.io/storage-class").is_some()
    {
        return None;
    }
    let class = default_storage_class(store)?;
    let name = crate::foundation::api::name(&class).to_string();
    crate::foundation::api::set(pvc, &["spec", "storageClassName"], json!(name));
    Some(name)
}

/// StorageObjectInUseProtection (`plugin/pkg/admission/storage/storageobjectinuseprotection`):
/// every new claim and volume carries the finalizer its protection controller removes once
/// nothing uses it.
pub fn storage_object_in_use_protection(kind: &str, obj: &mut Value) {
    let finalizer = match kind {
        "PersistentVolumeClaim" => "kubernetes.io/pvc-protection",
        "PersistentVolume" => "kubernetes.io/pv-protection",
        _ => return,
    };
    let list = crate::foundation::api::entry(obj, &["metadata"]).entry("finalizers").or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    if let Some(a) = list.as_array_mut() {
        if !a.iter().any(|f| f.as_str() == Some(finalizer)) {
            a.push(json!(finalizer));
        }
    }
}

/// PersistentVolumeClaimResize (`plugin/pkg/admission/storage/persistentvolume/resize`): a
/// Bound claim's storage request may grow only when its class (unchanged) allows
/// volume expansion. Whether it admitted a growing request.
pub fn persistent_volume_claim_resize(store: &Store, req: &Request) -> Result<bool, Status> {
    if req.resource.kind != "PersistentVolumeClaim" || req.operation != "UPDATE" || !req.subresource.is_empty() {
        return Ok(false);
    }
    let (Some(new), Some(old)) = (req.object, req.old_object) else { return Ok(false) };
    resize_allowed(store, req, new, old)
}

/// [`persistent_volume_claim_resize`] for an update of a claim, out of line: the other
/// requests never run it (crates/split keeps a first visit's download to what it runs).
#[inline(never)]
fn resize_allowed(store: &Store, req: &Request, new: &Value, old: &Value) -> Result<bool, Status> {
    let size = |o: &Value| {
        get(o, &["spec", "resources", "requests", "storage"])
            .and_then(|q| crate::foundation::quantity::parse(q.as_str().map(str::to_string).unwrap_or_else(|| q.to_string()).trim()).ok())
            .map(|q| q.milli)
            .unwrap_or(0)
    };
    if size(new) <= size(old) || get_str(old, &["status", "phase"]) != Some("Bound") {
        return Ok(false);
    }
    let class = |o: &Value| {
        get_str(o, &["spec", "storageClassName"])
            .or_else(|| crate::foundation::api::annotation(o, "volume.beta.kubernetes.io/storage-class"))
            .unwrap_or("")
            .to_string()
    };
    let (nc, oc) = (class(new), class(old));
    let allowed = !nc.is_empty()
        && nc == oc
        && store
            .get_by(crate::foundation::api::rid::STORAGECLASS, "", &nc)
            .and_then(|sc| crate::foundation::api::get_bool(sc, &["allowVolumeExpansion"]))
            .unwrap_or(false);
    if allowed {
        return Ok(true);
    }
    Err(Status::forbidden(
        req.resource,
        &req.name,
        "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
    ))
}

/// The namespaces NamespaceLifecycle never lets go (`--immortal-namespaces` defaults:
/// `metav1.NamespaceDefault`, `NamespaceSystem`, `NamespacePublic`).
pub const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// NamespaceLifecycle (`k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle`):
/// immortal namespaces cannot be deleted; creates and updates into a missing
/// namespace are NotFound; creates into a Terminating one are Forbidden with the
/// `NamespaceTerminating` cause. Namespaces themselves, deletions of other objects and
/// local access reviews always pass. There is no exemption for Events: a controller's
/// events in a terminating namespace are refused like anything else.
pub fn namespace_lifecycle(store: &Store, req: &Request) -> Result<(), Status> {
    use crate::foundation::api::{rid, RESOURCES};
    let is_namespace = req.resource.kind == "Namespace" && req.resource.group.is_empty();
    if req.operation == "DELETE" && is_namespace && IMMORTAL_NAMESPACES.contains(&req.name.as_str()) {
        return Err(Status::forbidden(req.resource, &req.name, "this namespace may not be deleted"));
    }
    // The plugin handles CREATE, UPDATE and DELETE only (`admission.NewHandler`).
    if !matches!(req.operation, "CREATE" | "UPDATE" | "DELETE") {
        return Ok(());
    }
    if req.namespace.is_empty() || is_namespace || req.operation == "DELETE" {
        return Ok(());
    }
    if req.resource.group == "authorization.k8s.io" && req.resource.plural == "localsubjectaccessreviews" {
        return Ok(());
    }
    let Some(ns) = store.get_by(rid::NAMESPACE, "", req.namespace) else {
        return Err(Status::not_found(&RESOURCES[rid::NAMESPACE], req.namespace));
    };
    if req.operation != "CREATE" || get_str(ns, &["status", "phase"]) != Some("Terminating") {
        return Ok(());
    }
    // `admission.NewForbidden` names the object, its generateName, or "Unknown".
    let name = if req.name.is_empty() { "Unknown" } else { req.name.as_str() };
    let mut s = Status::forbidden(req.resource, name, &format!("unable to create new content in namespace {} because it is being terminated", req.namespace));
    if let Some(d) = s.details.as_mut().and_then(Value::as_object_mut) {
        d.insert(
            "causes",
            json!([{"reason": "NamespaceTerminating", "message": format!("namespace {} is being terminated", req.namespace), "field": "metadata.namespace"}]),
        );
    }
    Err(s)
}

/// ServiceAccount: default the account and mount its projected token.
pub fn service_account(store: &Store, req: &Request, pod: &mut Value, suffix: impl FnOnce() -> String) -> Result<(), Status> {
    let sa = get_str(pod, &["spec", "serviceAccountName"])
        .filter(|s| !s.is_empty())
        .or_else(|| get_str(pod, &["spec", "serviceAccount"]))
        .unwrap_or("default")
        .to_string();
    if store.get_by(crate::foundation::api::rid::SERVICEACCOUNT, req.namespace, &sa).is_none() {
        return Err(Status::forbidden(
            req.resource,
            &req.name,
            &format!("error looking up service account {}/{sa}: serviceaccount {sa:?} not found", req.namespace),
        ));
    }
    let spec = crate::foundation::api::entry(pod, &["spec"]);
    spec.insert("serviceAccountName", json!(sa));
    spec.insert("serviceAccount", json!(sa));
    if spec.get("automountServiceAccountToken") == Some(&json!(false)) {
        return Ok(());
    }
    const MOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
    let has_mount = |c: &Value| get_array(c, &["volumeMounts"]).iter().any(|m| get_str(m, &["mountPath"]) == Some(MOUNT));
    let vol_name = format!("kube-api-access-{}", suffix());
    // Every pod's projection is the same: one copy, shared (a write to it copies it first).
    static PROJECTED: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
        json!({"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
        ]})
    });
    let volume = json!({"name": vol_name, "projected": PROJECTED.clone()});
    let mut added = false;
    for list in ["initContainers", "containers"] {
        if let Some(cs) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in cs {
                if !has_mount(c) {
                    if let Some(m) = c.as_object_mut() {
                        let mounts = m.entry("volumeMounts").or_insert_with(|| json!([]));
                        if let Some(a) = mounts.as_array_mut() {
                            a.push(json!({"name": vol_name, "readOnly": true, "mountPath": MOUNT}));
                            added = true;
                        }
                    }
                }
            }
        }
    }
    if added {
        let vols = spec.entry("volumes").or_insert_with(|| json!([]));
        if let Some(a) = vols.as_array_mut() {
            a.push(volume);
        }
    }
    Ok(())
}

/// DefaultTolerationSeconds: tolerate not-ready and unreachable nodes for 300s.
pub fn default_toleration_seconds(pod: &mut Value) {
    let spec = crate::foundation::api::entry(pod, &["spec"]);
    let tols = spec.entry("tolerations").or_insert_with(|| json!([]));
    let Some(list) = tols.as_array_mut() else { return };
    // The two tolerations every pod gets, kept once and shared.
    static ADDED: std::sync::LazyLock<[Value; 2]> = std::sync::LazyLock::new(|| {
        ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
            .map(|key| json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}))
    });
    for (key, toleration) in ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"].into_iter().zip(ADDED.iter()) {
        let covered = list.iter().any(|t| {
            let k = get_str(t, &["key"]).unwrap_or("");
            let e = get_str(t, &["effect"]).unwrap_or("");
            (k == key || (k.is_empty() && get_str(t, &["operator"]) == Some("Exists"))) && (e == "NoExecute" || e.is_empty())
        });
        if !covered {
            list.push(toleration.clone());
        }
    }
}

/// The built-in PriorityClasses every cluster has.
pub fn system_priority(name: &str) -> Option<i64> {
    match name {
        "system-cluster-critical" => Some(2_000_000_000),
        "system-node-critical" => Some(2_000_001_000),
        _ => None,
    }
}

/// Priority: resolve `priorityClassName` to `priority` and `preemptionPolicy`.
pub fn priority(store: &Store, req: &Request, pod: &mut Value) -> Result<(), Status> {
    let class = get_str(pod, &["spec", "priorityClassName"]).unwrap_or("").to_string();
    let (value, policy) = if class.is_empty() {
        // A globalDefault class applies when none is named.
        match store.list(crate::foundation::api::rid::PRIORITYCLASS, None).find(|pc| crate::foundation::api::get_bool(pc, &["globalDefault"]) == Some(true)) {
            Some(pc) => {
                (crate::foundation::api::get_i64(pc, &["value"]).unwrap_or(0), get_str(pc, &["preemptionPolicy"]).unwrap_or("PreemptLowerPriority").to_string())
            }
            None => (0, "PreemptLowerPriority".to_string()),
        }
    } else if let Some(v) = system_priority(&class) {
        (v, "PreemptLowerPriority".to_string())
    } else {
        match store.get_by(crate::foundation::api::rid::PRIORITYCLASS, "", &class) {
            Some(pc) => {
                (crate::foundation::api::get_i64(pc, &["value"]).unwrap_or(0), get_str(pc, &["preemptionPolicy"]).unwrap_or("PreemptLowerPriority").to_string())
            }
            None => return Err(Status::forbidden(req.resource, &req.name, &format!("no PriorityClass with name {class} was found"))),
        }
    };
    if let Some(given) = crate::foundation::api::get_i64(pod, &["spec", "priority"]) {
        if given != value {
            return Err(Status::forbidden(
                req.resource,
                &req.name,
                &format!("the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"),
            ));
        }
    }
    let spec = crate::foundation::api::entry(pod, &["spec"]);
    spec.insert("priority", json!(value));
    spec.entry("preemptionPolicy").or_insert(json!(policy));
    Ok(())
}

/// LimitRanger, its mutating half (`PodMutateLimitFunc`): every LimitRange of the
/// namespace in turn fills the containers' and init containers' missing requests and
/// limits from its `Container` item's `defaultRequest` and `default`, and says so in the
/// `kubernetes.io/limit-ranger` annotation. Pods only, on create.
pub fn limit_ranger(store: &Store, req: &Request, pod: &mut Value) -> Result<(), Status> {
    if req.resource.kind != "Pod" || req.operation != "CREATE" || !req.subresource.is_empty() {
        return Ok(());
    }
    for lr in store.list(crate::foundation::api::rid::LIMITRANGE, Some(req.namespace)) {
        // `defaultContainerResourceRequirements`: the last Container item wins per resource.
        let mut requests = crate::foundation::value::Map::new();
        let mut limits = crate::foundation::value::Map::new();
        for item in get_array(lr, &["spec", "limits"]).iter().filter(|l| get_str(l, &["type"]) == Some("Container")) {
            for (field, into) in [("defaultRequest", &mut requests), ("default", &mut limits)] {
                for (k, v) in get(item, &[field]).and_then(Value::as_object).into_iter().flatten() {
                    into.insert(k.clone(), v.clone());
                }
            }
        }
        let mut notes: Vec<String> = Vec::new();
        for (list, prefix) in [("containers", "container"), ("initContainers", "init container")] {
            let Some(cs) = pod.get_mut("spec").and_then(|s| s.get_mut(list)).and_then(Value::as_array_mut) else { continue };
            for c in cs {
                let cname = get_str(c, &["name"]).unwrap_or("").to_string();
                let mut set_limits = Vec::new();
                let mut set_requests = Vec::new();
                for (target, defaults, set) in [("limits", &limits, &mut set_limits), ("requests", &requests, &mut set_requests)] {
                    let slot = crate::foundation::api::entry(c, &["resources", target]);
                    for (k, v) in defaults.iter() {
                        if !slot.contains_key(k) {
                            slot.insert(k.clone(), v.clone());
                            set.push(k.to_string());
                        }
                    }
                }
                // An empty list the plugin made is not serialised (`omitempty`).
                for target in ["limits", "requests"] {
                    let r = crate::foundation::api::entry(c, &["resources"]);
                    if r.get(target).and_then(Value::as_object).is_some_and(|m| m.is_empty()) {
                        r.remove(target);
                    }
                }
                if !set_requests.is_empty() {
                    set_requests.sort_stable();
                    notes.push(format!("{} request for {prefix} {cname}", set_requests.join(", ")));
                }
                if !set_limits.is_empty() {
                    set_limits.sort_stable();
                    notes.push(format!("{} limit for {prefix} {cname}", set_limits.join(", ")));
                }
            }
        }
        if !notes.is_empty() {
            let ann = crate::foundation::api::entry(pod, &["metadata", "annotations"]);
            ann.insert("kubernetes.io/limit-ranger", json!(format!("LimitRanger plugin set: {}", notes.join("; "))));
        }
    }
    Ok(())
}

/// A quantity's value for LimitRanger's comparisons and its `String()`.
fn lr_quantity(v: Option<&Value>) -> Option<(i64, String)> {
    let v = v?;
    let milli = crate::foundation::quantity::value_milli(v)?;
    let text = match v {
        Value::String(s) => s.to_string(),
        other => other.to_string(),
    };
    Some((milli, crate::foundation::quantity::canonical(text.trim())))
}

/// `minConstraint`.
fn min_constraint(limit_type: &str, res: &str, enforced: &Value, requests: Option<&Value>, limits: Option<&Value>) -> Option<String> {
    let (e, es) = lr_quantity(Some(enforced))?;
    let Some((r, rs)) = lr_quantity(requests.and_then(|m| m.get(res))) else {
        return Some(format!("minimum {res} usage per {limit_type} is {es}.  No request is specified"));
    };
    if r < e {
        return Some(format!("minimum {res} usage per {limit_type} is {es}, but request is {rs}"));
    }
    match lr_quantity(limits.and_then(|m| m.get(res))) {
        Some((l, ls)) if l < e => Some(format!("minimum {res} usage per {limit_type} is {es}, but limit is {ls}")),
        _ => None,
    }
}

/// `maxConstraint` (and, for claims, `maxRequestConstraint`, which reads requests only).
fn max_constraint(limit_type: &str, res: &str, enforced: &Value, requests: Option<&Value>, limits: Option<&Value>, requests_only: bool) -> Option<String> {
    let (e, es) = lr_quantity(Some(enforced))?;
    let req = lr_quantity(requests.and_then(|m| m.get(res)));
    if requests_only {
        return match req {
            None => Some(format!("maximum {res} usage per {limit_type} is {es}.  No request is specified")),
            Some((r, rs)) if r > e => Some(format!("maximum {res} usage per {limit_type} is {es}, but request is {rs}")),
            _ => None,
        };
    }
    let Some((l, ls)) = lr_quantity(limits.and_then(|m| m.get(res))) else {
        return Some(format!("maximum {res} usage per {limit_type} is {es}.  No limit is specified"));
    };
    if l > e {
        return Some(format!("maximum {res} usage per {limit_type} is {es}, but limit is {ls}"));
    }
    match req {
        Some((r, rs)) if r > e => Some(format!("maximum {res} usage per {limit_type} is {es}, but request is {rs}")),
        _ => None,
    }
}

/// `limitRequestRatioConstraint`.
fn ratio_constraint(limit_type: &str, res: &str, enforced: &Value, requests: Option<&Value>, limits: Option<&Value>) -> Option<String> {
    let (e, es) = lr_quantity(Some(enforced))?;
    let req = lr_quantity(requests.and_then(|m| m.get(res))).map(|q| q.0).filter(|r| *r != 0);
    let Some(r) = req else {
        return Some(format!("{res} max limit to request ratio per {limit_type} is {es}, but no request is specified or request is 0"));
    };
    let Some(l) = lr_quantity(limits.and_then(|m| m.get(res))).map(|q| q.0).filter(|l| *l != 0) else {
        return Some(format!("{res} max limit to request ratio per {limit_type} is {es}, but no limit is specified or limit is 0"));
    };
    let observed = l as f64 / r as f64;
    (observed * 1000.0 > e as f64).then(|| format!("{res} max limit to request ratio per {limit_type} is {es}, but provided ratio is {observed:.6}"))
}

/// `utilerrors.NewAggregate(errs).Error()`: one message alone, several (duplicates
/// dropped) in brackets.
fn aggregate(errs: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errs {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    if seen.len() == 1 {
        seen[0].to_string()
    } else {
        format!("[{}]", seen.join(", "))
    }
}

/// LimitRanger, its validating half (`PodValidateLimitFunc`,
/// `PersistentVolumeClaimValidateLimitFunc`): min, max and the limit/request ratio of
/// each LimitRange item, for containers, whole pods (on create) and claims (on create and
/// update). The first LimitRange with violations refuses the request with all of them.
pub fn limit_ranger_validate(store: &Store, req: &Request) -> Result<(), Status> {
    let kind = req.resource.kind;
    let applies = req.subresource.is_empty()
        && ((kind == "Pod" && req.operation == "CREATE") || (kind == "PersistentVolumeClaim" && (req.operation == "CREATE" || req.operation == "UPDATE")));
    let Some(obj) = req.object.filter(|_| applies) else { return Ok(()) };
    for lr in store.list(crate::foundation::api::rid::LIMITRANGE, Some(req.namespace)) {
        limit_range_validate(lr, req, obj)?;
    }
    Ok(())
}

/// [`limit_ranger_validate`] against one LimitRange, out of line (a namespace without one
/// never runs it).
#[inline(never)]
fn limit_range_validate(lr: &Value, req: &Request, obj: &Value) -> Result<(), Status> {
    let kind = req.resource.kind;
    let bounds = |item: &Value, field: &str| -> Vec<(String, Value)> {
        get(item, &[field]).and_then(Value::as_object).into_iter().flatten().map(|(k, v)| (k.to_string(), v.clone())).collect()
    };
    {
        let mut errs: Vec<String> = Vec::new();
        for item in get_array(lr, &["spec", "limits"]) {
            let ty = get_str(item, &["type"]).unwrap_or("");
            let check = |errs: &mut Vec<String>, requests: Option<&Value>, limits: Option<&Value>| {
                for (k, v) in bounds(item, "min") {
                    errs.extend(min_constraint(ty, &k, &v, requests, limits));
                }
                for (k, v) in bounds(item, "max") {
                    errs.extend(max_constraint(ty, &k, &v, requests, limits, false));
                }
                for (k, v) in bounds(item, "maxLimitRequestRatio") {
                    errs.extend(ratio_constraint(ty, &k, &v, requests, limits));
                }
            };
            match (kind, ty) {
                ("Pod", "Container") => {
                    for list in ["containers", "initContainers"] {
                        for c in get_array(obj, &["spec", list]) {
                            check(&mut errs, get(c, &["resources", "requests"]), get(c, &["resources", "limits"]));
                        }
                    }
                }
                ("Pod", "Pod") => {
                    let r = crate::apiserver::quota::list_json(&crate::apiserver::quota::pod_resources(obj, "requests"));
                    let l = crate::apiserver::quota::list_json(&crate::apiserver::quota::pod_resources(obj, "limits"));
                    check(&mut errs, Some(&r), Some(&l));
                }
                ("PersistentVolumeClaim", "PersistentVolumeClaim") => {
                    let requests = get(obj, &["spec", "resources", "requests"]);
                    for (k, v) in bounds(item, "min") {
                        errs.extend(min_constraint(ty, &k, &v, requests, None));
                    }
                    for (k, v) in bounds(item, "max") {
                        errs.extend(max_constraint(ty, &k, &v, requests, None, true));
                    }
                }
                _ => {}
            }
        }
        if !errs.is_empty() {
            return Err(Status::forbidden(req.resource, &req.name, &aggregate(&errs)));
        }
    }
    Ok(())
}

// ---- ValidatingAdmissionPolicy -------------------------------------------------------

/// The outcome of the validating admission stage.
#[derive(Debug, Default)]
pub struct Verdict {
    /// Warnings to return with the response (`Warn` actions, failed-open webhooks).
    pub warnings: Vec<String>,
    /// Which policies and webhooks were consulted, for the trace.
    pub consulted: Vec<String>,
}

/// Run every ValidatingAdmissionPolicy bound to this request.
pub fn validating_policies(store: &Store, cache: &mut CelCache, req: &Request, verdict: &mut Verdict) -> Result<(), Status> {
    // Match first (no CEL needed), then convert the objects once for the matches.
    let mut matched = Vec::new();
    for binding in store.list(crate::foundation::api::rid::VAPB, None) {
        let policy_name = get_str(binding, &["spec", "policyName"]).unwrap_or("");
        let Some(policy) = store.get_by(crate::foundation::api::rid::VAP, "", policy_name) else { continue };
        let empty = json!({});
        let constraints = get(policy, &["spec", "matchConstraints"]).unwrap_or(&empty);
        if !get_array(constraints, &["resourceRules"]).iter().any(|r| rule_matches(r, req)) {
            continue;
        }
        if get_array(constraints, &["excludeResourceRules"]).iter().any(|r| rule_matches(r, req)) {
            continue;
        }
        if !selectors_match(constraints, req, store) {
            continue;
        }
        if let Some(mr) = get(binding, &["spec", "matchResources"]) {
            let rules = get_array(mr, &["resourceRules"]);
            if !rules.is_empty() && !rules.iter().any(|r| rule_matches(r, req)) {
                continue;
            }
            if !selectors_match(mr, req, store) {
                continue;
            }
        }
        matched.push((policy_name, policy, binding));
    }
    if matched.is_empty() {
        return Ok(());
    }
    evaluate_policies(store, cache, req, verdict, matched)
}

/// [`validating_policies`] for the policies that match, out of line (a cluster without
/// policies never runs it).
#[inline(never)]
fn evaluate_policies(
    store: &Store,
    cache: &mut CelCache,
    req: &Request,
    verdict: &mut Verdict,
    matched: Vec<(&str, &std::sync::Arc<Value>, &std::sync::Arc<Value>)>,
) -> Result<(), Status> {
    let object = req.object.cloned().unwrap_or(Value::Null);
    let old = req.old_object.cloned().unwrap_or(Value::Null);
    let request = req.cel_request();
    let ns_obj = store.get_by(crate::foundation::api::rid::NAMESPACE, "", req.namespace).map(|n| (**n).clone()).unwrap_or(Value::Null);
    for (policy_name, policy, binding) in matched {
        let bname = crate::foundation::api::name(binding);
        let fail_closed = get_str(policy, &["spec", "failurePolicy"]).unwrap_or("Fail") == "Fail";
        let actions: BTreeSet<&str> = get_array(binding, &["spec", "validationActions"]).iter().filter_map(Value::as_str).collect_tree();
        let params = match resolve_params(store, req, policy, binding) {
            Params::None => Value::Null,
            Params::Found(p) => p,
            Params::Skip => continue,
            Params::Fail(msg) => {
                if !fail_closed {
                    continue;
                }
                match policy_denial(req, policy_name, bname, &msg, "", &actions) {
                    Some(s) => return Err(s),
                    None => continue,
                }
            }
        };
        cache.spent = 0;
        // Variables are evaluated in order; each sees the earlier ones.
        let mut variables = crate::foundation::value::Map::new();
        let mut base: Vec<(&str, &Value)> =
            vec![("object", &object), ("oldObject", &old), ("request", &request), ("params", &params), ("namespaceObject", &ns_obj)];
        let mut var_errors = Vec::new();
        for v in get_array(policy, &["spec", "variables"]) {
            let vn = get_str(v, &["name"]).unwrap_or("").to_string();
            let expr = get_str(v, &["expression"]).unwrap_or("null");
            let vars_val = Value::Object(variables.clone());
            let mut with_vars = base.clone();
            with_vars.push(("variables", &vars_val));
            match eval(cache, expr, &with_vars) {
                Ok(val) => {
                    variables.insert(vn, val);
                }
                Err(e) => var_errors.push(e),
            }
        }
        let vars_val = Value::Object(variables);
        base.push(("variables", &vars_val));
        verdict.consulted.push(format!("ValidatingAdmissionPolicy/{policy_name}"));
        match match_conditions(cache, get(policy, &["spec"]).unwrap_or(&Value::Null), &base) {
            Ok(false) => continue,
            Ok(true) => {}
            Err(e) => {
                if fail_closed {
                    return Err(policy_denial(req, policy_name, bname, &format!("failed to evaluate matchConditions: {e}"), "", &actions)
                        .unwrap_or_else(|| Status::internal(&e)));
                }
                continue;
            }
        }
        for v in get_array(policy, &["spec", "validations"]) {
            let expr = get_str(v, &["expression"]).unwrap_or("true");
            let outcome = eval(cache, expr, &base);
            if cache.spent > RUNTIME_CEL_COST_BUDGET {
                // One decision for the whole policy, as its failurePolicy says.
                if !fail_closed {
                    break;
                }
                match policy_denial(req, policy_name, bname, OUT_OF_BUDGET, "", &actions) {
                    Some(s) => return Err(s),
                    None => break,
                }
            }
            let msg = match outcome {
                Ok(Value::Bool(true)) => continue,
                Ok(Value::Bool(false)) => {
                    let mut m = get_str(v, &["message"]).map(str::to_string).unwrap_or_else(|| format!("failed expression: {}", expr.trim()));
                    if let Some(me) = get_str(v, &["messageExpression"]) {
                        if let Ok(Value::String(s)) = eval(cache, me, &base) {
                            if !s.trim().is_empty() {
                                m = s.to_string();
                            }
                        }
                    }
                    m
                }
                Ok(other) => format!("expression '{}' resulted in error: expected bool, got {}", expr.trim(), cel_type(&other)),
                Err(e) => {
                    if !fail_closed {
                        continue;
                    }
                    format!("expression '{}' resulted in error: {e}", expr.trim())
                }
            };
            let reason = get_str(v, &["reason"]).unwrap_or("Invalid");
            if actions.contains("Warn") {
                verdict.warnings.push(format!("Validation failed for ValidatingAdmissionPolicy '{policy_name}' with binding '{bname}': {msg}"));
            }
            if let Some(status) = policy_denial(req, policy_name, bname, &msg, reason, &actions) {
                return Err(status);
            }
        }
        if !var_errors.is_empty() && fail_closed {
            if let Some(s) = policy_denial(req, policy_name, bname, &var_errors.join("; "), "", &actions) {
                return Err(s);
            }
        }
    }
    Ok(())
}

/// The `params` a binding gives its policy (`paramKind` + `paramRef`).
enum Params {
    None,
    Found(Value),
    /// `parameterNotFoundAction: Allow` and nothing found: the binding does not apply.
    Skip,
    Fail(String),
}

fn resolve_params(store: &Store, req: &Request, policy: &Value, binding: &Value) -> Params {
    let Some(kind) = get(policy, &["spec", "paramKind"]) else { return Params::None };
    let av = get_str(kind, &["apiVersion"]).unwrap_or("");
    let k = get_str(kind, &["kind"]).unwrap_or("");
    let Some(rid) = crate::foundation::api::resource_for_kind(av, k) else {
        let (group, version) = av.split_once('/').unwrap_or(("", av));
        let gv = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
        return Params::Fail(format!("failed to configure policy: failed to find resource referenced by paramKind: '{gv}, Kind={k}'"));
    };
    let Some(r) = get(binding, &["spec", "paramRef"]) else {
        return Params::Fail("failed to configure binding: paramRef is required when paramKind is set".into());
    };
    let namespaced = crate::foundation::api::RESOURCES[rid].namespaced;
    let ns = get_str(r, &["namespace"]).map(str::to_string).unwrap_or_else(|| if namespaced { req.namespace.to_string() } else { String::new() });
    let found = match get_str(r, &["name"]) {
        Some(n) => store.get_by(rid, &ns, n).map(|o| (**o).clone()),
        None => store
            .list(rid, if namespaced { Some(ns.as_str()) } else { None })
            .find(|o| crate::foundation::labels::selector_matches(get(r, &["selector"]), crate::foundation::api::labels(o)))
            .map(|o| (**o).clone()),
    };
    match (found, get_str(r, &["parameterNotFoundAction"]).unwrap_or("Deny")) {
        (Some(p), _) => Params::Found(p),
        (None, "Allow") => Params::Skip,
        (None, _) => Params::Fail("failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction".into()),
    }
}

fn policy_denial(req: &Request, policy: &str, binding: &str, msg: &str, reason: &str, actions: &BTreeSet<&str>) -> Option<Status> {
    if !actions.contains("Deny") {
        return None;
    }
    let text = format!("ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: {msg}");
    let message = format!("{} {:?} is forbidden: {text}", req.resource.qualified_resource(), req.name);
    let (code, reason) = match reason {
        "Forbidden" => (403, "Forbidden"),
        "Unauthorized" => (401, "Unauthorized"),
        "RequestEntityTooLarge" => (413, "RequestEntityTooLarge"),
        _ => (422, "Invalid"),
    };
    let mut s = Status::new(code, reason, message);
    s.details = Some(json!({"name": req.name, "group": req.resource.group, "kind": req.resource.plural,
        "causes": [{"message": text, "field": ""}]}));
    Some(s)
}

// ---- webhooks --------------------------------------------------------------------------

/// Why a webhook backend could not be reached, if it could not.
pub fn backend_failure(store: &Store, webhook: &Value, down: &BTreeSet<String>, config_name: &str) -> Option<String> {
    let name = get_str(webhook, &["name"]).unwrap_or("");
    let svc = get(webhook, &["clientConfig", "service"]);
    let timeout = crate::foundation::api::get_i64(webhook, &["timeoutSeconds"]).unwrap_or(10);
    let url = match svc {
        Some(s) => {
            let port = crate::foundation::api::get_i64(s, &["port"]).unwrap_or(443);
            format!(
                "https://{}.{}.svc:{port}{}?timeout={timeout}s",
                get_str(s, &["name"]).unwrap_or(""),
                get_str(s, &["namespace"]).unwrap_or(""),
                get_str(s, &["path"]).unwrap_or("")
            )
        }
        None => get_str(webhook, &["clientConfig", "url"]).unwrap_or("").to_string(),
    };
    if down.contains(name) || down.contains(config_name) {
        return Some(format!("failed to call webhook: Post {url:?}: context deadline exceeded"));
    }
    let s = svc?;
    let (sns, sname) = (get_str(s, &["namespace"]).unwrap_or(""), get_str(s, &["name"]).unwrap_or(""));
    let Some(service) = store.get_by(crate::foundation::api::rid::SERVICE, sns, sname) else {
        return Some(format!("failed to call webhook: service {sname:?} not found"));
    };
    let ready = store.list(crate::foundation::api::rid::ENDPOINTSLICE, Some(sns)).any(|es| {
        crate::foundation::api::label(es, "kubernetes.io/service-name") == Some(sname)
            && get_array(es, &["endpoints"]).iter().any(|e| crate::foundation::api::get_bool(e, &["conditions", "ready"]) == Some(true))
    });
    if !ready {
        let ip = get_str(service, &["spec", "clusterIP"]).unwrap_or("");
        let port = crate::foundation::api::get_i64(s, &["port"]).unwrap_or(443);
        return Some(format!("failed to call webhook: Post {url:?}: dial tcp {ip}:{port}: connect: connection refused"));
    }
    None
}

/// Call every matching webhook of the validating (or mutating) configurations. Mutating
/// webhooks' patches (the `kubeloop.dev/patch` annotation, a merge patch in YAML or JSON)
/// are returned for the caller to apply, in order.
pub fn webhooks(
    store: &Store,
    cache: &mut CelCache,
    req: &Request,
    mutating: bool,
    down: &BTreeSet<String>,
    verdict: &mut Verdict,
) -> Result<Vec<Value>, Status> {
    let rid = if mutating { crate::foundation::api::rid::MWC } else { crate::foundation::api::rid::VWC };
    let any = store.list(rid, None).any(|cfg| get_array(cfg, &["webhooks"]).iter().any(|wh| get_array(wh, &["rules"]).iter().any(|r| rule_matches(r, req))));
    if !any {
        return Ok(vec![]);
    }
    call_webhooks(store, cache, req, mutating, down, verdict)
}

/// [`webhooks`] once one matches, out of line (a cluster without webhooks never runs it).
#[inline(never)]
fn call_webhooks(
    store: &Store,
    cache: &mut CelCache,
    req: &Request,
    mutating: bool,
    down: &BTreeSet<String>,
    verdict: &mut Verdict,
) -> Result<Vec<Value>, Status> {
    let rid = if mutating { crate::foundation::api::rid::MWC } else { crate::foundation::api::rid::VWC };
    let mut patches = Vec::new();
    let object = req.object.cloned().unwrap_or(Value::Null);
    let old = req.old_object.cloned().unwrap_or(Value::Null);
    let request = req.cel_request();
    let vars: Vec<(&str, &Value)> = vec![("object", &object), ("oldObject", &old), ("request", &request)];
    for (i, cfg) in store.list(rid, None).enumerate() {
        let cfg_name = crate::foundation::api::name(cfg);
        for wh in get_array(cfg, &["webhooks"]) {
            if !get_array(wh, &["rules"]).iter().any(|r| rule_matches(r, req)) || !selectors_match(wh, req, store) {
                continue;
            }
            let wname = get_str(wh, &["name"]).unwrap_or("");
            let fail_closed = get_str(wh, &["failurePolicy"]).unwrap_or("Fail") == "Fail";
            match match_conditions(cache, wh, &vars) {
                Ok(false) => continue,
                Ok(true) => {}
                Err(e) => {
                    if fail_closed {
                        return Err(Status::internal(&format!("failed calling webhook {wname:?}: {e}")));
                    }
                    continue;
                }
            }
            verdict.consulted.push(format!("webhook/{wname}"));
            if req.dry_run && get_str(wh, &["sideEffects"]).unwrap_or("None") != "None" && get_str(wh, &["sideEffects"]) != Some("NoneOnDryRun") {
                return Err(Status::bad_request(format!("admission webhook {wname:?} does not support dry run")));
            }
            if let Some(err) = backend_failure(store, wh, down, cfg_name) {
                if fail_closed {
                    return Err(Status::internal(&format!("failed calling webhook {wname:?}: {err}")));
                }
                verdict.warnings.push(format!("failed-open.validation.webhook.admission.k8s.io/round_0_index_{i}={wname}"));
                continue;
            }
            let allow_expr = crate::foundation::api::annotation(cfg, "kubeloop.dev/allow-if").unwrap_or("true");
            let allowed = match eval(cache, allow_expr, &vars) {
                Ok(Value::Bool(b)) => b,
                Ok(_) | Err(_) => false,
            };
            if !allowed {
                let msg = crate::foundation::api::annotation(cfg, "kubeloop.dev/deny-message").unwrap_or("");
                let text = if msg.is_empty() {
                    format!("admission webhook {wname:?} denied the request without explanation")
                } else {
                    format!("admission webhook {wname:?} denied the request: {msg}")
                };
                return Err(Status::new(403, "Forbidden", text));
            }
            if mutating {
                if let Some(p) = crate::foundation::api::annotation(cfg, "kubeloop.dev/patch") {
                    match crate::foundation::manifest::parse_value(p) {
                        Ok(v) if v.is_object() => patches.push(v),
                        _ => {
                            return Err(Status::internal(&format!(
                                "failed calling webhook {wname:?}: received invalid webhook response: the patch is not a JSON object"
                            )))
                        }
                    }
                }
            }
        }
    }
    Ok(patches)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foundation::api::{rid, ObjectKey, RESOURCES};
    use std::sync::Arc;

    fn put(s: &mut Store, v: Value) {
        let r = crate::foundation::api::resource_for_kind(get_str(&v, &["apiVersion"]).unwrap(), get_str(&v, &["kind"]).unwrap()).unwrap();
        s.create(&ObjectKey::new(r, crate::foundation::api::namespace(&v), crate::foundation::api::name(&v)), Arc::new(v)).unwrap();
    }

    fn no_latest(s: &mut Store) {
        put(
            s,
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "no-latest-tag"},
            "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
              "validations": [{"expression": "object.spec.template.spec.containers.all(c, !c.image.endsWith(':latest'))", "message": "images must not use the :latest tag"}]}}),
        );
        put(
            s,
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "no-latest-tag-binding"},
            "spec": {"policyName": "no-latest-tag", "validationActions": ["Deny"]}}),
        );
    }

    fn deployment(image: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "checkout", "namespace": "default"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}})
    }

    #[test]
    fn a_policy_denies_latest_images_with_the_real_wording() {
        let mut s = Store::default();
        no_latest(&mut s);
        let admin = UserInfo::admin();
        let bad = deployment("registry.example/checkout:latest");
        let req = Request {
            operation: "CREATE",
            resource: &RESOURCES[rid::DEPLOYMENT],
            subresource: "",
            namespace: "default",
            name: "checkout".into(),
            user: &admin,
            object: Some(&bad),
            old_object: None,
            dry_run: false,
        };
        let mut cache = CelCache::default();
        let err = validating_policies(&s, &mut cache, &req, &mut Verdict::default()).unwrap_err();
        assert_eq!(err.code, 422);
        assert_eq!(err.message, "deployments.apps \"checkout\" is forbidden: ValidatingAdmissionPolicy 'no-latest-tag' with binding 'no-latest-tag-binding' denied request: images must not use the :latest tag");
        assert_eq!(err.kubectl_message(None, "creating"), "The deployments \"checkout\" is invalid: : ValidatingAdmissionPolicy 'no-latest-tag' with binding 'no-latest-tag-binding' denied request: images must not use the :latest tag");
        let good = deployment("registry.example/checkout:1.4.2");
        let req = Request { object: Some(&good), ..req };
        assert!(validating_policies(&s, &mut cache, &req, &mut Verdict::default()).is_ok());
    }

    #[test]
    fn webhook_without_endpoints_fails_closed() {
        let mut s = Store::default();
        put(
            &mut s,
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "policy", "namespace": "kube-system"}, "spec": {"clusterIP": "10.96.0.50", "ports": [{"port": 443}]}}),
        );
        put(
            &mut s,
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "image-policy"},
            "webhooks": [{"name": "images.policy.example.com", "clientConfig": {"service": {"name": "policy", "namespace": "kube-system", "path": "/validate"}},
              "rules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]}], "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}),
        );
        let admin = UserInfo::admin();
        let d = deployment("nginx:1.25");
        let req = Request {
            operation: "CREATE",
            resource: &RESOURCES[rid::DEPLOYMENT],
            subresource: "",
            namespace: "default",
            name: "checkout".into(),
            user: &admin,
            object: Some(&d),
            old_object: None,
            dry_run: false,
        };
        let err = webhooks(&s, &mut CelCache::default(), &req, false, &BTreeSet::new(), &mut Verdict::default()).unwrap_err();
        assert_eq!(err.code, 500);
        assert_eq!(err.message, "Internal error occurred: failed calling webhook \"images.policy.example.com\": failed to call webhook: Post \"https://policy.kube-system.svc:443/validate?timeout=10s\": dial tcp 10.96.0.50:443: connect: connection refused");
    }

    #[test]
    fn default_tolerations_are_appended_once() {
        let mut p =
            json!({"spec": {"tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]}});
        default_toleration_seconds(&mut p);
        let t = p["spec"]["tolerations"].as_array().unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[1]["key"], "node.kubernetes.io/not-ready");
        assert_eq!(t[1]["tolerationSeconds"], 300);
    }
}
