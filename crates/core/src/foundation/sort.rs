//! Stable sorting that is small in the page's WebAssembly.
//!
//! The standard library's stable sort is fast and large: each call site with its own element
//! type and comparator carries a copy of the whole algorithm, a few kilobytes each, and the
//! core sorts in some seventy places (about a tenth of the page's code). Natively these
//! methods are the standard `sort_by`. On wasm they sort a vector of indices with a dynamic
//! comparator, one copy of the algorithm for the whole program, then move the elements into
//! that order. Both are stable, so both give the same order: a run is the same natively and in
//! the browser.

use std::cmp::Ordering;

/// Stable sorts on slices (and so on vectors): `sort_stable`, `sort_stable_by`,
/// `sort_stable_by_key` and `sort_stable_by_cached_key`, as the standard library's `sort*`.
pub trait Sort<T> {
    fn sort_stable_by(&mut self, cmp: impl FnMut(&T, &T) -> Ordering);

    fn sort_stable(&mut self)
    where
        T: Ord,
    {
        self.sort_stable_by(T::cmp);
    }

    fn sort_stable_by_key<K: Ord>(&mut self, mut key: impl FnMut(&T) -> K) {
        self.sort_stable_by(|a, b| key(a).cmp(&key(b)));
    }

    /// Each element's key is computed once.
    fn sort_stable_by_cached_key<K: Ord>(&mut self, key: impl FnMut(&T) -> K);
}

impl<T> Sort<T> for [T] {
    #[cfg(not(target_arch = "wasm32"))]
    #[allow(clippy::disallowed_methods)] // natively, the standard sort is the one
    fn sort_stable_by(&mut self, cmp: impl FnMut(&T, &T) -> Ordering) {
        self.sort_by(cmp);
    }

    #[cfg(target_arch = "wasm32")]
    fn sort_stable_by(&mut self, mut cmp: impl FnMut(&T, &T) -> Ordering) {
        let order = order(self.len(), &mut |a, b| cmp(&self[a], &self[b]));
        permute(self, order);
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[allow(clippy::disallowed_methods)] // natively, the standard sort is the one
    fn sort_stable_by_cached_key<K: Ord>(&mut self, key: impl FnMut(&T) -> K) {
        self.sort_by_cached_key(key);
    }

    #[cfg(target_arch = "wasm32")]
    fn sort_stable_by_cached_key<K: Ord>(&mut self, key: impl FnMut(&T) -> K) {
        let keys: Vec<K> = self.iter().map(key).collect();
        let order = order(keys.len(), &mut |a, b| keys[a].cmp(&keys[b]));
        permute(self, order);
    }
}

/// Collecting into a `BTreeMap` or `BTreeSet` without a sort of its own: the standard
/// `collect` sorts the items first, with a copy of the stable sort for each item type (some
/// forty of them in the page). `collect_tree` is that `collect` natively; on wasm it inserts
/// the items one at a time. Either way the same tree: the last value of equal keys wins.
pub trait CollectTree: Iterator + Sized {
    fn collect_tree<C: InsertAll<Self::Item>>(self) -> C {
        C::insert_all(self)
    }
}

impl<I: Iterator> CollectTree for I {}

/// A tree built from items (see [`CollectTree`]).
pub trait InsertAll<T>: FromIterator<T> {
    fn insert_all(items: impl Iterator<Item = T>) -> Self;
}

impl<K: Ord, V> InsertAll<(K, V)> for std::collections::BTreeMap<K, V> {
    #[cfg(not(target_arch = "wasm32"))]
    fn insert_all(items: impl Iterator<Item = (K, V)>) -> Self {
        items.collect()
    }

    #[cfg(target_arch = "wasm32")]
    fn insert_all(items: impl Iterator<Item = (K, V)>) -> Self {
        let mut tree = Self::new();
        for (k, v) in items {
            tree.insert(k, v);
        }
        tree
    }
}

impl<T: Ord> InsertAll<T> for std::collections::BTreeSet<T> {
    #[cfg(not(target_arch = "wasm32"))]
    fn insert_all(items: impl Iterator<Item = T>) -> Self {
        items.collect()
    }

    #[cfg(target_arch = "wasm32")]
    fn insert_all(items: impl Iterator<Item = T>) -> Self {
        let mut tree = Self::new();
        for t in items {
            tree.insert(t);
        }
        tree
    }
}

/// The stable order of `0..n` under `cmp`: the one instance of the sorting algorithm.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
#[allow(clippy::disallowed_methods)] // the one instance
fn order(n: usize, cmp: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by(|&a, &b| cmp(a, b));
    idx
}

/// Rearrange `v` so that `v[i]` is what `v[order[i]]` was, in place, one cycle at a time.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
fn permute<T>(v: &mut [T], mut order: Vec<usize>) {
    for i in 0..v.len() {
        let mut cur = i;
        loop {
            let next = order[cur];
            order[cur] = cur;
            if next == i {
                break;
            }
            v.swap(cur, next);
            cur = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page's way (indices, then a permutation) gives the standard library's order,
    /// ties included.
    #[test]
    fn the_index_sort_gives_the_standard_stable_order() {
        let mut seed = 7u64;
        for n in [0, 1, 2, 3, 10, 100, 1000] {
            let v: Vec<(u8, usize)> = (0..n)
                .map(|i| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    ((seed >> 59) as u8, i)
                })
                .collect();
            let mut want = v.clone();
            #[allow(clippy::disallowed_methods)] // the standard sort is what is compared with
            want.sort_by_key(|x| x.0);
            let mut got = v.clone();
            let o = order(got.len(), &mut |a, b| got[a].0.cmp(&got[b].0));
            permute(&mut got, o);
            assert_eq!(got, want, "n = {n}");
            let mut through_trait = v.clone();
            through_trait.sort_stable_by_cached_key(|x| x.0);
            assert_eq!(through_trait, want);
        }
    }
}
