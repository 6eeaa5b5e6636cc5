//! The write pipeline: validate -> understand -> embed -> one batch through the writer ->
//! publish. Updates are bi-temporal (the old version is closed, never overwritten) and
//! forgetting deletes every version for real.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use mnemo_protocol::graph::EdgeType;
use mnemo_protocol::memory::{
    AddParams, ForgetParams, UpdateParams, DEFAULT_NAMESPACE, MAX_BATCH_ITEMS, MAX_CONTENT_BYTES,
    MAX_LABEL_BYTES, MAX_METADATA_BYTES, MAX_TAGS, MAX_TAG_BYTES,
};
use mnemo_protocol::time::{now_micros, parse_micros};

use crate::access::AccessRecorder;
use crate::config::SalienceConfig;
use crate::embed::EmbedService;
use crate::error::{Error, Result};
use crate::events::{Event, EventBus};
use crate::graph::{EntityBook, Gazetteer, Linker};
use crate::knowledge::Knowledge;
use crate::store::filter::predicate_all_versions;
use crate::store::{col, Expr, MemoryRecord, Pred, SqlType, Store, StoreError, WriteOp};
use crate::usermodel::UserModel;

mod digests;
mod import;
mod known;
mod novelty;
mod reading;
use known::KnownContent;
use novelty::Novelty;

/// The write pipeline and what it needs: the store, the embedder, the bus it announces
/// changes on, and the access recorder its duplicate check reports to.
pub struct Ingest {
    store: Arc<Store>,
    embed: EmbedService,
    events: EventBus,
    access: AccessRecorder,
    /// What is stored, for the duplicate check at add.
    known: KnownContent,
    /// The names memories mention: learned at add, found again in later texts.
    names: Arc<Gazetteer>,
    /// The edges new memories bring.
    linker: Linker,
    /// What the store knows of each entity.
    entities: Arc<EntityBook>,
    /// How unlike what is stored a new memory is (a salience factor).
    novelty: Novelty,
    /// What memories say about the person: beliefs, preferences, identity.
    usermodel: Arc<UserModel>,
    salience: SalienceConfig,
    /// Memories added since start.
    added: AtomicU64,
}

fn validate_content(content: &str) -> std::result::Result<(), String> {
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

fn validate_salience(salience: Option<f32>) -> std::result::Result<(), String> {
    match salience {
        Some(s) if !(0.0..=10.0).contains(&s) => Err(format!("salience {s} is outside 0–10")),
        _ => Ok(()),
    }
}

fn validate_metadata(metadata: &Option<serde_json::Value>) -> std::result::Result<String, String> {
    let json = match metadata {
        None | Some(serde_json::Value::Null) => return Ok("{}".into()),
        Some(v @ serde_json::Value::Object(_)) => v.to_string(),
        Some(_) => return Err("metadata must be a JSON object".into()),
    };
    if json.len() > MAX_METADATA_BYTES {
        return Err(format!(
            "metadata is {} bytes as JSON; the limit is {MAX_METADATA_BYTES} (keep large data elsewhere and store a reference)",
            json.len()
        ));
    }
    Ok(json)
}

/// A namespace, domain, source or session id: a short name, not a place for content.
pub fn validate_label(what: &str, value: Option<&str>) -> std::result::Result<(), String> {
    match value {
        Some(v) if v.len() > MAX_LABEL_BYTES => Err(format!(
            "{what} is {} bytes; the limit is {MAX_LABEL_BYTES}",
            v.len()
        )),
        _ => Ok(()),
    }
}

fn validate_tags(tags: &[String]) -> std::result::Result<(), String> {
    if tags.len() > MAX_TAGS {
        return Err(format!(
            "{} tags; the limit is {MAX_TAGS} per memory",
            tags.len()
        ));
    }
    match tags.iter().find(|t| t.len() > MAX_TAG_BYTES) {
        Some(t) => Err(format!(
            "a tag is {} bytes; the limit is {MAX_TAG_BYTES}",
            t.len()
        )),
        None => Ok(()),
    }
}

/// A new row from validated params, and whether its salience was given; the vector and what
/// the text says come later.
fn new_record(p: AddParams, now: i64) -> std::result::Result<(MemoryRecord, bool), String> {
    validate_content(&p.content)?;
    validate_salience(p.salience)?;
    validate_tags(&p.tags)?;
    validate_label("namespace", p.namespace.as_deref())?;
    validate_label("domain", p.domain.as_deref())?;
    validate_label("source", p.source.as_deref())?;
    validate_label("session_id", p.session_id.as_deref())?;
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
    let mut record = MemoryRecord::new(namespace, p.content, p.kind.unwrap_or_default(), now);
    let given_salience = p.salience.is_some();
    record.salience = p.salience.unwrap_or(record.salience);
    record.domain = p.domain;
    record.source = p.source;
    record.session_id = p.session_id;
    record.occurred_at = occurred_at;
    record.tags = p.tags;
    record.metadata = metadata;
    Ok((record, given_salience))
}

impl Ingest {
    /// Loads what is stored for the duplicate check (a few columns, one pass).
    pub async fn start(
        store: Arc<Store>,
        embed: EmbedService,
        events: EventBus,
        access: AccessRecorder,
        knowledge: Knowledge,
        salience: SalienceConfig,
    ) -> std::result::Result<Self, StoreError> {
        let Knowledge {
            names,
            entities,
            usermodel,
        } = knowledge;
        let known = KnownContent::default();
        let count = known.load(&store).await?;
        let named = names.load().await?;
        let book = entities.load().await?;
        let beliefs = usermodel.load().await?;
        tracing::debug!(
            "{count} current memories, {named} entity names, {book} entities, {beliefs} beliefs"
        );
        Ok(Self {
            linker: Linker::new(store.clone()),
            store,
            embed,
            events,
            access,
            known,
            names,
            entities,
            novelty: Novelty::default(),
            usermodel,
            salience,
            added: AtomicU64::new(0),
        })
    }

    /// Encrypts the store (`mnemo encrypt`); the duplicate check then learns the keyed hashes.
    pub async fn encrypt(&self) -> Result<u64> {
        let sealed = self.store.encrypt().await?;
        self.known.load(&self.store).await?;
        self.names.load().await?;
        self.entities.rekey().await?;
        self.usermodel.reseal().await?;
        // The entities' plain rows live on in old versions until purged.
        self.store.purge().await?;
        Ok(sealed)
    }

    /// Memories added since start.
    pub fn added(&self) -> u64 {
        self.added.load(Ordering::Relaxed)
    }

    async fn embed_into(&self, records: &mut [MemoryRecord]) -> Result<()> {
        let texts = records.iter().map(|r| r.content.clone()).collect();
        let vectors = self.embed.embed(texts).await?;
        let model = self.embed.embedder().model_id().to_string();
        for (record, vector) in records.iter_mut().zip(vectors) {
            record.vector = vector;
            record.embed_model = model.clone();
        }
        Ok(())
    }

    /// Adds memories all-or-nothing: one bad item refuses the whole batch before anything is
    /// written, and the rest commit together.
    pub async fn add(&self, items: Vec<AddParams>, batch: bool) -> Result<Vec<MemoryRecord>> {
        self.add_shaped(items, batch, |_| {}).await
    }

    /// [`Ingest::add`], with `shape` setting what the params cannot say (an episode's typed
    /// columns) on each new row before it is understood and stored.
    pub async fn add_shaped(
        &self,
        items: Vec<AddParams>,
        batch: bool,
        shape: impl Fn(&mut MemoryRecord),
    ) -> Result<Vec<MemoryRecord>> {
        if batch && items.is_empty() {
            return Err(Error::invalid("items is empty; send at least one memory"));
        }
        if items.len() > MAX_BATCH_ITEMS {
            return Err(Error::invalid(format!(
                "{} items; the limit is {MAX_BATCH_ITEMS} per batch",
                items.len()
            )));
        }
        let now = now_micros();
        let mut records = Vec::with_capacity(items.len());
        let mut mentions = std::collections::HashMap::new();
        for (i, item) in items.into_iter().enumerate() {
            let (mut record, given_salience) = new_record(item, now).map_err(|e| {
                Error::invalid(if batch {
                    format!("items[{i}]: {e}; nothing was added")
                } else {
                    e
                })
            })?;
            shape(&mut record);
            // Keyed in an encrypted store, so it matches what is stored.
            record.content_hash = self.store.content_hash(&record.content);
            mentions.insert(
                record.id.clone(),
                self.read_into(&mut record, given_salience),
            );
            records.push(record);
        }
        let _claim = self.known.claim(&records).await;
        let (fresh, answer, repeated) = self.known.skip_known(&self.store, records).await?;
        self.access.record(repeated);
        if !fresh.is_empty() {
            let mut fresh = fresh;
            self.embed_into(&mut fresh).await?;
            self.rescore_novelty(&mut fresh).await?;
            self.usermodel.projects().assign(&mut fresh).await?;
            let edges = self.linker.link(&fresh, now).await?;
            self.store
                .writer()
                .submit(WriteOp::Insert(fresh.clone()))
                .await?;
            if !edges.is_empty() {
                // After the memories: an edge never points at a memory not yet stored. A
                // crash between the two loses these edges, never a memory.
                let op = self.store.edges().append(&edges)?;
                self.store.writer().submit(op).await?;
            }
            // After the memories too: a belief's evidence is always a stored memory.
            self.usermodel.observe(&fresh).await?;
            for r in &fresh {
                self.known.insert(r);
            }
            self.names.add(&fresh);
            let named: Vec<_> = fresh
                .iter()
                .map(|r| mentions.remove(&r.id).unwrap_or_default())
                .collect();
            self.entities.added(&fresh, &named);
            self.added.fetch_add(fresh.len() as u64, Ordering::Relaxed);
            self.publish_added(&fresh);
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

    fn publish_added(&self, records: &[MemoryRecord]) {
        for r in records {
            let _ = self.events.send(Event::MemoryAdded {
                id: r.id.clone(),
                namespace: r.namespace.clone(),
                kind: r.kind.to_string(),
                preview: preview(&r.content),
            });
        }
    }

    pub async fn update(&self, p: UpdateParams) -> Result<MemoryRecord> {
        self.update_shaped(p, |_| {}).await
    }

    /// [`Ingest::update`], with `shape` setting what the params cannot say (a watched note's
    /// new source after a rename) on the new version.
    pub async fn update_shaped(
        &self,
        p: UpdateParams,
        shape: impl FnOnce(&mut MemoryRecord),
    ) -> Result<MemoryRecord> {
        if let Some(c) = &p.content {
            validate_content(c).map_err(Error::Invalid)?;
        }
        validate_salience(p.salience).map_err(Error::Invalid)?;
        validate_tags(p.tags.as_deref().unwrap_or_default()).map_err(Error::Invalid)?;
        validate_label("domain", p.domain.as_deref()).map_err(Error::Invalid)?;
        let metadata = match &p.metadata {
            Some(_) => Some(validate_metadata(&p.metadata).map_err(Error::Invalid)?),
            None => None,
        };
        let occurred_at = p
            .occurred_at
            .as_deref()
            .map(parse_micros)
            .transpose()
            .map_err(|e| Error::invalid(format!("occurred_at: {e}")))?;

        let mut old = self
            .store
            .get_full(std::slice::from_ref(&p.id))
            .await?
            .pop()
            .ok_or_else(|| Error::memory_not_found(&p.id))?;
        if let Some(next) = &old.superseded_by {
            return Err(Error::Conflict(format!(
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
            new.content_hash = self.store.content_hash(&content);
            new.content = content;
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
        shape(&mut new);
        let mut mentions = None;
        if new.content != old.content || occurred_at.is_some() || p.salience.is_some() {
            // A new time re-resolves "yesterday"; a given salience drops the factors.
            mentions = Some(self.read_into(&mut new, p.salience.is_some()));
        }
        if new.content != old.content {
            self.embed_into(std::slice::from_mut(&mut new)).await?;
            self.rescore_novelty(std::slice::from_mut(&mut new)).await?;
        }
        old.valid_to = Some(now);
        old.superseded_by = Some(new.id.clone());
        // No lock: the writer commits this only if `old` is still current, so updates of
        // different memories run in parallel and the second of two updates of one version fails.
        self.store
            .writer()
            .submit(WriteOp::Supersede {
                old: Box::new(old.clone()),
                new: Box::new(new.clone()),
            })
            .await
            .map_err(|e| match e {
                StoreError::Conflict(m) => Error::Conflict(m),
                other => Error::Store(other),
            })?;
        self.known.remove(&old);
        self.known.insert(&new);
        if new.entities != old.entities {
            let edges = self.store.edges();
            let writer = self.store.writer();
            writer
                .submit(edges.delete_from(&new.lineage, EdgeType::Mentions))
                .await?;
            let now = now_micros();
            writer
                .submit(edges.append(&self.linker.mentions(&new, now))?)
                .await?;
        }
        if new.content != old.content {
            // What the old text alone said is closed, kept as history; the new text speaks.
            self.usermodel.revise(&old, &new).await?;
        }
        self.names.remove([&old]);
        self.names.add([&new]);
        if let Some(mentions) = mentions {
            self.entities.removed([&old]);
            self.entities.added(std::slice::from_ref(&new), &[mentions]);
        }
        let _ = self.events.send(Event::MemoryUpdated {
            id: new.id.clone(),
            replaces: old.id,
        });
        Ok(new)
    }

    pub async fn forget(&self, p: ForgetParams) -> Result<u64> {
        let mut clauses = Vec::new();
        if !p.ids.is_empty() {
            let mut lineages = Vec::new();
            let mut missing = Vec::new();
            for id in &p.ids {
                match self.store.get(id).await? {
                    Some(r) => lineages.push(r.lineage),
                    None => missing.push(id.as_str()),
                }
            }
            if !missing.is_empty() {
                return Err(Error::NotFound(format!(
                    "no memory with id {}; nothing was forgotten",
                    missing
                        .iter()
                        .map(|m| format!("`{m}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            clauses.push(col("lineage").one_of(&lineages));
        }
        if let Some(filter) = &p.filter {
            if filter.as_of.is_some() {
                return Err(Error::invalid(
                    "forget takes no as_of: it deletes every version",
                ));
            }
            let predicate =
                predicate_all_versions(filter).map_err(|e| Error::invalid(e.to_string()))?;
            if predicate == Pred::All {
                return Err(Error::invalid(
                    "an empty filter would forget everything; name a namespace, kind, domain, session, source or time range",
                ));
            }
            clauses.push(predicate);
        }
        let Some(either) = clauses.into_iter().reduce(Pred::or) else {
            return Err(Error::invalid("say what to forget: ids, a filter, or both"));
        };
        let deleted = self.delete_with_traces(either).await?;
        // Old versions and index files still hold the text until the purge.
        self.store.request_purge();
        let _ = self.events.send(Event::MemoryForgotten { count: deleted });
        Ok(deleted)
    }

    /// Deletes what `predicate` matches and every trace of it elsewhere in the store: duplicates
    /// merged into it, summaries quoting it (their other sources are released to be summarised
    /// again), and its pending access events.
    async fn delete_with_traces(&self, predicate: Pred) -> Result<u64> {
        let store = &self.store;
        // Namespace, entities, project and currency too: the names of current rows are
        // unlearned, and their projects count them no more.
        let columns = [
            "id",
            "lineage",
            "summarized_by",
            "is_summary",
            "namespace",
            "entities",
            "project_id",
            "valid_to",
            "salience",
        ];
        let mut rows = store.columns_of(&predicate, &columns).await?;
        let mut ids: std::collections::BTreeSet<String> =
            rows.iter().map(|r| r.id.clone()).collect();
        let mut extra = Vec::new();
        let mut frontier: Vec<String> = ids.iter().cloned().collect();
        // Duplicates can have been merged into duplicates; a few levels cover any real chain.
        for _ in 0..4 {
            if frontier.is_empty() {
                break;
            }
            let merged = store
                .columns_of(&col("superseded_by").one_of(&frontier), &columns)
                .await?;
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
            full = full.or(col("id").one_of(&extra));
        }
        let writer = store.writer();
        let deleted = writer.submit(WriteOp::Delete(full)).await?;
        self.names
            .remove(rows.iter().filter(|r| r.valid_to.is_none()));
        self.entities
            .removed(rows.iter().filter(|r| r.valid_to.is_none()));
        self.usermodel
            .projects()
            .forgotten(rows.iter().filter(|r| r.valid_to.is_none()))
            .await?;
        if !summaries.is_empty() {
            writer
                .submit(WriteOp::Update {
                    predicate: col("summarized_by").one_of(&summaries),
                    columns: vec![("summarized_by", Expr::Null(SqlType::String))],
                })
                .await?;
        }
        let lineages: std::collections::BTreeSet<String> =
            rows.iter().map(|r| r.lineage.clone()).collect();
        let lineages: Vec<String> = lineages.into_iter().collect();
        for chunk in lineages.chunks(1000) {
            writer.submit(store.edges().delete_touching(chunk)).await?;
        }
        self.usermodel
            .retract(&lineages.iter().cloned().collect())
            .await?;
        // A session whose latest memory went must look its tail up again.
        self.linker.forget_sessions().await;
        let ids: Vec<String> = ids.into_iter().collect();
        for chunk in ids.chunks(1000) {
            writer
                .submit(WriteOp::DeleteWhere {
                    table: store.runs().access_log.clone(),
                    predicate: col("memory_id").one_of(chunk),
                })
                .await?;
        }
        Ok(deleted)
    }
}

/// What `add` answers for one item: a memory already stored, or the next new one.
enum Known {
    Existing(Box<MemoryRecord>),
    New,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::content_hash;

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
        let (r, given_salience) = new_record(
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
        assert!(!given_salience);
    }
}
