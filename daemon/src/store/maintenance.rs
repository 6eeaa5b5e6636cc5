//! Keeps the indexes useful as rows arrive, through the writer like every other write: new
//! rows are folded into the indexes once enough have queued, small fragments are compacted,
//! and what a forget deleted is purged from old versions and index files within
//! `store.purge_after_forget_secs`. The ANN vector index is built by consolidation, while the
//! machine is idle, because building it holds the writer for a minute at 50k rows.

use std::sync::Arc;
use std::time::Duration;

use super::{Store, StoreError, WriteOp};
use crate::events::{Event, EventBus};
use crate::shutdown::Shutdown;

/// How often index maintenance looks for new rows to fold in.
const MAINTENANCE_EVERY: Duration = Duration::from_secs(20);
use super::writer::FOLD_AFTER_ROWS;
/// Small fragments (one per small commit) past which maintenance compacts them; reads and
/// commits slow down with every fragment.
const SMALL_FRAGMENTS_BEFORE_COMPACTING: usize = 64;

/// What the indexes look like now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexState {
    pub rows: usize,
    pub has_fts: bool,
    pub has_vector_index: bool,
    pub unindexed_rows: usize,
}

impl Store {
    pub async fn index_state(&self) -> Result<IndexState, StoreError> {
        let rows = self.memories.count_rows(None).await?;
        let indices = self.memories.list_indices().await?;
        let has = |col: &str| indices.iter().find(|i| i.columns.iter().any(|c| c == col));
        let mut unindexed_rows = 0;
        if let Some(fts) = has("content") {
            if let Some(stats) = self.memories.index_stats(&fts.name).await? {
                unindexed_rows = stats.num_unindexed_rows;
            }
        }
        Ok(IndexState {
            rows,
            has_fts: has("content").is_some(),
            has_vector_index: has("vector").is_some(),
            unindexed_rows,
        })
    }

    /// One maintenance pass; cheap when nothing needs doing. With `build_ann`, also builds
    /// the ANN index once the table is large enough. Returns what it did.
    pub async fn maintain_indexes(
        &self,
        fold_after_rows: usize,
        build_ann: bool,
    ) -> Result<Vec<&'static str>, StoreError> {
        let state = self.index_state().await?;
        let mut done = Vec::new();
        if state.rows == 0 {
            return Ok(done);
        }
        if !state.has_fts {
            self.writer.submit(WriteOp::BuildTextIndex).await?;
            done.push("built full-text index");
        } else if state.unindexed_rows >= fold_after_rows {
            self.writer.submit(WriteOp::FoldIndexes).await?;
            done.push("folded new rows into indexes");
        }
        let small = self
            .memories
            .stats()
            .await?
            .fragment_stats
            .num_small_fragments;
        if small >= SMALL_FRAGMENTS_BEFORE_COMPACTING {
            self.writer.submit(WriteOp::CompactSmall).await?;
            done.push("compacted small fragments");
        }
        if build_ann && !state.has_vector_index && state.rows >= self.config.ann_index_min_rows {
            let partitions = ((state.rows as f64).sqrt() as u32).clamp(16, 1024);
            self.writer
                .submit(WriteOp::BuildVectorIndex { partitions })
                .await?;
            done.push("built ANN vector index");
        }
        Ok(done)
    }

    /// Removes forgotten content from old versions and index files now.
    pub async fn purge(&self) -> Result<u64, StoreError> {
        self.writer.submit(WriteOp::Purge).await
    }
}

/// The maintenance task: a pass every 20 s, and a purge a short while after each forget
/// (forgets close together share one). A purge still pending at shutdown runs then.
pub async fn run(store: Arc<Store>, events: EventBus, shutdown: Shutdown) {
    let mut tick = tokio::time::interval(MAINTENANCE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let purge_delay = Duration::from_secs(store.config.purge_after_forget_secs);
    let mut purge_due: Option<tokio::time::Instant> = None;
    loop {
        let purge_at = purge_due.unwrap_or_else(|| tokio::time::Instant::now() + MAINTENANCE_EVERY);
        tokio::select! {
            _ = shutdown.requested() => break,
            _ = store.purge.notified() => {
                purge_due.get_or_insert_with(|| tokio::time::Instant::now() + purge_delay);
            }
            _ = tokio::time::sleep_until(purge_at), if purge_due.is_some() => {
                purge_due = None;
                purge(&store, &events).await;
            }
            _ = tick.tick() => match store.maintain_indexes(FOLD_AFTER_ROWS, false).await {
                Ok(done) => done.into_iter().for_each(|what| publish(&events, what)),
                Err(e) => tracing::warn!("index maintenance failed: {e}"),
            },
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
