//! "Why this value?": for each field of a stored object, the write that last changed it —
//! which user or component, when, at which resourceVersion, through which part of the
//! pipeline (the person's manifest, defaulting, a mutating webhook, a controller, the
//! kubelet's status) — and the trace record of that write.
//!
//! It is read from what the engine already keeps: the store's history of the object (every
//! version since the last compaction) finds the version at which the field took its value;
//! the trace record that stored that resourceVersion names the writer and its request; the
//! request's own records and the manifest it carried (kubectl's last-applied annotation)
//! say which stage set it. Past the compacted history, managedFields still names the
//! manager that owns the field.

use super::Sandbox;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::foundation::api::{self, Object, RESOURCES};
use crate::foundation::sim::Millis;
use crate::foundation::value::Value;

/// Where one field's value came from.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldWhy {
    /// `spec.template.spec.containers[0].image`.
    pub path: String,
    pub value: String,
    /// The version that set it (the oldest kept one when the history is compacted).
    pub revision: u64,
    pub t: Millis,
    /// Who wrote that version: `kubectl (admin)`, `deployment-controller`, `kubelet`.
    pub writer: String,
    /// How: the stage or part of the system that set the field.
    pub how: String,
    /// The trace record of the write (index into the trace), for the diagram.
    pub record: Option<usize>,
    /// False when older history is compacted away: the field has had this value since at
    /// least `revision`.
    pub exact: bool,
}

/// One stored version of an object: its revision, when, who wrote it (from the trace) and
/// the trace record of that write; `object` is `None` for its deletion.
#[derive(Debug, Clone)]
pub struct Version {
    pub revision: u64,
    pub t: Millis,
    pub writer: String,
    pub record: Option<usize>,
    pub object: Option<Object>,
}

/// Every version of an object the store's history still holds, oldest first, and whether
/// the oldest is its creation.
pub fn versions(sb: &Sandbox, object: &Object) -> (Vec<Version>, bool) {
    let kind = api::get_str(object, &["kind"]).unwrap_or("");
    let Some(r) = RESOURCES.iter().position(|x| x.kind == kind) else { return (Vec::new(), false) };
    let (ns, name) = (api::namespace(object), api::name(object));
    let store = &sb.cluster.api.store;
    let Ok(events) = store.events_since(r, store.compacted_revision()) else { return (Vec::new(), false) };
    let records = sb.cluster.api.trace.records();
    let mut created = None;
    let out = events
        .filter(|e| api::name(&e.object) == name && api::namespace(&e.object) == ns)
        .map(|e| {
            created.get_or_insert(e.kind == EventType::Added);
            let rv = e.revision.to_string();
            let record = records.iter().rposition(|x| x.flow == Flow::Etcd && x.result == "ok" && x.resource_version == rv);
            let writer = record.map(|i| writer_name(&records[i].component, &records[i].user)).unwrap_or_default();
            let record = record.map(|i| sb.cluster.api.trace.records_base() + i);
            Version { revision: e.revision, t: e.at, writer, record, object: (e.kind != EventType::Deleted).then(|| e.object.clone()) }
        })
        .collect();
    (out, created.unwrap_or(false))
}

#[derive(Debug, Clone, PartialEq)]
enum Seg {
    Key(String),
    Index(usize),
}

fn at<'a>(v: &'a Value, path: &[Seg]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, s| match s {
        Seg::Key(k) => v.get(k.as_str()),
        Seg::Index(i) => v.as_array().and_then(|a| a.get(*i)),
    })
}

fn path_string(path: &[Seg]) -> String {
    let mut out = String::new();
    for s in path {
        match s {
            Seg::Key(k) if k.contains('.') || k.contains('/') => out.push_str(&format!("[{k:?}]")),
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// The object's leaves (scalars, and empty maps and lists), in document order, without the
/// bookkeeping no writer chooses (managedFields, resourceVersion, uid, the last-applied copy).
fn leaves(v: &Value, path: &mut Vec<Seg>, out: &mut Vec<(Vec<Seg>, String)>) {
    const SKIP: &[&str] = &["managedFields", "resourceVersion", "uid", "kubectl.kubernetes.io/last-applied-configuration"];
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m.iter() {
                if SKIP.contains(&k.as_str()) && path.first().is_none_or(|s| *s == Seg::Key("metadata".into())) {
                    continue;
                }
                path.push(Seg::Key(k.to_string()));
                leaves(x, path, out);
                path.pop();
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for (i, x) in a.iter().enumerate() {
                path.push(Seg::Index(i));
                leaves(x, path, out);
                path.pop();
            }
        }
        Value::String(s) => out.push((path.clone(), s.to_string())),
        other => out.push((path.clone(), other.to_string())),
    }
}

/// Where each field of `object` (as stored now) came from, in document order.
pub fn why(sb: &Sandbox, object: &Object) -> Vec<FieldWhy> {
    let rv: u64 = api::resource_version(object).parse().unwrap_or(0);
    // The object's versions up to the one shown, since it was last created; whether the
    // oldest of them is its creation.
    let (all, mut created) = versions(sb, object);
    let mut kept: Vec<Version> = Vec::new();
    for v in all.into_iter().filter(|v| v.revision <= rv) {
        if v.object.is_none() {
            kept.clear();
            created = true;
            continue;
        }
        kept.push(v);
    }
    let mut fields = Vec::new();
    leaves(object, &mut Vec::new(), &mut fields);
    fields
        .into_iter()
        .map(|(path, value)| {
            let now = at(object, &path);
            // The first version of the latest run of versions that all hold this value.
            let mut i = kept.len();
            while i > 0 && kept[i - 1].object.as_ref().and_then(|o| at(o, &path)) == now {
                i -= 1;
            }
            let exact = i > 0 || created;
            let Some(v) = kept.get(i).or(kept.last()) else {
                return from_managed_fields(object, path, value);
            };
            let how = match (v.record.and_then(|r| sb.cluster.api.trace.record(r)), &v.object) {
                (Some(r), Some(o)) => how_set(sb, r, o, &path),
                _ => "the write's trace record is no longer kept".into(),
            };
            FieldWhy { path: path_string(&path), value, revision: v.revision, t: v.t, writer: v.writer.clone(), how, record: v.record, exact }
        })
        .collect()
}

fn writer_name(component: &str, user: &str) -> String {
    if user.is_empty() || user == component || component != "kubectl" {
        component.to_string()
    } else {
        format!("{component} ({user})")
    }
}

/// Which part of the write set the field.
fn how_set(sb: &Sandbox, w: &crate::apiserver::trace::Record, version: &Object, path: &[Seg]) -> String {
    let records = sb.cluster.api.trace.records();
    let same_request = |stage: &str| {
        w.request.and_then(|req| records.iter().rev().find(|x| x.request == Some(req) && x.stage == stage)).map(|x| x.message.clone()).unwrap_or_default()
    };
    let request = same_request("request");
    let status = path.first() == Some(&Seg::Key("status".into()));
    if w.component != "kubectl" {
        let what = if status { "reported it in the object's status" } else { "set it" };
        return format!("{} {what} ({})", w.component, request);
    }
    let sent = api::annotation(version, "kubectl.kubernetes.io/last-applied-configuration").and_then(|a| serde_json::from_str::<Value>(a).ok());
    let in_manifest = sent.as_ref().is_some_and(|m| at(m, path).is_some());
    if in_manifest {
        return "your manifest (kubectl apply sent it)".into();
    }
    let mutating = same_request("mutating-admission");
    if mutating.contains("webhook") {
        return format!("mutating admission, in your request: {mutating}");
    }
    if request.starts_with("CREATE") || sent.is_some() {
        return format!("defaulting: the API server filled it in during your request ({request}); the manifest did not set it");
    }
    format!("your request: {request}")
}

/// Without history: the manager whose managedFields entry owns the field.
fn from_managed_fields(object: &Object, path: Vec<Seg>, value: String) -> FieldWhy {
    let mut owner = None;
    for e in api::get_array(object, &["metadata", "managedFields"]) {
        let mut set = e.get("fieldsV1");
        for s in &path {
            set = set.and_then(|v| match s {
                Seg::Key(k) => v.get(format!("f:{k}").as_str()),
                // List items are keyed by their merge key or value; any of them will do here.
                Seg::Index(_) => {
                    v.as_object().and_then(|m| m.iter().find(|(k, _)| k.starts_with("k:") || k.starts_with("v:") || k.starts_with("i:")).map(|(_, x)| x))
                }
            });
        }
        if set.is_some() {
            owner = Some(e);
        }
    }
    let writer = owner.and_then(|e| api::get_str(e, &["manager"])).unwrap_or("").to_string();
    let how = owner
        .map(|e| {
            format!(
                "its manager, per managedFields ({} at {}; older history is compacted)",
                api::get_str(e, &["operation"]).unwrap_or(""),
                api::get_str(e, &["time"]).unwrap_or("")
            )
        })
        .unwrap_or_else(|| "older history is compacted, and no manager owns it".into());
    FieldWhy { path: path_string(&path), value, revision: 0, t: 0, writer, how, record: None, exact: false }
}
