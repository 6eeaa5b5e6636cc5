//! A table of derived rows keyed by `id` (entities, beliefs, projects): written again whole
//! when they change (one row per id), deleted by id, read by predicate. One implementation
//! for every such table; the row type says the columns.

use std::marker::PhantomData;

use lancedb::arrow::arrow_array::RecordBatch;
use lancedb::arrow::arrow_schema::SchemaRef;
use lancedb::{Connection, Table};

use super::error::StoreError;
use super::op::WriteOp;
use super::sql::{col, matching, Pred};
use super::tables::open_or_create;

/// A row type declared with `table_rows!`.
pub trait Rows: Sized {
    fn schema() -> SchemaRef;
    fn to_batch(rows: &[Self]) -> Result<RecordBatch, StoreError>;
    fn from_batch(batch: &RecordBatch) -> Vec<Self>;
}

pub struct KeyedTable<R> {
    table: Table,
    rows: PhantomData<fn() -> R>,
}

impl<R: Rows> KeyedTable<R> {
    pub async fn open(db: &Connection, names: &[String], name: &str) -> Result<Self, StoreError> {
        let table = open_or_create(db, names, name, R::schema()).await?;
        Ok(Self {
            table,
            rows: PhantomData,
        })
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    /// Rows written again keep one row each.
    pub fn upsert(&self, rows: &[R]) -> Result<WriteOp, StoreError> {
        Ok(WriteOp::Merge {
            table: self.table.clone(),
            on: "id",
            batch: R::to_batch(rows)?,
        })
    }

    /// Rows never written before: appended, and committed together with the other appends
    /// queued for the table (a merge reads the table to find the rows it replaces).
    pub fn append(&self, rows: &[R]) -> Result<WriteOp, StoreError> {
        Ok(WriteOp::Append {
            table: self.table.clone(),
            batch: R::to_batch(rows)?,
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

    pub async fn rows(&self, predicate: &Pred) -> Result<Vec<R>, StoreError> {
        let batches = matching(&self.table, predicate, None).await?;
        Ok(batches.iter().flat_map(R::from_batch).collect())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use lancedb::arrow::arrow_schema::Schema;

    use super::*;
    use crate::store::beliefs::{BeliefRecord, BELIEFS};

    #[tokio::test]
    async fn a_table_made_before_a_column_was_added_opens_and_takes_rows_of_the_new_shape() {
        let dir = tempfile::tempdir().unwrap();
        let old_row = BeliefRecord {
            id: "old".into(),
            statement: "The user lives in Porto".into(),
            ..Default::default()
        };
        {
            // The beliefs table as an older mnemod made it: without the columns added since.
            let db = lancedb::connect(dir.path().to_str().unwrap())
                .execute()
                .await
                .unwrap();
            let batch = BeliefRecord::to_batch(std::slice::from_ref(&old_row)).unwrap();
            let kept: Vec<usize> = (0..batch.num_columns())
                .filter(|&i| {
                    let name = batch.schema().field(i).name().clone();
                    !["read_by", "vector", "embed_model"].contains(&name.as_str())
                })
                .collect();
            let batch = batch.project(&kept).unwrap();
            let older = Arc::new(Schema::new(batch.schema().fields().clone()));
            db.create_empty_table(BELIEFS, older)
                .execute()
                .await
                .unwrap()
                .add(batch)
                .execute()
                .await
                .unwrap();
        }
        let store = crate::store::test_store(dir.path()).await;
        let new_row = BeliefRecord {
            id: "new".into(),
            read_by: Some("llm:reader".into()),
            vector: crate::store::Floats(vec![0.5, -0.5, 1.0]),
            embed_model: Some("test".into()),
            ..Default::default()
        };
        let table = store.beliefs();
        store
            .writer()
            .submit(table.upsert(std::slice::from_ref(&new_row)).unwrap())
            .await
            .unwrap();
        let mut rows = table.rows(&Pred::All).await.unwrap();
        rows.sort_by(|a, b| a.id.cmp(&b.id));
        assert_eq!(rows, vec![new_row, old_row]);
    }
}
