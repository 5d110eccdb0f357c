//! The kubectl command line, as the page's terminal takes it: any line runs against a
//! sandbox with a Deployment and prints kubectl's output or its error, never a panic. Each
//! input starts from a copy of the same sandbox (copying one is far cheaper than
//! building it).
#![no_main]
use kubeloop_core::sandbox::Sandbox;

const SETUP: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: nginx, image: nginx:1.27}]}\n";

thread_local! {
    static BASE: Sandbox = Sandbox::new(SETUP, Some(1));
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if text.len() > 2048 {
        return;
    }
    let mut sb = BASE.with(Sandbox::clone);
    for line in text.lines().take(4) {
        let _ = sb.kubectl(line);
    }
});
