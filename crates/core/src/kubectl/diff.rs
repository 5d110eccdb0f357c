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

/// GNU diff's `shift_boundaries` (`analyze.c`): among the equally short edit scripts,
/// slide each run of changed lines in one file up as far as it goes (merging with earlier
/// runs), then down as far as it goes, and finally back up to where it meets a run of
/// changes in the other file. This is what makes `diff -u` delete and insert a repeated
/// line where a reader expects it. `ch` and `other` hold one flag per line with a `false`
/// sentinel at each end (line `i` is at index `i + 1`).
fn shift_boundaries(lines: &[&str], ch: &mut [bool], other: &[bool]) {
    let at = |i: isize| (i + 1) as usize;
    let end = lines.len() as isize;
    let (mut i, mut j): (isize, isize) = (0, 0);
    loop {
        // The next run of changes, and the matching point in the other file.
        while i < end && !ch[at(i)] {
            while other[at(j)] {
                j += 1;
            }
            j += 1;
            i += 1;
        }
        if i == end {
            break;
        }
        let mut start = i;
        i += 1;
        while ch[at(i)] {
            i += 1;
        }
        while other[at(j)] {
            j += 1;
        }
        let mut corresponding;
        loop {
            let run = i - start;
            // Back, while the line before the run equals its last line.
            while start > 0 && lines[(start - 1) as usize] == lines[(i - 1) as usize] {
                start -= 1;
                ch[at(start)] = true;
                i -= 1;
                ch[at(i)] = false;
                while ch[at(start - 1)] {
                    start -= 1;
                }
                j -= 1;
                while other[at(j)] {
                    j -= 1;
                }
            }
            corresponding = if other[at(j - 1)] { i } else { end };
            // Forward, while the run's first line equals the line after it.
            while i != end && lines[start as usize] == lines[i as usize] {
                ch[at(start)] = false;
                start += 1;
                ch[at(i)] = true;
                i += 1;
                while ch[at(i)] {
                    i += 1;
                }
                j += 1;
                while other[at(j)] {
                    j += 1;
                    corresponding = i;
                }
            }
            if run == i - start {
                break;
            }
        }
        // Back to a run of changes in the other file, if one was passed.
        while corresponding < i {
            start -= 1;
            ch[at(start)] = true;
            i -= 1;
            ch[at(i)] = false;
            j -= 1;
            while other[at(j)] {
                j -= 1;
            }
        }
    }
}

/// The hunks of a unified diff with three lines of context, as GNU `diff -u` prints them;
/// empty if the texts are equal.
///
/// A longest common subsequence gives a shortest edit script; GNU's boundary shifting then
/// picks, among the equally short ones, the one `diff` prints. (A general-purpose diff
/// crate picks differently where lines repeat, and kubectl's output comes from GNU diff.)
pub fn unified(old: &str, new: &str) -> Vec<String> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut ca = vec![true; a.len() + 2];
    let mut cb = vec![true; b.len() + 2];
    for (i, j) in lcs(&a, &b) {
        ca[i + 1] = false;
        cb[j + 1] = false;
    }
    for c in [&mut ca, &mut cb] {
        let last = c.len() - 1;
        c[0] = false;
        c[last] = false;
    }
    shift_boundaries(&a, &mut ca, &cb);
    shift_boundaries(&b, &mut cb, &ca);
    // Edit script: (kind, old index, new index) with ' ', '-', '+'.
    let mut ops: Vec<(char, usize, usize)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && !ca[i + 1] && !cb[j + 1] {
            ops.push((' ', i, j));
            i += 1;
            j += 1;
            continue;
        }
        while i < a.len() && ca[i + 1] {
            ops.push(('-', i, j));
            i += 1;
        }
        while j < b.len() && cb[j + 1] {
            ops.push(('+', i, j));
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
    diff_text_in(api, creds, text, file, &crate::kubectl::Namespace::default())
}

/// As [`diff_text`], into namespace `ns` (`kubectl diff -n NS`).
pub fn diff_text_in(api: &mut ApiServer, creds: &Credentials, text: &str, file: &str, ns: &crate::kubectl::Namespace) -> Vec<String> {
    crate::kubectl::each_document_in(text, file, ns, |obj| diff_object(api, creds, obj, file))
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
