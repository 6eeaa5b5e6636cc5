//! `daemon.*` methods.

use serde::{Deserialize, Serialize};

use super::NoParams;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HelloParams {
    /// The client's name, for the daemon's log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The protocol version the client speaks; a mismatch in the major number is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HelloResult {
    pub name: String,
    pub version: String,
    pub protocol_version: u32,
    /// Every method this daemon answers.
    pub capabilities: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StatusResult {
    pub pid: u32,
    pub uptime_secs: f64,
    pub version: String,
    pub protocol_version: u32,
    pub data_dir: String,
    pub socket: String,
    pub components: Vec<ComponentState>,
    pub queues: QueueDepths,
    /// Current memories, in all and by kind.
    #[serde(default)]
    pub memories: MemoryCounts,
    /// Totals since start; rates are their differences over time.
    #[serde(default)]
    pub counters: Counters,
    /// Memories whose vectors come from another model, being re-embedded with the
    /// configured one (they are found by their words meanwhile). Absent when none are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reembed: Option<ReembedStatus>,
    #[serde(default)]
    pub encryption: EncryptionStatus,
    /// Sessions open now.
    #[serde(default)]
    pub active_sessions: u64,
    /// The accounting of the last context package built, when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_context: Option<LastContext>,
    /// The notes folders the config names (`[[watch]]`), each with its scan's progress.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub watch: Vec<WatchedFolder>,
    /// The memories' indexes as index maintenance last saw them (it looks every 20 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexes: Option<IndexStatus>,
    /// The Cargo profile mnemod was built with (`release`, `debug`): figures from a debug
    /// build are 10–50× slower.
    #[serde(default)]
    pub build: String,
    /// mnemod's memory now, where the system says (Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<ProcessMemory>,
}

/// A process's resident memory, split into what it allocated and what it maps from files
/// (its own program's pages, which the kernel shares with the page cache and may drop).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessMemory {
    pub rss_bytes: u64,
    /// Allocated memory (heap, caches, the model's weights).
    pub anon_bytes: u64,
    /// Mapped file pages (mostly mnemod's own code).
    pub file_bytes: u64,
    /// Of the allocated, what mnemod holds for searches: the current memories' codes and
    /// ranking values (absent when none are held, and from a process that does not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_bytes: Option<u64>,
    /// Of the allocated, LanceDB's index and metadata caches (bounded by
    /// `store.advanced.index_cache_mb` and `store.advanced.metadata_cache_mb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lance_cache_bytes: Option<u64>,
}

/// How searches find the memories: the vector leg through the ANN index or by comparing
/// every vector, and how many rows wait to be folded into the indexes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IndexStatus {
    /// Rows in the memories table, every version included.
    pub rows: u64,
    pub ann: bool,
    /// Rows past which the ANN index is built (`store.advanced.ann_index_min_rows`).
    pub ann_min_rows: u64,
    /// Rows added since the last fold, searched one by one meanwhile.
    pub unindexed_rows: u64,
    /// Nothing for maintenance to do: every index built, new rows folded in (a few hundred
    /// may wait for more), the ANN index in one segment, and the small fragments folds
    /// leave merged once they are many.
    pub settled: bool,
    /// Current memories whose vectors are held in memory (8-bit codes) and scanned for the
    /// vector leg; absent when the ANN index (or exact search) serves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_vectors: Option<u64>,
    /// The vectors held are one sign bit a component (past
    /// `store.advanced.vectors_in_memory_max_rows`), their 8-bit codes in a file beside the store.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held_vector_signs: bool,
}

/// One notes folder mnemod keeps remembered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WatchedFolder {
    pub path: String,
    pub namespace: String,
    /// `scanning` (the first pass over every file), `watching`, `paused` (the folder is gone
    /// or its drive not mounted: nothing is forgotten until it is back; see `error`), or
    /// `failed` (see `error`).
    pub state: String,
    /// Notes read so far in this scan, and how many the scan found (progress).
    pub scanned: u64,
    pub files: u64,
    /// Current memories that come from the folder's notes.
    pub memories: u64,
    /// Files left out (symlinks out of the folder, binary, over the size limit, unreadable).
    pub skipped: u64,
    /// When the last change was taken in (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_change: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What the last `context.build` made: its budget and each tier's share of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LastContext {
    pub at: String,
    pub profile: String,
    pub budget: u32,
    pub tokens: u32,
    pub tiers: Vec<TierUse>,
    pub dropped: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TierUse {
    pub tier: crate::context::Tier,
    pub allotted: u32,
    pub tokens: u32,
    pub items: u64,
}

impl LastContext {
    pub fn of(package: &crate::context::Package, at: String) -> Self {
        Self {
            at,
            profile: package.profile.clone(),
            budget: package.budget,
            tokens: package.tokens,
            tiers: package
                .tiers
                .iter()
                .map(|t| TierUse {
                    tier: t.tier,
                    allotted: t.allotted,
                    tokens: t.tokens,
                    items: t.items.len() as u64,
                })
                .collect(),
            dropped: package.dropped_count,
        }
    }
}

/// Whether memories are encrypted at rest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EncryptionMode {
    #[default]
    Off,
    On,
    /// Some memories are sealed: `mnemo encrypt` is running or was interrupted (run it again).
    Converting,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EncryptionStatus {
    pub mode: EncryptionMode,
    /// Where the key is, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<KeyLocation>,
    /// The config asks for encryption and the store is not yet encrypted: run `mnemo encrypt`.
    #[serde(default)]
    pub asked: bool,
    /// Memories sealed of those to seal, while `mnemo encrypt` runs.
    #[serde(default)]
    pub done: u64,
    #[serde(default)]
    pub total: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EncryptResult {
    /// Memory rows (versions included) sealed by this call; 0 when already encrypted.
    pub sealed: u64,
    /// Where the key is; without it the store cannot be read.
    pub key: KeyLocation,
}

/// Where a store's key is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "store", rename_all = "snake_case")]
pub enum KeyLocation {
    /// A 0600 file.
    File { path: String },
    /// The OS keyring (`backend` names it: Secret Service, macOS Keychain, …), under this
    /// service and account.
    Keyring {
        backend: String,
        service: String,
        account: String,
    },
}

impl std::fmt::Display for KeyLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyLocation::File { path } => write!(f, "file {path}"),
            KeyLocation::Keyring {
                backend,
                service,
                account,
            } => write!(f, "{backend} keyring, service {service}, account {account}"),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReembedStatus {
    /// The model the vectors are being brought to.
    pub model: String,
    pub done: u64,
    pub total: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MemoryCounts {
    pub total: u64,
    pub by_kind: std::collections::BTreeMap<String, u64>,
    /// Current memories in each namespace (an older mnemod did not send them).
    #[serde(default)]
    pub by_namespace: std::collections::BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Counters {
    pub memories_added: u64,
    pub searches: u64,
}

impl StatusResult {
    /// True when any component runs in a reduced mode the user should know about.
    pub fn degraded(&self) -> bool {
        self.components
            .iter()
            .any(|c| c.state != ComponentHealth::Ok)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ComponentState {
    pub name: String,
    pub state: ComponentHealth,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComponentHealth {
    Ok,
    Degraded,
    Starting,
    Failed,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct QueueDepths {
    /// Requests being handled right now.
    pub in_flight_requests: usize,
    /// Rows waiting for the writer's next group commit.
    pub pending_writes: usize,
    /// Texts waiting to be embedded.
    pub pending_embeds: usize,
    pub connections: usize,
}

/// Moves mnemod's clock ahead, for tests of what time does (decay, fading); answered only by
/// a mnemod started with `--test-clock`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdvanceClockParams {
    /// Seconds to move the clock ahead (0 to 31,536,000).
    pub seconds: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AdvanceClockResult {
    /// The daemon's time after the move (RFC 3339).
    pub now: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShutdownResult {
    pub stopping: bool,
}

crate::methods! {
    Hello = "daemon.hello" (HelloParams) -> HelloResult;
    Status = "daemon.status" (NoParams) -> StatusResult;
    Shutdown = "daemon.shutdown" (NoParams) -> ShutdownResult;
    Encrypt = "daemon.encrypt" (NoParams) -> EncryptResult;
    AdvanceClock = "daemon.advance_clock" (AdvanceClockParams) -> AdvanceClockResult;
}
