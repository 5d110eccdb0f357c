//! Events as `client-go/tools/record` writes them: core/v1 Events named
//! `<object>.<unix nanoseconds in hex>`, with identical events folded into one whose
//! `count` grows (`events_cache.go`). They are written through the API server like any
//! other object.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::{ApiServer, Credentials, PatchType, Request};
use crate::foundation::api::{self, get_str, rid, Object};
use crate::foundation::sim::{rfc3339, rfc3339_micro};
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

/// Source component, host, involved uid and field path, type, reason and message, joined
/// by a unit separator: what makes two events identical (`getEventKey`).
type EventKey = String;

/// How many distinct events one recorder remembers for folding (`maxLruCacheEntries`).
pub const MAX_REMEMBERED: usize = 4096;

/// The events one source wrote recently, least recently used first out (the correlator's
/// `eventLogger` cache): key -> (namespace, name, count, last use).
#[derive(Clone, Debug, Default)]
struct Remembered {
    events: HashMap<EventKey, (String, String, i64, u64)>,
    by_use: BTreeMap<u64, EventKey>,
    uses: u64,
}

impl Remembered {
    fn get(&mut self, key: &str) -> Option<(String, String, i64)> {
        self.uses += 1;
        let (ns, name, count, used) = self.events.get_mut(key)?;
        self.by_use.remove(used);
        *used = self.uses;
        self.by_use.insert(self.uses, key.to_string());
        Some((ns.clone(), name.clone(), *count))
    }

    fn put(&mut self, key: EventKey, ns: String, name: String, count: i64) {
        self.uses += 1;
        if let Some((_, _, _, used)) = self.events.get(&key) {
            self.by_use.remove(used);
        } else if self.events.len() >= MAX_REMEMBERED {
            if let Some((_, oldest)) = self.by_use.pop_first() {
                self.events.remove(&oldest);
            }
        }
        self.by_use.insert(self.uses, key.clone());
        self.events.insert(key, (ns, name, count, self.uses));
    }
}

/// Every source's event recorder: each component (and each node's kubelet) has its own, as
/// each builds its own event broadcaster and correlator.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    /// component -> host -> what that source remembers.
    seen: HashMap<&'static str, HashMap<String, Remembered>>,
    counter: u64,
}

impl Recorder {
    /// Record an event about `involved` (with an optional `fieldPath` such as
    /// `spec.containers{nginx}`). Failures to write are dropped, as the real recorder does.
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
        let uid = api::uid(involved).to_string();
        let ns = {
            let n = api::namespace(involved);
            if n.is_empty() {
                "default".to_string()
            } else {
                n.to_string()
            }
        };
        let key = format!("{}\u{1f}{}\u{1f}{uid}{}\u{1f}{ty}\u{1f}{reason}\u{1f}{message}", src.component, src.host, field_path.unwrap_or(""));
        let now = api.now;
        let creds = Credentials::User(src.user.clone());
        let hosts = self.seen.entry(src.component).or_default();
        let seen = match hosts.get_mut(src.host.as_str()) {
            Some(s) => s,
            None => hosts.entry(src.host.clone()).or_default(),
        };
        if let Some((ens, ename, count)) = seen.get(&key) {
            let patch = json!({"count": count + 1, "lastTimestamp": rfc3339(now)});
            let mut req = Request::patch(rid::EVENT, &ens, &ename, PatchType::Merge, patch, creds.clone()).by(src.component);
            req.protobuf = true;
            req.internal = true;
            let r = api.handle(req);
            if r.is_ok() {
                seen.put(key, ens, ename, count + 1);
                return r.ok();
            }
        }
        self.counter += 1;
        let nanos = (crate::foundation::sim::epoch() as u128 * 1000 + now as u128) * 1_000_000 + self.counter as u128;
        let name = format!("{}.{:x}", api::name(involved), nanos);
        let mut involved_ref = json!({
            "apiVersion": get_str(involved, &["apiVersion"]).unwrap_or(""),
            "kind": get_str(involved, &["kind"]).unwrap_or(""),
            "name": api::name(involved),
            "uid": uid,
            "resourceVersion": api::resource_version(involved),
        });
        if !api::namespace(involved).is_empty() {
            involved_ref["namespace"] = json!(api::namespace(involved));
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
            "metadata": {"name": name, "namespace": ns},
            "reason": reason,
            "message": message,
            "type": ty,
            "firstTimestamp": rfc3339(now),
            "lastTimestamp": rfc3339(now),
            "count": 1,
            "reportingComponent": src.component,
            "reportingInstance": src.host,
        });
        if let Some(a) = action {
            ev["action"] = json!(a);
            ev["eventTime"] = json!(rfc3339_micro(now));
        }
        let mut req = Request::create(rid::EVENT, &ns, ev, creds).by(src.component);
        req.protobuf = true;
        req.internal = true;
        let r = api.handle(req);
        if r.is_ok() {
            if let Some(seen) = self.seen.get_mut(src.component).and_then(|h| h.get_mut(src.host.as_str())) {
                seen.put(key, ns, name, 1);
            }
        }
        r.ok()
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
}
