//! Scenarios: plain manifests plus an optional `kubeloop.dev/v1alpha1` `Scenario`
//! document that sets the seed, the nodes, the users, the images, node groups and timed
//! steps (apply, kubectl, faults). Parsing reports problems with their document and line.
//!
//! `nodeGroups` declares groups of identical nodes that a cluster autoscaler grows when
//! pods stay Pending and shrinks when nodes stay underused; a scenario without it has no
//! autoscaler:
//!
//! ```yaml
//! nodeGroups:
//! - name: workers          # its nodes are workers-1, workers-2, ...
//!   min: 1                 # nodes that run from the start, and the floor of scale-down
//!   max: 5
//!   bootTime: 90s          # from the scale-up to the kubelet registering (default 90s)
//!   template:              # what each node has, as under `nodes`
//!     capacity: {cpu: "2", memory: 4Gi}
//!     labels: {pool: workers}
//!     taints: []
//! ```
//!
//! `storageDrivers` replaces the cluster's simulated CSI drivers (by default one zonal disk
//! driver, `disk.csi.kubeloop.dev`, behind the `standard` StorageClass); each gets a
//! CSIDriver object, and its controller side provisions the volumes of classes naming it:
//!
//! ```yaml
//! storageDrivers:
//! - name: disk.csi.kubeloop.dev   # a CSI driver name (the classes' `provisioner`)
//!   provisionSeconds: 3           # CreateVolume (default 3)
//!   attachSeconds: 2              # ControllerPublishVolume (default 2)
//!   mountSeconds: 0.5             # NodeStage and NodePublish (default 0.5)
//!   zonal: true                   # volumes live in one zone (default true)
//!   attachRequired: true          # CSIDriver attachRequired (default true)
//!   expandSeconds: 2              # ControllerExpandVolume (default 2)
//!   nodeExpansionRequired: true   # the kubelet grows the file system after (default true)
//! ```
//!
//! An image may carry a load, what its containers use besides what they really do (busy
//! loops, requests served), for `kubectl top` and the HorizontalPodAutoscaler:
//! `images: [{name: registry.example/api:1, cpu: {from: 100m, to: 900m, at: 60s}, memory: 64Mi}]`
//! runs each container at 100m until 60 s into the run, then at 900m (within its CPU
//! limit); `cpu: 250m` is a constant load. With only `name`, `cpu` and `memory`, a known
//! image keeps its own behaviour.

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::Credentials;
use crate::cluster::{default_nodes, Action, Config, Fault, NodeSpec, Step};
use crate::foundation::api::{get, get_array, get_str};
use crate::foundation::sim::parse_duration;
use crate::foundation::value::{json, Value};
use crate::loops::controllers::autoscaler::NodeGroup;
use crate::loops::csi::CsiDriverSpec;
use crate::loops::kubelet::registry::{Behaviour, Registry};

#[derive(Debug, Clone, Default)]
pub struct Scenario {
    pub name: String,
    pub seed: Option<u64>,
    pub nodes: Option<Vec<NodeSpec>>,
    pub users: Vec<(String, String, Vec<String>)>,
    pub registry: Registry,
    pub node_groups: Vec<NodeGroup>,
    /// `storageDrivers`, when the document declares them.
    pub storage_drivers: Option<Vec<CsiDriverSpec>>,
    /// `etcd: {quotaBytes: 8Mi}`: etcd's `--quota-backend-bytes`, when declared.
    pub etcd_quota: Option<u64>,
    /// `actors`: clients that misbehave on purpose.
    pub actors: Vec<crate::loops::actor::ActorSpec>,
    pub steps: Vec<Step>,
    /// Problems found while reading, as `file:line: message`.
    pub errors: Vec<String>,
}

impl Scenario {
    pub fn config(&self, seed_override: Option<u64>, trace: bool) -> Config {
        Config {
            seed: seed_override.or(self.seed).unwrap_or(1),
            nodes: self.nodes.clone().unwrap_or_else(default_nodes),
            users: self.users.clone(),
            registry: self.registry.clone(),
            node_groups: self.node_groups.clone(),
            storage_drivers: self.storage_drivers.clone().unwrap_or_else(|| Config::default().storage_drivers),
            quota_bytes: self.etcd_quota.unwrap_or(crate::apiserver::store::DEFAULT_QUOTA_BYTES),
            actors: self.actors.clone(),
            trace,
            ..Config::default()
        }
    }
}

fn duration_field(v: &Value, key: &str) -> Result<Option<u64>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => parse_duration(s).map(Some).ok_or_else(|| format!("{key}: invalid duration {s:?}")),
        Some(Value::Number(n)) => Ok(n.as_f64().map(|f| (f * 1000.0) as u64)),
        Some(other) => Err(format!("{key}: invalid duration {other}")),
    }
}

fn parse_fault(f: &Value) -> Result<Fault, String> {
    // A control-plane fault names nothing: `fault: apiserverDown`.
    if let Some(k) = f.as_str() {
        if FAULTS.contains(&k) && !CONTROL_PLANE_FAULTS.contains(&k) {
            return Err(format!("fault {k} needs a name, as in {{{k}: NAME}}"));
        }
        return fault(k, "");
    }
    let m = f.as_object().ok_or("fault must be a mapping such as {nodeDown: node-b}, or a control-plane fault such as apiserverDown")?;
    let (k, v) = m.iter().next().ok_or("fault is empty")?;
    if CONTROL_PLANE_FAULTS.contains(&k.as_str()) {
        return fault(k, "");
    }
    let v = v.as_str().ok_or_else(|| format!("fault {k} needs a name"))?;
    fault(k, v)
}

/// The faults of the control plane itself, which take no name.
pub const CONTROL_PLANE_FAULTS: &[&str] = &["apiserverDown", "apiserverUp", "etcdDown", "etcdUp", "controllerManagerDown", "controllerManagerUp"];

/// The faults a scenario (and the page) may inject, by name.
pub const FAULTS: &[&str] = &[
    "nodeDown",
    "nodeUp",
    "controllerDown",
    "controllerUp",
    "webhookDown",
    "webhookUp",
    "storageDriverDown",
    "storageDriverUp",
    "apiserverDown",
    "apiserverUp",
    "etcdDown",
    "etcdUp",
    "controllerManagerDown",
    "controllerManagerUp",
];

/// A fault by its scenario name.
pub fn fault(kind: &str, name: &str) -> Result<Fault, String> {
    let n = name.to_string();
    Ok(match kind {
        "nodeDown" => Fault::NodeDown(n),
        "nodeUp" => Fault::NodeUp(n),
        "controllerDown" => Fault::ControllerDown(n),
        "controllerUp" => Fault::ControllerUp(n),
        "webhookDown" => Fault::WebhookDown(n),
        "webhookUp" => Fault::WebhookUp(n),
        "storageDriverDown" => Fault::StorageDriverDown(n),
        "storageDriverUp" => Fault::StorageDriverUp(n),
        "apiserverDown" => Fault::ApiServerDown,
        "apiserverUp" => Fault::ApiServerUp,
        "etcdDown" => Fault::EtcdDown,
        "etcdUp" => Fault::EtcdUp,
        "controllerManagerDown" => Fault::ControllerManagerDown,
        "controllerManagerUp" => Fault::ControllerManagerUp,
        other => return Err(format!("unknown fault {other:?} (known: {})", FAULTS.join(", "))),
    })
}

/// The most nodes a scenario may declare: Kubernetes' tested limit (5,000 nodes).
pub const MAX_NODES: u64 = 5000;

/// A node's capacity, labels and taints, as `nodes` and a node group's `template` give them.
#[inline(never)]
fn node_spec(name: &str, n: &Value, at: &str) -> Result<NodeSpec, String> {
    let mut ns = NodeSpec::worker(name, "", "4", "8Gi");
    ns.labels.clear();
    if let Some(c) = get(n, &["capacity"]).and_then(Value::as_object) {
        for (k, v) in c {
            let q = match v {
                Value::String(s) => s.to_string(),
                other => other.to_string(),
            };
            match crate::foundation::quantity::parse_milli(&q) {
                None => return Err(format!("{at}.capacity.{k}: invalid quantity {q:?}")),
                Some(m) if m < 0 => return Err(format!("{at}.capacity.{k}: Invalid value: {q:?}: must be greater than or equal to 0")),
                Some(_) => {}
            }
            ns.capacity.insert(k.clone(), json!(q));
        }
    }
    if let Some(l) = get(n, &["labels"]).and_then(Value::as_object) {
        ns.labels = l.clone();
    }
    ns.taints = get_array(n, &["taints"]).to_vec();
    Ok(ns)
}

/// An image's `cpu` (`250m`, or `{from: 100m, to: 900m, at: 60s}`) and `memory` (`64Mi`).
#[inline(never)]
fn parse_load(img: &Value) -> Result<Option<crate::loops::kubelet::registry::Load>, String> {
    let q = |field: &str, v: &Value| -> Result<u64, String> {
        let text = match v {
            Value::String(s) => s.to_string(),
            other => other.to_string(),
        };
        match crate::foundation::quantity::parse_milli(&text) {
            Some(m) if m >= 0 => Ok(m as u64),
            _ => Err(format!("{field}: invalid quantity {text:?}")),
        }
    };
    let mut load = crate::loops::kubelet::registry::Load::default();
    match img.get("cpu") {
        None | Some(Value::Null) => {
            if img.get("memory").is_none() {
                return Ok(None);
            }
        }
        Some(Value::Object(m)) => {
            let from = m.get("from").map(|v| q("cpu.from", v)).transpose()?.unwrap_or(0);
            load.cpu_from = from;
            load.cpu_to = m.get("to").map(|v| q("cpu.to", v)).transpose()?.unwrap_or(from);
            load.at = duration_field(&Value::Object(m.clone()), "at").map_err(|e| format!("cpu.{e}"))?.unwrap_or(0);
        }
        Some(v) => {
            load.cpu_from = q("cpu", v)?;
            load.cpu_to = load.cpu_from;
        }
    }
    if let Some(v) = img.get("memory") {
        load.memory = Some(q("memory", v)? / 1000);
    }
    Ok(Some(load))
}

/// `storageDrivers`: each driver's name (a CSI driver name, as `ValidateCSIDriverName`
/// wants it), its times and its kind of volumes.
#[inline(never)]
fn parse_storage_drivers(drivers: &Value) -> Result<Vec<CsiDriverSpec>, String> {
    let list = drivers.as_array().ok_or("spec.storageDrivers must be a list")?;
    let mut out: Vec<CsiDriverSpec> = Vec::new();
    for (i, d) in list.iter().enumerate() {
        let at = format!("spec.storageDrivers[{i}]");
        let name = get_str(d, &["name"]).ok_or_else(|| format!("{at}.name is required"))?;
        if !crate::loops::csi::is_driver_name(name) {
            return Err(format!(
                "{at}.name: Invalid value: {name:?}: a CSI driver name must be 63 characters or less, begin and end with an alphanumeric character ([a-z0-9A-Z]) with dashes (-), dots (.), and alphanumerics between"
            ));
        }
        if out.iter().any(|o| o.name == name) {
            return Err(format!("{at}.name: Duplicate value: {name:?}"));
        }
        let mut spec = CsiDriverSpec::disk(name);
        for (key, slot) in [
            ("provisionSeconds", &mut spec.provision_ms),
            ("attachSeconds", &mut spec.attach_ms),
            ("mountSeconds", &mut spec.mount_ms),
            ("expandSeconds", &mut spec.expand_ms),
        ] {
            match d.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::Number(n)) if n.as_f64().is_some_and(|f| (0.0..=86_400.0).contains(&f)) => *slot = (n.as_f64().unwrap_or(0.0) * 1000.0) as u64,
                Some(Value::String(s)) => *slot = parse_duration(s).ok_or_else(|| format!("{at}.{key}: invalid duration {s:?}"))?,
                Some(other) => return Err(format!("{at}.{key}: Invalid value: {other}: must be a number of seconds between 0 and 86400")),
            }
        }
        for (key, slot) in
            [("zonal", &mut spec.zonal), ("attachRequired", &mut spec.attach_required), ("nodeExpansionRequired", &mut spec.node_expansion_required)]
        {
            match d.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::Bool(b)) => *slot = *b,
                Some(other) => return Err(format!("{at}.{key}: Invalid value: {other}: must be true or false")),
            }
        }
        out.push(spec);
    }
    Ok(out)
}

/// An actor: `{name, serviceAccount: NS/NAME | user: NAME, replicas, list: RESOURCE,
/// namespace, every, start}`.
#[inline(never)]
fn parse_actor(sc: &Scenario, a: &Value, i: usize) -> Result<crate::loops::actor::ActorSpec, String> {
    let at = format!("spec.actors[{i}]");
    let name = get_str(a, &["name"]).ok_or_else(|| format!("{at}.name is required"))?;
    if !crate::apiserver::validation::is_dns1123_subdomain(name) {
        return Err(format!("{at}.name: Invalid value: {name:?}: must be a lowercase RFC 1123 subdomain"));
    }
    let user = match (get_str(a, &["serviceAccount"]), get_str(a, &["user"])) {
        (Some(sa), None) => {
            let (ns, n) = sa.split_once('/').ok_or_else(|| format!("{at}.serviceAccount: Invalid value: {sa:?}: must be NAMESPACE/NAME"))?;
            let group = format!("system:serviceaccounts:{ns}");
            UserInfo::new(&format!("system:serviceaccount:{ns}:{n}"), &["system:serviceaccounts", &group, "system:authenticated"])
        }
        (None, Some(u)) => {
            let (_, _, groups) = sc.users.iter().find(|(n, _, _)| n == u).ok_or_else(|| format!("{at}.user: {u:?} is not one of spec.users"))?;
            let mut g: Vec<&str> = groups.iter().map(String::as_str).collect();
            g.push("system:authenticated");
            UserInfo::new(u, &g)
        }
        _ => return Err(format!("{at} needs one of serviceAccount (NAMESPACE/NAME) or user")),
    };
    let list = get_str(a, &["list"]).ok_or_else(|| format!("{at}.list is required (the resource it lists, such as pods)"))?;
    let resource = crate::foundation::api::resource_for_name(list).ok_or_else(|| format!("{at}.list: the server doesn't have a resource type {list:?}"))?;
    let replicas = match a.get("replicas") {
        None | Some(Value::Null) => 1,
        Some(v) => {
            v.as_u64().filter(|n| (1..=1000).contains(n)).ok_or_else(|| format!("{at}.replicas: Invalid value: {v}: must be between 1 and 1000"))? as u32
        }
    };
    let every = duration_field(a, "every").map_err(|e| format!("{at}.{e}"))?.unwrap_or(1000).max(1);
    let start = duration_field(a, "start").map_err(|e| format!("{at}.{e}"))?.unwrap_or(0);
    Ok(crate::loops::actor::ActorSpec {
        name: name.to_string(),
        user,
        replicas,
        resource,
        namespace: get_str(a, &["namespace"]).unwrap_or("").to_string(),
        every,
        start,
    })
}

fn parse_spec(sc: &mut Scenario, spec: &Value, file: &str) -> Result<(), String> {
    if let Some(s) = get(spec, &["seed"]) {
        sc.seed = Some(s.as_u64().ok_or("spec.seed must be a non-negative integer")?);
    }
    // Each part of the spec is read out of line: crates/split keeps a first visit's download
    // to the code it runs, and the page's example declares a seed and users only.
    if let Some(nodes) = get(spec, &["nodes"]).and_then(Value::as_array) {
        parse_nodes(sc, nodes)?;
    }
    for (i, g) in get_array(spec, &["nodeGroups"]).iter().enumerate() {
        parse_node_group(sc, i, g)?;
    }
    if let Some(drivers) = get(spec, &["storageDrivers"]) {
        sc.storage_drivers = Some(parse_storage_drivers(drivers)?);
    }
    if let Some(q) = get(spec, &["etcd", "quotaBytes"]).filter(|q| !q.is_null()) {
        let bytes = crate::foundation::quantity::value_milli(q).map(|m| m / 1000).filter(|b| *b > 0);
        sc.etcd_quota =
            Some(bytes.ok_or_else(|| format!("spec.etcd.quotaBytes: Invalid value: {q}: must be a positive quantity of bytes such as 8Mi"))? as u64);
    }
    for (i, u) in get_array(spec, &["users"]).iter().enumerate() {
        let name = get_str(u, &["name"]).ok_or_else(|| format!("spec.users[{i}].name is required"))?;
        let token = get_str(u, &["token"]).map(str::to_string).unwrap_or_else(|| format!("{name}-token"));
        let groups = get_array(u, &["groups"]).iter().filter_map(Value::as_str).map(str::to_string).collect();
        sc.users.push((name.to_string(), token, groups));
    }
    for (i, img) in get_array(spec, &["images"]).iter().enumerate() {
        parse_image(sc, i, img)?;
    }
    for (i, a) in get_array(spec, &["actors"]).iter().enumerate() {
        sc.actors.push(parse_actor(sc, a, i)?);
    }
    for (i, s) in get_array(spec, &["steps"]).iter().enumerate() {
        let step = parse_step(sc, i, s, file)?;
        sc.steps.push(step);
    }
    Ok(())
}

/// `spec.nodes`.
#[inline(never)]
fn parse_nodes(sc: &mut Scenario, nodes: &[Value]) -> Result<(), String> {
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (i, n) in nodes.iter().enumerate() {
        let name = get_str(n, &["name"]).ok_or_else(|| format!("spec.nodes[{i}].name is required"))?;
        // `count: N` stands for N identical nodes named `name-1` … `name-N`.
        let names: Vec<String> = match n.get("count") {
            None | Some(Value::Null) => vec![name.to_string()],
            Some(c) => match c.as_u64() {
                Some(c @ 1..=MAX_NODES) => (1..=c).map(|k| format!("{name}-{k}")).collect(),
                _ => return Err(format!("spec.nodes[{i}].count: Invalid value: {c}: must be an integer from 1 to {MAX_NODES}")),
            },
        };
        let spec = node_spec(name, n, &format!("spec.nodes[{i}]"))?;
        for name in names {
            // What the API server would say of the Node this makes (`ValidateNodeName`).
            if !crate::apiserver::validation::is_dns1123_subdomain(&name) {
                return Err(format!(
                    "spec.nodes[{i}].name: Invalid value: {name:?}: a Node's name must be a lowercase RFC 1123 subdomain of at most 253 characters"
                ));
            }
            if !seen.insert(name.clone()) {
                return Err(format!("spec.nodes[{i}].name: Duplicate value: {name:?}"));
            }
            let mut s = spec.clone();
            s.name = name;
            out.push(s);
        }
        if out.len() as u64 > MAX_NODES {
            return Err(format!("spec.nodes: Too many: {} nodes: must have at most {MAX_NODES}", out.len()));
        }
    }
    sc.nodes = Some(out);
    Ok(())
}

/// `spec.nodeGroups[i]`.
#[inline(never)]
fn parse_node_group(sc: &mut Scenario, i: usize, g: &Value) -> Result<(), String> {
    let at = format!("spec.nodeGroups[{i}]");
    let name = get_str(g, &["name"]).ok_or_else(|| format!("{at}.name is required"))?;
    // Its nodes are named after it (`workers-1`), so it must make valid Node names.
    if !crate::apiserver::validation::is_dns1123_subdomain(&format!("{name}-1")) {
        return Err(format!("{at}.name: Invalid value: {name:?}: a node group's name must be a lowercase RFC 1123 subdomain (its Nodes are named after it)"));
    }
    if sc.node_groups.iter().any(|o| o.name == name) {
        return Err(format!("{at}.name: Duplicate value: {name:?}"));
    }
    let count = |k: &str| -> Result<Option<usize>, String> {
        match g.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_u64().map(|n| Some(n as usize)).ok_or_else(|| format!("{at}.{k} must be a non-negative integer")),
        }
    };
    let min = count("min")?.unwrap_or(0);
    let max = count("max")?.ok_or_else(|| format!("{at}.max is required"))?;
    if max < min || max == 0 {
        return Err(format!("{at}.max: Invalid value: {max}: must be at least min ({min}) and at least 1"));
    }
    let boot = duration_field(g, "bootTime").map_err(|e| format!("{at}.{e}"))?.unwrap_or(90_000);
    let template = node_spec(name, get(g, &["template"]).unwrap_or(&Value::Null), &format!("{at}.template"))?;
    sc.node_groups.push(NodeGroup { name: name.to_string(), min, max, template, boot });
    Ok(())
}

/// `spec.images[i]`.
#[inline(never)]
fn parse_image(sc: &mut Scenario, i: usize, img: &Value) -> Result<(), String> {
    let name = get_str(img, &["name"]).ok_or_else(|| format!("spec.images[{i}].name is required"))?;
    if img.get("missing").and_then(Value::as_bool) == Some(true) {
        sc.registry.missing.insert(name.to_string());
        return Ok(());
    }
    let load = parse_load(img).map_err(|e| format!("spec.images[{i}].{e}"))?;
    let only_load = img.as_object().is_some_and(|m| m.keys().all(|k| matches!(k.as_str(), "name" | "cpu" | "memory")));
    if let (true, Some(l)) = (only_load, load) {
        // Only a load: the image keeps what it does (its catalogue behaviour, if known).
        sc.registry.load(name, l);
        return Ok(());
    }
    let mut b = Behaviour { load, ..Behaviour::default() };
    if img.get("crash").and_then(Value::as_bool) == Some(true) {
        b.crash_after_ms = Some(duration_field(img, "crashAfter")?.unwrap_or(3000));
    }
    b.never_ready = img.get("neverReady").and_then(Value::as_bool).unwrap_or(false);
    b.ready_after_ms = duration_field(img, "readyAfter")?.unwrap_or(0);
    b.unhealthy_after_ms = duration_field(img, "unhealthyAfter")?;
    if let Some(p) = duration_field(img, "pullTime")? {
        b.pull_ms = p;
    }
    b.ignores_sigterm = img.get("ignoresSigterm").and_then(Value::as_bool).unwrap_or(false);
    b.logs = get_array(img, &["logs"]).iter().filter_map(Value::as_str).map(str::to_string).collect();
    sc.registry.declare(name, b);
    Ok(())
}

/// `spec.steps[i]`.
#[inline(never)]
fn parse_step(sc: &Scenario, i: usize, s: &Value, file: &str) -> Result<Step, String> {
    let at = duration_field(s, "at")?.unwrap_or(0);
    let credentials = if let Some(t) = get_str(s, &["token"]) {
        Credentials::Token(t.to_string())
    } else if let Some(u) = get_str(s, &["as"]) {
        if u == "admin" {
            Credentials::User(UserInfo::admin())
        } else {
            let tok = sc.users.iter().find(|(n, _, _)| n == u).map(|(_, t, _)| t.clone()).ok_or_else(|| format!("spec.steps[{i}].as: unknown user {u:?}"))?;
            Credentials::Token(tok)
        }
    } else {
        Credentials::User(UserInfo::admin())
    };
    let action = if let Some(text) = get_str(s, &["apply"]) {
        let file = format!("{file}#steps[{i}]");
        match get(s, &["serverSide"]) {
            None | Some(Value::Bool(false)) => Action::Apply { text: text.to_string(), file },
            Some(Value::Bool(true)) => Action::ApplyServerSide { text: text.to_string(), file },
            Some(_) => return Err(format!("spec.steps[{i}].serverSide: must be true or false")),
        }
    } else if let Some(cmd) = get_str(s, &["kubectl"]) {
        Action::Kubectl(cmd.to_string())
    } else if let Some(cmd) = get_str(s, &["etcdctl"]) {
        Action::Etcdctl(cmd.to_string())
    } else if let Some(f) = get(s, &["fault"]) {
        Action::Fault(parse_fault(f).map_err(|e| format!("spec.steps[{i}].fault: {e}"))?)
    } else {
        return Err(format!("spec.steps[{i}] needs one of apply, kubectl, etcdctl or fault"));
    };
    Ok(Step { at, credentials, action })
}

/// Read one file's text into the scenario. Plain manifests become an apply at time 0.
pub fn add_file(sc: &mut Scenario, file: &str, text: &str) {
    let docs = crate::foundation::manifest::parse(text);
    let mut plain = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for d in &docs {
        for diag in &d.diagnostics {
            sc.errors.push(format!("{file}:{}:{}: {}", diag.line, diag.column, diag.message));
        }
        let Some(o) = &d.object else { continue };
        if get_str(o, &["kind"]) == Some("Scenario") && get_str(o, &["apiVersion"]).is_some_and(|a| a.starts_with("kubeloop.dev/")) {
            if let Some(n) = get_str(o, &["metadata", "name"]) {
                sc.name = n.to_string();
            }
            if let Err(e) = parse_spec(sc, o.get("spec").unwrap_or(&Value::Null), file) {
                sc.errors.push(format!("{file}:{}: {e}", d.start_line));
            }
        } else {
            let start = d.start_line.saturating_sub(1).min(lines.len());
            let end = d.end_line.min(lines.len());
            plain.push(lines[start..end].join("\n"));
        }
    }
    if !plain.is_empty() {
        sc.steps.insert(
            0,
            Step { at: 0, credentials: Credentials::User(UserInfo::admin()), action: Action::Apply { text: plain.join("\n---\n"), file: file.to_string() } },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_plane_faults_name_nothing() {
        let step = |f: &str| {
            let mut sc = Scenario::default();
            add_file(&mut sc, "s.yaml", &format!("apiVersion: kubeloop.dev/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - at: 1s\n    fault: {f}\n"));
            (sc.errors.clone(), sc.steps.first().map(|s| s.action.clone()))
        };
        assert_eq!(step("apiserverDown").1, Some(Action::Fault(Fault::ApiServerDown)));
        assert_eq!(step("{etcdUp: true}").1, Some(Action::Fault(Fault::EtcdUp)));
        assert_eq!(step("controllerManagerDown").1, Some(Action::Fault(Fault::ControllerManagerDown)));
        assert_eq!(step("nodeDown").0, ["s.yaml:1: spec.steps[0].fault: fault nodeDown needs a name, as in {nodeDown: NAME}"]);
        assert!(step("bogus").0[0].contains("unknown fault \"bogus\""), "{:?}", step("bogus").0);
    }

    #[test]
    fn storage_drivers_are_read_and_checked() {
        let read = |drivers: &str| {
            let mut sc = Scenario::default();
            add_file(&mut sc, "s.yaml", &format!("apiVersion: kubeloop.dev/v1alpha1\nkind: Scenario\nspec:\n  storageDrivers: {drivers}\n"));
            sc
        };
        let sc = read("[{name: nfs.csi.example, provisionSeconds: 10, mountSeconds: 1.5, zonal: false, attachRequired: false}]");
        assert!(sc.errors.is_empty(), "{:?}", sc.errors);
        let d = &sc.storage_drivers.as_ref().unwrap()[0];
        assert_eq!((d.provision_ms, d.attach_ms, d.mount_ms, d.zonal, d.attach_required), (10_000, 2_000, 1_500, false, false));
        assert_eq!((d.expand_ms, d.node_expansion_required), (2_000, true), "defaults");
        let d = read("[{name: a, expandSeconds: 30, nodeExpansionRequired: false}]").storage_drivers.unwrap().remove(0);
        assert_eq!((d.expand_ms, d.node_expansion_required), (30_000, false));
        assert_eq!(sc.config(None, false).storage_drivers, *sc.storage_drivers.as_ref().unwrap());
        assert_eq!(Scenario::default().config(None, false).storage_drivers, vec![CsiDriverSpec::default()], "the default driver otherwise");
        assert_eq!(read("[{provisionSeconds: 1}]").errors, vec!["s.yaml:1: spec.storageDrivers[0].name is required"]);
        assert_eq!(read("[{name: a.b}, {name: a.b}]").errors, vec!["s.yaml:1: spec.storageDrivers[1].name: Duplicate value: \"a.b\""]);
        assert!(read("[{name: -bad}]").errors[0].starts_with("s.yaml:1: spec.storageDrivers[0].name: Invalid value: \"-bad\": a CSI driver name"));
        assert_eq!(read("[{name: a, zonal: maybe}]").errors, vec!["s.yaml:1: spec.storageDrivers[0].zonal: Invalid value: \"maybe\": must be true or false"]);
        assert_eq!(
            read("[{name: a, attachSeconds: -1}]").errors,
            vec!["s.yaml:1: spec.storageDrivers[0].attachSeconds: Invalid value: -1: must be a number of seconds between 0 and 86400"]
        );
    }

    #[test]
    fn node_names_are_unique_subdomains_and_capacities_not_negative() {
        let errors = |nodes: &str| {
            let mut sc = Scenario::default();
            add_file(&mut sc, "s.yaml", &format!("apiVersion: kubeloop.dev/v1alpha1\nkind: Scenario\nspec:\n  nodes: {nodes}\n"));
            sc.errors
        };
        assert_eq!(errors("[{name: a}, {name: a}]"), vec!["s.yaml:1: spec.nodes[1].name: Duplicate value: \"a\""]);
        assert_eq!(
            errors("[{name: Node_1}]"),
            vec!["s.yaml:1: spec.nodes[0].name: Invalid value: \"Node_1\": a Node's name must be a lowercase RFC 1123 subdomain of at most 253 characters"]
        );
        assert_eq!(
            errors("[{name: a, capacity: {cpu: \"-8\"}}]"),
            vec!["s.yaml:1: spec.nodes[0].capacity.cpu: Invalid value: \"-8\": must be greater than or equal to 0"]
        );
        assert_eq!(errors("[{name: w, count: 0}]"), vec!["s.yaml:1: spec.nodes[0].count: Invalid value: 0: must be an integer from 1 to 5000"]);
        assert_eq!(errors("[{name: w-2}, {name: w, count: 3}]"), vec!["s.yaml:1: spec.nodes[1].name: Duplicate value: \"w-2\""]);
        assert_eq!(errors("[{name: a, count: 4000}, {name: b, count: 1001}]"), vec!["s.yaml:1: spec.nodes: Too many: 5001 nodes: must have at most 5000"]);
        assert!(errors("[{name: node-1.zone-a, capacity: {cpu: \"8\", memory: 16Gi}}]").is_empty());
    }

    #[test]
    fn a_counted_node_stands_for_that_many_alike() {
        let mut sc = Scenario::default();
        add_file(
            &mut sc,
            "s.yaml",
            "apiVersion: kubeloop.dev/v1alpha1\nkind: Scenario\nspec:\n  nodes:\n  - {name: a, count: 2, capacity: {cpu: \"8\"}, labels: {pool: x}}\n  - {name: b}\n",
        );
        assert!(sc.errors.is_empty(), "{:?}", sc.errors);
        let nodes = sc.nodes.expect("nodes");
        assert_eq!(nodes.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(), ["a-1", "a-2", "b"]);
        assert_eq!(nodes[1].capacity.get("cpu"), Some(&json!("8")));
        assert_eq!(nodes[1].labels.get("pool"), Some(&json!("x")));
    }

    #[test]
    fn node_groups_are_read_with_their_template_and_checked() {
        let read = |groups: &str| {
            let mut sc = Scenario::default();
            add_file(&mut sc, "s.yaml", &format!("apiVersion: kubeloop.dev/v1alpha1\nkind: Scenario\nspec:\n  nodeGroups: {groups}\n"));
            sc
        };
        let sc = read(
            "[{name: workers, min: 1, max: 3, bootTime: 2m, template: {capacity: {cpu: \"2\"}, labels: {pool: w}, taints: [{key: k, effect: NoSchedule}]}}]",
        );
        assert!(sc.errors.is_empty(), "{:?}", sc.errors);
        let g = &sc.node_groups[0];
        assert_eq!((g.name.as_str(), g.min, g.max, g.boot), ("workers", 1, 3, 120_000));
        assert_eq!(g.template.capacity.get("cpu"), Some(&json!("2")));
        assert_eq!(g.template.labels.get("pool"), Some(&json!("w")));
        assert_eq!(g.template.taints.len(), 1);
        assert_eq!(g.node_spec(2).name, "workers-2");
        assert_eq!(read("[{name: w, max: 2}]").node_groups[0].boot, 90_000, "bootTime defaults to 90s");
        assert_eq!(
            read("[{name: w, min: 3, max: 2}]").errors,
            vec!["s.yaml:1: spec.nodeGroups[0].max: Invalid value: 2: must be at least min (3) and at least 1"]
        );
        assert_eq!(read("[{name: w}]").errors, vec!["s.yaml:1: spec.nodeGroups[0].max is required"]);
        assert_eq!(read("[{name: w, max: 1}, {name: w, max: 1}]").errors, vec!["s.yaml:1: spec.nodeGroups[1].name: Duplicate value: \"w\""]);
        assert_eq!(
            read("[{name: w, max: 1, template: {capacity: {cpu: lots}}}]").errors,
            vec!["s.yaml:1: spec.nodeGroups[0].template.capacity.cpu: invalid quantity \"lots\""]
        );
    }

    #[test]
    fn scenario_documents_and_plain_manifests() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: kubeloop.dev/v1alpha1\nkind: Scenario\nmetadata: {name: t}\nspec:\n  seed: 7\n  users: [{name: ajay, token: t1, groups: [payments]}]\n  images: [{name: registry.example/x:1, crash: true}]\n  steps:\n  - at: 30s\n    as: ajay\n    kubectl: scale rs -l app=web --replicas=5\n  - at: 1m\n    fault: {nodeDown: node-b}\n";
        let mut sc = Scenario::default();
        add_file(&mut sc, "s.yaml", text);
        assert!(sc.errors.is_empty(), "{:?}", sc.errors);
        assert_eq!(sc.seed, Some(7));
        assert_eq!(sc.steps.len(), 3);
        assert_eq!(sc.steps[2].at, 60_000);
        assert_eq!(sc.steps[2].action, Action::Fault(Fault::NodeDown("node-b".into())));
        assert!(matches!(&sc.steps[0].action, Action::Apply { text, .. } if text.contains("ConfigMap")));
    }

    #[test]
    fn bad_steps_are_reported_with_their_line() {
        let mut sc = Scenario::default();
        add_file(&mut sc, "s.yaml", "apiVersion: kubeloop.dev/v1alpha1\nkind: Scenario\nspec:\n  steps:\n  - at: soon\n    kubectl: get pods\n");
        assert_eq!(sc.errors, vec!["s.yaml:1: at: invalid duration \"soon\"".to_string()]);
    }
}
