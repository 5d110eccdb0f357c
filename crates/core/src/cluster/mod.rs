//! Layer 5, the composition root: the simulated cluster — the API server, the loops around
//! it, and the event queue that drives them.
//!
//! Every loop is a [`Controller`]: it owns informers, reacts only to what it watches, and
//! writes only through the API server. The engine pops tasks in time order; after each,
//! it wakes (5 ms later, the watch latency) every running loop that watches a resource
//! that changed. Timers a loop sets (requeue-after, heartbeats, back-offs) come back to it
//! as keys, never as the event that caused them, as controller-runtime's reconcilers get
//! them. A run is quiet when no work is left: only periodic tasks (heartbeats, retries of
//! things that cannot progress) remain and no loop says it is busy.

pub mod attach;
pub mod bench;
pub mod etcdctl;
pub mod forward;
pub mod scenario;
pub mod sweep;

pub use crate::loops::kubelet::node::NodeSpec;
pub use crate::loops::Fault;

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::trace::{Flow, Record};
use crate::apiserver::ExecOutput;
use crate::apiserver::{ApiServer, Credentials, Request};
use crate::foundation::api::{self, rid, Object, RESOURCES};
use crate::foundation::sim::{Millis, Queue};
use crate::foundation::sort::CollectTree;
use crate::foundation::status::Status;
use crate::foundation::value::json;
use crate::loops::controllers::autoscaler::NodeGroup;
use crate::loops::controllers::namespace::root_ca_configmap;
use crate::loops::events::Recorder;
use crate::loops::kubelet::node::{lease_object, node_object};
use crate::loops::kubelet::registry::Registry;
use crate::loops::{Controller, Cx, Machine};

/// Watch-event delivery latency.
pub const WATCH_LATENCY: Millis = 5;

/// The default cluster: a kind-like control plane and three workers in three zones.
pub fn default_nodes() -> Vec<NodeSpec> {
    let mut cp = NodeSpec::worker("control-plane", "zone-a", "4", "8Gi");
    cp.labels.insert("node-role.kubernetes.io/control-plane", json!(""));
    cp.labels.insert("node.kubernetes.io/exclude-from-external-load-balancers", json!(""));
    cp.taints.push(json!({"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}));
    vec![
        cp,
        NodeSpec::worker("node-a", "zone-a", "4", "8Gi"),
        NodeSpec::worker("node-b", "zone-b", "4", "8Gi"),
        NodeSpec::worker("node-c", "zone-c", "4", "8Gi"),
    ]
}

#[derive(Clone, Debug)]
enum Task {
    Wake(usize),
    Timer(usize, String),
    Step(usize),
    Compact,
    /// A machine the infrastructure finished booting or terminated.
    Machine(Machine),
    /// metrics-server scrapes the kubelets.
    Scrape,
    /// A `kubectl wait` step's timeout (the wait is polled after every task).
    WaitDeadline,
}

/// A scheduled scenario action.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Apply manifests the way `kubectl apply -f` would.
    Apply {
        text: String,
        file: String,
    },
    /// Apply manifests the way `kubectl apply --server-side -f` would (field manager
    /// `kubectl`, no last-applied annotation).
    ApplyServerSide {
        text: String,
        file: String,
    },
    /// A kubectl command line (without `kubectl`).
    Kubectl(String),
    /// A line typed into the command the terminal is attached to (`kubectl exec -i`);
    /// None ends its input (Ctrl+D).
    Stdin(Option<String>),
    Fault(Fault),
    /// An `etcdctl` command line (without `etcdctl`): etcd's maintenance.
    Etcdctl(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub at: Millis,
    pub credentials: Credentials,
    pub action: Action,
}

/// What running a step printed (kubectl's stdout and stderr lines).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StepOutput {
    pub t: Millis,
    pub user: String,
    pub command: String,
    pub output: Vec<String>,
}

/// Cluster construction options.
#[derive(Debug, Clone)]
pub struct Config {
    pub seed: u64,
    pub nodes: Vec<NodeSpec>,
    pub users: Vec<(String, String, Vec<String>)>,
    pub registry: Registry,
    pub trace: bool,
    /// etcd's quota: the most the stored objects may take as JSON.
    pub quota_bytes: u64,
    /// The bearer token of `admin` (`system:masters`). `kubeloop serve` makes a random one
    /// per start; the page and scenario runs use `admin-token`.
    pub admin_token: String,
    /// Node groups a cluster autoscaler grows and shrinks; their first `min` nodes run
    /// from the start. None: the cluster has no autoscaler.
    pub node_groups: Vec<NodeGroup>,
    /// The CSI drivers under the cluster (the default: one zonal disk driver).
    pub storage_drivers: Vec<crate::loops::csi::CsiDriverSpec>,
    /// Clients that misbehave on purpose (a Scenario's `actors`).
    pub actors: Vec<crate::loops::actor::ActorSpec>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 1,
            nodes: default_nodes(),
            users: vec![],
            registry: Registry::default(),
            trace: true,
            quota_bytes: crate::apiserver::store::DEFAULT_QUOTA_BYTES,
            admin_token: "admin-token".into(),
            node_groups: vec![],
            actors: vec![],
            storage_drivers: vec![crate::loops::csi::CsiDriverSpec::default()],
        }
    }
}

#[derive(Clone)]
pub struct Cluster {
    pub api: ApiServer,
    pub now: Millis,
    pub events: Recorder,
    pub outputs: Vec<StepOutput>,
    queue: Queue<(Task, bool)>,
    work_tasks: usize,
    /// Exec sessions given an id so far.
    sessions: u64,
    controllers: Vec<Box<dyn Controller>>,
    running: Vec<bool>,
    wake_pending: Vec<Option<bool>>,
    dispatched: Vec<u64>,
    watchers: Vec<Vec<usize>>,
    steps: Vec<Step>,
    next_step: usize,
    compact_mark: u64,
    /// Tasks run so far: wakes, timers, steps (for benchmarks).
    pub tasks_run: [u64; 3],
    /// The kubeconfig of the kubectl that steps and the terminal run (contexts and their
    /// namespaces).
    pub kubeconfig: crate::kubectl::config::Kubeconfig,
    /// `kubectl wait` steps not over yet: their user, command and wait.
    waits: Vec<(String, String, crate::kubectl::wait::Wait)>,
    /// The terminal's open `kubectl port-forward`s, which its `curl localhost:PORT` reaches.
    pub forwards: Vec<forward::Forward>,
    /// The command the terminal's stdin goes to (`kubectl exec -i`), while it runs.
    pub attached: Option<attach::Attached>,
    /// Whether a person can type more after a command (the page's terminal): `exec -i`
    /// then stays attached; elsewhere its stdin ends at once.
    pub interactive: bool,
    /// A `kubectl run -i` waiting for its pod, attached, or waiting for its pod to end.
    run: Option<attach::Run>,
    /// Lines the terminal's commands printed later, as the run went on (a `kubectl run
    /// -i` attaching, its pod deleted): the page shows and drains them.
    pub printed: Vec<String>,
    /// The output a `kubectl attach` without `-i` follows, for the terminal to take.
    pub following: Option<crate::kubectl::LogFollow>,
}

/// Compaction interval of the API server (`--etcd-compaction-interval`).
pub const COMPACTION_INTERVAL: Millis = 5 * 60 * 1000;

/// Kinds the API server stores that no loop of kubeloop acts on: creating one warns that
/// nothing will happen, instead of leaving the person to wait for it. The README's list of
/// what is simulated is the complement of this one.
pub const UNSIMULATED: &[&str] = &["Ingress", "IngressClass", "NetworkPolicy", "Endpoints"];

/// `--leader-elect-renew-deadline`: how long a leader keeps trying to renew its lease
/// before it gives up leadership (and kube-controller-manager or kube-scheduler exits).
pub const LEADER_RENEW_DEADLINE: Millis = 10_000;
/// `--leader-elect-retry-period`: how often a candidate tries to take the lease.
pub const LEADER_RETRY_PERIOD: Millis = 2_000;
/// client-go's reflector relists after its watch breaks with exponential back-off from
/// 800 ms, doubling, up to 30 s (upstream adds up to as much again of jitter, which
/// kubeloop leaves out).
pub const RELIST_BACKOFF: (Millis, Millis) = (800, 30_000);

/// When a loop whose API server was away from `since` until `now` acts again: after an
/// outage past the renew deadline, at the restarted process's first leader-election retry
/// that finds the API server; after a shorter one, at its informers' first relist attempt
/// (reflector back-off) that does.
pub fn resume_after_outage(since: Millis, now: Millis) -> Millis {
    if now.saturating_sub(since) >= LEADER_RENEW_DEADLINE {
        let start = since + LEADER_RENEW_DEADLINE;
        let tries = now.saturating_sub(start).div_ceil(LEADER_RETRY_PERIOD);
        return start + tries * LEADER_RETRY_PERIOD;
    }
    let (mut wait, max) = RELIST_BACKOFF;
    let mut t = since;
    loop {
        t += wait;
        if t >= now {
            return t;
        }
        wait = (wait * 2).min(max);
    }
}

/// The loops that are not kube-controller-manager's: the scheduler, the kubelets, the CSI
/// drivers' sidecars and the cluster autoscaler run as their own processes.
const OUTSIDE_CONTROLLER_MANAGER: &[&str] =
    &["default-scheduler", "kubelet", "csi-provisioner", "csi-attacher", "csi-resizer", "cluster-autoscaler", "apiservice-availability-controller"];

/// Whether a loop runs inside kube-controller-manager (`controllerManagerDown` stops it).
pub fn in_controller_manager(name: &str) -> bool {
    !OUTSIDE_CONTROLLER_MANAGER.contains(&name)
}

impl Cluster {
    pub fn new(config: Config) -> Self {
        let mut api = ApiServer::new(config.seed, config.trace);
        let user_names: Vec<String> = config.users.iter().map(|(n, _, _)| n.clone()).collect();
        api.store.quota = config.quota_bytes;
        api.tokens.insert(config.admin_token.clone(), UserInfo::admin());
        for (name, token, groups) in &config.users {
            let mut g: Vec<&str> = groups.iter().map(String::as_str).collect();
            g.push("system:authenticated");
            api.tokens.insert(token.clone(), UserInfo::new(name, &g));
        }
        // A node group's first `min` machines run from the start, after the declared nodes.
        let mut nodes = config.nodes.clone();
        for g in &config.node_groups {
            nodes.extend((1..=g.min).map(|i| g.node_spec(i)));
        }
        bootstrap(&mut api, &nodes, &config.storage_drivers);
        // Each node's kubelet registered its CSINode with the drivers whose node plugins it
        // runs; the drivers' external-attacher has its identity.
        if !config.storage_drivers.is_empty() {
            for n in &nodes {
                let node_uid = api.store.get_by(rid::NODE, "", &n.name).map(|o| api::uid(o).to_string()).unwrap_or_default();
                api.bootstrap_object(crate::loops::kubelet::node::csinode_object(&n.name, &node_uid, &config.storage_drivers));
            }
            for o in crate::apiserver::rbac::external_attacher_policy() {
                api.bootstrap_object(o);
            }
            api.bootstrap_object(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "csi-attacher", "namespace": "kube-system"}}));
        }
        if !config.node_groups.is_empty() {
            for o in crate::apiserver::rbac::cluster_autoscaler_policy() {
                api.bootstrap_object(o);
            }
            api.bootstrap_object(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "cluster-autoscaler", "namespace": "kube-system"}}));
        }
        api.unsimulated = RESOURCES.iter().enumerate().filter(|(_, r)| UNSIMULATED.contains(&r.kind)).map(|(i, _)| i).collect_tree();
        let total = nodes.len();
        let mut controllers: Vec<Box<dyn Controller>> = vec![
            Box::new(crate::loops::controllers::replicaset::ReplicaSetController::new()),
            Box::new(crate::loops::controllers::deployment::DeploymentController::new()),
            Box::new(crate::loops::scheduler::Scheduler::new(config.seed)),
            Box::new(crate::loops::kubelet::Kubelets::new(&nodes, total, config.registry.clone(), config.seed).with_drivers(&config.storage_drivers)),
            Box::new(crate::loops::controllers::endpointslice::EndpointSliceController::new()),
            Box::new(crate::loops::controllers::garbagecollector::GarbageCollector::new()),
            Box::new(crate::loops::controllers::podgc::PodGcController::new()),
            Box::new(crate::loops::controllers::nodelifecycle::NodeLifecycleController::new()),
            Box::new(crate::loops::controllers::nodelifecycle::TaintEvictionController::new()),
            Box::new(crate::loops::controllers::namespace::ServiceAccountsController::new()),
            Box::new(crate::loops::controllers::namespace::NamespaceController::new()),
            Box::new(crate::loops::controllers::statefulset::StatefulSetController::new()),
            Box::new(crate::loops::controllers::daemonset::DaemonSetController::new()),
            Box::new(crate::loops::controllers::job::JobController::new()),
            Box::new(crate::loops::controllers::cronjob::CronJobController::new()),
            Box::new(crate::loops::controllers::ttlafterfinished::TtlAfterFinishedController::new()),
            Box::new(crate::loops::controllers::replicaset::ReplicaSetController::replication()),
            Box::new(crate::loops::controllers::disruption::DisruptionController::new()),
            Box::new(crate::loops::controllers::horizontal::HorizontalController::new()),
            Box::new(crate::loops::controllers::attachdetach::AttachDetachController::new()),
            Box::new(crate::loops::controllers::csiattacher::CsiAttacher::new(&config.storage_drivers)),
            Box::new(crate::loops::controllers::resourcequota::ResourceQuotaController::new()),
            Box::new(crate::loops::controllers::persistentvolume::PersistentVolumeController::new()),
            Box::new(crate::loops::controllers::protection::PvcProtectionController::new()),
            Box::new(crate::loops::controllers::protection::PvProtectionController::new()),
            Box::new(crate::loops::controllers::provisioner::CsiProvisioner::new(&config.storage_drivers)),
            Box::new(crate::loops::controllers::expand::ExpandController::new()),
            Box::new(crate::loops::controllers::resizer::CsiResizer::new(&config.storage_drivers)),
            Box::new(crate::loops::controllers::apiservice::ApiServiceAvailability::new()),
        ];
        for a in &config.actors {
            controllers.push(Box::new(crate::loops::actor::Actor::new(a)));
        }
        // As a real cluster, one without node groups has no autoscaler.
        if !config.node_groups.is_empty() {
            controllers.push(Box::new(crate::loops::controllers::autoscaler::ClusterAutoscaler::new(&config.node_groups)));
        }
        let mut watchers = vec![Vec::new(); RESOURCES.len()];
        for (i, c) in controllers.iter().enumerate() {
            for r in c.watches() {
                watchers[*r].push(i);
            }
        }
        let n = controllers.len();
        let mut c = Cluster {
            api,
            now: 0,
            events: Recorder::default(),
            outputs: vec![],
            waits: vec![],
            forwards: vec![],
            attached: None,
            following: None,
            interactive: false,
            run: None,
            printed: vec![],
            queue: Queue::default(),
            work_tasks: 0,
            sessions: 0,
            controllers,
            running: vec![true; n],
            wake_pending: vec![None; n],
            dispatched: vec![0; RESOURCES.len()],
            watchers,
            steps: vec![],
            next_step: 0,
            compact_mark: 0,
            tasks_run: [0; 3],
            kubeconfig: crate::kubectl::config::Kubeconfig::for_users(&user_names.iter().map(String::as_str).collect::<Vec<_>>()),
        };
        for i in 0..n {
            c.push(0, Task::Wake(i), false);
        }
        c.push(COMPACTION_INTERVAL, Task::Compact, true);
        c.push(crate::apiserver::metrics::METRIC_RESOLUTION, Task::Scrape, true);
        c
    }

    fn push(&mut self, at: Millis, task: Task, periodic: bool) {
        if !periodic {
            self.work_tasks += 1;
        }
        self.queue.push(at, (task, periodic));
    }

    /// Schedule scenario steps (in time order of `at`).
    pub fn add_steps(&mut self, steps: Vec<Step>) {
        for s in steps {
            let i = self.steps.len();
            let at = s.at.max(self.now);
            self.steps.push(s);
            self.push(at, Task::Step(i), false);
        }
    }

    /// Run one step right now (the page's and the terminal's way in).
    pub fn act(&mut self, credentials: Credentials, action: Action) -> StepOutput {
        let step = Step { at: self.now, credentials, action };
        let out = self.execute(&step);
        self.dispatch();
        if self.run.is_some() {
            self.poll_run();
        }
        out
    }

    /// Serve one API request now, as a client outside the cluster makes it, and wake the
    /// loops that watch what it wrote.
    pub fn request(&mut self, req: Request) -> Result<Object, Status> {
        self.api.now = self.now;
        let out = self.api.handle(req);
        self.dispatch();
        out
    }

    /// The kubelets, as the API server reaches them (a container's log, its sessions).
    pub fn kubelet(&self) -> Option<&dyn crate::apiserver::KubeletClient> {
        self.controllers.iter().find_map(|c| c.kubelet_client())
    }

    /// What a `kubectl logs -f` line follows once it has printed what is there.
    pub fn logs_follow(&mut self, credentials: &Credentials, line: &str) -> Option<crate::kubectl::LogFollow> {
        self.api.now = self.now;
        let creds = crate::kubectl::line_identity(&self.api, credentials, &self.kubeconfig, line).ok()?;
        let kubelet = self.controllers.iter().find_map(|c| c.kubelet_client());
        crate::kubectl::logs_follow(&mut self.api, kubelet, &creds, line)
    }

    /// `GET pods/NAME/log`: the API server reads what the container wrote from the node's
    /// kubelet.
    pub fn logs(&mut self, credentials: Credentials, namespace: &str, pod: &str, options: &crate::apiserver::LogOptions) -> Result<String, Status> {
        self.api.now = self.now;
        let kubelet = self.controllers.iter().find_map(|c| c.kubelet_client());
        self.api.pod_logs(credentials, namespace, pod, options, kubelet)
    }

    /// `kubectl exec`: the client's lookup and the API server's authorization, then the
    /// command in the node's kubelet, then what kubectl prints.
    pub fn exec(&mut self, credentials: &Credentials, line: &str) -> Vec<String> {
        self.api.now = self.now;
        let (line, heredoc) = crate::kubectl::heredoc(line);
        let target = match crate::kubectl::exec_prepare(&mut self.api, credentials, &line) {
            Ok(t) => t,
            Err(lines) => return lines,
        };
        if target.stdin {
            return self.exec_stdin(target, heredoc);
        }
        let result = self.kubelet_exec(&target.namespace, &target.pod, &target.container, &target.argv);
        crate::kubectl::exec_finish(&target, result)
    }

    /// `POST|GET pods/NAME/exec` as a client sends it: the API server authorizes `create
    /// pods/exec` and picks the container (`ExecLocation`), the node's kubelet runs the
    /// command. Returns its output lines and exit code.
    pub fn exec_request(
        &mut self,
        credentials: Credentials,
        namespace: &str,
        pod: &str,
        container: Option<&str>,
        argv: &[String],
    ) -> Result<ExecOutput, Status> {
        let container = self.exec_check(credentials, namespace, pod, container, argv)?;
        self.kubelet_exec(namespace, pod, &container, argv)
    }

    /// The API server's checks of an exec request, before it connects to the kubelet:
    /// the container it names (or the only one).
    pub fn exec_check(&mut self, credentials: Credentials, namespace: &str, pod: &str, container: Option<&str>, argv: &[String]) -> Result<String, Status> {
        self.api.now = self.now;
        let obj = self.api.handle(Request::new(crate::apiserver::Verb::Create, rid::POD, namespace, pod, credentials).with_sub("exec"))?;
        let container = crate::apiserver::pod_container(&obj, container)?;
        if argv.is_empty() {
            return Err(Status::bad_request("you must specify at least one command for the container".to_string()));
        }
        Ok(container)
    }

    /// The API server's part of `pods/NAME/portforward`: authorize `create pods/portforward`
    /// and find the pod's node (`PortForwardLocation`).
    pub fn port_forward_check(&mut self, credentials: Credentials, namespace: &str, pod: &str) -> Result<(), Status> {
        self.api.now = self.now;
        let obj = self.api.handle(Request::new(crate::apiserver::Verb::Create, rid::POD, namespace, pod, credentials).with_sub("portforward"))?;
        if api::get_str(&obj, &["spec", "nodeName"]).is_none_or(str::is_empty) {
            return Err(Status::bad_request(format!("pod {pod} does not have a host assigned")));
        }
        Ok(())
    }

    /// An HTTP `GET path` forwarded to a pod's `port` by its node's kubelet (after
    /// [`Cluster::port_forward_check`]): the answer of the simulated server listening
    /// there, or the error the kubelet writes on the port's error stream.
    pub fn port_forward(&mut self, namespace: &str, pod: &str, port: u16, path: &str) -> Result<(u16, String), String> {
        let Some(kubelet) = self.controllers.iter().enumerate().find_map(|(i, c)| c.kubelet_client().filter(|_| self.running[i])) else {
            return Err("error dialing backend: the kubelet is not running".to_string());
        };
        let out = kubelet.port_forward(self.now, namespace, pod, port, path);
        let what = match &out {
            Ok((code, _)) => format!("kubelet forwards GET {path} to port {port} of the pod: {code}"),
            Err(e) => format!("kubelet forwards a connection to port {port} of the pod: {e}"),
        };
        self.trace_component(Flow::Runtime, "portforward", "kubelet", &format!("Pod/{namespace}/{pod}"), "", if out.is_ok() { "ok" } else { "error" }, what);
        out
    }

    /// Run a command through the node's kubelet (after [`Cluster::exec_check`]).
    pub fn exec_run(&mut self, namespace: &str, pod: &str, container: &str, argv: &[String]) -> Result<ExecOutput, Status> {
        self.api.now = self.now;
        self.kubelet_exec(namespace, pod, container, argv)
    }

    /// A step of an exec session with stdin (after [`Cluster::exec_check`] for its start):
    /// the node's kubelet runs the command as stdin comes. `id` names the session; the
    /// caller picks it ([`Cluster::next_session_id`]).
    pub fn exec_session(&mut self, namespace: &str, pod: &str, id: u64, input: crate::apiserver::ExecInput) -> Result<crate::apiserver::ExecProgress, Status> {
        self.api.now = self.now;
        let mut result = None;
        for i in 0..self.controllers.len() {
            if result.is_some() || !self.running[i] {
                continue;
            }
            self.with_controller(i, |c, cx| result = c.exec_session(cx, namespace, pod, id, input));
        }
        self.dispatch();
        result.unwrap_or_else(|| Err(Status::bad_request("unable to upgrade connection: the kubelet is not running".to_string())))
    }

    /// A fresh id for an exec session.
    pub fn next_session_id(&mut self) -> u64 {
        self.sessions += 1;
        self.sessions
    }

    fn kubelet_exec(&mut self, namespace: &str, pod: &str, container: &str, argv: &[String]) -> Result<ExecOutput, Status> {
        let mut result = None;
        for i in 0..self.controllers.len() {
            if result.is_some() || !self.running[i] {
                continue;
            }
            self.with_controller(i, |c, cx| result = c.exec(cx, namespace, pod, container, argv));
        }
        self.dispatch();
        result.unwrap_or_else(|| Err(Status::bad_request(format!("unable to upgrade connection: container not found ({container:?})"))))
    }

    /// Whether the loop named `name` (`kube-scheduler`, `replicaset-controller`, ...) runs;
    /// `None` if the cluster has no such loop.
    pub fn loop_running(&self, name: &str) -> Option<bool> {
        self.loop_index(name).map(|i| self.running[i])
    }

    /// The loop a fault or a lesson names: its own name, without `-controller`, or
    /// `kube-scheduler` (the process) for the scheduler (its profile, `default-scheduler`).
    fn loop_index(&self, name: &str) -> Option<usize> {
        let name = if name == "kube-scheduler" { "default-scheduler" } else { name };
        self.controllers.iter().position(|c| c.name() == name || c.name().trim_end_matches("-controller") == name)
    }

    /// What the container runtimes run now, as the kubelets' resource endpoints report it:
    /// (namespace, pod, container) of every running container on a node that answers.
    pub fn running_containers(&self) -> Vec<(String, String, String)> {
        self.running_pods_with(|_, pod, out| out.extend(pod.containers.into_iter().map(|c| (pod.namespace.clone(), pod.name.clone(), c.name))))
    }

    /// Every pod a kubelet runs: (node, namespace, pod).
    pub fn running_pods(&self) -> Vec<(String, String, String)> {
        self.running_pods_with(|node, pod, out| out.push((node.to_string(), pod.namespace, pod.name)))
    }

    fn running_pods_with<T>(&self, mut each: impl FnMut(&str, crate::apiserver::metrics::PodStats, &mut Vec<T>)) -> Vec<T> {
        let Some(kubelet) = self.controllers.iter().enumerate().find_map(|(i, c)| c.kubelet_client().filter(|_| self.running[i])) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for node in kubelet.resource_stats(self.now) {
            for pod in node.pods {
                each(&node.name, pod, &mut out);
            }
        }
        out
    }

    pub fn controller_names(&self) -> Vec<&'static str> {
        self.controllers.iter().map(|c| c.name()).collect()
    }

    /// Whether nothing is left that would change the cluster.
    pub fn quiet(&self) -> bool {
        self.work_tasks == 0
            && self.wake_pending.iter().all(|w| *w != Some(false))
            && !self.controllers.iter().enumerate().any(|(i, c)| self.running[i] && c.busy(self.now))
    }

    /// The time of the next task, if any.
    pub fn next_time(&self) -> Option<Millis> {
        self.queue.peek_time()
    }

    /// Process every task due at or before `until`; the clock ends at `until`.
    pub fn run_until(&mut self, until: Millis) {
        self.run_until_within(until, || true);
    }

    /// As [`Cluster::run_until`], but asking `keep_going` before each task: the caller's
    /// wall-clock budget, so that a page or a server stays responsive however much there
    /// is to simulate. Returns whether the clock reached `until` (if not, the rest is
    /// still queued and the same call later carries on: the run is the same however it is
    /// cut).
    pub fn run_until_within(&mut self, until: Millis, mut keep_going: impl FnMut() -> bool) -> bool {
        while let Some(t) = self.queue.peek_time() {
            if t > until {
                break;
            }
            if !keep_going() {
                return false;
            }
            self.step();
        }
        self.now = self.now.max(until);
        self.api.now = self.now;
        true
    }

    /// Run until quiet, or for at most `budget` of simulated time; returns the end time.
    pub fn run_to_quiet(&mut self, budget: Millis) -> Millis {
        let cap = self.now.saturating_add(budget);
        while !self.quiet() {
            match self.queue.peek_time() {
                Some(t) if t <= cap => {
                    self.step();
                }
                _ => break,
            }
        }
        self.now
    }

    /// Pop and run one task. Returns false if the queue is empty.
    pub fn step(&mut self) -> bool {
        let Some((t, (task, periodic))) = self.queue.pop() else { return false };
        if !periodic {
            self.work_tasks -= 1;
        }
        self.now = self.now.max(t);
        self.api.now = self.now;
        match task {
            Task::Wake(i) => {
                self.tasks_run[0] += 1;
                self.wake_pending[i] = None;
                if self.running[i] {
                    self.with_controller(i, |c, cx| c.run(cx));
                }
            }
            Task::Timer(i, key) => {
                self.tasks_run[1] += 1;
                if self.running[i] {
                    self.with_controller(i, |c, cx| c.timer(cx, &key));
                }
            }
            Task::Step(i) => {
                self.tasks_run[2] += 1;
                let s = self.steps[i].clone();
                self.next_step = self.next_step.max(i + 1);
                self.execute(&s);
            }
            Task::Compact if self.api.down_since.is_some() || self.api.etcd_down_since.is_some() || self.api.store.space.alarm => {
                // The API server's compaction request reaches no etcd, or (under the NOSPACE
                // alarm) its compare-and-put of the compaction key is refused; tried next
                // interval. A full database needs `etcdctl compact`.
                self.push(self.now + COMPACTION_INTERVAL, Task::Compact, true);
            }
            Task::Compact => {
                // Compact to the revision seen one interval ago, as the API server does.
                let mark = self.api.store.revision();
                if self.compact_mark > self.api.store.compacted_revision() {
                    let message =
                        format!("compacted etcd to revision {} (every 5m): watches from older resourceVersions get 410 Gone and relist", self.compact_mark);
                    self.trace_component(Flow::Etcd, "compact", "kube-apiserver", "etcd", &self.compact_mark.to_string(), "ok", message);
                }
                self.api.store.compact(self.compact_mark);
                self.compact_mark = mark;
                self.push(self.now + COMPACTION_INTERVAL, Task::Compact, true);
            }
            Task::Machine(m) => {
                for i in 0..self.controllers.len() {
                    if self.running[i] {
                        self.with_controller(i, |c, cx| {
                            c.machine(cx, &m);
                        });
                    }
                }
            }
            Task::Scrape => {
                let kubelet = self.controllers.iter().find_map(|c| c.kubelet_client());
                self.api.scrape_metrics(kubelet);
                self.push(self.now + crate::apiserver::metrics::METRIC_RESOLUTION, Task::Scrape, true);
            }
            Task::WaitDeadline => {}
        }
        self.dispatch();
        if !self.waits.is_empty() {
            self.poll_waits();
        }
        if self.run.is_some() {
            self.poll_run();
        }
        true
    }

    /// Print what the pending `kubectl wait` steps now find: each line when its object
    /// meets the condition, or the timeout's error.
    fn poll_waits(&mut self) {
        let mut waits = std::mem::take(&mut self.waits);
        waits.retain_mut(|(user, command, w)| {
            let (lines, done) = w.poll(&self.api);
            if !lines.is_empty() {
                self.record_output(user.clone(), command.clone(), lines);
            }
            !done
        });
        self.waits = waits;
    }

    fn with_controller(&mut self, i: usize, f: impl FnOnce(&mut Box<dyn Controller>, &mut Cx)) {
        let mut timers = Vec::new();
        let user = self.controllers[i].user().name.clone();
        let name = self.controllers[i].name();
        let machines = {
            let mut cx = Cx::new(&mut self.api, self.now, &mut self.events, &mut timers, name, user);
            f(&mut self.controllers[i], &mut cx);
            std::mem::take(&mut cx.machines)
        };
        for (at, key, periodic) in timers {
            self.push(at, Task::Timer(i, key), periodic);
        }
        for (delay, m) in machines {
            self.push(self.now + delay, Task::Machine(m), false);
        }
    }

    /// Wake every loop that watches a resource written since the last dispatch.
    fn dispatch(&mut self) {
        for r in 0..RESOURCES.len() {
            let last = self.api.store.last_write(r);
            if last > self.dispatched[r] {
                self.dispatched[r] = last;
                let periodic = r == rid::LEASE;
                for k in 0..self.watchers[r].len() {
                    let i = self.watchers[r][k];
                    if !self.running[i] {
                        continue;
                    }
                    match self.wake_pending[i] {
                        Some(false) => {}
                        Some(true) if periodic => {}
                        _ => {
                            self.wake_pending[i] = Some(periodic);
                            self.push(self.now + WATCH_LATENCY, Task::Wake(i), periodic);
                        }
                    }
                }
            }
        }
    }

    fn execute(&mut self, s: &Step) -> StepOutput {
        let user = match &s.credentials {
            Credentials::User(u) => u.name.clone(),
            Credentials::Token(t) => self.api.tokens.get(t).map(|u| u.name.clone()).unwrap_or_else(|| "system:anonymous".into()),
        };
        let (command, output) = match &s.action {
            Action::Apply { text, file } => (format!("kubectl apply -f {file}"), crate::kubectl::apply_text(&mut self.api, &s.credentials, text, file)),
            // The rest out of line: a first visit applies and does nothing else (crates/split).
            _ => self.execute_more(s, &user),
        };
        self.record_output(user, command, output)
    }

    /// [`Cluster::execute`]'s steps other than an apply: the command and what it printed.
    #[inline(never)]
    fn execute_more(&mut self, s: &Step, user: &str) -> (String, Vec<String>) {
        match &s.action {
            Action::ApplyServerSide { text, file } => (
                format!("kubectl apply --server-side -f {file}"),
                crate::kubectl::apply_server_side(&mut self.api, &s.credentials, text, file, "kubectl", false),
            ),
            Action::Kubectl(cmd) if crate::kubectl::verb_of(cmd) == Some("logs") => (format!("kubectl {cmd}"), {
                let cmd = &self.kubeconfig.with_namespace(cmd);
                self.api.now = self.now;
                match crate::kubectl::line_identity(&self.api, &s.credentials, &self.kubeconfig, cmd) {
                    Ok(creds) => {
                        let kubelet = self.controllers.iter().find_map(|c| c.kubelet_client());
                        crate::kubectl::logs(&mut self.api, kubelet, &creds, cmd)
                    }
                    Err(e) => e,
                }
            }),
            Action::Kubectl(cmd) if crate::kubectl::verb_of(cmd) == Some("exec") => {
                let line = self.kubeconfig.with_namespace(cmd);
                self.api.now = self.now;
                let out = match crate::kubectl::line_identity(&self.api, &s.credentials, &self.kubeconfig, &line) {
                    Ok(creds) => self.exec(&creds, &line),
                    Err(e) => e,
                };
                (format!("kubectl {cmd}"), out)
            }
            Action::Kubectl(cmd) if crate::kubectl::verb_of(cmd) == Some("run") && crate::kubectl::run::run_attach(&self.kubeconfig, cmd).is_some() => {
                let out = crate::kubectl::run_in(&mut self.api, &s.credentials, &mut self.kubeconfig, cmd);
                let attach = crate::kubectl::run::run_attach(&self.kubeconfig, cmd);
                let creds = crate::kubectl::line_identity(&self.api, &s.credentials, &self.kubeconfig, cmd);
                if let (Some(run), Ok(creds), false) = (attach, creds, out.iter().any(|l| crate::kubectl::is_error_line(l))) {
                    // A run that is already waiting is given up, as a new command would.
                    let heredoc = crate::kubectl::heredoc(cmd).1;
                    self.start_run(user.to_string(), format!("kubectl {cmd}"), creds, run, heredoc, 60_000);
                }
                (format!("kubectl {cmd}"), out)
            }
            Action::Kubectl(cmd) if crate::kubectl::verb_of(cmd) == Some("debug") => {
                let line = self.kubeconfig.with_namespace(cmd);
                (format!("kubectl {cmd}"), self.debug_line(user.to_string(), &s.credentials, &line))
            }
            Action::Kubectl(cmd) if crate::kubectl::verb_of(cmd) == Some("attach") => {
                let line = self.kubeconfig.with_namespace(cmd);
                (format!("kubectl {cmd}"), self.attach_line(&s.credentials, &line))
            }
            Action::Kubectl(cmd) if crate::kubectl::verb_of(cmd) == Some("port-forward") => {
                let line = self.kubeconfig.with_namespace(cmd);
                (format!("kubectl {cmd}"), self.port_forward_line(&s.credentials, &line))
            }
            // The terminal's own machine: it reaches the cluster through its port-forwards.
            Action::Kubectl(cmd) if cmd.split_whitespace().next() == Some("curl") => (cmd.clone(), self.curl_line(cmd)),
            Action::Kubectl(cmd) if crate::kubectl::verb_of(cmd) == Some("wait") => {
                let (out, w) = crate::kubectl::run_in_waiting(&mut self.api, &s.credentials, &mut self.kubeconfig, cmd);
                if let Some(w) = w {
                    self.push(w.deadline(), Task::WaitDeadline, false);
                    self.waits.push((user.to_string(), format!("kubectl {cmd}"), w));
                }
                (format!("kubectl {cmd}"), out)
            }
            Action::Kubectl(cmd) => (format!("kubectl {cmd}"), crate::kubectl::run_in(&mut self.api, &s.credentials, &mut self.kubeconfig, cmd)),
            Action::Etcdctl(line) => (format!("etcdctl {line}"), etcdctl::run(&mut self.api.store, line)),
            Action::Stdin(text) => {
                let prompt = self.prompt().unwrap_or_default();
                (format!("{prompt}{}", text.as_deref().unwrap_or("^D")), self.stdin_line(text.as_deref()))
            }
            Action::Fault(f) => {
                let msg = self.fault(f);
                let out = if msg == f.describe() { vec![] } else { vec![msg] };
                (format!("fault: {}", f.describe()), out)
            }
            Action::Apply { .. } => unreachable!("Cluster::execute applies"),
        }
    }

    /// What a step printed, in the trace (as kubectl's or etcdctl's lines) and the outputs.
    fn record_output(&mut self, user: String, command: String, output: Vec<String>) -> StepOutput {
        if self.api.trace.enabled {
            let lines: Vec<String> = if output.is_empty() { vec![String::new()] } else { output.clone() };
            for line in &lines {
                self.api.trace.push(Record {
                    t: self.now,
                    flow: Flow::Request,
                    stage: "client",
                    component: if command.starts_with("etcdctl ") { "etcdctl".into() } else { "kubectl".into() },
                    user: user.clone(),
                    verb: String::new(),
                    object: String::new(),
                    resource_version: String::new(),
                    result: "ok",
                    message: if line.is_empty() { command.clone() } else { format!("{command}: {line}") },
                    request: None,
                });
            }
        }
        let out = StepOutput { t: self.now, user, command, output };
        self.outputs.push(out.clone());
        out
    }

    fn fault(&mut self, f: &Fault) -> String {
        match f {
            Fault::ControllerDown(name) | Fault::ControllerUp(name) => {
                let up = matches!(f, Fault::ControllerUp(_));
                let Some(i) = self.loop_index(name) else {
                    return format!("error: no controller named {name:?} (known: {})", self.controller_names().join(", "));
                };
                self.set_running(i, up);
                f.describe()
            }
            Fault::WebhookDown(w) => {
                self.api.webhooks_down.insert(w.clone());
                f.describe()
            }
            Fault::WebhookUp(w) => {
                self.api.webhooks_down.remove(w);
                f.describe()
            }
            Fault::ApiServerDown | Fault::EtcdDown => {
                let slot = if matches!(f, Fault::ApiServerDown) { &mut self.api.down_since } else { &mut self.api.etcd_down_since };
                slot.get_or_insert(self.now);
                self.control_plane_trace(f, "error");
                f.describe()
            }
            Fault::ApiServerUp | Fault::EtcdUp => {
                let slot = if matches!(f, Fault::ApiServerUp) { &mut self.api.down_since } else { &mut self.api.etcd_down_since };
                let Some(since) = slot.take() else { return f.describe() };
                self.control_plane_trace(f, "ok");
                if matches!(f, Fault::EtcdUp) {
                    // The watch cache starts again from etcd's current revision: watches
                    // resuming from older ones get 410 Gone and relist.
                    let rev = self.api.store.revision();
                    self.api.store.compact(rev);
                }
                self.after_outage(since, matches!(f, Fault::ApiServerUp));
                f.describe()
            }
            Fault::ControllerManagerDown | Fault::ControllerManagerUp => {
                let up = matches!(f, Fault::ControllerManagerUp);
                for i in 0..self.controllers.len() {
                    if !in_controller_manager(self.controllers[i].name()) {
                        continue;
                    }
                    self.set_running(i, up);
                }
                f.describe()
            }
            Fault::NodeDown(_) | Fault::NodeUp(_) | Fault::StorageDriverDown(_) | Fault::StorageDriverUp(_) => {
                let mut handled = false;
                for i in 0..self.controllers.len() {
                    let mut h = false;
                    self.with_controller(i, |c, cx| h = c.fault(cx, f));
                    handled |= h;
                }
                if handled {
                    f.describe()
                } else {
                    match f {
                        Fault::NodeDown(n) | Fault::NodeUp(n) => format!("error: no node named {n:?}"),
                        Fault::StorageDriverDown(d) | Fault::StorageDriverUp(d) => format!("error: no storage driver named {d:?}"),
                        _ => unreachable!("matched above"),
                    }
                }
            }
        }
    }

    /// Stop a loop, or start a stopped one again with its in-memory state lost.
    fn set_running(&mut self, i: usize, up: bool) {
        if up && !self.running[i] {
            self.running[i] = true;
            self.controllers[i].restart();
            self.wake_pending[i] = Some(false);
            self.push(self.now, Task::Wake(i), false);
        } else if !up {
            self.running[i] = false;
            self.wake_pending[i] = None;
        }
    }

    /// A control-plane outage begins or ends (step 1 for the API server, 5 for etcd).
    fn control_plane_trace(&mut self, f: &Fault, result: &'static str) {
        let (flow, object) = match f {
            Fault::ApiServerDown | Fault::ApiServerUp => (Flow::Request, "kube-apiserver"),
            _ => (Flow::Etcd, "etcd"),
        };
        self.trace_component(flow, "fault", object, object, "", result, f.describe());
    }

    /// A trace record from a part of the control plane that is not a loop.
    #[allow(clippy::too_many_arguments)]
    fn trace_component(&mut self, flow: Flow, stage: &'static str, component: &str, object: &str, rv: &str, result: &'static str, message: String) {
        if !self.api.trace.enabled {
            return;
        }
        self.api.trace.push(Record {
            t: self.now,
            flow,
            stage,
            component: component.to_string(),
            user: String::new(),
            verb: String::new(),
            object: object.to_string(),
            resource_version: rv.to_string(),
            result,
            message,
            request: None,
        });
    }

    /// The API server answers again after `outage`. Components that hold a leader lease
    /// (kube-controller-manager, kube-scheduler, the CSI sidecars, the cluster autoscaler)
    /// could not renew it: past the renew deadline they lost it, exited and start again
    /// with empty caches, relisting everything. The kubelets relist, renew their leases and
    /// post the statuses they could not write. Everyone is woken.
    /// `api`: the API server itself was away (the loops' watches broke), rather than
    /// etcd behind it (their watches stayed open and get 410 Gone when it returns).
    fn after_outage(&mut self, since: Millis, api: bool) {
        let outage = self.now.saturating_sub(since);
        let lost = outage >= LEADER_RENEW_DEADLINE;
        let resume = if lost || api { resume_after_outage(since, self.now) } else { self.now };
        for i in 0..self.controllers.len() {
            if !self.running[i] {
                continue;
            }
            let name = self.controllers[i].name();
            if name == "kubelet" {
                let f = Fault::ApiServerUp;
                self.with_controller(i, |c, cx| {
                    c.fault(cx, &f);
                });
            } else if lost {
                self.controllers[i].restart();
            }
            // Until then a write wakes no one: the loop has no watch yet.
            let at = if name == "kubelet" { self.now } else { resume };
            self.wake_pending[i] = Some(false);
            self.push(at, Task::Wake(i), false);
        }
        if lost {
            let message = format!(
                "kube-controller-manager and kube-scheduler could not renew their leader leases for {}s (renew deadline {}s): leader election lost, they restart, take the lease again at {} and relist",
                outage / 1000,
                LEADER_RENEW_DEADLINE / 1000,
                crate::foundation::sim::go_duration(resume)
            );
            self.trace_component(
                Flow::DeploymentController,
                "leader-election",
                "kube-controller-manager",
                "Lease/kube-system/kube-controller-manager",
                "",
                "error",
                message,
            );
        } else if resume > self.now {
            let message = format!(
                "the loops' watches broke for {}: their informers relist at {} (reflector back-off from 800ms, doubling); until then they see no change",
                crate::foundation::sim::go_duration(outage),
                crate::foundation::sim::go_duration(resume)
            );
            self.trace_component(Flow::Etcd, "watch", "kube-controller-manager", "", "", "error", message);
        }
    }

    /// Every stored object, as the API would return it.
    pub fn objects(&self) -> Vec<Object> {
        self.api.store.all().cloned().collect()
    }
}

/// Objects a fresh cluster has before anyone acts: bootstrap RBAC, system namespaces and
/// their service accounts, the `kubernetes` Service, built-in PriorityClasses, the storage
/// drivers' CSIDriver objects and the default StorageClass (its provisioner the first
/// driver), the nodes and their leases.
fn bootstrap(api: &mut ApiServer, nodes: &[NodeSpec], drivers: &[crate::loops::csi::CsiDriverSpec]) {
    for o in crate::apiserver::rbac::bootstrap_policy() {
        api.bootstrap_object(o);
    }
    for o in crate::loops::controllers::apiservice::local_apiservices() {
        api.bootstrap_object(o);
    }
    for o in crate::apiserver::flowcontrol::bootstrap_objects() {
        api.bootstrap_object(o);
    }
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        api.bootstrap_object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
        api.bootstrap_object(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}}));
        api.bootstrap_object(root_ca_configmap(ns));
    }
    for sa in crate::apiserver::rbac::CONTROLLER_ACCOUNTS.iter().chain([&crate::apiserver::rbac::CSI_PROVISIONER_ACCOUNT]) {
        api.bootstrap_object(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": "kube-system"}}));
    }
    for (name, value, desc) in [
        (
            "system-cluster-critical",
            2_000_000_000i64,
            "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
        ),
        ("system-node-critical", 2_000_001_000, "Used for system critical pods that must not be moved from their current node."),
    ] {
        api.bootstrap_object(json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value, "description": desc, "preemptionPolicy": "PreemptLowerPriority"}));
    }
    for d in drivers {
        api.bootstrap_object(crate::loops::csi::csi_driver_object(d));
    }
    if let Some(d) = drivers.first() {
        api.bootstrap_object(crate::loops::csi::default_storage_class(&d.name));
    }
    api.reserve_ip("10.96.0.1");
    api.bootstrap_object(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kubernetes", "namespace": "default", "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}], "type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster"},
            "status": {"loadBalancer": {}}}));
    let cp_ip = "172.18.0.2";
    api.bootstrap_object(json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "kubernetes", "namespace": "default", "labels": {"kubernetes.io/service-name": "kubernetes", "endpointslice.kubernetes.io/managed-by": "endpointslicemirroring-controller.k8s.io"}},
            "addressType": "IPv4", "endpoints": [{"addresses": [cp_ip], "conditions": {"ready": true}}], "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}));
    let total = nodes.len();
    for (i, n) in nodes.iter().enumerate() {
        api.bootstrap_object(node_object(n, i, total, 0));
        let node_uid = api.store.get_by(rid::NODE, "", &n.name).map(|o| api::uid(o).to_string()).unwrap_or_default();
        api.bootstrap_object(lease_object(&n.name, &node_uid, 0));
    }
}
