//! Hostile or careless input never panics, hangs or wraps, and the documented limits hold:
//! JSON patches (operation count, copy budget, nesting depth), the JSON lengths maps keep,
//! label-selector strings, quantities and share links.

// Tests build their fixtures in memory; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use base64::Engine as _;
use kubeloop_core::apiserver::patch::{deeper_than, json_patch, JsonPatchError, MAX_JSON_PATCH_COPY_BYTES, MAX_JSON_PATCH_OPERATIONS, MAX_PATCHED_DEPTH};
use kubeloop_core::foundation::labels::{Selector, MAX_SELECTOR_LEN};
use kubeloop_core::foundation::quantity::{canonical, parse, parse_milli};
use kubeloop_core::foundation::sim::MAX_RUN;
use kubeloop_core::foundation::value::{json, Map, Value};
use kubeloop_core::sandbox::Sandbox;
use proptest::prelude::*;

/// `n` cases, and failures reported, not saved next to the test.
fn cases(n: u32) -> ProptestConfig {
    ProptestConfig { cases: n, failure_persistence: None, ..ProptestConfig::default() }
}

// --- JSON values -------------------------------------------------------------------------

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        prop_oneof![Just(""), Just("a"), Just("web"), Just("~"), Just("/"), Just("a\"b\\c"), Just("\u{1}\n\t\u{1f}\u{7f}"), Just("é✓"), Just("0")]
            .prop_map(String::from),
        "[a-z~/]{0,6}",
        (0usize..40).prop_map(|n| "x".repeat(n)),
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-5i64..5).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        // NaN and the infinities become null, as `Value::from(f64)` documents.
        any::<f64>().prop_map(Value::from),
        prop_oneof![Just(-0.0f64), Just(0.1), Just(1e300), Just(5e-324), Just(-1.5e-7), Just(f64::MAX), Just(1e21), Just(123456.789)].prop_map(Value::from),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![Just(Value::Null), any::<bool>().prop_map(Value::Bool), number(), text().prop_map(Value::from)]
}

/// Keys, including the empty key (`/`), keys with the pointer's escapes, and keys JSON
/// must escape.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(""),
        Just("a"),
        Just("b"),
        Just("x"),
        Just("0"),
        Just("1"),
        Just("-"),
        Just("~"),
        Just("/"),
        Just("a/b"),
        Just("~1"),
        Just("é"),
        Just("q\"\n")
    ]
    .prop_map(String::from)
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(5, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..5).prop_map(|e| Value::Object(e.into_iter().collect())),
        ]
    })
}

fn serialised_len(v: &Value) -> usize {
    serde_json::to_string(v).expect("a Value always serialises").len()
}

/// `n` objects nested under the key `x`, around `{}`: `deeper_than(chain(n), n)` is false,
/// `deeper_than(chain(n), n - 1)` true (for n >= 1).
fn chain(n: usize) -> Value {
    let mut v = json!({});
    for _ in 1..n {
        v = json!({ "x": v });
    }
    v
}

// --- JSON patch operations ---------------------------------------------------------------

fn segment() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just(""),
        Just("a"),
        Just("b"),
        Just("x"),
        Just("0"),
        Just("1"),
        Just("2"),
        Just("-"),
        Just("~0"),
        Just("~1"),
        Just("~"),
        Just("~2"),
        Just("01"),
        Just("+1"),
        Just("-1"),
        Just("18446744073709551616"),
        Just("a~1b"),
        Just("é"),
        Just("q\"\n"),
    ]
}

fn pointer() -> impl Strategy<Value = String> {
    prop_oneof![
        prop_oneof![Just(""), Just("/"), Just("/-"), Just("/0"), Just("~0"), Just("~1"), Just("a"), Just("//"), Just("/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a")]
            .prop_map(String::from),
        prop::collection::vec(segment(), 1..5).prop_map(|s| format!("/{}", s.join("/"))),
    ]
}

fn op_kind() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("add"), Just("remove"), Just("replace"), Just("move"), Just("copy"), Just("test"), Just("bogus"), Just("")]
}

/// One operation as a careless client writes it: any field may be missing, and now and
/// then the operation is not an object at all.
fn any_op() -> impl Strategy<Value = Value> {
    let op = (op_kind(), prop::option::weighted(0.95, pointer()), prop::option::weighted(0.9, pointer()), prop::option::weighted(0.9, value())).prop_map(
        |(op, path, from, value)| {
            let mut m = Map::new();
            m.insert("op", Value::from(op));
            if let Some(p) = path {
                m.insert("path", Value::from(p));
            }
            if let Some(f) = from {
                m.insert("from", Value::from(f));
            }
            if let Some(v) = value {
                m.insert("value", v);
            }
            Value::Object(m)
        },
    );
    prop_oneof![12 => op, 1 => leaf(), 1 => (op_kind(), number()).prop_map(|(op, path)| json!({"op": op, "path": path, "from": path}))]
}

fn op(kind: &str, from: &str, path: &str, value: Option<Value>) -> Value {
    let mut m = Map::new();
    m.insert("op", Value::from(kind));
    m.insert("path", Value::from(path));
    if kind == "move" || kind == "copy" {
        m.insert("from", Value::from(from));
    }
    if let Some(v) = value {
        m.insert("value", v);
    }
    Value::Object(m)
}

const DEPTH_MESSAGE: &str = "the patched object nests deeper than 128 levels, the most kubeloop decodes (Kubernetes allows 10000)";

/// Operations that nest: chains up to past the depth limit added, moved under fresh keys,
/// copied into themselves, removed, and the root replaced.
fn nesting_op() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0usize..140).prop_map(|n| op("add", "", "/x", Some(chain(n)))),
        (0usize..140).prop_map(|n| op("add", "", "/x/x", Some(chain(n)))),
        (0usize..140).prop_map(|n| op("add", "", "/y", Some(chain(n)))),
        (0usize..140).prop_map(|n| op("replace", "", "", Some(json!({ "x": chain(n) })))),
        Just(op("add", "", "/n", Some(json!({})))),
        Just(op("move", "/x", "/n/x", None)),
        Just(op("move", "/n", "/x", None)),
        Just(op("move", "/y", "/x/y", None)),
        Just(op("copy", "/x", "/x/x", None)),
        Just(op("copy", "/y", "/x/x", None)),
        Just(op("remove", "", "/x", None)),
        Just(op("remove", "", "/x/x", None)),
    ]
}

/// Operations over a document `{"a": {..}, "b": {..}, "c": [..], "big": ".."}` that copy a
/// lot: the root and its big object are copied into fresh keys, so a few dozen operations
/// can pass the copy budget. The safe ones always apply (they only write `a`, `b`, `d`, an
/// odd key and the end of `c`); the others may not.
fn copy_heavy_op(safe: bool) -> BoxedStrategy<Value> {
    let safe_from = prop_oneof![3 => Just(""), 1 => Just("/a"), 1 => Just("/b"), 1 => Just("/big")];
    let safe_path = prop_oneof![Just("/a"), Just("/b"), Just("/d"), Just("/c/-"), Just("/a~1b~0c")];
    let safe_ops = prop_oneof![
        10 => (safe_from, safe_path.clone()).prop_map(|(f, p)| op("copy", f, p, None)),
        1 => (safe_path, leaf()).prop_map(|(p, v)| op("add", "", p, Some(v))),
        1 => (prop_oneof![Just("/a"), Just("/b")], leaf()).prop_map(|(p, v)| op("replace", "", p, Some(v))),
    ];
    if safe {
        return safe_ops.boxed();
    }
    let from = prop_oneof![Just("/a/a"), Just("/c"), Just("/c/0"), Just("/nope"), Just("")];
    let path = prop_oneof![Just("/c"), Just("/a/a"), Just("/b/b"), Just("/c/0"), Just("/c/9"), Just("")];
    prop_oneof![
        12 => safe_ops,
        1 => (from.clone(), path.clone()).prop_map(|(f, p)| op("copy", f, p, None)),
        1 => path.clone().prop_map(|p| op("remove", "", p, None)),
        1 => (from, path).prop_map(|(f, p)| op("move", f, p, None)),
    ]
    .boxed()
}

fn copy_heavy_ops() -> impl Strategy<Value = Vec<Value>> {
    any::<bool>().prop_flat_map(|safe| prop::collection::vec(copy_heavy_op(safe), 0..40))
}

fn copy_heavy_doc() -> impl Strategy<Value = Value> {
    // `big` is an object (its counted length is kept) of up to a mebibyte.
    let big = prop_oneof![Just(0usize), Just(1), Just(100), Just(1_000)]
        .prop_map(|n| Value::Object((0..n).map(|i| (format!("k{i:04}"), Value::from("x".repeat(1_000)))).collect()));
    (leaf(), leaf(), prop::collection::vec(leaf(), 1..3), big).prop_map(|(a, b, c, big)| json!({"a": {"a": a}, "b": {"b": b}, "c": c, "big": big}))
}

/// What one operation may add to the document's JSON, besides the bytes it copies: the
/// value it carries, and for an insertion the key (at most the pointer's last token, so at
/// most the path less its `/`), its quotes, colon and a comma.
fn allowance(op: &Value) -> usize {
    let kind = op["op"].as_str().unwrap_or("");
    let path = op["path"].as_str().unwrap_or("").len();
    match kind {
        "add" | "replace" => serialised_len(&op["value"]) + path + 3,
        "move" | "copy" => path + 3,
        _ => 0,
    }
}

proptest! {
    #![proptest_config(cases(256))]

    /// Any list of operations on any document: never a panic; a success is no deeper than
    /// the decoding depth and its counted length is its written length; a failure leaves
    /// `null`; and the document patched was a copy, the original untouched.
    #[test]
    fn json_patch_of_random_operations_never_panics_and_a_failed_patch_leaves_null(
        doc in value(),
        ops in prop::collection::vec(any_op(), 0..10),
    ) {
        let before = serde_json::to_string(&doc).unwrap();
        // Count first: maps keep their length, and the patch must make them count again.
        prop_assert_eq!(doc.json_len_within(usize::MAX), Some(before.len()));
        let mut target = doc.clone();
        match json_patch(&mut target, &Value::Array(ops)) {
            Ok(()) => {
                prop_assert!(!deeper_than(&target, MAX_PATCHED_DEPTH));
                prop_assert_eq!(target.json_len_within(usize::MAX), Some(serialised_len(&target)));
            }
            Err(JsonPatchError::Apply(msg)) => {
                prop_assert!(!msg.is_empty());
                prop_assert_eq!(&target, &Value::Null);
            }
            Err(e) => prop_assert!(false, "unexpected {:?}", e),
        }
        prop_assert_eq!(serde_json::to_string(&doc).unwrap(), before.clone());
        prop_assert_eq!(doc.json_len_within(usize::MAX), Some(before.len()));
    }

    /// Nesting operations: a success is never deeper than `MAX_PATCHED_DEPTH`; a list whose
    /// operations each apply (applied one at a time, never passing the limit) succeeds as a
    /// whole, with the same result; the depth refusal comes only when the result is too
    /// deep; and any failure leaves `null`.
    #[test]
    fn json_patch_results_never_nest_past_the_decoding_depth(
        depth in 0usize..140,
        ops in prop::collection::vec(nesting_op(), 0..10),
    ) {
        let doc = json!({ "x": chain(depth), "y": {} });
        let mut whole = doc.clone();
        let result = json_patch(&mut whole, &Value::Array(ops.clone()));
        let mut stepwise = doc.clone();
        let each_applies = !deeper_than(&doc, MAX_PATCHED_DEPTH) && ops.iter().all(|o| json_patch(&mut stepwise, &Value::Array(vec![o.clone()])).is_ok());
        match &result {
            Ok(()) => prop_assert!(!deeper_than(&whole, MAX_PATCHED_DEPTH)),
            Err(JsonPatchError::Apply(msg)) => {
                prop_assert_eq!(&whole, &Value::Null);
                if msg == DEPTH_MESSAGE {
                    prop_assert!(!each_applies, "refused as too deep, yet every step stays within the limit");
                }
            }
            Err(e) => prop_assert!(false, "unexpected {:?}", e),
        }
        if each_applies {
            prop_assert_eq!(&result, &Ok(()));
            prop_assert_eq!(&whole, &stepwise);
        }
        // The doc started too deep, and no operation made it shallower: refused.
        if depth >= MAX_PATCHED_DEPTH && ops.is_empty() {
            prop_assert_eq!(result, Err(JsonPatchError::Apply(DEPTH_MESSAGE.into())));
        }
    }

    /// A body that is not a list, or lists more than `MAX_JSON_PATCH_OPERATIONS`, is
    /// refused before any operation runs: the target is left as it was (not `null`).
    #[test]
    fn json_patch_refuses_a_body_that_is_not_a_list_or_too_long_without_touching_the_target(
        doc in value(),
        body in value().prop_filter("not a list", |v| !v.is_array()),
        extra in prop_oneof![Just(1usize), 1usize..100],
    ) {
        let mut target = doc.clone();
        prop_assert_eq!(json_patch(&mut target, &body), Err(JsonPatchError::Apply("json patch must be an array of operations".into())));
        prop_assert_eq!(&target, &doc);
        let n = MAX_JSON_PATCH_OPERATIONS + extra;
        prop_assert_eq!(json_patch(&mut target, &Value::Array(vec![Value::Null; n])), Err(JsonPatchError::TooManyOperations(n)));
        prop_assert_eq!(&target, &doc);
    }
}

/// Exactly `MAX_JSON_PATCH_OPERATIONS` operations are allowed.
#[test]
fn json_patch_allows_exactly_the_maximum_number_of_operations() {
    let doc = json!({"a": [1, {"b": "c"}], "d": null});
    let mut target = doc.clone();
    let test = json!({"op": "test", "path": "", "value": (doc.clone())});
    assert_eq!(json_patch(&mut target, &Value::Array(vec![test; MAX_JSON_PATCH_OPERATIONS])), Ok(()));
    assert_eq!(target, doc);
}

proptest! {
    #![proptest_config(cases(128))]

    /// Copy-heavy lists: the copy budget is exactly the sum of the copied values' written
    /// lengths (a list passes it iff that sum stays within `MAX_JSON_PATCH_COPY_BYTES`, and
    /// the refusal names the sum at the copy that passed it); otherwise the list does what
    /// its operations do one at a time. A result's JSON is at most the original plus the
    /// bytes copied (so at most the budget) plus what each operation carries
    /// ([`allowance`]).
    #[test]
    fn json_patch_copies_at_most_the_copy_budget_and_grows_the_document_by_no_more(
        doc in copy_heavy_doc(),
        ops in copy_heavy_ops(),
    ) {
        let original = serialised_len(&doc);
        let mut whole = doc.clone();
        let result = json_patch(&mut whole, &Value::Array(ops.clone()));

        // The same operations one at a time, each with a fresh budget, counting what each
        // copy copies (`json_len_within` is checked against serde_json below).
        let mut t = doc.clone();
        let mut copied = 0usize;
        let mut over_budget_at: Option<usize> = None;
        let mut failed: Option<JsonPatchError> = None;
        for o in &ops {
            if o["op"] == "copy" {
                if let Some(v) = t.pointer(o["from"].as_str().unwrap()) {
                    copied += v.json_len_within(usize::MAX).unwrap();
                    if copied > MAX_JSON_PATCH_COPY_BYTES && over_budget_at.is_none() {
                        over_budget_at = Some(copied);
                    }
                }
            }
            if over_budget_at.is_some() {
                break;
            }
            if let Err(e) = json_patch(&mut t, &Value::Array(vec![o.clone()])) {
                failed = Some(e);
                break;
            }
        }
        match (over_budget_at, failed) {
            (Some(size), _) => {
                prop_assert_eq!(&whole, &Value::Null);
                let want = format!("Unable to complete the copy, the accumulated size increase of copy is {size}, exceeding the limit {MAX_JSON_PATCH_COPY_BYTES}");
                prop_assert_eq!(result, Err(JsonPatchError::Apply(want)));
            }
            (None, Some(e)) => {
                prop_assert_eq!(&whole, &Value::Null);
                prop_assert_eq!(result, Err(e));
            }
            (None, None) => {
                prop_assert_eq!(result, Ok(()));
                prop_assert_eq!(&whole, &t);
                let grown = serialised_len(&whole);
                let carried: usize = ops.iter().map(allowance).sum();
                prop_assert!(copied <= MAX_JSON_PATCH_COPY_BYTES);
                prop_assert!(grown <= original + copied + carried, "{} > {} + {} + {}", grown, original, copied, carried);
                prop_assert!(grown <= original + MAX_JSON_PATCH_COPY_BYTES + carried);
                prop_assert_eq!(whole.json_len_within(usize::MAX), Some(grown));
            }
        }
    }
}

/// A patch body of about 2.2 MB (under the API server's 3 MiB) whose 6,001 operations nest
/// `/x` about 252,000 levels deep, each round adding a 126-level chain and moving `/x` to
/// its bottom, then `last`.
fn deep_nesting_patch(last: Option<Value>) -> Value {
    let bottom = "/x".repeat(126);
    let mut ops = vec![op("add", "", "/x", Some(chain(127)))];
    for _ in 0..2_000 {
        ops.push(op("add", "", "/n", Some(chain(126))));
        ops.push(op("move", "/x", &format!("/n{bottom}"), None));
        ops.push(op("move", "/n", "/x", None));
    }
    ops.extend(last);
    Value::Array(ops)
}

/// Run `f` on a thread with a main thread's 8 MiB of stack.
fn on_big_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new().stack_size(8 << 20).spawn(f).expect("a thread starts").join().expect("the thread finishes");
}

/// A result nested far past the limit is refused and taken apart without recursion.
#[test]
fn json_patch_refuses_a_result_nested_a_quarter_million_levels_without_overflowing_the_stack() {
    on_big_stack(|| {
        let ops = deep_nesting_patch(None);
        assert!(ops.to_string().len() < 3 * 1024 * 1024);
        let mut t = json!({});
        assert_eq!(json_patch(&mut t, &ops), Err(JsonPatchError::Apply(DEPTH_MESSAGE.into())));
        assert_eq!(t, Value::Null);
    });
}

/// The same nesting, then an operation that drops the deep subtree (`remove /x`,
/// `replace /x`, a `move` of `/x` to a missing place, a `copy` of it): each is taken apart
/// without recursion or refused before it is cloned, and the process survives.
#[test]
fn json_patch_dropping_a_subtree_nested_a_quarter_million_levels_does_not_overflow_the_stack() {
    on_big_stack(|| {
        let ops = deep_nesting_patch(Some(op("remove", "", "/x", None)));
        let mut t = json!({});
        assert_eq!(json_patch(&mut t, &ops), Ok(()));
        assert_eq!(t, json!({}));
        let ops = deep_nesting_patch(Some(op("replace", "", "/x", Some(json!(1)))));
        let mut t = json!({});
        assert_eq!(json_patch(&mut t, &ops), Ok(()));
        assert_eq!(t, json!({"x": 1}));
        let ops = deep_nesting_patch(Some(op("move", "/x", "/missing/y", None)));
        let mut t = json!({});
        assert!(matches!(json_patch(&mut t, &ops), Err(JsonPatchError::Apply(_))));
        assert_eq!(t, Value::Null);
        let ops = deep_nesting_patch(Some(op("copy", "/x", "/y", None)));
        let mut t = json!({});
        assert_eq!(json_patch(&mut t, &ops), Err(JsonPatchError::Apply(DEPTH_MESSAGE.into())));
    });
}

// --- The lengths maps keep -----------------------------------------------------------------

/// A change somewhere in a tree: `at` picks a node (index by index, modulo the children),
/// `kind` what to do there.
#[derive(Debug, Clone)]
struct Change {
    at: Vec<usize>,
    kind: u8,
    key: String,
    value: Value,
    /// Count the tree with this budget before the change (a count cut short, or a full one).
    precount: usize,
}

fn change() -> impl Strategy<Value = Change> {
    (prop::collection::vec(any::<usize>(), 0..5), 0u8..12, key(), value(), prop_oneof![Just(usize::MAX), 0usize..64])
        .prop_map(|(at, kind, key, value, precount)| Change { at, kind, key, value, precount })
}

fn node_at<'a>(v: &'a mut Value, at: &[usize]) -> &'a mut Value {
    let Some((&i, rest)) = at.split_first() else { return v };
    let len = match v {
        Value::Array(a) => a.len(),
        Value::Object(m) => m.len(),
        _ => 0,
    };
    if len == 0 {
        return v;
    }
    match v {
        Value::Array(a) => node_at(&mut a[i % len], rest),
        Value::Object(m) => node_at(m.values_mut().nth(i % len).expect("i % len < len"), rest),
        _ => unreachable!("only arrays and objects have children"),
    }
}

/// Apply a change through one of the ways code changes a tree: replacing a node,
/// `insert`, `remove`, `entry`, `retain`, `clear`, `values_mut`, `get_mut`, `IndexMut`,
/// `pointer_mut`, and an array's own methods.
fn apply_change(root: &mut Value, c: &Change) {
    if c.kind == 11 {
        let pointer: String = c.at.iter().map(|i| format!("/{}", i % 3)).collect();
        if let Some(n) = root.pointer_mut(&pointer) {
            *n = c.value.clone();
        }
        return;
    }
    let node = node_at(root, &c.at);
    match (c.kind, node) {
        (0, n) => *n = c.value.clone(),
        (1, Value::Object(m)) => {
            m.insert(c.key.as_str(), c.value.clone());
        }
        (2, Value::Object(m)) => {
            m.remove(&c.key);
        }
        (3, Value::Object(m)) => {
            *m.entry(c.key.as_str()).or_insert(Value::Null) = c.value.clone();
        }
        (4, Value::Object(m)) => m.retain(|k, _| k.len() % 2 == 0),
        (5, Value::Object(m)) => m.clear(),
        (6, Value::Object(m)) => {
            if let Some(v) = m.values_mut().next() {
                *v = c.value.clone();
            }
        }
        (7, Value::Object(m)) => {
            if let Some(v) = m.get_mut(&c.key) {
                *v = c.value.clone();
            }
        }
        (8, n @ (Value::Null | Value::Object(_))) => n[c.key.as_str()] = c.value.clone(),
        (9, Value::Array(a)) => a.push(c.value.clone()),
        (10, Value::Array(a)) => {
            a.pop();
        }
        (_, n) => *n = json!({ (c.key): (c.value) }),
    }
}

proptest! {
    #![proptest_config(cases(256))]

    /// `json_len_within` is the length `serde_json` writes, for any tree (escapes, floats,
    /// extreme integers), exactly at the budget and `None` one byte under it; and it stays so
    /// after any sequence of changes to a clone (maps cache their length, a change must
    /// drop the cache), with counts cut short in between, while the original keeps its own.
    #[test]
    fn json_len_within_is_the_written_length_even_after_changes_to_a_clone(
        v in value(),
        changes in prop::collection::vec(change(), 0..8),
    ) {
        let text = serde_json::to_string(&v).unwrap();
        let n = text.len();
        prop_assert_eq!(v.json_len_within(usize::MAX), Some(n));
        prop_assert_eq!(v.json_len_within(n), Some(n));
        prop_assert_eq!(v.json_len_within(n - 1), None);
        prop_assert_eq!(v.json_len_within(0), None);
        let mut c = v.clone();
        for ch in &changes {
            let _ = c.json_len_within(ch.precount);
            apply_change(&mut c, ch);
            let m = serialised_len(&c);
            prop_assert_eq!(c.json_len_within(usize::MAX), Some(m), "after {:?}", ch);
            prop_assert_eq!(c.json_len_within(m - 1), None);
            prop_assert_eq!(v.json_len_within(usize::MAX), Some(n));
        }
        prop_assert_eq!(serde_json::to_string(&v).unwrap(), text);
        // Read back from its text, the tree counts the same.
        // (serde_json may read a float back a unit off, so compare with its own text.)
        let back: Value = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        prop_assert_eq!(back.json_len_within(usize::MAX), Some(serialised_len(&back)));
    }
}

// --- Label selectors -----------------------------------------------------------------------

fn selector_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("a"),
        Just("b"),
        Just("x"),
        Just("Z"),
        Just("1"),
        Just("0"),
        Just("12"),
        Just("="),
        Just("=="),
        Just("!"),
        Just("!="),
        Just(","),
        Just("("),
        Just(")"),
        Just("in"),
        Just("notin"),
        Just(" "),
        Just(" "),
        Just("\t"),
        Just("-"),
        Just("."),
        Just("/"),
        Just("_"),
        Just(">"),
        Just("<"),
        Just("a.b/c"),
        Just("\0"),
        Just("é"),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|p| p.concat())
}

/// Selectors as a person writes them: valid requirements, odd spacing.
fn selector_written() -> impl Strategy<Value = String> {
    let key = prop_oneof![Just("a"), Just("b"), Just("in"), Just("notin"), Just("x.y/z"), Just("k-1"), Just("A_b")];
    let val = prop_oneof![Just(""), Just("a"), Just("in"), Just("notin"), Just("1"), Just("v_2"), Just("0")];
    let sp = prop_oneof![Just(""), Just(" "), Just("\t "), Just("\n")];
    let req = (key, prop::collection::vec(val, 0..4), 0u8..9, sp.clone(), sp).prop_map(|(k, vals, op, s1, s2)| {
        let v0 = vals.first().copied().unwrap_or("");
        let num = if v0.bytes().all(|b| b.is_ascii_digit()) && !v0.is_empty() { v0 } else { "7" };
        match op {
            0 => format!("{k}{s1}={s2}{v0}"),
            1 => format!("{k}{s1}=={s2}{v0}"),
            2 => format!("{k}{s1}!={s2}{v0}"),
            3 => format!("{k} {s1}in{s2}({})", vals.join(&format!("{s1},{s2}"))),
            4 => format!("{k}{s1} notin {s2}({})", vals.join(",")),
            5 => format!("{s1}{k}{s2}"),
            6 => format!("!{s1}{k}"),
            7 => format!("{k}{s1}>{s2}{num}"),
            _ => format!("{k}<{num}"),
        }
    });
    prop::collection::vec(req, 0..5).prop_map(|r| r.join(","))
}

/// A selector's requirements, read from its `Debug` form `Selector([("k", "In", ["v"])])`
/// (the type keeps them private and has no printer): label keys and values have no quotes
/// or backslashes, so the strings are read as they are.
fn requirements(s: &Selector) -> Vec<(String, String, Vec<String>)> {
    let debug = format!("{s:?}");
    let mut tokens: Vec<Option<String>> = Vec::new(); // None: a `]`
    let mut chars = debug.chars();
    let mut depth = 0;
    while let Some(c) = chars.next() {
        match c {
            '"' => tokens.push(Some(chars.by_ref().take_while(|&c| c != '"').collect())),
            '[' => depth += 1,
            ']' if depth == 2 => {
                depth -= 1;
                tokens.push(None);
            }
            ']' => depth -= 1,
            _ => {}
        }
    }
    let mut out = Vec::new();
    let mut it = tokens.into_iter();
    while let Some(Some(key)) = it.next() {
        let op = it.next().flatten().expect("an operator after a key");
        let values = it.by_ref().map_while(|t| t).collect();
        out.push((key, op, values));
    }
    out
}

/// The string form of parsed requirements (as `labels.Selector.String` writes them).
fn print_selector(s: &Selector) -> String {
    requirements(s)
        .iter()
        .map(|(k, op, vals)| match op.as_str() {
            "In" => format!("{k} in ({})", vals.join(",")),
            "NotIn" => format!("{k} notin ({})", vals.join(",")),
            "Exists" => k.clone(),
            "DoesNotExist" => format!("!{k}"),
            "Gt" => format!("{k}>{}", vals[0]),
            "Lt" => format!("{k}<{}", vals[0]),
            other => panic!("operator {other}"),
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn length_message(len: usize) -> String {
    format!("unable to parse label selector: it is {len} bytes long, more than the limit of 65536 bytes")
}

proptest! {
    #![proptest_config(cases(256))]

    /// Any string of selector characters parses or is refused with a message, and a
    /// selector that parses, printed back, parses to the same selector.
    #[test]
    fn label_selector_strings_never_panic_and_what_parses_prints_back_the_same(
        s in prop_oneof![selector_text(), selector_written(), "[ -~]{0,40}"],
    ) {
        match Selector::parse(&s) {
            Ok(sel) => {
                let printed = print_selector(&sel);
                prop_assert_eq!(Selector::parse(&printed), Ok(sel), "{:?} printed as {:?}", s, printed);
            }
            Err(e) => prop_assert!(!e.is_empty()),
        }
    }

    /// Selectors as people write them (valid requirements, any spacing) always parse.
    #[test]
    fn well_formed_label_selectors_parse_whatever_the_spacing(s in selector_written()) {
        prop_assert!(Selector::parse(&s).is_ok(), "{:?}: {:?}", s, Selector::parse(&s));
    }
}

proptest! {
    #![proptest_config(cases(32))]

    /// Past `MAX_SELECTOR_LEN` bytes a selector is refused with the length message, whatever
    /// it holds; up to it, it is parsed (and never refused for its length).
    #[test]
    fn label_selectors_over_64_kib_are_refused_with_the_length_message(
        unit in selector_text().prop_map(|s| if s.is_empty() { "a".to_string() } else { s }),
        extra in prop_oneof![Just(1usize), 1usize..3000],
    ) {
        let mut s = String::new();
        while s.len() < MAX_SELECTOR_LEN + extra {
            s.push_str(&unit);
        }
        prop_assert_eq!(Selector::parse(&s), Err(length_message(s.len())));
        let mut cut = MAX_SELECTOR_LEN;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        if let Err(e) = Selector::parse(&s) {
            prop_assert!(!e.contains("bytes long"), "{}", e);
        }
    }
}

// --- Quantities ---------------------------------------------------------------------------

fn quantity_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("0"),
        Just("1"),
        Just("5"),
        Just("9"),
        Just("12"),
        Just("999999999999999999"),
        Just("9223372036854775807"),
        Just("2147483648"),
        Just("4294967296"),
        Just("."),
        Just("-"),
        Just("+"),
        Just("e"),
        Just("E"),
        Just("i"),
        Just("n"),
        Just("u"),
        Just("m"),
        Just("k"),
        Just("K"),
        Just("M"),
        Just("G"),
        Just("T"),
        Just("P"),
        Just("Ki"),
        Just("Mi"),
        Just("Gi"),
        Just("Ei"),
        Just(" "),
        Just("x"),
    ];
    prop_oneof![
        prop::collection::vec(piece, 0..8).prop_map(|p| p.concat()),
        (prop_oneof![Just(""), Just("-"), Just("+")], quantity_body()).prop_map(|(s, b)| s.to_string() + &b)
    ]
}

/// An unsigned number and suffix, mostly well formed.
fn quantity_body() -> impl Strategy<Value = String> {
    let suffix = prop_oneof![
        Just(""),
        Just("n"),
        Just("u"),
        Just("m"),
        Just("k"),
        Just("M"),
        Just("G"),
        Just("T"),
        Just("P"),
        Just("E"),
        Just("Ki"),
        Just("Mi"),
        Just("Gi"),
        Just("Ti"),
        Just("Pi"),
        Just("Ei"),
        Just("e3"),
        Just("e-3"),
        Just("E+20"),
        Just("e18"),
        Just("e-2147483648"),
        Just("e2147483647"),
        Just("e4294967296"),
        Just("e9223372036854775807"),
        Just("e-9223372036854775808"),
    ];
    ("[0-9]{0,24}", prop::option::of("[0-9]{0,14}"), suffix).prop_map(|(int, frac, suffix)| match frac {
        Some(f) => format!("{int}.{f}{suffix}"),
        None => format!("{int}{suffix}"),
    })
}

proptest! {
    #![proptest_config(cases(512))]

    /// Any quantity-like text parses or is refused, and a parsed value never wraps: its sign
    /// is the text's, a saturated value sits at +-`i64::MAX`, and `parse_milli` is `parse` of
    /// the trimmed text.
    #[test]
    fn quantities_never_panic_and_their_milli_value_never_wraps(s in quantity_text()) {
        if let Ok(q) = parse(&s) {
            if s.starts_with('-') {
                prop_assert!(q.milli <= 0, "{:?} -> {}", s, q.milli);
            } else {
                prop_assert!(q.milli >= 0, "{:?} -> {}", s, q.milli);
            }
            prop_assert!(q.milli != i64::MIN);
            if q.saturated {
                prop_assert_eq!(q.milli.unsigned_abs(), i64::MAX as u64);
            }
        }
        prop_assert_eq!(parse_milli(&s), parse(s.trim()).ok().map(|q| q.milli));
    }

    /// A minus sign negates exactly: `-s` parses iff `s` does, to minus its value.
    #[test]
    fn a_negative_quantity_is_exactly_the_negation_of_the_positive_one(body in quantity_body().prop_filter("a sign alone is zero", |b| !b.is_empty())) {
        let pos = parse(&body).map(|q| (q.milli, q.saturated));
        let neg = parse(&format!("-{body}")).map(|q| (-q.milli, q.saturated));
        prop_assert_eq!(pos, neg, "{:?}", body);
    }

    /// More is never less: with the same suffix, a larger number never parses to a smaller
    /// milli value (rounding up and saturating both keep the order; a wrap would not).
    #[test]
    fn larger_quantities_never_parse_smaller(a in any::<u128>(), b in any::<u128>(), shift in 0u32..20, suffix in quantity_body().prop_map(|b| b.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.').to_string())) {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let (lo, hi) = (lo >> (shift * 6), hi >> (shift * 6));
        if let (Some(x), Some(y)) = (parse_milli(&format!("{lo}{suffix}")), parse_milli(&format!("{hi}{suffix}"))) {
            prop_assert!(x <= y, "{}{} -> {} but {}{} -> {}", lo, suffix, x, hi, suffix, y);
        }
    }

    /// The canonical form of an accepted quantity is itself accepted, means the same
    /// number of milli-units, and is its own canonical form; text that is not a quantity
    /// comes back unchanged.
    #[test]
    fn canonical_quantities_parse_to_the_same_value(s in quantity_text()) {
        let c = canonical(&s);
        match parse_milli(&s) {
            Some(milli) => {
                prop_assert_eq!(parse_milli(&c), Some(milli), "{:?} -> {:?}", s, c);
                prop_assert_eq!(canonical(&c), c.clone(), "{:?} -> {:?}", s, c);
            }
            None => prop_assert_eq!(c, s),
        }
    }
}

// --- Share links --------------------------------------------------------------------------

const CONFIG_MAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v\n";

/// A link to a sandbox with one ConfigMap, a kubectl command, an edit and a second of
/// simulated time (made once).
fn real_link() -> &'static str {
    static LINK: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LINK.get_or_init(|| {
        let mut sb = Sandbox::new(CONFIG_MAP, Some(1));
        sb.kubectl("get cm");
        sb.apply(&CONFIG_MAP.replace("k: v", "k: w"));
        sb.advance(1_000);
        sb.share()
    })
}

fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(data)
}

fn link_of_json(json: &str) -> String {
    format!("s=1.{}", b64(&miniz_oxide::deflate::compress_to_vec(json.as_bytes(), 6)))
}

/// Opening a link gives a sandbox or a message, never a panic, and never a run past the
/// longest one replayed.
fn open_is_ok_or_says_why(link: &str) -> Result<(), TestCaseError> {
    match Sandbox::open(link) {
        Ok(sb) => prop_assert!(sb.cluster.now <= MAX_RUN),
        Err(e) => prop_assert!(!e.is_empty()),
    }
    Ok(())
}

/// A state in the link's shape with careless or hostile fields: kept lengths that do not
/// fit or overflow, unknown users, versions and faults, odd kubectl lines, times far
/// out (small ones otherwise, so a replay stays short).
fn hostile_state() -> impl Strategy<Value = String> {
    let big = prop_oneof![Just(0u64), Just(1), Just(5), Just(60), Just(u64::MAX), Just(u64::MAX / 2 + 1), Just(1 << 32)];
    let t = prop_oneof![8 => 0u64..5_000, 1 => Just(MAX_RUN + 1), 1 => Just(u64::MAX)];
    let user = prop_oneof![Just("admin"), Just(""), Just("nobody"), Just("admin\0")];
    let line = prop_oneof![
        Just("get pods"),
        Just(""),
        Just("get"),
        Just("delete cm c"),
        Just("scale deploy x --replicas=-1"),
        Just("get pods -l 'a in ('"),
        Just("get cm -l x>99999999999999999999"),
        Just("patch cm c --type=json -p '[{\"op\":\"copy\",\"from\":\"\",\"path\":\"/x\"}]'"),
        Just("patch cm c -p '{\"data\":{\"k\":\"1e1000\"}}'"),
        Just("run p --image=x --requests=cpu=9E"),
        Just("\"unterminated"),
        Just("get pods --watch"),
    ];
    let edit = (big.clone(), big, "[ -~\n]{0,40}").prop_map(|(p, s, t)| json!({"p": p, "s": s, "t": t}));
    let what = prop_oneof![
        edit.clone().prop_map(|e| json!({ "apply": e })),
        line.prop_map(|l| json!({ "kubectl": l })),
        (prop_oneof![Just("nodeDown"), Just("controllerDown"), Just("webhookUp"), Just("meteor")], prop_oneof![Just("node-a"), Just(""), Just("x")])
            .prop_map(|(k, n)| json!({ "fault": [k, n] })),
        Just(json!({ "unknown": 1 })),
    ];
    let done = (t.clone(), user.clone(), what).prop_map(|(t, user, what)| {
        let mut m = what.as_object().unwrap().clone();
        m.insert("t", json!(t));
        m.insert("user", json!(user));
        Value::Object(m)
    });
    let setup = prop_oneof![
        Just(json!({"p": 0, "s": 0, "t": CONFIG_MAP})),
        Just(json!({"p": 0, "s": 0, "t": ""})),
        Just(json!({"p": 0, "s": 0, "t": "kind: [unclosed\n"})),
        edit,
    ];
    (prop_oneof![4 => Just(1u64), 1 => Just(0), 1 => Just(2)], any::<u64>(), setup, prop::collection::vec(done, 0..3), t, user)
        .prop_map(|(v, seed, setup, log, t, user)| json!({"v": v, "seed": seed, "setup": setup, "log": log, "t": t, "user": user}).to_string())
}

proptest! {
    #![proptest_config(cases(64))]

    /// Any text, with or without the `s=1.` prefix, opens or is refused with a message.
    #[test]
    fn share_links_of_random_text_open_or_say_why(s in prop_oneof!["[ -~]{0,80}", "[ -~]{0,80}".prop_map(|s| format!("s=1.{s}")), "[A-Za-z0-9_=-]{0,80}".prop_map(|s| format!("#s=1.{s}"))]) {
        open_is_ok_or_says_why(&s)?;
    }

    /// Random bytes as a base64url payload open or are refused with a message.
    #[test]
    fn share_links_of_random_base64url_payloads_open_or_say_why(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        open_is_ok_or_says_why(&format!("s=1.{}", b64(&bytes)))?;
    }

    /// Compressed states with careless or hostile fields open or are refused with a
    /// message: no wrap in the kept lengths, no run past `MAX_RUN`.
    #[test]
    fn share_links_of_hostile_states_open_or_say_why(state in hostile_state()) {
        open_is_ok_or_says_why(&link_of_json(&state))?;
    }

    /// A real link cut short or with one character changed opens or is refused with a
    /// message.
    #[test]
    fn share_links_truncated_or_corrupted_open_or_say_why(at in any::<prop::sample::Index>(), byte in prop_oneof![Just(b'A'), Just(b'_'), Just(b'-'), Just(b'0'), Just(b'.'), Just(b'='), Just(b'*'), any::<u8>().prop_filter("ascii", u8::is_ascii)], cut in any::<bool>()) {
        let link = real_link();
        let i = at.index(link.len());
        if cut {
            open_is_ok_or_says_why(&link[..i])?;
        } else {
            let mut b = link.as_bytes().to_vec();
            b[i] = byte;
            open_is_ok_or_says_why(&String::from_utf8(b).unwrap())?;
        }
    }
}

/// Every truncation of a real link opens or is refused with a message.
#[test]
fn share_links_cut_anywhere_open_or_say_why() {
    let link = real_link();
    for i in 0..link.len() {
        if let Err(e) = open_is_ok_or_says_why(&link[..i]) {
            panic!("{:?}: {e}", &link[..i]);
        }
    }
}

/// The real link itself opens, and a link one character over the length bound is refused
/// as too long.
#[test]
fn share_links_open_and_overlong_ones_are_refused_by_length() {
    let link = real_link();
    let sb = Sandbox::open(link).expect("a link just made opens");
    assert_eq!(sb.cluster.now, 1_000);
    let long = format!("s=1.{}", "A".repeat(kubeloop_core::sandbox::MAX_LINK));
    assert!(Sandbox::open(&long).err().unwrap().contains("the link is too long"));
}
