//! Label selectors: `metav1.LabelSelector` objects, their string form (`app=web,tier!=db`,
//! `env in (a,b)`, `!canary`), and node selector terms
//! (`k8s.io/apimachinery/pkg/labels/selector.go`, `pkg/apis/meta/v1/helpers.go`).

use crate::foundation::value::{Map, Value};

fn label<'a>(labels: Option<&'a Map>, key: &str) -> Option<&'a str> {
    labels.and_then(|l| l.get(key)).and_then(Value::as_str)
}

fn requirement_matches(op: &str, key: &str, values: &[Value], labels: Option<&Map>) -> bool {
    let have = label(labels, key);
    let in_values = |v: &str| values.iter().any(|x| x.as_str() == Some(v));
    match op {
        "In" => have.is_some_and(in_values),
        "NotIn" => !have.is_some_and(in_values),
        "Exists" => have.is_some(),
        "DoesNotExist" => have.is_none(),
        "Gt" | "Lt" => {
            let (Some(h), Some(v)) = (have.and_then(|h| h.parse::<i64>().ok()), values.first().and_then(Value::as_str).and_then(|v| v.parse::<i64>().ok()))
            else {
                return false;
            };
            if op == "Gt" {
                h > v
            } else {
                h < v
            }
        }
        _ => false,
    }
}

/// Whether a `LabelSelector` selects an object with `labels`. A null selector selects
/// nothing; an empty one selects everything (`LabelSelectorAsSelector`).
pub fn selector_matches(selector: Option<&Value>, labels: Option<&Map>) -> bool {
    let Some(sel) = selector.filter(|s| !s.is_null()) else { return false };
    if let Some(ml) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in ml {
            if label(labels, k) != v.as_str() {
                return false;
            }
        }
    }
    for e in sel.get("matchExpressions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
        let values = e.get("values").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
        if !requirement_matches(op, key, values, labels) {
            return false;
        }
    }
    true
}

/// A plain `map[string]string` selector (Services, nodeSelector): every pair must match.
/// An empty or missing map selects nothing here (callers decide what "no selector" means).
pub fn map_matches(selector: &Map, labels: Option<&Map>) -> bool {
    selector.iter().all(|(k, v)| label(labels, k) == v.as_str())
}

/// The string form kubectl prints in `SELECTOR` columns (`app=web,tier in (a,b)`).
pub fn selector_string(selector: Option<&Value>) -> String {
    let Some(sel) = selector else { return "<none>".into() };
    let mut parts = Vec::new();
    if let Some(ml) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in ml {
            parts.push(format!("{k}={}", v.as_str().unwrap_or("")));
        }
    }
    for e in sel.get("matchExpressions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let vals: Vec<&str> = e.get("values").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => parts.push(format!("{key} in ({})", vals.join(","))),
            "NotIn" => parts.push(format!("{key} notin ({})", vals.join(","))),
            "Exists" => parts.push(key.to_string()),
            "DoesNotExist" => parts.push(format!("!{key}")),
            _ => {}
        }
    }
    parts.sort();
    if parts.is_empty() {
        "<none>".into()
    } else {
        parts.join(",")
    }
}

/// A parsed label-selector string (`kubectl get -l ...`).
#[derive(Debug, Clone, PartialEq)]
pub struct Selector(Vec<(String, String, Vec<String>)>);

impl Selector {
    /// Parse `a=b,c!=d,e in (x,y),f notin (z),g,!h`.
    pub fn parse(s: &str) -> Result<Selector, String> {
        let mut reqs = Vec::new();
        let mut parts = Vec::new();
        let mut depth = 0;
        let mut cur = String::new();
        for ch in s.chars() {
            match ch {
                '(' => {
                    depth += 1;
                    cur.push(ch)
                }
                ')' => {
                    depth -= 1;
                    cur.push(ch)
                }
                ',' if depth == 0 => parts.push(std::mem::take(&mut cur)),
                _ => cur.push(ch),
            }
        }
        parts.push(cur);
        for p in parts {
            let p = p.trim();
            if p.is_empty() {
                continue;
            }
            if let Some(k) = p.strip_prefix('!') {
                reqs.push((k.trim().to_string(), "DoesNotExist".into(), vec![]));
            } else if let Some((k, v)) = p.split_once("!=") {
                reqs.push((k.trim().to_string(), "NotIn".into(), vec![v.trim().to_string()]));
            } else if let Some((k, v)) = p.split_once("==").or_else(|| p.split_once('=')) {
                reqs.push((k.trim().to_string(), "In".into(), vec![v.trim().to_string()]));
            } else if let Some((k, rest)) = p.split_once(" notin ") {
                reqs.push((k.trim().to_string(), "NotIn".into(), set_values(rest)?));
            } else if let Some((k, rest)) = p.split_once(" in ") {
                reqs.push((k.trim().to_string(), "In".into(), set_values(rest)?));
            } else if p.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c)) {
                reqs.push((p.to_string(), "Exists".into(), vec![]));
            } else {
                return Err(format!("unable to parse requirement: {p:?}"));
            }
        }
        Ok(Selector(reqs))
    }

    pub fn matches(&self, labels: Option<&Map>) -> bool {
        self.0.iter().all(|(k, op, vals)| {
            let vals: Vec<Value> = vals.iter().map(|v| Value::from(v.as_str())).collect();
            requirement_matches(op, k, &vals, labels)
        })
    }
}

fn set_values(rest: &str) -> Result<Vec<String>, String> {
    let r = rest.trim();
    let inner = r.strip_prefix('(').and_then(|x| x.strip_suffix(')')).ok_or_else(|| format!("found '{r}', expected: '('"))?;
    Ok(inner.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect())
}

/// Whether a node's labels (and name, for `matchFields`) satisfy one NodeSelectorTerm.
pub fn node_selector_term_matches(term: &Value, node_labels: Option<&Map>, node_name: &str) -> bool {
    let exprs = term.get("matchExpressions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    let fields = term.get("matchFields").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    for e in exprs {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
        let values = e.get("values").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
        if !requirement_matches(op, key, values, node_labels) {
            return false;
        }
    }
    for f in fields {
        if f.get("key").and_then(Value::as_str) != Some("metadata.name") {
            return false;
        }
        let mut m = Map::new();
        m.insert("metadata.name", Value::String(node_name.into()));
        let op = f.get("operator").and_then(Value::as_str).unwrap_or("");
        let values = f.get("values").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
        if !requirement_matches(op, "metadata.name", values, Some(&m)) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foundation::value::json;

    fn l(v: Value) -> Map {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn label_selectors_match() {
        let labels = l(json!({"app": "web", "tier": "front"}));
        assert!(selector_matches(Some(&json!({"matchLabels": {"app": "web"}})), Some(&labels)));
        assert!(!selector_matches(Some(&json!({"matchLabels": {"app": "db"}})), Some(&labels)));
        assert!(selector_matches(Some(&json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "back"]}]})), Some(&labels)));
        assert!(selector_matches(Some(&json!({"matchExpressions": [{"key": "canary", "operator": "DoesNotExist"}]})), Some(&labels)));
        assert!(selector_matches(Some(&json!({})), Some(&labels)));
        assert!(!selector_matches(None, Some(&labels)));
    }

    #[test]
    fn selector_strings_parse() {
        let labels = l(json!({"app": "web", "env": "prod"}));
        assert!(Selector::parse("app=web").unwrap().matches(Some(&labels)));
        assert!(Selector::parse("app=web,env in (prod,stage)").unwrap().matches(Some(&labels)));
        assert!(!Selector::parse("app!=web").unwrap().matches(Some(&labels)));
        assert!(Selector::parse("!canary,env").unwrap().matches(Some(&labels)));
        assert!(Selector::parse("a in b").is_err());
        assert_eq!(selector_string(Some(&json!({"matchLabels": {"app": "web"}}))), "app=web");
    }
}
