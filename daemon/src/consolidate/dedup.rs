//! Dedup: memories added since the last pass are compared with every current memory of
//! their namespace (one matrix product per block of new rows). A pair at or above the cosine
//! threshold, or with the same text, merges into the older memory: the newer version is
//! closed with `superseded_by` pointing at the survivor (so history keeps it), and the
//! survivor counts it as an access and keeps the higher salience. Two memories that both say
//! when they happened merge only if that is within `dedup_event_window_hours`: the same
//! sentence on two different days is two events.
//!
//! The pass is resumable: `meta` keeps the creation time up to which new rows are done.

use std::collections::HashMap;
use std::sync::Arc;

use lancedb::arrow::arrow_array::{Float32Array, Int64Array, StringArray};

use mnemo_protocol::consolidate::{Phase, PhaseRecord};
use mnemo_protocol::time::now_micros;

use super::pace::{Pace, Stop};
use super::{bump, save_cursor};
use crate::linalg::matmul;
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

/// Pairs (older, newer) among `rows` (oldest first) that are duplicates, for the new rows
/// `block` (indices into `rows`). `vectors` holds the normalised vectors, row-major.
pub fn find_pairs(
    rows: &[MemoryRecord],
    vectors: &[f32],
    dim: usize,
    block: &[usize],
    threshold: f32,
    window_us: i64,
) -> Vec<(usize, usize)> {
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
    let mut pairs = Vec::new();
    for (bi, &i) in block.iter().enumerate() {
        let row = &scores[bi * n..(bi + 1) * n];
        for (j, &score) in row.iter().enumerate() {
            if j == i {
                continue;
            }
            let same_text = rows[i].content_hash == rows[j].content_hash;
            if (score >= threshold || same_text) && compatible(&rows[i], &rows[j], window_us) {
                pairs.push((i.min(j), i.max(j)));
            }
        }
    }
    pairs
}

pub async fn run(pace: &mut Pace, record: &mut PhaseRecord) -> Result<(), Stop> {
    let ctx = pace.ctx().clone();
    let config = ctx.state.config.clone();
    let store = &ctx.store;
    let watermark: i64 = store
        .meta_get(WATERMARK)
        .await?
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1);
    let originals = current().and(col("is_summary").eq(false));
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
    let window_us = (config.dedup_event_window_hours * 3_600_000_000.0) as i64;
    let mut groups = Groups::new(rows.len());
    let mut gains: HashMap<usize, (i64, f32)> = HashMap::new();
    for (b, block) in fresh.chunks(BLOCK).enumerate() {
        pace.checkpoint().await?;
        let (r, v, blk) = (rows.clone(), vectors.clone(), block.to_vec());
        let threshold = config.dedup_threshold;
        let pairs = pace
            .guard(tokio::task::spawn_blocking(move || {
                find_pairs(&r, &v, dim, &blk, threshold, window_us)
            }))
            .await?
            .map_err(|e| Stop::Failed(format!("dedup worker: {e}")))?;
        // survivor id -> (accesses to add, highest salience); merged id -> survivor id.
        let mut merged: Vec<(String, String)> = Vec::new();
        let mut touched: HashMap<usize, (i64, f32)> = HashMap::new();
        for (a, c) in pairs {
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
        let through = rows[*block.last().unwrap_or(&0)].created_at;
        store.meta_set(WATERMARK, &through.to_string()).await?;
        bump(record, "compared", block.len() as u64);
        record.cursor = Some(through.to_string());
        save_cursor(pace, record).await?;
        pace.progress(
            Phase::Dedup,
            ((b + 1) * BLOCK).min(fresh.len()) as u64,
            total,
        );
    }
    Ok(())
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

    fn pairs(rows: &[MemoryRecord], block: &[usize]) -> Vec<(usize, usize)> {
        let dim = rows[0].vector.len();
        let v: Vec<f32> = rows.iter().flat_map(|r| normalized(&r.vector)).collect();
        let mut p = find_pairs(rows, &v, dim, block, 0.95, 3_600_000_000);
        p.sort();
        p.dedup();
        p
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
    fn chains_merge_into_the_oldest() {
        let mut g = Groups::new(4);
        assert_eq!(g.join(2, 3), Some((2, 3)));
        assert_eq!(g.join(0, 3), Some((0, 2)));
        assert_eq!(g.join(2, 0), None);
        assert_eq!(g.root(3), 0);
    }
}
