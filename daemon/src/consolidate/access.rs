//! Access folding: each search appends one small `access_log` row per result; here they are
//! summed into `access_count` and `last_accessed_at`. A row only takes events newer than its
//! `last_accessed_at`, so folding the same events twice (after a crash) changes nothing.
//! The codes held for searches take each patch as it commits (`held/nearest/patched.rs`).

use std::collections::HashMap;

use mnemo_protocol::consolidate::{Phase, PhaseRecord};

use super::pace::{Pace, Stop};
use super::{bump, events_cutoff};
use crate::store::filter::takes_accesses;
use crate::store::runs::AccessTally;
use crate::store::{col, WriteOp};

/// (id, new access_count, new last_accessed_at, events folded) for each tally newer than
/// what its row holds.
pub fn folded(
    tallies: &[AccessTally],
    stored: &HashMap<String, (i64, Option<i64>)>,
) -> Vec<(String, i64, i64, i64)> {
    tallies
        .iter()
        .filter_map(|t| {
            let (count, last) = stored.get(&t.memory_id)?;
            takes_accesses(*last, t.last_at)
                .then(|| (t.memory_id.clone(), count + t.count, t.last_at, t.count))
        })
        .collect()
}

pub async fn run(pace: &mut Pace, record: &mut PhaseRecord) -> Result<(), Stop> {
    let ctx = pace.ctx().clone();
    let cutoff = events_cutoff(pace, record).await?;
    let store = &ctx.store;
    let tallies = store.runs().access_tallies(cutoff).await?;
    let total = tallies.len() as u64;
    let batch = ctx.state.config.batch_rows.max(1);
    for (i, chunk) in tallies.chunks(batch).enumerate() {
        pace.checkpoint().await?;
        let ids: Vec<String> = chunk.iter().map(|t| t.memory_id.clone()).collect();
        let stored: HashMap<String, (i64, Option<i64>)> = store
            .columns_of(
                &col("id").one_of(&ids),
                &["id", "access_count", "last_accessed_at"],
            )
            .await?
            .into_iter()
            .map(|r| (r.id, (r.access_count, r.last_accessed_at)))
            .collect();
        let rows = folded(chunk, &stored);
        if !rows.is_empty() {
            let fold: Vec<(&str, i64, i64)> =
                rows.iter().map(|r| (r.0.as_str(), r.1, r.2)).collect();
            let updated = store.writer().submit(store.accesses_patch(&fold)?).await?;
            bump(record, "memories", updated);
        }
        bump(record, "events", rows.iter().map(|r| r.3 as u64).sum());
        pace.progress(
            Phase::Access,
            ((i + 1) * batch).min(total as usize) as u64,
            total,
        );
    }
    let cleared = store
        .writer()
        .submit(WriteOp::DeleteWhere {
            table: store.runs().access_log.clone(),
            predicate: col("at").le(cutoff),
        })
        .await?;
    bump(record, "log_rows_cleared", cleared);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_events_newer_than_the_row_fold() {
        let tallies = vec![
            AccessTally {
                memory_id: "a".into(),
                count: 3,
                last_at: 100,
            },
            AccessTally {
                memory_id: "b".into(),
                count: 2,
                last_at: 50,
            },
            AccessTally {
                memory_id: "gone".into(),
                count: 1,
                last_at: 10,
            },
        ];
        let stored = HashMap::from([
            ("a".to_string(), (4, None)),
            ("b".to_string(), (7, Some(50))), // already folded
        ]);
        assert_eq!(
            folded(&tallies, &stored),
            vec![("a".to_string(), 7, 100, 3)]
        );
    }
}
