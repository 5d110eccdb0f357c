//! The resource quota controller (`pkg/controller/resourcequota/resource_quota_controller.go`
//! and its `quota_monitor.go`): keeps each ResourceQuota's `status.hard` equal to its
//! `spec.hard` and `status.used` equal to what the objects of its namespace use.
//!
//! Admission charges a new object to the quotas as it is created; this loop is what gives
//! usage back. As upstream, a quota is synced when it is created or its `spec.hard`
//! changes (never for its own status writes), when an object it counts is deleted, when a
//! pod reaches a terminal phase, when a Service changes type, when a claim's allocated
//! storage changes, and on a full resync every five minutes (`--resource-quota-sync-period`),
//! which also catches pods whose deletion outlasted its grace period.
//!
//! The usage arithmetic and the evaluators are the API server's
//! ([`crate::apiserver::quota`]); informers for object counts (`count/<resource>`) are
//! started the first time a quota asks for that resource, as the quota monitor starts one
//! per quotable resource.

use crate::apiserver::quota;
use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, Request};
use crate::foundation::api::{self, get, get_str, rid, Object, ResourceId, RESOURCES};
use crate::foundation::sim::Millis;
use crate::foundation::sort::CollectTree;
use crate::foundation::value::Value;
use crate::loops::informer::{Delta, Informer};
use crate::loops::{req_as, Controller, Cx};
use std::collections::{BTreeMap, BTreeSet};

/// `--resource-quota-sync-period`.
pub const RESYNC_PERIOD: Millis = 5 * 60 * 1000;

/// Every resource a quota may count: what the loop's informers may cover.
static QUOTABLE: std::sync::LazyLock<Vec<ResourceId>> =
    std::sync::LazyLock::new(|| (0..RESOURCES.len()).filter(|r| quota::evaluator_for(*r).is_some()).collect());

#[derive(Clone)]
pub struct ResourceQuotaController {
    user: UserInfo,
    quotas: Informer,
    /// Informers over what the quotas count, started on demand.
    counted: BTreeMap<ResourceId, Informer>,
    queue: BTreeSet<(String, String)>,
    resync_armed: bool,
}

impl Default for ResourceQuotaController {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether an update of a counted object can lower a quota's usage (the quota monitor's
/// `UpdateFunc` filter): a pod leaving the charged state, a Service changing type, a
/// claim's allocated storage changing.
#[inline(never)]
fn replenishes(r: ResourceId, d: &Delta, now: Millis) -> bool {
    let Some(old) = &d.old else { return false };
    match r {
        rid::POD => quota::quota_v1_pod(old, now) && !quota::quota_v1_pod(&d.object, now),
        rid::SERVICE => {
            let ty = |o: &Value| match get_str(o, &["spec", "type"]) {
                Some(t @ ("NodePort" | "LoadBalancer")) => t.to_string(),
                _ => String::new(),
            };
            ty(old) != ty(&d.object)
        }
        rid::PVC => get(old, &["status", "allocatedResources", "storage"]) != get(&d.object, &["status", "allocatedResources", "storage"]),
        _ => false,
    }
}

impl ResourceQuotaController {
    pub fn new() -> Self {
        ResourceQuotaController {
            user: UserInfo::controller("resourcequota-controller"),
            quotas: Informer::new(rid::RESOURCEQUOTA),
            counted: BTreeMap::new(),
            queue: BTreeSet::new(),
            resync_armed: false,
        }
    }

    /// The resources the quotas' hard limits need measured.
    fn needed(&self) -> BTreeSet<ResourceId> {
        let mut out = BTreeSet::new();
        for q in self.quotas.list(None) {
            let hard: Vec<String> = quota::parse_list(get(q, &["spec", "hard"])).into_keys().collect();
            out.extend(quota::evaluators_for(&hard).into_iter().map(|(r, _)| r));
        }
        out
    }

    #[inline(never)]
    fn queue_namespace(&mut self, ns: &str) {
        let names: Vec<String> = self.quotas.list(Some(ns)).map(|q| api::name(q).to_string()).collect();
        for n in names {
            self.queue.insert((ns.to_string(), n));
        }
    }

    fn sync_informers(&mut self, cx: &mut Cx) {
        for d in self.quotas.sync(&cx.api.store).deltas {
            let key = api::queue_key(&d.object);
            // Only a new quota or a change of its limits asks for a sync: the status
            // writes are this loop's own (and admission's charges).
            let changed = match (&d.kind, &d.old) {
                (EventType::Added, _) | (_, None) => true,
                (EventType::Deleted, _) => false,
                (_, Some(old)) => get(old, &["spec", "hard"]) != get(&d.object, &["spec", "hard"]) || get(&d.object, &["status", "hard"]).is_none(),
            };
            if changed {
                self.queue.insert(key);
            }
        }
        let needed = self.needed();
        self.counted.retain(|r, _| needed.contains(r));
        for r in needed {
            if let std::collections::btree_map::Entry::Vacant(e) = self.counted.entry(r) {
                // A new informer lists what exists; every quota counting it is queued.
                let mut inf = Informer::new(r);
                inf.sync(&cx.api.store);
                e.insert(inf);
                let namespaces: BTreeSet<String> = self.quotas.list(None).map(|q| api::namespace(q).to_string()).collect_tree();
                for ns in namespaces {
                    self.queue_namespace(&ns);
                }
            }
        }
        let mut touched = BTreeSet::new();
        for (r, inf) in self.counted.iter_mut() {
            for d in inf.sync(&cx.api.store).deltas {
                if d.kind == EventType::Deleted || replenishes(*r, &d, cx.now) {
                    touched.insert(api::namespace(&d.object).to_string());
                }
            }
        }
        for ns in touched {
            self.queue_namespace(&ns);
        }
    }

    /// `syncResourceQuota`.
    #[inline(never)]
    fn sync(&mut self, cx: &mut Cx, key: &(String, String)) {
        let Some(q) = self.quotas.get(&key.0, &key.1).cloned() else { return };
        let counted = &self.counted;
        let objects = |r: ResourceId| -> Vec<&Value> { counted.get(&r).map(|inf| inf.list(Some(&key.0)).map(|o| &**o).collect()).unwrap_or_default() };
        let used = quota::calculate_usage(&q, &objects, cx.now);
        let Some(status) = quota::quota_status(&q, &used) else { return };
        let mut body = (*q).clone();
        api::set(&mut body, &["status"], status);
        let r = cx.api.handle(req_as(
            Request::update(rid::RESOURCEQUOTA, &key.0, &key.1, body, Credentials::User(self.user.clone())).with_sub("status"),
            "resourcequota-controller",
            &self.user,
        ));
        match r {
            Ok(stored) => {
                if cx.tracing() {
                    let used = quota::parse_list(get(&stored, &["status", "used"]));
                    let hard = quota::parse_list(get(&stored, &["status", "hard"]));
                    let parts: Vec<String> =
                        hard.iter().map(|(k, h)| format!("{k} {}/{}", used.get(k).map(|u| u.render()).unwrap_or_else(|| "0".into()), h.render())).collect();
                    cx.trace(
                        Flow::Ready,
                        "resource-quota",
                        format!("ResourceQuota/{}/{}", key.0, key.1),
                        "ok",
                        api::resource_version(&stored),
                        format!("used {}", parts.join(", ")),
                    );
                }
            }
            // A conflict with admission's charge: look again with the newer quota.
            Err(s) if s.code == 409 => cx.after(1, format!("{}/{}", key.0, key.1)),
            Err(_) => {}
        }
    }
}

impl Controller for ResourceQuotaController {
    fn name(&self) -> &'static str {
        "resourcequota-controller"
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        QUOTABLE.as_slice()
    }
    fn run(&mut self, cx: &mut Cx) {
        self.sync_informers(cx);
        if !self.resync_armed && !self.quotas.is_empty() {
            self.resync_armed = true;
            cx.every(RESYNC_PERIOD, "resync");
        }
        while let Some(k) = self.queue.pop_first() {
            self.sync(cx, &k);
        }
    }
    fn timer(&mut self, cx: &mut Cx, key: &str) {
        if key == "resync" {
            self.resync_armed = false;
            let all: Vec<(String, String)> = self.quotas.list(None).map(|q: &Object| api::queue_key(q)).collect();
            self.queue.extend(all);
        } else if let Some((ns, name)) = key.split_once('/') {
            self.queue.insert((ns.to_string(), name.to_string()));
        }
        self.run(cx);
    }
    fn busy(&self, _now: Millis) -> bool {
        !self.queue.is_empty()
    }
    fn restart(&mut self) {
        *self = Self::new();
    }
}
