//! The tools for agents that act: `record_episode` (what an action did) and
//! `warnings` (the triggered layer: past failures on these files or this command,
//! what worked afterwards, learned procedures).

use mnemo_protocol::agent::{
    Action, ActionState, Outcome, RecordEpisode, RecordParams, Triggers, TriggersParams,
};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::tools::{answer, refused, ToolResult};
use super::MnemoServer;
use crate::agent::warning_text;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RecordEpisodeArgs {
    /// edit, command, tool or task.
    pub action: String,
    /// What it was about: file paths (edit), the command line (command), the tool's name
    /// (tool), the task's title (task).
    pub targets: Vec<String>,
    /// success, failure or partial.
    pub outcome: String,
    /// What went wrong: the first lines of the error output.
    pub error: Option<String>,
    /// The working directory (absolute); relative file paths are read in it.
    pub cwd: Option<String>,
    /// What you were trying to do.
    pub task: Option<String>,
    /// A mnemo session id, if you track one.
    pub session_id: Option<String>,
    pub duration_ms: Option<u64>,
    pub namespace: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct CheckArgs {
    /// Files you are about to edit.
    #[serde(default)]
    pub files: Vec<String>,
    /// A command line you are about to run.
    pub command: Option<String>,
    /// A tool you are about to call.
    pub tool: Option<String>,
    /// What you are trying to do, in words.
    pub task: Option<String>,
    /// The working directory (absolute).
    pub cwd: Option<String>,
    pub namespace: Option<String>,
}

#[tool_router(router = agent_router, vis = "pub(super)")]
impl MnemoServer {
    #[tool(
        description = "Record what an action did — an edit, a command, a tool call or a \
                       task, and whether it succeeded — so later actions on the same files \
                       or commands are warned, and repeated successful sequences become \
                       procedures. Record failures with their error.",
        annotations(
            title = "Record an episode",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn record_episode(&self, Parameters(a): Parameters<RecordEpisodeArgs>) -> ToolResult {
        let (action, outcome) = match (a.action.parse::<Action>(), a.outcome.parse::<Outcome>()) {
            (Ok(action), Ok(outcome)) => (action, outcome),
            (Err(e), _) | (_, Err(e)) => return refused(e),
        };
        let params = RecordParams {
            action,
            targets: a.targets,
            outcome,
            error: a.error,
            duration_ms: a.duration_ms,
            actor: Some("mcp".into()),
            state: ActionState {
                cwd: a.cwd,
                session_id: a.session_id,
                task: a.task,
                ..Default::default()
            },
            namespace: a.namespace,
            at: None,
            note: None,
        };
        match self.link.call::<RecordEpisode>(&params).await {
            Ok(r) => answer(format!("Recorded: {}", r.episode.content), json!(r)),
            Err(e) => refused(e),
        }
    }

    #[tool(
        description = "Before editing files or running a command: what went wrong before \
                       on the same target or in a similar state, what worked afterwards, and \
                       learned procedures that start here. Answers nothing when the history \
                       holds nothing like it; cheap enough to call before every action.",
        annotations(
            title = "Check before acting",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn warnings(&self, Parameters(a): Parameters<CheckArgs>) -> ToolResult {
        let params = TriggersParams {
            files: a.files,
            command: a.command,
            tool: a.tool,
            state: ActionState {
                cwd: a.cwd,
                task: a.task,
                ..Default::default()
            },
            namespace: a.namespace,
            limit: Some(10),
        };
        match self.link.call::<Triggers>(&params).await {
            Ok(r) if r.warnings.is_empty() => answer("Nothing to warn about.".into(), json!(r)),
            Ok(r) => answer(
                r.warnings
                    .iter()
                    .map(warning_text)
                    .collect::<Vec<_>>()
                    .join("\n"),
                json!(r),
            ),
            Err(e) => refused(e),
        }
    }
}
