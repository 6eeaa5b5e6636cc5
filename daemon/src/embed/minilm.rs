//! all-MiniLM-L6-v2 in-process: BERT, mean pooling and L2 normalisation, exactly as
//! sentence-transformers computes it, through the lean forward pass in `fastbert.rs`. The
//! straightforward candle model it is checked against is loaded by the tests only: holding
//! it beside the fast path would keep a second copy of the weights (~90 MB) resident.

use std::path::Path;

use candle_transformers::models::bert::Config as BertConfig;
use tokenizers::Tokenizer;

use super::fastbert::FastBert;
use super::{EmbedError, Embedder};

pub const MODEL_FILES: [&str; 3] = ["model.safetensors", "config.json", "tokenizer.json"];

pub struct MiniLmEmbedder {
    fast: FastBert,
    tokenizer: Tokenizer,
    dim: usize,
    batch_size: usize,
}

impl MiniLmEmbedder {
    pub fn load(dir: &Path, max_tokens: usize, batch_size: usize) -> Result<Self, EmbedError> {
        let missing: Vec<_> = MODEL_FILES
            .iter()
            .filter(|f| !dir.join(f).is_file())
            .copied()
            .collect();
        if !missing.is_empty() {
            return Err(EmbedError::ModelMissing {
                dir: dir.display().to_string(),
                missing: missing.join(", "),
            });
        }
        let load = |what: &str, e: &dyn std::fmt::Display| EmbedError::Load(format!("{what}: {e}"));
        let config_text = std::fs::read_to_string(dir.join("config.json"))
            .map_err(|e| load("config.json", &e))?;
        let config: BertConfig =
            serde_json::from_str(&config_text).map_err(|e| load("config.json", &e))?;
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| load("tokenizer.json", &e))?;
        // Sequences are packed without padding; truncation at the model's trained length.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams {
                max_length: max_tokens,
                ..Default::default()
            }))
            .map_err(|e| load("tokenizer.json", &e))?;
        let fast = FastBert::load(
            &dir.join("model.safetensors"),
            config.hidden_size,
            config.num_attention_heads,
            config.num_hidden_layers,
            config.layer_norm_eps as f32,
        )?;
        Ok(Self {
            fast,
            tokenizer,
            dim: config.hidden_size,
            batch_size,
        })
    }
}

impl Embedder for MiniLmEmbedder {
    fn model_id(&self) -> &str {
        "minilm:all-MiniLM-L6-v2"
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EmbedError::Compute(e.to_string()))?;
        let sequences: Vec<Vec<u32>> = encodings.iter().map(|e| e.get_ids().to_vec()).collect();
        // Batches of `batch_size` × 64 tokens: about twice `batch_size` chat turns (~36 tokens
        // each), so each product is large and the memory a batch takes bounded.
        Ok(self.fast.embed(&sequences, self.batch_size * 64))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::embed::cosine;
    use candle_core::{DType, Device, Tensor};
    use candle_nn::VarBuilder;
    use candle_transformers::models::bert::BertModel;

    /// The straightforward candle model, padded batches and masked mean pooling: the
    /// reference the fast path is checked against.
    fn embed_reference(model: &MiniLmEmbedder, texts: &[&str]) -> Vec<Vec<f32>> {
        let dir = mnemo_protocol::paths::test_model_dir();
        let config: BertConfig =
            serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap())
                .unwrap();
        let device = Device::Cpu;
        // SAFETY: the model file is not modified while the test runs.
        let vb = unsafe {
            VarBuilder::from_mmaped_safetensors(
                &[dir.join("model.safetensors")],
                DType::F32,
                &device,
            )
        }
        .unwrap();
        let bert = BertModel::load(vb, &config).unwrap();
        let mut out = Vec::new();
        for chunk in texts.chunks(model.batch_size) {
            let encodings = model.tokenizer.encode_batch(chunk.to_vec(), true).unwrap();
            let width = encodings
                .iter()
                .map(|e| e.get_ids().len())
                .max()
                .unwrap_or(1)
                .max(1);
            let rows = encodings.len();
            let mut ids = vec![0u32; rows * width];
            let mut mask = vec![0u32; rows * width];
            for (r, enc) in encodings.iter().enumerate() {
                for (c, &id) in enc.get_ids().iter().enumerate() {
                    ids[r * width + c] = id;
                    mask[r * width + c] = 1;
                }
            }
            let ids = Tensor::from_vec(ids, (rows, width), &device).unwrap();
            let mask = Tensor::from_vec(mask, (rows, width), &device).unwrap();
            let types = ids.zeros_like().unwrap();
            let hidden = bert.forward(&ids, &types, Some(&mask)).unwrap();
            let mask = mask.to_dtype(DType::F32).unwrap().unsqueeze(2).unwrap();
            let summed = hidden.broadcast_mul(&mask).unwrap().sum(1).unwrap();
            let mean = summed.broadcast_div(&mask.sum(1).unwrap()).unwrap();
            let norms = mean.sqr().unwrap().sum_keepdim(1).unwrap().sqrt().unwrap();
            out.extend(
                mean.broadcast_div(&norms)
                    .unwrap()
                    .to_vec2::<f32>()
                    .unwrap(),
            );
        }
        out
    }

    /// The model fetched by packaging/fetch-model.sh, or None with a note saying how to get it.
    pub(crate) fn test_model() -> Option<MiniLmEmbedder> {
        let dir = mnemo_protocol::paths::test_model_dir();
        match MiniLmEmbedder::load(&dir, 256, 32) {
            Ok(m) => Some(m),
            Err(e) if std::env::var("CI").is_ok() => panic!("CI must have the model: {e}"),
            Err(e) => {
                eprintln!("SKIPPED: {e}");
                None
            }
        }
    }

    #[test]
    fn matches_the_published_sentence_transformers_vector() {
        let Some(model) = test_model() else { return };
        let v = model
            .embed(&["This is an example sentence"])
            .unwrap()
            .remove(0);
        let published = [
            0.0677, 0.0635, 0.0487, 0.0793, 0.0374, 0.0027, 0.0394, -0.0071,
        ];
        assert_eq!(v.len(), 384);
        for (i, (got, want)) in v.iter().zip(published).enumerate() {
            assert!(
                (got - want).abs() < 5e-4,
                "component {i}: got {got}, published {want}"
            );
        }
    }

    /// A few hundred texts of every length, from one word to past the 256-token cut.
    fn varied_texts() -> Vec<String> {
        let words = [
            "memory",
            "Caroline",
            "hiking",
            "I'm",
            "the",
            "quarterly",
            "budget",
            "🙂",
            "naïve",
            "café",
            "2023-05-08",
            "don't",
            "GPU",
            "pottery",
            "Lisbon",
            "!",
            "why?",
            "sister",
            "piano",
            "volunteer",
        ];
        (0..300)
            .map(|i| {
                let len = [1, 2, 5, 12, 30, 60, 120, 300][i % 8] + i % 7;
                (0..len)
                    .map(|j| words[(i * 7 + j * 13 + j / 3) % words.len()])
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    #[test]
    fn fast_path_matches_the_candle_path() {
        let Some(model) = test_model() else { return };
        let texts = varied_texts();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let fast = model.embed(&refs).unwrap();
        let reference = embed_reference(&model, &refs);
        let worst = fast
            .iter()
            .zip(&reference)
            .map(|(a, b)| cosine(a, b))
            .fold(1.0f32, f32::min);
        assert!(worst >= 0.999, "worst cosine {worst}");
    }

    #[test]
    fn batched_equals_one_at_a_time_and_meaning_is_close() {
        let Some(model) = test_model() else { return };
        let texts = [
            "I adopted a puppy last week",
            "We got a new dog recently",
            "The stock market fell sharply on Monday after the announcement",
            "ok",
        ];
        let batch = model.embed(&texts).unwrap();
        for (t, b) in texts.iter().zip(&batch) {
            let single = model.embed(&[t]).unwrap().remove(0);
            assert!(cosine(&single, b) > 0.9999, "{t}");
        }
        assert!(cosine(&batch[0], &batch[1]) > cosine(&batch[0], &batch[2]) + 0.2);
    }
}
