//! The EndpointSlice controller (`pkg/controller/endpointslice/`,
//! `staging/src/k8s.io/endpointslice/`): for each Service with a selector, one slice
//! (`generateName: <service>-`) listing the selected pods that have an IP, with
//! ready/serving/terminating conditions, node and zone, and ports resolved per pod.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::apiserver::{Credentials, Request};
use crate::foundation::api::{self, get, get_array, get_i64, get_str, rid, Object, ResourceId};
use crate::foundation::pod::pod_is_ready;
use crate::foundation::sim::Millis;
use crate::foundation::sort::Sort;
use crate::foundation::value::{json, Value};
use crate::loops::informer::Informer;
use crate::loops::{req_as, Controller, Cx};
use std::collections::BTreeSet;

const MANAGED_BY: &str = "endpointslice-controller.k8s.io";

/// The endpoints a Service's slice should hold (pure).
pub fn desired_endpoints(svc: &Value, pods: &[&Object], nodes: &Informer) -> Vec<Value> {
    let publish = api::get_bool(svc, &["spec", "publishNotReadyAddresses"]).unwrap_or(false);
    let mut eps: Vec<Value> = pods
        .iter()
        .filter(|p| {
            let phase = get_str(p, &["status", "phase"]).unwrap_or("");
            phase != "Succeeded" && phase != "Failed" && get_str(p, &["status", "podIP"]).is_some()
        })
        .map(|p| {
            let ready = pod_is_ready(p);
            let terminating = api::is_deleting(p);
            let node = get_str(p, &["spec", "nodeName"]).unwrap_or("");
            let mut e = json!({
                "addresses": [get_str(p, &["status", "podIP"]).unwrap_or("")],
                "conditions": {"ready": (ready && !terminating) || publish, "serving": ready, "terminating": terminating},
                "nodeName": node,
                "targetRef": {"kind": "Pod", "name": api::name(p), "namespace": api::namespace(p), "uid": api::uid(p)},
            });
            if let Some(z) = nodes.get("", node).and_then(|n| api::label(n, "topology.kubernetes.io/zone")) {
                e["zone"] = json!(z);
            }
            e
        })
        .collect();
    eps.sort_stable_by(|a, b| get_str(a, &["targetRef", "name"]).cmp(&get_str(b, &["targetRef", "name"])));
    eps
}

/// Service ports resolved against a pod's container ports (named targetPorts).
pub fn slice_ports(svc: &Value, pod: Option<&Object>) -> Vec<Value> {
    get_array(svc, &["spec", "ports"])
        .iter()
        .map(|p| {
            let port = match get(p, &["targetPort"]) {
                Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
                Some(Value::String(name)) => pod
                    .and_then(|pod| {
                        get_array(pod, &["spec", "containers"])
                            .iter()
                            .flat_map(|c| get_array(c, &["ports"]))
                            .find(|cp| get_str(cp, &["name"]) == Some(name.as_str()))
                            .and_then(|cp| get_i64(cp, &["containerPort"]))
                    })
                    .unwrap_or(0),
                _ => get_i64(p, &["port"]).unwrap_or(0),
            };
            let mut out = json!({"name": get_str(p, &["name"]).unwrap_or(""), "port": port, "protocol": get_str(p, &["protocol"]).unwrap_or("TCP")});
            if let Some(ap) = get(p, &["appProtocol"]) {
                out["appProtocol"] = ap.clone();
            }
            out
        })
        .collect()
}

#[derive(Clone)]
pub struct EndpointSliceController {
    user: UserInfo,
    services: Informer,
    pods: Informer,
    slices: Informer,
    nodes: Informer,
    queue: BTreeSet<(String, String)>,
}

impl Default for EndpointSliceController {
    fn default() -> Self {
        Self::new()
    }
}

impl EndpointSliceController {
    pub fn new() -> Self {
        EndpointSliceController {
            user: UserInfo::controller("endpointslice-controller"),
            services: Informer::new(rid::SERVICE),
            pods: Informer::new(rid::POD),
            slices: Informer::new(rid::ENDPOINTSLICE),
            nodes: Informer::new(rid::NODE),
            queue: BTreeSet::new(),
        }
    }

    fn sync_informers(&mut self, cx: &mut Cx) {
        self.nodes.sync(&cx.api.store);
        for d in self.services.sync(&cx.api.store).deltas {
            self.queue.insert((api::namespace(&d.object).to_string(), api::name(&d.object).to_string()));
        }
        for d in self.slices.sync(&cx.api.store).deltas {
            if let Some(s) = api::label(&d.object, "kubernetes.io/service-name") {
                if api::label(&d.object, "endpointslice.kubernetes.io/managed-by") == Some(MANAGED_BY) {
                    self.queue.insert((api::namespace(&d.object).to_string(), s.to_string()));
                }
            }
        }
        let deltas = self.pods.sync(&cx.api.store).deltas;
        for d in deltas {
            // Only changes that can alter an endpoint matter.
            /// What of a pod an endpoint reflects: IP, readiness, termination, labels, phase.
            type Facts<'a> = (Option<&'a str>, bool, bool, Option<&'a crate::foundation::value::Map>, Option<&'a str>);
            fn relevant(p: &Value) -> Facts<'_> {
                (get_str(p, &["status", "podIP"]), pod_is_ready(p), api::is_deleting(p), api::labels(p), get_str(p, &["status", "phase"]))
            }
            if d.kind == EventType::Modified && d.old.as_ref().is_some_and(|o| relevant(o) == relevant(&d.object)) {
                continue;
            }
            let ns = api::namespace(&d.object).to_string();
            for svc in self.services.list(Some(&ns)) {
                let Some(sel) = get(svc, &["spec", "selector"]).and_then(Value::as_object) else { continue };
                if sel.is_empty() {
                    continue;
                }
                let matches = |p: &Value| crate::foundation::labels::map_matches(sel, api::labels(p));
                if matches(&d.object) || d.old.as_ref().is_some_and(|o| matches(o)) {
                    self.queue.insert((ns.clone(), api::name(svc).to_string()));
                }
            }
        }
    }

    #[inline(never)]
    fn sync(&mut self, cx: &mut Cx, key: &(String, String)) {
        let creds = Credentials::User(self.user.clone());
        let owned: Vec<Object> = self
            .slices
            .list(Some(&key.0))
            .filter(|s| {
                api::label(s, "kubernetes.io/service-name") == Some(key.1.as_str())
                    && api::label(s, "endpointslice.kubernetes.io/managed-by") == Some(MANAGED_BY)
            })
            .cloned()
            .collect();
        let svc = self.services.get(&key.0, &key.1).cloned();
        let Some(svc) = svc.filter(|s| !api::is_deleting(s)) else {
            // The garbage collector removes slices of deleted Services through ownerReferences.
            return;
        };
        let Some(sel) = get(&svc, &["spec", "selector"]).and_then(Value::as_object).filter(|m| !m.is_empty()).cloned() else { return };
        let pods: Vec<&Object> = self.pods.list(Some(&key.0)).filter(|p| crate::foundation::labels::map_matches(&sel, api::labels(p))).collect();
        let endpoints = desired_endpoints(&svc, &pods, &self.nodes);
        let ports = slice_ports(&svc, pods.first().copied());
        let mut labels = api::labels(&svc).cloned().unwrap_or_default();
        labels.insert("kubernetes.io/service-name", json!(key.1));
        labels.insert("endpointslice.kubernetes.io/managed-by", json!(MANAGED_BY));
        let ready = endpoints.iter().filter(|e| api::get_bool(e, &["conditions", "ready"]) == Some(true)).count();
        let obj = format!("Service/{}/{}", key.0, key.1);
        match owned.first() {
            None => {
                let body = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                    "metadata": {"generateName": format!("{}-", key.1), "namespace": key.0, "labels": labels,
                        "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": crate::foundation::sim::rfc3339(cx.now)}, "ownerReferences": [api::owner_reference(&svc)]},
                    "addressType": "IPv4", "endpoints": endpoints, "ports": ports});
                if let Ok(s) = cx.api.handle(req_as(Request::create(rid::ENDPOINTSLICE, &key.0, body, creds), "endpointslice-controller", &self.user)) {
                    cx.trace(
                        Flow::Ready,
                        "endpoints",
                        obj,
                        "ok",
                        api::resource_version(&s),
                        format!("EndpointSlice {} created: {ready} ready endpoint(s)", api::name(&s)),
                    );
                }
            }
            Some(slice) => {
                let (endpoints, ports) = (Value::Array(endpoints), Value::Array(ports));
                let unchanged = slice.get("endpoints").map(|e| e == &endpoints).unwrap_or(endpoints.as_array().is_some_and(|a| a.is_empty()))
                    && slice.get("ports") == Some(&ports)
                    && api::labels(slice) == Some(&labels);
                if unchanged {
                    return;
                }
                let mut body = (**slice).clone();
                body["endpoints"] = endpoints;
                body["ports"] = ports;
                body["metadata"]["labels"] = json!(labels);
                api::set(
                    &mut body,
                    &["metadata", "annotations", "endpoints.kubernetes.io/last-change-trigger-time"],
                    json!(crate::foundation::sim::rfc3339(cx.now)),
                );
                if let Ok(s) =
                    cx.api.handle(req_as(Request::update(rid::ENDPOINTSLICE, &key.0, api::name(slice), body, creds), "endpointslice-controller", &self.user))
                {
                    cx.trace(
                        Flow::Ready,
                        "endpoints",
                        obj,
                        "ok",
                        api::resource_version(&s),
                        format!("EndpointSlice {} updated: {ready} ready endpoint(s)", api::name(&s)),
                    );
                }
            }
        }
    }
}

impl Controller for EndpointSliceController {
    fn name(&self) -> &'static str {
        "endpointslice-controller"
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::SERVICE, rid::POD, rid::ENDPOINTSLICE, rid::NODE]
    }
    fn run(&mut self, cx: &mut Cx) {
        self.sync_informers(cx);
        while let Some(k) = self.queue.pop_first() {
            self.sync(cx, &k);
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
