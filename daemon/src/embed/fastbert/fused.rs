//! A product of a few rows by 16-bit weights, each weight widened in a register as it is
//! used: for one query's dozen tokens, widening a band to f32 in memory first (and gemm
//! multiplying 12 rows with its 16-row tile) cost more than the product itself on an AVX2
//! CPU (a band of 384 × 320: 88 µs that way, 52 µs this way, weights out of the cache).

/// Columns of a panel, the unit the weights are laid out in: the kernel's tile width (two
/// registers of eight), so a tile reads its panel from one sequential stream.
pub(super) const PANEL: usize = 16;

/// Rows the kernel keeps in registers at once: 6 rows × 16 columns is 12 accumulators, the
/// most AVX2's 16 registers hold beside two of weights and one of the broadcast input.
const TILE_ROWS: usize = 6;

/// `dst = x · W` with AVX2, FMA and F16C, when the CPU has them and W is whole panels; false
/// (dst untouched) otherwise. `x` is `[rows, inp]` row-major; `panels` holds W's `cols`
/// columns in panels of [`PANEL`], each `[inp, PANEL]` row-major; dst's rows lie `dst_row`
/// apart.
pub(super) fn product(
    x: &[f32],
    inp: usize,
    panels: &[half::f16],
    cols: usize,
    dst: &mut [f32],
    dst_row: usize,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if cols.is_multiple_of(PANEL) && has_avx2_fma_f16c() {
        let rows = x.len() / inp;
        assert!(panels.len() >= inp * cols && dst_row >= cols);
        assert!(rows == 0 || dst.len() >= (rows - 1) * dst_row + cols);
        for first in (0..cols).step_by(PANEL) {
            let panel = &panels[first * inp..][..inp * PANEL];
            // The panel after this one (past the slice for the last: a prefetch of an
            // address never faults), asked for while this one is multiplied.
            let ahead = panel.as_ptr().wrapping_add(inp * PANEL);
            for row in (0..rows).step_by(TILE_ROWS) {
                let at = Tile {
                    row,
                    first,
                    dst_row,
                    ahead,
                };
                // SAFETY: the CPU has AVX2, FMA and F16C (checked above); the tile reads
                // rows row..row+R of x and the panel's inp × 16 halves, and writes those
                // rows' columns first..first+16 of dst, which the asserts keep inside it.
                unsafe {
                    match TILE_ROWS.min(rows - row) {
                        6 => tile::<6>(x, inp, panel, dst, at),
                        5 => tile::<5>(x, inp, panel, dst, at),
                        4 => tile::<4>(x, inp, panel, dst, at),
                        3 => tile::<3>(x, inp, panel, dst, at),
                        2 => tile::<2>(x, inp, panel, dst, at),
                        _ => tile::<1>(x, inp, panel, dst, at),
                    }
                }
            }
        }
        return true;
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (x, inp, panels, cols, dst, dst_row);
    false
}

/// Whether [`product`] can run here (for columns that are whole panels).
pub(super) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return has_avx2_fma_f16c();
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether the kernel can run here; asked once, as it is asked for every band of every layer.
#[cfg(target_arch = "x86_64")]
fn has_avx2_fma_f16c() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
    })
}

/// Where a tile lies: its first row of x and dst, its panel's first column in dst, dst's
/// row length, and the panel after its own (only prefetched: each core reads a query's
/// weights from memory at ~6 GB/s here, and the hardware prefetcher stops at each 4 KB page,
/// so without it a query's first tile of a panel waited on memory; one query on one core
/// 7.0 → 5.0 ms).
#[derive(Clone, Copy)]
struct Tile {
    row: usize,
    first: usize,
    dst_row: usize,
    ahead: *const half::f16,
}

/// Rows `at.row..at.row + R` by one panel: each input's 16 weights widened once and
/// multiplied into every row's two accumulators.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn tile<const R: usize>(
    x: &[f32],
    inp: usize,
    panel: &[half::f16],
    dst: &mut [f32],
    at: Tile,
) {
    use std::arch::x86_64::{
        __m128i, __m256, _mm256_cvtph_ps, _mm256_fmadd_ps, _mm256_set1_ps, _mm256_setzero_ps,
        _mm256_storeu_ps, _mm_loadu_si128, _mm_prefetch, _MM_HINT_T1,
    };
    let mut acc: [[__m256; 2]; R] = [[_mm256_setzero_ps(); 2]; R];
    let w = panel.as_ptr().cast::<__m128i>();
    let xs = x[at.row * inp..][..R * inp].as_ptr();
    for k in 0..inp {
        // SAFETY: the panel holds inp × 16 halves, two 16-byte loads for each k; x's slice
        // holds R rows of inp.
        unsafe {
            let lo = _mm256_cvtph_ps(_mm_loadu_si128(w.add(2 * k)));
            let hi = _mm256_cvtph_ps(_mm_loadu_si128(w.add(2 * k + 1)));
            _mm_prefetch::<_MM_HINT_T1>(at.ahead.wrapping_add(PANEL * k).cast());
            for (r, acc) in acc.iter_mut().enumerate() {
                let v = _mm256_set1_ps(*xs.add(r * inp + k));
                acc[0] = _mm256_fmadd_ps(v, lo, acc[0]);
                acc[1] = _mm256_fmadd_ps(v, hi, acc[1]);
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        let out = &mut dst[(at.row + r) * at.dst_row + at.first..][..PANEL];
        // SAFETY: out holds 16 f32, two stores of eight.
        unsafe {
            _mm256_storeu_ps(out.as_mut_ptr(), acc[0]);
            _mm256_storeu_ps(out.as_mut_ptr().add(8), acc[1]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row count a tile can end with (1 to 6, and more than one tile), against the
    /// plain sum in f64; where the CPU lacks the kernel's features it must decline.
    #[test]
    fn the_fused_product_is_the_plain_product_for_every_tile_shape() {
        let (inp, cols, dst_row) = (37, 3 * PANEL, 3 * PANEL + 5);
        let value = |i: usize| ((i * 7919 % 1009) as f32 - 504.0) / 1009.0;
        let panels: Vec<half::f16> = (0..inp * cols)
            .map(|i| half::f16::from_f32(value(i)))
            .collect();
        let weight = |k: usize, c: usize| panels[c / PANEL * PANEL * inp + k * PANEL + c % PANEL];
        for rows in 1..=13 {
            let x: Vec<f32> = (0..rows * inp).map(|i| value(i + 11)).collect();
            let mut dst = vec![f32::NAN; rows * dst_row];
            if !product(&x, inp, &panels, cols, &mut dst, dst_row) {
                #[cfg(target_arch = "x86_64")]
                assert!(
                    !has_avx2_fma_f16c(),
                    "declined on a CPU that has the kernel"
                );
                eprintln!("skipped: no AVX2, FMA and F16C here");
                return;
            }
            for r in 0..rows {
                for c in 0..dst_row {
                    let got = dst[r * dst_row + c];
                    if c >= cols {
                        assert!(got.is_nan(), "wrote past the panels: row {r} column {c}");
                        continue;
                    }
                    let want: f64 = (0..inp)
                        .map(|k| f64::from(x[r * inp + k]) * f64::from(weight(k, c).to_f32()))
                        .sum();
                    assert!(
                        (f64::from(got) - want).abs() < 1e-4,
                        "{rows} rows, row {r} column {c}: {got} vs {want}"
                    );
                }
            }
        }
        // Columns that are not whole panels are declined, dst untouched.
        let mut dst = vec![1.0; 8];
        assert!(!product(&[0.5; 2], 2, &panels[..2 * 8], 8, &mut dst, 8));
        assert_eq!(dst, vec![1.0; 8]);
    }
}
