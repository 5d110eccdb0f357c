//! `kubectl edit TYPE/NAME` (`k8s.io/kubectl/pkg/cmd/util/editor/editoptions.go`): the
//! object as YAML under kubectl's header; on save, the change from what was opened to what
//! was saved goes to the live object as a strategic merge patch (so that what others
//! changed meanwhile stays), with kubectl's answers: `edited`, `Edit cancelled, …`, and
//! for a refused change the file again with the reasons on top. The page opens the text in
//! an editor pane; elsewhere the saved file comes as a here-document
//! (`edit deployment/web <<EOF` … `EOF`), one save of the editor.

use super::apply::LAST_APPLIED;
use super::*;
use crate::foundation::sort::Sort;

/// The comment kubectl puts above the object it opens.
pub const HEADER: &str = "# Please edit the object below. Lines beginning with a '#' will be ignored,\n# and an empty file will abort the edit. If an error occurs while saving this file will be\n# reopened with the relevant failures.\n#\n";

/// The comment above the last-applied configuration `apply edit-last-applied` opens.
pub const LAST_APPLIED_HEADER: &str =
    "# Please edit the 'last-applied-configuration' annotations below.\n# Lines beginning with a '#' will be ignored, and an empty file will abort the edit.\n#\n";

/// What an edit changes: the object (`kubectl edit`), or the configuration the last
/// client-side apply recorded on it (`kubectl apply edit-last-applied`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    Object,
    LastApplied,
}

/// Whether a command line opens kubectl's editor (`edit`, `apply edit-last-applied`).
pub fn opens_editor(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().skip_while(|w| *w == "kubectl").collect();
    match words.first() {
        Some(&"edit") => true,
        Some(&"apply") => words.iter().skip(1).find(|w| !w.starts_with('-')) == Some(&"edit-last-applied"),
        _ => false,
    }
}

/// What kubeloop prints for an `edit` with no saved file to take.
const NO_EDITOR: &str = "error: this terminal has no editor to open: in the page, `kubectl edit` opens the object in an editor pane; elsewhere give the saved file as a here-document (kubectl edit TYPE/NAME <<EOF … EOF)";

/// The object a line names, as kubectl opens it for editing (its header, then the object
/// as YAML without managedFields); Err is what kubectl prints instead.
pub fn open(api: &mut ApiServer, creds: &Credentials, ns: &str, line: &str) -> Result<String, Vec<String>> {
    let mut f = edit_flags(line)?;
    let mode = if f.positional.first().map(String::as_str) == Some("edit-last-applied") {
        f.positional.remove(0);
        Mode::LastApplied
    } else {
        Mode::Object
    };
    let (r, ns, name) = target(api, creds, &f, ns)?;
    let obj = fetch(api, creds, r, &ns, &name).map_err(|e| vec![e])?;
    match mode {
        Mode::Object => Ok(format!("{HEADER}{}", goyaml::to_yaml(&without_managed_fields(&obj)))),
        Mode::LastApplied => match last_applied(&obj) {
            Some(v) => Ok(format!("{LAST_APPLIED_HEADER}{}", goyaml::to_yaml(&v))),
            None => Err(vec![NO_LAST_APPLIED.to_string()]),
        },
    }
}

const NO_LAST_APPLIED: &str = "error: no last-applied-configuration annotation found on resources, to create the annotation, use command `kubectl apply set-last-applied --create-annotation`";

fn last_applied(obj: &Value) -> Option<Value> {
    api::annotation(obj, LAST_APPLIED).and_then(|a| serde_json::from_str(a).ok())
}

/// The file kubectl opens again after a save the server refused: the header, the reasons
/// (the `# ` lines of what the save printed) and what was saved, without its comments.
/// None when the save did not ask for another edit.
pub fn reopened(saved: &str, printed: &[String]) -> Option<String> {
    let reasons: Vec<&String> = printed.iter().filter(|l| l.starts_with('#')).collect();
    if reasons.is_empty() {
        return None;
    }
    let mut out = if saved.starts_with(LAST_APPLIED_HEADER) { LAST_APPLIED_HEADER } else { HEADER }.to_string();
    for r in reasons {
        out.push_str(r);
        out.push('\n');
    }
    out.push_str(&strip_comments(saved));
    Some(out)
}

/// `kubectl edit` with the saved file as `stdin`.
pub(super) fn edit(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str, stdin: Option<&str>, mode: Mode) -> Vec<String> {
    let (r, ns, name) = match target(api, creds, f, ns) {
        Ok(t) => t,
        Err(e) => return e,
    };
    let live = match fetch(api, creds, r, &ns, &name) {
        Ok(o) => without_managed_fields(&o),
        Err(e) => return vec![e],
    };
    if mode == Mode::LastApplied && last_applied(&live).is_none() {
        return vec![NO_LAST_APPLIED.to_string()];
    }
    let Some(saved) = stdin else { return vec![NO_EDITOR.to_string()] };
    if mode == Mode::LastApplied {
        return edit_last_applied(api, creds, r, &name, &live, saved);
    }
    let body = strip_comments(saved);
    let temp = temp_file(api, &name);
    if body.trim().is_empty() {
        return vec!["Edit cancelled, saved file was empty.".into()];
    }
    let edited = match one_object(&body) {
        Ok(v) => v,
        Err(e) => return e,
    };
    // What was opened: the version the saved file names, if the store still has it (a
    // pane opened a while ago), else the live object.
    let rv = api::resource_version(&edited).to_string();
    let opened = if rv.is_empty() || rv == api::resource_version(&live) {
        live.clone()
    } else {
        version_at(api, r, &ns, &name, &rv).map(|o| without_managed_fields(&o)).unwrap_or_else(|| live.clone())
    };
    if opened == edited {
        return vec!["Edit cancelled, no changes made.".into()];
    }
    let own_ns = api::namespace(&edited);
    if RESOURCES[r].namespaced && !own_ns.is_empty() && own_ns != ns {
        return vec![
            format!("A copy of your changes has been stored to {temp:?}"),
            format!("error: the namespace from the provided object {own_ns:?} does not match the namespace {ns:?}. You must pass '--namespace={own_ns}' to perform this operation."),
        ];
    }
    let unchanged = |k: &[&str]| api::get(&opened, k) == api::get(&edited, k);
    if !(unchanged(&["apiVersion"]) && unchanged(&["kind"]) && unchanged(&["metadata", "name"])) {
        return vec![format!("A copy of your changes has been stored to {temp:?}"), "error: At least one of apiVersion, kind and name was changed".into()];
    }
    let patch = two_way(&opened, &edited, "");
    let mut out = Vec::new();
    if switch(f, "--output-patch") {
        out.push(format!("Patch: {}", serde_json::to_string(&patch).unwrap_or_default()));
    }
    let mut req = Request::patch(r, &ns, &name, PatchType::Strategic, patch, creds.clone());
    req.subresource = f.get("--subresource").unwrap_or("").to_string();
    let resource = RESOURCES[r].qualified_resource();
    match api.handle(req) {
        Ok(_) => out.push(with_warnings(api, format!("{}/{name} edited", kind_prefix(r)))),
        Err(s) if s.reason == "Invalid" => {
            out.push(format!("error: {resource} {name:?} is invalid"));
            let causes = s.details.as_ref().map(|d| api::get_array(d, &["causes"]).to_vec()).unwrap_or_default();
            let causes: Vec<String> =
                causes.iter().map(|c| format!("{}: {}", get_str(c, &["field"]).unwrap_or(""), get_str(c, &["message"]).unwrap_or(""))).collect();
            out.extend(again(&format!("{resource} {name:?} was not valid"), &causes));
        }
        Err(s) if s.code == 404 => {
            out.push(format!("error: {resource} {name:?} could not be found on the server"));
            out.push(format!("The edits you made on deleted resources have been saved to {temp:?}"));
        }
        Err(s) if s.code == 0 => out.push(s.kubectl_message(None, "")),
        Err(s) => {
            out.push(format!("error: {resource} {name:?} could not be patched: {}", s.message));
            out.push(format!("You can run `kubectl replace -f {temp}` to try this update again."));
        }
    }
    out
}

/// `apply edit-last-applied` once saved: the annotation made what was saved, by a merge
/// patch (`visitToApplyEditPatch`).
fn edit_last_applied(api: &mut ApiServer, creds: &Credentials, r: ResourceId, name: &str, live: &Value, saved: &str) -> Vec<String> {
    let Some(opened) = last_applied(live) else { return vec![NO_LAST_APPLIED.to_string()] };
    let body = strip_comments(saved);
    if body.trim().is_empty() {
        return vec!["Edit cancelled, saved file was empty.".into()];
    }
    let edited = match one_object(&body) {
        Ok(v) => v,
        Err(e) => return e,
    };
    if edited == opened {
        return vec!["Edit cancelled, no changes made.".into()];
    }
    let ns = api::namespace(live).to_string();
    let patch = json!({"metadata": {"annotations": {LAST_APPLIED: format!("{}\n", serde_json::to_string(&edited).unwrap_or_default())}}});
    match api.handle(Request::patch(r, &ns, name, PatchType::Merge, patch, creds.clone())) {
        Ok(_) => vec![with_warnings(api, format!("{}/{name} edited", kind_prefix(r)))],
        Err(s) => vec![s.kubectl_message(None, "")],
    }
}

/// The one object a saved file holds; Err is the header of the file opened again for a
/// syntax error.
fn one_object(body: &str) -> Result<Value, Vec<String>> {
    let docs = crate::foundation::manifest::parse(body);
    match docs.as_slice() {
        [d] if d.object.is_some() && d.diagnostics.is_empty() => Ok(d.object.clone().unwrap_or(Value::Null)),
        _ => {
            let why = docs.iter().flat_map(|d| d.diagnostics.iter()).map(|x| x.message.clone()).next();
            let why = why.unwrap_or_else(|| "the edited file must hold the one object that was opened".into());
            Err(again(&format!("The edited file had a syntax error: {why}"), &[]))
        }
    }
}

/// The lines of the header kubectl writes above a file it opens again (`editHeader`): the
/// reason, with a colon when causes follow, each cause, then `#`; a line break inside one
/// goes on as a comment (`hashOnLineBreak`).
fn again(head: &str, causes: &[String]) -> Vec<String> {
    let comment = |s: &str| s.replace('\n', "\n# ");
    let mut out = vec![if causes.is_empty() { format!("# {}", comment(head)) } else { format!("# {}:", comment(head)) }];
    out.extend(causes.iter().map(|c| format!("# * {}", comment(c))));
    out.push("#".into());
    out.into_iter().flat_map(|l| l.lines().map(str::to_string).collect::<Vec<_>>()).collect()
}

/// The saved text without its comment lines (`cmdutil.StripComments`).
fn strip_comments(text: &str) -> String {
    text.lines().filter(|l| !l.trim_start().starts_with('#')).map(|l| format!("{l}\n")).collect()
}

fn without_managed_fields(obj: &Value) -> Value {
    let mut obj = obj.clone();
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    obj
}

/// The name kubectl's temporary file would have (`kubectl-edit-*.yaml`), the same for the
/// same moment and object.
fn temp_file(api: &ApiServer, name: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ api.now;
    for b in name.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    format!("/tmp/kubectl-edit-{}.yaml", h % 4_000_000_000)
}

/// The flags of an `edit` line, checked as kubectl checks them.
fn edit_flags(line: &str) -> Result<Flags, Vec<String>> {
    let (line, _) = heredoc(line);
    let words = split_args(&line).map_err(|e| vec![format!("error: {e}")])?;
    let words: Vec<String> = words.into_iter().skip_while(|a| a == "kubectl").collect();
    let words = flags::check(&words)?;
    parse_flags(&words[1..]).map_err(|e| vec![format!("error: {e}")])
}

/// The one object an edit names (kubectl edits several as one List; kubeloop's edit takes
/// one).
fn target(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Result<(ResourceId, String, String), Vec<String>> {
    if f.positional.is_empty() {
        return Err(no_resources_named());
    }
    let ns = f.namespace.clone().unwrap_or_else(|| ns.to_string());
    let found = targets(api, creds, f, &ns).map_err(|e| vec![e])?;
    match found.as_slice() {
        [(r, name)] => Ok((*r, if RESOURCES[*r].namespaced { ns } else { String::new() }, name.clone())),
        _ => {
            Err(vec![format!("error: kubeloop's kubectl edit takes one object at a time ({} named); the real kubectl opens several as one List", found.len())])
        }
    }
}

/// The object as it was at resourceVersion `rv`, from the store's history.
fn version_at(api: &ApiServer, r: ResourceId, ns: &str, name: &str, rv: &str) -> Option<Value> {
    let rev: u64 = rv.parse().ok()?;
    let mut events = api.store.events_since(r, rev.saturating_sub(1)).ok()?;
    events.find(|e| api::namespace(&e.object) == ns && api::name(&e.object) == name && api::resource_version(&e.object) == rv).map(|e| (*e.object).clone())
}

/// The strategic merge patch from `original` to `modified`
/// (`strategicpatch.CreateTwoWayMergePatch`): changed and added fields, `null` for removed
/// ones; a list with a merge key as the changed elements (with their key), `$patch:
/// delete` for the removed ones and `$setElementOrder` for the new order; any other list
/// whole.
pub fn two_way(original: &Value, modified: &Value, parent: &str) -> Value {
    let (Some(o), Some(m)) = (original.as_object(), modified.as_object()) else { return modified.clone() };
    let mut patch = Map::new();
    for (k, mv) in m {
        let ov = o.get(k);
        if ov == Some(mv) {
            continue;
        }
        match (ov, mv) {
            (Some(ov @ Value::Object(_)), Value::Object(_)) => {
                let sub = two_way(ov, mv, k);
                if sub.as_object().is_some_and(|s| s.iter().next().is_some()) {
                    patch.insert(k.clone(), sub);
                }
            }
            (Some(Value::Array(ol)), Value::Array(ml)) => match crate::apiserver::patch::list_merge_key(k, parent) {
                Some(key) if ol.iter().chain(ml).all(|e| e.get(key).is_some()) => {
                    let (changes, order) = list_diff(ol, ml, key);
                    if !changes.is_empty() {
                        patch.insert(format!("$setElementOrder/{k}"), Value::Array(order));
                        patch.insert(k.clone(), Value::Array(changes));
                    }
                }
                _ => {
                    patch.insert(k.clone(), mv.clone());
                }
            },
            _ => {
                patch.insert(k.clone(), mv.clone());
            }
        }
    }
    for k in o.keys() {
        if m.get(k).is_none() {
            patch.insert(k.clone(), Value::Null);
        }
    }
    Value::Object(patch)
}

/// The patch of a list merged by `key`, in the key's order (`diffListsOfMaps` sorts both
/// lists by it), and the modified list's order of keys.
fn list_diff(original: &[Value], modified: &[Value], key: &str) -> (Vec<Value>, Vec<Value>) {
    let id = |e: &Value| e.get(key).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string)).unwrap_or_default();
    let mut changes: Vec<(String, Value)> = Vec::new();
    for (k, m) in modified.iter().enumerate() {
        // A key given twice counts once, the first time.
        if modified[..k].iter().any(|e| id(e) == id(m)) {
            continue;
        }
        match original.iter().find(|o| id(o) == id(m)) {
            Some(o) if o == m => {}
            Some(o) => {
                let mut d = two_way(o, m, "");
                if let (Some(dm), Some(k)) = (d.as_object_mut(), m.get(key)) {
                    dm.insert(key, k.clone());
                }
                changes.push((id(m), d));
            }
            None => changes.push((id(m), m.clone())),
        }
    }
    for o in original {
        if !modified.iter().any(|m| id(m) == id(o)) {
            let mut d = Map::new();
            d.insert("$patch", json!("delete"));
            if let Some(k) = o.get(key) {
                d.insert(key, k.clone());
            }
            changes.push((id(o), Value::Object(d)));
        }
    }
    changes.sort_stable_by(|a, b| a.0.cmp(&b.0));
    let order = modified
        .iter()
        .map(|m| {
            let mut d = Map::new();
            if let Some(k) = m.get(key) {
                d.insert(key, k.clone());
            }
            Value::Object(d)
        })
        .collect();
    (changes.into_iter().map(|(_, v)| v).collect(), order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_image_is_the_container_by_name_and_the_order() {
        let o = json!({"spec": {"containers": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y"}], "replicas": 1}});
        let m = json!({"spec": {"containers": [{"name": "a", "image": "x:2"}, {"name": "b", "image": "y"}]}});
        assert_eq!(
            two_way(&o, &m, ""),
            json!({"spec": {"$setElementOrder/containers": [{"name": "a"}, {"name": "b"}], "containers": [{"name": "a", "image": "x:2"}], "replicas": null}})
        );
        let gone = json!({"spec": {"containers": [{"name": "b", "image": "y"}], "replicas": 1}});
        assert_eq!(
            two_way(&o, &gone, ""),
            json!({"spec": {"$setElementOrder/containers": [{"name": "b"}], "containers": [{"$patch": "delete", "name": "a"}]}})
        );
        assert_eq!(two_way(&o, &o, ""), json!({}));
    }

    #[test]
    fn the_patch_applied_to_the_original_gives_what_was_saved() {
        let o = json!({"spec": {"containers": [{"name": "a", "image": "x:1", "env": [{"name": "A", "value": "1"}]}], "args": ["p", "q"]}});
        let m =
            json!({"spec": {"containers": [{"name": "c", "image": "z"}, {"name": "a", "image": "x:1", "env": [{"name": "B", "value": "2"}]}], "args": ["q"]}});
        let mut patched = o.clone();
        crate::apiserver::patch::strategic_merge(&mut patched, &two_way(&o, &m, ""));
        let names: Vec<&str> = api::get_array(&patched, &["spec", "containers"]).iter().filter_map(|c| get_str(c, &["name"])).collect();
        assert_eq!(names.len(), 2, "{patched}");
        assert_eq!(api::get(&patched, &["spec", "args"]), Some(&json!(["q"])));
        let a = api::get_array(&patched, &["spec", "containers"]).iter().find(|c| get_str(c, &["name"]) == Some("a")).cloned().unwrap();
        assert_eq!(a["env"], json!([{"name": "B", "value": "2"}]));
    }

    #[test]
    fn reasons_become_the_header_of_the_file_opened_again() {
        let printed = vec!["error: x".to_string(), "# deployments.apps \"web\" was not valid:".into(), "# * spec.replicas: bad".into(), "#".into()];
        let text = reopened("# old header\nkind: Deployment\n", &printed).unwrap();
        assert!(text.starts_with(HEADER));
        assert!(text.ends_with("# * spec.replicas: bad\n#\nkind: Deployment\n"), "{text}");
        assert_eq!(reopened("kind: X\n", &["deployment.apps/web edited".to_string()]), None);
    }
}
