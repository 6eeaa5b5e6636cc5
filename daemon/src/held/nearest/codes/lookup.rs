//! Rows found by a key each holds (its id, its lineage, its row id): a hash table of row
//! indexes alone, 4 bytes a slot, whose keys are read from the rows themselves. A
//! `HashMap<u64, u32>` of each key's hash took 16 bytes a slot (the pair padded to 8), 36 MB
//! a map at 1M rows, and could not hold two rows whose keys hashed alike.

use std::hash::{BuildHasher, Hash};

use hashbrown::hash_table::Entry;
use hashbrown::HashTable;

/// The hash a key is found by.
pub(super) fn key_hash<K: Hash + ?Sized>(key: &K) -> u64 {
    rustc_hash::FxBuildHasher.hash_one(key)
}

#[derive(Default)]
pub(super) struct RowLookup {
    rows: HashTable<u32>,
}

impl RowLookup {
    /// The row held under `hash` whose key `is` says is the one looked for.
    pub(super) fn find(&self, hash: u64, mut is: impl FnMut(u32) -> bool) -> Option<u32> {
        self.rows.find(hash, |&r| is(r)).copied()
    }

    /// Holds `row` under `hash`, in place of a row whose key `same` says is `row`'s.
    /// `hash_of` gives a held row's hash, for when the table grows.
    pub(super) fn insert(
        &mut self,
        hash: u64,
        row: u32,
        mut same: impl FnMut(u32) -> bool,
        hash_of: impl Fn(u32) -> u64,
    ) {
        match self.rows.entry(hash, |&r| same(r), |&r| hash_of(r)) {
            Entry::Occupied(mut held) => *held.get_mut() = row,
            Entry::Vacant(slot) => {
                slot.insert(row);
            }
        }
    }

    /// Lets `row`, held under `hash`, go.
    pub(super) fn remove(&mut self, hash: u64, row: u32) {
        if let Ok(held) = self.rows.find_entry(hash, |&r| r == row) {
            held.remove();
        }
    }

    pub(super) fn reserve(&mut self, additional: usize, hash_of: impl Fn(u32) -> u64) {
        self.rows.reserve(additional, |&r| hash_of(r));
    }

    pub(super) fn shrink_to_fit(&mut self, hash_of: impl Fn(u32) -> u64) {
        self.rows.shrink_to_fit(|&r| hash_of(r));
    }

    /// Bytes the table takes: its slots (an eighth to a half of them empty, as it grows by
    /// doubling), with a control byte each.
    pub(super) fn bytes(&self) -> usize {
        let slots = if self.rows.capacity() == 0 {
            0
        } else {
            (self.rows.capacity() * 8 / 7).next_power_of_two()
        };
        slots * (std::mem::size_of::<u32>() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys chosen so that several share a hash: the table still tells them apart by the
    /// keys the rows hold.
    #[test]
    fn rows_whose_keys_hash_alike_are_each_found_by_their_own_key() {
        let keys: Vec<String> = (0..1000).map(|i| format!("key-{i}")).collect();
        let hash = |k: &str| key_hash(k) % 7;
        let mut lookup = RowLookup::default();
        for (row, key) in keys.iter().enumerate() {
            let row = row as u32;
            lookup.insert(
                hash(key),
                row,
                |r| keys[r as usize] == *key,
                |r| hash(&keys[r as usize]),
            );
        }
        for (row, key) in keys.iter().enumerate() {
            let found = lookup.find(hash(key), |r| keys[r as usize] == *key);
            assert_eq!(found, Some(row as u32));
        }
        assert_eq!(
            lookup.find(hash("key-x"), |r| keys[r as usize] == "key-x"),
            None
        );
        // A row let go is found no more; the rest still are.
        lookup.remove(hash(&keys[10]), 10);
        assert_eq!(
            lookup.find(hash(&keys[10]), |r| keys[r as usize] == keys[10]),
            None
        );
        assert_eq!(
            lookup.find(hash(&keys[11]), |r| keys[r as usize] == keys[11]),
            Some(11)
        );
        // A row inserted under a held key takes its place (a later version of a lineage).
        let mut keys = keys;
        keys.push(keys[5].clone());
        let key = &keys[1000];
        lookup.insert(
            hash(key),
            1000,
            |r| keys[r as usize] == *key,
            |r| hash(&keys[r as usize]),
        );
        assert_eq!(
            lookup.find(hash(key), |r| keys[r as usize] == *key),
            Some(1000)
        );
        lookup.shrink_to_fit(|r| hash(&keys[r as usize]));
        assert!(lookup.bytes() >= 1000 * 5 && lookup.bytes() < 1000 * 5 * 4);
    }
}
