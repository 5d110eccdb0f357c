//! The terminal's machine: the ports `kubectl port-forward` opens on its loopback, and the
//! `curl` that reaches a pod through them (the API server authorizes `pods/portforward`,
//! the pod's kubelet connects to the port in the pod's network namespace).

use super::*;
use crate::loops::kubelet::shell::applets::reason_phrase;

/// One forwarded port: `localhost:local` to `remote` in the pod.
#[derive(Debug, Clone, PartialEq)]
pub struct Forward {
    pub local: u16,
    pub namespace: String,
    pub pod: String,
    pub uid: String,
    pub remote: u16,
}

impl Cluster {
    /// `kubectl port-forward ...` in the terminal: the forwards open (in the background,
    /// as with `&`) and kubectl's lines.
    pub(super) fn port_forward_line(&mut self, credentials: &Credentials, line: &str) -> Vec<String> {
        self.api.now = self.now;
        let creds = match crate::kubectl::line_identity(&self.api, credentials, &self.kubeconfig, line) {
            Ok(c) => c,
            Err(e) => return e,
        };
        let ns = self.kubeconfig.namespace().to_string();
        let pf = match crate::kubectl::port_forward_prepare(&mut self.api, &creds, &ns, line) {
            Ok(p) => p,
            Err(e) => return e,
        };
        if let Err(s) = self.port_forward_check(creds, &pf.namespace, &pf.pod) {
            return vec![s.kubectl_message(None, "")];
        }
        let uid = self.api.store.get_by(rid::POD, &pf.namespace, &pf.pod).map(|p| api::uid(p).to_string()).unwrap_or_default();
        // A pod that is gone ends the kubectl that forwarded to it.
        self.forwards.retain(|f| self.api.store.get_by(rid::POD, &f.namespace, &f.pod).is_some_and(|p| api::uid(p) == f.uid));
        let mut out = Vec::new();
        let mut opened = Vec::new();
        for (local, remote) in pf.ports {
            // A port the system picks: the first free one of the ephemeral range.
            let local =
                local.unwrap_or_else(|| (32768..=60999).find(|p| !self.forwards.iter().chain(&opened).any(|f: &Forward| f.local == *p)).unwrap_or(32768));
            if self.forwards.iter().chain(&opened).any(|f| f.local == local) {
                return vec![
                    format!("Unable to listen on port {local}: Listeners failed to create with the following errors: [unable to create listener: Error listen tcp4 127.0.0.1:{local}: bind: address already in use unable to create listener: Error listen tcp6 [::1]:{local}: bind: address already in use]"),
                    format!("error: unable to listen on any of the requested ports: [{{{local} {remote}}}]"),
                ];
            }
            out.push(format!("Forwarding from 127.0.0.1:{local} -> {remote}"));
            out.push(format!("Forwarding from [::1]:{local} -> {remote}"));
            opened.push(Forward { local, namespace: pf.namespace.clone(), pod: pf.pod.clone(), uid: uid.clone(), remote });
        }
        self.forwards.extend(opened);
        out
    }

    /// `curl [-s] [-S] [-f] [-i|-I] URL` on the terminal's machine: `localhost` and its
    /// forwarded ports are all it reaches.
    pub(super) fn curl_line(&mut self, line: &str) -> Vec<String> {
        let words = match crate::kubectl::split_args(line) {
            Ok(w) => w,
            Err(e) => return vec![format!("curl: {e}")],
        };
        let (mut silent, mut show_error, mut fail, mut include, mut head) = (false, false, false, false, false);
        let mut urls = Vec::new();
        for w in &words[1..] {
            match w.as_str() {
                "--silent" => silent = true,
                "--show-error" => show_error = true,
                "--fail" => fail = true,
                "--include" => include = true,
                "--head" => head = true,
                s if s.starts_with("--") => return vec![format!("curl: option {s}: kubeloop's terminal curl takes -s, -S, -f, -i and -I")],
                s if s.starts_with('-') && s.len() > 1 => {
                    for c in s[1..].chars() {
                        match c {
                            's' => silent = true,
                            'S' => show_error = true,
                            'f' => fail = true,
                            'i' => include = true,
                            'I' => head = true,
                            other => return vec![format!("curl: option -{other}: kubeloop's terminal curl takes -s, -S, -f, -i and -I")],
                        }
                    }
                }
                u => urls.push(u.to_string()),
            }
        }
        let Some(url) = urls.first() else {
            return vec!["curl: try 'curl --help' or 'curl --manual' for more information".into()];
        };
        let loud = !silent || show_error;
        let rest = url.strip_prefix("http://").unwrap_or(url);
        if rest.starts_with("https://") {
            return vec!["curl: (35) kubeloop's forwarded ports speak plain HTTP: use http://".into()];
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = match authority.rsplit_once(':').filter(|(h, _)| !h.ends_with(']') || h.starts_with('[')) {
            Some((h, p)) if !h.is_empty() && !p.contains(']') => (h, p.parse::<u16>().ok()),
            _ => (authority, Some(80)),
        };
        let Some(port) = port else {
            return vec![format!("curl: (3) URL rejected: Port number was not a decimal number between 0 and 65535")];
        };
        if !matches!(host, "localhost" | "127.0.0.1" | "[::1]") {
            let mut out = vec![];
            if loud {
                out.push(format!("curl: (6) Could not resolve host: {host}"));
            }
            out.push("(this terminal's machine is outside the cluster: it reaches pods through `kubectl port-forward` and localhost, and cluster names and IPs from inside a pod, with `kubectl exec`)".into());
            return out;
        }
        self.forwards.retain(|f| self.api.store.get_by(rid::POD, &f.namespace, &f.pod).is_some_and(|p| api::uid(p) == f.uid));
        let Some(fw) = self.forwards.iter().find(|f| f.local == port).cloned() else {
            return if loud { vec![format!("curl: (7) Failed to connect to {host} port {port} after 0 ms: Couldn't connect to server")] } else { vec![] };
        };
        self.api.now = self.now;
        let mut out = vec![format!("Handling connection for {port}")];
        match self.port_forward(&fw.namespace, &fw.pod, fw.remote, path) {
            Ok((code, body)) => {
                if fail && code >= 400 {
                    if loud {
                        out.push(format!("curl: (22) The requested URL returned error: {code}"));
                    }
                    return out;
                }
                if include || head {
                    out.push(format!("HTTP/1.1 {code} {}", reason_phrase(code)));
                    out.push(format!("content-length: {}", body.len()));
                    out.push(String::new());
                }
                if !head {
                    out.extend(body.lines().map(str::to_string));
                }
            }
            Err(e) => {
                // kubectl reports the failed stream; curl sees the connection close.
                out.push(format!(
                    "E0000 portforward.go:424] \"Unhandled Error\" err=\"an error occurred forwarding {port} -> {}: error forwarding port {} to pod {}, uid : {e}\"",
                    fw.remote, fw.remote, fw.uid
                ));
                if loud {
                    out.push("curl: (52) Empty reply from server".into());
                }
            }
        }
        out
    }
}
