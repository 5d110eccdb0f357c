//! How admission reaches CEL: through an engine that compiles and evaluates expressions
//! over JSON values. Natively (and in tests) the engine is `kubeloop-cel` compiled in; the
//! page builds the core without it and installs an engine that calls the same crate in a
//! WebAssembly module loaded only when a policy first needs it.

use crate::foundation::value::Value;
use std::sync::OnceLock;

pub trait CelEngine {
    /// Whether `expr` compiles; the error on one line.
    fn check(&mut self, expr: &str) -> Result<(), String>;
    /// Evaluate `expr` with these variables.
    fn eval(&mut self, expr: &str, vars: &[(&str, &Value)]) -> Result<Value, String>;
    /// What the last evaluation cost, in cel-go's units.
    fn last_cost(&self) -> u64 {
        0
    }
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
