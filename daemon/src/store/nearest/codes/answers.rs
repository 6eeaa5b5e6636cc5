//! What a search answers with of each held memory beyond what ranking reads (`held.rs`):
//! its text, metadata, content hash, accesses and salience factors ([`HELD_ANSWERS`]),
//! held with the words while the vectors are held whole in a plain store. The rows a
//! search answers with then need no take from Lance: at 100k memories that take was ~4 ms of
//! a ~13 ms search, most of it a fixed cost per column and fragment read (a take of two
//! columns still cost ~2.8 ms).
//!
//! A row's text and metadata lie end to end with every other's in one string (a string a
//! row took ~40 bytes more), its other values in a fixed record. A row whose values do not
//! fit that record (a hash the store did not make, salience factors that would not read back
//! the same), or any past [`MAX_TEXT_BYTES`], is not held: its columns are taken as before.
//!
//! [`HELD_ANSWERS`]: super::super::super::held::HELD_ANSWERS

use mnemo_protocol::understanding::SalienceFactors;

use super::super::super::schema::hex;
use super::super::super::MemoryRecord;

/// The text held in all: ~14 MB at 100k chat-sized memories, and a bound on what long ones
/// can take.
const MAX_TEXT_BYTES: usize = 48 << 20;

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

/// The answered columns of each held row, by row.
#[derive(Default)]
pub(super) struct Answers {
    text: String,
    rows: Vec<Answer>,
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
    pub(super) fn reserve(&mut self, rows: usize) {
        self.rows.reserve_exact(rows);
    }

    pub(super) fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.rows.shrink_to_fit();
    }

    /// Holds `record`'s values as row `row`'s, in place of any it held (the old text stays
    /// unused until the codes are read again). Rows are held in order: `row` is at most one
    /// past the last.
    pub(super) fn hold(&mut self, row: usize, record: &MemoryRecord) {
        let held = self.rows.get(row).copied();
        let answer = self.answer_of(record, held).unwrap_or(NOT_HELD);
        if row == self.rows.len() {
            self.rows.push(answer);
        } else {
            self.rows[row] = answer;
        }
    }

    /// Whether `a` holds `record`'s text and metadata.
    fn holds_text(&self, a: &Answer, record: &MemoryRecord) -> bool {
        a.at != UNHELD && self.text_of(a) == (record.content.as_str(), record.metadata.as_str())
    }

    fn text_of(&self, a: &Answer) -> (&str, &str) {
        let at = a.at as usize;
        let content_end = at + a.content_len as usize;
        let metadata_end = content_end + a.metadata_len as usize;
        (
            &self.text[at..content_end],
            &self.text[content_end..metadata_end],
        )
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
                if self.text.len() + text > MAX_TEXT_BYTES {
                    return None;
                }
                let at = self.text.len() as u32;
                self.text.push_str(&record.content);
                self.text.push_str(&record.metadata);
                at
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
        let Some(a) = self.rows.get_mut(row).filter(|a| a.at != UNHELD) else {
            return;
        };
        match u32::try_from(count) {
            Ok(count) => a.access_count = count,
            Err(_) => *a = NOT_HELD,
        }
    }

    /// Sets row `row`'s access count and last access `at`, where its values are held and its
    /// last access is older (the access fold's condition); values they cannot hold let them
    /// go.
    pub(super) fn fold_accesses(&mut self, row: usize, count: i64, at: i64) {
        let Some(a) = self.rows.get_mut(row).filter(|a| a.at != UNHELD) else {
            return;
        };
        let last = (a.last_accessed_at != NEVER).then_some(a.last_accessed_at);
        if !crate::store::filter::takes_accesses(last, at) {
            return;
        }
        match u32::try_from(count) {
            Ok(count) if at != NEVER => (a.access_count, a.last_accessed_at) = (count, at),
            _ => *a = NOT_HELD,
        }
    }

    /// Whether row `row`'s values are held.
    pub(super) fn holds(&self, row: usize) -> bool {
        self.rows.get(row).is_some_and(|a| a.at != UNHELD)
    }

    /// Sets `record`'s answered columns to row `row`'s, where held.
    pub(super) fn fill(&self, row: usize, record: &mut MemoryRecord) {
        let Some(a) = self.rows.get(row).filter(|a| a.at != UNHELD) else {
            return;
        };
        let (content, metadata) = self.text_of(a);
        (record.content, record.metadata) = (content.to_string(), metadata.to_string());
        record.content_hash = hex(&a.hash);
        record.access_count = i64::from(a.access_count);
        record.last_accessed_at = (a.last_accessed_at != NEVER).then_some(a.last_accessed_at);
        record.set_salience_factors(a.factors.as_ref());
    }

    /// Bytes allocated, for the log and status.
    pub(super) fn bytes(&self) -> usize {
        self.text.capacity() + self.rows.capacity() * std::mem::size_of::<Answer>()
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

    #[test]
    fn a_rows_answered_columns_read_back_as_written() {
        let mut answers = Answers::default();
        let (a, b) = (answered("a", "Walnuts in the park"), answered("b", "Tea"));
        answers.hold(0, &a);
        answers.hold(1, &b);
        assert_eq!(columns(&filled(&answers, 0)), columns(&a));
        assert_eq!(columns(&filled(&answers, 1)), columns(&b));
        // A new version in place of the row: its values, not the old ones.
        let mut a2 = answered("a", "Walnuts under the oak");
        (a2.metadata, a2.salience_factors, a2.access_count) = (String::new(), None, 0);
        a2.last_accessed_at = None;
        answers.hold(0, &a2);
        assert_eq!(columns(&filled(&answers, 0)), columns(&a2));
        assert_eq!(columns(&filled(&answers, 1)), columns(&b));
        assert!(answers.holds(0) && answers.holds(1) && !answers.holds(2));
        assert!(answers.bytes() > 0);

        // Held again with its text unchanged (read again after a patch of other columns),
        // a row adds no text.
        let text = answers.text.len();
        a2.access_count = 9;
        answers.hold(0, &a2);
        assert_eq!(answers.text.len(), text);
        assert_eq!(columns(&filled(&answers, 0)), columns(&a2));
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
        let mut answers = Answers::default();
        let mut never = answered("never", "text");
        never.last_accessed_at = None;
        answers.hold(0, &answered("seen", "text")); // 3 accesses, the last at T
        answers.hold(1, &never);
        let t = 1_700_000_000_000_000;
        let accesses = |answers: &Answers, row| {
            let r = filled(answers, row);
            (r.access_count, r.last_accessed_at)
        };
        // Folded already (a run again after a crash): nothing changes.
        answers.fold_accesses(0, 5, t);
        assert_eq!(accesses(&answers, 0), (3, Some(t)));
        answers.fold_accesses(0, 5, t + 1);
        assert_eq!(accesses(&answers, 0), (5, Some(t + 1)));
        answers.fold_accesses(1, 2, t);
        assert_eq!(accesses(&answers, 1), (2, Some(t)));
        // A count the row cannot hold lets its values go; a row not held stays so.
        answers.fold_accesses(1, -1, t + 1);
        assert!(!answers.holds(1));
        answers.fold_accesses(2, 1, t);
        assert!(!answers.holds(2));
    }
}
