//! `memory.*` methods: the memory store and recall.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::graph::Edge;
use crate::understanding::{Emotion, EmotionKind, EventTime, SalienceFactors};

/// Largest content accepted for one memory, in bytes.
pub const MAX_CONTENT_BYTES: usize = 64 * 1024;
/// Longest namespace, domain, source or session id, in bytes.
pub const MAX_LABEL_BYTES: usize = 256;
/// Most tags on one memory.
pub const MAX_TAGS: usize = 64;
/// Longest tag, in bytes.
pub const MAX_TAG_BYTES: usize = 128;
/// Largest metadata object, as JSON, in bytes.
pub const MAX_METADATA_BYTES: usize = 16 * 1024;
/// Most memories accepted by one `memory.add_batch`.
pub const MAX_BATCH_ITEMS: usize = 1000;
pub const DEFAULT_NAMESPACE: &str = "default";

crate::name_set! {
    /// What sort of thing a memory records.
    MemoryKind, "kind" {
        /// Something that happened or was said (the default).
        #[default]
        Episodic = "episodic",
        /// A fact about the world or the person.
        Semantic = "semantic",
        /// How to do something.
        Procedural = "procedural",
        Preference = "preference",
        Belief = "belief",
        Identity = "identity",
        Goal = "goal",
        /// Written by consolidation from other memories.
        Summary = "summary",
    }
}

/// A stored memory, one version of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    pub id: String,
    /// The id of the first version; every version of a memory shares it.
    pub lineage: String,
    pub namespace: String,
    pub content: String,
    pub kind: MemoryKind,
    pub domain: Option<String>,
    pub source: Option<String>,
    pub session_id: Option<String>,
    pub salience: f32,
    pub strength: f32,
    pub created_at: String,
    pub occurred_at: Option<String>,
    pub valid_from: String,
    pub valid_to: Option<String>,
    pub superseded_by: Option<String>,
    pub tags: Vec<String>,
    pub metadata: Value,
    pub content_hash: String,
    /// Written by consolidation from the memories in `summarizes`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_summary: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summarizes: Vec<String>,
    /// The summary this memory was folded into (it was demoted, not deleted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarized_by: Option<String>,
    /// When consolidation found its strength below the fade threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faded_at: Option<String>,
    #[serde(default)]
    pub access_count: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_accessed_at: Option<String>,
    /// How it felt; absent for memories stored before emotion was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emotion: Option<Emotion>,
    /// What its salience is made of; absent when the salience was given or predates them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub salience_factors: Option<SalienceFactors>,
    /// The time the text speaks about ("last Saturday"), when it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<EventTime>,
    /// An episode's action, outcome and duration (`episode.record`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<i64>,
    /// The entities it mentions, by name (`memory.get` only; `entity.get` for more).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entities: Vec<String>,
    /// Its strongest links to other memories, strongest first, at most [`MAX_EDGES_SHOWN`]
    /// (`memory.get` only; `graph.neighbors` walks further).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edges: Vec<Edge>,
}

/// Edges `memory.get` returns at most.
pub const MAX_EDGES_SHOWN: usize = 10;

/// A new memory. Timestamps are RFC 3339 (`2024-05-01T12:00:00Z`), a date (`2024-05-01`) or
/// a date and time in UTC (`2024-05-01 12:00`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddParams {
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<MemoryKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occurred_at: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// 0–10; scored from the text when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub salience: Option<f32>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddBatchParams {
    pub items: Vec<AddParams>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AddBatchResult {
    /// The new ids, in the order of `items`.
    pub ids: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GetParams {
    pub id: String,
}

/// Filters shared by list, search and forget. Every field narrows; absent fields do not.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<MemoryKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Occurred (or, when it has no occurrence time, was created) at or after this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Occurred (or was created) before this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// See the store as it was at this time: versions valid then, not the current ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
    /// Only memories whose primary emotion is this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emotion: Option<EmotionKind>,
    /// Only memories at least this pleasant (valence −1–1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_valence: Option<f32>,
    /// Only memories at most this pleasant (valence −1–1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_valence: Option<f32>,
    /// Only episodes (`episode.record`) of this action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<crate::agent::Action>,
    /// Only episodes with this outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<crate::agent::Outcome>,
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        *self == Filter::default()
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    #[serde(default, flatten)]
    pub filter: Filter,
    /// Page size, 1–1000 (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// `next_cursor` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ListResult {
    /// Newest first.
    pub memories: Vec<Memory>,
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    #[default]
    Hybrid,
    Vector,
    Text,
}

impl std::str::FromStr for SearchMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "hybrid" => Ok(Self::Hybrid),
            "vector" => Ok(Self::Vector),
            "text" => Ok(Self::Text),
            _ => Err(format!(
                "unknown search mode `{s}`; expected hybrid, vector or text"
            )),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    pub query: String,
    /// How many results, 1–200 (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<usize>,
    #[serde(default)]
    pub mode: SearchMode,
    #[serde(default, flatten)]
    pub filter: Filter,
    /// Return each score component per result.
    #[serde(default)]
    pub explain: bool,
    /// Compare the query with every stored vector instead of asking the approximate index
    /// (slower on a large store; for checking what the index misses).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exact: bool,
}

/// How a result's score was made. Ranks are 1-based; absent when that retriever missed it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScoreExplain {
    pub vector_rank: Option<usize>,
    pub vector_similarity: Option<f32>,
    pub text_rank: Option<usize>,
    pub text_score: Option<f32>,
    /// The fused relevance, 0–1.
    pub relevance: f32,
    pub salience: f32,
    pub strength: f32,
    /// 1 for now, falling with age.
    pub recency: f32,
    /// The share of the entities the query names (weighted by rarity) that the memory
    /// mentions, 0–1; 0 when the query names none the store knows.
    #[serde(default)]
    pub entity: f32,
    /// 1 when the memory is by someone the query names (its speaker) or, without a
    /// speaker, names them first; 0 otherwise.
    #[serde(default)]
    pub subject: f32,
    /// What the memory drew from a strong result it is linked to (the same conversation a
    /// turn or two away): that result's score times the path's edge weights; 0 when none.
    #[serde(default)]
    pub graph: f32,
    /// The result it was reached from, when `graph` > 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_via: Option<String>,
    /// How well the time the memory speaks about matches the time the query names, 0–1; 0
    /// when the query names none.
    #[serde(default)]
    pub time: f32,
    /// What the memory's salience is made of, when it was scored from its text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub salience_factors: Option<SalienceFactors>,
    /// A fact this memory states that a newer memory superseded: its score was lowered and
    /// it ranks below the memory that says what holds now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded: Option<SupersededFact>,
    /// The weights the final score used, by component.
    pub weights: ScoreWeights,
    pub score: f32,
}

/// Why a memory ranks lower: what it said no longer holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SupersededFact {
    /// The belief it stated ("Maria lives in Lisbon").
    pub was: String,
    /// The belief that holds now ("Maria lives in Porto").
    pub now: String,
    /// The memory that says so (its current version's id, or its lineage).
    pub by_memory: String,
    /// What the score was multiplied by.
    pub factor: f32,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ScoreWeights {
    pub relevance: f32,
    pub salience: f32,
    pub strength: f32,
    pub recency: f32,
    #[serde(default)]
    pub entity: f32,
    #[serde(default)]
    pub subject: f32,
    #[serde(default)]
    pub graph: f32,
    #[serde(default)]
    pub time: f32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchHit {
    pub memory: Memory,
    pub score: f32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<ScoreExplain>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchResult {
    pub hits: Vec<SearchHit>,
    pub mode: SearchMode,
    /// The embedder that embedded the query, e.g. `minilm` or `hashed (degraded)`.
    pub embedder: String,
    pub took_ms: f64,
    /// What the vector and full-text retrievers were asked when it was not the query as
    /// given: without the names most memories of the namespace mention
    /// (`search.common_name_share`), which rank through the entity component instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrievers_asked: Option<String>,
}

/// A new version of a memory. Absent fields keep their old value.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateParams {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<MemoryKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occurred_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub salience: Option<f32>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryParams {
    /// Any version's id.
    pub id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistoryResult {
    /// Oldest first; the last one is current unless the memory was closed.
    pub versions: Vec<Memory>,
}

/// Deletes for real: every version of the memories named or matched, from every index.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForgetParams {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<Filter>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ForgetResult {
    /// Rows deleted, all versions counted.
    pub deleted: u64,
}

crate::methods! {
    Add = "memory.add" (AddParams) -> Memory;
    AddBatch = "memory.add_batch" (AddBatchParams) -> AddBatchResult;
    Get = "memory.get" (GetParams) -> Memory;
    List = "memory.list" (ListParams) -> ListResult;
    Search = "memory.search" (SearchParams) -> SearchResult;
    Update = "memory.update" (UpdateParams) -> Memory;
    History = "memory.history" (HistoryParams) -> HistoryResult;
    Forget = "memory.forget" (ForgetParams) -> ForgetResult;
}
