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
        let body = lines.join("\n");
        let first_content = lines.iter().position(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with('#')
        });
        let end_line = start + lines.len().saturating_sub(1);
        let mut doc = Document { index: docs.len(), start_line: start + first_content.unwrap_or(0), end_line, object: None, diagnostics: vec![] };
        match serde_yaml::from_str::<Value>(&body) {
            Ok(Value::Object(m)) => doc.object = Some(Value::Object(m)),
            Ok(Value::Null) => continue,
            Ok(other) => doc.diagnostics.push(Diagnostic {
                line: doc.start_line,
                column: 1,
                message: format!("error unmarshaling JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}", json_type(&other)),
            }),
            Err(e) => {
                let (line, column) = e.location().map(|l| (l.line(), l.column())).unwrap_or((1, 1));
                let msg = e.to_string();
                // serde_yaml appends " at line X column Y"; the position is reported separately.
                let msg = match msg.find(" at line ") {
                    Some(i) => msg[..i].to_string(),
                    None => msg,
                };
                // An error found at the end of the document belongs to its last content line.
                let last_content = start + lines.iter().rposition(|l| !l.trim().is_empty()).unwrap_or(0);
                let line = (start + line - 1).min(last_content);
                doc.diagnostics.push(Diagnostic { line, column, message: format!("yaml: line {line}: {msg}") });
            }
        }
        docs.push(doc);
    }
    docs
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
}
