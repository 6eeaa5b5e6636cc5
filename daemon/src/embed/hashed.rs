//! A weightless lexical embedder: words, word pairs and character trigrams hashed into a
//! signed vector. It needs no model, so mnemo works at once; it only matches shared words
//! and spellings, never meaning, which is why it reports itself degraded.

use super::{l2_normalize, EmbedError, Embedder};

pub const HASHED_DIM: usize = 384;

pub struct HashedEmbedder {
    why: String,
}

impl HashedEmbedder {
    /// Chosen in the config: still degraded recall, and said so.
    pub fn chosen() -> Self {
        Self {
            why: "hashed embedder chosen in the config: lexical matching only, no meaning".into(),
        }
    }
    /// Standing in for a model that could not be loaded.
    pub fn fallback(reason: String) -> Self {
        Self {
            why: format!("hashed fallback (lexical only) because {reason}"),
        }
    }
}

/// FNV-1a: stable across runs and platforms, unlike std's randomised hasher.
fn fnv1a(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            hash ^= 0x1f;
            hash = hash.wrapping_mul(0x100_0000_01b3);
        }
        for byte in part.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x100_0000_01b3);
        }
    }
    hash
}

fn add_feature(v: &mut [f32], hash: u64, weight: f32) {
    let slot = (hash % v.len() as u64) as usize;
    let sign = if hash >> 63 == 0 { 1.0 } else { -1.0 };
    v[slot] += sign * weight;
}

pub fn embed_one(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; HASHED_DIM];
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    for word in &words {
        add_feature(&mut v, fnv1a(&["w", word]), 1.0);
        let chars: Vec<char> = format!("<{word}>").chars().collect();
        for tri in chars.windows(3) {
            let tri: String = tri.iter().collect();
            add_feature(&mut v, fnv1a(&["c", &tri]), 0.25);
        }
    }
    for pair in words.windows(2) {
        add_feature(&mut v, fnv1a(&["b", pair[0], pair[1]]), 0.5);
    }
    l2_normalize(&mut v);
    v
}

impl Embedder for HashedEmbedder {
    fn model_id(&self) -> &str {
        "hashed:v1"
    }
    fn dim(&self) -> usize {
        HASHED_DIM
    }
    fn degraded(&self) -> Option<String> {
        Some(self.why.clone())
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| embed_one(t)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::cosine;

    #[test]
    fn stable_unit_vectors() {
        let a = embed_one("The cat sat on the mat");
        assert_eq!(a, embed_one("The cat sat on the mat"));
        let norm: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
    }

    #[test]
    fn shared_words_score_higher_than_unrelated_text() {
        let q = embed_one("where did caroline go hiking");
        let near = embed_one("Caroline went hiking in the mountains last weekend");
        let far = embed_one("The quarterly tax report is due on Friday");
        assert!(cosine(&q, &near) > cosine(&q, &far) + 0.1);
    }

    #[test]
    fn says_it_is_degraded() {
        assert!(HashedEmbedder::chosen()
            .degraded()
            .unwrap()
            .contains("lexical"));
        let fb = HashedEmbedder::fallback("model missing".into());
        assert!(fb.degraded().unwrap().contains("model missing"));
    }
}
