//! The words of each held memory, for the text leg of a search: each term's rows and how
//! often it occurs in each, scored by BM25 as LanceDB's full-text index scores (k1 1.2,
//! b 0.75, its idf), over the current memories alone. At 100k memories Lance's index took
//! 5–7 ms for a word one memory in ten holds (it reads each hit's length from its files, on
//! the cores the query's embedding wants at the same time); the postings held answer in a
//! fraction of a millisecond.
//!
//! A row replaced in place (a new version written under the same id) or retired leaves its
//! old postings behind until the codes are read again: each row's generation tells a
//! posting of its words now from one of its words before. Those left behind count towards
//! their term's idf until then.
//!
//! Each term's postings lie in bytes, each a varint of its row's distance from the one
//! before, its count and its generation: 3–4 bytes a posting rather than 8 (the words of
//! `mnemo bench search`'s 100k memories, 2.2M postings and 100k terms, 16.7 MB → 10.9).

use rustc_hash::FxHashMap;

use super::lookup::{key_hash, RowLookup};

/// BM25's term-frequency saturation and length normalisation, as Lance has them.
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// One row's occurrences of a term.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Posting {
    row: u32,
    /// The row's generation when these words were held (see [`Words::generation`]).
    generation: u16,
    count: u16,
}

/// A term's postings, encoded one after another (see the module's doc).
#[derive(Default)]
struct Postings {
    bytes: Vec<u8>,
    len: u32,
    /// The row of the last posting, which the next one's distance is from.
    last: u32,
}

fn push_varint(bytes: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        bytes.push(v as u8 | 0x80);
        v >>= 7;
    }
    bytes.push(v as u8);
}

fn read_varint(bytes: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = bytes[*at];
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

impl Postings {
    fn push(&mut self, p: Posting) {
        // Rows come in order but for a row replaced in place: a distance back is zigzagged.
        let distance = i64::from(p.row) - i64::from(self.last);
        push_varint(&mut self.bytes, ((distance << 1) ^ (distance >> 63)) as u64);
        push_varint(&mut self.bytes, u64::from(p.count));
        push_varint(&mut self.bytes, u64::from(p.generation));
        self.last = p.row;
        self.len += 1;
    }

    fn iter(&self) -> impl Iterator<Item = Posting> + '_ {
        let (mut at, mut row) = (0usize, 0i64);
        std::iter::from_fn(move || {
            if at == self.bytes.len() {
                return None;
            }
            let zigzag = read_varint(&self.bytes, &mut at);
            row += (zigzag >> 1) as i64 ^ -((zigzag & 1) as i64);
            let count = read_varint(&self.bytes, &mut at) as u16;
            let generation = read_varint(&self.bytes, &mut at) as u16;
            Some(Posting {
                row: row as u32,
                generation,
                count,
            })
        })
    }
}

/// Each term's text once, end to end, and a lookup of its index by it: a
/// `HashMap<Box<str>, u32>` took ~60 bytes a term (a box each, and a slot of 24), this ~15
/// (the bench's 100k memories each name a term of their own).
#[derive(Default)]
struct Terms {
    text: String,
    /// Where each term's text ends; it starts where the one before ends.
    ends: Vec<u32>,
    lookup: RowLookup,
}

/// Term `t`'s text, of `text` laid out by `ends`.
fn term_text<'a>(text: &'a str, ends: &[u32], t: u32) -> &'a str {
    let t = t as usize;
    let start = t.checked_sub(1).map_or(0, |before| ends[before] as usize);
    &text[start..ends[t] as usize]
}

impl Terms {
    fn find(&self, word: &str) -> Option<u32> {
        let (text, ends) = (&self.text, &self.ends);
        self.lookup
            .find(key_hash(word), |t| term_text(text, ends, t) == word)
    }

    /// The index of `word`, held from now if it was not.
    fn index_of(&mut self, word: &str) -> u32 {
        if let Some(t) = self.find(word) {
            return t;
        }
        let t = self.ends.len() as u32;
        self.text.push_str(word);
        self.ends.push(self.text.len() as u32);
        let (text, ends) = (&self.text, &self.ends);
        let hash_of = |r| key_hash(term_text(text, ends, r));
        self.lookup.insert(key_hash(word), t, |_| false, hash_of);
        t
    }

    fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.ends.shrink_to_fit();
        let (text, ends) = (&self.text, &self.ends);
        self.lookup
            .shrink_to_fit(|r| key_hash(term_text(text, ends, r)));
    }

    fn bytes(&self) -> usize {
        self.text.capacity() + self.ends.capacity() * 4 + self.lookup.bytes()
    }
}

/// Each held row's words, by term.
#[derive(Default)]
pub(super) struct Words {
    terms: Terms,
    /// Each term's postings, by term index.
    postings: Vec<Postings>,
    /// Each row's token count; 0 for a row holding no words (or retired).
    lengths: Vec<u32>,
    /// Bumped each time a row's words are replaced: its older postings are skipped.
    generation: Vec<u16>,
    /// A hash of each row's words: a row read again with the same words keeps its postings.
    hashes: Vec<u64>,
    /// Rows holding words, and their tokens in all: BM25's document count and mean length.
    rows: usize,
    tokens: u64,
}

impl Words {
    pub(super) fn reserve(&mut self, rows: usize) {
        self.lengths.reserve_exact(rows);
        self.generation.reserve_exact(rows);
    }

    pub(super) fn shrink_to_fit(&mut self) {
        self.postings
            .iter_mut()
            .for_each(|p| p.bytes.shrink_to_fit());
        self.postings.shrink_to_fit();
        self.terms.shrink_to_fit();
        self.lengths.shrink_to_fit();
        self.generation.shrink_to_fit();
        self.hashes.shrink_to_fit();
    }

    /// Holds `words` (the analyzer's tokens, with repeats) as row `row`'s, in place of any
    /// it held. Rows are held in order: `row` is at most one past the last. Returns whether
    /// a row held before left postings behind (its words changed).
    pub(super) fn hold(&mut self, row: usize, words: &[String]) -> bool {
        let hash = {
            use std::hash::{Hash, Hasher};
            let mut hasher = rustc_hash::FxHasher::default();
            words.hash(&mut hasher);
            hasher.finish()
        };
        let replaced = row < self.lengths.len();
        if replaced {
            if self.lengths[row] > 0 && self.hashes[row] == hash {
                return false;
            }
            self.forget(row);
            self.generation[row] = self.generation[row].wrapping_add(1);
            self.hashes[row] = hash;
        } else {
            self.lengths.push(0);
            self.generation.push(0);
            self.hashes.push(hash);
        }
        let mut counts: FxHashMap<&str, u16> = FxHashMap::default();
        for w in words {
            let c = counts.entry(w.as_str()).or_default();
            *c = c.saturating_add(1);
        }
        let generation = self.generation[row];
        for (word, count) in counts {
            let term = self.terms.index_of(word);
            if term as usize == self.postings.len() {
                self.postings.push(Postings::default());
            }
            self.postings[term as usize].push(Posting {
                row: row as u32,
                generation,
                count,
            });
        }
        let length = words.len().min(u32::MAX as usize) as u32;
        self.lengths[row] = length;
        if length > 0 {
            self.rows += 1;
            self.tokens += u64::from(length);
        }
        replaced
    }

    /// Row `row` no longer holds its words (retired, or about to be replaced).
    pub(super) fn forget(&mut self, row: usize) {
        let Some(length) = self.lengths.get_mut(row) else {
            return;
        };
        if *length > 0 {
            self.rows -= 1;
            self.tokens -= u64::from(*length);
            *length = 0;
        }
    }

    /// The `limit` rows `admit` lets through that score highest for `terms` (a query's
    /// tokens; a repeat counts once), best first: each row's BM25 score and index.
    pub(super) fn best(
        &self,
        terms: &[String],
        limit: usize,
        admit: impl Fn(u32) -> bool,
    ) -> Vec<(f32, u32)> {
        if self.rows == 0 || limit == 0 {
            return Vec::new();
        }
        let mut asked: Vec<u32> = terms.iter().filter_map(|t| self.terms.find(t)).collect();
        asked.sort_unstable();
        asked.dedup();
        let rows = self.rows as f32;
        let mean_length = self.tokens as f32 / rows;
        let mut scores = vec![0f32; self.lengths.len()];
        let mut touched: Vec<u32> = Vec::new();
        for term in asked {
            let postings = &self.postings[term as usize];
            let idf = idf(postings.len as usize, self.rows);
            for p in postings.iter() {
                let r = p.row as usize;
                if self.generation[r] != p.generation || self.lengths[r] == 0 {
                    continue;
                }
                let norm = K1 * (1.0 - B + B * self.lengths[r] as f32 / mean_length);
                let count = f32::from(p.count);
                if scores[r] == 0.0 {
                    touched.push(p.row);
                }
                scores[r] += idf * (K1 + 1.0) * count / (count + norm);
            }
        }
        let mut found: Vec<(f32, u32)> = touched
            .into_iter()
            .filter(|&r| admit(r))
            .map(|r| (scores[r as usize], r))
            .collect();
        let best_first = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if found.len() > limit {
            found.select_nth_unstable_by(limit - 1, best_first);
            found.truncate(limit);
        }
        found.sort_unstable_by(best_first);
        found
    }

    /// Bytes allocated (by capacity), for the log and status.
    pub(super) fn bytes(&self) -> usize {
        use std::mem::size_of;
        let postings: usize = self
            .postings
            .iter()
            .map(|p| p.bytes.capacity() + size_of::<Postings>())
            .sum();
        let terms = self.terms.bytes();
        postings
            + terms
            + self.lengths.capacity() * 4
            + self.generation.capacity() * 2
            + self.hashes.capacity() * 8
    }
}

/// Lance's BM25 idf of a term `docs` of `rows` rows hold (never negative).
fn idf(docs: usize, rows: usize) -> f32 {
    let (docs, rows) = (docs as f32, rows as f32);
    ((rows - docs + 0.5) / (docs + 0.5) + 1.0).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    /// The BM25 score of one row by the formula, for the test to compare with.
    fn bm25(count: f32, length: f32, mean: f32, docs: usize, rows: usize) -> f32 {
        idf(docs, rows) * (K1 + 1.0) * count / (count + K1 * (1.0 - B + B * length / mean))
    }

    #[test]
    fn postings_read_back_as_pushed_in_any_row_order() {
        let pushed = [
            (0, 0, 1),
            (1, 0, 3),
            (200, 1, 1),
            (70_000, 0, u16::MAX),
            (5, 2, 2),
            (u32::MAX, u16::MAX, 1),
            (0, 0, 1),
        ]
        .map(|(row, generation, count)| Posting {
            row,
            generation,
            count,
        });
        let mut postings = Postings::default();
        pushed.iter().for_each(|&p| postings.push(p));
        assert_eq!(postings.iter().collect::<Vec<_>>(), pushed);
        assert_eq!(postings.len, 7);
        // Near rows, counted once, generation 0: three bytes a posting.
        let mut near = Postings::default();
        (0..100).for_each(|row| {
            near.push(Posting {
                row: row * 3,
                generation: 0,
                count: 1,
            })
        });
        assert_eq!(near.bytes.len(), 300);
    }

    #[test]
    fn rows_score_by_bm25_over_the_words_held_best_first() {
        let mut words = Words::default();
        let texts = [
            "walnut tree walnut",
            "walnut",
            "oak tree in the park",
            "nothing here",
        ];
        for (i, t) in texts.iter().enumerate() {
            words.hold(i, &tokens(t));
        }
        let mean = 11.0 / 4.0;
        let found = words.best(&tokens("walnut tree walnut"), 10, |_| true);
        let rows: Vec<u32> = found.iter().map(|f| f.1).collect();
        assert_eq!(rows, [0, 1, 2]);
        let expect0 = bm25(2.0, 3.0, mean, 2, 4) + bm25(1.0, 3.0, mean, 2, 4);
        assert!((found[0].0 - expect0).abs() < 1e-5, "{found:?}");
        assert!((found[1].0 - bm25(1.0, 1.0, mean, 2, 4)).abs() < 1e-5);
        assert!((found[2].0 - bm25(1.0, 5.0, mean, 2, 4)).abs() < 1e-5);
        // A limit keeps the best; admit leaves rows out; unknown words find nothing.
        assert_eq!(words.best(&tokens("walnut tree"), 1, |_| true)[0].1, 0);
        let admitted = words.best(&tokens("walnut tree"), 10, |r| r != 0);
        assert_eq!(admitted.iter().map(|f| f.1).collect::<Vec<_>>(), [1, 2]);
        assert!(words.best(&tokens("maple"), 10, |_| true).is_empty());
    }

    #[test]
    fn a_row_replaced_or_forgotten_is_found_by_its_words_now_only() {
        let mut words = Words::default();
        words.hold(0, &tokens("walnut"));
        words.hold(1, &tokens("walnut oak"));
        words.hold(0, &tokens("maple"));
        let rows = |w: &Words, q: &str| -> Vec<u32> {
            w.best(&tokens(q), 10, |_| true)
                .iter()
                .map(|f| f.1)
                .collect()
        };
        assert_eq!(rows(&words, "walnut"), [1]);
        assert_eq!(rows(&words, "maple"), [0]);
        assert_eq!((words.rows, words.tokens), (2, 3));
        words.forget(1);
        assert!(rows(&words, "walnut oak").is_empty());
        assert_eq!((words.rows, words.tokens), (1, 1));
        // A row with no words counts for no document.
        words.hold(2, &[]);
        assert_eq!(words.rows, 1);
        assert!(words.bytes() > 0);
    }
}
