//! Label selectors: `metav1.LabelSelector` objects, their string form (`app=web,tier!=db`,
//! `env in (a,b)`, `!canary`), and node selector terms
//! (`k8s.io/apimachinery/pkg/labels/selector.go`, `pkg/apis/meta/v1/helpers.go`).

use crate::foundation::sort::Sort;
use std::collections::BTreeSet;

use crate::foundation::status::FieldError;
use crate::foundation::value::{Map, Value};

// --- Label keys and values: `k8s.io/apimachinery/pkg/api/validate/content` (`kube.go`,
// `dns.go`, `errors.go`), which `validation.IsQualifiedName` and `IsValidLabelValue`
// alias since 1.35. Its length errors say "bytes" where the older name checks of
// `pkg/util/validation` say "characters".

/// `RegexError(dns1123SubdomainErrorMsg, dns1123SubdomainFmt, "example.com")`.
pub const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
/// `RegexError(labelKeyErrMsg, labelKeyFmt, "MyName", "my.name", "123-abc")`.
const LABEL_KEY_REGEX_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
/// `RegexError(labelValueErrMsg, labelValueFmt, "MyValue", "my_value", "12345")`.
pub const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// Matches `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$` (`dns1123LabelFmt`), length aside.
pub fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty() && is_lower_alnum(b[0]) && is_lower_alnum(b[b.len() - 1]) && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
}

/// Matches `^` + `dns1123SubdomainFmt` + `$`: dot-separated labels, with no length limit
/// on any part (only the whole name's 253 is checked, separately).
pub fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// Matches `^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$` (`labelKeyFmt`).
fn matches_label_key_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `content.IsLabelKey` (what `validation.IsQualifiedName` is): the messages, in order.
pub fn label_key_errors(key: &str) -> Vec<String> {
    let parts: Vec<&str> = key.split('/').collect();
    let mut errs = Vec::new();
    let name = match parts.as_slice() {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > 253 {
                    errs.push("prefix part must be no more than 253 bytes".to_string());
                }
                if !matches_dns1123_subdomain(prefix) {
                    errs.push(format!("prefix part {DNS1123_SUBDOMAIN_MSG}"));
                }
            }
            name
        }
        _ => return vec![format!("a valid label key {LABEL_KEY_REGEX_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")],
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 bytes".to_string());
    }
    if !matches_label_key_name(name) {
        errs.push(format!("name part {LABEL_KEY_REGEX_MSG}"));
    }
    errs
}

/// `content.IsLabelValue` (what `validation.IsValidLabelValue` is).
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 bytes".to_string());
    }
    if !value.is_empty() && !matches_label_key_name(value) {
        errs.push(LABEL_VALUE_MSG.to_string());
    }
    errs
}

fn label<'a>(labels: Option<&'a Map>, key: &str) -> Option<&'a str> {
    labels.and_then(|l| l.get(key)).and_then(Value::as_str)
}

fn requirement_matches(op: &str, key: &str, values: &[Value], labels: Option<&Map>) -> bool {
    let have = label(labels, key);
    let in_values = |v: &str| values.iter().any(|x| x.as_str() == Some(v));
    match op {
        "In" => have.is_some_and(in_values),
        "NotIn" => !have.is_some_and(in_values),
        "Exists" => have.is_some(),
        "DoesNotExist" => have.is_none(),
        "Gt" | "Lt" => {
            let (Some(h), Some(v)) = (have.and_then(|h| h.parse::<i64>().ok()), values.first().and_then(Value::as_str).and_then(|v| v.parse::<i64>().ok()))
            else {
                return false;
            };
            if op == "Gt" {
                h > v
            } else {
                h < v
            }
        }
        _ => false,
    }
}

/// Whether a `LabelSelector` selects an object with `labels`. A null selector selects
/// nothing; an empty one selects everything (`LabelSelectorAsSelector`).
pub fn selector_matches(selector: Option<&Value>, labels: Option<&Map>) -> bool {
    let Some(sel) = selector.filter(|s| !s.is_null()) else { return false };
    if let Some(ml) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in ml {
            if label(labels, k) != v.as_str() {
                return false;
            }
        }
    }
    for e in sel.get("matchExpressions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
        let values = e.get("values").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
        if !requirement_matches(op, key, values, labels) {
            return false;
        }
    }
    true
}

/// A plain `map[string]string` selector (Services, nodeSelector): every pair must match.
/// An empty or missing map selects nothing here (callers decide what "no selector" means).
pub fn map_matches(selector: &Map, labels: Option<&Map>) -> bool {
    selector.iter().all(|(k, v)| label(labels, k) == v.as_str())
}

/// The string form kubectl prints in `SELECTOR` columns (`app=web,tier in (a,b)`).
pub fn selector_string(selector: Option<&Value>) -> String {
    let Some(sel) = selector else { return "<none>".into() };
    let mut parts = Vec::new();
    if let Some(ml) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in ml {
            parts.push(format!("{k}={}", v.as_str().unwrap_or("")));
        }
    }
    for e in sel.get("matchExpressions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let vals: Vec<&str> = e.get("values").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => parts.push(format!("{key} in ({})", vals.join(","))),
            "NotIn" => parts.push(format!("{key} notin ({})", vals.join(","))),
            "Exists" => parts.push(key.to_string()),
            "DoesNotExist" => parts.push(format!("!{key}")),
            _ => {}
        }
    }
    parts.sort_stable();
    if parts.is_empty() {
        "<none>".into()
    } else {
        parts.join(",")
    }
}

/// A parsed label-selector string (`kubectl get -l ...`): requirements as
/// (key, operator, values), operators as in `matchExpressions` plus `Gt`/`Lt`.
#[derive(Debug, Clone, PartialEq)]
pub struct Selector(Vec<(String, String, Vec<String>)>);

/// Longest selector string accepted. `labels.Parse` has no limit of its own (the request
/// line bounds it); kubeloop takes selectors from anywhere, so it sets one.
pub const MAX_SELECTOR_LEN: usize = 64 * 1024;

/// The lexer's tokens (`Token` in selector.go).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

/// `string2token`.
fn keyword(s: &[u8]) -> Option<Token> {
    Some(match s {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(ch: u8) -> bool {
    matches!(ch, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special_symbol(ch: u8) -> bool {
    matches!(ch, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// selector.go's `Lexer`, byte for byte: `read` yields 0 at the end (and for a NUL byte,
/// which the Go lexer also takes for the end).
struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn read(&mut self) -> u8 {
        match self.s.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    fn scan_id_or_keyword(&mut self) -> (Token, String) {
        let mut buffer = Vec::new();
        loop {
            match self.read() {
                0 => break,
                ch if is_special_symbol(ch) || is_whitespace(ch) => {
                    self.unread();
                    break;
                }
                ch => buffer.push(ch),
            }
        }
        let lit = String::from_utf8_lossy(&buffer).into_owned();
        (keyword(&buffer).unwrap_or(Token::Identifier), lit)
    }

    fn scan_special_symbol(&mut self) -> (Token, String) {
        let mut last: Option<(Token, usize)> = None;
        let mut buffer = Vec::new();
        loop {
            match self.read() {
                0 => break,
                ch if is_special_symbol(ch) => {
                    buffer.push(ch);
                    if let Some(t) = keyword(&buffer) {
                        last = Some((t, buffer.len()));
                    } else if last.is_some() {
                        self.unread();
                        break;
                    }
                }
                _ => {
                    self.unread();
                    break;
                }
            }
        }
        match last {
            Some((t, n)) => (t, String::from_utf8_lossy(&buffer[..n]).into_owned()),
            None => (Token::Error, format!("error expected: keyword found '{}'", String::from_utf8_lossy(&buffer))),
        }
    }

    fn lex(&mut self) -> (Token, String) {
        let mut ch = self.read();
        while is_whitespace(ch) {
            ch = self.read();
        }
        match ch {
            0 => (Token::EndOfString, String::new()),
            ch if is_special_symbol(ch) => {
                self.unread();
                self.scan_special_symbol()
            }
            _ => {
                self.unread();
                self.scan_id_or_keyword()
            }
        }
    }
}

/// `ParserContext`: in `Values`, `in` and `notin` are identifiers.
#[derive(Clone, Copy, PartialEq)]
enum Context {
    KeyAndOperator,
    Values,
}

/// `selection.Operator`.
#[derive(Clone, Copy, PartialEq)]
enum Op {
    DoesNotExist,
    Equals,
    DoubleEquals,
    In,
    NotEquals,
    NotIn,
    Exists,
    GreaterThan,
    LessThan,
}

/// selector.go's `Parser`: a recursive descent over the scanned tokens. Each token is
/// looked at a bounded number of times, so parsing is linear in the input.
struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

impl Parser {
    fn at(&self, i: usize, context: Context) -> (Token, &str) {
        let (tok, lit) = self.items.get(i).map(|(t, l)| (*t, l.as_str())).unwrap_or((Token::EndOfString, ""));
        match tok {
            Token::In | Token::NotIn if context == Context::Values => (Token::Identifier, lit),
            _ => (tok, lit),
        }
    }

    fn lookahead(&self, context: Context) -> (Token, String) {
        let (t, l) = self.at(self.position, context);
        (t, l.to_string())
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        self.position += 1;
        let (t, l) = self.at(self.position - 1, context);
        (t, l.to_string())
    }

    fn parse(&mut self) -> Result<Vec<(String, Op, Vec<String>)>, String> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self.parse_requirement().map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(r);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(format!("found '{l2}', expected: identifier after ','"));
                            }
                        }
                        _ => return Err(format!("found '{l}', expected: ',' or 'end of string'")),
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => return Err(format!("found '{lit}', expected: !, identifier, or 'end of string'")),
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<(String, Op, Vec<String>), String> {
        let (key, operator) = self.parse_key_and_infer_operator()?;
        if let Some(op @ (Op::Exists | Op::DoesNotExist)) = operator {
            return new_requirement(key, op, Vec::new());
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            Op::In | Op::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        new_requirement(key, operator, values.into_iter().collect())
    }

    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Op>), String> {
        let mut operator = None;
        let (mut tok, mut literal) = self.consume(Context::Values);
        if tok == Token::DoesNotExist {
            operator = Some(Op::DoesNotExist);
            (tok, literal) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        let errs = label_key_errors(&literal);
        if !errs.is_empty() {
            // validateLabelKey(k, p.path): the parser's path is nil, printed "<nil>".
            return Err(FieldError::invalid("<nil>", &Value::from(literal.as_str()), errs.join("; ")).to_string());
        }
        if matches!(self.lookahead(Context::Values).0, Token::EndOfString | Token::Comma) && operator != Some(Op::DoesNotExist) {
            operator = Some(Op::Exists);
        }
        Ok((literal, operator))
    }

    fn parse_operator(&mut self) -> Result<Op, String> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => Op::In,
            Token::Equals => Op::Equals,
            Token::DoubleEquals => Op::DoubleEquals,
            Token::GreaterThan => Op::GreaterThan,
            Token::LessThan => Op::LessThan,
            Token::NotIn => Op::NotIn,
            Token::NotEquals => Op::NotEquals,
            _ => return Err(format!("found '{lit}', expected: in, notin, =, ==, !=, gt, lt")),
        })
    }

    fn parse_values(&mut self) -> Result<BTreeSet<String>, String> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let s = self.parse_identifiers_list()?;
                if self.consume(Context::Values).0 != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(s)
            }
            Token::ClosedPar => {
                // "()" is the set holding the empty string.
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<BTreeSet<String>, String> {
        let mut s = BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    s.insert(lit);
                    let (tok2, lit2) = self.lookahead(Context::Values);
                    match tok2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(s),
                        _ => return Err(format!("found '{lit2}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    // "(,", ",)" and ",," each stand for the empty value.
                    if s.is_empty() {
                        s.insert(String::new());
                    }
                    match self.lookahead(Context::Values).0 {
                        Token::ClosedPar => {
                            s.insert(String::new());
                            return Ok(s);
                        }
                        Token::Comma => {
                            s.insert(String::new());
                        }
                        _ => {}
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        if matches!(self.lookahead(Context::Values).0, Token::EndOfString | Token::Comma) {
            return Ok(BTreeSet::from([String::new()]));
        }
        match self.consume(Context::Values) {
            (Token::Identifier, lit) => Ok(BTreeSet::from([lit])),
            (_, lit) => Err(format!("found '{lit}', expected: identifier")),
        }
    }
}

/// `NewRequirement` as the parser reaches it (the key is already valid, the value count
/// already right): the Gt/Lt integer check and each value's `IsValidLabelValue`, joined
/// as `field.ErrorList.ToAggregate` joins them.
fn new_requirement(key: String, op: Op, values: Vec<String>) -> Result<(String, Op, Vec<String>), String> {
    let mut errs: Vec<String> = Vec::new();
    let mut push = |e: FieldError| {
        let s = e.to_string();
        if !errs.contains(&s) {
            errs.push(s);
        }
    };
    if matches!(op, Op::GreaterThan | Op::LessThan) {
        for (i, v) in values.iter().enumerate() {
            if v.parse::<i64>().is_err() {
                push(FieldError::invalid(format!("values[{i}]"), &Value::from(v.as_str()), "for 'Gt', 'Lt' operators, the value must be an integer"));
            }
        }
    }
    for (i, v) in values.iter().enumerate() {
        let msgs = label_value_errors(v);
        if !msgs.is_empty() {
            push(FieldError::invalid(format!("values[{i}][{key}]"), &Value::from(v.as_str()), msgs.join("; ")));
        }
    }
    match errs.len() {
        0 => Ok((key, op, values)),
        1 => Err(errs.remove(0)),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

impl Selector {
    /// `labels.Parse`: `a=b,c!=d,e in (x,y),f notin (z),g,!h,n>1`, with its error texts.
    pub fn parse(s: &str) -> Result<Selector, String> {
        if s.len() > MAX_SELECTOR_LEN {
            return Err(format!("unable to parse label selector: it is {} bytes long, more than the limit of {MAX_SELECTOR_LEN} bytes", s.len()));
        }
        let mut lexer = Lexer { s: s.as_bytes(), pos: 0 };
        let mut items = Vec::new();
        loop {
            let item = lexer.lex();
            let end = item.0 == Token::EndOfString;
            items.push(item);
            if end {
                break;
            }
        }
        let mut reqs = Parser { items, position: 0 }.parse()?;
        // sort.Sort(ByKey(items)): a deterministic order.
        reqs.sort_stable_by(|a, b| a.0.cmp(&b.0));
        let reqs = reqs
            .into_iter()
            .map(|(k, op, vals)| {
                let op = match op {
                    Op::In | Op::Equals | Op::DoubleEquals => "In",
                    Op::NotIn | Op::NotEquals => "NotIn",
                    Op::Exists => "Exists",
                    Op::DoesNotExist => "DoesNotExist",
                    Op::GreaterThan => "Gt",
                    Op::LessThan => "Lt",
                };
                (k, op.to_string(), vals)
            })
            .collect();
        Ok(Selector(reqs))
    }

    pub fn matches(&self, labels: Option<&Map>) -> bool {
        self.0.iter().all(|(k, op, vals)| {
            let vals: Vec<Value> = vals.iter().map(|v| Value::from(v.as_str())).collect();
            requirement_matches(op, k, &vals, labels)
        })
    }
}

/// Whether a node's labels (and name, for `matchFields`) satisfy one NodeSelectorTerm.
pub fn node_selector_term_matches(term: &Value, node_labels: Option<&Map>, node_name: &str) -> bool {
    let exprs = term.get("matchExpressions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    let fields = term.get("matchFields").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    for e in exprs {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
        let values = e.get("values").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
        if !requirement_matches(op, key, values, node_labels) {
            return false;
        }
    }
    for f in fields {
        if f.get("key").and_then(Value::as_str) != Some("metadata.name") {
            return false;
        }
        let mut m = Map::new();
        m.insert("metadata.name", Value::String(node_name.into()));
        let op = f.get("operator").and_then(Value::as_str).unwrap_or("");
        let values = f.get("values").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
        if !requirement_matches(op, "metadata.name", values, Some(&m)) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foundation::value::json;

    fn l(v: Value) -> Map {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn label_selectors_match() {
        let labels = l(json!({"app": "web", "tier": "front"}));
        assert!(selector_matches(Some(&json!({"matchLabels": {"app": "web"}})), Some(&labels)));
        assert!(!selector_matches(Some(&json!({"matchLabels": {"app": "db"}})), Some(&labels)));
        assert!(selector_matches(Some(&json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "back"]}]})), Some(&labels)));
        assert!(selector_matches(Some(&json!({"matchExpressions": [{"key": "canary", "operator": "DoesNotExist"}]})), Some(&labels)));
        assert!(selector_matches(Some(&json!({})), Some(&labels)));
        assert!(!selector_matches(None, Some(&labels)));
    }

    #[test]
    fn selector_strings_parse() {
        let labels = l(json!({"app": "web", "env": "prod"}));
        assert!(Selector::parse("app=web").unwrap().matches(Some(&labels)));
        assert!(Selector::parse("app=web,env in (prod,stage)").unwrap().matches(Some(&labels)));
        assert!(!Selector::parse("app!=web").unwrap().matches(Some(&labels)));
        assert!(Selector::parse("!canary,env").unwrap().matches(Some(&labels)));
        assert!(Selector::parse("a in b").is_err());
        assert_eq!(selector_string(Some(&json!({"matchLabels": {"app": "web"}}))), "app=web");
    }

    /// `labels.Parse` (apimachinery `pkg/labels/selector.go`, `Lexer`/`Parser`): the
    /// inputs kubeloop used to accept or garble, with upstream's exact errors.
    #[test]
    fn selector_parse_errors_match_upstream_parser() {
        for (input, want) in [
            ("!!", "unable to parse requirement: found '!', expected: identifier"),
            ("=b", "found '=', expected: !, identifier, or 'end of string'"),
            ("a==b==c", "found '==', expected: ',' or 'end of string'"),
            (",,,,", "found ',', expected: !, identifier, or 'end of string'"),
            ("a in (", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
            ("a in b", "unable to parse requirement: found 'b' expected: '('"),
            ("a,", "found '', expected: identifier after ','"),
            ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
            ("a in (x y)", "unable to parse requirement: found 'y', expected: ',' or ')'"),
            ("a in (x,", "unable to parse requirement: found '', expected: ',', or identifier"),
            ("x=(", "unable to parse requirement: found '(', expected: identifier"),
            // testBadStrings of TestSelectorParse (selector_test.go).
            ("x==a==b", "found '==', expected: ',' or 'end of string'"),
            ("!x=a", "found '=', expected: ',' or 'end of string'"),
            ("x<a", "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"),
            (
                "x=a||y=b",
                "unable to parse requirement: values[0][x]: Invalid value: \"a||y\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ),
            (
                "a/b/c",
                "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
            ),
        ] {
            assert_eq!(Selector::parse(input).unwrap_err(), want, "{input:?}");
        }
        // Two bad values: both errors, bracketed as ToAggregate joins them.
        let e = Selector::parse("x in (-a,b-)").unwrap_err();
        assert!(e.starts_with("unable to parse requirement: [values[0][x]: Invalid value: \"-a\": a valid label"), "{e}");
        assert!(e.contains(", values[1][x]: Invalid value: \"b-\": "), "{e}");
    }

    /// testGoodStrings of `TestSelectorParse` and cases of `TestSelectorMatches`
    /// (selector_test.go), including `notin ()`, which upstream reads as "not the empty
    /// value" (the documented example `x in (foo,,baz),y,z notin ()`).
    #[test]
    fn selector_parse_accepts_upstream_good_strings() {
        for good in ["x=a,y=b,z=c", "", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5", "x in (foo,,baz),y,z notin ()", "notin=in"] {
            assert!(Selector::parse(good).is_ok(), "{good:?}");
        }
        let m = |sel: &str, labels: Value| Selector::parse(sel).unwrap().matches(Some(&l(labels)));
        assert!(m("x=y,z=w", json!({"x": "y", "z": "w"})));
        assert!(m("x!=y,z!=w", json!({"x": "z", "z": "a"})));
        assert!(m("notin=in", json!({"notin": "in"})));
        assert!(m("x>1", json!({"x": "2"})) && !m("x>1", json!({"x": "0"})));
        assert!(m("x<1", json!({"x": "0"})) && !m("x<1", json!({"x": "2"})));
        assert!(m("!x", json!({"y": "z"})) && !m("!x", json!({"x": "z"})));
        assert!(m("x=", json!({"x": ""})) && !m("x=", json!({"x": "a"})));
        assert!(m("a notin ()", json!({})) && m("a notin ()", json!({"a": "x"})) && !m("a notin ()", json!({"a": ""})));
        assert!(m("x in (foo,,baz)", json!({"x": ""})) && m("x in (in)", json!({"x": "in"})));
    }

    /// kubeloop's own bound (upstream has none): a clear error past 64 KiB, and linear
    /// time up to it.
    #[test]
    fn selector_length_is_bounded_and_parsing_linear() {
        let long = "a".repeat(MAX_SELECTOR_LEN + 1);
        assert_eq!(
            Selector::parse(&long).unwrap_err(),
            format!("unable to parse label selector: it is {} bytes long, more than the limit of 65536 bytes", MAX_SELECTOR_LEN + 1)
        );
        let many = "k=v,".repeat(MAX_SELECTOR_LEN / 4 - 1) + "k=v";
        assert_eq!(Selector::parse(&many).unwrap().0.len(), MAX_SELECTOR_LEN / 4);
        let set = format!("k in ({})", "v,".repeat(MAX_SELECTOR_LEN / 2 - 8));
        assert!(Selector::parse(&set).is_ok());
        assert!(Selector::parse(&"(".repeat(MAX_SELECTOR_LEN)).is_err());
    }

    /// `content.IsLabelKey` / `content.IsLabelValue` (apimachinery
    /// `pkg/api/validate/content/kube.go`): every message, "bytes" for lengths.
    #[test]
    fn label_key_and_value_errors_match_content_package() {
        assert!(label_key_errors("example.com/app").is_empty());
        assert_eq!(label_key_errors("/a"), vec!["prefix part must be non-empty"]);
        assert_eq!(label_key_errors("a/").len(), 2, "empty name: non-empty and regex");
        assert_eq!(label_key_errors(&"a".repeat(64)), vec!["name part must be no more than 63 bytes"]);
        let long_prefix = format!("{}/a", "a".repeat(254));
        assert_eq!(label_key_errors(&long_prefix), vec!["prefix part must be no more than 253 bytes"]);
        assert_eq!(label_value_errors(&"v".repeat(64)), vec!["must be no more than 63 bytes"]);
        assert!(label_value_errors("").is_empty());
        assert_eq!(label_value_errors("-x"), vec![LABEL_VALUE_MSG]);
    }
}
