//! Quantities: `resource.ParseQuantity` and the canonical form of what parses.
#![no_main]
use kubeloop_core::foundation::quantity;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if quantity::parse(s).is_ok() {
        let canonical = quantity::canonical(s);
        // The canonical form parses to the same amount.
        assert_eq!(quantity::parse_milli(&canonical), quantity::parse_milli(s), "{s:?} -> {canonical:?}");
    }
    let _ = quantity::parse_milli(s);
});
