//! Background re-embedding: rows whose vector comes from another model than the configured
//! one (a start without the model file fell back to the hashed embedder, or the embedder was
//! changed) get a vector of the configured model, a small batch at a time so requests keep
//! their turn at the embedder. Search compares vectors of the configured model only, and
//! finds the waiting rows by their words meanwhile. Progress shows in `daemon.status`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use lancedb::arrow::arrow_array::{FixedSizeListArray, Float32Array, StringArray};
use lancedb::arrow::arrow_schema::{DataType, Field};
use mnemo_protocol::daemon::ReembedStatus;

use super::EmbedService;
use crate::shutdown::Shutdown;
use crate::store::{col, Pred, Store, StoreError, WriteOp};

/// Rows embedded per round.
const BATCH: usize = 32;

#[derive(Default)]
pub struct ReembedProgress {
    model: Mutex<Option<String>>,
    done: AtomicU64,
    total: AtomicU64,
}

impl ReembedProgress {
    /// `None` when nothing is (or was, since start) waiting for a new vector.
    pub fn status(&self) -> Option<ReembedStatus> {
        let model = self
            .model
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()?;
        let total = self.total.load(Ordering::Relaxed);
        let done = self.done.load(Ordering::Relaxed);
        (done < total).then_some(ReembedStatus { model, done, total })
    }
}

fn stale(model: &str) -> Pred {
    col("embed_model").ne(model)
}

/// Re-embeds every stale row, then ends. Does nothing while the embedder is a degraded
/// stand-in (its vectors are worse than those stored).
pub async fn run(
    store: Arc<Store>,
    embed: EmbedService,
    shutdown: Shutdown,
    progress: Arc<ReembedProgress>,
) {
    if embed.embedder().degraded().is_some() && embed.embedder().model_id() != store.embed_model() {
        return;
    }
    let model = store.embed_model().to_string();
    match reembed(&store, &embed, &shutdown, &progress, &model).await {
        Ok(0) => {}
        Ok(n) => tracing::info!("re-embedded {n} memories with {model}"),
        Err(e) => tracing::warn!("re-embedding stopped: {e}; it resumes at the next start"),
    }
}

/// Its errors (storage or embedder) are only logged, so they need no type of their own.
async fn reembed(
    store: &Store,
    embed: &EmbedService,
    shutdown: &Shutdown,
    progress: &ReembedProgress,
    model: &str,
) -> Result<u64, Box<dyn std::error::Error + Send + Sync>> {
    let total = store.count(&stale(model)).await? as u64;
    if total == 0 {
        return Ok(0);
    }
    tracing::info!(
        "{total} memories have vectors of another model; re-embedding them with {model}"
    );
    *progress.model.lock().unwrap_or_else(|p| p.into_inner()) = Some(model.to_string());
    progress.total.store(total, Ordering::Relaxed);
    let mut done = 0;
    while !shutdown.is_requested() {
        let rows = store.plain_rows(&stale(model), Some(BATCH)).await?;
        if rows.is_empty() {
            break;
        }
        let texts = rows.iter().map(|r| r.content.clone()).collect();
        let vectors = embed.embed(texts).await?;
        let dim = store.dim() as i32;
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        let floats = Float32Array::from_iter_values(vectors.iter().flatten().copied());
        let batch = store.patch(vec![
            (
                "id",
                Arc::new(
                    rows.iter()
                        .map(|r| Some(r.id.as_str()))
                        .collect::<StringArray>(),
                ),
            ),
            (
                "vector",
                Arc::new(
                    FixedSizeListArray::try_new(item, dim, Arc::new(floats), None)
                        .map_err(StoreError::from)?,
                ),
            ),
            (
                "embed_model",
                Arc::new(StringArray::from(vec![model; rows.len()])),
            ),
        ])?;
        store
            .writer()
            .submit(WriteOp::Patch {
                batch,
                only_if: Some(stale(model).on_target()),
            })
            .await?;
        done += rows.len() as u64;
        progress.done.store(done.min(total), Ordering::Relaxed);
    }
    progress.done.store(total, Ordering::Relaxed);
    Ok(done)
}
