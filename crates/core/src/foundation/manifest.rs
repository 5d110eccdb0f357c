//! YAML in, objects and diagnostics out.
//!
//! Parsing never fails as a whole (the rust-analyzer habit): a multi-document text becomes
//! a list of documents, each with its starting line and either a JSON object or the
//! diagnostics that explain, at a line and column, why it is not one. One broken document
//! never hides the others.

use crate::foundation::value::Value;

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
        match parse_value(&body) {
            Ok(Value::Object(m)) => doc.object = Some(Value::Object(m)),
            Ok(Value::Null) => continue,
            Ok(other) => doc.diagnostics.push(Diagnostic {
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
    docs
}

/// Limits that keep hostile input cheap to reject: nesting up to 128 levels
/// deep, a bounded number of nodes and aliases, and alias expansion capped well below a
/// "billion laughs". Real manifests stay far inside them (the largest in the website's
/// examples has a few hundred nodes and a depth of 12).
fn options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_depth: 128,
            flow_nesting_limit: 128,
            max_events: 1_000_000,
            max_nodes: 250_000,
            max_aliases: 1_000,
            max_anchors: 1_000,
            max_total_scalar_bytes: 16 << 20,
            max_documents: 1,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: 100_000,
            max_replay_stack_depth: 16,
        },
        // What go-yaml does in `kubectl apply`: a repeated key is an error, not a silent
        // overwrite.
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
        // YAML 1.2 core scalars, as kubeloop has always read them: `yes`, `0755` and `1_000`
        // are strings, `.inf` a float.
        strict_booleans: true,
        leading_zero_numbers_as_strings: true,
        underscored_numbers_as_strings: true,
        non_finite_float_policy: serde_saphyr::NonFiniteFloatPolicy::PassThrough,
        with_snippet: false,
    }
}

/// Why a YAML text is not a value, and where (1-based, within the text).
#[derive(Debug, Clone, PartialEq)]
pub struct YamlError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// One YAML document (a whole text, or one document of a stream) as a value.
pub fn parse_value(text: &str) -> Result<Value, YamlError> {
    serde_saphyr::from_str_with_options::<Value>(text, options()).map_err(|e| {
        use serde_saphyr::MessageFormatter as _;
        let (line, column) = e.location().map(|l| (l.line() as usize, l.column() as usize)).unwrap_or((1, 1));
        let message = serde_saphyr::DefaultMessageFormatter.format_message(e.without_snippet()).into_owned();
        YamlError { line: line.max(1), column: column.max(1), message }
    })
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
        assert!(d.message.contains("duplicate mapping key"), "{d:?}");
    }

    #[test]
    fn a_block_scalar_that_ends_the_document_keeps_its_newline() {
        let docs = parse("kind: ConfigMap\ndata:\n  my.cnf: |\n    [mysqld]\n    log-bin\n---\nkind: Pod\n");
        assert_eq!(docs[0].object.as_ref().unwrap()["data"]["my.cnf"], "[mysqld]\nlog-bin\n");
    }

    #[test]
    fn yaml_1_2_scalars_as_kubeloop_has_always_read_them() {
        let v = parse_value("a: yes\nb: 0755\nc: 1_000\nd: 0x1F\ne: ~\nf: '42'\ng: 1e3\n").unwrap();
        assert_eq!(v["a"], "yes");
        assert_eq!(v["b"], "0755");
        assert_eq!(v["c"], "1_000");
        assert_eq!(v["d"], 31);
        assert!(v["e"].is_null());
        assert_eq!(v["f"], "42");
        assert_eq!(v["g"], 1000.0);
    }

    #[test]
    fn hostile_documents_are_rejected_cheaply() {
        // Unoptimised builds spend ~20 KiB of stack per level of block nesting below the
        // depth limit (optimised ones under 4 KiB, so 128 levels fit in the 1 MiB of a wasm
        // stack); give this test's thread what an optimised build would not need.
        std::thread::Builder::new().stack_size(16 << 20).spawn(hostile_documents).unwrap().join().unwrap();
    }

    fn hostile_documents() {
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
        // Many nodes: a quarter of a million is the ceiling.
        let wide = "- {a: 1, b: 2}\n".repeat(100_000);
        assert!(parse_value(&wide).is_err());
    }
}
