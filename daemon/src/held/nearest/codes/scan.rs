//! The scan of the codes' top bits (`codes.rs`): every row of a namespace scored against
//! the query, the best kept (as the scan of sign bits keeps them, `signs.rs`).

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{plane_bytes, quantize, Codes, RETIRED};

/// How many rows a scan keeps for each one asked for: the top four bits of each component
/// find the rows, and the rest ranks them. At 100k MiniLM memories the 10 best of a search
/// were the exact 10 nearest 0.998 of the time (0.999 keeping 8 a result, whose ranking
/// took 0.30 ms rather than 0.17).
pub(super) const SCANNED_PER_RESULT: usize = 4;

/// `vector` as a scan asks with it: its codes, padded to fill both planes' halves, and what
/// the halves leave out of a code product (see [`scan_portable`]).
pub(super) fn scan_query(vector: &[f32]) -> (Vec<i8>, i32) {
    let mut query = Vec::with_capacity(2 * plane_bytes(vector.len()));
    quantize(vector, &mut query, None);
    query.resize(2 * plane_bytes(vector.len()), 0);
    let sum: i32 = query.iter().map(|&q| i32::from(q)).sum();
    (query, 120 * sum)
}

/// What a scan looks for: rows near `query` (codes), of namespace `space` (all when None),
/// the `limit` best.
#[derive(Clone, Copy)]
pub(super) struct Ask<'a> {
    pub(super) query: &'a [i8],
    /// What the top bits leave out of a code product (see [`scan_query`]).
    pub(super) bias: i32,
    pub(super) space: Option<u32>,
    pub(super) limit: usize,
}

/// Rows below which a share of the scan is not worth another thread (spawning one costs
/// ~50 µs; 32k MiniLM rows take ~0.7 ms on one core of this 2-core EPYC).
const ROWS_A_THREAD: usize = 32_768;

/// Chunks a shared scan's rows are handed out in, for each thread (see [`shared_each`]),
/// and the fewest rows a chunk holds: each returns its own best to be merged.
const CHUNKS_A_THREAD: usize = 8;
const ROWS_A_CHUNK: usize = 8_192;

/// The best rows by approximate score against the query's codes (in no order), by the loop
/// compiled for the widest vectors the CPU has. The scan streams the top half of every
/// code from memory once (19 MB at 100k MiniLM rows), shared between the cores: the query's
/// embedding, which has them both, is done by then.
pub(super) fn scan(codes: &Codes, ask: Ask) -> Vec<(f32, u32)> {
    scan_shared(codes, ask, parts_for(rows_held(codes)))
}

/// The scan in `parts` ranges of rows.
pub(super) fn scan_shared(codes: &Codes, ask: Ask, parts: usize) -> Vec<(f32, u32)> {
    shared(rows_held(codes), parts, ask.limit, |best, rows| {
        scan_part(codes, ask, best, rows)
    })
}

/// How many threads a scan of `rows` is shared between.
pub(super) fn parts_for(rows: usize) -> usize {
    crate::linalg::threads().min(rows / ROWS_A_THREAD).max(1)
}

/// The `limit` best of what `part` offers to a thread's best from the ranges of `rows` it
/// is handed, shared between `parts` threads (the caller's one of them).
pub(super) fn shared(
    rows: usize,
    parts: usize,
    limit: usize,
    part: impl Fn(&mut Best, Range<usize>) + Sync,
) -> Vec<(f32, u32)> {
    let mut found = shared_each(rows, parts, || Best::new(limit), part, |best| vec![best]);
    found.pop().unwrap_or_default()
}

/// [`shared`] for many queries at once: each thread starts a `state` (each query's best,
/// and whatever else its scan keeps), `part` scans a range of rows into it, and `bests`
/// gives each query's best of it, whose rows are merged. The rows are handed out in chunks
/// as threads come for them rather than a range a thread, so a thread whose core is busy
/// (with the text leg's search beside, or the person's work) takes fewer and the scan ends
/// with its work, not with its slowest thread: at 1M memories a hybrid search's vector leg
/// waited for the half that shared a core with the full-text query. A thread keeps its
/// state from chunk to chunk, so each chunk starts at the floor the last one left, not
/// from nothing: each chunk's own best was 11 % of a vector search's time at 1M hashed
/// memories, in keeping and sorting rows a later chunk would drop.
pub(super) fn shared_each<State: Send>(
    rows: usize,
    parts: usize,
    state: impl Fn() -> State + Sync,
    part: impl Fn(&mut State, Range<usize>) + Sync,
    bests: impl Fn(State) -> Vec<Best>,
) -> Vec<Vec<(f32, u32)>> {
    let rows_of = |bests: Vec<Best>| bests.into_iter().map(Best::into_rows).collect();
    if parts <= 1 {
        let mut whole = state();
        part(&mut whole, 0..rows);
        return rows_of(bests(whole));
    }
    let chunk = rows.div_ceil(parts * CHUNKS_A_THREAD).max(ROWS_A_CHUNK);
    let next = AtomicUsize::new(0);
    let work = || {
        let mut held = state();
        loop {
            let start = next.fetch_add(chunk, Ordering::Relaxed);
            if start >= rows {
                break held;
            }
            part(&mut held, start..(start + chunk).min(rows));
        }
    };
    let work = &work;
    std::thread::scope(|scope| {
        let others: Vec<_> = (1..parts).map(|_| scope.spawn(work)).collect();
        let mut best = bests(work());
        for other in others {
            let found = other.join().expect("a share of a scan panicked");
            Best::offer_each(&mut best, bests(found).into_iter().map(Best::into_rows));
        }
        rows_of(best)
    })
}

/// The scan of `rows` alone.
fn scan_part(codes: &Codes, ask: Ask, best: &mut Best, rows: Range<usize>) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512bw") {
            // SAFETY: the CPU has AVX-512 BW (checked just above).
            return unsafe { scan_avx512(codes, ask, best, rows) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { scan_avx2(codes, ask, best, rows) };
        }
    }
    scan_rows_portable(codes, ask, best, rows)
}

/// The same loop with AVX-512's byte products, 128 half-bytes at a time: `vpmaddubsw`
/// multiplies unsigned bytes by signed ones, which the portable loop does not compile to (it
/// widens each to 16 bits). At 100k MiniLM rows this scan takes 1.0–1.2 ms; the portable
/// loop compiled for AVX-512 took as long as the scan of all eight bits had, ~1.9 ms.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn scan_avx512(codes: &Codes, ask: Ask, best: &mut Best, rows: Range<usize>) {
    use std::arch::x86_64::*;
    let half = plane_bytes(codes.dim);
    let chunks = half / 64;
    let (first, second) = ask.query.split_at(half);
    // SAFETY (every load): a chunk `c < chunks` lies within the `half` bytes of a row and of
    // each half of the query.
    let load = |bytes: *const u8, c: usize| unsafe { _mm512_loadu_si512(bytes.add(64 * c).cast()) };
    let (first_bytes, second_bytes) = (first.as_ptr().cast::<u8>(), second.as_ptr().cast::<u8>());
    let low_bits = _mm512_set1_epi8(15);
    let ones = _mm512_set1_epi16(1);
    let tail = chunks * 64;
    scan_rows(codes, ask, best, rows, |row| {
        let mut sums = _mm512_setzero_si512();
        for c in 0..chunks {
            let b = load(row.as_ptr(), c);
            let low = _mm512_and_si512(b, low_bits);
            let high = _mm512_and_si512(_mm512_srli_epi16::<4>(b), low_bits);
            // At most 2 × 15 × 127 a pair, and twice that summed: within 16 bits.
            let pairs = _mm512_add_epi16(
                _mm512_maddubs_epi16(low, load(first_bytes, c)),
                _mm512_maddubs_epi16(high, load(second_bytes, c)),
            );
            sums = _mm512_add_epi32(sums, _mm512_madd_epi16(pairs, ones));
        }
        _mm512_reduce_add_epi32(sums) + tops(&row[tail..], &first[tail..], &second[tail..])
    })
}

/// The AVX-512 loop at half the width, 64 half-bytes at a time. The portable loop compiled
/// for AVX2 widens each byte to 16 bits: on a 2-core EPYC without AVX-512 it spent 4.5 ms
/// of a search at 100k MiniLM rows (a fifth of the search's time in a profile).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn scan_avx2(codes: &Codes, ask: Ask, best: &mut Best, rows: Range<usize>) {
    use std::arch::x86_64::*;
    let half = plane_bytes(codes.dim);
    let chunks = half / 32;
    let (first, second) = ask.query.split_at(half);
    // SAFETY (every load): a chunk `c < chunks` lies within the `half` bytes of a row and of
    // each half of the query.
    let load = |bytes: *const u8, c: usize| unsafe { _mm256_loadu_si256(bytes.add(32 * c).cast()) };
    let (first_bytes, second_bytes) = (first.as_ptr().cast::<u8>(), second.as_ptr().cast::<u8>());
    let low_bits = _mm256_set1_epi8(15);
    let ones = _mm256_set1_epi16(1);
    let tail = chunks * 32;
    scan_rows(codes, ask, best, rows, |row| {
        let mut sums = _mm256_setzero_si256();
        for c in 0..chunks {
            let b = load(row.as_ptr(), c);
            let low = _mm256_and_si256(b, low_bits);
            let high = _mm256_and_si256(_mm256_srli_epi16::<4>(b), low_bits);
            // At most 2 × 15 × 127 a pair, and twice that summed: within 16 bits.
            let pairs = _mm256_add_epi16(
                _mm256_maddubs_epi16(low, load(first_bytes, c)),
                _mm256_maddubs_epi16(high, load(second_bytes, c)),
            );
            sums = _mm256_add_epi32(sums, _mm256_madd_epi16(pairs, ones));
        }
        let quad = _mm_add_epi32(
            _mm256_castsi256_si128(sums),
            _mm256_extracti128_si256::<1>(sums),
        );
        let pair = _mm_add_epi32(quad, _mm_unpackhi_epi64(quad, quad));
        let one = _mm_add_epi32(pair, _mm_shuffle_epi32::<0b01>(pair));
        _mm_cvtsi128_si32(one) + tops(&row[tail..], &first[tail..], &second[tail..])
    })
}

/// The scan of every row by the portable loop (what the others must score alike).
#[cfg(test)]
pub(super) fn scan_portable(codes: &Codes, ask: Ask) -> Vec<(f32, u32)> {
    let mut best = Best::new(ask.limit);
    scan_rows_portable(codes, ask, &mut best, 0..rows_held(codes));
    best.into_rows()
}

/// Rows whose codes are held (retired ones among them).
fn rows_held(codes: &Codes) -> usize {
    codes.planes.highs().len() / plane_bytes(codes.dim)
}

#[inline(always)]
fn scan_rows_portable(codes: &Codes, ask: Ask, best: &mut Best, rows: Range<usize>) {
    let (first, second) = ask.query.split_at(plane_bytes(codes.dim));
    scan_rows(codes, ask, best, rows, |row| tops(row, first, second))
}

/// The `rows` of `ask`'s namespace scored from their top bits (`tops` of each row's bytes
/// gives their product with the query), offered to `best`.
#[inline(always)]
fn scan_rows(
    codes: &Codes,
    ask: Ask,
    best: &mut Best,
    rows: Range<usize>,
    tops: impl Fn(&[u8]) -> i32,
) {
    let width = plane_bytes(codes.dim);
    let first = rows.start;
    let bytes = &codes.planes.highs()[rows.start * width..rows.end * width];
    best_rows(
        codes,
        ask.space,
        best,
        first,
        bytes.chunks_exact(width),
        |i, row| (16 * tops(row) - ask.bias) as f32 * codes.scales[i],
    )
}

/// Offers `rows` (each row's part of a plane, in order from row `first`) of namespace
/// `space` (all when None) to `best` by `score` (of a row's index and part).
#[inline(always)]
pub(super) fn best_rows<'a, T: 'a>(
    codes: &Codes,
    space: Option<u32>,
    best: &mut Best,
    first: usize,
    rows: impl Iterator<Item = &'a [T]>,
    score: impl Fn(usize, &[T]) -> f32,
) {
    for (i, row) in (first..).zip(rows) {
        if asked(codes, space, i) {
            best.offer(score(i, row), i as u32);
        }
    }
}

/// Whether row `i` is held and of namespace `space` (all when None).
#[inline(always)]
pub(super) fn asked(codes: &Codes, space: Option<u32>, i: usize) -> bool {
    let row_space = codes.space_of[i];
    row_space != RETIRED && space.is_none_or(|s| row_space == s)
}

/// The product of a row's top bits (`bytes`, see [`Codes`]) with the query's two halves. A
/// code c (plus 128) with top bits t lies in 16t..16t+15, so c ≈ 16t - 120: the scan's
/// score is 16 × this, less 120 × the query's sum.
#[inline(always)]
fn tops(bytes: &[u8], first: &[i8], second: &[i8]) -> i32 {
    bytes
        .iter()
        .zip(first)
        .zip(second)
        .map(|((&b, &q1), &q2)| {
            let low = i16::from(b & 15) * i16::from(q1);
            let high = i16::from(b >> 4) * i16::from(q2);
            i32::from(low + high)
        })
        .sum()
}

/// The `limit` best-scored rows a scan has seen, in no order. It keeps at most twice that,
/// dropping the worse half when full, so a search never holds a score for every row: at
/// 100k rows that was an 800 KB buffer a query, which glibc maps and unmaps each time.
pub(super) struct Best {
    rows: Vec<(f32, u32)>,
    limit: usize,
    /// The `limit`-th best score kept at the last drop: no row at or under it can be among
    /// the best.
    floor: f32,
}

impl Best {
    pub(super) fn new(limit: usize) -> Self {
        Self {
            rows: Vec::with_capacity(2 * limit),
            limit,
            // With no room, no row is among the best.
            floor: if limit == 0 {
                f32::INFINITY
            } else {
                f32::NEG_INFINITY
            },
        }
    }

    #[inline(always)]
    pub(super) fn offer(&mut self, score: f32, row: u32) {
        if score > self.floor {
            self.rows.push((score, row));
            if self.rows.len() >= 2 * self.limit {
                self.drop_the_worse();
            }
        }
    }

    /// Offers each query's `found` rows to its own best.
    fn offer_each(best: &mut [Best], found: impl IntoIterator<Item = Vec<(f32, u32)>>) {
        for (best, found) in best.iter_mut().zip(found) {
            found
                .into_iter()
                .for_each(|(score, i)| best.offer(score, i));
        }
    }

    fn drop_the_worse(&mut self) {
        if self.rows.len() > self.limit && self.limit > 0 {
            self.rows
                .select_nth_unstable_by(self.limit - 1, |a, b| b.0.total_cmp(&a.0));
            self.rows.truncate(self.limit);
            self.floor = self.rows[self.limit - 1].0;
        }
    }

    /// The score a row must pass to be kept: past the worst kept at the last drop.
    pub(super) fn floor(&self) -> f32 {
        self.floor
    }

    pub(super) fn into_rows(mut self) -> Vec<(f32, u32)> {
        self.drop_the_worse();
        self.rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows handed out in chunks to threads that take them as they come keep the best that
    /// one pass over every row keeps, for each query, whatever the threads' timing.
    #[test]
    fn a_scan_handed_out_in_chunks_keeps_what_one_pass_keeps() {
        let rows = 100_003;
        // Distinct scores in no order of the rows (a multiplicative hash).
        let score =
            |q: usize, i: usize| ((i as u64 * 2_654_435_761 + q as u64 * 97) % 1_000_003) as f32;
        let start = || (0..3).map(|_| Best::new(50)).collect::<Vec<_>>();
        let part = |best: &mut Vec<Best>, range: Range<usize>| {
            for (q, best) in best.iter_mut().enumerate() {
                range
                    .clone()
                    .for_each(|i| best.offer(score(q, i), i as u32));
            }
        };
        let sorted = |found: Vec<Vec<(f32, u32)>>| -> Vec<Vec<(f32, u32)>> {
            found
                .into_iter()
                .map(|mut f| {
                    f.sort_by(|a, b| b.0.total_cmp(&a.0));
                    f
                })
                .collect()
        };
        let one = sorted(shared_each(rows, 1, start, part, |b| b));
        assert_eq!(one[0].len(), 50);
        for parts in [2, 3] {
            assert_eq!(
                sorted(shared_each(rows, parts, start, part, |b| b)),
                one,
                "{parts} threads"
            );
        }
    }
}
