//! Index maintenance: the background component that keeps the memories' indexes useful as
//! rows arrive and the search index held in memory current. A pass every 20 s folds new rows
//! into the indexes, merges small fragments, builds and trains the ANN index, prunes old
//! versions and reads again what commits left unknown to the index held in memory; a fold
//! comes at once when the writer asks for one, and a purge a short while after each forget
//! (forgets close together share one). The store does each job, since each commits through
//! its writer; this component decides when, and keeps what it last saw for status.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mnemo_protocol::daemon::IndexStatus;
use tokio::time::Instant;

use crate::events::{Event, EventBus};
use crate::held::Held;
use crate::shutdown::Shutdown;
use crate::store::beside::Fold;
use crate::store::indexes::IndexState;
use crate::store::indexes::FOLD_EACH_PASS_AFTER_ROWS;
use crate::store::rewrite::BOOKKEEPING_VERSIONS_KEPT;
use crate::store::versions::{VersionBound, WithinBound};
use crate::store::Store;

/// How often index maintenance looks for new rows to fold in.
const MAINTENANCE_EVERY: Duration = Duration::from_secs(20);

pub struct Maintenance {
    store: Arc<Store>,
    held: Arc<Held>,
    events: EventBus,
    /// The indexes as the last pass found them, for status.
    last: Mutex<Option<IndexStatus>>,
}

/// What a pass carries to the next.
#[derive(Default)]
struct Passes {
    /// When the memories' old versions were last pruned (None: never, so the first pass
    /// prunes: a daemon restarted daily would otherwise seldom reach it).
    last_prune: Option<Instant>,
    within_bound: WithinBound,
}

impl Maintenance {
    pub fn new(held: Arc<Held>, events: EventBus) -> Arc<Self> {
        Arc::new(Self {
            store: held.store().clone(),
            held,
            events,
            last: Mutex::new(None),
        })
    }

    /// The indexes as the last look at them found them.
    pub fn last_index_state(&self) -> Option<IndexStatus> {
        self.last.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Keeps `state` for status, with what is held in memory now.
    fn record(&self, state: &IndexState) {
        let status = IndexStatus {
            rows: state.rows as u64,
            ann: state.has_vector_index,
            ann_min_rows: state.ann_min_rows as u64,
            unindexed_rows: state.unindexed_rows as u64,
            settled: state.settled && self.held.placed(),
            held_vectors: self.held.vector_rows().map(|n| n as u64),
            held_vector_signs: self.held.signed(),
        };
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(status);
    }

    /// The maintenance task: a pass every [`MAINTENANCE_EVERY`], a fold whenever the writer
    /// asks, and a purge a short while after each forget; a purge still pending at shutdown
    /// runs then. Every hour the memories' versions older than `memory_versions_kept` are
    /// pruned too: consolidation prunes them while idle, but a store that is never idle
    /// would otherwise keep every index file each fold replaced. `available_memory` is what
    /// the machine has to spare as the hardware sampler last saw it.
    pub async fn run(
        self: Arc<Self>,
        memory_versions_kept: Duration,
        available_memory: impl Fn() -> Option<u64>,
        shutdown: Shutdown,
    ) {
        let store = &self.store;
        let mut passes = Passes::default();
        let mut tick = tokio::time::interval(MAINTENANCE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let purge_delay = Duration::from_secs(store.config().purge_after_forget_secs);
        let mut purge_due: Option<Instant> = None;
        loop {
            let purge_at = purge_due.unwrap_or_else(|| Instant::now() + MAINTENANCE_EVERY);
            // Whether the arm taken ran Lance's code (all but noting a forget).
            let worked = tokio::select! {
                _ = shutdown.requested() => break,
                _ = store.fold_requested() => {
                    match store.fold_beside(Fold::Segment).await {
                        Ok(done) => self.publish_all(done),
                        Err(e) => tracing::warn!("folding new rows into the indexes failed (retried later): {e}"),
                    }
                    true
                }
                _ = store.purge_requested() => {
                    purge_due.get_or_insert_with(|| Instant::now() + purge_delay);
                    false
                }
                _ = tokio::time::sleep_until(purge_at), if purge_due.is_some() => {
                    purge_due = None;
                    self.purge().await;
                    true
                }
                _ = tick.tick() => {
                    self.pass(&mut passes, memory_versions_kept, &available_memory).await;
                    true
                }
            };
            // A pass, fold or purge runs much of Lance's code that searches never run, and
            // each page run stays mapped: they are let go.
            if worked {
                let bytes = crate::process::drop_code_pages();
                tracing::trace!(
                    "let go of mnemod's own code pages ({} MB mapped)",
                    bytes >> 20
                );
            }
        }
        if purge_due.is_some() {
            self.purge().await;
        }
    }

    /// One pass: the indexes, the ANN index, what is held in memory, the bookkeeping tables
    /// and old versions.
    async fn pass(
        &self,
        passes: &mut Passes,
        memory_versions_kept: Duration,
        available_memory: &impl Fn() -> Option<u64>,
    ) {
        let store = &self.store;
        let mut state = Box::pin(store.index_state()).await;
        let mut changed = false;
        match &state {
            Ok(read) => {
                match Box::pin(store.maintain_indexes_as(read, FOLD_EACH_PASS_AFTER_ROWS)).await {
                    Ok(done) => {
                        changed |= !done.is_empty();
                        self.publish_all(done);
                    }
                    Err(e) => tracing::warn!("index maintenance failed: {e}"),
                }
            }
            Err(e) => tracing::warn!("reading the index state failed: {e}"),
        }
        // In this task, so no purge (which deletes unreferenced files) runs during a build.
        match Box::pin(store.maintain_vector_index()).await {
            Ok(done) => {
                changed |= done.is_some();
                self.publish_all(done);
            }
            Err(e) => tracing::warn!("building the ANN index failed (retried later): {e}"),
        }
        if let Err(e) = Box::pin(self.held.refresh()).await {
            tracing::warn!("reading what searches hold in memory failed (retried next pass): {e}");
        }
        // The kernel lets the codes' files go from its cache unless they are read; they are
        // asked back while a quarter of the memory available holds them.
        if let Some(available) = available_memory() {
            let bytes = self.held.keep_files_cached(available / 4);
            tracing::trace!(
                "asked the kernel to keep {} MB of codes cached",
                bytes >> 20
            );
        }
        // Status shows the indexes as they are after this pass: read again only where the
        // pass changed them.
        if changed {
            state = Box::pin(store.index_state()).await;
        }
        match &state {
            Ok(state) => self.record(state),
            Err(e) if changed => tracing::warn!("reading the index state failed: {e}"),
            Err(_) => {}
        }
        let prune = passes
            .last_prune
            .is_none_or(|t| t.elapsed() >= BOOKKEEPING_VERSIONS_KEPT);
        let older_than = prune.then_some(BOOKKEEPING_VERSIONS_KEPT);
        match Box::pin(store.tidy_bookkeeping(older_than)).await {
            Ok(done) => self.publish_all(done),
            Err(e) => tracing::warn!("tidying the bookkeeping tables failed: {e}"),
        }
        // After the values held for searches were read again above: they point into the
        // files the current version uses.
        match Box::pin(store.bound_old_versions(VersionBound::default(), &mut passes.within_bound))
            .await
        {
            Ok(pruned) if !pruned.is_empty() => {
                self.publish("pruned old versions that outgrew their tables")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("pruning old versions for disk failed: {e}"),
        }
        // What a pass, a fold or a large read freed goes back to the system.
        crate::process::release_freed_memory();
        if prune {
            passes.last_prune = Some(Instant::now());
            match Box::pin(store.prune_memory_versions(memory_versions_kept)).await {
                Ok(pruned) if pruned > 0 => self.publish("pruned old memory versions"),
                Ok(_) => {}
                Err(e) => tracing::warn!("pruning old memory versions failed: {e}"),
            }
        }
    }

    async fn purge(&self) {
        match self.store.purge().await {
            Ok(versions) => {
                tracing::info!("purged forgotten content ({versions} old versions removed)");
                self.publish("purged forgotten content");
            }
            Err(e) => {
                tracing::warn!(
                    "purging forgotten content failed (retried after the next forget): {e}"
                )
            }
        }
    }

    fn publish_all(&self, done: impl IntoIterator<Item = &'static str>) {
        done.into_iter().for_each(|what| self.publish(what));
    }

    fn publish(&self, what: &'static str) {
        tracing::info!("index maintenance: {what}");
        let _ = self
            .events
            .send(Event::IndexMaintained { what: what.into() });
    }
}
