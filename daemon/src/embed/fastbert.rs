//! A lean BERT forward pass for MiniLM: the same weights and arithmetic as the candle model,
//! but sequences are packed without padding (every linear layer is one matrix product over
//! all tokens of a batch) and attention runs per sequence, so there is no masked work and no
//! per-op tensor bookkeeping. Checked against the candle path (cosine ≥ 0.999) in tests.

use std::collections::HashMap;
use std::path::Path;

use crate::linalg::matmul;
use candle_core::{Device, Tensor};
use half::slice::HalfFloatSliceExt;

use super::EmbedError;

struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

/// `y = x·Wᵀ + b`. PyTorch saves W `[out, in]`; it is kept transposed, `[in, out]` row-major,
/// because gemm packs a right-hand side read across its rows on every call: for one query's
/// dozen tokens that packing was most of the work (24 products 6.8 → 2.1 ms, and no slower
/// for a batch of 640 tokens). And it is kept in 16 bits, 21 MB for the six layers rather
/// than 42: in 8 bits, as the word embeddings are, the output moved by up to 1.5e-3 a
/// component from the published vector (cosine 0.9994 at worst against the f32 path); in 16
/// it stays where it was.
struct Linear {
    /// Wᵀ, `[in, out]` row-major.
    w: Vec<half::f16>,
    b: Vec<f32>,
    inp: usize,
    out: usize,
}

/// Weights a product turns back into f32 at a time (512 KB): a band of columns at most this
/// big, so for one query's few rows the band is read from cache, and the bytes are all that
/// comes from memory.
const BAND: usize = 1 << 17;

thread_local! {
    /// The band of columns being multiplied, kept between products.
    static BAND_F32: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

struct Layer {
    qkv: Linear,
    attn_out: Linear,
    ln1: Norm,
    ff1: Linear,
    ff2: Linear,
    ln2: Norm,
}

pub struct FastBert {
    hidden: usize,
    heads: usize,
    eps: f32,
    /// In 8 bits a value, over a scale each [`BLOCK`]: 30,522 × 384 of them are half the
    /// model's weights (47 MB in f32, 23 in f16, 13 here), only looked up, never multiplied.
    /// The output stays within 0.999 cosine of the f32 path (tested: 0.99997 at worst).
    word: Vec<i8>,
    word_scale: Vec<f32>,
    pos: Vec<f32>,
    max_pos: usize,
    token_type: Vec<f32>,
    emb_ln: Norm,
    layers: Vec<Layer>,
    threads: usize,
}

impl Linear {
    /// The layer `y = x·Wᵀ + b` from Wᵀ (`[inp, out]` row-major, f32) and b.
    fn new(wt: &[f32], b: Vec<f32>, inp: usize) -> Self {
        Self {
            w: wt.iter().copied().map(half::f16::from_f32).collect(),
            out: b.len(),
            b,
            inp,
        }
    }

    fn forward(&self, x: &[f32], rows: usize, threads: usize) -> Vec<f32> {
        let (inp, out) = (self.inp, self.out);
        let mut y = vec![0.0; rows * out];
        // Columns a band: a multiple of 16, one AVX-512 register of f32.
        let width = (BAND / inp / 16 * 16).max(16).min(out);
        BAND_F32.with_borrow_mut(|band| {
            for start in (0..out).step_by(width) {
                let cols = width.min(out - start);
                band.resize(inp * cols, 0.0);
                for (r, row) in band.chunks_exact_mut(cols).enumerate() {
                    widen(&self.w[r * out + start..][..cols], row);
                }
                matmul(
                    rows,
                    cols,
                    inp,
                    &mut y[start..],
                    (out as isize, 1),
                    x,
                    (inp as isize, 1),
                    band,
                    (cols as isize, 1),
                    1.0,
                    threads,
                );
            }
        });
        for row in y.chunks_exact_mut(out) {
            row.iter_mut().zip(&self.b).for_each(|(v, b)| *v += b);
        }
        y
    }
}

impl Norm {
    fn apply(&self, x: &mut [f32], eps: f32) {
        let n = self.gamma.len();
        for row in x.chunks_exact_mut(n) {
            let mean = row.iter().sum::<f32>() / n as f32;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n as f32;
            let inv = 1.0 / (var + eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(&self.gamma).zip(&self.beta) {
                *v = (*v - mean) * inv * g + b;
            }
        }
    }
}

/// `dst` = `src` in f32: eight at a time with F16C where the CPU has it. (half's slice
/// conversion calls a function for every eight, which cost one query ~1 ms.)
fn widen(src: &[half::f16], dst: &mut [f32]) {
    assert_eq!(src.len(), dst.len());
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("f16c") && std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has F16C and AVX, checked just above.
        return unsafe { widen_f16c(src, dst) };
    }
    src.convert_to_f32_slice(dst);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "f16c,avx")]
unsafe fn widen_f16c(src: &[half::f16], dst: &mut [f32]) {
    use std::arch::x86_64::{__m128i, _mm256_cvtph_ps, _mm256_storeu_ps, _mm_loadu_si128};
    let whole = src.len() / 8 * 8;
    for (s, d) in src[..whole]
        .chunks_exact(8)
        .zip(dst[..whole].chunks_exact_mut(8))
    {
        // SAFETY: each chunk is 8 f16 (16 bytes) to read and 8 f32 to write; both
        // intrinsics take unaligned pointers.
        unsafe {
            let halves = _mm_loadu_si128(s.as_ptr().cast::<__m128i>());
            _mm256_storeu_ps(d.as_mut_ptr(), _mm256_cvtph_ps(halves));
        }
    }
    src[whole..].convert_to_f32_slice(&mut dst[whole..]);
}

/// The `[cols, rows]` transpose of a `[rows, cols]` row-major matrix.
fn transposed(m: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut t = vec![0.0; m.len()];
    for (r, row) in m.chunks_exact(cols).enumerate() {
        for (c, &v) in row.iter().enumerate() {
            t[c * rows + r] = v;
        }
    }
    t
}

/// Row-major matrices of `rows` rows each, joined column-wise: `[A | B | C]`.
fn side_by_side(parts: &[&[f32]], rows: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len()).sum());
    for r in 0..rows {
        for p in parts {
            let cols = p.len() / rows;
            out.extend_from_slice(&p[r * cols..][..cols]);
        }
    }
    out
}

/// Values a scale of the word embeddings covers: 32, as GGML's Q8_0 has it. A scale a row
/// (384) let a row's largest value set every value's step and moved single components of the
/// output by up to 6e-4; 32 keeps each within 5e-4 of the published vector (tested).
const BLOCK: usize = 32;

/// `m` (rows of `cols`) as one signed byte a value, each [`BLOCK`] of a row over its own
/// scale (their largest magnitude / 127), and those scales: `cols.div_ceil(BLOCK)` a row, so
/// no block spans two rows whatever the width.
fn in_bytes(m: &[f32], cols: usize) -> (Vec<i8>, Vec<f32>) {
    let mut bytes = Vec::with_capacity(m.len());
    let scales = m
        .chunks(cols)
        .flat_map(|row| row.chunks(BLOCK))
        .map(|block| {
            let scale = block.iter().fold(0.0f32, |a, v| a.max(v.abs())) / 127.0;
            let inverse = if scale > 0.0 { 1.0 / scale } else { 0.0 };
            bytes.extend(block.iter().map(|v| (v * inverse).round() as i8));
            scale
        })
        .collect();
    (bytes, scales)
}

/// GELU in place, `0.5·x·(1 + erf(x/√2))`, over a whole slice so the loop vectorises.
fn gelu(xs: &mut [f32]) {
    for x in xs {
        *x = 0.5 * *x * (1.0 + erf(*x * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// erf as a rational function on [-4, 4] (beyond it erf is ±1 in f32): the approximation
/// Eigen and XLA use, within a few ulps of the exact value and free of branches, so it
/// vectorises where libm's `erff` (an eighth of the embedder's time) does not.
#[allow(clippy::excessive_precision)]
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.72614225801306e-10f32;
    for a in [
        2.77068142495902e-08,
        -2.10102402082508e-06,
        -5.69250639462346e-05,
        -7.34990630326855e-04,
        -2.95459980854025e-03,
        -1.60960333262415e-02,
    ] {
        p = p * x2 + a;
    }
    let mut q = -1.45660718464996e-05f32;
    for b in [
        -2.13374055278905e-04,
        -1.68282697438203e-03,
        -7.37332916720468e-03,
        -1.42647390514189e-02,
    ] {
        q = q * x2 + b;
    }
    x * p / q
}

impl FastBert {
    pub fn load(
        path: &Path,
        hidden: usize,
        heads: usize,
        layers: usize,
        eps: f32,
    ) -> Result<Self, EmbedError> {
        let load = |e: candle_core::Error| EmbedError::Load(format!("model.safetensors: {e}"));
        let tensors: HashMap<String, Tensor> =
            candle_core::safetensors::load(path, &Device::Cpu).map_err(load)?;
        let get = |name: &str| -> Result<Vec<f32>, EmbedError> {
            let t = tensors
                .get(name)
                .or_else(|| tensors.get(&format!("bert.{name}")))
                .ok_or_else(|| {
                    EmbedError::Load(format!("model.safetensors has no tensor {name}"))
                })?;
            t.flatten_all()
                .and_then(|t| t.to_vec1::<f32>())
                .map_err(load)
        };
        let norm = |p: &str| -> Result<Norm, EmbedError> {
            Ok(Norm {
                gamma: get(&format!("{p}.weight"))?,
                beta: get(&format!("{p}.bias"))?,
            })
        };
        let linear = |p: &str, inp: usize| -> Result<(Vec<f32>, Vec<f32>), EmbedError> {
            let w = get(&format!("{p}.weight"))?;
            Ok((
                transposed(&w, w.len() / inp, inp),
                get(&format!("{p}.bias"))?,
            ))
        };
        let mut stack = Vec::with_capacity(layers);
        for i in 0..layers {
            let p = format!("encoder.layer.{i}");
            let ((qw, qb), (kw, kb), (vw, vb)) = (
                linear(&format!("{p}.attention.self.query"), hidden)?,
                linear(&format!("{p}.attention.self.key"), hidden)?,
                linear(&format!("{p}.attention.self.value"), hidden)?,
            );
            // Q, K and V in one product: their weights side by side.
            let qkv = Linear::new(
                &side_by_side(&[&qw, &kw, &vw], hidden),
                [qb, kb, vb].concat(),
                hidden,
            );
            let (ff1w, ff1b) = linear(&format!("{p}.intermediate.dense"), hidden)?;
            let inter = ff1b.len();
            let (ow, ob) = linear(&format!("{p}.attention.output.dense"), hidden)?;
            let (ff2w, ff2b) = linear(&format!("{p}.output.dense"), inter)?;
            stack.push(Layer {
                qkv,
                attn_out: Linear::new(&ow, ob, hidden),
                ln1: norm(&format!("{p}.attention.output.LayerNorm"))?,
                ff1: Linear::new(&ff1w, ff1b, hidden),
                ff2: Linear::new(&ff2w, ff2b, inter),
                ln2: norm(&format!("{p}.output.LayerNorm"))?,
            });
        }
        let pos = get("embeddings.position_embeddings.weight")?;
        let (word, word_scale) = in_bytes(&get("embeddings.word_embeddings.weight")?, hidden);
        Ok(Self {
            hidden,
            heads,
            eps,
            word,
            word_scale,
            max_pos: pos.len() / hidden,
            pos,
            token_type: get("embeddings.token_type_embeddings.weight")?,
            emb_ln: norm("embeddings.LayerNorm")?,
            layers: stack,
            threads: crate::linalg::threads(),
        })
    }

    /// Mean-pooled, L2-normalised embeddings of token sequences (each non-empty, within the
    /// model's positions).
    pub fn embed(&self, sequences: &[Vec<u32>]) -> Vec<Vec<f32>> {
        let h = self.hidden;
        let total: usize = sequences.iter().map(Vec::len).sum();
        let vocab = self.word.len() / h;
        let mut x = Vec::with_capacity(total * h);
        for seq in sequences {
            for (t, &id) in seq.iter().enumerate() {
                let (id, t) = ((id as usize).min(vocab - 1), t.min(self.max_pos - 1));
                let (w, scale, p, ty) = (
                    &self.word[id * h..][..h],
                    &self.word_scale[id * h.div_ceil(BLOCK)..][..h.div_ceil(BLOCK)],
                    &self.pos[t * h..][..h],
                    &self.token_type[..h],
                );
                x.extend((0..h).map(|i| f32::from(w[i]) * scale[i / BLOCK] + p[i] + ty[i]));
            }
        }
        self.emb_ln.apply(&mut x, self.eps);
        for layer in &self.layers {
            let qkv = layer.qkv.forward(&x, total, self.threads);
            let ctx = self.attention(&qkv, sequences);
            let mut attn = layer.attn_out.forward(&ctx, total, self.threads);
            attn.iter_mut().zip(&x).for_each(|(a, r)| *a += r);
            layer.ln1.apply(&mut attn, self.eps);
            let mut inner = layer.ff1.forward(&attn, total, self.threads);
            gelu(&mut inner);
            let mut out = layer.ff2.forward(&inner, total, self.threads);
            out.iter_mut().zip(&attn).for_each(|(o, r)| *o += r);
            layer.ln2.apply(&mut out, self.eps);
            x = out;
        }
        let mut start = 0;
        sequences
            .iter()
            .map(|seq| {
                let rows = &x[start * h..(start + seq.len()) * h];
                start += seq.len();
                let mut mean = vec![0.0f32; h];
                for row in rows.chunks_exact(h) {
                    mean.iter_mut().zip(row).for_each(|(m, v)| *m += v);
                }
                mean.iter_mut().for_each(|m| *m /= seq.len() as f32);
                super::l2_normalize(&mut mean);
                mean
            })
            .collect()
    }

    /// Self-attention of each sequence on its own: softmax(Q·Kᵀ/√d)·V per head.
    fn attention(&self, qkv: &[f32], sequences: &[Vec<u32>]) -> Vec<f32> {
        let h = self.hidden;
        let d = h / self.heads;
        let stride = 3 * h as isize;
        let scale = 1.0 / (d as f32).sqrt();
        let total: usize = sequences.iter().map(Vec::len).sum();
        let mut ctx = vec![0.0f32; total * h];
        let mut scores = Vec::new();
        let mut start = 0;
        for seq in sequences {
            let t = seq.len();
            scores.resize(t * t, 0.0);
            for head in 0..self.heads {
                let q = &qkv[start * 3 * h + head * d..];
                let k = &qkv[start * 3 * h + h + head * d..];
                let v = &qkv[start * 3 * h + 2 * h + head * d..];
                matmul(
                    t,
                    t,
                    d,
                    &mut scores,
                    (t as isize, 1),
                    q,
                    (stride, 1),
                    k,
                    (1, stride),
                    scale,
                    1,
                );
                for row in scores.chunks_exact_mut(t) {
                    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let mut sum = 0.0;
                    row.iter_mut().for_each(|s| {
                        *s = (*s - max).exp();
                        sum += *s;
                    });
                    row.iter_mut().for_each(|s| *s /= sum);
                }
                let out = &mut ctx[start * h + head * d..];
                matmul(
                    t,
                    d,
                    t,
                    out,
                    (h as isize, 1),
                    &scores,
                    (t as isize, 1),
                    v,
                    (stride, 1),
                    1.0,
                    1,
                );
            }
            start += t;
        }
        ctx
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes_keep_each_value_within_half_its_blocks_step() {
        let mut m = vec![0.0f32; 3 * super::BLOCK];
        m[0] = 0.5;
        m[1] = -0.25;
        m[2] = 0.001;
        m[2 * super::BLOCK] = -8.0;
        m[2 * super::BLOCK + 1] = 3.0;
        let (bytes, scales) = super::in_bytes(&m, m.len());
        assert_eq!(scales.len(), 3);
        assert_eq!(bytes[..3], [127, -64, 0]);
        assert!(
            scales[1] == 0.0
                && bytes[super::BLOCK..2 * super::BLOCK]
                    .iter()
                    .all(|&b| b == 0)
        );
        assert_eq!(
            bytes[2 * super::BLOCK],
            -127,
            "each block over its own largest value"
        );
        for (i, (v, q)) in m.iter().zip(&bytes).enumerate() {
            let scale = scales[i / super::BLOCK];
            assert!(
                (f32::from(*q) * scale - v).abs() <= scale / 2.0 + 1e-7,
                "{i}: {v}"
            );
        }
    }

    #[test]
    fn weights_are_transposed_and_joined_column_wise() {
        // [[1, 2, 3], [4, 5, 6]]ᵀ
        assert_eq!(
            super::transposed(&[1., 2., 3., 4., 5., 6.], 2, 3),
            [1., 4., 2., 5., 3., 6.]
        );
        assert_eq!(
            super::side_by_side(&[&[1., 2.], &[3., 4., 5., 6.]], 2),
            [1., 3., 4., 2., 5., 6.]
        );
    }

    #[test]
    fn every_half_widens_as_half_widens_it() {
        let halves: Vec<half::f16> = (0..=u16::MAX).map(half::f16::from_bits).collect();
        let mut wide = vec![0.0f32; halves.len() - 3];
        // An odd length, so the last few go the slow way.
        super::widen(&halves[3..], &mut wide);
        for (h, w) in halves[3..].iter().zip(&wide) {
            assert!(
                h.to_f32().to_bits() == w.to_bits() || (h.is_nan() && w.is_nan()),
                "{h:?}"
            );
        }
    }

    #[test]
    fn a_layer_in_bands_is_the_plain_product() {
        // 3,000 inputs make bands of 32 columns, so 50 outputs are two bands, one partial.
        let (inp, out, rows) = (3000, 50, 3);
        let value = |i: usize| ((i * 7919 % 1009) as f32 - 504.0) / 1009.0;
        let wt: Vec<f32> = (0..inp * out).map(value).collect();
        let b: Vec<f32> = (0..out).map(|j| j as f32 / 10.0).collect();
        let x: Vec<f32> = (0..rows * inp).map(|i| value(i + 13)).collect();
        let layer = super::Linear::new(&wt, b.clone(), inp);
        let y = layer.forward(&x, rows, 1);
        for r in 0..rows {
            for j in 0..out {
                let want: f32 = b[j]
                    + (0..inp)
                        .map(|k| x[r * inp + k] * half::f16::from_f32(wt[k * out + j]).to_f32())
                        .sum::<f32>();
                let got = y[r * out + j];
                assert!(
                    (got - want).abs() < 1e-3,
                    "row {r} column {j}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn erf_matches_libm_everywhere() {
        let worst = (-60_000..=60_000)
            .map(|i| i as f32 / 10_000.0)
            .map(|x| (super::erf(x) - libm::erff(x)).abs())
            .fold(0.0f32, f32::max);
        assert!(worst < 1e-6, "worst error {worst}");
    }
}
