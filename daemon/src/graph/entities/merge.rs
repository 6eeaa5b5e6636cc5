//! Merges: an alias proven by consolidation points at its entity (`merged_into`), which
//! gains its written forms; lookups by either name find the entity, and recall matches the
//! memories that use any of its names.

use std::collections::{BTreeMap, HashMap};

use super::{better_type, EntityBook, Known};
use crate::store::entities::entity_id;
use crate::understand::entities::fold;
use mnemo_protocol::entity::EntityType;

impl EntityBook {
    /// Merges the entity named `alias` into the one named `canonical` (folded names, in
    /// `namespace`) when both are known and may be one thing; whether it merged. The alias
    /// keeps its row, pointing at the entity (`merged_into`), whose aliases gain its forms.
    pub fn merge(&self, namespace: &str, alias: &str, canonical: &str) -> bool {
        let (a, c) = (
            self.store.entity_key(alias),
            self.store.entity_key(canonical),
        );
        self.merge_keys(namespace, &a, &c)
    }

    fn merge_keys(&self, namespace: &str, alias: &str, canonical: &str) -> bool {
        let mut book = self.lock();
        let (Some(a), Some(c)) = (
            root(&book.entities, namespace, alias),
            root(&book.entities, namespace, canonical),
        ) else {
            return false;
        };
        if a == c {
            return false;
        }
        let (alias_id, canonical_id) = (entity_id(namespace, &a), entity_id(namespace, &c));
        let (Some(from), Some(into)) = (
            book.entities.get(&alias_id).cloned(),
            book.entities.get(&canonical_id),
        ) else {
            return false;
        };
        let kinds = [from.entity_type, into.entity_type];
        if from.entity_type != into.entity_type && !kinds.contains(&EntityType::Concept) {
            return false;
        }
        let into_type = better_type(into.entity_type, from.entity_type);
        if let Some(into) = book.entities.get_mut(&canonical_id) {
            // Listed as aliases, but never counted towards the entity's name: "call me Bob"
            // makes Bob an alias of Robert, who keeps his name.
            for form in from.forms.keys() {
                into.forms.entry(form.clone()).or_default();
            }
            into.entity_type = into_type;
        }
        if let Some(from) = book.entities.get_mut(&alias_id) {
            from.merged_into = Some(c.clone());
            from.entity_type = into_type;
        }
        book.aliases.insert(alias_id.clone());
        book.dirty.insert(alias_id);
        book.dirty.insert(canonical_id);
        true
    }

    /// Pairs (alias, entity) of keys in each namespace whose names differ only in accents,
    /// hyphens, dots or apostrophes ("José" and "Jose", "Anne-Marie" and "Anne Marie"): the
    /// less mentioned is an alias of the more.
    pub fn spelling_merges(&self) -> Vec<(String, String, String)> {
        let book = self.lock();
        let mut groups: BTreeMap<(String, String), Vec<&Known>> = BTreeMap::new();
        for k in book.entities.values() {
            if k.merged_into.is_none() && k.mentions > 0 {
                groups
                    .entry((k.namespace.clone(), spelled(&k.name())))
                    .or_default()
                    .push(k);
            }
        }
        let mut merges = Vec::new();
        for ((namespace, _), mut same) in groups {
            if same.len() < 2 {
                continue;
            }
            same.sort_by(|a, b| b.mentions.cmp(&a.mentions).then(a.key.cmp(&b.key)));
            for alias in &same[1..] {
                merges.push((namespace.clone(), alias.key.clone(), same[0].key.clone()));
            }
        }
        merges
    }

    /// Merges what [`Self::spelling_merges`] and [`Self::first_name_merges`] found; how
    /// many merged.
    pub fn merge_spellings(&self) -> usize {
        let mut merges = self.spelling_merges();
        merges.extend(self.first_name_merges());
        merges
            .into_iter()
            .filter(|(ns, alias, canonical)| self.merge_keys(ns, alias, canonical))
            .count()
    }

    /// A person named by one word ("Sarah") and exactly one person of the namespace whose
    /// full name starts with it ("Sarah Chen"): one person, the short name an alias. Two
    /// Sarahs with surnames merge neither; titles are not first names ("Dr. Chen").
    pub fn first_name_merges(&self) -> Vec<(String, String, String)> {
        let book = self.lock();
        let people: Vec<&Known> = book
            .entities
            .values()
            .filter(|k| k.merged_into.is_none() && k.mentions > 0)
            .filter(|k| k.entity_type == EntityType::Person)
            .collect();
        // Keys may be sealed: the names compare.
        let named: Vec<(&Known, String)> = people.iter().map(|k| (*k, fold(&k.name()))).collect();
        let mut merges = Vec::new();
        for (short, short_name) in named.iter().filter(|(_, n)| !n.contains(' ')) {
            let mut full = named.iter().map(|(k, n)| (k, n)).filter(|(k, n)| {
                k.namespace == short.namespace
                    && n.split(' ').count() == 2
                    && n.split(' ').next() == Some(short_name.as_str())
            });
            if let (Some((one, _)), None) = (full.next(), full.next()) {
                merges.push((short.namespace.clone(), short.key.clone(), one.key.clone()));
            }
        }
        merges.sort();
        merges
    }

    /// The key of the entity `key` stands for in `namespace`: its own, or the one it was merged
    /// into.
    pub fn canonical(&self, namespace: &str, key: &str) -> String {
        root(&self.lock().entities, namespace, key).unwrap_or_else(|| key.to_string())
    }

    /// Every key of the entity `key` stands for in `namespace` (or in every namespace): its
    /// own, its entity's, and every alias merged into that entity.
    pub fn same_as(&self, namespace: Option<&str>, key: &str) -> Vec<String> {
        let book = self.lock();
        let mut keys = vec![key.to_string()];
        // Only the aliases are read (a search asks this for each name it finds).
        for alias in book.aliases.iter().filter_map(|id| book.entities.get(id)) {
            let ns = alias.namespace.as_str();
            if namespace.is_some_and(|want| want != ns) {
                continue;
            }
            let (Some(top), Some(alias_top)) = (
                root(&book.entities, ns, key),
                root(&book.entities, ns, &alias.key),
            ) else {
                continue;
            };
            if top == alias_top {
                for k in [&alias.key, &top] {
                    if !keys.contains(k) {
                        keys.push(k.clone());
                    }
                }
            }
        }
        keys
    }
}

/// The key of the entity `key` was merged into, following merges (a chain is short; a loop,
/// which merge never makes, ends the walk). `None` when `key` is unknown in `namespace`.
pub(super) fn root(
    entities: &HashMap<String, Known>,
    namespace: &str,
    key: &str,
) -> Option<String> {
    let mut at = entities.get(&entity_id(namespace, key))?;
    for _ in 0..8 {
        match at
            .merged_into
            .as_ref()
            .and_then(|next| entities.get(&entity_id(namespace, next)))
        {
            Some(next) => at = next,
            None => break,
        }
    }
    Some(at.key.clone())
}

/// A name with accents, hyphens, dots and apostrophes taken out, folded: what two spellings
/// of one name share.
fn spelled(name: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let plain: String = name
        .nfd()
        .filter(|c| !unicode_normalization::char::is_combining_mark(*c))
        .map(|c| if c == '-' { ' ' } else { c })
        .filter(|c| !matches!(c, '.' | '\'' | '’'))
        .collect();
    fold(&plain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{test_store, MemoryRecord, WriteOp};
    use crate::understand::entities::{extract, Mention};
    use mnemo_protocol::entity::ListParams;

    fn said(text: &str) -> (MemoryRecord, Vec<Mention>) {
        let r = MemoryRecord::new("chat".into(), text.into(), Default::default(), 1);
        let mentions = extract(text, &|_| false);
        (r, mentions)
    }

    async fn book_of(texts: &[&str]) -> (tempfile::TempDir, EntityBook) {
        let dir = tempfile::tempdir().unwrap();
        let book = EntityBook::new(test_store(dir.path()).await);
        for text in texts {
            let (r, m) = said(text);
            book.added(&[r], &[m]);
        }
        (dir, book)
    }

    #[tokio::test]
    async fn an_alias_answers_for_its_entity_and_keeps_after_a_restart() {
        let (dir, book) = book_of(&[
            "Melanie: I painted a lake",
            "Melanie: and a sunrise",
            "Caroline: lovely, Mel!",
            "It is cold in Oslo",
        ])
        .await;
        assert!(book.merge("chat", "mel", "melanie"));
        assert!(!book.merge("chat", "mel", "melanie"), "already one");
        assert!(!book.merge("chat", "melanie", "mel"), "no loop");
        assert!(!book.merge("chat", "nobody", "melanie"), "unknown names");
        assert!(
            !book.merge("elsewhere", "mel", "melanie"),
            "another namespace"
        );

        let found = book.named(Some("chat"), "Mel");
        assert_eq!(found.len(), 1);
        let melanie = &found[0];
        assert_eq!(
            (melanie.id.as_str(), melanie.name.as_str()),
            ("melanie", "Melanie")
        );
        assert_eq!(melanie.mention_count, 3);
        assert!(melanie.aliases.contains(&"Mel".to_string()), "{melanie:?}");
        assert_eq!(book.by_key("chat", "mel").unwrap().id, "melanie");
        let mut same = book.same_as(Some("chat"), "melanie");
        same.sort();
        assert_eq!(same, vec!["mel", "melanie"]);
        assert_eq!(book.same_as(Some("chat"), "mel").len(), 2);
        assert_eq!(book.canonical("chat", "mel"), "melanie");
        assert_eq!(book.canonical("chat", "caroline"), "caroline");
        assert_eq!(book.canonical("chat", "unknown"), "unknown");
        let (listed, total, _) = book.list(&ListParams::default()).unwrap();
        assert_eq!(total, 3, "{listed:?}");
        assert!(listed.iter().all(|e| e.id != "mel"));

        book.flush().await.unwrap();
        let again = EntityBook::new(test_store(dir.path()).await);
        again.load().await.unwrap();
        assert_eq!(again.named(Some("chat"), "mel")[0].id, "melanie");
    }

    #[tokio::test]
    async fn two_spellings_of_a_name_merge_and_different_kinds_never() {
        let (_dir, book) = book_of(&[
            "We met José at the market",
            "We saw José again",
            "Jose: thanks for coming",
            "Anne-Marie: hello",
            "Anne-Marie: bye",
            "We called Anne Marie later",
        ])
        .await;
        let mut merges = book.spelling_merges();
        merges.sort();
        let pairs: Vec<(&str, &str)> = merges
            .iter()
            .map(|(_, a, c)| (a.as_str(), c.as_str()))
            .collect();
        assert_eq!(pairs, vec![("anne marie", "anne-marie"), ("jose", "josé")]);
        assert_eq!(book.merge_spellings(), 2);
        assert_eq!(book.named(Some("chat"), "Jose")[0].id, "josé");

        // A person is never merged into a place, whatever the names say.
        let (_dir, book) = book_of(&["Paris Hilton: hi"]).await;
        let (r, _) = said("a trip");
        let place = Mention {
            name: "Paris".into(),
            key: "paris".into(),
            kind: EntityType::Place,
            relation: None,
        };
        book.added(&[r], &[vec![place]]);
        assert!(!book.merge("chat", "paris", "paris hilton"));
        assert!(book.same_as(Some("chat"), "paris") == vec!["paris".to_string()]);
    }

    #[test]
    fn spellings_fold_accents_hyphens_and_dots() {
        assert_eq!(spelled("José"), "jose");
        assert_eq!(spelled("Anne-Marie"), "anne marie");
        assert_eq!(spelled("J.R. O'Neil"), "jr oneil");
        assert_eq!(spelled("Zoë"), spelled("Zoe"));
    }

    /// A store whose memories the book was never written for is read once; when its
    /// memories mention no one, the next start does not read them all again.
    #[tokio::test]
    async fn memories_are_read_for_entities_once() {
        let stored = |texts: &[&str]| -> Vec<MemoryRecord> {
            let row = |(i, t): (usize, &&str)| {
                let mut r = crate::store::schema::tests::record(&format!("m{i}"), t, 4);
                r.namespace = "chat".into();
                r
            };
            texts.iter().enumerate().map(row).collect()
        };
        let dir = tempfile::tempdir().unwrap();
        let store = test_store(dir.path()).await;
        let writer = store.writer();
        let plain = stored(&["the weather is mild", "bought more rice"]);
        writer.submit(WriteOp::Insert(plain)).await.unwrap();
        let book = EntityBook::new(store.clone());
        assert_eq!(book.load().await.unwrap(), 0);
        let mut named = stored(&["Melanie: I painted a lake"]);
        named[0].id = "m9".into();
        writer.submit(WriteOp::Insert(named)).await.unwrap();
        let again = EntityBook::new(store.clone());
        assert_eq!(
            again.load().await.unwrap(),
            0,
            "read once, not at every start"
        );

        let dir = tempfile::tempdir().unwrap();
        let store = test_store(dir.path()).await;
        let rows = stored(&["Melanie: I painted a lake", "the weather is mild"]);
        store.writer().submit(WriteOp::Insert(rows)).await.unwrap();
        let book = EntityBook::new(store);
        assert_eq!(book.load().await.unwrap(), 1);
        assert_eq!(book.named(Some("chat"), "Melanie")[0].mention_count, 1);
    }
}
