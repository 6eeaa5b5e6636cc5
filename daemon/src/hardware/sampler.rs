//! The hardware component's loops: the profile at start and on change, a snapshot every
//! interval (batched into the store), the inventory every few snapshots, and downsampling.

use std::sync::Arc;
use std::time::Duration;

use mnemo_protocol::system::Snapshot;
use mnemo_protocol::time::now_micros;

use super::downsample::downsample;
use super::{DaemonCounts, Monitor};
use crate::embed::EmbedService;
use crate::events::{Event, EventBus};
use crate::shutdown::Shutdown;
use crate::store::system::{processes_batch, profile_batch, snapshots_batch, MINUTE, RAW};
use crate::store::{col, Store, StoreError, WriteOp};

const HOUR_US: i64 = 3_600_000_000;
/// How often the profile is checked for changes and old snapshots downsampled.
const HOUSEKEEPING_EVERY: Duration = Duration::from_secs(600);

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
}

/// The hardware component's handles: what it samples into, and the queues a snapshot reports.
#[derive(Clone)]
pub struct Sampler {
    pub monitor: Arc<Monitor>,
    pub store: Arc<Store>,
    pub embed: EmbedService,
    pub events: EventBus,
    pub shutdown: Shutdown,
    /// Sessions open now, kept by the sessions component.
    pub active_sessions: Arc<std::sync::atomic::AtomicU64>,
}

/// Runs until shutdown, then writes the snapshots still in memory. The inventory (with its
/// network probes) runs on a task of its own so it never delays a snapshot.
impl Sampler {
    pub async fn run(self) {
        run(self).await
    }
}

async fn run(engine: Sampler) {
    let monitor = engine.monitor.clone();
    let config = monitor.config.clone();
    check_profile(&engine).await;
    match engine
        .store
        .system()
        .process_first_seen(now_micros() - process_retention_us(&engine))
        .await
    {
        Ok(seen) => monitor.remember_first_seen(seen),
        Err(e) => tracing::debug!("reading the stored process inventory failed: {e}"),
    }
    let inventory = tokio::spawn(inventory_loop(engine.clone()));
    let mut snapshots =
        tokio::time::interval(Duration::from_secs(config.snapshot_interval_secs.max(1)));
    let mut housekeeping = tokio::time::interval(HOUSEKEEPING_EVERY);
    for tick in [&mut snapshots, &mut housekeeping] {
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    }
    loop {
        tokio::select! {
            _ = engine.shutdown.requested() => break,
            _ = snapshots.tick() => {
                let counts = DaemonCounts {
                    memory_count: Some(engine.store.memory_counts().total),
                    active_sessions: Some(engine.active_sessions.load(std::sync::atomic::Ordering::Relaxed)),
                    pending_work: Some((engine.store.writer().pending() + engine.embed.pending()) as u64),
                };
                let m = monitor.clone();
                let Some(snapshot) = blocking(move || m.take_snapshot(counts)).await else { continue };
                let _ = engine.events.send(Event::Snapshot(Box::new(snapshot.clone())));
                let full = monitor.record(snapshot, false);
                write_snapshots(&engine, full).await;
            }
            _ = housekeeping.tick() => {
                check_profile(&engine).await;
                if let Err(e) = fold_old_snapshots(&engine).await {
                    tracing::warn!("downsampling snapshots failed: {e}");
                }
                if let Err(e) = prune_processes(&engine, now_micros()).await {
                    tracing::warn!("pruning the process inventory failed: {e}");
                }
            }
        }
    }
    inventory.abort();
    write_snapshots(&engine, monitor.take_unflushed()).await;
}

fn process_retention_us(engine: &Sampler) -> i64 {
    engine.monitor.config.process_retention_days as i64 * 24 * HOUR_US
}

/// Process lives not seen for the retention are forgotten.
async fn prune_processes(engine: &Sampler, now: i64) -> Result<u64, StoreError> {
    let cutoff = now - process_retention_us(engine);
    engine
        .store
        .writer()
        .submit(WriteOp::DeleteWhere {
            table: engine.store.system().processes.clone(),
            predicate: col("last_seen").lt(cutoff),
        })
        .await
}

/// Every process interval: take the inventory, probe inference servers.
async fn inventory_loop(engine: Sampler) {
    let mut tick = tokio::time::interval(Duration::from_secs(
        engine.monitor.config.process_interval_secs.max(1),
    ));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let m = engine.monitor.clone();
        let Some(entries) = blocking(move || m.take_inventory()).await else {
            continue;
        };
        if let Ok(batch) = processes_batch(&entries) {
            let table = engine.store.system().processes.clone();
            if let Err(e) = engine
                .store
                .writer()
                .submit(WriteOp::Merge {
                    table,
                    on: "key",
                    batch,
                })
                .await
            {
                tracing::warn!("writing the process inventory failed: {e}");
            }
            // The merge ran DataFusion's join and Lance's writing code: ~60 MB of mnemod's
            // own pages that stayed mapped until the next maintenance pass.
            crate::process::drop_code_pages();
        }
    }
}

async fn write_snapshots(engine: &Sampler, rows: Vec<Snapshot>) {
    if rows.is_empty() {
        return;
    }
    match snapshots_batch(&rows, RAW) {
        Ok(batch) => {
            let table = engine.store.system().snapshots.clone();
            if let Err(e) = engine
                .store
                .writer()
                .submit(WriteOp::Append { table, batch })
                .await
            {
                tracing::warn!("writing {} snapshots failed: {e}", rows.len());
            }
        }
        Err(e) => tracing::warn!("encoding snapshots failed: {e}"),
    }
    // A minute's append ran Lance's writing code, which nothing a person waits for needs
    // mapped until the next (see `drop_code_pages`).
    crate::process::drop_code_pages();
}

/// Detects the profile, and stores it when it differs from the last one stored.
async fn check_profile(engine: &Sampler) {
    let m = engine.monitor.clone();
    let Some(profile) = blocking(move || m.detect_profile()).await else {
        return;
    };
    let known = match engine.monitor.profile() {
        Some(p) => Some(p),
        None => engine.store.system().latest_profile().await.unwrap_or(None),
    };
    if !known.as_ref().is_some_and(|k| k.same_machine(&profile)) {
        tracing::info!("system profile: {}", profile.constraints.reason);
        if let Ok(batch) = profile_batch(&profile) {
            let table = engine.store.system().profiles.clone();
            if let Err(e) = engine
                .store
                .writer()
                .submit(WriteOp::Append { table, batch })
                .await
            {
                tracing::warn!("writing the system profile failed: {e}");
            }
        }
    }
    if engine.monitor.profile().is_none() {
        tracing::info!("GPU: {}", profile.gpu_status);
    }
    engine.monitor.set_profile(profile);
}

/// Raw snapshots past the retention become minute averages; minute rows past theirs go.
async fn fold_old_snapshots(engine: &Sampler) -> Result<(), StoreError> {
    let config = &engine.monitor.config;
    let tables = engine.store.system();
    let raw_cutoff = now_micros() - config.raw_retention_hours as i64 * HOUR_US;
    // Fold whole minutes only, so a minute is never split between two rows.
    let raw_cutoff = raw_cutoff - raw_cutoff.rem_euclid(60_000_000);
    let old = tables.raw_snapshots_before(raw_cutoff).await?;
    if !old.is_empty() {
        let minutes = downsample(&old, 60);
        let batch = snapshots_batch(&minutes, MINUTE)?;
        let writer = engine.store.writer();
        writer
            .submit(WriteOp::Append {
                table: tables.snapshots.clone(),
                batch,
            })
            .await?;
        let predicate = col("resolution").eq(RAW).and(col("at").lt(raw_cutoff));
        writer
            .submit(WriteOp::DeleteWhere {
                table: tables.snapshots.clone(),
                predicate,
            })
            .await?;
        tracing::info!(
            "folded {} snapshots into {} minute rows",
            old.len(),
            minutes.len()
        );
    }
    let minute_cutoff = now_micros() - config.minute_retention_days as i64 * 24 * HOUR_US;
    let predicate = col("resolution")
        .eq(MINUTE)
        .and(col("at").lt(minute_cutoff));
    engine
        .store
        .writer()
        .submit(WriteOp::DeleteWhere {
            table: tables.snapshots.clone(),
            predicate,
        })
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::HashedEmbedder;
    use mnemo_protocol::system::ProcessEntry;
    use mnemo_protocol::time::format_micros;

    #[tokio::test]
    async fn old_process_lives_are_pruned_and_first_sightings_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::test_store(dir.path()).await;
        let sampler = Sampler {
            monitor: Arc::new(super::super::tests::monitor(10.0)),
            store: store.clone(),
            embed: EmbedService::start(Arc::new(HashedEmbedder::chosen()), 8, 1).unwrap(),
            events: crate::events::bus(),
            shutdown: Shutdown::default(),
            active_sessions: Default::default(),
        };
        let now = now_micros();
        let day = 24 * HOUR_US;
        let life = |pid: u32, last: i64| ProcessEntry {
            pid,
            name: format!("p{pid}"),
            category: "user_app".into(),
            first_seen: format_micros(last - day),
            last_seen: format_micros(last),
            ..Default::default()
        };
        let batch = processes_batch(&[
            ("gone-1".into(), life(1, now - 8 * day)),
            ("alive-2".into(), life(2, now - 60_000_000)),
        ])
        .unwrap();
        let table = store.system().processes.clone();
        store
            .writer()
            .submit(WriteOp::Merge {
                table,
                on: "key",
                batch,
            })
            .await
            .unwrap();
        assert_eq!(prune_processes(&sampler, now).await.unwrap(), 1);
        let seen = store
            .system()
            .process_first_seen(now - process_retention_us(&sampler))
            .await
            .unwrap();
        assert_eq!(seen.keys().collect::<Vec<_>>(), ["alive-2"]);
        assert_eq!(
            seen["alive-2"],
            format_micros(now - 60_000_000 - day),
            "the first sighting survives"
        );
    }
}
