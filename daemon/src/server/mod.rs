//! The local-socket server: accepts connections from this user and serves each
//! ([`connection`]) until shutdown, then waits for every request in flight to be answered.

mod agent;
mod budget;
mod connection;
mod consolidate;
mod context;
mod entity;
mod frame;
mod graph;
mod handlers;
mod project;
mod router;
mod rpc;
mod session;
mod socket;
mod state;
mod subscriptions;
mod transfer;
mod usermodel;

use std::sync::Arc;

use interprocess::local_socket::tokio::{prelude::*, Listener};
use tokio_util::task::TaskTracker;

pub use handlers::router;
pub use router::Router;
pub use socket::{activation_fd, bind, from_activation, ActivationFd};
pub use state::{Limits, State};

/// Serves until shutdown is requested, then stops accepting and waits for every request in
/// flight to be answered.
pub async fn serve(listener: Listener, engine: Arc<State>, router: Arc<Router>) {
    let tracker = TaskTracker::new();
    loop {
        tokio::select! {
            _ = engine.shutdown.requested() => break,
            accepted = listener.accept() => match accepted {
                Ok(stream) => {
                    if !socket::peer_is_same_user(&stream) {
                        tracing::warn!("refused a connection from another user");
                        continue;
                    }
                    tracker.spawn(connection::serve(stream, engine.clone(), router.clone(), tracker.clone()));
                }
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
        }
    }
    // Clients already queued to connect are answered "shutting down", not reset.
    let until = tokio::time::Instant::now() + connection::DRAIN_GRACE;
    while let Ok(Ok(stream)) = tokio::time::timeout_at(
        (tokio::time::Instant::now() + connection::DRAIN_IDLE).min(until),
        listener.accept(),
    )
    .await
    {
        if socket::peer_is_same_user(&stream) {
            tracker.spawn(connection::serve(
                stream,
                engine.clone(),
                router.clone(),
                tracker.clone(),
            ));
        }
    }
    drop(listener);
    tracker.close();
    tracker.wait().await;
}
