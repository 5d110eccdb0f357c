//! `kubectl auth can-i` (`k8s.io/kubectl/pkg/cmd/auth/cani.go`).

use super::*;

/// `kubectl auth can-i VERB TYPE[/NAME] [NAME] [-n NS | -A] [--as USER]`: a
/// SelfSubjectAccessReview answered by the authorizer, printed as `yes` or `no`.
pub(super) fn can_i(api: &mut ApiServer, creds: &Credentials, f: &Flags, ns: &str) -> Vec<String> {
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
