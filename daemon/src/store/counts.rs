//! Current memories by kind, kept in memory and changed by the writer as it commits, so
//! `daemon.status` (which the dashboard asks every 2 s) never scans the table.

use std::sync::Mutex;

use lancedb::Table;
use mnemo_protocol::daemon::MemoryCounts;

use super::filter::current;
use super::schema::{from_batch, MemoryRecord};
use super::sql::matching;
use super::StoreError;

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

    fn change(&self, kind: &str, by: i64) {
        let mut counts = self.lock();
        let entry = counts.by_kind.entry(kind.to_string()).or_default();
        *entry = entry.saturating_add_signed(by);
        if *entry == 0 {
            counts.by_kind.remove(kind);
        }
        counts.total = counts.total.saturating_add_signed(by);
    }

    /// New rows committed; the current ones count.
    pub fn added(&self, rows: &[MemoryRecord]) {
        for r in rows.iter().filter(|r| r.valid_to.is_none()) {
            self.change(r.kind.as_str(), 1);
        }
    }

    /// A current version closed and its successor added.
    pub fn superseded(&self, old: &MemoryRecord, new: &MemoryRecord) {
        self.change(old.kind.as_str(), -1);
        self.added(std::slice::from_ref(new));
    }

    /// Counts from the table (at start, and after deletes and bulk closes).
    pub async fn recount(&self, table: &Table) -> Result<(), StoreError> {
        let batches = matching(table, &current(), Some(&["kind"])).await?;
        let mut counts = MemoryCounts::default();
        for r in batches.iter().flat_map(from_batch) {
            counts.total += 1;
            *counts.by_kind.entry(r.kind.to_string()).or_default() += 1;
        }
        *self.lock() = counts;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::tests::record;
    use mnemo_protocol::memory::MemoryKind;

    #[test]
    fn adds_and_supersessions_keep_counts_by_kind() {
        let counts = Counts::default();
        let mut a = record("a", "x", 4);
        let b = record("b", "y", 4);
        counts.added(&[a.clone(), b]);
        assert_eq!(counts.get().total, 2);
        let mut next = a.clone();
        next.kind = MemoryKind::Semantic;
        a.valid_to = Some(9);
        counts.superseded(&a, &next);
        let got = counts.get();
        assert_eq!(got.total, 2);
        assert_eq!(got.by_kind.get("episodic"), Some(&1));
        assert_eq!(got.by_kind.get("semantic"), Some(&1));
        counts.added(&[a]); // a closed row does not count
        assert_eq!(counts.get().total, 2);
    }
}
