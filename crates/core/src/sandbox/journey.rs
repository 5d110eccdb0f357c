//! One object's journey: the records of its own requests, then of everything it caused —
//! the objects it owns (a Deployment's ReplicaSets, their Pods, transitively), their
//! bindings, kubelet and runtime work, and the Services that select its Pods with their
//! EndpointSlices. The diagram follows it to show what one apply set in motion.
//!
//! Records come in the order things happened, and an owner is created before what it
//! owns, so one pass over the trace finds the whole family: a record joins the journey if
//! its object is already in it, or if the object as stored names an owner in it (or, for
//! a Service, selects one of its Pods).

use crate::apiserver::store::Store;
use crate::apiserver::trace::Record;
use crate::foundation::api::{self, Object, RESOURCES};
use crate::foundation::labels;
use std::collections::BTreeSet;

#[derive(Debug, Clone, Default)]
pub struct Journey {
    /// The object followed, as records name it (`Deployment/default/web`).
    pub root: String,
    /// Objects in the journey, by key, and their uids (for owner references).
    members: BTreeSet<String>,
    uids: BTreeSet<String>,
}

/// The object a record is about, without a subresource: `Pod/default/web-1/status` is
/// `Pod/default/web-1`.
pub fn object_of(record: &str) -> &str {
    let kind = record.split('/').next().unwrap_or("");
    let namespaced = RESOURCES.iter().find(|r| r.kind == kind).is_none_or(|r| r.namespaced);
    let parts = if namespaced { 3 } else { 2 };
    match record.match_indices('/').nth(parts - 1) {
        Some((i, _)) => &record[..i],
        None => record,
    }
}

/// The key records use for a stored object.
pub fn key_of(o: &Object) -> String {
    let ns = api::namespace(o);
    let kind = api::get_str(o, &["kind"]).unwrap_or("");
    if ns.is_empty() {
        format!("{kind}/{}", api::name(o))
    } else {
        format!("{kind}/{ns}/{}", api::name(o))
    }
}

fn stored<'a>(store: &'a Store, key: &str) -> Option<&'a Object> {
    let mut parts = key.splitn(3, '/');
    let kind = parts.next()?;
    let r = RESOURCES.iter().position(|x| x.kind == kind)?;
    let (ns, name) = if RESOURCES[r].namespaced { (parts.next()?, parts.next()?) } else { ("", parts.next()?) };
    store.get_by(r, ns, name)
}

fn in_history<'a>(store: &'a Store, key: &str, rv: &str) -> Option<&'a Object> {
    let rev: u64 = rv.parse().ok()?;
    let kind = key.split('/').next()?;
    let r = RESOURCES.iter().position(|x| x.kind == kind)?;
    let mut events = store.events_since(r, rev.saturating_sub(1).max(store.compacted_revision())).ok()?;
    events.find(|e| e.revision == rev).map(|e| &e.object).filter(|o| key_of(o) == key)
}

impl Journey {
    pub fn new(root: &str) -> Journey {
        let root = object_of(root).to_string();
        let mut members = BTreeSet::new();
        members.insert(root.clone());
        Journey { root, members, uids: BTreeSet::new() }
    }

    /// Whether the record is part of the journey (and its object joins if it is).
    pub fn admit(&mut self, store: &Store, r: &Record) -> bool {
        if r.object.is_empty() {
            return false;
        }
        let key = object_of(&r.object);
        if self.members.contains(key) {
            if let Some(o) = stored(store, key) {
                self.uids.insert(api::uid(o).to_string());
            }
            return true;
        }
        // An object deleted since is found, for a record that carries its revision, in the
        // store's history.
        let Some(o) = stored(store, key).or_else(|| in_history(store, key, &r.resource_version)) else { return false };
        if self.belongs(store, o) {
            self.members.insert(key.to_string());
            self.uids.insert(api::uid(o).to_string());
            return true;
        }
        false
    }

    fn belongs(&self, store: &Store, o: &Object) -> bool {
        if api::get_array(o, &["metadata", "ownerReferences"]).iter().any(|r| api::get_str(r, &["uid"]).is_some_and(|u| self.uids.contains(u))) {
            return true;
        }
        let kind = api::get_str(o, &["kind"]).unwrap_or("");
        let ns = api::namespace(o);
        match kind {
            // A Service that selects one of the journey's Pods, and its EndpointSlices.
            "Service" => {
                let Some(sel) = o.get("spec").and_then(|s| s.get("selector")).and_then(|s| s.as_object()).filter(|s| !s.is_empty()) else { return false };
                self.members
                    .iter()
                    .filter(|m| m.starts_with("Pod/"))
                    .filter_map(|m| stored(store, m))
                    .any(|p| api::namespace(p) == ns && labels::map_matches(sel, api::labels(p)))
            }
            "EndpointSlice" => api::label(o, "kubernetes.io/service-name").is_some_and(|svc| self.members.contains(&format!("Service/{ns}/{svc}"))),
            _ => false,
        }
    }

    /// The records of the journey, in order, from a trace.
    pub fn records<'a>(&mut self, store: &Store, records: &'a [Record]) -> Vec<(usize, &'a Record)> {
        records.iter().enumerate().filter(|(_, r)| self.admit(store, r)).collect()
    }
}
