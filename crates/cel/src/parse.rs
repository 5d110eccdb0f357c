//! CEL's grammar (cel-spec's `CEL.g4`, the one cel-go parses) by recursive descent, into
//! the `cel` crate's expression tree with its macros (`has`, `all`, `exists`, `exists_one`,
//! `map`, `filter`) expanded, as cel-go's parser does. The optional syntax (`a.?b`,
//! `a[?k]`, `[?x]`, `{?k: v}`) is on, as in Kubernetes' CEL environment.
//!
//! It stands in for `cel`'s ANTLR parser, which is three fifths of the page's CEL module.
//! Errors read as cel-go's do: `ERROR: <input>:LINE:COL: MESSAGE`, the line, and a caret
//! under the column; the messages are ANTLR's for the common mistakes, and the parse
//! stops at the first error.

use kube_cel::cel::common::ast::{
    operators as op, CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedEntryExpr, IdedExpr, ListExpr, LiteralValue, MapEntryExpr, MapExpr, SelectExpr,
    StructExpr, StructFieldExpr,
};

/// cel-go's default limits: nesting depth, and the expression's size in code points.
const MAX_DEPTH: usize = 250;
const MAX_CODE_POINTS: usize = 100_000;

/// What may begin an expression, as ANTLR lists it in cel-go's messages.
const EXPR_START: &str = "'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER";

/// cel-go's reserved words, refused as identifiers.
const RESERVED: [&str; 17] =
    ["as", "break", "const", "continue", "else", "for", "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"];

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    Ident(String),
    /// A backquoted field name, without its quotes.
    Escaped(String),
    True,
    False,
    Null,
    /// Punctuation and operators, `in` included.
    P(&'static str),
    Eof,
}

struct Token {
    tok: Tok,
    /// Byte offsets of the token's text.
    start: usize,
    end: usize,
}

/// A parse error at a byte offset.
struct Error {
    at: usize,
    msg: String,
}

/// Parse `src` into an expression tree, or cel-go's error text.
pub fn parse(src: &str) -> Result<IdedExpr, String> {
    let n = src.chars().count();
    if n > MAX_CODE_POINTS {
        return Err(format!("expression code point size exceeds limit: size: {n}, limit {MAX_CODE_POINTS}"));
    }
    let run = || {
        let tokens = lex(src)?;
        let mut p = Parser { src, tokens, pos: 0, next_id: 1, depth: 0 };
        let e = p.expr()?;
        if p.peek() != &Tok::Eof {
            return Err(p.error_here(format!("extraneous input {} expecting <EOF>", p.shown())));
        }
        Ok(e)
    };
    run().map_err(|e| render(src, e))
}

/// cel-go's rendering of an error: the place, the message, the line and a caret.
fn render(src: &str, e: Error) -> String {
    let at = e.at.min(src.len());
    let line_start = src[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_no = src[..at].matches('\n').count() + 1;
    let col = src[line_start..at].chars().count() + 1;
    let line = src[line_start..].lines().next().unwrap_or("");
    format!("ERROR: <input>:{line_no}:{col}: {}\n| {line}\n| {}^", e.msg, ".".repeat(col - 1))
}

const PUNCT: [&str; 26] =
    ["==", "!=", "<=", ">=", "&&", "||", "<", ">", "[", "]", "{", "}", "(", ")", ".", ",", "-", "!", "?", ":", "+", "*", "/", "%", "=", "|"];

fn lex(src: &str) -> Result<Vec<Token>, Error> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if matches!(c, b' ' | b'\t' | b'\r' | b'\n' | 0x0c) {
            i += 1;
            continue;
        }
        if src[i..].starts_with("//") {
            i = src[i..].find('\n').map_or(b.len(), |k| i + k);
            continue;
        }
        let start = i;
        let tok = if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let (t, end) = number(src, i)?;
            i = end;
            t
        } else if let Some((t, end)) = string_literal(src, i)? {
            i = end;
            t
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let end = src[i..].find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_')).map_or(b.len(), |k| i + k);
            let word = &src[i..end];
            i = end;
            match word {
                "true" => Tok::True,
                "false" => Tok::False,
                "null" => Tok::Null,
                "in" => Tok::P("in"),
                w => Tok::Ident(w.to_string()),
            }
        } else if c == b'`' {
            let body = src[i + 1..].find(|ch: char| !(ch.is_ascii_alphanumeric() || "_.-/ ".contains(ch))).map(|k| i + 1 + k);
            match body {
                Some(end) if end > i + 1 && b[end] == b'`' => {
                    i = end + 1;
                    Tok::Escaped(src[start + 1..end].to_string())
                }
                _ => return Err(recognition(src, start, start + 1)),
            }
        } else if let Some(p) = PUNCT.iter().find(|p| src[i..].starts_with(**p)) {
            if *p == "=" || *p == "|" {
                return Err(recognition(src, start, (start + 2).min(b.len())));
            }
            i += p.len();
            Tok::P(p)
        } else {
            let len = src[i..].chars().next().map_or(1, char::len_utf8);
            return Err(recognition(src, start, start + len));
        };
        out.push(Token { tok, start, end: i });
    }
    out.push(Token { tok: Tok::Eof, start: b.len(), end: b.len() });
    Ok(out)
}

/// ANTLR's lexer error: the text it could not make a token of.
fn recognition(src: &str, start: usize, end: usize) -> Error {
    let mut end = end.min(src.len());
    while !src.is_char_boundary(end) {
        end += 1;
    }
    Error { at: start, msg: format!("Syntax error: token recognition error at: '{}'", &src[start..end]) }
}

/// NUM_FLOAT, NUM_INT or NUM_UINT at `i`.
fn number(src: &str, i: usize) -> Result<(Tok, usize), Error> {
    let b = src.as_bytes();
    let digits = |mut k: usize| {
        while k < b.len() && b[k].is_ascii_digit() {
            k += 1;
        }
        k
    };
    let invalid = |what: &str| Error { at: i, msg: format!("invalid {what} literal") };
    if src[i..].starts_with("0x") && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit) {
        let mut k = i + 2;
        while k < b.len() && b[k].is_ascii_hexdigit() {
            k += 1;
        }
        let hex = &src[i + 2..k];
        if matches!(b.get(k), Some(b'u' | b'U')) {
            return u64::from_str_radix(hex, 16).map(|v| (Tok::Uint(v), k + 1)).map_err(|_| invalid("uint"));
        }
        return u64::from_str_radix(hex, 16).map(|v| (Tok::Int(v as i64), k)).map_err(|_| invalid("int")).and_then(|(t, k)| match t {
            Tok::Int(v) if v < 0 => Err(invalid("int")),
            t => Ok((t, k)),
        });
    }
    let int_end = digits(i);
    let mut k = int_end;
    let mut float = false;
    if b.get(k) == Some(&b'.') && b.get(k + 1).is_some_and(u8::is_ascii_digit) {
        k = digits(k + 1);
        float = true;
    }
    if matches!(b.get(k), Some(b'e' | b'E')) {
        let mut e = k + 1;
        if matches!(b.get(e), Some(b'+' | b'-')) {
            e += 1;
        }
        if b.get(e).is_some_and(u8::is_ascii_digit) {
            k = digits(e);
            float = true;
        }
    }
    let text = &src[i..k];
    if float {
        return match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok((Tok::Float(v), k)),
            _ => Err(invalid("double")),
        };
    }
    if matches!(b.get(k), Some(b'u' | b'U')) {
        return text.parse::<u64>().map(|v| (Tok::Uint(v), k + 1)).map_err(|_| invalid("uint"));
    }
    // Kept as u64: `-9223372036854775808` is a literal, its sign applied by the parser.
    text.parse::<u64>().map(|v| (Tok::Int(v as i64), k)).map_err(|_| invalid("int")).and_then(|(t, k)| match t {
        Tok::Int(v) if v < 0 && v != i64::MIN => Err(invalid("int")),
        t => Ok((t, k)),
    })
}

/// A STRING or BYTES token at `i` (with its `r`/`b` prefixes), or None if there is none.
fn string_literal(src: &str, i: usize) -> Result<Option<(Tok, usize)>, Error> {
    let rest = &src[i..];
    let lower = rest.get(..2).map(str::to_ascii_lowercase);
    let (bytes, raw, skip) = match lower.as_deref() {
        Some("br") if rest[2..].starts_with(['\'', '"']) => (true, true, 2),
        Some("rb") => (false, false, usize::MAX),
        _ => match rest.as_bytes().first() {
            Some(b'b' | b'B') if rest[1..].starts_with(['\'', '"']) => (true, false, 1),
            Some(b'r' | b'R') if rest[1..].starts_with(['\'', '"']) => (false, true, 1),
            Some(b'\'' | b'"') => (false, false, 0),
            _ => (false, false, usize::MAX),
        },
    };
    if skip == usize::MAX {
        return Ok(None);
    }
    let q = i + skip;
    let quote = &src[q..q + 1];
    let triple = src[q..].starts_with(&quote.repeat(3));
    let delim = if triple { quote.repeat(3) } else { quote.to_string() };
    let body_start = q + delim.len();
    // Find the closing delimiter, stepping over escapes (when not raw).
    let b = src.as_bytes();
    let mut k = body_start;
    let close = loop {
        if k >= b.len() {
            break None;
        }
        if src[k..].starts_with(&delim) {
            break Some(k);
        }
        if !triple && (b[k] == b'\n' || b[k] == b'\r') {
            break None;
        }
        if b[k] == b'\\' && !raw {
            k += 1;
        }
        k += src[k.min(b.len())..].chars().next().map_or(1, char::len_utf8);
    };
    let Some(close) = close else {
        let end = if triple { b.len() } else { src[i..].find(['\n', '\r']).map_or(b.len(), |e| i + e) };
        return Err(recognition(src, i, end));
    };
    let body = &src[body_start..close];
    let end = close + delim.len();
    let value = if raw { Ok(body.as_bytes().to_vec()) } else { unescape(body, bytes) };
    let value = value.map_err(|_| recognition(src, i, end))?;
    let tok = if bytes {
        Tok::Bytes(value)
    } else {
        match String::from_utf8(value) {
            Ok(s) => Tok::Str(s),
            Err(_) => return Err(recognition(src, i, end)),
        }
    };
    Ok(Some((tok, end)))
}

/// CEL's escapes: `\a \b \f \n \r \t \v \" \' \\ \? \``, octal `\OOO`, `\xHH`, `\uHHHH`
/// and `\UHHHHHHHH`. In a string, `\x` and octal name code points; in bytes, bytes (and
/// `\u`, `\U` are refused there, as in cel-go).
fn unescape(s: &str, bytes: bool) -> Result<Vec<u8>, ()> {
    let mut out = Vec::with_capacity(s.len());
    let mut chars = s.chars();
    let push_code = |out: &mut Vec<u8>, v: u32| -> Result<(), ()> {
        if bytes {
            out.push(u8::try_from(v).map_err(|_| ())?);
        } else {
            let c = char::from_u32(v).ok_or(())?;
            out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        }
        Ok(())
    };
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            continue;
        }
        let e = chars.next().ok_or(())?;
        let mut hex = |n: usize| -> Result<u32, ()> {
            let h: String = chars.by_ref().take(n).collect();
            if h.len() != n {
                return Err(());
            }
            u32::from_str_radix(&h, 16).map_err(|_| ())
        };
        match e {
            'a' => out.push(7),
            'b' => out.push(8),
            'f' => out.push(12),
            'n' => out.push(b'\n'),
            'r' => out.push(b'\r'),
            't' => out.push(b'\t'),
            'v' => out.push(11),
            '"' | '\'' | '\\' | '?' | '`' => out.push(e as u8),
            'x' | 'X' => {
                let v = hex(2)?;
                push_code(&mut out, v)?;
            }
            'u' | 'U' if !bytes => {
                let v = hex(if e == 'u' { 4 } else { 8 })?;
                push_code(&mut out, v)?;
            }
            '0'..='3' => {
                let o: String = std::iter::once(e).chain(chars.by_ref().take(2)).collect();
                if o.len() != 3 {
                    return Err(());
                }
                let v = u32::from_str_radix(&o, 8).map_err(|_| ())?;
                push_code(&mut out, v)?;
            }
            _ => return Err(()),
        }
    }
    Ok(out)
}

struct Parser<'a> {
    src: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    next_id: u64,
    depth: usize,
}

type Parsed = Result<IdedExpr, Error>;

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.tokens[self.pos].tok
    }

    fn peek_at(&self, k: usize) -> &Tok {
        &self.tokens[(self.pos + k).min(self.tokens.len() - 1)].tok
    }

    fn at(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::P(q) if *q == p)
    }

    fn bump(&mut self) -> &Token {
        let t = &self.tokens[self.pos];
        if self.pos + 1 < self.tokens.len() {
            self.pos += 1;
        }
        t
    }

    fn eat(&mut self, p: &str) -> bool {
        let yes = self.at(p);
        if yes {
            self.bump();
        }
        yes
    }

    /// The current token as ANTLR names it in a message.
    fn shown(&self) -> String {
        let t = &self.tokens[self.pos];
        match t.tok {
            Tok::Eof => "'<EOF>'".to_string(),
            _ => format!("'{}'", &self.src[t.start..t.end]),
        }
    }

    fn error_here(&self, msg: String) -> Error {
        Error { at: self.tokens[self.pos].start, msg: format!("Syntax error: {msg}") }
    }

    fn expect(&mut self, p: &str, expecting: &str) -> Result<(), Error> {
        if self.eat(p) {
            return Ok(());
        }
        Err(self.error_here(format!("mismatched input {} expecting {expecting}", self.shown())))
    }

    fn id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn node(&mut self, expr: Expr) -> IdedExpr {
        IdedExpr { id: self.id(), expr }
    }

    fn call(&mut self, func: &str, target: Option<IdedExpr>, args: Vec<IdedExpr>) -> IdedExpr {
        self.node(Expr::Call(CallExpr { func_name: func.to_string(), target: target.map(Box::new), args }))
    }

    /// One link deeper in a chain of operators, selections or indexes: cel-go's visitor
    /// counts each (a tree that deep would be as deep to evaluate).
    fn deeper(&self, depth: &mut usize) -> Result<(), Error> {
        *depth += 1;
        if *depth > MAX_DEPTH {
            return Err(Error { at: self.tokens[self.pos].start, msg: "max recursion depth exceeded".into() });
        }
        Ok(())
    }

    fn expr(&mut self) -> Parsed {
        // cel-go's parser counts nested expressions (parentheses, arguments, elements).
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error { at: self.tokens[self.pos].start, msg: format!("expression recursion limit exceeded: {MAX_DEPTH}") });
        }
        let cond = self.logic("||")?;
        let out = if self.eat("?") {
            let yes = self.logic("||")?;
            self.expect(":", "':'")?;
            let no = self.expr()?;
            self.call(op::CONDITIONAL, None, vec![cond, yes, no])
        } else {
            cond
        };
        self.depth -= 1;
        Ok(out)
    }

    /// A chain of `||` (or of `&&`), as cel-go builds it: a balanced tree of calls.
    fn logic(&mut self, which: &'static str) -> Parsed {
        let next = |p: &mut Self| if which == "||" { p.logic("&&") } else { p.binary(0) };
        let mut terms = vec![next(self)?];
        while self.eat(which) {
            terms.push(next(self)?);
        }
        let func = if which == "||" { op::LOGICAL_OR } else { op::LOGICAL_AND };
        Ok(self.balanced(func, terms))
    }

    fn balanced(&mut self, func: &str, mut terms: Vec<IdedExpr>) -> IdedExpr {
        if terms.len() == 1 {
            return terms.pop().unwrap_or_default();
        }
        let right = terms.split_off(terms.len().div_ceil(2));
        let (l, r) = (self.balanced(func, terms), self.balanced(func, right));
        self.call(func, None, vec![l, r])
    }

    /// Relations, then `+ -`, then `* / %`, each left-associative: precedence climbing,
    /// one frame per level of precedence rather than per rule.
    fn binary(&mut self, min: u8) -> Parsed {
        const OPS: [(&str, &str, u8); 12] = [
            ("<=", op::LESS_EQUALS, 0),
            (">=", op::GREATER_EQUALS, 0),
            ("<", op::LESS, 0),
            (">", op::GREATER, 0),
            ("==", op::EQUALS, 0),
            ("!=", op::NOT_EQUALS, 0),
            ("in", op::IN, 0),
            ("+", op::ADD, 1),
            ("-", op::SUBSTRACT, 1),
            ("*", op::MULTIPLY, 2),
            ("/", op::DIVIDE, 2),
            ("%", op::MODULO, 2),
        ];
        let mut left = self.unary()?;
        let mut chained = self.depth;
        while let Some((_, func, prec)) = OPS.iter().find(|(p, _, prec)| *prec >= min && self.at(p)) {
            self.deeper(&mut chained)?;
            self.bump();
            let right = self.binary(prec + 1)?;
            left = self.call(func, None, vec![left, right]);
        }
        Ok(left)
    }

    fn unary(&mut self) -> Parsed {
        for (p, func) in [("!", op::LOGICAL_NOT), ("-", op::NEGATE)] {
            if !self.at(p) {
                continue;
            }
            // `-1` is a literal; `--1`, `-x` and `!x` apply the operator (an even number
            // of them cancels out, as in cel-go).
            if p == "-" && matches!(self.peek_at(1), Tok::Int(_) | Tok::Float(_)) {
                return self.member();
            }
            let mut n = 0;
            while self.eat(p) {
                n += 1;
            }
            if matches!(self.peek(), Tok::Eof) {
                return Err(self.error_here(format!("mismatched input '<EOF>' expecting {{{EXPR_START}}}")));
            }
            let operand = self.member()?;
            return Ok(if n % 2 == 0 { operand } else { self.call(func, None, vec![operand]) });
        }
        self.member()
    }

    fn member(&mut self) -> Parsed {
        let mut e = self.primary()?;
        let mut chained = self.depth;
        loop {
            if matches!(self.peek(), Tok::P(".") | Tok::P("[")) {
                self.deeper(&mut chained)?;
            }
            if self.eat(".") {
                let optional = self.eat("?");
                let field_at = self.tokens[self.pos].start;
                let (field, plain) = match self.peek().clone() {
                    Tok::Ident(s) => (s, true),
                    Tok::Escaped(s) => (s, false),
                    Tok::Eof => return Err(Error { at: self.src.len(), msg: "Syntax error: no viable alternative at input '.'".into() }),
                    _ => return Err(self.error_here(format!("mismatched input {} expecting {{IDENTIFIER, ESC_IDENTIFIER}}", self.shown()))),
                };
                self.bump();
                if plain && !optional && self.at("(") {
                    self.bump();
                    let args = self.args(")")?;
                    e = self.call_or_macro(field_at, &field, Some(e), args)?;
                } else if optional {
                    let name = self.node(Expr::Literal(LiteralValue::String(field.into())));
                    e = self.call(op::OPT_SELECT, None, vec![e, name]);
                } else {
                    e = self.node(Expr::Select(SelectExpr { operand: Box::new(e), field, test: false }));
                }
            } else if self.eat("[") {
                let optional = self.eat("?");
                let index = self.expr()?;
                self.expect("]", "']'")?;
                e = self.call(if optional { op::OPT_INDEX } else { op::INDEX }, None, vec![e, index]);
            } else {
                return Ok(e);
            }
        }
    }

    /// Arguments up to `close`, which is consumed.
    fn args(&mut self, close: &str) -> Result<Vec<IdedExpr>, Error> {
        let mut args = Vec::new();
        if self.eat(close) {
            return Ok(args);
        }
        loop {
            if matches!(self.peek(), Tok::Eof | Tok::P(")")) && !args.is_empty() {
                return Err(self.error_here(format!("mismatched input {} expecting {{{EXPR_START}}}", self.shown())));
            }
            if matches!(self.peek(), Tok::Eof) {
                return Err(self.error_here(format!("mismatched input '<EOF>' expecting {{'[', '{{', '(', ')', {}}}", &EXPR_START[15..])));
            }
            args.push(self.expr()?);
            if self.eat(close) {
                return Ok(args);
            }
            self.expect(",", &format!("{{'{close}', ','}}"))?;
        }
    }

    fn primary(&mut self) -> Parsed {
        let tok = self.peek().clone();
        let lit = |v| Ok(Expr::Literal(v));
        let expr = match tok {
            Tok::P("-") => {
                self.bump();
                match self.peek().clone() {
                    Tok::Int(v) => lit(LiteralValue::Int(v.wrapping_neg().into())),
                    Tok::Float(v) => lit(LiteralValue::Double((-v).into())),
                    _ => Err(self.error_here(format!("no viable alternative at input {}", self.shown()))),
                }
            }
            Tok::Int(v) if v < 0 => Err(Error { at: self.tokens[self.pos].start, msg: "invalid int literal".into() }),
            Tok::Int(v) => lit(LiteralValue::Int(v.into())),
            Tok::Uint(v) => lit(LiteralValue::UInt(v.into())),
            Tok::Float(v) => lit(LiteralValue::Double(v.into())),
            Tok::Str(s) => lit(LiteralValue::String(s.into())),
            Tok::Bytes(b) => lit(LiteralValue::Bytes(b.into())),
            Tok::True => lit(LiteralValue::Boolean(true.into())),
            Tok::False => lit(LiteralValue::Boolean(false.into())),
            Tok::Null => lit(LiteralValue::Null),
            Tok::P("(") => {
                self.bump();
                let e = self.expr()?;
                if !self.eat(")") {
                    return Err(self.error_here(format!("missing ')' at {}", self.shown())));
                }
                return Ok(e);
            }
            Tok::P("[") => {
                self.bump();
                return self.list();
            }
            Tok::P("{") => {
                self.bump();
                return self.map();
            }
            Tok::P(".") | Tok::Ident(_) => return self.name(),
            _ => Err(self.error_here(format!("mismatched input {} expecting {{{EXPR_START}}}", self.shown()))),
        };
        let expr = expr?;
        self.bump();
        Ok(self.node(expr))
    }

    /// An identifier, a global call or macro, or a message `a.b.C{field: value}`.
    fn name(&mut self) -> Parsed {
        let dot = self.eat(".");
        let Tok::Ident(first) = self.peek().clone() else {
            return Err(self.error_here(format!("mismatched input {} expecting IDENTIFIER", self.shown())));
        };
        let first_at = self.tokens[self.pos].start;
        // A message name is a dotted path followed by `{`.
        let mut k = 1;
        while matches!(self.peek_at(k), Tok::P(".")) && matches!(self.peek_at(k + 1), Tok::Ident(_)) {
            k += 2;
        }
        if matches!(self.peek_at(k), Tok::P("{")) {
            let mut name = if dot { ".".to_string() } else { String::new() };
            for _ in 0..k {
                match &self.bump().tok {
                    Tok::Ident(s) => name.push_str(s),
                    _ => name.push('.'),
                }
            }
            self.bump();
            return self.message(name);
        }
        if RESERVED.contains(&first.as_str()) {
            return Err(Error { at: first_at, msg: format!("reserved identifier: {first}") });
        }
        self.bump();
        // `.a` names `a` in the root scope: the only scope there is here.
        if self.eat("(") {
            let args = self.args(")")?;
            return self.call_or_macro(first_at, &first, None, args);
        }
        Ok(self.node(Expr::Ident(first)))
    }

    fn list(&mut self) -> Parsed {
        let (mut elements, mut optional_indices) = (Vec::new(), Vec::new());
        while !self.at("]") {
            if self.eat("?") {
                optional_indices.push(elements.len());
            }
            elements.push(self.expr()?);
            if !self.eat(",") {
                break;
            }
        }
        self.expect("]", "{']', ','}")?;
        Ok(self.node(Expr::List(ListExpr { elements, optional_indices })))
    }

    fn map(&mut self) -> Parsed {
        let mut entries = Vec::new();
        while !self.at("}") {
            let optional = self.eat("?");
            let key = self.expr()?;
            self.expect(":", "':'")?;
            let id = self.id();
            let value = self.expr()?;
            entries.push(IdedEntryExpr { id, expr: EntryExpr::MapEntry(MapEntryExpr { key, value, optional }) });
            if !self.eat(",") {
                break;
            }
        }
        self.expect("}", "{'}', ','}")?;
        Ok(self.node(Expr::Map(MapExpr { entries })))
    }

    fn message(&mut self, type_name: String) -> Parsed {
        let mut entries = Vec::new();
        while !self.at("}") {
            let optional = self.eat("?");
            let field = match self.peek().clone() {
                Tok::Ident(s) | Tok::Escaped(s) => s,
                _ => return Err(self.error_here(format!("mismatched input {} expecting {{'}}', ',', '?', IDENTIFIER, ESC_IDENTIFIER}}", self.shown()))),
            };
            self.bump();
            self.expect(":", "':'")?;
            let id = self.id();
            let value = self.expr()?;
            entries.push(IdedEntryExpr { id, expr: EntryExpr::StructField(StructFieldExpr { field, value, optional }) });
            if !self.eat(",") {
                break;
            }
        }
        self.expect("}", "{'}', ','}")?;
        Ok(self.node(Expr::Struct(StructExpr { type_name, entries })))
    }

    /// A call, or the macro it names (cel-go's standard macros, expanded here).
    fn call_or_macro(&mut self, at: usize, func: &str, target: Option<IdedExpr>, mut args: Vec<IdedExpr>) -> Parsed {
        let n = args.len();
        let Some(range) = target else {
            if func == op::HAS && n == 1 {
                return match args.pop().map(|a| a.expr) {
                    Some(Expr::Select(mut s)) => {
                        s.test = true;
                        Ok(self.node(Expr::Select(s)))
                    }
                    _ => Err(Error { at, msg: "invalid argument to has() macro".into() }),
                };
            }
            return Ok(self.call(func, None, args));
        };
        let is_macro = matches!((func, n), ("all" | "exists" | "exists_one" | "existsOne" | "filter", 2) | ("map", 2 | 3));
        if !is_macro {
            return Ok(self.call(func, Some(range), args));
        }
        let var = match args.remove(0).expr {
            Expr::Ident(v) => v,
            _ => return Err(Error { at, msg: "argument must be a simple name".into() }),
        };
        const ACC: &str = "@result";
        let acc = |p: &mut Self| p.node(Expr::Ident(ACC.to_string()));
        let lit = |p: &mut Self, v: LiteralValue| p.node(Expr::Literal(v));
        let (init, cond, step, result) = match func {
            "all" | "exists" => {
                let all = func == "all";
                let init = lit(self, LiteralValue::Boolean(all.into()));
                let a = acc(self);
                let a = if all { a } else { self.call(op::LOGICAL_NOT, None, vec![a]) };
                let cond = self.call(op::NOT_STRICTLY_FALSE, None, vec![a]);
                let a = acc(self);
                let step = self.call(if all { op::LOGICAL_AND } else { op::LOGICAL_OR }, None, vec![a, args.remove(0)]);
                (init, cond, step, acc(self))
            }
            "exists_one" | "existsOne" => {
                let init = lit(self, LiteralValue::Int(0.into()));
                let cond = lit(self, LiteralValue::Boolean(true.into()));
                let (a, one) = (acc(self), lit(self, LiteralValue::Int(1.into())));
                let plus = self.call(op::ADD, None, vec![a, one]);
                let a = acc(self);
                let step = self.call(op::CONDITIONAL, None, vec![args.remove(0), plus, a]);
                let (a, one) = (acc(self), lit(self, LiteralValue::Int(1.into())));
                let result = self.call(op::EQUALS, None, vec![a, one]);
                (init, cond, step, result)
            }
            _ => {
                // map(x, f), map(x, p, f) and filter(x, p).
                let (filter, value) = match (func, args.len()) {
                    ("filter", _) => {
                        let v = self.node(Expr::Ident(var.clone()));
                        (Some(args.remove(0)), v)
                    }
                    (_, 2) => {
                        let p = args.remove(0);
                        (Some(p), args.remove(0))
                    }
                    _ => (None, args.remove(0)),
                };
                let init = self.node(Expr::List(ListExpr { elements: vec![], optional_indices: vec![] }));
                let cond = lit(self, LiteralValue::Boolean(true.into()));
                let a = acc(self);
                let one = self.node(Expr::List(ListExpr { elements: vec![value], optional_indices: vec![] }));
                let mut step = self.call(op::ADD, None, vec![a, one]);
                if let Some(p) = filter {
                    let a = acc(self);
                    step = self.call(op::CONDITIONAL, None, vec![p, step, a]);
                }
                (init, cond, step, acc(self))
            }
        };
        Ok(self.node(Expr::Comprehension(Box::new(ComprehensionExpr {
            iter_range: range,
            iter_var: var,
            iter_var2: None,
            accu_var: ACC.to_string(),
            accu_init: init,
            loop_cond: cond,
            loop_step: step,
            result,
        }))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_cel::cel::Program;

    /// The tree without its ids (the two parsers number nodes in different orders).
    fn strip(e: &mut IdedExpr) {
        e.id = 0;
        match &mut e.expr {
            Expr::Call(c) => {
                c.target.iter_mut().for_each(|t| strip(t));
                c.args.iter_mut().for_each(strip);
            }
            Expr::Select(s) => strip(&mut s.operand),
            Expr::List(l) => l.elements.iter_mut().for_each(strip),
            Expr::Map(m) => m.entries.iter_mut().for_each(|x| {
                x.id = 0;
                if let EntryExpr::MapEntry(me) = &mut x.expr {
                    strip(&mut me.key);
                    strip(&mut me.value);
                }
            }),
            Expr::Struct(st) => st.entries.iter_mut().for_each(|x| {
                x.id = 0;
                if let EntryExpr::StructField(f) = &mut x.expr {
                    strip(&mut f.value);
                }
            }),
            Expr::Comprehension(c) => {
                for x in [&mut c.iter_range, &mut c.accu_init, &mut c.loop_cond, &mut c.loop_step, &mut c.result] {
                    strip(x);
                }
            }
            _ => {}
        }
    }

    fn ours(src: &str) -> IdedExpr {
        let mut e = parse(src).unwrap_or_else(|err| panic!("{src}: {err}"));
        strip(&mut e);
        e
    }

    /// Every form of the grammar gives the tree `cel`'s ANTLR parser gives.
    #[test]
    fn the_tree_is_the_one_the_antlr_grammar_gives() {
        let corpus = [
            "object.spec.replicas <= 5",
            "object.spec.replicas <= params.maxReplicas",
            "'object.spec.replicas must be no greater than ' + string(params.maxReplicas)",
            "object.spec.template.spec.containers.all(c, !c.image.endsWith(':latest'))",
            "object.spec.template.spec.containers.all(c, c.image.startsWith('registry.example/') && c.image.contains('@sha256:'))",
            "!(\"system:nodes\" in request.userInfo.groups)",
            "!(request.resource.group == \"coordination.k8s.io\" && request.resource.resource == \"leases\")",
            "request.resource.group != \"rbac.authorization.k8s.io\"",
            "a || b || c || d || e",
            "a && b && c",
            "a || b && c || d",
            "a ? b : c ? d : e",
            "(a ? b : c) + 1",
            "1 + 2 * 3 - 4 / 5 % 6",
            "a < b == c > d",
            "a <= b != c >= d",
            "x in [1, 2, 3]",
            "[1, 2, 3,]",
            "[]",
            "{}",
            "{'a': 1, 'b': [true, false, null],}",
            "{1: 'x', 2u: 'y'}",
            "a.b.c.d",
            "a[0][1]['k']",
            "a.b(c, d).e(f)",
            "size(a) > 0 && a.size() < 10",
            "f()",
            "a.f()",
            ".a",
            "has(a.b)",
            "has(a.b.c)",
            "l.exists(x, x > 1)",
            "l.exists_one(x, x > 1)",
            "l.map(x, x * 2)",
            "l.map(x, x > 1, x * 2)",
            "l.filter(x, x % 2 == 0)",
            "l.all(x, l.all(y, x != y))",
            "m.all(k, m[k] > 0)",
            "1",
            "1u",
            "0x1F",
            "0x1Fu",
            "1.5",
            "1e3",
            "1.5e-3",
            ".5",
            "-1",
            "-1.5",
            "- 1",
            "9223372036854775807",
            "-9223372036854775808",
            "18446744073709551615u",
            "'a'",
            "\"a\"",
            "'''a\nb'''",
            "r'\\d+'",
            "R\"\\w\"",
            "'\\n\\t\\r\\\\\\'\\a\\b\\f\\v\\?\\`'",
            "\"\\\"\"",
            "'\\x41\\101\\u00e9\\U0001F600'",
            "b'abc'",
            "b'\\xff\\000'",
            "'héllo'",
            "true",
            "false",
            "null",
            "-x",
            "!x",
            "!(x)",
            "-a.b",
            "a // comment\n + b",
            "quantity('1Gi').isGreaterThan(quantity('1Mi'))",
            "object.metadata.labels.all(k, k.matches('^[a-z]+$'))",
            "type(x) == int",
            "timestamp('2024-01-01T00:00:00Z') + duration('1h')",
            "a.b.C{x: 1, y: 'z'}",
            "Msg{}",
            "a + b + c + d",
            "(((a)))",
            "[[1], [2, [3]]]",
            "x.matches('^a.c$') || !x.startsWith('b')",
        ];
        for src in corpus {
            let mut theirs = Program::compile(src).unwrap_or_else(|e| panic!("{src}: {e}")).expression().clone();
            strip(&mut theirs);
            assert_eq!(ours(src), theirs, "{src}");
        }
    }

    /// Where `cel`'s parser strays from cel-go's, this one follows cel-go.
    #[test]
    fn where_cel_rust_strays_cel_go_is_followed() {
        // An even number of `!` or `-` cancels out.
        assert_eq!(ours("!!x"), ours("x"));
        assert_eq!(ours("--x"), ours("x"));
        assert_eq!(ours("!!!x"), ours("!x"));
        // `\"` is an escape in a single-quoted string too.
        assert_eq!(ours("'\\\"'").expr, Expr::Literal(LiteralValue::String("\"".to_string().into())));
        // Raw bytes keep their backslashes.
        assert_eq!(ours("br'\\x'").expr, Expr::Literal(LiteralValue::Bytes(b"\\x".to_vec().into())));
        // A triple-quoted string may hold its quote character.
        assert_eq!(ours("\"\"\"x\"y\"\"\"").expr, Expr::Literal(LiteralValue::String("x\"y".to_string().into())));
        // `.f()` is `f()` from the root scope.
        assert_eq!(ours(".f(1)"), ours("f(1)"));
        // A backquoted field is selected by its name, without the quotes.
        let Expr::Select(s) = ours("a.`b-c`").expr else { panic!("not a select") };
        assert_eq!(s.field, "b-c");
        // Reserved words are not identifiers.
        assert!(parse("for").unwrap_err().contains("reserved identifier: for"));
        assert!(parse("if(x)").unwrap_err().contains("reserved identifier: if"));
        // The optional syntax, as Kubernetes enables it.
        for (src, func) in [("a.?b", op::OPT_SELECT), ("a[?0]", op::OPT_INDEX)] {
            let Expr::Call(c) = ours(src).expr else { panic!("{src}") };
            assert_eq!(c.func_name, func);
        }
        let Expr::List(l) = ours("[1, ?x]").expr else { panic!("not a list") };
        assert_eq!(l.optional_indices, vec![1]);
        let Expr::Map(m) = ours("{?'k': x}").expr else { panic!("not a map") };
        assert!(matches!(&m.entries[0].expr, EntryExpr::MapEntry(e) if e.optional));
    }

    /// Errors say where, as cel-go's do, with ANTLR's words for the common mistakes.
    #[test]
    fn errors_point_at_the_mistake() {
        let expr_start = format!("{{{EXPR_START}}}");
        for (src, want) in [
            ("object.spec.", "ERROR: <input>:1:13: Syntax error: no viable alternative at input '.'\n| object.spec.\n| ............^".to_string()),
            ("a +", format!("ERROR: <input>:1:4: Syntax error: mismatched input '<EOF>' expecting {expr_start}\n| a +\n| ...^")),
            ("(a", "ERROR: <input>:1:3: Syntax error: missing ')' at '<EOF>'\n| (a\n| ..^".to_string()),
            ("a b", "ERROR: <input>:1:3: Syntax error: extraneous input 'b' expecting <EOF>\n| a b\n| ..^".to_string()),
            ("[1, 2", "ERROR: <input>:1:6: Syntax error: mismatched input '<EOF>' expecting {']', ','}\n| [1, 2\n| .....^".to_string()),
            ("{'a': 1", "ERROR: <input>:1:8: Syntax error: mismatched input '<EOF>' expecting {'}', ','}\n| {'a': 1\n| .......^".to_string()),
            ("f(a,)", format!("ERROR: <input>:1:5: Syntax error: mismatched input ')' expecting {expr_start}\n| f(a,)\n| ....^")),
            ("a)", "ERROR: <input>:1:2: Syntax error: extraneous input ')' expecting <EOF>\n| a)\n| .^".to_string()),
            ("@", "ERROR: <input>:1:1: Syntax error: token recognition error at: '@'\n| @\n| ^".to_string()),
            ("x == = 1", "ERROR: <input>:1:6: Syntax error: token recognition error at: '= '\n| x == = 1\n| .....^".to_string()),
            ("9223372036854775808", "ERROR: <input>:1:1: invalid int literal\n| 9223372036854775808\n| ^".to_string()),
            ("a.all(1, true)", "ERROR: <input>:1:3: argument must be a simple name\n| a.all(1, true)\n| ..^".to_string()),
            ("has(a)", "ERROR: <input>:1:1: invalid argument to has() macro\n| has(a)\n| ^".to_string()),
            ("a &&\n  b +", format!("ERROR: <input>:2:6: Syntax error: mismatched input '<EOF>' expecting {expr_start}\n|   b +\n| .....^")),
        ] {
            assert_eq!(parse(src).unwrap_err(), want, "{src}");
        }
        let a_b = "a.b(";
        assert!(parse(a_b).unwrap_err().contains("expecting {'[', '{', '(', ')', '.', '-'"), "{}", parse(a_b).unwrap_err());
        assert!(parse("'abc").unwrap_err().contains("token recognition error at: ''abc'"));
        assert!(parse("'\\q'").unwrap_err().contains("token recognition error"));
    }

    /// Hostile input: deep nesting and long chains stop at cel-go's limits, never the
    /// stack. (Run with the native main thread's 8 MiB: a debug build's frames are several
    /// times a release build's, and the test threads' default 2 MiB is smaller still.)
    #[test]
    fn nesting_past_the_limit_is_refused() {
        let run = || {
            for src in [format!("{}a", "(".repeat(10_000)), "[".repeat(10_000), "-(".repeat(5_000), "f(".repeat(10_000), "{1:".repeat(10_000)] {
                assert!(parse(&src).unwrap_err().contains("expression recursion limit exceeded: 250"), "{}", &src[..20]);
            }
            for src in [format!("a{}", "+a".repeat(10_000)), format!("a{}", ".b".repeat(10_000)), format!("a{}", "[0]".repeat(10_000))] {
                assert!(parse(&src).unwrap_err().contains("max recursion depth exceeded"), "{}", &src[..20]);
            }
            assert!(parse(&format!("{}a{}", "(".repeat(240), ")".repeat(240))).is_ok());
            assert!(parse(&format!("a{}", "+a".repeat(200))).is_ok());
            assert!(parse(&"!".repeat(10_000)).is_err());
            assert!(parse(&"x".repeat(100_001)).unwrap_err().contains("code point size exceeds limit"));
        };
        std::thread::Builder::new().stack_size(8 << 20).spawn(run).unwrap().join().unwrap();
    }
}
