//! The kubeloop sandbox page: the engine of `kubeloop-core` running in the browser.
//!
//! One component owns the [`Sandbox`]; every pane is a view of it. The editor text is the
//! desired state (applied after a pause in typing, or at once with Ctrl+Enter); a timer
//! advances the simulated clock while playing; the diagram folds new trace records into
//! per-step tallies on every tick.

mod bench;
mod cel;
mod diagram;
mod docs;
mod embed;
mod lessons;
mod rest;
mod sweep;
mod timeline;

use diagram::Tally;
use gloo_timers::callback::{Interval, Timeout};
use kubeloop_core::apiserver::trace::{Flow, Record};
use kubeloop_core::foundation::api::{self, get, get_str, rid, Object};
use kubeloop_core::foundation::quantity::value_milli;
use kubeloop_core::foundation::sort::Sort;
use kubeloop_core::foundation::value::Value;
use kubeloop_core::kubectl::printers::{human_duration, pod_row};
use kubeloop_core::sandbox::lessons::{CheckState, Lesson, Progress};
use kubeloop_core::sandbox::{Replay, Sandbox};
use web_sys::{HtmlInputElement, HtmlSelectElement, HtmlTextAreaElement};
use yew::prelude::*;

const DEFAULT_TEXT: &str = include_str!("../../../web/checkout.yaml");
/// Real milliseconds between ticks while playing: one a frame, of which a light run uses
/// one in `LIGHT_TICK_MS`.
const TICK_MS: u32 = 16;
const LIGHT_TICK_MS: f64 = 100.0;
/// Real milliseconds of simulation per tick at most, for a light run and for a heavy one
/// (every frame: the rest of the frame is the page's).
const TICK_BUDGET_MS: f64 = 25.0;
const HEAVY_TICK_BUDGET_MS: f64 = 7.0;
/// A light run waits this long (real ms) after a keystroke in the editor or the terminal, so
/// the frame that shows the keystroke is not also the one that advances and redraws the
/// run; the run catches up on its next tick.
const QUIET_AFTER_INPUT_MS: f64 = 40.0;
/// The records pane lists at most this many of a step's records, the newest: every row is
/// laid out and painted again in every frame that changes the page, so a long session's
/// keystrokes would otherwise grow slower with the run.
const RECORDS_LISTED: usize = 100;
/// The records pane's first rows, always drawn: those its box shows before any scrolling.
const RECORDS_DRAWN: usize = 20;
/// While the run moves, the page is drawn again at most this often (real ms): drawing costs
/// more than a frame's simulation, and ten times a second is what an eye follows.
const DRAW_MS: f64 = 100.0;
/// The most pod chips drawn per node (and for unscheduled pods).
const MAX_CHIPS: usize = 60;
/// Above this many nodes the cluster view draws only the rows in sight ...
const VIRTUAL_NODES: usize = 60;
/// ... each node a card of this height (px) with this many chips at most.
const NODE_HEIGHT: f64 = 150.0;
const VIRTUAL_CHIPS: usize = 6;
/// The grid's gap and a card's narrowest width (px), as in style.css.
const NODE_GAP: f64 = 8.0;
const NODE_MIN_WIDTH: f64 = 180.0;
/// Said when the editor opens with what the person typed here last time.
const RESTORED: &str = "Restored what you last typed here (kept in this browser). \"Load the example\" brings the example back.";
/// Said while the CEL module loads.
const CEL_LOADING: &str = "Loading the policy engine (CEL)…";
/// Typing pause before the editor is applied.
const APPLY_DELAY_MS: u32 = 600;

#[derive(Clone, Copy, PartialEq)]
enum Speed {
    X1,
    X10,
    X100,
    Max,
}

impl Speed {
    fn label(self) -> &'static str {
        match self {
            Speed::X1 => "1×",
            Speed::X10 => "10×",
            Speed::X100 => "100×",
            Speed::Max => "as fast as possible",
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Tab {
    Terminal,
    Records,
    Objects,
    Events,
}

enum Msg {
    Edit(String),
    /// The large cluster view's box: scrolled to, wide and high (px).
    NodesMoved(f64, f64, f64),
    ApplyNow,
    /// Put the example back in the editor (what was typed is replaced).
    LoadExample,
    Tick,
    TogglePlay,
    SetSpeed(Speed),
    StepOnce,
    Reset,
    SetSeed(String),
    SetUser(String),
    SelectFlow(Flow),
    ToggleBackground,
    SelectRecord(usize),
    SelectObject(String),
    SetTab(Tab),
    Fault(&'static str, String),
    ScaleBy(i64),
    /// etcd's maintenance: compact, defragment, disarm.
    FreeEtcd,
    SetFaultNode(String),
    Share,
    CelLoaded(Result<(), String>),
    /// The API documentation for `explain` arrived; run the waiting command line.
    DocsLoaded(Result<(), String>, String),
    TermInput(String),
    TermRun,
    TermHistory(i32),
    TermStop,
    /// Ctrl+D: the end of the attached command's input.
    TermEof,
    TermComplete,
    /// `kubectl edit`'s editor pane: its text changed, save it, close it unsaved.
    EditText(String),
    EditSave,
    EditCancel,
    OpenFull,
    ToggleLessons,
    /// The page has drawn: tell an embedding page it is ready.
    Ready,
    /// Run an edit once on a copy of the sandbox ([`App::rehearse_an_edit`]).
    Rehearse,
    OpenLesson(usize),
    LeaveLesson,
    /// The open lesson's text and cluster as they were at its start.
    RestartLesson,
    /// Answer question `.0` of the open lesson.
    Choose(usize, String),
    Hint,
    ShowAnswer,
    /// A message from the embedding page: its origin and its JSON.
    Embed(String, String),
    /// The timeline was moved to this simulated time (ms).
    Scrub(u64),
    /// Step the timeline to the previous (-1) or next (+1) write to etcd.
    WriteStep(i32),
    BackToNow,
    /// Show what the write of this version of the selected object changed.
    DiffVersion(u64),
    ToggleWhy,
    /// Follow this object's journey on the diagram (`None`: show everything).
    Follow(Option<String>),
    /// Follow the object of the editor's document that starts at this line.
    FollowDoc(usize),
    /// Animate the followed journey in simulated time.
    PlayJourney,
    /// Download a script that makes a kind cluster like this one and applies the manifests.
    Export,
    /// Named workspaces: the name typed, keep the session under it, open, rename to the
    /// name typed, delete.
    WsName(String),
    WsKeep,
    WsOpen(String),
    WsRename(String),
    WsDelete(String),
    /// Show a trace record in its step's list (from a "why" row).
    ShowRecord(usize),
}

impl Msg {
    /// Whether the message does something to the run (applies, runs, breaks, moves time).
    fn changes_the_run(&self) -> bool {
        matches!(
            self,
            Msg::ApplyNow
                | Msg::TogglePlay
                | Msg::StepOnce
                | Msg::Reset
                | Msg::SetUser(_)
                | Msg::Fault(..)
                | Msg::ScaleBy(_)
                | Msg::FreeEtcd
                | Msg::TermRun
                | Msg::EditSave
        )
    }
}

/// What the sandbox starts from.
enum Init {
    Link(String),
    Text(String),
    /// A kept session (the one saved for this page, or a named workspace): a link
    /// fragment that replays it, and what was said of it once it is open.
    Session(String, String),
}

/// How long the page replays a link before it first draws: a link that takes longer goes
/// on between frames, with its progress shown.
const OPENING_SLICE_MS: f64 = 50.0;

/// Replay a link for about `budget` milliseconds: true once it is at its moment.
fn replay_for(opening: &mut kubeloop_core::sandbox::Opening, budget: f64) -> Result<bool, String> {
    let start = now_ms();
    // The clock is read before each task, as the page's run does: a task of a large
    // cluster's replay (a ReplicaSet creating its pods, a scheduling pass) can take
    // milliseconds.
    opening.go_on(|| now_ms() - start < budget)
}

/// What the page says while a link replays.
fn replaying(opening: &kubeloop_core::sandbox::Opening) -> String {
    let (now, end, tasks) = opening.progress();
    format!(
        "Replaying the link: the cluster is at t = {:.1} s of the {:.1} s it ran before it was shared ({tasks} of its tasks run). The editor and the cluster open when the replay is done.",
        now as f64 / 1000.0,
        end as f64 / 1000.0
    )
}

/// Which panes to show: all, or those an embed asks for.
#[derive(Clone, PartialEq)]
struct Panes {
    embed: bool,
    editor: bool,
    diagram: bool,
    cluster: bool,
    details: bool,
}

impl Panes {
    fn from_query(search: &str) -> Panes {
        let params = web_sys::UrlSearchParams::new_with_str(search).ok();
        match params.as_ref().and_then(|p| p.get("embed")) {
            None => Panes { embed: false, editor: true, diagram: true, cluster: true, details: true },
            Some(list) => {
                let list = if list.trim().is_empty() { "editor,diagram".to_string() } else { list };
                let has = |p: &str| list.split(',').any(|x| x.trim() == p);
                Panes { embed: true, editor: has("editor"), diagram: has("diagram"), cluster: has("cluster"), details: has("details") }
            }
        }
    }
}

struct App {
    sb: Sandbox,
    /// The editor's text (what the person typed, applied or not).
    text: String,
    seed_input: String,
    playing: bool,
    speed: Speed,
    tallies: [Tally; 14],
    seen_records: usize,
    /// Count heartbeats, leases and events too (off: the counters say what the person did).
    background: bool,
    /// The editor holds what the person typed here before, not the example.
    restored: bool,
    flow: Option<Flow>,
    record: Option<usize>,
    object: Option<String>,
    tab: Tab,
    fault_node: String,
    notice: Option<String>,
    /// The last tick ran out of its time budget before the clock got where the speed asks.
    behind: bool,
    link: Option<String>,
    panes: Panes,
    _ticker: Option<Interval>,
    pending_apply: Option<Timeout>,
    /// Waiting for the CEL module, or for a link's replay: the start, and whether an apply
    /// is held back.
    waiting: Option<Init>,
    /// A link (or a kept session) replayed between frames, when it takes longer than one.
    opening: Option<kubeloop_core::sandbox::Opening>,
    apply_after_cel: bool,
    /// The terminal: what was typed and printed, the line being typed, and history.
    term_lines: Vec<(bool, String)>,
    term_input: String,
    term_history: Vec<String>,
    term_pos: usize,
    /// A `kubectl get -w` printing rows as the run goes, or a `kubectl wait` not over yet
    /// (any next command stops it).
    term_watch: Option<kubeloop_core::kubectl::Follow>,
    /// `kubectl edit`'s editor pane: the command line, the text being edited, and whether
    /// it was opened again after the server refused a save.
    term_edit: Option<(String, String, bool)>,
    /// Terminal lines already scrolled into view.
    term_seen: usize,
    /// Every lesson; the open one, where the person is in it, and its goal as last seen.
    lessons: Vec<Lesson>,
    /// The lessons' bodies have been read (`lessons::load`, when one is first opened).
    lessons_read: bool,
    /// An embedding page has been told the sandbox is ready.
    ready: bool,
    lesson: Option<usize>,
    progress: Progress,
    checks: Vec<CheckState>,
    hints_shown: usize,
    answer_shown: bool,
    /// The list of lessons is shown.
    lessons_open: bool,
    /// Ids of the lessons whose goal was met (kept in the browser).
    done: std::collections::BTreeSet<String>,
    /// The embed API: who may drive the page, the listener, the id of the command whose
    /// apply is under way, and when the last tick was posted (real ms).
    embed_origins: Vec<String>,
    _embed_listener: Option<wasm_bindgen::closure::Closure<dyn FnMut(web_sys::MessageEvent)>>,
    apply_id: serde_json::Value,
    tick_posted: f64,
    /// While the timeline shows the past: the live sandbox and editor text, put aside.
    live: Option<(Sandbox, String)>,
    /// While the timeline shows the past: earlier states of the live run, by time, to replay
    /// from when the timeline moves back (copying one is far cheaper than replaying the run
    /// from its start).
    checkpoints: Vec<Sandbox>,
    /// A large cluster's view: its box, and where it is scrolled to, how wide and high.
    nodes_ref: NodeRef,
    nodes_box: (f64, f64, f64),
    nodes_measured: bool,
    /// When the page was last drawn (real ms), and whether the run moved since.
    drawn_at: f64,
    stale: bool,
    /// When the run was last advanced (real ms).
    ticked_at: f64,
    /// When the person last typed in the editor or the terminal (real ms).
    typed_at: f64,
    /// The version of the selected object whose changes the inspector shows.
    diff_rv: Option<u64>,
    /// The inspector lists where each field's value came from.
    why_open: bool,
    /// The object whose journey the diagram follows, the indices of its records so far,
    /// and the playback's simulated time while it animates.
    follow: Option<kubeloop_core::sandbox::journey::Journey>,
    /// The workspace name being typed, and when the session was last saved (real ms).
    ws_name: String,
    session_saved: f64,
    /// The person acted since the session was last kept: kept at the next tick (within
    /// 100 ms), not in the task that answers the keystroke.
    session_dirty: bool,
    journey_records: Vec<usize>,
    playback: Option<u64>,
}

fn window() -> web_sys::Window {
    web_sys::window().expect("a browser window")
}

/// Where this page keeps what the person typed: the browser's local storage, one slot per
/// page address (an embed's panes and a lesson keep their own).
fn saved_key() -> String {
    let l = window().location();
    format!("kubeloop.editor:{}{}", l.pathname().unwrap_or_default(), l.search().unwrap_or_default())
}

fn storage() -> Option<web_sys::Storage> {
    window().local_storage().ok().flatten()
}

/// What the person last typed on this page, if the browser kept it.
fn saved_text() -> Option<String> {
    storage()?.get_item(&saved_key()).ok().flatten()
}

/// Where this page keeps the whole session: the set-up, what was done, and the time, as a
/// share link would carry them, and the editor's text.
fn session_key() -> String {
    saved_key().replacen("kubeloop.editor:", "kubeloop.session:", 1)
}

/// The named workspaces, kept in the browser: name -> {link, text}.
const WORKSPACES_KEY: &str = "kubeloop.workspaces";

/// A kept session as stored: its link fragment and editor text, or why it cannot be read.
fn read_session(stored: &str) -> Result<(String, String), String> {
    let v: serde_json::Value = serde_json::from_str(stored).map_err(|e| format!("it is not what kubeloop saves ({e})"))?;
    match (v.get("v").and_then(|x| x.as_u64()), v.get("link").and_then(|x| x.as_str()), v.get("text").and_then(|x| x.as_str())) {
        (Some(1), Some(link), Some(text)) => Ok((link.to_string(), text.to_string())),
        (Some(n), _, _) if n != 1 => Err(format!("it was saved by another version of kubeloop ({n})")),
        _ => Err("it lacks the run or the editor's text".into()),
    }
}

/// Move a session that cannot be restored out of the way, where a person can still find it.
fn set_aside_damaged() {
    if let Some(st) = storage() {
        if let Ok(Some(bad)) = st.get_item(&session_key()) {
            let _ = st.set_item("kubeloop.damaged", &bad);
        }
        let _ = st.remove_item(&session_key());
    }
}

fn workspaces() -> serde_json::Map<String, serde_json::Value> {
    storage().and_then(|s| s.get_item(WORKSPACES_KEY).ok().flatten()).and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default()
}

fn save_workspaces(all: &serde_json::Map<String, serde_json::Value>) {
    if let Some(s) = storage() {
        let _ = s.set_item(WORKSPACES_KEY, &serde_json::Value::Object(all.clone()).to_string());
    }
}

/// Keep the editor's text (a browser that refuses storage just does not keep it).
fn save_text(text: &str) {
    UNSAVED_TEXT.with(|u| u.borrow_mut().take());
    if let Some(s) = storage() {
        let _ = s.set_item(&saved_key(), text);
    }
}

thread_local! {
    /// Text typed since the editor's text was last kept.
    static UNSAVED_TEXT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Keep what was typed at the next tick, out of the task that answers the keystroke
/// (writing storage takes a frame's millisecond), or when the page is left, whichever
/// comes first.
fn save_text_soon(text: &str) {
    UNSAVED_TEXT.with(|u| *u.borrow_mut() = Some(text.to_string()));
}

/// Write the typed text [`save_text_soon`] holds, if any.
fn flush_text() {
    if let Some(text) = UNSAVED_TEXT.with(|u| u.borrow_mut().take()) {
        save_text(&text);
    }
}

/// Flush the typed text when the page is hidden or left (a reload, a closed tab): the
/// listener writes it itself, not through a message, so that nothing waits for a task.
fn flush_text_on_leaving() {
    let flush = wasm_bindgen::closure::Closure::<dyn Fn()>::new(flush_text);
    let w = window();
    for event in ["pagehide", "visibilitychange"] {
        let _ = w.add_event_listener_with_callback(event, wasm_bindgen::JsCast::unchecked_ref(flush.as_ref()));
    }
    flush.forget();
}

/// Offer `text` as a file download.
fn download(name: &str, text: &str) -> Result<(), wasm_bindgen::JsValue> {
    use wasm_bindgen::JsCast;
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type("text/x-shellscript");
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &opts)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob)?;
    let a: web_sys::HtmlAnchorElement = window().document().ok_or("no document")?.create_element("a")?.dyn_into()?;
    a.set_href(&url);
    a.set_download(name);
    a.click();
    web_sys::Url::revoke_object_url(&url)
}

/// Every lesson, or why they could not be read.
fn load_lessons() -> (Vec<Lesson>, Option<String>) {
    match lessons::load() {
        Ok(l) => (l, None),
        Err(e) => (Vec::new(), Some(format!("The lessons could not be read: {e}"))),
    }
}

fn now_ms() -> f64 {
    window().performance().map(|p| p.now()).unwrap_or(0.0)
}

impl App {
    fn fresh(&mut self, sb: Sandbox) {
        self.sb = sb;
        // What a replay printed belongs to the run it replayed, not to this terminal.
        self.sb.cluster.printed.clear();
        self.record = None;
        self.object = None;
        self.playback = None;
        self.fault_node = self.node_names().into_iter().nth(1).unwrap_or_default();
        self.recount();
    }

    /// Follow an object's journey on the diagram (`None`: everything).
    fn follow(&mut self, key: Option<&str>) {
        self.follow = key.map(kubeloop_core::sandbox::journey::Journey::new);
        self.playback = None;
        self.recount();
    }

    /// Show another sandbox of the same run (the past, or the present again), keeping the
    /// selected object and step.
    fn show(&mut self, sb: Sandbox) {
        self.sb = sb;
        self.record = None;
        self.recount();
    }

    /// Show the run as it was at `t` (the live run is put aside, not changed).
    fn scrub(&mut self, t: u64) {
        let now = self.live.as_ref().map_or(self.sb.cluster.now, |(l, _)| l.cluster.now);
        if t >= now {
            self.back_to_now();
            return;
        }
        if self.live.is_none() {
            self.apply();
            self.playing = false;
            let text = self.text.clone();
            let live = std::mem::replace(&mut self.sb, Sandbox::new("", None));
            self.live = Some((live, text));
            self.checkpoints.clear();
        }
        let (live, _) = self.live.as_ref().expect("put aside above");
        // Forward within the past runs on from where it is; backward replays the run from
        // the latest checkpoint before `t`, or from its start. Each state moved from is kept
        // as a checkpoint, and so is the start.
        let of_this_run = |sb: &Sandbox| sb.seed == live.seed && sb.setup == live.setup && sb.log.len() <= live.log.len();
        if t >= self.sb.cluster.now && of_this_run(&self.sb) {
            if t > self.sb.cluster.now && wants_checkpoint(&self.checkpoints, &self.sb) {
                keep_checkpoint(&mut self.checkpoints, self.sb.clone());
            }
            live.replay_into(&mut self.sb, t);
        } else {
            let mut past = match self.checkpoints.iter().rev().find(|c| c.cluster.now <= t && of_this_run(c)) {
                Some(c) => c.clone(),
                None => {
                    let start = live.rewound(0);
                    if wants_checkpoint(&self.checkpoints, &start) {
                        keep_checkpoint(&mut self.checkpoints, start.clone());
                    }
                    start
                }
            };
            live.replay_into(&mut past, t);
            let left = std::mem::replace(&mut self.sb, past);
            if of_this_run(&left) && wants_checkpoint(&self.checkpoints, &left) {
                keep_checkpoint(&mut self.checkpoints, left);
            }
        }
        self.text = self.sb.text.clone();
        self.record = None;
        self.recount();
    }

    /// Leave the past: the live run again, as it was left.
    fn back_to_now(&mut self) {
        self.checkpoints.clear();
        if let Some((live, text)) = self.live.take() {
            self.text = text;
            self.show(live);
        }
    }

    /// Acting while the timeline shows the past goes on from there: the run after it is
    /// dropped, as in any replay from a link.
    fn branch(&mut self) {
        self.checkpoints.clear();
        if self.live.take().is_some() {
            self.notice = Some(format!(
                "You acted at t = {:.1} s, in the past: the run goes on from there, and what came after it was dropped.",
                self.sb.cluster.now as f64 / 1000.0
            ));
        }
    }

    /// Fold the records written since the last look into the diagram.
    fn absorb(&mut self) {
        // What the terminal's commands printed as the run went on (`kubectl run -it`).
        let printed = std::mem::take(&mut self.sb.cluster.printed);
        self.term_lines.extend(printed.into_iter().map(|l| (false, l)));
        if self.term_watch.is_some() {
            self.poll_watch();
        }
        let trace = &self.sb.cluster.api.trace;
        // Records are numbered from the start of the run; the page keeps only the latest
        // ones (`PAGE_TRACE_WINDOW`), so a journey forgets those dropped.
        let kept = self.journey_records.partition_point(|i| *i < trace.records_base());
        self.journey_records.drain(..kept);
        let (from, fresh) = trace.records_from(self.seen_records);
        match &mut self.follow {
            None => diagram::tally(&mut self.tallies, fresh, self.background),
            Some(j) => {
                let store = &self.sb.cluster.api.store;
                let until = self.playback.unwrap_or(u64::MAX);
                let mine: Vec<usize> = fresh.iter().enumerate().filter(|(_, r)| j.admit(store, r)).map(|(k, _)| from + k).collect();
                diagram::tally(&mut self.tallies, mine.iter().filter_map(|i| trace.record(*i)).filter(|r| r.t <= until), self.background);
                self.journey_records.extend(mine);
            }
        }
        self.seen_records = trace.records_end();
        self.observe_lesson();
    }

    /// The lines a watching terminal command (`get -w`) has to show now.
    #[inline(never)]
    fn poll_watch(&mut self) {
        let Some(w) = &mut self.term_watch else { return };
        let (lines, done) = w.poll(&self.sb.cluster.api, self.sb.cluster.kubelet());
        self.term_lines.extend(lines.into_iter().map(|l| (false, l)));
        if done {
            self.term_watch = None;
        }
    }

    /// What the editor starts from here: the open lesson's text, or the example.
    fn base_text(&self) -> &str {
        self.lesson().map_or(DEFAULT_TEXT, |l| l.text.as_str())
    }

    /// Start over from a text (loading CEL first if it needs it).
    fn open_text(&mut self, ctx: &Context<Self>, text: String) {
        self.text = text.clone();
        self.link = None;
        self.playing = true;
        if cel::needed_by(&text) && !cel::ready() {
            self.notice = Some(CEL_LOADING.into());
            self.waiting = Some(Init::Text(text));
            self.load_cel(ctx);
        } else {
            self.start(Init::Text(text));
        }
    }

    /// Open a lesson (`None`: leave it for the example), with what was typed for it before.
    fn open_lesson(&mut self, ctx: &Context<Self>, lesson: Option<usize>) {
        self.lesson = lesson;
        lessons::set_query(self.lesson().map(|l| l.id.as_str()));
        self.progress = Progress::default();
        self.checks.clear();
        self.hints_shown = 0;
        self.answer_shown = false;
        self.lessons_open = false;
        // The session kept for the lesson's page (or the example's) comes back as it was left.
        if let Some(Ok((link, text))) = storage().and_then(|s| s.get_item(&session_key()).ok().flatten()).map(|t| read_session(&t)) {
            self.restored = true;
            self.open_session(ctx, link, text, RESTORED.to_string());
            return;
        }
        let base = self.base_text().to_string();
        let saved = saved_text().filter(|t| *t != base);
        self.restored = saved.is_some();
        self.notice = self.restored.then(|| RESTORED.to_string());
        self.open_text(ctx, saved.unwrap_or(base));
    }

    /// Count every record again (after the filter changed).
    fn recount(&mut self) {
        self.tallies = Default::default();
        self.seen_records = 0;
        self.journey_records.clear();
        self.follow = self.follow.as_ref().map(|j| kubeloop_core::sandbox::journey::Journey::new(&j.root));
        self.absorb();
        for t in self.tallies.iter_mut() {
            t.fresh = 0;
        }
    }

    fn node_names(&self) -> Vec<String> {
        self.sb.cluster.api.store.list(rid::NODE, None).map(|n| api::name(n).to_string()).collect()
    }

    /// Run one terminal command line and show what it printed.
    fn run_term_line(&mut self, line: &str) {
        let (out, watch) = self.sb.kubectl_watching(line);
        for l in out {
            self.term_lines.push((false, l));
        }
        self.term_watch = watch;
        let excess = self.term_lines.len().saturating_sub(2000);
        self.term_lines.drain(..excess);
        self.absorb();
    }

    /// Fetch the CEL module; the answer comes back as `Msg::CelLoaded`.
    fn load_cel(&self, ctx: &Context<Self>) {
        let link = ctx.link().clone();
        wasm_bindgen_futures::spawn_local(async move { link.send_message(Msg::CelLoaded(cel::load().await)) });
    }

    /// Build the sandbox from a link or a text (CEL must be loaded if they need it). A link
    /// whose replay takes more than a frame goes on between frames (`Msg::Tick`).
    fn start(&mut self, init: Init) {
        self.opening = None;
        let sb = match init {
            Init::Link(ref hash) | Init::Session(ref hash, _) => {
                let mut opening = match Sandbox::opening(hash, DEFAULT_TEXT, Replay::ALL) {
                    Ok(o) => o,
                    Err(e) => return self.opened(init, Err(e)),
                };
                match replay_for(&mut opening, OPENING_SLICE_MS) {
                    Ok(false) => {
                        self.notice = Some(replaying(&opening));
                        self.opening = Some(opening);
                        self.waiting = Some(init);
                        return;
                    }
                    done => return self.opened(init, done.map(|_| opening.into_sandbox())),
                }
            }
            // What the person typed while CEL was loading wins over the text it started from.
            Init::Text(t) => Sandbox::new(if self.text.is_empty() { &t } else { &self.text }, None),
        };
        self.started(sb);
    }

    /// A link or a kept session replayed (or not): say so, and show it.
    fn opened(&mut self, init: Init, replayed: Result<Sandbox, String>) {
        let sb = match (init, replayed) {
            (Init::Link(_) | Init::Text(_), Ok(sb)) => {
                // Paused, so the person sees the moment that was shared, not a later one.
                self.playing = false;
                self.notice = Some("Opened the shared sandbox from the link, paused at the moment it was shared. Press Play to go on.".to_string());
                sb
            }
            (Init::Session(_, said), Ok(sb)) => {
                self.notice = Some(format!("{said} The cluster was replayed to where you left it (t = {:.1} s).", sb.cluster.now as f64 / 1000.0));
                sb
            }
            (Init::Session(..), Err(e)) => {
                // Set the damaged save aside, and open what this page starts from.
                set_aside_damaged();
                self.notice = Some(format!(
                    "Your saved session could not be restored: {e}. It was set aside (kubeloop.damaged in this browser's storage); here is the page's example instead."
                ));
                self.text.clear();
                Sandbox::new(self.base_text(), None)
            }
            (_, Err(e)) => {
                self.notice = Some(format!("This link could not be opened: {e}. Here is an empty sandbox instead."));
                Sandbox::new("", None)
            }
        };
        self.started(sb);
    }

    fn started(&mut self, sb: Sandbox) {
        let typed = self.text.clone();
        self.text = if typed.is_empty() { sb.text.clone() } else { typed };
        self.seed_input = sb.seed.to_string();
        self.fresh(sb);
    }

    fn apply(&mut self) {
        self.pending_apply = None;
        if self.waiting.is_some() {
            return;
        }
        if cel::needed_by(&self.text) && !cel::ready() {
            // Applied when the CEL module arrives (Msg::CelLoaded).
            self.apply_after_cel = true;
            return;
        }
        if self.text != self.sb.text {
            self.sb.apply(&self.text.clone());
            self.absorb();
            let results: Vec<serde_json::Value> =
                self.sb.docs.iter().map(|d| serde_json::json!({"line": d.start_line, "object": d.object, "result": d.result, "ok": !d.failed()})).collect();
            // The diagram follows what the person just changed (a workload or a pod).
            const WORKLOADS: [&str; 7] = ["Deployment/", "ReplicaSet/", "StatefulSet/", "DaemonSet/", "Job/", "CronJob/", "Pod/"];
            let changed =
                self.sb.docs.iter().find(|d| {
                    WORKLOADS.iter().any(|w| d.object.starts_with(w)) && d.start_line > 0 && d.sent && (d.failed() || !d.result.ends_with(" unchanged"))
                });
            if let Some(key) = changed.map(|d| self.doc_key(d.start_line)) {
                if self.follow.as_ref().is_none_or(|j| j.root != key) {
                    self.follow(Some(&key));
                }
            }
            let id = std::mem::take(&mut self.apply_id);
            self.post(serde_json::json!({"event": "applied", "id": id, "t": self.sb.cluster.now, "results": results}));
        }
    }

    /// Keep the whole session for this page: what a share link would carry, and the editor's
    /// text (not while the timeline shows the past, or the sandbox is still loading).
    fn save_session(&self) {
        if self.live.is_some() || self.waiting.is_some() {
            return;
        }
        if let Some(st) = storage() {
            let v = serde_json::json!({"v": 1, "link": self.sb.share_with_base(DEFAULT_TEXT), "text": self.text});
            let _ = st.set_item(&session_key(), &v.to_string());
        }
    }

    /// Replay a kept session (loading CEL first if need be), with its editor text.
    fn open_session(&mut self, ctx: &Context<Self>, link: String, text: String, said: String) {
        self.live = None;
        self.text = text;
        if cel::ready() {
            self.start(Init::Session(link, said));
        } else {
            self.waiting = Some(Init::Session(link, said));
            self.load_cel(ctx);
        }
    }

    /// Forget this page's saved session (the example or the lesson starts over).
    fn forget_session(&self) {
        if let Some(st) = storage() {
            let _ = st.remove_item(&session_key());
        }
    }

    /// The key records use for the object of the editor's document at `start_line`
    /// (`Deployment/default/web`: its namespace, or `default`).
    fn doc_key(&self, start_line: usize) -> String {
        self.sb.docs.iter().find(|d| d.start_line == start_line).map(|d| d.key.clone()).unwrap_or_default()
    }

    /// Run the path of a person's first edit once, on a copy of the sandbox
    /// ([`Sandbox::rehearse_edit`]). The browser compiles each function of the page's module
    /// the first time it is called, so the first change a session applied (a PATCH through
    /// admission, CEL and validation of an update, then the controllers' answer) cost
    /// several milliseconds more than the next ones, and missed its frame.
    /// The page's `data-rehearsed` attribute says how many documents the copy sent to its API
    /// server (sent, not accepted: the editor may hold what admission refuses). A cluster
    /// too large to keep as a checkpoint is not copied for this either.
    #[inline(never)]
    fn rehearse_an_edit(&self) {
        if self.sb.cluster.api.store.bytes() <= CHECKPOINT_STORE_BYTES {
            let sent = self.sb.rehearse_edit().iter().filter(|d| d.sent).count();
            if let Some(root) = window().document().and_then(|d| d.document_element()) {
                let _ = root.set_attribute("data-rehearsed", &sent.to_string());
            }
        }
    }

    /// Say the page is ready once it has drawn what it holds now.
    fn ready_later(&self, ctx: &Context<Self>) {
        if self.ready {
            return;
        }
        let link = ctx.link().clone();
        // The frame's callbacks run before it is drawn; a task queued from one runs after.
        let after_frame = wasm_bindgen::closure::Closure::once_into_js(move || Timeout::new(0, move || link.send_message(Msg::Ready)).forget());
        if window().request_animation_frame(wasm_bindgen::JsCast::unchecked_ref(&after_frame)).is_err() {
            ctx.link().send_message(Msg::Ready);
        }
    }

    /// Read the lessons' bodies, if that has not been done (a lesson is being opened).
    fn read_lessons(&mut self) {
        if self.lessons_read {
            return;
        }
        let (all, error) = load_lessons();
        self.lessons = all;
        self.lessons_read = error.is_none();
        if error.is_some() {
            self.notice = error;
        }
    }

    /// Tell an embedding page that the sandbox is ready, and which lessons it offers.
    fn post_ready(&self) {
        let lessons: Vec<&str> = kubeloop_core::sandbox::lessons::INDEX.iter().map(|l| l.id).collect();
        self.post(serde_json::json!({"event": "ready", "version": env!("CARGO_PKG_VERSION"), "lessons": lessons}));
    }

    /// Post an event to the embedding page, if there is one.
    fn post(&self, event: serde_json::Value) {
        embed::post(&self.embed_origins, event);
    }

    /// What the embed API's `tick` says: the time, the pods and nodes, the open lesson.
    fn summary(&self, id: serde_json::Value) -> serde_json::Value {
        let store = &self.sb.cluster.api.store;
        let (mut total, mut running, mut pending) = (0, 0, 0);
        for p in store.list(rid::POD, None) {
            total += 1;
            match get_str(p, &["status", "phase"]) {
                Some("Running") => running += 1,
                Some("Pending") | None => pending += 1,
                _ => {}
            }
        }
        let nodes: Vec<&Object> = store.list(rid::NODE, None).collect();
        let ready = nodes
            .iter()
            .filter(|n| {
                api::get_array(n, &["status", "conditions"]).iter().any(|c| get_str(c, &["type"]) == Some("Ready") && get_str(c, &["status"]) == Some("True"))
            })
            .count();
        let lesson = self.lesson().map(|l| {
            serde_json::json!({"id": l.id, "met": self.progress.met_at.is_some(), "checks": self.checks.iter().map(|c| serde_json::json!({"say": c.say, "ok": c.ok})).collect::<Vec<_>>()})
        });
        serde_json::json!({"event": "tick", "id": id, "t": self.sb.cluster.now, "playing": self.playing,
            "pods": {"total": total, "running": running, "pending": pending}, "nodes": {"total": nodes.len(), "ready": ready}, "lesson": lesson})
    }

    /// Carry out a command of the embedding page; the answer goes back to `origin`.
    fn embed_command(&mut self, ctx: &Context<Self>, origin: &str, id: serde_json::Value, cmd: embed::Command) {
        use embed::Command as C;
        let to = [origin.to_string()];
        let reply = |event: serde_json::Value| embed::post(&to, event);
        if matches!(cmd, C::Load { lesson: Some(_), .. }) {
            self.read_lessons();
        }
        match cmd {
            C::Load { lesson: Some(l), .. } => match self.lessons.iter().position(|x| x.id == l) {
                Some(i) => {
                    self.open_lesson(ctx, Some(i));
                    reply(serde_json::json!({"event": "loaded", "id": id, "lesson": l}));
                }
                None => reply(serde_json::json!({"event": "error", "id": id, "message": format!("there is no lesson {l:?}")})),
            },
            C::Load { link: Some(f), .. } => {
                // A link that cannot be opened says so on the page, as when it is the address.
                let f = f.trim_start_matches('#').to_string();
                self.text.clear();
                if cel::ready() {
                    self.start(Init::Link(f));
                } else {
                    self.waiting = Some(Init::Link(f));
                    self.load_cel(ctx);
                }
                reply(serde_json::json!({"event": "loaded", "id": id}));
            }
            C::Load { text: Some(t), .. } => {
                self.open_text(ctx, t);
                reply(serde_json::json!({"event": "loaded", "id": id}));
            }
            C::Load { .. } => reply(serde_json::json!({"event": "error", "id": id, "message": "load needs a lesson, a link or a text"})),
            C::Apply { text } => {
                save_text(&text);
                self.text = text;
                self.apply_id = id;
                self.apply();
            }
            C::Kubectl { line } => {
                self.apply();
                let line = line.trim().strip_prefix("kubectl ").unwrap_or(line.trim()).to_string();
                self.term_lines.push((true, format!("{} $ kubectl {line}", self.sb.user)));
                let before = self.term_lines.len();
                self.run_term_line(&line);
                let lines: Vec<String> = self.term_lines[before.min(self.term_lines.len())..].iter().map(|(_, l)| l.clone()).collect();
                reply(serde_json::json!({"event": "output", "id": id, "lines": lines}));
            }
            C::Fault { kind, name } => {
                self.apply();
                let out = self.sb.fault(&kind, &name);
                self.absorb();
                let (ok, message) = match out {
                    Ok(m) => (true, m),
                    Err(e) => (false, e),
                };
                self.notice = Some(message.clone());
                reply(serde_json::json!({"event": "fault", "id": id, "ok": ok, "message": message}));
            }
            C::Play | C::Pause => {
                self.playing = matches!(cmd, C::Play);
                reply(self.summary(id));
            }
            C::Seek { t } => {
                self.seek(t);
                reply(self.summary(id));
            }
            C::State => reply(self.summary(id)),
        }
    }

    /// Go to simulated time `t`: forward by running, back by replaying the run to then.
    fn seek(&mut self, t: u64) {
        self.back_to_now();
        self.apply();
        if t >= self.sb.cluster.now {
            self.sb.advance(t - self.sb.cluster.now);
            self.absorb();
        } else {
            let past = self.sb.rewound(t);
            self.progress.restart();
            self.fresh(past);
        }
    }

    fn start_ticker(&mut self, ctx: &Context<Self>) {
        let link = ctx.link().clone();
        self._ticker = Some(Interval::new(TICK_MS, move || link.send_message(Msg::Tick)));
    }
}

impl App {
    fn handle(&mut self, ctx: &Context<Self>, msg: Msg) -> bool {
        // Acting while the timeline shows the past goes on from there; what the person (or
        // an embedding page) did is kept at once.
        let acts = msg.changes_the_run();
        if matches!(msg, Msg::Edit(_) | Msg::ApplyNow | Msg::TermInput(_) | Msg::TermRun | Msg::EditText(_)) {
            self.typed_at = now_ms();
        }
        if acts || matches!(msg, Msg::Edit(_) | Msg::LoadExample) {
            self.branch();
        }
        let act = acts || matches!(msg, Msg::Embed(..) | Msg::BackToNow);
        // What the editor applies is kept at the next tick, out of the task that answers the
        // keystroke; a discrete act (a command, a fault) is kept at once, so that a reload
        // right after it cannot lose it.
        let keep_later = matches!(msg, Msg::ApplyNow);
        match msg {
            Msg::NodesMoved(top, width, height) => {
                let before = self.nodes_in_sight(self.sb.view.node_names().len());
                self.nodes_box = (top, width, height);
                return self.nodes_in_sight(self.sb.view.node_names().len()) != before;
            }
            Msg::Edit(text) => {
                save_text_soon(&text);
                self.text = text;
                let link = ctx.link().clone();
                self.pending_apply = Some(Timeout::new(APPLY_DELAY_MS, move || link.send_message(Msg::ApplyNow)));
                // The editor keeps its own text; nothing else changed yet.
                return false;
            }
            Msg::ApplyNow => self.apply(),
            Msg::LoadExample => {
                self.text = DEFAULT_TEXT.to_string();
                save_text(&self.text);
                self.forget_session();
                self.restored = false;
                self.notice = None;
                self.apply();
            }
            Msg::CelLoaded(result) => match result {
                Ok(()) => {
                    if let Some(init) = self.waiting.take() {
                        // Only the word that CEL is loading goes; what the page said on
                        // opening (no such lesson, a wrong ?bench=) stays.
                        if self.notice.as_deref() == Some(CEL_LOADING) {
                            self.notice = self.restored.then(|| RESTORED.to_string());
                        }
                        self.start(init);
                    }
                    if std::mem::take(&mut self.apply_after_cel) {
                        self.apply();
                    }
                    self.ready_later(ctx);
                }
                Err(e) => {
                    self.notice =
                        Some(format!("The policy engine (CEL) could not be loaded: {e}. Policies and webhooks will fail until the page is reloaded."));
                    if let Some(init) = self.waiting.take() {
                        self.start(init);
                    }
                    self.ready_later(ctx);
                }
            },
            Msg::Tick => {
                // A light run is looked at ten times a second; one with more to do than that
                // (running behind, or as fast as possible) every frame, in slices that leave
                // most of the frame to the page.
                flush_text();
                // A link being replayed goes on (unless another start replaced it).
                if !matches!(self.waiting, Some(Init::Link(_) | Init::Session(..))) {
                    self.opening = None;
                }
                if let Some(opening) = self.opening.as_mut() {
                    match replay_for(opening, HEAVY_TICK_BUDGET_MS) {
                        Ok(false) => self.notice = Some(replaying(opening)),
                        done => {
                            let opening = self.opening.take().expect("the link being replayed");
                            let init = self.waiting.take().expect("the link's start");
                            self.opened(init, done.map(|_| opening.into_sandbox()));
                            self.ticked_at = now_ms();
                            self.ready_later(ctx);
                        }
                    }
                    return true;
                }
                let now = now_ms();
                let heavy = self.playing && self.waiting.is_none() && self.playback.is_none() && (self.behind || self.speed == Speed::Max);
                if !heavy && (now - self.ticked_at < LIGHT_TICK_MS || now - self.typed_at < QUIET_AFTER_INPUT_MS) {
                    return false;
                }
                // At 1× the clock follows real time, the wait after a keystroke included (a
                // longer gap, a tab in the background, is not made up).
                let elapsed = (now - self.ticked_at).clamp(0.0, LIGHT_TICK_MS + QUIET_AFTER_INPUT_MS);
                self.ticked_at = now;
                let budget = if heavy { HEAVY_TICK_BUDGET_MS } else { TICK_BUDGET_MS };
                if std::mem::take(&mut self.session_dirty) {
                    self.session_saved = now_ms();
                    self.save_session();
                }
                if let Some(at) = self.playback {
                    // Forty frames from the journey's first record to its last.
                    let trace = &self.sb.cluster.api.trace;
                    let t = |i: Option<&usize>| i.and_then(|i| trace.record(*i)).map(|r| r.t);
                    let (first, last) = match (t(self.journey_records.first()), t(self.journey_records.last())) {
                        (Some(a), Some(b)) => (a, b),
                        _ => (0, 0),
                    };
                    let next = at + ((last - first) / 40).max(50);
                    self.playback = (next < last).then_some(next);
                    self.recount();
                    if !self.playing {
                        return true;
                    }
                }
                if !self.playing || self.waiting.is_some() {
                    return false;
                }
                let before = self.sb.cluster.now;
                // Run events within the tick's budget, so that the page answers however much
                // the user's numbers give the loops to do: a task is begun only if one as
                // long as the longest of this tick still fits.
                let start = now_ms();
                let (mut last, mut longest) = (start, 0.0f64);
                let mut in_budget = || {
                    let now = now_ms();
                    longest = longest.max(now - last);
                    last = now;
                    now - start + longest < budget
                };
                // Simulated time at 1×: the real time since the last look.
                let ms = elapsed as u64;
                match self.speed {
                    Speed::X1 => self.behind = !self.sb.advance_within(ms, in_budget),
                    Speed::X10 => self.behind = !self.sb.advance_within(10 * ms, in_budget),
                    Speed::X100 => self.behind = !self.sb.advance_within(100 * ms, in_budget),
                    Speed::Max => {
                        // From one moment something happens to the next, asking the budget
                        // before each task (many can fall on one moment).
                        self.behind = false;
                        while let Some(t) = self.sb.cluster.next_time() {
                            let ahead = t.saturating_sub(self.sb.cluster.now);
                            if !self.sb.advance_within(ahead, &mut in_budget) {
                                break;
                            }
                        }
                    }
                }
                let moved = self.sb.cluster.now != before || self.sb.cluster.api.trace.records_end() != self.seen_records;
                self.absorb();
                // The clock moved: keep the session every few seconds.
                if moved && now_ms() - self.session_saved >= 5000.0 {
                    self.session_saved = now_ms();
                    self.save_session();
                }
                if moved && now_ms() - self.tick_posted >= 250.0 && embed::parent().is_some() {
                    self.tick_posted = now_ms();
                    self.post(self.summary(serde_json::Value::Null));
                }
                self.stale |= moved;
                return self.stale && now_ms() - self.drawn_at >= DRAW_MS;
            }
            Msg::Rehearse => {
                // Only with the rest of the code loaded: what a first visit needs stays what
                // it runs before (web/first-visit.txt), not what the rehearsal would add. (A
                // build that was not split never has a rest: nothing is rehearsed.)
                match rest::state().as_str() {
                    "loaded" => self.rehearse_an_edit(),
                    "fetching" => {
                        let link = ctx.link().clone();
                        Timeout::new(REHEARSE_AFTER_MS, move || link.send_message(Msg::Rehearse)).forget();
                    }
                    _ => {}
                }
                return false;
            }
            Msg::Ready => {
                if !std::mem::replace(&mut self.ready, true) {
                    self.post_ready();
                    let link = ctx.link().clone();
                    Timeout::new(REHEARSE_AFTER_MS, move || link.send_message(Msg::Rehearse)).forget();
                }
                return false;
            }
            // The rest, which a first visit does not send, out of line: the page's first
            // download keeps only the code a first visit runs (crates/split).
            other => {
                if let Some(changed) = self.handle_more(ctx, other) {
                    return changed;
                }
            }
        }
        if act && keep_later {
            self.session_dirty = true;
        } else if act {
            self.session_saved = now_ms();
            self.save_session();
        }
        true
    }

    /// The messages [`App::handle`] leaves to this: what it should return at once, or
    /// `None` to go on as after any other message.
    #[inline(never)]
    fn handle_more(&mut self, ctx: &Context<Self>, msg: Msg) -> Option<bool> {
        match msg {
            Msg::TogglePlay => self.playing = !self.playing,
            Msg::SetSpeed(s) => self.speed = s,
            Msg::StepOnce => {
                self.playing = false;
                self.sb.step();
                self.absorb();
            }
            Msg::SetSeed(s) => self.seed_input = s,
            Msg::Reset => {
                if cel::needed_by(&self.text) && !cel::ready() {
                    self.waiting = Some(Init::Text(self.text.clone()));
                    self.load_cel(ctx);
                    return Some(true);
                }
                let seed = self.seed_input.trim().parse().ok();
                let user = self.sb.user.clone();
                let mut sb = Sandbox::new(&self.text, seed);
                sb.set_user(&user);
                self.seed_input = sb.seed.to_string();
                self.progress.restart();
                self.fresh(sb);
                self.link = None;
                self.notice = None;
            }
            Msg::ToggleLessons => self.lessons_open = !self.lessons_open,
            Msg::OpenLesson(i) => {
                self.read_lessons();
                if i < self.lessons.len() {
                    self.open_lesson(ctx, Some(i));
                }
            }
            Msg::LeaveLesson => self.open_lesson(ctx, None),
            Msg::RestartLesson => {
                let text = self.base_text().to_string();
                save_text(&text);
                self.forget_session();
                self.progress = Progress::default();
                self.restored = false;
                self.notice = None;
                self.open_text(ctx, text);
            }
            Msg::Choose(i, c) => {
                if self.progress.chosen.len() <= i {
                    self.progress.chosen.resize(i + 1, None);
                }
                self.progress.chosen[i] = Some(c);
                self.observe_lesson();
            }
            Msg::Embed(origin, text) => {
                let Some((id, cmd)) = embed::parse(&text) else { return Some(false) };
                match cmd {
                    Ok(c) => self.embed_command(ctx, &origin, id, c),
                    Err(e) => embed::post(&[origin], serde_json::json!({"event": "error", "id": id, "message": e})),
                }
            }
            Msg::Scrub(t) => self.scrub(t),
            Msg::BackToNow => self.back_to_now(),
            Msg::WriteStep(dir) => {
                let live = self.live.as_ref().map_or(&self.sb, |(l, _)| l);
                let now = self.sb.cluster.now;
                let writes = live.cluster.api.trace.records().iter().filter(|r| r.flow == Flow::Etcd && r.result == "ok" && !diagram::background(r));
                let t = if dir < 0 { writes.filter(|r| r.t < now).map(|r| r.t).next_back() } else { writes.map(|r| r.t).find(|t| *t > now) };
                if let Some(t) = t {
                    self.scrub(t);
                }
            }
            Msg::Hint => self.hints_shown += 1,
            Msg::ShowAnswer => self.answer_shown = true,
            Msg::SetUser(u) => {
                self.apply();
                self.sb.set_user(&u);
            }
            Msg::ToggleBackground => {
                self.background = !self.background;
                self.recount();
            }
            Msg::SelectFlow(f) => {
                self.flow = Some(f);
                self.record = None;
                self.tab = Tab::Records;
            }
            Msg::SelectRecord(i) => {
                self.record = Some(i);
                if let Some(r) = self.sb.cluster.api.trace.record(i) {
                    self.object = Some(r.object.clone());
                }
            }
            Msg::DiffVersion(rv) => self.diff_rv = Some(rv),
            Msg::ToggleWhy => self.why_open = !self.why_open,
            Msg::Follow(key) => self.follow(key.as_deref()),
            Msg::FollowDoc(line) => {
                let key = self.doc_key(line);
                self.follow(Some(&key));
            }
            Msg::WsName(n) => {
                self.ws_name = n;
                return Some(false);
            }
            Msg::WsKeep => {
                let name = self.ws_name.trim().to_string();
                if name.is_empty() {
                    self.notice = Some("Type a name for the workspace first.".into());
                } else {
                    self.apply();
                    let mut all = workspaces();
                    all.insert(name.clone(), serde_json::json!({"v": 1, "link": self.sb.share_with_base(DEFAULT_TEXT), "text": self.text}));
                    save_workspaces(&all);
                    self.notice = Some(format!("Kept as the workspace {name:?} (in this browser)."));
                }
            }
            Msg::WsOpen(name) => match workspaces().get(&name).map(|v| read_session(&v.to_string())) {
                Some(Ok((link, text))) => self.open_session(ctx, link, text, format!("Opened the workspace {name:?}.")),
                Some(Err(e)) => self.notice = Some(format!("The workspace {name:?} could not be opened: {e}.")),
                None => self.notice = Some(format!("There is no workspace {name:?}.")),
            },
            Msg::WsRename(old) => {
                let new = self.ws_name.trim().to_string();
                let mut all = workspaces();
                if new.is_empty() || all.contains_key(&new) {
                    self.notice = Some(if new.is_empty() { "Type the new name first.".into() } else { format!("A workspace is already named {new:?}.") });
                } else if let Some(v) = all.remove(&old) {
                    all.insert(new.clone(), v);
                    save_workspaces(&all);
                    self.notice = Some(format!("Renamed {old:?} to {new:?}."));
                }
            }
            Msg::WsDelete(name) => {
                let mut all = workspaces();
                all.remove(&name);
                save_workspaces(&all);
                self.notice = Some(format!("Deleted the workspace {name:?}."));
            }
            Msg::Export => {
                self.apply();
                let script = kubeloop_core::sandbox::export::kind_script(&self.sb);
                self.notice = Some(match download("kubeloop-kind.sh", &script) {
                Ok(()) => "Downloaded kubeloop-kind.sh: run it with sh where kind and kubectl are installed. It creates a kind cluster with these nodes (zones as labels, taints) and applies the editor's manifests; its comments say what kubeloop only simulates.".into(),
                Err(e) => format!("The download failed: {e:?}"),
            });
            }
            Msg::PlayJourney => {
                let trace = &self.sb.cluster.api.trace;
                self.playback = self.journey_records.first().and_then(|i| trace.record(*i)).map(|r| r.t);
                self.recount();
            }
            Msg::ShowRecord(i) => {
                if let Some(r) = self.sb.cluster.api.trace.record(i) {
                    self.flow = Some(r.flow);
                    self.record = Some(i);
                    self.tab = Tab::Records;
                }
            }
            Msg::SelectObject(o) => {
                self.diff_rv = None;
                if self.follow.as_ref().is_none_or(|j| j.root != o) {
                    self.follow(Some(&o));
                }
                self.object = Some(o);
                self.record = None;
                self.tab = Tab::Objects;
            }
            Msg::SetTab(t) => self.tab = t,
            Msg::Fault(kind, name) => {
                self.apply();
                self.notice = Some(match self.sb.fault(kind, &name) {
                    Ok(m) => m,
                    Err(e) => e,
                });
                self.absorb();
            }
            Msg::ScaleBy(delta) => {
                self.apply();
                let rs =
                    self.sb.cluster.api.store.list(rid::REPLICASET, Some("default")).find(|r| api::get_i64(r, &["spec", "replicas"]).unwrap_or(0) > 0).cloned();
                self.notice = Some(match rs {
                    Some(rs) => {
                        let n = (api::get_i64(&rs, &["spec", "replicas"]).unwrap_or(0) + delta).max(0);
                        let out = self.sb.kubectl(&format!("scale replicaset {} --replicas={n}", api::name(&rs)));
                        format!("kubectl scale replicaset {} --replicas={n}: {}", api::name(&rs), out.join(" "))
                    }
                    None => "no ReplicaSet with replicas in namespace default to scale".into(),
                });
                self.absorb();
            }
            Msg::FreeEtcd => {
                self.apply();
                self.notice = Some(format!("etcdctl: {}", self.sb.free_etcd().join("; ")));
                self.absorb();
            }
            Msg::SetFaultNode(n) => self.fault_node = n,
            Msg::OpenFull => {
                self.apply();
                let url = format!("./#{}", self.sb.share_with_base(DEFAULT_TEXT));
                let _ = window().open_with_url_and_target(&url, "_blank");
                return Some(false);
            }
            Msg::TermInput(t) => {
                self.term_input = t;
                return Some(false);
            }
            Msg::TermRun => {
                self.apply();
                let line = std::mem::take(&mut self.term_input);
                let line = line.trim();
                if line.is_empty() && self.sb.cluster.attached.is_none() {
                    return Some(true);
                }
                // Attached to a command (`kubectl exec -i`): the line is its stdin.
                if let Some(prompt) = self.sb.cluster.prompt() {
                    self.term_lines.push((true, format!("{prompt}{line}")));
                    self.term_history.push(line.to_string());
                    self.term_pos = self.term_history.len();
                    let out = self.sb.stdin(Some(line));
                    self.term_lines.extend(out.into_iter().map(|l| (false, l)));
                    self.absorb();
                    return Some(true);
                }
                // The terminal's machine runs `curl` itself (to its port-forwards); every
                // other line is kubectl's.
                let shown = if line.split_whitespace().next() == Some("curl") {
                    line.to_string()
                } else {
                    format!("kubectl {}", line.strip_prefix("kubectl ").unwrap_or(line))
                };
                self.term_lines.push((true, format!("{} $ {shown}", self.sb.user)));
                self.term_history.push(line.to_string());
                self.term_pos = self.term_history.len();
                if kubeloop_core::kubectl::verb_of(line) == Some("explain") && !kubeloop_core::kubectl::explain::installed() {
                    self.term_lines.push((false, "(fetching the API documentation…)".into()));
                    let (link, line) = (ctx.link().clone(), line.to_string());
                    wasm_bindgen_futures::spawn_local(async move { link.send_message(Msg::DocsLoaded(docs::load().await, line)) });
                    return Some(true);
                }
                let line = line.to_string();
                // `kubectl edit` opens the object in the editor pane; saving it runs the
                // line with the saved file as its here-document.
                if kubeloop_core::kubectl::edit::opens_editor(&line) && !line.contains("<<") {
                    self.term_watch = None;
                    match self.sb.edit_open(&line) {
                        Ok(text) => self.term_edit = Some((line, text, false)),
                        Err(lines) => self.term_lines.extend(lines.into_iter().map(|l| (false, l))),
                    }
                    return Some(true);
                }
                self.run_term_line(&line);
            }
            Msg::EditText(t) => {
                if let Some(e) = self.term_edit.as_mut() {
                    e.1 = t;
                }
                return Some(false);
            }
            Msg::EditSave => {
                let Some((line, text, _)) = self.term_edit.take() else { return Some(false) };
                let (out, again) = self.sb.edit_save(&line, &text);
                self.term_lines.extend(out.into_iter().map(|l| (false, l)));
                self.term_edit = again.map(|t| (line, t, true));
                self.absorb();
            }
            Msg::EditCancel => {
                // Closing the editor without saving leaves the file as it was opened.
                if let Some((_, _, retry)) = self.term_edit.take() {
                    let said = if retry { "error: Edit cancelled, no valid changes were saved." } else { "Edit cancelled, no changes made." };
                    self.term_lines.push((false, said.to_string()));
                }
            }
            Msg::DocsLoaded(result, line) => match result {
                Ok(()) => self.run_term_line(&line),
                Err(e) => self.term_lines.push((false, format!("error: the API documentation could not be loaded: {e}"))),
            },
            Msg::TermComplete => {
                let options = kubeloop_core::kubectl::complete(&self.sb.cluster.api, &self.term_input);
                let partial_start = if self.term_input.ends_with(' ') { self.term_input.len() } else { self.term_input.rfind(' ').map_or(0, |i| i + 1) };
                match options.as_slice() {
                    [] => return Some(false),
                    [one] => self.term_input = format!("{}{one} ", &self.term_input[..partial_start]),
                    many => {
                        // Extend to the longest common prefix, and list the choices.
                        let first = &many[0];
                        let common = first
                            .char_indices()
                            .map(|(i, c)| i + c.len_utf8())
                            .take_while(|&end| many.iter().all(|m| m.starts_with(&first[..end])))
                            .last()
                            .unwrap_or(0);
                        self.term_input = format!("{}{}", &self.term_input[..partial_start], &first[..common]);
                        self.term_lines.push((false, many.join("  ")));
                    }
                }
            }
            Msg::TermEof => {
                let Some(prompt) = self.sb.cluster.prompt() else { return Some(false) };
                self.term_lines.push((true, format!("{prompt}^D")));
                let out = self.sb.stdin(None);
                self.term_lines.extend(out.into_iter().map(|l| (false, l)));
                self.absorb();
            }
            Msg::TermStop => {
                if self.term_watch.take().is_some() {
                    self.term_lines.push((false, "^C".into()));
                }
            }
            Msg::TermHistory(delta) => {
                let len = self.term_history.len();
                if len == 0 {
                    return Some(false);
                }
                self.term_pos = (self.term_pos as i64 + i64::from(delta)).clamp(0, len as i64) as usize;
                self.term_input = self.term_history.get(self.term_pos).cloned().unwrap_or_default();
            }
            Msg::Share => {
                self.apply();
                let fragment = self.sb.share_with_base(DEFAULT_TEXT);
                let location = window().location();
                let base =
                    format!("{}{}{}", location.origin().unwrap_or_default(), location.pathname().unwrap_or_default(), location.search().unwrap_or_default());
                let url = format!("{base}#{fragment}");
                let _ = window().history().and_then(|h| h.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&format!("#{fragment}"))));
                let _ = window().navigator().clipboard().write_text(&url);
                self.link = Some(url);
            }
            Msg::NodesMoved(..) | Msg::Edit(_) | Msg::ApplyNow | Msg::LoadExample | Msg::CelLoaded(_) | Msg::Tick | Msg::Ready | Msg::Rehearse => {
                unreachable!("App::handle answers this message itself")
            }
        }
        None
    }
}

/// Checkpoints kept while the timeline shows the past, and the store size past which a
/// state is not kept (a large cluster's copy would hold much memory for little gain).
const CHECKPOINTS: usize = 16;
/// How long after the page is ready its first edit is rehearsed ([`App::rehearse_an_edit`]).
const REHEARSE_AFTER_MS: u32 = 200;
const CHECKPOINT_STORE_BYTES: u64 = 8 << 20;

/// Whether a state of the run shown in the past is worth keeping: a small cluster's, at a
/// moment no checkpoint holds yet.
fn wants_checkpoint(checkpoints: &[Sandbox], sb: &Sandbox) -> bool {
    sb.cluster.api.store.bytes() <= CHECKPOINT_STORE_BYTES && checkpoints.binary_search_by_key(&sb.cluster.now, |c| c.cluster.now).is_err()
}

/// Keep a state among the checkpoints, ordered by time; past the limit, the one closest to
/// its neighbours goes.
fn keep_checkpoint(checkpoints: &mut Vec<Sandbox>, sb: Sandbox) {
    let Err(i) = checkpoints.binary_search_by_key(&sb.cluster.now, |c| c.cluster.now) else { return };
    checkpoints.insert(i, sb);
    if checkpoints.len() > CHECKPOINTS {
        let at = |i: usize| checkpoints[i].cluster.now;
        let crowded = (1..checkpoints.len() - 1).min_by_key(|&i| at(i + 1) - at(i - 1)).unwrap_or(0);
        checkpoints.remove(crowded);
    }
}

/// One row of the records pane. A row is drawn again only when its record or its selection
/// changed: on each frame most rows of the pane are the same (a few new records arrive at the
/// top), and neither building nor comparing them again is needed.
#[derive(Properties)]
struct RecordRowProps {
    i: usize,
    selected: bool,
    /// Past the rows the box shows at first: drawn only when scrolled near.
    far: bool,
    record: Record,
    on_select: Callback<usize>,
}

impl PartialEq for RecordRowProps {
    // The callback only ever sends `SelectRecord(i)`: it does not decide whether to redraw.
    fn eq(&self, other: &Self) -> bool {
        self.i == other.i && self.selected == other.selected && self.far == other.far && self.record == other.record
    }
}

#[function_component]
fn RecordRow(p: &RecordRowProps) -> Html {
    let r = &p.record;
    let i = p.i;
    let onclick = p.on_select.reform(move |_: MouseEvent| i);
    let on_select = p.on_select.clone();
    let onkeydown = Callback::from(move |e: KeyboardEvent| {
        if e.key() == "Enter" || e.key() == " " {
            e.prevent_default();
            on_select.emit(i);
        }
    });
    let class = classes!("rec-row", "rec", r.result, p.selected.then_some("selected"), p.far.then_some("far"));
    html! {
        <div {class} role="row" tabindex="0" aria-selected={p.selected.to_string()} {onclick} {onkeydown}>
            <span role="cell">{ format!("{:.3}s", r.t as f64 / 1000.0) }</span><span role="cell">{ r.stage }</span><span role="cell">{ &r.component }</span>
            <span role="cell">{ &r.object }</span><span role="cell">{ &r.resource_version }</span><span role="cell">{ r.result }</span><span role="cell" class="msg">{ &r.message }</span>
        </div>
    }
}

impl Component for App {
    type Message = Msg;
    type Properties = ();

    fn create(ctx: &Context<Self>) -> Self {
        let location = window().location();
        let hash = location.hash().unwrap_or_default();
        let search = location.search().unwrap_or_default();
        let panes = Panes::from_query(&search);
        let wanted = lessons::from_query(&search);
        // The lessons' bodies are downloaded and read only when a lesson is opened.
        let (all_lessons, lesson_error) = if wanted.is_some() { load_lessons() } else { (Vec::new(), None) };
        let lesson = wanted.as_ref().and_then(|id| all_lessons.iter().position(|l| l.id == *id));
        let bench = bench::from_query(&search);
        let base = match &bench {
            Some(Ok(text)) => text.clone(),
            _ => lesson.map_or(DEFAULT_TEXT.to_string(), |i| all_lessons[i].text.clone()),
        };
        // A share link wins; else the session kept here (what was done, replayed); else what
        // the person typed here last time; else the example.
        let session = if hash.len() > 1 { None } else { storage().and_then(|s| s.get_item(&session_key()).ok().flatten()).map(|t| read_session(&t)) };
        let mut session_error = None;
        let saved = if hash.len() > 1 { None } else { saved_text().filter(|t| *t != base) };
        let (init, restored) = match session {
            Some(Ok((link, text))) => (Init::Session(link, RESTORED.to_string()), Some(text)),
            other => {
                if let Some(Err(e)) = other {
                    session_error = Some(e);
                }
                let restored = saved.clone();
                (if hash.len() > 1 { Init::Link(hash) } else { Init::Text(saved.unwrap_or(base)) }, restored)
            }
        };
        let needs_cel = match &init {
            Init::Link(_) | Init::Session(..) => true,
            Init::Text(t) => cel::needed_by(t),
        };
        let mut app = App {
            text: match &init {
                Init::Text(t) => t.clone(),
                Init::Link(_) => String::new(),
                Init::Session(..) => restored.clone().unwrap_or_default(),
            },
            seed_input: String::new(),
            sb: Sandbox::new("", None),
            playing: true,
            speed: Speed::X1,
            tallies: Default::default(),
            seen_records: 0,
            background: false,
            restored: false,
            flow: Some(Flow::Request),
            record: None,
            object: None,
            tab: Tab::Records,
            fault_node: String::new(),
            notice: None,
            behind: false,
            link: None,
            panes,
            _ticker: None,
            pending_apply: None,
            waiting: None,
            opening: None,
            apply_after_cel: false,
            term_lines: vec![(
                false,
                "Type kubectl commands, e.g. get pods -o wide, describe deployment checkout, get pods -w (Esc stops it), scale deployment checkout --replicas=3, explain deployment.spec, diff -f editor, or apply -f - <<EOF with the manifest on the next lines and EOF last. They run as the user chosen in Apply as."
                    .into(),
            )],
            term_input: String::new(),
            term_history: Vec::new(),
            term_pos: 0,
            term_watch: None,
            term_edit: None,
            term_seen: 0,
            lessons: all_lessons,
            lessons_read: wanted.is_some() && lesson_error.is_none(),
            ready: false,
            lesson,
            progress: Progress::default(),
            checks: Vec::new(),
            hints_shown: 0,
            answer_shown: false,
            lessons_open: false,
            done: lessons::load_done(),
            embed_origins: embed::allowed_origins(&search),
            _embed_listener: None,
            apply_id: serde_json::Value::Null,
            tick_posted: 0.0,
            live: None,
            checkpoints: Vec::new(),
            nodes_ref: NodeRef::default(),
            nodes_box: (0.0, 960.0, 480.0),
            nodes_measured: false,
            drawn_at: 0.0,
            stale: false,
            ticked_at: 0.0,
            typed_at: 0.0,
            diff_rv: None,
            why_open: false,
            follow: None,
            ws_name: String::new(),
            session_saved: 0.0,
            session_dirty: false,
            journey_records: Vec::new(),
            playback: None,
        };
        let link = ctx.link().clone();
        flush_text_on_leaving();
        app._embed_listener = embed::listen(app.embed_origins.clone(), move |origin, text| link.send_message(Msg::Embed(origin, text)));
        app.restored = restored.is_some();
        if app.restored {
            app.notice = Some(RESTORED.into());
        }
        if let Some(e) = session_error {
            set_aside_damaged();
            app.notice = Some(format!("Your saved session could not be restored: {e}. It was set aside (kubeloop.damaged in this browser's storage); the editor holds what you last typed, or the example."));
        }
        if let Some(id) = wanted.as_ref().filter(|_| lesson.is_none()) {
            app.notice = Some(format!("There is no lesson {id:?}; here is the example. The lessons are listed under Lessons."));
        }
        if let Some(Err(e)) = bench {
            app.notice = Some(e);
        }
        if lesson_error.is_some() {
            app.notice = lesson_error;
        }
        if needs_cel && !cel::ready() {
            // What the page has to say of how it opened comes first.
            if app.notice.is_none() {
                app.notice = Some(CEL_LOADING.into());
            }
            app.waiting = Some(init);
            app.load_cel(ctx);
        } else {
            app.start(init);
        }
        app.sb.sync_view();
        app.start_ticker(ctx);
        if app.waiting.is_none() {
            app.ready_later(ctx);
        }
        app
    }

    fn update(&mut self, ctx: &Context<Self>, msg: Msg) -> bool {
        let changed = self.handle(ctx, msg);
        // The cluster view's caches follow whatever the message did to the run.
        self.sb.sync_view();
        changed
    }

    fn rendered(&mut self, ctx: &Context<Self>, _first: bool) {
        self.drawn_at = now_ms();
        self.stale = false;
        // A large cluster's view draws the rows its box shows: measure the box when it first
        // appears (reading its size costs a layout, so not on every frame; scrolling it
        // measures it again).
        match self.nodes_ref.cast::<web_sys::Element>() {
            Some(el) if !self.nodes_measured => {
                self.nodes_measured = true;
                ctx.link().send_message(Msg::NodesMoved(f64::from(el.scroll_top()), f64::from(el.client_width()), f64::from(el.client_height())));
            }
            Some(_) => {}
            None => self.nodes_measured = false,
        }
        // Keep the terminal's newest lines in view.
        if self.tab == Tab::Terminal && self.term_lines.len() != self.term_seen {
            self.term_seen = self.term_lines.len();
            if let Some(el) = window().document().and_then(|d| d.query_selector(".term-out").ok().flatten()) {
                el.set_scroll_top(el.scroll_height());
            }
        }
    }

    fn view(&self, ctx: &Context<Self>) -> Html {
        let p = &self.panes;
        let mut class = classes!("app");
        if p.embed {
            class.push("embed");
        }
        html! {
            <div {class}>
                { self.header(ctx) }
                if let Some(n) = &self.notice {
                    <p class="notice" role="status">{ n }</p>
                }
                if !p.embed { { self.timeline(ctx) } }
                if !p.embed || self.lesson.is_some() { { self.lessons_view(ctx) } }
                <main class="panes">
                    if p.editor { { self.editor(ctx) } }
                    if p.diagram || p.cluster {
                        <section class="middle">
                            if p.diagram { { self.diagram(ctx) } }
                            if p.cluster { { self.cluster(ctx) } }
                        </section>
                    }
                    if p.details { { self.details(ctx) } }
                </main>
            </div>
        }
    }
}

/// The editor's lines are drawn as HTML text, a few lines to a piece: a first visit builds
/// its hundreds of lines in a few dozen DOM calls, and a keystroke redraws only the piece
/// whose text it changed (yew compares the text of each piece).
const HIGHLIGHT_CHUNK: usize = 8;

/// Text for HTML: `&`, `<`, `>` and `"` escaped.
fn escape_html(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}

/// The gutter's line numbers; a line with an error is marked and says why when hovered.
fn gutter_html(lines: usize, errors: &[(usize, String)]) -> String {
    let mut out = String::with_capacity(lines * 24);
    for n in 1..=lines {
        match errors.iter().find(|(l, _)| *l == n) {
            Some((_, m)) => {
                out.push_str("<div class=\"ln err\" title=\"");
                escape_html(m, &mut out);
                out.push_str(&format!("\">{n}</div>"));
            }
            None => out.push_str(&format!("<div class=\"ln\">{n}</div>")),
        }
    }
    out
}

/// One line of YAML, coloured: comments, document separators, keys and values.
fn yaml_line_html(line: &str, out: &mut String) {
    let span = |class: &str, text: &str, out: &mut String| {
        out.push_str("<span class=\"");
        out.push_str(class);
        out.push_str("\">");
        escape_html(text, out);
        out.push_str("</span>");
    };
    let trimmed = line.trim_start();
    if trimmed.starts_with('#') {
        return span("c", line, out);
    }
    let indent = &line[..line.len() - trimmed.len()];
    let (dash, rest) = trimmed.strip_prefix("- ").map(|b| (true, b)).unwrap_or((false, trimmed));
    if rest == "---" {
        return span("s", line, out);
    }
    escape_html(indent, out);
    if dash {
        out.push_str("- ");
    }
    match rest.find(": ").or_else(|| rest.strip_suffix(':').map(|k| k.len())) {
        Some(i) if !rest.starts_with('{') && !rest.starts_with('"') => {
            let (k, v) = rest.split_at(i);
            span("k", k, out);
            span("v", v, out);
        }
        _ => span("v", rest, out),
    }
}

impl App {
    fn header(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let now = self.sb.cluster.now;
        let speeds = [Speed::X1, Speed::X10, Speed::X100, Speed::Max];
        let on_speed = link.callback(move |e: Event| {
            let i: usize = e.target_unchecked_into::<HtmlSelectElement>().value().parse().unwrap_or(0);
            Msg::SetSpeed(speeds[i.min(3)])
        });
        let on_user = link.callback(|e: Event| Msg::SetUser(e.target_unchecked_into::<HtmlSelectElement>().value()));
        let on_seed = link.callback(|e: InputEvent| Msg::SetSeed(e.target_unchecked_into::<HtmlInputElement>().value()));
        html! {
            <header>
                <h1>{ "kubeloop" }<span class="tagline">{ " · a Kubernetes control plane you can watch" }</span></h1>
                <div class="controls" role="toolbar" aria-label="Simulation">
                    <span class="clock" aria-live="off" title="simulated time">{ format!("t = {:.1} s", now as f64 / 1000.0) }</span>
                    if self.behind && self.playing {
                        <span class="behind" role="status" title="there is more to simulate than fits in real time at this speed; the page stays responsive and the clock runs slower">{ "running behind" }</span>
                    }
                    <button onclick={link.callback(|_| Msg::TogglePlay)} aria-pressed={self.playing.to_string()}>{ if self.playing { "Pause" } else { "Play" } }</button>
                    <button onclick={link.callback(|_| Msg::StepOnce)} title="run the next event">{ "Step" }</button>
                    <label>{ "Speed " }
                        <select onchange={on_speed}>
                            { for speeds.iter().enumerate().map(|(i, s)| html! { <option value={i.to_string()} selected={*s == self.speed}>{ s.label() }</option> }) }
                        </select>
                    </label>
                    if !self.panes.embed {
                        <label>{ "Seed " }<input class="seed" type="number" value={self.seed_input.clone()} oninput={on_seed} /></label>
                    }
                    <button onclick={link.callback(|_| Msg::Reset)} title="rebuild the cluster from the editor with this seed">{ "Reset" }</button>
                    <label>{ "Apply as " }
                        <select onchange={on_user}>
                            { for self.sb.users.iter().map(|(u, _)| html! { <option value={u.clone()} selected={*u == self.sb.user}>{ u }</option> }) }
                        </select>
                    </label>
                    if self.panes.embed {
                        <a class="open-full" href="./" target="_blank" rel="noopener" onclick={link.callback(|e: MouseEvent| {
                            // The link carries the state; it is made on click, not on every render.
                            e.prevent_default();
                            Msg::OpenFull
                        })}>{ "Open the full sandbox ↗" }</a>
                    } else {
                        <button onclick={link.callback(|_| Msg::Share)}>{ "Share link" }</button>
                        <button onclick={link.callback(|_| Msg::Export)} title="download a script that creates a kind cluster like this one and applies the manifests">{ "Export to kind" }</button>
                        { self.workspaces_view(ctx) }
                    }
                </div>
                if let Some(l) = &self.link {
                    <p class="share">{ "Link copied: " }<input readonly=true value={l.clone()} aria-label="share link" /></p>
                }
            </header>
        }
    }

    fn editor(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let oninput = link.callback(|e: InputEvent| Msg::Edit(e.target_unchecked_into::<HtmlTextAreaElement>().value()));
        let onkeydown = link.batch_callback(|e: KeyboardEvent| {
            if e.key() == "Enter" && (e.ctrl_key() || e.meta_key()) {
                e.prevent_default();
                Some(Msg::ApplyNow)
            } else {
                None
            }
        });
        let errors: Vec<(usize, String)> = self.sb.docs.iter().flat_map(|d| d.diagnostics.iter().map(|x| (x.line, x.message.clone()))).collect();
        let lines: Vec<&str> = self.text.split('\n').collect();
        let gutter = gutter_html(lines.len(), &errors);
        let highlighted = lines.chunks(HIGHLIGHT_CHUNK).map(|chunk| {
            let mut out = String::from("<div class=\"hc\">");
            for l in chunk {
                out.push_str("<div class=\"hl\">");
                yaml_line_html(l, &mut out);
                out.push_str("\u{200b}</div>");
            }
            out.push_str("</div>");
            Html::from_html_unchecked(out.into())
        });
        let stale = self.text != self.sb.text;
        html! {
            <section class="editor-pane" aria-label="Manifests">
                <h2>{ "Manifests" }<span class="hint">{ if stale { " · editing… (Ctrl+Enter applies now)" } else { " · applied" } }</span>
                    if self.text != DEFAULT_TEXT && !self.panes.embed && self.lesson.is_none() {
                        <button class="load-example" onclick={link.callback(|_| Msg::LoadExample)}>{ "Load the example" }</button>
                    }
                </h2>
                <div class="editor">
                    <div class="gutter" aria-hidden="true">{ Html::from_html_unchecked(gutter.into()) }</div>
                    <div class="code">
                        <pre class="highlight" aria-hidden="true">{ for highlighted }</pre>
                        <textarea spellcheck="false" wrap="off" rows={(lines.len() + 1).to_string()} aria-label="Kubernetes manifests (YAML); applied when you pause typing" value={self.text.clone()} readonly={matches!(self.waiting, Some(Init::Link(_)))} {oninput} {onkeydown} />
                    </div>
                </div>
                <ul class="results" aria-label="Apply results" tabindex="0">
                    { for self.sb.setup_errors.iter().map(|e| html! { <li class="error">{ format!("Scenario line {e}") }</li> }) }
                    { for self.sb.docs.iter().filter(|d| !d.result.is_empty()).map(|d| {
                        // A warning (a kind nothing simulates, an unknown field) is not a plain success.
                        let warned = d.result.starts_with("Warning:");
                        let (class, mark) = if d.failed() { ("error", "✗ ") } else if warned { ("warn", "⚠ ") } else { ("ok", "✓ ") };
                        let line = d.diagnostics.first().map_or(d.start_line, |x| x.line);
                        let col = d.diagnostics.first().map_or(1, |x| x.column);
                        let place = if d.start_line == 0 { "removed from the editor".to_string() } else { format!("line {line}:{col}") };
                        // A document's object can be followed on the diagram from here.
                        let follow = (d.start_line > 0 && !d.object.is_empty() && !d.object.starts_with("Scenario/")).then(|| {
                            let line = d.start_line;
                            let label = format!("follow {} on the diagram", d.object);
                            html! { <button class="link follow-doc" aria-label={label} onclick={link.callback(move |_| Msg::FollowDoc(line))}>{ "follow" }</button> }
                        });
                        html! { <li {class}><span class="where">{ place }</span>{ " " }{ mark }{ &d.result }{ " " }{ for follow }</li> }
                    }) }
                </ul>
            </section>
        }
    }

    fn diagram(&self, ctx: &Context<Self>) -> Html {
        let on_select = ctx.link().callback(Msg::SelectFlow);
        let latest_fail =
            [Flow::Denied, Flow::Pending, Flow::NodeError].iter().filter_map(|f| self.tallies[diagram::index(*f)].latest.clone().map(|l| (*f, l))).next_back();
        html! {
            <div class="diagram-pane" aria-label="Flow diagram">
                <h2>{ "From kubectl apply to a running pod" }</h2>
                <p class="hint">{ "Each request crosses steps 1–5 in the API server; the loops (6–11) only react to what etcd stored. Select a step to see its records, and a record to see the object at that resourceVersion." }</p>
                { self.follow_bar(ctx) }
                { diagram::view(&self.tallies, self.flow, diagram::Outage { api_server: self.sb.cluster.api.down_since.is_some(), etcd: self.sb.cluster.api.etcd_down_since.is_some() }, self.follow.is_some(), on_select) }
                <label class="background-toggle">
                    <input type="checkbox" checked={self.background} onchange={ctx.link().callback(|_| Msg::ToggleBackground)} />
                    { " Count heartbeats, leases and events (left out by default: the counters show what you did)" }
                </label>
                if let Some((f, (o, m))) = latest_fail {
                    <p class="failure-line"><strong>{ format!("{}: ", f.as_str()) }</strong>{ format!("{o} — {m}") }</p>
                }
            </div>
        }
    }

    fn cluster(&self, ctx: &Context<Self>) -> Html {
        let store = &self.sb.cluster.api.store;
        let now = self.sb.cluster.now;
        let view = &self.sb.view;
        let names = view.node_names();
        // A large cluster draws only the rows in sight, a few chips each.
        let large = names.len() > VIRTUAL_NODES;
        let (cols, shown, pad_top, pad_bottom) = if large { self.nodes_in_sight(names.len()) } else { (0, 0..names.len(), 0.0, 0.0) };
        let chips = if large { VIRTUAL_CHIPS } else { MAX_CHIPS };
        let nodes = names[shown].iter().map(|name| self.node_card(ctx, name, chips, now));
        let pending: Vec<&Object> = view.on_node("").map(|t| t.pods.iter().take(MAX_CHIPS).filter_map(|(ns, n)| view.pod(ns, n)).collect()).unwrap_or_default();
        let not_scheduled = view.on_node("").map_or(0, |t| t.pods.len());
        let phases = ["Running", "Pending", "Succeeded", "Failed", "Unknown"]
            .iter()
            .filter_map(|p| view.phases().get(*p).map(|n| format!("{n} {p}")))
            .collect::<Vec<_>>()
            .join(", ");
        let summary = format!(
            "{} node{} ({} Ready) · {} pod{}{}{}",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            view.ready_nodes(),
            view.pod_count(),
            if view.pod_count() == 1 { "" } else { "s" },
            if phases.is_empty() { "" } else { ": " },
            phases
        );
        let on_scroll = ctx.link().callback(|e: Event| {
            let el = e.target_unchecked_into::<web_sys::Element>();
            Msg::NodesMoved(f64::from(el.scroll_top()), f64::from(el.client_width()), f64::from(el.client_height()))
        });
        let services = store.list(rid::SERVICE, None).filter(|s| api::name(s) != "kubernetes").map(|s| {
            let ns = api::namespace(s);
            let name = api::name(s);
            let ready: usize = store
                .list(rid::ENDPOINTSLICE, Some(ns))
                .filter(|e| api::label(e, "kubernetes.io/service-name") == Some(name))
                .map(|e| api::get_array(e, &["endpoints"]).iter().filter(|x| api::get_bool(x, &["conditions", "ready"]) == Some(true)).count())
                .sum();
            html! { <li>{ format!("Service {ns}/{name} · {} · {ready} ready endpoint(s)", get_str(s, &["spec", "clusterIP"]).unwrap_or("")) }</li> }
        });
        html! {
            <div class="cluster-pane" aria-label="Cluster">
                <h2>{ "Cluster" }</h2>
                <p class="cluster-summary">{ summary }</p>
                if large {
                    <div class="nodes-scroll" ref={self.nodes_ref.clone()} onscroll={on_scroll} tabindex="0" aria-label={format!("{} nodes, the rows in sight drawn", names.len())}>
                        <div class="nodes virtual" style={format!("grid-template-columns: repeat({cols}, minmax(0, 1fr)); padding-top: {pad_top}px; padding-bottom: {pad_bottom}px")}>
                            { for nodes }
                        </div>
                    </div>
                } else {
                    <div class="nodes">{ for nodes }</div>
                }
                if not_scheduled > 0 {
                    <div class="unscheduled"><strong>{ format!("Not scheduled ({not_scheduled}): ") }</strong>{ self.pod_chips(ctx, &pending, not_scheduled, now) }</div>
                }
                <ul class="services">{ for services }</ul>
                { self.volumes() }
                { self.faults(ctx) }
            </div>
        }
    }

    /// Claims and volumes: each claim's phase and volume, the volume's zone and the node it
    /// is attached to; volumes no claim holds (Available, Released).
    #[inline(never)]
    fn volumes(&self) -> Html {
        let store = &self.sb.cluster.api.store;
        let attached_to = |pv: &str| -> Vec<String> {
            store
                .list(rid::VOLUMEATTACHMENT, None)
                .filter(|a| get_str(a, &["spec", "source", "persistentVolumeName"]) == Some(pv))
                .map(|a| {
                    let node = get_str(a, &["spec", "nodeName"]).unwrap_or("");
                    if api::get_bool(a, &["status", "attached"]) == Some(true) {
                        format!("attached to {node}")
                    } else {
                        format!("attaching to {node}")
                    }
                })
                .collect()
        };
        let zone_of = |pv: &Value| -> Option<String> {
            api::get_array(pv, &["spec", "nodeAffinity", "required", "nodeSelectorTerms"])
                .iter()
                .flat_map(|t| api::get_array(t, &["matchExpressions"]))
                .find(|e| get_str(e, &["key"]) == Some("topology.kubernetes.io/zone"))
                .map(|e| api::get_array(e, &["values"]).iter().filter_map(Value::as_str).collect::<Vec<_>>().join(","))
        };
        let describe_pv = |pv: &Value| -> Vec<String> {
            let mut parts = vec![get_str(pv, &["spec", "capacity", "storage"]).unwrap_or("").to_string()];
            parts.extend(zone_of(pv));
            parts.extend(attached_to(api::name(pv)));
            parts
        };
        let mut rows: Vec<Html> = Vec::new();
        for c in store.list(rid::PVC, None) {
            let phase = if api::is_deleting(c) { "Terminating" } else { get_str(c, &["status", "phase"]).unwrap_or("Pending") };
            let mut parts = vec![format!("PVC {}/{}", api::namespace(c), api::name(c)), phase.to_string()];
            match get_str(c, &["spec", "volumeName"]).and_then(|v| store.get_by(rid::PV, "", v)) {
                Some(pv) => {
                    parts.push(format!("→ {}", api::name(pv)));
                    parts.extend(describe_pv(pv));
                    // An expansion under way: the disk first (resizer), then the file system (kubelet).
                    if let Some(step) = kubeloop_core::foundation::volume::resize_status(c) {
                        let to = get_str(c, &["status", "allocatedResources", "storage"]).unwrap_or("");
                        let claim = get_str(c, &["status", "capacity", "storage"]).unwrap_or("");
                        parts.push(format!("growing {claim} → {to}: {step}"));
                    }
                }
                None => parts.push(format!("class {}", get_str(c, &["spec", "storageClassName"]).unwrap_or("<none>"))),
            }
            let class = if phase == "Bound" { "ok" } else { "wait" };
            rows.push(html! { <li class={class}>{ parts.join(" · ") }</li> });
        }
        for pv in store.list(rid::PV, None).filter(|pv| get_str(pv, &["status", "phase"]) != Some("Bound")) {
            let mut parts = vec![format!("PV {}", api::name(pv)), get_str(pv, &["status", "phase"]).unwrap_or("Pending").to_string()];
            parts.extend(describe_pv(pv));
            rows.push(html! { <li class="wait">{ parts.join(" · ") }</li> });
        }
        if rows.is_empty() {
            return html! {};
        }
        html! { <ul class="volumes" aria-label="Volumes">{ for rows }</ul> }
    }

    /// At most [`MAX_CHIPS`] pods, then how many more: thousands of chips would be neither
    /// readable nor quick to draw on every tick.
    /// One node: its state, zone, pods and what they request, and chips for the first
    /// `chips` of its pods.
    fn node_card(&self, ctx: &Context<Self>, name: &str, chips: usize, now: u64) -> Html {
        let view = &self.sb.view;
        let Some(n) = view.node(name) else { return html! {} };
        let ready = api::get_array(n, &["status", "conditions"])
            .iter()
            .find(|c| get_str(c, &["type"]) == Some("Ready"))
            .and_then(|c| get_str(c, &["status"]))
            .unwrap_or("Unknown");
        let zone = api::label(n, "topology.kubernetes.io/zone").unwrap_or("");
        let taints: Vec<String> = api::get_array(n, &["spec", "taints"])
            .iter()
            .map(|t| format!("{}:{}", get_str(t, &["key"]).unwrap_or(""), get_str(t, &["effect"]).unwrap_or("")))
            .collect();
        let alloc_cpu = get(n, &["status", "allocatable", "cpu"]).and_then(value_milli).unwrap_or(0);
        let alloc_mem = get(n, &["status", "allocatable", "memory"]).and_then(value_milli).unwrap_or(0) / 1000;
        let tally = view.on_node(name);
        let count = tally.map_or(0, |t| t.pods.len());
        let on_node: Vec<&Object> = tally.map(|t| t.pods.iter().take(chips).filter_map(|(ns, p)| view.pod(ns, p)).collect()).unwrap_or_default();
        let (used_cpu, used_mem) = tally.map_or((0, 0), |t| (t.cpu, t.memory));
        let cpu = format!("CPU {}m/{}m", used_cpu, alloc_cpu);
        let mem = format!("memory {}Mi/{}Mi", used_mem >> 20, alloc_mem >> 20);
        let state = match ready {
            "True" => "Ready",
            "False" => "NotReady",
            _ => "Unknown",
        };
        html! {
            <div class={classes!("node", state.to_ascii_lowercase())} aria-label={format!("node {name}, {state}")}>
                <div class="node-head"><strong>{ name }</strong>{ " " }<span class={classes!("badge", state.to_ascii_lowercase())}>{ state }</span></div>
                <div class="node-meta">{ format!("{zone} · {count} pods") }</div>
                <div class="node-meta" title="requested / allocatable">{ format!("{cpu} · {mem}") }</div>
                if !taints.is_empty() { <div class="node-meta taints">{ taints.join(", ") }</div> }
                <div class="chips">{ self.pod_chips(ctx, &on_node, count, now) }</div>
            </div>
        }
    }

    /// The rows of a large cluster's nodes in sight (and two either side): the columns, the
    /// nodes' range, and the space the rows above and below take.
    fn nodes_in_sight(&self, n: usize) -> (usize, std::ops::Range<usize>, f64, f64) {
        let (top, width, height) = self.nodes_box;
        let cols = (((width + NODE_GAP) / (NODE_MIN_WIDTH + NODE_GAP)).floor() as usize).max(1);
        let rows = n.div_ceil(cols);
        let row = NODE_HEIGHT + NODE_GAP;
        let first = ((top / row).floor() as usize).saturating_sub(2).min(rows);
        let last = (((top + height) / row).ceil() as usize + 2).min(rows);
        (cols, first * cols..(last * cols).min(n), first as f64 * row, (rows - last) as f64 * row)
    }

    /// Chips for `pods`, the first of `total`, and how many more there are.
    fn pod_chips(&self, ctx: &Context<Self>, pods: &[&Object], total: usize, now: u64) -> Html {
        let more = total.saturating_sub(pods.len());
        html! {
            <>
                { for pods.iter().map(|p| self.pod_chip(ctx, p, now)) }
                if more > 0 {
                    <span class="more" title="the Objects tab and `kubectl get pods` list them all">{ format!("+{more} more") }</span>
                }
            </>
        }
    }

    fn pod_chip(&self, ctx: &Context<Self>, p: &Object, now: u64) -> Html {
        let row = pod_row(p, now);
        let key = format!("Pod/{}/{}", api::namespace(p), api::name(p));
        // `Init:1/2` is progress; `Init:Error`, `OOMKilled`, `CrashLoopBackOff` are not.
        let initializing = row.status.strip_prefix("Init:").is_some_and(|r| r.split('/').count() == 2 && r.split('/').all(|n| n.parse::<u32>().is_ok()));
        let state = match row.status.as_str() {
            "Running" if row.ready.split('/').next() == row.ready.split('/').nth(1) => "ok",
            "Running" | "NotReady" | "ContainerCreating" | "PodInitializing" | "Pending" | "Terminating" => "wait",
            _ if initializing => "wait",
            "Completed" => "done",
            _ => "bad",
        };
        let k = key.clone();
        html! {
            <button class={classes!("chip", state)} title={format!("{key}: {} {} restarts {}", row.status, row.ready, row.restarts)} onclick={ctx.link().callback(move |_| Msg::SelectObject(k.clone()))}>
                { api::name(p) }<span class="st">{ format!(" {} {}", row.ready, row.status) }</span>
            </button>
        }
    }

    fn faults(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let node = self.fault_node.clone();
        let node2 = node.clone();
        let webhooks: Vec<String> = self.sb.cluster.api.store.list(rid::VWC, None).map(|w| api::name(w).to_string()).collect();
        let drivers: Vec<String> = self.sb.cluster.api.store.list(rid::CSIDRIVER, None).map(|d| api::name(d).to_string()).collect();
        let on_node = link.callback(|e: Event| Msg::SetFaultNode(e.target_unchecked_into::<HtmlSelectElement>().value()));
        let on_node_named = link.callback(|e: Event| Msg::SetFaultNode(e.target_unchecked_into::<HtmlInputElement>().value().trim().to_string()));
        let api_down = self.sb.cluster.api.down_since.is_some();
        let etcd_down = self.sb.cluster.api.etcd_down_since.is_some();
        html! {
            <div class="faults" role="group" aria-label="Faults">
                <h3>{ "Break things" }</h3>
                <label>{ "Node " }
                    if self.sb.view.node_names().len() > VIRTUAL_NODES {
                        // Thousands of choices are no list to pick from: the node is named.
                        <input class="fault-node" value={self.fault_node.clone()} placeholder="node name" onchange={on_node_named} />
                    } else {
                        <select onchange={on_node}>
                            { for self.sb.view.node_names().iter().map(|n| html! { <option value={n.clone()} selected={*n == self.fault_node}>{ n }</option> }) }
                        </select>
                    }
                </label>
                <button onclick={link.callback(move |_| Msg::Fault("nodeDown", node.clone()))}>{ "Kill node" }</button>
                <button onclick={link.callback(move |_| Msg::Fault("nodeUp", node2.clone()))}>{ "Bring it back" }</button>
                { for webhooks.into_iter().map(|w| {
                    let w2 = w.clone();
                    let w3 = w.clone();
                    html! { <>
                        <button onclick={link.callback(move |_| Msg::Fault("webhookDown", w2.clone()))}>{ format!("Webhook {w} down") }</button>
                        <button onclick={link.callback(move |_| Msg::Fault("webhookUp", w3.clone()))}>{ "up" }</button>
                    </> }
                }) }
                { for drivers.into_iter().map(|d| {
                    let d2 = d.clone();
                    html! { <>
                        <button onclick={link.callback(move |_| Msg::Fault("storageDriverDown", d.clone()))} title="its provisioner, attacher and node plugins stop answering">{ "Storage driver down" }</button>
                        <button onclick={link.callback(move |_| Msg::Fault("storageDriverUp", d2.clone()))}>{ "up" }</button>
                    </> }
                }) }
                { if api_down {
                    html! { <button class="down" onclick={link.callback(|_| Msg::Fault("apiserverUp", String::new()))}>{ "Bring the API server back" }</button> }
                } else {
                    html! { <button onclick={link.callback(|_| Msg::Fault("apiserverDown", String::new()))} title="every request is refused; running pods keep running">{ "API server down" }</button> }
                } }
                { if etcd_down {
                    html! { <button class="down" onclick={link.callback(|_| Msg::Fault("etcdUp", String::new()))}>{ "Bring etcd back" }</button> }
                } else {
                    html! { <button onclick={link.callback(|_| Msg::Fault("etcdDown", String::new()))} title="the API server is up, but reads and writes time out">{ "etcd down" }</button> }
                } }
                { if self.sb.cluster.api.store.space.alarm {
                    html! { <button class="down" onclick={link.callback(|_| Msg::FreeEtcd)} title="etcdctl compact, defrag, alarm disarm">{ "etcd is full: compact and defragment it" }</button> }
                } else {
                    html! { <button onclick={link.callback(|_| Msg::FreeEtcd)} title="etcdctl compact, defrag, alarm disarm">{ "Compact and defragment etcd" }</button> }
                } }
                <button onclick={link.callback(|_| Msg::Fault("controllerManagerDown", String::new()))} title="all of kube-controller-manager's controllers stop at once">{ "Stop controller manager" }</button>
                <button onclick={link.callback(|_| Msg::Fault("controllerManagerUp", String::new()))}>{ "Start it" }</button>
                <button onclick={link.callback(|_| Msg::ScaleBy(2))} title="kubectl scale replicaset (the Deployment will scale it back)">{ "Scale ReplicaSet by hand +2" }</button>
                <button onclick={link.callback(|_| Msg::Fault("controllerDown", "kube-scheduler".into()))}>{ "Stop scheduler" }</button>
                <button onclick={link.callback(|_| Msg::Fault("controllerUp", "kube-scheduler".into()))}>{ "Start scheduler" }</button>
                <button onclick={link.callback(|_| Msg::Fault("controllerDown", "replicaset-controller".into()))}>{ "Stop ReplicaSet controller" }</button>
                <button onclick={link.callback(|_| Msg::Fault("controllerUp", "replicaset-controller".into()))}>{ "Start it" }</button>
            </div>
        }
    }

    fn details(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let tab = |t: Tab, label: &'static str| {
            html! { <button role="tab" aria-selected={(self.tab == t).to_string()} class={classes!((self.tab == t).then_some("active"))} onclick={link.callback(move |_| Msg::SetTab(t))}>{ label }</button> }
        };
        html! {
            <section class="details" aria-label="Details">
                <div role="tablist">
                    { tab(Tab::Terminal, "Terminal") }
                    { tab(Tab::Records, "Trace records") }
                    { tab(Tab::Objects, "Objects") }
                    { tab(Tab::Events, "Events") }
                </div>
                { match self.tab {
                    Tab::Terminal => self.terminal(ctx),
                    Tab::Records => self.records(ctx),
                    Tab::Objects => self.objects(ctx),
                    Tab::Events => self.events(),
                } }
            </section>
        }
    }

    #[inline(never)]
    fn terminal(&self, ctx: &Context<Self>) -> Html {
        let link = ctx.link();
        let oninput = link.callback(|e: InputEvent| Msg::TermInput(e.target_unchecked_into::<HtmlTextAreaElement>().value()));
        // Enter runs the line, unless a here-document (`apply -f - <<EOF`) is still open:
        // then it starts a new line, until the closing `EOF`. The text is read from the
        // element, which is ahead of the last render.
        let onkeydown = link.batch_callback(move |e: KeyboardEvent| {
            let text = e.target_unchecked_into::<HtmlTextAreaElement>().value();
            let multiline = text.contains('\n');
            match e.key().as_str() {
                "Enter" if e.shift_key() || kubeloop_core::kubectl::heredoc_open(&text) => None,
                "Enter" => {
                    e.prevent_default();
                    Some(Msg::TermRun)
                }
                "ArrowUp" if !multiline => {
                    e.prevent_default();
                    Some(Msg::TermHistory(-1))
                }
                "ArrowDown" if !multiline => {
                    e.prevent_default();
                    Some(Msg::TermHistory(1))
                }
                "Escape" => Some(Msg::TermStop),
                "d" if e.ctrl_key() && text.is_empty() => {
                    e.prevent_default();
                    Some(Msg::TermEof)
                }
                "Tab" => {
                    e.prevent_default();
                    Some(Msg::TermComplete)
                }
                _ => None,
            }
        });
        html! {
            <div class="terminal">
                <pre class="term-out" aria-live="polite">
                    { for self.term_lines.iter().map(|(cmd, l)| html! { <div class={classes!(cmd.then_some("cmd"))}>{ l }</div> }) }
                </pre>
                if let Some((line, text, _)) = &self.term_edit {
                    { self.edit_pane(ctx, line, text) }
                }
                <label class="term-in">
                    if let Some(prompt) = self.sb.cluster.prompt() {
                        <span>{ prompt }</span>
                        <textarea rows="1" spellcheck="false" autocomplete="off" aria-label="input to the attached command" placeholder="each line goes to the command's stdin: exit or Ctrl+D ends it" value={self.term_input.clone()} {oninput} {onkeydown} />
                    } else {
                        <span>{ format!("{} $ kubectl ", self.sb.user) }</span>
                        <textarea rows={self.term_input.lines().count().clamp(1, 12).to_string()} spellcheck="false" autocomplete="off" aria-label="kubectl command" value={self.term_input.clone()} {oninput} {onkeydown} />
                    }
                </label>
            </div>
        }
    }

    /// `kubectl edit`'s editor: the file kubectl opened, Save (Ctrl+S) and Cancel (Esc).
    #[inline(never)]
    fn edit_pane(&self, ctx: &Context<Self>, line: &str, text: &str) -> Html {
        let link = ctx.link();
        let oninput = link.callback(|e: InputEvent| Msg::EditText(e.target_unchecked_into::<HtmlTextAreaElement>().value()));
        let onkeydown = link.batch_callback(|e: KeyboardEvent| match e.key().as_str() {
            "s" if e.ctrl_key() || e.meta_key() => {
                e.prevent_default();
                Some(Msg::EditSave)
            }
            "Escape" => Some(Msg::EditCancel),
            _ => None,
        });
        html! {
            <div class="term-edit" role="group" aria-label="kubectl edit">
                <p>{ format!("kubectl {}: the editor kubectl opens. Save (Ctrl+S) sends what you changed as a patch; Cancel (Esc) changes nothing.", line.strip_prefix("kubectl ").unwrap_or(line)) }</p>
                <textarea class="term-edit-text" rows={text.lines().count().clamp(8, 30).to_string()} spellcheck="false" autocomplete="off" aria-label="the object being edited" value={text.to_string()} {oninput} {onkeydown} />
                <div class="term-edit-buttons">
                    <button onclick={link.callback(|_| Msg::EditSave)}>{ "Save" }</button>
                    <button onclick={link.callback(|_| Msg::EditCancel)}>{ "Cancel" }</button>
                </div>
            </div>
        }
    }

    #[inline(never)]
    fn records(&self, ctx: &Context<Self>) -> Html {
        let Some(flow) = self.flow else { return html! { <p>{ "Select a step of the diagram." }</p> } };
        let trace = &self.sb.cluster.api.trace;
        let in_journey = |i: usize| self.follow.is_none() || self.journey_records.binary_search(&i).is_ok();
        let mine: Vec<(usize, &Record)> = (trace.records_base()..)
            .zip(trace.records())
            .filter(|(i, r)| r.flow == flow && (self.background || !diagram::background(r)) && in_journey(*i))
            .collect();
        let on_select = ctx.link().callback(Msg::SelectRecord);
        let shown = mine.iter().rev().take(RECORDS_LISTED).enumerate().map(|(n, (i, r))| {
            html! { <RecordRow key={*i} i={*i} selected={self.record == Some(*i)} far={n >= RECORDS_DRAWN} record={(*r).clone()} on_select={on_select.clone()} /> }
        });
        let at = self
            .record
            .and_then(|i| trace.record(i))
            .filter(|r| !r.resource_version.is_empty())
            .and_then(|r| self.sb.object_at(&r.object, &r.resource_version).map(|o| (r, o)));
        html! {
            <div class="records">
                <p>{ format!("Step {}: {} records (newest first)", flow.as_str(), mine.len()) }
                    if mine.len() > RECORDS_LISTED {
                        { format!("; the newest {RECORDS_LISTED} are listed (the timeline shows the run at any earlier moment)") }
                    }
                </p>
                if trace.records_base() > 0 {
                    <p class="hint">{ format!("The page keeps the latest {} trace records of the run; the {} before them are no longer kept.", kubeloop_core::sandbox::PAGE_TRACE_WINDOW, trace.records_base()) }</p>
                }
                <div class="rec-table" role="table" aria-label={format!("records of step {}", flow.as_str())}>
                    <div role="rowgroup"><div class="rec-row" role="row">
                        { for ["t", "stage", "component", "object", "rv", "result", "message"].into_iter().map(|h| html! { <span role="columnheader">{ h }</span> }) }
                    </div></div>
                    <div role="rowgroup">{ for shown }</div>
                </div>
                if let Some((r, o)) = at {
                    <h3>{ format!("{} as stored at resourceVersion {}", r.object, r.resource_version) }</h3>
                    <pre class="yaml" tabindex="0">{ kubeloop_core::kubectl::goyaml::to_yaml(&o) }</pre>
                }
            </div>
        }
    }

    #[inline(never)]
    fn objects(&self, ctx: &Context<Self>) -> Html {
        let store = &self.sb.cluster.api.store;
        let list = store.all().filter(|o| get_str(o, &["kind"]) != Some("Event")).map(|o| {
            let key = object_key(o);
            let k = key.clone();
            let class = classes!("obj", (self.object.as_deref() == Some(key.as_str())).then_some("selected"));
            html! { <li {class}><button onclick={ctx.link().callback(move |_| Msg::SelectObject(k.clone()))}>{ &key }</button>{ format!(" rv {}", api::resource_version(o)) }</li> }
        });
        let selected = self.object.as_ref().and_then(|k| store.all().find(|o| object_key(o) == *k));
        html! {
            <div class="objects">
                <ul class="object-list">{ for list }</ul>
                if let Some(o) = selected { { self.inspector(ctx, o) } }
            </div>
        }
    }

    #[inline(never)]
    fn inspector(&self, ctx: &Context<Self>, o: &Object) -> Html {
        let mut spec = (**o).clone();
        let status = spec.as_object_mut().and_then(|m| m.remove("status"));
        let owners = api::get_array(o, &["metadata", "ownerReferences"]).iter().map(|r| {
            let ns = api::namespace(o);
            let key = format!(
                "{}/{}{}",
                get_str(r, &["kind"]).unwrap_or(""),
                if ns.is_empty() { String::new() } else { format!("{ns}/") },
                get_str(r, &["name"]).unwrap_or("")
            );
            let k = key.clone();
            html! { <button class="link" onclick={ctx.link().callback(move |_| Msg::SelectObject(k.clone()))}>{ format!("owner: {key}") }</button> }
        });
        // What this object owns or selects, one click away.
        let uid = api::uid(o).to_string();
        let selector = o.get("spec").and_then(|s| s.get("selector")).cloned();
        let kind = get_str(o, &["kind"]).unwrap_or("");
        let store = &self.sb.cluster.api.store;
        let dependents: Vec<String> = store
            .all()
            .filter(|x| {
                api::get_array(x, &["metadata", "ownerReferences"]).iter().any(|r| get_str(r, &["uid"]) == Some(uid.as_str()))
                    || (kind == "Service"
                        && get_str(x, &["kind"]) == Some("Pod")
                        && selector.as_ref().and_then(Value::as_object).is_some_and(|s| kubeloop_core::foundation::labels::map_matches(s, api::labels(x)))
                        && api::namespace(x) == api::namespace(o))
            })
            .map(object_key)
            .collect();
        let deps = dependents.into_iter().map(|k| {
            let k2 = k.clone();
            html! { <button class="link" onclick={ctx.link().callback(move |_| Msg::SelectObject(k2.clone()))}>{ k }</button> }
        });
        html! {
            <div class="inspector">
                <h3>{ object_key(o) }{ format!(" · resourceVersion {}", api::resource_version(o)) }</h3>
                <div class="links">{ for owners }{ for deps }</div>
                <div class="side-by-side">
                    <div><h4>{ "spec (desired)" }</h4><pre class="yaml" tabindex="0">{ kubeloop_core::kubectl::goyaml::to_yaml(&spec) }</pre></div>
                    <div><h4>{ "status (observed)" }</h4><pre class="yaml" tabindex="0">{ status.map(|s| kubeloop_core::kubectl::goyaml::to_yaml(&s)).unwrap_or_else(|| "(none)".into()) }</pre></div>
                </div>
                { self.why_view(ctx, o) }
                { self.history(ctx, o) }
            </div>
        }
    }

    #[inline(never)]
    fn events(&self) -> Html {
        let now = self.sb.cluster.now;
        let mut evs: Vec<&Object> = self.sb.cluster.api.store.list(rid::EVENT, None).collect();
        evs.sort_stable_by_key(|e| get_str(e, &["lastTimestamp"]).unwrap_or("").to_string());
        let rows = evs.iter().rev().take(300).map(|e| {
            let last = get_str(e, &["lastTimestamp"]).and_then(kubeloop_core::foundation::sim::parse_rfc3339).map(|t| human_duration(now.saturating_sub(t))).unwrap_or_default();
            let inv = e.get("involvedObject").cloned().unwrap_or_default();
            let obj = format!("{}/{}", get_str(&inv, &["kind"]).unwrap_or("").to_ascii_lowercase(), get_str(&inv, &["name"]).unwrap_or(""));
            let ty = get_str(e, &["type"]).unwrap_or("");
            // Keyed: a new event is one new row, not every row rewritten.
            let key = format!("{}/{}", api::namespace(e), api::name(e));
            html! { <tr {key} class={classes!(ty.to_ascii_lowercase())}><td>{ last }</td><td>{ ty }</td><td>{ get_str(e, &["reason"]).unwrap_or("") }</td><td>{ obj }</td><td class="msg">{ get_str(e, &["message"]).unwrap_or("") }</td></tr> }
        });
        html! {
            <table class="events">
                <thead><tr><th>{ "LAST SEEN" }</th><th>{ "TYPE" }</th><th>{ "REASON" }</th><th>{ "OBJECT" }</th><th>{ "MESSAGE" }</th></tr></thead>
                <tbody>{ for rows }</tbody>
            </table>
        }
    }
}

fn object_key(o: &Object) -> String {
    let ns = api::namespace(o);
    format!("{}/{}{}", get_str(o, &["kind"]).unwrap_or(""), if ns.is_empty() { String::new() } else { format!("{ns}/") }, api::name(o))
}

fn main() {
    // The page's module is loaded: fetch the rest of the code in the background. The page
    // runs without it until something it has not yet needed is first called.
    rest::init();
    rest::prefetch();
    kubeloop_core::apiserver::cel::install(|| Box::new(cel::JsCel::default()));
    yew::Renderer::<App>::new().render();
}
