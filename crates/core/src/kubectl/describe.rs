//! `kubectl describe` for pods, the workloads (deployments, replica sets, replication
//! controllers, stateful sets, daemon sets, jobs, cron jobs), disruption budgets,
//! horizontal pod autoscalers, services and nodes (`k8s.io/kubectl/pkg/describe/describe.go`):
//! sections of `Key:\tvalue` lines aligned by Go's tabwriter (min width 0, padding 2), and
//! the Events table.

use super::{fetch, targets, Flags};
use crate::apiserver::{ApiServer, Credentials, Request, Verb};
use crate::foundation::api::{self, get, get_array, get_i64, get_str};
use crate::foundation::api::{ResourceId, RESOURCES};
use crate::foundation::sim::{parse_rfc3339, Millis};
use crate::foundation::sort::Sort;
use crate::foundation::value::Value;
use crate::kubectl::printers::human_duration;
use std::collections::BTreeSet;

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
fn annotations_multiline(out: &mut String, title: &str, m: Option<&Value>) {
    const MAX: usize = 140;
    let entries: Vec<(&str, &str)> = m
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.as_str() != "kubectl.kubernetes.io/last-applied-configuration")
        .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
        .collect();
    if entries.is_empty() {
        out.push_str(&format!("{title}:\t<none>\n"));
        return;
    }
    out.push_str(&format!("{title}:\t"));
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

/// `describeStatus`: a container's state as of its status.
fn container_state(o: &mut String, title: &str, st: Option<&Value>) {
    let at = |v: &Value, k: &str| rfc1123z(get_str(v, &[k]).unwrap_or(""));
    if let Some(r) = st.and_then(|s| s.get("running")) {
        o.push_str(&format!("    {title}:\tRunning\n      Started:\t{}\n", at(r, "startedAt")));
    } else if let Some(w) = st.and_then(|s| s.get("waiting")) {
        o.push_str(&format!("    {title}:\tWaiting\n"));
        if let Some(r) = get_str(w, &["reason"]).filter(|r| !r.is_empty()) {
            o.push_str(&format!("      Reason:\t{r}\n"));
        }
    } else if let Some(t) = st.and_then(|s| s.get("terminated")) {
        o.push_str(&format!("    {title}:\tTerminated\n"));
        for (label, key) in [("Reason", "reason"), ("Message", "message")] {
            if let Some(v) = get_str(t, &[key]).filter(|v| !v.is_empty()) {
                o.push_str(&format!("      {label}:\t{v}\n"));
            }
        }
        o.push_str(&format!("      Exit Code:\t{}\n", get_i64(t, &["exitCode"]).unwrap_or(0)));
        if let Some(sig) = get_i64(t, &["signal"]).filter(|s| *s > 0) {
            o.push_str(&format!("      Signal:\t{sig}\n"));
        }
        o.push_str(&format!("      Started:\t{}\n      Finished:\t{}\n", at(t, "startedAt"), at(t, "finishedAt")));
    } else {
        o.push_str(&format!("    {title}:\tWaiting\n"));
    }
}

/// An `intstr.IntOrString` as Go's `String()` prints it.
fn int_or_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.to_string(),
        Some(v) if !v.is_null() => v.to_string(),
        _ => "0".into(),
    }
}

/// `DescribeProbe`.
fn probe(p: &Value) -> String {
    let n = |k: &str| get_i64(p, &[k]).unwrap_or(0);
    let attrs = format!(
        "delay={}s timeout={}s period={}s #success={} #failure={}",
        n("initialDelaySeconds"),
        n("timeoutSeconds"),
        n("periodSeconds"),
        n("successThreshold"),
        n("failureThreshold")
    );
    if let Some(e) = p.get("exec") {
        let cmd: Vec<&str> = get_array(e, &["command"]).iter().filter_map(Value::as_str).collect();
        format!("exec [{}] {attrs}", cmd.join(" "))
    } else if let Some(h) = p.get("httpGet") {
        // `url.URL.String()` over scheme, `net.JoinHostPort(host, port)` and path.
        let host = get_str(h, &["host"]).unwrap_or("");
        let host = if host.contains(':') { format!("[{host}]") } else { host.to_string() };
        let path = get_str(h, &["path"]).unwrap_or("");
        let slash = if !path.is_empty() && !path.starts_with('/') { "/" } else { "" };
        let scheme = get_str(h, &["scheme"]).unwrap_or("").to_ascii_lowercase();
        format!("http-get {scheme}://{host}:{}{slash}{path} {attrs}", int_or_string(h.get("port")))
    } else if let Some(t) = p.get("tcpSocket") {
        format!("tcp-socket {}:{} {attrs}", get_str(t, &["host"]).unwrap_or(""), int_or_string(t.get("port")))
    } else if let Some(g) = p.get("grpc") {
        format!("grpc <pod>:{} {} {attrs}", get_i64(g, &["port"]).unwrap_or(0), get_str(g, &["service"]).unwrap_or(""))
    } else {
        format!("unknown {attrs}")
    }
}

/// `describeResources` at container level: limits, then requests, names sorted.
fn resources(o: &mut String, c: &Value) {
    for (title, key) in [("Limits", "limits"), ("Requests", "requests")] {
        if let Some(m) = get(c, &["resources", key]).and_then(Value::as_object).filter(|m| !m.is_empty()) {
            o.push_str(&format!("    {title}:\n"));
            for (k, v) in m {
                let q = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
                o.push_str(&format!("      {k}:\t{}\n", crate::foundation::quantity::canonical(&q)));
            }
        }
    }
}

/// `describeContainerPorts` / `describeContainerHostPorts`: `80/TCP (http), 443/TCP`.
fn port_list(ports: &[Value], key: &str) -> String {
    ports
        .iter()
        .map(|pt| {
            let s = format!("{}/{}", get_i64(pt, &[key]).unwrap_or(0), get_str(pt, &["protocol"]).unwrap_or("TCP"));
            match get_str(pt, &["name"]).filter(|n| !n.is_empty()) {
                Some(n) => format!("{s} ({n})"),
                None => s,
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `fieldpath.ExtractFieldPathAsString` over a pod: kubectl resolves metadata fields only.
fn pod_field(pod: &Value, path: &str) -> String {
    let subscript = |prefix: &str| path.strip_prefix(prefix).and_then(|r| r.strip_prefix("['")).and_then(|r| r.strip_suffix("']"));
    let format_map = |m: Option<&Value>| {
        m.and_then(Value::as_object).into_iter().flatten().map(|(k, v)| format!("{k}={:?}", v.as_str().unwrap_or(""))).collect::<Vec<_>>().join("\n")
    };
    if let Some(k) = subscript("metadata.annotations") {
        return api::annotation(pod, k).unwrap_or("").to_string();
    }
    if let Some(k) = subscript("metadata.labels") {
        return api::label(pod, k).unwrap_or("").to_string();
    }
    match path {
        "metadata.annotations" => format_map(get(pod, &["metadata", "annotations"])),
        "metadata.labels" => format_map(get(pod, &["metadata", "labels"])),
        "metadata.name" => api::name(pod).to_string(),
        "metadata.namespace" => api::namespace(pod).to_string(),
        "metadata.uid" => api::uid(pod).to_string(),
        _ => String::new(),
    }
}

/// `ExtractContainerResourceValue`: a container's request or limit divided by the
/// selector's divisor (1 when unset), rounded up.
fn container_resource(c: &Value, sel: &Value) -> String {
    let Some((kind, res)) = get_str(sel, &["resource"]).and_then(|r| r.split_once('.')) else { return String::new() };
    if !matches!(kind, "limits" | "requests") || !matches!(res, "cpu" | "memory" | "ephemeral-storage") {
        return String::new();
    }
    let milli = get(c, &["resources", kind, res]).and_then(crate::foundation::quantity::value_milli).unwrap_or(0) as i128;
    let divisor = get(sel, &["divisor"]).and_then(crate::foundation::quantity::value_milli).filter(|d| *d != 0).unwrap_or(1000) as i128;
    let (num, den) = if res == "cpu" {
        (milli, divisor)
    } else {
        // `Quantity.Value()` rounds milli-units up to whole units.
        let up = |m: i128| (m + 999).div_euclid(1000);
        (up(milli), up(divisor).max(1))
    };
    (num + den - 1).div_euclid(den).to_string()
}

/// `describeContainers`: each container's image, ports, command, state (when `statuses`
/// has it), resources, probes, environment and mounts. A pod's are at the left margin; a
/// template's (`space` is two spaces) one step in. `pod` resolves `fieldRef` values, as
/// kubectl does for pods only.
fn containers(o: &mut String, label: &str, list: &[Value], statuses: &[Value], pod: Option<&Value>, space: &str) {
    o.push_str(&format!("{space}{label}:{}\n", if list.is_empty() { " <none>" } else { "" }));
    let name_indent = if space.is_empty() { "" } else { " " };
    for c in list {
        let s = |k: &str| get_str(c, &[k]).unwrap_or("");
        let st = statuses.iter().find(|x| get_str(x, &["name"]) == Some(s("name")));
        o.push_str(&format!("  {name_indent}{}:\n", s("name")));
        if let Some(st) = st {
            o.push_str(&format!("    Container ID:\t{}\n", get_str(st, &["containerID"]).unwrap_or("")));
        }
        o.push_str(&format!("    Image:\t{}\n", s("image")));
        if let Some(st) = st {
            o.push_str(&format!("    Image ID:\t{}\n", get_str(st, &["imageID"]).unwrap_or("")));
        }
        let ports = get_array(c, &["ports"]);
        for (title, key) in [("Port", "containerPort"), ("Host Port", "hostPort")] {
            let list = port_list(ports, key);
            if list.contains(',') {
                o.push_str(&format!("    {title}s:\t{list}\n"));
            } else {
                o.push_str(&format!("    {title}:\t{}\n", if list.is_empty() { "<none>" } else { &list }));
            }
        }
        if let Some(sp) = get(c, &["securityContext", "seccompProfile"]) {
            let ty = get_str(sp, &["type"]).unwrap_or("");
            o.push_str(&format!("    SeccompProfile:\t{ty}\n"));
            if ty == "Localhost" {
                o.push_str(&format!("      LocalhostProfile:\t{}\n", get_str(sp, &["localhostProfile"]).unwrap_or("")));
            }
        }
        for (title, key) in [("Command", "command"), ("Args", "args")] {
            let items = get_array(c, &[key]);
            if !items.is_empty() {
                o.push_str(&format!("    {title}:\n"));
                for line in items.iter().filter_map(Value::as_str).flat_map(|a| a.split('\n')) {
                    o.push_str(&format!("      {line}\n"));
                }
            }
        }
        if let Some(st) = st {
            container_state(o, "State", st.get("state"));
            if let Some(last) = st.get("lastState").filter(|l| l.get("terminated").is_some()) {
                container_state(o, "Last State", Some(last));
            }
            o.push_str(&format!("    Ready:\t{}\n", if api::get_bool(st, &["ready"]) == Some(true) { "True" } else { "False" }));
            o.push_str(&format!("    Restart Count:\t{}\n", get_i64(st, &["restartCount"]).unwrap_or(0)));
        }
        resources(o, c);
        for (title, key) in [("Liveness", "livenessProbe"), ("Readiness", "readinessProbe"), ("Startup", "startupProbe")] {
            if let Some(pr) = c.get(key) {
                o.push_str(&format!("    {title}:\t{}\n", probe(pr)));
            }
        }
        env_from(o, get_array(c, &["envFrom"]));
        env(o, c, pod);
        mounts(o, c);
    }
}

/// `describeContainerEnvFrom`, printed only when the container has sources.
fn env_from(o: &mut String, sources: &[Value]) {
    if sources.is_empty() {
        return;
    }
    o.push_str("    Environment Variables from:\n");
    for e in sources {
        let (from, r) = match (e.get("configMapRef"), e.get("secretRef")) {
            (Some(r), _) => ("ConfigMap", Some(r)),
            (None, Some(r)) => ("Secret", Some(r)),
            _ => ("", None),
        };
        let name = r.and_then(|r| get_str(r, &["name"])).unwrap_or("");
        let optional = r.and_then(|r| api::get_bool(r, &["optional"])).unwrap_or(false);
        match get_str(e, &["prefix"]).filter(|p| !p.is_empty()) {
            None => o.push_str(&format!("      {name}\t{from}\tOptional: {optional}\n")),
            Some(p) => o.push_str(&format!("      {name}\t{from} with prefix '{p}'\tOptional: {optional}\n")),
        }
    }
}

/// `describeContainerEnvVars`.
fn env(o: &mut String, c: &Value, pod: Option<&Value>) {
    let vars = get_array(c, &["env"]);
    o.push_str(if vars.is_empty() { "    Environment:\t<none>\n" } else { "    Environment:\n" });
    for e in vars {
        let name = get_str(e, &["name"]).unwrap_or("");
        let Some(from) = e.get("valueFrom") else {
            for (i, line) in get_str(e, &["value"]).unwrap_or("").split('\n').enumerate() {
                o.push_str(&if i == 0 { format!("      {name}:\t{line}\n") } else { format!("      \t{line}\n") });
            }
            continue;
        };
        let key_ref = |k: &str| {
            from.get(k).map(|r| (get_str(r, &["key"]).unwrap_or(""), get_str(r, &["name"]).unwrap_or(""), api::get_bool(r, &["optional"]) == Some(true)))
        };
        if let Some(f) = from.get("fieldRef") {
            let path = get_str(f, &["fieldPath"]).unwrap_or("");
            let value = pod.map(|p| pod_field(p, path)).unwrap_or_default();
            o.push_str(&format!("      {name}:\t{value} ({}:{path})\n", get_str(f, &["apiVersion"]).unwrap_or("")));
        } else if let Some(r) = from.get("resourceFieldRef") {
            let resource = get_str(r, &["resource"]).unwrap_or("");
            let mut value = container_resource(c, r);
            if value == "0" && matches!(resource, "limits.cpu" | "limits.memory") {
                value = "node allocatable".into();
            }
            o.push_str(&format!("      {name}:\t{value} ({resource})\n"));
        } else if let Some((key, secret, optional)) = key_ref("secretKeyRef") {
            o.push_str(&format!("      {name}:\t<set to the key '{key}' in secret '{secret}'>\tOptional: {optional}\n"));
        } else if let Some((key, cm, optional)) = key_ref("configMapKeyRef") {
            o.push_str(&format!("      {name}:\t<set to the key '{key}' of config map '{cm}'>\tOptional: {optional}\n"));
        }
    }
}

/// `describeContainerVolumes`: mounts sorted by path, then devices.
fn mounts(o: &mut String, c: &Value) {
    let mut list: Vec<&Value> = get_array(c, &["volumeMounts"]).iter().collect();
    let none = if list.is_empty() { "\t<none>" } else { "" };
    o.push_str(&format!("    Mounts:{none}\n"));
    list.sort_stable_by_key(|m| get_str(m, &["mountPath"]).unwrap_or(""));
    for m in list {
        let mut flags = vec![if api::get_bool(m, &["readOnly"]) == Some(true) { "ro".to_string() } else { "rw".to_string() }];
        if let Some(sub) = get_str(m, &["subPath"]).filter(|s| !s.is_empty()) {
            flags.push(format!("path={sub:?}"));
        }
        o.push_str(&format!("      {} from {} ({})\n", get_str(m, &["mountPath"]).unwrap_or(""), get_str(m, &["name"]).unwrap_or(""), flags.join(",")));
    }
    let mut devices: Vec<&Value> = get_array(c, &["volumeDevices"]).iter().collect();
    if !devices.is_empty() {
        o.push_str("    Devices:\n");
        devices.sort_stable_by_key(|d| get_str(d, &["devicePath"]).unwrap_or(""));
        for d in devices {
            o.push_str(&format!("      {} from {}\n", get_str(d, &["devicePath"]).unwrap_or(""), get_str(d, &["name"]).unwrap_or("")));
        }
    }
}

/// `describeVolumes`: a pod's volumes (`space` empty) or a template's (two spaces).
fn volumes(o: &mut String, vols: &[Value], space: &str) {
    if vols.is_empty() {
        o.push_str(&format!("{space}Volumes:\t<none>\n"));
        return;
    }
    o.push_str(&format!("{space}Volumes:\n"));
    let name_indent = if space.is_empty() { "" } else { " " };
    let b = |v: &Value, k: &str| api::get_bool(v, &[k]).unwrap_or(false);
    let s = |v: &Value, k: &str| get_str(v, &[k]).unwrap_or("").to_string();
    for v in vols {
        o.push_str(&format!("  {name_indent}{}:\n", s(v, "name")));
        if let Some(h) = v.get("hostPath") {
            let ty = get_str(h, &["type"]).unwrap_or("<none>");
            o.push_str(&format!("    Type:\tHostPath (bare host directory volume)\n    Path:\t{}\n    HostPathType:\t{ty}\n", s(h, "path")));
        } else if let Some(ed) = v.get("emptyDir") {
            let limit = get(ed, &["sizeLimit"]).filter(|q| !q.is_null()).map(|q| q.as_str().map(str::to_string).unwrap_or_else(|| q.to_string()));
            let limit = limit.filter(|q| crate::foundation::quantity::parse_milli(q).is_some_and(|m| m > 0));
            o.push_str(&format!(
                "    Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)\n    Medium:\t{}\n    SizeLimit:\t{}\n",
                s(ed, "medium"),
                limit.map(|q| crate::foundation::quantity::canonical(&q)).unwrap_or_else(|| "<unset>".into())
            ));
        } else if let Some(sec) = v.get("secret") {
            o.push_str(&format!(
                "    Type:\tSecret (a volume populated by a Secret)\n    SecretName:\t{}\n    Optional:\t{}\n",
                s(sec, "secretName"),
                b(sec, "optional")
            ));
        } else if let Some(cm) = v.get("configMap") {
            o.push_str(&format!(
                "    Type:\tConfigMap (a volume populated by a ConfigMap)\n    Name:\t{}\n    Optional:\t{}\n",
                s(cm, "name"),
                b(cm, "optional")
            ));
        } else if let Some(nfs) = v.get("nfs") {
            o.push_str(&format!(
                "    Type:\tNFS (an NFS mount that lasts the lifetime of a pod)\n    Server:\t{}\n    Path:\t{}\n    ReadOnly:\t{}\n",
                s(nfs, "server"),
                s(nfs, "path"),
                b(nfs, "readOnly")
            ));
        } else if let Some(pvc) = v.get("persistentVolumeClaim") {
            o.push_str(&format!(
                "    Type:\tPersistentVolumeClaim (a reference to a PersistentVolumeClaim in the same namespace)\n    ClaimName:\t{}\n    ReadOnly:\t{}\n",
                s(pvc, "claimName"),
                b(pvc, "readOnly")
            ));
        } else if let Some(d) = v.get("downwardAPI") {
            o.push_str("    Type:\tDownwardAPI (a volume populated by information about the pod)\n    Items:\n");
            for item in get_array(d, &["items"]) {
                if let Some(f) = item.get("fieldRef") {
                    o.push_str(&format!("      {} -> {}\n", s(f, "fieldPath"), s(item, "path")));
                }
                if let Some(r) = item.get("resourceFieldRef") {
                    o.push_str(&format!("      {} -> {}\n", s(r, "resource"), s(item, "path")));
                }
            }
        } else if let Some(pj) = v.get("projected") {
            o.push_str("    Type:\tProjected (a volume that contains injected data from multiple sources)\n");
            for src in get_array(pj, &["sources"]) {
                if let Some(sec) = src.get("secret") {
                    o.push_str(&format!("    SecretName:\t{}\n    Optional:\t{}\n", s(sec, "name"), b(sec, "optional")));
                } else if src.get("downwardAPI").is_some() {
                    o.push_str("    DownwardAPI:\ttrue\n");
                } else if let Some(cm) = src.get("configMap") {
                    // kubectl prints the *bool itself here: `<nil>` when unset.
                    let optional = api::get_bool(cm, &["optional"]).map(|b| b.to_string()).unwrap_or_else(|| "<nil>".into());
                    o.push_str(&format!("    ConfigMapName:\t{}\n    ConfigMapOptional:\t{optional}\n", s(cm, "name")));
                } else if let Some(t) = src.get("serviceAccountToken") {
                    o.push_str(&format!("    TokenExpirationSeconds:\t{}\n", get_i64(t, &["expirationSeconds"]).unwrap_or(3600)));
                }
            }
        } else if let Some(csi) = v.get("csi") {
            o.push_str(&format!(
                "    Type:\tCSI (a Container Storage Interface (CSI) volume source)\n    Driver:\t{}\n    FSType:\t{}\n    ReadOnly:\t{}\n",
                s(csi, "driver"),
                s(csi, "fsType"),
                b(csi, "readOnly")
            ));
            let attrs: Vec<String> = get(csi, &["volumeAttributes"])
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(k, v)| {
                    let line = format!("{k}={}", v.as_str().unwrap_or(""));
                    if line.len() > 140 {
                        format!("{}...", &line[..line.floor_char_boundary(140)])
                    } else {
                        line
                    }
                })
                .collect();
            if attrs.is_empty() {
                o.push_str("    VolumeAttributes:\t<none>\n");
            }
            for (i, a) in attrs.iter().enumerate() {
                o.push_str(&if i == 0 { format!("    VolumeAttributes:\t{a}\n") } else { format!("    \t{a}\n") });
            }
        } else if let Some(img) = v.get("image") {
            o.push_str(&format!(
                "    Type:\tImage (a container image or OCI artifact)\n    Reference:\t{}\n    PullPolicy:\t{}\n",
                s(img, "reference"),
                s(img, "pullPolicy")
            ));
        } else {
            o.push_str("  <unknown>\n");
        }
    }
}

/// `printTolerationsMultilineWithIndent`: sorted by key.
fn tolerations(o: &mut String, title: &str, list: &[Value]) {
    let mut list: Vec<&Value> = list.iter().collect();
    if list.is_empty() {
        o.push_str(&format!("{title}:\t<none>\n"));
        return;
    }
    list.sort_stable_by_key(|t| get_str(t, &["key"]).unwrap_or(""));
    for (i, t) in list.iter().enumerate() {
        let field = |k: &str| get_str(t, &[k]).unwrap_or("");
        let mut s = if i == 0 { format!("{title}:\t") } else { "\t".to_string() };
        s.push_str(field("key"));
        if !field("value").is_empty() {
            s.push_str(&format!("={}", field("value")));
        }
        if !field("effect").is_empty() {
            s.push_str(&format!(":{}", field("effect")));
        }
        // `operator: Exists` with no key and no effect tolerates everything.
        if field("operator") == "Exists" && field("value").is_empty() {
            s.push_str(if field("key").is_empty() && field("effect").is_empty() { "op=Exists" } else { " op=Exists" });
        }
        if let Some(secs) = get_i64(t, &["tolerationSeconds"]) {
            s.push_str(&format!(" for {secs}s"));
        }
        o.push_str(&s);
        o.push('\n');
    }
}

/// `describeTopologySpreadConstraints`, sorted by topology key; nothing when there are none.
fn topology_spread(o: &mut String, list: &[Value], space: &str) {
    let mut list: Vec<&Value> = list.iter().collect();
    list.sort_stable_by_key(|c| get_str(c, &["topologyKey"]).unwrap_or(""));
    for (i, c) in list.iter().enumerate() {
        o.push_str(&if i == 0 { format!("{space}Topology Spread Constraints:\t") } else { format!("{space}\t") });
        o.push_str(&format!(
            "{}:{} when max skew {} is exceeded",
            get_str(c, &["topologyKey"]).unwrap_or(""),
            get_str(c, &["whenUnsatisfiable"]).unwrap_or(""),
            get_i64(c, &["maxSkew"]).unwrap_or(0)
        ));
        if let Some(sel) = c.get("labelSelector").filter(|s| !s.is_null()) {
            o.push_str(&format!(" for selector {}", label_selector(Some(sel))));
        }
        o.push('\n');
    }
}

/// `DescribePodTemplate`: the `Pod Template:` section of a workload, with the template's
/// containers described as a pod's are, minus their statuses.
fn pod_template(o: &mut String, template: Option<&Value>) {
    o.push_str("Pod Template:\n");
    let Some(t) = template.filter(|t| !t.is_null()) else {
        // kubectl writes no newline here.
        o.push_str("  <unset>");
        return;
    };
    map_multiline(o, "  Labels", get(t, &["metadata", "labels"]));
    if get(t, &["metadata", "annotations"]).and_then(Value::as_object).is_some_and(|m| !m.is_empty()) {
        annotations_multiline(o, "  Annotations", get(t, &["metadata", "annotations"]));
    }
    let spec = |k: &str| get_str(t, &["spec", k]).filter(|v| !v.is_empty());
    if let Some(sa) = spec("serviceAccountName") {
        o.push_str(&format!("  Service Account:\t{sa}\n"));
    }
    let init = get_array(t, &["spec", "initContainers"]);
    if !init.is_empty() {
        containers(o, "Init Containers", init, &[], None, "  ");
    }
    containers(o, "Containers", get_array(t, &["spec", "containers"]), &[], None, "  ");
    volumes(o, get_array(t, &["spec", "volumes"]), "  ");
    topology_spread(o, get_array(t, &["spec", "topologySpreadConstraints"]), "  ");
    if let Some(pc) = spec("priorityClassName") {
        o.push_str(&format!("  Priority Class Name:\t{pc}\n"));
    }
    map_multiline(o, "  Node-Selectors", get(t, &["spec", "nodeSelector"]));
    tolerations(o, "  Tolerations", get_array(t, &["spec", "tolerations"]));
}

/// A workload's `Conditions:` table (type, status, reason), if it has conditions; kubectl
/// writes a space after the type.
fn conditions(o: &mut String, obj: &Value) {
    let conds = get_array(obj, &["status", "conditions"]);
    if conds.is_empty() {
        return;
    }
    o.push_str("Conditions:\n  Type\tStatus\tReason\n  ----\t------\t------\n");
    for c in conds {
        let s = |k: &str| get_str(c, &[k]).unwrap_or("");
        o.push_str(&format!("  {} \t{}\t{}\n", s("type"), s("status"), s("reason")));
    }
}

/// `metav1.LabelSelectorAsSelector(sel).String()`: requirements sorted by key, values
/// sorted; empty for a null or empty selector.
fn selector_text(sel: Option<&Value>) -> String {
    let sel = sel.filter(|s| !s.is_null());
    let mut reqs: Vec<(String, String)> = sel
        .and_then(|s| s.get("matchLabels"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.to_string(), format!("{k}={}", v.as_str().unwrap_or(""))))
        .collect();
    for e in sel.map(|s| get_array(s, &["matchExpressions"])).unwrap_or(&[]) {
        let key = get_str(e, &["key"]).unwrap_or("");
        let mut vals: Vec<&str> = get_array(e, &["values"]).iter().filter_map(Value::as_str).collect();
        vals.sort_unstable();
        let text = match get_str(e, &["operator"]).unwrap_or("") {
            "In" => format!("{key} in ({})", vals.join(",")),
            "NotIn" => format!("{key} notin ({})", vals.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            // `LabelSelectorAsSelector` fails on any other operator.
            _ => return "<error>".into(),
        };
        reqs.push((key.to_string(), text));
    }
    reqs.sort_stable_by(|a, b| a.0.cmp(&b.0));
    reqs.into_iter().map(|(_, t)| t).collect::<Vec<_>>().join(",")
}

/// `metav1.FormatLabelSelector`: `app=web,tier in (a,b)`, or `<none>`.
fn label_selector(sel: Option<&Value>) -> String {
    let s = selector_text(sel);
    if s.is_empty() {
        "<none>".into()
    } else {
        s
    }
}

/// `labels.FormatLabels`: `a=b,c=d` sorted by key, or `<none>`.
fn format_labels(m: Option<&Value>) -> String {
    let parts: Vec<String> = m.and_then(Value::as_object).into_iter().flatten().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))).collect();
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

/// The `Pods Status:` line of `getPodStatusForController`: `pods` are those the workload
/// selects and controls.
fn pods_status(o: &mut String, pods: &[&Value]) {
    let phase = |p: &str| pods.iter().filter(|x| get_str(x, &["status", "phase"]) == Some(p)).count();
    o.push_str(&format!(
        "Pods Status:\t{} Running / {} Waiting / {} Succeeded / {} Failed\n",
        phase("Running"),
        phase("Pending"),
        phase("Succeeded"),
        phase("Failed")
    ));
}

/// `kubectl describe replicaset`; `pods` are the pods it selects and controls.
pub fn replica_set(r: &Value, pods: &[&Value], events: &[&Value], now: Millis) -> String {
    let mut o = String::new();
    o.push_str(&format!("Name:\t{}\nNamespace:\t{}\n", api::name(r), api::namespace(r)));
    o.push_str(&format!("Selector:\t{}\n", label_selector(get(r, &["spec", "selector"]))));
    map_multiline(&mut o, "Labels", get(r, &["metadata", "labels"]));
    annotations_multiline(&mut o, "Annotations", get(r, &["metadata", "annotations"]));
    controlled_by(&mut o, r);
    o.push_str(&format!(
        "Replicas:\t{} current / {} desired\n",
        get_i64(r, &["status", "replicas"]).unwrap_or(0),
        get_i64(r, &["spec", "replicas"]).unwrap_or(1)
    ));
    pods_status(&mut o, pods);
    pod_template(&mut o, get(r, &["spec", "template"]));
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
    annotations_multiline(&mut o, "Annotations", get(svc, &["metadata", "annotations"]));
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
    annotations_multiline(&mut o, "Annotations", get(n, &["metadata", "annotations"]));
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
    annotations_multiline(&mut o, "Annotations", get(p, &["metadata", "annotations"]));
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
    let init = get_array(p, &["spec", "initContainers"]);
    if !init.is_empty() {
        containers(&mut o, "Init Containers", init, get_array(p, &["status", "initContainerStatuses"]), Some(p), "");
    }
    containers(&mut o, "Containers", get_array(p, &["spec", "containers"]), get_array(p, &["status", "containerStatuses"]), Some(p), "");
    let ephemeral = get_array(p, &["spec", "ephemeralContainers"]);
    if !ephemeral.is_empty() {
        containers(&mut o, "Ephemeral Containers", ephemeral, get_array(p, &["status", "ephemeralContainerStatuses"]), Some(p), "");
    }
    let conds = get_array(p, &["status", "conditions"]);
    if !conds.is_empty() {
        o.push_str("Conditions:\n  Type\tStatus\n");
        for c in conds {
            o.push_str(&format!("  {} \t{} \n", get_str(c, &["type"]).unwrap_or(""), get_str(c, &["status"]).unwrap_or("")));
        }
    }
    volumes(&mut o, get_array(p, &["spec", "volumes"]), "");
    o.push_str(&format!("QoS Class:\t{}\n", get_str(p, &["status", "qosClass"]).unwrap_or("")));
    map_multiline(&mut o, "Node-Selectors", get(p, &["spec", "nodeSelector"]));
    tolerations(&mut o, "Tolerations", get_array(p, &["spec", "tolerations"]));
    topology_spread(&mut o, get_array(p, &["spec", "topologySpreadConstraints"]), "");
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
    annotations_multiline(&mut o, "Annotations", get(d, &["metadata", "annotations"]));
    o.push_str(&format!("Selector:\t{}\n", selector_text(get(d, &["spec", "selector"]))));
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
    pod_template(&mut o, get(d, &["spec", "template"]));
    conditions(&mut o, d);
    let rs_text = |list: &[&Value]| {
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
    // `deploymentutil.GetAllReplicaSets`: by creation time (then name), the oldest whose
    // template is the Deployment's (ignoring the hash label) is the new one, and every
    // other is old, scaled to zero or not.
    let mut rs: Vec<&Value> = rs.to_vec();
    rs.sort_stable_by(|a, b| {
        let t = |r: &Value| get_str(r, &["metadata", "creationTimestamp"]).and_then(parse_rfc3339).unwrap_or(0);
        t(a).cmp(&t(b)).then_with(|| api::name(a).cmp(api::name(b)))
    });
    let same_template = |r: &Value| {
        let mut t = get(r, &["spec", "template"]).cloned().unwrap_or(Value::Null);
        if let Some(labels) = t.get_mut("metadata").and_then(|m| m.get_mut("labels")).and_then(Value::as_object_mut) {
            labels.remove("pod-template-hash");
        }
        Some(&t) == get(d, &["spec", "template"])
    };
    let new: Vec<&Value> = rs.iter().copied().find(|r| same_template(r)).into_iter().collect();
    let old: Vec<&Value> = rs.iter().copied().filter(|r| new.first().is_none_or(|n| api::uid(n) != api::uid(r))).collect();
    if !old.is_empty() || !new.is_empty() {
        o.push_str(&format!("OldReplicaSets:\t{}\n", rs_text(&old)));
        o.push_str(&format!("NewReplicaSet:\t{}\n", rs_text(&new)));
    }
    events_section(&mut o, events, now);
    tabwrite(&o)
}

/// `kubectl describe replicationcontroller`; `pods` are the pods it selects and controls.
pub fn replication_controller(rc: &Value, pods: &[&Value], events: &[&Value], now: Millis) -> String {
    let mut o = String::new();
    o.push_str(&format!("Name:\t{}\nNamespace:\t{}\n", api::name(rc), api::namespace(rc)));
    o.push_str(&format!("Selector:\t{}\n", format_labels(get(rc, &["spec", "selector"]))));
    map_multiline(&mut o, "Labels", get(rc, &["metadata", "labels"]));
    annotations_multiline(&mut o, "Annotations", get(rc, &["metadata", "annotations"]));
    o.push_str(&format!(
        "Replicas:\t{} current / {} desired\n",
        get_i64(rc, &["status", "replicas"]).unwrap_or(0),
        get_i64(rc, &["spec", "replicas"]).unwrap_or(1)
    ));
    pods_status(&mut o, pods);
    pod_template(&mut o, get(rc, &["spec", "template"]));
    conditions(&mut o, rc);
    events_section(&mut o, events, now);
    tabwrite(&o)
}

/// `describeVolumeClaimTemplates` of a StatefulSet.
fn volume_claim_templates(o: &mut String, templates: &[Value]) {
    if templates.is_empty() {
        o.push_str("Volume Claims:\t<none>\n");
        return;
    }
    o.push_str("Volume Claims:\n");
    for pvc in templates {
        o.push_str(&format!("  Name:\t{}\n", api::name(pvc)));
        // `GetPersistentVolumeClaimClass`: the field, else the beta annotation.
        let class = get_str(pvc, &["spec", "storageClassName"]).or_else(|| api::annotation(pvc, "volume.beta.kubernetes.io/storage-class")).unwrap_or("");
        o.push_str(&format!("  StorageClass:\t{class}\n"));
        // Labels and annotations alike as `key=value` lines, continued under the value.
        for (title, key) in [("Labels", "labels"), ("Annotations", "annotations")] {
            let entries: Vec<String> = get(pvc, &["metadata", key])
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect();
            if entries.is_empty() {
                o.push_str(&format!("  {title}:\t<none>\n"));
            }
            for (i, e) in entries.iter().enumerate() {
                o.push_str(&if i == 0 { format!("  {title}:\t{e}\n") } else { format!("  \t{e}\n") });
            }
        }
        let capacity = match get(pvc, &["spec", "resources", "requests", "storage"]) {
            Some(q) => crate::foundation::quantity::canonical(&q.as_str().map(str::to_string).unwrap_or_else(|| q.to_string())),
            None => "<default>".into(),
        };
        o.push_str(&format!("  Capacity:\t{capacity}\n"));
        // Go's `%s` of a slice of strings: `[ReadWriteOnce ReadOnlyMany]`.
        let modes: Vec<&str> = get_array(pvc, &["spec", "accessModes"]).iter().filter_map(Value::as_str).collect();
        o.push_str(&format!("  Access Modes:\t[{}]\n", modes.join(" ")));
    }
}

/// `kubectl describe statefulset`; `pods` are the pods it selects and controls.
pub fn stateful_set(s: &Value, pods: &[&Value], events: &[&Value], now: Millis) -> String {
    let mut o = String::new();
    o.push_str(&format!("Name:\t{}\nNamespace:\t{}\n", api::name(s), api::namespace(s)));
    o.push_str(&format!("CreationTimestamp:\t{}\n", rfc1123z(get_str(s, &["metadata", "creationTimestamp"]).unwrap_or(""))));
    o.push_str(&format!("Selector:\t{}\n", selector_text(get(s, &["spec", "selector"]))));
    map_multiline(&mut o, "Labels", get(s, &["metadata", "labels"]));
    annotations_multiline(&mut o, "Annotations", get(s, &["metadata", "annotations"]));
    o.push_str(&format!(
        "Replicas:\t{} desired | {} total\n",
        get_i64(s, &["spec", "replicas"]).unwrap_or(1),
        get_i64(s, &["status", "replicas"]).unwrap_or(0)
    ));
    o.push_str(&format!("Update Strategy:\t{}\n", get_str(s, &["spec", "updateStrategy", "type"]).unwrap_or("")));
    if let Some(ru) = get(s, &["spec", "updateStrategy", "rollingUpdate"]).filter(|r| !r.is_null()) {
        // kubectl prints MaxUnavailable only with a partition.
        if let Some(p) = get_i64(ru, &["partition"]) {
            o.push_str(&format!("  Partition:\t{p}\n"));
            if ru.get("maxUnavailable").is_some_and(|m| !m.is_null()) {
                o.push_str(&format!("  MaxUnavailable:\t{}\n", int_or_string(ru.get("maxUnavailable"))));
            }
        }
    }
    pods_status(&mut o, pods);
    pod_template(&mut o, get(s, &["spec", "template"]));
    volume_claim_templates(&mut o, get_array(s, &["spec", "volumeClaimTemplates"]));
    events_section(&mut o, events, now);
    tabwrite(&o)
}

/// `kubectl describe daemonset`; `pods` are the pods it selects and controls.
pub fn daemon_set(d: &Value, pods: &[&Value], events: &[&Value], now: Millis) -> String {
    let mut o = String::new();
    let status = |k: &str| get_i64(d, &["status", k]).unwrap_or(0);
    o.push_str(&format!("Name:\t{}\nNamespace:\t{}\n", api::name(d), api::namespace(d)));
    o.push_str(&format!("Selector:\t{}\n", selector_text(get(d, &["spec", "selector"]))));
    o.push_str(&format!("Node-Selector:\t{}\n", format_labels(get(d, &["spec", "template", "spec", "nodeSelector"]))));
    map_multiline(&mut o, "Labels", get(d, &["metadata", "labels"]));
    annotations_multiline(&mut o, "Annotations", get(d, &["metadata", "annotations"]));
    // These five lines have no tab: kubectl writes them with a plain space.
    o.push_str(&format!("Desired Number of Nodes Scheduled: {}\n", status("desiredNumberScheduled")));
    o.push_str(&format!("Current Number of Nodes Scheduled: {}\n", status("currentNumberScheduled")));
    o.push_str(&format!("Number of Nodes Scheduled with Up-to-date Pods: {}\n", status("updatedNumberScheduled")));
    o.push_str(&format!("Number of Nodes Scheduled with Available Pods: {}\n", status("numberAvailable")));
    o.push_str(&format!("Number of Nodes Misscheduled: {}\n", status("numberMisscheduled")));
    pods_status(&mut o, pods);
    pod_template(&mut o, get(d, &["spec", "template"]));
    events_section(&mut o, events, now);
    tabwrite(&o)
}

/// `capIndexesListOrNone`: a Job's completed indexes, cut at the first comma past 50
/// characters.
fn cap_indexes(indexes: &str, soft_limit: usize) -> String {
    if indexes.is_empty() {
        return "<none>".into();
    }
    match indexes.bytes().enumerate().skip(soft_limit).find(|(_, b)| *b == b',') {
        Some((ix, _)) => format!("{}...", &indexes[..=ix]),
        None => indexes.to_string(),
    }
}

/// `kubectl describe job`.
pub fn job(j: &Value, events: &[&Value], now: Millis) -> String {
    let mut o = String::new();
    let spec = |k: &str| get(j, &["spec", k]).filter(|v| !v.is_null());
    let status = |k: &str| get_i64(j, &["status", k]).unwrap_or(0);
    o.push_str(&format!("Name:\t{}\nNamespace:\t{}\n", api::name(j), api::namespace(j)));
    o.push_str(&format!("Selector:\t{}\n", selector_text(spec("selector"))));
    map_multiline(&mut o, "Labels", get(j, &["metadata", "labels"]));
    annotations_multiline(&mut o, "Annotations", get(j, &["metadata", "annotations"]));
    controlled_by(&mut o, j);
    if let Some(p) = spec("parallelism") {
        o.push_str(&format!("Parallelism:\t{p}\n"));
    }
    match spec("completions") {
        Some(c) => o.push_str(&format!("Completions:\t{c}\n")),
        None => o.push_str("Completions:\t<unset>\n"),
    }
    let mode = spec("completionMode").and_then(Value::as_str);
    if let Some(m) = mode {
        o.push_str(&format!("Completion Mode:\t{m}\n"));
    }
    if let Some(s) = spec("suspend") {
        o.push_str(&format!("Suspend:\t{s}\n"));
    }
    if let Some(b) = spec("backoffLimit") {
        o.push_str(&format!("Backoff Limit:\t{b}\n"));
    }
    if let Some(t) = spec("ttlSecondsAfterFinished") {
        o.push_str(&format!("TTL Seconds After Finished:\t{t}\n"));
    }
    let start = get_str(j, &["status", "startTime"]);
    let completion = get_str(j, &["status", "completionTime"]);
    if let Some(t) = start {
        o.push_str(&format!("Start Time:\t{}\n", rfc1123z(t)));
    }
    if let Some(t) = completion {
        o.push_str(&format!("Completed At:\t{}\n", rfc1123z(t)));
    }
    if let (Some(s), Some(c)) = (start.and_then(parse_rfc3339), completion.and_then(parse_rfc3339)) {
        o.push_str(&format!("Duration:\t{}\n", human_duration(c.saturating_sub(s))));
    }
    if let Some(a) = spec("activeDeadlineSeconds") {
        o.push_str(&format!("Active Deadline Seconds:\t{a}s\n"));
    }
    match get_i64(j, &["status", "ready"]) {
        None => o.push_str(&format!("Pods Statuses:\t{} Active / {} Succeeded / {} Failed\n", status("active"), status("succeeded"), status("failed"))),
        Some(r) => {
            o.push_str(&format!("Pods Statuses:\t{} Active ({r} Ready) / {} Succeeded / {} Failed\n", status("active"), status("succeeded"), status("failed")))
        }
    }
    if mode == Some("Indexed") {
        o.push_str(&format!("Completed Indexes:\t{}\n", cap_indexes(get_str(j, &["status", "completedIndexes"]).unwrap_or(""), 50)));
    }
    pod_template(&mut o, get(j, &["spec", "template"]));
    events_section(&mut o, events, now);
    tabwrite(&o)
}

/// `kubectl describe cronjob`.
pub fn cron_job(cj: &Value, events: &[&Value], now: Millis) -> String {
    let mut o = String::new();
    let spec = |k: &str| get(cj, &["spec", k]).filter(|v| !v.is_null());
    let or_unset = |v: Option<&Value>, suffix: &str| {
        v.map(|v| format!("{}{suffix}", v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))).unwrap_or_else(|| "<unset>".into())
    };
    o.push_str(&format!("Name:\t{}\nNamespace:\t{}\n", api::name(cj), api::namespace(cj)));
    map_multiline(&mut o, "Labels", get(cj, &["metadata", "labels"]));
    annotations_multiline(&mut o, "Annotations", get(cj, &["metadata", "annotations"]));
    o.push_str(&format!("Schedule:\t{}\n", get_str(cj, &["spec", "schedule"]).unwrap_or("")));
    o.push_str(&format!("Concurrency Policy:\t{}\n", get_str(cj, &["spec", "concurrencyPolicy"]).unwrap_or("")));
    // `printBoolPtr`.
    let suspend = match spec("suspend").and_then(Value::as_bool) {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    };
    o.push_str(&format!("Suspend:\t{suspend}\n"));
    o.push_str(&format!("Time Zone:\t{}\n", or_unset(spec("timeZone"), "")));
    o.push_str(&format!("Successful Job History Limit:\t{}\n", or_unset(spec("successfulJobsHistoryLimit"), "")));
    o.push_str(&format!("Failed Job History Limit:\t{}\n", or_unset(spec("failedJobsHistoryLimit"), "")));
    o.push_str(&format!("Starting Deadline Seconds:\t{}\n", or_unset(spec("startingDeadlineSeconds"), "s")));
    // `describeJobTemplate`.
    let job_spec = |k: &str| get(cj, &["spec", "jobTemplate", "spec", k]).filter(|v| !v.is_null());
    match job_spec("selector") {
        Some(sel) => o.push_str(&format!("Selector:\t{}\n", selector_text(Some(sel)))),
        None => o.push_str("Selector:\t<unset>\n"),
    }
    o.push_str(&format!("Parallelism:\t{}\n", or_unset(job_spec("parallelism"), "")));
    o.push_str(&format!("Completions:\t{}\n", or_unset(job_spec("completions"), "")));
    if let Some(a) = job_spec("activeDeadlineSeconds") {
        o.push_str(&format!("Active Deadline Seconds:\t{a}s\n"));
    }
    pod_template(&mut o, get(cj, &["spec", "jobTemplate", "spec", "template"]));
    match get_str(cj, &["status", "lastScheduleTime"]) {
        Some(t) => o.push_str(&format!("Last Schedule Time:\t{}\n", rfc1123z(t))),
        None => o.push_str("Last Schedule Time:\t<unset>\n"),
    }
    let active: Vec<&str> = get_array(cj, &["status", "active"]).iter().map(|r| get_str(r, &["name"]).unwrap_or("")).collect();
    o.push_str(&format!("Active Jobs:\t{}\n", if active.is_empty() { "<none>".to_string() } else { active.join(", ") }));
    events_section(&mut o, events, now);
    tabwrite(&o)
}

/// `kubectl describe poddisruptionbudget`.
pub fn pod_disruption_budget(pdb: &Value, events: &[&Value], now: Millis) -> String {
    let mut o = String::new();
    let spec = |k: &str| get(pdb, &["spec", k]).filter(|v| !v.is_null());
    let status = |k: &str| get_i64(pdb, &["status", k]).unwrap_or(0);
    o.push_str(&format!("Name:\t{}\nNamespace:\t{}\n", api::name(pdb), api::namespace(pdb)));
    if let Some(m) = spec("minAvailable") {
        o.push_str(&format!("Min available:\t{}\n", int_or_string(Some(m))));
    } else if let Some(m) = spec("maxUnavailable") {
        o.push_str(&format!("Max unavailable:\t{}\n", int_or_string(Some(m))));
    }
    match spec("selector") {
        Some(sel) => o.push_str(&format!("Selector:\t{}\n", label_selector(Some(sel)))),
        None => o.push_str("Selector:\t<unset>\n"),
    }
    o.push_str("Status:\n");
    o.push_str(&format!("    Allowed disruptions:\t{}\n", status("disruptionsAllowed")));
    o.push_str(&format!("    Current:\t{}\n", status("currentHealthy")));
    o.push_str(&format!("    Desired:\t{}\n", status("desiredHealthy")));
    o.push_str(&format!("    Total:\t{}\n", status("expectedPods")));
    events_section(&mut o, events, now);
    tabwrite(&o)
}

fn terminating_or_phase(o: &mut String, obj: &Value, now: Millis) {
    match get_str(obj, &["metadata", "deletionTimestamp"]).and_then(parse_rfc3339) {
        Some(t) => o.push_str(&format!("Status:\tTerminating (lasts {})\n", human_duration(now.saturating_sub(t)))),
        None => o.push_str(&format!("Status:\t{}\n", get_str(obj, &["status", "phase"]).unwrap_or(""))),
    }
}

/// Go's `%v` of a `[]string`: `[a b]`.
fn go_string_list(v: &[Value]) -> String {
    format!("[{}]", v.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "))
}

/// `describePersistentVolumeClaim` (`k8s.io/kubectl/pkg/describe/describe.go`).
pub fn persistent_volume_claim(c: &Value, users: &[&Value], events: &[&Value], now: Millis) -> String {
    let mut o = String::new();
    o.push_str(&format!("Name:\t{}\nNamespace:\t{}\n", api::name(c), api::namespace(c)));
    o.push_str(&format!("StorageClass:\t{}\n", crate::kubectl::printers::storage_class_of_claim(c)));
    if let Some(vac) = get_str(c, &["spec", "volumeAttributesClassName"]) {
        o.push_str(&format!("Current VolumeAttributesClass:\t{}\n", get_str(c, &["status", "currentVolumeAttributesClassName"]).unwrap_or("<unset>")));
        o.push_str(&format!("Desired VolumeAttributesClass:\t{vac}\n"));
    }
    terminating_or_phase(&mut o, c, now);
    o.push_str(&format!("Volume:\t{}\n", get_str(c, &["spec", "volumeName"]).unwrap_or("")));
    map_multiline(&mut o, "Labels", get(c, &["metadata", "labels"]));
    annotations_multiline(&mut o, "Annotations", get(c, &["metadata", "annotations"]));
    o.push_str(&format!("Finalizers:\t{}\n", go_string_list(get_array(c, &["metadata", "finalizers"]))));
    let bound = !get_str(c, &["spec", "volumeName"]).unwrap_or("").is_empty();
    let (capacity, modes) = if bound {
        (
            crate::kubectl::printers::storage_quantity(get(c, &["status", "capacity", "storage"])),
            crate::kubectl::printers::access_modes_string(c, &["status", "accessModes"]),
        )
    } else {
        (String::new(), String::new())
    };
    o.push_str(&format!("Capacity:\t{capacity}\nAccess Modes:\t{modes}\n"));
    if let Some(m) = get_str(c, &["spec", "volumeMode"]) {
        o.push_str(&format!("VolumeMode:\t{m}\n"));
    }
    match users.split_first() {
        None => o.push_str("Used By:\t<none>\n"),
        Some((first, rest)) => {
            o.push_str(&format!("Used By:\t{}\n", api::name(first)));
            for p in rest {
                o.push_str(&format!("\t{}\n", api::name(p)));
            }
        }
    }
    let conds = get_array(c, &["status", "conditions"]);
    if !conds.is_empty() {
        o.push_str("Conditions:\n  Type\tStatus\tLastProbeTime\tLastTransitionTime\tReason\tMessage\n  ----\t------\t-----------------\t------------------\t------\t-------\n");
        for cd in conds {
            let t = |k: &str| get_str(cd, &[k]).map(rfc1123z).unwrap_or_else(|| "Mon, 01 Jan 0001 00:00:00 +0000".into());
            o.push_str(&format!(
                "  {} \t{} \t{} \t{} \t{} \t{}\n",
                get_str(cd, &["type"]).unwrap_or(""),
                get_str(cd, &["status"]).unwrap_or(""),
                t("lastProbeTime"),
                t("lastTransitionTime"),
                get_str(cd, &["reason"]).unwrap_or(""),
                get_str(cd, &["message"]).unwrap_or("")
            ));
        }
    }
    events_section(&mut o, events, now);
    tabwrite(&o)
}

/// `printVolumeNodeAffinity` with `printNodeSelectorTermsMultilineWithIndent`.
fn volume_node_affinity(o: &mut String, pv: &Value) {
    let Some(req) = get(pv, &["spec", "nodeAffinity", "required"]).filter(|r| !r.is_null()) else {
        o.push_str("Node Affinity:\t<none>\n");
        return;
    };
    o.push_str("Node Affinity:\t\n  Required Terms:\t");
    let terms = get_array(req, &["nodeSelectorTerms"]);
    if terms.is_empty() {
        o.push_str("<none>\n");
        return;
    }
    o.push('\n');
    for (i, term) in terms.iter().enumerate() {
        o.push_str(&format!("    Term {i}:\t"));
        let exprs = get_array(term, &["matchExpressions"]);
        if exprs.is_empty() {
            o.push_str("<none>\n");
        }
        for (j, e) in exprs.iter().enumerate() {
            if j > 0 {
                o.push_str("    \t");
            }
            let mut text = format!("{} {}", get_str(e, &["key"]).unwrap_or(""), get_str(e, &["operator"]).unwrap_or("").to_ascii_lowercase());
            let values: Vec<&str> = get_array(e, &["values"]).iter().filter_map(Value::as_str).collect();
            if !values.is_empty() {
                text.push_str(&format!(" [{}]", values.join(", ")));
            }
            o.push_str(&format!("{text}\n"));
        }
    }
}

/// `describePersistentVolume`, with the sources kubeloop's volumes use (CSI, hostPath,
/// local, NFS).
pub fn persistent_volume(pv: &Value, events: &[&Value], now: Millis) -> String {
    let mut o = String::new();
    o.push_str(&format!("Name:\t{}\n", api::name(pv)));
    map_multiline(&mut o, "Labels", get(pv, &["metadata", "labels"]));
    annotations_multiline(&mut o, "Annotations", get(pv, &["metadata", "annotations"]));
    o.push_str(&format!("Finalizers:\t{}\n", go_string_list(get_array(pv, &["metadata", "finalizers"]))));
    o.push_str(&format!("StorageClass:\t{}\n", crate::kubectl::printers::storage_class_of(pv)));
    terminating_or_phase(&mut o, pv, now);
    let claim = get(pv, &["spec", "claimRef"])
        .filter(|r| !r.is_null())
        .map(|r| format!("{}/{}", get_str(r, &["namespace"]).unwrap_or(""), get_str(r, &["name"]).unwrap_or("")))
        .unwrap_or_default();
    o.push_str(&format!("Claim:\t{claim}\n"));
    o.push_str(&format!("Reclaim Policy:\t{}\n", get_str(pv, &["spec", "persistentVolumeReclaimPolicy"]).unwrap_or("")));
    o.push_str(&format!("Access Modes:\t{}\n", crate::kubectl::printers::access_modes_string(pv, &["spec", "accessModes"])));
    if let Some(m) = get_str(pv, &["spec", "volumeMode"]) {
        o.push_str(&format!("VolumeMode:\t{m}\n"));
    }
    o.push_str(&format!("Capacity:\t{}\n", crate::kubectl::printers::storage_quantity(get(pv, &["spec", "capacity", "storage"]))));
    volume_node_affinity(&mut o, pv);
    o.push_str(&format!("Message:\t{}\n", get_str(pv, &["status", "message"]).unwrap_or("")));
    o.push_str("Source:\n");
    let spec = get(pv, &["spec"]).unwrap_or(&Value::Null);
    if let Some(csi) = get(spec, &["csi"]).filter(|v| !v.is_null()) {
        o.push_str(&format!(
            "    Type:\tCSI (a Container Storage Interface (CSI) volume source)\n    Driver:\t{}\n    FSType:\t{}\n    VolumeHandle:\t{}\n    ReadOnly:\t{}\n",
            get_str(csi, &["driver"]).unwrap_or(""),
            get_str(csi, &["fsType"]).unwrap_or(""),
            get_str(csi, &["volumeHandle"]).unwrap_or(""),
            api::get_bool(csi, &["readOnly"]).unwrap_or(false)
        ));
        // `printCSIPersistentVolumeAttributesMultilineIndent` writes each entry at level 2,
        // so every line of it carries four more spaces after its tab.
        let attrs: Vec<String> = get(csi, &["volumeAttributes"])
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, v)| {
                let line = format!("{k}={}", v.as_str().unwrap_or(""));
                if line.len() > 140 {
                    format!("{}...", &line[..line.floor_char_boundary(140)])
                } else {
                    line
                }
            })
            .collect();
        if attrs.is_empty() {
            o.push_str("    VolumeAttributes:\t<none>\n");
        }
        for (i, a) in attrs.iter().enumerate() {
            if i == 0 {
                o.push_str(&format!("    VolumeAttributes:\t    {a}\n"));
            } else {
                o.push_str(&format!("        \t    {a}\n"));
            }
        }
    } else if let Some(h) = get(spec, &["hostPath"]).filter(|v| !v.is_null()) {
        let ty = get_str(h, &["type"]).unwrap_or("<none>");
        o.push_str(&format!("    Type:\tHostPath (bare host directory volume)\n    Path:\t{}\n    HostPathType:\t{ty}\n", get_str(h, &["path"]).unwrap_or("")));
    } else if let Some(l) = get(spec, &["local"]).filter(|v| !v.is_null()) {
        o.push_str(&format!(
            "    Type:\tLocalVolume (a persistent volume backed by local storage on a node)\n    Path:\t{}\n",
            get_str(l, &["path"]).unwrap_or("")
        ));
    } else if let Some(n) = get(spec, &["nfs"]).filter(|v| !v.is_null()) {
        o.push_str(&format!(
            "    Type:\tNFS (an NFS mount that lasts the lifetime of a pod)\n    Server:\t{}\n    Path:\t{}\n    ReadOnly:\t{}\n",
            get_str(n, &["server"]).unwrap_or(""),
            get_str(n, &["path"]).unwrap_or(""),
            api::get_bool(n, &["readOnly"]).unwrap_or(false)
        ));
    }
    events_section(&mut o, events, now);
    tabwrite(&o)
}

/// `describeStorageClass`.
pub fn storage_class(sc: &Value, events: &[&Value], now: Millis) -> String {
    let mut o = String::new();
    o.push_str(&format!("Name:\t{}\n", api::name(sc)));
    o.push_str(&format!("IsDefaultClass:\t{}\n", if crate::kubectl::printers::is_default_class(sc) { "Yes" } else { "No" }));
    let mut ann = get(sc, &["metadata", "annotations"]).cloned();
    if let Some(m) = ann.as_mut().and_then(Value::as_object_mut) {
        m.remove("kubectl.kubernetes.io/last-applied-configuration");
    }
    o.push_str(&format!("Annotations:\t{}\n", format_labels(ann.as_ref())));
    o.push_str(&format!("Provisioner:\t{}\n", get_str(sc, &["provisioner"]).unwrap_or("")));
    o.push_str(&format!("Parameters:\t{}\n", format_labels(get(sc, &["parameters"]))));
    let expansion = match api::get_bool(sc, &["allowVolumeExpansion"]) {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    };
    o.push_str(&format!("AllowVolumeExpansion:\t{expansion}\n"));
    let opts = get_array(sc, &["mountOptions"]);
    if opts.is_empty() {
        o.push_str("MountOptions:\t<none>\n");
    } else {
        o.push_str("MountOptions:\n");
        for m in opts {
            o.push_str(&format!("  {}\n", m.as_str().unwrap_or("")));
        }
    }
    if let Some(p) = get_str(sc, &["reclaimPolicy"]) {
        o.push_str(&format!("ReclaimPolicy:\t{p}\n"));
    }
    if let Some(m) = get_str(sc, &["volumeBindingMode"]) {
        o.push_str(&format!("VolumeBindingMode:\t{m}\n"));
    }
    events_section(&mut o, events, now);
    tabwrite(&o)
}

/// `CertificateSigningRequestDescriber`: the requester, signer and status, and the
/// subject and alternative names read from the request itself.
pub fn certificate_signing_request(csr: &Value, events: &[&Value], now: Millis) -> Result<String, String> {
    use crate::foundation::pki::{self, oid};
    let req = pki::parse_csr_pem(&crate::apiserver::certificates::request_pem(csr)).map_err(|e| format!("Error parsing CSR: {e}"))?;
    let mut o = String::new();
    o.push_str(&format!("Name:\t{}\n", api::name(csr)));
    o.push_str(&format!("Labels:\t{}\n", format_labels(get(csr, &["metadata", "labels"]))));
    o.push_str(&format!("Annotations:\t{}\n", format_labels(get(csr, &["metadata", "annotations"]))));
    o.push_str(&format!("CreationTimestamp:\t{}\n", rfc1123z(get_str(csr, &["metadata", "creationTimestamp"]).unwrap_or(""))));
    o.push_str(&format!("Requesting User:\t{}\n", get_str(csr, &["spec", "username"]).unwrap_or("")));
    if let Some(signer) = get_str(csr, &["spec", "signerName"]).filter(|s| !s.is_empty()) {
        o.push_str(&format!("Signer:\t{signer}\n"));
    }
    if let Some(secs) = get_i64(csr, &["spec", "expirationSeconds"]) {
        o.push_str(&format!("Requested Duration:\t{}\n", human_duration(secs.max(0) as Millis * 1000)));
    }
    o.push_str(&format!("Status:\t{}\n", crate::apiserver::certificates::condition_summary(csr)));
    // `printListHelper`: nothing for no values, more values on following lines.
    let list = |o: &mut String, prefix: &str, name: &str, values: &[&str]| {
        if !values.is_empty() {
            o.push_str(&format!("{prefix}{name}:\t{}\n", values.join(&format!("\n{prefix}\t"))));
        }
    };
    o.push_str("Subject:\n");
    o.push_str(&format!("\tCommon Name:\t{}\n", req.common_name()));
    o.push_str(&format!("\tSerial Number:\t{}\n", req.subject_values(oid::SERIAL_NUMBER).last().copied().unwrap_or("")));
    for (name, id) in [
        ("Organization", oid::ORGANIZATION),
        ("Organizational Unit", oid::ORGANIZATIONAL_UNIT),
        ("Country", oid::COUNTRY),
        ("Locality", oid::LOCALITY),
        ("Province", oid::PROVINCE),
        ("StreetAddress", oid::STREET_ADDRESS),
        ("PostalCode", oid::POSTAL_CODE),
    ] {
        list(&mut o, "\t", name, &req.subject_values(id));
    }
    fn strs(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    if !(req.dns_names.is_empty() && req.email_addresses.is_empty() && req.ip_addresses.is_empty() && req.uris.is_empty()) {
        o.push_str("Subject Alternative Names:\n");
        list(&mut o, "\t", "DNS Names", &strs(&req.dns_names));
        list(&mut o, "\t", "Email Addresses", &strs(&req.email_addresses));
        list(&mut o, "\t", "URIs", &strs(&req.uris));
        list(&mut o, "\t", "IP Addresses", &strs(&req.ip_addresses));
    }
    events_section(&mut o, events, now);
    Ok(tabwrite(&o))
}

/// `resource.Quantity.String()`: the canonical form, and `<nil>` for a missing one.
fn quantity_string(v: Option<&Value>) -> String {
    match v.filter(|v| !v.is_null()) {
        Some(Value::String(s)) => crate::foundation::quantity::canonical(s),
        Some(Value::Number(n)) => crate::foundation::quantity::canonical(&n.to_string()),
        Some(other) => other.to_string(),
        None => "<nil>".into(),
    }
}

/// Go's `%q` of a string (`strconv.Quote`): double quotes, with backslash escapes for
/// quotes, backslashes and control characters.
fn go_quote(s: &str) -> String {
    let mut o = String::from('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\u{7}' => o.push_str("\\a"),
            '\u{8}' => o.push_str("\\b"),
            '\u{c}' => o.push_str("\\f"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            '\u{b}' => o.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => o.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// `printDirectionBehavior`: one direction of an HPA's `behavior`, if set.
fn direction_behavior(o: &mut String, direction: &str, rules: Option<&Value>) {
    let Some(rules) = rules.filter(|r| !r.is_null()) else { return };
    o.push_str(&format!("  {direction}:\n"));
    if let Some(w) = get_i64(rules, &["stabilizationWindowSeconds"]) {
        o.push_str(&format!("    Stabilization Window: {w} seconds\n"));
    }
    let policies = get_array(rules, &["policies"]);
    if !policies.is_empty() {
        // `MaxChangePolicySelect` when unset.
        o.push_str(&format!("    Select Policy: {}\n", get_str(rules, &["selectPolicy"]).unwrap_or("Max")));
        o.push_str("    Policies:\n");
        for p in policies {
            o.push_str(&format!(
                "      - Type: {}\tValue: {}\tPeriod: {} seconds\n",
                get_str(p, &["type"]).unwrap_or(""),
                get_i64(p, &["value"]).unwrap_or(0),
                get_i64(p, &["periodSeconds"]).unwrap_or(0)
            ));
        }
    }
}

/// One `Metrics:` line of `describeHorizontalPodAutoscalerV2`: the spec's metric and the
/// status's metric at the same index (`current`), if that one has the same source.
fn hpa_metric(o: &mut String, metric: &Value, current: Option<&Value>) {
    let ty = get_str(metric, &["type"]).unwrap_or("");
    let source = |key: &str| get(metric, &[key]).filter(|v| !v.is_null());
    // The status entry's source of the same kind, as `CurrentMetrics[i].<Kind> != nil`.
    let status = |key: &str| current.and_then(|c| c.get(key)).filter(|v| !v.is_null());
    let spec_str = |key: &str, path: &[&str]| source(key).and_then(|s| get_str(s, path)).unwrap_or("").to_string();
    let target = |key: &str, field: &str| quantity_string(source(key).and_then(|s| get(s, &["target", field])));
    let now = |key: &str, field: &str| quantity_string(status(key).and_then(|s| get(s, &["current", field])));
    match ty {
        "External" => {
            let name = go_quote(&spec_str("external", &["metric", "name"]));
            if source("external").and_then(|s| get(s, &["target", "averageValue"])).is_some_and(|v| !v.is_null()) {
                let has = status("external").and_then(|s| get(s, &["current", "averageValue"])).is_some_and(|v| !v.is_null());
                let cur = if has { now("external", "averageValue") } else { "<unknown>".into() };
                o.push_str(&format!("  {name} (target average value):\t{cur} / {}\n", target("external", "averageValue")));
            } else {
                let cur = if status("external").is_some() { now("external", "value") } else { "<unknown>".into() };
                o.push_str(&format!("  {name} (target value):\t{cur} / {}\n", target("external", "value")));
            }
        }
        "Pods" => {
            let cur = if status("pods").is_some() { now("pods", "averageValue") } else { "<unknown>".into() };
            o.push_str(&format!("  {} on pods:\t{cur} / {}\n", go_quote(&spec_str("pods", &["metric", "name"])), target("pods", "averageValue")));
        }
        "Object" => {
            o.push_str(&format!(
                "  \"{}\" on {}/{} ",
                spec_str("object", &["metric", "name"]),
                spec_str("object", &["describedObject", "kind"]),
                spec_str("object", &["describedObject", "name"])
            ));
            if spec_str("object", &["target", "type"]) == "AverageValue" {
                let cur = if status("object").is_some() { now("object", "averageValue") } else { "<unknown>".into() };
                o.push_str(&format!("(target average value):\t{cur} / {}\n", target("object", "averageValue")));
            } else {
                let cur = if status("object").is_some() { now("object", "value") } else { "<unknown>".into() };
                o.push_str(&format!("(target value):\t{cur} / {}\n", target("object", "value")));
            }
        }
        "Resource" | "ContainerResource" => {
            let key = if ty == "Resource" { "resource" } else { "containerResource" };
            let resource = spec_str(key, &["name"]);
            if ty == "Resource" {
                o.push_str(&format!("  resource {resource} on pods"));
            } else {
                o.push_str(&format!("  resource {resource} of container \"{}\" on pods", spec_str(key, &["container"])));
            }
            if source(key).and_then(|s| get(s, &["target", "averageValue"])).is_some_and(|v| !v.is_null()) {
                let cur = if status(key).is_some() { now(key, "averageValue") } else { "<unknown>".into() };
                o.push_str(&format!(":\t{cur} / {}\n", target(key, "averageValue")));
            } else {
                let cur = match status(key).and_then(|s| get_i64(s, &["current", "averageUtilization"])) {
                    Some(u) => format!("{u}% ({})", now(key, "averageValue")),
                    None => "<unknown>".into(),
                };
                let goal = match source(key).and_then(|s| get_i64(s, &["target", "averageUtilization"])) {
                    Some(u) => format!("{u}%"),
                    None => "<auto>".into(),
                };
                o.push_str(&format!("  (as a percentage of request):\t{cur} / {goal}\n"));
            }
        }
        _ => o.push_str(&format!("  <unknown metric type {}>\n", go_quote(ty))),
    }
}

/// `kubectl describe horizontalpodautoscaler` (`describeHorizontalPodAutoscalerV2`), of
/// the stored autoscaling/v2 object.
pub fn horizontal_pod_autoscaler(hpa: &Value, events: &[&Value], now: Millis) -> String {
    let mut o = String::new();
    o.push_str(&format!("Name:\t{}\nNamespace:\t{}\n", api::name(hpa), api::namespace(hpa)));
    map_multiline(&mut o, "Labels", get(hpa, &["metadata", "labels"]));
    annotations_multiline(&mut o, "Annotations", get(hpa, &["metadata", "annotations"]));
    o.push_str(&format!("CreationTimestamp:\t{}\n", rfc1123z(get_str(hpa, &["metadata", "creationTimestamp"]).unwrap_or(""))));
    let kind = get_str(hpa, &["spec", "scaleTargetRef", "kind"]).unwrap_or("");
    o.push_str(&format!("Reference:\t{kind}/{}\n", get_str(hpa, &["spec", "scaleTargetRef", "name"]).unwrap_or("")));
    o.push_str("Metrics:\t( current / target )\n");
    let currents = get_array(hpa, &["status", "currentMetrics"]);
    for (i, metric) in get_array(hpa, &["spec", "metrics"]).iter().enumerate() {
        hpa_metric(&mut o, metric, currents.get(i));
    }
    match get_i64(hpa, &["spec", "minReplicas"]) {
        Some(m) => o.push_str(&format!("Min replicas:\t{m}\n")),
        None => o.push_str("Min replicas:\t<unset>\n"),
    }
    o.push_str(&format!("Max replicas:\t{}\n", get_i64(hpa, &["spec", "maxReplicas"]).unwrap_or(0)));
    if let Some(b) = get(hpa, &["spec", "behavior"]).filter(|b| !b.is_null()) {
        o.push_str("Behavior:\n");
        direction_behavior(&mut o, "Scale Up", b.get("scaleUp"));
        direction_behavior(&mut o, "Scale Down", b.get("scaleDown"));
    }
    o.push_str(&format!(
        "{kind} pods:\t{} current / {} desired\n",
        get_i64(hpa, &["status", "currentReplicas"]).unwrap_or(0),
        get_i64(hpa, &["status", "desiredReplicas"]).unwrap_or(0)
    ));
    let conds = get_array(hpa, &["status", "conditions"]);
    if !conds.is_empty() {
        o.push_str("Conditions:\n  Type\tStatus\tReason\tMessage\n  ----\t------\t------\t-------\n");
        for c in conds {
            let s = |k: &str| get_str(c, &[k]).unwrap_or("");
            o.push_str(&format!("  {}\t{}\t{}\t{}\n", s("type"), s("status"), s("reason"), s("message")));
        }
    }
    events_section(&mut o, events, now);
    tabwrite(&o)
}

/// `describeNamespace`: status, the deletion conditions, then the namespace's quotas and
/// limit ranges (`DescribeResourceQuotas`, `DescribeLimitRanges`). No events section.
pub fn namespace(n: &Value, quotas: &[&Value], limits: &[&Value]) -> String {
    let mut o = String::new();
    o.push_str(&format!("Name:\t{}\n", api::name(n)));
    map_multiline(&mut o, "Labels", get(n, &["metadata", "labels"]));
    annotations_multiline(&mut o, "Annotations", get(n, &["metadata", "annotations"]));
    o.push_str(&format!("Status:\t{}\n", get_str(n, &["status", "phase"]).unwrap_or("")));
    let conds = api::get_array(n, &["status", "conditions"]);
    if !conds.is_empty() {
        o.push_str("Conditions:\n  Type\tStatus\tLastTransitionTime\tReason\tMessage\n  ----\t------\t------------------\t------\t-------\n");
        for c in conds {
            let s = |k: &str| get_str(c, &[k]).unwrap_or("");
            o.push_str(&format!("  {}\t{}\t{}\t{}\t{}\n", s("type"), s("status"), rfc1123z(s("lastTransitionTime")), s("reason"), s("message")));
        }
    }
    o.push('\n');
    resource_quotas(&mut o, quotas);
    o.push('\n');
    limit_ranges(&mut o, limits);
    tabwrite(&o)
}

/// `helpTextForResourceQuotaScope`.
fn quota_scope_help(scope: &str) -> &'static str {
    match scope {
        "Terminating" => "Matches all pods that have an active deadline. These pods have a limited lifespan on a node before being actively terminated by the system.",
        "NotTerminating" => "Matches all pods that do not have an active deadline. These pods usually include long running pods whose container command is not expected to terminate.",
        "BestEffort" => "Matches all pods that do not have resource requirements set. These pods have a best effort quality of service.",
        "NotBestEffort" => "Matches all pods that have at least one resource requirement set. These pods have a burstable or guaranteed quality of service.",
        _ => "",
    }
}

/// `DescribeResourceQuotas`, as `kubectl describe namespace` prints them.
fn resource_quotas(o: &mut String, quotas: &[&Value]) {
    if quotas.is_empty() {
        o.push_str("No resource quota.\n");
        return;
    }
    let mut quotas = quotas.to_vec();
    quotas.sort_stable_by_key(|q| api::name(q).to_string());
    o.push_str("Resource Quotas\n");
    for q in quotas {
        o.push_str(&format!("  Name:\t{}\n", api::name(q)));
        let mut scopes: Vec<&str> = api::get_array(q, &["spec", "scopes"]).iter().filter_map(Value::as_str).collect();
        if !scopes.is_empty() {
            scopes.sort_stable();
            o.push_str(&format!("  Scopes:\t{}\n", scopes.join(", ")));
            for s in scopes {
                let help = quota_scope_help(s);
                if !help.is_empty() {
                    o.push_str(&format!("  * {help}\n"));
                }
            }
        }
        o.push_str("  Resource\tUsed\tHard\n  --------\t---\t---\n");
        if let Some(hard) = get(q, &["status", "hard"]).and_then(Value::as_object) {
            for (r, h) in hard {
                let used = get(q, &["status", "used", r.as_str()]).and_then(Value::as_str).unwrap_or("0");
                o.push_str(&format!("  {r}\t{used}\t{}\n", h.as_str().unwrap_or("")));
            }
        }
    }
}

/// `DescribeLimitRanges`, as `kubectl describe namespace` prints them (each item's
/// resources sorted by name; kubectl's order is Go's map order).
fn limit_ranges(o: &mut String, limits: &[&Value]) {
    if limits.is_empty() {
        o.push_str("No LimitRange resource.\n");
        return;
    }
    o.push_str("Resource Limits\n Type\tResource\tMin\tMax\tDefault Request\tDefault Limit\tMax Limit/Request Ratio\n");
    o.push_str(" ----\t--------\t---\t---\t---------------\t-------------\t-----------------------\n");
    for lr in limits {
        for item in api::get_array(lr, &["spec", "limits"]) {
            let fields = ["min", "max", "defaultRequest", "default", "maxLimitRequestRatio"];
            let mut names: BTreeSet<&str> = BTreeSet::new();
            for k in fields {
                names.extend(get(item, &[k]).and_then(Value::as_object).into_iter().flatten().map(|(r, _)| r.as_str()));
            }
            for r in names {
                let v = |k: &str| get(item, &[k, r]).map(|q| q.as_str().map(str::to_string).unwrap_or_else(|| q.to_string())).unwrap_or_else(|| "-".into());
                o.push_str(&format!(
                    " {}\t{r}\t{}\t{}\t{}\t{}\t{}\n",
                    get_str(item, &["type"]).unwrap_or(""),
                    v("min"),
                    v("max"),
                    v("defaultRequest"),
                    v("default"),
                    v("maxLimitRequestRatio")
                ));
            }
        }
    }
}

/// `describeQuota`: the scopes with their help, then each hard limit with its usage (a
/// usage in another format than its limit is shown as a whole number in the limit's).
pub fn resource_quota(q: &Value) -> String {
    use crate::apiserver::quota::Amount;
    let mut o = String::new();
    o.push_str(&format!("Name:\t{}\nNamespace:\t{}\n", api::name(q), api::namespace(q)));
    let mut scopes: Vec<&str> = api::get_array(q, &["spec", "scopes"]).iter().filter_map(Value::as_str).collect();
    if !scopes.is_empty() {
        scopes.sort_stable();
        o.push_str(&format!("Scopes:\t{}\n", scopes.join(", ")));
        for s in scopes {
            let help = quota_scope_help(s);
            if !help.is_empty() {
                o.push_str(&format!(" * {help}\n"));
            }
        }
    }
    o.push_str("Resource\tUsed\tHard\n--------\t----\t----\n");
    for (r, hard) in get(q, &["status", "hard"]).and_then(Value::as_object).into_iter().flatten() {
        let hard = Amount::parse(hard).unwrap_or_default();
        let mut used = get(q, &["status", "used", r.as_str()]).and_then(Amount::parse).unwrap_or_default();
        if used.binary != hard.binary {
            // `resource.NewQuantity(used.Value(), hard.Format)`: whole units, rounded up.
            let units = used.milli.div_euclid(1000) + i64::from(used.milli.rem_euclid(1000) != 0);
            used = Amount { milli: units.saturating_mul(1000), binary: hard.binary };
        }
        o.push_str(&format!("{r}\t{}\t{}\n", used.render(), hard.render()));
    }
    tabwrite(&o)
}

/// `describeLimitRange`: a row per item and resource, `-` where the item sets nothing.
pub fn limit_range(lr: &Value) -> String {
    let mut o = String::new();
    o.push_str(&format!("Name:\t{}\nNamespace:\t{}\n", api::name(lr), api::namespace(lr)));
    o.push_str("Type\tResource\tMin\tMax\tDefault Request\tDefault Limit\tMax Limit/Request Ratio\n");
    o.push_str("----\t--------\t---\t---\t---------------\t-------------\t-----------------------\n");
    for item in api::get_array(lr, &["spec", "limits"]) {
        let fields = ["min", "max", "defaultRequest", "default", "maxLimitRequestRatio"];
        let mut names = std::collections::BTreeSet::new();
        for f in fields {
            names.extend(get(item, &[f]).and_then(Value::as_object).into_iter().flatten().map(|(k, _)| k.to_string()));
        }
        for n in names {
            let cells: Vec<String> =
                fields.iter().map(|f| get(item, &[f, n.as_str()]).map(|v| quantity_string(Some(v))).unwrap_or_else(|| "-".into())).collect();
            o.push_str(&format!("{}\t{n}\t{}\n", get_str(item, &["type"]).unwrap_or(""), cells.join("\t")));
        }
    }
    tabwrite(&o)
}

/// The kinds `kubectl describe` has a describer for here.
const DESCRIBED: [&str; 19] = [
    "Pod",
    "Deployment",
    "ReplicaSet",
    "ReplicationController",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "CronJob",
    "PodDisruptionBudget",
    "HorizontalPodAutoscaler",
    "Service",
    "Node",
    "Namespace",
    "ResourceQuota",
    "LimitRange",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "CertificateSigningRequest",
];

/// `kubectl describe TYPE NAME...` (or `TYPE/NAME`, or `-l`).
pub(super) fn command(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    use crate::foundation::api::rid;
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
        if !DESCRIBED.contains(&kind) {
            let kinds: Vec<&str> = DESCRIBED.iter().filter_map(|k| RESOURCES.iter().find(|x| x.kind == *k)).map(|x| x.plural).collect();
            let (last, rest) = kinds.split_last().unwrap_or((&"", &[]));
            out.push(format!("error: kubeloop cannot describe {} yet (it describes {} and {last})", RESOURCES[r].plural, rest.join(", ")));
            continue;
        }
        let obj_ns = if RESOURCES[r].namespaced { ns } else { "" };
        // An autoscaling/v1 HPA is described from the stored v2 object, which holds all of it.
        let fetched = if r == rid::HPA_V1 { rid::HPA } else { r };
        let obj = match fetch(api, creds, fetched, obj_ns, &name) {
            Ok(o) => o,
            Err(e) => {
                out.push(e);
                continue;
            }
        };
        // Events are read with the caller's rights; without them, describe shows none.
        let mut events = if kind == "Node" {
            // A node's events are in the default namespace, named by the node.
            let all = api.handle(Request::new(Verb::List, rid::EVENT, "", "", creds.clone()));
            all.map(|l| api::get_array(&l, &["items"]).to_vec()).unwrap_or_default()
        } else {
            list(api, rid::EVENT).unwrap_or_default()
        };
        events.retain(|e| {
            get_str(e, &["involvedObject", "uid"]) == Some(api::uid(&obj))
                || (kind == "Node" && get_str(e, &["involvedObject", "kind"]) == Some("Node") && get_str(e, &["involvedObject", "name"]) == Some(name.as_str()))
        });
        events.sort_stable_by(|a, b| get_str(a, &["lastTimestamp"]).cmp(&get_str(b, &["lastTimestamp"])));
        let events: Vec<&Value> = events.iter().collect();
        // What the workload's selector matches and its controllerRef claims, as
        // `getPodStatusForController` and `listReplicaSets` count them.
        let controlled = |api: &mut ApiServer, r: ResourceId, selector: Option<&Value>| -> Vec<Value> {
            let mut xs = list(api, r).unwrap_or_default();
            xs.retain(|x| {
                crate::foundation::labels::selector_matches(selector, api::labels(x))
                    && api::controller_ref(x).and_then(|c| get_str(c, &["uid"])) == Some(api::uid(&obj))
            });
            xs
        };
        let selector = match kind {
            // A ReplicationController's selector is a plain map (`labels.SelectorFromSet`).
            "ReplicationController" => Some(crate::json!({"matchLabels": get(&obj, &["spec", "selector"]).cloned().unwrap_or(Value::Null)})),
            _ => get(&obj, &["spec", "selector"]).cloned(),
        };
        let pods = match kind {
            "ReplicaSet" | "ReplicationController" | "StatefulSet" | "DaemonSet" => controlled(api, rid::POD, selector.as_ref()),
            _ => Vec::new(),
        };
        let pods: Vec<&Value> = pods.iter().collect();
        let now = api.now;
        let text = match kind {
            "Pod" => pod(&obj, &events, now),
            "ReplicaSet" => replica_set(&obj, &pods, &events, now),
            "ReplicationController" => replication_controller(&obj, &pods, &events, now),
            "StatefulSet" => stateful_set(&obj, &pods, &events, now),
            "DaemonSet" => daemon_set(&obj, &pods, &events, now),
            "Job" => job(&obj, &events, now),
            "CronJob" => cron_job(&obj, &events, now),
            "PodDisruptionBudget" => pod_disruption_budget(&obj, &events, now),
            "HorizontalPodAutoscaler" => horizontal_pod_autoscaler(&obj, &events, now),
            "ResourceQuota" => resource_quota(&obj),
            "LimitRange" => limit_range(&obj),
            "PersistentVolume" => persistent_volume(&obj, &events, now),
            "StorageClass" => storage_class(&obj, &events, now),
            "CertificateSigningRequest" => match certificate_signing_request(&obj, &events, now) {
                Ok(t) => t,
                Err(e) => {
                    out.push(format!("error: {e}"));
                    continue;
                }
            },
            "PersistentVolumeClaim" => {
                // `getPodsForPVC`: the namespace's pods whose volumes name the claim.
                let mut users: Vec<Value> = list(api, rid::POD).unwrap_or_default();
                users.retain(|p| {
                    get_array(p, &["spec", "volumes"]).iter().any(|v| {
                        get_str(v, &["persistentVolumeClaim", "claimName"]) == Some(name.as_str())
                            || (v.get("ephemeral").is_some_and(|e| !e.is_null()) && format!("{}-{}", api::name(p), get_str(v, &["name"]).unwrap_or("")) == name)
                    })
                });
                users.sort_stable_by(|a, b| api::name(a).cmp(api::name(b)));
                persistent_volume_claim(&obj, &users.iter().collect::<Vec<_>>(), &events, now)
            }
            "Service" => {
                let slices = list(api, rid::ENDPOINTSLICE).unwrap_or_default();
                let addresses: Vec<String> = slices
                    .iter()
                    .filter(|sl| api::labels(sl).and_then(|l| l.get("kubernetes.io/service-name")).and_then(Value::as_str) == Some(name.as_str()))
                    .flat_map(|sl| api::get_array(sl, &["endpoints"]).iter())
                    .filter(|e| api::get_bool(e, &["conditions", "ready"]) != Some(false))
                    .flat_map(|e| api::get_array(e, &["addresses"]).iter().filter_map(Value::as_str).map(str::to_string))
                    .collect();
                service(&obj, &addresses, &events, now)
            }
            "Node" => {
                let pods = api.handle(Request::new(Verb::List, rid::POD, "", "", creds.clone()));
                let pods: Vec<Value> = pods
                    .map(|l| api::get_array(&l, &["items"]).to_vec())
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|p| {
                        get_str(p, &["spec", "nodeName"]) == Some(name.as_str()) && !matches!(get_str(p, &["status", "phase"]), Some("Succeeded" | "Failed"))
                    })
                    .collect();
                let lease = api.handle(Request::new(Verb::Get, rid::LEASE, "kube-node-lease", &name, creds.clone())).ok();
                node(&obj, &pods.iter().collect::<Vec<_>>(), lease.as_deref(), &events, now)
            }
            "Namespace" => {
                // The namespace's quotas and limit ranges, read with the caller's rights.
                let in_ns = |api: &mut ApiServer, r: ResourceId| -> Vec<Value> {
                    api.handle(Request::new(Verb::List, r, &name, "", creds.clone())).map(|l| api::get_array(&l, &["items"]).to_vec()).unwrap_or_default()
                };
                let quotas = in_ns(api, rid::RESOURCEQUOTA);
                let limits = in_ns(api, rid::LIMITRANGE);
                namespace(&obj, &quotas.iter().collect::<Vec<_>>(), &limits.iter().collect::<Vec<_>>())
            }
            _ => deployment(&obj, &controlled(api, rid::REPLICASET, selector.as_ref()).iter().collect::<Vec<_>>(), &events, now),
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

    fn pods(phases: &[&str]) -> Vec<Value> {
        phases.iter().map(|p| crate::json!({"status": {"phase": p}})).collect()
    }

    #[test]
    fn a_stateful_set_shows_its_partition_and_volume_claims() {
        let s = crate::json!({
            "metadata": {"name": "web", "namespace": "default", "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"app": "web"}},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27",
                        "ports": [{"containerPort": 80, "name": "web", "protocol": "TCP"}],
                        "volumeMounts": [{"name": "www", "mountPath": "/usr/share/nginx/html"}]}]}
                },
                "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
            },
            "status": {"replicas": 3, "readyReplicas": 2, "currentReplicas": 3}
        });
        let ps = pods(&["Running", "Running", "Pending"]);
        let text = stateful_set(&s, &ps.iter().collect::<Vec<_>>(), &[], 0);
        assert_eq!(
            text,
            "\
Name:               web
Namespace:          default
CreationTimestamp:  Thu, 01 Jan 2026 00:00:00 +0000
Selector:           app=web
Labels:             app=web
Annotations:        <none>
Replicas:           3 desired | 3 total
Update Strategy:    RollingUpdate
  Partition:        0
Pods Status:        2 Running / 1 Waiting / 0 Succeeded / 0 Failed
Pod Template:
  Labels:  app=web
  Containers:
   nginx:
    Image:        nginx:1.27
    Port:         80/TCP (web)
    Host Port:    0/TCP (web)
    Environment:  <none>
    Mounts:
      /usr/share/nginx/html from www (rw)
  Volumes:         <none>
  Node-Selectors:  <none>
  Tolerations:     <none>
Volume Claims:
  Name:          www
  StorageClass:  
  Labels:        <none>
  Annotations:   <none>
  Capacity:      1Gi
  Access Modes:  [ReadWriteOnce]
Events:          <none>
"
        );
    }

    #[test]
    fn a_daemon_set_counts_nodes_and_prints_its_template_in_full() {
        let d = crate::json!({
            "metadata": {"name": "agent", "namespace": "kube-system", "labels": {"app": "agent"},
                "annotations": {"deprecated.daemonset.template.generation": "1"}},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {
                    "metadata": {"labels": {"app": "agent"}},
                    "spec": {
                        "serviceAccountName": "agent",
                        "nodeSelector": {"kubernetes.io/os": "linux"},
                        "containers": [{"name": "agent", "image": "busybox:1.36", "command": ["sh", "-c", "sleep 3600"],
                            "resources": {"limits": {"memory": "64Mi"}, "requests": {"cpu": "0.1", "memory": "32Mi"}},
                            "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}}]}],
                        "volumes": [{"name": "logs", "hostPath": {"path": "/var/log", "type": "DirectoryOrCreate"}}],
                        "tolerations": [
                            {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
                            {"operator": "Exists"}
                        ]
                    }
                }
            },
            "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "updatedNumberScheduled": 3, "numberAvailable": 2, "numberReady": 2, "numberMisscheduled": 0}
        });
        let ps = pods(&["Running", "Running", "Running"]);
        let text = daemon_set(&d, &ps.iter().collect::<Vec<_>>(), &[], 0);
        assert_eq!(
            text,
            "\
Name:           agent
Namespace:      kube-system
Selector:       app=agent
Node-Selector:  kubernetes.io/os=linux
Labels:         app=agent
Annotations:    deprecated.daemonset.template.generation: 1
Desired Number of Nodes Scheduled: 3
Current Number of Nodes Scheduled: 3
Number of Nodes Scheduled with Up-to-date Pods: 3
Number of Nodes Scheduled with Available Pods: 2
Number of Nodes Misscheduled: 0
Pods Status:  3 Running / 0 Waiting / 0 Succeeded / 0 Failed
Pod Template:
  Labels:           app=agent
  Service Account:  agent
  Containers:
   agent:
    Image:      busybox:1.36
    Port:       <none>
    Host Port:  <none>
    Command:
      sh
      -c
      sleep 3600
    Limits:
      memory:  64Mi
    Requests:
      cpu:     100m
      memory:  32Mi
    Environment:
      NODE:   (v1:spec.nodeName)
    Mounts:  <none>
  Volumes:
   logs:
    Type:          HostPath (bare host directory volume)
    Path:          /var/log
    HostPathType:  DirectoryOrCreate
  Node-Selectors:  kubernetes.io/os=linux
  Tolerations:     op=Exists
                   node-role.kubernetes.io/control-plane:NoSchedule op=Exists
Events:            <none>
"
        );
    }

    #[test]
    fn an_indexed_job_shows_its_times_duration_and_completed_indexes() {
        let j = crate::json!({
            "metadata": {"name": "pi", "namespace": "default", "labels": {"job-name": "pi"},
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "hello", "uid": "u0", "controller": true}]},
            "spec": {
                "parallelism": 1, "completions": 3, "completionMode": "Indexed", "suspend": false, "backoffLimit": 6,
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
                "template": {"metadata": {"labels": {"job-name": "pi"}},
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl:5.34", "command": ["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"]}]}}
            },
            "status": {"startTime": "2026-01-01T00:00:05Z", "completionTime": "2026-01-01T00:01:10Z", "succeeded": 3, "ready": 0, "completedIndexes": "0-2"}
        });
        assert_eq!(
            job(&j, &[], 0),
            "\
Name:               pi
Namespace:          default
Selector:           batch.kubernetes.io/controller-uid=u1
Labels:             job-name=pi
Annotations:        <none>
Controlled By:      CronJob/hello
Parallelism:        1
Completions:        3
Completion Mode:    Indexed
Suspend:            false
Backoff Limit:      6
Start Time:         Thu, 01 Jan 2026 00:00:05 +0000
Completed At:       Thu, 01 Jan 2026 00:01:10 +0000
Duration:           65s
Pods Statuses:      0 Active (0 Ready) / 3 Succeeded / 0 Failed
Completed Indexes:  0-2
Pod Template:
  Labels:  job-name=pi
  Containers:
   pi:
    Image:      perl:5.34
    Port:       <none>
    Host Port:  <none>
    Command:
      perl
      -Mbignum=bpi
      -wle
      print bpi(2000)
    Environment:   <none>
    Mounts:        <none>
  Volumes:         <none>
  Node-Selectors:  <none>
  Tolerations:     <none>
Events:            <none>
"
        );
        // Without `status.ready`, and with neither times nor a completion count.
        let mut j = j;
        j["status"] = crate::json!({"active": 1});
        j["spec"].as_object_mut().unwrap().remove("completions");
        let text = job(&j, &[], 0);
        assert!(text.contains("\nCompletions:        <unset>\n"), "{text}");
        assert!(text.contains("\nPods Statuses:      1 Active / 0 Succeeded / 0 Failed\nCompleted Indexes:  <none>\n"), "{text}");
        assert!(!text.contains("Duration:") && !text.contains("Start Time:"), "{text}");
    }

    #[test]
    fn completed_indexes_are_cut_at_the_first_comma_past_fifty_characters() {
        let long: String = (0..40).map(|i| (i * 2).to_string()).collect::<Vec<_>>().join(",");
        // "0,2,4,...": the 50th character is inside "34"; the list is cut after its comma.
        assert_eq!(cap_indexes(&long, 50), format!("{}...", &long[..=long[50..].find(',').unwrap() + 50]));
        assert!(cap_indexes(&long, 50).ends_with(",...") && cap_indexes(&long, 50).len() < long.len());
        assert_eq!(cap_indexes("0-2", 50), "0-2");
        assert_eq!(cap_indexes("", 50), "<none>");
    }

    #[test]
    fn a_cron_job_shows_its_schedule_job_template_and_active_jobs() {
        let cj = crate::json!({
            "metadata": {"name": "hello", "namespace": "default"},
            "spec": {
                "schedule": "*/1 * * * *", "concurrencyPolicy": "Allow", "suspend": false,
                "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
                "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                    "containers": [{"name": "hello", "image": "busybox:1.36", "args": ["/bin/sh", "-c", "date; echo Hello"]}]}}}}
            },
            "status": {"active": [{"kind": "Job", "namespace": "default", "name": "hello-29430000"}], "lastScheduleTime": "2026-01-01T00:02:00Z"}
        });
        assert_eq!(
            cron_job(&cj, &[], 0),
            "\
Name:                          hello
Namespace:                     default
Labels:                        <none>
Annotations:                   <none>
Schedule:                      */1 * * * *
Concurrency Policy:            Allow
Suspend:                       False
Time Zone:                     <unset>
Successful Job History Limit:  3
Failed Job History Limit:      1
Starting Deadline Seconds:     <unset>
Selector:                      <unset>
Parallelism:                   <unset>
Completions:                   <unset>
Pod Template:
  Labels:  <none>
  Containers:
   hello:
    Image:      busybox:1.36
    Port:       <none>
    Host Port:  <none>
    Args:
      /bin/sh
      -c
      date; echo Hello
    Environment:     <none>
    Mounts:          <none>
  Volumes:           <none>
  Node-Selectors:    <none>
  Tolerations:       <none>
Last Schedule Time:  Thu, 01 Jan 2026 00:02:00 +0000
Active Jobs:         hello-29430000
Events:              <none>
"
        );
    }

    #[test]
    fn an_hpa_shows_its_utilization_against_the_target_and_its_conditions() {
        let hpa = crate::json!({
            "metadata": {"name": "php-apache", "namespace": "default", "creationTimestamp": "2026-01-01T00:00:20Z"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "php-apache"},
                "minReplicas": 1, "maxReplicas": 10,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]
            },
            "status": {
                "currentReplicas": 1, "desiredReplicas": 1,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageValue": "0", "averageUtilization": 0}}}],
                "conditions": [
                    {"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale", "message": "recommended size matches current size"},
                    {"type": "ScalingActive", "status": "True", "reason": "ValidMetricFound",
                        "message": "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)"},
                    {"type": "ScalingLimited", "status": "False", "reason": "DesiredWithinRange", "message": "the desired count is within the acceptable range"}
                ]
            }
        });
        // The Events line shares the Conditions table's column block.
        assert_eq!(
            horizontal_pod_autoscaler(&hpa, &[], 0),
            "\
Name:                                                  php-apache
Namespace:                                             default
Labels:                                                <none>
Annotations:                                           <none>
CreationTimestamp:                                     Thu, 01 Jan 2026 00:00:20 +0000
Reference:                                             Deployment/php-apache
Metrics:                                               ( current / target )
  resource cpu on pods  (as a percentage of request):  0% (0) / 50%
Min replicas:                                          1
Max replicas:                                          10
Deployment pods:                                       1 current / 1 desired
Conditions:
  Type            Status  Reason              Message
  ----            ------  ------              -------
  AbleToScale     True    ReadyForNewScale    recommended size matches current size
  ScalingActive   True    ValidMetricFound    the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)
  ScalingLimited  False   DesiredWithinRange  the desired count is within the acceptable range
Events:           <none>
"
        );
    }

    #[test]
    fn an_hpa_shows_every_metric_source_and_its_scaling_behavior() {
        let hpa = crate::json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "u1", "labels": {"app": "web"}, "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"},
                "maxReplicas": 10,
                "metrics": [
                    {"type": "Pods", "pods": {"metric": {"name": "packets-per-second"}, "target": {"type": "AverageValue", "averageValue": "1k"}}},
                    {"type": "Object", "object": {"metric": {"name": "requests-per-second"},
                        "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main-route"},
                        "target": {"type": "Value", "value": "10k"}}},
                    {"type": "External", "external": {"metric": {"name": "queue_messages_ready"}, "target": {"type": "AverageValue", "averageValue": "30"}}},
                    {"type": "External", "external": {"metric": {"name": "queue_depth"}, "target": {"type": "Value", "value": "0.5"}}},
                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
                    {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "application",
                        "target": {"type": "Utilization", "averageUtilization": 60}}}
                ],
                "behavior": {
                    "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}, {"type": "Pods", "value": 4, "periodSeconds": 15}]},
                    "scaleDown": {"stabilizationWindowSeconds": 300, "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}
                }
            },
            "status": {
                "currentReplicas": 2, "desiredReplicas": 3,
                "currentMetrics": [{"type": "Pods", "pods": {"metric": {"name": "packets-per-second"}, "current": {"averageValue": "866m"}}}]
            }
        });
        let event = crate::json!({
            "type": "Normal", "reason": "SuccessfulRescale", "source": {"component": "horizontal-pod-autoscaler"},
            "message": "New size: 3; reason: pods metric packets-per-second above target",
            "firstTimestamp": "2026-01-01T00:01:00Z", "lastTimestamp": "2026-01-01T00:01:00Z", "count": 1
        });
        // Lines without a tab end a column block: the policies align among themselves,
        // and the last one with the line after the behavior.
        assert_eq!(
            horizontal_pod_autoscaler(&hpa, &[&event], 120_000),
            "\
Name:                                                                             web
Namespace:                                                                        default
Labels:                                                                           app=web
Annotations:                                                                      <none>
CreationTimestamp:                                                                Thu, 01 Jan 2026 00:00:00 +0000
Reference:                                                                        StatefulSet/web
Metrics:                                                                          ( current / target )
  \"packets-per-second\" on pods:                                                   866m / 1k
  \"requests-per-second\" on Ingress/main-route (target value):                     <unknown> / 10k
  \"queue_messages_ready\" (target average value):                                  <unknown> / 30
  \"queue_depth\" (target value):                                                   <unknown> / 500m
  resource memory on pods:                                                        <unknown> / 500Mi
  resource cpu of container \"application\" on pods  (as a percentage of request):  <unknown> / 60%
Min replicas:                                                                     <unset>
Max replicas:                                                                     10
Behavior:
  Scale Up:
    Stabilization Window: 0 seconds
    Select Policy: Max
    Policies:
      - Type: Percent  Value: 100  Period: 15 seconds
      - Type: Pods     Value: 4    Period: 15 seconds
  Scale Down:
    Stabilization Window: 300 seconds
    Select Policy: Max
    Policies:
      - Type: Percent  Value: 100  Period: 15 seconds
StatefulSet pods:      2 current / 3 desired
Events:
  Type    Reason             Age   From                       Message
  ----    ------             ----  ----                       -------
  Normal  SuccessfulRescale  60s   horizontal-pod-autoscaler  New size: 3; reason: pods metric packets-per-second above target
"
        );
    }

    #[test]
    fn hpa_metrics_without_values_print_as_go_prints_nil_quantities_and_unknown_types() {
        let hpa = crate::json!({
            "metadata": {"name": "h", "namespace": "default"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "maxReplicas": 3, "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}},
                {"type": "External", "external": {"metric": {"name": "say \"hi\"\n"}, "target": {"type": "Value"}}},
                {"type": "Bogus"}
            ]},
            "status": {"currentMetrics": [
                {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 30}}},
                {"type": "External", "external": {"metric": {"name": "q"}, "current": {}}}
            ]}
        });
        let text = horizontal_pod_autoscaler(&hpa, &[], 0);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[6].split_whitespace().collect::<Vec<_>>(), ["Metrics:", "(", "current", "/", "target", ")"]);
        assert_eq!(
            lines[7].split("  ").filter(|c| !c.is_empty()).collect::<Vec<_>>(),
            ["resource cpu on pods", "(as a percentage of request):", "30% (<nil>) / <auto>"]
        );
        assert_eq!(lines[8].trim_start().split(":  ").map(str::trim).collect::<Vec<_>>(), [r#""say \"hi\"\n" (target value)"#, "<nil> / <nil>"]);
        assert_eq!(lines[9], r#"  <unknown metric type "Bogus">"#);
        assert!(text.contains("\nDeployment pods:"), "{text}");
        assert!(!text.contains("Conditions:") && !text.contains("Behavior:"), "{text}");
    }

    #[test]
    fn a_disruption_budget_shows_its_bound_selector_and_status() {
        let pdb = crate::json!({
            "metadata": {"name": "web-pdb", "namespace": "default"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3}
        });
        assert_eq!(
            pod_disruption_budget(&pdb, &[], 0),
            "\
Name:           web-pdb
Namespace:      default
Min available:  2
Selector:       app=web
Status:
    Allowed disruptions:  1
    Current:              3
    Desired:              2
    Total:                3
Events:                   <none>
"
        );
        let pdb = crate::json!({
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {"maxUnavailable": "25%", "selector": {"matchLabels": {"tier": "db"}, "matchExpressions": [{"key": "app", "operator": "In", "values": ["b", "a"]}]}}
        });
        let text = pod_disruption_budget(&pdb, &[], 0);
        assert!(text.starts_with("Name:             db\nNamespace:        default\nMax unavailable:  25%\nSelector:         app in (a,b),tier=db\n"), "{text}");
        let text = pod_disruption_budget(&crate::json!({"metadata": {"name": "x"}, "spec": {}}), &[], 0);
        assert!(text.contains("\nSelector:   <unset>\n"), "{text}");
    }

    #[test]
    fn a_replication_controller_prints_its_template_environment_and_conditions() {
        let rc = crate::json!({
            "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}},
            "spec": {
                "replicas": 3, "selector": {"app": "nginx"},
                "template": {"metadata": {"labels": {"app": "nginx"}}, "spec": {"containers": [{
                    "name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "readinessProbe": {"httpGet": {"path": "/", "port": 80, "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
                    "envFrom": [{"configMapRef": {"name": "settings"}}],
                    "env": [
                        {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
                        {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode", "optional": true}}}
                    ]}]}}
            },
            "status": {"replicas": 1, "conditions": [{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate"}]}
        });
        let ps = pods(&["Running"]);
        assert_eq!(
            replication_controller(&rc, &ps.iter().collect::<Vec<_>>(), &[], 0),
            "\
Name:         nginx
Namespace:    default
Selector:     app=nginx
Labels:       app=nginx
Annotations:  <none>
Replicas:     1 current / 3 desired
Pods Status:  1 Running / 0 Waiting / 0 Succeeded / 0 Failed
Pod Template:
  Labels:  app=nginx
  Containers:
   nginx:
    Image:      nginx:1.27
    Port:       80/TCP
    Host Port:  0/TCP
    Readiness:  http-get http://:80/ delay=0s timeout=1s period=10s #success=1 #failure=3
    Environment Variables from:
      settings  ConfigMap  Optional: false
    Environment:
      PASSWORD:    <set to the key 'password' in secret 'db'>        Optional: false
      MODE:        <set to the key 'mode' of config map 'settings'>  Optional: true
    Mounts:        <none>
  Volumes:         <none>
  Node-Selectors:  <none>
  Tolerations:     <none>
Conditions:
  Type             Status  Reason
  ----             ------  ------
  ReplicaFailure   True    FailedCreate
Events:            <none>
"
        );
    }

    #[test]
    fn template_environment_resolves_resource_fields_and_keeps_field_refs_for_pods() {
        let c = crate::json!({"name": "app", "image": "busybox",
        "resources": {"limits": {"memory": "64Mi"}, "requests": {"cpu": "250m"}},
        "env": [
            {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1m"}}},
            {"name": "CORES", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu"}}},
            {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
            {"name": "MAXCPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
            {"name": "POD", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
            {"name": "TEAM", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels['team']"}}},
            {"name": "MULTI", "value": "a\nb"}
        ]});
        let pod = crate::json!({"metadata": {"name": "app-1", "labels": {"team": "blue"}}});
        let mut o = String::new();
        env(&mut o, &c, Some(&pod));
        assert_eq!(
            o,
            "    Environment:\n      CPU:\t250 (requests.cpu)\n      CORES:\t1 (requests.cpu)\n      MEM:\t64 (limits.memory)\n      MAXCPU:\tnode allocatable (limits.cpu)\n      POD:\tapp-1 (v1:metadata.name)\n      TEAM:\tblue (v1:metadata.labels['team'])\n      MULTI:\ta\n      \tb\n"
        );
        let mut o = String::new();
        env(&mut o, &c, None);
        assert!(o.contains("      POD:\t (v1:metadata.name)\n"), "{o}");
    }

    #[test]
    fn selectors_sort_requirements_by_key_as_labels_selector_does() {
        let sel = crate::json!({"matchLabels": {"tier": "web", "app": "shop"}, "matchExpressions": [
            {"key": "env", "operator": "NotIn", "values": ["prod", "dev"]},
            {"key": "zone", "operator": "DoesNotExist"},
            {"key": "canary", "operator": "Exists"}
        ]});
        assert_eq!(label_selector(Some(&sel)), "app=shop,canary,env notin (dev,prod),tier=web,!zone");
        assert_eq!(label_selector(Some(&crate::json!({}))), "<none>");
        assert_eq!(selector_text(None), "");
    }

    #[test]
    fn a_deployment_lists_every_old_replica_set_and_finds_the_new_one_by_template() {
        let template = crate::json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}});
        let d = crate::json!({"metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template.clone()}});
        let rs = |name: &str, image: &str, at: &str, replicas: i64| {
            let mut t = template.clone();
            t["metadata"]["labels"]["pod-template-hash"] = crate::json!(name.trim_start_matches("web-"));
            t["spec"]["containers"][0]["image"] = crate::json!(image);
            crate::json!({"metadata": {"name": name, "uid": name, "creationTimestamp": at},
                "spec": {"replicas": replicas, "template": t}, "status": {"replicas": replicas}})
        };
        let (a, b, c) = (
            rs("web-b", "nginx:1.25", "2026-01-01T00:00:00Z", 0),
            rs("web-a", "nginx:1.26", "2026-01-01T00:01:00Z", 1),
            rs("web-c", "nginx:1.27", "2026-01-01T00:02:00Z", 1),
        );
        let text = deployment(&d, &[&c, &b, &a], &[], 0);
        assert!(
            // The two lines share their column block with the template's last lines.
            text.contains("\n  Tolerations:     <none>\nOldReplicaSets:    web-b (0/0 replicas created), web-a (1/1 replicas created)\nNewReplicaSet:     web-c (1/1 replicas created)\n"),
            "{text}"
        );
        assert!(text.contains("\nSelector:               app=web\n"), "{text}");
        // Without replica sets, kubectl prints neither line.
        assert!(!deployment(&d, &[], &[], 0).contains("ReplicaSet"));
    }
}
