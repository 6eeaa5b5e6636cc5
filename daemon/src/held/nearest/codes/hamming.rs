//! One scan of the sign bits for many queries at once, by their Hamming distance alone:
//! dedup's neighbours for a block of new memories. A search's scan weighs each row with its
//! one query at four bits a component (`signs.rs`), five popcounts and a reduction a row,
//! ~4 ns: the first dedup of 1M memories, a scan of every row for each, spent half its time
//! there. Here each of a row's words meets eight queries' at once, one in each lane: a
//! popcount a word for eight queries, and no reduction: ~0.7 ms of a core a query at 1M
//! rows, where a search's scan takes ~4. One bit a component tells the rows
//! dedup looks for (at or above a cosine such as 0.75) from the rest with room to spare
//! ([`hamming_bound`]); the rows kept are then weighed and ranked as a search's are.

use std::ops::Range;

use super::prefetch::prefetch;
use super::scan::{shared_each, Best};
use super::signs::{sign_words, RowSigns};
use super::{Codes, RETIRED};

/// Queries a group holds: one in each 64-bit lane of a 512-bit register.
const LANES: usize = 8;

/// How many rows ahead of their turn the scan asks for a row's bits.
const ROWS_AHEAD: usize = 8;

/// The Hamming distance of their signs within which two vectors at `cosine` or more lie,
/// with room: after a random rotation, each of `bits` signs differs with chance θ/π (θ
/// their angle, as in SimHash), and the bound is the mean and eight standard deviations of
/// that count (at 0.75 and 512 bits, 194 of a mean 118; unrelated vectors differ in ~256).
pub(super) fn hamming_bound(bits: usize, cosine: f32) -> u64 {
    let chance = f64::from(cosine.clamp(-1.0, 1.0)).acos() / std::f64::consts::PI;
    let n = bits as f64;
    let bound = n * chance + 8.0 * (n * chance * (1.0 - chance)).sqrt();
    bound.ceil().min(n) as u64
}

/// The queries of one scan: each one's sign bits, laid out a group of eight at a time, its
/// namespace, and the distance within which its rows are kept.
pub(super) struct Batch {
    /// Word `w` of query `8g + lane` at `(g × words + w) × 8 + lane`; lanes past the last
    /// query are zero (and keep nothing: their bound is 0).
    lanes: Vec<u64>,
    words: usize,
    spaces: Vec<Option<u32>>,
    /// One past the distance kept of every query's rows, before any fills its share.
    bound: u64,
}

impl Batch {
    /// `queries` (each a vector of the codes' dimension and a namespace, all when None),
    /// keeping rows at `within` or more (see [`hamming_bound`]).
    pub(super) fn new(dim: usize, queries: &[(&[f32], Option<u32>)], within: f32) -> Self {
        let words = sign_words(dim);
        let groups = queries.len().div_ceil(LANES);
        let mut lanes = vec![0u64; groups * words * LANES];
        for (q, (vector, _)) in queries.iter().enumerate() {
            let signs = RowSigns::of(vector).signs;
            let (g, lane) = (q / LANES, q % LANES);
            for (w, &word) in signs.iter().enumerate() {
                lanes[(g * words + w) * LANES + lane] = word;
            }
        }
        Self {
            lanes,
            words,
            spaces: queries.iter().map(|q| q.1).collect(),
            bound: hamming_bound(64 * words, within) + 1,
        }
    }

    fn queries(&self) -> usize {
        self.spaces.len()
    }

    fn groups(&self) -> usize {
        self.queries().div_ceil(LANES)
    }

    /// Offers row `i` of namespace `space`, at distance `distance`, to query `q`; and
    /// narrows what the query keeps once its share is full.
    #[inline]
    fn take(&self, scan: &mut Scan, q: usize, space: u32, distance: u64, i: usize) {
        if space == RETIRED || self.spaces[q].is_some_and(|s| s != space) {
            return;
        }
        let best = &mut scan.best[q];
        // The nearer the better: a score of minus the distance.
        best.offer(-(distance as f32), i as u32);
        let floor = best.floor();
        if floor.is_finite() {
            scan.limits[q] = scan.limits[q].min((-floor) as u64);
        }
    }
}

/// What a thread of a scan holds of the rows it has scanned: each query's best, and the
/// distance under which a row may still be among them.
struct Scan {
    best: Vec<Best>,
    /// One for each lane of every group; a lane without a query keeps nothing.
    limits: Vec<u64>,
}

impl Scan {
    fn new(batch: &Batch, keep: usize) -> Self {
        let mut limits = vec![0; batch.groups() * LANES];
        limits[..batch.queries()].fill(batch.bound);
        Self {
            best: (0..batch.queries()).map(|_| Best::new(keep)).collect(),
            limits,
        }
    }
}

/// For each query of `batch`, the `keep` rows of its namespace nearest it by the Hamming
/// distance of their signs within the batch's bound (scored minus that distance, in no
/// order), the rows shared between `parts` threads.
pub(super) fn candidates_each(
    codes: &Codes,
    batch: &Batch,
    keep: usize,
    parts: usize,
) -> Vec<Vec<(f32, u32)>> {
    let rows = codes.planes.sign_scales().len();
    shared_each(
        rows,
        parts,
        || Scan::new(batch, keep),
        |scan, range| scan_part(codes, batch, scan, range),
        |scan| scan.best,
    )
}

fn scan_part(codes: &Codes, batch: &Batch, scan: &mut Scan, rows: Range<usize>) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512vpopcntdq") {
            // SAFETY: the CPU has AVX-512 VPOPCNTDQ (checked just above).
            return unsafe { scan_avx512(codes, batch, scan, rows) };
        }
    }
    scan_portable(codes, batch, scan, rows)
}

/// Each row against each query, a word at a time (what the AVX-512 loop must keep alike).
fn scan_portable(codes: &Codes, batch: &Batch, scan: &mut Scan, rows: Range<usize>) {
    let words = batch.words;
    let signs = codes.planes.signs();
    for i in rows {
        let row = &signs[i * words..][..words];
        for q in 0..batch.queries() {
            let (g, lane) = (q / LANES, q % LANES);
            let distance: u64 = (0..words)
                .map(|w| {
                    u64::from((row[w] ^ batch.lanes[(g * words + w) * LANES + lane]).count_ones())
                })
                .sum();
            if distance < scan.limits[q] {
                batch.take(scan, q, codes.space_of[i], distance, i);
            }
        }
    }
}

/// Eight queries a register: each word of a row is broadcast to every lane, and its
/// difference with the queries' word counted in each.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
unsafe fn scan_avx512(codes: &Codes, batch: &Batch, scan: &mut Scan, rows: Range<usize>) {
    use std::arch::x86_64::*;
    let words = batch.words;
    let signs = codes.planes.signs();
    for i in rows {
        prefetch(
            signs.as_ptr().wrapping_add((i + ROWS_AHEAD) * words),
            8 * words,
        );
        let row = &signs[i * words..][..words];
        for g in 0..batch.groups() {
            let mut distances = _mm512_setzero_si512();
            let group = &batch.lanes[g * words * LANES..][..words * LANES];
            for (w, &word) in row.iter().enumerate() {
                // SAFETY: the group holds `words` × 8 words.
                let queries = unsafe { _mm512_loadu_si512(group.as_ptr().add(w * LANES).cast()) };
                let apart = _mm512_xor_si512(_mm512_set1_epi64(word as i64), queries);
                distances = _mm512_add_epi64(distances, _mm512_popcnt_epi64(apart));
            }
            // SAFETY: `limits` holds 8 lanes for every group.
            let limits = unsafe { _mm512_loadu_si512(scan.limits.as_ptr().add(g * LANES).cast()) };
            let mut under = _mm512_cmplt_epu64_mask(distances, limits);
            if under == 0 {
                continue;
            }
            let mut each = [0u64; LANES];
            // SAFETY: `each` holds 8 lanes.
            unsafe { _mm512_storeu_si512(each.as_mut_ptr().cast(), distances) };
            while under != 0 {
                let lane = under.trailing_zeros() as usize;
                under &= under - 1;
                batch.take(scan, g * LANES + lane, codes.space_of[i], each[lane], i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pseudo-random unit vectors (xorshift).
    fn unit(dim: usize, seed: u64) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut v: Vec<f32> = (0..dim)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s % 20_001) as f32 / 10_000.0 - 1.0
            })
            .collect();
        crate::linalg::l2_normalize(&mut v);
        v
    }

    /// A unit vector at cosine `c` with `a` (a unit vector), turned toward `noise`.
    fn at_cosine(a: &[f32], noise: &[f32], c: f32) -> Vec<f32> {
        let along: f32 = noise.iter().zip(a).map(|(n, x)| n * x).sum();
        let mut away: Vec<f32> = noise.iter().zip(a).map(|(n, x)| n - along * x).collect();
        crate::linalg::l2_normalize(&mut away);
        let s = (1.0 - c * c).sqrt();
        a.iter().zip(&away).map(|(x, y)| c * x + s * y).collect()
    }

    fn distance(a: &[f32], b: &[f32]) -> u64 {
        let (a, b) = (RowSigns::of(a).signs, RowSigns::of(b).signs);
        a.iter()
            .zip(&b)
            .map(|(x, y)| u64::from((x ^ y).count_ones()))
            .sum()
    }

    /// Signed codes of `rows` (row `i` with id `i`, in namespace "a" or "b" by `i % 3`),
    /// their rest in a file in `dir`.
    fn signed(rows: &[Vec<f32>], dir: &std::path::Path) -> Codes {
        let mut codes = Codes::signed(rows[0].len()).writing_to(dir);
        for (i, v) in rows.iter().enumerate() {
            let mut r = crate::store::schema::tests::record(&i.to_string(), "text", v.len());
            r.namespace = if i % 3 == 0 { "a" } else { "b" }.into();
            r.vector = v.clone();
            codes.push(&r, Some(i as u64), &[], Vec::new);
        }
        codes
    }

    /// Rows, and queries each near one of them (row 10 k), or near none.
    fn rows_and_queries(dim: usize) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
        let rows: Vec<Vec<f32>> = (0..600).map(|i| unit(dim, i + 1)).collect();
        let queries = (0..11)
            .map(|k| {
                if k == 5 {
                    unit(dim, 99_999)
                } else {
                    at_cosine(&rows[10 * k as usize], &unit(dim, k + 5000), 0.9)
                }
            })
            .collect();
        (rows, queries)
    }

    #[test]
    fn the_scan_for_this_cpu_keeps_for_each_query_what_the_portable_loop_keeps() {
        let dir = tempfile::tempdir().unwrap();
        // Rows of one word, of two, eight and sixteen; eleven queries, a group and a part.
        for dim in [5, 100, 384, 700] {
            let (rows, queries) = rows_and_queries(dim);
            let mut codes = signed(&rows, dir.path());
            codes.retire("20");
            let asked: Vec<(&[f32], Option<u32>)> = queries
                .iter()
                .enumerate()
                .map(|(k, q)| (q.as_slice(), [None, Some(0), Some(1)][k % 3]))
                .collect();
            // Distances tie: rows at the worst distance kept may differ by the order they
            // came in, the distances kept may not, nor the rows nearer than that.
            let sorted = |found: Vec<Vec<(f32, u32)>>| -> Vec<(Vec<f32>, Vec<u32>)> {
                let each = |mut f: Vec<(f32, u32)>| {
                    f.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                    let worst = f.last().map_or(0.0, |r| r.0);
                    let nearer = f.iter().filter(|r| r.0 > worst).map(|r| r.1).collect();
                    (f.iter().map(|r| r.0).collect(), nearer)
                };
                found.into_iter().map(each).collect()
            };
            for within in [0.0, 0.75] {
                let batch = Batch::new(dim, &asked, within);
                let portable = {
                    let mut scan = Scan::new(&batch, 30);
                    scan_portable(&codes, &batch, &mut scan, 0..rows.len());
                    scan.best
                        .into_iter()
                        .map(Best::into_rows)
                        .collect::<Vec<_>>()
                };
                for (k, found) in portable.iter().enumerate() {
                    assert!(found.len() <= 30);
                    assert!(!found.iter().any(|&(_, i)| i == 20), "a retired row");
                    let space = asked[k].1;
                    let of = |i: u32| codes.space_of[i as usize];
                    assert!(found.iter().all(|&(_, i)| space.is_none_or(|s| of(i) == s)));
                }
                for parts in [1, 2, 3] {
                    assert_eq!(
                        sorted(candidates_each(&codes, &batch, 30, parts)),
                        sorted(portable.clone()),
                        "dim {dim}, within {within}, {parts} parts"
                    );
                }
            }
        }
    }

    #[test]
    fn each_vector_finds_the_rows_near_it_a_search_of_its_own_finds() {
        let dir = tempfile::tempdir().unwrap();
        let dim = 384;
        let (rows, queries) = rows_and_queries(dim);
        let codes = signed(&rows, dir.path());
        let asked: Vec<(&[f32], Option<&str>)> = queries
            .iter()
            .enumerate()
            .map(|(k, q)| (q.as_slice(), if k == 7 { Some("nowhere") } else { None }))
            .collect();
        let found = codes.nearest_each(&asked, 3, 0.75);
        for (k, &(query, namespace)) in asked.iter().enumerate() {
            let alone = codes.nearest(query, namespace, 3);
            let near = |f: &[(f32, u32)]| -> Vec<u32> {
                f.iter().filter(|r| r.0 >= 0.75).map(|r| r.1).collect()
            };
            assert_eq!(near(&found[k]), near(&alone), "query {k}");
            match k {
                5 | 7 => assert!(near(&found[k]).is_empty(), "query {k}"),
                _ => assert_eq!(near(&found[k]), vec![10 * k as u32], "query {k}"),
            }
        }
    }

    #[test]
    fn vectors_at_the_cosine_asked_lie_within_the_bound_and_unrelated_ones_beyond() {
        let dim = 384;
        let bits = 64 * sign_words(dim);
        for within in [0.5f32, 0.75, 0.9, 0.95] {
            let bound = hamming_bound(bits, within);
            let (mut sum, pairs) = (0u64, 400u64);
            for k in 0..pairs {
                let a = unit(dim, k + 1);
                let b = at_cosine(&a, &unit(dim, k + 10_000), within);
                let d = distance(&a, &b);
                assert!(d <= bound, "cosine {within}: {d} past {bound}");
                sum += d;
            }
            // The mean is θ/π of the bits, as the bound takes it.
            let expected = f64::from(within).acos() / std::f64::consts::PI * bits as f64;
            let mean = sum as f64 / pairs as f64;
            assert!(
                (mean - expected).abs() < 0.05 * bits as f64,
                "{mean} vs {expected}"
            );
        }
        // Sparse vectors (the hashed embedder's), sharing some of their eight components.
        let sparse = |seed, shared| super::super::sparse_vector(dim, seed, shared);
        let mut near = 0;
        for seed in 1..400 {
            let (a, b) = (sparse(seed, 8), sparse(seed, 6 + seed % 3));
            let cosine = crate::linalg::cosine(&a, &b);
            if cosine >= 0.75 {
                near += 1;
                let (d, bound) = (distance(&a, &b), hamming_bound(bits, 0.75));
                assert!(d <= bound, "cosine {cosine}: {d} past {bound}");
            }
        }
        assert!(near > 200, "{near} pairs near");
        // Unrelated vectors lie past the bound of a near neighbour.
        let bound = hamming_bound(bits, 0.75);
        let past = (0..400)
            .filter(|&k| distance(&unit(dim, k + 1), &unit(dim, k + 777)) > bound)
            .count();
        assert!(past >= 396, "{past} of 400");
    }
}
