//! The kubelets, one per node, with their container runtime, CNI and volume plugins
//! (`pkg/kubelet/`: `kubelet.go`, `kubelet_pods.go`, `images/image_manager.go`,
//! `kuberuntime/`, `prober/`, `status/`, `nodelease/`).
//!
//! All kubelets share one pod informer (a field-selector watch per node would cost the
//! same fan-out) and route each pod to its node's state. A pod moves through the kubelet's
//! stages with timers: volumes (a missing ConfigMap or Secret gives FailedMount and keeps
//! it in ContainerCreating), sandbox and CNI IP from the node's pod CIDR, serial image
//! pulls through the simulated registry (ErrImagePull, then ImagePullBackOff with
//! 10s..300s back-off), container create and start, crashes with CrashLoopBackOff,
//! readiness probes, and graceful termination ending in the final delete. Each node renews
//! its Lease every 10s; a node that is down stops doing anything at all.

use crate::apiserver::{Credentials, Request};
use crate::foundation::api::{self, get, get_array, get_i64, get_str, rid, Object, ResourceId};
pub mod node;
pub mod registry;
pub mod shell;

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::apiserver::KubeletClient;
use crate::foundation::sim::{rfc3339, rfc3339_micro, Millis, Rng, Stream};
use crate::foundation::status::Status;
use crate::foundation::value::{json, Value};
use crate::loops::events::Source;
use crate::loops::informer::Informer;
use crate::loops::kubelet::registry::{Behaviour, Pull, Reference, Registry};
use crate::loops::{req_as, Controller, Cx, Fault};
use node::{lease_object, pod_cidr, NodeSpec};
use std::collections::{BTreeMap, BTreeSet, HashMap};

type Key = (String, String);

/// Go's `time.Duration.String()` for milliseconds (`1.234s`, `512ms`, `1m2.5s`).
pub fn go_duration(ms: Millis) -> String {
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let trim = |s: String| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    let secs = ms / 1000;
    let frac = ms % 1000;
    if secs < 60 {
        return format!("{}s", trim(format!("{secs}.{frac:03}")));
    }
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    let sec = format!("{}s", trim(format!("{s}.{frac:03}")));
    if h > 0 {
        format!("{h}h{m}m{sec}")
    } else {
        format!("{m}m{sec}")
    }
}

/// Whichever of two versions of a pod has the higher resourceVersion.
/// What a container's command line would print with `echo`: the `echo` commands of a
/// `sh -c` script (`echo Hello && sleep 3600`), quotes removed. Anything else a process
/// prints is not simulated.
fn echo_lines(container: &Value) -> Vec<String> {
    let words: Vec<&str> = get_array(container, &["command"]).iter().chain(get_array(container, &["args"])).filter_map(Value::as_str).collect();
    let Some(i) = words.iter().position(|w| *w == "-c") else { return vec![] };
    let Some(script) = words.get(i + 1) else { return vec![] };
    let mut out = Vec::new();
    for part in script.split(['\n', ';']).flat_map(|p| p.split("&&")) {
        let Some(rest) = part.trim().strip_prefix("echo ") else { continue };
        let rest = rest.trim();
        let unquoted = match rest.as_bytes().first() {
            Some(q @ (b'"' | b'\'')) if rest.len() >= 2 && rest.as_bytes()[rest.len() - 1] == *q => &rest[1..rest.len() - 1],
            _ => rest,
        };
        out.push(unquoted.to_string());
    }
    out
}

fn fresher<'a>(a: &'a Value, b: Option<&'a Object>) -> &'a Value {
    let rv = |o: &Value| api::resource_version(o).parse::<u64>().unwrap_or(0);
    match b {
        Some(b) if rv(b) > rv(a) => b.as_ref(),
        _ => a,
    }
}

#[derive(Debug, Clone, PartialEq)]
enum CState {
    Waiting { reason: String, message: Option<String> },
    Running { started: Millis },
    Terminated { exit: i64, reason: String, started: Millis, finished: Millis },
}

#[derive(Debug, Clone)]
struct Ctr {
    name: String,
    image: String,
    init: bool,
    state: CState,
    last: Option<CState>,
    restarts: u32,
    ready: bool,
    behaviour: Option<Behaviour>,
    image_id: String,
    container_id: String,
    pull_failures: u32,
    crash_backoff: Millis,
    probe_failures: u32,
    has_command: bool,
    readiness: Option<Value>,
    /// What the command line prints with `echo` (see [`echo_lines`]).
    echoes: Vec<String>,
    /// What the running (or last) instance wrote, and the instance before it.
    logs: Vec<String>,
    previous_logs: Option<Vec<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Volumes,
    Sandbox,
    Containers,
    Terminating,
}

#[derive(Debug, Clone)]
struct PodRt {
    uid: String,
    stage: Stage,
    ip: Option<String>,
    ip_offset: Option<u32>,
    started: Millis,
    ctrs: Vec<Ctr>,
    mount_fail_since: Option<Millis>,
    mount_backoff: Millis,
    long_mount_reported: bool,
    /// Bumped to invalidate timers set for an earlier incarnation.
    epoch: u64,
    ready_reported: bool,
    /// The pod as this kubelet last wrote it (the informer may not have seen it yet).
    last_written: Option<Object>,
}

struct Node {
    name: String,
    index: usize,
    down: bool,
    user: UserInfo,
    source: Source,
    cidr_base: u32,
    next_ip: u32,
    free_ips: BTreeSet<u32>,
    images: BTreeSet<String>,
    pull_busy_until: Millis,
    /// When each image's layers are (or will be) on disk, from pulls already queued.
    fetched: BTreeMap<String, Millis>,
    pods: BTreeMap<Key, PodRt>,
    uid: String,
}

pub struct Kubelets {
    nodes: Vec<Node>,
    index: HashMap<String, usize>,
    registry: Registry,
    rng: Rng,
    pods: Informer,
    configmaps: Informer,
    secrets: Informer,
    node_objs: Informer,
    user: UserInfo,
    started: bool,
    epoch: u64,
}

impl Kubelets {
    pub fn new(specs: &[NodeSpec], total: usize, registry: Registry, seed: u64) -> Self {
        let nodes: Vec<Node> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let user = UserInfo::node(&s.name);
                Node {
                    name: s.name.clone(),
                    index: i,
                    down: false,
                    source: Source { component: "kubelet", host: s.name.clone(), user: user.clone() },
                    user,
                    cidr_base: pod_cidr(i, total).0,
                    next_ip: 2,
                    free_ips: BTreeSet::new(),
                    images: BTreeSet::new(),
                    pull_busy_until: 0,
                    fetched: BTreeMap::new(),
                    pods: BTreeMap::new(),
                    uid: String::new(),
                }
            })
            .collect();
        let index = nodes.iter().map(|n| (n.name.clone(), n.index)).collect();
        Kubelets {
            nodes,
            index,
            registry,
            rng: Rng::new(seed, Stream::Kubelet),
            pods: Informer::new(rid::POD),
            configmaps: Informer::new(rid::CONFIGMAP),
            secrets: Informer::new(rid::SECRET),
            node_objs: Informer::new(rid::NODE),
            user: UserInfo::new("system:node:*", &["system:nodes"]),
            started: false,
            epoch: 0,
        }
    }

    fn timer_key(node: &str, key: &Key, epoch: u64, action: &str) -> String {
        format!("{node}|{}|{}|{epoch}|{action}", key.0, key.1)
    }

    /// Route informer deltas to nodes.
    fn sync_informers(&mut self, cx: &mut Cx) {
        let cm = self.configmaps.sync(&cx.api.store);
        let sec = self.secrets.sync(&cx.api.store);
        self.node_objs.sync(&cx.api.store);
        let volumes_changed = cm.deltas.iter().chain(sec.deltas.iter()).any(|d| d.kind == EventType::Added);
        let r = self.pods.sync(&cx.api.store);
        let mut touched: BTreeSet<(usize, Key)> = BTreeSet::new();
        for d in r.deltas {
            let key = (api::namespace(&d.object).to_string(), api::name(&d.object).to_string());
            let node = get_str(&d.object, &["spec", "nodeName"]).or_else(|| d.old.as_ref().and_then(|o| get_str(o, &["spec", "nodeName"])));
            if let Some(&ni) = node.and_then(|n| self.index.get(n)) {
                touched.insert((ni, key));
            }
        }
        for (ni, key) in touched {
            if !self.nodes[ni].down {
                self.reconcile(cx, ni, &key);
            }
        }
        // A ConfigMap or Secret that appears lets waiting mounts proceed at once (the
        // kubelet's volume manager watches them).
        if volumes_changed {
            let waiting: Vec<(usize, Key)> = self
                .nodes
                .iter()
                .enumerate()
                .filter(|(_, n)| !n.down)
                .flat_map(|(ni, n)| n.pods.iter().filter(|(_, rt)| rt.stage == Stage::Volumes).map(move |(k, _)| (ni, k.clone())))
                .collect();
            for (ni, key) in waiting {
                cx.user = self.nodes[ni].user.name.clone();
                self.progress(cx, ni, &key);
            }
        }
    }

    /// Compare the API's view of a pod with this node's and act on the difference.
    fn reconcile(&mut self, cx: &mut Cx, ni: usize, key: &Key) {
        cx.user = self.nodes[ni].user.name.clone();
        let pod = self.pods.get(&key.0, &key.1).cloned();
        let node_name = self.nodes[ni].name.clone();
        let bound_here = pod.as_ref().is_some_and(|p| get_str(p, &["spec", "nodeName"]) == Some(node_name.as_str()));
        let known = self.nodes[ni].pods.contains_key(key);
        match (bound_here, known) {
            (false, false) => {}
            (false, true) => {
                // Gone from the API (force-deleted, or deleted while the node was away).
                if let Some(rt) = self.nodes[ni].pods.remove(key) {
                    self.release_ip(ni, &rt);
                    cx.trace(
                        Flow::Kubelet,
                        "remove",
                        format!("Pod/{}/{}", key.0, key.1),
                        "ok",
                        "",
                        format!("kubelet on {node_name} stops containers of a pod that no longer exists"),
                    );
                }
            }
            (true, false) => {
                let pod = pod.expect("bound_here implies the pod exists");
                if matches!(get_str(&pod, &["status", "phase"]), Some("Succeeded") | Some("Failed")) && !api::is_deleting(&pod) {
                    return;
                }
                self.admit(cx, ni, key, &pod);
            }
            (true, true) => {
                let pod = pod.expect("bound_here implies the pod exists");
                let uid_changed = self.nodes[ni].pods.get(key).is_some_and(|rt| rt.uid != api::uid(&pod));
                if uid_changed {
                    if let Some(rt) = self.nodes[ni].pods.remove(key) {
                        self.release_ip(ni, &rt);
                    }
                    self.admit(cx, ni, key, &pod);
                    return;
                }
                let terminating = self.nodes[ni].pods.get(key).is_some_and(|rt| rt.stage == Stage::Terminating);
                if api::is_deleting(&pod) && !terminating {
                    self.terminate(cx, ni, key, &pod);
                }
            }
        }
    }

    fn admit(&mut self, cx: &mut Cx, ni: usize, key: &Key, pod: &Object) {
        self.epoch += 1;
        let mut ctrs = Vec::new();
        for (list, init) in [("initContainers", true), ("containers", false)] {
            for c in get_array(pod, &["spec", list]) {
                ctrs.push(Ctr {
                    name: get_str(c, &["name"]).unwrap_or("").to_string(),
                    image: get_str(c, &["image"]).unwrap_or("").to_string(),
                    init,
                    state: CState::Waiting {
                        reason: if get_array(pod, &["spec", "initContainers"]).is_empty() || init {
                            "ContainerCreating".into()
                        } else {
                            "PodInitializing".into()
                        },
                        message: None,
                    },
                    last: None,
                    restarts: 0,
                    ready: false,
                    behaviour: None,
                    image_id: String::new(),
                    container_id: String::new(),
                    pull_failures: 0,
                    crash_backoff: 0,
                    probe_failures: 0,
                    has_command: !get_array(c, &["command"]).is_empty() || !get_array(c, &["args"]).is_empty(),
                    readiness: get(c, &["readinessProbe"]).cloned(),
                    echoes: echo_lines(c),
                    logs: vec![],
                    previous_logs: None,
                });
            }
        }
        let rt = PodRt {
            uid: api::uid(pod).to_string(),
            stage: Stage::Volumes,
            ip: None,
            ip_offset: None,
            started: cx.now,
            ctrs,
            mount_fail_since: None,
            mount_backoff: 500,
            long_mount_reported: false,
            epoch: self.epoch,
            ready_reported: false,
            last_written: None,
        };
        let node = &mut self.nodes[ni];
        node.pods.insert(key.clone(), rt);
        cx.trace(
            Flow::Kubelet,
            "sync",
            format!("Pod/{}/{}", key.0, key.1),
            "ok",
            api::resource_version(pod),
            format!("kubelet on {} sees the pod bound to its node", node.name),
        );
        if api::is_deleting(pod) {
            self.terminate(cx, ni, key, pod);
            return;
        }
        self.progress(cx, ni, key);
    }

    fn missing_volume(&self, pod: &Value) -> Option<(String, String)> {
        let ns = api::namespace(pod);
        for v in get_array(pod, &["spec", "volumes"]) {
            let vname = get_str(v, &["name"]).unwrap_or("");
            let check = |kind: &str, name: &str, optional: bool| -> Option<(String, String)> {
                if optional {
                    return None;
                }
                let found = if kind == "configmap" { self.configmaps.get(ns, name).is_some() } else { self.secrets.get(ns, name).is_some() };
                (!found).then(|| (vname.to_string(), format!("{kind} {name:?} not found")))
            };
            if let Some(cm) = get(v, &["configMap"]) {
                if let Some(m) = check("configmap", get_str(cm, &["name"]).unwrap_or(""), api::get_bool(cm, &["optional"]).unwrap_or(false)) {
                    return Some(m);
                }
            }
            if let Some(s) = get(v, &["secret"]) {
                if let Some(m) = check("secret", get_str(s, &["secretName"]).unwrap_or(""), api::get_bool(s, &["optional"]).unwrap_or(false)) {
                    return Some(m);
                }
            }
            for src in get_array(v, &["projected", "sources"]) {
                if let Some(cm) = get(src, &["configMap"]) {
                    if let Some(m) = check("configmap", get_str(cm, &["name"]).unwrap_or(""), api::get_bool(cm, &["optional"]).unwrap_or(false)) {
                        return Some(m);
                    }
                }
                if let Some(s) = get(src, &["secret"]) {
                    if let Some(m) = check("secret", get_str(s, &["name"]).unwrap_or(""), api::get_bool(s, &["optional"]).unwrap_or(false)) {
                        return Some(m);
                    }
                }
            }
            if let Some(pvc) = get(v, &["persistentVolumeClaim"]) {
                let claim = get_str(pvc, &["claimName"]).unwrap_or("");
                let _ = claim;
            }
        }
        None
    }

    /// Missing env sources give CreateContainerConfigError.
    fn missing_env(&self, pod: &Value, ctr: &str) -> Option<String> {
        let ns = api::namespace(pod);
        let c =
            get_array(pod, &["spec", "containers"]).iter().chain(get_array(pod, &["spec", "initContainers"])).find(|c| get_str(c, &["name"]) == Some(ctr))?;
        for e in get_array(c, &["env"]) {
            if let Some(r) = get(e, &["valueFrom", "configMapKeyRef"]) {
                let (n, k) = (get_str(r, &["name"]).unwrap_or(""), get_str(r, &["key"]).unwrap_or(""));
                if api::get_bool(r, &["optional"]) == Some(true) {
                    continue;
                }
                match self.configmaps.get(ns, n) {
                    None => return Some(format!("configmap {n:?} not found")),
                    Some(cm) if get(cm, &["data", k]).is_none() => return Some(format!("couldn't find key {k} in ConfigMap {ns}/{n}")),
                    _ => {}
                }
            }
            if let Some(r) = get(e, &["valueFrom", "secretKeyRef"]) {
                let (n, k) = (get_str(r, &["name"]).unwrap_or(""), get_str(r, &["key"]).unwrap_or(""));
                if api::get_bool(r, &["optional"]) == Some(true) {
                    continue;
                }
                match self.secrets.get(ns, n) {
                    None => return Some(format!("secret {n:?} not found")),
                    Some(s) if get(s, &["data", k]).is_none() && get(s, &["stringData", k]).is_none() => {
                        return Some(format!("couldn't find key {k} in Secret {ns}/{n}"))
                    }
                    _ => {}
                }
            }
        }
        for e in get_array(c, &["envFrom"]) {
            if let Some(r) = get(e, &["configMapRef"]) {
                let n = get_str(r, &["name"]).unwrap_or("");
                if api::get_bool(r, &["optional"]) != Some(true) && self.configmaps.get(ns, n).is_none() {
                    return Some(format!("configmap {n:?} not found"));
                }
            }
            if let Some(r) = get(e, &["secretRef"]) {
                let n = get_str(r, &["name"]).unwrap_or("");
                if api::get_bool(r, &["optional"]) != Some(true) && self.secrets.get(ns, n).is_none() {
                    return Some(format!("secret {n:?} not found"));
                }
            }
        }
        None
    }

    fn release_ip(&mut self, ni: usize, rt: &PodRt) {
        if let Some(o) = rt.ip_offset {
            self.nodes[ni].free_ips.insert(o);
        }
    }

    /// Advance a pod as far as it can go now.
    fn progress(&mut self, cx: &mut Cx, ni: usize, key: &Key) {
        let Some(pod) = self.pods.get(&key.0, &key.1).cloned() else { return };
        let Some(stage) = self.nodes[ni].pods.get(key).map(|r| r.stage) else { return };
        let obj = format!("Pod/{}/{}", key.0, key.1);
        let node_name = self.nodes[ni].name.clone();
        let epoch = self.nodes[ni].pods[key].epoch;
        match stage {
            Stage::Volumes => {
                if let Some((vol, why)) = self.missing_volume(&pod) {
                    let rt = self.nodes[ni].pods.get_mut(key).expect("checked above");
                    let first = rt.mount_fail_since.is_none();
                    let since = *rt.mount_fail_since.get_or_insert(cx.now);
                    let backoff = rt.mount_backoff;
                    rt.mount_backoff = (rt.mount_backoff * 2).min(122_000);
                    let long = !rt.long_mount_reported && cx.now >= since + 123_000;
                    if long {
                        rt.long_mount_reported = true;
                    }
                    let msg = format!("MountVolume.SetUp failed for volume {vol:?} : {why}");
                    cx.trace(Flow::NodeError, "volumes", obj.clone(), "error", "", msg.clone());
                    let src = self.nodes[ni].source.clone();
                    cx.event(&src, &pod, None, "Warning", "FailedMount", &msg, None);
                    if long {
                        let all: Vec<String> = get_array(&pod, &["spec", "volumes"]).iter().filter_map(|v| get_str(v, &["name"])).map(str::to_string).collect();
                        let m = format!("Unable to attach or mount volumes: unmounted volumes=[{vol}], unattached volumes=[{}], failed to process volumes=[]: timed out waiting for the condition", all.join(" "));
                        cx.event(&src, &pod, None, "Warning", "FailedMount", &m, None);
                    }
                    if first {
                        self.write_status(cx, ni, key);
                    }
                    cx.every(backoff, Self::timer_key(&node_name, key, epoch, "progress"));
                    return;
                }
                let rt = self.nodes[ni].pods.get_mut(key).expect("checked above");
                rt.stage = Stage::Sandbox;
                cx.after(300, Self::timer_key(&node_name, key, epoch, "sandbox"));
                cx.trace(Flow::Runtime, "volumes", obj, "ok", "", format!("{} volume(s) mounted", get_array(&pod, &["spec", "volumes"]).len()));
            }
            Stage::Sandbox => {}
            Stage::Containers => self.run_containers(cx, ni, key, &pod),
            Stage::Terminating => {}
        }
    }

    fn sandbox_ready(&mut self, cx: &mut Cx, ni: usize, key: &Key) {
        let node = &mut self.nodes[ni];
        let Some(rt) = node.pods.get_mut(key) else { return };
        if rt.stage != Stage::Sandbox {
            return;
        }
        let offset = match node.free_ips.pop_first() {
            Some(o) => o,
            None => {
                let o = node.next_ip;
                node.next_ip += 1;
                o
            }
        };
        let ip = crate::apiserver::ip_string(node.cidr_base + offset);
        rt.ip = Some(ip.clone());
        rt.ip_offset = Some(offset);
        rt.stage = Stage::Containers;
        let name = node.name.clone();
        cx.trace(
            Flow::Runtime,
            "network",
            format!("Pod/{}/{}", key.0, key.1),
            "ok",
            "",
            format!("CRI created the pod sandbox on {name}; CNI assigned IP {ip}"),
        );
        self.write_status(cx, ni, key);
        if let Some(pod) = self.pods.get(&key.0, &key.1).cloned() {
            self.run_containers(cx, ni, key, &pod);
        }
    }

    /// Start whatever container is next: init containers one by one, then the rest.
    fn run_containers(&mut self, cx: &mut Cx, ni: usize, key: &Key, pod: &Object) {
        let node_name = self.nodes[ni].name.clone();
        let Some(rt) = self.nodes[ni].pods.get(key) else { return };
        let epoch = rt.epoch;
        let n = rt.ctrs.len();
        for i in 0..n {
            let (init, waiting_fresh, state) = {
                let c = &self.nodes[ni].pods[key].ctrs[i];
                (c.init, matches!(&c.state, CState::Waiting { reason, .. } if reason == "ContainerCreating" || reason == "PodInitializing"), c.state.clone())
            };
            if init {
                match state {
                    CState::Terminated { exit: 0, .. } => continue,
                    CState::Waiting { .. } if waiting_fresh => {
                        self.start_container(cx, ni, key, i, pod);
                        return;
                    }
                    _ => return,
                }
            }
            if waiting_fresh {
                self.start_container(cx, ni, key, i, pod);
            }
        }
        let _ = (node_name, epoch);
    }

    /// Pull (if needed), then create and start container `i`.
    fn start_container(&mut self, cx: &mut Cx, ni: usize, key: &Key, i: usize, pod: &Object) {
        let node_name = self.nodes[ni].name.clone();
        let epoch = self.nodes[ni].pods[key].epoch;
        let c = self.nodes[ni].pods[key].ctrs[i].clone();
        let obj = format!("Pod/{}/{}", key.0, key.1);
        let field = if c.init { format!("spec.initContainers{{{}}}", c.name) } else { format!("spec.containers{{{}}}", c.name) };
        let src = self.nodes[ni].source.clone();
        let policy = get_array(pod, &["spec", if c.init { "initContainers" } else { "containers" }])
            .iter()
            .find(|x| get_str(x, &["name"]) == Some(c.name.as_str()))
            .and_then(|x| get_str(x, &["imagePullPolicy"]))
            .unwrap_or("IfNotPresent")
            .to_string();
        let pull = self.registry.pull(&c.image);
        let full = Reference::parse(&c.image).map(|r| r.full()).unwrap_or_else(|| c.image.clone());
        let present = self.nodes[ni].images.contains(&full);
        match pull {
            Pull::Invalid(msg) => {
                self.set_state(ni, key, i, CState::Waiting { reason: "InvalidImageName".into(), message: Some(msg.clone()) });
                cx.event(&src, pod, Some(&field), "Warning", "InspectFailed", &msg, None);
                cx.event(&src, pod, Some(&field), "Warning", "Failed", "Error: InvalidImageName", None);
                cx.trace(Flow::NodeError, "image", obj, "error", "", msg);
                self.write_status(cx, ni, key);
            }
            _ if policy == "Never" && !present => {
                let msg = format!("Container image {:?} is not present with pull policy of Never", c.image);
                self.set_state(ni, key, i, CState::Waiting { reason: "ErrImageNeverPull".into(), message: Some(msg.clone()) });
                cx.event(&src, pod, Some(&field), "Warning", "ErrImageNeverPull", &msg, None);
                cx.trace(Flow::NodeError, "image", obj, "error", "", msg);
                self.write_status(cx, ni, key);
            }
            Pull::Ok { behaviour, .. } if present && policy != "Always" => {
                cx.event(
                    &src,
                    pod,
                    Some(&field),
                    "Normal",
                    "Pulled",
                    &format!("Container image {:?} already present on machine and can be accessed by the pod", c.image),
                    None,
                );
                self.nodes[ni].pods.get_mut(key).expect("exists").ctrs[i].behaviour = Some(behaviour);
                cx.trace(Flow::Runtime, "image", obj, "ok", "", format!("image {} already present on {node_name}", c.image));
                self.create_container(cx, ni, key, i);
            }
            pull => {
                // Serial pulls: wait for the node's earlier pulls.
                // A pull queued behind an earlier pull of the same image finds its layers
                // on disk and only resolves the manifest.
                let node = &mut self.nodes[ni];
                let start = node.pull_busy_until.max(cx.now);
                let dur = match &pull {
                    Pull::Ok { .. } if node.fetched.get(&full).is_some_and(|t| *t <= start) => 50,
                    Pull::Ok { behaviour, .. } => behaviour.pull_ms,
                    _ => 800,
                };
                if matches!(pull, Pull::Ok { .. }) {
                    node.fetched.entry(full.clone()).or_insert(start + dur);
                }
                node.pull_busy_until = start + dur;
                let done = start + dur;
                self.set_state(ni, key, i, CState::Waiting { reason: "ContainerCreating".into(), message: None });
                cx.event(&src, pod, Some(&field), "Normal", "Pulling", &format!("Pulling image {:?}", c.image), None);
                cx.trace(Flow::Runtime, "image", obj, "ok", "", format!("CRI pulling image {} on {node_name}", c.image));
                let rt = self.nodes[ni].pods.get_mut(key).expect("exists");
                rt.ctrs[i].state = CState::Waiting { reason: "Pulling".into(), message: Some(format!("{}|{}|{dur}", cx.now, done)) };
                cx.after(done - cx.now, Self::timer_key(&node_name, key, epoch, &format!("pulled:{i}")));
            }
        }
    }

    fn pulled(&mut self, cx: &mut Cx, ni: usize, key: &Key, i: usize) {
        let Some(pod) = self.pods.get(&key.0, &key.1).cloned() else { return };
        let node_name = self.nodes[ni].name.clone();
        let Some(rt) = self.nodes[ni].pods.get(key) else { return };
        let epoch = rt.epoch;
        let c = rt.ctrs[i].clone();
        let CState::Waiting { reason, message } = &c.state else { return };
        if reason != "Pulling" {
            return;
        }
        let parts: Vec<Millis> = message.as_deref().unwrap_or("").split('|').map(|p| p.parse().unwrap_or(0)).collect();
        let (asked, done, took) = match parts.as_slice() {
            [a, d, t] => (*a, *d, *t),
            _ => (cx.now, cx.now, 0),
        };
        let field = if c.init { format!("spec.initContainers{{{}}}", c.name) } else { format!("spec.containers{{{}}}", c.name) };
        let src = self.nodes[ni].source.clone();
        let obj = format!("Pod/{}/{}", key.0, key.1);
        match self.registry.pull(&c.image) {
            Pull::Ok { behaviour, digest } => {
                let full = Reference::parse(&c.image).map(|r| r.full()).unwrap_or_else(|| c.image.clone());
                self.nodes[ni].images.insert(full);
                let pull_ms = took;
                let msg = format!(
                    "Successfully pulled image {:?} in {} ({} including waiting). Image size: {} bytes.",
                    c.image,
                    go_duration(pull_ms),
                    go_duration(done.saturating_sub(asked)),
                    behaviour.size
                );
                cx.event(&src, &pod, Some(&field), "Normal", "Pulled", &msg, None);
                cx.trace(Flow::Runtime, "image", obj, "ok", "", format!("pulled {} in {}", c.image, go_duration(pull_ms)));
                let repo = Reference::parse(&c.image).map(|r| format!("{}/{}", r.registry, r.repository)).unwrap_or_default();
                let rt = self.nodes[ni].pods.get_mut(key).expect("exists");
                rt.ctrs[i].behaviour = Some(behaviour);
                rt.ctrs[i].image_id = format!("{repo}@{digest}");
                rt.ctrs[i].pull_failures = 0;
                self.create_container(cx, ni, key, i);
            }
            Pull::Err(err) | Pull::Invalid(err) => {
                let rt = self.nodes[ni].pods.get_mut(key).expect("exists");
                rt.ctrs[i].pull_failures += 1;
                let failures = rt.ctrs[i].pull_failures;
                rt.ctrs[i].state = CState::Waiting { reason: "ErrImagePull".into(), message: Some(err.clone()) };
                let msg = format!("Failed to pull image {:?}: {err}", c.image);
                cx.event(&src, &pod, Some(&field), "Warning", "Failed", &msg, None);
                cx.event(&src, &pod, Some(&field), "Warning", "Failed", "Error: ErrImagePull", None);
                cx.trace(Flow::NodeError, "image", obj, "error", "", msg);
                self.write_status(cx, ni, key);
                let backoff = (10_000u64 << (failures - 1).min(5)).min(300_000);
                // The next pod sync (about a second later) reports the back-off.
                cx.every(1000, Self::timer_key(&node_name, key, epoch, &format!("backoff:{i}:{backoff}")));
            }
        }
    }

    fn image_backoff(&mut self, cx: &mut Cx, ni: usize, key: &Key, i: usize, backoff: Millis) {
        let Some(pod) = self.pods.get(&key.0, &key.1).cloned() else { return };
        let node_name = self.nodes[ni].name.clone();
        let Some(rt) = self.nodes[ni].pods.get_mut(key) else { return };
        let epoch = rt.epoch;
        let c = &mut rt.ctrs[i];
        let prev = match &c.state {
            CState::Waiting { reason, message } if reason == "ErrImagePull" => message.clone().unwrap_or_default(),
            _ => return,
        };
        let image = c.image.clone();
        let field = if c.init { format!("spec.initContainers{{{}}}", c.name) } else { format!("spec.containers{{{}}}", c.name) };
        c.state = CState::Waiting { reason: "ImagePullBackOff".into(), message: Some(format!("Back-off pulling image {image:?}: ErrImagePull: {prev}")) };
        let src = self.nodes[ni].source.clone();
        cx.event(&src, &pod, Some(&field), "Normal", "BackOff", &format!("Back-off pulling image {image:?}"), None);
        cx.event(&src, &pod, Some(&field), "Warning", "Failed", "Error: ImagePullBackOff", None);
        cx.trace(
            Flow::NodeError,
            "image",
            format!("Pod/{}/{}", key.0, key.1),
            "error",
            "",
            format!("ImagePullBackOff: retrying {image} in {}", go_duration(backoff)),
        );
        self.write_status(cx, ni, key);
        cx.every(backoff, Self::timer_key(&node_name, key, epoch, &format!("retry-pull:{i}")));
    }

    fn create_container(&mut self, cx: &mut Cx, ni: usize, key: &Key, i: usize) {
        let Some(pod) = self.pods.get(&key.0, &key.1).cloned() else { return };
        let node_name = self.nodes[ni].name.clone();
        let src = self.nodes[ni].source.clone();
        let obj = format!("Pod/{}/{}", key.0, key.1);
        let c = self.nodes[ni].pods[key].ctrs[i].clone();
        let epoch = self.nodes[ni].pods[key].epoch;
        let field = if c.init { format!("spec.initContainers{{{}}}", c.name) } else { format!("spec.containers{{{}}}", c.name) };
        if let Some(err) = self.missing_env(&pod, &c.name) {
            self.set_state(ni, key, i, CState::Waiting { reason: "CreateContainerConfigError".into(), message: Some(err.clone()) });
            cx.event(&src, &pod, Some(&field), "Warning", "Failed", &format!("Error: {err}"), None);
            cx.trace(Flow::NodeError, "start", obj, "error", "", format!("CreateContainerConfigError: {err}"));
            self.write_status(cx, ni, key);
            cx.every(10_000, Self::timer_key(&node_name, key, epoch, &format!("retry-create:{i}")));
            return;
        }
        let id = format!("{:016x}{:016x}{:016x}{:016x}", self.rng.next_u64(), self.rng.next_u64(), self.rng.next_u64(), self.rng.next_u64());
        let b = c.behaviour.clone().unwrap_or_default();
        let rt = self.nodes[ni].pods.get_mut(key).expect("exists");
        let ctr = &mut rt.ctrs[i];
        if !ctr.container_id.is_empty() {
            ctr.previous_logs = Some(std::mem::take(&mut ctr.logs));
        }
        ctr.container_id = format!("containerd://{id}");
        ctr.state = CState::Running { started: cx.now };
        let t = rfc3339(cx.now);
        let (date, time) = (&t[..10], &t[11..19]);
        const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
        let month = MONTHS[t[5..7].parse::<usize>().unwrap_or(1).clamp(1, 12) - 1];
        let nginx = format!("{} {time}", date.replace('-', "/"));
        let redis = format!("{} {month} {} {time}.{:03}", &t[8..10], &t[..4], cx.now % 1000);
        ctr.logs = b.logs.iter().map(|l| l.replace("{nginx-time}", &nginx).replace("{redis-time}", &redis)).chain(ctr.echoes.iter().cloned()).collect();
        ctr.ready = false;
        ctr.probe_failures = 0;
        cx.event(&src, &pod, Some(&field), "Normal", "Created", "Container created", None);
        cx.event(&src, &pod, Some(&field), "Normal", "Started", "Container started", None);
        cx.trace(Flow::Runtime, "start", obj.clone(), "ok", "", format!("CRI started container {} ({})", c.name, c.image));
        // What the process does next.
        let exits_now = (b.needs_command && !c.has_command) || c.init;
        if exits_now {
            let code = 0;
            cx.after(if c.init { 1000 } else { 100 }, Self::timer_key(&node_name, key, epoch, &format!("exit:{i}:{code}")));
        } else if let Some(after) = b.crash_after_ms {
            cx.after(after, Self::timer_key(&node_name, key, epoch, &format!("exit:{i}:1")));
        }
        if !c.init {
            // Readiness: without a probe the container is ready once started.
            match &c.readiness {
                None if !b.never_ready => {
                    let rt = self.nodes[ni].pods.get_mut(key).expect("exists");
                    rt.ctrs[i].ready = true;
                }
                None => {}
                Some(p) => {
                    let delay = get_i64(p, &["initialDelaySeconds"]).unwrap_or(0).max(0) as Millis * 1000;
                    cx.after(delay.max(1), Self::timer_key(&node_name, key, epoch, &format!("probe:{i}")));
                }
            }
        }
        self.write_status(cx, ni, key);
    }

    fn probe(&mut self, cx: &mut Cx, ni: usize, key: &Key, i: usize) {
        let Some(pod) = self.pods.get(&key.0, &key.1).cloned() else { return };
        let node_name = self.nodes[ni].name.clone();
        let src = self.nodes[ni].source.clone();
        let Some(rt) = self.nodes[ni].pods.get_mut(key) else { return };
        let epoch = rt.epoch;
        let ip = rt.ip.clone().unwrap_or_default();
        let c = &mut rt.ctrs[i];
        let CState::Running { started } = c.state else { return };
        let Some(p) = c.readiness.clone() else { return };
        let b = c.behaviour.clone().unwrap_or_default();
        let period = get_i64(&p, &["periodSeconds"]).unwrap_or(10).max(1) as Millis * 1000;
        let threshold = get_i64(&p, &["failureThreshold"]).unwrap_or(3);
        let ok = !b.never_ready && cx.now >= started + b.ready_after_ms;
        let field = format!("spec.containers{{{}}}", c.name);
        if ok {
            if !c.ready {
                c.ready = true;
                c.probe_failures = 0;
                cx.trace(Flow::Ready, "probe", format!("Pod/{}/{}", key.0, key.1), "ok", "", format!("readiness probe of {} passed", c.name));
                self.write_status(cx, ni, key);
            }
            cx.every(period, Self::timer_key(&node_name, key, epoch, &format!("probe:{i}")));
            return;
        }
        c.probe_failures += 1;
        let out = if let Some(h) = get(&p, &["httpGet"]) {
            let port = match get(h, &["port"]) {
                Some(Value::Number(n)) => n.to_string(),
                Some(Value::String(s)) => s.to_string(),
                _ => "80".into(),
            };
            if cx.now < started + 2000 || b.never_ready && b.crash_after_ms.is_some() {
                format!("Get \"http://{ip}:{port}{}\": dial tcp {ip}:{port}: connect: connection refused", get_str(h, &["path"]).unwrap_or("/"))
            } else {
                "HTTP probe failed with statuscode: 503".into()
            }
        } else if let Some(t) = get(&p, &["tcpSocket"]) {
            let port = get(t, &["port"]).map(|v| v.to_string().trim_matches('"').to_string()).unwrap_or_default();
            format!("dial tcp {ip}:{port}: connect: connection refused")
        } else {
            String::new()
        };
        let was_ready = c.ready;
        if c.probe_failures as i64 >= threshold || !was_ready {
            c.ready = false;
        }
        cx.event(&src, &pod, Some(&field), "Warning", "Unhealthy", &format!("Readiness probe failed: {out}"), None);
        if b.never_ready {
            cx.trace(Flow::NodeError, "probe", format!("Pod/{}/{}", key.0, key.1), "error", "", format!("Readiness probe failed: {out}"));
        }
        if was_ready {
            self.write_status(cx, ni, key);
        }
        // Waiting for a slow start is progress; a never-ready container is not.
        if b.never_ready {
            cx.every(period, Self::timer_key(&node_name, key, epoch, &format!("probe:{i}")));
        } else {
            cx.after(period, Self::timer_key(&node_name, key, epoch, &format!("probe:{i}")));
        }
    }

    fn exited(&mut self, cx: &mut Cx, ni: usize, key: &Key, i: usize, code: i64) {
        let Some(pod) = self.pods.get(&key.0, &key.1).cloned() else { return };
        let node_name = self.nodes[ni].name.clone();
        let src = self.nodes[ni].source.clone();
        let restart_policy = get_str(&pod, &["spec", "restartPolicy"]).unwrap_or("Always").to_string();
        let Some(rt) = self.nodes[ni].pods.get_mut(key) else { return };
        let epoch = rt.epoch;
        let uid = rt.uid.clone();
        let c = &mut rt.ctrs[i];
        let CState::Running { started } = c.state else { return };
        let term = CState::Terminated { exit: code, reason: if code == 0 { "Completed".into() } else { "Error".into() }, started, finished: cx.now };
        c.ready = false;
        let init = c.init;
        let name = c.name.clone();
        let obj = format!("Pod/{}/{}", key.0, key.1);
        if init && code == 0 {
            c.state = term;
            cx.trace(Flow::Runtime, "start", obj, "ok", "", format!("init container {name} completed"));
            // Regular containers may start now.
            for other in rt.ctrs.iter_mut().filter(|x| !x.init) {
                if matches!(&other.state, CState::Waiting { reason, .. } if reason == "PodInitializing") {
                    other.state = CState::Waiting { reason: "ContainerCreating".into(), message: None };
                }
            }
            self.write_status(cx, ni, key);
            if let Some(p) = self.pods.get(&key.0, &key.1).cloned() {
                self.run_containers(cx, ni, key, &p);
            }
            return;
        }
        let restart = restart_policy == "Always" || (restart_policy == "OnFailure" && code != 0);
        if !restart {
            c.state = term;
            cx.trace(
                if code == 0 { Flow::Runtime } else { Flow::NodeError },
                "exit",
                obj,
                if code == 0 { "ok" } else { "error" },
                "",
                format!("container {name} exited with code {code}"),
            );
            self.write_status(cx, ni, key);
            return;
        }
        c.last = Some(term);
        let backoff = c.crash_backoff;
        c.crash_backoff = if backoff == 0 { 10_000 } else { (backoff * 2).min(300_000) };
        let field = format!("spec.containers{{{name}}}");
        cx.trace(Flow::NodeError, "exit", obj.clone(), "error", "", format!("container {name} exited with code {code}"));
        if backoff == 0 {
            // The first restart is immediate.
            c.state = CState::Waiting { reason: "ContainerCreating".into(), message: None };
            c.restarts += 1;
            self.write_status(cx, ni, key);
            cx.after(100, Self::timer_key(&node_name, key, epoch, &format!("restart:{i}")));
            return;
        }
        c.state = CState::Waiting {
            reason: "CrashLoopBackOff".into(),
            message: Some(format!("back-off {} restarting failed container={name} pod={}_{}({uid})", go_duration(backoff), key.1, key.0)),
        };
        cx.event(
            &src,
            &pod,
            Some(&field),
            "Warning",
            "BackOff",
            &format!("Back-off restarting failed container {name} in pod {}_{}({uid})", key.1, key.0),
            None,
        );
        cx.trace(Flow::NodeError, "restart", obj, "error", "", format!("CrashLoopBackOff: restarting {name} in {}", go_duration(backoff)));
        self.write_status(cx, ni, key);
        cx.every(backoff, Self::timer_key(&node_name, key, epoch, &format!("restart:{i}")));
    }

    fn restart_container(&mut self, cx: &mut Cx, ni: usize, key: &Key, i: usize) {
        let Some(rt) = self.nodes[ni].pods.get_mut(key) else { return };
        let c = &mut rt.ctrs[i];
        if matches!(&c.state, CState::Waiting { reason, .. } if reason == "CrashLoopBackOff") {
            c.restarts += 1;
        }
        if matches!(c.state, CState::Running { .. }) {
            return;
        }
        let src = self.nodes[ni].source.clone();
        if let Some(pod) = self.pods.get(&key.0, &key.1).cloned() {
            let field = format!("spec.containers{{{}}}", self.nodes[ni].pods[key].ctrs[i].name);
            let image = self.nodes[ni].pods[key].ctrs[i].image.clone();
            cx.event(
                &src,
                &pod,
                Some(&field),
                "Normal",
                "Pulled",
                &format!("Container image {image:?} already present on machine and can be accessed by the pod"),
                None,
            );
        }
        self.create_container(cx, ni, key, i);
    }

    fn terminate(&mut self, cx: &mut Cx, ni: usize, key: &Key, pod: &Object) {
        let node_name = self.nodes[ni].name.clone();
        let src = self.nodes[ni].source.clone();
        let Some(rt) = self.nodes[ni].pods.get_mut(key) else { return };
        rt.stage = Stage::Terminating;
        rt.epoch += 1;
        let epoch = rt.epoch;
        let grace = get_i64(pod, &["metadata", "deletionGracePeriodSeconds"]).unwrap_or(30).max(0) as Millis * 1000;
        let mut wait = 0;
        let running: Vec<(String, bool)> = rt
            .ctrs
            .iter()
            .filter(|c| matches!(c.state, CState::Running { .. }))
            .map(|c| (c.name.clone(), c.behaviour.as_ref().is_some_and(|b| b.ignores_sigterm)))
            .collect();
        for (name, ignores) in &running {
            cx.event(&src, pod, Some(&format!("spec.containers{{{name}}}")), "Normal", "Killing", &format!("Stopping container {name}"), None);
            let t = if *ignores { grace.max(2000) } else { 400.min(grace.max(1)) };
            wait = wait.max(t);
        }
        cx.trace(
            Flow::Kubelet,
            "terminate",
            format!("Pod/{}/{}", key.0, key.1),
            "ok",
            api::resource_version(pod),
            format!("kubelet on {node_name} stops {} container(s) (grace period {}s)", running.len(), grace / 1000),
        );
        cx.after(wait.max(1), Self::timer_key(&node_name, key, epoch, "stopped"));
    }

    fn stopped(&mut self, cx: &mut Cx, ni: usize, key: &Key) {
        let n = &self.nodes[ni];
        let user = n.user.clone();
        let Some(rt) = self.nodes[ni].pods.get_mut(key) else { return };
        let now = cx.now;
        for c in rt.ctrs.iter_mut() {
            if let CState::Running { started } = c.state {
                c.state = CState::Terminated { exit: 0, reason: "Completed".into(), started, finished: now };
                c.ready = false;
            }
        }
        // Final delete with grace period 0 removes the pod from the API.
        let mut r = Request::delete(rid::POD, &key.0, &key.1, Credentials::User(user.clone()));
        r.grace_period = Some(0);
        let res = cx.api.handle(req_as(r, "kubelet", &user));
        if res.is_ok() {
            cx.trace(
                Flow::Kubelet,
                "terminate",
                format!("Pod/{}/{}", key.0, key.1),
                "ok",
                "",
                "containers stopped; kubelet deleted the pod (grace period 0)".into(),
            );
        }
        if let Some(rt) = self.nodes[ni].pods.remove(key) {
            self.release_ip(ni, &rt);
        }
    }

    fn set_state(&mut self, ni: usize, key: &Key, i: usize, s: CState) {
        if let Some(rt) = self.nodes[ni].pods.get_mut(key) {
            rt.ctrs[i].state = s;
        }
    }

    /// The pod status this kubelet reports (`generateAPIPodStatus`).
    fn status_of(&self, ni: usize, pod: &Value, rt: &PodRt, now: Millis) -> Value {
        let node = &self.nodes[ni];
        let mut status = fresher(pod, rt.last_written.as_ref()).get("status").cloned().unwrap_or(json!({}));
        let ts = |t: Millis| json!(rfc3339(t));
        let ctr_json = |c: &Ctr| -> Value {
            let state = match &c.state {
                CState::Waiting { reason, message } => {
                    let reason = if reason == "Pulling" { "ContainerCreating" } else { reason.as_str() };
                    let mut w = json!({"reason": reason});
                    if let Some(m) = message.as_ref().filter(|_| reason != "ContainerCreating" && reason != "PodInitializing") {
                        w["message"] = json!(m);
                    }
                    json!({"waiting": w})
                }
                CState::Running { started } => json!({"running": {"startedAt": ts(*started)}}),
                CState::Terminated { exit, reason, started, finished } => {
                    json!({"terminated": {"exitCode": exit, "reason": reason, "startedAt": ts(*started), "finishedAt": ts(*finished), "containerID": c.container_id}})
                }
            };
            let last = match &c.last {
                Some(CState::Terminated { exit, reason, started, finished }) => {
                    json!({"terminated": {"exitCode": exit, "reason": reason, "startedAt": ts(*started), "finishedAt": ts(*finished), "containerID": c.container_id}})
                }
                _ => json!({}),
            };
            let image = Reference::parse(&c.image).map(|r| r.full()).unwrap_or_else(|| c.image.clone());
            let mut j = json!({"name": c.name, "image": image, "imageID": c.image_id, "ready": c.ready, "restartCount": c.restarts,
                "started": matches!(c.state, CState::Running { .. })});
            if let Some(m) = j.as_object_mut() {
                m.insert("state", state);
                m.insert("lastState", last);
            }
            if !c.container_id.is_empty() {
                j["containerID"] = json!(c.container_id);
            }
            j
        };
        let regular: Vec<&Ctr> = rt.ctrs.iter().filter(|c| !c.init).collect();
        let inits: Vec<&Ctr> = rt.ctrs.iter().filter(|c| c.init).collect();
        status["containerStatuses"] = Value::Array(regular.iter().map(|c| ctr_json(c)).collect());
        if !inits.is_empty() {
            status["initContainerStatuses"] = Value::Array(inits.iter().map(|c| ctr_json(c)).collect());
        }
        let initialized = inits.iter().all(|c| matches!(c.state, CState::Terminated { exit: 0, .. }));
        let all_ready = !regular.is_empty() && regular.iter().all(|c| c.ready);
        let any_started = regular.iter().any(|c| !matches!(&c.state, CState::Waiting { reason, .. } if c.last.is_none() && c.restarts == 0 && (reason == "ContainerCreating" || reason == "Pulling" || reason == "PodInitializing" || reason == "ErrImagePull" || reason == "ImagePullBackOff" || reason == "CreateContainerConfigError" || reason == "InvalidImageName" || reason == "ErrImageNeverPull")));
        let restart = get_str(pod, &["spec", "restartPolicy"]).unwrap_or("Always");
        let all_done = !regular.is_empty() && regular.iter().all(|c| matches!(c.state, CState::Terminated { .. }));
        let phase = if all_done && restart != "Always" {
            if regular.iter().all(|c| matches!(c.state, CState::Terminated { exit: 0, .. })) {
                "Succeeded"
            } else {
                "Failed"
            }
        } else if any_started && initialized {
            "Running"
        } else {
            "Pending"
        };
        status["phase"] = json!(phase);
        status["hostIP"] = json!(format!("172.18.{}.{}", (node.index + 2) / 256, (node.index + 2) % 256));
        status["hostIPs"] = json!([{"ip": status["hostIP"].clone()}]);
        if let Some(ip) = &rt.ip {
            status["podIP"] = json!(ip);
            status["podIPs"] = json!([{"ip": ip}]);
        }
        status["startTime"] = status.get("startTime").cloned().filter(|v| !v.is_null()).unwrap_or_else(|| ts(rt.started));
        // Built by moving, not through json!, which would copy the tree by serializing it.
        let mut holder = Value::Object(crate::foundation::value::Map::from_iter([("status".to_string(), status)]));
        let sandbox = rt.ip.is_some();
        crate::apiserver::set_condition(&mut holder, "PodReadyToStartContainers", if sandbox { "True" } else { "False" }, None, None, now);
        if initialized {
            crate::apiserver::set_condition(&mut holder, "Initialized", "True", None, None, now);
        } else {
            let names: Vec<&str> = inits.iter().filter(|c| !matches!(c.state, CState::Terminated { exit: 0, .. })).map(|c| c.name.as_str()).collect();
            crate::apiserver::set_condition(
                &mut holder,
                "Initialized",
                "False",
                Some("ContainersNotInitialized"),
                Some(&format!("containers with incomplete status: [{}]", names.join(" "))),
                now,
            );
        }
        let terminal = phase == "Succeeded" || phase == "Failed";
        if terminal {
            let reason = if phase == "Succeeded" { "PodCompleted" } else { "PodFailed" };
            crate::apiserver::set_condition(&mut holder, "Ready", "False", Some(reason), None, now);
            crate::apiserver::set_condition(&mut holder, "ContainersReady", "False", Some(reason), None, now);
        } else if all_ready {
            crate::apiserver::set_condition(&mut holder, "Ready", "True", None, None, now);
            crate::apiserver::set_condition(&mut holder, "ContainersReady", "True", None, None, now);
        } else {
            let names: Vec<&str> = regular.iter().filter(|c| !c.ready).map(|c| c.name.as_str()).collect();
            let msg = format!("containers with unready status: [{}]", names.join(" "));
            crate::apiserver::set_condition(&mut holder, "Ready", "False", Some("ContainersNotReady"), Some(&msg), now);
            crate::apiserver::set_condition(&mut holder, "ContainersReady", "False", Some("ContainersNotReady"), Some(&msg), now);
        }
        crate::apiserver::set_condition(&mut holder, "PodScheduled", "True", None, None, now);
        // Order as the kubelet writes them.
        let order = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"];
        if let Some(conds) = holder["status"]["conditions"].as_array_mut() {
            conds.sort_by_key(|c| order.iter().position(|o| get_str(c, &["type"]) == Some(o)).unwrap_or(9));
        }
        holder["status"].take()
    }

    fn write_status(&mut self, cx: &mut Cx, ni: usize, key: &Key) {
        let Some(pod) = self.pods.get(&key.0, &key.1).cloned() else { return };
        let Some(rt) = self.nodes[ni].pods.get(key) else { return };
        let status = self.status_of(ni, &pod, rt, cx.now);
        if fresher(&pod, rt.last_written.as_ref()).get("status") == Some(&status) {
            return;
        }
        let ready_now = status["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|x| get_str(x, &["type"]) == Some("Ready") && get_str(x, &["status"]) == Some("True")));
        let user = self.nodes[ni].user.clone();
        // The kubelet's status manager patches the status subresource.
        let body = Value::Object(crate::foundation::value::Map::from_iter([("status".to_string(), status)]));
        let r = cx.api.handle(req_as(
            Request::patch(rid::POD, &key.0, &key.1, crate::apiserver::PatchType::Merge, body, Credentials::User(user.clone())).with_sub("status"),
            "kubelet",
            &user,
        ));
        if let Ok(stored) = r {
            let rt = self.nodes[ni].pods.get_mut(key).expect("checked above");
            rt.last_written = Some(stored);
            if ready_now && !rt.ready_reported {
                rt.ready_reported = true;
                cx.trace(
                    Flow::Ready,
                    "ready",
                    format!("Pod/{}/{}", key.0, key.1),
                    "ok",
                    "",
                    format!("kubelet on {} reports the pod Ready", self.nodes[ni].name),
                );
            } else if !ready_now {
                rt.ready_reported = false;
            }
        }
    }

    fn heartbeat(&mut self, cx: &mut Cx, ni: usize) {
        cx.user = self.nodes[ni].user.name.clone();
        let n = &self.nodes[ni];
        if n.down {
            return;
        }
        let user = n.user.clone();
        let name = n.name.clone();
        let lease = cx.api.store.get_by(rid::LEASE, "kube-node-lease", &name).cloned();
        match lease {
            Some(l) => {
                let mut body = (*l).clone();
                body["spec"]["renewTime"] = json!(rfc3339_micro(cx.now));
                let _ = cx.api.handle(req_as(Request::update(rid::LEASE, "kube-node-lease", &name, body, Credentials::User(user.clone())), "kubelet", &user));
            }
            None => {
                let uid = self.node_objs.get("", &name).map(|o| api::uid(o).to_string()).unwrap_or_default();
                let _ = cx.api.handle(req_as(
                    Request::create(rid::LEASE, "kube-node-lease", lease_object(&name, &uid, cx.now), Credentials::User(user.clone())),
                    "kubelet",
                    &user,
                ));
            }
        }
        // Post Ready again if the node controller marked the node Unknown.
        if let Some(node) = self.node_objs.get("", &name).cloned() {
            let ready = crate::foundation::pod::condition(&node, "Ready").and_then(|c| get_str(c, &["status"])) == Some("True");
            if !ready {
                let mut body = (*node).clone();
                let ts = rfc3339(cx.now);
                if let Some(conds) = body["status"]["conditions"].as_array_mut() {
                    for c in conds.iter_mut() {
                        let (reason, msg) = match get_str(c, &["type"]).unwrap_or("") {
                            "Ready" => ("KubeletReady", "kubelet is posting ready status"),
                            "MemoryPressure" => ("KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                            "DiskPressure" => ("KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                            "PIDPressure" => ("KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                            _ => continue,
                        };
                        let st = if get_str(c, &["type"]) == Some("Ready") { "True" } else { "False" };
                        *c = json!({"type": c["type"].clone(), "status": st, "reason": reason, "message": msg, "lastHeartbeatTime": ts, "lastTransitionTime": ts});
                    }
                }
                if cx
                    .api
                    .handle(req_as(Request::update(rid::NODE, "", &name, body, Credentials::User(user.clone())).with_sub("status"), "kubelet", &user))
                    .is_ok()
                {
                    let src = self.nodes[ni].source.clone();
                    cx.event(&src, &node, None, "Normal", "NodeReady", &format!("Node {name} status is now: NodeReady"), None);
                    cx.trace(Flow::Kubelet, "heartbeat", format!("Node/{name}"), "ok", "", format!("kubelet on {name} posts Ready again"));
                }
            }
        }
    }
}

impl Kubelets {
    /// What `GET /api/v1/namespaces/NS/pods/NAME/log?container=C` reads from the node's
    /// runtime, with the kubelet's errors (`validateContainerLogStatus`).
    fn read_logs(&self, namespace: &str, pod: &str, container: &str, previous: bool) -> Result<Vec<String>, Status> {
        let key = (namespace.to_string(), pod.to_string());
        let Some(rt) = self.nodes.iter().find_map(|n| n.pods.get(&key).map(|rt| (n, rt))) else {
            return Err(Status::bad_request(format!("container {container:?} in pod {pod:?} is waiting to start: ContainerCreating")));
        };
        let (node, rt) = rt;
        if node.down {
            let url = format!("https://{}:10250/containerLogs/{namespace}/{pod}/{container}", node.name);
            return Err(Status::new(500, "", format!("Get {url:?}: dial tcp {}:10250: connect: no route to host", node.name)));
        }
        let Some(c) = rt.ctrs.iter().find(|c| c.name == container) else {
            return Err(Status::bad_request(format!("container {container} is not valid for pod {pod}")));
        };
        let last_terminated = matches!(c.last, Some(CState::Terminated { .. }));
        if previous {
            return match (&c.state, &c.previous_logs) {
                (CState::Running { .. }, Some(p)) if last_terminated => Ok(p.clone()),
                (CState::Waiting { .. }, _) if last_terminated && !c.container_id.is_empty() => Ok(c.logs.clone()),
                _ => Err(Status::bad_request(format!("previous terminated container {container:?} in pod {pod:?} not found"))),
            };
        }
        match &c.state {
            CState::Running { .. } | CState::Terminated { .. } if !c.container_id.is_empty() => Ok(c.logs.clone()),
            _ if last_terminated && !c.container_id.is_empty() => Ok(c.logs.clone()),
            CState::Waiting { reason, .. } => Err(Status::bad_request(match reason.as_str() {
                "ErrImagePull" => format!("container {container:?} in pod {pod:?} is waiting to start: image can't be pulled"),
                "ImagePullBackOff" => format!("container {container:?} in pod {pod:?} is waiting to start: trying and failing to pull image"),
                r => format!("container {container:?} in pod {pod:?} is waiting to start: {r}"),
            })),
            _ => Err(Status::bad_request(format!("container {container:?} in pod {pod:?} is terminated"))),
        }
    }
}

impl KubeletClient for Kubelets {
    fn container_logs(&self, namespace: &str, pod: &str, container: &str, previous: bool) -> Result<Vec<String>, Status> {
        self.read_logs(namespace, pod, container, previous)
    }
}

impl Controller for Kubelets {
    fn kubelet_client(&self) -> Option<&dyn KubeletClient> {
        Some(self)
    }
    fn name(&self) -> &'static str {
        "kubelet"
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::POD, rid::CONFIGMAP, rid::SECRET]
    }
    fn run(&mut self, cx: &mut Cx) {
        if !self.started {
            self.started = true;
            for (i, n) in self.nodes.iter_mut().enumerate() {
                n.uid = cx.api.store.get_by(rid::NODE, "", &n.name).map(|o| api::uid(o).to_string()).unwrap_or_default();
                // Stagger heartbeats over the 10s interval.
                cx.every(10_000 - ((i as Millis * 7919) % 10_000).min(9_999), format!("{}|lease", n.name));
            }
        }
        self.sync_informers(cx);
    }
    fn timer(&mut self, cx: &mut Cx, key: &str) {
        let parts: Vec<&str> = key.split('|').collect();
        let Some(&ni) = parts.first().and_then(|n| self.index.get(*n)) else { return };
        if parts.len() == 2 && parts[1] == "lease" {
            self.heartbeat(cx, ni);
            cx.every(10_000, key.to_string());
            return;
        }
        if self.nodes[ni].down || parts.len() < 5 {
            return;
        }
        self.sync_informers(cx);
        cx.user = self.nodes[ni].user.name.clone();
        let pk = (parts[1].to_string(), parts[2].to_string());
        let epoch: u64 = parts[3].parse().unwrap_or(0);
        if self.nodes[ni].pods.get(&pk).map(|r| r.epoch) != Some(epoch) {
            return;
        }
        let action: Vec<&str> = parts[4].split(':').collect();
        let idx = |k: usize| action.get(k).and_then(|v| v.parse::<usize>().ok()).unwrap_or(0);
        match action[0] {
            "progress" => self.progress(cx, ni, &pk),
            "sandbox" => self.sandbox_ready(cx, ni, &pk),
            "pulled" => self.pulled(cx, ni, &pk, idx(1)),
            "backoff" => self.image_backoff(cx, ni, &pk, idx(1), action.get(2).and_then(|v| v.parse().ok()).unwrap_or(10_000)),
            "retry-pull" | "retry-create" => {
                let i = idx(1);
                if let Some(rt) = self.nodes[ni].pods.get_mut(&pk) {
                    rt.ctrs[i].state = CState::Waiting { reason: "ContainerCreating".into(), message: None };
                }
                if let Some(pod) = self.pods.get(&pk.0, &pk.1).cloned() {
                    if action[0] == "retry-pull" {
                        self.start_container(cx, ni, &pk, i, &pod);
                    } else {
                        self.create_container(cx, ni, &pk, i);
                    }
                }
            }
            "exit" => self.exited(cx, ni, &pk, idx(1), action.get(2).and_then(|v| v.parse().ok()).unwrap_or(0)),
            "restart" => self.restart_container(cx, ni, &pk, idx(1)),
            "probe" => self.probe(cx, ni, &pk, idx(1)),
            "stopped" => self.stopped(cx, ni, &pk),
            _ => {}
        }
    }
    fn busy(&self, _now: Millis) -> bool {
        false
    }
    fn fault(&mut self, cx: &mut Cx, fault: &Fault) -> bool {
        let (name, down) = match fault {
            Fault::NodeDown(n) => (n, true),
            Fault::NodeUp(n) => (n, false),
            _ => return false,
        };
        let Some(&ni) = self.index.get(name) else { return false };
        let was = self.nodes[ni].down;
        self.nodes[ni].down = down;
        cx.user = self.nodes[ni].user.name.clone();
        let obj = format!("Node/{name}");
        if down && !was {
            cx.trace(
                Flow::Kubelet,
                "fault",
                obj,
                "error",
                "",
                format!("node {name} is down: its kubelet stops heartbeats and status updates; its containers keep running"),
            );
        } else if !down && was {
            cx.trace(Flow::Kubelet, "fault", obj, "ok", "", format!("node {name} is back: its kubelet resyncs its pods"));
            self.heartbeat(cx, ni);
            // Resync every pod the API binds here and every pod this node still runs.
            self.sync_informers(cx);
            let mut keys: BTreeSet<Key> = self.nodes[ni].pods.keys().cloned().collect();
            for p in self.pods.list(None) {
                if get_str(p, &["spec", "nodeName"]) == Some(name.as_str()) {
                    keys.insert((api::namespace(p).to_string(), api::name(p).to_string()));
                }
            }
            for k in keys {
                self.reconcile(cx, ni, &k);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_like_go() {
        assert_eq!(go_duration(512), "512ms");
        assert_eq!(go_duration(1234), "1.234s");
        assert_eq!(go_duration(3000), "3s");
        assert_eq!(go_duration(62_500), "1m2.5s");
        assert_eq!(go_duration(300_000), "5m0s");
    }
}
