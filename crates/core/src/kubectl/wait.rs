//! `kubectl wait`: until each object named meets a condition, is deleted or exists, or the
//! timeout passes, on the simulated clock (`staging/src/k8s.io/kubectl/pkg/cmd/wait`).
//!
//! kubectl gets each object, then watches it, one object after another, each with the whole
//! `--timeout` from when its turn comes. Here [`start`] makes the first requests (a GET or
//! LIST through the API server, authorized as the user) and checks once; a [`Wait`] that is
//! not done is then polled as the simulation runs ([`Wait::poll`]), reading what the watch
//! would deliver from the store, so waiting adds no requests to the trace.

use super::{kind_prefix, targets, Flags};
use crate::apiserver::{ApiServer, Credentials, Request, Verb};
use crate::foundation::api::{self, get, get_array, get_str, resource_for_name, ResourceId, RESOURCES};
use crate::foundation::sim::{parse_duration, Millis};
use crate::foundation::value::Value;
use std::collections::VecDeque;

/// What `--for` asks.
#[derive(Debug, Clone, PartialEq)]
enum For {
    Delete,
    Create,
    /// A `status.conditions` entry's type and status (compared ignoring case).
    Condition(String, String),
    /// A JSONPath template and the value it must print (`None`: any value).
    JsonPath(String, Option<String>),
}

#[derive(Debug, Clone)]
struct Target {
    resource: ResourceId,
    namespace: String,
    name: String,
    /// For `delete`: the object seen first; another with the same name is a new object.
    uid: String,
}

/// A `kubectl wait` still waiting.
#[derive(Debug, Clone)]
pub struct Wait {
    cond: For,
    pending: VecDeque<Target>,
    /// `--for=create` waits for the named objects to exist before anything else.
    creating: Option<(ResourceId, String, Vec<String>)>,
    timeout: Millis,
    /// When the first pending object's turn began.
    since: Millis,
}

/// `kubectl wait`'s output so far, and the wait if it is not over.
pub(super) fn start(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> (Vec<String>, Option<Wait>) {
    let fail = |e: String| (vec![e], None);
    let cond = match condition(f.get("--for").unwrap_or("")) {
        Ok(c) => c,
        Err(e) => return fail(format!("error: {e}")),
    };
    let timeout = match f.get("--timeout").map(timeout) {
        None => 30_000,
        Some(Ok(t)) => t,
        Some(Err(e)) => return fail(format!("error: invalid argument {:?} for \"--timeout\" flag: {e}", f.get("--timeout").unwrap_or(""))),
    };
    let mut w = Wait { cond: cond.clone(), pending: VecDeque::new(), creating: None, timeout, since: api.now };
    if cond == For::Create {
        let Some(first) = f.positional.first() else { return fail("error: resource(s) were provided, but no name was specified".into()) };
        let (r, names) = match first.split_once('/') {
            Some((t, n)) => (resource_for_name(t), vec![n.to_string()]),
            None => (resource_for_name(first), f.positional[1..].to_vec()),
        };
        let Some(r) = r else { return fail(format!("error: the server doesn't have a resource type {first:?}")) };
        w.creating = Some((r, ns_of(r, ns), names));
        let (out, _) = w.poll_inner(api, Some(creds));
        return w.finish(out);
    }
    let all = f.get("--all").is_some_and(|v| v != "false");
    let found: Vec<(ResourceId, String)> = if all && !f.positional.iter().any(|p| p.contains('/')) {
        let Some(r) = f.positional.first().and_then(|t| resource_for_name(t)) else {
            return fail("error: you must specify the type of resource to wait for".into());
        };
        match api.handle(Request::new(Verb::List, r, &ns_of(r, ns), "", creds.clone())) {
            Ok(list) => get_array(&list, &["items"]).iter().map(|o| (r, api::name(o).to_string())).collect(),
            Err(s) => return fail(s.kubectl_message(None, "")),
        }
    } else {
        match targets(api, creds, f, ns) {
            Ok(t) => t,
            Err(e) if e.starts_with("No resources found") => vec![],
            Err(e) => return fail(e),
        }
    };
    let mut out = Vec::new();
    for (r, name) in found {
        match api.handle(Request::new(Verb::Get, r, &ns_of(r, ns), &name, creds.clone())) {
            Ok(o) => w.pending.push_back(Target { resource: r, namespace: ns_of(r, ns), name, uid: api::uid(&o).to_string() }),
            // Waiting for a deletion, what is already gone is done (and not printed).
            Err(s) if s.code == 404 && cond == For::Delete => {}
            Err(s) => {
                let (lines, _) = w.poll_inner(api, None);
                out.extend(lines);
                out.push(s.kubectl_message(None, ""));
                return (out, None);
            }
        }
    }
    if w.pending.is_empty() && cond != For::Delete {
        return fail("error: no matching resources found".into());
    }
    let (lines, _) = w.poll_inner(api, None);
    out.extend(lines);
    w.finish(out)
}

impl Wait {
    /// When the wait gives up, if nothing comes first.
    pub fn deadline(&self) -> Millis {
        self.since.saturating_add(self.timeout)
    }

    fn finish(self, out: Vec<String>) -> (Vec<String>, Option<Wait>) {
        let done = (self.pending.is_empty() && self.creating.is_none()) || out.last().is_some_and(|l| l.starts_with("error"));
        (out, if done { None } else { Some(self) })
    }

    /// As [`Wait::poll`]; with credentials, `--for=create` looks objects up through the API
    /// server (the first look, as kubectl's polling GET).
    fn poll_inner(&mut self, api: &mut ApiServer, creds: Option<&Credentials>) -> (Vec<String>, bool) {
        if let (Some((r, ns, names)), Some(creds)) = (&self.creating, creds) {
            let all_there = names.iter().all(|n| api.handle(Request::new(Verb::Get, *r, ns, n, creds.clone())).is_ok());
            if !all_there {
                return self.timed_out_unless_waiting(api.now, "error: timed out waiting for the condition".into());
            }
        }
        self.poll(api)
    }

    /// Lines printed since the last poll, and whether the wait is over.
    pub fn poll(&mut self, api: &ApiServer) -> (Vec<String>, bool) {
        let mut out = Vec::new();
        if let Some((r, ns, names)) = &self.creating {
            if !names.iter().all(|n| api.store.get_by(*r, ns, n).is_some()) {
                return self.timed_out_unless_waiting(api.now, "error: timed out waiting for the condition".into());
            }
            for n in names {
                out.push(format!("{}/{n} condition met", kind_prefix(*r)));
            }
            self.creating = None;
            return (out, true);
        }
        while let Some(t) = self.pending.front() {
            let obj = api.store.get_by(t.resource, &t.namespace, &t.name);
            let met = match &self.cond {
                For::Delete => obj.is_none_or(|o| api::uid(o) != t.uid),
                For::Create => obj.is_some(),
                For::Condition(name, status) => obj.is_some_and(|o| condition_met(o, name, status)),
                For::JsonPath(expr, want) => match obj.map(|o| super::jsonpath::render(expr, o)) {
                    Some(Ok(got)) => match want {
                        None => !got.is_empty(),
                        Some(w) => &got == w,
                    },
                    Some(Err(e)) => {
                        out.push(format!("error: {e}"));
                        return (out, true);
                    }
                    None => false,
                },
            };
            if !met {
                let msg = format!("error: timed out waiting for the condition on {}/{}", RESOURCES[t.resource].plural, t.name);
                let (lines, done) = self.timed_out_unless_waiting(api.now, msg);
                out.extend(lines);
                return (out, done);
            }
            out.push(format!("{}/{} condition met", kind_prefix(t.resource), t.name));
            self.pending.pop_front();
            self.since = api.now;
        }
        (out, true)
    }

    /// Past the deadline, kubectl's timeout error and the end; else nothing yet.
    fn timed_out_unless_waiting(&mut self, now: Millis, msg: String) -> (Vec<String>, bool) {
        if now >= self.deadline() {
            self.pending.clear();
            self.creating = None;
            (vec![msg], true)
        } else {
            (vec![], false)
        }
    }
}

fn ns_of(r: ResourceId, ns: &str) -> String {
    if RESOURCES[r].namespaced {
        ns.to_string()
    } else {
        String::new()
    }
}

/// `--for`'s value, as kubectl's `conditionFuncFor` reads it.
fn condition(s: &str) -> Result<For, String> {
    let lower = s.to_ascii_lowercase();
    if lower == "delete" {
        return Ok(For::Delete);
    }
    if lower == "create" {
        return Ok(For::Create);
    }
    if let Some(rest) = s.strip_prefix("condition=") {
        return Ok(match rest.split_once('=') {
            Some((n, v)) => For::Condition(n.to_string(), v.to_string()),
            None => For::Condition(rest.to_string(), "true".into()),
        });
    }
    if let Some(rest) = s.strip_prefix("jsonpath=") {
        // `=` splits the expression from the value; `==` inside a filter does not.
        let mut parts = vec![String::new()];
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '=' {
                if chars.peek() == Some(&'=') {
                    chars.next();
                    if let Some(p) = parts.last_mut() {
                        p.push_str("==");
                    }
                    continue;
                }
                parts.push(String::new());
                continue;
            }
            if let Some(p) = parts.last_mut() {
                p.push(c);
            }
        }
        if parts.len() > 2 {
            return Err("jsonpath wait format must be --for=jsonpath='{.status.readyReplicas}'=3 or --for=jsonpath='{.status.readyReplicas}'".into());
        }
        let expr = relaxed(&parts[0])?;
        let value = match parts.get(1) {
            None => None,
            Some(v) => {
                let v = v.trim_matches(|c| c == '\'' || c == '"');
                if v.is_empty() {
                    return Err("jsonpath wait has to have a value after equal sign, like --for=jsonpath='{.status.readyReplicas}'=3".into());
                }
                Some(v.to_string())
            }
        };
        return Ok(For::JsonPath(expr, value));
    }
    Err(format!("unrecognized condition: {s:?}"))
}

/// kubectl's `RelaxedJSONPathExpression`: `.a.b`, `a.b` and `{.a.b}` all mean `{.a.b}`.
fn relaxed(s: &str) -> Result<String, String> {
    if s.is_empty() {
        return Err("jsonpath expression cannot be empty".into());
    }
    let inner = s.strip_prefix('{').and_then(|x| x.strip_suffix('}')).unwrap_or(s);
    let inner = inner.strip_prefix('.').unwrap_or(inner);
    Ok(format!("{{.{inner}}}"))
}

/// `--timeout`: a Go duration; 0 checks once, a negative one waits a week.
fn timeout(s: &str) -> Result<Millis, String> {
    if let Some(neg) = s.strip_prefix('-') {
        return parse_duration(neg).map(|_| 7 * 24 * 3_600_000).ok_or_else(|| format!("time: invalid duration {s:?}"));
    }
    if s == "0" {
        return Ok(0);
    }
    if s.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!("time: missing unit in duration {s:?}"));
    }
    parse_duration(s).ok_or_else(|| format!("time: invalid duration {s:?}"))
}

/// kubectl's `checkCondition`: the condition of that type has that status, and it is not
/// about an older generation of the object.
fn condition_met(o: &Value, name: &str, status: &str) -> bool {
    let generation = get(o, &["metadata", "generation"]).and_then(Value::as_i64);
    get_array(o, &["status", "conditions"]).iter().find(|c| get_str(c, &["type"]).is_some_and(|t| t.eq_ignore_ascii_case(name))).is_some_and(|c| {
        let current = match (get(c, &["observedGeneration"]).and_then(Value::as_i64), generation) {
            (Some(seen), Some(g)) => seen >= g,
            _ => true,
        };
        current && get_str(c, &["status"]).is_some_and(|s| s.eq_ignore_ascii_case(status))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn for_reads_as_kubectl_reads_it() {
        assert_eq!(condition("delete"), Ok(For::Delete));
        assert_eq!(condition("Create"), Ok(For::Create));
        assert_eq!(condition("condition=Ready"), Ok(For::Condition("Ready".into(), "true".into())));
        assert_eq!(condition("condition=Ready=False"), Ok(For::Condition("Ready".into(), "False".into())));
        assert_eq!(condition("jsonpath={.status.phase}=Running"), Ok(For::JsonPath("{.status.phase}".into(), Some("Running".into()))));
        assert_eq!(condition("jsonpath=.status.readyReplicas"), Ok(For::JsonPath("{.status.readyReplicas}".into(), None)));
        assert_eq!(condition("ready"), Err("unrecognized condition: \"ready\"".into()));
        assert!(condition("jsonpath={.a}=").unwrap_err().contains("has to have a value"));
        assert!(condition("jsonpath={.a}=1=2").unwrap_err().contains("format must be"));
    }

    #[test]
    fn timeouts_are_go_durations() {
        assert_eq!(timeout("30s"), Ok(30_000));
        assert_eq!(timeout("1m30s"), Ok(90_000));
        assert_eq!(timeout("0"), Ok(0));
        assert_eq!(timeout("-1s"), Ok(604_800_000));
        assert!(timeout("30").unwrap_err().contains("missing unit"));
    }

    #[test]
    fn an_old_generations_condition_does_not_count() {
        let o = crate::foundation::value::json!({"metadata": {"generation": 2}, "status": {"conditions": [{"type": "Available", "status": "True", "observedGeneration": 1}]}});
        assert!(!condition_met(&o, "available", "true"));
        let o = crate::foundation::value::json!({"metadata": {"generation": 2}, "status": {"conditions": [{"type": "Available", "status": "True"}]}});
        assert!(condition_met(&o, "available", "true"));
    }
}
