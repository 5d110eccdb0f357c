//! `kubectl exec` (`k8s.io/kubectl/pkg/cmd/exec`): the client finds the pod and the
//! container, the API server authorizes `create pods/exec`, the node's kubelet runs the
//! command; its output and exit code come back.

use super::logs::{default_container, pod_for_target};
use super::*;
use crate::apiserver::ExecOutput;

/// What the client asks the kubelet to run.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecTarget {
    pub namespace: String,
    pub pod: String,
    pub container: String,
    pub argv: Vec<String>,
    /// Lines kubectl prints before the command's (`Defaulted container ...`).
    pub notes: Vec<String>,
    /// `-i`: the client passes its stdin to the command.
    pub stdin: bool,
    /// `-t`: stdin is a terminal.
    pub tty: bool,
}

pub use crate::foundation::pod::interactive_shell;

/// Parse `kubectl exec [-it] POD|TYPE/NAME [-c C] -- COMMAND [ARGS...]`, look the pod up
/// and send the `pods/exec` request. Errors are kubectl's lines.
pub fn exec_prepare(api: &mut ApiServer, creds: &Credentials, line: &str) -> Result<ExecTarget, Vec<String>> {
    let words = split_args(line).map_err(|e| vec![format!("error: {e}")])?;
    let words: Vec<String> = words.into_iter().skip_while(|a| a == "kubectl").collect();
    // Flags as `--NAME=VALUE` (words after `--` as they were).
    let words = super::flags::check(&words)?;
    let mut words = words[1..].to_vec();
    let argv = match words.iter().position(|w| w == "--") {
        Some(i) => {
            let rest = words.split_off(i);
            rest[1..].to_vec()
        }
        None => vec![],
    };
    let mut container: Option<String> = None;
    let mut ns: Option<String> = None;
    let mut positional = Vec::new();
    let (mut stdin, mut tty) = (false, false);
    let mut it = words.into_iter();
    while let Some(w) = it.next() {
        match w.as_str() {
            "-c" | "--container" => container = it.next(),
            "-n" | "--namespace" => ns = it.next(),
            "-i" | "--stdin" | "--stdin=true" => stdin = true,
            "-it" | "-ti" => (stdin, tty) = (true, true),
            "-t" | "--tty" | "--tty=true" => tty = true,
            "-q" | "--quiet" | "--stdin=false" | "--tty=false" => {}
            // The caller has already applied who the line runs as.
            s if ["--quiet=", "--as=", "--as-group=", "--token="].iter().any(|p| s.starts_with(p)) => {}
            s if s.starts_with("--container=") => container = Some(s["--container=".len()..].to_string()),
            s if s.starts_with("--namespace=") => ns = Some(s["--namespace=".len()..].to_string()),
            s if s.starts_with("-c") && s.len() > 2 => container = Some(s[2..].to_string()),
            s if s.starts_with('-') => return Err(vec![format!("error: unknown shorthand flag: {:?} in {s}", s.chars().nth(1).unwrap_or('-'))]),
            _ => positional.push(w),
        }
    }
    let Some(target) = positional.first().cloned() else {
        return Err(vec!["error: pod, type/name or --filename must be specified".into()]);
    };
    if positional.len() > 1 {
        return Err(vec!["error: exec [POD] [COMMAND] is not supported anymore. Use exec [POD] -- [COMMAND] instead".into()]);
    }
    if argv.is_empty() {
        return Err(vec!["error: you must specify at least one command for the container".into()]);
    }
    let ns = ns.unwrap_or_else(|| "default".into());
    let mut notes = Vec::new();
    let pod = pod_for_target(api, creds, &target, &ns, &mut notes)?;
    let phase = get_str(&pod, &["status", "phase"]).unwrap_or("");
    if phase == "Succeeded" || phase == "Failed" {
        return Err(vec![format!("error: cannot exec into a container in a completed pod; current phase is {phase}")]);
    }
    let container = default_container(&pod, container.as_deref(), &mut notes);
    let name = api::name(&pod).to_string();
    let r = api.handle(Request::new(Verb::Create, api::rid::POD, &ns, &name, creds.clone()).with_sub("exec"));
    if let Err(s) = r {
        notes.push(s.kubectl_message(None, ""));
        return Err(notes);
    }
    // Without -i, -t is dropped without a word (`SetupTTY`).
    Ok(ExecTarget { namespace: ns, pod: name, container, argv, notes, stdin, tty: tty && stdin })
}

/// What kubectl prints after the kubelet answered.
pub fn exec_finish(target: &ExecTarget, result: Result<ExecOutput, Status>) -> Vec<String> {
    let mut out = target.notes.clone();
    match result {
        Ok((lines, code)) => {
            out.extend(lines.iter().map(|(_, l)| crate::apiserver::output_text(l)));
            if code != 0 {
                out.push(format!("command terminated with exit code {code}"));
            }
        }
        Err(s) => out.push(format!("error: {}", s.message)),
    }
    out
}

/// What `kubectl attach` connects to.
#[derive(Debug, Clone, PartialEq)]
pub struct AttachTarget {
    pub namespace: String,
    pub pod: String,
    pub container: String,
    /// `-i`: the terminal's input goes to the container; without it, only its output
    /// comes back.
    pub stdin: bool,
    pub tty: bool,
    pub quiet: bool,
    /// Lines kubectl prints before attaching (`Defaulted container ...`, a TTY warning).
    pub notes: Vec<String>,
}

/// Parse `kubectl attach POD|TYPE/NAME [-c C] -i [-t] [-q]`, look the pod up and send the
/// `pods/attach` request (`k8s.io/kubectl/pkg/cmd/attach`). Errors are kubectl's lines.
pub fn attach_prepare(api: &mut ApiServer, creds: &Credentials, ns: &str, line: &str) -> Result<AttachTarget, Vec<String>> {
    let words = split_args(line).map_err(|e| vec![format!("error: {e}")])?;
    let words: Vec<String> = words.into_iter().skip_while(|a| a == "kubectl").collect();
    let words = super::flags::check(&words)?;
    let f = parse_flags(&words[1..]).map_err(|e| vec![format!("error: {e}")])?;
    let Some(target) = f.positional.first().cloned() else {
        return Err(vec!["error: at least 1 argument is required for attach".into()]);
    };
    if f.positional.len() > 1 {
        return Err(vec!["error: expected POD, TYPE/NAME, or TYPE NAME, (at most 2 arguments) saw 2: [".to_string() + &f.positional.join(" ") + "]"]);
    }
    let ns = f.namespace.clone().unwrap_or_else(|| ns.to_string());
    let (stdin, mut tty, quiet) = (switch(&f, "--stdin"), switch(&f, "--tty"), switch(&f, "--quiet"));
    let mut notes = Vec::new();
    let pod = pod_for_target(api, creds, &target, &ns, &mut notes)?;
    let phase = get_str(&pod, &["status", "phase"]).unwrap_or("");
    if phase == "Succeeded" || phase == "Failed" {
        return Err(vec![format!("error: cannot attach a container in a completed pod; current phase is {phase}")]);
    }
    let mut quiet_notes = Vec::new();
    let container = default_container(&pod, f.get("--container"), &mut quiet_notes);
    if !quiet {
        notes.extend(quiet_notes);
    }
    let spec = api::get_array(&pod, &["spec", "containers"]).iter().find(|c| get_str(c, &["name"]) == Some(container.as_str())).cloned();
    let Some(spec) = spec else {
        return Err(vec![format!("error: cannot attach to the container: container {container} is not valid for pod {}", api::name(&pod))]);
    };
    let allocated = spec.get("tty").and_then(Value::as_bool) == Some(true);
    if tty && !allocated {
        if !quiet {
            notes.push(format!("error: Unable to use a TTY - container {container} did not allocate one"));
        }
        tty = false;
    } else if allocated {
        tty = true;
    }
    let name = api::name(&pod).to_string();
    if let Err(s) = api.handle(Request::new(Verb::Create, api::rid::POD, &ns, &name, creds.clone()).with_sub("attach")) {
        notes.push(s.kubectl_message(None, ""));
        return Err(notes);
    }
    Ok(AttachTarget { namespace: ns, pod: name, container, stdin, tty, quiet, notes })
}
