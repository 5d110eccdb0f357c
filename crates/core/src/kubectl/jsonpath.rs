//! The JSONPath templates of `kubectl get -o jsonpath=...` (`k8s.io/client-go/util/jsonpath`):
//! text with `{...}` actions: field paths (`.metadata.name`), indexes and slices (`[0]`,
//! `[*]`, `[-1]`), filters (`[?(@.type=="Ready")]`), `range ... end` loops and quoted
//! literals (`{"\n"}`). Results of one action print space-separated, as kubectl does.

use crate::foundation::value::Value;

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    /// Every element (`[*]`), or every value of a map (`.*`).
    All,
    Index(i64),
    Filter(Vec<Step>, String, String),
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    Path(Vec<Step>),
    Range(Vec<Step>, Vec<Node>),
}

/// Render `template` over `data`.
pub fn render(template: &str, data: &Value) -> Result<String, String> {
    let nodes = parse(template)?;
    let mut out = String::new();
    eval_nodes(&nodes, data, &mut out)?;
    Ok(out)
}

/// The values one `{...}` path finds in `data` (a custom column's), in order.
pub fn values<'a>(expr: &str, data: &'a Value) -> Result<Vec<&'a Value>, String> {
    let mut out = Vec::new();
    for n in parse(expr)? {
        match n {
            Node::Path(p) => out.extend(select(&p, data)),
            Node::Text(_) | Node::Range(..) => return Err(format!("unexpected template in a column: {expr}")),
        }
    }
    Ok(out)
}

fn eval_nodes(nodes: &[Node], cur: &Value, out: &mut String) -> Result<(), String> {
    for n in nodes {
        match n {
            Node::Text(t) => out.push_str(t),
            Node::Path(p) => {
                let vals = select(p, cur);
                let parts: Vec<String> = vals.iter().map(|v| text(v)).collect();
                out.push_str(&parts.join(" "));
            }
            Node::Range(p, body) => {
                for v in select(p, cur) {
                    eval_nodes(body, v, out)?;
                }
            }
        }
    }
    Ok(())
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn select<'a>(path: &[Step], root: &'a Value) -> Vec<&'a Value> {
    let mut cur = vec![root];
    for s in path {
        let mut next = Vec::new();
        for v in cur {
            match s {
                Step::Field(f) => {
                    if let Some(x) = v.get(f.as_str()) {
                        next.push(x);
                    }
                }
                Step::All => match v {
                    Value::Array(a) => next.extend(a.iter()),
                    Value::Object(m) => next.extend(m.values()),
                    _ => {}
                },
                Step::Index(i) => {
                    if let Some(a) = v.as_array() {
                        let i = if *i < 0 { a.len() as i64 + i } else { *i };
                        if let Some(x) = usize::try_from(i).ok().and_then(|i| a.get(i)) {
                            next.push(x);
                        }
                    }
                }
                Step::Filter(p, op, want) => {
                    if let Some(a) = v.as_array() {
                        for x in a {
                            let got: Vec<String> = select(p, x).into_iter().map(text).collect();
                            let hit = match op.as_str() {
                                "==" => got.iter().any(|g| g == want),
                                "!=" => got.iter().all(|g| g != want),
                                _ => !got.is_empty(),
                            };
                            if hit {
                                next.push(x);
                            }
                        }
                    }
                }
            }
        }
        cur = next;
    }
    cur
}

fn parse(t: &str) -> Result<Vec<Node>, String> {
    let mut stack: Vec<(Vec<Step>, Vec<Node>)> = vec![(vec![], vec![])];
    let mut rest = t;
    while !rest.is_empty() {
        let Some(open) = rest.find('{') else {
            if let Some(s) = stack.last_mut() {
                s.1.push(Node::Text(rest.to_string()));
            }
            break;
        };
        if open > 0 {
            if let Some(s) = stack.last_mut() {
                s.1.push(Node::Text(rest[..open].to_string()));
            }
        }
        let close = matching_close(&rest[open..]).ok_or_else(|| format!("unclosed action in template {t:?}"))? + open;
        let action = rest[open + 1..close].trim();
        rest = &rest[close + 1..];
        if action == "end" {
            let (p, body) = stack.pop().ok_or("not in range, nothing to end")?;
            let parent = stack.last_mut().ok_or("not in range, nothing to end")?;
            parent.1.push(Node::Range(p, body));
        } else if let Some(p) = action.strip_prefix("range ") {
            stack.push((path(p.trim())?, vec![]));
        } else if action.starts_with('"') || action.starts_with('\'') {
            let q = &action[..1];
            let inner = action.strip_prefix(q).and_then(|a| a.strip_suffix(q)).ok_or_else(|| format!("unterminated string {action:?}"))?;
            if let Some(s) = stack.last_mut() {
                s.1.push(Node::Text(inner.replace("\\n", "\n").replace("\\t", "\t")));
            }
        } else {
            let steps = path(action)?;
            if let Some(s) = stack.last_mut() {
                s.1.push(Node::Path(steps));
            }
        }
    }
    if stack.len() != 1 {
        return Err("range without end".into());
    }
    Ok(stack.pop().map(|s| s.1).unwrap_or_default())
}

fn matching_close(s: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    for (i, c) in s.char_indices().skip(1) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"') | (None, '\'') => quote = Some(c),
            (None, '}') => return Some(i),
            _ => {}
        }
    }
    None
}

fn path(p: &str) -> Result<Vec<Step>, String> {
    let p = p.strip_prefix('$').unwrap_or(p);
    let b: Vec<char> = p.chars().collect();
    let mut steps = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            '.' => {
                let start = i + 1;
                i = start;
                while i < b.len() && b[i] != '.' && b[i] != '[' {
                    i += 1;
                }
                let name: String = b[start..i].iter().collect();
                if name == "*" {
                    steps.push(Step::All);
                } else if !name.is_empty() {
                    steps.push(Step::Field(name));
                }
            }
            '[' => {
                let end = b[i..].iter().position(|&c| c == ']').map(|e| e + i).ok_or_else(|| format!("unterminated [ in {p:?}"))?;
                let inner: String = b[i + 1..end].iter().collect();
                if inner == "*" {
                    steps.push(Step::All);
                } else if let Some(f) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
                    let (lhs, op, rhs) = ["==", "!="].iter().find_map(|op| f.split_once(op).map(|(l, r)| (l.trim(), op.to_string(), r.trim()))).unwrap_or((
                        f.trim(),
                        String::new(),
                        "",
                    ));
                    let rhs = rhs.trim_matches('"').trim_matches('\'').to_string();
                    steps.push(Step::Filter(path(lhs.strip_prefix('@').unwrap_or(lhs))?, op, rhs));
                } else if let Some(name) = inner.strip_prefix('\'').and_then(|n| n.strip_suffix('\'')) {
                    steps.push(Step::Field(name.to_string()));
                } else {
                    steps.push(Step::Index(inner.trim().parse().map_err(|_| format!("unsupported index [{inner}] in {p:?}"))?));
                }
                i = end + 1;
            }
            c => return Err(format!("unexpected {c:?} in JSONPath {p:?}")),
        }
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json;

    #[test]
    fn templates_render_as_kubectl_renders_them() {
        let pod = json!({"metadata": {"name": "web-1", "ownerReferences": [{"kind": "ReplicaSet", "name": "web-7c9"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]}});
        assert_eq!(render("{.metadata.ownerReferences[0].name}", &pod).unwrap(), "web-7c9");
        assert_eq!(render("{.status.conditions[?(@.type==\"Ready\")].status}", &pod).unwrap(), "True");
        assert_eq!(render("{.status.conditions[*].type}", &pod).unwrap(), "Ready PodScheduled");
        assert_eq!(render("{.status.conditions[-1].type}", &pod).unwrap(), "PodScheduled");
        let list = json!({"items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]});
        assert_eq!(render("{range .items[*]}{.metadata.name}{\"\\n\"}{end}", &list).unwrap(), "a\nb\n");
        assert_eq!(render("names: {.items[*].metadata.name}", &list).unwrap(), "names: a b");
        assert!(render("{range .items[*]}{.metadata.name}", &list).is_err());
        assert!(render("{.items[x]}", &list).is_err());
    }
}
