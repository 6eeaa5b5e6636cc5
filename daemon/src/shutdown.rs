//! The one shutdown signal: set once (a signal, `daemon.shutdown`), watched by every loop.

use std::sync::Arc;

use tokio::sync::watch;

#[derive(Clone)]
pub struct Shutdown(Arc<watch::Sender<bool>>);

impl Default for Shutdown {
    fn default() -> Self {
        Self(Arc::new(watch::channel(false).0))
    }
}

impl Shutdown {
    pub fn request(&self) {
        self.0.send_replace(true);
    }

    pub fn is_requested(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once shutdown is requested.
    pub async fn requested(&self) {
        let mut rx = self.0.subscribe();
        let _ = rx.wait_for(|stop| *stop).await;
    }

    pub fn watch(&self) -> watch::Receiver<bool> {
        self.0.subscribe()
    }
}
