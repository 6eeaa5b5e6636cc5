//! Storage: one LanceDB database under the data dir. Every write to every table goes through
//! the [`writer`] task; reads go straight to LanceDB and run concurrently.

pub mod beliefs;
pub(crate) mod beside;
pub(crate) mod column;
mod counts;
pub mod edges;
mod encryption;
pub mod entities;
mod error;
pub mod filter;
mod group;
pub mod indexes;
pub mod keyed;
pub mod keystore;
pub(crate) mod memories;
pub mod observe;
mod op;
pub mod procedures;
pub mod projects;
pub(crate) mod purge;
mod remap;
pub mod rewrite;
pub mod runs;
pub mod schema;
mod scrub;
pub mod seal;
pub mod sessions;
pub mod sql;
pub mod stats;
pub mod summaries;
pub mod system;
mod tables;
pub mod versions;
pub mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lance::cache::{CacheBackend, QuickCacheBackend, QuickCacheShardPolicy};
use lancedb::arrow::arrow_array::{Array, RecordBatch, RecordBatchIterator, StringArray};
use lancedb::arrow::arrow_schema::{DataType, Field, Schema, SchemaRef};
use lancedb::{Connection, Table};

pub use beside::Fold;
pub use column::Floats;
pub use error::{without_source_locations, StoreError};
pub use keystore::KeySettings;
pub use memories::Near;
pub use schema::{MemoryRecord, MEMORIES_SCHEMA_VERSION};
pub use sql::{col, Expr, Pred, SqlType};
pub use writer::{WriteOp, WriterHandle};

use crate::config::StoreConfig;
use counts::Counts;
use mnemo_protocol::daemon::MemoryCounts;

pub use tables::MEMORIES;
const META: &str = "meta";

pub struct Store {
    db: Connection,
    /// LanceDB's caches, shared by every table (their size is reported in status).
    session: Arc<lancedb::Session>,
    /// The session's index cache, emptied (with its metadata cache) when a fold, compaction,
    /// ANN build or purge replaces the memories' files.
    index_cache: Arc<dyn CacheBackend>,
    memories: Table,
    meta: Table,
    system: system::SystemTables,
    runs: runs::RunTables,
    edges: edges::EdgeTable,
    entities: entities::EntityTable,
    beliefs: beliefs::BeliefTable,
    projects: projects::ProjectTable,
    sessions: sessions::SessionTable,
    summaries: summaries::SummaryTable,
    procedures: procedures::ProcedureTable,
    stats: stats::StatTable,
    schema: SchemaRef,
    writer: WriterHandle,
    writer_task: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    dim: usize,
    /// The configured embedder's model: vectors of any other are stale.
    embed_model: String,
    /// Told of each commit (the search index held in memory, `crate::held`).
    observers: observe::Observers,
    config: StoreConfig,
    /// Set by the writer once the full-text index exists; it is never dropped while running.
    fts_ready: Arc<AtomicBool>,
    /// Set while an ANN index trains (the writer holds its folds meanwhile).
    ann_training: Arc<AtomicBool>,
    counts: Arc<Counts>,
    /// Wakes index maintenance to purge what a forget left in old versions.
    purge: tokio::sync::Notify,
    /// Wakes index maintenance to fold new rows into the indexes (the writer counts them).
    fold_due: Arc<tokio::sync::Notify>,
    /// Held by whatever rewrites the memories' files (compaction, purge) and by an ANN index
    /// build, which a rewrite under way would void (or, for a purge, whose files it deletes).
    rewrites: tokio::sync::Mutex<()>,
    /// The memories' rows and unindexed rows at the last maintenance pass: the same at the
    /// next means writes have paused (`Fold::Settle`).
    rows_at_last_pass: std::sync::Mutex<Option<(usize, usize)>>,
    /// Encryption at rest: the keys, if any, and whether writes are sealed.
    sealing: Arc<seal::Sealing>,
    seal_progress: Arc<seal::SealProgress>,
    key: KeySettings,
    /// Where the database is: the keyring files each store's key under it.
    db_dir: PathBuf,
}

impl Store {
    /// Opens (or creates) the database, checking its schema version and vector dimension.
    pub async fn open(
        db_dir: &Path,
        dim: usize,
        embed_model: &str,
        config: &StoreConfig,
        key: &KeySettings,
    ) -> Result<Arc<Store>, StoreError> {
        std::fs::create_dir_all(db_dir)
            .map_err(|e| StoreError::Lance(format!("cannot create {}: {e}", db_dir.display())))?;
        let uri = db_dir.to_string_lossy().to_string();
        const MB: usize = 1024 * 1024;
        // As `Session::new` builds it, but kept here to be emptied.
        let index_cache: Arc<dyn CacheBackend> = Arc::new(QuickCacheBackend::with_shard_policy(
            config.advanced.index_cache_mb * MB,
            QuickCacheShardPolicy::Single,
        ));
        let session = Arc::new(lancedb::Session::with_index_cache_backend(
            index_cache.clone(),
            config.advanced.metadata_cache_mb * MB,
            Default::default(),
        ));
        let db = lancedb::connect(&uri)
            .session(session.clone())
            .execute()
            .await?;
        let names = db.table_names().execute().await?;
        let memories = if names.iter().any(|n| n == MEMORIES) {
            db.open_table(MEMORIES).execute().await?
        } else {
            db.create_empty_table(MEMORIES, schema::memories_schema(dim))
                .execute()
                .await?
        };
        let meta = open_meta(&db, &names).await?;
        // First, so a missing or wrong key refuses the start before anything is written.
        let sealing = Arc::new(encryption::sealing_at_open(db_dir, &meta, &memories, key).await?);
        let stored_model = read_meta(&meta, "embed.model").await?;
        migrate_memories(&memories, dim, stored_model.as_deref()).await?;
        let schema = memories.schema().await?;
        let system = system::SystemTables::open(&db, &names).await?;
        let runs = runs::RunTables::open(&db, &names).await?;
        let edges = edges::EdgeTable::open(&db, &names).await?;
        let entities = keyed::KeyedTable::open(&db, &names, entities::ENTITIES).await?;
        let beliefs = keyed::KeyedTable::open(&db, &names, beliefs::BELIEFS).await?;
        let projects = keyed::KeyedTable::open(&db, &names, projects::PROJECTS).await?;
        let sessions = keyed::KeyedTable::open(&db, &names, sessions::SESSIONS).await?;
        let summaries = keyed::KeyedTable::open(&db, &names, summaries::SUMMARIES).await?;
        let procedures = keyed::KeyedTable::open(&db, &names, procedures::PROCEDURES).await?;
        let stats = keyed::KeyedTable::open(&db, &names, stats::STATS).await?;
        let found: u32 = read_meta(&meta, "memories.schema_version")
            .await?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if found > MEMORIES_SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                found,
                known: MEMORIES_SCHEMA_VERSION,
            });
        }
        // Before the writer exists nothing else writes, so these commits cannot race.
        write_meta(
            &meta,
            "memories.schema_version",
            &MEMORIES_SCHEMA_VERSION.to_string(),
        )
        .await?;
        write_meta(&meta, "embed.model", embed_model).await?;
        write_meta(&meta, "embed.dim", &dim.to_string()).await?;

        let counts = Arc::new(Counts::default());
        counts.recount(&memories).await?;
        let (text_column, _) = sealing.text_index();
        let has_fts = memories
            .list_indices()
            .await?
            .iter()
            .any(|i| i.columns.iter().any(|c| c == text_column));
        let fts_ready = Arc::new(AtomicBool::new(has_fts));
        let ann_training = Arc::new(AtomicBool::new(false));
        let fold_due = Arc::new(tokio::sync::Notify::new());
        let seal_progress = Arc::new(seal::SealProgress::default());
        let observers = observe::Observers::default();
        let (writer, task) = writer::start(
            writer::Memories {
                table: memories.clone(),
                schema: schema.clone(),
                fts_ready: fts_ready.clone(),
                counts: counts.clone(),
                unfolded: Default::default(),
                fold_due: fold_due.clone(),
                ann_training: ann_training.clone(),
                sealing: sealing.clone(),
                seal_progress: seal_progress.clone(),
                observers: observers.clone(),
                fold_bounds: beside::FoldBounds::of(config),
            },
            writer::WriterSettings {
                interval: Duration::from_millis(config.advanced.commit_interval_ms),
                max_rows: config.advanced.commit_max_rows,
            },
        );
        let store = Arc::new(Store {
            db,
            session,
            index_cache,
            memories,
            meta,
            system,
            runs,
            edges,
            entities,
            beliefs,
            projects,
            sessions,
            summaries,
            procedures,
            stats,
            schema,
            writer,
            writer_task: std::sync::Mutex::new(Some(task)),
            dim,
            embed_model: embed_model.to_string(),
            observers,
            config: config.clone(),
            fts_ready,
            ann_training,
            fold_due,
            counts,
            purge: Default::default(),
            rewrites: Default::default(),
            rows_at_last_pass: Default::default(),
            sealing,
            seal_progress,
            key: key.clone(),
            db_dir: db_dir.to_path_buf(),
        });
        Ok(store)
    }

    /// Encryption at rest: what reads open and writes seal with.
    pub fn sealing(&self) -> &seal::Sealing {
        &self.sealing
    }

    /// What makes two texts the same memory here (keyed in an encrypted store).
    pub fn content_hash(&self, content: &str) -> String {
        self.sealing.content_hash(content)
    }

    /// How an entity's folded name is stored and looked up here (keyed when encrypted).
    pub fn entity_key(&self, folded: &str) -> String {
        self.sealing.entity_key(folded)
    }

    pub fn writer(&self) -> &WriterHandle {
        &self.writer
    }

    /// The settings it was opened with.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// The memories' table, for reads.
    pub(crate) fn memories_table(&self) -> &Table {
        &self.memories
    }

    /// The memories' schema as stored.
    pub(crate) fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Current memories, kept by the writer (no scan).
    pub(crate) fn current_memories(&self) -> u64 {
        self.counts.total()
    }

    /// Where the database is.
    pub(crate) fn db_dir(&self) -> &Path {
        &self.db_dir
    }

    /// Counts the current memories again, for a test that changed them behind the writer.
    #[cfg(test)]
    pub(crate) async fn recount(&self) -> Result<(), StoreError> {
        self.counts.recount(&self.memories).await
    }

    /// Whether every current memory is of `namespace` (and there is at least one).
    pub(crate) fn all_of(&self, namespace: &str) -> bool {
        self.counts.all_of(namespace)
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The model every vector should come from (the configured embedder's).
    pub fn embed_model(&self) -> &str {
        &self.embed_model
    }

    /// Current memories by kind, kept by the writer (no scan).
    pub fn memory_counts(&self) -> MemoryCounts {
        self.counts.get()
    }

    /// Of mnemod's allocated memory, the bytes LanceDB's caches hold.
    pub async fn lance_cache_bytes(&self) -> u64 {
        let index = self.session.index_cache_stats().await.size_bytes;
        let metadata = self.session.metadata_cache_stats().await.size_bytes;
        (index + metadata) as u64
    }

    /// Registers what is told of each commit from now on (`observe.rs`); false when one is
    /// registered already.
    pub fn observe(&self, observer: std::sync::Weak<dyn observe::CommitObserver>) -> bool {
        self.observers.register(observer)
    }

    /// What is told of each commit, while it lives.
    pub(crate) fn observer(&self) -> Option<Arc<dyn observe::CommitObserver>> {
        self.observers.get()
    }

    /// True once the full-text index exists (the writer builds it with the first rows).
    pub fn text_index_ready(&self) -> bool {
        self.fts_ready.load(Ordering::Acquire)
    }

    /// Asks index maintenance to purge deleted content from old versions and indexes soon.
    pub fn request_purge(&self) {
        self.purge.notify_one();
    }

    /// Resolves when a purge was asked for ([`Store::request_purge`]).
    pub(crate) async fn purge_requested(&self) {
        self.purge.notified().await
    }

    /// Resolves when the writer asks for the rows it appended to be folded into the indexes.
    pub(crate) async fn fold_requested(&self) {
        self.fold_due.notified().await
    }

    pub fn system(&self) -> &system::SystemTables {
        &self.system
    }

    pub fn runs(&self) -> &runs::RunTables {
        &self.runs
    }

    pub fn edges(&self) -> &edges::EdgeTable {
        &self.edges
    }

    pub fn entities(&self) -> &entities::EntityTable {
        &self.entities
    }

    pub fn beliefs(&self) -> &beliefs::BeliefTable {
        &self.beliefs
    }

    pub fn projects(&self) -> &projects::ProjectTable {
        &self.projects
    }

    pub fn sessions(&self) -> &sessions::SessionTable {
        &self.sessions
    }

    pub fn summaries(&self) -> &summaries::SummaryTable {
        &self.summaries
    }

    pub fn procedures(&self) -> &procedures::ProcedureTable {
        &self.procedures
    }

    pub fn stats(&self) -> &stats::StatTable {
        &self.stats
    }

    /// A value from the `meta` table (schema version, embedder, watermarks).
    pub async fn meta_get(&self, key: &str) -> Result<Option<String>, StoreError> {
        read_meta(&self.meta, key).await
    }

    /// Sets a `meta` value through the writer. Only mnemod's own bookkeeping writes here, one
    /// key per owner.
    pub async fn meta_set(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.writer
            .submit(WriteOp::Merge {
                table: self.meta.clone(),
                on: "key",
                batch: meta_batch(key, value)?,
            })
            .await?;
        Ok(())
    }

    /// A batch of some `memories` columns, for [`WriteOp::Patch`].
    pub fn patch(
        &self,
        columns: Vec<(&str, lancedb::arrow::arrow_array::ArrayRef)>,
    ) -> Result<RecordBatch, StoreError> {
        schema::patch_batch(&self.schema, columns)
    }

    /// A patch by id of the rows still current: `columns` (the id first) are set where the
    /// row has not been closed meanwhile. The condition reads `valid_to`, and Lance sees only
    /// a patch's columns, so it is carried, null as in every row the condition lets through.
    pub fn patch_current(
        &self,
        mut columns: Vec<(&str, lancedb::arrow::arrow_array::ArrayRef)>,
    ) -> Result<WriteOp, StoreError> {
        let rows = columns.first().map_or(0, |(_, ids)| ids.len());
        let open = lancedb::arrow::arrow_array::Int64Array::from(vec![None::<i64>; rows]);
        columns.push(("valid_to", Arc::new(open)));
        Ok(WriteOp::Patch {
            batch: self.patch(columns)?,
            only_if: Some(filter::current().on_target()),
        })
    }

    /// Sets the whole `entities` list (as stored: keyed in an encrypted store) of each row
    /// of `rows` that is still current; a row replaced or forgotten meanwhile is left alone.
    pub fn entities_patch(&self, rows: &[(String, Vec<String>)]) -> Result<WriteOp, StoreError> {
        use column::Column;
        let ids: StringArray = rows.iter().map(|(id, _)| Some(id.as_str())).collect();
        let lists = <Vec<String> as Column>::to_array(rows.iter().map(|(_, l)| l).collect(), 0)?;
        self.patch_current(vec![("id", Arc::new(ids)), ("entities", lists)])
    }

    /// Folds accesses into memories: each of `rows` (id, access count, last access) sets
    /// both where the row has not taken them (`filter::unfolded_accesses`).
    pub fn accesses_patch(&self, rows: &[(&str, i64, i64)]) -> Result<WriteOp, StoreError> {
        use lancedb::arrow::arrow_array::Int64Array;
        let batch = self.patch(vec![
            (
                "id",
                Arc::new(rows.iter().map(|r| Some(r.0)).collect::<StringArray>()),
            ),
            (
                "access_count",
                Arc::new(rows.iter().map(|r| r.1).collect::<Int64Array>()),
            ),
            (
                "last_accessed_at",
                Arc::new(rows.iter().map(|r| Some(r.2)).collect::<Int64Array>()),
            ),
        ])?;
        Ok(WriteOp::Patch {
            batch,
            only_if: Some(filter::unfolded_accesses().on_target()),
        })
    }

    /// Every table, memories first: what storage maintenance walks.
    pub fn tables(&self) -> Vec<Table> {
        vec![
            self.memories.clone(),
            self.system.snapshots.clone(),
            self.system.processes.clone(),
            self.system.profiles.clone(),
            self.runs.runs.clone(),
            self.runs.access_log.clone(),
            self.edges.table().clone(),
            self.entities.table().clone(),
            self.beliefs.table().clone(),
            self.projects.table().clone(),
            self.sessions.table().clone(),
            self.summaries.table().clone(),
            self.procedures.table().clone(),
            self.stats.table().clone(),
            self.meta.clone(),
        ]
    }

    pub fn memories(&self) -> &Table {
        &self.memories
    }

    pub fn connection(&self) -> &Connection {
        &self.db
    }

    pub async fn count(&self, predicate: &Pred) -> Result<usize, StoreError> {
        Ok(self.memories.count_rows(predicate.filter()).await?)
    }

    /// Waits for the writer to commit everything queued. Call after every handle but this
    /// store's own is gone (the server has stopped).
    pub async fn close(&self) {
        let task = self.writer_task.lock().ok().and_then(|mut t| t.take());
        // The writer ends when its queue closes; ours is the last sender once requests are done.
        drop(self.writer.clone());
        if let Some(task) = task {
            // Pending commits finish well within shutdown's budget; do not wait forever.
            let _ = tokio::time::timeout(Duration::from_millis(1500), async {
                while self.writer.pending() > 0 {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            })
            .await;
            task.abort();
        }
    }
}

/// Brings an older `memories` table to the current columns: columns added since (nullable)
/// start null, a metadata-only commit. A vector column of another width (the embedder
/// changed) is replaced by an empty one of the new width; background re-embedding fills it,
/// and full-text search serves those rows meanwhile.
async fn migrate_memories(
    memories: &Table,
    dim: usize,
    stored_model: Option<&str>,
) -> Result<(), StoreError> {
    let wanted = schema::memories_schema(dim);
    let schema = memories.schema().await?;
    if let Ok(vector) = schema.field_with_name("vector") {
        if vector.data_type() != wanted.field_with_name("vector")?.data_type() {
            tracing::warn!(
                "the database holds vectors of another width (made by {}); they will be \
                 re-embedded with the configured embedder",
                stored_model.unwrap_or("another model")
            );
            memories.drop_columns(&["vector"]).await?;
            memories
                .update()
                .column("embed_model", "''")
                .execute()
                .await?;
        }
    }
    tables::add_missing_columns(memories, MEMORIES, &wanted).await
}

fn meta_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Utf8, false),
    ]))
}

async fn open_meta(db: &Connection, names: &[String]) -> Result<Table, StoreError> {
    tables::open_or_create(db, names, META, meta_schema()).await
}

async fn read_meta(meta: &Table, key: &str) -> Result<Option<String>, StoreError> {
    let batches = sql::matching(meta, &col("key").eq(key), None).await?;
    Ok(batches.iter().find_map(|b| {
        let values = b
            .column_by_name("value")?
            .as_any()
            .downcast_ref::<StringArray>()?;
        (!values.is_empty()).then(|| values.value(0).to_string())
    }))
}

fn meta_batch(key: &str, value: &str) -> Result<RecordBatch, StoreError> {
    Ok(RecordBatch::try_new(
        meta_schema(),
        vec![
            Arc::new(StringArray::from(vec![key])),
            Arc::new(StringArray::from(vec![value])),
        ],
    )?)
}

/// Writes a meta value before the writer starts (at open).
async fn write_meta(meta: &Table, key: &str, value: &str) -> Result<(), StoreError> {
    if read_meta(meta, key).await?.as_deref() == Some(value) {
        return Ok(());
    }
    let batch = meta_batch(key, value)?;
    let reader = RecordBatchIterator::new(vec![Ok(batch)], meta_schema());
    let mut merge = meta.merge_insert(&["key"]);
    merge
        .when_matched_update_all(None)
        .when_not_matched_insert_all();
    merge.execute(Box::new(reader)).await?;
    Ok(())
}

/// A plain store of 4-dimensional vectors in `dir`, for tests.
#[cfg(test)]
pub async fn test_store(dir: &Path) -> Arc<Store> {
    Store::open(dir, 4, "test", &Default::default(), &Default::default())
        .await
        .expect("test store opens")
}

/// Settings that encrypt a new store, with its key in a file under `dir`, for tests.
#[cfg(test)]
pub fn test_encrypting(dir: &Path) -> KeySettings {
    KeySettings {
        encrypt: true,
        key_store: crate::config::KeyStoreKind::File,
        key_file: dir.join("keys/mnemo.key"),
    }
}
