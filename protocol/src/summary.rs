//! `summary.list`: the living summaries, a short current text per category that consolidation
//! keeps up to date from recent memories, beliefs, entities and sessions.

use serde::{Deserialize, Serialize};

crate::name_set! {
    /// What a living summary is about.
    SummaryCategory, "summary category" {
        /// What the person said they would do and has not done yet.
        #[default]
        Commitments = "commitments",
        People = "people",
        Projects = "projects",
        /// Contradictions and what has been weighing on them.
        Tensions = "tensions",
        Mood = "mood",
        /// What has been happening lately.
        Narrative = "narrative",
        Goals = "goals",
        Beliefs = "beliefs",
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LivingSummary {
    pub namespace: String,
    pub category: SummaryCategory,
    pub content: String,
    /// The memories, beliefs, entities or sessions it was written from.
    pub observation_count: u64,
    pub updated_at: String,
    /// `rules` or `llm`.
    pub written_by: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// All namespaces when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<SummaryCategory>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ListResult {
    pub summaries: Vec<LivingSummary>,
    /// Why there are none, when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

crate::methods! {
    List = "summary.list" (ListParams) -> ListResult;
}
