//! Keeps the indexes useful as rows arrive: the full-text index exists from the first row,
//! new rows are folded into the indexes once enough have queued, and an ANN vector index is
//! built once the table is large enough that exact search gets slow.

use lancedb::index::scalar::FtsIndexBuilder;
use lancedb::index::vector::IvfPqIndexBuilder;
use lancedb::index::Index;

use super::{Store, StoreError};

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

    /// True once a full-text index exists, building it on the first call that finds rows.
    pub async fn ensure_text_index(&self) -> Result<bool, StoreError> {
        use std::sync::atomic::Ordering;
        if self.fts_ready.load(Ordering::Acquire) {
            return Ok(true);
        }
        let _one_builder = self.index_build.lock().await;
        let state = self.index_state().await?;
        if !state.has_fts {
            if state.rows == 0 {
                return Ok(false);
            }
            self.build_text_index().await?;
        }
        self.fts_ready.store(true, Ordering::Release);
        Ok(true)
    }

    async fn build_text_index(&self) -> Result<(), StoreError> {
        self.memories
            .create_index(&["content"], Index::FTS(FtsIndexBuilder::default()))
            .replace(true)
            .execute()
            .await?;
        Ok(())
    }

    /// One maintenance pass; cheap when nothing needs doing. Returns what it did.
    pub async fn maintain_indexes(
        &self,
        fold_after_rows: usize,
    ) -> Result<Vec<&'static str>, StoreError> {
        let state = self.index_state().await?;
        let mut done = Vec::new();
        if state.rows == 0 {
            return Ok(done);
        }
        let _one_builder = self.index_build.lock().await;
        if !state.has_fts {
            self.build_text_index().await?;
            done.push("built full-text index");
        } else if state.unindexed_rows >= fold_after_rows {
            self.writer.submit(super::WriteOp::FoldIndexes).await?;
            done.push("folded new rows into indexes");
        }
        let small = self
            .memories
            .stats()
            .await?
            .fragment_stats
            .num_small_fragments;
        if small >= SMALL_FRAGMENTS_BEFORE_COMPACTING {
            self.writer.submit(super::WriteOp::CompactSmall).await?;
            done.push("compacted small fragments");
        }
        if !state.has_vector_index && state.rows >= self.config.ann_index_min_rows {
            let partitions = ((state.rows as f64).sqrt() as u32).clamp(16, 1024);
            self.memories
                .create_index(
                    &["vector"],
                    Index::IvfPq(
                        IvfPqIndexBuilder::default()
                            .distance_type(lancedb::DistanceType::Cosine)
                            .num_partitions(partitions),
                    ),
                )
                .execute()
                .await?;
            done.push("built ANN vector index");
        }
        Ok(done)
    }
}
