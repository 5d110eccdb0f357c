//! What kubectl says about the cluster itself: `version`, `api-versions` and
//! `cluster-info` (`k8s.io/kubectl/pkg/cmd/version`, `.../apiresources/apiversions.go`,
//! `.../clusterinfo`).

use super::{get::json_indent4, Flags};
use crate::apiserver::{ApiServer, Credentials, Request, Verb};
use crate::foundation::api::{self, get_array, get_str, group_versions, rid};
use crate::foundation::sort::Sort;
use crate::foundation::status::API_SERVER;
use crate::foundation::value::json;

/// The kubectl kubeloop's terminal is, and the kustomize it would embed.
pub const CLIENT_VERSION: &str = "v1.36.0";
pub const KUSTOMIZE_VERSION: &str = "v5.8.1";

/// `kubectl version [--client] [-o yaml|json]`.
pub(super) fn version(api: &mut ApiServer, creds: &Credentials, f: &Flags) -> Vec<String> {
    if !f.positional.is_empty() {
        return vec![format!("error: extra arguments: [{}]", f.positional.join(" "))];
    }
    let client = json!({"major": "1", "minor": "36", "gitVersion": CLIENT_VERSION, "gitCommit": "", "gitTreeState": "clean", "buildDate": "", "goVersion": "", "compiler": "gc", "platform": "js/wasm"});
    let client_only = f.get("--client").is_some_and(|v| v != "false");
    let server = if client_only {
        None
    } else {
        api.handle(Request::new(Verb::Get, rid::NAMESPACE, "", "default", creds.clone())).ok().map(|_| crate::apiserver::version_info("linux/amd64"))
    };
    match f.get("--output") {
        None => {
            let mut out = vec![format!("Client Version: {CLIENT_VERSION}"), format!("Kustomize Version: {KUSTOMIZE_VERSION}")];
            if let Some(s) = server {
                out.push(format!("Server Version: {}", get_str(&s, &["gitVersion"]).unwrap_or("")));
            }
            out
        }
        Some(o @ ("yaml" | "json")) => {
            let mut v = json!({"clientVersion": client, "kustomizeVersion": KUSTOMIZE_VERSION});
            if let Some(s) = server {
                v["serverVersion"] = s;
            }
            vec![if o == "yaml" { crate::kubectl::goyaml::to_yaml(&v).trim_end().to_string() } else { json_indent4(&v) }]
        }
        Some(_) => vec!["error: --output must be 'yaml' or 'json'".into()],
    }
}

/// `kubectl api-versions`: every served group/version, sorted as bytes (so `v1` is last).
pub(super) fn api_versions(f: &Flags) -> Vec<String> {
    if !f.positional.is_empty() {
        return vec![format!("error: unexpected arguments: [{}]", f.positional.join(" ")), "See 'kubectl api-versions -h' for help and examples".into()];
    }
    let mut out: Vec<String> = group_versions().into_iter().map(|(g, v)| if g.is_empty() { v.to_string() } else { format!("{g}/{v}") }).collect();
    out.sort_stable();
    out
}

/// `kubectl cluster-info`: the control plane's address and each cluster service
/// (`kubernetes.io/cluster-service=true`) in kube-system (or `-n`).
pub(super) fn cluster_info(api: &mut ApiServer, creds: &Credentials, f: &Flags) -> Vec<String> {
    if f.positional.first().map(String::as_str) == Some("dump") {
        return vec!["error: kubeloop does not print \"kubectl cluster-info dump\" (use kubectl get and kubectl describe for what it would show)".into()];
    }
    let host = format!("https://{API_SERVER}");
    let mut out = vec![format!("Kubernetes control plane is running at {host}")];
    let ns = f.namespace.as_deref().unwrap_or("kube-system");
    let mut error = None;
    match api.handle(Request::new(Verb::List, rid::SERVICE, ns, "", creds.clone())) {
        Ok(list) => {
            for s in get_array(&list, &["items"]) {
                if api::labels(s).and_then(|l| l.get("kubernetes.io/cluster-service")).and_then(|v| v.as_str()) != Some("true") {
                    continue;
                }
                let name = api::labels(s).and_then(|l| l.get("kubernetes.io/name")).and_then(|v| v.as_str()).unwrap_or(api::name(s)).to_string();
                let ingress = get_array(s, &["status", "loadBalancer", "ingress"]);
                let link = if let Some(ing) = ingress.first() {
                    let ip = get_str(ing, &["ip"]).or(get_str(ing, &["hostname"])).unwrap_or("");
                    get_array(s, &["spec", "ports"]).iter().map(|p| format!("http://{ip}:{} ", p["port"].as_i64().unwrap_or(0))).collect::<String>()
                } else {
                    let first = get_array(s, &["spec", "ports"]).first().cloned().unwrap_or_default();
                    let port_name = get_str(&first, &["name"]).unwrap_or("");
                    let scheme = if port_name == "https" || first["port"].as_i64() == Some(443) { "https:" } else { "" };
                    let port = if port_name.is_empty() { String::new() } else { format!(":{port_name}") };
                    format!("{host}/api/v1/namespaces/{ns}/services/{scheme}{}{port}/proxy", api::name(s))
                };
                out.push(format!("{name} is running at {link}"));
            }
        }
        Err(s) => error = Some(s.kubectl_message(None, "")),
    }
    out.push(String::new());
    out.push("To further debug and diagnose cluster problems, use 'kubectl cluster-info dump'.".into());
    out.extend(error);
    out
}
