//! Keeps the indexes useful as rows arrive: new rows are folded into the indexes once enough
//! have queued, small fragments are compacted, and what a forget deleted is purged from old
//! versions and index files within `store.purge_after_forget_secs`. The ANN vector index is
//! built here too. Training, folds and compaction of the memories run beside the writer
//! rather than through it (they take seconds at 1M rows), so that writes go on meanwhile;
//! the rest goes through the writer like every other write.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lancedb::index::vector::IvfSqIndexBuilder;
use lancedb::index::{Index, IndexType};
use lancedb::table::{CompactionOptions, Duration as Age, OptimizeAction, OptimizeStats};
use lancedb::Table;

use mnemo_protocol::daemon::IndexStatus;

use super::error::{InTurn, StoreError};
use super::{Store, WriteOp};
use crate::events::{Event, EventBus};
use crate::shutdown::Shutdown;

use super::beside::{self, Fold, IndexRows, Merged};
use super::versions::{VersionBound, WithinBound};
use super::writer::SCALAR_INDEXES;

/// How often index maintenance looks for new rows to fold in.
const MAINTENANCE_EVERY: Duration = Duration::from_secs(20);
/// Small fragments (one per small commit) past which maintenance compacts them; reads and
/// commits slow down with every fragment.
const SMALL_FRAGMENTS_BEFORE_COMPACTING: usize = 64;
/// Small fragments of the memories past which maintenance merges them: every search reads
/// its candidates' rows, and each fragment they are spread over costs it a read.
const SMALL_MEMORY_FRAGMENTS: usize = 8;
/// Small fragments of the memories some index covers past which they are merged too, at
/// the cost of moving the indexes' rows: at 1M memories 7 s of writing index segments again
/// (beside the writer: its commit held writes 0.4 s, 5–8 s when the commit moved them).
/// A fold leaves some (the rows added while its fragments were merged), ~10–20 through a
/// load of single adds at 1M; at 64 such merges came every few minutes. Idle consolidation
/// merges them before this.
const SMALL_INDEXED_MEMORY_FRAGMENTS: usize = 512;
/// Small fragments of the memories some index covers past which a pass that finds writes
/// paused merges them, moving the indexes' rows, which would take a load's CPU (at 1M
/// memories 7 s beside the writer, RSS to ~650–670 MB for a moment; at 100k under 1 s).
/// Each fold leaves one (the rows it indexed), and each costs every filtered search a
/// bitmap in its mask: at 1M memories beside 2,200 of another namespace, the 252 a load
/// left made the full-text leg p50 15.7 ms, merged into 28 fragments 9.0–9.5 (text-only
/// through the socket), ~0.03 ms a fragment. A fold comes every 256 rows at least, so a
/// store written a little at a time gathers one this often; 64 lets such a merge come once
/// every ~16k memories at most, at ~2 ms of a filtered text search.
const SMALL_INDEXED_FRAGMENTS_WHEN_QUIET: usize = 64;
/// Unindexed rows past which a maintenance pass folds them in, in the memories and in the
/// edges (the writer wakes a fold at once past
/// [`FOLD_AFTER_ROWS`](super::writer::FOLD_AFTER_ROWS), for bulk loads). Every search reads
/// each unindexed row: at 100k memories 1,322 unfolded memories made the full-text leg
/// 8.8 ms instead of 4.0 (their words are tokenised per query), and 1,858 unfolded edges made
/// the graph step's lookup 5.3 ms instead of 1.1. A fold runs beside the writer; a few
/// hundred edges fold into 500k edges' B-trees in 0.2 s.
const FOLD_EACH_PASS_AFTER_ROWS: usize = 256;
/// Versions of the bookkeeping tables younger than this are kept (and pruning runs this
/// often): nothing reads their past, only a commit in flight needs its version.
const BOOKKEEPING_VERSIONS_KEPT: Duration = Duration::from_secs(3600);

/// Bytes of vectors an ANN training reads into memory for its k-means. Lance samples 256 a
/// partition: at 604k MiniLM memories (777 partitions) that was 305 MB of them, and a
/// load's RSS went from ~420 MB to 775 for the training's 38 s.
const TRAINING_SAMPLE_BYTES: usize = 96 << 20;

/// Vectors a partition's centroid is trained from: Lance's 256 while the sample fits in
/// [`TRAINING_SAMPLE_BYTES`], fewer past it, and never under 64 (k-means wants a few dozen
/// a centroid).
fn training_sample_rate(partitions: u32, dim: usize) -> u32 {
    let vectors = TRAINING_SAMPLE_BYTES / (dim.max(1) * std::mem::size_of::<f32>());
    (vectors / partitions.max(1) as usize).clamp(64, 256) as u32
}

/// What the indexes look like now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexState {
    pub rows: usize,
    pub has_fts: bool,
    pub has_vector_index: bool,
    /// Scalar indexes of [`SCALAR_INDEXES`] not built yet.
    pub missing_scalar: Vec<&'static str>,
    pub unindexed_rows: usize,
    /// The rows the ANN index was trained at (0 before the first build, and for an index
    /// built before the count was kept, until maintenance next looks).
    pub ann_trained_at: usize,
    /// The ANN index is of an older kind than [`ANN_INDEX`] (IVF-PQ, before IVF-SQ).
    pub ann_outdated: bool,
    /// The ANN index was built with the size its partitions are kept at
    /// ([`ANN_PARTITION_ROWS`]); one built before lets Lance's folds join them.
    pub ann_sized: bool,
}

impl IndexState {
    /// What the ANN index needs now: building once the table holds `min_rows`, training
    /// again once it has grown [`ANN_RETRAIN_GROWTH`] times since.
    fn ann_due(&self, min_rows: usize) -> Option<&'static str> {
        if !self.has_vector_index {
            (self.rows >= min_rows).then_some("built ANN vector index")
        } else if self.ann_outdated {
            Some("built ANN vector index again as IVF-SQ")
        } else if !self.ann_sized {
            Some("trained ANN vector index again, its partitions kept at their size")
        } else if self.ann_trained_at > 0 && self.rows >= self.ann_trained_at * ANN_RETRAIN_GROWTH {
            Some("trained ANN vector index again")
        } else {
            None
        }
    }
}

/// Held by whoever rewrites a table's files (`Store::rewrites`).
pub(super) type Rewriting<'a> = tokio::sync::MutexGuard<'a, ()>;

/// Tries of a fold or a compaction whose commit writes voided, before the writer does the
/// whole of it in its turn.
const TRIES: usize = 3;
/// The meta key holding the row count the ANN index was trained at.
const ANN_TRAINED_AT: &str = "ann_index_rows";
/// The meta key holding the rows a partition of the ANN index was sized for. Lance's folds
/// join partitions under a quarter of their target size and split those over four times
/// it; without a target of ours that is Lance's own for IVF-SQ (8,192 rows), so a fold
/// joined the 1,000 partitions trained at 1M memories into 31 of ~32k rows each, and a
/// search probed 12 MB a partition (vector leg p50 130 ms, loading them through the index
/// cache) rather than ~0.4 MB.
const ANN_PARTITION_ROWS: &str = "ann_partition_rows";
/// The ANN index is trained again once the table has grown this many times over: its
/// partitions were fitted to the rows of the time, and grow slow as they fill. An IVF-SQ
/// training takes seconds even at 1M rows (6.5 s here), so doubling is cheap.
const ANN_RETRAIN_GROWTH: usize = 2;
/// The ANN index's kind: IVF partitions of 8-bit scalar-quantised vectors. Measured against
/// IVF-PQ (24 sub-vectors) on 100k MiniLM memories, 50 results with the ranking columns:
/// IVF-PQ refined ×10 p50 13.7 ms at recall@10 0.974 (×20: 16.5 ms, 1.0); IVF-SQ refined ×2
/// p50 10.2 ms at recall@10 1.0 and recall@50 1.0, trained in seconds rather than minutes.
/// It takes 384 bytes a vector on disk (PQ: 24).
const ANN_INDEX: IndexType = IndexType::IvfSq;

impl Store {
    pub async fn index_state(&self) -> Result<IndexState, StoreError> {
        let rows = self.memories.count_rows(None).await?;
        let indices = self.memories.list_indices().await?;
        let has = |col: &str| indices.iter().find(|i| i.columns.iter().any(|c| c == col));
        let (text_column, _) = self.sealing().text_index();
        let mut unindexed_rows = 0;
        if let Some(fts) = has(text_column) {
            if let Some(stats) = self.memories.index_stats(&fts.name).await? {
                unindexed_rows = stats.num_unindexed_rows;
            }
        }
        let state = IndexState {
            rows,
            has_fts: has(text_column).is_some(),
            has_vector_index: has("vector").is_some(),
            ann_outdated: has("vector").is_some_and(|i| i.index_type != ANN_INDEX),
            missing_scalar: SCALAR_INDEXES
                .iter()
                .map(|(column, _)| *column)
                .filter(|column| has(column).is_none())
                .collect(),
            unindexed_rows,
            ann_trained_at: self
                .meta_get(ANN_TRAINED_AT)
                .await?
                .and_then(|n| n.parse().ok())
                .unwrap_or(0),
            ann_sized: self.meta_get(ANN_PARTITION_ROWS).await?.is_some(),
        };
        let min = self.config.advanced.ann_index_min_rows;
        // Settled means no pass has work left: none folds fewer unindexed rows than this,
        // and a second ANN segment or the small fragments folds left wait for the pass
        // that finds writes paused (`Fold::Settle`, a compaction).
        let settled = state.has_fts
            && state.missing_scalar.is_empty()
            && state.ann_due(min).is_none()
            && unindexed_rows < FOLD_EACH_PASS_AFTER_ROWS
            && self.nearest.placed()
            && self.ann_segments().await? <= 1
            && beside::small_fragments(&self.memories).await?.1
                < SMALL_INDEXED_FRAGMENTS_WHEN_QUIET;
        let status = IndexStatus {
            rows: rows as u64,
            ann: state.has_vector_index,
            ann_min_rows: min as u64,
            unindexed_rows: unindexed_rows as u64,
            settled,
            held_vectors: self.nearest.vector_rows().map(|n| n as u64),
            held_vector_signs: self.nearest.signed(),
        };
        *self
            .last_index_state
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(status);
        Ok(state)
    }

    /// The indexes as the last look at them found them.
    pub fn last_index_state(&self) -> Option<IndexStatus> {
        self.last_index_state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// One maintenance pass through the writer; cheap when nothing needs doing. A pass that
    /// finds no row written since the last merges the ANN index's segments into one
    /// ([`Fold::Settle`]) and the small fragments folds left (past
    /// [`SMALL_INDEXED_FRAGMENTS_WHEN_QUIET`]), so what a load left lives a pass or two
    /// past it rather than until idle consolidation. Returns what it did.
    pub async fn maintain_indexes(
        &self,
        fold_after_rows: usize,
    ) -> Result<Vec<&'static str>, StoreError> {
        let state = self.index_state().await?;
        let paused = self.writes_paused(&state);
        let mut done = Vec::new();
        if state.rows == 0 {
            return Ok(done);
        }
        if !state.has_fts {
            self.writer.submit(WriteOp::BuildTextIndex).await?;
            done.push("built full-text index");
        } else if state.unindexed_rows >= fold_after_rows {
            done.extend(self.fold_beside(Fold::Segment).await?);
        } else if paused && self.ann_segments().await? > 1 {
            done.extend(self.fold_beside(Fold::Settle).await?);
        }
        if !state.missing_scalar.is_empty() {
            self.writer.submit(WriteOp::BuildScalarIndexes).await?;
            done.push("built scalar indexes");
        }
        let (unindexed, indexed) = beside::small_fragments(&self.memories).await?;
        let quiet_merge_due = paused && indexed >= SMALL_INDEXED_FRAGMENTS_WHEN_QUIET;
        let which = if indexed >= SMALL_INDEXED_MEMORY_FRAGMENTS || quiet_merge_due {
            Some(Merged::Any)
        } else {
            (unindexed >= SMALL_MEMORY_FRAGMENTS).then_some(Merged::Unindexed)
        };
        if let Some(which) = which {
            if self.compact_merging(&self.memories, which).await? > 0 {
                done.push("compacted small fragments");
            }
        }
        Ok(done)
    }

    /// Whether the memories' rows and unindexed rows are what the last pass found (kept
    /// for the next): no row was written between the two.
    fn writes_paused(&self, state: &IndexState) -> bool {
        let rows = (state.rows, state.unindexed_rows);
        let mut last = self
            .rows_at_last_pass
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        last.replace(rows) == Some(rows)
    }

    /// The segments of the memories' ANN index (0 before it is built), counted from the
    /// manifest: asked of every quiet pass, where the index's stats would open it.
    async fn ann_segments(&self) -> Result<usize, StoreError> {
        let dataset = beside::snapshot(&self.memories).await?;
        let Some(vector) = dataset.schema().field("vector").map(|f| f.id) else {
            return Ok(0);
        };
        let indices = lance::index::DatasetIndexExt::load_indices(&*dataset).await?;
        Ok(indices.iter().filter(|i| i.fields == [vector]).count())
    }

    /// Builds the ANN vector index once the table holds `store.advanced.ann_index_min_rows` rows, and
    /// trains it again when the table has grown [`ANN_RETRAIN_GROWTH`] times since. Not
    /// through the writer: training takes seconds to minutes, and writes go on meanwhile
    /// (Lance rebases the index's commit over appends, deletes and updates; rows added
    /// since are searched one by one until folded in). Rewrites of the table (compaction)
    /// wait for it, since a rewrite would void the build.
    pub async fn maintain_vector_index(&self) -> Result<Option<&'static str>, StoreError> {
        let state = self.index_state().await?;
        if state.has_vector_index && state.ann_trained_at == 0 {
            // Built before the count was kept: count from now.
            self.meta_set(ANN_TRAINED_AT, &state.rows.to_string())
                .await?;
            return Ok(None);
        }
        let Some(what) = state.ann_due(self.config.advanced.ann_index_min_rows) else {
            return Ok(None);
        };
        let _rewriting = self.rewrites.lock().await;
        let _training = Training::start(&self.ann_training);
        let started = std::time::Instant::now();
        let partitions = ((state.rows as f64).sqrt() as u32).clamp(16, 4096);
        let partition_rows = (state.rows as u32).div_ceil(partitions).max(1);
        self.memories
            .create_index(
                &["vector"],
                Index::IvfSq(
                    IvfSqIndexBuilder::default()
                        .distance_type(lancedb::DistanceType::Cosine)
                        // Lance makes rows / partition_rows partitions, and keeps the size
                        // in the index for its folds (with num_partitions it keeps none).
                        .target_partition_size(partition_rows)
                        .sample_rate(training_sample_rate(partitions, self.dim)),
                ),
            )
            .replace(true)
            .execute()
            .await?;
        self.meta_set(ANN_TRAINED_AT, &state.rows.to_string())
            .await?;
        self.meta_set(ANN_PARTITION_ROWS, &partition_rows.to_string())
            .await?;
        tracing::info!(
            "ANN vector index over {} rows ({partitions} partitions) in {:.1} s",
            state.rows,
            started.elapsed().as_secs_f64()
        );
        self.drop_replaced_file_pages().await;
        Ok(Some(what))
    }

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
    async fn compact_merging(&self, table: &Table, which: Merged) -> Result<u64, StoreError> {
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
        // The codes hold the memories' rows where the compaction moved them.
        let nearest = (table.name() == super::MEMORIES).then(|| self.nearest.clone());
        let prepare = || {
            let nearest = nearest.clone();
            let moved = move |moves| {
                if let Some(nearest) = nearest {
                    nearest.moved(moves);
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

/// Marks an ANN training under way while it lives (cleared however the training ends).
struct Training<'a>(&'a AtomicBool);

impl<'a> Training<'a> {
    fn start(flag: &'a AtomicBool) -> Self {
        flag.store(true, Ordering::Release);
        Self(flag)
    }
}

impl Drop for Training<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
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

/// The maintenance task: a pass every 20 s, and a purge a short while after each forget
/// (forgets close together share one). A purge still pending at shutdown runs then.
/// Every hour the memories' versions older than `memory_versions_kept` are pruned too:
/// consolidation prunes them while idle, but a store that is never idle would otherwise keep
/// every index file each fold replaced (42 GB of them loading 1M memories). Each pass
/// prunes sooner the tables whose old versions outgrew them ([`VersionBound`]).
/// `available_memory` is what the machine has to spare as the hardware sampler last saw it.
pub async fn run(
    store: Arc<Store>,
    memory_versions_kept: Duration,
    available_memory: impl Fn() -> Option<u64>,
    events: EventBus,
    shutdown: Shutdown,
) {
    // The first pass prunes too: a daemon restarted daily would otherwise seldom reach it.
    let mut last_prune: Option<tokio::time::Instant> = None;
    let mut within_bound = WithinBound::default();
    let mut tick = tokio::time::interval(MAINTENANCE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let purge_delay = Duration::from_secs(store.config.purge_after_forget_secs);
    let mut purge_due: Option<tokio::time::Instant> = None;
    loop {
        let purge_at = purge_due.unwrap_or_else(|| tokio::time::Instant::now() + MAINTENANCE_EVERY);
        // Whether the arm taken ran Lance's code (all but noting a forget).
        let worked = tokio::select! {
            _ = shutdown.requested() => break,
            _ = store.fold_due.notified() => {
                match store.fold_beside(Fold::Segment).await {
                    Ok(done) => done.into_iter().for_each(|what| publish(&events, what)),
                    Err(e) => tracing::warn!("folding new rows into the indexes failed (retried later): {e}"),
                }
                true
            }
            _ = store.purge.notified() => {
                purge_due.get_or_insert_with(|| tokio::time::Instant::now() + purge_delay);
                false
            }
            _ = tokio::time::sleep_until(purge_at), if purge_due.is_some() => {
                purge_due = None;
                purge(&store, &events).await;
                true
            }
            _ = tick.tick() => {
                let mut changed = false;
                match store.maintain_indexes(FOLD_EACH_PASS_AFTER_ROWS).await {
                    Ok(done) => {
                        changed |= !done.is_empty();
                        done.into_iter().for_each(|what| publish(&events, what));
                    }
                    Err(e) => tracing::warn!("index maintenance failed: {e}"),
                }
                // In this task, so no purge (which deletes unreferenced files) runs during a
                // build.
                match store.maintain_vector_index().await {
                    Ok(done) => {
                        changed |= done.is_some();
                        done.into_iter().for_each(|what| publish(&events, what));
                    }
                    Err(e) => tracing::warn!("building the ANN index failed (retried later): {e}"),
                }
                if let Err(e) = store.refresh_nearest().await {
                    tracing::warn!("reading the vectors held in memory failed (retried next pass): {e}");
                }
                // The kernel lets the codes' files go from its cache unless they are read
                // (`Tail::keep_cached`); they are asked back while a quarter of the memory
                // available holds them.
                if let Some(available) = available_memory() {
                    let bytes = store.nearest.keep_files_cached(available / 4);
                    tracing::trace!("asked the kernel to keep {} MB of codes cached", bytes >> 20);
                }
                if let Err(e) = store.refresh_held_edges().await {
                    tracing::warn!("reading the edges held in memory failed (retried next pass): {e}");
                }
                // Status shows the indexes as they are after this pass (each step above read
                // them before it acted).
                if changed {
                    if let Err(e) = store.index_state().await {
                        tracing::warn!("reading the index state failed: {e}");
                    }
                }
                let prune = last_prune.is_none_or(|t| t.elapsed() >= BOOKKEEPING_VERSIONS_KEPT);
                let older_than = prune.then_some(BOOKKEEPING_VERSIONS_KEPT);
                match store.tidy_bookkeeping(older_than).await {
                    Ok(done) => done.into_iter().for_each(|what| publish(&events, what)),
                    Err(e) => tracing::warn!("tidying the bookkeeping tables failed: {e}"),
                }
                // After the values held for searches were read again above: they point
                // into the files the current version uses.
                match store
                    .bound_old_versions(VersionBound::default(), &mut within_bound)
                    .await {
                    Ok(pruned) if !pruned.is_empty() => {
                        publish(&events, "pruned old versions that outgrew their tables")
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!("pruning old versions for disk failed: {e}"),
                }
                // What a pass, a fold or a large read freed goes back to the system.
                crate::process::release_freed_memory();
                if prune {
                    last_prune = Some(tokio::time::Instant::now());
                    match store.prune_memory_versions(memory_versions_kept).await {
                        Ok(pruned) => {
                            if pruned > 0 {
                                publish(&events, "pruned old memory versions");
                            }
                        }
                        Err(e) => tracing::warn!("pruning old memory versions failed: {e}"),
                    }
                }
                true
            }
        };
        // A pass, fold or purge runs much of Lance's code that searches never run (start-up
        // more still), and each page run stays mapped: at 100k memories a quiet pass every
        // 20 s kept 60 MB of it, where searches need ~20.
        if worked {
            let bytes = crate::process::drop_code_pages();
            tracing::trace!(
                "let go of mnemod's own code pages ({} MB mapped)",
                bytes >> 20
            );
        }
    }
    if purge_due.is_some() {
        purge(&store, &events).await;
    }
}

async fn purge(store: &Store, events: &EventBus) {
    match store.purge().await {
        Ok(versions) => {
            tracing::info!("purged forgotten content ({versions} old versions removed)");
            publish(events, "purged forgotten content");
        }
        Err(e) => {
            tracing::warn!("purging forgotten content failed (retried after the next forget): {e}")
        }
    }
}

fn publish(events: &EventBus, what: &'static str) {
    tracing::info!("index maintenance: {what}");
    let _ = events.send(Event::IndexMaintained { what: what.into() });
}

/// Whether `e` says writes committed since voided a commit (trying again may pass).
fn voided_by_a_write(e: &StoreError) -> bool {
    let text = e.to_string().to_lowercase();
    text.contains("conflict") || text.contains("too many concurrent writers")
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::filter::current;

    /// The messages Lance 14 gave: a compaction preempted once, and a fold beside a load of
    /// single adds at 1M memories.
    #[test]
    fn a_commit_voided_by_writes_is_told_from_other_errors() {
        use super::voided_by_a_write;
        use crate::store::StoreError;
        let lance = |m: &str| StoreError::Lance(m.to_string());
        assert!(voided_by_a_write(&lance(
            "Commit conflict for version 7: This UpdateConfig transaction was preempted by \
             concurrent transaction Rewrite at version 7. Please retry."
        )));
        assert!(voided_by_a_write(&lance(
            "lance error: Too many concurrent writers. Attempted 16 times, but failed on \
             retry_timeout of 30.000 seconds., lance-14.0.2/src/io/commit.rs:130:5"
        )));
        assert!(!voided_by_a_write(&lance("Not found: data/x.lance")));
    }
    use super::super::schema::tests::record;
    use super::super::{col, Expr, Fold, KeySettings, MemoryRecord, Pred, Store, WriteOp};
    use lancedb::index::{Index, IndexType};

    pub fn memory(n: usize) -> MemoryRecord {
        let id = format!("m{n}");
        record(&id, &format!("note {n} about the garden, token tok{n}x"), 4)
    }

    /// Inserts each row in a commit of its own: one small fragment each.
    async fn insert_each(store: &Store, rows: &[MemoryRecord]) {
        for row in rows {
            store
                .writer()
                .submit(WriteOp::Insert(vec![row.clone()]))
                .await
                .unwrap();
        }
    }

    /// The current version of every memory by its token, all found by text search alone,
    /// and by its id.
    pub async fn assert_all_found(store: &Store, versions: &[MemoryRecord], stage: &str) {
        for r in versions {
            let token = r.content.split(' ').next_back().unwrap().to_string();
            let hits = store
                .text_search(&token, &current(), 10, Some(None))
                .await
                .unwrap();
            let ids: Vec<&str> = hits.iter().map(|h| h.record.id.as_str()).collect();
            assert_eq!(ids, vec![r.id.as_str()], "{stage}: {token}");
            let got = store.get(&r.id).await.unwrap().map(|g| g.content);
            assert_eq!(
                got.as_deref(),
                Some(r.content.as_str()),
                "{stage}: {}",
                r.id
            );
        }
    }

    async fn supersede(store: &Store, current: &mut [MemoryRecord], at: usize, version: usize) {
        let mut old = current[at].clone();
        let mut new = old.clone();
        new.id = format!("{}v{version}", old.lineage);
        new.content = format!("updated {}", old.content);
        new.valid_from = old.valid_from + 1;
        old.valid_to = Some(new.valid_from);
        old.superseded_by = Some(new.id.clone());
        let op = WriteOp::Supersede {
            old: Box::new(old),
            new: Box::new(new.clone()),
        };
        store.writer().submit(op).await.unwrap();
        current[at] = new;
    }

    /// A patch of a few columns applies only where the stored row meets its condition; a
    /// condition on a column the patch does not carry is refused with a clear error (Lance's
    /// was "Field valid_to not found in struct", and dedup's lift of the memories it kept
    /// failed so at every run that merged anything).
    #[tokio::test]
    async fn a_conditional_patch_reads_its_condition_from_the_stored_row() {
        use lancedb::arrow::arrow_array::{ArrayRef, Float32Array, Int64Array, StringArray};
        let dir = tempfile::tempdir().unwrap();
        let store = super::super::test_store(dir.path()).await;
        let rows: Vec<MemoryRecord> = (0..40).map(memory).collect();
        store
            .writer()
            .submit(WriteOp::Insert(rows.clone()))
            .await
            .unwrap();
        store.maintain_indexes(1).await.unwrap();
        store.fold_beside(Fold::Segment).await.unwrap();
        // Row 1 is closed: the patch must leave it alone.
        store
            .writer()
            .submit(WriteOp::Update {
                predicate: col("id").eq(&rows[1].id),
                columns: vec![("valid_to", Expr::Int(5))],
            })
            .await
            .unwrap();
        let ids: ArrayRef = std::sync::Arc::new(StringArray::from(vec![
            rows[0].id.as_str(),
            rows[1].id.as_str(),
        ]));
        let salience: ArrayRef = std::sync::Arc::new(Float32Array::from(vec![9.0f32, 9.0]));
        let without = store
            .patch(vec![("id", ids.clone()), ("salience", salience.clone())])
            .unwrap();
        let err = store
            .writer()
            .submit(WriteOp::Patch {
                batch: without,
                only_if: Some(current().on_target()),
            })
            .await
            .unwrap_err();
        assert!(err.to_string().contains("reads valid_to"), "{err}");
        let open: ArrayRef = std::sync::Arc::new(Int64Array::from(vec![None::<i64>, None]));
        let batch = store
            .patch(vec![
                ("id", ids),
                ("salience", salience),
                ("valid_to", open),
            ])
            .unwrap();
        let updated = store
            .writer()
            .submit(WriteOp::Patch {
                batch,
                only_if: Some(current().on_target()),
            })
            .await
            .unwrap();
        assert_eq!(updated, 1);
        assert_eq!(store.get(&rows[0].id).await.unwrap().unwrap().salience, 9.0);
        assert_ne!(store.get(&rows[1].id).await.unwrap().unwrap().salience, 9.0);
    }

    /// Retrievers read only the ranking columns and row ids; the results' whole rows are
    /// taken at those row ids, or read by id once a compaction has moved them.
    #[tokio::test]
    async fn rows_found_before_a_compaction_are_completed_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::super::test_store(dir.path()).await;
        let rows: Vec<MemoryRecord> = (0..super::SMALL_MEMORY_FRAGMENTS).map(memory).collect();
        insert_each(&store, &rows).await;
        let token = rows[3].content.split(' ').next_back().unwrap().to_string();
        let hits = store
            .text_search(&token, &current(), 10, Some(None))
            .await
            .unwrap();
        assert_eq!(hits.len(), 1);
        assert!(hits[0].record.content.is_empty(), "ranking columns only");
        let wanted = vec![(hits[0].record.id.clone(), hits[0].row_id)];
        assert!(wanted[0].1.is_some());
        let taken = store.complete(&wanted).await.unwrap();
        assert_eq!(taken[&rows[3].id].content, rows[3].content);

        let done = store.maintain_indexes(1).await.unwrap();
        assert!(done.contains(&"compacted small fragments"), "{done:?}");
        let moved = store.complete(&wanted).await.unwrap();
        assert_eq!(moved.len(), 1);
        assert_eq!(moved[&rows[3].id].content, rows[3].content);
        assert_eq!(moved[&rows[3].id].namespace, rows[3].namespace);

        // Row ids out of order, all in fragments the compaction removed (one row each, so
        // fragments 5 and 3 held rows 5 and 3): Lance's take panicked on these.
        let wanted = vec![
            (rows[5].id.clone(), Some(5 << 32)),
            (rows[3].id.clone(), Some(3 << 32)),
        ];
        let moved = store.complete(&wanted).await.unwrap();
        assert_eq!(moved.len(), 2, "{:?}", moved.keys());
        assert_eq!(moved[&rows[5].id].content, rows[5].content);
    }

    /// Each fold leaves the fragment of the rows it indexed; a pass that finds writes
    /// paused merges them once they are many (moving the indexes' rows), a pass after a
    /// write leaves them, and until they are merged the indexes are not settled.
    #[tokio::test]
    async fn a_pass_after_writes_pause_merges_the_small_fragments_folds_left() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::super::test_store(dir.path()).await;
        let rows: Vec<MemoryRecord> = (0..super::SMALL_INDEXED_FRAGMENTS_WHEN_QUIET + 2)
            .map(memory)
            .collect();
        for row in &rows {
            insert_each(&store, std::slice::from_ref(row)).await;
            store.maintain_indexes(1).await.unwrap();
        }
        let small_indexed = || async {
            super::beside::small_fragments(&store.memories)
                .await
                .unwrap()
        };
        assert_eq!(small_indexed().await, (0, rows.len()), "one a fold");
        let settled = || async {
            store.index_state().await.unwrap();
            store.last_index_state().unwrap().settled
        };
        assert!(!settled().await, "a merge is still due");

        let merged = "compacted small fragments";
        // The last fold's pass saw its row unindexed: this one sees a change.
        let done = store.maintain_indexes(1).await.unwrap();
        assert!(!done.contains(&merged), "a row came since: {done:?}");
        assert_eq!(small_indexed().await, (0, rows.len()));

        let done = store.maintain_indexes(1).await.unwrap();
        assert!(done.contains(&merged), "{done:?}");
        assert_eq!(small_indexed().await, (0, 1), "merged into one");
        assert!(settled().await);
        assert_all_found(&store, &rows, "after the merge").await;
        let done = store.maintain_indexes(1).await.unwrap();
        assert!(!done.contains(&merged), "nothing left to merge: {done:?}");
    }

    /// A store of `n` memories, one commit, indexed.
    async fn indexed_store(
        dir: &std::path::Path,
        n: usize,
    ) -> (std::sync::Arc<Store>, Vec<MemoryRecord>) {
        let store = super::super::test_store(dir).await;
        let rows: Vec<MemoryRecord> = (0..n).map(memory).collect();
        store
            .writer()
            .submit(WriteOp::Insert(rows.clone()))
            .await
            .unwrap();
        store.maintain_indexes(usize::MAX).await.unwrap();
        (store, rows)
    }

    /// Writes made while a rewrite runs beside the writer: `rows` in commits of 10, each
    /// followed by an update (strength 0.5) of the next of `updated`.
    pub async fn write_meanwhile(store: &Store, rows: &[MemoryRecord], updated: &[String]) {
        for (chunk, id) in rows.chunks(10).zip(updated) {
            store
                .writer()
                .submit(WriteOp::Insert(chunk.to_vec()))
                .await
                .unwrap();
            store
                .writer()
                .submit(WriteOp::Update {
                    predicate: col("id").eq(id),
                    columns: vec![("strength", Expr::Float(0.5))],
                })
                .await
                .unwrap();
        }
    }

    /// A fold runs beside the writer: appends and updates committed while it runs land, the
    /// fold's commit lands too (retried if a write beat it), and every memory is found.
    #[tokio::test]
    async fn a_fold_beside_the_writer_lets_writes_go_on_and_loses_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (store, mut all) = indexed_store(dir.path(), 300).await;
        let more: Vec<MemoryRecord> = (300..400).map(memory).collect();
        all.extend(more.iter().cloned());
        let updated: Vec<String> = more.chunks(10).map(|c| c[0].id.clone()).collect();
        let writes = write_meanwhile(&store, &more, &updated);
        let (folded, ()) = tokio::join!(store.fold_beside(Fold::Segment), writes);
        folded.unwrap();
        store.fold_beside(Fold::Segment).await.unwrap();
        assert_eq!(store.index_state().await.unwrap().unindexed_rows, 0);
        assert_all_found(&store, &all, "after folds beside the writer").await;
    }

    /// Searches fill LanceDB's caches; a fold that replaced index files empties them (what
    /// they held of replaced files is never read again), one with nothing to fold keeps
    /// them, and searches after the fold find every memory through the new files.
    #[tokio::test]
    async fn a_fold_empties_the_caches_of_what_it_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let (store, mut all) = indexed_store(dir.path(), 100).await;
        let cached = || async {
            let session = &store.session;
            let index = session.index_cache_stats().await.size_bytes;
            (index, session.metadata_cache_stats().await.size_bytes)
        };
        assert_all_found(&store, &all, "before the fold").await;
        let warm = cached().await;
        assert!(
            warm.0 > 0 && warm.1 > 0,
            "searches cached nothing: {warm:?}"
        );
        let more: Vec<MemoryRecord> = (100..110).map(memory).collect();
        insert_each(&store, &more).await;
        all.extend(more);
        store.fold_beside(Fold::Whole).await.unwrap();
        assert_eq!(cached().await, (0, 0));
        assert_all_found(&store, &all, "after the fold").await;
        let warm = cached().await;
        assert!(warm.0 > 0, "searches after the fold cached nothing");
        store.fold_beside(Fold::Whole).await.unwrap();
        assert_eq!(
            cached().await,
            warm,
            "a fold with nothing to fold emptied the caches"
        );
        for n in 0..4 {
            store.meta_set("test.note", &n.to_string()).await.unwrap();
        }
        assert!(store.compact(&store.meta).await.unwrap() > 0);
        let after = cached().await;
        assert!(
            after.0 >= warm.0 && after.1 >= warm.1,
            "a bookkeeping compaction emptied the caches: {after:?} after {warm:?}"
        );
    }

    /// A whole fold in a store too small for an ANN index still folds new rows into the
    /// full-text and scalar indexes.
    #[tokio::test]
    async fn a_whole_fold_without_an_ann_index_folds_new_rows() {
        let dir = tempfile::tempdir().unwrap();
        let (store, mut all) = indexed_store(dir.path(), 100).await;
        let more: Vec<MemoryRecord> = (100..110).map(memory).collect();
        insert_each(&store, &more).await;
        all.extend(more);
        assert_eq!(store.index_state().await.unwrap().unindexed_rows, 10);
        store.fold_beside(Fold::Whole).await.unwrap();
        assert_eq!(store.index_state().await.unwrap().unindexed_rows, 0);
        assert_all_found(&store, &all, "after a whole fold").await;
    }

    /// A store of 300 memories whose full-text index holds segments of at most 100 rows,
    /// folded after each of 10 commits of 30 (one fragment each).
    pub async fn segmented_store(
        dir: &std::path::Path,
    ) -> (Vec<MemoryRecord>, std::sync::Arc<Store>) {
        let config = crate::config::StoreConfig {
            advanced: crate::config::StoreTuning {
                text_index_segment_rows: 100,
                ..Default::default()
            },
            ..Default::default()
        };
        let store = Store::open(dir, 4, "test", &config, &Default::default())
            .await
            .unwrap();
        let rows: Vec<MemoryRecord> = (0..300).map(memory).collect();
        for batch in rows.chunks(30) {
            store
                .writer()
                .submit(WriteOp::Insert(batch.to_vec()))
                .await
                .unwrap();
            store.maintain_indexes(1).await.unwrap();
        }
        (rows, store)
    }

    /// The full-text index grows in segments of at most `store.advanced.text_index_segment_rows`
    /// rows: a fold merges new rows into the last segment while it has room and starts
    /// another after, a whole fold leaves the full ones alone, and a search through Lance's
    /// index finds rows of every segment.
    #[tokio::test]
    async fn the_full_text_index_grows_in_segments_of_bounded_rows() {
        let dir = tempfile::tempdir().unwrap();
        let (_, store) = segmented_store(dir.path()).await;
        let segments = || async {
            let dataset = super::beside::snapshot(&store.memories).await.unwrap();
            let indices = lance::index::DatasetIndexExt::load_indices(dataset.as_ref())
                .await
                .unwrap();
            let text = indices.iter().filter(|i| i.name == "content_idx");
            let rows_of = |covered: &roaring::RoaringBitmap| -> usize {
                let fragments = dataset.manifest.fragments.iter();
                let fragments = fragments.filter(|f| covered.contains(f.id as u32));
                fragments.map(|f| f.physical_rows.unwrap()).sum()
            };
            let mut rows: Vec<(uuid::Uuid, usize)> = text
                .map(|i| (i.uuid, rows_of(i.fragment_bitmap.as_ref().unwrap())))
                .collect();
            rows.sort();
            rows
        };
        let folded = segments().await;
        let counts: Vec<usize> = folded.iter().map(|s| s.1).collect();
        assert!(
            folded.len() >= 3 && counts.iter().all(|&n| n <= 100),
            "segments of {counts:?} rows"
        );
        assert_eq!(counts.iter().sum::<usize>(), 300);
        store.fold_beside(Fold::Whole).await.unwrap();
        assert_eq!(
            segments().await,
            folded,
            "a whole fold rewrote full segments"
        );
        for n in (0..300).step_by(29) {
            let hits = store
                .text_search(&format!("tok{n}x"), &current(), 10, None)
                .await
                .unwrap();
            let ids: Vec<&str> = hits.iter().map(|h| h.record.id.as_str()).collect();
            assert_eq!(ids, [format!("m{n}")], "tok{n}x");
        }
    }

    /// A segment fold keeps the ANN index in at most two segments (every search reads them
    /// all): new rows join the newest while it stays under a quarter of the older one's rows;
    /// a whole fold (idle time's) merges them and any new rows into one, and misses nothing.
    #[tokio::test]
    async fn a_whole_fold_merges_the_ann_segments_into_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = ann_store(dir.path(), 0).await;
        store.writer().submit(insert(0..700)).await.unwrap();
        store.maintain_vector_index().await.unwrap();
        store
            .writer()
            .submit(WriteOp::BuildScalarIndexes)
            .await
            .unwrap();
        let segments = || async {
            let stats = store
                .memories
                .index_stats("vector_idx")
                .await
                .unwrap()
                .unwrap();
            (stats.num_indices, stats.num_unindexed_rows)
        };
        // A segment fold adds a segment of the new rows, however k-means left the
        // partitions (Lance, left to choose, joined one under a quarter of the target size
        // now and then with 700 rows, and merged every segment with it); the other indexes
        // take the new rows into their one segment.
        store.writer().submit(insert(700..720)).await.unwrap();
        store.fold_beside(Fold::Segment).await.unwrap();
        assert_eq!(segments().await, (Some(2), 0));
        let id_stats = store.memories.index_stats("id_idx").await.unwrap().unwrap();
        assert_eq!(
            (id_stats.num_indices, id_stats.num_unindexed_rows),
            (Some(1), 0)
        );
        // The next fold's rows join the newest segment rather than making a third…
        store.writer().submit(insert(720..760)).await.unwrap();
        store.fold_beside(Fold::Segment).await.unwrap();
        assert_eq!(segments().await, (Some(2), 0));
        let names = ["vector_idx".to_string()];
        let dataset = super::beside::snapshot(&store.memories).await.unwrap();
        let rows = super::beside::segment_rows(&dataset, &names).await.unwrap();
        assert_eq!(rows, (700, 60));
        // …until it would pass a quarter of the older one's rows: then all are merged.
        store.writer().submit(insert(760..880)).await.unwrap();
        store.fold_beside(Fold::Segment).await.unwrap();
        assert_eq!(segments().await, (Some(1), 0));
        let next = 880;
        store
            .writer()
            .submit(insert(next..next + 10))
            .await
            .unwrap();
        store.fold_beside(Fold::Whole).await.unwrap();
        assert_eq!(segments().await, (Some(1), 0));
        assert_found_by_ann(&store, [5, 710, next - 5, next + 5]).await;
    }

    /// A maintenance pass that finds no row written since the last merges the ANN index's
    /// segments into one, with the rows added meanwhile; while rows keep coming it leaves
    /// them, and once there is one segment it has nothing to do.
    #[tokio::test]
    async fn a_pass_after_writes_pause_merges_the_ann_segments() {
        let dir = tempfile::tempdir().unwrap();
        let store = ann_store(dir.path(), 0).await;
        store.writer().submit(insert(0..700)).await.unwrap();
        store.maintain_vector_index().await.unwrap();
        // The full-text and scalar indexes, built by this first pass.
        store.maintain_indexes(usize::MAX).await.unwrap();
        store.writer().submit(insert(700..720)).await.unwrap();
        store.fold_beside(Fold::Segment).await.unwrap();
        assert_eq!(store.ann_segments().await.unwrap(), 2);
        let status_settled = || async {
            store.index_state().await.unwrap();
            store.last_index_state().unwrap().settled
        };
        assert!(!status_settled().await, "a merge is still due");

        let settled = "merged the ANN index's segments into one";
        store.maintain_indexes(usize::MAX).await.unwrap();
        store.writer().submit(insert(720..725)).await.unwrap();
        let done = store.maintain_indexes(usize::MAX).await.unwrap();
        assert!(
            !done.contains(&settled),
            "rows came between the passes: {done:?}"
        );
        assert_eq!(store.ann_segments().await.unwrap(), 2);

        let done = store.maintain_indexes(usize::MAX).await.unwrap();
        assert!(done.contains(&settled), "{done:?}");
        assert_eq!(store.ann_segments().await.unwrap(), 1);
        let stats = store.memories.index_stats("vector_idx").await.unwrap();
        assert_eq!(stats.unwrap().num_unindexed_rows, 0);
        assert_found_by_ann(&store, [5, 710, 722]).await;
        let done = store.maintain_indexes(usize::MAX).await.unwrap();
        assert!(!done.contains(&settled), "one segment already: {done:?}");
        assert!(status_settled().await);
    }

    /// A compaction runs beside the writer: appends made meanwhile land, updates of the rows
    /// it moves land (one of the two commits tries again), the small fragments it was for
    /// are merged, and every memory is found with its update.
    #[tokio::test]
    async fn a_compaction_beside_the_writer_lets_writes_go_on_and_loses_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (store, mut all) = indexed_store(dir.path(), 100).await;
        let small: Vec<MemoryRecord> = (100..100 + 2 * super::SMALL_MEMORY_FRAGMENTS)
            .map(memory)
            .collect();
        insert_each(&store, &small).await;
        store.fold_beside(Fold::Segment).await.unwrap();
        all.extend(small.iter().cloned());
        let more: Vec<MemoryRecord> = (500..560).map(memory).collect();
        all.extend(more.iter().cloned());
        let moved: Vec<String> = small.iter().map(|r| r.id.clone()).collect();
        let writes = write_meanwhile(&store, &more, &moved);
        let (merged, ()) = tokio::join!(store.compact(&store.memories), writes);
        assert!(merged.unwrap() > 0, "the small fragments were not merged");
        assert_all_found(&store, &all, "after a compaction beside the writer").await;
        for id in moved.iter().take(more.len() / 10) {
            let got = store.get(id).await.unwrap().unwrap();
            assert_eq!(got.strength, 0.5, "{id}");
        }
    }

    /// A committed memory is found by its words at once, through every kind of write the
    /// store makes: small appends, updates, folds, bookkeeping rewrites and compaction.
    #[tokio::test]
    async fn every_current_memory_is_found_by_its_words_through_every_kind_of_write() {
        let dir = tempfile::tempdir().unwrap();
        found_through_every_kind_of_write(dir.path(), &KeySettings::default()).await;
    }

    /// The same in an encrypted store, where the index holds hashed terms; and no file of it
    /// holds a word of any memory.
    #[tokio::test]
    async fn an_encrypted_store_finds_every_memory_by_its_words_and_holds_none() {
        let dir = tempfile::tempdir().unwrap();
        let key = crate::store::test_encrypting(dir.path());
        let db = dir.path().join("db");
        found_through_every_kind_of_write(&db, &key).await;
        for word in ["garden", "tok33x", "note 2"] {
            assert_eq!(files_holding(&db, word), Vec::<String>::new(), "{word}");
        }
    }

    /// Every file under `dir`.
    pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut files = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    files.push(path);
                }
            }
        }
        files
    }

    /// Files under `dir` whose bytes contain `needle`.
    pub fn files_holding(dir: &std::path::Path, needle: &str) -> Vec<String> {
        files_under(dir)
            .into_iter()
            .filter(|p| {
                std::fs::read(p)
                    .unwrap()
                    .windows(needle.len())
                    .any(|w| w == needle.as_bytes())
            })
            .map(|p| p.display().to_string())
            .collect()
    }

    async fn found_through_every_kind_of_write(dir: &std::path::Path, key: &KeySettings) {
        let store = Store::open(dir, 4, "test", &Default::default(), key)
            .await
            .unwrap();
        let mut current: Vec<MemoryRecord> = Vec::new();
        for chunk in 0..8 {
            let rows: Vec<_> = (chunk * 5..chunk * 5 + 5).map(memory).collect();
            store
                .writer()
                .submit(WriteOp::Insert(rows.clone()))
                .await
                .unwrap();
            current.extend(rows);
            if chunk == 1 {
                // Every stage below filters through the scalar indexes and their unindexed tails.
                store
                    .writer()
                    .submit(WriteOp::BuildScalarIndexes)
                    .await
                    .unwrap();
            }
        }
        assert_all_found(&store, &current, "small appends").await;
        for at in (0..40).step_by(4) {
            supersede(&store, &mut current, at, 1).await;
        }
        assert_all_found(&store, &current, "updates").await;
        store.writer().submit(WriteOp::FoldIndexes).await.unwrap();
        assert_all_found(&store, &current, "fold").await;
        let more: Vec<_> = (40..50).map(memory).collect();
        store
            .writer()
            .submit(WriteOp::Insert(more.clone()))
            .await
            .unwrap();
        current.extend(more);
        for at in (1..50).step_by(5) {
            supersede(&store, &mut current, at, 2).await;
        }
        assert_all_found(&store, &current, "appends and updates after a fold").await;
        let bookkeeping = WriteOp::Update {
            predicate: col("id").one_of(&["m3", "m7", "m9"]),
            columns: vec![("strength", Expr::Float(0.5))],
        };
        store.writer().submit(bookkeeping).await.unwrap();
        assert_all_found(&store, &current, "bookkeeping").await;
        store.compact(&store.memories).await.unwrap();
        assert_all_found(&store, &current, "compaction").await;
        store.writer().submit(WriteOp::FoldIndexes).await.unwrap();
        assert_all_found(&store, &current, "fold after compaction").await;
        store.purge().await.unwrap();
        assert_all_found(&store, &current, "purge").await;
        assert_eq!(store.count(&Pred::All).await.unwrap(), 70);
    }

    /// −1–1, the same for the same `seed` (splitmix64).
    fn noise(seed: u64) -> f32 {
        let mut x = seed ^ 0x9E37_79B9_7F4A_7C15;
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
        (x % 2000) as f32 / 1000.0 - 1.0
    }

    /// A memory whose vector lies near one of 20 topics, as embeddings of text do (the same
    /// `n` gives the same vector, no two alike).
    fn scattered(n: usize, dim: usize) -> MemoryRecord {
        let mut m = memory(n);
        let topic = (n % 20) as u64;
        m.vector = (0..dim as u64)
            .map(|d| noise(topic * 1000 + d) + 0.3 * noise((n as u64 + 1) * 1_000_003 + d))
            .collect();
        m
    }

    /// Dimensions of the ANN tests' vectors.
    const ANN_DIM: usize = 32;

    /// A store that builds its ANN index at 600 rows.
    /// A store whose ANN index is built past 600 rows and leaves up to `flat_tail` new rows
    /// unindexed.
    async fn ann_store(dir: &std::path::Path, flat_tail: usize) -> std::sync::Arc<Store> {
        let config = crate::config::StoreConfig {
            advanced: crate::config::StoreTuning {
                ann_index_min_rows: 600,
                ann_flat_tail_rows: flat_tail,
                ..Default::default()
            },
            ..Default::default()
        };
        Store::open(dir, ANN_DIM, "test", &config, &Default::default())
            .await
            .unwrap()
    }

    /// The [`scattered`] memories numbered `range`, in one commit.
    fn insert(range: std::ops::Range<usize>) -> WriteOp {
        WriteOp::Insert(range.map(|n| scattered(n, ANN_DIM)).collect())
    }

    /// Each of the [`scattered`] memories numbered `rows` is its own nearest neighbour
    /// through the ANN index.
    async fn assert_found_by_ann(store: &Store, rows: impl IntoIterator<Item = usize>) {
        for n in rows {
            let probe = scattered(n, ANN_DIM);
            let hits = store
                .vector_search(&probe.vector, &Pred::All, 1, false)
                .await
                .unwrap();
            assert_eq!(hits[0].record.id, probe.id, "row {n}");
        }
    }

    /// An ANN training's sample stays within its memory budget as partitions grow (384
    /// dimensions: 65,536 vectors), keeping Lance's 256 a partition while that fits and a
    /// few dozen a partition at the least.
    #[test]
    fn an_ann_trainings_sample_is_bounded_in_bytes() {
        use super::training_sample_rate;
        assert_eq!(training_sample_rate(16, 384), 256);
        assert_eq!(training_sample_rate(316, 384), 207);
        assert_eq!(training_sample_rate(1000, 384), 65);
        assert_eq!(training_sample_rate(4096, 384), 64);
        assert_eq!(training_sample_rate(1000, 768), 64);
    }

    /// Past `ann_index_min_rows` maintenance builds the ANN index beside the writer: a write
    /// sent during the build is committed, the index's top 10 match exact search's, rows
    /// added after it are found, and it is trained again only once the table has doubled.
    #[tokio::test]
    async fn the_ann_index_is_built_beside_the_writer_and_misses_nothing_new() {
        let dir = tempfile::tempdir().unwrap();
        let store = ann_store(dir.path(), 8_192).await;
        store.writer().submit(insert(0..500)).await.unwrap();
        assert_eq!(
            store.maintain_vector_index().await.unwrap(),
            None,
            "too few rows"
        );
        store.writer().submit(insert(500..700)).await.unwrap();
        let (built, written) = tokio::join!(
            store.maintain_vector_index(),
            store.writer().submit(insert(700..720))
        );
        assert_eq!(built.unwrap(), Some("built ANN vector index"));
        written.unwrap();
        assert!(store.index_state().await.unwrap().has_vector_index);
        assert_eq!(store.count(&Pred::All).await.unwrap(), 720);

        let mut same = 0;
        for q in 0..20 {
            let probe = scattered(10_000 + q, ANN_DIM).vector;
            let ids = |hits: Vec<super::super::memories::Scored>| {
                hits.into_iter().map(|h| h.record.id).collect::<Vec<_>>()
            };
            let ann = ids(store
                .vector_search(&probe, &Pred::All, 10, false)
                .await
                .unwrap());
            let exact = ids(store
                .vector_search(&probe, &Pred::All, 10, true)
                .await
                .unwrap());
            assert_eq!(exact.len(), 10);
            same += exact.iter().filter(|id| ann.contains(id)).count();
        }
        assert!(same >= 180, "the index's top 10 held {same} of exact's 200");

        // A row added after the build (and a fold of those written during it) is searched
        // one by one until folded in.
        store.fold_beside(Fold::Segment).await.unwrap();
        let late = scattered(5_000, ANN_DIM);
        store
            .writer()
            .submit(WriteOp::Insert(vec![late.clone()]))
            .await
            .unwrap();
        let hits = store
            .vector_search(&late.vector, &Pred::All, 1, false)
            .await
            .unwrap();
        assert_eq!(hits[0].record.id, late.id);
        // A fold leaves so small a tail to be searched so (1/128 of the index's rows at most),
        // rather than adding a segment every search would read.
        let ann = || async {
            let stats = store.memories.index_stats("vector_idx").await.unwrap();
            stats
                .map(|s| (s.num_indices, s.num_unindexed_rows))
                .unwrap()
        };
        let (segments, tail) = ann().await;
        assert!(tail >= 1);
        store.fold_beside(Fold::Segment).await.unwrap();
        assert_eq!(ann().await, (segments, tail));
        let hits = store
            .vector_search(&late.vector, &Pred::All, 1, false)
            .await
            .unwrap();
        assert_eq!(hits[0].record.id, late.id);
        assert_eq!(
            store.maintain_vector_index().await.unwrap(),
            None,
            "not doubled"
        );
    }

    /// Indexes the memories' vectors by `index`, as a store built by an older mnemod has them.
    async fn index_vectors_by(store: &Store, index: Index) {
        store
            .memories
            .create_index(&["vector"], index)
            .execute()
            .await
            .unwrap();
    }

    /// An IVF-SQ index built without a partition size of ours (whose partitions Lance's
    /// folds join to its own size) is trained again once, with one.
    #[tokio::test]
    async fn an_ann_index_without_a_partition_size_is_trained_again_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = ann_store(dir.path(), 8_192).await;
        store.writer().submit(insert(0..700)).await.unwrap();
        let unsized_index = lancedb::index::vector::IvfSqIndexBuilder::default()
            .distance_type(lancedb::DistanceType::Cosine)
            .num_partitions(4);
        index_vectors_by(&store, Index::IvfSq(unsized_index)).await;
        // The first look records the rows an index it did not build was trained at.
        assert_eq!(store.maintain_vector_index().await.unwrap(), None);
        assert!(!store.index_state().await.unwrap().ann_sized);
        assert_eq!(
            store.maintain_vector_index().await.unwrap(),
            Some("trained ANN vector index again, its partitions kept at their size")
        );
        assert!(store.index_state().await.unwrap().ann_sized);
        assert_eq!(store.maintain_vector_index().await.unwrap(), None);
        assert_eq!(store.count(&Pred::All).await.unwrap(), 700);
    }

    /// A store whose ANN index is IVF-PQ (built before IVF-SQ was chosen) gets an IVF-SQ
    /// index at the next pass, and loses no row on the way.
    #[tokio::test]
    async fn an_ivf_pq_index_is_rebuilt_as_ivf_sq() {
        const DIM: usize = 32;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(
            dir.path(),
            DIM,
            "test",
            &Default::default(),
            &Default::default(),
        )
        .await
        .unwrap();
        let rows: Vec<_> = (0..700).map(|n| scattered(n, DIM)).collect();
        store
            .writer()
            .submit(WriteOp::Insert(rows.clone()))
            .await
            .unwrap();
        let pq = lancedb::index::vector::IvfPqIndexBuilder::default()
            .distance_type(lancedb::DistanceType::Cosine)
            .num_partitions(4);
        index_vectors_by(&store, Index::IvfPq(pq)).await;
        let kind = || async {
            let indices = store.memories.list_indices().await.unwrap();
            indices
                .into_iter()
                .find(|i| i.columns == ["vector"])
                .map(|i| i.index_type)
        };
        assert_eq!(kind().await, Some(IndexType::IvfPq));
        // The first look records the rows an index it did not build was trained at.
        assert_eq!(store.maintain_vector_index().await.unwrap(), None);
        assert_eq!(
            store.maintain_vector_index().await.unwrap(),
            Some("built ANN vector index again as IVF-SQ")
        );
        assert_eq!(kind().await, Some(IndexType::IvfSq));
        assert_eq!(store.maintain_vector_index().await.unwrap(), None);
        let hits = store
            .vector_search(&rows[7].vector, &Pred::All, 1, false)
            .await
            .unwrap();
        assert_eq!(hits[0].record.id, rows[7].id);
    }

    #[tokio::test]
    async fn a_busy_access_log_is_compacted_and_its_old_versions_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::super::test_store(dir.path()).await;
        let log = store.runs().access_log.clone();
        for i in 0..70 {
            let batch = super::super::runs::access_batch(&[(format!("m{i}"), i)]).unwrap();
            let table = log.clone();
            store
                .writer()
                .submit(WriteOp::Append { table, batch })
                .await
                .unwrap();
        }
        let fragments = |t: lancedb::Table| async move {
            t.stats().await.unwrap().fragment_stats.num_fragments
        };
        assert_eq!(fragments(log.clone()).await, 70);
        let done = store.tidy_bookkeeping(None).await.unwrap();
        assert_eq!(done, vec!["compacted bookkeeping tables"]);
        assert_eq!(fragments(log.clone()).await, 1);
        assert!(log.list_versions().await.unwrap().len() > 70);
        let done = store
            .tidy_bookkeeping(Some(std::time::Duration::ZERO))
            .await
            .unwrap();
        assert_eq!(done, vec!["pruned old bookkeeping versions"]);
        assert_eq!(log.list_versions().await.unwrap().len(), 1);
        // Nothing was lost on the way.
        let tallies = store.runs().access_tallies(i64::MAX).await.unwrap();
        assert_eq!(tallies.len(), 70);
    }

    /// Maintenance merges the memories' small fragments once a few have gathered, so a
    /// search's reads stay on few of them; nothing is lost on the way.
    #[tokio::test]
    async fn small_memory_fragments_are_merged_once_a_few_gather() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::super::test_store(dir.path()).await;
        let fragments = || async {
            store
                .memories
                .stats()
                .await
                .unwrap()
                .fragment_stats
                .num_fragments
        };
        let all: Vec<MemoryRecord> = (0..super::SMALL_MEMORY_FRAGMENTS).map(memory).collect();
        insert_each(&store, &all).await;
        assert_eq!(fragments().await, super::SMALL_MEMORY_FRAGMENTS);
        // Merged before the fold: the seven no index covered yet make one. The first, which
        // the full-text index built at the first insert covers, is left to idle
        // consolidation (merging it moves the index's rows).
        let done = store.maintain_indexes(1).await.unwrap();
        assert!(done.contains(&"compacted small fragments"), "{done:?}");
        assert_eq!(fragments().await, 2);
        assert_all_found(&store, &all, "after compaction").await;
        // One new fragment is not worth a rewrite.
        store
            .writer()
            .submit(WriteOp::Insert(vec![memory(99)]))
            .await
            .unwrap();
        let done = store.maintain_indexes(1).await.unwrap();
        assert!(!done.contains(&"compacted small fragments"), "{done:?}");
    }

    /// Every fold writes new index files and a compaction new data files; the versions that
    /// used the old ones are pruned by age, so a busy store's disk does not grow without end.
    #[tokio::test]
    async fn old_memory_versions_and_the_files_only_they_used_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::super::test_store(dir.path()).await;
        let all: Vec<MemoryRecord> = (0..super::SMALL_MEMORY_FRAGMENTS).map(memory).collect();
        for row in &all {
            insert_each(&store, std::slice::from_ref(row)).await;
            store.maintain_indexes(1).await.unwrap();
        }
        let versions = store.memories.list_versions().await.unwrap().len();
        let index_files = || {
            let indices = dir.path().join("memories.lance/_indices");
            std::fs::read_dir(indices).unwrap().count()
        };
        let before = index_files();
        assert_eq!(
            store
                .prune_memory_versions(std::time::Duration::from_secs(3600))
                .await
                .unwrap(),
            0,
            "every version is younger than an hour"
        );
        let pruned = store
            .prune_memory_versions(std::time::Duration::ZERO)
            .await
            .unwrap();
        assert_eq!(pruned as usize, versions - 1);
        assert_eq!(store.memories.list_versions().await.unwrap().len(), 1);
        assert!(index_files() < before, "{} → {}", before, index_files());
        assert_all_found(&store, &all, "after pruning").await;
    }

    /// Edges are looked up by their ends through B-tree indexes; maintenance folds new edges
    /// into them, or every walk would read the whole table.
    #[tokio::test]
    async fn new_edges_are_folded_into_the_edge_indexes() {
        use mnemo_protocol::graph::{EdgeType, Node};

        use super::super::edges::{EdgeFilter, EdgeRecord};

        let dir = tempfile::tempdir().unwrap();
        let store = super::super::test_store(dir.path()).await;
        let edges: Vec<EdgeRecord> = (0..super::FOLD_EACH_PASS_AFTER_ROWS)
            .map(|i| {
                let (a, b) = (
                    Node::memory(format!("m{i}")),
                    Node::memory(format!("m{}", i + 1)),
                );
                EdgeRecord::new("ns", a, b, EdgeType::TemporalSequence, 0.5, "test", 1)
            })
            .collect();
        let table = store.edges().table().clone();
        store
            .writer()
            .submit(store.edges().append(&edges).unwrap())
            .await
            .unwrap();
        assert_eq!(super::unindexed_rows(&table).await.unwrap(), edges.len());
        let done = store.tidy_bookkeeping(None).await.unwrap();
        assert_eq!(done, vec!["folded new rows into the edge indexes"]);
        assert_eq!(super::unindexed_rows(&table).await.unwrap(), 0);
        let found = store
            .edges()
            .touching(&["m7".to_string()], &EdgeFilter::default())
            .await
            .unwrap();
        let mut ends: Vec<(String, String)> =
            found.into_iter().map(|e| (e.src_id, e.dst_id)).collect();
        ends.sort();
        assert_eq!(
            ends,
            [("m6".into(), "m7".into()), ("m7".into(), "m8".into())]
        );
        // Nothing new: nothing to fold.
        assert!(store.tidy_bookkeeping(None).await.unwrap().is_empty());
    }

    /// While an ANN index trains, folds wait (a fold's commit would void the training's);
    /// once it ends they go ahead.
    #[tokio::test]
    async fn folds_wait_while_the_ann_index_trains() {
        use std::sync::atomic::Ordering;

        let dir = tempfile::tempdir().unwrap();
        let store = super::super::test_store(dir.path()).await;
        let rows: Vec<_> = (0..5).map(memory).collect();
        store.writer().submit(WriteOp::Insert(rows)).await.unwrap();
        store
            .writer()
            .submit(WriteOp::BuildScalarIndexes)
            .await
            .unwrap();
        store
            .writer()
            .submit(WriteOp::Insert(vec![memory(5)]))
            .await
            .unwrap();
        let unindexed = || async { store.index_state().await.unwrap().unindexed_rows };
        let before = unindexed().await;
        assert!(before > 0);
        let training = super::Training::start(&store.ann_training);
        store.writer().submit(WriteOp::FoldIndexes).await.unwrap();
        assert_eq!(unindexed().await, before, "folded during a training");
        drop(training);
        assert!(!store.ann_training.load(Ordering::Acquire));
        store.writer().submit(WriteOp::FoldIndexes).await.unwrap();
        assert_eq!(unindexed().await, 0);
    }
}
