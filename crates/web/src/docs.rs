//! The API documentation for `kubectl explain`: the OpenAPI schemas with their
//! descriptions (`openapi.json`, copied into `dist/` by Trunk from `crates/cli/data/`),
//! fetched the first time someone asks for an explanation, so the page itself stays small.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(inline_js = r#"
export function docs_fetch() {
  return fetch(new URL('openapi.json', document.baseURI).href).then((r) => {
    if (!r.ok) { throw new Error('HTTP ' + r.status); }
    return r.text();
  });
}
"#)]
extern "C" {
    fn docs_fetch() -> js_sys::Promise;
}

/// Fetch and install the schemas (see `kubeloop_core::kubectl::explain::install`).
pub async fn load() -> Result<(), String> {
    let text = wasm_bindgen_futures::JsFuture::from(docs_fetch()).await.map_err(|e| e.as_string().unwrap_or_else(|| format!("{e:?}")))?;
    let text = text.as_string().ok_or("the document is not text")?;
    let doc = serde_json::from_str(&text).map_err(|e| format!("the document is not valid JSON: {e}"))?;
    kubeloop_core::kubectl::explain::install(doc);
    Ok(())
}
