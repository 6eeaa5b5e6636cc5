//! The write pipeline: validate -> understand -> embed -> one batch through the writer ->
//! publish. Updates are bi-temporal (the old version is closed, never overwritten) and
//! forgetting deletes every version for real.

use std::sync::Arc;

use mnemo_client::protocol::memory::{
    AddParams, ForgetParams, UpdateParams, DEFAULT_NAMESPACE, MAX_BATCH_ITEMS, MAX_CONTENT_BYTES,
};
use mnemo_client::protocol::time::{now_micros, parse_micros};
use mnemo_client::protocol::RpcError;

use crate::engine::Engine;
use crate::events::Event;
use crate::store::filter::{id_list, predicate_all_versions};
use crate::store::{MemoryRecord, StoreError, WriteOp};
use crate::understand;

mod known;
pub use crate::store::schema::content_hash;
pub use known::KnownContent;

pub fn store_error(e: StoreError) -> RpcError {
    match e {
        StoreError::Closed => RpcError::shutting_down(),
        other => RpcError::storage(format!("{other}; see mnemod's log for details")),
    }
}

pub fn embed_error(e: crate::embed::EmbedError) -> RpcError {
    RpcError::embedder_unavailable(e.to_string())
}

fn validate_content(content: &str) -> Result<(), String> {
    if content.trim().is_empty() {
        return Err("content is empty; a memory needs some text".into());
    }
    if content.len() > MAX_CONTENT_BYTES {
        return Err(format!(
            "content is {} bytes; the limit is {MAX_CONTENT_BYTES} (split it into several memories)",
            content.len()
        ));
    }
    Ok(())
}

fn validate_salience(salience: Option<f32>) -> Result<(), String> {
    match salience {
        Some(s) if !(0.0..=10.0).contains(&s) => Err(format!("salience {s} is outside 0–10")),
        _ => Ok(()),
    }
}

fn validate_metadata(metadata: &Option<serde_json::Value>) -> Result<String, String> {
    match metadata {
        None | Some(serde_json::Value::Null) => Ok("{}".into()),
        Some(v @ serde_json::Value::Object(_)) => Ok(v.to_string()),
        Some(_) => Err("metadata must be a JSON object".into()),
    }
}

/// A new row from validated params; the vector comes later.
fn new_record(p: AddParams, now: i64) -> Result<MemoryRecord, String> {
    validate_content(&p.content)?;
    validate_salience(p.salience)?;
    let metadata = validate_metadata(&p.metadata)?;
    let occurred_at = p
        .occurred_at
        .as_deref()
        .map(parse_micros)
        .transpose()
        .map_err(|e| format!("occurred_at: {e}"))?;
    let namespace = p.namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.into());
    if namespace.trim().is_empty() {
        return Err("namespace is empty; leave it out for the default namespace".into());
    }
    let salience = p
        .salience
        .unwrap_or_else(|| understand::salience(&p.content));
    let mut record = MemoryRecord::new(namespace, p.content, p.kind.unwrap_or_default(), now);
    record.salience = salience;
    record.domain = p.domain;
    record.source = p.source;
    record.session_id = p.session_id;
    record.occurred_at = occurred_at;
    record.tags = p.tags;
    record.metadata = metadata;
    Ok(record)
}

async fn embed_into(engine: &Engine, records: &mut [MemoryRecord]) -> Result<(), RpcError> {
    let texts = records.iter().map(|r| r.content.clone()).collect();
    let vectors = engine.embed.embed(texts).await.map_err(embed_error)?;
    let model = engine.embed.embedder().model_id().to_string();
    for (record, vector) in records.iter_mut().zip(vectors) {
        record.vector = vector;
        record.embed_model = model.clone();
    }
    Ok(())
}

/// Adds memories all-or-nothing: one bad item refuses the whole batch before anything is
/// written, and the rest commit together.
pub async fn add(
    engine: &Arc<Engine>,
    items: Vec<AddParams>,
    batch: bool,
) -> Result<Vec<MemoryRecord>, RpcError> {
    if batch && items.is_empty() {
        return Err(RpcError::invalid_params(
            "items is empty; send at least one memory",
        ));
    }
    if items.len() > MAX_BATCH_ITEMS {
        return Err(RpcError::invalid_params(format!(
            "{} items; the limit is {MAX_BATCH_ITEMS} per batch",
            items.len()
        )));
    }
    let now = now_micros();
    let mut records = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let record = new_record(item, now).map_err(|e| {
            RpcError::invalid_params(if batch {
                format!("items[{i}]: {e}; nothing was added")
            } else {
                e
            })
        })?;
        records.push(record);
    }
    let (fresh, answer) = known::skip_known(engine, records).await?;
    if !fresh.is_empty() {
        let mut fresh = fresh;
        embed_into(engine, &mut fresh).await?;
        engine
            .store
            .writer()
            .submit(WriteOp::Insert(fresh.clone()))
            .await
            .map_err(store_error)?;
        engine.consolidation.mark_dirty();
        for r in &fresh {
            engine.known.insert(r);
        }
        engine
            .added
            .fetch_add(fresh.len() as u64, std::sync::atomic::Ordering::Relaxed);
        publish_added(engine, &fresh);
        let mut fresh = fresh.into_iter();
        return Ok(answer
            .into_iter()
            .map(|a| match a {
                Known::Existing(r) => *r,
                Known::New => fresh.next().expect("one new record per New"),
            })
            .collect());
    }
    Ok(answer
        .into_iter()
        .filter_map(|a| match a {
            Known::Existing(r) => Some(*r),
            Known::New => None,
        })
        .collect())
}

/// What `add` answers for one item: a memory already stored, or the next new one.
pub(crate) enum Known {
    Existing(Box<MemoryRecord>),
    New,
}

fn publish_added(engine: &Engine, records: &[MemoryRecord]) {
    for r in records {
        let _ = engine.events.send(Event::MemoryAdded {
            id: r.id.clone(),
            namespace: r.namespace.clone(),
            kind: r.kind.to_string(),
            preview: preview(&r.content),
        });
    }
}

/// The first line of `content`, at most 120 characters, for live feeds.
pub fn preview(content: &str) -> String {
    let line = content.lines().next().unwrap_or_default();
    if line.chars().count() > 120 {
        format!("{}…", line.chars().take(119).collect::<String>())
    } else {
        line.to_string()
    }
}

pub fn not_found(id: &str) -> RpcError {
    RpcError::not_found(format!(
        "no memory with id `{id}`; `mnemo list` shows the ids there are"
    ))
}

pub async fn update(engine: &Arc<Engine>, p: UpdateParams) -> Result<MemoryRecord, RpcError> {
    if let Some(c) = &p.content {
        validate_content(c).map_err(RpcError::invalid_params)?;
    }
    validate_salience(p.salience).map_err(RpcError::invalid_params)?;
    let metadata = match &p.metadata {
        Some(_) => Some(validate_metadata(&p.metadata).map_err(RpcError::invalid_params)?),
        None => None,
    };
    let occurred_at = p
        .occurred_at
        .as_deref()
        .map(parse_micros)
        .transpose()
        .map_err(|e| RpcError::invalid_params(format!("occurred_at: {e}")))?;

    let _one_at_a_time = engine.update_lock.lock().await;
    let mut old = engine
        .store
        .get_full(std::slice::from_ref(&p.id))
        .await
        .map_err(store_error)?
        .pop()
        .ok_or_else(|| not_found(&p.id))?;
    if let Some(next) = &old.superseded_by {
        return Err(RpcError::conflict(format!(
            "memory `{}` was already replaced by `{next}`; update the current version",
            p.id
        )));
    }
    let now = now_micros().max(old.valid_from + 1);
    let mut new = old.clone();
    new.id = uuid::Uuid::now_v7().to_string();
    new.created_at = now;
    new.valid_from = now;
    if let Some(content) = p.content {
        new.content_hash = content_hash(&content);
        new.content = content;
        if p.salience.is_none() {
            new.salience = understand::salience(&new.content);
        }
    }
    if let Some(kind) = p.kind {
        new.kind = kind;
    }
    if p.domain.is_some() {
        new.domain = p.domain;
    }
    if occurred_at.is_some() {
        new.occurred_at = occurred_at;
    }
    if let Some(tags) = p.tags {
        new.tags = tags;
    }
    if let Some(m) = metadata {
        new.metadata = m;
    }
    if let Some(s) = p.salience {
        new.salience = s;
    }
    if new.content != old.content {
        embed_into(engine, std::slice::from_mut(&mut new)).await?;
    }
    old.valid_to = Some(now);
    old.superseded_by = Some(new.id.clone());
    engine
        .store
        .writer()
        .submit(WriteOp::Upsert(vec![old.clone(), new.clone()]))
        .await
        .map_err(store_error)?;
    engine.consolidation.mark_dirty();
    engine.known.remove(&old);
    engine.known.insert(&new);
    let _ = engine.events.send(Event::MemoryUpdated {
        id: new.id.clone(),
        replaces: old.id,
    });
    Ok(new)
}

pub async fn forget(engine: &Arc<Engine>, p: ForgetParams) -> Result<u64, RpcError> {
    let mut clauses = Vec::new();
    if !p.ids.is_empty() {
        let mut lineages = Vec::new();
        let mut missing = Vec::new();
        for id in &p.ids {
            match engine.store.get(id).await.map_err(store_error)? {
                Some(r) => lineages.push(r.lineage),
                None => missing.push(id.as_str()),
            }
        }
        if !missing.is_empty() {
            return Err(RpcError::not_found(format!(
                "no memory with id {}; nothing was forgotten",
                missing
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        clauses.push(id_list("lineage", &lineages));
    }
    if let Some(filter) = &p.filter {
        if filter.as_of.is_some() {
            return Err(RpcError::invalid_params(
                "forget takes no as_of: it deletes every version",
            ));
        }
        let predicate =
            predicate_all_versions(filter).map_err(|e| RpcError::invalid_params(e.to_string()))?;
        if predicate.is_empty() {
            return Err(RpcError::invalid_params(
                "an empty filter would forget everything; name a namespace, kind, domain, session, source or time range",
            ));
        }
        clauses.push(format!("({predicate})"));
    }
    if clauses.is_empty() {
        return Err(RpcError::invalid_params(
            "say what to forget: ids, a filter, or both",
        ));
    }
    let deleted = delete_with_traces(engine, clauses.join(" OR ")).await?;
    let _ = engine
        .events
        .send(Event::MemoryForgotten { count: deleted });
    Ok(deleted)
}

/// Deletes what `predicate` matches and every trace of it elsewhere in the store: duplicates
/// merged into it, summaries quoting it (their other sources are released to be summarised
/// again), and its pending access events.
async fn delete_with_traces(engine: &Arc<Engine>, predicate: String) -> Result<u64, RpcError> {
    let store = &engine.store;
    let columns = ["id", "summarized_by", "is_summary"];
    let mut rows = store
        .columns_of(predicate.clone(), &columns)
        .await
        .map_err(store_error)?;
    let mut ids: std::collections::BTreeSet<String> = rows.iter().map(|r| r.id.clone()).collect();
    let mut extra = Vec::new();
    let mut frontier: Vec<String> = ids.iter().cloned().collect();
    // Duplicates can have been merged into duplicates; a few levels cover any real chain.
    for _ in 0..4 {
        if frontier.is_empty() {
            break;
        }
        let merged = store
            .columns_of(id_list("superseded_by", &frontier), &columns)
            .await
            .map_err(store_error)?;
        frontier = merged
            .iter()
            .filter(|r| ids.insert(r.id.clone()))
            .map(|r| r.id.clone())
            .collect();
        extra.extend(frontier.iter().cloned());
        rows.extend(merged);
    }
    let mut summaries: Vec<String> = rows
        .iter()
        .filter_map(|r| r.summarized_by.clone())
        .filter(|s| !ids.contains(s))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    extra.extend(summaries.iter().cloned());
    summaries.extend(rows.iter().filter(|r| r.is_summary).map(|r| r.id.clone()));
    let mut full = predicate;
    if !extra.is_empty() {
        full = format!("({full}) OR {}", id_list("id", &extra));
    }
    let writer = store.writer();
    let deleted = writer
        .submit(WriteOp::Delete(full))
        .await
        .map_err(store_error)?;
    if !summaries.is_empty() {
        writer
            .submit(WriteOp::Update {
                predicate: id_list("summarized_by", &summaries),
                columns: vec![("summarized_by".into(), "CAST(NULL AS STRING)".into())],
            })
            .await
            .map_err(store_error)?;
    }
    let ids: Vec<String> = ids.into_iter().collect();
    for chunk in ids.chunks(1000) {
        writer
            .submit(WriteOp::DeleteWhere {
                table: store.runs().access_log.clone(),
                predicate: id_list("memory_id", chunk),
            })
            .await
            .map_err(store_error)?;
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_ignores_case_and_spacing() {
        assert_eq!(content_hash("Hello   World"), content_hash("hello world"));
        assert_ne!(content_hash("hello world"), content_hash("hello there"));
    }

    #[test]
    fn bad_items_are_explained() {
        let cases = [
            (
                AddParams {
                    content: "  ".into(),
                    ..Default::default()
                },
                "content is empty",
            ),
            (
                AddParams {
                    content: "x".repeat(MAX_CONTENT_BYTES + 1),
                    ..Default::default()
                },
                "the limit is",
            ),
            (
                AddParams {
                    content: "x".into(),
                    occurred_at: Some("someday".into()),
                    ..Default::default()
                },
                "occurred_at: cannot read",
            ),
            (
                AddParams {
                    content: "x".into(),
                    salience: Some(11.0),
                    ..Default::default()
                },
                "outside 0–10",
            ),
            (
                AddParams {
                    content: "x".into(),
                    metadata: Some(serde_json::json!([1])),
                    ..Default::default()
                },
                "JSON object",
            ),
        ];
        for (params, want) in cases {
            let err = new_record(params, 0).unwrap_err();
            assert!(err.contains(want), "{err} lacks {want}");
        }
    }

    #[test]
    fn defaults_fill_in() {
        let r = new_record(
            AddParams {
                content: "I love hiking".into(),
                ..Default::default()
            },
            7,
        )
        .unwrap();
        assert_eq!(r.namespace, DEFAULT_NAMESPACE);
        assert_eq!((r.created_at, r.valid_from, r.valid_to), (7, 7, None));
        assert_eq!(r.lineage, r.id);
        assert!(r.salience > 4.0);
    }
}
