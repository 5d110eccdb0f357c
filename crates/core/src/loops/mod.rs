//! Layer 3, the loops: everything that runs beside the API server as its client. The
//! informers and the event recorder they use, the [`Controller`] trait and its context,
//! every kube-controller-manager loop, the scheduler, and the kubelets with their
//! container runtime and image registry.
//!
//! A loop learns about the world from informers over the store's watch history and
//! changes it only through [`ApiServer::handle`], as any client would. Loops know nothing
//! of kubectl, the cluster that composes them, or the page.

pub mod actor;
pub mod controllers;
pub mod csi;
pub mod events;
pub mod informer;
pub mod kubelet;
pub mod scheduler;

use crate::apiserver::rbac::UserInfo;
use crate::apiserver::trace::{Flow, Record};
use crate::apiserver::{ApiServer, Credentials, KubeletClient, Request};
use crate::apiserver::{ExecInput, ExecOutput, ExecProgress};
use crate::foundation::api::ResourceId;
use crate::foundation::sim::Millis;
use crate::foundation::status::Status;
use crate::foundation::value::Value;
use events::{Recorder, Source};

/// What a loop may do while it runs.
pub struct Cx<'a> {
    pub api: &'a mut ApiServer,
    pub now: Millis,
    pub events: &'a mut Recorder,
    timers: &'a mut Vec<(Millis, String, bool)>,
    component: &'static str,
    /// The identity trace records name (a kubelet sets its node's).
    pub user: String,
    /// What the loop asked of the machines under the cluster, with the delay before each
    /// happens (the cluster carries them out: see [`Machine`]).
    pub machines: Vec<(Millis, Machine)>,
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
    /// Ask the infrastructure for a machine that boots for `boot` and then runs a kubelet
    /// that registers `spec` (a cloud provider's create-instance call).
    pub fn provision(&mut self, spec: crate::loops::kubelet::node::NodeSpec, boot: Millis) {
        self.machines.push((boot, Machine::Up(spec)));
    }
    /// Terminate the machine under a node: its kubelet stops for good.
    pub fn terminate(&mut self, node: &str) {
        self.machines.push((0, Machine::Gone(node.to_string())));
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

impl<'a> Cx<'a> {
    /// The context the cluster gives `component` for one run or timer.
    pub fn new(
        api: &'a mut ApiServer,
        now: Millis,
        events: &'a mut Recorder,
        timers: &'a mut Vec<(Millis, String, bool)>,
        component: &'static str,
        user: String,
    ) -> Self {
        Cx { api, now, events, timers, component, user, machines: Vec::new() }
    }
}

/// Run one loop once against an API server, outside any cluster: how unit tests seed
/// caches, call a sync and count the writes. Returns the timers the loop set.
pub fn run_once(c: &mut dyn Controller, api: &mut ApiServer, now: Millis) -> Vec<(Millis, String, bool)> {
    once(c, api, now, |c, cx| c.run(cx))
}

/// Fire one of a loop's timers once against `api` at `now`; returns the timers it set.
pub fn timer_once(c: &mut dyn Controller, api: &mut ApiServer, now: Millis, key: &str) -> Vec<(Millis, String, bool)> {
    once(c, api, now, |c, cx| c.timer(cx, key))
}

fn once(c: &mut dyn Controller, api: &mut ApiServer, now: Millis, f: impl FnOnce(&mut dyn Controller, &mut Cx)) -> Vec<(Millis, String, bool)> {
    let mut timers = Vec::new();
    let mut events = Recorder::default();
    api.now = now;
    let user = c.user().name.clone();
    let name = c.name();
    let mut cx = Cx { api, now, events: &mut events, timers: &mut timers, component: name, user, machines: Vec::new() };
    f(c, &mut cx);
    timers
}

/// A loop's copy, state and all: a [`crate::cluster::Cluster`] clones as the same cluster
/// at the same moment. Every `Controller` that is `Clone` has it.
pub trait ControllerClone {
    fn clone_box(&self) -> Box<dyn Controller>;
}

impl<T: Controller + Clone + 'static> ControllerClone for T {
    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
}

impl Clone for Box<dyn Controller> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// An independent control loop.
pub trait Controller: ControllerClone {
    /// The component name (`deployment-controller`, `default-scheduler`, `kubelet`).
    fn name(&self) -> &'static str;
    /// The identity it authenticates as.
    fn user(&self) -> &UserInfo;
    /// Resources whose changes wake it.
    fn watches(&self) -> &'static [ResourceId];
    /// Sync informers and reconcile what is queued. The reconcile of one object (`sync`) is
    /// `#[inline(never)]`: every loop's `run` runs in every cluster, and the page's first
    /// download holds only the functions a first visit runs (crates/split), so a `sync`
    /// inlined here would come with it for kinds the cluster does not have.
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
    /// A machine under the cluster booted or was terminated (the kubelets start or stop
    /// the node's kubelet). Returns whether handled.
    fn machine(&mut self, _cx: &mut Cx, _m: &Machine) -> bool {
        false
    }
    /// Called when the loop restarts after `controllerDown`: in-memory state is lost.
    fn restart(&mut self) {}
    /// The loops that run containers (the kubelets) answer the API server's log reads.
    fn kubelet_client(&self) -> Option<&dyn KubeletClient> {
        None
    }
    /// Run a command in a pod's container (`pods/exec` reaching the kubelet): its output
    /// lines with their stream (1 stdout, 2 stderr) and its exit code. `None` from loops
    /// that run no containers.
    fn exec(&mut self, _cx: &mut Cx, _namespace: &str, _pod: &str, _container: &str, _argv: &[String]) -> Option<Result<ExecOutput, Status>> {
        None
    }
    /// A step of exec session `id` in a pod's container (a command with stdin). `None`
    /// from loops that run no containers.
    fn exec_session(&mut self, _cx: &mut Cx, _namespace: &str, _pod: &str, _id: u64, _input: ExecInput) -> Option<Result<ExecProgress, Status>> {
        None
    }
    /// A step of a client attached to a container's stdin (`pods/attach`). `None` from
    /// loops that run no containers.
    fn attach(&mut self, _cx: &mut Cx, _namespace: &str, _pod: &str, _container: &str, _input: ExecInput) -> Option<Result<ExecProgress, Status>> {
        None
    }
}

/// A change of the machines under the cluster, which the cluster (the infrastructure: a
/// cloud provider's instances) carries out when a loop asks for it through
/// [`Cx::provision`] or [`Cx::terminate`].
#[derive(Debug, Clone, PartialEq)]
pub enum Machine {
    /// A machine finished booting: its kubelet starts and registers this node.
    Up(crate::loops::kubelet::node::NodeSpec),
    /// The machine under this node is gone.
    Gone(String),
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
    /// A CSI driver's controller and node plugins stop answering (provisioning, attaching
    /// and mounting its volumes fail until it comes back).
    StorageDriverDown(String),
    StorageDriverUp(String),
    /// kube-apiserver stops: every request is refused, watches end; what runs keeps running.
    ApiServerDown,
    ApiServerUp,
    /// etcd stops: the API server is up but every read and write that needs etcd times out.
    EtcdDown,
    EtcdUp,
    /// kube-controller-manager stops: all its controllers at once.
    ControllerManagerDown,
    ControllerManagerUp,
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
            Fault::StorageDriverDown(d) => format!("storage driver {d} goes down: its controller and node plugins stop answering"),
            Fault::StorageDriverUp(d) => format!("storage driver {d} comes back"),
            Fault::ApiServerDown => "kube-apiserver goes down: every request is refused; running containers keep running".into(),
            Fault::ApiServerUp => "kube-apiserver comes back".into(),
            Fault::EtcdDown => "etcd goes down: the API server is up but cannot read or write".into(),
            Fault::EtcdUp => "etcd comes back".into(),
            Fault::ControllerManagerDown => "kube-controller-manager stops: all its controllers at once".into(),
            Fault::ControllerManagerUp => "kube-controller-manager restarts".into(),
        }
    }
}

/// A Request as a component.
pub fn req_as(mut r: Request, component: &str, user: &UserInfo) -> Request {
    r.credentials = Credentials::User(user.clone());
    r.component = component.to_string();
    r.protobuf = true;
    r.internal = true;
    r
}
