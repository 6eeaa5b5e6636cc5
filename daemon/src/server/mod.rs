//! The local-socket server: accepts connections, reads frames, dispatches each request on its
//! own task (so one connection can pipeline), and writes replies as they finish.

mod consolidate;
mod frame;
mod handlers;
mod router;
mod rpc;
mod session;
mod socket;
mod state;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use interprocess::local_socket::tokio::{prelude::*, Listener, Stream};
use mnemo_protocol::{Id, Response, RpcError};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::task::TaskTracker;

use frame::{read_frame, Frame};
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
                    tracker.spawn(connection(stream, engine.clone(), router.clone(), tracker.clone()));
                }
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
        }
    }
    drop(listener);
    tracker.close();
    tracker.wait().await;
}

async fn connection(stream: Stream, engine: Arc<State>, router: Arc<Router>, tracker: TaskTracker) {
    engine.connections.fetch_add(1, Ordering::Relaxed);
    let (read, mut write) = tokio::io::split(stream);
    let mut reader = BufReader::with_capacity(64 * 1024, read);
    let (replies, mut outbox) = mpsc::channel::<String>(256);
    let writer = tokio::spawn(async move {
        while let Some(mut line) = outbox.recv().await {
            line.push('\n');
            if write.write_all(line.as_bytes()).await.is_err() {
                break;
            }
        }
        let _ = write.flush().await;
    });
    let session = Arc::new(session::Session::default());
    let events = tokio::spawn(session::forward_events(
        session.clone(),
        engine.clone(),
        replies.clone(),
    ));
    let limit = engine.limits.max_frame_bytes;
    let mut buf = Vec::new();
    loop {
        let frame = tokio::select! {
            _ = engine.shutdown.requested() => break,
            frame = read_frame(&mut reader, limit, &mut buf) => frame,
        };
        match frame {
            Ok(Frame::Line(line)) => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let (engine, router, replies) = (engine.clone(), router.clone(), replies.clone());
                let session = session.clone();
                tracker.spawn(async move {
                    if let Some(reply) = rpc::handle_frame(&router, &engine, &session, &line).await
                    {
                        let _ = replies.send(reply.to_string()).await;
                    }
                });
            }
            Ok(Frame::TooLarge { bytes }) => {
                let error = RpcError::invalid_request(format!(
                    "request of {bytes} bytes is over the limit of {limit} (max_frame_bytes); send less per request"
                ));
                let reply =
                    serde_json::to_string(&Response::err(Id::Null, error)).unwrap_or_default();
                let _ = replies.send(reply).await;
            }
            Ok(Frame::End) => break,
            Err(e) => {
                tracing::debug!("connection read failed: {e}");
                break;
            }
        }
    }
    // Replies still being computed hold their own sender; the writer ends after the last one.
    events.abort();
    drop(replies);
    let _ = writer.await;
    engine.connections.fetch_sub(1, Ordering::Relaxed);
}
