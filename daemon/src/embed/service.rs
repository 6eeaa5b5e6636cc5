//! Coalesces embedding requests: texts from concurrent callers queue, and a free worker (a
//! thread of its own) takes as many as fit one batch.
//!
//! Its own threads, not Tokio's blocking pool: each thread that multiplies keeps buffers
//! (gemm's packing space, the model's band of weights in f32; ~1.5 MB), and on the pool a
//! search bench at 100k memories had spread them over 38 threads, 59 MB.
//!
//! The queue is handed to the workers directly, not through a task on the runtime: a task
//! woken by a search waited in that search's worker slot until the search's own text leg
//! (~1 ms of CPU) yielded, which delayed every query's embedding by that much.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use tokio::sync::oneshot;

use super::{EmbedError, Embedder};

type Reply = oneshot::Sender<Result<Vec<Vec<f32>>, EmbedError>>;

struct Job {
    texts: Vec<String>,
    reply: Reply,
}

/// Jobs waiting for a worker, and whether the service is gone.
#[derive(Default)]
struct Queue {
    waiting: Mutex<Waiting>,
    arrived: Condvar,
}

#[derive(Default)]
struct Waiting {
    jobs: VecDeque<Job>,
    closed: bool,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next jobs to embed together: the oldest, and those after it while they fit one
    /// batch. None once the service is gone.
    fn take(&self, batch_size: usize) -> Option<Vec<Job>> {
        let mut waiting = self.lock();
        loop {
            if let Some(first) = waiting.jobs.pop_front() {
                let mut count = first.texts.len();
                let mut batch = vec![first];
                while let Some(next) = waiting.jobs.front() {
                    if count + next.texts.len() > batch_size {
                        break;
                    }
                    count += next.texts.len();
                    batch.extend(waiting.jobs.pop_front());
                }
                return Some(batch);
            }
            if waiting.closed {
                return None;
            }
            waiting = self
                .arrived
                .wait(waiting)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// The queue as the service's handles share it: jobs go in through it, and the last handle
/// dropped lets the workers end.
struct Submitter(Arc<Queue>);

impl Submitter {
    fn push(&self, job: Job) {
        self.0.lock().jobs.push_back(job);
        self.0.arrived.notify_one();
    }
}

impl Drop for Submitter {
    fn drop(&mut self) {
        self.0.lock().closed = true;
        self.0.arrived.notify_all();
    }
}

#[derive(Clone)]
pub struct EmbedService {
    embedder: Arc<dyn Embedder>,
    queue: Arc<Submitter>,
    pending: Arc<AtomicUsize>,
}

impl EmbedService {
    /// Starts `workers` threads, each embedding up to `batch_size` texts at a time.
    pub fn start(
        embedder: Arc<dyn Embedder>,
        batch_size: usize,
        workers: usize,
    ) -> std::io::Result<Self> {
        let queue = Arc::new(Queue::default());
        for n in 0..workers.max(1) {
            let (embedder, queue) = (embedder.clone(), queue.clone());
            std::thread::Builder::new()
                .name(format!("mnemo-embed-{n}"))
                .spawn(move || work(embedder.as_ref(), &queue, batch_size.max(1)))?;
        }
        Ok(Self {
            embedder,
            queue: Arc::new(Submitter(queue)),
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
        self.queue.push(Job { texts, reply });
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

/// A worker: embeds batches until the service is gone.
fn work(embedder: &dyn Embedder, queue: &Queue, batch_size: usize) {
    while let Some(jobs) = queue.take(batch_size) {
        let texts: Vec<&str> = jobs
            .iter()
            .flat_map(|j| j.texts.iter().map(String::as_str))
            .collect();
        // A model that panics fails this batch (its callers hear the embedder stopped),
        // not the worker.
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| embedder.embed(&texts)));
        drop(texts);
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

    fn job(texts: usize) -> Job {
        Job {
            texts: (0..texts).map(|i| i.to_string()).collect(),
            reply: oneshot::channel().0,
        }
    }

    #[test]
    fn a_worker_takes_the_queued_jobs_that_fit_one_batch_then_ends_when_closed() {
        let queue = Queue::default();
        queue
            .lock()
            .jobs
            .extend([job(3), job(3), job(3), job(9), job(1)]);
        let sizes = |jobs: Vec<Job>| jobs.iter().map(|j| j.texts.len()).collect::<Vec<_>>();
        assert_eq!(sizes(queue.take(8).unwrap()), [3, 3]);
        assert_eq!(sizes(queue.take(8).unwrap()), [3]);
        // A job larger than a batch goes alone, whole.
        assert_eq!(sizes(queue.take(8).unwrap()), [9]);
        let submitter = Submitter(Arc::new(queue));
        let queue = submitter.0.clone();
        drop(submitter);
        // What was queued before the close is still embedded.
        assert_eq!(sizes(queue.take(8).unwrap()), [1]);
        assert!(queue.take(8).is_none());
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
