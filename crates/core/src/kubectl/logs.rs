//! `kubectl logs` (`k8s.io/kubectl/pkg/cmd/logs`): the pod a TYPE/NAME picks, the default
//! container, and the lines the API server reads from the node's kubelet.

use super::*;
use crate::foundation::sim::Millis;
use crate::foundation::sort::Sort;

/// The order `kubectl logs TYPE/NAME` picks a pod in (`podutils.ByLogging`): scheduled,
/// running, ready (longest first), most restarts, oldest.
pub(super) fn logging_rank(p: &Value) -> (bool, u8, bool, String, i64, String) {
    let phase = match get_str(p, &["status", "phase"]) {
        Some("Running") => 0,
        Some("Unknown") => 1,
        Some("Pending") => 2,
        _ => 3,
    };
    let ready = api::get_array(p, &["status", "conditions"]).iter().find(|c| get_str(c, &["type"]) == Some("Ready"));
    let is_ready = ready.is_some_and(|c| get_str(c, &["status"]) == Some("True"));
    let since = if is_ready { ready.and_then(|c| get_str(c, &["lastTransitionTime"])).unwrap_or("").to_string() } else { "~".into() };
    let restarts: i64 = api::get_array(p, &["status", "containerStatuses"]).iter().filter_map(|c| api::get_i64(c, &["restartCount"])).sum();
    let created = get_str(p, &["metadata", "creationTimestamp"]).unwrap_or("~").to_string();
    (get_str(p, &["spec", "nodeName"]).is_none(), phase, !is_ready, since, -restarts, created)
}

/// `kubectl logs POD|TYPE/NAME [-c CONTAINER] [--previous] [--tail N]`: what the container
/// wrote, read through the API server from the node's kubelet.
pub fn logs(api: &mut ApiServer, kubelet: Option<&dyn KubeletClient>, creds: &Credentials, line: &str) -> Vec<String> {
    let args = match split_args(line) {
        Ok(a) => a,
        Err(e) => return vec![format!("error: {e}")],
    };
    let args: Vec<String> = args.into_iter().skip_while(|a| a == "kubectl").collect();
    let args = match super::flags::check(&args) {
        Ok(a) => a[1..].to_vec(),
        Err(e) => return e,
    };
    let f = match parse_flags(&args) {
        Ok(f) => f,
        Err(e) => return vec![format!("error: {e}")],
    };
    let ns = f.namespace.clone().unwrap_or_else(|| "default".into());
    let mut options = crate::apiserver::LogOptions { previous: switch(&f, "--previous"), timestamps: switch(&f, "--timestamps"), ..Default::default() };
    match (f.get("--since"), f.get("--since-time")) {
        (Some(_), Some(_)) => return vec!["error: at most one of `sinceTime` or `sinceSeconds` may be specified".into()],
        (Some(d), None) => match super::create::go_duration_ms(d) {
            Err(e) => return vec![format!("error: invalid argument {d:?} for \"--since\" flag: {e}"), "See 'kubectl logs --help' for usage.".into()],
            // Whole seconds, rounded (`Duration.Round(time.Second)`); 0 asks for everything.
            Ok(ms) => match (ms + ms.signum() * 500) / 1000 {
                s if s < 0 => return vec!["error: --since must be greater than 0".into()],
                0 => {}
                s => options.since = Some(api.now.saturating_sub(s as u64 * 1000)),
            },
        },
        // A moment before the cluster began asks for every line.
        (None, Some(t)) => match crate::foundation::sim::rfc3339_offset(t) {
            Some(at) => options.since = Some(at.max(0) as u64),
            None => return vec![format!("error: parsing time {t:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse {t:?} as \"2006\"")],
        },
        (None, None) => {}
    }
    let mut out = Vec::new();
    let (pods, streams) = match streams(api, creds, &f, &ns, &mut out) {
        Ok(p) => p,
        Err(e) => return e,
    };
    if switch(&f, "--follow") && streams.len() > MAX_FOLLOW_CONCURRENCY {
        return vec![format!(
            "error: you are attempting to follow {} log streams, but maximum allowed concurrency is {MAX_FOLLOW_CONCURRENCY}, use --max-log-requests to increase the limit",
            streams.len()
        )];
    }
    // With a selector, the last 10 lines of each container unless --tail says otherwise.
    let tail = match f.get("--tail").and_then(|t| t.parse::<i64>().ok()) {
        Some(n) if n >= 0 => Some(n as usize),
        Some(_) => None,
        None => f.selector.as_ref().map(|_| 10),
    };
    for (p, container) in streams {
        let pod_name = api::name(&pods[p]).to_string();
        let options = crate::apiserver::LogOptions { container: Some(container.clone()), ..options.clone() };
        match api.pod_logs(creds.clone(), &ns, &pod_name, &options, kubelet) {
            Ok(text) => {
                let mut lines: Vec<&str> = text.lines().collect();
                if let Some(n) = tail {
                    lines = lines.split_off(lines.len().saturating_sub(n));
                }
                // --prefix: each line with its source, `[pod/NAME/CONTAINER]`.
                out.extend(lines.into_iter().map(|l| if switch(&f, "--prefix") { format!("[pod/{pod_name}/{container}] {l}") } else { l.to_string() }));
            }
            Err(s) => out.push(s.kubectl_message(None, "")),
        }
    }
    out
}

/// `--max-log-requests`' default: how many streams `logs -f` follows at once.
const MAX_FOLLOW_CONCURRENCY: usize = 5;

/// The pods a `logs` line reads (the one a POD or TYPE/NAME names, or every pod `-l`
/// selects, by name) and its streams: (pod, container) in order. With `--all-containers`
/// each pod's init containers, containers and ephemeral ones, else the one `-c` names or
/// the default. kubectl's notes go to `out`; Err is what it prints instead.
#[allow(clippy::type_complexity)]
fn streams(
    api: &mut ApiServer,
    creds: &Credentials,
    f: &Flags,
    ns: &str,
    out: &mut Vec<String>,
) -> Result<(Vec<crate::foundation::api::Object>, Vec<(usize, String)>), Vec<String>> {
    let pods: Vec<crate::foundation::api::Object> = match (&f.selector, f.positional.first()) {
        (Some(_), Some(_)) => {
            return Err(vec!["error: only a selector (-l) or a POD name is allowed".into(), "See 'kubectl logs -h' for help and examples".into()])
        }
        (None, None) => {
            return Err(vec![
                "error: expected 'logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER]'.".into(),
                "POD or TYPE/NAME is a required argument for the logs command".into(),
                "See 'kubectl logs -h' for help and examples".into(),
            ])
        }
        (Some(sel), None) => {
            let sel = crate::foundation::labels::Selector::parse(sel).map_err(|e| vec![format!("error: {e}")])?;
            let list = api.handle(Request::new(Verb::List, api::rid::POD, ns, "", creds.clone())).map_err(|s| vec![s.kubectl_message(None, "")])?;
            let mut pods: Vec<Value> = api::get_array(&list, &["items"]).iter().filter(|p| sel.matches(api::labels(p))).cloned().collect();
            pods.sort_stable_by(|a, b| api::name(a).cmp(api::name(b)));
            if pods.is_empty() {
                return Err(vec![format!("No resources found in {ns} namespace.")]);
            }
            pods.into_iter().map(crate::foundation::api::Object::new).collect()
        }
        (None, Some(target)) => vec![pod_for_target(api, creds, target, ns, out)?],
    };
    let mut streams = Vec::new();
    for (i, pod) in pods.iter().enumerate() {
        if switch(f, "--all-containers") {
            for k in ["initContainers", "containers", "ephemeralContainers"] {
                streams.extend(api::get_array(pod, &["spec", k]).iter().filter_map(|c| get_str(c, &["name"])).map(|n| (i, n.to_string())));
            }
        } else {
            streams.push((i, default_container(pod, f.get("--container"), out)));
        }
    }
    Ok((pods, streams))
}

/// The pod a `POD` or `TYPE/NAME` argument names (`polymorphichelpers`): for a workload,
/// the best of its pods for logging, with kubectl's note when there were several.
pub(super) fn pod_for_target(
    api: &mut ApiServer,
    creds: &Credentials,
    target: &str,
    ns: &str,
    out: &mut Vec<String>,
) -> Result<crate::foundation::api::Object, Vec<String>> {
    let ns = ns.to_string();
    let pod = match target.split_once('/') {
        None | Some(("pod" | "pods" | "po", _)) => {
            let name = target.split_once('/').map(|(_, n)| n).unwrap_or(target);
            match fetch(api, creds, api::rid::POD, &ns, name) {
                Ok(p) => p,
                Err(e) => return Err(vec![e]),
            }
        }
        Some((t, name)) => {
            let Some(r) = resource_for_name(t) else { return Err(vec![format!("error: the server doesn't have a resource type {t:?}")]) };
            let owner = match fetch(api, creds, r, &ns, name) {
                Ok(o) => o,
                Err(e) => return Err(vec![e]),
            };
            // A Service's selector is a plain map of labels.
            let selector = match api::get(&owner, &["spec", "selector"]).cloned() {
                Some(s) if r == api::rid::SERVICE => Some(json!({"matchLabels": s})),
                s => s,
            };
            let pods = match api.handle(Request::new(Verb::List, api::rid::POD, &ns, "", creds.clone())) {
                Ok(l) => l,
                Err(s) => return Err(vec![s.kubectl_message(None, "")]),
            };
            let mut matching: Vec<&Value> =
                api::get_array(&pods, &["items"]).iter().filter(|p| crate::foundation::labels::selector_matches(selector.as_ref(), api::labels(p))).collect();
            matching.sort_stable_by_key(|p| logging_rank(p));
            let Some(first) = matching.first() else { return Err(vec!["error: timed out waiting for the condition".to_string()]) };
            if matching.len() > 1 {
                out.push(format!("Found {} pods, using pod/{}", matching.len(), api::name(first)));
            }
            crate::foundation::api::Object::new((*first).clone())
        }
    };
    Ok(pod)
}

/// `-c` or the default container (`kubectl.kubernetes.io/default-container`, else the
/// first), with kubectl's "Defaulted container" note when the pod has several.
pub(super) fn default_container(pod: &Value, flag: Option<&str>, out: &mut Vec<String>) -> String {
    let names: Vec<&str> = api::get_array(pod, &["spec", "containers"]).iter().filter_map(|c| get_str(c, &["name"])).collect();
    match flag {
        Some(c) => c.to_string(),
        None => {
            let chosen = api::annotation(pod, "kubectl.kubernetes.io/default-container")
                .filter(|d| names.contains(d))
                .or(names.first().copied())
                .unwrap_or("")
                .to_string();
            // kubectl's `podcmd.AllContainerNames`: init and ephemeral containers marked.
            let marked = |key: &str, mark: &str| -> Vec<String> {
                api::get_array(pod, &["spec", key]).iter().filter_map(|c| get_str(c, &["name"])).map(|n| format!("{n} ({mark})")).collect()
            };
            let (init, ephemeral) = (marked("initContainers", "init"), marked("ephemeralContainers", "ephem"));
            if names.len() > 1 || !init.is_empty() || !ephemeral.is_empty() {
                let all: Vec<String> = names.iter().map(|n| n.to_string()).chain(init).chain(ephemeral).collect();
                out.push(format!("Defaulted container {chosen:?} out of: {}", all.join(", ")));
            }
            chosen
        }
    }
}

/// `kubectl logs -f`: the lines the followed containers write after those printed, until
/// they end (a restart starts another container: the stream of this one is over). With
/// `-l` or `--all-containers` kubectl follows several streams at once; their lines arrive
/// in the order they were written.
#[derive(Debug, Clone)]
pub struct LogFollow {
    streams: Vec<Stream>,
    prefix: bool,
}

#[derive(Debug, Clone)]
struct Stream {
    namespace: String,
    pod: String,
    container: String,
    container_id: String,
    printed: usize,
    over: bool,
}

impl LogFollow {
    /// One container's output from now on (`kubectl attach` without `-i`).
    pub fn from_now(api: &ApiServer, kubelet: Option<&dyn KubeletClient>, namespace: &str, pod: &str, container: &str) -> LogFollow {
        let id = api
            .store
            .get_by(api::rid::POD, namespace, pod)
            .and_then(|p| container_status(p, container))
            .and_then(|s| get_str(&s, &["containerID"]).map(str::to_string));
        let printed = kubelet.and_then(|k| k.container_logs(namespace, pod, container, false).ok()).map_or(0, |l| l.len());
        let stream =
            Stream { namespace: namespace.into(), pod: pod.into(), container: container.into(), container_id: id.unwrap_or_default(), printed, over: false };
        LogFollow { streams: vec![stream], prefix: false }
    }

    /// New lines since the last poll, and whether every stream is over.
    pub fn poll(&mut self, api: &ApiServer, kubelet: Option<&dyn KubeletClient>) -> (Vec<String>, bool) {
        let mut fresh: Vec<(Millis, usize, String)> = Vec::new();
        for (i, s) in self.streams.iter_mut().enumerate().filter(|(_, s)| !s.over) {
            let Some(pod) = api.store.get_by(api::rid::POD, &s.namespace, &s.pod) else {
                s.over = true;
                continue;
            };
            let status = container_status(pod, &s.container);
            let id = status.as_ref().and_then(|st| get_str(st, &["containerID"])).unwrap_or("").to_string();
            if !s.container_id.is_empty() && id != s.container_id {
                s.over = true;
                continue;
            }
            s.over = status.as_ref().is_some_and(|st| api::get(st, &["state", "terminated"]).is_some());
            s.container_id = id;
            let lines = kubelet.and_then(|k| k.container_logs(&s.namespace, &s.pod, &s.container, false).ok()).unwrap_or_default();
            for (t, l) in lines.iter().skip(s.printed) {
                let l = if self.prefix { format!("[pod/{}/{}] {l}", s.pod, s.container) } else { l.clone() };
                fresh.push((*t, i, l));
            }
            s.printed = s.printed.max(lines.len());
        }
        fresh.sort_stable_by_key(|(t, i, _)| (*t, *i));
        (fresh.into_iter().map(|(_, _, l)| l).collect(), self.streams.iter().all(|s| s.over))
    }
}

/// A container's status, of any kind, by name.
fn container_status(pod: &Value, name: &str) -> Option<Value> {
    ["containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"]
        .iter()
        .flat_map(|k| api::get_array(pod, &["status", k]).iter())
        .find(|c| get_str(c, &["name"]) == Some(name))
        .cloned()
}

/// What a `kubectl logs -f` line follows once it has printed what the containers wrote
/// so far (None when it follows nothing: no `-f`, or an error).
pub fn follow(api: &mut ApiServer, kubelet: Option<&dyn KubeletClient>, creds: &Credentials, line: &str) -> Option<LogFollow> {
    let args: Vec<String> = split_args(line).ok()?.into_iter().skip_while(|a| a == "kubectl").collect();
    let args = super::flags::check(&args).ok()?;
    let f = parse_flags(&args[1..]).ok()?;
    if !switch(&f, "--follow") || switch(&f, "--previous") {
        return None;
    }
    let ns = f.namespace.clone().unwrap_or_else(|| "default".into());
    let (pods, streams) = streams(api, creds, &f, &ns, &mut Vec::new()).ok()?;
    if streams.len() > MAX_FOLLOW_CONCURRENCY {
        return None;
    }
    let streams = streams
        .into_iter()
        .map(|(p, container)| {
            let pod = &pods[p];
            let id = container_status(pod, &container).as_ref().and_then(|s| get_str(s, &["containerID"])).unwrap_or("").to_string();
            let printed = kubelet.and_then(|k| k.container_logs(&ns, api::name(pod), &container, false).ok()).map_or(0, |l| l.len());
            Stream { namespace: ns.clone(), pod: api::name(pod).to_string(), container, container_id: id, printed, over: false }
        })
        .collect();
    Some(LogFollow { streams, prefix: switch(&f, "--prefix") })
}
