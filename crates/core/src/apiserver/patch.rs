//! Patches: JSON merge patch (RFC 7386), strategic merge patch (lists merged by their
//! `x-kubernetes-patch-merge-key`, `$patch: delete` directives) and JSON patch (RFC 6902),
//! as `k8s.io/apimachinery/pkg/util/strategicpatch` and `evanphx/json-patch` apply them.

use crate::foundation::value::{Map, Value};

/// RFC 7386: objects merge recursively, `null` deletes, anything else replaces.
pub fn merge(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            let t = target.as_object_mut().expect("made an object above");
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        other => *target = other.clone(),
    }
}

/// The merge key of a list field by name, for the lists users patch most. Lists not named
/// here are replaced whole, as atomic lists are.
fn merge_key(field: &str) -> Option<&'static str> {
    Some(match field {
        "containers" | "initContainers" | "ephemeralContainers" | "volumes" | "env" | "imagePullSecrets" | "hostAliases" => "name",
        "ports" => "containerPort",
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        "conditions" => "type",
        "ownerReferences" => "uid",
        "finalizers" | "topologySpreadConstraints" => return None,
        _ => return None,
    })
}

/// Strategic merge patch. Service `ports` merge by `port`; container ports by `containerPort`.
pub fn strategic_merge(target: &mut Value, patch: &Value) {
    strategic(target, patch, "")
}

fn strategic(target: &mut Value, patch: &Value, parent: &str) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if p.get("$patch").and_then(Value::as_str) == Some("replace") {
        let mut p2 = p.clone();
        p2.remove("$patch");
        *target = Value::Object(p2);
        return;
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let t = target.as_object_mut().expect("made an object above");
    for (k, v) in p {
        if k.starts_with("$setElementOrder/") || k == "$retainKeys" {
            continue;
        }
        if v.is_null() {
            t.remove(k);
            continue;
        }
        let key = if k == "ports" && parent == "spec" { Some("port") } else { merge_key(k) };
        match (v, key) {
            (Value::Array(items), Some(mk)) => {
                let cur = t.entry(k.clone()).or_insert(Value::Array(vec![]));
                if !cur.is_array() {
                    *cur = Value::Array(vec![]);
                }
                let list = cur.as_array_mut().expect("made an array above");
                for item in items {
                    let id = item.get(mk).cloned();
                    let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
                    let pos = id.as_ref().and_then(|id| list.iter().position(|e| e.get(mk) == Some(id)));
                    match (pos, delete) {
                        (Some(i), true) => {
                            list.remove(i);
                        }
                        (None, true) => {}
                        (Some(i), false) => strategic(&mut list[i], item, k),
                        (None, false) => list.push(item.clone()),
                    }
                }
            }
            _ => strategic(t.entry(k.clone()).or_insert(Value::Null), v, k),
        }
    }
}

fn pointer_parts(path: &str) -> Result<Vec<String>, String> {
    if path.is_empty() {
        return Ok(vec![]);
    }
    let rest = path.strip_prefix('/').ok_or_else(|| format!("JSON pointer {path:?} must start with /"))?;
    Ok(rest.split('/').map(|s| s.replace("~1", "/").replace("~0", "~")).collect())
}

/// RFC 6902 JSON patch (`add`, `remove`, `replace`, `test`, `move`, `copy`).
pub fn json_patch(target: &mut Value, ops: &Value) -> Result<(), String> {
    let ops = ops.as_array().ok_or("json patch must be an array of operations")?;
    for op in ops {
        let kind = op.get("op").and_then(Value::as_str).ok_or("missing op")?;
        let path = op.get("path").and_then(Value::as_str).ok_or("missing path")?;
        match kind {
            "add" | "replace" => {
                let v = op.get("value").cloned().ok_or("missing value")?;
                set_pointer(target, path, v, kind == "add")?;
            }
            "remove" => {
                remove_pointer(target, path)?;
            }
            "test" => {
                let want = op.get("value").cloned().unwrap_or(Value::Null);
                if target.pointer(path) != Some(&want) {
                    return Err(format!("testing value {path} failed"));
                }
            }
            "move" | "copy" => {
                let from = op.get("from").and_then(Value::as_str).ok_or("missing from")?;
                let v = target.pointer(from).cloned().ok_or_else(|| format!("missing value at {from}"))?;
                if kind == "move" {
                    remove_pointer(target, from)?;
                }
                set_pointer(target, path, v, true)?;
            }
            other => return Err(format!("unexpected operation {other:?}")),
        }
    }
    Ok(())
}

fn set_pointer(target: &mut Value, path: &str, v: Value, insert: bool) -> Result<(), String> {
    let parts = pointer_parts(path)?;
    let Some((last, parents)) = parts.split_last() else {
        *target = v;
        return Ok(());
    };
    let mut cur = target;
    for p in parents {
        cur = match cur {
            Value::Object(m) => m.get_mut(p).ok_or_else(|| format!("doc is missing path: {path}"))?,
            Value::Array(a) => {
                a.get_mut(p.parse::<usize>().map_err(|_| format!("invalid index {p}"))?).ok_or_else(|| format!("doc is missing path: {path}"))?
            }
            _ => return Err(format!("doc is missing path: {path}")),
        };
    }
    match cur {
        Value::Object(m) => {
            if !insert && !m.contains_key(last) {
                return Err(format!("replace operation does not apply: doc is missing key: {path}"));
            }
            m.insert(last.clone(), v);
        }
        Value::Array(a) => {
            if last == "-" {
                a.push(v);
            } else {
                let i: usize = last.parse().map_err(|_| format!("invalid index {last}"))?;
                if insert && i <= a.len() {
                    a.insert(i, v);
                } else if !insert && i < a.len() {
                    a[i] = v;
                } else {
                    return Err(format!("index out of range: {path}"));
                }
            }
        }
        _ => return Err(format!("doc is missing path: {path}")),
    }
    Ok(())
}

fn remove_pointer(target: &mut Value, path: &str) -> Result<(), String> {
    let parts = pointer_parts(path)?;
    let Some((last, parents)) = parts.split_last() else { return Err("cannot remove the root".into()) };
    let parent_path: String = parents.iter().map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1"))).collect();
    let parent = target.pointer_mut(&parent_path).ok_or_else(|| format!("doc is missing path: {path}"))?;
    match parent {
        Value::Object(m) => m.remove(last).map(|_| ()).ok_or_else(|| format!("remove operation does not apply: doc is missing path: {path}")),
        Value::Array(a) => {
            let i: usize = last.parse().map_err(|_| format!("invalid index {last}"))?;
            if i < a.len() {
                a.remove(i);
                Ok(())
            } else {
                Err(format!("index out of range: {path}"))
            }
        }
        _ => Err(format!("doc is missing path: {path}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foundation::value::json;

    #[test]
    fn merge_patch_follows_rfc7386() {
        let mut t = json!({"a": 1, "b": {"c": 2, "d": 3}, "l": [1, 2]});
        merge(&mut t, &json!({"a": null, "b": {"c": 5}, "l": [3]}));
        assert_eq!(t, json!({"b": {"c": 5, "d": 3}, "l": [3]}));
    }

    #[test]
    fn strategic_merge_keys_containers_by_name() {
        let mut t = json!({"spec": {"containers": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y:1"}]}});
        strategic_merge(&mut t, &json!({"spec": {"containers": [{"name": "b", "image": "y:2"}]}}));
        assert_eq!(t["spec"]["containers"][1]["image"], "y:2");
        assert_eq!(t["spec"]["containers"][0]["image"], "x:1");
        strategic_merge(&mut t, &json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}));
        assert_eq!(t["spec"]["containers"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn json_patch_ops() {
        let mut t = json!({"spec": {"replicas": 1, "l": [1]}});
        json_patch(&mut t, &json!([{"op": "replace", "path": "/spec/replicas", "value": 3}, {"op": "add", "path": "/spec/l/-", "value": 2}, {"op": "remove", "path": "/spec/l/0"}])).unwrap();
        assert_eq!(t, json!({"spec": {"replicas": 3, "l": [2]}}));
        assert!(json_patch(&mut t, &json!([{"op": "replace", "path": "/nope", "value": 1}])).is_err());
    }
}
