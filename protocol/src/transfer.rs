//! `memory.export` and `memory.import`: a store's memories out as records and back in, page by page, so a
//! file of any size streams. A record is one line of mnemo's JSONL format.

use serde::{Deserialize, Serialize};

use crate::belief::Belief;
use crate::memory::Memory;
use crate::session::Session;

/// Most records one `export` page or one `import` call holds.
pub const MAX_TRANSFER_RECORDS: usize = 1000;

/// One line of an export: `{"type": "memory", …}` with every field of one version, a
/// belief's version, or a session. Entities and edges are not records: import reads them
/// again from the text, as ingest does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    Memory(Box<Memory>),
    /// `{"type": "belief", "belief": {…}, "evidence": […]}`: nested, as a belief has a
    /// `type` of its own.
    Belief(Box<ExportedBelief>),
    Session(Box<Session>),
}

/// One version of a belief (a preference set by hand too) with what it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedBelief {
    pub belief: Belief,
    /// The lineages of the memories that say it.
    #[serde(default)]
    pub evidence: Vec<String>,
}

/// Which table an export page reads; an export walks them in this order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExportPart {
    /// Every version of every memory (episodes included).
    #[default]
    Memories,
    /// Every version of every belief, preference and identity fact.
    Beliefs,
    /// Every session with its summary.
    Sessions,
}

impl ExportPart {
    pub const ALL: [ExportPart; 3] = [Self::Memories, Self::Beliefs, Self::Sessions];
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportParams {
    /// The table to read (memories by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<ExportPart>,
    /// Only this namespace; every namespace when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Page size, 1–1000 (default 500).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// `next_cursor` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExportResult {
    /// Every version of every memory (closed ones too), newest id first; or the beliefs'
    /// versions or the sessions, by id.
    pub records: Vec<Record>,
    pub next_cursor: Option<String>,
    /// Versions in all, on the first page (to show progress); absent on later pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportParams {
    /// Up to 1000 records, written as they are (ids, versions and times kept); the vectors
    /// are made again by this daemon's embedder.
    pub records: Vec<Record>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportResult {
    /// Records written (memory and belief versions, sessions).
    pub added: u64,
    /// Records already stored (by id): importing a file twice adds nothing.
    pub skipped: u64,
}

crate::methods! {
    Export = "memory.export" (ExportParams) -> ExportResult;
    Import = "memory.import" (ImportParams) -> ImportResult;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_one_flat_object_tagged_by_type() {
        let line = r#"{"type":"memory","id":"a","lineage":"a","namespace":"default","content":"hi","kind":"episodic","domain":null,"source":null,"session_id":null,"salience":5.0,"strength":1.0,"created_at":"2026-01-01T00:00:00Z","occurred_at":null,"valid_from":"2026-01-01T00:00:00Z","valid_to":null,"superseded_by":null,"tags":[],"metadata":{},"content_hash":"h"}"#;
        let record: Record = serde_json::from_str(line).unwrap();
        let Record::Memory(m) = &record else {
            panic!("a memory")
        };
        assert_eq!(m.content, "hi");
        let again = serde_json::to_value(&record).unwrap();
        assert_eq!(again["type"], "memory");
        assert_eq!(again["id"], "a");
    }
}
