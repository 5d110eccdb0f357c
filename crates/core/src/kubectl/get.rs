//! `kubectl get`, one-shot and `-w` (`k8s.io/kubectl/pkg/cmd/get`): tables from the printers,
//! `-o yaml|json|name|jsonpath`, and a watch that prints rows as the store's history moves.

use super::*;
use crate::foundation::sort::Sort;

/// The resources in the `all` category (`categories: [all]` in discovery).
const ALL_CATEGORY: [&str; 10] = [
    "pods",
    "replicationcontrollers",
    "services",
    "daemonsets.apps",
    "deployments.apps",
    "replicasets.apps",
    "statefulsets.apps",
    "horizontalpodautoscalers.autoscaling",
    "cronjobs.batch",
    "jobs.batch",
];

/// `kubectl get TYPE[,TYPE...] [NAME...] [-n NS | -A] [-l SELECTOR] [-o wide|yaml|json|name] [--show-labels]`.
pub(super) fn get(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    if let Some(path) = f.get("--raw") {
        return raw(api, creds, path);
    }
    let Some(ty) = f.positional.first() else {
        return vec!["error: You must specify the type of resource to get. Use \"kubectl api-resources\" for a complete list of supported resources.".into()];
    };
    if !ty.contains(',') && ty != "all" {
        return get_typed(api, creds, f, ns, false);
    }
    // Several types: each type's table with kind-qualified names, a blank line between;
    // yaml and json gather every object into one List. `all` is the category of that name,
    // in discovery's order.
    let types: Vec<String> =
        ty.split(',').filter(|t| !t.is_empty()).flat_map(|t| if t == "all" { ALL_CATEGORY.to_vec() } else { vec![t] }).map(str::to_string).collect();
    if let Some(bad) = types.iter().find(|t| resource_for_name(t).is_none()) {
        return vec![format!("error: the server doesn't have a resource type \"{bad}\"")];
    }
    let output = f.get("--output").unwrap_or("");
    if matches!(output, "yaml" | "json") {
        let mut items = Vec::new();
        for t in &types {
            let mut one = f.clone();
            one.positional[0] = t.clone();
            one.values.retain(|(k, _)| k != "--output");
            one.values.push(("--output".into(), "json".into()));
            let text = get_typed(api, creds, &one, ns, true).join("\n");
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                match v.get("items").and_then(Value::as_array) {
                    Some(list) => items.extend(list.iter().cloned()),
                    None if v.get("kind").is_some() => items.push(v),
                    None => {}
                }
            }
        }
        let v = json!({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}});
        return vec![if output == "yaml" { crate::kubectl::goyaml::to_yaml(&v).trim_end().to_string() } else { json_indent4(&v) }];
    }
    let mut out: Vec<String> = Vec::new();
    let mut errors = Vec::new();
    for t in &types {
        let mut one = f.clone();
        one.positional[0] = t.clone();
        let lines = get_typed(api, creds, &one, ns, true);
        if lines.first().is_some_and(|l| l.starts_with("No resources found")) {
            continue;
        }
        let (table, errs): (Vec<String>, Vec<String>) = lines.into_iter().partition(|l| !l.starts_with("Error from server") && !l.starts_with("error:"));
        errors.extend(errs);
        if table.is_empty() {
            continue;
        }
        // A blank line between types' tables, when they have headers.
        if !out.is_empty() && output != "name" && !switch(f, "--no-headers") {
            out.push(String::new());
        }
        out.extend(table);
    }
    if out.is_empty() && errors.is_empty() && !switch(f, "--ignore-not-found") {
        let all = f.all_namespaces;
        out.push(if all || ns.is_empty() { "No resources found".to_string() } else { format!("No resources found in {ns} namespace.") });
    }
    out.extend(errors);
    out
}

/// One type's `get`; `qualified` prefixes names with their kind (`statefulset.apps/web`),
/// as kubectl does when a command names several types.
fn get_typed(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str, qualified: bool) -> Vec<String> {
    let ty = &f.positional[0];
    let Some(r) = resource_for_name(ty) else {
        return vec![format!("error: the server doesn't have a resource type \"{ty}\"")];
    };
    let res = &RESOURCES[r];
    let output = f.get("--output").unwrap_or("");
    let template = output.strip_prefix("jsonpath=").map(|t| t.trim_matches('\''));
    let columns = match output.strip_prefix("custom-columns=").map(custom_columns).transpose() {
        Ok(c) => c,
        Err(e) => return vec![format!("error: {e}")],
    };
    if output == "custom-columns" {
        return vec!["error: custom-columns format specified but no custom columns given".into()];
    }
    // `-o go-template=T`, or `-o go-template --template=T` (`template` is its other name).
    let go_template = match output.split_once('=') {
        Some(("go-template" | "template", t)) => Some(t.to_string()),
        _ if matches!(output, "go-template" | "template") => match f.get("--template") {
            Some(t) if !t.is_empty() => Some(t.to_string()),
            _ => return vec!["error: template format specified but no template given".into()],
        },
        _ => None,
    };
    if template.is_none() && columns.is_none() && go_template.is_none() && !matches!(output, "" | "wide" | "yaml" | "json" | "name") {
        return vec![format!(
            "error: unable to match a printer suitable for the output format \"{output}\", allowed formats are: custom-columns,go-template,json,jsonpath,name,template,wide,yaml (kubeloop's subset)"
        )];
    }
    let ns = if !res.namespaced || f.all_namespaces { "" } else { ns };
    let names = &f.positional[1..];
    let mut objects: Vec<Value> = Vec::new();
    let mut errors = Vec::new();
    if names.is_empty() {
        match api.handle(Request::new(Verb::List, r, ns, "", creds.clone())) {
            Ok(list) => objects.extend(api::get_array(&list, &["items"]).iter().cloned()),
            Err(s) => return vec![s.kubectl_message(None, "")],
        }
    } else {
        for n in names {
            match api.handle(Request::new(Verb::Get, r, ns, n, creds.clone())) {
                Ok(o) => objects.push((*o).clone()),
                Err(s) if s.code == 404 && switch(f, "--ignore-not-found") => {}
                Err(s) => errors.push(s.kubectl_message(None, "")),
            }
        }
    }
    if let Some(sel) = &f.selector {
        match crate::foundation::labels::Selector::parse(sel) {
            Ok(s) => objects.retain(|o| s.matches(api::labels(o))),
            Err(e) => return vec![format!("error: {e}")],
        }
    }
    if let Some(sel) = f.get("--field-selector") {
        match crate::apiserver::fields::FieldSelector::parse(res.kind, sel) {
            Ok(fs) => objects.retain(|o| fs.matches(res.kind, o)),
            Err(s) => return vec![s.kubectl_message(None, "")],
        }
    }
    if let Some(path) = f.get("--sort-by") {
        let field: Vec<&str> = path.trim_start_matches('{').trim_end_matches('}').trim_start_matches('.').split('.').filter(|p| !p.is_empty()).collect();
        // Numbers compare as numbers, everything else as text; objects without the field first.
        objects.sort_stable_by(|a, b| {
            let (x, y) = (api::get(a, &field), api::get(b, &field));
            match (x.and_then(Value::as_f64), y.and_then(Value::as_f64)) {
                (Some(m), Some(n)) => m.total_cmp(&n),
                _ => x
                    .map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))
                    .cmp(&y.map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))),
            }
        });
    }
    let mut out = Vec::new();
    if objects.is_empty() && !errors.is_empty() {
        return errors;
    }
    // `--ignore-not-found`: nothing at all when nothing is found (not even a List).
    if objects.is_empty() && switch(f, "--ignore-not-found") {
        return errors;
    }
    if objects.is_empty() {
        out.push(if ns.is_empty() { "No resources found".to_string() } else { format!("No resources found in {ns} namespace.") });
        return out;
    }
    if let Some(t) = template {
        // A single named object is the template's root; otherwise a List.
        let v = if objects.len() == 1 && !names.is_empty() { objects.remove(0) } else { json!({"apiVersion": "v1", "items": objects, "kind": "List"}) };
        return match crate::kubectl::jsonpath::render(t, &v) {
            Ok(s) => s.lines().map(str::to_string).collect(),
            Err(e) => vec![format!("error: error parsing jsonpath {t}, {e}")],
        };
    }
    if let Some(t) = go_template {
        let v = if objects.len() == 1 && !names.is_empty() {
            objects.remove(0)
        } else {
            json!({"apiVersion": "v1", "items": objects, "kind": "List", "metadata": {"resourceVersion": ""}})
        };
        let mut out: Vec<String> = match crate::kubectl::gotemplate::render(&t, &v) {
            Ok(s) => s.split('\n').map(str::to_string).collect(),
            Err(crate::kubectl::gotemplate::Error::Parse(e)) => vec![format!("error: error parsing template {t}, {e}")],
            // kubectl prints what it gave the template, then the error.
            Err(crate::kubectl::gotemplate::Error::Exec(e)) => {
                let mut lines = vec![format!("Error executing template: {e}. Printing more information for debugging the template:")];
                lines.push("\ttemplate was:".into());
                lines.push(format!("\t\t{t}"));
                lines.push("\traw data was:".into());
                lines.push(format!("\t\t{}", crate::kubectl::gotemplate::go_json(&v)));
                lines.push("\tobject given to template engine was:".into());
                lines.extend(format!("\t\t{}", crate::kubectl::gotemplate::sprint_value(&v)).split('\n').map(str::to_string));
                lines.push(String::new());
                lines.push(format!("error: error executing template {t:?}: {e}"));
                lines
            }
        };
        // What the template wrote ends where it ends: no line of its own after it.
        if out.last().is_some_and(String::is_empty) {
            out.pop();
        }
        out.extend(errors);
        return out;
    }
    if let Some(columns) = columns {
        let mut rows = Vec::new();
        if !switch(f, "--no-headers") {
            rows.push(columns.iter().map(|(h, _)| h.clone()).collect());
        }
        for o in &objects {
            let mut row = Vec::new();
            for (_, expr) in &columns {
                let found = match crate::kubectl::jsonpath::values(expr, o) {
                    Ok(v) => v,
                    Err(e) => return vec![format!("error: {e}")],
                };
                row.push(if found.is_empty() { "<none>".to_string() } else { found.iter().map(|v| go_sprint(v)).collect::<Vec<_>>().join(",") });
            }
            rows.push(row);
        }
        out.extend(crate::kubectl::printers::table(&rows).lines().map(str::to_string));
        out.extend(errors);
        return out;
    }
    match output {
        "name" => out.extend(objects.iter().map(|o| format!("{}/{}", kind_prefix(r), api::name(o)))),
        "yaml" | "json" => {
            // kubectl hides managedFields unless asked (`--show-managed-fields`).
            if f.get("--show-managed-fields") != Some("true") {
                for o in objects.iter_mut() {
                    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
                        m.remove("managedFields");
                    }
                }
            }
            let v = if objects.len() == 1 && !names.is_empty() {
                objects.remove(0)
            } else {
                json!({"apiVersion": "v1", "items": objects, "kind": "List", "metadata": {"resourceVersion": ""}})
            };
            out.push(if output == "yaml" { crate::kubectl::goyaml::to_yaml(&v).trim_end().to_string() } else { json_indent4(&v) });
        }
        _ => {
            let refs: Vec<&Value> = objects.iter().collect();
            let (mut header, mut rows) = crate::kubectl::printers::get_rows(res.kind, &refs, api.now, output == "wide");
            if (qualified || switch(f, "--show-kind")) && header.first().map(String::as_str) == Some("NAME") {
                for row in rows.iter_mut() {
                    if let Some(name) = row.first_mut() {
                        *name = format!("{}/{name}", kind_prefix(r));
                    }
                }
            }
            if f.all_namespaces && res.namespaced {
                header.insert(0, "NAMESPACE".into());
                for (row, o) in rows.iter_mut().zip(&objects) {
                    row.insert(0, api::namespace(o).to_string());
                }
            }
            // `-L KEY,...`: a column per label key, headed by its last path segment in
            // capitals, empty where the object lacks it (`formatLabelHeaders`).
            let keys: Vec<&str> =
                f.values.iter().filter(|(k, _)| k == "--label-columns").flat_map(|(_, v)| v.split(',')).map(str::trim).filter(|k| !k.is_empty()).collect();
            for key in &keys {
                header.push(key.rsplit('/').next().unwrap_or(key).to_ascii_uppercase());
            }
            for (row, o) in rows.iter_mut().zip(&objects) {
                let labels = api::labels(o);
                row.extend(keys.iter().map(|k| labels.and_then(|l| l.get(k)).and_then(Value::as_str).unwrap_or("").to_string()));
            }
            if switch(f, "--show-labels") {
                header.push("LABELS".into());
                for (row, o) in rows.iter_mut().zip(&objects) {
                    let labels: Vec<String> = api::labels(o).into_iter().flatten().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))).collect();
                    row.push(if labels.is_empty() { "<none>".into() } else { labels.join(",") });
                }
            }
            // Without headers, the columns are as wide as the rows alone need.
            if !switch(f, "--no-headers") {
                rows.insert(0, header);
            }
            out.extend(crate::kubectl::printers::table(&rows).lines().map(str::to_string));
        }
    }
    out.extend(errors);
    out
}

/// `-o custom-columns=HEADER:PATH,...` (`NewCustomColumnsPrinterFromSpec`): each column's
/// header and its path as a JSONPath template, `.a.b`, `a.b` and `{.a.b}` alike
/// (`RelaxedJSONPathExpression`).
fn custom_columns(spec: &str) -> Result<Vec<(String, String)>, String> {
    if spec.is_empty() {
        return Err("custom-columns format specified but no custom columns given".into());
    }
    spec.split(',')
        .map(|part| {
            let (header, path) = part.split_once(':').ok_or_else(|| format!("unexpected custom-columns spec: {part}, expected <header>:<json-path-expr>"))?;
            let inner = match path.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                Some(inner) => inner,
                None => path,
            };
            let inner = inner.strip_prefix('.').unwrap_or(inner);
            if !path.is_empty() && (inner.is_empty() || inner.contains(['{', '}'])) {
                return Err("unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'".into());
            }
            Ok((header.to_string(), if path.is_empty() { String::new() } else { format!("{{.{inner}}}") }))
        })
        .collect()
}

/// A value as Go's `fmt.Sprint` prints what JSON decoded into: `map[k:v]` with sorted
/// keys, `[a b]`, `<nil>`.
fn go_sprint(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::String(s) => s.to_string(),
        Value::Array(items) => format!("[{}]", items.iter().map(go_sprint).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => {
            let mut pairs: Vec<(String, String)> = m.iter().map(|(k, v)| (k.to_string(), go_sprint(v))).collect();
            pairs.sort_stable_by(|a, b| a.0.cmp(&b.0));
            format!("map[{}]", pairs.into_iter().map(|(k, v)| format!("{k}:{v}")).collect::<Vec<_>>().join(" "))
        }
        other => other.to_string(),
    }
}

/// JSON as kubectl prints it: four-space indentation.
pub(super) fn json_indent4(v: &Value) -> String {
    let mut buf = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, serde_json::ser::PrettyFormatter::with_indent(b"    "));
    let _ = serde::Serialize::serialize(v, &mut ser);
    String::from_utf8(buf).unwrap_or_default()
}

/// A `kubectl get -w` in progress: rows for every later change to the listed objects.
#[derive(Debug, Clone)]
pub struct Watch {
    resource: ResourceId,
    /// Empty: all namespaces.
    namespace: String,
    selector: Option<crate::foundation::labels::Selector>,
    names: Vec<String>,
    wide: bool,
    all_namespaces: bool,
    since: u64,
    widths: Vec<usize>,
}

/// Run a command line; if it is `get ... -w` (or `--watch`), also return the watch that
/// prints later changes (see [`Watch::poll`]).
pub fn run_watching(api: &mut ApiServer, creds: &Credentials, line: &str) -> (Vec<String>, Option<Watch>) {
    let Ok(words) = split_args(line) else { return (run(api, creds, line), None) };
    let words: Vec<String> = if words.first().map(String::as_str) == Some("kubectl") { words[1..].to_vec() } else { words };
    let watching = words.first().map(String::as_str) == Some("get") && words.iter().any(|w| w == "-w" || w == "--watch" || w == "--watch=true");
    if !watching {
        return (run(api, creds, line), None);
    }
    let words = match super::flags::check(&words) {
        Ok(w) => w,
        Err(e) => return (e, None),
    };
    let rest: Vec<String> = words.into_iter().filter(|w| w != "--watch=true").collect();
    let Ok(f) = parse_flags(&rest[1..]) else { return (run(api, creds, line), None) };
    let since = api.store.revision();
    let out = get(api, creds, &f, f.namespace.as_deref().unwrap_or("default"));
    let Some(r) = f.positional.first().and_then(|t| resource_for_name(t)) else { return (out, None) };
    if out.iter().any(|l| super::is_error_line(l)) || !matches!(f.get("--output"), None | Some("wide")) {
        return (out, None);
    }
    let widths =
        out.first().filter(|h| h.starts_with("NAME") || h.starts_with("NAMESPACE") || h.starts_with("LAST SEEN")).map(|h| header_widths(h)).unwrap_or_default();
    let namespace = if f.all_namespaces || !RESOURCES[r].namespaced { String::new() } else { f.namespace.clone().unwrap_or_else(|| "default".into()) };
    let selector = f.selector.as_deref().and_then(|s| crate::foundation::labels::Selector::parse(s).ok());
    let watch = Watch {
        resource: r,
        namespace,
        selector,
        names: f.positional[1..].to_vec(),
        wide: f.get("--output") == Some("wide"),
        all_namespaces: f.all_namespaces,
        since,
        widths,
    };
    (out, Some(watch))
}

/// Column widths of a printed header: each column runs to the start of the next.
pub(super) fn header_widths(h: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let b: Vec<char> = h.chars().collect();
    for i in 0..b.len() {
        if b[i] != ' ' && (i == 0 || (b[i - 1] == ' ' && i >= 2 && b[i - 2] == ' ')) {
            starts.push(i);
        }
    }
    starts.windows(2).map(|w| w[1] - w[0]).collect()
}

impl Watch {
    /// Rows for the changes since the last poll, aligned to the first table's columns.
    pub fn poll(&mut self, api: &ApiServer) -> Vec<String> {
        let events: Vec<Value> = match api.store.events_since(self.resource, self.since) {
            Ok(it) => it
                .filter(|e| self.namespace.is_empty() || api::namespace(&e.object) == self.namespace)
                .filter(|e| self.names.is_empty() || self.names.iter().any(|n| n == api::name(&e.object)))
                .filter(|e| self.selector.as_ref().is_none_or(|s| s.matches(api::labels(&e.object))))
                .map(|e| (*e.object).clone())
                .collect(),
            Err(_) => vec![],
        };
        self.since = api.store.revision();
        let refs: Vec<&Value> = events.iter().collect();
        let (_, rows) = crate::kubectl::printers::get_rows(RESOURCES[self.resource].kind, &refs, api.now, self.wide);
        rows.into_iter()
            .zip(&events)
            .map(|(mut row, o)| {
                if self.all_namespaces && RESOURCES[self.resource].namespaced {
                    row.insert(0, api::namespace(o).to_string());
                }
                let n = row.len();
                let mut line = String::new();
                for (i, cell) in row.into_iter().enumerate() {
                    line.push_str(&cell);
                    if i + 1 < n {
                        let w = self.widths.get(i).copied().unwrap_or(0).max(cell.chars().count() + 3);
                        line.push_str(&" ".repeat(w - cell.chars().count()));
                    }
                }
                line
            })
            .collect()
    }
}

/// `kubectl get --raw PATH` for the API server's debugging endpoints: API Priority and
/// Fairness's `dump_priority_levels` (for `system:masters`, as its RBAC allows).
fn raw(api: &mut ApiServer, creds: &Credentials, path: &str) -> Vec<String> {
    const DUMP: &str = "/debug/api_priority_and_fairness/dump_priority_levels";
    let user = match creds {
        Credentials::User(u) => Some(u.clone()),
        Credentials::Token(t) => api.tokens.get(t).cloned(),
    };
    let Some(user) = user else { return vec!["error: You must be logged in to the server (Unauthorized)".into()] };
    if path != DUMP {
        return vec![format!("error: kubeloop's terminal serves --raw only for {DUMP} (got {path:?})")];
    }
    if !user.groups.iter().any(|g| g == "system:masters") {
        return vec![format!("Error from server (Forbidden): forbidden: User {:?} cannot get path {DUMP:?}", user.name)];
    }
    let text = api.flowcontrol.dump(&api.store, api.now);
    crate::kubectl::describe::tabwrite(&text).lines().map(str::to_string).collect()
}
