//! The lessons' index (`sandbox::lessons::INDEX`): each lesson's id, group and title, read
//! from `src/sandbox/lessons.yaml` at build time, so that the page can list the lessons
//! without parsing (or downloading) their bodies. The file's shape is fixed: each lesson
//! starts `- id: …` at the first column, with `  group: …` and `  title: "…"` among its
//! keys; a test checks the index against the parsed file.

// It runs when the crate is built, not in the simulation: reading the file and writing the
// index is its job.
#![allow(clippy::disallowed_methods)]

use std::fmt::Write as _;

fn main() {
    let path = "src/sandbox/lessons.yaml";
    println!("cargo:rerun-if-changed={path}");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut entries: Vec<[String; 3]> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = || format!("{path}:{}", n + 1);
        if let Some(id) = line.strip_prefix("- id: ") {
            entries.push([id.trim().to_string(), String::new(), String::new()]);
        } else if let Some(group) = line.strip_prefix("  group: ") {
            let last = entries.last_mut().unwrap_or_else(|| panic!("{}: a group before the first lesson", at()));
            let g = group.trim();
            let mut chars = g.chars();
            let variant = chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default();
            last[1] = variant;
        } else if let Some(title) = line.strip_prefix("  title: ") {
            let last = entries.last_mut().unwrap_or_else(|| panic!("{}: a title before the first lesson", at()));
            last[2] = unquote(title.trim()).unwrap_or_else(|e| panic!("{}: {e}", at()));
        }
    }
    let mut out = String::from("/// Every lesson's id, group and title, in the file's order (see `build.rs`).\npub const INDEX: &[Entry] = &[\n");
    for [id, group, title] in &entries {
        assert!(!group.is_empty() && !title.is_empty(), "{path}: lesson {id} needs a group and a title");
        let _ = writeln!(out, "    Entry {{ id: {id:?}, group: Group::{group}, title: {title:?} }},");
    }
    out.push_str("];\n");
    let dest = std::path::Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("lesson_index.rs");
    std::fs::write(&dest, out).unwrap_or_else(|e| panic!("{}: {e}", dest.display()));
}

/// A plain scalar as it is; a double-quoted one with `\"` and `\\` unescaped.
fn unquote(s: &str) -> Result<String, String> {
    let Some(inner) = s.strip_prefix('"').and_then(|s| s.strip_suffix('"')) else {
        return if s.starts_with('\'') { Err("a single-quoted title: write it in double quotes".into()) } else { Ok(s.to_string()) };
    };
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(e @ ('"' | '\\')) => out.push(e),
                other => return Err(format!("a title with the escape \\{}: only \\\" and \\\\ are read here", other.map(String::from).unwrap_or_default())),
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}
