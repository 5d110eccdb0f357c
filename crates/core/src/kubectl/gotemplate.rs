//! `-o go-template=TEMPLATE` (`k8s.io/cli-runtime/pkg/printers/template.go`): Go's
//! `text/template` over the object as `encoding/json` decodes it into `interface{}` (every
//! number a float64, which `{{.spec.replicas}}` prints as Go prints a float64: `3`, but
//! `1e+06` for a million), with kubectl's two extra functions, `exists` and
//! `base64decode`. Actions, pipelines, variables, `if`/`else if`/`else`, `range` (with
//! `else`), `with`, comments, `{{-`/`-}}` trimming, and the built-in functions: `and`,
//! `or`, `not`, `len`, `index`, `print`, `printf`, `println`, `eq`, `ne`, `lt`, `le`, `gt`,
//! `ge`, `html`, `js`, `urlquery`.

use crate::foundation::sort::Sort;
use crate::foundation::value::{Map, Value};

/// Render `template` over `data`, or kubectl's parse or execution error.
pub fn render(template: &str, data: &Value) -> Result<String, Error> {
    let nodes = parse(template).map_err(Error::Parse)?;
    let mut ex = Exec { out: String::new(), vars: vec![("$".to_string(), G::V(data.clone()))] };
    ex.list(&nodes, &G::V(data.clone())).map_err(Error::Exec)?;
    Ok(ex.out)
}

#[derive(Debug, PartialEq)]
pub enum Error {
    /// `template: output:LINE: MESSAGE`.
    Parse(String),
    /// `template: output:LINE:COL: executing "output" at <...>: MESSAGE`, and what the
    /// template had written before it.
    Exec(String),
}

/// A value as the template engine holds it: a decoded JSON value (numbers are float64),
/// a Go int (`len`, range indices), or nothing (a missing map key: `<no value>`).
#[derive(Clone, Debug)]
enum G {
    Missing,
    Int(i64),
    V(Value),
}

enum Node {
    Text(String),
    Action(Pipe),
    If(Vec<(Pipe, Vec<Node>)>, Vec<Node>),
    Range(Pipe, Vec<Node>, Vec<Node>),
    With(Pipe, Vec<Node>, Vec<Node>),
}

struct Pipe {
    /// `$x :=` (or `$i, $e :=` in a range), or `$x =`.
    vars: Vec<String>,
    assign: bool,
    cmds: Vec<Cmd>,
    line: usize,
}

/// Where a node is, as Go's errors name it: its column (from 0, counted from the line's
/// start) and its text (`<.spec.x>`, `<gt .a 1>`).
#[derive(Clone)]
struct At {
    col: usize,
    text: String,
}

struct Cmd {
    args: Vec<Arg>,
    at: At,
}

enum Arg {
    /// `.a.b` (empty: the dot itself).
    Field(Vec<String>, At),
    /// `$x.a.b`.
    Var(String, Vec<String>, At),
    Str(String),
    Num(f64, bool),
    Bool(bool),
    Nil,
    Func(String),
    /// `(pipeline).a.b`.
    Sub(Pipe, Vec<String>),
}

// ---- lexing and parsing ----

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Field(Vec<String>),
    Var(String, Vec<String>),
    Str(String),
    Num(f64, bool),
    Ident(String),
    LParen,
    RParen,
    Pipe,
    Declare,
    Assign,
    Comma,
}

/// The template in pieces: text, and each action's tokens with its line and source.
enum Piece {
    Text(String),
    /// Tokens, their spans (start, end, and where Go places the node), the line, the
    /// action's text and the column its text starts at.
    Action(Vec<Tok>, Vec<Span>, usize, String, usize),
}

/// A token's first and past-last character in its action, and the position Go gives the
/// node (for `.a.b.c`, where `.b` starts).
type Span = (usize, usize, usize);

fn pieces(src: &str) -> Result<Vec<Piece>, String> {
    let mut out = Vec::new();
    let mut rest = src;
    let mut line = 1;
    while let Some(open) = rest.find("{{") {
        let mut text = rest[..open].to_string();
        let after = &rest[open + 2..];
        let trim_left = after.starts_with("- ") || after.starts_with("-\t") || after.starts_with("-\n") || after.starts_with("-\r");
        if trim_left {
            text = text.trim_end().to_string();
        }
        line += rest[..open].matches('\n').count();
        out.push(Piece::Text(text));
        let body_start = if trim_left { 1 } else { 0 };
        let body = &after[body_start..];
        let close = find_close(body).ok_or_else(|| format!("template: output:{line}: unclosed action"))?;
        let mut inner = &body[..close];
        let mut next = &body[close + 2..];
        let trim_right = inner.ends_with(" -") || inner.ends_with("\t-") || inner.ends_with("\n-") || inner.ends_with("\r-");
        if trim_right {
            inner = &inner[..inner.len() - 1];
            next = next.trim_start();
        }
        let trimmed = inner.trim();
        let offset = src.len() - body.len();
        let col = src[..offset].chars().count() - src[..offset].rfind('\n').map_or(0, |n| src[..=n].chars().count());
        if trimmed.starts_with("/*") {
            if !trimmed.ends_with("*/") {
                return Err(format!("template: output:{line}: unclosed comment"));
            }
        } else {
            let (toks, spans) = lex(inner, line)?;
            out.push(Piece::Action(toks, spans, line, inner.to_string(), col));
        }
        line += inner.matches('\n').count();
        rest = next;
    }
    out.push(Piece::Text(rest.to_string()));
    Ok(out)
}

/// Where the action's `}}` is, past any string that holds one.
fn find_close(body: &str) -> Option<usize> {
    let b = body.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'`' => {
                i += 1;
                while i < b.len() && b[i] != b'`' {
                    i += 1;
                }
            }
            b'}' if b.get(i + 1) == Some(&b'}') => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

fn lex(s: &str, line: usize) -> Result<(Vec<Tok>, Vec<Span>), String> {
    let err = |m: String| format!("template: output:{line}: {m}");
    let c: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    let mut spans: Vec<Span> = Vec::new();
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let path = |c: &[char], i: &mut usize| {
        let mut parts = Vec::new();
        while *i < c.len() && c[*i] == '.' {
            *i += 1;
            let start = *i;
            while *i < c.len() && ident(c[*i]) {
                *i += 1;
            }
            if *i > start {
                parts.push(c[start..*i].iter().collect::<String>());
            } else if !parts.is_empty() {
                break;
            }
        }
        parts
    };
    while i < c.len() {
        let ch = c[i];
        let start = i;
        let before = out.len();
        match ch {
            ' ' | '\t' | '\n' | '\r' => i += 1,
            '(' => {
                out.push(Tok::LParen);
                i += 1;
            }
            ')' => {
                out.push(Tok::RParen);
                i += 1;
                if i < c.len() && c[i] == '.' {
                    let p = path(&c, &mut i);
                    out.push(Tok::Field(p));
                }
            }
            '|' => {
                out.push(Tok::Pipe);
                i += 1;
            }
            ',' => {
                out.push(Tok::Comma);
                i += 1;
            }
            ':' if c.get(i + 1) == Some(&'=') => {
                out.push(Tok::Declare);
                i += 2;
            }
            '=' => {
                out.push(Tok::Assign);
                i += 1;
            }
            '.' => {
                if c.get(i + 1).is_some_and(|d| d.is_ascii_digit()) {
                    let (n, len) = number(&c[i..]).ok_or_else(|| err("bad number syntax".into()))?;
                    out.push(Tok::Num(n, false));
                    i += len;
                } else {
                    let p = path(&c, &mut i);
                    out.push(Tok::Field(p));
                }
            }
            '$' => {
                i += 1;
                let from = i;
                while i < c.len() && ident(c[i]) {
                    i += 1;
                }
                let name: String = std::iter::once('$').chain(c[from..i].iter().copied()).collect();
                let p = if i < c.len() && c[i] == '.' { path(&c, &mut i) } else { vec![] };
                out.push(Tok::Var(name, p));
            }
            '"' => {
                i += 1;
                let mut v = String::new();
                loop {
                    let Some(&d) = c.get(i) else { return Err(err("unterminated quoted string".into())) };
                    i += 1;
                    match d {
                        '"' => break,
                        '\n' => return Err(err("unterminated quoted string".into())),
                        '\\' => {
                            let e = c.get(i).copied().ok_or_else(|| err("unterminated quoted string".into()))?;
                            i += 1;
                            v.push(match e {
                                'n' => '\n',
                                't' => '\t',
                                'r' => '\r',
                                '\\' => '\\',
                                '"' => '"',
                                '\'' => '\'',
                                '0' => '\0',
                                other => return Err(err(format!("invalid syntax: \\{other}"))),
                            });
                        }
                        d => v.push(d),
                    }
                }
                out.push(Tok::Str(v));
            }
            '`' => {
                i += 1;
                let from = i;
                while i < c.len() && c[i] != '`' {
                    i += 1;
                }
                if i >= c.len() {
                    return Err(err("unterminated raw quoted string".into()));
                }
                out.push(Tok::Str(c[from..i].iter().collect()));
                i += 1;
            }
            d if d.is_ascii_digit() || ((d == '-' || d == '+') && c.get(i + 1).is_some_and(|x| x.is_ascii_digit() || *x == '.')) => {
                let (n, len) = number(&c[i..]).ok_or_else(|| err("bad number syntax".into()))?;
                let int = !c[i..i + len].iter().any(|x| matches!(x, '.' | 'e' | 'E'));
                out.push(Tok::Num(n, int));
                i += len;
            }
            d if ident(d) => {
                while i < c.len() && ident(c[i]) {
                    i += 1;
                }
                out.push(Tok::Ident(c[start..i].iter().collect()));
            }
            other => return Err(err(format!("unexpected {other:?} in command"))),
        }
        // One span per token (`)` may have pushed a field after itself).
        while spans.len() < out.len() {
            let k = spans.len();
            // A field right after `)` starts after it.
            let from = if k > before { start + 1 } else { start };
            let node = match &out[k] {
                Tok::Field(p) if p.len() > 1 => from + 1 + p[0].chars().count(),
                Tok::Var(n, p) if !p.is_empty() => from + n.chars().count(),
                _ => from,
            };
            spans.push((from, i, node));
        }
    }
    Ok((out, spans))
}

fn number(c: &[char]) -> Option<(f64, usize)> {
    let mut len = 0;
    while len < c.len() && (c[len].is_ascii_alphanumeric() || matches!(c[len], '.' | '+' | '-' | '_')) {
        if len > 0 && matches!(c[len], '+' | '-') && !matches!(c[len - 1], 'e' | 'E') {
            break;
        }
        len += 1;
    }
    let text: String = c[..len].iter().filter(|x| **x != '_').collect();
    let v = if let Some(hex) = text.strip_prefix("0x") { i64::from_str_radix(hex, 16).ok().map(|n| n as f64) } else { text.parse::<f64>().ok() };
    v.map(|v| (v, len))
}

fn parse(src: &str) -> Result<Vec<Node>, String> {
    let ps = pieces(src)?;
    let mut i = 0;
    let (nodes, end) = parse_list(&ps, &mut i)?;
    match end {
        None => Ok(nodes),
        Some((word, line)) => Err(format!("template: output:{line}: unexpected {{{{{word}}}}}")),
    }
}

/// Nodes up to an `{{end}}` or `{{else ...}}` (returned with its line), or the end.
type Ended = Option<(String, usize)>;

fn parse_list(ps: &[Piece], i: &mut usize) -> Result<(Vec<Node>, Ended), String> {
    let mut out = Vec::new();
    while *i < ps.len() {
        let p = &ps[*i];
        *i += 1;
        match p {
            Piece::Text(t) => {
                if !t.is_empty() {
                    out.push(Node::Text(t.clone()));
                }
            }
            Piece::Action(toks, spans, line, text, col) => {
                let (line, src) = (*line, Src { text: text.chars().collect(), col: *col });
                let text = &text.trim().to_string();
                match toks.first() {
                    Some(Tok::Ident(w)) if w == "end" => return Ok((out, Some(("end".into(), line)))),
                    Some(Tok::Ident(w)) if w == "else" => {
                        // `else if ...` keeps its condition's tokens.
                        return Ok((out, Some((text.clone(), line))));
                    }
                    Some(Tok::Ident(w)) if matches!(w.as_str(), "if" | "range" | "with") => {
                        let word = w.clone();
                        let pipe = parse_pipe(&toks[1..], &spans[1..], &src, line, word == "range")?;
                        out.push(parse_control(ps, i, &word, pipe, line)?);
                    }
                    Some(Tok::Ident(w)) if matches!(w.as_str(), "define" | "template" | "block" | "break" | "continue") => {
                        return Err(format!("template: output:{line}: kubeloop's go-template does not run {{{{{w}}}}}"));
                    }
                    None => return Err(format!("template: output:{line}: missing value for command")),
                    _ => out.push(Node::Action(parse_pipe(toks, spans, &src, line, false)?)),
                }
            }
        }
    }
    Ok((out, None))
}

fn parse_control(ps: &[Piece], i: &mut usize, word: &str, pipe: Pipe, line: usize) -> Result<Node, String> {
    let (body, end) = parse_list(ps, i)?;
    let Some((end, end_line)) = end else { return Err(format!("template: output:{line}: unexpected EOF")) };
    let mut else_body = Vec::new();
    let mut branches = vec![(pipe, body)];
    if end != "end" {
        let rest = end.trim_start_matches("else").trim();
        if word == "if" && rest.starts_with("if ") {
            // `{{else if X}}`: a nested if that shares this one's end.
            let (toks, spans) = lex(rest, end_line)?;
            let src = Src { text: rest.chars().collect(), col: 0 };
            let p = parse_pipe(&toks[1..], &spans[1..], &src, end_line, false)?;
            match parse_control(ps, i, "if", p, end_line)? {
                Node::If(more, e) => {
                    branches.extend(more);
                    else_body = e;
                }
                _ => unreachable!("an if parses to an if"),
            }
            return Ok(Node::If(branches, else_body));
        }
        if !rest.is_empty() {
            return Err(format!("template: output:{end_line}: unexpected {rest:?} in else"));
        }
        let (e, end2) = parse_list(ps, i)?;
        match end2 {
            Some((w, _)) if w == "end" => else_body = e,
            Some((_, l)) => return Err(format!("template: output:{l}: expected end; found {{{{else}}}}")),
            None => return Err(format!("template: output:{line}: unexpected EOF")),
        }
    }
    let (pipe, body) = branches.pop().expect("one branch");
    Ok(match word {
        "if" => Node::If(vec![(pipe, body)], else_body),
        "range" => Node::Range(pipe, body, else_body),
        _ => Node::With(pipe, body, else_body),
    })
}

/// An action's characters and the column they start at.
struct Src {
    text: Vec<char>,
    col: usize,
}

impl Src {
    /// A command: from its first token.
    fn at(&self, spans: &[Span]) -> At {
        let (Some(first), Some(last)) = (spans.first(), spans.last()) else { return At { col: self.col, text: String::new() } };
        At { col: self.col + first.0, text: self.text[first.0..last.1.min(self.text.len())].iter().collect() }
    }
    /// One operand, where Go places it.
    fn node(&self, span: Span) -> At {
        At { col: self.col + span.2, text: self.text[span.0..span.1.min(self.text.len())].iter().collect() }
    }
}

fn parse_pipe(toks: &[Tok], spans: &[Span], src: &Src, line: usize, range: bool) -> Result<Pipe, String> {
    let err = |m: &str| format!("template: output:{line}: {m}");
    let mut vars = Vec::new();
    let mut assign = false;
    let mut rest = toks;
    // `$x :=`, `$i, $e :=` (range only), `$x =`.
    let decl_at = toks.iter().position(|t| matches!(t, Tok::Declare | Tok::Assign));
    if let Some(d) = decl_at {
        let names = &toks[..d];
        let ok = names.iter().enumerate().all(|(k, t)| if k % 2 == 0 { matches!(t, Tok::Var(_, p) if p.is_empty()) } else { *t == Tok::Comma });
        if ok && !names.is_empty() {
            vars = names.iter().filter_map(|t| if let Tok::Var(n, _) = t { Some(n.clone()) } else { None }).collect();
            if vars.len() > if range { 2 } else { 1 } {
                return Err(err("too many declarations in command"));
            }
            assign = toks[d] == Tok::Assign;
            rest = &toks[d + 1..];
        }
    }
    let spans = &spans[toks.len() - rest.len()..];
    let mut cmds = Vec::new();
    let mut k = 0;
    let mut cmd = Vec::new();
    let mut cmd_start = 0;
    while k < rest.len() {
        match &rest[k] {
            Tok::Pipe => {
                if cmd.is_empty() {
                    return Err(err("missing command"));
                }
                cmds.push(Cmd { args: std::mem::take(&mut cmd), at: src.at(&spans[cmd_start..k]) });
                cmd_start = k + 1;
            }
            Tok::LParen => {
                let mut depth = 1;
                let start = k + 1;
                while depth > 0 {
                    k += 1;
                    match rest.get(k) {
                        Some(Tok::LParen) => depth += 1,
                        Some(Tok::RParen) => depth -= 1,
                        Some(_) => {}
                        None => return Err(err("unclosed left paren")),
                    }
                }
                let inner = parse_pipe(&rest[start..k], &spans[start..k], src, line, false)?;
                let fields = match rest.get(k + 1) {
                    Some(Tok::Field(p)) => {
                        k += 1;
                        p.clone()
                    }
                    _ => vec![],
                };
                cmd.push(Arg::Sub(inner, fields));
            }
            Tok::RParen => return Err(err("unexpected right paren")),
            Tok::Field(p) => cmd.push(Arg::Field(p.clone(), src.node(spans[k]))),
            Tok::Var(n, p) => cmd.push(Arg::Var(n.clone(), p.clone(), src.node(spans[k]))),
            Tok::Str(s) => cmd.push(Arg::Str(s.clone())),
            Tok::Num(n, int) => cmd.push(Arg::Num(*n, *int)),
            Tok::Ident(w) => cmd.push(match w.as_str() {
                "true" => Arg::Bool(true),
                "false" => Arg::Bool(false),
                "nil" => Arg::Nil,
                f if FUNCS.contains(&f) => Arg::Func(f.to_string()),
                f => return Err(err(&format!("function {f:?} not defined"))),
            }),
            Tok::Declare | Tok::Assign | Tok::Comma => return Err(err("unexpected token in operand")),
        }
        k += 1;
    }
    if cmd.is_empty() {
        return Err(err(if cmds.is_empty() { "missing value for command" } else { "missing command" }));
    }
    cmds.push(Cmd { args: cmd, at: src.at(&spans[cmd_start..]) });
    Ok(Pipe { vars, assign, cmds, line })
}

const FUNCS: &[&str] =
    &["and", "or", "not", "len", "index", "print", "printf", "println", "eq", "ne", "lt", "le", "gt", "ge", "html", "js", "urlquery", "exists", "base64decode"];

// ---- execution ----

struct Exec {
    out: String,
    vars: Vec<(String, G)>,
}

impl Exec {
    fn list(&mut self, nodes: &[Node], dot: &G) -> Result<(), String> {
        for n in nodes {
            match n {
                Node::Text(t) => self.out.push_str(t),
                Node::Action(p) => {
                    let v = self.pipe(p, dot)?;
                    if p.vars.is_empty() {
                        self.out.push_str(&sprint(&v));
                    }
                }
                Node::If(branches, else_body) => {
                    let mark = self.vars.len();
                    let mut done = false;
                    for (p, body) in branches {
                        if truth(&self.pipe(p, dot)?) {
                            self.list(body, dot)?;
                            done = true;
                            break;
                        }
                    }
                    if !done {
                        self.list(else_body, dot)?;
                    }
                    self.vars.truncate(mark);
                }
                Node::With(p, body, else_body) => {
                    let mark = self.vars.len();
                    let v = self.pipe(p, dot)?;
                    if truth(&v) {
                        self.list(body, &v)?;
                    } else {
                        self.list(else_body, dot)?;
                    }
                    self.vars.truncate(mark);
                }
                Node::Range(p, body, else_body) => {
                    let mark = self.vars.len();
                    let v = self.pipe_value(p, dot)?;
                    let items: Vec<(G, G)> = match &v {
                        G::V(Value::Array(a)) => a.iter().enumerate().map(|(k, x)| (G::Int(k as i64), g(x))).collect(),
                        G::V(Value::Object(m)) => sorted(m).into_iter().map(|(k, x)| (G::V(Value::String(k.into())), g(&x))).collect(),
                        G::Int(n) => (0..*n).map(|k| (G::Int(k), G::Int(k))).collect(),
                        G::Missing | G::V(Value::Null) => vec![],
                        G::V(other) => return Err(self.at(p.line, &p.cmds[0].at, &format!("range can't iterate over {}", sprint(&G::V(other.clone()))))),
                    };
                    if items.is_empty() {
                        self.list(else_body, dot)?;
                    }
                    for (key, item) in items {
                        let inner = self.vars.len();
                        match p.vars.as_slice() {
                            [e] => self.vars.push((e.clone(), item.clone())),
                            [k, e] => {
                                self.vars.push((k.clone(), key));
                                self.vars.push((e.clone(), item.clone()));
                            }
                            _ => {}
                        }
                        self.list(body, &item)?;
                        self.vars.truncate(inner);
                    }
                    self.vars.truncate(mark);
                }
            }
        }
        Ok(())
    }

    fn at(&self, line: usize, at: &At, msg: &str) -> String {
        format!("template: output:{line}:{}: executing \"output\" at <{}>: {msg}", at.col, at.text)
    }

    /// A pipeline's value, without binding its variables (`range` binds them per element).
    fn pipe_value(&mut self, p: &Pipe, dot: &G) -> Result<G, String> {
        let mut last: Option<G> = None;
        for cmd in &p.cmds {
            last = Some(self.command(p.line, cmd, dot, last)?);
        }
        Ok(last.unwrap_or(G::Missing))
    }

    fn pipe(&mut self, p: &Pipe, dot: &G) -> Result<G, String> {
        let v = self.pipe_value(p, dot)?;
        if let Some(name) = p.vars.first() {
            if p.assign {
                match self.vars.iter_mut().rev().find(|(n, _)| n == name) {
                    Some(slot) => slot.1 = v.clone(),
                    None => return Err(format!("template: output:{}: undefined variable: {name}", p.line)),
                }
            } else if p.vars.len() == 1 {
                self.vars.push((name.clone(), v.clone()));
            }
        }
        Ok(v)
    }

    fn command(&mut self, line: usize, cmd: &Cmd, dot: &G, piped: Option<G>) -> Result<G, String> {
        let first = &cmd.args[0];
        if let Arg::Func(name) = first {
            let mut args = Vec::new();
            for a in &cmd.args[1..] {
                args.push(self.arg(line, &cmd.at, a, dot)?);
            }
            if let Some(v) = piped {
                args.push(v);
            }
            return call(name, &args).map_err(|m| self.at(line, &cmd.at, &format!("error calling {name}: {m}")));
        }
        if cmd.args.len() > 1 || piped.is_some() {
            return Err(self.at(line, &cmd.at, "can't give argument to non-function"));
        }
        self.arg(line, &cmd.at, first, dot)
    }

    fn arg(&mut self, line: usize, cmd: &At, a: &Arg, dot: &G) -> Result<G, String> {
        match a {
            Arg::Field(path, at) => self.field(line, at, dot.clone(), path),
            Arg::Var(name, path, at) => {
                let v = self.vars.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.clone());
                match v {
                    Some(v) => self.field(line, at, v, path),
                    None => Err(format!("template: output:{line}: undefined variable \"{name}\"")),
                }
            }
            Arg::Str(s) => Ok(G::V(Value::String(s.as_str().into()))),
            Arg::Num(n, true) => Ok(G::Int(*n as i64)),
            Arg::Num(n, false) => Ok(G::V(crate::json!(*n))),
            Arg::Bool(b) => Ok(G::V(Value::Bool(*b))),
            Arg::Nil => Err(self.at(line, cmd, "nil is not a command")),
            Arg::Func(f) => call(f, &[]).map_err(|m| self.at(line, cmd, &format!("error calling {f}: {m}"))),
            Arg::Sub(inner, path) => {
                let v = self.pipe(inner, dot)?;
                self.field(line, cmd, v, path)
            }
        }
    }

    fn field(&self, line: usize, at: &At, mut v: G, path: &[String]) -> Result<G, String> {
        for name in path {
            v = match v {
                G::V(Value::Object(m)) => m.get(name).map_or(G::Missing, g),
                // A missing key is an invalid value, and a field of it is too (`missingkey=default`);
                // a null is a nil interface, which has no fields.
                G::Missing => G::Missing,
                G::V(Value::Null) => return Err(self.at(line, at, &format!("nil pointer evaluating interface {{}}.{name}"))),
                // Every value below the object is an `interface{}` holding it.
                _ => return Err(self.at(line, at, &format!("can't evaluate field {name} in type interface {{}}"))),
            };
        }
        Ok(v)
    }
}

/// A value read from the object: integers are int64, as the decoded object holds them.
fn g(v: &Value) -> G {
    match v {
        Value::Number(_) if !v.is_f64() => v.as_i64().map_or_else(|| G::V(v.clone()), G::Int),
        _ => G::V(v.clone()),
    }
}

fn sorted(m: &Map) -> Vec<(String, Value)> {
    let mut v: Vec<(String, Value)> = m.iter().map(|(k, x)| (k.to_string(), x.clone())).collect();
    v.sort_stable_by(|a, b| a.0.cmp(&b.0));
    v
}

fn go_type(v: &G) -> &'static str {
    match v {
        G::Missing | G::V(Value::Null) => "interface {}",
        G::Int(_) => "int",
        G::V(Value::Bool(_)) => "bool",
        G::V(Value::Number(_)) => "float64",
        G::V(Value::String(_)) => "string",
        G::V(Value::Array(_)) => "[]interface {}",
        G::V(Value::Object(_)) => "map[string]interface {}",
    }
}

fn truth(v: &G) -> bool {
    match v {
        G::Missing => false,
        G::Int(n) => *n != 0,
        G::V(Value::Null) => false,
        G::V(Value::Bool(b)) => *b,
        G::V(Value::Number(_)) => v_f64(v) != 0.0,
        G::V(Value::String(s)) => !s.is_empty(),
        G::V(Value::Array(a)) => !a.is_empty(),
        G::V(Value::Object(m)) => m.iter().next().is_some(),
    }
}

fn v_f64(v: &G) -> f64 {
    match v {
        G::Int(n) => *n as f64,
        G::V(x) => x.as_f64().unwrap_or(0.0),
        G::Missing => 0.0,
    }
}

/// Go's `%v` of a float64, `strconv.FormatFloat(f, 'g', -1, 64)`: the shortest digits, in
/// exponent form when the exponent is below -4 or at least 6 (`1e+06`).
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // Rust's `{:e}` gives the shortest round-trip digits.
    let e = format!("{f:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let neg = f < 0.0;
    let body = if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        format!("{first}{frac}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    } else if exp < 0 {
        format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
    } else {
        let point = exp as usize + 1;
        if digits.len() <= point {
            format!("{digits}{}", "0".repeat(point - digits.len()))
        } else {
            format!("{}.{}", &digits[..point], &digits[point..])
        }
    };
    if neg {
        format!("-{body}")
    } else {
        body
    }
}

/// `fmt.Sprint` of one value, as the template prints an action's result.
fn sprint(v: &G) -> String {
    match v {
        G::Missing => "<no value>".into(),
        G::Int(n) => n.to_string(),
        G::V(x) => sprint_value(x),
    }
}

pub fn sprint_value(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(_) if !v.is_f64() => v.as_i64().map_or_else(|| go_float(v.as_f64().unwrap_or(0.0)), |n| n.to_string()),
        Value::Number(_) => go_float(v.as_f64().unwrap_or(0.0)),
        Value::String(s) => s.to_string(),
        Value::Array(a) => format!("[{}]", a.iter().map(sprint_value).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => format!("map[{}]", sorted(m).iter().map(|(k, x)| format!("{k}:{}", sprint_value(x))).collect::<Vec<_>>().join(" ")),
    }
}

/// `encoding/json`'s compact form: keys sorted, and `<`, `>`, `&` escaped for HTML.
pub fn go_json(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default().replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026")
}

fn is_string(v: &G) -> bool {
    matches!(v, G::V(Value::String(_)))
}

fn call(name: &str, args: &[G]) -> Result<G, String> {
    let s = |t: String| Ok(G::V(Value::String(t.into())));
    let want = |n: usize| if args.len() == n { Ok(()) } else { Err(format!("wrong number of args for {name}: want {n} got {}", args.len())) };
    match name {
        "and" | "or" => {
            if args.is_empty() {
                return Err(format!("wrong number of args for {name}: want at least 1 got 0"));
            }
            for a in args {
                if truth(a) != (name == "and") {
                    return Ok(a.clone());
                }
            }
            Ok(args[args.len() - 1].clone())
        }
        "not" => {
            want(1)?;
            Ok(G::V(Value::Bool(!truth(&args[0]))))
        }
        "len" => {
            want(1)?;
            match &args[0] {
                G::V(Value::String(t)) => Ok(G::Int(t.len() as i64)),
                G::V(Value::Array(a)) => Ok(G::Int(a.len() as i64)),
                G::V(Value::Object(m)) => Ok(G::Int(m.iter().count() as i64)),
                other => Err(format!("len of type {}", go_type(other))),
            }
        }
        "index" => {
            let Some((first, keys)) = args.split_first() else { return Err("wrong number of args for index: want at least 1 got 0".into()) };
            let mut v = first.clone();
            for k in keys {
                v = match (&v, k) {
                    (G::V(Value::Object(m)), G::V(Value::String(key))) => m.get(key).map_or(G::Missing, g),
                    (G::V(Value::Array(a)), G::Int(_) | G::V(Value::Number(_))) => {
                        let i = v_f64(k) as i64;
                        match a.get(i as usize).filter(|_| i >= 0) {
                            Some(x) => g(x),
                            None => return Err(format!("index out of range: {i}")),
                        }
                    }
                    (G::Missing | G::V(Value::Null), _) => return Err("index of untyped nil".into()),
                    (other, _) => return Err(format!("can't index item of type {}", go_type(other))),
                };
            }
            Ok(v)
        }
        "print" => s(go_sprint_args(args, false)),
        "println" => s(format!("{}\n", go_sprint_args(args, true))),
        "printf" => {
            let Some((G::V(Value::String(f)), rest)) = args.split_first() else {
                return Err("wrong type for value; expected string".into());
            };
            s(go_printf(f, rest))
        }
        "eq" | "ne" | "lt" | "le" | "gt" | "ge" => {
            if args.len() < 2 {
                return Err(format!("wrong number of args for {name}: want 2 got {}", args.len()));
            }
            let ord = |a: &G, b: &G| -> Result<std::cmp::Ordering, String> {
                match (a, b) {
                    (G::V(Value::String(x)), G::V(Value::String(y))) => Ok(x.as_str().cmp(y.as_str())),
                    (G::V(Value::Bool(x)), G::V(Value::Bool(y))) if matches!(name, "eq" | "ne") => Ok(x.cmp(y)),
                    (G::Int(x), G::Int(y)) => Ok(x.cmp(y)),
                    (G::V(Value::Number(_)), G::V(Value::Number(_))) => Ok(v_f64(a).total_cmp(&v_f64(b))),
                    (G::Missing, _) | (_, G::Missing) => Err("invalid type for comparison".into()),
                    _ => Err("incompatible types for comparison".into()),
                }
            };
            let b = match name {
                "eq" => {
                    let mut any = false;
                    for other in &args[1..] {
                        any |= ord(&args[0], other)? == std::cmp::Ordering::Equal;
                    }
                    any
                }
                "ne" => ord(&args[0], &args[1])? != std::cmp::Ordering::Equal,
                "lt" => ord(&args[0], &args[1])? == std::cmp::Ordering::Less,
                "le" => ord(&args[0], &args[1])? != std::cmp::Ordering::Greater,
                "gt" => ord(&args[0], &args[1])? == std::cmp::Ordering::Greater,
                _ => ord(&args[0], &args[1])? != std::cmp::Ordering::Less,
            };
            Ok(G::V(Value::Bool(b)))
        }
        "html" => s(go_sprint_args(args, false)
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&#34;")
            .replace('\'', "&#39;")
            .replace('\0', "\u{FFFD}")),
        "js" => s(go_sprint_args(args, false)
            .chars()
            .map(|c| match c {
                '\\' => "\\\\".into(),
                '\'' => "\\'".into(),
                '"' => "\\\"".into(),
                '<' => "\\u003C".into(),
                '>' => "\\u003E".into(),
                '&' => "\\u0026".into(),
                '=' => "\\u003D".into(),
                '\n' => "\\n".into(),
                '\r' => "\\r".into(),
                '\t' => "\\t".into(),
                c => c.to_string(),
            })
            .collect()),
        "urlquery" => s(go_sprint_args(args, false)
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
                b' ' => "+".into(),
                b => format!("%{b:02X}"),
            })
            .collect()),
        // kubectl's: whether the path of keys and indices leads somewhere.
        "exists" => {
            let Some((first, keys)) = args.split_first() else { return Ok(G::V(Value::Bool(false))) };
            let mut v = first.clone();
            for k in keys {
                v = match call("index", &[v, k.clone()]) {
                    Ok(G::Missing) | Err(_) => return Ok(G::V(Value::Bool(false))),
                    Ok(x) => x,
                };
            }
            Ok(G::V(Value::Bool(!matches!(v, G::Missing))))
        }
        "base64decode" => {
            want(1)?;
            let G::V(Value::String(t)) = &args[0] else { return Err("base64decode: expected a string".into()) };
            use base64::Engine as _;
            match base64::engine::general_purpose::STANDARD.decode(t.as_bytes()) {
                Ok(b) => s(String::from_utf8_lossy(&b).into_owned()),
                Err(e) => Err(format!("base64decode: {e}")),
            }
        }
        other => Err(format!("function {other:?} not defined")),
    }
}

/// `fmt.Sprint` (a space between operands when neither is a string) or `fmt.Sprintln`
/// (always a space).
fn go_sprint_args(args: &[G], always: bool) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 && (always || (!is_string(a) && !is_string(&args[i - 1]))) {
            out.push(' ');
        }
        out.push_str(&sprint(a));
    }
    out
}

/// `fmt.Sprintf` for the verbs templates use: `%v %s %d %q %f %g %e %t %x %X %c %%`, with
/// flags `-+ 0#`, width and precision; a verb that does not fit its operand prints Go's
/// `%!d(float64=3)`, as it does for every JSON number under `%d`.
fn go_printf(f: &str, args: &[G]) -> String {
    let mut out = String::new();
    let c: Vec<char> = f.chars().collect();
    let mut i = 0;
    let mut n = 0;
    while i < c.len() {
        if c[i] != '%' {
            out.push(c[i]);
            i += 1;
            continue;
        }
        i += 1;
        let (mut minus, mut plus, mut zero) = (false, false, false);
        while i < c.len() && matches!(c[i], '-' | '+' | ' ' | '0' | '#') {
            match c[i] {
                '-' => minus = true,
                '+' => plus = true,
                '0' => zero = true,
                _ => {}
            }
            i += 1;
        }
        let mut width = None;
        let start = i;
        while i < c.len() && c[i].is_ascii_digit() {
            i += 1;
        }
        if i > start {
            width = c[start..i].iter().collect::<String>().parse::<usize>().ok();
        }
        let mut prec = None;
        if i < c.len() && c[i] == '.' {
            i += 1;
            let s = i;
            while i < c.len() && c[i].is_ascii_digit() {
                i += 1;
            }
            prec = Some(c[s..i].iter().collect::<String>().parse::<usize>().unwrap_or(0));
        }
        let Some(&verb) = c.get(i) else {
            out.push_str("%!(NOVERB)");
            break;
        };
        i += 1;
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(arg) = args.get(n) else {
            out.push_str(&format!("%!{verb}(MISSING)"));
            continue;
        };
        n += 1;
        let bad = || format!("%!{verb}({}={})", go_type(arg).replace("interface {}", "<nil>"), sprint(arg));
        let text = match (verb, arg) {
            ('v', a) => sprint(a),
            ('s', G::V(Value::String(t))) => prec.map_or(t.to_string(), |p| t.chars().take(p).collect()),
            ('s', a @ (G::V(Value::Array(_)) | G::V(Value::Object(_)))) => sprint(a),
            ('q', G::V(Value::String(t))) => format!("{:?}", t.as_str()),
            ('t', G::V(Value::Bool(b))) => b.to_string(),
            ('d', G::Int(v)) => {
                if plus && *v >= 0 {
                    format!("+{v}")
                } else {
                    v.to_string()
                }
            }
            ('x', G::Int(v)) => format!("{v:x}"),
            ('X', G::Int(v)) => format!("{v:X}"),
            ('c', G::Int(v)) => char::from_u32(*v as u32).map(String::from).unwrap_or_default(),
            ('f' | 'F', a @ (G::V(Value::Number(_)) | G::Int(_))) if matches!(a, G::V(_)) => format!("{:.*}", prec.unwrap_or(6), v_f64(a)),
            ('e', a @ G::V(Value::Number(_))) => {
                let s = format!("{:.*e}", prec.unwrap_or(6), v_f64(a));
                let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
                let e: i32 = e.parse().unwrap_or(0);
                format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
            }
            ('g', a @ G::V(Value::Number(_))) => go_float(v_f64(a)),
            ('s' | 'q' | 'd' | 'x' | 'X' | 'c' | 't' | 'f' | 'F' | 'e' | 'g', G::Missing) => format!("%!{verb}(<nil>)"),
            _ => bad(),
        };
        let len = text.chars().count();
        match width {
            Some(w) if w > len => {
                let pad = w - len;
                if minus {
                    out.push_str(&text);
                    out.push_str(&" ".repeat(pad));
                } else if zero && matches!(verb, 'd' | 'f' | 'x' | 'X' | 'e' | 'g') {
                    let (sign, digits) = if text.starts_with(['-', '+']) { text.split_at(1) } else { ("", text.as_str()) };
                    out.push_str(sign);
                    out.push_str(&"0".repeat(pad));
                    out.push_str(digits);
                } else {
                    out.push_str(&" ".repeat(pad));
                    out.push_str(&text);
                }
            }
            _ => out.push_str(&text),
        }
    }
    if n < args.len() {
        out.push_str("%!(EXTRA ");
        out.push_str(&args[n..].iter().map(|a| format!("{}={}", go_type(a), sprint(a))).collect::<Vec<_>>().join(", "));
        out.push(')');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json;

    fn run(t: &str, v: &Value) -> String {
        render(t, v).unwrap_or_else(|e| format!("{e:?}"))
    }

    #[test]
    fn the_templates_of_the_kubernetes_docs_print_as_go_prints_them() {
        let list = json!({"kind": "List", "items": [
            {"metadata": {"name": "a", "labels": {"app": "web", "tier": "fe"}}, "spec": {"replicas": 3, "containers": [{"image": "nginx:1.25"}, {"image": "busybox"}]}, "status": {"podIP": "10.0.0.1"}},
            {"metadata": {"name": "b"}, "spec": {"replicas": 1000000, "containers": [{"image": "redis"}]}, "cpu": 1500000.0},
        ]});
        assert_eq!(run("{{range .items}}{{.metadata.name}}{{\"\\n\"}}{{end}}", &list), "a\nb\n");
        assert_eq!(run("{{range .items}}{{range .spec.containers}}{{.image}} {{end}}{{end}}", &list), "nginx:1.25 busybox redis ");
        // Integers are int64; a float64 prints as Go prints one, a million and a half in
        // exponent form, and %d refuses it.
        assert_eq!(run("{{range .items}}{{.spec.replicas}},{{end}}", &list), "3,1000000,");
        assert_eq!(run("{{(index .items 1).cpu}} {{printf \"%d\" (index .items 1).cpu}}", &list), "1.5e+06 %!d(float64=1.5e+06)");
        assert_eq!(run("{{printf \"%d|%v|%5.1f|%-4s|\" (index .items 0).spec.replicas 2 1.25 \"x\"}}", &list), "3|2|  1.2|x   |");
        assert_eq!(run("{{range $i, $p := .items}}{{$i}}={{$p.metadata.name}} {{end}}", &list), "0=a 1=b ");
        assert_eq!(run("{{range .items}}{{.status.podIP}} {{end}}", &list), "10.0.0.1 <no value> ");
        assert_eq!(run("{{range .items}}{{if .metadata.labels}}{{.metadata.labels.app}}{{else}}none{{end}} {{end}}", &list), "web none ");
        assert_eq!(run("{{with index .items 0}}{{len .spec.containers}} {{.metadata.labels}}{{end}}", &list), "2 map[app:web tier:fe]");
        assert_eq!(run("{{range $k, $v := (index .items 0).metadata.labels}}{{$k}}={{$v}};{{end}}", &list), "app=web;tier=fe;");
        assert_eq!(run("{{- range .items }}\n  {{ .metadata.name -}}\n{{ end }}", &list), "\n  a\n  b");
        assert_eq!(run("{{- range .items }}\n  {{- .metadata.name -}}\n{{ end }}", &list), "ab");
        assert_eq!(run("{{/* a comment */}}{{$n := len .items}}{{if eq $n 2}}two{{else if eq $n 3}}three{{end}}", &list), "two");
        assert_eq!(run("{{if and (gt (len .items) 1) (not .missing)}}yes{{end}}", &list), "yes");
        assert_eq!(run("{{exists . \"items\" 0 \"status\"}} {{exists . \"items\" 1 \"status\"}}", &list), "true false");
        assert_eq!(run("{{\"aGk=\" | base64decode}} {{print 1 2 \"x\" 3}} {{html \"<a>\"}}", &list), "hi 1 2x3 &lt;a&gt;");
        assert_eq!(run("{{range .nope}}x{{else}}empty{{end}}", &list), "empty");
    }

    #[test]
    fn mistakes_get_go_s_errors() {
        let v = json!({"spec": {"x": 1, "n": null}});
        assert!(matches!(render("{{.spec", &v), Err(Error::Parse(m)) if m == "template: output:1: unclosed action"));
        assert!(matches!(render("{{if .spec}}x", &v), Err(Error::Parse(m)) if m == "template: output:1: unexpected EOF"));
        assert!(matches!(render("{{nope .spec}}", &v), Err(Error::Parse(m)) if m == "template: output:1: function \"nope\" not defined"));
        assert!(matches!(render("{{end}}", &v), Err(Error::Parse(m)) if m == "template: output:1: unexpected {{end}}"));
        assert_eq!(render("{{.spec.nope.x}}", &v), Ok("<no value>".into()));
        let e = render("{{.spec.n.x}}", &v).unwrap_err();
        assert_eq!(e, Error::Exec("template: output:1:7: executing \"output\" at <.spec.n.x>: nil pointer evaluating interface {}.x".into()));
        let e = render("{{.spec.x.y}}", &v).unwrap_err();
        assert_eq!(e, Error::Exec("template: output:1:7: executing \"output\" at <.spec.x.y>: can't evaluate field y in type interface {}".into()));
        let e = render("{{if gt .spec.x 1.0}}x{{end}}", &v).unwrap_err();
        assert_eq!(
            e,
            Error::Exec("template: output:1:5: executing \"output\" at <gt .spec.x 1.0>: error calling gt: incompatible types for comparison".into())
        );
    }

    #[test]
    fn floats_print_as_go_s_shortest_form() {
        for (f, s) in [
            (3.0, "3"),
            (0.5, "0.5"),
            (1e6, "1e+06"),
            (123456.0, "123456"),
            (1234567.0, "1.234567e+06"),
            (1e21, "1e+21"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
        ] {
            assert_eq!(go_float(f), s, "{f}");
        }
    }
}
/// Templates made of random pieces of the syntax: every one renders or fails, none panics.
#[cfg(test)]
mod hostile {
    #[test]
    fn random_templates_never_panic() {
        let alpha: Vec<&str> = "{ } {{ }} {{- -}} - . .a .b $ $x $ ( ) | := = , \" ` \\ n 1 2e3 .5 -1 range if else end with len index printf print and or not eq lt %d %s %-5v %q %!  \n \t /* */ x nil true".split(' ').collect();
        let data = crate::json!({"a": {"b": [1, 2.5, "x", null, {"c": true}]}, "items": [{"x": 1}]});
        let mut seed: u64 = 12345;
        for _ in 0..100_000 {
            let n = (seed % 40) as usize;
            let mut s = String::new();
            for _ in 0..n {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                s.push_str(alpha[(seed >> 33) as usize % alpha.len()]);
                s.push(if seed & 1 == 0 { ' ' } else { '\u{0}' });
                s = s.replace('\u{0}', "");
            }
            for t in [s.clone(), format!("{{{{{s}}}}}"), format!("{{{{range .a.b}}}}{{{{{s}}}}}{{{{end}}}}"), format!("{{{{printf {s}}}}}")] {
                let _ = super::render(&t, &data);
            }
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        }
    }
}
