//! YAML in, objects and diagnostics out.
//!
//! Parsing never fails as a whole (the rust-analyzer habit): a multi-document text becomes
//! a list of documents, each with its starting line and either a JSON object or the
//! diagnostics that explain, at a line and column, why it is not one. One broken document
//! never hides the others.

use crate::foundation::value::Value;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    /// 1-based line in the whole text.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// 0-based position among the non-empty documents of the text.
    pub index: usize,
    /// 1-based line where the document's content starts.
    pub start_line: usize,
    /// 1-based line where it ends (inclusive).
    pub end_line: usize,
    pub object: Option<Value>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Split a multi-document YAML text and parse each document.
pub fn parse(text: &str) -> Vec<Document> {
    parse_again(text, &mut Parsed::default())
}

/// The documents of a text as last parsed, by their text: parsing an edited text again
/// builds only the documents that changed (a keystroke in the editor changes one).
#[derive(Clone, Default)]
pub struct Parsed(BTreeMap<String, Built>);

type Built = Result<(Value, Option<NonFinite>), YamlError>;

/// [`parse`], reusing what `parsed` holds of the documents that did not change (and
/// keeping this text's documents there for the next time).
pub fn parse_again(text: &str, parsed: &mut Parsed) -> Vec<Document> {
    let mut now = BTreeMap::new();
    let mut chunks: Vec<(usize, Vec<&str>)> = vec![(1, Vec::new())];
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed.starts_with("--- ") || trimmed == "..." {
            chunks.push((i + 2, Vec::new()));
            if let Some(rest) = trimmed.strip_prefix("--- ") {
                // `--- {a: 1}`: content on the separator line itself.
                if let Some(last) = chunks.last_mut() {
                    last.0 = i + 1;
                    last.1.push(rest);
                }
            }
            continue;
        }
        if let Some(last) = chunks.last_mut() {
            last.1.push(line);
        }
    }
    let mut docs = Vec::new();
    for (start, lines) in chunks {
        let is_blank = lines.iter().all(|l| {
            let t = l.trim();
            t.is_empty() || t.starts_with('#')
        });
        if is_blank {
            continue;
        }
        // Each line keeps its newline, so a block scalar at the end keeps its own.
        let body: String = lines.iter().flat_map(|l| [*l, "\n"]).collect();
        let first_content = lines.iter().position(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with('#')
        });
        let end_line = start + lines.len().saturating_sub(1);
        let mut doc = Document { index: docs.len(), start_line: start + first_content.unwrap_or(0), end_line, object: None, diagnostics: vec![] };
        let built = match parsed.0.get(&body) {
            Some(b) => b.clone(),
            None => build(&body),
        };
        now.insert(body, built.clone());
        match built {
            // YAMLToJSON fails in json.Marshal before anything looks at the shape.
            Ok((_, Some(nf))) => doc.diagnostics.push(Diagnostic { line: start + nf.line - 1, column: nf.column, message: nf.message() }),
            Ok((Value::Object(m), None)) => doc.object = Some(Value::Object(m)),
            Ok((Value::Null, None)) => continue,
            Ok((other, None)) => doc.diagnostics.push(Diagnostic {
                line: doc.start_line,
                column: 1,
                message: format!("error unmarshaling JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}", json_type(&other)),
            }),
            Err(e) => {
                // An error found at the end of the document belongs to its last content line.
                let last_content = start + lines.iter().rposition(|l| !l.trim().is_empty()).unwrap_or(0);
                let line = (start + e.line - 1).min(last_content);
                doc.diagnostics.push(Diagnostic { line, column: e.column, message: format!("yaml: line {line}: {}", e.message) });
            }
        }
        docs.push(doc);
    }
    parsed.0 = now;
    docs
}

/// Nesting deeper than this is refused (real manifests, CRD schemas included, stay far
/// below it). The builder keeps its own stack, so no depth can exhaust the native one.
const MAX_DEPTH: usize = 128;
/// Nodes in a document, counting each alias as the nodes it stands for: a "billion laughs"
/// is refused long before it is expanded.
const MAX_NODES: usize = 1_000_000;

/// Why a YAML text is not a value, and where (1-based, within the text).
#[derive(Debug, Clone, PartialEq)]
pub struct YamlError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// A collection being built: its anchor, the nodes under it so far, and for a mapping the
/// key waiting for its value (with the key's line, for a duplicate's message).
enum Open {
    Seq {
        anchor: usize,
        items: Vec<Value>,
        nodes: usize,
    },
    Map {
        anchor: usize,
        entries: Vec<(String, Value)>,
        lines: std::collections::HashMap<String, usize>,
        key: Option<(String, usize)>,
        nodes: usize,
        merges: Vec<Value>,
    },
}

enum Kind {
    Leaf,
    Closed,
}

/// One YAML document (a whole text, or one document of a stream) as a value.
///
/// Events from `granit-parser` are folded into a value with an explicit stack. Scalars
/// resolve as kubeloop has always read YAML — the 1.2 core schema: `yes`, `0755` and `1_000`
/// are strings, `0x1F` and `0o17` numbers. As go-yaml does for `kubectl apply`, a repeated
/// key is an error and `<<` merges the mappings it names.
///
/// `.nan` and `.inf` have no JSON form: `sigs.k8s.io/yaml`'s YAMLToJSON reads them as Go
/// floats and `json.Marshal` refuses them, so such a document is an error
/// (`json: unsupported value: NaN`), not a value with a null in it.
pub fn parse_value(text: &str) -> Result<Value, YamlError> {
    match build(text)? {
        (_, Some(nf)) => Err(YamlError { line: nf.line, column: nf.column, message: nf.message() }),
        (v, None) => Ok(v),
    }
}

/// The first `.nan`/`.inf` scalar of a document, as `strconv.FormatFloat` spells the
/// value in Go's `json: unsupported value` error.
#[derive(Clone)]
struct NonFinite {
    value: &'static str,
    line: usize,
    column: usize,
}

impl NonFinite {
    fn message(&self) -> String {
        format!("json: unsupported value: {}", self.value)
    }
}

/// The value of a plain (or `!!float`-tagged) scalar that the core schema reads as a
/// non-finite float.
fn non_finite(v: &str, style: granit_parser::ScalarStyle, tag: Option<&granit_parser::Tag>) -> Option<&'static str> {
    let tag = tag.filter(|t| t.is_yaml_core_schema()).map(|t| t.suffix());
    if !(tag.is_none() && style == granit_parser::ScalarStyle::Plain || tag == Some("float")) {
        return None;
    }
    match v {
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Some("+Inf"),
        "-.inf" | "-.Inf" | "-.INF" => Some("-Inf"),
        ".nan" | ".NaN" | ".NAN" => Some("NaN"),
        _ => None,
    }
}

/// [`parse_value`]'s work: the value (non-finite floats as null) and the first non-finite
/// float met, if any.
fn build(text: &str) -> Result<(Value, Option<NonFinite>), YamlError> {
    let mut non_finite_seen: Option<NonFinite> = None;
    let mut options = granit_parser::Options::default();
    options.flow_nesting_limit = MAX_DEPTH;
    options.block_nesting_limit = MAX_DEPTH;
    let mut parser = granit_parser::Parser::new_from_str_with_options(text, options);
    let mut stack: Vec<Open> = Vec::new();
    let mut anchors: std::collections::HashMap<usize, (Value, usize)> = std::collections::HashMap::new();
    let mut total = 0usize;
    let mut root: Option<Value> = None;
    let err = |line: usize, col: usize, message: String| YamlError { line: line.max(1), column: col + 1, message };
    while let Some(ev) = parser.next_event() {
        let (ev, span) = ev.map_err(|e| err(e.marker().line(), e.marker().col(), e.info()))?;
        let (line, col) = (span.start.line(), span.start.col());
        use granit_parser::Event;
        let awaiting_key = matches!(stack.last(), Some(Open::Map { key: None, .. }));
        let ev_kind = if matches!(ev, Event::SequenceEnd | Event::MappingEnd) { Kind::Closed } else { Kind::Leaf };
        let (value, anchor, nodes) = match ev {
            // A key is its text as written (`0x1F: a` has the key "0x1F"), as go-yaml reads
            // keys into a `map[string]interface{}`.
            Event::Scalar(v, _, anchor, _) if awaiting_key => (Value::String(v.as_ref().into()), anchor, 1),
            Event::Scalar(v, style, anchor, tag) => {
                if non_finite_seen.is_none() {
                    non_finite_seen = non_finite(&v, style, tag.as_deref()).map(|value| NonFinite { value, line: line.max(1), column: col + 1 });
                }
                (scalar(&v, style, tag.as_deref()).map_err(|m| err(line, col, m))?, anchor, 1)
            }
            Event::SequenceStart(_, anchor, _) | Event::MappingStart(_, anchor, _) => {
                total += 1;
                if stack.len() >= MAX_DEPTH {
                    return Err(err(line, col, format!("exceeded max depth of {MAX_DEPTH}")));
                }
                stack.push(if matches!(ev, Event::SequenceStart(..)) {
                    Open::Seq { anchor, items: Vec::new(), nodes: 1 }
                } else {
                    Open::Map { anchor, entries: Vec::new(), lines: Default::default(), key: None, nodes: 1, merges: Vec::new() }
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Open::Seq { anchor, items, nodes }) => (Value::Array(items), anchor, nodes),
                Some(Open::Map { anchor, mut entries, mut lines, nodes, merges, .. }) => {
                    if !merges.is_empty() {
                        merge_keys(&merges, &mut entries, &mut lines, line).map_err(|m| err(line, col, m.into()))?;
                    }
                    // One sort for the whole mapping: inserting key by key would be quadratic.
                    (Value::Object(entries.into_iter().collect()), anchor, nodes)
                }
                None => continue,
            },
            Event::Alias(id) => match anchors.get(&id) {
                Some((v, n)) => (v.clone(), 0, *n),
                None => return Err(err(line, col, "unknown anchor".into())),
            },
            _ => continue,
        };
        // Collections were counted when they opened; a scalar counts once, an alias as
        // the nodes it stands for.
        if matches!(ev_kind, Kind::Leaf) {
            total += nodes;
        }
        if total > MAX_NODES {
            return Err(err(line, col, format!("document is too large: more than {MAX_NODES} nodes once aliases are expanded")));
        }
        if anchor != 0 {
            anchors.insert(anchor, (value.clone(), nodes));
        }
        match stack.last_mut() {
            None => root = Some(value),
            Some(Open::Seq { items, nodes: n, .. }) => {
                *n += nodes;
                items.push(value);
            }
            Some(Open::Map { entries, lines, key, nodes: n, merges, .. }) => {
                *n += nodes;
                match key.take() {
                    None => {
                        let k = match value {
                            Value::String(s) => s.to_string(),
                            Value::Null => "null".to_string(),
                            Value::Bool(b) => b.to_string(),
                            Value::Number(n) => n.to_string(),
                            _ => return Err(err(line, col, "a mapping key must be a scalar".into())),
                        };
                        if let Some(first) = lines.get(&k) {
                            return Err(err(line, col, format!("mapping key {k:?} already defined at line {first}")));
                        }
                        lines.insert(k.clone(), line);
                        *key = Some((k, line));
                    }
                    Some((k, _)) if k == "<<" => merges.push(value),
                    Some((k, _)) => entries.push((k, value)),
                }
            }
        }
    }
    Ok((root.unwrap_or(Value::Null), non_finite_seen))
}

/// The merge keys (`<<`) of a mapping that ends at `line`: explicit keys win over merged
/// ones, earlier merges over later ones (out of line: most manifests have none).
#[inline(never)]
fn merge_keys(
    merges: &[Value],
    entries: &mut Vec<(String, Value)>,
    lines: &mut std::collections::HashMap<String, usize>,
    line: usize,
) -> Result<(), &'static str> {
    for m in merges.iter().flat_map(|m| if let Value::Array(a) = m { a.clone() } else { vec![m.clone()] }) {
        let Value::Object(from) = m else { return Err("map merge requires map or sequence of maps as the value") };
        for (k, v) in from.iter() {
            if !lines.contains_key(k.as_str()) {
                lines.insert(k.to_string(), line);
                entries.push((k.to_string(), v.clone()));
            }
        }
    }
    Ok(())
}

/// A scalar as the YAML 1.2 core schema resolves it: untagged quoted and block scalars, and
/// `!!str`, are strings; `!!int "42"` is a number.
fn scalar(v: &str, style: granit_parser::ScalarStyle, tag: Option<&granit_parser::Tag>) -> Result<Value, String> {
    let tag = tag.filter(|t| t.is_yaml_core_schema()).map(|t| t.suffix());
    if tag == Some("str") || (tag.is_none() && style != granit_parser::ScalarStyle::Plain) {
        return Ok(Value::String(v.into()));
    }
    let plain = match v {
        "" | "~" | "null" | "Null" | "NULL" => Some(Value::Null),
        "true" | "True" | "TRUE" => Some(Value::Bool(true)),
        "false" | "False" | "FALSE" => Some(Value::Bool(false)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Some(Value::from(f64::INFINITY)),
        "-.inf" | "-.Inf" | "-.INF" => Some(Value::from(f64::NEG_INFINITY)),
        ".nan" | ".NaN" | ".NAN" => Some(Value::from(f64::NAN)),
        _ => number(v),
    };
    match (tag, plain) {
        (Some("int" | "float"), Some(n @ Value::Number(_))) | (Some("bool"), Some(n @ Value::Bool(_))) | (Some("null"), Some(n @ Value::Null)) => Ok(n),
        // `!!float .nan`: a float with no JSON form, reported by the caller.
        (Some("float"), Some(Value::Null)) if non_finite(v, granit_parser::ScalarStyle::Plain, None).is_some() => Ok(Value::Null),
        (Some(t @ ("int" | "float" | "bool" | "null")), _) => Err(format!("invalid value {v:?} for tag !!{t}")),
        (_, Some(p)) => Ok(p),
        (_, None) => Ok(Value::String(v.into())),
    }
}

/// A plain scalar that is a number in the core schema: decimal (no leading zeros, no
/// underscores), `0x` hexadecimal, `0o` octal, or a float.
fn number(v: &str) -> Option<Value> {
    let (neg, digits) = match v.as_bytes().first()? {
        b'-' => (true, &v[1..]),
        b'+' => (false, &v[1..]),
        _ => (false, v),
    };
    if let Some(hex) = digits.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).ok().filter(|_| !neg && !v.starts_with('+')).map(|n| Value::Number(n.into()));
    }
    if let Some(oct) = digits.strip_prefix("0o") {
        return u64::from_str_radix(oct, 8).ok().filter(|_| !neg && !v.starts_with('+')).map(|n| Value::Number(n.into()));
    }
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if digits.len() > 1 && digits.starts_with('0') {
            return None;
        }
        return Some(match (neg, digits.parse::<u64>()) {
            (false, Ok(n)) => Value::Number(n.into()),
            (true, Ok(n)) if n <= i64::MAX as u64 + 1 => Value::Number((-(n as i128) as i64).into()),
            _ => Value::from(v.parse::<f64>().ok()?),
        });
    }
    // [-+]? ( \.[0-9]+ | [0-9]+ ( \.[0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
    let b = digits.as_bytes();
    let mut i = 0;
    let int = b.iter().take_while(|c| c.is_ascii_digit()).count();
    i += int;
    let mut frac = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        frac = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        i += frac;
    }
    if int == 0 && frac == 0 {
        return None;
    }
    if int > 1 && b[0] == b'0' && i == int {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if exp == 0 {
            return None;
        }
        i += exp;
    }
    // `1e999` overflows to infinity: it stays the string it was written as.
    (i == b.len()).then(|| v.parse::<f64>().ok().filter(|f| f.is_finite()).map(Value::from)).flatten()
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        _ => "value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsing_again_builds_only_the_documents_that_changed() {
        let text = "a: 1\n---\nb: [x, y]\n---\nc: .nan\n---\nd: [\n";
        let mut parsed = Parsed::default();
        let first = parse_again(text, &mut parsed);
        let edited = text.replace("a: 1", "# a comment\na: 2");
        let again = parse_again(&edited, &mut parsed);
        let fresh = parse(&edited);
        let shape = |d: &[Document]| d.iter().map(|d| (d.index, d.start_line, d.end_line, d.object.clone(), d.diagnostics.clone())).collect::<Vec<_>>();
        assert_eq!(shape(&again), shape(&fresh));
        // The unchanged document is the value built the first time, at its new lines.
        let map = |d: &Document| d.object.as_ref().and_then(Value::as_object).cloned().unwrap();
        assert!(map(&again[1]).ptr_eq(&map(&first[1])));
        assert!(!map(&again[0]).ptr_eq(&map(&first[0])));
        assert_eq!((again[2].diagnostics[0].line, again[3].diagnostics[0].line), (first[2].diagnostics[0].line + 1, first[3].diagnostics[0].line + 1));
        // Only this text's documents are kept.
        assert_eq!(parsed.0.len(), 4);
    }

    #[test]
    fn documents_keep_their_lines() {
        let text = "# leading comment\napiVersion: v1\nkind: ConfigMap\n---\n\n---\napiVersion: v1\nkind: Pod\n";
        let docs = parse(text);
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].start_line, 2);
        assert_eq!(docs[1].start_line, 7);
        assert_eq!(docs[1].object.as_ref().unwrap()["kind"], "Pod");
    }

    #[test]
    fn a_broken_document_reports_its_line_and_spares_the_others() {
        let text = "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: [oops\n---\nkind: Service\n";
        let docs = parse(text);
        assert_eq!(docs.len(), 3);
        assert!(docs[0].object.is_some());
        assert!(docs[1].object.is_none());
        let d = &docs[1].diagnostics[0];
        assert!(d.line >= 7 && d.line <= 8, "line {}", d.line);
        assert!(d.message.starts_with("yaml: line "), "{}", d.message);
        assert!(docs[2].object.is_some());
    }

    #[test]
    fn a_scalar_document_is_not_an_object() {
        let docs = parse("just a string\n");
        assert_eq!(docs.len(), 1);
        assert!(docs[0].diagnostics[0].message.contains("cannot unmarshal string"));
    }

    #[test]
    fn errors_carry_line_and_column() {
        let docs = parse("apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: [oops, x\n");
        let d = &docs[1].diagnostics[0];
        assert_eq!((d.line, d.column), (7, 9), "{d:?}");
        assert_eq!(d.message, "yaml: line 7: unclosed bracket '['");
        let bad = parse_value("a: 1\n  b: 2\n").unwrap_err();
        assert_eq!((bad.line, bad.column), (2, 4), "{bad:?}");
    }

    #[test]
    fn a_repeated_key_is_an_error_at_its_line() {
        let docs = parse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n");
        let d = &docs[0].diagnostics[0];
        assert_eq!(d.line, 5, "{d:?}");
        assert_eq!(d.message, "yaml: line 5: mapping key \"name\" already defined at line 4");
    }

    #[test]
    fn merge_keys_merge_as_in_go_yaml() {
        let v = parse_value("base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\n").unwrap();
        assert_eq!(v["m"], crate::foundation::value::json!({"x": 1, "y": 3}));
    }

    #[test]
    fn a_block_scalar_that_ends_the_document_keeps_its_newline() {
        let docs = parse("kind: ConfigMap\ndata:\n  my.cnf: |\n    [mysqld]\n    log-bin\n---\nkind: Pod\n");
        assert_eq!(docs[0].object.as_ref().unwrap()["data"]["my.cnf"], "[mysqld]\nlog-bin\n");
    }

    #[test]
    fn yaml_1_2_scalars_as_kubeloop_has_always_read_them() {
        let v = parse_value("a: yes\nb: 0755\nc: 1_000\nd: 0x1F\ne: ~\nf: '42'\ng: 1e3\nh: 1e999\ni: !!int \"42\"\nj: -12\n0x1F: k\n").unwrap();
        assert_eq!(v["a"], "yes");
        assert_eq!(v["b"], "0755");
        assert_eq!(v["c"], "1_000");
        assert_eq!(v["d"], 31);
        assert!(v["e"].is_null());
        assert_eq!(v["f"], "42");
        assert_eq!(v["g"], 1000.0);
        assert_eq!(v["h"], "1e999");
        assert_eq!(v["i"], 42);
        assert_eq!(v["j"], -12);
        assert_eq!(v["0x1F"], "k", "keys are read as written");
    }

    #[test]
    // The builder keeps its own stack, so this runs on a test thread's default stack.
    fn hostile_documents_are_rejected_cheaply() {
        // A "billion laughs": nine levels of nine aliases would expand to 9^9 nodes.
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let p = i - 1;
            bomb.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"));
        }
        assert!(parse_value(&bomb).is_err());
        // Nesting far past any real manifest, in flow and in block style.
        assert!(parse_value(&"[".repeat(10_000)).is_err());
        let deep: String = (0..10_000).map(|i| format!("{}a:\n", " ".repeat(i))).collect();
        let d = &parse(&deep)[0].diagnostics;
        assert!(!d.is_empty(), "a 10,000-level map is refused");
        // Many nodes: a million is the ceiling (this is 1.25 million).
        let wide = "- {a: 1, b: 2}\n".repeat(250_000);
        assert!(parse_value(&wide).is_err());
    }

    /// sigs.k8s.io/yaml `YAMLToJSON` (yaml.go): go-yaml reads `.nan`/`.inf` as Go floats
    /// and `json.Marshal` refuses them (`UnsupportedValueError`, the value spelled by
    /// `strconv.FormatFloat`), so `kubectl apply` reports "error converting YAML to JSON:
    /// json: unsupported value: NaN" instead of sending `replicas: null`.
    #[test]
    fn nan_and_inf_fail_as_yaml_to_json_does() {
        let docs = parse("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: .nan\n");
        assert!(docs[0].object.is_none());
        assert_eq!(docs[0].diagnostics, vec![Diagnostic { line: 6, column: 13, message: "json: unsupported value: NaN".into() }]);
        for (text, want) in [("a: .inf\n", "+Inf"), ("a: [-.Inf]\n", "-Inf"), ("a: !!float .NaN\n", "NaN"), ("a: 1\nb: +.INF\n", "+Inf")] {
            assert_eq!(parse(text)[0].diagnostics[0].message, format!("json: unsupported value: {want}"), "{text:?}");
            assert_eq!(parse_value(text).unwrap_err().message, format!("json: unsupported value: {want}"), "{text:?}");
        }
        // Quoted, or as a key, it is a string.
        assert_eq!(parse_value("a: \".nan\"\n.inf: x\n").unwrap(), crate::foundation::value::json!({"a": ".nan", ".inf": "x"}));
        // A YAML error still wins: YAMLToJSON fails before json.Marshal.
        assert!(parse("a: .nan\nb: [oops\n")[0].diagnostics[0].message.starts_with("yaml: line "));
    }
}
