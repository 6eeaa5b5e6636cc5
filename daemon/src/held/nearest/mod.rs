//! The current memories' vectors held in memory at 8 bits a component, scanned whole for
//! the vector leg of a search, with what ranking reads of each. A scan of every held vector
//! is several times faster than Lance's ANN index at 100k memories (no partitions, prefilter
//! or refine read) and finds the exact neighbours but for 8-bit rounding, which what the
//! rounding left (held at 4 bits) then corrects for the few candidates (`docs/benchmarks.md`).
//! Past `store.advanced.vectors_in_memory_max_rows` two bits a component of each vector's
//! rotation are held and scanned (`codes/signs.rs`, `store.advanced.vector_signs`), or with
//! that off the ANN index serves, slower and with more of LanceDB's caches held.
//!
//! Lance stays the truth. Only current rows are held: new memories join as they are written,
//! a new version takes its old version's place, and writes that close, delete or re-embed
//! rows in bulk drop the codes at once — until they are read again the ANN index serves,
//! rather than codes that propose rows gone or vectors changed. Patches by id of current
//! rows' salience, strength, fade marks or accesses (decay, dedup's merges) are set in the
//! codes as they commit (`patched.rs`). Other bulk changes to a ranking column leave the
//! codes but not their ranking values: the candidates' rows are then taken by row id (or
//! read by id, where a row moved) and ranked by their stored vectors. Other changes
//! (updates, consolidation) move rows, and the next maintenance pass reads again the fragments
//! of the table they changed (`refresh.rs`); a compaction's moves are followed (`moved.rs`).

mod by_namespace;
mod codes;
mod moved;
mod patched;
mod refresh;
mod text;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::RwLock;

use codes::Codes;
use lance::table::format::Fragment;
pub use patched::HeldPatch;

use crate::held::ranking::{known_when_held, with_held, Filled};
use crate::held::Held;
use crate::store::memories::{Near, Scored, RANKING_COLUMNS};
use crate::store::schema::answered_columns;
use crate::store::sql::{col, Pred};
use crate::store::{MemoryRecord, StoreError};

/// Vectors one scan of the codes answers at once in [`Held::nearest_held_each`]: more
/// share the scan's loop, but hold the thread longer between searches.
const QUERIES_A_SCAN: usize = 16;

/// The codes and when they were read. Past `max_vector_rows` current memories they are
/// signed (two bits a component held) with `signs`; without, where no file for their rest
/// can be made, or where `max_vector_rows` is 0, they hold no vectors (the vector leg goes
/// through Lance's ANN index, its hits ranked from the values held). Off (never read) when
/// `max_rows` is 0 or the store holds more current memories than that: searches then read
/// every candidate's ranking columns from Lance.
pub(super) struct Nearest {
    max_vector_rows: usize,
    /// Whether codes past `max_vector_rows` are signed (`store.advanced.vector_signs`), or hold no
    /// vectors.
    signs: bool,
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
    /// Counts the writes that changed held columns other than by rows: values read while
    /// one happened are not used.
    ranking_changes: AtomicU64,
    meanwhile: std::sync::Mutex<Vec<Meanwhile>>,
    /// The memories table's fragments the codes were read from, by id (`refresh.rs`).
    read_from: std::sync::Mutex<HashMap<u64, Fragment>>,
}

/// A write made while the codes were read, applied to them after.
enum Meanwhile {
    /// A current row (with its content and metadata, for its words and answers) and its
    /// entities as stored.
    Held(Box<MemoryRecord>, Vec<String>),
    Retired(String),
    /// Values a patch set in place (`patched.rs`): the read may have met them before.
    Patched(Box<HeldPatch>),
    /// The fragments a commit the codes took whole changed, each before and after it.
    Taken(Vec<(Fragment, Fragment)>),
    /// The rows a compaction moved (`moved.rs`).
    Moved(Vec<crate::store::beside::Moved>),
}

/// What the codes propose for a search.
pub enum Proposed {
    /// Candidates ranked from the values held, at their approximate cosine.
    Ranked(Vec<Scored>),
    /// Rows whose ranking columns must be read (the values held are stale).
    Rows(Vec<Near>),
}

impl Proposed {
    /// The rows `found` (each a cosine and a row of `codes`): ranked from the values held
    /// where they are exact.
    fn of(codes: &Codes, found: Vec<(f32, u32)>) -> Self {
        let found = found.into_iter();
        if codes.fresh {
            Self::Ranked(found.map(|(cosine, i)| codes.scored(i, cosine)).collect())
        } else {
            Self::Rows(found.map(|(_, i)| codes.near(i)).collect())
        }
    }
}

impl Nearest {
    pub fn new(max_vector_rows: usize, signs: bool, max_rows: usize) -> Self {
        Self {
            max_vector_rows: max_vector_rows.min(max_rows),
            signs,
            max_rows,
            codes: RwLock::new(None),
            read_at: AtomicU64::new(0),
            unplaced: AtomicU64::new(0),
            reading: AtomicBool::new(false),
            invalidated: AtomicU64::new(0),
            ranking_changes: AtomicU64::new(0),
            meanwhile: Default::default(),
            read_from: Default::default(),
        }
    }

    /// Candidates for `limit` results, or None while no vectors are held.
    pub fn nearest(
        &self,
        vector: &[f32],
        namespace: Option<&str>,
        limit: usize,
    ) -> Option<Proposed> {
        let codes = self.codes.read().unwrap_or_else(|e| e.into_inner());
        let codes = codes.as_ref().filter(|c| c.has_vectors())?;
        Some(Proposed::of(codes, codes.nearest(vector, namespace, limit)))
    }

    /// [`Nearest::nearest`] for each vector of `asked` at once (see [`Codes::nearest_each`]).
    pub fn nearest_each(
        &self,
        asked: &[(&[f32], Option<&str>)],
        limit: usize,
        within: f32,
    ) -> Option<Vec<Proposed>> {
        let codes = self.codes.read().unwrap_or_else(|e| e.into_inner());
        let codes = codes.as_ref().filter(|c| c.has_vectors())?;
        let found = codes.nearest_each(asked, limit, within).into_iter();
        Some(found.map(|f| Proposed::of(codes, f)).collect())
    }

    /// Asks the kernel to hold the codes' files in its cache, those that fit in `room` bytes;
    /// returns the bytes asked for.
    pub fn keep_files_cached(&self, room: u64) -> u64 {
        let codes = self.codes.read().unwrap_or_else(|e| e.into_inner());
        codes.as_ref().map_or(0, |c| c.keep_files_cached(room))
    }

    /// Candidates for `limit` results of a text search for `terms` (the analyzer's tokens of
    /// the query), ranked from the values held at their BM25 scores; None while no words
    /// or no exact values are held, when not all `current` memories are (some of another
    /// model wait to be embedded again: only the full-text index finds them), or when the
    /// words held are not `hashed` as the query's are (encryption was turned on since).
    pub fn text(
        &self,
        terms: &[String],
        namespace: Option<&str>,
        limit: usize,
        current: u64,
        hashed: bool,
    ) -> Option<Vec<Scored>> {
        let codes = self.codes.read().unwrap_or_else(|e| e.into_inner());
        let codes = codes
            .as_ref()
            .filter(|c| c.fresh && c.len() as u64 == current && c.words_hashed == hashed)?;
        let found = codes.best_for_words(terms, namespace, limit)?;
        Some(
            found
                .into_iter()
                .map(|(score, i)| Scored {
                    raw: score,
                    ..codes.scored(i, 0.0)
                })
                .collect(),
        )
    }

    /// What is held for each of `keys`, found by `index` (None for one not held), or None
    /// when no exact values are held.
    fn held_by<K>(
        &self,
        keys: &[K],
        index: impl Fn(&Codes, &K) -> Option<usize>,
    ) -> Option<Vec<Option<Scored>>> {
        self.held_as(keys, index, |codes, i| codes.scored(i as u32, 0.0))
    }

    /// `value` of the row held for each of `keys`, found by `index` (None for one not
    /// held), or None when no exact values are held.
    fn held_as<K, T>(
        &self,
        keys: &[K],
        index: impl Fn(&Codes, &K) -> Option<usize>,
        value: impl Fn(&Codes, usize) -> T,
    ) -> Option<Vec<Option<T>>> {
        let codes = self.codes.read().unwrap_or_else(|e| e.into_inner());
        let codes = codes.as_ref().filter(|c| c.fresh)?;
        Some(
            keys.iter()
                .map(|k| Some(value(codes, index(codes, k)?)))
                .collect(),
        )
    }

    /// Each of `ids` with the row id held for it (None where it is not held). The codes'
    /// row ids follow every write and compaction, stale values or not; a take checks the id
    /// it finds there all the same.
    pub fn row_ids_of(&self, ids: &[&str]) -> Vec<Near> {
        let codes = self.codes.read().unwrap_or_else(|e| e.into_inner());
        ids.iter()
            .map(|&id| Near {
                id: id.to_string(),
                row_id: codes
                    .as_ref()
                    .and_then(|c| c.near(c.index_of(id)? as u32).row_id),
            })
            .collect()
    }

    /// The ranking columns of each of `ids` held (None for a row not held), or None when no
    /// exact values are held.
    pub fn held(&self, ids: &[&str]) -> Option<Vec<Option<MemoryRecord>>> {
        let held = self.held_by(ids, |codes, id| codes.index_of(id))?;
        Some(held.into_iter().map(|s| Some(s?.record)).collect())
    }

    /// The ranking columns of the current version of each of `lineages` held (None for one
    /// not held), or None when no exact values are held.
    pub fn held_lineages(&self, lineages: &[String]) -> Option<Vec<Option<Scored>>> {
        self.held_by(lineages, |codes, l| codes.index_of_lineage(l))
    }

    /// What is held at each of `hits`' row ids (None for a hit not held there), with the
    /// hit's score, or None when no exact values are held.
    pub fn held_at_each(&self, hits: &[Scored]) -> Option<Vec<Option<Scored>>> {
        let held = self.held_by(hits, |codes, hit| codes.index_at(hit.row_id?))?;
        Some(
            held.into_iter()
                .zip(hits)
                .map(|(s, hit)| Some(Scored { raw: hit.raw, ..s? }))
                .collect(),
        )
    }

    /// `hits` (row ids and scores) with the ranking columns held for each, or None when one
    /// is not held at its row id (or no exact values are held).
    pub fn held_at(&self, hits: &[Scored]) -> Option<Vec<Scored>> {
        self.held_at_each(hits)?.into_iter().collect()
    }

    /// Whether exact ranking values are held (a text search then reads only ids).
    pub fn holds_ranking(&self) -> bool {
        let codes = self.codes.read().unwrap_or_else(|e| e.into_inner());
        codes.as_ref().is_some_and(|c| c.fresh)
    }

    /// A write changed held columns other than by whole rows: the values held are not used
    /// until the codes are read again.
    pub fn ranking_changed(&self) {
        let mut guard = self.codes.write().unwrap_or_else(|e| e.into_inner());
        self.ranking_changes.fetch_add(1, Ordering::AcqRel);
        if let Some(codes) = guard.as_mut() {
            codes.fresh = false;
        }
    }

    /// Rows the writer just committed: the current ones of `model` join the codes (their
    /// entities as stored: `stored_entity` keys each in an encrypted store; their text as
    /// the full-text index has it: `words` of their content), and those closed leave them.
    pub fn written(
        &self,
        rows: &[MemoryRecord],
        model: &str,
        stored_entity: &dyn Fn(&str) -> String,
        words: &dyn Fn(&str) -> Vec<String>,
    ) {
        let closed: Vec<&str> = rows
            .iter()
            .filter(|r| r.valid_to.is_some())
            .map(|r| r.id.as_str())
            .collect();
        let new: Vec<(&MemoryRecord, Vec<String>)> = rows
            .iter()
            .filter(|r| r.valid_to.is_none() && r.embed_model == model && !r.vector.is_empty())
            .map(|r| (r, r.entities.iter().map(|e| stored_entity(e)).collect()))
            .collect();
        self.retired(&closed);
        if new.is_empty() {
            return;
        }
        let mut guard = self.codes.write().unwrap_or_else(|e| e.into_inner());
        if let Some(codes) = guard.as_mut() {
            let rows = codes.len() + new.len();
            if rows > self.max_rows {
                tracing::info!(
                    "more than {} current memories: their ranking values are read from the \
                     store (store.advanced.ranking_in_memory_max_rows)",
                    self.max_rows
                );
                *guard = None;
                return;
            }
            if codes.has_vectors() && !codes.is_signed() && rows > self.max_vector_rows {
                tracing::info!(
                    "more than {} current memories: vector search goes through the ANN index{} \
                     (store.advanced.vectors_in_memory_max_rows)",
                    self.max_vector_rows,
                    if self.signs {
                        " until the next maintenance pass holds two bits a component of each"
                    } else {
                        ""
                    }
                );
                codes.drop_vectors();
            }
            for (r, entities) in &new {
                codes.push(r, None, entities, || words(&r.content));
            }
            self.unplaced.fetch_add(new.len() as u64, Ordering::Relaxed);
        }
        if self.reading.load(Ordering::Acquire) {
            let mut meanwhile = self.meanwhile.lock().unwrap_or_else(|e| e.into_inner());
            meanwhile.extend(
                new.into_iter()
                    .map(|(r, entities)| Meanwhile::Held(Box::new(r.clone()), entities)),
            );
        }
    }

    /// Rows closed by id leave the codes (and the codes being read, once they are placed).
    /// Dropping all the codes instead sent every search to the ANN index until the next
    /// pass had read them again: at 1M memories, each of dedup's merges.
    pub fn retired(&self, ids: &[impl AsRef<str>]) {
        if ids.is_empty() {
            return;
        }
        // Held while the ids are kept for a read under way, which holds rows read under it.
        let mut guard = self.codes.write().unwrap_or_else(|e| e.into_inner());
        if let Some(codes) = guard.as_mut() {
            ids.iter().for_each(|id| codes.retire(id.as_ref()));
        }
        if self.reading.load(Ordering::Acquire) {
            let mut meanwhile = self.meanwhile.lock().unwrap_or_else(|e| e.into_inner());
            meanwhile.extend(
                ids.iter()
                    .map(|id| Meanwhile::Retired(id.as_ref().to_string())),
            );
        }
    }

    /// Drops the codes after rows were closed, deleted or re-embedded: until the next pass
    /// reads them again, the ANN index serves searches.
    pub fn invalidate(&self) {
        let mut guard = self.codes.write().unwrap_or_else(|e| e.into_inner());
        self.invalidated.fetch_add(1, Ordering::AcqRel);
        *guard = None;
    }

    /// Whether every row held has its row id (none waits for the codes to be read again);
    /// true while none are held.
    pub fn placed(&self) -> bool {
        self.rows().is_none() || self.unplaced.load(Ordering::Relaxed) == 0
    }

    /// Bytes the codes take in memory, if any are held.
    pub fn bytes(&self) -> Option<usize> {
        let codes = self.codes.read().unwrap_or_else(|e| e.into_inner());
        codes.as_ref().map(Codes::bytes)
    }

    /// Current memories held, if any codes are.
    pub fn rows(&self) -> Option<usize> {
        let codes = self.codes.read().unwrap_or_else(|e| e.into_inner());
        codes.as_ref().map(Codes::len)
    }

    /// Whether the vectors held are signed (two bits a component in memory).
    pub fn signed(&self) -> bool {
        let codes = self.codes.read().unwrap_or_else(|e| e.into_inner());
        codes.as_ref().is_some_and(Codes::is_signed)
    }

    /// Current memories whose vectors are held, if any are.
    pub fn vector_rows(&self) -> Option<usize> {
        let codes = self.codes.read().unwrap_or_else(|e| e.into_inner());
        codes.as_ref().filter(|c| c.has_vectors()).map(Codes::len)
    }
}

/// The columns a candidate is taken with: what ranking reads, whether it is still current,
/// and (for the exact distance) its stored vector.
fn taken_columns(vector: bool) -> Vec<&'static str> {
    let mut columns = RANKING_COLUMNS.to_vec();
    columns.extend(["namespace", "valid_to"]);
    if vector {
        columns.push("vector");
    }
    columns
}

/// Candidates given by id and row id, as a take wants them.
fn near_of(candidates: &[(String, Option<u64>)]) -> Vec<Near> {
    candidates
        .iter()
        .map(|(id, row_id)| Near {
            id: id.clone(),
            row_id: *row_id,
        })
        .collect()
}

impl Held {
    /// The vector leg from what is held in memory: the `limit` current memories of the
    /// configured model nearest `vector` (of `namespace`, or all), as [`Store::vector_search`]
    /// answers them. Found by a scan of the codes where the vectors are held, and ranked
    /// from the values held when they are exact (at the codes' cosine, within ~0.005 of the
    /// exact one), else from the candidates' rows, at their exact distance. Where only the
    /// values are held, found by the ANN index asked of the namespace alone (`vector_by_namespace`).
    /// None when neither serves: the caller asks the ANN index with the filter.
    pub async fn nearest_held(
        &self,
        vector: &[f32],
        namespace: Option<&str>,
        limit: usize,
    ) -> Result<Option<Vec<Scored>>, StoreError> {
        match self.nearest.nearest(vector, namespace, limit) {
            None => self.vector_by_namespace(vector, namespace, limit).await,
            Some(proposed) => Ok(Some(self.proposed(proposed, vector, namespace).await?)),
        }
    }

    /// [`Held::nearest_held`] for each of `asked` (a vector and its namespace) at once,
    /// leaving out rows further than `within` where that saves work: with the codes' signs
    /// held, one scan of them finds the candidates of a few vectors at a time. None while
    /// no vectors are held.
    pub async fn nearest_held_each(
        &self,
        asked: &[(&[f32], &str)],
        limit: usize,
        within: f32,
    ) -> Result<Option<Vec<Vec<Scored>>>, StoreError> {
        let mut found = Vec::with_capacity(asked.len());
        for some in asked.chunks(QUERIES_A_SCAN) {
            let each: Vec<(&[f32], Option<&str>)> =
                some.iter().map(|&(v, n)| (v, Some(n))).collect();
            let Some(proposed) = self.nearest.nearest_each(&each, limit, within) else {
                return Ok(None);
            };
            for (proposed, &(vector, namespace)) in proposed.into_iter().zip(some) {
                found.push(self.proposed(proposed, vector, Some(namespace)).await?);
            }
            // A scan holds its thread for milliseconds: searches go between.
            tokio::task::yield_now().await;
        }
        Ok(Some(found))
    }

    /// What the codes proposed for `vector` in `namespace` (all when None), ranked: as
    /// found, or read from the store where the values held are stale.
    async fn proposed(
        &self,
        proposed: Proposed,
        vector: &[f32],
        namespace: Option<&str>,
    ) -> Result<Vec<Scored>, StoreError> {
        let near = match proposed {
            Proposed::Ranked(found) => return Ok(found),
            Proposed::Rows(near) => near,
        };
        let mut found = self.store.take(&near, &taken_columns(true), true).await?;
        found.retain(|s| namespace.is_none_or(|n| s.record.namespace == n));
        for s in &mut found {
            s.raw = 1.0 - crate::linalg::cosine(vector, &s.record.vector);
            // Ranking needs no vector, and fusion keeps every candidate a while.
            s.record.vector = Vec::new();
        }
        found.sort_by(|a, b| a.raw.total_cmp(&b.raw));
        Ok(found)
    }

    /// The vector leg for a search whose only filter is the namespace (and current rows):
    /// from what is held in memory ([`Held::nearest_held`]), else through the ANN index
    /// with `predicate`, which must say the same.
    pub async fn nearest_current(
        &self,
        vector: &[f32],
        namespace: Option<&str>,
        predicate: &crate::store::Pred,
        limit: usize,
    ) -> Result<Vec<Scored>, StoreError> {
        match self.nearest_held(vector, namespace, limit).await? {
            Some(found) => Ok(found),
            None => {
                self.store
                    .vector_search(vector, predicate, limit, false)
                    .await
            }
        }
    }

    /// The rows retrieved candidates are answered with ([`answered_columns`]), by id: taken
    /// at their row ids, and read by id where a row moved since (a compaction or an update in
    /// between). A take reads each column apart in each fragment its rows lie in, so the rows
    /// held at their row ids are taken without the columns held, which are filled in from
    /// memory (at 100k memories, 10 rows took 1.8 ms rather than 2.7), and without the
    /// sparse columns none of them fills (`held.rs`; 2.4 ms rather than 3.5 in a search).
    /// Where the codes hold all they answer with (`codes/answers.rs`), nothing is taken.
    pub async fn complete(
        &self,
        candidates: &[(String, Option<u64>)],
    ) -> Result<HashMap<String, MemoryRecord>, StoreError> {
        let near = near_of(candidates);
        let held = self
            .nearest
            .held_as(
                &near,
                |codes, n| codes.index_of_at(&n.id, n.row_id?),
                |codes, i| (codes.answered(i), codes.filled(i)),
            )
            .unwrap_or_else(|| vec![None; near.len()]);
        let (mut at_held, mut whole) = (Vec::new(), Vec::new());
        let mut values: HashMap<String, MemoryRecord> = HashMap::new();
        let mut filled = Filled::default();
        for (n, h) in near.into_iter().zip(held) {
            match h {
                Some((record, fills)) => {
                    values.insert(n.id.clone(), record);
                    filled = filled.or(fills);
                    at_held.push(n);
                }
                None => whole.push(n),
            }
        }
        let answered = answered_columns(self.store.schema());
        let mut rows: HashMap<String, MemoryRecord> = HashMap::new();
        if !at_held.is_empty() {
            let unknown: Vec<&str> = answered
                .iter()
                .map(String::as_str)
                .filter(|c| !known_when_held(c) && filled.must_read(c))
                .collect();
            if unknown.is_empty() {
                for (id, values) in values {
                    let unread = MemoryRecord {
                        id: id.clone(),
                        ..Default::default()
                    };
                    rows.insert(id, with_held(unread, values, filled));
                }
            } else {
                // The id tells the row taken at a row id (see `Store::take`).
                let columns: Vec<&str> = std::iter::once("id").chain(unknown).collect();
                for taken in self.store.take(&at_held, &columns, false).await? {
                    if let Some(values) = values.remove(&taken.record.id) {
                        let row = with_held(taken.record, values, filled);
                        rows.insert(row.id.clone(), row);
                    }
                }
            }
        }
        if !whole.is_empty() {
            let columns: Vec<&str> = answered.iter().map(String::as_str).collect();
            let taken = self.store.take(&whole, &columns, false).await?;
            rows.extend(taken.into_iter().map(|s| (s.record.id.clone(), s.record)));
        }
        Ok(rows)
    }

    /// `columns` of the current rows of `ids`: taken at the row ids the codes hold for them,
    /// read by id where none is held or the row moved since. For passes that read many rows
    /// by id (dedup): through the id index, its pages filled Lance's index cache to ~99 MB
    /// at 1M memories.
    pub async fn current_by_id(
        &self,
        ids: &[&str],
        columns: &[&str],
    ) -> Result<Vec<MemoryRecord>, StoreError> {
        self.store
            .current_at(&self.nearest.row_ids_of(ids), columns)
            .await
    }

    /// The ranking columns of the current versions of `lineages` that `predicate` admits
    /// (memories the graph reached). With `plain` — the search's filter names at most a
    /// namespace (Some(None) for all) — they come from the values held, and only lineages
    /// not held are read.
    pub async fn current_of_lineages(
        &self,
        lineages: &[String],
        plain: Option<Option<&str>>,
        predicate: &Pred,
    ) -> Result<Vec<Scored>, StoreError> {
        let held = plain.and_then(|ns| Some((ns, self.nearest.held_lineages(lineages)?)));
        let Some((namespace, held)) = held else {
            let of_lineages = predicate.clone().and(col("lineage").one_of(lineages));
            return self.store.ranking_rows(&of_lineages).await;
        };
        let mut found = Vec::with_capacity(lineages.len());
        let mut unheld = Vec::new();
        for (lineage, held) in lineages.iter().zip(held) {
            match held {
                Some(s) if namespace.is_none_or(|n| s.record.namespace == n) => found.push(s),
                Some(_) => {}
                None => unheld.push(lineage.clone()),
            }
        }
        if !unheld.is_empty() {
            let of_lineages = predicate.clone().and(col("lineage").one_of(&unheld));
            found.extend(self.store.ranking_rows(&of_lineages).await?);
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::filter::current;
    use crate::store::rewrite::tests::{insert_each, memory};
    use crate::store::schema::tests::record;
    use crate::store::{Store, WriteOp};

    /// Retrievers read only the ranking columns and row ids; the results' whole rows are
    /// taken at those row ids, or read by id once a compaction has moved them.
    #[tokio::test]
    async fn rows_found_before_a_compaction_are_completed_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let held = crate::held::tests::held_store(dir.path()).await;
        let store = held.store();
        let rows: Vec<MemoryRecord> = (0..crate::store::indexes::SMALL_MEMORY_FRAGMENTS)
            .map(memory)
            .collect();
        insert_each(store, &rows).await;
        let token = rows[3].content.split(' ').next_back().unwrap().to_string();
        let hits = held
            .text_search(&token, &current(), 10, Some(None))
            .await
            .unwrap();
        assert_eq!(hits.len(), 1);
        assert!(hits[0].record.content.is_empty(), "ranking columns only");
        let wanted = vec![(hits[0].record.id.clone(), hits[0].row_id)];
        assert!(wanted[0].1.is_some());
        let taken = held.complete(&wanted).await.unwrap();
        assert_eq!(taken[&rows[3].id].content, rows[3].content);

        let done = store.maintain_indexes(1).await.unwrap();
        assert!(done.contains(&"compacted small fragments"), "{done:?}");
        let moved = held.complete(&wanted).await.unwrap();
        assert_eq!(moved.len(), 1);
        assert_eq!(moved[&rows[3].id].content, rows[3].content);
        assert_eq!(moved[&rows[3].id].namespace, rows[3].namespace);

        // Row ids out of order, all in fragments the compaction removed (one row each, so
        // fragments 5 and 3 held rows 5 and 3): Lance's take panicked on these.
        let wanted = vec![
            (rows[5].id.clone(), Some(5 << 32)),
            (rows[3].id.clone(), Some(3 << 32)),
        ];
        let moved = held.complete(&wanted).await.unwrap();
        assert_eq!(moved.len(), 2, "{:?}", moved.keys());
        assert_eq!(moved[&rows[5].id].content, rows[5].content);
    }

    /// Rows asked for by id are taken at the row ids the codes hold; one whose row id now
    /// holds another row, or no fragment, is read by id; a closed row is left out.
    #[tokio::test]
    async fn current_rows_are_taken_at_their_row_ids_or_read_by_id() {
        let dir = tempfile::tempdir().unwrap();
        let held = crate::held::tests::held_store(dir.path()).await;
        let store = held.store();
        let mut closed = record("closed", "text", 4);
        closed.valid_to = Some(1);
        let rows = vec![record("a", "text", 4), record("b", "text", 4), closed];
        store.writer().submit(WriteOp::Insert(rows)).await.unwrap();
        held.refresh_nearest().await.unwrap();
        let at = held.nearest.row_ids_of(&["a", "b", "closed", "unknown"]);
        let row_ids: Vec<bool> = at.iter().map(|n| n.row_id.is_some()).collect();
        assert_eq!(row_ids, [true, true, false, false]);
        let ids = |rows: Vec<MemoryRecord>| {
            let mut ids: Vec<String> = rows.into_iter().map(|r| r.id).collect();
            ids.sort();
            ids
        };
        let by_id = held
            .current_by_id(&["b", "a", "closed", "unknown"], &["salience"])
            .await
            .unwrap();
        assert_eq!(ids(by_id), ["a", "b"]);
        // "a" asked at b's row id, "b" at a fragment that does not exist.
        let astray = [
            Near {
                id: "a".into(),
                row_id: at[1].row_id,
            },
            Near {
                id: "b".into(),
                row_id: Some(77 << 32),
            },
        ];
        let found = store.current_at(&astray, &["salience"]).await.unwrap();
        assert_eq!(ids(found), ["a", "b"]);
    }

    fn unit(i: usize) -> Vec<f32> {
        let mut v = vec![0.1; 4];
        v[i] = 1.0;
        v
    }

    pub(super) fn row(id: &str, i: usize) -> MemoryRecord {
        let mut r = crate::store::schema::tests::record(id, "text", 4);
        r.vector = unit(i);
        r
    }

    /// The write that makes `new` the next version of `old`.
    pub(super) fn next_version(old: &MemoryRecord, mut new: MemoryRecord) -> crate::store::WriteOp {
        let mut old = old.clone();
        new.lineage = old.lineage.clone();
        new.valid_from = old.valid_from + 1;
        old.valid_to = Some(new.valid_from);
        old.superseded_by = Some(new.id.clone());
        crate::store::WriteOp::Supersede {
            old: Box::new(old),
            new: Box::new(new),
        }
    }

    /// The `limit` nearest `unit(i)` held, by id and row id, as `complete` wants them.
    pub(super) async fn nearest_wanted(
        held: &Held,
        i: usize,
        limit: usize,
    ) -> Vec<(String, Option<u64>)> {
        let found = held.nearest_held(&unit(i), None, limit).await.unwrap();
        found
            .unwrap()
            .iter()
            .map(|s| (s.record.id.clone(), s.row_id))
            .collect()
    }

    async fn nearest_ids(held: &Held, i: usize, namespace: Option<&str>) -> Vec<String> {
        let found = held.nearest_held(&unit(i), namespace, 10).await.unwrap();
        found.unwrap().into_iter().map(|s| s.record.id).collect()
    }

    /// Rows held at their row ids are answered from a take of the other columns and the
    /// values held: the same rows a take of every answered column gives.
    #[tokio::test]
    async fn rows_completed_from_held_values_are_the_rows_stored() {
        use crate::store::{col, WriteOp};
        use lancedb::arrow::arrow_array::{ArrayRef, Float32Array, Int64Array, StringArray};
        let dir = tempfile::tempdir().unwrap();
        let held = crate::held::tests::held_store(dir.path()).await;
        let store = held.store();
        let mut rows = vec![row("a", 0), row("b", 1), row("c", 2)];
        rows[1].lineage = "lineage-of-b".into();
        rows[1].namespace = "other".into();
        rows[1].event_start = Some(40);
        rows[1].event_end = Some(50);
        rows[2].occurred_at = None;
        rows[2].salience = 7.5;
        // Sparse columns filled in some rows only: the others' are not read. The answered
        // columns as the store writes them are held (b has nothing else to read).
        let factors = mnemo_protocol::understanding::SalienceFactors {
            novelty: 0.0509215,
            ..Default::default()
        };
        for r in &mut rows {
            (r.domain, r.tags, r.faded_at) = (None, Vec::new(), None);
            (r.action, r.outcome, r.duration_ms) = (None, None, None);
            r.content_hash = crate::store::schema::content_hash(&r.content);
            r.set_salience_factors(Some(&factors));
        }
        rows[1].access_count = 4;
        rows[0].tags = vec!["trip".into()];
        rows[0].source = Some("chat".into());
        rows[0].duration_ms = Some(1200);
        rows[2].is_summary = true;
        rows[2].summarizes = vec!["a".into()];
        rows[2].faded_at = Some(3);
        // Columns held with the vectors, in every form they take.
        rows[0].kind = mnemo_protocol::memory::MemoryKind::Preference;
        (rows[0].emotion_primary, rows[0].emotion_intensity) = (Some("joy".into()), Some(0.6));
        (rows[0].emotion_valence, rows[0].emotion_arousal) = (Some(-0.25), Some(0.75));
        rows[1].emotion_primary = Some("an emotion no lexicon names".into());
        rows[2].valid_from = rows[2].created_at + 5;
        let writer = store.writer();
        writer.submit(WriteOp::Insert(rows.clone())).await.unwrap();
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(3));
        let wanted = nearest_wanted(&held, 0, 3).await;
        assert!(wanted.iter().all(|(_, row_id)| row_id.is_some()));
        let near = near_of(&wanted);
        let answered = answered_columns(store.schema());
        let answered: Vec<&str> = answered.iter().map(String::as_str).collect();
        let whole = |taken: Vec<Scored>| -> HashMap<String, MemoryRecord> {
            taken
                .into_iter()
                .map(|s| (s.record.id.clone(), s.record))
                .collect()
        };
        let stored = whole(store.take(&near, &answered, false).await.unwrap());
        assert_eq!(stored.len(), 3);
        assert_eq!(stored["b"].lineage, "lineage-of-b");
        assert_eq!(stored["a"].tags, ["trip"]);
        assert_eq!(held.complete(&wanted).await.unwrap(), stored);
        let b_alone: Vec<(String, Option<u64>)> =
            wanted.iter().filter(|(id, _)| id == "b").cloned().collect();
        assert_eq!(held.complete(&b_alone).await.unwrap()["b"], stored["b"]);

        // A patch of b's `column` (as the access fold or the LLM's reading writes).
        let patch_b = |column: &'static str, value: ArrayRef| {
            let ids: ArrayRef = std::sync::Arc::new(StringArray::from(vec!["b"]));
            let batch = store.patch(vec![("id", ids), (column, value)]).unwrap();
            let only_if = None;
            writer.submit(WriteOp::Patch { batch, only_if })
        };
        // Of a sparse column: the rows that held it empty are read whole.
        let session = std::sync::Arc::new(StringArray::from(vec![Some("s9")]));
        patch_b("session_id", session).await.unwrap();
        let completed = held.complete(&b_alone).await.unwrap();
        assert_eq!(completed["b"].session_id.as_deref(), Some("s9"));
        // Of a column held with the vectors, the codes read again first.
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(3));
        let valence = std::sync::Arc::new(Float32Array::from(vec![Some(0.5)]));
        patch_b("emotion_valence", valence).await.unwrap();
        let b_now: Vec<(String, Option<u64>)> = held
            .nearest_held(&unit(1), None, 3)
            .await
            .unwrap()
            .unwrap()
            .into_iter()
            .filter(|s| s.record.id == "b")
            .map(|s| (s.record.id, s.row_id))
            .collect();
        let completed = held.complete(&b_now).await.unwrap();
        assert_eq!(completed["b"].emotion_valence, Some(0.5));
        // Of an answered column held, likewise.
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(3));
        let accesses = std::sync::Arc::new(Int64Array::from(vec![9]));
        patch_b("access_count", accesses).await.unwrap();
        let completed = held.complete(&b_now).await.unwrap();
        assert_eq!(completed["b"].access_count, 9);
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(3));
        let accessed = std::sync::Arc::new(Int64Array::from(vec![Some(77)]));
        patch_b("last_accessed_at", accessed).await.unwrap();
        let completed = held.complete(&b_now).await.unwrap();
        assert_eq!(completed["b"].last_accessed_at, Some(77));

        // Held values gone stale (a bulk change of strength): every column is taken.
        let decay = WriteOp::Update {
            predicate: col("id").eq("c"),
            columns: vec![("strength", crate::store::Expr::Float(0.25))],
        };
        writer.submit(decay).await.unwrap();
        let completed = held.complete(&wanted).await.unwrap();
        assert_eq!(completed["c"].strength, 0.25);
        assert_eq!(completed["a"], stored["a"]);
    }

    /// An encrypted store's text stays sealed on disk, not held in memory: its rows are
    /// taken, and answered opened.
    #[tokio::test]
    async fn an_encrypted_stores_codes_hold_no_text_and_its_rows_answer_opened() {
        use crate::store::WriteOp;
        let dir = tempfile::tempdir().unwrap();
        let key = crate::store::test_encrypting(dir.path());
        let db = dir.path().join("db");
        let store = Store::open(&db, 4, "test", &Default::default(), &key)
            .await
            .unwrap();
        let held = Held::over(store.clone());
        let mut rows = vec![row("a", 0), row("b", 1)];
        rows[1].content = "a walnut tree".into();
        for r in &mut rows {
            r.content_hash = store.content_hash(&r.content);
            r.set_salience_factors(None);
        }
        store
            .writer()
            .submit(WriteOp::Insert(rows.clone()))
            .await
            .unwrap();
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(2));
        let holds_answers = |held: &Held| {
            let codes = held.nearest.codes.read().unwrap();
            codes.as_ref().unwrap().holds_answers()
        };
        assert!(!holds_answers(&held));
        let wanted = nearest_wanted(&held, 1, 2).await;
        let completed = held.complete(&wanted).await.unwrap();
        assert_eq!(completed["b"].content, "a walnut tree");
        assert_eq!(completed["b"].content_hash, rows[1].content_hash);
        // A plain store holds them.
        let plain = crate::held::tests::held_store(&dir.path().join("plain")).await;
        plain
            .store()
            .writer()
            .submit(WriteOp::Insert(rows))
            .await
            .unwrap();
        assert_eq!(plain.refresh_nearest().await.unwrap(), Some(2));
        assert!(holds_answers(&plain));
    }

    #[tokio::test]
    async fn a_search_finds_what_was_written_and_never_what_was_forgotten_or_replaced() {
        use crate::store::{col, WriteOp};
        use lancedb::arrow::arrow_array::{ArrayRef, Int64Array, StringArray};
        let dir = tempfile::tempdir().unwrap();
        let held = crate::held::tests::held_store(dir.path()).await;
        let store = held.store();
        // Until the codes are read, the ANN index answers.
        assert!(held
            .nearest_held(&unit(0), None, 5)
            .await
            .unwrap()
            .is_none());
        let first = vec![row("a", 0), row("b", 1), row("c", 2)];
        let writer = store.writer();
        writer.submit(WriteOp::Insert(first.clone())).await.unwrap();
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(3));
        let found = held
            .nearest_held(&unit(0), Some("default"), 2)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found[0].record.id, "a");
        assert!(
            found[0].raw.abs() < 0.01,
            "the codes' distance: {}",
            found[0].raw
        );
        assert_eq!(found.len(), 2);
        assert_eq!(
            (found[0].record.lineage.as_str(), found[0].record.salience),
            ("a", 5.0),
            "ranked from the values held"
        );
        // A bulk change of a ranking column: the candidates' rows are read (at the exact
        // distance) until the codes are read again.
        let decay = WriteOp::Update {
            predicate: col("id").eq("a"),
            columns: vec![("strength", crate::store::Expr::Float(0.5))],
        };
        writer.submit(decay).await.unwrap();
        let found = held.nearest_held(&unit(0), None, 1).await.unwrap().unwrap();
        assert!(
            found[0].raw.abs() < 1e-6,
            "the exact distance: {}",
            found[0].raw
        );
        assert_eq!(found[0].record.strength, 0.5);
        assert!(held.nearest.held(&["a"]).is_none());
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(3));
        let values = held.nearest.held(&["a", "nobody"]).unwrap();
        assert_eq!(values[0].as_ref().map(|r| r.strength), Some(0.5));
        assert!(values[1].is_none());
        assert!(nearest_ids(&held, 0, Some("elsewhere")).await.is_empty());

        // Written after the read: found at once, by id.
        writer
            .submit(WriteOp::Insert(vec![row("d", 3)]))
            .await
            .unwrap();
        assert_eq!(nearest_ids(&held, 3, None).await[0], "d");
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
        let ids = nearest_ids(&held, 2, None).await;
        assert_eq!(ids[0], "c2");
        assert!(!ids.contains(&"c".to_string()), "{ids:?}");
        // Memories the graph reaches, by lineage: the current version, from the values held
        // or (with another filter) from Lance alike; none of another namespace.
        let lineages = ["a", "c", "gone"].map(String::from);
        let current = crate::store::filter::current();
        let of = |found: Vec<Scored>| {
            let mut ids: Vec<String> = found.into_iter().map(|s| s.record.id).collect();
            ids.sort();
            ids
        };
        let reached = held
            .current_of_lineages(&lineages, Some(Some("default")), &current)
            .await
            .unwrap();
        assert_eq!(of(reached), ["a", "c2"]);
        let read = held
            .current_of_lineages(&lineages, None, &current)
            .await
            .unwrap();
        assert_eq!(of(read), ["a", "c2"]);
        let elsewhere = held
            .current_of_lineages(&lineages, Some(Some("elsewhere")), &current)
            .await
            .unwrap();
        assert!(elsewhere.is_empty());
        // Rows moved by a compaction are read by id until the codes are read again.
        store.compact(store.memories_table()).await.unwrap();
        let mut ids = nearest_ids(&held, 1, None).await;
        assert_eq!(ids[0], "b");
        ids.sort();
        assert_eq!(ids, ["a", "b", "c2", "d"]);
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(4));
        assert!(held.nearest.placed());
        assert_eq!(nearest_ids(&held, 3, None).await[0], "d");
        // A forget drops the codes (the ANN index serves) until they are read again.
        let forget = WriteOp::Delete(col("id").eq("a"));
        writer.submit(forget).await.unwrap();
        assert!(held
            .nearest_held(&unit(0), None, 5)
            .await
            .unwrap()
            .is_none());
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(3));
        assert!(!nearest_ids(&held, 0, None).await.contains(&"a".to_string()));
        // A merge closing a row by id (dedup's) keeps the codes held, without that row.
        let ids: ArrayRef = std::sync::Arc::new(StringArray::from(vec!["b"]));
        let closed: ArrayRef = std::sync::Arc::new(Int64Array::from(vec![Some(9)]));
        let batch = store
            .patch(vec![("id", ids), ("valid_to", closed)])
            .unwrap();
        let only_if = Some(crate::store::filter::current().on_target());
        writer
            .submit(WriteOp::Patch { batch, only_if })
            .await
            .unwrap();
        let ids = nearest_ids(&held, 1, None).await;
        assert!(held
            .nearest_held(&unit(1), None, 3)
            .await
            .unwrap()
            .is_some());
        assert!(!ids.contains(&"b".to_string()), "{ids:?}");
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(2));
    }

    #[test]
    fn rows_written_while_the_codes_are_read_join_them_and_an_invalidation_voids_them() {
        let nearest = Nearest::new(10, false, 10);
        let none = |_: &str| Vec::new();
        let begun = nearest.begin_read();
        nearest.written(&[row("late", 1)], "test", &|e| e.to_string(), &none);
        let (rows, _, first) = nearest
            .replace(Codes::new(4), (7, &[]), begun, &none)
            .unwrap();
        assert_eq!((rows, first), (1, true));
        assert!(!nearest.placed(), "the late row waits for its row id");
        let Some(Proposed::Ranked(found)) = nearest.nearest(&unit(1), None, 1) else {
            panic!("the late row is held with its ranking columns");
        };
        assert_eq!(found[0].record.id, "late");

        // Held columns changed in bulk while the codes were read: their values are not used.
        let begun = nearest.begin_read();
        nearest.ranking_changed();
        nearest.replace(Codes::new(4), (8, &[]), begun, &none);
        assert!(!nearest.holds_ranking());
        assert!(nearest.due(8), "values not taken as exact are read again");

        let begun = nearest.begin_read();
        nearest.invalidate();
        assert!(nearest
            .replace(Codes::new(4), (8, &[]), begun, &none)
            .is_none());
        assert_eq!(
            nearest.rows(),
            None,
            "codes read across a forget are not held"
        );
    }
}
