//! The scale benchmark in the page's own engine: `window.wasmBindings.kubeloopBench(nodes,
//! pods)` runs what `kubeloop bench` runs (`kubeloop_core::cluster::bench`) and answers
//! with the same JSON, timed by the page's clock; in place of the resident size it gives
//! the WebAssembly memory, which only grows, so after the run it is the run's peak.
//! `scripts/measure-page-bench` drives it in headless Chromium.
//!
//! `?bench=NODESxPODS` opens the page itself on the same cluster and Deployment, written as
//! a scenario in the editor, to watch (and to measure the page while it simulates).

use kubeloop_core::cluster::bench;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

#[wasm_bindgen(js_name = kubeloopBench)]
pub fn kubeloop_bench(nodes: u32, pods: u32) -> Result<String, JsValue> {
    let perf = web_sys::window().and_then(|w| w.performance());
    let now = || perf.as_ref().map_or(0.0, |p| p.now());
    let started = now();
    let mut cluster = bench::cluster(nodes as usize, pods as usize, 1);
    let outcome = bench::run(&mut cluster, pods as usize).map_err(|e| JsValue::from_str(&e))?;
    let wall = (now() - started) / 1000.0;
    let memory = wasm_bindgen::memory().dyn_into::<js_sys::WebAssembly::Memory>()?;
    let bytes = memory.buffer().dyn_into::<js_sys::ArrayBuffer>()?.byte_length();
    drop(cluster);
    let v = serde_json::json!({
        "nodes": nodes,
        "pods": pods,
        "ready_pods": outcome.ready_pods,
        "simulated_seconds": outcome.simulated_ms as f64 / 1000.0,
        "wall_seconds": (wall * 1000.0).round() / 1000.0,
        "api_writes": outcome.api_writes,
        "api_writes_per_second": (outcome.api_writes as f64 / wall).round(),
        "wasm_memory_mib": bytes / (1024 * 1024),
    });
    Ok(v.to_string())
}

/// `?bench=5000x150000`: the benchmark's scenario, for the editor; what is wrong with the
/// parameter, if it is there and not NODESxPODS within the limits.
pub fn from_query(search: &str) -> Option<Result<String, String>> {
    let v = web_sys::UrlSearchParams::new_with_str(search).ok()?.get("bench")?;
    let max = kubeloop_core::cluster::scenario::MAX_NODES as usize;
    let size = v.split_once('x').and_then(|(n, p)| Some((n.parse::<usize>().ok()?, p.parse::<usize>().ok()?)));
    Some(match size {
        Some((nodes, pods)) if (1..=max).contains(&nodes) && pods <= i32::MAX as usize => Ok(bench::scenario(nodes, pods)),
        _ => Err(format!("?bench={v:?} is not NODESxPODS with 1 to {max} nodes (for example ?bench=5000x30000); here is the example.")),
    })
}
