//! Share-link decoding alone: any fragment decodes to a set-up, a seed and a log (each
//! editor text rebuilt from its edits), or says why it cannot, before any cluster is made.
//! As in `share`, half the inputs are the link's text and half the JSON state inside a
//! well-formed link. `share` goes on to replay what decodes.
#![no_main]
use kubeloop_core::foundation::sim::MAX_RUN;
use kubeloop_core::sandbox::Sandbox;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((first, rest)) = data.split_first() else { return };
    let fragment = if first % 2 == 0 {
        match std::str::from_utf8(rest) {
            Ok(s) => s.to_string(),
            Err(_) => return,
        }
    } else {
        Sandbox::link_for_state(rest)
    };
    // The set-up's edits apply to the page's default text there; any text will do here.
    let base = if first % 4 < 2 { "" } else { "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: é\n" };
    let _ = Sandbox::decode_link(&fragment, base, MAX_RUN);
});
