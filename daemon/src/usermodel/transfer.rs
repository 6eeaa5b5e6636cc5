//! Beliefs out and in for `memory.export` / `memory.import`: every version as it was, with
//! the lineages of its evidence, so an imported store believes what the exported one did
//! (import does not read beliefs again from the memories' text).

use mnemo_protocol::memory::{MAX_CONTENT_BYTES, MAX_LABEL_BYTES};
use mnemo_protocol::time::parse_micros;
use mnemo_protocol::transfer::{ExportedBelief, ImportResult, Record};

use super::views::to_protocol;
use super::{Changes, UserModel};
use crate::error::{Error, Result};
use crate::store::beliefs::BeliefRecord;

/// The row an exported belief version describes, checked.
fn imported(e: &ExportedBelief) -> std::result::Result<BeliefRecord, String> {
    let b = &e.belief;
    uuid::Uuid::parse_str(&b.id).map_err(|_| format!("belief id `{}` is not a UUID", b.id))?;
    let labels = [
        ("namespace", &b.namespace),
        ("subject", &b.subject),
        ("predicate", &b.predicate),
    ];
    for (what, value) in labels {
        if value.trim().is_empty() || value.len() > MAX_LABEL_BYTES {
            return Err(format!("belief {what} must be 1–{MAX_LABEL_BYTES} bytes"));
        }
    }
    if b.statement.len() > MAX_CONTENT_BYTES || b.object.len() > MAX_CONTENT_BYTES {
        return Err(format!(
            "belief statement is over {MAX_CONTENT_BYTES} bytes"
        ));
    }
    if b.read_by
        .as_ref()
        .is_some_and(|r| r.len() > MAX_LABEL_BYTES)
    {
        return Err(format!("belief read_by is over {MAX_LABEL_BYTES} bytes"));
    }
    if !(0.0..=1.0).contains(&b.confidence) {
        return Err(format!("belief confidence {} is not 0–1", b.confidence));
    }
    let valid_from = parse_micros(&b.valid_from).map_err(|e| format!("valid_from: {e}"))?;
    let valid_to = b
        .valid_to
        .as_deref()
        .map(parse_micros)
        .transpose()
        .map_err(|e| format!("valid_to: {e}"))?;
    Ok(BeliefRecord {
        id: b.id.clone(),
        namespace: b.namespace.clone(),
        subject: b.subject.clone(),
        predicate: b.predicate.clone(),
        object: b.object.clone(),
        negated: b.negated,
        statement: b.statement.clone(),
        belief_type: b.belief_type,
        domain: b.domain.clone(),
        scope: b.scope.clone(),
        confidence: b.confidence,
        evidence: e.evidence.clone(),
        source: b.source,
        read_by: b.read_by.clone(),
        source_memory_id: b.source_memory_id.clone(),
        valid_from,
        valid_to,
        superseded_by: b.superseded_by.clone(),
        contradicts: b.contradicts.clone(),
        sealed: false,
        // Embedded as it is written, with this store's model.
        ..Default::default()
    })
}

impl UserModel {
    /// Every version of every belief (of `namespace`), by id.
    pub fn exported(&self, namespace: Option<&str>) -> Vec<Record> {
        let mut beliefs = self.matching(|b| namespace.is_none_or(|n| n == b.namespace));
        beliefs.sort_by(|a, b| a.id.cmp(&b.id));
        beliefs
            .iter()
            .map(|b| {
                Record::Belief(Box::new(ExportedBelief {
                    belief: to_protocol(b),
                    evidence: b.evidence.clone(),
                }))
            })
            .collect()
    }

    /// The belief records among `records`, checked, as rows for [`UserModel::import`]. Apart
    /// from it so an import checks every kind of record before it writes any.
    pub fn checked(records: &[Record]) -> Result<Vec<BeliefRecord>> {
        let mut rows = Vec::new();
        for (i, record) in records.iter().enumerate() {
            let Record::Belief(e) = record else {
                continue;
            };
            let row = imported(e)
                .map_err(|e| Error::invalid(format!("records[{i}]: {e}; nothing was imported")))?;
            rows.push(row);
        }
        Ok(rows)
    }

    /// Writes checked belief rows as they are; ids already held are skipped.
    pub async fn import(&self, rows: Vec<BeliefRecord>) -> Result<ImportResult> {
        if rows.is_empty() {
            return Ok(ImportResult::default());
        }
        let _one = self.changing.lock().await;
        let mut changes = Changes::default();
        let mut skipped = 0;
        {
            let mut beliefs = self.lock();
            for row in rows {
                if beliefs.contains_key(&row.id) || changes.rows.contains(&row.id) {
                    skipped += 1;
                    continue;
                }
                changes.rows.insert(row.id.clone());
                beliefs.insert(row);
            }
        }
        let added = changes.rows.len() as u64;
        self.write(changes).await?;
        Ok(ImportResult { added, skipped })
    }
}
