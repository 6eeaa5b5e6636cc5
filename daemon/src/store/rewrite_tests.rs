//! Tests of the rewrites and index passes, and the helpers other store tests share.
use super::super::filter::current;
use super::super::memories::TextColumns;

/// The messages Lance 14 gave: a compaction preempted once, and a fold beside a load of
/// single adds at 1M memories.
#[test]
fn a_commit_voided_by_writes_is_told_from_other_errors() {
    use super::voided_by_a_write;
    use crate::store::StoreError;
    let lance = |m: &str| StoreError::Lance(m.to_string());
    assert!(voided_by_a_write(&lance(
        "Commit conflict for version 7: This UpdateConfig transaction was preempted by \
         concurrent transaction Rewrite at version 7. Please retry."
    )));
    assert!(voided_by_a_write(&lance(
        "lance error: Too many concurrent writers. Attempted 16 times, but failed on \
         retry_timeout of 30.000 seconds., lance-14.0.2/src/io/commit.rs:130:5"
    )));
    assert!(!voided_by_a_write(&lance("Not found: data/x.lance")));
}
use super::super::schema::tests::record;
use super::super::{col, Expr, Fold, KeySettings, MemoryRecord, Pred, Store, WriteOp};
use lancedb::index::{Index, IndexType};

pub fn memory(n: usize) -> MemoryRecord {
    let id = format!("m{n}");
    record(&id, &format!("note {n} about the garden, token tok{n}x"), 4)
}

/// Inserts each row in a commit of its own: one small fragment each.
pub async fn insert_each(store: &Store, rows: &[MemoryRecord]) {
    for row in rows {
        store
            .writer()
            .submit(WriteOp::Insert(vec![row.clone()]))
            .await
            .unwrap();
    }
}

/// The current version of every memory by its token, all found by text search alone,
/// and by its id.
pub async fn assert_all_found(store: &Store, versions: &[MemoryRecord], stage: &str) {
    for r in versions {
        let token = r.content.split(' ').next_back().unwrap().to_string();
        let hits = store
            .full_text(&token, &current(), 10, TextColumns::Ranking)
            .await
            .unwrap();
        let ids: Vec<&str> = hits.iter().map(|h| h.record.id.as_str()).collect();
        assert_eq!(ids, vec![r.id.as_str()], "{stage}: {token}");
        let got = store.get(&r.id).await.unwrap().map(|g| g.content);
        assert_eq!(
            got.as_deref(),
            Some(r.content.as_str()),
            "{stage}: {}",
            r.id
        );
    }
}

async fn supersede(store: &Store, current: &mut [MemoryRecord], at: usize, version: usize) {
    let mut old = current[at].clone();
    let mut new = old.clone();
    new.id = format!("{}v{version}", old.lineage);
    new.content = format!("updated {}", old.content);
    new.valid_from = old.valid_from + 1;
    old.valid_to = Some(new.valid_from);
    old.superseded_by = Some(new.id.clone());
    let op = WriteOp::Supersede {
        old: Box::new(old),
        new: Box::new(new.clone()),
    };
    store.writer().submit(op).await.unwrap();
    current[at] = new;
}

/// A patch of a few columns applies only where the stored row meets its condition; a
/// condition on a column the patch does not carry is refused with a clear error (Lance's
/// was "Field valid_to not found in struct", and dedup's lift of the memories it kept
/// failed so at every run that merged anything).
#[tokio::test]
async fn a_conditional_patch_reads_its_condition_from_the_stored_row() {
    use lancedb::arrow::arrow_array::{ArrayRef, Float32Array, Int64Array, StringArray};
    let dir = tempfile::tempdir().unwrap();
    let store = super::super::test_store(dir.path()).await;
    let rows: Vec<MemoryRecord> = (0..40).map(memory).collect();
    store
        .writer()
        .submit(WriteOp::Insert(rows.clone()))
        .await
        .unwrap();
    store.maintain_indexes(1).await.unwrap();
    store.fold_beside(Fold::Segment).await.unwrap();
    // Row 1 is closed: the patch must leave it alone.
    store
        .writer()
        .submit(WriteOp::Update {
            predicate: col("id").eq(&rows[1].id),
            columns: vec![("valid_to", Expr::Int(5))],
        })
        .await
        .unwrap();
    let ids: ArrayRef = std::sync::Arc::new(StringArray::from(vec![
        rows[0].id.as_str(),
        rows[1].id.as_str(),
    ]));
    let salience: ArrayRef = std::sync::Arc::new(Float32Array::from(vec![9.0f32, 9.0]));
    let without = store
        .patch(vec![("id", ids.clone()), ("salience", salience.clone())])
        .unwrap();
    let err = store
        .writer()
        .submit(WriteOp::Patch {
            batch: without,
            only_if: Some(current().on_target()),
        })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("reads valid_to"), "{err}");
    let open: ArrayRef = std::sync::Arc::new(Int64Array::from(vec![None::<i64>, None]));
    let batch = store
        .patch(vec![
            ("id", ids),
            ("salience", salience),
            ("valid_to", open),
        ])
        .unwrap();
    let updated = store
        .writer()
        .submit(WriteOp::Patch {
            batch,
            only_if: Some(current().on_target()),
        })
        .await
        .unwrap();
    assert_eq!(updated, 1);
    assert_eq!(store.get(&rows[0].id).await.unwrap().unwrap().salience, 9.0);
    assert_ne!(store.get(&rows[1].id).await.unwrap().unwrap().salience, 9.0);
}

/// Each fold leaves the fragment of the rows it indexed; a pass that finds writes
/// paused merges them once they are many (moving the indexes' rows), a pass after a
/// write leaves them, and until they are merged the indexes are not settled.
#[tokio::test]
async fn a_pass_after_writes_pause_merges_the_small_fragments_folds_left() {
    let dir = tempfile::tempdir().unwrap();
    let store = super::super::test_store(dir.path()).await;
    let rows: Vec<MemoryRecord> = (0..super::super::indexes::SMALL_INDEXED_FRAGMENTS_WHEN_QUIET
        + 2)
        .map(memory)
        .collect();
    for row in &rows {
        insert_each(&store, std::slice::from_ref(row)).await;
        store.maintain_indexes(1).await.unwrap();
    }
    let small_indexed = || async {
        super::beside::small_fragments(&store.memories)
            .await
            .unwrap()
    };
    assert_eq!(small_indexed().await, (0, rows.len()), "one a fold");
    let settled = || async { store.index_state().await.unwrap().settled };
    assert!(!settled().await, "a merge is still due");

    let merged = "compacted small fragments";
    // The last fold's pass saw its row unindexed: this one sees a change.
    let done = store.maintain_indexes(1).await.unwrap();
    assert!(!done.contains(&merged), "a row came since: {done:?}");
    assert_eq!(small_indexed().await, (0, rows.len()));

    let done = store.maintain_indexes(1).await.unwrap();
    assert!(done.contains(&merged), "{done:?}");
    assert_eq!(small_indexed().await, (0, 1), "merged into one");
    assert!(settled().await);
    assert_all_found(&store, &rows, "after the merge").await;
    let done = store.maintain_indexes(1).await.unwrap();
    assert!(!done.contains(&merged), "nothing left to merge: {done:?}");
}

/// A store of `n` memories, one commit, indexed.
async fn indexed_store(
    dir: &std::path::Path,
    n: usize,
) -> (std::sync::Arc<Store>, Vec<MemoryRecord>) {
    let store = super::super::test_store(dir).await;
    let rows: Vec<MemoryRecord> = (0..n).map(memory).collect();
    store
        .writer()
        .submit(WriteOp::Insert(rows.clone()))
        .await
        .unwrap();
    store.maintain_indexes(usize::MAX).await.unwrap();
    (store, rows)
}

/// Writes made while a rewrite runs beside the writer: `rows` in commits of 10, each
/// followed by an update (strength 0.5) of the next of `updated`.
pub async fn write_meanwhile(store: &Store, rows: &[MemoryRecord], updated: &[String]) {
    for (chunk, id) in rows.chunks(10).zip(updated) {
        store
            .writer()
            .submit(WriteOp::Insert(chunk.to_vec()))
            .await
            .unwrap();
        store
            .writer()
            .submit(WriteOp::Update {
                predicate: col("id").eq(id),
                columns: vec![("strength", Expr::Float(0.5))],
            })
            .await
            .unwrap();
    }
}

/// A fold runs beside the writer: appends and updates committed while it runs land, the
/// fold's commit lands too (retried if a write beat it), and every memory is found.
#[tokio::test]
async fn a_fold_beside_the_writer_lets_writes_go_on_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (store, mut all) = indexed_store(dir.path(), 300).await;
    let more: Vec<MemoryRecord> = (300..400).map(memory).collect();
    all.extend(more.iter().cloned());
    let updated: Vec<String> = more.chunks(10).map(|c| c[0].id.clone()).collect();
    let writes = write_meanwhile(&store, &more, &updated);
    let (folded, ()) = tokio::join!(store.fold_beside(Fold::Segment), writes);
    folded.unwrap();
    store.fold_beside(Fold::Segment).await.unwrap();
    assert_eq!(store.index_state().await.unwrap().unindexed_rows, 0);
    assert_all_found(&store, &all, "after folds beside the writer").await;
}

/// Searches fill LanceDB's caches; a fold that replaced index files empties them (what
/// they held of replaced files is never read again), one with nothing to fold keeps
/// them, and searches after the fold find every memory through the new files.
#[tokio::test]
async fn a_fold_empties_the_caches_of_what_it_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let (store, mut all) = indexed_store(dir.path(), 100).await;
    let cached = || async {
        let session = &store.session;
        let index = session.index_cache_stats().await.size_bytes;
        (index, session.metadata_cache_stats().await.size_bytes)
    };
    assert_all_found(&store, &all, "before the fold").await;
    let warm = cached().await;
    assert!(
        warm.0 > 0 && warm.1 > 0,
        "searches cached nothing: {warm:?}"
    );
    let more: Vec<MemoryRecord> = (100..110).map(memory).collect();
    insert_each(&store, &more).await;
    all.extend(more);
    store.fold_beside(Fold::Whole).await.unwrap();
    assert_eq!(cached().await, (0, 0));
    assert_all_found(&store, &all, "after the fold").await;
    let warm = cached().await;
    assert!(warm.0 > 0, "searches after the fold cached nothing");
    store.fold_beside(Fold::Whole).await.unwrap();
    assert_eq!(
        cached().await,
        warm,
        "a fold with nothing to fold emptied the caches"
    );
    for n in 0..4 {
        store.meta_set("test.note", &n.to_string()).await.unwrap();
    }
    assert!(store.compact(&store.meta).await.unwrap() > 0);
    let after = cached().await;
    assert!(
        after.0 >= warm.0 && after.1 >= warm.1,
        "a bookkeeping compaction emptied the caches: {after:?} after {warm:?}"
    );
}

/// A whole fold in a store too small for an ANN index still folds new rows into the
/// full-text and scalar indexes.
#[tokio::test]
async fn a_whole_fold_without_an_ann_index_folds_new_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (store, mut all) = indexed_store(dir.path(), 100).await;
    let more: Vec<MemoryRecord> = (100..110).map(memory).collect();
    insert_each(&store, &more).await;
    all.extend(more);
    assert_eq!(store.index_state().await.unwrap().unindexed_rows, 10);
    store.fold_beside(Fold::Whole).await.unwrap();
    assert_eq!(store.index_state().await.unwrap().unindexed_rows, 0);
    assert_all_found(&store, &all, "after a whole fold").await;
}

/// A store of 300 memories whose full-text index holds segments of at most 100 rows,
/// folded after each of 10 commits of 30 (one fragment each).
pub async fn segmented_store(dir: &std::path::Path) -> (Vec<MemoryRecord>, std::sync::Arc<Store>) {
    let config = crate::config::StoreConfig {
        advanced: crate::config::StoreTuning {
            text_index_segment_rows: 100,
            ..Default::default()
        },
        ..Default::default()
    };
    let store = Store::open(dir, 4, "test", &config, &Default::default())
        .await
        .unwrap();
    let rows: Vec<MemoryRecord> = (0..300).map(memory).collect();
    for batch in rows.chunks(30) {
        store
            .writer()
            .submit(WriteOp::Insert(batch.to_vec()))
            .await
            .unwrap();
        store.maintain_indexes(1).await.unwrap();
    }
    (rows, store)
}

/// The full-text index grows in segments of at most `store.advanced.text_index_segment_rows`
/// rows: a fold merges new rows into the last segment while it has room and starts
/// another after, a whole fold leaves the full ones alone, and a search through Lance's
/// index finds rows of every segment.
#[tokio::test]
async fn the_full_text_index_grows_in_segments_of_bounded_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (_, store) = segmented_store(dir.path()).await;
    let segments = || async {
        let dataset = super::beside::snapshot(&store.memories).await.unwrap();
        let indices = lance::index::DatasetIndexExt::load_indices(dataset.as_ref())
            .await
            .unwrap();
        let text = indices.iter().filter(|i| i.name == "content_idx");
        let rows_of = |covered: &roaring::RoaringBitmap| -> usize {
            let fragments = dataset.manifest.fragments.iter();
            let fragments = fragments.filter(|f| covered.contains(f.id as u32));
            fragments.map(|f| f.physical_rows.unwrap()).sum()
        };
        let mut rows: Vec<(uuid::Uuid, usize)> = text
            .map(|i| (i.uuid, rows_of(i.fragment_bitmap.as_ref().unwrap())))
            .collect();
        rows.sort();
        rows
    };
    let folded = segments().await;
    let counts: Vec<usize> = folded.iter().map(|s| s.1).collect();
    assert!(
        folded.len() >= 3 && counts.iter().all(|&n| n <= 100),
        "segments of {counts:?} rows"
    );
    assert_eq!(counts.iter().sum::<usize>(), 300);
    store.fold_beside(Fold::Whole).await.unwrap();
    assert_eq!(
        segments().await,
        folded,
        "a whole fold rewrote full segments"
    );
    for n in (0..300).step_by(29) {
        let hits = store
            .full_text(&format!("tok{n}x"), &current(), 10, TextColumns::Ranking)
            .await
            .unwrap();
        let ids: Vec<&str> = hits.iter().map(|h| h.record.id.as_str()).collect();
        assert_eq!(ids, [format!("m{n}")], "tok{n}x");
    }
}

/// A segment fold keeps the ANN index in at most two segments (every search reads them
/// all): new rows join the newest while it stays under a quarter of the older one's rows;
/// a whole fold (idle time's) merges them and any new rows into one, and misses nothing.
#[tokio::test]
async fn a_whole_fold_merges_the_ann_segments_into_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = ann_store(dir.path(), 0).await;
    store.writer().submit(insert(0..700)).await.unwrap();
    store.maintain_vector_index().await.unwrap();
    store
        .writer()
        .submit(WriteOp::BuildScalarIndexes)
        .await
        .unwrap();
    let segments = || async {
        let stats = store
            .memories
            .index_stats("vector_idx")
            .await
            .unwrap()
            .unwrap();
        (stats.num_indices, stats.num_unindexed_rows)
    };
    // A segment fold adds a segment of the new rows, however k-means left the
    // partitions (Lance, left to choose, joined one under a quarter of the target size
    // now and then with 700 rows, and merged every segment with it); the other indexes
    // take the new rows into their one segment.
    store.writer().submit(insert(700..720)).await.unwrap();
    store.fold_beside(Fold::Segment).await.unwrap();
    assert_eq!(segments().await, (Some(2), 0));
    let id_stats = store.memories.index_stats("id_idx").await.unwrap().unwrap();
    assert_eq!(
        (id_stats.num_indices, id_stats.num_unindexed_rows),
        (Some(1), 0)
    );
    // The next fold's rows join the newest segment rather than making a third…
    store.writer().submit(insert(720..760)).await.unwrap();
    store.fold_beside(Fold::Segment).await.unwrap();
    assert_eq!(segments().await, (Some(2), 0));
    let names = ["vector_idx".to_string()];
    let dataset = super::beside::snapshot(&store.memories).await.unwrap();
    let rows = super::beside::segment_rows(&dataset, &names).await.unwrap();
    assert_eq!(rows, (700, 60));
    // …until it would pass a quarter of the older one's rows: then all are merged.
    store.writer().submit(insert(760..880)).await.unwrap();
    store.fold_beside(Fold::Segment).await.unwrap();
    assert_eq!(segments().await, (Some(1), 0));
    let next = 880;
    store
        .writer()
        .submit(insert(next..next + 10))
        .await
        .unwrap();
    store.fold_beside(Fold::Whole).await.unwrap();
    assert_eq!(segments().await, (Some(1), 0));
    assert_found_by_ann(&store, [5, 710, next - 5, next + 5]).await;
}

/// A maintenance pass that finds no row written since the last merges the ANN index's
/// segments into one, with the rows added meanwhile; while rows keep coming it leaves
/// them, and once there is one segment it has nothing to do.
#[tokio::test]
async fn a_pass_after_writes_pause_merges_the_ann_segments() {
    let dir = tempfile::tempdir().unwrap();
    let store = ann_store(dir.path(), 0).await;
    store.writer().submit(insert(0..700)).await.unwrap();
    store.maintain_vector_index().await.unwrap();
    // The full-text and scalar indexes, built by this first pass.
    store.maintain_indexes(usize::MAX).await.unwrap();
    store.writer().submit(insert(700..720)).await.unwrap();
    store.fold_beside(Fold::Segment).await.unwrap();
    assert_eq!(store.ann_segments().await.unwrap(), 2);
    let status_settled = || async { store.index_state().await.unwrap().settled };
    assert!(!status_settled().await, "a merge is still due");

    let settled = "merged the ANN index's segments into one";
    store.maintain_indexes(usize::MAX).await.unwrap();
    store.writer().submit(insert(720..725)).await.unwrap();
    let done = store.maintain_indexes(usize::MAX).await.unwrap();
    assert!(
        !done.contains(&settled),
        "rows came between the passes: {done:?}"
    );
    assert_eq!(store.ann_segments().await.unwrap(), 2);

    let done = store.maintain_indexes(usize::MAX).await.unwrap();
    assert!(done.contains(&settled), "{done:?}");
    assert_eq!(store.ann_segments().await.unwrap(), 1);
    let stats = store.memories.index_stats("vector_idx").await.unwrap();
    assert_eq!(stats.unwrap().num_unindexed_rows, 0);
    assert_found_by_ann(&store, [5, 710, 722]).await;
    let done = store.maintain_indexes(usize::MAX).await.unwrap();
    assert!(!done.contains(&settled), "one segment already: {done:?}");
    assert!(status_settled().await);
}

/// A compaction runs beside the writer: appends made meanwhile land, updates of the rows
/// it moves land (one of the two commits tries again), the small fragments it was for
/// are merged, and every memory is found with its update.
#[tokio::test]
async fn a_compaction_beside_the_writer_lets_writes_go_on_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (store, mut all) = indexed_store(dir.path(), 100).await;
    let small: Vec<MemoryRecord> = (100..100 + 2 * super::super::indexes::SMALL_MEMORY_FRAGMENTS)
        .map(memory)
        .collect();
    insert_each(&store, &small).await;
    store.fold_beside(Fold::Segment).await.unwrap();
    all.extend(small.iter().cloned());
    let more: Vec<MemoryRecord> = (500..560).map(memory).collect();
    all.extend(more.iter().cloned());
    let moved: Vec<String> = small.iter().map(|r| r.id.clone()).collect();
    let writes = write_meanwhile(&store, &more, &moved);
    let (merged, ()) = tokio::join!(store.compact(&store.memories), writes);
    assert!(merged.unwrap() > 0, "the small fragments were not merged");
    assert_all_found(&store, &all, "after a compaction beside the writer").await;
    for id in moved.iter().take(more.len() / 10) {
        let got = store.get(id).await.unwrap().unwrap();
        assert_eq!(got.strength, 0.5, "{id}");
    }
}

/// A committed memory is found by its words at once, through every kind of write the
/// store makes: small appends, updates, folds, bookkeeping rewrites and compaction.
#[tokio::test]
async fn every_current_memory_is_found_by_its_words_through_every_kind_of_write() {
    let dir = tempfile::tempdir().unwrap();
    found_through_every_kind_of_write(dir.path(), &KeySettings::default()).await;
}

/// The same in an encrypted store, where the index holds hashed terms; and no file of it
/// holds a word of any memory.
#[tokio::test]
async fn an_encrypted_store_finds_every_memory_by_its_words_and_holds_none() {
    let dir = tempfile::tempdir().unwrap();
    let key = crate::store::test_encrypting(dir.path());
    let db = dir.path().join("db");
    found_through_every_kind_of_write(&db, &key).await;
    for word in ["garden", "tok33x", "note 2"] {
        assert_eq!(files_holding(&db, word), Vec::<String>::new(), "{word}");
    }
}

/// Every file under `dir`.
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

/// Files under `dir` whose bytes contain `needle`.
pub fn files_holding(dir: &std::path::Path, needle: &str) -> Vec<String> {
    files_under(dir)
        .into_iter()
        .filter(|p| {
            std::fs::read(p)
                .unwrap()
                .windows(needle.len())
                .any(|w| w == needle.as_bytes())
        })
        .map(|p| p.display().to_string())
        .collect()
}

async fn found_through_every_kind_of_write(dir: &std::path::Path, key: &KeySettings) {
    let store = Store::open(dir, 4, "test", &Default::default(), key)
        .await
        .unwrap();
    let mut current: Vec<MemoryRecord> = Vec::new();
    for chunk in 0..8 {
        let rows: Vec<_> = (chunk * 5..chunk * 5 + 5).map(memory).collect();
        store
            .writer()
            .submit(WriteOp::Insert(rows.clone()))
            .await
            .unwrap();
        current.extend(rows);
        if chunk == 1 {
            // Every stage below filters through the scalar indexes and their unindexed tails.
            store
                .writer()
                .submit(WriteOp::BuildScalarIndexes)
                .await
                .unwrap();
        }
    }
    assert_all_found(&store, &current, "small appends").await;
    for at in (0..40).step_by(4) {
        supersede(&store, &mut current, at, 1).await;
    }
    assert_all_found(&store, &current, "updates").await;
    store.writer().submit(WriteOp::FoldIndexes).await.unwrap();
    assert_all_found(&store, &current, "fold").await;
    let more: Vec<_> = (40..50).map(memory).collect();
    store
        .writer()
        .submit(WriteOp::Insert(more.clone()))
        .await
        .unwrap();
    current.extend(more);
    for at in (1..50).step_by(5) {
        supersede(&store, &mut current, at, 2).await;
    }
    assert_all_found(&store, &current, "appends and updates after a fold").await;
    let bookkeeping = WriteOp::Update {
        predicate: col("id").one_of(&["m3", "m7", "m9"]),
        columns: vec![("strength", Expr::Float(0.5))],
    };
    store.writer().submit(bookkeeping).await.unwrap();
    assert_all_found(&store, &current, "bookkeeping").await;
    store.compact(&store.memories).await.unwrap();
    assert_all_found(&store, &current, "compaction").await;
    store.writer().submit(WriteOp::FoldIndexes).await.unwrap();
    assert_all_found(&store, &current, "fold after compaction").await;
    store.purge().await.unwrap();
    assert_all_found(&store, &current, "purge").await;
    assert_eq!(store.count(&Pred::All).await.unwrap(), 70);
}

/// −1–1, the same for the same `seed` (splitmix64).
fn noise(seed: u64) -> f32 {
    let mut x = seed ^ 0x9E37_79B9_7F4A_7C15;
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x % 2000) as f32 / 1000.0 - 1.0
}

/// A memory whose vector lies near one of 20 topics, as embeddings of text do (the same
/// `n` gives the same vector, no two alike).
fn scattered(n: usize, dim: usize) -> MemoryRecord {
    let mut m = memory(n);
    let topic = (n % 20) as u64;
    m.vector = (0..dim as u64)
        .map(|d| noise(topic * 1000 + d) + 0.3 * noise((n as u64 + 1) * 1_000_003 + d))
        .collect();
    m
}

/// Dimensions of the ANN tests' vectors.
const ANN_DIM: usize = 32;

/// A store that builds its ANN index at 600 rows.
/// A store whose ANN index is built past 600 rows and leaves up to `flat_tail` new rows
/// unindexed.
async fn ann_store(dir: &std::path::Path, flat_tail: usize) -> std::sync::Arc<Store> {
    let config = crate::config::StoreConfig {
        advanced: crate::config::StoreTuning {
            ann_index_min_rows: 600,
            ann_flat_tail_rows: flat_tail,
            ..Default::default()
        },
        ..Default::default()
    };
    Store::open(dir, ANN_DIM, "test", &config, &Default::default())
        .await
        .unwrap()
}

/// The [`scattered`] memories numbered `range`, in one commit.
fn insert(range: std::ops::Range<usize>) -> WriteOp {
    WriteOp::Insert(range.map(|n| scattered(n, ANN_DIM)).collect())
}

/// Each of the [`scattered`] memories numbered `rows` is its own nearest neighbour
/// through the ANN index.
async fn assert_found_by_ann(store: &Store, rows: impl IntoIterator<Item = usize>) {
    for n in rows {
        let probe = scattered(n, ANN_DIM);
        let hits = store
            .vector_search(&probe.vector, &Pred::All, 1, false)
            .await
            .unwrap();
        assert_eq!(hits[0].record.id, probe.id, "row {n}");
    }
}

/// An ANN training's sample stays within its memory budget as partitions grow (384
/// dimensions: 65,536 vectors), keeping Lance's 256 a partition while that fits and a
/// few dozen a partition at the least.
#[test]
fn an_ann_trainings_sample_is_bounded_in_bytes() {
    use super::super::indexes::training_sample_rate;
    assert_eq!(training_sample_rate(16, 384), 256);
    assert_eq!(training_sample_rate(316, 384), 207);
    assert_eq!(training_sample_rate(1000, 384), 65);
    assert_eq!(training_sample_rate(4096, 384), 64);
    assert_eq!(training_sample_rate(1000, 768), 64);
}

/// Past `ann_index_min_rows` maintenance builds the ANN index beside the writer: a write
/// sent during the build is committed, the index's top 10 match exact search's, rows
/// added after it are found, and it is trained again only once the table has doubled.
#[tokio::test]
async fn the_ann_index_is_built_beside_the_writer_and_misses_nothing_new() {
    let dir = tempfile::tempdir().unwrap();
    let store = ann_store(dir.path(), 8_192).await;
    store.writer().submit(insert(0..500)).await.unwrap();
    assert_eq!(
        store.maintain_vector_index().await.unwrap(),
        None,
        "too few rows"
    );
    store.writer().submit(insert(500..700)).await.unwrap();
    let (built, written) = tokio::join!(
        store.maintain_vector_index(),
        store.writer().submit(insert(700..720))
    );
    assert_eq!(built.unwrap(), Some("built ANN vector index"));
    written.unwrap();
    assert!(store.index_state().await.unwrap().has_vector_index);
    assert_eq!(store.count(&Pred::All).await.unwrap(), 720);

    let mut same = 0;
    for q in 0..20 {
        let probe = scattered(10_000 + q, ANN_DIM).vector;
        let ids = |hits: Vec<super::super::memories::Scored>| {
            hits.into_iter().map(|h| h.record.id).collect::<Vec<_>>()
        };
        let ann = ids(store
            .vector_search(&probe, &Pred::All, 10, false)
            .await
            .unwrap());
        let exact = ids(store
            .vector_search(&probe, &Pred::All, 10, true)
            .await
            .unwrap());
        assert_eq!(exact.len(), 10);
        same += exact.iter().filter(|id| ann.contains(id)).count();
    }
    assert!(same >= 180, "the index's top 10 held {same} of exact's 200");

    // A row added after the build (and a fold of those written during it) is searched
    // one by one until folded in.
    store.fold_beside(Fold::Segment).await.unwrap();
    let late = scattered(5_000, ANN_DIM);
    store
        .writer()
        .submit(WriteOp::Insert(vec![late.clone()]))
        .await
        .unwrap();
    let hits = store
        .vector_search(&late.vector, &Pred::All, 1, false)
        .await
        .unwrap();
    assert_eq!(hits[0].record.id, late.id);
    // A fold leaves so small a tail to be searched so (1/128 of the index's rows at most),
    // rather than adding a segment every search would read.
    let ann = || async {
        let stats = store.memories.index_stats("vector_idx").await.unwrap();
        stats
            .map(|s| (s.num_indices, s.num_unindexed_rows))
            .unwrap()
    };
    let (segments, tail) = ann().await;
    assert!(tail >= 1);
    store.fold_beside(Fold::Segment).await.unwrap();
    assert_eq!(ann().await, (segments, tail));
    let hits = store
        .vector_search(&late.vector, &Pred::All, 1, false)
        .await
        .unwrap();
    assert_eq!(hits[0].record.id, late.id);
    assert_eq!(
        store.maintain_vector_index().await.unwrap(),
        None,
        "not doubled"
    );
}

/// Indexes the memories' vectors by `index`, as a store built by an older mnemod has them.
async fn index_vectors_by(store: &Store, index: Index) {
    store
        .memories
        .create_index(&["vector"], index)
        .execute()
        .await
        .unwrap();
}

/// An IVF-SQ index built without a partition size of ours (whose partitions Lance's
/// folds join to its own size) is trained again once, with one.
#[tokio::test]
async fn an_ann_index_without_a_partition_size_is_trained_again_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = ann_store(dir.path(), 8_192).await;
    store.writer().submit(insert(0..700)).await.unwrap();
    let unsized_index = lancedb::index::vector::IvfSqIndexBuilder::default()
        .distance_type(lancedb::DistanceType::Cosine)
        .num_partitions(4);
    index_vectors_by(&store, Index::IvfSq(unsized_index)).await;
    // The first look records the rows an index it did not build was trained at.
    assert_eq!(store.maintain_vector_index().await.unwrap(), None);
    assert!(!store.index_state().await.unwrap().ann_sized);
    assert_eq!(
        store.maintain_vector_index().await.unwrap(),
        Some("trained ANN vector index again, its partitions kept at their size")
    );
    assert!(store.index_state().await.unwrap().ann_sized);
    assert_eq!(store.maintain_vector_index().await.unwrap(), None);
    assert_eq!(store.count(&Pred::All).await.unwrap(), 700);
}

/// A store whose ANN index is IVF-PQ (built before IVF-SQ was chosen) gets an IVF-SQ
/// index at the next pass, and loses no row on the way.
#[tokio::test]
async fn an_ivf_pq_index_is_rebuilt_as_ivf_sq() {
    const DIM: usize = 32;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(
        dir.path(),
        DIM,
        "test",
        &Default::default(),
        &Default::default(),
    )
    .await
    .unwrap();
    let rows: Vec<_> = (0..700).map(|n| scattered(n, DIM)).collect();
    store
        .writer()
        .submit(WriteOp::Insert(rows.clone()))
        .await
        .unwrap();
    let pq = lancedb::index::vector::IvfPqIndexBuilder::default()
        .distance_type(lancedb::DistanceType::Cosine)
        .num_partitions(4);
    index_vectors_by(&store, Index::IvfPq(pq)).await;
    let kind = || async {
        let indices = store.memories.list_indices().await.unwrap();
        indices
            .into_iter()
            .find(|i| i.columns == ["vector"])
            .map(|i| i.index_type)
    };
    assert_eq!(kind().await, Some(IndexType::IvfPq));
    // The first look records the rows an index it did not build was trained at.
    assert_eq!(store.maintain_vector_index().await.unwrap(), None);
    assert_eq!(
        store.maintain_vector_index().await.unwrap(),
        Some("built ANN vector index again as IVF-SQ")
    );
    assert_eq!(kind().await, Some(IndexType::IvfSq));
    assert_eq!(store.maintain_vector_index().await.unwrap(), None);
    let hits = store
        .vector_search(&rows[7].vector, &Pred::All, 1, false)
        .await
        .unwrap();
    assert_eq!(hits[0].record.id, rows[7].id);
}

#[tokio::test]
async fn a_busy_access_log_is_compacted_and_its_old_versions_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let store = super::super::test_store(dir.path()).await;
    let log = store.runs().access_log.clone();
    for i in 0..70 {
        let batch = super::super::runs::access_batch(&[(format!("m{i}"), i)]).unwrap();
        let table = log.clone();
        store
            .writer()
            .submit(WriteOp::Append { table, batch })
            .await
            .unwrap();
    }
    let fragments =
        |t: lancedb::Table| async move { t.stats().await.unwrap().fragment_stats.num_fragments };
    assert_eq!(fragments(log.clone()).await, 70);
    let done = store.tidy_bookkeeping(None).await.unwrap();
    assert_eq!(done, vec!["compacted bookkeeping tables"]);
    assert_eq!(fragments(log.clone()).await, 1);
    assert!(log.list_versions().await.unwrap().len() > 70);
    let done = store
        .tidy_bookkeeping(Some(std::time::Duration::ZERO))
        .await
        .unwrap();
    assert_eq!(done, vec!["pruned old bookkeeping versions"]);
    assert_eq!(log.list_versions().await.unwrap().len(), 1);
    // Nothing was lost on the way.
    let tallies = store.runs().access_tallies(i64::MAX).await.unwrap();
    assert_eq!(tallies.len(), 70);
}

/// Maintenance merges the memories' small fragments once a few have gathered, so a
/// search's reads stay on few of them; nothing is lost on the way.
#[tokio::test]
async fn small_memory_fragments_are_merged_once_a_few_gather() {
    let dir = tempfile::tempdir().unwrap();
    let store = super::super::test_store(dir.path()).await;
    let fragments = || async {
        store
            .memories
            .stats()
            .await
            .unwrap()
            .fragment_stats
            .num_fragments
    };
    let all: Vec<MemoryRecord> = (0..super::super::indexes::SMALL_MEMORY_FRAGMENTS)
        .map(memory)
        .collect();
    insert_each(&store, &all).await;
    assert_eq!(
        fragments().await,
        super::super::indexes::SMALL_MEMORY_FRAGMENTS
    );
    // Merged before the fold: the seven no index covered yet make one. The first, which
    // the full-text index built at the first insert covers, is left to idle
    // consolidation (merging it moves the index's rows).
    let done = store.maintain_indexes(1).await.unwrap();
    assert!(done.contains(&"compacted small fragments"), "{done:?}");
    assert_eq!(fragments().await, 2);
    assert_all_found(&store, &all, "after compaction").await;
    // One new fragment is not worth a rewrite.
    store
        .writer()
        .submit(WriteOp::Insert(vec![memory(99)]))
        .await
        .unwrap();
    let done = store.maintain_indexes(1).await.unwrap();
    assert!(!done.contains(&"compacted small fragments"), "{done:?}");
}

/// Every fold writes new index files and a compaction new data files; the versions that
/// used the old ones are pruned by age, so a busy store's disk does not grow without end.
#[tokio::test]
async fn old_memory_versions_and_the_files_only_they_used_are_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let store = super::super::test_store(dir.path()).await;
    let all: Vec<MemoryRecord> = (0..super::super::indexes::SMALL_MEMORY_FRAGMENTS)
        .map(memory)
        .collect();
    for row in &all {
        insert_each(&store, std::slice::from_ref(row)).await;
        store.maintain_indexes(1).await.unwrap();
    }
    let versions = store.memories.list_versions().await.unwrap().len();
    let index_files = || {
        let indices = dir.path().join("memories.lance/_indices");
        std::fs::read_dir(indices).unwrap().count()
    };
    let before = index_files();
    assert_eq!(
        store
            .prune_memory_versions(std::time::Duration::from_secs(3600))
            .await
            .unwrap(),
        0,
        "every version is younger than an hour"
    );
    let pruned = store
        .prune_memory_versions(std::time::Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(pruned as usize, versions - 1);
    assert_eq!(store.memories.list_versions().await.unwrap().len(), 1);
    assert!(index_files() < before, "{} → {}", before, index_files());
    assert_all_found(&store, &all, "after pruning").await;
}

/// Edges are looked up by their ends through B-tree indexes; maintenance folds new edges
/// into them, or every walk would read the whole table.
#[tokio::test]
async fn new_edges_are_folded_into_the_edge_indexes() {
    use mnemo_protocol::graph::{EdgeType, Node};

    use super::super::edges::{EdgeFilter, EdgeRecord};

    let dir = tempfile::tempdir().unwrap();
    let store = super::super::test_store(dir.path()).await;
    let edges: Vec<EdgeRecord> = (0..super::FOLD_EACH_PASS_AFTER_ROWS)
        .map(|i| {
            let (a, b) = (
                Node::memory(format!("m{i}")),
                Node::memory(format!("m{}", i + 1)),
            );
            EdgeRecord::new("ns", a, b, EdgeType::TemporalSequence, 0.5, "test", 1)
        })
        .collect();
    let table = store.edges().table().clone();
    store
        .writer()
        .submit(store.edges().append(&edges).unwrap())
        .await
        .unwrap();
    assert_eq!(super::unindexed_rows(&table).await.unwrap(), edges.len());
    let done = store.tidy_bookkeeping(None).await.unwrap();
    assert_eq!(done, vec!["folded new rows into the edge indexes"]);
    assert_eq!(super::unindexed_rows(&table).await.unwrap(), 0);
    let found = store
        .edges()
        .touching(&["m7".to_string()], &EdgeFilter::default())
        .await
        .unwrap();
    let mut ends: Vec<(String, String)> = found.into_iter().map(|e| (e.src_id, e.dst_id)).collect();
    ends.sort();
    assert_eq!(
        ends,
        [("m6".into(), "m7".into()), ("m7".into(), "m8".into())]
    );
    // Nothing new: nothing to fold.
    assert!(store.tidy_bookkeeping(None).await.unwrap().is_empty());
}

/// While an ANN index trains, folds wait (a fold's commit would void the training's);
/// once it ends they go ahead.
#[tokio::test]
async fn folds_wait_while_the_ann_index_trains() {
    use std::sync::atomic::Ordering;

    let dir = tempfile::tempdir().unwrap();
    let store = super::super::test_store(dir.path()).await;
    let rows: Vec<_> = (0..5).map(memory).collect();
    store.writer().submit(WriteOp::Insert(rows)).await.unwrap();
    store
        .writer()
        .submit(WriteOp::BuildScalarIndexes)
        .await
        .unwrap();
    store
        .writer()
        .submit(WriteOp::Insert(vec![memory(5)]))
        .await
        .unwrap();
    let unindexed = || async { store.index_state().await.unwrap().unindexed_rows };
    let before = unindexed().await;
    assert!(before > 0);
    let training = super::super::indexes::Training::start(&store.ann_training);
    store.writer().submit(WriteOp::FoldIndexes).await.unwrap();
    assert_eq!(unindexed().await, before, "folded during a training");
    drop(training);
    assert!(!store.ann_training.load(Ordering::Acquire));
    store.writer().submit(WriteOp::FoldIndexes).await.unwrap();
    assert_eq!(unindexed().await, 0);
}
