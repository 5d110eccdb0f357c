//! The bytes of certificate requests and certificates as the API server reads them: Go's
//! `encoding/base64` (the JSON decoding of a `[]byte` field), `encoding/pem` and the
//! structure of an X.509 certificate request (`crypto/x509.ParseCertificateRequest`, over
//! `encoding/asn1`'s DER). Signatures are not checked: kubeloop has no public-key
//! cryptography in its core, and says so where a request is created.

/// Go's `base64.StdEncoding.Decode`: padded, `\r` and `\n` skipped anywhere; the error is
/// the offset of the first byte that cannot be decoded (`illegal base64 data at input
/// byte N`).
pub fn go_base64_decode(src: &[u8]) -> Result<Vec<u8>, usize> {
    fn value(c: u8) -> Option<u8> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        })
    }
    let skip_newlines = |mut si: usize| {
        while si < src.len() && matches!(src[si], b'\n' | b'\r') {
            si += 1;
        }
        si
    };
    let mut out = Vec::with_capacity(src.len() / 4 * 3);
    let mut si = 0;
    while si < src.len() {
        // One quantum (`decodeQuantum`): up to four symbols, or the padding that ends it.
        let mut buf = [0u8; 4];
        let mut len = 4;
        let mut j = 0;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                return Err(si - j);
            }
            let c = src[si];
            si += 1;
            if let Some(v) = value(c) {
                buf[j] = v;
                j += 1;
                continue;
            }
            if c == b'\n' || c == b'\r' {
                continue;
            }
            if c != b'=' || j < 2 {
                return Err(si - 1);
            }
            if j == 2 {
                // "==" is expected; the first "=" is consumed.
                si = skip_newlines(si);
                if si == src.len() {
                    return Err(src.len());
                }
                if src[si] != b'=' {
                    return Err(si - 1);
                }
                si += 1;
            }
            si = skip_newlines(si);
            if si < src.len() {
                return Err(si);
            }
            len = j;
            break;
        }
        let n = (u32::from(buf[0]) << 18) | (u32::from(buf[1]) << 12) | (u32::from(buf[2]) << 6) | u32::from(buf[3]);
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..len - 1]);
    }
    Ok(out)
}

/// One PEM block (`pem.Block`).
#[derive(Debug, Clone, PartialEq)]
pub struct PemBlock {
    pub kind: String,
    /// Whether the block carries `Key: value` headers.
    pub headers: bool,
    pub bytes: Vec<u8>,
}

/// Go's `pem.Decode`: the first well-formed block in `data` and what follows it, or None.
/// A block whose body is not base64 or whose END line does not match is skipped, as Go
/// skips it.
pub fn pem_decode(data: &[u8]) -> Option<(PemBlock, &[u8])> {
    let text = std::str::from_utf8(data).ok().map_or_else(|| String::from_utf8_lossy(data).into_owned(), str::to_string);
    let mut from = 0;
    loop {
        let start = from + text[from..].find("-----BEGIN ")?;
        // The BEGIN line must start a line.
        if start > 0 && !matches!(text.as_bytes()[start - 1], b'\n' | b'\r') {
            from = start + 11;
            continue;
        }
        let after = start + "-----BEGIN ".len();
        let line_end = text[after..].find('\n').map_or(text.len(), |i| after + i);
        let line = text[after..line_end].trim_end_matches('\r').trim_end();
        let Some(kind) = line.strip_suffix("-----") else {
            from = after;
            continue;
        };
        let end_marker = format!("-----END {kind}-----");
        let body_start = (line_end + 1).min(text.len());
        let Some(end_rel) = text[body_start..].find(&end_marker) else {
            from = after;
            continue;
        };
        let body = &text[body_start..body_start + end_rel];
        // Headers are `Key: value` lines before the first blank line.
        let mut headers = false;
        let mut payload = String::new();
        let mut in_headers = true;
        for l in body.lines() {
            if in_headers && l.contains(':') {
                headers = true;
                continue;
            }
            in_headers = false;
            payload.extend(l.chars().filter(|c| !c.is_whitespace()));
        }
        let rest_at = body_start + end_rel + end_marker.len();
        match go_base64_decode(payload.as_bytes()) {
            Ok(bytes) => return Some((PemBlock { kind: kind.to_string(), headers, bytes }, &data[rest_at.min(data.len())..])),
            Err(_) => from = after,
        }
    }
}

/// What kubectl and the API server read from a certificate request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CertificateRequest {
    /// The subject's attributes in order: (object identifier, value).
    pub subject: Vec<(String, String)>,
    pub dns_names: Vec<String>,
    pub email_addresses: Vec<String>,
    pub ip_addresses: Vec<String>,
    pub uris: Vec<String>,
}

/// Object identifiers of the subject attributes `kubectl describe csr` shows.
pub mod oid {
    pub const COMMON_NAME: &str = "2.5.4.3";
    pub const SERIAL_NUMBER: &str = "2.5.4.5";
    pub const COUNTRY: &str = "2.5.4.6";
    pub const LOCALITY: &str = "2.5.4.7";
    pub const PROVINCE: &str = "2.5.4.8";
    pub const STREET_ADDRESS: &str = "2.5.4.9";
    pub const ORGANIZATION: &str = "2.5.4.10";
    pub const ORGANIZATIONAL_UNIT: &str = "2.5.4.11";
    pub const POSTAL_CODE: &str = "2.5.4.17";
    /// PKCS #9's extension request attribute, which carries the requested extensions.
    pub const EXTENSION_REQUEST: &str = "1.2.840.113549.1.9.14";
    pub const SUBJECT_ALT_NAME: &str = "2.5.29.17";
}

impl CertificateRequest {
    /// The values of one subject attribute (`pkix.Name` keeps repeated ones, such as
    /// several organizations).
    pub fn subject_values(&self, oid: &str) -> Vec<&str> {
        self.subject.iter().filter(|(o, _)| o == oid).map(|(_, v)| v.as_str()).collect()
    }
    /// The common name: the last one, as `pkix.Name.FillFromRDNSequence` keeps it.
    pub fn common_name(&self) -> &str {
        self.subject_values(oid::COMMON_NAME).last().copied().unwrap_or("")
    }
}

/// `certificates.ParseCSR`: the first PEM block must be a CERTIFICATE REQUEST, and its
/// bytes a DER certificate request.
pub fn parse_csr_pem(pem: &[u8]) -> Result<CertificateRequest, String> {
    match pem_decode(pem) {
        Some((b, _)) if b.kind == "CERTIFICATE REQUEST" => parse_certificate_request(&b.bytes),
        _ => Err("PEM block type must be CERTIFICATE REQUEST".into()),
    }
}

/// A DER element: its tag byte, where it starts, and its contents.
#[derive(Clone, Copy)]
struct Element<'a> {
    tag: u8,
    offset: usize,
    /// The tag and length octets.
    header: usize,
    len: usize,
    contents: &'a [u8],
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const INTEGER: u8 = 0x02;
const OID: u8 = 0x06;
const BIT_STRING: u8 = 0x03;
const OCTET_STRING: u8 = 0x04;
const BOOLEAN: u8 = 0x01;

/// A DER reader over one level of elements, with absolute offsets for Go's messages.
struct Der<'a> {
    data: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Der<'a> {
    fn new(data: &'a [u8], base: usize) -> Self {
        Der { data, pos: 0, base }
    }
    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }
    fn next(&mut self) -> Result<Element<'a>, String> {
        let truncated = || "asn1: syntax error: data truncated".to_string();
        let start = self.pos;
        let tag = *self.data.get(self.pos).ok_or_else(truncated)?;
        if tag & 0x1f == 0x1f {
            return Err("asn1: structure error: high-tag-number form is not supported here".into());
        }
        let first = *self.data.get(self.pos + 1).ok_or_else(truncated)?;
        let mut p = self.pos + 2;
        let len = if first & 0x80 == 0 {
            usize::from(first)
        } else {
            let n = usize::from(first & 0x7f);
            if n == 0 {
                return Err("asn1: syntax error: indefinite length found (not DER)".into());
            }
            if n > 4 {
                return Err("asn1: structure error: length too large".into());
            }
            let mut l = 0usize;
            for _ in 0..n {
                l = (l << 8) | usize::from(*self.data.get(p).ok_or_else(truncated)?);
                p += 1;
            }
            if l < 0x80 {
                return Err("asn1: structure error: non-minimal length".into());
            }
            l
        };
        let end = p.checked_add(len).filter(|e| *e <= self.data.len()).ok_or_else(truncated)?;
        self.pos = end;
        Ok(Element { tag, offset: self.base + start, header: p - start, len, contents: &self.data[p..end] })
    }
    /// The next element, which must carry `tag` (Go's `tags don't match` otherwise).
    fn expect(&mut self, tag: u8, within: &str) -> Result<Element<'a>, String> {
        let e = self.next()?;
        if e.tag != tag {
            return Err(format!(
                "asn1: structure error: tags don't match ({} vs {{class:{} tag:{} length:{} isCompound:{}}}) {{optional:false explicit:false application:false private:false defaultValue:<nil> tag:<nil> stringType:0 timeType:0 set:false omitEmpty:false}} {within} @{}",
                tag & 0x1f,
                e.tag >> 6,
                e.tag & 0x1f,
                e.len,
                e.tag & 0x20 != 0,
                e.offset + e.header
            ));
        }
        Ok(e)
    }
    fn inner(e: &Element<'a>) -> Der<'a> {
        Der::new(e.contents, e.offset + e.header)
    }
}

fn oid_string(bytes: &[u8]) -> Result<String, String> {
    let bad = || "asn1: syntax error: invalid object identifier".to_string();
    let mut parts = Vec::new();
    let mut v: u64 = 0;
    for (i, b) in bytes.iter().enumerate() {
        v = v.checked_mul(128).ok_or_else(bad)? | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            if parts.is_empty() {
                let (a, b) = if v < 40 {
                    (0, v)
                } else if v < 80 {
                    (1, v - 40)
                } else {
                    (2, v - 80)
                };
                parts.push(a);
                parts.push(b);
            } else {
                parts.push(v);
            }
            v = 0;
        } else if i + 1 == bytes.len() {
            return Err(bad());
        }
    }
    if parts.is_empty() {
        return Err(bad());
    }
    Ok(parts.iter().map(u64::to_string).collect::<Vec<_>>().join("."))
}

/// A directory string's text (UTF8String, PrintableString, IA5String, T61String, ...).
fn text(e: &Element) -> String {
    match e.tag {
        // BMPString: UTF-16 big-endian.
        0x1e => {
            let units: Vec<u16> = e.contents.chunks(2).map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])).collect();
            String::from_utf16_lossy(&units)
        }
        _ => String::from_utf8_lossy(e.contents).into_owned(),
    }
}

/// `x509.ParseCertificateRequest`: the request's structure, subject and subject
/// alternative names (from the extension request attribute).
pub fn parse_certificate_request(der: &[u8]) -> Result<CertificateRequest, String> {
    let mut top = Der::new(der, 0);
    let csr = top.expect(SEQUENCE, "certificateRequest")?;
    if !top.done() {
        return Err("asn1: syntax error: trailing data".into());
    }
    let mut fields = Der::inner(&csr);
    let info = fields.expect(SEQUENCE, "tbsCertificateRequest")?;
    fields.expect(SEQUENCE, "AlgorithmIdentifier")?;
    fields.expect(BIT_STRING, "BitString")?;
    let mut info = Der::inner(&info);
    info.expect(INTEGER, "int")?;
    let subject = info.expect(SEQUENCE, "RawValue")?;
    info.expect(SEQUENCE, "publicKeyInfo")?;
    let mut out = CertificateRequest::default();
    // The subject: a sequence of sets of (type, value).
    let mut rdns = Der::inner(&subject);
    while !rdns.done() {
        let set = rdns.expect(SET, "RelativeDistinguishedNameSET")?;
        let mut atvs = Der::inner(&set);
        while !atvs.done() {
            let atv = atvs.expect(SEQUENCE, "AttributeTypeAndValue")?;
            let mut parts = Der::inner(&atv);
            let oid = oid_string(parts.expect(OID, "ObjectIdentifier")?.contents)?;
            let value = parts.next()?;
            out.subject.push((oid, text(&value)));
        }
    }
    // The attributes ([0] IMPLICIT SET OF Attribute): SANs are in the extension request.
    if !info.done() {
        let attrs = info.expect(0xa0, "")?;
        let mut attrs = Der::inner(&attrs);
        while !attrs.done() {
            let attr = attrs.expect(SEQUENCE, "AttributeTypeAndValueSET")?;
            let mut a = Der::inner(&attr);
            let oid = oid_string(a.expect(OID, "ObjectIdentifier")?.contents)?;
            let values = a.expect(SET, "")?;
            if oid != oid::EXTENSION_REQUEST {
                continue;
            }
            let mut values = Der::inner(&values);
            while !values.done() {
                let exts = values.expect(SEQUENCE, "")?;
                let mut exts = Der::inner(&exts);
                while !exts.done() {
                    let ext = exts.expect(SEQUENCE, "Extension")?;
                    let mut e = Der::inner(&ext);
                    let id = oid_string(e.expect(OID, "ObjectIdentifier")?.contents)?;
                    let mut v = e.next()?;
                    if v.tag == BOOLEAN {
                        v = e.next()?;
                    }
                    if v.tag != OCTET_STRING || id != oid::SUBJECT_ALT_NAME {
                        continue;
                    }
                    read_alt_names(v.contents, v.offset, &mut out)?;
                }
            }
        }
    }
    Ok(out)
}

/// `parseSANExtension`: DNS names [2], emails [1], URIs [6], IP addresses [7].
fn read_alt_names(bytes: &[u8], base: usize, out: &mut CertificateRequest) -> Result<(), String> {
    let mut outer = Der::new(bytes, base);
    let seq = outer.expect(SEQUENCE, "")?;
    let mut names = Der::inner(&seq);
    while !names.done() {
        let n = names.next()?;
        let s = || String::from_utf8_lossy(n.contents).into_owned();
        match n.tag & 0x1f {
            1 => out.email_addresses.push(s()),
            2 => out.dns_names.push(s()),
            6 => out.uris.push(s()),
            7 => match n.contents.len() {
                4 => out.ip_addresses.push(n.contents.iter().map(u8::to_string).collect::<Vec<_>>().join(".")),
                16 => out.ip_addresses.push(ipv6(n.contents)),
                l => return Err(format!("x509: cannot parse IP address of length {l}")),
            },
            _ => {}
        }
    }
    Ok(())
}

/// An IPv6 address as Go's `net.IP.String` prints it: the longest run of zero groups
/// (two or more) as `::`.
fn ipv6(b: &[u8]) -> String {
    let groups: Vec<u16> = b.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect();
    let (mut best, mut best_len, mut i) = (usize::MAX, 0, 0);
    while i < 8 {
        let mut j = i;
        while j < 8 && groups[j] == 0 {
            j += 1;
        }
        if j - i > best_len && j - i >= 2 {
            best = i;
            best_len = j - i;
        }
        i = j.max(i + 1);
    }
    let hex = |g: &[u16]| g.iter().map(|x| format!("{x:x}")).collect::<Vec<_>>().join(":");
    if best == usize::MAX {
        hex(&groups)
    } else {
        format!("{}::{}", hex(&groups[..best]), hex(&groups[best + best_len..]))
    }
}

/// `validateCertificate` of the CSR validation: `status.certificate` must be one or more
/// CERTIFICATE PEM blocks without headers, each a DER sequence.
pub fn check_certificate_chain(pem: &[u8]) -> Result<(), String> {
    if pem.is_empty() {
        return Ok(());
    }
    let mut rest = pem;
    let mut blocks = 0;
    while let Some((b, r)) = pem_decode(rest) {
        if b.kind != "CERTIFICATE" {
            return Err(format!("only CERTIFICATE PEM blocks are allowed, found {:?}", b.kind));
        }
        if b.headers {
            return Err("no PEM block headers are permitted".into());
        }
        let mut d = Der::new(&b.bytes, 0);
        let mut certs = 0;
        while !d.done() {
            d.expect(SEQUENCE, "certificate")?;
            certs += 1;
        }
        if certs == 0 {
            return Err("found CERTIFICATE PEM block containing 0 certificates".into());
        }
        blocks += 1;
        rest = r;
    }
    if blocks == 0 {
        return Err("must contain at least one CERTIFICATE PEM block".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The request of the Kubernetes documentation's "Issue a Certificate for a
    /// Kubernetes API Client" task (a CSR for CN=angela, RSA 2048).
    pub const DOCS_REQUEST: &str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlJQ1ZqQ0NBVDRDQVFBd0VURVBNQTBHQTFVRUF3d0dZVzVuWld4aE1JSUJJakFOQmdrcWhraUc5dzBCQVFFRgpBQU9DQVE4QU1JSUJDZ0tDQVFFQTByczhJTHRHdTYxakx2dHhWTTJSVlRWMDNHWlJTWWw0dWluVWo4RElaWjBOCnR2MUZtRVFSd3VoaUZsOFEzcWl0Qm0wMUFSMkNJVXBGd2ZzSjZ4MXF3ckJzVkhZbGlBNVhwRVpZM3ExcGswSDQKM3Z3aGJlK1o2MVNrVHF5SVBYUUwrTWM5T1Nsbm0xb0R2N0NtSkZNMUlMRVI3QTVGZnZKOEdFRjJ6dHBoaUlFMwpub1dtdHNZb3JuT2wzc2lHQ2ZGZzR4Zmd4eW8ybmlneFNVekl1bXNnVm9PM2ttT0x1RVF6cXpkakJ3TFJXbWlECklmMXBMWnoyalVnald4UkhCM1gyWnVVV1d1T09PZnpXM01LaE8ybHEvZi9DdS8wYk83c0x0MCt3U2ZMSU91TFcKcW90blZtRmxMMytqTy82WDNDKzBERHk5aUtwbXJjVDBnWGZLemE1dHJRSURBUUFCb0FBd0RRWUpLb1pJaHZjTgpBUUVMQlFBRGdnRUJBR05WdmVIOGR4ZzNvK21VeVRkbmFjVmQ1N24zSkExdnZEU1JWREkyQTZ1eXN3ZFp1L1BVCkkwZXpZWFV0RVNnSk1IRmQycVVNMjNuNVJsSXJ3R0xuUXFISUh5VStWWHhsdnZsRnpNOVpEWllSTmU3QlJvYXgKQVlEdUI5STZXT3FYbkFvczFqRmxNUG5NbFpqdU5kSGxpT1BjTU1oNndLaTZzZFhpVStHYTJ2RUVLY01jSVUyRgpvU2djUWdMYTk0aEpacGk3ZnNMdm1OQUxoT045UHdNMGM1dVJVejV4T0dGMUtCbWRSeEgvbUNOS2JKYjFRQm1HCkkwYitEUEdaTktXTU0xMzhIQXdoV0tkNjVoVHdYOWl4V3ZHMkh4TG1WQzg0L1BHT0tWQW9FNkpsYWFHdTlQVmkKdjlOSjVaZlZrcXdCd0hKbzZXdk9xVlA3SVFjZmg3d0drWm89Ci0tLS0tRU5EIENFUlRJRklDQVRFIFJFUVVFU1QtLS0tLQo=";

    #[test]
    fn base64_errors_at_go_offsets() {
        assert_eq!(go_base64_decode(b"aGVsbG8="), Ok(b"hello".to_vec()));
        assert_eq!(go_base64_decode(b"aGVs\nbG8="), Ok(b"hello".to_vec()));
        assert_eq!(go_base64_decode(b"aGk="), Ok(b"hi".to_vec()));
        assert_eq!(go_base64_decode(b""), Ok(vec![]));
        assert_eq!(go_base64_decode(b"abc"), Err(0));
        assert_eq!(go_base64_decode(b"abcde"), Err(4));
        assert_eq!(go_base64_decode(b"ab!c"), Err(2));
        assert_eq!(go_base64_decode(b"a==="), Err(1));
        assert_eq!(go_base64_decode(b"ab="), Err(3));
        assert_eq!(go_base64_decode(b"ab=x"), Err(2));
        assert_eq!(go_base64_decode(b"aGk=aGk="), Err(4));
        assert_eq!(go_base64_decode(b"-----BEGIN"), Err(0));
    }

    #[test]
    fn the_docs_request_parses() {
        let pem = go_base64_decode(DOCS_REQUEST.as_bytes()).unwrap();
        let csr = parse_csr_pem(&pem).unwrap();
        assert_eq!(csr.common_name(), "angela");
        assert!(csr.dns_names.is_empty() && csr.ip_addresses.is_empty());
    }

    #[test]
    fn malformed_requests_say_why() {
        assert_eq!(parse_csr_pem(b"hello").unwrap_err(), "PEM block type must be CERTIFICATE REQUEST");
        let key = b"-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----\n";
        assert_eq!(parse_csr_pem(key).unwrap_err(), "PEM block type must be CERTIFICATE REQUEST");
        let short = b"-----BEGIN CERTIFICATE REQUEST-----\nMAUCAQA=\n-----END CERTIFICATE REQUEST-----\n";
        assert_eq!(parse_csr_pem(short).unwrap_err(), "asn1: syntax error: data truncated");
        let int = b"-----BEGIN CERTIFICATE REQUEST-----\nAgEA\n-----END CERTIFICATE REQUEST-----\n";
        let e = parse_csr_pem(int).unwrap_err();
        assert!(e.starts_with("asn1: structure error: tags don't match (16 vs {class:0 tag:2 length:1 isCompound:false})"), "{e}");
        assert!(e.ends_with(" certificateRequest @2"), "{e}");
    }

    #[test]
    fn alternative_names_and_ipv6() {
        // SEQUENCE { [2] "a.example", [7] 10.0.0.1, [7] 2001:db8::1 }
        let mut san = vec![0x82, 9];
        san.extend_from_slice(b"a.example");
        san.extend_from_slice(&[0x87, 4, 10, 0, 0, 1, 0x87, 16, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        let mut seq = vec![0x30, san.len() as u8];
        seq.extend(san);
        let mut out = CertificateRequest::default();
        read_alt_names(&seq, 0, &mut out).unwrap();
        assert_eq!(out.dns_names, ["a.example"]);
        assert_eq!(out.ip_addresses, ["10.0.0.1", "2001:db8::1"]);
    }

    #[test]
    fn certificate_chains() {
        assert_eq!(check_certificate_chain(b""), Ok(()));
        assert_eq!(check_certificate_chain(b"junk").unwrap_err(), "must contain at least one CERTIFICATE PEM block");
        let ok = b"-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n";
        assert_eq!(check_certificate_chain(ok), Ok(()));
        let key = b"-----BEGIN RSA PRIVATE KEY-----\nMAA=\n-----END RSA PRIVATE KEY-----\n";
        assert_eq!(check_certificate_chain(key).unwrap_err(), "only CERTIFICATE PEM blocks are allowed, found \"RSA PRIVATE KEY\"");
    }
}
