//! What `kubectl get` prints for an object: the pod STATUS, READY and RESTARTS columns
//! (`pkg/printers/internalversion/printers.go` printPod) and AGE
//! (`k8s.io/apimachinery/pkg/util/duration.HumanDuration`).

use crate::foundation::api::{get, get_array, get_i64, get_str, is_deleting};
use crate::foundation::sim::{parse_rfc3339, Millis};
use crate::foundation::value::{json, Value};

/// The READY, STATUS and RESTARTS cells of a pod row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRow {
    pub ready: String,
    pub status: String,
    pub restarts: String,
}

fn api_bool(c: &Value, key: &str) -> bool {
    c.get(key) == Some(&Value::Bool(true))
}

fn container_reason(c: &Value) -> Option<String> {
    if let Some(r) = get_str(c, &["state", "waiting", "reason"]).filter(|r| !r.is_empty()) {
        return Some(r.to_string());
    }
    if let Some(t) = c.get("state").and_then(|s| s.get("terminated")) {
        if let Some(r) = get_str(t, &["reason"]).filter(|r| !r.is_empty()) {
            return Some(r.to_string());
        }
        if let Some(sig) = get_i64(t, &["signal"]).filter(|s| *s != 0) {
            return Some(format!("Signal:{sig}"));
        }
        return Some(format!("ExitCode:{}", get_i64(t, &["exitCode"]).unwrap_or(0)));
    }
    None
}

/// STATUS, READY and RESTARTS as kubectl computes them.
pub fn pod_row(pod: &Value, now: Millis) -> PodRow {
    let containers = get_array(pod, &["spec", "containers"]).len();
    let mut reason = get_str(pod, &["status", "reason"]).or_else(|| get_str(pod, &["status", "phase"])).unwrap_or("").to_string();
    let gated = get_array(pod, &["status", "conditions"])
        .iter()
        .any(|c| get_str(c, &["type"]) == Some("PodScheduled") && get_str(c, &["reason"]) == Some("SchedulingGated"));
    if gated {
        reason = "SchedulingGated".into();
    }
    let mut restarts = 0i64;
    let mut ready = 0usize;
    let mut last_restart: Option<Millis> = None;
    let finished = |c: &Value| get_str(c, &["lastState", "terminated", "finishedAt"]).and_then(parse_rfc3339);
    // Sidecars (init containers with `restartPolicy: Always`) count among the containers.
    let spec_inits = get_array(pod, &["spec", "initContainers"]);
    let restartable = |name: &str| spec_inits.iter().any(|c| get_str(c, &["name"]) == Some(name) && get_str(c, &["restartPolicy"]) == Some("Always"));
    let mut total = containers + spec_inits.iter().filter(|c| get_str(c, &["restartPolicy"]) == Some("Always")).count();
    let (mut sidecar_restarts, mut sidecar_last): (i64, Option<Millis>) = (0, None);
    // Init containers, in order, until one is not done.
    let inits = get_array(pod, &["status", "initContainerStatuses"]);
    let init_total = spec_inits.len();
    let mut initializing = false;
    for (i, c) in inits.iter().enumerate() {
        restarts += get_i64(c, &["restartCount"]).unwrap_or(0);
        if let Some(t) = finished(c) {
            last_restart = Some(last_restart.map_or(t, |l: Millis| l.max(t)));
        }
        let name = get_str(c, &["name"]).unwrap_or("");
        if restartable(name) {
            sidecar_restarts += get_i64(c, &["restartCount"]).unwrap_or(0);
            if let Some(t) = finished(c) {
                sidecar_last = Some(sidecar_last.map_or(t, |l: Millis| l.max(t)));
            }
            if api_bool(c, "started") {
                if api_bool(c, "ready") {
                    ready += 1;
                }
                continue;
            }
        }
        if get_i64(c, &["state", "terminated", "exitCode"]) == Some(0) {
            continue;
        }
        if let Some(t) = c.get("state").and_then(|s| s.get("terminated")) {
            reason = match (get_str(t, &["reason"]).filter(|r| !r.is_empty()), get_i64(t, &["signal"]).filter(|s| *s != 0)) {
                (Some(r), _) => format!("Init:{r}"),
                (None, Some(s)) => format!("Init:Signal:{s}"),
                (None, None) => format!("Init:ExitCode:{}", get_i64(t, &["exitCode"]).unwrap_or(0)),
            };
        } else if let Some(w) = get_str(c, &["state", "waiting", "reason"]).filter(|r| !r.is_empty() && *r != "PodInitializing") {
            reason = format!("Init:{w}");
        } else {
            reason = format!("Init:{i}/{init_total}");
        }
        initializing = true;
        break;
    }
    let initialized =
        get_array(pod, &["status", "conditions"]).iter().any(|c| get_str(c, &["type"]) == Some("Initialized") && get_str(c, &["status"]) == Some("True"));
    if !initializing || initialized {
        restarts = sidecar_restarts;
        last_restart = sidecar_last;
        let mut has_running = false;
        for c in get_array(pod, &["status", "containerStatuses"]).iter().rev() {
            restarts += get_i64(c, &["restartCount"]).unwrap_or(0);
            if let Some(t) = finished(c) {
                last_restart = Some(last_restart.map_or(t, |l: Millis| l.max(t)));
            }
            let running = c.get("state").and_then(|s| s.get("running")).is_some();
            if let Some(r) = container_reason(c) {
                reason = r;
            } else if running && c.get("ready") == Some(&Value::Bool(true)) {
                has_running = true;
                ready += 1;
            }
        }
        let pod_ready =
            get_array(pod, &["status", "conditions"]).iter().any(|c| get_str(c, &["type"]) == Some("Ready") && get_str(c, &["status"]) == Some("True"));
        if reason == "Completed" && has_running {
            reason = if pod_ready { "Running".into() } else { "NotReady".into() };
        }
    }
    total = total.max(containers);
    if is_deleting(pod) {
        reason = if get_str(pod, &["status", "reason"]) == Some("NodeLost") { "Unknown".into() } else { "Terminating".into() };
    }
    let restarts = match last_restart {
        Some(t) if restarts > 0 => format!("{restarts} ({} ago)", human_duration(now.saturating_sub(t))),
        _ => restarts.to_string(),
    };
    PodRow { ready: format!("{ready}/{total}"), status: reason, restarts }
}

/// Align rows as kubectl's tabwriter does: each column is as wide as its widest cell plus
/// three spaces (at least six), the last column is not padded.
pub fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols).map(|i| rows.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in rows {
        for (i, cell) in r.iter().enumerate() {
            if i + 1 == r.len() {
                out.push_str(cell);
            } else {
                let w = (widths[i] + 3).max(6);
                out.push_str(cell);
                out.push_str(&" ".repeat(w - cell.chars().count()));
            }
        }
        out.push('\n');
    }
    out
}

/// `duration.HumanDuration`: `45s`, `3m2s`, `10m`, `3h5m`, `2d3h`, `2y15d`.
pub fn human_duration(ms: Millis) -> String {
    let s = ms / 1000;
    let (m, h, d) = (s / 60, s / 3600, s / 86_400);
    let y = d / 365;
    if s < 120 {
        format!("{s}s")
    } else if m < 10 {
        if s.is_multiple_of(60) {
            format!("{m}m")
        } else {
            format!("{m}m{}s", s % 60)
        }
    } else if m < 180 {
        format!("{m}m")
    } else if h < 8 {
        if m.is_multiple_of(60) {
            format!("{h}h")
        } else {
            format!("{h}h{}m", m % 60)
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 192 {
        if h.is_multiple_of(24) {
            format!("{d}d")
        } else {
            format!("{d}d{}h", h % 24)
        }
    } else if d < 730 {
        format!("{d}d")
    } else if d < 2920 {
        if d.is_multiple_of(365) {
            format!("{y}y")
        } else {
            format!("{y}y{}d", d % 365)
        }
    } else {
        format!("{y}y")
    }
}

/// `kubectl get`'s columns for a kind (`pkg/printers/internalversion/printers.go`), and a
/// row per object. `wide` adds the `-o wide` columns.
pub fn get_rows(kind: &str, objects: &[&Value], now: Millis, wide: bool) -> (Vec<String>, Vec<Vec<String>>) {
    let age = |o: &Value| {
        get_str(o, &["metadata", "creationTimestamp"])
            .and_then(parse_rfc3339)
            .map(|t| human_duration(now.saturating_sub(t)))
            .unwrap_or_else(|| "<unknown>".into())
    };
    let name = |o: &Value| get_str(o, &["metadata", "name"]).unwrap_or("").to_string();
    let int = |o: &Value, path: &[&str]| get_i64(o, path).unwrap_or(0).to_string();
    let strs = |v: Vec<&str>| v.into_iter().map(str::to_string).collect::<Vec<_>>();
    let (mut header, rows): (Vec<String>, Vec<Vec<String>>) = match kind {
        "Pod" => (
            strs(if wide {
                vec!["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE", "READINESS GATES"]
            } else {
                vec!["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
            }),
            objects
                .iter()
                .map(|p| {
                    let r = pod_row(p, now);
                    let mut row = vec![name(p), r.ready, r.status, r.restarts, age(p)];
                    if wide {
                        row.push(get_str(p, &["status", "podIP"]).unwrap_or("<none>").to_string());
                        row.push(get_str(p, &["spec", "nodeName"]).unwrap_or("<none>").to_string());
                        row.push(get_str(p, &["status", "nominatedNodeName"]).unwrap_or("<none>").to_string());
                        row.push("<none>".into());
                    }
                    row
                })
                .collect(),
        ),
        "Deployment" => (
            workload_header(&["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"], wide),
            objects
                .iter()
                .map(|d| {
                    let ready = format!("{}/{}", int(d, &["status", "readyReplicas"]), int(d, &["spec", "replicas"]));
                    workload_row(vec![name(d), ready, int(d, &["status", "updatedReplicas"]), int(d, &["status", "availableReplicas"]), age(d)], d, wide)
                })
                .collect(),
        ),
        "ReplicaSet" => (
            workload_header(&["NAME", "DESIRED", "CURRENT", "READY", "AGE"], wide),
            objects
                .iter()
                .map(|r| {
                    workload_row(
                        vec![name(r), int(r, &["spec", "replicas"]), int(r, &["status", "replicas"]), int(r, &["status", "readyReplicas"]), age(r)],
                        r,
                        wide,
                    )
                })
                .collect(),
        ),
        "ReplicationController" => (
            workload_header(&["NAME", "DESIRED", "CURRENT", "READY", "AGE"], wide),
            objects
                .iter()
                .map(|r| {
                    workload_row(
                        vec![name(r), int(r, &["spec", "replicas"]), int(r, &["status", "replicas"]), int(r, &["status", "readyReplicas"]), age(r)],
                        r,
                        wide,
                    )
                })
                .collect(),
        ),
        "StatefulSet" => {
            let mut header = strs(vec!["NAME", "READY", "AGE"]);
            if wide {
                header.extend(strs(vec!["CONTAINERS", "IMAGES"]));
            }
            let rows = objects
                .iter()
                .map(|s| {
                    let mut row = vec![name(s), format!("{}/{}", int(s, &["status", "readyReplicas"]), int(s, &["spec", "replicas"])), age(s)];
                    if wide {
                        let (names, images) = container_cells(get(s, &["spec", "template"]));
                        row.extend([names, images]);
                    }
                    row
                })
                .collect();
            (header, rows)
        }
        "DaemonSet" => (
            workload_header(&["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"], wide),
            objects
                .iter()
                .map(|d| {
                    let st = |f: &str| int(d, &["status", f]);
                    workload_row(
                        vec![
                            name(d),
                            st("desiredNumberScheduled"),
                            st("currentNumberScheduled"),
                            st("numberReady"),
                            st("updatedNumberScheduled"),
                            st("numberAvailable"),
                            format_labels(get(d, &["spec", "template", "spec", "nodeSelector"])),
                            age(d),
                        ],
                        d,
                        wide,
                    )
                })
                .collect(),
        ),
        "Job" => (
            workload_header(&["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"], wide),
            objects.iter().map(|j| workload_row(vec![name(j), job_status(j), job_completions(j), job_duration(j, now), age(j)], j, wide)).collect(),
        ),
        "CronJob" => (
            workload_header(&["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"], wide),
            objects
                .iter()
                .map(|c| {
                    let last = get_str(c, &["status", "lastScheduleTime"])
                        .and_then(parse_rfc3339)
                        .map(|t| human_duration(now.saturating_sub(t)))
                        .unwrap_or_else(|| "<none>".into());
                    let mut row = vec![
                        name(c),
                        get_str(c, &["spec", "schedule"]).unwrap_or("").to_string(),
                        get_str(c, &["spec", "timeZone"]).unwrap_or("<none>").to_string(),
                        match crate::foundation::api::get_bool(c, &["spec", "suspend"]) {
                            Some(b) => b.to_string(),
                            None => "<unset>".into(),
                        },
                        crate::foundation::api::get_array(c, &["status", "active"]).len().to_string(),
                        last,
                        age(c),
                    ];
                    if wide {
                        let (names, images) = container_cells(get(c, &["spec", "jobTemplate", "spec", "template"]));
                        row.extend([names, images, selector_text(get(c, &["spec", "jobTemplate", "spec", "selector"]))]);
                    }
                    row
                })
                .collect(),
        ),
        "HorizontalPodAutoscaler" => (
            strs(vec!["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]),
            objects
                .iter()
                .map(|h| {
                    let reference = format!(
                        "{}/{}",
                        get_str(h, &["spec", "scaleTargetRef", "kind"]).unwrap_or(""),
                        get_str(h, &["spec", "scaleTargetRef", "name"]).unwrap_or("")
                    );
                    let min = get_i64(h, &["spec", "minReplicas"]).map(|m| m.to_string()).unwrap_or_else(|| "<unset>".into());
                    vec![name(h), reference, hpa_targets(h), min, int(h, &["spec", "maxReplicas"]), int(h, &["status", "currentReplicas"]), age(h)]
                })
                .collect(),
        ),
        "PodDisruptionBudget" => (
            strs(vec!["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"]),
            objects
                .iter()
                .map(|b| {
                    let io = |f: &str| match get(b, &["spec", f]) {
                        Some(Value::String(s)) => s.to_string(),
                        Some(v) if v.is_i64() => v.to_string(),
                        _ => "N/A".into(),
                    };
                    vec![name(b), io("minAvailable"), io("maxUnavailable"), int(b, &["status", "disruptionsAllowed"]), age(b)]
                })
                .collect(),
        ),
        // `printVolumeAttachment`, `printCSINode`, `printCSIDriver`.
        "VolumeAttachment" => (
            strs(vec!["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"]),
            objects
                .iter()
                .map(|a| {
                    let text = |p: &[&str]| get_str(a, p).unwrap_or("").to_string();
                    let attached = crate::foundation::api::get_bool(a, &["status", "attached"]).unwrap_or(false);
                    vec![
                        name(a),
                        text(&["spec", "attacher"]),
                        text(&["spec", "source", "persistentVolumeName"]),
                        text(&["spec", "nodeName"]),
                        attached.to_string(),
                        age(a),
                    ]
                })
                .collect(),
        ),
        // `printCertificateSigningRequest`.
        "CertificateSigningRequest" => (
            strs(vec!["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"]),
            objects
                .iter()
                .map(|c| {
                    let text = |p: &[&str]| get_str(c, p).filter(|s| !s.is_empty()).unwrap_or("<none>").to_string();
                    let duration = crate::foundation::api::get_i64(c, &["spec", "expirationSeconds"])
                        .map_or("<none>".into(), |s| human_duration(s.max(0) as Millis * 1000));
                    vec![
                        name(c),
                        age(c),
                        text(&["spec", "signerName"]),
                        get_str(c, &["spec", "username"]).unwrap_or("").to_string(),
                        duration,
                        crate::apiserver::certificates::condition_summary(c),
                    ]
                })
                .collect(),
        ),
        // `pkg/printers/internalversion` `printFlowSchema`, `printPriorityLevelConfiguration`.
        "FlowSchema" => (
            strs(vec!["NAME", "PRIORITYLEVEL", "MATCHINGPRECEDENCE", "DISTINGUISHERMETHOD", "AGE", "MISSINGPL"]),
            objects
                .iter()
                .map(|f| {
                    let missing = crate::foundation::api::get_array(f, &["status", "conditions"])
                        .iter()
                        .find(|c| get_str(c, &["type"]) == Some("Dangling"))
                        .and_then(|c| get_str(c, &["status"]))
                        .unwrap_or("Unknown")
                        .to_string();
                    vec![
                        name(f),
                        get_str(f, &["spec", "priorityLevelConfiguration", "name"]).unwrap_or("").to_string(),
                        crate::foundation::api::get_i64(f, &["spec", "matchingPrecedence"]).unwrap_or(0).to_string(),
                        get_str(f, &["spec", "distinguisherMethod", "type"]).unwrap_or("<none>").to_string(),
                        age(f),
                        missing,
                    ]
                })
                .collect(),
        ),
        "PriorityLevelConfiguration" => (
            strs(vec!["NAME", "TYPE", "NOMINALCONCURRENCYSHARES", "QUEUES", "HANDSIZE", "QUEUELENGTHLIMIT", "AGE"]),
            objects
                .iter()
                .map(|p| {
                    let limited = get(p, &["spec", "limited"]);
                    let q = limited.and_then(|l| get(l, &["limitResponse", "queuing"]));
                    let n = |v: Option<i64>| v.map(|n| n.to_string()).unwrap_or_else(|| "<none>".into());
                    vec![
                        name(p),
                        get_str(p, &["spec", "type"]).unwrap_or("").to_string(),
                        n(limited.and_then(|l| crate::foundation::api::get_i64(l, &["nominalConcurrencyShares"]))),
                        n(q.and_then(|q| crate::foundation::api::get_i64(q, &["queues"]))),
                        n(q.and_then(|q| crate::foundation::api::get_i64(q, &["handSize"]))),
                        n(q.and_then(|q| crate::foundation::api::get_i64(q, &["queueLengthLimit"]))),
                        age(p),
                    ]
                })
                .collect(),
        ),
        // kube-aggregator's table convertor (`pkg/registry/apiservice/rest`).
        "APIService" => (
            strs(vec!["NAME", "SERVICE", "AVAILABLE", "AGE"]),
            objects
                .iter()
                .map(|a| {
                    let service = match get(a, &["spec", "service"]).filter(|s| !s.is_null()) {
                        Some(s) => format!("{}/{}", get_str(s, &["namespace"]).unwrap_or(""), get_str(s, &["name"]).unwrap_or("")),
                        None => "Local".into(),
                    };
                    let cond = crate::foundation::api::get_array(a, &["status", "conditions"]).iter().find(|c| get_str(c, &["type"]) == Some("Available"));
                    let available = match cond {
                        None => "Unknown".to_string(),
                        Some(c) if get_str(c, &["status"]) == Some("True") => "True".into(),
                        Some(c) => format!("{} ({})", get_str(c, &["status"]).unwrap_or(""), get_str(c, &["reason"]).unwrap_or("")),
                    };
                    vec![name(a), service, available, age(a)]
                })
                .collect(),
        ),
        "CSINode" => (
            strs(vec!["NAME", "DRIVERS", "AGE"]),
            objects.iter().map(|n| vec![name(n), crate::foundation::api::get_array(n, &["spec", "drivers"]).len().to_string(), age(n)]).collect(),
        ),
        "CSIDriver" => (
            strs(vec!["NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY", "TOKENREQUESTS", "REQUIRESREPUBLISH", "MODES", "AGE"]),
            objects
                .iter()
                .map(|d| {
                    let flag = |f: &str, default: bool| crate::foundation::api::get_bool(d, &["spec", f]).unwrap_or(default).to_string();
                    let tokens = match get(d, &["spec", "tokenRequests"]).and_then(Value::as_array) {
                        Some(list) => list.iter().filter_map(|t| get_str(t, &["audience"])).collect::<Vec<_>>().join(","),
                        None => "<unset>".into(),
                    };
                    let modes: Vec<&str> = crate::foundation::api::get_array(d, &["spec", "volumeLifecycleModes"]).iter().filter_map(Value::as_str).collect();
                    let modes = if modes.is_empty() { "<none>".to_string() } else { modes.join(",") };
                    vec![
                        name(d),
                        flag("attachRequired", true),
                        flag("podInfoOnMount", false),
                        flag("storageCapacity", false),
                        tokens,
                        flag("requiresRepublish", false),
                        modes,
                        age(d),
                    ]
                })
                .collect(),
        ),
        "ControllerRevision" => (
            strs(vec!["NAME", "CONTROLLER", "REVISION", "AGE"]),
            objects
                .iter()
                .map(|r| {
                    let controller = crate::foundation::api::controller_ref(r)
                        .map(|c| {
                            let group = get_str(c, &["apiVersion"]).and_then(|v| v.split_once('/')).map(|(g, _)| g).unwrap_or("");
                            let kind = get_str(c, &["kind"]).unwrap_or("").to_ascii_lowercase();
                            let kind = if group.is_empty() { kind } else { format!("{kind}.{group}") };
                            format!("{kind}/{}", get_str(c, &["name"]).unwrap_or(""))
                        })
                        .unwrap_or_else(|| "<none>".into());
                    vec![name(r), controller, int(r, &["revision"]), age(r)]
                })
                .collect(),
        ),
        "Service" => (
            strs(if wide {
                vec!["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]
            } else {
                vec!["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
            }),
            objects
                .iter()
                .map(|s| {
                    let ports: Vec<String> = crate::foundation::api::get_array(s, &["spec", "ports"])
                        .iter()
                        .map(|p| {
                            let proto = get_str(p, &["protocol"]).unwrap_or("TCP");
                            match get_i64(p, &["nodePort"]) {
                                Some(np) => format!("{}:{np}/{proto}", int(p, &["port"])),
                                None => format!("{}/{proto}", int(p, &["port"])),
                            }
                        })
                        .collect();
                    // EXTERNAL-IP: the load balancer's addresses (`<pending>` until it has
                    // some), or the service's externalIPs.
                    let ty = get_str(s, &["spec", "type"]).unwrap_or("ClusterIP");
                    let mut external: Vec<String> =
                        crate::foundation::api::get_array(s, &["spec", "externalIPs"]).iter().filter_map(|v| v.as_str().map(str::to_string)).collect();
                    if ty == "LoadBalancer" {
                        let ingress: Vec<String> = crate::foundation::api::get_array(s, &["status", "loadBalancer", "ingress"])
                            .iter()
                            .filter_map(|i| get_str(i, &["ip"]).or_else(|| get_str(i, &["hostname"])).map(str::to_string))
                            .collect();
                        external.extend(ingress);
                        if external.is_empty() {
                            external.push("<pending>".into());
                        }
                    }
                    let mut row = vec![
                        name(s),
                        ty.to_string(),
                        get_str(s, &["spec", "clusterIP"]).unwrap_or("<none>").to_string(),
                        if external.is_empty() { "<none>".into() } else { external.join(",") },
                        if ports.is_empty() { "<none>".into() } else { ports.join(",") },
                        age(s),
                    ];
                    if wide {
                        row.push(selector_text(s.get("spec").and_then(|x| x.get("selector"))));
                    }
                    row
                })
                .collect(),
        ),
        "Node" => (
            strs(if wide { vec!["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP"] } else { vec!["NAME", "STATUS", "ROLES", "AGE", "VERSION"] }),
            objects
                .iter()
                .map(|n| {
                    let ready = crate::foundation::api::get_array(n, &["status", "conditions"])
                        .iter()
                        .find(|c| get_str(c, &["type"]) == Some("Ready"))
                        .and_then(|c| get_str(c, &["status"]));
                    let mut status = match ready {
                        Some("True") => "Ready".to_string(),
                        Some(_) => "NotReady".to_string(),
                        None => "Unknown".to_string(),
                    };
                    if crate::foundation::api::get_bool(n, &["spec", "unschedulable"]) == Some(true) {
                        status.push_str(",SchedulingDisabled");
                    }
                    let roles: Vec<&str> =
                        crate::foundation::api::labels(n).into_iter().flatten().filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/")).collect();
                    let mut row = vec![
                        name(n),
                        status,
                        if roles.is_empty() { "<none>".into() } else { roles.join(",") },
                        age(n),
                        get_str(n, &["status", "nodeInfo", "kubeletVersion"]).unwrap_or("").to_string(),
                    ];
                    if wide {
                        let ip = crate::foundation::api::get_array(n, &["status", "addresses"])
                            .iter()
                            .find(|a| get_str(a, &["type"]) == Some("InternalIP"))
                            .and_then(|a| get_str(a, &["address"]));
                        row.push(ip.unwrap_or("<none>").to_string());
                    }
                    row
                })
                .collect(),
        ),
        "Event" => (
            strs(vec!["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]),
            objects
                .iter()
                .map(|e| {
                    let last = get_str(e, &["lastTimestamp"])
                        .or_else(|| get_str(e, &["eventTime"]))
                        .and_then(parse_rfc3339)
                        .map(|t| human_duration(now.saturating_sub(t)))
                        .unwrap_or_else(|| "<unknown>".into());
                    let obj = format!(
                        "{}/{}",
                        get_str(e, &["involvedObject", "kind"]).unwrap_or("").to_ascii_lowercase(),
                        get_str(e, &["involvedObject", "name"]).unwrap_or("")
                    );
                    vec![
                        last,
                        get_str(e, &["type"]).unwrap_or("").to_string(),
                        get_str(e, &["reason"]).unwrap_or("").to_string(),
                        obj,
                        get_str(e, &["message"]).unwrap_or("").to_string(),
                    ]
                })
                .collect(),
        ),
        "ResourceQuota" => (strs(vec!["NAME", "AGE", "REQUEST", "LIMIT"]), objects.iter().map(|q| quota_row(q, name(q), age(q))).collect()),
        // `printLimitRange`: the creation time itself, not an age.
        "LimitRange" => (
            strs(vec!["NAME", "CREATED AT"]),
            objects.iter().map(|l| vec![name(l), get_str(l, &["metadata", "creationTimestamp"]).unwrap_or("<unknown>").to_string()]).collect(),
        ),
        // `printPersistentVolume`, `printPersistentVolumeClaim`, `printStorageClass`.
        "PersistentVolume" => (
            strs(if wide {
                vec![
                    "NAME",
                    "CAPACITY",
                    "ACCESS MODES",
                    "RECLAIM POLICY",
                    "STATUS",
                    "CLAIM",
                    "STORAGECLASS",
                    "VOLUMEATTRIBUTESCLASS",
                    "REASON",
                    "AGE",
                    "VOLUMEMODE",
                ]
            } else {
                vec!["NAME", "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS", "CLAIM", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "REASON", "AGE"]
            }),
            objects
                .iter()
                .map(|v| {
                    let claim = match get(v, &["spec", "claimRef"]).filter(|r| !r.is_null()) {
                        Some(r) => format!("{}/{}", get_str(r, &["namespace"]).unwrap_or(""), get_str(r, &["name"]).unwrap_or("")),
                        None => String::new(),
                    };
                    let phase = if crate::foundation::api::is_deleting(v) { "Terminating" } else { get_str(v, &["status", "phase"]).unwrap_or("") };
                    let mut row = vec![
                        name(v),
                        storage_quantity(get(v, &["spec", "capacity", "storage"])),
                        access_modes_string(v, &["spec", "accessModes"]),
                        get_str(v, &["spec", "persistentVolumeReclaimPolicy"]).unwrap_or("").to_string(),
                        phase.to_string(),
                        claim,
                        storage_class_of(v),
                        get_str(v, &["spec", "volumeAttributesClassName"]).unwrap_or("<unset>").to_string(),
                        get_str(v, &["status", "reason"]).unwrap_or("").to_string(),
                        age(v),
                    ];
                    if wide {
                        row.push(get_str(v, &["spec", "volumeMode"]).unwrap_or("<unset>").to_string());
                    }
                    row
                })
                .collect(),
        ),
        "PersistentVolumeClaim" => (
            strs(if wide {
                vec!["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE", "VOLUMEMODE"]
            } else {
                vec!["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE"]
            }),
            objects
                .iter()
                .map(|c| {
                    let phase = if crate::foundation::api::is_deleting(c) { "Terminating" } else { get_str(c, &["status", "phase"]).unwrap_or("") };
                    let volume = get_str(c, &["spec", "volumeName"]).unwrap_or("").to_string();
                    let (capacity, modes) = if volume.is_empty() {
                        (String::new(), String::new())
                    } else {
                        (storage_quantity(get(c, &["status", "capacity", "storage"])), access_modes_string(c, &["status", "accessModes"]))
                    };
                    let class = crate::foundation::api::annotation(c, "volume.beta.kubernetes.io/storage-class")
                        .or_else(|| get_str(c, &["spec", "storageClassName"]))
                        .unwrap_or("")
                        .to_string();
                    let mut row = vec![
                        name(c),
                        phase.to_string(),
                        volume,
                        capacity,
                        modes,
                        class,
                        get_str(c, &["spec", "volumeAttributesClassName"]).filter(|s| !s.is_empty()).unwrap_or("<unset>").to_string(),
                        age(c),
                    ];
                    if wide {
                        row.push(get_str(c, &["spec", "volumeMode"]).unwrap_or("<unset>").to_string());
                    }
                    row
                })
                .collect(),
        ),
        "StorageClass" => (
            strs(vec!["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE"]),
            objects
                .iter()
                .map(|sc| {
                    let mut n = name(sc);
                    if is_default_class(sc) {
                        n.push_str(" (default)");
                    }
                    vec![
                        n,
                        get_str(sc, &["provisioner"]).unwrap_or("").to_string(),
                        get_str(sc, &["reclaimPolicy"]).unwrap_or("Delete").to_string(),
                        get_str(sc, &["volumeBindingMode"]).unwrap_or("Immediate").to_string(),
                        get(sc, &["allowVolumeExpansion"]).and_then(Value::as_bool).unwrap_or(false).to_string(),
                        age(sc),
                    ]
                })
                .collect(),
        ),
        "Namespace" => (
            strs(vec!["NAME", "STATUS", "AGE"]),
            objects.iter().map(|n| vec![name(n), get_str(n, &["status", "phase"]).unwrap_or("Active").to_string(), age(n)]).collect(),
        ),
        _ => (strs(vec!["NAME", "AGE"]), objects.iter().map(|o| vec![name(o), age(o)]).collect()),
    };
    header.shrink_to_fit();
    (header, rows)
}

/// `printResourceQuota`: each hard limit as `used/hard`, the `limits.*` ones in LIMIT and
/// the rest in REQUEST, by name.
fn quota_row(q: &Value, name: String, age: String) -> Vec<String> {
    let quantity = |v: Option<&Value>| match v {
        Some(Value::String(s)) => crate::foundation::quantity::canonical(s),
        Some(Value::Number(n)) => crate::foundation::quantity::canonical(&n.to_string()),
        _ => "0".to_string(),
    };
    let mut request = Vec::new();
    let mut limit = Vec::new();
    for (r, hard) in get(q, &["status", "hard"]).and_then(Value::as_object).into_iter().flatten() {
        let cell = format!("{r}: {}/{}", quantity(get(q, &["status", "used", r.as_str()])), quantity(Some(hard)));
        if r.split('.').count() > 1 && r.starts_with("limits.") {
            limit.push(cell);
        } else {
            request.push(cell);
        }
    }
    vec![name, age, request.join(", "), limit.join(", ")]
}

/// `helper.GetAccessModesAsString`: RWO, ROX, RWX, RWOP, in that order.
pub fn access_modes_string(o: &Value, path: &[&str]) -> String {
    let modes = crate::foundation::api::get_array(o, path);
    let has = |m: &str| modes.iter().any(|x| x.as_str() == Some(m));
    [("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP")]
        .iter()
        .filter(|(m, _)| has(m))
        .map(|(_, s)| *s)
        .collect::<Vec<_>>()
        .join(",")
}

/// A storage quantity as `Quantity.String()` prints it (empty when missing).
pub fn storage_quantity(q: Option<&Value>) -> String {
    match q {
        Some(Value::String(s)) => crate::foundation::quantity::canonical(s.trim()),
        Some(v) if !v.is_null() => crate::foundation::quantity::canonical(&v.to_string()),
        _ => String::new(),
    }
}

/// `GetPersistentVolumeClass`: the beta annotation, else `spec.storageClassName`.
pub fn storage_class_of(v: &Value) -> String {
    crate::foundation::api::annotation(v, "volume.beta.kubernetes.io/storage-class")
        .or_else(|| get_str(v, &["spec", "storageClassName"]))
        .unwrap_or("")
        .to_string()
}

/// `GetPersistentVolumeClaimClass`: the beta annotation, else `spec.storageClassName`.
pub fn storage_class_of_claim(c: &Value) -> String {
    storage_class_of(c)
}

/// `storageutil.IsDefaultAnnotation`.
pub fn is_default_class(sc: &Value) -> bool {
    ["storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"]
        .iter()
        .any(|k| crate::foundation::api::annotation(sc, k) == Some("true"))
}

/// What a `Table` row carries besides its cells (`?includeObject=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    Metadata,
    Object,
}

/// A column's name as the API server's table convertor declares it (kubectl prints it
/// upper-cased), its type and its format.
fn column_definition(header: &str, priority: u8) -> Value {
    let name = match header {
        "IP" | "NAME" => {
            if header == "IP" {
                "IP".to_string()
            } else {
                "Name".to_string()
            }
        }
        "UP-TO-DATE" => "Up-to-date".into(),
        "PORT(S)" => "Port(s)".into(),
        h => h
            .split(' ')
            .map(|w| {
                w.split('-').map(|p| if p == "IP" { p.to_string() } else { p[..1].to_string() + &p[1..].to_ascii_lowercase() }).collect::<Vec<_>>().join("-")
            })
            .collect::<Vec<_>>()
            .join(" "),
    };
    let integer =
        matches!(header, "DESIRED" | "CURRENT" | "UP-TO-DATE" | "AVAILABLE" | "DATA" | "SECRETS" | "COUNT" | "ACTIVE" | "REVISION" | "ALLOWED DISRUPTIONS");
    json!({
        "name": name,
        "type": if integer { "integer" } else if header == "SUSPEND" { "boolean" } else if header == "CREATED AT" { "date" } else { "string" },
        "format": if header == "NAME" { "name" } else { "" },
        "description": "",
        "priority": priority,
    })
}

/// A `meta.k8s.io/v1` `Table` of `objects` (`Accept: application/json;as=Table`), with
/// the columns `kubectl get` prints; `-o wide`'s extra columns have priority 1.
pub fn server_table(kind: &str, objects: &[&Value], now: Millis, include: IncludeObject, resource_version: &str) -> Value {
    let (narrow, _) = get_rows(kind, &[], now, false);
    let (header, rows) = get_rows(kind, objects, now, true);
    let columns: Vec<Value> = header.iter().map(|h| column_definition(h, if narrow.contains(h) { 0 } else { 1 })).collect();
    let rows: Vec<Value> = rows
        .into_iter()
        .zip(objects)
        .map(|(cells, obj)| {
            let cells: Vec<Value> = cells
                .into_iter()
                .zip(&columns)
                .map(|(c, def)| match (def["type"].as_str(), c.parse::<i64>()) {
                    (Some("integer"), Ok(n)) => json!(n),
                    _ => json!(c),
                })
                .collect();
            let mut row = json!({"cells": cells});
            match include {
                IncludeObject::None => {}
                IncludeObject::Metadata => {
                    row["object"] =
                        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata").cloned().unwrap_or(json!({}))})
                }
                IncludeObject::Object => row["object"] = (*obj).clone(),
            }
            row
        })
        .collect();
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": resource_version}, "columnDefinitions": columns, "rows": rows})
}

/// A workload's columns, with `-o wide`'s CONTAINERS, IMAGES and SELECTOR.
/// `formatHPAMetrics` (`pkg/printers/internalversion/printers.go`): each metric's current
/// value against its target, at most two, then how many more.
fn hpa_targets(h: &Value) -> String {
    let specs = crate::foundation::api::get_array(h, &["spec", "metrics"]);
    if specs.is_empty() {
        return "<none>".into();
    }
    let statuses = crate::foundation::api::get_array(h, &["status", "currentMetrics"]);
    let q = |v: Option<&Value>| v.and_then(Value::as_str).map(crate::foundation::quantity::canonical);
    let mut list = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let st = statuses.get(i);
        let ty = get_str(spec, &["type"]).unwrap_or("");
        let field = match ty {
            "External" => "external",
            "Pods" => "pods",
            "Object" => "object",
            "Resource" => "resource",
            "ContainerResource" => "containerResource",
            _ => {
                list.push("<unknown type>".to_string());
                continue;
            }
        };
        let cur = |path: &[&str]| {
            let mut full = vec![field];
            full.extend_from_slice(path);
            st.and_then(|s| get(s, &full))
        };
        let has_status = st.and_then(|s| s.get(field)).is_some();
        let target = |k: &str| get(spec, &[field, "target", k]);
        let unknown = || "<unknown>".to_string();
        let item = match field {
            "external" | "object" if target("averageValue").is_some() => {
                format!("{}/{} (avg)", q(cur(&["current", "averageValue"])).unwrap_or_else(unknown), q(target("averageValue")).unwrap_or_default())
            }
            "external" | "object" => {
                let c = if has_status { q(cur(&["current", "value"])).unwrap_or_else(|| "0".into()) } else { unknown() };
                format!("{c}/{}", q(target("value")).unwrap_or_else(|| "0".into()))
            }
            "pods" => {
                let c = if has_status { q(cur(&["current", "averageValue"])).unwrap_or_else(|| "0".into()) } else { unknown() };
                format!("{c}/{}", q(target("averageValue")).unwrap_or_else(|| "0".into()))
            }
            _ => {
                let rname = get_str(spec, &[field, "name"]).unwrap_or("");
                if target("averageValue").is_some() {
                    let c = if has_status { q(cur(&["current", "averageValue"])).unwrap_or_else(|| "0".into()) } else { unknown() };
                    format!("{rname}: {c}/{}", q(target("averageValue")).unwrap_or_default())
                } else {
                    let c = cur(&["current", "averageUtilization"]).and_then(Value::as_i64).map(|u| format!("{u}%")).unwrap_or_else(unknown);
                    let t = target("averageUtilization").and_then(Value::as_i64).map(|u| format!("{u}%")).unwrap_or_else(|| "<auto>".into());
                    format!("{rname}: {c}/{t}")
                }
            }
        };
        list.push(item);
    }
    let count = list.len();
    if count > 2 {
        format!("{} + {} more...", list[..2].join(", "), count - 2)
    } else {
        list.join(", ")
    }
}

fn workload_header(base: &[&str], wide: bool) -> Vec<String> {
    let extra: &[&str] = if wide { &["CONTAINERS", "IMAGES", "SELECTOR"] } else { &[] };
    base.iter().chain(extra).map(|s| s.to_string()).collect()
}

fn workload_row(mut row: Vec<String>, o: &Value, wide: bool) -> Vec<String> {
    if wide {
        let (names, images) = container_cells(get(o, &["spec", "template"]));
        row.extend([names, images, selector_text(o.get("spec").and_then(|s| s.get("selector")))]);
    }
    row
}

/// A pod template's container names and images, each joined with `,` (`layoutContainerCells`).
fn container_cells(template: Option<&Value>) -> (String, String) {
    let cs = template.map(|t| crate::foundation::api::get_array(t, &["spec", "containers"])).unwrap_or(&[]);
    let names: Vec<&str> = cs.iter().filter_map(|c| get_str(c, &["name"])).collect();
    let images: Vec<&str> = cs.iter().filter_map(|c| get_str(c, &["image"])).collect();
    (names.join(","), images.join(","))
}

/// A label map as `labels.FormatLabels` prints it: `k=v,k2=v2`, or `<none>`.
fn format_labels(m: Option<&Value>) -> String {
    let parts: Vec<String> = m.and_then(Value::as_object).into_iter().flatten().filter_map(|(k, v)| v.as_str().map(|v| format!("{k}={v}"))).collect();
    if parts.is_empty() {
        "<none>".into()
    } else {
        parts.join(",")
    }
}

/// A selector as kubectl prints it (`FormatLabelSelector`): `app=web,tier in (a,b)`; a
/// ReplicationController's plain label map prints as its labels.
fn selector_text(sel: Option<&Value>) -> String {
    let Some(sel) = sel else { return "<none>".into() };
    if sel.get("matchLabels").is_none() && sel.get("matchExpressions").is_none() {
        return format_labels(Some(sel));
    }
    let mut parts: Vec<String> =
        sel.get("matchLabels").and_then(Value::as_object).into_iter().flatten().filter_map(|(k, v)| v.as_str().map(|v| format!("{k}={v}"))).collect();
    for e in get_array(sel, &["matchExpressions"]) {
        let key = get_str(e, &["key"]).unwrap_or("");
        let values: Vec<&str> = get_array(e, &["values"]).iter().filter_map(Value::as_str).collect();
        parts.push(match get_str(e, &["operator"]).unwrap_or("") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            op => format!("{key} {op} ({})", values.join(",")),
        });
    }
    if parts.is_empty() {
        "<none>".into()
    } else {
        parts.join(",")
    }
}

fn has_condition(o: &Value, ty: &str) -> bool {
    get_array(o, &["status", "conditions"]).iter().any(|c| get_str(c, &["type"]) == Some(ty) && get_str(c, &["status"]) == Some("True"))
}

/// A Job's STATUS cell (`printJob`).
fn job_status(j: &Value) -> String {
    if has_condition(j, "Complete") {
        "Complete"
    } else if has_condition(j, "Failed") {
        "Failed"
    } else if is_deleting(j) {
        "Terminating"
    } else if has_condition(j, "Suspended") {
        "Suspended"
    } else if has_condition(j, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    }
    .into()
}

/// A Job's COMPLETIONS cell: `1/3`, or `0/1 of 4` for a work queue with parallelism.
fn job_completions(j: &Value) -> String {
    let succeeded = get_i64(j, &["status", "succeeded"]).unwrap_or(0);
    match get_i64(j, &["spec", "completions"]) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match get_i64(j, &["spec", "parallelism"]).unwrap_or(0) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    }
}

/// A Job's DURATION cell: start to completion, or start to now while it runs.
fn job_duration(j: &Value, now: Millis) -> String {
    let t = |f: &str| get_str(j, &["status", f]).and_then(parse_rfc3339);
    match (t("startTime"), t("completionTime")) {
        (None, _) => String::new(),
        (Some(s), None) => human_duration(now.saturating_sub(s)),
        (Some(s), Some(c)) => human_duration(c.saturating_sub(s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_like_tabwriter() {
        let rows = vec![vec!["NAME".to_string(), "READY".into(), "STATUS".into()], vec!["web-1".into(), "1/1".into(), "Running".into()]];
        assert_eq!(table(&rows), "NAME    READY   STATUS\nweb-1   1/1     Running\n");
    }

    #[test]
    fn server_tables_mark_wide_columns() {
        let rs = json!({"metadata": {"name": "web-1", "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": {"replicas": 3}, "status": {"replicas": 2}});
        let t = server_table("ReplicaSet", &[&rs], 60_000, IncludeObject::Metadata, "42");
        let names: Vec<&str> = t["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"]);
        assert_eq!(t["columnDefinitions"][4]["priority"], json!(0));
        assert_eq!(t["columnDefinitions"][5]["priority"], json!(1));
        assert_eq!(t["rows"][0]["cells"][1], json!(3));
        assert_eq!(t["rows"][0]["cells"][4], json!("60s"));
        assert_eq!(t["rows"][0]["object"]["kind"], json!("PartialObjectMetadata"));
        assert_eq!(t["metadata"]["resourceVersion"], json!("42"));
        let svc = server_table("Service", &[], 0, IncludeObject::None, "1");
        let names: Vec<&str> = svc["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"]);
    }

    #[test]
    fn ages_truncate_like_kubectl() {
        assert_eq!(human_duration(45_000), "45s");
        assert_eq!(human_duration(182_000), "3m2s");
        assert_eq!(human_duration(600_000), "10m");
        assert_eq!(human_duration(3 * 3_600_000 + 300_000), "3h5m");
        assert_eq!(human_duration(20 * 3_600_000), "20h");
        assert_eq!(human_duration(51 * 3_600_000), "2d3h");
        assert_eq!(human_duration(745 * 86_400_000), "2y15d");
    }

    #[test]
    fn pod_status_cells() {
        let pending = json!({"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Pending"}});
        assert_eq!(pod_row(&pending, 0), PodRow { ready: "0/1".into(), status: "Pending".into(), restarts: "0".into() });
        let creating = json!({"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Pending", "containerStatuses": [{"name": "a", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]}});
        assert_eq!(pod_row(&creating, 0).status, "ContainerCreating");
        let crash = json!({"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Running", "containerStatuses": [{"name": "a", "ready": false, "restartCount": 3,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}}, "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2026-01-01T00:01:00Z"}}}]}});
        assert_eq!(pod_row(&crash, 85_000), PodRow { ready: "0/1".into(), status: "CrashLoopBackOff".into(), restarts: "3 (25s ago)".into() });
        let running = json!({"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "a", "ready": true, "restartCount": 0, "state": {"running": {"startedAt": "2026-01-01T00:00:01Z"}}}]}});
        assert_eq!(pod_row(&running, 0), PodRow { ready: "1/1".into(), status: "Running".into(), restarts: "0".into() });
        let mut deleting = running.clone();
        deleting["metadata"] = json!({"deletionTimestamp": "2026-01-01T00:00:30Z"});
        assert_eq!(pod_row(&deleting, 0).status, "Terminating");
        let init = json!({"spec": {"initContainers": [{"name": "i"}, {"name": "j"}], "containers": [{"name": "a"}]}, "status": {"phase": "Pending",
            "initContainerStatuses": [{"name": "i", "restartCount": 0, "state": {"terminated": {"exitCode": 0}}}, {"name": "j", "restartCount": 0, "state": {"running": {}}}],
            "containerStatuses": [{"name": "a", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}]}});
        assert_eq!(pod_row(&init, 0).status, "Init:1/2");
    }
}
