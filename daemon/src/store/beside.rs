//! Folds of new rows into a table's indexes and compactions of its small fragments, made
//! in two parts: their files written beside the writer (seconds at 1M memories), then
//! committed in the writer's turn, which takes a commit's time. Committed beside it too,
//! folds and compactions lose every race to a steady load of single adds (Lance builds its
//! manifest again each try); run whole in the writer's turn, they hold every write for
//! seconds. A compaction that moves the indexes' rows writes their segments again beside the
//! writer too, before its turn (`remap.rs`).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use lance::dataset::index::DatasetIndexRemapperOptions;
use lance::dataset::optimize::remapping::{IgnoreRemap, IndexRemapperOptions};
use lance::dataset::optimize::{
    commit_compaction, plan_compaction, CompactionMetrics, RewriteResult,
};
use lance::index::optimize::{commit_optimize_indices, plan_optimize_indices};
use lance::index::DatasetIndexExt;
use lance::table::format::Fragment;
use lancedb::index::IndexType;
use lancedb::table::{CompactionOptions, IndexRemapMode, OptimizeAction, OptimizeOptions};
use lancedb::Table;
use roaring::RoaringTreemap;

use super::error::{InTurn, StoreError};

/// What a fold leaves to later: the rows of a full-text segment, and the new rows the ANN
/// index leaves to be scanned flat (`store.advanced.text_index_segment_rows`,
/// `store.advanced.ann_flat_tail_rows`).
#[derive(Debug, Clone, Copy)]
pub struct FoldBounds {
    /// Rows one full-text segment holds at most.
    pub text_segment_rows: u64,
    /// At most; [`ANN_FLAT_TAIL_SHARE`] of the rows the index holds while that is fewer.
    /// Each segment costs every search served by the index in memory, however few rows it
    /// holds, where a small tail scanned flat costs little.
    pub ann_flat_tail_rows: u64,
}

impl FoldBounds {
    pub fn of(config: &crate::config::StoreConfig) -> Self {
        Self {
            text_segment_rows: config.advanced.text_index_segment_rows as u64,
            ann_flat_tail_rows: config.advanced.ann_flat_tail_rows as u64,
        }
    }
}

/// The share of the ANN index's rows a tail scanned flat may reach (up to
/// `store.advanced.ann_flat_tail_rows`). Lance reads each such row's vector and compares it
/// whole, about ten times what the index costs a row it holds, so a tail of 1/128 adds a
/// tenth or so to a search.
const ANN_FLAT_TAIL_SHARE: u64 = 128;

/// The share of the rows of the ANN index's older segment that its newest segment, with the
/// new rows of a segment fold, may cover before the fold merges both into one: past the
/// flat tail, new rows join the newest of two segments, and bounding that one by a quarter
/// of the other makes the whole merges of a load geometric.
const DELTA_SEGMENT_SHARE: u64 = 4;

/// How a fold treats the ANN index's segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fold {
    /// New rows past the flat tail ([`FoldBounds`]) join the ANN index's newest segment, or
    /// become one beside a lone segment; past [`DELTA_SEGMENT_SHARE`] all are merged into one,
    /// splitting a partition grown past 4× its target size and joining one shrunk under a
    /// quarter of it. The other indexes take every new row.
    Segment,
    /// Writes have paused: the ANN index's segments (and any new rows) are merged into one,
    /// its partitions as they are, since every segment costs every search the index serves
    /// memory. Nothing to do when it has one segment. Between loads, not within one:
    /// each such merge writes the whole index again.
    Settle,
    /// Segments and new rows are merged into one: what idle time is for, since every
    /// segment costs every search time. Nothing to do when there is one segment and no new
    /// row in any index.
    Whole,
}

/// What a fold of `table`'s indexes as `how` says asks of Lance, one set of options per
/// group of its indexes planned alike; empty when there is nothing to fold.
///
/// A full-text index is folded in segments of at most `bounds.text_segment_rows` rows: new
/// rows join its last segment while that has room and start a new one after. Lance merges new
/// rows into a segment by loading all of it into memory and writing it again, so with one
/// segment every fold of a load would hold and rewrite the whole index; with bounded
/// segments a fold holds and writes only the last.
async fn options(
    table: &Table,
    how: Fold,
    bounds: FoldBounds,
) -> Result<Vec<OptimizeOptions>, StoreError> {
    /// The indexes a fold group takes and the most segments one of them has.
    #[derive(Default)]
    struct Group {
        names: Vec<String>,
        segments: usize,
    }
    let (mut text, mut ann, mut others) = (Group::default(), Group::default(), Group::default());
    let (mut unindexed, mut ann_indexed) = (0, 0);
    for index in table.list_indices().await? {
        let vector = index.columns.iter().any(|c| c == "vector");
        let group = match index.index_type {
            IndexType::FTS => &mut text,
            _ if vector => &mut ann,
            _ => &mut others,
        };
        group.names.push(index.name.clone());
        // A segment fold or a settling needs only the ANN index's segment count; a whole
        // fold, every index's unindexed rows and segments.
        if !vector && how != Fold::Whole {
            continue;
        }
        let Some(stats) = table.index_stats(&index.name).await? else {
            continue;
        };
        unindexed = unindexed.max(stats.num_unindexed_rows);
        if vector {
            ann_indexed = stats.num_indexed_rows as u64;
        }
        group.segments = group.segments.max(stats.num_indices.unwrap_or(0) as usize);
    }
    // A segment fold read only the ANN index's stats: `unindexed` is its new rows. Past
    // the flat tail they join the newest segment or become one, fitted to the partitions
    // as they are; the partitions are split and joined only where every segment is merged
    // anyway. Left to choose, Lance splits a partition within a segment fold and merges
    // every segment with it, several times the time and memory of a segment of them.
    let flat_tail = (ann_indexed / ANN_FLAT_TAIL_SHARE).min(bounds.ann_flat_tail_rows);
    let mut ann_fold = match how {
        Fold::Whole if ann.segments <= 1 && unindexed == 0 => return Ok(Vec::new()),
        Fold::Whole => whole_ann_fold(ann.segments),
        Fold::Settle if ann.segments <= 1 => return Ok(Vec::new()),
        Fold::Settle => OptimizeOptions::merge(ann.segments),
        Fold::Segment if unindexed == 0 || (unindexed as u64) < flat_tail => {
            // Left out of the fold: its new rows stay a tail searches scan flat.
            ann.names.clear();
            OptimizeOptions::append()
        }
        Fold::Segment if ann.segments <= 1 => OptimizeOptions::append(),
        Fold::Segment => {
            let (older, newest) = segment_rows(&*snapshot(table).await?, &ann.names).await?;
            if ann.segments == 2 && (newest + unindexed as u64) * DELTA_SEGMENT_SHARE <= older {
                OptimizeOptions::merge(1)
            } else {
                whole_ann_fold(ann.segments)
            }
        }
    };
    ann_fold.index_names = Some(ann.names);
    // Unset, Lance merges new rows into a scalar index's last segment; the bound packs
    // them and the merged segments into segments of at most its rows, leaving alone any
    // segment that has no room.
    let text_fold = scalar_fold(how, text.segments, text.names)
        .max_rows_per_segment(Some(bounds.text_segment_rows));
    let others_fold = scalar_fold(how, others.segments, others.names);
    Ok([text_fold, ann_fold, others_fold]
        .into_iter()
        .filter(|o| {
            o.index_names
                .as_ref()
                .is_some_and(|names| !names.is_empty())
        })
        .collect())
}

/// A fold merging the ANN index's `segments` and any new rows into one segment.
fn whole_ann_fold(segments: usize) -> OptimizeOptions {
    OptimizeOptions::merge(segments.max(1)).with_partition_rebalancing()
}

/// The rows the segments of the index `names` cover in `dataset`: the older segments' and
/// the newest's (the last Lance lists, the one a merge of one segment takes).
pub(super) async fn segment_rows(
    dataset: &lance::Dataset,
    names: &[String],
) -> Result<(u64, u64), StoreError> {
    let indices = dataset.load_indices().await?;
    let covered = |segment: &lance::table::format::IndexMetadata| -> u64 {
        let Some(bitmap) = segment.fragment_bitmap.as_ref() else {
            return 0;
        };
        let fragments = dataset.manifest.fragments.iter();
        let fragments = fragments.filter(|f| bitmap.contains(f.id as u32));
        fragments.map(|f| f.num_rows().unwrap_or(0) as u64).sum()
    };
    let mut rows: Vec<u64> = indices
        .iter()
        .filter(|i| names.contains(&i.name))
        .map(covered)
        .collect();
    let newest = rows.pop().unwrap_or(0);
    Ok((rows.iter().sum(), newest))
}

/// A fold of the scalar indexes `names`, whose largest has `segments`: a whole fold merges
/// them all, a segment fold takes new rows into the last.
fn scalar_fold(how: Fold, segments: usize, names: Vec<String>) -> OptimizeOptions {
    match how {
        Fold::Whole => OptimizeOptions::merge(segments.max(1)),
        Fold::Segment | Fold::Settle => OptimizeOptions::default(),
    }
    .index_names(names)
}

/// Folds new rows into every index of `table` as `how` says, building and committing at
/// once; false when there was nothing to fold.
pub(super) async fn fold_indexes(
    table: &Table,
    how: Fold,
    bounds: FoldBounds,
) -> Result<bool, StoreError> {
    let groups = options(table, how, bounds).await?;
    let folded = !groups.is_empty();
    for options in groups {
        table.optimize(OptimizeAction::Index(options)).await?;
    }
    Ok(folded)
}

/// Builds the segments of a fold of `table`'s indexes as `how` says, and returns their
/// commit (to run in the writer's turn); None when there is nothing to fold. The commit
/// goes over whatever was committed since the segments were read from (appends keep their
/// rows, unindexed until the next fold), and shows the table's handle the new version.
pub(super) async fn build_fold(
    table: &Table,
    how: Fold,
    bounds: FoldBounds,
) -> Result<Option<InTurn>, StoreError> {
    let groups = options(table, how, bounds).await?;
    if groups.is_empty() {
        return Ok(None);
    }
    let dataset = latest(table).await?;
    let mut segments = Vec::new();
    // Every group is planned from the same version, so one commit publishes them all.
    for options in &groups {
        let started = std::time::Instant::now();
        let plan = plan_optimize_indices(&dataset, options).await?;
        let mut built = Vec::with_capacity(plan.tasks.len());
        for task in &plan.tasks {
            built.extend(task.execute(&dataset).await?);
        }
        let merging = std::time::Instant::now();
        for merge in &plan.merges {
            segments.extend(merge.execute(&dataset, &built).await?);
        }
        tracing::debug!(
            "fold of {:?} of {}: {} tasks built in {:.2} s, {} merges in {:.2} s",
            options.index_names.as_deref().unwrap_or_default(),
            table.name(),
            plan.tasks.len(),
            (merging - started).as_secs_f64(),
            plan.merges.len(),
            merging.elapsed().as_secs_f64(),
        );
    }
    if segments.is_empty() {
        return Ok(None);
    }
    let table = table.clone();
    Ok(Some(Box::pin(async move {
        let mut dataset = dataset;
        commit_optimize_indices(&mut dataset, segments, &OptimizeOptions::default()).await?;
        show(&table, dataset)?;
        Ok(1)
    })))
}

/// Rows compaction fills a fragment with. Fragments this large are left alone, so one
/// compaction rewrites about this many rows at most however large the table, while a
/// search's reads of scattered rows touch few fragments (each fragment a read touches costs
/// it a read).
pub(crate) const FRAGMENT_ROWS: usize = 32_768;

/// Compaction that merges the fragments smaller than [`FRAGMENT_ROWS`].
pub(super) fn small_fragments_merged() -> CompactionOptions {
    CompactionOptions {
        target_rows_per_fragment: FRAGMENT_ROWS,
        // The remap computes each moved row's new place from the merges' row ranges
        // rather than a map of every moved row.
        index_remap_mode: IndexRemapMode::Compact,
        // Reads of the merged fragments in batches of 1,024 rows rather than Lance's 8,192,
        // which keeps a large compaction's memory down.
        batch_size: Some(1024),
        ..Default::default()
    }
}

/// Which fragments a compaction merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Merged {
    /// Only those no index covers: the merge moves no index's rows (moving them writes
    /// every index segment covering them again).
    Unindexed,
    /// Any the compaction's options pick.
    Any,
}

/// What a compaction's commit does with the indexes' rows of the fragments it merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IndexRows {
    /// Moved to where the rows went: every index segment covering a merged fragment is
    /// written again (seconds at 1M memories), beside the writer (`remap.rs`).
    Moved,
    /// Left where they were: the indexes cover the merged fragments no more (their rows
    /// are searched one by one until a fold), and their segments hold the old rows until
    /// a scrub (`scrub.rs`). The commit takes a commit's time.
    Left,
}

/// `table`'s fragments under [`FRAGMENT_ROWS`] rows: how many no index covers, and how
/// many one does.
pub(super) async fn small_fragments(table: &Table) -> Result<(usize, usize), StoreError> {
    let dataset = latest(table).await?;
    let indexed = indexed_fragments(&dataset).await?;
    let small = dataset
        .manifest
        .fragments
        .iter()
        .filter(|f| f.physical_rows.is_some_and(|rows| rows < FRAGMENT_ROWS));
    Ok(small.fold((0, 0), |(unindexed, covered), f| {
        match indexed.contains(&f.id) {
            true => (unindexed, covered + 1),
            false => (unindexed + 1, covered),
        }
    }))
}

/// The fragments some index of `dataset` covers (a system index aside).
async fn indexed_fragments(dataset: &lance::Dataset) -> Result<HashSet<u64>, StoreError> {
    let indices = dataset.load_indices().await?;
    let covered = indices
        .iter()
        .filter(|index| !lance_index::is_system_index(index))
        .filter_map(|index| index.fragment_bitmap.as_ref())
        .flat_map(|bitmap| bitmap.iter().map(u64::from));
    Ok(covered.collect())
}

/// Writes the fragments a compaction of `table` with `options` merges the `which` of its
/// fragments into, and returns their commit (to run in the writer's turn); None when there
/// is nothing to merge. The commit puts the new fragments in place of those they merge (the
/// indexes' rows moved with them before it is returned, as `index_rows` says) and returns
/// how many were merged away. Lance rebases it over appends since; a write that changed a
/// merged fragment meanwhile voids it.
///
/// `moved` is told, as the commit lands, where the rows of each merge went.
pub(super) async fn rewrite(
    table: &Table,
    options: CompactionOptions,
    which: Merged,
    index_rows: IndexRows,
    moved: impl FnOnce(Vec<Moved>) + Send + 'static,
) -> Result<Option<InTurn>, StoreError> {
    let dataset = latest(table).await?;
    let plan = plan_compaction(&dataset, &options).await?;
    let indexed = match which {
        Merged::Unindexed => indexed_fragments(&dataset).await?,
        Merged::Any => HashSet::new(),
    };
    // Lance bins together only fragments the indexes cover alike.
    let tasks = plan
        .compaction_tasks()
        .filter(|t| t.task.fragments.iter().all(|f| !indexed.contains(&f.id)));
    let mut results = Vec::with_capacity(plan.num_tasks());
    let started = std::time::Instant::now();
    for task in tasks {
        results.push(task.execute(&dataset).await?);
    }
    if results.is_empty() {
        return Ok(None);
    }
    tracing::debug!(
        "compaction of {}: {} fragments merged into {} beside the writer in {:.2} s",
        table.name(),
        results
            .iter()
            .map(|r| r.original_fragments.len())
            .sum::<usize>(),
        results.iter().map(|r| r.new_fragments.len()).sum::<usize>(),
        started.elapsed().as_secs_f64()
    );
    let merges: Vec<Merge> = results.iter().filter_map(Merge::of).collect();
    let table = table.clone();
    let finish = move |dataset: lance::Dataset, metrics: CompactionMetrics| {
        let written: HashMap<&str, &Fragment> = dataset
            .fragments()
            .iter()
            .filter_map(|f| Some((f.files.first()?.path.as_str(), f)))
            .collect();
        let moves = merges
            .into_iter()
            .filter_map(|m| m.moved(&written))
            .collect();
        show(&table, dataset)?;
        moved(moves);
        Ok(metrics.fragments_removed as u64)
    };
    // Lance keeps the addresses of the rows it read only where the table has an index to
    // move them in.
    let addressed = results.iter().any(|r| r.row_addrs.is_some());
    if index_rows == IndexRows::Moved && addressed {
        return Ok(Some(
            super::remap::commit_moving_beside(dataset, results, options, finish).await,
        ));
    }
    Ok(Some(Box::pin(async move {
        let mut dataset = dataset;
        let remap: Arc<dyn IndexRemapperOptions> = match index_rows {
            IndexRows::Moved => Arc::new(DatasetIndexRemapperOptions::default()),
            IndexRows::Left => Arc::new(IgnoreRemap {}),
        };
        let metrics = commit_compaction(&mut dataset, results, remap, &options).await?;
        finish(dataset, metrics)
    })))
}

/// One merge of a compaction, before its commit: the fragments merged, the addresses of
/// the rows it read from them, and the data files it wrote (the commit gives them their
/// fragment ids).
struct Merge {
    merged: Vec<Fragment>,
    read: RoaringTreemap,
    files: Vec<String>,
}

impl Merge {
    /// `result`'s merge; None when Lance kept no addresses of the rows it read (no index
    /// needs moving: a table without indexes).
    fn of(result: &RewriteResult) -> Option<Self> {
        let read = RoaringTreemap::deserialize_from(result.row_addrs.as_deref()?).ok()?;
        let files = result.new_fragments.iter();
        Some(Self {
            merged: result.original_fragments.clone(),
            read,
            files: files
                .map(|f| Some(f.files.first()?.path.clone()))
                .collect::<Option<_>>()?,
        })
    }

    /// Where its rows went, from the fragments committed (by their first data file).
    fn moved(self, committed: &HashMap<&str, &Fragment>) -> Option<Moved> {
        let written: Vec<Fragment> = self
            .files
            .iter()
            .map(|path| committed.get(path.as_str()).map(|f| (*f).clone()))
            .collect::<Option<_>>()?;
        let mut first_rows = Vec::with_capacity(written.len());
        let mut rows = 0;
        for fragment in &written {
            first_rows.push(rows);
            rows += fragment.physical_rows? as u64;
        }
        (rows == self.read.len()).then_some(Moved {
            merged: self.merged,
            read: self.read,
            written,
            first_rows,
        })
    }
}

/// The rows one merge of a compaction moved: the fragments it merged (as they were before
/// it), the addresses of their rows it read, and the fragments it wrote them to (as
/// committed). The `k`th row read is the `k`th row written, addresses in order: Lance moves
/// its indexes' rows by the same rule.
pub struct Moved {
    pub merged: Vec<Fragment>,
    read: RoaringTreemap,
    pub written: Vec<Fragment>,
    /// The place among the rows written of each written fragment's first.
    first_rows: Vec<u64>,
}

impl Moved {
    /// The row id now of the row at `row_id` in a merged fragment; None for a row the merge
    /// did not read (deleted).
    pub fn row_id_now(&self, row_id: u64) -> Option<u64> {
        if !self.read.contains(row_id) {
            return None;
        }
        let k = self.read.rank(row_id) - 1;
        let f = self.first_rows.partition_point(|&first| first <= k) - 1;
        Some((self.written[f].id << 32) | (k - self.first_rows[f]))
    }
}

/// `table`'s dataset at its latest version, to change.
pub(super) async fn latest(table: &Table) -> Result<lance::Dataset, StoreError> {
    Ok((*snapshot(table).await?).clone())
}

/// `table`'s dataset as it is now: what a read of its fragments or row ids sees, whatever
/// is committed meanwhile.
pub(super) async fn snapshot(table: &Table) -> Result<Arc<lance::Dataset>, StoreError> {
    Ok(no_local_dataset(table, table.dataset())?.get().await?)
}

/// Shows `table`'s handle `dataset`, just committed (kept only if it is the newest).
pub(super) fn show(table: &Table, dataset: lance::Dataset) -> Result<(), StoreError> {
    no_local_dataset(table, table.dataset())?.update(dataset);
    Ok(())
}

/// `dataset`, `table`'s handle of its local dataset, or why there is none.
fn no_local_dataset<'a, T>(table: &Table, dataset: Option<&'a T>) -> Result<&'a T, StoreError> {
    dataset.ok_or_else(|| StoreError::Schema(format!("{} is not a local dataset", table.name())))
}
