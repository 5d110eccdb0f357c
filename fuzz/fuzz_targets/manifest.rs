//! The manifest decoder: any text, YAML or JSON, one document or many, gives documents or
//! errors with positions, never a panic.
#![no_main]
use kubeloop_core::foundation::manifest;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for d in manifest::parse(text) {
        let _ = format!("{d:?}");
    }
    let _ = manifest::parse_value(text);
});
