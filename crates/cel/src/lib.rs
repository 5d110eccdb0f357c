//! Kubernetes CEL (the `kube-cel` libraries) over JSON values.
//!
//! kubeloop's admission code asks two things of CEL: does an expression compile, and what
//! does it evaluate to given some variables. This crate answers both with compiled programs
//! cached by source text. Values cross in and out as JSON, which is what lets the page load
//! this crate as a separate WebAssembly module only when a policy first needs it (the
//! `wasm` feature exports `check` and `evaluate` through wasm-bindgen).

use kube_cel::cel::common::ast::{CallExpr, EntryExpr, Expr, LiteralValue};
use kube_cel::cel::common::types::CelInt;
use kube_cel::cel::extractors::{Arguments, This};
use kube_cel::cel::{objects::Key, Context, ExecutionError, FunctionContext, IdedExpr, Value as CelValue};
use kube_cel::KubeCelExt;

mod parse;
use serde::Serialize;
use serde_json::Value as Json;
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Arc;

/// The most one expression may cost at run time: the API server's `celconfig.PerCallLimit`
/// (cel-go's cost units, about a tenth of a second).
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// cel-go's error when an evaluation passes its cost limit.
pub const COST_LIMIT_EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";

/// The function each macro loop's condition is wrapped in: it adds the cost of one
/// iteration to the evaluation's running cost and stops the loop past the limit.
const METER: &str = "@kubeloop_cost";

thread_local! {
    /// The running cost of the evaluation in progress.
    static COST: Cell<u64> = const { Cell::new(0) };
}

/// Compiled expressions by source text, with their cost meters in place, and the
/// functions of Kubernetes' CEL libraries (registered once: every evaluation is a scope
/// of its own, with its variables, over them).
#[derive(Default)]
pub struct Engine {
    programs: HashMap<String, Result<Rc<Metered>, String>>,
    functions: Option<Context<'static>>,
    last_cost: u64,
}

/// An expression whose macro loops count their iterations, the cost of the rest of it,
/// and what it reads of each variable.
struct Metered {
    expr: IdedExpr,
    base: u64,
    reads: Rc<Reads>,
}

/// What an expression reads of each variable it names: the field paths it selects
/// (`object.spec.replicas` reads `["spec", "replicas"]`; the value there is read whole), or
/// `None` where the variable itself is used (passed to a function, indexed, compared), so
/// all of it is. A variable the expression never names is absent. Two values that agree
/// at these paths give the same result and the same cost: an evaluation needs no more of
/// a large object than these parts.
pub type Reads = BTreeMap<String, Option<Vec<Vec<String>>>>;

fn collect_reads(e: &IdedExpr, out: &mut Reads) {
    // A chain of field selections from an identifier: `object.spec.template` is the root
    // `object` and the path `spec.template`.
    fn chain(e: &IdedExpr) -> Option<(&str, Vec<String>)> {
        match &e.expr {
            Expr::Ident(name) => Some((name, Vec::new())),
            Expr::Select(s) => chain(&s.operand).map(|(root, mut path)| {
                path.push(s.field.clone());
                (root, path)
            }),
            _ => None,
        }
    }
    match chain(e) {
        Some((root, path)) => {
            let paths = out.entry(root.to_string()).or_insert_with(|| Some(Vec::new()));
            match paths {
                Some(list) if !path.is_empty() => list.push(path),
                _ => *paths = None,
            }
        }
        None => children(e).into_iter().for_each(|c| collect_reads(c, out)),
    }
}

/// Put a meter on every comprehension (the loops of `all`, `exists`, `exists_one`, `map`
/// and `filter`: nothing else in CEL repeats). One iteration costs about what cel-go
/// charges for it: one per call, select and identifier in the loop's condition and step.
/// Returns the cost of the nodes outside loops.
fn meter(e: &mut IdedExpr, next_id: &mut u64) -> u64 {
    let own = match &e.expr {
        Expr::Call(_) | Expr::Select(_) | Expr::Ident(_) | Expr::List(_) | Expr::Map(_) | Expr::Struct(_) => 1,
        _ => 0,
    };
    match &mut e.expr {
        Expr::Call(c) => own + c.target.as_deref_mut().map_or(0, |t| meter(t, next_id)) + c.args.iter_mut().map(|a| meter(a, next_id)).sum::<u64>(),
        Expr::Select(s) => own + meter(&mut s.operand, next_id),
        Expr::List(l) => own + l.elements.iter_mut().map(|x| meter(x, next_id)).sum::<u64>(),
        Expr::Map(m) => own + m.entries.iter_mut().map(|x| entry(&mut x.expr, next_id)).sum::<u64>(),
        Expr::Struct(st) => own + st.entries.iter_mut().map(|x| entry(&mut x.expr, next_id)).sum::<u64>(),
        Expr::Comprehension(c) => {
            let outside = meter(&mut c.iter_range, next_id) + meter(&mut c.accu_init, next_id) + meter(&mut c.result, next_id);
            let per_iteration = 1 + meter(&mut c.loop_cond, next_id) + meter(&mut c.loop_step, next_id);
            let cond = std::mem::take(&mut c.loop_cond);
            let mut id = || {
                *next_id += 1;
                *next_id
            };
            let k = IdedExpr { id: id(), expr: Expr::Literal(LiteralValue::Int(CelInt::from(per_iteration as i64))) };
            c.loop_cond = IdedExpr { id: id(), expr: Expr::Call(CallExpr { func_name: METER.to_string(), target: None, args: vec![k, cond] }) };
            outside
        }
        _ => own,
    }
}

fn entry(e: &mut EntryExpr, next_id: &mut u64) -> u64 {
    match e {
        EntryExpr::StructField(f) => meter(&mut f.value, next_id),
        EntryExpr::MapEntry(m) => meter(&mut m.key, next_id) + meter(&mut m.value, next_id),
    }
}

/// CEL's standard functions and Kubernetes' libraries, with the cost meter. This is
/// `Context::default()` with `matches` (and Kubernetes' `find` and `findAll`) on
/// `regex-lite` instead of `regex`: RE2's syntax with its ASCII `\d`, `\w` and `\s`,
/// without the Unicode tables (`\p{..}` classes are refused, saying so), which keeps the
/// page's CEL module small.
fn library() -> Context<'static> {
    use kube_cel::cel::functions as f;
    use kube_cel::cel::functions::time as t;
    let mut ctx = Context::empty();
    ctx.add_function("contains", f::contains);
    ctx.add_function("size", size);
    ctx.add_function("max", f::max);
    ctx.add_function("min", f::min);
    ctx.add_function("startsWith", f::starts_with);
    ctx.add_function("endsWith", f::ends_with);
    ctx.add_function("string", f::string);
    ctx.add_function("bytes", f::bytes);
    ctx.add_function("double", f::double);
    ctx.add_function("int", f::int);
    ctx.add_function("uint", f::uint);
    ctx.add_function("optional.none", f::optional_none);
    ctx.add_function("optional.of", f::optional_of);
    ctx.add_function("optional.ofNonZeroValue", f::optional_of_non_zero_value);
    ctx.add_function("value", f::optional_value);
    ctx.add_function("hasValue", f::optional_has_value);
    ctx.add_function("or", f::optional_or_optional);
    ctx.add_function("orValue", f::optional_or_value);
    ctx.add_function("matches", matches);
    ctx.add_function("find", find);
    ctx.add_function("findAll", find_all);
    ctx.add_function("duration", f::duration);
    ctx.add_function("timestamp", f::timestamp);
    ctx.add_function("getFullYear", t::timestamp_year);
    ctx.add_function("getMonth", t::timestamp_month);
    ctx.add_function("getDayOfYear", t::timestamp_year_day);
    ctx.add_function("getDayOfMonth", t::timestamp_month_day);
    ctx.add_function("getDate", t::timestamp_date);
    ctx.add_function("getDayOfWeek", t::timestamp_weekday);
    ctx.add_function("getHours", t::get_hours);
    ctx.add_function("getMinutes", t::get_minutes);
    ctx.add_function("getSeconds", t::get_seconds);
    ctx.add_function("getMilliseconds", t::get_milliseconds);
    ctx.register_all();
    ctx.add_function(METER, metered_condition);
    ctx
}

/// `size(x)`: a string's size is its number of code points, as in cel-go (the `cel`
/// crate counts bytes); lists, maps and bytes as `cel` does.
fn size(ftx: &FunctionContext, This(this): This<CelValue>) -> Result<i64, ExecutionError> {
    match this {
        CelValue::String(s) => Ok(s.chars().count() as i64),
        other => kube_cel::cel::functions::size(ftx, This(other)),
    }
}

/// Run `f` with `re` compiled (patterns are kept: a policy's is the same on every request).
fn with_regex<T>(ftx: &FunctionContext, re: &Arc<String>, f: impl FnOnce(&regex_lite::Regex) -> T) -> Result<T, ExecutionError> {
    thread_local! {
        static COMPILED: std::cell::RefCell<HashMap<Arc<String>, regex_lite::Regex>> = Default::default();
    }
    COMPILED.with(|c| {
        let mut c = c.borrow_mut();
        if let Some(r) = c.get(re) {
            return Ok(f(r));
        }
        let r = regex_lite::Regex::new(re).map_err(|err| {
            if re.contains("\\p") || re.contains("\\P") {
                ftx.error(format!("'{re}' uses a Unicode class (\\p{{..}}), which kubeloop's CEL does not support (cel-go does)"))
            } else {
                ftx.error(format!("'{re}' not a valid regex:\n{err}"))
            }
        })?;
        let out = f(&r);
        if c.len() >= 256 {
            c.clear();
        }
        c.insert(re.clone(), r);
        Ok(out)
    })
}

/// `s.matches(re)`: whether `re` matches anywhere in `s` (cel-go's `matches`).
fn matches(ftx: &FunctionContext, This(this): This<Arc<String>>, re: Arc<String>) -> Result<bool, ExecutionError> {
    with_regex(ftx, &re, |r| r.is_match(&this))
}

/// Kubernetes' regex library: `s.find(re)` is the first match or `""`.
fn find(ftx: &FunctionContext, This(this): This<Arc<String>>, re: Arc<String>) -> Result<CelValue, ExecutionError> {
    with_regex(ftx, &re, |r| CelValue::String(Arc::new(r.find(&this).map(|m| m.as_str().to_string()).unwrap_or_default())))
}

/// `s.findAll(re)` and `s.findAll(re, limit)`: the matches, at most `limit` of them (all
/// when it is negative, as Go's `FindAllString`).
fn find_all(ftx: &FunctionContext, This(this): This<Arc<String>>, Arguments(args): Arguments) -> Result<CelValue, ExecutionError> {
    let (re, limit) = match (args.first(), args.get(1)) {
        (Some(CelValue::String(re)), None) => (re.clone(), usize::MAX),
        (Some(CelValue::String(re)), Some(CelValue::Int(n))) => (re.clone(), usize::try_from(*n).unwrap_or(usize::MAX)),
        _ => return Err(ftx.error("findAll takes a pattern and an optional int limit")),
    };
    with_regex(ftx, &re, |r| CelValue::List(Arc::new(r.find_iter(&this).take(limit).map(|m| CelValue::String(Arc::new(m.as_str().to_string()))).collect())))
}

/// The meter: add one iteration's cost, stop past the limit, else answer the condition.
fn metered_condition(ftx: &FunctionContext) -> Result<CelValue, ExecutionError> {
    let k = match ftx.args.first().map(|a| &a.expr) {
        Some(Expr::Literal(LiteralValue::Int(k))) => u64::try_from(*k.inner()).unwrap_or(0),
        _ => 0,
    };
    let total = COST.with(|c| {
        let t = c.get().saturating_add(k);
        c.set(t);
        t
    });
    if total > PER_CALL_LIMIT {
        return Err(ftx.error(COST_LIMIT_EXCEEDED));
    }
    match ftx.args.get(1) {
        Some(cond) => ftx.resolve(cond.clone()),
        None => Ok(CelValue::Bool(true)),
    }
}

fn max_id(e: &IdedExpr) -> u64 {
    children(e).into_iter().map(max_id).fold(e.id, u64::max)
}

/// The type name of the first message literal (`Type{field: value}`) in `e`. Kubernetes'
/// CEL environments declare no message types for these expressions, so cel-go's checker
/// refuses every one; the interpreter here has no struct support at all.
fn message_literal(e: &IdedExpr) -> Option<&str> {
    match &e.expr {
        Expr::Struct(st) => Some(st.type_name.as_str()),
        _ => children(e).into_iter().find_map(message_literal),
    }
}

fn children(e: &IdedExpr) -> Vec<&IdedExpr> {
    match &e.expr {
        Expr::Call(c) => c.target.as_deref().into_iter().chain(c.args.iter()).collect(),
        Expr::Select(s) => vec![&s.operand],
        Expr::List(l) => l.elements.iter().collect(),
        Expr::Map(m) => m
            .entries
            .iter()
            .flat_map(|x| match &x.expr {
                EntryExpr::MapEntry(me) => vec![&me.key, &me.value],
                EntryExpr::StructField(f) => vec![&f.value],
            })
            .collect(),
        Expr::Struct(st) => st
            .entries
            .iter()
            .filter_map(|x| match &x.expr {
                EntryExpr::StructField(f) => Some(&f.value),
                EntryExpr::MapEntry(_) => None,
            })
            .collect(),
        Expr::Comprehension(c) => vec![&c.iter_range, &c.accu_init, &c.loop_cond, &c.loop_step, &c.result],
        _ => vec![],
    }
}

impl Engine {
    fn program(&mut self, expr: &str) -> Result<Rc<Metered>, String> {
        self.programs
            .entry(expr.to_string())
            .or_insert_with(|| {
                let mut e = parse::parse(expr)?;
                if let Some(name) = message_literal(&e) {
                    return Err(format!("ERROR: <input>: undeclared reference to '{name}' (in container '')"));
                }
                let mut reads = Reads::new();
                collect_reads(&e, &mut reads);
                let mut next_id = max_id(&e);
                let base = meter(&mut e, &mut next_id);
                Ok(Rc::new(Metered { expr: e, base, reads: Rc::new(reads) }))
            })
            .clone()
    }

    /// The cost of the last evaluation, in cel-go's units (approximately: one per call,
    /// select and identifier evaluated), for the API server's per-binding budget.
    pub fn last_cost(&self) -> u64 {
        self.last_cost
    }

    /// What `expr` reads of each variable (see [`Reads`]).
    pub fn reads(&mut self, expr: &str) -> Result<Rc<Reads>, String> {
        self.program(expr).map(|p| p.reads.clone())
    }

    /// Whether `expr` compiles; the error is the parser's, on one line.
    pub fn check(&mut self, expr: &str) -> Result<(), String> {
        self.program(expr).map(|_| ()).map_err(|e| e.replace('\n', " "))
    }

    /// Evaluate `expr` with the given variables (any serialisable values). Past
    /// [`PER_CALL_LIMIT`] the evaluation stops with cel-go's [`COST_LIMIT_EXCEEDED`].
    pub fn eval<V: Serialize>(&mut self, expr: &str, vars: &[(&str, &V)]) -> Result<Json, String> {
        self.last_cost = 0;
        let program = self.program(expr)?;
        let functions = self.functions.get_or_insert_with(library);
        let mut ctx = functions.new_inner_scope();
        for (name, v) in vars {
            ctx.add_variable_from_value(*name, kube_cel::cel::to_value(v).unwrap_or(CelValue::Null));
        }
        COST.with(|c| c.set(program.base));
        let out = CelValue::resolve(&program.expr, &ctx);
        let cost = COST.with(Cell::get);
        self.last_cost = cost;
        // `||`, `&&` and the loops of `all` and `exists` may swallow the meter's error:
        // the running cost decides.
        if cost > PER_CALL_LIMIT {
            return Err(COST_LIMIT_EXCEEDED.to_string());
        }
        out.map(|v| to_json(&v)).map_err(|e| e.to_string())
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

    /// What `expr` reads of each variable, as JSON (`{"object": [["spec", "replicas"]],
    /// "request": null}`); `""` if it does not compile.
    #[wasm_bindgen]
    pub fn reads(expr: &str) -> String {
        ENGINE.with(|e| e.borrow_mut().reads(expr).map(|r| serde_json::to_string(&*r).unwrap_or_default()).unwrap_or_default())
    }

    /// `vars` is a JSON object of variables; the answer is `{"ok": value, "cost": n}` or
    /// `{"err": message, "cost": n}`.
    #[wasm_bindgen]
    pub fn evaluate(expr: &str, vars: &str) -> String {
        let vars: serde_json::Map<String, serde_json::Value> = match serde_json::from_str(vars) {
            Ok(v) => v,
            Err(e) => return serde_json::json!({"err": format!("bad variables: {e}")}).to_string(),
        };
        let list: Vec<(&str, &serde_json::Value)> = vars.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let (out, cost) = ENGINE.with(|e| {
            let mut e = e.borrow_mut();
            (e.eval(expr, &list), e.last_cost())
        });
        match out {
            Ok(v) => serde_json::json!({"ok": v, "cost": cost}).to_string(),
            Err(e) => serde_json::json!({"err": e, "cost": cost}).to_string(),
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
        // Every function of the standard library is there, Kubernetes' too.
        for (expr, want) in [
            ("'a1b'.matches('\\\\d')", json!(true)),
            ("'k8s'.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')", json!(true)),
            ("'ABC'.matches('(?i)^abc$')", json!(true)),
            ("'abc'.matches('b')", json!(true)),
            ("'abc'.matches('^b')", json!(false)),
            ("size('héllo')", json!(5)),
            ("'héllo'.size()", json!(5)),
            ("size([1, 2])", json!(2)),
            ("timestamp('2024-01-02T03:04:05Z').getFullYear()", json!(2024)),
            ("duration('90s') > duration('1m')", json!(true)),
            ("optional.of(1).orValue(2)", json!(1)),
            ("int('42') + 1 == 43 && uint(1) == 1u", json!(true)),
            ("'a,b'.split(',')", json!(["a", "b"])),
            ("[3, 1, 2].sort()", json!([1, 2, 3])),
            ("max(1, 5)", json!(5)),
            ("'abc 123 45'.find('[0-9]+')", json!("123")),
            ("'abc'.find('[0-9]+')", json!("")),
            ("'abc 123 45'.findAll('[0-9]+')", json!(["123", "45"])),
            ("'1 2 3'.findAll('[0-9]', 2)", json!(["1", "2"])),
            ("'1 2 3'.findAll('[0-9]', -1)", json!(["1", "2", "3"])),
        ] {
            assert_eq!(e.eval(expr, &[] as &[(&str, &Json)]), Ok(want), "{expr}");
        }
        let bad = e.eval("'x'.matches('(')", &[] as &[(&str, &Json)]).unwrap_err();
        assert!(bad.contains("not a valid regex"), "{bad}");
        let unicode = e.eval("'x'.matches('\\\\p{L}')", &[] as &[(&str, &Json)]).unwrap_err();
        assert!(unicode.contains("Unicode class"), "{unicode}");
        assert!(e.eval("object.missing", &[("object", &json!({}))]).is_err());
    }

    #[test]
    fn evaluation_stops_at_the_per_call_cost_limit() {
        let mut e = Engine::default();
        let l: Vec<i64> = (0..20).collect();
        let vars = [("l", &json!(l))];
        // Six nested `all` over 20 items: 64 million iterations without a limit.
        let six = "l.all(a, l.all(b, l.all(c, l.all(d, l.all(e, l.all(f, a + b + c + d + e + f >= 0))))))";
        assert_eq!(e.eval(six, &vars), Err(COST_LIMIT_EXCEEDED.to_string()));
        assert!(e.last_cost() > PER_CALL_LIMIT);
        // Swallowing the error with `||` does not get past it.
        assert_eq!(e.eval(&format!("{six} || true"), &vars), Err(COST_LIMIT_EXCEEDED.to_string()));
        // Two levels cost a few thousand and evaluate.
        assert_eq!(e.eval("l.all(a, l.all(b, a + b >= 0))", &vars), Ok(json!(true)));
        let two = e.last_cost();
        assert!((400..50_000).contains(&two), "{two}");
        // Each macro is metered: map and filter, exists_one.
        assert_eq!(e.eval("l.map(x, x + x).filter(y, y > 30).size()", &vars), Ok(json!(4)));
        assert_eq!(e.eval("l.exists_one(x, x >= 19)", &vars), Ok(json!(true)));
        assert!(e.last_cost() >= 20);
        // Without loops, the cost is the expression's size.
        assert_eq!(e.eval("1 + 2 == 3", &vars), Ok(json!(true)));
        assert!(e.last_cost() < 10);
    }

    #[test]
    fn reads_lists_the_paths_an_expression_selects() {
        let mut e = Engine::default();
        let r = e.reads("object.spec.template.spec.containers.all(c, !c.image.endsWith(':latest')) && has(object.metadata.labels)").unwrap();
        let paths = |v: &[&[&str]]| Some(v.iter().map(|p| p.iter().map(|s| s.to_string()).collect()).collect::<Vec<Vec<String>>>());
        assert_eq!(r.get("object"), Some(&paths(&[&["spec", "template", "spec", "containers"], &["metadata", "labels"]])));
        // The loop's own variable is read too, through the list it walks.
        assert_eq!(r.get("c"), Some(&paths(&[&["image"]])));
        assert_eq!(r.get("oldObject"), None);
        // Used whole: compared, indexed, passed to a function, or shadowed by a loop.
        let whole = e.reads("object == oldObject || object['spec'] != null || size(request) > 0 || [1].all(params, params > 0)").unwrap();
        for v in ["object", "oldObject", "request", "params"] {
            assert_eq!(whole.get(v), Some(&None), "{v}");
        }
        // An index ends the path: what is indexed is read whole.
        let ix = e.reads("object.spec.containers[0].image == 'x'").unwrap();
        assert_eq!(ix.get("object"), Some(&paths(&[&["spec", "containers"]])));
        assert!(e.reads("object.").is_err());
    }
}
