//! What a watch sends for each stored change, as the watch cache decides it
//! (`cacheWatcher.convertToWatchEvent`, `k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go`):
//! an event is judged by whether the object matched the watch's selectors before it (its
//! previous version, which the store's events carry) and after it. Matching only after is
//! ADDED, both MODIFIED, only before DELETED with the previous content at the event's
//! `resourceVersion`, neither nothing. Because the judgement needs nothing but the event,
//! a watch from any revision sends exactly what a client that listed at that revision
//! must be told, whichever event comes first.

use kubeloop_core::apiserver::store::EventType;
use kubeloop_core::foundation::api::{self, Object};
use kubeloop_core::foundation::value::Value;

/// One stored change: its type, the object before (`None` for a creation) and after.
pub type Change<'a> = (EventType, Option<&'a Object>, &'a Object);

/// The event a watch with the selector `matches` sends for one change, if any.
pub fn convert(change: Change<'_>, matches: &impl Fn(&Value) -> bool) -> Option<(&'static str, Object)> {
    let (kind, prev, object) = change;
    let now = kind != EventType::Deleted && matches(object);
    let before = prev.is_some_and(|p| matches(p));
    match (before, now) {
        (false, true) => Some(("ADDED", object.clone())),
        (true, true) => Some(("MODIFIED", object.clone())),
        (true, false) => {
            let mut gone = Object::unwrap_or_clone(prev?.clone());
            api::set(&mut gone, &["metadata", "resourceVersion"], api::resource_version(object).into());
            Some(("DELETED", Object::new(gone)))
        }
        (false, false) => None,
    }
}

/// The events a watch sends for `changes`, in order.
pub fn replay<'a>(changes: impl IntoIterator<Item = Change<'a>>, matches: &impl Fn(&Value) -> bool) -> Vec<(&'static str, Object)> {
    changes.into_iter().filter_map(|c| convert(c, matches)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubeloop_core::apiserver::store::Store;
    use kubeloop_core::foundation::api::{rid, ObjectKey};
    use kubeloop_core::foundation::labels::Selector;
    use kubeloop_core::json;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    const TIERS: [&str; 3] = ["web", "api", "db"];

    #[derive(Debug, Clone)]
    enum Op {
        /// Create (or, if it exists, update) object `n` with tier `t` (none past the tiers).
        Put(u8, u8),
        Delete(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![4 => (0u8..4, 0u8..4).prop_map(|(n, t)| Op::Put(n, t)), 1 => (0u8..4).prop_map(Op::Delete)]
    }

    fn object(n: u8, tier: u8) -> Object {
        let mut o = json!({"metadata": {"name": format!("cm-{n}"), "namespace": "default"}});
        if let Some(t) = TIERS.get(tier as usize) {
            o["metadata"]["labels"] = json!({"tier": t});
        }
        Object::new(o)
    }

    /// A store that has seen `ops`, each on a ConfigMap.
    fn history(ops: &[Op]) -> Store {
        let mut s = Store::default();
        for o in ops {
            let (n, body) = match o {
                Op::Put(n, t) => (*n, Some(object(*n, *t))),
                Op::Delete(n) => (*n, None),
            };
            let key = ObjectKey::new(rid::CONFIGMAP, "default", &format!("cm-{n}"));
            let _ = match body {
                Some(b) if s.get(&key).is_some() => s.update(&key, b, None),
                Some(b) => s.create(&key, b),
                None => s.delete(&key, None),
            };
        }
        s
    }

    fn name(o: &Value) -> String {
        api::name(o).to_string()
    }

    /// The reference: the matching objects after each revision, from the whole history and
    /// nothing the events carry about the past; a watch from `since` reports the difference
    /// between one revision's matching objects and the next's.
    fn reference(s: &Store, since: u64, matches: &impl Fn(&Value) -> bool) -> Vec<(&'static str, Object)> {
        let mut state: BTreeMap<String, Object> = BTreeMap::new();
        let mut out = Vec::new();
        for e in s.events_since(rid::CONFIGMAP, 0).unwrap() {
            let key = name(&e.object);
            let before = state.get(&key).filter(|o| matches(o)).cloned();
            match e.kind {
                EventType::Deleted => state.remove(&key),
                _ => state.insert(key.clone(), e.object.clone()),
            };
            let after = state.get(&key).filter(|o| matches(o)).cloned();
            if e.revision <= since {
                continue;
            }
            match (before, after) {
                (None, Some(a)) => out.push(("ADDED", a)),
                (Some(_), Some(a)) => out.push(("MODIFIED", a)),
                (Some(b), None) => {
                    let mut gone = Object::unwrap_or_clone(b);
                    api::set(&mut gone, &["metadata", "resourceVersion"], e.revision.to_string().into());
                    out.push(("DELETED", Object::new(gone)));
                }
                (None, None) => {}
            }
        }
        out
    }

    /// The matching objects at revision `at`, as a list then would return them.
    fn listed(s: &Store, at: u64, matches: &impl Fn(&Value) -> bool) -> BTreeMap<String, Object> {
        let mut state = BTreeMap::new();
        for e in s.events_since(rid::CONFIGMAP, 0).unwrap().take_while(|e| e.revision <= at) {
            match e.kind {
                EventType::Deleted => state.remove(&name(&e.object)),
                _ => state.insert(name(&e.object), e.object.clone()),
            };
        }
        state.retain(|_, o| matches(o));
        state
    }

    fn changes(s: &Store, since: u64) -> Vec<(EventType, Option<Object>, Object)> {
        s.events_since(rid::CONFIGMAP, since).unwrap().map(|e| (e.kind, e.prev.clone(), e.object.clone())).collect()
    }

    fn run(c: &[(EventType, Option<Object>, Object)], matches: &impl Fn(&Value) -> bool) -> Vec<(&'static str, Object)> {
        replay(c.iter().map(|(k, p, o)| (*k, p.as_ref(), o)), matches)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Whatever the history and the revision a watch resumes from, it sends what the
        /// reference computes, and a client that listed at that revision and applies them
        /// ends with exactly the matching objects of the store.
        #[test]
        fn a_resumed_watch_sends_exactly_the_changes_after_its_revision(
            ops in prop::collection::vec(op(), 0..40),
            at in 0.0f64..=1.0,
            selector in prop::sample::select(vec!["tier=web", "tier in (web,api)", "tier!=db", "!tier", "tier"]),
        ) {
            let s = history(&ops);
            let sel = Selector::parse(selector).unwrap();
            let matches = |o: &Value| sel.matches(api::labels(o));
            let since = 1 + ((s.revision() - 1) as f64 * at) as u64;
            let sent = run(&changes(&s, since), &matches);
            prop_assert_eq!(&sent, &reference(&s, since, &matches));

            let mut cache = listed(&s, since, &matches);
            for (ty, o) in &sent {
                match *ty {
                    "ADDED" => prop_assert!(cache.insert(name(o), o.clone()).is_none(), "ADDED for a known {}", name(o)),
                    "MODIFIED" => prop_assert!(cache.insert(name(o), o.clone()).is_some(), "MODIFIED for an unknown {}", name(o)),
                    _ => prop_assert!(cache.remove(&name(o)).is_some(), "DELETED for an unknown {}", name(o)),
                }
            }
            prop_assert_eq!(cache, listed(&s, s.revision(), &matches));
        }
    }

    /// The bug this module fixed: the first change after the revision decides by the
    /// object's version at that revision, not by the new version alone.
    #[test]
    fn the_first_change_after_the_revision_is_judged_by_the_version_before_it() {
        let web = |o: &Value| api::label(o, "tier") == Some("web");
        let s = history(&[Op::Put(0, 0), Op::Put(1, 1), Op::Put(0, 1), Op::Put(1, 0)]);
        // At revision 3, cm-0 is web and cm-1 is api; then cm-0 leaves and cm-1 joins.
        let sent = run(&changes(&s, 3), &web);
        let got: Vec<(&str, String, &str, Option<&str>)> = sent.iter().map(|(t, o)| (*t, name(o), api::resource_version(o), api::label(o, "tier"))).collect();
        assert_eq!(got, [("DELETED", "cm-0".into(), "4", Some("web")), ("ADDED", "cm-1".into(), "5", Some("web"))]);
    }
}
