//! `context.build`: the package an AI starts a conversation from, in tiers filled by score
//! under a token budget counted by a real LLM tokenizer.

use serde::{Deserialize, Serialize};

/// The smallest budget a package can be built in: a heading and a line or two.
pub const MIN_BUDGET: u32 = 64;
/// The largest budget accepted.
pub const MAX_BUDGET: u32 = 200_000;
/// Longest query or task text, in bytes.
pub const MAX_QUERY_BYTES: usize = 16 * 1024;

crate::name_set! {
    /// How the package's text is written.
    Format, "format" {
        #[default]
        Markdown = "markdown",
        /// Compact JSON of the tiers' items.
        Json = "json",
    }
}

crate::name_set! {
    /// The package's parts, in the order they are written.
    Tier, "tier" {
        /// Who the person is, their strongest preferences, corrections and constraints.
        #[default]
        Core = "core",
        /// The living summaries: commitments, people, projects, goals, mood, narrative.
        Living = "living",
        /// The session's recent messages, its running summary and the active project.
        Session = "session",
        /// Recall for the query, the current beliefs it touches, project knowledge.
        Retrieved = "retrieved",
    }
}

crate::name_set! {
    /// What an item of a package is.
    ItemKind, "item kind" {
        #[default]
        Identity = "identity",
        Preference = "preference",
        /// A standing instruction or correction.
        Rule = "rule",
        Constraint = "constraint",
        /// A living summary.
        Summary = "summary",
        /// A message of the session.
        Message = "message",
        /// The session's running summary, or the last session's summary.
        SessionSummary = "session_summary",
        Project = "project",
        Memory = "memory",
        Belief = "belief",
        Warning = "warning",
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildParams {
    /// What the conversation or task is about; retrieval uses it. Absent: no retrieved tier
    /// beyond the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Default: the session's profile, else `general`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Tokens, 64–200000. Default: the profile's maximum, else the adaptive budget from the
    /// hardware and live RAM pressure (`system.budget`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<u32>,
    /// Default: the profile's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<Format>,
    /// Default: the session's, else `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The working directory, for the active project when no session names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Files about to be edited: the triggered layer adds warnings from their history.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// A command about to run, for the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Say why each item is in and show what was left out.
    #[serde(default)]
    pub explain: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Package {
    /// What to give the model.
    pub text: String,
    pub format: Format,
    pub profile: String,
    /// The tokenizer that counted (`o200k_base`, `cl100k_base`).
    pub tokenizer: String,
    pub budget: u32,
    /// Where the budget came from: the request, the profile, or the hardware (and why).
    pub budget_source: String,
    /// The tokenizer's count of `text`; never above `budget`.
    pub tokens: u32,
    pub tiers: Vec<TierReport>,
    /// What did not fit or was filtered out, best first (at most 50; all counted in
    /// `dropped_count`).
    pub dropped: Vec<Dropped>,
    pub dropped_count: u64,
}

/// One tier: what it was allotted, what it used, and what each of its sources gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TierReport {
    pub tier: Tier,
    /// Its share of the budget (unused shares pass to the others).
    pub allotted: u32,
    /// The tokens its items take.
    pub tokens: u32,
    pub items: Vec<Item>,
    pub sources: Vec<SourceReport>,
}

/// What one source of a tier found; `note` says why it is empty when it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceReport {
    pub source: String,
    pub found: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub kind: ItemKind,
    /// The memory, belief, session or project it comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub text: String,
    pub tokens: u32,
    /// Its rank within the tier, 0–1.
    pub score: f32,
    /// Why it is in (with `explain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dropped {
    pub tier: Tier,
    pub kind: ItemKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub tokens: u32,
    pub score: f32,
    pub reason: String,
    /// Its first 120 characters (with `explain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
}

crate::methods! {
    /// Builds the package for a conversation or task.
    Build = "context.build" (BuildParams) -> Package;
}
