//! The subresources that are not writes of the object itself: `eviction` (with
//! PodDisruptionBudgets), `binding` (the scheduler's), `log` (read from the kubelet), and the
//! `scale` view of a workload.

use super::*;

impl ApiServer {
    /// `POST pods/NAME/eviction` (`pkg/registry/core/pod/storage/eviction.go`): a delete
    /// that a PodDisruptionBudget may refuse with 429, judged from the budget's status as
    /// the disruption controller last wrote it.
    #[inline(never)]
    pub(super) fn evict(&mut self, c: &Ctx, user: &UserInfo, res: &ResourceInfo, ns: &str, req: &Request) -> Result<Object, Status> {
        let body = req.body.clone().unwrap_or(Value::Null);
        let body_name = get_str(&body, &["metadata", "name"]).unwrap_or("");
        if !body_name.is_empty() && body_name != req.name {
            return self.fail(c, "decode", Status::bad_request("name in URL does not match name in Eviction object"));
        }
        let Some(pod) = self.store.get_by(api::rid::POD, ns, &req.name).cloned() else {
            return self.fail(c, "etcd", Status::not_found(res, &req.name));
        };
        let success = || Ok(Object::new(json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})));
        let phase = get_str(&pod, &["status", "phase"]).unwrap_or("");
        let mut del = Request::delete(req.resource, ns, &req.name, Credentials::User(user.clone()));
        del.dry_run = req.dry_run || api::get_array(&body, &["deleteOptions", "dryRun"]).iter().any(|d| d.as_str() == Some("All"));
        del.grace_period = api::get_i64(&body, &["deleteOptions", "gracePeriodSeconds"]);
        del.component = req.component.clone();
        if api::is_deleting(&pod) {
            return success();
        }
        let budgets: Vec<Object> = match phase {
            "Succeeded" | "Failed" | "Pending" => vec![],
            _ => self
                .store
                .list(api::rid::PDB, Some(ns))
                .filter(|p| crate::foundation::labels::selector_matches(get(p, &["spec", "selector"]), api::labels(&pod)))
                .cloned()
                .collect(),
        };
        if budgets.len() > 1 {
            return self.fail(
                c,
                "validation",
                Status::internal("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."),
            );
        }
        if let Some(pdb) = budgets.first() {
            if let Err(s) = self.check_and_decrement(pdb, &pod, del.dry_run) {
                return self.fail(c, "validating-admission", s);
            }
        }
        record!(self, c, Flow::Validation, "eviction", "ok", "", format!("eviction allowed ({} disruption budget(s))", budgets.len()));
        match self.delete(c, user, res, req.resource, ns, &del) {
            Ok(_) => success(),
            Err(s) => Err(s),
        }
    }

    /// `checkAndDecrement` with the unhealthy-pod policy: refuse while the budget's status
    /// is stale or allows nothing; otherwise take one disruption and record the pod in
    /// `disruptedPods` so that the controller does not count it healthy meanwhile.
    fn check_and_decrement(&mut self, pdb: &Object, pod: &Value, dry_run: bool) -> Result<(), Status> {
        let name = api::name(pdb).to_string();
        let st = |f: &str| api::get_i64(pdb, &["status", f]).unwrap_or(0);
        let too_many = |msg: String, retry: i64| {
            let mut details = json!({"causes": [{"reason": "DisruptionBudget", "message": msg}]});
            if retry > 0 {
                details["retryAfterSeconds"] = json!(retry);
            }
            Status::new(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.").with_details(details)
        };
        if st("observedGeneration") < api::generation(pdb) {
            return Err(too_many(format!("The disruption budget {name} is still being processed by the server."), 10));
        }
        // An unready pod may go while the budget is otherwise met (IfHealthyBudget), or
        // always (AlwaysAllow), without using up a disruption.
        let ready = crate::foundation::pod::pod_is_ready(pod);
        let policy = get_str(pdb, &["spec", "unhealthyPodEvictionPolicy"]).unwrap_or("IfHealthyBudget");
        if !ready && (policy == "AlwaysAllow" || (st("currentHealthy") >= st("desiredHealthy") && st("desiredHealthy") > 0)) {
            return Ok(());
        }
        let pdb_res = &RESOURCES[api::rid::PDB];
        if st("disruptionsAllowed") < 0 {
            return Err(Status::forbidden(pdb_res, &name, "pdb disruptions allowed is negative"));
        }
        if st("disruptionsAllowed") == 0 {
            return Err(too_many(
                format!("The disruption budget {name} needs {} healthy pods and has {} currently", st("desiredHealthy"), st("currentHealthy")),
                0,
            ));
        }
        if dry_run {
            return Ok(());
        }
        let mut updated = (**pdb).clone();
        let allowed = st("disruptionsAllowed") - 1;
        api::set(&mut updated, &["status", "disruptionsAllowed"], json!(allowed));
        if allowed == 0 {
            let conds: Vec<Value> = api::get_array(&updated, &["status", "conditions"])
                .iter()
                .map(|c| {
                    let mut c = c.clone();
                    if get_str(&c, &["type"]) == Some("DisruptionAllowed") && get_str(&c, &["status"]) != Some("False") {
                        c["status"] = json!("False");
                        c["reason"] = json!("InsufficientPods");
                        c["lastTransitionTime"] = json!(crate::foundation::sim::rfc3339(self.now));
                    }
                    c
                })
                .collect();
            api::set(&mut updated, &["status", "conditions"], Value::Array(conds));
        }
        api::set(&mut updated, &["status", "disruptedPods", api::name(pod)], json!(crate::foundation::sim::rfc3339(self.now)));
        let key = ObjectKey::new(api::rid::PDB, api::namespace(pdb), &name);
        match self.store_write(&key, updated, false) {
            Ok(_) => {
                self.trace.writes += 1;
                Ok(())
            }
            Err(_) => Err(Status::optimistic_lock(pdb_res, &name)),
        }
    }

    /// `POST pods/<name>/binding` (`pkg/registry/core/pod/storage/storage.go` assignPod).
    pub(super) fn bind(&mut self, c: &Ctx, user: &UserInfo, res: &ResourceInfo, ns: &str, req: &Request) -> Result<Object, Status> {
        let target = req.body.as_ref().and_then(|b| get_str(b, &["target", "name"])).unwrap_or("").to_string();
        let Some(pod) = self.store.get_by(api::rid::POD, ns, &req.name).cloned() else {
            return self.fail(c, "etcd", Status::not_found(res, &req.name));
        };
        if target.is_empty() {
            return self.fail(c, "validation", Status::invalid(res, &req.name, &[crate::foundation::status::FieldError::required("target.name", "")]));
        }
        if let Some(n) = get_str(&pod, &["spec", "nodeName"]) {
            let s = Status::conflict(res, &format!("{}/binding", req.name), &format!("pod {} is already assigned to node {n:?}", req.name));
            return self.fail(c, "etcd", s);
        }
        if api::is_deleting(&pod) {
            let s = Status::conflict(res, &format!("{}/binding", req.name), &format!("pod {} is being deleted, cannot be assigned to a host", req.name));
            return self.fail(c, "etcd", s);
        }
        let _ = user;
        record!(self, c, Flow::MutatingAdmission, "mutating-admission", "ok", "", "Binding admitted".into());
        record!(self, c, Flow::Validation, "validation", "ok", "", format!("target node {target:?}"));
        let mut p = (*pod).clone();
        api::set(&mut p, &["spec", "nodeName"], json!(target));
        set_condition(&mut p, "PodScheduled", "True", None, None, self.now);
        let key = ObjectKey::new(api::rid::POD, ns, &req.name);
        match self.store_write(&key, p, false) {
            Ok(stored) => {
                self.trace.writes += 1;
                let rv = api::resource_version(&stored).to_string();
                record!(self, c, Flow::Etcd, "etcd", "ok", &rv, format!("bound {} to {target} at resourceVersion {rv}", key.display()));
                self.log(c, 201, None);
                Ok(stored)
            }
            Err(e) => self.fail_write(c, e, Status::not_found(res, &req.name)),
        }
    }
}

/// The container a `log`, `exec` or `attach` request names (an ephemeral one too), or the
/// pod's only one, with the REST
/// storage's errors (`pkg/registry/core/pod/strategy.go` `LogLocation`, `ExecLocation`).
pub fn pod_container(obj: &Value, container: Option<&str>) -> Result<String, Status> {
    let pod = api::name(obj);
    let names = |list: &str| api::get_array(obj, &["spec", list]).iter().filter_map(|c| get_str(c, &["name"])).collect::<Vec<_>>();
    let (containers, inits, ephemeral) = (names("containers"), names("initContainers"), names("ephemeralContainers"));
    let container = match container.filter(|c| !c.is_empty()) {
        Some(c) => c.to_string(),
        None if containers.len() == 1 => containers[0].to_string(),
        None => {
            let mut msg = format!("a container name must be specified for pod {pod}, choose one of: [{}]", containers.join(" "));
            if !inits.is_empty() {
                msg.push_str(&format!(" or one of the init containers: [{}]", inits.join(" ")));
            }
            if !ephemeral.is_empty() {
                msg.push_str(&format!(" or one of the ephemeral containers: [{}]", ephemeral.join(" ")));
            }
            return Err(Status::bad_request(msg));
        }
    };
    if ![&containers, &inits, &ephemeral].iter().any(|l| l.contains(&container.as_str())) {
        return Err(Status::bad_request(format!("container {container} is not valid for pod {pod}")));
    }
    Ok(container)
}

/// The `autoscaling/v1` Scale of a workload (`GET .../scale`).
/// How the API server reaches a node's kubelet for `pods/log` (`pkg/kubelet/client`):
/// the kubelet answers with what a container wrote.
/// What `pods/exec` gives back: output lines with their stream (1 stdout, 2 stderr), and
/// the command's exit code.
pub type ExecOutput = (Vec<(u8, String)>, i32);

/// A byte of a program's output that is not UTF-8 text (`gzip`'s) rides in the text as
/// the char `RAW_BYTE + byte`, for bytes 0x80 to 0xFF.
pub const RAW_BYTE: u32 = 0x10_FF00;
/// Ends an exec output line that the program did not end with a newline.
pub const UNTERMINATED: char = '\u{10FEFF}';

/// The byte a char stands for, if it is one of [`RAW_BYTE`]'s.
pub fn raw_byte(c: char) -> Option<u8> {
    (c as u32).checked_sub(RAW_BYTE + 0x80).filter(|b| *b < 0x80).map(|b| (b + 0x80) as u8)
}

/// The char that carries `b` in output text: itself if ASCII, else [`RAW_BYTE`]'s.
pub fn byte_char(b: u8) -> char {
    if b < 0x80 {
        b as char
    } else {
        char::from_u32(RAW_BYTE + b as u32).unwrap_or('\u{FFFD}')
    }
}

/// An output line's bytes as the program wrote them: raw bytes as themselves, the rest
/// as UTF-8, the newline unless the program left it off.
pub fn output_bytes(line: &str) -> Vec<u8> {
    let (text, newline) = match line.strip_suffix(UNTERMINATED) {
        Some(t) => (t, false),
        None => (line, true),
    };
    let mut out = Vec::with_capacity(text.len() + 1);
    for c in text.chars() {
        match raw_byte(c) {
            Some(b) => out.push(b),
            None => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    if newline {
        out.push(b'\n');
    }
    out
}

/// An output line as a terminal shows it: raw bytes as U+FFFD.
pub fn output_text(line: &str) -> String {
    line.trim_end_matches(UNTERMINATED).chars().map(|c| if raw_byte(c).is_some() { '\u{FFFD}' } else { c }).collect()
}

/// One step of an exec session with stdin (`pods/exec?stdin=true`), as the kubelet's
/// streaming server sees it.
#[derive(Debug, Clone, Copy)]
pub enum ExecInput<'a> {
    /// Start the command in the container.
    Start { container: &'a str, argv: &'a [String] },
    /// Bytes the client wrote to stdin.
    Stdin(&'a str),
    /// The client closed stdin.
    Eof,
    /// The client went away: the command is killed.
    End,
    /// `kubectl attach` without `-i`: the container's output only, to whatever process it
    /// runs.
    Output,
}

/// What a session's command wrote since the last step, and its exit code once it ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExecProgress {
    pub lines: Vec<(u8, String)>,
    pub exit: Option<i32>,
}

/// What a `pods/NAME/log` request asks beyond the container (`PodLogOptions`).
#[derive(Debug, Clone, Default)]
pub struct LogOptions {
    pub container: Option<String>,
    pub previous: bool,
    /// Each line after the time the runtime received it (`2026-01-01T00:01:05.123000000Z`).
    pub timestamps: bool,
    /// Only lines written at or after this simulated time (`sinceSeconds`, `sinceTime`).
    pub since: Option<Millis>,
}

pub trait KubeletClient {
    /// A container's log, each line with the time it was written.
    fn container_logs(&self, namespace: &str, pod: &str, container: &str, previous: bool) -> Result<Vec<(Millis, String)>, Status>;
    /// What every reachable node's `/metrics/resource` endpoint reports now: its running
    /// containers' cumulative CPU time and working set (metrics-server's scrape).
    fn resource_stats(&self, now: Millis) -> Vec<super::metrics::NodeStats>;
    /// `pods/portforward`: what the pod's container listening on `port` answers to an HTTP
    /// `GET path` (status, body), or the kubelet's error for the port's error stream.
    fn port_forward(&self, now: Millis, namespace: &str, pod: &str, port: u16, path: &str) -> Result<(u16, String), String>;
    /// What a terminal attached to exec session `id` shows before its next line (an
    /// interactive shell's prompt), while the session runs.
    fn session_prompt(&self, id: u64) -> Option<String>;
    /// The session of a container whose shell reads its stdin (`stdin: true`), which an
    /// attached client writes to.
    fn attach_session(&self, namespace: &str, pod: &str, container: &str) -> Option<u64>;
}

impl ApiServer {
    /// `GET pods/NAME/log`: the pod is read (authorized) as the caller, the container is
    /// chosen as the REST storage does (`pkg/registry/core/pod/strategy.go`
    /// `LogLocation`), and the lines come from the kubelet. Without a kubelet, nothing
    /// was written.
    pub fn pod_logs(
        &mut self,
        credentials: Credentials,
        namespace: &str,
        pod: &str,
        options: &LogOptions,
        kubelet: Option<&dyn KubeletClient>,
    ) -> Result<String, Status> {
        let obj = self.handle(Request::new(Verb::Get, api::rid::POD, namespace, pod, credentials).with_sub("log"))?;
        let container = pod_container(&obj, options.container.as_deref())?;
        let previous = options.previous;
        if get_str(&obj, &["spec", "nodeName"]).unwrap_or("").is_empty() {
            return Err(Status::bad_request(format!("pod {pod} does not have a host assigned")));
        }
        let lines = match kubelet {
            Some(k) => k.container_logs(namespace, pod, &container, previous)?,
            None => vec![],
        };
        let since = options.since.unwrap_or(0);
        Ok(lines
            .iter()
            .filter(|(t, _)| *t >= since)
            .map(|(t, l)| if options.timestamps { format!("{} {l}\n", rfc3339_nano(*t)) } else { format!("{l}\n") })
            .collect())
    }
}

pub fn scale_of(obj: &Value, _res: &ResourceInfo) -> Value {
    let selector = crate::foundation::labels::selector_string(get(obj, &["spec", "selector"]));
    json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": api::name(obj), "namespace": api::namespace(obj), "uid": api::uid(obj),
            "resourceVersion": api::resource_version(obj), "creationTimestamp": get(obj, &["metadata", "creationTimestamp"]).cloned().unwrap_or(Value::Null)},
        "spec": {"replicas": api::get_i64(obj, &["spec", "replicas"]).unwrap_or(0)},
        "status": {"replicas": api::get_i64(obj, &["status", "replicas"]).unwrap_or(0), "selector": if selector == "<none>" { String::new() } else { selector }},
    })
}

/// The runtime's log timestamp: RFC 3339 with nine fraction digits, as the kubelet writes
/// it for `timestamps=true` (`pkg/kubelet/kuberuntime/logs`'s `timeFormatOut`).
pub fn rfc3339_nano(t: Millis) -> String {
    let s = rfc3339(t);
    format!("{}.{:03}000000Z", &s[..s.len() - 1], t % 1000)
}
