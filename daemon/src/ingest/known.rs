//! The same text said again about the same moment is the same memory: re-adding it does not
//! grow the store; it counts as an access of the stored one. Text said at another time or in
//! another session is a new memory.
//!
//! Which texts are stored is kept in memory (loaded once at start), so the common case, a new
//! text, costs no query. A hit is checked against the store before it is trusted, so an entry
//! left behind by a forget or a merge is only ever a wasted lookup, never a wrong answer.

use std::collections::HashMap;
use std::sync::Mutex;

use super::Known;
use crate::store::col;
use crate::store::filter::current;
use crate::store::{MemoryRecord, Store, StoreError};

type Key = (String, String, Option<String>, Option<i64>);

fn key(r: &MemoryRecord) -> Key {
    (
        r.namespace.clone(),
        r.content_hash.clone(),
        r.session_id.clone(),
        r.occurred_at,
    )
}

/// Current memories by what they say, namespace, session and time.
#[derive(Default)]
pub struct KnownContent {
    ids: Mutex<HashMap<Key, String>>,
}

impl KnownContent {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, String>> {
        self.ids.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads the current memories' keys (a few columns, one pass).
    pub async fn load(&self, store: &Store) -> Result<usize, StoreError> {
        let rows = store
            .columns_of(
                &current(),
                &[
                    "id",
                    "namespace",
                    "content_hash",
                    "session_id",
                    "occurred_at",
                ],
            )
            .await?;
        let mut ids = self.lock();
        for r in rows {
            ids.insert(key(&r), r.id);
        }
        Ok(ids.len())
    }

    pub fn insert(&self, r: &MemoryRecord) {
        self.lock().insert(key(r), r.id.clone());
    }

    pub fn remove(&self, r: &MemoryRecord) {
        let mut ids = self.lock();
        if ids.get(&key(r)) == Some(&r.id) {
            ids.remove(&key(r));
        }
    }

    /// Splits `records` into the new ones and, per item, what `add` answers, with the ids
    /// of stored memories said again (each counts as an access).
    pub(super) async fn skip_known(
        &self,
        store: &Store,
        records: Vec<MemoryRecord>,
    ) -> Result<(Vec<MemoryRecord>, Vec<Known>, Vec<String>), StoreError> {
        let candidates: Vec<String> = {
            let ids = self.lock();
            records
                .iter()
                .filter_map(|r| ids.get(&key(r)).cloned())
                .collect()
        };
        let mut stored: HashMap<Key, MemoryRecord> = HashMap::new();
        if !candidates.is_empty() {
            let rows = store
                .plain_rows(&col("id").one_of(&candidates).and(current()), None)
                .await?;
            stored = rows.into_iter().map(|r| (key(&r), r)).collect();
        }
        let mut fresh: Vec<MemoryRecord> = Vec::new();
        let mut answer = Vec::new();
        let mut repeated = Vec::new();
        let mut in_batch: HashMap<Key, usize> = HashMap::new();
        for r in records {
            let k = key(&r);
            if let Some(existing) = stored.get(&k) {
                repeated.push(existing.id.clone());
                answer.push(Known::Existing(Box::new(existing.clone())));
            } else if let Some(&i) = in_batch.get(&k) {
                answer.push(Known::Existing(Box::new(fresh[i].clone())));
            } else {
                in_batch.insert(k, fresh.len());
                fresh.push(r);
                answer.push(Known::New);
            }
        }
        Ok((fresh, answer, repeated))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::tests::record;

    #[test]
    fn only_the_current_holder_of_a_key_is_removed() {
        let known = KnownContent::default();
        let (a, mut b) = (record("a", "x", 4), record("b", "x", 4));
        b.content_hash = a.content_hash.clone();
        known.insert(&a);
        known.insert(&b);
        known.remove(&a);
        assert_eq!(known.lock().get(&key(&b)), Some(&"b".to_string()));
        known.remove(&b);
        assert!(known.lock().is_empty());
    }
}
