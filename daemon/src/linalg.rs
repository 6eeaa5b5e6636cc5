//! Dense f32 matrix products over `gemm`: the embedder's layers and dedup's similarity
//! blocks share this one checked entry point. And the vector helpers (unit length, cosine)
//! the embedder, the store and recall share.

use gemm::Parallelism;

/// Rows a product needs before it is split across threads.
const MIN_ROWS_TO_SPLIT: usize = 16;

/// Threads a matrix product may use: the machine's logical CPUs.
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `dst[m×n] (+)= beta · lhs[m×k] · rhs[k×n]`, every operand given by its row and column strides.
#[allow(clippy::too_many_arguments)]
pub fn matmul(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [f32],
    (dst_rs, dst_cs): (isize, isize),
    lhs: &[f32],
    (lhs_rs, lhs_cs): (isize, isize),
    rhs: &[f32],
    (rhs_rs, rhs_cs): (isize, isize),
    beta: f32,
    threads: usize,
) {
    // Bounds: the last element each operand addresses must lie inside its slice.
    let last = |rows: usize, cols: usize, rs: isize, cs: isize| {
        (rows.max(1) - 1) as isize * rs + (cols.max(1) - 1) as isize * cs
    };
    assert!(last(m, n, dst_rs, dst_cs) < dst.len() as isize);
    assert!(last(m, k, lhs_rs, lhs_cs) < lhs.len() as isize);
    assert!(last(k, n, rhs_rs, rhs_cs) < rhs.len() as isize);
    // A short product (one query's dozen tokens) is faster on one thread: splitting it costs
    // more than it saves, most of all with the AVX-512 kernels' wider tiles (measured with
    // `cargo bench --bench embed`: one query p50 8.5 ms split, 6.9 ms whole).
    let parallelism = if m >= MIN_ROWS_TO_SPLIT && m * n * k >= 1 << 20 && threads > 1 {
        Parallelism::Rayon(threads)
    } else {
        Parallelism::None
    };
    // SAFETY: the asserts above keep every addressed element inside its slice, and dst does
    // not alias the inputs (it is a distinct &mut).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            dst_cs,
            dst_rs,
            false,
            lhs.as_ptr(),
            lhs_cs,
            lhs_rs,
            rhs.as_ptr(),
            rhs_cs,
            rhs_rs,
            0.0,
            beta,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// The sum of `term(i)` for `i` in `0..n`, kept in 16 running lanes: a plain sum of f32 must
/// add in order, so it does not vectorise. The terms are asked sixteen at a time, so a term
/// that indexes slices of at least `n` vectorises too (an iterator's sum, taken one by one
/// into `i % 16`, stayed scalar).
#[inline(always)]
pub fn lane_sum(n: usize, term: impl Fn(usize) -> f32) -> f32 {
    let mut lanes = [0.0f32; 16];
    let whole = n / 16 * 16;
    for start in (0..whole).step_by(16) {
        for (lane, sum) in lanes.iter_mut().enumerate() {
            *sum += term(start + lane);
        }
    }
    for (sum, i) in lanes.iter_mut().zip(whole..n) {
        *sum += term(i);
    }
    lanes.iter().sum()
}

/// Scales a vector to unit length in place (a zero vector stays zero).
pub fn l2_normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}
