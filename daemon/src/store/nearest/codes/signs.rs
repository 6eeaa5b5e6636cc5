//! The sign bits signed planes hold of each row (`planes.rs`), and their scan: one bit for
//! each component of the row's rotation, and a search's query weighed against them at four
//! bits a component (as RaBitQ estimates a product from one bit a component).
//!
//! A rotation first, because the signs of the raw components say little of sparse vectors
//! (the hashed embedder's), where a zero and a negative component give the same bit. And the
//! query at four bits, because the share of bits two vectors' signs share estimates their
//! angle too coarsely: at 1M hashed memories the 10 nearest by the ranking of the 500 rows
//! so found were 0.511 those of exact search (0.035 without the rotation, 0.69 with the
//! query at four bits). What is still missed is the first stage's (see
//! `SIGNED_PER_RESULT`): the rows ranked by their codes are ranked to within ~1e-4.

use super::Codes;

/// Words of sign bits a row of `dim` components takes: a bit for each component of its
/// rotation ([`rotated`]).
pub(super) fn sign_words(dim: usize) -> usize {
    dim.next_power_of_two().div_ceil(64)
}

/// `vector`'s sign bits, those of its rotation ([`rotated`]) — component `j` at bit `j % 64`
/// of word `j / 64`, set where it is above zero — and what turns a query's product with
/// their signs into an estimate of the cosine, up to the query's own scale: the vector's
/// length over its rotation's sum of magnitudes.
pub(super) fn signs_of(vector: &[f32]) -> (Vec<u64>, f32) {
    let turned = rotated(vector);
    let mut words = vec![0u64; sign_words(vector.len())];
    for (j, &x) in turned.iter().enumerate() {
        words[j / 64] |= u64::from(x > 0.0) << (j % 64);
    }
    let length = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    let magnitudes: f32 = turned.iter().map(|x| x.abs()).sum();
    let scale = if magnitudes > 0.0 {
        length / magnitudes
    } else {
        0.0
    };
    (words, scale)
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

    /// The query's product with a row's signs (+1 where its bit is set, -1 elsewhere), from
    /// `weighed` (the sum over the row's set bits of the `u`s) and `set` (its bits set):
    /// the sum of `(u - 7.5) × (2 bit - 1)` is `2 weighed - 15 set - u_sum + 7.5 components`.
    fn product(&self, weighed: i64, set: i64) -> f32 {
        let twice = 4 * weighed - 30 * set - 2 * self.u_sum + 15 * self.components;
        twice as f32 * self.step / 2.0
    }
}

/// The `limit` best rows by their estimated cosine with `vector` (in no order), of
/// namespace `space` (all when None), by the loop for the widest popcounts the CPU has.
pub(super) fn scan_signs(
    codes: &Codes,
    vector: &[f32],
    space: Option<u32>,
    limit: usize,
) -> Vec<(f32, u32)> {
    let query = SignQuery::new(vector);
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512vpopcntdq") {
            // SAFETY: the CPU has AVX-512 VPOPCNTDQ (checked just above).
            return unsafe { scan_signs_avx512(codes, &query, space, limit) };
        }
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU has POPCNT (checked just above).
            return unsafe { scan_signs_popcnt(codes, &query, space, limit) };
        }
    }
    scan_signs_portable(codes, &query, space, limit)
}

/// Eight words at a time: a row of MiniLM's 512 bits is one register, weighed against the
/// query's four planes with five `vpopcntq`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
unsafe fn scan_signs_avx512(
    codes: &Codes,
    query: &SignQuery,
    space: Option<u32>,
    limit: usize,
) -> Vec<(f32, u32)> {
    use std::arch::x86_64::*;
    let words = sign_words(codes.dim);
    let chunks = words.div_ceil(8);
    // The last chunk's words past the row's end are masked off.
    let mask = |c: usize| -> __mmask8 { (0xffu16 >> (8 * (c + 1)).saturating_sub(words)) as u8 };
    // SAFETY (every load): only the words of chunk `c` that `mask(c)` keeps are read, and
    // they lie within the slice.
    let load = |words: &[u64], c: usize| unsafe {
        _mm512_maskz_loadu_epi64(mask(c), words.as_ptr().add(8 * c).cast())
    };
    let planes: Vec<[__m512i; 4]> = (0..chunks)
        .map(|c| std::array::from_fn(|k| load(&query.planes[k], c)))
        .collect();
    best_signed(codes, query, space, limit, |row| {
        let (mut set, mut weighed) = (_mm512_setzero_si512(), _mm512_setzero_si512());
        for (c, plane) in planes.iter().enumerate() {
            let b = load(row, c);
            set = _mm512_add_epi64(set, _mm512_popcnt_epi64(b));
            let bit = |k: usize| _mm512_popcnt_epi64(_mm512_and_si512(b, plane[k]));
            let low = _mm512_add_epi64(bit(0), _mm512_slli_epi64::<1>(bit(1)));
            let high = _mm512_add_epi64(bit(2), _mm512_slli_epi64::<1>(bit(3)));
            weighed =
                _mm512_add_epi64(weighed, _mm512_add_epi64(low, _mm512_slli_epi64::<2>(high)));
        }
        (
            _mm512_reduce_add_epi64(weighed),
            _mm512_reduce_add_epi64(set),
        )
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn scan_signs_popcnt(
    codes: &Codes,
    query: &SignQuery,
    space: Option<u32>,
    limit: usize,
) -> Vec<(f32, u32)> {
    scan_signs_portable(codes, query, space, limit)
}

#[inline(always)]
pub(super) fn scan_signs_portable(
    codes: &Codes,
    query: &SignQuery,
    space: Option<u32>,
    limit: usize,
) -> Vec<(f32, u32)> {
    best_signed(codes, query, space, limit, |row| {
        let (mut weighed, mut set) = (0i64, 0i64);
        for (w, &bits) in row.iter().enumerate() {
            set += i64::from(bits.count_ones());
            for (k, plane) in query.planes.iter().enumerate() {
                weighed += i64::from((bits & plane[w]).count_ones()) << k;
            }
        }
        (weighed, set)
    })
}

/// The `limit` best rows of `space` by `counts` of each row's signs (the sum over its set
/// bits of the query's `u`s, and its bits set), turned into an estimated cosine.
#[inline(always)]
fn best_signed(
    codes: &Codes,
    query: &SignQuery,
    space: Option<u32>,
    limit: usize,
    counts: impl Fn(&[u64]) -> (i64, i64),
) -> Vec<(f32, u32)> {
    let rows = codes.planes.signs().chunks_exact(sign_words(codes.dim));
    let scales = codes.planes.sign_scales();
    super::scan::best_rows(codes, space, limit, rows, |i, row| {
        let (weighed, set) = counts(row);
        query.product(weighed, set) * scales[i]
    })
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
            let (row, _) = signs_of(&vector(2));
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
            let (mut weighed, mut set) = (0, 0);
            for (w, &bits) in row.iter().enumerate() {
                set += i64::from(bits.count_ones());
                for (k, plane) in query.planes.iter().enumerate() {
                    weighed += i64::from((bits & plane[w]).count_ones()) << k;
                }
            }
            let product = query.product(weighed, set);
            assert!(
                (product - straight).abs() <= 1e-3 * straight.abs().max(1.0),
                "dim {dim}: {product} vs {straight}"
            );
        }
    }
}
