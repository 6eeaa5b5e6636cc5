//! `memory.import`: exported versions written back as they were — ids, lineages, times,
//! salience, strength, emotion — with vectors made again by this daemon's embedder and the
//! names read again from the text, so entities and MENTIONS / TEMPORAL_SEQUENCE edges grow as
//! at ingest. Versions already stored (by id) are skipped: a file imported twice adds nothing.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use mnemo_protocol::memory::Memory;
use mnemo_protocol::time::now_micros;
use mnemo_protocol::transfer::{ImportResult, Record, MAX_TRANSFER_RECORDS};

use crate::error::{Error, Result};
use crate::store::{col, MemoryRecord, WriteOp};

use super::{validate_content, validate_label, validate_metadata, validate_tags, Ingest};

/// Ids are uuids (they go into predicates and file names of nothing else).
fn validate_id(what: &str, id: &str) -> std::result::Result<(), String> {
    uuid::Uuid::parse_str(id)
        .map(|_| ())
        .map_err(|_| format!("{what} `{id}` is not a memory id (a UUID)"))
}

/// The row an exported version describes, checked like an add.
fn imported_record(m: &Memory) -> std::result::Result<MemoryRecord, String> {
    validate_id("id", &m.id)?;
    validate_id("lineage", &m.lineage)?;
    for other in m
        .superseded_by
        .iter()
        .chain(&m.summarized_by)
        .chain(&m.summarizes)
    {
        validate_id("a linked id", other)?;
    }
    validate_content(&m.content)?;
    validate_tags(&m.tags)?;
    validate_label("namespace", Some(&m.namespace))?;
    validate_label("domain", m.domain.as_deref())?;
    validate_label("source", m.source.as_deref())?;
    validate_label("session_id", m.session_id.as_deref())?;
    let metadata = validate_metadata(&Some(m.metadata.clone()))?;
    if m.namespace.trim().is_empty() {
        return Err("namespace is empty".into());
    }
    if !(0.0..=10.0).contains(&m.salience) || !(0.0..=1.0).contains(&m.strength) {
        return Err("salience must be 0–10 and strength 0–1".into());
    }
    let mut r = MemoryRecord::from_protocol(m)?;
    if r.valid_to.is_some_and(|to| to < r.valid_from) {
        return Err("valid_to is before valid_from".into());
    }
    r.metadata = metadata;
    Ok(r)
}

impl Ingest {
    /// The memory records among `records` (the rest are other components').
    pub async fn import(&self, records: &[Record]) -> Result<ImportResult> {
        if records.len() > MAX_TRANSFER_RECORDS {
            return Err(Error::invalid(format!(
                "{} records; the limit is {MAX_TRANSFER_RECORDS} per import call",
                records.len()
            )));
        }
        let mut rows = Vec::with_capacity(records.len());
        for (i, record) in records.iter().enumerate() {
            let Record::Memory(m) = record else {
                continue;
            };
            let row = imported_record(m)
                .map_err(|e| Error::invalid(format!("records[{i}]: {e}; nothing was imported")))?;
            rows.push(row);
        }
        let given = rows.len();
        let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
        let stored: std::collections::HashSet<String> = self
            .store
            .columns_of(&col("id").one_of(&ids), &["id"])
            .await?
            .into_iter()
            .map(|r| r.id)
            .collect();
        let mut seen = std::collections::HashSet::new();
        rows.retain(|r| !stored.contains(&r.id) && seen.insert(r.id.clone()));
        let skipped = (given - rows.len()) as u64;
        if rows.is_empty() {
            return Ok(ImportResult { added: 0, skipped });
        }
        // In the order they were written, so a session's turns link in order.
        rows.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        let mut mentions = Vec::with_capacity(rows.len());
        for r in &mut rows {
            r.content_hash = self.store.content_hash(&r.content);
            let named = self.names.extract(&r.namespace, &r.content);
            r.entities = named.iter().map(|m| m.key.clone()).collect();
            mentions.push(named);
        }
        self.embed_into(&mut rows).await?;
        // A session links in the order its memories were first said: a memory updated since
        // keeps its place, as in the store it came from (its current version is newer).
        let mut first_said: HashMap<&str, i64> = HashMap::new();
        for r in &rows {
            let at = first_said.entry(r.lineage.as_str()).or_insert(r.created_at);
            *at = (*at).min(r.created_at);
        }
        let mut current: Vec<(MemoryRecord, _)> = rows
            .iter()
            .zip(mentions)
            .filter(|(r, _)| r.valid_to.is_none())
            .map(|(r, m)| (r.clone(), m))
            .collect();
        current.sort_by(|(a, _), (b, _)| {
            let said = |r: &MemoryRecord| first_said[r.lineage.as_str()];
            (said(a), &a.lineage).cmp(&(said(b), &b.lineage))
        });
        let (current, current_mentions): (Vec<MemoryRecord>, Vec<_>) = current.into_iter().unzip();
        let now = now_micros();
        let edges = self.linker.link(&current, now).await?;
        let added = rows.len() as u64;
        self.store.writer().submit(WriteOp::Insert(rows)).await?;
        if !edges.is_empty() {
            let op = self.store.edges().append(&edges)?;
            self.store.writer().submit(op).await?;
        }
        for r in &current {
            self.known.insert(r);
        }
        self.names.add(&current);
        self.entities.added(&current, &current_mentions);
        self.added
            .fetch_add(current.len() as u64, Ordering::Relaxed);
        self.publish_added(&current);
        Ok(ImportResult { added, skipped })
    }
}
