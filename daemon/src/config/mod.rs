//! Configuration: defaults, then `config.toml`, then `MNEMO_*` variables and flags (clap
//! reads both, so a flag beats its variable). An unknown key in the file is an error naming
//! the key and the file, so a typo never silently does nothing.

use std::path::{Path, PathBuf};

use mnemo_protocol::graph::EdgeType;
use mnemo_protocol::paths;
use serde::{Deserialize, Serialize};

mod agent;
mod background;
mod context;
mod salience;
mod watch;
pub use agent::{AgentConfig, AutomaticSource, TriggeredSource};
pub use background::{parse_schedule, ConsolidateConfig, HardwareConfig, LlmConfig, ProcessRule};
pub use context::{ContextConfig, ProfileConfig, SessionsConfig, TierShares, TokenizerKind};
pub use salience::SalienceConfig;
pub use watch::WatchConfig;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("config: {0}")]
    Invalid(String),
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Where the database, the model and the lock live.
    pub data_dir: PathBuf,
    pub socket: PathBuf,
    /// `error`, `warn`, `info`, `debug`, `trace`, or a tracing filter such as `mnemo_daemon=debug`.
    pub log_level: String,
    pub log_format: LogFormat,
    /// Largest request line accepted, in bytes.
    pub max_frame_bytes: usize,
    /// Most requests handled at once over all connections; past it, `overloaded`.
    pub max_in_flight: usize,
    pub embedder: EmbedderConfig,
    pub store: StoreConfig,
    pub search: SearchConfig,
    pub salience: SalienceConfig,
    pub usermodel: UserModelConfig,
    pub sessions: SessionsConfig,
    pub context: ContextConfig,
    /// The automatic and triggered layers of memory for agents that act.
    pub agent: AgentConfig,
    pub hardware: HardwareConfig,
    pub consolidate: ConsolidateConfig,
    /// The optional chat endpoint consolidation writes summaries with.
    pub llm: LlmConfig,
    pub security: SecurityConfig,
    /// Notes folders kept remembered (`[[watch]]`, one table per folder).
    pub watch: Vec<WatchConfig>,
    /// What the file said that still works but should change (old key names), for the log.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// The user model (`[usermodel]`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct UserModelConfig {
    /// Read beliefs, preferences and identity from new memories by rule.
    pub extract: bool,
    /// When an LLM endpoint is configured (`[llm] url`), consolidation's refine phase has it
    /// read new memories again for the beliefs and names the rules missed; ingest never
    /// waits for it.
    pub llm_refine: bool,
    /// Most memories one consolidation run has the LLM read; the rest wait for the next run.
    pub llm_refine_per_run: usize,
}

impl Default for UserModelConfig {
    fn default() -> Self {
        Self {
            extract: true,
            llm_refine: true,
            llm_refine_per_run: 100,
        }
    }
}

/// Encryption at rest.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SecurityConfig {
    /// A new store is created encrypted; an existing plain one is converted by `mnemo encrypt`.
    pub encrypt: bool,
    /// Where the key is kept: `auto` (the OS keyring when it answers, else the key file),
    /// `keyring` or `file`. Never in the config itself.
    pub key_store: KeyStoreKind,
    /// The key file (created 0600 when first needed).
    pub key_file: Option<PathBuf>,
}

/// Where keys are kept (`security.key_store`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyStoreKind {
    /// The keyring when it answers, else the key file.
    #[default]
    Auto,
    Keyring,
    File,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    #[default]
    Human,
    Json,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum EmbedderKind {
    /// all-MiniLM-L6-v2 in-process (candle).
    #[default]
    Minilm,
    /// Weightless lexical hashing: works with no model, recalls by words only.
    Hashed,
    /// An Ollama or OpenAI-compatible embeddings endpoint.
    Http,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum HttpApi {
    /// `POST {url}/api/embed`.
    #[default]
    Ollama,
    /// `POST {url}/v1/embeddings` (LM Studio, llama.cpp server, vLLM).
    Openai,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EmbedderConfig {
    pub kind: EmbedderKind,
    /// Directory with model.safetensors, config.json and tokenizer.json; default
    /// `<data_dir>/models/all-MiniLM-L6-v2` (where `packaging/fetch-model.sh` puts them).
    pub model_dir: Option<PathBuf>,
    /// Texts embedded together at most.
    pub batch_size: usize,
    /// Embedding batches run at once on the blocking pool.
    pub workers: usize,
    /// Tokens per text past which the rest is cut (MiniLM was trained on 256).
    pub max_tokens: usize,
    pub http_url: Option<String>,
    pub http_api: HttpApi,
    pub http_model: Option<String>,
    pub http_timeout_ms: u64,
    pub http_api_key_env: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// Seconds after a forget by which its content is gone from old versions and index
    /// files too (forgets within this window share one purge).
    pub purge_after_forget_secs: u64,
    /// How the store commits, indexes and holds what searches read (`[store.advanced]`):
    /// the defaults serve machines from a laptop up; the evidence for each is in
    /// `docs/benchmarks.md`.
    pub advanced: StoreTuning,
}

/// `[store.advanced]`: the store's internals, for when a measurement says to change one.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct StoreTuning {
    /// The writer commits what has queued at least this often.
    pub commit_interval_ms: u64,
    /// ... or as soon as this many rows wait.
    pub commit_max_rows: usize,
    /// Rows past which an ANN vector index is built (exact search below it).
    pub ann_index_min_rows: usize,
    /// How many of the ANN index's partitions a vector search probes, from 0 (Lance's
    /// minimum) to 1 (all of them): more finds more of the exact nearest neighbours and costs
    /// latency. Only searches the held vectors cannot serve (filtered by more than a
    /// namespace, `as_of`, past the rows held) use the index.
    pub ann_search_effort: f64,
    /// The index's quantised distances pick this many times the candidates wanted; their
    /// exact distances rank them.
    pub ann_refine_factor: u32,
    /// Memory LanceDB may keep loaded index pages in (each fold loads new pages while the
    /// old stay cached until this fills).
    pub index_cache_mb: usize,
    /// Memory LanceDB may keep file and version metadata in.
    pub metadata_cache_mb: usize,
    /// Up to this many current memories, their vectors are held in memory at 8 bits a
    /// component and scanned whole for a search, with their words (for the text leg) and, in
    /// a plain store, what a search answers with. Past it (but see `vector_signs`), and at 0,
    /// searches go through the ANN index and the full-text index.
    pub vectors_in_memory_max_rows: usize,
    /// Past `vectors_in_memory_max_rows`, hold two bits a component of each vector's rotation
    /// and scan them for the vector leg, ranking the best by their 8-bit codes read from a
    /// file beside the store, rather than ask the ANN index.
    pub vector_signs: bool,
    /// Up to this many current memories, what ranking reads of each (~200 bytes) is held in
    /// memory, so a search ranks its candidates without reading their rows. Past it, and at
    /// 0, every search reads its candidates' ranking columns from the store.
    pub ranking_in_memory_max_rows: usize,
    /// Rows one segment of the full-text index holds at most. A fold merges new rows into
    /// the last segment, which Lance loads whole to write again: smaller segments hold less
    /// memory during a fold, more of them cost each text search a little.
    pub text_index_segment_rows: usize,
    /// New memories the ANN index leaves to be scanned flat, at most (1/128 of the rows it
    /// holds while that is fewer): each segment a fold adds costs every search the index
    /// serves, where a small tail costs a read of each of its vectors.
    pub ann_flat_tail_rows: usize,
}

/// Moves the keys of [`MOVED_TO_STORE_ADVANCED`] found in `[store]` to `[store.advanced]`
/// (a value set in both places keeps the new one), saying what to change for each.
fn move_old_keys(table: &mut toml::Table) -> Vec<String> {
    let Some(toml::Value::Table(store)) = table.get_mut("store") else {
        return Vec::new();
    };
    let mut warnings = Vec::new();
    for key in MOVED_TO_STORE_ADVANCED {
        let Some(value) = store.remove(key) else {
            continue;
        };
        let advanced = store
            .entry("advanced")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if let toml::Value::Table(advanced) = advanced {
            advanced.entry(key).or_insert(value);
        }
        warnings.push(format!(
            "store.{key} is now store.advanced.{key} (under [store.advanced]); the old name is \
             read until the next release"
        ));
    }
    warnings
}

/// The `[store]` keys that moved to `[store.advanced]`; the old names are read, with a
/// warning, until the next release.
const MOVED_TO_STORE_ADVANCED: [&str; 12] = [
    "commit_interval_ms",
    "commit_max_rows",
    "ann_index_min_rows",
    "ann_search_effort",
    "ann_refine_factor",
    "index_cache_mb",
    "metadata_cache_mb",
    "vectors_in_memory_max_rows",
    "vector_signs",
    "ranking_in_memory_max_rows",
    "text_index_segment_rows",
    "ann_flat_tail_rows",
];

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SearchConfig {
    pub default_k: usize,
    /// Candidates each retriever contributes before fusion, as a multiple of k (at least 50,
    /// at most k + 250).
    pub candidate_factor: usize,
    /// Half-life of the recency component, in days.
    pub recency_half_life_days: f32,
    /// How the vector and full-text lists become one: `weighted` scores or `rrf` ranks.
    pub fusion: Fusion,
    /// Share of the full-text score in weighted fusion (the vector gets the rest).
    pub text_weight: f32,
    /// Weight of the entity component: memories that mention the names a query names (rare
    /// names count more) rank higher. 0 turns it off.
    pub entity_weight: f32,
    /// Weight of the subject component: a memory by someone the query names (the speaker of
    /// a `Name: …` line) or, without a speaker, naming them first, ranks above one that
    /// only mentions them: "What does Maria like?" is answered by what Maria said, not by
    /// the replies to her. 0 turns it off.
    pub subject_weight: f32,
    /// A name at least this share of a namespace's memories mention (its owner, the other
    /// side of a chat) is left out of what the vector and full-text retrievers are asked: it
    /// tells little about which memories answer, yet outweighs the rest of a short memory's
    /// words. The entity component still ranks by it. 0 turns this off.
    pub common_name_share: f32,
    /// Weight of the graph component: the best `graph_seeds` results lend their score to the
    /// memories `graph_hops` steps away over `graph_edges` (their conversation, and what
    /// consolidation found similar), each further step keeping 70 %, so the answer said a
    /// turn after the question is found with it. 0 turns it off. The default sits in the
    /// middle of the range (0.35–0.45) where LoCoMo dev's every category stays at or above
    /// 0.55: more lets one strong turn's neighbours crowd out the other turns a multi-hop
    /// answer needs; less loses the reply said a turn after a question.
    pub graph_weight: f32,
    pub graph_seeds: usize,
    pub graph_hops: usize,
    /// The edges between memories the graph component walks.
    pub graph_edges: Vec<EdgeType>,
    /// Weight of the time component: when the query names a time ("in June 2023", "last
    /// week"), memories that speak about (or happened in) that time rank higher. 0 turns it off.
    pub time_weight: f32,
    /// Weights of the fused relevance, the memory's salience (0–10, scaled to 0–1), its
    /// strength and its recency in the final score.
    pub relevance_weight: f32,
    pub salience_weight: f32,
    pub strength_weight: f32,
    pub recency_weight: f32,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Fusion {
    #[default]
    Weighted,
    Rrf,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            data_dir: paths::default_data_dir(),
            socket: paths::default_socket_path(),
            log_level: "info".into(),
            log_format: LogFormat::Human,
            max_frame_bytes: mnemo_protocol::DEFAULT_MAX_FRAME_BYTES,
            max_in_flight: 256,
            embedder: EmbedderConfig::default(),
            store: StoreConfig::default(),
            search: SearchConfig::default(),
            salience: SalienceConfig::default(),
            usermodel: UserModelConfig::default(),
            sessions: SessionsConfig::default(),
            context: ContextConfig::default(),
            agent: AgentConfig::default(),
            hardware: Default::default(),
            consolidate: Default::default(),
            llm: Default::default(),
            security: Default::default(),
            watch: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

impl Default for EmbedderConfig {
    fn default() -> Self {
        Self {
            kind: EmbedderKind::Minilm,
            model_dir: None,
            batch_size: 32,
            workers: 1,
            max_tokens: 256,
            http_url: None,
            http_api: HttpApi::Ollama,
            http_model: None,
            http_timeout_ms: 10_000,
            http_api_key_env: None,
        }
    }
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            purge_after_forget_secs: 30,
            advanced: StoreTuning::default(),
        }
    }
}

impl Default for StoreTuning {
    fn default() -> Self {
        Self {
            commit_interval_ms: 5,
            commit_max_rows: 1024,
            ann_index_min_rows: 10_000,
            ann_search_effort: 0.75,
            ann_refine_factor: 2,
            index_cache_mb: 128,
            metadata_cache_mb: 32,
            vectors_in_memory_max_rows: 250_000,
            vector_signs: true,
            ranking_in_memory_max_rows: 2_000_000,
            text_index_segment_rows: 262_144,
            ann_flat_tail_rows: 8_192,
        }
    }
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self {
            default_k: 10,
            candidate_factor: 5,
            recency_half_life_days: 30.0,
            fusion: Fusion::Weighted,
            text_weight: 0.5,
            entity_weight: 0.1,
            subject_weight: 0.3,
            common_name_share: 0.25,
            graph_weight: 0.4,
            graph_seeds: 5,
            graph_hops: 2,
            graph_edges: vec![EdgeType::TemporalSequence],
            time_weight: 0.2,
            relevance_weight: 0.9,
            salience_weight: 0.04,
            strength_weight: 0.03,
            recency_weight: 0.03,
        }
    }
}

/// Values from the command line or the environment; each `Some` beats the file.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub data_dir: Option<PathBuf>,
    pub socket: Option<PathBuf>,
    pub log_level: Option<String>,
    pub log_format: Option<LogFormat>,
    pub embedder: Option<EmbedderKind>,
    pub model_dir: Option<PathBuf>,
}

/// `key_file` as the config names it, relative to the config's directory; by default
/// `mnemo.key` there.
fn key_file_beside(config: &Path, key_file: Option<PathBuf>) -> PathBuf {
    let key_file = key_file.unwrap_or_else(|| PathBuf::from("mnemo.key"));
    match config.parent() {
        Some(dir) if key_file.is_relative() => dir.join(key_file),
        _ => key_file,
    }
}

impl Config {
    /// Loads `path` (the default path may be absent; a path the user named may not).
    pub fn load(path: Option<&Path>, overrides: &Overrides) -> Result<Self, ConfigError> {
        let (path, named) = match path {
            Some(p) => (p.to_path_buf(), true),
            None => (paths::default_config_path(), false),
        };
        let mut config = match std::fs::read_to_string(&path) {
            Ok(text) => Self::from_toml(&text).map_err(|message| ConfigError::Parse {
                path: path.clone(),
                message,
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !named => Config::default(),
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        config.apply(overrides);
        for w in &mut config.watch {
            w.expand_home();
        }
        config.validate()?;
        config.security.key_file = Some(key_file_beside(&path, config.security.key_file.take()));
        Ok(config)
    }

    pub fn from_toml(text: &str) -> Result<Self, String> {
        let parsed = || -> Result<Self, String> {
            toml::from_str(text).map_err(|e| e.message().to_string() + &span_hint(text, e.span()))
        };
        let mut table: toml::Table = match toml::from_str(text) {
            Ok(table) => table,
            Err(_) => return parsed(),
        };
        let warnings = move_old_keys(&mut table);
        if warnings.is_empty() {
            return parsed();
        }
        let mut config = Self::deserialize(table).map_err(|e| e.message().to_string())?;
        config.warnings = warnings;
        Ok(config)
    }

    fn apply(&mut self, o: &Overrides) {
        if let Some(v) = &o.data_dir {
            self.data_dir = v.clone();
        }
        if let Some(v) = &o.socket {
            self.socket = v.clone();
        }
        if let Some(v) = &o.log_level {
            self.log_level = v.clone();
        }
        if let Some(v) = o.log_format {
            self.log_format = v;
        }
        if let Some(v) = o.embedder {
            self.embedder.kind = v;
        }
        if let Some(v) = &o.model_dir {
            self.embedder.model_dir = Some(v.clone());
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: &str| Err(ConfigError::Invalid(m.to_string()));
        if self.max_frame_bytes < 1024 {
            return bad("max_frame_bytes must be at least 1024");
        }
        if self.embedder.batch_size == 0 || self.embedder.workers == 0 {
            return bad("embedder.batch_size and embedder.workers must be at least 1");
        }
        if self.hardware.snapshot_interval_secs == 0 || self.hardware.process_interval_secs == 0 {
            return bad(
                "hardware.snapshot_interval_secs and process_interval_secs must be at least 1",
            );
        }
        self.consolidate.validate().map_err(ConfigError::Invalid)?;
        self.context.validate().map_err(ConfigError::Invalid)?;
        self.agent.validate().map_err(ConfigError::Invalid)?;
        for w in &self.watch {
            w.validate().map_err(ConfigError::Invalid)?;
        }
        let search = &self.search;
        self.salience.validate().map_err(ConfigError::Invalid)?;
        let weights = [
            search.entity_weight,
            search.subject_weight,
            search.graph_weight,
            search.text_weight,
            search.time_weight,
            search.relevance_weight,
            search.salience_weight,
            search.strength_weight,
            search.recency_weight,
        ];
        if weights.iter().any(|w| *w < 0.0 || !w.is_finite()) {
            return bad("search weights must be 0 or more (0 turns a component off)");
        }
        if !(0.0..=1.0).contains(&search.common_name_share) {
            return bad("search.common_name_share is a share of memories, 0–1 (0 turns it off)");
        }
        if search.graph_seeds > 50 || search.graph_hops > 3 {
            return bad("search.graph_seeds must be at most 50 and search.graph_hops at most 3");
        }
        if let Some(t) = search.graph_edges.iter().find(|t| !links_memories(**t)) {
            return Err(ConfigError::Invalid(format!(
                "search.graph_edges: {t} does not link memories to memories; use some of {}",
                EdgeType::ALL
                    .iter()
                    .filter(|t| links_memories(**t))
                    .map(|t| t.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        if self.store.advanced.commit_max_rows == 0 {
            return bad("store.advanced.commit_max_rows must be at least 1");
        }
        if !(0.0..=1.0).contains(&self.store.advanced.ann_search_effort) {
            return bad("store.advanced.ann_search_effort must be between 0 and 1");
        }
        if !(1..=100).contains(&self.store.advanced.ann_refine_factor) {
            return bad("store.advanced.ann_refine_factor must be between 1 and 100");
        }
        if self.store.advanced.index_cache_mb < 8 || self.store.advanced.metadata_cache_mb < 8 {
            return bad("store.advanced.index_cache_mb and store.advanced.metadata_cache_mb must be at least 8");
        }
        if self.store.advanced.text_index_segment_rows < 1024 {
            return bad("store.advanced.text_index_segment_rows must be at least 1024");
        }
        if self.store.purge_after_forget_secs > 3600 {
            return bad("store.purge_after_forget_secs must be at most 3600 (an hour)");
        }
        if self.embedder.kind == EmbedderKind::Http && self.embedder.http_url.is_none() {
            return bad(
                "embedder.kind = \"http\" needs embedder.http_url (e.g. http://127.0.0.1:11434)",
            );
        }
        Ok(())
    }

    pub fn db_dir(&self) -> PathBuf {
        self.data_dir.join("db")
    }

    /// The key of an encrypted store: `security.key_file` (resolved at load), else the
    /// default place.
    pub fn key_file(&self) -> PathBuf {
        self.security
            .key_file
            .clone()
            .unwrap_or_else(paths::default_key_path)
    }

    pub fn model_dir(&self) -> PathBuf {
        self.embedder
            .model_dir
            .clone()
            .unwrap_or_else(|| paths::model_dir(&self.data_dir))
    }
}

fn span_hint(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!(" (line {line})")
        }
        None => String::new(),
    }
}

/// Whether edges of type `t` join two memories (a walk from results reaches results).
fn links_memories(t: EdgeType) -> bool {
    !matches!(t, EdgeType::Mentions | EdgeType::RelatesTo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_gives_documented_defaults() {
        let config = Config::from_toml("").unwrap();
        assert_eq!(config.max_frame_bytes, 8 * 1024 * 1024);
        assert_eq!(config.embedder.kind, EmbedderKind::Minilm);
        assert_eq!(config.store.advanced.commit_interval_ms, 5);
    }

    #[test]
    fn unknown_key_is_named() {
        let err = Config::from_toml("log_levle = \"debug\"\n").unwrap_err();
        assert!(err.contains("log_levle"), "{err}");
        let err = Config::from_toml("[store]\ncommit_every = 3\n").unwrap_err();
        assert!(
            err.contains("commit_every") && err.contains("line 2"),
            "{err}"
        );
    }

    #[test]
    fn error_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "bogus = 1\n").unwrap();
        let err = Config::load(Some(&path), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bogus") && err.contains("config.toml"),
            "{err}"
        );
    }

    /// `text` as `dir`/config.toml, loaded.
    fn load_text(dir: &Path, text: &str) -> Result<Config, ConfigError> {
        let path = dir.join("config.toml");
        std::fs::write(&path, text).unwrap();
        Config::load(Some(&path), &Overrides::default())
    }

    #[test]
    fn the_key_file_is_beside_the_config_unless_named_absolutely() {
        let dir = tempfile::tempdir().unwrap();
        let load = |text: &str| load_text(dir.path(), text).unwrap().key_file();
        assert_eq!(load(""), dir.path().join("mnemo.key"));
        assert_eq!(
            load("[security]\nkey_file = \"keys/k\"\n"),
            dir.path().join("keys/k")
        );
        assert_eq!(
            load("[security]\nencrypt = true\nkey_file = \"/secure/k\"\n"),
            Path::new("/secure/k")
        );
    }

    #[test]
    fn the_key_store_is_auto_unless_named_and_a_wrong_name_lists_the_choices() {
        let dir = tempfile::tempdir().unwrap();
        let load = |text: &str| load_text(dir.path(), text).map(|c| c.security.key_store);
        assert_eq!(load("").unwrap(), KeyStoreKind::Auto);
        assert_eq!(
            load("[security]\nkey_store = \"keyring\"\n").unwrap(),
            KeyStoreKind::Keyring
        );
        let err = load("[security]\nkey_store = \"vault\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("vault") && err.contains("keyring"), "{err}");
    }

    #[test]
    fn a_named_file_must_exist_but_the_default_need_not() {
        let err = Config::load(
            Some(Path::new("/nonexistent/mnemo.toml")),
            &Overrides::default(),
        );
        assert!(matches!(err, Err(ConfigError::Read { .. })));
    }

    #[test]
    fn overrides_beat_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "log_level = \"warn\"\ndata_dir = \"/a\"\n").unwrap();
        let o = Overrides {
            data_dir: Some("/b".into()),
            ..Default::default()
        };
        let config = Config::load(Some(&path), &o).unwrap();
        assert_eq!(config.data_dir, PathBuf::from("/b"));
        assert_eq!(config.log_level, "warn");
    }

    #[test]
    fn http_embedder_needs_a_url() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "[embedder]\nkind = \"http\"\n").unwrap();
        let err = Config::load(Some(&path), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("http_url"), "{err}");
    }

    #[test]
    fn lance_cache_sizes_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let err = load_text(dir.path(), "[store.advanced]\nindex_cache_mb = 0\n").unwrap_err();
        assert!(err.to_string().contains("at least 8"), "{err}");
        let ok = load_text(dir.path(), "[store.advanced]\nmetadata_cache_mb = 64\n").unwrap();
        assert_eq!(
            (
                ok.store.advanced.index_cache_mb,
                ok.store.advanced.metadata_cache_mb
            ),
            (128, 64)
        );
        assert!(ok.warnings.is_empty(), "{:?}", ok.warnings);
    }

    #[test]
    fn old_store_key_names_are_read_and_warned_about() {
        let dir = tempfile::tempdir().unwrap();
        let text = "[store]\npurge_after_forget_secs = 60\nvector_signs = false\n\
                    commit_max_rows = 9\n[store.advanced]\ncommit_max_rows = 7\n";
        let config = load_text(dir.path(), text).unwrap();
        assert_eq!(config.store.purge_after_forget_secs, 60);
        assert!(!config.store.advanced.vector_signs);
        // Set under both names: the new one wins.
        assert_eq!(config.store.advanced.commit_max_rows, 7);
        assert_eq!(config.warnings.len(), 2, "{:?}", config.warnings);
        assert!(config.warnings[0].contains("store.advanced.commit_max_rows"));
        // A key that never existed is still refused.
        let err = load_text(dir.path(), "[store]\nvector_sign = false\n").unwrap_err();
        assert!(err.to_string().contains("vector_sign"), "{err}");
    }

    #[test]
    fn search_weights_and_graph_limits_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let err = |text: &str| load_text(dir.path(), text).unwrap_err().to_string();
        assert!(err("[search]\ngraph_weight = -1.0\n").contains("0 or more"));
        assert!(err("[search]\ngraph_hops = 4\n").contains("graph_hops at most 3"));
        assert!(err("[search]\ngraph_edges = [\"MENTIONS\"]\n").contains("SIMILAR"));
        assert!(err("[search]\ngraph_edges = [\"NEAR\"]\n").contains("NEAR"));
        let ok = load_text(dir.path(), "[search]\ngraph_edges = [\"SIMILAR\"]\n").unwrap();
        assert_eq!(ok.search.graph_edges, vec![EdgeType::Similar]);
        let ok = load_text(dir.path(), "[search]\ngraph_weight = 0.0\n").unwrap();
        assert_eq!((ok.search.graph_weight, ok.search.graph_hops), (0.0, 2));
    }
}
