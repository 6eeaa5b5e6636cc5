//! What a search answers with of each held memory beyond what ranking reads (`held.rs`):
//! its text, metadata, content hash, accesses and salience factors ([`HELD_ANSWERS`]). The
//! rows a search answers with then need no take from Lance, whose cost is mostly fixed per
//! column and fragment read, so even a take of few columns costs much of it
//! (`docs/benchmarks.md`, held in memory).
//!
//! A row's text and metadata lie end to end with every other's (a string a row took ~40
//! bytes more), its other values in a fixed record. Held with the whole codes, both are in
//! memory; with signed codes (1M memories, ~136 MB of chat-sized text) they lie in files in
//! the store's directory (`tail.rs`), whose pages the kernel caches, and a row answered is
//! two reads. A row whose values do not fit the record (a hash the store did not make,
//! salience factors that would not read back the same), or past the text held in all, is not
//! held: its columns are taken as before.
//!
//! [`HELD_ANSWERS`]: super::crate::held::ranking::HELD_ANSWERS

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use mnemo_protocol::understanding::SalienceFactors;

use super::tail::{Read, Tail, Wait};
use crate::store::schema::hex;
use crate::store::MemoryRecord;

/// The text held in memory in all: ~14 MB at 100k chat-sized memories, and a bound on what
/// long ones can take.
const MAX_TEXT_BYTES: usize = 48 << 20;

/// The text held in a file in all (a record's offset is 32 bits).
const MAX_FILED_TEXT_BYTES: usize = 3 << 30;

/// [`Answer::at`] of a row not held.
const UNHELD: u32 = u32::MAX;

/// [`Answer::last_accessed_at`] of a row never accessed.
const NEVER: i64 = i64::MIN;

/// One row's values.
#[derive(Clone, Copy)]
struct Answer {
    /// Where the row's content begins in [`Answers::text`] (its metadata right after it);
    /// [`UNHELD`] for a row not held.
    at: u32,
    content_len: u32,
    metadata_len: u32,
    access_count: u32,
    /// [`NEVER`] for None.
    last_accessed_at: i64,
    /// The content hash's 16 bytes (the store writes them as 32 hex digits).
    hash: [u8; 16],
    factors: Option<SalienceFactors>,
}

const NOT_HELD: Answer = Answer {
    at: UNHELD,
    content_len: 0,
    metadata_len: 0,
    access_count: 0,
    last_accessed_at: NEVER,
    hash: [0; 16],
    factors: None,
};

/// Bytes of a record: four counts, a time, a hash, and the factors with a byte saying
/// whether there are any.
const RECORD_BYTES: usize = 4 * 4 + 8 + 16 + 1 + FACTORS * 4;

/// Salience factors a record holds, in [`SalienceFactors::named`]'s order.
const FACTORS: usize = 8;

impl Answer {
    fn to_bytes(self) -> [u8; RECORD_BYTES] {
        let mut out = [0u8; RECORD_BYTES];
        let counts = [
            self.at,
            self.content_len,
            self.metadata_len,
            self.access_count,
        ];
        for (k, count) in counts.into_iter().enumerate() {
            out[4 * k..4 * k + 4].copy_from_slice(&count.to_le_bytes());
        }
        out[16..24].copy_from_slice(&self.last_accessed_at.to_le_bytes());
        out[24..40].copy_from_slice(&self.hash);
        if let Some(f) = self.factors {
            out[40] = 1;
            for (k, (_, v)) in f.named().into_iter().enumerate() {
                out[41 + 4 * k..45 + 4 * k].copy_from_slice(&v.to_le_bytes());
            }
        }
        out
    }

    fn from_bytes(b: &[u8; RECORD_BYTES]) -> Self {
        let word = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        let factor =
            |k: usize| f32::from_le_bytes(b[41 + 4 * k..45 + 4 * k].try_into().expect("4 bytes"));
        Self {
            at: word(0),
            content_len: word(4),
            metadata_len: word(8),
            access_count: word(12),
            last_accessed_at: i64::from_le_bytes(b[16..24].try_into().expect("8 bytes")),
            hash: b[24..40].try_into().expect("16 bytes"),
            factors: (b[40] == 1).then(|| SalienceFactors {
                emotional_intensity: factor(0),
                novelty: factor(1),
                self_reference: factor(2),
                relationship: factor(3),
                temporal: factor(4),
                explicit_marking: factor(5),
                action_density: factor(6),
                context_richness: factor(7),
            }),
        }
    }
}

/// The answered columns of each held row, by row: their records, and their text as rows of
/// one byte.
pub(super) struct Answers {
    records: Tail,
    text: Tail,
    /// The text held in all, at most.
    max_text: usize,
    /// Set when a file could not be read: no row counts as held after.
    unreadable: AtomicBool,
}

impl Default for Answers {
    fn default() -> Self {
        Self {
            records: Tail::new("answered records", RECORD_BYTES),
            text: Tail::new("answered text", 1),
            max_text: MAX_TEXT_BYTES,
            unreadable: AtomicBool::new(false),
        }
    }
}

/// The 16 bytes of a content hash written as 32 lower-case hex digits.
fn hash_bytes(hash: &str) -> Option<[u8; 16]> {
    let digits = hash.as_bytes();
    if digits.len() != 32 {
        return None;
    }
    let nibble = |d: u8| match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        _ => None,
    };
    let mut bytes = [0u8; 16];
    for (b, pair) in bytes.iter_mut().zip(digits.chunks(2)) {
        *b = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(bytes)
}

/// `record`'s salience factors, where they read back as stored.
fn exact_factors(record: &MemoryRecord) -> Option<Option<SalienceFactors>> {
    let Some(stored) = &record.salience_factors else {
        return Some(None);
    };
    let factors = record.salience_factors()?;
    let again = serde_json::to_string(&factors).ok()?;
    (again == *stored).then_some(Some(factors))
}

impl Answers {
    /// Answers held in files in `dir`, the store's directory; None where they cannot be made
    /// (the rows' columns are then taken from the store).
    pub(super) fn in_files(dir: &Path) -> Option<Self> {
        let held = Self::default();
        let records = held.records.writing_to(dir);
        let text = held.text.writing_to(dir);
        if !(records.in_file() && text.in_file()) {
            tracing::warn!("a search reads the rows it answers with from the store");
            return None;
        }
        Some(Self {
            records,
            text,
            max_text: MAX_FILED_TEXT_BYTES,
            ..Self::default()
        })
    }

    pub(super) fn reserve(&mut self, rows: usize) {
        self.records.reserve(rows);
    }

    pub(super) fn shrink_to_fit(&mut self) {
        self.records.shrink_to_fit();
        self.text.shrink_to_fit();
    }

    /// Asks the kernel to hold the files in its cache (`Tail::keep_cached`).
    pub(super) fn keep_cached(&self, room: &mut u64) -> u64 {
        self.records.keep_cached(room) + self.text.keep_cached(room)
    }

    /// Row `row`'s record; None past the last row, or where the file could not be read.
    fn record(&self, row: usize) -> Option<Answer> {
        if row >= self.records.rows() || self.unreadable.load(Ordering::Relaxed) {
            return None;
        }
        let mut bytes = [0u8; RECORD_BYTES];
        match self.records.read_as(row, &mut bytes, Wait::Yes) {
            Read::Done => Some(Answer::from_bytes(&bytes)),
            _ => self.lost(),
        }
    }

    /// Marks the files unreadable, so that rows are taken from the store.
    fn lost<T>(&self) -> Option<T> {
        if !self.unreadable.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "the answered columns' files could not be read; rows are read from the store"
            );
        }
        None
    }

    /// Sets row `row`'s record (one past the last appends it).
    fn set(&mut self, row: usize, answer: Answer) {
        if row == self.records.rows() {
            self.records.push(&answer.to_bytes());
        } else {
            self.records.set(row, &answer.to_bytes());
        }
    }

    /// Holds `record`'s values as row `row`'s, in place of any it held (the old text stays
    /// unused until the codes are read again). Rows are held in order: `row` is at most one
    /// past the last.
    pub(super) fn hold(&mut self, row: usize, record: &MemoryRecord) {
        let held = self.record(row);
        let answer = self.answer_of(record, held).unwrap_or(NOT_HELD);
        self.set(row, answer);
    }

    /// Whether `a` holds `record`'s text and metadata.
    fn holds_text(&self, a: &Answer, record: &MemoryRecord) -> bool {
        a.at != UNHELD
            && self.text_of(a).as_ref().is_some_and(|(content, metadata)| {
                (content.as_str(), metadata.as_str())
                    == (record.content.as_str(), record.metadata.as_str())
            })
    }

    /// `a`'s content and metadata; None where they could not be read.
    fn text_of(&self, a: &Answer) -> Option<(String, String)> {
        let mut bytes = vec![0u8; (a.content_len + a.metadata_len) as usize];
        if !bytes.is_empty()
            && self.text.read_as(a.at as usize, &mut bytes, Wait::Yes) != Read::Done
        {
            return self.lost();
        }
        let metadata = bytes.split_off(a.content_len as usize);
        match (String::from_utf8(bytes), String::from_utf8(metadata)) {
            (Ok(content), Ok(metadata)) => Some((content, metadata)),
            _ => self.lost(),
        }
    }

    /// `record`'s values; its text where `held` (the row's values before) has it already, so
    /// a row read again unchanged adds nothing.
    fn answer_of(&mut self, record: &MemoryRecord, held: Option<Answer>) -> Option<Answer> {
        let hash = hash_bytes(&record.content_hash)?;
        let factors = exact_factors(record)?;
        let access_count = u32::try_from(record.access_count).ok()?;
        let last_accessed_at = match record.last_accessed_at {
            Some(NEVER) => return None,
            t => t.unwrap_or(NEVER),
        };
        let same_text = held.filter(|a| self.holds_text(a, record));
        let at = match same_text {
            Some(a) => a.at,
            None => {
                let text = record.content.len() + record.metadata.len();
                let at = self.text.rows();
                if at + text > self.max_text {
                    return None;
                }
                // In one push, so both go to the file in the same write.
                let mut both = Vec::with_capacity(text);
                both.extend_from_slice(record.content.as_bytes());
                both.extend_from_slice(record.metadata.as_bytes());
                self.text.push(&both);
                at as u32
            }
        };
        Some(Answer {
            at,
            content_len: record.content.len() as u32,
            metadata_len: record.metadata.len() as u32,
            access_count,
            last_accessed_at,
            hash,
            factors,
        })
    }

    /// Sets row `row`'s access count, where its values are held; a count they cannot hold
    /// lets them go (the row's columns are taken from the store).
    pub(super) fn set_access_count(&mut self, row: usize, count: i64) {
        let Some(mut a) = self.record(row).filter(|a| a.at != UNHELD) else {
            return;
        };
        match u32::try_from(count) {
            Ok(count) => a.access_count = count,
            Err(_) => a = NOT_HELD,
        }
        self.set(row, a);
    }

    /// Sets row `row`'s access count and last access `at`, where its values are held and its
    /// last access is older (the access fold's condition); values they cannot hold let them
    /// go.
    pub(super) fn fold_accesses(&mut self, row: usize, count: i64, at: i64) {
        let Some(mut a) = self.record(row).filter(|a| a.at != UNHELD) else {
            return;
        };
        let last = (a.last_accessed_at != NEVER).then_some(a.last_accessed_at);
        if !crate::store::filter::takes_accesses(last, at) {
            return;
        }
        match u32::try_from(count) {
            Ok(count) if at != NEVER => (a.access_count, a.last_accessed_at) = (count, at),
            _ => a = NOT_HELD,
        }
        self.set(row, a);
    }

    /// Whether row `row`'s values are held.
    pub(super) fn holds(&self, row: usize) -> bool {
        self.record(row).is_some_and(|a| a.at != UNHELD)
    }

    /// Sets `record`'s answered columns to row `row`'s, where held (and readable).
    pub(super) fn fill(&self, row: usize, record: &mut MemoryRecord) {
        let Some(a) = self.record(row).filter(|a| a.at != UNHELD) else {
            return;
        };
        let Some((content, metadata)) = self.text_of(&a) else {
            return;
        };
        (record.content, record.metadata) = (content, metadata);
        record.content_hash = hex(&a.hash);
        record.access_count = i64::from(a.access_count);
        record.last_accessed_at = (a.last_accessed_at != NEVER).then_some(a.last_accessed_at);
        record.set_salience_factors(a.factors.as_ref());
    }

    /// Bytes allocated in memory, for the log and status.
    pub(super) fn bytes(&self) -> usize {
        self.records.bytes() + self.text.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::content_hash;

    fn answered(id: &str, content: &str) -> MemoryRecord {
        let mut r = crate::store::schema::tests::record(id, content, 4);
        r.content_hash = content_hash(content);
        r.metadata = format!("{{\"about\":\"{id}\"}}");
        r.access_count = 3;
        r.last_accessed_at = Some(1_700_000_000_000_000);
        let factors = SalienceFactors {
            novelty: 0.0509215,
            self_reference: 1.0,
            ..Default::default()
        };
        r.set_salience_factors(Some(&factors));
        r
    }

    /// The answered columns of `record` alone.
    fn columns(r: &MemoryRecord) -> (String, String, String, (i64, Option<i64>), Option<String>) {
        let r = r.clone();
        let accesses = (r.access_count, r.last_accessed_at);
        (
            r.content,
            r.metadata,
            r.content_hash,
            accesses,
            r.salience_factors,
        )
    }

    fn filled(answers: &Answers, row: usize) -> MemoryRecord {
        let mut r = MemoryRecord::default();
        answers.fill(row, &mut r);
        r
    }

    /// `check` of answers held in memory from row 0, and of answers in files from the row
    /// after 20,000 others (rows are written a megabyte at a time: those put the first
    /// records and text in the files, the rest in memory), whose rows read back from the
    /// files, and are rewritten there.
    fn in_memory_and_in_files(check: impl Fn(Answers, usize)) {
        check(Answers::default(), 0);
        let dir = tempfile::tempdir().unwrap();
        let mut filed = Answers::in_files(dir.path()).expect("files in a temporary directory");
        let filler = answered("filler", &"f".repeat(100));
        let rows = 20_000;
        for row in 0..rows {
            filed.hold(row, &filler);
        }
        assert!(filed.records.rows() * RECORD_BYTES > filed.records.bytes());
        assert!(filed.text.rows() > filed.text.bytes());
        assert_eq!(columns(&filled(&filed, 0)), columns(&filler));
        filed.set_access_count(0, 41);
        assert_eq!(filled(&filed, 0).access_count, 41);
        check(filed, rows);
    }

    #[test]
    fn a_rows_answered_columns_read_back_as_written() {
        in_memory_and_in_files(read_back_as_written);
    }

    fn read_back_as_written(mut answers: Answers, first: usize) {
        // Rows from `first` on.
        let (r0, r1) = (first, first + 1);
        let (a, b) = (answered("a", "Walnuts in the park"), answered("b", "Tea"));
        answers.hold(r0, &a);
        answers.hold(r1, &b);
        assert_eq!(columns(&filled(&answers, r0)), columns(&a));
        assert_eq!(columns(&filled(&answers, r1)), columns(&b));
        // A new version in place of the row: its values, not the old ones.
        let mut a2 = answered("a", "Walnuts under the oak");
        (a2.metadata, a2.salience_factors, a2.access_count) = (String::new(), None, 0);
        a2.last_accessed_at = None;
        answers.hold(r0, &a2);
        assert_eq!(columns(&filled(&answers, r0)), columns(&a2));
        assert_eq!(columns(&filled(&answers, r1)), columns(&b));
        assert!(answers.holds(r0) && answers.holds(r1) && !answers.holds(r1 + 1));
        assert!(answers.bytes() > 0);

        // Held again with its text unchanged (read again after a patch of other columns),
        // a row adds no text.
        let text = answers.text.rows();
        a2.access_count = 9;
        answers.hold(r0, &a2);
        assert_eq!(answers.text.rows(), text);
        assert_eq!(columns(&filled(&answers, r0)), columns(&a2));
    }

    #[test]
    fn a_row_whose_values_would_not_read_back_the_same_is_not_held() {
        let mut answers = Answers::default();
        let good = answered("good", "text");
        let mut foreign_hash = good.clone();
        foreign_hash.content_hash = "ABCDEF".into();
        let mut upper_hex = good.clone();
        upper_hex.content_hash = good.content_hash.to_uppercase();
        let mut unread_factors = good.clone();
        unread_factors.salience_factors = Some("{}".into());
        let mut spaced_factors = good.clone();
        spaced_factors.salience_factors = good.salience_factors.as_ref().map(|f| format!(" {f}"));
        let mut negative = good.clone();
        negative.access_count = -1;
        let rows = [
            foreign_hash,
            upper_hex,
            unread_factors,
            spaced_factors,
            negative,
        ];
        for (i, r) in rows.iter().enumerate() {
            answers.hold(i, r);
            assert!(!answers.holds(i), "row {i}");
            // A row not held leaves the record as it was.
            assert_eq!(filled(&answers, i), MemoryRecord::default());
        }
        // Past the bound on text held, rows are not held; those held stay.
        answers.hold(5, &answered("kept", "short"));
        let mut long = answered("long", "x");
        long.content = "x".repeat(MAX_TEXT_BYTES);
        answers.hold(6, &long);
        assert!(answers.holds(5) && !answers.holds(6));
    }

    #[test]
    fn accesses_fold_into_a_row_only_where_its_last_access_is_older() {
        in_memory_and_in_files(accesses_fold_where_older);
    }

    fn accesses_fold_where_older(mut answers: Answers, first: usize) {
        let (r0, r1, r2) = (first, first + 1, first + 2);
        let mut never = answered("never", "text");
        never.last_accessed_at = None;
        answers.hold(r0, &answered("seen", "text")); // 3 accesses, the last at T
        answers.hold(r1, &never);
        let t = 1_700_000_000_000_000;
        let accesses = |answers: &Answers, row| {
            let r = filled(answers, row);
            (r.access_count, r.last_accessed_at)
        };
        // Folded already (a run again after a crash): nothing changes.
        answers.fold_accesses(r0, 5, t);
        assert_eq!(accesses(&answers, r0), (3, Some(t)));
        answers.fold_accesses(r0, 5, t + 1);
        assert_eq!(accesses(&answers, r0), (5, Some(t + 1)));
        answers.fold_accesses(r1, 2, t);
        assert_eq!(accesses(&answers, r1), (2, Some(t)));
        // A count the row cannot hold lets its values go; a row not held stays so.
        answers.fold_accesses(r1, -1, t + 1);
        assert!(!answers.holds(r1));
        answers.fold_accesses(r2, 1, t);
        assert!(!answers.holds(r2));
    }
}
