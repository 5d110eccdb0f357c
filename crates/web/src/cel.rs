//! CEL on demand: the engine lives in its own WebAssembly module (`kubeloop-cel`, built
//! into `dist/cel/` by `scripts/build-cel-wasm`), fetched the first time a manifest needs
//! it, so the page itself stays small. Once loaded, calls are synchronous.

use kubeloop_core::apiserver::cel::CelEngine;
use kubeloop_core::foundation::value::{Map, Value};
use wasm_bindgen::prelude::*;

#[wasm_bindgen(inline_js = r#"
let celModule = null;
let loading = null;
export function cel_ready() { return celModule !== null; }
export function cel_load() {
  if (!loading) {
    loading = import(new URL('cel/kubeloop_cel.js', document.baseURI).href)
      .then(async (m) => { await m.default(); celModule = m; });
  }
  return loading;
}
export function cel_check(expr) { return celModule ? celModule.check(expr) : 'the CEL engine is not loaded yet'; }
export function cel_eval(expr, vars) {
  return celModule ? celModule.evaluate(expr, vars) : JSON.stringify({ err: 'the CEL engine is not loaded yet' });
}
"#)]
extern "C" {
    fn cel_ready() -> bool;
    fn cel_load() -> js_sys::Promise;
    fn cel_check(expr: &str) -> String;
    fn cel_eval(expr: &str, vars: &str) -> String;
}

/// Whether the CEL module is loaded.
pub fn ready() -> bool {
    cel_ready()
}

/// Load the CEL module (once); resolves when it can be called.
pub async fn load() -> Result<(), String> {
    wasm_bindgen_futures::JsFuture::from(cel_load()).await.map(|_| ()).map_err(|e| e.as_string().unwrap_or_else(|| format!("{e:?}")))
}

/// Whether a manifest text holds something that evaluates CEL: admission policies and
/// their bindings, webhooks (their simulated backends answer with CEL), match conditions.
pub fn needed_by(text: &str) -> bool {
    ["ValidatingAdmissionPolicy", "MutatingAdmissionPolicy", "WebhookConfiguration", "matchConditions"].iter().any(|k| text.contains(k))
}

/// The engine the core uses in the page, and the cost of its last evaluation.
#[derive(Default)]
pub struct JsCel {
    last_cost: u64,
}

impl CelEngine for JsCel {
    fn check(&mut self, expr: &str) -> Result<(), String> {
        let e = cel_check(expr);
        if e.is_empty() {
            Ok(())
        } else {
            Err(e)
        }
    }

    fn eval(&mut self, expr: &str, vars: &[(&str, &Value)]) -> Result<Value, String> {
        let obj: Map = vars.iter().map(|(k, v)| (*k, (*v).clone())).collect();
        let json = serde_json::to_string(&Value::Object(obj)).map_err(|e| e.to_string())?;
        let answer: Value = serde_json::from_str(&cel_eval(expr, &json)).map_err(|e| e.to_string())?;
        self.last_cost = answer.get("cost").and_then(Value::as_u64).unwrap_or(0);
        match (answer.get("ok"), answer.get("err")) {
            (Some(v), _) => Ok(v.clone()),
            (None, Some(e)) => Err(e.as_str().unwrap_or("CEL evaluation failed").to_string()),
            _ => Err("the CEL module gave no answer".into()),
        }
    }

    fn last_cost(&self) -> u64 {
        self.last_cost
    }
}
