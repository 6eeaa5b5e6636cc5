//! What request handlers reach: the engine's components, each behind its own handle, plus
//! the server's own counters. Only the server holds this; components never see it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mnemo_protocol::daemon::{Counters, QueueDepths};
use mnemo_protocol::RpcError;

use crate::agent::Agent;
use crate::consolidate::Consolidation;
use crate::context::ContextBuilder;
use crate::embed::EmbedService;
use crate::error::Error;
use crate::events::EventBus;
use crate::graph::{EntityBook, Graph};
use crate::hardware::Monitor;
use crate::ingest::Ingest;
use crate::living::Living;
use crate::recall::Recall;
use crate::sessions::Sessions;
use crate::shutdown::Shutdown;
use crate::status::Health;
use crate::store::{Store, StoreError};
use crate::usermodel::UserModel;

/// The server's settings.
pub struct Limits {
    pub max_frame_bytes: usize,
    pub max_in_flight: usize,
    pub data_dir: String,
    pub socket: String,
}

pub struct State {
    pub limits: Limits,
    pub ingest: Arc<Ingest>,
    pub recall: Arc<Recall>,
    pub graph: Arc<Graph>,
    pub entities: Arc<EntityBook>,
    pub usermodel: Arc<UserModel>,
    pub sessions: Arc<Sessions>,
    pub agent: Arc<Agent>,
    pub watch: Arc<crate::watch::Watch>,
    pub context: Arc<ContextBuilder>,
    pub living: Arc<Living>,
    pub store: Arc<Store>,
    /// What searches hold in memory, for status.
    pub held: Arc<crate::held::Held>,
    /// Index maintenance, for status.
    pub maintenance: Arc<crate::maintenance::Maintenance>,
    pub embed: EmbedService,
    pub hardware: Arc<Monitor>,
    pub consolidation: Arc<Consolidation>,
    pub health: Health,
    pub events: EventBus,
    pub shutdown: Shutdown,
    pub in_flight: AtomicUsize,
    pub connections: AtomicUsize,
}

impl State {
    pub fn counters(&self) -> Counters {
        Counters {
            memories_added: self.ingest.added(),
            searches: self.recall.searches(),
        }
    }

    /// Encrypts the store at rest: the memories, then every derived table written again
    /// sealed. Answers how many memories were sealed.
    pub async fn encrypt(&self) -> Result<u64, Error> {
        let sealed = self.ingest.encrypt().await?;
        self.sessions.reseal().await?;
        self.living.reseal().await?;
        self.agent.reseal().await?;
        Ok(sealed)
    }

    /// After a forget, nothing derived may still quote what was forgotten: sessions rewrite
    /// the summaries that did, procedures are learned again from the episodes that remain,
    /// and the living summaries are dropped until the next run writes them again.
    pub async fn forgotten(&self) -> Result<(), Error> {
        self.sessions.forgotten().await?;
        let settings = self.agent.learning(mnemo_protocol::time::now_micros());
        self.agent.forgotten(&settings).await?;
        self.living.clear().await?;
        self.consolidation.mark_dirty();
        Ok(())
    }

    pub fn queues(&self) -> QueueDepths {
        QueueDepths {
            in_flight_requests: self.in_flight.load(Ordering::Relaxed),
            pending_writes: self.store.writer().pending(),
            pending_embeds: self.embed.pending(),
            connections: self.connections.load(Ordering::Relaxed),
        }
    }
}

/// One page of the rows `predicate` matches, newest id first, and the cursor of the next
/// (none when this one is the last).
pub async fn memory_page(
    engine: &State,
    predicate: &crate::store::Pred,
    cursor: Option<&str>,
    limit: usize,
) -> Result<(Vec<crate::store::MemoryRecord>, Option<String>), RpcError> {
    let rows = engine
        .store
        .page(predicate, cursor, limit)
        .await
        .map_err(store_error)?;
    let next_cursor = (rows.len() == limit)
        .then(|| rows.last().map(|r| r.id.clone()))
        .flatten();
    Ok((rows, next_cursor))
}

/// A request slot, held while the request is handled and given back on drop, so a handler
/// that panics still frees its slot.
pub struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    /// A slot, unless `max` are taken.
    pub fn acquire(count: &'a AtomicUsize, max: usize) -> Option<Self> {
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| Self(count))
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The one place domain errors become JSON-RPC errors.
pub fn rpc_error(e: Error) -> RpcError {
    match e {
        Error::Invalid(m) => RpcError::invalid_params(m),
        Error::NotFound(m) => RpcError::not_found(m),
        Error::Conflict(m) => RpcError::conflict(m),
        Error::Store(e) => store_error(e),
        Error::Embed(crate::embed::EmbedError::Stopped) => RpcError::shutting_down(),
        Error::Embed(e) => RpcError::embedder_unavailable(e.to_string()),
    }
}

pub fn store_error(e: StoreError) -> RpcError {
    match e {
        StoreError::Closed => RpcError::shutting_down(),
        StoreError::Conflict(m) => RpcError::conflict(m),
        other => {
            tracing::warn!("storage error: {other}");
            RpcError::storage(format!(
                "{}; see mnemod's log for details",
                crate::store::without_source_locations(&other.to_string())
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_limited_and_given_back_even_on_panic() {
        let count = AtomicUsize::new(0);
        let a = InFlight::acquire(&count, 2).unwrap();
        let _b = InFlight::acquire(&count, 2).unwrap();
        assert!(InFlight::acquire(&count, 2).is_none());
        drop(a);
        assert_eq!(count.load(Ordering::Relaxed), 1);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _slot = InFlight::acquire(&count, 2).unwrap();
            panic!("a handler fell over");
        }));
        assert!(panicked.is_err());
        assert_eq!(count.load(Ordering::Relaxed), 1);
    }
}
