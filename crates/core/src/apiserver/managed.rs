//! Field ownership (`metadata.managedFields`) and server-side apply, after
//! `sigs.k8s.io/structured-merge-diff` as the API server uses it.
//!
//! A field set is kept in the `FieldsV1` form: `f:<field>` for a struct or map field,
//! `k:{"name":"web"}` for the item of a list merged by keys, `v:"x"` for the item of a set,
//! and `.` for "this node itself". Every write with a field manager records which fields
//! that manager set; an apply merges the applied configuration into the live object by
//! the schema's list types and map types, drops what the manager applied before but no
//! longer applies, and fails with 409 when another manager owns a field it would change,
//! unless forced.
//!
//! The built-in loops' writes are recorded under the manager client-go gives them, the
//! name of their program (`kube-controller-manager`, `kube-scheduler`, `kubelet`), from
//! the object as the request made it, before mutating admission (as upstream's field
//! manager, which runs in the handler before admission). Objects the cluster makes at
//! start-up (its nodes, namespaces, service accounts) carry no entries.

use crate::apiserver::schema::{Cursor, ListType, Shape};
use crate::foundation::sim::{rfc3339, Millis};
use crate::foundation::sort::{CollectTree, Sort};
use crate::foundation::status::Status;
use crate::foundation::value::{json, Map, Value};
use std::collections::BTreeMap;

/// A set of field paths in `FieldsV1` form.
#[derive(Debug, Clone, Default)]
pub struct Set {
    /// The `.` member: the node itself is owned.
    own: bool,
    children: BTreeMap<String, Set>,
    /// The `fieldsV1` value this node was read from, while nothing in it has changed: it is
    /// written back as it was, without building it again.
    orig: Option<Value>,
}

impl PartialEq for Set {
    fn eq(&self, other: &Set) -> bool {
        self.own == other.own && self.children == other.children
    }
}

impl Set {
    pub fn from_json(v: &Value) -> Set {
        let mut s = Set { orig: v.is_object().then(|| v.clone()), ..Set::default() };
        for (k, c) in v.as_object().into_iter().flatten() {
            if k == "." {
                s.own = true;
            } else {
                s.children.insert(k.to_string(), Set::from_json(c));
            }
        }
        s
    }

    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        if self.own {
            m.insert(".", json!({}));
        }
        for (k, c) in &self.children {
            m.insert(k.as_str(), c.to_json());
        }
        Value::Object(m)
    }

    pub fn is_empty(&self) -> bool {
        !self.own && self.children.is_empty()
    }

    /// Every owned path: leaves, and nodes that carry `.`.
    pub fn paths(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        for (k, c) in &self.children {
            prefix.push(k.clone());
            if c.own || c.children.is_empty() {
                out.push(prefix.clone());
            }
            c.collect(prefix, out);
            prefix.pop();
        }
    }

    pub fn contains(&self, path: &[String]) -> bool {
        match path.split_first() {
            None => true,
            Some((first, rest)) => match self.children.get(first) {
                Some(c) if rest.is_empty() => c.own || c.children.is_empty(),
                Some(c) => c.contains(rest),
                None => false,
            },
        }
    }

    /// Give up ownership of `path` (and of what is below it); whether anything was owned.
    pub fn remove(&mut self, path: &[String]) -> bool {
        let Some((first, rest)) = path.split_first() else { return false };
        if rest.is_empty() {
            let removed = self.children.remove(first).is_some();
            if removed {
                self.orig = None;
            }
            return removed;
        }
        let Some(c) = self.children.get_mut(first) else { return false };
        let removed = c.remove(rest);
        let changed = c.orig.is_none();
        if c.is_empty() {
            // A parent that only held the removed path is not owned on its own.
            self.children.remove(first);
            self.orig = None;
        } else if changed {
            self.orig = None;
        }
        removed
    }

    /// Give up ownership of every path of `other` ([`Set::paths`]), as [`Set::remove`] of
    /// each in turn would; whether anything was owned.
    fn subtract(&mut self, other: &Set) -> bool {
        let mut removed = false;
        for (k, oc) in &other.children {
            if (oc.own || oc.children.is_empty()) && self.children.remove(k).is_some() {
                removed = true;
                self.orig = None;
            }
            if !oc.children.is_empty() {
                if let Some(c) = self.children.get_mut(k) {
                    removed |= c.subtract(oc);
                    let changed = c.orig.is_none();
                    // A parent that only held the removed paths is not owned on its own.
                    if c.is_empty() {
                        self.children.remove(k);
                        self.orig = None;
                    } else if changed {
                        self.orig = None;
                    }
                }
            }
        }
        removed
    }

    /// Take ownership of `other`'s paths too; whether the set grew.
    fn union(&mut self, other: &Set) -> bool {
        let mut grew = other.own && !self.own;
        let mut changed = grew;
        self.own |= other.own;
        for (k, c) in &other.children {
            match self.children.get_mut(k) {
                Some(mine) => {
                    grew |= mine.union(c);
                    changed |= mine.orig.is_none();
                }
                None => {
                    self.children.insert(k.clone(), c.clone());
                    grew = true;
                    changed = true;
                }
            }
        }
        if changed {
            self.orig = None;
        }
        grew
    }
}

fn key_of(item: &Value, keys: &[String]) -> String {
    let mut m = Map::new();
    for k in keys {
        match item.get(k.as_str()) {
            Some(v) => {
                m.insert(k.as_str(), v.clone());
            }
            // A port's protocol is part of its key and defaults to TCP.
            None if k == "protocol" => {
                m.insert(k.as_str(), json!("TCP"));
            }
            None => {}
        }
    }
    format!("k:{}", serde_json::to_string(&Value::Object(m)).unwrap_or_default())
}

/// The field set of `v` at `cur`.
fn build(v: &Value, cur: Cursor) -> Set {
    let mut s = Set::default();
    match (cur.shape(), v) {
        (Shape::Struct | Shape::Map, Value::Object(m)) => {
            s.own = cur.shape() == Shape::Map;
            for (k, c) in m {
                s.children.insert(format!("f:{k}"), build(c, cur.field(k)));
            }
        }
        (Shape::List(ListType::Map(keys)), Value::Array(a)) => {
            s.own = true;
            for item in a {
                let mut c = build(item, cur.item());
                c.own = true;
                s.children.insert(key_of(item, &keys), c);
            }
        }
        (Shape::List(ListType::Set), Value::Array(a)) => {
            s.own = true;
            for item in a {
                s.children.insert(format!("v:{}", serde_json::to_string(item).unwrap_or_default()), Set::default());
            }
        }
        _ => {}
    }
    s
}

/// The parts of an object whose ownership is tracked: `metadata.labels`, `annotations`,
/// `ownerReferences` and `finalizers`, and `spec` (or `status` for the status
/// subresource) and the other top-level fields.
fn tracked(obj: &Value, subresource: &str) -> Value {
    let mut out = Map::new();
    for (k, v) in obj.as_object().into_iter().flatten() {
        match k.as_str() {
            "apiVersion" | "kind" => {}
            "status" => {
                if subresource == "status" {
                    out.insert("status", v.clone());
                }
            }
            "metadata" => {
                let mut meta = Map::new();
                for f in ["generateName", "labels", "annotations", "ownerReferences", "finalizers"] {
                    if let Some(x) = v.get(f) {
                        meta.insert(f, x.clone());
                    }
                }
                if !meta.is_empty() && subresource != "status" {
                    out.insert("metadata", Value::Object(meta));
                }
            }
            _ if subresource == "status" => {}
            _ => {
                out.insert(k.as_str(), v.clone());
            }
        }
    }
    Value::Object(out)
}

fn field_set(obj: &Value, api_version: &str, kind: &str, subresource: &str) -> Set {
    let cur = Cursor::root(api_version, kind);
    let mut s = build(&tracked(obj, subresource), cur);
    // `ownerReferences` merge by uid and `finalizers` as a set, whatever the schema lacks.
    if let Some(meta) = s.children.get_mut("f:metadata") {
        if let (Some(refs), Some(list)) =
            (meta.children.get_mut("f:ownerReferences"), crate::foundation::api::get(obj, &["metadata", "ownerReferences"]).and_then(Value::as_array))
        {
            refs.own = true;
            refs.children = list.iter().map(|r| (key_of(r, &["uid".to_string()]), Set { own: true, ..Set::default() })).collect_tree();
        }
    }
    s
}

/// The fields of `after` whose values differ from `before`'s at `cur`, as a field set:
/// what a write that turned `before` into `after` set. `None` when nothing was set (equal,
/// or only removals). Walks the two trees together, so an unchanged subtree (shared by
/// the two versions) costs a pointer comparison.
fn diff(before: Option<&Value>, after: &Value, cur: &Cursor, path: &[&str]) -> Option<Set> {
    if before == Some(after) {
        return None;
    }
    // ownerReferences merge by uid (items atomic) and finalizers are a set, whatever the
    // schema says.
    let shape = match path {
        ["metadata", "ownerReferences"] => Shape::List(ListType::Map(vec!["uid".to_string()])),
        ["metadata", "finalizers"] => Shape::List(ListType::Set),
        _ => cur.shape(),
    };
    match (shape, after) {
        (Shape::Struct | Shape::Map, Value::Object(m)) => {
            let b = before.and_then(Value::as_object);
            // A map is owned itself as well as its keys; a struct only through its fields.
            let mut s = Set { own: cur.shape() == Shape::Map && !m.is_empty(), ..Set::default() };
            for (k, v) in m.iter() {
                let mut p = path.to_vec();
                p.push(k.as_str());
                if let Some(c) = diff(b.and_then(|b| b.get(k.as_str())), v, &cur.field(k), &p) {
                    s.children.insert(format!("f:{k}"), c);
                }
            }
            if s.children.is_empty() && !s.own {
                // An empty struct set as it is (`resources: {}`) is a field of its own.
                return m.is_empty().then(Set::default);
            }
            Some(s)
        }
        (Shape::List(ListType::Map(keys)), Value::Array(items)) => {
            let b = before.and_then(Value::as_array);
            let atomic_items = path == ["metadata", "ownerReferences"];
            let mut s = Set::default();
            for item in items {
                let key = key_of(item, &keys);
                let prev = b.and_then(|b| b.iter().find(|x| key_of(x, &keys) == key));
                let changed = if atomic_items {
                    (prev != Some(item)).then(Set::default)
                } else {
                    let mut p = path.to_vec();
                    p.push("[]");
                    diff(prev, item, &cur.item(), &p).map(|mut c| {
                        // An item of a list merged by key is owned itself as well as its fields.
                        c.own = item.as_object().is_some_and(|m| !m.is_empty());
                        c
                    })
                };
                if let Some(c) = changed {
                    s.children.insert(key, c);
                }
            }
            (!s.children.is_empty()).then_some(s)
        }
        (Shape::List(ListType::Set), Value::Array(items)) => {
            let b = before.and_then(Value::as_array);
            let mut s = Set::default();
            for item in items.iter().filter(|i| !b.is_some_and(|b| b.contains(i))) {
                s.children.insert(format!("v:{}", serde_json::to_string(item).unwrap_or_default()), Set::default());
            }
            (!s.children.is_empty()).then_some(s)
        }
        // Anything else is set as a whole.
        _ => Some(Set::default()),
    }
}

/// Drop from `set` the paths `v` no longer has; whether anything was dropped.
fn prune_set(set: &mut Set, v: &Value) -> bool {
    let mut dropped = false;
    let mut changed = false;
    set.children.retain(|k, c| {
        let Some(here) = child_at(v, k) else {
            dropped = true;
            changed = true;
            return false;
        };
        let had = !c.children.is_empty();
        let pruned = had && prune_set(c, here);
        changed |= c.orig.is_none();
        if pruned {
            dropped = true;
            // A node that only held what was dropped is not owned on its own.
            return !c.is_empty();
        }
        true
    });
    if changed {
        set.orig = None;
    }
    dropped
}

/// The value at a field path, if present.
fn get_at<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = v;
    for p in path {
        cur = if let Some(f) = p.strip_prefix("f:") {
            cur.get(f)?
        } else if let Some(k) = p.strip_prefix("k:") {
            let key: Value = serde_json::from_str(k).ok()?;
            let km = key.as_object()?;
            cur.as_array()?
                .iter()
                .find(|item| km.iter().all(|(kk, kv)| item.get(kk.as_str()).unwrap_or(if kk == "protocol" { &PROTOCOL_TCP } else { &Value::Null }) == kv))?
        } else if let Some(x) = p.strip_prefix("v:") {
            let want: Value = serde_json::from_str(x).ok()?;
            cur.as_array()?.iter().find(|item| **item == want)?
        } else {
            return None;
        };
    }
    Some(cur)
}

static PROTOCOL_TCP: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| json!("TCP"));

fn remove_at(v: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut cur = v;
    for p in parents {
        let next = if let Some(f) = p.strip_prefix("f:") {
            cur.get_mut(f)
        } else {
            let Some(i) = index_of(cur, p) else { return };
            cur.get_mut(i)
        };
        let Some(n) = next else { return };
        cur = n;
    }
    if let Some(f) = last.strip_prefix("f:") {
        if let Some(m) = cur.as_object_mut() {
            m.remove(f);
        }
    } else if let Some(i) = index_of(cur, last) {
        if let Some(a) = cur.as_array_mut() {
            a.remove(i);
        }
    }
}

fn index_of(list: &Value, p: &str) -> Option<usize> {
    let a = list.as_array()?;
    let target = get_at(list, &[p.to_string()])?;
    a.iter().position(|x| std::ptr::eq(x, target))
}

/// Merge an applied configuration into an object by the schema at `cur`.
fn merge(dst: &mut Value, src: &Value, cur: Cursor) {
    match (cur.shape(), src) {
        (Shape::Struct | Shape::Map, Value::Object(m)) if dst.is_object() => {
            for (k, v) in m {
                let c = cur.field(k);
                match dst.get_mut(k.as_str()) {
                    Some(d) if !d.is_null() => merge(d, v, c),
                    _ => dst[k.as_str()] = v.clone(),
                }
            }
        }
        (Shape::List(ListType::Map(keys)), Value::Array(items)) if dst.is_array() => {
            for item in items {
                let key = key_of(item, &keys);
                match index_of(dst, &key) {
                    Some(i) => {
                        if let Some(d) = dst.get_mut(i) {
                            merge(d, item, cur.item());
                        }
                    }
                    None => {
                        if let Some(a) = dst.as_array_mut() {
                            a.push(item.clone());
                        }
                    }
                }
            }
        }
        (Shape::List(ListType::Set), Value::Array(items)) if dst.is_array() => {
            if let Some(a) = dst.as_array_mut() {
                for item in items {
                    if !a.contains(item) {
                        a.push(item.clone());
                    }
                }
            }
        }
        _ => *dst = src.clone(),
    }
}

/// One `managedFields` entry.
#[derive(Debug, Clone)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    subresource: String,
    time: Value,
    set: Set,
    /// The entry as the object held it, and whether its set has changed since: an entry
    /// left alone is written back as the same shared value, so that the revisions of an
    /// object share their managedFields in memory as they do everything else unchanged.
    orig: Option<Value>,
    set_changed: bool,
}

fn entries(obj: Option<&Value>) -> Vec<Entry> {
    let Some(obj) = obj else { return vec![] };
    crate::foundation::api::get_array(obj, &["metadata", "managedFields"])
        .iter()
        .map(|e| {
            let s = |k: &str| crate::foundation::api::get_str(e, &[k]).unwrap_or("").to_string();
            Entry {
                manager: s("manager"),
                operation: s("operation"),
                api_version: s("apiVersion"),
                subresource: s("subresource"),
                time: e.get("time").cloned().unwrap_or(Value::Null),
                set: Set::from_json(e.get("fieldsV1").unwrap_or(&Value::Null)),
                orig: Some(e.clone()),
                set_changed: false,
            }
        })
        .collect()
}

/// How many distinct nodes of field sets [`SHARED`] keeps before it starts afresh.
const SHARED_NODES: usize = 1 << 16;

thread_local! {
    static SHARED: std::cell::RefCell<Shared> = std::cell::RefCell::new(Shared::default());
}

/// One shared copy of each node of the field sets written recently (hash-consing): the
/// objects one writer makes alike (every event the kubelet records, every pod of a
/// ReplicaSet) hold the same `fieldsV1`, and two pods' status sets differ only in the
/// branch that names their IP, so everything else is kept once. A node is found by its
/// `.` flag and its children's keys and (already shared) values, so looking one up never
/// serializes anything. Sharing changes no value, only where it is kept.
#[derive(Default)]
struct Shared {
    /// A hash of (own, keys, child pointers) -> the nodes with that hash.
    nodes: std::collections::HashMap<u64, Vec<Value>>,
    len: usize,
    /// Whole `managedFields` entries by what they hold, the field set by pointer.
    entries: std::collections::HashMap<(String, String, String, String, String, usize), Value>,
}

/// The address of a shared map: its identity while [`SHARED`] holds it.
fn map_addr(v: &Value) -> usize {
    v.as_object().map_or(0, |m| m.addr())
}

impl Shared {
    fn node(&mut self, set: &Set) -> Value {
        if let Some(o) = &set.orig {
            debug_assert!(Set::from_json(o) == *set, "a field set changed since it was read: {set:?}");
            return o.clone();
        }
        let kids: Vec<(&str, Value)> = set.children.iter().map(|(k, c)| (k.as_str(), self.node(c))).collect();
        let own_leaf = set.own.then(|| self.node(&Set::default()));
        let mut h = std::hash::DefaultHasher::new();
        std::hash::Hash::hash(&set.own, &mut h);
        for (k, v) in &kids {
            std::hash::Hash::hash(k, &mut h);
            std::hash::Hash::hash(&map_addr(v), &mut h);
        }
        let hash = std::hash::Hasher::finish(&h);
        let same = |cand: &Value| {
            let Some(m) = cand.as_object() else { return false };
            m.len() == kids.len() + usize::from(set.own)
                && m.contains_key(".") == set.own
                && kids.iter().all(|(k, v)| m.get(k).is_some_and(|c| map_addr(c) == map_addr(v)))
        };
        if let Some(found) = self.nodes.get(&hash).and_then(|b| b.iter().find(|c| same(c))) {
            return found.clone();
        }
        if self.len >= SHARED_NODES {
            self.nodes.clear();
            self.entries.clear();
            self.len = 0;
        }
        let mut m = Map::new();
        if let Some(leaf) = own_leaf {
            m.insert(".", leaf);
        }
        for (k, v) in kids {
            m.insert(k, v);
        }
        let v = Value::Object(m);
        self.nodes.entry(hash).or_default().push(v.clone());
        self.len += 1;
        v
    }

    fn entry(&mut self, e: &Entry) -> Value {
        let fields = self.node(&e.set);
        let time = e.time.as_str().unwrap_or("").to_string();
        let key = (e.manager.clone(), e.operation.clone(), e.api_version.clone(), e.subresource.clone(), time, map_addr(&fields));
        if let Some(v) = self.entries.get(&key) {
            return v.clone();
        }
        let mut v =
            json!({"manager": e.manager, "operation": e.operation, "apiVersion": e.api_version, "time": e.time, "fieldsType": "FieldsV1", "fieldsV1": fields});
        if !e.subresource.is_empty() {
            v["subresource"] = json!(e.subresource);
        }
        self.entries.insert(key, v.clone());
        v
    }
}

fn write_entries(obj: &mut Value, list: Vec<Entry>) {
    let out: Vec<Value> = list
        .into_iter()
        .filter(|e| !e.set.is_empty())
        .map(|e| match e.orig {
            Some(orig)
                if !e.set_changed && orig.get("time") == Some(&e.time) && orig.get("apiVersion").and_then(Value::as_str) == Some(e.api_version.as_str()) =>
            {
                orig
            }
            Some(mut orig) if !e.set_changed => {
                orig["time"] = e.time;
                orig["apiVersion"] = json!(e.api_version);
                orig
            }
            _ => SHARED.with(|c| c.borrow_mut().entry(&e)),
        })
        .collect();
    set_entries(obj, out);
}

/// `metadata.managedFields` of `obj` set to `entries` (removed when there are none).
fn set_entries(obj: &mut Value, entries: Vec<Value>) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if entries.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields", Value::Array(entries));
        }
    }
}

/// Drop from every entry the paths the object no longer has.
fn prune(list: &mut [Entry], obj: &Value) {
    for e in list.iter_mut() {
        e.set_changed |= prune_set(&mut e.set, obj);
    }
}

/// The field manager a loop's writes are recorded under when it names none: client-go's
/// default, the name of the program it runs in (`kube-controller-manager` for every
/// controller there, `kube-scheduler`, `kubelet`), else the component's own name
/// (`csi-provisioner`, `cluster-autoscaler`).
pub fn default_manager(component: &str, user: &crate::apiserver::rbac::UserInfo) -> String {
    let name = user.name.as_str();
    if name.starts_with("system:node:") {
        "kubelet".into()
    } else if name == "system:kube-scheduler" {
        "kube-scheduler".into()
    } else if name == "system:kube-controller-manager" || (name.starts_with("system:serviceaccount:kube-system:") && component.ends_with("-controller")) {
        "kube-controller-manager".into()
    } else {
        component.to_string()
    }
}

/// Record a create, update or patch by `manager`: it owns the fields whose values it
/// changed, and the other managers lose them.
///
/// `requested` is the object as the request made it (decoded and defaulted), before
/// mutating admission: what admission adds is not the manager's (as upstream's field
/// manager, which runs in the handler before admission).
///
/// Most writes touch one manager's fields in one part of the object, so an entry is only
/// parsed into a [`Set`] when the write changes it: when the changed fields reach into it,
/// when they are more than it owns, or when a field it owns is gone.
#[allow(clippy::too_many_arguments)]
pub fn track_update(old: Option<&Value>, requested: &Value, new: &mut Value, manager: &str, subresource: &str, api_version: &str, kind: &str, now: Millis) {
    #[cfg(debug_assertions)]
    let reference = {
        let mut n = new.clone();
        track_update_reference(old, requested, &mut n, manager, subresource, api_version, kind, now);
        crate::foundation::api::get(&n, &["metadata", "managedFields"]).cloned()
    };
    let cur = Cursor::root(api_version, kind);
    let changed = diff_root(old, requested, subresource, &cur).filter(|c| !c.is_empty());
    let originals = old.map_or(&[][..], |o| crate::foundation::api::get_array(o, &["metadata", "managedFields"]));
    let mut out: Vec<Value> = Vec::with_capacity(originals.len() + 1);
    let mut mine_found = false;
    for orig in originals {
        let field = |k: &str| crate::foundation::api::get_str(orig, &[k]).unwrap_or("");
        let mine = field("manager") == manager && field("operation") == "Update" && field("subresource") == subresource;
        let fields = orig.get("fieldsV1").unwrap_or(&Value::Null);
        let mut set: Option<Set> = None;
        let mut set_changed = false;
        let mut time = None;
        if let Some(ch) = &changed {
            if mine {
                mine_found = true;
                time = Some(rfc3339(now));
                if !covers(fields, ch) {
                    set_changed |= set.get_or_insert_with(|| Set::from_json(fields)).union(ch);
                }
            } else if touches(fields, ch) {
                set_changed |= set.get_or_insert_with(|| Set::from_json(fields)).subtract(ch);
            }
        }
        if set.is_none() && prune_needed(fields, new) {
            set = Some(Set::from_json(fields));
        }
        if let Some(st) = &mut set {
            set_changed |= prune_set(st, new);
        }
        if set.as_ref().map_or_else(|| set_json_empty(fields), Set::is_empty) {
            continue;
        }
        out.push(match set {
            Some(set) if set_changed => {
                let e = Entry {
                    manager: field("manager").to_string(),
                    operation: field("operation").to_string(),
                    api_version: field("apiVersion").to_string(),
                    subresource: field("subresource").to_string(),
                    time: time.map_or_else(|| orig.get("time").cloned().unwrap_or(Value::Null), |t| json!(t)),
                    set,
                    orig: None,
                    set_changed: true,
                };
                SHARED.with(|c| c.borrow_mut().entry(&e))
            }
            _ => match time {
                Some(t) if orig.get("time").and_then(Value::as_str) != Some(t.as_str()) => {
                    let mut o = orig.clone();
                    o["time"] = json!(t);
                    o
                }
                _ => orig.clone(),
            },
        });
    }
    if let Some(mut set) = changed.filter(|_| !mine_found) {
        prune_set(&mut set, new);
        if !set.is_empty() {
            let e = Entry {
                manager: manager.to_string(),
                operation: "Update".into(),
                api_version: api_version.to_string(),
                subresource: subresource.to_string(),
                time: json!(rfc3339(now)),
                set,
                orig: None,
                set_changed: true,
            };
            out.push(SHARED.with(|c| c.borrow_mut().entry(&e)));
        }
    }
    set_entries(new, out);
    #[cfg(debug_assertions)]
    assert_eq!(crate::foundation::api::get(new, &["metadata", "managedFields"]).cloned(), reference, "managedFields of a {kind} written by {manager}");
}

/// [`diff`] of the tracked parts of two objects ([`tracked`]), without copying them out.
fn diff_root(before: Option<&Value>, after: &Value, subresource: &str, cur: &Cursor) -> Option<Set> {
    let mut s = Set::default();
    let mut any = false;
    for (k, v) in after.as_object().into_iter().flatten() {
        let b = before.and_then(|b| b.get(k.as_str()));
        let child = match k.as_str() {
            "apiVersion" | "kind" => continue,
            "status" if subresource == "status" => diff(b, v, &cur.field(k), &["status"]),
            "status" => continue,
            "metadata" if subresource != "status" => {
                let mc = cur.field(k);
                let mut m = Set::default();
                for f in TRACKED_METADATA {
                    if let Some(x) = v.get(f) {
                        any = true;
                        if let Some(c) = diff(b.and_then(|b| b.get(f)), x, &mc.field(f), &["metadata", f]) {
                            m.children.insert(format!("f:{f}"), c);
                        }
                    }
                }
                (!m.children.is_empty()).then_some(m)
            }
            _ if subresource == "status" => continue,
            _ => diff(b, v, &cur.field(k), &[k.as_str()]),
        };
        if k != "metadata" {
            any = true;
        }
        if let Some(c) = child {
            s.children.insert(format!("f:{k}"), c);
        }
    }
    // As `diff` of the two tracked maps: nothing changed is no set, unless there was
    // nothing to track at all.
    if s.children.is_empty() {
        return (!any).then(Set::default);
    }
    Some(s)
}

/// The metadata fields whose ownership is tracked.
const TRACKED_METADATA: [&str; 5] = ["generateName", "labels", "annotations", "ownerReferences", "finalizers"];

/// Whether `set` holds nothing, as a `fieldsV1` value.
fn set_json_empty(fields: &Value) -> bool {
    fields.as_object().is_none_or(|m| m.is_empty())
}

/// Whether the field set `fields` (as `fieldsV1`) owns all of `set` already: a
/// [`Set::union`] that would not grow it.
fn covers(fields: &Value, set: &Set) -> bool {
    let Some(m) = fields.as_object() else { return false };
    (!set.own || m.contains_key(".")) && set.children.iter().all(|(k, c)| m.get(k).is_some_and(|f| covers(f, c)))
}

/// Whether [`Set::subtract`] of `set` would change the field set `fields`.
fn touches(fields: &Value, set: &Set) -> bool {
    set.children.iter().any(|(k, c)| fields.get(k.as_str()).is_some_and(|f| c.own || c.children.is_empty() || touches(f, c) || set_json_empty(f)))
}

/// Whether [`prune_set`] would drop anything of `fields` (as `fieldsV1`) from `v`.
fn prune_needed(fields: &Value, v: &Value) -> bool {
    let Some(m) = fields.as_object() else { return false };
    m.iter().filter(|(k, _)| k.as_str() != ".").any(|(k, c)| {
        let Some(here) = child_at(v, k) else { return true };
        let had = c.as_object().is_some_and(|cm| cm.keys().any(|ck| ck != "."));
        had && prune_needed(c, here)
    })
}

/// The value a field set's key names in `v`: a field, or an item of a list.
fn child_at<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    if let Some(f) = k.strip_prefix("f:") {
        v.get(f)
    } else if k.starts_with("k:") || k.starts_with("v:") {
        index_of(v, k).and_then(|i| v.as_array().and_then(|a| a.get(i)))
    } else {
        None
    }
}

/// [`track_update`] done the plain way, every entry parsed: what debug builds check the
/// fast way against, at every write of every test.
#[cfg(debug_assertions)]
#[allow(clippy::too_many_arguments)]
fn track_update_reference(
    old: Option<&Value>,
    requested: &Value,
    new: &mut Value,
    manager: &str,
    subresource: &str,
    api_version: &str,
    kind: &str,
    now: Millis,
) {
    let mut list = entries(old);
    let empty = json!({});
    let before = old.unwrap_or(&empty);
    let cur = Cursor::root(api_version, kind);
    let mut changed = diff(Some(&tracked(before, subresource)), &tracked(requested, subresource), &cur, &[]).unwrap_or_default();
    changed.own = false;
    if !changed.is_empty() {
        let mine = |e: &Entry| e.manager == manager && e.operation == "Update" && e.subresource == subresource;
        let paths = changed.paths();
        for e in list.iter_mut().filter(|e| !mine(e)) {
            for p in &paths {
                e.set_changed |= e.set.remove(p);
            }
        }
        match list.iter_mut().find(|e| mine(e)) {
            Some(e) => {
                e.set_changed |= e.set.union(&changed);
                e.time = json!(rfc3339(now));
            }
            None => list.push(Entry {
                manager: manager.to_string(),
                operation: "Update".into(),
                api_version: api_version.to_string(),
                subresource: subresource.to_string(),
                time: json!(rfc3339(now)),
                set: changed,
                orig: None,
                set_changed: true,
            }),
        }
    }
    prune(&mut list, new);
    write_entries(new, list);
}

/// `.spec.template.spec.containers[name="web"].image`, as conflicts name fields.
fn display(path: &[String]) -> String {
    let mut s = String::new();
    for p in path {
        if let Some(f) = p.strip_prefix("f:") {
            s.push('.');
            s.push_str(f);
        } else if let Some(k) = p.strip_prefix("k:") {
            let key: Value = serde_json::from_str(k).unwrap_or(Value::Null);
            let parts: Vec<String> =
                key.as_object().into_iter().flatten().map(|(kk, v)| format!("{kk}={}", serde_json::to_string(v).unwrap_or_default())).collect();
            s.push_str(&format!("[{}]", parts.join(",")));
        } else if let Some(v) = p.strip_prefix("v:") {
            s.push_str(&format!("[={v}]"));
        }
    }
    s
}

/// Server-side apply of `config` by `manager` onto `live` (absent for a create). Returns
/// the merged object with its managedFields, or the 409 naming every conflict.
#[allow(clippy::too_many_arguments)]
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    manager: &str,
    force: bool,
    api_version: &str,
    kind: &str,
    subresource: &str,
    now: Millis,
) -> Result<Value, Status> {
    let mut list = entries(live);
    let applied = field_set(config, api_version, kind, subresource);
    let empty = json!({});
    let base = live.unwrap_or(&empty);
    let mine = |e: &Entry| e.manager == manager && e.operation == "Apply" && e.subresource == subresource;
    // Conflicts: fields another manager owns that this apply would change.
    let mut conflicts: Vec<(usize, Vec<String>)> = Vec::new();
    // Managers of other subresources count too (a `kubectl scale` owns `.spec.replicas`).
    for (i, e) in list.iter().enumerate().filter(|(_, e)| !mine(e)) {
        for p in applied.paths() {
            if e.set.contains(&p) && applied_leaf(&applied, &p) && get_at(config, &p) != get_at(base, &p) {
                conflicts.push((i, p));
            }
        }
    }
    // `lastAppliedManager`: kubectl's server-side apply takes over, without conflict, the
    // fields its client-side apply last set and still holds (those of the
    // `last-applied-configuration` annotation whose live values are unchanged).
    if manager == "kubectl" && !conflicts.is_empty() && !force {
        if let Some(last) = last_applied(base) {
            let held = field_set(&last, api_version, kind, subresource);
            conflicts.retain(|(_, p)| !(held.contains(p) && get_at(&last, p) == get_at(base, p)));
        }
    }
    if !conflicts.is_empty() && !force {
        let mut by_manager: Vec<(String, Vec<String>)> = Vec::new();
        let who_of = |e: &Entry| {
            let sub = if e.subresource.is_empty() { String::new() } else { format!(" with subresource {:?}", e.subresource) };
            format!("{:?}{sub} using {}", e.manager, e.api_version)
        };
        for (i, p) in &conflicts {
            let who = who_of(&list[*i]);
            match by_manager.iter_mut().find(|(w, _)| *w == who) {
                Some((_, ps)) => ps.push(display(p)),
                None => by_manager.push((who, vec![display(p)])),
            }
        }
        let n = conflicts.len();
        let mut message = format!("Apply failed with {n} conflict{}: ", if n == 1 { "" } else { "s" });
        let parts: Vec<String> = by_manager
            .iter()
            .map(|(who, ps)| if ps.len() == 1 { format!("conflict with {who}: {}", ps[0]) } else { format!("conflicts with {who}:\n- {}", ps.join("\n- ")) })
            .collect();
        message.push_str(&parts.join("\n"));
        let causes: Vec<Value> = conflicts
            .iter()
            .map(|(i, p)| json!({"reason": "FieldManagerConflict", "message": format!("conflict with {}", who_of(&list[*i])), "field": display(p)}))
            .collect();
        return Err(Status::new(409, "Conflict", message).with_details(json!({"causes": causes})));
    }
    for (i, p) in &conflicts {
        list[*i].set.remove(p);
    }
    let mut obj = base.clone();
    // What this manager applied before and no longer applies goes, unless someone else
    // owns it too.
    if let Some(old) = list.iter().find(|e| mine(e)).map(|e| e.set.clone()) {
        let mut gone: Vec<Vec<String>> =
            old.paths().into_iter().filter(|p| !applied.contains(p)).filter(|p| !list.iter().any(|e| !mine(e) && e.set.contains(p))).collect();
        gone.sort_stable_by_key(|p| std::cmp::Reverse(p.len()));
        for p in gone {
            remove_at(&mut obj, &p);
        }
    }
    let cur = Cursor::root(api_version, kind);
    let tracked_config = tracked(config, subresource);
    if !obj.is_object() {
        obj = json!({});
    }
    merge(&mut obj, &tracked_config, cur);
    // Identity fields come from the configuration on a create.
    if live.is_none() {
        for f in ["apiVersion", "kind"] {
            if let Some(v) = config.get(f) {
                obj[f] = v.clone();
            }
        }
        for f in ["name", "namespace", "generateName"] {
            if let Some(v) = crate::foundation::api::get(config, &["metadata", f]) {
                crate::foundation::api::set(&mut obj, &["metadata", f], v.clone());
            }
        }
    }
    match list.iter_mut().find(|e| mine(e)) {
        Some(e) => {
            e.set = applied;
            e.set_changed = true;
            e.time = json!(rfc3339(now));
            e.api_version = api_version.to_string();
        }
        None => list.insert(
            0,
            Entry {
                manager: manager.to_string(),
                operation: "Apply".into(),
                api_version: api_version.to_string(),
                subresource: subresource.to_string(),
                time: json!(rfc3339(now)),
                set: applied,
                orig: None,
                set_changed: true,
            },
        ),
    }
    prune(&mut list, &obj);
    if obj.get("metadata").is_none() {
        obj["metadata"] = json!({});
    }
    // `lastAppliedUpdater`: kubectl's server-side apply keeps the client-side annotation in
    // step with what it applied, so that a later client-side apply prunes the right fields.
    if manager == "kubectl" && last_applied(base).is_some() {
        let mut cfg = config.clone();
        if let Some(a) = cfg.get_mut("metadata").and_then(|m| m.get_mut("annotations")).and_then(Value::as_object_mut) {
            a.remove(LAST_APPLIED);
            if a.is_empty() {
                if let Some(m) = cfg.get_mut("metadata").and_then(Value::as_object_mut) {
                    m.remove("annotations");
                }
            }
        }
        let text = serde_json::to_string(&cfg).unwrap_or_default() + "\n";
        crate::foundation::api::set(&mut obj, &["metadata", "annotations", LAST_APPLIED], json!(text));
    }
    write_entries(&mut obj, list);
    Ok(obj)
}

/// kubectl's client-side apply record of what it last applied.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// An object's `last-applied-configuration`, parsed.
fn last_applied(obj: &Value) -> Option<Value> {
    let text = crate::foundation::api::annotation(obj, LAST_APPLIED)?;
    serde_json::from_str(text).ok()
}

/// Whether an applied path is a value (not a struct or list that only holds others).
fn applied_leaf(set: &Set, path: &[String]) -> bool {
    let mut cur = set;
    for p in path {
        match cur.children.get(p) {
            Some(c) => cur = c,
            None => return false,
        }
    }
    cur.children.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(replicas: i64, image: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": image, "ports": [{"containerPort": 80}]}]}}}})
    }

    #[test]
    fn a_status_update_is_owned_by_its_writer_under_status() {
        let old = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "image": "x"}]}, "status": {"phase": "Pending"}});
        let mut new = old.clone();
        new["status"] = json!({"phase": "Running", "podIP": "10.0.0.1", "conditions": [{"type": "Ready", "status": "True"}]});
        let requested = new.clone();
        track_update(Some(&old), &requested, &mut new, "kubelet", "status", "v1", "Pod", 0);
        let e = &new["metadata"]["managedFields"][0];
        assert_eq!((e["manager"].as_str(), e["operation"].as_str(), e["subresource"].as_str()), (Some("kubelet"), Some("Update"), Some("status")));
        // An item of a list merged by key is owned itself; the list is not.
        assert_eq!(
            e["fieldsV1"],
            json!({"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}, "f:type": {}}}, "f:phase": {}, "f:podIP": {}}})
        );
    }

    #[test]
    fn field_sets_follow_the_schema() {
        let s = field_set(&deployment(2, "nginx:1.25"), "apps/v1", "Deployment", "");
        let v = s.to_json();
        assert_eq!(v["f:metadata"]["f:labels"], json!({".": {}, "f:app": {}}));
        assert_eq!(v["f:spec"]["f:selector"], json!({}), "LabelSelector is atomic");
        let ctr = &v["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"web\"}"];
        assert_eq!(ctr["f:image"], json!({}));
        assert_eq!(ctr["f:ports"]["k:{\"containerPort\":80,\"protocol\":\"TCP\"}"], json!({".": {}, "f:containerPort": {}}));
        assert!(s.contains(&["f:spec".into(), "f:replicas".into()]));
        assert_eq!(Set::from_json(&v), s);
    }

    #[test]
    fn apply_conflicts_with_another_manager_unless_forced() {
        let live = apply(None, &deployment(2, "nginx:1.25"), "kubectl", false, "apps/v1", "Deployment", "", 0).unwrap();
        assert_eq!(live["metadata"]["managedFields"][0]["manager"], json!("kubectl"));
        assert_eq!(live["metadata"]["managedFields"][0]["operation"], json!("Apply"));
        // Someone scales by hand: they now own spec.replicas.
        let mut scaled = live.clone();
        scaled["spec"]["replicas"] = json!(5);
        let requested = scaled.clone();
        track_update(Some(&live), &requested, &mut scaled, "kubectl-scale", "scale", "apps/v1", "Deployment", 1000);
        let owners: Vec<&str> = scaled["metadata"]["managedFields"].as_array().unwrap().iter().map(|e| e["manager"].as_str().unwrap()).collect();
        assert_eq!(owners, ["kubectl", "kubectl-scale"]);
        // Re-applying replicas: 2 conflicts with that manager.
        let e = apply(Some(&scaled), &deployment(2, "nginx:1.26"), "kubectl", false, "apps/v1", "Deployment", "", 2000).unwrap_err();
        assert_eq!(e.code, 409);
        assert_eq!(e.message, "Apply failed with 1 conflict: conflict with \"kubectl-scale\" with subresource \"scale\" using apps/v1: .spec.replicas");
        // Leaving replicas out of the configuration is fine, and changes the image.
        let mut without = deployment(2, "nginx:1.26");
        without["spec"].as_object_mut().unwrap().remove("replicas");
        let ok = apply(Some(&scaled), &without, "kubectl", false, "apps/v1", "Deployment", "", 2000).unwrap();
        assert_eq!(ok["spec"]["replicas"], json!(5));
        assert_eq!(ok["spec"]["template"]["spec"]["containers"][0]["image"], json!("nginx:1.26"));
        // Forcing takes the field over.
        let forced = apply(Some(&scaled), &deployment(3, "nginx:1.26"), "kubectl", true, "apps/v1", "Deployment", "", 3000).unwrap();
        assert_eq!(forced["spec"]["replicas"], json!(3));
        let managers: Vec<&str> = forced["metadata"]["managedFields"].as_array().unwrap().iter().map(|e| e["manager"].as_str().unwrap()).collect();
        assert_eq!(managers, ["kubectl"], "kubectl-scale owned only replicas and lost it");
    }

    #[test]
    fn fields_dropped_from_the_configuration_are_removed() {
        let live = apply(None, &deployment(2, "nginx:1.25"), "kubectl", false, "apps/v1", "Deployment", "", 0).unwrap();
        let mut config = deployment(2, "nginx:1.25");
        config["metadata"]["labels"] = json!({});
        config["spec"]["template"]["spec"]["containers"][0].as_object_mut().unwrap().remove("ports");
        let out = apply(Some(&live), &config, "kubectl", false, "apps/v1", "Deployment", "", 1000).unwrap();
        assert_eq!(out["metadata"]["labels"], json!({}));
        assert!(out["spec"]["template"]["spec"]["containers"][0].get("ports").is_none());
        assert_eq!(display(&["f:spec".into(), "f:template".into(), "k:{\"name\":\"web\"}".into(), "f:image".into()]), ".spec.template[name=\"web\"].image");
    }
}
