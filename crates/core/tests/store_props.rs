//! Property tests for the etcd model and the informers that watch it: whatever the
//! sequence of writes, compactions and syncs, every revision is unique and increasing, a
//! watch replays changes in order, and an informer's cache always ends equal to the store
//! (relisting when its revision was compacted away).

// Tests read their fixtures from disk; the determinism lint guards the library itself.
#![allow(clippy::disallowed_methods)]

use kubeloop_core::apiserver::store::{EventType, Store};
use kubeloop_core::foundation::api::{rid, Object, ObjectKey};
use kubeloop_core::foundation::value::json;
use kubeloop_core::loops::informer::Informer;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, Clone)]
enum Op {
    Create(u8),
    Update(u8, bool),
    Delete(u8),
    Sync(u8),
    Compact,
    Advance(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..12).prop_map(Op::Create),
        4 => (0u8..12, any::<bool>()).prop_map(|(n, stale)| Op::Update(n, stale)),
        2 => (0u8..12).prop_map(Op::Delete),
        3 => (0u8..3).prop_map(Op::Sync),
        1 => Just(Op::Compact),
        1 => (0u16..60_000).prop_map(Op::Advance),
    ]
}

fn obj(n: u8, v: u64) -> Object {
    Arc::new(json!({"metadata": {"name": format!("cm-{n}"), "namespace": "default"}, "data": {"v": v.to_string()}}))
}

fn contents(inf: &Informer) -> BTreeMap<String, String> {
    inf.list(None)
        .map(|o| (o["metadata"]["name"].as_str().unwrap_or("").to_string(), o["metadata"]["resourceVersion"].as_str().unwrap_or("").to_string()))
        .collect()
}

fn store_contents(s: &Store) -> BTreeMap<String, String> {
    s.list(rid::CONFIGMAP, None)
        .map(|o| (o["metadata"]["name"].as_str().unwrap_or("").to_string(), o["metadata"]["resourceVersion"].as_str().unwrap_or("").to_string()))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn informers_converge_to_the_store(ops in proptest::collection::vec(op(), 1..120)) {
        let mut s = Store::default();
        let mut informers = vec![Informer::new(rid::CONFIGMAP), Informer::new(rid::CONFIGMAP), Informer::new(rid::CONFIGMAP)];
        let mut last_rv = s.revision();
        let mut version = 0u64;
        for op in ops {
            match op {
                Op::Create(n) => {
                    version += 1;
                    let k = ObjectKey::new(rid::CONFIGMAP, "default", &format!("cm-{n}"));
                    let existed = s.get(&k).is_some();
                    let r = s.create(&k, obj(n, version));
                    prop_assert_eq!(r.is_err(), existed);
                }
                Op::Update(n, stale) => {
                    version += 1;
                    let k = ObjectKey::new(rid::CONFIGMAP, "default", &format!("cm-{n}"));
                    let current = s.get(&k).map(|o| o["metadata"]["resourceVersion"].as_str().unwrap_or("").to_string());
                    let want = if stale { Some("1".to_string()) } else { current.clone() };
                    let r = s.update(&k, obj(n, version), want.as_deref());
                    match current {
                        None => prop_assert!(r.is_err()),
                        Some(cur) => prop_assert_eq!(r.is_ok(), !stale || cur == "1"),
                    }
                }
                Op::Delete(n) => {
                    let k = ObjectKey::new(rid::CONFIGMAP, "default", &format!("cm-{n}"));
                    let existed = s.get(&k).is_some();
                    prop_assert_eq!(s.delete(&k, None).is_ok(), existed);
                }
                Op::Sync(i) => {
                    let inf = &mut informers[i as usize];
                    let watching = matches!(inf.state, kubeloop_core::loops::informer::WatchState::Watching(_));
                    let r = inf.sync(&s);
                    // Deltas of a watch (not a list) come in revision order.
                    if watching && r.relisted.is_none() {
                        let revs: Vec<u64> = r.deltas.iter().map(|d| d.object["metadata"]["resourceVersion"].as_str().unwrap_or("0").parse().unwrap_or(0)).collect();
                        prop_assert!(revs.windows(2).all(|w| w[0] < w[1]), "out of order: {:?}", revs);
                    }
                    for d in &r.deltas {
                        if d.kind == EventType::Modified || d.kind == EventType::Deleted {
                            prop_assert!(d.old.is_some());
                        }
                    }
                    prop_assert_eq!(contents(inf), store_contents(&s));
                }
                Op::Compact => {
                    let rev = s.revision();
                    s.compact(rev);
                }
                Op::Advance(ms) => {
                    s.now += ms as u64;
                }
            }
            prop_assert!(s.revision() >= last_rv);
            last_rv = s.revision();
        }
        for inf in &mut informers {
            inf.sync(&s);
            prop_assert_eq!(contents(inf), store_contents(&s));
        }
    }
}
