//! Current memories by kind and by namespace, kept in memory and changed by the writer as
//! it commits, so `daemon.status` (which the dashboard asks every 2 s) never scans the table.

use std::collections::BTreeMap;
use std::sync::Mutex;

use lancedb::Table;
use mnemo_protocol::daemon::MemoryCounts;
use mnemo_protocol::memory::MemoryKind;

use super::column::Column;
use super::error::StoreError;
use super::filter::current;
use super::schema::{from_batch, MemoryRecord};
use super::sql::{col, matching, Pred};

#[derive(Default)]
pub struct Counts(Mutex<MemoryCounts>);

impl Counts {
    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryCounts> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self) -> MemoryCounts {
        self.lock().clone()
    }

    /// Current memories in all.
    pub fn total(&self) -> u64 {
        self.lock().total
    }

    /// Whether every current memory is of `namespace` (and there is at least one).
    pub fn all_of(&self, namespace: &str) -> bool {
        let counts = self.lock();
        counts.total > 0 && counts.by_namespace.get(namespace) == Some(&counts.total)
    }

    /// Counts `row` `by` more (1 or -1).
    fn change(counts: &mut MemoryCounts, row: &MemoryRecord, by: i64) {
        Self::count(counts, row.kind.as_str(), &row.namespace, by);
    }

    /// Counts a memory of `kind` in `namespace` `by` more (1 or -1).
    fn count(counts: &mut MemoryCounts, kind: &str, namespace: &str, by: i64) {
        fn bump(map: &mut BTreeMap<String, u64>, key: &str, by: i64) {
            let entry = match map.get_mut(key) {
                Some(entry) => entry,
                None => map.entry(key.to_string()).or_default(),
            };
            *entry = entry.saturating_add_signed(by);
            if *entry == 0 {
                map.remove(key);
            }
        }
        bump(&mut counts.by_kind, kind, by);
        bump(&mut counts.by_namespace, namespace, by);
        counts.total = counts.total.saturating_add_signed(by);
    }

    /// New rows committed; the current ones count.
    pub fn added(&self, rows: &[MemoryRecord]) {
        Self::add_current(&mut self.lock(), rows);
    }

    fn add_current(counts: &mut MemoryCounts, rows: &[MemoryRecord]) {
        for r in rows.iter().filter(|r| r.valid_to.is_none()) {
            Self::change(counts, r, 1);
        }
    }

    /// A current version closed and its successor added, under one lock (a status read
    /// between the two saw one memory too few).
    pub fn superseded(&self, old: &MemoryRecord, new: &MemoryRecord) {
        let mut counts = self.lock();
        Self::change(&mut counts, old, -1);
        Self::add_current(&mut counts, std::slice::from_ref(new));
    }

    /// Rows closed (as read while current, before the commit that closed them).
    pub fn closed(&self, rows: &[MemoryRecord]) {
        let mut counts = self.lock();
        for r in rows {
            Self::change(&mut counts, r, -1);
        }
    }

    /// The current rows among `ids`, with what they are counted by.
    pub async fn current_among(
        table: &Table,
        ids: &[&str],
    ) -> Result<Vec<MemoryRecord>, StoreError> {
        counted(table, &current().and(col("id").one_of(ids))).await
    }

    /// Counts from the table (at start, and after deletes and bulk closes), from the two
    /// columns counted: made a whole row each, the 1M memories of a store took ~0.8 GB for
    /// the moment they were counted, at every start.
    pub async fn recount(&self, table: &Table) -> Result<(), StoreError> {
        let mut counts = MemoryCounts::default();
        for batch in matching(table, &current(), Some(&COUNTED_BY)).await? {
            let [Some(kinds), Some(namespaces)] = COUNTED_BY.map(|c| batch.column_by_name(c))
            else {
                return Err(StoreError::Schema("memories lack kind or namespace".into()));
            };
            for row in 0..batch.num_rows() {
                let kind = MemoryKind::read(kinds.as_ref(), row);
                let namespace = String::read(namespaces.as_ref(), row);
                Self::count(&mut counts, kind.as_str(), &namespace, 1);
            }
        }
        *self.lock() = counts;
        Ok(())
    }
}

/// The columns memories are counted by.
const COUNTED_BY: [&str; 2] = ["kind", "namespace"];

/// The rows `predicate` admits, with what they are counted by.
async fn counted(table: &Table, predicate: &Pred) -> Result<Vec<MemoryRecord>, StoreError> {
    let batches = matching(table, predicate, Some(&COUNTED_BY)).await?;
    Ok(batches.iter().flat_map(from_batch).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::tests::record;
    use crate::store::WriteOp;

    #[test]
    fn adds_and_supersessions_keep_counts_by_kind_and_namespace() {
        let counts = Counts::default();
        let mut a = record("a", "x", 4);
        let b = record("b", "y", 4);
        counts.added(&[a.clone(), b.clone()]);
        assert_eq!(counts.get().total, 2);
        let mut next = a.clone();
        next.kind = MemoryKind::Semantic;
        next.namespace = "work".into();
        a.valid_to = Some(9);
        counts.superseded(&a, &next);
        let got = counts.get();
        assert_eq!(got.total, 2);
        assert_eq!(got.by_kind.get("episodic"), Some(&1));
        assert_eq!(got.by_kind.get("semantic"), Some(&1));
        assert_eq!(got.by_namespace.get(&b.namespace), Some(&1));
        assert_eq!(got.by_namespace.get("work"), Some(&1));
        counts.added(&[a]); // a closed row does not count
        assert_eq!(counts.get().total, 2);
    }

    /// A recount from the table finds what the writer counted as it wrote.
    #[tokio::test]
    async fn a_recount_finds_what_was_counted_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::test_store(dir.path()).await;
        let mut rows: Vec<MemoryRecord> = (0..5)
            .map(|i| {
                let mut r = record(&format!("m{i}"), "text", 4);
                r.namespace = ["home", "work"][i % 2].into();
                r
            })
            .collect();
        rows[1].kind = MemoryKind::Semantic;
        rows[4].valid_to = Some(9);
        store.writer().submit(WriteOp::Insert(rows)).await.unwrap();
        let written = store.counts.get();
        assert_eq!(written.total, 4);
        assert_eq!(written.by_namespace.get("home"), Some(&2));
        assert_eq!(written.by_kind.get("semantic"), Some(&1));

        let recounted = Counts::default();
        recounted.recount(&store.memories).await.unwrap();
        let recounted = recounted.get();
        assert_eq!(recounted.total, written.total);
        assert_eq!(recounted.by_kind, written.by_kind);
        assert_eq!(recounted.by_namespace, written.by_namespace);
    }
}
