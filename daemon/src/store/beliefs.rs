//! The `beliefs` table (ARCHITECTURE §3): the user model's statements with their source,
//! confidence, evidence and validity. Derived from memories (and `preference.set`), kept by
//! `usermodel::UserModel`, which writes each change before answering. In an encrypted store
//! the subject, predicate, object and statement are sealed to the row.

use mnemo_protocol::belief::{BeliefSource, BeliefType};

use super::column::{table_rows, Floats};

pub const BELIEFS: &str = "beliefs";

table_rows! {
    /// One version of a belief as stored. Times are UTC microseconds.
    BeliefRecord {
        id: String,
        namespace: String,
        subject: String,
        predicate: String,
        object: String,
        negated: bool,
        statement: String,
        belief_type: BeliefType,
        domain: Option<String>,
        scope: Option<String>,
        confidence: f32,
        /// The lineages of the memories that say it.
        evidence: Vec<String>,
        source: BeliefSource,
        /// `rules` or `llm:<model>`; none for an explicit one (added after the table was
        /// first made: older rows read none).
        read_by: Option<String>,
        /// The version of the memory it was first read from.
        source_memory_id: Option<String>,
        valid_from: i64,
        valid_to: Option<i64>,
        superseded_by: Option<String>,
        /// Current beliefs it cannot hold together with.
        contradicts: Vec<String>,
        sealed: bool,
        /// The statement's embedding (what context building compares a query with), and the
        /// model that made it; none until embedded.
        vector: Floats,
        embed_model: Option<String>,
    }
}

/// The beliefs table: rows keyed by the belief's id.
pub type BeliefTable = super::keyed::KeyedTable<BeliefRecord>;
