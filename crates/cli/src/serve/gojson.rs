//! JSON as the real API server writes it: Go's `encoding/json` `Encoder` over the typed
//! objects. Fields come in Go struct field order (`kind`, `apiVersion`, `metadata`, `spec`,
//! `status`; in `metadata`, `name`, `generateName`, `namespace`, … as `ObjectMeta` declares
//! them), map keys sorted, `<`, `>` and `&` escaped as `\u003c`, `\u003e`, `\u0026`, and the
//! body ends with a newline. The order of every built-in type comes from the protobuf table
//! ([`super::protobuf::go_fields`]); the `meta/v1` and discovery types that have no protobuf
//! message in it are listed here. Objects of kinds the table does not know (custom
//! resources) are unstructured on the real server too, and Go writes a map's keys sorted,
//! which is the value tree's own order.

use super::protobuf::{go_fields, is_kind, kind_message};
use kubeloop_core::foundation::value::{Map, Value};
use std::io::Write as _;

/// What a value is known to be.
#[derive(Clone, Copy)]
enum Shape<'a> {
    /// Nothing: an object is typed by its own `kind` and `apiVersion`, if it has them.
    Untyped,
    Message(&'a str),
    /// A hand-written struct (`meta/v1` types without a protobuf message).
    Struct(&'static [(&'static str, Child)]),
    /// A map whose values are `Shape`.
    MapOf(&'a Shape<'a>),
}

/// The shape of a hand-written struct's field.
#[derive(Clone, Copy)]
enum Child {
    Plain,
    Struct(&'static [(&'static str, Child)]),
    Message(&'static str),
    Untyped,
}

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

const LIST_META: &[(&str, Child)] =
    &[("selfLink", Child::Plain), ("resourceVersion", Child::Plain), ("continue", Child::Plain), ("remainingItemCount", Child::Plain)];
const STATUS_CAUSE: &[(&str, Child)] = &[("reason", Child::Plain), ("message", Child::Plain), ("field", Child::Plain)];
const STATUS_DETAILS: &[(&str, Child)] = &[
    ("name", Child::Plain),
    ("group", Child::Plain),
    ("kind", Child::Plain),
    ("uid", Child::Plain),
    ("causes", Child::Struct(STATUS_CAUSE)),
    ("retryAfterSeconds", Child::Plain),
];
const STATUS: &[(&str, Child)] = &[
    ("kind", Child::Plain),
    ("apiVersion", Child::Plain),
    ("metadata", Child::Struct(LIST_META)),
    ("status", Child::Plain),
    ("message", Child::Plain),
    ("reason", Child::Plain),
    ("details", Child::Struct(STATUS_DETAILS)),
    ("code", Child::Plain),
];
const TABLE_COLUMN: &[(&str, Child)] =
    &[("name", Child::Plain), ("type", Child::Plain), ("format", Child::Plain), ("description", Child::Plain), ("priority", Child::Plain)];
const TABLE_ROW: &[(&str, Child)] = &[("cells", Child::Plain), ("conditions", Child::Plain), ("object", Child::Untyped)];
const TABLE: &[(&str, Child)] = &[
    ("kind", Child::Plain),
    ("apiVersion", Child::Plain),
    ("metadata", Child::Struct(LIST_META)),
    ("columnDefinitions", Child::Struct(TABLE_COLUMN)),
    ("rows", Child::Struct(TABLE_ROW)),
];
const PARTIAL_OBJECT_METADATA: &[(&str, Child)] = &[("kind", Child::Plain), ("apiVersion", Child::Plain), ("metadata", Child::Message(OBJECT_META))];
const API_RESOURCE: &[(&str, Child)] = &[
    ("name", Child::Plain),
    ("singularName", Child::Plain),
    ("namespaced", Child::Plain),
    ("group", Child::Plain),
    ("version", Child::Plain),
    ("kind", Child::Plain),
    ("verbs", Child::Plain),
    ("shortNames", Child::Plain),
    ("categories", Child::Plain),
    ("storageVersionHash", Child::Plain),
];
const API_RESOURCE_LIST: &[(&str, Child)] =
    &[("kind", Child::Plain), ("apiVersion", Child::Plain), ("groupVersion", Child::Plain), ("resources", Child::Struct(API_RESOURCE))];
const GROUP_VERSION: &[(&str, Child)] = &[("groupVersion", Child::Plain), ("version", Child::Plain)];
const SERVER_ADDRESS: &[(&str, Child)] = &[("clientCIDR", Child::Plain), ("serverAddress", Child::Plain)];
const API_GROUP: &[(&str, Child)] = &[
    ("kind", Child::Plain),
    ("apiVersion", Child::Plain),
    ("name", Child::Plain),
    ("versions", Child::Struct(GROUP_VERSION)),
    ("preferredVersion", Child::Struct(GROUP_VERSION)),
    ("serverAddressByClientCIDRs", Child::Struct(SERVER_ADDRESS)),
];
const API_GROUP_LIST: &[(&str, Child)] = &[("kind", Child::Plain), ("apiVersion", Child::Plain), ("groups", Child::Struct(API_GROUP))];
const API_VERSIONS: &[(&str, Child)] =
    &[("kind", Child::Plain), ("apiVersion", Child::Plain), ("versions", Child::Plain), ("serverAddressByClientCIDRs", Child::Struct(SERVER_ADDRESS))];
const GVK: &[(&str, Child)] = &[("group", Child::Plain), ("version", Child::Plain), ("kind", Child::Plain)];
const SUBRESOURCE_DISCOVERY: &[(&str, Child)] =
    &[("subresource", Child::Plain), ("responseKind", Child::Struct(GVK)), ("acceptedTypes", Child::Struct(GVK)), ("verbs", Child::Plain)];
const RESOURCE_DISCOVERY: &[(&str, Child)] = &[
    ("resource", Child::Plain),
    ("responseKind", Child::Struct(GVK)),
    ("scope", Child::Plain),
    ("singularResource", Child::Plain),
    ("verbs", Child::Plain),
    ("shortNames", Child::Plain),
    ("categories", Child::Plain),
    ("subresources", Child::Struct(SUBRESOURCE_DISCOVERY)),
];
const VERSION_DISCOVERY: &[(&str, Child)] = &[("version", Child::Plain), ("resources", Child::Struct(RESOURCE_DISCOVERY)), ("freshness", Child::Plain)];
const GROUP_DISCOVERY: &[(&str, Child)] = &[("metadata", Child::Message(OBJECT_META)), ("versions", Child::Struct(VERSION_DISCOVERY))];
const GROUP_DISCOVERY_LIST: &[(&str, Child)] =
    &[("kind", Child::Plain), ("apiVersion", Child::Plain), ("metadata", Child::Struct(LIST_META)), ("items", Child::Struct(GROUP_DISCOVERY))];

/// The hand-written struct of a kind the protobuf table has no message for.
fn meta_struct(kind: &str) -> Option<&'static [(&'static str, Child)]> {
    Some(match kind {
        "Status" => STATUS,
        "Table" => TABLE,
        "PartialObjectMetadata" => PARTIAL_OBJECT_METADATA,
        "APIResourceList" => API_RESOURCE_LIST,
        "APIGroupList" => API_GROUP_LIST,
        "APIGroup" => API_GROUP,
        "APIVersions" => API_VERSIONS,
        "APIGroupDiscoveryList" => GROUP_DISCOVERY_LIST,
        _ => return None,
    })
}

/// A response body: the value as the API server's JSON encoder writes it, then a newline.
pub fn encode(v: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    value(&mut out, v, Shape::Untyped);
    out.push(b'\n');
    out
}

fn value(out: &mut Vec<u8>, v: &Value, shape: Shape) {
    match v {
        Value::Object(m) => object(out, m, shape),
        Value::Array(items) => {
            out.push(b'[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                value(out, x, shape);
            }
            out.push(b']');
        }
        Value::String(s) => string(out, s),
        other => {
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

/// The shape an object gives itself by its `kind` and `apiVersion`.
fn own_shape(m: &Map) -> Shape<'static> {
    let (Some(kind), Some(api_version)) = (m.get("kind").and_then(Value::as_str), m.get("apiVersion").and_then(Value::as_str)) else {
        return Shape::Untyped;
    };
    if let Some(msg) = kind_message(api_version, kind) {
        return Shape::Message(msg);
    }
    if let Some(s) = meta_struct(kind) {
        return Shape::Struct(s);
    }
    Shape::Untyped
}

/// No fields at all (for a message the table lacks, which the caller has ruled out).
fn empty_index() -> &'static std::collections::HashMap<String, usize> {
    static EMPTY: std::sync::OnceLock<std::collections::HashMap<String, usize>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Default::default)
}

fn object(out: &mut Vec<u8>, m: &Map, shape: Shape) {
    let shape = match shape {
        Shape::Untyped => own_shape(m),
        Shape::Message(msg) if msg.ends_with(".RawExtension") || msg.ends_with(".FieldsV1") || msg.ends_with(".JSON") => own_shape(m),
        s => s,
    };
    out.push(b'{');
    let mut first = true;
    let mut field = |out: &mut Vec<u8>, k: &str, v: &Value, shape: Shape| {
        if !first {
            out.push(b',');
        }
        first = false;
        string(out, k);
        out.push(b':');
        value(out, v, shape);
    };
    match shape {
        Shape::MapOf(inner) => {
            for (k, v) in m.iter() {
                field(out, k, v, *inner);
            }
        }
        Shape::Message(msg) if go_fields(msg).is_some() => {
            let (fields, at) = go_fields(msg).unwrap_or((&[], empty_index()));
            let type_meta: &[&str] = if is_kind(msg) { &["kind", "apiVersion"] } else { &[] };
            for k in type_meta {
                if let Some(v) = m.get(k) {
                    field(out, k, v, Shape::Untyped);
                }
            }
            // The object's own keys put in the struct's order (one pass over what is there,
            // not a lookup per field the struct declares); keys the struct does not
            // declare follow in the object's order.
            let mut present: Vec<(usize, &str, &Value)> = m
                .iter()
                .filter(|(k, _)| !type_meta.contains(&k.as_str()))
                .map(|(k, v)| (at.get(k.as_str()).copied().unwrap_or(usize::MAX), k.as_str(), v))
                .collect();
            present.sort_by_key(|(i, _, _)| *i);
            for (i, k, v) in present {
                match fields.get(i) {
                    Some(f) => {
                        let child = f.message.as_deref().map_or(Shape::Untyped, Shape::Message);
                        if f.map {
                            field(out, k, v, Shape::MapOf(&child));
                        } else {
                            field(out, k, v, child);
                        }
                    }
                    None => field(out, k, v, Shape::Untyped),
                }
            }
        }
        Shape::Struct(fields) => {
            for (name, child) in fields {
                if let Some(v) = m.get(name) {
                    let s = match child {
                        Child::Plain | Child::Untyped => Shape::Untyped,
                        Child::Struct(s) => Shape::Struct(s),
                        Child::Message(msg) => Shape::Message(msg),
                    };
                    field(out, name, v, s);
                }
            }
            for (k, v) in m.iter() {
                if !fields.iter().any(|(n, _)| *n == k.as_str()) {
                    field(out, k, v, Shape::Untyped);
                }
            }
        }
        _ if is_list(m) => list(out, m, &mut field),
        _ => {
            for (k, v) in m.iter() {
                field(out, k, v, Shape::Untyped);
            }
        }
    }
    out.push(b'}');
}

/// A `…List` of a kind the table knows: `kind`, `apiVersion`, `metadata` (a `ListMeta`),
/// then `items`, each of the listed kind.
fn is_list(m: &Map) -> bool {
    m.get("kind").and_then(Value::as_str).is_some_and(|k| k.ends_with("List")) && m.get("items").is_some()
}

fn list(out: &mut Vec<u8>, m: &Map, field: &mut impl FnMut(&mut Vec<u8>, &str, &Value, Shape)) {
    let kind = m.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = m.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let item = kind_message(api_version, kind.strip_suffix("List").unwrap_or(kind)).map_or(Shape::Untyped, Shape::Message);
    let order: [(&str, Shape); 4] = [("kind", Shape::Untyped), ("apiVersion", Shape::Untyped), ("metadata", Shape::Struct(LIST_META)), ("items", item)];
    for (k, s) in order {
        if let Some(v) = m.get(k) {
            field(out, k, v, s);
        }
    }
    for (k, v) in m.iter() {
        if !order.iter().any(|(n, _)| *n == k.as_str()) {
            field(out, k, v, Shape::Untyped);
        }
    }
}

/// A string as `encoding/json` writes it, HTML-safe.
fn string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let esc: Option<&[u8]> = match c {
            '"' => Some(b"\\\""),
            '\\' => Some(b"\\\\"),
            '\n' => Some(b"\\n"),
            '\r' => Some(b"\\r"),
            '\t' => Some(b"\\t"),
            '\u{8}' => Some(b"\\b"),
            '\u{c}' => Some(b"\\f"),
            c if (c as u32) < 0x20 || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') => None,
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        match esc {
            Some(e) => out.extend_from_slice(e),
            None => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
        }
        start = i + c.len_utf8();
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubeloop_core::json;

    fn text(v: &Value) -> String {
        String::from_utf8(encode(v)).unwrap()
    }

    #[test]
    fn a_pod_is_written_in_go_struct_order() {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"uid": "u1", "name": "web", "namespace": "default", "labels": {"b": "2", "a": "1"}, "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"restartPolicy": "Always", "containers": [{"image": "nginx", "name": "web", "ports": [{"protocol": "TCP", "containerPort": 80}]}]},
            "status": {"phase": "Running"}
        });
        assert_eq!(
            text(&pod),
            concat!(
                r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","namespace":"default","uid":"u1","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"a":"1","b":"2"}},"#,
                r#""spec":{"containers":[{"name":"web","image":"nginx","ports":[{"containerPort":80,"protocol":"TCP"}]}],"restartPolicy":"Always"},"status":{"phase":"Running"}}"#,
                "\n"
            )
        );
    }

    #[test]
    fn an_inline_struct_is_written_in_its_place() {
        // Volume embeds VolumeSource and Probe embeds ProbeHandler `json:",inline"`.
        let pod = json!({"kind": "Pod", "apiVersion": "v1", "spec": {
            "volumes": [{"projected": {"sources": [], "defaultMode": 420}, "name": "api"}],
            "containers": [{"readinessProbe": {"periodSeconds": 5, "httpGet": {"port": 80, "path": "/"}}, "name": "c"}]
        }});
        assert_eq!(
            text(&pod),
            concat!(
                r#"{"kind":"Pod","apiVersion":"v1","spec":{"volumes":[{"name":"api","projected":{"sources":[],"defaultMode":420}}],"#,
                r#""containers":[{"name":"c","readinessProbe":{"httpGet":{"path":"/","port":80},"periodSeconds":5}}]}}"#,
                "\n"
            )
        );
    }

    #[test]
    fn a_list_holds_typed_items_and_a_status_its_go_order() {
        let list = json!({"items": [{"metadata": {"resourceVersion": "5", "name": "a"}, "data": {"k": "v"}}], "metadata": {"resourceVersion": "9"}, "kind": "ConfigMapList", "apiVersion": "v1"});
        assert_eq!(text(&list), "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"9\"},\"items\":[{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"5\"},\"data\":{\"k\":\"v\"}}]}\n");
        let status = json!({"code": 404, "details": {"kind": "pods", "name": "x"}, "reason": "NotFound", "message": "pods \"x\" not found", "status": "Failure", "metadata": {}, "apiVersion": "v1", "kind": "Status"});
        assert_eq!(
            text(&status),
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"pods \\\"x\\\" not found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"x\",\"kind\":\"pods\"},\"code\":404}\n"
        );
    }

    #[test]
    fn custom_resources_keep_sorted_keys_and_strings_are_html_safe() {
        let cr = json!({"kind": "Widget", "apiVersion": "example.com/v1", "spec": {"z": 1, "a": "<b>&\u{2028}\u{1}"}});
        assert_eq!(text(&cr), "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"spec\":{\"a\":\"\\u003cb\\u003e\\u0026\\u2028\\u0001\",\"z\":1}}\n");
    }
}
