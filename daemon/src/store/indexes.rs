//! The memories' indexes as they are, and the pass that keeps them useful as rows arrive:
//! the full-text and scalar indexes built, new rows folded in once enough have queued,
//! small fragments merged, and the ANN vector index built and trained again as the table
//! grows. Training and folds run beside the writer rather than through it (they take
//! seconds at 1M rows), so writes go on meanwhile. When they run is index maintenance's to
//! decide (`crate::maintenance`).

use std::sync::atomic::{AtomicBool, Ordering};

use lancedb::index::vector::IvfSqIndexBuilder;
use lancedb::index::{Index, IndexType};

use super::beside::{self, Fold, Merged};
use super::error::StoreError;
use super::writer::SCALAR_INDEXES;
use super::{Store, WriteOp};

/// Small fragments of the memories past which a pass merges them: every search reads its
/// candidates' rows, and each fragment they are spread over costs it a read.
pub(crate) const SMALL_MEMORY_FRAGMENTS: usize = 8;
/// Small fragments of the memories some index covers past which they are merged too, at the
/// cost of moving the indexes' rows (seconds at 1M memories, beside the writer). Folds leave
/// some; idle consolidation merges them before this.
const SMALL_INDEXED_MEMORY_FRAGMENTS: usize = 512;
/// Small indexed fragments past which a pass that finds writes paused merges them: each one
/// costs every filtered search a bitmap in its mask, and a merge takes a load's CPU, so it
/// waits for a quiet moment.
pub(super) const SMALL_INDEXED_FRAGMENTS_WHEN_QUIET: usize = 64;
/// Unindexed rows past which a maintenance pass folds them in, in the memories and in the
/// edges (the writer wakes a fold at once past
/// [`FOLD_AFTER_ROWS`](super::writer::FOLD_AFTER_ROWS), for bulk loads): every search reads
/// each unindexed row one by one.
pub const FOLD_EACH_PASS_AFTER_ROWS: usize = 256;

/// Bytes of vectors an ANN training reads into memory for its k-means (Lance samples 256 a
/// partition, which at 1M memories is hundreds of MB).
const TRAINING_SAMPLE_BYTES: usize = 96 << 20;

/// Vectors a partition's centroid is trained from: Lance's 256 while the sample fits in
/// [`TRAINING_SAMPLE_BYTES`], fewer past it, and never under 64 (k-means wants a few dozen
/// a centroid).
pub(super) fn training_sample_rate(partitions: u32, dim: usize) -> u32 {
    let vectors = TRAINING_SAMPLE_BYTES / (dim.max(1) * std::mem::size_of::<f32>());
    (vectors / partitions.max(1) as usize).clamp(64, 256) as u32
}

/// The meta key holding the row count the ANN index was trained at.
const ANN_TRAINED_AT: &str = "ann_index_rows";
/// The meta key holding the rows a partition of the ANN index was sized for. Lance's folds
/// join partitions under a quarter of their target size and split those over four times it;
/// without a target of ours they joined the partitions trained at 1M memories into a few
/// dozen large ones, and every search probed far more rows.
const ANN_PARTITION_ROWS: &str = "ann_partition_rows";
/// The ANN index is trained again once the table has grown this many times over: its
/// partitions were fitted to the rows of the time. An IVF-SQ training takes seconds even at
/// 1M rows, so doubling is cheap.
const ANN_RETRAIN_GROWTH: usize = 2;
/// The ANN index's kind: IVF partitions of 8-bit scalar-quantised vectors, which recall as
/// well as IVF-PQ refined at a fraction of the refine and train in seconds rather than
/// minutes (`docs/benchmarks.md`).
const ANN_INDEX: IndexType = IndexType::IvfSq;

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
    /// The smallest table an ANN index is built for (`store.advanced.ann_index_min_rows`).
    pub ann_min_rows: usize,
    /// No pass has work left on disk: none folds fewer unindexed rows than
    /// [`FOLD_EACH_PASS_AFTER_ROWS`], and a second ANN segment or the small fragments folds
    /// left wait for the pass that finds writes paused.
    pub settled: bool,
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

impl Store {
    /// The memories' indexes as they are now.
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
        let mut state = IndexState {
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
            ann_min_rows: self.config.advanced.ann_index_min_rows,
            settled: false,
        };
        state.settled = state.has_fts
            && state.missing_scalar.is_empty()
            && state.ann_due(state.ann_min_rows).is_none()
            && unindexed_rows < FOLD_EACH_PASS_AFTER_ROWS
            && self.ann_segments().await? <= 1
            && beside::small_fragments(&self.memories).await?.1
                < SMALL_INDEXED_FRAGMENTS_WHEN_QUIET;
        Ok(state)
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
        self.maintain_indexes_as(&state, fold_after_rows).await
    }

    /// [`Store::maintain_indexes`] from `state`, the indexes as the caller just read them.
    pub async fn maintain_indexes_as(
        &self,
        state: &IndexState,
        fold_after_rows: usize,
    ) -> Result<Vec<&'static str>, StoreError> {
        let paused = self.writes_paused(state);
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
    pub(super) async fn ann_segments(&self) -> Result<usize, StoreError> {
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
}

/// Marks an ANN training under way while it lives (cleared however the training ends).
pub(super) struct Training<'a>(&'a AtomicBool);

impl<'a> Training<'a> {
    pub(super) fn start(flag: &'a AtomicBool) -> Self {
        flag.store(true, Ordering::Release);
        Self(flag)
    }
}

impl Drop for Training<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}
