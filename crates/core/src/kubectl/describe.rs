//! `kubectl describe` for pods, deployments, replica sets, services and nodes (`k8s.io/kubectl/pkg/describe/describe.go`):
//! sections of `Key:\tvalue` lines aligned by Go's tabwriter (min width 0, padding 2), and
//! the Events table.

use super::{fetch, targets, Flags};
use crate::apiserver::{ApiServer, Credentials, Request, Verb};
use crate::foundation::api::{self, get, get_array, get_i64, get_str};
use crate::foundation::api::{ResourceId, RESOURCES};
use crate::foundation::sim::{parse_rfc3339, Millis};
use crate::foundation::value::Value;
use crate::kubectl::printers::human_duration;

/// Go's `text/tabwriter` with `minwidth 0, tabwidth 8, padding 2, ' '`: a column block is
/// a run of consecutive lines that have a cell in that column; each cell but a line's last
/// is padded to the block's widest cell plus two.
pub fn tabwrite(text: &str) -> String {
    let lines: Vec<Vec<&str>> = text.split('\n').map(|l| l.split('\t').collect()).collect();
    let mut out = String::new();
    let mut widths = Vec::new();
    format(&lines, 0, lines.len(), &mut widths, &mut out);
    // `split` yields one empty line after a final newline; drop what it added.
    if text.ends_with('\n') {
        out.pop();
    }
    out
}

fn format(lines: &[Vec<&str>], mut line0: usize, line1: usize, widths: &mut Vec<usize>, out: &mut String) {
    let column = widths.len();
    let mut this = line0;
    while this < line1 {
        if column + 1 >= lines[this].len() {
            this += 1;
            continue;
        }
        write_lines(lines, line0, this, widths, out);
        line0 = this;
        let mut width = 0;
        while this < line1 && column + 1 < lines[this].len() {
            width = width.max(lines[this][column].chars().count() + 2);
            this += 1;
        }
        widths.push(width);
        format(lines, line0, this, widths, out);
        widths.pop();
        line0 = this;
    }
    write_lines(lines, line0, line1, widths, out);
}

fn write_lines(lines: &[Vec<&str>], from: usize, to: usize, widths: &[usize], out: &mut String) {
    for line in &lines[from..to] {
        for (j, cell) in line.iter().enumerate() {
            out.push_str(cell);
            if j + 1 < line.len() {
                let w = widths.get(j).copied().unwrap_or(0);
                out.push_str(&" ".repeat(w.saturating_sub(cell.chars().count())));
            }
        }
        out.push('\n');
    }
}

/// `Mon, 02 Jan 2006 15:04:05 -0700` (RFC 1123 with numeric zone), as describe prints times.
fn rfc1123z(t: &str) -> String {
    let Some(ms) = parse_rfc3339(t) else { return t.to_string() };
    let secs = crate::foundation::sim::epoch() + (ms / 1000) as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][days.rem_euclid(7) as usize];
    let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][(m - 1) as usize];
    format!("{weekday}, {d:02} {month} {y} {:02}:{:02}:{:02} +0000", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// `printAnnotationsMultiline`: `key: value`, without kubectl's own last-applied
/// annotation; a value too long for one line (140 characters) or with newlines goes on
/// the following lines, each cut at 138 characters.
fn annotations_multiline(out: &mut String, m: Option<&Value>) {
    const MAX: usize = 140;
    let entries: Vec<(&str, &str)> = m
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.as_str() != "kubectl.kubernetes.io/last-applied-configuration")
        .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
        .collect();
    if entries.is_empty() {
        out.push_str("Annotations:\t<none>\n");
        return;
    }
    out.push_str("Annotations:\t");
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.push('\t');
        }
        let v = v.strip_suffix('\n').unwrap_or(v);
        if v.len() + k.len() + 2 > MAX || v.contains('\n') {
            out.push_str(&format!("{k}:\n"));
            for line in v.split('\n') {
                let cut: String = if line.len() > MAX - 2 { format!("{}...", &line[..line.floor_char_boundary(MAX - 2)]) } else { line.to_string() };
                out.push_str(&format!("\t  {cut}\n"));
            }
        } else {
            out.push_str(&format!("{k}: {v}\n"));
        }
    }
}

fn map_multiline(out: &mut String, title: &str, m: Option<&Value>) {
    let entries: Vec<String> = m.and_then(Value::as_object).into_iter().flatten().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))).collect();
    if entries.is_empty() {
        out.push_str(&format!("{title}:\t<none>\n"));
        return;
    }
    for (i, e) in entries.iter().enumerate() {
        if i == 0 {
            out.push_str(&format!("{title}:\t{e}\n"));
        } else {
            out.push_str(&format!("\t{e}\n"));
        }
    }
}

/// The Events section for an object: its events, oldest first.
pub fn events_section(out: &mut String, events: &[&Value], now: Millis) {
    if events.is_empty() {
        out.push_str("Events:\t<none>\n");
        return;
    }
    out.push_str("Events:\n  Type\tReason\tAge\tFrom\tMessage\n  ----\t------\t----\t----\t-------\n");
    for e in events {
        let at = |k: &str| get_str(e, &[k]).and_then(parse_rfc3339);
        let last = at("lastTimestamp").or_else(|| at("eventTime")).unwrap_or(0);
        let first = at("firstTimestamp").or_else(|| at("eventTime")).unwrap_or(last);
        let count = get_i64(e, &["count"]).unwrap_or(1);
        let age = if count > 1 {
            format!("{} (x{count} over {})", human_duration(now.saturating_sub(last)), human_duration(now.saturating_sub(first)))
        } else {
            human_duration(now.saturating_sub(last))
        };
        let from = get_str(e, &["source", "component"]).filter(|c| !c.is_empty()).or_else(|| get_str(e, &["reportingComponent"])).unwrap_or("");
        let msg = get_str(e, &["message"]).unwrap_or("").trim();
        let msg = match get_str(e, &["involvedObject", "fieldPath"]) {
            Some(fp) if !fp.is_empty() => format!("{fp}: {msg}"),
            _ => msg.to_string(),
        };
        out.push_str(&format!("  {}\t{}\t{age}\t{from}\t{msg}\n", get_str(e, &["type"]).unwrap_or(""), get_str(e, &["reason"]).unwrap_or("")));
    }
}

fn container_state(out: &mut String, title: &str, st: Option<&Value>) {
    let Some(st) = st.and_then(Value::as_object).filter(|m| !m.is_empty()) else {
        if title == "State" {
            out.push_str("    State:\tWaiting\n");
        }
        return;
    };
    if let Some(r) = st.get("running") {
        out.push_str(&format!("    {title}:\tRunning\n      Started:\t{}\n", rfc1123z(get_str(r, &["startedAt"]).unwrap_or(""))));
    } else if let Some(w) = st.get("waiting") {
        out.push_str(&format!("    {title}:\tWaiting\n"));
        if let Some(r) = get_str(w, &["reason"]) {
            out.push_str(&format!("      Reason:\t{r}\n"));
        }
    } else if let Some(t) = st.get("terminated") {
        out.push_str(&format!("    {title}:\tTerminated\n"));
        if let Some(r) = get_str(t, &["reason"]) {
            out.push_str(&format!("      Reason:\t{r}\n"));
        }
        out.push_str(&format!("      Exit Code:\t{}\n", get_i64(t, &["exitCode"]).unwrap_or(0)));
        out.push_str(&format!("      Started:\t{}\n", rfc1123z(get_str(t, &["startedAt"]).unwrap_or(""))));
        out.push_str(&format!("      Finished:\t{}\n", rfc1123z(get_str(t, &["finishedAt"]).unwrap_or(""))));
    }
}

fn probe(p: &Value) -> String {
    let n = |k: &str, d: i64| get_i64(p, &[k]).unwrap_or(d);
    let action = if let Some(h) = p.get("httpGet") {
        let port = get(h, &["port"]).map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())).unwrap_or_default();
        format!(
            "http-get {}://{}:{port}{}",
            get_str(h, &["scheme"]).unwrap_or("HTTP").to_lowercase(),
            get_str(h, &["host"]).unwrap_or(""),
            get_str(h, &["path"]).unwrap_or("")
        )
    } else if let Some(t) = p.get("tcpSocket") {
        format!("tcp-socket :{}", get(t, &["port"]).map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())).unwrap_or_default())
    } else if let Some(e) = p.get("exec") {
        let cmd: Vec<&str> = get_array(e, &["command"]).iter().filter_map(Value::as_str).collect();
        format!("exec [{}]", cmd.join(" "))
    } else {
        "unknown".into()
    };
    format!(
        "{action} delay={}s timeout={}s period={}s #success={} #failure={}",
        n("initialDelaySeconds", 0),
        n("timeoutSeconds", 1),
        n("periodSeconds", 10),
        n("successThreshold", 1),
        n("failureThreshold", 3)
    )
}

/// A volume source's name and `Optional` lines.
fn source_lines(o: &mut String, title: &str, src: &Value, field: &str) {
    o.push_str(&format!("    {title}:\t{}\n    Optional:\t{}\n", get_str(src, &[field]).unwrap_or(""), api::get_bool(src, &["optional"]).unwrap_or(false)));
}

/// A container's Limits, Requests and probe lines.
fn resources_and_probes(o: &mut String, c: &Value) {
    for (title, key) in [("Limits", "limits"), ("Requests", "requests")] {
        if let Some(m) = get(c, &["resources", key]).and_then(Value::as_object).filter(|m| !m.is_empty()) {
            o.push_str(&format!("    {title}:\n"));
            for (k, v) in m {
                o.push_str(&format!("      {k}:\t{}\n", v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())));
            }
        }
    }
    for (title, key) in [("Liveness", "livenessProbe"), ("Readiness", "readinessProbe"), ("Startup", "startupProbe")] {
        if let Some(pr) = c.get(key) {
            o.push_str(&format!("    {title}:\t{}\n", probe(pr)));
        }
    }
}

/// The `Pod Template:` section of a Deployment or ReplicaSet.
fn pod_template(o: &mut String, owner: &Value) {
    o.push_str("Pod Template:\n");
    map_multiline(o, "  Labels", get(owner, &["spec", "template", "metadata", "labels"]));
    o.push_str("  Containers:\n");
    for c in get_array(owner, &["spec", "template", "spec", "containers"]) {
        o.push_str(&format!("   {}:\n", get_str(c, &["name"]).unwrap_or("")));
        o.push_str(&format!("    Image:\t{}\n", get_str(c, &["image"]).unwrap_or("")));
        let ports = get_array(c, &["ports"]);
        let fmt = |k: &str| {
            ports.iter().map(|pt| format!("{}/{}", get_i64(pt, &[k]).unwrap_or(0), get_str(pt, &["protocol"]).unwrap_or("TCP"))).collect::<Vec<_>>().join(", ")
        };
        if ports.is_empty() {
            o.push_str("    Port:\t<none>\n    Host Port:\t<none>\n");
        } else {
            o.push_str(&format!("    Port:\t{}\n    Host Port:\t{}\n", fmt("containerPort"), fmt("hostPort")));
        }
        resources_and_probes(o, c);
        o.push_str("    Environment:\t<none>\n    Mounts:\t<none>\n");
    }
    o.push_str("  Volumes:\t<none>\n  Node-Selectors:\t<none>\n  Tolerations:\t<none>\n");
}

/// A workload's `Conditions:` table (type, status, reason), if it has conditions.
fn conditions(o: &mut String, obj: &Value) {
    let conds = get_array(obj, &["status", "conditions"]);
    if conds.is_empty() {
        return;
    }
    o.push_str("Conditions:\n  Type\tStatus\tReason\n  ----\t------\t------\n");
    for c in conds {
        let s = |k: &str| get_str(c, &[k]).unwrap_or("");
        o.push_str(&format!("  {}\t{}\t{}\n", s("type"), s("status"), s("reason")));
    }
}

/// `metav1.FormatLabelSelector`: `app=web,tier in (a,b)`, or `<none>`.
fn label_selector(sel: Option<&Value>) -> String {
    let mut parts: Vec<String> = sel
        .and_then(|s| s.get("matchLabels"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    for e in sel.map(|s| get_array(s, &["matchExpressions"])).unwrap_or(&[]) {
        let key = get_str(e, &["key"]).unwrap_or("");
        let vals: Vec<&str> = get_array(e, &["values"]).iter().filter_map(Value::as_str).collect();
        parts.push(match get_str(e, &["operator"]).unwrap_or("") {
            "In" => format!("{key} in ({})", vals.join(",")),
            "NotIn" => format!("{key} notin ({})", vals.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            op => format!("{key} {op} ({})", vals.join(",")),
        });
    }
    if parts.is_empty() {
        "<none>".into()
    } else {
        parts.join(",")
    }
}

fn controlled_by(o: &mut String, obj: &Value) {
    if let Some(c) = api::controller_ref(obj) {
        o.push_str(&format!("Controlled By:\t{}/{}\n", get_str(c, &["kind"]).unwrap_or(""), get_str(c, &["name"]).unwrap_or("")));
    }
}

/// `kubectl describe replicaset`; `pods` are the pods it controls.
pub fn replica_set(r: &Value, pods: &[&Value], events: &[&Value], now: Millis) -> String {
    let mut o = String::new();
    o.push_str(&format!("Name:\t{}\nNamespace:\t{}\n", api::name(r), api::namespace(r)));
    o.push_str(&format!("Selector:\t{}\n", label_selector(get(r, &["spec", "selector"]))));
    map_multiline(&mut o, "Labels", get(r, &["metadata", "labels"]));
    annotations_multiline(&mut o, get(r, &["metadata", "annotations"]));
    controlled_by(&mut o, r);
    o.push_str(&format!(
        "Replicas:\t{} current / {} desired\n",
        get_i64(r, &["status", "replicas"]).unwrap_or(0),
        get_i64(r, &["spec", "replicas"]).unwrap_or(1)
    ));
    let phase = |p: &str| pods.iter().filter(|x| get_str(x, &["status", "phase"]) == Some(p)).count();
    o.push_str(&format!(
        "Pods Status:\t{} Running / {} Waiting / {} Succeeded / {} Failed\n",
        phase("Running"),
        phase("Pending"),
        phase("Succeeded"),
        phase("Failed")
    ));
    pod_template(&mut o, r);
    conditions(&mut o, r);
    events_section(&mut o, events, now);
    tabwrite(&o)
}

/// `kubectl describe service`; `endpoints` are the ready addresses of its EndpointSlices.
pub fn service(svc: &Value, endpoints: &[String], events: &[&Value], now: Millis) -> String {
    let mut o = String::new();
    let spec = |k: &str| get_str(svc, &["spec", k]).unwrap_or("").to_string();
    o.push_str(&format!("Name:\t{}\nNamespace:\t{}\n", api::name(svc), api::namespace(svc)));
    map_multiline(&mut o, "Labels", get(svc, &["metadata", "labels"]));
    annotations_multiline(&mut o, get(svc, &["metadata", "annotations"]));
    let sel: Vec<String> =
        get(svc, &["spec", "selector"]).and_then(Value::as_object).into_iter().flatten().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))).collect();
    o.push_str(&format!("Selector:\t{}\n", if sel.is_empty() { "<none>".to_string() } else { sel.join(",") }));
    let ty = spec("type");
    o.push_str(&format!("Type:\t{ty}\n"));
    if !spec("ipFamilyPolicy").is_empty() {
        o.push_str(&format!("IP Family Policy:\t{}\n", spec("ipFamilyPolicy")));
    }
    let families: Vec<&str> = get_array(svc, &["spec", "ipFamilies"]).iter().filter_map(Value::as_str).collect();
    if !families.is_empty() {
        o.push_str(&format!("IP Families:\t{}\n", families.join(",")));
    }
    o.push_str(&format!("IP:\t{}\n", spec("clusterIP")));
    let ips: Vec<&str> = get_array(svc, &["spec", "clusterIPs"]).iter().filter_map(Value::as_str).collect();
    if !ips.is_empty() {
        o.push_str(&format!("IPs:\t{}\n", ips.join(",")));
    }
    for p in get_array(svc, &["spec", "ports"]) {
        let name = get_str(p, &["name"]).filter(|n| !n.is_empty()).unwrap_or("<unset>");
        let proto = get_str(p, &["protocol"]).unwrap_or("TCP");
        o.push_str(&format!("Port:\t{name}  {}/{proto}\n", get_i64(p, &["port"]).unwrap_or(0)));
        let target = match get(p, &["targetPort"]) {
            Some(Value::String(s)) => s.to_string(),
            Some(v) => v.to_string(),
            None => get_i64(p, &["port"]).unwrap_or(0).to_string(),
        };
        o.push_str(&format!("TargetPort:\t{target}/{proto}\n"));
        if let Some(np) = get_i64(p, &["nodePort"]) {
            o.push_str(&format!("NodePort:\t{name}  {np}/{proto}\n"));
        }
        let eps: Vec<String> = endpoints.iter().map(|ip| format!("{ip}:{target}")).collect();
        o.push_str(&format!("Endpoints:\t{}\n", eps.join(",")));
    }
    o.push_str(&format!("Session Affinity:\t{}\n", if spec("sessionAffinity").is_empty() { "None".into() } else { spec("sessionAffinity") }));
    if ty == "NodePort" || ty == "LoadBalancer" {
        o.push_str(&format!("External Traffic Policy:\t{}\n", spec("externalTrafficPolicy")));
    }
    if !spec("internalTrafficPolicy").is_empty() {
        o.push_str(&format!("Internal Traffic Policy:\t{}\n", spec("internalTrafficPolicy")));
    }
    events_section(&mut o, events, now);
    tabwrite(&o)
}

/// A resource list as describe prints it: canonical quantities, sorted by name.
fn resource_lines(o: &mut String, title: &str, m: Option<&Value>) {
    o.push_str(&format!("{title}:\n"));
    for (k, v) in m.and_then(Value::as_object).into_iter().flatten() {
        o.push_str(&format!("  {k}:\t{}\n", crate::foundation::quantity::canonical(v.as_str().unwrap_or(""))));
    }
}

/// `kubectl describe node`; `pods` are its non-terminated pods, `lease` its Lease.
pub fn node(n: &Value, pods: &[&Value], lease: Option<&Value>, events: &[&Value], now: Millis) -> String {
    let mut o = String::new();
    o.push_str(&format!("Name:\t{}\n", api::name(n)));
    let roles: Vec<&str> = api::labels(n).into_iter().flatten().filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/")).collect();
    o.push_str(&format!("Roles:\t{}\n", if roles.is_empty() { "<none>".to_string() } else { roles.join(",") }));
    map_multiline(&mut o, "Labels", get(n, &["metadata", "labels"]));
    annotations_multiline(&mut o, get(n, &["metadata", "annotations"]));
    o.push_str(&format!("CreationTimestamp:\t{}\n", rfc1123z(get_str(n, &["metadata", "creationTimestamp"]).unwrap_or(""))));
    let taints = get_array(n, &["spec", "taints"]);
    if taints.is_empty() {
        o.push_str("Taints:\t<none>\n");
    }
    for (i, t) in taints.iter().enumerate() {
        let kv = match get_str(t, &["value"]).filter(|v| !v.is_empty()) {
            Some(v) => format!("{}={v}", get_str(t, &["key"]).unwrap_or("")),
            None => get_str(t, &["key"]).unwrap_or("").to_string(),
        };
        o.push_str(&format!("{}\t{kv}:{}\n", if i == 0 { "Taints:" } else { "" }, get_str(t, &["effect"]).unwrap_or("")));
    }
    o.push_str(&format!("Unschedulable:\t{}\n", api::get_bool(n, &["spec", "unschedulable"]).unwrap_or(false)));
    if let Some(l) = lease {
        let t = |k: &str| get_str(l, &["spec", k]).map(rfc1123z).unwrap_or_else(|| "<unset>".into());
        o.push_str(&format!(
            "Lease:\n  HolderIdentity:\t{}\n  AcquireTime:\t{}\n  RenewTime:\t{}\n",
            get_str(l, &["spec", "holderIdentity"]).unwrap_or("<unset>"),
            t("acquireTime"),
            t("renewTime")
        ));
    }
    let conds = get_array(n, &["status", "conditions"]);
    if !conds.is_empty() {
        o.push_str("Conditions:\n  Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\tReason\tMessage\n  ----\t------\t-----------------\t------------------\t------\t-------\n");
        for c in conds {
            let s = |k: &str| get_str(c, &[k]).unwrap_or("").to_string();
            // kubectl writes a space before each cell's tab here.
            o.push_str(&format!(
                "  {} \t{} \t{} \t{} \t{} \t{}\n",
                s("type"),
                s("status"),
                rfc1123z(&s("lastHeartbeatTime")),
                rfc1123z(&s("lastTransitionTime")),
                s("reason"),
                s("message")
            ));
        }
    }
    o.push_str("Addresses:\n");
    for a in get_array(n, &["status", "addresses"]) {
        o.push_str(&format!("  {}:\t{}\n", get_str(a, &["type"]).unwrap_or(""), get_str(a, &["address"]).unwrap_or("")));
    }
    resource_lines(&mut o, "Capacity", get(n, &["status", "capacity"]));
    resource_lines(&mut o, "Allocatable", get(n, &["status", "allocatable"]));
    let info = |k: &str| get_str(n, &["status", "nodeInfo", k]).unwrap_or("").to_string();
    o.push_str(&format!(
        "System Info:\n  Machine ID:\t{}\n  System UUID:\t{}\n  Boot ID:\t{}\n  Kernel Version:\t{}\n  OS Image:\t{}\n  Operating System:\t{}\n  Architecture:\t{}\n  Container Runtime Version:\t{}\n  Kubelet Version:\t{}\n  Kube-Proxy Version:\t{}\n",
        info("machineID"), info("systemUUID"), info("bootID"), info("kernelVersion"), info("osImage"), info("operatingSystem"), info("architecture"), info("containerRuntimeVersion"), info("kubeletVersion"), info("kubeProxyVersion")
    ));
    if let Some(c) = get_str(n, &["spec", "podCIDR"]) {
        o.push_str(&format!("PodCIDR:\t{c}\n"));
    }
    let cidrs: Vec<&str> = get_array(n, &["spec", "podCIDRs"]).iter().filter_map(Value::as_str).collect();
    if !cidrs.is_empty() {
        o.push_str(&format!("PodCIDRs:\t{}\n", cidrs.join(",")));
    }
    if let Some(p) = get_str(n, &["spec", "providerID"]) {
        o.push_str(&format!("ProviderID:\t{p}\n"));
    }
    let alloc = |k: &str| get(n, &["status", "allocatable", k]).and_then(crate::foundation::quantity::value_milli).unwrap_or(0);
    let pct = |v: i64, total: i64| if total == 0 { 0 } else { (v as i128 * 100 / total as i128) as i64 };
    let sum = |p: &Value, kind: &str, res: &str| -> i64 {
        get_array(p, &["spec", "containers"])
            .iter()
            .filter_map(|c| get(c, &["resources", kind, res]).and_then(crate::foundation::quantity::value_milli))
            .fold(0i64, i64::saturating_add)
    };
    let fmt = |res: &str, v: i64| if res == "cpu" { crate::foundation::quantity::format_cpu(v) } else { crate::foundation::quantity::format_bytes(v) };
    o.push_str(&format!("Non-terminated Pods:\t({} in total)\n", pods.len()));
    // An empty column follows the name, as in kubectl.
    o.push_str("  Namespace\tName\t\tCPU Requests\tCPU Limits\tMemory Requests\tMemory Limits\tAge\n  ---------\t----\t\t------------\t----------\t---------------\t-------------\t---\n");
    for p in pods {
        let age = get_str(p, &["metadata", "creationTimestamp"]).and_then(parse_rfc3339).map(|t| human_duration(now.saturating_sub(t))).unwrap_or_default();
        let cell = |kind: &str, res: &str| {
            let v = sum(p, kind, res);
            format!("{} ({}%)", fmt(res, v), pct(v, alloc(res)))
        };
        o.push_str(&format!(
            "  {}\t{}\t\t{}\t{}\t{}\t{}\t{age}\n",
            api::namespace(p),
            api::name(p),
            cell("requests", "cpu"),
            cell("limits", "cpu"),
            cell("requests", "memory"),
            cell("limits", "memory")
        ));
    }
    o.push_str(
        "Allocated resources:\n  (Total limits may be over 100 percent, i.e., overcommitted.)\n  Resource\tRequests\tLimits\n  --------\t--------\t------\n",
    );
    for res in ["cpu", "memory", "ephemeral-storage", "hugepages-1Gi", "hugepages-2Mi"] {
        let req: i64 = pods.iter().map(|p| sum(p, "requests", res)).fold(0i64, i64::saturating_add);
        let lim: i64 = pods.iter().map(|p| sum(p, "limits", res)).fold(0i64, i64::saturating_add);
        o.push_str(&format!("  {res}\t{} ({}%)\t{} ({}%)\n", fmt(res, req), pct(req, alloc(res)), fmt(res, lim), pct(lim, alloc(res))));
    }
    events_section(&mut o, events, now);
    tabwrite(&o)
}

/// `kubectl describe pod`.
pub fn pod(p: &Value, events: &[&Value], now: Millis) -> String {
    let mut o = String::new();
    o.push_str(&format!("Name:\t{}\nNamespace:\t{}\n", api::name(p), api::namespace(p)));
    o.push_str(&format!("Priority:\t{}\n", get_i64(p, &["spec", "priority"]).unwrap_or(0)));
    if let Some(pc) = get_str(p, &["spec", "priorityClassName"]) {
        o.push_str(&format!("Priority Class Name:\t{pc}\n"));
    }
    o.push_str(&format!("Service Account:\t{}\n", get_str(p, &["spec", "serviceAccountName"]).unwrap_or("")));
    match get_str(p, &["spec", "nodeName"]) {
        Some(n) => o.push_str(&format!("Node:\t{n}/{}\n", get_str(p, &["status", "hostIP"]).unwrap_or(""))),
        None => o.push_str("Node:\t<none>\n"),
    }
    if let Some(t) = get_str(p, &["status", "startTime"]) {
        o.push_str(&format!("Start Time:\t{}\n", rfc1123z(t)));
    }
    map_multiline(&mut o, "Labels", get(p, &["metadata", "labels"]));
    annotations_multiline(&mut o, get(p, &["metadata", "annotations"]));
    let phase = get_str(p, &["status", "phase"]).unwrap_or("");
    if api::is_deleting(p) {
        o.push_str(&format!(
            "Status:\tTerminating (lasts {})\n",
            human_duration(now.saturating_sub(get_str(p, &["metadata", "deletionTimestamp"]).and_then(parse_rfc3339).unwrap_or(now)))
        ));
        o.push_str(&format!("Termination Grace Period:\t{}s\n", get_i64(p, &["metadata", "deletionGracePeriodSeconds"]).unwrap_or(30)));
    } else {
        o.push_str(&format!("Status:\t{phase}\n"));
    }
    if let Some(r) = get_str(p, &["status", "reason"]) {
        o.push_str(&format!("Reason:\t{r}\n"));
    }
    if let Some(m) = get_str(p, &["status", "message"]) {
        o.push_str(&format!("Message:\t{m}\n"));
    }
    o.push_str(&format!("IP:\t{}\n", get_str(p, &["status", "podIP"]).unwrap_or("")));
    let ips = get_array(p, &["status", "podIPs"]);
    if ips.is_empty() {
        o.push_str("IPs:\t<none>\n");
    } else {
        o.push_str("IPs:\n");
        for ip in ips {
            o.push_str(&format!("  IP:\t{}\n", get_str(ip, &["ip"]).unwrap_or("")));
        }
    }
    controlled_by(&mut o, p);
    o.push_str("Containers:\n");
    let statuses = get_array(p, &["status", "containerStatuses"]);
    for c in get_array(p, &["spec", "containers"]) {
        let name = get_str(c, &["name"]).unwrap_or("");
        let st = statuses.iter().find(|s| get_str(s, &["name"]) == Some(name));
        o.push_str(&format!("  {name}:\n"));
        if let Some(id) = st.and_then(|s| get_str(s, &["containerID"])) {
            o.push_str(&format!("    Container ID:\t{id}\n"));
        }
        o.push_str(&format!("    Image:\t{}\n", get_str(c, &["image"]).unwrap_or("")));
        o.push_str(&format!("    Image ID:\t{}\n", st.and_then(|s| get_str(s, &["imageID"])).unwrap_or("")));
        let ports = get_array(c, &["ports"]);
        if ports.is_empty() {
            o.push_str("    Port:\t<none>\n    Host Port:\t<none>\n");
        } else {
            let fmt = |k: &str| {
                ports
                    .iter()
                    .map(|pt| format!("{}/{}", get_i64(pt, &[k]).unwrap_or(0), get_str(pt, &["protocol"]).unwrap_or("TCP")))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            o.push_str(&format!(
                "    Port{}:\t{}\n    Host Port{}:\t{}\n",
                if ports.len() > 1 { "s" } else { "" },
                fmt("containerPort"),
                if ports.len() > 1 { "s" } else { "" },
                fmt("hostPort")
            ));
        }
        container_state(&mut o, "State", st.and_then(|s| s.get("state")));
        container_state(&mut o, "Last State", st.and_then(|s| s.get("lastState")));
        o.push_str(&format!("    Ready:\t{}\n", if st.and_then(|s| api::get_bool(s, &["ready"])) == Some(true) { "True" } else { "False" }));
        o.push_str(&format!("    Restart Count:\t{}\n", st.and_then(|s| get_i64(s, &["restartCount"])).unwrap_or(0)));
        resources_and_probes(&mut o, c);
        let env = get_array(c, &["env"]);
        if env.is_empty() {
            o.push_str("    Environment:\t<none>\n");
        } else {
            o.push_str("    Environment:\n");
            for e in env {
                o.push_str(&format!("      {}:\t{}\n", get_str(e, &["name"]).unwrap_or(""), get_str(e, &["value"]).unwrap_or("")));
            }
        }
        let mounts = get_array(c, &["volumeMounts"]);
        if mounts.is_empty() {
            o.push_str("    Mounts:\t<none>\n");
        } else {
            o.push_str("    Mounts:\n");
            for m in mounts {
                let ro = if api::get_bool(m, &["readOnly"]) == Some(true) { "ro" } else { "rw" };
                o.push_str(&format!("      {} from {} ({ro})\n", get_str(m, &["mountPath"]).unwrap_or(""), get_str(m, &["name"]).unwrap_or("")));
            }
        }
    }
    let conds = get_array(p, &["status", "conditions"]);
    if !conds.is_empty() {
        o.push_str("Conditions:\n  Type\tStatus\n");
        for c in conds {
            o.push_str(&format!("  {} \t{} \n", get_str(c, &["type"]).unwrap_or(""), get_str(c, &["status"]).unwrap_or("")));
        }
    }
    let vols = get_array(p, &["spec", "volumes"]);
    if vols.is_empty() {
        o.push_str("Volumes:\t<none>\n");
    } else {
        o.push_str("Volumes:\n");
        for v in vols {
            o.push_str(&format!("  {}:\n", get_str(v, &["name"]).unwrap_or("")));
            if let Some(pj) = v.get("projected") {
                o.push_str("    Type:\tProjected (a volume that contains injected data from multiple sources)\n");
                for s in get_array(pj, &["sources"]) {
                    if let Some(t) = s.get("serviceAccountToken") {
                        o.push_str(&format!("    TokenExpirationSeconds:\t{}\n", get_i64(t, &["expirationSeconds"]).unwrap_or(3600)));
                    } else if let Some(cm) = s.get("configMap") {
                        // kubectl prints the *bool itself here: `<nil>` when unset.
                        let optional = api::get_bool(cm, &["optional"]).map(|b| b.to_string()).unwrap_or_else(|| "<nil>".into());
                        o.push_str(&format!("    ConfigMapName:\t{}\n    ConfigMapOptional:\t{optional}\n", get_str(cm, &["name"]).unwrap_or("")));
                    } else if s.get("downwardAPI").is_some() {
                        o.push_str("    DownwardAPI:\ttrue\n");
                    }
                }
            } else if let Some(cm) = v.get("configMap") {
                o.push_str("    Type:\tConfigMap (a volume populated by a ConfigMap)\n");
                source_lines(&mut o, "Name", cm, "name");
            } else if let Some(sec) = v.get("secret") {
                o.push_str("    Type:\tSecret (a volume populated by a Secret)\n");
                source_lines(&mut o, "SecretName", sec, "secretName");
            } else if let Some(ed) = v.get("emptyDir") {
                o.push_str("    Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)\n");
                o.push_str(&format!(
                    "    Medium:\t{}\n    SizeLimit:\t{}\n",
                    get_str(ed, &["medium"]).unwrap_or(""),
                    get_str(ed, &["sizeLimit"]).unwrap_or("<unset>")
                ));
            }
        }
    }
    o.push_str(&format!("QoS Class:\t{}\n", get_str(p, &["status", "qosClass"]).unwrap_or("")));
    map_multiline(&mut o, "Node-Selectors", get(p, &["spec", "nodeSelector"]));
    let tols: Vec<String> = get_array(p, &["spec", "tolerations"])
        .iter()
        .map(|t| {
            let mut s = get_str(t, &["key"]).unwrap_or("").to_string();
            if let Some(v) = get_str(t, &["value"]).filter(|v| !v.is_empty()) {
                s.push_str(&format!("={v}"));
            }
            if let Some(e) = get_str(t, &["effect"]) {
                s.push_str(&format!(":{e}"));
            }
            if get_str(t, &["operator"]) == Some("Exists") {
                s.push_str(" op=Exists");
            }
            if let Some(secs) = get_i64(t, &["tolerationSeconds"]) {
                s.push_str(&format!(" for {secs}s"));
            }
            s
        })
        .collect();
    if tols.is_empty() {
        o.push_str("Tolerations:\t<none>\n");
    } else {
        for (i, t) in tols.iter().enumerate() {
            o.push_str(&if i == 0 { format!("Tolerations:\t{t}\n") } else { format!("\t{t}\n") });
        }
    }
    events_section(&mut o, events, now);
    tabwrite(&o)
}

/// `kubectl describe deployment`.
pub fn deployment(d: &Value, rs: &[&Value], events: &[&Value], now: Millis) -> String {
    let mut o = String::new();
    let int = |p: &[&str]| get_i64(d, p).unwrap_or(0);
    o.push_str(&format!("Name:\t{}\nNamespace:\t{}\n", api::name(d), api::namespace(d)));
    o.push_str(&format!("CreationTimestamp:\t{}\n", rfc1123z(get_str(d, &["metadata", "creationTimestamp"]).unwrap_or(""))));
    map_multiline(&mut o, "Labels", get(d, &["metadata", "labels"]));
    annotations_multiline(&mut o, get(d, &["metadata", "annotations"]));
    let sel: Vec<String> = get(d, &["spec", "selector", "matchLabels"])
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    o.push_str(&format!("Selector:\t{}\n", sel.join(",")));
    let unavailable = int(&["status", "unavailableReplicas"]);
    o.push_str(&format!(
        "Replicas:\t{} desired | {} updated | {} total | {} available | {unavailable} unavailable\n",
        int(&["spec", "replicas"]),
        int(&["status", "updatedReplicas"]),
        int(&["status", "replicas"]),
        int(&["status", "availableReplicas"])
    ));
    let strategy = get_str(d, &["spec", "strategy", "type"]).unwrap_or("RollingUpdate");
    o.push_str(&format!("StrategyType:\t{strategy}\n"));
    o.push_str(&format!("MinReadySeconds:\t{}\n", int(&["spec", "minReadySeconds"])));
    if strategy == "RollingUpdate" {
        let ru = |k: &str| {
            get(d, &["spec", "strategy", "rollingUpdate", k]).map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())).unwrap_or_default()
        };
        o.push_str(&format!("RollingUpdateStrategy:\t{} max unavailable, {} max surge\n", ru("maxUnavailable"), ru("maxSurge")));
    }
    pod_template(&mut o, d);
    conditions(&mut o, d);
    let rs_text = |list: Vec<&&Value>| {
        if list.is_empty() {
            "<none>".to_string()
        } else {
            list.iter()
                .map(|r| {
                    format!(
                        "{} ({}/{} replicas created)",
                        api::name(r),
                        get_i64(r, &["status", "replicas"]).unwrap_or(0),
                        get_i64(r, &["spec", "replicas"]).unwrap_or(0)
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let revision = api::annotation(d, "deployment.kubernetes.io/revision").unwrap_or("");
    let (new, old): (Vec<&&Value>, Vec<&&Value>) = rs.iter().partition(|r| api::annotation(r, "deployment.kubernetes.io/revision").unwrap_or("") == revision);
    let old: Vec<&&Value> = old.into_iter().filter(|r| get_i64(r, &["spec", "replicas"]).unwrap_or(0) > 0).collect();
    o.push_str(&format!("OldReplicaSets:\t{}\n", rs_text(old)));
    o.push_str(&format!("NewReplicaSet:\t{}\n", rs_text(new)));
    events_section(&mut o, events, now);
    tabwrite(&o)
}

/// `kubectl describe (pod|deployment) NAME...` (or `TYPE/NAME`, or `-l`).
pub(super) fn command(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let ts = match targets(api, creds, f, ns) {
        Ok(ts) => ts,
        Err(e) => return vec![e],
    };
    let list = |api: &mut ApiServer, r: ResourceId| -> Result<Vec<Value>, String> {
        api.handle(Request::new(Verb::List, r, ns, "", creds.clone())).map(|l| api::get_array(&l, &["items"]).to_vec()).map_err(|s| s.kubectl_message(None, ""))
    };
    let mut out = Vec::new();
    for (i, (r, name)) in ts.into_iter().enumerate() {
        if i > 0 {
            out.push(String::new());
            out.push(String::new());
        }
        let kind = RESOURCES[r].kind;
        if !matches!(kind, "Pod" | "Deployment" | "ReplicaSet" | "Service" | "Node") {
            out.push(format!("error: kubeloop cannot describe {} yet (it describes pods, deployments, replicasets, services and nodes)", RESOURCES[r].plural));
            continue;
        }
        let obj_ns = if RESOURCES[r].namespaced { ns } else { "" };
        let obj = match fetch(api, creds, r, obj_ns, &name) {
            Ok(o) => o,
            Err(e) => {
                out.push(e);
                continue;
            }
        };
        // Events are read with the caller's rights; without them, describe shows none.
        let mut events = if kind == "Node" {
            // A node's events are in the default namespace, named by the node.
            let all = api.handle(Request::new(Verb::List, crate::foundation::api::rid::EVENT, "", "", creds.clone()));
            all.map(|l| api::get_array(&l, &["items"]).to_vec()).unwrap_or_default()
        } else {
            list(api, crate::foundation::api::rid::EVENT).unwrap_or_default()
        };
        events.retain(|e| {
            get_str(e, &["involvedObject", "uid"]) == Some(api::uid(&obj))
                || (kind == "Node" && get_str(e, &["involvedObject", "kind"]) == Some("Node") && get_str(e, &["involvedObject", "name"]) == Some(name.as_str()))
        });
        events.sort_by(|a, b| get_str(a, &["lastTimestamp"]).cmp(&get_str(b, &["lastTimestamp"])));
        let events: Vec<&Value> = events.iter().collect();
        let owned = |api: &mut ApiServer, r: ResourceId| -> Vec<Value> {
            let mut xs = list(api, r).unwrap_or_default();
            xs.retain(|x| api::controller_ref(x).and_then(|c| get_str(c, &["uid"])) == Some(api::uid(&obj)));
            xs
        };
        let text = match kind {
            "Pod" => crate::kubectl::describe::pod(&obj, &events, api.now),
            "ReplicaSet" => {
                let pods = owned(api, crate::foundation::api::rid::POD);
                crate::kubectl::describe::replica_set(&obj, &pods.iter().collect::<Vec<_>>(), &events, api.now)
            }
            "Service" => {
                let slices = list(api, crate::foundation::api::rid::ENDPOINTSLICE).unwrap_or_default();
                let addresses: Vec<String> = slices
                    .iter()
                    .filter(|sl| api::labels(sl).and_then(|l| l.get("kubernetes.io/service-name")).and_then(Value::as_str) == Some(name.as_str()))
                    .flat_map(|sl| api::get_array(sl, &["endpoints"]).iter())
                    .filter(|e| api::get_bool(e, &["conditions", "ready"]) != Some(false))
                    .flat_map(|e| api::get_array(e, &["addresses"]).iter().filter_map(Value::as_str).map(str::to_string))
                    .collect();
                crate::kubectl::describe::service(&obj, &addresses, &events, api.now)
            }
            "Node" => {
                let pods = api.handle(Request::new(Verb::List, crate::foundation::api::rid::POD, "", "", creds.clone()));
                let pods: Vec<Value> = pods
                    .map(|l| api::get_array(&l, &["items"]).to_vec())
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|p| {
                        get_str(p, &["spec", "nodeName"]) == Some(name.as_str()) && !matches!(get_str(p, &["status", "phase"]), Some("Succeeded" | "Failed"))
                    })
                    .collect();
                let lease = api.handle(Request::new(Verb::Get, crate::foundation::api::rid::LEASE, "kube-node-lease", &name, creds.clone())).ok();
                crate::kubectl::describe::node(&obj, &pods.iter().collect::<Vec<_>>(), lease.as_deref(), &events, api.now)
            }
            _ => crate::kubectl::describe::deployment(&obj, &owned(api, crate::foundation::api::rid::REPLICASET).iter().collect::<Vec<_>>(), &events, api.now),
        };
        out.extend(text.lines().map(str::to_string));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tabwriter_aligns_column_blocks_like_go() {
        assert_eq!(
            tabwrite("Name:\tweb\nNamespace:\tdefault\nContainers:\n  a:\n    Image:\tnginx\n"),
            "Name:       web\nNamespace:  default\nContainers:\n  a:\n    Image:  nginx\n"
        );
        assert_eq!(
            tabwrite("  Type\tReason\tAge\n  ----\t------\t---\n  Normal\tScheduled\t5s\n"),
            "  Type    Reason     Age\n  ----    ------     ---\n  Normal  Scheduled  5s\n"
        );
    }

    #[test]
    fn times_print_as_rfc1123z() {
        assert_eq!(rfc1123z("2026-01-01T00:00:02Z"), "Thu, 01 Jan 2026 00:00:02 +0000");
        assert_eq!(rfc1123z("2026-03-01T13:04:05Z"), "Sun, 01 Mar 2026 13:04:05 +0000");
    }
}
