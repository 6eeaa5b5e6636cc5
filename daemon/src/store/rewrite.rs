//! Rewrites of a table's files: folds of new rows into the indexes, compactions and prunes
//! of old versions. Those of the memories are built beside the writer from a snapshot and
//! committed in its turn (`beside.rs`), so writes go on meanwhile; each holds the one
//! rewrite lock (`Store::rewrites`), so no two rebase over each other.

use std::time::Duration;

use lancedb::table::{CompactionOptions, Duration as Age, OptimizeAction, OptimizeStats};
use lancedb::Table;

use super::beside::{self, Fold, IndexRows, Merged};
use super::error::{InTurn, StoreError};
use super::indexes::FOLD_EACH_PASS_AFTER_ROWS;
use super::{Store, WriteOp};

/// Small fragments (one per small commit) of a bookkeeping table past which a pass compacts
/// them; reads and commits slow down with every fragment.
const SMALL_FRAGMENTS_BEFORE_COMPACTING: usize = 64;
/// Versions of the bookkeeping tables younger than this are kept (and pruning runs this
/// often): nothing reads their past, only a commit in flight needs its version.
pub const BOOKKEEPING_VERSIONS_KEPT: Duration = Duration::from_secs(3600);

/// Held by whoever rewrites a table's files (`Store::rewrites`).
pub(super) type Rewriting<'a> = tokio::sync::MutexGuard<'a, ()>;

/// Tries of a fold or a compaction whose commit writes voided, before the writer does the
/// whole of it in its turn.
const TRIES: usize = 3;

impl Store {
    /// Folds new rows into the memories' indexes: the new segments are built beside the
    /// writer, so writes go on meanwhile (at 1M memories a fold held every write for 5.2 s
    /// when the writer ran it), and committed in its turn (`beside.rs`). Lance rebases the
    /// commit over the appends made meanwhile (their rows stay unindexed, searched one by
    /// one, until the next fold). Not during an ANN training or a rewrite (the same lock):
    /// either would void the other's commit.
    /// Returns what it did.
    pub async fn fold_beside(&self, how: Fold) -> Result<Vec<&'static str>, StoreError> {
        let memories = &self.memories;
        let mut done = Vec::new();
        // The new rows' small fragments are merged first: no index covers them yet, so the
        // merge's commit is quick, and the fold then indexes one fragment rather than many
        // a compaction would later have to move the indexes' rows out of.
        if self.compact_merging(memories, Merged::Unindexed).await? > 0 {
            done.push("compacted small fragments");
        }
        let rewriting = self.rewrites.lock().await;
        if self.fold_holding(&rewriting, memories, how).await? > 0 {
            self.drop_replaced_file_pages().await;
            done.push(match how {
                Fold::Settle => "merged the ANN index's segments into one",
                Fold::Segment | Fold::Whole => "folded new rows into indexes",
            });
        }
        Ok(done)
    }

    /// Empties LanceDB's caches once a fold, compaction, ANN build or purge has replaced
    /// files. What they held of the replaced files (index pages, data files' footers) is
    /// never read again, but the caches (keyed by hashes, so they cannot tell it from what
    /// is current) would keep it until full: after loading 100k memories the index cache
    /// held 116 MB of its 128, where a restarted mnemod's searches need 12. What is current
    /// is read again by the next searches; the memory freed goes back to the system at the
    /// end of the maintenance pass.
    pub(super) async fn drop_replaced_file_pages(&self) {
        self.index_cache.clear().await;
        self.session.file_metadata_cache().clear().await;
    }

    /// Empties LanceDB's caches and hands the memory freed back, between two passes over
    /// the table: what one pass's reads loaded serves neither the next nor searches, which
    /// read again what they need. At 1M memories dedup's lookups by id left ~99 MB of index
    /// pages there, held through the summaries and the storage phase's compaction (whose
    /// remap rebuilds the full-text index in memory).
    pub async fn drop_cached_pages(&self) {
        self.drop_replaced_file_pages().await;
        crate::process::release_freed_memory();
    }

    /// Writes a fold's or a compaction's files beside the writer with `prepare` (None when
    /// there is nothing to do), holding the rewrite lock (a fold, a compaction and an ANN
    /// training void each other's commits), and commits them in the writer's turn
    /// (`beside.rs`). One a write voided (it changed a row the compaction moved) is prepared
    /// again; after [`TRIES`], `whole_in_turn` does all of it in the writer's turn, where no
    /// write can. Returns what the commit returns.
    pub(super) async fn beside_then_in_turn<F, Fut>(
        &self,
        _rewriting: &Rewriting<'_>,
        what: &'static str,
        table: &Table,
        prepare: F,
        whole_in_turn: impl std::future::Future<Output = Result<u64, StoreError>>,
    ) -> Result<u64, StoreError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<Option<InTurn>, StoreError>>,
    {
        for _ in 0..TRIES {
            let Some(commit) = prepare().await? else {
                return Ok(0);
            };
            match self.writer.in_turn(what, table.name(), commit).await {
                Err(e) if voided_by_a_write(&e) => {
                    tracing::debug!("{what} lost to a write: {e}");
                }
                done => return done,
            }
        }
        whole_in_turn.await
    }

    /// Folds new rows of `table` into its indexes as `how` says, beside the writer; a
    /// bookkeeping table's too: the edges' three B-trees held every write for 0.36–0.44 s
    /// at ~500k edges when the writer ran the whole fold. Returns what the commit returns.
    pub(super) async fn fold_holding(
        &self,
        rewriting: &Rewriting<'_>,
        table: &Table,
        how: Fold,
    ) -> Result<u64, StoreError> {
        let bounds = beside::FoldBounds::of(&self.config);
        let prepare = || beside::build_fold(table, how, bounds);
        let whole = async {
            if table.name() == super::MEMORIES {
                return self.writer.submit(WriteOp::FoldIndexes).await;
            }
            let fold = OptimizeAction::Index(Default::default());
            self.writer.optimize(table.clone(), fold).await?;
            Ok(1)
        };
        self.beside_then_in_turn(rewriting, "committing a fold", table, prepare, whole)
            .await
    }

    /// Merges `table`'s small fragments: the merged fragments are written beside the
    /// writer and committed in its turn. At 1M memories the compaction (which remaps every
    /// index to the rows' new places) held every write for 4.1 s when the writer ran it
    /// whole, and 10–14 s through a load of single adds; the edges' 0.4 s. The indexes'
    /// segments are written again beside the writer too (`remap.rs`): merging 252 fragments
    /// at 1M held writes 0.40 s rather than 7.29. Appends made meanwhile keep their
    /// fragments. Returns the fragments merged away.
    pub async fn compact(&self, table: &Table) -> Result<u64, StoreError> {
        self.compact_merging(table, Merged::Any).await
    }

    /// [`Store::compact`] of the `which` of `table`'s fragments.
    pub(super) async fn compact_merging(
        &self,
        table: &Table,
        which: Merged,
    ) -> Result<u64, StoreError> {
        let rewriting = self.rewrites.lock().await;
        let options = beside::small_fragments_merged();
        self.rewrite_holding(&rewriting, table, &options, which, IndexRows::Moved)
            .await
    }

    /// Writes the `which` of `table`'s fragments that a compaction with `options` merges
    /// beside the writer, and commits them in its turn, the indexes' rows as `index_rows`
    /// says (when writes voided every try, the writer compacts in its turn, moving them).
    /// Returns the fragments merged away.
    pub(super) async fn rewrite_holding(
        &self,
        rewriting: &Rewriting<'_>,
        table: &Table,
        options: &CompactionOptions,
        which: Merged,
        index_rows: IndexRows,
    ) -> Result<u64, StoreError> {
        // What is held of the memories' rows is held where the compaction moved them.
        let observer = (table.name() == super::MEMORIES)
            .then(|| self.observer())
            .flatten();
        let prepare = || {
            let observer = observer.clone();
            let moved = move |moves| {
                if let Some(observer) = observer {
                    observer.memories_moved(moves);
                }
            };
            beside::rewrite(table, options.clone(), which, index_rows, moved)
        };
        let whole = async {
            let compact = OptimizeAction::Compact {
                options: options.clone(),
                remap_options: None,
            };
            let stats = self.writer.optimize(table.clone(), compact).await?;
            Ok(stats.compaction.map_or(0, |c| c.fragments_removed as u64))
        };
        let merged = self
            .beside_then_in_turn(rewriting, "committing a compaction", table, prepare, whole)
            .await?;
        // Only the memories' files weigh in the caches: emptying them for a bookkeeping
        // table (compacted every few minutes while busy) made each search read the ANN
        // index's pages again.
        if merged > 0 && table.name() == super::MEMORIES {
            self.drop_replaced_file_pages().await;
        }
        Ok(merged)
    }

    /// Deletes `table`'s versions older than `age` and the files only they use. Beside the
    /// writer: it commits nothing, and files no version lists yet (a commit under way) are
    /// kept since they are recent (`delete_unverified` off). Through the writer, pruning a
    /// store's memories held every write for 2.4 s. It waits for a purge, a compaction or
    /// an ANN build under way (the rewrite lock), so two never delete files at once.
    pub async fn prune(&self, table: &Table, age: Duration) -> Result<OptimizeStats, StoreError> {
        let rewriting = self.rewrites.lock().await;
        self.prune_holding(&rewriting, table, age).await
    }

    /// [`Store::prune`] by whoever holds the rewrite lock.
    pub(super) async fn prune_holding(
        &self,
        _rewriting: &Rewriting<'_>,
        table: &Table,
        age: Duration,
    ) -> Result<OptimizeStats, StoreError> {
        let action = OptimizeAction::Prune {
            older_than: Some(Age::from_std(age).unwrap_or(Age::MAX)),
            delete_unverified: Some(false),
            error_if_tagged_old_versions: Some(false),
        };
        Ok(table.optimize(action).await?)
    }

    /// Deletes the memories' versions older than `age` and the data and index files only
    /// they use; returns how many versions went.
    pub async fn prune_memory_versions(&self, age: Duration) -> Result<u64, StoreError> {
        Ok(old_versions(&self.prune(&self.memories, age).await?))
    }

    /// The bookkeeping tables (access log, snapshots, processes, runs, meta) take a commit
    /// per small append. Consolidation tidies them while idle; this keeps them from growing
    /// without bound through a long busy stretch: small fragments merged (each version's
    /// manifest lists every fragment, so unmerged they grow quadratically), new rows folded
    /// into the indexes of those that have them (the edges' ends: unfolded, every walk scans
    /// the table), and with `prune_older_than`, old versions deleted.
    pub async fn tidy_bookkeeping(
        &self,
        prune_older_than: Option<Duration>,
    ) -> Result<Vec<&'static str>, StoreError> {
        let mut done = Vec::new();
        let mut pruned = 0;
        for table in self.tables().iter().filter(|t| t.name() != super::MEMORIES) {
            let (unindexed, indexed) = beside::small_fragments(table).await?;
            if unindexed + indexed >= SMALL_FRAGMENTS_BEFORE_COMPACTING {
                self.compact(table).await?;
                done.push("compacted bookkeeping tables");
            }
            if unindexed_rows(table).await? >= FOLD_EACH_PASS_AFTER_ROWS {
                let rewriting = self.rewrites.lock().await;
                self.fold_holding(&rewriting, table, Fold::Segment).await?;
                done.push("folded new rows into the edge indexes");
            }
            if let Some(age) = prune_older_than {
                pruned += old_versions(&self.prune(table, age).await?);
            }
        }
        if pruned > 0 {
            done.push("pruned old bookkeeping versions");
        }
        done.dedup();
        Ok(done)
    }
}

/// The old versions a prune deleted.
pub(super) fn old_versions(stats: &OptimizeStats) -> u64 {
    stats.prune.as_ref().map_or(0, |p| p.old_versions)
}

/// Rows of `table` its first index does not cover yet (they are scanned one by one by every
/// lookup); 0 for a table without indexes.
async fn unindexed_rows(table: &Table) -> Result<usize, StoreError> {
    let Some(index) = table.list_indices().await?.into_iter().next() else {
        return Ok(0);
    };
    let stats = table.index_stats(&index.name).await?;
    Ok(stats.map(|s| s.num_unindexed_rows).unwrap_or(0))
}

/// Whether `e` says writes committed since voided a commit (trying again may pass).
fn voided_by_a_write(e: &StoreError) -> bool {
    let text = e.to_string().to_lowercase();
    text.contains("conflict") || text.contains("too many concurrent writers")
}

#[cfg(test)]
#[path = "rewrite_tests.rs"]
pub(crate) mod tests;
