//! The same text said again about the same moment is the same memory: re-adding it does not
//! grow the store; it counts as an access of the stored one. Text said at another time or in
//! another session is a new memory.
//!
//! Which texts are stored is kept in memory (loaded once at start, `digests.rs`), so the
//! common case, a new text, costs no query. A hit is checked against the store before it is
//! trusted, so an entry left behind by a forget or a merge is only ever a wasted lookup, never
//! a wrong answer.
//!
//! Adds of the same key at the same moment take turns ([`KnownContent::claim`]): the first
//! stores it, the others then find it stored.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::digests::Digests;
use super::Known;
use crate::held::id::HeldId;
use crate::store::col;
use crate::store::filter::current;
use crate::store::{MemoryRecord, Store, StoreError};

type Key = (String, String, Option<String>, Option<i64>);

/// A key as kept for every current memory: 8 bytes instead of its strings (at 1M memories
/// the strings took hundreds of MB). Two keys sharing a digest cost nothing but a lookup:
/// a hit is checked against the stored row before it is trusted.
fn digest(k: &Key) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    k.hash(&mut hasher);
    hasher.finish()
}

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
    ids: Mutex<Digests>,
    /// Keys an add is storing right now; others with the same key wait for it.
    claims: Mutex<HashMap<Key, Arc<Notify>>>,
}

/// The keys one add is storing; released (and their waiters woken) on drop.
pub struct Claim<'a> {
    known: &'a KnownContent,
    keys: Vec<Key>,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let mut claims = self.known.claims();
        for k in &self.keys {
            if let Some(notify) = claims.remove(k) {
                notify.notify_waiters();
            }
        }
    }
}

impl KnownContent {
    fn lock(&self) -> std::sync::MutexGuard<'_, Digests> {
        self.ids.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn claims(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Arc<Notify>>> {
        self.claims.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Claims the keys of `records` for one add, once no other add holds any of them (all at
    /// once, so two batches cannot each hold half of the other's keys).
    pub async fn claim(&self, records: &[MemoryRecord]) -> Claim<'_> {
        let keys: Vec<Key> = records
            .iter()
            .map(key)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        loop {
            let held = {
                let mut claims = self.claims();
                match keys.iter().find_map(|k| claims.get(k).cloned()) {
                    Some(notify) => notify,
                    None => {
                        for k in &keys {
                            claims.insert(k.clone(), Arc::new(Notify::new()));
                        }
                        return Claim { known: self, keys };
                    }
                }
            };
            let released = held.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            // Released between the look and `enable`? Then there is nothing to wait for.
            let still_held = self
                .claims()
                .values()
                .any(|other| Arc::ptr_eq(other, &held));
            if still_held {
                released.await;
            }
        }
    }

    /// Reads the current memories' keys (a few columns, one pass).
    pub async fn load(&self, store: &Store) -> Result<usize, StoreError> {
        let mut loaded: Vec<(u64, HeldId)> = Vec::new();
        let columns = [
            "id",
            "namespace",
            "content_hash",
            "session_id",
            "occurred_at",
        ];
        store
            .each_with_columns(&current(), &columns, |r| {
                loaded.push((digest(&key(&r)), HeldId::new(&r.id)));
            })
            .await?;
        let loaded = Digests::new(loaded);
        let count = loaded.len();
        // Replaces what was known: after `mnemo encrypt` every stored hash is keyed.
        *self.lock() = loaded;
        Ok(count)
    }

    pub fn insert(&self, r: &MemoryRecord) {
        self.lock().insert(digest(&key(r)), HeldId::new(&r.id));
    }

    pub fn remove(&self, r: &MemoryRecord) {
        let mut ids = self.lock();
        let k = digest(&key(r));
        if ids.get(k).is_some_and(|id| id.is(&r.id)) {
            ids.remove(k);
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
                .filter_map(|r| ids.get(digest(&key(r))).map(HeldId::text))
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
        assert_eq!(
            known
                .lock()
                .get(digest(&key(&b)))
                .map(HeldId::text)
                .as_deref(),
            Some("b")
        );
        known.remove(&b);
        assert_eq!(known.lock().len(), 0);
    }

    #[tokio::test]
    async fn a_second_claim_of_a_key_waits_for_the_first() {
        let known = Arc::new(KnownContent::default());
        let a = record("a", "x", 4);
        let first = known.claim(std::slice::from_ref(&a)).await;
        let (k2, a2) = (known.clone(), a.clone());
        let second = tokio::spawn(async move {
            let _claim = k2.claim(std::slice::from_ref(&a2)).await;
        });
        tokio::task::yield_now().await;
        assert!(!second.is_finished());
        drop(first);
        second.await.unwrap();
        assert!(known.claims().is_empty());
    }
}
