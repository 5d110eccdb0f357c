//! The kubectl client side kubeloop serves to scenarios and the page's terminal: `apply`
//! (client-side, with the `last-applied-configuration` three-way patch), `get`, `scale`,
//! `delete`, `cordon`, `uncordon`, `label` and `annotate`, printing what kubectl prints
//! (`k8s.io/kubectl/pkg/cmd/...`, `k8s.io/cli-runtime/pkg/printers/name.go`).

use crate::apiserver::{ApiServer, Credentials, KubeletClient, PatchType, Request, Verb};
use crate::foundation::api::{self, get_str, resource_for_kind, resource_for_name, ResourceId, RESOURCES};
use crate::foundation::status::Status;
use crate::foundation::value::{json, Map, Value};

pub mod describe;
pub mod diff;
pub mod explain;
pub mod goyaml;
pub mod jsonpath;
pub mod printers;

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Split a command line the way a POSIX shell would (quotes and backslashes).
pub fn split_args(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                        None => return Err("unterminated quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => {
                            if let Some(x) = chars.next() {
                                cur.push(x)
                            }
                        }
                        Some(x) => cur.push(x),
                        None => return Err("unterminated quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(x) = chars.next() {
                    cur.push(x);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c)
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

/// `deployment.apps/web`, `pod/x` (the name printer's prefix).
pub fn kind_prefix(r: ResourceId) -> String {
    let res = &RESOURCES[r];
    if res.group.is_empty() {
        res.kind.to_lowercase()
    } else {
        format!("{}.{}", res.kind.to_lowercase(), res.group)
    }
}

/// The three-way patch kubectl's client-side apply sends: fields of the new manifest that
/// differ from the live object, and `null` for fields the last applied manifest had and
/// the new one dropped.
pub fn three_way(last: Option<&Value>, new: &Value, live: &Value) -> Value {
    let mut patch = Map::new();
    if let Some(n) = new.as_object() {
        for (k, v) in n {
            let l = live.get(k);
            match (v, l) {
                (Value::Object(_), Some(Value::Object(_))) => {
                    let sub = three_way(last.and_then(|x| x.get(k)), v, l.unwrap_or(&Value::Null));
                    if sub.as_object().is_some_and(|m| !m.is_empty()) {
                        patch.insert(k.clone(), sub);
                    }
                }
                _ => {
                    if l != Some(v) {
                        patch.insert(k.clone(), v.clone());
                    }
                }
            }
        }
    }
    if let Some(last) = last.and_then(Value::as_object) {
        for k in last.keys() {
            if new.get(k).is_none() && live.get(k).is_some() {
                patch.insert(k.clone(), Value::Null);
            }
        }
    }
    Value::Object(patch)
}

fn retrieval_error(s: &Status, r: ResourceId, name: &str, ns: &str, file: &str) -> String {
    let res = &RESOURCES[r];
    let gv = res.api_version();
    let reason = if s.reason.is_empty() { String::new() } else { format!(" ({})", s.reason) };
    format!(
        "Error from server{reason}: error when retrieving current configuration of:\nResource: \"{gv}, Resource={}\", GroupVersionKind: \"{gv}, Kind={}\"\nName: {name:?}, Namespace: {ns:?}\nfrom server for: {file:?}: {}",
        res.plural, res.kind, s.message
    )
}

/// kubectl prints the server's warnings (`Warning: ...`) before the result.
fn with_warnings(api: &ApiServer, line: String) -> String {
    let mut out: Vec<String> = api.warnings.iter().map(|w| format!("Warning: {w}")).collect();
    out.push(line);
    out.join("\n")
}

/// The lines for each document of a `-f` file: kubectl's parse error for a broken one,
/// `each`'s lines for an object.
pub fn each_document(text: &str, file: &str, mut each: impl FnMut(Value) -> Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    for doc in crate::foundation::manifest::parse(text) {
        for d in &doc.diagnostics {
            out.push(format!("error: error parsing {file}: error converting YAML to JSON: {}", d.message));
        }
        if let Some(obj) = doc.object {
            out.extend(each(obj));
        }
    }
    out
}

/// `kubectl apply -f <file>` with `text` as the file's content.
pub fn apply_text(api: &mut ApiServer, creds: &Credentials, text: &str, file: &str) -> Vec<String> {
    each_document(text, file, |obj| vec![apply_object(api, creds, obj, file)])
}

/// Apply one object; returns kubectl's line for it.
pub fn apply_object(api: &mut ApiServer, creds: &Credentials, obj: Value, file: &str) -> String {
    apply_with(api, creds, obj, file, false).0
}

/// The object as applying it would leave it (a server dry run), or kubectl's error.
pub fn apply_object_dry(api: &mut ApiServer, creds: &Credentials, obj: Value, file: &str) -> Result<Value, String> {
    match apply_with(api, creds, obj, file, true) {
        (_, Some(o)) => Ok((*o).clone()),
        (msg, None) => Err(msg),
    }
}

/// Apply one object, for real or as a dry run: kubectl's line, and the object as stored
/// (or as it would be).
fn apply_with(api: &mut ApiServer, creds: &Credentials, mut obj: Value, file: &str, dry: bool) -> (String, Option<crate::foundation::api::Object>) {
    let av = get_str(&obj, &["apiVersion"]).unwrap_or("").to_string();
    let kind = get_str(&obj, &["kind"]).unwrap_or("").to_string();
    if av.is_empty() || kind.is_empty() {
        let mut missing = Vec::new();
        if av.is_empty() {
            missing.push("apiVersion not set");
        }
        if kind.is_empty() {
            missing.push("kind not set");
        }
        return (
            format!("error: error validating {file:?}: error validating data: [{}]; if you choose to ignore these errors, turn validation off with --validate=false", missing.join(", ")),
            None,
        );
    }
    let name = api::name(&obj).to_string();
    let Some(r) = resource_for_kind(&av, &kind) else {
        let ns = api::namespace(&obj);
        return (format!("error: resource mapping not found for name: {name:?} namespace: {ns:?} from {file:?}: no matches for kind {kind:?} in version {av:?}\nensure CRDs are installed first"), None);
    };
    let res = &RESOURCES[r];
    let ns = if res.namespaced {
        let n = api::namespace(&obj);
        if n.is_empty() {
            "default".to_string()
        } else {
            n.to_string()
        }
    } else {
        String::new()
    };
    if res.namespaced {
        api::set(&mut obj, &["metadata", "namespace"], json!(ns));
    }
    if name.is_empty() {
        return (format!("error: error when retrieving current configuration of:\nResource: \"{}, Resource={}\", GroupVersionKind: \"{}, Kind={}\"\nName: \"\", Namespace: {ns:?}\nfrom server for: {file:?}: resource name may not be empty", res.api_version(), res.plural, res.api_version(), res.kind), None);
    }
    // The annotation holds the manifest as applied, without the annotation itself (an
    // empty `annotations` stays, as kubectl's serialisation keeps it). `kubectl diff`
    // (a dry run) leaves the annotation out of what it sends.
    let annotate = !dry;
    api::entry(&mut obj, &["metadata", "annotations"]).remove(LAST_APPLIED);
    let last_applied = format!("{}\n", serde_json::to_string(&obj).unwrap_or_default());
    let prefix = format!("{}/{}", kind_prefix(r), name);
    let live = api.handle(Request::new(Verb::Get, r, &ns, &name, creds.clone()));
    match live {
        Err(s) if s.code == 404 && s.reason == "NotFound" => {
            let mut body = obj.clone();
            if annotate {
                api::entry(&mut body, &["metadata", "annotations"]).insert(LAST_APPLIED, json!(last_applied));
            }
            let mut req = Request::create(r, &ns, body, creds.clone());
            req.dry_run = dry;
            match api.handle(req) {
                Ok(o) => (with_warnings(api, format!("{prefix} created")), Some(o)),
                Err(s) => (s.kubectl_message(Some(file), "creating"), None),
            }
        }
        Err(s) => (retrieval_error(&s, r, &name, &ns, file), None),
        Ok(live) => {
            let last: Option<Value> = api::annotation(&live, LAST_APPLIED).and_then(|s| serde_json::from_str(s).ok());
            let mut patch = three_way(last.as_ref(), &obj, &live);
            if let Some(m) = patch.as_object_mut() {
                m.remove("status");
            }
            let annotated = api::annotation(&live, LAST_APPLIED) == Some(last_applied.as_str());
            if patch.as_object().is_some_and(|m| m.is_empty()) && annotated {
                return (format!("{prefix} unchanged"), Some(live));
            }
            if annotate {
                api::entry(&mut patch, &["metadata", "annotations"]).insert(LAST_APPLIED, json!(last_applied));
            }
            let before = api::resource_version(&live).to_string();
            let mut req = Request::patch(r, &ns, &name, PatchType::Strategic, patch.clone(), creds.clone());
            req.dry_run = dry;
            match api.handle(req) {
                Ok(after) if api::resource_version(&after) == before && after == live => (with_warnings(api, format!("{prefix} unchanged")), Some(after)),
                Ok(after) => (with_warnings(api, format!("{prefix} configured")), Some(after)),
                Err(s) => {
                    let gv = res.api_version();
                    let reason = if s.reason.is_empty() { String::new() } else { format!(" ({})", s.reason) };
                    let msg = format!(
                        "Error from server{reason}: error when applying patch:\n{}\nto:\nResource: \"{gv}, Resource={}\", GroupVersionKind: \"{gv}, Kind={}\"\nName: {name:?}, Namespace: {ns:?}\nfor: {file:?}: error when patching {file:?}: {}",
                        serde_json::to_string(&patch).unwrap_or_default(),
                        res.plural,
                        res.kind,
                        s.message
                    );
                    (msg, None)
                }
            }
        }
    }
}

/// Parsed common flags.
#[derive(Default, Clone)]
struct Flags {
    namespace: Option<String>,
    selector: Option<String>,
    all_namespaces: bool,
    values: Vec<(String, String)>,
    positional: Vec<String>,
}

/// Long flags whose value may follow as a separate word (`--as ajay`).
const VALUE_FLAGS: &[&str] = &["--as", "--as-group", "--replicas", "--cascade", "--sort-by", "--field-selector", "--grace-period", "--timeout"];

fn parse_flags(args: &[String]) -> Result<Flags, String> {
    let mut f = Flags::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let mut take = |name: &str| -> Result<Option<String>, String> {
            if let Some(v) = a.strip_prefix(&format!("{name}=")) {
                return Ok(Some(v.to_string()));
            }
            if a == name {
                i += 1;
                return args.get(i).cloned().map(Some).ok_or_else(|| format!("flag needs an argument: {name}"));
            }
            Ok(None)
        };
        if let Some(v) = take("-n")?.or(take("--namespace")?) {
            f.namespace = Some(v);
        } else if let Some(v) = take("-l")?.or(take("--selector")?) {
            f.selector = Some(v);
        } else if let Some(v) = take("-f")?.or(take("--filename")?) {
            f.values.push(("--filename".into(), v));
        } else if let Some(v) = take("-o")?.or(take("--output")?) {
            f.values.push(("--output".into(), v));
        } else if a == "-A" || a == "--all-namespaces" {
            f.all_namespaces = true;
        } else if a.starts_with("--") {
            let (k, v) = match a.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                // Flags that take a value may have it as the next word.
                None if VALUE_FLAGS.contains(&a.as_str()) => {
                    i += 1;
                    (a.clone(), args.get(i).cloned().ok_or_else(|| format!("flag needs an argument: {a}"))?)
                }
                None => (a.clone(), "true".to_string()),
            };
            f.values.push((k, v));
        } else {
            f.positional.push(a.clone());
        }
        i += 1;
    }
    Ok(f)
}

impl Flags {
    fn get(&self, k: &str) -> Option<&str> {
        self.values.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }
}

/// Resolve `TYPE NAME...`, `TYPE/NAME` or `TYPE -l SELECTOR` to (resource, names).
fn targets(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Result<Vec<(ResourceId, String)>, String> {
    let mut out = Vec::new();
    let first = f.positional.first().ok_or("error: you must specify the type of resource to get")?;
    if first.contains('/') {
        for p in &f.positional {
            let (t, n) = p.split_once('/').ok_or_else(|| "error: there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'kubectl get resource/<resource_name>' instead of 'kubectl get resource resource/<resource_name>'".to_string())?;
            let r = resource_for_name(t).ok_or_else(|| format!("error: the server doesn't have a resource type {t:?}"))?;
            out.push((r, n.to_string()));
        }
        return Ok(out);
    }
    let r = resource_for_name(first).ok_or_else(|| format!("error: the server doesn't have a resource type {first:?}"))?;
    if let Some(sel) = &f.selector {
        let selector = crate::foundation::labels::Selector::parse(sel).map_err(|e| format!("error: {e}"))?;
        let list = api
            .handle(Request::new(Verb::List, r, if RESOURCES[r].namespaced { ns } else { "" }, "", creds.clone()))
            .map_err(|s| s.kubectl_message(None, ""))?;
        for item in api::get_array(&list, &["items"]) {
            if selector.matches(api::labels(item)) {
                out.push((r, api::name(item).to_string()));
            }
        }
        if out.is_empty() {
            return Err(if RESOURCES[r].namespaced { format!("No resources found in {ns} namespace.") } else { "No resources found".to_string() });
        }
        return Ok(out);
    }
    for n in &f.positional[1..] {
        out.push((r, n.clone()));
    }
    if out.is_empty() {
        return Err("error: resource(s) were provided, but no name was specified".to_string());
    }
    Ok(out)
}

/// The subcommand of a command line (`logs` in `kubectl logs web`).
pub fn verb_of(line: &str) -> Option<&str> {
    let mut words = line.split_whitespace();
    let first = words.next()?;
    if first == "kubectl" {
        words.next()
    } else {
        Some(first)
    }
}

/// The order `kubectl logs TYPE/NAME` picks a pod in (`podutils.ByLogging`): scheduled,
/// running, ready (longest first), most restarts, oldest.
fn logging_rank(p: &Value) -> (bool, u8, bool, String, i64, String) {
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
    let args: Vec<String> = args
        .into_iter()
        .skip_while(|a| a == "kubectl")
        .skip(1)
        .map(|a| {
            if a == "-c" {
                "--container".into()
            } else if a == "-p" {
                "--previous=true".into()
            } else {
                a
            }
        })
        .collect();
    let f = match parse_flags(&args) {
        Ok(f) => f,
        Err(e) => return vec![format!("error: {e}")],
    };
    let ns = f.namespace.clone().unwrap_or_else(|| "default".into());
    let mut out = Vec::new();
    let Some(target) = f.positional.first() else {
        return vec!["error: expected POD or TYPE/NAME is a required argument for the logs command".into()];
    };
    let pod = match target.split_once('/') {
        None | Some(("pod" | "pods" | "po", _)) => {
            let name = target.split_once('/').map(|(_, n)| n).unwrap_or(target);
            match fetch(api, creds, api::rid::POD, &ns, name) {
                Ok(p) => p,
                Err(e) => return vec![e],
            }
        }
        Some((t, name)) => {
            let Some(r) = resource_for_name(t) else { return vec![format!("error: the server doesn't have a resource type {t:?}")] };
            let owner = match fetch(api, creds, r, &ns, name) {
                Ok(o) => o,
                Err(e) => return vec![e],
            };
            let selector = api::get(&owner, &["spec", "selector"]).cloned();
            let pods = match api.handle(Request::new(Verb::List, api::rid::POD, &ns, "", creds.clone())) {
                Ok(l) => l,
                Err(s) => return vec![s.kubectl_message(None, "")],
            };
            let mut matching: Vec<&Value> =
                api::get_array(&pods, &["items"]).iter().filter(|p| crate::foundation::labels::selector_matches(selector.as_ref(), api::labels(p))).collect();
            matching.sort_by_key(|p| logging_rank(p));
            let Some(first) = matching.first() else { return vec![format!("error: timed out waiting for the condition")] };
            if matching.len() > 1 {
                out.push(format!("Found {} pods, using pod/{}", matching.len(), api::name(first)));
            }
            crate::foundation::api::Object::new((*first).clone())
        }
    };
    let pod_name = api::name(&pod).to_string();
    let names: Vec<&str> = api::get_array(&pod, &["spec", "containers"]).iter().filter_map(|c| get_str(c, &["name"])).collect();
    let container = match f.get("--container") {
        Some(c) => c.to_string(),
        None => {
            let chosen = api::annotation(&pod, "kubectl.kubernetes.io/default-container")
                .filter(|d| names.contains(d))
                .or(names.first().copied())
                .unwrap_or("")
                .to_string();
            if names.len() > 1 {
                out.push(format!("Defaulted container {chosen:?} out of: {}", names.join(", ")));
            }
            chosen
        }
    };
    let previous = f.get("--previous") == Some("true");
    match api.pod_logs(creds.clone(), &ns, &pod_name, Some(&container), previous, kubelet) {
        Ok(text) => {
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            if let Some(n) = f.get("--tail").and_then(|t| t.parse::<i64>().ok()).filter(|n| *n >= 0) {
                lines = lines.split_off(lines.len().saturating_sub(n as usize));
            }
            out.extend(lines);
        }
        Err(s) => out.push(s.kubectl_message(None, "")),
    }
    out
}

/// Split `apply -f - <<EOF` and the lines up to `EOF` into the command and the
/// here-document's text (kubectl's stdin).
pub fn heredoc(line: &str) -> (String, Option<String>) {
    let Some((first, rest)) = line.split_once('\n') else { return (line.to_string(), None) };
    let Some(pos) = first.find("<<") else { return (line.to_string(), None) };
    let marker = first[pos + 2..].trim().trim_start_matches('-').trim_matches(['\'', '"']);
    let mut body = String::new();
    for l in rest.lines() {
        if l.trim() == marker {
            break;
        }
        body.push_str(l);
        body.push('\n');
    }
    (first[..pos].trim_end().to_string(), Some(body))
}

/// Whether a command line opens a here-document (`<<EOF`) that no line has closed yet.
pub fn heredoc_open(line: &str) -> bool {
    let first = line.lines().next().unwrap_or("");
    let Some(pos) = first.find("<<") else { return false };
    let marker = first[pos + 2..].trim().trim_start_matches('-').trim_matches(['\'', '"']);
    !marker.is_empty() && !line.lines().skip(1).any(|l| l.trim() == marker)
}

/// `-f FILE` for the commands that read manifests: only `-f -` with a here-document (or
/// the page's editor, which the sandbox passes the same way) can be read here.
fn manifest_input(f: &Flags, stdin: Option<&str>) -> Result<(String, &'static str), String> {
    match (f.get("--filename"), stdin) {
        (Some("-"), Some(text)) => Ok((text.to_string(), "STDIN")),
        (Some("-"), None) => Err("error: no objects passed to apply".into()),
        (Some(path), _) => Err(format!("error: the path {path:?} does not exist")),
        (None, _) => Err("error: must specify one of -f and -k".into()),
    }
}

/// Run a kubectl command line (without the leading `kubectl`); a line may carry a
/// here-document for `-f -`.
pub fn run(api: &mut ApiServer, creds: &Credentials, line: &str) -> Vec<String> {
    let (line, stdin) = heredoc(line);
    let line = line.as_str();
    let args = match split_args(line) {
        Ok(a) => a,
        Err(e) => return vec![format!("error: {e}")],
    };
    let args: Vec<String> = if args.first().map(String::as_str) == Some("kubectl") { args[1..].to_vec() } else { args };
    let Some(verb) = args.first().cloned() else { return vec!["error: no command given".into()] };
    let f = match parse_flags(&args[1..]) {
        Ok(f) => f,
        Err(e) => return vec![format!("error: {e}")],
    };
    let ns = f.namespace.clone().unwrap_or_else(|| "default".into());
    match verb.as_str() {
        "apply" => match manifest_input(&f, stdin.as_deref()) {
            Ok((text, file)) => apply_text(api, creds, &text, file),
            Err(e) => vec![e],
        },
        "diff" => match manifest_input(&f, stdin.as_deref()) {
            Ok((text, file)) => crate::kubectl::diff::diff_text(api, creds, &text, file),
            Err(e) => vec![e],
        },
        "create" if f.get("--filename").is_some() => match manifest_input(&f, stdin.as_deref()) {
            Ok((text, file)) => create_from(api, creds, &text, file),
            Err(e) => vec![e],
        },
        "get" => get(api, creds, &f, &ns),
        "auth" if f.positional.first().map(String::as_str) == Some("can-i") => can_i(api, creds, &f, &ns),
        "rollout" if f.positional.first().map(String::as_str) == Some("status") => rollout_status(api, creds, &f, &ns),
        "rollout" if f.positional.first().map(String::as_str) == Some("restart") => rollout_restart(api, creds, &f, &ns),
        "rollout" if f.positional.first().map(String::as_str) == Some("history") => rollout_history(api, creds, &f, &ns),
        "rollout" if f.positional.first().map(String::as_str) == Some("undo") => rollout_undo(api, creds, &f, &ns),
        "rollout" if f.positional.first().map(String::as_str) == Some("pause") => rollout_pause(api, creds, &f, &ns, true),
        "rollout" if f.positional.first().map(String::as_str) == Some("resume") => rollout_pause(api, creds, &f, &ns, false),
        "set" if f.positional.first().map(String::as_str) == Some("image") => set_image(api, creds, &f, &ns),
        "api-resources" => api_resources(),
        "explain" => {
            let Some(target) = f.positional.first() else {
                return vec![
                    "error: You must specify the type of resource to explain. Use \"kubectl api-resources\" for a complete list of supported resources.".into(),
                ];
            };
            let mut parts = target.split('.');
            let ty = parts.next().unwrap_or("");
            let Some(r) = resource_for_name(ty) else { return vec![format!("error: the server doesn't have a resource type {ty:?}")] };
            let path: Vec<&str> = parts.collect();
            match crate::kubectl::explain::explain(&RESOURCES[r], &path, f.get("--recursive") == Some("true")) {
                Ok(text) => text.strip_suffix('\n').unwrap_or(&text).split('\n').map(str::to_string).collect(),
                Err(e) => vec![e],
            }
        }
        "describe" => describe(api, creds, &f, &ns),
        "taint" => taint(api, creds, &f),
        "create" => create(api, creds, &f, &ns),
        "drain" => {
            let mut out = run(api, creds, &format!("cordon {}", f.positional.join(" ")));
            if out.iter().any(|l| l.starts_with("Error") || l.starts_with("error")) {
                return out;
            }
            out.extend(drain(api, creds, &f));
            out
        }
        "config" if f.positional.first().map(String::as_str) == Some("current-context") => vec!["kubeloop".into()],
        "scale" => {
            let Some(replicas) = f.get("--replicas").and_then(|v| v.parse::<i64>().ok()) else {
                return vec!["error: The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0".into()];
            };
            match targets(api, creds, &f, &ns) {
                Err(e) => vec![e],
                Ok(ts) => ts
                    .into_iter()
                    .map(|(r, name)| {
                        match api
                            .handle(Request::patch(r, &ns, &name, PatchType::Merge, json!({"spec": {"replicas": replicas}}), creds.clone()).with_sub("scale"))
                        {
                            Ok(_) => format!("{}/{name} scaled", kind_prefix(r)),
                            Err(s) => s.kubectl_message(None, ""),
                        }
                    })
                    .collect(),
            }
        }
        "delete" => {
            let cascade = f.get("--cascade").unwrap_or("background");
            let mut lines = Vec::new();
            let propagation = match cascade {
                "background" | "true" => "Background",
                "foreground" => "Foreground",
                "orphan" => "Orphan",
                "false" => {
                    lines.push("warning: --cascade=false is deprecated (boolean value) and can be replaced with --cascade=orphan.".to_string());
                    "Orphan"
                }
                other => return vec![format!("error: invalid cascade value ({other}). Must be \"background\", \"foreground\", or \"orphan\"")],
            };
            let grace = f.get("--grace-period").and_then(|g| g.parse::<i64>().ok());
            let force = f.get("--force") == Some("true");
            if force && grace == Some(0) {
                lines.push("Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely.".into());
            }
            match targets(api, creds, &f, &ns) {
                Err(e) => lines.push(e),
                Ok(ts) => {
                    for (r, name) in ts {
                        let mut req = Request::delete(r, &ns, &name, creds.clone());
                        req.propagation = Some(propagation.into());
                        req.grace_period = grace;
                        match api.handle(req) {
                            Ok(_) => {
                                let what = if force && grace == Some(0) { "force deleted" } else { "deleted" };
                                let base = format!("{} {name:?} {what}", kind_prefix(r));
                                lines.push(if RESOURCES[r].namespaced { format!("{base} from {ns} namespace") } else { base });
                            }
                            Err(s) => lines.push(s.kubectl_message(None, "")),
                        }
                    }
                }
            }
            lines
        }
        "cordon" | "uncordon" => {
            let want = verb == "cordon";
            let mut lines = Vec::new();
            for n in &f.positional {
                let r = api::rid::NODE;
                let node = match api.handle(Request::new(Verb::Get, r, "", n, creds.clone())) {
                    Ok(o) => o,
                    Err(s) => {
                        lines.push(s.kubectl_message(None, ""));
                        continue;
                    }
                };
                if api::get_bool(&node, &["spec", "unschedulable"]).unwrap_or(false) == want {
                    lines.push(format!("node/{n} already {verb}ed"));
                    continue;
                }
                let patch = if want { json!({"spec": {"unschedulable": true}}) } else { json!({"spec": {"unschedulable": null}}) };
                match api.handle(Request::patch(r, "", n, PatchType::Strategic, patch, creds.clone())) {
                    Ok(_) => lines.push(format!("node/{n} {verb}ed")),
                    Err(s) => lines.push(s.kubectl_message(None, "")),
                }
            }
            lines
        }
        "label" | "annotate" => {
            let field = if verb == "label" { "labels" } else { "annotations" };
            let overwrite = f.get("--overwrite") == Some("true");
            let (pairs, rest): (Vec<String>, Vec<String>) =
                f.positional.iter().cloned().partition(|p| p.contains('=') || (p.ends_with('-') && !p.contains('/') && f.positional.first() != Some(p)));
            let f2 = Flags {
                positional: rest,
                namespace: f.namespace.clone(),
                selector: f.selector.clone(),
                all_namespaces: f.all_namespaces,
                values: f.values.clone(),
            };
            if pairs.is_empty() {
                return vec![format!("error: at least one {} update is required", if verb == "label" { "label" } else { "annotation" })];
            }
            match targets(api, creds, &f2, &ns) {
                Err(e) => vec![e],
                Ok(ts) => {
                    let mut lines = Vec::new();
                    for (r, name) in ts {
                        let target_ns = if RESOURCES[r].namespaced { ns.as_str() } else { "" };
                        let live = match api.handle(Request::new(Verb::Get, r, target_ns, &name, creds.clone())) {
                            Ok(o) => o,
                            Err(s) => {
                                lines.push(s.kubectl_message(None, ""));
                                continue;
                            }
                        };
                        let mut m = Map::new();
                        let mut err = None;
                        for p in &pairs {
                            if let Some((k, v)) = p.split_once('=') {
                                if let Some(cur) = api::get(&live, &["metadata", field, k]).and_then(Value::as_str) {
                                    if cur != v && !overwrite {
                                        err = Some(format!("error: '{k}' already has a value ({cur}), and --overwrite is false"));
                                    }
                                }
                                m.insert(k.to_string(), json!(v));
                            } else if let Some(k) = p.strip_suffix('-') {
                                m.insert(k.to_string(), Value::Null);
                            }
                        }
                        if let Some(e) = err {
                            lines.push(e);
                            continue;
                        }
                        let before = api::resource_version(&live).to_string();
                        match api.handle(Request::patch(r, target_ns, &name, PatchType::Merge, json!({"metadata": {field: m}}), creds.clone())) {
                            Ok(after) if api::resource_version(&after) == before => {
                                lines.push(format!("{}/{name} not {}", kind_prefix(r), if verb == "label" { "labeled" } else { "annotated" }))
                            }
                            Ok(_) => lines.push(format!("{}/{name} {}", kind_prefix(r), if verb == "label" { "labeled" } else { "annotated" })),
                            Err(s) => lines.push(s.kubectl_message(None, "")),
                        }
                    }
                    lines
                }
            }
        }
        other => {
            vec![format!(
                "error: kubeloop does not support \"kubectl {other}\" yet (it supports get, describe, create, delete, scale, logs, explain, rollout status|history|undo|restart|pause|resume, set image, label, annotate, taint, cordon, uncordon, drain, auth can-i, api-resources and config current-context)"
            )]
        }
    }
}

/// `kubectl get TYPE [NAME...] [-n NS | -A] [-l SELECTOR] [-o wide|yaml|json|name] [--show-labels]`.
fn get(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let Some(ty) = f.positional.first() else {
        return vec!["error: You must specify the type of resource to get. Use \"kubectl api-resources\" for a complete list of supported resources.".into()];
    };
    let Some(r) = resource_for_name(ty) else {
        return vec![format!("error: the server doesn't have a resource type \"{ty}\"")];
    };
    let res = &RESOURCES[r];
    let output = f.get("--output").unwrap_or("");
    let template = output.strip_prefix("jsonpath=").map(|t| t.trim_matches('\''));
    if template.is_none() && !matches!(output, "" | "wide" | "yaml" | "json" | "name") {
        return vec![format!(
            "error: unable to match a printer suitable for the output format \"{output}\", allowed formats are: json,jsonpath,name,wide,yaml (kubeloop's subset)"
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
        objects.sort_by(|a, b| {
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
            if f.all_namespaces && res.namespaced {
                header.insert(0, "NAMESPACE".into());
                for (row, o) in rows.iter_mut().zip(&objects) {
                    row.insert(0, api::namespace(o).to_string());
                }
            }
            if f.get("--show-labels").is_some() {
                header.push("LABELS".into());
                for (row, o) in rows.iter_mut().zip(&objects) {
                    let labels: Vec<String> = api::labels(o).into_iter().flatten().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))).collect();
                    row.push(if labels.is_empty() { "<none>".into() } else { labels.join(",") });
                }
            }
            rows.insert(0, header);
            out.extend(crate::kubectl::printers::table(&rows).lines().map(str::to_string));
        }
    }
    out.extend(errors);
    out
}

/// JSON as kubectl prints it: four-space indentation.
fn json_indent4(v: &Value) -> String {
    let mut buf = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, serde_json::ser::PrettyFormatter::with_indent(b"    "));
    let _ = serde::Serialize::serialize(v, &mut ser);
    String::from_utf8(buf).unwrap_or_default()
}

/// `kubectl auth can-i VERB TYPE[/NAME] [NAME] [-n NS | -A] [--as USER]`: a
/// SelfSubjectAccessReview answered by the authorizer, printed as `yes` or `no`.
fn can_i(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let args = &f.positional[1..];
    let (Some(verb), Some(target)) = (args.first(), args.get(1)) else {
        return vec!["error: you must specify two arguments: verb resource or verb resource/resourceName.".into()];
    };
    let me = match creds {
        Credentials::User(u) => u.clone(),
        Credentials::Token(t) => match api.tokens.get(t) {
            Some(u) => u.clone(),
            None => return vec![Status::unauthorized().kubectl_message(None, "")],
        },
    };
    let (ty, mut name) = match target.split_once('/') {
        Some((t, n)) => (t.to_string(), n.to_string()),
        None => (target.clone(), String::new()),
    };
    if let Some(n) = args.get(2) {
        name = n.clone();
    }
    let mut out = Vec::new();
    let (group, resource, subresource, namespaced) = match resource_for_name(&ty) {
        Some(r) => (RESOURCES[r].group, RESOURCES[r].plural.to_string(), String::new(), RESOURCES[r].namespaced),
        None => {
            out.push(format!("Warning: the server doesn't have a resource type '{ty}'"));
            ("", ty.clone(), String::new(), true)
        }
    };
    let ns = if f.all_namespaces || !namespaced { "" } else { ns };
    let user = match f.get("--as") {
        None => me,
        Some(other) => {
            let imp = crate::apiserver::rbac::Attributes { verb: "impersonate", group: "", resource: "users", subresource: "", namespace: "", name: other };
            if !matches!(crate::apiserver::rbac::authorize(&api.store, &me, &imp), crate::apiserver::rbac::Decision::Allow) {
                let cause = imp.forbidden_cause(&me.name);
                return vec![format!("Error from server (Forbidden): users \"{other}\" is forbidden: {cause}")];
            }
            crate::apiserver::rbac::UserInfo::new(other, &["system:authenticated"])
        }
    };
    let a = crate::apiserver::rbac::Attributes { verb, group, resource: &resource, subresource: &subresource, namespace: ns, name: &name };
    out.push(if matches!(crate::apiserver::rbac::authorize(&api.store, &user, &a), crate::apiserver::rbac::Decision::Allow) {
        "yes".into()
    } else {
        "no".into()
    });
    out
}

/// The objects named after a subcommand (`rollout status deployment/web`).
fn sub_targets(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Result<Vec<(ResourceId, String)>, String> {
    targets(api, creds, &Flags { positional: f.positional[1..].to_vec(), ..f.clone() }, ns)
}

/// GET one object, or kubectl's line for why not.
fn fetch(api: &mut ApiServer, creds: &Credentials, r: ResourceId, ns: &str, name: &str) -> Result<crate::foundation::api::Object, String> {
    api.handle(Request::new(Verb::Get, r, ns, name, creds.clone())).map_err(|s| s.kubectl_message(None, ""))
}

/// `kubectl rollout status deployment/NAME`, as `--watch=false` prints it (the page does not
/// block; run it again to see progress). Wording from `polymorphichelpers/rollout_status.go`.
fn rollout_status(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let ts = match sub_targets(api, creds, f, ns) {
        Ok(ts) => ts,
        Err(e) => return vec![e],
    };
    let mut out = Vec::new();
    for (r, name) in ts {
        if RESOURCES[r].kind != "Deployment" {
            out.push(format!("error: no status viewer has been implemented for {}", RESOURCES[r].kind));
            continue;
        }
        let d = match fetch(api, creds, r, ns, &name) {
            Ok(o) => o,
            Err(e) => {
                out.push(e);
                continue;
            }
        };
        let int = |p: &[&str]| api::get_i64(&d, p).unwrap_or(0);
        if int(&["metadata", "generation"]) > int(&["status", "observedGeneration"]) {
            out.push("Waiting for deployment spec update to be observed...".into());
            continue;
        }
        let progressing = api::get_array(&d, &["status", "conditions"]).iter().find(|c| get_str(c, &["type"]) == Some("Progressing")).cloned();
        if progressing.as_ref().and_then(|c| get_str(c, &["reason"])) == Some("ProgressDeadlineExceeded") {
            out.push(format!("error: deployment {name:?} exceeded its progress deadline"));
            continue;
        }
        let (want, updated, replicas, available) =
            (int(&["spec", "replicas"]), int(&["status", "updatedReplicas"]), int(&["status", "replicas"]), int(&["status", "availableReplicas"]));
        out.push(if updated < want {
            format!("Waiting for deployment {name:?} rollout to finish: {updated} out of {want} new replicas have been updated...")
        } else if replicas > updated {
            format!("Waiting for deployment {name:?} rollout to finish: {} old replicas are pending termination...", replicas - updated)
        } else if available < updated {
            format!("Waiting for deployment {name:?} rollout to finish: {available} of {updated} updated replicas are available...")
        } else {
            format!("deployment {name:?} successfully rolled out")
        });
    }
    out
}

/// `kubectl set image TYPE/NAME CONTAINER=IMAGE...`: a strategic merge patch of the pod
/// template's containers.
fn set_image(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let (pairs, objs): (Vec<&String>, Vec<&String>) = f.positional[1..].iter().partition(|a| a.contains('='));
    if pairs.is_empty() || objs.is_empty() {
        return vec!["error: at least one image update is required".into()];
    }
    let rest = Flags { positional: objs.into_iter().cloned().collect(), ..f.clone() };
    let ts = match targets(api, creds, &rest, ns) {
        Ok(ts) => ts,
        Err(e) => return vec![e],
    };
    let mut out = Vec::new();
    for (r, name) in ts {
        let live = match fetch(api, creds, r, ns, &name) {
            Ok(o) => o,
            Err(e) => {
                out.push(e);
                continue;
            }
        };
        let names: Vec<&str> = api::get_array(&live, &["spec", "template", "spec", "containers"]).iter().filter_map(|c| get_str(c, &["name"])).collect();
        let mut containers = Vec::new();
        for p in &pairs {
            let (c, image) = p.split_once('=').unwrap_or((p.as_str(), ""));
            if c == "*" {
                containers.extend(names.iter().map(|n| json!({"name": n, "image": image})));
            } else if names.contains(&c) {
                containers.push(json!({"name": c, "image": image}));
            } else {
                out.push(format!("error: unable to find container named {c:?}"));
            }
        }
        if containers.is_empty() {
            continue;
        }
        let patch = json!({"spec": {"template": {"spec": {"containers": containers}}}});
        out.push(match api.handle(Request::patch(r, ns, &name, PatchType::Strategic, patch, creds.clone())) {
            Ok(_) => format!("{}/{name} image updated", kind_prefix(r)),
            Err(s) => s.kubectl_message(None, ""),
        });
    }
    out
}

/// `kubectl api-resources`: the kinds kubeloop serves.
fn api_resources() -> Vec<String> {
    let mut rows: Vec<&crate::foundation::api::ResourceInfo> = RESOURCES.iter().collect();
    rows.sort_by_key(|r| (r.group, r.plural));
    let mut table = vec![vec!["NAME".to_string(), "SHORTNAMES".into(), "APIVERSION".into(), "NAMESPACED".into(), "KIND".into()]];
    table.extend(rows.into_iter().map(|r| vec![r.plural.to_string(), r.short_names.join(","), r.api_version(), r.namespaced.to_string(), r.kind.to_string()]));
    crate::kubectl::printers::table(&table).lines().map(str::to_string).collect()
}

/// `kubectl describe (pod|deployment) NAME...` (or `TYPE/NAME`, or `-l`).
fn describe(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
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
    let rest: Vec<String> = words.into_iter().filter(|w| w != "-w" && w != "--watch" && w != "--watch=true").collect();
    let Ok(f) = parse_flags(&rest[1..]) else { return (run(api, creds, line), None) };
    let since = api.store.revision();
    let out = get(api, creds, &f, f.namespace.as_deref().unwrap_or("default"));
    let Some(r) = f.positional.first().and_then(|t| resource_for_name(t)) else { return (out, None) };
    if out.iter().any(|l| l.starts_with("error") || l.starts_with("Error")) || !matches!(f.get("--output"), None | Some("wide")) {
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
fn header_widths(h: &str) -> Vec<usize> {
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

/// The commands the terminal knows, for completion.
pub const COMMANDS: &[&str] = &[
    "annotate",
    "api-resources",
    "apply",
    "auth",
    "config",
    "cordon",
    "create",
    "delete",
    "describe",
    "diff",
    "drain",
    "explain",
    "get",
    "label",
    "logs",
    "rollout",
    "scale",
    "set",
    "taint",
    "uncordon",
];

/// The second word of commands that have subcommands.
fn subcommands(command: &str) -> &'static [&'static str] {
    match command {
        "rollout" => &["history", "pause", "restart", "resume", "status", "undo"],
        "set" => &["image"],
        "auth" => &["can-i"],
        "config" => &["current-context"],
        "create" => &[
            "clusterrole",
            "clusterrolebinding",
            "configmap",
            "deployment",
            "job",
            "namespace",
            "poddisruptionbudget",
            "quota",
            "role",
            "rolebinding",
            "secret",
            "service",
            "serviceaccount",
        ],
        _ => &[],
    }
}

/// Completions for the last word of a command line: commands first, then resource types,
/// then names of objects of that type in the namespace (`-n`) or `default`.
pub fn complete(api: &ApiServer, line: &str) -> Vec<String> {
    let ends_with_space = line.ends_with(' ');
    let mut words: Vec<&str> = line.split_whitespace().collect();
    if words.first() == Some(&"kubectl") {
        words.remove(0);
    }
    let partial = if ends_with_space { "" } else { words.pop().unwrap_or("") };
    let positional: Vec<&str> = words.iter().copied().filter(|w| !w.starts_with('-')).collect();
    let ns = words.iter().position(|w| *w == "-n" || *w == "--namespace").and_then(|i| words.get(i + 1)).copied().unwrap_or("default");
    // Subcommands that take the type as their second word.
    let type_at = match positional.first() {
        Some(&"rollout") | Some(&"set") | Some(&"auth") => 2,
        _ => 1,
    };
    let mut out: Vec<String> = if positional.is_empty() {
        COMMANDS.iter().map(|c| c.to_string()).collect()
    } else if positional.len() == 1 && !subcommands(positional[0]).is_empty() {
        subcommands(positional[0]).iter().map(|c| c.to_string()).collect()
    } else if positional.first() == Some(&"logs") {
        // `logs` takes pod names directly.
        api.store.list(crate::foundation::api::rid::POD, Some(ns)).map(|o| api::name(o).to_string()).collect()
    } else if positional.len() == type_at {
        RESOURCES.iter().flat_map(|r| std::iter::once(r.plural).chain(r.short_names.iter().copied())).map(str::to_string).collect()
    } else if let Some(r) = positional.get(type_at).and_then(|t| resource_for_name(t)) {
        let ns = if RESOURCES[r].namespaced { Some(ns) } else { None };
        api.store.list(r, ns).map(|o| api::name(o).to_string()).collect()
    } else {
        vec![]
    };
    out.retain(|c| c.starts_with(partial));
    out.sort();
    out.dedup();
    out
}

/// `kubectl rollout restart deployment/NAME`: stamps the pod template, so that the
/// Deployment controller rolls out new pods.
fn rollout_restart(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let ts = match sub_targets(api, creds, f, ns) {
        Ok(ts) => ts,
        Err(e) => return vec![e],
    };
    let stamp = crate::foundation::sim::rfc3339(api.now);
    ts.into_iter()
        .map(|(r, name)| {
            let patch = json!({"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": stamp}}}}});
            match api.handle(Request::patch(r, ns, &name, PatchType::Strategic, patch, creds.clone())) {
                Ok(_) => format!("{}/{name} restarted", kind_prefix(r)),
                Err(s) => s.kubectl_message(None, ""),
            }
        })
        .collect()
}

/// A Deployment's ReplicaSets by revision, oldest first.
fn revisions(api: &mut ApiServer, creds: &Credentials, ns: &str, d: &Value) -> Result<Vec<(i64, Value)>, String> {
    let list = api.handle(Request::new(Verb::List, crate::foundation::api::rid::REPLICASET, ns, "", creds.clone())).map_err(|s| s.kubectl_message(None, ""))?;
    let mut revs: Vec<(i64, Value)> = api::get_array(&list, &["items"])
        .iter()
        .filter(|x| api::controller_ref(x).and_then(|c| get_str(c, &["uid"])) == Some(api::uid(d)))
        .filter_map(|x| Some((api::annotation(x, "deployment.kubernetes.io/revision")?.parse().ok()?, x.clone())))
        .collect();
    revs.sort_by_key(|(n, _)| *n);
    Ok(revs)
}

/// Run `each` on every object a `rollout SUBCOMMAND TYPE/NAME...` names, as fetched; its
/// lines, or why an object could not be fetched, in order.
fn each_fetched(
    api: &mut ApiServer,
    creds: &Credentials,
    f: &Flags,
    ns: &str,
    mut each: impl FnMut(&mut ApiServer, ResourceId, &str, &Value) -> Vec<String>,
) -> Vec<String> {
    let ts = match sub_targets(api, creds, f, ns) {
        Ok(ts) => ts,
        Err(e) => return vec![e],
    };
    let mut out = Vec::new();
    for (r, name) in ts {
        match fetch(api, creds, r, ns, &name) {
            Ok(d) => out.extend(each(api, r, &name, &d)),
            Err(e) => out.push(e),
        }
    }
    out
}

/// `kubectl rollout undo deployment/NAME [--to-revision=N]`: the Deployment's template goes
/// back to that revision's (`polymorphichelpers/rollback.go`), as a JSON patch.
fn rollout_undo(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let to: i64 = f.get("--to-revision").and_then(|v| v.parse().ok()).unwrap_or(0);
    each_fetched(api, creds, f, ns, |api, r, name, d| {
        if api::get_bool(d, &["spec", "paused"]) == Some(true) {
            return vec!["error: you cannot rollback a paused deployment; resume it first with 'kubectl rollout resume' and try again".to_string()];
        }
        let revs = match revisions(api, creds, ns, d) {
            Ok(r) => r,
            Err(e) => return vec![e],
        };
        let target = if to == 0 {
            // The previous revision: the highest below the current one.
            match revs.len() {
                0 | 1 => return vec![format!("error: no rollout history found for deployment {name:?}")],
                n => revs[n - 2].clone(),
            }
        } else {
            match revs.iter().find(|(n, _)| *n == to) {
                Some(x) => x.clone(),
                None => return vec![format!("error: unable to find specified revision {to} in history")],
            }
        };
        let mut template = api::get(&target.1, &["spec", "template"]).cloned().unwrap_or(json!({}));
        if let Some(labels) = template.get_mut("metadata").and_then(|m| m.get_mut("labels")).and_then(Value::as_object_mut) {
            labels.remove("pod-template-hash");
        }
        if api::get(d, &["spec", "template"]) == Some(&template) {
            return vec![format!("{}/{name} skipped rollback (current template already matches revision {})", kind_prefix(r), target.0)];
        }
        let mut annotations = api::get(d, &["metadata", "annotations"]).cloned().unwrap_or(json!({}));
        for (k, v) in api::get(&target.1, &["metadata", "annotations"]).and_then(Value::as_object).into_iter().flatten() {
            if !matches!(
                k.as_str(),
                "deployment.kubernetes.io/revision"
                    | "deployment.kubernetes.io/revision-history"
                    | "deployment.kubernetes.io/desired-replicas"
                    | "deployment.kubernetes.io/max-replicas"
                    | "kubectl.kubernetes.io/last-applied-configuration"
            ) {
                annotations[k.as_str()] = v.clone();
            }
        }
        let patch =
            json!([{"op": "replace", "path": "/spec/template", "value": template}, {"op": "replace", "path": "/metadata/annotations", "value": annotations}]);
        match api.handle(Request::patch(r, ns, name, PatchType::Json, patch, creds.clone())) {
            Ok(_) => vec![format!("{}/{name} rolled back", kind_prefix(r))],
            Err(s) => vec![s.kubectl_message(None, "")],
        }
    })
}

/// `kubectl rollout pause|resume deployment/NAME`.
fn rollout_pause(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str, pause: bool) -> Vec<String> {
    each_fetched(api, creds, f, ns, |api, r, name, d| {
        if api::get_bool(d, &["spec", "paused"]).unwrap_or(false) == pause {
            return vec![format!("error: {} {name:?} is {}", RESOURCES[r].qualified_resource(), if pause { "already paused" } else { "not paused" })];
        }
        let patch = json!({"spec": {"paused": if pause { json!(true) } else { Value::Null }}});
        match api.handle(Request::patch(r, ns, name, PatchType::Strategic, patch, creds.clone())) {
            Ok(_) => vec![format!("{}/{name} {}", kind_prefix(r), if pause { "paused" } else { "resumed" })],
            Err(s) => vec![s.kubectl_message(None, "")],
        }
    })
}

/// `kubectl rollout history deployment/NAME`: the revisions of its ReplicaSets.
fn rollout_history(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    each_fetched(api, creds, f, ns, |api, r, name, d| {
        let revs = match revisions(api, creds, ns, d) {
            Ok(rs) => rs,
            Err(e) => return vec![e],
        };
        let mut out = vec![format!("{}/{name} ", kind_prefix(r))];
        // History is aligned with a padding of two, unlike `get`'s tables.
        let mut text = "REVISION\tCHANGE-CAUSE\n".to_string();
        for (n, x) in revs {
            text.push_str(&format!("{n}\t{}\n", api::annotation(&x, "kubernetes.io/change-cause").unwrap_or("<none>")));
        }
        out.extend(crate::kubectl::describe::tabwrite(&text).lines().map(str::to_string));
        out.push(String::new());
        out
    })
}

/// `kubectl taint nodes NAME KEY[=VALUE]:EFFECT[-]...`.
fn taint(api: &mut ApiServer, creds: &Credentials, f: &Flags) -> Vec<String> {
    let p = &f.positional;
    let (names, specs): (Vec<&String>, Vec<&String>) = match p.first().map(String::as_str) {
        Some(t) if resource_for_name(t) == Some(crate::foundation::api::rid::NODE) => p[1..].iter().partition(|a| !a.contains(':') && !a.ends_with('-')),
        Some(t) if t.starts_with("node/") || t.starts_with("nodes/") => p.iter().partition(|a| !a.contains(':') && !a.ends_with('-')),
        _ => return vec!["error: at least one taint update is required (kubectl taint nodes NAME KEY=VALUE:EFFECT)".into()],
    };
    if specs.is_empty() {
        return vec!["error: at least one taint update is required".into()];
    }
    let mut out = Vec::new();
    for n in names {
        let n = n.rsplit('/').next().unwrap_or(n);
        let node = match api.handle(Request::new(Verb::Get, crate::foundation::api::rid::NODE, "", n, creds.clone())) {
            Ok(o) => o,
            Err(s) => {
                out.push(s.kubectl_message(None, ""));
                continue;
            }
        };
        let mut taints: Vec<Value> = api::get_array(&node, &["spec", "taints"]).to_vec();
        let mut removed = false;
        let mut added = false;
        for spec in &specs {
            if let Some(rm) = spec.strip_suffix('-') {
                let (key, effect) = rm.split_once(':').map_or((rm, None), |(k, e)| (k, Some(e)));
                let before = taints.len();
                taints.retain(|t| !(get_str(t, &["key"]) == Some(key) && effect.is_none_or(|e| get_str(t, &["effect"]) == Some(e))));
                if taints.len() == before {
                    out.push(format!("error: taint {rm:?} not found"));
                    return out;
                }
                removed = true;
            } else {
                let Some((kv, effect)) = spec.split_once(':') else {
                    return vec![format!("error: invalid taint spec: {spec}")];
                };
                if !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
                    return vec![format!("error: invalid taint effect: {effect}, unsupported taint effect")];
                }
                let (key, value) = kv.split_once('=').map_or((kv, None), |(k, v)| (k, Some(v)));
                if taints.iter().any(|t| get_str(t, &["key"]) == Some(key) && get_str(t, &["effect"]) == Some(effect)) && f.get("--overwrite").is_none() {
                    return vec![format!("error: node {n} already has {key} taint(s) with same effect(s) and --overwrite is false")];
                }
                taints.retain(|t| !(get_str(t, &["key"]) == Some(key) && get_str(t, &["effect"]) == Some(effect)));
                let mut t = json!({"key": key, "effect": effect});
                if let Some(v) = value {
                    t["value"] = json!(v);
                }
                taints.push(t);
                added = true;
            }
        }
        let patch = json!({"spec": {"taints": taints}});
        out.push(match api.handle(Request::patch(crate::foundation::api::rid::NODE, "", n, PatchType::Merge, patch, creds.clone())) {
            Ok(_) if added && removed => format!("node/{n} modified"),
            Ok(_) if removed => format!("node/{n} untainted"),
            Ok(_) => format!("node/{n} tainted"),
            Err(s) => s.kubectl_message(None, ""),
        });
    }
    out
}

/// The eviction half of `kubectl drain NODE`: every pod on the node is deleted gracefully
/// (kubeloop has no PodDisruptionBudgets to consult); pods without a controller need
/// `--force`, as in kubectl.
fn drain(api: &mut ApiServer, creds: &Credentials, f: &Flags) -> Vec<String> {
    let mut out = Vec::new();
    for n in &f.positional {
        let list = match api.handle(Request::new(Verb::List, crate::foundation::api::rid::POD, "", "", creds.clone())) {
            Ok(l) => l,
            Err(s) => return vec![s.kubectl_message(None, "")],
        };
        let pods: Vec<Value> = api::get_array(&list, &["items"])
            .iter()
            .filter(|p| {
                get_str(p, &["spec", "nodeName"]) == Some(n.as_str()) && !matches!(get_str(p, &["status", "phase"]), Some("Succeeded") | Some("Failed"))
            })
            .cloned()
            .collect();
        let bare: Vec<String> = pods.iter().filter(|p| api::controller_ref(p).is_none()).map(|p| format!("{}/{}", api::namespace(p), api::name(p))).collect();
        if !bare.is_empty() && f.get("--force").is_none() {
            out.push(format!(
                "error: unable to drain node {n:?} due to error: cannot delete Pods that declare no controller (use --force to override): {}, continuing command...",
                bare.join(", ")
            ));
            out.push("There are pending nodes to be drained:".into());
            out.push(format!(" {n}"));
            out.push(format!("error: cannot delete Pods that declare no controller (use --force to override): {}", bare.join(", ")));
            continue;
        }
        if !bare.is_empty() {
            out.push(format!("Warning: deleting Pods that declare no controller: {}", bare.join(", ")));
        }
        for p in &pods {
            out.push(format!("evicting pod {}/{}", api::namespace(p), api::name(p)));
        }
        // Each pod goes through the eviction subresource, so disruption budgets hold; a
        // refused eviction is reported once (kubectl would retry every 5s until --timeout).
        let mut refused = Vec::new();
        for p in &pods {
            let (pns, pname) = (api::namespace(p), api::name(p));
            let body = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pname, "namespace": pns}});
            let mut req = Request::create(crate::foundation::api::rid::POD, pns, body, creds.clone()).with_sub("eviction");
            req.name = pname.to_string();
            match api.handle(req) {
                Ok(_) => out.push(format!("pod/{pname} evicted")),
                Err(s) if s.code == 429 => {
                    out.push(format!("error when evicting pods/{pname:?} -n {pns:?} (will retry after 5s): {}", s.message));
                    refused.push(format!("pods/{pname:?} -n {pns:?}"));
                }
                Err(s) => out.push(s.kubectl_message(None, "")),
            }
        }
        if refused.is_empty() {
            out.push(format!("node/{n} drained"));
        } else {
            out.push(format!(
                "error: unable to drain node {n:?}: {} still protected by a PodDisruptionBudget; run drain again once the budget allows",
                refused.join(", ")
            ));
        }
    }
    out
}

/// `kubectl create deployment|namespace|configmap NAME ...`, built as kubectl's generators
/// build them (`k8s.io/kubectl/pkg/cmd/create`).
/// `kubectl create -f FILE`: each object created as written.
fn create_from(api: &mut ApiServer, creds: &Credentials, text: &str, file: &str) -> Vec<String> {
    each_document(text, file, |obj| {
        let Some(r) = resource_for_kind(get_str(&obj, &["apiVersion"]).unwrap_or(""), get_str(&obj, &["kind"]).unwrap_or("")) else {
            return vec![format!("error: resource mapping not found for name: {:?} from {file:?}", api::name(&obj))];
        };
        let ns = if RESOURCES[r].namespaced { Some(api::namespace(&obj)).filter(|n| !n.is_empty()).unwrap_or("default").to_string() } else { String::new() };
        match api.handle(Request::create(r, &ns, obj, creds.clone())) {
            Ok(o) => vec![with_warnings(api, format!("{}/{} created", kind_prefix(r), api::name(&o)))],
            Err(s) => vec![s.kubectl_message(Some(file), "creating")],
        }
    })
}

/// Standard base64 with padding, as Secrets carry their data.
fn base64_std(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// `--from-literal=k=v` pairs.
fn literals(f: &Flags) -> Result<Vec<(String, String)>, String> {
    f.values
        .iter()
        .filter(|(n, _)| n == "--from-literal")
        .map(|(_, lit)| {
            lit.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())).ok_or_else(|| format!("error: invalid literal source {lit}, expected key=value"))
        })
        .collect()
}

/// `--verb=get,list --resource=pods,deployments.apps` as RBAC rules, one per API group.
fn role_rules(f: &Flags) -> Result<Vec<Value>, String> {
    let all = |k: &str| f.values.iter().filter(|(n, _)| n == k).flat_map(|(_, v)| v.split(',').map(str::to_string).collect::<Vec<_>>()).collect::<Vec<_>>();
    let verbs = all("--verb");
    if verbs.is_empty() {
        return Err("error: at least one verb must be specified".into());
    }
    let resources = all("--resource");
    if resources.is_empty() {
        return Err("error: at least one resource must be specified".into());
    }
    let mut rules: Vec<(String, Vec<String>)> = Vec::new();
    for r in resources {
        let (plural, group) = match resource_for_name(r.split('.').next().unwrap_or(&r)) {
            Some(id) if !r.contains('.') => (RESOURCES[id].plural.to_string(), RESOURCES[id].group.to_string()),
            _ => match r.split_once('.') {
                Some((p, g)) => (p.to_string(), g.to_string()),
                None => return Err(format!("error: resource {r:?} not found")),
            },
        };
        match rules.iter_mut().find(|(g, _)| *g == group) {
            Some((_, rs)) => rs.push(plural),
            None => rules.push((group, vec![plural])),
        }
    }
    Ok(rules.into_iter().map(|(g, rs)| json!({"apiGroups": [g], "resources": rs, "verbs": verbs.clone()})).collect())
}

/// `kubectl create TYPE NAME ...`, building the object as kubectl's generators do.
fn create(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let supported = "deployment, namespace, configmap, secret generic, serviceaccount, service clusterip|nodeport|loadbalancer, job, role, clusterrole, rolebinding, clusterrolebinding, poddisruptionbudget and quota";
    let Some(what) = f.positional.first() else {
        return vec![format!("error: kubeloop creates {supported} (kubectl create TYPE NAME ...); use the editor for anything else")];
    };
    // `secret generic NAME`, `service clusterip NAME`: a sub-type comes first.
    let (sub, name) = match what.as_str() {
        "secret" | "service" | "svc" => (f.positional.get(1).map(String::as_str), f.positional.get(2)),
        _ => (None, f.positional.get(1)),
    };
    let Some(name) = name else { return vec!["error: exactly one NAME is required, got 0".into()] };
    let all = |k: &str| f.values.iter().filter(|(n, _)| n == k).map(|(_, v)| v.clone()).collect::<Vec<_>>();
    let kind = match (what.as_str(), sub) {
        ("secret", Some("generic")) => Some("Secret"),
        ("service" | "svc", Some("clusterip" | "nodeport" | "loadbalancer")) => Some("Service"),
        ("secret" | "service" | "svc", _) => None,
        ("pdb", _) => Some("PodDisruptionBudget"),
        _ => resource_for_name(what).map(|r| RESOURCES[r].kind),
    };
    let body = match kind {
        Some("Deployment") => {
            let images = all("--image");
            if images.is_empty() {
                return vec!["error: required flag(s) \"image\" not set".into()];
            }
            let port = f.get("--port").and_then(|p| p.parse::<i64>().ok());
            let containers: Vec<Value> = images
                .iter()
                .map(|img| {
                    // The container is named after the image: `registry/x/nginx:1.27` -> `nginx`.
                    let base = img.rsplit('/').next().unwrap_or(img);
                    let cname = base.split(['@', ':']).next().unwrap_or(base).to_string();
                    let mut c = json!({"name": cname, "image": img, "resources": {}});
                    if let Some(p) = port {
                        c["ports"] = json!([{"containerPort": p}]);
                    }
                    c
                })
                .collect();
            let replicas = f.get("--replicas").and_then(|r| r.parse::<i64>().ok()).unwrap_or(1);
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "strategy": {},
                    "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": containers}}}})
        }
        Some("Namespace") => json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
        Some("ConfigMap") => {
            let data: Map = match literals(f) {
                Ok(l) => l.into_iter().map(|(k, v)| (k, json!(v))).collect(),
                Err(e) => return vec![e],
            };
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": data})
        }
        Some("Secret") => {
            let data: Map = match literals(f) {
                Ok(l) => l.into_iter().map(|(k, v)| (k, json!(base64_std(v.as_bytes())))).collect(),
                Err(e) => return vec![e],
            };
            let ty = f.get("--type").unwrap_or("Opaque");
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns}, "type": ty, "data": data})
        }
        Some("ServiceAccount") => json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}}),
        Some("Service") => {
            let ty = match sub {
                Some("nodeport") => "NodePort",
                Some("loadbalancer") => "LoadBalancer",
                _ => "ClusterIP",
            };
            let mut ports = Vec::new();
            for spec in all("--tcp").iter().flat_map(|t| t.split(',').map(str::to_string).collect::<Vec<_>>()) {
                let (port, target) = spec.split_once(':').unwrap_or((&spec, &spec));
                let (Ok(p), Ok(t)) = (port.parse::<i64>(), target.parse::<i64>()) else {
                    return vec![format!("error: invalid port spec {spec:?}: expected port:targetPort")];
                };
                let mut entry = json!({"name": format!("{p}-{t}"), "port": p, "protocol": "TCP", "targetPort": t});
                if let (Some(np), "NodePort") = (f.get("--node-port").and_then(|n| n.parse::<i64>().ok()), ty) {
                    entry["nodePort"] = json!(np);
                }
                ports.push(entry);
            }
            if ports.is_empty() && ty != "ClusterIP" {
                return vec!["error: at least one tcp port specifier must be provided".into()];
            }
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
                "spec": {"ports": ports, "selector": {"app": name}, "type": ty}})
        }
        Some("Job") => {
            let Some(image) = f.get("--image") else { return vec!["error: required flag(s) \"image\" not set".into()] };
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
                "spec": {"template": {"metadata": {}, "spec": {"containers": [{"name": name, "image": image, "resources": {}}], "restartPolicy": "Never"}}}})
        }
        Some(k @ ("Role" | "ClusterRole")) => match role_rules(f) {
            Ok(rules) => {
                let mut v = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": k, "metadata": {"name": name}, "rules": rules});
                if k == "Role" {
                    v["metadata"]["namespace"] = json!(ns);
                }
                v
            }
            Err(e) => return vec![e],
        },
        Some(k @ ("RoleBinding" | "ClusterRoleBinding")) => {
            let role_ref = match (f.get("--role"), f.get("--clusterrole")) {
                (Some(r), None) if k == "RoleBinding" => json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": r}),
                (None, Some(r)) => json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": r}),
                _ => {
                    return vec![if k == "RoleBinding" {
                        "error: exactly one of clusterrole or role must be specified"
                    } else {
                        "error: required flag(s) \"clusterrole\" not set"
                    }
                    .into()]
                }
            };
            let mut subjects = Vec::new();
            for u in all("--user") {
                subjects.push(json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": u}));
            }
            for g in all("--group") {
                subjects.push(json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}));
            }
            for sa in all("--serviceaccount") {
                let Some((sns, sname)) = sa.split_once(':') else { return vec!["error: serviceaccount must be <namespace>:<name>".into()] };
                subjects.push(json!({"kind": "ServiceAccount", "name": sname, "namespace": sns}));
            }
            let mut v = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": k, "metadata": {"name": name}, "roleRef": role_ref, "subjects": subjects});
            if k == "RoleBinding" {
                v["metadata"]["namespace"] = json!(ns);
            }
            v
        }
        Some("PodDisruptionBudget") => {
            let Some(sel) = f.selector.as_deref() else { return vec!["error: a selector must be specified".into()] };
            if crate::foundation::labels::Selector::parse(sel).is_err() {
                return vec![format!("error: invalid selector {sel:?}")];
            }
            let match_labels: Map = sel.split(',').filter_map(|p| p.split_once('=')).map(|(k, v)| (k.trim().to_string(), json!(v.trim()))).collect();
            let bound = |v: &str| v.parse::<i64>().map(|n| json!(n)).unwrap_or_else(|_| json!(v));
            let mut spec = json!({"selector": {"matchLabels": match_labels}});
            match (f.get("--min-available"), f.get("--max-unavailable")) {
                (Some(m), None) => spec["minAvailable"] = bound(m),
                (None, Some(m)) => spec["maxUnavailable"] = bound(m),
                _ => return vec!["error: one of min-available or max-unavailable must be specified".into()],
            }
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": ns}, "spec": spec})
        }
        Some("ResourceQuota") => {
            let hard: Map = f.get("--hard").unwrap_or("").split(',').filter_map(|p| p.split_once('=')).map(|(k, v)| (k.to_string(), json!(v))).collect();
            json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name, "namespace": ns}, "spec": {"hard": hard}})
        }
        _ => return vec![format!("error: kubeloop does not support \"kubectl create {what}\" yet (it creates {supported})")],
    };
    let r = resource_for_kind(get_str(&body, &["apiVersion"]).unwrap_or(""), get_str(&body, &["kind"]).unwrap_or("")).unwrap_or(0);
    let ns = if RESOURCES[r].namespaced { ns } else { "" };
    match api.handle(Request::create(r, ns, body, creds.clone())) {
        Ok(_) => vec![format!("{}/{name} created", kind_prefix(r))],
        Err(s) => vec![format!("error: failed to create {}: {}", RESOURCES[r].singular, s.message)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(split_args("scale rs -l 'app=web' --replicas=5").unwrap(), vec!["scale", "rs", "-l", "app=web", "--replicas=5"]);
        assert_eq!(split_args(r#"annotate pod x note="a b""#).unwrap(), vec!["annotate", "pod", "x", "note=a b"]);
        assert!(split_args("label 'x").is_err());
    }

    #[test]
    fn three_way_patch_drops_removed_fields() {
        let last = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"replicas": 2}});
        let new = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"replicas": 3}});
        let live = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"replicas": 2, "paused": false}});
        assert_eq!(three_way(Some(&last), &new, &live), json!({"metadata": {"labels": {"b": null}}, "spec": {"replicas": 3}}));
    }
}
