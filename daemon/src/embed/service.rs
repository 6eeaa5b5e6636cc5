//! Coalesces embedding requests: texts from concurrent callers queue, a dispatcher takes as
//! many as fit one batch and hands it to one of `workers` threads of its own.
//!
//! Its own threads, not Tokio's blocking pool: each thread that multiplies keeps buffers
//! (gemm's packing space, the model's band of weights in f32; ~1.5 MB), and on the pool a
//! search bench at 100k memories had spread them over 38 threads, 59 MB.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};

use super::{EmbedError, Embedder};

type Reply = oneshot::Sender<Result<Vec<Vec<f32>>, EmbedError>>;

struct Job {
    texts: Vec<String>,
    reply: Reply,
}

/// Jobs embedded together, and the worker's slot they hold until done.
struct Batch {
    jobs: Vec<Job>,
    slot: OwnedSemaphorePermit,
}

#[derive(Clone)]
pub struct EmbedService {
    embedder: Arc<dyn Embedder>,
    queue: mpsc::Sender<Job>,
    pending: Arc<AtomicUsize>,
}

impl EmbedService {
    /// Starts the workers, and the dispatcher on the current runtime.
    pub fn start(
        embedder: Arc<dyn Embedder>,
        batch_size: usize,
        workers: usize,
    ) -> std::io::Result<Self> {
        let (queue, jobs) = mpsc::channel(1024);
        let (to_workers, batches) = std::sync::mpsc::channel();
        let batches = Arc::new(Mutex::new(batches));
        let workers = workers.max(1);
        for n in 0..workers {
            let (embedder, batches) = (embedder.clone(), batches.clone());
            std::thread::Builder::new()
                .name(format!("mnemo-embed-{n}"))
                .spawn(move || work(embedder.as_ref(), &batches))?;
        }
        tokio::spawn(dispatch(jobs, to_workers, batch_size, workers));
        Ok(Self {
            embedder,
            queue,
            pending: Arc::new(AtomicUsize::new(0)),
        })
    }

    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// The embedder's name as users see it, marked when degraded.
    pub fn label(&self) -> String {
        match self.embedder.degraded() {
            Some(_) => format!("{} (degraded)", self.embedder.model_id()),
            None => self.embedder.model_id().to_string(),
        }
    }

    /// Texts waiting to be embedded.
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::Relaxed)
    }

    pub async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let (reply, answer) = oneshot::channel();
        // Counted until the texts are answered, whichever way: embedded, failed, or the
        // batch's worker gone (a panic drops the reply, and this guard with the caller).
        let _pending = Pending::add(&self.pending, texts.len());
        self.queue
            .send(Job { texts, reply })
            .await
            .map_err(|_| EmbedError::Stopped)?;
        answer.await.map_err(|_| EmbedError::Stopped)?
    }

    pub async fn embed_one(&self, text: String) -> Result<Vec<f32>, EmbedError> {
        Ok(self.embed(vec![text]).await?.remove(0))
    }
}

/// Texts counted as pending while this lives.
struct Pending<'a> {
    count: &'a AtomicUsize,
    n: usize,
}

impl<'a> Pending<'a> {
    fn add(count: &'a AtomicUsize, n: usize) -> Self {
        count.fetch_add(n, Ordering::Relaxed);
        Self { count, n }
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(self.n, Ordering::Relaxed);
    }
}

async fn dispatch(
    mut jobs: mpsc::Receiver<Job>,
    to_workers: std::sync::mpsc::Sender<Batch>,
    batch_size: usize,
    workers: usize,
) {
    let slots = Arc::new(Semaphore::new(workers));
    while let Some(first) = jobs.recv().await {
        // Waiting for a free worker lets more jobs queue, to join this batch.
        let Ok(slot) = slots.clone().acquire_owned().await else {
            break;
        };
        // Take whatever else has queued meanwhile, up to a batch.
        let mut batch = vec![first];
        let mut count = batch[0].texts.len();
        while count < batch_size {
            match jobs.try_recv() {
                Ok(job) => {
                    count += job.texts.len();
                    batch.push(job);
                }
                Err(_) => break,
            }
        }
        if to_workers.send(Batch { jobs: batch, slot }).is_err() {
            break;
        }
    }
}

/// A worker: embeds batches until the dispatcher is gone.
fn work(embedder: &dyn Embedder, batches: &Mutex<std::sync::mpsc::Receiver<Batch>>) {
    loop {
        let next = batches.lock().unwrap_or_else(|e| e.into_inner()).recv();
        let Ok(Batch { jobs, slot }) = next else {
            return;
        };
        let texts: Vec<&str> = jobs
            .iter()
            .flat_map(|j| j.texts.iter().map(String::as_str))
            .collect();
        // A model that panics fails this batch (its callers hear the embedder stopped),
        // not the worker.
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| embedder.embed(&texts)));
        drop(texts);
        drop(slot);
        match result {
            Ok(Ok(mut vectors)) => {
                for job in jobs.into_iter().rev() {
                    let mine = vectors.split_off(vectors.len() - job.texts.len());
                    let _ = job.reply.send(Ok(mine));
                }
            }
            Ok(Err(e)) => jobs.into_iter().for_each(|job| {
                let _ = job.reply.send(Err(e.clone()));
            }),
            Err(_) => tracing::error!("the embedder panicked on a batch of {} texts", jobs.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::HashedEmbedder;

    #[tokio::test]
    async fn concurrent_callers_each_get_their_own_vectors() {
        let embedder: Arc<dyn Embedder> = Arc::new(HashedEmbedder::chosen());
        let service = EmbedService::start(embedder.clone(), 8, 1).unwrap();
        let calls = (0..20).map(|i| {
            let service = service.clone();
            tokio::spawn(async move {
                let texts = vec![format!("text number {i}"), format!("another {i}")];
                (texts.clone(), service.embed(texts).await.unwrap())
            })
        });
        for call in calls {
            let (texts, vectors) = call.await.unwrap();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            assert_eq!(vectors, embedder.embed(&refs).unwrap());
        }
        assert_eq!(service.pending(), 0);
    }

    /// Panics on every text: a worker that dies must not leave texts counted as pending.
    struct Exploding;
    impl Embedder for Exploding {
        fn model_id(&self) -> &str {
            "exploding"
        }
        fn dim(&self) -> usize {
            4
        }
        fn embed(&self, _: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            panic!("the model fell over")
        }
    }

    #[tokio::test]
    async fn a_failed_batch_leaves_nothing_pending() {
        let service = EmbedService::start(Arc::new(Exploding), 8, 1).unwrap();
        let err = service
            .embed(vec!["a".into(), "b".into()])
            .await
            .unwrap_err();
        assert!(matches!(err, EmbedError::Stopped), "{err}");
        assert_eq!(service.pending(), 0);
        // The worker is not gone: the next caller gets an answer too.
        assert!(service.embed(vec!["c".into()]).await.is_err());
        assert_eq!(service.pending(), 0);
    }
}
