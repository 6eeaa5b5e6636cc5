//! Dedup: each memory added since the last pass is compared with its nearest current
//! memories of its namespace, found as a search finds them (the codes held in memory, or the
//! ANN index). A pair at or above the cosine threshold, or with the same text, merges into
//! the older memory: the newer version is closed with `superseded_by` pointing at the
//! survivor (so history keeps it), and the survivor counts it as an access and keeps the
//! higher salience. Two memories that both say when they happened merge only if that is
//! within `dedup_event_window_hours`: the same sentence on two different days is two events.
//!
//! The same neighbours are each new memory's SIMILAR edges: those at or above
//! `similar_threshold` (and not duplicates), weighted by their cosine, at most
//! `similar_per_memory` each. They are learned edges: recall together strengthens them,
//! disuse fades them away (the edges phase).
//!
//! Each new memory costs one nearest-neighbour search, whatever the store's size: comparing
//! it with every memory instead held all their vectors (9.7 GB of memory at 1M) and took a
//! product with each.
//!
//! The pass is resumable: `meta` keeps the creation time up to which new rows are done,
//! saved every few seconds.

use std::collections::HashMap;
use std::sync::Arc;

use lancedb::arrow::arrow_array::{Float32Array, Int64Array, StringArray};

use mnemo_protocol::consolidate::{Phase, PhaseRecord};
use mnemo_protocol::graph::{EdgeType, Node};
use mnemo_protocol::time::now_micros;

use super::pace::{Pace, Stop, SAVE_EVERY};
use super::{bump, done_through, save_cursor, time_blocks, BY_CONSOLIDATION};
use crate::held::id::HeldId;
use crate::held::Held;
use crate::store::edges::EdgeRecord;
use crate::store::filter::current;
use crate::store::{col, MemoryRecord, Near, Pred, Store, StoreError, WriteOp};

const WATERMARK: &str = "consolidate.dedup_through";

/// New rows compared per unit (between yield checks and commits). Each reads its rows and
/// their neighbours' from the store, two queries whose cost is mostly their own: a first
/// pass over 1M distinct memories went through 380 a second in blocks of 64, 690 in 256.
const BLOCK: usize = 256;

/// Neighbours looked at beyond the `similar_per_memory` nearest: the duplicates of a row are
/// its nearest, and a few more leave room for copies of one text and for rows the pass skips.
const EXTRA_NEIGHBOURS: usize = 8;

/// What a pair's comparison reads of each row.
const FACTS: [&str; 8] = [
    "id",
    "lineage",
    "namespace",
    "created_at",
    "occurred_at",
    "content_hash",
    "salience",
    "access_count",
];

/// The memories dedup compares. Episodes never merge: three failures of one edit are three
/// failures, not one. Nor do the paragraphs of notes: the file says them, and a watched
/// note's edits follow them.
fn originals() -> Pred {
    current()
        .and(col("is_summary").eq(false))
        .and(col("action").null())
        .and(
            col("source")
                .null()
                .or(col("source").not_starts_with("file:")),
        )
}

/// The columns [`is_original`] reads.
const ORIGINAL_COLUMNS: [&str; 3] = ["is_summary", "action", "source"];

/// [`originals`] asked of a current row read with [`ORIGINAL_COLUMNS`]: rows taken at their
/// row ids are not filtered by the store.
fn is_original(r: &MemoryRecord) -> bool {
    !r.is_summary
        && r.action.is_none()
        && r.source.as_deref().is_none_or(|s| !s.starts_with("file:"))
}

/// Union-find over memory ids, the root of a set being its oldest memory.
#[derive(Default)]
struct Groups {
    parent: HashMap<String, String>,
}

impl Groups {
    fn root(&mut self, id: &str) -> String {
        let mut at = id.to_string();
        let mut path = Vec::new();
        while let Some(up) = self.parent.get(&at) {
            path.push(at);
            at = up.clone();
        }
        for below in path {
            self.parent.insert(below, at.clone());
        }
        at
    }

    /// Joins the sets of `a` and `b`; returns (survivor, merged) roots when they were apart.
    /// `age` tells the older of two roots.
    fn join(&mut self, a: &str, b: &str, age: impl Fn(&str) -> i64) -> Option<(String, String)> {
        let (ra, rb) = (self.root(a), self.root(b));
        if ra == rb {
            return None;
        }
        // The older by creation time, then id.
        let older = (age(&ra), &ra) < (age(&rb), &rb);
        let (keep, gone) = if older { (ra, rb) } else { (rb, ra) };
        self.parent.insert(gone.clone(), keep.clone());
        Some((keep, gone))
    }

    /// Whether `id` was merged into another memory in this pass.
    fn merged(&mut self, id: &str) -> bool {
        self.root(id) != id
    }
}

/// Whether two rows may be the same memory beyond their text: same namespace, and events
/// close enough in time when both are dated.
fn compatible(a: &MemoryRecord, b: &MemoryRecord, window_us: i64) -> bool {
    if a.namespace != b.namespace {
        return false;
    }
    match (a.occurred_at, b.occurred_at) {
        (Some(x), Some(y)) => (x - y).abs() <= window_us,
        _ => true,
    }
}

/// What a new row's neighbours say: the ids of its duplicates, and its near rows (the
/// `per_row` nearest, nearest first) with their cosine.
#[derive(Debug, Default, PartialEq)]
pub struct Neighbours {
    pub duplicates: Vec<String>,
    pub similar: Vec<(String, f32)>,
}

/// How near is near: a duplicate at `duplicate` and above; a neighbour worth an edge at
/// `similar` and above, the `per_row` nearest of each new row.
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    pub duplicate: f32,
    pub similar: f32,
    pub per_row: usize,
    pub window_us: i64,
}

/// Sorts `row`'s neighbours `near` (each with its cosine to `row`) into duplicates and near
/// rows.
pub fn neighbours_of(
    row: &MemoryRecord,
    near: &[(&MemoryRecord, f32)],
    t: Thresholds,
) -> Neighbours {
    let mut found = Neighbours::default();
    let mut close = Vec::new();
    for &(other, score) in near {
        if other.id == row.id {
            continue;
        }
        let same_text = row.content_hash == other.content_hash;
        if (score >= t.duplicate || same_text) && compatible(row, other, t.window_us) {
            found.duplicates.push(other.id.clone());
        } else if score >= t.similar && row.namespace == other.namespace {
            close.push((other.id.clone(), score));
        }
    }
    close.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    close.truncate(t.per_row);
    found.similar = close;
    found
}

/// For each of `rows`, the `limit` current memories of its namespace nearest its vector,
/// with their row ids and cosine; those under `within` may be left out. From the codes
/// held, a few rows at a time; else as a search finds them, a row at a time.
async fn nearest_each(
    held: &Held,
    rows: &[MemoryRecord],
    limit: usize,
    within: f32,
) -> Result<Vec<Vec<(Near, f32)>>, StoreError> {
    let vectors: Vec<Vec<f32>> = rows
        .iter()
        .map(|row| {
            let mut vector = row.vector.clone();
            crate::linalg::l2_normalize(&mut vector);
            vector
        })
        .collect();
    let asked: Vec<(&[f32], &str)> = vectors
        .iter()
        .zip(rows)
        .map(|(v, row)| (v.as_slice(), row.namespace.as_str()))
        .collect();
    let found = match held.nearest_held_each(&asked, limit, within).await? {
        Some(found) => found,
        None => {
            let mut found = Vec::with_capacity(asked.len());
            for &(vector, namespace) in &asked {
                let predicate = current().and(col("namespace").eq(namespace));
                let near = held
                    .nearest_current(vector, Some(namespace), &predicate, limit)
                    .await?;
                found.push(near);
            }
            found
        }
    };
    Ok(found
        .into_iter()
        .map(|near| {
            near.into_iter()
                .map(|s| {
                    let near = Near {
                        id: s.record.id,
                        row_id: s.row_id,
                    };
                    (near, 1.0 - s.raw)
                })
                .collect()
        })
        .collect())
}

pub async fn run(pace: &mut Pace, record: &mut PhaseRecord) -> Result<(), Stop> {
    let ctx = pace.ctx().clone();
    let config = ctx.state.config.clone();
    let store = &ctx.store;
    let watermark = done_through(store, WATERMARK).await?;
    let is_new = originals().and(col("created_at").gt(watermark));
    // Only ids and times are held for the whole pass; each block reads its rows. An id is
    // held in its 16 bytes: as text, a first pass at 1M memories held 80 MB of them.
    let mut fresh: Vec<(i64, HeldId)> = Vec::new();
    let listed = store.each_with_columns(&is_new, &["id", "created_at"], |r| {
        fresh.push((r.created_at, HeldId::new(&r.id)))
    });
    pace.guard(listed).await??;
    if fresh.is_empty() {
        return Ok(());
    }
    fresh.sort_by_key(|f| f.0);
    let total = fresh.len() as u64;
    let thresholds = Thresholds {
        duplicate: config.dedup_threshold,
        similar: config.similar_threshold,
        per_row: config.similar_per_memory,
        window_us: (config.dedup_event_window_hours * 3_600_000_000.0) as i64,
    };
    let times: Vec<i64> = fresh.iter().map(|f| f.0).collect();
    // Blocks done since the last save: saved when the pass stops too, so a run that is
    // stopped often still gets on.
    let mut unsaved: Option<i64> = None;
    let mut saved = std::time::Instant::now();
    for range in time_blocks(&times, BLOCK) {
        let ids: Vec<String> = fresh[range.clone()].iter().map(|f| f.1.text()).collect();
        let compared = async {
            pace.checkpoint().await?;
            compare(pace, record, &ids, thresholds).await
        }
        .await;
        if let Err(stop) = compared {
            if let Some(through) = unsaved {
                if let Err(e) = save_through(pace, record, through).await {
                    tracing::debug!("dedup stopped without saving how far it got: {e:?}");
                }
            }
            return Err(stop);
        }
        unsaved = Some(times[range.end - 1]);
        // Doing a block again changes nothing: a memory it merged is closed, and its edges
        // are upserted alike.
        if range.end == fresh.len() || saved.elapsed() >= SAVE_EVERY {
            if let Some(through) = unsaved.take() {
                save_through(pace, record, through).await?;
            }
            saved = std::time::Instant::now();
        }
        pace.progress(Phase::Dedup, range.end as u64, total);
    }
    Ok(())
}

/// Compares the new memories `ids` (a block) with their neighbours: merges the duplicates
/// and links the near ones.
async fn compare(
    pace: &mut Pace,
    record: &mut PhaseRecord,
    ids: &[String],
    thresholds: Thresholds,
) -> Result<(), Stop> {
    let held = &pace.ctx().held.clone();
    let store = held.store();
    let limit = thresholds.per_row + EXTRA_NEIGHBOURS;
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    // Both reads take their rows at the row ids the codes hold, not through the id index.
    let mut columns = [FACTS.as_slice(), &ORIGINAL_COLUMNS, &["vector"]].concat();
    let mut block = pace.guard(held.current_by_id(&ids, &columns)).await??;
    block.retain(is_original);
    let near_ids = pace
        .guard(nearest_each(held, &block, limit, thresholds.similar))
        .await??;
    let mut named: Vec<Near> = near_ids.iter().flatten().map(|n| n.0.clone()).collect();
    named.sort_by(|a, b| a.id.cmp(&b.id));
    named.dedup_by(|a, b| a.id == b.id);
    columns.retain(|&c| c != "vector");
    let known: HashMap<String, MemoryRecord> = pace
        .guard(store.current_at(&named, &columns))
        .await??
        .into_iter()
        .filter(is_original)
        .map(|r| (r.id.clone(), r))
        .collect();
    let lookup = |id: &str| block.iter().find(|r| r.id == id).or_else(|| known.get(id));
    // The sets of one block: a memory merged in an earlier block is closed, so no later
    // block reads or finds it again. Held for the whole pass, they grew with every merge
    // (a first pass at 1M memories of the bench's texts merges most of them).
    let mut groups = Groups::default();
    // Creation times of the memories merged in this block, to tell the older of two sets.
    let mut ages: HashMap<String, i64> = HashMap::new();
    // merged id -> survivor id; survivor id -> (accesses to add, highest salience merged).
    let mut merged: Vec<(String, String)> = Vec::new();
    let mut gains: HashMap<String, (i64, f32)> = HashMap::new();
    // Near pairs (older first), once each however many sides found them.
    let mut near_pairs: HashMap<(&str, &str), (&MemoryRecord, &MemoryRecord, f32)> = HashMap::new();
    for (row, near) in block.iter().zip(&near_ids) {
        let near: Vec<(&MemoryRecord, f32)> = near
            .iter()
            .filter_map(|(near, score)| Some((known.get(&near.id)?, *score)))
            .collect();
        let found = neighbours_of(row, &near, thresholds);
        for other in found.duplicates.iter().filter_map(|id| known.get(id)) {
            ages.insert(row.id.clone(), row.created_at);
            ages.insert(other.id.clone(), other.created_at);
            let age = |id: &str| ages.get(id).copied().unwrap_or(i64::MAX);
            let Some((keep, gone)) = groups.join(&row.id, &other.id, age) else {
                continue;
            };
            // What the merged one had gained in this block passes on with it.
            let carried = gains.remove(&gone).unwrap_or((0, f32::MIN));
            let gain = gains.entry(keep.clone()).or_insert((0, f32::MIN));
            if let Some(lost) = lookup(&gone) {
                gain.0 += lost.access_count + 1;
                gain.1 = gain.1.max(lost.salience);
            }
            gain.0 += carried.0;
            gain.1 = gain.1.max(carried.1);
            merged.push((gone, keep));
        }
        for (other, score) in &found.similar {
            let Some(other) = known.get(other) else {
                continue;
            };
            let (a, b) = if (row.created_at, &row.id) < (other.created_at, &other.id) {
                (row, other)
            } else {
                (other, row)
            };
            near_pairs.insert((a.id.as_str(), b.id.as_str()), (a, b, *score));
        }
    }
    let now = now_micros();
    let similar: Vec<EdgeRecord> = near_pairs
        .into_values()
        .filter(|(a, b, _)| !groups.merged(&a.id) && !groups.merged(&b.id))
        .map(|(a, b, score)| {
            EdgeRecord::new(
                &a.namespace,
                Node::memory(&a.lineage),
                Node::memory(&b.lineage),
                EdgeType::Similar,
                score.min(1.0),
                BY_CONSOLIDATION,
                now,
            )
        })
        .collect();
    if !merged.is_empty() {
        apply(store, &merged, &gains).await?;
        bump(record, "merged", merged.len() as u64);
    }
    if !similar.is_empty() {
        store
            .writer()
            .submit(store.edges().upsert(&similar)?)
            .await?;
        bump(record, "similar", similar.len() as u64);
    }
    bump(record, "compared", block.len() as u64);
    Ok(())
}

/// Saves that the pass is done through creation time `through`.
async fn save_through(pace: &Pace, record: &mut PhaseRecord, through: i64) -> Result<(), Stop> {
    let through = through.to_string();
    pace.ctx().store.meta_set(WATERMARK, &through).await?;
    record.cursor = Some(through);
    save_cursor(pace, record).await
}

/// Closes the merged rows (pointing at their survivor), then lifts the survivors by what
/// they `gains` (accesses to add, the highest salience merged) over what they hold now. Each
/// patch touches only rows still current, and the writer orders it with updates, so a
/// concurrent `memory.update` and a merge never both close the same row.
async fn apply(
    store: &Store,
    merged: &[(String, String)],
    gains: &HashMap<String, (i64, f32)>,
) -> Result<(), StoreError> {
    let survivors: Vec<&str> = gains.keys().map(String::as_str).collect();
    let held = store
        .columns_of(
            &current().and(col("id").one_of(&survivors)),
            &["id", "access_count", "salience"],
        )
        .await?;
    let now = now_micros();
    let closed = store.patch(vec![
        (
            "id",
            Arc::new(
                merged
                    .iter()
                    .map(|(g, _)| Some(g.as_str()))
                    .collect::<StringArray>(),
            ),
        ),
        (
            "valid_to",
            Arc::new(Int64Array::from(vec![now; merged.len()])),
        ),
        (
            "superseded_by",
            Arc::new(
                merged
                    .iter()
                    .map(|(_, k)| Some(k.as_str()))
                    .collect::<StringArray>(),
            ),
        ),
    ])?;
    let writer = store.writer();
    writer
        .submit(WriteOp::Patch {
            batch: closed,
            only_if: Some(current().on_target()),
        })
        .await?;
    let keep: Vec<(&str, i64, f32)> = held
        .iter()
        .filter_map(|r| {
            let (n, salience) = gains.get(&r.id)?;
            Some((r.id.as_str(), r.access_count + n, r.salience.max(*salience)))
        })
        .collect();
    let lifted = store.patch_current(vec![
        (
            "id",
            Arc::new(keep.iter().map(|k| Some(k.0)).collect::<StringArray>()),
        ),
        (
            "access_count",
            Arc::new(keep.iter().map(|k| k.1).collect::<Int64Array>()),
        ),
        (
            "salience",
            Arc::new(keep.iter().map(|k| k.2).collect::<Float32Array>()),
        ),
    ])?;
    writer.submit(lifted).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::tests::record;

    fn row(id: &str, hash: &str, occurred: Option<i64>) -> MemoryRecord {
        let mut r = record(id, id, 3);
        r.content_hash = hash.into();
        r.occurred_at = occurred;
        r
    }

    const T: Thresholds = Thresholds {
        duplicate: 0.95,
        similar: 0.7,
        per_row: 1,
        window_us: 3_600_000_000,
    };

    #[test]
    fn near_vectors_and_equal_texts_are_duplicates() {
        let (a, b) = (row("a", "h1", None), row("b", "h2", None));
        let c = row("c", "h3", None);
        let found = neighbours_of(&c, &[(&c, 1.0), (&a, 0.998), (&b, 0.05)], T);
        assert_eq!(found.duplicates, ["a"]);
        // The same text is the same memory however far its vector lies.
        let d = row("d", "h2", None);
        assert_eq!(neighbours_of(&d, &[(&b, 0.1)], T).duplicates, ["b"]);
    }

    #[test]
    fn events_far_apart_in_time_stay_apart() {
        let hour = 3_600_000_000;
        let a = row("a", "h", Some(0));
        let b = row("b", "h", Some(48 * hour));
        let c = row("c", "h", Some(48 * hour + 10));
        assert!(neighbours_of(&b, &[(&a, 1.0)], T).duplicates.is_empty());
        assert_eq!(
            neighbours_of(&c, &[(&a, 1.0), (&b, 1.0)], T).duplicates,
            ["b"]
        );
    }

    #[test]
    fn the_nearest_non_duplicates_of_a_row_are_similar() {
        let (a, c, d) = (
            row("a", "h1", None),
            row("c", "h3", None),
            row("d", "h4", None),
        );
        let b = row("b", "h2", None);
        // b's nearest above the threshold is d (one per row); c is too far.
        let found = neighbours_of(&b, &[(&a, 0.8), (&c, 0.6), (&d, 0.9)], T);
        assert_eq!(found.similar, [("d".to_string(), 0.9)]);
        assert!(found.duplicates.is_empty());
        // Another namespace is never similar.
        let mut elsewhere = d.clone();
        elsewhere.namespace = "elsewhere".into();
        let found = neighbours_of(&b, &[(&elsewhere, 0.9), (&a, 0.8)], T);
        assert_eq!(found.similar, [("a".to_string(), 0.8)]);
    }

    /// Rows taken at their row ids are kept as the store's filter of originals keeps them.
    #[tokio::test]
    async fn rows_taken_are_kept_as_the_filter_keeps_them() {
        let dir = tempfile::tempdir().unwrap();
        let held = crate::held::tests::held_store(dir.path()).await;
        let store = held.store();
        let plain = |id: &str| MemoryRecord {
            action: None,
            ..record(id, id, 4)
        };
        let rows = vec![
            plain("plain"),
            MemoryRecord {
                source: Some("chat".into()),
                ..plain("chat")
            },
            MemoryRecord {
                is_summary: true,
                ..plain("summary")
            },
            record("episode", "episode", 4),
            MemoryRecord {
                source: Some("file:/notes/a.md".into()),
                ..plain("note")
            },
        ];
        let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        store.writer().submit(WriteOp::Insert(rows)).await.unwrap();
        held.refresh_nearest().await.unwrap();
        let sorted = |rows: Vec<MemoryRecord>| {
            let mut ids: Vec<String> = rows.into_iter().map(|r| r.id).collect();
            ids.sort();
            ids
        };
        let filtered = sorted(store.columns_of(&originals(), &["id"]).await.unwrap());
        assert_eq!(filtered, ["chat", "plain"]);
        let mut taken = held.current_by_id(&ids, &ORIGINAL_COLUMNS).await.unwrap();
        assert_eq!(taken.len(), 5);
        taken.retain(is_original);
        assert_eq!(sorted(taken), filtered);
    }

    #[test]
    fn chains_merge_into_the_oldest() {
        let ages: HashMap<&str, i64> = [("w", 0), ("x", 1), ("y", 2), ("z", 2)].into();
        let age = |id: &str| ages[id];
        let mut g = Groups::default();
        assert_eq!(g.join("y", "z", age), Some(("y".into(), "z".into())));
        assert_eq!(g.join("z", "x", age), Some(("x".into(), "y".into())));
        assert_eq!(g.join("x", "z", age), None);
        assert_eq!(g.root("z"), "x");
        assert!(g.merged("z") && g.merged("y") && !g.merged("x"));
        assert_eq!(g.join("w", "y", age), Some(("w".into(), "x".into())));
        assert_eq!(g.root("z"), "w");
    }
}
