//! The shell's builtins and the programs images carry (busybox applets, GNU coreutils,
//! wget, curl, nslookup, stress), each printing what the real one prints.

use super::{compile, Daemon, Flavour, Flow, Host, Process};
use crate::foundation::sim::{civil_from_days, epoch, Millis};
use crate::foundation::sort::Sort;

/// Shell builtins (`exit`, `export`, `set`, `cd`, `test`, `echo`, …).
/// Each builtin's work is a function of its own: every command goes through this match, and
/// the builtins a first visit's containers never run leave its download (crates/split).
pub fn builtin(p: &mut Process, host: &mut dyn Host, argv: &[String]) -> Option<Flow> {
    let args = &argv[1..];
    Some(match argv[0].as_str() {
        ":" | "true" => Flow::Status(0),
        "false" => Flow::Status(1),
        "exit" => {
            #[inline(never)]
            fn run(p: &mut Process, host: &mut dyn Host, argv: &[String]) -> Flow {
                let args = &argv[1..];
                let code = match args.first() {
                    None => p.status(),
                    Some(a) => match a.parse::<i64>() {
                        Ok(n) => (n & 255) as i32,
                        Err(_) => {
                            let msg = format!("{}: exit: Illegal number: {a}\n", p.me_name());
                            p.err(&msg, host);
                            2
                        }
                    },
                };
                Flow::Exit(code)
            }
            run(p, host, argv)
        }
        "return" => Flow::Return(args.first().and_then(|a| a.parse::<i64>().ok()).map(|n| (n & 255) as i32).unwrap_or(p.status())),
        "echo" => {
            #[inline(never)]
            fn run(p: &mut Process, host: &mut dyn Host, argv: &[String]) -> Flow {
                let args = &argv[1..];
                let mut newline = true;
                let mut escapes = p.flavour == Flavour::Dash;
                let mut k = 0;
                while let Some(a) = args.get(k) {
                    if a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| "neE".contains(c)) {
                        for c in a[1..].chars() {
                            match c {
                                'n' => newline = false,
                                'e' => escapes = true,
                                _ => escapes = false,
                            }
                        }
                        k += 1;
                    } else {
                        break;
                    }
                }
                let mut text = args[k..].join(" ");
                if escapes {
                    let (t, stop) = unescape(&text);
                    text = t;
                    if stop {
                        newline = false;
                    }
                }
                if newline {
                    text.push('\n');
                }
                p.out(&text, host);
                Flow::Status(0)
            }
            run(p, host, argv)
        }
        "printf" => {
            #[inline(never)]
            fn run(p: &mut Process, host: &mut dyn Host, argv: &[String]) -> Flow {
                let args = &argv[1..];
                let Some(fmt) = args.first() else {
                    p.err("printf: usage: printf format [arguments]\n", host);
                    return Flow::Status(2);
                };
                let out = printf(fmt, &args[1..]);
                p.out(&out, host);
                Flow::Status(0)
            }
            run(p, host, argv)
        }
        "export" | "readonly" | "local" | "declare" | "typeset" => {
            #[inline(never)]
            fn run(p: &mut Process, _host: &mut dyn Host, argv: &[String]) -> Flow {
                let args = &argv[1..];
                for a in args.iter().filter(|a| !a.starts_with('-')) {
                    match a.split_once('=') {
                        Some((k, v)) => {
                            if argv[0] == "export" {
                                p.export(k, Some(v.to_string()));
                            } else {
                                p.set_var(k, v.to_string());
                            }
                        }
                        None if argv[0] == "export" => p.export(a, None),
                        None => {
                            if p.var(a).is_none() {
                                p.set_var(a, String::new());
                            }
                        }
                    }
                }
                Flow::Status(0)
            }
            run(p, host, argv)
        }
        "unset" => {
            #[inline(never)]
            fn run(p: &mut Process, _host: &mut dyn Host, argv: &[String]) -> Flow {
                let args = &argv[1..];
                for a in args.iter().filter(|a| !a.starts_with('-')) {
                    p.unset(a);
                }
                Flow::Status(0)
            }
            run(p, host, argv)
        }
        "set" => {
            #[inline(never)]
            fn run(p: &mut Process, host: &mut dyn Host, argv: &[String]) -> Flow {
                let args = &argv[1..];
                let mut k = 0;
                while let Some(a) = args.get(k) {
                    let on = a.starts_with('-');
                    if !(on || a.starts_with('+')) || a == "--" {
                        break;
                    }
                    if &a[1..] == "o" {
                        k += 2;
                        continue;
                    }
                    for c in a[1..].chars() {
                        match c {
                            'e' => p.errexit = on,
                            'x' => p.xtrace = on,
                            _ => {}
                        }
                    }
                    k += 1;
                }
                if args.is_empty() {
                    let vars = p.all_vars();
                    for (k, v) in vars {
                        let line = format!("{k}='{v}'\n");
                        p.out(&line, host);
                    }
                }
                Flow::Status(0)
            }
            run(p, host, argv)
        }
        "shift" => {
            #[inline(never)]
            fn run(p: &mut Process, _host: &mut dyn Host, argv: &[String]) -> Flow {
                let args = &argv[1..];
                let n = args.first().and_then(|a| a.parse().ok()).unwrap_or(1);
                Flow::Status(if p.shift(n) { 0 } else { 1 })
            }
            run(p, host, argv)
        }
        "cd" => {
            #[inline(never)]
            fn run(p: &mut Process, host: &mut dyn Host, argv: &[String]) -> Flow {
                let args = &argv[1..];
                let dir = args.first().cloned().or_else(|| p.var("HOME").map(str::to_string)).unwrap_or_else(|| "/".into());
                let abs = p.abs(&dir);
                match host.kind(&abs) {
                    Some(true) => {
                        p.set_cwd(abs.clone());
                        p.set_var("PWD", abs);
                        Flow::Status(0)
                    }
                    other => {
                        let why = if other == Some(false) { "Not a directory" } else { "No such file or directory" };
                        let msg = match p.flavour {
                            Flavour::Busybox => format!("{}: cd: can't cd to {dir}: {why}\n", p.me_name()),
                            Flavour::Dash => format!("{}: 1: cd: can't cd to {dir}\n", p.me_name()),
                            Flavour::Bash => format!("{}: line 1: cd: {dir}: {why}\n", p.me_name()),
                        };
                        p.err(&msg, host);
                        Flow::Status(if p.flavour == Flavour::Dash { 2 } else { 1 })
                    }
                }
            }
            run(p, host, argv)
        }
        "pwd" => {
            #[inline(never)]
            fn run(p: &mut Process, host: &mut dyn Host, _argv: &[String]) -> Flow {
                let line = format!("{}\n", p.cwd());
                p.out(&line, host);
                Flow::Status(0)
            }
            run(p, host, argv)
        }
        "read" => {
            #[inline(never)]
            fn run(p: &mut Process, _host: &mut dyn Host, argv: &[String]) -> Flow {
                let args = &argv[1..];
                let names: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
                // From an exec session's stream: one whole line, waiting for it if need be.
                let input = if p.stdin_blocked() {
                    match p.take_line() {
                        Some(l) => l,
                        None => return Flow::Wait,
                    }
                } else {
                    match p.take_stdin() {
                        Some(i) => i,
                        None => return Flow::Status(1),
                    }
                };
                let (line, rest) = match input.split_once('\n') {
                    Some((l, r)) => (l.to_string(), Some(r.to_string())),
                    None => (input.clone(), None),
                };
                if let Some(r) = rest.filter(|r| !r.is_empty()) {
                    p.set_stdin(r);
                }
                if input.is_empty() {
                    return Flow::Status(1);
                }
                let mut words: Vec<&str> = line.split_whitespace().collect();
                let names = if names.is_empty() { vec![] } else { names };
                for (k, n) in names.iter().enumerate() {
                    let v = if k + 1 == names.len() {
                        std::mem::take(&mut words).join(" ")
                    } else if words.is_empty() {
                        String::new()
                    } else {
                        words.remove(0).to_string()
                    };
                    p.set_var(n, v);
                }
                if names.is_empty() {
                    p.set_var("REPLY", line);
                }
                Flow::Status(0)
            }
            run(p, host, argv)
        }
        "trap" => {
            #[inline(never)]
            fn run(p: &mut Process, _host: &mut dyn Host, argv: &[String]) -> Flow {
                let args = &argv[1..];
                if args.len() >= 2 {
                    for sig in &args[1..] {
                        let name = match sig.trim_start_matches("SIG") {
                            "15" | "TERM" => "TERM",
                            "2" | "INT" => "INT",
                            "0" | "EXIT" => "EXIT",
                            other => other,
                        };
                        p.set_trap(name.to_string(), args[0].clone());
                    }
                }
                Flow::Status(0)
            }
            run(p, host, argv)
        }
        "wait" => Flow::Status(0),
        "exec" => {
            #[inline(never)]
            fn run(p: &mut Process, host: &mut dyn Host, argv: &[String]) -> Flow {
                let args = &argv[1..];
                if args.is_empty() {
                    return Flow::Status(0);
                }
                let base = args[0].rsplit('/').next().unwrap_or(&args[0]).to_string();
                if let Some(d) = host.daemon(args) {
                    return p.serve(d, host);
                }
                match applet(p, host, &base, args) {
                    Some(Flow::Status(s)) => Flow::Exit(s),
                    Some(other) => other,
                    None => {
                        let msg = format!("{}: exec: {}: not found\n", p.me_name(), args[0]);
                        p.err(&msg, host);
                        Flow::Exit(127)
                    }
                }
            }
            run(p, host, argv)
        }
        "." | "source" => {
            #[inline(never)]
            fn run(p: &mut Process, host: &mut dyn Host, argv: &[String]) -> Flow {
                let args = &argv[1..];
                let Some(f) = args.first() else { return Flow::Status(0) };
                match host.read(&p.abs(f)) {
                    Ok(text) => script(p, host, &text, f, args[1..].to_vec()),
                    Err(e) => {
                        let msg = format!("{}: .: can't open '{f}': {}\n", p.me_name(), e.text());
                        p.err(&msg, host);
                        Flow::Status(2)
                    }
                }
            }
            run(p, host, argv)
        }
        "eval" => {
            #[inline(never)]
            fn run(p: &mut Process, host: &mut dyn Host, argv: &[String]) -> Flow {
                let args = &argv[1..];
                let text = args.join(" ");
                script(p, host, &text, "eval", p.positional().to_vec())
            }
            run(p, host, argv)
        }
        "test" | "[" | "[[" => {
            #[inline(never)]
            fn run(p: &mut Process, host: &mut dyn Host, argv: &[String]) -> Flow {
                let args = &argv[1..];
                let mut a: Vec<String> = args.to_vec();
                let close = if argv[0] == "[" { "]" } else { "]]" };
                if argv[0] != "test" {
                    if a.last().map(String::as_str) != Some(close) {
                        let msg = format!("{}: missing '{close}'\n", argv[0]);
                        p.err(&msg, host);
                        return Flow::Status(2);
                    }
                    a.pop();
                }
                match test(&a, p, host) {
                    Ok(b) => Flow::Status(if b { 0 } else { 1 }),
                    Err(e) => {
                        let msg = format!("{}: {e}\n", p.me_name());
                        p.err(&msg, host);
                        Flow::Status(2)
                    }
                }
            }
            run(p, host, argv)
        }
        "let" => {
            #[inline(never)]
            fn run(p: &mut Process, _host: &mut dyn Host, argv: &[String]) -> Flow {
                let args = &argv[1..];
                let mut last = 0;
                for a in args {
                    last = super::arith(a, p).unwrap_or(0);
                }
                Flow::Status(i32::from(last == 0))
            }
            run(p, host, argv)
        }
        _ => return None,
    })
}

fn script(p: &mut Process, host: &mut dyn Host, text: &str, name: &str, args: Vec<String>) -> Flow {
    match compile(text) {
        Ok(prog) => Flow::Script(prog, name.to_string(), args),
        Err(e) => {
            let msg = syntax_message(p, name, &e);
            p.err(&msg, host);
            Flow::Status(2)
        }
    }
}

/// The bytes a program's text stands for: raw bytes as themselves, the rest as UTF-8.
pub(super) fn text_bytes(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for c in s.chars() {
        match crate::apiserver::raw_byte(c) {
            Some(b) => out.push(b),
            None => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out
}

/// Bytes as a program's text: UTF-8 where they are, raw bytes elsewhere.
pub(super) fn bytes_text(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    for chunk in b.utf8_chunks() {
        out.push_str(chunk.valid());
        out.extend(chunk.invalid().iter().map(|x| crate::apiserver::byte_char(*x)));
    }
    out
}

/// CRC-32 (IEEE), as gzip's trailer holds it.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for b in data {
        crc ^= *b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// A gzip member (RFC 1952) holding `data` in deflate's stored blocks: what any gunzip
/// reads back, though larger than real gzip's compressed output.
fn gzip_encode(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    let mut chunks = data.chunks(0xffff).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(c) = chunks.next() {
        out.push(u8::from(chunks.peek().is_none()));
        let n = c.len() as u16;
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&(!n).to_le_bytes());
        out.extend_from_slice(c);
    }
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

/// The data of gzip members made of stored blocks; `Err` says why not (the words of the
/// caller's gunzip).
fn gzip_decode(b: &[u8]) -> Result<Vec<u8>, &'static str> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b.len() < i + 10 || b[i] != 0x1f || b[i + 1] != 0x8b {
            return Err("not in gzip format");
        }
        if b[i + 2] != 8 || b[i + 3] != 0 {
            return Err("unsupported gzip header (kubeloop reads its own gzip streams)");
        }
        i += 10;
        loop {
            let Some(&head) = b.get(i) else { return Err("unexpected end of file") };
            if head & 0b110 != 0 {
                return Err("compressed data kubeloop cannot inflate (it reads stored blocks, as its own gzip writes)");
            }
            let Some(len) = b.get(i + 1..i + 3).map(|l| u16::from_le_bytes([l[0], l[1]]) as usize) else { return Err("unexpected end of file") };
            let Some(data) = b.get(i + 5..i + 5 + len) else { return Err("unexpected end of file") };
            out.extend_from_slice(data);
            i += 5 + len;
            if head & 1 == 1 {
                break;
            }
        }
        let Some(trailer) = b.get(i..i + 8) else { return Err("unexpected end of file") };
        if u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]) != crc32(&out) {
            return Err("invalid compressed data--crc error");
        }
        i += 8;
    }
    Ok(out)
}

/// `gzip`, `gunzip -c`, `zcat`: stdin to stdout, or each file to FILE.gz (and back).
fn gzip(p: &mut Process, host: &mut dyn Host, name: &str, opts: &str, files: &[String]) -> Flow {
    let decompress = name != "gzip" || opts.contains('d');
    let tool = if decompress && name == "gzip" { "gzip" } else { name };
    let gnu = p.flavour.gnu();
    if files.is_empty() || files.iter().any(|f| f == "-") {
        if p.stdin_blocked() {
            return Flow::Wait;
        }
        let input = text_bytes(&p.take_stdin().unwrap_or_default());
        let out = if decompress { gzip_decode(&input) } else { Ok(gzip_encode(&input)) };
        return match out {
            Ok(data) => {
                p.out(&bytes_text(&data), host);
                Flow::Status(0)
            }
            Err(why) => {
                let msg = if gnu {
                    format!("gzip: stdin: {why}\n")
                } else {
                    format!("{tool}: {}\n", if why == "not in gzip format" { "invalid magic" } else { why })
                };
                p.err(&msg, host);
                Flow::Status(1)
            }
        };
    }
    let to_stdout = name == "zcat" || opts.contains('c');
    let mut status = 0;
    for f in files {
        let path = p.abs(f);
        let target = if decompress { path.strip_suffix(".gz").map(str::to_string) } else { Some(format!("{path}.gz")) };
        let Some(target) = target.filter(|_| to_stdout || decompress || !path.ends_with(".gz")) else {
            let why = if decompress { "unknown suffix -- ignored" } else { "already has .gz suffix -- unchanged" };
            p.err(&format!("{tool}: {f}: {why}\n"), host);
            status = if gnu { 2 } else { 1 };
            continue;
        };
        let data = match host.read(&path) {
            Ok(t) => text_bytes(&t),
            Err(e) => {
                let msg = if gnu { format!("gzip: {f}: {}\n", e.text()) } else { format!("{tool}: can't open '{f}': {}\n", e.text()) };
                p.err(&msg, host);
                status = 1;
                continue;
            }
        };
        let out = match if decompress { gzip_decode(&data) } else { Ok(gzip_encode(&data)) } {
            Ok(o) => bytes_text(&o),
            Err(why) => {
                p.err(&format!("{tool}: {f}: {why}\n"), host);
                status = 1;
                continue;
            }
        };
        if to_stdout {
            p.out(&out, host);
        } else if host.write(&target, &out, false).is_ok() {
            let _ = host.remove(&path, false);
        }
    }
    Flow::Status(status)
}

/// A syntax error as each shell words it.
pub fn syntax_message(p: &Process, _name: &str, e: &super::parse::SyntaxError) -> String {
    match p.flavour {
        Flavour::Busybox => format!("{}: line {}: syntax error: {}\n", p.me_name(), e.line, e.what),
        Flavour::Dash => format!("{}: {}: Syntax error: {}\n", p.me_name(), e.line, e.what),
        Flavour::Bash => format!("{}: -c: line {}: syntax error: {}\n", p.me_name(), e.line, e.what),
    }
}

/// Backslash escapes of `echo -e` and `printf`; `\c` stops output.
fn unescape(s: &str) -> (String, bool) {
    let mut out = String::new();
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('\\') => out.push('\\'),
            Some('a') => out.push('\u{7}'),
            Some('e') => out.push('\u{1b}'),
            Some('c') => return (out, true),
            Some('0') => {
                let mut v = 0u32;
                for _ in 0..3 {
                    match it.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            it.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(v).unwrap_or('?'));
            }
            Some(o) => {
                out.push('\\');
                out.push(o);
            }
            None => out.push('\\'),
        }
    }
    (out, false)
}

/// `printf FORMAT ARGS…`, the format reused while arguments remain.
pub fn printf(fmt: &str, args: &[String]) -> String {
    let mut out = String::new();
    let mut k = 0;
    loop {
        let chars: Vec<char> = fmt.chars().collect();
        let mut i = 0;
        let mut used = false;
        while i < chars.len() {
            let c = chars[i];
            if c == '\\' {
                let (t, _) = unescape(&chars[i..(i + 2).min(chars.len())].iter().collect::<String>());
                out.push_str(&t);
                i += 2;
                continue;
            }
            if c != '%' {
                out.push(c);
                i += 1;
                continue;
            }
            i += 1;
            let mut spec = String::new();
            while let Some(&d) = chars.get(i) {
                if "-+ 0#.123456789".contains(d) {
                    spec.push(d);
                    i += 1;
                } else {
                    break;
                }
            }
            let Some(&conv) = chars.get(i) else { break };
            i += 1;
            if conv == '%' {
                out.push('%');
                continue;
            }
            let arg = args.get(k).cloned().unwrap_or_default();
            if k < args.len() {
                used = true;
            }
            k += 1;
            let left = spec.starts_with('-');
            let zero = spec.starts_with('0');
            let width: usize = spec.trim_start_matches(['-', '0', '+', ' ', '#']).split('.').next().and_then(|w| w.parse().ok()).unwrap_or(0);
            let body = match conv {
                'd' | 'i' => arg.trim().parse::<i64>().unwrap_or(0).to_string(),
                'x' => format!("{:x}", arg.trim().parse::<i64>().unwrap_or(0)),
                'c' => arg.chars().next().map(String::from).unwrap_or_default(),
                'b' => unescape(&arg).0,
                _ => arg,
            };
            let pad = width.saturating_sub(body.chars().count());
            if left {
                out.push_str(&body);
                out.push_str(&" ".repeat(pad));
            } else {
                out.push_str(&(if zero { "0" } else { " " }).repeat(pad));
                out.push_str(&body);
            }
        }
        if !used || k >= args.len() {
            break;
        }
    }
    out
}

/// `test` expressions.
fn test(a: &[String], p: &mut Process, host: &mut dyn Host) -> Result<bool, String> {
    // -a and -o split the expression (lowest precedence).
    if let Some(i) = a.iter().rposition(|x| x == "-o" || x == "||") {
        if i > 0 && i + 1 < a.len() {
            return Ok(test(&a[..i], p, host)? || test(&a[i + 1..], p, host)?);
        }
    }
    if let Some(i) = a.iter().rposition(|x| x == "-a" || x == "&&") {
        if i > 0 && i + 1 < a.len() {
            return Ok(test(&a[..i], p, host)? && test(&a[i + 1..], p, host)?);
        }
    }
    let num = |s: &str| s.trim().parse::<i64>().map_err(|_| format!("{s}: integer expression expected"));
    match a {
        [] => Ok(false),
        [x] => Ok(!x.is_empty()),
        [n, rest @ ..] if n == "!" => Ok(!test(rest, p, host)?),
        [l, x, r] if l == "(" && r == ")" => Ok(!x.is_empty()),
        [op, f] if op.starts_with('-') && op.len() == 2 => {
            let path = p.abs(f);
            Ok(match op.as_str() {
                "-n" => !f.is_empty(),
                "-z" => f.is_empty(),
                "-e" => host.kind(&path).is_some(),
                "-f" => host.kind(&path) == Some(false),
                "-d" => host.kind(&path) == Some(true),
                "-s" => host.read(&path).is_ok_and(|c| !c.is_empty()),
                "-r" | "-w" | "-x" => host.kind(&path).is_some(),
                "-L" | "-h" => false,
                _ => return Err(format!("{op}: unary operator expected")),
            })
        }
        [l, op, r] => Ok(match op.as_str() {
            "=" | "==" => {
                if p.flavour == Flavour::Bash {
                    super::glob_match(r, l)
                } else {
                    l == r
                }
            }
            "!=" => l != r,
            "<" => l < r,
            ">" => l > r,
            "-eq" => num(l)? == num(r)?,
            "-ne" => num(l)? != num(r)?,
            "-lt" => num(l)? < num(r)?,
            "-le" => num(l)? <= num(r)?,
            "-gt" => num(l)? > num(r)?,
            "-ge" => num(l)? >= num(r)?,
            "=~" => regex_lite(r, l),
            _ => return Err(format!("{op}: binary operator expected")),
        }),
        _ => Err("too many arguments".into()),
    }
}

/// A fixed-string match with `^` and `$` anchors (what `grep` and `=~` get here).
fn regex_lite(pat: &str, s: &str) -> bool {
    let (start, pat) = match pat.strip_prefix('^') {
        Some(r) => (true, r),
        None => (false, pat),
    };
    let (end, pat) = match pat.strip_suffix('$') {
        Some(r) => (true, r),
        None => (false, pat),
    };
    match (start, end) {
        (true, true) => s == pat,
        (true, false) => s.starts_with(pat),
        (false, true) => s.ends_with(pat),
        (false, false) => s.contains(pat),
    }
}

/// Seconds in `sleep`'s arguments (`30`, `1.5`, `2m`, `inf`).
fn sleep_ms(args: &[String]) -> Result<Millis, String> {
    let mut total: Millis = 0;
    for a in args {
        let (num, mult) = match a.chars().last() {
            Some('s') => (&a[..a.len() - 1], 1000.0),
            Some('m') => (&a[..a.len() - 1], 60_000.0),
            Some('h') => (&a[..a.len() - 1], 3_600_000.0),
            Some('d') => (&a[..a.len() - 1], 86_400_000.0),
            _ => (a.as_str(), 1000.0),
        };
        if a == "inf" || a == "infinity" {
            return Ok(Millis::MAX / 4);
        }
        let v: f64 = num.parse().map_err(|_| a.clone())?;
        if !v.is_finite() || v < 0.0 {
            return Err(a.clone());
        }
        total = total.saturating_add((v * mult).min(1e15) as Millis);
    }
    Ok(total)
}

const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// `date` for simulated time `now`, in `+FORMAT` or the default `Thu Jan  1 00:00:00 UTC 2026`.
pub fn date(now: Millis, format: Option<&str>) -> String {
    let secs = epoch() + (now / 1000) as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let (hh, mm, ss) = (rem / 3600, (rem / 60) % 60, rem % 60);
    let wd = DAYS[(days + 4).rem_euclid(7) as usize];
    let mon = MONTHS[(m as usize).clamp(1, 12) - 1];
    let Some(f) = format else {
        return format!("{wd} {mon} {d:>2} {hh:02}:{mm:02}:{ss:02} UTC {y}");
    };
    let mut out = String::new();
    let mut it = f.chars();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('Y') => out.push_str(&y.to_string()),
            Some('m') => out.push_str(&format!("{m:02}")),
            Some('d') => out.push_str(&format!("{d:02}")),
            Some('H') => out.push_str(&format!("{hh:02}")),
            Some('M') => out.push_str(&format!("{mm:02}")),
            Some('S') => out.push_str(&format!("{ss:02}")),
            Some('s') => out.push_str(&secs.to_string()),
            Some('T') => out.push_str(&format!("{hh:02}:{mm:02}:{ss:02}")),
            Some('F') => out.push_str(&format!("{y}-{m:02}-{d:02}")),
            Some('a') => out.push_str(wd),
            Some('b') => out.push_str(mon),
            Some('Z') => out.push_str("UTC"),
            Some('N') => out.push_str(&format!("{:09}", (now % 1000) * 1_000_000)),
            Some('%') => out.push('%'),
            Some(o) => {
                out.push('%');
                out.push(o);
            }
            None => out.push('%'),
        }
    }
    out
}

/// A URL's host, port and path (`http://web:8080/x` → `web`, 8080, `/x`).
fn url(u: &str) -> (String, u16, String) {
    let (scheme, rest) = match u.split_once("://") {
        Some((s, r)) => (s.to_string(), r),
        None => ("http".to_string(), u),
    };
    let (hostport, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    let default = if scheme == "https" { 443 } else { 80 };
    match hostport.rsplit_once(':') {
        Some((h, p)) => (h.to_string(), p.parse().unwrap_or(default), path),
        None => (hostport.to_string(), default, path),
    }
}

fn resolve(host: &dyn Host, name: &str) -> Option<(String, String)> {
    if name.split('.').count() == 4 && name.split('.').all(|o| o.parse::<u8>().is_ok()) {
        return Some((name.to_string(), name.to_string()));
    }
    host.resolve(name)
}

/// Tools every image here has (busybox applets or GNU coreutils and friends), unless its
/// entry in the registry says it lacks them.
pub const TOOLS: &[&str] = &[
    "sh", "ash", "bash", "dash", "sleep", "date", "hostname", "whoami", "id", "uname", "env", "printenv", "cat", "rev", "head", "tail", "wc", "grep", "sort",
    "tac", "tee", "touch", "rm", "mkdir", "cp", "mv", "ls", "basename", "dirname", "seq", "expr", "yes", "wget", "curl", "nslookup", "killall", "pkill",
    "kill", "echo", "printf", "true", "false", "test", "[", "pwd", "gzip", "gunzip", "zcat", "uptime", "tar",
];

/// Programs only some images carry.
pub const IMAGE_PROGRAMS: &[&str] =
    &["nginx", "redis-cli", "mysqladmin", "mysql", "pg_isready", "stress", "perl", "python", "python3", "node", "ruby", "java", "php"];

/// Whether kubeloop knows a program by this name at all.
pub fn is_program(name: &str) -> bool {
    TOOLS.contains(&name) || IMAGE_PROGRAMS.contains(&name)
}

/// Programs found on `$PATH`. `name` is the base name of `argv[0]`.
pub fn applet(p: &mut Process, host: &mut dyn Host, name: &str, argv: &[String]) -> Option<Flow> {
    let args = &argv[1..];
    if is_program(name) && !host.has(name) {
        return None;
    }
    let gnu = p.flavour.gnu();
    let flags = |a: &[String]| -> (String, Vec<String>) {
        let mut f = String::new();
        let mut rest = Vec::new();
        for x in a {
            if x.len() > 1 && x.starts_with('-') && !x.starts_with("--") {
                f.push_str(&x[1..]);
            } else {
                rest.push(x.clone());
            }
        }
        (f, rest)
    };
    Some(match name {
        "sh" | "ash" | "bash" | "dash" => {
            let mut k = 0;
            let mut script_text = None;
            while let Some(a) = args.get(k) {
                if a == "-c" {
                    script_text = args.get(k + 1).cloned();
                    k += 2;
                    break;
                }
                if a.starts_with('-') {
                    k += 1;
                    continue;
                }
                break;
            }
            let (text, arg0, rest) = match script_text {
                Some(t) => {
                    let arg0 = args.get(k).cloned().unwrap_or_else(|| argv[0].clone());
                    (t, arg0, args.get(k + 1..).map(<[String]>::to_vec).unwrap_or_default())
                }
                None => match args.get(k) {
                    Some(file) => match host.read(&p.abs(file)) {
                        Ok(t) => (t, file.clone(), args[k + 1..].to_vec()),
                        Err(e) => {
                            let msg = format!("{}: can't open '{file}': {}\n", argv[0], e.text());
                            p.err(&msg, host);
                            return Some(Flow::Status(if gnu { 127 } else { 2 }));
                        }
                    },
                    // Commands from stdin: the whole stream, once it has ended.
                    None if p.stdin_blocked() => return Some(Flow::Wait),
                    None => (p.take_stdin().unwrap_or_default(), argv[0].clone(), vec![]),
                },
            };
            let _ = arg0;
            script(p, host, &text, &argv[0], rest)
        }
        "sleep" => match sleep_ms(args) {
            Ok(_) if args.is_empty() => {
                p.err("sleep: missing operand\n", host);
                Flow::Status(1)
            }
            Ok(ms) => Flow::Sleep(ms),
            Err(a) => {
                let msg = if gnu { format!("sleep: invalid time interval '{a}'\n") } else { format!("sleep: invalid number '{a}'\n") };
                p.err(&msg, host);
                Flow::Status(1)
            }
        },
        "date" => {
            let fmt = args.iter().find_map(|a| a.strip_prefix('+'));
            let line = format!("{}\n", date(host.now(), fmt));
            p.out(&line, host);
            Flow::Status(0)
        }
        "hostname" => {
            let line = format!("{}\n", host.hostname());
            p.out(&line, host);
            Flow::Status(0)
        }
        "uptime" => {
            // busybox's form: minutes under an hour, then H:MM, with days before.
            let up = host.now() / 60_000;
            let (days, hours, mins) = (up / (60 * 24), (up / 60) % 24, up % 60);
            let mut since = String::new();
            if days > 0 {
                since.push_str(&format!("{days} day{}, ", if days == 1 { "" } else { "s" }));
            }
            since.push_str(&if hours > 0 { format!("{hours:2}:{mins:02}") } else { format!("{mins} min") });
            let line = format!(" {} up {since},  0 users,  load average: 0.00, 0.00, 0.00\n", date(host.now(), Some("%H:%M:%S")));
            p.out(&line, host);
            Flow::Status(0)
        }
        "whoami" => {
            p.out("root\n", host);
            Flow::Status(0)
        }
        "id" => {
            p.out("uid=0(root) gid=0(root) groups=0(root)\n", host);
            Flow::Status(0)
        }
        "uname" => {
            let line = if args.iter().any(|a| a == "-a") { format!("Linux {} 6.8.0 #1 SMP x86_64 GNU/Linux\n", host.hostname()) } else { "Linux\n".into() };
            p.out(&line, host);
            Flow::Status(0)
        }
        "env" | "printenv" => {
            let env = p.env();
            if name == "printenv" && !args.is_empty() {
                let mut status = 0;
                for a in args {
                    match env.iter().find(|(k, _)| k == a) {
                        Some((_, v)) => {
                            let line = format!("{v}\n");
                            p.out(&line, host);
                        }
                        None => status = 1,
                    }
                }
                return Some(Flow::Status(status));
            }
            let mut text = String::new();
            for (k, v) in env {
                text.push_str(&format!("{k}={v}\n"));
            }
            p.out(&text, host);
            Flow::Status(0)
        }
        "cat" | "rev" | "head" | "tail" | "wc" | "grep" | "sort" | "tac" => text_tool(p, host, name, args),
        "gzip" | "gunzip" | "zcat" => {
            let (f, files) = flags(args);
            gzip(p, host, name, &f, &files)
        }
        "tar" => super::tar::tar(p, host, args),
        "tee" => {
            let (f, files) = flags(args);
            if p.stdin_blocked() {
                return Some(Flow::Wait);
            }
            let input = p.take_stdin().unwrap_or_default();
            for file in &files {
                let _ = host.write(&p.abs(file), &input, f.contains('a'));
            }
            p.out(&input, host);
            Flow::Status(0)
        }
        "touch" => {
            let (_, files) = flags(args);
            let mut status = 0;
            for f in &files {
                let path = p.abs(f);
                if host.kind(&path).is_some() {
                    continue;
                }
                if let Err(e) = host.write(&path, "", true) {
                    let msg = if gnu { format!("touch: cannot touch '{f}': {}\n", e.text()) } else { format!("touch: {f}: {}\n", e.text()) };
                    p.err(&msg, host);
                    status = 1;
                }
            }
            Flow::Status(status)
        }
        "rm" => {
            let (f, files) = flags(args);
            let (force, recursive) = (f.contains('f'), f.contains('r') || f.contains('R'));
            let mut status = 0;
            for file in &files {
                let path = p.abs(file);
                match host.kind(&path) {
                    None if force => {}
                    None => {
                        let msg = if gnu {
                            format!("rm: cannot remove '{file}': No such file or directory\n")
                        } else {
                            format!("rm: can't remove '{file}': No such file or directory\n")
                        };
                        p.err(&msg, host);
                        status = 1;
                    }
                    Some(true) if !recursive => {
                        let msg = if gnu { format!("rm: cannot remove '{file}': Is a directory\n") } else { format!("rm: '{file}' is a directory\n") };
                        p.err(&msg, host);
                        status = 1;
                    }
                    Some(_) => {
                        if let Err(e) = host.remove(&path, recursive) {
                            let msg =
                                if gnu { format!("rm: cannot remove '{file}': {}\n", e.text()) } else { format!("rm: can't remove '{file}': {}\n", e.text()) };
                            p.err(&msg, host);
                            status = 1;
                        }
                    }
                }
            }
            Flow::Status(status)
        }
        "mkdir" => {
            let (f, dirs) = flags(args);
            let mut status = 0;
            for d in &dirs {
                if let Err(e) = host.mkdir(&p.abs(d), f.contains('p')) {
                    let msg = if gnu {
                        format!("mkdir: cannot create directory '{d}': {}\n", e.text())
                    } else {
                        format!("mkdir: can't create directory '{d}': {}\n", e.text())
                    };
                    p.err(&msg, host);
                    status = 1;
                }
            }
            Flow::Status(status)
        }
        "cp" | "mv" => {
            let (_, files) = flags(args);
            if files.len() != 2 {
                let msg = format!("{name}: missing file operand\n");
                p.err(&msg, host);
                return Some(Flow::Status(1));
            }
            let (src, dst) = (p.abs(&files[0]), p.abs(&files[1]));
            let dst = if host.kind(&dst) == Some(true) { format!("{dst}/{}", src.rsplit('/').next().unwrap_or("")) } else { dst };
            match host.read(&src).and_then(|c| host.write(&dst, &c, false)) {
                Ok(()) => {
                    if name == "mv" {
                        let _ = host.remove(&src, false);
                    }
                    Flow::Status(0)
                }
                Err(e) => {
                    let msg = if gnu {
                        format!("{name}: cannot stat '{}': {}\n", files[0], e.text())
                    } else {
                        format!("{name}: can't stat '{}': {}\n", files[0], e.text())
                    };
                    p.err(&msg, host);
                    Flow::Status(1)
                }
            }
        }
        "ls" => {
            let (f, mut paths) = flags(args);
            if paths.is_empty() {
                paths.push(".".into());
            }
            let (long, all) = (f.contains('l'), f.contains('a'));
            let mut status = 0;
            let many = paths.len() > 1;
            let mut text = String::new();
            for (k, path) in paths.iter().enumerate() {
                let abs = p.abs(path);
                let entries = match host.kind(&abs) {
                    Some(false) => vec![(path.clone(), false, host.read(&abs).map(|c| c.len()).unwrap_or(0))],
                    Some(true) => {
                        let mut e: Vec<(String, bool, usize)> = host
                            .list(&abs)
                            .unwrap_or_default()
                            .into_iter()
                            .filter(|(n, _)| all || !n.starts_with('.'))
                            .map(|(n, d)| {
                                let size = if d { 4096 } else { host.read(&format!("{abs}/{n}")).map(|c| c.len()).unwrap_or(0) };
                                (n, d, size)
                            })
                            .collect();
                        if all {
                            e.insert(0, ("..".into(), true, 4096));
                            e.insert(0, (".".into(), true, 4096));
                        }
                        if many {
                            text.push_str(&format!("{}{path}:\n", if k > 0 { "\n" } else { "" }));
                        }
                        if long {
                            text.push_str(&format!("total {}\n", e.iter().map(|(_, d, s)| if *d { 4 } else { s.div_ceil(1024) * 4 }).sum::<usize>()));
                        }
                        e
                    }
                    None => {
                        let msg = if gnu {
                            format!("ls: cannot access '{path}': No such file or directory\n")
                        } else {
                            format!("ls: {path}: No such file or directory\n")
                        };
                        p.err(&msg, host);
                        status = if gnu { 2 } else { 1 };
                        continue;
                    }
                };
                let when = date(0, Some("%b %d %H:%M"));
                for (n, d, size) in entries {
                    if long {
                        let mode = if d { "drwxr-xr-x" } else { "-rw-r--r--" };
                        if gnu {
                            text.push_str(&format!("{mode} {} root root {size:>5} {when} {n}\n", if d { 2 } else { 1 }));
                        } else {
                            text.push_str(&format!("{mode}    {} root     root      {size:>9} {when} {n}\n", if d { 2 } else { 1 }));
                        }
                    } else {
                        text.push_str(&format!("{n}\n"));
                    }
                }
            }
            p.out(&text, host);
            Flow::Status(status)
        }
        "basename" => {
            let s = args.first().map(|a| a.trim_end_matches('/').rsplit('/').next().unwrap_or("").to_string()).unwrap_or_default();
            let s = match args.get(1) {
                Some(suf) => s.strip_suffix(suf.as_str()).unwrap_or(&s).to_string(),
                None => s,
            };
            let line = format!("{s}\n");
            p.out(&line, host);
            Flow::Status(0)
        }
        "dirname" => {
            let a = args.first().cloned().unwrap_or_default();
            let d = match a.trim_end_matches('/').rsplit_once('/') {
                Some(("", _)) => "/".to_string(),
                Some((d, _)) => d.to_string(),
                None => ".".to_string(),
            };
            let line = format!("{d}\n");
            p.out(&line, host);
            Flow::Status(0)
        }
        "seq" => {
            let n: Vec<i64> = args.iter().filter_map(|a| a.parse().ok()).collect();
            let (first, step, last) = match n.as_slice() {
                [l] => (1, 1, *l),
                [f, l] => (*f, 1, *l),
                [f, s, l] => (*f, *s, *l),
                _ => return Some(Flow::Status(1)),
            };
            let mut text = String::new();
            let mut v = first;
            let mut count = 0;
            while step != 0 && (step > 0 && v <= last || step < 0 && v >= last) && count < 100_000 {
                text.push_str(&format!("{v}\n"));
                v = v.saturating_add(step);
                count += 1;
            }
            p.out(&text, host);
            Flow::Status(0)
        }
        "expr" => {
            let text = args.join(" ");
            match super::arith(&text, p) {
                Ok(v) => {
                    let line = format!("{v}\n");
                    p.out(&line, host);
                    Flow::Status(i32::from(v == 0))
                }
                Err(_) => {
                    p.err("expr: syntax error\n", host);
                    Flow::Status(2)
                }
            }
        }
        "yes" => {
            let word = if args.is_empty() { "y".to_string() } else { args.join(" ") };
            let text = format!("{word}\n").repeat(1000);
            p.out(&text, host);
            Flow::Again(super::BUSY_SLICE_MS)
        }
        "wget" => wget(p, host, args),
        "curl" => curl(p, host, args),
        "nslookup" => {
            let Some(q) = args.iter().find(|a| !a.starts_with('-')) else {
                p.err("BusyBox v1.36.1 multi-call binary.\n\nUsage: nslookup [-type=QUERY_TYPE] [-debug] HOST [DNS_SERVER]\n", host);
                return Some(Flow::Status(1));
            };
            let mut text = "Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\n".to_string();
            match resolve(host, q) {
                Some((fqdn, addr)) => {
                    text.push_str(&format!("Name:\t{fqdn}\nAddress: {addr}\n\n"));
                    p.out(&text, host);
                    Flow::Status(0)
                }
                None => {
                    text.push_str(&format!("** server can't find {q}: NXDOMAIN\n\n"));
                    p.out(&text, host);
                    Flow::Status(1)
                }
            }
        }
        "killall" | "pkill" | "kill" => {
            let mut sig = 15;
            let mut names = Vec::new();
            let mut it = args.iter();
            while let Some(a) = it.next() {
                if a == "-s" {
                    sig = it.next().map(|s| signal_number(s)).unwrap_or(15);
                } else if let Some(s) = a.strip_prefix('-') {
                    sig = signal_number(s);
                } else {
                    names.push(a.clone());
                }
            }
            let mut status = 0;
            for n in &names {
                if !host.signal(n, sig) {
                    if sig != 0 || name == "kill" {
                        let msg = if name == "kill" {
                            format!("{}: kill: ({n}) - No such process\n", p.me_name())
                        } else {
                            format!("{name}: {n}: no process killed\n")
                        };
                        p.err(&msg, host);
                    }
                    status = 1;
                }
            }
            Flow::Status(status)
        }
        "nginx" if args.first().map(String::as_str) == Some("-s") => {
            let sig = match args.get(1).map(String::as_str) {
                Some("quit") => 3,
                Some("stop") => 15,
                Some("reload" | "reopen") => 1,
                _ => {
                    p.err("nginx: invalid option: \"-s\"\n", host);
                    return Some(Flow::Status(1));
                }
            };
            if host.signal("nginx", sig) {
                let line = format!("{} [notice] 1#1: signal process started\n", date(host.now(), Some("%Y/%m/%d %H:%M:%S")));
                p.err(&line, host);
                Flow::Status(0)
            } else {
                let line = format!("{} [error] 1#1: invalid PID number \"\" in \"/run/nginx.pid\"\n", date(host.now(), Some("%Y/%m/%d %H:%M:%S")));
                p.err(&line, host);
                Flow::Status(1)
            }
        }
        "redis-cli" => {
            if host.signal("redis-server", 0) {
                p.out("PONG\n", host);
                Flow::Status(0)
            } else {
                p.err("Could not connect to Redis at 127.0.0.1:6379: Connection refused\n", host);
                Flow::Status(1)
            }
        }
        "mysqladmin" | "mysql" => {
            if host.signal("mysqld", 0) {
                if name == "mysqladmin" {
                    p.out("mysqld is alive\n", host);
                } else if args.iter().any(|a| a.contains("SELECT 1")) {
                    p.out("1\n1\n", host);
                }
                Flow::Status(0)
            } else {
                let msg = format!("{name}: connect to server at '127.0.0.1' failed\nerror: 'Can't connect to MySQL server on '127.0.0.1' (111)'\n");
                p.err(&msg, host);
                Flow::Status(1)
            }
        }
        "pg_isready" => {
            if host.signal("postgres", 0) {
                p.out("/var/run/postgresql:5432 - accepting connections\n", host);
                Flow::Status(0)
            } else {
                p.out("/var/run/postgresql:5432 - no response\n", host);
                Flow::Status(2)
            }
        }
        "stress" => stress(p, host, args),
        "perl" => perl(p, host, args),
        "python" | "python3" | "node" | "ruby" | "java" | "php" => {
            let msg = format!("kubeloop: {name} programs are not simulated (only sh and bash scripts and the programs listed in the README run)\n");
            p.err(&msg, host);
            Flow::Status(127)
        }
        _ => return None,
    })
}

fn signal_number(s: &str) -> i32 {
    match s.trim_start_matches("SIG") {
        "0" => 0,
        "1" | "HUP" => 1,
        "2" | "INT" => 2,
        "3" | "QUIT" => 3,
        "9" | "KILL" => 9,
        "15" | "TERM" => 15,
        other => other.parse().unwrap_or(15),
    }
}

/// `cat`, `rev`, `head`, `tail`, `wc`, `grep`, `sort`, `tac`: read files or stdin.
fn text_tool(p: &mut Process, host: &mut dyn Host, name: &str, args: &[String]) -> Flow {
    let gnu = p.flavour.gnu();
    let mut n: Option<usize> = None;
    let mut opts = String::new();
    let mut files: Vec<String> = Vec::new();
    let mut pattern: Option<String> = None;
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        if a == "-n" && (name == "head" || name == "tail") {
            n = it.next().and_then(|v| v.trim_start_matches('+').parse().ok());
        } else if a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| c.is_ascii_digit()) && (name == "head" || name == "tail") {
            n = a[1..].parse().ok();
        } else if a == "-e" && name == "grep" {
            pattern = it.next().cloned();
        } else if a.len() > 1 && a.starts_with('-') {
            opts.push_str(&a[1..]);
        } else if name == "grep" && pattern.is_none() {
            pattern = Some(a.clone());
        } else {
            files.push(a.clone());
        }
    }
    let follow = name == "tail" && (opts.contains('f') || opts.contains('F'));
    if follow {
        let Some(file) = files.first().cloned() else { return Flow::Again(1000) };
        let here = p.here();
        let path = p.abs(&file);
        let content = host.read(&path);
        let printed = p.follow_state().get(&here).copied();
        match (content, printed) {
            (Ok(c), None) => {
                let lines: Vec<&str> = c.lines().collect();
                let skip = lines.len().saturating_sub(n.unwrap_or(10));
                let mut text = lines[skip..].join("\n");
                if !text.is_empty() {
                    text.push('\n');
                }
                p.out(&text, host);
                p.follow_state().insert(here, c.len());
            }
            (Ok(c), Some(done)) if c.len() > done => {
                let new = c.get(done..).unwrap_or("").to_string();
                p.out(&new, host);
                p.follow_state().insert(here, c.len());
            }
            (Ok(c), Some(done)) if c.len() < done => {
                let msg = format!("tail: {file}: file truncated\n");
                p.err(&msg, host);
                p.out(&c, host);
                p.follow_state().insert(here, c.len());
            }
            (Err(_), None) => {
                let msg = if gnu {
                    format!("tail: cannot open '{file}' for reading: No such file or directory\n")
                } else {
                    format!("tail: can't open '{file}': No such file or directory\n")
                };
                p.err(&msg, host);
                p.follow_state().insert(here, 0);
            }
            _ => {}
        }
        if p.instant() {
            return Flow::Status(0);
        }
        return Flow::Again(1000);
    }
    if name == "tail" && files.iter().any(|f| f == "/dev/zero") {
        p.memory = u64::MAX / 2;
        return Flow::Oom;
    }
    let mut inputs: Vec<(String, String)> = Vec::new();
    let mut status = 0;
    if (files.is_empty() || files.iter().any(|f| f == "-")) && p.stdin_blocked() {
        // An exec session's stream: `cat` copies what has come as it comes; the others
        // need all of it, so they wait for its end.
        if name == "cat" && opts.is_empty() && files.len() <= 1 {
            let text = p.take_available();
            p.out(&text, host);
        }
        return Flow::Wait;
    }
    if files.is_empty() {
        inputs.push(("-".into(), p.take_stdin().unwrap_or_default()));
    }
    for f in &files {
        if f == "-" {
            inputs.push(("-".into(), p.take_stdin().unwrap_or_default()));
            continue;
        }
        match host.read(&p.abs(f)) {
            Ok(c) => inputs.push((f.clone(), c)),
            Err(e) => {
                let msg = match (gnu, name) {
                    (true, _) => format!("{name}: {f}: {}\n", e.text()),
                    (false, "cat") if e == super::FsError::IsDir => "cat: read error: Is a directory\n".to_string(),
                    (false, _) => format!("{name}: can't open '{f}': {}\n", e.text()),
                };
                p.err(&msg, host);
                status = if name == "grep" { 2 } else { 1 };
            }
        }
    }
    let mut text = String::new();
    match name {
        "cat" => {
            for (_, c) in &inputs {
                text.push_str(c);
            }
        }
        "rev" => {
            for (_, c) in &inputs {
                for l in c.lines() {
                    text.push_str(&l.chars().rev().collect::<String>());
                    text.push('\n');
                }
            }
        }
        "tac" => {
            for (_, c) in &inputs {
                for l in c.lines().rev() {
                    text.push_str(l);
                    text.push('\n');
                }
            }
        }
        "sort" => {
            let mut lines: Vec<&str> = inputs.iter().flat_map(|(_, c)| c.lines()).collect();
            lines.sort_stable();
            if opts.contains('r') {
                lines.reverse();
            }
            if opts.contains('u') {
                lines.dedup();
            }
            for l in lines {
                text.push_str(l);
                text.push('\n');
            }
        }
        "head" | "tail" => {
            let k = n.unwrap_or(10);
            for (_, c) in &inputs {
                let lines: Vec<&str> = c.lines().collect();
                let sel = if name == "head" { &lines[..k.min(lines.len())] } else { &lines[lines.len().saturating_sub(k)..] };
                for l in sel {
                    text.push_str(l);
                    text.push('\n');
                }
            }
        }
        "wc" => {
            for (f, c) in &inputs {
                let (l, w, b) = (c.matches('\n').count(), c.split_whitespace().count(), c.len());
                let mut cols = Vec::new();
                if opts.is_empty() || opts.contains('l') {
                    cols.push(l);
                }
                if opts.is_empty() || opts.contains('w') {
                    cols.push(w);
                }
                if opts.is_empty() || opts.contains('c') {
                    cols.push(b);
                }
                let nums: Vec<String> = cols.iter().map(|v| if cols.len() == 1 && f == "-" { v.to_string() } else { format!("{v:>7}") }).collect();
                let mut line = nums.join(" ");
                if f != "-" {
                    line = format!("{} {f}", line.trim_start());
                }
                text.push_str(&line);
                text.push('\n');
            }
        }
        _ => {
            // grep
            let Some(pat) = pattern else {
                p.err("BusyBox v1.36.1 multi-call binary.\n\nUsage: grep [-HhnlLoqvsrRiwFE] [-m N] [-A|B|C N] { PATTERN | -e PATTERN... | -f FILE... } [FILE]...\n", host);
                return Flow::Status(2);
            };
            let (invert, quiet, count, icase) = (opts.contains('v'), opts.contains('q'), opts.contains('c'), opts.contains('i'));
            let mut hits = 0;
            for (f, c) in &inputs {
                for l in c.lines() {
                    let m = if icase { regex_lite(&pat.to_ascii_lowercase(), &l.to_ascii_lowercase()) } else { regex_lite(&pat, l) };
                    if m != invert {
                        hits += 1;
                        if !quiet && !count {
                            if inputs.len() > 1 {
                                text.push_str(&format!("{f}:"));
                            }
                            text.push_str(l);
                            text.push('\n');
                        }
                    }
                }
            }
            if count {
                text.push_str(&format!("{hits}\n"));
            }
            p.out(&text, host);
            return Flow::Status(if status == 2 {
                2
            } else if hits > 0 {
                0
            } else {
                1
            });
        }
    }
    p.out(&text, host);
    Flow::Status(status)
}

fn fetch(host: &dyn Host, u: &str) -> Result<(String, String, u16, u16, String), FetchError> {
    let (name, port, path) = url(u);
    let (_, addr) = resolve(host, &name).ok_or(FetchError::Dns(name.clone()))?;
    let (code, body) = host.http(&name, &addr, port, &path).map_err(|e| FetchError::Connect(name.clone(), addr.clone(), port, e))?;
    Ok((name, addr, port, code, body))
}

enum FetchError {
    Dns(String),
    Connect(String, String, u16, String),
}

pub fn reason_phrase(code: u16) -> &'static str {
    match code {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        403 => "Forbidden",
        404 => "Not Found",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

/// busybox `wget`.
fn wget(p: &mut Process, host: &mut dyn Host, args: &[String]) -> Flow {
    let mut quiet = false;
    let mut out_file: Option<String> = None;
    let mut spider = false;
    let mut urls = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--spider" {
            spider = true;
        } else if let Some(v) = a.strip_prefix("--output-document=") {
            out_file = Some(v.to_string());
        } else if a.starts_with("--") {
            continue;
        } else if let Some(cluster) = a.strip_prefix('-').filter(|c| !c.is_empty()) {
            let chars: Vec<char> = cluster.chars().collect();
            let mut k = 0;
            while k < chars.len() {
                match chars[k] {
                    'q' => quiet = true,
                    'O' | 'T' | 'U' | 'Y' | 'P' => {
                        let rest: String = chars[k + 1..].iter().collect();
                        let v = if rest.is_empty() { it.next().cloned().unwrap_or_default() } else { rest };
                        if chars[k] == 'O' {
                            out_file = Some(v);
                        }
                        break;
                    }
                    _ => {}
                }
                k += 1;
            }
        } else {
            urls.push(a.clone());
        }
    }
    let Some(u) = urls.first() else {
        p.err("BusyBox v1.36.1 multi-call binary.\n\nUsage: wget [-cqS] [--spider] [-O FILE] [-o LOGFILE] [--header STR]\n\t[--post-data STR | --post-file FILE] [-Y on/off]\n\t[-P DIR] [-U AGENT] [-T SEC] URL...\n", host);
        return Flow::Status(1);
    };
    match fetch(host, u) {
        Err(FetchError::Dns(n)) => {
            let msg = format!("wget: bad address '{n}'\n");
            p.err(&msg, host);
            Flow::Status(1)
        }
        Err(FetchError::Connect(_, addr, _, e)) => {
            let msg = format!("wget: can't connect to remote host ({addr}): {e}\n");
            p.err(&msg, host);
            Flow::Status(1)
        }
        Ok((name, addr, port, code, body)) => {
            if !quiet {
                let msg = format!("Connecting to {name} ({addr}:{port})\n");
                p.err(&msg, host);
            }
            if code >= 400 {
                let msg = format!("wget: server returned error: HTTP/1.1 {code} {}\n", reason_phrase(code));
                p.err(&msg, host);
                return Flow::Status(1);
            }
            if spider {
                if !quiet {
                    p.err("remote file exists\n", host);
                }
                return Flow::Status(0);
            }
            let (_, _, path) = url(u);
            let file = out_file.unwrap_or_else(|| path.rsplit('/').next().filter(|s| !s.is_empty()).unwrap_or("index.html").to_string());
            let bar = |who: &str| format!("{who:<20} 100% |********************************| {:>5}  0:00:00 ETA\n", body.len());
            if file == "-" {
                if !quiet {
                    p.err("writing to stdout\n", host);
                }
                p.out(&body, host);
                if !quiet {
                    let b = bar("-");
                    p.err(&b, host);
                    p.err("written to stdout\n", host);
                }
                return Flow::Status(0);
            }
            if let Err(e) = host.write(&p.abs(&file), &body, false) {
                let msg = format!("wget: can't open '{file}': {}\n", e.text());
                p.err(&msg, host);
                return Flow::Status(1);
            }
            if !quiet {
                let msg = format!("saving to '{file}'\n{}'{file}' saved\n", bar(&file));
                p.err(&msg, host);
            }
            Flow::Status(0)
        }
    }
}

/// `curl`.
fn curl(p: &mut Process, host: &mut dyn Host, args: &[String]) -> Flow {
    let mut silent = false;
    let mut fail = false;
    let mut head = false;
    let mut show_error = false;
    let mut out_file: Option<String> = None;
    let mut urls = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--silent" => silent = true,
            "--fail" => fail = true,
            "--head" => head = true,
            "--show-error" => show_error = true,
            "--output" => out_file = it.next().cloned(),
            "-m" | "--max-time" | "--connect-timeout" | "-H" | "--header" | "-X" | "-d" | "--data" | "-w" | "-u" | "-A" => {
                it.next();
            }
            s if s.starts_with("--") => {}
            s if s.starts_with('-') && s.len() > 1 => {
                for c in s[1..].chars() {
                    match c {
                        's' => silent = true,
                        'f' => fail = true,
                        'I' => head = true,
                        'S' => show_error = true,
                        'o' => out_file = it.next().cloned(),
                        _ => {}
                    }
                }
            }
            _ => urls.push(a.clone()),
        }
    }
    let Some(u) = urls.first() else {
        p.err("curl: try 'curl --help' or 'curl --manual' for more information\n", host);
        return Flow::Status(2);
    };
    let loud = !silent || show_error;
    match fetch(host, u) {
        Err(FetchError::Dns(n)) => {
            if loud {
                let msg = format!("curl: (6) Could not resolve host: {n}\n");
                p.err(&msg, host);
            }
            Flow::Status(6)
        }
        Err(FetchError::Connect(n, _, port, _)) => {
            if loud {
                let msg = format!("curl: (7) Failed to connect to {n} port {port} after 0 ms: Couldn't connect to server\n");
                p.err(&msg, host);
            }
            Flow::Status(7)
        }
        Ok((_, _, _, code, body)) => {
            if fail && code >= 400 {
                if loud {
                    let msg = format!("curl: (22) The requested URL returned error: {code}\n");
                    p.err(&msg, host);
                }
                return Flow::Status(22);
            }
            let text = if head { format!("HTTP/1.1 {code} {}\r\ncontent-length: {}\r\n\r\n", reason_phrase(code), body.len()) } else { body };
            match out_file {
                Some(f) if f != "-" => {
                    if let Err(e) = host.write(&p.abs(&f), &text, false) {
                        let msg = format!("curl: (23) Failure writing output to destination: {}\n", e.text());
                        p.err(&msg, host);
                        return Flow::Status(23);
                    }
                }
                _ => p.out(&text, host),
            }
            Flow::Status(0)
        }
    }
}

fn size_bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()?.to_ascii_uppercase() {
        'B' => (&s[..s.len() - 1], 1),
        'K' => (&s[..s.len() - 1], 1 << 10),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

/// `stress` (the `polinux/stress` image the Kubernetes docs use to exceed memory limits).
fn stress(p: &mut Process, host: &mut dyn Host, args: &[String]) -> Flow {
    let (mut cpu, mut io, mut vm, mut hdd) = (0u64, 0u64, 0u64, 0u64);
    let mut vm_bytes: u64 = 256 << 20;
    let mut timeout: Option<Millis> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--cpu" | "-c" => cpu = it.next().and_then(|x| x.parse().ok()).unwrap_or(1),
            "--io" | "-i" => io = it.next().and_then(|x| x.parse().ok()).unwrap_or(1),
            "--vm" | "-m" => vm = it.next().and_then(|x| x.parse().ok()).unwrap_or(1),
            "--hdd" | "-d" => hdd = it.next().and_then(|x| x.parse().ok()).unwrap_or(1),
            "--vm-bytes" => vm_bytes = it.next().and_then(|x| size_bytes(x)).unwrap_or(vm_bytes),
            "--timeout" | "-t" => timeout = it.next().and_then(|x| sleep_ms(std::slice::from_ref(x)).ok()),
            _ => {}
        }
    }
    let here = p.here();
    if p.follow_state().contains_key(&here) {
        let line = format!("stress: info: [1] successful run completed in {}s\n", timeout.unwrap_or(0) / 1000);
        p.out(&line, host);
        p.follow_state().remove(&here);
        return Flow::Status(0);
    }
    let line = format!("stress: info: [1] dispatching hogs: {cpu} cpu, {io} io, {vm} vm, {hdd} hdd\n");
    p.out(&line, host);
    p.memory = p.memory.saturating_add(vm.saturating_mul(vm_bytes));
    if host.memory_limit().is_some_and(|l| p.memory > l) {
        return Flow::Oom;
    }
    match timeout {
        Some(t) => {
            p.follow_state().insert(here, 1);
            Flow::Again(t)
        }
        None => Flow::Serve(Daemon { name: "stress".into(), lines: vec![], ports: vec![0], memory: 0, handles_sigterm: true }),
    }
}

/// `perl`: the Kubernetes docs' Job computes π with `perl -Mbignum=bpi -wle 'print bpi(2000)'`.
fn perl(p: &mut Process, host: &mut dyn Host, args: &[String]) -> Flow {
    let text = args.iter().filter(|a| !a.starts_with('-')).cloned().collect::<Vec<_>>().join(" ");
    let text = text.trim_matches('"').trim_matches('\'');
    let bignum = args.iter().any(|a| a.contains("bignum=bpi") || a.contains("bignum"));
    if let Some(n) = text.strip_prefix("print bpi(").and_then(|r| r.strip_suffix(')')).and_then(|n| n.trim().parse::<usize>().ok()) {
        if bignum && (1..=10_000).contains(&n) {
            let line = format!("{}\n", pi_digits(n));
            p.out(&line, host);
            return Flow::Status(0);
        }
    }
    p.err("kubeloop: perl programs are not simulated (only the docs' `print bpi(N)`)\n", host);
    Flow::Status(127)
}

/// π to `n` significant digits, rounded (Math::BigFloat's `bpi(n)`), by Machin's formula
/// in fixed point over base-10^9 limbs.
pub fn pi_digits(n: usize) -> String {
    let digits = n + 10;
    let limbs = digits / 9 + 2;
    // Fixed point numbers: limb 0 is the integer part, then base-1e9 fractions.
    fn div_small(a: &mut [u64], d: u64) {
        let mut rem = 0u64;
        for x in a.iter_mut() {
            let cur = rem * 1_000_000_000 + *x;
            *x = cur / d;
            rem = cur % d;
        }
    }
    fn add(a: &mut [u64], b: &[u64]) {
        let mut carry = 0;
        for i in (0..a.len()).rev() {
            let s = a[i] + b[i] + carry;
            a[i] = s % 1_000_000_000;
            carry = s / 1_000_000_000;
        }
    }
    fn sub(a: &mut [u64], b: &[u64]) {
        let mut borrow = 0i64;
        for i in (0..a.len()).rev() {
            let mut s = a[i] as i64 - b[i] as i64 - borrow;
            borrow = 0;
            if s < 0 {
                s += 1_000_000_000;
                borrow = 1;
            }
            a[i] = s as u64;
        }
    }
    fn is_zero(a: &[u64]) -> bool {
        a.iter().all(|x| *x == 0)
    }
    // arctan(1/x) = sum (-1)^k / ((2k+1) x^(2k+1))
    let arctan = |x: u64| -> Vec<u64> {
        let mut sum = vec![0u64; limbs];
        let mut power = vec![0u64; limbs];
        power[0] = 1;
        div_small(&mut power, x);
        let mut k = 0u64;
        loop {
            let mut term = power.clone();
            div_small(&mut term, 2 * k + 1);
            if is_zero(&term) {
                break;
            }
            if k.is_multiple_of(2) {
                add(&mut sum, &term);
            } else {
                sub(&mut sum, &term);
            }
            div_small(&mut power, x * x);
            k += 1;
        }
        sum
    };
    let mut a = arctan(5);
    for x in a.iter_mut() {
        *x *= 16;
    }
    let mut b = arctan(239);
    for x in b.iter_mut() {
        *x *= 4;
    }
    // Normalise carries after the multiplications.
    let norm = |v: &mut Vec<u64>| {
        let mut carry = 0;
        for i in (0..v.len()).rev() {
            let s = v[i] + carry;
            v[i] = s % 1_000_000_000;
            carry = s / 1_000_000_000;
        }
        v[0] += carry * 1_000_000_000;
    };
    norm(&mut a);
    norm(&mut b);
    sub(&mut a, &b);
    let mut s = a[0].to_string();
    for limb in &a[1..] {
        s.push_str(&format!("{limb:09}"));
    }
    // s is "3" followed by the fraction digits; round to n significant digits.
    let mut d: Vec<u8> = s.bytes().map(|c| c - b'0').collect();
    d.truncate(n + 1);
    let round_up = d.get(n).is_some_and(|x| *x >= 5);
    d.truncate(n);
    if round_up {
        let mut i = d.len();
        while i > 0 {
            i -= 1;
            if d[i] == 9 {
                d[i] = 0;
            } else {
                d[i] += 1;
                break;
            }
        }
    }
    let mut out = String::new();
    for (i, x) in d.iter().enumerate() {
        if i == 1 {
            out.push('.');
        }
        out.push((b'0' + x) as char);
    }
    out
}
