//! Just enough HTTP/1.1 for Kubernetes clients: requests with `Content-Length` or
//! chunked bodies, keep-alive, and responses either whole or chunked (watch streams).
//! Anything malformed is an error for the caller to answer with a `Status`, never a panic.

use std::io::{self, BufRead, Read, Write};

/// Largest request head and body accepted (the API server's default body limit is 3 MiB
/// for most writes; manifests pasted into `kubectl apply` stay far below this).
const MAX_HEAD: usize = 64 * 1024;
/// The API server's `MaxRequestBodyBytes`, 3 MiB.
pub const MAX_BODY: usize = 3 * 1024 * 1024;

fn too_large() -> ReadError {
    ReadError::Bad(413, format!("Request entity too large: limit is {MAX_BODY}"))
}

#[derive(Debug, Default)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub keep_alive: bool,
}

impl Request {
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

/// Why a request could not be read: the connection is gone, or what came was not HTTP
/// (answered with 400 or 413 before closing).
#[derive(Debug)]
pub enum ReadError {
    Closed,
    Bad(u16, String),
}

impl From<io::Error> for ReadError {
    fn from(_: io::Error) -> Self {
        ReadError::Closed
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

fn read_line(r: &mut impl BufRead, budget: &mut usize) -> Result<String, ReadError> {
    let mut line = Vec::new();
    let n = r.by_ref().take(*budget as u64 + 1).read_until(b'\n', &mut line)?;
    if n == 0 {
        return Err(ReadError::Closed);
    }
    if n > *budget {
        return Err(ReadError::Bad(431, "request header too large".into()));
    }
    *budget -= n;
    while line.last().is_some_and(|c| *c == b'\n' || *c == b'\r') {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| ReadError::Bad(400, "request head is not UTF-8".into()))
}

/// Read one request; `Err(Closed)` when the client closed the connection between requests.
pub fn read_request(r: &mut impl BufRead) -> Result<Request, ReadError> {
    let mut budget = MAX_HEAD;
    let mut first = read_line(r, &mut budget)?;
    while first.is_empty() {
        first = read_line(r, &mut budget)?;
    }
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(ReadError::Bad(400, format!("malformed request line {first:?}")));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(ReadError::Bad(505, format!("unsupported protocol {version:?}")));
    }
    let mut req = Request { method: method.to_string(), keep_alive: version == "HTTP/1.1", ..Default::default() };
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    req.path = percent_decode(path);
    req.query = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect();
    loop {
        let line = read_line(r, &mut budget)?;
        if line.is_empty() {
            break;
        }
        let Some((k, v)) = line.split_once(':') else {
            return Err(ReadError::Bad(400, format!("malformed header line {line:?}")));
        };
        req.headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    match req.header("Connection").map(str::to_ascii_lowercase).as_deref() {
        Some("close") => req.keep_alive = false,
        Some("keep-alive") => req.keep_alive = true,
        _ => {}
    }
    if req.header("Transfer-Encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        loop {
            let size_line = read_line(r, &mut budget)?;
            let size = usize::from_str_radix(size_line.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| ReadError::Bad(400, format!("malformed chunk size {size_line:?}")))?;
            if size == 0 {
                // Trailers, then the blank line.
                while !read_line(r, &mut budget)?.is_empty() {}
                break;
            }
            if size > MAX_BODY - req.body.len() {
                return Err(too_large());
            }
            let start = req.body.len();
            req.body.resize(start + size, 0);
            r.read_exact(&mut req.body[start..])?;
            let mut crlf = [0u8; 2];
            r.read_exact(&mut crlf)?;
        }
    } else if let Some(len) = req.header("Content-Length") {
        let len: usize = len.parse().map_err(|_| ReadError::Bad(400, format!("malformed Content-Length {len:?}")))?;
        if len > MAX_BODY {
            return Err(too_large());
        }
        req.body.resize(len, 0);
        r.read_exact(&mut req.body)?;
    }
    Ok(req)
}

pub fn reason_phrase(code: u16) -> &'static str {
    match code {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        409 => "Conflict",
        410 => "Gone",
        413 => "Request Entity Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
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

pub fn write_response(w: &mut impl Write, r: &Response, keep_alive: bool) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-cache, private\r\n",
        r.code,
        reason_phrase(r.code),
        r.content_type,
        r.body.len()
    );
    for (k, v) in &r.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !keep_alive {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    w.write_all(head.as_bytes())?;
    w.write_all(&r.body)?;
    w.flush()
}

/// Start a chunked response (a watch stream or a followed log).
pub fn start_chunked(w: &mut impl Write, content_type: &str) -> io::Result<()> {
    let head = format!("HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\nCache-Control: no-cache, private\r\n\r\n");
    w.write_all(head.as_bytes())?;
    w.flush()
}

pub fn write_chunk(w: &mut impl Write, data: &[u8]) -> io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    w.write_all(format!("{:x}\r\n", data.len()).as_bytes())?;
    w.write_all(data)?;
    w.write_all(b"\r\n")?;
    w.flush()
}

pub fn end_chunked(w: &mut impl Write) -> io::Result<()> {
    w.write_all(b"0\r\n\r\n")?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(raw: &str) -> Result<Request, ReadError> {
        read_request(&mut io::BufReader::new(raw.as_bytes()))
    }

    #[test]
    fn reads_queries_headers_and_bodies() {
        let r = parse("PATCH /api/v1/namespaces/default/pods/web?fieldManager=kubectl%2Dedit&dryRun=All&labelSelector=app+in+(a) HTTP/1.1\r\nContent-Type: application/merge-patch+json\r\nContent-Length: 2\r\n\r\n{}").unwrap();
        assert_eq!(r.method, "PATCH");
        assert_eq!(r.path, "/api/v1/namespaces/default/pods/web");
        assert_eq!(r.param("fieldManager"), Some("kubectl-edit"));
        assert_eq!(r.param("labelSelector"), Some("app in (a)"));
        assert_eq!(r.header("content-type"), Some("application/merge-patch+json"));
        assert_eq!(r.body, b"{}");
        let chunked = parse("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n").unwrap();
        assert_eq!(chunked.body, b"abcde");
    }

    #[test]
    fn malformed_requests_are_errors_not_panics() {
        assert!(matches!(parse(""), Err(ReadError::Closed)));
        assert!(matches!(parse("GARBAGE\r\n\r\n"), Err(ReadError::Bad(400, _))));
        assert!(matches!(parse("GET / SPDY/3\r\n\r\n"), Err(ReadError::Bad(505, _))));
        assert!(matches!(parse("GET / HTTP/1.1\r\nContent-Length: lots\r\n\r\n"), Err(ReadError::Bad(400, _))));
        assert!(matches!(parse("GET / HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n"), Err(ReadError::Bad(413, _))));
        assert!(matches!(parse("GET / HTTP/1.1\r\nContent-Length: 10\r\n\r\nab"), Err(ReadError::Closed)));
        assert!(matches!(parse("GET /%zz%4 HTTP/1.1\r\n\r\n"), Ok(r) if r.path == "/%zz%4"));
        assert!(matches!(parse("GET / HTTP/1.1\r\nno colon\r\n\r\n"), Err(ReadError::Bad(400, _))));
    }
}
