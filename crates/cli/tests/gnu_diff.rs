//! `kubectl diff` in the page prints its hunks without running GNU diff; the real kubectl
//! runs `diff -u -N`. This test edits YAML-like texts at random (a fixed seed) and checks
//! that `kubeloop_core::kubectl::diff::unified` prints exactly the hunks GNU diff prints.

use std::process::Command;

/// A small deterministic generator (64-bit LCG), enough to vary the edits.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

fn gnu_hunks(dir: &std::path::Path, old: &str, new: &str) -> Vec<String> {
    let (a, b) = (dir.join("old"), dir.join("new"));
    std::fs::write(&a, old).unwrap();
    std::fs::write(&b, new).unwrap();
    let out = Command::new("diff").arg("-u").arg("-N").arg(&a).arg(&b).output().expect("GNU diff runs");
    String::from_utf8_lossy(&out.stdout).lines().skip(2).map(str::to_string).collect()
}

#[test]
fn hunks_match_gnu_diff_on_random_edits() {
    if Command::new("diff").arg("--version").output().is_err() {
        panic!("GNU diff (diffutils) is needed for this test");
    }
    let dir = std::env::temp_dir().join(format!("kubeloop-gnu-diff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Objects as `kubectl diff` shows them: the seeds' example, edited line by line with
    // lines of the same file (so repeated lines, `- name:` and the like, occur as they do).
    let manifest = include_str!("../../../web/checkout.yaml");
    let words: Vec<&str> = manifest.lines().collect();
    let mut rng = Lcg(7);
    let mut mismatches = Vec::new();
    for case in 0..300 {
        let start = rng.next(words.len());
        let old: Vec<&str> = words[start..(start + 1 + rng.next(60)).min(words.len())].to_vec();
        let mut new = old.clone();
        for _ in 0..1 + rng.next(6) {
            let at = rng.next(new.len() + 1);
            match rng.next(3) {
                0 if at < new.len() => {
                    new.remove(at);
                }
                1 if at < new.len() => new[at] = words[rng.next(words.len())],
                _ => new.insert(at, words[rng.next(words.len())]),
            }
        }
        let (old, new) = (old.join("\n") + "\n", new.join("\n") + "\n");
        let ours = kubeloop_core::kubectl::diff::unified(&old, &new);
        let gnu = gnu_hunks(&dir, &old, &new);
        if ours != gnu {
            mismatches.push(format!("case {case}:\n--- old\n{old}--- new\n{new}--- GNU\n{}\n--- kubeloop\n{}", gnu.join("\n"), ours.join("\n")));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(mismatches.is_empty(), "{} of 300 differ; the first:\n{}", mismatches.len(), mismatches[0]);
}
