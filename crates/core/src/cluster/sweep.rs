//! The seed sweep: random scenarios with random faults, run with invariants checked after
//! every task and once the faults have cleared (in the spirit of TigerBeetle's VOPR and
//! FoundationDB's simulation tests).
//!
//! [`generate`] turns a seed into a [`Plan`]: timed steps that apply workloads of every
//! simulated kind (some subtly invalid), scale them, edit what a controller owns by hand,
//! delete with each cascade, drain and delete nodes, and inject every fault kind with its
//! recovery. The plan renders to a plain Scenario file, so any failure is replayed with
//! `kubeloop run` or `kubeloop sweep --check FILE`. [`run`] executes a scenario under the
//! [`Checker`]; [`minimize`] drops steps while the same invariant still breaks.

use crate::apiserver::store::EventType;
use crate::cluster::scenario::{add_file, Scenario};
use crate::cluster::Cluster;
use crate::foundation::api::{self, get_array, get_bool, get_i64, get_str, rid, RESOURCES};
use crate::foundation::sim::{Millis, Rng, Stream};
use crate::foundation::sort::{CollectTree, Sort};
use crate::foundation::value::Value;
use std::collections::{BTreeMap, BTreeSet};

/// How long a swept scenario runs by default (simulated).
pub const DEFAULT_DURATION: Millis = 60 * 60 * 1000;
/// The quiet time at the end of a run: no step and no fault after `end - SETTLE`, so
/// everything must have converged by `end`.
pub const SETTLE: Millis = 20 * 60 * 1000;

/// A generated scenario: its seed and timed steps, each the YAML of one step without its
/// `at` (for example `kubectl: "scale deployment d-web --replicas=3"`).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub seed: u64,
    pub end: Millis,
    pub steps: Vec<(Millis, String)>,
}

impl Plan {
    /// The plan as a Scenario file.
    pub fn render(&self) -> String {
        let mut out = format!(
            "# A scenario of the seed sweep (seed {}), run for {}s; replay it with\n# kubeloop sweep --check FILE --for {}s\napiVersion: kubeloop.dev/v1alpha1\nkind: Scenario\nmetadata:\n  name: sweep-{}\nspec:\n  seed: {}\n  steps:\n",
            self.seed,
            self.end / 1000,
            self.end / 1000,
            self.seed,
            self.seed
        );
        if self.steps.is_empty() {
            out.truncate(out.len() - "  steps:\n".len());
        }
        for (at, body) in &self.steps {
            out.push_str(&format!("  - at: {}s\n    {}\n", at / 1000, body));
        }
        out
    }
}

/// A string as a YAML double-quoted scalar (JSON's quoting is YAML's).
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

fn kubectl(line: &str) -> String {
    format!("kubectl: {}", quoted(line))
}

fn apply(manifest: &str) -> String {
    let mut s = String::from("apply: |\n");
    for line in manifest.lines() {
        s.push_str("      ");
        s.push_str(line);
        s.push('\n');
    }
    s.pop();
    s
}

const NAMES: &[&str] = &["web", "api"];
const IMAGES: &[&str] = &["nginx:1.27", "registry.k8s.io/nginx-slim:0.24", "redis:7", "nginx:latest"];
const NODES: &[&str] = &["node-a", "node-b", "node-c"];
const KINDS: &[(&str, &str)] = &[("deployment", "d"), ("replicaset", "rs"), ("statefulset", "ss"), ("daemonset", "ds"), ("job", "j"), ("pod", "p")];
const CASCADES: &[&str] = &["background", "foreground", "orphan"];
/// The loops a `controllerDown` fault stops (their names in the cluster, as upstream's).
const CONTROLLERS: &[&str] = &[
    "replicaset-controller",
    "deployment-controller",
    "statefulset-controller",
    "daemon-set-controller",
    "job-controller",
    "garbage-collector",
    "endpointslice-controller",
    "node-lifecycle-controller",
    "taint-eviction-controller",
    "default-scheduler",
    "attachdetach-controller",
    "persistentvolume-controller",
    "csi-provisioner",
];

/// An in-cluster validating webhook that refuses `:latest` Deployments in `default`.
fn webhook(fail: bool) -> String {
    let policy = if fail { "Fail" } else { "Ignore" };
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: policy}}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: image-policy, namespace: policy}}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: image-policy}}}}\n  template:\n    metadata:\n      labels: {{app: image-policy}}\n    spec:\n      containers:\n      - name: webhook\n        image: registry.example/image-policy:1.0\n        ports: [{{containerPort: 8443}}]\n---\napiVersion: v1\nkind: Service\nmetadata: {{name: image-policy, namespace: policy}}\nspec:\n  selector: {{app: image-policy}}\n  ports: [{{port: 443, targetPort: 8443}}]\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: image-policy\n  annotations:\n    kubeloop.dev/allow-if: \"object.spec.template.spec.containers.all(c, !c.image.endsWith(':latest'))\"\n    kubeloop.dev/deny-message: images must be pinned to a version\nwebhooks:\n- name: images.policy.example.com\n  clientConfig:\n    service: {{name: image-policy, namespace: policy, path: /validate}}\n  rules:\n  - {{apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}}\n  namespaceSelector:\n    matchLabels: {{kubernetes.io/metadata.name: default}}\n  failurePolicy: {policy}\n  sideEffects: None\n  admissionReviewVersions: [v1]\n"
    )
}

struct Gen {
    rng: Rng,
}

impl Gen {
    fn below(&mut self, n: u64) -> u64 {
        self.rng.below(n)
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn container(&mut self, app: &str) -> String {
        let image = self.pick(IMAGES);
        let requests = if self.chance(50) { "\n  resources: {requests: {cpu: 100m, memory: 64Mi}}" } else { "" };
        format!("- name: {app}\n  image: {image}{requests}")
    }

    fn template(&mut self, app: &str) -> String {
        let grace = if self.chance(30) { "\n      terminationGracePeriodSeconds: 5" } else { "" };
        format!("  template:\n    metadata:\n      labels: {{app: {app}}}\n    spec:{grace}\n      containers:\n{}", indent(&self.container(app), 6))
    }

    /// One workload manifest of a random kind, sometimes subtly invalid.
    fn manifest(&mut self) -> String {
        let name = self.pick(NAMES);
        let (kind, prefix) = KINDS[self.below(KINDS.len() as u64) as usize];
        let app = format!("{prefix}-{name}");
        let replicas = self.below(5);
        let invalid = self.chance(8);
        match kind {
            "deployment" => {
                let selector = if invalid { format!("{app}-other") } else { app.clone() };
                let strategy = if self.chance(25) { "\n  strategy: {type: Recreate}" } else { "" };
                let service = if self.chance(50) {
                    format!("---\napiVersion: v1\nkind: Service\nmetadata: {{name: {app}}}\nspec:\n  selector: {{app: {app}}}\n  ports: [{{port: 80}}]\n")
                } else {
                    String::new()
                };
                format!(
                    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {app}}}\nspec:\n  replicas: {replicas}{strategy}\n  selector: {{matchLabels: {{app: {selector}}}}}\n{}\n{service}",
                    self.template(&app)
                )
            }
            "replicaset" => {
                let replicas = if invalid { -1 } else { replicas as i64 };
                format!("apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: {app}}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: {app}}}}}\n{}\n", self.template(&app))
            }
            "statefulset" => {
                let replicas = replicas.min(3);
                let policy = if self.chance(50) { "Parallel" } else { "OrderedReady" };
                let claims = if self.chance(50) {
                    "\n  volumeClaimTemplates:\n  - metadata: {name: data}\n    spec:\n      accessModes: [ReadWriteOnce]\n      resources: {requests: {storage: 1Gi}}"
                } else {
                    ""
                };
                let mut template = self.template(&app);
                if !claims.is_empty() {
                    template.push_str("\n        volumeMounts: [{name: data, mountPath: /data}]");
                }
                format!(
                    "apiVersion: v1\nkind: Service\nmetadata: {{name: {app}}}\nspec:\n  clusterIP: None\n  selector: {{app: {app}}}\n  ports: [{{port: 80}}]\n---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: {app}}}\nspec:\n  serviceName: {app}\n  replicas: {replicas}\n  podManagementPolicy: {policy}\n  selector: {{matchLabels: {{app: {app}}}}}\n{template}{claims}\n"
                )
            }
            "daemonset" => {
                let mut template = self.template(&app);
                if self.chance(50) {
                    template = template.replacen("      containers:", "      tolerations: [{operator: Exists}]\n      containers:", 1);
                }
                format!("apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: {app}}}\nspec:\n  selector: {{matchLabels: {{app: {app}}}}}\n{template}\n")
            }
            "job" => {
                let completions = 1 + self.below(3);
                let parallelism = 1 + self.below(2);
                let seconds = 1 + self.below(30);
                let exit = if self.chance(25) { 1 } else { 0 };
                let restart = if invalid { "Always" } else { "Never" };
                format!(
                    "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {app}}}\nspec:\n  completions: {completions}\n  parallelism: {parallelism}\n  backoffLimit: 2\n  template:\n    spec:\n      restartPolicy: {restart}\n      containers:\n      - name: work\n        image: busybox:1.36\n        command: [sh, -c, \"sleep {seconds}; exit {exit}\"]\n"
                )
            }
            _ => {
                let containers = if invalid { "  containers: []".to_string() } else { format!("  containers:\n{}", indent(&self.container(&app), 2)) };
                format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: {app}\n  labels: {{app: {app}}}\nspec:\n{containers}\n")
            }
        }
    }

    /// A kubectl line acting on what the manifests create.
    fn command(&mut self) -> String {
        let name = self.pick(NAMES);
        let n = self.below(5);
        match self.below(9) {
            0 => {
                let (kind, prefix) = KINDS[self.below(3) as usize];
                format!("scale {kind} {prefix}-{name} --replicas={n}")
            }
            1 | 2 => {
                let (kind, prefix) = KINDS[self.below(KINDS.len() as u64) as usize];
                let cascade = self.pick(CASCADES);
                format!("delete {kind} {prefix}-{name} --cascade={cascade} --wait=false --ignore-not-found")
            }
            3 => {
                let prefix = self.pick(&["d", "rs", "ss", "ds"]);
                format!("delete pods -l app={prefix}-{name} --wait=false")
            }
            4 => format!("rollout restart deployment d-{name}"),
            5 => format!("set image deployment/d-{name} d-{name}={}", self.pick(IMAGES)),
            // Hand edits of what a controller owns: the controller puts them back.
            6 => format!("scale replicaset -l app=d-{name} --replicas={}", n + 3),
            7 => format!("label pods -l app=d-{name} app=hand-edited --overwrite"),
            _ => format!("patch statefulset ss-{name} --type=merge -p {}", quoted(&format!("{{\"spec\":{{\"replicas\":{}}}}}", n.min(3)))),
        }
    }
}

/// Every line indented by `n` spaces.
fn indent(s: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    s.lines().map(|l| format!("{pad}{l}")).collect::<Vec<_>>().join("\n")
}

/// The plan of a seed: steps spread over `end - SETTLE`, every fault undone before then.
pub fn generate(seed: u64, end: Millis) -> Plan {
    let mut g = Gen { rng: Rng::new(seed, Stream::Sweep) };
    let window = end.saturating_sub(SETTLE).max(60_000) / 1000;
    let mut steps: Vec<(Millis, String)> = Vec::new();
    let count = 8 + g.below(20);
    let mut deleted_node = false;
    for _ in 0..count {
        let at = g.below(window) * 1000;
        let recover = |g: &mut Gen| (at + 10_000 + g.below(600) * 1000).min(window * 1000);
        let kind = g.below(100);
        if kind < 35 {
            steps.push((at, apply(&g.manifest())));
        } else if kind < 38 {
            let fail = g.chance(50);
            steps.push((at, apply(&webhook(fail))));
        } else if kind < 65 {
            steps.push((at, kubectl(&g.command())));
        } else if kind < 70 {
            let node = g.pick(NODES);
            steps.push((at, kubectl(&format!("drain {node} --ignore-daemonsets --delete-emptydir-data --force --timeout=60s"))));
            let back = recover(&mut g);
            steps.push((back, kubectl(&format!("uncordon {node}"))));
        } else if kind < 72 && !deleted_node {
            deleted_node = true;
            steps.push((at, kubectl("delete node node-c --wait=false")));
        } else {
            let (down, up, name) = match g.below(8) {
                0 | 1 => ("nodeDown", "nodeUp", g.pick(NODES).to_string()),
                2 => ("controllerDown", "controllerUp", g.pick(CONTROLLERS).to_string()),
                3 => ("storageDriverDown", "storageDriverUp", "disk.csi.kubeloop.dev".to_string()),
                4 => ("apiserverDown", "apiserverUp", String::new()),
                5 => ("etcdDown", "etcdUp", String::new()),
                6 => ("webhookDown", "webhookUp", "image-policy".to_string()),
                _ => ("controllerManagerDown", "controllerManagerUp", String::new()),
            };
            let fault = |k: &str| if name.is_empty() { format!("fault: {k}") } else { format!("fault: {{{k}: {name}}}") };
            steps.push((at, fault(down)));
            let back = recover(&mut g);
            steps.push((back, fault(up)));
        }
    }
    // Stable by time: equal times keep the order they were drawn in.
    steps.sort_stable_by_key(|(at, _)| *at);
    Plan { seed, end, steps }
}

/// A broken invariant: which, when, and what was seen.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub invariant: &'static str,
    pub t: Millis,
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} broken at {}: {}", self.invariant, crate::foundation::sim::go_duration(self.t), self.message)
    }
}

/// What a checked run did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// Tasks the cluster ran.
    pub tasks: u64,
    /// Invariant checks made (each check of each invariant counts once).
    pub checks: u64,
    pub requests: usize,
    pub writes: u64,
    /// FNV-1a of the trace, the requests and the final objects: equal runs, equal prints.
    pub fingerprint: u64,
}

/// What the checker knows of one stored object, from the watch history.
#[derive(Debug, Clone, PartialEq)]
struct Known {
    uid: String,
    rv: u64,
    owners: Vec<String>,
    deleting: bool,
}

/// The invariants, checked against the store's watch history after every task.
pub struct Checker {
    /// Every object by resource and `namespace/name`, as replaying the watch history
    /// from the start gives it.
    shadow: Vec<BTreeMap<String, Known>>,
    /// Live uids and their object.
    uids: BTreeMap<String, (usize, String)>,
    revision: u64,
    requests: usize,
    /// Copies of the shadow taken at a revision, for replaying the history from there.
    snapshots: Vec<(u64, Vec<BTreeMap<String, u64>>)>,
    pub checks: u64,
    tasks: u64,
    /// Successful writes per user in the current simulated second.
    second: Millis,
    writes: BTreeMap<String, u32>,
}

/// More successful writes than this by one user in one simulated second is a loop that
/// spins (the generated workloads have at most a few dozen pods).
pub const MAX_WRITES_PER_SECOND: u32 = 200;

fn key(o: &Value) -> String {
    format!("{}/{}", api::namespace(o), api::name(o))
}

fn known(o: &Value) -> Known {
    Known {
        uid: api::uid(o).to_string(),
        rv: api::resource_version(o).parse().unwrap_or(0),
        owners: get_array(o, &["metadata", "ownerReferences"]).iter().filter_map(|r| get_str(r, &["uid"])).map(str::to_string).collect(),
        deleting: api::is_deleting(o),
    }
}

const GC_USER: &str = "system:serviceaccount:kube-system:generic-garbage-collector";

impl Checker {
    pub fn new(c: &Cluster) -> Self {
        let mut shadow = vec![BTreeMap::new(); RESOURCES.len()];
        let mut uids = BTreeMap::new();
        for (r, s) in shadow.iter_mut().enumerate() {
            for o in c.api.store.list(r, None) {
                let k = known(o);
                uids.insert(k.uid.clone(), (r, key(o)));
                s.insert(key(o), k);
            }
        }
        Checker {
            shadow,
            uids,
            revision: c.api.store.revision(),
            requests: c.api.trace.requests_end(),
            snapshots: Vec::new(),
            checks: 0,
            tasks: 0,
            second: 0,
            writes: BTreeMap::new(),
        }
    }

    fn fail(&self, c: &Cluster, invariant: &'static str, message: String) -> Result<(), Violation> {
        Err(Violation { invariant, t: c.now, message })
    }

    /// After one task: the history's new events are exactly the new revisions, each
    /// carrying its revision; the garbage collector deleted nothing whose owner lives;
    /// every request got a success or a Status.
    pub fn after_task(&mut self, c: &Cluster) -> Result<(), Violation> {
        self.tasks += 1;
        let store = &c.api.store;
        let now_rev = store.revision();
        self.checks += 1;
        if now_rev < self.revision {
            return self.fail(c, "resourceVersions increase", format!("the revision went back from {} to {now_rev}", self.revision));
        }
        // The objects the garbage collector asked to delete in this task.
        let mut gc_deletes: BTreeSet<String> = BTreeSet::new();
        self.checks += 1;
        for r in c.api.trace.requests_from(self.requests) {
            if !(200..300).contains(&r.code) && r.status.is_none() {
                return self.fail(
                    c,
                    "every request gets 2xx or a Status",
                    format!("{} {} by {} answered {} without a Status", r.verb, r.object, r.user, r.code),
                );
            }
            let msg = r.status.as_ref().and_then(|s| get_str(s, &["message"])).unwrap_or("");
            // A webhook that cannot be called under `failurePolicy: Fail` is answered 500
            // InternalError by the real API server too.
            if r.code >= 500 && !matches!(r.code, 503 | 504) && !msg.starts_with("Internal error occurred: failed calling webhook") {
                return self.fail(c, "no internal errors", format!("{} {} by {} answered {}: {msg}", r.verb, r.object, r.user, r.code));
            }
            if (200..300).contains(&r.code) && !matches!(r.verb.as_str(), "get" | "list" | "watch") {
                if r.t / 1000 != self.second {
                    self.second = r.t / 1000;
                    self.writes.clear();
                }
                let n = self.writes.entry(r.user.clone()).or_insert(0);
                *n += 1;
                if *n > MAX_WRITES_PER_SECOND {
                    return self.fail(
                        c,
                        "no loop spins",
                        format!("{} made more than {MAX_WRITES_PER_SECOND} writes in one second, the last {} {}", r.user, r.verb, r.object),
                    );
                }
            }
            if r.user == GC_USER && r.verb == "delete" && (200..300).contains(&r.code) {
                gc_deletes.insert(r.object.clone());
            }
        }
        self.requests = c.api.trace.requests_end();
        if now_rev == self.revision {
            return Ok(());
        }
        let mut events = Vec::new();
        for (r, _) in RESOURCES.iter().enumerate() {
            match store.events_since(r, self.revision) {
                Ok(it) => events.extend(it.map(|e| (e.revision, r, e))),
                Err(e) => return self.fail(c, "a watch replays the history", format!("{}: history after {} is gone: {e:?}", RESOURCES[r].kind, self.revision)),
            }
        }
        events.sort_stable_by_key(|(rev, _, _)| *rev);
        self.checks += 1;
        let expected: Vec<u64> = (self.revision + 1..=now_rev).collect();
        let got: Vec<u64> = events.iter().map(|(rev, _, _)| *rev).collect();
        if got != expected {
            return self.fail(
                c,
                "resourceVersions increase",
                format!("after revision {} the history holds revisions {got:?}, the store is at {now_rev}", self.revision),
            );
        }
        for (rev, r, e) in events {
            let k = key(&e.object);
            if api::resource_version(&e.object) != rev.to_string() {
                return self.fail(
                    c,
                    "resourceVersions increase",
                    format!("the event of revision {rev} carries {} {k} at resourceVersion {}", RESOURCES[r].kind, api::resource_version(&e.object)),
                );
            }
            let display = if api::namespace(&e.object).is_empty() {
                format!("{}/{}", RESOURCES[r].kind, api::name(&e.object))
            } else {
                format!("{}/{k}", RESOURCES[r].kind)
            };
            let before = self.shadow[r].get(&k).cloned();
            let removing = e.kind == EventType::Deleted || (api::is_deleting(&e.object) && before.as_ref().is_some_and(|b| !b.deleting));
            if removing && gc_deletes.remove(&display) {
                self.checks += 1;
                if let Some(b) = &before {
                    for owner in &b.owners {
                        if let Some((or, ok)) = self.uids.get(owner) {
                            if self.shadow[*or].get(ok).is_some_and(|o| !o.deleting && &o.uid == owner) {
                                return self.fail(
                                    c,
                                    "the garbage collector never deletes an object with a live owner",
                                    format!("it deleted {display} while its owner {}/{ok} (uid {owner}) was live", RESOURCES[*or].kind),
                                );
                            }
                        }
                    }
                }
            }
            match e.kind {
                EventType::Deleted => {
                    if let Some(b) = self.shadow[r].remove(&k) {
                        self.uids.remove(&b.uid);
                    }
                }
                _ => {
                    let kn = known(&e.object);
                    self.uids.insert(kn.uid.clone(), (r, k.clone()));
                    self.shadow[r].insert(k, kn);
                }
            }
        }
        self.revision = now_rev;
        if self.tasks.is_multiple_of(997) {
            self.snapshots.push((now_rev, self.shadow.iter().map(|m| m.iter().map(|(k, v)| (k.clone(), v.rv)).collect()).collect()));
            if self.snapshots.len() > 4 {
                self.snapshots.remove(0);
            }
        }
        if self.tasks.is_multiple_of(499) {
            self.full(c, false)?;
        }
        Ok(())
    }

    /// Checks over the whole state: the watch history replayed from the start and from
    /// earlier revisions gives the store; no volume of one node is attached to two; no pod
    /// runs on two nodes. With `settled` (faults cleared and time given), also
    /// convergence: every workload controller has caught up with its pods and every pod
    /// bound to a ready node runs.
    pub fn full(&mut self, c: &Cluster, settled: bool) -> Result<(), Violation> {
        let store = &c.api.store;
        self.checks += 1;
        for (r, shadow) in self.shadow.iter().enumerate() {
            let actual: BTreeMap<String, u64> = store.list(r, None).map(|o| (key(o), api::resource_version(o).parse().unwrap_or(0))).collect_tree();
            let replayed: BTreeMap<String, u64> = shadow.iter().map(|(k, v)| (k.clone(), v.rv)).collect_tree();
            if actual != replayed {
                let diff = actual
                    .iter()
                    .find(|(k, v)| replayed.get(*k) != Some(v))
                    .map(|(k, _)| k.clone())
                    .or_else(|| replayed.keys().find(|k| !actual.contains_key(*k)).cloned());
                return self.fail(
                    c,
                    "a watch replays the history",
                    format!("replaying {} from the start differs from the store at {}", RESOURCES[r].kind, diff.unwrap_or_default()),
                );
            }
        }
        for (from, snapshot) in &self.snapshots {
            self.checks += 1;
            for (r, base) in snapshot.iter().enumerate() {
                let Ok(events) = store.events_since(r, *from) else { continue };
                let mut state = base.clone();
                for e in events {
                    match e.kind {
                        EventType::Deleted => state.remove(&key(&e.object)),
                        _ => state.insert(key(&e.object), e.revision),
                    };
                }
                let now: BTreeMap<String, u64> = self.shadow[r].iter().map(|(k, v)| (k.clone(), v.rv)).collect_tree();
                if state != now {
                    return self.fail(
                        c,
                        "a watch replays the history",
                        format!("a watch of {} from revision {from} does not end at the store's state", RESOURCES[r].kind),
                    );
                }
            }
        }
        self.checks += 1;
        let mut attached: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for va in store.list(rid::VOLUMEATTACHMENT, None) {
            if get_bool(va, &["status", "attached"]) == Some(true) {
                if let Some(pv) = get_str(va, &["spec", "source", "persistentVolumeName"]) {
                    attached.entry(pv).or_default().insert(get_str(va, &["spec", "nodeName"]).unwrap_or(""));
                }
            }
        }
        for (pv, nodes) in &attached {
            let single = store
                .get_by(rid::PV, "", pv)
                .is_some_and(|p| get_array(p, &["spec", "accessModes"]).iter().all(|m| matches!(m.as_str(), Some("ReadWriteOnce" | "ReadWriteOncePod"))));
            if single && nodes.len() > 1 {
                return self.fail(c, "a ReadWriteOnce volume is attached to one node at a time", format!("{pv} is attached to {nodes:?}"));
            }
        }
        self.checks += 1;
        let mut running: BTreeMap<(String, String), String> = BTreeMap::new();
        for (node, ns, pod) in c.running_pods() {
            if let Some(other) = running.insert((ns.clone(), pod.clone()), node.clone()) {
                if other != node {
                    return self.fail(c, "a pod runs on one node at a time", format!("{ns}/{pod} runs on {other} and on {node}"));
                }
            }
        }
        if settled {
            self.converged(c)?;
        }
        Ok(())
    }

    fn converged(&mut self, c: &Cluster) -> Result<(), Violation> {
        let store = &c.api.store;
        let nodes: BTreeMap<&str, &Value> = store.list(rid::NODE, None).map(|n| (api::name(n), &**n)).collect_tree();
        let node_ready = |n: &str| {
            nodes.get(n).is_some_and(|n| {
                get_array(n, &["status", "conditions"]).iter().any(|c| get_str(c, &["type"]) == Some("Ready") && get_str(c, &["status"]) == Some("True"))
            })
        };
        let pods: Vec<&Value> = store.list(rid::POD, None).map(|p| &**p).collect();
        self.checks += 1;
        for p in &pods {
            let name = format!("{}/{}", api::namespace(p), api::name(p));
            let node = get_str(p, &["spec", "nodeName"]).unwrap_or("");
            if !node.is_empty() && !nodes.contains_key(node) {
                return self.fail(c, "no pod stays bound to a node that no longer exists", format!("{name} is bound to {node}"));
            }
            if api::is_deleting(p) && node_ready(node) {
                return self.fail(c, "a deleted pod on a ready node goes away", format!("{name} on {node} is still Terminating"));
            }
            let phase = get_str(p, &["status", "phase"]).unwrap_or("");
            if !node.is_empty()
                && node_ready(node)
                && !api::is_deleting(p)
                && !matches!(phase, "Succeeded" | "Failed")
                && !crate::foundation::pod::pod_is_ready(p)
            {
                return self.fail(c, "a pod bound to a ready node runs", format!("{name} on {node} is {phase} and not Ready"));
            }
        }
        let owned = |uid: &str| -> Vec<&Value> {
            pods.iter()
                .copied()
                .filter(|p| {
                    !api::is_deleting(p)
                        && get_array(p, &["metadata", "ownerReferences"])
                            .iter()
                            .any(|r| get_str(r, &["uid"]) == Some(uid) && get_bool(r, &["controller"]) == Some(true))
                })
                .collect()
        };
        let caught_up = |o: &Value| get_i64(o, &["status", "observedGeneration"]) >= get_i64(o, &["metadata", "generation"]);
        for (r, kind) in [(rid::REPLICASET, "ReplicaSet"), (rid::STATEFULSET, "StatefulSet")] {
            for o in store.list(r, None) {
                self.checks += 1;
                if api::is_deleting(o) {
                    continue;
                }
                let want = get_i64(o, &["spec", "replicas"]).unwrap_or(1);
                let have = owned(api::uid(o));
                if have.iter().any(|p| stranded(c, p)) {
                    // As in a real cluster: its volume lives where no node is left.
                    continue;
                }
                if kind == "StatefulSet" && have.iter().any(|p| !storage_matches(o, p)) {
                    // As in a real cluster: the claims cannot be added to a running pod.
                    continue;
                }
                let status = get_i64(o, &["status", "replicas"]).unwrap_or(0);
                if !caught_up(o) || have.len() as i64 != want || status != want {
                    return self.fail(
                        c,
                        "every workload converges once faults clear",
                        format!(
                            "{kind} {} wants {want} replicas, owns {} pods, reports {status} (generation {}, observed {})",
                            key(o),
                            have.len(),
                            get_i64(o, &["metadata", "generation"]).unwrap_or(0),
                            get_i64(o, &["status", "observedGeneration"]).map_or("none".to_string(), |g| g.to_string())
                        ),
                    );
                }
                if kind == "StatefulSet" {
                    let mut ordinals: Vec<&str> = have.iter().map(|p| api::name(p).rsplit('-').next().unwrap_or("")).collect();
                    ordinals.sort_unstable();
                    ordinals.dedup();
                    if ordinals.len() != have.len() {
                        return self.fail(c, "no two StatefulSet pods hold one ordinal", format!("{kind} {}", key(o)));
                    }
                }
            }
        }
        for d in store.list(rid::DEPLOYMENT, None) {
            self.checks += 1;
            let want = get_i64(d, &["spec", "replicas"]).unwrap_or(1);
            let updated = get_i64(d, &["status", "updatedReplicas"]).unwrap_or(0);
            let total = get_i64(d, &["status", "replicas"]).unwrap_or(0);
            if !api::is_deleting(d) && (!caught_up(d) || updated != want || total != want) && !recreate_wedged(c, d) {
                return self.fail(
                    c,
                    "every workload converges once faults clear",
                    format!("Deployment {} wants {want} replicas, has {total} ({updated} updated)", key(d)),
                );
            }
        }
        for ds in store.list(rid::DAEMONSET, None) {
            self.checks += 1;
            let desired = get_i64(ds, &["status", "desiredNumberScheduled"]).unwrap_or(0);
            let current = get_i64(ds, &["status", "currentNumberScheduled"]).unwrap_or(0);
            let have = owned(api::uid(ds)).len() as i64;
            let misscheduled = get_i64(ds, &["status", "numberMisscheduled"]).unwrap_or(0);
            if !api::is_deleting(ds) && (!caught_up(ds) || current != desired || have != desired || misscheduled != 0) {
                return self.fail(
                    c,
                    "every workload converges once faults clear",
                    format!("DaemonSet {} desires {desired}, schedules {current}, owns {have} pods, {misscheduled} misscheduled", key(ds)),
                );
            }
        }
        for j in store.list(rid::JOB, None) {
            self.checks += 1;
            let done = get_array(j, &["status", "conditions"])
                .iter()
                .any(|c| matches!(get_str(c, &["type"]), Some("Complete" | "Failed")) && get_str(c, &["status"]) == Some("True"));
            if !api::is_deleting(j) && !done {
                return self.fail(c, "every workload converges once faults clear", format!("Job {} has not finished: {}", key(j), get(j, "status")));
            }
        }
        Ok(())
    }
}

/// A Recreate Deployment whose ReplicaSets were scaled by hand so that two or more run pods
/// with a desired-replicas annotation that is not the Deployment's: every sync is then a
/// scaling event, and `sync.go` `scale()` only scales proportionally for RollingUpdate, so
/// Kubernetes leaves it as it is until someone scales the old ReplicaSets back to zero.
fn recreate_wedged(c: &Cluster, d: &Value) -> bool {
    if get_str(d, &["spec", "strategy", "type"]) != Some("Recreate") {
        return false;
    }
    let want = get_i64(d, &["spec", "replicas"]).unwrap_or(1).to_string();
    let active: Vec<&api::Object> = c
        .api
        .store
        .list(rid::REPLICASET, Some(api::namespace(d)))
        .filter(|rs| api::controller_ref(rs).and_then(|r| get_str(r, &["uid"])) == Some(api::uid(d)))
        .filter(|rs| get_i64(rs, &["spec", "replicas"]).unwrap_or(0) > 0)
        .collect();
    active.len() > 1 && active.iter().any(|rs| api::annotation(rs, "deployment.kubernetes.io/desired-replicas").is_some_and(|v| v != want))
}

/// `storageMatches` (`stateful_set_utils.go`): the pod has a volume for each of the set's
/// claim templates, naming its claim. A pod adopted from an earlier set without them can
/// never get them (a pod's volumes are immutable), so each sync fails on updating it
/// before it reaches the condemned pods: Kubernetes leaves such a set unconverged.
fn storage_matches(set: &Value, pod: &Value) -> bool {
    let ordinal = api::name(pod).rsplit('-').next().unwrap_or("");
    get_array(set, &["spec", "volumeClaimTemplates"]).iter().all(|t| {
        let name = api::name(t);
        let claim = format!("{name}-{}-{ordinal}", api::name(set));
        get_array(pod, &["spec", "volumes"])
            .iter()
            .any(|v| get_str(v, &["name"]) == Some(name) && get_str(v, &["persistentVolumeClaim", "claimName"]) == Some(claim.as_str()))
    })
}

/// A pending pod whose claimed volume is pinned (by its node affinity) where no node
/// exists any more: no controller can bring it up, in kubeloop as in Kubernetes.
fn stranded(c: &Cluster, pod: &Value) -> bool {
    let store = &c.api.store;
    if get_str(pod, &["spec", "nodeName"]).is_some() {
        return false;
    }
    let nodes: Vec<_> = store.list(rid::NODE, None).collect();
    get_array(pod, &["spec", "volumes"]).iter().filter_map(|v| get_str(v, &["persistentVolumeClaim", "claimName"])).any(|claim| {
        let Some(pv) = store
            .get_by(rid::PVC, api::namespace(pod), claim)
            .and_then(|pvc| get_str(pvc, &["spec", "volumeName"]).map(str::to_string))
            .and_then(|name| store.get_by(rid::PV, "", &name))
        else {
            return false;
        };
        let terms = get_array(pv, &["spec", "nodeAffinity", "required", "nodeSelectorTerms"]);
        !terms.is_empty()
            && !nodes.iter().any(|n| {
                terms.iter().any(|t| {
                    get_array(t, &["matchExpressions"]).iter().all(|e| {
                        let key = get_str(e, &["key"]).unwrap_or("");
                        let values: Vec<&str> = get_array(e, &["values"]).iter().filter_map(|v| v.as_str()).collect();
                        let label = if key == "kubernetes.io/hostname" { Some(api::name(n)) } else { api::label(n, key) };
                        get_str(e, &["operator"]) == Some("In") && label.is_some_and(|l| values.contains(&l))
                    })
                })
            })
    })
}

fn get(v: &Value, k: &str) -> String {
    v.get(k).map(|s| s.to_string()).unwrap_or_default()
}

/// FNV-1a over bytes, continuing from `h`.
pub fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// The fingerprint of a run: its trace, its requests and its objects.
pub fn fingerprint(c: &Cluster) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325;
    for r in c.api.trace.records() {
        h = fnv(h, format!("{} {} {} {} {} {} {}\n", r.t, r.component, r.verb, r.object, r.resource_version, r.result, r.message).as_bytes());
    }
    for r in c.api.trace.requests() {
        h = fnv(h, format!("{} {} {} {} {}\n", r.t, r.user, r.verb, r.object, r.code).as_bytes());
    }
    for o in c.api.store.all() {
        h = fnv(h, o.to_string().as_bytes());
    }
    h
}

/// Parse a scenario file's text.
pub fn scenario(text: &str) -> Result<Scenario, Violation> {
    let mut sc = Scenario::default();
    add_file(&mut sc, "sweep.yaml", text);
    if sc.errors.is_empty() {
        Ok(sc)
    } else {
        Err(Violation { invariant: "the scenario parses", t: 0, message: sc.errors.join("; ") })
    }
}

/// The faults a scenario's steps leave in force at its end, described.
pub fn faults_left(steps: &[crate::cluster::Step]) -> Vec<String> {
    use crate::loops::Fault as F;
    let mut order: Vec<&crate::cluster::Step> = steps.iter().collect();
    order.sort_stable_by_key(|s| s.at);
    let mut left: BTreeMap<String, String> = BTreeMap::new();
    for s in order {
        let crate::cluster::Action::Fault(f) = &s.action else { continue };
        let (key, down) = match f {
            F::NodeDown(n) => (format!("node {n}"), true),
            F::NodeUp(n) => (format!("node {n}"), false),
            F::ControllerDown(n) => (format!("controller {n}"), true),
            F::ControllerUp(n) => (format!("controller {n}"), false),
            F::WebhookDown(n) => (format!("webhook {n}"), true),
            F::WebhookUp(n) => (format!("webhook {n}"), false),
            F::StorageDriverDown(n) => (format!("driver {n}"), true),
            F::StorageDriverUp(n) => (format!("driver {n}"), false),
            F::ApiServerDown => ("kube-apiserver".into(), true),
            F::ApiServerUp => ("kube-apiserver".into(), false),
            F::EtcdDown => ("etcd".into(), true),
            F::EtcdUp => ("etcd".into(), false),
            F::ControllerManagerDown => ("kube-controller-manager".into(), true),
            F::ControllerManagerUp => ("kube-controller-manager".into(), false),
        };
        if down {
            left.insert(key, f.describe());
        } else {
            left.remove(&key);
        }
    }
    left.into_values().collect()
}

/// Run a scenario's text for `end` with every invariant checked after each task, and the
/// convergence invariants at `end` (the scenario must leave `SETTLE` of quiet before it).
pub fn run(text: &str, end: Millis) -> Result<Report, Violation> {
    let sc = scenario(text)?;
    let mut c = Cluster::new(sc.config(None, true));
    c.add_steps(sc.steps.clone());
    let mut checker = Checker::new(&c);
    while c.next_time().is_some_and(|t| t <= end) {
        c.step();
        checker.after_task(&c)?;
    }
    c.run_until(end);
    // A fault the cluster does not know would leave the run unfaulted: a generator bug.
    if let Some(o) = c.outputs.iter().find(|o| o.command.starts_with("fault") && o.output.iter().any(|l| l.contains("error:"))) {
        return Err(Violation { invariant: "every step is understood", t: o.t, message: format!("{}: {}", o.command, o.output.join(" ")) });
    }
    // Convergence is only owed once every fault has cleared and every node is schedulable
    // again (a minimized scenario may have lost the step that ended a fault).
    let cordoned = c.api.store.list(rid::NODE, None).any(|n| get_bool(n, &["spec", "unschedulable"]) == Some(true));
    checker.full(&c, faults_left(&sc.steps).is_empty() && !cordoned)?;
    Ok(Report {
        tasks: checker.tasks,
        checks: checker.checks,
        requests: c.api.trace.requests().len(),
        writes: c.api.trace.writes,
        fingerprint: fingerprint(&c),
    })
}

/// One seed's line as `kubeloop sweep --hashes` prints it, the same in the page: the seed
/// and its run's fingerprint, or that it failed and which invariant broke.
pub fn outcome_line(seed: u64, result: &Result<Report, Violation>) -> String {
    match result {
        Ok(r) => format!("{seed} {:016x}", r.fingerprint),
        Err(v) => format!("{seed} failed: {v}"),
    }
}

/// Drop steps from a failing plan while the same invariant still breaks: halves first,
/// then single steps, until no one step can go.
pub fn minimize(plan: &Plan, broken: &Violation, mut fails: impl FnMut(&Plan) -> Option<Violation>) -> Plan {
    let same = |v: Option<Violation>| v.is_some_and(|v| v.invariant == broken.invariant);
    let mut best = plan.clone();
    let mut chunk = best.steps.len().div_ceil(2).max(1);
    loop {
        let mut i = 0;
        let mut progressed = false;
        while i < best.steps.len() {
            let mut trial = best.clone();
            let to = (i + chunk).min(trial.steps.len());
            trial.steps.drain(i..to);
            if same(fails(&trial)) {
                best = trial;
                progressed = true;
            } else {
                i += chunk;
            }
        }
        if chunk == 1 && !progressed {
            return best;
        }
        chunk = (chunk / 2).max(1);
    }
}
