//! `kubectl diff`: each object as it is live and as it would be after an apply (worked
//! out by a dry run through the whole API pipeline, admission included), as GNU `diff -u
//! -N` prints them, under the paths kubectl gives the two temporary folders.

use crate::apiserver::{ApiServer, Credentials, Request, Verb};
use crate::foundation::api::{self, resource_for_kind, RESOURCES};
use crate::foundation::value::Value;

/// The longest common subsequence of two line lists, as pairs of matching indices.
fn lcs(a: &[&str], b: &[&str]) -> Vec<(usize, usize)> {
    let (n, m) = (a.len(), b.len());
    let mut t = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            t[i][j] = if a[i] == b[j] { t[i + 1][j + 1] + 1 } else { t[i + 1][j].max(t[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n && j < m {
        if a[i] == b[j] {
            out.push((i, j));
            i += 1;
            j += 1;
        } else if t[i + 1][j] >= t[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// `@@ -l,s +l,s @@` as GNU diff writes a range: the count is left out when it is 1, and
/// an empty range starts at the line before it.
fn range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{len}", start + 1),
    }
}

/// The hunks of a unified diff with three lines of context; empty if the texts are equal.
pub fn unified(old: &str, new: &str) -> Vec<String> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    // Edit script: (kind, old index, new index) with ' ', '-', '+'.
    let mut ops: Vec<(char, usize, usize)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    for (mi, mj) in lcs(&a, &b).into_iter().chain(std::iter::once((a.len(), b.len()))) {
        while i < mi {
            ops.push(('-', i, j));
            i += 1;
        }
        while j < mj {
            ops.push(('+', i, j));
            j += 1;
        }
        if mi < a.len() {
            ops.push((' ', i, j));
            i += 1;
            j += 1;
        }
    }
    const CONTEXT: usize = 3;
    let changed: Vec<usize> = ops.iter().enumerate().filter(|(_, o)| o.0 != ' ').map(|(k, _)| k).collect();
    let mut out = Vec::new();
    let mut k = 0;
    while k < changed.len() {
        let start = changed[k].saturating_sub(CONTEXT);
        let mut end = changed[k];
        while k + 1 < changed.len() && changed[k + 1] <= end + 2 * CONTEXT + 1 {
            k += 1;
            end = changed[k];
        }
        let end = (end + CONTEXT + 1).min(ops.len());
        let hunk = &ops[start..end];
        let old_len = hunk.iter().filter(|o| o.0 != '+').count();
        let new_len = hunk.iter().filter(|o| o.0 != '-').count();
        let (old_start, new_start) = (hunk[0].1, hunk[0].2);
        out.push(format!("@@ -{} +{} @@", range(old_start, old_len), range(new_start, new_len)));
        for (kind, oi, nj) in hunk {
            let text = if *kind == '+' { b[*nj] } else { a[*oi] };
            out.push(format!("{kind}{text}"));
        }
        k += 1;
    }
    out
}

/// An object as `kubectl diff` shows it: YAML without managedFields.
fn shown(obj: &Value) -> String {
    let mut o = obj.clone();
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    crate::kubectl::goyaml::to_yaml(&o)
}

/// `kubectl diff -f FILE` with `text` as the file's content; the headers carry the
/// simulated time.
pub fn diff_text(api: &mut ApiServer, creds: &Credentials, text: &str, file: &str) -> Vec<String> {
    crate::kubectl::each_document(text, file, |obj| diff_object(api, creds, obj, file))
}

fn diff_object(api: &mut ApiServer, creds: &Credentials, obj: Value, file: &str) -> Vec<String> {
    let av = crate::foundation::api::get_str(&obj, &["apiVersion"]).unwrap_or("").to_string();
    let kind = crate::foundation::api::get_str(&obj, &["kind"]).unwrap_or("").to_string();
    let Some(r) = resource_for_kind(&av, &kind) else {
        return vec![format!(
            "error: resource mapping not found for name: {:?} namespace: \"\" from {file:?}: no matches for kind {kind:?} in version {av:?}",
            api::name(&obj)
        )];
    };
    let res = &RESOURCES[r];
    let ns = if res.namespaced { Some(api::namespace(&obj)).filter(|n| !n.is_empty()).unwrap_or("default").to_string() } else { String::new() };
    let name = api::name(&obj).to_string();
    let live = api.handle(Request::new(Verb::Get, r, &ns, &name, creds.clone())).ok();
    let merged = match crate::kubectl::apply_object_dry(api, creds, obj, file) {
        Ok(m) => m,
        Err(e) => return vec![e],
    };
    let hunks = unified(&live.as_deref().map(shown).unwrap_or_default(), &shown(&merged));
    if hunks.is_empty() {
        return vec![];
    }
    // The temporary file kubectl names after the object (`apps.v1.Deployment.default.web`).
    let group = if res.group.is_empty() { String::new() } else { format!("{}.", res.group) };
    let file_name = format!("{group}{}.{}.{ns}.{name}", res.version, res.kind);
    let stamp = crate::foundation::sim::rfc3339(api.now).replace('T', " ").replace('Z', ".000000000 +0000");
    let mut out = vec![
        format!("diff -u -N /tmp/LIVE-kubeloop/{file_name} /tmp/MERGED-kubeloop/{file_name}"),
        format!("--- /tmp/LIVE-kubeloop/{file_name}\t{stamp}"),
        format!("+++ /tmp/MERGED-kubeloop/{file_name}\t{stamp}"),
    ];
    out.extend(hunks);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_like_gnu_diff() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nD\ne\nf\ng\nh\n";
        assert_eq!(unified(old, new), ["@@ -1,7 +1,7 @@", " a", " b", " c", "-d", "+D", " e", " f", " g"]);
        assert_eq!(unified("", "x\ny\n"), ["@@ -0,0 +1,2 @@", "+x", "+y"]);
        assert_eq!(unified("x\n", "x\n"), Vec::<String>::new());
        // Changes more than six lines apart make two hunks.
        let old: String = (1..=20).map(|i| format!("{i}\n")).collect();
        let new = old.replace("2\n", "two\n").replace("19\n", "nineteen\n");
        let h = unified(&old, &new);
        assert_eq!(h.iter().filter(|l| l.starts_with("@@")).count(), 2, "{h:?}");
        assert_eq!(h[0], "@@ -1,5 +1,5 @@");
    }
}
