//! Events as `client-go/tools/record` writes them: core/v1 Events named
//! `<object>.<unix nanoseconds in hex>`, passed through the recorder's `EventCorrelator`
//! (`events_cache.go`) before they reach the API server:
//!
//! * **aggregation**: ten events that differ only in their message, from one source about
//!   one object with one type and reason within ten minutes, make the tenth and later ones a
//!   single Event whose message is `(combined from similar events): <latest message>`;
//! * **counting**: an event identical to one recorded before is a patch of that Event's
//!   `count`, `lastTimestamp` and `message`;
//! * **spam filtering**: each source may write 25 events about one object at once, then one
//!   more every five minutes (a token bucket); the rest are dropped.
//!
//! Each cache holds the 4,096 most recently used keys. The scheduler's events (written
//! with an `action`, as `k8s.io/client-go/tools/events` writes them) are only counted.
//! They are written through the API server like any other object.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::{ApiServer, Credentials, PatchType, Request};
use crate::foundation::api::{self, get_str, rid, Object};
use crate::foundation::sim::{rfc3339, rfc3339_micro, Millis};
use crate::foundation::value::{json, Value};
use std::collections::{BTreeMap, HashMap};

/// Who reports an event.
#[derive(Debug, Clone)]
pub struct Source {
    /// `deployment-controller`, `default-scheduler`, `kubelet`, ...
    pub component: &'static str,
    /// The node, for kubelet events.
    pub host: String,
    pub user: UserInfo,
}

/// How many keys each of a recorder's caches remembers (`maxLruCacheEntries`).
pub const MAX_REMEMBERED: usize = 4096;
/// Distinct messages of similar events before they are aggregated (`defaultAggregateMaxEvents`).
pub const AGGREGATE_MAX_EVENTS: usize = 10;
/// How long a group of similar events stays open (`defaultAggregateIntervalInSeconds`).
const AGGREGATE_INTERVAL: Millis = 600_000;
/// Events one source may write about one object at once (`defaultSpamBurst`) ...
pub const SPAM_BURST: f64 = 25.0;
/// ... and the refill: one every five minutes (`defaultSpamQPS`).
const SPAM_REFILL_MS: f64 = 300_000.0;

/// A key of the correlator's caches: the FNV-1a hash of the fields `events_cache.go`
/// joins, each followed by a separator. Keeping the hash rather than the joined string
/// keeps a recorder's memory small on a 5,000-node cluster.
fn key(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0x1f]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// A least-recently-used cache (`github.com/golang/groupcache/lru`).
#[derive(Clone, Debug)]
struct Lru<V> {
    entries: HashMap<u64, (V, u64)>,
    by_use: BTreeMap<u64, u64>,
    uses: u64,
}

impl<V> Default for Lru<V> {
    fn default() -> Self {
        Lru { entries: HashMap::new(), by_use: BTreeMap::new(), uses: 0 }
    }
}

impl<V> Lru<V> {
    fn touch(&mut self, k: u64) {
        self.uses += 1;
        if let Some((_, used)) = self.entries.get_mut(&k) {
            self.by_use.remove(used);
            *used = self.uses;
            self.by_use.insert(self.uses, k);
        }
    }

    fn get(&mut self, k: u64) -> Option<&mut V> {
        self.touch(k);
        self.entries.get_mut(&k).map(|(v, _)| v)
    }

    fn add(&mut self, k: u64, v: V) {
        if self.entries.contains_key(&k) {
            self.touch(k);
            if let Some((slot, _)) = self.entries.get_mut(&k) {
                *slot = v;
            }
            return;
        }
        if self.entries.len() >= MAX_REMEMBERED {
            if let Some((_, oldest)) = self.by_use.pop_first() {
                self.entries.remove(&oldest);
            }
        }
        self.uses += 1;
        self.by_use.insert(self.uses, k);
        self.entries.insert(k, (v, self.uses));
    }
}

/// The aggregator's record of a group of similar events (`aggregateRecord`): the messages
/// seen (as hashes, sorted; never more than ten) and when the last one came.
#[derive(Clone, Debug, Default)]
struct Similar {
    messages: Vec<u64>,
    last: Option<Millis>,
}

/// The logger's record of an Event written (`eventLog`).
#[derive(Clone, Debug)]
struct Observed {
    count: i64,
    first: Millis,
    name: String,
}

/// The spam filter's token bucket for one source and object (`golang.org/x/time/rate`).
#[derive(Clone, Debug)]
struct Bucket {
    tokens: f64,
    last: Millis,
}

/// One source's correlator (`EventCorrelator`): its three caches.
#[derive(Clone, Debug, Default)]
struct Correlator {
    similar: Lru<Similar>,
    observed: Lru<Observed>,
    spam: Lru<Bucket>,
}

impl Correlator {
    /// `TryAccept` on the bucket of `k`: a token, if one has accrued.
    fn allow(&mut self, k: u64, now: Millis) -> bool {
        let mut b = self.spam.get(k).cloned().unwrap_or(Bucket { tokens: SPAM_BURST, last: now });
        let tokens = (b.tokens + now.saturating_sub(b.last) as f64 / SPAM_REFILL_MS).min(SPAM_BURST);
        let ok = tokens >= 1.0;
        if ok {
            b = Bucket { tokens: tokens - 1.0, last: now };
        }
        self.spam.add(k, b);
        ok
    }
}

/// Every source's event recorder: each component (and each node's kubelet) has its own, as
/// each builds its own event broadcaster and correlator.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    /// component -> host -> that source's correlator.
    seen: HashMap<&'static str, HashMap<String, Correlator>>,
    counter: u64,
}

impl Recorder {
    /// Record an event about `involved` (with an optional `fieldPath` such as
    /// `spec.containers{nginx}`). Failures to write are dropped, as the real recorder does;
    /// so are the events the spam filter holds back.
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &mut self,
        api: &mut ApiServer,
        src: &Source,
        involved: &Value,
        field_path: Option<&str>,
        ty: &str,
        reason: &str,
        message: &str,
        action: Option<&str>,
    ) -> Option<Object> {
        let uid = api::uid(involved);
        let (name, namespace) = (api::name(involved), api::namespace(involved));
        let ns = if namespace.is_empty() { "default" } else { namespace };
        let kind = get_str(involved, &["kind"]).unwrap_or("");
        let api_version = get_str(involved, &["apiVersion"]).unwrap_or("");
        let now = api.now;
        let object = [src.component, src.host.as_str(), kind, namespace, name, uid, api_version];
        let event_key = key(&[&object[..5], &[field_path.unwrap_or("")], &object[5..], &[ty, reason, message]].concat());
        let hosts = self.seen.entry(src.component).or_default();
        let cor = match hosts.get_mut(src.host.as_str()) {
            Some(c) => c,
            None => hosts.entry(src.host.clone()).or_default(),
        };
        // EventAggregate: the tenth distinct message of similar events within the interval
        // turns them into one aggregate Event (events written with an action are not).
        let mut message = std::borrow::Cow::Borrowed(message);
        let mut cache_key = event_key;
        let mut aggregate = false;
        if action.is_none() {
            let similar_key = key(&[&object[..], &[ty, reason, src.component, src.host.as_str()]].concat());
            let mut rec = cor.similar.get(similar_key).cloned().unwrap_or_default();
            if rec.last.is_none_or(|last| now.saturating_sub(last) > AGGREGATE_INTERVAL) {
                rec = Similar::default();
            }
            let m = key(&[&message]);
            if let Err(i) = rec.messages.binary_search(&m) {
                rec.messages.insert(i, m);
            }
            rec.last = Some(now);
            if rec.messages.len() >= AGGREGATE_MAX_EVENTS {
                // Go pops an arbitrary member to keep the set from growing; the smallest here.
                rec.messages.remove(0);
                message = std::borrow::Cow::Owned(format!("(combined from similar events): {message}"));
                cache_key = similar_key ^ 0x9e37_79b9_7f4a_7c15;
                aggregate = true;
            }
            cor.similar.add(similar_key, rec);
        }
        // eventObserve: an Event seen before is patched, its count one more.
        let prev = cor.observed.get(cache_key).cloned();
        let self_counter = &mut self.counter;
        let mut fresh_name = || {
            *self_counter += 1;
            let nanos = (crate::foundation::sim::epoch() as u128 * 1000 + now as u128) * 1_000_000 + *self_counter as u128;
            format!("{name}.{nanos:x}")
        };
        let observed = match prev {
            Some(p) => Observed { count: p.count + 1, first: p.first, name: p.name },
            None => Observed { count: 1, first: now, name: fresh_name() },
        };
        cor.observed.add(cache_key, observed.clone());
        // The spam filter, after the logger has counted the event.
        if action.is_none() && !cor.allow(key(&object), now) {
            return None;
        }
        let creds = Credentials::User(src.user.clone());
        if observed.count > 1 {
            let patch = json!({"count": observed.count, "lastTimestamp": rfc3339(now), "message": message.as_ref()});
            let mut req = Request::patch(rid::EVENT, ns, &observed.name, PatchType::Strategic, patch, creds.clone()).by(src.component);
            req.protobuf = true;
            req.internal = true;
            match api.handle(req) {
                Ok(o) => return Some(o),
                // The Event is gone (deleted, or expired): it is created again under its name.
                Err(s) if s.code == 404 => {}
                Err(_) => return None,
            }
        }
        let mut involved_ref = json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "resourceVersion": api::resource_version(involved)});
        if !namespace.is_empty() {
            involved_ref["namespace"] = json!(namespace);
        }
        if let Some(fp) = field_path {
            involved_ref["fieldPath"] = json!(fp);
        }
        let mut source = json!({"component": src.component});
        if !src.host.is_empty() {
            source["host"] = json!(src.host);
        }
        let mut ev = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "involvedObject": involved_ref,
            "source": source,
            "metadata": {"name": observed.name, "namespace": ns},
            "reason": reason,
            "message": message.as_ref(),
            "type": ty,
            "firstTimestamp": rfc3339(observed.first),
            "lastTimestamp": rfc3339(now),
            "count": observed.count,
        });
        // The aggregate Event is a copy that leaves the reporting controller and instance
        // empty.
        let (component, instance) = if aggregate { ("", "") } else { (src.component, src.host.as_str()) };
        ev["reportingComponent"] = json!(component);
        ev["reportingInstance"] = json!(instance);
        if let Some(a) = action {
            ev["action"] = json!(a);
            ev["eventTime"] = json!(rfc3339_micro(now));
        }
        let mut req = Request::create(rid::EVENT, ns, ev, creds).by(src.component);
        req.protobuf = true;
        req.internal = true;
        api.handle(req).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foundation::sort::Sort;

    fn api() -> ApiServer {
        let mut api = ApiServer::new(1, false);
        for o in crate::apiserver::rbac::bootstrap_policy() {
            api.bootstrap_object(o);
        }
        api.bootstrap_object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}));
        api
    }

    fn pod(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")}})
    }

    fn count(api: &ApiServer, name: &str) -> Vec<i64> {
        api.store.list(rid::EVENT, None).filter(|e| get_str(e, &["involvedObject", "name"]) == Some(name)).map(|e| e["count"].as_i64().unwrap_or(0)).collect()
    }

    #[test]
    fn a_repeated_event_is_folded_until_the_recorder_forgets_it() {
        let mut api = api();
        let mut rec = Recorder::default();
        let kubelet = Source { component: "kubelet", host: "node-a".into(), user: UserInfo::node("node-a") };
        let scheduler = Source { component: "default-scheduler", host: String::new(), user: UserInfo::admin() };
        let first = pod("first");
        rec.record(&mut api, &kubelet, &first, None, "Warning", "BackOff", "Back-off restarting failed container", None);
        rec.record(&mut api, &kubelet, &first, None, "Warning", "BackOff", "Back-off restarting failed container", None);
        assert_eq!(count(&api, "first"), vec![2], "the same event twice is one Event with count 2");
        // Another source's recorder keeps its own memory: it does not push the first out.
        for i in 0..MAX_REMEMBERED {
            rec.record(&mut api, &scheduler, &pod(&format!("other-{i}")), None, "Normal", "Scheduled", "assigned", None);
        }
        rec.record(&mut api, &kubelet, &first, None, "Warning", "BackOff", "Back-off restarting failed container", None);
        assert_eq!(count(&api, "first"), vec![3]);
        // 4096 other events from the same source: the first is forgotten, and a new Event starts.
        for i in 0..MAX_REMEMBERED {
            rec.record(&mut api, &kubelet, &pod(&format!("other-{i}")), None, "Normal", "Pulled", "already present", None);
        }
        rec.record(&mut api, &kubelet, &first, None, "Warning", "BackOff", "Back-off restarting failed container", None);
        let mut counts = count(&api, "first");
        counts.sort_stable();
        assert_eq!(counts, vec![1, 3]);
    }

    fn events_of(api: &ApiServer, name: &str) -> Vec<(String, i64)> {
        let mut v: Vec<(String, i64)> = api
            .store
            .list(rid::EVENT, None)
            .filter(|e| get_str(e, &["involvedObject", "name"]) == Some(name))
            .map(|e| (get_str(e, &["message"]).unwrap_or("").to_string(), e["count"].as_i64().unwrap_or(0)))
            .collect();
        v.sort_stable();
        v
    }

    #[test]
    fn similar_events_are_aggregated_and_a_source_is_held_to_its_burst() {
        let mut api = api();
        let mut rec = Recorder::default();
        let rs_controller = Source { component: "replicaset-controller", host: String::new(), user: UserInfo::admin() };
        let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "default", "uid": "uid-web"}});
        for i in 0..30 {
            rec.record(&mut api, &rs_controller, &rs, None, "Normal", "SuccessfulCreate", &format!("Created pod: web-{i:02}"), None);
        }
        // Nine Events of their own; the tenth distinct message on starts the aggregate, which
        // the next fifteen patch; the last five are over the burst of 25 and dropped.
        let mut want: Vec<(String, i64)> = (0..9).map(|i| (format!("Created pod: web-{i:02}"), 1)).collect();
        want.push(("(combined from similar events): Created pod: web-24".into(), 16));
        want.sort_stable();
        assert_eq!(events_of(&api, "web"), want);
        let aggregate = api.store.list(rid::EVENT, None).find(|e| get_str(e, &["message"]).is_some_and(|m| m.starts_with("(combined"))).unwrap();
        assert_eq!(aggregate["reportingComponent"], json!(""), "the aggregate copy leaves the reporting controller empty");
        // Five minutes give one token back: the next event is written, its count counting the
        // five the filter dropped (the logger saw them).
        api.now += 300_000;
        rec.record(&mut api, &rs_controller, &rs, None, "Normal", "SuccessfulCreate", "Created pod: web-30", None);
        assert_eq!(events_of(&api, "web").first(), Some(&("(combined from similar events): Created pod: web-30".to_string(), 22)));
        api.now += 1;
        rec.record(&mut api, &rs_controller, &rs, None, "Normal", "SuccessfulCreate", "Created pod: web-31", None);
        assert_eq!(events_of(&api, "web").len(), 10, "no token left: dropped");
        // Ten quiet minutes (and tokens for them): similar events start a new group, one Event each.
        api.now += 600_001;
        rec.record(&mut api, &rs_controller, &rs, None, "Normal", "SuccessfulCreate", "Created pod: web-32", None);
        assert!(events_of(&api, "web").contains(&("Created pod: web-32".to_string(), 1)));
        // Events about other objects are neither aggregated with these nor held back.
        for i in 0..30 {
            rec.record(&mut api, &rs_controller, &pod(&format!("p-{i}")), None, "Normal", "Pulled", "already present", None);
        }
        assert!((0..30).all(|i| events_of(&api, &format!("p-{i}")) == vec![("already present".to_string(), 1)]));
    }
}
