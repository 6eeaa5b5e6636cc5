//! Storage: every table is compacted (small fragments from many small commits become few),
//! versions older than the retention are pruned (freeing their files), new rows are folded
//! into the memories' indexes, and the ANN index is built once the table is large enough.
//! A table is one unit; the cursor names the next one, so a resume skips those done.

use lancedb::Table;
use mnemo_protocol::consolidate::{Phase, PhaseRecord};

use crate::store::versions::disk_bytes_off_reactor;

use super::pace::{Pace, Stop};
use super::{bump, save_cursor};

async fn fragments(table: &Table) -> Result<(u64, u64), lancedb::Error> {
    let stats = table.stats().await?;
    Ok((
        stats.fragment_stats.num_fragments as u64,
        stats.total_bytes as u64,
    ))
}

pub async fn run(pace: &mut Pace, record: &mut PhaseRecord) -> Result<(), Stop> {
    let ctx = pace.ctx().clone();
    let retention = ctx.state.config.version_retention_hours;
    let db_dir = ctx.db_dir.clone();
    let tables = ctx.store.tables();
    let start: usize = record
        .cursor
        .as_deref()
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    if start == 0 {
        record.counts.insert(
            "disk_bytes_before".into(),
            disk_bytes_off_reactor(&db_dir).await,
        );
    }
    let lance =
        |e: lancedb::Error| Stop::Failed(crate::store::without_source_locations(&e.to_string()));
    for (i, table) in tables.iter().enumerate().skip(start) {
        pace.checkpoint().await?;
        let (frags, bytes) = fragments(table).await.map_err(lance)?;
        bump(record, "fragments_before", frags);
        bump(record, "bytes_before", bytes);
        // Beside the writer: a write to the same rows makes one of the two try again.
        pace.guard(ctx.store.compact(table)).await??;
        let age = std::time::Duration::from_secs(retention * 3600);
        let pruned = pace.guard(ctx.store.prune(table, age)).await??;
        if let Some(p) = pruned.prune {
            bump(record, "versions_pruned", p.old_versions);
            bump(record, "bytes_pruned", p.bytes_removed);
        }
        if table.name() == crate::store::MEMORIES {
            let has_index = !table.list_indices().await.map_err(lance)?.is_empty();
            if has_index {
                // Idle time makes every index one segment again (each costs every search).
                pace.guard(ctx.store.fold_beside(crate::store::Fold::Whole))
                    .await??;
                bump(record, "indexes_folded", 1);
            }
            let store = ctx.store.clone();
            let built = pace.guard(store.maintain_indexes(usize::MAX)).await??;
            bump(record, "indexes_built", built.len() as u64);
        }
        let (frags, bytes) = fragments(table).await.map_err(lance)?;
        bump(record, "fragments_after", frags);
        bump(record, "bytes_after", bytes);
        record.cursor = Some((i + 1).to_string());
        save_cursor(pace, record).await?;
        pace.progress(Phase::Storage, i as u64 + 1, tables.len() as u64);
    }
    record.counts.insert(
        "disk_bytes_after".into(),
        disk_bytes_off_reactor(&db_dir).await,
    );
    Ok(())
}
