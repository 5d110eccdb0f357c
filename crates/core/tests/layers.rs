//! The core's layers point one way. Each top-level folder of `crates/core/src` is a layer
//! of the system it simulates, and a file may name only its own layer and the layers it
//! is allowed to stand on (ARCHITECTURE.md, "Layers"). This test reads every source file,
//! finds every path that reaches the crate root (`crate::`, `$crate::`, or `super::`
//! climbing out of its folder) outside comments and string literals, and fails on any
//! path into a layer the file may not use, naming the file and line.

use std::path::{Path, PathBuf};

/// Each layer and the layers beneath it that it may use. kubectl and the loops are both
/// clients of the API server and know nothing of each other.
const LAYERS: &[(&str, &[&str])] = &[
    ("foundation", &[]),
    ("apiserver", &["foundation"]),
    ("loops", &["foundation", "apiserver"]),
    ("kubectl", &["foundation", "apiserver"]),
    ("cluster", &["foundation", "apiserver", "loops", "kubectl"]),
    ("sandbox", &["foundation", "apiserver", "loops", "kubectl", "cluster"]),
];

/// Items exported at the crate root by `#[macro_export]` and the layer that defines them.
const ROOT_MACROS: &[(&str, &str)] = &[("json", "foundation"), ("json_items", "foundation"), ("json_entries", "foundation")];

#[derive(Debug, PartialEq)]
struct Reference {
    line: usize,
    /// The first segment below the crate root: a layer, or a root macro.
    root: String,
}

/// Rust source with comments and the contents of string and char literals blanked out
/// (newlines kept, so lines still count).
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if c == b'r' && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#')) && !is_ident(b.get(i.wrapping_sub(1)).copied()) {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(c);
                i += 1;
                continue;
            }
            out.resize(out.len() + (j + 1 - i), b' ');
            i = j + 1;
            while i < b.len() {
                if b[i] == b'"' && b[i + 1..].iter().take(hashes).filter(|&&h| h == b'#').count() == hashes {
                    out.resize(out.len() + 1 + hashes, b' ');
                    i += 1 + hashes;
                    break;
                }
                blank(&mut out, b[i]);
                i += 1;
            }
        } else if c == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    out.push(b' ');
                    i += 1;
                }
                if i < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
            out.push(b' ');
            i += 1;
        } else if c == b'\'' && b.get(i + 2) == Some(&b'\'') {
            out.extend_from_slice(b"   ");
            i += 3;
        } else if c == b'\'' && b.get(i + 1) == Some(&b'\\') {
            // '\n', '\'', '\u{..}'
            let end = b[i + 2..].iter().position(|&x| x == b'\'').map_or(b.len(), |p| i + 3 + p);
            out.resize(out.len() + (end - i), b' ');
            i = end;
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_default()
}

fn is_ident(c: Option<u8>) -> bool {
    c.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// Every path in `src` that reaches the crate root, for a file whose module path is
/// `module` (`["loops", "controllers", "replicaset"]`; a `mod.rs` is its folder's path).
fn references(src: &str, module: &[&str]) -> Vec<Reference> {
    let code = code_only(src);
    let tokens = tokenize(&code);
    let mut out = Vec::new();
    // The module path at each point: the file's, plus inline `mod name { ... }` blocks.
    let mut path: Vec<String> = module.iter().map(|s| s.to_string()).collect();
    let mut inline: Vec<usize> = Vec::new(); // brace depth at which each inline module opened
    let mut depth = 0usize;
    let mut i = 0;
    let tok = |k: usize| tokens.get(k).map(|t| t.1.as_str()).unwrap_or("");
    while i < tokens.len() {
        let (line, t) = (&tokens[i].0, tokens[i].1.as_str());
        match t {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last() == Some(&depth) {
                    inline.pop();
                    path.pop();
                }
            }
            "mod" if tok(i + 2) == "{" => {
                path.push(tok(i + 1).to_string());
                inline.push(depth);
                depth += 1;
                i += 3;
                continue;
            }
            "crate" if tok(i + 1) == "::" && tok(i.wrapping_sub(1)) != "::" => {
                out.extend(group_roots(&tokens, i + 2).into_iter().map(|root| Reference { line: *line, root }));
            }
            "super" if tok(i.wrapping_sub(1)) != "::" => {
                let mut k = i;
                let mut up = 0;
                while tok(k) == "super" && tok(k + 1) == "::" {
                    up += 1;
                    k += 2;
                }
                if up == 0 {
                    // `pub(super)`: a visibility, not a path.
                    i += 1;
                    continue;
                }
                if up >= path.len() {
                    // Climbed to the crate root: what follows names the layer.
                    out.extend(group_roots(&tokens, k).into_iter().map(|root| Reference { line: *line, root }));
                }
                i = k;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The first segments named at token `k`: one identifier, or each item of a `{a::x, b}` group.
fn group_roots(tokens: &[(usize, String)], k: usize) -> Vec<String> {
    let Some((_, t)) = tokens.get(k) else { return vec![] };
    if t != "{" {
        return vec![t.clone()];
    }
    let mut roots = Vec::new();
    let mut depth = 0;
    let mut expect = true;
    for (_, t) in &tokens[k..] {
        match t.as_str() {
            "{" => {
                depth += 1;
                if depth == 1 {
                    expect = true;
                }
            }
            "}" => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            "," if depth == 1 => expect = true,
            _ if depth == 1 && expect => {
                roots.push(t.clone());
                expect = false;
            }
            _ => {}
        }
    }
    roots
}

/// Identifiers, `::`, and single punctuation, each with its 1-based line.
fn tokenize(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut line = 1;
    let mut chars = code.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\n' {
            line += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = chars.peek() {
                if d.is_alphanumeric() || d == '_' {
                    end = j + d.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            out.push((line, code[i..end].to_string()));
        } else if c == ':' && chars.peek().map(|p| p.1) == Some(':') {
            chars.next();
            out.push((line, "::".into()));
        } else if !c.is_whitespace() {
            out.push((line, c.to_string()));
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    #[allow(clippy::disallowed_methods)] // a test, not the page
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The layer rule broken by `src` (a file at `rel`, relative to `src/`), one line each.
fn violations(rel: &str, src: &str) -> Vec<String> {
    let parts: Vec<&str> = rel.trim_end_matches(".rs").split('/').collect();
    let module: Vec<&str> = if parts.last() == Some(&"mod") { parts[..parts.len() - 1].to_vec() } else { parts.clone() };
    let Some(&(layer, allowed)) = LAYERS.iter().find(|(l, _)| Some(l) == module.first()) else {
        return vec![format!("{rel}: not inside a layer folder ({})", LAYERS.iter().map(|l| l.0).collect::<Vec<_>>().join(", "))];
    };
    let mut out = Vec::new();
    for r in references(src, &module) {
        let target = ROOT_MACROS.iter().find(|m| m.0 == r.root).map(|m| m.1).unwrap_or(r.root.as_str());
        if target == layer || allowed.contains(&target) {
            continue;
        }
        if LAYERS.iter().any(|l| l.0 == target) {
            out.push(format!(
                "{rel}:{}: the {layer} layer uses the {target} layer (it may use: {})",
                r.line,
                if allowed.is_empty() { "none".into() } else { allowed.join(", ") }
            ));
        } else {
            out.push(format!("{rel}:{}: `crate::{}` is not a layer; reach items through their layer's folder", r.line, r.root));
        }
    }
    out
}

#[test]
fn every_layer_uses_only_the_layers_beneath_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 40, "found only {} source files under {}", files.len(), src.display());
    let mut problems = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap_or(f).to_string_lossy().replace('\\', "/");
        if rel == "lib.rs" {
            continue;
        }
        #[allow(clippy::disallowed_methods)] // a test reading the crate's own sources
        let text = std::fs::read_to_string(f).unwrap_or_default();
        problems.extend(violations(&rel, &text));
    }
    assert!(problems.is_empty(), "layer rule broken:\n{}", problems.join("\n"));
}

#[test]
fn lib_declares_exactly_the_layers() {
    #[allow(clippy::disallowed_methods)] // a test reading the crate's own sources
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap_or_default();
    let code = code_only(&lib);
    let mut mods: Vec<&str> = code.lines().filter_map(|l| l.trim().strip_prefix("pub mod ")).map(|m| m.trim_end_matches(';')).collect();
    mods.sort_unstable();
    let mut layers: Vec<&str> = LAYERS.iter().map(|l| l.0).collect();
    layers.sort_unstable();
    assert_eq!(mods, layers);
    assert!(!code.contains("pub use"), "lib.rs re-exports nothing: paths name their layer");
    assert!(!code.contains("#[path"), "no #[path] attributes: a file's folder is its layer");
}

#[test]
fn an_upward_import_is_caught_with_its_line() {
    let src = "//! doc\nuse crate::foundation::value::Value;\nuse crate::cluster::Cluster;\n";
    assert_eq!(violations("loops/informer.rs", src), ["loops/informer.rs:3: the loops layer uses the cluster layer (it may use: foundation, apiserver)"]);
}

#[test]
fn grouped_inline_and_macro_paths_are_caught() {
    let src = "use crate::{apiserver::Request, kubectl::run};\nfn f() { let x = crate::sandbox::Sandbox::new(); }\n";
    let v = violations("loops/scheduler.rs", src);
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v[0].contains(":1: the loops layer uses the kubectl layer"));
    assert!(v[1].contains(":2: the loops layer uses the sandbox layer"));
    assert!(violations("foundation/value.rs", "macro_rules! m { () => { $crate::foundation::value::Value::Null } }").is_empty());
    assert_eq!(violations("foundation/sim.rs", "fn f() { $crate::loops::x(); }").len(), 1);
}

#[test]
fn super_paths_are_resolved_and_siblings_of_one_layer_are_not_confused() {
    // loops/controllers/x.rs: super::super is the loops folder, one more is the crate root.
    assert!(violations("loops/controllers/x.rs", "use super::super::informer::Informer;").is_empty());
    let v = violations("loops/controllers/x.rs", "use super::super::super::kubectl::run;");
    assert_eq!(v.len(), 1, "{v:?}");
    // `pub(super)` is a visibility, not a path.
    assert!(violations("kubectl/get.rs", "pub(super) fn get() {}\npub(super) struct W;").is_empty());
    // An inline test module's `super::*` is the file itself.
    assert!(violations("kubectl/mod.rs", "mod tests { use super::*; fn t() {} }").is_empty());
    // kubectl and the loops do not know each other.
    assert_eq!(violations("kubectl/describe.rs", "use crate::loops::informer::Informer;").len(), 1);
    assert_eq!(violations("loops/kubelet/mod.rs", "use crate::kubectl::printers;").len(), 1);
}

#[test]
fn comments_and_strings_are_not_imports() {
    let src = "// crate::cluster::Cluster\n/* crate::sandbox */\nconst S: &str = \"crate::cluster\";\nconst R: &str = r#\"crate::kubectl\"#;\nconst C: char = '\\'';\nuse crate::cluster::X;\n";
    let v = violations("apiserver/store.rs", src);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].starts_with("apiserver/store.rs:6:"), "{v:?}");
}

#[test]
fn a_file_outside_the_layers_is_reported() {
    assert_eq!(violations("helpers.rs", "").len(), 1);
    assert!(violations("sandbox/mod.rs", "use crate::cluster::Cluster; use crate::kubectl::run;").is_empty());
}
