//! The hardware component's loops: the profile at start and on change, a snapshot every
//! interval (batched into the store), the inventory every few snapshots, and downsampling.

use std::sync::Arc;
use std::time::Duration;

use mnemo_client::protocol::system::Snapshot;
use mnemo_client::protocol::time::now_micros;

use super::downsample::downsample;
use super::DaemonCounts;
use crate::engine::Engine;
use crate::events::Event;
use crate::store::system::{processes_batch, profile_batch, snapshots_batch, MINUTE, RAW};
use crate::store::WriteOp;

const HOUR_US: i64 = 3_600_000_000;
/// How often the profile is checked for changes and old snapshots downsampled.
const HOUSEKEEPING_EVERY: Duration = Duration::from_secs(600);

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
}

/// Runs until shutdown, then writes the snapshots still in memory. The inventory (with its
/// network probes) runs on a task of its own so it never delays a snapshot.
pub async fn run(engine: Arc<Engine>) {
    let monitor = engine.hardware.clone();
    let config = monitor.config.clone();
    check_profile(&engine).await;
    let inventory = tokio::spawn(inventory_loop(engine.clone()));
    let mut snapshots =
        tokio::time::interval(Duration::from_secs(config.snapshot_interval_secs.max(1)));
    let mut housekeeping = tokio::time::interval(HOUSEKEEPING_EVERY);
    for tick in [&mut snapshots, &mut housekeeping] {
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    }
    loop {
        tokio::select! {
            _ = engine.stopped() => break,
            _ = snapshots.tick() => {
                let q = engine.queues();
                let counts = DaemonCounts {
                    memory_count: monitor.memory_count(),
                    active_sessions: None,
                    pending_work: Some((q.pending_writes + q.pending_embeds) as u64),
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
            }
        }
    }
    inventory.abort();
    write_snapshots(&engine, monitor.take_unflushed()).await;
}

/// Every process interval: count memories, take the inventory, probe inference servers.
async fn inventory_loop(engine: Arc<Engine>) {
    let mut tick = tokio::time::interval(Duration::from_secs(
        engine.hardware.config.process_interval_secs.max(1),
    ));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let count = engine
            .store
            .count(Some("valid_to IS NULL".into()))
            .await
            .ok()
            .map(|n| n as u64);
        engine.hardware.set_memory_count(count);
        let m = engine.hardware.clone();
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
        }
    }
}

async fn write_snapshots(engine: &Engine, rows: Vec<Snapshot>) {
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
}

/// Detects the profile, and stores it when it differs from the last one stored.
async fn check_profile(engine: &Arc<Engine>) {
    let m = engine.hardware.clone();
    let Some(profile) = blocking(move || m.detect_profile()).await else {
        return;
    };
    let known = match engine.hardware.profile() {
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
    if engine.hardware.profile().is_none() {
        tracing::info!("GPU: {}", profile.gpu_status);
    }
    engine.hardware.set_profile(profile);
}

/// Raw snapshots past the retention become minute averages; minute rows past theirs go.
async fn fold_old_snapshots(engine: &Engine) -> Result<(), crate::store::StoreError> {
    let config = &engine.hardware.config;
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
        let predicate = format!("resolution = '{RAW}' AND at < {raw_cutoff}");
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
    let predicate = format!("resolution = '{MINUTE}' AND at < {minute_cutoff}");
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
