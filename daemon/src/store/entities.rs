//! The `entities` table (ARCHITECTURE §3): what the store knows of each entity its memories
//! mention — name, aliases, type, first and last seen, how many current memories mention it.
//! Derived data: `graph::EntityBook` keeps it and writes what changed every few seconds.
//! An entity's id is its graph node id (its key, keyed in an encrypted store), scoped by
//! namespace; in an encrypted store its name and aliases are sealed to the row.

use lancedb::{Connection, Table};
use mnemo_protocol::entity::EntityType;

use super::column::table_rows;
use super::sql::{col, matching, Pred};
use super::system::open_or_create;
use super::{StoreError, WriteOp};

pub const ENTITIES: &str = "entities";

table_rows! {
    /// One entity as stored. Times are UTC microseconds.
    EntityRecord {
        /// `namespace|key`: one row per entity of a namespace.
        id: String,
        namespace: String,
        /// The graph node id: the folded name, keyed in an encrypted store.
        key: String,
        entity_type: EntityType,
        /// The form written most often (sealed in an encrypted store).
        name: String,
        /// Every form written, as JSON `{form: times}` (sealed in an encrypted store).
        aliases: String,
        relation: Option<String>,
        mention_count: i64,
        first_seen: i64,
        last_seen: i64,
        /// Sum of the salience of the memories mentioning it (mean = sum / mentions).
        salience_sum: f32,
        merged_into: Option<String>,
        sealed: bool,
    }
}

pub fn entity_id(namespace: &str, key: &str) -> String {
    format!("{namespace}|{key}")
}

pub struct EntityTable {
    table: Table,
}

impl EntityTable {
    pub async fn open(db: &Connection, names: &[String]) -> Result<Self, StoreError> {
        let table = open_or_create(db, names, ENTITIES, EntityRecord::schema()).await?;
        Ok(Self { table })
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    /// Rows written again keep one row each.
    pub fn upsert(&self, rows: &[EntityRecord]) -> Result<WriteOp, StoreError> {
        Ok(WriteOp::Merge {
            table: self.table.clone(),
            on: "id",
            batch: EntityRecord::to_batch(rows)?,
        })
    }

    pub fn delete_ids(&self, ids: &[String]) -> WriteOp {
        WriteOp::DeleteWhere {
            table: self.table.clone(),
            predicate: col("id").one_of(ids),
        }
    }

    /// Every row: an encryption rewrites them all.
    pub fn delete_all(&self) -> WriteOp {
        WriteOp::DeleteWhere {
            table: self.table.clone(),
            predicate: col("id").not_null(),
        }
    }

    pub async fn rows(&self, predicate: &Pred) -> Result<Vec<EntityRecord>, StoreError> {
        let batches = matching(&self.table, predicate, None).await?;
        Ok(batches.iter().flat_map(EntityRecord::from_batch).collect())
    }
}
