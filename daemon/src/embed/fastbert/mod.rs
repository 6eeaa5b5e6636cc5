//! A lean BERT forward pass for MiniLM: the same weights and arithmetic as the candle model,
//! but sequences are packed without padding (every linear layer is one matrix product over
//! all tokens of a batch) and attention runs per sequence, so there is no masked work and no
//! per-op tensor bookkeeping. Checked against the candle path (cosine ≥ 0.999) in tests.

use std::collections::HashMap;
use std::path::Path;

mod activations;
mod fused;
mod linear;

use crate::linalg::matmul;
use candle_core::{Device, Tensor};
use rayon::prelude::*;

use super::EmbedError;
use activations::{gelu, layer_norm, softmax_rows};
use linear::Linear;

struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

struct Layer {
    qkv: Linear,
    attn_out: Linear,
    ln1: Norm,
    ff1: Linear,
    ff2: Linear,
    ln2: Norm,
}

/// The activations of a forward pass, kept from one layer and batch to the next: fresh
/// vectors each layer were ~4 % of a batch's time in page faults and zeroing. Each is
/// resized to a batch's rows and wholly overwritten, so nothing is zeroed but growth. Freed
/// when the call ends, so an idle mnemod holds none of it.
#[derive(Default)]
struct Buffers {
    x: Vec<f32>,
    qkv: Vec<f32>,
    ctx: Vec<f32>,
    attn: Vec<f32>,
    inner: Vec<f32>,
    x_next: Vec<f32>,
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

impl Norm {
    /// `x += residual` where there is one, then each row layer-normalised.
    fn apply(&self, x: &mut [f32], residual: Option<&[f32]>, eps: f32) {
        layer_norm(x, residual, &self.gamma, &self.beta, eps)
    }
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

/// Rows below which an element-wise step is not worth handing to another thread.
const MIN_SHARE: usize = 16;

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
    /// model's positions), in batches of about `batch_tokens` tokens (a longer sequence is a
    /// batch of its own): each product stays large, and the memory a batch takes bounded.
    pub fn embed(&self, sequences: &[Vec<u32>], batch_tokens: usize) -> Vec<Vec<f32>> {
        // On a thread of rayon's pool, so the steps shared between threads below hand out
        // their parts from inside it rather than each waking the pool from outside.
        rayon::scope(|_| {
            let mut buffers = Buffers::default();
            let mut out = Vec::with_capacity(sequences.len());
            let mut start = 0;
            while start < sequences.len() {
                let mut end = start + 1;
                let mut tokens = sequences[start].len();
                while end < sequences.len() && tokens + sequences[end].len() <= batch_tokens {
                    tokens += sequences[end].len();
                    end += 1;
                }
                out.extend(self.forward(&sequences[start..end], &mut buffers));
                start = end;
            }
            out
        })
    }

    fn forward(&self, sequences: &[Vec<u32>], b: &mut Buffers) -> Vec<Vec<f32>> {
        let h = self.hidden;
        let total: usize = sequences.iter().map(Vec::len).sum();
        if total == 0 {
            return vec![vec![0.0; h]; sequences.len()];
        }
        let vocab = self.word.len() / h;
        b.x.clear();
        for seq in sequences {
            for (t, &id) in seq.iter().enumerate() {
                let (id, t) = ((id as usize).min(vocab - 1), t.min(self.max_pos - 1));
                let (w, scale, p, ty) = (
                    &self.word[id * h..][..h],
                    &self.word_scale[id * h.div_ceil(BLOCK)..][..h.div_ceil(BLOCK)],
                    &self.pos[t * h..][..h],
                    &self.token_type[..h],
                );
                b.x.extend((0..h).map(|i| f32::from(w[i]) * scale[i / BLOCK] + p[i] + ty[i]));
            }
        }
        self.emb_ln.apply(&mut b.x, None, self.eps);
        for layer in &self.layers {
            layer.qkv.forward(&b.x, total, self.threads, &mut b.qkv);
            self.attention(&b.qkv, sequences, &mut b.ctx);
            layer
                .attn_out
                .forward(&b.ctx, total, self.threads, &mut b.attn);
            self.add_and_norm(&mut b.attn, &b.x, &layer.ln1);
            layer
                .ff1
                .forward(&b.attn, total, self.threads, &mut b.inner);
            let share = self.share(total) * b.inner.len() / total;
            b.inner.par_chunks_mut(share).for_each(gelu);
            layer
                .ff2
                .forward(&b.inner, total, self.threads, &mut b.x_next);
            self.add_and_norm(&mut b.x_next, &b.attn, &layer.ln2);
            std::mem::swap(&mut b.x, &mut b.x_next);
        }
        let mut start = 0;
        sequences
            .iter()
            .map(|seq| {
                let rows = &b.x[start * h..(start + seq.len()) * h];
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

    /// Rows a thread takes of an element-wise step: its share, at least [`MIN_SHARE`].
    fn share(&self, rows: usize) -> usize {
        rows.div_ceil(self.threads).max(MIN_SHARE)
    }

    /// `x += residual`, then layer-normalised, the rows shared between threads.
    fn add_and_norm(&self, x: &mut [f32], residual: &[f32], norm: &Norm) {
        let share = self.share(x.len() / self.hidden) * self.hidden;
        x.par_chunks_mut(share)
            .zip(residual.par_chunks(share))
            .for_each(|(x, residual)| norm.apply(x, Some(residual), self.eps));
    }

    /// Self-attention of each sequence on its own: softmax(Q·Kᵀ/√d)·V per head, the
    /// sequences shared between threads.
    fn attention(&self, qkv: &[f32], sequences: &[Vec<u32>], ctx: &mut Vec<f32>) {
        let h = self.hidden;
        let total: usize = sequences.iter().map(Vec::len).sum();
        // Every element is written: each head its own columns of every row.
        ctx.resize(total * h, 0.0);
        // Each sequence's rows of ctx, and where its rows start in qkv.
        let mut parts = Vec::with_capacity(sequences.len());
        let (mut rest, mut start) = (&mut ctx[..], 0);
        for seq in sequences {
            let (rows, tail) = rest.split_at_mut(seq.len() * h);
            parts.push((rows, start));
            (rest, start) = (tail, start + seq.len());
        }
        parts
            .into_par_iter()
            .for_each_init(Vec::new, |scores, (ctx, start)| {
                self.attend(&qkv[start * 3 * h..], ctx, scores)
            });
    }

    /// One sequence's attention: `qkv` from its first row, `ctx` its rows.
    fn attend(&self, qkv: &[f32], ctx: &mut [f32], scores: &mut Vec<f32>) {
        let h = self.hidden;
        let d = h / self.heads;
        let t = ctx.len() / h;
        let stride = 3 * h as isize;
        let scale = 1.0 / (d as f32).sqrt();
        scores.resize(t * t, 0.0);
        for head in 0..self.heads {
            let q = &qkv[head * d..];
            let k = &qkv[h + head * d..];
            let v = &qkv[2 * h + head * d..];
            matmul(
                t,
                t,
                d,
                scores,
                (t as isize, 1),
                q,
                (stride, 1),
                k,
                (1, stride),
                scale,
                1,
            );
            softmax_rows(scores, t);
            matmul(
                t,
                d,
                t,
                &mut ctx[head * d..],
                (h as isize, 1),
                scores,
                (t as isize, 1),
                v,
                (stride, 1),
                1.0,
                1,
            );
        }
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
}
