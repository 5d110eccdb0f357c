//! The HTTP front of `kubeloop serve`, on hyper (HTTP/1.1 and HTTP/2 over rustls): each
//! request is read whole (at most the API server's 3 MiB) into a [`Request`] that the API
//! layer answers with a whole [`Response`] or a [`Stream`] of chunks (watches, followed
//! logs). The API layer runs on blocking threads, because it waits for the cluster thread.

use bytes::Bytes;
use std::io;

/// The API server's `MaxRequestBodyBytes`, 3 MiB.
pub const MAX_BODY: usize = kubeloop_core::apiserver::MAX_REQUEST_BODY_BYTES;

#[derive(Debug, Default)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// A request from its method, its target (`/path?query`), its headers and its body.
    pub fn new(method: &str, target: &str, headers: Vec<(String, String)>, body: Vec<u8>) -> Request {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let query = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (percent_decode(k), percent_decode(v))
            })
            .collect();
        Request { method: method.to_string(), path: percent_decode(path), query, headers, body }
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    pub fn headers_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers.iter().filter(move |(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
    pub fn flag(&self, name: &str) -> bool {
        matches!(self.param(name), Some("true" | "1" | ""))
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16) {
                Ok(v) => {
                    out.push(v);
                    i += 2;
                }
                Err(_) => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A whole response.
pub struct Response {
    pub code: u16,
    pub content_type: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn new(code: u16, content_type: &str, body: Vec<u8>) -> Self {
        Response { code, content_type: content_type.to_string(), headers: vec![], body }
    }
}

/// A streamed response's body: each `send` goes to the client as it is; the client may
/// hang up at any time (`closed`), and the response ends when the stream is dropped.
pub struct Stream {
    tx: tokio::sync::mpsc::Sender<Bytes>,
}

impl Stream {
    pub fn new(tx: tokio::sync::mpsc::Sender<Bytes>) -> Stream {
        Stream { tx }
    }

    /// Send `data` (waits while the client is slow to read); an error once it has gone.
    pub fn send(&mut self, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        self.tx.blocking_send(Bytes::copy_from_slice(data)).map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))
    }

    /// Whether the client has hung up (the connection or, over HTTP/2, the stream).
    pub fn closed(&self) -> bool {
        self.tx.is_closed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_paths_and_queries() {
        let r = Request::new(
            "PATCH",
            "/api/v1/namespaces/default/pods/web?fieldManager=kubectl%2Dedit&dryRun=All&labelSelector=app+in+(a)",
            vec![("Content-Type".into(), "application/merge-patch+json".into())],
            b"{}".to_vec(),
        );
        assert_eq!(r.method, "PATCH");
        assert_eq!(r.path, "/api/v1/namespaces/default/pods/web");
        assert_eq!(r.param("fieldManager"), Some("kubectl-edit"));
        assert_eq!(r.param("labelSelector"), Some("app in (a)"));
        assert!(r.flag("dryRun") || r.param("dryRun") == Some("All"));
        assert_eq!(r.header("content-type"), Some("application/merge-patch+json"));
        // Bad escapes are kept as written, not a panic.
        assert_eq!(Request::new("GET", "/%zz%4", vec![], vec![]).path, "/%zz%4");
    }
}
