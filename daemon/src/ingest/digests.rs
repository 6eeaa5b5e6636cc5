//! Each current memory's key digest with its id, as the duplicate check keeps them: a run
//! sorted by digest, read once at start (24 bytes a memory), and the changes since in a
//! small map that shadows it, folded in once it passes an eighth of the run. A `HashMap`
//! of every memory took 69 MB at 1M memories: it grows by doubling, to 2M slots of 33 bytes.

use std::collections::HashMap;

use crate::held::id::HeldId;

/// Changes held beside the run before they are folded in: at least this many, so a small
/// store does not sort its run on every add.
const FOLD_AFTER_AT_LEAST: usize = 4096;

#[derive(Default)]
pub(super) struct Digests {
    /// Sorted by digest, one entry a digest.
    run: Vec<(u64, HeldId)>,
    /// Digests set (Some) or let go (None) since the run was last made.
    since: HashMap<u64, Option<HeldId>>,
}

impl Digests {
    /// The digests of `pairs`; of two with one digest the later is kept, as a map's inserts
    /// would keep it.
    pub(super) fn new(mut pairs: Vec<(u64, HeldId)>) -> Self {
        pairs.sort_by_key(|&(digest, _)| digest);
        // `dedup_by` keeps the first of equal neighbours: move the later into its place.
        pairs.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                std::mem::swap(later, kept);
            }
            same
        });
        pairs.shrink_to_fit();
        Self {
            run: pairs,
            since: HashMap::new(),
        }
    }

    pub(super) fn get(&self, digest: u64) -> Option<&HeldId> {
        match self.since.get(&digest) {
            Some(changed) => changed.as_ref(),
            None => Some(&self.run[self.run_at(digest)?].1),
        }
    }

    pub(super) fn insert(&mut self, digest: u64, id: HeldId) {
        self.since.insert(digest, Some(id));
        self.fold_when_due();
    }

    pub(super) fn remove(&mut self, digest: u64) {
        self.since.insert(digest, None);
        self.fold_when_due();
    }

    /// Digests held.
    pub(super) fn len(&self) -> usize {
        let shadowed = self
            .since
            .keys()
            .filter(|&&d| self.run_at(d).is_some())
            .count();
        let set = self.since.values().filter(|id| id.is_some()).count();
        self.run.len() - shadowed + set
    }

    /// Where `digest` lies in the run.
    fn run_at(&self, digest: u64) -> Option<usize> {
        self.run.binary_search_by_key(&digest, |&(d, _)| d).ok()
    }

    fn fold_when_due(&mut self) {
        if self.since.len() > FOLD_AFTER_AT_LEAST.max(self.run.len() / 8) {
            self.fold();
        }
    }

    /// Makes the run hold the changes. The stable sort finds the run and the sorted changes
    /// already in order and merges them in one pass.
    fn fold(&mut self) {
        let since = std::mem::take(&mut self.since);
        self.run.retain(|(digest, _)| !since.contains_key(digest));
        let mut set: Vec<(u64, HeldId)> = since
            .into_iter()
            .filter_map(|(digest, id)| Some((digest, id?)))
            .collect();
        set.sort_unstable_by_key(|&(digest, _)| digest);
        self.run.reserve_exact(set.len());
        self.run.extend(set);
        self.run.sort_by_key(|&(digest, _)| digest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u64) -> HeldId {
        HeldId::new(&format!("m{n}"))
    }

    fn text(digests: &Digests, digest: u64) -> Option<String> {
        digests.get(digest).map(HeldId::text)
    }

    #[test]
    fn the_later_of_two_read_with_one_digest_is_kept() {
        let digests = Digests::new(vec![(5, id(1)), (3, id(2)), (5, id(3))]);
        assert_eq!(text(&digests, 5).as_deref(), Some("m3"));
        assert_eq!(text(&digests, 3).as_deref(), Some("m2"));
        assert_eq!(digests.len(), 2);
    }

    /// Changes answer alike before and after they are folded into the run, whatever their
    /// order, against a map given the same changes.
    #[test]
    fn changes_answer_as_a_map_would_before_and_after_each_fold() {
        const SPACE: u64 = 20_000;
        let mut digests = Digests::new((0..3000).map(|n| (n * 7 % 3001, id(n))).collect());
        let mut map: HashMap<u64, String> =
            (0..3000).map(|n| (n * 7 % 3001, format!("m{n}"))).collect();
        let mut folds = 0;
        for step in 0u64..30_000 {
            let digest = step.wrapping_mul(0x9e37_79b9_7f4a_7c15) % SPACE;
            if step % 3 == 0 {
                digests.remove(digest);
                map.remove(&digest);
            } else {
                digests.insert(digest, id(step));
                map.insert(digest, format!("m{step}"));
            }
            if digests.since.is_empty() {
                folds += 1;
            }
            if step % 2999 == 0 {
                for d in 0..SPACE {
                    assert_eq!(text(&digests, d), map.get(&d).cloned(), "digest {d}");
                }
                assert_eq!(digests.len(), map.len());
            }
        }
        assert!(folds >= 3, "the changes were folded in {folds} times");
        digests.fold();
        assert!(digests.run.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(digests.len(), map.len());
        for d in 0..SPACE {
            assert_eq!(text(&digests, d), map.get(&d).cloned());
        }
    }
}
