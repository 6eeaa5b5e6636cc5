//! `session.*` methods: a conversation or task as it happens. Each message is stored as a
//! memory of the session (its role and turn in the memory's metadata), so the conversation is
//! the memory; the end of a session writes its summary.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most sessions one page holds.
pub const MAX_LIST: usize = 500;
/// Most messages `session.get` returns.
pub const MAX_MESSAGES: usize = 1000;

crate::name_set! {
    /// What sort of session it is.
    SessionKind, "session kind" {
        #[default]
        Chat = "chat",
        Task = "task",
        Coding = "coding",
    }
}

crate::name_set! {
    /// Who said a message.
    Role, "role" {
        /// The person.
        #[default]
        User = "user",
        Assistant = "assistant",
        /// A tool's output.
        Tool = "tool",
    }
}

/// One session as the daemon keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub id: String,
    pub namespace: String,
    pub kind: SessionKind,
    /// The tool that opened it (`claude-code`, `mnemo`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The context profile it builds packages with, when it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The project it works in, from `project` or its `cwd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    pub started_at: String,
    /// Absent while it is active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_message_at: Option<String>,
    pub message_count: u64,
    /// Written when it ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<SessionSummary>,
    /// `none` while active, `queued` once ended, `done` after a consolidation run.
    pub consolidation_status: String,
}

impl Session {
    pub fn is_active(&self) -> bool {
        self.ended_at.is_none()
    }
}

/// What a session was about: written by rule at its end (by the LLM when one is configured).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    pub text: String,
    /// Its most frequent content words and names, most frequent first.
    pub topics: Vec<String>,
    /// The names its messages mention.
    pub entities: Vec<String>,
    /// How it felt from beginning to end: the dominant emotion of each third.
    pub emotional_arc: Vec<String>,
    /// What the person said they would do ("I'll send the draft by Friday").
    pub commitments: Vec<String>,
    /// `rules` or `llm`.
    pub written_by: String,
}

/// A message of a session: a memory with its role and turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub memory_id: String,
    pub role: Role,
    /// 1-based order in the session.
    pub turn: u64,
    pub content: String,
    pub at: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<SessionKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// A project id (`mnemo projects`), else the project found from `cwd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// The working directory (absolute); its project becomes the session's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The context profile (`general`, `work`, `personal`, `creative` or one from the config).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionResult {
    pub session: Session,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageParams {
    pub session_id: String,
    #[serde(default)]
    pub role: Role,
    pub content: String,
    /// Stored with the memory (beside `role` and `turn`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// When it was said, if not now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occurred_at: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MessageResult {
    pub memory_id: String,
    pub turn: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndParams {
    pub session_id: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GetParams {
    pub id: String,
    /// The last messages to return, 0–1000 (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<usize>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GetResult {
    pub session: Session,
    /// Its last messages, in turn order.
    pub messages: Vec<Message>,
    /// What it is about so far: the summary once ended, else the running one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_summary: Option<SessionSummary>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// Only active (true) or ended (false) sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ListResult {
    /// Most recently started first.
    pub sessions: Vec<Session>,
    pub next_cursor: Option<String>,
    pub total: u64,
}

crate::methods! {
    /// Opens a session.
    Start = "session.start" (StartParams) -> SessionResult;
    /// Adds a message to an active session, as a memory of it.
    SendMessage = "session.message" (MessageParams) -> MessageResult;
    /// Ends a session and writes its summary.
    End = "session.end" (EndParams) -> SessionResult;
    Get = "session.get" (GetParams) -> GetResult;
    List = "session.list" (ListParams) -> ListResult;
}
