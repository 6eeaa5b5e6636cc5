//! Reads of the `memories` table: by id, pages, lineages, and the two retrievers.

use futures::TryStreamExt;
use lancedb::arrow::arrow_array::RecordBatch;
use lancedb::index::scalar::FullTextSearchQuery;
use lancedb::query::ColumnOrdering;
use lancedb::query::{ExecutableQuery, QueryBase, Select};

use super::schema::{columns_without_vector, float_column, from_batch, MemoryRecord};
use super::sql::{col, Filtered, Pred};
use super::{Store, StoreError};

/// A row a retriever returned, with its raw score (`_distance` or `_score`).
#[derive(Debug, Clone)]
pub struct Scored {
    pub record: MemoryRecord,
    pub raw: f32,
}

impl Store {
    fn plain_columns(&self) -> Select {
        Select::columns(&columns_without_vector(&self.schema))
    }

    /// The plain columns plus a retriever's score column, asked for by name as LanceDB wants.
    fn columns_with(&self, score: &str) -> Select {
        let mut columns = columns_without_vector(&self.schema);
        columns.push(score.to_string());
        Select::columns(&columns)
    }

    async fn collect(
        stream: lancedb::arrow::SendableRecordBatchStream,
    ) -> Result<Vec<RecordBatch>, StoreError> {
        Ok(stream.try_collect().await?)
    }

    /// Rows matching `predicate` without their vectors.
    pub async fn plain_rows(
        &self,
        predicate: &Pred,
        limit: Option<usize>,
    ) -> Result<Vec<MemoryRecord>, StoreError> {
        let mut query = self
            .memories
            .query()
            .filtered(predicate)
            .select(self.plain_columns());
        if let Some(limit) = limit {
            query = query.limit(limit);
        }
        let batches = Self::collect(query.execute().await?).await?;
        Ok(batches.iter().flat_map(from_batch).collect())
    }

    /// Only `columns` of the rows matching `predicate` (the rest read as defaults): for passes
    /// over the whole table that need a few columns, such as vectors for dedup.
    pub async fn columns_of(
        &self,
        predicate: &Pred,
        columns: &[&str],
    ) -> Result<Vec<MemoryRecord>, StoreError> {
        let query = self
            .memories
            .query()
            .filtered(predicate)
            .select(Select::columns(columns));
        let batches = Self::collect(query.execute().await?).await?;
        Ok(batches.iter().flat_map(from_batch).collect())
    }

    pub async fn get(&self, id: &str) -> Result<Option<MemoryRecord>, StoreError> {
        Ok(self.plain_rows(&col("id").eq(id), Some(1)).await?.pop())
    }

    /// Rows by id, with vectors (for rewriting them).
    pub async fn get_full(&self, ids: &[String]) -> Result<Vec<MemoryRecord>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let batches = Self::collect(
            self.memories
                .query()
                .filtered(&col("id").one_of(ids))
                .execute()
                .await?,
        )
        .await?;
        Ok(batches.iter().flat_map(from_batch).collect())
    }

    /// Up to `limit` rows matching `predicate`, newest id first, starting below `before`.
    pub async fn page(
        &self,
        predicate: &Pred,
        before: Option<&str>,
        limit: usize,
    ) -> Result<Vec<MemoryRecord>, StoreError> {
        let mut predicate = predicate.clone();
        if let Some(cursor) = before {
            predicate = predicate.and(col("id").lt(cursor));
        }
        let batches = Self::collect(
            self.memories
                .query()
                .filtered(&predicate)
                .select(self.plain_columns())
                .order_by(Some(vec![ColumnOrdering::desc_nulls_last("id".into())]))
                .limit(limit)
                .execute()
                .await?,
        )
        .await?;
        Ok(batches.iter().flat_map(from_batch).collect())
    }

    /// Every version sharing `lineage`, and the duplicates consolidation merged into one of
    /// them (their `superseded_by` points in), oldest first.
    pub async fn lineage(&self, lineage: &str) -> Result<Vec<MemoryRecord>, StoreError> {
        let mut rows = self.plain_rows(&col("lineage").eq(lineage), None).await?;
        if !rows.is_empty() {
            let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
            let merged = self
                .plain_rows(
                    &col("superseded_by")
                        .one_of(&ids)
                        .and(col("lineage").ne(lineage)),
                    None,
                )
                .await?;
            rows.extend(merged);
        }
        rows.sort_by(|a, b| (a.valid_from, &a.id).cmp(&(b.valid_from, &b.id)));
        Ok(rows)
    }

    /// Nearest neighbours by cosine distance among vectors of the configured model (another
    /// model's vectors live in another space); exact until an ANN index exists.
    pub async fn vector_search(
        &self,
        vector: &[f32],
        predicate: &Pred,
        limit: usize,
    ) -> Result<Vec<Scored>, StoreError> {
        let predicate = predicate
            .clone()
            .and(col("embed_model").eq(&self.embed_model));
        let query = self
            .memories
            .query()
            .nearest_to(vector)?
            .distance_type(lancedb::DistanceType::Cosine)
            .refine_factor(4)
            .filtered(&predicate)
            .select(self.columns_with("_distance"))
            .limit(limit);
        let batches = Self::collect(query.execute().await?).await?;
        Ok(scored(&batches, "_distance"))
    }

    /// BM25 over `content` through LanceDB's full-text index.
    pub async fn text_search(
        &self,
        text: &str,
        predicate: &Pred,
        limit: usize,
    ) -> Result<Vec<Scored>, StoreError> {
        let query = self
            .memories
            .query()
            .full_text_search(FullTextSearchQuery::new(text.to_string()))
            .filtered(predicate)
            .select(self.columns_with("_score"))
            .limit(limit);
        let batches = Self::collect(query.execute().await?).await?;
        Ok(scored(&batches, "_score"))
    }
}

fn scored(batches: &[RecordBatch], column: &str) -> Vec<Scored> {
    batches
        .iter()
        .flat_map(|b| {
            from_batch(b)
                .into_iter()
                .zip(float_column(b, column))
                .map(|(record, raw)| Scored {
                    record,
                    raw: raw.unwrap_or(0.0),
                })
        })
        .collect()
}
