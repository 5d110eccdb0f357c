//! Authentication: bearer tokens (the static ones a Scenario's users carry, and the service
//! account tokens the TokenRequest API issues, `pkg/serviceaccount/claims.go`), then
//! impersonation (`k8s.io/apiserver/pkg/endpoints/filters/impersonation.go`).

use super::*;
use crate::foundation::sort::Sort;
use crate::foundation::status::FieldError;

/// A service account token issued by `serviceaccounts/NAME/token`: it authenticates as the
/// account until it expires, and no longer once the account (or the object it is bound to)
/// is gone or was recreated.
#[derive(Debug, Clone, PartialEq)]
pub struct IssuedToken {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub expires: Millis,
    /// The Pod, Secret or Node the token is bound to: its resource, name and uid.
    pub bound: Option<(ResourceId, String, String)>,
}

/// The audience a token is for when the request names none: the API server's
/// (`--api-audiences`, which kubeadm sets to the issuer).
pub const API_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";

/// `authentication.k8s.io/v1` TokenRequest, for its errors (it is never stored).
const TOKEN_REQUEST: ResourceInfo = ResourceInfo {
    group: "authentication.k8s.io",
    version: "v1",
    kind: "TokenRequest",
    plural: "tokenrequests",
    singular: "tokenrequest",
    namespaced: true,
    short_names: &[],
};

impl ApiServer {
    /// Who a request's credentials say it is: 401 for a token no authenticator accepts
    /// (unknown, expired, or of a service account that is gone).
    pub fn authenticate(&self, creds: &Credentials) -> Result<UserInfo, Status> {
        match creds {
            Credentials::User(u) => Ok(u.clone()),
            Credentials::Token(t) => {
                let user = self.tokens.get(t).ok_or_else(Status::unauthorized)?;
                match self.issued.get(t) {
                    Some(issued) if !self.token_is_valid(issued) => Err(Status::unauthorized()),
                    _ => Ok(user.clone()),
                }
            }
        }
    }

    fn token_is_valid(&self, t: &IssuedToken) -> bool {
        let alive = |rid: ResourceId, name: &str, uid: &str| {
            let ns = if RESOURCES[rid].namespaced { t.namespace.as_str() } else { "" };
            self.store.get_by(rid, ns, name).is_some_and(|o| api::uid(o) == uid && !api::is_deleting(o))
        };
        self.now < t.expires && alive(api::rid::SERVICEACCOUNT, &t.name, &t.uid) && t.bound.as_ref().is_none_or(|(r, n, u)| alive(*r, n, u))
    }

    /// Act as `target` (and `groups`): allowed when `user` may `impersonate` the user (or
    /// the service account) and each group. A service account's groups follow from its
    /// name when none are given, and every identity but `system:anonymous` is
    /// `system:authenticated`.
    pub fn impersonate(&self, user: &UserInfo, target: &str, groups: &[String]) -> Result<UserInfo, Status> {
        let account = target.strip_prefix("system:serviceaccount:").and_then(|r| r.split_once(':'));
        let mut checks: Vec<(&str, &str, &str)> = match account {
            Some((ns, name)) => vec![("serviceaccounts", ns, name)],
            None => vec![("users", "", target)],
        };
        checks.extend(groups.iter().map(|g| ("groups", "", g.as_str())));
        for (resource, namespace, name) in checks {
            let a = Attributes { verb: "impersonate", group: "", resource, subresource: "", namespace, name };
            if let Decision::Deny(_) = rbac::authorize(&self.store, user, &a) {
                return Err(Status::new(403, "Forbidden", format!("{resource} {name:?} is forbidden: {}", a.forbidden_cause(&user.name)))
                    .with_details(json!({"name": name, "kind": resource})));
            }
        }
        let mut g: Vec<String> = groups.to_vec();
        if let (Some((ns, _)), true) = (account, groups.is_empty()) {
            g = vec!["system:serviceaccounts".into(), format!("system:serviceaccounts:{ns}")];
        }
        if target != "system:anonymous" && !g.iter().any(|x| x == "system:authenticated") {
            g.push("system:authenticated".into());
        }
        Ok(UserInfo { name: target.to_string(), groups: g })
    }

    /// `POST serviceaccounts/NAME/token` (`pkg/registry/core/serviceaccount/storage/token.go`):
    /// a token for the account, for the audiences asked (the API server's by default), for
    /// `spec.expirationSeconds` (default one hour, at least ten minutes), bound to a Pod,
    /// Secret or Node if asked. Nothing is stored; the token authenticates from now on.
    #[inline(never)]
    pub(super) fn create_token(&mut self, c: &Ctx, ns: &str, req: &Request) -> Result<Object, Status> {
        let mut body = req.body.clone().unwrap_or_else(|| json!({}));
        if !body.is_object() {
            return self.fail(c, "decode", Status::bad_request("the body of the request must be a TokenRequest"));
        }
        let seconds = match get(&body, &["spec", "expirationSeconds"]) {
            None | Some(Value::Null) => 3600,
            Some(v) => match v.as_i64() {
                Some(n) => n,
                None => return self.fail(c, "decode", Status::bad_request("spec.expirationSeconds must be an integer")),
            },
        };
        let mut errors = Vec::new();
        let field = "spec.expirationSeconds";
        if seconds < 600 {
            errors.push(FieldError::invalid(field, &json!(seconds), "may not specify a duration less than 10 minutes"));
        }
        if seconds > 1 << 32 {
            errors.push(FieldError::invalid(field, &json!(seconds), "may not specify a duration larger than 2^32 seconds"));
        }
        if !errors.is_empty() {
            return self.fail(c, "validation", Status::invalid(&TOKEN_REQUEST, "", &errors));
        }
        let Some(account) = self.store.get_by(api::rid::SERVICEACCOUNT, ns, &req.name).cloned() else {
            return self.fail(c, "etcd", Status::not_found(&RESOURCES[api::rid::SERVICEACCOUNT], &req.name));
        };
        let mut bound = None;
        let mut bound_claims = Vec::new();
        if let Some(r) = get(&body, &["spec", "boundObjectRef"]).filter(|r| !r.is_null()).cloned() {
            let (av, kind, name) = (get_str(&r, &["apiVersion"]).unwrap_or(""), get_str(&r, &["kind"]).unwrap_or(""), get_str(&r, &["name"]).unwrap_or(""));
            let rid = match (av, kind) {
                ("v1", "Pod") => api::rid::POD,
                ("v1", "Secret") => api::rid::SECRET,
                ("v1", "Node") => api::rid::NODE,
                _ => {
                    let group = av.rsplit_once('/').map_or("", |(g, _)| g);
                    let version = av.rsplit_once('/').map_or(av, |(_, v)| v);
                    return self.fail(c, "validation", Status::bad_request(format!("cannot bind token to object of type {group}/{version}, Kind={kind}")));
                }
            };
            let in_ns = if RESOURCES[rid].namespaced { ns } else { "" };
            let Some(obj) = self.store.get_by(rid, in_ns, name).cloned() else {
                return self.fail(c, "etcd", Status::not_found(&RESOURCES[rid], name));
            };
            if rid == api::rid::POD && get_str(&obj, &["spec", "serviceAccountName"]).unwrap_or("default") != req.name {
                let s = Status::bad_request(format!("cannot bind token for serviceaccount {:?} to pod running with different serviceaccount name.", req.name));
                return self.fail(c, "validation", s);
            }
            let want = get_str(&r, &["uid"]).unwrap_or("");
            if !want.is_empty() && want != api::uid(&obj) {
                let s = Status::new(
                    409,
                    "Conflict",
                    format!(
                        "Operation cannot be fulfilled on {kind} {name:?}: the UID in the bound object reference ({want}) does not match the UID in record. The object might have been deleted and then recreated"
                    ),
                );
                return self.fail(c, "validation", s);
            }
            // A pod's token also names the pod's node (`ServiceAccountTokenPodNodeInfo`).
            if let Some(node) = (rid == api::rid::POD).then(|| get_str(&obj, &["spec", "nodeName"])).flatten() {
                if let Some(n) = self.store.get_by(api::rid::NODE, "", node) {
                    bound_claims.push(("node".to_string(), json!({"name": node, "uid": api::uid(n)})));
                }
            }
            bound_claims.push((kind.to_ascii_lowercase(), json!({"name": name, "uid": api::uid(&obj)})));
            bound_claims.sort_stable_by(|a, b| a.0.cmp(&b.0));
            bound = Some((rid, name.to_string(), api::uid(&obj).to_string()));
        }
        let audiences = match get(&body, &["spec", "audiences"]).and_then(Value::as_array).filter(|a| !a.is_empty()) {
            Some(a) => a.clone(),
            None => vec![json!(API_AUDIENCE)],
        };
        let subject = format!("system:serviceaccount:{ns}:{}", req.name);
        let issued_at = self.now / 1000;
        let expires = issued_at + seconds as u64;
        let unix = |t: u64| crate::foundation::sim::epoch() + t as i64;
        let mut k8s = json!({"namespace": ns});
        for (k, v) in bound_claims {
            api::set(&mut k8s, &[k.as_str()], v);
        }
        api::set(&mut k8s, &["serviceaccount"], json!({"name": req.name, "uid": api::uid(&account)}));
        let jti = self.rng.uuid();
        let claims = json!({
            "aud": audiences.clone(), "exp": unix(expires), "iat": unix(issued_at), "iss": API_AUDIENCE, "jti": jti,
            "kubernetes.io": k8s, "nbf": unix(issued_at), "sub": subject,
        });
        let e = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        use base64::Engine as _;
        let token = format!("{}.{}.{}", e.encode("{\"alg\":\"RS256\",\"kid\":\"kubeloop\"}"), e.encode(claims.to_string()), e.encode("not signed by kubeloop"));
        record!(self, c, Flow::Validation, "validation", "ok", "", format!("issued a token for {subject}, valid {seconds}s"));
        let groups = ["system:serviceaccounts".to_string(), format!("system:serviceaccounts:{ns}"), "system:authenticated".to_string()];
        self.tokens.insert(token.clone(), UserInfo { name: subject, groups: groups.to_vec() });
        self.issued.insert(
            token.clone(),
            IssuedToken { namespace: ns.to_string(), name: req.name.clone(), uid: api::uid(&account).to_string(), expires: expires * 1000, bound },
        );
        self.log(c, 201, None);
        api::set(&mut body, &["apiVersion"], json!("authentication.k8s.io/v1"));
        api::set(&mut body, &["kind"], json!("TokenRequest"));
        api::set(&mut body, &["metadata", "name"], json!(req.name));
        api::set(&mut body, &["metadata", "namespace"], json!(ns));
        api::set(&mut body, &["metadata", "creationTimestamp"], Value::Null);
        api::set(&mut body, &["spec", "audiences"], Value::Array(audiences));
        api::set(&mut body, &["spec", "expirationSeconds"], json!(seconds));
        let bound_ref = get(&body, &["spec", "boundObjectRef"]).cloned().unwrap_or(Value::Null);
        api::set(&mut body, &["spec", "boundObjectRef"], bound_ref);
        api::set(&mut body, &["status"], json!({"token": token, "expirationTimestamp": rfc3339(expires * 1000)}));
        Ok(Object::new(body))
    }
}
