//! Decay and strengthening, as one pass over the current rows. Strength is computed
//! from facts (time since the last access, salience, accesses), not decremented, so running
//! the phase twice gives the same strengths:
//!
//! ```text
//! rate      = 1 + (5 − salience) × 0.1            (salience 0–10: rate 1.5 … 0.5)
//! retention = 0.5 ^ (rate × days since last access (or since added) / half_life_days)
//! boost     = min(0.5, 0.1 × ln(1 + access_count)) (merged duplicates count as accesses)
//! strength  = min(1, retention + boost), halved once summarised
//! ```
//!
//! Rows that fall below `fade_below` get `faded_at`; nothing is deleted. A faded memory that
//! is used again recovers and loses the mark.
//!
//! Only rows whose strength moved by more than [`CHANGED`] (or whose fade mark flips) are
//! written, and only those two columns, patched in place a chunk at a time: an update of the
//! table would rewrite every current row whole, vectors included — 2 GB at 1M memories, and
//! every index would have to take the moved rows in again.

use std::sync::Arc;

use lancedb::arrow::arrow_array::{Float32Array, Int64Array, StringArray};
use mnemo_protocol::consolidate::{Phase, PhaseRecord};
use mnemo_protocol::time::now_micros;

use super::bump;
use super::pace::{Pace, Stop};
use crate::held::id::HeldId;
use crate::store::filter::current;
use crate::store::schema::MemoryRecord;
use crate::store::{Store, StoreError, WriteOp};

const MICROS_PER_DAY: f64 = 86_400_000_000.0;

/// A strength that moved less than this is left as stored (ranking cannot tell); each run
/// measures against the stored value, so what is skipped never adds up.
const CHANGED: f32 = 0.001;

/// Rows per patch commit: each holds the writer while it rewrites two columns of the
/// fragments its rows sit in, so other writes go between.
const PATCH_ROWS: usize = 16_384;

/// What decay reads of each current row.
const FACTS: [&str; 8] = [
    "id",
    "created_at",
    "last_accessed_at",
    "salience",
    "access_count",
    "summarized_by",
    "strength",
    "faded_at",
];

/// The strength formula above, for a memory last used `days_since_access` days ago.
pub fn strength(
    days_since_access: f64,
    salience: f32,
    access_count: i64,
    half_life_days: f64,
) -> f32 {
    let rate = 1.0 + (5.0 - salience as f64) * 0.1;
    let retention = (-std::f64::consts::LN_2 * rate * days_since_access / half_life_days).exp();
    let boost = (0.1 * (1.0 + access_count as f64).ln()).min(0.5);
    (retention + boost).min(1.0) as f32
}

/// The settings a run decays with.
#[derive(Clone, Copy)]
struct Decay {
    now: i64,
    half_life_days: f64,
    fade_below: f32,
}

/// One row's new values, when they differ from what is stored. A first pass at 1M memories
/// holds a million of them until it has patched them all: the id is held in its 16 bytes
/// (40 bytes a change rather than ~90 with the id as text).
#[derive(Debug, PartialEq)]
struct Change {
    id: HeldId,
    strength: f32,
    faded_at: Option<i64>,
}

impl Decay {
    fn change(&self, row: MemoryRecord) -> Option<Change> {
        let since = row.last_accessed_at.unwrap_or(row.created_at);
        let days = (self.now - since) as f64 / MICROS_PER_DAY;
        let factor = if row.summarized_by.is_some() {
            0.5
        } else {
            1.0
        };
        let new = strength(days, row.salience, row.access_count, self.half_life_days) * factor;
        let faded_at = match (row.faded_at, new < self.fade_below) {
            (None, true) => Some(self.now),
            (Some(_), false) => None,
            (kept, _) => kept,
        };
        let moved = (new - row.strength).abs() > CHANGED;
        (moved || faded_at != row.faded_at).then_some(Change {
            id: HeldId::new(&row.id),
            strength: if moved { new } else { row.strength },
            faded_at,
        })
    }
}

/// How many rows a pass changed, and how.
#[derive(Debug, Default, PartialEq)]
struct Tally {
    weakened: u64,
    strengthened: u64,
    faded: u64,
    revived: u64,
}

/// The rows whose strength or fade mark must change, read a batch at a time.
async fn changes(store: &Store, decay: Decay) -> Result<(Vec<Change>, Tally), StoreError> {
    let mut tally = Tally::default();
    let mut changes = Vec::new();
    store
        .each_with_columns(&current(), &FACTS, |row| {
            let (was, was_faded) = (row.strength, row.faded_at.is_some());
            if let Some(change) = decay.change(row) {
                tally.weakened += u64::from(change.strength < was - CHANGED);
                tally.strengthened += u64::from(change.strength > was + CHANGED);
                tally.faded += u64::from(!was_faded && change.faded_at.is_some());
                tally.revived += u64::from(was_faded && change.faded_at.is_none());
                changes.push(change);
            }
        })
        .await?;
    Ok((changes, tally))
}

/// Writes `changes`' two columns, leaving a row closed since it was read as it was.
fn patch(store: &Store, changes: &[Change]) -> Result<WriteOp, StoreError> {
    let ids: StringArray = changes.iter().map(|c| Some(c.id.text())).collect();
    let strengths: Float32Array = changes.iter().map(|c| c.strength).collect();
    let faded: Int64Array = changes.iter().map(|c| c.faded_at).collect();
    store.patch_current(vec![
        ("id", Arc::new(ids)),
        ("strength", Arc::new(strengths)),
        ("faded_at", Arc::new(faded)),
    ])
}

pub async fn run(pace: &mut Pace, record: &mut PhaseRecord) -> Result<(), Stop> {
    let ctx = pace.ctx().clone();
    let config = &ctx.state.config;
    let decay = Decay {
        now: now_micros(),
        half_life_days: config.half_life_days,
        fade_below: config.fade_below,
    };
    let store = &ctx.store;
    let (changes, tally) = pace.guard(changes(store, decay)).await??;
    let total = changes.len() as u64;
    pace.progress(Phase::Decay, 0, total);
    let mut updated = 0;
    for (i, chunk) in changes.chunks(PATCH_ROWS).enumerate() {
        pace.checkpoint().await?;
        let op = patch(store, chunk)?;
        updated += pace.guard(store.writer().submit(op)).await??;
        pace.progress(Phase::Decay, (i * PATCH_ROWS + chunk.len()) as u64, total);
    }
    bump(record, "rows", updated);
    bump(record, "weakened", tally.weakened);
    bump(record, "strengthened", tally.strengthened);
    bump(record, "faded", tally.faded);
    bump(record, "revived", tally.revived);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn salience_slows_decay_and_access_strengthens() {
        let h = 30.0;
        // A fresh memory is at full strength.
        assert_eq!(strength(0.0, 5.0, 0, h), 1.0);
        // At salience 5 it halves in one half-life.
        assert!((strength(30.0, 5.0, 0, h) - 0.5).abs() < 1e-6);
        // High salience decays slower, low salience faster.
        assert!(strength(30.0, 9.0, 0, h) > strength(30.0, 5.0, 0, h));
        assert!(strength(30.0, 1.0, 0, h) < strength(30.0, 5.0, 0, h));
        // Accesses lift it, up to a cap.
        assert!(strength(90.0, 5.0, 10, h) > strength(90.0, 5.0, 0, h));
        assert!(strength(3650.0, 5.0, 1_000_000, h) <= 0.5 + 1e-6);
    }

    const DAY: i64 = MICROS_PER_DAY as i64;

    fn row(id: &str, days: i64, salience: f32, stored: f32, now: i64) -> MemoryRecord {
        let mut r = crate::store::schema::tests::record(id, "text", 4);
        r.created_at = now - days * DAY;
        r.salience = salience;
        r.strength = stored;
        r.faded_at = None;
        r
    }

    #[test]
    fn only_rows_whose_strength_moved_or_fade_mark_flips_change() {
        let now = 1_000 * DAY;
        let decay = Decay {
            now,
            half_life_days: 30.0,
            fade_below: 0.1,
        };
        // Fresh and at full strength, or already at its strength: nothing to write.
        assert_eq!(decay.change(row("fresh", 0, 5.0, 1.0, now)), None);
        assert_eq!(decay.change(row("same", 30, 5.0, 0.5, now)), None);
        assert_eq!(decay.change(row("close", 30, 5.0, 0.5005, now)), None);
        // A month at salience 5 halves it; a summarised memory is halved again.
        let month = decay.change(row("month", 30, 5.0, 1.0, now)).unwrap();
        assert!((month.strength - 0.5).abs() < 1e-6 && month.faded_at.is_none());
        let mut summarised = row("summarised", 30, 5.0, 1.0, now);
        summarised.summarized_by = Some("s".into());
        assert!((decay.change(summarised).unwrap().strength - 0.25).abs() < 1e-6);
        // Below the line it is marked faded, once; used again it loses the mark.
        let weak = decay.change(row("weak", 300, 5.0, 0.2, now)).unwrap();
        assert_eq!(weak.faded_at, Some(now));
        let mut marked = row("marked", 300, 5.0, weak.strength, now);
        marked.faded_at = Some(now - DAY);
        assert_eq!(decay.change(marked), None);
        let mut used = row("used", 300, 5.0, weak.strength, now);
        used.faded_at = Some(now - DAY);
        used.last_accessed_at = Some(now);
        let used = decay.change(used).unwrap();
        assert_eq!((used.strength, used.faded_at), (1.0, None));
    }

    /// A pass writes the documented strengths into the rows that moved, leaves their other
    /// columns as they were, and a second pass finds nothing to write.
    #[tokio::test]
    async fn a_pass_patches_the_rows_that_moved_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::test_store(dir.path()).await;
        let now = now_micros();
        let cases = [
            (0, 5.0, 0),
            (30, 5.0, 0),
            (30, 9.0, 0),
            (30, 1.0, 0),
            (90, 5.0, 20),
        ];
        let rows: Vec<_> = cases
            .iter()
            .enumerate()
            .map(|(i, (days, salience, accesses))| {
                let mut r = row(&format!("m{i}"), *days, *salience, 1.0, now);
                r.access_count = *accesses;
                r.vector = vec![i as f32 + 1.0, 0.5, 0.25, 0.125];
                r
            })
            .collect();
        store.writer().submit(WriteOp::Insert(rows)).await.unwrap();
        let decay = Decay {
            now,
            half_life_days: 30.0,
            fade_below: 0.1,
        };
        let (found, tally) = changes(&store, decay).await.unwrap();
        // The fresh memory keeps its full strength and is not written.
        let ids: Vec<String> = found.iter().map(|c| c.id.text()).collect();
        assert_eq!(ids, ["m1", "m2", "m3", "m4"]);
        assert_eq!(tally.weakened, 4);
        let op = patch(&store, &found).unwrap();
        assert_eq!(store.writer().submit(op).await.unwrap(), 4);
        for (i, (days, salience, accesses)) in cases.iter().enumerate() {
            let got = store.get(&format!("m{i}")).await.unwrap().unwrap();
            let want = strength(*days as f64, *salience, *accesses, 30.0);
            assert!(
                (got.strength - want).abs() < 1e-4,
                "m{i}: {} vs {want}",
                got.strength
            );
            assert_eq!(got.content, "text");
            let vector = store
                .columns_of(&crate::store::col("id").eq(got.id.as_str()), &["vector"])
                .await
                .unwrap();
            assert_eq!(vector[0].vector, vec![i as f32 + 1.0, 0.5, 0.25, 0.125]);
        }
        let (again, _) = changes(&store, decay).await.unwrap();
        assert!(again.is_empty(), "{again:?}");
    }
}
