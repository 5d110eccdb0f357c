//! Routing HTTP requests onto the API server: authentication (bearer tokens and
//! impersonation), discovery, the REST verbs of every stored kind with their query
//! parameters, `Table` responses, watch streams, pod logs and the access reviews.
//!
//! Every failure is a `Status` with the code, reason and message the real API server
//! gives; the core's pipeline (`ApiServer::handle`) does the authorization, admission,
//! validation and storage exactly as it does for the page.

use super::{discovery, http, watch, Shared};
use kubeloop_core::apiserver::fields::FieldSelector;
use kubeloop_core::apiserver::rbac::{self, Attributes, Decision, UserInfo};
use kubeloop_core::apiserver::store::EventType;
use kubeloop_core::apiserver::{hpa_to_v1, hpa_to_v2, Credentials, FieldValidation, LogOptions, PatchType, Request, Verb};
use kubeloop_core::cluster::{Action, Cluster};
use kubeloop_core::foundation::api::{self, get_str, rid as rids, Object, ResourceId, ResourceInfo, RESOURCES};
use kubeloop_core::foundation::labels::Selector;
use kubeloop_core::foundation::status::Status;
use kubeloop_core::foundation::value::Value;
use kubeloop_core::json;
use kubeloop_core::kubectl::printers::{server_table, IncludeObject};
use std::time::{Duration, Instant};

type StreamFn = Box<dyn FnOnce(&Shared, &mut http::Stream) + Send>;

pub enum Reply {
    Whole(http::Response),
    /// A response that streams (a watch, a followed log), of this content type: the
    /// function sends its chunks until it returns.
    Stream(&'static str, StreamFn),
    /// A WebSocket the request asked to upgrade to, with the subprotocol agreed and the
    /// binary messages to send before closing (`pods/exec` over `v5.channel.k8s.io`).
    WebSocket {
        protocol: String,
        messages: Vec<Vec<u8>>,
    },
    /// A WebSocket that stays open for as long as the session wants (`pods/portforward`).
    Session {
        protocol: String,
        session: Box<dyn Session>,
    },
}

/// Both ends of a WebSocket the server keeps open: the messages it sends first, then an
/// answer to each binary message the client sends. Runs on a blocking thread, so it may
/// wait for the cluster thread.
pub trait Session: Send {
    /// The first messages, and whether the session is already over.
    fn open(&mut self, sh: &Shared) -> (Vec<Vec<u8>>, bool);
    /// The messages answering one from the client, and whether the session is over.
    fn receive(&mut self, sh: &Shared, message: &[u8]) -> (Vec<Vec<u8>>, bool);
    /// The connection has ended (either side).
    fn closed(&mut self, _sh: &Shared) {}
    /// Whether the session also sends without being asked: [`Session::poll`] then runs
    /// whenever the client has been quiet for a moment.
    fn polls(&self) -> bool {
        false
    }
    /// What the session has to send unasked, and whether it is over.
    fn poll(&mut self, _sh: &Shared) -> (Vec<Vec<u8>>, bool) {
        (Vec::new(), false)
    }
}

/// An object as the API server's JSON encoder writes it (Go field order), then a newline.
fn json_body(v: &Value) -> Vec<u8> {
    super::gojson::encode(v)
}

fn json_response(code: u16, v: &Value) -> http::Response {
    http::Response::new(code, "application/json", json_body(v))
}

/// One line of a watch stream: `metav1.WatchEvent` as Go encodes it, `type` first, then
/// the object (whose encoding's final newline, if any, the event's own replaces).
fn watch_event(ty: &str, object: &[u8]) -> Vec<u8> {
    let mut l = format!("{{\"type\":\"{ty}\",\"object\":").into_bytes();
    l.extend_from_slice(object.trim_ascii_end());
    l.extend_from_slice(b"}\n");
    l
}

/// The result of an exec on channel 3: the kubelet's `json.Marshal` of the `metav1.Status`
/// it makes, so `Status::to_wire`'s Go field order without the `kind` and `apiVersion`
/// it leaves empty, and no final newline. `None` is success.
fn exec_result(failure: Option<Status>) -> Vec<u8> {
    let mut m = vec![3u8];
    match failure {
        None => m.extend_from_slice(br#"{"metadata":{},"status":"Success"}"#),
        Some(s) => {
            let wire = s.to_wire();
            let body = wire.strip_prefix(br#"{"kind":"Status","apiVersion":"v1","#.as_slice()).map_or(wire.trim_ascii_end().to_vec(), |rest| {
                let mut b = b"{".to_vec();
                b.extend_from_slice(rest.trim_ascii_end());
                b
            });
            m.extend(body);
        }
    }
    m
}

/// The `Status` of a command that exited with `code` (`NonZeroExitCode`, the code as its cause).
fn non_zero_exit(message: impl Into<String>, code: i64) -> Status {
    Status::new(0, "NonZeroExitCode", message).with_details(json!({"causes": [{"reason": "ExitCode", "message": code.to_string()}]}))
}

pub fn status_response(s: &Status) -> http::Response {
    if s.is_apf_rejection() {
        // API Priority and Fairness answers in plain text, with when to try again.
        let mut r = http::Response::new(429, "text/plain; charset=utf-8", kubeloop_core::foundation::status::APF_REJECTION.as_bytes().to_vec());
        r.headers.push(("Retry-After".into(), "1".into()));
        r.headers.push(("X-Content-Type-Options".into(), "nosniff".into()));
        return r;
    }
    http::Response::new(s.code, "application/json", s.to_wire())
}

fn whole(code: u16, v: &Value) -> Result<Reply, Status> {
    Ok(Reply::Whole(json_response(code, v)))
}

fn not_found() -> Status {
    Status::new(404, "NotFound", "the server could not find the requested resource")
}

/// A `Warning` response header (RFC 7234 `299 - "text"`), as kubectl prints `Warning: text`.
fn warning_header(text: &str) -> (String, String) {
    ("Warning".into(), format!("299 - \"{}\"", text.replace('\\', "\\\\").replace('"', "\\\"")))
}

pub fn route(sh: &Shared, req: &http::Request) -> Reply {
    match handle(sh, req) {
        Ok(r) => r,
        Err(s) => Reply::Whole(status_response(&s)),
    }
}

fn version() -> Value {
    let arch = if std::env::consts::ARCH == "x86_64" { "amd64" } else { std::env::consts::ARCH };
    kubeloop_core::apiserver::version_info(&format!("{}/{arch}", std::env::consts::OS))
}

fn anonymous() -> UserInfo {
    UserInfo::new("system:anonymous", &["system:unauthenticated"])
}

/// Bearer-token authentication, then impersonation (`Impersonate-User`, `-Group`), which
/// the caller must be allowed to do (`impersonate` on `users` and `groups`).
fn authenticate(sh: &Shared, req: &http::Request) -> Result<UserInfo, Status> {
    let token = match req.header("Authorization") {
        None => None,
        Some(h) => Some(h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")).ok_or_else(Status::unauthorized)?.trim().to_string()),
    };
    let target = req.header("Impersonate-User").map(str::to_string);
    let groups: Vec<String> = req.headers_named("Impersonate-Group").map(str::to_string).collect();
    sh.with(move |c| {
        let user = match token {
            None => anonymous(),
            Some(t) => c.api.authenticate(&Credentials::Token(t))?,
        };
        match target {
            None => Ok(user),
            Some(target) => c.api.impersonate(&user, &target, &groups),
        }
    })?
}

const PUBLIC_PATHS: &[&str] = &["api", "apis", "openapi", "version", "healthz", "livez", "readyz"];

fn handle(sh: &Shared, req: &http::Request) -> Result<Reply, Status> {
    let segs: Vec<&str> = req.path.split('/').filter(|s| !s.is_empty()).collect();
    let get = req.method == "GET";
    match segs.as_slice() {
        ["version"] if get => return whole(200, &version()),
        ["healthz" | "livez" | "readyz"] if get => return Ok(Reply::Whole(http::Response::new(200, "text/plain; charset=utf-8", b"ok".to_vec()))),
        _ => {}
    }
    let user = authenticate(sh, req)?;
    if user.name == "system:anonymous" {
        // Discovery is for authenticated users (`system:discovery`); everything else needs
        // an identity before any of the request is looked at (kubeloop serves as an API
        // server with anonymous requests limited to health and version).
        let discovery = match segs.as_slice() {
            [] | ["openapi", ..] => true,
            ["api", rest @ ..] => rest.len() <= 1,
            ["apis", rest @ ..] => rest.len() <= 2,
            _ => false,
        };
        if discovery {
            return Err(Status::new(403, "Forbidden", format!("forbidden: User \"system:anonymous\" cannot get path \"{}\"", req.path)));
        }
        return Err(Status::unauthorized());
    }
    let accept = req.header("Accept").unwrap_or("");
    match segs.as_slice() {
        [] if get => {
            let mut paths = vec!["/api".to_string(), "/api/v1".into(), "/apis".into(), "/openapi/v3".into(), "/version".into(), "/healthz".into()];
            paths.extend(discovery::group_versions().into_iter().filter(|(g, _)| !g.is_empty()).map(|(g, v)| format!("/apis/{g}/{v}")));
            whole(200, &json!({"paths": paths}))
        }
        ["api"] | ["apis"] if get => {
            let core = segs[0] == "api";
            match discovery::wants_aggregated(accept) {
                Some(v) => {
                    let mut doc = discovery::aggregated(core);
                    doc["apiVersion"] = json!(format!("apidiscovery.k8s.io/{v}"));
                    let mut r = json_response(200, &doc);
                    r.content_type = format!("application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList");
                    Ok(Reply::Whole(r))
                }
                None if core => whole(200, &discovery::api_versions(&sh.address)),
                None => whole(200, &discovery::group_list()),
            }
        }
        ["api", v] if get => whole(200, &discovery::resource_list("", v).ok_or_else(not_found)?),
        ["apis", g] if get => whole(200, &discovery::group(g).ok_or_else(not_found)?),
        ["apis", g, v] if get => whole(200, &discovery::resource_list(g, v).ok_or_else(not_found)?),
        ["debug", "api_priority_and_fairness", "dump_priority_levels"] if get => {
            if !user.groups.iter().any(|g| g == "system:masters") {
                return Err(Status::new(403, "Forbidden", format!("forbidden: User {:?} cannot get path {:?}", user.name, req.path)));
            }
            let text = sh.with(|c| c.api.flowcontrol.dump(&c.api.store, c.api.now)).map_err(|_| Status::internal("the cluster is gone"))?;
            Ok(Reply::Whole(http::Response::new(200, "text/plain; charset=utf-8", kubeloop_core::kubectl::describe::tabwrite(&text).into_bytes())))
        }
        ["openapi", "v3"] if get => whole(200, discovery::openapi_root()),
        ["openapi", "v3", rest @ ..] if get => whole(200, discovery::openapi_doc(&rest.join("/")).ok_or_else(not_found)?),
        ["kubeloop", "v1", "kubectl"] if req.method == "POST" => terminal(sh, req, user),
        ["apis", "authorization.k8s.io", "v1", review] if req.method == "POST" => access_review(sh, req, &user, review),
        ["apis", "authentication.k8s.io", "v1", "selfsubjectreviews"] if req.method == "POST" => {
            let mut groups = user.groups.clone();
            groups.sort();
            whole(
                201,
                &json!({"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1", "metadata": {"creationTimestamp": null},
                    "status": {"userInfo": {"username": user.name, "groups": user.groups}}}),
            )
        }
        ["api", v, rest @ ..] => resource(sh, req, user, "", v, rest),
        ["apis", g, v, rest @ ..] => resource(sh, req, user, g, v, rest),
        _ => Err(not_found()),
    }
}

/// `POST /kubeloop/v1/kubectl`: one command line through the page's terminal, as the
/// caller, on the same cluster (the same printers the page uses).
fn terminal(sh: &Shared, req: &http::Request, user: UserInfo) -> Result<Reply, Status> {
    let line = String::from_utf8_lossy(&req.body).trim().trim_start_matches("kubectl ").to_string();
    let out = sh.with(move |c| c.act(Credentials::User(user), Action::Kubectl(line)))?;
    let mut text = out.output.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    Ok(Reply::Whole(http::Response::new(200, "text/plain; charset=utf-8", text.into_bytes())))
}

/// SelfSubjectAccessReview, SubjectAccessReview and SelfSubjectRulesReview.
fn access_review(sh: &Shared, req: &http::Request, caller: &UserInfo, review: &str) -> Result<Reply, Status> {
    let body = body_value(req)?;
    if !body.is_object() {
        // What the universal decoder says when it looks for apiVersion and kind.
        let what = match &body {
            Value::Array(_) => "array",
            Value::String(_) => "string",
            Value::Number(_) => "number",
            Value::Bool(_) => "bool",
            _ => "null",
        };
        return Err(Status::bad_request(format!(
            "couldn't get version/kind; json parse error: json: cannot unmarshal {what} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}"
        )));
    }
    let (caller, review) = (caller.clone(), review.to_string());
    sh.with(move |c| review_answer(c, &body, &caller, &review))?
}

fn review_answer(c: &mut Cluster, body: &Value, caller: &UserInfo, review: &str) -> Result<Reply, Status> {
    let (kind, subject) = match review {
        "selfsubjectaccessreviews" => ("SelfSubjectAccessReview", caller.clone()),
        "subjectaccessreviews" => {
            let a = Attributes { verb: "create", group: "authorization.k8s.io", resource: "subjectaccessreviews", subresource: "", namespace: "", name: "" };
            if let Decision::Deny(_) = rbac::authorize(&c.api.store, caller, &a) {
                return Err(Status::new(
                    403,
                    "Forbidden",
                    format!("subjectaccessreviews.authorization.k8s.io is forbidden: {}", a.forbidden_cause(&caller.name)),
                ));
            }
            let user = get_str(body, &["spec", "user"]).unwrap_or("");
            let groups: Vec<&str> = api::get_array(body, &["spec", "groups"]).iter().filter_map(Value::as_str).collect();
            ("SubjectAccessReview", UserInfo::new(user, &groups))
        }
        "selfsubjectrulesreviews" => {
            let ns = get_str(body, &["spec", "namespace"]).unwrap_or("");
            let (resource_rules, non_resource_rules) = rbac::rules_for(&c.api.store, caller, ns);
            let mut out = body.clone();
            out["metadata"] = json!({"creationTimestamp": null});
            out["status"] = json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": false});
            return whole(201, &out);
        }
        _ => return Err(not_found()),
    };
    let allowed = if let Some(ra) = api::get(body, &["spec", "resourceAttributes"]) {
        let s = |k: &str| get_str(ra, &[k]).unwrap_or("");
        let a = Attributes {
            verb: s("verb"),
            group: s("group"),
            resource: s("resource"),
            subresource: s("subresource"),
            namespace: s("namespace"),
            name: s("name"),
        };
        matches!(rbac::authorize(&c.api.store, &subject, &a), Decision::Allow)
    } else {
        // Discovery and health paths are readable by every authenticated user
        // (`system:discovery`, `system:public-info-viewer`); anything else needs a role
        // that grants the path, which only `system:masters` has here.
        let path = get_str(body, &["spec", "nonResourceAttributes", "path"]).unwrap_or("");
        let first = path.split('/').find(|s| !s.is_empty()).unwrap_or("");
        subject.groups.iter().any(|g| g == "system:masters") || (PUBLIC_PATHS.contains(&first) && subject.groups.iter().any(|g| g == "system:authenticated"))
    };
    let mut out = body.clone();
    out["apiVersion"] = json!("authorization.k8s.io/v1");
    out["kind"] = json!(kind);
    out["metadata"] = json!({"creationTimestamp": null});
    out["status"] = json!({"allowed": allowed});
    whole(201, &out)
}

/// A request body as a JSON tree: JSON, or YAML for `application/yaml` and server-side apply.
fn body_value(req: &http::Request) -> Result<Value, Status> {
    let ct = req.header("Content-Type").unwrap_or("application/json");
    let base = ct.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    if req.body.is_empty() {
        return Err(Status::bad_request("the body of the request was empty"));
    }
    match base.as_str() {
        "application/json" | "application/merge-patch+json" | "application/strategic-merge-patch+json" | "application/json-patch+json" | "" => {
            serde_json::from_slice(&req.body).map_err(|e| Status::bad_request(format!("couldn't get version/kind; json parse error: {e}")))
        }
        "application/vnd.kubernetes.protobuf" => super::protobuf::decode(&req.body).map_err(|e| Status::bad_request(format!("the body of the request could not be decoded: {e}"))),
        "application/yaml" | "application/apply-patch+yaml" => {
            let text = String::from_utf8_lossy(&req.body);
            let doc = kubeloop_core::foundation::manifest::parse(&text).into_iter().next().ok_or_else(|| Status::bad_request("the body of the request was empty"))?;
            if let Some(d) = doc.diagnostics.first() {
                return Err(Status::bad_request(format!("error converting YAML to JSON: yaml: line {}: {}", d.line, d.message)));
            }
            doc.object.ok_or_else(|| Status::bad_request("the body of the request was empty"))
        }
        _ => Err(Status::new(
            415,
            "UnsupportedMediaType",
            format!("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got {ct})"),
        )),
    }
}

fn wants_table(req: &http::Request) -> bool {
    req.header("Accept").is_some_and(|a| a.split(',').next().is_some_and(|first| first.contains("as=Table")))
}

fn include_object(req: &http::Request) -> Result<IncludeObject, Status> {
    match req.param("includeObject") {
        None | Some("") | Some("Metadata") => Ok(IncludeObject::Metadata),
        Some("None") => Ok(IncludeObject::None),
        Some("Object") => Ok(IncludeObject::Object),
        Some(other) => Err(Status::bad_request(format!("includeObject: Unsupported value: {other:?}: supported values: \"Metadata\", \"None\", \"Object\""))),
    }
}

/// dryRun, fieldManager and fieldValidation of a write.
fn write_options(r: &mut Request, req: &http::Request) -> Result<(), Status> {
    match req.param("dryRun") {
        None | Some("") => {}
        Some("All") => r.dry_run = true,
        Some(v) => return Err(Status::bad_request(format!("Invalid value: {v:?}: supported values: \"All\""))),
    }
    r.field_manager = match req.param("fieldManager") {
        Some(m) if !m.is_empty() => m.to_string(),
        // The default manager is the client's user agent up to the first slash.
        _ => req.header("User-Agent").and_then(|ua| ua.split('/').next()).unwrap_or("unknown").to_string(),
    };
    r.field_validation = match req.param("fieldValidation") {
        Some("Strict") => FieldValidation::Strict,
        Some("Ignore") => FieldValidation::Ignore,
        None | Some("") | Some("Warn") => FieldValidation::Warn,
        Some(v) => return Err(Status::bad_request(format!("fieldValidation: Unsupported value: {v:?}: supported values: \"Ignore\", \"Strict\", \"Warn\""))),
    };
    Ok(())
}

fn selectors(req: &http::Request, kind: &str) -> Result<(Option<Selector>, FieldSelector), Status> {
    let label = match req.param("labelSelector").filter(|s| !s.is_empty()) {
        Some(s) => Some(Selector::parse(s).map_err(Status::bad_request)?),
        None => None,
    };
    let field = FieldSelector::parse(kind, req.param("fieldSelector").unwrap_or(""))?;
    Ok((label, field))
}

fn selected(obj: &Value, kind: &str, label: &Option<Selector>, field: &FieldSelector) -> bool {
    label.as_ref().is_none_or(|l| l.matches(api::labels(obj))) && field.matches(kind, obj)
}

/// A list's items carry no `kind` or `apiVersion` of their own (the list has them).
fn list_item(o: &Value) -> Value {
    let mut o = o.clone();
    if let Some(m) = o.as_object_mut() {
        m.remove("kind");
        m.remove("apiVersion");
    }
    o
}

/// The store partition that holds a resource's objects: autoscaling/v1 HPAs are the
/// stored autoscaling/v2 objects.
fn stored_rid(rid: ResourceId) -> ResourceId {
    if rid == rids::HPA_V1 {
        rids::HPA
    } else {
        rid
    }
}

/// A stored object as the resource `rid` serves it (converted to autoscaling/v1 for the
/// v1 HPAs).
fn served(rid: ResourceId, o: &Object) -> Object {
    if rid == rids::HPA_V1 {
        Object::new(hpa_to_v1(o))
    } else {
        o.clone()
    }
}

/// A `Table` of objects as the resource `rid` serves them. The real API server prints
/// every version from its internal object, so the cells of autoscaling/v1 HPAs come from
/// their v2 form (their metrics), and the rows carry the v1 objects.
fn table(rid: ResourceId, objects: &[&Value], now: u64, include: IncludeObject, rv: &str) -> Value {
    let kind = RESOURCES[rid].kind;
    let mut t = server_table(kind, objects, now, include, rv);
    if rid == rids::HPA_V1 {
        let stored: Vec<Value> = objects.iter().map(|o| hpa_to_v2(o)).collect();
        let cells = server_table(kind, &stored.iter().collect::<Vec<_>>(), now, IncludeObject::None, rv);
        if let (Some(rows), Some(from)) = (t.get_mut("rows").and_then(Value::as_array_mut), cells.get("rows").and_then(Value::as_array)) {
            for (row, c) in rows.iter_mut().zip(from) {
                row["cells"] = c["cells"].clone();
            }
        }
    }
    t
}

fn resource(sh: &Shared, req: &http::Request, user: UserInfo, group: &str, version: &str, rest: &[&str]) -> Result<Reply, Status> {
    let (ns, rest) = match rest {
        ["namespaces", ns, r @ ..] if !r.is_empty() && !matches!(r, ["status" | "finalize"]) => (*ns, r),
        _ => ("", rest),
    };
    let (plural, name, sub) = match rest {
        [p] => (*p, "", ""),
        [p, n] => (*p, *n, ""),
        [p, n, s] => (*p, *n, *s),
        _ => return Err(not_found()),
    };
    let rid: ResourceId = RESOURCES.iter().position(|r| r.group == group && r.version == version && r.plural == plural).ok_or_else(not_found)?;
    let res = &RESOURCES[rid];
    if (!res.namespaced && !ns.is_empty()) || (res.namespaced && ns.is_empty() && !name.is_empty()) {
        return Err(not_found());
    }
    let creds = Credentials::User(user.clone());
    if sub == "exec" && res.kind == "Pod" && !name.is_empty() && matches!(req.method.as_str(), "GET" | "POST") {
        return exec(sh, req, creds, ns, name);
    }
    if sub == "portforward" && res.kind == "Pod" && !name.is_empty() && matches!(req.method.as_str(), "GET" | "POST") {
        return super::portforward::start(sh, req, creds, ns, name);
    }
    if sub == "attach" && res.kind == "Pod" && !name.is_empty() && matches!(req.method.as_str(), "GET" | "POST") {
        return attach(sh, req, creds, ns, name);
    }
    if sub == "proxy" {
        return Err(Status::bad_request(format!(
            "kubeloop runs no network listeners for pods, so {sub} is not available; kubectl exec and kubectl logs reach the simulated containers"
        )));
    }
    match (req.method.as_str(), name.is_empty()) {
        ("GET", true) if req.flag("watch") => watch(sh, req, &user, rid, ns),
        ("GET", true) => list(sh, req, creds, rid, ns),
        ("GET", false) if sub == "log" => logs(sh, req, creds, ns, name),
        ("GET", false) => {
            let table = if wants_table(req) && sub.is_empty() { Some(include_object(req)?) } else { None };
            let r = Request::new(Verb::Get, rid, ns, name, creds).with_sub(sub);
            let out = sh.with(move |c| {
                let obj = c.request(r)?;
                Ok::<_, Status>(match table {
                    Some(inc) => self::table(rid, &[&obj], c.now, inc, api::resource_version(&obj)),
                    None => (*obj).clone(),
                })
            })??;
            whole(200, &out)
        }
        ("POST", true) => {
            let body = body_value(req)?;
            let mut r = Request::create(rid, ns, body, creds);
            write_options(&mut r, req)?;
            write(sh, r, 201)
        }
        ("POST", false) if matches!(sub, "binding" | "eviction" | "token") => {
            let body = body_value(req)?;
            let mut r = Request::create(rid, ns, body, creds).with_sub(sub);
            r.name = name.to_string();
            write_options(&mut r, req)?;
            write(sh, r, 201)
        }
        ("PUT", false) => {
            let body = body_value(req)?;
            let body_name = api::name(&body);
            if !body_name.is_empty() && body_name != name && sub.is_empty() {
                return Err(Status::bad_request(format!("the name of the object ({body_name}) does not match the name on the URL ({name})")));
            }
            let mut r = Request::update(rid, ns, name, body, creds).with_sub(sub);
            write_options(&mut r, req)?;
            write(sh, r, 200)
        }
        ("PATCH", false) => {
            let ct = req.header("Content-Type").unwrap_or("").split(';').next().unwrap_or("").trim().to_ascii_lowercase();
            let ty = match ct.as_str() {
                "application/merge-patch+json" => PatchType::Merge,
                "application/strategic-merge-patch+json" => PatchType::Strategic,
                "application/json-patch+json" => PatchType::Json,
                "application/apply-patch+yaml" => PatchType::Apply { force: req.flag("force") },
                _ => {
                    return Err(Status::new(
                        415,
                        "UnsupportedMediaType",
                        format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {ct:?})"),
                    ))
                }
            };
            let body = body_value(req)?;
            let mut r = Request::patch(rid, ns, name, ty, body, creds).with_sub(sub);
            write_options(&mut r, req)?;
            if matches!(ty, PatchType::Apply { .. }) && req.param("fieldManager").is_none_or(str::is_empty) {
                return Err(Status::bad_request("PATCH, application/apply-patch+yaml requests must provide a fieldManager"));
            }
            write(sh, r, 200)
        }
        ("DELETE", false) => {
            let mut r = Request::delete(rid, ns, name, creds);
            delete_options(&mut r, req)?;
            write(sh, r, 200)
        }
        ("DELETE", true) => delete_collection(sh, req, creds, rid, ns),
        _ => {
            Err(Status::new(405, "MethodNotAllowed", format!("the server does not allow this method on the requested resource ({} {})", req.method, req.path)))
        }
    }
}

/// DeleteOptions from the query and from the body (kubectl sends them in the body).
fn delete_options(r: &mut Request, req: &http::Request) -> Result<(), Status> {
    write_options(r, req)?;
    let body = if req.body.is_empty() { Value::Null } else { body_value(req)? };
    if let Some(p) = get_str(&body, &["propagationPolicy"]).or(req.param("propagationPolicy")) {
        if !matches!(p, "Orphan" | "Background" | "Foreground") {
            return Err(Status::new(
                422,
                "Invalid",
                format!("propagationPolicy: Unsupported value: {p:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""),
            ));
        }
        r.propagation = Some(p.to_string());
    } else if body.get("orphanDependents").and_then(Value::as_bool) == Some(true) {
        r.propagation = Some("Orphan".into());
    }
    if let Some(g) = api::get_i64(&body, &["gracePeriodSeconds"]).or_else(|| req.param("gracePeriodSeconds").and_then(|g| g.parse().ok())) {
        r.grace_period = Some(g);
    }
    if api::get_array(&body, &["dryRun"]).iter().any(|d| d.as_str() == Some("All")) {
        r.dry_run = true;
    }
    Ok(())
}

fn write(sh: &Shared, r: Request, code: u16) -> Result<Reply, Status> {
    let (out, warnings, existed) = sh.with(move |c| {
        let existed = c.api.store.get_by(r.resource, &r.namespace, &r.name).is_some();
        let out = c.request(r);
        (out, std::mem::take(&mut c.api.warnings), existed)
    })?;
    let mut resp = match out {
        // A server-side apply that created the object answers 201, as a create does.
        Ok(obj) => json_response(if code == 200 && !existed { 201 } else { code }, &obj),
        Err(s) => status_response(&s),
    };
    resp.headers.extend(warnings.iter().map(|w| warning_header(w)));
    Ok(Reply::Whole(resp))
}

fn list(sh: &Shared, req: &http::Request, creds: Credentials, rid: ResourceId, ns: &str) -> Result<Reply, Status> {
    let res = &RESOURCES[rid];
    let (label, field) = selectors(req, res.kind)?;
    let table = if wants_table(req) { Some(include_object(req)?) } else { None };
    let (ns, cont, limit) = (ns.to_string(), req.param("continue").unwrap_or("").to_string(), req.param("limit").unwrap_or("").to_string());
    sh.with(move |c| list_page(c, creds, rid, &ns, label, field, table, &cont, &limit))?
}

#[allow(clippy::too_many_arguments)]
fn list_page(
    c: &mut Cluster,
    creds: Credentials,
    rid: ResourceId,
    ns: &str,
    label: Option<Selector>,
    field: FieldSelector,
    table: Option<IncludeObject>,
    cont: &str,
    limit: &str,
) -> Result<Reply, Status> {
    let res = &RESOURCES[rid];
    let all = c.request(Request::new(Verb::List, rid, ns, "", creds))?;
    let rv = get_str(&all, &["metadata", "resourceVersion"]).unwrap_or("").to_string();
    let items: Vec<&Value> = api::get_array(&all, &["items"]).iter().filter(|o| selected(o, res.kind, &label, &field)).collect();
    // Pages: `continue` is the offset of the next item, tied to the list's revision.
    let offset = match Some(cont).filter(|s| !s.is_empty()) {
        None => 0,
        Some(tok) => tok
            .split_once(':')
            .and_then(|(_, o)| o.parse::<usize>().ok())
            .ok_or_else(|| Status::bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?,
    };
    let limit = limit.parse::<usize>().ok().filter(|l| *l > 0).unwrap_or(usize::MAX);
    let page: Vec<&Value> = items.iter().skip(offset).take(limit).copied().collect();
    let next = offset.saturating_add(page.len());
    let mut meta = json!({"resourceVersion": rv});
    if next < items.len() {
        meta["continue"] = json!(format!("{rv}:{next}"));
        meta["remainingItemCount"] = json!(items.len() - next);
    }
    if let Some(inc) = table {
        let mut t = self::table(rid, &page, c.now, inc, &rv);
        t["metadata"] = meta;
        return whole(200, &t);
    }
    let out = json!({"kind": format!("{}List", res.kind), "apiVersion": res.api_version(), "metadata": meta, "items": page.iter().map(|o| list_item(o)).collect::<Vec<_>>()});
    whole(200, &out)
}

fn delete_collection(sh: &Shared, req: &http::Request, creds: Credentials, rid: ResourceId, ns: &str) -> Result<Reply, Status> {
    let res = &RESOURCES[rid];
    let (label, field) = selectors(req, res.kind)?;
    let mut template = Request::delete(rid, ns, "", creds.clone());
    delete_options(&mut template, req)?;
    let ns = ns.to_string();
    sh.with(move |c| {
        let ns = ns.as_str();
        let attrs = Attributes { verb: "deletecollection", group: res.group, resource: res.plural, subresource: "", namespace: ns, name: "" };
        if let Credentials::User(u) = &creds {
            if let Decision::Deny(_) = rbac::authorize(&c.api.store, u, &attrs) {
                return Err(Status::forbidden(res, "", &attrs.forbidden_cause(&u.name)));
            }
        }
        let names: Vec<(String, String)> = c
            .api
            .store
            .list(rid, if ns.is_empty() { None } else { Some(ns) })
            .filter(|o| selected(o, res.kind, &label, &field))
            .map(|o| (api::namespace(o).to_string(), api::name(o).to_string()))
            .collect();
        let mut items = Vec::new();
        for (n, name) in names {
            let mut r = template.clone();
            r.namespace = n;
            r.name = name;
            if let Ok(o) = c.request(r) {
                items.push(list_item(&o));
            }
        }
        let rv = c.api.store.revision().to_string();
        whole(200, &json!({"kind": format!("{}List", res.kind), "apiVersion": res.api_version(), "metadata": {"resourceVersion": rv}, "items": items}))
    })?
}

/// The stream protocols kubeloop speaks for `pods/exec`, best first: the WebSocket
/// channel protocols (`k8s.io/apimachinery/pkg/util/remotecommand`). SPDY is not served;
/// kubectl 1.30 and later use WebSockets.
const EXEC_PROTOCOLS: [&str; 2] = ["v5.channel.k8s.io", "v4.channel.k8s.io"];

/// `pods/NAME/exec?command=…&container=…&stdout=true`: run the command in the container and
/// answer over the WebSocket the client asked for: stdout on channel 1, then the result
/// on channel 3 (a `metav1.Status`, `NonZeroExitCode` with the code as its cause).
fn exec(sh: &Shared, req: &http::Request, creds: Credentials, ns: &str, name: &str) -> Result<Reply, Status> {
    let wants_ws = req.header("Upgrade").is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
    let offered: Vec<String> = req.headers_named("Sec-WebSocket-Protocol").flat_map(|v| v.split(',')).map(|p| p.trim().to_string()).collect();
    let argv: Vec<String> = req.query.iter().filter(|(k, _)| k == "command").map(|(_, v)| v.clone()).collect();
    let (ns, name, container) = (ns.to_string(), name.to_string(), req.param("container").map(str::to_string));
    // The API server's checks come first, whatever the protocol.
    let check = {
        let (creds, ns, name, container, argv) = (creds.clone(), ns.clone(), name.clone(), container.clone(), argv.clone());
        sh.with(move |c| c.exec_check(creds, &ns, &name, container.as_deref(), &argv)).and_then(|r| r)
    };
    let container = check?;
    let Some(protocol) = EXEC_PROTOCOLS.iter().find(|p| offered.iter().any(|o| o == *p)) else {
        return Err(Status::bad_request(if wants_ws {
            format!("kubeloop speaks only the WebSocket protocols {} for exec; the client offered {}", EXEC_PROTOCOLS.join(", "), offered.join(", "))
        } else {
            "Upgrade request required: kubeloop serves exec over WebSockets (v5.channel.k8s.io, v4.channel.k8s.io), not SPDY".to_string()
        }));
    };
    if req.flag("stdin") {
        let session = ExecSession { ns, name, container, argv, id: 0, v5: *protocol == "v5.channel.k8s.io", done: false };
        return Ok(Reply::Session { protocol: protocol.to_string(), session: Box::new(session) });
    }
    let result = sh.with(move |c| c.exec_run(&ns, &name, &container, &argv)).and_then(|r| r);
    let (lines, code) = match result {
        Ok(r) => r,
        Err(s) => {
            let mut err = vec![3u8];
            err.extend(s.to_wire());
            return Ok(Reply::WebSocket { protocol: protocol.to_string(), messages: vec![err] });
        }
    };
    let mut messages = stream_messages(&lines);
    messages.push(exit_result(code));
    Ok(Reply::WebSocket { protocol: protocol.to_string(), messages })
}

/// One run of lines on the same stream per message, in order.
fn stream_messages(lines: &[(u8, String)]) -> Vec<Vec<u8>> {
    let mut messages: Vec<Vec<u8>> = Vec::new();
    for (stream, l) in lines {
        match messages.last_mut() {
            Some(m) if m.first() == Some(stream) => {}
            _ => messages.push(vec![*stream]),
        }
        if let Some(m) = messages.last_mut() {
            m.extend(kubeloop_core::apiserver::output_bytes(l));
        }
    }
    messages
}

/// The exit of an exec's command as channel 3 says it.
fn exit_result(code: i32) -> Vec<u8> {
    exec_result(
        (code != 0).then(|| non_zero_exit(format!("command terminated with non-zero exit code: error executing command, exit code {code}"), code.into())),
    )
}

/// `pods/exec` with `stdin=true`: the kubelet runs the command as stdin comes (channel
/// 0); output goes back on channels 1 and 2 as it is written, then the result on 3.
/// `v5.channel.k8s.io` closes stdin with a message on channel 255; otherwise stdin ends
/// with the connection.
struct ExecSession {
    ns: String,
    name: String,
    container: String,
    argv: Vec<String>,
    id: u64,
    v5: bool,
    done: bool,
}

impl ExecSession {
    fn step(&mut self, sh: &Shared, input: Option<Option<String>>) -> (Vec<Vec<u8>>, bool) {
        let (ns, name, id) = (self.ns.clone(), self.name.clone(), self.id);
        let r = match input {
            Some(Some(text)) => sh.with(move |c| c.exec_session(&ns, &name, id, kubeloop_core::apiserver::ExecInput::Stdin(&text))),
            Some(None) => sh.with(move |c| c.exec_session(&ns, &name, id, kubeloop_core::apiserver::ExecInput::Eof)),
            None => {
                let (container, argv) = (self.container.clone(), self.argv.clone());
                sh.with(move |c| {
                    let id = c.next_session_id();
                    (id, c.exec_session(&ns, &name, id, kubeloop_core::apiserver::ExecInput::Start { container: &container, argv: &argv }))
                })
                .map(|(id, r)| {
                    self.id = id;
                    r
                })
            }
        };
        session_messages(r.and_then(|r| r), &mut self.done, exit_result)
    }
}

/// What a step of a session sends back: its output, and once the command is over the
/// result on channel 3 (`exit`'s), or the error there; whether the session is done.
fn session_messages(r: Result<kubeloop_core::apiserver::ExecProgress, Status>, done: &mut bool, exit: impl Fn(i32) -> Vec<u8>) -> (Vec<Vec<u8>>, bool) {
    match r {
        Ok(p) => {
            let mut messages = stream_messages(&p.lines);
            if let Some(code) = p.exit {
                messages.push(exit(code));
                *done = true;
            }
            (messages, *done)
        }
        Err(s) => {
            let mut err = vec![3u8];
            err.extend(s.to_wire());
            *done = true;
            (vec![err], true)
        }
    }
}

/// A message from the client of a session: stdin's bytes (channel 0), or its end (v5's
/// close of stream 0 on channel 255); None for anything else.
fn stdin_message(message: &[u8], v5: bool) -> Option<Option<String>> {
    match message.split_first() {
        Some((0, data)) => Some(Some(String::from_utf8_lossy(data).into_owned())),
        Some((255, [0])) if v5 => Some(None),
        _ => None,
    }
}

impl Session for ExecSession {
    fn open(&mut self, sh: &Shared) -> (Vec<Vec<u8>>, bool) {
        self.step(sh, None)
    }
    fn receive(&mut self, sh: &Shared, message: &[u8]) -> (Vec<Vec<u8>>, bool) {
        match stdin_message(message, self.v5) {
            Some(input) => self.step(sh, Some(input)),
            None => (Vec::new(), false),
        }
    }
    fn closed(&mut self, sh: &Shared) {
        if !self.done {
            let (ns, name, id) = (self.ns.clone(), self.name.clone(), self.id);
            let _ = sh.with(move |c| c.exec_session(&ns, &name, id, kubeloop_core::apiserver::ExecInput::End));
        }
    }
}

/// `pods/attach`: the API server authorizes `create pods/attach` and picks the container;
/// the kubelet connects the client to the container's own process (a shell reading
/// stdin, `stdin: true`), over the same WebSocket channels as exec.
fn attach(sh: &Shared, req: &http::Request, creds: Credentials, ns: &str, name: &str) -> Result<Reply, Status> {
    let wants_ws = req.header("Upgrade").is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
    let offered: Vec<String> = req.headers_named("Sec-WebSocket-Protocol").flat_map(|v| v.split(',')).map(|p| p.trim().to_string()).collect();
    let (ns, name, container) = (ns.to_string(), name.to_string(), req.param("container").map(str::to_string));
    let check = {
        let (ns, name, container) = (ns.clone(), name.clone(), container.clone());
        sh.with(move |c| {
            let pod = c.request(Request::new(Verb::Create, kubeloop_core::foundation::api::rid::POD, &ns, &name, creds).with_sub("attach"))?;
            kubeloop_core::apiserver::pod_container(&pod, container.as_deref())
        })
        .and_then(|r| r)
    };
    let container = check?;
    let Some(protocol) = EXEC_PROTOCOLS.iter().find(|p| offered.iter().any(|o| o == *p)) else {
        return Err(Status::bad_request(if wants_ws {
            format!("kubeloop speaks only the WebSocket protocols {} for attach; the client offered {}", EXEC_PROTOCOLS.join(", "), offered.join(", "))
        } else {
            "Upgrade request required: kubeloop serves attach over WebSockets (v5.channel.k8s.io, v4.channel.k8s.io), not SPDY".to_string()
        }));
    };
    if !req.flag("stdin") {
        return Ok(Reply::Session { protocol: protocol.to_string(), session: Box::new(OutputSession { ns, name, container, follow: None }) });
    }
    let session = AttachSession { ns, name, container, v5: *protocol == "v5.channel.k8s.io", done: false };
    Ok(Reply::Session { protocol: protocol.to_string(), session: Box::new(session) })
}

/// A client attached to a container's process: stdin on channel 0, what the process
/// writes on 1 and 2; when it exits the streams end. Closing the connection detaches.
struct AttachSession {
    ns: String,
    name: String,
    container: String,
    v5: bool,
    done: bool,
}

impl AttachSession {
    fn step(&mut self, sh: &Shared, input: Option<Option<String>>) -> (Vec<Vec<u8>>, bool) {
        let (ns, name, container) = (self.ns.clone(), self.name.clone(), self.container.clone());
        let r = sh.with(move |c| match &input {
            Some(Some(text)) => c.attach_session(&ns, &name, &container, kubeloop_core::apiserver::ExecInput::Stdin(text)),
            Some(None) => c.attach_session(&ns, &name, &container, kubeloop_core::apiserver::ExecInput::Eof),
            None => c.attach_session(&ns, &name, &container, kubeloop_core::apiserver::ExecInput::Start { container: &container, argv: &[] }),
        });
        // An attached process's end is its container's: no exit code on channel 3.
        session_messages(r.and_then(|r| r), &mut self.done, |_| exec_result(None))
    }
}

impl Session for AttachSession {
    fn open(&mut self, sh: &Shared) -> (Vec<Vec<u8>>, bool) {
        self.step(sh, None)
    }
    fn receive(&mut self, sh: &Shared, message: &[u8]) -> (Vec<Vec<u8>>, bool) {
        match stdin_message(message, self.v5) {
            Some(input) => self.step(sh, Some(input)),
            None => (Vec::new(), false),
        }
    }
    fn closed(&mut self, sh: &Shared) {
        if !self.done {
            let (ns, name, container) = (self.ns.clone(), self.name.clone(), self.container.clone());
            let _ = sh.with(move |c| c.attach_session(&ns, &name, &container, kubeloop_core::apiserver::ExecInput::End));
        }
    }
}

/// `kubectl attach` without `-i`: what the container writes from now on, on channel 1,
/// until it ends.
struct OutputSession {
    ns: String,
    name: String,
    container: String,
    follow: Option<kubeloop_core::kubectl::LogFollow>,
}

impl Session for OutputSession {
    fn open(&mut self, sh: &Shared) -> (Vec<Vec<u8>>, bool) {
        let (ns, name, container) = (self.ns.clone(), self.name.clone(), self.container.clone());
        let r = sh.with(move |c| {
            c.attach_session(&ns, &name, &container, kubeloop_core::apiserver::ExecInput::Output)?;
            Ok::<_, Status>(kubeloop_core::kubectl::LogFollow::from_now(&c.api, c.kubelet(), &ns, &name, &container))
        });
        match r.and_then(|r| r) {
            Ok(f) => {
                self.follow = Some(f);
                (Vec::new(), false)
            }
            Err(s) => session_messages(Err(s), &mut false, |_| exec_result(None)),
        }
    }
    fn receive(&mut self, _sh: &Shared, _message: &[u8]) -> (Vec<Vec<u8>>, bool) {
        (Vec::new(), false)
    }
    fn polls(&self) -> bool {
        true
    }
    fn poll(&mut self, sh: &Shared) -> (Vec<Vec<u8>>, bool) {
        let Some(mut f) = self.follow.take() else { return (Vec::new(), true) };
        let polled = sh.with(move |c| {
            let (lines, over) = f.poll(&c.api, c.kubelet());
            (lines, over, f)
        });
        let Ok((lines, over, f)) = polled else { return (Vec::new(), true) };
        self.follow = Some(f);
        let lines: Vec<(u8, String)> = lines.into_iter().map(|l| (1, l)).collect();
        (stream_messages(&lines), over)
    }
}

fn logs(sh: &Shared, req: &http::Request, creds: Credentials, ns: &str, name: &str) -> Result<Reply, Status> {
    let (ns, name) = (ns.to_string(), name.to_string());
    let options =
        LogOptions { container: req.param("container").map(str::to_string), previous: req.flag("previous"), timestamps: req.flag("timestamps"), since: None };
    // `sinceSeconds` counts back from the cluster's now; `sinceTime` is a moment.
    let since_seconds = match req.param("sinceSeconds") {
        None => None,
        Some(v) => match v.parse::<i64>() {
            Ok(n) if n >= 1 => Some(n),
            _ => return Err(Status::bad_request(format!("sinceSeconds: Invalid value: {v}: must be greater than 0"))),
        },
    };
    let since_time = match req.param("sinceTime").filter(|t| !t.is_empty()) {
        None => None,
        Some(t) => {
            Some(kubeloop_core::foundation::sim::rfc3339_offset(t).ok_or_else(|| Status::bad_request(format!("invalid sinceTime {t:?}")))?.max(0) as u64)
        }
    };
    if since_seconds.is_some() && since_time.is_some() {
        return Err(Status::bad_request("at most one of `sinceTime` or `sinceSeconds` may be specified"));
    }
    let fetch = move |sh: &Shared| {
        let (creds, ns, name, mut options) = (creds.clone(), ns.clone(), name.clone(), options.clone());
        sh.with(move |c| {
            options.since = since_time.or_else(|| since_seconds.map(|s| c.now.saturating_sub(s as u64 * 1000)));
            c.logs(creds, &ns, &name, &options)
        })
        .and_then(|r| r)
    };
    let text = fetch(sh)?;
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    if let Some(n) = req.param("tailLines").and_then(|t| t.parse::<usize>().ok()) {
        lines = lines.split_off(lines.len().saturating_sub(n));
    }
    let mut out = lines.concat().into_bytes();
    if let Some(n) = req.param("limitBytes").and_then(|t| t.parse::<usize>().ok()) {
        out.truncate(n);
    }
    if !req.flag("follow") {
        return Ok(Reply::Whole(http::Response::new(200, "text/plain", out)));
    }
    // `-f`: what the container writes next, until it is replaced or gone or the client
    // hangs up.
    Ok(Reply::Stream(
        "text/plain",
        Box::new(move |sh: &Shared, w: &mut http::Stream| {
            if w.send(&out).is_err() {
                return;
            }
            let mut seen = text;
            // Programs write between store changes: look again at least every half second.
            let mut rev = sh.wait_change(0, Duration::ZERO);
            loop {
                rev = sh.wait_change(rev, Duration::from_millis(500));
                if w.closed() {
                    return;
                }
                match fetch(sh) {
                    Ok(now) if now == seen => {}
                    Ok(now) if now.starts_with(&seen) => {
                        if w.send(&now.as_bytes()[seen.len()..]).is_err() {
                            return;
                        }
                        seen = now;
                    }
                    _ => return,
                }
            }
        }),
    ))
}

/// What a watch sends and how.
struct WatchSpec {
    rid: ResourceId,
    ns: String,
    label: Option<Selector>,
    field: FieldSelector,
    /// The revision to start after; `None` sends the current objects first.
    since: Option<u64>,
    bookmarks: bool,
    /// `sendInitialEvents=true`: end the initial objects with a marked bookmark.
    initial_end: bool,
    table: Option<IncludeObject>,
    timeout: Duration,
}

fn watch(sh: &Shared, req: &http::Request, user: &UserInfo, rid: ResourceId, ns: &str) -> Result<Reply, Status> {
    let res = &RESOURCES[rid];
    let (label, field) = selectors(req, res.kind)?;
    {
        let (user, ns, name) = (user.clone(), ns.to_string(), field.name().unwrap_or("").to_string());
        sh.with(move |c| {
            let a = Attributes { verb: "watch", group: res.group, resource: res.plural, subresource: "", namespace: &ns, name: &name };
            match rbac::authorize(&c.api.store, &user, &a) {
                Decision::Deny(_) => Err(Status::forbidden(res, "", &a.forbidden_cause(&user.name))),
                Decision::Allow => Ok(()),
            }
        })??;
    }
    let initial = req.flag("sendInitialEvents");
    let since = match req.param("resourceVersion") {
        None | Some("") | Some("0") => None,
        Some(_) if initial => None,
        Some(rv) => Some(rv.parse::<u64>().map_err(|_| Status::bad_request(format!("invalid resource version: {rv:?}")))?),
    };
    let timeout = req.param("timeoutSeconds").and_then(|t| t.parse::<u64>().ok()).map(Duration::from_secs).unwrap_or(Duration::from_secs(1800));
    let table = if wants_table(req) { Some(include_object(req)?) } else { None };
    let spec = WatchSpec { rid, ns: ns.to_string(), label, field, since, bookmarks: req.flag("allowWatchBookmarks"), initial_end: initial, table, timeout };
    Ok(Reply::Stream("application/json", Box::new(move |sh: &Shared, w: &mut http::Stream| stream_watch(sh, spec, w))))
}

/// What the cluster thread hands a watch: the changes after a revision (with the new
/// revision and the simulated time), or the oldest revision still kept if that one is gone.
type Batch = Result<(Vec<(EventType, Option<Object>, Object)>, u64, u64), u64>;

fn stream_watch(sh: &Shared, spec: WatchSpec, w: &mut http::Stream) {
    let res: &ResourceInfo = &RESOURCES[spec.rid];
    let event = |ty: &str, obj: &Value, now| -> Vec<u8> {
        match spec.table {
            Some(inc) => watch_event(ty, &json_body(&table(spec.rid, &[obj], now, inc, api::resource_version(obj)))),
            None => watch_event(ty, &json_body(obj)),
        }
    };
    let bookmark = |rv: u64, initial_end: bool| -> Vec<u8> {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        watch_event("BOOKMARK", &json_body(&json!({"kind": res.kind, "apiVersion": res.api_version(), "metadata": meta})))
    };
    let matches = |o: &Value| selected(o, res.kind, &spec.label, &spec.field);
    let ns_filter = if spec.ns.is_empty() { None } else { Some(spec.ns.clone()) };
    // A watch reads the partition its objects are stored in, and sends them converted to
    // the version it was asked for.
    let (rid, served_as, nsf, listing) = (stored_rid(spec.rid), spec.rid, ns_filter.clone(), spec.since.is_none());
    // Without a revision, the objects now come first; from a revision, only what changed
    // after it (`watch::convert` judges each change by the version before it).
    let Ok((current, rev, now)) = sh.with(move |c| {
        let objs: Vec<Object> = if listing { c.api.store.list(rid, nsf.as_deref()).map(|o| served(served_as, o)).collect() } else { Vec::new() };
        (objs, c.api.store.revision(), c.now)
    }) else {
        return;
    };
    let mut out = Vec::new();
    for o in current.iter().filter(|o| matches(o)) {
        out.extend(event("ADDED", o, now));
    }
    if spec.initial_end {
        out.extend(bookmark(rev, true));
    }
    let mut last = spec.since.unwrap_or(rev);
    let started = Instant::now();
    let mut last_bookmark = Instant::now();
    loop {
        if !out.is_empty() {
            if w.send(&out).is_err() {
                return;
            }
            out.clear();
        }
        if started.elapsed() >= spec.timeout {
            // A bookmark before the watch ends lets the client resume from here.
            if spec.bookmarks {
                let _ = w.send(&bookmark(last, false));
            }
            return;
        }
        let nsf = ns_filter.clone();
        let batch: Result<Batch, Status> = sh.with(move |c| match c.api.store.events_since(rid, last) {
            Err(_) => Err(c.api.store.compacted_revision()),
            Ok(it) => {
                let evs = it
                    .filter(|e| nsf.as_deref().is_none_or(|n| api::namespace(&e.object) == n))
                    .map(|e| (e.kind, e.prev.as_ref().map(|p| served(served_as, p)), served(served_as, &e.object)))
                    .collect();
                Ok((evs, c.api.store.revision(), c.now))
            }
        });
        let Ok(batch) = batch else { return };
        let (changes, rev, now) = match batch {
            Ok(b) => b,
            Err(oldest) => {
                let s = Status::expired(format!("too old resource version: {last} ({oldest})"));
                let _ = w.send(&watch_event("ERROR", &s.to_wire()));
                return;
            }
        };
        if changes.is_empty() {
            last = rev;
            sh.wait_change(rev, Duration::from_millis(500));
            if w.closed() {
                return;
            }
            if spec.bookmarks && last_bookmark.elapsed() >= Duration::from_secs(60) {
                out.extend(bookmark(last, false));
                last_bookmark = Instant::now();
            }
            continue;
        }
        for (ty, o) in watch::replay(changes.iter().map(|(k, p, o)| (*k, p.as_ref(), o)), &matches) {
            out.extend(event(ty, &o, now));
        }
        last = rev;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, target: &str, content_type: &str, body: &str) -> http::Request {
        let headers = vec![("Authorization".into(), "Bearer admin-token".into()), ("Content-Type".into(), content_type.into())];
        http::Request::new(method, target, headers, body.as_bytes().to_vec())
    }

    /// A whole answer's code and body.
    fn whole_reply(sh: &Shared, req: http::Request) -> (u16, Vec<u8>) {
        match route(sh, &req) {
            Reply::Whole(r) => (r.code, r.body),
            _ => panic!("{} {} did not answer whole", req.method, req.path),
        }
    }

    /// Everything a watch sends until its `timeoutSeconds`.
    fn streamed(sh: &Shared, req: http::Request) -> Vec<u8> {
        let Reply::Stream(_, send) = route(sh, &req) else { panic!("{} did not stream", req.path) };
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        send(sh, &mut http::Stream::new(tx));
        let mut out = Vec::new();
        while let Ok(chunk) = rx.try_recv() {
            out.extend_from_slice(&chunk);
        }
        out
    }

    const CMS: &str = "/api/v1/namespaces/default/configmaps";

    fn put_tier(sh: &Shared, name: &str, tier: &str) {
        let patch = format!(r#"{{"metadata":{{"labels":{{"tier":"{tier}"}}}}}}"#);
        let (code, body) = whole_reply(sh, request("PATCH", &format!("{CMS}/{name}"), "application/merge-patch+json", &patch));
        assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    }

    #[test]
    fn a_watch_resumed_with_a_selector_reports_objects_leaving_and_joining_it() {
        let sh = super::super::standing_cluster();
        for (name, tier) in [("leaves", "web"), ("joins", "api"), ("stays", "web"), ("goes", "web")] {
            let cm = format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","labels":{{"tier":"{tier}"}}}}}}"#);
            assert_eq!(whole_reply(&sh, request("POST", CMS, "application/json", &cm)).0, 201);
        }
        let (_, list) = whole_reply(&sh, request("GET", &format!("{CMS}?labelSelector=tier%3Dweb"), "", ""));
        let list: serde_json::Value = serde_json::from_slice(&list).unwrap();
        let rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_string();
        assert_eq!(list["items"].as_array().unwrap().len(), 3);
        put_tier(&sh, "leaves", "api");
        put_tier(&sh, "joins", "web");
        put_tier(&sh, "stays", "web-too");
        put_tier(&sh, "stays", "web");
        assert_eq!(whole_reply(&sh, request("DELETE", &format!("{CMS}/goes"), "", "")).0, 200);

        let out = streamed(&sh, request("GET", &format!("{CMS}?watch=1&resourceVersion={rv}&labelSelector=tier%3Dweb&timeoutSeconds=1"), "", ""));
        let events: Vec<serde_json::Value> = out.split(|b| *b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).unwrap()).collect();
        let got: Vec<(&str, &str, &str)> = events
            .iter()
            .map(|e| {
                (e["type"].as_str().unwrap(), e["object"]["metadata"]["name"].as_str().unwrap(), e["object"]["metadata"]["labels"]["tier"].as_str().unwrap())
            })
            .collect();
        // The object that left is sent as it was, under the revision it left at.
        assert_eq!(
            got,
            [("DELETED", "leaves", "web"), ("ADDED", "joins", "web"), ("DELETED", "stays", "web"), ("ADDED", "stays", "web"), ("DELETED", "goes", "web")]
        );
        let rvs: Vec<u64> = events.iter().map(|e| e["object"]["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()).collect();
        assert!(rvs.windows(2).all(|w| w[0] < w[1]) && rvs[0] > rv.parse().unwrap(), "{rvs:?}");
    }

    #[test]
    fn bodies_end_with_the_newline_the_api_servers_encoder_writes() {
        let sh = super::super::standing_cluster();
        for target in ["/api/v1/namespaces/default/configmaps/kube-root-ca.crt", "/api/v1/namespaces/default/configmaps", "/version", "/api", "/apis/apps/v1"] {
            let (code, body) = whole_reply(&sh, request("GET", target, "", ""));
            assert_eq!(code, 200, "{target}");
            assert!(body.ends_with(b"}\n"), "{target}: {:?}", String::from_utf8_lossy(&body[body.len().saturating_sub(20)..]));
        }
        let (code, body) = whole_reply(&sh, request("GET", "/api/v1/namespaces/default/configmaps/nope", "", ""));
        assert_eq!(code, 404);
        assert_eq!(
            String::from_utf8(body).unwrap(),
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"configmaps \\\"nope\\\" not found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"nope\",\"kind\":\"configmaps\"},\"code\":404}\n"
        );
    }

    #[test]
    fn watch_events_are_written_type_first_and_an_expired_watch_ends_with_the_status_in_go_order() {
        let sh = super::super::standing_cluster();
        let out = streamed(&sh, request("GET", &format!("{CMS}?watch=1&fieldSelector=metadata.name%3Dkube-root-ca.crt&timeoutSeconds=1"), "", ""));
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","), "{text}");
        assert!(text.ends_with("}}\n") && text.lines().count() == 1, "{text}");

        let rev = sh.with(|c| {
            let r = c.api.store.revision();
            c.api.store.compact(r);
            r
        });
        let rev = rev.unwrap();
        let out = streamed(&sh, request("GET", &format!("{CMS}?watch=1&resourceVersion=1&timeoutSeconds=1"), "", ""));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("{{\"type\":\"ERROR\",\"object\":{{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{{}},\"status\":\"Failure\",\"message\":\"too old resource version: 1 ({rev})\",\"reason\":\"Expired\",\"code\":410}}}}\n")
        );
    }

    #[test]
    fn an_exec_result_is_the_kubelets_status_in_go_field_order() {
        assert_eq!(exec_result(None), b"\x03{\"metadata\":{},\"status\":\"Success\"}");
        let failed = exec_result(Some(non_zero_exit("command terminated with non-zero exit code: error executing command, exit code 2", 2)));
        assert_eq!(
            String::from_utf8_lossy(&failed[1..]),
            r#"{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: error executing command, exit code 2","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"2"}]}}"#
        );
        assert_eq!(failed[0], 3);
    }
}
