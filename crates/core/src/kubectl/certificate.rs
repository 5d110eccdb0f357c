//! `kubectl certificate approve|deny` (`k8s.io/kubectl/pkg/cmd/certificates`): a condition
//! added to a CertificateSigningRequest through its `approval` subresource, which the API
//! server lets through only for users allowed to approve for the request's signer.

use super::*;
use crate::foundation::sim::rfc3339;

/// `kubectl certificate approve|deny NAME...`.
pub(super) fn modify(api: &mut ApiServer, creds: &Credentials, f: &Flags) -> Vec<String> {
    let approve = f.positional.first().map(String::as_str) == Some("approve");
    let names = &f.positional[1..];
    if names.is_empty() {
        return vec!["error: one or more CSRs must be specified as <name> or -f <filename>".into()];
    }
    let (must_not_have, ty, reason, message, done) = if approve {
        ("Denied", "Approved", "KubectlApprove", "This CSR was approved by kubectl certificate approve.", "approved")
    } else {
        ("Approved", "Denied", "KubectlDeny", "This CSR was denied by kubectl certificate deny.", "denied")
    };
    let force = switch(f, "--force");
    let r = crate::foundation::api::rid::CSR;
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for name in names {
        // The resource builder's GET, then the typed one the condition is added to.
        if let Err(s) = api.handle(Request::new(Verb::Get, r, "", name, creds.clone())) {
            errors.push(s.kubectl_message(None, ""));
            continue;
        }
        // Conflicts are retried up to ten times, each from a fresh read.
        let mut result = Ok(());
        for attempt in 0..=10 {
            let mut csr = match api.handle(Request::new(Verb::Get, r, "", name, creds.clone())) {
                Ok(o) => (*o).clone(),
                Err(s) => {
                    result = Err(format!("error: could not find v1 version of {name}: {}", s.message));
                    break;
                }
            };
            // `addConditionIfNeeded`.
            let conds = api::get_array(&csr, &["status", "conditions"]);
            if let Some(c) = conds.iter().find(|c| get_str(c, &["type"]) == Some(must_not_have)) {
                result = Err(format!("error: certificate signing request {name:?} is already {}", get_str(c, &["type"]).unwrap_or("")));
                break;
            }
            let has = conds.iter().any(|c| get_str(c, &["type"]) == Some(ty));
            if !has {
                let mut list = conds.to_vec();
                list.push(json!({"type": ty, "status": "True", "reason": reason, "message": message, "lastUpdateTime": rfc3339(api.now)}));
                api::set(&mut csr, &["status", "conditions"], json!(list));
            }
            if has && !force {
                break;
            }
            match api.handle(Request::update(r, "", name, csr, creds.clone()).with_sub("approval")) {
                Ok(_) => break,
                Err(s) if s.code == 409 && attempt < 10 => continue,
                Err(s) => {
                    result = Err(s.kubectl_message(None, ""));
                    break;
                }
            }
        }
        match result {
            Ok(()) => out.push(format!("certificatesigningrequest.certificates.k8s.io/{name} {done}")),
            Err(e) => {
                out.push(e);
                return out;
            }
        }
    }
    out.extend(errors);
    out
}
