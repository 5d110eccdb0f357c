//! Authorization: the Node authorizer and RBAC, evaluated over the stored Role,
//! ClusterRole, RoleBinding and ClusterRoleBinding objects, plus the bootstrap policy that
//! makes `system:masters` and the built-in components work
//! (`plugin/pkg/auth/authorizer/rbac/rbac.go`,
//! `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`).

use crate::apiserver::store::Store;
use crate::foundation::api::{get_array, get_str, name, rid};
use crate::foundation::sort::Sort;
use crate::foundation::value::{json, Value};

/// An authenticated identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub groups: Vec<String>,
}

impl UserInfo {
    pub fn new(name: &str, groups: &[&str]) -> Self {
        UserInfo { name: name.to_string(), groups: groups.iter().map(|g| g.to_string()).collect() }
    }
    /// The built-in controller identity `system:serviceaccount:kube-system:<sa>`.
    pub fn controller(sa: &str) -> Self {
        UserInfo::new(
            &format!("system:serviceaccount:kube-system:{sa}"),
            &["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"],
        )
    }
    pub fn node(node: &str) -> Self {
        UserInfo::new(&format!("system:node:{node}"), &["system:nodes", "system:authenticated"])
    }
    pub fn admin() -> Self {
        UserInfo::new("admin", &["system:masters", "system:authenticated"])
    }
}

/// What is being asked (`authorizer.Attributes`).
#[derive(Debug, Clone)]
pub struct Attributes<'a> {
    pub verb: &'a str,
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

impl Attributes<'_> {
    /// The denial cause of `responsewriters/errors.go`.
    pub fn forbidden_cause(&self, user: &str) -> String {
        let res = if self.subresource.is_empty() { self.resource.to_string() } else { format!("{}/{}", self.resource, self.subresource) };
        if self.namespace.is_empty() {
            format!("User {user:?} cannot {} resource {res:?} in API group {:?} at the cluster scope", self.verb, self.group)
        } else {
            format!("User {user:?} cannot {} resource {res:?} in API group {:?} in the namespace {:?}", self.verb, self.group, self.namespace)
        }
    }
}

fn has(list: &[Value], want: &str) -> bool {
    list.iter().any(|v| v.as_str() == Some(want) || v.as_str() == Some("*"))
}

/// Whether one PolicyRule allows the request (`rbac/v1` `RuleAllows`).
pub fn rule_allows(rule: &Value, a: &Attributes) -> bool {
    if !has(get_array(rule, &["verbs"]), a.verb) || !has(get_array(rule, &["apiGroups"]), a.group) {
        return false;
    }
    let resources = get_array(rule, &["resources"]);
    let combined = if a.subresource.is_empty() { a.resource.to_string() } else { format!("{}/{}", a.resource, a.subresource) };
    let res_ok = resources.iter().any(|r| match r.as_str() {
        Some("*") => true,
        Some(s) if s == combined => true,
        Some(s) if !a.subresource.is_empty() && s == format!("*/{}", a.subresource) => true,
        _ => false,
    });
    if !res_ok {
        return false;
    }
    let names = get_array(rule, &["resourceNames"]);
    names.is_empty() || names.iter().any(|n| n.as_str() == Some(a.name))
}

fn subject_matches(s: &Value, user: &UserInfo, binding_ns: &str) -> bool {
    let sname = get_str(s, &["name"]).unwrap_or("");
    match get_str(s, &["kind"]).unwrap_or("") {
        "User" => user.name == sname,
        "Group" => user.groups.iter().any(|g| g == sname),
        "ServiceAccount" => {
            let ns = get_str(s, &["namespace"]).unwrap_or(binding_ns);
            user.name == format!("system:serviceaccount:{ns}:{sname}")
        }
        _ => false,
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Allow,
    /// Denied; the authorizer's reason (appended to the Forbidden cause) if any.
    Deny(Option<String>),
}

/// The decisions [`authorize`] gave, kept while the policy they read (roles, cluster roles
/// and their bindings) is unchanged: the same question gets the same answer without walking
/// every binding again. Only a memo; nothing an API client could tell apart.
#[derive(Debug, Clone, Default)]
pub struct Decisions {
    /// The last write to each policy resource when the decisions were made.
    policy: [u64; 4],
    decided: std::collections::HashMap<String, Decision>,
}

/// How many decisions are kept before the memo starts afresh.
const MAX_DECISIONS: usize = 4096;

impl Decisions {
    pub fn authorize(&mut self, store: &Store, user: &UserInfo, a: &Attributes) -> Decision {
        let policy = [rid::CLUSTERROLE, rid::CLUSTERROLEBINDING, rid::ROLE, rid::ROLEBINDING].map(|r| store.last_write(r));
        if policy != self.policy || self.decided.len() >= MAX_DECISIONS {
            self.policy = policy;
            self.decided.clear();
        }
        let key =
            format!("{}\0{}\0{}\0{}\0{}\0{}\0{}\0{}", user.name, user.groups.join("\u{1}"), a.verb, a.group, a.resource, a.subresource, a.namespace, a.name);
        if let Some(d) = self.decided.get(&key) {
            return d.clone();
        }
        let d = authorize(store, user, a);
        self.decided.insert(key, d.clone());
        d
    }
}

/// The authorizer chain `Node,RBAC` over the current stored policy.
pub fn authorize(store: &Store, user: &UserInfo, a: &Attributes) -> Decision {
    // Node authorizer: nodes get the rules of the `system:node` role (the real one also
    // limits each node to its own objects; kubelets here only touch their own).
    if user.groups.iter().any(|g| g == "system:nodes") {
        if let Some(role) = store.get_by(rid::CLUSTERROLE, "", "system:node") {
            if get_array(role, &["rules"]).iter().any(|r| rule_allows(r, a)) {
                return Decision::Allow;
            }
        }
    }
    let mut errors = Vec::new();
    let mut check = |role_ref: &Value, binding_ns: &str| -> bool {
        let kind = get_str(role_ref, &["kind"]).unwrap_or("");
        let rname = get_str(role_ref, &["name"]).unwrap_or("");
        let role = match kind {
            "ClusterRole" => store.get_by(rid::CLUSTERROLE, "", rname),
            "Role" => store.get_by(rid::ROLE, binding_ns, rname),
            _ => None,
        };
        match role {
            Some(r) => get_array(r, &["rules"]).iter().any(|rule| rule_allows(rule, a)),
            None => {
                let what = if kind == "Role" { "role" } else { "clusterrole" };
                errors.push(format!("{what}.rbac.authorization.k8s.io {rname:?} not found"));
                false
            }
        }
    };
    for b in store.list(rid::CLUSTERROLEBINDING, None) {
        if get_array(b, &["subjects"]).iter().any(|s| subject_matches(s, user, "")) {
            if let Some(r) = b.get("roleRef") {
                if check(r, "") {
                    return Decision::Allow;
                }
            }
        }
    }
    if !a.namespace.is_empty() {
        for b in store.list(rid::ROLEBINDING, Some(a.namespace)) {
            if get_array(b, &["subjects"]).iter().any(|s| subject_matches(s, user, a.namespace)) {
                if let Some(r) = b.get("roleRef") {
                    if check(r, a.namespace) {
                        return Decision::Allow;
                    }
                }
            }
        }
    }
    if errors.is_empty() {
        Decision::Deny(None)
    } else {
        errors.sort_stable();
        errors.dedup();
        let joined = if errors.len() == 1 { errors[0].clone() } else { format!("[{}]", errors.join(", ")) };
        Decision::Deny(Some(format!("RBAC: {joined}")))
    }
}

/// The rules that apply to `user` in `namespace` (`SelfSubjectRulesReview`, what
/// `kubectl auth can-i --list` prints): resource rules and non-resource rules of every
/// ClusterRoleBinding and of the namespace's RoleBindings that name the user.
pub fn rules_for(store: &Store, user: &UserInfo, namespace: &str) -> (Vec<Value>, Vec<Value>) {
    let mut roles: Vec<Value> = Vec::new();
    let mut collect = |role_ref: &Value, binding_ns: &str| {
        let rname = get_str(role_ref, &["name"]).unwrap_or("");
        let role = match get_str(role_ref, &["kind"]) {
            Some("ClusterRole") => store.get_by(rid::CLUSTERROLE, "", rname),
            Some("Role") => store.get_by(rid::ROLE, binding_ns, rname),
            _ => None,
        };
        if let Some(r) = role {
            roles.extend(get_array(r, &["rules"]).iter().cloned());
        }
    };
    for b in store.list(rid::CLUSTERROLEBINDING, None) {
        if get_array(b, &["subjects"]).iter().any(|s| subject_matches(s, user, "")) {
            if let Some(r) = b.get("roleRef") {
                collect(r, "");
            }
        }
    }
    if !namespace.is_empty() {
        for b in store.list(rid::ROLEBINDING, Some(namespace)) {
            if get_array(b, &["subjects"]).iter().any(|s| subject_matches(s, user, namespace)) {
                if let Some(r) = b.get("roleRef") {
                    collect(r, namespace);
                }
            }
        }
    }
    let (mut resource, mut non_resource) = (Vec::new(), Vec::new());
    for r in roles {
        let verbs = r.get("verbs").cloned().unwrap_or(json!([]));
        if let Some(urls) = r.get("nonResourceURLs") {
            non_resource.push(json!({"verbs": verbs, "nonResourceURLs": urls.clone()}));
        } else {
            let mut out = json!({"verbs": verbs});
            for k in ["apiGroups", "resources", "resourceNames"] {
                if let Some(v) = r.get(k) {
                    out[k] = v.clone();
                }
            }
            resource.push(out);
        }
    }
    (resource, non_resource)
}

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

const READ: &[&str] = &["get", "list", "watch"];
const ALL_VERBS: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

fn cluster_role(n: &str, rules: Vec<Value>) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": n, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
        "rules": rules})
}

fn cluster_role_binding(n: &str, role: &str, subject: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": n, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [subject]})
}

fn event_rule() -> Value {
    rule(&["", "events.k8s.io"], &["events"], &["create", "patch", "update"])
}

/// The kube-system service accounts the built-in controllers act as; each is bound to
/// its `system:controller:<name>` ClusterRole.
pub const CONTROLLER_ACCOUNTS: &[&str] = &[
    "deployment-controller",
    "replicaset-controller",
    "endpointslice-controller",
    "generic-garbage-collector",
    "pod-garbage-collector",
    "node-controller",
    "taint-eviction-controller",
    "namespace-controller",
    "statefulset-controller",
    "daemon-set-controller",
    "job-controller",
    "cronjob-controller",
    "ttl-after-finished-controller",
    "disruption-controller",
    "replication-controller",
    "horizontal-pod-autoscaler",
    "attachdetach-controller",
    "resourcequota-controller",
    "persistent-volume-binder",
    "pvc-protection-controller",
    "pv-protection-controller",
    "expand-controller",
];

/// The kube-system service account of the simulated CSI drivers' controller side (their
/// external-provisioner and external-resizer sidecars), bound to those sidecars'
/// ClusterRoles (`deploy/kubernetes/rbac.yaml` of each).
pub const CSI_PROVISIONER_ACCOUNT: &str = "csi-provisioner";

/// The bootstrap ClusterRoles and ClusterRoleBindings, in creation order.
pub fn bootstrap_policy() -> Vec<Value> {
    let workload_res = &["deployments", "deployments/scale", "replicasets", "replicasets/scale", "daemonsets", "statefulsets", "statefulsets/scale"];
    let core_res = &["pods", "services", "configmaps", "secrets", "serviceaccounts", "persistentvolumeclaims", "endpoints", "pods/log", "pods/eviction"];
    let mut out = vec![
        cluster_role("cluster-admin", vec![rule(&["*"], &["*"], &["*"])]),
        cluster_role(
            "admin",
            vec![
                rule(&[""], core_res, ALL_VERBS),
                rule(&["apps"], workload_res, ALL_VERBS),
                rule(&["batch"], &["jobs", "cronjobs"], ALL_VERBS),
                rule(&["rbac.authorization.k8s.io"], &["roles", "rolebindings"], ALL_VERBS),
                rule(&["discovery.k8s.io"], &["endpointslices"], READ),
                rule(&[""], &["events", "limitranges", "resourcequotas", "namespaces"], READ),
            ],
        ),
        cluster_role(
            "edit",
            vec![
                rule(&[""], core_res, ALL_VERBS),
                rule(&["apps"], workload_res, ALL_VERBS),
                rule(&["batch"], &["jobs", "cronjobs"], ALL_VERBS),
                rule(&["discovery.k8s.io"], &["endpointslices"], READ),
                rule(&[""], &["events", "limitranges", "resourcequotas", "namespaces"], READ),
            ],
        ),
        cluster_role(
            "view",
            vec![rule(
                &["", "apps", "batch", "discovery.k8s.io"],
                &[
                    "pods",
                    "services",
                    "configmaps",
                    "endpoints",
                    "events",
                    "deployments",
                    "replicasets",
                    "daemonsets",
                    "statefulsets",
                    "jobs",
                    "cronjobs",
                    "endpointslices",
                    "namespaces",
                    "limitranges",
                    "resourcequotas",
                    "persistentvolumeclaims",
                    "serviceaccounts",
                    "pods/log",
                ],
                READ,
            )],
        ),
        cluster_role(
            "system:kube-scheduler",
            vec![
                event_rule(),
                rule(&[""], &["nodes", "namespaces", "services", "persistentvolumeclaims", "persistentvolumes", "replicationcontrollers"], READ),
                rule(&[""], &["pods"], &["delete", "get", "list", "watch"]),
                rule(&[""], &["bindings", "pods/binding"], &["create"]),
                rule(&[""], &["pods/status"], &["patch", "update"]),
                rule(&["apps"], &["replicasets", "statefulsets"], READ),
                rule(&["policy"], &["poddisruptionbudgets"], READ),
                rule(&["storage.k8s.io"], &["storageclasses", "csinodes", "csidrivers", "csistoragecapacities"], READ),
                rule(&["coordination.k8s.io"], &["leases"], &["create", "get", "update"]),
            ],
        ),
        // Bound to the scheduler for VolumeBinding's PreBind (pre-binding volumes, marking
        // claims to provision).
        cluster_role(
            "system:volume-scheduler",
            vec![
                rule(&[""], &["persistentvolumes"], &["get", "list", "patch", "update", "watch"]),
                rule(&["storage.k8s.io"], &["storageclasses"], &["get", "list", "watch"]),
                rule(&[""], &["persistentvolumeclaims"], &["get", "list", "patch", "update", "watch"]),
            ],
        ),
        cluster_role(
            "system:node",
            vec![
                event_rule(),
                rule(&[""], &["nodes"], &["create", "get", "list", "watch", "patch", "update"]),
                rule(&[""], &["nodes/status"], &["patch", "update"]),
                rule(&[""], &["pods"], &["get", "list", "watch", "create", "delete"]),
                rule(&[""], &["pods/status"], &["patch", "update"]),
                rule(&[""], &["pods/eviction"], &["create"]),
                rule(&[""], &["configmaps", "secrets", "services", "persistentvolumeclaims", "persistentvolumes"], &["get", "list", "watch"]),
                rule(&[""], &["serviceaccounts/token"], &["create"]),
                rule(&[""], &["persistentvolumeclaims/status"], &["get", "update", "patch"]),
                rule(&["coordination.k8s.io"], &["leases"], &["create", "delete", "get", "patch", "update"]),
                rule(&["storage.k8s.io"], &["volumeattachments"], &["get"]),
                rule(&["storage.k8s.io"], &["csidrivers"], &["get", "watch", "list"]),
                rule(&["storage.k8s.io"], &["csinodes"], &["get", "create", "update", "patch", "delete"]),
            ],
        ),
        cluster_role(
            "system:controller:deployment-controller",
            vec![
                rule(&["apps", "extensions"], &["deployments"], &["get", "list", "update", "watch"]),
                rule(&["apps", "extensions"], &["deployments/status"], &["update"]),
                rule(&["apps", "extensions"], &["deployments/finalizers"], &["update"]),
                rule(&["apps", "extensions"], &["replicasets"], &["create", "delete", "get", "list", "patch", "update", "watch"]),
                rule(&[""], &["pods"], &["get", "list", "update", "watch"]),
                event_rule(),
            ],
        ),
        cluster_role(
            "system:controller:replicaset-controller",
            vec![
                rule(&["apps", "extensions"], &["replicasets"], &["get", "list", "update", "watch"]),
                rule(&["apps", "extensions"], &["replicasets/status"], &["update"]),
                rule(&["apps", "extensions"], &["replicasets/finalizers"], &["update"]),
                rule(&[""], &["pods"], &["create", "delete", "list", "patch", "watch"]),
                event_rule(),
            ],
        ),
        cluster_role(
            "system:controller:endpointslice-controller",
            vec![
                rule(&[""], &["services", "pods", "nodes"], &["get", "list", "watch"]),
                rule(&[""], &["services/finalizers"], &["update"]),
                rule(&["discovery.k8s.io"], &["endpointslices"], &["create", "delete", "get", "list", "update"]),
                event_rule(),
            ],
        ),
        cluster_role(
            "system:controller:generic-garbage-collector",
            vec![rule(&["*"], &["*"], &["delete", "get", "list", "patch", "update", "watch"]), event_rule()],
        ),
        cluster_role(
            "system:controller:node-controller",
            vec![
                rule(&[""], &["nodes"], &["delete", "get", "list", "patch", "update"]),
                rule(&[""], &["nodes/status"], &["patch", "update"]),
                rule(&[""], &["pods/status"], &["patch", "update"]),
                rule(&[""], &["pods"], &["delete", "list"]),
                event_rule(),
            ],
        ),
        cluster_role(
            "system:controller:taint-eviction-controller",
            vec![rule(&[""], &["pods"], &["delete", "get", "list", "watch"]), rule(&[""], &["pods/status"], &["patch"]), event_rule()],
        ),
        cluster_role(
            "system:controller:namespace-controller",
            vec![
                rule(&[""], &["namespaces"], &["delete", "get", "list", "watch"]),
                rule(&[""], &["namespaces/finalize", "namespaces/status"], &["update"]),
                rule(&["*"], &["*"], &["delete", "deletecollection", "get", "list"]),
            ],
        ),
        cluster_role(
            "system:controller:statefulset-controller",
            vec![
                rule(&[""], &["pods"], &["list", "watch"]),
                rule(&["apps"], &["statefulsets"], &["get", "list", "watch"]),
                rule(&["apps"], &["statefulsets/status"], &["update"]),
                rule(&["apps"], &["statefulsets/finalizers"], &["update"]),
                rule(&[""], &["pods"], &["get", "create", "delete", "update", "patch"]),
                rule(&["apps"], &["controllerrevisions"], &["get", "create", "delete", "update", "patch", "list", "watch"]),
                rule(&[""], &["persistentvolumeclaims"], &["get", "create", "list", "watch"]),
                rule(&[""], &["persistentvolumeclaims"], &["update", "delete"]),
                rule(&[""], &["pods/finalizers"], &["update"]),
                event_rule(),
            ],
        ),
        cluster_role(
            "system:controller:daemon-set-controller",
            vec![
                rule(&["extensions", "apps"], &["daemonsets"], &["get", "list", "watch"]),
                rule(&["extensions", "apps"], &["daemonsets/status"], &["update"]),
                rule(&["extensions", "apps"], &["daemonsets/finalizers"], &["update"]),
                rule(&[""], &["nodes"], &["list", "watch"]),
                rule(&[""], &["pods"], &["list", "watch", "create", "delete", "patch"]),
                rule(&[""], &["pods/binding"], &["create"]),
                rule(&["apps"], &["controllerrevisions"], &["get", "list", "watch", "create", "delete", "update", "patch"]),
                event_rule(),
            ],
        ),
        cluster_role(
            "system:controller:job-controller",
            vec![
                rule(&["batch"], &["jobs"], &["get", "list", "watch", "update", "patch"]),
                rule(&["batch"], &["jobs/status"], &["update"]),
                rule(&["batch"], &["jobs/finalizers"], &["update"]),
                rule(&[""], &["pods"], &["list", "watch", "create", "delete", "patch"]),
                event_rule(),
            ],
        ),
        cluster_role(
            "system:controller:cronjob-controller",
            vec![
                rule(&["batch"], &["cronjobs"], &["get", "list", "watch", "update"]),
                rule(&["batch"], &["jobs"], &["get", "list", "watch", "create", "update", "delete", "patch"]),
                rule(&["batch"], &["cronjobs/status"], &["update"]),
                rule(&["batch"], &["cronjobs/finalizers"], &["update"]),
                rule(&[""], &["pods"], &["list", "watch", "delete"]),
                event_rule(),
            ],
        ),
        cluster_role(
            "system:controller:pod-garbage-collector",
            vec![rule(&[""], &["pods"], &["list", "watch", "delete"]), rule(&[""], &["nodes"], &["get", "list"]), rule(&[""], &["pods/status"], &["patch"])],
        ),
        cluster_role("system:controller:ttl-after-finished-controller", vec![rule(&["batch"], &["jobs"], &["get", "list", "watch", "delete"]), event_rule()]),
        cluster_role(
            "system:controller:horizontal-pod-autoscaler",
            vec![
                rule(&["autoscaling"], &["horizontalpodautoscalers"], &["get", "list", "watch"]),
                rule(&["autoscaling"], &["horizontalpodautoscalers/status"], &["update"]),
                rule(&["*"], &["*/scale"], &["get", "update"]),
                rule(&[""], &["pods"], &["list"]),
                rule(&["metrics.k8s.io"], &["pods"], &["list"]),
                rule(&["custom.metrics.k8s.io"], &["*"], &["get", "list"]),
                rule(&["external.metrics.k8s.io"], &["*"], &["get", "list"]),
                event_rule(),
            ],
        ),
        cluster_role(
            "system:controller:disruption-controller",
            vec![
                rule(&["extensions", "apps"], &["deployments"], &["get", "list", "watch"]),
                rule(&["apps", "extensions"], &["replicasets"], &["get", "list", "watch"]),
                rule(&[""], &["replicationcontrollers"], &["get", "list", "watch"]),
                rule(&["policy"], &["poddisruptionbudgets"], &["get", "list", "watch"]),
                rule(&["apps"], &["statefulsets"], &["get", "list", "watch"]),
                rule(&["policy"], &["poddisruptionbudgets/status"], &["update"]),
                rule(&[""], &["pods/status"], &["patch", "update"]),
                rule(&["*"], &["*/scale"], &["get"]),
                event_rule(),
            ],
        ),
        cluster_role(
            "system:controller:replication-controller",
            vec![
                rule(&[""], &["replicationcontrollers"], &["get", "list", "watch", "update"]),
                rule(&[""], &["replicationcontrollers/status"], &["update"]),
                rule(&[""], &["replicationcontrollers/finalizers"], &["update"]),
                rule(&[""], &["pods"], &["list", "watch", "patch", "create", "delete"]),
                event_rule(),
            ],
        ),
        cluster_role(
            "system:controller:attachdetach-controller",
            vec![
                rule(&[""], &["persistentvolumes", "persistentvolumeclaims"], &["list", "watch"]),
                rule(&[""], &["nodes"], &["get", "list", "watch"]),
                rule(&[""], &["nodes/status"], &["patch", "update"]),
                rule(&[""], &["pods"], &["list", "watch"]),
                event_rule(),
                rule(&["storage.k8s.io"], &["volumeattachments"], &["get", "create", "delete", "list", "watch"]),
                rule(&["storage.k8s.io"], &["csidrivers"], &["get", "watch", "list"]),
                rule(&["storage.k8s.io"], &["csinodes"], &["get", "watch", "list"]),
            ],
        ),
        // Quota may count anything, so it may list and watch everything
        // (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go`).
        cluster_role(
            "system:controller:resourcequota-controller",
            vec![rule(&["*"], &["*"], &["list", "watch"]), rule(&[""], &["resourcequotas/status"], &["update"]), event_rule()],
        ),
        // `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go`.
        cluster_role(
            "system:controller:persistent-volume-binder",
            vec![
                rule(&[""], &["persistentvolumes"], &["get", "list", "watch", "update", "create", "delete"]),
                rule(&[""], &["persistentvolumes/status"], &["update"]),
                rule(&[""], &["persistentvolumeclaims"], &["get", "list", "watch", "update"]),
                rule(&[""], &["persistentvolumeclaims/status"], &["update"]),
                rule(&[""], &["pods"], &["list", "watch", "get", "create", "delete"]),
                rule(&["storage.k8s.io"], &["storageclasses"], &["get", "list", "watch"]),
                rule(&[""], &["endpoints"], &["get", "create", "update", "delete"]),
                rule(&[""], &["services"], &["get", "create", "delete"]),
                rule(&[""], &["secrets"], &["get"]),
                rule(&[""], &["nodes"], &["get", "list"]),
                rule(&[""], &["events"], &["watch"]),
                event_rule(),
            ],
        ),
        cluster_role(
            "system:controller:pvc-protection-controller",
            vec![
                rule(&[""], &["persistentvolumeclaims"], &["get", "list", "watch", "update"]),
                rule(&[""], &["pods"], &["get", "list", "watch"]),
                event_rule(),
            ],
        ),
        cluster_role(
            "system:controller:pv-protection-controller",
            vec![rule(&[""], &["persistentvolumes"], &["get", "list", "watch", "update"]), event_rule()],
        ),
        cluster_role(
            "system:controller:expand-controller",
            vec![
                rule(&[""], &["persistentvolumes"], &["get", "list", "watch", "update", "patch"]),
                rule(&[""], &["persistentvolumeclaims/status"], &["update", "patch"]),
                rule(&[""], &["persistentvolumeclaims"], &["get", "list", "watch"]),
                rule(&["storage.k8s.io"], &["storageclasses"], &["get", "list", "watch"]),
                rule(&[""], &["services", "endpoints"], &["get"]),
                rule(&[""], &["secrets"], &["get"]),
                event_rule(),
            ],
        ),
        cluster_role(
            "external-provisioner-runner",
            vec![
                rule(&[""], &["persistentvolumes"], &["get", "list", "watch", "create", "patch", "delete"]),
                rule(&[""], &["persistentvolumeclaims"], &["get", "list", "watch", "update"]),
                rule(&["storage.k8s.io"], &["storageclasses"], &["get", "list", "watch"]),
                rule(&[""], &["events"], &["list", "watch", "create", "update", "patch"]),
                rule(&["snapshot.storage.k8s.io"], &["volumesnapshots"], &["get", "list", "watch", "update"]),
                rule(&["snapshot.storage.k8s.io"], &["volumesnapshotcontents"], &["get", "list"]),
                rule(&["storage.k8s.io"], &["csinodes"], &["get", "list", "watch"]),
                rule(&[""], &["nodes"], &["get", "list", "watch"]),
                rule(&["storage.k8s.io"], &["volumeattachments"], &["get", "list", "watch"]),
            ],
        ),
        cluster_role(
            "external-resizer-runner",
            vec![
                rule(&[""], &["persistentvolumes"], &["get", "list", "watch", "patch"]),
                rule(&[""], &["persistentvolumeclaims"], &["get", "list", "watch"]),
                rule(&[""], &["pods"], &["get", "list", "watch"]),
                rule(&[""], &["persistentvolumeclaims/status"], &["patch"]),
                rule(&[""], &["events"], &["list", "watch", "create", "update", "patch"]),
                rule(&["storage.k8s.io"], &["volumeattributesclasses"], &["get", "list", "watch"]),
            ],
        ),
        cluster_role("system:basic-user", vec![rule(&["authorization.k8s.io"], &["selfsubjectaccessreviews", "selfsubjectrulesreviews"], &["create"])]),
    ];
    out.push(cluster_role_binding(
        "cluster-admin",
        "cluster-admin",
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters"}),
    ));
    out.push(cluster_role_binding(
        "system:kube-scheduler",
        "system:kube-scheduler",
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:kube-scheduler"}),
    ));
    out.push(cluster_role_binding(
        "system:volume-scheduler",
        "system:volume-scheduler",
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:kube-scheduler"}),
    ));
    out.push(cluster_role_binding(
        "system:basic-user",
        "system:basic-user",
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}),
    ));
    for c in CONTROLLER_ACCOUNTS {
        let n = format!("system:controller:{c}");
        out.push(cluster_role_binding(&n, &n, json!({"kind": "ServiceAccount", "name": c, "namespace": "kube-system"})));
    }
    for (binding, role) in [("csi-provisioner-role", "external-provisioner-runner"), ("csi-resizer-role", "external-resizer-runner")] {
        out.push(cluster_role_binding(binding, role, json!({"kind": "ServiceAccount", "name": CSI_PROVISIONER_ACCOUNT, "namespace": "kube-system"})));
    }
    out
}

/// The CSI drivers' external-attacher identity, installed when the cluster has storage
/// drivers: the ClusterRole of external-attacher's `deploy/kubernetes/rbac.yaml` bound to
/// `kube-system:csi-attacher`.
pub fn external_attacher_policy() -> Vec<Value> {
    let mut out = vec![
        cluster_role(
            "external-attacher-runner",
            vec![
                rule(&[""], &["persistentvolumes"], &["get", "list", "watch", "patch"]),
                rule(&["storage.k8s.io"], &["csinodes"], &["get", "list", "watch"]),
                rule(&["storage.k8s.io"], &["volumeattachments"], &["get", "list", "watch", "patch"]),
                rule(&["storage.k8s.io"], &["volumeattachments/status"], &["patch"]),
            ],
        ),
        cluster_role_binding(
            "csi-attacher-role",
            "external-attacher-runner",
            json!({"kind": "ServiceAccount", "name": "csi-attacher", "namespace": "kube-system"}),
        ),
    ];
    // Installed with the driver, not by the API server's bootstrap.
    for o in &mut out {
        if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("labels");
            m.remove("annotations");
        }
    }
    out
}

/// The cluster autoscaler's identity, installed when the cluster has node groups: the
/// ClusterRole the upstream Helm chart grants (`charts/cluster-autoscaler/templates/
/// clusterrole.yaml`, `role.yaml`) bound to `kube-system:cluster-autoscaler`.
#[inline(never)]
pub fn cluster_autoscaler_policy() -> Vec<Value> {
    let sa = json!({"kind": "ServiceAccount", "name": "cluster-autoscaler", "namespace": "kube-system"});
    let mut status_rule = rule(&[""], &["configmaps"], &["delete", "get", "update"]);
    status_rule["resourceNames"] = json!(["cluster-autoscaler-status"]);
    let mut lease_rule = rule(&["coordination.k8s.io"], &["leases"], &["get", "update"]);
    lease_rule["resourceNames"] = json!(["cluster-autoscaler"]);
    vec![
        cluster_role(
            "cluster-autoscaler",
            vec![
                rule(&[""], &["events", "endpoints"], &["create", "patch"]),
                rule(&[""], &["pods/eviction"], &["create"]),
                rule(&[""], &["pods/status"], &["update"]),
                rule(&[""], &["nodes"], &["watch", "list", "create", "delete", "get", "update"]),
                rule(
                    &[""],
                    &["namespaces", "pods", "services", "replicationcontrollers", "persistentvolumeclaims", "persistentvolumes"],
                    &["watch", "list", "get"],
                ),
                rule(&["batch", "extensions"], &["jobs"], &["get", "list", "patch", "watch"]),
                rule(&["batch"], &["cronjobs"], &["watch", "list", "get"]),
                rule(&["extensions", "apps"], &["daemonsets", "replicasets", "statefulsets"], &["watch", "list", "get"]),
                rule(&["policy"], &["poddisruptionbudgets"], &["watch", "list"]),
                rule(&["storage.k8s.io"], &["storageclasses", "csinodes", "csidrivers", "csistoragecapacities"], &["watch", "list", "get"]),
                rule(&["coordination.k8s.io"], &["leases"], &["create"]),
                lease_rule,
            ],
        ),
        cluster_role_binding("cluster-autoscaler", "cluster-autoscaler", sa.clone()),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "cluster-autoscaler", "namespace": "kube-system"},
            "rules": [rule(&[""], &["configmaps"], &["create"]), status_rule]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "cluster-autoscaler", "namespace": "kube-system"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cluster-autoscaler"}, "subjects": [sa]}),
    ]
}

/// Names of the bootstrap objects (used to keep them out of "user" listings).
pub fn is_bootstrap(obj: &Value) -> bool {
    crate::foundation::api::label(obj, "kubernetes.io/bootstrapping") == Some("rbac-defaults") || name(obj).starts_with("system:")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foundation::api::ObjectKey;
    use std::sync::Arc;

    fn store_with(objs: Vec<Value>) -> Store {
        let mut s = Store::default();
        for o in bootstrap_policy().into_iter().chain(objs) {
            let r = crate::foundation::api::resource_for_kind(get_str(&o, &["apiVersion"]).unwrap(), get_str(&o, &["kind"]).unwrap()).unwrap();
            let k = ObjectKey::new(r, crate::foundation::api::namespace(&o), name(&o));
            s.create(&k, Arc::new(o)).unwrap();
        }
        s
    }

    fn attrs<'a>(verb: &'a str, group: &'a str, resource: &'a str, ns: &'a str) -> Attributes<'a> {
        Attributes { verb, group, resource, subresource: "", namespace: ns, name: "" }
    }

    #[test]
    fn remembered_decisions_follow_the_policy_as_it_changes() {
        let mut s = store_with(vec![]);
        let mut memo = Decisions::default();
        let jane = UserInfo::new("jane", &["system:authenticated"]);
        let a = attrs("list", "", "pods", "default");
        assert_eq!(memo.authorize(&s, &jane, &a), Decision::Deny(None));
        let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "jane-view", "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}]});
        let key = ObjectKey::new(rid::ROLEBINDING, "default", "jane-view");
        s.create(&key, Arc::new(binding)).unwrap();
        assert_eq!(memo.authorize(&s, &jane, &a), Decision::Allow, "a new binding is seen at once");
        assert_eq!(memo.authorize(&s, &jane, &attrs("list", "", "pods", "other")), Decision::Deny(None), "only where it binds");
        s.delete(&key, None).unwrap();
        assert_eq!(memo.authorize(&s, &jane, &a), Decision::Deny(None), "and its removal too");
    }

    #[test]
    fn masters_may_do_anything_and_strangers_nothing() {
        let s = store_with(vec![]);
        assert!(matches!(authorize(&s, &UserInfo::admin(), &attrs("delete", "apps", "deployments", "x")), Decision::Allow));
        let jane = UserInfo::new("jane", &["system:authenticated"]);
        let a = attrs("list", "", "pods", "default");
        assert!(matches!(authorize(&s, &jane, &a), Decision::Deny(None)));
        assert_eq!(a.forbidden_cause("jane"), "User \"jane\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"");
    }

    #[test]
    fn role_bindings_grant_within_their_namespace_only() {
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "deployer", "namespace": "shop"},
            "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["create", "get"]}]});
        let rb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "payments-deployer", "namespace": "shop"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "deployer"},
            "subjects": [{"kind": "Group", "name": "payments", "apiGroup": "rbac.authorization.k8s.io"}]});
        let s = store_with(vec![role, rb]);
        let ajay = UserInfo::new("ajay", &["payments", "system:authenticated"]);
        assert!(matches!(authorize(&s, &ajay, &attrs("create", "apps", "deployments", "shop")), Decision::Allow));
        assert!(matches!(authorize(&s, &ajay, &attrs("delete", "apps", "deployments", "shop")), Decision::Deny(_)));
        assert!(matches!(authorize(&s, &ajay, &attrs("create", "apps", "deployments", "default")), Decision::Deny(_)));
    }

    #[test]
    fn a_missing_role_is_named_in_the_reason() {
        let rb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "b", "namespace": "shop"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "gone"},
            "subjects": [{"kind": "User", "name": "ajay"}]});
        let s = store_with(vec![rb]);
        let ajay = UserInfo::new("ajay", &[]);
        match authorize(&s, &ajay, &attrs("get", "", "pods", "shop")) {
            Decision::Deny(Some(r)) => assert_eq!(r, "RBAC: role.rbac.authorization.k8s.io \"gone\" not found"),
            _ => panic!("expected a denial with a reason"),
        }
    }

    #[test]
    fn controllers_and_nodes_are_allowed_their_work() {
        let s = store_with(vec![]);
        let rs = UserInfo::controller("replicaset-controller");
        assert!(matches!(authorize(&s, &rs, &attrs("create", "", "pods", "default")), Decision::Allow));
        assert!(matches!(authorize(&s, &rs, &attrs("create", "apps", "deployments", "default")), Decision::Deny(_)));
        let node = UserInfo::node("node-a");
        let mut a = attrs("update", "", "pods", "default");
        a.subresource = "status";
        assert!(matches!(authorize(&s, &node, &a), Decision::Allow));
        let sched = UserInfo::new("system:kube-scheduler", &["system:authenticated"]);
        let mut b = attrs("create", "", "pods", "default");
        b.subresource = "binding";
        assert!(matches!(authorize(&s, &sched, &b), Decision::Allow));
    }
}
