//! The simulated cluster: the API server, the loops around it, and the event queue that
//! drives them.
//!
//! Every loop is a [`Controller`]: it owns informers, reacts only to what it watches, and
//! writes only through the API server. The engine pops tasks in time order; after each,
//! it wakes (5 ms later, the watch latency) every running loop that watches a resource
//! that changed. Timers a loop sets (requeue-after, heartbeats, back-offs) come back to it
//! as keys, never as the event that caused them, as controller-runtime's reconcilers get
//! them. A run is quiet when no work is left: only periodic tasks (heartbeats, retries of
//! things that cannot progress) remain and no loop says it is busy.

use crate::api::{self, get_str, rid, Object, ObjectKey, ResourceId, RESOURCES};
use crate::apiserver::{ApiServer, Credentials, Request, Verb};
use crate::events::{Recorder, Source};
use crate::rbac::UserInfo;
use crate::registry::Registry;
use crate::sim::{rfc3339, Millis, Queue};
use crate::status::Status;
use crate::trace::{Flow, Record};
use crate::value::{json, Value};

/// Watch-event delivery latency.
pub const WATCH_LATENCY: Millis = 5;

/// What a loop may do while it runs.
pub struct Cx<'a> {
    pub api: &'a mut ApiServer,
    pub now: Millis,
    pub events: &'a mut Recorder,
    timers: &'a mut Vec<(Millis, String, bool)>,
    component: &'static str,
    /// The identity trace records name (a kubelet sets its node's).
    pub user: String,
}

impl Cx<'_> {
    /// Come back with `key` after `delay` (real work: keeps the run going).
    pub fn after(&mut self, delay: Millis, key: impl Into<String>) {
        self.timers.push((self.now + delay, key.into(), false));
    }
    /// Come back with `key` after `delay` for periodic or retry work that alone does not
    /// keep a run from being quiet (heartbeats, back-offs).
    pub fn every(&mut self, delay: Millis, key: impl Into<String>) {
        self.timers.push((self.now + delay, key.into(), true));
    }
    /// A trace record from this loop.
    pub fn trace(&mut self, flow: Flow, stage: &'static str, object: String, result: &'static str, rv: &str, message: String) {
        if !self.api.trace.enabled {
            return;
        }
        self.api.trace.push(Record {
            t: self.now,
            flow,
            stage,
            component: self.component.to_string(),
            user: self.user.clone(),
            verb: String::new(),
            object,
            resource_version: rv.to_string(),
            result,
            message,
            request: None,
        });
    }
    pub fn tracing(&self) -> bool {
        self.api.trace.enabled
    }
    /// Record an Event as `src`.
    #[allow(clippy::too_many_arguments)]
    pub fn event(&mut self, src: &Source, involved: &Value, field_path: Option<&str>, ty: &str, reason: &str, message: &str, action: Option<&str>) {
        self.events.record(self.api, src, involved, field_path, ty, reason, message, action);
    }
}

/// Run one loop once against an API server, outside any cluster: how unit tests seed
/// caches, call a sync and count the writes. Returns the timers the loop set.
pub fn run_once(c: &mut dyn Controller, api: &mut ApiServer, now: Millis) -> Vec<(Millis, String, bool)> {
    let mut timers = Vec::new();
    let mut events = Recorder::default();
    api.now = now;
    let user = c.user().name.clone();
    let name = c.name();
    let mut cx = Cx { api, now, events: &mut events, timers: &mut timers, component: name, user };
    c.run(&mut cx);
    timers
}

/// An independent control loop.
pub trait Controller {
    /// The component name (`deployment-controller`, `default-scheduler`, `kubelet`).
    fn name(&self) -> &'static str;
    /// The identity it authenticates as.
    fn user(&self) -> &UserInfo;
    /// Resources whose changes wake it.
    fn watches(&self) -> &'static [ResourceId];
    /// Sync informers and reconcile what is queued.
    fn run(&mut self, cx: &mut Cx);
    /// A timer it set fired.
    fn timer(&mut self, cx: &mut Cx, key: &str);
    /// Whether it has work in flight that will progress without outside change.
    fn busy(&self, _now: Millis) -> bool {
        false
    }
    /// A fault aimed at this loop (node down/up for the kubelets). Returns whether handled.
    fn fault(&mut self, _cx: &mut Cx, _fault: &Fault) -> bool {
        false
    }
    /// Called when the loop restarts after `controllerDown`: in-memory state is lost.
    fn restart(&mut self) {}
    /// A container's log lines, for the loops that run containers (the kubelets).
    fn logs(&self, _namespace: &str, _pod: &str, _container: &str, _previous: bool) -> Option<Result<Vec<String>, Status>> {
        None
    }
}

/// A fault injected by a scenario.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum Fault {
    NodeDown(String),
    NodeUp(String),
    ControllerDown(String),
    ControllerUp(String),
    WebhookDown(String),
    WebhookUp(String),
}

impl Fault {
    pub fn describe(&self) -> String {
        match self {
            Fault::NodeDown(n) => format!("node {n} goes down: its kubelet stops"),
            Fault::NodeUp(n) => format!("node {n} comes back"),
            Fault::ControllerDown(c) => format!("{c} stops"),
            Fault::ControllerUp(c) => format!("{c} restarts"),
            Fault::WebhookDown(w) => format!("webhook backend {w} becomes unavailable"),
            Fault::WebhookUp(w) => format!("webhook backend {w} recovers"),
        }
    }
}

/// A node of the simulated cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSpec {
    pub name: String,
    /// cpu, memory, pods (and any extended resource) as quantities.
    pub capacity: crate::value::Map,
    pub labels: crate::value::Map,
    pub taints: Vec<Value>,
}

impl NodeSpec {
    pub fn worker(name: &str, zone: &str, cpu: &str, memory: &str) -> Self {
        let mut labels = crate::value::Map::new();
        labels.insert("topology.kubernetes.io/zone", json!(zone));
        let mut capacity = crate::value::Map::new();
        capacity.insert("cpu", json!(cpu));
        capacity.insert("memory", json!(memory));
        capacity.insert("pods", json!("110"));
        NodeSpec { name: name.into(), capacity, labels, taints: vec![] }
    }
}

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

/// The pod CIDR of the `i`th node: 10.244.i.0/24 for small clusters, a /24 of
/// 10.64.0.0/10 for large ones.
pub fn pod_cidr(i: usize, total: usize) -> (u32, String) {
    let base: u32 =
        if total <= 256 { (10 << 24) | (244 << 16) | ((i as u32) << 8) } else { (10 << 24) | ((64 + (i as u32 >> 8)) << 16) | ((i as u32 & 255) << 8) };
    (base, format!("{}/24", crate::apiserver::ip_string(base)))
}

/// The Node object a kubelet registers.
pub fn node_object(spec: &NodeSpec, index: usize, total: usize, now: Millis) -> Value {
    let mut labels = spec.labels.clone();
    for (k, v) in [
        ("kubernetes.io/hostname", spec.name.as_str()),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("beta.kubernetes.io/os", "linux"),
        ("beta.kubernetes.io/arch", "amd64"),
    ] {
        labels.entry(k.to_string()).or_insert(json!(v));
    }
    let mut capacity = spec.capacity.clone();
    let mem_milli = capacity.get("memory").and_then(crate::quantity::value_milli).unwrap_or(8 << 30 << 10);
    capacity.insert("memory", json!(format!("{}Ki", mem_milli / 1000 / 1024)));
    capacity.entry("ephemeral-storage").or_insert(json!("102400Mi"));
    capacity.entry("hugepages-1Gi").or_insert(json!("0"));
    capacity.entry("hugepages-2Mi").or_insert(json!("0"));
    capacity.entry("pods").or_insert(json!("110"));
    let mut allocatable = capacity.clone();
    allocatable.insert("memory", json!(format!("{}Ki", (mem_milli / 1000 - (100 << 20)) / 1024)));
    allocatable.insert("ephemeral-storage", json!("92160Mi"));
    // Quantities as the API server serialises them (`8388608Ki` is `8Gi`).
    for m in [&mut capacity, &mut allocatable] {
        for v in m.values_mut() {
            if let Some(q) = v.as_str().map(crate::quantity::canonical) {
                *v = json!(q);
            }
        }
    }
    let (_, cidr) = pod_cidr(index, total);
    let ip = format!("172.18.{}.{}", (index + 2) / 256, (index + 2) % 256);
    let ts = rfc3339(now);
    let cond = |ty: &str, st: &str, reason: &str, msg: &str| json!({"type": ty, "status": st, "reason": reason, "message": msg, "lastHeartbeatTime": ts, "lastTransitionTime": ts});
    let mut node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": spec.name, "labels": labels,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr], "providerID": format!("kind://docker/kubeloop/{}", spec.name), "taints": if spec.taints.is_empty() { Value::Null } else { json!(spec.taints.clone()) }},
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": [
                cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": spec.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": format!("{:032x}", index + 1), "systemUUID": format!("{:032x}", index + 1), "bootID": format!("{:032x}", index + 7),
                "kernelVersion": "6.12.0-kubeloop", "osImage": "Debian GNU/Linux 12 (bookworm)", "containerRuntimeVersion": "containerd://2.1.4",
                "kubeletVersion": "v1.36.0", "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"},
        }
    });
    // An empty taint list is left out, as the API server's JSON leaves it out.
    if let Some(spec) = node.get_mut("spec").and_then(Value::as_object_mut) {
        spec.retain(|_, v| !v.is_null());
    }
    node
}

#[derive(Debug)]
enum Task {
    Wake(usize),
    Timer(usize, String),
    Step(usize),
    Compact,
}

/// A scheduled scenario action.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Apply manifests the way `kubectl apply -f` would.
    Apply {
        text: String,
        file: String,
    },
    /// A kubectl command line (without `kubectl`).
    Kubectl(String),
    Fault(Fault),
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
}

impl Default for Config {
    fn default() -> Self {
        Config { seed: 1, nodes: default_nodes(), users: vec![], registry: Registry::default(), trace: true }
    }
}

pub struct Cluster {
    pub api: ApiServer,
    pub now: Millis,
    pub events: Recorder,
    pub outputs: Vec<StepOutput>,
    queue: Queue<(Task, bool)>,
    work_tasks: usize,
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
}

/// Compaction interval of the API server (`--etcd-compaction-interval`).
pub const COMPACTION_INTERVAL: Millis = 5 * 60 * 1000;

impl Cluster {
    pub fn new(config: Config) -> Self {
        let mut api = ApiServer::new(config.seed, config.trace);
        api.tokens.insert("admin-token".to_string(), UserInfo::admin());
        for (name, token, groups) in &config.users {
            let mut g: Vec<&str> = groups.iter().map(String::as_str).collect();
            g.push("system:authenticated");
            api.tokens.insert(token.clone(), UserInfo::new(name, &g));
        }
        bootstrap(&mut api, &config.nodes);
        let total = config.nodes.len();
        let controllers: Vec<Box<dyn Controller>> = vec![
            Box::new(crate::controllers::replicaset::ReplicaSetController::new()),
            Box::new(crate::controllers::deployment::DeploymentController::new()),
            Box::new(crate::scheduler::Scheduler::new(config.seed)),
            Box::new(crate::kubelet::Kubelets::new(&config.nodes, total, config.registry.clone(), config.seed)),
            Box::new(crate::controllers::endpointslice::EndpointSliceController::new()),
            Box::new(crate::controllers::garbagecollector::GarbageCollector::new()),
            Box::new(crate::controllers::nodelifecycle::NodeLifecycleController::new()),
            Box::new(crate::controllers::nodelifecycle::TaintEvictionController::new()),
            Box::new(crate::controllers::namespace::ServiceAccountsController::new()),
            Box::new(crate::controllers::namespace::NamespaceController::new()),
        ];
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
            queue: Queue::default(),
            work_tasks: 0,
            controllers,
            running: vec![true; n],
            wake_pending: vec![None; n],
            dispatched: vec![0; RESOURCES.len()],
            watchers,
            steps: vec![],
            next_step: 0,
            compact_mark: 0,
            tasks_run: [0; 3],
        };
        for i in 0..n {
            c.push(0, Task::Wake(i), false);
        }
        c.push(COMPACTION_INTERVAL, Task::Compact, true);
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

    /// `GET pods/NAME/log`: the API server checks the request and the pod, then reads
    /// from the kubelet of the pod's node. Returns the log text.
    pub fn logs(&mut self, credentials: Credentials, namespace: &str, pod: &str, container: Option<&str>, previous: bool) -> Result<String, Status> {
        self.api.now = self.now;
        let obj = self.api.handle(Request::new(Verb::Get, rid::POD, namespace, pod, credentials).with_sub("log"))?;
        let names = |list: &str| api::get_array(&obj, &["spec", list]).iter().filter_map(|c| get_str(c, &["name"])).collect::<Vec<_>>();
        let (containers, inits) = (names("containers"), names("initContainers"));
        let container = match container.filter(|c| !c.is_empty()) {
            Some(c) => c.to_string(),
            None if containers.len() == 1 => containers[0].to_string(),
            None => {
                let mut msg = format!("a container name must be specified for pod {pod}, choose one of: [{}]", containers.join(" "));
                if !inits.is_empty() {
                    msg.push_str(&format!(" or one of the init containers: [{}]", inits.join(" ")));
                }
                return Err(Status::bad_request(msg));
            }
        };
        if !containers.contains(&container.as_str()) && !inits.contains(&container.as_str()) {
            return Err(Status::bad_request(format!("container {container} is not valid for pod {pod}")));
        }
        if get_str(&obj, &["spec", "nodeName"]).unwrap_or("").is_empty() {
            return Err(Status::bad_request(format!("pod {pod} does not have a host assigned")));
        }
        let lines = self.controllers.iter().find_map(|c| c.logs(namespace, pod, &container, previous)).unwrap_or_else(|| Ok(vec![]))?;
        Ok(lines.iter().map(|l| format!("{l}\n")).collect())
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
        while let Some(t) = self.queue.peek_time() {
            if t > until {
                break;
            }
            self.step();
        }
        self.now = self.now.max(until);
        self.api.now = self.now;
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
            Task::Compact => {
                // Compact to the revision seen one interval ago, as the API server does.
                let mark = self.api.store.revision();
                self.api.store.compact(self.compact_mark);
                self.compact_mark = mark;
                self.push(self.now + COMPACTION_INTERVAL, Task::Compact, true);
            }
        }
        self.dispatch();
        true
    }

    fn with_controller(&mut self, i: usize, f: impl FnOnce(&mut Box<dyn Controller>, &mut Cx)) {
        let mut timers = Vec::new();
        let user = self.controllers[i].user().name.clone();
        let name = self.controllers[i].name();
        {
            let mut cx = Cx { api: &mut self.api, now: self.now, events: &mut self.events, timers: &mut timers, component: name, user };
            f(&mut self.controllers[i], &mut cx);
        }
        for (at, key, periodic) in timers {
            self.push(at, Task::Timer(i, key), periodic);
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
            Action::Kubectl(cmd) if crate::kubectl::verb_of(cmd) == Some("logs") => (format!("kubectl {cmd}"), crate::kubectl::logs(self, &s.credentials, cmd)),
            Action::Kubectl(cmd) => (format!("kubectl {cmd}"), crate::kubectl::run(&mut self.api, &s.credentials, cmd)),
            Action::Fault(f) => {
                let msg = self.fault(f);
                let out = if msg == f.describe() { vec![] } else { vec![msg] };
                (format!("fault: {}", f.describe()), out)
            }
        };
        if self.api.trace.enabled {
            let lines: Vec<String> = if output.is_empty() { vec![String::new()] } else { output.clone() };
            for line in &lines {
                self.api.trace.push(Record {
                    t: self.now,
                    flow: Flow::Request,
                    stage: "client",
                    component: "kubectl".into(),
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
                let Some(i) = self.controllers.iter().position(|c| c.name() == name || c.name().trim_end_matches("-controller") == name) else {
                    return format!("error: no controller named {name:?} (known: {})", self.controller_names().join(", "));
                };
                if up && !self.running[i] {
                    self.running[i] = true;
                    self.controllers[i].restart();
                    self.wake_pending[i] = Some(false);
                    self.push(self.now, Task::Wake(i), false);
                } else if !up {
                    self.running[i] = false;
                    self.wake_pending[i] = None;
                }
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
            Fault::NodeDown(_) | Fault::NodeUp(_) => {
                let mut handled = false;
                for i in 0..self.controllers.len() {
                    let mut h = false;
                    self.with_controller(i, |c, cx| h = c.fault(cx, f));
                    handled |= h;
                }
                if handled {
                    f.describe()
                } else {
                    format!(
                        "error: no node named {:?}",
                        match f {
                            Fault::NodeDown(n) | Fault::NodeUp(n) => n,
                            _ => "",
                        }
                    )
                }
            }
        }
    }

    /// Every stored object, as the API would return it.
    pub fn objects(&self) -> Vec<Object> {
        self.api.store.all().cloned().collect()
    }
}

/// Objects a fresh cluster has before anyone acts: bootstrap RBAC, system namespaces and
/// their service accounts, the `kubernetes` Service, built-in PriorityClasses, the nodes
/// and their leases.
fn bootstrap(api: &mut ApiServer, nodes: &[NodeSpec]) {
    let put = |api: &mut ApiServer, mut v: Value, uid: bool| {
        let r = api::resource_for_kind(get_str(&v, &["apiVersion"]).unwrap_or(""), get_str(&v, &["kind"]).unwrap_or(""));
        let Some(r) = r else { return };
        crate::defaults::apply(RESOURCES[r].kind, &mut v);
        if uid {
            let u = format!("00000000-0000-4000-8000-{:012x}", api.store.revision());
            let m = api::entry(&mut v, &["metadata"]);
            m.insert("uid", json!(u));
            m.insert("creationTimestamp", json!(rfc3339(0)));
        }
        let key = ObjectKey::new(r, api::namespace(&v), api::name(&v));
        let _ = api.store.create(&key, Object::new(v));
    };
    for o in crate::rbac::bootstrap_policy() {
        put(api, o, true);
    }
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        put(api, json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}), true);
        put(api, json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}}), true);
        put(api, root_ca_configmap(ns), true);
    }
    for sa in crate::rbac::CONTROLLER_ACCOUNTS {
        put(api, json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": "kube-system"}}), true);
    }
    for (name, value, desc) in [
        (
            "system-cluster-critical",
            2_000_000_000i64,
            "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
        ),
        ("system-node-critical", 2_000_001_000, "Used for system critical pods that must not be moved from their current node."),
    ] {
        put(
            api,
            json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value, "description": desc, "preemptionPolicy": "PreemptLowerPriority"}),
            true,
        );
    }
    api.reserve_ip("10.96.0.1");
    put(
        api,
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kubernetes", "namespace": "default", "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}], "type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster"},
            "status": {"loadBalancer": {}}}),
        true,
    );
    let cp_ip = "172.18.0.2";
    put(
        api,
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "kubernetes", "namespace": "default", "labels": {"kubernetes.io/service-name": "kubernetes", "endpointslice.kubernetes.io/managed-by": "endpointslicemirroring-controller.k8s.io"}},
            "addressType": "IPv4", "endpoints": [{"addresses": [cp_ip], "conditions": {"ready": true}}], "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}),
        true,
    );
    let total = nodes.len();
    for (i, n) in nodes.iter().enumerate() {
        put(api, node_object(n, i, total, 0), true);
        let node_uid = api.store.get_by(rid::NODE, "", &n.name).map(|o| api::uid(o).to_string()).unwrap_or_default();
        put(api, lease_object(&n.name, &node_uid, 0), true);
    }
}

pub fn root_ca_configmap(ns: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-root-ca.crt", "namespace": ns, "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
        "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\nMIIBkubeloopSimulatedClusterCA\n-----END CERTIFICATE-----\n"}})
}

/// The node's Lease in `kube-node-lease`.
pub fn lease_object(node: &str, node_uid: &str, now: Millis) -> Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": node, "namespace": "kube-node-lease",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid}]},
        "spec": {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": crate::sim::rfc3339_micro(now)}})
}

/// A Request as a component.
pub fn req_as(mut r: Request, component: &str, user: &UserInfo) -> Request {
    r.credentials = Credentials::User(user.clone());
    r.component = component.to_string();
    r.protobuf = true;
    r
}
