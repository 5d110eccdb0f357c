//! Exec sessions with stdin (`kubectl exec -i`, a client's `stdin=true`): the command
//! runs as stdin arrives, as the kubelet's streaming server runs it. A shell that reads its
//! commands from stdin (`sh`, `bash`) runs each whole command line as it comes, keeping
//! its variables and working directory from one to the next; `exit` or the end of stdin
//! ends it. Any other command reads the stream: `cat` copies what has come as it comes,
//! `read` takes a line when one is whole, and programs that need all of their input wait
//! for its end. Output and the exit code go back step by step.

use super::shell::{compile, Outcome, Process, Program, OPS_PER_CALL};
use super::{runtime, Key, Kubelets, Start};
use crate::apiserver::trace::Flow;
use crate::apiserver::{ExecInput, ExecProgress};
use crate::foundation::pod::interactive_shell;
use crate::foundation::status::Status;
use crate::loops::Cx;

/// The most of an unfinished command line an interactive shell holds (an unterminated
/// quote, a `then` with no `fi`): past it the text is dropped, with a message.
pub const MAX_PENDING: usize = 64 * 1024;
/// What a session's shell says when one of its commands read stdin.
pub const NO_STDIN: &str =
    "kubeloop: a command of this interactive shell read stdin, which holds the shell's next command lines; kubeloop gave it none (end of input)";

#[derive(Clone)]
pub(super) struct Session {
    key: Key,
    container: String,
    proc: Box<Process>,
    /// For a shell reading its commands: what has come of the next command line.
    repl: Option<String>,
    /// How much of it is known not to end a command (each line is parsed once).
    tried: usize,
}

/// What the kubelet answers an attach to a container whose process does not read a
/// shell's commands from stdin.
const NOT_ATTACHABLE: &str = "kubeloop attaches only to a container whose command is a shell reading stdin (stdin: true), as kubectl run -it makes: container {container} is not one; kubectl logs shows what it writes";

/// Where the ids of the sessions of attachable containers start (the API server's exec
/// sessions count from 1).
pub(super) const ATTACH_IDS: u64 = 1 << 62;

impl Session {
    /// A shell reading its commands from stdin, as the main process of container
    /// `container`.
    pub(super) fn reading_commands(key: Key, container: String, proc: Box<Process>) -> Session {
        Session { key, container, proc, repl: Some(String::new()), tried: 0 }
    }

    /// What a terminal shows before the next line: an interactive shell's prompt, nothing
    /// for any other command.
    pub(super) fn prompt(&self) -> String {
        if self.repl.is_some() {
            self.proc.prompt()
        } else {
            String::new()
        }
    }
}

impl Kubelets {
    /// A client attached to a container's stdin (`pods/attach`): Start checks that its
    /// process reads stdin, Stdin runs what comes, Eof (the client closed stdin, as with
    /// `stdinOnce`) ends it, End detaches and leaves it running. What the shell writes is
    /// the container's output (its log too); when it exits, so does the container.
    pub(super) fn attach_step(&mut self, cx: &mut Cx, namespace: &str, pod: &str, container: &str, input: ExecInput) -> Result<ExecProgress, Status> {
        let (ni, key, i) = self.running_container(cx, namespace, pod, container)?;
        // Output alone needs no attachable process; anything else needs the container's.
        let id = if matches!(input, ExecInput::Output) {
            None
        } else {
            let instance = self.nodes[ni].pods[&key].ctrs[i].instance;
            let Some(&(_, id)) = self.attach.get(&(key.clone(), container.to_string())).filter(|(inst, _)| *inst == instance) else {
                return Err(Status::bad_request(NOT_ATTACHABLE.replace("{container}", container)));
            };
            Some(id)
        };
        let what = match input {
            ExecInput::Start { .. } => "attaches to",
            ExecInput::Stdin(_) => "writes to the stdin of",
            ExecInput::Eof => "closes the stdin of",
            ExecInput::End => "detaches from",
            ExecInput::Output => "streams the output of",
        };
        cx.trace(
            Flow::Runtime,
            "attach",
            format!("Pod/{namespace}/{pod}"),
            "ok",
            "",
            format!("kubelet on {} {what} container {container}", self.nodes[ni].name),
        );
        let Some(id) = id else { return Ok(ExecProgress::default()) };
        let step = match input {
            ExecInput::Start { .. } | ExecInput::End | ExecInput::Output => return Ok(ExecProgress::default()),
            other => self.session_step(cx, namespace, pod, id, other)?,
        };
        if let Some(rt) = self.nodes[ni].pods.get_mut(&key) {
            let ctr = &mut rt.ctrs[i];
            for (_, l) in &step.lines {
                ctr.logs.push(l.clone());
                ctr.log_times.push(cx.now);
            }
        }
        if let Some(code) = step.exit {
            self.attach.remove(&(key.clone(), container.to_string()));
            self.exited(cx, ni, &key, i, i64::from(code), if code == 0 { "Completed" } else { "Error" }, None);
        }
        Ok(step)
    }

    pub(super) fn session_step(&mut self, cx: &mut Cx, namespace: &str, pod: &str, id: u64, input: ExecInput) -> Result<ExecProgress, Status> {
        match input {
            ExecInput::Start { container, argv } => {
                let (ni, key, i) = self.exec_target(cx, namespace, pod, container, argv, ", with stdin")?;
                let c = &self.nodes[ni].pods[&key].ctrs[i];
                let env = c.proc.as_ref().map(|p| p.env()).unwrap_or_default();
                let b = c.behaviour.clone().unwrap_or_default();
                let mut proc = match runtime::start(argv, &env, &b) {
                    Start::Run(p) => p,
                    Start::NotFound(_) => {
                        // containerd's words, as for an exec without stdin.
                        let first = argv.first().cloned().unwrap_or_default();
                        let exec_id = self.exec_id();
                        return Err(Status::new(
                            500,
                            "InternalError",
                            format!("Internal error occurred: error executing command in container: failed to exec in container: failed to start exec {exec_id:?}: OCI runtime exec failed: exec failed: unable to start container process: exec: {first:?}: executable file not found in $PATH: unknown"),
                        ));
                    }
                };
                let repl = interactive_shell(argv);
                if repl {
                    proc = Box::new(Process::new(Program::default(), &argv[0], vec![], &env, proc.flavour));
                } else {
                    proc.open_stdin();
                }
                self.sessions.insert(id, Session { key, container: container.to_string(), proc, repl: repl.then(String::new), tried: 0 });
                if repl {
                    return Ok(ExecProgress::default());
                }
                self.session_run(cx, id)
            }
            ExecInput::Stdin(text) => {
                let s = self.session(id)?;
                match &mut s.repl {
                    Some(pending) => {
                        pending.push_str(text);
                        self.session_lines(cx, id, false)
                    }
                    None => {
                        s.proc.feed_stdin(text);
                        self.session_run(cx, id)
                    }
                }
            }
            ExecInput::Eof => {
                let s = self.session(id)?;
                if s.repl.is_some() {
                    return self.session_lines(cx, id, true);
                }
                s.proc.close_stdin();
                self.session_run(cx, id)
            }
            ExecInput::End => {
                self.sessions.remove(&id);
                Ok(ExecProgress { lines: vec![], exit: Some(137) })
            }
            // Only `attach` streams a container's output alone; an exec has nothing to add.
            ExecInput::Output => Ok(ExecProgress::default()),
        }
    }

    fn session(&mut self, id: u64) -> Result<&mut Session, Status> {
        self.sessions.get_mut(&id).ok_or_else(|| Status::bad_request("the exec session has ended".to_string()))
    }

    /// Run the session's process until it waits for stdin or ends.
    fn session_run(&mut self, cx: &mut Cx, id: u64) -> Result<ExecProgress, Status> {
        let Some(mut s) = self.sessions.remove(&id) else { return Err(Status::bad_request("the exec session has ended".to_string())) };
        let Some(ni) = self.nodes.iter().position(|n| n.pods.contains_key(&s.key)) else {
            return Ok(ExecProgress { lines: vec![], exit: Some(137) });
        };
        let Some(i) = self.nodes[ni].pods[&s.key].ctrs.iter().position(|c| c.name == s.container) else {
            return Ok(ExecProgress { lines: vec![], exit: Some(137) });
        };
        let (mut out, mut streams) = (Vec::new(), Vec::new());
        let key = s.key.clone();
        let outcome = self.in_container(cx.now, ni, &key, i, Some((&mut out, &mut streams)), |host, _| s.proc.run_to_end(host, OPS_PER_CALL));
        self.after_exec(cx, ni, &key, i);
        let lines = out.into_iter().zip(streams.into_iter().chain(std::iter::repeat(1))).map(|(l, st)| (st, l)).collect();
        let exit = match outcome {
            Some(Outcome::Exit(c)) => Some(c),
            Some(Outcome::OomKilled) => Some(137),
            None => Some(137),
            // Waiting for stdin, or out of this step's budget: it goes on at the next step.
            Some(Outcome::Wait | Outcome::Sleep(_) | Outcome::Serve(_)) => None,
        };
        if exit.is_none() {
            self.sessions.insert(id, s);
        }
        Ok(ExecProgress { lines, exit })
    }

    /// An interactive shell: run every whole command line that has come, one after the
    /// other; at the end of stdin, what is left, then exit with the last status.
    fn session_lines(&mut self, cx: &mut Cx, id: u64, eof: bool) -> Result<ExecProgress, Status> {
        let mut progress = ExecProgress::default();
        loop {
            let s = self.session(id)?;
            let pending = s.repl.clone().unwrap_or_default();
            // The shortest run of whole lines that parses is the next command.
            let mut next = None;
            let tried = s.tried;
            for (end, _) in pending.match_indices('\n').filter(|(end, _)| *end >= tried) {
                let text = &pending[..=end];
                match compile(text) {
                    Ok(prog) => {
                        next = Some((end + 1, Ok(prog)));
                        break;
                    }
                    Err(e) if e.what.contains("end of file") || e.what.contains("unterminated") => {
                        s.tried = end + 1;
                        continue;
                    }
                    Err(e) => {
                        next = Some((end + 1, Err(e)));
                        break;
                    }
                }
            }
            if next.is_none() && eof && !pending.trim().is_empty() {
                next = Some((pending.len(), compile(&pending)));
            }
            let Some((used, prog)) = next else {
                if pending.len() > MAX_PENDING {
                    s.repl = Some(String::new());
                    s.tried = 0;
                    progress.lines.push((2, format!("kubeloop: the unfinished command line passed {MAX_PENDING} bytes and was dropped")));
                }
                if eof {
                    let code = s.proc.status();
                    self.sessions.remove(&id);
                    progress.exit = Some(code);
                }
                return Ok(progress);
            };
            s.repl = Some(pending[used..].to_string());
            s.tried = 0;
            match prog {
                Ok(prog) => s.proc.run_next(prog),
                Err(e) => {
                    let msg = super::shell::applets::syntax_message(&s.proc, "", &e);
                    progress.lines.push((2, msg.trim_end().to_string()));
                    continue;
                }
            }
            if cx.tracing() {
                let line = pending[..used].trim().to_string();
                let pod = format!("Pod/{}/{}", s.key.0, s.key.1);
                cx.trace(Flow::Runtime, "exec", pod, "ok", "", format!("the session's shell runs `{line}`"));
            }
            let step = self.session_run(cx, id)?;
            progress.lines.extend(step.lines);
            if let Some(s) = self.sessions.get_mut(&id) {
                if s.proc.take_stdin_wanted() {
                    progress.lines.push((2, NO_STDIN.to_string()));
                }
            }
            if step.exit.is_some() {
                progress.exit = step.exit;
                return Ok(progress);
            }
        }
    }
}
