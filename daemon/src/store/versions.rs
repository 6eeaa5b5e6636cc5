//! A disk bound on old versions. Each table's old versions are kept a while (the memories'
//! for `consolidate.version_retention_hours`, the bookkeeping tables' an hour), but under a
//! bulk load they outgrow the table many times over: each fold of new rows writes the
//! B-trees and the full-text index anew, and every few folds the ANN index, so loading 1M
//! memories left 66 GB of index files only old versions used beside a 2.3 GB table, and
//! filled the disk at 972k. So a table whose directory holds more than twice what its
//! current version uses (and some slack) has its versions older than a few minutes pruned
//! at once, whatever the retention says.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use super::error::StoreError;
use super::Store;

/// When a table's old versions are pruned ahead of their retention.
#[derive(Debug, Clone, Copy)]
pub struct VersionBound {
    /// Bytes on disk past twice the current version's beyond which old versions go.
    pub slack_bytes: u64,
    /// Versions younger than this stay even then: a search or a commit in flight reads
    /// its version's files, and the values held for searches point into them until the
    /// next maintenance pass reads them again.
    pub kept: Duration,
}

impl Default for VersionBound {
    fn default() -> Self {
        Self {
            // A small store's few versions are not worth a prune every pass.
            slack_bytes: 256 << 20,
            kept: Duration::from_secs(120),
        }
    }
}

/// The version at which each table was last found within its bound: one no commit has
/// changed since cannot have outgrown it, so its directory is not walked again (a busy
/// store's memories keep a manifest a commit for a day, tens of thousands of files).
#[derive(Debug, Default)]
pub struct WithinBound(HashMap<String, u64>);

/// One table pruned for outgrowing [`VersionBound`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrunedForDisk {
    pub table: String,
    /// Bytes the current version uses.
    pub current: u64,
    /// Bytes on disk before and after the prune.
    pub before: u64,
    pub after: u64,
}

impl Store {
    /// Prunes the old versions of every table that takes more disk than `bound` allows;
    /// returns those it pruned. `within` remembers the tables found within it.
    pub async fn bound_old_versions(
        &self,
        bound: VersionBound,
        within: &mut WithinBound,
    ) -> Result<Vec<PrunedForDisk>, StoreError> {
        let mut pruned = Vec::new();
        for table in self.tables() {
            let version = table.version().await?;
            if within.0.get(table.name()) == Some(&version) {
                continue;
            }
            // Data, index and overlay files the current version lists, from its manifest.
            let current = table.stats().await?.total_bytes as u64;
            let allowed = current.saturating_mul(2).saturating_add(bound.slack_bytes);
            let dir = self.db_dir.join(format!("{}.lance", table.name()));
            let before = disk_bytes_off_reactor(&dir).await;
            if before <= allowed {
                within.0.insert(table.name().to_string(), version);
                continue;
            }
            // A prune commits nothing: the version stays, and a table still past its bound
            // (its versions too young to go) is looked at again next time.
            self.prune(&table, bound.kept).await?;
            let after = disk_bytes_off_reactor(&dir).await;
            if after <= allowed {
                within.0.insert(table.name().to_string(), version);
            }
            tracing::info!(
                "old versions of {} took {} MB beside its current {} MB: pruned those older than {} s, {} MB left",
                table.name(),
                before >> 20,
                current >> 20,
                bound.kept.as_secs(),
                after >> 20
            );
            pruned.push(PrunedForDisk {
                table: table.name().to_string(),
                current,
                before,
                after,
            });
        }
        Ok(pruned)
    }
}

/// Bytes of every file under `dir`: what it takes on disk.
pub fn disk_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => disk_bytes(&e.path()),
            Ok(_) => e.metadata().map(|m| m.len()).unwrap_or(0),
            Err(_) => 0,
        })
        .sum()
}

/// [`disk_bytes`] on the blocking pool: a directory walk must not hold a reactor thread.
pub async fn disk_bytes_off_reactor(dir: &Path) -> u64 {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || disk_bytes(&dir))
        .await
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::super::rewrite::tests::{assert_all_found, memory};
    use super::super::{test_store, Fold, MemoryRecord, WriteOp};
    use super::*;

    #[test]
    fn disk_bytes_sums_nested_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), [0u8; 10]).unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("d/b"), [0u8; 5]).unwrap();
        assert_eq!(disk_bytes(dir.path()), 15);
        assert_eq!(disk_bytes(&dir.path().join("missing")), 0);
    }

    /// Many folds leave index files only old versions use; past the bound they go, within
    /// it they stay (the retention decides).
    #[tokio::test]
    async fn old_versions_that_outgrow_the_table_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let store = test_store(dir.path()).await;
        let mut all: Vec<MemoryRecord> = Vec::new();
        for batch in 0..12 {
            let rows: Vec<MemoryRecord> = (batch * 50..batch * 50 + 50).map(memory).collect();
            all.extend(rows.iter().cloned());
            store.writer().submit(WriteOp::Insert(rows)).await.unwrap();
            store.maintain_indexes(1).await.unwrap();
            store.fold_beside(Fold::Whole).await.unwrap();
        }
        let table = super::super::MEMORIES;
        let table_dir = dir.path().join(format!("{table}.lance"));
        let versions = store.memories.list_versions().await.unwrap().len();
        let current = store.memories.stats().await.unwrap().total_bytes as u64;
        let before = disk_bytes(&table_dir);
        assert!(before > 2 * current, "{before} on disk, {current} current");

        let generous = VersionBound {
            slack_bytes: before,
            kept: Duration::ZERO,
        };
        let mut within = WithinBound::default();
        let untouched = store
            .bound_old_versions(generous, &mut within)
            .await
            .unwrap();
        assert!(untouched.iter().all(|p| p.table != table), "{untouched:?}");
        assert_eq!(
            store.memories.list_versions().await.unwrap().len(),
            versions
        );

        let tight = VersionBound {
            slack_bytes: 0,
            kept: Duration::ZERO,
        };
        // A table found within its bound is not measured again until a commit changes it.
        let unmeasured = store.bound_old_versions(tight, &mut within).await.unwrap();
        assert!(
            unmeasured.iter().all(|p| p.table != table),
            "{unmeasured:?}"
        );
        let pruned = store
            .bound_old_versions(tight, &mut WithinBound::default())
            .await
            .unwrap();
        let memories = pruned.iter().find(|p| p.table == table).expect("pruned");
        assert_eq!(memories.before, before);
        assert!(memories.after <= 2 * current, "{memories:?}");
        assert_eq!(disk_bytes(&table_dir), memories.after);
        assert_eq!(store.memories.list_versions().await.unwrap().len(), 1);
        // Nothing current went with them.
        let sample: Vec<MemoryRecord> = all.iter().step_by(25).cloned().collect();
        assert_all_found(&store, &sample, "after pruning for disk").await;
    }
}
