//! ControllerRevision history shared by the StatefulSet and DaemonSet controllers
//! (`pkg/controller/history/controller_history.go`, and the two controllers' `getPatch`).
//!
//! A revision stores a strategic merge patch that replaces the owner's pod template,
//! `{"spec":{"template":{..., "$patch":"replace"}}}`, serialized as Go's `json.Marshal`
//! of a map does it (keys sorted, `<`, `>`, `&` escaped). Its name is `<owner>-<hash>`,
//! the hash being FNV-1 (32 bit, `fnv.New32`) over those bytes and the decimal collision
//! count, encoded with `rand.SafeEncodeString`.

use crate::foundation::api::{self, get, get_i64, Object};
use crate::foundation::sort::Sort;
use crate::foundation::value::{json, Map, Value};

/// `history.ControllerRevisionHashLabel`, set on StatefulSet revisions.
pub const HASH_LABEL: &str = "controller.kubernetes.io/hash";
/// `apps.ControllerRevisionHashLabelKey` (`DefaultDaemonSetUniqueLabelKey`): pods and
/// DaemonSet revisions carry their revision's hash under it.
pub const REVISION_HASH_LABEL: &str = "controller-revision-hash";

/// `rand.SafeEncodeString`: each byte mapped into an alphabet without vowels or
/// look-alike digits.
pub fn safe_encode(s: &str) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    s.bytes().map(|b| ALPHANUMS[b as usize % ALPHANUMS.len()] as char).collect()
}

/// The bytes Go's `json.Marshal` writes for a decoded map: sorted keys, and HTML
/// characters escaped as `\u003c`, `\u003e`, `\u0026`.
pub fn go_json(v: &Value) -> String {
    let s = serde_json::to_string(v).unwrap_or_default();
    if !s.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return s;
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// `HashControllerRevision`: FNV-1 over the revision's data, then the decimal probe.
pub fn hash_revision(data: &Value, probe: Option<i64>) -> String {
    let mut h: u32 = 0x811c9dc5;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            h = h.wrapping_mul(0x01000193);
            h ^= *b as u32;
        }
    };
    feed(go_json(data).as_bytes());
    if let Some(p) = probe {
        feed(p.to_string().as_bytes());
    }
    safe_encode(&h.to_string())
}

/// `ControllerRevisionName`: `prefix-hash`, the prefix cut to 223 bytes.
pub fn revision_name(prefix: &str, hash: &str) -> String {
    let mut end = prefix.len().min(223);
    while !prefix.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}-{hash}", &prefix[..end])
}

/// `getPatch`: the owner's pod template as a patch that replaces it.
pub fn template_patch(owner: &Value) -> Value {
    let mut template = get(owner, &["spec", "template"]).cloned().unwrap_or_else(|| json!({}));
    if let Some(m) = template.as_object_mut() {
        m.insert("$patch", json!("replace"));
    }
    json!({"spec": {"template": template}})
}

/// `ApplyRevision`: the owner with the template a revision recorded.
pub fn apply_revision(owner: &Value, revision: &Value) -> Value {
    let mut out = owner.clone();
    if let Some(mut t) = get(revision, &["data", "spec", "template"]).cloned() {
        if let Some(m) = t.as_object_mut() {
            m.remove("$patch");
        }
        api::set(&mut out, &["spec", "template"], t);
    }
    out
}

/// `NewControllerRevision`: labels copied from the template plus the hash label, the
/// owner as controller, the data and revision number; named after the owner and hash.
pub fn new_revision(owner: &Value, template_labels: Option<&Map>, data: Value, revision: i64, collision_count: i64) -> Value {
    let hash = hash_revision(&data, Some(collision_count));
    let mut labels = template_labels.cloned().unwrap_or_default();
    labels.insert(HASH_LABEL, json!(hash));
    json!({
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": revision_name(api::name(owner), &hash),
            "namespace": api::namespace(owner),
            "labels": Value::Object(labels),
            "ownerReferences": [api::owner_reference(owner)],
        },
        "data": data,
        "revision": revision,
    })
}

pub fn revision_number(r: &Value) -> i64 {
    get_i64(r, &["revision"]).unwrap_or(0)
}

/// `SortControllerRevisions`: stable, by revision number.
pub fn sort_by_revision(revisions: &mut [Object]) {
    revisions.sort_stable_by_key(|r| revision_number(r));
}

/// `EqualRevision`: the same data (hash labels are not decimal, so only the bytes count).
pub fn equal_revision(a: &Value, b: &Value) -> bool {
    a.get("data") == b.get("data")
}

/// `FindEqualRevisions`, in the order given.
pub fn find_equal<'a>(revisions: &'a [Object], needle: &Value) -> Vec<&'a Object> {
    revisions.iter().filter(|r| equal_revision(r, needle)).collect()
}

/// `nextRevision`: one more than the highest (revisions sorted), or 1.
pub fn next_revision(sorted: &[Object]) -> i64 {
    sorted.last().map(|r| revision_number(r) + 1).unwrap_or(1)
}

/// The revisions to delete so that at most `limit` of the non-live ones remain, oldest
/// first (`truncateHistory`). `sorted` is ordered by revision number.
pub fn to_truncate<'a>(sorted: &'a [Object], live: &std::collections::BTreeSet<String>, limit: i64) -> Vec<&'a Object> {
    let history: Vec<&Object> = sorted.iter().filter(|r| !live.contains(api::name(r))).collect();
    let limit = limit.max(0) as usize;
    if history.len() <= limit {
        return Vec::new();
    }
    let n = history.len() - limit;
    history.into_iter().take(n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::sync::Arc;

    #[test]
    fn fnv1_and_the_safe_alphabet() {
        // Digits map into ten letters and digits: the shape of every revision hash.
        assert_eq!(safe_encode("2166136261"), "65bb57b6b5");
        let h = hash_revision(&json!({}), None);
        // `{}` differs from the empty input; the encoding keeps the decimal's length.
        assert!(!h.is_empty() && h.len() <= 10);
        assert!(h.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
        // The probe changes the hash; the same probe gives the same hash.
        let d = json!({"spec": {"template": {"$patch": "replace"}}});
        assert_ne!(hash_revision(&d, Some(0)), hash_revision(&d, Some(1)));
        assert_eq!(hash_revision(&d, Some(3)), hash_revision(&d, Some(3)));
    }

    #[test]
    fn fnv1_matches_the_reference_vectors() {
        // FNV-1 32-bit of "a" is 0x050c5d7e (http://www.isthe.com/chongo/tech/comp/fnv/).
        let mut h: u32 = 0x811c9dc5;
        for b in b"a" {
            h = h.wrapping_mul(0x01000193);
            h ^= *b as u32;
        }
        assert_eq!(h, 0x050c5d7e);
        // hash_revision feeds the serialized data: `"a"` is three bytes, not one.
        assert_ne!(hash_revision(&json!("a"), None), safe_encode(&0x050c5d7eu32.to_string()));
        assert_eq!(safe_encode("0123456789"), "456789bcdf");
    }

    #[test]
    fn go_json_escapes_html_characters() {
        assert_eq!(go_json(&json!({"b": "x<y", "a": "&"})), r#"{"a":"\u0026","b":"x\u003cy"}"#);
    }

    #[test]
    fn names_are_cut_to_fit() {
        assert_eq!(revision_name("web", "abc"), "web-abc");
        let long = "x".repeat(300);
        assert_eq!(revision_name(&long, "h").len(), 225);
    }

    #[test]
    fn a_revision_replaces_the_template() {
        let sts = json!({"metadata": {"name": "web", "namespace": "default", "uid": "u1"}, "apiVersion": "apps/v1", "kind": "StatefulSet",
            "spec": {"template": {"metadata": {"labels": {"app": "nginx"}}, "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}});
        let data = template_patch(&sts);
        assert_eq!(data["spec"]["template"]["$patch"], "replace");
        let r = new_revision(&sts, api::labels(&sts["spec"]["template"]), data, 1, 0);
        let hash = r["metadata"]["labels"][HASH_LABEL].as_str().unwrap().to_string();
        assert_eq!(r["metadata"]["name"], json!(format!("web-{hash}")));
        assert_eq!(r["metadata"]["labels"]["app"], "nginx");
        assert_eq!(r["metadata"]["ownerReferences"][0]["uid"], "u1");
        let mut changed = sts.clone();
        changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
        let back = apply_revision(&changed, &r);
        assert_eq!(back["spec"]["template"], sts["spec"]["template"]);
        assert!(!equal_revision(&r, &new_revision(&changed, None, template_patch(&changed), 2, 0)));
    }

    #[test]
    fn truncation_keeps_live_revisions_and_the_newest_history() {
        let revs: Vec<Object> = (1..=5).map(|i| Arc::new(json!({"metadata": {"name": format!("r{i}")}, "revision": i}))).collect();
        let live: BTreeSet<String> = ["r5".to_string(), "r1".to_string()].into_iter().collect();
        let gone: Vec<&str> = to_truncate(&revs, &live, 1).iter().map(|r| api::name(r)).collect();
        assert_eq!(gone, vec!["r2", "r3"]);
        assert!(to_truncate(&revs, &live, 10).is_empty());
        assert_eq!(next_revision(&revs), 6);
        assert_eq!(next_revision(&[]), 1);
    }
}
