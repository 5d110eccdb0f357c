//! `pods/NAME/portforward?ports=80` over a WebSocket (`v4.channel.k8s.io`), as the
//! kubelet's `portforward/websocket.go` speaks it: two channels per port, the data
//! channel `2i` and the error channel `2i+1`, each opened by a frame holding the port
//! number (two bytes, little-endian). What a client writes on a data channel reaches the
//! simulated server listening on that port in the pod: kubeloop's servers answer HTTP
//! `GET` and `HEAD` (nginx's welcome page for nginx), and the answer comes back on the
//! same channel. Nothing listening gives containerd's `connection refused` on the error
//! channel.
//!
//! kubectl's own `port-forward` speaks SPDY/3.1 (`portforward/httpstream.go`), tunneled
//! through the WebSocket (`SPDY/3.1+portforward.k8s.io`): for each local connection it
//! opens an error stream and a data stream, both named by a `requestid` and a `port`
//! header; the data stream carries the connection both ways, and when the client closes
//! it the kubelet closes both, having written any error on the error stream first.

use super::api::{Reply, Session};
use super::{http, Shared};
use kubeloop_core::apiserver::Credentials;
use kubeloop_core::foundation::status::Status;
use kubeloop_core::loops::kubelet::shell::applets::reason_phrase;
use std::collections::BTreeMap;

/// The protocols the kubelet's WebSocket port forwarding speaks that kubeloop serves, and
/// kubectl's SPDY tunneled through a WebSocket.
const PROTOCOLS: [&str; 2] = ["v4.channel.k8s.io", SPDY];
const SPDY: &str = "SPDY/3.1+portforward.k8s.io";

/// A request held back until this much has come without a whole HTTP request in it.
const MAX_REQUEST: usize = 64 * 1024;

pub fn start(sh: &Shared, req: &http::Request, creds: Credentials, ns: &str, name: &str) -> Result<Reply, Status> {
    let offered: Vec<String> =
        req.headers_named("Sec-WebSocket-Protocol").flat_map(|v| v.split(',')).map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect();
    let mut ports = Vec::new();
    for (k, v) in &req.query {
        if k != "ports" {
            continue;
        }
        for p in v.split(',') {
            match p.trim().parse::<u16>() {
                Ok(n) if n > 0 => ports.push(n),
                _ => return Err(Status::bad_request(format!("invalid port {p:?}: ports must be between 1 and 65535"))),
            }
        }
    }
    let (ns, name) = (ns.to_string(), name.to_string());
    {
        let (ns, name) = (ns.clone(), name.clone());
        sh.with(move |c| c.port_forward_check(creds, &ns, &name)).and_then(|r| r)?;
    }
    let Some(protocol) = PROTOCOLS.iter().find(|p| offered.iter().any(|o| o == *p)) else {
        return Err(Status::bad_request(format!(
            "kubeloop serves pods/portforward over the WebSocket protocols {}; the client offered {}",
            PROTOCOLS.join(", "),
            if offered.is_empty() { "none (an SPDY upgrade without a WebSocket, which kubeloop does not serve)".to_string() } else { offered.join(", ") }
        )));
    };
    if *protocol == SPDY {
        let session = SpdyForward { ns, name, framer: super::spdy::Framer::default(), streams: BTreeMap::new(), pending: BTreeMap::new() };
        return Ok(Reply::Session { protocol: protocol.to_string(), session: Box::new(session) });
    }
    if ports.is_empty() {
        return Err(Status::bad_request("at least one port must be specified (the ports query parameter)".to_string()));
    }
    let pending = vec![Vec::new(); ports.len()];
    Ok(Reply::Session { protocol: protocol.to_string(), session: Box::new(PortForward { ns, name, ports, pending }) })
}

struct PortForward {
    ns: String,
    name: String,
    ports: Vec<u16>,
    /// What each port's data channel has carried that is not yet a whole request.
    pending: Vec<Vec<u8>>,
}

impl Session for PortForward {
    fn open(&mut self, _sh: &Shared) -> (Vec<Vec<u8>>, bool) {
        let mut out = Vec::new();
        for (i, p) in self.ports.iter().enumerate() {
            let [lo, hi] = p.to_le_bytes();
            out.push(vec![(2 * i) as u8, lo, hi]);
            out.push(vec![(2 * i + 1) as u8, lo, hi]);
        }
        (out, false)
    }

    fn receive(&mut self, sh: &Shared, message: &[u8]) -> (Vec<Vec<u8>>, bool) {
        let Some((&channel, data)) = message.split_first() else { return (Vec::new(), false) };
        let i = channel as usize / 2;
        if channel % 2 == 1 || i >= self.ports.len() {
            return (Vec::new(), false);
        }
        let port = self.ports[i];
        self.pending[i].extend_from_slice(data);
        let (written, failed) = answer(sh, &self.ns, &self.name, port, &mut self.pending[i]);
        let mut out: Vec<Vec<u8>> = written.into_iter().map(|w| [&[channel][..], &w].concat()).collect();
        out.extend(failed.map(|e| error(channel, e)));
        (out, false)
    }
}

/// What the pod's server writes back for the whole HTTP requests `pending` holds (taken
/// from it), and the error the connection ends in, if it does.
fn answer(sh: &Shared, ns: &str, name: &str, port: u16, pending: &mut Vec<u8>) -> (Vec<Vec<u8>>, Option<String>) {
    let mut out = Vec::new();
    loop {
        let failed = match next_request(pending) {
            Parsed::Incomplete if pending.len() > MAX_REQUEST => format!("kubeloop: {MAX_REQUEST} bytes reached port {port} without a whole HTTP request"),
            Parsed::Incomplete => return (out, None),
            Parsed::NotHttp => {
                format!("kubeloop: the simulated server on port {port} of pod {name} speaks HTTP only, and what was sent is not an HTTP request")
            }
            Parsed::Request { method, .. } if method != "GET" && method != "HEAD" => {
                format!("kubeloop: the simulated servers answer GET and HEAD only; a {method} request to port {port} is not simulated")
            }
            Parsed::Request { method, path, len } => {
                pending.drain(..len);
                let (ns, name) = (ns.to_string(), name.to_string());
                let answer = sh.with(move |c| c.port_forward(&ns, &name, port, &path)).unwrap_or_else(|s| Err(s.message));
                match answer {
                    Ok((code, body)) => {
                        out.push(response(&method, code, &body));
                        continue;
                    }
                    Err(e) => return (out, Some(e)),
                }
            }
        };
        pending.clear();
        return (out, Some(failed));
    }
}

/// One stream of a SPDY port forwarding: its request, whether it carries data (else
/// errors), and its port.
struct SpdyStream {
    request: String,
    data: bool,
    port: Option<u16>,
}

/// kubectl's SPDY port forwarding: streams in pairs, each pair one local connection.
struct SpdyForward {
    ns: String,
    name: String,
    framer: super::spdy::Framer,
    streams: BTreeMap<u32, SpdyStream>,
    /// What each request's data stream has carried that is not yet a whole request.
    pending: BTreeMap<String, Vec<u8>>,
}

impl SpdyForward {
    /// The id of the other stream of `request`'s pair.
    fn stream_of(&self, request: &str, data: bool) -> Option<u32> {
        self.streams.iter().find(|(_, s)| s.request == request && s.data == data).map(|(id, _)| *id)
    }

    /// End a request's pair as the kubelet does: the error (if any) on the error stream,
    /// then both streams closed.
    fn finish(&mut self, request: &str, error: Option<String>) -> Vec<u8> {
        use super::spdy::data;
        let mut out = Vec::new();
        if let Some(id) = self.stream_of(request, false) {
            out.extend(data(id, error.as_deref().unwrap_or("").as_bytes(), true).concat());
        }
        if let Some(id) = self.stream_of(request, true) {
            out.extend(data(id, b"", true).concat());
        }
        self.streams.retain(|_, s| s.request != request);
        self.pending.remove(request);
        out
    }
}

impl Session for SpdyForward {
    fn open(&mut self, _sh: &Shared) -> (Vec<Vec<u8>>, bool) {
        (Vec::new(), false)
    }

    fn receive(&mut self, sh: &Shared, message: &[u8]) -> (Vec<Vec<u8>>, bool) {
        use super::spdy::{data, ping, Frame};
        let frames = match self.framer.receive(message) {
            Ok(f) => f,
            // Not SPDY/3: nothing more can be read from the connection.
            Err(_) => return (Vec::new(), true),
        };
        let mut out: Vec<u8> = Vec::new();
        for frame in frames {
            match frame {
                Frame::SynStream { id, headers } => {
                    let header = |k: &str| headers.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap_or_default();
                    let port = header("port").parse::<u16>().ok().filter(|p| *p > 0);
                    let stream = SpdyStream { request: header("requestid"), data: header("streamtype") == "data", port };
                    out.extend(self.framer.syn_reply(id));
                    let (request, is_data) = (stream.request.clone(), stream.data);
                    self.streams.insert(id, stream);
                    // The pair is complete once both streams are open; a bad port ends it.
                    if is_data && port.is_none() && self.stream_of(&request, false).is_some() {
                        let e = format!("error parsing port {:?}: not a port between 1 and 65535", header("port"));
                        out.extend(self.finish(&request, Some(e)));
                    }
                }
                Frame::Data { id, fin, data: bytes } => {
                    let Some(s) = self.streams.get(&id) else { continue };
                    if !s.data {
                        continue;
                    }
                    let (request, port) = (s.request.clone(), s.port);
                    let Some(port) = port else { continue };
                    let pending = self.pending.entry(request.clone()).or_default();
                    pending.extend_from_slice(&bytes);
                    let (written, failed) = answer(sh, &self.ns, &self.name, port, pending);
                    for w in written {
                        out.extend(data(id, &w, false).concat());
                    }
                    if failed.is_some() || fin {
                        out.extend(self.finish(&request, failed));
                    }
                }
                Frame::RstStream { id } => {
                    self.streams.remove(&id);
                }
                Frame::Ping { id } => out.extend(ping(id)),
                Frame::GoAway => return (if out.is_empty() { Vec::new() } else { vec![out] }, true),
                Frame::Other => {}
            }
        }
        (if out.is_empty() { Vec::new() } else { vec![out] }, false)
    }
}

fn error(data_channel: u8, message: String) -> Vec<u8> {
    let mut m = vec![data_channel + 1];
    m.extend(message.into_bytes());
    m
}

/// The simulated server's answer as it writes it on the connection.
fn response(method: &str, code: u16, body: &str) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend(
        format!("HTTP/1.1 {code} {}\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: keep-alive\r\n\r\n", reason_phrase(code), body.len())
            .into_bytes(),
    );
    if method != "HEAD" {
        m.extend_from_slice(body.as_bytes());
    }
    m
}

enum Parsed {
    Incomplete,
    NotHttp,
    Request { method: String, path: String, len: usize },
}

/// The first whole HTTP/1.x request in `b`: its method, its path and its length in bytes.
fn next_request(b: &[u8]) -> Parsed {
    let Some(line_end) = b.windows(2).position(|w| w == b"\r\n") else {
        return if b.len() > 8 && !b.starts_with(b"GET ") && !b.starts_with(b"HEAD ") && !b.iter().all(u8::is_ascii_uppercase) {
            Parsed::NotHttp
        } else {
            Parsed::Incomplete
        };
    };
    let line = String::from_utf8_lossy(&b[..line_end]);
    let parts: Vec<&str> = line.split(' ').collect();
    let [method, path, version] = parts[..] else { return Parsed::NotHttp };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !method.bytes().all(|c| c.is_ascii_uppercase()) {
        return Parsed::NotHttp;
    }
    let Some(head_end) = b.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4) else { return Parsed::Incomplete };
    let head = String::from_utf8_lossy(&b[..head_end]);
    let body = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    if b.len() < head_end + body {
        return Parsed::Incomplete;
    }
    let path = if path.starts_with("http://") { path.splitn(4, '/').nth(3).map_or("/".to_string(), |p| format!("/{p}")) } else { path.to_string() };
    Parsed::Request { method: method.to_string(), path, len: head_end + body }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_cut_from_the_stream_whole() {
        assert!(matches!(next_request(b"GET / HT"), Parsed::Incomplete));
        assert!(matches!(next_request(b"GET / HTTP/1.1\r\nHost: x\r\n"), Parsed::Incomplete));
        match next_request(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\nGET /next") {
            Parsed::Request { method, path, len } => assert_eq!((method.as_str(), path.as_str(), len), ("GET", "/index.html", 37)),
            _ => panic!("a whole request"),
        }
        assert!(matches!(next_request(b"POST /x HTTP/1.1\r\nContent-Length: 4\r\n\r\nab"), Parsed::Incomplete));
        assert!(matches!(next_request(b"*1\r\n$4\r\nPING\r\n"), Parsed::NotHttp));
        assert!(matches!(next_request(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"), Parsed::NotHttp));
    }

    #[test]
    fn the_answer_is_written_as_the_server_writes_it() {
        let m = response("GET", 200, "hi\n");
        assert_eq!(&m[..], b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nhi\n");
        let head = response("HEAD", 404, "gone");
        assert!(head.ends_with(b"Content-Length: 4\r\nConnection: keep-alive\r\n\r\n"));
    }
}

#[cfg(test)]
mod session_tests {
    use super::*;
    use kubeloop_core::apiserver::rbac::UserInfo;
    use kubeloop_core::cluster::Action;

    fn forward(sh: &Shared, pod: &str, ports: &str, protocol: &str) -> Result<Reply, Status> {
        let headers = vec![("Sec-WebSocket-Protocol".to_string(), protocol.to_string()), ("Upgrade".to_string(), "websocket".to_string())];
        let query = if ports.is_empty() { String::new() } else { format!("?ports={ports}") };
        let req = http::Request::new("GET", &format!("/api/v1/namespaces/default/pods/{pod}/portforward{query}"), headers, Vec::new());
        start(sh, &req, Credentials::User(UserInfo::admin()), "default", pod)
    }

    /// A running nginx pod `web`.
    fn nginx_pod(sh: &Shared) {
        sh.with(|c| {
            let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: nginx\n    image: nginx\n";
            c.act(Credentials::User(UserInfo::admin()), Action::Apply { text: pod.to_string(), file: "pod.yaml".to_string() });
            c.run_to_quiet(60_000);
        })
        .unwrap();
    }

    #[test]
    fn an_http_request_reaches_the_pods_server_and_a_closed_port_answers_on_its_error_channel() {
        let sh = super::super::standing_cluster();
        nginx_pod(&sh);
        let Ok(Reply::Session { protocol, mut session }) = forward(&sh, "web", "80,81", "v5.channel.k8s.io, v4.channel.k8s.io") else { panic!("no session") };
        assert_eq!(protocol, "v4.channel.k8s.io");
        assert_eq!(session.open(&sh), (vec![vec![0, 80, 0], vec![1, 80, 0], vec![2, 81, 0], vec![3, 81, 0]], false));
        // A request split over two messages is answered once it is whole.
        assert_eq!(session.receive(&sh, b"\x00GET / HTTP/1.1\r\nHost: web\r\n"), (vec![], false));
        let (out, done) = session.receive(&sh, b"\x00\r\n");
        assert!(!done);
        let text = String::from_utf8_lossy(&out[0][1..]).into_owned();
        assert_eq!(out[0][0], 0);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n") && text.contains("<h1>Welcome to nginx!</h1>"), "{text}");
        let (out, _) = session.receive(&sh, b"\x02GET / HTTP/1.1\r\n\r\n");
        assert_eq!(out[0][0], 3);
        assert!(String::from_utf8_lossy(&out[0][1..]).contains("dial tcp4 127.0.0.1:81: connect: connection refused"));
        // Not HTTP: said on the error channel, not swallowed.
        let (out, _) = session.receive(&sh, b"\x00*1\r\n$4\r\nPING\r\n");
        assert!(out[0][0] == 1 && String::from_utf8_lossy(&out[0][1..]).contains("speaks HTTP only"));
    }

    /// kubectl's SPDY streams: a pair per connection, replies to both, the server's answer
    /// on the data stream, and both closed once the client closes its side.
    #[test]
    fn kubectls_spdy_streams_reach_the_pods_server() {
        use super::super::spdy::{data, Frame, Framer};
        let sh = super::super::standing_cluster();
        nginx_pod(&sh);
        let Ok(Reply::Session { protocol, mut session }) = forward(&sh, "web", "", SPDY) else { panic!("a SPDY session") };
        assert_eq!(protocol, SPDY);
        let mut client = Framer::default();
        let mut sent = client.syn_stream(1, &[("streamtype", "error"), ("port", "80"), ("requestid", "0")]);
        sent.extend(client.syn_stream(3, &[("streamtype", "data"), ("port", "80"), ("requestid", "0")]));
        let (out, over) = session.receive(&sh, &sent);
        assert!(!over);
        // Two SYN_REPLYs, which the client's framer reads as control frames.
        assert_eq!(client.receive(&out.concat()).unwrap(), vec![Frame::Other, Frame::Other]);
        let mut get = data(3, b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", false).concat();
        get.extend(data(3, b"", true).concat());
        let (out, _) = session.receive(&sh, &get);
        let frames = client.receive(&out.concat()).unwrap();
        let Frame::Data { id: 3, fin: false, data: answer } = &frames[0] else { panic!("{frames:?}") };
        assert!(String::from_utf8_lossy(answer).starts_with("HTTP/1.1 200 OK\r\n"), "{}", String::from_utf8_lossy(answer));
        assert!(String::from_utf8_lossy(answer).contains("Welcome to nginx!"));
        assert_eq!(frames[1..], [Frame::Data { id: 1, fin: true, data: vec![] }, Frame::Data { id: 3, fin: true, data: vec![] }]);
        // A closed port: the kubelet's error on the error stream, then both closed.
        let mut sent = client.syn_stream(5, &[("streamtype", "error"), ("port", "81"), ("requestid", "1")]);
        sent.extend(client.syn_stream(7, &[("streamtype", "data"), ("port", "81"), ("requestid", "1")]));
        sent.extend(data(7, b"GET / HTTP/1.1\r\n\r\n", false).concat());
        let (out, _) = session.receive(&sh, &sent);
        let frames = client.receive(&out.concat()).unwrap();
        let Some(Frame::Data { id: 5, fin: true, data: e }) = frames.get(2) else { panic!("{frames:?}") };
        assert!(String::from_utf8_lossy(e).contains("connect: connection refused"), "{}", String::from_utf8_lossy(e));
        // Pings are answered.
        let (out, _) = session.receive(&sh, &super::super::spdy::ping(9));
        assert_eq!(client.receive(&out.concat()).unwrap(), vec![Frame::Ping { id: 9 }]);
    }

    #[test]
    fn spdy_and_missing_pods_are_refused_with_the_reason() {
        let sh = super::super::standing_cluster();
        let Err(s) = forward(&sh, "nope", "80", "v4.channel.k8s.io") else { panic!("a missing pod") };
        assert_eq!((s.code, s.message.as_str()), (404, "pods \"nope\" not found"));
        nginx_pod(&sh);
        let Err(s) = forward(&sh, "web", "80", "") else { panic!("SPDY without a WebSocket") };
        assert!(s.message.contains("an SPDY upgrade without a WebSocket"), "{}", s.message);
        let Err(s) = forward(&sh, "web", "0", "v4.channel.k8s.io") else { panic!("port 0") };
        assert!(s.message.starts_with("invalid port \"0\""), "{}", s.message);
    }
}
