//! One client connection: reads frames, runs each on its own task (so a connection can
//! pipeline), and writes replies as they finish — within a budget, so a client that sends
//! without reading, or sends one huge batch, holds a bounded share of the daemon.
//!
//! - **frames**: at most [`FRAMES`] requests read but not yet answered; past it the
//!   connection is not read until a reply goes out.
//! - **calls**: at most a quarter of `max_in_flight` calls (requests or batch items) of one
//!   connection run at once; the rest wait their turn instead of taking every slot.
//! - **bytes**: request bytes not yet parsed plus reply bytes not yet written stay under
//!   [`bytes_budget`](super::budget::bytes_budget); a reply waits for room, and while it
//!   waits the connection is not read.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use interprocess::local_socket::tokio::Stream;
use mnemo_protocol::{Id, Response, RpcError};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, OwnedSemaphorePermit};
use tokio::time::Instant;
use tokio_util::task::TaskTracker;

use super::budget::{Budget, Outgoing, FRAMES};
use super::frame::{read_frame, Frame};
use super::router::Router;
use super::{rpc, subscriptions, State};

/// How long, once shutdown is asked, replies wait for a client that does not read.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How long, once shutdown is asked, a connection is still read to answer what its client
/// sent with "shutting down" (instead of a reset), and how quiet it must go to be closed.
pub const DRAIN_GRACE: Duration = Duration::from_secs(2);
pub const DRAIN_IDLE: Duration = Duration::from_millis(250);

pub async fn serve(stream: Stream, engine: Arc<State>, router: Arc<Router>, tracker: TaskTracker) {
    engine.connections.fetch_add(1, Ordering::Relaxed);
    let (read, mut write) = tokio::io::split(stream);
    let mut reader = BufReader::with_capacity(64 * 1024, read);
    let (replies, mut outbox) = mpsc::channel::<Outgoing>(FRAMES);
    let shutdown = engine.shutdown.clone();
    let writer = tokio::spawn(async move {
        // A client that stops reading must not hold shutdown up for ever: after a grace,
        // its unsent replies are dropped (and their budget with them).
        let stalled = async {
            shutdown.requested().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        };
        tokio::pin!(stalled);
        loop {
            let out = tokio::select! {
                _ = &mut stalled => break,
                out = outbox.recv() => match out {
                    Some(out) => out,
                    None => break,
                },
            };
            let Outgoing { mut line, held } = out;
            line.push('\n');
            let written = tokio::select! {
                _ = &mut stalled => break,
                written = write.write_all(line.as_bytes()) => written,
            };
            if written.is_err() {
                break;
            }
            // The budget the reply held is given back once its bytes are gone.
            drop(held);
        }
        let _ = write.flush().await;
    });
    let subscribed = Arc::new(subscriptions::Subscriptions::default());
    let events = tokio::spawn(subscriptions::forward_events(
        subscribed.clone(),
        engine.clone(),
        replies.clone(),
    ));
    let limits = &engine.limits;
    let (limit, budget) = (
        limits.max_frame_bytes,
        Arc::new(Budget::new(limits.max_in_flight, limits.max_frame_bytes)),
    );
    let mut buf = Vec::new();
    let mut bytes_read = 0usize;
    let mut drain_until: Option<Instant> = None;
    loop {
        let next = next_frame(&mut reader, limit, &mut buf, &budget);
        tokio::pin!(next);
        // Once shutdown is asked, what the client already sent is still read (never cut off
        // mid-frame) and answered "shutting down", until it goes quiet or the grace ends.
        let frame = tokio::select! {
            frame = &mut next, if drain_until.is_none() => frame,
            _ = engine.shutdown.requested() => {
                let until = *drain_until.get_or_insert_with(|| Instant::now() + DRAIN_GRACE);
                let quiet = (Instant::now() + DRAIN_IDLE).min(until);
                match tokio::time::timeout_at(quiet, &mut next).await {
                    Ok(frame) => frame,
                    Err(_) => break,
                }
            }
        };
        let (frame, turn, request_bytes) = match frame {
            Ok(Some(read)) => read,
            Ok(None) => break,
            Err(e) => {
                tracing::debug!("connection read failed: {e}");
                break;
            }
        };
        match frame {
            Frame::Line(line) => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                bytes_read += line.len();
                let (engine, router, replies) = (engine.clone(), router.clone(), replies.clone());
                let (subscribed, budget) = (subscribed.clone(), budget.clone());
                tracker.spawn(async move {
                    let reply = rpc::handle_frame(
                        &router,
                        &engine,
                        &subscribed,
                        &budget,
                        line,
                        request_bytes,
                    )
                    .await;
                    if let Some(line) = reply {
                        let mut held = vec![turn];
                        held.extend(budget.bytes(line.len()).await);
                        let _ = replies.send(Outgoing { line, held }).await;
                    }
                });
            }
            Frame::TooLarge { bytes } => {
                let error = RpcError::invalid_request(format!(
                    "request of {bytes} bytes is over the limit of {limit} (max_frame_bytes); send less per request"
                ));
                let reply =
                    serde_json::to_string(&Response::err(Id::Null, error)).unwrap_or_default();
                let _ = replies
                    .send(Outgoing {
                        line: reply,
                        held: vec![turn],
                    })
                    .await;
            }
            Frame::End => break,
        }
    }
    // Replies still being computed hold their own sender; the writer ends after the last one.
    events.abort();
    drop(replies);
    let _ = writer.await;
    engine.connections.fetch_sub(1, Ordering::Relaxed);
    // glibc keeps what such a connection freed, and the daemon would stay at its peak size.
    if bytes_read > 16 << 20 {
        crate::process::release_freed_memory();
    }
}

type Read = (Frame, OwnedSemaphorePermit, Option<OwnedSemaphorePermit>);

/// The next frame once this connection has a free turn, with a turn and room for its bytes;
/// `None` at the end.
async fn next_frame(
    reader: &mut BufReader<tokio::io::ReadHalf<Stream>>,
    limit: usize,
    buf: &mut Vec<u8>,
    budget: &Budget,
) -> std::io::Result<Option<Read>> {
    let Some(turn) = budget.frame().await else {
        return Ok(None);
    };
    let frame = read_frame(reader, limit, buf).await?;
    // A connection that sent large frames leaves its buffer at their size; start small again.
    if buf.capacity() > 1 << 20 {
        *buf = Vec::new();
    }
    let bytes = match &frame {
        Frame::Line(line) => budget.bytes(line.len()).await,
        _ => None,
    };
    Ok(Some((frame, turn, bytes)))
}
