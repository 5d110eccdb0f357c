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
use crate::apiserver::{ExecInput, ExecOutput, ExecProgress};
use crate::foundation::api::{self, get, get_array, get_i64, get_str, rid, Object, ResourceId};
use crate::foundation::sort::{CollectTree, Sort};
mod expand;
pub mod node;
pub mod registry;
pub mod runtime;
pub mod session;
pub mod shell;
pub mod usage;

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::store::EventType;
use crate::apiserver::trace::Flow;
use crate::apiserver::KubeletClient;
use crate::foundation::sim::{rfc3339, rfc3339_micro, Millis, Rng, Stream};
use crate::foundation::status::Status;
use crate::foundation::value::{json, Value};
use crate::loops::csi::{attach_required, claimed_volume, csi_source, unique_volume_name, CsiDriverSpec};
use crate::loops::events::Source;
use crate::loops::informer::Informer;
use crate::loops::kubelet::registry::{Behaviour, Pull, Reference, Registry};
use crate::loops::{req_as, Controller, Cx, Fault, Machine};
use node::{lease_object, node_object, pod_cidr, NodeSpec};
use runtime::{argv, environment, mounts, root_tree, serve_http, start, CtrHost, Net, Sources, Start};
use shell::fs::{Mount, ReadView, Tree, View};
use shell::{Daemon, Host, Outcome, Process};
use std::collections::{BTreeMap, BTreeSet, HashMap};

type Key = (String, String);

pub use crate::foundation::sim::go_duration;

/// Whichever of two versions of a pod has the higher resourceVersion.
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
    Terminated { exit: i64, reason: String, message: Option<String>, started: Millis, finished: Millis },
}

/// The three probes, in the order the kubelet gates them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProbeKind {
    Startup,
    Liveness,
    Readiness,
}

impl ProbeKind {
    const ALL: [ProbeKind; 3] = [ProbeKind::Startup, ProbeKind::Liveness, ProbeKind::Readiness];
    fn field(self) -> &'static str {
        match self {
            ProbeKind::Startup => "startupProbe",
            ProbeKind::Liveness => "livenessProbe",
            ProbeKind::Readiness => "readinessProbe",
        }
    }
    fn title(self) -> &'static str {
        match self {
            ProbeKind::Startup => "Startup",
            ProbeKind::Liveness => "Liveness",
            ProbeKind::Readiness => "Readiness",
        }
    }
    fn index(self) -> usize {
        self as usize
    }
    fn parse(s: &str) -> Option<ProbeKind> {
        ProbeKind::ALL.into_iter().find(|k| k.field() == s)
    }
}

/// A probe worker's memory (`prober/worker.go`): the last result and how many times in a row.
#[derive(Debug, Clone, Copy, Default)]
struct ProbeRun {
    last: Option<bool>,
    run: u32,
}

#[derive(Debug, Clone)]
struct Ctr {
    name: String,
    image: String,
    init: bool,
    /// An init container with `restartPolicy: Always`.
    sidecar: bool,
    /// An ephemeral container (`kubectl debug`): started once, never restarted, not part
    /// of the pod's readiness or phase.
    ephemeral: bool,
    spec: Value,
    /// Its CPU limit in millicores, read once from the spec (which does not change).
    cpu_limit: Option<u64>,
    state: CState,
    last: Option<CState>,
    restarts: u32,
    ready: bool,
    /// The startup probe has passed (or there is none).
    started: bool,
    /// Shared by every container of the image (a pointer copy per container).
    behaviour: Option<std::sync::Arc<Behaviour>>,
    image_id: String,
    container_id: String,
    pull_failures: u32,
    crash_backoff: Millis,
    /// Bumped at each start; timers of an earlier instance are ignored.
    instance: u64,
    /// Its main process, and the server it became.
    proc: Option<Box<Process>>,
    daemon: Option<Daemon>,
    /// Servers alive in the container, for signals (`nginx -s quit`, `killall -0`).
    alive: BTreeSet<String>,
    root: Tree,
    mounts: Vec<Mount>,
    probes: [ProbeRun; 3],
    /// Being stopped (liveness failure, deletion): probes no longer count.
    stopping: bool,
    /// What the running (or last) instance wrote (each line with when), and the
    /// instance before it.
    logs: Vec<String>,
    log_times: Vec<Millis>,
    previous_logs: Option<(Vec<String>, Vec<Millis>)>,
    /// CPU time this instance has used.
    cpu: usage::Meter,
}

impl Ctr {
    /// A container of a pod's spec before it has run, waiting with `reason`.
    fn new(spec: &Value, init: bool, ephemeral: bool, reason: &str) -> Ctr {
        Ctr {
            name: get_str(spec, &["name"]).unwrap_or("").to_string(),
            image: get_str(spec, &["image"]).unwrap_or("").to_string(),
            init,
            sidecar: init && get_str(spec, &["restartPolicy"]) == Some("Always"),
            ephemeral,
            spec: spec.clone(),
            cpu_limit: usage::milli(get_str(spec, &["resources", "limits", "cpu"])),
            state: CState::Waiting { reason: reason.to_string(), message: None },
            last: None,
            restarts: 0,
            ready: false,
            started: false,
            behaviour: None,
            image_id: String::new(),
            container_id: String::new(),
            pull_failures: 0,
            crash_backoff: 0,
            instance: 0,
            proc: None,
            daemon: None,
            alive: BTreeSet::new(),
            root: Tree::default(),
            mounts: vec![],
            cpu: usage::Meter::default(),
            probes: [ProbeRun::default(); 3],
            stopping: false,
            logs: vec![],
            log_times: vec![],
            previous_logs: None,
        }
    }

    /// A regular container (not init, not ephemeral).
    fn regular(&self) -> bool {
        !self.init && !self.ephemeral
    }

    /// The pod spec's list the container is in.
    fn list(&self) -> &'static str {
        if self.init {
            "initContainers"
        } else if self.ephemeral {
            "ephemeralContainers"
        } else {
            "containers"
        }
    }

    /// A copy without what the container holds at run time (logs, files, process): what
    /// a probe or a start needs to read.
    fn light(&self) -> Ctr {
        Ctr {
            name: self.name.clone(),
            image: self.image.clone(),
            init: self.init,
            sidecar: self.sidecar,
            ephemeral: self.ephemeral,
            spec: self.spec.clone(),
            cpu_limit: self.cpu_limit,
            state: self.state.clone(),
            last: self.last.clone(),
            restarts: self.restarts,
            ready: self.ready,
            started: self.started,
            behaviour: self.behaviour.clone(),
            image_id: self.image_id.clone(),
            container_id: self.container_id.clone(),
            pull_failures: self.pull_failures,
            crash_backoff: self.crash_backoff,
            instance: self.instance,
            proc: None,
            daemon: self.daemon.clone(),
            alive: self.alive.clone(),
            root: Tree::default(),
            mounts: self.mounts.clone(),
            probes: self.probes,
            stopping: self.stopping,
            logs: vec![],
            log_times: vec![],
            previous_logs: None,
            cpu: self.cpu,
        }
    }
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
    /// The pod's volumes' files, by the index of `spec.volumes`.
    volumes: Vec<Tree>,
    volume_ro: Vec<bool>,
    volume_names: Vec<String>,
    /// The PersistentVolume behind each of `volumes`, if any (their files outlive the pod).
    volume_pvs: Vec<Option<String>>,
    /// When the CSI mounts under way (NodeStage, NodePublish) are done.
    mount_at: Option<Millis>,
    /// The next pod sync that reports the desired-state populator's errors.
    populator_retry_at: Millis,
    /// Waiting for attachment was traced.
    attach_wait_traced: bool,
    mount_fail_since: Option<Millis>,
    mount_backoff: Millis,
    /// Bumped to invalidate timers set for an earlier incarnation.
    epoch: u64,
    ready_reported: bool,
    /// The pod as this kubelet last wrote it (the informer may not have seen it yet).
    last_written: Option<Object>,
    /// Claims whose file systems this pod's next periodic sync grows (NodeExpandVolume).
    resize_due: BTreeSet<String>,
}

#[derive(Clone)]
struct Node {
    name: String,
    index: usize,
    down: bool,
    /// Pod timers that fell due while the node was down (a container's exit, a probe):
    /// run when it comes back, the epoch dropping those that no longer apply.
    deferred: Vec<String>,
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
    allocatable: Value,
    /// The allocatable CPU in millicores, read once.
    cpu: u64,
    /// The volumes last reported in `status.volumesInUse` (the volume manager's
    /// `ReportedInUse`: an attachable volume mounts only once reported).
    in_use_reported: BTreeSet<String>,
    /// When the node's next status update is due, and whether one is scheduled for volumes.
    next_status: Millis,
    status_pending: bool,
    /// Whether the status manager's next batch (`syncBatch`, every 10 s) is due to post
    /// pod statuses that could not be written.
    batch_pending: bool,
}

/// How long a pod worker waits before syncing a pod whose sync failed (`backOffPeriod`).
const POD_SYNC_BACKOFF_MS: Millis = 10_000;
/// The first retry delay of a failed mount (`operation_generator.go`: exponential back-off
/// from 500 ms, doubling to 2m2s).
const FIRST_MOUNT_BACKOFF_MS: Millis = 500;

/// What stands between a pod and its volumes, by the part of the volume manager that
/// reports it.
#[derive(Debug, Default)]
struct VolumeCheck {
    /// ConfigMap or Secret sources missing: (volume, why).
    setup: Vec<(String, String)>,
    /// Volumes the desired-state populator could not process: (volume, error).
    unprocessed: Vec<(String, String)>,
    /// Attachable volumes not yet attached to the node or not yet reported in use.
    unattached: Vec<String>,
    /// MountDevice failures: (volume, event message).
    device: Vec<(String, String)>,
    /// Persistent volumes ready to mount: (index in `spec.volumes`, PV, the driver's mount time).
    mounts: Vec<(usize, String, Millis)>,
}

impl VolumeCheck {
    fn blocked(&self) -> bool {
        !(self.setup.is_empty() && self.unprocessed.is_empty() && self.unattached.is_empty() && self.device.is_empty())
    }
}

/// Lines a container's log keeps (the kubelet rotates at 10 MiB).
const MAX_LOG_LINES: usize = 10_000;

#[derive(Clone)]
pub struct Kubelets {
    nodes: Vec<Node>,
    index: HashMap<String, usize>,
    registry: Registry,
    rng: Rng,
    pods: Informer,
    configmaps: Informer,
    secrets: Informer,
    services: Informer,
    slices: Informer,
    node_objs: Informer,
    pvcs: Informer,
    pvs: Informer,
    csidrivers: Informer,
    /// The CSI drivers whose node plugins run on every node, and those that are down.
    drivers: Vec<CsiDriverSpec>,
    drivers_down: BTreeSet<String>,
    /// The files of each PersistentVolume, wherever it is mounted: they outlive pods and
    /// follow the volume from node to node, until the PV is deleted.
    pv_trees: BTreeMap<String, Tree>,
    /// Pod IPs to the node and pod that hold them.
    by_ip: BTreeMap<String, (usize, Key)>,
    /// What each pulled image does, shared by its containers.
    behaviours: BTreeMap<String, std::sync::Arc<Behaviour>>,
    user: UserInfo,
    started: bool,
    epoch: u64,
    /// Exec sessions with stdin, by the id the API server gave them; also the shells of
    /// containers with `stdin: true`, which a client attaches to (`attach`).
    sessions: BTreeMap<u64, session::Session>,
    /// The session of each container whose shell reads its stdin: (pod, container) to
    /// (the container's instance, the session's id).
    attach: BTreeMap<(Key, String), (u64, u64)>,
    attach_next: u64,
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
                    deferred: Vec::new(),
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
                    allocatable: Value::Object(s.capacity.clone()),
                    cpu: usage::milli(s.capacity.get("cpu").and_then(Value::as_str)).unwrap_or(1000),
                    in_use_reported: BTreeSet::new(),
                    next_status: 0,
                    status_pending: false,
                    batch_pending: false,
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
            services: Informer::new(rid::SERVICE),
            slices: Informer::new(rid::ENDPOINTSLICE),
            node_objs: Informer::new(rid::NODE),
            pvcs: Informer::new(rid::PVC),
            pvs: Informer::new(rid::PV),
            csidrivers: Informer::new(rid::CSIDRIVER),
            drivers: Vec::new(),
            drivers_down: BTreeSet::new(),
            pv_trees: BTreeMap::new(),
            by_ip: BTreeMap::new(),
            behaviours: BTreeMap::new(),
            user: UserInfo::new("system:node:*", &["system:nodes"]),
            started: false,
            epoch: 0,
            sessions: BTreeMap::new(),
            attach: BTreeMap::new(),
            attach_next: 0,
        }
    }

    /// The CSI drivers whose node plugins run on the nodes.
    pub fn with_drivers(mut self, drivers: &[CsiDriverSpec]) -> Self {
        self.drivers = drivers.to_vec();
        self
    }

    /// One shared copy of what an image does.
    fn shared_behaviour(&mut self, image: &str, b: Box<Behaviour>) -> std::sync::Arc<Behaviour> {
        match self.behaviours.get(image) {
            Some(s) if **s == *b => std::sync::Arc::clone(s),
            _ => {
                let s = std::sync::Arc::from(b);
                self.behaviours.insert(image.to_string(), std::sync::Arc::clone(&s));
                s
            }
        }
    }

    fn timer_key(node: &str, key: &Key, epoch: u64, action: &str) -> String {
        format!("{node}|{}|{}|{epoch}|{action}", key.0, key.1)
    }

    /// Route informer deltas to nodes.
    fn sync_informers(&mut self, cx: &mut Cx) {
        let cm = self.configmaps.sync(&cx.api.store);
        let sec = self.secrets.sync(&cx.api.store);
        let nodes = self.node_objs.sync(&cx.api.store);
        // What a waiting mount depends on: claims, volumes, drivers, and the attachments the
        // attach/detach controller lists in node status.
        let mut storage_changed =
            nodes.deltas.iter().any(|d| d.old.as_ref().and_then(|o| get(o, &["status", "volumesAttached"])) != get(&d.object, &["status", "volumesAttached"]));
        let claims = self.pvcs.sync(&cx.api.store);
        storage_changed |= !claims.deltas.is_empty();
        let resized: BTreeSet<Key> = claims
            .deltas
            .iter()
            .filter(|d| d.kind != EventType::Deleted && crate::foundation::volume::awaits_node_expansion(&d.object))
            .map(|d| api::queue_key(&d.object))
            .collect_tree();
        storage_changed |= !self.csidrivers.sync(&cx.api.store).deltas.is_empty();
        for d in self.pvs.sync(&cx.api.store).deltas {
            storage_changed = true;
            if d.kind == EventType::Deleted {
                self.pv_trees.remove(api::name(&d.object));
            }
        }
        self.services.sync(&cx.api.store);
        self.slices.sync(&cx.api.store);
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
        if storage_changed {
            self.resume_attach_waits(cx, None);
        }
        if !resized.is_empty() {
            self.schedule_node_expansion(cx, &resized);
        }
    }

    /// Pods that only wait for their volumes to be attached go on as soon as they are
    /// (the volume manager's reconciler polls the node status every 100 ms), to mount or
    /// to meet their first mount error and its retry timer; pods already retrying an
    /// error keep to their timers.
    fn resume_attach_waits(&mut self, cx: &mut Cx, only: Option<usize>) {
        let waiting: Vec<(usize, Key)> = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(ni, n)| !n.down && only.is_none_or(|o| o == *ni))
            .flat_map(|(ni, n)| n.pods.iter().filter(|(_, rt)| rt.stage == Stage::Volumes && rt.mount_at.is_none()).map(move |(k, _)| (ni, k.clone())))
            .collect();
        for (ni, key) in waiting {
            let Some(pod) = self.pods.get(&key.0, &key.1).cloned() else { continue };
            let c = self.check_volumes(ni, &pod);
            let retrying = self.nodes[ni].pods.get(&key).is_some_and(|rt| rt.mount_backoff > FIRST_MOUNT_BACKOFF_MS);
            let errors = !(c.setup.is_empty() && c.unprocessed.is_empty() && c.device.is_empty());
            if c.unattached.is_empty() && !(errors && retrying) {
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
                    self.forget_attach(key);
                    self.schedule_in_use(cx, ni);
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
                    return;
                }
                if !terminating {
                    self.add_ephemeral(cx, ni, key, &pod);
                }
                // The status manager's `needsReconcile`: someone else wrote this pod's
                // status (the node lifecycle controller marking it not Ready while the
                // node was away), so the kubelet posts what it knows again.
                let written = self.nodes[ni].pods.get(key).and_then(|rt| rt.last_written.as_ref());
                if written.is_some_and(|w| api::resource_version(w) != api::resource_version(&pod) && w.get("status") != pod.get("status")) {
                    self.write_status(cx, ni, key);
                }
            }
        }
    }

    /// The shells of a pod's containers that read stdin go with the pod.
    fn forget_attach(&mut self, key: &Key) {
        let gone: Vec<(Key, String)> = self.attach.keys().filter(|(k, _)| k == key).cloned().collect();
        for k in gone {
            if let Some((_, id)) = self.attach.remove(&k) {
                self.sessions.remove(&id);
            }
        }
    }

    /// Ephemeral containers added to a pod the kubelet runs (`pods/ephemeralcontainers`):
    /// each gets its place and starts.
    fn add_ephemeral(&mut self, cx: &mut Cx, ni: usize, key: &Key, pod: &Object) {
        let Some(rt) = self.nodes[ni].pods.get_mut(key) else { return };
        let mut added = false;
        for c in get_array(pod, &["spec", "ephemeralContainers"]) {
            let name = get_str(c, &["name"]).unwrap_or("");
            if rt.ctrs.iter().any(|x| x.ephemeral && x.name == name) {
                continue;
            }
            rt.ctrs.push(Ctr::new(c, false, true, "ContainerCreating"));
            added = true;
        }
        if added {
            self.write_status(cx, ni, key);
            self.run_containers(cx, ni, key, pod);
        }
    }

    fn admit(&mut self, cx: &mut Cx, ni: usize, key: &Key, pod: &Object) {
        self.epoch += 1;
        let count = ["initContainers", "containers", "ephemeralContainers"].iter().map(|l| get_array(pod, &["spec", l]).len()).sum();
        let mut ctrs = Vec::with_capacity(count);
        let has_inits = !get_array(pod, &["spec", "initContainers"]).is_empty();
        for (list, init) in [("initContainers", true), ("containers", false), ("ephemeralContainers", false)] {
            for c in get_array(pod, &["spec", list]) {
                let ephemeral = list == "ephemeralContainers";
                let waiting = if !has_inits || init || ephemeral { "ContainerCreating" } else { "PodInitializing" };
                ctrs.push(Ctr::new(c, init, ephemeral, waiting));
            }
        }
        let rt = PodRt {
            uid: api::uid(pod).to_string(),
            stage: Stage::Volumes,
            ip: None,
            ip_offset: None,
            started: cx.now,
            ctrs,
            volumes: vec![],
            volume_ro: vec![],
            volume_names: vec![],
            volume_pvs: vec![],
            mount_at: None,
            populator_retry_at: 0,
            attach_wait_traced: false,
            mount_fail_since: None,
            mount_backoff: FIRST_MOUNT_BACKOFF_MS,
            epoch: self.epoch,
            ready_reported: false,
            last_written: None,
            resize_due: BTreeSet::new(),
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

    /// What stands between a pod and its volumes (the volume manager's desired-state
    /// populator and reconciler).
    fn check_volumes(&self, ni: usize, pod: &Value) -> VolumeCheck {
        let ns = api::namespace(pod);
        let mut out = VolumeCheck::default();
        let node = self.node_objs.get("", &self.nodes[ni].name);
        for (i, v) in get_array(pod, &["spec", "volumes"]).iter().enumerate() {
            let vname = get_str(v, &["name"]).unwrap_or("");
            let check = |kind: &str, name: &str, optional: bool| -> Option<(String, String)> {
                if optional {
                    return None;
                }
                let found = if kind == "configmap" { self.configmaps.get(ns, name).is_some() } else { self.secrets.get(ns, name).is_some() };
                (!found).then(|| (vname.to_string(), format!("{kind} {name:?} not found")))
            };
            let mut missing = None;
            if let Some(cm) = get(v, &["configMap"]) {
                missing = missing.or_else(|| check("configmap", get_str(cm, &["name"]).unwrap_or(""), api::get_bool(cm, &["optional"]).unwrap_or(false)));
            }
            if let Some(sec) = get(v, &["secret"]) {
                missing = missing.or_else(|| check("secret", get_str(sec, &["secretName"]).unwrap_or(""), api::get_bool(sec, &["optional"]).unwrap_or(false)));
            }
            for src in get_array(v, &["projected", "sources"]) {
                if let Some(cm) = get(src, &["configMap"]) {
                    missing = missing.or_else(|| check("configmap", get_str(cm, &["name"]).unwrap_or(""), api::get_bool(cm, &["optional"]).unwrap_or(false)));
                }
                if let Some(sec) = get(src, &["secret"]) {
                    missing = missing.or_else(|| check("secret", get_str(sec, &["name"]).unwrap_or(""), api::get_bool(sec, &["optional"]).unwrap_or(false)));
                }
            }
            // Only the first missing source is reported (the next retry reports the next).
            if let Some(m) = missing {
                if out.setup.is_empty() {
                    out.setup.push(m);
                }
            }
            let Some(claim) = get_str(v, &["persistentVolumeClaim", "claimName"]) else { continue };
            let pv = match claimed_volume(ns, claim, &self.pvcs, &self.pvs) {
                Ok(pv) => pv,
                Err(e) => {
                    out.unprocessed.push((vname.to_string(), e));
                    continue;
                }
            };
            let pv_name = api::name(&pv).to_string();
            let Some((driver, handle)) = csi_source(&pv) else {
                out.mounts.push((i, pv_name, 0));
                continue;
            };
            let unique = unique_volume_name(driver, handle);
            if attach_required(driver, &self.csidrivers) {
                let attached =
                    node.is_some_and(|n| get_array(n, &["status", "volumesAttached"]).iter().any(|a| get_str(a, &["name"]) == Some(unique.as_str())));
                if !attached || !self.nodes[ni].in_use_reported.contains(&unique) {
                    out.unattached.push(vname.to_string());
                    continue;
                }
            }
            match self.drivers.iter().find(|d| d.name == driver).filter(|d| !self.drivers_down.contains(&d.name)) {
                Some(d) => out.mounts.push((i, pv_name, d.mount_ms)),
                None => out.device.push((
                    vname.to_string(),
                    format!(
                        "MountVolume.MountDevice failed for volume {pv_name:?} : kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name {driver} not found in the list of registered CSI drivers"
                    ),
                )),
            }
        }
        out
    }

    /// The attachable volumes this node's pods use (`GetVolumesInUse`: the pods admitted
    /// and not yet removed, whose claims resolve), as `status.volumesInUse` lists them.
    fn volumes_in_use(&self, ni: usize) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for key in self.nodes[ni].pods.keys() {
            let Some(pod) = self.pods.get(&key.0, &key.1) else { continue };
            for v in get_array(pod, &["spec", "volumes"]) {
                let Some(claim) = get_str(v, &["persistentVolumeClaim", "claimName"]) else { continue };
                let Ok(pv) = claimed_volume(&key.0, claim, &self.pvcs, &self.pvs) else { continue };
                if let Some((driver, handle)) = csi_source(&pv) {
                    if attach_required(driver, &self.csidrivers) {
                        out.insert(unique_volume_name(driver, handle));
                    }
                }
            }
        }
        out
    }

    /// Ask for the node's next status update to carry `volumesInUse`, if it changed.
    fn schedule_in_use(&mut self, cx: &mut Cx, ni: usize) {
        let n = &self.nodes[ni];
        if n.down || n.status_pending || self.volumes_in_use(ni) == n.in_use_reported {
            return;
        }
        let at = if n.next_status > cx.now { n.next_status } else { cx.now + 1 };
        let key = format!("{}|volumes-in-use", n.name);
        self.nodes[ni].status_pending = true;
        cx.after(at - cx.now, key);
    }

    /// The node status update (`nodestatus.VolumesInUse`): report the volumes in use, then
    /// let the mounts that waited for it go on.
    #[inline(never)]
    fn report_in_use(&mut self, cx: &mut Cx, ni: usize) {
        self.nodes[ni].status_pending = false;
        if self.nodes[ni].down {
            return;
        }
        let want = self.volumes_in_use(ni);
        if want == self.nodes[ni].in_use_reported {
            return;
        }
        let user = self.nodes[ni].user.clone();
        let name = self.nodes[ni].name.clone();
        let list = if want.is_empty() { Value::Null } else { json!(want.iter().collect::<Vec<_>>()) };
        let body = json!({"status": {"volumesInUse": list}});
        let r = Request::patch(rid::NODE, "", &name, crate::apiserver::PatchType::Merge, body, Credentials::User(user.clone())).with_sub("status");
        let res = cx.api.handle(req_as(r, "kubelet", &user));
        if res.is_err() {
            // Not written (the API server is unreachable): the next node status update,
            // 10 s on (`nodeStatusUpdateFrequency`), tries again.
            self.nodes[ni].status_pending = true;
            cx.after(10_000, format!("{name}|volumes-in-use"));
        }
        if let Ok(stored) = res {
            cx.trace(
                Flow::Kubelet,
                "volumes",
                format!("Node/{name}"),
                "ok",
                api::resource_version(&stored),
                format!("kubelet on {name} reports {} volume(s) in use", want.len()),
            );
            self.nodes[ni].in_use_reported = want;
            self.resume_attach_waits(cx, Some(ni));
        }
    }

    /// Missing env sources give CreateContainerConfigError (as does [`non_root_check`]).
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
        if let Some(ip) = &rt.ip {
            if self.by_ip.get(ip).is_some_and(|(n, _)| *n == ni) {
                self.by_ip.remove(ip);
            }
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
                let check = self.check_volumes(ni, &pod);
                if check.blocked() {
                    self.volumes_blocked(cx, ni, key, &pod, &check);
                    return;
                }
                // CSI volumes take their drivers' NodeStageVolume and NodePublishVolume.
                let mount_ms = check.mounts.iter().map(|m| m.2).max().unwrap_or(0);
                let rt = self.nodes[ni].pods.get_mut(key).expect("checked above");
                match rt.mount_at {
                    None if mount_ms > 0 => {
                        rt.mount_at = Some(cx.now + mount_ms);
                        cx.after(mount_ms, Self::timer_key(&node_name, key, epoch, "progress"));
                        let pvs: Vec<&str> = check.mounts.iter().map(|m| m.1.as_str()).collect();
                        cx.trace(
                            Flow::Runtime,
                            "volumes",
                            obj,
                            "ok",
                            "",
                            format!(
                                "kubelet on {node_name} mounts persistent volume(s) {} (NodeStageVolume, NodePublishVolume: {})",
                                pvs.join(", "),
                                go_duration(mount_ms)
                            ),
                        );
                        return;
                    }
                    Some(t) if t > cx.now => return,
                    _ => {}
                }
                let host_ip = host_ip(self.nodes[ni].index);
                let sources =
                    Sources { configmaps: &self.configmaps, secrets: &self.secrets, host_ip: &host_ip, pod_ip: "", node_alloc: &self.nodes[ni].allocatable };
                let mut trees = Vec::new();
                let mut pvs = Vec::new();
                for (i, v) in get_array(&pod, &["spec", "volumes"]).iter().enumerate() {
                    let name = get_str(v, &["name"]).unwrap_or("").to_string();
                    match check.mounts.iter().find(|m| m.0 == i) {
                        // A PersistentVolume brings the files it holds, wherever they were written.
                        Some((_, pv, _)) => {
                            let ro = api::get_bool(v, &["persistentVolumeClaim", "readOnly"]).unwrap_or(false);
                            trees.push((name, self.pv_trees.get(pv).cloned().unwrap_or_default(), ro));
                            pvs.push(Some(pv.clone()));
                        }
                        None => {
                            let (tree, ro) = sources.volume(&pod, v);
                            trees.push((name, tree, ro));
                            pvs.push(None);
                        }
                    }
                }
                let rt = self.nodes[ni].pods.get_mut(key).expect("checked above");
                rt.volume_names = trees.iter().map(|(n, _, _)| n.clone()).collect();
                rt.volume_ro = trees.iter().map(|(_, _, ro)| *ro).collect();
                rt.volumes = trees.into_iter().map(|(_, t, _)| t).collect();
                rt.volume_pvs = pvs;
                rt.stage = Stage::Sandbox;
                cx.after(300, Self::timer_key(&node_name, key, epoch, "sandbox"));
                cx.trace(Flow::Runtime, "volumes", obj, "ok", "", format!("{} volume(s) mounted", get_array(&pod, &["spec", "volumes"]).len()));
                // A claim whose disk grew while no pod had it mounted: the file system
                // follows as the volume is mounted.
                for v in get_array(&pod, &["spec", "volumes"]) {
                    if let Some(claim) = get_str(v, &["persistentVolumeClaim", "claimName"]) {
                        self.node_expand(cx, ni, key, claim);
                    }
                }
            }
            Stage::Sandbox => {}
            Stage::Containers => self.run_containers(cx, ni, key, &pod),
            Stage::Terminating => {}
        }
    }

    /// A pod's volumes cannot all be mounted yet: the volume manager's events, retries and
    /// waits (`operation_generator.go` failures with exponential back-off; the populator's
    /// errors reported by each pod sync, `WaitForAttachAndMount`; attachments awaited
    /// without an event).
    #[inline(never)]
    fn volumes_blocked(&mut self, cx: &mut Cx, ni: usize, key: &Key, pod: &Object, c: &VolumeCheck) {
        let node_name = self.nodes[ni].name.clone();
        let src = self.nodes[ni].source.clone();
        let obj = format!("Pod/{}/{}", key.0, key.1);
        let rt = self.nodes[ni].pods.get_mut(key).expect("caller checked");
        let epoch = rt.epoch;
        rt.mount_at = None;
        let first = rt.mount_fail_since.is_none();
        rt.mount_fail_since.get_or_insert(cx.now);
        let failures: Vec<String> = c
            .setup
            .iter()
            .map(|(v, why)| format!("MountVolume.SetUp failed for volume {v:?} : {why}"))
            .chain(c.device.iter().map(|(_, m)| m.clone()))
            .collect();
        if !failures.is_empty() {
            let backoff = rt.mount_backoff;
            rt.mount_backoff = (rt.mount_backoff * 2).min(122_000);
            for msg in &failures {
                cx.trace(Flow::NodeError, "volumes", obj.clone(), "error", "", msg.clone());
                cx.event(&src, pod, None, "Warning", "FailedMount", msg, None);
            }
            cx.every(backoff, Self::timer_key(&node_name, key, epoch, "progress"));
        }
        let rt = self.nodes[ni].pods.get_mut(key).expect("caller checked");
        if !c.unprocessed.is_empty() && cx.now >= rt.populator_retry_at {
            rt.populator_retry_at = cx.now + POD_SYNC_BACKOFF_MS;
            let mut unmounted: Vec<&str> = c
                .setup
                .iter()
                .chain(c.unprocessed.iter())
                .chain(c.device.iter())
                .map(|(v, _)| v.as_str())
                .chain(c.unattached.iter().map(String::as_str))
                .collect();
            unmounted.sort_unstable();
            unmounted.dedup();
            let mut unattached: Vec<&str> = c.unattached.iter().map(String::as_str).collect();
            unattached.sort_unstable();
            let mut unprocessed: Vec<&str> = c.unprocessed.iter().map(|(v, _)| v.as_str()).collect();
            unprocessed.sort_unstable();
            let errors: Vec<&str> = c.unprocessed.iter().map(|(_, e)| e.as_str()).collect();
            let msg = format!(
                "Unable to attach or mount volumes: unmounted volumes=[{}], unattached volumes=[{}], failed to process volumes=[{}]: {}",
                unmounted.join(" "),
                unattached.join(" "),
                unprocessed.join(" "),
                errors.join("; ")
            );
            cx.trace(Flow::NodeError, "volumes", obj.clone(), "error", "", msg.clone());
            cx.event(&src, pod, None, "Warning", "FailedMount", &msg, None);
            cx.every(POD_SYNC_BACKOFF_MS, Self::timer_key(&node_name, key, epoch, "progress"));
        }
        let rt = self.nodes[ni].pods.get_mut(key).expect("caller checked");
        if failures.is_empty() && c.unprocessed.is_empty() && !rt.attach_wait_traced {
            rt.attach_wait_traced = true;
            cx.trace(
                Flow::Pending,
                "volumes",
                obj,
                "pending",
                "",
                format!("kubelet on {node_name} waits for volume(s) [{}] to be attached and reported in use", c.unattached.join(" ")),
            );
        }
        self.schedule_in_use(cx, ni);
        if first {
            self.write_status(cx, ni, key);
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
        self.by_ip.insert(ip.clone(), (ni, key.clone()));
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

    /// Start whatever container is next (`computePodActions`): init containers one by one
    /// (a sidecar must have started before the next one begins), then all the others.
    fn run_containers(&mut self, cx: &mut Cx, ni: usize, key: &Key, pod: &Object) {
        let Some(rt) = self.nodes[ni].pods.get(key) else { return };
        if rt.stage != Stage::Containers || self.pod_terminal(ni, key, pod) {
            return;
        }
        let n = rt.ctrs.len();
        // Ephemeral containers start as soon as they are added, whatever the others do.
        let added: Vec<usize> =
            (0..n).filter(|&i| rt.ctrs[i].ephemeral && matches!(&rt.ctrs[i].state, CState::Waiting { reason, .. } if reason == "ContainerCreating")).collect();
        for i in added {
            self.start_container(cx, ni, key, i, pod);
        }
        for i in 0..n {
            let c = &self.nodes[ni].pods[key].ctrs[i];
            let fresh = matches!(&c.state, CState::Waiting { reason, .. } if reason == "ContainerCreating" || reason == "PodInitializing");
            if c.ephemeral {
                continue;
            }
            if c.init {
                if c.sidecar {
                    match &c.state {
                        CState::Running { .. } if c.started => continue,
                        _ if fresh => {
                            self.start_container(cx, ni, key, i, pod);
                            return;
                        }
                        // Restarting after a crash: the next ones already went ahead.
                        _ if c.restarts > 0 || c.last.is_some() => continue,
                        _ => return,
                    }
                }
                match c.state {
                    CState::Terminated { exit: 0, .. } => continue,
                    _ if fresh => {
                        self.start_container(cx, ni, key, i, pod);
                        return;
                    }
                    _ => return,
                }
            }
            if fresh {
                let c = self.nodes[ni].pods.get_mut(key).expect("exists");
                if let CState::Waiting { reason, .. } = &mut c.ctrs[i].state {
                    *reason = "ContainerCreating".into();
                }
                self.start_container(cx, ni, key, i, pod);
            }
        }
    }

    /// Whether the pod has reached Succeeded or Failed (its containers will not run again).
    fn pod_terminal(&self, ni: usize, key: &Key, pod: &Value) -> bool {
        self.nodes[ni].pods.get(key).is_some_and(|rt| matches!(phase(pod, rt), "Succeeded" | "Failed"))
    }

    /// The memory a container may use: its limit, else the node's.
    fn memory_limit(&self, ni: usize, spec: &Value) -> Option<u64> {
        let q = get_str(spec, &["resources", "limits", "memory"]).or_else(|| get_str(&self.nodes[ni].allocatable, &["memory"]))?;
        crate::foundation::quantity::parse_milli(q).map(|m| (m / 1000).max(0) as u64)
    }

    /// Run `f` in container `i`'s world: its files, its servers, the network. The pod's
    /// runtime is taken out of its node meanwhile so that the network can read the others.
    /// Output goes to `capture` if given, else to the container's log.
    fn in_container<R>(
        &mut self,
        now: Millis,
        ni: usize,
        key: &Key,
        i: usize,
        capture: Option<(&mut Vec<String>, &mut Vec<u8>)>,
        f: impl FnOnce(&mut CtrHost, &mut Option<Box<Process>>) -> R,
    ) -> Option<R> {
        let mut rt = self.nodes[ni].pods.remove(key)?;
        if i >= rt.ctrs.len() {
            self.nodes[ni].pods.insert(key.clone(), rt);
            return None;
        }
        // A PersistentVolume's files are the volume's, not the pod's: what another pod
        // wrote to it shows here, and what this one writes stays with the volume.
        for (v, pv) in rt.volume_pvs.iter().enumerate() {
            if let (Some(pv), Some(t)) = (pv, rt.volumes.get_mut(v)) {
                if let Some(shared) = self.pv_trees.get(pv) {
                    if shared != t {
                        *t = shared.clone();
                    }
                }
            }
        }
        let pod = self.pods.get(&key.0, &key.1).cloned();
        let hostname = pod.as_ref().and_then(|p| get_str(p, &["spec", "hostname"]).map(str::to_string)).unwrap_or_else(|| key.1.clone());
        let limit = self.memory_limit(ni, &rt.ctrs[i].spec);
        let pod_ip = rt.ip.clone().unwrap_or_default();
        let local = match (&rt.ctrs[i].daemon, &rt.ctrs[i].state) {
            (Some(d), CState::Running { started }) => Some((d.clone(), now.saturating_sub(*started))),
            _ => None,
        };
        let served = std::cell::RefCell::new(Vec::new());
        let out = {
            let PodRt { volumes, volume_ro, ctrs, .. } = &mut rt;
            let Ctr { mounts, root, logs, log_times, alive, proc, behaviour, .. } = &mut ctrs[i];
            let b = behaviour.clone().unwrap_or_default();
            let this = &*self;
            let backend = |ip: &str, port: u16, path: &str| this.backend(now, ip, port, path);
            let seed = key.1.bytes().fold(now, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
            let net = Net { namespace: &key.0, services: &self.services, slices: &self.slices, backend: &backend, served: &served, seed };
            let (out, streams, times) = match capture {
                Some((o, st)) => (o, Some(st), None),
                None => (logs, None, Some(log_times)),
            };
            let mut host = CtrHost {
                now,
                hostname,
                view: View { volumes, volume_read_only: volume_ro, mounts, root },
                streams,
                times,
                out,
                alive,
                net: &net,
                image: &b,
                limit,
                max_lines: MAX_LOG_LINES,
                pod_ip,
                local,
            };
            f(&mut host, proc)
        };
        for (v, pv) in rt.volume_pvs.iter().enumerate() {
            if let (Some(pv), Some(t)) = (pv, rt.volumes.get(v)) {
                if self.pv_trees.get(pv) != Some(t) {
                    self.pv_trees.insert(pv.clone(), t.clone());
                }
            }
        }
        self.nodes[ni].pods.insert(key.clone(), rt);
        self.charge_served(now, &served.into_inner());
        Some(out)
    }

    /// What a pod IP answers on a port: the server of whichever container listens there.
    fn backend(&self, now: Millis, ip: &str, port: u16, path: &str) -> Result<(u16, String), String> {
        let Some((ni, key)) = self.by_ip.get(ip) else { return Err("No route to host".into()) };
        let Some(rt) = self.nodes.get(*ni).and_then(|n| n.pods.get(key)) else { return Err("Connection refused".into()) };
        for c in &rt.ctrs {
            let (Some(d), CState::Running { started }) = (&c.daemon, &c.state) else { continue };
            if !(d.ports.is_empty() || d.ports.contains(&port)) {
                continue;
            }
            let view = ReadView { volumes: &rt.volumes, volume_read_only: &rt.volume_ro, mounts: &c.mounts, root: &c.root };
            let b = c.behaviour.clone().unwrap_or_default();
            let hostname = self.pods.get(&key.0, &key.1).and_then(|p| get_str(p, &["spec", "hostname"]).map(str::to_string)).unwrap_or_else(|| key.1.clone());
            return serve_http(d, &b, &view, now.saturating_sub(*started), port, path, &hostname);
        }
        Err("Connection refused".into())
    }

    /// Pull (if needed), then create and start container `i`.
    fn start_container(&mut self, cx: &mut Cx, ni: usize, key: &Key, i: usize, pod: &Object) {
        let node_name = self.nodes[ni].name.clone();
        let epoch = self.nodes[ni].pods[key].epoch;
        let c = self.nodes[ni].pods[key].ctrs[i].clone();
        let obj = format!("Pod/{}/{}", key.0, key.1);
        let field = format!("spec.{}{{{}}}", c.list(), c.name);
        let src = self.nodes[ni].source.clone();
        let policy = get_array(pod, &["spec", c.list()])
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
                let shared = self.shared_behaviour(&c.image, behaviour);
                self.nodes[ni].pods.get_mut(key).expect("exists").ctrs[i].behaviour = Some(shared);
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
        let field = format!("spec.{}{{{}}}", c.list(), c.name);
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
                let shared = self.shared_behaviour(&c.image, behaviour);
                let rt = self.nodes[ni].pods.get_mut(key).expect("exists");
                rt.ctrs[i].behaviour = Some(shared);
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

    #[inline(never)]
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
        let field = format!("spec.{}{{{}}}", c.list(), c.name);
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
        let c = self.nodes[ni].pods[key].ctrs[i].light();
        let epoch = self.nodes[ni].pods[key].epoch;
        let field = ctr_field(&c);
        let b = c.behaviour.clone().unwrap_or_default();
        let non_root = non_root_check(&pod, &c.spec, &b);
        if let NonRoot::Unknown = non_root {
            let msg = format!("kubeloop does not know the user image {} runs as, so container {}'s runAsNonRoot is not checked", c.image, c.name);
            cx.trace(Flow::Runtime, "start", obj.clone(), "warning", "", msg);
        }
        let broken = match non_root {
            NonRoot::Broken(e) => Some(e),
            _ => None,
        };
        if let Some(err) = self.missing_env(&pod, &c.name).or(broken) {
            self.set_state(ni, key, i, CState::Waiting { reason: "CreateContainerConfigError".into(), message: Some(err.clone()) });
            cx.event(&src, &pod, Some(&field), "Warning", "Failed", &format!("Error: {err}"), None);
            cx.trace(Flow::NodeError, "start", obj, "error", "", format!("CreateContainerConfigError: {err}"));
            self.write_status(cx, ni, key);
            cx.every(10_000, Self::timer_key(&node_name, key, epoch, &format!("retry-create:{i}")));
            return;
        }
        let id = format!("{:016x}{:016x}{:016x}{:016x}", self.rng.next_u64(), self.rng.next_u64(), self.rng.next_u64(), self.rng.next_u64());
        let host_ip = host_ip(self.nodes[ni].index);
        let rt = &self.nodes[ni].pods[key];
        let pod_ip = rt.ip.clone().unwrap_or_default();
        let sources =
            Sources { configmaps: &self.configmaps, secrets: &self.secrets, host_ip: &host_ip, pod_ip: &pod_ip, node_alloc: &self.nodes[ni].allocatable };
        let env = environment(&pod, &c.spec, &self.services, &sources, &self.nodes[ni].allocatable);
        let mounts = mounts(&c.spec, &rt.volume_names);
        let root = root_tree(&pod, rt.ip.as_deref(), &b);
        let argv = argv(&c.spec, &b);
        let start = start(&argv, &env, &b);
        let rt = self.nodes[ni].pods.get_mut(key).expect("exists");
        let ctr = &mut rt.ctrs[i];
        if !ctr.container_id.is_empty() {
            ctr.previous_logs = Some((std::mem::take(&mut ctr.logs), std::mem::take(&mut ctr.log_times)));
        }
        ctr.container_id = format!("containerd://{id}");
        ctr.cpu = usage::Meter::default();
        ctr.instance += 1;
        ctr.ready = false;
        ctr.started = false;
        ctr.stopping = false;
        ctr.probes = [ProbeRun::default(); 3];
        ctr.daemon = None;
        ctr.alive.clear();
        ctr.root = root;
        ctr.mounts = mounts;
        ctr.logs.clear();
        ctr.log_times.clear();
        cx.event(&src, &pod, Some(&field), "Normal", "Created", "Container created", None);
        let process = match start {
            Start::NotFound(msg) => {
                ctr.proc = None;
                cx.event(&src, &pod, Some(&field), "Warning", "Failed", &format!("Error: {msg}"), None);
                cx.trace(Flow::NodeError, "start", obj, "error", "", format!("StartError: {msg}"));
                ctr.state = CState::Running { started: cx.now };
                self.exited(cx, ni, key, i, 128, "StartError", Some(msg));
                return;
            }
            Start::Run(p) => p,
        };
        // `stdin: true`: the process's stdin stays open for a client to attach to. A shell
        // reading its commands there runs each line that comes (`kubectl run -it`).
        let stdin = get(&c.spec, &["stdin"]).and_then(Value::as_bool) == Some(true);
        let shell = (stdin && crate::foundation::pod::interactive_shell(&argv)).then(|| (process.flavour, argv[0].clone()));
        ctr.proc = Some(process);
        if stdin {
            if let Some(p) = ctr.proc.as_mut() {
                p.open_stdin();
            }
        }
        ctr.state = CState::Running { started: cx.now };
        let instance = ctr.instance;
        if let Some((flavour, arg0)) = shell {
            self.attach_next += 1;
            let id = session::ATTACH_IDS + self.attach_next;
            let proc = Box::new(Process::new(shell::Program::default(), &arg0, vec![], &env, flavour));
            self.sessions.insert(id, session::Session::reading_commands(key.clone(), c.name.clone(), proc));
            if let Some((_, old)) = self.attach.insert((key.clone(), c.name.clone()), (instance, id)) {
                self.sessions.remove(&old);
            }
        }
        cx.event(&src, &pod, Some(&field), "Normal", "Started", "Container started", None);
        cx.trace(
            Flow::Runtime,
            "start",
            obj.clone(),
            "ok",
            "",
            if argv.is_empty() {
                format!("CRI started container {} ({})", c.name, c.image)
            } else {
                format!("CRI started container {} ({}): {}", c.name, c.image, shell_words(&argv))
            },
        );
        // The image's own start-up lines (scenario images declare theirs).
        let t = rfc3339(cx.now);
        let (date, time) = (&t[..10], &t[11..19]);
        const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
        let month = MONTHS[t[5..7].parse::<usize>().unwrap_or(1).clamp(1, 12) - 1];
        let nginx = format!("{} {time}", date.replace('-', "/"));
        let redis = format!("{} {month} {} {time}.{:03}", &t[8..10], &t[..4], cx.now % 1000);
        let js = format!("{}.{:03}Z", &t[..19], cx.now % 1000);
        let hostname = get_str(&pod, &["spec", "hostname"]).unwrap_or(&key.1).to_string();
        let boot: Vec<String> = b
            .logs
            .iter()
            .map(|l| l.replace("{nginx-time}", &nginx).replace("{redis-time}", &redis).replace("{js-time}", &js).replace("{hostname}", &hostname))
            .collect();
        // postStart runs before the container counts as started (`startContainer`).
        if let Some(hook) = get(&c.spec, &["lifecycle", "postStart"]).cloned() {
            if let Err(msg) = self.run_hook(cx, ni, key, i, &hook) {
                cx.event(&src, &pod, Some(&field), "Warning", "FailedPostStartHook", &msg, None);
                cx.trace(Flow::NodeError, "start", obj.clone(), "error", "", format!("postStart hook of {} failed: {msg}", c.name));
                let grace = get_i64(&pod, &["spec", "terminationGracePeriodSeconds"]).unwrap_or(30).max(0) as Millis * 1000;
                self.kill_container(cx, ni, key, i, &format!("Container {} failed post start hook", c.name), "FailedPostStartHook", grace);
                return;
            }
        }
        self.run_main(cx, ni, key, i, instance, boot);
        // Probes: startup gates the other two; without one the container has started.
        let spec = c.spec.clone();
        let has_startup = get(&spec, &["startupProbe"]).is_some();
        if let Some(rt) = self.nodes[ni].pods.get_mut(key) {
            rt.ctrs[i].started = !has_startup;
            if get(&spec, &["readinessProbe"]).is_none()
                && !has_startup
                && !b.never_ready
                && matches!(rt.ctrs[i].state, CState::Running { .. })
                && (c.regular() || c.sidecar)
            {
                rt.ctrs[i].ready = true;
            }
        }
        if c.regular() || c.sidecar {
            for kind in ProbeKind::ALL {
                if let Some(p) = get(&spec, &[kind.field()]) {
                    let delay = get_i64(p, &["initialDelaySeconds"]).unwrap_or(0).max(0) as Millis * 1000;
                    cx.after(delay.max(1), Self::timer_key(&node_name, key, epoch, &format!("probe:{i}:{}:{instance}", kind.field())));
                }
            }
        }
        self.write_status(cx, ni, key);
        if c.sidecar && !has_startup {
            // The next init container may start once this one runs.
            self.run_containers(cx, ni, key, &pod);
        }
    }

    /// Run (or resume) container `i`'s main process and act on what it did.
    fn run_main(&mut self, cx: &mut Cx, ni: usize, key: &Key, i: usize, instance: u64, boot: Vec<String>) {
        let now = cx.now;
        let outcome = self.in_container(now, ni, key, i, None, |host, proc| {
            for l in boot {
                host.log(l);
            }
            proc.as_mut().map(|p| {
                let busy = p.busy_ms;
                let o = p.resume(host);
                (o, p.busy_ms - busy)
            })
        });
        let Some(Some((outcome, busy))) = outcome else { return };
        if busy > 0 {
            self.charge_cpu(now, ni, key, i, busy * 1000);
        }
        let node_name = self.nodes[ni].name.clone();
        let Some(rt) = self.nodes[ni].pods.get_mut(key) else { return };
        let epoch = rt.epoch;
        let c = &mut rt.ctrs[i];
        match outcome {
            Outcome::Exit(code) => {
                self.exited(cx, ni, key, i, code as i64, if code == 0 { "Completed" } else { "Error" }, None);
            }
            Outcome::OomKilled => self.exited(cx, ni, key, i, 137, "OOMKilled", None),
            Outcome::Sleep(ms) => cx.after(ms.max(1), Self::timer_key(&node_name, key, epoch, &format!("run:{i}:{instance}"))),
            // A container's own process has no stdin stream, so it never waits on one.
            Outcome::Wait => {}
            Outcome::Serve(d) => {
                c.alive.insert(d.name.clone());
                let memory = c.proc.as_ref().map(|p| p.memory).unwrap_or(0).max(d.memory);
                c.daemon = Some(d);
                let b = c.behaviour.clone().unwrap_or_default();
                let limit = self.memory_limit(ni, &self.nodes[ni].pods[key].ctrs[i].spec);
                if limit.is_some_and(|l| memory > l) {
                    // The server outgrows its limit as it starts.
                    cx.after(1000, Self::timer_key(&node_name, key, epoch, &format!("oom:{i}:{instance}")));
                } else if let Some(after) = b.crash_after_ms {
                    cx.after(after, Self::timer_key(&node_name, key, epoch, &format!("exit:{i}:{instance}:1")));
                }
            }
        }
    }

    /// A lifecycle hook (`exec` through the shell, `httpGet` to the container's server).
    fn run_hook(&mut self, cx: &mut Cx, ni: usize, key: &Key, i: usize, hook: &Value) -> Result<Millis, String> {
        if let Some(cmd) = get(hook, &["exec", "command"]).and_then(Value::as_array) {
            let argv: Vec<String> = cmd.iter().filter_map(Value::as_str).map(str::to_string).collect();
            let (code, out, slept) = self.exec_in(cx, ni, key, i, &argv);
            return if code == 0 {
                Ok(slept)
            } else {
                Err(format!("PostStartHook failed: command {:?} exited with {code}: {}", shell_words(&argv), text(&out)))
            };
        }
        if let Some(h) = get(hook, &["httpGet"]) {
            let (code, msg) = self.http_probe(cx.now, ni, key, i, h);
            return if (200..400).contains(&code) { Ok(0) } else { Err(msg) };
        }
        if get(hook, &["sleep"]).is_some() {
            return Ok(get_i64(hook, &["sleep", "seconds"]).unwrap_or(0).max(0) as Millis * 1000);
        }
        Ok(0)
    }

    /// Run a command in container `i` at once (exec probes, hooks, `kubectl exec`):
    /// exit code, output, simulated time its sleeps would have taken.
    fn exec_in(&mut self, cx: &mut Cx, ni: usize, key: &Key, i: usize, argv: &[String]) -> (i32, Vec<(u8, String)>, Millis) {
        let now = cx.now;
        let mut out = Vec::new();
        let mut streams = Vec::new();
        let env = self.nodes[ni].pods.get(key).and_then(|rt| rt.ctrs.get(i)).and_then(|c| c.proc.as_ref().map(|p| p.env())).unwrap_or_default();
        let b = self.nodes[ni].pods.get(key).and_then(|rt| rt.ctrs.get(i)).and_then(|c| c.behaviour.clone()).unwrap_or_default();
        let r = match start(argv, &env, &b) {
            Start::NotFound(_) => {
                let first = argv.first().cloned().unwrap_or_default();
                let line = format!(
                    "OCI runtime exec failed: exec failed: unable to start container process: exec: {first:?}: executable file not found in $PATH: unknown"
                );
                return (126, vec![(2, line)], 0);
            }
            Start::Run(mut p) => self.in_container(now, ni, key, i, Some((&mut out, &mut streams)), |host, _| {
                let o = p.run_to_end(host, shell::OPS_PER_CALL);
                (o, p.slept)
            }),
        };
        let (outcome, slept) = r.unwrap_or((Outcome::Exit(1), 0));
        let code = match outcome {
            Outcome::Exit(c) => c,
            Outcome::OomKilled => 137,
            Outcome::Sleep(_) | Outcome::Serve(_) | Outcome::Wait => 0,
        };
        self.after_exec(cx, ni, key, i);
        let lines = out.into_iter().zip(streams.into_iter().chain(std::iter::repeat(1))).map(|(l, s)| (s, l)).collect();
        (code, lines, slept)
    }

    /// A command may have stopped the container's server (`nginx -s quit`): its main
    /// process then exits.
    fn after_exec(&mut self, cx: &mut Cx, ni: usize, key: &Key, i: usize) {
        let Some(rt) = self.nodes[ni].pods.get_mut(key) else { return };
        let Some(c) = rt.ctrs.get_mut(i) else { return };
        let gone = c.daemon.as_ref().is_some_and(|d| !c.alive.contains(&d.name));
        if gone && matches!(c.state, CState::Running { .. }) {
            let node_name = self.nodes[ni].name.clone();
            let epoch = self.nodes[ni].pods[key].epoch;
            let instance = self.nodes[ni].pods[key].ctrs[i].instance;
            let c = &mut self.nodes[ni].pods.get_mut(key).expect("exists").ctrs[i];
            c.daemon = None;
            c.proc = None;
            // The runtime notices at its next relist.
            cx.after(1000, Self::timer_key(&node_name, key, epoch, &format!("exit:{i}:{instance}:0")));
        }
    }

    /// HTTP GET for a probe or hook: (status code, failure text).
    fn http_probe(&mut self, now: Millis, ni: usize, key: &Key, i: usize, h: &Value) -> (u16, String) {
        let Some(rt) = self.nodes[ni].pods.get(key) else { return (0, String::new()) };
        let ip = rt.ip.clone().unwrap_or_default();
        let spec = &rt.ctrs[i].spec;
        let port = probe_port(get(h, &["port"]), spec);
        let path = get_str(h, &["path"]).unwrap_or("/").to_string();
        let scheme = get_str(h, &["scheme"]).unwrap_or("HTTP").to_ascii_lowercase();
        let url = format!("{scheme}://{ip}:{port}{path}");
        match self.backend(now, &ip, port, &path) {
            Ok((code, _)) if (200..400).contains(&code) => (code, String::new()),
            Ok((code, _)) => (code, format!("HTTP probe failed with statuscode: {code}")),
            Err(_) => (0, format!("Get \"{url}\": dial tcp {ip}:{port}: connect: connection refused")),
        }
    }

    /// One probe of container `i` (`prober/prober.go`, `worker.go`).
    fn probe(&mut self, cx: &mut Cx, ni: usize, key: &Key, i: usize, kind: ProbeKind, instance: u64) {
        let Some(pod) = self.pods.get(&key.0, &key.1).cloned() else { return };
        let node_name = self.nodes[ni].name.clone();
        let src = self.nodes[ni].source.clone();
        let Some(rt) = self.nodes[ni].pods.get(key) else { return };
        let epoch = rt.epoch;
        let ip = rt.ip.clone().unwrap_or_default();
        let c = rt.ctrs[i].light();
        if c.instance != instance || c.stopping {
            return;
        }
        let CState::Running { started } = c.state else { return };
        let Some(p) = get(&c.spec, &[kind.field()]).cloned() else { return };
        let period = get_i64(&p, &["periodSeconds"]).unwrap_or(10).max(1) as Millis * 1000;
        let again = Self::timer_key(&node_name, key, epoch, &format!("probe:{i}:{}:{instance}", kind.field()));
        // Liveness and readiness wait for the startup probe; startup stops once passed.
        if (kind != ProbeKind::Startup && !c.started) || (kind == ProbeKind::Startup && c.started) {
            if kind != ProbeKind::Startup {
                cx.every(period, again);
            }
            return;
        }
        let b = c.behaviour.clone().unwrap_or_default();
        let timeout = get_i64(&p, &["timeoutSeconds"]).unwrap_or(1).max(1) as Millis * 1000;
        let (ok, out) = if let Some(cmd) = get(&p, &["exec", "command"]).and_then(Value::as_array) {
            let argv: Vec<String> = cmd.iter().filter_map(Value::as_str).map(str::to_string).collect();
            let (code, out, slept) = self.exec_in(cx, ni, key, i, &argv);
            if slept > timeout {
                (false, format!("command {:?} timed out", shell_words(&argv)))
            } else {
                (code == 0, text(&out))
            }
        } else if kind == ProbeKind::Readiness && (b.never_ready || cx.now < started + b.ready_after_ms) {
            // A scenario image that is not ready (yet).
            let h = get(&p, &["httpGet"]);
            let port = probe_port(h.and_then(|h| get(h, &["port"])).or_else(|| get(&p, &["tcpSocket", "port"])), &c.spec);
            let path = h.and_then(|h| get_str(h, &["path"])).unwrap_or("/");
            let msg = if cx.now < started + 2000 || b.never_ready && b.crash_after_ms.is_some() || h.is_none() {
                if h.is_some() {
                    format!("Get \"http://{ip}:{port}{path}\": dial tcp {ip}:{port}: connect: connection refused")
                } else {
                    format!("dial tcp {ip}:{port}: connect: connection refused")
                }
            } else {
                "HTTP probe failed with statuscode: 503".into()
            };
            (false, msg)
        } else if let Some(h) = get(&p, &["httpGet"]) {
            let (code, msg) = self.http_probe(cx.now, ni, key, i, h);
            ((200..400).contains(&code), msg)
        } else if let Some(t) = get(&p, &["tcpSocket"]) {
            let port = probe_port(get(t, &["port"]), &c.spec);
            let listening = c.daemon.as_ref().is_some_and(|d| d.ports.is_empty() || d.ports.contains(&port));
            (listening && b.unhealthy_after_ms.is_none_or(|t| cx.now < started + t), format!("dial tcp {ip}:{port}: connect: connection refused"))
        } else if let Some(g) = get(&p, &["grpc"]) {
            let port = get_i64(g, &["port"]).unwrap_or(0) as u16;
            let listening = c.daemon.as_ref().is_some_and(|d| d.ports.is_empty() || d.ports.contains(&port));
            (listening && b.unhealthy_after_ms.is_none_or(|t| cx.now < started + t), format!("timeout: failed to connect service \"{ip}:{port}\" within 1s"))
        } else {
            (true, String::new())
        };
        let success = get_i64(&p, &["successThreshold"]).unwrap_or(1).max(1) as u32;
        let failure = get_i64(&p, &["failureThreshold"]).unwrap_or(3).max(1) as u32;
        let field = ctr_field(&c);
        let obj = format!("Pod/{}/{}", key.0, key.1);
        let Some(rt) = self.nodes[ni].pods.get_mut(key) else { return };
        let ctr = &mut rt.ctrs[i];
        if ctr.instance != instance {
            return;
        }
        let run = &mut ctr.probes[kind.index()];
        if run.last == Some(ok) {
            run.run = run.run.saturating_add(1);
        } else {
            run.last = Some(ok);
            run.run = 1;
        }
        let reached = if ok { run.run >= success } else { run.run >= failure };
        if !ok {
            cx.event(&src, &pod, Some(&field), "Warning", "Unhealthy", &format!("{} probe failed: {out}", kind.title()), None);
            // The event carries the command's output, empty for `test -f`; the trace says so.
            let shown = if out.is_empty() { "the command printed nothing and exited non-zero" } else { out.as_str() };
            cx.trace(Flow::NodeError, "probe", obj.clone(), "error", "", format!("{} probe of {} failed: {shown}", kind.title(), c.name));
        }
        match (kind, ok, reached) {
            (ProbeKind::Readiness, true, true) if !ctr.ready => {
                ctr.ready = true;
                cx.trace(Flow::Ready, "probe", obj, "ok", "", format!("readiness probe of {} passed", c.name));
                self.write_status(cx, ni, key);
            }
            (ProbeKind::Readiness, false, true) if ctr.ready => {
                ctr.ready = false;
                self.write_status(cx, ni, key);
            }
            (ProbeKind::Startup, true, true) => {
                ctr.started = true;
                if get(&c.spec, &["readinessProbe"]).is_none() {
                    ctr.ready = true;
                }
                cx.trace(Flow::Runtime, "probe", obj, "ok", "", format!("startup probe of {} passed", c.name));
                self.write_status(cx, ni, key);
                if c.sidecar {
                    self.run_containers(cx, ni, key, &pod);
                }
                return;
            }
            (ProbeKind::Liveness | ProbeKind::Startup, false, true) => {
                ctr.probes[kind.index()] = ProbeRun::default();
                let grace =
                    get_i64(&p, &["terminationGracePeriodSeconds"]).or_else(|| get_i64(&pod, &["spec", "terminationGracePeriodSeconds"])).unwrap_or(30).max(0)
                        as Millis
                        * 1000;
                let what = if kind == ProbeKind::Liveness { "liveness" } else { "startup" };
                let msg = format!("Container {} failed {what} probe, will be restarted", c.name);
                self.kill_container(cx, ni, key, i, &msg, "Killing", grace);
                return;
            }
            _ => {}
        }
        // A probe that keeps failing is not progress the run waits for.
        if ok || kind == ProbeKind::Readiness && b.never_ready {
            cx.every(period, again);
        } else {
            cx.after(period, again);
        }
    }

    /// Stop container `i` (a failed liveness or startup probe, a failed hook): SIGTERM,
    /// then SIGKILL when the grace period ends if the program ignores it.
    fn kill_container(&mut self, cx: &mut Cx, ni: usize, key: &Key, i: usize, message: &str, reason: &str, grace: Millis) {
        let Some(pod) = self.pods.get(&key.0, &key.1).cloned() else { return };
        let node_name = self.nodes[ni].name.clone();
        let src = self.nodes[ni].source.clone();
        let Some(rt) = self.nodes[ni].pods.get_mut(key) else { return };
        let epoch = rt.epoch;
        let c = &mut rt.ctrs[i];
        // Probes stop counting; the container stays as it was until it has exited.
        c.stopping = true;
        let instance = c.instance;
        let field = ctr_field(c);
        cx.event(&src, &pod, Some(&field), if reason == "Killing" { "Normal" } else { "Warning" }, "Killing", message, None);
        if message.starts_with("Stopping") {
            cx.trace(Flow::Kubelet, "terminate", format!("Pod/{}/{}", key.0, key.1), "ok", "", message.to_string());
        } else {
            cx.trace(Flow::NodeError, "restart", format!("Pod/{}/{}", key.0, key.1), "error", "", message.to_string());
        }
        let (wait, code) = self.sigterm(cx.now, ni, key, i, grace);
        self.write_status(cx, ni, key);
        cx.after(wait.max(1), Self::timer_key(&node_name, key, epoch, &format!("exit:{i}:{instance}:{code}")));
    }

    /// Deliver SIGTERM to container `i`'s process: how long it takes to end and its code.
    fn sigterm(&mut self, now: Millis, ni: usize, key: &Key, i: usize, grace: Millis) -> (Millis, i64) {
        let Some(c) = self.nodes[ni].pods.get(key).and_then(|rt| rt.ctrs.get(i)) else { return (1, 137) };
        let serving = c.daemon.clone();
        let ignores = c.behaviour.as_ref().is_some_and(|b| b.ignores_sigterm);
        if let Some(d) = serving.filter(|d| d.handles_sigterm && !ignores) {
            let _ = d;
            return (400.min(grace.max(1)), 0);
        }
        self.sigterm_process(now, ni, key, i, grace)
    }

    /// SIGTERM to the container's shell process: a trap that exits soon, or nothing until
    /// the grace period ends (out of line: crates/split keeps a first visit's download to
    /// what it runs).
    #[inline(never)]
    fn sigterm_process(&mut self, now: Millis, ni: usize, key: &Key, i: usize, grace: Millis) -> (Millis, i64) {
        let trapped = self.in_container(now, ni, key, i, None, |host, proc| proc.as_mut().and_then(|p| p.sigterm(host))).flatten();
        match trapped {
            Some(code) => (100.min(grace.max(1)), code as i64),
            None => (grace.max(1), 137),
        }
    }

    /// Container `i` ended with `code`: record it and restart it as the pod's restart
    /// policy (or, for sidecars, always) says, with CrashLoopBackOff between restarts.
    #[allow(clippy::too_many_arguments)]
    fn exited(&mut self, cx: &mut Cx, ni: usize, key: &Key, i: usize, code: i64, reason: &str, message: Option<String>) {
        let Some(pod) = self.pods.get(&key.0, &key.1).cloned() else { return };
        let node_name = self.nodes[ni].name.clone();
        let src = self.nodes[ni].source.clone();
        let restart_policy = get_str(&pod, &["spec", "restartPolicy"]).unwrap_or("Always").to_string();
        let Some(rt) = self.nodes[ni].pods.get_mut(key) else { return };
        if rt.stage == Stage::Terminating {
            return;
        }
        let epoch = rt.epoch;
        let uid = rt.uid.clone();
        let c = &mut rt.ctrs[i];
        let CState::Running { started } = c.state else { return };
        let term = CState::Terminated { exit: code, reason: reason.to_string(), message, started, finished: cx.now };
        c.ready = false;
        c.stopping = false;
        c.proc = None;
        c.daemon = None;
        c.alive.clear();
        let (init, sidecar) = (c.init, c.sidecar);
        let name = c.name.clone();
        let obj = format!("Pod/{}/{}", key.0, key.1);
        let ran = cx.now.saturating_sub(started);
        cx.trace(
            if code == 0 { Flow::Runtime } else { Flow::NodeError },
            "exit",
            obj.clone(),
            if code == 0 { "ok" } else { "error" },
            "",
            format!("container {name} exited with code {code} ({reason})"),
        );
        // The kubelet never restarts an ephemeral container.
        if c.ephemeral {
            c.state = term;
            self.write_status(cx, ni, key);
            return;
        }
        if init && !sidecar && code == 0 {
            c.state = term;
            // Regular containers may start once every init container is done.
            let all_done = rt.ctrs.iter().filter(|x| x.init && !x.sidecar).all(|x| matches!(x.state, CState::Terminated { exit: 0, .. }));
            if all_done {
                for other in rt.ctrs.iter_mut().filter(|x| x.regular()) {
                    if matches!(&other.state, CState::Waiting { reason, .. } if reason == "PodInitializing") {
                        other.state = CState::Waiting { reason: "ContainerCreating".into(), message: None };
                    }
                }
            }
            self.write_status(cx, ni, key);
            self.run_containers(cx, ni, key, &pod);
            return;
        }
        // Sidecars restart until the main containers are done for good.
        let regular_done = rt.ctrs.iter().filter(|x| x.regular()).all(|x| matches!(x.state, CState::Terminated { .. }));
        let c = &mut rt.ctrs[i];
        let restart = (sidecar && !regular_done) || (!sidecar && (restart_policy == "Always" || (restart_policy == "OnFailure" && code != 0)));
        if !restart {
            c.state = term;
            self.write_status(cx, ni, key);
            self.after_regular_exit(cx, ni, key);
            return;
        }
        c.last = Some(term);
        // Ten minutes of running resets the back-off (`backOffPeriod`'s reset).
        if ran >= 600_000 {
            c.crash_backoff = 0;
        }
        let backoff = c.crash_backoff;
        c.crash_backoff = if backoff == 0 { 10_000 } else { (backoff * 2).min(300_000) };
        let field = ctr_field(c);
        let instance = c.instance;
        if backoff == 0 {
            // The first restart is immediate.
            c.state = CState::Waiting { reason: "ContainerCreating".into(), message: None };
            c.restarts += 1;
            self.write_status(cx, ni, key);
            cx.after(100, Self::timer_key(&node_name, key, epoch, &format!("restart:{i}:{instance}")));
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
        cx.every(backoff, Self::timer_key(&node_name, key, epoch, &format!("restart:{i}:{instance}")));
    }

    /// When every regular container has ended for good, the kubelet stops the sidecars
    /// (last started first) and the pod is done.
    fn after_regular_exit(&mut self, cx: &mut Cx, ni: usize, key: &Key) {
        let Some(pod) = self.pods.get(&key.0, &key.1).cloned() else { return };
        let Some(rt) = self.nodes[ni].pods.get(key) else { return };
        let regular_done = rt.ctrs.iter().filter(|c| c.regular()).all(|c| matches!(c.state, CState::Terminated { .. }));
        let failed_init = rt.ctrs.iter().any(|c| c.init && !c.sidecar && matches!(c.state, CState::Terminated { exit, .. } if exit != 0));
        if !(regular_done || failed_init) {
            return;
        }
        let grace = get_i64(&pod, &["spec", "terminationGracePeriodSeconds"]).unwrap_or(30).max(0) as Millis * 1000;
        let sidecars: Vec<usize> =
            rt.ctrs.iter().enumerate().filter(|(_, c)| c.sidecar && matches!(c.state, CState::Running { .. }) && !c.stopping).map(|(i, _)| i).collect();
        for i in sidecars.into_iter().rev() {
            let name = self.nodes[ni].pods[key].ctrs[i].name.clone();
            self.kill_container(cx, ni, key, i, &format!("Stopping container {name}"), "Killing", grace);
        }
    }

    #[inline(never)]
    fn restart_container(&mut self, cx: &mut Cx, ni: usize, key: &Key, i: usize, instance: u64) {
        let Some(rt) = self.nodes[ni].pods.get_mut(key) else { return };
        let c = &mut rt.ctrs[i];
        if c.instance != instance {
            return;
        }
        if matches!(&c.state, CState::Waiting { reason, .. } if reason == "CrashLoopBackOff") {
            c.restarts += 1;
        }
        if matches!(c.state, CState::Running { .. }) {
            return;
        }
        let src = self.nodes[ni].source.clone();
        if let Some(pod) = self.pods.get(&key.0, &key.1).cloned() {
            let c = &self.nodes[ni].pods[key].ctrs[i];
            let (field, image) = (ctr_field(c), c.image.clone());
            let always = get_str(&c.spec, &["imagePullPolicy"]) == Some("Always");
            if always {
                // `imagePullPolicy: Always` pulls again on every start.
                self.start_container(cx, ni, key, i, &pod);
                return;
            }
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
        // Regular containers first, then sidecars in reverse order.
        let mut order: Vec<usize> = (0..rt.ctrs.len()).filter(|&i| !rt.ctrs[i].init && matches!(rt.ctrs[i].state, CState::Running { .. })).collect();
        order.extend((0..rt.ctrs.len()).rev().filter(|&i| rt.ctrs[i].sidecar && matches!(rt.ctrs[i].state, CState::Running { .. })));
        let mut wait: Millis = 0;
        let count = order.len();
        for i in order {
            let c = &self.nodes[ni].pods[key].ctrs[i];
            let (name, field) = (c.name.clone(), ctr_field(c));
            let mut spent = 0;
            if let Some(hook) = get(&c.spec, &["lifecycle", "preStop"]).cloned() {
                match self.run_hook(cx, ni, key, i, &hook) {
                    Ok(t) => spent = t,
                    Err(msg) => {
                        let msg = msg.replace("PostStartHook", "PreStopHook");
                        cx.event(&src, pod, Some(&field), "Warning", "FailedPreStopHook", &msg, None);
                    }
                }
            }
            cx.event(&src, pod, Some(&field), "Normal", "Killing", &format!("Stopping container {name}"), None);
            let left = grace.saturating_sub(spent);
            let exited_already = !matches!(self.nodes[ni].pods[key].ctrs[i].state, CState::Running { .. })
                || self.nodes[ni].pods[key].ctrs[i].daemon.is_none() && self.nodes[ni].pods[key].ctrs[i].proc.is_none();
            let (t, _code) = if exited_already { (1, 0) } else { self.sigterm(cx.now, ni, key, i, left) };
            wait = wait.max(spent.min(grace) + t);
        }
        cx.trace(
            Flow::Kubelet,
            "terminate",
            format!("Pod/{}/{}", key.0, key.1),
            "ok",
            api::resource_version(pod),
            format!("kubelet on {node_name} stops {count} container(s) (grace period {}s)", grace / 1000),
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
                c.state = CState::Terminated { exit: 0, reason: "Completed".into(), message: None, started, finished: now };
                c.ready = false;
                c.proc = None;
            }
        }
        // Final delete with grace period 0 removes the pod from the API.
        let mut r = Request::delete(rid::POD, &key.0, &key.1, Credentials::User(user.clone()));
        r.grace_period = Some(0);
        let res = cx.api.handle(req_as(r, "kubelet", &user));
        if let Err(e) = &res {
            if e.code == 0 || e.code == 429 || e.code >= 500 {
                // The API server did not answer: the status manager tries again at its
                // next 10-second batch, keeping the pod until the delete goes through.
                let (node_name, epoch) = (self.nodes[ni].name.clone(), self.nodes[ni].pods[key].epoch);
                cx.after(10_000, Self::timer_key(&node_name, key, epoch, "stopped"));
                return;
            }
        }
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
        self.schedule_in_use(cx, ni);
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
        let term_json = |c: &Ctr, s: &CState| -> Value {
            match s {
                CState::Terminated { exit, reason, message, started, finished } => {
                    let mut t =
                        json!({"exitCode": exit, "reason": reason, "startedAt": ts(*started), "finishedAt": ts(*finished), "containerID": c.container_id});
                    if let Some(m) = message {
                        t["message"] = json!(m);
                    }
                    json!({"terminated": t})
                }
                _ => json!({}),
            }
        };
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
                t @ CState::Terminated { .. } => term_json(c, t),
            };
            let last = c.last.as_ref().map(|l| term_json(c, l)).unwrap_or(json!({}));
            let image = Reference::parse(&c.image).map(|r| r.full()).unwrap_or_else(|| c.image.clone());
            let running = matches!(c.state, CState::Running { .. });
            let mut j = json!({"name": c.name, "image": image, "imageID": c.image_id, "ready": c.ready, "restartCount": c.restarts,
                "started": running && c.started});
            if let Some(m) = j.as_object_mut() {
                m.insert("state", state);
                m.insert("lastState", last);
            }
            if !c.container_id.is_empty() {
                j["containerID"] = json!(c.container_id);
            }
            j
        };
        let regular: Vec<&Ctr> = rt.ctrs.iter().filter(|c| c.regular()).collect();
        let inits: Vec<&Ctr> = rt.ctrs.iter().filter(|c| c.init).collect();
        let ephemeral: Vec<&Ctr> = rt.ctrs.iter().filter(|c| c.ephemeral).collect();
        status["containerStatuses"] = Value::Array(regular.iter().map(|c| ctr_json(c)).collect());
        if !inits.is_empty() {
            status["initContainerStatuses"] = Value::Array(inits.iter().map(|c| ctr_json(c)).collect());
        }
        if !ephemeral.is_empty() {
            status["ephemeralContainerStatuses"] = Value::Array(ephemeral.iter().map(|c| ctr_json(c)).collect());
        }
        let initialized = initialized(rt);
        let sidecars_ready = inits.iter().filter(|c| c.sidecar).all(|c| c.ready);
        let all_ready = !regular.is_empty() && regular.iter().all(|c| c.ready) && sidecars_ready;
        let phase = phase(pod, rt);
        status["phase"] = json!(phase);
        status["hostIP"] = json!(host_ip(node.index));
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
            let names: Vec<&str> = inits.iter().filter(|c| !init_done(c)).map(|c| c.name.as_str()).collect();
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
            let names: Vec<&str> = inits.iter().filter(|c| c.sidecar && !c.ready).chain(regular.iter().filter(|c| !c.ready)).map(|c| c.name.as_str()).collect();
            let msg = format!("containers with unready status: [{}]", names.join(" "));
            crate::apiserver::set_condition(&mut holder, "Ready", "False", Some("ContainersNotReady"), Some(&msg), now);
            crate::apiserver::set_condition(&mut holder, "ContainersReady", "False", Some("ContainersNotReady"), Some(&msg), now);
        }
        crate::apiserver::set_condition(&mut holder, "PodScheduled", "True", None, None, now);
        // Order as the kubelet writes them.
        let order = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"];
        if let Some(conds) = holder["status"]["conditions"].as_array_mut() {
            conds.sort_stable_by_key(|c| order.iter().position(|o| get_str(c, &["type"]) == Some(o)).unwrap_or(9));
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
        if r.is_err() {
            self.retry_in_batch(cx, ni);
        }
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

    /// A pod status that could not be written (the API server or etcd unreachable, or
    /// throttled) is posted again by the status manager's next 10-second batch.
    fn retry_in_batch(&mut self, cx: &mut Cx, ni: usize) {
        let n = &mut self.nodes[ni];
        if n.batch_pending {
            return;
        }
        n.batch_pending = true;
        cx.every(10_000 - cx.now % 10_000, format!("{}|status-batch", n.name));
    }

    fn heartbeat(&mut self, cx: &mut Cx, ni: usize) {
        cx.user = self.nodes[ni].user.name.clone();
        let n = &self.nodes[ni];
        if n.down {
            return;
        }
        let user = n.user.clone();
        let name = n.name.clone();
        self.nodes[ni].next_status = cx.now + 10_000;
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

/// How long a node that joins stays NotReady: until the network plugin runs on it and
/// the kubelet's next status update (kind's nodes take about as long).
pub const NETWORK_READY_AFTER: Millis = 10_000;

impl Kubelets {
    /// A machine booted: its kubelet starts and registers its Node
    /// (`kubelet_node_status.go` `registerWithAPIServer`), NotReady until the network is
    /// up, and creates its Lease; from then on it is a node like the others.
    fn join(&mut self, cx: &mut Cx, spec: &NodeSpec) -> bool {
        if self.index.contains_key(&spec.name) {
            return false;
        }
        let ni = self.nodes.len();
        // Pod CIDRs and addresses continue after the nodes the cluster started with.
        let total = ni + 1;
        let user = UserInfo::node(&spec.name);
        cx.user = user.name.clone();
        let mut body = node_object(spec, ni, total, cx.now);
        if let Some(conds) = body["status"]["conditions"].as_array_mut() {
            for c in conds.iter_mut().filter(|c| get_str(c, &["type"]) == Some("Ready")) {
                c["status"] = json!("False");
                c["reason"] = json!("KubeletNotReady");
                c["message"] = json!(
                    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"
                );
            }
        }
        let created = cx.api.handle(req_as(Request::create(rid::NODE, "", body, Credentials::User(user.clone())), "kubelet", &user));
        let node_obj = match created {
            Ok(o) => o,
            Err(s) => {
                cx.trace(
                    Flow::NodeError,
                    "register",
                    format!("Node/{}", spec.name),
                    "error",
                    "",
                    format!("kubelet on {} could not register its node: {}", spec.name, s.message),
                );
                return false;
            }
        };
        let uid = api::uid(&node_obj).to_string();
        let source = Source { component: "kubelet", host: spec.name.clone(), user: user.clone() };
        self.nodes.push(Node {
            name: spec.name.clone(),
            index: ni,
            down: false,
            deferred: Vec::new(),
            source: source.clone(),
            user: user.clone(),
            cidr_base: pod_cidr(ni, total).0,
            next_ip: 2,
            free_ips: BTreeSet::new(),
            images: BTreeSet::new(),
            pull_busy_until: 0,
            fetched: BTreeMap::new(),
            pods: BTreeMap::new(),
            uid: uid.clone(),
            allocatable: Value::Object(spec.capacity.clone()),
            cpu: usage::milli(spec.capacity.get("cpu").and_then(Value::as_str)).unwrap_or(1000),
            in_use_reported: BTreeSet::new(),
            next_status: cx.now + NETWORK_READY_AFTER,
            status_pending: false,
            batch_pending: false,
        });
        self.index.insert(spec.name.clone(), ni);
        let _ = cx.api.handle(req_as(
            Request::create(rid::LEASE, "kube-node-lease", lease_object(&spec.name, &uid, cx.now), Credentials::User(user.clone())),
            "kubelet",
            &user,
        ));
        if !self.drivers.is_empty() {
            let csinode = node::csinode_object(&spec.name, &uid, &self.drivers);
            let _ = cx.api.handle(req_as(Request::create(rid::CSINODE, "", csinode, Credentials::User(user.clone())), "kubelet", &user));
        }
        cx.event(&source, &node_obj, None, "Normal", "Starting", "Starting kubelet.", None);
        cx.trace(
            Flow::Kubelet,
            "register",
            format!("Node/{}", spec.name),
            "ok",
            api::resource_version(&node_obj),
            format!("machine {0} booted: its kubelet registers Node {0} (NotReady until its network is up)", spec.name),
        );
        cx.after(NETWORK_READY_AFTER, format!("{}|network-ready", spec.name));
        true
    }

    /// The machine under a node is gone: its kubelet and what it ran go with it.
    fn leave(&mut self, cx: &mut Cx, name: &str) -> bool {
        let Some(ni) = self.index.remove(name) else { return false };
        self.nodes[ni].down = true;
        for (_, rt) in std::mem::take(&mut self.nodes[ni].pods) {
            self.release_ip(ni, &rt);
        }
        cx.user = self.nodes[ni].user.name.clone();
        cx.trace(Flow::Kubelet, "machine", format!("Node/{name}"), "ok", "", format!("machine {name} is terminated: its kubelet stops for good"));
        true
    }

    /// What `GET /api/v1/namespaces/NS/pods/NAME/log?container=C` reads from the node's
    /// runtime, with the kubelet's errors (`validateContainerLogStatus`).
    fn read_logs(&self, namespace: &str, pod: &str, container: &str, previous: bool) -> Result<Vec<(Millis, String)>, Status> {
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
        let timed = |lines: &[String], times: &[Millis]| lines.iter().zip(times).map(|(l, t)| (*t, l.clone())).collect::<Vec<_>>();
        if previous {
            return match (&c.state, &c.previous_logs) {
                (CState::Running { .. }, Some((p, t))) if last_terminated => Ok(timed(p, t)),
                (CState::Waiting { .. }, _) if last_terminated && !c.container_id.is_empty() => Ok(timed(&c.logs, &c.log_times)),
                _ => Err(Status::bad_request(format!("previous terminated container {container:?} in pod {pod:?} not found"))),
            };
        }
        match &c.state {
            CState::Running { .. } | CState::Terminated { .. } if !c.container_id.is_empty() => Ok(timed(&c.logs, &c.log_times)),
            _ if last_terminated && !c.container_id.is_empty() => Ok(timed(&c.logs, &c.log_times)),
            CState::Waiting { reason, .. } => Err(Status::bad_request(match reason.as_str() {
                "ErrImagePull" => format!("container {container:?} in pod {pod:?} is waiting to start: image can't be pulled"),
                "ImagePullBackOff" => format!("container {container:?} in pod {pod:?} is waiting to start: trying and failing to pull image"),
                r => format!("container {container:?} in pod {pod:?} is waiting to start: {r}"),
            })),
            _ => Err(Status::bad_request(format!("container {container:?} in pod {pod:?} is terminated"))),
        }
    }
}

impl Kubelets {
    /// `kubectl exec`: run a command in a running container (`pkg/kubelet/server` `getExec`).
    /// The running container an exec of `argv` reaches (traced, `how` after it): its node,
    /// its pod and its index, or the kubelet's refusal.
    fn exec_target(&mut self, cx: &mut Cx, namespace: &str, pod: &str, container: &str, argv: &[String], how: &str) -> Result<(usize, Key, usize), Status> {
        let (ni, key, i) = self.running_container(cx, namespace, pod, container)?;
        cx.trace(
            Flow::Runtime,
            "exec",
            format!("Pod/{namespace}/{pod}"),
            "ok",
            "",
            format!("kubelet on {} runs `{}` in container {container}{how}", self.nodes[ni].name, shell_words(argv)),
        );
        Ok((ni, key, i))
    }

    /// A running container the kubelet's streaming server connects a client to (`exec`,
    /// `attach`): its node, its pod and its index, or the kubelet's refusal.
    fn running_container(&mut self, cx: &mut Cx, namespace: &str, pod: &str, container: &str) -> Result<(usize, Key, usize), Status> {
        self.sync_informers(cx);
        let key = (namespace.to_string(), pod.to_string());
        let Some(ni) = self.nodes.iter().position(|n| n.pods.contains_key(&key)) else {
            return Err(Status::bad_request(format!("unable to upgrade connection: container not found ({container:?})")));
        };
        if self.nodes[ni].down {
            let node = &self.nodes[ni].name;
            return Err(Status::new(500, "", format!("error dialing backend: dial tcp {node}:10250: connect: no route to host")));
        }
        let rt = &self.nodes[ni].pods[&key];
        let Some(i) = rt.ctrs.iter().position(|c| c.name == container) else {
            return Err(Status::bad_request(format!("container {container} is not valid for pod {pod}")));
        };
        if !matches!(rt.ctrs[i].state, CState::Running { .. }) || rt.ctrs[i].proc.is_none() && rt.ctrs[i].daemon.is_none() {
            return Err(Status::bad_request(format!("unable to upgrade connection: container not found ({container:?})")));
        }
        cx.user = self.nodes[ni].user.name.clone();
        Ok((ni, key, i))
    }

    /// The 64 hex digits containerd names an exec by.
    fn exec_id(&mut self) -> String {
        format!("{:016x}{:016x}{:016x}{:016x}", self.rng.next_u64(), self.rng.next_u64(), self.rng.next_u64(), self.rng.next_u64())
    }

    fn exec_command(&mut self, cx: &mut Cx, namespace: &str, pod: &str, container: &str, argv: &[String]) -> Result<ExecOutput, Status> {
        let (ni, key, i) = self.exec_target(cx, namespace, pod, container, argv, "")?;
        let (code, out, _) = self.exec_in(cx, ni, &key, i, argv);
        if code == 126 && out.len() == 1 && out[0].1.starts_with("OCI runtime exec failed") {
            // containerd reports a missing program as an error of the exec, not an exit code.
            let id = self.exec_id();
            return Err(Status::new(
                500,
                "InternalError",
                format!(
                    "Internal error occurred: error executing command in container: failed to exec in container: failed to start exec {id:?}: {}",
                    out[0].1
                ),
            ));
        }
        Ok((out, code))
    }
}

/// What `verifyRunAsNonRoot` finds of a container that must not run as root (its own or
/// its pod's `runAsNonRoot`).
enum NonRoot {
    /// Not asked for, or satisfied.
    Fine,
    /// It would start as user 0, by `runAsUser` or by its image, or its image's user is a
    /// name that cannot be checked.
    Broken(String),
    /// kubeloop does not know the user the image runs as.
    Unknown,
}

fn non_root_check(pod: &Value, c: &Value, b: &Behaviour) -> NonRoot {
    let field =
        |k: &str| get(c, &["securityContext", k]).filter(|v| !v.is_null()).or_else(|| get(pod, &["spec", "securityContext", k]).filter(|v| !v.is_null()));
    if field("runAsNonRoot").and_then(Value::as_bool) != Some(true) {
        return NonRoot::Fine;
    }
    let who = format!("{}_{}({})", api::name(pod), api::namespace(pod), api::uid(pod));
    let name = get_str(c, &["name"]).unwrap_or("");
    if let Some(uid) = field("runAsUser").and_then(Value::as_i64) {
        return if uid == 0 {
            NonRoot::Broken(format!("container's runAsUser breaks non-root policy (pod: {who:?}, container: {name})"))
        } else {
            NonRoot::Fine
        };
    }
    let Some(user) = b.user.as_deref() else { return NonRoot::Unknown };
    let uid = user.split(':').next().unwrap_or("");
    match uid.parse::<u64>() {
        _ if uid.is_empty() => NonRoot::Broken(format!("container has runAsNonRoot and image will run as root (pod: {who:?}, container: {name})")),
        Ok(0) => NonRoot::Broken(format!("container has runAsNonRoot and image will run as root (pod: {who:?}, container: {name})")),
        Ok(_) => NonRoot::Fine,
        Err(_) => NonRoot::Broken(format!(
            "container has runAsNonRoot and image has non-numeric user ({uid}), cannot verify user is non-root (pod: {who:?}, container: {name})"
        )),
    }
}

impl KubeletClient for Kubelets {
    fn session_prompt(&self, id: u64) -> Option<String> {
        self.sessions.get(&id).map(session::Session::prompt)
    }
    fn attach_session(&self, namespace: &str, pod: &str, container: &str) -> Option<u64> {
        self.attach.get(&((namespace.to_string(), pod.to_string()), container.to_string())).map(|(_, id)| *id)
    }

    fn container_logs(&self, namespace: &str, pod: &str, container: &str, previous: bool) -> Result<Vec<(Millis, String)>, Status> {
        self.read_logs(namespace, pod, container, previous)
    }
    fn resource_stats(&self, now: Millis) -> Vec<crate::apiserver::metrics::NodeStats> {
        self.resource_stats_at(now)
    }
    fn port_forward(&self, now: Millis, namespace: &str, pod: &str, port: u16, path: &str) -> Result<(u16, String), String> {
        let key = (namespace.to_string(), pod.to_string());
        let Some(node) = self.nodes.iter().find(|n| n.pods.contains_key(&key)) else {
            return Err(format!("pod {pod} not found"));
        };
        if node.down {
            return Err(format!("error dialing backend: dial tcp {}:10250: connect: no route to host", node.name));
        }
        let rt = &node.pods[&key];
        // containerd's words when nothing in the pod's network namespace listens on the
        // port; the sandbox's ID is made up from the pod's identity.
        let sandbox = {
            let h =
                |seed: u64| format!("{:016x}", namespace.bytes().chain(pod.bytes()).fold(seed ^ rt.epoch, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3)));
            format!("{}{}{}{}", h(1), h(2), h(3), h(4))
        };
        let refused = || {
            format!(
                "error forwarding port {port} to pod {sandbox}, uid : failed to execute portforward in network namespace \"/var/run/netns/cni-{}-{}-{}-{}-{}\": failed to connect to localhost:{port} inside namespace \"{sandbox}\", IPv4: dial tcp4 127.0.0.1:{port}: connect: connection refused IPv6 dial tcp6 [::1]:{port}: connect: connection refused ",
                &sandbox[0..8], &sandbox[8..12], &sandbox[12..16], &sandbox[16..20], &sandbox[20..32]
            )
        };
        match &rt.ip {
            Some(ip) => self.backend(now, ip, port, path).map_err(|e| if e == "Connection refused" { refused() } else { e }),
            None => Err(refused()),
        }
    }
}

impl Controller for Kubelets {
    fn kubelet_client(&self) -> Option<&dyn KubeletClient> {
        Some(self)
    }
    fn exec(&mut self, cx: &mut Cx, namespace: &str, pod: &str, container: &str, argv: &[String]) -> Option<Result<ExecOutput, Status>> {
        Some(self.exec_command(cx, namespace, pod, container, argv))
    }
    fn exec_session(&mut self, cx: &mut Cx, namespace: &str, pod: &str, id: u64, input: ExecInput) -> Option<Result<ExecProgress, Status>> {
        Some(self.session_step(cx, namespace, pod, id, input))
    }
    fn attach(&mut self, cx: &mut Cx, namespace: &str, pod: &str, container: &str, input: ExecInput) -> Option<Result<ExecProgress, Status>> {
        Some(self.attach_step(cx, namespace, pod, container, input))
    }
    fn name(&self) -> &'static str {
        "kubelet"
    }
    fn user(&self) -> &UserInfo {
        &self.user
    }
    fn watches(&self) -> &'static [ResourceId] {
        &[rid::POD, rid::CONFIGMAP, rid::SECRET, rid::NODE, rid::PVC, rid::PV, rid::CSIDRIVER]
    }
    fn run(&mut self, cx: &mut Cx) {
        if !self.started {
            self.started = true;
            for (i, n) in self.nodes.iter_mut().enumerate() {
                n.uid = cx.api.store.get_by(rid::NODE, "", &n.name).map(|o| api::uid(o).to_string()).unwrap_or_default();
                // Stagger heartbeats over the 10s interval.
                let first = 10_000 - ((i as Millis * 7919) % 10_000).min(9_999);
                n.next_status = cx.now + first;
                cx.every(first, format!("{}|lease", n.name));
            }
        }
        self.sync_informers(cx);
    }
    fn timer(&mut self, cx: &mut Cx, key: &str) {
        let parts: Vec<&str> = key.split('|').collect();
        let Some(&ni) = parts.first().and_then(|n| self.index.get(*n)) else { return };
        if parts.len() == 2 && parts[1] == "network-ready" {
            self.node_objs.sync(&cx.api.store);
            self.heartbeat(cx, ni);
            cx.every(10_000, format!("{}|lease", parts[0]));
            return;
        }
        if parts.len() == 2 && parts[1] == "volumes-in-use" {
            self.sync_informers(cx);
            cx.user = self.nodes[ni].user.name.clone();
            self.report_in_use(cx, ni);
            return;
        }
        if parts.len() == 2 && parts[1] == "lease" {
            self.heartbeat(cx, ni);
            cx.every(10_000, key.to_string());
            return;
        }
        if parts.len() == 2 && parts[1] == "status-batch" {
            if self.nodes[ni].down {
                self.nodes[ni].deferred.push(key.to_string());
                return;
            }
            self.nodes[ni].batch_pending = false;
            self.sync_informers(cx);
            let keys: Vec<Key> = self.nodes[ni].pods.keys().cloned().collect();
            for k in keys {
                self.write_status(cx, ni, &k);
            }
            return;
        }
        if self.nodes[ni].down && parts.len() >= 5 {
            self.nodes[ni].deferred.push(key.to_string());
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
            "exit" | "oom" | "run" | "restart" => {
                let i = idx(1);
                let instance: u64 = action.get(2).and_then(|v| v.parse().ok()).unwrap_or(0);
                let current = self.nodes[ni].pods.get(&pk).and_then(|rt| rt.ctrs.get(i)).map(|c| (c.instance, matches!(c.state, CState::Running { .. })));
                match (action[0], current) {
                    ("restart", Some((n, _))) if n == instance => self.restart_container(cx, ni, &pk, i, instance),
                    ("run", Some((n, true))) if n == instance => self.run_main(cx, ni, &pk, i, instance, vec![]),
                    ("oom", Some((n, true))) if n == instance => self.exited(cx, ni, &pk, i, 137, "OOMKilled", None),
                    ("exit", Some((n, true))) if n == instance => {
                        let code: i64 = action.get(3).and_then(|v| v.parse().ok()).unwrap_or(0);
                        self.exited(cx, ni, &pk, i, code, if code == 0 { "Completed" } else { "Error" }, None);
                    }
                    _ => {}
                }
            }
            "probe" => {
                let kind = action.get(2).and_then(|k| ProbeKind::parse(k));
                let instance: u64 = action.get(3).and_then(|v| v.parse().ok()).unwrap_or(0);
                if let Some(kind) = kind {
                    self.probe(cx, ni, &pk, idx(1), kind, instance);
                }
            }
            "stopped" => self.stopped(cx, ni, &pk),
            "expand" => {
                let claim = action.get(1).copied().unwrap_or("");
                if let Some(rt) = self.nodes[ni].pods.get_mut(&pk) {
                    rt.resize_due.remove(claim);
                }
                self.node_expand(cx, ni, &pk, claim);
            }
            _ => {}
        }
    }
    fn busy(&self, _now: Millis) -> bool {
        false
    }
    fn machine(&mut self, cx: &mut Cx, m: &Machine) -> bool {
        match m {
            Machine::Up(spec) => self.join(cx, spec),
            Machine::Gone(name) => self.leave(cx, name),
        }
    }
    fn fault(&mut self, cx: &mut Cx, fault: &Fault) -> bool {
        let (name, down) = match fault {
            Fault::NodeDown(n) => (n, true),
            Fault::NodeUp(n) => (n, false),
            Fault::ApiServerUp => {
                // The API server answers again. Nothing is sent at once: each node's lease
                // controller renews at its next 10-second tick (the failed renewals only
                // waited for it), and the status manager posts what it could not write
                // meanwhile at its next 10-second batch (`syncBatch`), so the returning
                // API server is not met by every kubelet at the same instant.
                self.sync_informers(cx);
                for ni in 0..self.nodes.len() {
                    if !self.nodes[ni].down {
                        self.retry_in_batch(cx, ni);
                    }
                }
                return true;
            }
            Fault::StorageDriverDown(d) | Fault::StorageDriverUp(d) => {
                // The driver's node plugin on every node: its mounts fail while it is down
                // and succeed at the next retry once it is back.
                if !self.drivers.iter().any(|x| &x.name == d) {
                    return false;
                }
                if matches!(fault, Fault::StorageDriverDown(_)) {
                    self.drivers_down.insert(d.clone());
                } else {
                    self.drivers_down.remove(d);
                }
                return true;
            }
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
            let mut keys: BTreeSet<Key> = self.nodes[ni].pods.keys().cloned().collect_tree();
            for p in self.pods.list(None) {
                if get_str(p, &["spec", "nodeName"]) == Some(name.as_str()) {
                    keys.insert((api::namespace(p).to_string(), api::name(p).to_string()));
                }
            }
            for k in keys {
                self.reconcile(cx, ni, &k);
            }
            for k in std::mem::take(&mut self.nodes[ni].deferred) {
                self.timer(cx, &k);
            }
            // The volume manager looks again at what was attached while it was away.
            self.schedule_in_use(cx, ni);
            self.resume_attach_waits(cx, Some(ni));
        }
        true
    }
}

/// Output lines as one text (probe and hook messages).
fn text(lines: &[(u8, String)]) -> String {
    lines.iter().map(|(_, l)| crate::apiserver::output_text(l)).collect::<Vec<_>>().join("\n")
}

/// The event field path of a container (`spec.containers{web}`).
fn ctr_field(c: &Ctr) -> String {
    format!("spec.{}{{{}}}", c.list(), c.name)
}

/// A node's address (kind's 172.18.0.0/16 network).
fn host_ip(index: usize) -> String {
    format!("172.18.{}.{}", (index + 2) / 256, (index + 2) % 256)
}

/// A command line as a shell would show it.
fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$;&|<>*?".contains(c)) {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A probe's port: a number, or the name of one of the container's ports.
fn probe_port(v: Option<&Value>, spec: &Value) -> u16 {
    match v {
        Some(Value::Number(n)) => n.as_u64().unwrap_or(0).min(65_535) as u16,
        Some(Value::String(s)) => match s.parse::<u16>() {
            Ok(p) => p,
            Err(_) => get_array(spec, &["ports"])
                .iter()
                .find(|p| get_str(p, &["name"]) == Some(s.as_str()))
                .and_then(|p| get_i64(p, &["containerPort"]))
                .unwrap_or(0)
                .clamp(0, 65_535) as u16,
        },
        _ => 80,
    }
}

/// Whether an init container no longer holds the pod back: a regular one completed, a
/// sidecar started.
fn init_done(c: &Ctr) -> bool {
    if c.sidecar {
        matches!(c.state, CState::Running { .. }) && c.started || c.last.is_some() || c.restarts > 0
    } else {
        matches!(c.state, CState::Terminated { exit: 0, .. })
    }
}

/// Whether the pod is past initialization: every init container done, or a regular
/// container already started (`HasAnyActiveRegularContainerStarted`; sidecars stopped at
/// the end do not take a pod back to initializing).
fn initialized(rt: &PodRt) -> bool {
    rt.ctrs.iter().filter(|c| c.init).all(init_done)
        || rt.ctrs.iter().any(|c| c.regular() && (matches!(c.state, CState::Running { .. } | CState::Terminated { .. }) || c.last.is_some()))
}

/// The pod's phase from its containers (`kubelet_pods.go` `getPhase`).
fn phase(pod: &Value, rt: &PodRt) -> &'static str {
    let restart = get_str(pod, &["spec", "restartPolicy"]).unwrap_or("Always");
    let has_initialized = initialized(rt);
    let (mut pending_init, mut pending_sidecar, mut failed_init) = (0, 0, 0);
    for c in rt.ctrs.iter().filter(|c| c.init) {
        if c.sidecar {
            if !(has_initialized || matches!(c.state, CState::Running { .. }) && c.started) {
                pending_sidecar += 1;
            }
            continue;
        }
        match &c.state {
            CState::Running { .. } => pending_init += 1,
            CState::Terminated { exit, .. } => {
                if *exit != 0 {
                    failed_init += 1;
                }
            }
            CState::Waiting { .. } => match &c.last {
                Some(CState::Terminated { exit, .. }) if *exit != 0 => failed_init += 1,
                Some(_) => {}
                None => pending_init += 1,
            },
        }
    }
    let (mut running, mut waiting, mut stopped, mut succeeded) = (0, 0, 0, 0);
    for c in rt.ctrs.iter().filter(|c| c.regular()) {
        match &c.state {
            CState::Running { .. } => running += 1,
            CState::Terminated { exit, .. } => {
                stopped += 1;
                if *exit == 0 {
                    succeeded += 1;
                }
            }
            CState::Waiting { .. } => {
                if c.last.is_some() {
                    stopped += 1;
                } else {
                    waiting += 1;
                }
            }
        }
    }
    if failed_init > 0 && restart == "Never" {
        return "Failed";
    }
    if pending_init > 0 || (pending_sidecar > 0 && !has_initialized) {
        return "Pending";
    }
    if waiting > 0 {
        return "Pending";
    }
    if running > 0 {
        return "Running";
    }
    if stopped > 0 {
        if restart == "Always" {
            return "Running";
        }
        if stopped == succeeded {
            return "Succeeded";
        }
        if restart == "Never" {
            return "Failed";
        }
        return "Running";
    }
    "Pending"
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
