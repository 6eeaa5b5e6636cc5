//! The one recorder of accesses: recall and the add-time duplicate check report the memories
//! they touched here; a single task batches them into `access_log` rows through the writer,
//! and consolidation folds them into the memories. The queue is bounded: when the writer is
//! far behind, accesses are dropped and counted (an access costs a little strength at most),
//! and a request never waits for one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mnemo_protocol::time::now_micros;
use tokio::sync::mpsc;

use crate::store::{Store, WriteOp};

/// Ids waiting to be written, at most.
const QUEUE: usize = 4096;
/// Accesses gathered into one append, at most.
const BATCH: usize = 1024;
/// How long a first access waits for others to share its commit.
const GATHER: Duration = Duration::from_millis(20);

#[derive(Clone)]
pub struct AccessRecorder {
    queue: mpsc::Sender<(String, i64)>,
    dropped: Arc<AtomicU64>,
}

impl AccessRecorder {
    /// Starts the recording task; it ends, after writing what it holds, when every
    /// recorder handle is dropped.
    pub fn start(store: Arc<Store>) -> (Self, tokio::task::JoinHandle<()>) {
        let (queue, rx) = mpsc::channel(QUEUE);
        let task = tokio::spawn(run(store, rx));
        let recorder = Self {
            queue,
            dropped: Arc::default(),
        };
        (recorder, task)
    }

    /// Records one access of each id, now. Never waits.
    pub fn record(&self, ids: impl IntoIterator<Item = String>) {
        let now = now_micros();
        for id in ids {
            if self.queue.try_send((id, now)).is_err() {
                let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                if dropped.is_power_of_two() {
                    tracing::warn!("{dropped} access events dropped: the writer is far behind");
                }
            }
        }
    }
}

async fn run(store: Arc<Store>, mut rx: mpsc::Receiver<(String, i64)>) {
    let mut batch = Vec::with_capacity(BATCH);
    while let Some(first) = rx.recv().await {
        batch.push(first);
        let deadline = tokio::time::Instant::now() + GATHER;
        while batch.len() < BATCH {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(access)) => batch.push(access),
                Ok(None) | Err(_) => break,
            }
        }
        write(&store, std::mem::take(&mut batch)).await;
    }
}

async fn write(store: &Store, accesses: Vec<(String, i64)>) {
    let table = store.runs().access_log.clone();
    let op = match crate::store::runs::access_batch(&accesses) {
        Ok(batch) => WriteOp::Append { table, batch },
        Err(e) => return tracing::warn!("access events: {e}"),
    };
    if let Err(e) = store.writer().submit(op).await {
        tracing::debug!("{} access events not recorded: {e}", accesses.len());
    }
}
