//! `kubectl apply`: client-side apply with the `last-applied-configuration` annotation and
//! the three-way patch (`k8s.io/kubectl/pkg/cmd/apply`).

use super::*;

pub(super) const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

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

/// `kubectl apply -f <file>` with `text` as the file's content.
pub fn apply_text(api: &mut ApiServer, creds: &Credentials, text: &str, file: &str) -> Vec<String> {
    apply_text_in(api, creds, text, file, &Namespace::default())
}

/// As [`apply_text`], into namespace `ns` (`kubectl apply -n NS`).
pub fn apply_text_in(api: &mut ApiServer, creds: &Credentials, text: &str, file: &str, ns: &Namespace) -> Vec<String> {
    each_document_in(text, file, ns, |obj| vec![apply_object(api, creds, obj, file)])
}

/// `kubectl apply view-last-applied TYPE NAME|TYPE/NAME|TYPE -l SELECTOR [-o yaml|json]`:
/// the configuration the last client-side apply recorded on each object, as YAML (or
/// JSON indented by two); nothing for an object no apply made.
pub(super) fn view_last_applied(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let output = f.get("--output").unwrap_or("yaml");
    if !matches!(output, "yaml" | "json") {
        return vec![
            format!("error: Unexpected -o output mode: {output}, the flag 'output' must be one of yaml|json"),
            "See 'kubectl apply view-last-applied -h' for help and examples".into(),
        ];
    }
    if f.positional.len() < 2 {
        return no_resources_named();
    }
    each_fetched(api, creds, f, ns, |_, _, _, live| {
        let Some(v) = api::annotation(live, LAST_APPLIED).and_then(|a| serde_json::from_str::<Value>(a).ok()) else { return vec![] };
        let text = if output == "json" { serde_json::to_string_pretty(&v).unwrap_or_default() } else { crate::kubectl::goyaml::to_yaml(&v) };
        text.lines().map(str::to_string).collect()
    })
}

/// `kubectl apply set-last-applied -f FILE [--create-annotation]`: each object's
/// last-applied annotation made the file's object, by a merge patch
/// (`editor.GetApplyPatch`). kubectl checks every object first and stops at the first
/// that fails, then patches those whose annotation differs.
pub(super) fn set_last_applied(api: &mut ApiServer, creds: &Credentials, text: &str, file: &str, ns: &Namespace, create: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut patches = Vec::new();
    let mut failed = None;
    each_document_in(text, file, ns, |obj| {
        if failed.is_some() {
            return vec![];
        }
        let r = match resource_for_kind(get_str(&obj, &["apiVersion"]).unwrap_or(""), get_str(&obj, &["kind"]).unwrap_or("")) {
            Some(r) => r,
            None => {
                failed = Some(format!(
                    "error: resource mapping not found for name: {:?} namespace: {:?} from {file:?}: no matches for kind {:?} in version {:?}",
                    api::name(&obj),
                    api::namespace(&obj),
                    get_str(&obj, &["kind"]).unwrap_or(""),
                    get_str(&obj, &["apiVersion"]).unwrap_or("")
                ));
                return vec![];
            }
        };
        let (name, ons) = (api::name(&obj).to_string(), api::namespace(&obj).to_string());
        let live = match api.handle(Request::new(Verb::Get, r, &ons, &name, creds.clone())) {
            Ok(l) => l,
            Err(s) if s.code == 404 => {
                failed = Some(s.kubectl_message(None, ""));
                return vec![];
            }
            Err(s) => {
                failed = Some(retrieval_error(&s, r, &name, &ons, file));
                return vec![];
            }
        };
        let current = api::annotation(&live, LAST_APPLIED);
        if current.is_none() && !create {
            failed = Some(format!(
                "error: no last-applied-configuration annotation found on resource: {name}, to create the annotation, run the command with --create-annotation"
            ));
            return vec![];
        }
        if current.and_then(|c| serde_json::from_str::<Value>(c).ok()).as_ref() == Some(&obj) {
            out.push(format!("set-last-applied {name}: no changes required."));
        } else {
            // The object as JSON, with the newline its encoder ends it with.
            patches.push((r, ons, name, format!("{}\n", serde_json::to_string(&obj).unwrap_or_default())));
        }
        vec![]
    });
    if let Some(e) = failed {
        out.push(e);
        return out;
    }
    for (r, ons, name, config) in patches {
        let patch = json!({"metadata": {"annotations": {LAST_APPLIED: config}}});
        match api.handle(Request::patch(r, &ons, &name, PatchType::Merge, patch, creds.clone())) {
            Ok(_) => out.push(with_warnings(api, format!("{}/{name} configured", kind_prefix(r)))),
            Err(s) => {
                out.push(s.kubectl_message(None, ""));
                break;
            }
        }
    }
    out
}

/// kubectl apply's default prune allowlist (`prune.go`), in its order.
const PRUNE_KINDS: [(&str, &str); 16] = [
    ("v1", "ConfigMap"),
    ("v1", "Endpoints"),
    ("v1", "Namespace"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "PersistentVolume"),
    ("v1", "Pod"),
    ("v1", "ReplicationController"),
    ("v1", "Secret"),
    ("v1", "Service"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
    ("networking.k8s.io/v1", "Ingress"),
    ("apps/v1", "DaemonSet"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
];

/// `kubectl apply -f FILE -l SELECTOR`: the objects the selector picks from the file are
/// applied (the others are left out); with `--prune` (`-l` or `--all`), then every object of the
/// allowlist's kinds that an apply made (it has the last-applied annotation), that the
/// selector picks and that the file no longer holds is deleted: in the namespaces the
/// file's objects are in, then cluster-wide for Namespaces and PersistentVolumes.
pub fn apply_selected(
    api: &mut ApiServer,
    creds: &Credentials,
    text: &str,
    file: &str,
    ns: &Namespace,
    selector: Option<&crate::foundation::labels::Selector>,
    prune: bool,
) -> Vec<String> {
    let mut visited: Vec<(ResourceId, String, String)> = Vec::new();
    let mut namespaces: Vec<String> = Vec::new();
    let mut out = each_document_in(text, file, ns, |obj| {
        if selector.is_some_and(|s| !s.matches(api::labels(&obj))) {
            return vec![];
        }
        if let Some(r) = resource_for_kind(get_str(&obj, &["apiVersion"]).unwrap_or(""), get_str(&obj, &["kind"]).unwrap_or("")) {
            let ns =
                if RESOURCES[r].namespaced { Some(api::namespace(&obj)).filter(|n| !n.is_empty()).unwrap_or("default").to_string() } else { String::new() };
            if RESOURCES[r].namespaced && !namespaces.contains(&ns) {
                namespaces.push(ns.clone());
            }
            visited.push((r, ns, api::name(&obj).to_string()));
        }
        vec![apply_object(api, creds, obj, file)]
    });
    if !prune {
        return out;
    }
    // kubectl warns through klog (its header: severity, date, time, thread, source line)
    // whenever it prunes with the default allowlist from a namespace, which is always.
    let t = crate::foundation::sim::rfc3339_micro(api.now);
    out.push(format!(
        "W{}{} {} {:>7} prune.go:71] Deprecated: kubectl apply will no longer prune non-namespaced resources by default when used with the --namespace flag in a future release. To preserve the current behaviour, list the resources you want to target explicitly in the --prune-allowlist flag.",
        &t[5..7],
        &t[8..10],
        &t[11..26],
        1
    ));
    let kinds: Vec<ResourceId> = PRUNE_KINDS.iter().filter_map(|(av, k)| resource_for_kind(av, k)).collect();
    let scopes = namespaces.iter().flat_map(|n| kinds.iter().filter(|r| RESOURCES[**r].namespaced).map(move |r| (*r, n.clone())));
    let scopes: Vec<(ResourceId, String)> = scopes.chain(kinds.iter().filter(|r| !RESOURCES[**r].namespaced).map(|r| (*r, String::new()))).collect();
    for (r, ns) in scopes {
        let list = match api.handle(Request::new(Verb::List, r, &ns, "", creds.clone())) {
            Ok(l) => l,
            Err(s) => {
                out.push(format!(
                    "error: error pruning {} object {}/{}, Kind={}: {}",
                    if ns.is_empty() { "nonNamespaced" } else { "namespaced" },
                    RESOURCES[r].group,
                    RESOURCES[r].version,
                    RESOURCES[r].kind,
                    s.message
                ));
                return out;
            }
        };
        for item in api::get_array(&list, &["items"]) {
            let name = api::name(item).to_string();
            let applied = api::annotation(item, LAST_APPLIED).is_some();
            let picked = selector.is_none_or(|s| s.matches(api::labels(item)));
            if !applied || !picked || visited.iter().any(|(vr, vn, vname)| *vr == r && *vn == ns && *vname == name) {
                continue;
            }
            let mut req = Request::delete(r, &ns, &name, creds.clone());
            req.propagation = Some("Background".into());
            match api.handle(req) {
                Ok(_) => out.push(format!("{}/{name} pruned", kind_prefix(r))),
                Err(s) => out.push(s.kubectl_message(None, "")),
            }
        }
    }
    out
}

/// The field manager of kubectl's client-side apply.
const CLIENT_SIDE_MANAGER: &str = "kubectl-client-side-apply";

/// `kubectl apply --server-side`: each document is sent as an apply patch under `manager`
/// (`kubectl` unless `--field-manager` says otherwise); the API server merges it and
/// tracks the fields, and refuses fields other managers own unless `force`.
pub fn apply_server_side(api: &mut ApiServer, creds: &Credentials, text: &str, file: &str, manager: &str, force: bool) -> Vec<String> {
    apply_server_side_in(api, creds, text, file, &Namespace::default(), manager, force)
}

/// As [`apply_server_side`], into namespace `ns` (`kubectl apply --server-side -n NS`).
pub fn apply_server_side_in(api: &mut ApiServer, creds: &Credentials, text: &str, file: &str, ns: &Namespace, manager: &str, force: bool) -> Vec<String> {
    each_document_in(text, file, ns, |obj| {
        let av = get_str(&obj, &["apiVersion"]).unwrap_or("").to_string();
        let kind = get_str(&obj, &["kind"]).unwrap_or("").to_string();
        let name = api::name(&obj).to_string();
        let Some(r) = resource_for_kind(&av, &kind) else {
            let ns = api::namespace(&obj);
            return vec![format!(
                "error: resource mapping not found for name: {name:?} namespace: {ns:?} from {file:?}: no matches for kind {kind:?} in version {av:?}\nensure CRDs are installed first"
            )];
        };
        let ns = if RESOURCES[r].namespaced { Some(api::namespace(&obj)).filter(|n| !n.is_empty()).unwrap_or("default").to_string() } else { String::new() };
        let mut req = Request::patch(r, &ns, &name, PatchType::Apply { force }, obj, creds.clone());
        req.field_manager = manager.to_string();
        match api.handle(req) {
            Ok(_) => vec![with_warnings(api, format!("{}/{name} serverside-applied", kind_prefix(r)))],
            Err(s) if s.code == 409 && s.reason == "Conflict" => vec![format!("error: {}\n{SSA_CONFLICT_ADVICE}", s.message)],
            // Unlike a client-side apply, kubectl adds no source to a server-side apply's error.
            Err(s) => vec![s.kubectl_message(None, "")],
        }
    })
}

/// What kubectl adds to a server-side apply conflict (`cmd/apply` `fieldManagerConflictErrorFormat`).
const SSA_CONFLICT_ADVICE: &str = "Please review the fields above--they currently have other managers. Here
are the ways you can resolve this warning:
* If you intend to manage all of these fields, please re-run the apply
  command with the `--force-conflicts` flag.
* If you do not intend to manage all of the fields, please edit your
  manifest to remove references to the fields that should keep their
  current managers.
* You may co-own fields by updating your manifest to match the existing
  value; in this case, you'll become the manager if the other manager(s)
  stop managing the field (remove it from their configuration).
See https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts";

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
pub(super) fn apply_with(api: &mut ApiServer, creds: &Credentials, mut obj: Value, file: &str, dry: bool) -> (String, Option<crate::foundation::api::Object>) {
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
            req.field_manager = CLIENT_SIDE_MANAGER.into();
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
            req.field_manager = CLIENT_SIDE_MANAGER.into();
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
