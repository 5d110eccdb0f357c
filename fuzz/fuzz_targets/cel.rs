//! CEL: compile any expression and evaluate it over a Deployment-like object, with the
//! per-call cost limit; errors are fine, panics and runaway evaluations are not.
#![no_main]
use kubeloop_cel::Engine;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(expr) = std::str::from_utf8(data) else { return };
    if expr.len() > 4096 {
        return;
    }
    let mut engine = Engine::default();
    if engine.check(expr).is_err() {
        return;
    }
    let object = serde_json::json!({
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "resources": {"limits": {"cpu": "500m"}}}]}}}
    });
    let _ = engine.eval(expr, &[("object", &object), ("oldObject", &serde_json::Value::Null)]);
});
