//! Kubernetes CEL (the `kube-cel` libraries) over JSON values.
//!
//! kubeloop's admission code asks two things of CEL: does an expression compile, and what
//! does it evaluate to given some variables. This crate answers both with compiled programs
//! cached by source text. Values cross in and out as JSON, which is what lets the page load
//! this crate as a separate WebAssembly module only when a policy first needs it (the
//! `wasm` feature exports `check` and `evaluate` through wasm-bindgen).

use kube_cel::cel::{objects::Key, Context, Program, Value as CelValue};
use kube_cel::KubeCelExt;
use serde::Serialize;
use serde_json::Value as Json;
use std::collections::HashMap;
use std::rc::Rc;

/// Compiled programs by source text.
#[derive(Default)]
pub struct Engine {
    programs: HashMap<String, Result<Rc<Program>, String>>,
}

impl Engine {
    fn program(&mut self, expr: &str) -> Result<Rc<Program>, String> {
        self.programs.entry(expr.to_string()).or_insert_with(|| Program::compile(expr).map(Rc::new).map_err(|e| e.to_string().trim().to_string())).clone()
    }

    /// Whether `expr` compiles; the error is the parser's, on one line.
    pub fn check(&mut self, expr: &str) -> Result<(), String> {
        self.program(expr).map(|_| ()).map_err(|e| e.replace('\n', " "))
    }

    /// Evaluate `expr` with the given variables (any serialisable values).
    pub fn eval<V: Serialize>(&mut self, expr: &str, vars: &[(&str, &V)]) -> Result<Json, String> {
        let program = self.program(expr)?;
        let mut ctx = Context::default().with_all();
        for (name, v) in vars {
            ctx.add_variable_from_value(*name, kube_cel::cel::to_value(v).unwrap_or(CelValue::Null));
        }
        program.execute(&ctx).map(|v| to_json(&v)).map_err(|e| e.to_string())
    }
}

/// A CEL result as JSON. Maps come out with sorted keys; durations and timestamps as
/// their string forms.
pub fn to_json(v: &CelValue) -> Json {
    match v {
        CelValue::Null => Json::Null,
        CelValue::Bool(b) => Json::Bool(*b),
        CelValue::Int(i) => Json::from(*i),
        CelValue::UInt(u) => Json::from(*u),
        CelValue::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        CelValue::String(s) => Json::String(s.to_string()),
        CelValue::Bytes(b) => Json::String(String::from_utf8_lossy(b).into_owned()),
        CelValue::List(l) => Json::Array(l.iter().map(to_json).collect()),
        CelValue::Map(m) => {
            let mut entries: Vec<(String, Json)> = m
                .map
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Key::String(s) => s.to_string(),
                        Key::Int(i) => i.to_string(),
                        Key::Uint(u) => u.to_string(),
                        Key::Bool(b) => b.to_string(),
                    };
                    (key, to_json(v))
                })
                .collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Json::Object(entries.into_iter().collect())
        }
        other => Json::String(format!("{other:?}")),
    }
}

#[cfg(feature = "wasm")]
mod exports {
    use super::Engine;
    use std::cell::RefCell;
    use wasm_bindgen::prelude::wasm_bindgen;

    thread_local! {
        static ENGINE: RefCell<Engine> = RefCell::new(Engine::default());
    }

    /// `""` if `expr` compiles, else the error.
    #[wasm_bindgen]
    pub fn check(expr: &str) -> String {
        ENGINE.with(|e| e.borrow_mut().check(expr).err().unwrap_or_default())
    }

    /// `vars` is a JSON object of variables; the answer is `{"ok": value}` or `{"err": message}`.
    #[wasm_bindgen]
    pub fn evaluate(expr: &str, vars: &str) -> String {
        let vars: serde_json::Map<String, serde_json::Value> = match serde_json::from_str(vars) {
            Ok(v) => v,
            Err(e) => return serde_json::json!({"err": format!("bad variables: {e}")}).to_string(),
        };
        let list: Vec<(&str, &serde_json::Value)> = vars.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let out = ENGINE.with(|e| e.borrow_mut().eval(expr, &list));
        match out {
            Ok(v) => serde_json::json!({"ok": v}).to_string(),
            Err(e) => serde_json::json!({"err": e}).to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn evaluates_kubernetes_cel_over_json() {
        let mut e = Engine::default();
        let obj = json!({"spec": {"template": {"spec": {"containers": [{"image": "nginx:latest"}, {"image": "redis:7"}]}}}});
        let out = e.eval("object.spec.template.spec.containers.all(c, !c.image.endsWith(':latest'))", &[("object", &obj)]).unwrap();
        assert_eq!(out, json!(false));
        assert_eq!(e.eval("{'b': 1, 'a': [quantity('1Gi').isGreaterThan(quantity('1Mi'))]}", &[] as &[(&str, &Json)]).unwrap(), json!({"a": [true], "b": 1}));
        assert_eq!(e.eval("'abc'.matches('^a.c$')", &[] as &[(&str, &Json)]).unwrap(), json!(true));
        assert!(e.check("object.spec.").is_err());
        assert!(e.eval("object.missing", &[("object", &json!({}))]).is_err());
    }
}
