//! JSON trees whose objects share structure.
//!
//! Every stored object is a JSON tree, and every write makes a new version of one: a
//! kubelet sets a pod's status, a controller bumps a replica count. With an ordinary tree
//! each version is a deep copy. Here a JSON object is a reference-counted, key-sorted
//! vector of entries: cloning a tree copies one pointer per object, and changing a field
//! copies only the objects on the path to it (`Arc::make_mut`). Versions of a pod in the
//! watch history share their spec; the informers' caches share everything.
//!
//! The API mirrors `serde_json::Value` (same variants, accessors, indexing and `json!`),
//! and keys iterate in sorted order, as a `serde_json` map without `preserve_order` does,
//! so output is the same byte for byte.

use crate::foundation::sort::Sort;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

pub use crate::json;
pub use serde_json::Number;

/// Build a [`Value`] with `serde_json`'s `json!` syntax: literals, `null`, arrays,
/// objects with literal or `(expression)` keys, and interpolated expressions (borrowed and
/// converted by [`ToValue`]; an interpolated [`Value`] is shared, not copied).
#[macro_export]
macro_rules! json {
    (null) => { $crate::foundation::value::Value::Null };
    (true) => { $crate::foundation::value::Value::Bool(true) };
    (false) => { $crate::foundation::value::Value::Bool(false) };
    ([ $($tt:tt)* ]) => { $crate::foundation::value::Value::Array($crate::json_items!([] $($tt)*)) };
    ({}) => { $crate::foundation::value::Value::Object($crate::foundation::value::Map::new()) };
    ({ $($tt:tt)+ }) => { $crate::foundation::value::Value::Object($crate::json_entries!([] $($tt)*).into_iter().collect()) };
    ($other:expr) => { $crate::foundation::value::ToValue::to_value(&$other) };
}

/// The elements of a `json!` array, gathered into one `vec!`.
#[doc(hidden)]
#[macro_export]
macro_rules! json_items {
    ([$($done:expr,)*]) => { ::std::vec![$($done,)*] };
    ([$($done:expr,)*] null $(, $($rest:tt)*)?) => { $crate::json_items!([$($done,)* $crate::json!(null),] $($($rest)*)?) };
    ([$($done:expr,)*] [$($a:tt)*] $(, $($rest:tt)*)?) => { $crate::json_items!([$($done,)* $crate::json!([$($a)*]),] $($($rest)*)?) };
    ([$($done:expr,)*] {$($o:tt)*} $(, $($rest:tt)*)?) => { $crate::json_items!([$($done,)* $crate::json!({$($o)*}),] $($($rest)*)?) };
    ([$($done:expr,)*] $e:expr , $($rest:tt)*) => { $crate::json_items!([$($done,)* $crate::json!($e),] $($rest)*) };
    ([$($done:expr,)*] $e:expr) => { $crate::json_items!([$($done,)* $crate::json!($e),]) };
}

/// The entries of a `json!` object, gathered into one `vec!` of pairs.
#[doc(hidden)]
#[macro_export]
macro_rules! json_entries {
    ([$($done:expr,)*]) => { ::std::vec![$($done,)*] };
    (@value [$($done:expr,)*] [$k:expr] null $(, $($rest:tt)*)?) => {
        $crate::json_entries!([$($done,)* ($k, $crate::json!(null)),] $($($rest)*)?)
    };
    (@value [$($done:expr,)*] [$k:expr] [$($a:tt)*] $(, $($rest:tt)*)?) => {
        $crate::json_entries!([$($done,)* ($k, $crate::json!([$($a)*])),] $($($rest)*)?)
    };
    (@value [$($done:expr,)*] [$k:expr] {$($o:tt)*} $(, $($rest:tt)*)?) => {
        $crate::json_entries!([$($done,)* ($k, $crate::json!({$($o)*})),] $($($rest)*)?)
    };
    (@value [$($done:expr,)*] [$k:expr] $e:expr , $($rest:tt)*) => {
        $crate::json_entries!([$($done,)* ($k, $crate::json!($e)),] $($rest)*)
    };
    (@value [$($done:expr,)*] [$k:expr] $e:expr) => {
        $crate::json_entries!([$($done,)* ($k, $crate::json!($e)),])
    };
    // A literal key is kept as a static reference: no copy, no allocation.
    ([$($done:expr,)*] $k:literal : $($rest:tt)*) => { $crate::json_entries!(@value [$($done,)*] [$crate::foundation::value::Str::const_new($k)] $($rest)*) };
    ([$($done:expr,)*] ($k:expr) : $($rest:tt)*) => { $crate::json_entries!(@value [$($done,)*] [$crate::foundation::value::key(&$k)] $($rest)*) };
    ([$($done:expr,)*] $k:ident : $($rest:tt)*) => { $crate::json_entries!(@value [$($done,)*] [$crate::foundation::value::key(&$k)] $($rest)*) };
}

/// What `json!` can interpolate: borrowed, converted without going through text.
pub trait ToValue {
    fn to_value(&self) -> Value;
}

impl ToValue for Value {
    fn to_value(&self) -> Value {
        self.clone()
    }
}
impl ToValue for Map {
    fn to_value(&self) -> Value {
        Value::Object(self.clone())
    }
}
impl ToValue for str {
    fn to_value(&self) -> Value {
        Value::String(Str::from(self))
    }
}
impl ToValue for String {
    fn to_value(&self) -> Value {
        Value::String(Str::from(self.as_str()))
    }
}
impl ToValue for Str {
    fn to_value(&self) -> Value {
        Value::String(self.clone())
    }
}
impl ToValue for bool {
    fn to_value(&self) -> Value {
        Value::Bool(*self)
    }
}
impl ToValue for f64 {
    fn to_value(&self) -> Value {
        Value::from(*self)
    }
}
impl ToValue for Number {
    fn to_value(&self) -> Value {
        Value::Number(self.clone())
    }
}
impl ToValue for serde_json::Value {
    fn to_value(&self) -> Value {
        Value::from(self.clone())
    }
}
impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}
impl<T: ToValue + ?Sized> ToValue for Arc<T> {
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}
impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value {
        self.as_ref().map_or(Value::Null, ToValue::to_value)
    }
}
impl<T: ToValue> ToValue for [T] {
    fn to_value(&self) -> Value {
        Value::Array(self.iter().map(ToValue::to_value).collect())
    }
}
impl<T: ToValue, const N: usize> ToValue for [T; N] {
    fn to_value(&self) -> Value {
        self.as_slice().to_value()
    }
}
impl<T: ToValue> ToValue for Vec<T> {
    fn to_value(&self) -> Value {
        self.as_slice().to_value()
    }
}
impl<K: AsRef<str>, T: ToValue> ToValue for std::collections::BTreeMap<K, T> {
    fn to_value(&self) -> Value {
        Value::Object(self.iter().map(|(k, v)| (key(k), v.to_value())).collect())
    }
}
macro_rules! integer_to_value {
    ($($t:ty)*) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> Value {
                Value::Number(Number::from(*self))
            }
        }
    )*};
}
integer_to_value!(i8 i16 i32 i64 isize u8 u16 u32 u64 usize);

/// A JSON value; objects are shared until written.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Number(Number),
    String(Str),
    Array(Vec<Value>),
    Object(Map),
}

/// A JSON object: entries sorted by key, behind one reference count.
#[derive(Clone, Default)]
pub struct Map(Option<Arc<Node>>);

/// A map's entries and, once counted, its length as compact JSON (0 until then: no JSON
/// object is shorter than `{}`). Versions share unchanged maps, so a stored object's size
/// is counted again only along the paths a write changed.
#[derive(Default)]
struct Node {
    entries: Vec<(Str, Value)>,
    json_len: AtomicUsize,
}

impl Node {
    fn new(entries: Vec<(Str, Value)>) -> Node {
        Node { entries, json_len: AtomicUsize::new(0) }
    }
}

impl Clone for Node {
    /// A copy is made to be changed: its length is counted again.
    fn clone(&self) -> Node {
        Node::new(self.entries.clone())
    }
}

/// Keys and strings: up to 24 bytes are stored inline, without an allocation of their own.
pub type Str = compact_str::CompactString;

impl Map {
    pub fn new() -> Map {
        Map(None)
    }

    fn entries(&self) -> &[(Str, Value)] {
        self.0.as_deref().map_or(&[], |n| n.entries.as_slice())
    }

    /// The entries, copied first if another tree shares them.
    fn entries_mut(&mut self) -> &mut Vec<(Str, Value)> {
        let node = Arc::make_mut(self.0.get_or_insert_with(Default::default));
        *node.json_len.get_mut() = 0;
        &mut node.entries
    }

    /// The entries, if no other tree shares them (for taking a tree apart without
    /// recursion).
    pub fn into_unique_entries(self) -> Option<Vec<(Str, Value)>> {
        self.0.and_then(|a| Arc::try_unwrap(a).ok()).map(|n| n.entries)
    }

    /// The position of `key`, or where it would be inserted.
    fn find(&self, key: &str) -> Result<usize, usize> {
        let e = self.entries();
        if e.len() <= LINEAR_SEARCH {
            // Most objects are small, and most keys differ in length: equality is cheaper
            // than ordering.
            match e.iter().position(|(k, _)| same_key(k, key)) {
                Some(i) => Ok(i),
                None => Err(e.partition_point(|(k, _)| k.as_str() < key)),
            }
        } else {
            e.binary_search_by(|(k, _)| k.as_str().cmp(key))
        }
    }

    pub fn len(&self) -> usize {
        self.entries().len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.find(key).ok().map(|i| &self.entries()[i].1)
    }
    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        let i = self.find(key).ok()?;
        Some(&mut self.entries_mut()[i].1)
    }
    /// Insert or replace; returns the value replaced.
    pub fn insert(&mut self, key: impl Into<Str>, value: Value) -> Option<Value> {
        let key = key.into();
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries_mut()[i].1, value)),
            Err(i) => {
                let e = self.entries_mut();
                grow(e);
                e.insert(i, (intern(key), value));
                None
            }
        }
    }
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let i = self.find(key).ok()?;
        Some(self.entries_mut().remove(i).1)
    }
    pub fn clear(&mut self) {
        self.0 = None;
    }
    pub fn entry(&mut self, key: impl Into<Str>) -> Entry<'_> {
        Entry { map: self, key: key.into() }
    }
    pub fn iter(&self) -> Iter<'_> {
        Iter(self.entries().iter())
    }
    pub fn iter_mut(&mut self) -> IterMut<'_> {
        IterMut(if self.0.is_none() { Default::default() } else { self.entries_mut().iter_mut() })
    }
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &Str> + ExactSizeIterator {
        self.entries().iter().map(|(k, _)| k)
    }
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Value> + ExactSizeIterator {
        self.entries().iter().map(|(_, v)| v)
    }
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Value> {
        self.iter_mut().map(|(_, v)| v)
    }
    pub fn retain(&mut self, mut keep: impl FnMut(&Str, &mut Value) -> bool) {
        if !self.is_empty() {
            self.entries_mut().retain_mut(|(k, v)| keep(k, v));
        }
    }
    /// Where the shared entries are kept (0 for an empty map that holds none): two maps
    /// with the same address are the same entries.
    pub fn addr(&self) -> usize {
        self.0.as_ref().map_or(0, |a| Arc::as_ptr(a) as usize)
    }
    /// Whether both maps are the same shared entries (equal without looking).
    pub fn ptr_eq(&self, other: &Map) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl PartialEq for Map {
    fn eq(&self, other: &Map) -> bool {
        self.ptr_eq(other) || self.entries() == other.entries()
    }
}
impl Eq for Map {}

/// A slot in a [`Map`], as `serde_json`'s `entry` gives.
pub struct Entry<'a> {
    map: &'a mut Map,
    key: Str,
}

impl<'a> Entry<'a> {
    pub fn or_insert(self, default: Value) -> &'a mut Value {
        self.or_insert_with(|| default)
    }
    pub fn or_insert_with(self, default: impl FnOnce() -> Value) -> &'a mut Value {
        let i = match self.map.find(&self.key) {
            Ok(i) => i,
            Err(i) => {
                let e = self.map.entries_mut();
                grow(e);
                e.insert(i, (intern(self.key), default()));
                i
            }
        };
        &mut self.map.entries_mut()[i].1
    }
    pub fn or_default(self) -> &'a mut Value {
        self.or_insert_with(Value::default)
    }
}

pub struct Iter<'a>(std::slice::Iter<'a, (Str, Value)>);

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a Str, &'a Value);
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k, v))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}
impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(k, v)| (k, v))
    }
}
impl ExactSizeIterator for Iter<'_> {}

pub struct IterMut<'a>(std::slice::IterMut<'a, (Str, Value)>);

impl<'a> Iterator for IterMut<'a> {
    type Item = (&'a Str, &'a mut Value);
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (&*k, v))
    }
}

impl<'a> IntoIterator for &'a Map {
    type Item = (&'a Str, &'a Value);
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}
impl<'a> IntoIterator for &'a mut Map {
    type Item = (&'a Str, &'a mut Value);
    type IntoIter = IterMut<'a>;
    fn into_iter(self) -> IterMut<'a> {
        self.iter_mut()
    }
}
impl IntoIterator for Map {
    type Item = (Str, Value);
    type IntoIter = std::vec::IntoIter<(Str, Value)>;
    fn into_iter(self) -> Self::IntoIter {
        match self.0 {
            Some(a) => Arc::unwrap_or_clone(a).entries.into_iter(),
            None => Vec::new().into_iter(),
        }
    }
}

impl<K: Into<Str>> FromIterator<(K, Value)> for Map {
    /// Later entries win over earlier ones with the same key, as repeated inserts would.
    fn from_iter<I: IntoIterator<Item = (K, Value)>>(iter: I) -> Map {
        let mut v: Vec<(Str, Value)> = iter.into_iter().map(|(k, v)| (intern(k.into()), v)).collect();
        if v.is_empty() {
            return Map::new();
        }
        if !v.windows(2).all(|w| w[0].0 < w[1].0) {
            v.sort_stable_by(|a, b| a.0.cmp(&b.0)); // stable: equal keys keep their order
            let mut out: Vec<(Str, Value)> = Vec::with_capacity(v.len());
            for e in v {
                match out.last_mut() {
                    Some(last) if last.0 == e.0 => *last = e,
                    _ => out.push(e),
                }
            }
            v = out;
        }
        Map(Some(Arc::new(Node::new(v))))
    }
}

impl<K: Into<Str>> Extend<(K, Value)> for Map {
    fn extend<I: IntoIterator<Item = (K, Value)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<K: Into<Str>, const N: usize> From<[(K, Value); N]> for Map {
    fn from(entries: [(K, Value); N]) -> Map {
        entries.into_iter().collect()
    }
}

impl std::ops::Index<&str> for Map {
    type Output = Value;
    fn index(&self, key: &str) -> &Value {
        self.get(key).unwrap_or(&NULL)
    }
}

static NULL: Value = Value::Null;

/// Keys longer than a [`Str`] holds inline (24 bytes, but 12 on 32-bit targets such as the
/// page's WebAssembly, where that is most of the API's field names: `creationTimestamp`,
/// `lastTransitionTime`) take an allocation of their own in every map that has them, and
/// again in every copy of it. Each such key is kept once for the life of the program
/// instead, and maps refer to that copy: at most [`MAX_INTERNED`] of them, and not the keys
/// of field sets' list items (`k:{"uid":...}`), which name values rather than fields.
fn intern(k: Str) -> Str {
    if !k.is_heap_allocated() || k.len() > 64 || k.starts_with("k:") || k.starts_with("v:") {
        return k;
    }
    thread_local! {
        static KEYS: std::cell::RefCell<std::collections::HashSet<&'static str>> = Default::default();
    }
    KEYS.with(|keys| {
        let mut keys = keys.borrow_mut();
        if let Some(s) = keys.get(k.as_str()) {
            return Str::const_new(s);
        }
        if keys.len() >= MAX_INTERNED {
            return k;
        }
        let s: &'static str = Box::leak(Box::from(k.as_str()));
        keys.insert(s);
        Str::const_new(s)
    })
}

/// The most keys [`intern`] keeps.
const MAX_INTERNED: usize = 8192;

/// Make room for one more entry. Objects are many and small and mostly final once built:
/// a quarter more room, not double, keeps their slack small.
fn grow(e: &mut Vec<(Str, Value)>) {
    if e.len() == e.capacity() {
        e.reserve_exact((e.len() / 4).max(1));
    }
}

/// Key equality that rarely needs `memcmp`: lengths and the last byte settle most misses.
fn same_key(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.last() == b.last() && a == b
}

/// Objects up to this size are searched front to back.
const LINEAR_SEARCH: usize = 16;

impl Value {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s.as_str()),
            _ => None,
        }
    }
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(n) => n.as_i64(),
            _ => None,
        }
    }
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Number(n) => n.as_u64(),
            _ => None,
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => n.as_f64(),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }
    pub fn as_object_mut(&mut self) -> Option<&mut Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }
    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
    pub fn as_array_mut(&mut self) -> Option<&mut Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
    pub fn is_boolean(&self) -> bool {
        matches!(self, Value::Bool(_))
    }
    pub fn is_number(&self) -> bool {
        matches!(self, Value::Number(_))
    }
    pub fn is_i64(&self) -> bool {
        matches!(self, Value::Number(n) if n.is_i64())
    }
    pub fn is_u64(&self) -> bool {
        matches!(self, Value::Number(n) if n.is_u64())
    }
    pub fn is_f64(&self) -> bool {
        matches!(self, Value::Number(n) if n.is_f64())
    }
    pub fn is_string(&self) -> bool {
        matches!(self, Value::String(_))
    }
    pub fn is_array(&self) -> bool {
        matches!(self, Value::Array(_))
    }
    pub fn is_object(&self) -> bool {
        matches!(self, Value::Object(_))
    }
    /// `self[index]` without the panic: a key of an object or an index of an array.
    pub fn get<I: ValueIndex>(&self, index: I) -> Option<&Value> {
        index.index_into(self)
    }
    pub fn get_mut<I: ValueIndex>(&mut self, index: I) -> Option<&mut Value> {
        index.index_into_mut(self)
    }
    /// Leave `Null` in place and return what was there.
    pub fn take(&mut self) -> Value {
        std::mem::take(self)
    }
    /// The value at a JSON Pointer (RFC 6901), such as `/spec/containers/0/image`.
    /// The length of this tree written as compact JSON, or `None` once it passes `budget`.
    /// Without recursion, and stopping early: a shared tree may be far larger written out
    /// than in memory. Each map keeps its length once counted in full, so a new version of
    /// an object costs only the maps the change copied.
    pub fn json_len_within(&self, budget: usize) -> Option<usize> {
        fn quoted(s: &str) -> usize {
            2 + s.len()
                + s.bytes()
                    .map(|b| match b {
                        b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
                        0..=0x1f => 5,
                        _ => 0,
                    })
                    .sum::<usize>()
        }
        enum Step<'a> {
            Count(&'a Value),
            /// Every entry of this map is counted: keep its length (the total since `from`).
            Keep(&'a Node, usize),
        }
        let mut total = 0usize;
        let mut stack = vec![Step::Count(self)];
        while let Some(step) = stack.pop() {
            let v = match step {
                Step::Count(v) => v,
                Step::Keep(node, from) => {
                    node.json_len.store(total - from, Ordering::Relaxed);
                    continue;
                }
            };
            total += match v {
                Value::Null => 4,
                Value::Bool(b) => 4 + usize::from(!b),
                Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                    (Some(u), _) => u.checked_ilog10().map_or(1, |d| d as usize + 1),
                    (None, Some(i)) => 1 + i.unsigned_abs().checked_ilog10().map_or(1, |d| d as usize + 1),
                    _ => n.to_string().len(),
                },
                Value::String(s) => quoted(s),
                Value::Array(a) => {
                    stack.extend(a.iter().map(Step::Count));
                    2 + a.len().saturating_sub(1)
                }
                Value::Object(Map(None)) => 2,
                Value::Object(Map(Some(node))) => match node.json_len.load(Ordering::Relaxed) {
                    0 => {
                        stack.push(Step::Keep(node, total));
                        stack.extend(node.entries.iter().map(|(_, v)| Step::Count(v)));
                        2 + node.entries.iter().map(|(k, _)| quoted(k) + 1).sum::<usize>() + node.entries.len().saturating_sub(1)
                    }
                    known => known,
                },
            };
            if total > budget {
                return None;
            }
        }
        Some(total)
    }

    pub fn pointer(&self, pointer: &str) -> Option<&Value> {
        if pointer.is_empty() {
            return Some(self);
        }
        let rest = pointer.strip_prefix('/')?;
        rest.split('/').map(unescape_token).try_fold(self, |v, t| match v {
            Value::Object(m) => m.get(&t),
            Value::Array(a) => parse_index(&t).and_then(|i| a.get(i)),
            _ => None,
        })
    }
    pub fn pointer_mut(&mut self, pointer: &str) -> Option<&mut Value> {
        if pointer.is_empty() {
            return Some(self);
        }
        let rest = pointer.strip_prefix('/')?;
        rest.split('/').map(unescape_token).try_fold(self, |v, t| match v {
            Value::Object(m) => m.get_mut(&t),
            Value::Array(a) => parse_index(&t).and_then(move |i| a.get_mut(i)),
            _ => None,
        })
    }
}

fn unescape_token(t: &str) -> String {
    t.replace("~1", "/").replace("~0", "~")
}

fn parse_index(t: &str) -> Option<usize> {
    if t.starts_with('+') || (t.starts_with('0') && t.len() > 1) {
        return None;
    }
    t.parse().ok()
}

/// What can index a [`Value`]: a key or an array position.
pub trait ValueIndex {
    fn index_into<'v>(&self, v: &'v Value) -> Option<&'v Value>;
    fn index_into_mut<'v>(&self, v: &'v mut Value) -> Option<&'v mut Value>;
    /// For `v[i] = x`: a key is inserted (and `Null` becomes an object).
    fn index_or_insert<'v>(&self, v: &'v mut Value) -> &'v mut Value;
}

impl ValueIndex for usize {
    fn index_into<'v>(&self, v: &'v Value) -> Option<&'v Value> {
        v.as_array()?.get(*self)
    }
    fn index_into_mut<'v>(&self, v: &'v mut Value) -> Option<&'v mut Value> {
        v.as_array_mut()?.get_mut(*self)
    }
    fn index_or_insert<'v>(&self, v: &'v mut Value) -> &'v mut Value {
        match v {
            Value::Array(a) => {
                let len = a.len();
                a.get_mut(*self).unwrap_or_else(|| panic!("cannot access index {self} of JSON array of length {len}"))
            }
            _ => panic!("cannot access index {self} of JSON {}", v.type_name()),
        }
    }
}

impl ValueIndex for str {
    fn index_into<'v>(&self, v: &'v Value) -> Option<&'v Value> {
        v.as_object()?.get(self)
    }
    fn index_into_mut<'v>(&self, v: &'v mut Value) -> Option<&'v mut Value> {
        v.as_object_mut()?.get_mut(self)
    }
    fn index_or_insert<'v>(&self, v: &'v mut Value) -> &'v mut Value {
        if v.is_null() {
            *v = Value::Object(Map::new());
        }
        match v {
            Value::Object(m) => m.entry(self).or_insert(Value::Null),
            _ => panic!("cannot access key {self:?} in JSON {}", v.type_name()),
        }
    }
}

/// Owned strings index as the `str` they hold.
macro_rules! index_as_str {
    ($($t:ty)*) => {$(
        impl ValueIndex for $t {
            fn index_into<'v>(&self, v: &'v Value) -> Option<&'v Value> {
                self.as_str().index_into(v)
            }
            fn index_into_mut<'v>(&self, v: &'v mut Value) -> Option<&'v mut Value> {
                self.as_str().index_into_mut(v)
            }
            fn index_or_insert<'v>(&self, v: &'v mut Value) -> &'v mut Value {
                self.as_str().index_or_insert(v)
            }
        }
    )*};
}
index_as_str!(String Str);

impl<T: ValueIndex + ?Sized> ValueIndex for &T {
    fn index_into<'v>(&self, v: &'v Value) -> Option<&'v Value> {
        (**self).index_into(v)
    }
    fn index_into_mut<'v>(&self, v: &'v mut Value) -> Option<&'v mut Value> {
        (**self).index_into_mut(v)
    }
    fn index_or_insert<'v>(&self, v: &'v mut Value) -> &'v mut Value {
        (**self).index_or_insert(v)
    }
}

impl<I: ValueIndex> std::ops::Index<I> for Value {
    type Output = Value;
    /// A missing key or position reads as `Null`, as in `serde_json`.
    fn index(&self, index: I) -> &Value {
        index.index_into(self).unwrap_or(&NULL)
    }
}

impl<I: ValueIndex> std::ops::IndexMut<I> for Value {
    fn index_mut(&mut self, index: I) -> &mut Value {
        index.index_or_insert(self)
    }
}

impl Value {
    fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
}

// Conversions.

impl From<serde_json::Value> for Value {
    fn from(v: serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(b),
            serde_json::Value::Number(n) => Value::Number(n),
            serde_json::Value::String(s) => Value::String(s.into()),
            serde_json::Value::Array(a) => Value::Array(a.into_iter().map(Value::from).collect()),
            // `serde_json`'s map iterates in key order: the entries are already sorted.
            serde_json::Value::Object(m) => {
                let entries: Vec<(Str, Value)> = m.into_iter().map(|(k, v)| (intern(k.into()), Value::from(v))).collect();
                Value::Object(if entries.is_empty() { Map::new() } else { Map(Some(Arc::new(Node::new(entries)))) })
            }
        }
    }
}

impl From<&Value> for serde_json::Value {
    fn from(v: &Value) -> serde_json::Value {
        match v {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Number(n) => serde_json::Value::Number(n.clone()),
            Value::String(s) => serde_json::Value::String(s.to_string()),
            Value::Array(a) => serde_json::Value::Array(a.iter().map(serde_json::Value::from).collect()),
            Value::Object(m) => serde_json::Value::Object(m.iter().map(|(k, v)| (k.to_string(), serde_json::Value::from(v))).collect()),
        }
    }
}

impl From<Map> for Value {
    fn from(m: Map) -> Value {
        Value::Object(m)
    }
}
impl From<Vec<Value>> for Value {
    fn from(a: Vec<Value>) -> Value {
        Value::Array(a)
    }
}
impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s.into())
    }
}
impl From<&String> for Value {
    fn from(s: &String) -> Value {
        Value::String(s.as_str().into())
    }
}
impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.into())
    }
}
impl From<Str> for Value {
    fn from(s: Str) -> Value {
        Value::String(s)
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}
impl From<Number> for Value {
    fn from(n: Number) -> Value {
        Value::Number(n)
    }
}
impl From<f64> for Value {
    /// Not-a-number and infinities have no JSON form: they become `null`.
    fn from(f: f64) -> Value {
        Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}
macro_rules! from_integer {
    ($($t:ty)*) => {$(
        impl From<$t> for Value {
            fn from(n: $t) -> Value {
                Value::Number(Number::from(n))
            }
        }
    )*};
}
from_integer!(i8 i16 i32 i64 isize u8 u16 u32 u64 usize);

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(o: Option<T>) -> Value {
        o.map_or(Value::Null, Into::into)
    }
}

impl<T: Into<Value>> FromIterator<T> for Value {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Value {
        Value::Array(iter.into_iter().map(Into::into).collect())
    }
}

impl PartialEq<str> for Value {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == Some(other)
    }
}
impl PartialEq<&str> for Value {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == Some(*other)
    }
}
impl PartialEq<String> for Value {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == Some(other.as_str())
    }
}
impl PartialEq<bool> for Value {
    fn eq(&self, other: &bool) -> bool {
        self.as_bool() == Some(*other)
    }
}
impl PartialEq<i64> for Value {
    fn eq(&self, other: &i64) -> bool {
        self.as_i64() == Some(*other)
    }
}
impl PartialEq<u64> for Value {
    fn eq(&self, other: &u64) -> bool {
        self.as_u64() == Some(*other)
    }
}
impl PartialEq<i32> for Value {
    fn eq(&self, other: &i32) -> bool {
        self.as_i64() == Some(i64::from(*other))
    }
}
impl PartialEq<f64> for Value {
    fn eq(&self, other: &f64) -> bool {
        self.as_f64() == Some(*other)
    }
}

// Text forms.

impl fmt::Display for Value {
    /// Compact JSON; `{:#}` pretty-prints.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = if f.alternate() { serde_json::to_string_pretty(self) } else { serde_json::to_string(self) };
        f.write_str(&s.map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("Null"),
            Value::Bool(b) => write!(f, "Bool({b})"),
            Value::Number(n) => write!(f, "Number({n})"),
            Value::String(s) => write!(f, "String({s:?})"),
            Value::Array(a) => {
                f.write_str("Array ")?;
                f.debug_list().entries(a).finish()
            }
            Value::Object(m) => {
                f.write_str("Object ")?;
                fmt::Debug::fmt(m, f)
            }
        }
    }
}

impl fmt::Debug for Map {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Number(n) => n.serialize(s),
            Value::String(v) => s.serialize_str(v),
            Value::Array(a) => a.serialize(s),
            Value::Object(m) => m.serialize(s),
        }
    }
}

impl Serialize for Map {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.len()))?;
        for (k, v) in self {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

impl<'de> Deserialize<'de> for Map {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Map, D::Error> {
        match Value::deserialize(d)? {
            Value::Object(m) => Ok(m),
            other => Err(de::Error::invalid_type(de::Unexpected::Other(other.type_name()), &"a JSON object")),
        }
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }
    fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
        Ok(Value::from(f))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.into()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s.into()))
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut entries: Vec<(Str, Value)> = Vec::with_capacity(access.size_hint().unwrap_or(0).min(4096));
        while let Some((k, v)) = access.next_entry::<Str, Value>()? {
            entries.push((k, v));
        }
        Ok(Value::Object(entries.into_iter().collect()))
    }
}

/// A key from anything string-like.
pub fn key(k: &(impl AsRef<str> + ?Sized)) -> Str {
    Str::from(k.as_ref())
}

/// Any serialisable value as a [`Value`].
pub fn to_value<T: Serialize + ?Sized>(t: &T) -> Result<Value, serde_json::Error> {
    serde_json::to_value(t).map(Value::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_len_is_the_length_serde_json_writes() {
        let v = json!({"a\"b": ["x\n\u{1}y", -12, 0, 7, 18446744073709551615u64, -9223372036854775808i64, 1.5, -0.25, 1e300, null, true, false, "é"], "e": {}, "l": []});
        let n = serde_json::to_string(&v).unwrap().len();
        assert_eq!(v.json_len_within(usize::MAX), Some(n));
        assert_eq!(v.json_len_within(n), Some(n));
        assert_eq!(v.json_len_within(n - 1), None);
    }

    #[test]
    fn json_len_kept_by_maps_follows_changes() {
        let len = |v: &Value| (v.json_len_within(usize::MAX).unwrap(), serde_json::to_string(v).unwrap().len());
        let mut a = json!({"spec": {"replicas": 1, "template": {"x": [1, {"y": "z"}]}}, "status": {"ready": 0}});
        let (got, want) = len(&a);
        assert_eq!(got, want);
        // A clone shares the counted maps; changing it counts the copied ones again and
        // leaves the original's lengths alone.
        let mut b = a.clone();
        b["spec"]["template"]["x"][1]["y"] = json!("a longer value");
        b["status"].as_object_mut().unwrap().insert("extra", json!([true, null]));
        let (got, want) = len(&b);
        assert_eq!(got, want);
        let (got, want) = len(&a);
        assert_eq!(got, want);
        a["spec"].as_object_mut().unwrap().retain(|k, _| k == "replicas");
        let (got, want) = len(&a);
        assert_eq!(got, want);
        // A count cut short by its budget keeps nothing half-counted.
        let c = json!({"a": {"b": "x".repeat(100)}, "c": {"d": 1}});
        assert_eq!(c.json_len_within(20), None);
        let (got, want) = len(&c);
        assert_eq!(got, want);
    }

    #[test]
    fn changing_a_clone_leaves_the_original_and_shares_the_rest() {
        let a = json!({"spec": {"replicas": 1, "template": {"x": [1, 2]}}, "status": {"ready": 0}});
        let mut b = a.clone();
        b["status"]["ready"] = json!(1);
        assert_eq!(a["status"]["ready"], 0);
        assert_eq!(b["status"]["ready"], 1);
        // The untouched subtree is the same allocation in both versions.
        assert!(a["spec"].as_object().unwrap().ptr_eq(b["spec"].as_object().unwrap()));
        assert!(!a["status"].as_object().unwrap().ptr_eq(b["status"].as_object().unwrap()));
        assert_ne!(a, b);
    }

    #[test]
    fn a_long_key_is_kept_once_for_every_map() {
        let long = "spec.template.spec.terminationGracePeriodSeconds";
        let a: Map = [(long, Value::Null)].into_iter().collect();
        let mut b = Map::new();
        b.insert(long.to_string(), json!(1));
        let parsed: Value = serde_json::from_str(&format!("{{\"{long}\": 2}}")).unwrap();
        let first = |m: &Map| m.keys().next().map(|k| k.as_ptr());
        assert_eq!(first(&a), first(&b));
        assert_eq!(first(&a), parsed.as_object().and_then(first));
        // A copy of a map shares the key too.
        let mut c = b.clone();
        c.insert("x", Value::Null);
        assert_eq!(c.keys().find(|k| k.as_str() == long).map(|k| k.as_ptr()), first(&a));
        // A field set's item key names a value: it is not kept.
        let item = r#"k:{"uid":"8f0a6837-389a-44a6-99bc-b4c88ee76947"}"#;
        let d: Map = [(item, Value::Null)].into_iter().collect();
        let e: Map = [(item, Value::Null)].into_iter().collect();
        assert_ne!(first(&d), first(&e));
    }

    #[test]
    fn keys_are_sorted_and_the_last_duplicate_wins() {
        let v: Value = serde_json::from_str(r#"{"b": 1, "a": 2, "c": {"z": 1, "y": 2}, "a": 3}"#).unwrap();
        assert_eq!(serde_json::to_string(&v).unwrap(), r#"{"a":3,"b":1,"c":{"y":2,"z":1}}"#);
        let mut m = Map::new();
        m.insert("b", json!(1));
        m.insert("a", json!(2));
        assert_eq!(m.keys().map(Str::as_str).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(m.remove("a"), Some(json!(2)));
        assert_eq!(m.get("a"), None);
    }

    #[test]
    fn round_trips_match_serde_json() {
        let text = r#"{"a":[1,-2,3.5,"x",null,true,{}],"b":{"c":[]},"d":18446744073709551615}"#;
        let mine: Value = serde_json::from_str(text).unwrap();
        let theirs: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&mine).unwrap(), serde_json::to_string(&theirs).unwrap());
        assert_eq!(serde_json::Value::from(&mine), theirs);
        assert_eq!(Value::from(theirs), mine);
        assert_eq!(format!("{:?}", json!({"a": [1, "x"]})), r#"Object {"a": Array [Number(1), String("x")]}"#);
    }

    #[test]
    fn pointers_and_indexing() {
        let mut v = json!({"spec": {"containers": [{"name": "a/b~c"}]}, "m": {"a/b": 1}});
        assert_eq!(v.pointer("/spec/containers/0/name"), Some(&json!("a/b~c")));
        assert_eq!(v.pointer("/m/a~1b"), Some(&json!(1)));
        assert_eq!(v.pointer("/spec/containers/01"), None);
        *v.pointer_mut("/m/a~1b").unwrap() = json!(2);
        assert_eq!(v["m"]["a/b"], 2);
        assert!(v["missing"]["deeper"].is_null());
        let mut n = Value::Null;
        n["x"]["y"] = json!("z");
        assert_eq!(n, json!({"x": {"y": "z"}}));
    }
}
