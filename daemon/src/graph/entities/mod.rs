//! The entity book: what the store knows of each entity its memories mention, kept in
//! memory and written to the `entities` table (`store::entities`) every few seconds, so
//! ingest never waits on it. Ingest tells it what new memories mention; update and forget
//! what current memories stopped mentioning. An entity no current memory mentions is removed.
//!
//! It is derived data: a crash can lose the last few seconds of counts, and a store older than
//! the table is read once from its memories at start ([`EntityBook::load`]).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mnemo_protocol::entity::{Entity, EntitySort, EntityType, ListParams, MAX_LIST};
use mnemo_protocol::time::format_micros;

use crate::paging::Page;
use crate::shutdown::Shutdown;
use crate::store::entities::{entity_id, EntityRecord};
use crate::store::filter::current;
use crate::store::{MemoryRecord, Store, StoreError};

/// Set once the memories were read for the entities they mention, and mentioned none.
const READ_NONE: &str = "entities.read_memories_found_none";
use crate::understand::entities::{extract, fold, Mention};

mod merge;
use merge::root;

/// How often what changed is written: each write is a merge through the one writer, so
/// not so often that it slows the memories' commits.
const FLUSH_EVERY: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, PartialEq)]
struct Known {
    namespace: String,
    /// As stored: the folded name, keyed in an encrypted store.
    key: String,
    entity_type: EntityType,
    /// Written forms and how often each was written.
    forms: BTreeMap<String, u32>,
    relation: Option<String>,
    mentions: i64,
    first_seen: i64,
    last_seen: i64,
    salience_sum: f32,
    merged_into: Option<String>,
}

impl Known {
    /// The form written most often; the longer on a tie ("Maria" over "maria" is a tie broken
    /// by capitals, since upper case sorts first).
    fn name(&self) -> String {
        self.forms
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(form, _)| form.clone())
            .unwrap_or_else(|| self.key.clone())
    }

    fn to_protocol(&self) -> Entity {
        Entity {
            id: self.key.clone(),
            namespace: self.namespace.clone(),
            name: self.name(),
            entity_type: self.entity_type,
            aliases: self.forms.keys().cloned().collect(),
            relation: self.relation.clone(),
            mention_count: self.mentions.max(0) as u64,
            first_seen: format_micros(self.first_seen),
            last_seen: format_micros(self.last_seen),
            salience: self.salience_sum / self.mentions.max(1) as f32,
            merged_into: self.merged_into.clone(),
        }
    }
}

/// Kinds a later mention may correct: a name first seen as a concept ("Maria" opening a
/// sentence) is a person once a relation or speaker line says so.
fn better_type(old: EntityType, new: EntityType) -> EntityType {
    if old == EntityType::Concept {
        new
    } else {
        old
    }
}

#[derive(Default)]
struct Book {
    entities: HashMap<String, Known>,
    /// Ids changed since the last flush.
    dirty: HashSet<String>,
    /// Ids of the entities merged into another, so finding an entity's aliases reads only
    /// these.
    aliases: HashSet<String>,
}

impl Book {
    fn replace(&mut self, entities: HashMap<String, Known>) {
        self.aliases = entities
            .iter()
            .filter(|(_, k)| k.merged_into.is_some())
            .map(|(id, _)| id.clone())
            .collect();
        self.entities = entities;
    }
}

pub struct EntityBook {
    store: Arc<Store>,
    book: Mutex<Book>,
}

impl EntityBook {
    pub fn new(store: Arc<Store>) -> Self {
        Self {
            store,
            book: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads the table; when it is empty and memories mention entities (a store older than
    /// the table), reads them from the current memories' texts once.
    pub async fn load(&self) -> Result<usize, StoreError> {
        let rows = self.store.entities().rows(&crate::store::Pred::All).await?;
        let sealing = self.store.sealing();
        let mut entities = HashMap::new();
        for r in rows {
            let name = sealing.open_label(&r.id, "name", &r.name, r.sealed)?;
            let aliases = sealing.open_label(&r.id, "aliases", &r.aliases, r.sealed)?;
            let mut forms: BTreeMap<String, u32> =
                serde_json::from_str(&aliases).unwrap_or_default();
            forms.entry(name).or_insert(1);
            entities.insert(
                r.id.clone(),
                Known {
                    namespace: r.namespace,
                    key: r.key,
                    entity_type: r.entity_type,
                    forms,
                    relation: r.relation,
                    mentions: r.mention_count,
                    first_seen: r.first_seen,
                    last_seen: r.last_seen,
                    salience_sum: r.salience_sum,
                    merged_into: r.merged_into,
                },
            );
        }
        let found = entities.len();
        self.lock().replace(entities);
        if found == 0 && self.store.meta_get(READ_NONE).await?.is_none() {
            return self.read_memories().await;
        }
        Ok(found)
    }

    /// Every current memory's mentions, from its text (names learned on the way count), a
    /// batch of rows at a time: at 1M memories, held all at once as records, they took
    /// ~0.7 GB for the few seconds of the read. When they mention none, that is noted, so
    /// the next start does not read them all again.
    async fn read_memories(&self) -> Result<usize, StoreError> {
        let columns = [
            "id",
            "namespace",
            "content",
            "salience",
            "occurred_at",
            "created_at",
            // Sealed text opens only with its row's id and seal flag.
            "sealed",
        ];
        let mut known: HashMap<String, HashSet<String>> = HashMap::new();
        let mut read = 0usize;
        self.store
            .each_with_columns(&current(), &columns, |r| {
                read += 1;
                let names = known.entry(r.namespace.clone()).or_default();
                let mentions = extract(&r.content, &|k| names.contains(k));
                names.extend(mentions.iter().map(|m| m.key.clone()));
                self.added(std::slice::from_ref(&r), &[mentions]);
            })
            .await?;
        let found = self.lock().entities.len();
        if read > 0 {
            tracing::info!("read the entities of {read} memories once: {found} entities");
        }
        if read > 0 && found == 0 {
            self.store.meta_set(READ_NONE, "true").await?;
        }
        Ok(found)
    }

    /// New current memories and what each mentions (`mentions[i]` for `records[i]`; keys
    /// folded, not yet keyed).
    pub fn added(&self, records: &[MemoryRecord], mentions: &[Vec<Mention>]) {
        let mut book = self.lock();
        for (r, mentions) in records.iter().zip(mentions) {
            let at = r.event_time();
            for m in mentions {
                let key = self.store.entity_key(&m.key);
                let id = entity_id(&r.namespace, &key);
                let known = book.entities.entry(id.clone()).or_insert_with(|| Known {
                    namespace: r.namespace.clone(),
                    key,
                    entity_type: m.kind,
                    forms: BTreeMap::new(),
                    relation: None,
                    mentions: 0,
                    first_seen: at,
                    last_seen: at,
                    salience_sum: 0.0,
                    merged_into: None,
                });
                *known.forms.entry(m.name.clone()).or_default() += 1;
                known.entity_type = better_type(known.entity_type, m.kind);
                if known.relation.is_none() {
                    known.relation = m.relation.clone();
                }
                known.mentions += 1;
                known.first_seen = known.first_seen.min(at);
                known.last_seen = known.last_seen.max(at);
                known.salience_sum += r.salience;
                book.dirty.insert(id);
            }
        }
    }

    /// Current memories that stopped being current (replaced or forgotten); their `entities`
    /// as stored.
    pub fn removed<'a>(&self, records: impl IntoIterator<Item = &'a MemoryRecord>) {
        let mut book = self.lock();
        for r in records {
            for key in &r.entities {
                let id = entity_id(&r.namespace, key);
                if let Some(known) = book.entities.get_mut(&id) {
                    known.mentions -= 1;
                    known.salience_sum = (known.salience_sum - r.salience).max(0.0);
                    book.dirty.insert(id);
                }
            }
        }
    }

    /// Writes what changed: entities still mentioned, and removes those no memory mentions.
    pub async fn flush(&self) -> Result<(), StoreError> {
        let (rows, gone, gone_ids) = {
            let mut book = self.lock();
            let dirty: Vec<String> = book.dirty.drain().collect();
            let mut rows = Vec::new();
            // namespace -> the keys of its entities no memory mentions any more
            let mut gone: BTreeMap<String, Vec<String>> = BTreeMap::new();
            let mut gone_ids = Vec::new();
            for id in dirty {
                match book.entities.get(&id) {
                    Some(k) if k.mentions > 0 => rows.push(self.row(&id, k)),
                    _ => {
                        book.aliases.remove(&id);
                        if let Some(k) = book.entities.remove(&id) {
                            gone.entry(k.namespace).or_default().push(k.key);
                        }
                        gone_ids.push(id);
                    }
                }
            }
            (rows, gone, gone_ids)
        };
        let entities = self.store.entities();
        let writer = self.store.writer();
        if !rows.is_empty() {
            writer.submit(entities.upsert(&rows)?).await?;
        }
        for chunk in gone_ids.chunks(1000) {
            writer.submit(entities.delete_ids(chunk)).await?;
        }
        // Their MENTIONS went with the memories; what related them goes with them.
        for (namespace, keys) in &gone {
            for chunk in keys.chunks(500) {
                writer
                    .submit(self.store.edges().delete_related(namespace, chunk))
                    .await?;
            }
        }
        Ok(())
    }

    fn row(&self, id: &str, k: &Known) -> EntityRecord {
        let sealing = self.store.sealing();
        let (name, sealed) = sealing.seal_label(id, "name", &k.name());
        let forms = serde_json::to_string(&k.forms).expect("names and counts");
        let (aliases, _) = sealing.seal_label(id, "aliases", &forms);
        EntityRecord {
            id: id.to_string(),
            namespace: k.namespace.clone(),
            key: k.key.clone(),
            entity_type: k.entity_type,
            name,
            aliases,
            relation: k.relation.clone(),
            mention_count: k.mentions,
            first_seen: k.first_seen,
            last_seen: k.last_seen,
            salience_sum: k.salience_sum,
            merged_into: k.merged_into.clone(),
            sealed,
        }
    }

    /// After `mnemo encrypt`: every entity keyed and sealed, the plain rows gone.
    pub async fn rekey(&self) -> Result<(), StoreError> {
        {
            let mut book = self.lock();
            let old = std::mem::take(&mut book.entities);
            // Every row goes below; a pending delete of a plain id would write the name into
            // the table's transaction log after the purge.
            book.dirty.clear();
            let mut keyed = HashMap::new();
            for (_, mut k) in old {
                k.key = self.store.entity_key(&k.key);
                k.merged_into = k.merged_into.map(|m| self.store.entity_key(&m));
                let id = entity_id(&k.namespace, &k.key);
                book.dirty.insert(id.clone());
                keyed.insert(id, k);
            }
            book.replace(keyed);
        }
        let writer = self.store.writer();
        writer.submit(self.store.entities().delete_all()).await?;
        self.flush().await
    }

    /// A page of entities (`cursor` is the offset of the next page).
    pub fn list(&self, p: &ListParams) -> Result<(Vec<Entity>, u64, Option<String>), String> {
        let page = Page::new(p.limit, MAX_LIST, p.cursor.as_deref())?;
        let prefix = p.prefix.as_deref().map(fold);
        let book = self.lock();
        // An alias is listed as part of its entity, its mentions counted there.
        let mut merged: HashMap<String, i64> = HashMap::new();
        for k in book.aliases.iter().filter_map(|id| book.entities.get(id)) {
            if let Some(top) = root(&book.entities, &k.namespace, &k.key) {
                *merged.entry(entity_id(&k.namespace, &top)).or_default() += k.mentions;
            }
        }
        let mut found: Vec<&Known> = book
            .entities
            .values()
            .filter(|k| k.mentions > 0 && k.merged_into.is_none())
            .filter(|k| p.namespace.as_ref().is_none_or(|ns| *ns == k.namespace))
            .filter(|k| p.entity_type.is_none_or(|t| t == k.entity_type))
            .filter(|k| {
                prefix.as_ref().is_none_or(|pre| {
                    k.forms
                        .keys()
                        .any(|form| fold(form).starts_with(pre.as_str()))
                })
            })
            .collect();
        match p.sort {
            EntitySort::Mentions => found.sort_by(|a, b| {
                b.mentions
                    .cmp(&a.mentions)
                    .then(b.last_seen.cmp(&a.last_seen))
                    .then(a.key.cmp(&b.key))
            }),
            EntitySort::Recent => {
                found.sort_by(|a, b| b.last_seen.cmp(&a.last_seen).then(a.key.cmp(&b.key)))
            }
            EntitySort::Name => found.sort_by_key(|k| fold(&k.name())),
        }
        let total = found.len() as u64;
        let (shown, next) = page.of(found);
        let shown = shown
            .into_iter()
            .map(|k| {
                let mut e = k.to_protocol();
                let more = merged.get(&entity_id(&k.namespace, &k.key)).copied();
                e.mention_count += more.unwrap_or(0).max(0) as u64;
                e
            })
            .collect();
        Ok((shown, total, next))
    }

    /// The entities of `namespace` (or of every namespace) named `name` in any of its forms;
    /// an alias answers the entity it was merged into.
    pub fn named(&self, namespace: Option<&str>, name: &str) -> Vec<Entity> {
        let key = self.store.entity_key(&fold(name));
        let book = self.lock();
        book.entities
            .values()
            .filter(|k| k.key == key && k.mentions > 0)
            .filter(|k| namespace.is_none_or(|ns| ns == k.namespace))
            .filter_map(|k| view(&book, &k.namespace, &k.key))
            .collect()
    }

    /// Names by key, for the related entities of `namespace`; an alias answers its entity.
    pub fn by_key(&self, namespace: &str, key: &str) -> Option<Entity> {
        view(&self.lock(), namespace, key)
    }
}

/// The entity `key` stands for in `namespace` (itself, or what it was merged into), with the
/// mentions of its aliases counted.
fn view(book: &Book, namespace: &str, key: &str) -> Option<Entity> {
    let (entities, aliases) = (&book.entities, &book.aliases);
    let top = root(entities, namespace, key)?;
    let k = entities.get(&entity_id(namespace, &top))?;
    let aliases: i64 = aliases
        .iter()
        .filter_map(|id| entities.get(id))
        .filter(|a| a.namespace == namespace)
        .filter(|a| root(entities, namespace, &a.key).as_deref() == Some(top.as_str()))
        .map(|a| a.mentions)
        .sum();
    let mentions = k.mentions + aliases;
    (mentions > 0).then(|| {
        let mut e = k.to_protocol();
        e.mention_count = mentions.max(0) as u64;
        e
    })
}

/// Writes what changed every few seconds, and once more at shutdown.
pub async fn keep_written(book: Arc<EntityBook>, shutdown: Shutdown) {
    let mut tick = tokio::time::interval(FLUSH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.requested() => break,
        }
        if let Err(e) = book.flush().await {
            tracing::warn!("entities not written (tried again in a second): {e}");
        }
    }
    if let Err(e) = book.flush().await {
        tracing::warn!("entities not written at shutdown: {e}");
    }
}
