//! Namespaced bookkeeping: the service account and root CA publisher controllers that give
//! every namespace its `default` ServiceAccount and `kube-root-ca.crt` ConfigMap
//! (`pkg/controller/serviceaccount/serviceaccounts_controller.go`,
//! `pkg/controller/certificates/rootcacertpublisher/publisher.go`), and the namespace
//! controller that empties a Terminating namespace, pods first, then finalizes it
//! (`pkg/controller/namespace/deletion/namespaced_resources_deleter.go`).

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, Request};
use crate::foundation::api::{self, rid, ResourceId, RESOURCES};
use crate::foundation::sim::Millis;
use crate::foundation::value::{json, Value};
use crate::loops::informer::Informer;
use crate::loops::{req_as, Controller, Cx};
use std::collections::BTreeSet;

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

pub struct NamespaceController {
    user: UserInfo,
    namespaces: Informer,
    pending: BTreeSet<String>,
}

impl Default for NamespaceController {
    fn default() -> Self {
        Self::new()
    }
}

impl NamespaceController {
    pub fn new() -> Self {
        NamespaceController { user: UserInfo::controller("namespace-controller"), namespaces: Informer::new(rid::NAMESPACE), pending: BTreeSet::new() }
    }

    fn clean(&mut self, cx: &mut Cx, ns: &str) {
        let creds = Credentials::User(self.user.clone());
        let mut remaining = 0;
        // Pods first, then everything else.
        let mut order: Vec<ResourceId> = vec![rid::POD];
        order.extend((0..RESOURCES.len()).filter(|r| RESOURCES[*r].namespaced && *r != rid::POD));
        for r in order {
            let names: Vec<(String, bool)> = cx.api.store.list(r, Some(ns)).map(|o| (api::name(o).to_string(), api::is_deleting(o))).collect();
            remaining += names.len();
            for (n, deleting) in names {
                if !deleting {
                    let _ = cx.api.handle(req_as(Request::delete(r, ns, &n, creds.clone()), "namespace-controller", &self.user));
                }
            }
            if r == rid::POD && remaining > 0 {
                break;
            }
        }
        if remaining == 0 {
            let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}, "spec": {"finalizers": []}});
            let mut req = Request::update(rid::NAMESPACE, "", ns, body, creds);
            req.subresource = "finalize".into();
            if cx.api.handle(req_as(req, "namespace-controller", &self.user)).is_ok() {
                cx.trace(Flow::Etcd, "namespace", format!("Namespace/{ns}"), "ok", "", format!("namespace {ns} emptied and finalized"));
            }
            self.pending.remove(ns);
        } else {
            cx.after(2000, ns.to_string());
        }
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
            if api::is_deleting(&d.object) && d.kind != crate::apiserver::store::EventType::Deleted {
                self.pending.insert(api::name(&d.object).to_string());
            }
        }
        let todo: Vec<String> = self.pending.iter().cloned().collect();
        for ns in todo {
            self.clean(cx, &ns);
        }
    }
    fn timer(&mut self, cx: &mut Cx, key: &str) {
        if self.pending.contains(key) {
            self.clean(cx, key);
        }
    }
    fn busy(&self, _now: Millis) -> bool {
        !self.pending.is_empty()
    }
    fn restart(&mut self) {
        *self = Self::new();
    }
}
pub fn root_ca_configmap(ns: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-root-ca.crt", "namespace": ns, "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
        "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\nMIIBkubeloopSimulatedClusterCA\n-----END CERTIFICATE-----\n"}})
}
