//! `[agent]`: the layers of memory for agents that act (moss's three layers). The automatic
//! layer is what every context package carries in its core tier; the triggered layer is what
//! `memory.triggers` (and the package's warnings) draw on; the on-demand layer is search.
//! The defaults are minimal: preferences and corrections, failures and learned rules.

use serde::{Deserialize, Serialize};

/// What may feed the automatic layer (identity is always in the core tier: it is who the
/// person is, not a learned habit).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum AutomaticSource {
    /// The person's tastes ("I prefer tabs").
    Preferences,
    /// Standing instructions, corrections and constraints ("never commit to main").
    Corrections,
    /// How the person works: behaviours and values they hold to ("I write the tests first").
    Conventions,
    /// The last ended session's summary, when the package names no session.
    RecentSession,
}

/// What may feed the triggered layer.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TriggeredSource {
    /// Past failures on the same target or in a similar state, and what worked afterwards.
    Failures,
    /// Learned procedures and failure patterns.
    Rules,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    pub automatic: Vec<AutomaticSource>,
    pub triggered: Vec<TriggeredSource>,
    /// Repeats (successful runs, or failed ones) before a sequence becomes a procedure.
    pub min_support: u64,
    /// Episodes of no session belong to one run of work while they are at most this far apart
    /// in the same directory.
    pub chain_gap_minutes: u64,
    /// Warnings below this confidence are not given.
    pub min_confidence: f32,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            automatic: vec![AutomaticSource::Preferences, AutomaticSource::Corrections],
            triggered: vec![TriggeredSource::Failures, TriggeredSource::Rules],
            min_support: 2,
            chain_gap_minutes: 30,
            min_confidence: 0.2,
        }
    }
}

impl AgentConfig {
    pub fn automatic(&self, source: AutomaticSource) -> bool {
        self.automatic.contains(&source)
    }

    pub fn triggered(&self, source: TriggeredSource) -> bool {
        self.triggered.contains(&source)
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.min_support < 2 {
            return Err(format!(
                "agent.min_support is {}; a procedure needs at least 2 repeats",
                self.min_support
            ));
        }
        if !(0.0..=1.0).contains(&self.min_confidence) {
            return Err(format!(
                "agent.min_confidence is {}; it must be 0–1",
                self.min_confidence
            ));
        }
        Ok(())
    }
}
