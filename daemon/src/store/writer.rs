//! The single writer. The rule: every commit to the database goes through this one task —
//! rows, patches, deletes, index builds, meta values — in the order it arrives, so no two
//! commits race. Work that takes seconds at scale (a fold, a compaction, an ANN training)
//! is built beside the writer from a snapshot, then committed in the writer's turn by
//! rebasing onto what was written meanwhile (`WriterHandle::in_turn`); such builds take the
//! one rewrite lock (`Store::rewrites`), so two never rebase over each other. Consecutive
//! appends of the same sort are committed together (one LanceDB version and fragment per
//! batch, not per request), and each caller is answered only once its batch is committed.
//! The writer also keeps the memory counts current, since it sees every change.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt;
use lancedb::arrow::arrow_array::{Array, RecordBatch, RecordBatchIterator, StringArray};
use lancedb::arrow::arrow_schema::SchemaRef;
use lancedb::index::Index;
use lancedb::query::{ExecutableQuery, QueryBase};
use lancedb::table::{OptimizeAction, OptimizeStats};
use lancedb::Table;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::beside::{self, Fold};
use super::counts::Counts;
use super::edges::{EdgeRecord, EDGES};
use super::error::{InTurn, StoreError};
use super::filter::{current, plain_rows};
use super::group::{self, Reach};
use super::observe::Observers;
pub use super::op::WriteOp;
use super::schema::{from_batch, to_batch, MemoryRecord};
use super::seal::{SealProgress, Sealing};
use super::sql::{col, Filtered, Pred};

/// An `optimize` of any table (compaction, pruning), answered with LanceDB's stats.
struct Optimize {
    table: Table,
    action: OptimizeAction,
    ack: oneshot::Sender<Result<OptimizeStats, StoreError>>,
}

impl Job {
    fn reach(&self) -> Reach<'_> {
        match self {
            Job::Write { op, .. } => op.reach(),
            Job::Optimize(_) | Job::InTurn { .. } => Reach::Barrier,
        }
    }
}

enum Job {
    Write {
        op: WriteOp,
        ack: oneshot::Sender<Result<u64, StoreError>>,
    },
    Optimize(Optimize),
    InTurn {
        what: &'static str,
        table: String,
        commit: InTurn,
        ack: oneshot::Sender<Result<u64, StoreError>>,
    },
}

impl Job {
    fn rows(&self) -> usize {
        match self {
            Job::Write { op, .. } => op.rows(),
            Job::Optimize(_) | Job::InTurn { .. } => 1,
        }
    }
}

#[derive(Clone)]
pub struct WriterHandle {
    queue: mpsc::Sender<Job>,
    pending: Arc<AtomicUsize>,
    commits: Arc<AtomicUsize>,
    failing: Arc<WriteFailure>,
}

/// Why the last write failed, until one succeeds again: how status tells a full or
/// read-only disk from a healthy store.
#[derive(Default)]
pub struct WriteFailure(std::sync::Mutex<Option<String>>);

impl WriteFailure {
    fn note<T>(&self, result: &Result<T, StoreError>) {
        let failure = match result {
            Ok(_) => None,
            // A lost race or a stop says nothing about the disk.
            Err(StoreError::Conflict(_) | StoreError::Closed) => return,
            Err(e) => Some(super::error::without_source_locations(&e.to_string())),
        };
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = failure;
    }

    /// The last write's error, when it failed.
    pub fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// A write queued in turn, not yet committed ([`WriterHandle::queue`]).
pub struct Queued {
    done: oneshot::Receiver<Result<u64, StoreError>>,
    failing: Arc<WriteFailure>,
}

impl Queued {
    /// Waits until the write is committed. Returns rows written or deleted.
    pub async fn committed(self) -> Result<u64, StoreError> {
        let result = self.done.await.map_err(|_| StoreError::Closed)?;
        self.failing.note(&result);
        result
    }
}

impl WriterHandle {
    /// Queues `op` and waits until it is committed. Returns rows written or deleted.
    pub async fn submit(&self, op: WriteOp) -> Result<u64, StoreError> {
        self.queue(op).await?.committed().await
    }

    /// Queues `op` in turn and returns without waiting for its commit: writes queued under a
    /// lock keep the lock's order, and the lock need not be held through the commit (others
    /// queue behind and commit in the same group).
    pub async fn queue(&self, op: WriteOp) -> Result<Queued, StoreError> {
        let (ack, done) = oneshot::channel();
        self.enqueue(Job::Write { op, ack }).await?;
        Ok(Queued {
            done,
            failing: self.failing.clone(),
        })
    }

    /// Runs `action` on `table` in turn with every other write.
    pub async fn optimize(
        &self,
        table: Table,
        action: OptimizeAction,
    ) -> Result<OptimizeStats, StoreError> {
        let (ack, done) = oneshot::channel();
        self.enqueue(Job::Optimize(Optimize { table, action, ack }))
            .await?;
        let result = done.await.map_err(|_| StoreError::Closed)?;
        self.failing.note(&result);
        result
    }

    /// Runs `commit` (`what` of `table`, for the log) in turn with every other write: a commit whose
    /// work was done beside the writer, which lost every race to a stream of writes when
    /// committed beside it too.
    pub async fn in_turn(
        &self,
        what: &'static str,
        table: &str,
        commit: InTurn,
    ) -> Result<u64, StoreError> {
        let (ack, done) = oneshot::channel();
        let table = table.to_string();
        self.enqueue(Job::InTurn {
            what,
            table,
            commit,
            ack,
        })
        .await?;
        let result = done.await.map_err(|_| StoreError::Closed)?;
        self.failing.note(&result);
        result
    }

    /// Why writes are failing, while they are.
    pub fn failing(&self) -> Option<String> {
        self.failing.get()
    }

    async fn enqueue(&self, job: Job) -> Result<(), StoreError> {
        let rows = job.rows();
        self.pending.fetch_add(rows, Ordering::Relaxed);
        if self.queue.send(job).await.is_err() {
            self.pending.fetch_sub(rows, Ordering::Relaxed);
            return Err(StoreError::Closed);
        }
        Ok(())
    }

    /// Rows waiting for a commit.
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::Relaxed)
    }

    /// Commits made since start (a batch counts once).
    pub fn commits(&self) -> usize {
        self.commits.load(Ordering::Relaxed)
    }
}

pub struct WriterSettings {
    pub interval: Duration,
    pub max_rows: usize,
}

/// What the writer owns besides its queue: the memories table and the state it keeps current.
pub(super) struct Memories {
    pub table: Table,
    pub schema: SchemaRef,
    /// Set once the full-text index exists; searches read it.
    pub fts_ready: Arc<AtomicBool>,
    pub counts: Arc<Counts>,
    /// Rows appended since index maintenance was last asked to fold.
    pub unfolded: AtomicUsize,
    /// Wakes index maintenance to fold them in once [`FOLD_AFTER_ROWS`] have gathered.
    pub fold_due: Arc<tokio::sync::Notify>,
    /// Set while an ANN index trains beside the writer: a fold commits the indexes too, and
    /// every fold during a training made its commit lose (at 400k rows under steady ingest
    /// a 75 s training lost every time, and the index never came). Folds wait until it ends.
    pub ann_training: Arc<AtomicBool>,
    /// Encryption at rest: rows are sealed as they are written, once it is on.
    pub sealing: Arc<Sealing>,
    pub seal_progress: Arc<SealProgress>,
    /// Told of each commit to the memories and their edges (the search index held in memory).
    pub observers: Observers,
    /// What a fold leaves to later (`beside::FoldBounds`).
    pub fold_bounds: beside::FoldBounds,
}

/// The columns every search filters on (the namespace, the model, current versions) and the
/// keys rows are fetched by. Without them each query reads these columns whole: at 100k
/// memories that is most of a search's time.
pub(super) const SCALAR_INDEXES: [(&str, ScalarIndex); 5] = [
    ("namespace", ScalarIndex::Bitmap),
    ("embed_model", ScalarIndex::Bitmap),
    ("valid_to", ScalarIndex::BTree),
    ("id", ScalarIndex::BTree),
    ("lineage", ScalarIndex::BTree),
];

/// Bitmaps for columns with a few values, B-trees for the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ScalarIndex {
    Bitmap,
    BTree,
}

/// Appended rows past which the writer folds them into the indexes right after acknowledging
/// them: unindexed rows are searched flat, which gets slow after a bulk load.
pub(super) const FOLD_AFTER_ROWS: usize = 2_000;

/// Starts the writer. It ends when every handle is dropped, after committing what queued.
pub(super) fn start(
    memories: Memories,
    settings: WriterSettings,
) -> (WriterHandle, tokio::task::JoinHandle<()>) {
    let (queue, rx) = mpsc::channel(4096);
    let pending = Arc::new(AtomicUsize::new(0));
    let commits = Arc::new(AtomicUsize::new(0));
    let handle = WriterHandle {
        queue,
        pending: pending.clone(),
        commits: commits.clone(),
        failing: Default::default(),
    };
    let task = tokio::spawn(run(memories, settings, rx, pending, commits));
    (handle, task)
}

async fn run(
    memories: Memories,
    settings: WriterSettings,
    mut rx: mpsc::Receiver<Job>,
    pending: Arc<AtomicUsize>,
    commits: Arc<AtomicUsize>,
) {
    while let Some(first) = rx.recv().await {
        // Gather what arrives within the interval, up to max_rows.
        let deadline = Instant::now() + settings.interval;
        let mut batch = vec![first];
        let mut rows = batch[0].rows();
        while rows < settings.max_rows {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(job)) => {
                    rows += job.rows();
                    batch.push(job);
                }
                Ok(None) | Err(_) => break,
            }
        }
        // Commit runs of the same sort together; each table's writes in arrival order.
        for mut run in group::runs(batch, Job::reach) {
            let started = Instant::now();
            let head = run.remove(0);
            let (op, ack) = match head {
                Job::Optimize(o) => {
                    let what = optimize_name(&o.action);
                    let result = o.table.optimize(o.action).await.map_err(StoreError::from);
                    held(started, what, o.table.name());
                    let _ = o.ack.send(result);
                    commits.fetch_add(1, Ordering::Relaxed);
                    pending.fetch_sub(1, Ordering::Relaxed);
                    continue;
                }
                Job::InTurn {
                    what,
                    table,
                    commit,
                    ack,
                } => {
                    let result = commit.await;
                    held(started, what, &table);
                    let _ = ack.send(result);
                    commits.fetch_add(1, Ordering::Relaxed);
                    pending.fetch_sub(1, Ordering::Relaxed);
                    continue;
                }
                Job::Write { op, ack } => (op, ack),
            };
            let run: Vec<(WriteOp, Ack)> = std::iter::once((op, ack))
                .chain(run.into_iter().filter_map(|job| match job {
                    Job::Write { op, ack } => Some((op, ack)),
                    _ => None,
                }))
                .collect();
            let run_rows: usize = run.iter().map(|(op, _)| op.rows()).sum();
            let what = run[0].0.name();
            let detail = match run[0].0.table_name() {
                Some(table) => format!("{table}, {run_rows} rows"),
                None => format!("{run_rows} rows"),
            };
            commit_run(&memories, run).await;
            held(started, what, &detail);
            commits.fetch_add(1, Ordering::Relaxed);
            pending.fetch_sub(run_rows, Ordering::Relaxed);
        }
    }
    tracing::debug!("writer stopped");
}

type Ack = oneshot::Sender<Result<u64, StoreError>>;

/// Writes wait while one commit runs: one that held them longer than this is logged, so a
/// stall shows in the log with its cause.
const LONG_COMMIT: Duration = Duration::from_millis(250);

fn held(started: Instant, what: &str, detail: &str) {
    let took = started.elapsed();
    tracing::debug!(
        "writer: {what} ({detail}) in {:.1} ms",
        took.as_secs_f64() * 1e3
    );
    if took >= LONG_COMMIT {
        tracing::info!(
            "writer: {what} ({detail}) held writes for {:.2} s",
            took.as_secs_f64()
        );
    }
}

fn optimize_name(action: &OptimizeAction) -> &'static str {
    match action {
        OptimizeAction::Compact { .. } => "compaction",
        OptimizeAction::Prune { .. } => "pruning old versions",
        OptimizeAction::Index(_) => "folding into indexes",
        _ => "optimizing",
    }
}

async fn commit_run(memories: &Memories, run: Vec<(WriteOp, Ack)>) {
    let (ops, acks): (Vec<WriteOp>, Vec<Ack>) = run.into_iter().unzip();
    let result = match ops.first() {
        Some(WriteOp::Append { table: other, .. }) => {
            let other = other.clone();
            let batches: Vec<RecordBatch> = ops
                .into_iter()
                .filter_map(|op| match op {
                    WriteOp::Append { batch, .. } => Some(batch),
                    _ => None,
                })
                .collect();
            let appended_edges = (other.name() == EDGES).then(|| batches.clone());
            let result = append_batches(&other, batches).await;
            if let (Ok(_), Some(observer)) = (&result, memories.observers.get()) {
                for batch in appended_edges.iter().flatten() {
                    observer.edges_written(&EdgeRecord::from_batch(batch));
                }
            }
            result
        }
        Some(WriteOp::Insert(_)) => {
            let rows: Vec<MemoryRecord> = flatten(ops);
            let result = append(memories, &rows).await;
            if result.is_ok() {
                hold(memories, &rows);
                memories.counts.added(&rows);
                ensure_text_index(memories).await;
                let unfolded = memories.unfolded.fetch_add(rows.len(), Ordering::Relaxed);
                if unfolded + rows.len() >= FOLD_AFTER_ROWS {
                    // Index maintenance folds them beside the writer: at 1M memories a fold
                    // takes seconds (the full-text index's alone 4.7 s), and run here every
                    // write waited for it.
                    memories.unfolded.store(0, Ordering::Relaxed);
                    memories.fold_due.notify_one();
                }
            }
            result
        }
        Some(WriteOp::Upsert(_)) => {
            let rows: Vec<MemoryRecord> = flatten(ops);
            let result = upsert(memories, &rows).await;
            if result.is_ok() {
                hold(memories, &rows);
                recount(memories).await;
            }
            result
        }
        Some(WriteOp::Merge { .. }) if ops.len() > 1 && one_schema(&ops) => {
            let mut counts = Vec::with_capacity(ops.len());
            let mut batches = Vec::with_capacity(ops.len());
            let mut target = None;
            for op in ops {
                if let WriteOp::Merge { table, on, batch } = op {
                    counts.push(batch.num_rows() as u64);
                    batches.push(batch);
                    target = Some((table, on));
                }
            }
            let (table, on) = target.expect("a run of merges");
            let on_edges = table.name() == EDGES;
            let result = merge_batches(&table, on, &batches).await;
            if let (Ok(_), true, Some(observer)) = (&result, on_edges, memories.observers.get()) {
                for batch in &batches {
                    observer.edges_written(&EdgeRecord::from_batch(batch));
                }
            }
            if let Err(e) = &result {
                tracing::error!("commit failed: {e}");
            }
            for (ack, rows) in acks.into_iter().zip(counts) {
                let _ = ack.send(result.clone().map(|_| rows));
            }
            return;
        }
        Some(_) => {
            // The others answer each caller on its own, so they commit one by one.
            for (op, ack) in ops.into_iter().zip(acks) {
                let changes_counts = op.changes_counts();
                let on_edges = op.table_name() == Some(EDGES);
                let merged_edges = match &op {
                    WriteOp::Merge { batch, .. } if on_edges => Some(batch.clone()),
                    _ => None,
                };
                let deletes_edges = on_edges && matches!(op, WriteOp::DeleteWhere { .. });
                // Rows closed by id are counted off as they were; any other change of the
                // current rows is counted again (at 1M memories ~0.3 s of holding writes).
                let closes: Option<Vec<String>> = op
                    .closes()
                    .map(|ids| ids.into_iter().map(str::to_string).collect());
                let closing = match &closes {
                    Some(ids) => {
                        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                        Counts::current_among(&memories.table, &ids).await.ok()
                    }
                    None => None,
                };
                let observer = memories.observers.get();
                let after = match (&observer, op.alters_memories()) {
                    (Some(observer), true) => observer.memories_altering(&op, closes.as_deref()),
                    _ => None,
                };
                let before = match after.as_ref().is_some_and(|a| a.wants_versions) {
                    true => beside::snapshot(&memories.table).await.ok(),
                    false => None,
                };
                let result = commit_single(memories, op).await;
                if let (true, Some(observer)) = (deletes_edges, &observer) {
                    observer.edges_deleted();
                }
                if let (Ok(_), Some(batch), Some(observer)) = (&result, merged_edges, &observer) {
                    observer.edges_written(&EdgeRecord::from_batch(&batch));
                }
                if result.is_ok() && changes_counts {
                    match &closing {
                        Some(rows) => memories.counts.closed(rows),
                        None => recount(memories).await,
                    }
                }
                if let (Ok(_), Some(after)) = (&result, after) {
                    let versions = match before {
                        Some(before) => beside::snapshot(&memories.table)
                            .await
                            .ok()
                            .map(|after| (before, after)),
                        None => None,
                    };
                    (after.then)(versions.as_ref().map(|(b, a)| (&**b, &**a)));
                }
                let _ = ack.send(result);
            }
            return;
        }
        None => return,
    };
    if let Err(e) = &result {
        tracing::error!("commit failed: {e}");
    }
    for ack in acks {
        let _ = ack.send(result.clone().map(|_| 0));
    }
}

/// Tells the observer of memories just committed.
fn hold(memories: &Memories, rows: &[MemoryRecord]) {
    if let Some(observer) = memories.observers.get() {
        observer.memories_written(rows);
    }
}

/// Counts the current memories again (after a delete or a bulk close, which say only how
/// many rows they touched, not which kinds).
async fn recount(memories: &Memories) {
    if let Err(e) = memories.counts.recount(&memories.table).await {
        tracing::warn!("counting memories failed: {e}");
    }
}

/// The full-text index exists from the first rows on, built here so no search ever builds it.
async fn ensure_text_index(memories: &Memories) {
    if memories.fts_ready.load(Ordering::Acquire) {
        return;
    }
    match build_text_index(memories).await {
        Ok(()) => memories.fts_ready.store(true, Ordering::Release),
        Err(e) => tracing::warn!("building the full-text index failed (retried later): {e}"),
    }
}

/// Takes the appended rows into the indexes, unless an ANN index is training (see
/// [`Memories::ann_training`]); false when it did not.
async fn fold(memories: &Memories) -> Result<bool, StoreError> {
    if memories.ann_training.load(Ordering::Acquire) {
        return Ok(false);
    }
    let folded = beside::fold_indexes(&memories.table, Fold::Segment, memories.fold_bounds).await?;
    memories.unfolded.store(0, Ordering::Relaxed);
    Ok(folded)
}

async fn build_text_index(memories: &Memories) -> Result<(), StoreError> {
    let (column, analyzer) = memories.sealing.text_index();
    memories
        .table
        .create_index(&[column], Index::FTS(analyzer))
        .replace(true)
        .execute()
        .await?;
    Ok(())
}

async fn build_scalar_indexes(memories: &Memories) -> Result<u64, StoreError> {
    let table = &memories.table;
    let indices = table.list_indices().await?;
    let mut built = 0;
    for (column, kind) in SCALAR_INDEXES {
        if indices
            .iter()
            .any(|i| i.columns.iter().any(|c| c == column))
        {
            continue;
        }
        let index = match kind {
            ScalarIndex::Bitmap => Index::Bitmap(Default::default()),
            ScalarIndex::BTree => Index::BTree(Default::default()),
        };
        table.create_index(&[column], index).execute().await?;
        built += 1;
    }
    Ok(built)
}

async fn commit_single(memories: &Memories, op: WriteOp) -> Result<u64, StoreError> {
    let table = &memories.table;
    match op {
        WriteOp::Delete(predicate) => Ok(table.delete(&predicate.sql()).await?.num_deleted_rows),
        WriteOp::Supersede { old, new } => supersede(memories, *old, *new).await,
        WriteOp::FoldIndexes => Ok(fold(memories).await? as u64),
        WriteOp::BuildTextIndex => {
            build_text_index(memories).await?;
            memories.fts_ready.store(true, Ordering::Release);
            Ok(0)
        }
        WriteOp::BuildScalarIndexes => build_scalar_indexes(memories).await,
        WriteOp::Seal { finish } => seal_rows(memories, finish).await,
        WriteOp::Patch { batch, only_if } => {
            let schema = batch.schema();
            // Lance plans a partial merge over the patch's own columns: a condition on any
            // other fails at planning ("Field … not found in struct").
            let condition = only_if
                .as_ref()
                .map(Pred::target_columns)
                .unwrap_or_default();
            if let Some(missing) = condition
                .iter()
                .find(|c| schema.field_with_name(c).is_err())
            {
                return Err(StoreError::Schema(format!(
                    "a patch's condition reads {missing}, which the patch does not carry; add the column"
                )));
            }
            let reader = RecordBatchIterator::new(vec![Ok(batch)], schema);
            let mut merge = table.merge_insert(&["id"]);
            merge.when_matched_update_all(only_if.map(|p| p.sql()));
            Ok(merge.execute(Box::new(reader)).await?.num_updated_rows)
        }
        WriteOp::Update { predicate, columns } => {
            let mut update = table.update();
            if let Some(filter) = predicate.filter() {
                update = update.only_if(filter);
            }
            for (name, expr) in columns {
                update = update.column(name, expr.sql());
            }
            Ok(update.execute().await?.rows_updated)
        }
        WriteOp::DeleteWhere { table, predicate } => {
            Ok(table.delete(&predicate.sql()).await?.num_deleted_rows)
        }
        WriteOp::Merge { table, on, batch } => {
            let rows = batch.num_rows() as u64;
            merge_batches(&table, on, &[batch]).await?;
            Ok(rows)
        }
        WriteOp::Insert(_) | WriteOp::Upsert(_) | WriteOp::Append { .. } => {
            Err(StoreError::Schema("appends commit in runs".into()))
        }
    }
}

/// The check and the commit happen here, between other writes, so nothing can close `old`
/// in between: the first of two updates of one version wins.
async fn supersede(
    memories: &Memories,
    old: MemoryRecord,
    new: MemoryRecord,
) -> Result<u64, StoreError> {
    let still_current = memories
        .table
        .count_rows(col("id").eq(&old.id).and(current()).filter())
        .await?;
    if still_current == 0 {
        return Err(StoreError::Conflict(format!(
            "memory `{}` was changed or replaced meanwhile; read it again and update the current version",
            old.id
        )));
    }
    let rows = [old, new];
    upsert(memories, &rows).await?;
    hold(memories, &rows);
    memories.counts.superseded(&rows[0], &rows[1]);
    Ok(2)
}

async fn append_batches(table: &Table, batches: Vec<RecordBatch>) -> Result<(), StoreError> {
    let Some(first) = batches.first() else {
        return Ok(());
    };
    let batch = lancedb::arrow::arrow_select::concat::concat_batches(&first.schema(), &batches)?;
    table.add(batch).execute().await?;
    Ok(())
}

/// Whether the merges carry the same columns, so they can be merged as one.
fn one_schema(ops: &[WriteOp]) -> bool {
    let schema = |op: &WriteOp| match op {
        WriteOp::Merge { batch, .. } => Some(batch.schema()),
        _ => None,
    };
    let first = ops.first().and_then(schema);
    first.is_some() && ops.iter().all(|op| schema(op) == first)
}

/// Merges `batches` into `table` by `on` as one commit: a key given twice takes its last row,
/// as committing them in turn would.
async fn merge_batches(table: &Table, on: &str, batches: &[RecordBatch]) -> Result<(), StoreError> {
    let Some(first) = batches.first() else {
        return Ok(());
    };
    let schema = first.schema();
    let all = lancedb::arrow::arrow_select::concat::concat_batches(&schema, batches)?;
    let keys = all
        .column_by_name(on)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .ok_or_else(|| StoreError::Schema(format!("a merge's key `{on}` is not a text column")))?;
    let mut last = std::collections::HashMap::with_capacity(keys.len());
    for (i, key) in keys.iter().enumerate() {
        last.insert(key, i as u32);
    }
    let mut keep: Vec<u32> = last.into_values().collect();
    keep.sort_unstable();
    let batch = if keep.len() == all.num_rows() {
        all
    } else {
        let indices = lancedb::arrow::arrow_array::UInt32Array::from(keep);
        lancedb::arrow::arrow_select::take::take_record_batch(&all, &indices)?
    };
    let reader = RecordBatchIterator::new(vec![Ok(batch)], schema);
    let mut merge = table.merge_insert(&[on]);
    merge
        .when_matched_update_all(None)
        .when_not_matched_insert_all();
    merge.execute(Box::new(reader)).await?;
    Ok(())
}

fn flatten(ops: Vec<WriteOp>) -> Vec<MemoryRecord> {
    ops.into_iter()
        .flat_map(|op| match op {
            WriteOp::Insert(r) | WriteOp::Upsert(r) => r,
            _ => Vec::new(),
        })
        .collect()
}

async fn append(memories: &Memories, rows: &[MemoryRecord]) -> Result<(), StoreError> {
    let batch = to_batch(&memories.schema, &memories.sealing.seal(rows))?;
    memories.table.add(batch).execute().await?;
    Ok(())
}

async fn upsert(memories: &Memories, rows: &[MemoryRecord]) -> Result<(), StoreError> {
    merge_rows(memories, &memories.sealing.seal(rows)).await
}

/// Rows replacing those with the same id, or added, exactly as given.
async fn merge_rows(memories: &Memories, rows: &[MemoryRecord]) -> Result<(), StoreError> {
    let batch: RecordBatch = to_batch(&memories.schema, rows)?;
    let reader = RecordBatchIterator::new(vec![Ok(batch)], memories.schema.clone());
    let mut merge = memories.table.merge_insert(&["id"]);
    merge
        .when_matched_update_all(None)
        .when_not_matched_insert_all();
    merge.execute(Box::new(reader)).await?;
    Ok(())
}

/// Rows sealed per commit of a conversion.
pub(super) const SEAL_CHUNK: usize = 512;

/// [`WriteOp::Seal`], run by the writer.
async fn seal_rows(memories: &Memories, finish: bool) -> Result<u64, StoreError> {
    let mut sealed = 0u64;
    loop {
        let batches: Vec<RecordBatch> = memories
            .table
            .query()
            .filtered(&plain_rows())
            .limit(SEAL_CHUNK)
            .execute()
            .await?
            .try_collect()
            .await?;
        let rows: Vec<MemoryRecord> = batches.iter().flat_map(from_batch).collect();
        if rows.is_empty() {
            break;
        }
        merge_rows(memories, &memories.sealing.seal_with_keys(&rows)?).await?;
        sealed += rows.len() as u64;
        memories
            .seal_progress
            .done
            .fetch_add(rows.len() as u64, Ordering::Relaxed);
        if !finish {
            break;
        }
    }
    if finish {
        switch_text_index(memories).await?;
    }
    Ok(sealed)
}

/// Sealing on, and the full-text index over hashed terms in place of the plain one (whose
/// files the purge that follows removes).
async fn switch_text_index(memories: &Memories) -> Result<(), StoreError> {
    memories.fts_ready.store(false, Ordering::Release);
    memories.sealing.turn_on();
    // An empty table gets its index with its first rows, as a new store does.
    if memories.table.count_rows(None).await? > 0 {
        build_text_index(memories).await?;
        memories.fts_ready.store(true, Ordering::Release);
    }
    for index in memories.table.list_indices().await? {
        if index.columns.iter().any(|c| c == "content") {
            memories.table.drop_index(&index.name).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use lancedb::arrow::arrow_array::{Float32Array, Int64Array};

    use super::*;
    use crate::store::schema::{memories_schema, patch_batch};

    fn patch(valid_to: Option<i64>, only_if: Option<Pred>) -> WriteOp {
        let batch = patch_batch(
            &memories_schema(4),
            vec![
                ("id", Arc::new(StringArray::from(vec!["a"]))),
                ("strength", Arc::new(Float32Array::from(vec![0.5]))),
                ("valid_to", Arc::new(Int64Array::from(vec![valid_to]))),
            ],
        )
        .unwrap();
        WriteOp::Patch { batch, only_if }
    }

    /// A column carried for the patch's condition is not one it sets; closing rows is.
    #[test]
    fn a_patch_sets_what_it_writes_not_what_its_condition_reads() {
        let on_current = || Some(current().on_target());
        let decayed = patch(None, on_current());
        assert!(decayed.patches("strength"));
        assert!(!decayed.patches("valid_to") && !decayed.changes_counts());
        assert!(patch(Some(7), on_current()).changes_counts());
        assert!(patch(None, None).changes_counts());
    }

    /// Rows a patch closes by id are counted off; a row closed already is not counted twice.
    #[tokio::test]
    async fn a_patch_closing_rows_counts_them_off() {
        use crate::store::schema::tests::record;
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::test_store(dir.path()).await;
        let rows: Vec<MemoryRecord> = ["a", "b", "c"]
            .iter()
            .map(|id| {
                let mut r = record(id, id, 4);
                r.faded_at = None;
                r
            })
            .collect();
        store.writer().submit(WriteOp::Insert(rows)).await.unwrap();
        let close = |ids: Vec<&str>| {
            let n = ids.len();
            let batch = patch_batch(
                &memories_schema(4),
                vec![
                    ("id", Arc::new(StringArray::from(ids))),
                    ("valid_to", Arc::new(Int64Array::from(vec![Some(9); n]))),
                ],
            )
            .unwrap();
            WriteOp::Patch {
                batch,
                only_if: Some(current().on_target()),
            }
        };
        assert!(close(vec!["a"]).closes().is_some());
        store.writer().submit(close(vec!["a"])).await.unwrap();
        assert_eq!(store.memory_counts().total, 2);
        store.writer().submit(close(vec!["a", "b"])).await.unwrap();
        let counts = store.memory_counts();
        assert_eq!(counts.total, 1);
        assert_eq!(counts.by_namespace.get("default"), Some(&1));
    }
}
