//! The codes: each held memory's vector at 8 bits a component (plus what rounding left, at
//! 4), its id, row id, namespace and ranking values (`held.rs`), and the search over them: a
//! scan of the top four bits of each component (`scan.rs`), and the best rows by them ranked
//! by the rest, which lies in a file (`tail.rs`). Past `store.advanced.vectors_in_memory_max_rows`
//! the vectors are let go and the rest is kept: the ANN index then finds the candidates,
//! and they are ranked from the values held here. With `store.advanced.vector_signs` the planes are
//! signed there instead (`planes.rs`): two bits a component are held and scanned, and the
//! whole of each row's codes lies in the file (where none can be made, the vectors are let
//! go).

use std::collections::HashSet;

use crate::held::id::HeldId;
use crate::held::ranking::{Filled, Held, Patched};
use crate::store::memories::{Near, Scored};
use crate::store::MemoryRecord;

mod answers;
mod hamming;
mod lookup;
mod planes;
mod postings;
mod prefetch;
mod scan;
mod signs;
mod tail;
mod words;

use answers::Answers;
use lookup::{key_hash, RowLookup};

use planes::{plane_bytes, quantize, Planes};
use scan::{scan, scan_query, Ask, SCANNED_PER_RESULT};
use signs::signed_candidates;
use tail::Wait;
use words::Words;

/// A row no longer held (closed by a new version): skipped by every scan.
const RETIRED: u32 = u32::MAX;

/// How many rows ahead ranking asks for a row's codes (see [`Codes::nearest`]).
const PREFETCH_AHEAD: usize = 4;

/// The codes of every current memory of the configured model, row by row, and what ranking
/// reads of each (`held.rs`).
#[derive(Default)]
pub(super) struct Codes {
    dim: usize,
    /// Whether the rows' vectors are held (`planes`, `scales`), or only the rest.
    vectors: bool,
    /// Each row's codes and what rounding left (`planes.rs`).
    planes: Planes,
    /// What turns a row's byte dot product back into a cosine: its largest component / 127
    /// over its length.
    scales: Vec<f32>,
    /// Each row's id, a UUID in its 16 bytes: 16 bytes a row, where the text laid end to end
    /// took 44 (28 MB more at 1M rows). Only an id the store did not write (an import's) is
    /// boxed: a box a row took 64 B, and, made among the passing allocations of the read that
    /// fills the codes, boxes kept pages of freed heap from going back.
    ids: Vec<HeldId>,
    /// Bytes of the ids held as text, counted as rows come so that counting the bytes held
    /// (status asks each time it is polled) does not walk every row.
    text_id_bytes: usize,
    /// Each row's row id; [`NO_ROW_ID`] for a row written after the codes were read (it is
    /// read by id).
    row_ids: Vec<u64>,
    /// Index into `spaces` of each row's namespace; [`RETIRED`] for a row no longer held.
    space_of: Vec<u32>,
    spaces: Vec<String>,
    /// Each held row by its id.
    by_id: RowLookup,
    /// Each later version held by its lineage (a first version's lineage is its id).
    by_lineage: RowLookup,
    /// Each held row by its row id, for rows read with one. A row id is its fragment and
    /// offset; a fragment's rows never move within it and its id is never reused, so a row
    /// id found here names the row held (a row moved since has a new row id, found nowhere
    /// here).
    by_row: RowLookup,
    retired: usize,
    /// Rows whose words changed in place (their old postings stay).
    rewritten: usize,
    held: Held,
    /// Each row's words, held with whole vectors (`words.rs`): the text leg of a search.
    words: Option<Words>,
    /// What a search answers with of each row, held with the words in a plain store
    /// (`answers.rs`).
    answers: Option<Answers>,
    /// Whether the words were read hashed (an encrypted store's): a query's words must be
    /// the same.
    pub(super) words_hashed: bool,
    /// Whether `held` is exact: no write changed a held column since (other than by rows).
    pub(super) fresh: bool,
}

/// Row ids are Lance's fragment and offset: no row has this one.
const NO_ROW_ID: u64 = u64::MAX;

/// The hash of each row's id, from the rows (for a lookup that grows).
fn hash_of_id(ids: &[HeldId]) -> impl Fn(u32) -> u64 + '_ {
    move |r| key_hash(&ids[r as usize])
}

/// The hash of each row's row id, from the rows.
fn hash_of_row_id(row_ids: &[u64]) -> impl Fn(u32) -> u64 + '_ {
    move |r| key_hash(&row_ids[r as usize])
}

/// The hash of each later version's lineage, from the rows.
fn hash_of_lineage(held: &Held) -> impl Fn(u32) -> u64 + '_ {
    move |r| key_hash(held.lineage(r as usize).unwrap_or_default())
}

impl Codes {
    pub(super) fn new(dim: usize) -> Self {
        Self {
            dim,
            vectors: true,
            planes: Planes::new(dim),
            held: Held::with_vectors(true),
            words: Some(Words::default()),
            answers: Some(Answers::default()),
            fresh: true,
            ..Default::default()
        }
    }

    /// Codes that hold two bits a component of each vector in memory, and the rest in a
    /// file (see [`Codes::writing_to`]), with what ranking reads of each row and its
    /// [`HELD_WITH_VECTORS`](crate::held::ranking::HELD_WITH_VECTORS) (24 MB at 1M memories),
    /// but not the words held with the whole codes. Their answered columns lie in files too.
    /// Held at 1M memories, the words (+106 MB) made the text leg a core's work beside the
    /// vector scan, which wants both: hybrid p50 16.6 → 22.7 ms, where the full-text index's
    /// leg mostly waits on its reads.
    pub(super) fn signed(dim: usize) -> Self {
        Self {
            planes: Planes::signed(dim),
            words: None,
            answers: None,
            ..Self::new(dim)
        }
    }

    /// Codes whose rows' ranking parts lie in a file in `dir` where one can be made
    /// (`tail.rs`). Signed codes with no file let their vectors go: held whole, their tails
    /// would take twelve times what the signs do. With one, their answered columns lie in
    /// files there too, where those can be made (`answers.rs`).
    pub(super) fn writing_to(mut self, dir: &std::path::Path) -> Self {
        self.planes = std::mem::take(&mut self.planes).writing_to(dir);
        if self.planes.is_signed() && self.planes.tail_in_file() {
            self.answers = Answers::in_files(dir);
        } else if self.planes.is_signed() {
            tracing::warn!("the vectors are not held: a search asks the ANN index");
            self.drop_vectors();
        }
        self
    }

    /// Whether the planes are signed (see [`Codes::signed`]).
    pub(super) fn is_signed(&self) -> bool {
        self.vectors && self.planes.is_signed()
    }

    /// Codes that hold no vectors, only what ranking reads of each row.
    pub(super) fn without_vectors(dim: usize) -> Self {
        Self {
            vectors: false,
            held: Held::with_vectors(false),
            words: None,
            answers: None,
            ..Self::new(dim)
        }
    }

    /// Whether the rows' vectors are held (a search can scan them).
    pub(super) fn has_vectors(&self) -> bool {
        self.vectors
    }

    /// Lets the vectors go, keeping the rest.
    pub(super) fn drop_vectors(&mut self) {
        self.vectors = false;
        self.held.drop_with_vectors();
        self.words = None;
        self.answers = None;
        self.planes.clear();
        self.scales = Vec::new();
    }

    /// Holds no row's answered columns (an encrypted store's stay sealed on disk).
    pub(super) fn drop_answers(&mut self) {
        self.answers = None;
    }

    /// Whether rows' [`HELD_WITH_VECTORS`](crate::held::ranking::HELD_WITH_VECTORS) are held.
    pub(super) fn holds_with_vectors(&self) -> bool {
        self.held.holds_with_vectors()
    }

    /// Whether rows' answered columns are held (see [`Codes::drop_answers`]).
    pub(super) fn holds_answers(&self) -> bool {
        self.answers.is_some()
    }

    /// Rows held.
    pub(super) fn len(&self) -> usize {
        self.ids.len() - self.retired
    }

    pub(super) fn reserve(&mut self, rows: usize) {
        if self.vectors {
            self.planes.reserve(rows);
            self.scales.reserve_exact(rows);
        }
        self.ids.reserve_exact(rows);
        self.row_ids.reserve_exact(rows);
        self.space_of.reserve_exact(rows);
        self.by_id.reserve(rows, hash_of_id(&self.ids));
        self.by_row.reserve(rows, hash_of_row_id(&self.row_ids));
        self.held.reserve(rows);
        if let Some(words) = &mut self.words {
            words.reserve(rows);
        }
        if let Some(answers) = &mut self.answers {
            answers.reserve(rows);
        }
    }

    pub(super) fn shrink_to_fit(&mut self) {
        self.planes.shrink_to_fit();
        self.scales.shrink_to_fit();
        self.ids.shrink_to_fit();
        self.row_ids.shrink_to_fit();
        self.space_of.shrink_to_fit();
        self.held.shrink_to_fit();
        if let Some(words) = &mut self.words {
            words.shrink_to_fit();
        }
        if let Some(answers) = &mut self.answers {
            answers.shrink_to_fit();
        }
        self.by_id.shrink_to_fit(hash_of_id(&self.ids));
        self.by_row.shrink_to_fit(hash_of_row_id(&self.row_ids));
        self.by_lineage.shrink_to_fit(hash_of_lineage(&self.held));
    }

    /// Row `i`'s id.
    fn id(&self, i: usize) -> String {
        self.ids[i].text()
    }

    /// The index of the row held for `id`.
    pub(super) fn index_of(&self, id: &str) -> Option<usize> {
        let id = HeldId::new(id);
        let i = self
            .by_id
            .find(key_hash(&id), |r| self.ids[r as usize] == id)? as usize;
        (self.space_of[i] != RETIRED).then_some(i)
    }

    /// The index of the row held for the current version of `lineage`.
    pub(super) fn index_of_lineage(&self, lineage: &str) -> Option<usize> {
        let later = self.by_lineage.find(key_hash(lineage), |r| {
            self.held.lineage(r as usize) == Some(lineage)
        });
        if let Some(i) = later.map(|i| i as usize) {
            if self.space_of[i] != RETIRED {
                return Some(i);
            }
        }
        let i = self.index_of(lineage)?;
        self.held.lineage(i).is_none().then_some(i)
    }

    /// The index of the row of `id` held at `row_id`.
    pub(super) fn index_of_at(&self, id: &str, row_id: u64) -> Option<usize> {
        self.index_at(row_id)
            .filter(|&i| self.ids[i] == HeldId::new(id))
    }

    /// The index of the row held at `row_id`.
    pub(super) fn index_at(&self, row_id: u64) -> Option<usize> {
        let i = self
            .by_row
            .find(key_hash(&row_id), |r| self.row_ids[r as usize] == row_id)?
            as usize;
        (self.space_of[i] != RETIRED).then_some(i)
    }

    /// Holds row `i` under its row id `row_id` in place of any it had.
    fn place(&mut self, i: usize, row_id: Option<u64>) {
        if let Some(old) = self.row_id(i) {
            self.by_row.remove(key_hash(&old), i as u32);
        }
        self.row_ids[i] = row_id.unwrap_or(NO_ROW_ID);
        if let Some(row_id) = row_id {
            let row_ids = &self.row_ids;
            self.by_row.insert(
                key_hash(&row_id),
                i as u32,
                |r| r as usize != i && row_ids[r as usize] == row_id,
                hash_of_row_id(row_ids),
            );
        }
    }

    /// Holds `record` (current, of the configured model) at `row_id`; `entities` are its
    /// entities as stored; `words` gives the tokens its text is indexed by (as
    /// `Sealing::words` gives them), asked only where words are held. A row already held
    /// under its id is replaced in place. Without vectors held, `record` needs none. Returns
    /// the row's index (None when its vector is not of the codes' dimension).
    pub(super) fn push(
        &mut self,
        record: &MemoryRecord,
        row_id: Option<u64>,
        entities: &[String],
        words: impl FnOnce() -> Vec<String>,
    ) -> Option<usize> {
        if self.vectors && record.vector.len() != self.dim {
            return None;
        }
        if let Some(i) = self.index_of(&record.id) {
            if self.vectors {
                self.scales[i] = self.planes.set(i, &record.vector);
            }
            self.place(i, row_id);
            self.space_of[i] = self.space(&record.namespace);
            self.held.set(i, record, entities);
            if let Some(held) = &mut self.words {
                if held.hold(i, &words()) {
                    self.rewritten += 1;
                }
            }
            if let Some(answers) = &mut self.answers {
                answers.hold(i, record);
            }
            return Some(i);
        }
        let index = self.ids.len() as u32;
        let id = HeldId::new(&record.id);
        let ids = &self.ids;
        self.by_id.insert(
            key_hash(&id),
            index,
            |r| ids[r as usize] == id,
            hash_of_id(ids),
        );
        if record.lineage != record.id {
            let held = &self.held;
            self.by_lineage.insert(
                key_hash(&record.lineage),
                index,
                |r| held.lineage(r as usize) == Some(record.lineage.as_str()),
                hash_of_lineage(held),
            );
        }
        if self.vectors {
            self.scales.push(self.planes.push(&record.vector));
        }
        self.text_id_bytes += id.heap_bytes();
        self.ids.push(id);
        self.row_ids.push(NO_ROW_ID);
        self.place(index as usize, row_id);
        let space = self.space(&record.namespace);
        self.space_of.push(space);
        self.held.push(record, entities);
        if let Some(held) = &mut self.words {
            held.hold(index as usize, &words());
        }
        if let Some(answers) = &mut self.answers {
            answers.hold(index as usize, record);
        }
        Some(index as usize)
    }

    /// The space a search of `namespace` keeps to (None for all), or None when no row was
    /// ever held of it (nothing is found).
    fn space_asked(&self, namespace: Option<&str>) -> Option<Option<u32>> {
        match namespace {
            Some(n) => self.space_of_name(n).map(Some),
            None => Some(None),
        }
    }

    /// The index of `namespace` in `spaces`, if any row was ever held of it.
    fn space_of_name(&self, namespace: &str) -> Option<u32> {
        self.spaces
            .iter()
            .position(|s| s == namespace)
            .map(|i| i as u32)
    }

    pub(super) fn space(&mut self, namespace: &str) -> u32 {
        match self.space_of_name(namespace) {
            Some(i) => i,
            None => {
                self.spaces.push(namespace.to_string());
                (self.spaces.len() - 1) as u32
            }
        }
    }

    /// Stops holding the row of `id` (a new version closed it).
    pub(super) fn retire(&mut self, id: &str) {
        if let Some(i) = self.index_of(id) {
            self.retire_at(i);
        }
    }

    /// Sets the values a patch set of row `i`, which is held.
    pub(super) fn patch(&mut self, i: usize, values: &Patched) {
        self.held.patch(i, values);
        if let (Some(answers), Some(count)) = (&mut self.answers, values.access_count) {
            match values.last_accessed_at {
                Some(at) => answers.fold_accesses(i, count, at),
                None => answers.set_access_count(i, count),
            }
        }
    }

    /// Stops holding row `i`, which is held.
    fn retire_at(&mut self, i: usize) {
        self.space_of[i] = RETIRED;
        self.by_id.remove(key_hash(&self.ids[i]), i as u32);
        self.place(i, None);
        if let Some(lineage) = self.held.lineage(i) {
            self.by_lineage.remove(key_hash(lineage), i as u32);
        }
        if let Some(words) = &mut self.words {
            words.forget(i);
        }
        self.retired += 1;
    }

    /// Stops holding the rows held at a row id in one of `fragments` that are not `seen`:
    /// after those fragments were read again, rows they no longer hold as current.
    pub(super) fn retire_unseen(&mut self, fragments: &HashSet<u64>, seen: &[bool]) {
        for i in 0..self.ids.len() {
            let row_id = self.row_ids[i];
            if self.space_of[i] != RETIRED
                && row_id != NO_ROW_ID
                && fragments.contains(&(row_id >> 32))
                && !seen.get(i).copied().unwrap_or(false)
            {
                self.retire_at(i);
            }
        }
    }

    /// Holds each row at the row id `to` gives for its own (Some(None): at none, to be
    /// read by id); rows `to` leaves (None) stay where they are. Returns how many moved.
    pub(super) fn move_rows(&mut self, to: impl Fn(u64) -> Option<Option<u64>>) -> usize {
        let mut moved = 0;
        for i in 0..self.ids.len() {
            let Some(row_id) = self.row_id(i) else {
                continue;
            };
            if let Some(now) = to(row_id) {
                self.place(i, now);
                moved += 1;
            }
        }
        moved
    }

    /// Rows held without a row id (written since the codes were read).
    pub(super) fn unplaced(&self) -> usize {
        (0..self.ids.len())
            .filter(|&i| self.space_of[i] != RETIRED && self.row_ids[i] == NO_ROW_ID)
            .count()
    }

    /// Rows no longer held, or whose words were held again, that still take their old
    /// place (until the codes are read whole).
    pub(super) fn stale_rows(&self) -> usize {
        self.retired + self.rewritten
    }

    /// Asks the kernel to hold the files the rows' ranking parts and answers lie in, in its
    /// cache, those that fit in `room` bytes (the ranking parts first: every search reads
    /// them); returns the bytes asked for.
    pub(super) fn keep_files_cached(&self, mut room: u64) -> u64 {
        let ranking = self.planes.keep_cached(&mut room);
        let answers = self
            .answers
            .as_ref()
            .map_or(0, |a| a.keep_cached(&mut room));
        ranking + answers
    }

    /// Whether each row's words are held (a text search can be answered here).
    pub(super) fn holds_words(&self) -> bool {
        self.words.is_some()
    }

    /// The `limit` rows of `namespace` (all when None) that score highest for `terms` by
    /// BM25, best first: each row's score and index. None when no words are held.
    pub(super) fn best_for_words(
        &self,
        terms: &[String],
        namespace: Option<&str>,
        limit: usize,
    ) -> Option<Vec<(f32, u32)>> {
        let words = self.words.as_ref()?;
        let Some(space) = self.space_asked(namespace) else {
            return Some(Vec::new());
        };
        Some(words.best(terms, limit, |r| scan::asked(self, space, r as usize)))
    }

    /// The `limit` rows nearest `vector` by approximate cosine, nearest first, among those of
    /// `namespace` (all when None): each row's index and cosine.
    pub(super) fn nearest(
        &self,
        vector: &[f32],
        namespace: Option<&str>,
        limit: usize,
    ) -> Vec<(f32, u32)> {
        if !self.vectors || vector.len() != self.dim || limit == 0 {
            return Vec::new();
        }
        let Some(space) = self.space_asked(namespace) else {
            return Vec::new();
        };
        let scored = if self.planes.is_signed() {
            signed_candidates(self, vector, space, limit)
        } else {
            let (query, bias) = scan_query(vector);
            let ask = Ask {
                query: &query,
                bias,
                space,
                limit: limit * SCANNED_PER_RESULT,
            };
            scan(self, ask)
        };
        self.ranked(scored, vector, limit)
    }

    /// The `limit` rows nearest each vector of `asked` by approximate cosine, nearest
    /// first, among those of the namespace beside it (all when None), as [`Codes::nearest`]
    /// finds them; a row further than `within` from a vector may be left out. With signed
    /// planes one scan of the signs finds every vector's candidates (`hamming.rs`), where a
    /// search's takes one each (dedup asks for a block of new memories at once).
    pub(super) fn nearest_each(
        &self,
        asked: &[(&[f32], Option<&str>)],
        limit: usize,
        within: f32,
    ) -> Vec<Vec<(f32, u32)>> {
        if !self.planes.is_signed() || !self.vectors || limit == 0 {
            let each = |&(vector, namespace): &(&[f32], Option<&str>)| {
                self.nearest(vector, namespace, limit)
            };
            return asked.iter().map(each).collect();
        }
        let mut found = vec![Vec::new(); asked.len()];
        // The vectors a scan can answer: of the codes' dimension, in a namespace held.
        let open: Vec<(usize, &[f32], Option<u32>)> = asked
            .iter()
            .enumerate()
            .filter(|(_, (vector, _))| vector.len() == self.dim)
            .filter_map(|(k, &(vector, namespace))| Some((k, vector, self.space_asked(namespace)?)))
            .collect();
        let queries: Vec<(&[f32], Option<u32>)> = open.iter().map(|o| (o.1, o.2)).collect();
        let batch = hamming::Batch::new(self.dim, &queries, within);
        let keep = signs::Keep::for_results(self, limit);
        let kept = hamming::candidates_each(self, &batch, keep.scanned, keep.parts);
        for ((k, vector, _), kept) in open.into_iter().zip(kept) {
            let query = signs::SignQuery::new(vector);
            let read = signs::best_by_levels(self, &query, kept, keep.read);
            found[k] = self.ranked(read, vector, limit);
        }
        found
    }

    /// The `limit` of `scored` (rows a scan found for `vector`) nearest it, ranked by their
    /// codes' cosine, nearest first.
    fn ranked(&self, scored: Vec<(f32, u32)>, vector: &[f32], limit: usize) -> Vec<(f32, u32)> {
        let length = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        // The rows lie anywhere in the planes: each is asked for a few rows ahead of its
        // turn, so their reads overlap rather than wait one after another.
        let ahead = |k: usize| scored.get(k + PREFETCH_AHEAD).map(|&(_, i)| i as usize);
        let mut refined: Vec<(f32, u32)> = Vec::with_capacity(scored.len());
        let mut tail = Vec::new();
        // Rows whose codes the kernel had no longer cached: their reads were sent for as
        // they were met, and are waited for together after the rest (one at a time, 300
        // reads a search of 1M memories waited for each miss in turn).
        let mut pending = Vec::new();
        for (k, &(_, i)) in scored.iter().enumerate() {
            if let Some(next) = ahead(k) {
                self.planes.prefetch(next);
            }
            match self.cosine(i as usize, vector, length, &mut tail, Wait::No) {
                Some(cosine) => refined.push((cosine, i)),
                None => pending.push(i),
            }
        }
        for i in pending {
            let cosine = self.cosine(i as usize, vector, length, &mut tail, Wait::Yes);
            refined.push((cosine.unwrap_or_default(), i));
        }
        refined.sort_by(|a, b| b.0.total_cmp(&a.0));
        refined.truncate(limit);
        refined
    }

    /// Which sparse columns row `i` fills, and whether it holds the columns held with the
    /// vectors and the answered ones.
    pub(super) fn filled(&self, i: usize) -> Filled {
        let filled = self.held.filled(i);
        match &self.answers {
            Some(answers) if answers.holds(i) => filled.with_answers(),
            _ => filled,
        }
    }

    /// Row `i`'s cosine with `query` (of `length`), from its codes and what rounding left:
    /// within ~0.0005 of the exact cosine, where the bytes alone are within ~0.005 (enough
    /// to find the candidates, not to rank them: the 10 nearest of 100k MiniLM memories
    /// ranked by the bytes were 0.948 those of exact search). `tail` holds the rest of its
    /// codes as they are read (see [`Planes::product`]); None where `wait` is [`Wait::No`]
    /// and they are not in the kernel's cache.
    fn cosine(
        &self,
        i: usize,
        query: &[f32],
        length: f32,
        tail: &mut Vec<u8>,
        wait: Wait,
    ) -> Option<f32> {
        if length == 0.0 {
            return Some(0.0);
        }
        let product = self.planes.product_as(i, query, tail, wait)?;
        Some(product * self.scales[i] / length)
    }

    /// Row `i`'s row id, if it was read with one.
    fn row_id(&self, i: usize) -> Option<u64> {
        Some(self.row_ids[i]).filter(|&r| r != NO_ROW_ID)
    }

    pub(super) fn near(&self, i: u32) -> Near {
        Near {
            id: self.id(i as usize),
            row_id: self.row_id(i as usize),
        }
    }

    /// Row `i` as a candidate: its ranking columns, found at `cosine`.
    pub(super) fn scored(&self, i: u32, cosine: f32) -> Scored {
        let i = i as usize;
        let namespace = &self.spaces[self.space_of[i] as usize];
        Scored {
            record: self.held.record(i, &self.id(i), namespace),
            raw: 1.0 - cosine,
            row_id: self.row_id(i),
        }
    }

    /// Row `i` as a search answers with it: its ranking values and what else is held of it.
    pub(super) fn answered(&self, i: usize) -> MemoryRecord {
        let namespace = &self.spaces[self.space_of[i] as usize];
        let mut record = self.held.answered(i, &self.id(i), namespace);
        if let Some(answers) = &self.answers {
            answers.fill(i, &mut record);
        }
        record
    }

    /// Bytes allocated (what the vectors' capacities hold, grown or not), for the log and
    /// status.
    pub(super) fn bytes(&self) -> usize {
        use std::mem::size_of;
        let ids = self.ids.capacity() * size_of::<HeldId>() + self.text_id_bytes;
        let lookups = self.by_id.bytes() + self.by_lineage.bytes() + self.by_row.bytes();
        let spaces: usize = self.spaces.iter().map(|s| s.capacity()).sum();
        self.planes.bytes()
            + self.scales.capacity() * size_of::<f32>()
            + self.row_ids.capacity() * size_of::<u64>()
            + self.space_of.capacity() * size_of::<u32>()
            + spaces
            + ids
            + lookups
            + self.held.bytes()
            + self.words.as_ref().map_or(0, Words::bytes)
            + self.answers.as_ref().map_or(0, Answers::bytes)
    }
}

/// A vector of `dim` components with eight ±1 (as the hashed embedder makes them, a word a
/// component), the first `shared` of them where every vector of `seed` has them.
#[cfg(test)]
fn sparse_vector(dim: usize, seed: usize, shared: usize) -> Vec<f32> {
    let mut v = vec![0.0; dim];
    for k in 0..8 {
        let j = if k < shared {
            seed * 7919 + k * 131
        } else {
            seed * 31 + k * 977 + 5
        };
        v[j % dim] += if (seed * 3 + k) % 5 < 2 { -1.0 } else { 1.0 };
    }
    v
}

#[cfg(test)]
mod tests {
    use super::scan::scan_portable;
    use super::*;
    use crate::store::schema::content_hash;
    use mnemo_protocol::memory::MemoryKind;

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

    /// Codes holding `rows`, row `i` with id and row id `i`, in `namespace(i)`.
    fn held_codes(rows: &[Vec<f32>], namespace: impl Fn(usize) -> &'static str) -> Codes {
        let mut codes = Codes::new(rows[0].len());
        for (i, v) in rows.iter().enumerate() {
            codes.push(
                &held(&i.to_string(), namespace(i), v),
                Some(i as u64),
                &[],
                Vec::new,
            );
        }
        codes
    }

    #[test]
    fn rows_are_found_by_their_ids_as_written_uuids_held_in_16_bytes() {
        let rows = vectors(4, 16, 3);
        let made = uuid::Uuid::now_v7().to_string();
        // The store's own ids, an import's other form of a UUID, and any other text.
        let ids = [
            made.clone(),
            made.to_uppercase(),
            "imported-7".to_string(),
            uuid::Uuid::now_v7().to_string(),
        ];
        let mut codes = Codes::new(16);
        for (i, (id, v)) in ids.iter().zip(&rows).enumerate() {
            codes.push(&held(id, "ns", v), Some(i as u64), &[], Vec::new);
        }
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(codes.index_of(id), Some(i), "{id}");
            assert_eq!(codes.near(i as u32).id, *id);
            assert_eq!(codes.answered(i).id, *id);
        }
        assert_eq!(codes.index_of(&made.replace('-', "")), None);
        assert_eq!(codes.index_of("imported-8"), None);
        // A row retired leaves the lookup by id, whichever way its id is held.
        for (i, id) in ids.iter().enumerate().take(3) {
            codes.retire(id);
            let held = codes
                .by_id
                .find(hash_of_id(&codes.ids)(i as u32), |r| r == i as u32);
            assert_eq!((codes.index_of(id), held), (None, None), "{id}");
        }
        assert_eq!(codes.index_of(&ids[3]), Some(3));
        let text = made.to_uppercase().len() + "imported-7".len();
        assert_eq!(codes.text_id_bytes, 2 * 16 + text);
    }

    #[test]
    fn the_codes_find_the_exact_nearest_neighbours() {
        let dim = 64;
        let rows = vectors(3000, dim, 7);
        let codes = held_codes(&rows, |_| "ns");
        let (mut among, mut top, mut total) = (0, 0, 0);
        for q in vectors(50, dim, 99) {
            let truth = exact(&rows, &q, 10);
            // As a search asks: 50 candidates for 10 results.
            let found = codes.nearest(&q, Some("ns"), 50);
            for &(cosine, i) in &found {
                let exact = crate::linalg::cosine(&q, &rows[i as usize]);
                assert!((cosine - exact).abs() < 0.001, "{cosine} vs {exact}");
            }
            let found: Vec<usize> = found.iter().map(|&(_, i)| i as usize).collect();
            among += truth.iter().filter(|i| found.contains(i)).count();
            top += truth.iter().filter(|i| found[..10].contains(i)).count();
            total += truth.len();
        }
        assert_eq!(
            among, total,
            "every exact top-10 row is among the 50 candidates"
        );
        // Ranked by the codes and their remainders, the top 10 are the exact ones.
        assert!(top as f32 / total as f32 >= 0.98, "{top} of {total}");
    }

    /// `rows` held as [`held_codes`] holds them, in signed codes whose rest lies in a file
    /// in `dir`.
    fn signed_codes(rows: &[Vec<f32>], dir: &std::path::Path) -> Codes {
        let mut codes = Codes::signed(rows[0].len()).writing_to(dir);
        for (i, v) in rows.iter().enumerate() {
            codes.push(
                &held(&i.to_string(), "ns", v),
                Some(i as u64),
                &[],
                Vec::new,
            );
        }
        codes
    }

    #[test]
    fn signed_codes_find_a_row_near_the_query_and_rank_as_whole_codes_do() {
        let dim = 384;
        let dir = tempfile::tempdir().unwrap();
        let rows = vectors(3000, dim, 7);
        let (whole, signed) = (held_codes(&rows, |_| "ns"), signed_codes(&rows, dir.path()));
        assert!(signed.is_signed() && !whole.is_signed());
        assert!(
            signed.bytes() < whole.bytes(),
            "two bits a component held, not four"
        );
        for (k, noise) in vectors(20, dim, 99).into_iter().enumerate() {
            // A query near row 100 × k: its sign bits differ from the row's in a few places.
            let mut q: Vec<f32> = rows[100 * k]
                .iter()
                .zip(&noise)
                .map(|(r, n)| r + 0.3 * n)
                .collect();
            crate::linalg::l2_normalize(&mut q);
            let found = signed.nearest(&q, Some("ns"), 10);
            assert_eq!(found[0].1 as usize, 100 * k);
            for &(cosine, i) in &found {
                let exact = crate::linalg::cosine(&q, &rows[i as usize]);
                assert!((cosine - exact).abs() < 0.001, "{cosine} vs {exact}");
            }
        }
        // Sparse rows (as the hashed embedder makes), and queries sharing most of a row's
        // components.
        let sparse = |seed, shared| sparse_vector(dim, seed, shared);
        let rows: Vec<Vec<f32>> = (0..3000).map(|i| sparse(i, 8)).collect();
        let signed = signed_codes(&rows, dir.path());
        for k in 0..20 {
            let q = sparse(100 * k + 1, 6);
            let nearest = exact(&rows, &q, 1)[0];
            assert!(crate::linalg::cosine(&q, &rows[nearest]) > 0.5);
            let found = signed.nearest(&q, None, 10);
            // Rows of integer components may tie: the row found is as near as the nearest.
            let cosine = |i: usize| crate::linalg::cosine(&q, &rows[i]);
            let first = found[0].1 as usize;
            assert!(
                cosine(first) >= cosine(nearest) - 1e-6,
                "query {k}: {first}, {nearest}"
            );
        }
        // Where the scan keeps every row, the ranking (by the codes in the file) is that of
        // the whole codes.
        let few = &rows[..200];
        let (whole, signed) = (held_codes(few, |_| "ns"), signed_codes(few, dir.path()));
        for q in vectors(5, dim, 5) {
            assert_eq!(signed.nearest(&q, None, 20), whole.nearest(&q, None, 20));
        }
    }

    /// Signed codes answer with all a search answers with: the kind, validity and emotion
    /// held in memory, the text and the rest in files (a search at 1M memories takes none of
    /// its rows from the store); codes that let their vectors go hold neither.
    #[test]
    fn signed_codes_hold_all_a_search_answers_with() {
        let dir = tempfile::tempdir().unwrap();
        let felt = |codes: &mut Codes| {
            let mut r = held("felt", "ns", &vectors(1, 16, 3)[0]);
            (r.kind, r.valid_from) = (MemoryKind::Semantic, 1_700_000_000_000_000);
            (r.emotion_primary, r.emotion_intensity) = (Some("joy".into()), Some(0.75));
            (r.content, r.content_hash) = ("A walk by the river".into(), content_hash("A walk"));
            r.salience_factors = None;
            codes.push(&r, Some(7), &[], Vec::new);
            let i = codes.len() - 1;
            let filled = codes.filled(i);
            let held = (filled.holds_with_vectors(), filled.holds_answers());
            (held, codes.answered(i))
        };
        let mut signed = Codes::signed(16).writing_to(dir.path());
        assert!(signed.is_signed());
        let (held, answered) = felt(&mut signed);
        assert_eq!(held, (true, true));
        assert_eq!(
            (
                answered.kind,
                answered.valid_from,
                answered.emotion_primary.as_deref()
            ),
            (MemoryKind::Semantic, 1_700_000_000_000_000, Some("joy"))
        );
        assert_eq!(
            (answered.content.as_str(), answered.content_hash),
            ("A walk by the river", content_hash("A walk"))
        );
        let mut unheld = Codes::signed(16).writing_to(&dir.path().join("gone"));
        assert!(!unheld.has_vectors());
        assert_eq!(felt(&mut unheld).0, (false, false));
    }

    #[test]
    fn signed_codes_with_no_file_for_their_rest_hold_no_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("gone");
        let codes = signed_codes(&vectors(3, 16, 1), &missing);
        assert!(!codes.has_vectors() && !codes.is_signed());
        assert_eq!(codes.len(), 3, "the ranking values stay held");
        assert!(codes.nearest(&vectors(1, 16, 2)[0], None, 3).is_empty());
    }

    #[test]
    fn the_scan_of_signs_for_this_cpu_scores_every_row_as_the_portable_loop_does() {
        let dir = tempfile::tempdir().unwrap();
        // Rows of one word, of two (a chunk's words masked off), eight and sixteen.
        for dim in [5, 100, 384, 700] {
            let rows = vectors(300, dim, 11);
            let mut codes = Codes::signed(dim).writing_to(dir.path());
            for (i, v) in rows.iter().enumerate() {
                let space = if i % 3 == 0 { "a" } else { "b" };
                codes.push(
                    &held(&i.to_string(), space, v),
                    Some(i as u64),
                    &[],
                    Vec::new,
                );
            }
            codes.retire("7");
            let query = signs::SignQuery::new(&rows[5]);
            // Each stage keeps fewer rows than it is given.
            let keep = signs::Keep {
                scanned: 60,
                read: 20,
                parts: 1,
            };
            let sorted = |mut found: Vec<(f32, u32)>| {
                found.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                found
            };
            for space in [None, Some(0), Some(1)] {
                let portable = signs::candidates_portable(&codes, &query, space, keep);
                assert!(!portable.iter().any(|&(_, i)| i == 7), "a retired row");
                assert_eq!(portable.len(), 20);
                assert_eq!(
                    signs::candidates(&codes, &query, space, keep),
                    portable,
                    "dim {dim}"
                );
                // Shared between threads, the scan keeps the same rows.
                for parts in [2, 3] {
                    let shared = signs::Keep { parts, ..keep };
                    assert_eq!(
                        sorted(signs::candidates(&codes, &query, space, shared)),
                        sorted(portable.clone()),
                        "dim {dim}, {parts} parts"
                    );
                }
            }
        }
    }

    #[test]
    fn the_scan_for_this_cpu_scores_every_row_as_the_portable_loop_does() {
        // MiniLM's, and one whose rows end past the last whole 64 bytes.
        for dim in [384, 401] {
            let rows = vectors(500, dim, 11);
            let mut codes = held_codes(&rows, |i| if i % 3 == 0 { "a" } else { "b" });
            codes.retire("7");
            let (query, bias) = scan_query(&rows[5]);
            for space in [None, Some(0), Some(1)] {
                let ask = Ask {
                    query: &query,
                    bias,
                    space,
                    limit: 500,
                };
                let portable = scan_portable(&codes, ask);
                assert!(!portable.iter().any(|&(_, i)| i == 7), "a retired row");
                assert_eq!(scan(&codes, ask), portable, "dim {dim}");
            }
        }
    }

    #[test]
    fn a_scan_shared_between_threads_keeps_what_one_thread_keeps() {
        let dim = 384;
        let rows = vectors(1000, dim, 17);
        let mut codes = held_codes(&rows, |i| if i % 4 == 0 { "a" } else { "b" });
        codes.retire("3");
        let (query, bias) = scan_query(&rows[9]);
        let scores = |mut v: Vec<(f32, u32)>| {
            v.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            v
        };
        for space in [None, Some(1)] {
            for limit in [1, 10, 999] {
                let ask = Ask {
                    query: &query,
                    bias,
                    space,
                    limit,
                };
                let one = scores(scan_portable(&codes, ask));
                for parts in [2, 3, 7] {
                    let shared = scores(scan::scan_shared(&codes, ask, parts));
                    let score_of = |v: &[(f32, u32)]| v.iter().map(|f| f.0).collect::<Vec<_>>();
                    assert_eq!(
                        score_of(&shared),
                        score_of(&one),
                        "{parts} parts, limit {limit}"
                    );
                    assert!(!shared.iter().any(|&(_, i)| i == 3), "a retired row");
                }
            }
        }
    }

    #[test]
    fn the_scan_keeps_the_best_scored_rows_whatever_their_order() {
        let dim = 384;
        let rows = vectors(1000, dim, 13);
        let codes = held_codes(&rows, |_| "a");
        let (query, bias) = scan_query(&rows[42]);
        let ask = |limit| Ask {
            query: &query,
            bias,
            space: None,
            limit,
        };
        let mut every = scan(&codes, ask(rows.len()));
        assert_eq!(
            every.len(),
            rows.len(),
            "a limit past the rows keeps them all"
        );
        every.sort_by(|a, b| b.0.total_cmp(&a.0));
        for limit in [1, 7, 50, 333] {
            let mut best = scan(&codes, ask(limit));
            best.sort_by(|a, b| b.0.total_cmp(&a.0));
            assert_eq!(best.len(), limit);
            // Scores, not rows: equal scores may be kept either way.
            let scores = |v: &[(f32, u32)]| v.iter().map(|&(s, _)| s).collect::<Vec<_>>();
            assert_eq!(scores(&best), scores(&every[..limit]), "limit {limit}");
        }
        assert!(scan(&codes, ask(0)).is_empty());
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
        codes.push(&held("a0", "a", &unit(0)), Some(0), &[], Vec::new);
        codes.push(&held("a1", "a", &unit(1)), None, &[], Vec::new);
        codes.push(&held("b0", "b", &unit(0)), Some(2), &[], Vec::new);
        let near = codes.nearest(&unit(0), Some("a"), 2);
        assert_eq!(
            near.iter().map(|&(_, i)| codes.near(i)).collect::<Vec<_>>(),
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
        codes.push(&held("z", "a", &[0.0; 8]), Some(3), &[], Vec::new);
        codes.push(&held("short", "a", &[1.0; 3]), Some(4), &[], Vec::new);
        assert_eq!(codes.len(), 4);
        assert_eq!(codes.nearest(&unit(0), Some("a"), 1)[0].1, 0);
        // A closed row is near nothing; a new version of a row is held in its place.
        codes.retire("a0");
        assert_eq!(codes.len(), 3);
        assert_eq!(codes.nearest(&unit(0), Some("a"), 1)[0].1, 1);
        assert_eq!(codes.nearest(&unit(0), None, 1)[0].1, 2);
        let mut again = held("b0", "a", &unit(2));
        again.strength = 0.25;
        codes.push(&again, None, &[], Vec::new);
        assert_eq!(codes.len(), 3);
        let (cosine, i) = codes.nearest(&unit(2), Some("a"), 1)[0];
        let found = codes.scored(i, cosine);
        assert_eq!((found.record.id.as_str(), found.row_id), ("b0", None));
        assert_eq!(found.record.strength, 0.25);
    }

    /// A current row of `namespace` with vector `v`.
    fn held(id: &str, namespace: &str, v: &[f32]) -> MemoryRecord {
        let mut r = crate::store::schema::tests::record(id, "text", v.len());
        r.namespace = namespace.into();
        r.vector = v.to_vec();
        r
    }

    /// A row read again (after a patch of other columns, in a fragment read again) adds no
    /// postings for its words while its text is unchanged; one whose text changed is found
    /// by its new words only, and counts as stale until a whole read.
    #[test]
    fn a_row_read_again_unchanged_adds_nothing_stale() {
        let dim = 4;
        let words = |r: &MemoryRecord| -> Vec<String> {
            r.content.split(' ').map(str::to_lowercase).collect()
        };
        let mut codes = Codes::new(dim);
        let mut r = held("a", "ns", &vectors(1, dim, 5)[0]);
        r.content = "walnut tree by the gate".into();
        r.content_hash = crate::store::schema::content_hash(&r.content);
        codes.push(&r, Some(1), &[], || words(&r));
        r.strength = 0.5;
        codes.push(&r, Some(1), &[], || words(&r));
        assert_eq!(codes.stale_rows(), 0);
        let found = |codes: &Codes, word: &str| {
            let hits = codes.best_for_words(&[word.to_string()], None, 5).unwrap();
            hits.into_iter().map(|(_, i)| i).collect::<Vec<_>>()
        };
        assert_eq!(found(&codes, "walnut"), [0]);
        assert_eq!(codes.answered(0).strength, 0.5);

        r.content = "oak tree by the gate".into();
        r.content_hash = crate::store::schema::content_hash(&r.content);
        codes.push(&r, Some(1), &[], || words(&r));
        assert_eq!(codes.stale_rows(), 1);
        assert!(found(&codes, "walnut").is_empty());
        assert_eq!(found(&codes, "oak"), [0]);
    }

    #[test]
    fn the_scale_turns_a_code_product_into_the_cosine() {
        let rows = vectors(20, 384, 3);
        let mut codes = Vec::new();
        let scales: Vec<f32> = rows.iter().map(|r| quantize(r, &mut codes, None)).collect();
        let mut q = Vec::new();
        let q_scale = quantize(&rows[0], &mut q, None);
        for (i, row) in codes.chunks_exact(384).enumerate() {
            let dot: i32 = row.iter().zip(&q).map(|(&a, &b)| a as i32 * b as i32).sum();
            let approx = dot as f32 * scales[i] * q_scale;
            let truth = crate::linalg::cosine(&rows[0], &rows[i]);
            assert!((approx - truth).abs() < 0.01, "{approx} vs {truth}");
        }
    }
}
