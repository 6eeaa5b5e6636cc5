//! The `procedures` table (ARCHITECTURE §3): sequences of actions learned from repeated
//! episodes, written again whole per namespace by consolidation. In an encrypted store the
//! name, trigger target and steps (paths, command lines) are sealed to the row.

use super::column::table_rows;

pub const PROCEDURES: &str = "procedures";

table_rows! {
    /// One procedure as stored. Times are UTC microseconds.
    ProcedureRecord {
        id: String,
        namespace: String,
        /// `success` or `failure`.
        kind: String,
        name: String,
        trigger_action: String,
        trigger_target: String,
        /// JSON of the protocol's steps.
        steps: String,
        learned_from: Vec<String>,
        confidence: f32,
        success_count: i64,
        failure_count: i64,
        last_used: i64,
        updated_at: i64,
        sealed: bool,
    }
}

pub type ProcedureTable = super::keyed::KeyedTable<ProcedureRecord>;
