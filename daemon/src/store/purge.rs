//! What a forget leaves behind, removed for real: a delete only marks rows deleted, so their
//! content stays in the data files that held them, in the index segments that covered them
//! and in every older version. The purge writes those fragments again without them, scrubs
//! the index segments that still hold the rows gone (`scrub.rs`), folds the rows it moved
//! into the indexes, and deletes every older version with the files only it used.
//!
//! Each rewrite is written beside the writer and committed in its turn (`beside.rs`), so
//! writes go on meanwhile: run whole in the writer's turn, a purge at 1M memories held every
//! write for 14.7–16.3 s (the compaction, whose commit rewrote every index segment covering
//! a fragment it merged, 5.8 s; the full-text index rebuilt whole, 6.7 s; pruning, 2.1 s).
//! Beside it, the same purge took 14 s and no commit held writes for 0.25 s. Folded before
//! the scrub, the moved rows joined segments still covering fragments gone, and the fold
//! took 16.9 s rather than 7.0–7.2 and RSS peaked at 667–688 MB rather than 598–621.

use std::time::Duration;

use lancedb::table::{CompactionOptions, OptimizeAction};
use lancedb::Table;

use super::beside::{self, Fold, IndexRows, Merged};
use super::error::StoreError;
use super::rewrite::{old_versions, Rewriting};
use super::{scrub, Store};

impl Store {
    /// Removes forgotten content from old versions and index files now: the memories', the
    /// edges', the entities' and the beliefs' (a forgotten memory's edges, entities and
    /// beliefs name what it said; a store just encrypted holds its plain beliefs in old
    /// versions). Returns how many old versions went.
    pub async fn purge(&self) -> Result<u64, StoreError> {
        let rewriting = self.rewrites.lock().await;
        let mut versions = 0;
        let tables = [
            &self.memories,
            self.edges.table(),
            self.entities.table(),
            self.beliefs.table(),
        ];
        for table in tables {
            versions += self.purge_table(&rewriting, table).await?;
        }
        self.drop_replaced_file_pages().await;
        Ok(versions)
    }

    async fn purge_table(
        &self,
        rewriting: &Rewriting<'_>,
        table: &Table,
    ) -> Result<u64, StoreError> {
        // The indexes' rows are left where they were, for the scrub below: moving them
        // is the commit rewriting every segment covering a merged fragment.
        let name = table.name();
        let step = Step::start();
        let options = without_deleted();
        self.rewrite_holding(rewriting, table, &options, Merged::Any, IndexRows::Left)
            .await?;
        let step = step.done(name, "fragments holding deleted rows written again");
        let scrubbed = table.clone();
        let whole = self.writer.in_turn(
            "scrubbing index segments",
            table.name(),
            Box::pin(async move {
                match scrub::build(&scrubbed).await? {
                    Some(commit) => commit.await,
                    None => Ok(0),
                }
            }),
        );
        let prepare = || scrub::build(table);
        self.beside_then_in_turn(rewriting, "committing a scrub", table, prepare, whole)
            .await?;
        let step = step.done(name, "index segments scrubbed");
        // Folded after the scrub, the rows written again join segments that no longer
        // cover a fragment gone.
        self.fold_holding(rewriting, table, Fold::Segment).await?;
        let step = step.done(name, "rows written again folded into the indexes");
        let pruned = self.prune_holding(rewriting, table, Duration::ZERO).await?;
        // Files no version lists (a rewrite a write voided) may hold forgotten rows too;
        // only in the writer's turn can none be a commit under way. Few are left by now.
        let unlisted = self
            .writer
            .optimize(table.clone(), prune_every_old_version())
            .await?;
        step.done(name, "old versions pruned");
        Ok(old_versions(&pruned) + old_versions(&unlisted))
    }
}

/// A step of a purge, timed for the log.
struct Step(std::time::Instant);

impl Step {
    fn start() -> Self {
        Self(std::time::Instant::now())
    }

    /// Logs `what` was done to `table`, and starts the next step.
    fn done(self, table: &str, what: &str) -> Self {
        let took = self.0.elapsed().as_secs_f64();
        tracing::debug!("purge of {table}: {what} in {took:.2} s");
        Self::start()
    }
}

/// Compaction that rewrites every fragment holding deleted rows without them.
pub(crate) fn without_deleted() -> CompactionOptions {
    CompactionOptions {
        target_rows_per_fragment: beside::FRAGMENT_ROWS,
        materialize_deletions: true,
        materialize_deletions_threshold: 0.0,
        ..Default::default()
    }
}

/// Deletes every version but the current one, and unverified files too: only safe in the
/// writer's turn, when no other commit can be under way.
fn prune_every_old_version() -> OptimizeAction {
    OptimizeAction::Prune {
        older_than: Some(lancedb::table::Duration::zero()),
        delete_unverified: Some(true),
        error_if_tagged_old_versions: Some(false),
    }
}

#[cfg(test)]
mod tests {
    use super::super::rewrite::tests::{
        assert_all_found, files_holding, memory, segmented_store, write_meanwhile,
    };
    use super::super::{col, MemoryRecord, Pred, WriteOp};

    /// A forget in a store whose full-text index has several segments (full ones, which no
    /// fold writes again): what it deleted leaves every file, every other memory is still
    /// found by its words, and writes made while the purge runs land.
    #[tokio::test]
    async fn a_purge_takes_what_was_forgotten_out_of_every_segment_and_lets_writes_go_on() {
        let dir = tempfile::tempdir().unwrap();
        let (mut all, store) = segmented_store(dir.path()).await;
        let forgotten = ["m5", "m150", "m299"];
        for id in forgotten {
            let token = format!("tok{}x", &id[1..]);
            assert!(
                !files_holding(dir.path(), &token).is_empty(),
                "{token} before"
            );
        }
        let deleted = store
            .writer()
            .submit(WriteOp::Delete(col("id").one_of(&forgotten)))
            .await
            .unwrap();
        assert_eq!(deleted, 3);
        all.retain(|r| !forgotten.contains(&r.id.as_str()));
        let more: Vec<MemoryRecord> = (300..330).map(memory).collect();
        all.extend(more.iter().cloned());
        // Rows of fragments the purge rewrites: one write or the other tries again.
        let updated: Vec<String> = ["m0", "m100", "m200"].map(String::from).to_vec();
        let (purged, ()) = tokio::join!(store.purge(), write_meanwhile(&store, &more, &updated));
        purged.unwrap();
        for id in forgotten {
            let token = format!("tok{}x", &id[1..]);
            assert_eq!(files_holding(dir.path(), &token), Vec::<String>::new());
        }
        assert_all_found(&store, &all, "after a purge").await;
        assert_eq!(store.count(&Pred::All).await.unwrap(), all.len());
        for id in updated {
            assert_eq!(store.get(&id).await.unwrap().unwrap().strength, 0.5, "{id}");
        }
    }
}
