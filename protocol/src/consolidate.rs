//! `consolidate.*`: runs that decay, fold accesses, merge duplicates, summarise and compact
//! while the machine is idle, and their records.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::NoParams;

/// What started a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunTrigger {
    /// The machine was idle and there was work.
    Idle,
    /// The daily schedule (`consolidate.schedule`).
    Schedule,
    /// `consolidate.run`: runs now, whatever the idle state, until done.
    Manual,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    /// Stopped because the person's work needed the machine; resumes when idle again.
    Yielded,
    /// mnemod stopped or was killed during the run; the next run resumes it.
    Interrupted,
    Completed,
    Failed,
}

impl RunStatus {
    /// A run in this state is picked up again by the next start.
    pub fn resumable(self) -> bool {
        matches!(self, RunStatus::Yielded | RunStatus::Interrupted)
    }
}

/// The phases, in the order a run does them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Entities named together relate (RELATES_TO); aliases the memories prove ("call me
    /// Mel", or Mel greeted in a chat with Melanie) merge into their entity.
    Entities,
    /// Edges between memories recalled together are strengthened; unused ones fade back
    /// (learned ones to nothing, and are pruned below 0.1).
    Edges,
    /// Access events appended at recall are folded into their rows.
    Access,
    /// Strength decays with time since last access, slower for high salience.
    Decay,
    /// Near-duplicates merge into the oldest, which keeps their provenance.
    Dedup,
    /// New memories read again by the configured LLM (`llm.url`): beliefs the rules missed
    /// join the user model. Nothing happens without an endpoint.
    Refine,
    /// Old, weak clusters become one summary memory; the originals are demoted.
    Summaries,
    /// The living summaries (commitments, people, projects, tensions, mood, narrative, goals,
    /// beliefs) written again from recent memories, beliefs and entities.
    Living,
    /// Procedures learned from repeated episodes (sequences that led to success, patterns that
    /// failed) and the implicit stats (active hours, session lengths, tools, durations).
    Habits,
    /// Compaction, index folding, version pruning, the ANN index.
    Storage,
}

impl Phase {
    pub const ALL: [Phase; 10] = [
        Phase::Entities,
        Phase::Edges,
        Phase::Access,
        Phase::Decay,
        Phase::Dedup,
        Phase::Refine,
        Phase::Summaries,
        Phase::Living,
        Phase::Habits,
        Phase::Storage,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Entities => "entities",
            Phase::Edges => "edges",
            Phase::Access => "access",
            Phase::Decay => "decay",
            Phase::Dedup => "dedup",
            Phase::Refine => "refine",
            Phase::Summaries => "summaries",
            Phase::Living => "living",
            Phase::Habits => "habits",
            Phase::Storage => "storage",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseState {
    Pending,
    Running,
    Done,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseRecord {
    pub phase: Phase,
    pub state: PhaseState,
    /// What the phase did (rows decayed, duplicates merged, fragments before and after...).
    pub counts: BTreeMap<String, u64>,
    /// Where a yielded or interrupted phase resumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
}

impl PhaseRecord {
    pub fn pending(phase: Phase) -> Self {
        Self {
            phase,
            state: PhaseState::Pending,
            counts: BTreeMap::new(),
            cursor: None,
            started_at: None,
            completed_at: None,
        }
    }
}

/// One run, as stored in the `runs` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: String,
    pub trigger: RunTrigger,
    pub status: RunStatus,
    pub started_at: String,
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    pub phases: Vec<PhaseRecord>,
    /// Times the run stepped aside for the person's work.
    #[serde(default)]
    pub yields: u32,
    /// For each yield, milliseconds from the request (or load) that caused it to the run
    /// standing still.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub yield_latency_ms: Vec<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl RunRecord {
    pub fn phase(&self, phase: Phase) -> Option<&PhaseRecord> {
        self.phases.iter().find(|p| p.phase == phase)
    }
    pub fn count(&self, phase: Phase, key: &str) -> u64 {
        self.phase(phase)
            .and_then(|p| p.counts.get(key).copied())
            .unwrap_or(0)
    }
}

/// Why the machine is or is not idle enough to consolidate, as the detector saw it last.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IdleState {
    pub idle: bool,
    /// What stops a run now ("a request 12 s ago", "other processes use 63% CPU", ...).
    pub blockers: Vec<String>,
    pub seconds_since_request: Option<u64>,
    pub other_cpu_pct: Option<f32>,
    pub ram_pct: Option<f32>,
    pub on_battery: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub phase: Phase,
    pub done: u64,
    pub total: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConsolidationStatus {
    pub enabled: bool,
    /// `idle` (no run), `running` or `yielded` (a run waits to resume).
    pub state: String,
    pub idle: IdleState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<RunRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<Progress>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_completed: Option<RunRecord>,
    /// When the daily scheduled run is next due, if a schedule is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_scheduled: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunStarted {
    pub run_id: String,
    /// True when an earlier yielded or interrupted run was picked up instead of a new one.
    pub resumed: bool,
    /// True when a run was already going; its id is returned.
    pub already_running: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunsParams {
    /// Newest first; default 20, at most 500.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunsResult {
    pub runs: Vec<RunRecord>,
}

crate::methods! {
    ConsolidateStatus = "consolidate.status" (NoParams) -> ConsolidationStatus;
    ConsolidateRun = "consolidate.run" (NoParams) -> RunStarted;
    ConsolidateRuns = "consolidate.runs" (RunsParams) -> RunsResult;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_stopped_runs_resume() {
        assert!(RunStatus::Yielded.resumable());
        assert!(RunStatus::Interrupted.resumable());
        assert!(!RunStatus::Completed.resumable());
        assert!(!RunStatus::Running.resumable());
        assert!(!RunStatus::Failed.resumable());
    }

    #[test]
    fn phases_are_in_run_order() {
        let mut sorted = Phase::ALL;
        sorted.sort();
        assert_eq!(sorted, Phase::ALL);
        assert_eq!(
            serde_json::to_string(&Phase::Summaries).unwrap(),
            "\"summaries\""
        );
    }
}
