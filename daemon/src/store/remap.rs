//! A compaction's commit whose indexes' rows are moved to the rows' new places beside the
//! writer. Lance moves them inside `commit_compaction`, between reserving the merged
//! fragments' ids (the rows' new addresses name them) and committing the rewrite: every
//! index segment covering a merged fragment is written again there, and at 1M memories a
//! commit run whole in the writer's turn held every write for 5–7 s. Here the commit runs
//! beside the writer with a remapper that, once the segments are written, waits for the
//! writer's turn: the writer holds only for the rewrite's commit. The reservation commits
//! beside it, as an ANN training's does; it changes no row, so Lance rebases appends over
//! it.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use lance::dataset::index::DatasetIndexRemapperOptions;
use lance::dataset::optimize::remapping::{IndexRemapper, IndexRemapperOptions, RemappedIndex};
use lance::dataset::optimize::{commit_compaction, CompactionMetrics, RewriteResult};
use lance::Dataset;
use lance_core::utils::row_addr_remap::RowAddrRemap;
use lancedb::table::CompactionOptions;
use tokio::sync::oneshot;

use super::error::{InTurn, StoreError};

/// Commits `results`, a compaction of `dataset` with `options`, moving the indexes' rows
/// beside the writer; returns once they are moved, with the rest of the commit to run in the
/// writer's turn. `finish` is handed the committed dataset there. A commit that failed
/// before the move (or needed none) is the returned commit's result.
pub(super) async fn commit_moving_beside<F>(
    dataset: Dataset,
    results: Vec<RewriteResult>,
    options: CompactionOptions,
    finish: F,
) -> InTurn
where
    F: FnOnce(Dataset, CompactionMetrics) -> Result<u64, StoreError> + Send + 'static,
{
    let (moved, ready) = oneshot::channel();
    let (go, turn) = oneshot::channel();
    let remap = Arc::new(MoveThenWait {
        turn: Arc::new(Mutex::new(Some(Turn { moved, turn }))),
    });
    let mut commit: InTurn = Box::pin(async move {
        let mut dataset = dataset;
        let metrics = commit_compaction(&mut dataset, results, remap, &options).await?;
        finish(dataset, metrics)
    });
    tokio::select! {
        biased;
        result = &mut commit => Box::pin(async move { result }),
        _ = ready => Box::pin(async move {
            // Dropped unsent, the commit stops: the remapper fails without its turn.
            let _ = go.send(());
            commit.await
        }),
    }
}

/// The remapper's meeting with the writer's turn: it says the rows are moved, then waits.
struct Turn {
    moved: oneshot::Sender<()>,
    turn: oneshot::Receiver<()>,
}

/// Lance's remapper of the dataset's indexes, then a wait for the writer's turn.
struct MoveThenWait {
    turn: Arc<Mutex<Option<Turn>>>,
}

#[async_trait]
impl IndexRemapperOptions for MoveThenWait {
    async fn create_remapper(
        &self,
        dataset: &Dataset,
    ) -> lance::Result<Option<Box<dyn IndexRemapper>>> {
        let moving = DatasetIndexRemapperOptions::default()
            .create_remapper(dataset)
            .await?;
        // Some even with no index to move, so the commit still waits for the turn.
        Ok(Some(Box::new(Remapper {
            moving,
            turn: self.turn.clone(),
        })))
    }
}

struct Remapper {
    moving: Option<Box<dyn IndexRemapper>>,
    turn: Arc<Mutex<Option<Turn>>>,
}

#[async_trait]
impl IndexRemapper for Remapper {
    async fn remap_indices(
        &self,
        rows: RowAddrRemap,
        fragments: &[u64],
    ) -> lance::Result<Vec<RemappedIndex>> {
        let started = std::time::Instant::now();
        let moved = match &self.moving {
            Some(moving) => moving.remap_indices(rows, fragments).await?,
            None => Vec::new(),
        };
        tracing::debug!(
            "{} index segments' rows moved beside the writer in {:.2} s",
            moved.len(),
            started.elapsed().as_secs_f64()
        );
        let turn = self.turn.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(Turn { moved: ready, turn }) = turn {
            let dropped = || lance::Error::internal("the compaction's commit was dropped");
            ready.send(()).map_err(|_| dropped())?;
            turn.await.map_err(|_| dropped())?;
        }
        Ok(moved)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::super::beside::{self, IndexRows, Merged};
    use super::super::rewrite::tests::{assert_all_found, files_under, memory, segmented_store};
    use super::super::WriteOp;

    /// The segment directories of the memories' indexes on disk, committed or not.
    fn segment_dirs(dir: &std::path::Path) -> BTreeSet<std::path::PathBuf> {
        let files = files_under(dir).into_iter();
        let in_memories = files.filter(|f| f.to_string_lossy().contains("memories.lance"));
        in_memories
            .filter(|f| {
                f.parent()
                    .and_then(|p| p.parent())
                    .is_some_and(|p| p.ends_with("_indices"))
            })
            .filter_map(|f| f.parent().map(|p| p.to_path_buf()))
            .collect()
    }

    /// A merge of indexed fragments moves the indexes' rows before its turn comes: the
    /// segments are written again while the writer takes other writes, and the commit in
    /// its turn leaves the merged rows indexed, and every memory found.
    #[tokio::test]
    async fn the_indexes_rows_are_moved_before_the_writers_turn() {
        let dir = tempfile::tempdir().unwrap();
        let (mut all, store) = segmented_store(dir.path()).await;
        let (_, indexed) = beside::small_fragments(&store.memories).await.unwrap();
        assert!(indexed >= 2, "{indexed} small indexed fragments");
        let before = segment_dirs(dir.path());
        let commit = beside::rewrite(
            &store.memories,
            beside::small_fragments_merged(),
            Merged::Any,
            IndexRows::Moved,
            |_| {},
        )
        .await
        .unwrap()
        .expect("small indexed fragments to merge");
        let written = segment_dirs(dir.path());
        assert!(
            written.difference(&before).count() > 0,
            "no segment written before the turn: {before:?}"
        );
        let meanwhile = memory(all.len());
        store
            .writer()
            .submit(WriteOp::Insert(vec![meanwhile.clone()]))
            .await
            .unwrap();
        all.push(meanwhile);
        let merged = store
            .writer()
            .in_turn("committing a compaction", "memories", commit)
            .await
            .unwrap();
        assert!(merged >= 2, "{merged} fragments merged");
        let (_, left) = beside::small_fragments(&store.memories).await.unwrap();
        assert!(left < indexed, "{indexed} small indexed fragments → {left}");
        // The merged rows indexed where they went; only the write made meanwhile is not.
        assert_eq!(store.index_state().await.unwrap().unindexed_rows, 1);
        assert_all_found(&store, &all, "after a merge moved beside the writer").await;
    }
}
