//! Namespaced bookkeeping: the service account and root CA publisher controllers that give
//! every namespace its `default` ServiceAccount and `kube-root-ca.crt` ConfigMap
//! (`pkg/controller/serviceaccount/serviceaccounts_controller.go`,
//! `pkg/controller/certificates/rootcacertpublisher/publisher.go`), and the namespace
//! controller that empties a Terminating namespace and finalizes it
//! (`pkg/controller/namespace/namespace_controller.go`,
//! `deletion/namespaced_resources_deleter.go`, `deletion/status_condition_utils.go`).
//!
//! The namespace controller works as kube-controller-manager's does: a namespace event is
//! processed 5s later (`namespaceDeletionGracePeriod`); each sync deletes the content
//! resource by resource through the API (list, then delete each item with
//! `propagationPolicy: Background`: kubeloop's API serves no `deletecollection`, so this is
//! the path upstream takes for resources without it), pods first and alone until they are
//! gone (OrderedNamespaceDeletion, GA since 1.34), keeps the five deletion conditions, and
//! requeues after `estimate/2 + 1` seconds while content remains (the pods' grace period,
//! or 15s for objects held by finalizers), or with the exponential back-off (5ms to 60s)
//! after an error. With nothing left it removes its `kubernetes` token through the
//! `finalize` subresource; the API server then deletes the namespace unless
//! `metadata.finalizers` still hold it.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, Request, Verb};
use crate::foundation::api::{self, get_str, rid, Object, ResourceId, RESOURCES};
use crate::foundation::sim::{parse_rfc3339, rfc3339, Millis};
use crate::foundation::sort::{CollectTree, Sort};
use crate::foundation::status::Status;
use crate::foundation::value::{json, Value};
use crate::loops::informer::Informer;
use crate::loops::{req_as, Controller, Cx};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone)]
pub struct ServiceAccountsController {
    user: UserInfo,
    namespaces: Informer,
    sas: Informer,
    cms: Informer,
}

impl Default for ServiceAccountsController {
    fn default() -> Self {
        Self::new()
    }
}

impl ServiceAccountsController {
    pub fn new() -> Self {
        ServiceAccountsController {
            user: UserInfo::admin(),
            namespaces: Informer::new(rid::NAMESPACE),
            sas: Informer::new(rid::SERVICEACCOUNT),
            cms: Informer::new(rid::CONFIGMAP),
        }
    }
}

impl Controller for ServiceAccountsController {
    fn name(&self) -> &'static str {
        "serviceaccount-controller"
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::NAMESPACE, rid::SERVICEACCOUNT, rid::CONFIGMAP]
    }
    fn run(&mut self, cx: &mut Cx) {
        self.namespaces.sync(&cx.api.store);
        self.sas.sync(&cx.api.store);
        self.cms.sync(&cx.api.store);
        let names: Vec<String> = self.namespaces.list(None).filter(|n| !api::is_deleting(n)).map(|n| api::name(n).to_string()).collect();
        let creds = Credentials::User(self.user.clone());
        for ns in names {
            if self.sas.get(&ns, "default").is_none() {
                let body = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}});
                if cx.api.handle(req_as(Request::create(rid::SERVICEACCOUNT, &ns, body, creds.clone()), "serviceaccount-controller", &self.user)).is_ok() {
                    cx.trace(
                        Flow::MutatingAdmission,
                        "serviceaccount",
                        format!("ServiceAccount/{ns}/default"),
                        "ok",
                        "",
                        format!("created the default ServiceAccount of namespace {ns}"),
                    );
                }
            }
            if self.cms.get(&ns, "kube-root-ca.crt").is_none() {
                let _ =
                    cx.api.handle(req_as(Request::create(rid::CONFIGMAP, &ns, root_ca_configmap(&ns), creds.clone()), "root-ca-cert-publisher", &self.user));
            }
        }
    }
    fn timer(&mut self, cx: &mut Cx, _key: &str) {
        self.run(cx);
    }
    fn restart(&mut self) {
        *self = Self::new();
    }
}

/// The finalizer token the namespace controller owns (`v1.FinalizerKubernetes`).
pub const FINALIZER_KUBERNETES: &str = "kubernetes";
/// `namespaceDeletionGracePeriod`: how long after a namespace event it is processed.
const DELETION_GRACE_PERIOD: Millis = 5_000;
/// `finalizerEstimateSeconds`: the wait assumed for content held by finalizers.
const FINALIZER_ESTIMATE_SECONDS: i64 = 15;
/// `nsControllerRateLimiter`: per-item exponential back-off from 5ms to 60s.
const BACKOFF_BASE: Millis = 5;
const BACKOFF_MAX: Millis = 60_000;

/// The condition types the deleter maintains, in the order it writes them.
pub const CONDITION_TYPES: [&str; 5] = [
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure",
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
];

/// `okReasons` and `okMessages`: each condition's False form.
fn ok_condition(ty: &str) -> (&'static str, &'static str) {
    match ty {
        "NamespaceDeletionDiscoveryFailure" => ("ResourcesDiscovered", "All resources successfully discovered"),
        "NamespaceDeletionGroupVersionParsingFailure" => ("ParsedGroupVersions", "All legacy kube types successfully parsed"),
        "NamespaceDeletionContentFailure" => ("ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
        "NamespaceContentRemaining" => ("ContentRemoved", "All content successfully removed"),
        _ => ("ContentHasNoFinalizers", "All content-preserving finalizers finished"),
    }
}

/// `allGVRDeletionMetadata`: what remains, by resource (`<resource>.<group>`) and by finalizer.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ContentTotals {
    pub resources: BTreeMap<String, usize>,
    pub finalizers: BTreeMap<String, usize>,
}

/// `namespaceConditionUpdater`: the conditions one sync found to be failing; `update`
/// writes them, and the OK form of every other type, into a namespace's conditions.
#[derive(Debug, Default)]
pub struct ConditionUpdater {
    new_conditions: Vec<(String, String, String)>,
    delete_content_errors: Vec<String>,
}

impl ConditionUpdater {
    /// `ProcessDeleteContentErr`.
    pub fn process_delete_content_err(&mut self, err: String) {
        self.delete_content_errors.push(err);
    }

    /// `ProcessContentTotals`: `Some resources are remaining: pods. has 2 resource
    /// instances`, `Some content in the namespace has finalizers remaining:
    /// example.com/keep in 1 resource instances` (each list sorted as strings).
    pub fn process_content_totals(&mut self, totals: &ContentTotals) {
        if !totals.resources.is_empty() {
            let mut items: Vec<String> = totals.resources.iter().filter(|(_, n)| **n > 0).map(|(r, n)| format!("{r} has {n} resource instances")).collect();
            items.sort_stable();
            self.new_conditions.push((
                "NamespaceContentRemaining".into(),
                "SomeResourcesRemain".into(),
                format!("Some resources are remaining: {}", items.join(", ")),
            ));
        }
        if !totals.finalizers.is_empty() {
            let mut items: Vec<String> = totals.finalizers.iter().filter(|(_, n)| **n > 0).map(|(f, n)| format!("{f} in {n} resource instances")).collect();
            items.sort_stable();
            self.new_conditions.push((
                "NamespaceFinalizersRemaining".into(),
                "SomeFinalizersRemain".into(),
                format!("Some content in the namespace has finalizers remaining: {}", items.join(", ")),
            ));
        }
    }

    /// `Update`: every condition type set, failing or OK; `lastTransitionTime` moves only
    /// when a condition's status changes. Whether anything changed.
    pub fn update(mut self, conditions: &mut Vec<Value>, now: Millis) -> bool {
        if !self.new_conditions.iter().any(|(t, _, _)| t == "NamespaceDeletionContentFailure") && !self.delete_content_errors.is_empty() {
            let mut msgs = std::mem::take(&mut self.delete_content_errors);
            msgs.sort_stable();
            self.new_conditions.push((
                "NamespaceDeletionContentFailure".into(),
                "ContentDeletionFailed".into(),
                format!("Failed to delete all resource types, {} remaining: {}", msgs.len(), msgs.join(", ")),
            ));
        }
        let mut changed = false;
        for ty in CONDITION_TYPES {
            let (status, reason, message) = match self.new_conditions.iter().find(|(t, _, _)| t == ty) {
                Some((_, r, m)) => ("True", r.clone(), m.clone()),
                None => {
                    let (r, m) = ok_condition(ty);
                    ("False", r.to_string(), m.to_string())
                }
            };
            match conditions.iter_mut().find(|c| get_str(c, &["type"]) == Some(ty)) {
                None => {
                    conditions.push(json!({"type": ty, "status": status, "lastTransitionTime": rfc3339(now), "reason": reason, "message": message}));
                    changed = true;
                }
                Some(old) => {
                    let same = |k: &str, v: &str| get_str(old, &[k]) == Some(v);
                    if same("status", status) && same("reason", &reason) && same("message", &message) {
                        continue;
                    }
                    if !same("status", status) {
                        api::set(old, &["lastTransitionTime"], json!(rfc3339(now)));
                    }
                    api::set(old, &["status"], json!(status));
                    api::set(old, &["reason"], json!(reason));
                    api::set(old, &["message"], json!(message));
                    changed = true;
                }
            }
        }
        changed
    }
}

/// `gvrDeletionMetadata`: one resource's wait estimate and what of it remains.
#[derive(Debug, Default)]
struct Remaining {
    estimate: i64,
    count: usize,
    finalizers: BTreeMap<String, usize>,
}

/// The result of `deleteAllContent`.
#[derive(Debug, Default)]
struct Content {
    estimate: i64,
    errors: Vec<String>,
    /// Everything left is held by finalizers: no loop's work will move it along.
    held_by_finalizers: bool,
}

/// Why a sync did not finish the namespace (`ResourcesRemainingError`, or another error).
enum Outcome {
    Done,
    Remaining { estimate: i64, held_by_finalizers: bool },
    Failed(String),
}

/// The namespaced resources discovery reports as deletable, each once at its preferred
/// version: served, not the read-only metrics views, not autoscaling/v1.
pub fn deletable_resources() -> Vec<ResourceId> {
    (0..RESOURCES.len()).filter(|r| RESOURCES[*r].namespaced && !api::is_metrics(*r) && *r != rid::HPA_V1).collect()
}

/// `GroupVersionResource.String()`: `/v1, Resource=pods`.
fn gvr_string(r: ResourceId) -> String {
    let res = &RESOURCES[r];
    format!("{}/{}, Resource={}", res.group, res.version, res.plural)
}

#[derive(Clone)]
pub struct NamespaceController {
    user: UserInfo,
    namespaces: Informer,
    /// The delaying queue: when each waiting namespace is due.
    due: BTreeMap<String, Millis>,
    /// Consecutive failed syncs per namespace (the rate limiter's memory).
    failures: BTreeMap<String, u32>,
}

impl Default for NamespaceController {
    fn default() -> Self {
        Self::new()
    }
}

impl NamespaceController {
    pub fn new() -> Self {
        NamespaceController {
            user: UserInfo::controller("namespace-controller"),
            namespaces: Informer::new(rid::NAMESPACE),
            due: BTreeMap::new(),
            failures: BTreeMap::new(),
        }
    }

    fn creds(&self) -> Credentials {
        Credentials::User(self.user.clone())
    }

    fn call(&self, cx: &mut Cx, req: Request) -> Result<Object, Status> {
        cx.api.handle(req_as(req, "namespace-controller", &self.user))
    }

    /// `AddAfter`: an earlier due time wins. A wait on finalizers nothing is known to
    /// remove is not work the cluster has left (`Cx::every`).
    fn enqueue(&mut self, cx: &mut Cx, ns: &str, delay: Millis, work: bool) {
        let at = cx.now + delay;
        if self.due.get(ns).is_some_and(|t| *t <= at) {
            return;
        }
        self.due.insert(ns.to_string(), at);
        if work {
            cx.after(delay, ns.to_string());
        } else {
            cx.every(delay, ns.to_string());
        }
    }

    /// The worker: one sync, then forget, requeue after the estimate, or back off.
    fn process(&mut self, cx: &mut Cx, ns: &str) {
        match self.sync(cx, ns) {
            Outcome::Done => {
                self.failures.remove(ns);
            }
            Outcome::Remaining { estimate, held_by_finalizers } => {
                let wait = (estimate / 2 + 1).max(1) as Millis * 1000;
                cx.trace(
                    Flow::Etcd,
                    "namespace",
                    format!("Namespace/{ns}"),
                    "requeue",
                    "",
                    format!("some content remains in the namespace, estimate {estimate} seconds before it is removed; checking again in {}s", wait / 1000),
                );
                self.enqueue(cx, ns, wait, !held_by_finalizers);
            }
            Outcome::Failed(err) => {
                let n = self.failures.entry(ns.to_string()).or_insert(0);
                let delay = BACKOFF_BASE.saturating_mul(1 << (*n).min(30)).min(BACKOFF_MAX);
                *n += 1;
                cx.trace(Flow::Etcd, "namespace", format!("Namespace/{ns}"), "error", "", format!("deletion of namespace {ns} failed: {err}"));
                // A failure that has reached the longest back-off is a retry of something
                // that cannot progress by itself.
                self.enqueue(cx, ns, delay, delay < BACKOFF_MAX);
            }
        }
    }

    /// `namespacedResourcesDeleter.Delete`.
    #[inline(never)]
    fn sync(&mut self, cx: &mut Cx, name: &str) -> Outcome {
        let creds = self.creds();
        let mut ns = match self.call(cx, Request::new(Verb::Get, rid::NAMESPACE, "", name, creds.clone())) {
            Ok(o) => (*o).clone(),
            Err(s) if s.code == 404 => return Outcome::Done,
            Err(s) => return Outcome::Failed(s.message),
        };
        if !api::is_deleting(&ns) {
            return Outcome::Done;
        }
        // `updateNamespaceStatusFunc`: the phase says Terminating.
        if get_str(&ns, &["status", "phase"]) != Some("Terminating") {
            let mut body = ns.clone();
            api::set(&mut body, &["status", "phase"], json!("Terminating"));
            let mut req = Request::update(rid::NAMESPACE, "", name, body, creds.clone());
            req.subresource = "status".into();
            match self.call(cx, req) {
                Ok(o) => ns = (*o).clone(),
                Err(s) if s.code == 404 => return Outcome::Done,
                Err(s) => return Outcome::Failed(s.message),
            }
        }
        if api::get_array(&ns, &["spec", "finalizers"]).is_empty() {
            return Outcome::Done;
        }
        let content = self.delete_all_content(cx, &ns);
        if !content.errors.is_empty() {
            return Outcome::Failed(aggregate(&content.errors));
        }
        if content.estimate > 0 {
            return Outcome::Remaining { estimate: content.estimate, held_by_finalizers: content.held_by_finalizers };
        }
        // `finalizeNamespace`, retried on conflicts with the latest namespace.
        for _ in 0..3 {
            let mut fins: BTreeSet<String> = api::get_array(&ns, &["spec", "finalizers"]).iter().filter_map(Value::as_str).map(str::to_string).collect_tree();
            fins.remove(FINALIZER_KUBERNETES);
            let mut body = ns.clone();
            api::set(&mut body, &["spec", "finalizers"], json!(fins.into_iter().collect::<Vec<_>>()));
            let mut req = Request::update(rid::NAMESPACE, "", name, body, creds.clone());
            req.subresource = "finalize".into();
            match self.call(cx, req) {
                Ok(_) => {
                    cx.trace(
                        Flow::Etcd,
                        "namespace",
                        format!("Namespace/{name}"),
                        "ok",
                        "",
                        format!("namespace {name} is empty: removed the {FINALIZER_KUBERNETES} finalizer"),
                    );
                    return Outcome::Done;
                }
                Err(s) if s.code == 404 => return Outcome::Done,
                Err(s) if s.code == 409 => match self.call(cx, Request::new(Verb::Get, rid::NAMESPACE, "", name, creds.clone())) {
                    Ok(o) if api::uid(&o) == api::uid(&ns) => ns = (*o).clone(),
                    Ok(_) => return Outcome::Failed("namespace uid has changed across retries".into()),
                    Err(s) => return Outcome::Failed(s.message),
                },
                Err(s) => return Outcome::Failed(s.message),
            }
        }
        Outcome::Failed(Status::optimistic_lock(&RESOURCES[rid::NAMESPACE], name).message)
    }

    /// `deleteAllContent`: pods first, and nothing else while any remain; then every other
    /// deletable resource; then the conditions.
    fn delete_all_content(&mut self, cx: &mut Cx, ns: &Value) -> Content {
        let name = api::name(ns).to_string();
        let deleted_at = get_str(ns, &["metadata", "deletionTimestamp"]).and_then(parse_rfc3339).unwrap_or(cx.now);
        let mut updater = ConditionUpdater::default();
        let mut totals = ContentTotals::default();
        let mut out = Content { held_by_finalizers: true, ..Content::default() };
        let tally =
            |r: ResourceId, res: Result<Remaining, (Remaining, String)>, out: &mut Content, updater: &mut ConditionUpdater, totals: &mut ContentTotals| {
                let rem = match res {
                    Ok(rem) => rem,
                    Err((rem, e)) => {
                        updater.process_delete_content_err(e.clone());
                        out.errors.push(e);
                        rem
                    }
                };
                out.estimate = out.estimate.max(rem.estimate);
                if rem.count > 0 {
                    let res = &RESOURCES[r];
                    totals.resources.insert(format!("{}.{}", res.plural, res.group), rem.count);
                    if rem.finalizers.is_empty() || rem.estimate != FINALIZER_ESTIMATE_SECONDS {
                        out.held_by_finalizers = false;
                    }
                    for (f, n) in rem.finalizers {
                        *totals.finalizers.entry(f).or_insert(0) += n;
                    }
                }
            };
        let resources = deletable_resources();
        if resources.contains(&rid::POD) {
            let res = self.delete_resource(cx, rid::POD, &name, deleted_at);
            tally(rid::POD, res, &mut out, &mut updater, &mut totals);
            if totals.resources.values().sum::<usize>() > 0 {
                // Kubernetes 1.36 writes the conditions here without the content totals
                // (kubernetes/kubernetes#138208): while pods remain, NamespaceContentRemaining
                // reads "All content successfully removed".
                self.write_conditions(cx, ns, updater);
                cx.trace(
                    Flow::Etcd,
                    "namespace",
                    format!("Namespace/{name}"),
                    "waiting",
                    "",
                    format!("{} pods remain in namespace {name}: other resources wait until they are gone", totals.resources.values().sum::<usize>()),
                );
                return out;
            }
        }
        for r in resources.into_iter().filter(|r| *r != rid::POD) {
            let res = self.delete_resource(cx, r, &name, deleted_at);
            tally(r, res, &mut out, &mut updater, &mut totals);
        }
        if totals.resources.is_empty() {
            out.held_by_finalizers = false;
        }
        updater.process_content_totals(&totals);
        self.write_conditions(cx, ns, updater);
        out
    }

    /// "we always want to update the conditions": a status write when they changed.
    fn write_conditions(&mut self, cx: &mut Cx, ns: &Value, updater: ConditionUpdater) {
        let mut conditions = api::get_array(ns, &["status", "conditions"]).to_vec();
        if !updater.update(&mut conditions, cx.now) {
            return;
        }
        let mut body = ns.clone();
        api::set(&mut body, &["status", "conditions"], json!(conditions));
        let mut req = Request::update(rid::NAMESPACE, "", api::name(ns), body, self.creds());
        req.subresource = "status".into();
        if let Err(s) = self.call(cx, req) {
            cx.trace(
                Flow::Etcd,
                "namespace",
                format!("Namespace/{}", api::name(ns)),
                "error",
                "",
                format!("couldn't update status condition for namespace {:?}: {}", api::name(ns), s.message),
            );
        }
    }

    /// `deleteAllContentForGroupVersionResource`: estimate, delete each item, list again.
    fn delete_resource(&mut self, cx: &mut Cx, r: ResourceId, ns: &str, deleted_at: Millis) -> Result<Remaining, (Remaining, String)> {
        let creds = self.creds();
        let mut estimate = 0;
        if r == rid::POD {
            estimate = match self.call(cx, Request::new(Verb::List, rid::POD, ns, "", creds.clone())) {
                Ok(list) => pods_grace_estimate(api::get_array(&list, &["items"])),
                Err(s) => return Err((Remaining::default(), s.message)),
            };
            // An estimate the namespace's age in deletion already covers is no estimate.
            if cx.now.saturating_sub(deleted_at) >= estimate.max(0) as Millis * 1000 {
                estimate = 0;
            }
        }
        let partial = |estimate| Remaining { estimate, ..Remaining::default() };
        let list = |this: &Self, cx: &mut Cx| -> Result<Vec<Value>, String> {
            this.call(cx, Request::new(Verb::List, r, ns, "", creds.clone())).map(|l| api::get_array(&l, &["items"]).to_vec()).map_err(|s| s.message)
        };
        // `deleteEachItem`.
        let items = list(self, cx).map_err(|e| (partial(estimate), e))?;
        for item in &items {
            let mut req = Request::delete(r, ns, api::name(item), creds.clone());
            req.propagation = Some("Background".into());
            match self.call(cx, req) {
                Err(s) if s.code != 404 && s.code != 405 => return Err((partial(estimate), s.message)),
                _ => {}
            }
        }
        let items = list(self, cx).map_err(|e| (partial(estimate), e))?;
        if items.is_empty() {
            return Ok(Remaining::default());
        }
        let mut finalizers = BTreeMap::new();
        for item in &items {
            for f in api::get_array(item, &["metadata", "finalizers"]).iter().filter_map(Value::as_str) {
                *finalizers.entry(f.to_string()).or_insert(0) += 1;
            }
        }
        let count = items.len();
        if estimate != 0 {
            return Ok(Remaining { estimate, count, finalizers });
        }
        if !finalizers.is_empty() {
            return Ok(Remaining { estimate: FINALIZER_ESTIMATE_SECONDS, count, finalizers });
        }
        Err((Remaining { estimate, count, finalizers }, format!("unexpected items still remain in namespace: {ns} for gvr: {}", gvr_string(r))))
    }
}

/// `estimateGracefulTerminationForPods`: the longest grace period of the pods that are not
/// finished.
pub fn pods_grace_estimate(pods: &[Value]) -> i64 {
    pods.iter()
        .filter(|p| !matches!(get_str(p, &["status", "phase"]), Some("Succeeded" | "Failed")))
        .filter_map(|p| api::get_i64(p, &["spec", "terminationGracePeriodSeconds"]))
        .max()
        .unwrap_or(0)
        .max(0)
}

/// `utilerrors.NewAggregate(errs).Error()`.
fn aggregate(errs: &[String]) -> String {
    if errs.len() == 1 {
        errs[0].clone()
    } else {
        format!("[{}]", errs.join(", "))
    }
}

impl Controller for NamespaceController {
    fn name(&self) -> &'static str {
        "namespace-controller"
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::NAMESPACE]
    }
    fn run(&mut self, cx: &mut Cx) {
        for d in self.namespaces.sync(&cx.api.store).deltas {
            if d.kind != crate::apiserver::store::EventType::Deleted && api::is_deleting(&d.object) {
                let ns = api::name(&d.object).to_string();
                self.enqueue(cx, &ns, DELETION_GRACE_PERIOD, true);
            }
        }
    }
    fn timer(&mut self, cx: &mut Cx, key: &str) {
        if self.due.get(key).is_some_and(|t| *t <= cx.now) {
            self.due.remove(key);
            self.process(cx, key);
        }
    }
    fn restart(&mut self) {
        *self = Self::new();
    }
}

pub fn root_ca_configmap(ns: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-root-ca.crt", "namespace": ns, "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
        "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\nMIIBkubeloopSimulatedClusterCA\n-----END CERTIFICATE-----\n"}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(conds: &[Value]) -> Vec<String> {
        conds
            .iter()
            .map(|c| {
                let s = |k: &str| get_str(c, &[k]).unwrap_or("").to_string();
                format!("{} {} {} {} @{}", s("type"), s("status"), s("reason"), s("message"), s("lastTransitionTime"))
            })
            .collect()
    }

    #[test]
    fn nothing_failing_sets_the_ok_form_of_all_five() {
        let mut conds = Vec::new();
        assert!(ConditionUpdater::default().update(&mut conds, 0));
        assert_eq!(
            rows(&conds),
            [
                "NamespaceDeletionDiscoveryFailure False ResourcesDiscovered All resources successfully discovered @2026-01-01T00:00:00Z",
                "NamespaceDeletionGroupVersionParsingFailure False ParsedGroupVersions All legacy kube types successfully parsed @2026-01-01T00:00:00Z",
                "NamespaceDeletionContentFailure False ContentDeleted All content successfully deleted, may be waiting on finalization @2026-01-01T00:00:00Z",
                "NamespaceContentRemaining False ContentRemoved All content successfully removed @2026-01-01T00:00:00Z",
                "NamespaceFinalizersRemaining False ContentHasNoFinalizers All content-preserving finalizers finished @2026-01-01T00:00:00Z",
            ]
        );
        // The same again changes nothing.
        assert!(!ConditionUpdater::default().update(&mut conds, 5_000));
    }

    #[test]
    fn remaining_content_is_listed_by_resource_and_by_finalizer_sorted_as_strings() {
        let mut totals = ContentTotals::default();
        totals.resources.insert("deployments.apps".into(), 2);
        totals.resources.insert("configmaps.".into(), 1);
        totals.resources.insert("pods.".into(), 0);
        totals.finalizers.insert("example.com/keep".into(), 1);
        totals.finalizers.insert("a.example.com/x".into(), 3);
        let mut u = ConditionUpdater::default();
        u.process_content_totals(&totals);
        let mut conds = Vec::new();
        u.update(&mut conds, 0);
        let r = rows(&conds);
        assert_eq!(r[3], "NamespaceContentRemaining True SomeResourcesRemain Some resources are remaining: configmaps. has 1 resource instances, deployments.apps has 2 resource instances @2026-01-01T00:00:00Z");
        assert_eq!(r[4], "NamespaceFinalizersRemaining True SomeFinalizersRemain Some content in the namespace has finalizers remaining: a.example.com/x in 3 resource instances, example.com/keep in 1 resource instances @2026-01-01T00:00:00Z");
    }

    #[test]
    fn the_transition_time_moves_only_when_the_status_does() {
        let remaining = |n: usize| {
            let mut t = ContentTotals::default();
            t.resources.insert("configmaps.".into(), n);
            let mut u = ConditionUpdater::default();
            u.process_content_totals(&t);
            u
        };
        let mut conds = Vec::new();
        remaining(2).update(&mut conds, 0);
        // Another count: a new message, the same status, the old transition time.
        assert!(remaining(1).update(&mut conds, 10_000));
        assert_eq!(
            rows(&conds)[3],
            "NamespaceContentRemaining True SomeResourcesRemain Some resources are remaining: configmaps. has 1 resource instances @2026-01-01T00:00:00Z"
        );
        // Gone: False, and a new transition time.
        assert!(ConditionUpdater::default().update(&mut conds, 20_000));
        assert_eq!(rows(&conds)[3], "NamespaceContentRemaining False ContentRemoved All content successfully removed @2026-01-01T00:00:20Z");
        assert_eq!(rows(&conds)[0], "NamespaceDeletionDiscoveryFailure False ResourcesDiscovered All resources successfully discovered @2026-01-01T00:00:00Z");
    }

    #[test]
    fn delete_errors_are_counted_and_sorted() {
        let mut u = ConditionUpdater::default();
        u.process_delete_content_err("unexpected items still remain in namespace: a for gvr: /v1, Resource=pods".into());
        u.process_delete_content_err("etcdserver: request timed out".into());
        let mut conds = Vec::new();
        u.update(&mut conds, 0);
        assert_eq!(
            rows(&conds)[2],
            "NamespaceDeletionContentFailure True ContentDeletionFailed Failed to delete all resource types, 2 remaining: etcdserver: request timed out, unexpected items still remain in namespace: a for gvr: /v1, Resource=pods @2026-01-01T00:00:00Z"
        );
    }

    #[test]
    fn the_grace_estimate_is_the_longest_of_the_unfinished_pods() {
        let pod = |phase: &str, grace: i64| json!({"spec": {"terminationGracePeriodSeconds": grace}, "status": {"phase": phase}});
        assert_eq!(pods_grace_estimate(&[pod("Running", 30), pod("Failed", 600), pod("Pending", 45)]), 45);
        assert_eq!(pods_grace_estimate(&[pod("Succeeded", 30)]), 0);
        assert_eq!(pods_grace_estimate(&[]), 0);
    }

    #[test]
    fn deletable_resources_are_namespaced_served_once_and_writable() {
        let rs = deletable_resources();
        assert_eq!(rs.first(), Some(&rid::POD));
        assert!(rs.contains(&rid::CONFIGMAP) && rs.contains(&rid::HPA) && rs.contains(&rid::EVENT));
        assert!(!rs.contains(&rid::HPA_V1) && !rs.contains(&rid::PODMETRICS) && !rs.contains(&rid::NAMESPACE) && !rs.contains(&rid::PV));
        assert_eq!(gvr_string(rid::POD), "/v1, Resource=pods");
        assert_eq!(gvr_string(rid::DEPLOYMENT), "apps/v1, Resource=deployments");
    }
}
