//! CertificateSigningRequests as the API server keeps them: the registry strategies
//! (`pkg/registry/certificates/certificates/strategy.go`), their validation
//! (`pkg/apis/certificates/validation`) and the CertificateApproval, CertificateSigning
//! and CertificateSubjectRestriction admission plugins. kube-controller-manager's
//! certificate controllers (signing, auto-approval, cleanup) do not run in kubeloop, and
//! the request's signature is not checked: a create says so as a warning.

use crate::apiserver::rbac::{self, Attributes, Decision, UserInfo};
use crate::apiserver::store::Store;
use crate::apiserver::validation::{dns_errors, NameKind};
use crate::foundation::api::{self, get, get_array, get_str, ResourceInfo};
use crate::foundation::pki;
use crate::foundation::status::{FieldError, FieldErrorKind, Status};
use crate::foundation::value::{json, Value};

pub const KIND: &str = "CertificateSigningRequest";
/// The signer whose certificates authenticate clients to the API server.
pub const KUBE_APISERVER_CLIENT: &str = "kubernetes.io/kube-apiserver-client";

/// What a create tells the user kubeloop leaves out.
pub const NOT_SIMULATED: &str = "kubeloop records the approval of certificates.k8s.io/v1 CertificateSigningRequests but runs none of kube-controller-manager's certificate controllers: no signer issues status.certificate, nothing is auto-approved or cleaned up, and the request's signature is not checked";

/// `KeyUsage` values (`pkg/apis/certificates/types.go`).
const USAGES: &[&str] = &[
    "signing",
    "digital signature",
    "content commitment",
    "key encipherment",
    "key agreement",
    "data encipherment",
    "cert sign",
    "crl sign",
    "encipher only",
    "decipher only",
    "any",
    "server auth",
    "client auth",
    "code signing",
    "email protection",
    "s/mime",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "timestamping",
    "ocsp signing",
    "microsoft sgc",
    "netscape sgc",
];

/// Condition types that may only be `"True"`.
const TRUE_ONLY: &[&str] = &["Approved", "Denied", "Failed"];

fn conditions(obj: &Value) -> &[Value] {
    get_array(obj, &["status", "conditions"])
}

fn count(obj: &Value, ty: &str) -> usize {
    conditions(obj).iter().filter(|c| get_str(c, &["type"]) == Some(ty)).count()
}

/// The request's PEM, decoded from the base64 of `spec.request` (the decoder has checked it).
pub fn request_pem(obj: &Value) -> Vec<u8> {
    pki::go_base64_decode(get_str(obj, &["spec", "request"]).unwrap_or("").as_bytes()).unwrap_or_default()
}

fn certificate(obj: &Value) -> Vec<u8> {
    pki::go_base64_decode(get_str(obj, &["status", "certificate"]).unwrap_or("").as_bytes()).unwrap_or_default()
}

/// `PrepareForCreate`: the requester is whoever sent the request, and nothing arrives
/// approved ("Be explicit that users cannot create pre-approved certificate requests").
pub fn prepare_for_create(obj: &mut Value, user: &UserInfo) {
    let spec = api::entry(obj, &["spec"]);
    spec.remove("uid");
    spec.remove("extra");
    spec.insert("username", json!(user.name));
    if user.groups.is_empty() {
        spec.remove("groups");
    } else {
        spec.insert("groups", json!(user.groups));
    }
    api::set(obj, &["status"], json!({}));
}

/// The strategies' `PrepareForUpdate`. The main resource keeps spec and status; `status`
/// keeps spec and the Approved and Denied conditions; `approval` takes only the
/// conditions. `status` and `approval` stamp condition times the client left out.
#[inline(never)]
pub fn prepare_for_update(sub: &str, old: &Value, new: &mut Value, now: &str) {
    let keep = |new: &mut Value, field: &str| match old.get(field) {
        Some(v) => api::set(new, &[field], v.clone()),
        None => {
            if let Some(m) = new.as_object_mut() {
                m.remove(field);
            }
        }
    };
    match sub {
        "status" => {
            keep(new, "spec");
            for ty in ["Approved", "Denied"] {
                preserve_instances(old, new, ty);
            }
            stamp_conditions(old, new, now);
        }
        "approval" => {
            stamp_conditions(old, new, now);
            let conds = get(new, &["status", "conditions"]).cloned();
            keep(new, "spec");
            keep(new, "status");
            match conds {
                Some(c) => api::set(new, &["status", "conditions"], c),
                None => {
                    if let Some(st) = new.get_mut("status").and_then(Value::as_object_mut) {
                        st.remove("conditions");
                    }
                }
            }
        }
        _ => {
            keep(new, "spec");
            keep(new, "status");
        }
    }
}

/// `preserveConditionInstances`: with as many conditions of `ty` as before, the old ones
/// are put back in place; a changed count is left for validation to refuse.
fn preserve_instances(old: &Value, new: &mut Value, ty: &str) {
    let olds: Vec<Value> = conditions(old).iter().filter(|c| get_str(c, &["type"]) == Some(ty)).cloned().collect();
    if olds.len() != count(new, ty) {
        return;
    }
    let mut olds = olds.into_iter();
    if let Some(list) = new.get_mut("status").and_then(|s| s.get_mut("conditions")).and_then(Value::as_array_mut) {
        for c in list.iter_mut().filter(|c| get_str(c, &["type"]) == Some(ty)) {
            if let Some(o) = olds.next() {
                *c = o;
            }
        }
    }
}

/// `populateConditionTimestamps`: a missing `lastUpdateTime` is now; a missing
/// `lastTransitionTime` is that of an old condition of the same type and status, else now.
fn stamp_conditions(old: &Value, new: &mut Value, now: &str) {
    let old_conds = conditions(old).to_vec();
    let Some(list) = new.get_mut("status").and_then(|s| s.get_mut("conditions")).and_then(Value::as_array_mut) else { return };
    for c in list.iter_mut() {
        if get_str(c, &["lastUpdateTime"]).is_none_or(str::is_empty) {
            api::set(c, &["lastUpdateTime"], json!(now));
        }
        if get_str(c, &["lastTransitionTime"]).is_none_or(str::is_empty) {
            let (ty, status) = (get_str(c, &["type"]), get_str(c, &["status"]));
            let earlier = old_conds
                .iter()
                .find(|o| get_str(o, &["type"]) == ty && get_str(o, &["status"]) == status)
                .and_then(|o| get_str(o, &["lastTransitionTime"]))
                .filter(|t| !t.is_empty())
                .unwrap_or(now)
                .to_string();
            api::set(c, &["lastTransitionTime"], json!(earlier));
        }
    }
}

/// Go's `%#v` of a `[]byte`, as an Invalid field error shows a bad request.
fn go_bytes(b: &[u8]) -> String {
    let items: Vec<String> = b.iter().map(|x| format!("{x:#x}")).collect();
    format!("[]byte{{{}}}", items.join(", "))
}

/// What an old object lets through that a new one may not have (`getValidationOptions`):
/// checks ratchet, so an object stored before a rule tightened can still be updated.
#[derive(Default)]
struct Options {
    both_approved_and_denied: bool,
    legacy_signer: bool,
    duplicate_condition_types: bool,
    empty_condition_type: bool,
    arbitrary_certificate: bool,
    duplicate_usages: bool,
    unknown_usages: bool,
    setting_certificate: bool,
    setting_approval: bool,
}

fn has_duplicates<'a>(items: impl Iterator<Item = &'a str>) -> bool {
    let mut seen = std::collections::BTreeSet::new();
    items.into_iter().any(|i| !seen.insert(i))
}

fn usages(obj: &Value) -> impl Iterator<Item = &str> {
    get_array(obj, &["spec", "usages"]).iter().filter_map(Value::as_str)
}

fn condition_types(obj: &Value) -> impl Iterator<Item = &str> {
    conditions(obj).iter().map(|c| get_str(c, &["type"]).unwrap_or(""))
}

fn options(new: &Value, old: Option<&Value>, sub: &str) -> Options {
    let Some(old) = old else { return Options::default() };
    Options {
        both_approved_and_denied: count(old, "Approved") > 0 && count(old, "Denied") > 0,
        legacy_signer: get_str(old, &["spec", "signerName"]) == Some("kubernetes.io/legacy-unknown"),
        duplicate_condition_types: has_duplicates(condition_types(old)),
        empty_condition_type: condition_types(old).any(str::is_empty),
        arbitrary_certificate: certificate(new) == certificate(old) || pki::check_certificate_chain(&certificate(old)).is_err(),
        duplicate_usages: has_duplicates(usages(old)),
        unknown_usages: usages(old).any(|u| !USAGES.contains(&u)),
        setting_certificate: sub == "status",
        setting_approval: sub == "approval",
    }
}

/// `ValidateCertificateSigningRequestCreate` (no `old`) and the update validations of the
/// main resource and its `status` and `approval` subresources. Metadata is checked by the
/// caller.
pub fn validate(new: &Value, old: Option<&Value>, sub: &str) -> Vec<FieldError> {
    let opts = options(new, old, sub);
    let mut errs = Vec::new();
    if let Err(e) = pki::parse_csr_pem(&request_pem(new)) {
        errs.push(FieldError::new(FieldErrorKind::Invalid, "spec.request", Some(go_bytes(&request_pem(new))), e));
    }
    let list: Vec<&str> = usages(new).collect();
    if list.is_empty() {
        errs.push(FieldError::required("spec.usages", ""));
    }
    if !opts.unknown_usages {
        let mut supported = USAGES.to_vec();
        supported.sort_unstable();
        for (i, u) in list.iter().enumerate().filter(|(_, u)| !USAGES.contains(u)) {
            errs.push(FieldError::not_supported(format!("spec.usages[{i}]"), &json!(u), &supported));
        }
    }
    if !opts.duplicate_usages {
        for (i, u) in list.iter().enumerate().filter(|(i, u)| list[..*i].contains(u)) {
            errs.push(FieldError::duplicate(format!("spec.usages[{i}]"), &json!(u)));
        }
    }
    let signer = get_str(new, &["spec", "signerName"]).unwrap_or("");
    if !opts.legacy_signer && signer == "kubernetes.io/legacy-unknown" {
        errs.push(FieldError::invalid("spec.signerName", &json!(signer), "the legacy signerName is not allowed via this API version"));
    } else {
        errs.extend(validate_signer_name("spec.signerName", signer));
    }
    if let Some(s) = api::get_i64(new, &["spec", "expirationSeconds"]).filter(|s| *s < 600) {
        errs.push(FieldError::invalid("spec.expirationSeconds", &json!(s), "may not specify a duration less than 600 seconds (10 minutes)"));
    }
    validate_conditions(new, &opts, &mut errs);
    if !opts.arbitrary_certificate {
        if let Err(e) = pki::check_certificate_chain(&certificate(new)) {
            errs.push(FieldError::invalid("status.certificate", &json!("<certificate data>"), e));
        }
    }
    if let Some(old) = old {
        for ty in TRUE_ONLY {
            if count(new, ty) < count(old, ty) {
                errs.push(FieldError::forbidden("status.conditions", format!("updates may not remove a condition of type {ty:?}")));
            }
        }
        // A changed Approved or Denied condition cannot reach here: the main and status
        // strategies put the stored ones back when their number is unchanged.
        if !opts.setting_approval {
            for ty in ["Approved", "Denied"] {
                if count(new, ty) > count(old, ty) {
                    errs.push(FieldError::forbidden("status.conditions", format!("updates may not add a condition of type {ty:?}")));
                }
            }
        }
        if certificate(new) != certificate(old) {
            if !opts.setting_certificate {
                errs.push(FieldError::forbidden("status.certificate", "updates may not set certificate content"));
            } else if !certificate(old).is_empty() {
                errs.push(FieldError::forbidden("status.certificate", "updates may not modify existing certificate content"));
            }
        }
    }
    errs
}

/// `validateConditions`, condition by condition.
fn validate_conditions(obj: &Value, opts: &Options, errs: &mut Vec<FieldError>) {
    let (mut approved, mut denied) = (false, false);
    let mut seen = std::collections::BTreeSet::new();
    for (i, c) in conditions(obj).iter().enumerate() {
        let ty = get_str(c, &["type"]).unwrap_or("");
        if !opts.empty_condition_type && ty.is_empty() {
            errs.push(FieldError::required(format!("status.conditions[{i}].type"), ""));
        }
        let allowed: &[&str] = if TRUE_ONLY.contains(&ty) { &["True"] } else { &["False", "True", "Unknown"] };
        match get_str(c, &["status"]).unwrap_or("") {
            "" => errs.push(FieldError::required(format!("status.conditions[{i}].status"), "")),
            s if !allowed.contains(&s) => errs.push(FieldError::not_supported(format!("status.conditions[{i}].status"), &json!(s), allowed)),
            _ => {}
        }
        if !opts.both_approved_and_denied {
            let clash = match ty {
                "Approved" => {
                    approved = true;
                    denied
                }
                "Denied" => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if clash {
                errs.push(FieldError::invalid("status.conditions", &json!(ty), "Approved and Denied conditions are mutually exclusive"));
            }
        }
        if !opts.duplicate_condition_types && !seen.insert(ty) {
            errs.push(FieldError::duplicate(format!("status.conditions[{i}].type"), &json!(ty)));
        }
    }
}

/// `ValidateSignerName` (`pkg/apis/core/validation`): `example.com/signer-name`, the domain
/// of two or more DNS labels, the path of DNS subdomains.
pub fn validate_signer_name(field: &str, signer: &str) -> Vec<FieldError> {
    if signer.is_empty() {
        return vec![FieldError::required(field, "")];
    }
    let segments: Vec<&str> = signer.split('/').collect();
    if segments.len() != 2 {
        return vec![FieldError::invalid(field, &json!(signer), "must be a fully qualified domain and path of the form 'example.com/signer-name'")];
    }
    let mut errs = Vec::new();
    let (domain, path) = (segments[0], segments[1]);
    if domain.len() > 253 {
        errs.push(FieldError::new(FieldErrorKind::TooLong, field, None, "must have at most 253 bytes"));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    for l in &labels {
        let found = dns_errors(field, l, NameKind::Label);
        if !found.is_empty() {
            errs.extend(found.into_iter().map(|e| FieldError::invalid(field, &json!(domain), format!("validating label {l:?}: {}", e.detail))));
            break;
        }
    }
    if labels.len() < 2 {
        errs.push(FieldError::invalid(field, &json!(domain), "should be a domain with at least two segments separated by dots"));
    }
    for l in path.split('.') {
        let found = dns_errors(field, l, NameKind::Subdomain);
        if !found.is_empty() {
            errs.extend(found.into_iter().map(|e| FieldError::invalid(field, &json!(path), format!("validating label {l:?}: {}", e.detail))));
            break;
        }
    }
    if signer.len() > 253 + 253 + 63 + 1 + 1 {
        errs.push(FieldError::new(FieldErrorKind::TooLong, field, None, format!("must have at most {} bytes", 253 + 253 + 63 + 1 + 1)));
    }
    errs
}

/// `certauthorization.IsAuthorizedForSignerName`: the verb on the `signers` resource of
/// `certificates.k8s.io`, named by the signer or by its domain and `/*`.
fn authorized_for_signer(store: &Store, user: &UserInfo, verb: &str, signer: &str) -> bool {
    let wildcard = format!("{}/*", signer.split('/').next().unwrap_or(""));
    [signer, wildcard.as_str()].iter().any(|name| {
        let a = Attributes { verb, group: "certificates.k8s.io", resource: "signers", subresource: "", namespace: "", name };
        matches!(rbac::authorize(store, user, &a), Decision::Allow)
    })
}

/// The CertificateApproval, CertificateSigning and CertificateSubjectRestriction
/// admission plugins.
pub fn admit(
    store: &Store,
    res: &ResourceInfo,
    op: &str,
    sub: &str,
    name: &str,
    user: &UserInfo,
    new: Option<&Value>,
    old: Option<&Value>,
) -> Result<(), Status> {
    if res.kind != KIND {
        return Ok(());
    }
    admit_request(store, res, op, sub, name, user, new, old)
}

/// [`admit`] for a CertificateSigningRequest, out of line (other requests never run it).
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn admit_request(
    store: &Store,
    res: &ResourceInfo,
    op: &str,
    sub: &str,
    name: &str,
    user: &UserInfo,
    new: Option<&Value>,
    old: Option<&Value>,
) -> Result<(), Status> {
    let forbid = |cause: String| Err(Status::forbidden(res, name, &cause));
    match (op, sub, new, old) {
        ("UPDATE", "approval", _, Some(old)) => {
            let signer = get_str(old, &["spec", "signerName"]).unwrap_or("");
            if !authorized_for_signer(store, user, "approve", signer) {
                return forbid(format!("user not permitted to approve requests with signerName {signer:?}"));
            }
        }
        ("UPDATE", "status", Some(new), Some(old)) => {
            if certificate(new) == certificate(old) && conditions(new) == conditions(old) {
                return Ok(());
            }
            let signer = get_str(old, &["spec", "signerName"]).unwrap_or("");
            if !authorized_for_signer(store, user, "sign", signer) {
                return forbid(format!("user not permitted to sign requests with signerName {signer:?}"));
            }
        }
        ("CREATE", "", Some(new), _) if get_str(new, &["spec", "signerName"]) == Some(KUBE_APISERVER_CLIENT) => {
            let csr = match pki::parse_csr_pem(&request_pem(new)) {
                Ok(c) => c,
                Err(e) => return forbid(format!("failed to parse CSR: {e}")),
            };
            if csr.subject_values(pki::oid::ORGANIZATION).contains(&"system:masters") {
                return forbid(format!("use of {KUBE_APISERVER_CLIENT} signer with system:masters group is not allowed"));
            }
        }
        _ => {}
    }
    Ok(())
}

/// The CONDITION column and describe's Status (`extractCSRStatus`): Denied before
/// Approved before Pending, then `,Failed` and `,Issued`.
pub fn condition_summary(obj: &Value) -> String {
    let mut s = if count(obj, "Denied") > 0 {
        "Denied"
    } else if count(obj, "Approved") > 0 {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if count(obj, "Failed") > 0 {
        s.push_str(",Failed");
    }
    if !get_str(obj, &["status", "certificate"]).unwrap_or("").is_empty() {
        s.push_str(",Issued");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer_msgs(s: &str) -> Vec<String> {
        validate_signer_name("spec.signerName", s).iter().map(|e| format!("{}: {}", e.field, e.body())).collect()
    }

    #[test]
    fn signer_names() {
        assert!(signer_msgs("kubernetes.io/kube-apiserver-client").is_empty());
        assert!(signer_msgs("example.com/my.signer").is_empty());
        assert_eq!(signer_msgs(""), ["spec.signerName: Required value"]);
        assert_eq!(
            signer_msgs("nodomain"),
            ["spec.signerName: Invalid value: \"nodomain\": must be a fully qualified domain and path of the form 'example.com/signer-name'"]
        );
        assert_eq!(signer_msgs("local/x"), ["spec.signerName: Invalid value: \"local\": should be a domain with at least two segments separated by dots"]);
        let bad = signer_msgs("Example.com/x");
        assert!(bad[0].starts_with("spec.signerName: Invalid value: \"Example.com\": validating label \"Example\": a lowercase RFC 1123 label"), "{bad:?}");
    }

    #[test]
    fn conditions_are_exclusive_and_true() {
        let csr = json!({"status": {"conditions": [
            {"type": "Approved", "status": "True"},
            {"type": "Denied", "status": "False"},
            {"type": "Approved", "status": "True"},
        ]}});
        let mut errs = Vec::new();
        validate_conditions(&csr, &Options::default(), &mut errs);
        let msgs: Vec<String> = errs.iter().map(|e| format!("{}: {}", e.field, e.body())).collect();
        assert_eq!(
            msgs,
            [
                "status.conditions[1].status: Unsupported value: \"False\": supported values: \"True\"",
                "status.conditions: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive",
                "status.conditions: Invalid value: \"Approved\": Approved and Denied conditions are mutually exclusive",
                "status.conditions[2].type: Duplicate value: \"Approved\"",
            ]
        );
    }

    #[test]
    fn summary_orders_denied_first() {
        assert_eq!(condition_summary(&json!({})), "Pending");
        assert_eq!(condition_summary(&json!({"status": {"conditions": [{"type": "Approved"}], "certificate": "x"}})), "Approved,Issued");
        assert_eq!(condition_summary(&json!({"status": {"conditions": [{"type": "Approved"}, {"type": "Denied"}, {"type": "Failed"}]}})), "Denied,Failed");
    }

    #[test]
    fn bytes_render_as_go_does() {
        assert_eq!(go_bytes(b"-\n"), "[]byte{0x2d, 0xa}");
    }
}
