//! Novelty, a salience factor: how unlike what the namespace already holds a new memory is,
//! as 1 − its highest cosine similarity to a window of the namespace's memories. The window
//! holds the last [`WINDOW`] memories added, first filled from the store on the namespace's
//! first add, so the check costs a few hundred dot products and no query per add.

use std::collections::{HashMap, VecDeque};

use tokio::sync::Mutex;

use crate::store::filter::current;
use crate::store::{col, Store, StoreError};

/// Vectors kept per namespace.
const WINDOW: usize = 512;

#[derive(Default)]
pub struct Novelty {
    windows: Mutex<HashMap<String, VecDeque<Vec<f32>>>>,
}

impl Novelty {
    /// The novelty of each vector (0–1) against the namespace's window and the vectors before
    /// it in the same call; then they join the window.
    pub async fn score(
        &self,
        store: &Store,
        namespace: &str,
        vectors: &[&[f32]],
    ) -> Result<Vec<f32>, StoreError> {
        let mut windows = self.windows.lock().await;
        if !windows.contains_key(namespace) {
            let predicate = col("namespace").eq(namespace).and(current());
            let stored = store.some_vectors(&predicate, WINDOW).await?;
            let stored = stored.iter().map(|v| unit(v)).collect();
            windows.insert(namespace.to_string(), stored);
        }
        let window = windows.get_mut(namespace).expect("inserted above");
        let mut out = Vec::with_capacity(vectors.len());
        for v in vectors {
            let v = unit(v);
            // Unit vectors: the cosine is the dot product.
            let nearest = window
                .iter()
                .map(|w| w.iter().zip(&v).map(|(a, b)| a * b).sum::<f32>())
                .fold(f32::NEG_INFINITY, f32::max);
            // Nothing to compare with: the first memory is as new as it gets.
            out.push(if nearest.is_finite() {
                (1.0 - nearest).clamp(0.0, 1.0)
            } else {
                1.0
            });
            if window.len() == WINDOW {
                window.pop_front();
            }
            window.push_back(v);
        }
        Ok(out)
    }
}

/// `v` scaled to length 1 (a zero vector stays zero and matches nothing).
fn unit(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm == 0.0 {
        return v.to_vec();
    }
    v.iter().map(|x| x / norm).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_repeat_is_not_novel_and_a_stranger_is() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::test_store(dir.path()).await;
        let novelty = Novelty::default();
        let dim = store.dim();
        let mut a = vec![0.0; dim];
        a[0] = 1.0;
        let mut b = vec![0.0; dim];
        b[1] = 1.0;
        let scores = novelty
            .score(&store, "default", &[&a, &a, &b])
            .await
            .unwrap();
        assert_eq!(scores[0], 1.0, "nothing stored yet");
        assert!(scores[1] < 0.01, "the same vector again: {scores:?}");
        assert!(scores[2] > 0.99, "orthogonal to all before: {scores:?}");
    }
}
