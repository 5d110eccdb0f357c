//! Connections: TLS (rustls) and HTTP/1.1 or HTTP/2 (hyper, chosen by ALPN) on a small
//! tokio runtime, with a cap on connections and timeouts for handshakes, request heads and
//! idle connections. Each request is read whole (at most 3 MiB) and answered by the API
//! layer on a blocking thread, since that waits for the cluster thread.

use super::{api, http, Shared};
use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full, Limited};
use hyper::body::{Body, Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use kubeloop_core::foundation::status::Status;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The most connections served at once; more are closed on accept.
const MAX_CONNECTIONS: usize = 512;
/// A TLS handshake must finish within this.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// A request head must arrive within this once it has begun.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// A connection with no request in progress for this long is closed (HTTP/2 connections
/// are also pinged at this interval).
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// Chunks of a stream waiting for a slow client, at most.
const STREAM_BACKLOG: usize = 64;

type ResponseBody = BoxBody<Bytes, Infallible>;

/// How often the accept loop looks whether the simulated API server went down or came back.
const OUTAGE_CHECK: Duration = Duration::from_millis(50);

/// Serve connections from `listener` until the process ends. While the simulated API
/// server is down the port is closed and every connection dropped, as when the real
/// process stops: clients meet `connection refused`, and watches end. When it is back, the
/// same address is listened on again.
pub fn run(listener: std::net::TcpListener, tls: Arc<rustls::ServerConfig>, shared: Arc<Shared>) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async move {
        let address = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let mut listener = Some(tokio::net::TcpListener::from_std(listener)?);
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        // Bumped at each outage; every connection ends when it changes.
        let (outage, _) = tokio::sync::watch::channel(0u64);
        loop {
            if shared.api_down() {
                if listener.take().is_some() {
                    outage.send_modify(|n| *n += 1);
                }
                tokio::time::sleep(OUTAGE_CHECK).await;
                continue;
            }
            let Some(l) = &listener else {
                match tokio::net::TcpListener::bind(address).await {
                    Ok(l) => listener = Some(l),
                    Err(_) => tokio::time::sleep(OUTAGE_CHECK).await,
                }
                continue;
            };
            let accepted = tokio::select! {
                a = l.accept() => a,
                _ = tokio::time::sleep(OUTAGE_CHECK) => continue,
            };
            let Ok((tcp, _)) = accepted else { continue };
            let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else { continue };
            let _ = tcp.set_nodelay(true);
            let (acceptor, shared) = (acceptor.clone(), Arc::clone(&shared));
            let mut ended = outage.subscribe();
            tokio::spawn(async move {
                let _slot = slot;
                let Ok(Ok(tls)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await else { return };
                let activity = Arc::new(Activity { open: AtomicUsize::new(0), since: Mutex::new(Instant::now()) });
                let watched = Arc::clone(&activity);
                let service = hyper::service::service_fn(move |req| answer(Arc::clone(&shared), Arc::clone(&activity), req));
                // The protocol is the one TLS agreed on (ALPN), so nothing waits on sniffing
                // the first bytes without a timeout.
                let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
                let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                builder.http1().timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT);
                builder.http2().timer(TokioTimer::new()).keep_alive_interval(Some(IDLE_TIMEOUT));
                let builder = if h2 { builder.http2_only() } else { builder.http1_only() };
                let connection = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
                let idle = async {
                    loop {
                        tokio::time::sleep(IDLE_CHECK).await;
                        if watched.idle_for().is_some_and(|d| d >= IDLE_TIMEOUT) {
                            return;
                        }
                    }
                };
                // Whichever ends first: the connection, its idleness (which closes it), or
                // an outage of the API server.
                tokio::select! {
                    _ = connection => {}
                    _ = idle => {}
                    _ = ended.changed() => {}
                }
            });
        }
    })
}

fn whole(r: http::Response) -> hyper::Response<ResponseBody> {
    let mut b = hyper::Response::builder().status(r.code).header("Content-Type", r.content_type).header("Cache-Control", "no-cache, private");
    for (k, v) in r.headers {
        b = b.header(k, v);
    }
    b.body(Full::new(Bytes::from(r.body)).boxed()).unwrap_or_else(|_| hyper::Response::new(Full::new(Bytes::new()).boxed()))
}

fn status(s: &Status) -> hyper::Response<ResponseBody> {
    whole(api::status_response(s))
}

/// One request: its body read whole, then the API layer's answer.
async fn answer(shared: Arc<Shared>, activity: Arc<Activity>, req: hyper::Request<Incoming>) -> Result<hyper::Response<ResponseBody>, Infallible> {
    // The connection is busy until the answer is made, or for a stream until it ends.
    let busy = Busy::new(activity);
    let (mut parts, body) = req.into_parts();
    let upgrade = parts.extensions.remove::<hyper::upgrade::OnUpgrade>();
    let too_large = || status(&Status::new(413, "RequestEntityTooLarge", format!("Request entity too large: limit is {}", http::MAX_BODY)));
    // A declared length over the limit is refused before any of the body is read.
    if body.size_hint().lower() > http::MAX_BODY as u64 {
        return Ok(too_large());
    }
    let body = match Limited::new(body, http::MAX_BODY).collect().await {
        Ok(b) => b.to_bytes().to_vec(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => return Ok(too_large()),
        Err(e) => return Ok(status(&Status::bad_request(format!("the body of the request could not be read: {e}")))),
    };
    let headers = parts.headers.iter().map(|(k, v)| (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned())).collect();
    let target = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let request = http::Request::new(parts.method.as_str(), target, headers, body);
    let for_route = Arc::clone(&shared);
    let reply = tokio::task::spawn_blocking(move || std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| api::route(&for_route, &request)))).await;
    let reply = match reply {
        Ok(Ok(r)) => r,
        _ => return Ok(status(&Status::internal("the request could not be served (a kubeloop bug); the server is still running"))),
    };
    Ok(match reply {
        api::Reply::Whole(r) => whole(r),
        reply @ (api::Reply::WebSocket { .. } | api::Reply::Session { .. }) => {
            let key = parts.headers.get("sec-websocket-key").map(|v| v.as_bytes().to_vec());
            let (Some(key), Some(upgrade)) = (key, upgrade) else {
                return Ok(status(&Status::bad_request(
                    "this request needs an HTTP/1.1 WebSocket upgrade (Connection: Upgrade, Upgrade: websocket, Sec-WebSocket-Key)",
                )));
            };
            let protocol = match &reply {
                api::Reply::WebSocket { protocol, .. } | api::Reply::Session { protocol, .. } => protocol.clone(),
                _ => String::new(),
            };
            tokio::spawn(async move {
                let _busy = busy;
                if let Ok(io) = upgrade.await {
                    let mut io = TokioIo::new(io);
                    let _ = match reply {
                        api::Reply::Session { session, .. } => websocket_session(&mut io, shared, session).await,
                        api::Reply::WebSocket { messages, .. } => websocket_send(&mut io, &messages).await,
                        _ => Ok(()),
                    };
                }
            });
            switching(&key, &protocol)
        }
        api::Reply::Stream(content_type, send) => {
            let (tx, rx) = tokio::sync::mpsc::channel(STREAM_BACKLOG);
            tokio::task::spawn_blocking(move || {
                let mut stream = http::Stream::new(tx);
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| send(&shared, &mut stream)));
            });
            let body = Chunks { rx, _busy: busy }.boxed();
            hyper::Response::builder()
                .status(200)
                .header("Content-Type", content_type)
                .header("Cache-Control", "no-cache, private")
                .body(body)
                .unwrap_or_else(|_| hyper::Response::new(Full::new(Bytes::new()).boxed()))
        }
    })
}

/// The `101 Switching Protocols` that accepts a WebSocket upgrade.
fn switching(key: &[u8], protocol: &str) -> hyper::Response<ResponseBody> {
    hyper::Response::builder()
        .status(101)
        .header("Upgrade", "websocket")
        .header("Connection", "Upgrade")
        .header("Sec-WebSocket-Accept", websocket_accept(key))
        .header("Sec-WebSocket-Protocol", protocol)
        .body(Full::new(Bytes::new()).boxed())
        .unwrap_or_else(|_| hyper::Response::new(Full::new(Bytes::new()).boxed()))
}

/// The largest message a client may send on a session.
const MAX_MESSAGE: usize = 4 << 20;

/// One whole message from the client (continuation frames joined, the mask removed):
/// its opcode and payload, or `None` when the connection ends.
async fn websocket_read<T: tokio::io::AsyncRead + Unpin>(io: &mut T, buf: &mut Vec<u8>) -> std::io::Result<Option<(u8, Vec<u8>)>> {
    use tokio::io::AsyncReadExt;
    let mut message: Option<(u8, Vec<u8>)> = None;
    loop {
        // One frame: header, extended length, mask, payload.
        let frame = loop {
            if buf.len() >= 2 {
                let (fin, opcode, masked, len7) = (buf[0] & 0x80 != 0, buf[0] & 0x0f, buf[1] & 0x80 != 0, (buf[1] & 0x7f) as usize);
                let (len, mut at) = match len7 {
                    126 if buf.len() >= 4 => (u16::from_be_bytes([buf[2], buf[3]]) as usize, 4),
                    127 if buf.len() >= 10 => (u64::from_be_bytes(buf[2..10].try_into().unwrap_or([0; 8])) as usize, 10),
                    126 | 127 => (usize::MAX, 0),
                    n => (n, 2),
                };
                if len > MAX_MESSAGE && len != usize::MAX {
                    return Err(std::io::Error::other("a WebSocket message over the limit"));
                }
                let mask_len = if masked { 4 } else { 0 };
                if len != usize::MAX && buf.len() >= at + mask_len + len {
                    let mask: Vec<u8> = buf[at..at + mask_len].to_vec();
                    at += mask_len;
                    let mut payload = buf[at..at + len].to_vec();
                    if masked {
                        for (i, b) in payload.iter_mut().enumerate() {
                            *b ^= mask[i % 4];
                        }
                    }
                    buf.drain(..at + len);
                    break (fin, opcode, payload);
                }
            }
            let mut chunk = [0u8; 16 * 1024];
            let n = io.read(&mut chunk).await?;
            if n == 0 {
                return Ok(None);
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let (fin, opcode, payload) = frame;
        match (opcode, &mut message) {
            // Control frames come whole, between the fragments of a message.
            (0x8..=0xf, _) => return Ok(Some((opcode, payload))),
            (0x0, Some((_, m))) => m.extend(payload),
            (0x0, None) => return Err(std::io::Error::other("a continuation frame with no message")),
            (op, _) => message = Some((op, payload)),
        }
        if fin {
            return Ok(message);
        }
        if message.as_ref().is_some_and(|(_, m)| m.len() > MAX_MESSAGE) {
            return Err(std::io::Error::other("a WebSocket message over the limit"));
        }
    }
}

/// A session over an accepted WebSocket: its first messages, then its answer to each
/// binary message, until it or the client ends it; pings are answered.
async fn websocket_session<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    io: &mut T,
    shared: Arc<Shared>,
    session: Box<dyn api::Session>,
) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    // The session runs on blocking threads (it waits for the cluster thread), so it is
    // handed over for each step and back.
    let mut holder = Some(session);
    let result: std::io::Result<()> = async {
        // A step is the session's opening (None), its answer to a message (Some(Some)),
        // or what it sends unasked (Some(None)).
        let step = |holder: &mut Option<Box<dyn api::Session>>, payload: Option<Option<Vec<u8>>>| {
            let mut session = holder.take();
            let sh = Arc::clone(&shared);
            tokio::task::spawn_blocking(move || {
                let r = session.as_mut().map(|s| match &payload {
                    None => s.open(&sh),
                    Some(Some(p)) => s.receive(&sh, p),
                    Some(None) => s.poll(&sh),
                });
                (session, r.unwrap_or((Vec::new(), true)))
            })
        };
        let polls = holder.as_ref().is_some_and(|s| s.polls());
        let (s, (first, mut over)) = step(&mut holder, None).await.map_err(std::io::Error::other)?;
        holder = s;
        for m in &first {
            io.write_all(&websocket_frame(0x2, m)).await?;
        }
        io.flush().await?;
        let mut buf = Vec::new();
        while !over {
            // A session that sends unasked is asked whenever the client is quiet for a
            // moment (a read cut short leaves its bytes in `buf` for the next one).
            let read = if polls {
                match tokio::time::timeout(Duration::from_millis(250), websocket_read(io, &mut buf)).await {
                    Ok(r) => Some(r?),
                    Err(_) => None,
                }
            } else {
                Some(websocket_read(io, &mut buf).await?)
            };
            let Some(read) = read else {
                let (s, (out, done)) = step(&mut holder, Some(None)).await.map_err(std::io::Error::other)?;
                holder = s;
                for m in &out {
                    io.write_all(&websocket_frame(0x2, m)).await?;
                }
                over = done;
                io.flush().await?;
                continue;
            };
            let Some((opcode, payload)) = read else { return Ok(()) };
            match opcode {
                0x8 => break,
                0x9 => io.write_all(&websocket_frame(0xA, &payload)).await?,
                0x1 | 0x2 => {
                    let (s, (out, done)) = step(&mut holder, Some(Some(payload))).await.map_err(std::io::Error::other)?;
                    holder = s;
                    for m in &out {
                        io.write_all(&websocket_frame(0x2, m)).await?;
                    }
                    over = done;
                }
                _ => {}
            }
            io.flush().await?;
        }
        io.write_all(&websocket_frame(0x8, &1000u16.to_be_bytes())).await?;
        io.flush().await
    }
    .await;
    if let Some(mut session) = holder {
        let _ = tokio::task::spawn_blocking(move || session.closed(&shared)).await;
    }
    let _ = io.shutdown().await;
    result
}

/// `Sec-WebSocket-Accept` for a key (RFC 6455 section 4.2.2).
fn websocket_accept(key: &[u8]) -> String {
    use base64::Engine;
    let mut h = sha1_smol::Sha1::new();
    h.update(key);
    h.update(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    base64::engine::general_purpose::STANDARD.encode(h.digest().bytes())
}

/// One unmasked server frame (RFC 6455 section 5.2).
fn websocket_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0x80 | opcode];
    match payload.len() {
        n if n < 126 => f.push(n as u8),
        n if n < 65_536 => {
            f.push(126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            f.push(127);
            f.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    f.extend_from_slice(payload);
    f
}

/// Send binary messages, then a normal close, and wait briefly for the client's close.
async fn websocket_send<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(io: &mut T, messages: &[Vec<u8>]) -> std::io::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // The output, then the result a moment later, as a process's streams end before its
    // exit is reported: a client that reads the result first could otherwise stop before
    // it has copied the output.
    let (last, output) = messages.split_last().map_or((None, &[][..]), |(l, o)| (Some(l), o));
    for m in output {
        io.write_all(&websocket_frame(0x2, m)).await?;
    }
    io.flush().await?;
    tokio::time::sleep(Duration::from_millis(20)).await;
    if let Some(m) = last {
        io.write_all(&websocket_frame(0x2, m)).await?;
        io.flush().await?;
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    io.write_all(&websocket_frame(0x8, &1000u16.to_be_bytes())).await?;
    io.flush().await?;
    let mut buf = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while let Ok(n) = io.read(&mut buf).await {
            if n == 0 || buf[..n].iter().any(|b| *b & 0x0f == 0x8 && *b & 0x80 != 0) {
                break;
            }
        }
    })
    .await;
    io.shutdown().await
}

/// How often a connection's idleness is looked at.
const IDLE_CHECK: Duration = Duration::from_secs(5);

/// A connection's requests in progress, and since when it has had none.
struct Activity {
    open: AtomicUsize,
    since: Mutex<Instant>,
}

impl Activity {
    /// How long the connection has been idle, if it is.
    fn idle_for(&self) -> Option<Duration> {
        if self.open.load(Ordering::SeqCst) > 0 {
            return None;
        }
        Some(self.since.lock().unwrap_or_else(|e| e.into_inner()).elapsed())
    }
}

/// One request in progress on a connection, until dropped.
struct Busy(Arc<Activity>);

impl Busy {
    fn new(activity: Arc<Activity>) -> Busy {
        activity.open.fetch_add(1, Ordering::SeqCst);
        Busy(activity)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        *self.0.since.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A streamed body: the chunks a blocking thread sends, until it drops its sender; the
/// connection counts as busy while it lasts.
struct Chunks {
    rx: tokio::sync::mpsc::Receiver<Bytes>,
    _busy: Busy,
}

impl Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx.poll_recv(cx).map(|c| c.map(|b| Ok(Frame::data(b))))
    }
}
