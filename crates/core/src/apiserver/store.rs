//! The etcd model: one global revision, objects per resource, and the watch history.
//!
//! Like etcd behind the API server, every write takes the next revision, which becomes
//! the object's `resourceVersion`; an update that names a stale `resourceVersion` fails;
//! the history of changes can be replayed from any revision still held, and compaction
//! drops old revisions so that a watch from before them gets `410 Expired`
//! (`k8s.io/apiserver/pkg/storage/etcd3/store.go`, `.../cacher/watch_cache.go`).

use crate::foundation::api::{resource_version, Object, ObjectKey, ResourceId, RESOURCES};
use std::collections::{BTreeMap, VecDeque};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as a watch delivers it.
#[derive(Debug, Clone)]
pub struct WatchEvent {
    pub revision: u64,
    /// Simulated time of the write.
    pub at: crate::foundation::sim::Millis,
    pub kind: EventType,
    pub object: Object,
    /// The object as it was before this change (`None` for an ADDED), as the watch cache's
    /// events carry their `PrevObject`: a watch with selectors judges by it whether the
    /// client knew the object, so that it can send one that stops matching as DELETED.
    pub prev: Option<Object>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    NotFound,
    AlreadyExists,
    /// The caller's `resourceVersion` is not the stored one.
    Conflict,
    /// A watch or list from a compacted revision: `(asked, oldest held - 1)`.
    Expired(u64, u64),
    /// The object is larger than etcd takes in one request (`--max-request-bytes`).
    TooLarge,
    /// The write would take the stored data past the quota (`--quota-backend-bytes`).
    NoSpace,
}

impl StoreError {
    /// etcd's own words, which the API server passes through
    /// (`etcdserver: request is too large`, `etcdserver: mvcc: database space exceeded`).
    pub fn etcd_message(&self) -> Option<&'static str> {
        match self {
            StoreError::TooLarge => Some("etcdserver: request is too large"),
            StoreError::NoSpace => Some("etcdserver: mvcc: database space exceeded"),
            _ => None,
        }
    }
}

/// The largest object etcd stores: its default `--max-request-bytes`, 1.5 MiB.
pub const MAX_OBJECT_BYTES: usize = 1536 * 1024;
/// etcd's `--quota-backend-bytes` default: past it the database raises its NOSPACE alarm and
/// refuses every write but deletes (`etcdserver: mvcc: database space exceeded`) until
/// it is compacted, defragmented and the alarm disarmed.
pub const DEFAULT_QUOTA_BYTES: u64 = 2 << 30;
/// The page's quota: a browser tab holds far less than a server.
pub const PAGE_QUOTA_BYTES: u64 = 32 << 20;
/// What a deletion's tombstone takes in etcd's key space (key and revision).
const TOMBSTONE_BYTES: u64 = 64;

/// Objects of one resource, keyed by (namespace, name), and their change history.
#[derive(Debug, Default, Clone)]
struct Partition {
    /// namespace -> name -> object; two levels so lookups borrow `&str` keys.
    objects: BTreeMap<String, BTreeMap<String, Stored>>,
    count: usize,
    history: VecDeque<WatchEvent>,
    last_write: u64,
    /// Watches from before this revision get 410 Expired.
    compacted: u64,
}

/// The watch cache keeps at least this much history (`eventFreshDuration`).
pub const EVENT_FRESH_DURATION: crate::foundation::sim::Millis = 75_000;
/// ... and at least this many events (`--default-watch-cache-size`) ...
pub const MIN_HISTORY: usize = 100;
/// ... and at most this many per resource (the real cache grows to 100k; kubeloop caps it
/// lower to bound memory in large simulations).
pub const MAX_HISTORY: usize = 10_000;

/// An object and its size as JSON, counted against the quota.
#[derive(Debug, Clone)]
struct Stored {
    object: Object,
    bytes: u64,
}

/// etcd's space, as its MVCC store and bbolt file keep it: every write adds a revision of
/// its key; a revision superseded by a later write (or a deletion's tombstone) is garbage
/// until a compaction past that later write removes it; the file only grows, reusing the
/// pages compaction freed, and shrinks only when defragmented. The quota bounds the file.
#[derive(Debug, Clone, Default)]
pub struct Space {
    /// Superseded revisions and tombstones: (the revision that superseded them, bytes).
    garbage: VecDeque<(u64, u64)>,
    garbage_bytes: u64,
    /// The database file (`DB SIZE`).
    pub db_size: u64,
    /// The NOSPACE alarm is raised.
    pub alarm: bool,
}

#[derive(Debug, Clone)]
pub struct Store {
    revision: u64,
    compacted: u64,
    partitions: Vec<Partition>,
    /// The JSON size of every stored object, together (the live revisions).
    bytes: u64,
    /// The most the database file may take (etcd's `--quota-backend-bytes`).
    pub quota: u64,
    pub space: Space,
    /// The simulated time, set by the API server before each request.
    pub now: crate::foundation::sim::Millis,
}

impl Default for Store {
    fn default() -> Self {
        Store {
            revision: 1,
            compacted: 0,
            partitions: vec![Partition::default(); RESOURCES.len()],
            bytes: 0,
            quota: DEFAULT_QUOTA_BYTES,
            space: Space::default(),
            now: 0,
        }
    }
}

fn with_rv(obj: Object, rev: u64) -> Object {
    let mut v = Object::unwrap_or_clone(obj);
    crate::foundation::api::set(&mut v, &["metadata", "resourceVersion"], rev.to_string().into());
    Object::new(v)
}

impl Store {
    /// The current revision (what a list returns as its `resourceVersion`).
    pub fn revision(&self) -> u64 {
        self.revision
    }
    pub fn compacted_revision(&self) -> u64 {
        self.compacted
    }

    pub fn get(&self, key: &ObjectKey) -> Option<&Object> {
        self.get_by(key.resource, &key.namespace, &key.name)
    }

    pub fn get_by(&self, resource: ResourceId, namespace: &str, name: &str) -> Option<&Object> {
        self.partitions[resource].objects.get(namespace)?.get(name).map(|s| &s.object)
    }

    /// The JSON size of every stored object, together.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// What etcd's revisions take: the live ones and the garbage compaction has yet to
    /// remove (`DB SIZE IN USE`).
    pub fn bytes_in_use(&self) -> u64 {
        self.bytes + self.space.garbage_bytes
    }

    /// The size of `obj` as JSON, if etcd takes it: not while the NOSPACE alarm is raised,
    /// and a write that would grow the file past the quota raises it (etcd's
    /// `quotaApplierV3`; etcd applies that last write all the same, kubeloop does not).
    fn admit(&mut self, obj: &Object) -> Result<u64, StoreError> {
        let bytes = obj.json_len_within(MAX_OBJECT_BYTES).ok_or(StoreError::TooLarge)? as u64;
        if self.space.alarm {
            return Err(StoreError::NoSpace);
        }
        if self.space.db_size.max(self.bytes_in_use() + bytes) > self.quota {
            self.space.alarm = true;
            return Err(StoreError::NoSpace);
        }
        Ok(bytes)
    }

    /// A write at `rev` superseded `bytes` (an older revision, or a tombstone's key).
    fn supersede(&mut self, rev: u64, bytes: u64) {
        self.space.garbage.push_back((rev, bytes));
        self.space.garbage_bytes += bytes;
        self.space.db_size = self.space.db_size.max(self.bytes_in_use());
    }

    /// `etcdctl defrag`: the file shrinks to what is in use.
    pub fn defragment(&mut self) -> u64 {
        let before = self.space.db_size;
        self.space.db_size = self.bytes_in_use();
        before - self.space.db_size
    }

    /// `etcdctl alarm disarm`: whether an alarm was raised.
    pub fn disarm(&mut self) -> bool {
        std::mem::take(&mut self.space.alarm)
    }

    /// Objects of a resource, in key order; all namespaces if `namespace` is `None`.
    pub fn list<'a>(&'a self, resource: ResourceId, namespace: Option<&'a str>) -> Box<dyn Iterator<Item = &'a Object> + 'a> {
        let p = &self.partitions[resource].objects;
        match namespace {
            Some(ns) => Box::new(p.get(ns).into_iter().flat_map(|m| m.values().map(|s| &s.object))),
            None => Box::new(p.values().flat_map(|m| m.values().map(|s| &s.object))),
        }
    }

    /// How many objects a list returns and their JSON size together.
    pub fn size_of_list(&self, resource: ResourceId, namespace: Option<&str>) -> (usize, u64) {
        let p = &self.partitions[resource].objects;
        let sized = |m: &BTreeMap<String, Stored>| m.values().fold((0, 0), |(n, b), s| (n + 1, b + s.bytes));
        match namespace {
            Some(ns) => p.get(ns).map(sized).unwrap_or((0, 0)),
            None => p.values().map(sized).fold((0, 0), |(n, b), (m, c)| (n + m, b + c)),
        }
    }

    pub fn count(&self, resource: ResourceId) -> usize {
        self.partitions[resource].count
    }

    fn record(&mut self, resource: ResourceId, kind: EventType, object: Object, prev: Option<Object>) {
        let now = self.now;
        let p = &mut self.partitions[resource];
        p.history.push_back(WatchEvent { revision: self.revision, at: now, kind, object, prev });
        p.last_write = self.revision;
        // The watch cache forgets events that are both old and beyond its minimum size.
        while p.history.len() > MAX_HISTORY || (p.history.len() > MIN_HISTORY && p.history.front().is_some_and(|e| e.at + EVENT_FRESH_DURATION < now)) {
            if let Some(e) = p.history.pop_front() {
                p.compacted = e.revision;
            }
        }
    }

    /// The revision of the last write to `resource` (0 if none).
    pub fn last_write(&self, resource: ResourceId) -> u64 {
        self.partitions[resource].last_write
    }

    /// Store a new object; its `resourceVersion` becomes the new revision.
    pub fn create(&mut self, key: &ObjectKey, obj: Object) -> Result<Object, StoreError> {
        if self.get(key).is_some() {
            return Err(StoreError::AlreadyExists);
        }
        let obj = with_rv(obj, self.revision + 1);
        let bytes = self.admit(&obj)?;
        self.revision += 1;
        self.bytes += bytes;
        self.space.db_size = self.space.db_size.max(self.bytes_in_use());
        let p = &mut self.partitions[key.resource];
        p.objects.entry(key.namespace.clone()).or_default().insert(key.name.clone(), Stored { object: obj.clone(), bytes });
        p.count += 1;
        self.record(key.resource, EventType::Added, obj.clone(), None);
        Ok(obj)
    }

    /// Replace an object. `expected_rv`, if given, must equal the stored `resourceVersion`.
    pub fn update(&mut self, key: &ObjectKey, obj: Object, expected_rv: Option<&str>) -> Result<Object, StoreError> {
        let current = self.get(key).ok_or(StoreError::NotFound)?;
        if let Some(rv) = expected_rv {
            if !rv.is_empty() && rv != resource_version(current) {
                return Err(StoreError::Conflict);
            }
        }
        let old = self.partitions[key.resource].objects.get(&key.namespace).and_then(|m| m.get(&key.name)).map_or(0, |s| s.bytes);
        let obj = with_rv(obj, self.revision + 1);
        let bytes = self.admit(&obj)?;
        self.revision += 1;
        let mut prev = None;
        if let Some(slot) = self.partitions[key.resource].objects.get_mut(&key.namespace).and_then(|m| m.get_mut(&key.name)) {
            self.bytes = self.bytes - slot.bytes + bytes;
            prev = Some(std::mem::replace(slot, Stored { object: obj.clone(), bytes }).object);
        }
        self.supersede(self.revision, old);
        self.record(key.resource, EventType::Modified, obj.clone(), prev);
        Ok(obj)
    }

    /// Remove an object; the watch sees it with the deletion's revision.
    pub fn delete(&mut self, key: &ObjectKey, expected_rv: Option<&str>) -> Result<Object, StoreError> {
        let current = self.get(key).ok_or(StoreError::NotFound)?;
        if let Some(rv) = expected_rv {
            if !rv.is_empty() && rv != resource_version(current) {
                return Err(StoreError::Conflict);
            }
        }
        let p = &mut self.partitions[key.resource];
        let ns_map = p.objects.get_mut(&key.namespace).ok_or(StoreError::NotFound)?;
        let old = ns_map.remove(&key.name).ok_or(StoreError::NotFound)?;
        if ns_map.is_empty() {
            p.objects.remove(&key.namespace);
        }
        p.count -= 1;
        self.bytes -= old.bytes;
        self.revision += 1;
        self.supersede(self.revision, old.bytes + TOMBSTONE_BYTES);
        let obj = with_rv(old.object.clone(), self.revision);
        self.record(key.resource, EventType::Deleted, obj.clone(), Some(old.object));
        Ok(obj)
    }

    /// Changes to `resource` after revision `since`, oldest first.
    pub fn events_since(&self, resource: ResourceId, since: u64) -> Result<impl Iterator<Item = &WatchEvent>, StoreError> {
        let p = &self.partitions[resource];
        let oldest = self.compacted.max(p.compacted);
        if since < oldest {
            return Err(StoreError::Expired(since, oldest));
        }
        let h = &p.history;
        // History is ordered by revision: binary search the first event after `since`.
        let start = h.partition_point(|e| e.revision <= since);
        Ok(h.range(start..))
    }

    /// Forget history up to and including `rev`, as etcd compaction does.
    pub fn compact(&mut self, rev: u64) {
        if rev <= self.compacted {
            return;
        }
        self.compacted = rev.min(self.revision);
        // The revisions a later write superseded at or before `rev` go; the pages they
        // held are free for reuse, but the file keeps its size until defragmented.
        while let Some(&(at, bytes)) = self.space.garbage.front().filter(|(at, _)| *at <= rev) {
            let _ = at;
            self.space.garbage.pop_front();
            self.space.garbage_bytes -= bytes;
        }
        for p in &mut self.partitions {
            while p.history.front().is_some_and(|e| e.revision <= rev) {
                p.history.pop_front();
            }
        }
    }

    /// Every stored object, resource by resource in table order, then by key.
    pub fn all(&self) -> impl Iterator<Item = &Object> {
        self.partitions.iter().flat_map(|p| p.objects.values().flat_map(|m| m.values().map(|s| &s.object)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foundation::api::rid;
    use crate::foundation::value::json;

    fn obj(name: &str) -> Object {
        Object::new(json!({"metadata": {"name": name, "namespace": "default"}}))
    }

    #[test]
    fn revisions_increase_and_conflicts_are_detected() {
        let mut s = Store::default();
        let k = ObjectKey::new(rid::CONFIGMAP, "default", "a");
        let a = s.create(&k, obj("a")).unwrap();
        assert_eq!(resource_version(&a), "2");
        assert_eq!(s.create(&k, obj("a")).unwrap_err(), StoreError::AlreadyExists);
        let b = s.update(&k, obj("a"), Some("2")).unwrap();
        assert_eq!(resource_version(&b), "3");
        assert_eq!(s.update(&k, obj("a"), Some("2")).unwrap_err(), StoreError::Conflict);
        let d = s.delete(&k, None).unwrap();
        assert_eq!(resource_version(&d), "4");
        let kinds: Vec<_> = s.events_since(rid::CONFIGMAP, 0).unwrap().map(|e| e.kind).collect();
        assert_eq!(kinds, vec![EventType::Added, EventType::Modified, EventType::Deleted]);
        // Each event carries the version it replaced: none for the create, then rv 2, then rv 3.
        let prevs: Vec<_> = s.events_since(rid::CONFIGMAP, 0).unwrap().map(|e| e.prev.as_deref().map(resource_version)).collect();
        assert_eq!(prevs, vec![None, Some("2"), Some("3")]);
        s.compact(3);
        assert_eq!(s.events_since(rid::CONFIGMAP, 1).err(), Some(StoreError::Expired(1, 3)));
        assert_eq!(s.events_since(rid::CONFIGMAP, 3).unwrap().count(), 1);
    }

    #[test]
    fn etcd_refuses_objects_over_its_request_limit_and_writes_past_the_quota() {
        let mut s = Store::default();
        let big = |name: &str, n: usize| Object::new(json!({"metadata": {"name": name, "namespace": "default"}, "data": {"k": "x".repeat(n)}}));
        let k = |n: &str| ObjectKey::new(rid::CONFIGMAP, "default", n);
        assert_eq!(s.create(&k("a"), big("a", MAX_OBJECT_BYTES)).unwrap_err(), StoreError::TooLarge);
        assert_eq!(StoreError::TooLarge.etcd_message(), Some("etcdserver: request is too large"));
        // A refused write takes no revision.
        assert_eq!(s.revision(), 1);
        s.quota = 4000;
        s.create(&k("a"), big("a", 1000)).unwrap();
        s.create(&k("b"), big("b", 1000)).unwrap();
        // An update keeps the old revision until compaction: 3 revisions of ~1 KB each.
        s.update(&k("a"), big("a", 900), None).unwrap();
        assert!(s.bytes_in_use() > s.bytes() + 1000, "{} {}", s.bytes_in_use(), s.bytes());
        assert_eq!(s.create(&k("c"), big("c", 1000)).unwrap_err(), StoreError::NoSpace);
        assert_eq!(StoreError::NoSpace.etcd_message(), Some("etcdserver: mvcc: database space exceeded"));
        // The alarm refuses every write, small ones too, until disarmed; deletes go on.
        assert!(s.space.alarm);
        assert_eq!(s.create(&k("d"), big("d", 1)).unwrap_err(), StoreError::NoSpace);
        s.delete(&k("b"), None).unwrap();
        assert_eq!(s.create(&k("d"), big("d", 1)).unwrap_err(), StoreError::NoSpace);
        // Compaction frees the superseded revisions, defragmentation the file; then disarm.
        let size = s.space.db_size;
        s.compact(s.revision());
        assert_eq!(s.space.db_size, size, "compaction alone does not shrink the file");
        assert!(s.defragment() > 0);
        assert_eq!(s.space.db_size, s.bytes());
        assert!(s.disarm());
        s.create(&k("c"), big("c", 1000)).unwrap();
        // The count is the JSON size of what is stored, resourceVersions included.
        let total: usize = s.all().map(|o| serde_json::to_string(&**o).unwrap().len()).sum();
        assert_eq!(s.bytes(), total as u64);
    }
}
