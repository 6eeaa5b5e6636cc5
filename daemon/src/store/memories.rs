//! Reads of the `memories` table: by id, pages, lineages, and the two retrievers.

use std::collections::{HashMap, HashSet};

use lancedb::arrow::arrow_array::RecordBatch;
use lancedb::query::ColumnOrdering;
use lancedb::query::{QueryBase, Select};

use super::error::StoreError;
use super::filter::current;
use super::schema::{columns_without_vector, float_column, from_batch, MemoryRecord};
use super::seal::Sealing;
use super::sql::{col, each_batch, read, Filtered, Pred};
use super::Store;

/// A row a retriever returned, with its raw score (`_distance` or `_score`). The record holds
/// [`RANKING_COLUMNS`] only: a search reads the rest for the few rows it answers with
/// (`Held::complete`), at `row_id`.
#[derive(Debug, Clone)]
pub struct Scored {
    pub record: MemoryRecord,
    pub raw: f32,
    pub row_id: Option<u64>,
}

/// What ranking reads of each candidate. Every column a read asks for costs it a read per
/// fragment the rows lie in; at 100k memories the vector leg took 18.5 ms with every column
/// of its 50 rows, 14.4 ms with these.
pub const RANKING_COLUMNS: &[&str] = &[
    "id",
    "lineage",
    "entities",
    "salience",
    "salience_factors",
    "strength",
    "occurred_at",
    "created_at",
    "event_start",
    "event_end",
];

/// What a full-text search reads of each hit beside its score and row id. Each string
/// column read for the hits decodes a block of values per hit: the ids alone took a third of
/// the query (~1 ms at 100k memories).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum TextColumns {
    None,
    Id,
    Ranking,
}

/// A row to take: the memory's id, and its row id when one is known.
#[derive(Debug, Clone, PartialEq)]
pub struct Near {
    pub id: String,
    pub row_id: Option<u64>,
}

impl Store {
    fn plain_columns(&self) -> Select {
        Select::columns(&columns_without_vector(&self.schema))
    }

    /// The ranking columns plus a retriever's score column, asked for by name as LanceDB wants.
    fn ranking_with(score: &str) -> Select {
        let mut columns = RANKING_COLUMNS.to_vec();
        columns.push(score);
        Select::columns(&columns)
    }

    /// The ranking columns of the rows matching `predicate`, with their row ids.
    pub async fn ranking_rows(&self, predicate: &Pred) -> Result<Vec<Scored>, StoreError> {
        let query = self
            .memories
            .query()
            .filtered(predicate)
            .select(Select::columns(RANKING_COLUMNS))
            .with_row_id();
        let batches = read(&query).await?;
        scored(&self.sealing, &batches, None)
    }

    /// `columns` of the rows of `near` (that are still current, when `current_only`): taken
    /// at their row ids, and read by id where a row moved since (a compaction or an update
    /// in between).
    pub(crate) async fn take(
        &self,
        near: &[Near],
        columns: &[&str],
        current_only: bool,
    ) -> Result<Vec<Scored>, StoreError> {
        let mut found: Vec<Scored> = Vec::with_capacity(near.len());
        let row_ids: Vec<u64> = near.iter().filter_map(|n| n.row_id).collect();
        if !row_ids.is_empty() {
            match self.take_rows(&row_ids, columns).await {
                Ok(Some(batch)) => found.extend(scored(&self.sealing, &[batch], None)?),
                Ok(None) => {}
                Err(e) => tracing::debug!("taking candidates by row id failed; reading by id: {e}"),
            }
        }
        // A row id that now holds another row (after a compaction) finds nothing it wanted;
        // a row holding a wanted id is that memory's one row.
        let wanted: HashMap<&str, &Near> = near.iter().map(|n| (n.id.as_str(), n)).collect();
        found.retain_mut(|s| match wanted.get(s.record.id.as_str()) {
            Some(n) => {
                s.row_id = n.row_id;
                true
            }
            None => false,
        });
        let have: HashSet<String> = found.iter().map(|s| s.record.id.clone()).collect();
        let missing: Vec<String> = near
            .iter()
            .filter(|n| !have.contains(&n.id))
            .map(|n| n.id.clone())
            .collect();
        if !missing.is_empty() {
            let by_id = col("id").one_of(&missing);
            let query = self
                .memories
                .query()
                .filtered(&if current_only {
                    current().and(by_id)
                } else {
                    by_id
                })
                .select(Select::columns(columns))
                .with_row_id();
            found.extend(scored(&self.sealing, &read(&query).await?, None)?);
        }
        if current_only {
            found.retain(|s| s.record.valid_to.is_none());
        }
        Ok(found)
    }

    /// `columns` of the rows of `near` that are still current, taken at their row ids (read
    /// by id where a row moved since).
    pub async fn current_at(
        &self,
        near: &[Near],
        columns: &[&str],
    ) -> Result<Vec<MemoryRecord>, StoreError> {
        let mut columns = columns.to_vec();
        for needed in ["id", "valid_to"] {
            if !columns.contains(&needed) {
                columns.push(needed);
            }
        }
        let taken = self.take(near, &columns, true).await?;
        Ok(taken.into_iter().map(|s| s.record).collect())
    }

    /// The memories table's dataset as it is now: what a read of its fragments or row ids
    /// sees, whatever is committed meanwhile.
    pub(crate) async fn snapshot(&self) -> Result<std::sync::Arc<lance::Dataset>, StoreError> {
        super::beside::snapshot(&self.memories).await
    }

    /// `columns` of the live rows at `row_ids`, straight from the dataset: through a query
    /// plan (a filter on `_rowid`), taking 10 whole rows at 100k memories took 4.6 ms rather
    /// than 3.4. None when no row id lies in a fragment that still exists (a compaction or a
    /// purge since): the caller reads those rows by id.
    pub(crate) async fn take_rows(
        &self,
        row_ids: &[u64],
        columns: &[impl AsRef<str>],
    ) -> Result<Option<RecordBatch>, StoreError> {
        let dataset = self.snapshot().await?;
        // A row id is its fragment's id and the row's offset there. Lance 14 panics taking
        // row ids out of order none of whose fragments exists.
        let live: Vec<u64> = row_ids
            .iter()
            .copied()
            .filter(|r| dataset.get_fragment((r >> 32) as usize).is_some())
            .collect();
        if live.is_empty() {
            return Ok(None);
        }
        let projection = lance::dataset::ProjectionRequest::from_columns(columns, dataset.schema());
        Ok(Some(dataset.take_rows(&live, projection).await?))
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
        self.rows(&read(&self.columns_query(predicate, &columns)).await?)
    }

    /// [`Store::columns_of`], handing each row to `each` as its batch comes from the store, so
    /// a pass over a million memories holds one batch of them at a time.
    pub async fn each_with_columns(
        &self,
        predicate: &Pred,
        columns: &[&str],
        mut each: impl FnMut(MemoryRecord),
    ) -> Result<(), StoreError> {
        each_batch(&self.columns_query(predicate, columns), |batch| {
            self.rows(std::slice::from_ref(&batch))?
                .into_iter()
                .for_each(&mut each);
            Ok(())
        })
        .await
    }

    fn columns_query(&self, predicate: &Pred, columns: &[&str]) -> lancedb::query::Query {
        self.memories
            .query()
            .filtered(predicate)
            .select(Select::columns(columns))
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
        self.nearest_rows(
            vector,
            &predicate,
            limit,
            exact,
            Self::ranking_with("_distance"),
        )
        .await
    }

    /// The `limit` rows `predicate` admits nearest `vector` by cosine distance, with
    /// `columns`: through the ANN index once it exists, or with `exact`, every vector.
    pub(crate) async fn nearest_rows(
        &self,
        vector: &[f32],
        predicate: &Pred,
        limit: usize,
        exact: bool,
        columns: Select,
    ) -> Result<Vec<Scored>, StoreError> {
        let mut query = self
            .memories
            .query()
            .nearest_to(vector)?
            .distance_type(lancedb::DistanceType::Cosine)
            .search_effort(self.config.advanced.ann_search_effort)?
            .refine_factor(self.config.advanced.ann_refine_factor)
            .filtered(predicate)
            .select(columns)
            .with_row_id()
            .limit(limit);
        if exact {
            query = query.bypass_vector_index();
        }
        let batches = read(&query).await?;
        scored(&self.sealing, &batches, Some("_distance"))
    }

    /// BM25 over `content` (over its hashed terms in an encrypted store) through LanceDB's
    /// full-text index: each hit's score and row id, with `columns`.
    pub(crate) async fn full_text(
        &self,
        text: &str,
        predicate: &Pred,
        limit: usize,
        columns: TextColumns,
    ) -> Result<Vec<Scored>, StoreError> {
        let Some(terms) = self.sealing.text_query(text) else {
            return Ok(Vec::new());
        };
        let columns = match columns {
            TextColumns::None => Select::columns(&["_score"]),
            TextColumns::Id => Select::columns(&["id", "_score"]),
            TextColumns::Ranking => Self::ranking_with("_score"),
        };
        let query = self
            .memories
            .query()
            .full_text_search(terms)
            .filtered(predicate)
            .select(columns)
            .with_row_id()
            .limit(limit);
        let batches = read(&query).await?;
        scored(&self.sealing, &batches, Some("_score"))
    }
}

pub(crate) fn scored(
    sealing: &Sealing,
    batches: &[RecordBatch],
    column: Option<&str>,
) -> Result<Vec<Scored>, StoreError> {
    let records = sealing.open(batches.iter().flat_map(from_batch).collect())?;
    // A read without a score (rows the graph reached) scores 0.
    let raws = batches.iter().flat_map(|b| match column {
        Some(c) => float_column(b, c),
        None => vec![None; b.num_rows()],
    });
    let row_ids = batches.iter().flat_map(row_id_column);
    Ok(records
        .into_iter()
        .zip(raws)
        .zip(row_ids)
        .map(|((record, raw), row_id)| Scored {
            record,
            raw: raw.unwrap_or(0.0),
            row_id,
        })
        .collect())
}

/// The `_rowid` column of a read that asked for it, by row.
pub(crate) fn row_id_column(batch: &RecordBatch) -> Vec<Option<u64>> {
    use lancedb::arrow::arrow_array::{Array, UInt64Array};
    match batch
        .column_by_name("_rowid")
        .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
    {
        Some(a) => (0..a.len())
            .map(|i| a.is_valid(i).then(|| a.value(i)))
            .collect(),
        None => vec![None; batch.num_rows()],
    }
}

#[cfg(test)]
mod tests {
    use crate::store::filter::current;
    use crate::store::schema::tests::record;
    use crate::store::{test_store, WriteOp};

    /// A pass over many fragments, each answered in several batches, hands every row it
    /// matches once, with the columns asked for.
    #[tokio::test]
    async fn a_pass_hands_every_matching_row_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = test_store(dir.path()).await;
        let mut written = Vec::new();
        for fragment in 0..3 {
            let rows: Vec<_> = (0..1500)
                .map(|i| {
                    let mut r = record(&format!("m{fragment}-{i:04}"), "text", 4);
                    r.access_count = i;
                    r
                })
                .collect();
            written.extend(rows.iter().map(|r| (r.id.clone(), r.access_count)));
            store.writer().submit(WriteOp::Insert(rows)).await.unwrap();
        }
        let mut seen = Vec::new();
        store
            .each_with_columns(&current(), &["id", "access_count"], |r| {
                seen.push((r.id, r.access_count))
            })
            .await
            .unwrap();
        seen.sort();
        written.sort();
        assert_eq!(seen, written);
    }
}
