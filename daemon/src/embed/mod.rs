//! Embeddings: the [`Embedder`] trait, its three implementations, and [`EmbedService`], which
//! coalesces texts from concurrent requests into batches and runs them on a bounded blocking
//! pool so the reactor never computes.

mod fastbert;
mod hashed;
mod http;
mod minilm;
mod reembed;
mod service;

pub use hashed::HashedEmbedder;
pub use http::HttpEmbedder;
#[cfg(test)]
pub(crate) use minilm::tests::test_model;
pub use minilm::MiniLmEmbedder;
pub use reembed::{run as reembed, ReembedProgress};
pub use service::EmbedService;

use std::sync::Arc;

use crate::config::{Config, EmbedderKind};

#[derive(Debug, Clone, thiserror::Error)]
pub enum EmbedError {
    #[error("embedding model files missing in {dir}: {missing}. Run packaging/fetch-model.sh, or set embedder.kind = \"hashed\" to run without a model")]
    ModelMissing { dir: String, missing: String },
    #[error("embedding model failed to load: {0}")]
    Load(String),
    #[error("embedding failed: {0}")]
    Compute(String),
    #[error("embedding endpoint {url}: {message}")]
    Endpoint { url: String, message: String },
    #[error("the embedder is not running (mnemod is shutting down)")]
    Stopped,
}

/// Turns texts into L2-normalised vectors. Implementations block; call them through
/// [`EmbedService`], never on the reactor.
pub trait Embedder: Send + Sync {
    /// Names the model, e.g. `minilm:all-MiniLM-L6-v2`; stored beside every vector.
    fn model_id(&self) -> &str;
    fn dim(&self) -> usize;
    /// Why this embedder gives worse recall than the default, when it does.
    fn degraded(&self) -> Option<String> {
        None
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// Builds the configured embedder. A missing MiniLM model falls back to the hashed embedder,
/// which then reports itself degraded with the reason and the fix.
pub fn from_config(config: &Config) -> Result<Arc<dyn Embedder>, EmbedError> {
    match config.embedder.kind {
        EmbedderKind::Hashed => Ok(Arc::new(HashedEmbedder::chosen())),
        EmbedderKind::Http => Ok(Arc::new(HttpEmbedder::connect(&config.embedder)?)),
        EmbedderKind::Minilm => {
            let dir = config.model_dir();
            match MiniLmEmbedder::load(&dir, config.embedder.max_tokens, config.embedder.batch_size)
            {
                Ok(model) => Ok(Arc::new(model)),
                Err(e @ EmbedError::ModelMissing { .. }) => {
                    tracing::warn!("{e}; falling back to the hashed embedder");
                    Ok(Arc::new(HashedEmbedder::fallback(e.to_string())))
                }
                Err(e) => Err(e),
            }
        }
    }
}

// Vector arithmetic lives with the matrix products; the embedder's callers use it from here.
pub use crate::linalg::{cosine, l2_normalize};
