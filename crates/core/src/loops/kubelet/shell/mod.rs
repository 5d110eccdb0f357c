//! The container runtime's programs: a small, deterministic shell (busybox `ash`, `bash -c`,
//! Debian's `dash`) that runs a container's `command` and `args`, exec probes, lifecycle
//! hooks and `kubectl exec`, against the container's files, environment and the cluster's
//! network as the kubelet gives them through [`Host`].
//!
//! A script is compiled to a flat list of operations so that a process can stop anywhere
//! (`sleep 30` gives the simulated clock back to the kubelet) and resume later: the whole
//! state of a process is [`Process`]. Nothing here reads a clock or the world except
//! through `Host`, so a run is a function of its inputs.

pub mod applets;
pub mod fs;
pub mod parse;
pub mod tar;

use crate::foundation::sim::Millis;
use crate::foundation::sort::Sort;
use parse::{Assign, Command, List, ParamOp, Part, Piped, Redir, RedirOp, Simple, Word};
use std::collections::BTreeMap;
use std::sync::Arc;

pub use fs::FsError;

/// Operations a process may run per resume before it yields (a busy loop with no
/// `sleep` gives the clock back after this many, as if it burned 100 ms of CPU).
pub const OPS_PER_SLICE: usize = 20_000;
/// Simulated time a busy slice takes.
pub const BUSY_SLICE_MS: Millis = 100;
/// Operations a command substitution, exec probe or `kubectl exec` may run in all.
pub const OPS_PER_CALL: usize = 200_000;

/// A long-running program of an image (nginx, redis-server, the image's own server).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Daemon {
    pub name: String,
    /// Lines it writes as it starts.
    pub lines: Vec<String>,
    /// Ports it listens on; empty means any port a probe asks (an image kubeloop does not
    /// know the insides of).
    pub ports: Vec<u16>,
    /// Resident memory in bytes.
    pub memory: u64,
    /// Exits 0 on SIGTERM (servers do); otherwise the kubelet waits for SIGKILL.
    pub handles_sigterm: bool,
}

/// What running a process did this time.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Exit(i32),
    /// Asleep (or busy) for this long; resume it after.
    Sleep(Millis),
    /// Became a long-running server: it runs until signalled.
    Serve(Daemon),
    /// Used more memory than its limit.
    OomKilled,
    /// Waiting for more of its stdin (an exec session's): resume it when more arrives or
    /// the stream ends.
    Wait,
}

/// What the kubelet gives a process: files, names, the network, the log.
pub trait Host {
    fn now(&self) -> Millis;
    fn hostname(&self) -> String;
    fn read(&self, path: &str) -> Result<String, FsError>;
    fn write(&mut self, path: &str, data: &str, append: bool) -> Result<(), FsError>;
    fn remove(&mut self, path: &str, recursive: bool) -> Result<(), FsError>;
    fn mkdir(&mut self, path: &str, parents: bool) -> Result<(), FsError>;
    fn list(&self, path: &str) -> Result<Vec<(String, bool)>, FsError>;
    /// `Some(true)` directory, `Some(false)` file, `None` absent.
    fn kind(&self, path: &str) -> Option<bool>;
    /// A DNS name to (fully qualified name, address).
    fn resolve(&self, name: &str) -> Option<(String, String)>;
    /// An HTTP GET of `path` on `addr:port` for the name `host`: (status, body), or the
    /// connect error (`Connection refused`).
    fn http(&self, host: &str, addr: &str, port: u16, path: &str) -> Result<(u16, String), String>;
    /// The image's long-running program this command line starts, if it is one.
    fn daemon(&self, argv: &[String]) -> Option<Daemon>;
    /// Whether the image has a program by this name that kubeloop cannot run.
    fn opaque(&self, name: &str) -> bool;
    /// Whether the image carries this known program (`curl` is not in busybox).
    fn has(&self, name: &str) -> bool;
    /// Send a signal to the container's processes named `name` (`0` only checks);
    /// whether any matched.
    fn signal(&mut self, name: &str, signal: i32) -> bool;
    /// One line the container writes to its log.
    fn log(&mut self, line: String);
    /// One line written to stderr (the container log holds both streams).
    fn log_stderr(&mut self, line: String) {
        self.log(line)
    }
    /// The last line of a stream the program ended without a newline.
    fn log_unterminated(&mut self, line: String, stream: u8) {
        if stream == 2 {
            self.log_stderr(line)
        } else {
            self.log(line)
        }
    }
    fn memory_limit(&self) -> Option<u64>;
}

/// How the shell words its errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// busybox `ash` and applets (busybox, alpine, bash images use busybox tools).
    Busybox,
    /// Debian's `dash` as `/bin/sh`, GNU coreutils.
    Dash,
    /// GNU bash, GNU coreutils.
    Bash,
}

impl Flavour {
    pub fn gnu(self) -> bool {
        self != Flavour::Busybox
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Simple(usize, bool),
    Jmp(usize),
    JmpOk(usize),
    JmpFail(usize),
    Not,
    ForInit {
        slot: usize,
        words: Option<usize>,
    },
    ForNext {
        slot: usize,
        var: String,
        end: usize,
    },
    CaseSubject {
        slot: usize,
        word: usize,
    },
    CaseTest {
        slot: usize,
        words: usize,
        next: usize,
    },
    Redirect(usize),
    Restore,
    PipeStart,
    /// The next stage reads what the last wrote; `true` for the final stage, which writes
    /// where the pipeline does.
    PipeNext(bool),
    PipeEnd,
    Function {
        name: String,
        end: usize,
    },
    Return,
    Status(i32),
}

/// A compiled script.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Program {
    ops: Vec<Op>,
    simples: Vec<Simple>,
    words: Vec<Vec<Word>>,
    single: Vec<Word>,
    redirs: Vec<Vec<Redir>>,
    slots: usize,
}

struct Compiler {
    p: Program,
    /// (continue target, break jumps to patch) per enclosing loop.
    loops: Vec<(usize, Vec<usize>)>,
}

impl Compiler {
    fn emit(&mut self, op: Op) -> usize {
        self.p.ops.push(op);
        self.p.ops.len() - 1
    }
    fn here(&self) -> usize {
        self.p.ops.len()
    }
    fn patch(&mut self, at: usize, target: usize) {
        match &mut self.p.ops[at] {
            Op::Jmp(t) | Op::JmpOk(t) | Op::JmpFail(t) => *t = target,
            Op::ForNext { end, .. } => *end = target,
            Op::CaseTest { next, .. } => *next = target,
            Op::Function { end, .. } => *end = target,
            _ => {}
        }
    }
    fn list(&mut self, l: &List, checked: bool) {
        for ao in l {
            let mut jumps = Vec::new();
            let last = ao.rest.is_empty();
            self.pipeline(&ao.first, checked || !last);
            for (k, (and, p)) in ao.rest.iter().enumerate() {
                let j = if *and { self.emit(Op::JmpFail(0)) } else { self.emit(Op::JmpOk(0)) };
                jumps.push(j);
                self.pipeline(p, checked || k + 1 < ao.rest.len());
                let end = self.here();
                let j = jumps.pop().unwrap_or(0);
                self.patch(j, end);
            }
        }
        if l.is_empty() {
            self.emit(Op::Status(0));
        }
    }
    fn pipeline(&mut self, p: &parse::Pipeline, checked: bool) {
        let checked = checked || p.negate;
        if p.commands.len() == 1 {
            self.piped(&p.commands[0], checked);
        } else {
            self.emit(Op::PipeStart);
            for (k, c) in p.commands.iter().enumerate() {
                if k > 0 {
                    self.emit(Op::PipeNext(k + 1 == p.commands.len()));
                }
                self.piped(c, checked || k + 1 < p.commands.len());
            }
            self.emit(Op::PipeEnd);
        }
        if p.negate {
            self.emit(Op::Not);
        }
    }
    fn piped(&mut self, c: &Piped, checked: bool) {
        if !c.redirs.is_empty() {
            self.p.redirs.push(c.redirs.clone());
            let i = self.p.redirs.len() - 1;
            self.emit(Op::Redirect(i));
        }
        self.command(&c.command, checked);
        if !c.redirs.is_empty() {
            self.emit(Op::Restore);
        }
    }
    fn command(&mut self, c: &Command, checked: bool) {
        match c {
            Command::Simple(s) => {
                self.p.simples.push(s.clone());
                let i = self.p.simples.len() - 1;
                self.emit(Op::Simple(i, !checked));
            }
            Command::Group(l) => self.list(l, checked),
            Command::If { arms, otherwise } => {
                let mut ends = Vec::new();
                for (cond, body) in arms {
                    self.list(cond, true);
                    let skip = self.emit(Op::JmpFail(0));
                    self.list(body, checked);
                    ends.push(self.emit(Op::Jmp(0)));
                    let next = self.here();
                    self.patch(skip, next);
                }
                match otherwise {
                    Some(e) => self.list(e, checked),
                    None => {
                        self.emit(Op::Status(0));
                    }
                }
                let end = self.here();
                for j in ends {
                    self.patch(j, end);
                }
            }
            Command::Loop { cond, body, until } => {
                self.emit(Op::Status(0));
                let top = self.here();
                self.list(cond, true);
                let exit = if *until { self.emit(Op::JmpOk(0)) } else { self.emit(Op::JmpFail(0)) };
                self.loops.push((top, vec![]));
                self.list(body, checked);
                self.emit(Op::Jmp(top));
                let end = self.here();
                self.emit(Op::Status(0));
                self.patch(exit, end);
                let (_, breaks) = self.loops.pop().unwrap_or_default();
                for b in breaks {
                    self.patch(b, end);
                }
            }
            Command::For { var, words, body } => {
                let slot = self.p.slots;
                self.p.slots += 1;
                let words = words.as_ref().map(|w| {
                    self.p.words.push(w.clone());
                    self.p.words.len() - 1
                });
                self.emit(Op::ForInit { slot, words });
                self.emit(Op::Status(0));
                let top = self.emit(Op::ForNext { slot, var: var.clone(), end: 0 });
                self.loops.push((top, vec![]));
                self.list(body, checked);
                self.emit(Op::Jmp(top));
                let end = self.here();
                self.patch(top, end);
                let (_, breaks) = self.loops.pop().unwrap_or_default();
                for b in breaks {
                    self.patch(b, end);
                }
            }
            Command::Case { word, arms } => {
                let slot = self.p.slots;
                self.p.slots += 1;
                self.p.single.push(word.clone());
                let w = self.p.single.len() - 1;
                self.emit(Op::CaseSubject { slot, word: w });
                self.emit(Op::Status(0));
                let mut ends = Vec::new();
                for (pats, body) in arms {
                    self.p.words.push(pats.clone());
                    let words = self.p.words.len() - 1;
                    let test = self.emit(Op::CaseTest { slot, words, next: 0 });
                    self.list(body, checked);
                    ends.push(self.emit(Op::Jmp(0)));
                    let next = self.here();
                    self.patch(test, next);
                }
                let end = self.here();
                for j in ends {
                    self.patch(j, end);
                }
            }
            Command::Function { name, body } => {
                let def = self.emit(Op::Function { name: name.clone(), end: 0 });
                let saved = std::mem::take(&mut self.loops);
                self.command(body, false);
                self.loops = saved;
                self.emit(Op::Return);
                let end = self.here();
                self.patch(def, end);
                self.emit(Op::Status(0));
            }
            Command::Break(n) | Command::Continue(n) => {
                let levels = parse::literal(n).and_then(|s| s.parse::<usize>().ok()).unwrap_or(1).max(1);
                let depth = self.loops.len();
                if depth == 0 {
                    self.emit(Op::Status(0));
                    return;
                }
                let target = depth - levels.min(depth);
                if matches!(c, Command::Break(_)) {
                    let j = self.emit(Op::Jmp(0));
                    self.loops[target].1.push(j);
                } else {
                    let top = self.loops[target].0;
                    self.emit(Op::Jmp(top));
                }
            }
        }
    }
}

/// Compile a script, or give the shell's syntax error text.
pub fn compile(script: &str) -> Result<Program, parse::SyntaxError> {
    let list = parse::parse(script)?;
    Ok(compile_list(&list))
}

fn compile_list(list: &List) -> Program {
    let mut c = Compiler { p: Program::default(), loops: vec![] };
    c.list(list, false);
    c.p
}

#[derive(Debug, Clone, PartialEq)]
enum Sink {
    /// The process's stdout (1) or stderr (2) as the runtime collects them.
    Log(u8),
    Null,
    File(String),
    Capture(usize),
}

#[derive(Debug, Clone, PartialEq)]
struct Var {
    value: Str,
    array: Option<Vec<String>>,
    exported: bool,
}

type Str = compact_str::CompactString;

/// A process's variables, sorted by name in one vector: a container's environment is a
/// dozen short strings, kept inline without an allocation each.
#[derive(Debug, Clone, PartialEq, Default)]
struct Vars(Vec<(Str, Var)>);

impl Vars {
    fn find(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(name))
    }
    fn get(&self, name: &str) -> Option<&Var> {
        self.find(name).ok().map(|i| &self.0[i].1)
    }
    fn insert(&mut self, name: &str, v: Var) -> Option<Var> {
        match self.find(name) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, v)),
            Err(i) => {
                self.0.insert(i, (name.into(), v));
                None
            }
        }
    }
    fn remove(&mut self, name: &str) -> Option<Var> {
        self.find(name).ok().map(|i| self.0.remove(i).1)
    }
    fn or_insert(&mut self, name: &str, v: Var) -> &mut Var {
        let i = match self.find(name) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (name.into(), v));
                i
            }
        };
        &mut self.0[i].1
    }
    fn iter(&self) -> impl Iterator<Item = (&Str, &Var)> {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

#[derive(Debug, Clone, PartialEq)]
enum FrameKind {
    Script,
    Function,
    /// A nested `sh -c`: `exit` ends only it.
    Subshell,
}

#[derive(Debug, Clone, PartialEq)]
struct Frame {
    prog: Arc<Program>,
    pc: usize,
    kind: FrameKind,
    /// Positional parameters to restore when the frame ends.
    saved_args: Option<Vec<String>>,
    slots: Vec<Option<(Vec<String>, usize)>>,
    subjects: Vec<String>,
    /// Redirections in effect when the frame began (restored when it ends).
    depth: usize,
}

/// What a builtin or applet did.
pub enum Flow {
    Status(i32),
    Sleep(Millis),
    Exit(i32),
    /// Run again after this long from the same place (`tail -f`).
    Again(Millis),
    /// Run again from the same place once more stdin has come or it has ended.
    Wait,
    Serve(Daemon),
    Return(i32),
    /// Run this script in a new frame with these positional parameters.
    Script(Program, String, Vec<String>),
    Oom,
}

/// One process: a shell and its state, resumable after any `sleep`.
#[derive(Debug, Clone, PartialEq)]
pub struct Process {
    frames: Vec<Frame>,
    status: i32,
    vars: Vars,
    args: Vec<String>,
    arg0: String,
    funcs: BTreeMap<String, (Arc<Program>, usize)>,
    fds: [Sink; 3],
    saved: Vec<([Sink; 3], Option<String>)>,
    stdin: Option<String>,
    /// The stream an exec session feeds: what has come and not been read, and whether more
    /// may come. Read where no pipe or redirection gives stdin.
    session: Option<(String, bool)>,
    /// A shell reading command lines one by one ([`Process::run_next`]): the end of one
    /// is not the end of the process.
    interactive: bool,
    stdin_wanted: bool,
    captures: Vec<String>,
    partial: String,
    partial_err: String,
    pub errexit: bool,
    pub xtrace: bool,
    traps: BTreeMap<String, String>,
    /// Per-operation state of `tail -f` (bytes already printed).
    follow: BTreeMap<(usize, usize), usize>,
    cwd: String,
    pub flavour: Flavour,
    /// Bytes allocated beyond the shell's own.
    pub memory: u64,
    pub exited: Option<i32>,
    /// Sleeps skipped by a run that must finish at once (exec probes, `kubectl exec`).
    pub slept: Millis,
    instant: bool,
    /// Operations run so far.
    ops: usize,
    /// Simulated time spent in busy slices so far (CPU the process burned).
    pub busy_ms: Millis,
}

impl Process {
    /// A shell running `program` as `$0` with positional `args`, in an environment.
    #[inline(never)]
    pub fn new(program: Program, arg0: &str, args: Vec<String>, env: &[(String, String)], flavour: Flavour) -> Process {
        Process::running(Arc::new(program), arg0, args, env, flavour)
    }

    /// [`Process::new`] with a compiled program that other processes may share.
    fn running(prog: Arc<Program>, arg0: &str, args: Vec<String>, env: &[(String, String)], flavour: Flavour) -> Process {
        let mut vars = Vars(Vec::with_capacity(env.len() + 1));
        for (k, v) in env {
            vars.insert(k, Var { value: v.into(), array: None, exported: true });
        }
        vars.or_insert("IFS", Var { value: " \t\n".into(), array: None, exported: false });
        let slots = vec![None; prog.slots];
        Process {
            frames: vec![Frame { prog, pc: 0, kind: FrameKind::Script, saved_args: None, slots, subjects: vec![], depth: 0 }],
            status: 0,
            vars,
            args,
            arg0: arg0.to_string(),
            funcs: BTreeMap::new(),
            fds: [Sink::Null, Sink::Log(1), Sink::Log(2)],
            saved: vec![],
            stdin: None,
            session: None,
            interactive: false,
            stdin_wanted: false,
            captures: vec![],
            partial: String::new(),
            partial_err: String::new(),
            errexit: false,
            xtrace: false,
            traps: BTreeMap::new(),
            follow: BTreeMap::new(),
            cwd: "/".into(),
            flavour,
            memory: 0,
            exited: None,
            slept: 0,
            instant: false,
            ops: 0,
            busy_ms: 0,
        }
    }

    /// A process that runs one command line (no shell): `sleep 3600`, `cat /x`.
    pub fn command(argv: &[String], env: &[(String, String)], flavour: Flavour) -> Process {
        // The containers of one template run the same command line: compiled once.
        thread_local! {
            static COMPILED: std::cell::RefCell<std::collections::HashMap<Vec<String>, Arc<Program>>> = Default::default();
        }
        let prog = COMPILED.with(|c| {
            let mut c = c.borrow_mut();
            if let Some(p) = c.get(argv) {
                return p.clone();
            }
            if c.len() >= 256 {
                c.clear();
            }
            let words: Vec<Word> = argv.iter().map(|a| vec![Part::Quoted(a.clone())]).collect();
            let simple = Simple { assigns: vec![], words, redirs: vec![], line: 1 };
            let list = vec![parse::AndOr {
                first: parse::Pipeline { negate: false, commands: vec![Piped { command: Command::Simple(simple), redirs: vec![] }] },
                rest: vec![],
            }];
            let p = Arc::new(compile_list(&list));
            c.insert(argv.to_vec(), p.clone());
            p
        });
        let mut p = Process::running(prog, argv.first().map(String::as_str).unwrap_or(""), vec![], env, flavour);
        p.arg0 = String::new();
        p
    }

    pub fn env(&self) -> Vec<(String, String)> {
        self.vars.iter().filter(|(_, v)| v.exported).map(|(k, v)| (k.to_string(), v.value.to_string())).collect()
    }

    /// The prompt an interactive shell prints on a terminal, as root: bash's
    /// `root@HOST:DIR# `, busybox ash's `DIR # `, dash's `# `.
    pub fn prompt(&self) -> String {
        let home = |d: &str| if d == "/root" { "~".to_string() } else { d.to_string() };
        let bash = self.me().rsplit('/').next() == Some("bash");
        match self.flavour {
            _ if bash => format!("root@{}:{}# ", self.vars.get("HOSTNAME").map(|v| v.value.as_str()).unwrap_or("localhost"), home(&self.cwd)),
            Flavour::Busybox => format!("{} # ", home(&self.cwd)),
            Flavour::Dash | Flavour::Bash => "# ".to_string(),
        }
    }

    /// The name the shell calls itself in errors (`sh`, `/bin/sh`, `bash`).
    fn me(&self) -> &str {
        if self.arg0.is_empty() {
            "sh"
        } else {
            &self.arg0
        }
    }

    /// Whether a SIGTERM handler is set (`trap … TERM`).
    pub fn traps_term(&self) -> bool {
        self.traps.contains_key("TERM")
    }

    /// Deliver SIGTERM: a script with a handler runs it and exits; one without ignores it
    /// (a shell as PID 1 has no default action for SIGTERM).
    pub fn sigterm(&mut self, host: &mut dyn Host) -> Option<i32> {
        let handler = self.traps.get("TERM").cloned()?;
        let prog = compile(&handler).unwrap_or_default();
        let mut sub = self.sub(prog);
        sub.run_to_end(host, OPS_PER_CALL);
        self.flush(host);
        let code = sub.exited.unwrap_or(143);
        self.exited = Some(code);
        Some(code)
    }

    fn sub(&self, prog: Program) -> Process {
        let mut p = self.clone();
        let slots = vec![None; prog.slots];
        p.frames = vec![Frame { prog: Arc::new(prog), pc: 0, kind: FrameKind::Script, saved_args: None, slots, subjects: vec![], depth: 0 }];
        p.saved.clear();
        p.partial.clear();
        p.partial_err.clear();
        p.exited = None;
        p
    }

    /// Run until the process sleeps, serves, exits or has used its slice.
    pub fn resume(&mut self, host: &mut dyn Host) -> Outcome {
        let out = self.step(host, OPS_PER_SLICE);
        self.flush(host);
        out
    }

    /// Run to the end at once, skipping sleeps (counted in `slept`): exec probes, hooks,
    /// `kubectl exec`. A program that serves or loops past `budget` stops there.
    pub fn run_to_end(&mut self, host: &mut dyn Host, budget: usize) -> Outcome {
        self.instant = true;
        let start = self.ops;
        loop {
            let left = budget.saturating_sub(self.ops - start);
            let out = self.step(host, left.min(OPS_PER_SLICE));
            match out {
                Outcome::Sleep(ms) if self.ops - start < budget && self.exited.is_none() => {
                    self.slept = self.slept.saturating_add(ms);
                }
                other => {
                    self.flush(host);
                    return other;
                }
            }
        }
    }

    fn flush(&mut self, host: &mut dyn Host) {
        if self.exited.is_some() {
            if !self.partial.is_empty() {
                host.log_unterminated(std::mem::take(&mut self.partial), 1);
            }
            if !self.partial_err.is_empty() {
                host.log_unterminated(std::mem::take(&mut self.partial_err), 2);
            }
        }
    }

    fn write_fd(&mut self, fd: usize, text: &str, host: &mut dyn Host) {
        if text.is_empty() {
            return;
        }
        match self.fds.get(fd).cloned().unwrap_or(Sink::Null) {
            Sink::Null => {}
            Sink::Log(stream) => {
                let buf = if stream == 2 { &mut self.partial_err } else { &mut self.partial };
                buf.push_str(text);
                while let Some(i) = buf.find('\n') {
                    let line: String = buf[..i].to_string();
                    buf.drain(..=i);
                    if stream == 2 {
                        host.log_stderr(line);
                    } else {
                        host.log(line);
                    }
                }
            }
            Sink::File(path) => {
                let _ = host.write(&path, text, true);
            }
            Sink::Capture(i) => {
                if let Some(c) = self.captures.get_mut(i) {
                    if c.len() < 1 << 20 {
                        c.push_str(text);
                    }
                }
            }
        }
    }
    pub fn out(&mut self, text: &str, host: &mut dyn Host) {
        self.write_fd(1, text, host);
    }
    pub fn err(&mut self, text: &str, host: &mut dyn Host) {
        self.write_fd(2, text, host);
    }
    pub fn take_stdin(&mut self) -> Option<String> {
        match (self.stdin.take(), &mut self.session) {
            (Some(s), _) => Some(s),
            (None, Some((buf, _))) => Some(std::mem::take(buf)),
            (None, None) => {
                // A command of an interactive shell reads what would be the shell's next
                // lines; kubeloop gives it nothing, and the session says so.
                self.stdin_wanted |= self.interactive;
                None
            }
        }
    }
    /// Whether a command of this interactive shell tried to read stdin since last asked.
    pub fn take_stdin_wanted(&mut self) -> bool {
        std::mem::take(&mut self.stdin_wanted)
    }
    /// Whether reading stdin now would wait: it is a session's stream, still open.
    pub fn stdin_blocked(&self) -> bool {
        self.stdin.is_none() && self.session.as_ref().is_some_and(|(_, open)| *open)
    }
    /// What a session's stream holds now, taken (for a program that copies as it reads).
    pub fn take_available(&mut self) -> String {
        self.session.as_mut().map(|(buf, _)| std::mem::take(buf)).unwrap_or_default()
    }
    /// The first whole line of a session's stream, taken with its newline.
    pub fn take_line(&mut self) -> Option<String> {
        let (buf, _) = self.session.as_mut()?;
        let end = buf.find('\n')? + 1;
        Some(buf.drain(..end).collect())
    }
    /// Give the process a stdin stream that an exec session will feed.
    pub fn open_stdin(&mut self) {
        self.session = Some((String::new(), true));
    }
    pub fn feed_stdin(&mut self, text: &str) {
        if let Some((buf, _)) = &mut self.session {
            buf.push_str(text);
        }
    }
    /// The stream ends (the client closed stdin).
    pub fn close_stdin(&mut self) {
        if let Some((_, open)) = &mut self.session {
            *open = false;
        }
    }
    /// Run `program` next in this shell, as an interactive shell runs each command line it
    /// reads: variables, functions and the working directory carry over.
    pub fn run_next(&mut self, program: Program) {
        self.interactive = true;
        let prog = Arc::new(program);
        let slots = vec![None; prog.slots];
        self.frames = vec![Frame { prog, pc: 0, kind: FrameKind::Script, saved_args: None, slots, subjects: vec![], depth: 0 }];
    }
    pub fn set_stdin(&mut self, text: String) {
        self.stdin = Some(text);
    }
    pub fn abs(&self, path: &str) -> String {
        if path.starts_with('/') {
            fs::normalise(path)
        } else {
            fs::normalise(&format!("{}/{path}", self.cwd))
        }
    }
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(|v| v.value.as_str())
    }
    pub fn set_var(&mut self, name: &str, value: String) {
        let exported = self.vars.get(name).is_some_and(|v| v.exported);
        self.vars.insert(name, Var { value: value.into(), array: None, exported });
    }

    /// [`Process::step`] for the operations of loops, cases, pipes and functions.
    #[inline(never)]
    fn control(&mut self, op: Op, prog: &Arc<Program>, depth: usize, pc: usize, host: &mut dyn Host) {
        match op {
            Op::ForInit { slot, words } => {
                let items = match words {
                    Some(w) => {
                        let mut out = Vec::new();
                        for word in prog.words.get(w).map(Vec::as_slice).unwrap_or(&[]) {
                            out.extend(self.expand(word, host, true));
                        }
                        out
                    }
                    None => self.args.clone(),
                };
                if let Some(s) = self.frames[depth - 1].slots.get_mut(slot) {
                    *s = Some((items, 0));
                }
            }
            Op::ForNext { slot, var, end } => {
                let next = self.frames[depth - 1].slots.get_mut(slot).and_then(|s| s.as_mut()).and_then(|(items, i)| {
                    let v = items.get(*i).cloned();
                    *i += 1;
                    v
                });
                match next {
                    Some(v) => self.set_var(&var, v),
                    None => self.frames[depth - 1].pc = end,
                }
            }
            Op::CaseSubject { slot, word } => {
                let w = prog.single.get(word).cloned().unwrap_or_default();
                let s = self.expand(&w, host, false).join(" ");
                let subjects = &mut self.frames[depth - 1].subjects;
                if subjects.len() <= slot {
                    subjects.resize(slot + 1, String::new());
                }
                subjects[slot] = s;
            }
            Op::CaseTest { slot, words, next } => {
                let subject = self.frames[depth - 1].subjects.get(slot).cloned().unwrap_or_default();
                let pats = prog.words.get(words).cloned().unwrap_or_default();
                let hit = pats.iter().any(|p| {
                    let pat = self.pattern(p, host);
                    glob_match(&pat, &subject)
                });
                if !hit {
                    self.frames[depth - 1].pc = next;
                }
            }
            Op::PipeStart => {
                self.saved.push((self.fds.clone(), self.stdin.clone()));
                self.captures.push(String::new());
                self.fds[1] = Sink::Capture(self.captures.len() - 1);
            }
            Op::PipeNext(last) => {
                if let Some(i) = self.captures.len().checked_sub(1) {
                    let text = std::mem::take(&mut self.captures[i]);
                    self.stdin = Some(text);
                }
                if last {
                    if let Some((fds, _)) = self.saved.last() {
                        self.fds[1] = fds[1].clone();
                    }
                }
            }
            Op::Function { name, end } => {
                self.funcs.insert(name, (Arc::clone(prog), pc + 1));
                self.frames[depth - 1].pc = end;
            }
            Op::Return => {
                let f = self.frames.pop().expect("a frame exists");
                while self.saved.len() > f.depth {
                    self.restore();
                }
                if let Some(a) = f.saved_args {
                    self.args = a;
                }
            }
            _ => unreachable!("Process::step runs the other operations"),
        }
    }

    fn step(&mut self, host: &mut dyn Host, budget: usize) -> Outcome {
        if let Some(code) = self.exited {
            return Outcome::Exit(code);
        }
        let mut ops = 0usize;
        loop {
            if let Some(code) = self.exited {
                return Outcome::Exit(code);
            }
            let Some(frame) = self.frames.last() else {
                if self.interactive {
                    // A command line is done; the shell waits for the next.
                    return Outcome::Wait;
                }
                self.exited = Some(self.status);
                return Outcome::Exit(self.status);
            };
            let pc = frame.pc;
            let Some(op) = frame.prog.ops.get(pc).cloned() else {
                // The frame is done.
                let f = self.frames.pop().expect("a frame exists");
                while self.saved.len() > f.depth {
                    self.restore();
                }
                if let Some(a) = f.saved_args {
                    self.args = a;
                }
                continue;
            };
            ops += 1;
            self.ops += 1;
            if ops > budget {
                if !self.instant {
                    self.busy_ms += BUSY_SLICE_MS;
                }
                return Outcome::Sleep(BUSY_SLICE_MS);
            }
            let depth = self.frames.len();
            self.frames[depth - 1].pc = pc + 1;
            let prog = Arc::clone(&self.frames[depth - 1].prog);
            match op {
                Op::Jmp(t) => self.frames[depth - 1].pc = t,
                Op::JmpOk(t) if self.status == 0 => self.frames[depth - 1].pc = t,
                Op::JmpFail(t) if self.status != 0 => self.frames[depth - 1].pc = t,
                Op::JmpOk(_) | Op::JmpFail(_) => {}
                Op::Not => self.status = i32::from(self.status == 0),
                Op::Status(s) => self.status = s,
                Op::Redirect(i) => {
                    let redirs = prog.redirs.get(i).cloned().unwrap_or_default();
                    self.saved.push((self.fds.clone(), self.stdin.clone()));
                    if let Err(code) = self.apply_redirs(&redirs, host) {
                        self.status = code;
                    }
                }
                Op::Restore => self.restore(),
                // Loops, cases, pipes and functions out of line: crates/split keeps a first
                // visit's download to what it runs.
                op @ (Op::ForInit { .. }
                | Op::ForNext { .. }
                | Op::CaseSubject { .. }
                | Op::CaseTest { .. }
                | Op::PipeStart
                | Op::PipeNext(_)
                | Op::Function { .. }
                | Op::Return) => self.control(op, &prog, depth, pc, host),
                Op::PipeEnd => self.restore_pipe(),
                Op::Simple(i, errexit) => {
                    let Some(simple) = prog.simples.get(i) else { continue };
                    match self.simple(simple, host) {
                        Flow::Status(s) => self.status = s,
                        Flow::Sleep(ms) => {
                            self.status = 0;
                            return Outcome::Sleep(ms);
                        }
                        Flow::Again(ms) => {
                            self.frames[depth - 1].pc = pc;
                            return Outcome::Sleep(ms);
                        }
                        Flow::Wait => {
                            self.frames[depth - 1].pc = pc;
                            return Outcome::Wait;
                        }
                        Flow::Exit(code) => {
                            if let Some(k) = self.frames.iter().rposition(|f| f.kind == FrameKind::Subshell) {
                                self.frames.truncate(k + 1);
                                let f = self.frames.pop().expect("a frame exists");
                                while self.saved.len() > f.depth {
                                    self.restore();
                                }
                                if let Some(a) = f.saved_args {
                                    self.args = a;
                                }
                                self.status = code;
                                continue;
                            }
                            self.exited = Some(code);
                            return Outcome::Exit(code);
                        }
                        Flow::Serve(d) => {
                            self.frames[depth - 1].pc = pc;
                            return Outcome::Serve(d);
                        }
                        Flow::Oom => return Outcome::OomKilled,
                        Flow::Return(code) => {
                            self.status = code;
                            if let Some(k) = self.frames.iter().rposition(|f| f.kind == FrameKind::Function) {
                                while self.frames.len() > k + 1 {
                                    self.frames.pop();
                                }
                                let f = self.frames.pop().expect("a frame exists");
                                while self.saved.len() > f.depth {
                                    self.restore();
                                }
                                if let Some(a) = f.saved_args {
                                    self.args = a;
                                }
                            }
                        }
                        Flow::Script(prog, _arg0, args) => {
                            let slots = vec![None; prog.slots];
                            let saved_args = Some(std::mem::replace(&mut self.args, args));
                            self.frames.push(Frame {
                                prog: Arc::new(prog),
                                pc: 0,
                                kind: FrameKind::Subshell,
                                saved_args,
                                slots,
                                subjects: vec![],
                                depth: self.saved.len(),
                            });
                        }
                    }
                    if let Some(limit) = host.memory_limit() {
                        if self.memory > limit {
                            return Outcome::OomKilled;
                        }
                    }
                    if errexit && self.errexit && self.status != 0 {
                        self.exited = Some(self.status);
                        return Outcome::Exit(self.status);
                    }
                }
            }
        }
    }

    fn restore(&mut self) {
        if let Some((fds, stdin)) = self.saved.pop() {
            self.fds = fds;
            self.stdin = stdin;
        }
    }
    /// End a pipeline: the last stage's output goes where the pipeline's did.
    fn restore_pipe(&mut self) {
        if let Some((fds, stdin)) = self.saved.pop() {
            self.fds = fds;
            self.stdin = stdin;
        }
        self.captures.pop();
    }

    fn apply_redirs(&mut self, redirs: &[Redir], host: &mut dyn Host) -> Result<(), i32> {
        for r in redirs {
            let target = self.expand(&r.target, host, false).join(" ");
            match r.op {
                RedirOp::Dup => {
                    let to = match target.as_str() {
                        "1" => self.fds[1].clone(),
                        "2" => self.fds[2].clone(),
                        "-" => Sink::Null,
                        _ => Sink::Null,
                    };
                    if let Some(slot) = self.fds.get_mut(r.fd as usize) {
                        *slot = to;
                    }
                }
                RedirOp::In => {
                    let path = self.abs(&target);
                    match host.read(&path) {
                        Ok(t) => self.stdin = Some(t),
                        Err(e) => {
                            let msg = self.redir_error(&target, e, false);
                            self.err(&msg, host);
                            return Err(1);
                        }
                    }
                }
                RedirOp::Out | RedirOp::Append => {
                    let sink = if target == "/dev/null" {
                        Sink::Null
                    } else if target == "/dev/stdout" {
                        self.fds[1].clone()
                    } else if target == "/dev/stderr" {
                        self.fds[2].clone()
                    } else {
                        let path = self.abs(&target);
                        if let Err(e) = host.write(&path, "", r.op == RedirOp::Append) {
                            let msg = self.redir_error(&target, e, true);
                            self.err(&msg, host);
                            return Err(if self.flavour == Flavour::Busybox { 1 } else { 2 });
                        }
                        Sink::File(path)
                    };
                    if r.fd == 3 {
                        self.fds[1] = sink.clone();
                        self.fds[2] = sink;
                    } else if let Some(slot) = self.fds.get_mut(r.fd as usize) {
                        *slot = sink;
                    }
                }
            }
        }
        Ok(())
    }

    fn redir_error(&self, target: &str, e: FsError, create: bool) -> String {
        let me = self.me();
        match (self.flavour, create) {
            (Flavour::Busybox, true) => {
                let why = if e == FsError::NotFound { "nonexistent directory" } else { e.text() };
                format!("{me}: can't create {target}: {why}\n")
            }
            (Flavour::Busybox, false) => format!("{me}: can't open '{target}': {}\n", e.text()),
            (Flavour::Dash, true) => {
                let why = if e == FsError::NotFound { "Directory nonexistent" } else { e.text() };
                format!("{me}: {}: cannot create {target}: {why}\n", 1)
            }
            (Flavour::Dash, false) => format!("{me}: {}: cannot open {target}: {}\n", 1, e.text()),
            (Flavour::Bash, _) => format!("{me}: line 1: {target}: {}\n", e.text()),
        }
    }

    /// Run one simple command.
    fn simple(&mut self, s: &Simple, host: &mut dyn Host) -> Flow {
        let mut sub_status = None;
        let mut argv = Vec::new();
        for w in &s.words {
            let before = self.status;
            argv.extend(self.expand(w, host, true));
            if self.status != before {
                sub_status = Some(self.status);
            }
        }
        // Assignments: for the shell when there is no command, or for the command's
        // environment (builtins see them as shell variables here).
        let mut temp: Vec<(String, Option<Var>)> = Vec::new();
        for (name, a) in &s.assigns {
            let before = self.status;
            let var = match a {
                Assign::Scalar(w) => {
                    let v = self.expand(w, host, false).join(" ");
                    Var { value: v.into(), array: None, exported: self.vars.get(name).is_some_and(|v| v.exported) }
                }
                Assign::Array(items) => {
                    let mut vals = Vec::new();
                    for w in items {
                        vals.extend(self.expand(w, host, true));
                    }
                    Var { value: vals.first().map(|v| Str::from(v.as_str())).unwrap_or_default(), array: Some(vals), exported: false }
                }
            };
            if self.status != before {
                sub_status = Some(self.status);
            }
            if !argv.is_empty() {
                let old = self.vars.insert(name, Var { exported: true, ..var });
                temp.push((name.clone(), old));
            } else {
                self.vars.insert(name, var);
            }
        }
        if argv.is_empty() {
            if !s.redirs.is_empty() {
                self.saved.push((self.fds.clone(), self.stdin.clone()));
                let r = self.apply_redirs(&s.redirs, host);
                self.restore();
                if let Err(code) = r {
                    return Flow::Status(code);
                }
            }
            return Flow::Status(sub_status.unwrap_or(0));
        }
        if self.xtrace {
            let line = format!("+ {}\n", argv.join(" "));
            self.err(&line, host);
        }
        let redirected = !s.redirs.is_empty();
        if redirected {
            self.saved.push((self.fds.clone(), self.stdin.clone()));
            if let Err(code) = self.apply_redirs(&s.redirs, host) {
                self.restore();
                return Flow::Status(code);
            }
        }
        let flow = self.dispatch(&argv, s.line, host);
        for (name, old) in temp.into_iter().rev() {
            match old {
                Some(v) => self.vars.insert(&name, v),
                None => self.vars.remove(&name),
            };
        }
        if redirected {
            match &flow {
                // The process stays in this command: keep its redirections until it ends.
                Flow::Again(_) | Flow::Serve(_) | Flow::Wait => {
                    self.restore();
                }
                Flow::Script(..) => {}
                _ => self.restore(),
            }
        }
        flow
    }

    fn dispatch(&mut self, argv: &[String], line: usize, host: &mut dyn Host) -> Flow {
        let name = argv[0].clone();
        if let Some((prog, entry)) = self.funcs.get(&name).cloned() {
            let saved_args = Some(std::mem::replace(&mut self.args, argv[1..].to_vec()));
            let slots = vec![None; prog.slots];
            self.frames.push(Frame { prog, pc: entry, kind: FrameKind::Function, saved_args, slots, subjects: vec![], depth: self.saved.len() });
            return Flow::Status(0);
        }
        if let Some(flow) = applets::builtin(self, host, argv) {
            return flow;
        }
        let base = name.rsplit('/').next().unwrap_or(&name).to_string();
        // `nginx -s quit` signals the server rather than starting one.
        let control = base == "nginx" && argv.get(1).map(String::as_str) == Some("-s");
        if let Some(d) = host.daemon(argv).filter(|_| !control) {
            return self.serve(d, host);
        }
        if let Some(flow) = applets::applet(self, host, &base, argv) {
            return flow;
        }
        if host.opaque(&base) {
            let msg = format!("kubeloop: {base} is a program of this image that kubeloop does not simulate\n");
            self.err(&msg, host);
            return Flow::Status(127);
        }
        let msg = match self.flavour {
            Flavour::Busybox => format!("{}: {name}: not found\n", self.me()),
            Flavour::Dash => format!("{}: {line}: {name}: not found\n", self.me()),
            Flavour::Bash => format!("{}: line {line}: {name}: command not found\n", self.me()),
        };
        self.err(&msg, host);
        Flow::Status(127)
    }

    /// Become (or run in the foreground) an image's server.
    pub fn serve(&mut self, d: Daemon, host: &mut dyn Host) -> Flow {
        if self.instant {
            // A probe or `kubectl exec` starting a server in the foreground would wait for it.
            return Flow::Status(0);
        }
        if let std::collections::btree_map::Entry::Vacant(e) = self.follow.entry((usize::MAX, 0)) {
            e.insert(0);
            for l in &d.lines {
                let line = format!("{l}\n");
                self.out(&line, host);
            }
            self.memory = self.memory.saturating_add(d.memory);
        }
        Flow::Serve(d)
    }

    /// Where the running op is, for per-op state (`tail -f`).
    pub fn here(&self) -> (usize, usize) {
        (self.frames.len(), self.frames.last().map(|f| f.pc).unwrap_or(0))
    }
    pub fn follow_state(&mut self) -> &mut BTreeMap<(usize, usize), usize> {
        &mut self.follow
    }
    pub fn instant(&self) -> bool {
        self.instant
    }
    pub fn set_cwd(&mut self, dir: String) {
        self.cwd = dir;
    }
    pub fn cwd(&self) -> &str {
        &self.cwd
    }
    pub fn set_trap(&mut self, signal: String, action: String) {
        if action.is_empty() || action == "-" {
            self.traps.remove(&signal);
        } else {
            self.traps.insert(signal, action);
        }
    }
    pub fn status(&self) -> i32 {
        self.status
    }
    pub fn positional(&self) -> &[String] {
        &self.args
    }
    pub fn shift(&mut self, n: usize) -> bool {
        if n > self.args.len() {
            return false;
        }
        self.args.drain(..n);
        true
    }
    pub fn export(&mut self, name: &str, value: Option<String>) {
        let v = self.vars.or_insert(name, Var { value: Str::default(), array: None, exported: true });
        v.exported = true;
        if let Some(val) = value {
            v.value = val.into();
            v.array = None;
        }
    }
    pub fn unset(&mut self, name: &str) {
        self.vars.remove(name);
        self.funcs.remove(name);
    }
    pub fn all_vars(&self) -> Vec<(String, String)> {
        self.vars.iter().filter(|(k, _)| k.as_str() != "IFS").map(|(k, v)| (k.to_string(), v.value.to_string())).collect()
    }
    pub fn me_name(&self) -> String {
        self.me().to_string()
    }

    /// Run a command substitution: its output, trailing newlines removed.
    fn substitute(&mut self, list: &List, host: &mut dyn Host) -> String {
        let prog = compile_list(list);
        let mut sub = self.sub(prog);
        sub.captures = vec![String::new()];
        sub.fds[1] = Sink::Capture(0);
        sub.run_to_end(host, OPS_PER_CALL);
        self.status = sub.exited.unwrap_or(sub.status);
        self.memory = self.memory.max(sub.memory);
        let mut out = sub.captures.into_iter().next().unwrap_or_default();
        while out.ends_with('\n') {
            out.pop();
        }
        out
    }

    fn param(&mut self, name: &str, index: &Option<String>, host: &mut dyn Host) -> Option<String> {
        match name {
            "?" => return Some(self.status.to_string()),
            "$" => return Some("1".into()),
            "!" => return Some(String::new()),
            "#" => return Some(self.args.len().to_string()),
            "-" => return Some(String::new()),
            "0" => return Some(self.me().to_string()),
            "@" | "*" => return Some(self.args.join(" ")),
            n if n.chars().all(|c| c.is_ascii_digit()) => {
                let k: usize = n.parse().unwrap_or(0);
                return self.args.get(k.wrapping_sub(1)).cloned();
            }
            _ => {}
        }
        let v = self.vars.get(name)?.clone();
        match index {
            None => Some(v.value.into()),
            Some(i) if i == "@" || i == "*" => Some(v.array.map(|a| a.join(" ")).unwrap_or(v.value.into())),
            Some(i) => {
                let expr = self.expand_text(i, host);
                let k = arith(&expr, self).ok()?;
                match v.array {
                    Some(a) => usize::try_from(k).ok().and_then(|k| a.get(k).cloned()),
                    None if k == 0 => Some(v.value.into()),
                    None => None,
                }
            }
        }
    }

    /// Expand `$x` and `${x}` inside a text (arithmetic, array subscripts).
    fn expand_text(&mut self, text: &str, host: &mut dyn Host) -> String {
        match parse::parse(&format!("x {text}")) {
            Ok(list) => {
                let words = list.first().and_then(|ao| match &ao.first.commands.first()?.command {
                    Command::Simple(s) => Some(s.words.clone()),
                    _ => None,
                });
                let mut out = Vec::new();
                for w in words.unwrap_or_default().iter().skip(1) {
                    out.extend(self.expand(w, host, false));
                }
                out.join(" ")
            }
            Err(_) => text.to_string(),
        }
    }

    fn pattern(&mut self, w: &Word, host: &mut dyn Host) -> String {
        // Quoted characters match literally: escape them for `glob_match`.
        let mut out = String::new();
        for p in w {
            match p {
                Part::Lit(s) => out.push_str(s),
                Part::Quoted(s) => {
                    for c in s.chars() {
                        if "*?[\\".contains(c) {
                            out.push('\\');
                        }
                        out.push(c);
                    }
                }
                other => out.push_str(&self.expand(&vec![other.clone()], host, false).join(" ")),
            }
        }
        out
    }

    /// Expand a word into fields (`split`: field splitting and globbing apply).
    pub fn expand(&mut self, w: &Word, host: &mut dyn Host, split: bool) -> Vec<String> {
        let mut fields: Vec<String> = Vec::new();
        let mut cur = String::new();
        let mut cur_used = false;
        let mut glob = false;
        let mut quoted_at_all = false;
        for p in w {
            let (text, quoted) = match p {
                Part::Lit(s) => {
                    if s.contains(['*', '?']) {
                        glob = true;
                    }
                    cur.push_str(s);
                    cur_used = true;
                    continue;
                }
                Part::Quoted(s) => {
                    cur.push_str(s);
                    cur_used = true;
                    quoted_at_all = true;
                    continue;
                }
                Part::Param { name, index, op, quoted } => {
                    if *quoted && name == "@" && index.is_none() && matches!(op, ParamOp::Plain) {
                        // "$@": one field per parameter.
                        let args = self.args.clone();
                        for (k, a) in args.iter().enumerate() {
                            cur.push_str(a);
                            if k + 1 < args.len() {
                                fields.push(std::mem::take(&mut cur));
                            }
                        }
                        cur_used = cur_used || !args.is_empty();
                        continue;
                    }
                    (self.param_op(name, index, op, host), *quoted)
                }
                Part::Sub { list, quoted } => (self.substitute(list, host), *quoted),
                Part::Arith { expr, quoted } => {
                    let text = self.expand_text(expr, host);
                    let v = match arith(&text, self) {
                        Ok(v) => v.to_string(),
                        Err(e) => {
                            let msg = format!("{}: arithmetic syntax error: {e}\n", self.me());
                            self.err(&msg, host);
                            self.status = 2;
                            String::new()
                        }
                    };
                    (v, *quoted)
                }
            };
            if quoted || !split {
                cur.push_str(&text);
                cur_used = true;
                quoted_at_all = quoted_at_all || quoted;
                continue;
            }
            for ch in text.chars() {
                if ch == ' ' || ch == '\t' || ch == '\n' {
                    if !cur.is_empty() || cur_used && quoted_at_all {
                        fields.push(std::mem::take(&mut cur));
                    }
                    cur_used = false;
                } else {
                    cur.push(ch);
                    cur_used = true;
                }
            }
        }
        if !cur.is_empty() || (cur_used && (quoted_at_all || !split)) || (!split && fields.is_empty()) {
            fields.push(cur);
        }
        if split && glob {
            let mut out = Vec::new();
            for f in fields {
                let matches = self.glob(&f, host);
                if matches.is_empty() {
                    out.push(f);
                } else {
                    out.extend(matches);
                }
            }
            return out;
        }
        fields
    }

    fn param_op(&mut self, name: &str, index: &Option<String>, op: &ParamOp, host: &mut dyn Host) -> String {
        let v = self.param(name, index, host);
        match op {
            ParamOp::Plain => v.unwrap_or_default(),
            ParamOp::Length => {
                if index.as_deref() == Some("@") || index.as_deref() == Some("*") {
                    return self.vars.get(name).and_then(|v| v.array.as_ref().map(Vec::len)).unwrap_or(0).to_string();
                }
                v.unwrap_or_default().chars().count().to_string()
            }
            ParamOp::Default { word, colon } => match v {
                Some(s) if !(*colon && s.is_empty()) => s,
                _ => self.expand(word, host, false).join(" "),
            },
            ParamOp::Assign { word, colon } => match v {
                Some(s) if !(*colon && s.is_empty()) => s,
                _ => {
                    let s = self.expand(word, host, false).join(" ");
                    self.set_var(name, s.clone());
                    s
                }
            },
            ParamOp::Alt { word, colon } => match v {
                Some(s) if !(*colon && s.is_empty()) => self.expand(word, host, false).join(" "),
                _ => String::new(),
            },
            ParamOp::Trim { word, suffix, longest } => {
                let s = v.unwrap_or_default();
                let pat = self.pattern(word, host);
                trim(&s, &pat, *suffix, *longest)
            }
        }
    }

    fn glob(&self, pattern: &str, host: &dyn Host) -> Vec<String> {
        let absolute = pattern.starts_with('/');
        // Candidates as (what the word becomes, the absolute path).
        let mut paths: Vec<(String, String)> = vec![(String::new(), if absolute { "/".into() } else { self.cwd.clone() })];
        for seg in pattern.split('/').filter(|s| !s.is_empty()) {
            let mut next = Vec::new();
            for (shown, abs) in &paths {
                let join = |name: &str| {
                    let s = match (shown.is_empty(), absolute) {
                        (true, true) => format!("/{name}"),
                        (true, false) => name.to_string(),
                        (false, _) => format!("{shown}/{name}"),
                    };
                    (s, fs::normalise(&format!("{abs}/{name}")))
                };
                if seg.contains(['*', '?', '[']) {
                    for (name, _) in host.list(abs).unwrap_or_default() {
                        if (!name.starts_with('.') || seg.starts_with('.')) && glob_match(seg, &name) {
                            next.push(join(&name));
                        }
                    }
                } else {
                    next.push(join(seg));
                }
            }
            paths = next;
        }
        let mut out: Vec<String> = paths.into_iter().filter(|(_, a)| host.kind(a).is_some()).map(|(s, _)| s).collect();
        out.sort_stable();
        out
    }
}

/// `fnmatch` for `*`, `?`, `[...]` and `\x`.
pub fn glob_match(pat: &str, s: &str) -> bool {
    let p: Vec<char> = pat.chars().collect();
    let t: Vec<char> = s.chars().collect();
    // Iterative matching with backtracking on the last star.
    let (mut i, mut j) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while j < t.len() {
        if i < p.len() {
            match p[i] {
                '*' => {
                    star = Some((i, j));
                    i += 1;
                    continue;
                }
                '?' => {
                    i += 1;
                    j += 1;
                    continue;
                }
                '[' => {
                    if let Some((ok, len)) = class(&p[i..], t[j]) {
                        if ok {
                            i += len;
                            j += 1;
                            continue;
                        }
                    } else if t[j] == '[' {
                        i += 1;
                        j += 1;
                        continue;
                    }
                }
                '\\' if i + 1 < p.len() && p[i + 1] == t[j] => {
                    i += 2;
                    j += 1;
                    continue;
                }
                '\\' if i + 1 < p.len() => {}
                c if c == t[j] => {
                    i += 1;
                    j += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((si, sj)) => {
                i = si + 1;
                j = sj + 1;
                star = Some((si, sj + 1));
            }
            None => return false,
        }
    }
    while i < p.len() && p[i] == '*' {
        i += 1;
    }
    i == p.len()
}

/// A bracket expression at the start of `p`: (matches, length), or None if unterminated.
fn class(p: &[char], c: char) -> Option<(bool, usize)> {
    let mut k = 1;
    let negate = matches!(p.get(1), Some('!' | '^'));
    if negate {
        k += 1;
    }
    let mut hit = false;
    let mut first = true;
    while k < p.len() {
        if p[k] == ']' && !first {
            return Some((hit != negate, k + 1));
        }
        first = false;
        if k + 2 < p.len() && p[k + 1] == '-' && p[k + 2] != ']' {
            if p[k] <= c && c <= p[k + 2] {
                hit = true;
            }
            k += 3;
        } else {
            if p[k] == c {
                hit = true;
            }
            k += 1;
        }
    }
    None
}

fn trim(s: &str, pat: &str, suffix: bool, longest: bool) -> String {
    let idx: Vec<usize> = s.char_indices().map(|(i, _)| i).chain([s.len()]).collect();
    if suffix {
        let order: Vec<usize> = if longest { idx.clone() } else { idx.iter().rev().copied().collect() };
        for i in order {
            if glob_match(pat, &s[i..]) {
                return s[..i].to_string();
            }
        }
    } else {
        let order: Vec<usize> = if longest { idx.iter().rev().copied().collect() } else { idx.clone() };
        for i in order {
            if glob_match(pat, &s[..i]) {
                return s[i..].to_string();
            }
        }
    }
    s.to_string()
}

/// Shell arithmetic over i64 (`$((…))`, `let`, array subscripts): + - * / % ** << >>
/// comparisons, && || ! and parentheses; names read variables.
pub fn arith(expr: &str, p: &Process) -> Result<i64, String> {
    let toks: Vec<char> = expr.chars().collect();
    let mut a = Arith { t: &toks, i: 0, p, depth: 0 };
    let v = a.expr(0)?;
    a.ws();
    if a.i < toks.len() {
        return Err(format!("unexpected {:?}", toks[a.i..].iter().collect::<String>()));
    }
    Ok(v)
}

struct Arith<'a> {
    t: &'a [char],
    i: usize,
    p: &'a Process,
    depth: usize,
}

impl Arith<'_> {
    fn ws(&mut self) {
        while self.t.get(self.i).is_some_and(|c| c.is_whitespace()) {
            self.i += 1;
        }
    }
    fn op(&mut self) -> Option<(&'static str, u8)> {
        self.ws();
        const OPS: [(&str, u8); 18] = [
            ("||", 1),
            ("&&", 2),
            ("==", 3),
            ("!=", 3),
            ("<=", 4),
            (">=", 4),
            ("<<", 5),
            (">>", 5),
            ("**", 8),
            ("<", 4),
            (">", 4),
            ("+", 6),
            ("-", 6),
            ("*", 7),
            ("/", 7),
            ("%", 7),
            ("&", 2),
            ("|", 1),
        ];
        OPS.iter().find(|(o, _)| o.chars().enumerate().all(|(k, c)| self.t.get(self.i + k) == Some(&c))).copied()
    }
    fn expr(&mut self, min: u8) -> Result<i64, String> {
        self.depth += 1;
        if self.depth > 200 {
            return Err("expression nested too deeply".into());
        }
        let mut lhs = self.unary()?;
        while let Some((op, prec)) = self.op() {
            if prec < min {
                break;
            }
            self.i += op.len();
            let rhs = self.expr(if op == "**" { prec } else { prec + 1 })?;
            lhs = match op {
                "||" => i64::from(lhs != 0 || rhs != 0),
                "&&" => i64::from(lhs != 0 && rhs != 0),
                "==" => i64::from(lhs == rhs),
                "!=" => i64::from(lhs != rhs),
                "<=" => i64::from(lhs <= rhs),
                ">=" => i64::from(lhs >= rhs),
                "<" => i64::from(lhs < rhs),
                ">" => i64::from(lhs > rhs),
                "<<" => lhs.wrapping_shl(rhs as u32),
                ">>" => lhs.wrapping_shr(rhs as u32),
                "+" => lhs.wrapping_add(rhs),
                "-" => lhs.wrapping_sub(rhs),
                "*" => lhs.wrapping_mul(rhs),
                "/" | "%" if rhs == 0 => return Err("division by zero".into()),
                "/" => lhs.wrapping_div(rhs),
                "%" => lhs.wrapping_rem(rhs),
                "**" => lhs.wrapping_pow(rhs.clamp(0, 64) as u32),
                "&" => lhs & rhs,
                "|" => lhs | rhs,
                _ => lhs,
            };
        }
        self.depth -= 1;
        Ok(lhs)
    }
    fn unary(&mut self) -> Result<i64, String> {
        self.ws();
        match self.t.get(self.i) {
            Some('-') => {
                self.i += 1;
                Ok(self.unary()?.wrapping_neg())
            }
            Some('+') => {
                self.i += 1;
                self.unary()
            }
            Some('!') => {
                self.i += 1;
                Ok(i64::from(self.unary()? == 0))
            }
            Some('(') => {
                self.i += 1;
                let v = self.expr(0)?;
                self.ws();
                if self.t.get(self.i) != Some(&')') {
                    return Err("missing ')'".into());
                }
                self.i += 1;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() => {
                let mut s = String::new();
                while let Some(c) = self.t.get(self.i).filter(|c| c.is_ascii_alphanumeric()) {
                    s.push(*c);
                    self.i += 1;
                }
                let v = if let Some(h) = s.strip_prefix("0x") {
                    i64::from_str_radix(h, 16)
                } else if s.len() > 1 && s.starts_with('0') {
                    i64::from_str_radix(&s[1..], 8)
                } else {
                    s.parse::<i64>()
                };
                v.map_err(|_| format!("invalid number {s:?}"))
            }
            Some(c) if *c == '_' || c.is_ascii_alphabetic() => {
                let mut s = String::new();
                while let Some(c) = self.t.get(self.i).filter(|c| **c == '_' || c.is_ascii_alphanumeric()) {
                    s.push(*c);
                    self.i += 1;
                }
                let v = self.p.var(&s).unwrap_or("").trim().to_string();
                if v.is_empty() {
                    return Ok(0);
                }
                if self.depth > 100 {
                    return Err("expression recursion level exceeded".into());
                }
                let mut inner = Arith { t: &v.chars().collect::<Vec<_>>(), i: 0, p: self.p, depth: self.depth + 20 }.expr(0);
                if let Ok(x) = &mut inner {
                    return Ok(*x);
                }
                inner
            }
            Some(c) => Err(format!("unexpected {c:?}")),
            None => Err("missing operand".into()),
        }
    }
}

#[cfg(test)]
mod tests;
