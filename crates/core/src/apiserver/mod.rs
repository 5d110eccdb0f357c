//! Layer 2, the API server: the kube-apiserver request pipeline, one function per stage:
//! authentication → authorization → (strict decoding) → mutating admission → name
//! generation → validation → validating admission → storage.
//!
//! Requests are shaped like the REST API (verb, resource, namespace, name, subresource,
//! body, dry-run, field manager) so that an HTTP front can map onto them unchanged. Every
//! stage of every request leaves a trace record; a failure is a `Status` with the real
//! code, reason and message, and nothing is written. Controllers, the scheduler and the
//! kubelets call `handle` exactly as users do.

pub mod admission;
pub mod cel;
pub mod defaults;
pub mod fields;
pub mod managed;
pub mod patch;
pub mod rbac;
pub mod schema;
pub mod store;
pub mod trace;
pub mod validation;

use crate::apiserver::store::Store;
use crate::apiserver::trace::{Flow, Record, RequestLog, Trace};
use crate::foundation::api::{self, get, get_str, Object, ObjectKey, ResourceId, ResourceInfo, RESOURCES};
use crate::foundation::sim::{rfc3339, Millis, Rng, Stream};
use crate::foundation::status::Status;
use crate::foundation::value::{json, Value};
use admission::{CelCache, Verdict};
use rbac::{Attributes, Decision, UserInfo};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/merge-patch+json`
    Merge,
    /// `application/strategic-merge-patch+json`
    Strategic,
    /// `application/json-patch+json`
    Json,
    /// `application/apply-patch+yaml`: server-side apply; `force` takes fields over from
    /// other managers instead of failing with a conflict.
    Apply { force: bool },
}

/// `?fieldValidation=`: what to do with fields the schema does not declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// Reject the request (kubectl's default, `--validate=strict`).
    #[default]
    Strict,
    /// Drop the fields and say so in a `Warning` header (the server's default).
    Warn,
    /// Drop the fields silently.
    Ignore,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Get,
    List,
    Create,
    Update,
    Patch(PatchType),
    Delete,
}

impl Verb {
    /// The RBAC verb.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch(_) => "patch",
            Verb::Delete => "delete",
        }
    }
}

/// Who is calling: a bearer token to authenticate, or a component already authenticated
/// by its client certificate.
#[derive(Debug, Clone, PartialEq)]
pub enum Credentials {
    Token(String),
    User(UserInfo),
}

#[derive(Debug, Clone)]
pub struct Request {
    pub verb: Verb,
    pub resource: ResourceId,
    pub namespace: String,
    pub name: String,
    pub subresource: String,
    pub body: Option<Value>,
    pub dry_run: bool,
    pub field_manager: String,
    pub credentials: Credentials,
    /// DeleteOptions.propagationPolicy (`Background`, `Foreground`, `Orphan`).
    pub propagation: Option<String>,
    /// DeleteOptions.gracePeriodSeconds.
    pub grace_period: Option<i64>,
    /// The component making the call, for the trace (`kubectl`, `replicaset-controller`).
    pub component: String,
    /// Sent as `application/vnd.kubernetes.protobuf` by a typed client (the built-in
    /// components), rather than JSON or YAML.
    pub protobuf: bool,
    pub field_validation: FieldValidation,
}

impl Request {
    pub fn new(verb: Verb, resource: ResourceId, namespace: &str, name: &str, credentials: Credentials) -> Self {
        Request {
            verb,
            resource,
            namespace: namespace.to_string(),
            name: name.to_string(),
            subresource: String::new(),
            body: None,
            dry_run: false,
            field_manager: String::new(),
            credentials,
            propagation: None,
            grace_period: None,
            component: "kubectl".into(),
            protobuf: false,
            field_validation: FieldValidation::Strict,
        }
    }
    pub fn create(resource: ResourceId, namespace: &str, body: Value, credentials: Credentials) -> Self {
        let mut r = Self::new(Verb::Create, resource, namespace, "", credentials);
        r.body = Some(body);
        r
    }
    pub fn update(resource: ResourceId, namespace: &str, name: &str, body: Value, credentials: Credentials) -> Self {
        let mut r = Self::new(Verb::Update, resource, namespace, name, credentials);
        r.body = Some(body);
        r
    }
    pub fn patch(resource: ResourceId, namespace: &str, name: &str, ty: PatchType, body: Value, credentials: Credentials) -> Self {
        let mut r = Self::new(Verb::Patch(ty), resource, namespace, name, credentials);
        r.body = Some(body);
        r
    }
    pub fn delete(resource: ResourceId, namespace: &str, name: &str, credentials: Credentials) -> Self {
        Self::new(Verb::Delete, resource, namespace, name, credentials)
    }
    pub fn with_sub(mut self, subresource: &str) -> Self {
        self.subresource = subresource.to_string();
        self
    }
    pub fn by(mut self, component: &str) -> Self {
        self.component = component.to_string();
        self
    }
    /// The REST path (`/apis/apps/v1/namespaces/default/deployments/web/scale`).
    pub fn path(&self) -> String {
        let r = &RESOURCES[self.resource];
        let mut p = if r.group.is_empty() { format!("/api/{}", r.version) } else { format!("/apis/{}/{}", r.group, r.version) };
        if r.namespaced && !self.namespace.is_empty() {
            p.push_str(&format!("/namespaces/{}", self.namespace));
        }
        p.push('/');
        p.push_str(r.plural);
        if !self.name.is_empty() {
            p.push('/');
            p.push_str(&self.name);
        }
        if !self.subresource.is_empty() {
            p.push('/');
            p.push_str(&self.subresource);
        }
        p
    }
}

/// Per kind: does `metadata.generation` track spec changes, and is status served as a
/// subresource (so that the main resource ignores status changes)?
const KIND_TRAITS: &[(&str, bool, bool)] = &[
    ("Deployment", true, true),
    ("ReplicaSet", true, true),
    ("DaemonSet", true, true),
    ("StatefulSet", true, true),
    ("Job", true, true),
    ("CronJob", true, true),
    ("Pod", true, true),
    ("ValidatingAdmissionPolicy", true, true),
    ("ValidatingAdmissionPolicyBinding", true, false),
    ("PodDisruptionBudget", true, true),
    ("HorizontalPodAutoscaler", true, true),
    ("Ingress", true, true),
    ("NetworkPolicy", true, false),
    ("Service", false, true),
    ("Node", false, true),
    ("Namespace", false, true),
    ("PersistentVolumeClaim", false, true),
    ("PersistentVolume", false, true),
    ("ResourceQuota", false, true),
];

fn has_generation(kind: &str) -> bool {
    KIND_TRAITS.iter().any(|(k, g, _)| *k == kind && *g)
}

/// Whether `kind` serves `status` as a subresource.
pub fn has_status_subresource(kind: &str) -> bool {
    KIND_TRAITS.iter().any(|(k, _, st)| *k == kind && *st)
}

fn strip_for_generation(v: &Value) -> Value {
    let mut c = v.clone();
    if let Some(m) = c.as_object_mut() {
        m.remove("metadata");
        m.remove("status");
    }
    c
}

/// A trace record, its message formatted only when tracing is on.
macro_rules! record {
    ($self:ident, $c:expr, $flow:expr, $stage:expr, $result:expr, $rv:expr, $msg:expr) => {
        if $self.trace.enabled {
            $self.record_now($c, $flow, $stage, $result, $rv, $msg)
        }
    };
}

// The write paths, one file each, one function per stage (after the macro, which they use).
mod create;
mod update;

/// What a pipeline stage returns: its value, or the stage's name and the `Status` that
/// ends the request there.
type Staged<T> = Result<T, (&'static str, Status)>;

/// The API server: the store behind it, its identities and its trace.
pub struct ApiServer {
    pub store: Store,
    pub now: Millis,
    /// Bearer tokens and the users they authenticate.
    pub tokens: BTreeMap<String, UserInfo>,
    /// Webhook (or webhook configuration) names whose backends are down.
    pub webhooks_down: BTreeSet<String>,
    pub trace: Trace,
    /// Warnings returned with the last response.
    pub warnings: Vec<String>,
    rng: Rng,
    cel: CelCache,
    allocated_ips: BTreeSet<u32>,
    allocated_node_ports: BTreeSet<i64>,
}

/// 10.96.0.0/16, kind's service range.
const SERVICE_NET: u32 = (10 << 24) | (96 << 16);
const SERVICE_SIZE: u32 = 1 << 16;

pub fn ip_string(ip: u32) -> String {
    format!("{}.{}.{}.{}", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255)
}

fn parse_ip(s: &str) -> Option<u32> {
    let parts: Vec<u32> = s.split('.').map(|p| p.parse().ok()).collect::<Option<Vec<u32>>>()?;
    (parts.len() == 4 && parts.iter().all(|p| *p < 256)).then(|| (parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3])
}

/// What a request is about, for trace records.
struct Ctx {
    user: String,
    verb: &'static str,
    object: String,
    component: String,
    request: usize,
}

impl ApiServer {
    pub fn new(seed: u64, trace: bool) -> Self {
        ApiServer {
            store: Store::default(),
            now: 0,
            tokens: BTreeMap::new(),
            webhooks_down: BTreeSet::new(),
            trace: Trace::new(trace),
            warnings: vec![],
            rng: Rng::new(seed, Stream::ApiServer),
            cel: CelCache::default(),
            allocated_ips: BTreeSet::new(),
            allocated_node_ports: BTreeSet::new(),
        }
    }

    fn record_now(&mut self, c: &Ctx, flow: Flow, stage: &'static str, result: &'static str, rv: &str, message: String) {
        self.trace.push(Record {
            t: self.now,
            flow,
            stage,
            component: c.component.clone(),
            user: c.user.clone(),
            verb: c.verb.to_string(),
            object: c.object.clone(),
            resource_version: rv.to_string(),
            result,
            message,
            request: Some(c.request),
        });
    }

    fn log(&mut self, c: &Ctx, code: u16, status: Option<&Status>) {
        if !self.trace.enabled {
            return;
        }
        self.trace.requests.push(RequestLog {
            t: self.now,
            user: c.user.clone(),
            verb: c.verb.to_string(),
            object: c.object.clone(),
            code,
            status: status.map(Status::to_json),
        });
    }

    fn fail(&mut self, c: &Ctx, stage: &'static str, s: Status) -> Result<Object, Status> {
        record!(self, c, Flow::Denied, stage, "denied", "", s.message.clone());
        self.log(c, s.code, Some(&s));
        Err(s)
    }

    /// Serve one request.
    pub fn handle(&mut self, mut req: Request) -> Result<Object, Status> {
        self.warnings.clear();
        self.store.now = self.now;
        let res = &RESOURCES[req.resource];
        let tracing = self.trace.enabled;
        let body_name = if tracing { req.body.as_ref().map(api::name).unwrap_or("").to_string() } else { String::new() };
        let display_name = if !tracing {
            String::new()
        } else if !req.name.is_empty() {
            req.name.clone()
        } else if !body_name.is_empty() {
            body_name
        } else {
            req.body.as_ref().and_then(|b| get_str(b, &["metadata", "generateName"])).unwrap_or("").to_string()
        };
        let ns = if res.namespaced {
            if req.namespace.is_empty() && matches!(req.verb, Verb::List) {
                // A list without a namespace is across all of them (`/api/v1/pods`).
                String::new()
            } else if req.namespace.is_empty() {
                req.body.as_ref().map(api::namespace).filter(|n| !n.is_empty()).unwrap_or("default").to_string()
            } else {
                req.namespace.clone()
            }
        } else {
            String::new()
        };
        let object = if !tracing {
            String::new()
        } else if ns.is_empty() {
            format!("{}/{}", res.kind, display_name)
        } else {
            format!("{}/{}/{}", res.kind, ns, display_name)
        };
        let verb_str = if req.subresource.is_empty() { req.verb.as_str().to_string() } else { format!("{} {}", req.verb.as_str(), req.subresource) };
        let mut c = Ctx {
            user: String::new(),
            verb: req.verb.as_str(),
            object: if req.subresource.is_empty() || !tracing { object } else { format!("{object}/{}", req.subresource) },
            component: req.component.clone(),
            request: self.trace.requests.len(),
        };
        let writes = !matches!(req.verb, Verb::Get | Verb::List);
        if writes {
            record!(self, &c, Flow::Request, "request", "ok", "", format!("{} {}", verb_str.to_uppercase(), req.path()));
        }

        // Authentication.
        let user = match &req.credentials {
            Credentials::User(u) => u.clone(),
            Credentials::Token(t) => match self.tokens.get(t) {
                Some(u) => u.clone(),
                None => {
                    c.user = "system:anonymous".into();
                    return self.fail(&c, "authentication", Status::unauthorized());
                }
            },
        };
        if tracing {
            c.user = user.name.clone();
        }
        if writes {
            record!(self, &c, Flow::AuthnAuthz, "authentication", "ok", "", format!("user {:?} groups {:?}", user.name, user.groups));
        }

        // Authorization.
        let attrs =
            Attributes { verb: req.verb.as_str(), group: res.group, resource: res.plural, subresource: &req.subresource, namespace: &ns, name: &req.name };
        if let Decision::Deny(reason) = rbac::authorize(&self.store, &user, &attrs) {
            let mut cause = attrs.forbidden_cause(&user.name);
            if let Some(r) = reason {
                cause = format!("{cause}: {r}");
            }
            let s = if req.name.is_empty() { Status::forbidden(res, "", &cause) } else { Status::forbidden(res, &req.name, &cause) };
            return self.fail(&c, "authorization", s);
        }
        if writes {
            record!(self, &c, Flow::AuthnAuthz, "authorization", "ok", "", format!("RBAC allows {} to {} {}", user.name, verb_str, res.qualified_resource()));
        }

        match req.verb {
            Verb::Get => {
                let out = self.get(res, req.resource, &ns, &req.name, &req.subresource);
                match &out {
                    Ok(_) => self.log(&c, 200, None),
                    Err(s) => self.log(&c, s.code, Some(s)),
                }
                out
            }
            Verb::List => {
                let items: Vec<Value> = self.store.list(req.resource, if ns.is_empty() { None } else { Some(ns.as_str()) }).map(|o| (**o).clone()).collect();
                self.log(&c, 200, None);
                Ok(Object::new(
                    json!({"apiVersion": res.api_version(), "kind": format!("{}List", res.kind), "metadata": {"resourceVersion": self.store.revision().to_string()}, "items": items}),
                ))
            }
            Verb::Create if req.subresource == "binding" => self.bind(&c, &user, res, &ns, &req),
            Verb::Create if req.subresource == "eviction" && res.kind == "Pod" => self.evict(&c, &user, res, &ns, &req),
            Verb::Create => {
                let body = req.body.take();
                self.create(&mut c, &user, res, req.resource, &ns, &req, body)
            }
            // Server-side apply of an object that does not exist yet creates it.
            Verb::Patch(PatchType::Apply { force }) if self.store.get_by(req.resource, &ns, &req.name).is_none() => {
                let body = req.body.take().unwrap_or(Value::Null);
                let body_name = api::name(&body).to_string();
                if body_name != req.name {
                    let s = Status::bad_request(format!("the name of the object ({body_name}) does not match the name on the URL ({})", req.name));
                    return self.fail(&c, "decode", s);
                }
                match crate::apiserver::managed::apply(None, &body, &req.field_manager, force, &res.api_version(), res.kind, &req.subresource, self.now) {
                    Ok(obj) => self.create(&mut c, &user, res, req.resource, &ns, &req, Some(obj)),
                    Err(s) => self.fail(&c, "conflict", s),
                }
            }
            Verb::Update | Verb::Patch(_) => {
                let body = req.body.take();
                self.update(&c, &user, res, req.resource, &ns, &req, body)
            }
            Verb::Delete => self.delete(&c, &user, res, req.resource, &ns, &req),
        }
    }

    fn get(&self, res: &ResourceInfo, rid: ResourceId, ns: &str, name: &str, sub: &str) -> Result<Object, Status> {
        let obj = self.store.get_by(rid, ns, name).cloned().ok_or_else(|| Status::not_found(res, name))?;
        if sub == "scale" {
            return Ok(Object::new(scale_of(&obj, res)));
        }
        Ok(obj)
    }

    /// Check `apiVersion`/`kind` and strict-decode a body (`400 BadRequest` on failure).
    fn decode(&mut self, res: &ResourceInfo, body: &mut Value, protobuf: bool, validation: FieldValidation) -> Result<(), Status> {
        if !body.is_object() {
            return Err(Status::bad_request("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"));
        }
        let av = get_str(body, &["apiVersion"]).unwrap_or("");
        let kind = get_str(body, &["kind"]).unwrap_or("");
        if !av.is_empty() && av != res.api_version() {
            return Err(Status::bad_request(format!("the API version in the data ({av}) does not match the expected API version ({})", res.api_version())));
        }
        if !kind.is_empty() && kind != res.kind {
            return Err(Status::bad_request(format!("the kind in the data ({kind}) does not match the expected kind ({})", res.kind)));
        }
        // Components send protobuf through typed clients: there are no unknown fields or
        // wrongly typed values to find, so only JSON and YAML bodies are strictly decoded.
        if protobuf {
            return Ok(());
        }
        let mut errs = crate::apiserver::schema::check(&res.api_version(), res.kind, body);
        if validation != FieldValidation::Strict && errs.type_error.is_none() {
            // Unknown fields are dropped, as decoding into the typed object drops them.
            for f in std::mem::take(&mut errs.unknown_fields) {
                crate::apiserver::schema::remove_field(body, &f);
                if validation == FieldValidation::Warn {
                    self.warnings.push(format!("unknown field {f:?}"));
                }
            }
        }
        if !errs.is_empty() {
            return Err(Status::bad_request(format!("{} in version {:?} cannot be handled as a {}: {}", res.kind, res.version, res.kind, errs.message())));
        }
        Ok(())
    }

    fn admission_request<'a>(
        &self,
        op: &'a str,
        res: &'a ResourceInfo,
        sub: &'a str,
        ns: &'a str,
        name: String,
        user: &'a UserInfo,
        obj: Option<&'a Value>,
        old: Option<&'a Value>,
        dry: bool,
    ) -> admission::Request<'a> {
        admission::Request { operation: op, resource: res, subresource: sub, namespace: ns, name, user, object: obj, old_object: old, dry_run: dry }
    }

    /// Stage 3: defaulting, the built-in mutating plugins and mutating webhooks.
    fn mutate(
        &mut self,
        res: &ResourceInfo,
        op: &str,
        ns: &str,
        name: &str,
        user: &UserInfo,
        obj: &mut Value,
        old: Option<&Value>,
        dry: bool,
    ) -> Result<Vec<String>, Status> {
        let mut notes = Vec::new();
        {
            let req = self.admission_request(op, res, "", ns, name.to_string(), user, Some(obj), old, dry);
            admission::namespace_lifecycle(&self.store, &req)?;
        }
        crate::apiserver::defaults::apply(res.kind, obj);
        notes.push("defaults applied".to_string());
        if res.kind == "Pod" && op == "CREATE" {
            // These plugins read the request's identity and edit the object in place.
            let req = self.admission_request(op, res, "", ns, name.to_string(), user, None, old, dry);
            admission::limit_ranger(&self.store, &req, obj)?;
            let rng = &mut self.rng;
            admission::service_account(&self.store, &req, obj, || rng.name_suffix(5))?;
            admission::default_toleration_seconds(obj);
            admission::priority(&self.store, &req, obj)?;
            notes.push("LimitRanger, ServiceAccount, DefaultTolerationSeconds, Priority".into());
        }
        if self.store.count(api::rid::MWC) > 0 {
            let snapshot = obj.clone();
            let req = self.admission_request(op, res, "", ns, name.to_string(), user, Some(&snapshot), old, dry);
            let mut v = Verdict::default();
            let patches = admission::webhooks(&self.store, &mut self.cel, &req, true, &self.webhooks_down, &mut v)?;
            for p in &patches {
                crate::apiserver::patch::strategic_merge(obj, p);
            }
            if !patches.is_empty() {
                // The patched object is defaulted again, as the webhook dispatcher does.
                crate::apiserver::defaults::apply(res.kind, obj);
                notes.push(format!("{} webhook patch(es) applied", patches.len()));
            }
            notes.extend(v.consulted);
            self.warnings.extend(v.warnings);
        }
        Ok(notes)
    }

    /// Stage 4b: ValidatingAdmissionPolicies and validating webhooks.
    fn validate_admission(
        &mut self,
        res: &ResourceInfo,
        op: &str,
        sub: &str,
        ns: &str,
        name: &str,
        user: &UserInfo,
        obj: Option<&Value>,
        old: Option<&Value>,
        dry: bool,
    ) -> Result<Vec<String>, Status> {
        let req = self.admission_request(op, res, sub, ns, name.to_string(), user, obj, old, dry);
        let mut v = Verdict::default();
        admission::validating_policies(&self.store, &mut self.cel, &req, &mut v)?;
        admission::webhooks(&self.store, &mut self.cel, &req, false, &self.webhooks_down, &mut v)?;
        self.warnings.extend(v.warnings);
        Ok(v.consulted)
    }

    /// Mutating admission (`CREATE` or `UPDATE`), recorded as one stage.
    fn admit_mutating(
        &mut self,
        c: &Ctx,
        res: &ResourceInfo,
        operation: &str,
        ns: &str,
        name: &str,
        user: &UserInfo,
        obj: &mut Value,
        old: Option<&Value>,
        dry_run: bool,
    ) -> Staged<()> {
        match self.mutate(res, operation, ns, name, user, obj, old, dry_run) {
            Ok(notes) => {
                record!(self, c, Flow::MutatingAdmission, "mutating-admission", "ok", "", notes.join("; "));
                Ok(())
            }
            Err(s) => {
                record!(self, c, Flow::MutatingAdmission, "mutating-admission", "denied", "", s.message.clone());
                Err(("mutating-admission", s))
            }
        }
    }

    /// Field validation (its errors worked out by the caller), then validating admission
    /// (policies and webhooks), each recorded as a stage.
    fn admit_validating(
        &mut self,
        c: &Ctx,
        res: &ResourceInfo,
        operation: &str,
        sub: &str,
        ns: &str,
        name: &str,
        user: &UserInfo,
        errs: &[crate::foundation::status::FieldError],
        obj: &Value,
        old: Option<&Value>,
        dry_run: bool,
    ) -> Staged<()> {
        if !errs.is_empty() {
            let s = Status::invalid(res, name, errs);
            record!(self, c, Flow::Validation, "validation", "denied", "", s.message.clone());
            return Err(("validation", s));
        }
        record!(self, c, Flow::Validation, "validation", "ok", "", "schema (strict decoding) and field validation passed".into());
        match self.validate_admission(res, operation, sub, ns, name, user, Some(obj), old, dry_run) {
            Ok(consulted) => {
                let msg =
                    if consulted.is_empty() { "no validating policies or webhooks match".to_string() } else { format!("allowed by {}", consulted.join(", ")) };
                record!(self, c, Flow::Validation, "validating-admission", "ok", "", msg);
                Ok(())
            }
            Err(s) => {
                record!(self, c, Flow::Validation, "validating-admission", "denied", "", s.message.clone());
                Err(("validating-admission", s))
            }
        }
    }

    fn allocate_service(&mut self, obj: &mut Value) -> Result<(), Status> {
        let ty = get_str(obj, &["spec", "type"]).unwrap_or("ClusterIP").to_string();
        if ty != "ExternalName" {
            let want = get_str(obj, &["spec", "clusterIP"]).unwrap_or("").to_string();
            let ip = if want == "None" {
                None
            } else if !want.is_empty() {
                let Some(ip) = parse_ip(&want).filter(|ip| (ip & !(SERVICE_SIZE - 1)) == SERVICE_NET) else {
                    return Err(Status::invalid(
                        &RESOURCES[api::rid::SERVICE],
                        api::name(obj),
                        &[crate::foundation::status::FieldError::invalid(
                            "spec.clusterIPs",
                            &json!([want]),
                            format!("failed to allocate IP {want}: the provided IP ({want}) is not in the valid range. The range of valid IPs is 10.96.0.0/16"),
                        )],
                    ));
                };
                if !self.allocated_ips.insert(ip) {
                    return Err(Status::invalid(
                        &RESOURCES[api::rid::SERVICE],
                        api::name(obj),
                        &[crate::foundation::status::FieldError::invalid(
                            "spec.clusterIPs",
                            &json!([want]),
                            format!("failed to allocate IP {want}: provided IP is already allocated"),
                        )],
                    ));
                }
                Some(ip)
            } else {
                // Dynamic allocation uses the upper band of the range.
                let lower = 256;
                let mut ip;
                loop {
                    ip = SERVICE_NET + lower + self.rng.below((SERVICE_SIZE - lower - 1) as u64) as u32;
                    if self.allocated_ips.insert(ip) {
                        break;
                    }
                }
                Some(ip)
            };
            let spec = api::entry(obj, &["spec"]);
            match ip {
                Some(ip) => {
                    spec.insert("clusterIP", json!(ip_string(ip)));
                    spec.insert("clusterIPs", json!([ip_string(ip)]));
                }
                None => {
                    spec.insert("clusterIP", json!("None"));
                    spec.insert("clusterIPs", json!(["None"]));
                }
            }
            spec.insert("ipFamilies", json!(["IPv4"]));
            spec.insert("ipFamilyPolicy", json!("SingleStack"));
        }
        if ty == "NodePort" || ty == "LoadBalancer" {
            let mut ports = obj.get("spec").and_then(|s| s.get("ports")).and_then(Value::as_array).cloned().unwrap_or_default();
            for p in &mut ports {
                if get(p, &["nodePort"]).is_none() {
                    let mut np;
                    loop {
                        np = 30000 + self.rng.below(2768) as i64;
                        if self.allocated_node_ports.insert(np) {
                            break;
                        }
                    }
                    api::set(p, &["nodePort"], json!(np));
                } else if let Some(np) = api::get_i64(p, &["nodePort"]) {
                    self.allocated_node_ports.insert(np);
                }
            }
            api::set(obj, &["spec", "ports"], json!(ports));
        }
        api::set(obj, &["status"], json!({"loadBalancer": {}}));
        Ok(())
    }

    fn release_service(&mut self, obj: &Value) {
        if let Some(ip) = get_str(obj, &["spec", "clusterIP"]).and_then(parse_ip) {
            self.allocated_ips.remove(&ip);
        }
        for p in api::get_array(obj, &["spec", "ports"]) {
            if let Some(np) = api::get_i64(p, &["nodePort"]) {
                self.allocated_node_ports.remove(&np);
            }
        }
    }

    /// Reserve a service IP (the `kubernetes` and `kube-dns` Services at bootstrap).
    /// Write an object straight into the store, defaulted and with a uid, as if it had
    /// been created before time 0 (bootstrap policy, system namespaces, registered
    /// nodes). Everything after time 0 goes through [`ApiServer::handle`].
    pub fn bootstrap_object(&mut self, mut v: Value) {
        let Some(r) = api::resource_for_kind(get_str(&v, &["apiVersion"]).unwrap_or(""), get_str(&v, &["kind"]).unwrap_or("")) else { return };
        defaults::apply(RESOURCES[r].kind, &mut v);
        let u = format!("00000000-0000-4000-8000-{:012x}", self.store.revision());
        let m = api::entry(&mut v, &["metadata"]);
        m.insert("uid", json!(u));
        m.insert("creationTimestamp", json!(rfc3339(0)));
        let key = ObjectKey::new(r, api::namespace(&v), api::name(&v));
        let _ = self.store.create(&key, Object::new(v));
    }

    pub fn reserve_ip(&mut self, ip: &str) {
        if let Some(ip) = parse_ip(ip) {
            self.allocated_ips.insert(ip);
        }
    }

    /// `POST pods/<name>/binding` (`pkg/registry/core/pod/storage/storage.go` assignPod).
    /// `POST pods/NAME/eviction` (`pkg/registry/core/pod/storage/eviction.go`): a delete
    /// that a PodDisruptionBudget may refuse with 429. kubeloop has no disruption
    /// controller, so the budget's allowance is worked out here from the matching pods
    /// (healthy = Ready) the way that controller would count them.
    fn evict(&mut self, c: &Ctx, user: &UserInfo, res: &ResourceInfo, ns: &str, req: &Request) -> Result<Object, Status> {
        let body = req.body.clone().unwrap_or(Value::Null);
        let body_name = get_str(&body, &["metadata", "name"]).unwrap_or("");
        if !body_name.is_empty() && body_name != req.name {
            return self.fail(c, "decode", Status::bad_request("name in URL does not match name in Eviction object"));
        }
        let Some(pod) = self.store.get_by(api::rid::POD, ns, &req.name).cloned() else {
            return self.fail(c, "etcd", Status::not_found(res, &req.name));
        };
        let success = || Ok(Object::new(json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})));
        let phase = get_str(&pod, &["status", "phase"]).unwrap_or("");
        let mut del = Request::delete(req.resource, ns, &req.name, Credentials::User(user.clone()));
        del.dry_run = req.dry_run || api::get_array(&body, &["deleteOptions", "dryRun"]).iter().any(|d| d.as_str() == Some("All"));
        del.grace_period = api::get_i64(&body, &["deleteOptions", "gracePeriodSeconds"]);
        del.component = req.component.clone();
        if api::is_deleting(&pod) {
            return success();
        }
        let budget_rid = RESOURCES.iter().position(|r| r.kind == "PodDisruptionBudget");
        let budgets: Vec<Object> = match budget_rid {
            Some(b) if !matches!(phase, "Succeeded" | "Failed" | "Pending") => self
                .store
                .list(b, Some(ns))
                .filter(|p| crate::foundation::labels::selector_matches(get(p, &["spec", "selector"]), api::labels(&pod)))
                .cloned()
                .collect(),
            _ => vec![],
        };
        if budgets.len() > 1 {
            return self.fail(
                c,
                "validation",
                Status::internal("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."),
            );
        }
        if let Some(pdb) = budgets.first() {
            let pods: Vec<&Object> = self
                .store
                .list(api::rid::POD, Some(ns))
                .filter(|p| crate::foundation::labels::selector_matches(get(pdb, &["spec", "selector"]), api::labels(p)) && !api::is_deleting(p))
                .collect();
            let expected = pods.len() as i64;
            let healthy = pods
                .iter()
                .filter(|p| {
                    api::get_array(p, &["status", "conditions"])
                        .iter()
                        .any(|c| get_str(c, &["type"]) == Some("Ready") && get_str(c, &["status"]) == Some("True"))
                })
                .count() as i64;
            let scaled = |v: &Value, round_up: bool| -> i64 {
                match v {
                    Value::String(s) if s.ends_with('%') => {
                        let pct: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
                        if round_up {
                            (pct * expected + 99) / 100
                        } else {
                            pct * expected / 100
                        }
                    }
                    v => v.as_i64().unwrap_or(0),
                }
            };
            let desired = if let Some(m) = get(pdb, &["spec", "minAvailable"]) {
                scaled(m, true)
            } else if let Some(m) = get(pdb, &["spec", "maxUnavailable"]) {
                expected - scaled(m, true)
            } else {
                expected
            };
            if healthy - desired <= 0 {
                let pdb_name = api::name(pdb).to_string();
                let msg = format!("The disruption budget {pdb_name} needs {desired} healthy pods and has {healthy} currently");
                let s = Status::new(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.")
                    .with_details(json!({"causes": [{"reason": "DisruptionBudget", "message": msg}]}));
                return self.fail(c, "validating-admission", s);
            }
        }
        record!(self, c, Flow::Validation, "eviction", "ok", "", format!("eviction allowed ({} disruption budget(s))", budgets.len()));
        match self.delete(c, user, res, req.resource, ns, &del) {
            Ok(_) => success(),
            Err(s) => Err(s),
        }
    }

    fn bind(&mut self, c: &Ctx, user: &UserInfo, res: &ResourceInfo, ns: &str, req: &Request) -> Result<Object, Status> {
        let target = req.body.as_ref().and_then(|b| get_str(b, &["target", "name"])).unwrap_or("").to_string();
        let Some(pod) = self.store.get_by(api::rid::POD, ns, &req.name).cloned() else {
            return self.fail(c, "etcd", Status::not_found(res, &req.name));
        };
        if target.is_empty() {
            return self.fail(c, "validation", Status::invalid(res, &req.name, &[crate::foundation::status::FieldError::required("target.name", "")]));
        }
        if let Some(n) = get_str(&pod, &["spec", "nodeName"]) {
            let s = Status::conflict(res, &format!("{}/binding", req.name), &format!("pod {} is already assigned to node {n:?}", req.name));
            return self.fail(c, "etcd", s);
        }
        if api::is_deleting(&pod) {
            let s = Status::conflict(res, &format!("{}/binding", req.name), &format!("pod {} is being deleted, cannot be assigned to a host", req.name));
            return self.fail(c, "etcd", s);
        }
        let _ = user;
        record!(self, c, Flow::MutatingAdmission, "mutating-admission", "ok", "", "Binding admitted".into());
        record!(self, c, Flow::Validation, "validation", "ok", "", format!("target node {target:?}"));
        let mut p = (*pod).clone();
        api::set(&mut p, &["spec", "nodeName"], json!(target));
        set_condition(&mut p, "PodScheduled", "True", None, None, self.now);
        let key = ObjectKey::new(api::rid::POD, ns, &req.name);
        match self.store.update(&key, Object::new(p), None) {
            Ok(stored) => {
                self.trace.writes += 1;
                let rv = api::resource_version(&stored).to_string();
                record!(self, c, Flow::Etcd, "etcd", "ok", &rv, format!("bound {} to {target} at resourceVersion {rv}", key.display()));
                self.log(c, 201, None);
                Ok(stored)
            }
            Err(_) => self.fail(c, "etcd", Status::not_found(res, &req.name)),
        }
    }

    fn remove(&mut self, c: &Ctx, res: &ResourceInfo, key: &ObjectKey, obj: &Value) -> Result<Object, Status> {
        if res.kind == "Service" {
            self.release_service(obj);
        }
        match self.store.delete(key, None) {
            Ok(gone) => {
                self.trace.writes += 1;
                let rv = api::resource_version(&gone).to_string();
                record!(self, c, Flow::Etcd, "etcd", "ok", &rv, format!("deleted {} at resourceVersion {rv}", key.display()));
                self.log(c, 200, None);
                Ok(gone)
            }
            Err(_) => self.fail(c, "etcd", Status::not_found(res, &key.name)),
        }
    }

    fn delete(&mut self, c: &Ctx, user: &UserInfo, res: &ResourceInfo, rid: ResourceId, ns: &str, req: &Request) -> Result<Object, Status> {
        let Some(current) = self.store.get_by(rid, ns, &req.name).cloned() else {
            return self.fail(c, "etcd", Status::not_found(res, &req.name));
        };
        {
            let ar = self.admission_request("DELETE", res, "", ns, req.name.clone(), user, None, Some(&current), req.dry_run);
            if let Err(s) = admission::namespace_lifecycle(&self.store, &ar) {
                return self.fail(c, "mutating-admission", s);
            }
        }
        record!(self, c, Flow::MutatingAdmission, "mutating-admission", "ok", "", "delete admitted".into());
        match self.validate_admission(res, "DELETE", "", ns, &req.name, user, None, Some(&current), req.dry_run) {
            Ok(_) => record!(self, c, Flow::Validation, "validating-admission", "ok", "", "delete allowed".into()),
            Err(s) => {
                record!(self, c, Flow::Validation, "validating-admission", "denied", "", s.message.clone());
                return self.fail(c, "validating-admission", s);
            }
        }
        if req.dry_run {
            self.log(c, 200, None);
            return Ok(current);
        }
        let key = ObjectKey::new(rid, ns, &req.name);
        let mut obj = (*current).clone();
        let finalizers: Vec<String> = api::get_array(&obj, &["metadata", "finalizers"]).iter().filter_map(Value::as_str).map(str::to_string).collect();
        // Namespaces are emptied by the namespace controller first.
        if res.kind == "Namespace" {
            if api::is_deleting(&obj) {
                self.log(c, 200, None);
                return Ok(current);
            }
            api::set(&mut obj, &["metadata", "deletionTimestamp"], json!(rfc3339(self.now)));
            api::set(&mut obj, &["metadata", "deletionGracePeriodSeconds"], json!(0));
            api::set(&mut obj, &["status", "phase"], json!("Terminating"));
            return self.store_update(c, &key, obj, "marked for deletion (Terminating)");
        }
        // Propagation: options, then existing finalizers, then the resource default.
        let policy = req.propagation.clone().unwrap_or_else(|| {
            if finalizers.iter().any(|f| f == "orphan") {
                "Orphan".into()
            } else if finalizers.iter().any(|f| f == "foregroundDeletion") {
                "Foreground".into()
            } else {
                "Background".into()
            }
        });
        let mut new_finalizers = finalizers.clone();
        match policy.as_str() {
            "Orphan" if !new_finalizers.iter().any(|f| f == "orphan") => new_finalizers.push("orphan".into()),
            "Foreground" if !new_finalizers.iter().any(|f| f == "foregroundDeletion") => new_finalizers.push("foregroundDeletion".into()),
            _ => {}
        }
        // Graceful deletion of scheduled, running pods.
        if res.kind == "Pod" {
            let phase = get_str(&obj, &["status", "phase"]).unwrap_or("");
            let scheduled = get_str(&obj, &["spec", "nodeName"]).is_some();
            let mut grace = req.grace_period.unwrap_or_else(|| api::get_i64(&obj, &["spec", "terminationGracePeriodSeconds"]).unwrap_or(30));
            if grace < 0 {
                grace = 1;
            }
            if !scheduled || phase == "Succeeded" || phase == "Failed" {
                grace = 0;
            }
            let current_grace = api::get_i64(&obj, &["metadata", "deletionGracePeriodSeconds"]);
            if grace > 0 && current_grace.is_none_or(|g| grace < g) {
                api::set(&mut obj, &["metadata", "deletionTimestamp"], json!(rfc3339(self.now + grace as u64 * 1000)));
                api::set(&mut obj, &["metadata", "deletionGracePeriodSeconds"], json!(grace));
                if new_finalizers != finalizers {
                    api::set(&mut obj, &["metadata", "finalizers"], json!(new_finalizers));
                }
                return self.store_update(c, &key, obj, &format!("marked for graceful deletion ({grace}s)"));
            }
            if grace > 0 {
                // Already terminating with a shorter grace period.
                self.log(c, 200, None);
                return Ok(current);
            }
        }
        if !new_finalizers.is_empty() {
            if !api::is_deleting(&obj) {
                api::set(&mut obj, &["metadata", "deletionTimestamp"], json!(rfc3339(self.now)));
                api::set(&mut obj, &["metadata", "deletionGracePeriodSeconds"], json!(0));
            } else if res.kind == "Pod" {
                api::set(&mut obj, &["metadata", "deletionGracePeriodSeconds"], json!(0));
            }
            api::set(&mut obj, &["metadata", "finalizers"], json!(new_finalizers));
            if *current == obj {
                self.log(c, 200, None);
                return Ok(current);
            }
            return self.store_update(c, &key, obj, &format!("deletion pending finalizers {new_finalizers:?}"));
        }
        self.remove(c, res, &key, &obj)
    }

    fn store_update(&mut self, c: &Ctx, key: &ObjectKey, obj: Value, what: &str) -> Result<Object, Status> {
        match self.store.update(key, Object::new(obj), None) {
            Ok(stored) => {
                self.trace.writes += 1;
                let rv = api::resource_version(&stored).to_string();
                record!(self, c, Flow::Etcd, "etcd", "ok", &rv, format!("{} {what} at resourceVersion {rv}", key.display()));
                self.log(c, 200, None);
                Ok(stored)
            }
            Err(_) => self.fail(c, "etcd", Status::not_found(&RESOURCES[key.resource], &key.name)),
        }
    }
}

/// The `autoscaling/v1` Scale of a workload (`GET .../scale`).
/// How the API server reaches a node's kubelet for `pods/log` (`pkg/kubelet/client`):
/// the kubelet answers with what a container wrote.
pub trait KubeletClient {
    fn container_logs(&self, namespace: &str, pod: &str, container: &str, previous: bool) -> Result<Vec<String>, Status>;
}

impl ApiServer {
    /// `GET pods/NAME/log`: the pod is read (authorized) as the caller, the container is
    /// chosen as the REST storage does (`pkg/registry/core/pod/strategy.go`
    /// `LogLocation`), and the lines come from the kubelet. Without a kubelet, nothing
    /// was written.
    pub fn pod_logs(
        &mut self,
        credentials: Credentials,
        namespace: &str,
        pod: &str,
        container: Option<&str>,
        previous: bool,
        kubelet: Option<&dyn KubeletClient>,
    ) -> Result<String, Status> {
        let obj = self.handle(Request::new(Verb::Get, api::rid::POD, namespace, pod, credentials).with_sub("log"))?;
        let names = |list: &str| api::get_array(&obj, &["spec", list]).iter().filter_map(|c| get_str(c, &["name"])).collect::<Vec<_>>();
        let (containers, inits) = (names("containers"), names("initContainers"));
        let container = match container.filter(|c| !c.is_empty()) {
            Some(c) => c.to_string(),
            None if containers.len() == 1 => containers[0].to_string(),
            None => {
                let mut msg = format!("a container name must be specified for pod {pod}, choose one of: [{}]", containers.join(" "));
                if !inits.is_empty() {
                    msg.push_str(&format!(" or one of the init containers: [{}]", inits.join(" ")));
                }
                return Err(Status::bad_request(msg));
            }
        };
        if !containers.contains(&container.as_str()) && !inits.contains(&container.as_str()) {
            return Err(Status::bad_request(format!("container {container} is not valid for pod {pod}")));
        }
        if get_str(&obj, &["spec", "nodeName"]).unwrap_or("").is_empty() {
            return Err(Status::bad_request(format!("pod {pod} does not have a host assigned")));
        }
        let lines = match kubelet {
            Some(k) => k.container_logs(namespace, pod, &container, previous)?,
            None => vec![],
        };
        Ok(lines.iter().map(|l| format!("{l}\n")).collect())
    }
}

pub fn scale_of(obj: &Value, _res: &ResourceInfo) -> Value {
    let selector = crate::foundation::labels::selector_string(get(obj, &["spec", "selector"]));
    json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": api::name(obj), "namespace": api::namespace(obj), "uid": api::uid(obj),
            "resourceVersion": api::resource_version(obj), "creationTimestamp": get(obj, &["metadata", "creationTimestamp"]).cloned().unwrap_or(Value::Null)},
        "spec": {"replicas": api::get_i64(obj, &["spec", "replicas"]).unwrap_or(0)},
        "status": {"replicas": api::get_i64(obj, &["status", "replicas"]).unwrap_or(0), "selector": if selector == "<none>" { String::new() } else { selector }},
    })
}

/// Set a status condition the way the kubelet and controllers do: a changed status moves
/// `lastTransitionTime`; the same status keeps it.
pub fn set_condition(obj: &mut Value, ty: &str, status: &str, reason: Option<&str>, message: Option<&str>, now: Millis) {
    let conds = api::entry(obj, &["status"]).entry("conditions").or_insert_with(|| json!([]));
    let Some(list) = conds.as_array_mut() else { return };
    let ts = rfc3339(now);
    let mut c = json!({"type": ty, "status": status, "lastProbeTime": null, "lastTransitionTime": ts});
    if let Some(r) = reason {
        c["reason"] = json!(r);
    }
    if let Some(m) = message {
        c["message"] = json!(m);
    }
    if let Some(existing) = list.iter_mut().find(|x| get_str(x, &["type"]) == Some(ty)) {
        if get_str(existing, &["status"]) == Some(status) {
            c["lastTransitionTime"] = existing.get("lastTransitionTime").cloned().unwrap_or(json!(ts));
        }
        *existing = c;
    } else {
        list.push(c);
    }
}

/// The server's error for a kind it does not serve (`no matches for kind`).
pub fn no_kind_match(api_version: &str, kind: &str) -> Status {
    Status::new(404, "NotFound", format!("no matches for kind {kind:?} in version {api_version:?}"))
}

/// Convenience for components: `Credentials::User`.
pub fn as_user(u: &UserInfo) -> Credentials {
    Credentials::User(u.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> ApiServer {
        let mut a = ApiServer::new(1, true);
        for o in rbac::bootstrap_policy() {
            let r = api::resource_for_kind(get_str(&o, &["apiVersion"]).unwrap(), get_str(&o, &["kind"]).unwrap()).unwrap();
            a.store.create(&ObjectKey::new(r, "", api::name(&o)), Object::new(o)).unwrap();
        }
        for ns in ["default", "kube-system"] {
            let mut o = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            crate::apiserver::defaults::apply("Namespace", &mut o);
            a.store.create(&ObjectKey::new(api::rid::NAMESPACE, "", ns), Object::new(o)).unwrap();
        }
        a.tokens.insert("ajay-token".to_string(), UserInfo::new("ajay", &["payments", "system:authenticated"]));
        a
    }

    fn deployment(name: &str, image: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
              "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "app", "image": image}]}}}})
    }

    #[test]
    fn create_defaults_and_stores_with_a_resource_version() {
        let mut a = server();
        let admin = as_user(&UserInfo::admin());
        let d = a.handle(Request::create(api::rid::DEPLOYMENT, "default", deployment("web", "nginx:1.25"), admin.clone())).unwrap();
        assert_eq!(d["metadata"]["generation"], 1);
        assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
        assert_eq!(d["metadata"]["namespace"], "default");
        assert!(!api::resource_version(&d).is_empty());
        let stages: Vec<&str> = a.trace.records.iter().map(|r| r.stage).collect();
        assert_eq!(stages, vec!["request", "authentication", "authorization", "mutating-admission", "validation", "validating-admission", "etcd"]);
        let again = a.handle(Request::create(api::rid::DEPLOYMENT, "default", deployment("web", "nginx:1.25"), admin)).unwrap_err();
        assert_eq!(again.code, 409);
        assert_eq!(again.message, "deployments.apps \"web\" already exists");
    }

    #[test]
    fn unknown_tokens_get_401_and_unbound_users_403() {
        let mut a = server();
        let e = a.handle(Request::create(api::rid::DEPLOYMENT, "default", deployment("web", "nginx:1.25"), Credentials::Token("nope".into()))).unwrap_err();
        assert_eq!(e.code, 401);
        let e =
            a.handle(Request::create(api::rid::DEPLOYMENT, "default", deployment("web", "nginx:1.25"), Credentials::Token("ajay-token".into()))).unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "deployments.apps is forbidden: User \"ajay\" cannot create resource \"deployments\" in API group \"apps\" in the namespace \"default\""
        );
        assert_eq!(a.trace.records.last().unwrap().flow, Flow::Denied);
        assert_eq!(a.store.count(api::rid::DEPLOYMENT), 0);
    }

    #[test]
    fn strict_decoding_rejects_unknown_fields() {
        let mut a = server();
        let mut d = deployment("web", "nginx:1.25");
        d["spec"]["replica"] = json!(3);
        let e = a.handle(Request::create(api::rid::DEPLOYMENT, "default", d, as_user(&UserInfo::admin()))).unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(e.message, "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: unknown field \"spec.replica\"");
    }

    #[test]
    fn stale_resource_versions_conflict_and_no_op_updates_write_nothing() {
        let mut a = server();
        let admin = as_user(&UserInfo::admin());
        let d = a.handle(Request::create(api::rid::DEPLOYMENT, "default", deployment("web", "nginx:1.25"), admin.clone())).unwrap();
        let rv = api::resource_version(&d).to_string();
        let same = a.handle(Request::update(api::rid::DEPLOYMENT, "default", "web", (*d).clone(), admin.clone())).unwrap();
        assert_eq!(api::resource_version(&same), rv);
        let mut changed = (*d).clone();
        changed["spec"]["replicas"] = json!(5);
        let up = a.handle(Request::update(api::rid::DEPLOYMENT, "default", "web", changed.clone(), admin.clone())).unwrap();
        assert_eq!(up["metadata"]["generation"], 2);
        let e = a.handle(Request::update(api::rid::DEPLOYMENT, "default", "web", changed, admin)).unwrap_err();
        assert_eq!(e.code, 409);
        assert!(e.message.ends_with("the object has been modified; please apply your changes to the latest version and try again"));
    }

    #[test]
    fn pods_in_missing_namespaces_are_not_found() {
        let mut a = server();
        let p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        let e = a.handle(Request::create(api::rid::POD, "shop", p, as_user(&UserInfo::admin()))).unwrap_err();
        assert_eq!(e.code, 404);
        assert_eq!(e.message, "namespaces \"shop\" not found");
    }

    #[test]
    fn generate_name_and_scale_subresource() {
        let mut a = server();
        let admin = as_user(&UserInfo::admin());
        a.handle(Request::create(api::rid::DEPLOYMENT, "default", deployment("web", "nginx:1.25"), admin.clone())).unwrap();
        let s = a
            .handle(Request::patch(api::rid::DEPLOYMENT, "default", "web", PatchType::Merge, json!({"spec": {"replicas": 4}}), admin.clone()).with_sub("scale"))
            .unwrap();
        assert_eq!(s["kind"], "Scale");
        assert_eq!(s["spec"]["replicas"], 4);
        let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "cfg-"}});
        cm["data"] = json!({"a": "b"});
        let c = a.handle(Request::create(api::rid::CONFIGMAP, "default", cm, admin)).unwrap();
        let n = api::name(&c);
        assert!(n.starts_with("cfg-") && n.len() == 9, "{n}");
    }
}
