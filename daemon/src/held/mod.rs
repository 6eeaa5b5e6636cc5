//! The search index over current memories, held in memory beside the store: each current
//! memory's vector codes, ranking values and words (`nearest/`), and the edges between
//! memories (`edges.rs`). Lance stays the truth. The store tells this component of every
//! commit through [`CommitObserver`]; index maintenance reads again what a commit left
//! unknown (`Held::refresh`). Searches ask here first and fall back to the store.

pub mod edges;
pub mod id;
mod nearest;
mod ranking;

use std::sync::Arc;

use lance::Dataset;

pub use edges::Steps;

use crate::store::beside::Moved;
use crate::store::edges::EdgeRecord;
use crate::store::observe::{AfterCommit, CommitObserver};
use crate::store::{MemoryRecord, Store, StoreError, WriteOp};

pub struct Held {
    store: Arc<Store>,
    /// The current memories' codes, ranking values and words.
    nearest: Arc<nearest::Nearest>,
    /// The edges between memories, for the spread a search walks.
    edges: edges::HeldEdges,
}

impl Held {
    /// The index over `store`'s current memories, told of every commit from now on. It holds
    /// nothing until maintenance first reads it ([`Held::refresh`]).
    pub fn over(store: Arc<Store>) -> Arc<Held> {
        let config = store.config();
        let held = Arc::new(Held {
            nearest: Arc::new(nearest::Nearest::new(
                config.advanced.vectors_in_memory_max_rows,
                config.advanced.vector_signs,
                config.advanced.ranking_in_memory_max_rows,
            )),
            // A conversation links each memory to the next; similar and updated ones add a few.
            edges: edges::HeldEdges::new(
                config.advanced.vectors_in_memory_max_rows.saturating_mul(4),
            ),
            store: store.clone(),
        });
        let observer: Arc<dyn CommitObserver> = held.clone();
        if !held.store.observe(Arc::downgrade(&observer)) {
            tracing::warn!("the store already tells another index of its commits");
        }
        held
    }

    /// The store searches fall back to.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Reads again what commits left unknown: the codes of fragments changed, and the edges
    /// if none are held. Answers the codes' rows and the edges held.
    pub async fn refresh(&self) -> Result<(Option<usize>, Option<usize>), StoreError> {
        let rows = self.refresh_nearest().await?;
        let edges = self.refresh_edges().await?;
        Ok((rows, edges))
    }

    /// Asks the kernel to keep the codes' files cached while they fit in `room` bytes;
    /// answers the bytes asked for.
    pub fn keep_files_cached(&self, room: u64) -> u64 {
        self.nearest.keep_files_cached(room)
    }

    /// Whether the codes hold every current memory as the last read found them.
    pub fn placed(&self) -> bool {
        self.nearest.placed()
    }

    /// The rows whose vectors are held (None while none are).
    pub fn vector_rows(&self) -> Option<usize> {
        self.nearest.vector_rows()
    }

    /// Whether the vectors are held signed (two bits a component).
    pub fn signed(&self) -> bool {
        self.nearest.signed()
    }

    /// Bytes held for searches (None while no codes are held).
    pub fn bytes(&self) -> Option<u64> {
        self.nearest.bytes().map(|b| b as u64)
    }
}

impl CommitObserver for Held {
    fn memories_written(&self, rows: &[MemoryRecord]) {
        // Entities and words as stored, so they match what a read of the table returns.
        let sealing = self.store.sealing();
        let stored = |e: &str| sealing.entity_key(e);
        let words = |text: &str| sealing.words(text);
        self.nearest
            .written(rows, self.store.embed_model(), &stored, &words);
    }

    fn memories_altering(&self, op: &WriteOp, closes: Option<&[String]>) -> Option<AfterCommit> {
        let reembeds = op.patches("vector");
        let changes_vectors = op.changes_counts() || reembeds;
        let changes_ranking = ranking::staling_held().any(|c| op.patches(c));
        // Rows closed by id leave the codes, and values a patch of current rows (or the
        // access fold's) sets in held columns are set in them: the fragments either touched
        // need not be read again.
        let closes_only = closes.is_some() && !reembeds;
        let patch = (!closes_only)
            .then(|| nearest::HeldPatch::of_op(op))
            .flatten();
        let takes_whole = closes_only || patch.is_some();
        if !changes_vectors && !changes_ranking && !takes_whole {
            return None;
        }
        let nearest = self.nearest.clone();
        let closes = closes.map(<[String]>::to_vec);
        let then = move |versions: Option<(&Dataset, &Dataset)>| {
            if changes_vectors {
                match &closes {
                    // Rows closed by id leave the codes; the rest stay held.
                    Some(ids) if !reembeds => nearest.retired(ids),
                    // Deleted or re-embedded rows, or closed by a condition: the held codes
                    // would propose the wrong rows until read again, so the ANN index
                    // serves meanwhile.
                    _ => nearest.invalidate(),
                }
            }
            if let Some(patch) = &patch {
                nearest.patched(patch);
            }
            if changes_ranking && !takes_whole {
                // Rows ranked from held values would rank at the old ones, and rows answered
                // without the sparse columns they held empty would miss them.
                nearest.ranking_changed();
            }
            if let Some((before, after)) = versions {
                nearest.take_as_read(before, after);
            }
        };
        Some(AfterCommit {
            wants_versions: takes_whole,
            then: Box::new(then),
        })
    }

    fn memories_moved(&self, moves: Vec<Moved>) {
        self.nearest.moved(moves);
    }

    fn edges_written(&self, edges: &[EdgeRecord]) {
        self.edges.written(edges);
    }

    fn edges_deleted(&self) {
        self.edges.invalidate();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A store under `dir` with the index over it, as the daemon builds them.
    pub async fn held_store(dir: &std::path::Path) -> Arc<Held> {
        Held::over(crate::store::test_store(dir).await)
    }
}
