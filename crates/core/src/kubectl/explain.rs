//! `kubectl explain`, rendered from the OpenAPI v3 schemas the way kubectl's plaintext
//! template does (`k8s.io/kubectl/pkg/explain/v2/templates/plaintext.tmpl`), word wrapping
//! included (`github.com/mitchellh/go-wordwrap`).
//!
//! The schemas with their descriptions (`crates/cli/data/openapi.json`, about 110 KB
//! gzipped) are not compiled in: the CLI installs them at start-up and the page fetches them
//! the first time someone asks for an explanation ([`install`]).

use super::Flags;
use crate::foundation::api::ResourceInfo;
use crate::foundation::api::{resource_for_name, RESOURCES};
use crate::foundation::value::Value;
use std::collections::BTreeSet;
use std::sync::OnceLock;

static SCHEMAS: OnceLock<Value> = OnceLock::new();

/// Provide the document (`{"schemas": {name: schema}}`); later calls are ignored.
pub fn install(doc: Value) {
    let _ = SCHEMAS.set(doc);
}

pub fn installed() -> bool {
    SCHEMAS.get().is_some()
}

fn resolve<'a>(schemas: &'a Value, schema: &'a Value) -> Option<&'a Value> {
    let r = schema.get("$ref")?.as_str()?;
    schemas.get(r.strip_prefix("#/components/schemas/")?)
}

fn map_schema(v: Option<&Value>) -> Option<&Value> {
    v.filter(|x| x.is_object())
}

/// go-wordwrap's `WrapString`: break at whitespace so lines fit `lim`, keep existing line
/// breaks, never split a word.
pub fn wrap(s: &str, lim: usize) -> String {
    let mut buf = String::new();
    let mut current = 0usize;
    // The pending run of spaces and the word after it, with their lengths in characters.
    let (mut space, mut word) = (String::new(), String::new());
    let (mut space_len, mut word_len) = (0usize, 0usize);
    let flush = |buf: &mut String, space: &mut String, word: &mut String, space_len: &mut usize, word_len: &mut usize| {
        buf.push_str(space);
        buf.push_str(word);
        space.clear();
        word.clear();
        *space_len = 0;
        *word_len = 0;
    };
    for ch in s.chars() {
        if ch == '\n' {
            if word.is_empty() && current + space_len > lim {
                space.clear();
                space_len = 0;
            }
            flush(&mut buf, &mut space, &mut word, &mut space_len, &mut word_len);
            buf.push('\n');
            current = 0;
        } else if ch.is_whitespace() && ch != '\u{a0}' {
            if space.is_empty() || !word.is_empty() {
                current += space_len + word_len;
                flush(&mut buf, &mut space, &mut word, &mut space_len, &mut word_len);
            }
            space.push(ch);
            space_len += 1;
        } else {
            word.push(ch);
            word_len += 1;
            if current + space_len + word_len > lim && word_len < lim {
                buf.push('\n');
                current = 0;
                space.clear();
                space_len = 0;
            }
        }
    }
    if word.is_empty() && current + space_len > lim {
        space.clear();
    }
    buf.push_str(&space);
    buf.push_str(&word);
    buf
}

fn indent(n: usize, s: &str) -> String {
    let pad = " ".repeat(n);
    format!("{pad}{}", s.replace('\n', &format!("\n{pad}")))
}

fn description(schemas: &Value, schema: &Value) -> String {
    let s = resolve(schemas, schema).unwrap_or(schema);
    let mut out = String::new();
    if let Some(d) = s.get("description").and_then(Value::as_str).filter(|d| !d.is_empty()) {
        out.push_str(d);
        out.push('\n');
    }
    for sub in s.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        out.push_str(&description(schemas, sub));
    }
    if let Some(items) = s.get("items") {
        out.push_str(&description(schemas, items));
    }
    if let Some(ap) = map_schema(s.get("additionalProperties")) {
        out.push_str(&description(schemas, ap));
    }
    out
}

fn type_guess(schemas: &Value, s: &Value) -> String {
    if let Some(items) = s.get("items") {
        return format!("[]{}", type_guess(schemas, items));
    }
    if let Some(ap) = map_schema(s.get("additionalProperties")) {
        return format!("map[string]{}", type_guess(schemas, ap));
    }
    if let (Some(all), None) = (s.get("allOf").and_then(Value::as_array), s.get("properties")) {
        if all.len() == 1 {
            return type_guess(schemas, &all[0]);
        }
    }
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let ty = resolve(schemas, s).and_then(|x| x.get("type")).and_then(Value::as_str);
        return match ty {
            None | Some("object") => r.rsplit('.').next().filter(|n| !n.is_empty()).unwrap_or("Object").to_string(),
            Some(t) => t.to_string(),
        };
    }
    match s.get("type").and_then(Value::as_str) {
        Some("object") | None => "Object".into(),
        Some(t) => t.to_string(),
    }
}

fn field_list(schemas: &Value, schema: &Value, level: usize, recursive: bool, history: &BTreeSet<String>) -> String {
    let r = schema.get("$ref").and_then(Value::as_str).unwrap_or("");
    if !r.is_empty() && history.contains(r) {
        return String::new();
    }
    let mut next = history.clone();
    next.insert(r.to_string());
    let resolved = resolve(schemas, schema).unwrap_or(schema);
    let mut out = String::new();
    let required: Vec<&str> = resolved.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    for (name, field) in resolved.get("properties").and_then(Value::as_object).into_iter().flatten() {
        let pad = level * 2;
        out.push_str(&indent(pad, name));
        out.push_str(&format!("\t<{}>", type_guess(schemas, field)));
        if required.contains(&name.as_str()) {
            out.push_str(" -required-");
        }
        out.push('\n');
        if !recursive {
            let d = field.get("description").and_then(Value::as_str).unwrap_or("<no description>");
            out.push_str(&indent(pad + 2, &wrap(d, 78 - pad)));
            out.push_str("\n\n");
        } else {
            out.push_str(&field_list(schemas, field, level + 1, recursive, &next));
        }
    }
    for sub in resolved.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        out.push_str(&field_list(schemas, sub, level, recursive, &next));
    }
    if let Some(items) = resolved.get("items") {
        out.push_str(&field_list(schemas, items, level, recursive, &next));
    }
    if let Some(ap) = map_schema(resolved.get("additionalProperties")) {
        out.push_str(&field_list(schemas, ap, level, recursive, &next));
    }
    out
}

fn output(schemas: &Value, schema: &Value, path: &[&str], recursive: bool, history: &BTreeSet<String>) -> String {
    let r = schema.get("$ref").and_then(Value::as_str).unwrap_or("");
    let mut next = history.clone();
    next.insert(r.to_string());
    let resolved = resolve(schemas, schema).unwrap_or(schema);
    let Some((first, rest)) = path.split_first() else {
        let d = description(schemas, resolved);
        let mut out = format!("DESCRIPTION:\n{}\n", indent(4, &wrap(if d.is_empty() { "<empty>" } else { &d }, 76)));
        let fields = field_list(schemas, resolved, 1, recursive, &BTreeSet::new());
        if !fields.is_empty() {
            out.push_str("FIELDS:\n");
            out.push_str(&fields);
        }
        return out;
    };
    if !r.is_empty() && history.contains(r) {
        return String::new();
    }
    if let Some(sub) = resolved.get("properties").and_then(|p| p.get(*first)) {
        let mut out = String::new();
        if rest.is_empty() {
            out.push_str(&format!("FIELD: {first} <{}>\n\n\n", type_guess(schemas, sub)));
        }
        out.push_str(&output(schemas, sub, rest, recursive, &BTreeSet::new()));
        return out;
    }
    if let Some(items) = resolved.get("items") {
        return output(schemas, items, path, recursive, &next);
    }
    if let Some(ap) = map_schema(resolved.get("additionalProperties")) {
        return output(schemas, ap, path, recursive, &next);
    }
    for sub in resolved.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        let o = output(schemas, sub, path, recursive, &next);
        if !o.is_empty() {
            return o;
        }
    }
    String::new()
}

/// `kubectl explain RESOURCE[.FIELD...]` for a resource, or kubectl's error.
pub fn explain(res: &ResourceInfo, path: &[&str], recursive: bool) -> Result<String, String> {
    let Some(doc) = SCHEMAS.get() else { return Err("error: the API documentation is not loaded".into()) };
    let schemas = doc.get("schemas").unwrap_or(&Value::Null);
    let root = schemas
        .as_object()
        .into_iter()
        .flatten()
        .find(|(_, s)| {
            s.get("x-kubernetes-group-version-kind").and_then(Value::as_array).into_iter().flatten().any(|g| {
                g.get("group").and_then(Value::as_str) == Some(res.group)
                    && g.get("version").and_then(Value::as_str) == Some(res.version)
                    && g.get("kind").and_then(Value::as_str) == Some(res.kind)
            })
        })
        .map(|(_, s)| s)
        .ok_or_else(|| format!("error: GVK {}, Kind={} not found in OpenAPI schema", res.api_version(), res.kind))?;
    let mut out = String::new();
    if !res.group.is_empty() {
        out.push_str(&format!("GROUP:      {}\n", res.group));
    }
    out.push_str(&format!("KIND:       {}\nVERSION:    {}\n\n", res.kind, res.version));
    let body = output(schemas, root, path, recursive, &BTreeSet::new());
    if body.is_empty() {
        return Err(format!("error: field {:?} does not exist", path.last().copied().unwrap_or("")));
    }
    out.push_str(&body);
    out.push('\n');
    Ok(out)
}

/// `kubectl explain TYPE[.FIELD...] [--recursive]`.
pub(super) fn command(f: &Flags) -> Vec<String> {
    let Some(target) = f.positional.first() else {
        return vec![
            "error: You must specify the type of resource to explain. Use \"kubectl api-resources\" for a complete list of supported resources.".into()
        ];
    };
    let mut parts = target.split('.');
    let ty = parts.next().unwrap_or("");
    let Some(r) = resource_for_name(ty) else { return vec![format!("error: the server doesn't have a resource type {ty:?}")] };
    let path: Vec<&str> = parts.collect();
    match crate::kubectl::explain::explain(&RESOURCES[r], &path, f.get("--recursive") == Some("true")) {
        Ok(text) => text.strip_suffix('\n').unwrap_or(&text).split('\n').map(str::to_string).collect(),
        Err(e) => vec![e],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_like_go_wordwrap() {
        assert_eq!(wrap("aaa bbb ccc", 7), "aaa bbb\nccc");
        assert_eq!(wrap("one two\nthree four", 9), "one two\nthree\nfour");
        assert_eq!(wrap("https://a.very.long/url/that/does/not/fit here", 10), "https://a.very.long/url/that/does/not/fit\nhere");
        assert_eq!(wrap("trailing\n", 76), "trailing\n");
    }

    #[test]
    fn explains_from_the_schemas() {
        install(serde_json::from_str(include_str!("../../../cli/data/openapi.json")).unwrap());
        let deploy = crate::foundation::api::RESOURCES.iter().find(|r| r.kind == "Deployment").unwrap();
        let out = explain(deploy, &["spec", "strategy"], false).unwrap();
        assert!(
            out.starts_with("GROUP:      apps\nKIND:       Deployment\nVERSION:    v1\n\nFIELD: strategy <DeploymentStrategy>\n\n\nDESCRIPTION:\n"),
            "{out}"
        );
        assert!(out.contains("FIELDS:\n  rollingUpdate\t<RollingUpdateDeployment>\n"), "{out}");
        assert_eq!(explain(deploy, &["spec", "nope"], false).unwrap_err(), "error: field \"nope\" does not exist");
        let pod = &crate::foundation::api::RESOURCES[crate::foundation::api::rid::POD];
        let ports = explain(pod, &["spec", "containers", "ports"], false).unwrap();
        assert!(ports.contains("FIELD: ports <[]ContainerPort>") && ports.contains("  containerPort\t<integer> -required-\n"), "{ports}");
    }
}
