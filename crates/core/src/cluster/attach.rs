//! The terminal attached to a command's stdin: `kubectl exec -i POD -- COMMAND` streams
//! what the terminal sends to the command, as the kubelet's streaming server runs it. With
//! a here-document the command reads it and then the end of its input, as
//! `kubectl exec -i … <<EOF` does in a shell; in the page's terminal (`interactive`) the
//! terminal stays attached and each line typed goes to the command (an interactive shell
//! runs it and shows its prompt) until the command exits or the person sends the end of
//! input (Ctrl+D).

use super::*;
use crate::apiserver::{ExecInput, ExecProgress};

/// The command the terminal is attached to.
#[derive(Debug, Clone, PartialEq)]
pub struct Attached {
    pub namespace: String,
    pub pod: String,
    pub id: u64,
    /// `-t`: the person's terminal is the command's (a shell prints its prompt).
    pub tty: bool,
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
            None if self.interactive => self.attached = Some(Attached { namespace: ns, pod, id, tty: target.tty }),
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
        let step = match text {
            Some(t) => self.exec_session(&a.namespace, &a.pod, a.id, ExecInput::Stdin(&format!("{t}\n"))),
            None => self.exec_session(&a.namespace, &a.pod, a.id, ExecInput::Eof),
        };
        if self.stream(&mut out, step) {
            self.attached = None;
        }
        out
    }

    /// What the attached command shows before the next line: an interactive shell's
    /// prompt on a terminal, else nothing. None when nothing is attached.
    pub fn prompt(&self) -> Option<String> {
        let a = self.attached.as_ref()?;
        let kubelet = self.controllers.iter().find_map(|c| c.kubelet_client());
        let prompt = kubelet.and_then(|k| k.session_prompt(a.id)).unwrap_or_default();
        Some(if a.tty { prompt } else { String::new() })
    }

    /// Add what a step of the session wrote to `out`; true once the command is over (or
    /// could not start), with kubectl's line for a failure.
    fn stream(&mut self, out: &mut Vec<String>, step: Result<ExecProgress, Status>) -> bool {
        match step {
            Ok(p) => {
                out.extend(p.lines.iter().map(|(_, l)| crate::apiserver::output_text(l)));
                match p.exit {
                    Some(0) => true,
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
