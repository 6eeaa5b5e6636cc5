//! Reading the codes: whole, or only the fragments of the memories table that changed since
//! they were read. A fragment's rows never move within it and its id is never reused, so the
//! rows of a fragment the codes were read from stay as held until the fragment is replaced
//! (a compaction), rewritten in part (a patch of some columns) or given deletions (rows
//! closed or moved). Read whole after any write, the codes of 1M memories took ~12 s of a
//! core and ~900 MB besides those held every maintenance pass; a new memory now costs the
//! read of its own fragment, an index fold (which changes no fragment) nothing, and a write
//! whose whole change to the rows held the codes took as it committed (`patched.rs`) nothing.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures::TryStreamExt;
use lance::table::format::Fragment;
use lance::Dataset;
use lancedb::arrow::arrow_array::RecordBatch;

use super::codes::Codes;
use super::{Meanwhile, Nearest};
use crate::held::ranking::{HELD_ANSWERS, HELD_COLUMNS, HELD_WITH_VECTORS, SPARSE_COLUMNS};
use crate::held::Held;
use crate::store::beside::FRAGMENT_ROWS;
use crate::store::filter::current;
use crate::store::memories::row_id_column;
use crate::store::schema::records;
use crate::store::sql::col;
use crate::store::{MemoryRecord, StoreError};

/// Rows read at one time when only changed fragments are: each batch is held under the
/// codes' lock, which searches wait for.
const CHANGED_ROWS_PER_BATCH: usize = 1024;

/// Rows a whole read of the codes reads before the memory it freed goes back to the
/// system. The allocator keeps what each batch's rows freed, among the codes' own rows made
/// meanwhile, until the maintenance pass ends: at 1M memories a start's read peaked at
/// 0.90–0.96 GB of RSS, 0.80–0.86 GB handing it back as it went.
const ROWS_READ_BEFORE_RELEASING: usize = 65_536;

/// Bytes a whole read of the codes reads ahead of the rows it holds.
const READ_AHEAD_BYTES: u64 = 32 << 20;

/// Past this share of the table's rows in changed fragments (a decay that moved every
/// memory's strength), and more than a fragment's, the codes are read whole beside those held, which searches use
/// meanwhile: read in part, batch by batch under the codes' lock, the 1M rows a daily run's
/// decay changed kept that run's dedup waiting (16.1 s rather than 5.6).
const CHANGED_SHARE_READ_WHOLE: usize = 4;

/// Rows held no longer (closed since the codes were read whole) keep their place, and rows
/// whose words were held again their old postings: past an eighth of the rows held, or this
/// many in a small store, the codes are read whole again, which leaves them out.
const STALE_ROWS_KEPT: usize = 4096;

/// What changed in the memories table since the codes were read.
pub(super) struct Changed {
    /// Fragments new or changed since: their current rows are read.
    read: Vec<Fragment>,
    /// Fragments changed or gone: rows held in them that the read does not find again are
    /// no longer current.
    stale: HashSet<u64>,
    /// Rows in the fragments `read` (physical rows, deleted ones too).
    rows: usize,
}

/// What a read of the codes began with: the invalidations and the changes of held columns
/// counted then (any since void or stale what it read).
#[derive(Clone, Copy)]
pub(super) struct Begun {
    invalidations: u64,
    ranking_changes: u64,
}

/// A row read, with its row id, its entities as stored and its words as indexed.
type Read = (MemoryRecord, u64, Vec<String>);

impl Nearest {
    /// Whether the codes should be read again: none are held, the table changed since, rows
    /// wait for their row ids, or the values held were not taken as exact (a write told of
    /// its change while they were read, which may have read it already).
    pub(super) fn due(&self, version: u64) -> bool {
        self.rows().is_none()
            || version != self.read_at.load(Ordering::Relaxed)
            || self.unplaced.load(Ordering::Relaxed) > 0
            || !self.holds_ranking()
    }

    /// How many fragments of `dataset` the next pass would read, and how many it finds
    /// stale ([`Self::changed`]).
    #[cfg(test)]
    pub(super) fn to_read(&self, dataset: &Dataset, whole: bool) -> Option<(usize, usize)> {
        self.changed(dataset, whole)
            .map(|c| (c.read.len(), c.stale.len()))
    }

    /// The fragments of `dataset` the held codes miss, or None when the codes must be read
    /// whole: none are held, they are not of the kind `whole` wants, too many of their rows
    /// are stale, rows wait for row ids that no changed fragment gives, or most of the table
    /// changed.
    fn changed(&self, dataset: &Dataset, whole: bool) -> Option<Changed> {
        {
            let codes = self.codes.read().unwrap_or_else(|e| e.into_inner());
            let codes = codes.as_ref()?;
            let kind_wanted = self.kind_for(whole);
            if (codes.has_vectors(), codes.is_signed()) != kind_wanted
                || codes.stale_rows() > STALE_ROWS_KEPT.max(codes.len() / 8)
            {
                return None;
            }
        }
        let read_from = self.read_from.lock().unwrap_or_else(|e| e.into_inner());
        if read_from.is_empty() {
            return None;
        }
        let now: HashMap<u64, &Fragment> = dataset.fragments().iter().map(|f| (f.id, f)).collect();
        let read: Vec<Fragment> = now
            .values()
            .filter(|f| read_from.get(&f.id) != Some(**f))
            .map(|f| (*f).clone())
            .collect();
        let stale: HashSet<u64> = read_from
            .keys()
            .copied()
            .filter(|id| now.get(id).is_none_or(|f| read_from.get(id) != Some(*f)))
            .collect();
        if read.is_empty() && self.unplaced.load(Ordering::Relaxed) > 0 {
            return None;
        }
        let rows: usize = read.iter().filter_map(|f| f.physical_rows).sum();
        let held: usize = now.values().filter_map(|f| f.physical_rows).sum();
        if rows > (held / CHANGED_SHARE_READ_WHOLE).max(FRAGMENT_ROWS) {
            return None;
        }
        Some(Changed { read, stale, rows })
    }

    /// Whether codes read now should hold vectors, and signed ones: for `whole` codes (all
    /// current memories within `max_vector_rows`) unsigned ones.
    fn kind_for(&self, whole: bool) -> (bool, bool) {
        if self.max_vector_rows == 0 || !(whole || self.signs) {
            (false, false)
        } else {
            (true, !whole)
        }
    }

    /// Holds the rows of a changed fragment read: each in place of what is held under its
    /// id, or added. Rows closed since the read began are not. False when the codes went
    /// meanwhile (an invalidation, or too many rows): the read stops.
    fn apply(&self, rows: Vec<Read>, begun: Begun, seen: &mut Vec<bool>) -> bool {
        let mut guard = self.codes.write().unwrap_or_else(|e| e.into_inner());
        let Some(codes) = guard.as_mut() else {
            return false;
        };
        if self.invalidated.load(Ordering::Acquire) != begun.invalidations {
            return false;
        }
        let retired = self.retired_meanwhile();
        for (record, row_id, words) in rows {
            if retired.contains(record.id.as_str()) {
                continue;
            }
            if let Some(i) = codes.push(&record, Some(row_id), &record.entities, || words) {
                if seen.len() <= i {
                    seen.resize(i + 1, false);
                }
                seen[i] = true;
            }
        }
        true
    }

    /// Ids closed while the codes were read (they keep the `meanwhile` lock).
    fn retired_meanwhile(&self) -> HashSet<String> {
        let meanwhile = self.meanwhile.lock().unwrap_or_else(|e| e.into_inner());
        meanwhile
            .iter()
            .filter_map(|w| match w {
                Meanwhile::Retired(id) => Some(id.clone()),
                _ => None,
            })
            .collect()
    }

    /// Ends a read of changed fragments, made at `read_at` (a table version and its
    /// fragments): rows held in `stale` fragments not `seen` again leave the codes. Returns
    /// the rows held, or None when the codes went meanwhile.
    fn finish_changes(
        &self,
        changed: Changed,
        seen: Vec<bool>,
        read_at: (u64, &[Fragment]),
        begun: Begun,
    ) -> Option<usize> {
        let mut guard = self.codes.write().unwrap_or_else(|e| e.into_inner());
        let meanwhile = self.end_read(&mut guard, begun)?;
        let codes = guard.as_mut()?;
        codes.retire_unseen(&changed.stale, &seen);
        let mut after_read = Vec::new();
        for write in meanwhile {
            match write {
                Meanwhile::Retired(id) => codes.retire(&id),
                Meanwhile::Patched(patch) => patch.set_in(codes),
                Meanwhile::Taken(_) | Meanwhile::Moved(_) => after_read.push(write),
                // Held in these codes as it was written.
                Meanwhile::Held(..) => {}
            }
        }
        // Every held value a write changed lies in a fragment it changed, read again here,
        // or was set in the codes by the write.
        self.mark_read(codes, read_at, begun, after_read);
        self.unplaced
            .store(codes.unplaced() as u64, Ordering::Relaxed);
        Some(codes.len())
    }

    /// Holds `codes`, read at `read_at` (a table version and its fragments), in place of
    /// the old, with the rows written while they were read that they miss. Under the lock
    /// the writer takes to add rows, so none is added to the old codes after the new were
    /// made. Returns the rows held, their bytes and whether these are the first codes held.
    /// None when an invalidation came while they were read (they may predate it): the
    /// next pass reads them again.
    pub(super) fn replace(
        &self,
        mut codes: Codes,
        read_at: (u64, &[Fragment]),
        begun: Begun,
        words: &dyn Fn(&str) -> Vec<String>,
    ) -> Option<(usize, usize, bool)> {
        let mut guard = self.codes.write().unwrap_or_else(|e| e.into_inner());
        let meanwhile = self.end_read(&mut guard, begun)?;
        let mut late = 0;
        let mut after_read = Vec::new();
        for write in meanwhile {
            match write {
                // A row the read found is held with its row id.
                Meanwhile::Held(r, _) if codes.index_of(&r.id).is_some() => {}
                Meanwhile::Held(r, entities) => {
                    codes.push(&r, None, &entities, || words(&r.content));
                    late += 1;
                }
                Meanwhile::Retired(id) => codes.retire(&id),
                Meanwhile::Patched(patch) => patch.set_in(&mut codes),
                Meanwhile::Taken(_) | Meanwhile::Moved(_) => after_read.push(write),
            }
        }
        self.mark_read(&mut codes, read_at, begun, after_read);
        self.unplaced.store(late, Ordering::Relaxed);
        let first = guard.is_none();
        let held = (codes.len(), codes.bytes(), first);
        *guard = Some(codes);
        Some(held)
    }

    /// Ends a read, under the codes' lock (`guard`): the writes made meanwhile, or None when
    /// an invalidation came meanwhile (the codes held are dropped: they may predate it).
    fn end_read(&self, guard: &mut Option<Codes>, begun: Begun) -> Option<Vec<Meanwhile>> {
        self.reading.store(false, Ordering::Release);
        let meanwhile =
            std::mem::take(&mut *self.meanwhile.lock().unwrap_or_else(|e| e.into_inner()));
        if self.invalidated.load(Ordering::Acquire) != begun.invalidations {
            *guard = None;
            return None;
        }
        Some(meanwhile)
    }

    /// Marks `codes` as read at `read_at`: their values are exact unless a write changed
    /// held columns meanwhile. Then takes what commits made meanwhile changed or moved
    /// (`after_read`: fragments taken whole, rows a compaction moved), where the read had
    /// met them as they were before.
    fn mark_read(
        &self,
        codes: &mut Codes,
        read_at: (u64, &[Fragment]),
        begun: Begun,
        after_read: Vec<Meanwhile>,
    ) {
        codes.fresh = self.ranking_changes.load(Ordering::Acquire) == begun.ranking_changes;
        self.read_at.store(read_at.0, Ordering::Relaxed);
        self.hold_read_from(read_at.1);
        for write in after_read {
            match write {
                Meanwhile::Taken(fragments) => {
                    self.take_fragments(&fragments);
                }
                Meanwhile::Moved(moves) => self.take_moves(codes, &moves),
                Meanwhile::Held(..) | Meanwhile::Retired(_) | Meanwhile::Patched(_) => {}
            }
        }
    }

    fn hold_read_from(&self, fragments: &[Fragment]) {
        *self.read_from.lock().unwrap_or_else(|e| e.into_inner()) =
            fragments.iter().map(|f| (f.id, f.clone())).collect();
    }

    /// Starts a read: writes made from now on are kept for the codes read (`meanwhile`).
    pub(super) fn begin_read(&self) -> Begun {
        let begun = Begun {
            invalidations: self.invalidated.load(Ordering::Acquire),
            ranking_changes: self.ranking_changes.load(Ordering::Acquire),
        };
        self.reading.store(true, Ordering::Release);
        begun
    }

    /// Ends a read that failed: the next pass reads whole.
    fn abandon_read(&self) {
        self.reading.store(false, Ordering::Release);
        self.meanwhile
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        // Never a table version: read again next pass.
        self.read_at.store(u64::MAX, Ordering::Relaxed);
        self.read_from
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}

impl Held {
    /// Reads the codes again if the memories changed since they were read (or were never
    /// read): only the fragments that changed, where the codes held allow, else whole.
    /// Returns the rows held, or None when they are off or too many.
    pub async fn refresh_nearest(&self) -> Result<Option<usize>, StoreError> {
        let nearest = &self.nearest;
        if nearest.max_rows == 0 {
            return Ok(None);
        }
        let version = self.store.memories_table().version().await?;
        if !nearest.due(version) {
            return Ok(nearest.rows());
        }
        let started = std::time::Instant::now();
        let current_rows = self.store.current_memories() as usize;
        if current_rows > nearest.max_rows {
            *nearest.codes.write().unwrap_or_else(|e| e.into_inner()) = None;
            nearest.read_at.store(version, Ordering::Relaxed);
            return Ok(None);
        }
        let whole = current_rows <= nearest.max_vector_rows;
        // Before the snapshot, so every write it misses is kept for the codes.
        let begun = nearest.begin_read();
        let read = async {
            let dataset = self.store.snapshot().await?;
            match nearest.changed(&dataset, whole) {
                Some(changed) => {
                    let rows = changed.rows;
                    let held = self.read_changed(&dataset, changed, begun).await?;
                    tracing::debug!(
                        "codes read again in part: {rows} rows of changed fragments in {:.2} s",
                        started.elapsed().as_secs_f64()
                    );
                    Ok(held)
                }
                None => self.read_whole(&dataset, whole, begun, started).await,
            }
        };
        let result: Result<Option<usize>, StoreError> = read.await;
        if result.is_err() {
            nearest.abandon_read();
        }
        result
    }

    /// Reads the current rows of the changed fragments into the codes held, batch by batch.
    async fn read_changed(
        &self,
        dataset: &Arc<Dataset>,
        changed: Changed,
        begun: Begun,
    ) -> Result<Option<usize>, StoreError> {
        let nearest = &self.nearest;
        // By row held: whether the read found it.
        let mut seen = Vec::new();
        if !changed.read.is_empty() {
            let (columns, with_words) = {
                let codes = nearest.codes.read().unwrap_or_else(|e| e.into_inner());
                let Some(codes) = codes.as_ref() else {
                    nearest.abandon_read();
                    return Ok(None);
                };
                (self.code_columns(codes), codes.holds_words())
            };
            let mut scan = dataset.scan();
            scan.with_fragments(changed.read.clone())
                .filter(&self.held_rows().sql())?
                .project(&columns)?
                .with_row_id()
                .batch_size(CHANGED_ROWS_PER_BATCH);
            let mut batches = scan.try_into_stream().await?;
            while let Some(batch) = batches.try_next().await? {
                let rows = self.rows_read(&batch, with_words)?;
                if !nearest.apply(rows, begun, &mut seen) {
                    nearest.abandon_read();
                    return Ok(None);
                }
            }
        }
        let read_at = (dataset.version().version, dataset.fragments().as_slice());
        Ok(nearest.finish_changes(changed, seen, read_at, begun))
    }

    /// Reads the codes whole and holds them in place of any held.
    async fn read_whole(
        &self,
        dataset: &Arc<Dataset>,
        whole: bool,
        begun: Begun,
        started: std::time::Instant,
    ) -> Result<Option<usize>, StoreError> {
        let nearest = &self.nearest;
        let codes = self.read_codes(dataset, whole).await?;
        let held = match (codes.has_vectors(), codes.is_signed()) {
            (true, false) => "",
            (true, true) => "; two bits a component of their vectors, the rest in a file",
            (false, _) => "; their vectors are searched through the ANN index",
        };
        let read_at = (dataset.version().version, dataset.fragments().as_slice());
        let Some((rows, bytes, first)) = nearest.replace(codes, read_at, begun, &|text| {
            self.store.sealing().words(text)
        }) else {
            return Ok(None);
        };
        let took = started.elapsed().as_secs_f64();
        if first && whole {
            tracing::info!(
                "vectors in memory: {rows} current memories ({:.1} MB{held}) read in {took:.2} s",
                bytes as f64 / 1e6
            );
        } else if first {
            tracing::info!(
                "ranking values in memory: {rows} current memories ({:.1} MB{held}) read in \
                 {took:.2} s",
                bytes as f64 / 1e6
            );
        } else {
            tracing::debug!("codes read again: {rows} rows in {took:.2} s");
        }
        Ok(Some(rows))
    }

    /// The codes of every current memory of the configured model in `dataset`, batch by
    /// batch, with what ranking reads of each: `whole` codes in memory, or signed ones
    /// (`codes.rs`).
    async fn read_codes(&self, dataset: &Arc<Dataset>, whole: bool) -> Result<Codes, StoreError> {
        let mut codes = match self.nearest.kind_for(whole) {
            (false, _) => Codes::without_vectors(self.store.dim()),
            (true, false) => Codes::new(self.store.dim()).writing_to(self.store.db_dir()),
            (true, true) => Codes::signed(self.store.dim()).writing_to(self.store.db_dir()),
        };
        if codes.holds_words() {
            codes.words_hashed = self.store.sealing().is_on();
        }
        if self.store.sealing().is_on() {
            codes.drop_answers();
        }
        let mut scan = dataset.scan();
        scan.filter(&self.held_rows().sql())?
            .project(&self.code_columns(&codes))?
            .with_row_id()
            // One fragment and one batch at a time, within 32 MiB of reads ahead: with
            // Lance's defaults (fragments read ahead, 2 GiB of reads), RSS at a start at 1M
            // memories peaked at 0.83–0.88 GB while the codes were read, now 0.60–0.62 GB,
            // in the same 10 s.
            .fragment_readahead(1)
            .batch_readahead(1)
            .io_buffer_size(READ_AHEAD_BYTES);
        // Grown by doubling, the codes of 100k memories took 74 MB instead of 46.
        codes.reserve(self.store.current_memories() as usize);
        let with_words = codes.holds_words();
        let mut batches = scan.try_into_stream().await?;
        let mut unreleased = 0;
        while let Some(batch) = batches.try_next().await? {
            for (record, row_id, words) in self.rows_read(&batch, with_words)? {
                codes.push(&record, Some(row_id), &record.entities, || words);
            }
            unreleased += batch.num_rows();
            if unreleased >= ROWS_READ_BEFORE_RELEASING {
                crate::process::release_freed_memory();
                unreleased = 0;
            }
        }
        codes.shrink_to_fit();
        Ok(codes)
    }

    /// The rows the codes hold: current memories of the configured model.
    fn held_rows(&self) -> crate::store::Pred {
        current().and(col("embed_model").eq(self.store.embed_model()))
    }

    /// The columns `codes` are read with: what they hold of each row.
    fn code_columns(&self, codes: &Codes) -> Vec<&'static str> {
        let mut columns = vec!["id", "namespace"];
        if codes.has_vectors() {
            columns.push("vector");
        }
        columns.extend(HELD_COLUMNS);
        columns.extend(SPARSE_COLUMNS);
        if codes.holds_with_vectors() {
            columns.extend(HELD_WITH_VECTORS);
        }
        if codes.holds_words() {
            columns.push(self.store.sealing().text_index().0);
        }
        if codes.holds_answers() {
            let unread: Vec<&str> = HELD_ANSWERS
                .iter()
                .copied()
                .filter(|c| !columns.contains(c))
                .collect();
            columns.extend(unread);
        }
        columns
    }

    /// The rows of a batch read for the codes, each with its row id and (`with_words`) its
    /// words as indexed.
    fn rows_read(&self, batch: &RecordBatch, with_words: bool) -> Result<Vec<Read>, StoreError> {
        records(batch)
            .zip(row_id_column(batch))
            .map(|(record, row_id)| {
                let row_id = row_id.ok_or_else(|| StoreError::Schema("no _rowid column".into()))?;
                let words = match with_words {
                    true => self.store.sealing().stored_words(&record),
                    false => Vec::new(),
                };
                Ok((record, row_id, words))
            })
            .collect()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::tests::{next_version, row};
    use super::*;
    use crate::store::WriteOp;

    /// Each current row's id and row id, as the table has them now.
    async fn stored_row_ids(store: &crate::store::Store) -> Vec<(String, u64)> {
        let rows = store.ranking_rows(&current()).await.unwrap();
        rows.into_iter()
            .map(|s| (s.record.id, s.row_id.unwrap()))
            .collect()
    }

    /// Each row held, with its row id (sorted by id), and how many retired rows the codes
    /// keep.
    pub(in crate::held::nearest) fn held_rows(held: &Held) -> (Vec<(String, u64)>, usize) {
        let codes = held.nearest.codes.read().unwrap();
        let codes = codes.as_ref().unwrap();
        let stored: Vec<(String, u64)> = ["a", "b", "c", "c2", "d"]
            .iter()
            .filter_map(|id| {
                let i = codes.index_of(id)?;
                Some((id.to_string(), codes.near(i as u32).row_id?))
            })
            .collect();
        (stored, codes.stale_rows())
    }

    pub(in crate::held::nearest) async fn sorted(
        store: &crate::store::Store,
    ) -> Vec<(String, u64)> {
        let mut stored = stored_row_ids(store).await;
        stored.sort();
        stored
    }

    /// How many fragments the next pass would read, and how many it finds stale.
    pub(in crate::held::nearest) async fn to_read(held: &Held) -> Option<(usize, usize)> {
        let dataset = held.store.snapshot().await.unwrap();
        let whole = held.store.current_memories() as usize <= held.nearest.max_vector_rows;
        held.nearest.to_read(&dataset, whole)
    }

    /// Ends the read `begun` with the codes of `dataset`, read whole.
    pub(in crate::held::nearest) async fn read_whole_at(
        held: &Held,
        dataset: &Arc<Dataset>,
        begun: Begun,
    ) {
        let whole = held.store.current_memories() as usize <= held.nearest.max_vector_rows;
        let started = std::time::Instant::now();
        held.read_whole(dataset, whole, begun, started)
            .await
            .unwrap();
    }

    /// Writes whose whole change to the rows held the codes take as they commit leave no
    /// fragment to read again: a merge's rows closed by id, its survivors' salience and
    /// accesses lifted, decay's strengths and fade marks, summaries' demotions. The codes then answer as a whole
    /// read does. A patch of another held column still leaves its fragments to read.
    #[tokio::test]
    async fn patches_the_codes_take_in_place_leave_no_fragment_to_read() {
        use lancedb::arrow::arrow_array::{ArrayRef, Float32Array, Int64Array, StringArray};
        use std::sync::Arc;
        let dir = tempfile::tempdir().unwrap();
        let held = crate::held::tests::held_store(dir.path()).await;
        let store = held.store();
        let writer = store.writer();
        let mut rows: Vec<MemoryRecord> = ["a", "b", "c", "d"]
            .iter()
            .enumerate()
            .map(|(i, id)| row(id, i))
            .collect();
        for r in &mut rows {
            // As the store writes them, so the answered columns are held too.
            r.content_hash = crate::store::schema::content_hash(&r.content);
            r.set_salience_factors(None);
            r.faded_at = None;
        }
        writer.submit(WriteOp::Insert(rows)).await.unwrap();
        // As maintenance builds it: with an index on the id, Lance patches columns in place
        // (without, it moves the rows patched to a new fragment, which is read).
        writer.submit(WriteOp::BuildScalarIndexes).await.unwrap();
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(4));
        let ids = |ids: &[&str]| -> ArrayRef { Arc::new(StringArray::from(ids.to_vec())) };
        let open = |n: usize| -> ArrayRef { Arc::new(Int64Array::from(vec![None::<i64>; n])) };
        let patch_current = |columns: Vec<(&str, ArrayRef)>| {
            let batch = store.patch(columns).unwrap();
            let only_if = Some(current().on_target());
            writer.submit(WriteOp::Patch { batch, only_if })
        };
        let patches = [
            // A merge: a closed into b, then b lifted.
            vec![
                ("id", ids(&["a"])),
                ("valid_to", Arc::new(Int64Array::from(vec![9])) as ArrayRef),
                ("superseded_by", ids(&["b"])),
            ],
            vec![
                ("id", ids(&["b"])),
                (
                    "access_count",
                    Arc::new(Int64Array::from(vec![7])) as ArrayRef,
                ),
                (
                    "salience",
                    Arc::new(Float32Array::from(vec![9.5])) as ArrayRef,
                ),
                ("valid_to", open(1)),
            ],
            // Decay: c weakened and faded, d weakened.
            vec![
                ("id", ids(&["c", "d"])),
                (
                    "strength",
                    Arc::new(Float32Array::from(vec![0.25, 0.5])) as ArrayRef,
                ),
                (
                    "faded_at",
                    Arc::new(Int64Array::from(vec![Some(5), None])) as ArrayRef,
                ),
                ("valid_to", open(2)),
            ],
            // A summary's demotion: d halved and pointed at its summary.
            vec![
                ("id", ids(&["d"])),
                ("summarized_by", ids(&["s"])),
                (
                    "strength",
                    Arc::new(Float32Array::from(vec![0.125])) as ArrayRef,
                ),
                ("valid_to", open(1)),
            ],
        ];
        for patch in patches {
            let names: Vec<&str> = patch.iter().map(|(c, _)| *c).collect();
            patch_current(patch).await.unwrap();
            assert!(held.nearest.holds_ranking(), "{names:?}");
            assert_eq!(to_read(&held).await, Some((0, 0)), "{names:?}");
        }
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(3));
        let wanted = super::super::tests::nearest_wanted(&held, 1, 3).await;
        let in_place = held.complete(&wanted).await.unwrap();
        assert_eq!(in_place["b"].salience, 9.5);
        assert_eq!(in_place["b"].access_count, 7);
        assert_eq!(in_place["c"].strength, 0.25);
        assert_eq!(in_place["c"].faded_at, Some(5));
        assert_eq!(in_place["d"].strength, 0.125);
        assert_eq!(in_place["d"].summarized_by.as_deref(), Some("s"));
        held.nearest.invalidate();
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(3));
        let wanted = super::super::tests::nearest_wanted(&held, 1, 3).await;
        assert_eq!(held.complete(&wanted).await.unwrap(), in_place);

        // A held column not set in place: its values are stale until its fragment is read.
        let one_value = |id: &str, column: &'static str, value: f32| {
            let value: ArrayRef = Arc::new(Float32Array::from(vec![value]));
            vec![("id", ids(&[id])), (column, value), ("valid_to", open(1))]
        };
        patch_current(one_value("b", "emotion_valence", 0.5))
            .await
            .unwrap();
        assert!(!held.nearest.holds_ranking());
        assert_eq!(to_read(&held).await.map(|(read, _)| read), Some(1));
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(3));
        assert!(held.nearest.holds_ranking());

        // Patches while the codes are read again, from the table before them: the read ends
        // with their values, and with their fragments taken as read.
        let begun = held.nearest.begin_read();
        let dataset = store.snapshot().await.unwrap();
        patch_current(one_value("d", "salience", 4.5))
            .await
            .unwrap();
        let closed: ArrayRef = Arc::new(Int64Array::from(vec![9]));
        patch_current(vec![("id", ids(&["c"])), ("valid_to", closed)])
            .await
            .unwrap();
        read_whole_at(&held, &dataset, begun).await;
        assert_eq!(to_read(&held).await, Some((0, 0)));
        let held = held.nearest.held(&["c", "d"]).unwrap();
        assert!(held[0].is_none(), "c was closed");
        assert_eq!(held[1].as_ref().map(|r| r.salience), Some(4.5));
    }

    /// After each write only the fragments it changed are read (the codes keep the rows it
    /// retired until a whole read), and the codes then hold every current row at its row id,
    /// with its values, as a whole read does.
    #[tokio::test]
    async fn codes_read_in_part_hold_what_a_whole_read_holds() {
        let dir = tempfile::tempdir().unwrap();
        let held = crate::held::tests::held_store(dir.path()).await;
        let store = held.store();
        let writer = store.writer();
        let first = vec![row("a", 0), row("b", 1), row("c", 2)];
        writer.submit(WriteOp::Insert(first.clone())).await.unwrap();
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(3));
        assert_eq!(held_rows(&held), (sorted(store).await, 0));

        writer
            .submit(WriteOp::Insert(vec![row("d", 3)]))
            .await
            .unwrap();
        assert!(!held.nearest.placed());
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(4));
        assert!(held.nearest.placed(), "the new row has its row id");
        assert_eq!(held_rows(&held), (sorted(store).await, 0));

        writer
            .submit(next_version(&first[2], row("c2", 2)))
            .await
            .unwrap();
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(4));
        assert_eq!(
            held_rows(&held),
            (sorted(store).await, 1),
            "read in part: the old version's place is kept"
        );

        // A change the writer did not tell the codes of: its fragment is read again, and the
        // row it closed there leaves them.
        store
            .memories_table()
            .update()
            .only_if("id = 'a'")
            .column("valid_to", "5")
            .execute()
            .await
            .unwrap();
        store.recount().await.unwrap();
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(3));
        assert_eq!(held_rows(&held).0, sorted(store).await);

        // A compaction moves every row: each is held at its new row id.
        let before = sorted(store).await;
        let compact = lancedb::table::OptimizeAction::Compact {
            options: crate::store::purge::without_deleted(),
            remap_options: None,
        };
        writer
            .optimize(store.memories_table().clone(), compact)
            .await
            .unwrap();
        let after = sorted(store).await;
        assert_ne!(before, after, "the compaction moved rows");
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(3));
        assert_eq!(held_rows(&held).0, after);
        let in_part: Vec<Vec<(String, Option<u64>)>> = futures::future::join_all(
            (0..4).map(|i| super::super::tests::nearest_wanted(&held, i, 3)),
        )
        .await;
        let values = held.nearest.held(&["b", "c2", "d"]).unwrap();

        held.nearest.invalidate();
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(3));
        assert_eq!(held_rows(&held), (after, 0), "read whole");
        let whole: Vec<Vec<(String, Option<u64>)>> = futures::future::join_all(
            (0..4).map(|i| super::super::tests::nearest_wanted(&held, i, 3)),
        )
        .await;
        assert_eq!(in_part, whole);
        assert_eq!(values, held.nearest.held(&["b", "c2", "d"]).unwrap());
    }
}
