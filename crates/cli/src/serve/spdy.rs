//! SPDY/3.1 framing, as kubectl's port forwarding speaks it (`github.com/moby/spdystream`,
//! which client-go and the kubelet use): since kubectl 1.31 the SPDY connection is tunneled
//! through a WebSocket (`SPDY/3.1+portforward.k8s.io`), the WebSocket's binary messages
//! carrying the SPDY byte stream. Frames are cut from that stream; header blocks are zlib
//! streams primed with SPDY's dictionary, one stream per direction for the connection's
//! life. The peer's are inflated with that dictionary; this side's are written as stored
//! (uncompressed) deflate blocks, which any inflater reads.

use miniz_oxide::inflate::core::{decompress, inflate_flags, DecompressorOxide};
use miniz_oxide::inflate::TINFLStatus;

const SYN_STREAM: u16 = 1;
const SYN_REPLY: u16 = 2;
const RST_STREAM: u16 = 3;
const PING: u16 = 6;
const GOAWAY: u16 = 7;
/// `FLAG_FIN` on a data or control frame.
pub const FIN: u8 = 0x01;
/// What one connection's header blocks may inflate to in all, and one block at most.
const MAX_HEADERS: usize = 1 << 20;
const MAX_BLOCK: usize = 64 << 10;

/// A frame a peer sent, as far as port forwarding needs it.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// A new stream and its headers (names lower-case, values as sent).
    SynStream {
        id: u32,
        headers: Vec<(String, String)>,
    },
    Data {
        id: u32,
        fin: bool,
        data: Vec<u8>,
    },
    RstStream {
        id: u32,
    },
    Ping {
        id: u32,
    },
    GoAway,
    /// SETTINGS, WINDOW_UPDATE, HEADERS, SYN_REPLY: nothing to do here.
    Other,
}

/// One connection's framing: the bytes not yet a whole frame, and both header streams.
pub struct Framer {
    input: Vec<u8>,
    inflater: Box<DecompressorOxide>,
    /// The dictionary, then everything the peer's header stream inflated to.
    window: Vec<u8>,
    inflated: usize,
    /// The peer's zlib header still to skip (2 bytes, and 4 more with a dictionary id).
    zlib_header: Option<Vec<u8>>,
    /// Whether this side's zlib header was written.
    deflating: bool,
}

impl Default for Framer {
    fn default() -> Self {
        let dict = dictionary();
        let inflated = dict.len();
        let mut window = dict;
        window.resize(inflated + MAX_BLOCK, 0);
        Framer { input: Vec::new(), inflater: Box::default(), window, inflated, zlib_header: Some(Vec::new()), deflating: false }
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

impl Framer {
    /// The frames `bytes` complete, in order; Err for a stream that is not SPDY/3.
    pub fn receive(&mut self, bytes: &[u8]) -> Result<Vec<Frame>, String> {
        self.input.extend_from_slice(bytes);
        let mut frames = Vec::new();
        while self.input.len() >= 8 {
            let len = (be32(&self.input[4..8]) & 0x00ff_ffff) as usize;
            if self.input.len() < 8 + len {
                break;
            }
            let frame: Vec<u8> = self.input.drain(..8 + len).collect();
            let (head, flags, body) = (be32(&frame[..4]), frame[4], &frame[8..]);
            if head & 0x8000_0000 == 0 {
                frames.push(Frame::Data { id: head & 0x7fff_ffff, fin: flags & FIN != 0, data: body.to_vec() });
                continue;
            }
            let version = (head >> 16) & 0x7fff;
            if version != 3 {
                return Err(format!("SPDY version {version} is not SPDY/3"));
            }
            let short = || format!("a SPDY control frame of type {} too short", head & 0xffff);
            frames.push(match (head & 0xffff) as u16 {
                SYN_STREAM => {
                    if body.len() < 10 {
                        return Err(short());
                    }
                    let id = be32(&body[..4]) & 0x7fff_ffff;
                    let block = self.inflate(&body[10..])?;
                    Frame::SynStream { id, headers: header_block(&block)? }
                }
                RST_STREAM if body.len() >= 8 => Frame::RstStream { id: be32(&body[..4]) & 0x7fff_ffff },
                PING if body.len() >= 4 => Frame::Ping { id: be32(&body[..4]) },
                GOAWAY => Frame::GoAway,
                // A header block in HEADERS or SYN_REPLY still moves the shared inflate
                // stream on.
                8 | SYN_REPLY if body.len() >= 4 => {
                    self.inflate(&body[4..])?;
                    Frame::Other
                }
                _ => Frame::Other,
            });
        }
        Ok(frames)
    }

    /// One header block of the peer's zlib stream, inflated.
    fn inflate(&mut self, mut block: &[u8]) -> Result<Vec<u8>, String> {
        if let Some(mut header) = self.zlib_header.take() {
            while header.len() < 2 || (header[1] & 0x20 != 0 && header.len() < 6) {
                let Some((&b, rest)) = block.split_first() else {
                    self.zlib_header = Some(header);
                    return Ok(Vec::new());
                };
                header.push(b);
                block = rest;
            }
            if header[1] & 0x20 != 0 && be32(&header[2..6]) != adler32(&dictionary()) {
                return Err("the SPDY header stream names another dictionary".into());
            }
        }
        let from = self.inflated;
        // Room for a block's worth more (the buffer does not wrap: back-references read
        // what is before).
        if self.inflated + MAX_BLOCK > self.window.len() {
            if self.inflated + MAX_BLOCK > MAX_HEADERS {
                return Err(format!("the SPDY header blocks of one connection exceed {MAX_HEADERS} bytes"));
            }
            self.window.resize(self.inflated + MAX_BLOCK, 0);
        }
        let flags = inflate_flags::TINFL_FLAG_HAS_MORE_INPUT | inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
        let (status, _, written) = decompress(&mut self.inflater, block, &mut self.window, self.inflated, flags);
        match status {
            TINFLStatus::NeedsMoreInput | TINFLStatus::Done => {}
            s => return Err(format!("the SPDY header block does not inflate ({s:?})")),
        }
        self.inflated += written;
        Ok(self.window[from..self.inflated].to_vec())
    }

    /// A SYN_REPLY to stream `id`, with no headers (as the kubelet replies).
    pub fn syn_reply(&mut self, id: u32) -> Vec<u8> {
        let block = self.deflate(&0u32.to_be_bytes());
        let mut body = id.to_be_bytes().to_vec();
        body.extend(block);
        control(SYN_REPLY, 0, &body)
    }

    /// A SYN_STREAM as a client opens one (for tests: kubectl's own are compressed).
    #[cfg(test)]
    pub fn syn_stream(&mut self, id: u32, headers: &[(&str, &str)]) -> Vec<u8> {
        let mut raw = (headers.len() as u32).to_be_bytes().to_vec();
        for (k, v) in headers {
            raw.extend((k.len() as u32).to_be_bytes());
            raw.extend(k.as_bytes());
            raw.extend((v.len() as u32).to_be_bytes());
            raw.extend(v.as_bytes());
        }
        let mut body = id.to_be_bytes().to_vec();
        body.extend([0, 0, 0, 0, 0, 0]);
        body.extend(self.deflate(&raw));
        control(SYN_STREAM, 0, &body)
    }

    /// A header block as a stored deflate block of this side's zlib stream, then the
    /// empty stored block of a sync flush, as zlib's writer ends each block: an inflater
    /// hands over what it has at that marker, without reading on into the next frame.
    fn deflate(&mut self, raw: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        if !std::mem::replace(&mut self.deflating, true) {
            out.extend([0x78, 0x01]);
        }
        let len = raw.len() as u16;
        out.push(0x00);
        out.extend(len.to_le_bytes());
        out.extend((!len).to_le_bytes());
        out.extend_from_slice(raw);
        out.extend([0x00, 0x00, 0x00, 0xff, 0xff]);
        out
    }
}

/// A data frame; SPDY caps a frame at 2^24 - 1 bytes.
pub fn data(id: u32, bytes: &[u8], fin: bool) -> Vec<Vec<u8>> {
    let mut frames: Vec<Vec<u8>> = bytes
        .chunks(0x00ff_ffff)
        .map(|chunk| {
            let mut f = (id & 0x7fff_ffff).to_be_bytes().to_vec();
            f.extend(((chunk.len() as u32) & 0x00ff_ffff).to_be_bytes());
            f.extend_from_slice(chunk);
            f
        })
        .collect();
    if fin {
        match frames.last_mut() {
            Some(last) => last[4] = FIN,
            None => frames.push([&(id & 0x7fff_ffff).to_be_bytes()[..], &[FIN, 0, 0, 0]].concat()),
        }
    }
    frames
}

/// A PING answered with its own id.
pub fn ping(id: u32) -> Vec<u8> {
    control(PING, 0, &id.to_be_bytes())
}

fn control(ty: u16, flags: u8, body: &[u8]) -> Vec<u8> {
    let mut f = vec![0x80, 0x03];
    f.extend(ty.to_be_bytes());
    f.push(flags);
    f.extend(&(body.len() as u32).to_be_bytes()[1..]);
    f.extend_from_slice(body);
    f
}

/// A SPDY/3 name/value header block.
fn header_block(b: &[u8]) -> Result<Vec<(String, String)>, String> {
    let bad = || "a SPDY header block cut short".to_string();
    let mut at = 0;
    let mut take = |n: usize| -> Result<&[u8], String> {
        let s = b.get(at..at + n).ok_or_else(bad)?;
        at += n;
        Ok(s)
    };
    let count = be32(take(4)?);
    let mut out = Vec::new();
    for _ in 0..count {
        let n = be32(take(4)?) as usize;
        let name = String::from_utf8_lossy(take(n)?).to_lowercase();
        let n = be32(take(4)?) as usize;
        let value = String::from_utf8_lossy(take(n)?).into_owned();
        out.push((name, value));
    }
    Ok(out)
}

fn adler32(b: &[u8]) -> u32 {
    let (mut a, mut s) = (1u32, 0u32);
    for &x in b {
        a = (a + u32::from(x)) % 65521;
        s = (s + a) % 65521;
    }
    (s << 16) | a
}

/// SPDY/3's header dictionary (section 2.6.10.1 of the draft): length-prefixed header
/// names and values, then common values run together.
fn dictionary() -> Vec<u8> {
    const WORDS: &[&str] = &[
        "options",
        "head",
        "post",
        "put",
        "delete",
        "trace",
        "accept",
        "accept-charset",
        "accept-encoding",
        "accept-language",
        "accept-ranges",
        "age",
        "allow",
        "authorization",
        "cache-control",
        "connection",
        "content-base",
        "content-encoding",
        "content-language",
        "content-length",
        "content-location",
        "content-md5",
        "content-range",
        "content-type",
        "date",
        "etag",
        "expect",
        "expires",
        "from",
        "host",
        "if-match",
        "if-modified-since",
        "if-none-match",
        "if-range",
        "if-unmodified-since",
        "last-modified",
        "location",
        "max-forwards",
        "pragma",
        "proxy-authenticate",
        "proxy-authorization",
        "range",
        "referer",
        "retry-after",
        "server",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "user-agent",
        "vary",
        "via",
        "warning",
        "www-authenticate",
        "method",
        "get",
        "status",
        "200 OK",
        "version",
        "HTTP/1.1",
        "url",
        "public",
        "set-cookie",
        "keep-alive",
        "origin",
    ];
    const TAIL: &str = "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505\
        203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized403 Forbidden404 Not Found\
        500 Internal Server Error501 Not Implemented503 Service Unavailable\
        Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT\
        chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,text/javascript,\
        publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.";
    let mut d = Vec::new();
    for w in WORDS {
        d.extend((w.len() as u32).to_be_bytes());
        d.extend(w.as_bytes());
    }
    d.extend(TAIL.as_bytes());
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dictionary_is_spdy3s() {
        let d = dictionary();
        assert_eq!(d.len(), 1423);
        assert!(d.starts_with(b"\0\0\0\x07options\0\0\0\x04head"));
        assert!(d.ends_with(b"utf-,*,enq=0."));
    }

    /// Header blocks are one zlib stream across frames, cut from the byte stream whole.
    /// (kubectl's own blocks, compressed against the dictionary, are inflated in the
    /// compatibility suite.)
    #[test]
    fn header_blocks_continue_one_stream_across_frames() {
        let mut raw = 3u32.to_be_bytes().to_vec();
        for (k, v) in [("streamtype", "data"), ("port", "80"), ("requestid", "0")] {
            raw.extend((k.len() as u32).to_be_bytes());
            raw.extend(k.as_bytes());
            raw.extend((v.len() as u32).to_be_bytes());
            raw.extend(v.as_bytes());
        }
        // This side's own writer: a stored block after the zlib header.
        let mut peer = Framer::default();
        let block = peer.deflate(&raw);
        let mut body = vec![0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        body.extend(block);
        let frame = control(SYN_STREAM, 0, &body);
        let mut f = Framer::default();
        // Split anywhere: frames are cut from the stream whole.
        let (a, b) = frame.split_at(5);
        assert_eq!(f.receive(a).unwrap(), vec![]);
        let got = f.receive(b).unwrap();
        assert_eq!(
            got,
            vec![Frame::SynStream {
                id: 1,
                headers: vec![("streamtype".into(), "data".into()), ("port".into(), "80".into()), ("requestid".into(), "0".into())]
            }]
        );
        // A second block continues the same stream (no zlib header).
        let again = peer.deflate(&0u32.to_be_bytes());
        assert_eq!(again[0], 0x00);
        let mut body = vec![0, 0, 0, 3, 0, 0, 0, 0, 0, 0];
        body.extend(again);
        assert_eq!(f.receive(&control(SYN_STREAM, 0, &body)).unwrap(), vec![Frame::SynStream { id: 3, headers: vec![] }]);
    }

    /// Whatever a client sends, the framer answers with frames or an error, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for round in 0..1_000 {
            let mut f = Framer::default();
            let len = (round % 97) + 1;
            let mut bytes = Vec::with_capacity(len);
            for _ in 0..len {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                bytes.push((seed >> 33) as u8);
            }
            // Control frames of SPDY/3 with random bodies, and raw noise.
            if round % 2 == 0 && bytes.len() >= 8 {
                bytes[0] = 0x80;
                bytes[1] = 0x03;
                let body = (bytes.len() - 8) as u32;
                bytes[5..8].copy_from_slice(&body.to_be_bytes()[1..]);
            }
            let _ = f.receive(&bytes);
        }
    }

    #[test]
    fn data_pings_and_fins() {
        let mut f = Framer::default();
        let mut bytes = data(5, b"GET / HTTP/1.1\r\n\r\n", false).concat();
        bytes.extend(data(5, b"", true).concat());
        bytes.extend(ping(7));
        assert_eq!(
            f.receive(&bytes).unwrap(),
            vec![
                Frame::Data { id: 5, fin: false, data: b"GET / HTTP/1.1\r\n\r\n".to_vec() },
                Frame::Data { id: 5, fin: true, data: vec![] },
                Frame::Ping { id: 7 }
            ]
        );
        assert_eq!(data(1, b"ab", true).concat(), vec![0, 0, 0, 1, FIN, 0, 0, 2, b'a', b'b']);
        let mut v2 = control(PING, 0, &1u32.to_be_bytes());
        v2[1] = 2;
        assert!(f.receive(&v2).is_err());
    }
}
