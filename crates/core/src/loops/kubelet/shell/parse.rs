//! The shell's grammar: a recursive-descent parser for the POSIX `sh` language that
//! teaching manifests use (busybox `ash`, `bash -c`), with bash's indexed arrays.
//! Never panics: any input gives a tree or a syntax error in the shell's own words.

/// One piece of a word before expansion.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Unquoted text: subject to field splitting (when it came from an expansion) and globbing.
    Lit(String),
    /// Quoted or escaped text: taken literally.
    Quoted(String),
    /// `$NAME`, `${NAME…}`, `$1`, `$?`, `${a[i]}`.
    Param { name: String, index: Option<String>, op: ParamOp, quoted: bool },
    /// `$(…)` or backquotes.
    Sub { list: Box<List>, quoted: bool },
    /// `$((…))`.
    Arith { expr: String, quoted: bool },
}

#[derive(Debug, Clone, PartialEq)]
pub enum ParamOp {
    Plain,
    Length,
    /// `:-` (`colon`) or `-`.
    Default {
        word: Vec<Part>,
        colon: bool,
    },
    Assign {
        word: Vec<Part>,
        colon: bool,
    },
    Alt {
        word: Vec<Part>,
        colon: bool,
    },
    /// `#`, `##`, `%`, `%%`.
    Trim {
        word: Vec<Part>,
        suffix: bool,
        longest: bool,
    },
}

pub type Word = Vec<Part>;

#[derive(Debug, Clone, PartialEq)]
pub enum RedirOp {
    Out,
    Append,
    In,
    /// `N>&M`.
    Dup,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Redir {
    pub fd: u8,
    pub op: RedirOp,
    pub target: Word,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Simple {
    pub assigns: Vec<(String, Assign)>,
    pub words: Vec<Word>,
    pub redirs: Vec<Redir>,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Assign {
    Scalar(Word),
    Array(Vec<Word>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Simple(Simple),
    If { arms: Vec<(List, List)>, otherwise: Option<List> },
    Loop { cond: List, body: List, until: bool },
    For { var: String, words: Option<Vec<Word>>, body: List },
    Case { word: Word, arms: Vec<(Vec<Word>, List)> },
    Group(List),
    Function { name: String, body: Box<Command> },
    Break(Word),
    Continue(Word),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Piped {
    pub command: Command,
    pub redirs: Vec<Redir>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Pipeline {
    pub negate: bool,
    pub commands: Vec<Piped>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AndOr {
    pub first: Pipeline,
    /// `true` for `&&`, `false` for `||`.
    pub rest: Vec<(bool, Pipeline)>,
}

pub type List = Vec<AndOr>;

/// A syntax error as the shell reports it (without the `sh: ` prefix).
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    pub line: usize,
    /// `unexpected "fi"`, `unterminated quoted string`, `unexpected end of file`.
    pub what: String,
}

const MAX_DEPTH: usize = 64;

struct Parser {
    s: Vec<char>,
    i: usize,
    line: usize,
    depth: usize,
}

const RESERVED: &[&str] = &["if", "then", "elif", "else", "fi", "do", "done", "while", "until", "for", "in", "case", "esac", "{", "}", "!"];

/// Parse a whole script.
pub fn parse(script: &str) -> Result<List, SyntaxError> {
    let mut p = Parser { s: script.chars().collect(), i: 0, line: 1, depth: 0 };
    let list = p.list(&[])?;
    p.skip_blank(true);
    if p.i < p.s.len() {
        let tok = p.peek_token();
        return Err(p.err(format!("unexpected {tok:?}")));
    }
    Ok(list)
}

fn is_meta(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')')
}

fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch == '_' || ch.is_ascii_alphabetic()) && c.all(|ch| ch == '_' || ch.is_ascii_alphanumeric())
}

/// The literal text of a word if it is made of unquoted literals only.
pub fn literal(w: &Word) -> Option<String> {
    let mut out = String::new();
    for p in w {
        match p {
            Part::Lit(s) => out.push_str(s),
            _ => return None,
        }
    }
    Some(out)
}

impl Parser {
    fn err(&self, what: String) -> SyntaxError {
        SyntaxError { line: self.line, what }
    }
    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }
    fn at(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).copied()
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.i += 1;
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }
    fn starts(&self, t: &str) -> bool {
        t.chars().enumerate().all(|(k, c)| self.at(k) == Some(c))
    }
    /// Skip spaces, tabs, comments, line continuations, and newlines too if `newlines`.
    fn skip_blank(&mut self, newlines: bool) {
        loop {
            match self.peek() {
                Some(' ' | '\t' | '\r') => {
                    self.bump();
                }
                Some('\\') if self.at(1) == Some('\n') => {
                    self.bump();
                    self.bump();
                }
                Some('\n') if newlines => {
                    self.bump();
                }
                Some('#') => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                }
                _ => return,
            }
        }
    }
    /// What comes next, for error messages.
    fn peek_token(&self) -> String {
        for t in [";;", "&&", "||", ">>", ";", "&", "|", "(", ")", "<", ">", "\n"] {
            if self.starts(t) {
                return if t == "\n" { "newline".into() } else { t.into() };
            }
        }
        let mut j = self.i;
        let mut out = String::new();
        while let Some(&c) = self.s.get(j) {
            if is_meta(c) {
                break;
            }
            out.push(c);
            j += 1;
        }
        if out.is_empty() {
            "end of file".into()
        } else {
            out
        }
    }
    /// The next word if it is exactly the unquoted keyword `kw` (not consumed).
    fn next_is(&self, kw: &str) -> bool {
        if !self.starts(kw) {
            return false;
        }
        match self.at(kw.chars().count()) {
            None => true,
            Some(c) => is_meta(c) || (kw == "{" || kw == "}" || kw == "!") && c.is_whitespace(),
        }
    }
    fn expect_kw(&mut self, kw: &str) -> Result<(), SyntaxError> {
        self.skip_blank(true);
        if self.next_is(kw) {
            self.i += kw.chars().count();
            Ok(())
        } else {
            let tok = self.peek_token();
            Err(self.err(format!("unexpected {tok:?} (expecting {kw:?})")))
        }
    }

    /// A list up to one of the `stops` keywords (not consumed), `)`, `;;` or the end.
    fn list(&mut self, stops: &[&str]) -> Result<List, SyntaxError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err("nested too deeply".into()));
        }
        let mut out = Vec::new();
        loop {
            self.skip_blank(true);
            while self.peek() == Some(';') && self.at(1) != Some(';') {
                if out.is_empty() {
                    return Err(self.err("unexpected \";\"".into()));
                }
                self.bump();
                self.skip_blank(true);
            }
            let Some(c) = self.peek() else { break };
            if c == ')' || self.starts(";;") || stops.iter().any(|k| self.next_is(k)) {
                break;
            }
            if RESERVED.iter().any(|k| !["if", "while", "until", "for", "case", "{", "!"].contains(k) && self.next_is(k)) {
                let tok = self.peek_token();
                return Err(self.err(format!("unexpected {tok:?}")));
            }
            let ao = self.and_or()?;
            out.push(ao);
            self.skip_blank(false);
            match self.peek() {
                Some(';') if self.at(1) != Some(';') => {
                    self.bump();
                }
                // A background job runs to completion like a foreground one here.
                Some('&') if self.at(1) != Some('&') => {
                    self.bump();
                }
                Some('\n') => {
                    self.bump();
                }
                _ => {}
            }
        }
        self.depth -= 1;
        Ok(out)
    }

    fn and_or(&mut self) -> Result<AndOr, SyntaxError> {
        let first = self.pipeline()?;
        let mut rest = Vec::new();
        loop {
            self.skip_blank(false);
            let and = if self.starts("&&") {
                true
            } else if self.starts("||") {
                false
            } else {
                break;
            };
            self.i += 2;
            self.skip_blank(true);
            rest.push((and, self.pipeline()?));
        }
        Ok(AndOr { first, rest })
    }

    fn pipeline(&mut self) -> Result<Pipeline, SyntaxError> {
        self.skip_blank(false);
        let mut negate = false;
        if self.next_is("!") {
            self.i += 1;
            negate = true;
            self.skip_blank(false);
        }
        let mut commands = vec![self.command()?];
        loop {
            self.skip_blank(false);
            if self.peek() == Some('|') && self.at(1) != Some('|') {
                self.bump();
                self.skip_blank(true);
                commands.push(self.command()?);
            } else {
                break;
            }
        }
        Ok(Pipeline { negate, commands })
    }

    fn redirs(&mut self) -> Result<Vec<Redir>, SyntaxError> {
        let mut out = Vec::new();
        loop {
            self.skip_blank(false);
            match self.redir()? {
                Some(r) => out.push(r),
                None => return Ok(out),
            }
        }
    }

    /// A redirection at the cursor (`>f`, `2>&1`, `&>f`, `<f`), if there is one.
    fn redir(&mut self) -> Result<Option<Redir>, SyntaxError> {
        let start = self.i;
        let mut fd: Option<u8> = None;
        if let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
            if matches!(self.at(1), Some('>' | '<')) {
                fd = Some(d as u8);
                self.i += 1;
            }
        }
        let both = fd.is_none() && self.starts("&>");
        if both {
            self.i += 1;
        }
        let op = if self.starts(">>") {
            self.i += 2;
            RedirOp::Append
        } else if self.starts(">&") {
            self.i += 2;
            RedirOp::Dup
        } else if self.starts(">") && !self.starts(">(") {
            self.i += 1;
            if self.peek() == Some('|') {
                self.i += 1;
            }
            RedirOp::Out
        } else if self.starts("<") && !self.starts("<<") && !self.starts("<(") {
            self.i += 1;
            RedirOp::In
        } else {
            self.i = start;
            return Ok(None);
        };
        self.skip_blank(false);
        let target = self.word()?;
        if target.is_empty() {
            let tok = self.peek_token();
            return Err(self.err(format!("unexpected {tok:?}")));
        }
        let fd = fd.unwrap_or(if op == RedirOp::In { 0 } else { 1 });
        if both {
            return Ok(Some(Redir { fd: 3, op, target }));
        }
        Ok(Some(Redir { fd, op, target }))
    }

    fn command(&mut self) -> Result<Piped, SyntaxError> {
        self.skip_blank(false);
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err("nested too deeply".into()));
        }
        let command = if self.next_is("if") {
            self.i += 2;
            let mut arms = Vec::new();
            let mut otherwise = None;
            loop {
                let cond = self.list(&["then"])?;
                self.expect_kw("then")?;
                let body = self.list(&["elif", "else", "fi"])?;
                arms.push((cond, body));
                self.skip_blank(true);
                if self.next_is("elif") {
                    self.i += 4;
                    continue;
                }
                if self.next_is("else") {
                    self.i += 4;
                    otherwise = Some(self.list(&["fi"])?);
                }
                self.expect_kw("fi")?;
                break;
            }
            Command::If { arms, otherwise }
        } else if self.next_is("while") || self.next_is("until") {
            let until = self.next_is("until");
            self.i += 5;
            let cond = self.list(&["do"])?;
            self.expect_kw("do")?;
            let body = self.list(&["done"])?;
            self.expect_kw("done")?;
            Command::Loop { cond, body, until }
        } else if self.next_is("for") {
            self.i += 3;
            self.skip_blank(false);
            let var = literal(&self.word()?).filter(|v| is_name(v)).ok_or_else(|| self.err("bad for loop variable".into()))?;
            self.skip_blank(false);
            let mut words = None;
            if self.peek() == Some(';') {
                self.bump();
            }
            self.skip_blank(true);
            if self.next_is("in") {
                self.i += 2;
                let mut ws = Vec::new();
                loop {
                    self.skip_blank(false);
                    if matches!(self.peek(), Some(';' | '\n') | None) {
                        if self.peek().is_some() {
                            self.bump();
                        }
                        break;
                    }
                    let w = self.word()?;
                    if w.is_empty() {
                        let tok = self.peek_token();
                        return Err(self.err(format!("unexpected {tok:?}")));
                    }
                    ws.push(w);
                }
                words = Some(ws);
            }
            self.expect_kw("do")?;
            let body = self.list(&["done"])?;
            self.expect_kw("done")?;
            Command::For { var, words, body }
        } else if self.next_is("case") {
            self.i += 4;
            self.skip_blank(false);
            let word = self.word()?;
            self.expect_kw("in")?;
            let mut arms = Vec::new();
            loop {
                self.skip_blank(true);
                if self.next_is("esac") {
                    self.i += 4;
                    break;
                }
                if self.peek() == Some('(') {
                    self.bump();
                }
                let mut pats = Vec::new();
                loop {
                    self.skip_blank(false);
                    let w = self.word()?;
                    if w.is_empty() {
                        let tok = self.peek_token();
                        return Err(self.err(format!("unexpected {tok:?} (expecting \")\")")));
                    }
                    pats.push(w);
                    self.skip_blank(false);
                    match self.bump() {
                        Some('|') => continue,
                        Some(')') => break,
                        _ => return Err(self.err("unexpected end of file (expecting \")\")".into())),
                    }
                }
                let body = self.list(&["esac"])?;
                arms.push((pats, body));
                self.skip_blank(true);
                if self.starts(";;") {
                    self.i += 2;
                } else if !self.next_is("esac") {
                    let tok = self.peek_token();
                    return Err(self.err(format!("unexpected {tok:?} (expecting \"esac\")")));
                }
            }
            Command::Case { word, arms }
        } else if self.next_is("{") {
            self.i += 1;
            let body = self.list(&["}"])?;
            self.expect_kw("}")?;
            Command::Group(body)
        } else if self.peek() == Some('(') {
            self.bump();
            let body = self.list(&[])?;
            self.skip_blank(true);
            if self.bump() != Some(')') {
                return Err(self.err("unexpected end of file (expecting \")\")".into()));
            }
            Command::Group(body)
        } else {
            let simple = self.simple()?;
            // `name() { ...; }`
            if simple.words.len() == 1 && simple.assigns.is_empty() && simple.redirs.is_empty() && self.starts("()") {
                if let Some(name) = literal(&simple.words[0]).filter(|n| is_name(n) || n.contains('-')) {
                    self.i += 2;
                    self.skip_blank(true);
                    let body = self.command()?;
                    self.depth -= 1;
                    return Ok(Piped { command: Command::Function { name, body: Box::new(body.command) }, redirs: vec![] });
                }
            }
            match simple.words.first().and_then(literal).as_deref() {
                Some("break") if simple.words.len() <= 2 => Command::Break(simple.words.get(1).cloned().unwrap_or_default()),
                Some("continue") if simple.words.len() <= 2 => Command::Continue(simple.words.get(1).cloned().unwrap_or_default()),
                _ => {
                    self.depth -= 1;
                    return Ok(Piped { command: Command::Simple(simple), redirs: vec![] });
                }
            }
        };
        let redirs = self.redirs()?;
        self.depth -= 1;
        Ok(Piped { command, redirs })
    }

    fn simple(&mut self) -> Result<Simple, SyntaxError> {
        let line = self.line;
        let mut s = Simple { assigns: vec![], words: vec![], redirs: vec![], line };
        loop {
            self.skip_blank(false);
            if let Some(r) = self.redir()? {
                s.redirs.push(r);
                continue;
            }
            match self.peek() {
                None | Some(';' | '&' | '|' | '\n' | ')') => break,
                Some('(') if !s.words.is_empty() && self.at(1) == Some(')') => break,
                Some('(') => {
                    return Err(self.err("unexpected \"(\"".into()));
                }
                _ => {}
            }
            if s.words.is_empty() {
                if let Some((name, value)) = self.assignment()? {
                    s.assigns.push((name, value));
                    continue;
                }
            }
            let w = self.word()?;
            if w.is_empty() {
                break;
            }
            s.words.push(w);
        }
        if s.words.is_empty() && s.assigns.is_empty() && s.redirs.is_empty() {
            let tok = self.peek_token();
            return Err(self.err(format!("unexpected {tok:?}")));
        }
        Ok(s)
    }

    /// `NAME=value` or `NAME=(a b c)` at the cursor.
    fn assignment(&mut self) -> Result<Option<(String, Assign)>, SyntaxError> {
        let mut j = self.i;
        let mut name = String::new();
        while let Some(&c) = self.s.get(j) {
            if c == '_' || c.is_ascii_alphanumeric() {
                name.push(c);
                j += 1;
            } else {
                break;
            }
        }
        if self.s.get(j) != Some(&'=') || !is_name(&name) {
            return Ok(None);
        }
        self.i = j + 1;
        if self.peek() == Some('(') {
            self.bump();
            let mut items = Vec::new();
            loop {
                self.skip_blank(true);
                if self.peek() == Some(')') {
                    self.bump();
                    break;
                }
                let w = self.word()?;
                if w.is_empty() {
                    return Err(self.err("unexpected end of file (expecting \")\")".into()));
                }
                items.push(w);
            }
            return Ok(Some((name, Assign::Array(items))));
        }
        let w = self.word()?;
        Ok(Some((name, Assign::Scalar(w))))
    }

    /// One word, or an empty word at a metacharacter.
    fn word(&mut self) -> Result<Word, SyntaxError> {
        let mut parts: Vec<Part> = Vec::new();
        let push_lit = |parts: &mut Vec<Part>, c: char, quoted: bool| match (parts.last_mut(), quoted) {
            (Some(Part::Lit(s)), false) | (Some(Part::Quoted(s)), true) => s.push(c),
            _ => parts.push(if quoted { Part::Quoted(c.to_string()) } else { Part::Lit(c.to_string()) }),
        };
        while let Some(c) = self.peek() {
            match c {
                c if is_meta(c) => break,
                '\\' => {
                    self.bump();
                    match self.bump() {
                        Some('\n') => {}
                        Some(e) => push_lit(&mut parts, e, true),
                        None => {}
                    }
                }
                '\'' => {
                    self.bump();
                    let mut s = String::new();
                    loop {
                        match self.bump() {
                            Some('\'') => break,
                            Some(ch) => s.push(ch),
                            None => return Err(self.err("unterminated quoted string".into())),
                        }
                    }
                    parts.push(Part::Quoted(s));
                }
                '"' => {
                    self.bump();
                    let inner = self.double_quoted()?;
                    if inner.is_empty() {
                        parts.push(Part::Quoted(String::new()));
                    }
                    parts.extend(inner);
                }
                '$' => {
                    let p = self.dollar(false)?;
                    parts.push(p);
                }
                '`' => {
                    let p = self.backquote(false)?;
                    parts.push(p);
                }
                _ => {
                    self.bump();
                    push_lit(&mut parts, c, false);
                }
            }
        }
        Ok(parts)
    }

    /// The inside of `"…"` (the opening quote consumed).
    fn double_quoted(&mut self) -> Result<Vec<Part>, SyntaxError> {
        let mut parts: Vec<Part> = Vec::new();
        let push = |parts: &mut Vec<Part>, c: char| match parts.last_mut() {
            Some(Part::Quoted(s)) => s.push(c),
            _ => parts.push(Part::Quoted(c.to_string())),
        };
        loop {
            match self.peek() {
                None => return Err(self.err("unterminated quoted string".into())),
                Some('"') => {
                    self.bump();
                    return Ok(parts);
                }
                Some('\\') => {
                    self.bump();
                    match self.bump() {
                        Some(e @ ('$' | '`' | '"' | '\\')) => push(&mut parts, e),
                        Some('\n') => {}
                        Some(e) => {
                            push(&mut parts, '\\');
                            push(&mut parts, e);
                        }
                        None => return Err(self.err("unterminated quoted string".into())),
                    }
                }
                Some('$') => {
                    let p = self.dollar(true)?;
                    parts.push(p);
                }
                Some('`') => {
                    let p = self.backquote(true)?;
                    parts.push(p);
                }
                Some(c) => {
                    self.bump();
                    push(&mut parts, c);
                }
            }
        }
    }

    fn backquote(&mut self, quoted: bool) -> Result<Part, SyntaxError> {
        self.bump();
        let mut inner = String::new();
        loop {
            match self.bump() {
                None => return Err(self.err("unterminated quoted string".into())),
                Some('`') => break,
                Some('\\') => match self.bump() {
                    Some(e @ ('`' | '\\' | '$')) => inner.push(e),
                    Some(e) => {
                        inner.push('\\');
                        inner.push(e);
                    }
                    None => return Err(self.err("unterminated quoted string".into())),
                },
                Some(c) => inner.push(c),
            }
        }
        let mut sub = Parser { s: inner.chars().collect(), i: 0, line: self.line, depth: self.depth + 1 };
        if sub.depth > MAX_DEPTH {
            return Err(self.err("nested too deeply".into()));
        }
        let list = sub.list(&[])?;
        Ok(Part::Sub { list: Box::new(list), quoted })
    }

    /// `$…` at the cursor.
    fn dollar(&mut self, quoted: bool) -> Result<Part, SyntaxError> {
        self.bump();
        match self.peek() {
            Some('(') if self.at(1) == Some('(') => {
                self.i += 2;
                let mut depth = 0usize;
                let mut expr = String::new();
                loop {
                    match self.bump() {
                        None => return Err(self.err("unexpected end of file (expecting \"))\")".into())),
                        Some('(') => {
                            depth += 1;
                            expr.push('(');
                        }
                        Some(')') if depth == 0 => {
                            if self.bump() != Some(')') {
                                return Err(self.err("unexpected \")\"".into()));
                            }
                            break;
                        }
                        Some(')') => {
                            depth -= 1;
                            expr.push(')');
                        }
                        Some(c) => expr.push(c),
                    }
                }
                Ok(Part::Arith { expr, quoted })
            }
            Some('(') => {
                self.bump();
                let list = self.list(&[])?;
                self.skip_blank(true);
                if self.bump() != Some(')') {
                    return Err(self.err("unexpected end of file (expecting \")\")".into()));
                }
                Ok(Part::Sub { list: Box::new(list), quoted })
            }
            Some('{') => {
                self.bump();
                self.braced(quoted)
            }
            Some(c) if c.is_ascii_digit() || "?#$@*!-".contains(c) => {
                self.bump();
                Ok(Part::Param { name: c.to_string(), index: None, op: ParamOp::Plain, quoted })
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                let mut name = String::new();
                while let Some(ch) = self.peek().filter(|ch| *ch == '_' || ch.is_ascii_alphanumeric()) {
                    name.push(ch);
                    self.bump();
                }
                Ok(Part::Param { name, index: None, op: ParamOp::Plain, quoted })
            }
            _ => Ok(if quoted { Part::Quoted("$".into()) } else { Part::Lit("$".into()) }),
        }
    }

    /// `${…}` after the brace.
    fn braced(&mut self, quoted: bool) -> Result<Part, SyntaxError> {
        let length = self.peek() == Some('#') && self.at(1).is_some_and(|c| c != '}');
        if length {
            self.bump();
        }
        let mut name = String::new();
        match self.peek() {
            Some(c) if "?#$@*!".contains(c) || c.is_ascii_digit() => {
                while let Some(ch) = self.peek().filter(|ch| ch.is_ascii_digit() || name.is_empty() && "?#$@*!".contains(*ch)) {
                    name.push(ch);
                    self.bump();
                    if !ch.is_ascii_digit() {
                        break;
                    }
                }
            }
            _ => {
                while let Some(ch) = self.peek().filter(|ch| *ch == '_' || ch.is_ascii_alphanumeric()) {
                    name.push(ch);
                    self.bump();
                }
            }
        }
        if name.is_empty() {
            return Err(self.err("bad substitution".into()));
        }
        let mut index = None;
        if self.peek() == Some('[') {
            self.bump();
            let mut idx = String::new();
            loop {
                match self.bump() {
                    None => return Err(self.err("bad substitution".into())),
                    Some(']') => break,
                    Some(c) => idx.push(c),
                }
            }
            index = Some(idx);
        }
        let op = if length {
            ParamOp::Length
        } else {
            let colon = self.peek() == Some(':');
            if colon {
                self.bump();
            }
            match self.peek() {
                Some('}') if !colon => ParamOp::Plain,
                Some(c @ ('-' | '=' | '+' | '?')) => {
                    self.bump();
                    let word = self.param_word()?;
                    match c {
                        '-' | '?' => ParamOp::Default { word, colon },
                        '=' => ParamOp::Assign { word, colon },
                        _ => ParamOp::Alt { word, colon },
                    }
                }
                Some(c @ ('#' | '%')) if !colon => {
                    self.bump();
                    let longest = self.peek() == Some(c);
                    if longest {
                        self.bump();
                    }
                    let word = self.param_word()?;
                    ParamOp::Trim { word, suffix: c == '%', longest }
                }
                _ => return Err(self.err("bad substitution".into())),
            }
        };
        if self.bump() != Some('}') {
            return Err(self.err("bad substitution".into()));
        }
        Ok(Part::Param { name, index, op, quoted })
    }

    /// The word inside `${x:-word}`, up to the closing brace (not consumed).
    fn param_word(&mut self) -> Result<Vec<Part>, SyntaxError> {
        let mut parts: Vec<Part> = Vec::new();
        loop {
            match self.peek() {
                None => return Err(self.err("bad substitution".into())),
                Some('}') => return Ok(parts),
                Some('$') => {
                    let p = self.dollar(true)?;
                    parts.push(p);
                }
                Some('"') => {
                    self.bump();
                    parts.extend(self.double_quoted()?);
                }
                Some('\'') => {
                    self.bump();
                    let mut s = String::new();
                    loop {
                        match self.bump() {
                            Some('\'') => break,
                            Some(ch) => s.push(ch),
                            None => return Err(self.err("unterminated quoted string".into())),
                        }
                    }
                    parts.push(Part::Quoted(s));
                }
                Some(c) => {
                    self.bump();
                    match parts.last_mut() {
                        Some(Part::Lit(s)) => s.push(c),
                        _ => parts.push(Part::Lit(c.to_string())),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_teaching_manifests_use() {
        for s in [
            "echo hi; exit 1",
            "touch /tmp/healthy; sleep 30; rm -f /tmp/healthy; sleep 600",
            "while true; do echo \"logging\" >> /opt/logs.txt; sleep 1; done",
            "for i in 1 2 3\ndo\n  echo $i\ndone",
            "if [ -f /x ]; then echo yes; elif true; then :; else echo no; fi",
            "case $X in a|b) echo ab;; *) echo other;; esac",
            "items=(foo bar baz qux xyz)\necho ${items[$JOB_COMPLETION_INDEX]} > /input/data.txt\n",
            "echo $((100 + $ordinal)) 2>&1 >/dev/null",
            "f() { echo in f; }; f",
            "nginx -s quit; while killall -0 nginx; do sleep 1; done",
            "echo \"Hello world!\" && sleep 5 && exit 42",
            "x=$(date +%s); echo ${x:-none} `hostname`",
        ] {
            parse(s).unwrap_or_else(|e| panic!("{s}: {e:?}"));
        }
    }

    #[test]
    fn syntax_errors_name_the_token() {
        assert_eq!(parse("if true; then echo").unwrap_err().what, "unexpected \"end of file\" (expecting \"fi\")");
        assert_eq!(parse("echo 'open").unwrap_err().what, "unterminated quoted string");
        assert_eq!(parse("fi").unwrap_err().what, "unexpected \"fi\"");
        assert_eq!(parse("done").unwrap_err().what, "unexpected \"done\"");
        let deep = "$(".repeat(500);
        assert!(parse(&deep).is_err());
        let deep_if = "if true; then ".repeat(500);
        assert!(parse(&deep_if).is_err());
    }
}
