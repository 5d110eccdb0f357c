//! Discovery and OpenAPI: what a client reads before it makes its first real request.
//!
//! Both forms of discovery are served: the aggregated `apidiscovery.k8s.io/v2` document
//! that kubectl asks for first (`/api` and `/apis` with
//! `Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`), and
//! the legacy `APIVersions`/`APIGroupList`/`APIResourceList` for older clients. OpenAPI v3
//! documents are built per group-version from the real 1.36 definitions in
//! `data/openapi.json` (descriptions included, for `kubectl explain`), with PATCH paths
//! that declare `fieldValidation` so kubectl leaves validation to the server.

use kubeloop_core::apiserver::has_status_subresource;
use kubeloop_core::foundation::api::{ResourceInfo, RESOURCES};
use kubeloop_core::foundation::value::Value;
use kubeloop_core::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// A group-version served in addition to the stored kinds: its resources are reviews that
/// are created and answered, never stored.
struct Review {
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    namespaced: bool,
}

const REVIEWS: &[Review] = &[
    Review { group: "authentication.k8s.io", kind: "SelfSubjectReview", plural: "selfsubjectreviews", singular: "selfsubjectreview", namespaced: false },
    Review {
        group: "authorization.k8s.io",
        kind: "SelfSubjectAccessReview",
        plural: "selfsubjectaccessreviews",
        singular: "selfsubjectaccessreview",
        namespaced: false,
    },
    Review {
        group: "authorization.k8s.io",
        kind: "SelfSubjectRulesReview",
        plural: "selfsubjectrulesreviews",
        singular: "selfsubjectrulesreview",
        namespaced: false,
    },
    Review { group: "authorization.k8s.io", kind: "SubjectAccessReview", plural: "subjectaccessreviews", singular: "subjectaccessreview", namespaced: false },
];

const ALL_CATEGORY: &[&str] = &["pods", "services", "daemonsets", "deployments", "replicasets", "statefulsets", "horizontalpodautoscalers", "jobs", "cronjobs"];
const STORED_VERBS: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// The verbs of a resource: the resource metrics API's views are read-only (metrics-server
/// serves get and list).
fn verbs(r: &ResourceInfo) -> &'static [&'static str] {
    if r.group == "metrics.k8s.io" {
        &["get", "list"]
    } else {
        STORED_VERBS
    }
}

/// The subresources of a resource: (name, response group, version, kind, verbs).
fn subresources(r: &ResourceInfo) -> Vec<(&'static str, &'static str, &'static str, &'static str, &'static [&'static str])> {
    let mut out = Vec::new();
    if matches!(r.kind, "Deployment" | "ReplicaSet" | "StatefulSet") {
        out.push(("scale", "autoscaling", "v1", "Scale", &["get", "patch", "update"][..]));
    }
    if has_status_subresource(r.kind) {
        out.push(("status", r.group, r.version, r.kind, &["get", "patch", "update"][..]));
    }
    match r.kind {
        "Pod" => {
            out.push(("binding", "", "v1", "Binding", &["create"][..]));
            out.push(("eviction", "policy", "v1", "Eviction", &["create"][..]));
            out.push(("log", "", "v1", "Pod", &["get"][..]));
        }
        "Namespace" => out.push(("finalize", "", "v1", "Namespace", &["update"][..])),
        "CertificateSigningRequest" => out.push(("approval", r.group, r.version, r.kind, &["get", "patch", "update"][..])),
        _ => {}
    }
    out
}

pub use kubeloop_core::foundation::api::group_versions;

fn categories(r: &ResourceInfo) -> Vec<&'static str> {
    if ALL_CATEGORY.contains(&r.plural) {
        vec!["all"]
    } else {
        vec![]
    }
}

/// The legacy `APIResourceList` of `/api/v1` or `/apis/<group>/<version>`.
pub fn resource_list(group: &str, version: &str) -> Option<Value> {
    let gv = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    let mut resources = Vec::new();
    for r in RESOURCES.iter().filter(|r| r.group == group && r.version == version) {
        let mut entry = json!({"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced, "kind": r.kind, "verbs": verbs(r)});
        if !r.short_names.is_empty() {
            entry["shortNames"] = json!(r.short_names);
        }
        let cats = categories(r);
        if !cats.is_empty() {
            entry["categories"] = json!(cats);
        }
        resources.push(entry);
        for (sub, g, v, k, verbs) in subresources(r) {
            let mut e = json!({"name": format!("{}/{sub}", r.plural), "singularName": "", "namespaced": r.namespaced, "kind": k, "verbs": verbs});
            if g != group || v != version {
                e["group"] = json!(g);
                e["version"] = json!(v);
            }
            resources.push(e);
        }
    }
    for r in REVIEWS.iter().filter(|r| r.group == group && version == "v1") {
        resources.push(json!({"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced, "kind": r.kind, "verbs": ["create"]}));
    }
    if resources.is_empty() {
        return None;
    }
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}))
}

fn group_entry(group: &str) -> Value {
    let versions: Vec<Value> =
        group_versions().into_iter().filter(|(g, _)| *g == group).map(|(g, v)| json!({"groupVersion": format!("{g}/{v}"), "version": v})).collect();
    json!({"name": group, "versions": versions.clone(), "preferredVersion": versions[0].clone()})
}

/// `/api` (legacy form).
pub fn api_versions(server_address: &str) -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]})
}

/// `/apis` (legacy form).
pub fn group_list() -> Value {
    let mut groups: Vec<&str> = Vec::new();
    for (g, _) in group_versions() {
        if !g.is_empty() && !groups.contains(&g) {
            groups.push(g);
        }
    }
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups.iter().map(|g| group_entry(g)).collect::<Vec<_>>()})
}

/// `/apis/<group>`.
pub fn group(group: &str) -> Option<Value> {
    group_versions().iter().any(|(g, _)| *g == group && !g.is_empty()).then(|| {
        let mut e = group_entry(group);
        e["kind"] = json!("APIGroup");
        e["apiVersion"] = json!("v1");
        e
    })
}

/// The aggregated discovery document of `/api` (`core = true`) or `/apis`.
pub fn aggregated(core: bool) -> Value {
    let mut items = Vec::new();
    let mut groups: Vec<&str> = Vec::new();
    for (g, _) in group_versions() {
        if g.is_empty() == core && !groups.contains(&g) {
            groups.push(g);
        }
    }
    for g in groups {
        let mut versions = Vec::new();
        for (_, v) in group_versions().into_iter().filter(|(gg, _)| *gg == g) {
            let mut resources = Vec::new();
            for r in RESOURCES.iter().filter(|r| r.group == g && r.version == v) {
                let subs: Vec<Value> = subresources(r)
                    .into_iter()
                    .map(|(sub, sg, sv, sk, verbs)| json!({"subresource": sub, "responseKind": {"group": sg, "version": sv, "kind": sk}, "verbs": verbs}))
                    .collect();
                let mut e = json!({
                    "resource": r.plural,
                    "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
                    "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
                    "singularResource": r.singular,
                    "verbs": verbs(r),
                });
                if !r.short_names.is_empty() {
                    e["shortNames"] = json!(r.short_names);
                }
                let cats = categories(r);
                if !cats.is_empty() {
                    e["categories"] = json!(cats);
                }
                if !subs.is_empty() {
                    e["subresources"] = json!(subs);
                }
                resources.push(e);
            }
            for r in REVIEWS.iter().filter(|r| r.group == g) {
                resources.push(json!({
                    "resource": r.plural,
                    "responseKind": {"group": r.group, "version": "v1", "kind": r.kind},
                    "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
                    "singularResource": r.singular,
                    "verbs": ["create"],
                }));
            }
            versions.push(json!({"version": v, "resources": resources, "freshness": "Current"}));
        }
        items.push(json!({"metadata": {"name": g, "creationTimestamp": null}, "versions": versions}));
    }
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

/// The media type of aggregated discovery, when the client's `Accept` lists it.
pub fn wants_aggregated(accept: &str) -> Option<&'static str> {
    for part in accept.split(',') {
        let p: String = part.chars().filter(|c| !c.is_whitespace()).collect();
        if p.contains("as=APIGroupDiscoveryList") && p.contains("g=apidiscovery.k8s.io") {
            if p.contains("v=v2beta1") {
                return Some("v2beta1");
            }
            if p.contains("v=v2") {
                return Some("v2");
            }
        }
    }
    None
}

struct OpenApi {
    schemas: BTreeMap<String, Value>,
    /// group-version → the definitions of its kinds (by `x-kubernetes-group-version-kind`).
    kinds: BTreeMap<String, Vec<String>>,
}

fn openapi() -> &'static OpenApi {
    static DOC: OnceLock<OpenApi> = OnceLock::new();
    DOC.get_or_init(|| {
        let raw: Value = serde_json::from_str(include_str!("../../data/openapi.json")).unwrap_or(Value::Null);
        let schemas: BTreeMap<String, Value> =
            raw.get("schemas").and_then(Value::as_object).map(|m| m.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()).unwrap_or_default();
        let mut kinds: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, s) in &schemas {
            for gvk in s.get("x-kubernetes-group-version-kind").and_then(Value::as_array).into_iter().flatten() {
                let g = gvk.get("group").and_then(Value::as_str).unwrap_or("");
                let v = gvk.get("version").and_then(Value::as_str).unwrap_or("");
                let gv = if g.is_empty() { format!("api/{v}") } else { format!("apis/{g}/{v}") };
                kinds.entry(gv).or_default().push(name.clone());
            }
        }
        OpenApi { schemas, kinds }
    })
}

/// A short, stable hash of a document for its `?hash=` (clients cache by it).
fn hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016X}")
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The OpenAPI v3 documents, built once: by group-version path, and the root index.
struct Documents {
    by_gv: BTreeMap<String, Value>,
    root: Value,
}

fn documents() -> &'static Documents {
    static DOCS: OnceLock<Documents> = OnceLock::new();
    DOCS.get_or_init(|| {
        let mut by_gv = BTreeMap::new();
        let mut root = json!({"paths": {}});
        for (g, v) in group_versions() {
            let p = gv_path(g, v);
            if let Some(doc) = build_doc(&p) {
                let h = hash(&serde_json::to_string(&doc).unwrap_or_default());
                root["paths"][p.as_str()] = json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={h}")});
                by_gv.insert(p, doc);
            }
        }
        Documents { by_gv, root }
    })
}

/// `/openapi/v3`: where each group-version's document is.
pub fn openapi_root() -> &'static Value {
    &documents().root
}

/// The OpenAPI v3 document of one group-version (`api/v1`, `apis/apps/v1`).
pub fn openapi_doc(gv: &str) -> Option<&'static Value> {
    documents().by_gv.get(gv)
}

fn refs(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter() {
                if k == "$ref" {
                    if let Some(r) = x.as_str().and_then(|s| s.strip_prefix("#/components/schemas/")) {
                        out.insert(r.to_string());
                    }
                } else {
                    refs(x, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

fn param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": "string", "uniqueItems": true}})
}

fn build_doc(gv: &str) -> Option<Value> {
    let oa = openapi();
    let (group, version) = match gv.split('/').collect::<Vec<_>>()[..] {
        ["api", v] => ("", v),
        ["apis", g, v] => (g, v),
        _ => return None,
    };
    let kinds = oa.kinds.get(gv)?;
    let mut wanted: BTreeSet<String> = kinds.iter().cloned().collect();
    let mut todo: Vec<String> = wanted.iter().cloned().collect();
    while let Some(n) = todo.pop() {
        let mut found = BTreeSet::new();
        if let Some(s) = oa.schemas.get(&n) {
            refs(s, &mut found);
        }
        for f in found {
            if wanted.insert(f.clone()) {
                todo.push(f);
            }
        }
    }
    let mut schemas = json!({});
    for n in &wanted {
        if let Some(s) = oa.schemas.get(n) {
            schemas[n.as_str()] = s.clone();
        }
    }
    let mut paths = json!({});
    for r in RESOURCES.iter().filter(|r| r.group == group && r.version == version) {
        let Some(def) =
            kinds.iter().find(|k| oa.schemas[*k].get("x-kubernetes-group-version-kind").is_some_and(|g| g.to_string().contains(&format!("\"{}\"", r.kind))))
        else {
            continue;
        };
        let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
        let body = json!({"content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{def}")}}}});
        let base = if r.namespaced { format!("/{gv}/namespaces/{{namespace}}/{}", r.plural) } else { format!("/{gv}/{}", r.plural) };
        let op = |action: &str, id: &str, params: Vec<Value>| {
            json!({"operationId": format!("{id}{}", r.kind), "x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk.clone(), "parameters": params,
                "responses": {"200": body.clone()}})
        };
        let write_params = || {
            vec![
                param("dryRun", "When present, indicates that modifications should not be persisted."),
                param("fieldManager", "fieldManager is a name associated with the actor or entity that is making these changes."),
                param("fieldValidation", "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict"),
            ]
        };
        let mut patch_params = write_params();
        patch_params.push(param("force", "Force is going to \"force\" Apply requests."));
        let mut item = json!({
            "get": op("get", "read", vec![]),
            "put": op("put", "replace", write_params()),
            "patch": op("patch", "patch", patch_params),
            "delete": op("delete", "delete", vec![param("dryRun", "When present, indicates that modifications should not be persisted."), param("propagationPolicy", "Whether and how garbage collection will be performed.")]),
        });
        item["put"]["requestBody"] = body.clone();
        paths[format!("{base}/{{name}}").as_str()] = item;
        let mut coll = json!({"get": op("list", "list", vec![param("labelSelector", "A selector to restrict the list of returned objects by their labels.")]), "post": op("post", "create", write_params())});
        coll["post"]["requestBody"] = body.clone();
        paths[base.as_str()] = coll;
    }
    Some(json!({"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.36.0"}, "paths": paths, "components": {"schemas": schemas}}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_lists_subresources_and_categories() {
        let apps = resource_list("apps", "v1").unwrap();
        let names: Vec<&str> = apps["resources"].as_array().unwrap().iter().filter_map(|r| r["name"].as_str()).collect();
        assert!(names.contains(&"deployments") && names.contains(&"deployments/scale") && names.contains(&"deployments/status"), "{names:?}");
        let agg = aggregated(true);
        let pods = agg["items"][0]["versions"][0]["resources"].as_array().unwrap().iter().find(|r| r["resource"] == "pods").unwrap().clone();
        assert_eq!(pods["categories"], json!(["all"]));
        assert!(pods["subresources"].as_array().unwrap().iter().any(|s| s["subresource"] == "eviction"));
        assert!(resource_list("authorization.k8s.io", "v1").is_some());
        assert!(resource_list("nope.io", "v1").is_none());
        assert_eq!(wants_aggregated("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"), Some("v2"));
        assert_eq!(wants_aggregated("application/json"), None);
    }

    #[test]
    fn openapi_documents_carry_kinds_and_field_validation() {
        let doc = openapi_doc("apis/apps/v1").unwrap();
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        assert!(schemas.contains_key("io.k8s.api.apps.v1.Deployment"));
        assert!(schemas.contains_key("io.k8s.api.core.v1.PodSpec"));
        let strategy = &schemas.get("io.k8s.api.apps.v1.DeploymentStrategy").unwrap()["properties"]["type"]["description"];
        assert!(strategy.as_str().unwrap().contains("Recreate"));
        let patch = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], json!("Deployment"));
        assert!(patch["parameters"].as_array().unwrap().iter().any(|p| p["name"] == "fieldValidation"));
        assert!(openapi_root()["paths"]["api/v1"]["serverRelativeURL"].as_str().unwrap().starts_with("/openapi/v3/api/v1?hash="));
    }
}
