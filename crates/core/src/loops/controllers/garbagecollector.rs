//! The garbage collector (`pkg/controller/garbagecollector/garbagecollector.go`,
//! `graph_builder.go`): a graph of ownerReferences built from informers. Dependents
//! whose owners are all gone are deleted (Background); owners deleted with
//! `foregroundDeletion` wait until no blocking dependent remains; owners deleted with
//! `orphan` have their dependents' references removed first. Before deleting, the
//! collector confirms the owner's absence with a live read, as the real one does.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, PatchType, Request, Verb};
use crate::foundation::api::{self, get_array, get_bool, get_str, resource_for_kind, rid, Object, ObjectKey, ResourceId};
use crate::foundation::sim::Millis;
use crate::foundation::sort::CollectTree;
use crate::foundation::value::{json, Value};
use crate::loops::informer::Informer;
use crate::loops::{req_as, Controller, Cx};
use std::collections::{BTreeSet, HashMap};

const WATCHED: &[ResourceId] = &[
    rid::DEPLOYMENT,
    rid::REPLICASET,
    rid::POD,
    rid::ENDPOINTSLICE,
    rid::SERVICE,
    rid::NODE,
    rid::LEASE,
    rid::CONFIGMAP,
    rid::SECRET,
    rid::DAEMONSET,
    rid::STATEFULSET,
    rid::JOB,
    rid::CRONJOB,
    rid::CONTROLLERREVISION,
    rid::PVC,
    rid::REPLICATIONCONTROLLER,
];

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Work {
    /// Check a dependent's owners.
    Dependent(ObjectKey),
    /// An owner being deleted in the foreground or orphaning.
    Owner(ObjectKey),
}

#[derive(Clone)]
pub struct GarbageCollector {
    user: UserInfo,
    informers: Vec<Informer>,
    uids: HashMap<String, ObjectKey>,
    /// owner uid -> dependents
    dependents: HashMap<String, BTreeSet<ObjectKey>>,
    queue: BTreeSet<Work>,
}

impl Default for GarbageCollector {
    fn default() -> Self {
        Self::new()
    }
}

fn key_of(r: ResourceId, o: &Value) -> ObjectKey {
    ObjectKey::new(r, api::namespace(o), api::name(o))
}

fn finalizers(o: &Value) -> Vec<String> {
    get_array(o, &["metadata", "finalizers"]).iter().filter_map(Value::as_str).map(str::to_string).collect()
}

impl GarbageCollector {
    pub fn new() -> Self {
        GarbageCollector {
            user: UserInfo::controller("generic-garbage-collector"),
            informers: WATCHED.iter().map(|r| Informer::new(*r)).collect(),
            uids: HashMap::new(),
            dependents: HashMap::new(),
            queue: BTreeSet::new(),
        }
    }

    fn creds(&self) -> Credentials {
        Credentials::User(self.user.clone())
    }

    fn cached(&self, k: &ObjectKey) -> Option<&Object> {
        let i = WATCHED.iter().position(|r| *r == k.resource)?;
        self.informers[i].get(&k.namespace, &k.name)
    }

    fn sync_informers(&mut self, cx: &mut Cx) {
        for (i, r) in WATCHED.iter().enumerate() {
            let deltas = self.informers[i].sync(&cx.api.store).deltas;
            for d in deltas {
                let key = key_of(*r, &d.object);
                let uid = api::uid(&d.object).to_string();
                let owners: Vec<String> =
                    get_array(&d.object, &["metadata", "ownerReferences"]).iter().filter_map(|o| get_str(o, &["uid"])).map(str::to_string).collect();
                let refs_changed = d.kind != EventType::Modified
                    || d.old.as_ref().is_none_or(|o| {
                        o.get("metadata").and_then(|m| m.get("ownerReferences")) != d.object.get("metadata").and_then(|m| m.get("ownerReferences"))
                    });
                if let Some(old) = d.old.as_ref().filter(|_| refs_changed) {
                    for o in get_array(old, &["metadata", "ownerReferences"]) {
                        if let Some(ou) = get_str(o, &["uid"]) {
                            if let Some(set) = self.dependents.get_mut(ou) {
                                set.remove(&key);
                            }
                        }
                    }
                }
                match d.kind {
                    EventType::Deleted => {
                        self.uids.remove(&uid);
                        for ou in &owners {
                            if let Some(set) = self.dependents.get_mut(ou) {
                                set.remove(&key);
                            }
                            if let Some(ok) = self.uids.get(ou) {
                                self.queue.insert(Work::Owner(ok.clone()));
                            }
                        }
                        for dep in self.dependents.get(&uid).into_iter().flatten() {
                            self.queue.insert(Work::Dependent(dep.clone()));
                        }
                    }
                    _ => {
                        // Index changes only when the object is new or its owners changed.
                        let owners_changed = d.old.as_ref().is_none_or(|o| {
                            o.get("metadata").and_then(|m| m.get("ownerReferences")) != d.object.get("metadata").and_then(|m| m.get("ownerReferences"))
                        });
                        if d.kind == EventType::Added {
                            self.uids.insert(uid.clone(), key.clone());
                        }
                        if owners_changed {
                            for ou in &owners {
                                self.dependents.entry(ou.clone()).or_default().insert(key.clone());
                                if !self.uids.contains_key(ou) {
                                    self.queue.insert(Work::Dependent(key.clone()));
                                }
                            }
                        }
                        let f = finalizers(&d.object);
                        if api::is_deleting(&d.object) && (f.iter().any(|x| x == "foregroundDeletion" || x == "orphan")) {
                            self.queue.insert(Work::Owner(key.clone()));
                        }
                    }
                }
            }
        }
    }

    /// Live lookup of an owner reference: Some(owner) if it exists with that uid.
    fn owner_live(&self, cx: &mut Cx, dep_ns: &str, r: &Value) -> Option<Object> {
        let rid = resource_for_kind(get_str(r, &["apiVersion"]).unwrap_or(""), get_str(r, &["kind"]).unwrap_or(""))?;
        let ns = if api::RESOURCES[rid].namespaced { dep_ns } else { "" };
        let o = cx.api.store.get_by(rid, ns, get_str(r, &["name"]).unwrap_or(""))?.clone();
        (api::uid(&o) == get_str(r, &["uid"]).unwrap_or("")).then_some(o)
    }

    #[inline(never)]
    fn attempt_to_delete(&mut self, cx: &mut Cx, k: &ObjectKey) {
        let Some(obj) = self.cached(k).cloned() else { return };
        let fins = finalizers(&obj);
        if api::is_deleting(&obj) && !fins.iter().any(|f| f == "foregroundDeletion") {
            return;
        }
        let refs = get_array(&obj, &["metadata", "ownerReferences"]).to_vec();
        if refs.is_empty() {
            return;
        }
        let (mut solid, mut dangling, mut waiting) = (vec![], vec![], vec![]);
        for r in &refs {
            match self.owner_live(cx, &k.namespace, r) {
                None => dangling.push(r.clone()),
                Some(o) if api::is_deleting(&o) && finalizers(&o).iter().any(|f| f == "foregroundDeletion") => waiting.push(r.clone()),
                Some(_) => solid.push(r.clone()),
            }
        }
        let display = k.display();
        if !solid.is_empty() {
            if dangling.is_empty() && waiting.is_empty() {
                return;
            }
            let gone: BTreeSet<&str> = dangling.iter().chain(waiting.iter()).filter_map(|r| get_str(r, &["uid"])).collect_tree();
            let keep: Vec<Value> = refs.iter().filter(|r| !gone.contains(get_str(r, &["uid"]).unwrap_or(""))).cloned().collect();
            let _ = cx.api.handle(req_as(
                Request::patch(k.resource, &k.namespace, &k.name, PatchType::Merge, json!({"metadata": {"ownerReferences": keep}}), self.creds()),
                "generic-garbage-collector",
                &self.user,
            ));
            return;
        }
        let has_dependents = self.dependents.get(api::uid(&obj)).is_some_and(|d| !d.is_empty());
        let policy = if !waiting.is_empty() && has_dependents {
            "Foreground"
        } else if fins.iter().any(|f| f == "orphan") {
            "Orphan"
        } else if fins.iter().any(|f| f == "foregroundDeletion") {
            "Foreground"
        } else {
            "Background"
        };
        let mut req = Request::delete(k.resource, &k.namespace, &k.name, self.creds());
        req.propagation = Some(policy.into());
        let owners: Vec<String> = refs.iter().map(|r| format!("{}/{}", get_str(r, &["kind"]).unwrap_or(""), get_str(r, &["name"]).unwrap_or(""))).collect();
        if cx.api.handle(req_as(req, "generic-garbage-collector", &self.user)).is_ok() {
            let flow = if k.resource == rid::POD { Flow::ReplicaSetController } else { Flow::DeploymentController };
            cx.trace(flow, "garbage-collect", display, "ok", "", format!("owner {} is gone: deleting dependent ({policy})", owners.join(", ")));
        }
    }

    #[inline(never)]
    fn process_owner(&mut self, cx: &mut Cx, k: &ObjectKey) {
        let Some(obj) = self.cached(k).cloned() else { return };
        if !api::is_deleting(&obj) {
            return;
        }
        let uid = api::uid(&obj).to_string();
        let fins = finalizers(&obj);
        let deps: Vec<ObjectKey> = self.dependents.get(&uid).map(|s| s.iter().cloned().collect()).unwrap_or_default();
        if fins.iter().any(|f| f == "orphan") {
            for d in &deps {
                let Some(dep) = self.cached(d).cloned() else { continue };
                let keep: Vec<Value> =
                    get_array(&dep, &["metadata", "ownerReferences"]).iter().filter(|r| get_str(r, &["uid"]) != Some(uid.as_str())).cloned().collect();
                let _ = cx.api.handle(req_as(
                    Request::patch(d.resource, &d.namespace, &d.name, PatchType::Merge, json!({"metadata": {"ownerReferences": keep}}), self.creds()),
                    "generic-garbage-collector",
                    &self.user,
                ));
                cx.trace(Flow::DeploymentController, "garbage-collect", d.display(), "ok", "", format!("orphaned: ownerReference to {} removed", k.display()));
            }
            self.remove_finalizer(cx, k, &obj, "orphan");
            return;
        }
        if fins.iter().any(|f| f == "foregroundDeletion") {
            let blocking = deps.iter().filter(|d| {
                self.cached(d).is_some_and(|dep| {
                    get_array(dep, &["metadata", "ownerReferences"])
                        .iter()
                        .any(|r| get_str(r, &["uid"]) == Some(uid.as_str()) && get_bool(r, &["blockOwnerDeletion"]) == Some(true))
                })
            });
            if blocking.count() == 0 {
                self.remove_finalizer(cx, k, &obj, "foregroundDeletion");
            } else {
                for d in deps {
                    self.attempt_to_delete(cx, &d);
                }
            }
        }
    }

    fn remove_finalizer(&self, cx: &mut Cx, k: &ObjectKey, obj: &Value, f: &str) {
        let keep: Vec<String> = finalizers(obj).into_iter().filter(|x| x != f).collect();
        let r = cx.api.handle(req_as(
            Request::patch(k.resource, &k.namespace, &k.name, PatchType::Merge, json!({"metadata": {"finalizers": keep}}), self.creds()),
            "generic-garbage-collector",
            &self.user,
        ));
        if r.is_ok() {
            cx.trace(Flow::DeploymentController, "garbage-collect", k.display(), "ok", "", format!("removed finalizer {f}"));
        }
        let _ = Verb::Get;
    }
}

impl Controller for GarbageCollector {
    fn name(&self) -> &'static str {
        "garbage-collector"
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        WATCHED
    }
    fn run(&mut self, cx: &mut Cx) {
        self.sync_informers(cx);
        while let Some(w) = self.queue.pop_first() {
            match w {
                Work::Dependent(k) => self.attempt_to_delete(cx, &k),
                Work::Owner(k) => self.process_owner(cx, &k),
            }
        }
    }
    fn timer(&mut self, cx: &mut Cx, _key: &str) {
        self.run(cx);
    }
    fn busy(&self, _now: Millis) -> bool {
        !self.queue.is_empty()
    }
    fn restart(&mut self) {
        *self = Self::new();
    }
}
