//! The `sessions` table (ARCHITECTURE §3): each conversation or task with its kind, source,
//! times, active project and, once ended, its summary. Kept by `sessions::Sessions`; in an
//! encrypted store the working directory and the summary are sealed to the row.

use super::column::table_rows;

pub const SESSIONS: &str = "sessions";

table_rows! {
    /// One session as stored. Times are UTC microseconds.
    SessionRecord {
        id: String,
        namespace: String,
        kind: String,
        source: Option<String>,
        profile: Option<String>,
        active_project_id: Option<String>,
        cwd: Option<String>,
        started_at: i64,
        ended_at: Option<i64>,
        last_message_at: Option<i64>,
        message_count: i64,
        /// JSON of the protocol's `SessionSummary`.
        summary: Option<String>,
        /// The dominant emotion of each third, `→`-joined (also in `summary`).
        emotional_arc: Option<String>,
        /// `none`, `queued` or `done`.
        consolidation_status: String,
        sealed: bool,
    }
}

/// The sessions table: rows keyed by the session's id.
pub type SessionTable = super::keyed::KeyedTable<SessionRecord>;
