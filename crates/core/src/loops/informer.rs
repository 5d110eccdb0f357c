//! Informers: a watch turned into a local cache, as client-go's reflector and
//! kube-runtime's watcher do it.
//!
//! The watcher is an explicit state machine: `Empty` lists everything and moves to
//! `Watching` at the list's revision; `Watching` replays the store's history after its
//! revision, in order; a `410 Expired` (history compacted past it) sends it back to a
//! relist, whose differences with the cache come out as ordinary deltas. The cache has one
//! writer (`sync`) and many cheap readers: objects are shared `Arc`s, never deep copies.

use crate::apiserver::store::{EventType, Store, StoreError};
use crate::foundation::api::{Object, ResourceId};
use crate::foundation::value::Str;
use std::collections::BTreeMap;

/// One change seen by the informer, with the object it replaced.
#[derive(Debug, Clone)]
pub struct Delta {
    pub kind: EventType,
    pub object: Object,
    pub old: Option<Object>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchState {
    Empty,
    Watching(u64),
}

/// What one `sync` did.
#[derive(Debug, Default)]
pub struct SyncResult {
    pub deltas: Vec<Delta>,
    /// `Some(message)` when the watch expired and the informer relisted.
    pub relisted: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Informer {
    pub resource: ResourceId,
    pub state: WatchState,
    /// namespace -> name -> object (names of up to 24 bytes kept inline, without an
    /// allocation of their own)
    cache: BTreeMap<String, BTreeMap<Str, Object>>,
    count: usize,
}

impl Informer {
    fn insert(&mut self, o: &Object) -> Option<Object> {
        let ns = crate::foundation::api::namespace(o);
        let name = crate::foundation::api::name(o);
        let m = match self.cache.get_mut(ns) {
            Some(m) => m,
            None => self.cache.entry(ns.to_string()).or_default(),
        };
        let old = match m.get_mut(name) {
            Some(slot) => Some(std::mem::replace(slot, o.clone())),
            None => {
                m.insert(Str::from(name), o.clone());
                None
            }
        };
        if old.is_none() {
            self.count += 1;
        }
        old
    }

    fn remove(&mut self, o: &Object) -> Option<Object> {
        let ns = crate::foundation::api::namespace(o);
        let m = self.cache.get_mut(ns)?;
        let old = m.remove(crate::foundation::api::name(o));
        if m.is_empty() {
            self.cache.remove(ns);
        }
        if old.is_some() {
            self.count -= 1;
        }
        old
    }
}

impl Informer {
    pub fn new(resource: ResourceId) -> Self {
        Informer { resource, state: WatchState::Empty, cache: BTreeMap::new(), count: 0 }
    }

    /// Whether the store has changes this informer has not seen.
    pub fn behind(&self, store: &Store) -> bool {
        match self.state {
            WatchState::Empty => true,
            WatchState::Watching(rv) => match store.events_since(self.resource, rv) {
                Ok(mut it) => it.next().is_some(),
                Err(_) => true,
            },
        }
    }

    /// Bring the cache up to date with the store.
    pub fn sync(&mut self, store: &Store) -> SyncResult {
        let mut out = SyncResult::default();
        if let WatchState::Watching(rv) = self.state {
            match store.events_since(self.resource, rv) {
                Ok(events) => {
                    let mut last = rv;
                    out.deltas.reserve(events.size_hint().0);
                    for e in events {
                        let old = match e.kind {
                            EventType::Deleted => self.remove(&e.object),
                            _ => self.insert(&e.object),
                        };
                        out.deltas.push(Delta { kind: e.kind, object: e.object.clone(), old });
                        last = e.revision;
                    }
                    self.state = WatchState::Watching(last.max(rv));
                    return out;
                }
                Err(StoreError::Expired(asked, oldest)) => {
                    out.relisted = Some(format!("too old resource version: {asked} ({oldest})"));
                }
                Err(_) => {}
            }
        }
        // List, and diff against what the cache held.
        let old_cache = std::mem::take(&mut self.cache);
        self.count = 0;
        for o in store.list(self.resource, None) {
            self.insert(o);
        }
        for (ns, m) in &old_cache {
            for (n, o) in m {
                if self.get(ns, n).is_none() {
                    out.deltas.push(Delta { kind: EventType::Deleted, object: o.clone(), old: Some(o.clone()) });
                }
            }
        }
        let fresh: Vec<Object> = self.list(None).cloned().collect();
        for o in fresh {
            match old_cache.get(crate::foundation::api::namespace(&o)).and_then(|m| m.get(crate::foundation::api::name(&o))) {
                None => out.deltas.push(Delta { kind: EventType::Added, object: o.clone(), old: None }),
                Some(prev) if crate::foundation::api::resource_version(prev) != crate::foundation::api::resource_version(&o) => {
                    out.deltas.push(Delta { kind: EventType::Modified, object: o.clone(), old: Some(prev.clone()) })
                }
                Some(_) => {}
            }
        }
        self.state = WatchState::Watching(store.revision());
        out
    }

    pub fn get(&self, namespace: &str, name: &str) -> Option<&Object> {
        self.cache.get(namespace)?.get(name)
    }

    /// Cached objects in key order; one namespace if given.
    pub fn list<'a>(&'a self, namespace: Option<&'a str>) -> Box<dyn Iterator<Item = &'a Object> + 'a> {
        match namespace {
            Some(ns) => Box::new(self.cache.get(ns).into_iter().flat_map(|m| m.values())),
            None => Box::new(self.cache.values().flat_map(|m| m.values())),
        }
    }

    pub fn len(&self) -> usize {
        self.count
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foundation::api::{rid, ObjectKey};
    use crate::foundation::sort::Sort;
    use crate::foundation::value::json;
    use std::sync::Arc;

    fn cm(name: &str, v: &str) -> Object {
        Arc::new(json!({"metadata": {"name": name, "namespace": "default"}, "data": {"v": v}}))
    }

    #[test]
    fn watches_in_order_then_relists_after_compaction() {
        let mut s = Store::default();
        let mut inf = Informer::new(rid::CONFIGMAP);
        s.create(&ObjectKey::new(rid::CONFIGMAP, "default", "a"), cm("a", "1")).unwrap();
        let r = inf.sync(&s);
        assert_eq!(r.deltas.len(), 1);
        assert!(r.relisted.is_none());
        s.update(&ObjectKey::new(rid::CONFIGMAP, "default", "a"), cm("a", "2"), None).unwrap();
        s.create(&ObjectKey::new(rid::CONFIGMAP, "default", "b"), cm("b", "1")).unwrap();
        let r = inf.sync(&s);
        let kinds: Vec<_> = r.deltas.iter().map(|d| d.kind).collect();
        assert_eq!(kinds, vec![EventType::Modified, EventType::Added]);
        // Changes while the informer is away, then compaction past its revision.
        s.delete(&ObjectKey::new(rid::CONFIGMAP, "default", "a"), None).unwrap();
        s.create(&ObjectKey::new(rid::CONFIGMAP, "default", "c"), cm("c", "1")).unwrap();
        s.compact(s.revision());
        let r = inf.sync(&s);
        assert!(r.relisted.as_deref().unwrap().starts_with("too old resource version"));
        let mut kinds: Vec<_> = r.deltas.iter().map(|d| (d.kind, crate::foundation::api::name(&d.object).to_string())).collect();
        kinds.sort_stable_by(|a, b| a.1.cmp(&b.1));
        assert_eq!(kinds, vec![(EventType::Deleted, "a".into()), (EventType::Added, "c".into())]);
        assert_eq!(inf.len(), 2);
    }
}
