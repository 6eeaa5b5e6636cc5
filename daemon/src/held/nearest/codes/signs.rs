//! What signed planes hold of each row (`planes.rs`), and their search: one bit for each
//! component of the row's rotation (its sign) and one more (whether its magnitude is past
//! the row's RMS), and a search's query weighed against them at four bits a component (as
//! RaBitQ estimates a product from one bit a component, and extended RaBitQ from more).
//!
//! A rotation first, because the signs of the raw components say little of sparse vectors
//! (the hashed embedder's), where a zero and a negative component give the same bit. And the
//! query at four bits, because the share of bits two vectors' signs share estimates their
//! angle too coarsely: at 1M hashed memories the 10 nearest by the ranking of the 500 rows
//! so found were 0.511 those of exact search (0.035 without the rotation, 0.69 with the
//! query at four bits). A search scans every row's signs, weighs the best again by their
//! two bits (levels ±1, ±3: ~0.6 times the error of the signs alone), and reads the best of
//! those from the file to rank them by their codes, to within ~1e-4.

use std::ops::Range;

use super::prefetch::prefetch;
use super::scan::Best;
use super::Codes;

/// Words of sign bits a row of `dim` components takes: a bit for each component of its
/// rotation ([`rotated`]).
pub(super) fn sign_words(dim: usize) -> usize {
    dim.next_power_of_two().div_ceil(64)
}

/// What signed planes hold in memory of a row, from its rotation ([`rotated`]); component
/// `j` lies at bit `j % 64` of word `j / 64` of each.
pub(super) struct RowSigns {
    /// Set where the component is above zero.
    pub(super) signs: Vec<u64>,
    /// Set where the component's magnitude is past the row's RMS: with the sign, a level of
    /// ±1 or ±3 for each component (see [`RowSigns::of`]).
    pub(super) magnitudes: Vec<u64>,
    /// What turns a query's product with the signs (±1 a component) into an estimate of the
    /// cosine, up to the query's own scale: the vector's length over its rotation's product
    /// with the signs (its sum of magnitudes).
    pub(super) scale: f32,
    /// The same for the product with the levels: the length over the rotation's product
    /// with them.
    pub(super) fine_scale: f32,
}

impl RowSigns {
    /// The row of `vector`. Its levels are the two-bit quantizer of least squared error for
    /// normally distributed components, which the rotation's are: a threshold at their RMS
    /// σ, levels at ±σ/2 and ±3σ/2 (up to scale, which the row's `fine_scale` sets).
    pub(super) fn of(vector: &[f32]) -> Self {
        let turned = rotated(vector);
        let words = sign_words(vector.len());
        let (mut signs, mut magnitudes) = (vec![0u64; words], vec![0u64; words]);
        let squares: f32 = turned.iter().map(|x| x * x).sum();
        let threshold = (squares / turned.len() as f32).sqrt();
        let (mut sum, mut leveled) = (0f32, 0f32);
        for (j, &x) in turned.iter().enumerate() {
            signs[j / 64] |= u64::from(x > 0.0) << (j % 64);
            let far = x.abs() > threshold;
            magnitudes[j / 64] |= u64::from(far) << (j % 64);
            sum += x.abs();
            leveled += x.abs() * if far { 3.0 } else { 1.0 };
        }
        let length = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        let over = |product: f32| if product > 0.0 { length / product } else { 0.0 };
        Self {
            signs,
            magnitudes,
            scale: over(sum),
            fine_scale: over(leveled),
        }
    }
}

/// Rounds of sign flips and Walsh–Hadamard transform in [`rotated`]: after one, a vector
/// of a few non-zero components has every output a sum of the same few.
const ROTATION_ROUNDS: u64 = 3;

/// `vector`, padded with zeros to a power of two components, turned by a fixed
/// pseudo-random rotation (up to scale): each round flips the components' signs by a fixed
/// pattern, then takes their Walsh–Hadamard transform.
pub(super) fn rotated(vector: &[f32]) -> Vec<f32> {
    let mut v = vector.to_vec();
    v.resize(vector.len().next_power_of_two(), 0.0);
    for round in 0..ROTATION_ROUNDS {
        for (w, chunk) in v.chunks_mut(64).enumerate() {
            let flips = mixed(round << 32 | w as u64);
            for (b, x) in chunk.iter_mut().enumerate() {
                if flips >> b & 1 == 1 {
                    *x = -*x;
                }
            }
        }
        walsh_hadamard(&mut v);
    }
    v
}

/// The Walsh–Hadamard transform of `v` (of a power of two components), unscaled.
fn walsh_hadamard(v: &mut [f32]) {
    let mut half = 1;
    while half < v.len() {
        for block in v.chunks_exact_mut(2 * half) {
            let (a, b) = block.split_at_mut(half);
            for (x, y) in a.iter_mut().zip(b) {
                (*x, *y) = (*x + *y, *x - *y);
            }
        }
        half *= 2;
    }
}

/// SplitMix64's output for `n`: the rotation's fixed sign patterns.
fn mixed(n: u64) -> u64 {
    let mut z = n.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A query as the scan weighs rows' sign bits with it: its rotation's components as
/// `step × (u - 7.5)`, `u` in 0..=15, laid out as four planes of bits (bit `k` of every
/// `u`, in the rows' layout).
pub(super) struct SignQuery {
    planes: [Vec<u64>; 4],
    step: f32,
    /// The sum of the `u`s, and the components (the rotation's length).
    u_sum: i64,
    components: i64,
}

impl SignQuery {
    pub(super) fn new(vector: &[f32]) -> Self {
        let turned = rotated(vector);
        let largest = turned.iter().fold(0f32, |m, x| m.max(x.abs()));
        let step = if largest > 0.0 {
            2.0 * largest / 15.0
        } else {
            1.0
        };
        let words = sign_words(vector.len());
        let mut planes: [Vec<u64>; 4] = std::array::from_fn(|_| vec![0u64; words]);
        let mut u_sum = 0;
        for (j, &x) in turned.iter().enumerate() {
            let u = (x / step + 7.5).round().clamp(0.0, 15.0) as u64;
            u_sum += u as i64;
            for (k, plane) in planes.iter_mut().enumerate() {
                plane[j / 64] |= (u >> k & 1) << (j % 64);
            }
        }
        Self {
            planes,
            step,
            u_sum,
            components: turned.len() as i64,
        }
    }

    /// The sum of the query's components over a set of a row's bits, from `weighed` (the
    /// sum of their `u`s) and `set` (how many): `step × (weighed - 7.5 set)`.
    fn sum(&self, weighed: i64, set: i64) -> f32 {
        (2 * weighed - 15 * set) as f32 * self.step / 2.0
    }

    /// The query's product with a row's signs (+1 where its bit is set, -1 elsewhere), from
    /// `weighed` and `set` of its set bits (see [`SignQuery::sum`]): the sum of
    /// `(u - 7.5) × (2 bit - 1)` is `2 weighed - 15 set - u_sum + 7.5 components`, in
    /// integers, as the scan of every row takes it.
    fn product(&self, weighed: i64, set: i64) -> f32 {
        let twice = 4 * weighed - 30 * set - 2 * self.u_sum + 15 * self.components;
        twice as f32 * self.step / 2.0
    }

    /// The query's product with a row's levels (`signs` × (1 + 2 `magnitudes`), see
    /// [`RowSigns`]), from the counts (see [`SignQuery::counts`]) of its signs, of its bits
    /// set in both, and of its magnitudes: its product with the signs, and twice that with
    /// the signs of the components past the threshold (the sum over those set in both,
    /// twice, less the sum over those past it).
    fn leveled_product(&self, signs: (i64, i64), both: (i64, i64), far: (i64, i64)) -> f32 {
        let sum = |(weighed, set): (i64, i64)| self.sum(weighed, set);
        self.product(signs.0, signs.1) + 4.0 * sum(both) - 2.0 * sum(far)
    }

    /// The sum over a row's set bits of the query's `u`s, and how many are set. Inlined, so
    /// it counts with the POPCNT of its caller's loop where the CPU has one.
    #[inline(always)]
    fn counts(&self, row: &[u64]) -> (i64, i64) {
        let (mut weighed, mut set) = (0i64, 0i64);
        for (w, &bits) in row.iter().enumerate() {
            set += i64::from(bits.count_ones());
            for (k, plane) in self.planes.iter().enumerate() {
                weighed += i64::from((bits & plane[w]).count_ones()) << k;
            }
        }
        (weighed, set)
    }
}

/// How many rows the scan of sign bits keeps for each one asked for, to be weighed again
/// by their levels (two bits a component, [`RowSigns`]) before [`SIGNED_PER_RESULT`] of
/// them are read from the file. One bit a component estimates a cosine to a few
/// hundredths, where at 1M hashed memories a search's nearest 50 lie within a few
/// hundredths of thousands more: ranking 100 a result by their codes straight from the
/// signs, the 10 best were 0.961 those of exact search, and the rows missed were nearer
/// than those found, not ties. Weighed by their levels first (over 40 queries, reading 30
/// a result): 150 kept 0.968, 300 kept 0.990, 1000 kept 0.990 for ~7 ms more.
pub(super) const SIGN_SCANNED_PER_RESULT: usize = 300;

/// How many rows a search of signed planes reads from the file for each one asked for, to
/// be ranked by their codes: each costs a read (~2 µs, and a page of the file the kernel
/// caches). Of 300 a result found by their signs, reading the best 30 by their levels kept
/// 0.990 of exact search's 10 best; 100 kept 0.995, and a vector search's p50 was ~40 ms
/// rather than ~25.
pub(super) const SIGNED_PER_RESULT: usize = 30;

/// The rows of `space` (all when None) a search of signed planes ranks by their codes for
/// `limit` results (in no order), with their estimated cosines: the best by their signs,
/// and of those the best by their levels.
pub(super) fn signed_candidates(
    codes: &Codes,
    vector: &[f32],
    space: Option<u32>,
    limit: usize,
) -> Vec<(f32, u32)> {
    let query = SignQuery::new(vector);
    candidates(codes, &query, space, Keep::for_results(codes, limit))
}

/// The rows of `space` (all when None) each stage of a search keeps (see [`Keep`]), by the
/// loop for the widest popcounts the CPU has.
pub(super) fn candidates(
    codes: &Codes,
    query: &SignQuery,
    space: Option<u32>,
    keep: Keep,
) -> Vec<(f32, u32)> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512vpopcntdq")
            && std::arch::is_x86_feature_detected!("avx512dq")
        {
            // SAFETY: the CPU has AVX-512 VPOPCNTDQ and DQ (checked just above).
            return unsafe { candidates_avx512(codes, query, space, keep) };
        }
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU has POPCNT (checked just above).
            return unsafe { candidates_popcnt(codes, query, space, keep) };
        }
    }
    candidates_portable(codes, query, space, keep)
}

/// How many rows each stage of a search of signed planes keeps.
#[derive(Clone, Copy)]
pub(super) struct Keep {
    /// By their signs, of every row.
    pub(super) scanned: usize,
    /// By their levels, of those, to be read from the file.
    pub(super) read: usize,
    /// The threads the scan of signs is shared between.
    pub(super) parts: usize,
}

impl Keep {
    /// What a search for `limit` results keeps, its scan shared as `codes`' rows warrant.
    pub(super) fn for_results(codes: &Codes, limit: usize) -> Self {
        Self {
            scanned: limit * SIGN_SCANNED_PER_RESULT,
            read: limit * SIGNED_PER_RESULT,
            parts: super::scan::parts_for(codes.planes.sign_scales().len()),
        }
    }
}

/// Eight words at a time: a row of MiniLM's 512 bits is one register, weighed against the
/// query's four planes with five `vpopcntq`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vpopcntdq")]
unsafe fn candidates_avx512(
    codes: &Codes,
    query: &SignQuery,
    space: Option<u32>,
    keep: Keep,
) -> Vec<(f32, u32)> {
    let words = sign_words(codes.dim);
    let planes = QueryPlanes::of(query, words);
    two_stages(
        codes,
        query,
        keep,
        // Closures compiled with this function's features, as what they call needs.
        |best, range| best_by_signs_avx512(codes, query, &planes, space, best, range),
        |row| planes.counts(row),
    )
}

/// The query's four planes in registers, eight words a chunk, and the words a row takes.
#[cfg(target_arch = "x86_64")]
struct QueryPlanes {
    chunks: Vec<[std::arch::x86_64::__m512i; 4]>,
    words: usize,
}

#[cfg(target_arch = "x86_64")]
impl QueryPlanes {
    #[target_feature(enable = "avx512f")]
    fn of(query: &SignQuery, words: usize) -> Self {
        let chunks = (0..words.div_ceil(8))
            .map(|c| std::array::from_fn(|k| Self::load(&query.planes[k], c, words)))
            .collect();
        Self { chunks, words }
    }

    /// Chunk `c` of a row of `words`; the last chunk's words past the row's end are
    /// masked off.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn load(row: &[u64], c: usize, words: usize) -> std::arch::x86_64::__m512i {
        use std::arch::x86_64::*;
        let mask = (0xffu16 >> (8 * (c + 1)).saturating_sub(words)) as __mmask8;
        debug_assert!(row.len() >= words);
        // SAFETY: only the words of chunk `c` that `mask` keeps are read, and they lie
        // within the row.
        unsafe { _mm512_maskz_loadu_epi64(mask, row.as_ptr().add(8 * c).cast()) }
    }

    /// The weighed sum and the count of `row`'s set bits (see [`SignQuery::counts`]), each
    /// in eight lanes.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vpopcntdq")]
    fn weigh(&self, row: &[u64]) -> (std::arch::x86_64::__m512i, std::arch::x86_64::__m512i) {
        use std::arch::x86_64::*;
        let (mut weighed, mut set) = (_mm512_setzero_si512(), _mm512_setzero_si512());
        for (c, plane) in self.chunks.iter().enumerate() {
            let b = Self::load(row, c, self.words);
            set = _mm512_add_epi64(set, _mm512_popcnt_epi64(b));
            let bit = |k: usize| _mm512_popcnt_epi64(_mm512_and_si512(b, plane[k]));
            let low = _mm512_add_epi64(bit(0), _mm512_slli_epi64::<1>(bit(1)));
            let high = _mm512_add_epi64(bit(2), _mm512_slli_epi64::<1>(bit(3)));
            weighed =
                _mm512_add_epi64(weighed, _mm512_add_epi64(low, _mm512_slli_epi64::<2>(high)));
        }
        (weighed, set)
    }

    /// `4 weighed - 30 set` of `row` in eight lanes, whose sum and the query's constant
    /// give `twice` of [`SignQuery::product`].
    #[inline]
    #[target_feature(enable = "avx512f,avx512vpopcntdq")]
    fn lanes(&self, row: &[u64]) -> std::arch::x86_64::__m512i {
        use std::arch::x86_64::*;
        let (weighed, set) = self.weigh(row);
        // 4 weighed - 32 set + 2 set.
        let four = _mm512_slli_epi64::<2>(weighed);
        let thirty = _mm512_sub_epi64(_mm512_slli_epi64::<5>(set), _mm512_slli_epi64::<1>(set));
        _mm512_sub_epi64(four, thirty)
    }

    /// [`SignQuery::counts`] of `row`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vpopcntdq")]
    fn counts(&self, row: &[u64]) -> (i64, i64) {
        use std::arch::x86_64::*;
        let (weighed, set) = self.weigh(row);
        // One reduction for both: the weighed sum (at most 15 a bit) fits in 32 bits.
        let both = _mm512_reduce_add_epi64(_mm512_add_epi64(weighed, _mm512_slli_epi64::<32>(set)));
        (both & 0xffff_ffff, both >> 32)
    }
}

/// The best rows of `range` by their signs, eight rows at a time: each row's weighing is
/// left in eight lanes, the eight rows' lanes are summed together ([`sums_of_eight`]), and
/// their scores are made and held against the floor of the rows kept in one vector each;
/// only a row past it is looked at alone (its namespace). A row at a time, the sum of its
/// lanes and its score's arithmetic took about half the loop's time (`perf annotate`). Compiled for AVX-512 whole, so the weighing is inlined in the loop.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vpopcntdq")]
fn best_by_signs_avx512(
    codes: &Codes,
    query: &SignQuery,
    planes: &QueryPlanes,
    space: Option<u32>,
    best: &mut Best,
    range: Range<usize>,
) {
    use std::arch::x86_64::*;
    let (words, scales, signs) = (
        planes.words,
        codes.planes.sign_scales(),
        codes.planes.signs(),
    );
    // `twice` of [`SignQuery::product`] is the lanes' sum and this.
    let constant = _mm512_set1_epi64(15 * query.components - 2 * query.u_sum);
    let (step, half) = (_mm256_set1_ps(query.step), _mm256_set1_ps(0.5));
    let blocks = range.len() / 8;
    for b in 0..blocks {
        let first = range.start + 8 * b;
        // The rows ahead are asked for now: the loop takes only a few of them in flight
        // by itself, and each waited for memory (~20 ns a row rather than ~4).
        let ahead = signs.as_ptr().wrapping_add((first + ROWS_AHEAD) * words);
        prefetch(ahead, 8 * 8 * words);
        let lanes: [__m512i; 8] =
            std::array::from_fn(|r| planes.lanes(row(signs, first + r, words)));
        let twice = _mm512_add_epi64(sums_of_eight(lanes), constant);
        // As [`SignQuery::product`] rounds: the product's integer to f32, times the step,
        // halved; then times the row's scale.
        let products = _mm256_mul_ps(_mm256_mul_ps(_mm512_cvtepi64_ps(twice), step), half);
        // SAFETY: rows `first..first + 8` lie in `range`, whose rows have scales.
        let row_scales = unsafe { _mm256_loadu_ps(scales.as_ptr().add(first)) };
        let mut scores = [0f32; 8];
        // SAFETY: `scores` holds eight f32s.
        unsafe { _mm256_storeu_ps(scores.as_mut_ptr(), _mm256_mul_ps(products, row_scales)) };
        for (r, score) in scores.into_iter().enumerate() {
            if score > best.floor() && super::scan::asked(codes, space, first + r) {
                best.offer(score, (first + r) as u32);
            }
        }
    }
    let rest = range.start + 8 * blocks..range.end;
    for (i, &scale) in rest.clone().zip(&scales[rest]) {
        if super::scan::asked(codes, space, i) {
            let (weighed, set) = planes.counts(row(signs, i, words));
            best.offer(query.product(weighed, set) * scale, i as u32);
        }
    }
}

/// The sums of eight vectors' lanes: lane `r` of the answer is the sum of vector `r`'s
/// lanes. Pairs of vectors are summed across neighbouring lanes, then across halves of the
/// pairs' 128-bit parts, twice: 21 operations, where a sum of each vector's lanes alone
/// takes ~7 each.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
fn sums_of_eight(v: [std::arch::x86_64::__m512i; 8]) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::*;
    // Each 128-bit part k of `pair(a, b)`: (a's lanes 2k and 2k+1 summed, b's likewise).
    let pair = |a, b| _mm512_add_epi64(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
    // Parts 0 and 2 of each, then 1 and 3, summed: each part of the answer sums two.
    let parts = |a, b| {
        _mm512_add_epi64(
            _mm512_shuffle_i64x2::<0b10_00_10_00>(a, b),
            _mm512_shuffle_i64x2::<0b11_01_11_01>(a, b),
        )
    };
    let (p01, p23, p45, p67) = (
        pair(v[0], v[1]),
        pair(v[2], v[3]),
        pair(v[4], v[5]),
        pair(v[6], v[7]),
    );
    parts(parts(p01, p23), parts(p45, p67))
}

/// How many rows ahead of their turn the stages of a search ask for a row's bits.
const ROWS_AHEAD: usize = 16;

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn candidates_popcnt(
    codes: &Codes,
    query: &SignQuery,
    space: Option<u32>,
    keep: Keep,
) -> Vec<(f32, u32)> {
    candidates_portable(codes, query, space, keep)
}

#[inline(always)]
pub(super) fn candidates_portable(
    codes: &Codes,
    query: &SignQuery,
    space: Option<u32>,
    keep: Keep,
) -> Vec<(f32, u32)> {
    let (words, scales) = (sign_words(codes.dim), codes.planes.sign_scales());
    let best_by_signs = |best: &mut Best, range: Range<usize>| {
        let rows = codes.planes.signs()[range.start * words..range.end * words].chunks_exact(words);
        super::scan::best_rows(codes, space, best, range.start, rows, |i, row| {
            let (weighed, set) = query.counts(row);
            query.product(weighed, set) * scales[i]
        })
    };
    two_stages(codes, query, keep, best_by_signs, |row| query.counts(row))
}

/// Row `i` of a plane of `words` a row.
fn row(plane: &[u64], i: usize, words: usize) -> &[u64] {
    &plane[i * words..][..words]
}

/// The best rows by their signs (`best_by_signs` of a range of rows), then the best of
/// those by their levels ([`by_levels`]).
#[inline(always)]
fn two_stages(
    codes: &Codes,
    query: &SignQuery,
    keep: Keep,
    best_by_signs: impl Fn(&mut Best, Range<usize>) + Sync,
    counts: impl Fn(&[u64]) -> (i64, i64),
) -> Vec<(f32, u32)> {
    // The sign bits stream from memory (64 MB at 1M MiniLM rows), so the scan is shared
    // between the cores.
    let rows = codes.planes.sign_scales().len();
    let found = super::scan::shared(rows, keep.parts, keep.scanned, best_by_signs);
    by_levels(codes, query, found, keep.read, counts)
}

/// The `read` best of `found` (rows a scan of signs kept) by their levels, by the loop for
/// the widest popcounts the CPU has.
pub(super) fn best_by_levels(
    codes: &Codes,
    query: &SignQuery,
    found: Vec<(f32, u32)>,
    read: usize,
) -> Vec<(f32, u32)> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512vpopcntdq") {
            // SAFETY: the CPU has AVX-512 VPOPCNTDQ (checked just above).
            return unsafe { best_by_levels_avx512(codes, query, found, read) };
        }
    }
    by_levels(codes, query, found, read, |row| query.counts(row))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
unsafe fn best_by_levels_avx512(
    codes: &Codes,
    query: &SignQuery,
    found: Vec<(f32, u32)>,
    read: usize,
) -> Vec<(f32, u32)> {
    let planes = QueryPlanes::of(query, sign_words(codes.dim));
    by_levels(codes, query, found, read, |row| planes.counts(row))
}

/// The `read` best of `found` by their levels, each weighed by `counts` of a row's bits
/// (the sum over its set bits of the query's `u`s, and how many are set), and turned into
/// an estimated cosine; `found` whole when it holds no more.
#[inline(always)]
fn by_levels(
    codes: &Codes,
    query: &SignQuery,
    mut found: Vec<(f32, u32)>,
    read: usize,
    counts: impl Fn(&[u64]) -> (i64, i64),
) -> Vec<(f32, u32)> {
    if found.len() <= read {
        return found;
    }
    let words = sign_words(codes.dim);
    let (signs, magnitudes) = (codes.planes.signs(), codes.planes.magnitudes());
    let scales = codes.planes.fine_scales();
    let mut both = vec![0u64; words];
    for k in 0..found.len() {
        // The rows lie anywhere in the planes: each is asked for a few rows ahead of its
        // turn (its first line; MiniLM's rows are one).
        if let Some(&(_, next)) = found.get(k + ROWS_AHEAD) {
            prefetch(row(signs, next as usize, words).as_ptr(), 1);
            prefetch(row(magnitudes, next as usize, words).as_ptr(), 1);
        }
        let (score, i) = &mut found[k];
        let i = *i as usize;
        let (signs, magnitudes) = (row(signs, i, words), row(magnitudes, i, words));
        for ((b, s), m) in both.iter_mut().zip(signs).zip(magnitudes) {
            *b = s & m;
        }
        let product = query.leveled_product(counts(signs), counts(&both), counts(magnitudes));
        *score = product * scales[i];
    }
    found.select_nth_unstable_by(read - 1, |a, b| b.0.total_cmp(&a.0));
    found.truncate(read);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rotation_keeps_lengths_and_angles_and_spreads_a_sparse_vector() {
        let dim = 384;
        let sparse = |seed: usize| -> Vec<f32> {
            let mut v = vec![0.0; dim];
            for k in 0..6 {
                v[(seed * 53 + k * 101) % dim] = if (seed + k).is_multiple_of(3) {
                    -1.0
                } else {
                    0.5
                };
            }
            v
        };
        let (a, b) = (sparse(1), sparse(2));
        let (ra, rb) = (rotated(&a), rotated(&b));
        // Each round's transform scales lengths by the square root of its 512 components.
        let scale = 512f32.powi(3);
        let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>();
        assert!((dot(&ra, &ra) / scale - dot(&a, &a)).abs() < 1e-3);
        assert!((dot(&ra, &rb) / scale - dot(&a, &b)).abs() < 1e-3);
        // Six components in, nearly every rotated component is away from zero.
        let spread = ra.iter().filter(|x| x.abs() > 1e-3).count();
        assert!(spread > 480, "{spread} of 512");
    }

    #[test]
    fn the_query_weighs_a_rows_signs_as_its_rotation_rounded_to_four_bits_would() {
        for dim in [5, 384, 700] {
            let vector = |seed: usize| -> Vec<f32> {
                (0..dim)
                    .map(|j| ((seed * 31 + j * 17) % 101) as f32 / 50.0 - 1.0)
                    .collect()
            };
            let query = SignQuery::new(&vector(1));
            let turned = rotated(&vector(1));
            let row = RowSigns::of(&vector(2)).signs;
            let bit = |j: usize| row[j / 64] >> (j % 64) & 1 == 1;
            // The product straight from the four-bit components.
            let straight: f32 = turned
                .iter()
                .enumerate()
                .map(|(j, &x)| {
                    let u = (x / query.step + 7.5).round().clamp(0.0, 15.0);
                    query.step * (u - 7.5) * if bit(j) { 1.0 } else { -1.0 }
                })
                .sum();
            let (weighed, set) = query.counts(&row);
            let product = query.product(weighed, set);
            assert!(
                (product - straight).abs() <= 1e-3 * straight.abs().max(1.0),
                "dim {dim}: {product} vs {straight}"
            );
        }
    }

    /// Pseudo-random components in -1..1, from `seed`.
    fn random(dim: usize, seed: u64) -> Vec<f32> {
        (0..dim as u64)
            .map(|j| (mixed(seed << 20 | j) >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
            .collect()
    }

    #[test]
    fn the_levels_weigh_a_row_as_its_rotation_at_two_bits_would_and_nearer_its_cosine() {
        let dim = 384;
        let query_vector = random(dim, 1);
        let query = SignQuery::new(&query_vector);
        let turned = rotated(&query_vector);
        let u = |j: usize| (turned[j] / query.step + 7.5).round().clamp(0.0, 15.0);
        let length = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        let (mut off_by_signs, mut off_by_levels) = (0.0, 0.0);
        for seed in 2..202 {
            // Rows a little like the query, so their cosines spread.
            let row_vector: Vec<f32> = random(dim, seed)
                .iter()
                .zip(&query_vector)
                .map(|(r, q)| r + q * (seed % 5) as f32 / 4.0)
                .collect();
            let row = RowSigns::of(&row_vector);
            let bit = |plane: &[u64], j: usize| plane[j / 64] >> (j % 64) & 1 == 1;
            let straight: f32 = (0..turned.len())
                .map(|j| {
                    let sign = if bit(&row.signs, j) { 1.0 } else { -1.0 };
                    let level = if bit(&row.magnitudes, j) { 3.0 } else { 1.0 };
                    query.step * (u(j) - 7.5) * sign * level
                })
                .sum();
            let both: Vec<u64> = row
                .signs
                .iter()
                .zip(&row.magnitudes)
                .map(|(s, m)| s & m)
                .collect();
            let counts = |bits: &[u64]| query.counts(bits);
            let leveled =
                query.leveled_product(counts(&row.signs), counts(&both), counts(&row.magnitudes));
            assert!((leveled - straight).abs() <= 1e-3 * straight.abs().max(1.0));
            let (weighed, set) = counts(&row.signs);
            // Each estimate is the cosine times the query's length.
            let cosine = crate::linalg::cosine(&query_vector, &row_vector);
            let estimate = |product: f32, scale: f32| product * scale / length(&query_vector);
            off_by_signs += (estimate(query.product(weighed, set), row.scale) - cosine).abs();
            off_by_levels += (estimate(leveled, row.fine_scale) - cosine).abs();
        }
        assert!(
            off_by_levels < 0.7 * off_by_signs,
            "{off_by_levels} vs {off_by_signs}"
        );
    }
}
