//! Token counts as an LLM counts them: OpenAI's BPE (o200k_base or cl100k_base), whose tables
//! ship inside the `tiktoken-rs` crate, so nothing is fetched at run time.
//!
//! mnemod only counts, so it keeps the tables in a form made for that: every token's bytes
//! in one buffer, found by a hash table of ranks (~4 MB for o200k_base). `tiktoken-rs`'s
//! `CoreBPE` also keeps a decoder, a sorted copy and one heap allocation per token (~30 MB
//! at o200k_base, an eighth of the daemon's heap at 100k memories); it is built once to read
//! the tables, then dropped.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hash::BuildHasher;
use std::sync::OnceLock;

use fancy_regex::Regex;
use hashbrown::HashTable;
use tiktoken_rs::{CoreBPE, Rank};

use crate::config::TokenizerKind;

/// cl100k_base's pre-tokenizer, as `tiktoken-rs` (and OpenAI's tiktoken) builds it; the crate
/// exports o200k_base's only.
const CL100K_BASE_PAT_STR: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";

#[derive(Clone, Copy)]
pub struct Tokenizer {
    kind: TokenizerKind,
    bpe: &'static Bpe,
}

impl Tokenizer {
    /// Loads the tables once per process (a fraction of a second): call off the reactor.
    pub fn load(kind: TokenizerKind) -> Self {
        static O200K: OnceLock<Bpe> = OnceLock::new();
        static CL100K: OnceLock<Bpe> = OnceLock::new();
        let bpe = match kind {
            TokenizerKind::O200k => O200K.get_or_init(|| {
                Bpe::read(tiktoken_rs::o200k_base(), tiktoken_rs::O200K_BASE_PAT_STR)
            }),
            TokenizerKind::Cl100k => {
                CL100K.get_or_init(|| Bpe::read(tiktoken_rs::cl100k_base(), CL100K_BASE_PAT_STR))
            }
        };
        Self { kind, bpe }
    }

    pub fn name(&self) -> &'static str {
        self.kind.as_str()
    }

    /// The tokens `text` is as ordinary text (special tokens' names count as their
    /// characters), as `CoreBPE::count_ordinary` counts them.
    pub fn count(&self, text: &str) -> u32 {
        self.bpe.count(text) as u32
    }
}

/// Token `rank`'s bytes in [`Bpe`]'s buffer.
fn token_of<'a>(bytes: &'a [u8], starts: &[u32], rank: Rank) -> &'a [u8] {
    let r = rank as usize;
    &bytes[starts[r] as usize..starts[r + 1] as usize]
}

/// One BPE vocabulary, for counting.
struct Bpe {
    pretokenizer: Regex,
    /// Every token's bytes, in rank order: token `r` is `bytes[starts[r]..starts[r + 1]]`.
    bytes: Vec<u8>,
    starts: Vec<u32>,
    /// Ranks, found by the hash of their bytes.
    ranks: HashTable<Rank>,
    hasher: rustc_hash::FxBuildHasher,
}

impl Bpe {
    /// Copies the ordinary tokens out of `tiktoken-rs`'s tables. Their ranks run from 0 with
    /// no gap; the first rank with no bytes ends them (the special tokens come after a gap).
    fn read(core: anyhow::Result<CoreBPE>, pattern: &str) -> Self {
        // Both are fixed in the crate and in this file: a failure is a build defect.
        let core = core.expect("tiktoken-rs's tables load");
        let pretokenizer = Regex::new(pattern).expect("the pre-tokenizer pattern compiles");
        let mut bytes = Vec::new();
        let mut starts = vec![0u32];
        while let Ok(token) = core.decode_bytes(&[starts.len() as Rank - 1]) {
            bytes.extend_from_slice(&token);
            starts.push(bytes.len() as u32);
        }
        bytes.shrink_to_fit();
        let hasher = rustc_hash::FxBuildHasher;
        let token = |r: Rank| token_of(&bytes, &starts, r);
        let tokens = (starts.len() - 1) as Rank;
        let mut ranks = HashTable::with_capacity(tokens as usize);
        for rank in 0..tokens {
            ranks.insert_unique(hasher.hash_one(token(rank)), rank, |&r| {
                hasher.hash_one(token(r))
            });
        }
        Self {
            pretokenizer,
            bytes,
            starts,
            ranks,
            hasher,
        }
    }

    fn token(&self, rank: Rank) -> &[u8] {
        token_of(&self.bytes, &self.starts, rank)
    }

    fn rank(&self, piece: &[u8]) -> Option<Rank> {
        let hash = self.hasher.hash_one(piece);
        self.ranks.find(hash, |&r| self.token(r) == piece).copied()
    }

    fn count(&self, text: &str) -> usize {
        self.pretokenizer
            .find_iter(text)
            // The patterns backtrack boundedly; past fancy-regex's limit a piece is skipped
            // (tiktoken-rs panics there).
            .filter_map(Result::ok)
            .map(|piece| {
                let piece = piece.as_str().as_bytes();
                match self.rank(piece) {
                    Some(_) => 1,
                    None => self.merged_parts(piece),
                }
            })
            .sum()
    }

    /// The tokens BPE merges `piece` into: repeatedly join the adjacent two parts whose joined
    /// bytes have the lowest rank, the leftmost of equals (tiktoken ranks pairs by their bytes
    /// too). With a heap, so a long piece (a run of letters with no space) costs n log n.
    fn merged_parts(&self, piece: &[u8]) -> usize {
        let n = piece.len();
        if n < 2 {
            return n;
        }
        // The part starting at byte i ends at `end[i]`; `prev[i]` is where the one before it
        // starts; `starts_part[i]` whether a part starts at i at all.
        let mut end: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        let mut starts_part = vec![true; n];
        // (rank of piece[start..stop], start, stop): joining the part at `start` with the next.
        let mut joins = BinaryHeap::new();
        let offer = |joins: &mut BinaryHeap<_>, start: usize, stop: usize| {
            if let Some(rank) = self.rank(&piece[start..stop]) {
                joins.push(Reverse((rank, start, stop)));
            }
        };
        for i in 0..n - 1 {
            offer(&mut joins, i, i + 2);
        }
        let mut parts = n;
        while let Some(Reverse((_, start, stop))) = joins.pop() {
            // Stale when a join since changed either part (the same bytes rank the same).
            let next = end[start];
            if !starts_part[start] || next >= n || end[next] != stop {
                continue;
            }
            starts_part[next] = false;
            end[start] = stop;
            parts -= 1;
            if stop < n {
                prev[stop] = start;
                offer(&mut joins, start, end[stop]);
            }
            if start > 0 {
                offer(&mut joins, prev[start], stop);
            }
        }
        parts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_the_models_own() {
        // Reference counts from OpenAI's tiktoken.
        let o200k = Tokenizer::load(TokenizerKind::O200k);
        assert_eq!(o200k.count("hello world"), 2);
        assert_eq!(o200k.count(""), 0);
        let cl100k = Tokenizer::load(TokenizerKind::Cl100k);
        assert_eq!(cl100k.count("tiktoken is great!"), 6);
        assert_eq!(cl100k.name(), "cl100k_base");
    }

    /// Texts of every kind the pre-tokenizers split differently: words and contractions,
    /// digits, punctuation runs, whitespace and newlines, code, URLs, accents, CJK, emoji,
    /// a long run with no space (the pieces tiktoken merges with a heap), special tokens'
    /// names; this crate's README and a source file.
    fn texts() -> Vec<String> {
        let mut texts: Vec<String> = [
            "hello world",
            "Melanie: I've been running farther to de-stress, which has been great!",
            "They're sure we'll see you'd THINK it's OK; don't.",
            "On 2023-05-08 at 13:56 we paid $1,234.56 (about 1234567890 cents).",
            "fn main() {\n    println!(\"{}\", x?.y[0] >= 10_000);\n}\n\n\t\r\n",
            "see https://example.com/a/b?c=d&e=f#g and /home/maria/notes.md @maria",
            "Café naïve façade — “quotes” ‘single’ … résumé Zürich Ærø",
            "东京は雨でした。我们明天去北京。서울에서 만나요",
            "🎉🎉 party!!! 👩‍👩‍👧 family ❤️ ok",
            "    leading spaces and trailing   ",
            "<|endoftext|> is written here as text, <|endofprompt|> too",
            "ALLCAPS Title Case camelCaseWord snake_case_word kebab-case-word",
            "a",
            " ",
            "\n",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Prose with lists, tables and commands, and code.
        texts.push(include_str!("../../../README.md").to_string());
        texts.push(include_str!("fill.rs").to_string());
        texts.push("abcdefghij".repeat(60));
        texts.push("x".repeat(1000));
        texts.push("ünïcödé".repeat(40));
        texts
    }

    #[test]
    fn counts_match_tiktoken_rs_on_every_kind_of_text() {
        let kinds = [
            (TokenizerKind::O200k, tiktoken_rs::o200k_base().unwrap()),
            (TokenizerKind::Cl100k, tiktoken_rs::cl100k_base().unwrap()),
        ];
        for (kind, core) in kinds {
            let tokenizer = Tokenizer::load(kind);
            for text in texts() {
                assert_eq!(
                    tokenizer.count(&text) as usize,
                    core.count_ordinary(&text),
                    "{} on {text:?}",
                    tokenizer.name()
                );
            }
        }
    }

    #[test]
    fn every_ordinary_token_is_one_token() {
        let tokenizer = Tokenizer::load(TokenizerKind::O200k);
        let bpe = tokenizer.bpe;
        assert_eq!(
            bpe.starts.len() - 1,
            199_998,
            "o200k_base's ordinary tokens"
        );
        for rank in (0..199_998).step_by(997) {
            assert_eq!(bpe.rank(bpe.token(rank)), Some(rank));
        }
    }
}
