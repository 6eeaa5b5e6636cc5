//! What one connection may hold in the daemon at once: requests read and not answered,
//! calls running, and request and reply bytes (see `connection.rs` for how they are used).

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Requests of one connection read and not yet answered.
pub const FRAMES: usize = 16;

/// Request and reply bytes one connection may hold in the daemon.
pub fn bytes_budget(max_frame_bytes: usize) -> usize {
    (2 * max_frame_bytes).max(32 << 20)
}

/// What one connection may hold at once.
pub struct Budget {
    frames: Arc<Semaphore>,
    calls: Arc<Semaphore>,
    bytes: Arc<Semaphore>,
    bytes_total: usize,
}

impl Budget {
    pub fn new(max_in_flight: usize, max_frame_bytes: usize) -> Self {
        let bytes_total = bytes_budget(max_frame_bytes).min(Semaphore::MAX_PERMITS);
        Self {
            frames: Arc::new(Semaphore::new(FRAMES)),
            calls: Arc::new(Semaphore::new((max_in_flight / 4).max(1))),
            bytes: Arc::new(Semaphore::new(bytes_total)),
            bytes_total,
        }
    }

    /// Room for `n` bytes (all of the budget for more than it holds).
    pub async fn bytes(&self, n: usize) -> Option<OwnedSemaphorePermit> {
        let n = n.clamp(1, self.bytes_total).min(u32::MAX as usize) as u32;
        self.bytes.clone().acquire_many_owned(n).await.ok()
    }

    /// A turn for one call of this connection.
    pub async fn call(&self) -> Option<OwnedSemaphorePermit> {
        self.calls.clone().acquire_owned().await.ok()
    }

    pub async fn frame(&self) -> Option<OwnedSemaphorePermit> {
        self.frames.clone().acquire_owned().await.ok()
    }
}

/// A line for the client, with the budget it holds until it is written.
pub struct Outgoing {
    pub line: String,
    pub held: Vec<OwnedSemaphorePermit>,
}

impl Outgoing {
    pub fn plain(line: String) -> Self {
        Self {
            line,
            held: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_connection_gets_a_quarter_of_the_calls_and_bounded_bytes() {
        let budget = Budget::new(8, 1 << 20);
        let turns: Vec<_> = futures::future::join_all((0..2).map(|_| budget.call())).await;
        assert!(turns.iter().all(Option::is_some));
        // The third call waits for one of the first two.
        let third = tokio::time::timeout(std::time::Duration::from_millis(20), budget.call());
        assert!(third.await.is_err());
        drop(turns);
        assert!(budget.call().await.is_some());
        // A reply larger than the whole budget takes all of it, and still goes.
        let all = budget.bytes(usize::MAX).await.unwrap();
        let more = tokio::time::timeout(std::time::Duration::from_millis(20), budget.bytes(1));
        assert!(more.await.is_err());
        drop(all);
        assert!(budget.bytes(1).await.is_some());
    }
}
