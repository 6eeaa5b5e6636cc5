//! Storage: one LanceDB database under the data dir. The `memories` table is written only by
//! the [`writer`] task; reads go straight to LanceDB and run concurrently.

pub mod filter;
mod maintenance;
mod memories;
pub mod runs;
pub mod schema;
pub mod system;
pub mod writer;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt;
use lancedb::arrow::arrow_array::{Array, RecordBatch, RecordBatchIterator, StringArray};
use lancedb::arrow::arrow_schema::{DataType, Field, Schema, SchemaRef};
use lancedb::query::{ExecutableQuery, QueryBase};
use lancedb::{Connection, Table};

pub use memories::Scored;
pub use schema::{MemoryRecord, MEMORIES_SCHEMA_VERSION};
pub use writer::{WriteOp, WriterHandle};

use crate::config::StoreConfig;

#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    #[error("storage: {0}")]
    Lance(String),
    #[error("storage schema: {0}")]
    Schema(String),
    #[error("the database was written by a newer mnemo (schema {found}, this one knows {known}); upgrade mnemo")]
    TooNew { found: u32, known: u32 },
    #[error("{0}")]
    ModelMismatch(String),
    #[error("the writer has stopped (mnemod is shutting down)")]
    Closed,
}

impl From<lancedb::Error> for StoreError {
    fn from(e: lancedb::Error) -> Self {
        StoreError::Lance(e.to_string())
    }
}

impl From<lancedb::arrow::arrow_schema::ArrowError> for StoreError {
    fn from(e: lancedb::arrow::arrow_schema::ArrowError) -> Self {
        StoreError::Schema(e.to_string())
    }
}

pub const MEMORIES: &str = "memories";
const META: &str = "meta";

pub struct Store {
    db: Connection,
    memories: Table,
    meta: Table,
    system: system::SystemTables,
    runs: runs::RunTables,
    schema: SchemaRef,
    writer: WriterHandle,
    writer_task: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    dim: usize,
    config: StoreConfig,
    /// Set once the full-text index exists; it is never dropped while running.
    fts_ready: std::sync::atomic::AtomicBool,
    /// Index builds run one at a time.
    index_build: tokio::sync::Mutex<()>,
}

impl Store {
    /// Opens (or creates) the database, checking its schema version and vector dimension.
    pub async fn open(
        db_dir: &Path,
        dim: usize,
        embed_model: &str,
        config: &StoreConfig,
    ) -> Result<Arc<Store>, StoreError> {
        std::fs::create_dir_all(db_dir)
            .map_err(|e| StoreError::Lance(format!("cannot create {}: {e}", db_dir.display())))?;
        let uri = db_dir.to_string_lossy().to_string();
        let db = lancedb::connect(&uri).execute().await?;
        let names = db.table_names().execute().await?;
        let memories = if names.iter().any(|n| n == MEMORIES) {
            db.open_table(MEMORIES).execute().await?
        } else {
            db.create_empty_table(MEMORIES, schema::memories_schema(dim))
                .execute()
                .await?
        };
        migrate_memories(&memories).await?;
        let schema = memories.schema().await?;
        let stored_dim = match schema
            .field_with_name("vector")
            .map(|f| f.data_type().clone())
        {
            Ok(DataType::FixedSizeList(_, d)) => d as usize,
            _ => return Err(StoreError::Schema("memories has no vector column".into())),
        };
        let meta = open_meta(&db, &names).await?;
        let system = system::SystemTables::open(&db, &names).await?;
        let runs = runs::RunTables::open(&db, &names).await?;
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
        let stored_model = read_meta(&meta, "embed.model").await?;
        if stored_dim != dim {
            return Err(StoreError::ModelMismatch(format!(
                "the database holds {stored_dim}-dimension vectors made by {}, but the configured \
                 embedder makes {dim}-dimension vectors. Configure the embedder the database was \
                 made with, or point --data-dir at a new directory",
                stored_model.as_deref().unwrap_or("another model")
            )));
        }
        write_meta(
            &meta,
            "memories.schema_version",
            &MEMORIES_SCHEMA_VERSION.to_string(),
        )
        .await?;
        write_meta(&meta, "embed.model", embed_model).await?;
        write_meta(&meta, "embed.dim", &dim.to_string()).await?;

        let (writer, task) = writer::start(
            memories.clone(),
            schema.clone(),
            writer::WriterSettings {
                interval: Duration::from_millis(config.commit_interval_ms),
                max_rows: config.commit_max_rows,
            },
        );
        let store = Arc::new(Store {
            db,
            memories,
            meta,
            system,
            runs,
            schema,
            writer,
            writer_task: std::sync::Mutex::new(Some(task)),
            dim,
            config: config.clone(),
            fts_ready: Default::default(),
            index_build: Default::default(),
        });
        Ok(store)
    }

    pub fn writer(&self) -> &WriterHandle {
        &self.writer
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn system(&self) -> &system::SystemTables {
        &self.system
    }

    pub fn runs(&self) -> &runs::RunTables {
        &self.runs
    }

    /// A value from the `meta` table (schema version, embedder, watermarks).
    pub async fn meta_get(&self, key: &str) -> Result<Option<String>, StoreError> {
        read_meta(&self.meta, key).await
    }

    /// Sets a `meta` value. Only mnemod's own bookkeeping writes here, one key per owner.
    pub async fn meta_set(&self, key: &str, value: &str) -> Result<(), StoreError> {
        write_meta(&self.meta, key, value).await
    }

    /// Every table, memories first: what storage maintenance walks.
    /// A batch of some `memories` columns, for [`WriteOp::Patch`].
    pub fn patch(
        &self,
        columns: Vec<(&str, lancedb::arrow::arrow_array::ArrayRef)>,
    ) -> Result<RecordBatch, StoreError> {
        schema::patch_batch(&self.schema, columns)
    }

    pub fn tables(&self) -> Vec<Table> {
        vec![
            self.memories.clone(),
            self.system.snapshots.clone(),
            self.system.processes.clone(),
            self.system.profiles.clone(),
            self.runs.runs.clone(),
            self.runs.access_log.clone(),
            self.meta.clone(),
        ]
    }

    pub fn memories(&self) -> &Table {
        &self.memories
    }

    pub fn connection(&self) -> &Connection {
        &self.db
    }

    pub async fn count(&self, predicate: Option<String>) -> Result<usize, StoreError> {
        Ok(self.memories.count_rows(predicate).await?)
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

/// Brings an older `memories` table to the current columns. Added columns start null, so
/// this is a metadata-only commit.
async fn migrate_memories(memories: &Table) -> Result<(), StoreError> {
    let schema = memories.schema().await?;
    let missing: Vec<Field> = schema::added_in_v2()
        .into_iter()
        .filter(|f| schema.field_with_name(f.name()).is_err())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    tracing::info!(
        "upgrading the memories table: adding {}",
        missing
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    memories
        .add_columns()
        .transform(lancedb::table::NewColumnTransform::AllNulls(Arc::new(
            Schema::new(missing),
        )))
        .execute()
        .await?;
    Ok(())
}

fn meta_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Utf8, false),
    ]))
}

async fn open_meta(db: &Connection, names: &[String]) -> Result<Table, StoreError> {
    if names.iter().any(|n| n == META) {
        Ok(db.open_table(META).execute().await?)
    } else {
        Ok(db.create_empty_table(META, meta_schema()).execute().await?)
    }
}

async fn read_meta(meta: &Table, key: &str) -> Result<Option<String>, StoreError> {
    let batches: Vec<RecordBatch> = meta
        .query()
        .only_if(format!("key = {}", filter::quote(key)))
        .execute()
        .await?
        .try_collect()
        .await?;
    Ok(batches.iter().find_map(|b| {
        let values = b
            .column_by_name("value")?
            .as_any()
            .downcast_ref::<StringArray>()?;
        (!values.is_empty()).then(|| values.value(0).to_string())
    }))
}

async fn write_meta(meta: &Table, key: &str, value: &str) -> Result<(), StoreError> {
    if read_meta(meta, key).await?.as_deref() == Some(value) {
        return Ok(());
    }
    let batch = RecordBatch::try_new(
        meta_schema(),
        vec![
            Arc::new(StringArray::from(vec![key])),
            Arc::new(StringArray::from(vec![value])),
        ],
    )?;
    let reader = RecordBatchIterator::new(vec![Ok(batch)], meta_schema());
    let mut merge = meta.merge_insert(&["key"]);
    merge
        .when_matched_update_all(None)
        .when_not_matched_insert_all();
    merge.execute(Box::new(reader)).await?;
    Ok(())
}
