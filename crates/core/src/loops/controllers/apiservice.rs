//! The aggregation layer's APIServices (`k8s.io/kube-aggregator`): kube-apiserver registers
//! one per group-version it serves itself (`Local`, with the priorities of
//! `pkg/controlplane/apiserver` `DefaultGenericAPIServicePriorities` and kube-apiserver's
//! `apiVersionPriorities`), and the availability controller
//! (`pkg/controllers/status/remote/remote_available_controller.go`) reports whether each
//! APIService backed by a Service answers: `ServiceNotFound` when the Service is missing,
//! `MissingEndpoints` when it has no ready endpoint, and otherwise `FailedDiscoveryCheck`,
//! because kubeloop runs no aggregated API server behind any Service: requests for such a
//! group are not proxied anywhere. It checks every 30 s, and at once when an APIService,
//! Service or EndpointSlice changes.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::{Credentials, Request};
use crate::foundation::api::{self, get, get_array, get_str, rid, ResourceId, RESOURCES};
use crate::foundation::sim::{rfc3339, Millis};
use crate::foundation::sort::CollectTree;
use crate::foundation::value::{json, Value};
use crate::loops::informer::Informer;
use crate::loops::{req_as, Controller, Cx};
use std::collections::BTreeSet;

const NAME: &str = "apiservice-availability-controller";
const RESYNC: Millis = 30_000;

/// `(group, version) -> (groupPriorityMinimum, versionPriority)` for what kube-apiserver
/// serves (`DefaultGenericAPIServicePriorities` merged with `apiVersionPriorities`).
fn priority(group: &str, version: &str) -> Option<(i64, i64)> {
    Some(match (group, version) {
        ("", "v1") => (18000, 1),
        ("apps", "v1") => (17800, 15),
        ("events.k8s.io", "v1") => (17750, 15),
        ("authentication.k8s.io", "v1") => (17700, 15),
        ("authorization.k8s.io", "v1") => (17600, 15),
        ("autoscaling", "v1") => (17500, 15),
        ("autoscaling", "v2") => (17500, 30),
        ("batch", "v1") => (17400, 15),
        ("certificates.k8s.io", "v1") => (17300, 15),
        ("networking.k8s.io", "v1") => (17200, 15),
        ("policy", "v1") => (17100, 15),
        ("rbac.authorization.k8s.io", "v1") => (17000, 15),
        ("storage.k8s.io", "v1") => (16800, 15),
        ("admissionregistration.k8s.io", "v1") => (16700, 15),
        ("scheduling.k8s.io", "v1") => (16600, 15),
        ("coordination.k8s.io", "v1") => (16500, 15),
        ("discovery.k8s.io", "v1") => (16200, 15),
        _ => return None,
    })
}

/// The Local APIServices of kube-apiserver: one per group-version served here, and the
/// access-review groups. (kubeloop's API server also serves `metrics.k8s.io` itself, where
/// a real cluster's APIService names the metrics-server Service: it is listed as Local.)
pub fn local_apiservices() -> Vec<Value> {
    let mut gvs: BTreeSet<(&str, &str)> = RESOURCES.iter().map(|r| (r.group, r.version)).collect_tree();
    gvs.insert(("authentication.k8s.io", "v1"));
    gvs.insert(("authorization.k8s.io", "v1"));
    gvs.into_iter()
        .filter_map(|(g, v)| {
            let (gp, vp) = match (g, v) {
                ("metrics.k8s.io", _) => (100, 100),
                ("apiregistration.k8s.io", _) => (18000, 15),
                _ => priority(g, v)?,
            };
            let mut o = json!({
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": format!("{v}.{g}"), "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"}},
                "spec": {"version": v, "groupPriorityMinimum": gp, "versionPriority": vp},
                "status": {"conditions": [{"type": "Available", "status": "True", "lastTransitionTime": rfc3339(0), "reason": "Local", "message": "Local APIServices are always available"}]},
            });
            if !g.is_empty() {
                o["spec"]["group"] = json!(g);
            }
            Some(o)
        })
        .collect()
}

#[derive(Clone)]
pub struct ApiServiceAvailability {
    user: UserInfo,
    apiservices: Informer,
    services: Informer,
    slices: Informer,
    started: bool,
}

impl Default for ApiServiceAvailability {
    fn default() -> Self {
        Self::new()
    }
}

impl ApiServiceAvailability {
    pub fn new() -> Self {
        ApiServiceAvailability {
            user: UserInfo::new("system:apiserver", &["system:masters"]),
            apiservices: Informer::new(rid::APISERVICE),
            services: Informer::new(rid::SERVICE),
            slices: Informer::new(rid::ENDPOINTSLICE),
            started: false,
        }
    }

    /// The Available condition for an APIService backed by `namespace/name`.
    fn check(&self, svc_ns: &str, svc_name: &str, port: i64, group: &str, version: &str) -> (&'static str, String) {
        let Some(svc) = self.services.get(svc_ns, svc_name) else {
            return ("ServiceNotFound", format!("service/{svc_name} in {svc_ns:?} is not present"));
        };
        let ports = get_array(svc, &["spec", "ports"]);
        let port_name = ports.iter().find(|p| api::get_i64(p, &["port"]) == Some(port)).and_then(|p| get_str(p, &["name"])).unwrap_or("");
        let ready = self
            .slices
            .list(Some(svc_ns))
            .filter(|s| api::label(s, "kubernetes.io/service-name") == Some(svc_name))
            .flat_map(|s| get_array(s, &["endpoints"]).iter())
            .any(|e| api::get_bool(e, &["conditions", "ready"]) != Some(false));
        if !ready {
            return ("MissingEndpoints", format!("endpoints for service/{svc_name} in {svc_ns:?} have no addresses with port name {port_name:?}"));
        }
        let ip = get_str(svc, &["spec", "clusterIP"]).unwrap_or("");
        let url = format!("https://{ip}:{port}/apis/{group}/{version}");
        ("FailedDiscoveryCheck", format!("failing or missing response from {url}: Get {url:?}: dial tcp {ip}:{port}: connect: connection refused"))
    }

    fn sync(&mut self, cx: &mut Cx) {
        let all: Vec<Value> = self.apiservices.list(None).map(|a| (**a).clone()).collect();
        for a in all {
            let Some(svc) = get(&a, &["spec", "service"]).filter(|s| !s.is_null()) else { continue };
            let (ns, name) = (get_str(svc, &["namespace"]).unwrap_or(""), get_str(svc, &["name"]).unwrap_or(""));
            let port = api::get_i64(svc, &["port"]).unwrap_or(443);
            let (group, version) = (get_str(&a, &["spec", "group"]).unwrap_or(""), get_str(&a, &["spec", "version"]).unwrap_or(""));
            let (reason, message) = self.check(ns, name, port, group, version);
            let old = get_array(&a, &["status", "conditions"]).iter().find(|c| get_str(c, &["type"]) == Some("Available")).cloned();
            if old.as_ref().is_some_and(|c| get_str(c, &["reason"]) == Some(reason) && get_str(c, &["message"]) == Some(message.as_str())) {
                continue;
            }
            let since = old.as_ref().filter(|c| get_str(c, &["status"]) == Some("False")).and_then(|c| get_str(c, &["lastTransitionTime"])).map(str::to_string);
            let cond = json!({"type": "Available", "status": "False", "lastTransitionTime": since.unwrap_or_else(|| rfc3339(cx.now)), "reason": reason, "message": message});
            let mut body = a.clone();
            body["status"] = json!({"conditions": [cond]});
            let r = Request::update(rid::APISERVICE, "", api::name(&a), body, Credentials::User(self.user.clone())).with_sub("status");
            let _ = cx.api.handle(req_as(r, NAME, &self.user));
        }
    }
}

impl Controller for ApiServiceAvailability {
    fn name(&self) -> &'static str {
        NAME
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::APISERVICE, rid::SERVICE, rid::ENDPOINTSLICE]
    }
    fn run(&mut self, cx: &mut Cx) {
        if !self.started {
            self.started = true;
            cx.every(RESYNC, "resync");
        }
        let a = self.apiservices.sync(&cx.api.store).deltas.len();
        let s = self.services.sync(&cx.api.store).deltas.len();
        let e = self.slices.sync(&cx.api.store).deltas.len();
        if a + s + e > 0 {
            self.sync(cx);
        }
    }
    fn timer(&mut self, cx: &mut Cx, _key: &str) {
        self.apiservices.sync(&cx.api.store);
        self.services.sync(&cx.api.store);
        self.slices.sync(&cx.api.store);
        self.sync(cx);
        cx.every(RESYNC, "resync");
    }
    fn restart(&mut self) {
        *self = Self::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_apiserver_lists_its_own_groups_as_local() {
        let all = local_apiservices();
        let names: Vec<&str> = all.iter().map(api::name).collect();
        for n in ["v1.", "v1.apps", "v2.autoscaling", "v1.autoscaling", "v1.storage.k8s.io", "v1.apiregistration.k8s.io", "v1.authorization.k8s.io"] {
            assert!(names.contains(&n), "{n} in {names:?}");
        }
        let core = all.iter().find(|a| api::name(a) == "v1.").expect("core");
        assert!(core["spec"].get("group").is_none(), "the core group has no group field");
        assert_eq!(core["spec"]["groupPriorityMinimum"], 18000);
        assert_eq!(core["status"]["conditions"][0]["reason"], "Local");
    }
}
