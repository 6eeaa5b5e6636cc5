//! Index segments rewritten without the rows of fragments gone from their table. A forget
//! deletes rows; the purge then writes the fragments that held them again without them,
//! and a delete of every row of a fragment drops it. Either way the index segments that
//! covered those fragments still hold the rows (a full-text segment their words, a vector
//! segment their codes): Lance only stops answering with them. A scrub writes each such
//! segment again without them, beside the writer, and commits the new segments in the
//! writer's turn, in place of the old (`beside.rs`). Only the segments that covered a
//! fragment gone are rewritten: at 1M memories rebuilding the whole full-text index in the
//! writer's turn held every write for seconds and left one segment of 1M rows, whose
//! searches took 4× as long as those of bounded segments.

use lance::dataset::index::DatasetIndexRemapperOptions;
use lance::dataset::optimize::remapping::{IndexRemapperOptions, RemappedIndex};
use lance::index::optimize::{commit_optimize_indices, IndexSegmentResult};
use lance::index::DatasetIndexExt;
use lance::table::format::IndexMetadata;
use lance_core::utils::row_addr_remap::{GroupInputWithLayout, RowAddrRemap};
use lancedb::table::OptimizeOptions;
use lancedb::Table;
use roaring::{RoaringBitmap, RoaringTreemap};

use super::beside::{latest, show};
use super::error::{InTurn, StoreError};

/// The segments of `table`'s indexes that still cover a fragment gone from it, written
/// again without that fragment's rows, and their commit (to run in the writer's turn); None
/// when no segment covers a fragment gone. The commit replaces each old segment with its
/// new one; appends meanwhile keep their rows (unindexed until the next fold).
pub(super) async fn build(table: &Table) -> Result<Option<InTurn>, StoreError> {
    let dataset = latest(table).await?;
    let live: &RoaringBitmap = dataset.fragment_bitmap();
    let indices = dataset.load_indices().await?;
    let stale: Vec<(&IndexMetadata, RoaringBitmap)> = indices
        .iter()
        .filter(|index| !lance_index::is_system_index(index))
        .filter_map(|index| Some((index, gone(index, live)?)))
        .filter(|(_, gone)| !gone.is_empty())
        .collect();
    if stale.is_empty() {
        return Ok(None);
    }
    let gone_fragments = stale
        .iter()
        .fold(RoaringBitmap::new(), |all, (_, gone)| all | gone);
    let Some(remapper) = DatasetIndexRemapperOptions::default()
        .create_remapper(&dataset)
        .await?
    else {
        return Ok(None);
    };
    let affected: Vec<u64> = gone_fragments.iter().map(u64::from).collect();
    let remapped = remapper
        .remap_indices(every_row_deleted(&gone_fragments)?, &affected)
        .await?;
    let read_version = dataset.manifest.version;
    let mut results = Vec::with_capacity(stale.len());
    for (old, _) in stale {
        let Some(new) = remapped.iter().find(|r| r.old_id == old.uuid) else {
            // Lance could not open it (an index of a newer format): it would drop it at a
            // compaction too; left as it is, no search answers from the rows gone.
            tracing::warn!(
                "index segment {} of {} could not be scrubbed",
                old.uuid,
                old.name
            );
            continue;
        };
        results.push(IndexSegmentResult {
            plan_id: uuid::Uuid::new_v4(),
            read_version,
            group: 0,
            segment: scrubbed(old, new, live),
            replaces: vec![old.uuid],
        });
    }
    if results.is_empty() {
        return Ok(None);
    }
    let table = table.clone();
    Ok(Some(Box::pin(async move {
        let mut dataset = dataset;
        let segments = results.len() as u64;
        commit_optimize_indices(&mut dataset, results, &OptimizeOptions::default()).await?;
        show(&table, dataset)?;
        Ok(segments)
    })))
}

/// The fragments `index` covers that `live` no longer holds; None when it does not say
/// which it covers.
fn gone(index: &IndexMetadata, live: &RoaringBitmap) -> Option<RoaringBitmap> {
    Some(index.fragment_bitmap.as_ref()? - live)
}

/// A remap that deletes every row of `fragments`. Their row counts are no longer known
/// (the fragments are gone): each is taken as the largest a fragment can hold, every
/// offset in it deleted.
fn every_row_deleted(fragments: &RoaringBitmap) -> Result<RowAddrRemap, StoreError> {
    let group = GroupInputWithLayout {
        rewritten_old_row_addrs: RoaringTreemap::new(),
        old_frags: fragments.iter().map(|id| (id, u32::MAX)).collect(),
        new_frags: Vec::new(),
    };
    Ok(RowAddrRemap::compact_with_layout([group])?)
}

/// `old`'s metadata for its segment written again as `new`: the same index, covering the
/// fragments of `old` still in the table.
fn scrubbed(old: &IndexMetadata, new: &RemappedIndex, live: &RoaringBitmap) -> IndexMetadata {
    let mut segment = old.clone();
    segment.uuid = new.new_id;
    segment.fragment_bitmap = old.fragment_bitmap.as_ref().map(|covered| covered & live);
    segment.index_details = Some(std::sync::Arc::new(new.index_details.clone()));
    segment.index_version = new.index_version as i32;
    segment.files = new.files.clone();
    segment
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::time::Duration;

    use super::super::rewrite::tests::{assert_all_found, files_holding, segmented_store};
    use super::super::{beside, col, Store, WriteOp};

    /// The full-text segments of `store`'s memories, by id.
    async fn text_segments(store: &Store) -> BTreeSet<uuid::Uuid> {
        let dataset = beside::snapshot(&store.memories).await.unwrap();
        let indices = lance::index::DatasetIndexExt::load_indices(dataset.as_ref())
            .await
            .unwrap();
        let text = indices.iter().filter(|i| i.name == "content_idx");
        text.map(|i| i.uuid).collect()
    }

    /// A delete of every row of a fragment drops the fragment, and the full-text segment
    /// that covered it still holds the rows' words (no fold writes a full segment again):
    /// the scrub writes that segment again without them, and only that one.
    #[tokio::test]
    async fn a_scrub_writes_again_only_the_segments_that_covered_a_fragment_gone() {
        let dir = tempfile::tempdir().unwrap();
        let (mut all, store) = segmented_store(dir.path()).await;
        let before = text_segments(&store).await;
        assert!(before.len() >= 3, "{before:?}");
        // The first batch, one fragment.
        let gone: Vec<String> = all.drain(..30).map(|r| r.id).collect();
        let deleted = store
            .writer()
            .submit(WriteOp::Delete(col("id").one_of(&gone)))
            .await
            .unwrap();
        assert_eq!(deleted, 30);
        let commit = super::build(&store.memories).await.unwrap().unwrap();
        let scrubbed = store
            .writer()
            .in_turn("committing a scrub", "memories", commit)
            .await
            .unwrap();
        // One full-text segment and each scalar index's one.
        assert_eq!(
            scrubbed,
            1 + super::super::writer::SCALAR_INDEXES.len() as u64
        );
        store.prune(&store.memories, Duration::ZERO).await.unwrap();
        assert_eq!(files_holding(dir.path(), "tok5x"), Vec::<String>::new());
        let after = text_segments(&store).await;
        assert_eq!(
            before.difference(&after).count(),
            1,
            "{before:?} → {after:?}"
        );
        assert_eq!(after.len(), before.len());
        assert!(super::build(&store.memories).await.unwrap().is_none());
        assert_all_found(&store, &all, "after a scrub").await;
    }
}
