//! The rest of the page's code. The build (`scripts/split-wasm`, a Trunk post-build hook)
//! keeps in the page's wasm the functions a first visit runs (`web/first-visit.txt`) and
//! moves the others into `<name>_rest.wasm`, leaving a stub for each that calls
//! `kubeloopLoadRest(true)` before its first use. The page fetches and compiles the rest in
//! the background from the moment its module runs (`prefetch`: the download of the first
//! part is over by then, and compiling happens off the main thread); a stub that runs
//! before that has finished loads it there and then, synchronously.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(inline_js = r#"
let exports = null;
let state = 'waiting';
let compiling = null;
function set(s) { state = s; document.documentElement.dataset.rest = s; }
function url() {
  const link = document.querySelector('link[rel=preload][href$="_bg.wasm"]');
  return link ? new URL(link.getAttribute('href').replace(/_bg\.wasm$/, '_rest.wasm'), document.baseURI).href : null;
}
function install(module) {
  if (state !== 'loaded') {
    new WebAssembly.Instance(module, { p: exports });
    set('loaded');
  }
}
export function kubeloopRestInit(e) { exports = e; }
export function kubeloopRestState() { return state; }
export function kubeloopLoadRest(now) {
  if (state === 'loaded') return;
  const where = url();
  if (!where || !exports) throw new Error("kubeloop: the rest of the page's code was needed before the page could load it");
  if (!now) {
    if (!compiling) {
      set('fetching');
      compiling = WebAssembly.compileStreaming(fetch(where)).then(install, (e) => {
        set('failed');
        console.error(`kubeloop: the rest of the page's code (${where}) did not load: ${e}`);
      });
    }
    return;
  }
  // A stub runs before the background load has finished: load it here.
  let text;
  try {
    const request = new XMLHttpRequest();
    request.open('GET', where, false);
    request.overrideMimeType('text/plain; charset=x-user-defined');
    request.send();
    if (request.status !== 200) throw new Error(`HTTP ${request.status}`);
    text = request.responseText;
  } catch (e) {
    // Which function needed it (the split keeps function indices): the wasm frames.
    const frames = (new Error().stack || '').split('\n').filter((l) => l.includes('wasm-function')).slice(0, 3).map((l) => l.trim()).join(' < ');
    throw new Error(`kubeloop: the rest of the page's code (${where}) did not load: ${e.message || e}${frames ? ` (needed by ${frames})` : ''}`);
  }
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i) & 0xff;
  install(new WebAssembly.Module(bytes));
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = kubeloopRestInit)]
    fn rest_init(exports: JsValue);
    #[wasm_bindgen(js_name = kubeloopLoadRest)]
    fn load_rest(now: bool);
    #[wasm_bindgen(js_name = kubeloopRestState)]
    fn rest_state() -> String;
}

/// Hand the rest its imports: the page's module's exports. Before anything else runs.
pub fn init() {
    rest_init(wasm_bindgen::exports());
}

/// Fetch and compile the rest in the background, if this build has one.
pub fn prefetch() {
    if state() == "waiting" && has_rest() {
        load_rest(false);
    }
}

/// `waiting`, `fetching`, `loaded` or `failed` (also the page's `data-rest` attribute).
pub fn state() -> String {
    rest_state()
}

/// Whether the page's module was split: it then exports the table under `$t0`.
fn has_rest() -> bool {
    js_sys::Reflect::has(&wasm_bindgen::exports(), &JsValue::from_str("$t0")).unwrap_or(false)
}
