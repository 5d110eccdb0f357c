//! The terminal attached to a command's stdin: `kubectl exec -i POD -- COMMAND` streams
//! what the terminal sends to the command, as the kubelet's streaming server runs it. With
//! a here-document the command reads it and then the end of its input, as
//! `kubectl exec -i … <<EOF` does in a shell; in the page's terminal (`interactive`) the
//! terminal stays attached and each line typed goes to the command (an interactive shell
//! runs it and shows its prompt) until the command exits or the person sends the end of
//! input (Ctrl+D).

use super::*;
use crate::apiserver::{ExecInput, ExecProgress};
use crate::foundation::value::Value;
use crate::kubectl::run::{RunAttach, WaitFor};

/// The notes `kubectl attach` and `run -i` print on attaching (unless `-q`).
const RECORDED: &str =
    "All commands and output from this session will be recorded in container logs, including credentials and sensitive information passed through the command prompt.";
const PRESS_ENTER: &str = "If you don't see a command prompt, try pressing enter.";

/// A `kubectl run -i` under way.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    user: String,
    command: String,
    creds: Credentials,
    run: RunAttach,
    heredoc: Option<String>,
    stage: Stage,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Stage {
    /// Waiting for the pod to run and be ready, until the deadline.
    Starting(Millis),
    Attached,
    /// The session is over: waiting for the pod to end.
    Ending,
}

/// The command the terminal is attached to.
#[derive(Debug, Clone, PartialEq)]
pub struct Attached {
    pub namespace: String,
    pub pod: String,
    /// `-t`: the person's terminal is the command's (a shell prints its prompt).
    pub tty: bool,
    pub to: Target,
    /// What kubectl prints when the session is over (`kubectl attach`'s way back).
    pub ended: Vec<String>,
}

/// What the terminal's stdin reaches.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A command `kubectl exec -i` started: the exec session's id.
    Exec(u64),
    /// A container's own process (`kubectl attach -i`, `kubectl run -i`).
    Container(String),
}

impl Cluster {
    /// `kubectl exec -i`: start the command with stdin; a here-document is all of its
    /// input, else (in the page) the terminal stays attached to it.
    pub(super) fn exec_stdin(&mut self, target: crate::kubectl::ExecTarget, heredoc: Option<String>) -> Vec<String> {
        let mut out = target.notes.clone();
        if target.tty && heredoc.is_some() {
            out.push("Unable to use a TTY - input is not a terminal or the right kind of file".into());
        }
        let id = self.next_session_id();
        let (ns, pod) = (target.namespace.clone(), target.pod.clone());
        let start = self.exec_session(&ns, &pod, id, ExecInput::Start { container: &target.container, argv: &target.argv });
        if self.stream(&mut out, start) {
            return out;
        }
        match heredoc {
            Some(text) => {
                let fed = self.exec_session(&ns, &pod, id, ExecInput::Stdin(&text));
                if !self.stream(&mut out, fed) {
                    let end = self.exec_session(&ns, &pod, id, ExecInput::Eof);
                    self.stream(&mut out, end);
                }
            }
            None if self.interactive => self.attached = Some(Attached { namespace: ns, pod, tty: target.tty, to: Target::Exec(id), ended: vec![] }),
            // Nothing more can come (a scenario step, `kubeloop serve`'s terminal): stdin
            // ends at once, as from /dev/null.
            None => {
                let end = self.exec_session(&ns, &pod, id, ExecInput::Eof);
                self.stream(&mut out, end);
            }
        }
        out
    }

    /// A line typed into the attached command's stdin (None: the end of input, Ctrl+D).
    pub(super) fn stdin_line(&mut self, text: Option<&str>) -> Vec<String> {
        let Some(a) = self.attached.clone() else {
            return vec!["kubeloop: the terminal is not attached to any command".into()];
        };
        let mut out = Vec::new();
        let line = text.map(|t| format!("{t}\n"));
        let input = match &line {
            Some(l) => ExecInput::Stdin(l),
            None => ExecInput::Eof,
        };
        let (step, exec) = match &a.to {
            Target::Exec(id) => (self.exec_session(&a.namespace, &a.pod, *id, input), true),
            Target::Container(container) => (self.attach_session(&a.namespace, &a.pod, container, input), false),
        };
        if self.stream_of(&mut out, step, exec) {
            out.extend(a.ended);
            self.attached = None;
        }
        out
    }

    /// A terminal line apart: the command, its here-document, who it runs as (after its
    /// `--as`, `--token`) and the current context's namespace; Err is what kubectl prints.
    fn terminal_line(&mut self, credentials: &Credentials, line: &str) -> Result<(String, Option<String>, Credentials, String), Vec<String>> {
        self.api.now = self.now;
        let (line, heredoc) = crate::kubectl::heredoc(line);
        let creds = crate::kubectl::line_identity(&self.api, credentials, &self.kubeconfig, &line)?;
        Ok((line, heredoc, creds, self.kubeconfig.namespace().to_string()))
    }

    /// `kubectl attach -i POD`: the terminal's stdin goes to the container's own process.
    pub(super) fn attach_line(&mut self, credentials: &Credentials, line: &str) -> Vec<String> {
        let (line, heredoc, creds, ns) = match self.terminal_line(credentials, line) {
            Ok(t) => t,
            Err(e) => return e,
        };
        let t = match crate::kubectl::attach_prepare(&mut self.api, &creds, &ns, &line) {
            Ok(t) => t,
            Err(e) => return e,
        };
        let mut out = t.notes.clone();
        if !t.stdin {
            // The container's output from now on, followed by the terminal.
            if let Err(s) = self.attach_session(&t.namespace, &t.pod, &t.container, ExecInput::Output) {
                out.push(format!("error: {}", s.message));
                return out;
            }
            if !t.quiet {
                out.push(RECORDED.into());
                out.push(PRESS_ENTER.into());
            }
            self.following = Some(crate::kubectl::LogFollow::from_now(&self.api, self.kubelet(), &t.namespace, &t.pod, &t.container));
            return out;
        }
        if t.tty && heredoc.is_some() && !t.quiet {
            out.push("Unable to use a TTY - input is not a terminal or the right kind of file".into());
        }
        if let Err(s) = self.attach_session(&t.namespace, &t.pod, &t.container, ExecInput::Start { container: &t.container, argv: &[] }) {
            out.push(format!("error: {}", s.message));
            return out;
        }
        if !t.quiet {
            out.push(RECORDED.into());
            out.push(PRESS_ENTER.into());
        }
        let tty = t.tty && heredoc.is_none();
        let ended = if tty && !t.quiet {
            vec![format!("Session ended, resume using 'kubectl attach {} -c {} -n {} -i -t' command", t.pod, t.container, t.namespace)]
        } else {
            vec![]
        };
        self.attached = Some(Attached { namespace: t.namespace, pod: t.pod, tty, to: Target::Container(t.container), ended });
        out.extend(self.feed(heredoc.as_deref()));
        out
    }

    /// What the attached command gets next: a here-document line by line and then the end
    /// of its input; without one, the end at once unless a person types at this terminal.
    fn feed(&mut self, heredoc: Option<&str>) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(text) = heredoc {
            for l in text.lines() {
                if self.attached.is_some() {
                    out.extend(self.stdin_line(Some(l)));
                }
            }
        }
        if self.attached.is_some() && (heredoc.is_some() || !self.interactive) {
            out.extend(self.stdin_line(None));
        }
        out
    }

    /// A step of a client attached to a container's process: the API server authorized
    /// `create pods/attach` when it began; the node's kubelet feeds the process.
    pub fn attach_session(&mut self, namespace: &str, pod: &str, container: &str, input: ExecInput) -> Result<ExecProgress, Status> {
        self.api.now = self.now;
        let mut result = None;
        for i in 0..self.controllers.len() {
            if result.is_some() || !self.running[i] {
                continue;
            }
            self.with_controller(i, |c, cx| result = c.attach(cx, namespace, pod, container, input));
        }
        self.dispatch();
        result.unwrap_or_else(|| Err(Status::bad_request("unable to upgrade connection: the kubelet is not running".to_string())))
    }

    /// `kubectl debug`: what it printed now; with `-i` the terminal attaches once the
    /// debug container runs.
    pub(super) fn debug_line(&mut self, user: String, credentials: &Credentials, line: &str) -> Vec<String> {
        let (line, heredoc, creds, ns) = match self.terminal_line(credentials, line) {
            Ok(t) => t,
            Err(e) => return e,
        };
        let (out, attach) = crate::kubectl::debug::debug(&mut self.api, &creds, &ns, &line);
        self.dispatch();
        if let Some(run) = attach {
            self.start_run(user, format!("kubectl {line}"), creds, run, heredoc, 60_000);
        }
        out
    }

    /// Whether a `kubectl run -i` is still under way (waiting, attached or ending).
    pub fn run_pending(&self) -> bool {
        self.run.is_some()
    }

    /// `kubectl run -i`'s pod was created: attach once it runs and is ready.
    pub(super) fn start_run(&mut self, user: String, command: String, creds: Credentials, run: RunAttach, heredoc: Option<String>, timeout: Millis) {
        let deadline = self.now + timeout;
        self.push(deadline, Task::WaitDeadline, false);
        self.run = Some(Run { user, command, creds, run, heredoc, stage: Stage::Starting(deadline) });
    }

    /// Where a `kubectl run -i` stands, looked at after every task: attach once its pod is
    /// running and ready (`podRunningAndReady`), or give up at the timeout; once the session
    /// is over, wait for a pod that does not restart to end, then delete it (`--rm`).
    pub(super) fn poll_run(&mut self) {
        let Some(mut r) = self.run.take() else { return };
        let pod = self.api.store.get_by(rid::POD, &r.run.namespace, &r.run.pod).cloned();
        let phase = pod.as_ref().and_then(|p| api::get_str(p, &["status", "phase"])).unwrap_or("").to_string();
        let mut out = Vec::new();
        // The container's state, for a debug container (`waitForContainer`).
        let list = if r.run.wait == WaitFor::Ephemeral { "ephemeralContainerStatuses" } else { "containerStatuses" };
        let state = pod.as_ref().and_then(|p| {
            let st = api::get_array(p, &["status", list]).iter().find(|c| api::get_str(c, &["name"]) == Some(r.run.container.as_str())).cloned()?;
            st.get("state").cloned()
        });
        let started = state.as_ref().is_some_and(|s| s.get("running").is_some());
        let ended = state.as_ref().is_some_and(|s| s.get("terminated").is_some());
        let done = match r.stage {
            Stage::Starting(deadline) => {
                let ready = match r.run.wait {
                    WaitFor::PodReady => pod.as_ref().is_some_and(|p| phase == "Running" && crate::foundation::pod::pod_is_ready(p)),
                    WaitFor::Container | WaitFor::Ephemeral => started,
                };
                let completed = match r.run.wait {
                    WaitFor::PodReady => phase == "Succeeded" || phase == "Failed",
                    WaitFor::Container | WaitFor::Ephemeral => ended || phase == "Succeeded" || phase == "Failed",
                };
                if ready {
                    let (lines, attached) = self.attach_run(&r);
                    out.extend(lines);
                    if self.attached.is_some() {
                        r.stage = Stage::Attached;
                        false
                    } else if attached {
                        self.after_session(&mut r, &mut out)
                    } else {
                        // Fell back to the log: the end as for a pod that completed.
                        r.stage = Stage::Ending;
                        self.ending(&r, &phase, &mut out)
                    }
                } else if completed {
                    // `ErrPodCompleted`: what it wrote, then the end as after a session.
                    out.extend(self.container_log(&r));
                    r.stage = Stage::Ending;
                    self.ending(&r, &phase, &mut out)
                } else if self.now >= deadline {
                    out.push("error: timed out waiting for the condition".into());
                    out.extend(self.delete_run_pod(&r));
                    true
                } else {
                    false
                }
            }
            Stage::Attached => {
                if self.attached.is_some() {
                    false
                } else {
                    self.after_session(&mut r, &mut out)
                }
            }
            Stage::Ending => self.ending(&r, &phase, &mut out),
        };
        if !out.is_empty() {
            self.printed.extend(out.iter().cloned());
            self.record_output(r.user.clone(), r.command.clone(), out);
        }
        if !done {
            self.run = Some(r);
        }
    }

    /// Attach to the run's container: kubectl first prints what it wrote so far, then its
    /// notes; the API server authorizes `create pods/attach`, the kubelet connects.
    fn attach_run(&mut self, r: &Run) -> (Vec<String>, bool) {
        let mut out = self.container_log(r);
        let req = Request::new(crate::apiserver::Verb::Create, rid::POD, &r.run.namespace, &r.run.pod, r.creds.clone()).with_sub("attach");
        let attached = self
            .request(req)
            .and_then(|_| self.attach_session(&r.run.namespace, &r.run.pod, &r.run.container, ExecInput::Start { container: &r.run.container, argv: &[] }));
        if let Err(s) = attached {
            out.push(format!("warning: couldn't attach to pod/{}, falling back to streaming logs: {}", r.run.pod, s.message));
            return (out, false);
        }
        if !r.run.quiet {
            out.push(RECORDED.into());
            out.push(PRESS_ENTER.into());
        }
        let to = Target::Container(r.run.container.clone());
        self.attached = Some(Attached { namespace: r.run.namespace.clone(), pod: r.run.pod.clone(), tty: r.run.tty, to, ended: vec![] });
        if r.run.tty && r.heredoc.is_some() {
            out.insert(0, "Unable to use a TTY - input is not a terminal or the right kind of file".into());
        }
        out.extend(self.feed(r.heredoc.as_deref()));
        (out, true)
    }

    /// The session is over: kubectl says how to attach again; a pod that restarts is left,
    /// one that does not is waited for.
    fn after_session(&mut self, r: &mut Run, out: &mut Vec<String>) -> bool {
        if r.run.tty && !r.run.quiet {
            let (p, c, n) = (&r.run.pod, &r.run.container, &r.run.namespace);
            out.push(if r.run.wait == WaitFor::Ephemeral {
                format!("Session ended, the ephemeral container will not be restarted but may be reattached using 'kubectl attach {p} -c {c} -n {n} -i -t' if it is still running")
            } else {
                format!("Session ended, resume using 'kubectl attach {p} -c {c} -n {n} -i -t' command")
            });
        }
        // `kubectl debug` is done once the session is; `run` waits for a pod that does
        // not restart to end.
        if r.run.restart == "Always" || r.run.wait != WaitFor::PodReady {
            out.extend(self.delete_run_pod(r));
            return true;
        }
        r.stage = Stage::Ending;
        let phase = self.api.store.get_by(rid::POD, &r.run.namespace, &r.run.pod).and_then(|p| api::get_str(p, &["status", "phase"]).map(str::to_string));
        self.ending(r, phase.as_deref().unwrap_or(""), out)
    }

    /// Once the pod has ended (Never: Succeeded or Failed; OnFailure: Succeeded): delete it
    /// (`--rm`), then kubectl's error for a container that failed.
    fn ending(&mut self, r: &Run, phase: &str, out: &mut Vec<String>) -> bool {
        if r.run.wait != WaitFor::PodReady {
            return true;
        }
        let over = match r.run.restart.as_str() {
            "OnFailure" => phase == "Succeeded",
            _ => phase == "Succeeded" || phase == "Failed",
        };
        let gone = self.api.store.get_by(rid::POD, &r.run.namespace, &r.run.pod).is_none();
        if !over && !gone {
            return false;
        }
        let failed = self.api.store.get_by(rid::POD, &r.run.namespace, &r.run.pod).and_then(|p| {
            let state = api::get_array(p, &["status", "containerStatuses"]).first().and_then(|c| c.get("state")).and_then(|s| s.get("terminated")).cloned()?;
            let code = state.get("exitCode").and_then(Value::as_i64).unwrap_or(0);
            (phase == "Failed" && code != 0)
                .then(|| (api::get_str(&state, &["reason"]).unwrap_or("").to_string(), api::get_str(&state, &["message"]).unwrap_or("").to_string()))
        });
        out.extend(self.delete_run_pod(r));
        if let Some((reason, message)) = failed {
            // `fmt.Errorf("pod %s/%s terminated (%s)\n%s")`, its message only if it has one.
            out.push(format!("pod {}/{} terminated ({reason})", r.run.namespace, r.run.pod));
            if !message.is_empty() {
                out.push(message);
            }
        }
        true
    }

    /// `--rm`: kubectl deletes the pod as the user who ran it (not found is no error).
    fn delete_run_pod(&mut self, r: &Run) -> Vec<String> {
        if !r.run.rm {
            return vec![];
        }
        match self.request(Request::delete(rid::POD, &r.run.namespace, &r.run.pod, r.creds.clone())) {
            Ok(_) => vec![format!("pod {:?} deleted from {} namespace", r.run.pod, r.run.namespace)],
            Err(s) if s.code == 404 => vec![],
            Err(s) => vec![s.kubectl_message(None, "")],
        }
    }

    /// What the run's container has written so far (kubectl prints it before attaching).
    fn container_log(&mut self, r: &Run) -> Vec<String> {
        let options = crate::apiserver::LogOptions { container: Some(r.run.container.clone()), ..Default::default() };
        match self.logs(r.creds.clone(), &r.run.namespace, &r.run.pod, &options) {
            Ok(text) => text.lines().map(str::to_string).collect(),
            Err(_) => vec![],
        }
    }

    /// What the attached command shows before the next line: an interactive shell's
    /// prompt on a terminal, else nothing. None when nothing is attached.
    pub fn prompt(&self) -> Option<String> {
        let a = self.attached.as_ref()?;
        let kubelet = self.controllers.iter().find_map(|c| c.kubelet_client());
        let id = match &a.to {
            Target::Exec(id) => Some(*id),
            Target::Container(container) => kubelet.and_then(|k| k.attach_session(&a.namespace, &a.pod, container)),
        };
        let prompt = kubelet.zip(id).and_then(|(k, id)| k.session_prompt(id)).unwrap_or_default();
        Some(if a.tty { prompt } else { String::new() })
    }

    /// Add what a step of the session wrote to `out`; true once the command is over (or
    /// could not start), with kubectl's line for a failure.
    fn stream(&mut self, out: &mut Vec<String>, step: Result<ExecProgress, Status>) -> bool {
        self.stream_of(out, step, true)
    }

    /// As [`Cluster::stream`]; only an exec's end says its exit code (an attached
    /// container's is its pod's status).
    fn stream_of(&mut self, out: &mut Vec<String>, step: Result<ExecProgress, Status>, exec: bool) -> bool {
        match step {
            Ok(p) => {
                out.extend(p.lines.iter().map(|(_, l)| crate::apiserver::output_text(l)));
                match p.exit {
                    Some(0) => true,
                    Some(_) if !exec => true,
                    Some(code) => {
                        out.push(format!("command terminated with exit code {code}"));
                        true
                    }
                    None => false,
                }
            }
            Err(s) => {
                out.push(format!("error: {}", s.message));
                true
            }
        }
    }
}
