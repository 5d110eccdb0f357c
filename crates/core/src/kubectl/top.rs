//! `kubectl top pod|node` (`k8s.io/kubectl/pkg/cmd/top/top_pod.go`, `top_node.go`,
//! `pkg/metricsutil/metrics_printer.go`): the resource metrics API's PodMetrics and
//! NodeMetrics, CPU in millicores and memory in MiB.

use super::*;
use crate::foundation::quantity::parse_milli;
use crate::foundation::sim::parse_rfc3339;
use crate::foundation::sort::Sort;

/// `metricsCreationDelay`: a pod younger than this may not have metrics yet.
const METRICS_CREATION_DELAY: crate::foundation::sim::Millis = 120_000;

/// Milli-units of a quantity, rounded up as `MilliValue` does.
fn milli(v: Option<&Value>) -> i64 {
    let Some(s) = v.and_then(Value::as_str) else { return 0 };
    match crate::foundation::quantity::parse(s) {
        Ok(q) => q.milli,
        Err(_) => parse_milli(s).unwrap_or(0),
    }
}

/// Go's `time.Duration.String()` of milliseconds (`2m30.5s`).
fn go_duration(ms: crate::foundation::sim::Millis) -> String {
    let trim = |secs: u64, frac: u64| {
        let s = format!("{secs}.{frac:03}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    let (s, frac) = (ms / 1000, ms % 1000);
    let (h, m, sec) = (s / 3600, (s / 60) % 60, s % 60);
    match (h, m) {
        (0, 0) => format!("{}s", trim(sec, frac)),
        (0, _) => format!("{m}m{}s", trim(sec, frac)),
        _ => format!("{h}h{m}m{}s", trim(sec, frac)),
    }
}

fn cpu_cell(m: i64) -> String {
    format!("{m}m")
}

fn memory_cell(milli_bytes: i64) -> String {
    format!("{}Mi", milli_bytes / 1000 / (1024 * 1024))
}

pub(super) fn top(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    match f.positional.first().map(String::as_str) {
        Some("pod" | "pods" | "po") => top_pods(api, creds, f, ns),
        Some("node" | "nodes" | "no") => top_nodes(api, creds, f),
        _ => vec!["error: kubeloop supports \"kubectl top pod\" and \"kubectl top node\"".into()],
    }
}

fn sorted(rows: &mut [(Vec<String>, i64, i64)], f: &Flags) -> Result<(), String> {
    match f.get("--sort-by") {
        None | Some("") => Ok(()),
        Some("cpu") => {
            rows.sort_stable_by_key(|r| std::cmp::Reverse(r.1));
            Ok(())
        }
        Some("memory") => {
            rows.sort_stable_by_key(|r| std::cmp::Reverse(r.2));
            Ok(())
        }
        Some(_) => Err("error: --sort-by accepts only cpu or memory".into()),
    }
}

fn top_pods(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let name = f.positional.get(1).cloned();
    let all = f.all_namespaces;
    let list_ns = if all { "" } else { ns };
    let selector = match f.selector.as_deref().map(crate::foundation::labels::Selector::parse).transpose() {
        Ok(s) => s,
        Err(e) => return vec![format!("error: {e}")],
    };
    let items: Vec<Value> = match &name {
        Some(n) => match api.handle(Request::new(Verb::Get, api::rid::PODMETRICS, ns, n, creds.clone())) {
            Ok(m) => vec![(*m).clone()],
            Err(s) => return vec![s.kubectl_message(None, "")],
        },
        None => match api.handle(Request::new(Verb::List, api::rid::PODMETRICS, list_ns, "", creds.clone())) {
            Ok(l) => api::get_array(&l, &["items"]).iter().filter(|m| selector.as_ref().is_none_or(|s| s.matches(api::labels(m)))).cloned().collect(),
            Err(s) => return vec![s.kubectl_message(None, "")],
        },
    };
    if items.is_empty() {
        // `verifyEmptyMetrics`: young pods have no metrics yet; old ones should.
        let pods: Vec<Value> = match &name {
            Some(n) => match fetch(api, creds, api::rid::POD, ns, n) {
                Ok(p) => vec![(*p).clone()],
                Err(e) => return vec![e],
            },
            None => match api.handle(Request::new(Verb::List, api::rid::POD, list_ns, "", creds.clone())) {
                Ok(l) => api::get_array(&l, &["items"]).iter().filter(|p| selector.as_ref().is_none_or(|s| s.matches(api::labels(p)))).cloned().collect(),
                Err(s) => return vec![s.kubectl_message(None, "")],
            },
        };
        if pods.is_empty() {
            return vec![if all { "No resources found".into() } else { format!("No resources found in {ns} namespace.") }];
        }
        for p in &pods {
            let created = api::get_str(p, &["metadata", "creationTimestamp"]).and_then(parse_rfc3339).unwrap_or(api.now);
            let age = api.now.saturating_sub(created);
            if age > METRICS_CREATION_DELAY {
                return vec![format!("error: Metrics not available for pod {}/{}, age: {}", api::namespace(p), api::name(p), go_duration(age))];
            }
        }
        return vec!["error: metrics not available yet".into()];
    }
    let containers = f.get("--containers").is_some_and(|v| v != "false");
    let mut rows: Vec<(Vec<String>, i64, i64)> = Vec::new();
    for m in &items {
        let ctrs = api::get_array(m, &["containers"]);
        let mut prefix = Vec::new();
        if all {
            prefix.push(api::namespace(m).to_string());
        }
        if containers {
            for c in ctrs {
                let (cpu, mem) = (milli(api::get(c, &["usage", "cpu"])), milli(api::get(c, &["usage", "memory"])));
                let mut row = prefix.clone();
                row.extend([api::name(m).to_string(), api::get_str(c, &["name"]).unwrap_or("").to_string(), cpu_cell(cpu), memory_cell(mem)]);
                rows.push((row, cpu, mem));
            }
        } else {
            let cpu: i64 = ctrs.iter().map(|c| milli(api::get(c, &["usage", "cpu"]))).sum();
            let mem: i64 = ctrs.iter().map(|c| milli(api::get(c, &["usage", "memory"]))).sum();
            let mut row = prefix;
            row.extend([api::name(m).to_string(), cpu_cell(cpu), memory_cell(mem)]);
            rows.push((row, cpu, mem));
        }
    }
    if let Err(e) = sorted(&mut rows, f) {
        return vec![e];
    }
    let mut table = Vec::new();
    if f.get("--no-headers").is_none_or(|v| v == "false") {
        let mut h: Vec<String> = Vec::new();
        if all {
            h.push("NAMESPACE".into());
        }
        if containers {
            h.push("POD".into());
        }
        h.extend(["NAME".to_string(), "CPU(cores)".into(), "MEMORY(bytes)".into()]);
        table.push(h);
    }
    table.extend(rows.into_iter().map(|r| r.0));
    crate::kubectl::printers::table(&table).lines().map(str::to_string).collect()
}

fn top_nodes(api: &mut ApiServer, creds: &Credentials, f: &Flags) -> Vec<String> {
    let name = f.positional.get(1).cloned();
    let selector = match f.selector.as_deref().map(crate::foundation::labels::Selector::parse).transpose() {
        Ok(s) => s,
        Err(e) => return vec![format!("error: {e}")],
    };
    let items: Vec<Value> = match &name {
        Some(n) => match api.handle(Request::new(Verb::Get, api::rid::NODEMETRICS, "", n, creds.clone())) {
            Ok(m) => vec![(*m).clone()],
            Err(s) => return vec![s.kubectl_message(None, "")],
        },
        None => match api.handle(Request::new(Verb::List, api::rid::NODEMETRICS, "", "", creds.clone())) {
            Ok(l) => api::get_array(&l, &["items"]).iter().filter(|m| selector.as_ref().is_none_or(|s| s.matches(api::labels(m)))).cloned().collect(),
            Err(s) => return vec![s.kubectl_message(None, "")],
        },
    };
    if items.is_empty() {
        return vec!["error: metrics not available yet".into()];
    }
    let nodes: Vec<Value> = match &name {
        Some(n) => match fetch(api, creds, api::rid::NODE, "", n) {
            Ok(o) => vec![(*o).clone()],
            Err(e) => return vec![e],
        },
        None => match api.handle(Request::new(Verb::List, api::rid::NODE, "", "", creds.clone())) {
            Ok(l) => api::get_array(&l, &["items"]).iter().filter(|n| selector.as_ref().is_none_or(|s| s.matches(api::labels(n)))).cloned().collect(),
            Err(s) => return vec![s.kubectl_message(None, "")],
        },
    };
    let capacity = if f.get("--show-capacity").is_some_and(|v| v != "false") { "capacity" } else { "allocatable" };
    let mut rows: Vec<(Vec<String>, i64, i64)> = Vec::new();
    for m in &items {
        let Some(node) = nodes.iter().find(|n| api::name(n) == api::name(m)) else { continue };
        let (cpu, mem) = (milli(api::get(m, &["usage", "cpu"])), milli(api::get(m, &["usage", "memory"])));
        let (acpu, amem) = (milli(api::get(node, &["status", capacity, "cpu"])), milli(api::get(node, &["status", capacity, "memory"])));
        let pct = |u: i64, a: i64| if a > 0 { format!("{}%", (u as f64 / a as f64 * 100.0) as i64) } else { "0%".into() };
        rows.push((vec![api::name(m).to_string(), cpu_cell(cpu), pct(cpu, acpu), memory_cell(mem), pct(mem, amem)], cpu, mem));
    }
    if let Err(e) = sorted(&mut rows, f) {
        return vec![e];
    }
    let mut table = Vec::new();
    if f.get("--no-headers").is_none_or(|v| v == "false") {
        table.push(["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"].iter().map(|s| s.to_string()).collect());
    }
    table.extend(rows.into_iter().map(|r| r.0));
    for n in &nodes {
        if !items.iter().any(|m| api::name(m) == api::name(n)) {
            let u = "<unknown>".to_string();
            table.push(vec![api::name(n).to_string(), u.clone(), u.clone(), u.clone(), u]);
        }
    }
    crate::kubectl::printers::table(&table).lines().map(str::to_string).collect()
}
