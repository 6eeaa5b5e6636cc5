//! Memory for agents that act: `episode.record` (what an action did), `memory.triggers` (the
//! triggered layer: warnings and advice for a state, before acting), `procedure.list|get`
//! (sequences learned from repeated episodes) and `stats.list` (implicit memory: behavioural
//! aggregates).

use serde::{Deserialize, Serialize};

/// Most targets one episode or one trigger request names.
pub const MAX_TARGETS: usize = 64;
/// Most warnings `memory.triggers` answers.
pub const MAX_WARNINGS: usize = 50;
/// Longest error text kept with an episode, in characters (longer ones are cut).
pub const MAX_ERROR_CHARS: usize = 4000;

crate::name_set! {
    /// What an agent (or the person) did.
    Action, "action" {
        /// Edited files.
        #[default]
        Edit = "edit",
        /// Ran a command line.
        Command = "command",
        /// Called a tool.
        Tool = "tool",
        /// Carried out a task as a whole.
        Task = "task",
    }
}

crate::name_set! {
    /// How an action turned out.
    Outcome, "outcome" {
        #[default]
        Success = "success",
        Failure = "failure",
        Partial = "partial",
    }
}

/// The state an action ran in (or is about to run in).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionState {
    /// The working directory (absolute); relative file targets are read against it, and its
    /// project becomes the episode's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The session it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// What the actor was trying to do, in its own words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordParams {
    pub action: Action,
    /// File paths (edit), the command line (command), the tool's name (tool), a URL…
    pub targets: Vec<String>,
    pub outcome: Outcome,
    /// What went wrong (the first lines of the output), for a failure or a partial outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Who acted: an agent's name, or `user`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    #[serde(default, flatten)]
    pub state: ActionState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// When it happened (RFC 3339); now when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// A note in the actor's words, kept with the episode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One recorded action: an episodic memory whose action, outcome and duration are columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    /// The memory's id.
    pub id: String,
    pub namespace: String,
    pub action: Action,
    /// As given, file paths made absolute against `cwd`.
    pub targets: Vec<String>,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    #[serde(default, flatten)]
    pub state: ActionState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    pub at: String,
    /// The memory's text: what happened, in one sentence.
    pub content: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecordResult {
    pub episode: Episode,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriggersParams {
    /// Files about to be edited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// A command line about to run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// A tool about to be called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, flatten)]
    pub state: ActionState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// At most this many warnings, 1–50 (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

impl TriggersParams {
    /// Whether the state names anything to look up.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
            && self.command.is_none()
            && self.tool.is_none()
            && self.state.task.is_none()
    }
}

crate::name_set! {
    /// What a warning rests on.
    WarningKind, "warning kind" {
        /// Past failures on the same target.
        #[default]
        Failure = "failure",
        /// Past failures in a similar state (the same command in this project, a task like it).
        Similar = "similar",
        /// A learned procedure that starts here: what usually comes next.
        Procedure = "procedure",
        /// A learned failure pattern: this sequence has gone wrong before.
        Pattern = "pattern",
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Warning {
    pub kind: WarningKind,
    /// What it is about (a file, a command, a tool, a task).
    pub target: String,
    /// The warning or advice itself, one line.
    pub text: String,
    /// Why it applies to this state.
    pub reason: String,
    /// 0–1.
    pub confidence: f32,
    /// The episodes it rests on, newest first.
    pub episodes: Vec<String>,
    /// What worked after the failures, when something did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_by: Option<String>,
    /// The procedure it comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub procedure_id: Option<String>,
    /// When the newest of its episodes happened.
    pub last_seen: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TriggersResult {
    /// Most confident first; empty when nothing in the history matches.
    pub warnings: Vec<Warning>,
    /// Episodes the lookup could have drawn on.
    pub episodes_known: u64,
}

crate::name_set! {
    /// What a procedure teaches.
    ProcedureKind, "procedure kind" {
        /// Steps that repeatedly led to success.
        #[default]
        Success = "success",
        /// Steps that repeatedly went wrong.
        Failure = "failure",
    }
}

/// One step of a procedure.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Step {
    pub action: Action,
    pub target: String,
}

/// When a procedure applies: its first step's action on its target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcedureTrigger {
    pub action: Action,
    pub target: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Procedure {
    pub id: String,
    pub namespace: String,
    pub kind: ProcedureKind,
    /// "edit schema.sql → run `make migrate` → run `cargo test`".
    pub name: String,
    pub trigger: ProcedureTrigger,
    pub steps: Vec<Step>,
    /// The episodes it was learned from, newest first (at most 20).
    pub learned_from: Vec<String>,
    pub success_count: u64,
    pub failure_count: u64,
    /// 0–1: how often following it went as it says, with the evidence's weight.
    pub confidence: f32,
    pub last_used: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcedureListParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ProcedureKind>,
    /// Only procedures at least this confident.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_confidence: Option<f32>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProcedureListResult {
    /// Most confident first.
    pub procedures: Vec<Procedure>,
    /// Why there are none, when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcedureGetParams {
    pub id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProcedureGetResult {
    pub procedure: Procedure,
}

crate::name_set! {
    /// What a behavioural aggregate describes.
    StatCategory, "stat category" {
        /// Distinct active hours per weekday, with the busiest hour.
        #[default]
        ActiveHours = "active_hours",
        /// Session lengths (minutes) and messages per session.
        Sessions = "sessions",
        Tools = "tools",
        Commands = "commands",
        Projects = "projects",
        /// Typical durations of recorded actions.
        Durations = "durations",
        /// What is talked about by time of day.
        Topics = "topics",
    }
}

/// One behavioural aggregate, with the number of observations it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    pub namespace: String,
    pub category: StatCategory,
    /// What is measured (`monday`, `length_minutes.median`, `cargo test`, `morning`…).
    pub metric: String,
    pub value: f64,
    /// `hours`, `minutes`, `seconds`, `uses`, `memories`…
    pub unit: String,
    /// Words that go with the figure (the busiest hour, the top topics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub sample_size: u64,
    pub updated_at: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatsListParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<StatCategory>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StatsListResult {
    pub stats: Vec<Stat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

crate::methods! {
    RecordEpisode = "episode.record" (RecordParams) -> RecordResult;
    Triggers = "memory.triggers" (TriggersParams) -> TriggersResult;
    ListProcedures = "procedure.list" (ProcedureListParams) -> ProcedureListResult;
    GetProcedure = "procedure.get" (ProcedureGetParams) -> ProcedureGetResult;
    ListStats = "stats.list" (StatsListParams) -> StatsListResult;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_its_state_flat_and_refuses_unknown_fields() {
        let p: RecordParams = serde_json::from_value(serde_json::json!({
            "action": "edit", "targets": ["src/auth.py"], "outcome": "failure",
            "error": "3 tests failed", "cwd": "/repo", "task": "fix login"
        }))
        .unwrap();
        assert_eq!(p.action, Action::Edit);
        assert_eq!(p.state.cwd.as_deref(), Some("/repo"));
        assert_eq!(p.state.task.as_deref(), Some("fix login"));
        let e = serde_json::from_value::<RecordParams>(serde_json::json!({
            "action": "edit", "targets": [], "outcome": "failure", "bogus": 1
        }))
        .unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
        let e = serde_json::from_value::<RecordParams>(serde_json::json!({
            "action": "jump", "targets": [], "outcome": "failure"
        }))
        .unwrap_err();
        assert!(e.to_string().contains("jump"), "{e}");
    }

    #[test]
    fn an_empty_state_asks_nothing() {
        assert!(TriggersParams::default().is_empty());
        let p = TriggersParams {
            command: Some("cargo test".into()),
            ..Default::default()
        };
        assert!(!p.is_empty());
    }
}
