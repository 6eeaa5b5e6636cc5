//! The settings of the background components: hardware sampling, consolidation and the
//! optional chat endpoint. Plain data, validated here; the components read them.

use serde::{Deserialize, Serialize};

use super::HttpApi;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HardwareConfig {
    /// Seconds between snapshots.
    pub snapshot_interval_secs: u64,
    /// Seconds between process inventories (and local inference server probes).
    pub process_interval_secs: u64,
    /// Snapshots are written in batches of this many (one commit each).
    pub flush_every: usize,
    /// Full-resolution snapshots are kept this long, then averaged into minutes.
    pub raw_retention_hours: u64,
    /// Minute aggregates are kept this long.
    pub minute_retention_days: u64,
    /// Process lives not seen for this long leave the stored inventory.
    pub process_retention_days: u64,
    /// Ask local inference servers for their models.
    pub probe_inference: bool,
    /// Extra process categories, checked before the built-in ones.
    pub process_rules: Vec<ProcessRule>,
}

impl Default for HardwareConfig {
    fn default() -> Self {
        Self {
            snapshot_interval_secs: 5,
            process_interval_secs: 60,
            flush_every: 12,
            raw_retention_hours: 24,
            minute_retention_days: 30,
            process_retention_days: 7,
            probe_inference: true,
            process_rules: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessRule {
    /// inference, ide, browser, system or user_app (or a category of your own).
    pub category: String,
    /// Lower-case substrings matched against the process name and its command line's first word.
    pub names: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ConsolidateConfig {
    /// Runs start by themselves when idle (and on the schedule); `consolidate.run` always works.
    pub enabled: bool,
    /// Seconds without a request for memory work before the machine counts as idle.
    pub idle_after_secs: u64,
    /// CPU use of everything else, in percent of the machine, above which runs wait or yield.
    pub max_other_cpu_pct: f32,
    /// RAM use in percent above which runs wait or yield.
    pub max_ram_pct: f32,
    pub run_on_battery: bool,
    /// Seconds between idle checks.
    pub check_interval_secs: u64,
    /// An idle run starts at most this often once a run has completed (when there is work).
    pub min_interval_secs: u64,
    /// Daily local time ("03:30") for a run whatever the idle state; it still yields.
    pub schedule: Option<String>,
    /// Rows per unit of work (between yield checks).
    pub batch_rows: usize,
    /// Rest between units of work, so a run never takes a whole core for long.
    pub throttle_ms: u64,
    /// Days for strength to halve at salience 5 without access.
    pub half_life_days: f64,
    /// Strength below which a memory is marked faded (never deleted).
    pub fade_below: f32,
    /// Cosine similarity at or above which two memories are duplicates.
    pub dedup_threshold: f32,
    /// Duplicates that both say when they happened merge only within this many hours.
    pub dedup_event_window_hours: f64,
    /// Cosine similarity at or above which (and below `dedup_threshold`) two memories are
    /// linked by a SIMILAR edge, so a recall of one can reach the other.
    pub similar_threshold: f32,
    /// SIMILAR edges a new memory gets at most, to its nearest neighbours (0 forms none).
    pub similar_per_memory: usize,
    /// Memories older than this many days (by when they happened) may be summarised...
    pub summary_min_age_days: f64,
    /// ... when weaker than this ...
    pub summary_max_strength: f32,
    /// ... and less salient than this ...
    pub summary_max_salience: f32,
    /// ... in clusters (namespace, session or domain, week) of at least this many.
    pub summary_min_cluster: usize,
    pub summary_max_cluster: usize,
    /// Old LanceDB versions are pruned after this many hours.
    pub version_retention_hours: u64,
    /// Days for what recall added to an edge to halve without use.
    pub edge_half_life_days: f64,
    /// Share of the way to 1 an edge goes each time its two ends are recalled together.
    pub hebbian_rate: f32,
}

impl Default for ConsolidateConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            idle_after_secs: 120,
            max_other_cpu_pct: 25.0,
            max_ram_pct: 90.0,
            run_on_battery: false,
            check_interval_secs: 5,
            min_interval_secs: 3600,
            schedule: None,
            batch_rows: 512,
            throttle_ms: 5,
            half_life_days: 30.0,
            fade_below: 0.1,
            dedup_threshold: 0.95,
            dedup_event_window_hours: 24.0,
            similar_threshold: 0.75,
            similar_per_memory: 3,
            summary_min_age_days: 30.0,
            summary_max_strength: 0.3,
            summary_max_salience: 5.0,
            summary_min_cluster: 3,
            summary_max_cluster: 40,
            version_retention_hours: 24,
            edge_half_life_days: 30.0,
            hebbian_rate: 0.1,
        }
    }
}

impl ConsolidateConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.batch_rows == 0 || self.check_interval_secs == 0 {
            return Err("consolidate.batch_rows and check_interval_secs must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&self.dedup_threshold) || self.dedup_threshold < 0.5 {
            return Err("consolidate.dedup_threshold must be between 0.5 and 1.0".into());
        }
        if !(0.5..=self.dedup_threshold).contains(&self.similar_threshold) {
            return Err(format!(
                "consolidate.similar_threshold must be between 0.5 and dedup_threshold ({})",
                self.dedup_threshold
            ));
        }
        if self.similar_per_memory > 20 {
            return Err("consolidate.similar_per_memory must be at most 20".into());
        }
        if self.half_life_days <= 0.0 || self.edge_half_life_days <= 0.0 {
            return Err(
                "consolidate.half_life_days and edge_half_life_days must be above 0".into(),
            );
        }
        if !(0.0..=1.0).contains(&self.hebbian_rate) {
            return Err("consolidate.hebbian_rate must be between 0 and 1".into());
        }
        if self.summary_min_cluster < 2 || self.summary_max_cluster < self.summary_min_cluster {
            return Err(
                "consolidate.summary_min_cluster must be at least 2 and at most summary_max_cluster"
                    .into(),
            );
        }
        if let Some(s) = &self.schedule {
            parse_schedule(s)?;
        }
        Ok(())
    }
}

/// "HH:MM" -> minutes after midnight.
pub fn parse_schedule(text: &str) -> Result<u32, String> {
    let bad = || format!("consolidate.schedule `{text}` is not a time like \"03:30\"");
    let (h, m) = text.trim().split_once(':').ok_or_else(bad)?;
    let (h, m): (u32, u32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    if h > 23 || m > 59 {
        return Err(bad());
    }
    Ok(h * 60 + m)
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LlmConfig {
    /// e.g. `http://127.0.0.1:11434` (Ollama) or `http://127.0.0.1:1234` (LM Studio); unset
    /// means summaries are extractive, by rule.
    pub url: Option<String>,
    pub api: HttpApi,
    pub model: Option<String>,
    pub timeout_ms: Option<u64>,
    /// Name of an environment variable holding a bearer token, if the server wants one.
    pub api_key_env: Option<String>,
}
