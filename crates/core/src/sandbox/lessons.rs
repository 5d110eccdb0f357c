//! Lessons: a scenario to open in the page, a goal the engine checks, hints, and an answer
//! revealed on request.
//!
//! A lesson's text is an editor text like any other (manifests, and a `Scenario` document
//! for the cluster and the faults over time). Its goal is a list of checks over the
//! simulated cluster — fields of stored objects, counts of objects, containers the
//! runtimes run, loops that are up or down, what the person did, trace records — and
//! questions whose right answer is read from what happened in the run (which component
//! wrote a record), never written into the lesson. Checking reads the engine's state and
//! sends no request, so watching a goal changes nothing in the run.
//!
//! The lessons live in `lessons.yaml` beside this file; `crates/core/tests/lessons.rs`
//! runs each one twice: left alone, its goal must stay unmet; with its answer's steps, met.

use super::{Did, Sandbox};
use crate::apiserver::trace::Record;
use crate::foundation::api::{self, RESOURCES};
use crate::foundation::labels::Selector;
use crate::foundation::sim::{parse_duration, Millis};
use serde::Deserialize;

/// The lessons the page offers, in the order it lists them.
pub const LESSONS: &str = include_str!("lessons.yaml");

/// A lesson as the list of lessons shows it, known without reading the lessons' bodies
/// (the page downloads those when a lesson is first opened).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub id: &'static str,
    pub group: Group,
    pub title: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/lesson_index.rs"));

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Group {
    /// The question ladder, L1 to L7.
    Ladder,
    Failure,
    Misconception,
    Trap,
    Design,
    /// A row of the sharp-edges table.
    Edge,
}

impl Group {
    pub const ALL: [Group; 6] = [Group::Ladder, Group::Failure, Group::Misconception, Group::Trap, Group::Design, Group::Edge];

    pub fn title(self) -> &'static str {
        match self {
            Group::Ladder => "The question ladder",
            Group::Failure => "Failure modes",
            Group::Misconception => "Misconceptions",
            Group::Trap => "Interview traps",
            Group::Design => "Design",
            Group::Edge => "Sharp edges",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Lesson {
    pub id: String,
    pub group: Group,
    pub title: String,
    /// The question the lesson answers, as a learner would ask it.
    pub question: String,
    /// What to do and what to look for (paragraphs; `code` in backquotes).
    pub story: String,
    /// The editor's text the lesson opens with.
    pub text: String,
    pub goal: Goal,
    #[serde(default)]
    pub hints: Vec<String>,
    pub answer: Answer,
    /// What the person should take away, shown once the goal is met.
    pub lesson: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Goal {
    /// The goal in one sentence.
    pub say: String,
    #[serde(default)]
    pub checks: Vec<Check>,
    #[serde(default)]
    pub asks: Vec<Ask>,
}

/// Conditions that must hold together. A check `once` stays met after it held at some
/// moment (for "while the API server was down, the pods kept running").
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Check {
    pub say: String,
    #[serde(default)]
    pub once: bool,
    pub when: Vec<Cond>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Cond {
    /// A stored object: that it exists (or not), or a JSONPath of it.
    Field(FieldCond),
    /// How many stored objects of a resource match.
    Count(CountCond),
    /// How many of the pods a selector matches have a container the runtime runs.
    Running(RunningCond),
    /// `apiserver`, `etcd` or a loop (`kube-scheduler`, `replicaset-controller`) is down.
    Down(String),
    Up(String),
    /// The person ran a kubectl command starting with these words, or injected a fault.
    Did(DidCond),
    /// A trace record like this one was written.
    Record(RecordQuery),
    /// The simulated clock has passed this time (`5m`).
    After(String),
    /// The condition does not hold.
    Not(Box<Cond>),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FieldCond {
    /// `resource/name`, as kubectl names it (`deployment/web`, `node/node-b`).
    pub object: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub equals: Option<String>,
    #[serde(default)]
    pub exists: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CountCond {
    pub resource: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub selector: Option<String>,
    /// Only objects whose JSONPath renders to `equals`.
    #[serde(default, rename = "where")]
    pub filter: Option<Where>,
    #[serde(flatten)]
    pub n: Amount,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Where {
    pub path: String,
    pub equals: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunningCond {
    #[serde(default)]
    pub namespace: Option<String>,
    pub selector: String,
    #[serde(flatten)]
    pub n: Amount,
}

/// `is: N` or `atLeast: N`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Amount {
    #[serde(default)]
    pub is: Option<usize>,
    #[serde(default)]
    pub at_least: Option<usize>,
}

impl Amount {
    fn holds(&self, n: usize) -> bool {
        self.is.is_none_or(|x| n == x) && self.at_least.is_none_or(|x| n >= x)
    }
    fn say(&self) -> String {
        match (self.is, self.at_least) {
            (Some(x), _) => format!("{x}"),
            (None, Some(x)) => format!("at least {x}"),
            (None, None) => "any number".into(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DidCond {
    #[serde(default)]
    pub kubectl: Option<String>,
    #[serde(default)]
    pub fault: Option<String>,
}

/// Trace records to look for: every field given must match (`object` and `message` by
/// prefix and by substring), and with `within` (`20s`) only the records of that much
/// simulated time before now count.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordQuery {
    #[serde(default)]
    pub flow: Option<String>,
    #[serde(default)]
    pub stage: Option<String>,
    #[serde(default)]
    pub component: Option<String>,
    #[serde(default)]
    pub user: Option<String>,
    #[serde(default)]
    pub verb: Option<String>,
    #[serde(default)]
    pub object: Option<String>,
    #[serde(default)]
    pub result: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub within: Option<String>,
}

impl RecordQuery {
    fn matches(&self, r: &Record) -> bool {
        self.flow.as_deref().is_none_or(|f| r.flow.as_str() == f)
            && self.stage.as_deref().is_none_or(|s| r.stage == s)
            && self.component.as_deref().is_none_or(|c| r.component == c)
            && self.user.as_deref().is_none_or(|u| r.user == u)
            && self.verb.as_deref().is_none_or(|v| r.verb == v)
            && self.object.as_deref().is_none_or(|o| r.object.starts_with(o))
            && self.result.as_deref().is_none_or(|x| r.result == x)
            && self.message.as_deref().is_none_or(|m| r.message.contains(m))
    }

    fn first<'a>(&self, sb: &'a Sandbox) -> Option<&'a Record> {
        let records = sb.cluster.api.trace.records();
        match self.within.as_deref() {
            None => records.iter().find(|r| self.matches(r)),
            // The latest records are the last ones: look back only as far as the window.
            Some(w) => {
                let since = sb.cluster.now.saturating_sub(parse_duration(w).unwrap_or(0));
                records.iter().rev().take_while(|r| r.t >= since).filter(|r| self.matches(r)).last()
            }
        }
    }
}

/// A question with choices; the right one is read from the run.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Ask {
    pub question: String,
    pub choices: Vec<String>,
    pub truth: Truth,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Truth {
    /// The component of the first record that matches.
    Component(RecordQuery),
    /// The stage of the first record that matches.
    Stage(RecordQuery),
    /// How many writes the cluster's components (not the person) stored in etcd, as one
    /// of [`WRITE_BUCKETS`].
    Writes(WritesQuery),
}

/// Which writes [`Truth::Writes`] counts: those while `apiserver` or `etcd` was down, or
/// those until a time.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WritesQuery {
    #[serde(default)]
    pub while_down: Option<String>,
    #[serde(default)]
    pub until: Option<String>,
}

/// The choices of a question about a number of writes.
pub const WRITE_BUCKETS: [&str; 4] = ["0", "1 to 100", "101 to 1,000", "more than 1,000"];

fn bucket(n: usize) -> &'static str {
    match n {
        0 => WRITE_BUCKETS[0],
        1..=100 => WRITE_BUCKETS[1],
        101..=1000 => WRITE_BUCKETS[2],
        _ => WRITE_BUCKETS[3],
    }
}

impl WritesQuery {
    fn count(&self, sb: &Sandbox) -> Option<usize> {
        let records = sb.cluster.api.trace.records();
        // The outages of the component asked about, as ranges of records (from the record
        // of their start to that of their end: the order, not the time, tells what came
        // before a fault injected within a millisecond).
        let until = self.until.as_deref().and_then(parse_duration);
        if until.is_some_and(|t| sb.cluster.now < t) {
            return None;
        }
        let windows: Vec<(usize, usize)> = match self.while_down.as_deref() {
            None => vec![(0, records.iter().position(|r| until.is_some_and(|t| r.t >= t)).unwrap_or(records.len()))],
            Some(what) => {
                let component = if what == "apiserver" { "kube-apiserver" } else { what };
                let mut out = Vec::new();
                let mut start = None;
                for (i, r) in records.iter().enumerate().filter(|(_, r)| r.stage == "fault" && r.component == component) {
                    match (r.result, start) {
                        ("error", None) => start = Some(i),
                        ("ok", Some(i0)) => {
                            out.push((i0, i));
                            start = None;
                        }
                        _ => {}
                    }
                }
                // Only a finished outage answers the question.
                out
            }
        };
        if windows.is_empty() {
            return None;
        }
        let stored = |r: &Record| r.flow.as_str() == "5" && r.result == "ok" && r.component != "kubectl" && r.message.starts_with("stored ");
        Some(windows.iter().map(|(a, b)| records[*a..*b].iter().filter(|r| stored(r)).count()).sum())
    }
}

impl Truth {
    /// The right choice, once the run has shown it.
    pub fn value(&self, sb: &Sandbox) -> Option<String> {
        match self {
            Truth::Component(q) => q.first(sb).map(|r| r.component.clone()),
            Truth::Stage(q) => q.first(sb).map(|r| r.stage.to_string()),
            Truth::Writes(w) => w.count(sb).map(|n| bucket(n).to_string()),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Answer {
    /// The answer in words.
    pub say: String,
    /// The same answer as steps a test (or the person) can take.
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Step {
    /// Change the editor's text (`from` must occur in it) and apply it.
    Edit { from: String, to: String },
    /// A terminal line.
    Kubectl(String),
    /// A fault from the Break things panel: `nodeDown`, `controllerUp`, ... and its name.
    Fault {
        kind: String,
        #[serde(default)]
        name: String,
    },
    /// Answer question `ask` (0-based).
    Choose { ask: usize, choice: String },
    /// Let the simulated clock run.
    Wait(String),
    /// Rebuild the cluster from the editor (the scenario's timeline runs again).
    Reset,
    /// etcd's maintenance: compact, defragment, disarm the alarm.
    FreeEtcd,
}

/// The seeds' decision chart as a way into the lessons: a symptom, and the lessons that
/// teach what to look at.
pub const CHART: &[(&str, &[&str])] = &[
    ("A pod is Pending?", &["e1-scheduling-untolerated-taint", "e3-storage-zonal-volume", "e4-node-scaling-latency", "t1-scheduler-does-not-start-containers"]),
    ("A pod has a node but does not run?", &["f1-apply-succeeded-nothing-runs", "l1-apply-stores-intent", "l4-bind-then-run"]),
    (
        "A write or deploy fails before any pod exists?",
        &["f2-webhook-down-blocks-deploys", "l6-block-at-admission", "t2-etcd-is-not-an-app-database", "d1-design-deploy-path"],
    ),
    ("A change was undone, or something will not go away?", &["f3-hand-edits-reverted", "e2-finalizer-stuck-terminating", "l2-declarative-heals"]),
    ("The control plane is down or in trouble?", &["l5-control-plane-down", "m3-outage-keeps-apps-running", "l3-only-the-api-server-talks-to-etcd"]),
    ("Requests are refused with 429 Too Many Requests?", &["e5-list-storm-429", "l7-what-a-control-plane-costs"]),
];

/// Every lesson, checked: unique ids, answers that name real questions and choices.
pub fn load() -> Result<Vec<Lesson>, String> {
    parse(LESSONS)
}

pub fn parse(text: &str) -> Result<Vec<Lesson>, String> {
    let value = crate::foundation::manifest::parse_value(text).map_err(|e| format!("lessons.yaml:{}:{}: {}", e.line, e.column, e.message))?;
    let json = serde_json::to_string(&value).map_err(|e| e.to_string())?;
    let lessons: Vec<Lesson> = serde_json::from_str(&json).map_err(|e| format!("lessons.yaml: {e}"))?;
    for (i, l) in lessons.iter().enumerate() {
        if lessons[..i].iter().any(|o| o.id == l.id) {
            return Err(format!("lessons.yaml: two lessons have the id {:?}", l.id));
        }
        if l.goal.checks.is_empty() && l.goal.asks.is_empty() {
            return Err(format!("lesson {}: a goal needs checks or questions", l.id));
        }
        for s in &l.answer.steps {
            match s {
                Step::Choose { ask, choice } => {
                    let Some(a) = l.goal.asks.get(*ask) else {
                        return Err(format!("lesson {}: the answer chooses for question {ask}, which it has not", l.id));
                    };
                    if matches!(a.truth, Truth::Writes(_)) && a.choices.iter().any(|c| !WRITE_BUCKETS.contains(&c.as_str())) {
                        return Err(format!("lesson {}: the choices of {:?} must be {WRITE_BUCKETS:?}", l.id, a.question));
                    }
                    if !a.choices.contains(choice) {
                        return Err(format!("lesson {}: {choice:?} is not a choice of {:?}", l.id, a.question));
                    }
                }
                Step::Wait(d) if parse_duration(d).is_none() => return Err(format!("lesson {}: invalid duration {d:?}", l.id)),
                _ => {}
            }
        }
        for c in l.goal.checks.iter().flat_map(|c| &c.when) {
            let mut inner = c;
            while let Cond::Not(c) = inner {
                inner = c;
            }
            if let Cond::Record(RecordQuery { within: Some(w), .. }) = inner {
                if parse_duration(w).is_none() {
                    return Err(format!("lesson {}: invalid duration {w:?}", l.id));
                }
            }
            let resource = match c {
                Cond::Field(f) => f.object.split_once('/').map(|(r, _)| r).unwrap_or(""),
                Cond::Count(c) => &c.resource,
                _ => continue,
            };
            if api::resource_for_name(resource).is_none() {
                return Err(format!("lesson {}: no resource {resource:?}", l.id));
            }
        }
    }
    for (_, ids) in CHART {
        if let Some(id) = ids.iter().find(|id| !lessons.iter().any(|l| l.id == **id)) {
            return Err(format!("the decision chart names lesson {id:?}, which does not exist"));
        }
    }
    Ok(lessons)
}

/// Where a person is in a lesson: the checks that held once, the choices made, and when
/// the goal was first met.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    latched: Vec<bool>,
    pub chosen: Vec<Option<String>>,
    pub met_at: Option<Millis>,
}

/// One line of a goal as the page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckState {
    pub say: String,
    pub ok: bool,
    /// What the cluster shows now, when it does not (yet) hold.
    pub seen: String,
}

impl Progress {
    /// A new run of the same lesson (after Reset): what held in the last run no longer
    /// counts; the choices stay.
    pub fn restart(&mut self) {
        self.latched.clear();
    }
}

impl Step {
    /// The step as the page tells it.
    pub fn describe(&self, lesson: &Lesson) -> String {
        match self {
            Step::Edit { from, to } => format!("In the editor, change\n{}\nto\n{}", from.trim_end(), to.trim_end()),
            Step::Kubectl(line) => format!("In the Terminal: kubectl {line}"),
            Step::Fault { kind, name } => {
                let what = crate::cluster::scenario::fault(kind, name).map(|f| f.describe()).unwrap_or_else(|e| e);
                format!("Break things: {what}")
            }
            Step::Choose { ask, choice } => format!("Answer “{}”: {choice}", lesson.goal.asks.get(*ask).map_or("", |a| a.question.as_str())),
            Step::Wait(d) => format!("Let it run for {d}"),
            Step::Reset => "Press Reset, and let the timeline run".into(),
            Step::FreeEtcd => "Break things: compact and defragment etcd (and disarm its alarm)".into(),
        }
    }
}

impl Lesson {
    /// Look at the cluster now: each check and question, and whether the goal is met (which
    /// stays recorded in `progress`).
    pub fn observe(&self, sb: &Sandbox, progress: &mut Progress) -> Vec<CheckState> {
        progress.latched.resize(self.goal.checks.len(), false);
        progress.chosen.resize(self.goal.asks.len(), None);
        let mut out = Vec::new();
        for (i, c) in self.goal.checks.iter().enumerate() {
            let mut seen = String::new();
            let mut ok = true;
            for cond in &c.when {
                let (holds, what) = cond.eval(sb);
                if !holds {
                    ok = false;
                    seen = what;
                    break;
                }
            }
            if c.once {
                progress.latched[i] |= ok;
                ok = progress.latched[i];
            }
            out.push(CheckState { say: c.say.clone(), ok, seen: if ok { String::new() } else { seen } });
        }
        for (i, a) in self.goal.asks.iter().enumerate() {
            let truth = a.truth.value(sb);
            let chosen = progress.chosen[i].as_deref();
            let ok = truth.is_some() && chosen == truth.as_deref();
            let seen = match (chosen, &truth) {
                (None, _) => "not answered yet".to_string(),
                (Some(_), None) => "the run has not shown it yet: let it play".to_string(),
                (Some(c), Some(_)) if !ok => format!("not {c}: look again"),
                _ => String::new(),
            };
            out.push(CheckState { say: a.question.clone(), ok, seen });
        }
        if progress.met_at.is_none() && out.iter().all(|c| c.ok) {
            progress.met_at = Some(sb.cluster.now);
        }
        out
    }
}

impl Cond {
    /// Whether it holds now, and what the cluster shows (for a line that does not hold).
    pub fn eval(&self, sb: &Sandbox) -> (bool, String) {
        let store = &sb.cluster.api.store;
        match self {
            Cond::Field(f) => {
                let (res, name) = f.object.split_once('/').unwrap_or((&f.object, ""));
                let Some(r) = api::resource_for_name(res) else { return (false, format!("no resource {res}")) };
                let ns = if RESOURCES[r].namespaced { f.namespace.as_deref().unwrap_or("default") } else { "" };
                let obj = store.get_by(r, ns, name);
                let exists = format!("{} {}", f.object, if obj.is_some() { "exists" } else { "does not exist" });
                if f.exists.is_some_and(|want| obj.is_some() != want) {
                    return (false, exists);
                }
                let Some(obj) = obj else { return (f.exists == Some(false), exists) };
                let Some(path) = &f.path else { return (true, exists) };
                let got = crate::kubectl::jsonpath::render(path, obj).unwrap_or_default();
                let ok = match &f.equals {
                    Some(want) => got == *want,
                    None => !got.is_empty(),
                };
                (ok, format!("{} {path} is {}", f.object, if got.is_empty() { "empty".to_string() } else { format!("{got:?}") }))
            }
            Cond::Count(c) => {
                let Some(r) = api::resource_for_name(&c.resource) else { return (false, format!("no resource {}", c.resource)) };
                let selector = c.selector.as_deref().map(Selector::parse).transpose();
                let Ok(selector) = selector else { return (false, "invalid selector".into()) };
                let ns = if RESOURCES[r].namespaced { Some(c.namespace.as_deref().unwrap_or("default")) } else { None };
                let n = store
                    .list(r, ns)
                    .filter(|o| selector.as_ref().is_none_or(|s| s.matches(api::labels(o))))
                    .filter(|o| c.filter.as_ref().is_none_or(|w| crate::kubectl::jsonpath::render(&w.path, o).is_ok_and(|v| v == w.equals)))
                    .count();
                (c.n.holds(n), format!("{n} {} (the goal: {})", RESOURCES[r].plural, c.n.say()))
            }
            Cond::Running(c) => {
                let ns = c.namespace.as_deref().unwrap_or("default");
                let Ok(selector) = Selector::parse(&c.selector) else { return (false, "invalid selector".into()) };
                let running = sb.cluster.running_containers();
                let n = store
                    .list(api::rid::POD, Some(ns))
                    .filter(|p| selector.matches(api::labels(p)))
                    .filter(|p| running.iter().any(|(pns, pod, _)| pns == ns && pod == api::name(p)))
                    .count();
                (c.n.holds(n), format!("{n} pods with running containers (the goal: {})", c.n.say()))
            }
            Cond::Down(what) | Cond::Up(what) => {
                let down = match what.as_str() {
                    "apiserver" => Some(sb.cluster.api.down_since.is_some()),
                    "etcd" => Some(sb.cluster.api.etcd_down_since.is_some()),
                    // etcd's NOSPACE alarm: up again once it is disarmed.
                    "etcd-space" => Some(sb.cluster.api.store.space.alarm),
                    name => sb.cluster.loop_running(name).map(|r| !r),
                };
                let Some(down) = down else { return (false, format!("no component {what}")) };
                let want_down = matches!(self, Cond::Down(_));
                (down == want_down, format!("{what} is {}", if down { "down" } else { "up" }))
            }
            Cond::Did(d) => {
                let done = sb.log.iter().any(|x| match (&x.what, d) {
                    (Did::Kubectl(line), DidCond { kubectl: Some(p), .. }) => {
                        line.trim_start().strip_prefix("kubectl ").unwrap_or(line.trim_start()).starts_with(p.as_str())
                    }
                    (Did::Fault(kind, _), DidCond { fault: Some(f), .. }) => kind == f,
                    _ => false,
                });
                let what = match d {
                    DidCond { kubectl: Some(p), .. } => format!("not yet: kubectl {p} …"),
                    DidCond { fault: Some(f), .. } => format!("not yet: {f}"),
                    _ => "not yet".into(),
                };
                (done, what)
            }
            Cond::Record(q) => (q.first(sb).is_some(), "not yet".into()),
            Cond::After(d) => {
                let t = parse_duration(d).unwrap_or(Millis::MAX);
                (sb.cluster.now >= t, format!("the clock is at {} s of {} s", sb.cluster.now / 1000, t / 1000))
            }
            Cond::Not(c) => {
                let (holds, _) = c.eval(sb);
                (!holds, "it happened".into())
            }
        }
    }
}

/// Take one answer step in a sandbox (what the page's buttons do; the tests walk answers
/// with it). `progress` receives a choice.
pub fn take_step(sb: &mut Sandbox, step: &Step, progress: &mut Progress) -> Result<(), String> {
    match step {
        Step::Edit { from, to } => {
            if !sb.text.contains(from.as_str()) {
                return Err(format!("the editor holds no {from:?}"));
            }
            let text = sb.text.replacen(from.as_str(), to, 1);
            sb.apply(&text);
        }
        Step::Kubectl(line) => {
            sb.kubectl(line);
        }
        Step::Fault { kind, name } => {
            sb.fault(kind, name)?;
        }
        Step::Choose { ask, choice } => {
            if progress.chosen.len() <= *ask {
                progress.chosen.resize(ask + 1, None);
            }
            progress.chosen[*ask] = Some(choice.clone());
        }
        Step::FreeEtcd => {
            sb.free_etcd();
        }
        Step::Wait(d) => sb.advance(parse_duration(d).ok_or_else(|| format!("invalid duration {d:?}"))?),
        Step::Reset => {
            let (text, seed, user) = (sb.text.clone(), sb.seed, sb.user.clone());
            *sb = Sandbox::new(&text, Some(seed));
            sb.set_user(&user);
            progress.restart();
        }
    }
    Ok(())
}
