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
//! Terms are scored rarest first, and once what the rest could add to a row no longer
//! reaches the best rows found so far, only the rows that can still reach them are scored
//! further, each looked up at the skips of the commoner terms' postings (`postings.rs`)
//! (MaxScore). `mnemo bench search`'s queries hold words nearly every memory does ("the",
//! "about", "again"): reading every posting of each took the core the query's embedding
//! wants beside it (at 100k memories, text-only p50 0.9 → 0.6 ms; hybrid, the query
//! embedded at p95 4.9–5.8 → 3.1–5.0 ms, runs in turn).

use rustc_hash::{FxHashMap, FxHashSet};

use super::lookup::{key_hash, RowLookup};
use super::postings::{Posting, Postings, Skip};

/// BM25's term-frequency saturation and length normalisation, as Lance has them.
const K1: f32 = 1.2;
const B: f32 = 0.75;

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
    /// The skips of each term with more than `SKIP_EVERY` postings.
    skips: FxHashMap<u32, Vec<Skip>>,
    /// Terms whose postings went back to a row before (one replaced in place): read whole.
    unordered: FxHashSet<u32>,
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
        self.skips.values_mut().for_each(Vec::shrink_to_fit);
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
            let postings = &mut self.postings[term as usize];
            if postings.goes_back(row as u32) {
                self.unordered.insert(term);
            }
            if let Some(skip) = postings.skip_due() {
                self.skips.entry(term).or_default().push(skip);
            }
            postings.push(Posting {
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
        let mut asked: Vec<(u32, f32)> = terms
            .iter()
            .filter_map(|t| self.terms.find(t))
            .map(|t| (t, idf(self.postings[t as usize].len as usize, self.rows)))
            .collect();
        asked.sort_unstable_by_key(|&(t, _)| t);
        asked.dedup_by_key(|&mut (t, _)| t);
        // Rarest first, each with the most a row can gain from it and the terms after it
        // (BM25's part for a term stays below (k1 + 1) × its idf).
        asked.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut gain_from = vec![0f32; asked.len() + 1];
        for i in (0..asked.len()).rev() {
            gain_from[i] = gain_from[i + 1] + (K1 + 1.0) * asked[i].1;
        }
        let mut scoring = Scoring {
            words: self,
            scores: vec![0f32; self.lengths.len()],
            touched: Vec::new(),
            candidates: None,
            top: 0.0,
            mean_length: self.tokens as f32 / self.rows as f32,
        };
        for (i, &(term, idf)) in asked.iter().enumerate() {
            // The floor is at most the best score yet: below that, it is not looked for.
            if scoring.candidates.is_none() && gain_from[i] < scoring.top {
                scoring.narrow(limit, gain_from[i], &admit);
            }
            scoring.add(term, idf, limit, gain_from[i]);
        }
        scoring.best(limit, &admit)
    }

    /// Bytes allocated (by capacity), for the log and status.
    pub(super) fn bytes(&self) -> usize {
        use std::mem::size_of;
        let postings: usize = self
            .postings
            .iter()
            .filter(|p| p.bytes.spilled())
            .map(|p| p.bytes.capacity())
            .sum::<usize>()
            + self.postings.capacity() * size_of::<Postings>();
        let skips: usize = self.skips.values().map(|s| s.capacity() * 8 + 32).sum();
        let terms = self.terms.bytes();
        postings
            + skips
            + terms
            + self.lengths.capacity() * 4
            + self.generation.capacity() * 2
            + self.hashes.capacity() * 8
    }
}

/// A search of the words under way (see [`Words::best`]).
struct Scoring<'a> {
    words: &'a Words,
    /// Each row's score so far.
    scores: Vec<f32>,
    /// Rows with a score, in the order first scored.
    touched: Vec<u32>,
    /// Once narrowed, the admitted rows that can still reach the best, ascending.
    candidates: Option<Vec<u32>>,
    /// The best score of a row so far, admitted or not.
    top: f32,
    mean_length: f32,
}

impl Scoring<'_> {
    /// When no row unscored yet can reach the floor with what the terms left add
    /// (`gain`), scores only the admitted rows that can from now on.
    fn narrow(&mut self, limit: usize, gain: f32, admit: &impl Fn(u32) -> bool) {
        let mut candidates: Vec<u32> = self.touched.iter().copied().filter(|&r| admit(r)).collect();
        let scores = candidates.iter().map(|&r| self.scores[r as usize]);
        let Some(floor) = kth_best(scores, limit) else {
            return;
        };
        if gain >= floor {
            return;
        }
        candidates.retain(|&r| self.scores[r as usize] + gain >= floor);
        candidates.sort_unstable();
        self.candidates = Some(candidates);
        #[cfg(test)]
        tests::NARROWED.with(|n| n.set(n.get() + 1));
    }

    /// Adds `term`'s part to each row scored: every row of its postings, or once narrowed,
    /// the candidates that can still reach the floor with `gain` (this term's and the rest's).
    fn add(&mut self, term: u32, idf: f32, limit: usize, gain: f32) {
        let words = self.words;
        let postings = &words.postings[term as usize];
        let part = |r: usize, count: u16| {
            let norm = K1 * (1.0 - B + B * words.lengths[r] as f32 / self.mean_length);
            let count = f32::from(count);
            idf * (K1 + 1.0) * count / (count + norm)
        };
        let Some(candidates) = &mut self.candidates else {
            for p in postings.iter() {
                let r = p.row as usize;
                if words.generation[r] != p.generation || words.lengths[r] == 0 {
                    continue;
                }
                if self.scores[r] == 0.0 {
                    self.touched.push(p.row);
                }
                self.scores[r] += part(r, p.count);
                self.top = self.top.max(self.scores[r]);
            }
            return;
        };
        let scores = candidates.iter().map(|&r| self.scores[r as usize]);
        if let Some(floor) = kth_best(scores, limit) {
            candidates.retain(|&r| self.scores[r as usize] + gain >= floor);
        }
        if words.unordered.contains(&term) {
            // Rows out of order: read whole, adding to the rows scored (the candidates and
            // some left behind, which are not asked again).
            for p in postings.iter() {
                let r = p.row as usize;
                if words.generation[r] == p.generation && self.scores[r] > 0.0 {
                    self.scores[r] += part(r, p.count);
                }
            }
            return;
        }
        let skips = words.skips.get(&term).map_or(&[][..], Vec::as_slice);
        let mut cursor = postings.cursor(skips);
        for &r in candidates.iter() {
            let count = cursor.count_at(r, words.generation[r as usize]);
            if count > 0 {
                self.scores[r as usize] += part(r as usize, count);
            }
        }
    }

    /// The `limit` best rows scored, best first.
    fn best(self, limit: usize, admit: &impl Fn(u32) -> bool) -> Vec<(f32, u32)> {
        let rows: Vec<u32> = match self.candidates {
            Some(candidates) => candidates,
            None => self.touched.into_iter().filter(|&r| admit(r)).collect(),
        };
        let mut found: Vec<(f32, u32)> = rows
            .into_iter()
            .map(|r| (self.scores[r as usize], r))
            .collect();
        let best_first = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if found.len() > limit {
            found.select_nth_unstable_by(limit - 1, best_first);
            found.truncate(limit);
        }
        found.sort_unstable_by(best_first);
        found
    }
}

/// The `limit`th best of `scores` (those of admitted rows so far): a floor under the final
/// `limit`th best, as scores only grow. None while there are fewer.
fn kth_best(scores: impl Iterator<Item = f32>, limit: usize) -> Option<f32> {
    let mut scores: Vec<f32> = scores.collect();
    if scores.len() < limit {
        return None;
    }
    let (_, kth, _) = scores.select_nth_unstable_by(limit - 1, |a, b| b.total_cmp(a));
    Some(*kth)
}

/// Lance's BM25 idf of a term `docs` of `rows` rows hold: above 0, so a row's score only
/// grows with each term. Postings left behind by rows written again count among `docs`
/// until the codes are read again, and could pass `rows`.
fn idf(docs: usize, rows: usize) -> f32 {
    let (docs, rows) = (docs.min(rows) as f32, rows as f32);
    ((rows - docs + 0.5) / (docs + 0.5) + 1.0).ln()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    thread_local! {
        /// Searches narrowed to their candidates on this thread.
        pub(super) static NARROWED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn tokens(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    /// The BM25 score of one row by the formula, for the test to compare with.
    fn bm25(count: f32, length: f32, mean: f32, docs: usize, rows: usize) -> f32 {
        idf(docs, rows) * (K1 + 1.0) * count / (count + K1 * (1.0 - B + B * length / mean))
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

    /// Every admitted row's score by the formula over the words it holds now, best first
    /// (ties by row), as a search that reads every posting finds them.
    fn scored_whole(words: &Words, held: &[Vec<String>], query: &[String]) -> Vec<(f32, u32)> {
        let mean = words.tokens as f32 / words.rows as f32;
        let mut asked: Vec<&String> = query.iter().collect();
        asked.sort();
        asked.dedup();
        let mut found: Vec<(f32, u32)> = held
            .iter()
            .enumerate()
            .filter(|(r, _)| r % 7 != 3)
            .filter_map(|(r, text)| {
                let score: f32 = asked
                    .iter()
                    .filter_map(|&w| {
                        let count = text.iter().filter(|t| *t == w).count();
                        let docs = words.postings[words.terms.find(w)? as usize].len;
                        (count > 0).then(|| {
                            let (count, length) = (count as f32, text.len() as f32);
                            bm25(count, length, mean, docs as usize, words.rows)
                        })
                    })
                    .sum();
                (score > 0.0).then_some((score, r as u32))
            })
            .collect();
        found.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        found
    }

    #[test]
    fn the_best_rows_are_those_a_search_reading_every_posting_finds() {
        // Words from a vocabulary where a few are in nearly every row and most in few, as
        // in chat: the common words' postings are entered at their skips.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let word = |next: &mut dyn FnMut() -> u64| {
            let rank = (next() % 1000) as f64 / 1000.0;
            format!("w{}", (rank.powi(3) * 400.0) as u32)
        };
        let text = |next: &mut dyn FnMut() -> u64| -> Vec<String> {
            let len = 3 + next() % 12;
            let mut t: Vec<String> = (0..len).map(|_| word(next)).collect();
            t.push("the".into());
            t
        };
        let mut words = Words::default();
        let mut held: Vec<Vec<String>> = Vec::new();
        for r in 0..6000 {
            held.push(text(&mut next));
            words.hold(r, &held[r]);
        }
        // Some rows written again in place: their terms' postings go back.
        for r in (100..6000).step_by(97) {
            held[r] = text(&mut next);
            words.hold(r, &held[r]);
        }
        assert!(!words.unordered.is_empty() && !words.skips.is_empty());
        for q in 0..300 {
            let mut query = text(&mut next);
            query.truncate(1 + q % 6);
            query.push("the".into());
            for limit in [1, 10] {
                let found = words.best(&query, limit, |r| r % 7 != 3);
                let whole = scored_whole(&words, &held, &query);
                assert_eq!(found.len(), whole.len().min(limit), "{query:?}");
                for (f, w) in found.iter().zip(&whole) {
                    assert!((f.0 - w.0).abs() < 1e-4, "{query:?}: {found:?} {whole:?}");
                    // A tie may rank either row first; a row found scores as it should.
                    let own = whole
                        .iter()
                        .find(|x| x.1 == f.1)
                        .expect("a row that scores");
                    assert!((own.0 - f.0).abs() < 1e-4);
                }
            }
        }
        // Most searches scored their commoner words for their candidates alone.
        assert!(NARROWED.get() > 300, "{}", NARROWED.get());
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
