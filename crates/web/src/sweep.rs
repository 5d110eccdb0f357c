//! The seed sweep in the page's own engine. `window.wasmBindings.kubeloopSweep(from,
//! count, endMs)` runs seeds `from..from+count` of `kubeloop sweep` here, with CEL from the
//! page's on-demand module, and answers with the lines `kubeloop sweep --hashes` prints:
//! the browser test compares them with the native binary's, byte for byte.

use kubeloop_core::cluster::sweep;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(js_name = kubeloopSweep)]
pub async fn kubeloop_sweep(from: f64, count: u32, end_ms: f64) -> Result<String, JsValue> {
    crate::cel::load().await.map_err(|e| JsValue::from_str(&e))?;
    let (from, end) = (from as u64, end_ms as u64);
    let mut out = String::new();
    for seed in from..from + u64::from(count) {
        out.push_str(&sweep::outcome_line(seed, &sweep::run(&sweep::generate(seed, end).render(), end)));
        out.push('\n');
    }
    Ok(out)
}
