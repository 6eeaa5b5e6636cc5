//! The one recorder of accesses: recall and the add-time duplicate check report the memories
//! they touched here; a single task batches them into `access_log` rows through the writer,
//! and consolidation folds them into the memories. The queue is bounded: when the writer is
//! far behind, accesses are dropped and counted (an access costs a little strength at most),
//! and a request never waits for one. Accesses are gathered for up to a second per commit:
//! every commit is a LanceDB version and a fragment, and under a steady search load a commit
//! per search grew the log by thousands of versions an hour. Consolidation flushes first.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mnemo_protocol::time::now_micros;
use tokio::sync::{mpsc, oneshot};

use crate::store::{Store, WriteOp};

/// Ids waiting to be written, at most.
const QUEUE: usize = 4096;
/// Accesses gathered into one append, at most.
const BATCH: usize = 1024;
/// How long a first access waits for others to share its commit.
const GATHER: Duration = Duration::from_secs(1);

enum Message {
    Access(String, i64),
    /// Write what is held now; answer once it is committed.
    Flush(oneshot::Sender<()>),
}

#[derive(Clone)]
pub struct AccessRecorder {
    queue: mpsc::Sender<Message>,
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
            if self.queue.try_send(Message::Access(id, now)).is_err() {
                let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                if dropped.is_power_of_two() {
                    tracing::warn!("{dropped} access events dropped: the writer is far behind");
                }
            }
        }
    }

    /// Returns once every access recorded before the call is committed (or dropped).
    pub async fn flush(&self) {
        let (done, flushed) = oneshot::channel();
        if self.queue.send(Message::Flush(done)).await.is_ok() {
            let _ = flushed.await;
        }
    }
}

async fn run(store: Arc<Store>, mut rx: mpsc::Receiver<Message>) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut next = rx.recv().await;
    while let Some(first) = next.take() {
        let mut flush = None;
        let deadline = tokio::time::Instant::now() + GATHER;
        let mut message = Some(first);
        while let Some(m) = message.take() {
            match m {
                Message::Access(id, at) => batch.push((id, at)),
                Message::Flush(done) => flush = Some(done),
            }
            if batch.len() >= BATCH || flush.is_some() {
                break;
            }
            message = tokio::time::timeout_at(deadline, rx.recv())
                .await
                .ok()
                .flatten();
        }
        if !batch.is_empty() {
            write(&store, std::mem::take(&mut batch)).await;
        }
        if let Some(done) = flush {
            let _ = done.send(());
        }
        next = rx.recv().await;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_store;

    async fn tallied(store: &Store) -> i64 {
        let tallies = store.runs().access_tallies(i64::MAX).await.unwrap();
        tallies.iter().map(|t| t.count).sum()
    }

    #[tokio::test]
    async fn accesses_share_a_commit_and_a_flush_writes_them_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = test_store(dir.path()).await;
        let (recorder, task) = AccessRecorder::start(store.clone());
        let before = store.runs().access_log.version().await.unwrap();
        recorder.record(["a".to_string(), "b".to_string()]);
        recorder.record(["a".to_string()]);
        recorder.flush().await;
        assert_eq!(tallied(&store).await, 3);
        // One commit for the three, not one per call.
        assert_eq!(store.runs().access_log.version().await.unwrap(), before + 1);
        // A flush with nothing held commits nothing.
        recorder.flush().await;
        assert_eq!(store.runs().access_log.version().await.unwrap(), before + 1);
        // What is held when the last handle goes is written before the task ends.
        recorder.record(["c".to_string()]);
        drop(recorder);
        task.await.unwrap();
        assert_eq!(tallied(&store).await, 4);
    }
}
