//! Events as `client-go/tools/record` writes them: core/v1 Events named
//! `<object>.<unix nanoseconds in hex>`, with identical events folded into one whose
//! `count` grows (`events_cache.go`). They are written through the API server like any
//! other object.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::{ApiServer, Credentials, PatchType, Request};
use crate::foundation::api::{self, get_str, rid, Object};
use crate::foundation::sim::{rfc3339, rfc3339_micro, Millis};
use crate::foundation::value::{json, Value};
use std::collections::HashMap;

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

#[derive(Debug, Default)]
pub struct Recorder {
    seen: HashMap<EventKey, (String, String, i64)>,
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
        if let Some((ens, ename, count)) = self.seen.get(&key).cloned() {
            let patch = json!({"count": count + 1, "lastTimestamp": rfc3339(now)});
            let mut req = Request::patch(rid::EVENT, &ens, &ename, PatchType::Merge, patch, creds.clone()).by(src.component);
            req.protobuf = true;
            req.internal = true;
            let r = api.handle(req);
            if r.is_ok() {
                self.seen.insert(key, (ens, ename, count + 1));
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
            self.seen.insert(key, (ns, name, 1));
        }
        r.ok()
    }

    /// Forget folded events older than the 10-minute aggregation window.
    pub fn trim(&mut self, _now: Millis) {
        if self.seen.len() > 200_000 {
            self.seen.clear();
        }
    }
}
