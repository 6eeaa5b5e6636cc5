//! Reads of the `memories` table: by id, pages, lineages, and the two retrievers.

use lancedb::arrow::arrow_array::RecordBatch;
use lancedb::query::ColumnOrdering;
use lancedb::query::{QueryBase, Select};

use super::schema::{columns_without_vector, float_column, from_batch, MemoryRecord};
use super::seal::Sealing;
use super::sql::{col, read, Filtered, Pred};
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

    /// The rows of `batches`, opened (in an encrypted store, content and metadata decrypted).
    fn rows(&self, batches: &[RecordBatch]) -> Result<Vec<MemoryRecord>, StoreError> {
        self.sealing
            .open(batches.iter().flat_map(from_batch).collect())
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
        let batches = read(&query).await?;
        self.rows(&batches)
    }

    /// Only `columns` of the rows matching `predicate` (the rest read as defaults): for passes
    /// over the whole table that need a few columns, such as vectors for dedup.
    pub async fn columns_of(
        &self,
        predicate: &Pred,
        columns: &[&str],
    ) -> Result<Vec<MemoryRecord>, StoreError> {
        let mut columns: Vec<&str> = columns.to_vec();
        // Sealed text opens only with its row's id and seal flag.
        if columns.iter().any(|c| *c == "content" || *c == "metadata") {
            for needed in ["id", "sealed"] {
                if !columns.contains(&needed) {
                    columns.push(needed);
                }
            }
        }
        let mut rows = Vec::new();
        self.each_with_columns(predicate, &columns, |r| rows.push(r))
            .await?;
        Ok(rows)
    }

    /// [`Store::columns_of`], handing each row to `each` as its batch is opened, so a pass
    /// over a million memories never holds them all as records at once.
    pub async fn each_with_columns(
        &self,
        predicate: &Pred,
        columns: &[&str],
        mut each: impl FnMut(MemoryRecord),
    ) -> Result<(), StoreError> {
        let query = self
            .memories
            .query()
            .filtered(predicate)
            .select(Select::columns(columns));
        for batch in read(&query).await? {
            self.rows(std::slice::from_ref(&batch))?
                .into_iter()
                .for_each(&mut each);
        }
        Ok(())
    }

    /// Up to `limit` vectors of the configured model among rows matching `predicate`.
    pub async fn some_vectors(
        &self,
        predicate: &Pred,
        limit: usize,
    ) -> Result<Vec<Vec<f32>>, StoreError> {
        let predicate = predicate
            .clone()
            .and(col("embed_model").eq(&self.embed_model));
        let query = self
            .memories
            .query()
            .filtered(&predicate)
            .select(Select::columns(&["vector"]))
            .limit(limit);
        let batches = read(&query).await?;
        Ok(batches
            .iter()
            .flat_map(from_batch)
            .map(|r| r.vector)
            .collect())
    }

    pub async fn get(&self, id: &str) -> Result<Option<MemoryRecord>, StoreError> {
        Ok(self.plain_rows(&col("id").eq(id), Some(1)).await?.pop())
    }

    /// Rows by id, with vectors (for rewriting them).
    pub async fn get_full(&self, ids: &[String]) -> Result<Vec<MemoryRecord>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let query = self.memories.query().filtered(&col("id").one_of(ids));
        let batches = read(&query).await?;
        self.rows(&batches)
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
        let query = self
            .memories
            .query()
            .filtered(&predicate)
            .select(self.plain_columns())
            .order_by(Some(vec![ColumnOrdering::desc_nulls_last("id".into())]))
            .limit(limit);
        let batches = read(&query).await?;
        self.rows(&batches)
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
    /// model's vectors live in another space): through the ANN index once it exists (rows
    /// added since are compared one by one), or, with `exact`, with every vector.
    pub async fn vector_search(
        &self,
        vector: &[f32],
        predicate: &Pred,
        limit: usize,
        exact: bool,
    ) -> Result<Vec<Scored>, StoreError> {
        let predicate = predicate
            .clone()
            .and(col("embed_model").eq(&self.embed_model));
        let mut query = self
            .memories
            .query()
            .nearest_to(vector)?
            .distance_type(lancedb::DistanceType::Cosine)
            .search_effort(self.config.ann_search_effort)?
            .refine_factor(self.config.ann_refine_factor)
            .filtered(&predicate)
            .select(self.columns_with("_distance"))
            .limit(limit);
        if exact {
            query = query.bypass_vector_index();
        }
        let batches = read(&query).await?;
        scored(&self.sealing, &batches, "_distance")
    }

    /// BM25 over `content` (over its hashed terms in an encrypted store) through LanceDB's
    /// full-text index.
    pub async fn text_search(
        &self,
        text: &str,
        predicate: &Pred,
        limit: usize,
    ) -> Result<Vec<Scored>, StoreError> {
        let Some(terms) = self.sealing.text_query(text) else {
            return Ok(Vec::new());
        };
        let query = self
            .memories
            .query()
            .full_text_search(terms)
            .filtered(predicate)
            .select(self.columns_with("_score"))
            .limit(limit);
        let batches = read(&query).await?;
        scored(&self.sealing, &batches, "_score")
    }
}

fn scored(
    sealing: &Sealing,
    batches: &[RecordBatch],
    column: &str,
) -> Result<Vec<Scored>, StoreError> {
    let records = sealing.open(batches.iter().flat_map(from_batch).collect())?;
    let raws = batches.iter().flat_map(|b| float_column(b, column));
    Ok(records
        .into_iter()
        .zip(raws)
        .map(|(record, raw)| Scored {
            record,
            raw: raw.unwrap_or(0.0),
        })
        .collect())
}
