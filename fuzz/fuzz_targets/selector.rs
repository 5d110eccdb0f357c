//! Label selectors (`labels.Parse`) and field selectors, for every kind they apply to.
#![no_main]
use kubeloop_core::apiserver::fields::FieldSelector;
use kubeloop_core::foundation::labels::Selector;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let _ = Selector::parse(s);
    for kind in ["Pod", "Node", "Event", "Secret", "Namespace", "ReplicaSet", "Job"] {
        let _ = FieldSelector::parse(kind, s);
    }
});
