//! Patches: JSON merge patch (RFC 7386), strategic merge patch (lists merged by their
//! `x-kubernetes-patch-merge-key`, `$patch: delete` directives) and JSON patch (RFC 6902),
//! as `k8s.io/apimachinery/pkg/util/strategicpatch` and `evanphx/json-patch` apply them.

use crate::foundation::status::Status;
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

/// The merge key of list `field` under `parent` (a Service's `spec.ports` merge by `port`,
/// a container's by `containerPort`); None for a list replaced whole.
pub fn list_merge_key(field: &str, parent: &str) -> Option<&'static str> {
    if field == "ports" && parent == "spec" {
        Some("port")
    } else {
        merge_key(field)
    }
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
        let key = list_merge_key(k, parent);
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

/// The most operations one JSON patch may hold (`maxJSONPatchOperations` in the API
/// server's patch handler).
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;
/// The most bytes a JSON patch's `copy` operations may add, together (the API server's
/// `JSONPatchMaxCopyBytes`, 3 MiB).
pub const MAX_JSON_PATCH_COPY_BYTES: usize = 3 * 1024 * 1024;
/// How deep a patched object may nest: the depth kubeloop decodes request bodies to (the
/// real decoder allows 10,000; kubeloop's is serde_json's 128).
pub const MAX_PATCHED_DEPTH: usize = 128;

/// How deep a value `copy` may clone: far past [`MAX_PATCHED_DEPTH`], so that the
/// operations Kubernetes refuses for their copied bytes are refused for those here too,
/// yet shallow enough to clone on any thread's stack.
const MAX_COPIED_DEPTH: usize = 1_000;

/// Why a JSON patch was refused: too many operations (413), or an operation that does not
/// apply (422).
#[derive(Debug, PartialEq)]
pub enum JsonPatchError {
    TooManyOperations(usize),
    Apply(String),
}

impl From<String> for JsonPatchError {
    fn from(e: String) -> Self {
        JsonPatchError::Apply(e)
    }
}

impl From<&str> for JsonPatchError {
    fn from(e: &str) -> Self {
        JsonPatchError::Apply(e.to_string())
    }
}

impl JsonPatchError {
    /// The API server's answer: `RequestEntityTooLarge` for the operation count, `Invalid`
    /// (422) for an operation that does not apply.
    pub fn status(&self) -> Status {
        match self {
            JsonPatchError::TooManyOperations(n) => Status::new(
                413,
                "RequestEntityTooLarge",
                format!("Request entity too large: The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {n}"),
            ),
            JsonPatchError::Apply(e) => Status::new(422, "Invalid", e.clone()),
        }
    }
}

/// Whether `v` nests deeper than `limit` (arrays and objects each count a level).
pub fn deeper_than(v: &Value, limit: usize) -> bool {
    let mut stack = vec![(v, 1usize)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(_) | Value::Object(_) if d > limit => return true,
            Value::Array(a) => stack.extend(a.iter().map(|c| (c, d + 1))),
            Value::Object(m) => stack.extend(m.values().map(|c| (c, d + 1))),
            _ => {}
        }
    }
    false
}

/// RFC 6902 JSON patch (`add`, `remove`, `replace`, `test`, `move`, `copy`), with the API
/// server's bounds: at most 10,000 operations, at most 3 MiB added by `copy`, and (kubeloop's
/// decoding depth) a result nested at most 128 levels.
///
/// Operations may nest the object deeply on the way (each `move` into a fresh key adds a
/// level); only the result's depth is checked. Every value a patch removes or replaces,
/// and a refused result, is taken apart without recursion, so no patch can overflow the
/// stack.
pub fn json_patch(target: &mut Value, ops: &Value) -> Result<(), JsonPatchError> {
    let ops = ops.as_array().ok_or("json patch must be an array of operations")?;
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(JsonPatchError::TooManyOperations(ops.len()));
    }
    let mut result = apply_ops(target, ops);
    if result.is_ok() && deeper_than(target, MAX_PATCHED_DEPTH) {
        result = Err(too_deep());
    }
    if result.is_err() {
        dismantle(target.take());
    }
    result
}

fn too_deep() -> JsonPatchError {
    JsonPatchError::Apply(format!("the patched object nests deeper than {MAX_PATCHED_DEPTH} levels, the most kubeloop decodes (Kubernetes allows 10000)"))
}

/// Drop a tree of any depth without recursion: children are moved to a stack first.
/// (Subtrees shared with other versions only lose a reference.)
fn dismantle(v: Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(a) => stack.extend(a),
            Value::Object(m) => {
                if let Some(entries) = m.into_unique_entries() {
                    stack.extend(entries.into_iter().map(|(_, v)| v));
                }
            }
            _ => {}
        }
    }
}

fn apply_ops(target: &mut Value, ops: &[Value]) -> Result<(), JsonPatchError> {
    let mut copied = 0usize;
    for op in ops {
        let kind = op.get("op").and_then(Value::as_str).ok_or("missing op")?;
        let path = op.get("path").and_then(Value::as_str).ok_or("missing path")?;
        match kind {
            "add" | "replace" => {
                let v = op.get("value").cloned().ok_or("missing value")?;
                set_pointer(target, path, v, kind == "add")?;
            }
            "remove" => {
                dismantle(take_pointer(target, path)?);
            }
            "test" => {
                let want = op.get("value").cloned().unwrap_or(Value::Null);
                if target.pointer(path) != Some(&want) {
                    return Err(format!("testing value {path} failed").into());
                }
            }
            "move" | "copy" => {
                let from = op.get("from").and_then(Value::as_str).ok_or("missing from")?;
                let v = if kind == "move" {
                    // Taken out, not copied: a moved value may be nested deeper than a copy
                    // would be allowed.
                    take_pointer(target, from).map_err(|_| format!("missing value at {from}"))?
                } else {
                    let src = target.pointer(from).ok_or_else(|| format!("missing value at {from}"))?;
                    let budget = MAX_JSON_PATCH_COPY_BYTES - copied;
                    match src.json_len_within(budget) {
                        Some(n) => copied += n,
                        None => {
                            let size = src.json_len_within(usize::MAX).unwrap_or(usize::MAX);
                            return Err(JsonPatchError::Apply(format!(
                                "Unable to complete the copy, the accumulated size increase of copy is {}, exceeding the limit {MAX_JSON_PATCH_COPY_BYTES}",
                                copied.saturating_add(size)
                            )));
                        }
                    }
                    // Copying clones nested arrays level by level (objects are shared): a
                    // value nested far deeper than any result may be is refused before that.
                    if deeper_than(src, MAX_COPIED_DEPTH) {
                        return Err(too_deep());
                    }
                    src.clone()
                };
                set_pointer(target, path, v, true)?;
            }
            other => return Err(format!("unexpected operation {other:?}").into()),
        }
    }
    Ok(())
}

/// Put `v` at `path` (inserting into an array if `insert`); on failure `v` is taken apart
/// without recursion, since it may be a deeply nested value moved out of the document.
fn set_pointer(target: &mut Value, path: &str, v: Value, insert: bool) -> Result<(), String> {
    let mut slot = Some(v);
    let r = put(target, path, &mut slot, insert);
    if let Some(v) = slot {
        dismantle(v);
    }
    r
}

/// [`set_pointer`]'s work: `v` is taken from its slot only once the place is found.
fn put(target: &mut Value, path: &str, v: &mut Option<Value>, insert: bool) -> Result<(), String> {
    let parts = pointer_parts(path)?;
    let Some((last, parents)) = parts.split_last() else {
        if let Some(v) = v.take() {
            dismantle(std::mem::replace(target, v));
        }
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
            if let Some(old) = v.take().and_then(|v| m.insert(last.clone(), v)) {
                dismantle(old);
            }
        }
        Value::Array(a) => {
            if last == "-" {
                a.extend(v.take());
            } else {
                let i: usize = last.parse().map_err(|_| format!("invalid index {last}"))?;
                if insert && i <= a.len() {
                    if let Some(v) = v.take() {
                        a.insert(i, v);
                    }
                } else if !insert && i < a.len() {
                    if let Some(v) = v.take() {
                        dismantle(std::mem::replace(&mut a[i], v));
                    }
                } else {
                    return Err(format!("index out of range: {path}"));
                }
            }
        }
        _ => return Err(format!("doc is missing path: {path}")),
    }
    Ok(())
}

/// Take the value at `path` out of the document.
fn take_pointer(target: &mut Value, path: &str) -> Result<Value, String> {
    let parts = pointer_parts(path)?;
    let Some((last, parents)) = parts.split_last() else { return Err("cannot remove the root".into()) };
    let parent_path: String = parents.iter().map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1"))).collect();
    let parent = target.pointer_mut(&parent_path).ok_or_else(|| format!("doc is missing path: {path}"))?;
    match parent {
        Value::Object(m) => m.remove(last).ok_or_else(|| format!("remove operation does not apply: doc is missing path: {path}")),
        Value::Array(a) => {
            let i: usize = last.parse().map_err(|_| format!("invalid index {last}"))?;
            if i < a.len() {
                Ok(a.remove(i))
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

    fn ops(n: usize, op: Value) -> Value {
        Value::Array(vec![op; n])
    }

    #[test]
    fn json_patch_refuses_more_than_ten_thousand_operations() {
        let mut t = json!({"metadata": {"name": "a"}});
        let test = json!({"op": "test", "path": "/metadata/name", "value": "a"});
        json_patch(&mut t, &ops(MAX_JSON_PATCH_OPERATIONS, test.clone())).unwrap();
        let err = json_patch(&mut t, &ops(MAX_JSON_PATCH_OPERATIONS + 1, test)).unwrap_err();
        let status = err.status();
        assert_eq!((status.code, status.reason.as_str()), (413, "RequestEntityTooLarge"));
        assert_eq!(status.message, "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001");
    }

    #[test]
    fn json_patch_copies_at_most_three_mebibytes() {
        // Each copy nests metadata in itself one level deeper, copying all of it: the budget
        // stops it after a few hundred.
        let mut t = json!({"metadata": {"name": "a".repeat(100)}});
        let copy = json!({"op": "copy", "from": "/metadata", "path": "/metadata/x"});
        let err = json_patch(&mut t, &ops(1_000, copy)).unwrap_err();
        let JsonPatchError::Apply(msg) = &err else { panic!("{err:?}") };
        assert!(msg.starts_with("Unable to complete the copy, the accumulated size increase of copy is "), "{msg}");
        assert!(msg.ends_with(", exceeding the limit 3145728"), "{msg}");
        assert_eq!(err.status().code, 422);
        // The target is left empty, not half-patched.
        assert_eq!(t, Value::Null);
        // A copy within the budget applies.
        let mut t = json!({"a": [1, 2]});
        json_patch(&mut t, &json!([{"op": "copy", "from": "/a", "path": "/b"}])).unwrap();
        assert_eq!(t, json!({"a": [1, 2], "b": [1, 2]}));
    }

    #[test]
    fn json_patch_cannot_nest_past_the_decoding_depth() {
        // `add /n {}` then `move /x -> /n/x` nests x one level deeper each pair: 9,998
        // operations make a chain 4,999 deep, which is refused and dropped without
        // overflowing the stack.
        let mut list = vec![json!({"op": "add", "path": "/x", "value": {}})];
        for _ in 0..4_999 {
            list.push(json!({"op": "add", "path": "/n", "value": {}}));
            list.push(json!({"op": "move", "from": "/x", "path": "/n/x"}));
            list.push(json!({"op": "move", "from": "/n", "path": "/x"}));
        }
        list.truncate(MAX_JSON_PATCH_OPERATIONS);
        let mut t = json!({});
        let err = json_patch(&mut t, &Value::Array(list)).unwrap_err();
        assert_eq!(err, JsonPatchError::Apply("the patched object nests deeper than 128 levels, the most kubeloop decodes (Kubernetes allows 10000)".into()));
        // 127 levels are fine.
        let mut deep = json!({});
        for _ in 0..126 {
            deep = json!({ "x": deep });
        }
        let mut t = json!({});
        json_patch(&mut t, &json!([{"op": "add", "path": "/x", "value": deep}])).unwrap();
        assert!(!deeper_than(&t, MAX_PATCHED_DEPTH));
        assert!(deeper_than(&t, 127));
    }
}
