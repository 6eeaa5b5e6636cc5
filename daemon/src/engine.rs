//! The engine: every component a request handler may use, built once by [`crate::daemon`].

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use mnemo_client::protocol::daemon::{
    ComponentHealth, ComponentState, Counters, MemoryCounts, QueueDepths,
};
use tokio::sync::{watch, Mutex};

use crate::config::Config;
use crate::consolidate::Consolidation;
use crate::embed::EmbedService;
use crate::events::EventBus;
use crate::hardware::Monitor;
use crate::store::Store;

pub struct Engine {
    pub config: Config,
    pub store: Arc<Store>,
    pub embed: EmbedService,
    pub events: EventBus,
    pub hardware: Arc<Monitor>,
    pub consolidation: Consolidation,
    /// What is stored, for the duplicate check at add.
    pub known: crate::ingest::KnownContent,
    pub started: Instant,
    /// Flips to true once; everything that loops watches it.
    pub shutdown: watch::Sender<bool>,
    pub in_flight: AtomicUsize,
    /// Memories added and searches answered since start.
    pub added: AtomicU64,
    pub searches: AtomicU64,
    pub connections: AtomicUsize,
    /// Updates read a row, then close it; one at a time so two cannot close the same row.
    pub update_lock: Mutex<()>,
}

impl Engine {
    pub fn new(
        config: Config,
        store: Arc<Store>,
        embed: EmbedService,
        events: EventBus,
        hardware: Arc<Monitor>,
    ) -> Arc<Self> {
        Arc::new(Self {
            consolidation: Consolidation::new(config.consolidate.clone()),
            known: Default::default(),
            config,
            store,
            embed,
            events,
            hardware,
            started: Instant::now(),
            shutdown: watch::channel(false).0,
            in_flight: AtomicUsize::new(0),
            added: AtomicU64::new(0),
            searches: AtomicU64::new(0),
            connections: AtomicUsize::new(0),
            update_lock: Mutex::new(()),
        })
    }

    pub fn request_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    /// Resolves once shutdown is requested.
    pub async fn stopped(&self) {
        let mut rx = self.shutdown.subscribe();
        let _ = rx.wait_for(|stop| *stop).await;
    }

    pub fn is_shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// The embedder's name as users see it, marked when degraded.
    pub fn embedder_label(&self) -> String {
        let e = self.embed.embedder();
        match e.degraded() {
            Some(_) => format!("{} (degraded)", e.model_id()),
            None => e.model_id().to_string(),
        }
    }

    pub fn components(&self) -> Vec<ComponentState> {
        let e = self.embed.embedder();
        let (state, detail) = match e.degraded() {
            Some(why) => (ComponentHealth::Degraded, why),
            None => (
                ComponentHealth::Ok,
                format!("{} ({} dimensions)", e.model_id(), e.dim()),
            ),
        };
        vec![
            ComponentState {
                name: "embedder".into(),
                state,
                detail,
            },
            ComponentState {
                name: "store".into(),
                state: ComponentHealth::Ok,
                detail: format!("LanceDB at {}", self.config.db_dir().display()),
            },
            ComponentState {
                name: "hardware".into(),
                state: ComponentHealth::Ok,
                detail: format!(
                    "snapshots every {} s; GPU: {}",
                    self.hardware.config.snapshot_interval_secs,
                    self.hardware.gpu_status()
                ),
            },
            ComponentState {
                name: "server".into(),
                state: if self.is_shutting_down() {
                    ComponentHealth::Degraded
                } else {
                    ComponentHealth::Ok
                },
                detail: if self.is_shutting_down() {
                    "shutting down".into()
                } else {
                    "accepting".into()
                },
            },
        ]
    }

    pub fn counters(&self) -> Counters {
        Counters {
            memories_added: self.added.load(Ordering::Relaxed),
            searches: self.searches.load(Ordering::Relaxed),
        }
    }

    /// Current memories by kind (one pass over the `kind` column).
    pub async fn memory_counts(&self) -> Result<MemoryCounts, crate::store::StoreError> {
        let rows = self
            .store
            .columns_of("valid_to IS NULL".into(), &["kind"])
            .await?;
        let mut counts = MemoryCounts::default();
        for r in rows {
            counts.total += 1;
            *counts.by_kind.entry(r.kind.to_string()).or_default() += 1;
        }
        Ok(counts)
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
