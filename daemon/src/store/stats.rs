//! The `stats` table (ARCHITECTURE §3): implicit memory, behavioural aggregates written again
//! whole per namespace by consolidation. In an encrypted store the metric (a command, a
//! project, a tool) and the detail are sealed to the row.

use super::column::table_rows;

pub const STATS: &str = "stats";

table_rows! {
    /// One aggregate as stored. Times are UTC microseconds.
    StatRecord {
        /// The namespace, category and a keyed hash of the metric.
        id: String,
        namespace: String,
        category: String,
        metric: String,
        value: f32,
        unit: String,
        detail: Option<String>,
        sample_size: i64,
        updated_at: i64,
        sealed: bool,
    }
}

pub type StatTable = super::keyed::KeyedTable<StatRecord>;
