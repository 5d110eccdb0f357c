//! The embed API: a course page that shows kubeloop in an iframe drives it with
//! `postMessage`, and hears what happens.
//!
//! A command is `{"kubeloop": 1, "id": …, "command": "apply", "text": "…"}`; every message
//! out is `{"kubeloop": 1, "event": "…", …}`, with the command's `id` when it answers one.
//! Commands are taken only from the embedding window (`event.source` is `window.parent`)
//! and only from an allowed origin: the page's own, or one listed in `?embedOrigin=`
//! (comma-separated). Events are posted to those origins only, never to `*`.

use super::window;
use serde::Deserialize;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// What a host page can ask for.
#[derive(Debug, Deserialize)]
#[serde(tag = "command", rename_all = "camelCase", deny_unknown_fields)]
pub enum Command {
    /// Start over from a lesson, a share link (`#s=1.…` or `s=1.…`), or a text.
    Load {
        #[serde(default)]
        lesson: Option<String>,
        #[serde(default)]
        link: Option<String>,
        #[serde(default)]
        text: Option<String>,
    },
    /// Put `text` in the editor and apply it.
    Apply {
        text: String,
    },
    /// Run a kubectl command line (with or without `kubectl`) in the terminal.
    Kubectl {
        line: String,
    },
    /// Inject a fault of the Break things panel (`nodeDown` and a node name, …).
    Fault {
        kind: String,
        #[serde(default)]
        name: String,
    },
    Play,
    Pause,
    /// Go to simulated time `t` (milliseconds): forward by running, back by replaying.
    Seek {
        t: u64,
    },
    /// Answer with a `tick` summary now.
    State,
}

#[derive(Debug, Deserialize)]
struct Envelope {
    kubeloop: u32,
    #[serde(default)]
    id: Value,
    #[serde(flatten)]
    command: Value,
}

/// A command as received: its id (echoed in the answer), and the command or why it is not
/// one. Messages without `"kubeloop": 1` are someone else's and give `None`.
pub fn parse(text: &str) -> Option<(Value, Result<Command, String>)> {
    let env: Envelope = serde_json::from_str(text).ok()?;
    if env.kubeloop != 1 {
        return Some((env.id, Err(format!("kubeloop speaks version 1 of the embed API, not {}", env.kubeloop))));
    }
    let cmd = serde_json::from_value(env.command).map_err(|e| format!("not a kubeloop command: {e}"));
    Some((env.id, cmd))
}

/// The origins whose pages may drive this one: its own and those in `?embedOrigin=`.
pub fn allowed_origins(search: &str) -> Vec<String> {
    let mut out = vec![window().location().origin().unwrap_or_default()];
    if let Some(list) = web_sys::UrlSearchParams::new_with_str(search).ok().and_then(|p| p.get("embedOrigin")) {
        for o in list.split(',').map(|o| o.trim().trim_end_matches('/')) {
            if !o.is_empty() && !out.iter().any(|x| x == o) {
                out.push(o.to_string());
            }
        }
    }
    out
}

/// The window that embeds this page, if it is embedded.
pub fn parent() -> Option<web_sys::Window> {
    let me = window();
    let p = me.parent().ok().flatten()?;
    (JsValue::from(p.clone()) != JsValue::from(me)).then_some(p)
}

/// Post one event to `origins` (the browser drops it for a parent of another origin).
pub fn post(origins: &[String], mut event: Value) {
    let Some(p) = parent() else { return };
    if let Some(m) = event.as_object_mut() {
        m.insert("kubeloop".into(), json!(1));
    }
    let Ok(data) = js_sys::JSON::parse(&event.to_string()) else { return };
    for o in origins {
        let _ = p.post_message(&data, o);
    }
}

/// Listen for commands; `deliver` gets the origin and the message as JSON text. The
/// returned closure must be kept for as long as the page listens.
pub fn listen(allowed: Vec<String>, deliver: impl Fn(String, String) + 'static) -> Option<Closure<dyn FnMut(web_sys::MessageEvent)>> {
    parent()?;
    let cb = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
        let origin = e.origin();
        let from_parent = match (e.source(), parent()) {
            (Some(src), Some(p)) => JsValue::from(src) == JsValue::from(p),
            _ => false,
        };
        if !from_parent || !allowed.contains(&origin) {
            return;
        }
        if let Ok(text) = js_sys::JSON::stringify(&e.data()) {
            deliver(origin, String::from(text));
        }
    });
    window().add_event_listener_with_callback("message", cb.as_ref().unchecked_ref()).ok()?;
    Some(cb)
}
