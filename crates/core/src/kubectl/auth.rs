//! `kubectl auth can-i` (`k8s.io/kubectl/pkg/cmd/auth/cani.go`).

use super::*;

/// `kubectl auth can-i VERB TYPE[/NAME] [NAME] [-n NS | -A]` (as the line's identity,
/// `--as` included): a SelfSubjectAccessReview answered by the authorizer, `yes` or `no`.
pub(super) fn can_i(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
    let args = &f.positional[1..];
    let (Some(verb), Some(target)) = (args.first(), args.get(1)) else {
        return vec!["error: you must specify two arguments: verb resource or verb resource/resourceName.".into()];
    };
    let user = match api.authenticate(creds) {
        Ok(u) => u,
        Err(s) => return vec![s.kubectl_message(None, "")],
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
    let a = crate::apiserver::rbac::Attributes { verb, group, resource: &resource, subresource: &subresource, namespace: ns, name: &name };
    out.push(if matches!(crate::apiserver::rbac::authorize(&api.store, &user, &a), crate::apiserver::rbac::Decision::Allow) {
        "yes".into()
    } else {
        "no".into()
    });
    out
}

/// Who a command line acts as: the terminal's identity, or `--token`'s; then `--as` (and
/// `--as-group`) impersonate, which the API server allows only if the caller may
/// (`impersonate` on users, service accounts and groups). Err is what kubectl prints.
pub(super) fn identity(api: &ApiServer, creds: &Credentials, kc: &config::Kubeconfig, f: &Flags) -> Result<Credentials, Vec<String>> {
    // `--context NAME`: that context's user, by the token the cluster knows them by.
    let context = match f.get("--context").filter(|c| !c.is_empty()) {
        Some(name) => match kc.contexts.iter().find(|c| c.name == name) {
            Some(c) => Some(c),
            None => return Err(vec![format!("Error in configuration: context was not found for specified context: {name}")]),
        },
        None => None,
    };
    if context.is_none() && kc.current().is_none() {
        // No current context: kubectl has no server but its default.
        return Err(vec!["The connection to the server localhost:8080 was refused - did you specify the right host or port?".into()]);
    }
    let base = match (f.get("--token"), context) {
        (Some(t), _) => Credentials::Token(t.to_string()),
        (None, Some(c)) if c.name != kc.current => {
            Credentials::Token(api.tokens.iter().find(|(_, u)| u.name == c.user).map(|(t, _)| t.clone()).unwrap_or_default())
        }
        (None, _) => creds.clone(),
    };
    let groups: Vec<String> = f.values.iter().filter(|(n, _)| n == "--as-group").map(|(_, v)| v.clone()).collect();
    let Some(target) = f.get("--as").filter(|t| !t.is_empty()) else {
        if !groups.is_empty() {
            // client-go's transport refuses before any request is sent.
            return Err(vec![format!("error: requesting uid, groups or user-extra for {} without impersonating a user", kc.user())]);
        }
        return Ok(base);
    };
    let me = api.authenticate(&base).map_err(|s| vec![s.kubectl_message(None, "")])?;
    api.impersonate(&me, target, &groups).map(Credentials::User).map_err(|s| vec![s.kubectl_message(None, "")])
}

/// `kubectl auth whoami [-o yaml|json]` (`k8s.io/kubectl/pkg/cmd/auth/whoami.go`): the
/// SelfSubjectReview's user, as the authenticator saw the caller.
pub(super) fn whoami(api: &ApiServer, creds: &Credentials, f: &Flags) -> Vec<String> {
    let user = match api.authenticate(creds) {
        Ok(u) => u,
        Err(s) => return vec![s.kubectl_message(None, "")],
    };
    let review = json!({
        "kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1", "metadata": {"creationTimestamp": null},
        "status": {"userInfo": {"username": user.name, "groups": user.groups}},
    });
    match f.get("--output").unwrap_or("") {
        "" => {
            let mut rows = vec![vec!["ATTRIBUTE".to_string(), "VALUE".into()], vec!["Username".into(), user.name.clone()]];
            if !user.groups.is_empty() {
                rows.push(vec!["Groups".into(), format!("[{}]", user.groups.join(" "))]);
            }
            crate::kubectl::printers::table(&rows).lines().map(str::to_string).collect()
        }
        "name" => vec!["selfsubjectreview.authentication.k8s.io/<unknown>".into()],
        "json" => {
            let mut info = vec![("username", Typed::V(json!(user.name)))];
            if !user.groups.is_empty() {
                info.push(("groups", Typed::V(json!(user.groups))));
            }
            vec![typed_json(&Typed::O(vec![
                ("kind", Typed::V(json!("SelfSubjectReview"))),
                ("apiVersion", Typed::V(json!("authentication.k8s.io/v1"))),
                ("metadata", Typed::O(vec![("creationTimestamp", Typed::V(Value::Null))])),
                ("status", Typed::O(vec![("userInfo", Typed::O(info))])),
            ]))]
        }
        o => super::create::print_review(&review, o),
    }
}

/// A typed object's fields in Go struct order, which kubectl's JSON printer keeps for the
/// objects it builds itself (the value tree sorts keys).
pub(super) enum Typed {
    V(Value),
    O(Vec<(&'static str, Typed)>),
}

/// [`Typed`] as kubectl prints JSON: four-space indentation.
pub(super) fn typed_json(t: &Typed) -> String {
    fn write(t: &Typed, depth: usize, out: &mut String) {
        match t {
            Typed::V(v) => out.push_str(&super::get::json_indent4(v).replace('\n', &format!("\n{}", "    ".repeat(depth)))),
            Typed::O(fields) => {
                out.push('{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    out.push_str(if i == 0 { "\n" } else { ",\n" });
                    out.push_str(&"    ".repeat(depth + 1));
                    out.push_str(&format!("{k:?}: "));
                    write(v, depth + 1, out);
                }
                if !fields.is_empty() {
                    out.push('\n');
                    out.push_str(&"    ".repeat(depth));
                }
                out.push('}');
            }
        }
    }
    let mut out = String::new();
    write(t, 0, &mut out);
    out
}
