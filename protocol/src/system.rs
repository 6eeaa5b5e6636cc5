//! `system.*` methods: what the machine is and what it is doing. Every reading a machine may
//! not offer is an `Option`: absent means "not available here", never 0.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::NoParams;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuInfo {
    pub index: u32,
    pub name: String,
    pub uuid: Option<String>,
    pub vram_total_bytes: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    pub has_gpu: bool,
    pub cuda: bool,
    pub rocm: bool,
    pub metal: bool,
    pub neural_engine: bool,
}

/// What the hardware allows, derived from the profile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Constraints {
    /// Largest local model (weights, GB) that fits in VRAM, or in RAM when there is no GPU.
    pub largest_model_gb: f32,
    pub recommended_context_tokens: u32,
    pub local_embeddings_sensible: bool,
    /// Why, in words.
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemProfile {
    pub detected_at: String,
    pub host_name: Option<String>,
    pub os_name: Option<String>,
    pub os_version: Option<String>,
    pub kernel_version: Option<String>,
    pub arch: String,
    pub cpu_model: Option<String>,
    pub cpu_cores: Option<usize>,
    pub cpu_threads: usize,
    pub ram_total_bytes: u64,
    pub swap_total_bytes: u64,
    /// The filesystem holding the data dir.
    pub disk_mount: Option<String>,
    pub disk_total_bytes: Option<u64>,
    pub gpus: Vec<GpuInfo>,
    pub gpu_driver_version: Option<String>,
    pub cuda_version: Option<String>,
    /// Why there are no GPUs, or what was found: e.g. "no NVML: libnvidia-ml.so not found".
    pub gpu_status: String,
    pub capabilities: Capabilities,
    pub constraints: Constraints,
}

impl SystemProfile {
    /// The profile without its timestamp, for telling whether the machine changed.
    pub fn same_machine(&self, other: &SystemProfile) -> bool {
        let strip = |p: &SystemProfile| SystemProfile {
            detected_at: String::new(),
            disk_total_bytes: None,
            ..p.clone()
        };
        strip(self) == strip(other)
    }

    /// One line naming the machine, printed above every benchmark's figures so that runs on
    /// different machines are not compared as if alike.
    pub fn machine_line(&self) -> String {
        let system = match &self.os_name {
            Some(os) => format!("{os} {}", self.arch),
            None => self.arch.clone(),
        };
        format!(
            "{} ({} cores, {} threads), {:.1} GiB RAM, {system}",
            self.cpu_model.as_deref().unwrap_or("unknown CPU"),
            self.cpu_cores.map_or("?".into(), |c| c.to_string()),
            self.cpu_threads,
            self.ram_total_bytes as f64 / (1u64 << 30) as f64,
        )
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuReading {
    pub index: u32,
    pub name: String,
    pub memory_used_bytes: Option<u64>,
    pub memory_total_bytes: Option<u64>,
    pub utilization_pct: Option<f32>,
    pub memory_utilization_pct: Option<f32>,
    pub temperature_c: Option<f32>,
    pub power_watts: Option<f32>,
}

/// A local inference server that answered its model-list endpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InferenceServer {
    /// `ollama`, `lmstudio`, `llamacpp` or `vllm`.
    pub kind: String,
    pub url: String,
    pub models: Vec<String>,
    /// Found by process name, by its endpoint, or both.
    pub detected_by: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub at: String,
    /// Seconds this row covers: the sampling interval, or the aggregation step.
    pub span_secs: u32,
    pub cpu_pct: Option<f32>,
    pub load_1: Option<f32>,
    pub load_5: Option<f32>,
    pub load_15: Option<f32>,
    pub ram_total_bytes: Option<u64>,
    pub ram_used_bytes: Option<u64>,
    pub ram_available_bytes: Option<u64>,
    pub ram_pct: Option<f32>,
    pub swap_total_bytes: Option<u64>,
    pub swap_used_bytes: Option<u64>,
    pub disk_used_bytes: Option<u64>,
    pub disk_free_bytes: Option<u64>,
    pub gpus: Vec<GpuReading>,
    pub daemon_cpu_pct: Option<f32>,
    pub daemon_rss_bytes: Option<u64>,
    /// CPU time the sampler itself spent taking this snapshot, in microseconds.
    pub sampler_cpu_us: Option<u64>,
    pub memory_count: Option<u64>,
    pub active_sessions: Option<u64>,
    pub pending_work: Option<u64>,
    pub inference: Vec<InferenceServer>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessEntry {
    pub pid: u32,
    pub name: String,
    /// Truncated to 256 characters; in the stored inventory (history), the program only.
    pub cmdline: String,
    /// inference, ide, browser, system or user_app.
    pub category: String,
    pub cpu_pct: f32,
    pub rss_bytes: u64,
    pub gpu_memory_bytes: Option<u64>,
    pub first_seen: String,
    pub last_seen: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    pub total_tokens: u32,
    pub core_tokens: u32,
    pub session_tokens: u32,
    pub retrieved_tokens: u32,
    pub base_tokens: u32,
    pub pressure_multiplier: f32,
    pub ram_pct: Option<f32>,
    pub reason: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SnapshotResult {
    /// The latest snapshot; absent only in the first seconds after start.
    pub snapshot: Option<Snapshot>,
    /// Why there is no GPU reading, when there is none.
    pub gpu_status: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemHistoryParams {
    /// Default: an hour ago.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// Seconds per point (the average of the snapshots in it); default: as stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// Only these fields of each point (plus `at`), e.g. ["cpu_pct", "ram_pct"].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SystemHistoryResult {
    pub step: u32,
    /// Oldest first; each a [`Snapshot`], or the requested fields of one.
    pub points: Vec<Value>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessesParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// `cpu` (default), `memory` or `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProcessesResult {
    pub taken_at: Option<String>,
    pub processes: Vec<ProcessEntry>,
    pub inference: Vec<InferenceServer>,
}

/// Most texts one `system.embed` takes.
pub const MAX_EMBED_TEXTS: usize = 256;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbedParams {
    /// Up to 256 texts, each at most 64 KiB.
    pub texts: Vec<String>,
}

/// The vectors mnemo's embedder gives texts: what it compares by meaning.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct EmbedResult {
    /// The embedder's model id (`minilm:all-MiniLM-L6-v2`, or `hashed:…` for the weightless
    /// fallback).
    pub model: String,
    pub dimensions: usize,
    /// One vector per text, in order, of unit length.
    pub vectors: Vec<Vec<f32>>,
}

crate::methods! {
    /// Vectors of texts by the configured embedder, for tools that compare texts the way
    /// mnemo does (`mnemo bench understanding` matches beliefs to observations with them).
    Embed = "system.embed" (EmbedParams) -> EmbedResult;
    Profile = "system.profile" (NoParams) -> SystemProfile;
    SnapshotNow = "system.snapshot" (NoParams) -> SnapshotResult;
    SystemHistory = "system.history" (SystemHistoryParams) -> SystemHistoryResult;
    Processes = "system.processes" (ProcessesParams) -> ProcessesResult;
    SystemBudget = "system.budget" (NoParams) -> Budget;
}

#[cfg(test)]
mod tests {
    use super::SystemProfile;

    #[test]
    fn the_machine_line_names_cpu_cores_memory_and_system() {
        let profile = SystemProfile {
            cpu_model: Some("AMD EPYC".into()),
            cpu_cores: Some(2),
            cpu_threads: 4,
            ram_total_bytes: 24 << 30,
            os_name: Some("Debian GNU/Linux".into()),
            arch: "x86_64".into(),
            ..Default::default()
        };
        assert_eq!(
            profile.machine_line(),
            "AMD EPYC (2 cores, 4 threads), 24.0 GiB RAM, Debian GNU/Linux x86_64"
        );
        let unknown = SystemProfile {
            cpu_threads: 1,
            arch: "aarch64".into(),
            ..Default::default()
        };
        assert_eq!(
            unknown.machine_line(),
            "unknown CPU (? cores, 1 threads), 0.0 GiB RAM, aarch64"
        );
    }
}
