//! The current memories' vectors held in memory at 8 bits a component, scanned whole for
//! the vector leg of a search. At 100k MiniLM memories Lance's ANN index answered in ~12 ms
//! (its IVF partitions, the prefilter on current rows of a namespace and the refine read);
//! a scan of 100k × 384 bytes takes ~2 ms on one core and finds the exact neighbours but
//! for 8-bit rounding, which the exact distances of the few taken rows then correct.
//!
//! Lance stays the truth: the codes only propose candidates, whose rows are taken by row id
//! (or read by id, where a row moved since the codes were made), checked current, and
//! ranked by the exact cosine of their stored vectors. So a forgotten or closed memory is
//! never an answer; at worst a stale code costs a read. New memories join the codes as they
//! are written; other changes to the table (updates, consolidation, compaction) move rows,
//! and the next maintenance pass reads the codes again (0.27 s at 100k). Writes that close,
//! delete or re-embed rows drop the codes at once: until they are read again the ANN index
//! serves, rather than codes that propose rows gone or vectors changed.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::RwLock;

use lancedb::arrow::arrow_array::{
    Array, FixedSizeListArray, Float32Array, StringArray, UInt64Array,
};
use lancedb::query::{ExecutableQuery, QueryBase, Select};

use super::filter::current;
use super::memories::{scored, Scored, RANKING_COLUMNS};
use super::sql::{col, read, Filtered};
use super::{MemoryRecord, Store, StoreError};

/// One candidate the codes propose: the memory's id and its row id when the codes were read.
#[derive(Debug, Clone, PartialEq)]
pub struct Near {
    pub id: String,
    pub row_id: Option<u64>,
}

/// The codes of every current memory of the configured model, row by row.
#[derive(Default)]
struct Codes {
    dim: usize,
    /// `dim` signed bytes a row: the vector divided by its largest component, times 127.
    codes: Vec<i8>,
    /// What turns a row's byte dot product back into a cosine: its largest component / 127
    /// over its length.
    scales: Vec<f32>,
    ids: Vec<Box<str>>,
    /// None for a row written after the codes were read (it is read by id).
    row_ids: Vec<Option<u64>>,
    /// Index into `spaces` of each row's namespace.
    space_of: Vec<u32>,
    spaces: Vec<String>,
}

impl Codes {
    fn new(dim: usize) -> Self {
        Self {
            dim,
            ..Default::default()
        }
    }

    fn len(&self) -> usize {
        self.ids.len()
    }

    fn reserve(&mut self, rows: usize) {
        self.codes.reserve_exact(rows * self.dim);
        self.scales.reserve_exact(rows);
        self.ids.reserve_exact(rows);
        self.row_ids.reserve_exact(rows);
        self.space_of.reserve_exact(rows);
    }

    fn shrink_to_fit(&mut self) {
        self.codes.shrink_to_fit();
        self.scales.shrink_to_fit();
        self.ids.shrink_to_fit();
        self.row_ids.shrink_to_fit();
        self.space_of.shrink_to_fit();
    }

    fn push(&mut self, id: &str, row_id: Option<u64>, namespace: &str, vector: &[f32]) {
        if vector.len() != self.dim {
            return;
        }
        let scale = quantize(vector, &mut self.codes);
        self.scales.push(scale);
        self.ids.push(id.into());
        self.row_ids.push(row_id);
        let space = match self.spaces.iter().position(|s| s == namespace) {
            Some(i) => i,
            None => {
                self.spaces.push(namespace.to_string());
                self.spaces.len() - 1
            }
        };
        self.space_of.push(space as u32);
    }

    /// The `limit` rows nearest `vector` by approximate cosine, nearest first, among those of
    /// `namespace` (all when None).
    fn nearest(&self, vector: &[f32], namespace: Option<&str>, limit: usize) -> Vec<Near> {
        if vector.len() != self.dim || limit == 0 {
            return Vec::new();
        }
        let space = match namespace {
            Some(n) => match self.spaces.iter().position(|s| s == n) {
                Some(i) => Some(i as u32),
                None => return Vec::new(),
            },
            None => None,
        };
        let mut query = Vec::with_capacity(self.dim);
        quantize(vector, &mut query);
        let mut scored = scan(self, &query, space);
        if scored.len() > limit {
            scored.select_nth_unstable_by(limit - 1, |a, b| b.0.total_cmp(&a.0));
            scored.truncate(limit);
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored
            .into_iter()
            .map(|(_, i)| Near {
                id: self.ids[i as usize].to_string(),
                row_id: self.row_ids[i as usize],
            })
            .collect()
    }

    /// Bytes held, for the log.
    fn bytes(&self) -> usize {
        use std::mem::size_of;
        let per_row = size_of::<f32>() + size_of::<Option<u64>>() + size_of::<u32>();
        let ids: usize = self
            .ids
            .iter()
            .map(|id| size_of::<Box<str>>() + id.len())
            .sum();
        self.codes.len() + self.len() * per_row + ids
    }
}

/// Appends `vector`'s codes to `out`; returns its scale: the product of two rows' scales
/// turns the dot product of their codes into their cosine (a query's own scale moves every
/// score alike, so a search leaves it out).
fn quantize(vector: &[f32], out: &mut Vec<i8>) -> f32 {
    let largest = vector.iter().fold(0f32, |m, x| m.max(x.abs()));
    let length = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if largest == 0.0 || length == 0.0 {
        out.extend(std::iter::repeat_n(0, vector.len()));
        return 0.0;
    }
    out.extend(vector.iter().map(|x| (x / largest * 127.0).round() as i8));
    largest / 127.0 / length
}

/// Every row's approximate score against the query's codes.
fn scan(codes: &Codes, query: &[i8], space: Option<u32>) -> Vec<(f32, u32)> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { scan_avx2(codes, query, space) };
    }
    scan_portable(codes, query, space)
}

/// The same loop compiled for AVX2, which vectorises the byte products 32 at a time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn scan_avx2(codes: &Codes, query: &[i8], space: Option<u32>) -> Vec<(f32, u32)> {
    scan_portable(codes, query, space)
}

#[inline(always)]
fn scan_portable(codes: &Codes, query: &[i8], space: Option<u32>) -> Vec<(f32, u32)> {
    let dim = codes.dim;
    let mut scored = Vec::with_capacity(codes.len());
    for (i, row) in codes.codes.chunks_exact(dim).enumerate() {
        if space.is_some_and(|s| codes.space_of[i] != s) {
            continue;
        }
        let dot: i32 = row
            .iter()
            .zip(query)
            .map(|(&a, &b)| i32::from(a as i16 * b as i16))
            .sum();
        scored.push((dot as f32 * codes.scales[i], i as u32));
    }
    scored
}

/// The codes and when they were read. Off (never read) when `max_rows` is 0 or the store
/// holds more current memories than that: searches then go through Lance's ANN index.
pub(super) struct Nearest {
    max_rows: usize,
    codes: RwLock<Option<Codes>>,
    /// The memories table's version the codes were read at.
    read_at: AtomicU64,
    /// Rows written since then that have no row id yet.
    unplaced: AtomicU64,
    /// Set while the codes are read again: rows written meanwhile are kept here too, and
    /// join the new codes.
    reading: AtomicBool,
    /// Counts the invalidations: codes read while one happened are not held.
    invalidated: AtomicU64,
    meanwhile: std::sync::Mutex<Vec<(String, String, Vec<f32>)>>,
}

impl Nearest {
    pub fn new(max_rows: usize) -> Self {
        Self {
            max_rows,
            codes: RwLock::new(None),
            read_at: AtomicU64::new(0),
            unplaced: AtomicU64::new(0),
            reading: AtomicBool::new(false),
            invalidated: AtomicU64::new(0),
            meanwhile: Default::default(),
        }
    }

    /// Candidates for `limit` results, or None while there are no codes.
    pub fn nearest(
        &self,
        vector: &[f32],
        namespace: Option<&str>,
        limit: usize,
    ) -> Option<Vec<Near>> {
        let codes = self.codes.read().unwrap_or_else(|e| e.into_inner());
        Some(codes.as_ref()?.nearest(vector, namespace, limit))
    }

    /// Rows the writer just committed: the current ones of `model` join the codes.
    pub fn written(&self, rows: &[MemoryRecord], model: &str) {
        let new: Vec<&MemoryRecord> = rows
            .iter()
            .filter(|r| r.valid_to.is_none() && r.embed_model == model && !r.vector.is_empty())
            .collect();
        if new.is_empty() {
            return;
        }
        let mut guard = self.codes.write().unwrap_or_else(|e| e.into_inner());
        if let Some(codes) = guard.as_mut() {
            if codes.len() + new.len() > self.max_rows {
                tracing::info!(
                    "more than {} current memories: vector search goes through the ANN index \
                     (store.vectors_in_memory_max_rows)",
                    self.max_rows
                );
                *guard = None;
                return;
            }
            for r in &new {
                codes.push(&r.id, None, &r.namespace, &r.vector);
            }
            self.unplaced.fetch_add(new.len() as u64, Ordering::Relaxed);
        }
        if self.reading.load(Ordering::Acquire) {
            let mut meanwhile = self.meanwhile.lock().unwrap_or_else(|e| e.into_inner());
            meanwhile.extend(
                new.iter()
                    .map(|r| (r.id.clone(), r.namespace.clone(), r.vector.clone())),
            );
        }
    }

    /// Whether the codes should be read again: none are held, the table changed since, or
    /// rows wait for their row ids.
    fn due(&self, version: u64) -> bool {
        self.rows().is_none()
            || version != self.read_at.load(Ordering::Relaxed)
            || self.unplaced.load(Ordering::Relaxed) > 0
    }

    /// Drops the codes after rows were closed, deleted or re-embedded: until the next pass
    /// reads them again, the ANN index serves searches.
    pub fn invalidate(&self) {
        let mut guard = self.codes.write().unwrap_or_else(|e| e.into_inner());
        self.invalidated.fetch_add(1, Ordering::AcqRel);
        *guard = None;
    }

    /// Holds `codes`, read at table `version`, in place of the old, with the rows written
    /// while they were read that they miss. Under the lock the writer takes to add rows, so
    /// none is added to the old codes after the new were made. Returns the rows held, their
    /// bytes and whether these are the first codes held.
    /// None when an invalidation came while they were read (they may predate it): the
    /// next pass reads them again.
    fn replace(
        &self,
        mut codes: Codes,
        version: u64,
        invalidations: u64,
    ) -> Option<(usize, usize, bool)> {
        let mut guard = self.codes.write().unwrap_or_else(|e| e.into_inner());
        self.reading.store(false, Ordering::Release);
        let meanwhile =
            std::mem::take(&mut *self.meanwhile.lock().unwrap_or_else(|e| e.into_inner()));
        if self.invalidated.load(Ordering::Acquire) != invalidations {
            *guard = None;
            return None;
        }
        let have: HashSet<&str> = codes.ids.iter().map(|id| &**id).collect();
        let late: Vec<_> = meanwhile
            .into_iter()
            .filter(|(id, _, _)| !have.contains(id.as_str()))
            .collect();
        for (id, namespace, vector) in &late {
            codes.push(id, None, namespace, vector);
        }
        self.unplaced.store(late.len() as u64, Ordering::Relaxed);
        self.read_at.store(version, Ordering::Relaxed);
        let first = guard.is_none();
        let held = (codes.len(), codes.bytes(), first);
        *guard = Some(codes);
        Some(held)
    }

    /// Whether every row held has its row id (none waits for the codes to be read again).
    pub fn placed(&self) -> bool {
        self.unplaced.load(Ordering::Relaxed) == 0
    }

    /// Current memories held, if any codes are.
    pub fn rows(&self) -> Option<usize> {
        let codes = self.codes.read().unwrap_or_else(|e| e.into_inner());
        codes.as_ref().map(Codes::len)
    }
}

/// The columns a candidate is taken with: what ranking reads, whether it is still current,
/// and its stored vector for the exact distance.
fn taken_columns() -> Vec<&'static str> {
    let mut columns = RANKING_COLUMNS.to_vec();
    columns.extend(["namespace", "valid_to", "vector"]);
    columns
}

impl Store {
    /// The vector leg from the codes held in memory: the `limit` current memories of the
    /// configured model nearest `vector` (of `namespace`, or all), as [`Store::vector_search`]
    /// answers them — or None when no codes are held (searches then use the ANN index).
    pub async fn nearest_held(
        &self,
        vector: &[f32],
        namespace: Option<&str>,
        limit: usize,
    ) -> Result<Option<Vec<Scored>>, StoreError> {
        let Some(near) = self.nearest.nearest(vector, namespace, limit) else {
            return Ok(None);
        };
        let mut found: Vec<Scored> = Vec::with_capacity(near.len());
        let row_ids: Vec<u64> = near.iter().filter_map(|n| n.row_id).collect();
        if !row_ids.is_empty() {
            let take = self
                .memories
                .take_row_ids(row_ids)
                .select(Select::columns(&taken_columns()))
                .with_row_id();
            match read(&take).await {
                Ok(batches) => found.extend(scored(&self.sealing, &batches, None)?),
                Err(e) => tracing::debug!("taking candidates by row id failed; reading by id: {e}"),
            }
        }
        // A row id that now holds another row (after a compaction) finds nothing it wanted.
        let wanted: HashMap<&str, &Near> = near.iter().map(|n| (n.id.as_str(), n)).collect();
        found.retain(|s| wanted.get(s.record.id.as_str()).map(|n| n.row_id) == Some(s.row_id));
        let have: HashSet<String> = found.iter().map(|s| s.record.id.clone()).collect();
        let missing: Vec<String> = near
            .iter()
            .filter(|n| !have.contains(&n.id))
            .map(|n| n.id.clone())
            .collect();
        if !missing.is_empty() {
            let query = self
                .memories
                .query()
                .filtered(
                    &current()
                        .and(col("embed_model").eq(&self.embed_model))
                        .and(col("id").one_of(&missing)),
                )
                .select(Select::columns(&taken_columns()))
                .with_row_id();
            found.extend(scored(&self.sealing, &read(&query).await?, None)?);
        }
        found.retain(|s| {
            s.record.valid_to.is_none() && namespace.is_none_or(|n| s.record.namespace == n)
        });
        for s in &mut found {
            s.raw = 1.0 - crate::linalg::cosine(vector, &s.record.vector);
            // Ranking needs no vector, and fusion keeps every candidate a while.
            s.record.vector = Vec::new();
        }
        found.sort_by(|a, b| a.raw.total_cmp(&b.raw));
        Ok(Some(found))
    }

    /// Reads the codes again if the memories changed since they were read (or were never
    /// read); returns the rows held, or None when they are off or too many.
    pub async fn refresh_nearest(&self) -> Result<Option<usize>, StoreError> {
        let nearest = &self.nearest;
        if nearest.max_rows == 0 {
            return Ok(None);
        }
        let version = self.memories.version().await?;
        if !nearest.due(version) {
            return Ok(nearest.rows());
        }
        let started = std::time::Instant::now();
        let current_rows = self.counts.get().total as usize;
        if current_rows > nearest.max_rows {
            *nearest.codes.write().unwrap_or_else(|e| e.into_inner()) = None;
            nearest.read_at.store(version, Ordering::Relaxed);
            return Ok(None);
        }
        let invalidations = nearest.invalidated.load(Ordering::Acquire);
        nearest.reading.store(true, Ordering::Release);
        let read = self.read_codes().await;
        let Ok(codes) = read else {
            nearest.reading.store(false, Ordering::Release);
            nearest
                .meanwhile
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
            // Never a table version: read again next pass.
            nearest.read_at.store(u64::MAX, Ordering::Relaxed);
            return read.map(|_| None);
        };
        let Some((rows, bytes, first)) = nearest.replace(codes, version, invalidations) else {
            return Ok(None);
        };
        let took = started.elapsed().as_secs_f64();
        if first {
            tracing::info!(
                "vectors in memory: {rows} current memories ({:.1} MB) read in {took:.2} s",
                bytes as f64 / 1e6
            );
        } else {
            tracing::debug!("vectors in memory read again: {rows} rows in {took:.2} s");
        }
        Ok(Some(rows))
    }

    /// The codes of every current memory of the configured model, batch by batch.
    async fn read_codes(&self) -> Result<Codes, StoreError> {
        use futures::TryStreamExt;
        let query = self
            .memories
            .query()
            .filtered(&current().and(col("embed_model").eq(&self.embed_model)))
            .select(Select::columns(&["id", "namespace", "vector"]))
            .with_row_id();
        let mut codes = Codes::new(self.dim);
        // Grown by doubling, the codes of 100k memories took 74 MB instead of 46.
        codes.reserve(self.counts.get().total as usize);
        let mut batches = query.execute().await?;
        while let Some(batch) = batches.try_next().await? {
            let strings = |name: &str| {
                batch
                    .column_by_name(name)
                    .and_then(|c| c.as_any().downcast_ref::<StringArray>().cloned())
                    .ok_or_else(|| StoreError::Schema(format!("no {name} column")))
            };
            let (ids, spaces) = (strings("id")?, strings("namespace")?);
            let row_ids = batch
                .column_by_name("_rowid")
                .and_then(|c| c.as_any().downcast_ref::<UInt64Array>().cloned())
                .ok_or_else(|| StoreError::Schema("no _rowid column".into()))?;
            let vectors = batch
                .column_by_name("vector")
                .and_then(|c| c.as_any().downcast_ref::<FixedSizeListArray>().cloned())
                .ok_or_else(|| StoreError::Schema("no vector column".into()))?;
            let values = vectors
                .values()
                .as_any()
                .downcast_ref::<Float32Array>()
                .ok_or_else(|| StoreError::Schema("vectors are not f32".into()))?
                .clone();
            let dim = vectors.value_length() as usize;
            for i in 0..batch.num_rows() {
                if vectors.is_null(i) {
                    continue;
                }
                let start = vectors.value_offset(i) as usize;
                codes.push(
                    ids.value(i),
                    Some(row_ids.value(i)),
                    spaces.value(i),
                    &values.values()[start..start + dim],
                );
            }
        }
        codes.shrink_to_fit();
        Ok(codes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic spread of unit vectors (xorshift), like embeddings in having no
    /// structure the codes could exploit.
    fn vectors(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut s = seed;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 20_001) as f32 / 10_000.0 - 1.0
        };
        (0..n)
            .map(|_| {
                let mut v: Vec<f32> = (0..dim).map(|_| next()).collect();
                crate::linalg::l2_normalize(&mut v);
                v
            })
            .collect()
    }

    fn exact(rows: &[Vec<f32>], q: &[f32], k: usize) -> Vec<usize> {
        let mut all: Vec<(f32, usize)> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| (crate::linalg::cosine(q, r), i))
            .collect();
        all.sort_by(|a, b| b.0.total_cmp(&a.0));
        all.into_iter().take(k).map(|(_, i)| i).collect()
    }

    #[test]
    fn the_codes_find_the_exact_nearest_neighbours() {
        let dim = 64;
        let rows = vectors(3000, dim, 7);
        let mut codes = Codes::new(dim);
        for (i, v) in rows.iter().enumerate() {
            codes.push(&i.to_string(), Some(i as u64), "ns", v);
        }
        let (mut hit, mut total) = (0, 0);
        for q in vectors(50, dim, 99) {
            let truth = exact(&rows, &q, 10);
            // As a search asks: 50 candidates for 10 results, ranked exactly afterwards.
            let found: HashSet<String> = codes
                .nearest(&q, Some("ns"), 50)
                .into_iter()
                .map(|n| n.id)
                .collect();
            hit += truth
                .iter()
                .filter(|i| found.contains(&i.to_string()))
                .count();
            total += truth.len();
        }
        assert_eq!(
            hit, total,
            "every exact top-10 row is among the 50 candidates"
        );
    }

    #[test]
    fn the_best_candidate_comes_first_and_namespaces_keep_apart() {
        let dim = 8;
        let mut codes = Codes::new(dim);
        let unit = |i: usize| {
            let mut v = vec![0.05; dim];
            v[i] = 1.0;
            v
        };
        codes.push("a0", Some(0), "a", &unit(0));
        codes.push("a1", None, "a", &unit(1));
        codes.push("b0", Some(2), "b", &unit(0));
        let near = codes.nearest(&unit(0), Some("a"), 2);
        assert_eq!(
            near,
            vec![
                Near {
                    id: "a0".into(),
                    row_id: Some(0)
                },
                Near {
                    id: "a1".into(),
                    row_id: None
                }
            ]
        );
        assert_eq!(codes.nearest(&unit(0), None, 3).len(), 3);
        assert!(codes.nearest(&unit(0), Some("c"), 3).is_empty());
        // A zero vector (or one of another dimension) is held but near nothing.
        codes.push("z", Some(3), "a", &[0.0; 8]);
        codes.push("short", Some(4), "a", &[1.0; 3]);
        assert_eq!(codes.len(), 4);
        assert_eq!(codes.nearest(&unit(0), Some("a"), 1)[0].id, "a0");
    }

    #[test]
    fn the_scale_turns_a_code_product_into_the_cosine() {
        let rows = vectors(20, 384, 3);
        let mut codes = Vec::new();
        let scales: Vec<f32> = rows.iter().map(|r| quantize(r, &mut codes)).collect();
        let mut q = Vec::new();
        let q_scale = quantize(&rows[0], &mut q);
        for (i, row) in codes.chunks_exact(384).enumerate() {
            let dot: i32 = row.iter().zip(&q).map(|(&a, &b)| a as i32 * b as i32).sum();
            let approx = dot as f32 * scales[i] * q_scale;
            let truth = crate::linalg::cosine(&rows[0], &rows[i]);
            assert!((approx - truth).abs() < 0.01, "{approx} vs {truth}");
        }
    }

    fn unit(i: usize) -> Vec<f32> {
        let mut v = vec![0.1; 4];
        v[i] = 1.0;
        v
    }

    fn row(id: &str, i: usize) -> MemoryRecord {
        let mut r = crate::store::schema::tests::record(id, "text", 4);
        r.vector = unit(i);
        r
    }

    async fn nearest_ids(store: &Store, i: usize, namespace: Option<&str>) -> Vec<String> {
        let found = store.nearest_held(&unit(i), namespace, 10).await.unwrap();
        found.unwrap().into_iter().map(|s| s.record.id).collect()
    }

    #[tokio::test]
    async fn a_search_finds_what_was_written_and_never_what_was_forgotten_or_replaced() {
        use crate::store::{col, WriteOp};
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::test_store(dir.path()).await;
        // Until the codes are read, the ANN index answers.
        assert!(store
            .nearest_held(&unit(0), None, 5)
            .await
            .unwrap()
            .is_none());
        let first = vec![row("a", 0), row("b", 1), row("c", 2)];
        let writer = store.writer();
        writer.submit(WriteOp::Insert(first.clone())).await.unwrap();
        assert_eq!(store.refresh_nearest().await.unwrap(), Some(3));
        let found = store
            .nearest_held(&unit(0), Some("default"), 2)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found[0].record.id, "a");
        assert!(
            found[0].raw.abs() < 1e-6,
            "the exact distance: {}",
            found[0].raw
        );
        assert_eq!(found.len(), 2);
        assert!(nearest_ids(&store, 0, Some("elsewhere")).await.is_empty());

        // Written after the read: found at once, by id.
        writer
            .submit(WriteOp::Insert(vec![row("d", 3)]))
            .await
            .unwrap();
        assert_eq!(nearest_ids(&store, 3, None).await[0], "d");
        // A new version replaces the old in the answers.
        let mut old = first[2].clone();
        old.valid_to = Some(5);
        let mut new = row("c2", 2);
        new.lineage = "c".into();
        let (old, new) = (Box::new(old), Box::new(new));
        writer
            .submit(WriteOp::Supersede { old, new })
            .await
            .unwrap();
        let ids = nearest_ids(&store, 2, None).await;
        assert_eq!(ids[0], "c2");
        assert!(!ids.contains(&"c".to_string()), "{ids:?}");
        // Rows moved by a compaction are read by id until the codes are read again.
        store.compact(&store.memories).await.unwrap();
        let mut ids = nearest_ids(&store, 1, None).await;
        assert_eq!(ids[0], "b");
        ids.sort();
        assert_eq!(ids, ["a", "b", "c2", "d"]);
        assert_eq!(store.refresh_nearest().await.unwrap(), Some(4));
        assert!(store.nearest.placed());
        assert_eq!(nearest_ids(&store, 3, None).await[0], "d");
        // A forget drops the codes (the ANN index serves) until they are read again.
        let forget = WriteOp::Delete(col("id").eq("a"));
        writer.submit(forget).await.unwrap();
        assert!(store
            .nearest_held(&unit(0), None, 5)
            .await
            .unwrap()
            .is_none());
        assert_eq!(store.refresh_nearest().await.unwrap(), Some(3));
        assert!(!nearest_ids(&store, 0, None)
            .await
            .contains(&"a".to_string()));
    }

    #[tokio::test]
    async fn past_the_row_limit_no_codes_are_held() {
        use crate::store::WriteOp;
        let dir = tempfile::tempdir().unwrap();
        let config = crate::config::StoreConfig {
            vectors_in_memory_max_rows: 2,
            ..Default::default()
        };
        let store = Store::open(dir.path(), 4, "test", &config, &Default::default())
            .await
            .unwrap();
        let writer = store.writer();
        writer
            .submit(WriteOp::Insert(vec![row("a", 0)]))
            .await
            .unwrap();
        assert_eq!(store.refresh_nearest().await.unwrap(), Some(1));
        writer
            .submit(WriteOp::Insert(vec![row("b", 1), row("c", 2)]))
            .await
            .unwrap();
        assert!(store
            .nearest_held(&unit(0), None, 5)
            .await
            .unwrap()
            .is_none());
        assert_eq!(store.refresh_nearest().await.unwrap(), None);
    }

    #[test]
    fn rows_written_while_the_codes_are_read_join_them_and_an_invalidation_voids_them() {
        let nearest = Nearest::new(10);
        let invalidations = nearest.invalidated.load(Ordering::Acquire);
        nearest.reading.store(true, Ordering::Release);
        nearest.written(&[row("late", 1)], "test");
        let (rows, _, first) = nearest.replace(Codes::new(4), 7, invalidations).unwrap();
        assert_eq!((rows, first), (1, true));
        assert!(!nearest.placed(), "the late row waits for its row id");
        assert_eq!(nearest.nearest(&unit(1), None, 1).unwrap()[0].id, "late");

        let invalidations = nearest.invalidated.load(Ordering::Acquire);
        nearest.reading.store(true, Ordering::Release);
        nearest.invalidate();
        assert!(nearest.replace(Codes::new(4), 8, invalidations).is_none());
        assert_eq!(
            nearest.rows(),
            None,
            "codes read across a forget are not held"
        );
    }
}
