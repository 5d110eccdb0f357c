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
pub mod certificates;
pub mod defaults;
pub mod fields;
pub mod flowcontrol;
pub mod managed;
pub mod metrics;
pub mod patch;
pub mod quota;
pub mod rbac;
pub mod schema;
pub mod store;
pub mod trace;
pub mod validation;

use crate::apiserver::store::{Store, StoreError};
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
    /// Sent by one of kubeloop's own loops, which fire their requests in instant bursts
    /// where real components spread them out (client-side QPS limits): API Priority and
    /// Fairness counts them but neither queues nor refuses them.
    pub internal: bool,
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
            internal: false,
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
    ("VolumeAttachment", false, true),
    ("CertificateSigningRequest", false, true),
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
mod allocator;
pub mod authn;
pub mod autoscaling;
mod create;
mod delete;
mod subresources;
mod update;

pub use allocator::ip_string;
pub use autoscaling::{hpa_to_v1, hpa_to_v2};
pub use subresources::{
    byte_char, output_bytes, output_text, pod_container, raw_byte, rfc3339_nano, scale_of, ExecInput, ExecOutput, ExecProgress, KubeletClient, LogOptions,
    RAW_BYTE, UNTERMINATED,
};

/// What a pipeline stage returns: its value, or the stage's name and the `Status` that
/// ends the request there.
type Staged<T> = Result<T, (&'static str, Status)>;

/// The API server: the store behind it, its identities and its trace. A clone is the same
/// server at the same moment (the fuzz targets start each input from one).
#[derive(Clone)]
pub struct ApiServer {
    pub store: Store,
    pub now: Millis,
    /// Bearer tokens and the users they authenticate.
    pub tokens: BTreeMap<String, UserInfo>,
    /// The service account tokens among them, with what keeps each valid.
    pub issued: BTreeMap<String, authn::IssuedToken>,
    /// Webhook (or webhook configuration) names whose backends are down.
    pub webhooks_down: BTreeSet<String>,
    /// Since when kube-apiserver is down (`Fault::ApiServerDown`): every request is refused.
    pub down_since: Option<Millis>,
    /// Since when etcd is down (`Fault::EtcdDown`): requests that need it time out.
    pub etcd_down_since: Option<Millis>,
    pub trace: Trace,
    /// Warnings returned with the last response.
    pub warnings: Vec<String>,
    /// Kinds stored without any loop acting on them: creating one warns so.
    pub unsimulated: BTreeSet<ResourceId>,
    /// metrics-server's last scrapes of the kubelets (`metrics.k8s.io`).
    pub metrics: metrics::MetricsServer,
    /// API Priority and Fairness: the priority levels' seats and queues.
    pub flowcontrol: flowcontrol::FlowControl,
    /// RBAC's answers while the policy is unchanged.
    decisions: rbac::Decisions,
    rng: Rng,
    /// The random source of the clients that run inside the cluster's terminal (kubectl's
    /// generated names), seeded with the run so that it replays.
    pub client_rng: Rng,
    cel: CelCache,
    allocated_ips: BTreeSet<u32>,
    allocated_node_ports: BTreeSet<i64>,
}

/// 10.96.0.0/16, kind's service range.
/// The most body the API server reads of a request: 3 MiB (`--max-request-body-bytes`'s
/// default, `MaxRequestBodyBytes`).
pub const MAX_REQUEST_BODY_BYTES: usize = 3 * 1024 * 1024;
const SERVICE_NET: u32 = (10 << 24) | (96 << 16);
const SERVICE_SIZE: u32 = 1 << 16;

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
            issued: BTreeMap::new(),
            webhooks_down: BTreeSet::new(),
            down_since: None,
            etcd_down_since: None,
            trace: Trace::new(trace),
            warnings: vec![],
            unsimulated: BTreeSet::new(),
            metrics: metrics::MetricsServer::default(),
            flowcontrol: flowcontrol::FlowControl::default(),
            decisions: rbac::Decisions::default(),
            rng: Rng::new(seed, Stream::ApiServer),
            client_rng: Rng::new(seed, Stream::Kubectl),
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
        self.trace.push_request(RequestLog {
            t: self.now,
            user: c.user.clone(),
            verb: c.verb.to_string(),
            object: c.object.clone(),
            code,
            status: status.map(Status::to_json),
        });
    }

    /// Write to etcd. An object too large for etcd is tried once more without its
    /// `managedFields`, as the API server does.
    fn store_write(&mut self, key: &ObjectKey, obj: Value, create: bool) -> Result<Object, StoreError> {
        let write = |store: &mut Store, obj: Value| if create { store.create(key, Object::new(obj)) } else { store.update(key, Object::new(obj), None) };
        // A clone shares the whole tree; it is only changed if the write fails.
        let mut retry = obj.clone();
        match write(&mut self.store, obj) {
            Err(StoreError::TooLarge) if get(&retry, &["metadata", "managedFields"]).is_some() => {
                if let Some(m) = retry.get_mut("metadata").and_then(Value::as_object_mut) {
                    m.remove("managedFields");
                }
                write(&mut self.store, retry)
            }
            r => r,
        }
    }

    /// A failed write as the API server answers it: etcd's own errors pass through as a
    /// 500 with etcd's words; anything else is `otherwise`.
    fn fail_write(&mut self, c: &Ctx, e: StoreError, otherwise: Status) -> Result<Object, Status> {
        match e.etcd_message() {
            Some(m) => self.fail(c, "etcd", Status::new(500, "", m)),
            None => self.fail(c, "etcd", otherwise),
        }
    }

    fn fail(&mut self, c: &Ctx, stage: &'static str, s: Status) -> Result<Object, Status> {
        record!(self, c, Flow::Denied, stage, "denied", "", s.message.clone());
        self.log(c, s.code, Some(&s));
        Err(s)
    }

    /// Serve one request.
    pub fn handle(&mut self, mut req: Request) -> Result<Object, Status> {
        if req.resource == api::rid::HPA_V1 {
            return self.handle_hpa_v1(req);
        }
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
            request: self.trace.requests_end(),
        };
        let writes = !matches!(req.verb, Verb::Get | Verb::List);
        if self.down_since.is_some() {
            // Nothing listens on the API server's port: the request never arrives.
            record!(
                self,
                &c,
                Flow::Request,
                "request",
                "error",
                "",
                format!("{} {}: connection refused (kube-apiserver is down)", verb_str.to_ascii_uppercase(), req.path())
            );
            return Err(Status::connection_refused());
        }
        if writes {
            record!(self, &c, Flow::Request, "request", "ok", "", format!("{} {}", verb_str.to_ascii_uppercase(), req.path()));
        }

        // Authentication.
        let user = match self.authenticate(&req.credentials) {
            Ok(u) => u,
            Err(s) => {
                c.user = "system:anonymous".into();
                return self.fail(&c, "authentication", s);
            }
        };
        if tracing {
            c.user = user.name.clone();
        }
        if req.internal && req.field_manager.is_empty() {
            req.field_manager = managed::default_manager(&req.component, &user);
        }
        if writes {
            record!(self, &c, Flow::AuthnAuthz, "authentication", "ok", "", format!("user {:?} groups {:?}", user.name, user.groups));
        }

        // API Priority and Fairness, between authentication and authorization.
        if !api::is_metrics(req.resource) {
            let verb = req.verb.as_str();
            let (listed, listed_bytes) =
                if matches!(req.verb, Verb::List) { self.store.size_of_list(req.resource, Some(ns.as_str()).filter(|n| !n.is_empty())) } else { (0, 0) };
            let attrs = flowcontrol::Attrs { user: &user, verb, res, subresource: &req.subresource, namespace: &ns };
            let client = if req.component.is_empty() { user.name.as_str() } else { req.component.as_str() };
            let client = format!("{}|{client}", user.name);
            match self.flowcontrol.admit(
                &self.store,
                &attrs,
                &client,
                self.now,
                flowcontrol::seats(verb, listed_bytes),
                flowcontrol::duration(listed),
                !req.internal,
            ) {
                flowcontrol::Admit::Rejected { flow_schema, level, why } => {
                    let method = match req.verb {
                        Verb::Get | Verb::List => "get",
                        Verb::Create => "post",
                        Verb::Update => "put",
                        Verb::Patch(_) => "patch",
                        Verb::Delete => "delete",
                    };
                    let s = Status::too_many_requests(method, &res.qualified_resource(), &req.name);
                    record!(
                        self,
                        &c,
                        Flow::Denied,
                        "priority-and-fairness",
                        "denied",
                        "",
                        format!("429 Too many requests: priority level {level:?} (FlowSchema {flow_schema:?}) refused it: {why}")
                    );
                    self.log(&c, s.code, Some(&s));
                    return Err(s);
                }
                flowcontrol::Admit::Dispatched { flow_schema, level, waited, seats } if waited > 0 => {
                    record!(
                        self,
                        &c,
                        Flow::AuthnAuthz,
                        "priority-and-fairness",
                        "ok",
                        "",
                        format!(
                            "waited {} in priority level {level:?}'s queues (FlowSchema {flow_schema:?}, {seats} seat(s))",
                            crate::foundation::sim::go_duration(waited)
                        )
                    );
                }
                _ => {}
            }
        }

        // Authorization.
        let attrs =
            Attributes { verb: req.verb.as_str(), group: res.group, resource: res.plural, subresource: &req.subresource, namespace: &ns, name: &req.name };
        if let Decision::Deny(reason) = self.decisions.authorize(&self.store, &user, &attrs) {
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

        // The REST handler reads at most 3 MiB of body (`MaxRequestBodyBytes`).
        if req.body.as_ref().is_some_and(|b| b.json_len_within(MAX_REQUEST_BODY_BYTES).is_none()) {
            let s = Status::new(413, "RequestEntityTooLarge", format!("Request entity too large: limit is {MAX_REQUEST_BODY_BYTES}"));
            return self.fail(&c, "decode", s);
        }
        if self.etcd_down_since.is_some() && !api::is_metrics(req.resource) {
            // The API server's etcd client retries until the request's deadline; kubeloop
            // answers at once with what the client finally gets. (Admission does not run:
            // the request is refused before it, where upstream would fail at the write.)
            let s = Status::etcd_timeout();
            record!(self, &c, Flow::Etcd, "etcd", "error", "", format!("etcd does not answer: {}", s.message));
            self.log(&c, s.code, Some(&s));
            return Err(s);
        }
        if api::is_metrics(req.resource) {
            let out = self.serve_metrics(res, req.resource, &ns, &req);
            match &out {
                Ok(_) => self.log(&c, 200, None),
                Err(s) => self.log(&c, s.code, Some(s)),
            }
            return out;
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
            Verb::Create if req.subresource == "token" && res.kind == "ServiceAccount" => self.create_token(&c, &ns, &req),
            // `pods/exec`, `pods/attach` and `pods/portforward` connect to the kubelet: the API server's
            // part is to authorize the caller and find the pod (`pkg/registry/core/pod/rest`
            // `ExecREST`, `PortForwardREST`).
            Verb::Create if matches!(req.subresource.as_str(), "exec" | "attach" | "portforward") && res.kind == "Pod" => {
                let out = self.get(res, req.resource, &ns, &req.name, "");
                match &out {
                    Ok(_) => self.log(&c, 101, None),
                    Err(s) => self.log(&c, s.code, Some(s)),
                }
                out
            }
            Verb::Create => {
                let body = req.body.take();
                self.create(&mut c, &user, res, req.resource, &ns, &req, body)
            }
            // Server-side apply of an object that does not exist yet creates it.
            Verb::Patch(PatchType::Apply { force }) if self.store.get_by(req.resource, &ns, &req.name).is_none() => {
                self.apply_create(&mut c, &user, res, &ns, req, force)
            }
            Verb::Update | Verb::Patch(_) => {
                let body = req.body.take();
                self.update(&c, &user, res, req.resource, &ns, &req, body)
            }
            Verb::Delete => self.delete(&c, &user, res, req.resource, &ns, &req),
        }
    }

    /// A server-side apply that creates the object (out of line: crates/split keeps a first
    /// visit's download to what it runs).
    #[inline(never)]
    fn apply_create(&mut self, c: &mut Ctx, user: &UserInfo, res: &ResourceInfo, ns: &str, mut req: Request, force: bool) -> Result<Object, Status> {
        let body = req.body.take().unwrap_or(Value::Null);
        let body_name = api::name(&body).to_string();
        if body_name != req.name {
            let s = Status::bad_request(format!("the name of the object ({body_name}) does not match the name on the URL ({})", req.name));
            return self.fail(c, "decode", s);
        }
        match crate::apiserver::managed::apply(None, &body, &req.field_manager, force, &res.api_version(), res.kind, &req.subresource, self.now) {
            Ok(obj) => self.create(c, user, res, req.resource, ns, &req, Some(obj)),
            Err(s) => self.fail(c, "conflict", s),
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
        if op == "CREATE" && matches!(res.kind, "PersistentVolumeClaim" | "PersistentVolume") {
            if res.kind == "PersistentVolumeClaim" {
                if let Some(class) = admission::default_storage_class_plugin(&self.store, obj) {
                    notes.push(format!("DefaultStorageClass: storageClassName {class}"));
                }
            }
            admission::storage_object_in_use_protection(res.kind, obj);
            notes.push("StorageObjectInUseProtection".into());
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
        admission::persistent_volume_claim_resize(&self.store, &req)?;
        certificates::admit(&self.store, res, op, sub, name, user, obj, old)?;
        if let Some(w) = req.object.and_then(flowcontrol::unsimulated_fields) {
            self.warnings.push(w);
        }
        let mut v = Verdict::default();
        // The plugins' order of `AllOrderedPlugins`: LimitRanger, the policies and
        // webhooks, then ResourceQuota, which charges what was admitted.
        admission::limit_ranger_validate(&self.store, &req)?;
        admission::validating_policies(&self.store, &mut self.cel, &req, &mut v)?;
        admission::webhooks(&self.store, &mut self.cel, &req, false, &self.webhooks_down, &mut v)?;
        let charged = self.resource_quota(&req)?;
        if !charged.is_empty() {
            v.consulted.push(format!("ResourceQuota (charged {})", charged.join(", ")));
        }
        self.warnings.extend(v.warnings);
        Ok(v.consulted)
    }

    /// The ResourceQuota plugin: check the request against its namespace's quotas and,
    /// unless it is a dry run, write the usage it adds into their `status.used` at once,
    /// so that the next request is checked against it (`checkQuotas`).
    fn resource_quota(&mut self, req: &admission::Request) -> Result<Vec<String>, Status> {
        let rid = RESOURCES.iter().position(|r| r == req.resource).unwrap_or(usize::MAX);
        let Some(ev) = quota::evaluator_for(rid) else { return Ok(vec![]) };
        if req.namespace.is_empty() || !ev.handles(req.operation, req.subresource) {
            return Ok(vec![]);
        }
        let quotas: Vec<Object> = self.store.list(api::rid::RESOURCEQUOTA, Some(req.namespace)).cloned().collect();
        let Some(obj) = req.object else { return Ok(vec![]) };
        if quotas.is_empty() {
            return Ok(vec![]);
        }
        self.charge_quotas(req, &ev, quotas, obj)
    }

    /// [`ApiServer::resource_quota`] in a namespace with quotas, out of line (one without
    /// never runs it; crates/split keeps a first visit's download to what it runs).
    #[inline(never)]
    fn charge_quotas(&mut self, req: &admission::Request, ev: &quota::Evaluator, quotas: Vec<Object>, obj: &Value) -> Result<Vec<String>, Status> {
        let refs: Vec<&Value> = quotas.iter().map(|q| &**q).collect();
        let charge =
            quota::check_request(&refs, ev, req.operation, obj, req.old_object, self.now).map_err(|m| Status::forbidden(req.resource, &req.name, &m))?;
        let mut names = Vec::new();
        for (i, used) in charge.charged {
            let q = &quotas[i];
            names.push(api::name(q).to_string());
            if req.dry_run {
                continue;
            }
            let mut updated = (**q).clone();
            api::set(&mut updated, &["status", "used"], quota::list_json(&used));
            let key = ObjectKey::new(api::rid::RESOURCEQUOTA, req.namespace, api::name(q));
            if let Err(e) = self.store_write(&key, updated, false) {
                return Err(Status::internal(e.etcd_message().unwrap_or("resource quota status could not be updated")));
            }
            self.trace.writes += 1;
        }
        Ok(names)
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
        // An unchanged condition stays the one the object's earlier versions share.
        if *existing != c {
            *existing = c;
        }
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

/// The API server's `/version`, as running on `platform` (`linux/amd64`).
pub fn version_info(platform: &str) -> Value {
    json!({
        "major": "1", "minor": "36", "emulationMajor": "1", "emulationMinor": "36", "minCompatibilityMajor": "1", "minCompatibilityMinor": "35",
        "gitVersion": "v1.36.0+kubeloop", "gitCommit": "", "gitTreeState": "clean", "buildDate": "", "goVersion": "", "compiler": "kubeloop",
        "platform": platform,
    })
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
        let stages: Vec<&str> = a.trace.records().iter().map(|r| r.stage).collect();
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
        assert_eq!(a.trace.records().last().unwrap().flow, Flow::Denied);
        assert_eq!(a.store.count(api::rid::DEPLOYMENT), 0);
    }

    #[test]
    fn issued_tokens_authenticate_until_they_expire_or_their_account_goes() {
        let mut a = server();
        let admin = as_user(&UserInfo::admin());
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}});
        a.handle(Request::create(api::rid::SERVICEACCOUNT, "default", sa.clone(), admin.clone())).unwrap();
        let ask = |a: &mut ApiServer, name: &str, seconds: i64| {
            let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": seconds}});
            let mut r = Request::create(api::rid::SERVICEACCOUNT, "default", body, as_user(&UserInfo::admin())).with_sub("token");
            r.name = name.to_string();
            a.handle(r)
        };
        let short = ask(&mut a, "robot", 60).unwrap_err();
        assert_eq!(
            (short.code, short.message.as_str()),
            (422, "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes")
        );
        assert_eq!(ask(&mut a, "nobody", 600).unwrap_err().message, "serviceaccounts \"nobody\" not found");
        let tr = ask(&mut a, "robot", 600).unwrap();
        assert_eq!(tr["kind"], "TokenRequest");
        assert_eq!(tr["spec"]["audiences"], json!([authn::API_AUDIENCE]));
        assert_eq!(tr["status"]["expirationTimestamp"], rfc3339(600_000));
        let token = Credentials::Token(get_str(&tr, &["status", "token"]).unwrap().to_string());
        // The account's identity, which RBAC grants nothing yet.
        let list = |a: &mut ApiServer, c: &Credentials| a.handle(Request::new(Verb::List, api::rid::POD, "default", "", c.clone()));
        assert_eq!(
            list(&mut a, &token).unwrap_err().message,
            "pods is forbidden: User \"system:serviceaccount:default:robot\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
        );
        let user = a.authenticate(&token).unwrap();
        assert_eq!(user.groups, ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]);
        a.now = 599_999;
        assert!(a.authenticate(&token).is_ok());
        a.now = 600_000;
        assert_eq!(list(&mut a, &token).unwrap_err().code, 401);
        // A token of an account that is deleted (and made again) no longer authenticates.
        let tr = ask(&mut a, "robot", 3600).unwrap();
        let token = Credentials::Token(get_str(&tr, &["status", "token"]).unwrap().to_string());
        assert!(a.authenticate(&token).is_ok());
        a.handle(Request::delete(api::rid::SERVICEACCOUNT, "default", "robot", admin.clone())).unwrap();
        a.handle(Request::create(api::rid::SERVICEACCOUNT, "default", sa, admin)).unwrap();
        assert_eq!(a.authenticate(&token).unwrap_err().code, 401);
    }

    #[test]
    fn impersonation_needs_the_impersonate_verb_and_gives_the_groups_upstream_does() {
        let a = server();
        let admin = UserInfo::admin();
        let ajay = a.impersonate(&admin, "ajay", &[]).unwrap();
        assert_eq!(ajay.groups, ["system:authenticated"]);
        let sa = a.impersonate(&admin, "system:serviceaccount:shop:web", &[]).unwrap();
        assert_eq!(sa.groups, ["system:serviceaccounts", "system:serviceaccounts:shop", "system:authenticated"]);
        let dev = a.impersonate(&admin, "system:serviceaccount:shop:web", &["dev".to_string()]).unwrap();
        assert_eq!(dev.groups, ["dev", "system:authenticated"]);
        assert_eq!(a.impersonate(&admin, "system:anonymous", &[]).unwrap().groups, Vec::<String>::new());
        let e = a.impersonate(&ajay, "admin", &[]).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (403, "users \"admin\" is forbidden: User \"ajay\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope")
        );
        let e = a.impersonate(&ajay, "system:serviceaccount:shop:web", &[]).unwrap_err();
        assert_eq!(
            e.message,
            "serviceaccounts \"web\" is forbidden: User \"ajay\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"shop\""
        );
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
