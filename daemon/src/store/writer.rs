//! The single writer: every change to `memories` queues here, consecutive changes of the same
//! sort are committed together (one LanceDB version and fragment per batch, not per request),
//! and each caller is answered only once its batch is committed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lancedb::arrow::arrow_array::{RecordBatch, RecordBatchIterator};
use lancedb::arrow::arrow_schema::SchemaRef;
use lancedb::Table;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::schema::{to_batch, MemoryRecord};
use super::StoreError;

pub enum WriteOp {
    /// New rows, appended.
    Insert(Vec<MemoryRecord>),
    /// Rows replaced by id or added (a closed old version plus its successor).
    Upsert(Vec<MemoryRecord>),
    /// A SQL predicate; answers the number of rows deleted.
    Delete(String),
    /// Some columns of existing memories, keyed by `id` (a partial-schema merge: the other
    /// columns, vectors included, are left as they are). Rows matching no id, or failing
    /// `only_if` (SQL over `target.` and `source.`), are left alone. Answers rows updated.
    Patch {
        batch: RecordBatch,
        only_if: Option<String>,
    },
    /// Folds new rows into the memories' indexes. Done here, between commits, because run
    /// beside the writer under steady writes it lost every commit race and gave up.
    FoldIndexes,
    /// Merges the memories' small fragments (many small commits leave one each) so reads
    /// and commits stay fast between consolidation runs.
    CompactSmall,
    /// Sets `columns` (name, SQL expression over the old row) where `predicate` holds;
    /// answers the number of rows updated. Bookkeeping only: content changes are versions.
    Update {
        predicate: String,
        columns: Vec<(String, String)>,
    },
    /// Rows for another table; consecutive appends to one table commit together.
    Append { table: Table, batch: RecordBatch },
    /// Rows replacing those with the same `on` key in another table, or added.
    Merge {
        table: Table,
        on: &'static str,
        batch: RecordBatch,
    },
    /// Deletes from another table.
    DeleteWhere { table: Table, predicate: String },
}

impl WriteOp {
    fn rows(&self) -> usize {
        match self {
            WriteOp::Insert(r) | WriteOp::Upsert(r) => r.len(),
            WriteOp::Append { batch, .. } | WriteOp::Merge { batch, .. } => batch.num_rows(),
            WriteOp::Patch { batch, .. } => batch.num_rows(),
            WriteOp::Delete(_)
            | WriteOp::DeleteWhere { .. }
            | WriteOp::Update { .. }
            | WriteOp::FoldIndexes
            | WriteOp::CompactSmall => 1,
        }
    }
    fn table_name(&self) -> Option<&str> {
        match self {
            WriteOp::Append { table, .. }
            | WriteOp::Merge { table, .. }
            | WriteOp::DeleteWhere { table, .. } => Some(table.name()),
            _ => None,
        }
    }
    /// Only appends of one sort to one table are merged into one commit.
    fn same_sort(&self, other: &WriteOp) -> bool {
        let mergeable = matches!(
            self,
            WriteOp::Insert(_) | WriteOp::Upsert(_) | WriteOp::Append { .. }
        );
        mergeable
            && std::mem::discriminant(self) == std::mem::discriminant(other)
            && self.table_name() == other.table_name()
    }
}

struct Queued {
    op: WriteOp,
    ack: oneshot::Sender<Result<u64, StoreError>>,
}

#[derive(Clone)]
pub struct WriterHandle {
    queue: mpsc::Sender<Queued>,
    pending: Arc<AtomicUsize>,
    commits: Arc<AtomicUsize>,
}

impl WriterHandle {
    /// Queues `op` and waits until it is committed. Returns rows written or deleted.
    pub async fn submit(&self, op: WriteOp) -> Result<u64, StoreError> {
        let (ack, done) = oneshot::channel();
        let rows = op.rows();
        self.pending.fetch_add(rows, Ordering::Relaxed);
        if self.queue.send(Queued { op, ack }).await.is_err() {
            self.pending.fetch_sub(rows, Ordering::Relaxed);
            return Err(StoreError::Closed);
        }
        done.await.map_err(|_| StoreError::Closed)?
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

/// Starts the writer. It ends when every handle is dropped, after committing what queued.
pub fn start(
    table: Table,
    schema: SchemaRef,
    settings: WriterSettings,
) -> (WriterHandle, tokio::task::JoinHandle<()>) {
    let (queue, rx) = mpsc::channel(4096);
    let pending = Arc::new(AtomicUsize::new(0));
    let commits = Arc::new(AtomicUsize::new(0));
    let handle = WriterHandle {
        queue,
        pending: pending.clone(),
        commits: commits.clone(),
    };
    let task = tokio::spawn(run(table, schema, settings, rx, pending, commits));
    (handle, task)
}

async fn run(
    table: Table,
    schema: SchemaRef,
    settings: WriterSettings,
    mut rx: mpsc::Receiver<Queued>,
    pending: Arc<AtomicUsize>,
    commits: Arc<AtomicUsize>,
) {
    while let Some(first) = rx.recv().await {
        // Gather what arrives within the interval, up to max_rows.
        let deadline = Instant::now() + settings.interval;
        let mut batch = vec![first];
        let mut rows = batch[0].op.rows();
        while rows < settings.max_rows {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(q)) => {
                    rows += q.op.rows();
                    batch.push(q);
                }
                Ok(None) | Err(_) => break,
            }
        }
        // Commit runs of the same sort together, in arrival order.
        let mut rest = batch.into_iter().peekable();
        while let Some(head) = rest.next() {
            let mut run = vec![head];
            while rest.peek().is_some_and(|q| q.op.same_sort(&run[0].op)) {
                run.extend(rest.next());
            }
            let run_rows: usize = run.iter().map(|q| q.op.rows()).sum();
            commit_run(&table, &schema, run).await;
            commits.fetch_add(1, Ordering::Relaxed);
            pending.fetch_sub(run_rows, Ordering::Relaxed);
        }
    }
    tracing::debug!("writer stopped");
}

async fn commit_run(table: &Table, schema: &SchemaRef, run: Vec<Queued>) {
    let (ops, acks): (Vec<WriteOp>, Vec<_>) = run.into_iter().map(|q| (q.op, q.ack)).unzip();
    let result = match ops.first() {
        Some(
            WriteOp::Delete(_)
            | WriteOp::DeleteWhere { .. }
            | WriteOp::Merge { .. }
            | WriteOp::Update { .. }
            | WriteOp::Patch { .. }
            | WriteOp::FoldIndexes
            | WriteOp::CompactSmall,
        ) => {
            // These answer each caller on its own, so they commit one by one.
            for (op, ack) in ops.into_iter().zip(acks) {
                let _ = ack.send(commit_single(table, op).await);
            }
            return;
        }
        Some(WriteOp::Append { table: other, .. }) => {
            let other = other.clone();
            let batches: Vec<RecordBatch> = ops
                .into_iter()
                .filter_map(|op| match op {
                    WriteOp::Append { batch, .. } => Some(batch),
                    _ => None,
                })
                .collect();
            append_batches(&other, batches).await
        }
        Some(WriteOp::Insert(_)) => {
            let rows: Vec<MemoryRecord> = flatten(ops);
            append(table, schema, &rows).await
        }
        Some(WriteOp::Upsert(_)) => {
            let rows: Vec<MemoryRecord> = flatten(ops);
            upsert(table, schema, &rows).await
        }
        None => return,
    };
    if let Err(e) = &result {
        tracing::error!("commit failed: {e}");
    }
    for ack in acks {
        let _ = ack.send(result.clone().map(|_| 0).map_err(|e: StoreError| e));
    }
}

async fn commit_single(memories: &Table, op: WriteOp) -> Result<u64, StoreError> {
    match op {
        WriteOp::Delete(predicate) => {
            Ok(memories.delete(predicate.as_str()).await?.num_deleted_rows)
        }
        WriteOp::CompactSmall => {
            let stats = memories
                .optimize(lancedb::table::OptimizeAction::Compact {
                    options: Default::default(),
                    remap_options: None,
                })
                .await?;
            Ok(stats
                .compaction
                .map(|c| c.fragments_removed as u64)
                .unwrap_or(0))
        }
        WriteOp::FoldIndexes => {
            memories
                .optimize(lancedb::table::OptimizeAction::Index(Default::default()))
                .await?;
            Ok(0)
        }
        WriteOp::Patch { batch, only_if } => {
            let schema = batch.schema();
            let reader = RecordBatchIterator::new(vec![Ok(batch)], schema);
            let mut merge = memories.merge_insert(&["id"]);
            merge.when_matched_update_all(only_if);
            Ok(merge.execute(Box::new(reader)).await?.num_updated_rows)
        }
        WriteOp::Update { predicate, columns } => {
            let mut update = memories.update().only_if(predicate);
            for (name, expr) in columns {
                update = update.column(name, expr);
            }
            Ok(update.execute().await?.rows_updated)
        }
        WriteOp::DeleteWhere { table, predicate } => {
            Ok(table.delete(predicate.as_str()).await?.num_deleted_rows)
        }
        WriteOp::Merge { table, on, batch } => {
            let rows = batch.num_rows() as u64;
            let schema = batch.schema();
            let reader = RecordBatchIterator::new(vec![Ok(batch)], schema);
            let mut merge = table.merge_insert(&[on]);
            merge
                .when_matched_update_all(None)
                .when_not_matched_insert_all();
            merge.execute(Box::new(reader)).await?;
            Ok(rows)
        }
        _ => Err(StoreError::Schema("appends commit in runs".into())),
    }
}

async fn append_batches(table: &Table, batches: Vec<RecordBatch>) -> Result<(), StoreError> {
    let Some(first) = batches.first() else {
        return Ok(());
    };
    let batch = lancedb::arrow::arrow_select::concat::concat_batches(&first.schema(), &batches)?;
    table.add(batch).execute().await?;
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

async fn append(
    table: &Table,
    schema: &SchemaRef,
    rows: &[MemoryRecord],
) -> Result<(), StoreError> {
    let batch = to_batch(schema, rows)?;
    table.add(batch).execute().await?;
    Ok(())
}

async fn upsert(
    table: &Table,
    schema: &SchemaRef,
    rows: &[MemoryRecord],
) -> Result<(), StoreError> {
    let batch: RecordBatch = to_batch(schema, rows)?;
    let reader = RecordBatchIterator::new(vec![Ok(batch)], schema.clone());
    let mut merge = table.merge_insert(&["id"]);
    merge
        .when_matched_update_all(None)
        .when_not_matched_insert_all();
    merge.execute(Box::new(reader)).await?;
    Ok(())
}
