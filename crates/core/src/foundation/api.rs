//! API objects and the resource table.
//!
//! Objects are kept as JSON trees (`crate::foundation::value::Value`) shared through `Arc`, the way the
//! API server keeps unstructured objects: every field a user writes that the schema
//! declares survives a round trip, and controllers read typed values through the small
//! accessors below. The resource table mirrors `kubectl api-resources` for the kinds
//! kubeloop serves (the `// schema:` markers feed `tools/gen-schema.py`).

use crate::foundation::value::{Map, Value};
use std::sync::Arc;

/// A stored object. Cloning is a reference-count increment; a writer changes its own copy,
/// which shares every untouched subtree with the stored version (see [`crate::foundation::value`]).
pub type Object = Arc<Value>;

/// One REST resource: what discovery (`/apis/<group>/<version>`) would list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceInfo {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
}

/// The groups whose only resources are reviews (created, never stored), served at v1.
pub const REVIEW_GROUPS: &[&str] = &["authentication.k8s.io", "authorization.k8s.io"];

/// Group-versions in the order `/apis` lists them (the core group first for `/api`).
pub fn group_versions() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for r in RESOURCES.iter().map(|r| (r.group, r.version)).chain(REVIEW_GROUPS.iter().map(|g| (*g, "v1"))) {
        if !out.contains(&r) {
            out.push(r);
        }
    }
    out
}

impl ResourceInfo {
    /// `apps/v1`, or `v1` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
    /// `deployments.apps`, or `pods` for the core group (the `<qres>` of API errors).
    pub fn qualified_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
    /// `Deployment.apps`, or `Pod` for the core group (the `<qkind>` of Invalid errors).
    pub fn qualified_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.to_string()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }
}

/// Index into [`RESOURCES`]; the store partitions objects by it.
pub type ResourceId = usize;

macro_rules! res {
    ($g:expr, $v:expr, $k:expr, $p:expr, $s:expr, $ns:expr, [$($sn:expr),*]) => {
        ResourceInfo { group: $g, version: $v, kind: $k, plural: $p, singular: $s, namespaced: $ns, short_names: &[$($sn),*] }
    };
}

/// Every kind kubeloop stores. Kinds without a simulated controller (DaemonSet, Job, ...)
/// are still validated, stored and listed, as an API server would.
pub static RESOURCES: &[ResourceInfo] = &[
    // schema: "v1/Namespace"
    res!("", "v1", "Namespace", "namespaces", "namespace", false, ["ns"]),
    // schema: "v1/Node"
    res!("", "v1", "Node", "nodes", "node", false, ["no"]),
    // schema: "v1/Pod"
    res!("", "v1", "Pod", "pods", "pod", true, ["po"]),
    // schema: "v1/Service"
    res!("", "v1", "Service", "services", "service", true, ["svc"]),
    // schema: "v1/ConfigMap"
    res!("", "v1", "ConfigMap", "configmaps", "configmap", true, ["cm"]),
    // schema: "v1/Secret"
    res!("", "v1", "Secret", "secrets", "secret", true, []),
    // schema: "v1/ServiceAccount"
    res!("", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", true, ["sa"]),
    // schema: "v1/Event"
    res!("", "v1", "Event", "events", "event", true, ["ev"]),
    // schema: "v1/LimitRange"
    res!("", "v1", "LimitRange", "limitranges", "limitrange", true, ["limits"]),
    // schema: "v1/ResourceQuota"
    res!("", "v1", "ResourceQuota", "resourcequotas", "resourcequota", true, ["quota"]),
    // schema: "v1/PersistentVolumeClaim"
    res!("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", "persistentvolumeclaim", true, ["pvc"]),
    // schema: "v1/PersistentVolume"
    res!("", "v1", "PersistentVolume", "persistentvolumes", "persistentvolume", false, ["pv"]),
    // schema: "v1/Endpoints"
    res!("", "v1", "Endpoints", "endpoints", "endpoints", true, ["ep"]),
    // schema: "apps/v1/Deployment"
    res!("apps", "v1", "Deployment", "deployments", "deployment", true, ["deploy"]),
    // schema: "apps/v1/ReplicaSet"
    res!("apps", "v1", "ReplicaSet", "replicasets", "replicaset", true, ["rs"]),
    // schema: "apps/v1/DaemonSet"
    res!("apps", "v1", "DaemonSet", "daemonsets", "daemonset", true, ["ds"]),
    // schema: "apps/v1/StatefulSet"
    res!("apps", "v1", "StatefulSet", "statefulsets", "statefulset", true, ["sts"]),
    // schema: "apps/v1/ControllerRevision"
    res!("apps", "v1", "ControllerRevision", "controllerrevisions", "controllerrevision", true, []),
    // schema: "batch/v1/Job"
    res!("batch", "v1", "Job", "jobs", "job", true, []),
    // schema: "batch/v1/CronJob"
    res!("batch", "v1", "CronJob", "cronjobs", "cronjob", true, ["cj"]),
    // schema: "rbac.authorization.k8s.io/v1/Role"
    res!("rbac.authorization.k8s.io", "v1", "Role", "roles", "role", true, []),
    // schema: "rbac.authorization.k8s.io/v1/ClusterRole"
    res!("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", "clusterrole", false, []),
    // schema: "rbac.authorization.k8s.io/v1/RoleBinding"
    res!("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", "rolebinding", true, []),
    // schema: "rbac.authorization.k8s.io/v1/ClusterRoleBinding"
    res!("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", "clusterrolebinding", false, []),
    // schema: "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy"
    res!("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", "validatingadmissionpolicy", false, []),
    // schema: "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding"
    res!(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        "validatingadmissionpolicybinding",
        false,
        []
    ),
    // schema: "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration"
    res!(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        "validatingwebhookconfiguration",
        false,
        []
    ),
    // schema: "admissionregistration.k8s.io/v1/MutatingWebhookConfiguration"
    res!("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", "mutatingwebhookconfiguration", false, []),
    // schema: "discovery.k8s.io/v1/EndpointSlice"
    res!("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", "endpointslice", true, []),
    // schema: "coordination.k8s.io/v1/Lease"
    res!("coordination.k8s.io", "v1", "Lease", "leases", "lease", true, []),
    // schema: "scheduling.k8s.io/v1/PriorityClass"
    res!("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", "priorityclass", false, ["pc"]),
    // schema: "networking.k8s.io/v1/Ingress"
    res!("networking.k8s.io", "v1", "Ingress", "ingresses", "ingress", true, ["ing"]),
    // schema: "networking.k8s.io/v1/IngressClass"
    res!("networking.k8s.io", "v1", "IngressClass", "ingressclasses", "ingressclass", false, []),
    // schema: "networking.k8s.io/v1/NetworkPolicy"
    res!("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", "networkpolicy", true, ["netpol"]),
    // schema: "policy/v1/PodDisruptionBudget"
    res!("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", "poddisruptionbudget", true, ["pdb"]),
    // schema: "storage.k8s.io/v1/StorageClass"
    res!("storage.k8s.io", "v1", "StorageClass", "storageclasses", "storageclass", false, ["sc"]),
    // schema: "autoscaling/v2/HorizontalPodAutoscaler"
    res!("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", "horizontalpodautoscaler", true, ["hpa"]),
    // schema: "autoscaling/v1/HorizontalPodAutoscaler"
    res!("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", "horizontalpodautoscaler", true, ["hpa"]),
    // schema: "v1/ReplicationController"
    res!("", "v1", "ReplicationController", "replicationcontrollers", "replicationcontroller", true, ["rc"]),
    // schema: "storage.k8s.io/v1/VolumeAttachment"
    res!("storage.k8s.io", "v1", "VolumeAttachment", "volumeattachments", "volumeattachment", false, []),
    // schema: "storage.k8s.io/v1/CSIDriver"
    res!("storage.k8s.io", "v1", "CSIDriver", "csidrivers", "csidriver", false, []),
    // schema: "storage.k8s.io/v1/CSINode"
    res!("storage.k8s.io", "v1", "CSINode", "csinodes", "csinode", false, []),
    // The resource metrics API (metrics-server's `metrics.k8s.io`): read-only views the API
    // server builds from its scrapes of the kubelets, stored nowhere and with no schema.
    res!("metrics.k8s.io", "v1beta1", "PodMetrics", "pods", "", true, []),
    res!("metrics.k8s.io", "v1beta1", "NodeMetrics", "nodes", "", false, []),
    // schema: "apiregistration.k8s.io/v1/APIService"
    res!("apiregistration.k8s.io", "v1", "APIService", "apiservices", "apiservice", false, []),
    // schema: "flowcontrol.apiserver.k8s.io/v1/FlowSchema"
    res!("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema", "flowschemas", "flowschema", false, []),
    // schema: "flowcontrol.apiserver.k8s.io/v1/PriorityLevelConfiguration"
    res!("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration", "prioritylevelconfigurations", "prioritylevelconfiguration", false, []),
    // schema: "certificates.k8s.io/v1/CertificateSigningRequest"
    res!("certificates.k8s.io", "v1", "CertificateSigningRequest", "certificatesigningrequests", "certificatesigningrequest", false, ["csr"]),
];

/// Whether a resource is one of the resource metrics API's views (served from scrapes,
/// never stored, read-only).
pub fn is_metrics(r: ResourceId) -> bool {
    RESOURCES.get(r).is_some_and(|r| r.group == "metrics.k8s.io")
}

/// Well-known resource ids, checked against the table by a unit test.
pub mod rid {
    use super::ResourceId;
    pub const NAMESPACE: ResourceId = 0;
    pub const NODE: ResourceId = 1;
    pub const POD: ResourceId = 2;
    pub const SERVICE: ResourceId = 3;
    pub const CONFIGMAP: ResourceId = 4;
    pub const SECRET: ResourceId = 5;
    pub const SERVICEACCOUNT: ResourceId = 6;
    pub const EVENT: ResourceId = 7;
    pub const LIMITRANGE: ResourceId = 8;
    pub const DEPLOYMENT: ResourceId = 13;
    pub const REPLICASET: ResourceId = 14;
    pub const ROLE: ResourceId = 20;
    pub const CLUSTERROLE: ResourceId = 21;
    pub const ROLEBINDING: ResourceId = 22;
    pub const CLUSTERROLEBINDING: ResourceId = 23;
    pub const VAP: ResourceId = 24;
    pub const VAPB: ResourceId = 25;
    pub const VWC: ResourceId = 26;
    pub const MWC: ResourceId = 27;
    pub const ENDPOINTSLICE: ResourceId = 28;
    pub const LEASE: ResourceId = 29;
    pub const PRIORITYCLASS: ResourceId = 30;
    pub const RESOURCEQUOTA: ResourceId = 9;
    pub const PVC: ResourceId = 10;
    pub const PV: ResourceId = 11;
    pub const DAEMONSET: ResourceId = 15;
    pub const STATEFULSET: ResourceId = 16;
    pub const CONTROLLERREVISION: ResourceId = 17;
    pub const JOB: ResourceId = 18;
    pub const CRONJOB: ResourceId = 19;
    pub const PDB: ResourceId = 34;
    pub const STORAGECLASS: ResourceId = 35;
    pub const HPA: ResourceId = 36;
    /// `autoscaling/v1`: another version of the objects stored under [`HPA`].
    pub const HPA_V1: ResourceId = 37;
    pub const REPLICATIONCONTROLLER: ResourceId = 38;
    pub const VOLUMEATTACHMENT: ResourceId = 39;
    pub const CSIDRIVER: ResourceId = 40;
    pub const CSINODE: ResourceId = 41;
    pub const PODMETRICS: ResourceId = 42;
    pub const NODEMETRICS: ResourceId = 43;
    pub const APISERVICE: ResourceId = 44;
    pub const FLOWSCHEMA: ResourceId = 45;
    pub const PRIORITYLEVEL: ResourceId = 46;
    pub const CSR: ResourceId = 47;
}

/// The resource for an `apiVersion` and `kind`, as the REST mapper resolves it.
pub fn resource_for_kind(api_version: &str, kind: &str) -> Option<ResourceId> {
    RESOURCES.iter().position(|r| r.kind == kind && r.api_version() == api_version)
}

/// The resource for a group and plural (or singular or short) name, as kubectl resolves
/// `deploy`, `deployments.apps` or `pods`. The first (preferred) version wins.
pub fn resource_for_name(name: &str) -> Option<ResourceId> {
    let (n, group) = match name.split_once('.') {
        Some((n, g)) => (n, Some(g)),
        None => (name, None),
    };
    let n = n.to_ascii_lowercase();
    RESOURCES.iter().position(|r| {
        group.is_none_or(|g| r.group == g) && (r.plural == n || r.singular == n || r.short_names.contains(&n.as_str()) || r.kind.eq_ignore_ascii_case(&n))
    })
}

/// The storage identity of an object: resource, namespace (empty if cluster-scoped), name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    pub resource: ResourceId,
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(resource: ResourceId, namespace: &str, name: &str) -> Self {
        ObjectKey { resource, namespace: namespace.to_string(), name: name.to_string() }
    }
    /// `Kind/namespace/name` (or `Kind/name` if cluster-scoped), the trace's object form.
    pub fn display(&self) -> String {
        let kind = RESOURCES[self.resource].kind;
        if self.namespace.is_empty() {
            format!("{}/{}", kind, self.name)
        } else {
            format!("{}/{}/{}", kind, self.namespace, self.name)
        }
    }
}

// ---- accessors on JSON trees -------------------------------------------------------

/// Follow a path of object keys; `None` if any step is missing or not an object.
pub fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for p in path {
        cur = cur.as_object()?.get(p)?;
    }
    Some(cur)
}

pub fn get_str<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    get(v, path).and_then(Value::as_str)
}

pub fn get_i64(v: &Value, path: &[&str]) -> Option<i64> {
    get(v, path).and_then(Value::as_i64)
}

pub fn get_bool(v: &Value, path: &[&str]) -> Option<bool> {
    get(v, path).and_then(Value::as_bool)
}

pub fn get_array<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    get(v, path).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

/// The object at `path`, created (as empty objects) along the way if missing. Replaces
/// non-object values in the way, which callers only do on trees they have validated.
pub fn entry<'a>(v: &'a mut Value, path: &[&str]) -> &'a mut Map {
    let mut cur = v;
    for p in path {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        cur = cur.as_object_mut().expect("just made an object").entry(p.to_string()).or_insert_with(|| Value::Object(Map::new()));
    }
    if !cur.is_object() {
        *cur = Value::Object(Map::new());
    }
    cur.as_object_mut().expect("just made an object")
}

pub fn set(v: &mut Value, path: &[&str], value: Value) {
    if let Some((last, parent)) = path.split_last() {
        entry(v, parent).insert(last.to_string(), value);
    }
}

pub fn name(v: &Value) -> &str {
    get_str(v, &["metadata", "name"]).unwrap_or("")
}
pub fn namespace(v: &Value) -> &str {
    get_str(v, &["metadata", "namespace"]).unwrap_or("")
}
pub fn uid(v: &Value) -> &str {
    get_str(v, &["metadata", "uid"]).unwrap_or("")
}
pub fn resource_version(v: &Value) -> &str {
    get_str(v, &["metadata", "resourceVersion"]).unwrap_or("")
}
pub fn generation(v: &Value) -> i64 {
    get_i64(v, &["metadata", "generation"]).unwrap_or(0)
}
pub fn is_deleting(v: &Value) -> bool {
    get(v, &["metadata", "deletionTimestamp"]).is_some_and(|t| !t.is_null())
}
pub fn labels(v: &Value) -> Option<&Map> {
    get(v, &["metadata", "labels"]).and_then(Value::as_object)
}
pub fn label<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    labels(v).and_then(|l| l.get(key)).and_then(Value::as_str)
}
pub fn annotation<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    get(v, &["metadata", "annotations", key]).and_then(Value::as_str)
}

/// The ownerReference with `controller: true`, if any.
pub fn controller_ref(v: &Value) -> Option<&Value> {
    get_array(v, &["metadata", "ownerReferences"]).iter().find(|r| get_bool(r, &["controller"]) == Some(true))
}

/// The namespace and name of an object: the key a controller's queue holds.
pub fn queue_key(o: &Value) -> (String, String) {
    (namespace(o).to_string(), name(o).to_string())
}

/// The name and uid of an object's controller, when that controller is a `kind`.
pub fn controller_of_kind(o: &Value, kind: &str) -> Option<(String, String)> {
    let r = controller_ref(o)?;
    (get_str(r, &["kind"]) == Some(kind)).then(|| (get_str(r, &["name"]).unwrap_or("").to_string(), get_str(r, &["uid"]).unwrap_or("").to_string()))
}

/// An ownerReference to `owner` as controllers write it (`controller` and
/// `blockOwnerDeletion` both true).
pub fn owner_reference(owner: &Value) -> Value {
    crate::json!({
        "apiVersion": get_str(owner, &["apiVersion"]).unwrap_or(""),
        "kind": get_str(owner, &["kind"]).unwrap_or(""),
        "name": name(owner),
        "uid": uid(owner),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// `Kind/namespace/name` of a JSON object (best effort, for traces of rejected bodies).
pub fn display_ref(v: &Value) -> String {
    let kind = get_str(v, &["kind"]).unwrap_or("?");
    let ns = namespace(v);
    let n = name(v);
    let n = if n.is_empty() { get_str(v, &["metadata", "generateName"]).unwrap_or("") } else { n };
    if ns.is_empty() {
        format!("{kind}/{n}")
    } else {
        format!("{kind}/{ns}/{n}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_ids_point_at_their_kinds() {
        let pairs = [
            (rid::NAMESPACE, "Namespace"),
            (rid::NODE, "Node"),
            (rid::POD, "Pod"),
            (rid::SERVICE, "Service"),
            (rid::CONFIGMAP, "ConfigMap"),
            (rid::SECRET, "Secret"),
            (rid::SERVICEACCOUNT, "ServiceAccount"),
            (rid::EVENT, "Event"),
            (rid::LIMITRANGE, "LimitRange"),
            (rid::DEPLOYMENT, "Deployment"),
            (rid::REPLICASET, "ReplicaSet"),
            (rid::ROLE, "Role"),
            (rid::CLUSTERROLE, "ClusterRole"),
            (rid::ROLEBINDING, "RoleBinding"),
            (rid::CLUSTERROLEBINDING, "ClusterRoleBinding"),
            (rid::VAP, "ValidatingAdmissionPolicy"),
            (rid::VAPB, "ValidatingAdmissionPolicyBinding"),
            (rid::VWC, "ValidatingWebhookConfiguration"),
            (rid::MWC, "MutatingWebhookConfiguration"),
            (rid::ENDPOINTSLICE, "EndpointSlice"),
            (rid::PVC, "PersistentVolumeClaim"),
            (rid::PV, "PersistentVolume"),
            (rid::DAEMONSET, "DaemonSet"),
            (rid::STATEFULSET, "StatefulSet"),
            (rid::CONTROLLERREVISION, "ControllerRevision"),
            (rid::JOB, "Job"),
            (rid::CRONJOB, "CronJob"),
            (rid::PDB, "PodDisruptionBudget"),
            (rid::HPA, "HorizontalPodAutoscaler"),
            (rid::HPA_V1, "HorizontalPodAutoscaler"),
            (rid::PODMETRICS, "PodMetrics"),
            (rid::NODEMETRICS, "NodeMetrics"),
            (rid::REPLICATIONCONTROLLER, "ReplicationController"),
            (rid::LEASE, "Lease"),
            (rid::PRIORITYCLASS, "PriorityClass"),
            (rid::APISERVICE, "APIService"),
            (rid::FLOWSCHEMA, "FlowSchema"),
            (rid::PRIORITYLEVEL, "PriorityLevelConfiguration"),
            (rid::CSR, "CertificateSigningRequest"),
        ];
        for (id, kind) in pairs {
            assert_eq!(RESOURCES[id].kind, kind);
        }
    }

    #[test]
    fn names_resolve_like_kubectl() {
        assert_eq!(resource_for_name("deploy"), Some(rid::DEPLOYMENT));
        assert_eq!(resource_for_name("deployments.apps"), Some(rid::DEPLOYMENT));
        assert_eq!(resource_for_name("po"), Some(rid::POD));
        assert_eq!(resource_for_name("rs"), Some(rid::REPLICASET));
        assert_eq!(resource_for_name("nope"), None);
        assert_eq!(RESOURCES[rid::DEPLOYMENT].qualified_resource(), "deployments.apps");
        assert_eq!(RESOURCES[rid::POD].qualified_kind(), "Pod");
    }
}
