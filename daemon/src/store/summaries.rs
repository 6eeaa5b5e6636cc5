//! The `summaries` table (ARCHITECTURE §3): the living summaries, one row per namespace and
//! category, written again whole by consolidation. In an encrypted store the text is sealed.

use super::column::table_rows;

pub const SUMMARIES: &str = "summaries";

table_rows! {
    /// One living summary as stored. Times are UTC microseconds.
    SummaryRecord {
        /// `namespace/category`.
        id: String,
        namespace: String,
        category: String,
        content: String,
        observation_count: i64,
        updated_at: i64,
        written_by: String,
        sealed: bool,
    }
}

/// The summaries table: rows keyed by namespace and category.
pub type SummaryTable = super::keyed::KeyedTable<SummaryRecord>;
