//! What the container runtime gives a container's processes: the program its `command`
//! and `args` name (with the image's `Entrypoint` and `Cmd`), its environment as the
//! kubelet builds it (`kubelet_pods.go` `makeEnvironmentVariables`), its volumes' files
//! (`pkg/volume/{configmap,secret,downwardapi,projected,emptydir}`), its `/etc/hosts` and
//! `/etc/resolv.conf`, and the network: cluster DNS names of Services and what their
//! ready endpoints answer.

use super::registry::{Behaviour, Family};
use super::shell::fs::{normalise, Content, Mount, ReadView, Tree, View};
use super::shell::{applets, Daemon, Flavour, FsError, Host, Process};
use crate::foundation::api::{self, get, get_array, get_i64, get_str};
use crate::foundation::sim::Millis;
use crate::foundation::value::Value;
use crate::loops::informer::Informer;
use base64::Engine;
use std::collections::{BTreeMap, BTreeSet};

/// What a container's program turned out to be.
pub enum Start {
    Run(Box<Process>),
    /// runc could not exec it (`StartError`, exit code 128).
    NotFound(String),
}

/// Whether an image carries a known program.
pub fn has(b: &Behaviour, name: &str) -> bool {
    (applets::TOOLS.contains(&name) && !b.lacks.iter().any(|l| l == name)) || b.programs.iter().any(|p| p == name)
}

pub fn flavour(b: &Behaviour, shell: &str) -> Flavour {
    let base = shell.rsplit('/').next().unwrap_or(shell);
    match (b.family, base) {
        (_, "bash") => Flavour::Bash,
        (Family::Busybox, _) => Flavour::Busybox,
        _ => Flavour::Dash,
    }
}

/// The command line a container runs (Docker's rules: `command` replaces `Entrypoint`,
/// `args` replace `Cmd`).
pub fn argv(spec: &Value, b: &Behaviour) -> Vec<String> {
    let strs = |k: &str| get_array(spec, &[k]).iter().filter_map(Value::as_str).map(str::to_string).collect::<Vec<_>>();
    let (command, args) = (strs("command"), strs("args"));
    match (command.is_empty(), args.is_empty()) {
        (false, _) => command.into_iter().chain(args).collect(),
        (true, false) => b.entrypoint.iter().cloned().chain(args).collect(),
        (true, true) => b.entrypoint.iter().chain(b.cmd.iter()).cloned().collect(),
    }
}

/// Turn a command line into the process that runs it.
pub fn start(argv: &[String], env: &[(String, String)], b: &Behaviour) -> Start {
    let Some(first) = argv.first() else {
        // An opaque image's own entrypoint.
        return Start::Run(Box::new(Process::command(&["/entrypoint".to_string()], env, flavour(b, "sh"))));
    };
    let base = first.rsplit('/').next().unwrap_or(first);
    let known = has(b, base) || b.server.as_ref().is_some_and(|s| b.family == Family::Opaque || s.programs.iter().any(|p| p == base || p == first));
    if !known {
        return Start::NotFound(format!(
            "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: exec: {first:?}: executable file not found in $PATH: unknown"
        ));
    }
    Start::Run(Box::new(Process::command(argv, env, flavour(b, first))))
}

/// The files every container has besides its volumes.
pub fn root_tree(pod: &Value, ip: Option<&str>, b: &Behaviour) -> Tree {
    let name = api::name(pod);
    let ns = api::namespace(pod);
    let hostname = get_str(pod, &["spec", "hostname"]).unwrap_or(name);
    let mut t = Tree { base: true, ..Tree::default() };
    let mut hosts = "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n".to_string();
    if let Some(ip) = ip {
        let sub = get_str(pod, &["spec", "subdomain"]).map(|s| format!("{hostname}.{s}.{ns}.svc.cluster.local\t")).unwrap_or_default();
        hosts.push_str(&format!("{ip}\t{sub}{hostname}\n"));
    }
    t.files.insert("/etc/hosts".into(), hosts.into());
    t.files.insert("/etc/hostname".into(), format!("{hostname}\n").into());
    t.files.insert(
        "/etc/resolv.conf".into(),
        Content::shared(&format!("search {ns}.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n")),
    );
    if let Some(root) = b.server.as_ref().and_then(|s| s.web_root.as_deref()) {
        let page = if root.contains("nginx") { NGINX_INDEX } else { "<html><body><h1>It works!</h1></body></html>\n" };
        t.files.insert(format!("{root}/index.html"), Content::shared(page));
        if root.contains("nginx") {
            t.files.insert(format!("{root}/50x.html"), Content::shared(NGINX_50X));
        }
    }
    t
}

pub const NGINX_INDEX: &str = "<!DOCTYPE html>\n<html>\n<head>\n<title>Welcome to nginx!</title>\n<style>\nhtml { color-scheme: light dark; }\nbody { width: 35em; margin: 0 auto;\nfont-family: Tahoma, Verdana, Arial, sans-serif; }\n</style>\n</head>\n<body>\n<h1>Welcome to nginx!</h1>\n<p>If you see this page, the nginx web server is successfully installed and\nworking. Further configuration is required.</p>\n\n<p>For online documentation and support please refer to\n<a href=\"http://nginx.org/\">nginx.org</a>.<br/>\nCommercial support is available at\n<a href=\"http://nginx.com/\">nginx.com</a>.</p>\n\n<p><em>Thank you for using nginx.</em></p>\n</body>\n</html>\n";
const NGINX_50X: &str = "<!DOCTYPE html>\n<html>\n<head>\n<title>Error</title>\n</head>\n<body>\n<h1>An error occurred.</h1>\n</body>\n</html>\n";
const NGINX_404: &str = "<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";

/// A downward API field (`metadata.name`, `metadata.labels['app']`, `status.podIP`, ...).
#[inline(never)]
pub fn field_ref(pod: &Value, path: &str, host_ip: &str, pod_ip: &str) -> Option<String> {
    let map_text = |m: Option<&Value>| -> String {
        m.and_then(Value::as_object)
            .map(|o| o.iter().map(|(k, v)| format!("{k}=\"{}\"", v.as_str().unwrap_or(""))).collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    };
    if let Some(rest) = path.strip_prefix("metadata.labels['").and_then(|r| r.strip_suffix("']")) {
        return Some(get_str(pod, &["metadata", "labels", rest]).unwrap_or("").to_string());
    }
    if let Some(rest) = path.strip_prefix("metadata.annotations['").and_then(|r| r.strip_suffix("']")) {
        return Some(get_str(pod, &["metadata", "annotations", rest]).unwrap_or("").to_string());
    }
    Some(match path {
        "metadata.name" => api::name(pod).to_string(),
        "metadata.namespace" => api::namespace(pod).to_string(),
        "metadata.uid" => api::uid(pod).to_string(),
        "metadata.labels" => map_text(get(pod, &["metadata", "labels"])),
        "metadata.annotations" => map_text(get(pod, &["metadata", "annotations"])),
        "spec.nodeName" => get_str(pod, &["spec", "nodeName"]).unwrap_or("").to_string(),
        "spec.serviceAccountName" => get_str(pod, &["spec", "serviceAccountName"]).unwrap_or("").to_string(),
        "status.hostIP" | "status.hostIPs" => host_ip.to_string(),
        "status.podIP" | "status.podIPs" => pod_ip.to_string(),
        _ => return None,
    })
}

/// `resourceFieldRef`: a container's request or limit in units of `divisor` (rounded up);
/// a missing limit reads as the node's allocatable.
#[inline(never)]
pub fn resource_ref(pod: &Value, r: &Value, node_alloc: &Value) -> Option<String> {
    let res = get_str(r, &["resource"])?;
    let cname = get_str(r, &["containerName"]);
    let c = get_array(pod, &["spec", "containers"])
        .iter()
        .chain(get_array(pod, &["spec", "initContainers"]))
        .find(|c| cname.is_none_or(|n| get_str(c, &["name"]) == Some(n)))?;
    let (kind, name) = res.split_once('.')?;
    let q = get_str(c, &["resources", kind, name]).or_else(|| if kind == "limits" { get_str(node_alloc, &[name]) } else { None }).unwrap_or("0");
    let milli = crate::foundation::quantity::parse_milli(q)?;
    let divisor = get(r, &["divisor"])
        .map(|d| match d {
            Value::String(s) => s.to_string(),
            other => other.to_string(),
        })
        .and_then(|d| crate::foundation::quantity::parse_milli(&d))
        .filter(|d| *d > 0)
        .unwrap_or(1000);
    Some(((milli + divisor - 1) / divisor).to_string())
}

/// Decode a Secret's value.
fn secret_value(v: &Value) -> String {
    let s = v.as_str().unwrap_or("");
    base64::engine::general_purpose::STANDARD.decode(s).ok().map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
}

/// Everything a volume's contents can come from.
pub struct Sources<'a> {
    pub configmaps: &'a Informer,
    pub secrets: &'a Informer,
    pub host_ip: &'a str,
    pub pod_ip: &'a str,
    pub node_alloc: &'a Value,
}

impl Sources<'_> {
    /// A ConfigMap's or Secret's values, the same in every pod that mounts them: shared.
    fn items(&self, src: &Value, data: BTreeMap<String, String>, out: &mut BTreeMap<String, Content>, prefix: &str) {
        let items = get_array(src, &["items"]);
        if items.is_empty() {
            for (k, v) in data {
                out.insert(format!("{prefix}{k}"), Content::shared(&v));
            }
        } else {
            for it in items {
                let (k, path) = (get_str(it, &["key"]).unwrap_or(""), get_str(it, &["path"]).unwrap_or(""));
                if let Some(v) = data.get(k) {
                    out.insert(format!("{prefix}{path}"), Content::shared(v));
                }
            }
        }
    }
    fn configmap(&self, ns: &str, src: &Value, out: &mut BTreeMap<String, Content>) {
        let Some(cm) = self.configmaps.get(ns, get_str(src, &["name"]).unwrap_or("")) else { return };
        let mut data: BTreeMap<String, String> = BTreeMap::new();
        if let Some(d) = get(cm, &["data"]).and_then(Value::as_object) {
            for (k, v) in d {
                data.insert(k.to_string(), v.as_str().unwrap_or("").to_string());
            }
        }
        if let Some(d) = get(cm, &["binaryData"]).and_then(Value::as_object) {
            for (k, v) in d {
                data.insert(k.to_string(), secret_value(v));
            }
        }
        self.items(src, data, out, "");
    }
    fn secret(&self, ns: &str, name: &str, src: &Value, out: &mut BTreeMap<String, Content>) {
        let Some(s) = self.secrets.get(ns, name) else { return };
        let mut data: BTreeMap<String, String> = BTreeMap::new();
        if let Some(d) = get(s, &["data"]).and_then(Value::as_object) {
            for (k, v) in d {
                data.insert(k.to_string(), secret_value(v));
            }
        }
        self.items(src, data, out, "");
    }
    fn downward(&self, pod: &Value, src: &Value, out: &mut BTreeMap<String, Content>) {
        for it in get_array(src, &["items"]) {
            let path = get_str(it, &["path"]).unwrap_or("");
            let v = if let Some(f) = get_str(it, &["fieldRef", "fieldPath"]) {
                field_ref(pod, f, self.host_ip, self.pod_ip)
            } else if let Some(r) = get(it, &["resourceFieldRef"]) {
                resource_ref(pod, r, self.node_alloc)
            } else {
                None
            };
            if let Some(v) = v {
                out.insert(path.to_string(), v.into());
            }
        }
    }

    /// A pod volume's tree and whether it is read-only (ConfigMap, Secret, downward API
    /// and projected volumes are).
    pub fn volume(&self, pod: &Value, v: &Value) -> (Tree, bool) {
        let ns = api::namespace(pod);
        let mut files = BTreeMap::new();
        let ro = if let Some(cm) = get(v, &["configMap"]) {
            self.configmap(ns, cm, &mut files);
            true
        } else if let Some(s) = get(v, &["secret"]) {
            self.secret(ns, get_str(s, &["secretName"]).unwrap_or(""), s, &mut files);
            true
        } else if let Some(d) = get(v, &["downwardAPI"]) {
            self.downward(pod, d, &mut files);
            true
        } else if let Some(p) = get(v, &["projected"]) {
            for src in get_array(p, &["sources"]) {
                if let Some(cm) = get(src, &["configMap"]) {
                    self.configmap(ns, cm, &mut files);
                } else if let Some(s) = get(src, &["secret"]) {
                    self.secret(ns, get_str(s, &["name"]).unwrap_or(""), s, &mut files);
                } else if let Some(d) = get(src, &["downwardAPI"]) {
                    self.downward(pod, d, &mut files);
                } else if let Some(t) = get(src, &["serviceAccountToken"]) {
                    let path = get_str(t, &["path"]).unwrap_or("token");
                    files.insert(path.to_string(), service_account_token(pod).into());
                }
            }
            true
        } else {
            false
        };
        (Tree::with_files(files), ro)
    }
}

/// A token-shaped placeholder: kubeloop does not sign service account tokens.
fn service_account_token(pod: &Value) -> String {
    let claims = format!(
        "{{\"aud\":[\"https://kubernetes.default.svc.cluster.local\"],\"kubernetes.io\":{{\"namespace\":\"{}\",\"pod\":{{\"name\":\"{}\",\"uid\":\"{}\"}},\"serviceaccount\":{{\"name\":\"{}\"}}}},\"sub\":\"system:serviceaccount:{}:{}\"}}",
        api::namespace(pod),
        api::name(pod),
        api::uid(pod),
        get_str(pod, &["spec", "serviceAccountName"]).unwrap_or("default"),
        api::namespace(pod),
        get_str(pod, &["spec", "serviceAccountName"]).unwrap_or("default"),
    );
    let e = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    format!("{}.{}.{}", e.encode("{\"alg\":\"RS256\",\"kid\":\"kubeloop\"}"), e.encode(claims), e.encode("not signed by kubeloop"))
}

/// A container's mounts, in the order of its `volumeMounts`.
pub fn mounts(spec: &Value, volume_names: &[String]) -> Vec<Mount> {
    get_array(spec, &["volumeMounts"])
        .iter()
        .filter_map(|m| {
            let name = get_str(m, &["name"])?;
            let volume = volume_names.iter().position(|v| v == name)?;
            Some(Mount {
                path: get_str(m, &["mountPath"]).unwrap_or("/").to_string(),
                volume,
                sub_path: get_str(m, &["subPath"]).unwrap_or("").to_string(),
                read_only: api::get_bool(m, &["readOnly"]).unwrap_or(false),
            })
        })
        .collect()
}

/// The Service environment variables of one Service (`pkg/kubelet/envvars`).
fn service_env(svc: &Value, out: &mut Vec<(String, String)>) {
    let ip = get_str(svc, &["spec", "clusterIP"]).unwrap_or("");
    if ip.is_empty() || ip == "None" {
        return;
    }
    let name = api::name(svc).to_ascii_uppercase().replace('-', "_");
    let ports = get_array(svc, &["spec", "ports"]);
    let Some(first) = ports.first() else { return };
    let port_of = |p: &Value| get_i64(p, &["port"]).unwrap_or(0);
    out.push((format!("{name}_SERVICE_HOST"), ip.to_string()));
    out.push((format!("{name}_SERVICE_PORT"), port_of(first).to_string()));
    for p in ports {
        if let Some(pn) = get_str(p, &["name"]) {
            out.push((format!("{name}_SERVICE_PORT_{}", pn.to_ascii_uppercase().replace('-', "_")), port_of(p).to_string()));
        }
    }
    let proto = |p: &Value| get_str(p, &["protocol"]).unwrap_or("TCP").to_string();
    out.push((format!("{name}_PORT"), format!("{}://{ip}:{}", proto(first).to_ascii_lowercase(), port_of(first))));
    for p in ports {
        let (pr, n) = (proto(p), port_of(p));
        let prefix = format!("{name}_PORT_{n}_{pr}");
        out.push((prefix.clone(), format!("{}://{ip}:{n}", pr.to_ascii_lowercase())));
        out.push((format!("{prefix}_PROTO"), pr.to_ascii_lowercase()));
        out.push((format!("{prefix}_PORT"), n.to_string()));
        out.push((format!("{prefix}_ADDR"), ip.to_string()));
    }
}

/// Expand `$(VAR)` references in an env value (`third_party/forked/golang/expansion`).
fn expand_refs(s: &str, env: &[(String, String)]) -> String {
    let mut out = String::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < s.len() {
        if b[i] == b'$' && i + 1 < s.len() {
            if b[i + 1] == b'$' {
                out.push('$');
                i += 2;
                continue;
            }
            if b[i + 1] == b'(' {
                if let Some(end) = s[i + 2..].find(')') {
                    let name = &s[i + 2..i + 2 + end];
                    match env.iter().rev().find(|(k, _)| k == name) {
                        Some((_, v)) => out.push_str(v),
                        None => out.push_str(&s[i..i + 3 + end]),
                    }
                    i += 3 + end;
                    continue;
                }
            }
        }
        let ch = s[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// A container's environment: the image's `PATH`, `HOSTNAME`, the Service variables of
/// its namespace (and the `kubernetes` Service's), `envFrom`, then `env`.
pub fn environment(pod: &Value, spec: &Value, services: &Informer, src: &Sources, alloc: &Value) -> Vec<(String, String)> {
    let ns = api::namespace(pod);
    let mut env: Vec<(String, String)> = vec![("PATH".into(), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into())];
    env.push(("HOSTNAME".into(), get_str(pod, &["spec", "hostname"]).unwrap_or(api::name(pod)).to_string()));
    let links = api::get_bool(pod, &["spec", "enableServiceLinks"]).unwrap_or(true);
    let mut svc_env = Vec::new();
    for s in services.list(None) {
        let in_ns = api::namespace(s) == ns;
        let master = api::namespace(s) == "default" && api::name(s) == "kubernetes";
        if master || (links && in_ns) {
            service_env(s, &mut svc_env);
        }
    }
    let mut user: Vec<(String, String)> = Vec::new();
    for e in get_array(spec, &["envFrom"]) {
        let prefix = get_str(e, &["prefix"]).unwrap_or("");
        let mut data = BTreeMap::new();
        if let Some(r) = get(e, &["configMapRef"]) {
            if let Some(cm) = src.configmaps.get(ns, get_str(r, &["name"]).unwrap_or("")) {
                for (k, v) in get(cm, &["data"]).and_then(Value::as_object).into_iter().flatten() {
                    data.insert(k.to_string(), v.as_str().unwrap_or("").to_string());
                }
            }
        }
        if let Some(r) = get(e, &["secretRef"]) {
            if let Some(s) = src.secrets.get(ns, get_str(r, &["name"]).unwrap_or("")) {
                for (k, v) in get(s, &["data"]).and_then(Value::as_object).into_iter().flatten() {
                    data.insert(k.to_string(), secret_value(v));
                }
            }
        }
        for (k, v) in data {
            user.push((format!("{prefix}{k}"), v));
        }
    }
    for e in get_array(spec, &["env"]) {
        let Some(name) = get_str(e, &["name"]) else { continue };
        let value = if let Some(v) = get_str(e, &["value"]) {
            let visible: Vec<(String, String)> = svc_env.iter().chain(user.iter()).cloned().collect();
            Some(expand_refs(v, &visible))
        } else if let Some(vf) = get(e, &["valueFrom"]) {
            if let Some(f) = get_str(vf, &["fieldRef", "fieldPath"]) {
                field_ref(pod, f, src.host_ip, src.pod_ip)
            } else if let Some(r) = get(vf, &["resourceFieldRef"]) {
                let mut r = r.clone();
                if get_str(&r, &["containerName"]).is_none() {
                    r["containerName"] = Value::String(get_str(spec, &["name"]).unwrap_or("").into());
                }
                resource_ref(pod, &r, alloc)
            } else if let Some(r) = get(vf, &["configMapKeyRef"]) {
                src.configmaps
                    .get(ns, get_str(r, &["name"]).unwrap_or(""))
                    .and_then(|cm| get_str(cm, &["data", get_str(r, &["key"]).unwrap_or("")]).map(str::to_string))
            } else if let Some(r) = get(vf, &["secretKeyRef"]) {
                src.secrets.get(ns, get_str(r, &["name"]).unwrap_or("")).and_then(|s| get(s, &["data", get_str(r, &["key"]).unwrap_or("")]).map(secret_value))
            } else {
                None
            }
        } else {
            Some(String::new())
        };
        if let Some(v) = value {
            user.retain(|(k, _)| k != name);
            user.push((name.to_string(), v));
        }
    }
    for (k, v) in svc_env {
        if !user.iter().any(|(u, _)| *u == k) {
            env.push((k, v));
        }
    }
    env.extend(user);
    if !env.iter().any(|(k, _)| k == "HOME") {
        env.push(("HOME".into(), "/root".into()));
    }
    env
}

/// What a pod IP answers on a port for a path: (status, body) or the connect error.
pub type Backend<'a> = dyn Fn(&str, u16, &str) -> Result<(u16, String), String> + 'a;

/// How a container's program reaches the cluster: DNS and connections, read from the
/// kubelet's informers and the other pods' runtimes.
pub struct Net<'a> {
    pub namespace: &'a str,
    pub services: &'a Informer,
    pub slices: &'a Informer,
    /// A pod IP's servers: the port answers and the server's documents.
    pub backend: &'a Backend<'a>,
    /// The pod IP and port of each request a server answered, so that the kubelet can
    /// charge its CPU to the container that served it.
    pub served: &'a std::cell::RefCell<Vec<(String, u16)>>,
    /// Varies kube-proxy's choice of endpoint between callers and moments.
    pub seed: u64,
}

impl Net<'_> {
    fn service_by_name(&self, name: &str) -> Option<(&Value, String)> {
        let labels: Vec<&str> = name.trim_end_matches('.').split('.').collect();
        let (svc, ns) = match labels.as_slice() {
            [s] => (*s, self.namespace),
            [s, n] | [s, n, "svc"] | [s, n, "svc", "cluster", "local"] => (*s, *n),
            _ => return None,
        };
        let obj = self.services.get(ns, svc)?;
        Some((obj.as_ref(), format!("{svc}.{ns}.svc.cluster.local")))
    }

    /// Ready endpoints of a Service: (pod IP, port by name and number).
    fn ready_endpoints(&self, svc: &Value) -> Vec<(String, Vec<(String, i64)>)> {
        let (ns, name) = (api::namespace(svc), api::name(svc));
        let mut out = Vec::new();
        for s in self.slices.list(Some(ns)) {
            if get_str(s, &["metadata", "labels", "kubernetes.io/service-name"]) != Some(name) {
                continue;
            }
            let ports: Vec<(String, i64)> =
                get_array(s, &["ports"]).iter().map(|p| (get_str(p, &["name"]).unwrap_or("").to_string(), get_i64(p, &["port"]).unwrap_or(0))).collect();
            for e in get_array(s, &["endpoints"]) {
                if api::get_bool(e, &["conditions", "ready"]) == Some(false) {
                    continue;
                }
                for a in get_array(e, &["addresses"]).iter().filter_map(Value::as_str) {
                    out.push((a.to_string(), ports.clone()));
                }
            }
        }
        out
    }

    pub fn resolve(&self, name: &str) -> Option<(String, String)> {
        let name = name.trim_end_matches('.');
        if let Some((svc, fqdn)) = self.service_by_name(name) {
            let ip = get_str(svc, &["spec", "clusterIP"]).unwrap_or("");
            if ip == "None" || ip.is_empty() {
                let first = self.ready_endpoints(svc).into_iter().next()?;
                return Some((fqdn, first.0));
            }
            return Some((fqdn, ip.to_string()));
        }
        // A StatefulSet pod behind a headless Service: HOST.SVC[.NS[.svc.cluster.local]].
        let labels: Vec<&str> = name.split('.').collect();
        if labels.len() >= 2 {
            if let Some((svc, fqdn)) = self.service_by_name(&labels[1..].join(".")) {
                for s in self.slices.list(Some(api::namespace(svc))) {
                    if get_str(s, &["metadata", "labels", "kubernetes.io/service-name"]) != Some(api::name(svc)) {
                        continue;
                    }
                    for e in get_array(s, &["endpoints"]) {
                        if get_str(e, &["hostname"]) == Some(labels[0]) {
                            let ip = get_array(e, &["addresses"]).first().and_then(Value::as_str)?.to_string();
                            return Some((format!("{}.{fqdn}", labels[0]), ip));
                        }
                    }
                }
            }
        }
        // The world outside the cluster.
        let public = labels.len() >= 2 && !name.ends_with(".local") && labels.last().is_some_and(|t| t.chars().all(|c| c.is_ascii_alphabetic()));
        public.then(|| (name.to_string(), public_address(name)))
    }

    /// Where kube-proxy sends a connection to a Service's ClusterIP and port: one of its
    /// ready endpoints (Err when none, or no such port); None for an address that is not
    /// a Service's.
    pub fn backend(&self, addr: &str, port: u16) -> Option<Result<(String, u16), String>> {
        let svc = self.services.list(None).find(|s| get_str(s, &["spec", "clusterIP"]) == Some(addr))?;
        let sp = get_array(svc, &["spec", "ports"]).iter().find(|p| get_i64(p, &["port"]) == Some(port as i64)).cloned();
        let Some(sp) = sp else { return Some(Err("Connection refused".into())) };
        let pname = get_str(&sp, &["name"]).unwrap_or("").to_string();
        let eps = self.ready_endpoints(svc);
        if eps.is_empty() {
            return Some(Err("Connection refused".into()));
        }
        // kube-proxy picks one ready endpoint per connection at random (iptables'
        // `statistic` match); here a hash of the caller, the moment and the count.
        let n = self.served.borrow().len() as u64;
        let pick = (self.seed ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_mul(0xff51_afd7_ed55_8ccd) >> 33;
        let (ip, ports) = &eps[(pick % eps.len() as u64) as usize];
        let target = ports.iter().find(|(n, _)| *n == pname).map(|(_, p)| *p).unwrap_or(port as i64);
        Some(Ok((ip.clone(), target as u16)))
    }

    pub fn http(&self, host: &str, addr: &str, port: u16, path: &str) -> Result<(u16, String), String> {
        if let Some(to) = self.backend(addr, port) {
            let (ip, port) = to?;
            return self.answered(&ip, port, path);
        }
        if addr.starts_with("93.184.") {
            return Ok((200, format!("<html><body><p>kubeloop simulates the Internet: this page stands in for http://{host}{path}</p></body></html>\n")));
        }
        self.answered(addr, port, path)
    }

    fn answered(&self, ip: &str, port: u16, path: &str) -> Result<(u16, String), String> {
        let r = (self.backend)(ip, port, path);
        if r.is_ok() {
            self.served.borrow_mut().push((ip.to_string(), port));
        }
        r
    }
}

/// A stable address for a public name.
fn public_address(name: &str) -> String {
    let h = name.bytes().fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32));
    format!("93.184.{}.{}", 215 + (h % 2), 1 + (h >> 8) % 250)
}

/// What a server answers to `GET path` on `port`, from the files its container sees (a
/// fixed reply names the pod's `{hostname}` where the image's server does).
#[allow(clippy::too_many_arguments)]
pub fn serve_http(server: &Daemon, b: &Behaviour, view: &ReadView, uptime: Millis, port: u16, path: &str, hostname: &str) -> Result<(u16, String), String> {
    let listens = server.ports.is_empty() || server.ports.contains(&port);
    if !listens {
        return Err("Connection refused".into());
    }
    if b.unhealthy_after_ms.is_some_and(|t| uptime >= t) {
        return Ok((500, format!("error: {:.6}", uptime as f64 / 1000.0)));
    }
    let root = b.server.as_ref().and_then(|s| s.web_root.clone());
    match root {
        Some(root) => {
            let clean = path.split('?').next().unwrap_or("/");
            let mut file = normalise(&format!("{root}/{clean}"));
            if clean.ends_with('/') || view.kind(&file) == Some(true) {
                file = normalise(&format!("{file}/index.html"));
            }
            match view.read(&file) {
                Ok(body) => Ok((200, body)),
                Err(FsError::IsDir) => Ok((403, String::new())),
                Err(_) => Ok((404, NGINX_404.to_string())),
            }
        }
        None => Ok((200, b.reply.as_deref().unwrap_or_default().replace("{hostname}", hostname))),
    }
}

/// The kubelet's side of [`Host`] for one container.
pub struct CtrHost<'a> {
    pub now: Millis,
    pub hostname: String,
    pub view: View<'a>,
    pub out: &'a mut Vec<String>,
    /// For a container's log: when each line of `out` was written.
    pub times: Option<&'a mut Vec<Millis>>,
    /// For `kubectl exec`: the stream (1 stdout, 2 stderr) of each line of `out`.
    pub streams: Option<&'a mut Vec<u8>>,
    pub alive: &'a mut BTreeSet<String>,
    pub net: &'a Net<'a>,
    pub image: &'a Behaviour,
    pub limit: Option<u64>,
    pub max_lines: usize,
    /// The pod's own address, and this container's server with its uptime (`localhost`).
    pub pod_ip: String,
    pub local: Option<(Daemon, Millis)>,
}

impl Host for CtrHost<'_> {
    fn now(&self) -> Millis {
        self.now
    }
    fn hostname(&self) -> String {
        self.hostname.clone()
    }
    fn read(&self, path: &str) -> Result<String, FsError> {
        self.view.read(path)
    }
    fn write(&mut self, path: &str, data: &str, append: bool) -> Result<(), FsError> {
        self.view.write(path, data, append)
    }
    fn remove(&mut self, path: &str, recursive: bool) -> Result<(), FsError> {
        self.view.remove(path, recursive)
    }
    fn mkdir(&mut self, path: &str, parents: bool) -> Result<(), FsError> {
        self.view.mkdir(path, parents)
    }
    fn list(&self, path: &str) -> Result<Vec<(String, bool)>, FsError> {
        self.view.list(path)
    }
    fn kind(&self, path: &str) -> Option<bool> {
        self.view.kind(path)
    }
    fn resolve(&self, name: &str) -> Option<(String, String)> {
        if name == "localhost" {
            return Some(("localhost".into(), "127.0.0.1".into()));
        }
        self.net.resolve(name)
    }
    fn http(&self, host: &str, addr: &str, port: u16, path: &str) -> Result<(u16, String), String> {
        // Through a Service to this very pod (hairpin traffic, which kube-proxy lets
        // through): the pod's own server answers.
        let (addr, port) = match self.net.backend(addr, port) {
            Some(to) => to?,
            None => (addr.to_string(), port),
        };
        let addr = addr.as_str();
        if addr == "127.0.0.1" || addr == self.pod_ip {
            // The pod's own network namespace: this container's server answers here.
            return match &self.local {
                Some((d, uptime)) => {
                    let r = serve_http(d, self.image, &self.view.ro(), *uptime, port, path, &self.hostname);
                    if r.is_ok() {
                        self.net.served.borrow_mut().push((self.pod_ip.clone(), port));
                    }
                    r
                }
                None if addr == "127.0.0.1" => Err("Connection refused".into()),
                None => self.net.http(host, addr, port, path),
            };
        }
        self.net.http(host, addr, port, path)
    }
    fn daemon(&self, argv: &[String]) -> Option<Daemon> {
        let first = argv.first()?;
        let base = first.rsplit('/').next().unwrap_or(first);
        let s = self.image.server.as_ref()?;
        let known = s.programs.iter().any(|p| p == base || p == first);
        let opaque = self.image.family == Family::Opaque && !applets::is_program(base);
        if !(known || opaque) {
            return None;
        }
        let name = if known && base == "docker-entrypoint.sh" { s.programs.first().cloned().unwrap_or_else(|| base.to_string()) } else { base.to_string() };
        Some(Daemon { name, lines: vec![], ports: s.ports.clone(), memory: s.memory, handles_sigterm: !self.image.ignores_sigterm })
    }
    fn opaque(&self, name: &str) -> bool {
        self.image.family == Family::Opaque && !applets::is_program(name)
    }
    fn has(&self, name: &str) -> bool {
        has(self.image, name)
    }
    fn signal(&mut self, name: &str, signal: i32) -> bool {
        let hit = self.alive.contains(name) || (name == "1" && !self.alive.is_empty());
        if hit && signal != 0 {
            if name == "1" {
                self.alive.clear();
            } else {
                self.alive.remove(name);
            }
        }
        hit
    }
    fn log(&mut self, line: String) {
        if self.out.len() >= self.max_lines {
            let drop = self.out.len() + 1 - self.max_lines;
            self.out.drain(..drop);
            if let Some(s) = self.streams.as_deref_mut() {
                s.drain(..drop.min(s.len()));
            }
            if let Some(t) = self.times.as_deref_mut() {
                t.drain(..drop.min(t.len()));
            }
        }
        self.out.push(line);
        if let Some(t) = self.times.as_deref_mut() {
            t.push(self.now);
        }
        if let Some(s) = self.streams.as_deref_mut() {
            s.push(1);
        }
    }
    fn log_stderr(&mut self, line: String) {
        self.log(line);
        if let Some(s) = self.streams.as_deref_mut().and_then(|s| s.last_mut()) {
            *s = 2;
        }
    }
    fn log_unterminated(&mut self, line: String, stream: u8) {
        // An exec's output keeps the fact for its client; a container's log does not.
        let line = if self.streams.is_some() { format!("{line}{}", crate::apiserver::UNTERMINATED) } else { line };
        if stream == 2 {
            self.log_stderr(line)
        } else {
            self.log(line)
        }
    }
    fn memory_limit(&self) -> Option<u64> {
        self.limit
    }
}
