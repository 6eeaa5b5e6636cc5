//! The names each namespace's memories mention, and how many memories mention
//! each. Ingest learns names here (so "mel" is found once "Mel" was seen); recall finds the
//! entities a query names and weighs them by rarity (a name in every memory tells nothing).
//!
//! Derived from the `entities` column of the current memories: loaded at start, kept up to
//! date by ingest, update and forget. Consolidation's merges can leave counts slightly off
//! until the next start; a count only weighs a boost, it never decides what is found.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crate::store::filter::current;
use crate::store::{MemoryRecord, Store, StoreError};
use crate::understand::entities::{extract, Mention};

#[derive(Default)]
struct Names {
    /// Current memories in the namespace.
    memories: u64,
    /// Stored entity key → current memories mentioning it.
    mentions: HashMap<String, u32>,
}

pub struct Gazetteer {
    store: Arc<Store>,
    namespaces: RwLock<HashMap<String, Names>>,
}

/// An entity a query names, with how many of the memories in scope mention it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryEntity {
    /// As stored (keyed in an encrypted store).
    pub key: String,
    /// The keys of the same entity under other names (aliases consolidation merged).
    pub aliases: Vec<String>,
    /// As the query wrote it.
    pub written: String,
    /// The share of the memories in scope that mention it, 0–1 (above 0).
    pub share: f32,
}

impl QueryEntity {
    /// Whether `key` (a memory's entity, as stored) is this entity, under any alias.
    pub fn is(&self, key: &str) -> bool {
        self.key == key || self.aliases.iter().any(|a| a == key)
    }

    /// How much naming it says (inverse document frequency): ln(1 + memories / mentioning).
    pub fn weight(&self) -> f32 {
        (1.0 + 1.0 / self.share).ln()
    }
}

impl Gazetteer {
    pub fn new(store: Arc<Store>) -> Self {
        Self {
            store,
            namespaces: RwLock::default(),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Names>> {
        self.namespaces.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Names>> {
        self.namespaces.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads every current memory's entities (two columns, one pass); answers the names known.
    pub async fn load(&self) -> Result<usize, StoreError> {
        let mut loaded: HashMap<String, Names> = HashMap::new();
        self.store
            .each_with_columns(&current(), &["namespace", "entities"], |r| {
                count(&mut loaded, &r, &|k| k.to_string(), 1);
            })
            .await?;
        let known = loaded.values().map(|n| n.mentions.len()).sum();
        // Replaces what was known: after `mnemo encrypt` every stored name is keyed.
        *self.write() = loaded;
        Ok(known)
    }

    /// Memories that became current.
    pub fn add<'a>(&self, records: impl IntoIterator<Item = &'a MemoryRecord>) {
        let mut names = self.write();
        for r in records {
            count(&mut names, r, &|k| self.store.entity_key(k), 1);
        }
    }

    /// Memories that stopped being current (replaced or forgotten).
    pub fn remove<'a>(&self, records: impl IntoIterator<Item = &'a MemoryRecord>) {
        let mut names = self.write();
        for r in records {
            count(&mut names, r, &|k| self.store.entity_key(k), -1);
        }
    }

    /// The entities `text` names, as ingest stores them: by rules, plus every name already
    /// known in `namespace` (looked up under one read of the names).
    pub fn extract(&self, namespace: &str, text: &str) -> Vec<Mention> {
        let names = self.read();
        let known = names.get(namespace);
        extract(text, &|folded| self.known_in(known, folded))
    }

    fn known_in(&self, names: Option<&Names>, folded: &str) -> bool {
        names.is_some_and(|n| n.mentions.contains_key(&self.store.entity_key(folded)))
    }

    /// Whether `folded` is a name some memory of `namespace` mentions.
    #[cfg(test)]
    fn knows(&self, namespace: &str, folded: &str) -> bool {
        self.known_in(self.read().get(namespace), folded)
    }

    /// The known entities a query names, in `namespace` (or in all), each with the share of
    /// the memories there that mention it (its weight follows: [`QueryEntity::weight`]).
    pub fn query_entities(&self, namespace: Option<&str>, query: &str) -> Vec<QueryEntity> {
        let names = self.read();
        let scope: Vec<&Names> = match namespace {
            Some(ns) => names.get(ns).into_iter().collect(),
            None => names.values().collect(),
        };
        let mentions = |key: &str| -> u32 {
            scope
                .iter()
                .filter_map(|n| n.mentions.get(key))
                .copied()
                .sum()
        };
        let memories: u64 = scope.iter().map(|n| n.memories).sum();
        let found = extract(query, &|folded| {
            mentions(&self.store.entity_key(folded)) > 0
        });
        found
            .into_iter()
            .filter_map(|m| {
                let key = self.store.entity_key(&m.key);
                let df = mentions(&key);
                (df > 0).then(|| QueryEntity {
                    aliases: Vec::new(),
                    written: m.name.clone(),
                    share: df as f32 / memories.max(1) as f32,
                    key,
                })
            })
            .collect()
    }
}

fn count(
    names: &mut HashMap<String, Names>,
    r: &MemoryRecord,
    key: &dyn Fn(&str) -> String,
    delta: i64,
) {
    let ns = names.entry(r.namespace.clone()).or_default();
    ns.memories = ns.memories.saturating_add_signed(delta);
    for e in &r.entities {
        let k = key(e);
        let n = ns.mentions.entry(k.clone()).or_default();
        *n = (*n as i64 + delta).max(0) as u32;
        if *n == 0 {
            ns.mentions.remove(&k);
        }
    }
}

/// The share of the query's entity weight that `entities` (a memory's, as stored) carry:
/// 0 when the query names no known entity.
pub fn entity_match(query: &[QueryEntity], entities: &[String]) -> f32 {
    let total: f32 = query.iter().map(QueryEntity::weight).sum();
    if total <= 0.0 {
        return 0.0;
    }
    let matched: f32 = query
        .iter()
        .filter(|q| entities.iter().any(|e| q.is(e)))
        .map(|q| q.weight())
        .sum();
    matched / total
}

/// 1 when the first entity of a memory's `entities` (as stored: its speaker when it has one,
/// else the first name it mentions) is one the query names, under any alias; else 0.
pub fn subject_match(query: &[QueryEntity], entities: &[String]) -> f32 {
    let named = entities
        .first()
        .is_some_and(|first| query.iter().any(|q| q.is(first)));
    f32::from(u8::from(named))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{test_store, WriteOp};

    fn memory(ns: &str, text: &str, entities: &[&str]) -> MemoryRecord {
        let mut r = MemoryRecord::new(ns.into(), text.into(), Default::default(), 1);
        r.entities = entities.iter().map(|e| e.to_string()).collect();
        r.vector = vec![0.0; 4];
        r
    }

    #[test]
    fn the_subject_is_the_first_entity_under_any_alias() {
        let query = |key: &str, aliases: &[&str]| QueryEntity {
            key: key.into(),
            aliases: aliases.iter().map(|a| a.to_string()).collect(),
            written: key.into(),
            share: 0.5,
        };
        let melanie = [query("melanie", &["mel"])];
        let entities = |e: &[&str]| e.iter().map(|e| e.to_string()).collect::<Vec<_>>();
        let cases: &[(&[&str], f32)] = &[
            // Melanie's own line.
            (&["melanie", "pottery"], 1.0),
            // Under the alias consolidation proved.
            (&["mel"], 1.0),
            // Caroline's line that speaks of Melanie: a mention, not the subject.
            (&["caroline", "melanie"], 0.0),
            (&[], 0.0),
        ];
        for (e, want) in cases {
            assert_eq!(subject_match(&melanie, &entities(e)), *want, "{e:?}");
        }
        assert_eq!(subject_match(&[], &entities(&["melanie"])), 0.0);
    }

    #[tokio::test]
    async fn rare_names_weigh_more_and_forgetting_unlearns() {
        let dir = tempfile::tempdir().unwrap();
        let store = test_store(dir.path()).await;
        let rows: Vec<MemoryRecord> = (0..8)
            .map(|i| {
                let mut e = vec!["caroline"];
                if i == 0 {
                    e.push("sweden");
                }
                memory("chat", &format!("turn {i}"), &e)
            })
            .collect();
        store
            .writer()
            .submit(WriteOp::Insert(rows.clone()))
            .await
            .unwrap();
        let names = Gazetteer::new(store.clone());
        assert_eq!(names.load().await.unwrap(), 2);
        let q = names.query_entities(Some("chat"), "did caroline ever move to Sweden?");
        let weight = |k: &str| q.iter().find(|e| e.key == k).map(|e| e.weight());
        let (common, rare) = (weight("caroline").unwrap(), weight("sweden").unwrap());
        assert!(rare > 3.0 * common, "sweden {rare} vs caroline {common}");
        assert!(names.query_entities(Some("other"), "sweden").is_empty());
        assert!(entity_match(&q, &rows[0].entities) > 0.99);
        let partial = entity_match(&q, &rows[1].entities);
        assert!(partial > 0.0 && partial < 0.3, "{partial}");

        assert!(names.knows("chat", "sweden"));
        names.remove(&rows[..1]);
        assert!(!names.knows("chat", "sweden"));
        let found: Vec<String> = names
            .extract("chat", "caroline said hi")
            .into_iter()
            .map(|m| m.key)
            .collect();
        assert_eq!(
            found,
            vec!["caroline"],
            "known names are found in lower case"
        );
    }
}
