//! How admission reaches CEL: through an engine that compiles and evaluates expressions
//! over JSON values. Natively (and in tests) the engine is `kubeloop-cel` compiled in; the
//! page builds the core without it and installs an engine that calls the same crate in a
//! WebAssembly module loaded only when a policy first needs it.

use crate::foundation::value::Value;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::OnceLock;

/// What an expression reads of each variable it names: the field paths it selects (the
/// value at each is read whole), or `None` where it uses the variable itself. A variable it
/// does not name is absent. The same as `kubeloop_cel::Reads`.
pub type Reads = BTreeMap<String, Option<Vec<Vec<String>>>>;

pub trait CelEngine {
    /// Whether `expr` compiles; the error on one line.
    fn check(&mut self, expr: &str) -> Result<(), String>;
    /// Evaluate `expr` with these variables.
    fn eval(&mut self, expr: &str, vars: &[(&str, &Value)]) -> Result<Value, String>;
    /// What the last evaluation cost, in cel-go's units.
    fn last_cost(&self) -> u64 {
        0
    }
    /// What `expr` reads of each variable, if the engine can tell (else every variable is
    /// passed whole).
    fn reads(&mut self, _expr: &str) -> Option<Rc<Reads>> {
        None
    }
}

/// The variables `eval` needs for an expression that reads `reads`: those it does not name
/// are left out, and of the others only the parts at the paths it selects are kept (an
/// admission request's `object` and `oldObject` are whole objects, managed fields and
/// status included; a policy reads a few fields of them). Maps keep their order.
pub fn needed<'a>(reads: &Reads, vars: &[(&'a str, &Value)]) -> Vec<(&'a str, Value)> {
    fn keep(v: &Value, paths: &[&[String]]) -> Value {
        match v {
            Value::Object(m) if !paths.iter().any(|p| p.is_empty()) => Value::Object(
                m.iter()
                    .filter_map(|(k, child)| {
                        let rest: Vec<&[String]> = paths.iter().filter(|p| p[0] == k.as_str()).map(|p| &p[1..]).collect();
                        (!rest.is_empty()).then(|| (k.clone(), keep(child, &rest)))
                    })
                    .collect(),
            ),
            // A path that ends here, or goes on into something that is not a map: the
            // value whole (selecting a field of a list fails the same way on either).
            _ => v.clone(),
        }
    }
    vars.iter()
        .filter_map(|(name, v)| match reads.get(*name)? {
            Some(paths) => Some((*name, keep(v, &paths.iter().map(Vec::as_slice).collect::<Vec<_>>()))),
            None => Some((*name, (*v).clone())),
        })
        .collect()
}

/// The engine every new API server gets: the one installed with [`install`], else the
/// compiled-in one, else one that explains that CEL is missing.
pub fn engine() -> Box<dyn CelEngine> {
    match FACTORY.get() {
        Some(f) => f(),
        None => default_engine(),
    }
}

static FACTORY: OnceLock<fn() -> Box<dyn CelEngine>> = OnceLock::new();

/// Choose the engine for this process (once; later calls are ignored).
pub fn install(factory: fn() -> Box<dyn CelEngine>) {
    let _ = FACTORY.set(factory);
}

/// Whether an expression compiles (ValidatingAdmissionPolicy validation).
pub fn check(expr: &str) -> Result<(), String> {
    engine().check(expr)
}

#[cfg(feature = "cel")]
fn default_engine() -> Box<dyn CelEngine> {
    Box::new(Native(kubeloop_cel::Engine::default()))
}

#[cfg(not(feature = "cel"))]
fn default_engine() -> Box<dyn CelEngine> {
    Box::new(Unavailable)
}

#[cfg(feature = "cel")]
struct Native(kubeloop_cel::Engine);

#[cfg(feature = "cel")]
impl CelEngine for Native {
    fn check(&mut self, expr: &str) -> Result<(), String> {
        self.0.check(expr)
    }
    fn eval(&mut self, expr: &str, vars: &[(&str, &Value)]) -> Result<Value, String> {
        self.0.eval(expr, vars).map(Value::from)
    }
    fn last_cost(&self) -> u64 {
        self.0.last_cost()
    }
    fn reads(&mut self, expr: &str) -> Option<Rc<Reads>> {
        self.0.reads(expr).ok()
    }
}

/// A build without CEL: every expression fails with a clear message.
pub struct Unavailable;

impl CelEngine for Unavailable {
    fn check(&mut self, _expr: &str) -> Result<(), String> {
        Ok(())
    }
    fn eval(&mut self, _expr: &str, _vars: &[(&str, &Value)]) -> Result<Value, String> {
        Err("the CEL engine is not loaded".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foundation::value::json;

    #[test]
    fn needed_keeps_the_paths_read_in_their_order() {
        let object = json!({
            "metadata": {"name": "web", "labels": {"app": "web"}, "managedFields": [{"manager": "kubectl"}]},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"image": "nginx"}]}}},
            "status": {"replicas": 3},
        });
        let request = json!({"operation": "UPDATE"});
        let vars = [("object", &object), ("oldObject", &object), ("request", &request)];
        let path = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut reads = Reads::new();
        reads.insert(
            "object".into(),
            Some(vec![path(&["spec", "template", "spec", "containers"]), path(&["metadata", "name"]), path(&["metadata", "missing"])]),
        );
        reads.insert("request".into(), None);
        let got = needed(&reads, &vars);
        assert_eq!(got.len(), 2, "oldObject is not read: {got:?}");
        assert_eq!(got[0], ("object", json!({"metadata": {"name": "web"}, "spec": {"template": {"spec": {"containers": [{"image": "nginx"}]}}}})));
        let keys: Vec<&str> = got[0].1.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(keys, ["metadata", "spec"]);
        assert_eq!(got[1], ("request", request.clone()));
        // A path into something that is not a map keeps that value whole.
        reads.insert("object".into(), Some(vec![path(&["spec", "replicas", "deeper"])]));
        assert_eq!(needed(&reads, &vars)[0].1, json!({"spec": {"replicas": 3}}));
    }

    #[cfg(feature = "cel")]
    #[test]
    fn a_policy_sees_the_same_values_through_what_it_reads() {
        let object = json!({"metadata": {"name": "web", "labels": {"tier": "front"}}, "spec": {"replicas": 5, "paused": false}});
        let mut engine = Native(kubeloop_cel::Engine::default());
        for expr in [
            "object.spec.replicas <= 3",
            "has(object.spec.paused) && !has(object.spec.strategy)",
            "object.metadata.labels.all(k, k.startsWith('t'))",
            "object.metadata.name + '/' + string(object.spec.replicas)",
            "size(object.spec) == 2",
        ] {
            let whole = engine.eval(expr, &[("object", &object)]);
            let reads = engine.reads(expr).unwrap();
            let part = needed(&reads, &[("object", &object)]);
            assert_ne!(part[0].1, object, "{expr} reads only part of the object");
            let refs: Vec<(&str, &Value)> = part.iter().map(|(k, v)| (*k, v)).collect();
            assert_eq!(engine.eval(expr, &refs), whole, "{expr}");
        }
    }
}
