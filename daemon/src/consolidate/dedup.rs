//! Dedup: memories added since the last pass are compared with every current memory of
//! their namespace (one matrix product per block of new rows). A pair at or above the cosine
//! threshold, or with the same text, merges into the older memory: the newer version is
//! closed with `superseded_by` pointing at the survivor (so history keeps it), and the
//! survivor counts it as an access and keeps the higher salience. Two memories that both say
//! when they happened merge only if that is within `dedup_event_window_hours`: the same
//! sentence on two different days is two events.
//!
//! The same product gives each new memory its nearest neighbours: those at or above
//! `similar_threshold` (and not duplicates) are linked by SIMILAR edges, weighted by their
//! cosine, at most `similar_per_memory` each. They are learned edges: recall together
//! strengthens them, disuse fades them away (the edges phase).
//!
//! The pass is resumable: `meta` keeps the creation time up to which new rows are done.

use std::collections::HashMap;
use std::sync::Arc;

use lancedb::arrow::arrow_array::{Float32Array, Int64Array, StringArray};

use mnemo_protocol::consolidate::{Phase, PhaseRecord};
use mnemo_protocol::graph::{EdgeType, Node};
use mnemo_protocol::time::now_micros;

use super::pace::{Pace, Stop};
use super::{bump, done_through, save_cursor, time_blocks, BY_CONSOLIDATION};
use crate::linalg::matmul;
use crate::store::edges::EdgeRecord;
use crate::store::filter::current;
use crate::store::{col, MemoryRecord, WriteOp};

const WATERMARK: &str = "consolidate.dedup_through";

/// New rows compared per unit: 64 × 100k × 384 is ~5 GFLOP, a fraction of a second.
const BLOCK: usize = 64;

/// Union-find over row indices, the root of a set being its oldest row.
struct Groups {
    parent: Vec<usize>,
}

impl Groups {
    fn new(n: usize) -> Self {
        Self {
            parent: (0..n).collect(),
        }
    }
    fn root(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }
    /// Joins the sets of `a` and `b` (rows sorted oldest first, so the smaller index is older);
    /// returns (survivor, merged) roots when they were apart.
    fn join(&mut self, a: usize, b: usize) -> Option<(usize, usize)> {
        let (ra, rb) = (self.root(a), self.root(b));
        if ra == rb {
            return None;
        }
        let (keep, gone) = (ra.min(rb), ra.max(rb));
        self.parent[gone] = keep;
        Some((keep, gone))
    }
}

fn normalized(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter().map(|x| x / norm).collect()
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

/// What comparing a block of new rows found: duplicate pairs (older, newer), and near
/// pairs (lower index first) with their cosine.
#[derive(Debug, Default, PartialEq)]
pub struct Neighbours {
    pub duplicates: Vec<(usize, usize)>,
    pub similar: Vec<(usize, usize, f32)>,
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

/// The neighbours among `rows` (oldest first) of the new rows `block` (indices into `rows`).
/// `vectors` holds the normalised vectors, row-major.
pub fn find_neighbours(
    rows: &[MemoryRecord],
    vectors: &[f32],
    dim: usize,
    block: &[usize],
    t: Thresholds,
) -> Neighbours {
    let n = rows.len();
    let mut lhs = Vec::with_capacity(block.len() * dim);
    for &i in block {
        lhs.extend_from_slice(&vectors[i * dim..(i + 1) * dim]);
    }
    let mut scores = vec![0.0f32; block.len() * n];
    if n > 0 && !block.is_empty() {
        matmul(
            block.len(),
            n,
            dim,
            &mut scores,
            (n as isize, 1),
            &lhs,
            (dim as isize, 1),
            vectors,
            (1, dim as isize),
            1.0,
            crate::linalg::threads(),
        );
    }
    let mut found = Neighbours::default();
    let mut similar: HashMap<(usize, usize), f32> = HashMap::new();
    for (bi, &i) in block.iter().enumerate() {
        let row = &scores[bi * n..(bi + 1) * n];
        let mut near: Vec<(usize, f32)> = Vec::new();
        for (j, &score) in row.iter().enumerate() {
            if j == i {
                continue;
            }
            let same_text = rows[i].content_hash == rows[j].content_hash;
            if (score >= t.duplicate || same_text) && compatible(&rows[i], &rows[j], t.window_us) {
                found.duplicates.push((i.min(j), i.max(j)));
            } else if score >= t.similar && rows[i].namespace == rows[j].namespace {
                near.push((j, score));
            }
        }
        near.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for (j, score) in near.into_iter().take(t.per_row) {
            similar.insert((i.min(j), i.max(j)), score);
        }
    }
    found.similar = similar.into_iter().map(|((a, b), s)| (a, b, s)).collect();
    found.similar.sort_by_key(|p| (p.0, p.1));
    found
}

pub async fn run(pace: &mut Pace, record: &mut PhaseRecord) -> Result<(), Stop> {
    let ctx = pace.ctx().clone();
    let config = ctx.state.config.clone();
    let store = &ctx.store;
    let watermark = done_through(store, WATERMARK).await?;
    // Episodes never merge: three failures of one edit are three failures, not one. Nor do
    // the paragraphs of notes: the file says them, and a watched note's edits follow them.
    let originals = current()
        .and(col("is_summary").eq(false))
        .and(col("action").null())
        .and(
            col("source")
                .null()
                .or(col("source").not_starts_with("file:")),
        );
    let new_rows = store
        .count(&originals.clone().and(col("created_at").gt(watermark)))
        .await?;
    if new_rows == 0 {
        return Ok(());
    }
    let mut rows = pace
        .guard(store.columns_of(
            &originals,
            &[
                "id",
                "lineage",
                "namespace",
                "created_at",
                "occurred_at",
                "vector",
                "content_hash",
                "salience",
                "access_count",
            ],
        ))
        .await??;
    rows.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    let dim = rows.iter().map(|r| r.vector.len()).max().unwrap_or(0);
    let rows: Vec<MemoryRecord> = rows.into_iter().filter(|r| r.vector.len() == dim).collect();
    let vectors: Arc<Vec<f32>> =
        Arc::new(rows.iter().flat_map(|r| normalized(&r.vector)).collect());
    let rows = Arc::new(rows);
    let fresh: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].created_at > watermark)
        .collect();
    let total = fresh.len() as u64;
    let thresholds = Thresholds {
        duplicate: config.dedup_threshold,
        similar: config.similar_threshold,
        per_row: config.similar_per_memory,
        window_us: (config.dedup_event_window_hours * 3_600_000_000.0) as i64,
    };
    let mut groups = Groups::new(rows.len());
    let mut gains: HashMap<usize, (i64, f32)> = HashMap::new();
    let fresh_times: Vec<i64> = fresh.iter().map(|&i| rows[i].created_at).collect();
    for range in time_blocks(&fresh_times, BLOCK) {
        pace.checkpoint().await?;
        let block = &fresh[range.clone()];
        let (r, v, blk) = (rows.clone(), vectors.clone(), block.to_vec());
        let found = pace
            .guard(tokio::task::spawn_blocking(move || {
                find_neighbours(&r, &v, dim, &blk, thresholds)
            }))
            .await?
            .map_err(|e| Stop::Failed(format!("dedup worker: {e}")))?;
        // survivor id -> (accesses to add, highest salience); merged id -> survivor id.
        let mut merged: Vec<(String, String)> = Vec::new();
        let mut touched: HashMap<usize, (i64, f32)> = HashMap::new();
        for &(a, c) in &found.duplicates {
            if let Some((keep, gone)) = groups.join(a, c) {
                merged.push((rows[gone].id.clone(), rows[keep].id.clone()));
                // Totals over the whole pass: a survivor can gain in several blocks.
                let gain = gains.entry(keep).or_insert((0, rows[keep].salience));
                gain.0 += rows[gone].access_count + 1;
                gain.1 = gain.1.max(rows[gone].salience);
                touched.insert(keep, *gain);
            }
        }
        if !merged.is_empty() {
            apply(&ctx, &rows, &merged, &touched).await?;
            bump(record, "merged", merged.len() as u64);
        }
        let similar = similar_edges(&rows, &found.similar, &mut groups, now_micros());
        if !similar.is_empty() {
            store
                .writer()
                .submit(store.edges().upsert(&similar)?)
                .await?;
            bump(record, "similar", similar.len() as u64);
        }
        let through = rows[*block.last().unwrap_or(&0)].created_at;
        store.meta_set(WATERMARK, &through.to_string()).await?;
        bump(record, "compared", block.len() as u64);
        record.cursor = Some(through.to_string());
        save_cursor(pace, record).await?;
        pace.progress(Phase::Dedup, range.end as u64, total);
    }
    Ok(())
}

/// SIMILAR edges between the lineages of near pairs, but not to a memory merged away.
fn similar_edges(
    rows: &[MemoryRecord],
    near: &[(usize, usize, f32)],
    groups: &mut Groups,
    now: i64,
) -> Vec<EdgeRecord> {
    near.iter()
        .filter(|(a, b, _)| groups.root(*a) == *a && groups.root(*b) == *b)
        .map(|&(a, b, score)| {
            EdgeRecord::new(
                &rows[a].namespace,
                Node::memory(&rows[a].lineage),
                Node::memory(&rows[b].lineage),
                EdgeType::Similar,
                score.min(1.0),
                BY_CONSOLIDATION,
                now,
            )
        })
        .collect()
}

/// Closes the merged rows (pointing at their survivor), then lifts the survivors. Each patch
/// touches only rows still current, and the writer orders it with updates, so a concurrent
/// `memory.update` and a merge never both close the same row.
async fn apply(
    ctx: &super::Consolidator,
    rows: &[MemoryRecord],
    merged: &[(String, String)],
    gains: &HashMap<usize, (i64, f32)>,
) -> Result<(), Stop> {
    let now = now_micros();
    let store = &ctx.store;
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
    let keep: Vec<(&MemoryRecord, i64, f32)> = gains
        .iter()
        .map(|(&k, &(n, s))| (&rows[k], rows[k].access_count + n, s))
        .collect();
    let lifted = store.patch(vec![
        (
            "id",
            Arc::new(
                keep.iter()
                    .map(|k| Some(k.0.id.as_str()))
                    .collect::<StringArray>(),
            ),
        ),
        (
            "access_count",
            Arc::new(keep.iter().map(|k| k.1).collect::<Int64Array>()),
        ),
        (
            "salience",
            Arc::new(keep.iter().map(|k| k.2).collect::<Float32Array>()),
        ),
        // The condition below reads it, and Lance sees only the patch's columns: null, as
        // it is in every row the condition lets through.
        (
            "valid_to",
            Arc::new(Int64Array::from(vec![None::<i64>; keep.len()])),
        ),
    ])?;
    writer
        .submit(WriteOp::Patch {
            batch: lifted,
            only_if: Some(current().on_target()),
        })
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::tests::record;

    fn row(id: &str, hash: &str, vector: Vec<f32>, occurred: Option<i64>) -> MemoryRecord {
        let mut r = record(id, id, vector.len());
        r.vector = vector;
        r.content_hash = hash.into();
        r.occurred_at = occurred;
        r
    }

    fn neighbours(rows: &[MemoryRecord], block: &[usize]) -> Neighbours {
        let dim = rows[0].vector.len();
        let v: Vec<f32> = rows.iter().flat_map(|r| normalized(&r.vector)).collect();
        let t = Thresholds {
            duplicate: 0.95,
            similar: 0.7,
            per_row: 1,
            window_us: 3_600_000_000,
        };
        let mut found = find_neighbours(rows, &v, dim, block, t);
        found.duplicates.sort();
        found.duplicates.dedup();
        found
    }

    fn pairs(rows: &[MemoryRecord], block: &[usize]) -> Vec<(usize, usize)> {
        neighbours(rows, block).duplicates
    }

    #[test]
    fn near_vectors_and_equal_texts_pair_up() {
        let rows = vec![
            row("a", "h1", vec![1.0, 0.0, 0.0], None),
            row("b", "h2", vec![0.0, 1.0, 0.0], None),
            row("c", "h3", vec![0.99, 0.05, 0.0], None), // near a
            row("d", "h2", vec![0.0, 0.0, 1.0], None),   // same text as b
        ];
        assert_eq!(pairs(&rows, &[2, 3]), vec![(0, 2), (1, 3)]);
    }

    #[test]
    fn events_far_apart_in_time_stay_apart() {
        let hour = 3_600_000_000;
        let rows = vec![
            row("a", "h", vec![1.0, 0.0], Some(0)),
            row("b", "h", vec![1.0, 0.0], Some(48 * hour)),
            row("c", "h", vec![1.0, 0.0], Some(48 * hour + 10)),
        ];
        assert_eq!(pairs(&rows, &[1, 2]), vec![(1, 2)]);
    }

    #[test]
    fn the_nearest_non_duplicate_of_each_new_row_is_similar() {
        let rows = vec![
            row("a", "h1", vec![1.0, 0.0, 0.0], None),
            row("b", "h2", vec![0.8, 0.6, 0.0], None), // cos 0.8 with a
            row("c", "h3", vec![0.0, 1.0, 0.0], None), // cos 0.6 with b: too far
            row("d", "h4", vec![0.9, 0.0, 0.436], None), // cos 0.9 with a, 0.72 with b
            row("e", "h5", vec![1.0, 0.0, 0.0], None), // a duplicate of a, not new
        ];
        let found = neighbours(&rows, &[1, 2, 3]);
        // b's nearest is a; c has none; d's nearest is a (one per row); e is not new.
        let similar: Vec<(usize, usize)> = found.similar.iter().map(|p| (p.0, p.1)).collect();
        assert_eq!(similar, vec![(0, 1), (0, 3)]);
        assert!((found.similar[0].2 - 0.8).abs() < 1e-3);
        assert!(found.duplicates.is_empty());

        // Another namespace is never similar; a merged row gets no edge.
        let mut other = rows.clone();
        other[0].namespace = "elsewhere".into();
        let found = neighbours(&other, &[1]);
        assert!(found.similar.iter().all(|p| p.0 != 0), "{found:?}");
        let mut groups = Groups::new(rows.len());
        groups.join(0, 4);
        let edges = similar_edges(&rows, &[(0, 1, 0.8), (1, 4, 0.8)], &mut groups, 7);
        assert_eq!(edges.len(), 1);
        assert_eq!(edges[0].edge_type, EdgeType::Similar);
        assert_eq!(
            (edges[0].src_id.as_str(), edges[0].dst_id.as_str()),
            ("a", "b")
        );
    }

    #[test]
    fn chains_merge_into_the_oldest() {
        let mut g = Groups::new(4);
        assert_eq!(g.join(2, 3), Some((2, 3)));
        assert_eq!(g.join(0, 3), Some((0, 2)));
        assert_eq!(g.join(2, 0), None);
        assert_eq!(g.root(3), 0);
    }
}
