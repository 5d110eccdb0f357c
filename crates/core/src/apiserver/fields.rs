//! Field selectors (`?fieldSelector=spec.nodeName=node-1,status.phase!=Failed`).
//!
//! Each kind supports only the fields its registry declares (`GetAttrs` and the field
//! label conversion funcs in `pkg/registry/*/strategy.go`); any other field is a
//! `400 BadRequest` with `field label not supported: <field>`, as the API server answers.

use crate::foundation::api::{get_i64, get_str};
use crate::foundation::status::Status;
use crate::foundation::value::Value;

/// One `field=value` or `field!=value` requirement.
#[derive(Debug, Clone, PartialEq)]
struct Requirement {
    field: String,
    equal: bool,
    value: String,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldSelector {
    reqs: Vec<Requirement>,
}

/// The selectable fields of a kind besides `metadata.name` and `metadata.namespace`.
fn kind_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        "Pod" => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        "Event" => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        "Namespace" => &["status.phase"],
        "Secret" => &["type"],
        "Node" => &["spec.unschedulable"],
        "ReplicaSet" => &["status.replicas"],
        "Job" => &["status.successful"],
        "Service" => &["spec.clusterIP", "spec.type"],
        _ => &[],
    }
}

/// The value a field selector compares for `field` of `obj`.
fn field_value(kind: &str, obj: &Value, field: &str) -> String {
    let path: Vec<&str> = field.split('.').collect();
    match (kind, field) {
        ("Pod", "spec.hostNetwork") | ("Node", "spec.unschedulable") => {
            (obj.pointer(&format!("/{}", path.join("/"))).and_then(Value::as_bool) == Some(true)).to_string()
        }
        ("Pod", "spec.serviceAccountName") => get_str(obj, &path).unwrap_or("default").to_string(),
        ("ReplicaSet", "status.replicas") | ("Job", "status.successful") => get_i64(obj, &path).unwrap_or(0).to_string(),
        ("Event", "source") => get_str(obj, &["source", "component"]).or_else(|| get_str(obj, &["reportingComponent"])).unwrap_or("").to_string(),
        _ => get_str(obj, &path).unwrap_or("").to_string(),
    }
}

impl FieldSelector {
    /// Parse a selector for `kind`; an unsupported field is the API server's 400.
    pub fn parse(kind: &str, s: &str) -> Result<FieldSelector, Status> {
        let mut reqs = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, equal, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, true, v)
            } else {
                return Err(Status::bad_request(format!("invalid selector: '{s}'; can't understand '{part}'")));
            };
            let field = field.trim();
            if field != "metadata.name" && field != "metadata.namespace" && !kind_fields(kind).contains(&field) {
                return Err(Status::bad_request(format!("field label not supported: {field}")));
            }
            reqs.push(Requirement { field: field.to_string(), equal, value: value.trim().to_string() });
        }
        Ok(FieldSelector { reqs })
    }

    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    pub fn matches(&self, kind: &str, obj: &Value) -> bool {
        self.reqs.iter().all(|r| (field_value(kind, obj, &r.field) == r.value) == r.equal)
    }

    /// The name the selector pins with `metadata.name=`, if any (`kubectl rollout status`).
    pub fn name(&self) -> Option<&str> {
        self.reqs.iter().find(|r| r.equal && r.field == "metadata.name").map(|r| r.value.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foundation::value::json;

    #[test]
    fn selects_like_the_pod_registry() {
        let pod = json!({"metadata": {"name": "web-1", "namespace": "default"}, "spec": {"nodeName": "node-1"}, "status": {"phase": "Running"}});
        let s = FieldSelector::parse("Pod", "spec.nodeName=node-1,status.phase!=Failed,status.phase!=Succeeded").unwrap();
        assert!(s.matches("Pod", &pod));
        assert!(!FieldSelector::parse("Pod", "spec.nodeName==node-2").unwrap().matches("Pod", &pod));
        assert!(FieldSelector::parse("Pod", "spec.serviceAccountName=default").unwrap().matches("Pod", &pod));
        assert!(FieldSelector::parse("Pod", "spec.hostNetwork=false").unwrap().matches("Pod", &pod));
        assert_eq!(FieldSelector::parse("Pod", "metadata.name=web-1").unwrap().name(), Some("web-1"));
    }

    #[test]
    fn unsupported_fields_are_bad_requests() {
        let e = FieldSelector::parse("Deployment", "spec.replicas=2").unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (400, "field label not supported: spec.replicas"));
        let ev = json!({"involvedObject": {"kind": "Pod", "name": "web-1", "uid": "u1"}, "source": {"component": "kubelet"}, "type": "Normal"});
        assert!(FieldSelector::parse("Event", "involvedObject.name=web-1,involvedObject.uid=u1,source=kubelet").unwrap().matches("Event", &ev));
        assert!(FieldSelector::parse("Pod", "status.phase").is_err());
    }
}
