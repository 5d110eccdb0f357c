//! Layer 6, the page's model: an editor text that is the desired state, a cluster that
//! follows it, and everything the person did, so that a link can replay it exactly.
//!
//! Applying the editor works like `kubectl apply --prune` over the editor's documents:
//! documents whose content changed since they were last applied are applied (as the
//! chosen user), unchanged ones are left alone (re-applying them would only repeat the
//! same requests), and objects whose document was removed are deleted. A `Scenario`
//! document sets up the cluster (nodes, users, images, seed, timed steps) when the
//! sandbox is created; it is not an API object.

pub mod export;
pub mod journey;
pub mod lessons;
pub mod nodeview;
pub mod why;

use crate::apiserver::Credentials;
use crate::cluster::scenario::{add_file, Scenario};
use crate::cluster::{Action, Cluster};
use crate::foundation::api::{self, get_str, Object, RESOURCES};
use crate::foundation::manifest::Diagnostic;
use crate::foundation::sim::Millis;
use crate::foundation::value::Value;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What happened to one document of the editor on the last apply.
#[derive(Debug, Clone, PartialEq)]
pub struct DocStatus {
    /// 1-based lines of the document in the editor text.
    pub start_line: usize,
    pub end_line: usize,
    /// `Kind/name` when the document is an object.
    pub object: String,
    /// The object's key as the trace and the journey name it (`Kind/namespace/name`, or
    /// `Kind/name` for a cluster-scoped kind); empty if the document is no object.
    pub key: String,
    /// kubectl's line for it (`deployment.apps/checkout created`, an error, ...).
    pub result: String,
    /// Problems to show at a line: YAML errors at their position, API errors at the
    /// document's first line.
    pub diagnostics: Vec<Diagnostic>,
    /// Whether this apply sent the document (false: unchanged since it was last applied).
    pub sent: bool,
}

impl DocStatus {
    pub fn failed(&self) -> bool {
        !self.diagnostics.is_empty()
    }
}

/// One thing the person did, at a simulated time; replaying them reproduces the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Done {
    pub t: Millis,
    pub user: String,
    #[serde(flatten)]
    pub what: Did,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Did {
    /// The editor's text was applied.
    Apply(String),
    /// A kubectl command line (without `kubectl`).
    Kubectl(String),
    /// A fault: `nodeDown`, `nodeUp`, `controllerDown`, `controllerUp`, `webhookDown`,
    /// `webhookUp`, with the name it applies to.
    Fault(String, String),
    /// An etcdctl command line (without `etcdctl`).
    Etcdctl(String),
    /// A line typed into the command the terminal is attached to; None: the end of input.
    Stdin(Option<String>),
}

/// How many trace records, and how many requests, a sandbox keeps: the latest ones, about
/// two simulated hours of the default scenario (most of them heartbeats), some 6 MB. A tab
/// left running would otherwise grow by some 3 MB each simulated hour.
pub const PAGE_TRACE_WINDOW: usize = 20_000;

#[derive(Clone)]
pub struct Sandbox {
    pub cluster: Cluster,
    pub seed: u64,
    /// The text the sandbox was created from.
    pub setup: String,
    /// The user who applies the editor and runs commands.
    pub user: String,
    /// `admin` and the scenario's users, with their tokens.
    pub users: Vec<(String, String)>,
    /// Problems in the Scenario document, as `line: message`.
    pub setup_errors: Vec<String>,
    /// The editor text last applied, and what became of each document.
    pub text: String,
    pub docs: Vec<DocStatus>,
    /// Everything done after creation, in order.
    pub log: Vec<Done>,
    /// (resource, namespace, name) -> the object as last applied from the editor.
    applied: BTreeMap<(usize, String, String), Value>,
    /// The editor text's documents as last parsed.
    parsed: crate::foundation::manifest::Parsed,
    /// The cluster view's caches, as of the last [`Sandbox::sync_view`].
    pub view: nodeview::NodeView,
}

impl Sandbox {
    /// A cluster set up by the text's Scenario document (or the default cluster), with the
    /// text's objects applied by `admin` at time 0.
    pub fn new(text: &str, seed: Option<u64>) -> Sandbox {
        let mut sc = Scenario::default();
        add_file(&mut sc, "editor", text);
        // The editor's objects are applied below, document by document; keep only the
        // Scenario's own timed steps.
        sc.steps.retain(|s| !(s.at == 0 && matches!(&s.action, Action::Apply { file, .. } if file == "editor")));
        let mut config = sc.config(seed, true);
        // A browser tab holds far less than a server: a small quota unless the scenario
        // declares its own (up to the benchmark's, which a 150,000-pod apply needs).
        config.quota_bytes = sc.etcd_quota.unwrap_or(crate::apiserver::store::PAGE_QUOTA_BYTES).min(crate::cluster::bench::QUOTA_BYTES);
        let seed = config.seed;
        let mut users = vec![("admin".to_string(), "admin-token".to_string())];
        users.extend(sc.users.iter().map(|(name, token, _)| (name.clone(), token.clone())));
        let mut cluster = Cluster::new(config);
        cluster.api.trace.window = PAGE_TRACE_WINDOW;
        // A person types at this terminal: `kubectl exec -i` stays attached.
        cluster.interactive = true;
        cluster.add_steps(sc.steps.clone());
        let setup_errors = sc.errors.iter().map(|e| e.trim_start_matches("editor:").to_string()).collect();
        let mut sb = Sandbox {
            cluster,
            seed,
            setup: text.to_string(),
            user: "admin".into(),
            users,
            setup_errors,
            text: String::new(),
            docs: vec![],
            log: vec![],
            applied: BTreeMap::new(),
            parsed: Default::default(),
            view: nodeview::NodeView::default(),
        };
        sb.apply_text(text);
        sb
    }

    fn credentials(&self) -> Credentials {
        let token = self.users.iter().find(|(n, _)| *n == self.user).map_or("admin-token", |(_, t)| t.as_str());
        Credentials::Token(token.to_string())
    }

    /// Bring [`Sandbox::view`] up to what the cluster holds now.
    pub fn sync_view(&mut self) {
        self.view.sync(&self.cluster.api.store);
    }

    /// Choose who applies and runs commands; unknown names are refused.
    pub fn set_user(&mut self, user: &str) -> bool {
        if self.users.iter().any(|(n, _)| n == user) {
            self.user = user.to_string();
            self.cluster.kubeconfig.use_user(user);
            true
        } else {
            false
        }
    }

    /// Apply the editor text: changed documents are applied, removed ones deleted.
    pub fn apply(&mut self, text: &str) {
        self.log.push(Done { t: self.cluster.now, user: self.user.clone(), what: Did::Apply(text.to_string()) });
        self.apply_text(text);
    }

    /// On a copy that is then dropped, run three seconds on, apply every object applied
    /// from the editor again with an annotation changed, and run a second more: the path of
    /// an edit (a PATCH through admission and validation of an update, the controllers'
    /// answer) runs once without touching this run. The page does it when idle after
    /// loading, so that the browser has compiled that code before the person's first edit.
    /// What became of each document of the copy's apply is returned.
    pub fn rehearse_edit(&self) -> Vec<DocStatus> {
        let docs: Vec<String> = self
            .applied
            .values()
            .map(|o| {
                let mut o = o.clone();
                if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
                    let notes = meta.entry("annotations").or_insert_with(|| Value::Object(Default::default()));
                    if let Some(notes) = notes.as_object_mut() {
                        notes.insert("kubeloop.dev/rehearsal", Value::from("1"));
                    }
                }
                o.to_string()
            })
            .collect();
        if docs.is_empty() {
            return Vec::new();
        }
        // The copy first runs a few seconds on, so that what the objects need is up (a
        // webhook's backend, say) and the update takes the path that succeeds.
        let mut copy = self.clone();
        copy.advance(3000);
        copy.apply_text(&docs.join("\n---\n"));
        copy.advance(1000);
        copy.docs
    }

    fn apply_text(&mut self, text: &str) {
        let creds = self.credentials();
        let mut docs = Vec::new();
        let mut present = BTreeMap::new();
        let lines: Vec<&str> = text.lines().collect();
        for d in crate::foundation::manifest::parse_again(text, &mut self.parsed) {
            let mut st = DocStatus {
                start_line: d.start_line,
                end_line: d.end_line,
                object: String::new(),
                key: String::new(),
                result: String::new(),
                diagnostics: d.diagnostics.clone(),
                sent: false,
            };
            let Some(obj) = d.object else {
                st.result = d.diagnostics.first().map(|x| format!("error: {}", x.message)).unwrap_or_default();
                docs.push(st);
                continue;
            };
            let kind = get_str(&obj, &["kind"]).unwrap_or("").to_string();
            let av = get_str(&obj, &["apiVersion"]).unwrap_or("").to_string();
            st.object = format!("{kind}/{}", api::name(&obj));
            if kind == "Scenario" && av.starts_with("kubeloop.dev/") {
                st.result = "cluster set-up: nodes, users, images and steps take effect on Reset".into();
                docs.push(st);
                continue;
            }
            let key = api::resource_for_kind(&av, &kind).map(|r| {
                let ns =
                    if RESOURCES[r].namespaced { Some(api::namespace(&obj)).filter(|n| !n.is_empty()).unwrap_or("default").to_string() } else { String::new() };
                (r, ns, api::name(&obj).to_string())
            });
            st.key = match &key {
                Some((_, ns, name)) if ns.is_empty() => format!("{kind}/{name}"),
                Some((_, ns, name)) => format!("{kind}/{ns}/{name}"),
                // A kind the API does not serve: named as a namespaced one would be.
                None => format!("{kind}/{}/{}", Some(api::namespace(&obj)).filter(|n| !n.is_empty()).unwrap_or("default"), api::name(&obj)),
            };
            if let Some(k) = &key {
                present.insert(k.clone(), obj.clone());
                if self.applied.get(k) == Some(&obj) {
                    // Unchanged since it was applied: keep what it said then.
                    if let Some(prev) = self.docs.iter().find(|p| p.object == st.object) {
                        st.result = prev.result.clone();
                        st.diagnostics =
                            prev.diagnostics.iter().map(|x| Diagnostic { line: d.start_line, column: x.column, message: x.message.clone() }).collect();
                    }
                    docs.push(st);
                    continue;
                }
            }
            let start = d.start_line.saturating_sub(1).min(lines.len());
            let end = d.end_line.min(lines.len());
            let out = self.cluster.act(creds.clone(), Action::Apply { text: lines[start..end].join("\n"), file: "editor".into() });
            st.result = out.output.join("\n");
            st.sent = true;
            let ok = !out.output.iter().any(|l| crate::kubectl::is_error_line(l));
            if ok {
                if let Some(k) = key {
                    self.applied.insert(k, obj);
                }
            } else {
                let msg = out.output.iter().filter(|l| crate::kubectl::is_error_line(l)).cloned().collect::<Vec<_>>().join("\n");
                st.diagnostics.push(Diagnostic { line: d.start_line, column: 1, message: msg });
                if let Some(k) = key {
                    // A rejected change leaves whatever was stored before.
                    self.applied.remove(&k);
                }
            }
            docs.push(st);
        }
        // Prune what the editor no longer declares.
        let gone: Vec<(usize, String, String)> = self.applied.keys().filter(|k| !present.contains_key(*k)).cloned().collect();
        for (r, ns, name) in gone {
            let res = &RESOURCES[r];
            let mut cmd = format!("delete {} {name}", res.qualified_resource());
            if !ns.is_empty() {
                cmd.push_str(&format!(" -n {ns}"));
            }
            let out = self.cluster.act(creds.clone(), Action::Kubectl(cmd)).output;
            let result = out.join("\n");
            let failed = crate::kubectl::is_error_line(&result);
            let mut st = DocStatus {
                start_line: 0,
                end_line: 0,
                object: format!("{}/{name}", res.kind),
                key: if ns.is_empty() { format!("{}/{name}", res.kind) } else { format!("{}/{ns}/{name}", res.kind) },
                result: format!("pruned: {result}"),
                diagnostics: vec![],
                sent: true,
            };
            if failed && !result.contains("(NotFound)") {
                // Still declared as far as the cluster knows: try again on the next apply.
                st.diagnostics.push(Diagnostic { line: 0, column: 0, message: result });
            } else {
                self.applied.remove(&(r, ns, name));
            }
            docs.push(st);
        }
        self.text = text.to_string();
        self.docs = docs;
    }

    /// Run a kubectl command line (without `kubectl`) as the current user. `-f editor`
    /// reads the editor's text, passed on as a here-document (kubectl's stdin), so that a
    /// share link replays the text as it was.
    pub fn kubectl(&mut self, line: &str) -> Vec<String> {
        let first = line.lines().next().unwrap_or("");
        let padded = format!("{first} ");
        let line = match [" -f editor ", " --filename editor ", " -f=editor ", " --filename=editor "].into_iter().find(|p| padded.contains(p)) {
            Some(p) => format!("{} <<KUBELOOP_EDITOR\n{}\nKUBELOOP_EDITOR\n", padded.replacen(p, " -f - ", 1).trim_end(), self.text.trim_end()),
            None => line.to_string(),
        };
        self.log.push(Done { t: self.cluster.now, user: self.user.clone(), what: Did::Kubectl(line.clone()) });
        let out = self.cluster.act(self.credentials(), Action::Kubectl(line)).output;
        // `kubectl config use-context NAME@kubeloop` runs what follows as NAME.
        let user = self.cluster.kubeconfig.user().to_string();
        if user != self.user && self.users.iter().any(|(n, _)| *n == user) {
            self.user = user;
        }
        out
    }

    /// `kubectl edit TYPE/NAME`: the file kubectl would open in the editor, or what it
    /// prints instead (a read, like `get -w`, so not logged for share links).
    pub fn edit_open(&mut self, line: &str) -> Result<String, Vec<String>> {
        self.cluster.api.now = self.cluster.now;
        let line = self.cluster.kubeconfig.with_namespace(line);
        let creds = crate::kubectl::line_identity(&self.cluster.api, &self.credentials(), &self.cluster.kubeconfig, &line)?;
        let ns = self.cluster.kubeconfig.namespace().to_string();
        crate::kubectl::edit::open(&mut self.cluster.api, &creds, &ns, &line)
    }

    /// Save the file an `edit` line opened: the line with the saved text as its
    /// here-document, run (and logged) as any kubectl line. What kubectl printed, and the
    /// file to edit again when the server refused the change.
    pub fn edit_save(&mut self, line: &str, saved: &str) -> (Vec<String>, Option<String>) {
        let mut text = saved.to_string();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let out = self.kubectl(&format!("{} <<KUBELOOP_EDIT\n{text}KUBELOOP_EDIT\n", line.trim()));
        let again = crate::kubectl::edit::reopened(saved, &out);
        (out, again)
    }

    /// As [`Sandbox::kubectl`], and for `get -w` also the watch whose rows follow the run,
    /// for a `kubectl wait` not over yet the wait (neither changes anything, so neither is
    /// logged for share links).
    pub fn kubectl_watching(&mut self, line: &str) -> (Vec<String>, Option<crate::kubectl::Follow>) {
        let words = crate::kubectl::split_args(line).unwrap_or_default();
        let verb = words.iter().find(|w| *w != "kubectl").map(String::as_str);
        let creds = self.credentials();
        if verb == Some("wait") {
            self.cluster.api.now = self.cluster.now;
            let (out, w) = crate::kubectl::run_in_waiting(&mut self.cluster.api, &creds, &mut self.cluster.kubeconfig, line);
            return (out, w.map(crate::kubectl::Follow::Wait));
        }
        // `logs -f`: what the container wrote so far, then what it writes next.
        if verb == Some("logs") && words.iter().any(|w| w == "-f" || w == "--follow" || w == "--follow=true") {
            let out = self.kubectl(line);
            let line = self.cluster.kubeconfig.with_namespace(line);
            let follow = self.cluster.logs_follow(&creds, &line);
            return (out, follow.map(crate::kubectl::Follow::Logs));
        }
        if !(verb == Some("get") && words.iter().any(|w| w == "-w" || w == "--watch" || w == "--watch=true")) {
            // `attach` without `-i` follows the container's output.
            let out = self.kubectl(line);
            return (out, self.cluster.following.take().map(crate::kubectl::Follow::Logs));
        }
        let line = self.cluster.kubeconfig.with_namespace(line);
        let (out, w) = crate::kubectl::run_watching(&mut self.cluster.api, &creds, &line);
        (out, w.map(crate::kubectl::Follow::Watch))
    }

    /// As [`Sandbox::kubectl`] for a command that is over when it returns: a `kubectl wait`
    /// runs the simulation on until it is met or times out (`kubeloop kubectl`).
    pub fn kubectl_to_end(&mut self, line: &str) -> Vec<String> {
        if crate::kubectl::verb_of(line) != Some("wait") {
            let mut out = self.kubectl(line);
            // No one types after it: an attached command's input ends, and a `run -i`
            // goes on until it is over (its pod ran, ended, was deleted); an `attach`
            // without `-i` prints the container's output until it ends.
            let give_up = self.cluster.now + 3_600_000;
            if let Some(mut f) = self.cluster.following.take() {
                while self.cluster.now < give_up {
                    let Some(next) = self.cluster.next_time() else { break };
                    self.cluster.run_until(next.max(self.cluster.now).min(give_up));
                    let (lines, over) = f.poll(&self.cluster.api, self.cluster.kubelet());
                    out.extend(lines);
                    if over {
                        break;
                    }
                }
                return out;
            }
            loop {
                if self.cluster.attached.is_some() {
                    out.extend(self.stdin(None));
                }
                out.append(&mut self.cluster.printed);
                if !self.cluster.run_pending() || self.cluster.now >= give_up {
                    return out;
                }
                let Some(next) = self.cluster.next_time() else { return out };
                self.cluster.run_until(next.max(self.cluster.now));
            }
        }
        let (mut out, follow) = self.kubectl_watching(line);
        let Some(crate::kubectl::Follow::Wait(mut w)) = follow else { return out };
        loop {
            let next = self.cluster.next_time().map_or(w.deadline(), |t| t.min(w.deadline())).max(self.cluster.now);
            self.cluster.run_until(next);
            let (lines, done) = w.poll(&self.cluster.api);
            out.extend(lines);
            if done {
                return out;
            }
        }
    }

    /// Inject a fault now (`nodeDown`, `webhookDown`, ... and the name it applies to).
    pub fn fault(&mut self, kind: &str, name: &str) -> Result<String, String> {
        let f = fault(kind, name)?;
        self.log.push(Done { t: self.cluster.now, user: self.user.clone(), what: Did::Fault(kind.to_string(), name.to_string()) });
        let out = self.cluster.act(self.credentials(), Action::Fault(f.clone()));
        Ok(out.output.first().cloned().unwrap_or_else(|| f.describe()))
    }

    /// A line typed into the command the terminal is attached to (`kubectl exec -i`), or
    /// the end of its input (None, Ctrl+D): what it printed.
    pub fn stdin(&mut self, text: Option<&str>) -> Vec<String> {
        self.log.push(Done { t: self.cluster.now, user: self.user.clone(), what: Did::Stdin(text.map(str::to_string)) });
        self.cluster.act(self.credentials(), Action::Stdin(text.map(str::to_string))).output
    }

    /// Run an etcdctl command line against the cluster's etcd (its maintenance).
    pub fn etcdctl(&mut self, line: &str) -> Vec<String> {
        self.log.push(Done { t: self.cluster.now, user: self.user.clone(), what: Did::Etcdctl(line.to_string()) });
        self.cluster.act(self.credentials(), Action::Etcdctl(line.to_string())).output
    }

    /// The etcd maintenance that frees a full database: compact to the current revision,
    /// defragment, disarm the NOSPACE alarm. What each step printed.
    pub fn free_etcd(&mut self) -> Vec<String> {
        let rev = self.cluster.api.store.revision();
        let mut out = self.etcdctl(&format!("compact {rev}"));
        out.extend(self.etcdctl("defrag"));
        out.extend(self.etcdctl("alarm disarm"));
        out
    }

    /// Advance the simulated clock by `ms`, running everything due.
    pub fn advance(&mut self, ms: Millis) {
        let until = self.cluster.now.saturating_add(ms);
        self.cluster.run_until(until);
    }

    /// As [`Sandbox::advance`], asking `keep_going` (the page's frame budget) before each
    /// task; returns false if the clock did not get there (the rest runs on the next call).
    pub fn advance_within(&mut self, ms: Millis, keep_going: impl FnMut() -> bool) -> bool {
        let until = self.cluster.now.saturating_add(ms);
        self.cluster.run_until_within(until, keep_going)
    }

    /// Jump to the next thing that happens, and run it.
    pub fn step(&mut self) -> bool {
        match self.cluster.next_time() {
            Some(t) => {
                self.cluster.run_until(t);
                true
            }
            None => false,
        }
    }

    /// The sandbox as it was at time `t` of this run: the same set-up and seed, what was
    /// done until then replayed at its times, and the clock run to `t`. The engine is
    /// deterministic, so this is the past exactly (the timeline and the embed API's `seek`).
    pub fn rewound(&self, t: Millis) -> Sandbox {
        let mut sb = Sandbox::new(&self.setup, Some(self.seed));
        self.replay_into(&mut sb, t);
        sb
    }

    /// Bring `past` (this run rewound to an earlier time, or moved on with this function)
    /// forward to time `t`: what was done in between, at its times.
    pub fn replay_into(&self, past: &mut Sandbox, t: Millis) {
        for d in self.log.iter().skip(past.log.len()).take_while(|d| d.t <= t) {
            // This run did it, so its user is known and its fault was taken.
            let _ = past.replay(d);
        }
        if t > past.cluster.now {
            past.cluster.run_until(t);
        }
        past.set_user(&self.user);
    }

    /// Do one logged thing again, at its time and as its user.
    fn replay(&mut self, d: &Done) -> Result<(), String> {
        if d.t > self.cluster.now {
            self.cluster.run_until(d.t);
        }
        if !self.set_user(&d.user) {
            return Err(format!("the link names an unknown user {:?}", d.user));
        }
        match &d.what {
            Did::Apply(text) => self.apply(text),
            Did::Kubectl(line) => drop(self.kubectl(line)),
            Did::Fault(kind, name) => drop(self.fault(kind, name)?),
            Did::Etcdctl(line) => drop(self.etcdctl(line)),
            Did::Stdin(text) => drop(self.stdin(text.as_deref())),
        }
        Ok(())
    }

    /// The object as stored at a resourceVersion, if the watch history still holds it.
    pub fn object_at(&self, object: &str, resource_version: &str) -> Option<Object> {
        let rev: u64 = resource_version.parse().ok()?;
        let mut parts = object.splitn(3, '/');
        let kind = parts.next()?;
        let r = RESOURCES.iter().position(|x| x.kind == kind)?;
        let store = &self.cluster.api.store;
        if let Ok(events) = store.events_since(r, rev.saturating_sub(1)) {
            if let Some(e) = events.take_while(|e| e.revision <= rev).find(|e| e.revision == rev) {
                return Some(e.object.clone());
            }
        }
        store.all().find(|o| api::resource_version(o) == resource_version).cloned()
    }

    /// The state as a link fragment (`s=1.<data>`): compressed, versioned, replayable.
    pub fn share(&self) -> String {
        self.share_with_base("")
    }

    /// As [`Sandbox::share`], with texts stored as edits: the set-up against `base` (the
    /// page's built-in example, which the link then need not carry) and each apply against
    /// the text applied before it.
    pub fn share_with_base(&self, base: &str) -> String {
        let mut previous = self.setup.as_str();
        let log = self
            .log
            .iter()
            .map(|d| {
                let what = match &d.what {
                    Did::Apply(text) => {
                        let e = Edit::between(previous, text);
                        previous = text;
                        Wire::Apply(e)
                    }
                    Did::Kubectl(line) => Wire::Kubectl(line.clone()),
                    Did::Fault(kind, name) => Wire::Fault(kind.clone(), name.clone()),
                    Did::Etcdctl(line) => Wire::Etcdctl(line.clone()),
                    Did::Stdin(text) => Wire::Stdin(text.clone()),
                };
                WireDone { t: d.t, user: d.user.clone(), what }
            })
            .collect();
        let s = Shared { v: SHARE_VERSION, seed: self.seed, setup: Edit::between(base, &self.setup), log, t: self.cluster.now, user: self.user.clone() };
        Sandbox::link_for_state(&serde_json::to_vec(&s).unwrap_or_default())
    }

    /// The link fragment that carries `state` (a share link's JSON) as the page writes
    /// it: deflated, base64url, versioned. For tools that build links, and the fuzzer.
    pub fn link_for_state(state: &[u8]) -> String {
        format!("s={SHARE_VERSION}.{}", base64url(&miniz_oxide::deflate::compress_to_vec(state, 9)))
    }

    /// Rebuild a shared state: the same set-up, the same actions at the same times.
    pub fn open(fragment: &str) -> Result<Sandbox, String> {
        Sandbox::open_with_base(fragment, "")
    }

    /// Rebuild a state shared with [`Sandbox::share_with_base`] and the same `base`.
    pub fn open_with_base(fragment: &str, base: &str) -> Result<Sandbox, String> {
        Sandbox::open_within(fragment, base, Replay::ALL)
    }

    /// [`Sandbox::open_with_base`] within `bounds`: the page replays any link whose times
    /// stay within [`MAX_RUN`](crate::foundation::sim::MAX_RUN); the fuzzer bounds it
    /// lower, so that its time goes to decoding and replaying links rather than to
    /// simulating the hours and the clusters a link may ask for (the seed sweep runs those).
    pub fn open_within(fragment: &str, base: &str, bounds: Replay) -> Result<Sandbox, String> {
        let mut opening = Sandbox::opening(fragment, base, bounds)?;
        while !opening.go_on(|| true)? {}
        Ok(opening.into_sandbox())
    }

    /// A link decoded and its sandbox set up, to be replayed a slice at a time with
    /// [`Opening::go_on`] (the page replays a long link between frames).
    pub fn opening(fragment: &str, base: &str, bounds: Replay) -> Result<Opening, String> {
        let link = Sandbox::decode_link(fragment, base, bounds.longest)?;
        let sb = Sandbox::new(&link.setup, Some(link.seed));
        Ok(Opening { sb, log: link.log.into(), end: link.end, user: link.user, tasks: bounds.tasks, bound: bounds.tasks, running: false })
    }

    /// What a link says, decoded and checked, with each editor text rebuilt from its edits
    /// (the set-up's from `base`), before any cluster is made: at most `longest` of
    /// simulated time.
    pub fn decode_link(fragment: &str, base: &str, longest: Millis) -> Result<Link, String> {
        let s = decode_share(fragment, longest)?;
        let setup = s.setup.apply_to(base)?;
        let mut previous = setup.clone();
        let mut log = Vec::with_capacity(s.log.len());
        for d in s.log {
            let what = match d.what {
                Wire::Apply(e) => {
                    previous = e.apply_to(&previous)?;
                    Did::Apply(previous.clone())
                }
                Wire::Kubectl(line) => Did::Kubectl(line),
                Wire::Fault(kind, name) => Did::Fault(kind, name),
                Wire::Etcdctl(line) => Did::Etcdctl(line),
                Wire::Stdin(text) => Did::Stdin(text),
            };
            log.push(Done { t: d.t, user: d.user, what });
        }
        Ok(Link { setup, seed: s.seed, log, end: s.t, user: s.user })
    }
}

/// A share link decoded: the set-up text and seed a sandbox is made from, what was done,
/// the moment the link was made and the user then chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub setup: String,
    pub seed: u64,
    pub log: Vec<Done>,
    pub end: Millis,
    pub user: String,
}

/// A share link being replayed: its actions not yet done, and the moment it was shared.
pub struct Opening {
    sb: Sandbox,
    log: std::collections::VecDeque<Done>,
    end: Millis,
    user: String,
    /// The cluster's tasks the bounds still allow, of `bound`.
    tasks: u64,
    bound: u64,
    /// The cluster is part way to the next action's time (tasks at that very moment may
    /// remain to run).
    running: bool,
}

impl Opening {
    /// Replay on while `keep_going` says so before each of the cluster's tasks; true once the
    /// sandbox is at the moment the link was shared. However it is sliced, the replay runs
    /// the same tasks in the same order: the sandbox is the one a single call would give.
    pub fn go_on(&mut self, mut keep_going: impl FnMut() -> bool) -> Result<bool, String> {
        loop {
            let target = self.log.front().map_or(self.end, |d| d.t);
            // As `replay` and `run_until` would: the clock is moved only forward.
            if self.running || target > self.sb.cluster.now {
                self.running = true;
                let (tasks, mut paused) = (&mut self.tasks, false);
                let within = self.sb.cluster.run_until_within(target, || {
                    if !keep_going() {
                        paused = true;
                        return false;
                    }
                    tasks.checked_sub(1).map(|left| *tasks = left).is_some()
                });
                if paused {
                    return Ok(false);
                }
                if !within {
                    return Err(format!("replaying the link takes more than {} of the cluster's tasks", self.bound));
                }
                self.running = false;
            }
            match self.log.pop_front() {
                Some(d) => self.sb.replay(&d)?,
                None => {
                    self.sb.set_user(&self.user);
                    return Ok(true);
                }
            }
        }
    }

    /// Where the replay is (simulated time), the moment it goes to, and how many of the
    /// cluster's tasks it has run.
    pub fn progress(&self) -> (Millis, Millis, u64) {
        (self.sb.cluster.now, self.end, self.bound - self.tasks)
    }

    /// The sandbox (at the link's moment once [`Opening::go_on`] said so).
    pub fn into_sandbox(self) -> Sandbox {
        self.sb
    }
}

/// How much of a share link [`Sandbox::open_within`] replays: times up to `longest` of
/// simulated time, and up to `tasks` of the cluster's tasks to get there.
#[derive(Debug, Clone, Copy)]
pub struct Replay {
    pub longest: Millis,
    pub tasks: u64,
}

impl Replay {
    /// What the page replays: any link within [`MAX_RUN`](crate::foundation::sim::MAX_RUN).
    pub const ALL: Replay = Replay { longest: crate::foundation::sim::MAX_RUN, tasks: u64::MAX };
}

/// A text as an edit of another: keep `p` characters from the start and `s` from the end,
/// and put `t` between them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Edit {
    p: usize,
    s: usize,
    t: String,
}

impl Edit {
    fn between(old: &str, new: &str) -> Edit {
        let o: Vec<char> = old.chars().collect();
        let n: Vec<char> = new.chars().collect();
        let p = o.iter().zip(&n).take_while(|(a, b)| a == b).count();
        let s = o[p..].iter().rev().zip(n[p..].iter().rev()).take_while(|(a, b)| a == b).count();
        Edit { p, s, t: n[p..n.len() - s].iter().collect() }
    }

    fn apply_to(&self, old: &str) -> Result<String, String> {
        let o: Vec<char> = old.chars().collect();
        // A damaged link may carry any numbers: their sum must not wrap.
        if self.p.checked_add(self.s).is_none_or(|kept| kept > o.len()) {
            return Err("the link's state does not fit this page's example (it was made from another one)".into());
        }
        let mut out: String = o[..self.p].iter().collect();
        out.push_str(&self.t);
        out.extend(&o[o.len() - self.s..]);
        Ok(out)
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Wire {
    Apply(Edit),
    Kubectl(String),
    Fault(String, String),
    Etcdctl(String),
    Stdin(Option<String>),
}

#[derive(Debug, Serialize, Deserialize)]
struct WireDone {
    t: Millis,
    user: String,
    #[serde(flatten)]
    what: Wire,
}

pub use crate::cluster::scenario::fault;

const SHARE_VERSION: u32 = 1;
/// Links longer than this are refused before decoding.
pub const MAX_LINK: usize = 200_000;
/// Decompressed state larger than this is refused (a crafted link cannot exhaust memory).
pub const MAX_STATE: usize = 1 << 20;

#[derive(Debug, Serialize, Deserialize)]
struct Shared {
    v: u32,
    seed: u64,
    setup: Edit,
    log: Vec<WireDone>,
    t: Millis,
    user: String,
}

fn decode_share(fragment: &str, longest: Millis) -> Result<Shared, String> {
    let f = fragment.trim_start_matches('#');
    if f.len() > MAX_LINK {
        return Err(format!("the link is too long ({} characters; at most {MAX_LINK})", f.len()));
    }
    let data = f.strip_prefix("s=").ok_or("the link holds no sandbox state (expected #s=...)")?;
    let (version, payload) = data.split_once('.').ok_or("the link's state is truncated (no version)")?;
    if version != SHARE_VERSION.to_string() {
        return Err(format!("the link was made by another version of kubeloop (state version {version:?}, this page reads {SHARE_VERSION})"));
    }
    let bytes = unbase64url(payload).ok_or("the link's state is damaged (not base64url)")?;
    let json = miniz_oxide::inflate::decompress_to_vec_with_limit(&bytes, MAX_STATE).map_err(|e| match e.status {
        miniz_oxide::inflate::TINFLStatus::HasMoreOutput => format!("the link's state is larger than {MAX_STATE} bytes"),
        _ => "the link's state is damaged or truncated (it does not decompress)".to_string(),
    })?;
    let s: Shared = serde_json::from_slice(&json).map_err(|e| format!("the link's state is damaged: {e}"))?;
    if s.v != SHARE_VERSION {
        return Err(format!("the link's state has version {} (this page reads {SHARE_VERSION})", s.v));
    }
    // Replaying a link runs the cluster to its times: bound them before any work.
    let latest = s.log.iter().map(|d| d.t).chain([s.t]).max().unwrap_or(0);
    if latest > longest {
        return Err(format!(
            "the link's state is at {} of simulated time; kubeloop replays links of at most {}",
            crate::kubectl::printers::human_duration(latest),
            crate::kubectl::printers::human_duration(longest)
        ));
    }
    Ok(s)
}

/// Share links carry base64url without padding; padded links (from other encoders) are
/// accepted too.
const LINK_BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    base64::engine::GeneralPurposeConfig::new().with_encode_padding(false).with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
);

fn base64url(data: &[u8]) -> String {
    LINK_BASE64.encode(data)
}

fn unbase64url(s: &str) -> Option<Vec<u8>> {
    LINK_BASE64.decode(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foundation::api::rid;

    const APP: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n";

    fn ready_pods(sb: &Sandbox) -> usize {
        sb.cluster.api.store.list(rid::POD, None).filter(|p| crate::foundation::pod::pod_is_ready(p)).count()
    }

    #[test]
    fn the_editor_is_the_desired_state() {
        let mut sb = Sandbox::new(APP, Some(1));
        assert_eq!(sb.docs.len(), 1);
        assert_eq!(sb.docs[0].result, "deployment.apps/web created");
        sb.advance(60_000);
        assert_eq!(ready_pods(&sb), 2);
        // Unchanged documents are not re-applied; a change is.
        let writes = sb.cluster.api.trace.requests().len();
        sb.apply(APP);
        assert_eq!(sb.cluster.api.trace.requests().len(), writes);
        sb.apply(&APP.replace("replicas: 2", "replicas: 3"));
        assert_eq!(sb.docs[0].result, "deployment.apps/web configured");
        sb.advance(60_000);
        assert_eq!(ready_pods(&sb), 3);
        // Removing the document deletes the object (and the garbage collector its pods).
        sb.apply("");
        sb.advance(120_000);
        assert!(sb.cluster.api.store.get_by(rid::DEPLOYMENT, "default", "web").is_none());
        assert_eq!(sb.cluster.api.store.count(rid::POD), 0);
    }

    #[test]
    fn kubectl_get_prints_what_kubectl_prints() {
        let mut sb = Sandbox::new(APP, Some(1));
        sb.advance(60_000);
        let pods = sb.kubectl("get pods");
        assert_eq!(pods.len(), 3, "{pods:?}");
        assert_eq!(pods[0].split_whitespace().collect::<Vec<_>>(), ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
        assert!(pods[1].starts_with("web-") && pods[1].contains("1/1     Running   0          "), "{pods:?}");
        let wide = sb.kubectl("get deploy -o wide");
        assert_eq!(wide[0].split_whitespace().collect::<Vec<_>>(), ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]);
        assert!(wide[1].starts_with("web    2/2     2            2           ") && wide[1].ends_with("web          nginx:1.27   app=web"), "{wide:?}");
        let names = sb.kubectl("get po -l app=web -o name");
        assert!(names.len() == 2 && names.iter().all(|n| n.starts_with("pod/web-")), "{names:?}");
        assert_eq!(sb.kubectl("get pods missing"), ["Error from server (NotFound): pods \"missing\" not found"]);
        assert_eq!(sb.kubectl("get nope"), ["error: the server doesn't have a resource type \"nope\""]);
        assert_eq!(sb.kubectl("get pods -n kube-public"), ["No resources found in kube-public namespace."]);
        let all = sb.kubectl("get nodes");
        assert!(all[1].starts_with("control-plane   Ready    control-plane"), "{all:?}");
        let yaml = sb.kubectl("get deployment web -o yaml").join("\n");
        assert!(yaml.starts_with("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n"), "{yaml}");
        let owner = sb.kubectl(&format!(
            "get pod {} -o jsonpath='{{.metadata.ownerReferences[0].kind}}/{{.metadata.ownerReferences[0].name}}'",
            names[0].trim_start_matches("pod/")
        ));
        assert!(owner.len() == 1 && owner[0].starts_with("ReplicaSet/web-"), "{owner:?}");
        assert_eq!(sb.kubectl("get deploy -o jsonpath={.items[*].metadata.name}"), ["web"]);
        let json = sb.kubectl("get deployment web -o json").join("\n");
        assert!(json.starts_with("{\n    \"apiVersion\": \"apps/v1\","), "{json}");
    }

    #[test]
    fn rollout_status_and_set_image_follow_the_rollout() {
        let mut sb = Sandbox::new(APP, Some(1));
        assert_eq!(sb.kubectl("rollout status deployment/web"), ["Waiting for deployment spec update to be observed..."]);
        sb.advance(60_000);
        assert_eq!(sb.kubectl("rollout status deployment/web"), ["deployment \"web\" successfully rolled out"]);
        assert_eq!(sb.kubectl("set image deployment/web web=nginx:1.28"), ["deployment.apps/web image updated"]);
        assert_eq!(sb.kubectl("set image deployment/web nope=nginx:1.28"), ["error: unable to find container named \"nope\""]);
        sb.advance(200);
        let mid = sb.kubectl("rollout status deploy/web");
        assert!(mid[0].starts_with("Waiting for deployment \"web\" rollout to finish: "), "{mid:?}");
        sb.advance(120_000);
        assert_eq!(sb.kubectl("rollout status deployment web"), ["deployment \"web\" successfully rolled out"]);
        assert_eq!(
            sb.kubectl("rollout history deployment/web"),
            ["deployment.apps/web ", "REVISION  CHANGE-CAUSE", "1         <none>", "2         <none>", ""]
        );
        assert_eq!(sb.kubectl("rollout restart deployment/web"), ["deployment.apps/web restarted"]);
        sb.advance(120_000);
        assert_eq!(sb.kubectl("rollout history deploy/web").len(), 6, "a third revision");
        let images = sb.kubectl("get rs -o wide --sort-by=.metadata.creationTimestamp");
        assert!(images.len() == 4 && images[1].contains("nginx:1.27") && images[2].contains("nginx:1.28"), "{images:?}");
        let res = sb.kubectl("api-resources");
        assert_eq!(res[0].split_whitespace().collect::<Vec<_>>(), ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]);
        assert!(res.iter().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["deployments", "deploy", "apps/v1", "true", "Deployment"]), "{res:?}");
    }

    #[test]
    fn describe_shows_spec_status_and_events() {
        let mut sb = Sandbox::new(APP, Some(1));
        sb.advance(60_000);
        let pod = sb.cluster.api.store.list(crate::foundation::api::rid::POD, None).next().map(|p| api::name(p).to_string()).unwrap();
        let d = sb.kubectl(&format!("describe pod {pod}"));
        let text = d.join("\n");
        assert_eq!(d[0], format!("Name:             {pod}"), "{text}");
        assert_eq!(d[1], "Namespace:        default");
        for want in [
            "Status:           Running",
            "Controlled By:  ReplicaSet/web-",
            "    Image:          nginx:1.27",
            "    State:          Running",
            "    Ready:          True",
            "QoS Class:                   BestEffort",
            "Tolerations:                 node.kubernetes.io/not-ready:NoExecute op=Exists for 300s",
            "  Type    Reason     Age   From               Message",
            "  Normal  Scheduled  ",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
        let dep = sb.kubectl("describe deployment web").join("\n");
        for want in [
            "Replicas:               2 desired | 2 updated | 2 total | 2 available | 0 unavailable",
            "StrategyType:           RollingUpdate",
            "RollingUpdateStrategy:  25% max unavailable, 25% max surge",
            "NewReplicaSet:   web-",
            "Normal  ScalingReplicaSet  ",
        ] {
            assert!(dep.contains(want), "missing {want:?} in\n{dep}");
        }
        let svc = sb.kubectl("describe service kubernetes");
        assert!(svc.contains(&"Endpoints:                172.18.0.2:6443".to_string()), "{svc:?}");
        assert_eq!(
            sb.kubectl("describe configmap kube-root-ca.crt"),
            ["error: kubeloop cannot describe configmaps yet (it describes pods, deployments, replicasets, replicationcontrollers, statefulsets, daemonsets, jobs, cronjobs, poddisruptionbudgets, horizontalpodautoscalers, services, nodes, namespaces, resourcequotas, limitranges, persistentvolumeclaims, persistentvolumes, storageclasses and certificatesigningrequests)"]
        );
    }

    #[test]
    fn get_watch_prints_a_row_per_change() {
        let mut sb = Sandbox::new("", Some(1));
        let (out, w) = sb.kubectl_watching("get pods -w");
        assert_eq!(out, ["No resources found in default namespace."]);
        let mut w = w.expect("a watch");
        sb.apply(APP);
        sb.advance(30_000);
        let (rows, done) = w.poll(&sb.cluster.api, None);
        assert!(!done, "a watch goes on until stopped");
        assert!(rows.iter().any(|r| r.contains(" Pending ")), "{rows:?}");
        assert!(rows.iter().any(|r| r.contains(" ContainerCreating ")), "{rows:?}");
        assert!(rows.iter().filter(|r| r.contains(" 1/1 ") && r.contains(" Running ")).count() >= 2, "{rows:?}");
        assert!(w.poll(&sb.cluster.api, None).0.is_empty(), "nothing new");
        let (_, none) = sb.kubectl_watching("get pods");
        assert!(none.is_none());
    }

    #[test]
    fn completion_offers_commands_types_and_names() {
        let mut sb = Sandbox::new(APP, Some(1));
        sb.advance(30_000);
        let api = &sb.cluster.api;
        assert_eq!(crate::kubectl::complete(api, "des"), ["describe"]);
        assert!(crate::kubectl::complete(api, "get dep").contains(&"deployments".to_string()));
        assert_eq!(crate::kubectl::complete(api, "scale deployment w"), ["web"]);
        assert_eq!(crate::kubectl::complete(api, "rollout status deployments "), ["web"]);
        assert_eq!(crate::kubectl::complete(api, "rollout un"), ["undo"]);
        assert_eq!(crate::kubectl::complete(api, "ex"), ["exec", "explain", "expose"]);
        assert!(crate::kubectl::complete(api, "run ").is_empty(), "run takes a new name, not a type");
        assert!(crate::kubectl::complete(api, "exec web-").iter().all(|p| p.starts_with("web-")) && !crate::kubectl::complete(api, "exec web-").is_empty());
        assert!(crate::kubectl::complete(api, "logs web-").iter().all(|p| p.starts_with("web-")) && !crate::kubectl::complete(api, "logs web-").is_empty());
        assert!(crate::kubectl::complete(api, "get pods -n kube-system x").is_empty());
        // Every command the terminal runs, and their subcommands, from the flag table.
        for c in ["attach", "autoscale", "completion", "debug", "edit", "kustomize", "port-forward", "top", "wait"] {
            assert!(crate::kubectl::commands().contains(&c), "{c}");
        }
        assert_eq!(crate::kubectl::complete(api, "apply "), ["edit-last-applied", "set-last-applied", "view-last-applied"]);
        assert_eq!(crate::kubectl::complete(api, "auth "), ["can-i", "whoami"]);
        assert_eq!(crate::kubectl::complete(api, "apply view-last-applied deployments w"), ["web"]);
        assert!(crate::kubectl::complete(api, "debug web-").iter().all(|p| p.starts_with("web-")) && !crate::kubectl::complete(api, "debug web-").is_empty());
    }

    #[test]
    fn taint_and_drain_move_pods_off_a_node() {
        let mut sb = Sandbox::new(APP, Some(1));
        sb.advance(60_000);
        assert_eq!(sb.kubectl("taint nodes node-a dedicated=infra:NoSchedule"), ["node/node-a tainted"]);
        assert_eq!(
            sb.kubectl("taint nodes node-a dedicated=infra:NoSchedule"),
            ["error: node node-a already has dedicated taint(s) with same effect(s) and --overwrite is false"]
        );
        assert_eq!(sb.kubectl("taint nodes node-a dedicated:NoSchedule-"), ["node/node-a untainted"]);
        let node = |p: &crate::foundation::api::Object| get_str(p, &["spec", "nodeName"]).map(str::to_string).unwrap_or_default();
        let busy = sb.cluster.api.store.list(rid::POD, None).map(node).next().unwrap();
        let out = sb.kubectl(&format!("drain {busy}"));
        assert_eq!(out.first().map(String::as_str), Some(format!("node/{busy} cordoned").as_str()), "{out:?}");
        assert!(out.iter().any(|l| l.starts_with("evicting pod default/web-")), "{out:?}");
        assert_eq!(out.last().map(String::as_str), Some(format!("node/{busy} drained").as_str()));
        sb.advance(120_000);
        assert_eq!(ready_pods(&sb), 2);
        assert!(sb.cluster.api.store.list(rid::POD, None).all(|p| node(p) != busy), "the drained node runs nothing");
        assert_eq!(sb.kubectl(&format!("uncordon {busy}")), [format!("node/{busy} uncordoned")]);
    }

    #[test]
    fn drain_evicts_through_disruption_budgets() {
        let mut sb = Sandbox::new(APP, Some(1));
        sb.advance(60_000);
        assert_eq!(sb.kubectl("create pdb web --selector=app=web --min-available=2"), ["poddisruptionbudget.policy/web created"]);
        let node = |p: &crate::foundation::api::Object| get_str(p, &["spec", "nodeName"]).map(str::to_string).unwrap_or_default();
        let busy = sb.cluster.api.store.list(rid::POD, None).map(node).next().unwrap();
        let out = sb.kubectl(&format!("drain {busy}"));
        assert!(out.iter().any(|l| l.ends_with("(will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.")), "{out:?}");
        assert!(out.last().unwrap().starts_with(&format!("error: unable to drain node {busy:?}")), "{out:?}");
        assert_eq!(ready_pods(&sb), 2, "the budget kept the pod");
        // With room in the budget the same drain goes through.
        assert_eq!(sb.kubectl("scale deployment web --replicas=3"), ["deployment.apps/web scaled"]);
        sb.advance(60_000);
        let out = sb.kubectl(&format!("drain {busy}"));
        assert_eq!(out.last().map(String::as_str), Some(format!("node/{busy} drained").as_str()), "{out:?}");
    }

    #[test]
    fn create_builds_what_kubectl_create_builds() {
        let mut sb = Sandbox::new("", Some(1));
        assert_eq!(sb.kubectl("create namespace shop"), ["namespace/shop created"]);
        assert_eq!(
            sb.kubectl("create deployment web --image=registry.example/team/nginx:1.27 --replicas=2 --port=80 -n shop"),
            ["deployment.apps/web created"]
        );
        assert_eq!(sb.kubectl("create deployment web --image=nginx -n shop"), ["error: failed to create deployment: deployments.apps \"web\" already exists"]);
        assert_eq!(sb.kubectl("create deployment api"), ["error: required flag(s) \"image\" not set"]);
        assert_eq!(sb.kubectl("create configmap conf --from-literal=a=1 --from-literal=b=two"), ["configmap/conf created"]);
        sb.advance(60_000);
        let d = sb.cluster.api.store.get_by(rid::DEPLOYMENT, "shop", "web").unwrap().clone();
        assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["name"], "nginx");
        assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"], 80);
        assert_eq!(d["metadata"]["labels"]["app"], "web");
        assert_eq!(sb.kubectl("get pods -n shop -o name").len(), 2);
        let cm = sb.cluster.api.store.get_by(rid::CONFIGMAP, "default", "conf").unwrap();
        assert_eq!(cm["data"], crate::json!({"a": "1", "b": "two"}));
    }

    #[test]
    fn auth_can_i_answers_from_rbac() {
        let setup = "apiVersion: kubeloop.dev/v1alpha1\nkind: Scenario\nspec:\n  users: [{name: ajay, token: t, groups: [payments]}]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: deployer, namespace: default}\nrules:\n- apiGroups: [apps]\n  resources: [deployments]\n  verbs: [get, list, create]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: d, namespace: default}\nsubjects: [{kind: Group, name: payments, apiGroup: rbac.authorization.k8s.io}]\nroleRef: {kind: Role, name: deployer, apiGroup: rbac.authorization.k8s.io}\n";
        let mut sb = Sandbox::new(setup, Some(1));
        assert_eq!(sb.kubectl("auth can-i create deployments.apps"), ["yes"]);
        assert_eq!(sb.kubectl("auth can-i delete nodes --as ajay"), ["no"]);
        // Impersonating a user without --as-group carries no groups (only
        // system:authenticated), so the payments binding does not apply: as in kubectl.
        assert_eq!(sb.kubectl("auth can-i create deployments --as ajay"), ["no"]);
        assert!(sb.set_user("ajay"));
        assert_eq!(sb.kubectl("auth can-i list deployments"), ["yes"]);
        assert_eq!(sb.kubectl("auth can-i list deployments -n kube-system"), ["no"]);
        assert_eq!(
            sb.kubectl("auth can-i get pods --as admin"),
            ["Error from server (Forbidden): users \"admin\" is forbidden: User \"ajay\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"]
        );
    }

    #[test]
    fn a_context_is_a_user_and_replays_with_its_namespace() {
        let setup = format!("apiVersion: kubeloop.dev/v1alpha1\nkind: Scenario\nspec:\n  users: [{{name: ajay, token: t, groups: [payments]}}]\n---\n{APP}");
        let mut sb = Sandbox::new(&setup, Some(1));
        assert_eq!(sb.kubectl("config use-context ajay@kubeloop"), ["Switched to context \"ajay@kubeloop\"."]);
        assert_eq!(sb.user, "ajay", "the context's user runs what follows");
        assert_eq!(sb.kubectl("auth can-i delete nodes"), ["no"]);
        assert!(sb.set_user("admin"));
        assert_eq!(sb.kubectl("config current-context"), ["kubeloop"], "the user menu picks the user's context");
        sb.kubectl("create namespace dev");
        sb.kubectl("config set-context --current --namespace=dev");
        sb.advance(30_000);
        sb.kubectl("create configmap flags --from-literal=a=b");
        assert!(sb.cluster.api.store.get_by(crate::foundation::api::rid::CONFIGMAP, "dev", "flags").is_some());
        // A share link replays the context's namespace with everything else.
        let again = Sandbox::open(&sb.share()).expect("the link replays");
        assert!(again.cluster.api.store.get_by(crate::foundation::api::rid::CONFIGMAP, "dev", "flags").is_some());
        assert_eq!(again.cluster.kubeconfig.namespace(), "dev");
    }

    #[test]
    fn a_prune_the_user_may_not_do_is_reported_and_retried() {
        let setup = format!("apiVersion: kubeloop.dev/v1alpha1\nkind: Scenario\nspec:\n  users: [{{name: ajay, token: t, groups: [payments]}}]\n---\n{APP}");
        let mut sb = Sandbox::new(&setup, Some(1));
        assert!(sb.set_user("ajay"));
        let without = setup.split("---\n").next().unwrap().to_string();
        sb.apply(&without);
        let pruned = sb.docs.iter().find(|d| d.object == "Deployment/web").expect("a prune result");
        assert!(pruned.failed() && pruned.result.contains("(Forbidden)"), "{pruned:?}");
        assert!(sb.cluster.api.store.get_by(crate::foundation::api::rid::DEPLOYMENT, "default", "web").is_some());
        sb.set_user("admin");
        sb.apply(&(without.clone() + " "));
        let pruned = sb.docs.iter().find(|d| d.object == "Deployment/web").expect("retried");
        assert_eq!(pruned.result, "pruned: deployment.apps \"web\" deleted from default namespace");
    }

    #[test]
    fn errors_point_at_their_document() {
        let text = format!("{APP}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: Bad_Name\nspec:\n  containers: [{{name: a, image: nginx}}]\n");
        let sb = Sandbox::new(&text, Some(1));
        assert_eq!(sb.docs.len(), 3);
        assert!(!sb.docs[0].failed());
        let yaml = &sb.docs[1].diagnostics[0];
        assert_eq!(yaml.line, 19, "{yaml:?}");
        let invalid = &sb.docs[2].diagnostics[0];
        assert_eq!(invalid.line, 21);
        assert!(invalid.message.contains("The Pod \"Bad_Name\" is invalid"), "{}", invalid.message);
    }

    #[test]
    fn a_link_replays_the_same_run() {
        let mut sb = Sandbox::new(APP, Some(3));
        sb.advance(30_000);
        sb.fault("nodeDown", "node-a").unwrap();
        sb.advance(10_000);
        sb.apply(&APP.replace("replicas: 2", "replicas: 4"));
        sb.kubectl("label deployment web tier=front");
        sb.advance(400_000);
        let link = sb.share();
        assert!(link.len() < 2000, "{} characters", link.len());
        let copy = Sandbox::open(&link).unwrap();
        assert_eq!(copy.cluster.now, sb.cluster.now);
        let a = serde_json::to_string(&sb.cluster.objects().iter().map(|o| &**o).collect::<Vec<_>>()).unwrap();
        let b = serde_json::to_string(&copy.cluster.objects().iter().map(|o| &**o).collect::<Vec<_>>()).unwrap();
        assert_eq!(a, b);
        assert_eq!(copy.text, sb.text);
    }

    #[test]
    fn rehearsing_an_edit_updates_every_applied_object_on_a_copy_only() {
        // The page's example: RBAC, an admission policy with CEL, a webhook, Deployments.
        let objects = |sb: &Sandbox| serde_json::to_string(&sb.cluster.objects().iter().map(|o| &**o).collect::<Vec<_>>()).unwrap();
        let example = include_str!("../../../../web/checkout.yaml");
        // Right after the example is applied, as the page does it.
        let mut sb = Sandbox::new(example, Some(7));
        sb.advance(300);
        let (before, records) = (objects(&sb), sb.cluster.api.trace.records().len());
        let docs = sb.rehearse_edit();
        assert_eq!(docs.len(), sb.applied.len());
        assert!(docs.len() >= 8, "{} documents", docs.len());
        // Each went through the API server as an update, and was accepted.
        for d in &docs {
            assert!(d.sent && d.result.ends_with(" configured"), "{}: {}", d.object, d.result);
        }
        // This run is as it was, and goes on as one that never rehearsed.
        assert_eq!(objects(&sb), before);
        assert_eq!(sb.cluster.api.trace.records().len(), records);
        let mut other = Sandbox::new(example, Some(7));
        other.advance(300);
        sb.advance(5_000);
        other.advance(5_000);
        assert_eq!(objects(&sb), objects(&other));
    }

    #[test]
    fn a_rewound_sandbox_is_the_run_as_it_was() {
        let objects = |sb: &Sandbox| serde_json::to_string(&sb.cluster.objects().iter().map(|o| &**o).collect::<Vec<_>>()).unwrap();
        let mut sb = Sandbox::new(APP, Some(3));
        sb.advance(20_000);
        sb.apply(&APP.replace("replicas: 2", "replicas: 3"));
        sb.advance(15_000);
        sb.fault("nodeDown", "node-b").unwrap();
        sb.advance(5_000);
        let (at_40s, records_at_40s) = (objects(&sb), sb.cluster.api.trace.records().len());
        sb.advance(2_000);
        sb.kubectl("scale deployment web --replicas=1");
        sb.fault("nodeUp", "node-b").unwrap();
        sb.advance(60_000);
        let past = sb.rewound(40_000);
        assert_eq!(past.cluster.now, 40_000);
        assert_eq!(objects(&past), at_40s);
        assert_eq!(past.cluster.api.trace.records().len(), records_at_40s);
        // Only what was done by then is in its log; the present is untouched.
        assert_eq!(past.log.len(), 2);
        assert_eq!(sb.log.len(), 4);
        assert_eq!(objects(&sb.rewound(sb.cluster.now)), objects(&sb));
        // Moving a rewound copy forward gives the same as rewinding to the later time.
        let mut moved = sb.rewound(10_000);
        sb.replay_into(&mut moved, 40_000);
        assert_eq!(objects(&moved), at_40s);
        sb.replay_into(&mut moved, sb.cluster.now);
        assert_eq!(objects(&moved), objects(&sb));
        // So does a copy of a past state (the page's timeline replays from such copies),
        // record for record, and the state it was copied from stays where it was.
        let checkpoint = sb.rewound(10_000);
        let mut copy = checkpoint.clone();
        sb.replay_into(&mut copy, 40_000);
        assert_eq!(objects(&copy), at_40s);
        assert_eq!(copy.cluster.api.trace.records(), past.cluster.api.trace.records());
        assert_eq!((checkpoint.cluster.now, checkpoint.log.len()), (10_000, 0));
        assert_ne!(objects(&checkpoint), at_40s);
    }

    #[test]
    fn a_link_decodes_to_its_set_up_and_log_before_any_cluster_is_made() {
        let mut sb = Sandbox::new(APP, Some(5));
        sb.advance(3_000);
        sb.apply(&APP.replace("replicas: 2", "replicas: 3"));
        sb.advance(1_000);
        sb.kubectl("scale deployment web --replicas=1");
        let link = Sandbox::decode_link(&sb.share(), "", crate::foundation::sim::MAX_RUN).unwrap();
        assert_eq!((link.setup.as_str(), link.seed, link.end, link.user.as_str()), (APP, 5, 4_000, "admin"));
        assert_eq!(link.log, sb.log);
        let err = Sandbox::decode_link(&sb.share(), "", 2_000).unwrap_err();
        assert!(err.contains("kubeloop replays links of at most"), "{err}");
    }

    #[test]
    fn bad_links_say_what_is_wrong() {
        let good = Sandbox::new(APP, Some(1)).share();
        assert!(Sandbox::open("#nothing").err().unwrap().contains("no sandbox state"));
        assert!(Sandbox::open(&good[..good.len() / 2]).err().unwrap().contains("damaged"));
        assert!(Sandbox::open("s=9.AAAA").err().unwrap().contains("another version"));
        assert!(Sandbox::open("s=1.***").err().unwrap().contains("not base64url"));
        assert!(Sandbox::open(&"s=1.".repeat(MAX_LINK)).err().unwrap().contains("too long"));
        // A small link that inflates past the bound is refused, not decompressed.
        let bomb = vec![b' '; MAX_STATE + 10];
        let link = format!("s=1.{}", base64url(&miniz_oxide::deflate::compress_to_vec(&bomb, 9)));
        assert!(link.len() < 5000);
        assert!(Sandbox::open(&link).err().unwrap().contains("larger than"));
        // A link whose time (or an action's) is far in the future is refused before any
        // replay, instead of simulating for years.
        let far = |t: Millis, log_t: Millis| {
            let log = vec![WireDone { t: log_t, user: "admin".into(), what: Wire::Kubectl("get pods".into()) }];
            let s = Shared { v: SHARE_VERSION, seed: 1, setup: Edit::between("", APP), log, t, user: "admin".into() };
            format!("s={SHARE_VERSION}.{}", base64url(&miniz_oxide::deflate::compress_to_vec(&serde_json::to_vec(&s).unwrap(), 9)))
        };
        let msg = Sandbox::open(&far(1_000_000_000_000, 0)).err().unwrap();
        assert!(msg.contains("kubeloop replays links of at most 24h"), "{msg}");
        assert!(Sandbox::open(&far(0, u64::MAX)).err().unwrap().contains("at most 24h"));
        assert!(Sandbox::open(&far(crate::foundation::sim::MAX_RUN, 0)).is_ok());
        // Tighter bounds (the fuzzer's): a shorter time, and a number of tasks.
        let ten_minutes = Replay { longest: 600_000, tasks: u64::MAX };
        assert!(Sandbox::open_within(&far(600_001, 0), "", ten_minutes).err().unwrap().contains("at most 10m"));
        let opened = Sandbox::open_within(&far(600_000, 60_000), "", ten_minutes).unwrap();
        // Ten minutes of the example's cluster take hundreds of tasks; enough of them gives
        // the same state as no bound.
        let few = Replay { longest: 600_000, tasks: 10 };
        let msg = Sandbox::open_within(&far(600_000, 60_000), "", few).err().unwrap();
        assert_eq!(msg, "replaying the link takes more than 10 of the cluster's tasks");
        let enough = Replay { longest: 600_000, tasks: 1_000_000 };
        let bounded = Sandbox::open_within(&far(600_000, 60_000), "", enough).unwrap();
        assert_eq!(crate::cluster::sweep::fingerprint(&bounded.cluster), crate::cluster::sweep::fingerprint(&opened.cluster));
        assert_eq!(bounded.cluster.now, 600_000);
        // Replayed a task at a time, the link gives the same sandbox as in one go.
        let mut opening = Sandbox::opening(&far(600_000, 60_000), "", Replay::ALL).unwrap();
        let (mut slices, mut turn) = (0, false);
        while !opening
            .go_on(|| {
                turn = !turn;
                turn
            })
            .unwrap()
        {
            slices += 1;
            assert!(opening.progress().0 <= 600_000);
        }
        assert!(slices > 100, "one task a slice: {slices}");
        let (t, end, tasks) = opening.progress();
        assert_eq!((t, end), (600_000, 600_000));
        // Each paused slice ran one task; the last ran one or none.
        assert!(tasks == slices || tasks == slices + 1, "{tasks} tasks in {slices} slices");
        let sliced = opening.into_sandbox();
        assert_eq!(crate::cluster::sweep::fingerprint(&sliced.cluster), crate::cluster::sweep::fingerprint(&opened.cluster));
        assert_eq!(sliced.share(), opened.share());
    }

    #[test]
    fn links_carry_edits_not_copies() {
        let mut sb = Sandbox::new(APP, Some(1));
        sb.apply(&APP.replace("replicas: 2", "replicas: 5"));
        // Against the example it was made from, the link carries only the change.
        let small = sb.share_with_base(APP);
        assert!(small.len() < 200, "{small}");
        let copy = Sandbox::open_with_base(&small, APP).unwrap();
        assert_eq!(copy.text, sb.text);
        assert_eq!(copy.setup, APP);
        // Opened against a shorter example, it says so instead of making something up.
        assert!(Sandbox::open_with_base(&small, "x").err().unwrap().contains("another one"));
        for (a, b) in [("", "abc"), ("abc", ""), ("héllo wörld", "héllo, wörld!"), ("same", "same")] {
            assert_eq!(Edit::between(a, b).apply_to(a).unwrap(), b);
        }
    }

    #[test]
    fn an_edit_whose_kept_lengths_overflow_is_refused() {
        let e = Edit { p: usize::MAX, s: 2, t: String::new() };
        assert!(e.apply_to("abc").unwrap_err().contains("does not fit"));
        let e = Edit { p: 1, s: 1, t: "X".into() };
        assert_eq!(e.apply_to("abc").unwrap(), "aXc");
    }

    #[test]
    fn base64url_round_trips() {
        for n in 0..20u8 {
            let data: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37)).collect();
            assert_eq!(unbase64url(&base64url(&data)).unwrap(), data);
        }
    }

    #[test]
    fn a_full_etcd_is_freed_from_the_page_and_the_link_replays_it() {
        let text = "apiVersion: kubeloop.dev/v1alpha1\nkind: Scenario\nspec:\n  etcd: {quotaBytes: 200Ki}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 20\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: c, image: nginx:1.27}]\n";
        let mut sb = Sandbox::new(text, Some(1));
        assert_eq!(sb.cluster.api.store.quota, 200 << 10);
        sb.advance(60_000);
        assert!(sb.cluster.api.store.space.alarm, "20 pods do not fit in 200 KiB");
        assert_eq!(sb.kubectl("scale deployment web --replicas=1"), ["Error from server: etcdserver: mvcc: database space exceeded"]);
        let out = sb.free_etcd();
        assert!(out[0].starts_with("compacted revision ") && out[1].starts_with("Finished defragmenting") && out[2].ends_with("alarm:NOSPACE "), "{out:?}");
        assert!(!sb.cluster.api.store.space.alarm);
        assert_eq!(sb.kubectl("scale deployment web --replicas=1"), ["deployment.apps/web scaled"]);
        let again = Sandbox::open(&sb.share()).expect("link opens");
        assert!(!again.cluster.api.store.space.alarm);
        assert_eq!(again.cluster.api.store.space.db_size, sb.cluster.api.store.space.db_size);
    }
}
