//! API failures as data: the `metav1.Status` an API server returns, with the constructors
//! of `k8s.io/apimachinery/pkg/api/errors/errors.go` and field errors of
//! `k8s.io/apimachinery/pkg/util/validation/field/errors.go`.

use crate::foundation::api::ResourceInfo;
use crate::foundation::value::{json, Value};

/// One field error (`spec.replicas: Invalid value: -1: must be ...`).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub kind: FieldErrorKind,
    pub field: String,
    /// The offending value, already rendered the way Go's field errors render it.
    pub value: Option<String>,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorKind {
    NotFound,
    Required,
    Duplicate,
    Invalid,
    NotSupported,
    Forbidden,
    TooLong,
    TooMany,
}

impl FieldErrorKind {
    fn text(self) -> &'static str {
        match self {
            Self::NotFound => "Not found",
            Self::Required => "Required value",
            Self::Duplicate => "Duplicate value",
            Self::Invalid => "Invalid value",
            Self::NotSupported => "Unsupported value",
            Self::Forbidden => "Forbidden",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
        }
    }
    fn cause_type(self) -> &'static str {
        match self {
            Self::NotFound => "FieldValueNotFound",
            Self::Required => "FieldValueRequired",
            Self::Duplicate => "FieldValueDuplicate",
            Self::Invalid => "FieldValueInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Forbidden => "FieldValueForbidden",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
        }
    }
}

/// Render a JSON value as Go's field errors print it: strings quoted, numbers and bools
/// bare, anything else as JSON.
pub fn render_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => other.to_string(),
    }
}

impl FieldError {
    pub fn new(kind: FieldErrorKind, field: impl Into<String>, value: Option<String>, detail: impl Into<String>) -> Self {
        FieldError { kind, field: field.into(), value, detail: detail.into() }
    }
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Required, field, None, detail)
    }
    pub fn invalid(field: impl Into<String>, value: &Value, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Invalid, field, Some(render_value(value)), detail)
    }
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Forbidden, field, None, detail)
    }
    pub fn not_supported(field: impl Into<String>, value: &Value, supported: &[&str]) -> Self {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        Self::new(FieldErrorKind::NotSupported, field, Some(render_value(value)), format!("supported values: {}", list.join(", ")))
    }
    /// `field.TooLong`: the value is omitted, the limit said in bytes.
    pub fn too_long(field: impl Into<String>, max: usize) -> Self {
        Self::new(FieldErrorKind::TooLong, field, None, format!("may not be more than {max} {}", if max == 1 { "byte" } else { "bytes" }))
    }
    pub fn duplicate(field: impl Into<String>, value: &Value) -> Self {
        Self::new(FieldErrorKind::Duplicate, field, Some(render_value(value)), "")
    }
    /// The text after `<field>: `.
    pub fn body(&self) -> String {
        let mut s = self.kind.text().to_string();
        if let Some(v) = &self.value {
            s.push_str(": ");
            s.push_str(v);
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// A failed API call, shaped like `metav1.Status`.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub code: u16,
    pub reason: String,
    pub message: String,
    pub details: Option<Value>,
}

impl Status {
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Status { code, reason: reason.to_string(), message: message.into(), details: None }
    }
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
    pub fn not_found(res: &ResourceInfo, name: &str) -> Self {
        Status::new(404, "NotFound", format!("{} {:?} not found", res.qualified_resource(), name))
            .with_details(json!({"name": name, "group": res.group, "kind": res.plural}))
    }
    pub fn already_exists(res: &ResourceInfo, name: &str) -> Self {
        Status::new(409, "AlreadyExists", format!("{} {:?} already exists", res.qualified_resource(), name))
            .with_details(json!({"name": name, "group": res.group, "kind": res.plural}))
    }
    pub fn conflict(res: &ResourceInfo, name: &str, cause: &str) -> Self {
        Status::new(409, "Conflict", format!("Operation cannot be fulfilled on {} {:?}: {}", res.qualified_resource(), name, cause))
            .with_details(json!({"name": name, "group": res.group, "kind": res.plural}))
    }
    /// The stale-resourceVersion conflict (`OptimisticLockErrorMsg`).
    pub fn optimistic_lock(res: &ResourceInfo, name: &str) -> Self {
        Self::conflict(res, name, "the object has been modified; please apply your changes to the latest version and try again")
    }
    pub fn forbidden(res: &ResourceInfo, name: &str, cause: &str) -> Self {
        let message = if name.is_empty() {
            format!("{} is forbidden: {}", res.qualified_resource(), cause)
        } else {
            format!("{} {:?} is forbidden: {}", res.qualified_resource(), name, cause)
        };
        Status::new(403, "Forbidden", message).with_details(json!({"name": name, "group": res.group, "kind": res.plural}))
    }
    pub fn invalid(res: &ResourceInfo, name: &str, errors: &[FieldError]) -> Self {
        let mut seen = Vec::<String>::new();
        for e in errors {
            let s = e.to_string();
            if !seen.contains(&s) {
                seen.push(s);
            }
        }
        let message = match seen.len() {
            0 => format!("{} {:?} is invalid", res.qualified_kind(), name),
            1 => format!("{} {:?} is invalid: {}", res.qualified_kind(), name, seen[0]),
            _ => format!("{} {:?} is invalid: [{}]", res.qualified_kind(), name, seen.join(", ")),
        };
        let causes: Vec<Value> = errors.iter().map(|e| json!({"reason": e.kind.cause_type(), "message": e.body(), "field": e.field})).collect();
        Status::new(422, "Invalid", message).with_details(json!({"name": name, "group": res.group, "kind": res.kind, "causes": causes}))
    }
    pub fn bad_request(message: impl Into<String>) -> Self {
        Status::new(400, "BadRequest", message)
    }
    pub fn unauthorized() -> Self {
        Status::new(401, "Unauthorized", "Unauthorized")
    }
    pub fn internal(err: &str) -> Self {
        Status::new(500, "InternalError", format!("Internal error occurred: {err}")).with_details(json!({"causes": [{"message": err}]}))
    }
    pub fn expired(message: impl Into<String>) -> Self {
        Status::new(410, "Expired", message)
    }
    /// API Priority and Fairness refused the request. The server answers in plain text
    /// (`Too many requests, please try again later.`, [`APF_REJECTION`]); this is what
    /// client-go makes of it (`NewGenericServerResponse`) for a request of `method` (get,
    /// post, put, patch, delete) on `resource`.
    pub fn too_many_requests(method: &str, resource: &str, name: &str) -> Self {
        let what = if name.is_empty() { format!("{method} {resource}") } else { format!("{method} {resource} {name}") };
        Status::new(429, "TooManyRequests", format!("the server has received too many requests and has asked us to try again later ({what})"))
            .with_details(json!({"retryAfterSeconds": 1}))
    }
    /// Whether this is API Priority and Fairness's refusal (see [`Status::too_many_requests`]).
    pub fn is_apf_rejection(&self) -> bool {
        self.code == 429 && self.message.starts_with("the server has received too many requests")
    }
    /// No API server answers: the client's dial fails (`code` 0, no HTTP response).
    pub fn connection_refused() -> Self {
        Status::new(0, "", format!("dial tcp {API_SERVER}: connect: connection refused"))
    }
    /// The API server is up but etcd does not answer: the request's context runs out
    /// (`k8s.io/apiserver` `WithTimeoutForNonLongRunningRequests`).
    pub fn etcd_timeout() -> Self {
        Status::new(504, "Timeout", "Timeout: request did not complete within requested timeout - context deadline exceeded").with_details(json!({}))
    }

    /// The `Status` object as the API server serialises it.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            v["details"] = d.clone();
        }
        v
    }

    /// The bytes the API server writes for this `Status`: Go's `encoding/json` of the
    /// struct, so fields in declaration order, empty ones omitted, `<`, `>` and `&`
    /// escaped, and a final newline. Clients that compare error bodies see the same text.
    pub fn to_wire(&self) -> Vec<u8> {
        let mut o = String::from("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\"");
        let field = |o: &mut String, k: &str, v: String| {
            o.push_str(&format!(",\"{k}\":{v}"));
        };
        if !self.message.is_empty() {
            field(&mut o, "message", go_string(&self.message));
        }
        if !self.reason.is_empty() {
            field(&mut o, "reason", go_string(&self.reason));
        }
        if let Some(d) = self.details.as_ref().filter(|d| d.as_object().is_some_and(|m| !m.is_empty())) {
            let mut ds = String::new();
            for k in ["name", "group", "kind", "uid"] {
                if let Some(v) = d.get(k).and_then(Value::as_str).filter(|v| !v.is_empty()) {
                    ds.push_str(&format!(",\"{k}\":{}", go_string(v)));
                }
            }
            let causes = crate::foundation::api::get_array(d, &["causes"]);
            if !causes.is_empty() {
                let cs: Vec<String> = causes
                    .iter()
                    .map(|c| {
                        let parts: Vec<String> = ["reason", "message", "field"]
                            .iter()
                            .filter_map(|k| c.get(*k).and_then(Value::as_str).filter(|v| !v.is_empty()).map(|v| format!("\"{k}\":{}", go_string(v))))
                            .collect();
                        format!("{{{}}}", parts.join(","))
                    })
                    .collect();
                ds.push_str(&format!(",\"causes\":[{}]", cs.join(",")));
            }
            if let Some(r) = d.get("retryAfterSeconds").and_then(Value::as_i64).filter(|r| *r != 0) {
                ds.push_str(&format!(",\"retryAfterSeconds\":{r}"));
            }
            field(&mut o, "details", format!("{{{}}}", ds.trim_start_matches(',')));
        }
        if self.code != 0 {
            field(&mut o, "code", self.code.to_string());
        }
        o.push_str("}\n");
        o.into_bytes()
    }

    /// How kubectl prints this error (`k8s.io/kubectl/pkg/cmd/util/helpers.go`). `file` is
    /// the manifest path for `-f` create/apply (`error when creating "<file>": `).
    pub fn kubectl_message(&self, file: Option<&str>, op: &str) -> String {
        let prefix = file.map(|f| format!("error when {op} {f:?}: ")).unwrap_or_default();
        if self.code == 0 {
            return connection_refused_line();
        }
        if self.code == 401 {
            return format!("error: You must be logged in to the server ({})", self.message);
        }
        if self.reason == "Invalid" {
            // kubectl's `checkErr` prints an Invalid error from its details, without the
            // source it added to the message (`AddSourceToErr`).
            let prefix = "";
            if let Some(d) = &self.details {
                let causes = crate::foundation::api::get_array(d, &["causes"]);
                let kind = crate::foundation::api::get_str(d, &["kind"]).unwrap_or("");
                let name = crate::foundation::api::get_str(d, &["name"]).unwrap_or("");
                let line = |c: &Value| {
                    format!(
                        "{}: {}",
                        crate::foundation::api::get_str(c, &["field"]).unwrap_or(""),
                        crate::foundation::api::get_str(c, &["message"]).unwrap_or("")
                    )
                };
                if causes.len() == 1 {
                    return format!("{prefix}The {kind} {name:?} is invalid: {}", line(&causes[0]));
                }
                if causes.len() > 1 {
                    let mut s = format!("{prefix}The {kind} {name:?} is invalid: ");
                    for c in causes {
                        s.push_str("\n* ");
                        s.push_str(&line(c));
                    }
                    return s;
                }
            }
            return format!("{prefix}The request is invalid: {}", self.message);
        }
        if self.reason.is_empty() {
            format!("Error from server: {prefix}{}", self.message)
        } else {
            format!("Error from server ({}): {prefix}{}", self.reason, self.message)
        }
    }
}

/// The body of API Priority and Fairness's 429 (`http.Error`, text/plain).
pub const APF_REJECTION: &str = "Too many requests, please try again later.\n";

/// The address the terminal's kubectl talks to (kubeadm's and kind's API server port).
pub const API_SERVER: &str = "127.0.0.1:6443";

/// What kubectl prints when no API server answers.
pub fn connection_refused_line() -> String {
    format!("The connection to the server {API_SERVER} was refused - did you specify the right host or port?")
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

/// A string as Go's `encoding/json` writes it (HTML-safe escaping).
fn go_string(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => o.push_str(&format!("\\u{:04x}", ch as u32)),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foundation::api::{rid, RESOURCES};

    #[test]
    fn invalid_replicas_reads_like_the_api_server() {
        let e = FieldError::invalid("spec.replicas", &json!(-1), "must be greater than or equal to 0");
        let s = Status::invalid(&RESOURCES[rid::DEPLOYMENT], "x", &[e]);
        assert_eq!(s.code, 422);
        assert_eq!(s.message, "Deployment.apps \"x\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0");
        assert_eq!(
            s.kubectl_message(None, "creating"),
            "The Deployment \"x\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
    }

    #[test]
    fn not_supported_lists_quoted_values() {
        let e = FieldError::not_supported("spec.strategy.type", &json!("Foo"), &["Recreate", "RollingUpdate"]);
        assert_eq!(e.to_string(), "spec.strategy.type: Unsupported value: \"Foo\": supported values: \"Recreate\", \"RollingUpdate\"");
    }

    #[test]
    fn conflict_and_not_found_wording() {
        let d = &RESOURCES[rid::DEPLOYMENT];
        assert_eq!(
            Status::optimistic_lock(d, "web").message,
            "Operation cannot be fulfilled on deployments.apps \"web\": the object has been modified; please apply your changes to the latest version and try again"
        );
        assert_eq!(Status::not_found(d, "web").message, "deployments.apps \"web\" not found");
        assert_eq!(Status::not_found(d, "web").kubectl_message(None, "creating"), "Error from server (NotFound): deployments.apps \"web\" not found");
    }

    #[test]
    fn the_wire_form_is_go_encoding_json_of_the_struct() {
        let svc = &crate::foundation::api::RESOURCES[crate::foundation::api::rid::SERVICE];
        assert_eq!(
            String::from_utf8(Status::already_exists(svc, "mock-2").to_wire()).unwrap(),
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"services \\\"mock-2\\\" already exists\",\"reason\":\"AlreadyExists\",\"details\":{\"name\":\"mock-2\",\"kind\":\"services\"},\"code\":409}\n"
        );
        let s = Status::new(429, "TooManyRequests", "a <b> & c")
            .with_details(json!({"causes": [{"reason": "DisruptionBudget", "message": "m"}], "retryAfterSeconds": 10}));
        assert_eq!(
            String::from_utf8(s.to_wire()).unwrap(),
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"a \\u003cb\\u003e \\u0026 c\",\"reason\":\"TooManyRequests\",\"details\":{\"causes\":[{\"reason\":\"DisruptionBudget\",\"message\":\"m\"}],\"retryAfterSeconds\":10},\"code\":429}\n"
        );
    }
}
