//! YAML out, as kubectl writes it (`-o yaml`, `diff`): `sigs.k8s.io/yaml` turns the JSON
//! into go-yaml v2's emitter, whose habits a learner sees every day and this module keeps:
//! keys in go-yaml's order, sequences in a mapping not indented, `{}` and `[]` for empty
//! collections, double quotes for strings that would read as something else (`"1"`,
//! `"True"`, timestamps), single quotes for strings plain style cannot carry, `|` blocks
//! for text with line breaks, and long plain lines folded at 80 columns.

use crate::foundation::sort::Sort;
use crate::foundation::value::Value;
use std::cmp::Ordering;

const WIDTH: usize = 80;

/// go-yaml v2's key order (`keyList.Less`): letters after other characters, runs of
/// digits by their value.
fn key_order(a: &str, b: &str) -> Ordering {
    let (ar, br): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            i += 1;
            continue;
        }
        let (al, bl) = (ar[i].is_alphabetic(), br[i].is_alphabetic());
        if al && bl {
            return ar[i].cmp(&br[i]);
        }
        if al || bl {
            return if bl { Ordering::Less } else { Ordering::Greater };
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && ar[j - 1].is_ascii_digit() {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an.saturating_mul(10).saturating_add(ar[ai] as i64 - '0' as i64);
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn.saturating_mul(10).saturating_add(br[bi] as i64 - '0' as i64);
            bi += 1;
        }
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ar[i].cmp(&br[i]);
    }
    ar.len().cmp(&br.len())
}

/// Whether a plain scalar with this text would read back as something other than a
/// string (go-yaml v2's `resolve`): null, a YAML 1.1 boolean, a number, a timestamp.
fn reads_as_non_string(s: &str) -> bool {
    const WORDS: &[&str] = &[
        "", "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE", "on",
        "On", "ON", "off", "Off", "OFF", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN", "<<",
    ];
    if WORDS.contains(&s) {
        return true;
    }
    let Some(first) = s.chars().next() else { return true };
    if !(first.is_ascii_digit() || "+-.".contains(first)) {
        return false;
    }
    if is_timestamp(s) {
        return true;
    }
    let plain = s.replace('_', "");
    let digits = plain.trim_start_matches(['+', '-']);
    let int = if let Some(h) = digits.strip_prefix("0x") {
        !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit())
    } else if let Some(b) = digits.strip_prefix("0b") {
        !b.is_empty() && b.chars().all(|c| c == '0' || c == '1')
    } else if let Some(o) = digits.strip_prefix("0o") {
        !o.is_empty() && o.chars().all(|c| ('0'..='7').contains(&c))
    } else if digits.len() > 1 && digits.starts_with('0') {
        digits.chars().all(|c| ('0'..='7').contains(&c))
    } else {
        !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
    };
    int || is_yaml_float(&plain) || is_base60(s)
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(b.first().is_some_and(|c| *c == b'+' || *c == b'-'));
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// YAML 1.1 sexagesimal numbers (`1:20`), which go-yaml quotes.
fn is_base60(s: &str) -> bool {
    let t = s.trim_start_matches(['+', '-']);
    let parts: Vec<&str> = t.split(':').collect();
    parts.len() > 1
        && parts[0].chars().next().is_some_and(|c| ('1'..='9').contains(&c))
        && parts.iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit() || c == '.' || c == '_'))
        && parts[1..].iter().all(|p| p.len() <= 2 && p.chars().all(|c| c.is_ascii_digit()) && p.parse::<u32>().is_ok_and(|n| n < 60))
}

/// `YYYY-M-D`, optionally with a time (`T`, `t` or a space), as go-yaml reads timestamps.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 8 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let rest = &s[5..];
    let (date, time) = match rest.find(['T', 't', ' ']) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let mut dp = date.split('-');
    let ok_num = |p: Option<&str>, max: u32| p.is_some_and(|p| (1..=2).contains(&p.len()) && p.parse::<u32>().is_ok_and(|n| n >= 1 && n <= max));
    if !(ok_num(dp.next(), 12) && ok_num(dp.next(), 31) && dp.next().is_none()) {
        return false;
    }
    let Some(time) = time else { return true };
    let (clock, _zone) = match time.find(['Z', '+', '-']) {
        Some(i) => (&time[..i], &time[i..]),
        None => (time, ""),
    };
    let clock = clock.split('.').next().unwrap_or("");
    let hms: Vec<&str> = clock.split(':').collect();
    hms.len() == 3 && hms.iter().all(|p| (1..=2).contains(&p.len()) && p.chars().all(|c| c.is_ascii_digit()))
}

/// Which styles libyaml allows for a scalar (`yaml_emitter_analyze_scalar`).
struct Analysis {
    plain: bool,
    single: bool,
}

fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis { plain: false, single: true };
    }
    let c: Vec<char> = s.chars().collect();
    // Everything is written in block context, so only block indicators matter.
    let (mut block_ind, mut line_breaks, mut special) = (false, false, false);
    let (mut leading_space, mut trailing_space, mut break_space, mut space_break) = (false, false, false, false);
    let (mut prev_space, mut prev_break) = (false, false);
    if s.starts_with("---") || s.starts_with("...") {
        block_ind = true;
    }
    let mut preceded_by_ws = true;
    for (i, &ch) in c.iter().enumerate() {
        let followed_by_ws = c.get(i + 1).is_none_or(|n| *n == ' ' || *n == '\t' || *n == '\n' || *n == '\r');
        if i == 0 {
            if "#,[]{}&*!|>'\"%@`".contains(ch) || ((ch == '?' || ch == ':' || ch == '-') && followed_by_ws) {
                block_ind = true;
            }
        } else if (ch == ':' && followed_by_ws) || (ch == '#' && preceded_by_ws) {
            block_ind = true;
        }
        let printable = ch == '\n' || ch == '\t' || (!ch.is_control() && ch != '\u{feff}');
        if !printable {
            special = true;
        }
        if ch == '\n' {
            line_breaks = true;
        }
        if ch == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if i == c.len() - 1 {
                trailing_space = true;
            }
            if prev_break {
                break_space = true;
            }
            prev_space = true;
            prev_break = false;
        } else if ch == '\n' {
            if prev_space {
                space_break = true;
            }
            prev_space = false;
            prev_break = true;
        } else {
            prev_space = false;
            prev_break = false;
        }
        preceded_by_ws = ch == ' ' || ch == '\t' || ch == '\n';
    }
    let mut plain = !(leading_space || trailing_space || c[0] == '\n' || c[c.len() - 1] == '\n');
    let mut single = true;
    if break_space {
        plain = false;
        single = false;
    }
    if space_break || special {
        plain = false;
        single = false;
    }
    if line_breaks {
        plain = false;
    }
    if block_ind {
        plain = false;
    }
    Analysis { plain, single }
}

struct Writer {
    out: String,
    column: usize,
}

impl Writer {
    fn put(&mut self, s: &str) {
        self.out.push_str(s);
        match s.rfind('\n') {
            Some(i) => self.column = s[i + 1..].chars().count(),
            None => self.column += s.chars().count(),
        }
    }
    fn newline(&mut self, indent: usize) {
        self.out.push('\n');
        self.out.push_str(&" ".repeat(indent));
        self.column = indent;
    }

    /// Text, folded at spaces once past the width (plain and single-quoted styles).
    fn folded(&mut self, s: &str, indent: usize, breaks: bool) {
        let c: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, &ch) in c.iter().enumerate() {
            if ch == ' ' {
                let next_space = c.get(i + 1) == Some(&' ');
                if breaks && !spaces && self.column > WIDTH && i != 0 && i + 1 != c.len() && !next_space {
                    self.newline(indent);
                    spaces = true;
                    continue;
                }
                spaces = true;
            } else {
                spaces = false;
            }
            // No line breaks here (those strings are blocks or double-quoted).
            self.out.push(ch);
            self.column += 1;
        }
    }

    /// A scalar string, `indent` being where its continuation lines go; `key` for a
    /// mapping key (never folded, never a block).
    fn string(&mut self, s: &str, indent: usize, key: bool) {
        if reads_as_non_string(s) {
            return self.double(s);
        }
        if s.contains('\n') && !key {
            return self.literal(s, indent);
        }
        let a = analyze(s);
        if a.plain {
            self.folded(s, indent, !key)
        } else if a.single {
            self.put("'");
            self.folded(&s.replace('\'', "''"), indent, !key);
            self.put("'");
        } else {
            self.double(s)
        }
    }

    fn double(&mut self, s: &str) {
        let mut q = String::from("\"");
        for ch in s.chars() {
            match ch {
                '"' => q.push_str("\\\""),
                '\\' => q.push_str("\\\\"),
                '\n' => q.push_str("\\n"),
                '\t' => q.push_str("\\t"),
                '\r' => q.push_str("\\r"),
                '\0' => q.push_str("\\0"),
                c if c.is_control() || c == '\u{feff}' => q.push_str(&format!("\\u{:04X}", c as u32)),
                c => q.push(c),
            }
        }
        q.push('"');
        self.put(&q);
    }

    fn literal(&mut self, s: &str, indent: usize) {
        let mut header = String::from("|");
        if s.starts_with(' ') || s.starts_with('\n') {
            header.push('2');
        }
        if !s.ends_with('\n') {
            header.push('-');
        } else if s.ends_with("\n\n") {
            header.push('+');
        }
        self.put(&header);
        let body = s.strip_suffix('\n').unwrap_or(s);
        for line in body.split('\n') {
            if line.is_empty() {
                self.out.push('\n');
                self.column = 0;
            } else {
                self.newline(indent);
                self.put(line);
            }
        }
    }

    fn scalar(&mut self, v: &Value, indent: usize) {
        match v {
            Value::Null => self.put("null"),
            Value::Bool(b) => self.put(if *b { "true" } else { "false" }),
            Value::Number(n) => self.put(&n.to_string()),
            Value::String(s) => self.string(s, indent, false),
            Value::Array(_) => self.put("[]"),
            Value::Object(_) => self.put("{}"),
        }
    }

    /// A mapping's entries at `indent`; the first key goes where the cursor is.
    fn mapping(&mut self, m: &crate::foundation::value::Map, indent: usize) {
        let mut keys: Vec<&str> = m.keys().map(|k| k.as_str()).collect();
        keys.sort_stable_by(|a, b| key_order(a, b));
        for (i, k) in keys.iter().enumerate() {
            if i > 0 {
                self.newline(indent);
            }
            self.string(k, indent + 2, true);
            self.put(":");
            let v = &m[*k];
            match v {
                Value::Object(c) if !c.is_empty() => {
                    self.newline(indent + 2);
                    self.mapping(c, indent + 2);
                }
                // A sequence in a mapping is not indented.
                Value::Array(a) if !a.is_empty() => {
                    self.newline(indent);
                    self.sequence(a, indent);
                }
                _ => {
                    self.put(" ");
                    self.scalar(v, indent + 2);
                }
            }
        }
    }

    fn sequence(&mut self, a: &[Value], indent: usize) {
        for (i, v) in a.iter().enumerate() {
            if i > 0 {
                self.newline(indent);
            }
            self.put("- ");
            match v {
                Value::Object(c) if !c.is_empty() => self.mapping(c, indent + 2),
                Value::Array(inner) if !inner.is_empty() => self.sequence(inner, indent + 2),
                _ => self.scalar(v, indent + 2),
            }
        }
    }
}

/// One YAML document for a JSON value, ending with a line break.
pub fn to_yaml(v: &Value) -> String {
    let mut w = Writer { out: String::new(), column: 0 };
    match v {
        Value::Object(m) if !m.is_empty() => w.mapping(m, 0),
        Value::Array(a) if !a.is_empty() => w.sequence(a, 0),
        other => w.scalar(other, 0),
    }
    w.out.push('\n');
    w.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::foundation::value::json;

    #[test]
    fn writes_what_kubectl_writes() {
        let v = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"annotations": {"deployment.kubernetes.io/revision": "1", "kubectl.kubernetes.io/last-applied-configuration": "{\"a\":1}\n"},
                "creationTimestamp": "2026-11-30T14:29:17Z", "generation": 1, "labels": {"app": "nginx"}, "name": "web", "resourceVersion": "88"},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"image": "nginx:1.25", "name": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}], "resources": {}}]}}},
            "status": {"conditions": [{"message": "containers with unready status: [nginx]", "status": "True", "type": "Ready"}], "empty": ""}
        });
        let want = "apiVersion: apps/v1
kind: Deployment
metadata:
  annotations:
    deployment.kubernetes.io/revision: \"1\"
    kubectl.kubernetes.io/last-applied-configuration: |
      {\"a\":1}
  creationTimestamp: \"2026-11-30T14:29:17Z\"
  generation: 1
  labels:
    app: nginx
  name: web
  resourceVersion: \"88\"
spec:
  replicas: 3
  template:
    spec:
      containers:
      - image: nginx:1.25
        name: nginx
        ports:
        - containerPort: 80
          protocol: TCP
        resources: {}
status:
  conditions:
  - message: 'containers with unready status: [nginx]'
    status: \"True\"
    type: Ready
  empty: \"\"
";
        assert_eq!(to_yaml(&v), want);
    }

    #[test]
    fn long_lines_fold_and_keys_sort_like_go_yaml() {
        let msg = "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient cpu.";
        let out = to_yaml(&json!({"message": msg}));
        assert_eq!(
            out,
            "message: '0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane:\n  }, 2 Insufficient cpu.'\n"
        );
        assert_eq!(key_order("item9", "item10"), Ordering::Less);
        assert_eq!(key_order("a_b", "aZ"), Ordering::Less);
        assert!(reads_as_non_string("yes") && reads_as_non_string("1e3") && reads_as_non_string("0755") && reads_as_non_string("2026-01-01"));
        assert!(!reads_as_non_string("nginx:1.25") && !reads_as_non_string("1.25.3") && !reads_as_non_string("10.244.1.2"));
    }
}
