//! CEL on demand: the engine lives in its own WebAssembly module (`kubeloop-cel`, built
//! into `dist/cel/` by `scripts/build-cel-wasm`), fetched the first time a manifest needs
//! it, so the page itself stays small. Once loaded, calls are synchronous.

use kubeloop_core::apiserver::cel::{CelEngine, Reads};
use kubeloop_core::foundation::value::{Map, Value};
use std::collections::HashMap;
use std::rc::Rc;
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
export function cel_reads(expr) { return celModule ? celModule.reads(expr) : ''; }
export function cel_eval(expr, vars) {
  return celModule ? celModule.evaluate(expr, vars) : JSON.stringify({ err: 'the CEL engine is not loaded yet' });
}
"#)]
extern "C" {
    fn cel_ready() -> bool;
    fn cel_load() -> js_sys::Promise;
    fn cel_check(expr: &str) -> String;
    fn cel_eval(expr: &str, vars: &str) -> String;
    fn cel_reads(expr: &str) -> String;
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

/// The engine the core uses in the page, the cost of its last evaluation, and what each
/// expression reads of its variables (asked of the module once per expression).
#[derive(Default)]
pub struct JsCel {
    last_cost: u64,
    reads: HashMap<String, Option<Rc<Reads>>>,
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
        // Only the variables the expression names cross to the CEL module as JSON: a CEL
        // expression reaches a variable by its name alone, and an admission request's
        // `object`, `oldObject` and `request` are most of an evaluation's time here.
        let obj: Map = vars.iter().filter(|(k, _)| names(expr, k)).map(|(k, v)| (*k, (*v).clone())).collect();
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

    fn reads(&mut self, expr: &str) -> Option<Rc<Reads>> {
        if !cel_ready() {
            return None;
        }
        self.reads.entry(expr.to_string()).or_insert_with(|| serde_json::from_str(&cel_reads(expr)).ok().map(Rc::new)).clone()
    }
}

/// Whether `name` occurs in `expr` as a whole identifier (it may be a field name too: that
/// only sends a variable the expression does not need).
fn names(expr: &str, name: &str) -> bool {
    let ident = |c: char| c == '_' || c.is_ascii_alphanumeric();
    expr.match_indices(name).any(|(at, _)| !expr[..at].chars().next_back().is_some_and(ident) && !expr[at + name.len()..].chars().next().is_some_and(ident))
}

#[cfg(test)]
mod tests {
    use super::names;
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    #[wasm_bindgen_test]
    fn a_variable_is_named_only_as_a_whole_identifier() {
        assert!(names("object.spec.replicas > 1", "object"));
        assert!(names("has(oldObject.spec)", "oldObject"));
        assert!(!names("oldObject.spec == null", "object"));
        assert!(!names("request.userInfo.username", "params"));
        assert!(names("object.x == params.y", "params"));
        assert!(!names("objects.size() > 0", "object"));
        assert!(names("request.object", "object"));
    }
}
