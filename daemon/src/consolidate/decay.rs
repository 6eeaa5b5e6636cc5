//! Decay and strengthening, as one update over the current rows. Strength is computed
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

use mnemo_protocol::consolidate::{Phase, PhaseRecord};
use mnemo_protocol::time::now_micros;

use super::bump;
use super::pace::{Pace, Stop};
use crate::store::filter::current;
use crate::store::{col, Expr, SqlType, WriteOp};

const MICROS_PER_DAY: f64 = 86_400_000_000.0;

/// The strength formula above as an expression over a row, at time `now`, times `factor`
/// (0.5 for memories a summary stands in for; LanceDB's SQL has no CASE, so the two groups
/// are updated apart).
pub fn strength_expr(now: i64, half_life_days: f64, factor: f64) -> Expr {
    let days =
        (Expr::Int(now) - col("last_accessed_at").coalesce(col("created_at"))) / MICROS_PER_DAY;
    let rate = Expr::Float(1.0) + (Expr::Float(5.0) - col("salience").cast(SqlType::Double)) * 0.1;
    let retention = (Expr::Float(-std::f64::consts::LN_2) * rate * days / half_life_days).exp();
    let boost = Expr::Float(0.5)
        .least((Expr::Float(1.0) + col("access_count").cast(SqlType::Double)).ln() * 0.1);
    (Expr::Float(1.0).least(retention + boost) * factor).cast(SqlType::Float)
}

/// The same formula in Rust: the unit tests hold the SQL to it.
#[cfg(test)]
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

pub async fn run(pace: &mut Pace, record: &mut PhaseRecord) -> Result<(), Stop> {
    let ctx = pace.ctx().clone();
    let config = &ctx.state.config;
    let now = now_micros();
    let store = &ctx.store;
    let writer = store.writer();
    let groups = [
        (current().and(col("summarized_by").null()), 1.0),
        (current().and(col("summarized_by").not_null()), 0.5),
    ];
    for (i, (rows, factor)) in groups.into_iter().enumerate() {
        let new_strength = strength_expr(now, config.half_life_days, factor);
        let weaker = rows
            .clone()
            .and(new_strength.clone().lt(col("strength") - 0.001));
        let weaker = pace.guard(store.count(&weaker)).await??;
        let stronger = rows
            .clone()
            .and(new_strength.clone().gt(col("strength") + 0.001));
        let stronger = pace.guard(store.count(&stronger)).await??;
        let updated = pace
            .guard(writer.submit(WriteOp::Update {
                predicate: rows,
                columns: vec![("strength", new_strength)],
            }))
            .await??;
        bump(record, "rows", updated);
        bump(record, "weakened", weaker as u64);
        bump(record, "strengthened", stronger as u64);
        pace.progress(Phase::Decay, i as u64 + 1, 4);
    }
    let faded = pace
        .guard(
            writer.submit(WriteOp::Update {
                predicate: current()
                    .and(col("faded_at").null())
                    .and(col("strength").lt(config.fade_below)),
                columns: vec![("faded_at", Expr::Int(now))],
            }),
        )
        .await??;
    pace.progress(Phase::Decay, 3, 4);
    let revived = pace
        .guard(
            writer.submit(WriteOp::Update {
                predicate: current()
                    .and(col("faded_at").not_null())
                    .and(col("strength").ge(config.fade_below)),
                columns: vec![("faded_at", Expr::Null(SqlType::BigInt))],
            }),
        )
        .await??;
    pace.progress(Phase::Decay, 4, 4);
    bump(record, "faded", faded);
    bump(record, "revived", revived);
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

    /// The expression LanceDB evaluates gives the strengths the Rust formula gives.
    #[tokio::test]
    async fn lancedb_computes_the_documented_strengths() {
        use crate::store::schema::tests::record;
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::test_store(dir.path()).await;
        let now = now_micros();
        let day = MICROS_PER_DAY as i64;
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
                let mut r = record(&format!("m{i}"), "text", 4);
                r.created_at = now - days * day;
                r.salience = *salience;
                r.access_count = *accesses;
                r
            })
            .collect();
        store.writer().submit(WriteOp::Insert(rows)).await.unwrap();
        store
            .writer()
            .submit(WriteOp::Update {
                predicate: current(),
                columns: vec![("strength", strength_expr(now, 30.0, 1.0))],
            })
            .await
            .unwrap();
        for (i, (days, salience, accesses)) in cases.iter().enumerate() {
            let got = store.get(&format!("m{i}")).await.unwrap().unwrap().strength;
            let want = strength(*days as f64, *salience, *accesses, 30.0);
            assert!((got - want).abs() < 1e-4, "case {i}: {got} vs {want}");
        }
    }
}
