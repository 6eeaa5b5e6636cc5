//! The encoder's linear layers: weights kept in 16 bits, in panels of 16 columns, and the
//! product shared between threads. A query's few rows are multiplied straight from the 16-bit
//! panels (widened in registers); a batch's widens a band of columns to f32 at a time for gemm.

use half::slice::HalfFloatSliceExt;
use rayon::prelude::*;

use super::fused::{self, PANEL};
use crate::linalg::matmul;

/// `y = x·Wᵀ + b`. PyTorch saves W `[out, in]`; it is kept transposed, `[in, out]`,
/// because gemm packs a right-hand side read across its rows on every call: for one query's
/// dozen tokens that packing was most of the work (24 products 6.8 → 2.1 ms, and no slower
/// for a batch of 640 tokens). And it is kept in 16 bits, 21 MB for the six layers rather
/// than 42: in 8 bits, as the word embeddings are, the output moved by up to 1.5e-3 a
/// component from the published vector (cosine 0.9994 at worst against the f32 path); in 16
/// it stays where it was.
pub(super) struct Linear {
    /// Wᵀ in panels of [`PANEL`] columns one after another, each `[in, PANEL]` row-major (the
    /// last may be narrower), so a product reads a panel, and a band of them, sequentially.
    /// Row-major across all columns, a band's rows lay 3 KB apart, and reading them so took
    /// 3.4 ms of a 6.5 ms query: the prefetcher does not follow that stride.
    w: Vec<half::f16>,
    b: Vec<f32>,
    inp: usize,
    out: usize,
    /// Columns of a band: what a batch's product widens at a time (and a query's threads
    /// share out where gemm multiplies it). A whole number of panels.
    width: usize,
}

/// Weights a product turns back into f32 at a time (512 KB at most): a band of columns this
/// big, so for a batch's rows the band is read from cache, and the bytes are all that comes
/// from memory.
const BAND: usize = 1 << 17;

/// Columns a band holds a multiple of: gemm's AVX-512 tile spans 64 (four registers of 16);
/// a band of 336 left 16 to its narrower edge kernels, 6 % of a batch's time.
const BAND_COLUMNS: usize = 64;

/// Rows a product needs before its rows are split between threads (each then widens every
/// band for its own rows); fewer rows split the columns instead, and are multiplied from the
/// 16-bit panels where the CPU allows.
const ROWS_TO_SPLIT: usize = 64;

thread_local! {
    /// The band of columns being multiplied, kept between products.
    static BAND_F32: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Linear {
    /// The layer `y = x·Wᵀ + b` from Wᵀ (`[inp, out]` row-major, f32) and b.
    pub(super) fn new(wt: &[f32], b: Vec<f32>, inp: usize) -> Self {
        let out = b.len();
        let width = (BAND / inp / BAND_COLUMNS * BAND_COLUMNS)
            .max(BAND_COLUMNS)
            .min(out);
        let mut w = Vec::with_capacity(wt.len());
        for start in (0..out).step_by(PANEL) {
            let cols = PANEL.min(out - start);
            for row in wt.chunks_exact(out) {
                w.extend(
                    row[start..][..cols]
                        .iter()
                        .copied()
                        .map(half::f16::from_f32),
                );
            }
        }
        Self {
            w,
            b,
            inp,
            out,
            width,
        }
    }

    /// `y = x·Wᵀ + b` for `rows` rows of x, on up to `threads` threads: a batch's rows are
    /// shared out, a query's few rows have its columns shared out. `y` is resized to the rows
    /// and wholly overwritten.
    pub(super) fn forward(&self, x: &[f32], rows: usize, threads: usize, y: &mut Vec<f32>) {
        let (inp, out) = (self.inp, self.out);
        y.resize(rows * out, 0.0);
        let columns_share = self.query_share(rows, threads);
        if threads > 1 && rows >= ROWS_TO_SPLIT {
            let share = rows.div_ceil(threads);
            y.par_chunks_mut(share * out)
                .zip(x.par_chunks(share * inp))
                .for_each(|(y, x)| {
                    self.every_band(x, y);
                    self.add_bias(y);
                });
        } else if threads > 1 && out > columns_share {
            let share = columns_share;
            let cols = |start: usize| share.min(out - start);
            let parts: Vec<(usize, Vec<f32>)> = (0..out.div_ceil(share))
                .into_par_iter()
                .map(|part| {
                    let start = part * share;
                    let mut product = vec![0.0; rows * cols(start)];
                    self.columns_product(start, cols(start), x, &mut product, cols(start));
                    (start, product)
                })
                .collect();
            for (start, part) in parts {
                let cols = cols(start);
                for (row, part) in y.chunks_exact_mut(out).zip(part.chunks_exact(cols)) {
                    row[start..][..cols].copy_from_slice(part);
                }
            }
            self.add_bias(y);
        } else {
            self.every_band(x, y);
            self.add_bias(y);
        }
    }

    /// `y += b` on each row, on this thread (in a batch, each thread on its own rows while
    /// they are in its cache).
    fn add_bias(&self, y: &mut [f32]) {
        for row in y.chunks_exact_mut(self.out) {
            row.iter_mut().zip(&self.b).for_each(|(v, b)| *v += b);
        }
    }

    /// Columns each thread takes of a product of a few rows: an equal share of whole panels
    /// where they are multiplied from the 16-bit panels (the bands' 320 columns left one
    /// thread 320 of a 384-column layer's and the other 64; as a whole a query's layers
    /// waited on the busier thread for 58 % of their work rather than half), else a band.
    fn query_share(&self, rows: usize, threads: usize) -> usize {
        if from_panels(rows) && fused::available() {
            self.out.div_ceil(threads).next_multiple_of(PANEL)
        } else {
            self.width
        }
    }

    /// `y = x · Wᵀ`, band after band on this thread (y's rows `out` apart).
    fn every_band(&self, x: &[f32], y: &mut [f32]) {
        for start in (0..self.out).step_by(self.width) {
            let cols = self.width.min(self.out - start);
            self.columns_product(start, cols, x, &mut y[start..], self.out);
        }
    }

    /// `dst = x ·` the `cols` columns of W from column `start`, dst's rows `dst_row` apart,
    /// on this thread. `start` is a whole number of panels, and so is `cols` unless it ends W.
    fn columns_product(
        &self,
        start: usize,
        cols: usize,
        x: &[f32],
        dst: &mut [f32],
        dst_row: usize,
    ) {
        let inp = self.inp;
        let rows = x.len() / inp;
        // The columns' panels, one after another (all before the last are whole).
        let panels = &self.w[start * inp..][..inp * cols];
        if from_panels(rows) && fused::product(x, inp, panels, cols, dst, dst_row) {
            return;
        }
        BAND_F32.with_borrow_mut(|band| {
            band.resize(inp * cols, 0.0);
            widen_panels(panels, cols, band);
            matmul(
                rows,
                cols,
                inp,
                dst,
                (dst_row as isize, 1),
                x,
                (inp as isize, 1),
                band,
                (cols as isize, 1),
                1.0,
                1,
            );
        });
    }
}

/// Whether a product of `rows` rows is multiplied straight from the 16-bit panels (by
/// [`fused::product`], where the CPU has it) rather than from a band widened for gemm.
fn from_panels(rows: usize) -> bool {
    rows < ROWS_TO_SPLIT && !gemm_is_wider()
}

/// Whether gemm has AVX-512 kernels here, twice the fused kernel's width: a query's
/// products then stay with gemm (one query 6.9 ms, measured on such a CPU before the fused
/// kernel; on an AVX2-only EPYC the fused kernel took its products from 88 to 52 µs a band).
fn gemm_is_wider() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static WIDER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *WIDER.get_or_init(|| std::arch::is_x86_feature_detected!("avx512f"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// `band` (`[in, cols]` row-major) = `panels` (its columns in panels of [`PANEL`], each
/// `[in, PANEL]` row-major, the last maybe narrower) in f32: eight at a time with F16C where
/// the CPU has it. (half's slice conversion calls a function for every eight, which cost one
/// query ~1 ms.)
fn widen_panels(panels: &[half::f16], cols: usize, band: &mut [f32]) {
    assert_eq!(panels.len(), band.len());
    #[cfg(target_arch = "x86_64")]
    if cols.is_multiple_of(PANEL)
        && std::arch::is_x86_feature_detected!("f16c")
        && std::arch::is_x86_feature_detected!("avx")
    {
        // SAFETY: the CPU has F16C and AVX, checked just above.
        return unsafe { widen_panels_f16c(panels, cols, band) };
    }
    let inp = band.len() / cols.max(1);
    for (panel, first) in panels.chunks(inp * PANEL).zip((0..cols).step_by(PANEL)) {
        let panel_cols = PANEL.min(cols - first);
        for (k, halves) in panel.chunks_exact(panel_cols).enumerate() {
            halves.convert_to_f32_slice(&mut band[k * cols + first..][..panel_cols]);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "f16c,avx")]
unsafe fn widen_panels_f16c(panels: &[half::f16], cols: usize, band: &mut [f32]) {
    use std::arch::x86_64::{__m128i, _mm256_cvtph_ps, _mm256_storeu_ps, _mm_loadu_si128};
    let inp = band.len() / cols;
    for (panel, first) in panels
        .chunks_exact(inp * PANEL)
        .zip((0..cols).step_by(PANEL))
    {
        for (k, halves) in panel.chunks_exact(PANEL).enumerate() {
            let row = &mut band[k * cols + first..][..PANEL];
            // SAFETY: 16 halves (two loads of 16 bytes) to read and 16 f32 to write, as
            // the slices just taken hold; both intrinsics take unaligned pointers.
            unsafe {
                let at = halves.as_ptr().cast::<__m128i>();
                _mm256_storeu_ps(row.as_mut_ptr(), _mm256_cvtph_ps(_mm_loadu_si128(at)));
                _mm256_storeu_ps(
                    row.as_mut_ptr().add(8),
                    _mm256_cvtph_ps(_mm_loadu_si128(at.add(1))),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_half_widens_as_half_widens_it_into_its_place() {
        let halves: Vec<half::f16> = (0..=u16::MAX).map(half::f16::from_bits).collect();
        // Whole panels (with F16C where the CPU has it), and a narrower last panel (the
        // portable way).
        for cols in [PANEL, 3 * PANEL, PANEL + 8] {
            let inp = halves.len() / cols;
            let panels = &halves[..inp * cols];
            let mut band = vec![0.0f32; inp * cols];
            widen_panels(panels, cols, &mut band);
            for k in 0..inp {
                for c in 0..cols {
                    let first = c / PANEL * PANEL;
                    let panel_cols = PANEL.min(cols - first);
                    let h = panels[first * inp + k * panel_cols + c - first];
                    let w = band[k * cols + c];
                    assert!(
                        h.to_f32().to_bits() == w.to_bits() || (h.is_nan() && w.is_nan()),
                        "{cols} columns, row {k} column {c}: {h:?} became {w}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_layer_in_bands_is_the_plain_product_however_the_threads_share_it() {
        // 3,000 inputs make bands of 64 columns, so 150 outputs are three bands, one partial.
        let (inp, out) = (3000, 150);
        let value = |i: usize| ((i * 7919 % 1009) as f32 - 504.0) / 1009.0;
        let wt: Vec<f32> = (0..inp * out).map(value).collect();
        let b: Vec<f32> = (0..out).map(|j| j as f32 / 10.0).collect();
        let layer = Linear::new(&wt, b.clone(), inp);
        assert_eq!(layer.width, 64);
        // One thread; a query's rows with the bands shared; a batch's rows shared (odd, so
        // the shares differ).
        for (rows, threads) in [(3, 1), (3, 2), (ROWS_TO_SPLIT + 7, 2)] {
            let x: Vec<f32> = (0..rows * inp).map(|i| value(i + 13)).collect();
            // Filled with garbage first: every element must be overwritten.
            let mut y = vec![f32::NAN; rows * out + 5];
            layer.forward(&x, rows, threads, &mut y);
            assert_eq!(y.len(), rows * out);
            for r in 0..rows {
                for j in 0..out {
                    let want: f32 = b[j]
                        + (0..inp)
                            .map(|k| x[r * inp + k] * half::f16::from_f32(wt[k * out + j]).to_f32())
                            .sum::<f32>();
                    let got = y[r * out + j];
                    assert!(
                        (got - want).abs() < 1e-3,
                        "{rows} rows on {threads} threads, row {r} column {j}: {got} vs {want}"
                    );
                }
            }
        }
    }
}
