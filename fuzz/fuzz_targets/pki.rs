//! Certificate request bytes: Go's base64 decoding (any input, and a round trip of what
//! standard base64 makes), PEM blocks, a certificate request's DER and a certificate chain.
#![no_main]
use kubeloop_core::foundation::pki;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = pki::go_base64_decode(data);
    // What encodes decodes back, newlines anywhere skipped.
    let encoded = base64_std(data);
    assert_eq!(pki::go_base64_decode(encoded.as_bytes()).as_deref(), Ok(data));
    let _ = pki::pem_decode(data);
    let _ = pki::parse_csr_pem(data);
    let _ = pki::parse_certificate_request(data);
    let _ = pki::check_certificate_chain(data);
});

fn base64_std(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for (i, c) in data.chunks(3).enumerate() {
        if i > 0 && i % 16 == 0 {
            out.push('\n');
        }
        let n = (u32::from(c[0]) << 16) | (u32::from(*c.get(1).unwrap_or(&0)) << 8) | u32::from(*c.get(2).unwrap_or(&0));
        for k in 0..4 {
            if k <= c.len() {
                out.push(A[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
