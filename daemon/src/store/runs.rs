//! Consolidation's tables: `runs` (one row per run, the protocol record as JSON beside the
//! columns queries filter on) and `access_log` (memory reads waiting to be folded into their
//! rows, so a search never rewrites the rows it returns).

use std::sync::Arc;

use lancedb::arrow::arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use lancedb::arrow::arrow_schema::{DataType, Field, Schema, SchemaRef};
use lancedb::{Connection, Table};
use mnemo_protocol::consolidate::RunRecord;
use mnemo_protocol::time::parse_micros;

use super::error::StoreError;
use super::sql::{col, matching};
use super::system::{json, json_rows};
use super::tables::open_or_create;

pub const RUNS: &str = "runs";
pub const ACCESS_LOG: &str = "access_log";

fn runs_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("at", DataType::Int64, false),
        Field::new("status", DataType::Utf8, false),
        Field::new("data", DataType::Utf8, false),
    ]))
}

fn access_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("memory_id", DataType::Utf8, false),
        Field::new("at", DataType::Int64, false),
    ]))
}

pub struct RunTables {
    pub runs: Table,
    pub access_log: Table,
}

/// Reads of one memory, summed: how many since the fold and the latest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessTally {
    pub memory_id: String,
    pub count: i64,
    pub last_at: i64,
}

impl RunTables {
    pub async fn open(db: &Connection, names: &[String]) -> Result<Self, StoreError> {
        Ok(Self {
            runs: open_or_create(db, names, RUNS, runs_schema()).await?,
            access_log: open_or_create(db, names, ACCESS_LOG, access_schema()).await?,
        })
    }

    /// Runs, newest first.
    pub async fn recent(&self, limit: usize) -> Result<Vec<RunRecord>, StoreError> {
        let rows: Vec<(i64, RunRecord)> = json_rows(&self.runs, &col("at").ge(0_i64)).await?;
        Ok(rows.into_iter().rev().take(limit).map(|(_, r)| r).collect())
    }

    /// Access events up to `until` (inclusive): (memory id, when).
    async fn access_events(&self, until: i64) -> Result<Vec<(String, i64)>, StoreError> {
        let batches = matching(&self.access_log, &col("at").le(until), None).await?;
        let mut events = Vec::new();
        for b in &batches {
            let (Some(ids), Some(ats)) = (
                b.column_by_name("memory_id")
                    .and_then(|c| c.as_any().downcast_ref::<StringArray>()),
                b.column_by_name("at")
                    .and_then(|c| c.as_any().downcast_ref::<Int64Array>()),
            ) else {
                continue;
            };
            events.extend((0..b.num_rows()).map(|i| (ids.value(i).to_string(), ats.value(i))));
        }
        Ok(events)
    }

    /// The memories each recall up to `until` answered together (its events share one time),
    /// for recalls of two or more.
    pub async fn co_accessed(&self, until: i64) -> Result<Vec<(i64, Vec<String>)>, StoreError> {
        let mut groups: std::collections::BTreeMap<i64, Vec<String>> = Default::default();
        for (id, at) in self.access_events(until).await? {
            groups.entry(at).or_default().push(id);
        }
        Ok(groups
            .into_iter()
            .filter_map(|(at, mut ids)| {
                ids.sort();
                ids.dedup();
                (ids.len() > 1).then_some((at, ids))
            })
            .collect())
    }

    /// Access events up to `until` (inclusive), summed per memory.
    pub async fn access_tallies(&self, until: i64) -> Result<Vec<AccessTally>, StoreError> {
        let mut tallies: std::collections::BTreeMap<String, (i64, i64)> = Default::default();
        for (id, at) in self.access_events(until).await? {
            let t = tallies.entry(id).or_default();
            t.0 += 1;
            t.1 = t.1.max(at);
        }
        Ok(tallies
            .into_iter()
            .map(|(memory_id, (count, last_at))| AccessTally {
                memory_id,
                count,
                last_at,
            })
            .collect())
    }
}

pub fn run_batch(run: &RunRecord) -> Result<RecordBatch, StoreError> {
    let started = parse_micros(&run.started_at).unwrap_or_default();
    let status = serde_json::to_value(run.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec![run.id.as_str()])),
        Arc::new(Int64Array::from(vec![started])),
        Arc::new(StringArray::from(vec![status])),
        Arc::new(StringArray::from(vec![json(run)])),
    ];
    Ok(RecordBatch::try_new(runs_schema(), columns)?)
}

/// Access events: (memory id, when).
pub fn access_batch(accesses: &[(String, i64)]) -> Result<RecordBatch, StoreError> {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(
            accesses
                .iter()
                .map(|(id, _)| Some(id.as_str()))
                .collect::<StringArray>(),
        ),
        Arc::new(accesses.iter().map(|(_, at)| *at).collect::<Int64Array>()),
    ];
    Ok(RecordBatch::try_new(access_schema(), columns)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_batch_has_a_row_per_id() {
        let b = access_batch(&[("a".into(), 7), ("b".into(), 8)]).unwrap();
        assert_eq!(b.num_rows(), 2);
        assert!(b.column(1).is_valid(1));
    }
}
