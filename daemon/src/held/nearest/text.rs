//! The text leg of a search: BM25 over the words held with the codes, or through LanceDB's
//! full-text index, its hits ranked from the values held beside the codes where they are
//! exact.

use std::collections::HashMap;

use super::taken_columns;
use crate::held::Held;
use crate::store::memories::{Near, Scored, TextColumns};
use crate::store::sql::Pred;
use crate::store::MemoryRecord;
use crate::store::StoreError;

impl Held {
    /// BM25 over `content` (over its hashed terms in an encrypted store). With `plain` — the
    /// search's filter names at most a namespace (Some(None) for all) and `predicate` admits
    /// the current memories of it — from the words held with the codes where they are
    /// (`codes/words.rs`), else through LanceDB's full-text index: with the ranking columns
    /// held in memory, the hits are sorted out from the values held (see
    /// `Held::text_by_namespace`); otherwise the index is asked with `predicate`, for ids
    /// alone when the ranking columns are held (each column read costs a read per fragment
    /// its rows lie in).
    pub async fn text_search(
        &self,
        text: &str,
        predicate: &Pred,
        limit: usize,
        plain: Option<Option<&str>>,
    ) -> Result<Vec<Scored>, StoreError> {
        if let Some(namespace) = plain {
            let terms = self.store.sealing().words(text);
            let (current, hashed) = (self.store.current_memories(), self.store.sealing().is_on());
            if let Some(found) = self.nearest.text(&terms, namespace, limit, current, hashed) {
                return Ok(found);
            }
        }
        let held = self.nearest.holds_ranking();
        let placed = self.nearest.placed();
        if let (true, Some(namespace), true) = (held, plain, placed) {
            if let Some(found) = self.text_by_namespace(text, namespace, limit).await? {
                return Ok(found);
            }
            tracing::debug!("text leg: the hits of the namespace alone fell short; asked again");
            let hits = self
                .store
                .full_text(text, predicate, limit, TextColumns::None)
                .await?;
            if let Some(found) = self.nearest.held_at(&hits) {
                return Ok(found);
            }
            // A hit moved since the codes were read, or is of another model: asked again.
        }
        tracing::debug!(
            held,
            placed,
            plain = plain.is_some(),
            "text leg asked with the filter"
        );
        if held {
            let hits = self
                .store
                .full_text(text, predicate, limit, TextColumns::Id)
                .await?;
            return self.ranked_from_held(hits).await;
        }
        self.store
            .full_text(text, predicate, limit, TextColumns::Ranking)
            .await
    }

    /// The text leg's hits (ids, scores and row ids) with what ranking reads of each: held in
    /// memory, or read for the rows not held (of another model, or past versions in a search
    /// of the past). A hit forgotten since it was found is dropped.
    async fn ranked_from_held(&self, hits: Vec<Scored>) -> Result<Vec<Scored>, StoreError> {
        let ids: Vec<&str> = hits.iter().map(|h| h.record.id.as_str()).collect();
        let held = self
            .nearest
            .held(&ids)
            .unwrap_or_else(|| vec![None; ids.len()]);
        let missing: Vec<Near> = hits
            .iter()
            .zip(&held)
            .filter(|(_, h)| h.is_none())
            .map(|(s, _)| Near {
                id: s.record.id.clone(),
                row_id: s.row_id,
            })
            .collect();
        let mut read: HashMap<String, MemoryRecord> = HashMap::new();
        if !missing.is_empty() {
            let taken = self
                .store
                .take(&missing, &taken_columns(false), false)
                .await?;
            read.extend(taken.into_iter().map(|s| (s.record.id.clone(), s.record)));
        }
        Ok(hits
            .into_iter()
            .zip(held)
            .filter_map(|(hit, held)| {
                let record = held.or_else(|| read.remove(&hit.record.id))?;
                Some(Scored { record, ..hit })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{next_version, row};
    use super::*;

    #[tokio::test]
    async fn a_text_search_of_current_memories_finds_its_hits_held_at_their_row_ids() {
        use crate::store::filter::current;
        use crate::store::WriteOp;
        let dir = tempfile::tempdir().unwrap();
        let held = crate::held::tests::held_store(dir.path()).await;
        let store = held.store();
        let walnut = |id: &str, i: usize| {
            let mut r = row(id, i % 4);
            r.content = format!("walnut {}", "tree ".repeat(i));
            r.salience = i as f32;
            r
        };
        let rows: Vec<MemoryRecord> = (0..4).map(|i| walnut(&format!("m{i}"), i)).collect();
        let writer = store.writer();
        writer.submit(WriteOp::Insert(rows)).await.unwrap();
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(4));
        let seen = |hits: Vec<Scored>| {
            let mut seen: Vec<(String, f32, u32)> = hits
                .into_iter()
                .map(|s| (s.record.id, s.record.salience, (s.raw * 1e4) as u32))
                .collect();
            seen.sort_by(|a, b| a.0.cmp(&b.0));
            seen
        };
        let now = current();
        let search = |plain| held.text_search("walnut", &now, 10, plain);
        let at_row_ids = seen(search(Some(None)).await.unwrap());
        assert_eq!(at_row_ids.len(), 4);
        assert_eq!(at_row_ids, seen(search(None).await.unwrap()));
        assert_eq!(at_row_ids[3].1, 3.0, "ranking values held: {at_row_ids:?}");
        // Written since the codes were read (no row id yet), then moved by a compaction:
        // found all the same.
        let late = walnut("m9", 9);
        writer.submit(WriteOp::Insert(vec![late])).await.unwrap();
        let ids = |hits: Vec<(String, f32, u32)>| hits.into_iter().map(|h| h.0).collect::<Vec<_>>();
        assert_eq!(
            ids(seen(search(Some(None)).await.unwrap())),
            ["m0", "m1", "m2", "m3", "m9"]
        );
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(5));
        store.compact(store.memories_table()).await.unwrap();
        assert_eq!(
            ids(seen(search(Some(None)).await.unwrap())),
            ["m0", "m1", "m2", "m3", "m9"]
        );
        // A hit not held (of another model, waiting to be embedded again): asked again by id.
        let mut other = walnut("o1", 1);
        other.embed_model = "another model".into();
        writer.submit(WriteOp::Insert(vec![other])).await.unwrap();
        let found = seen(search(Some(None)).await.unwrap());
        assert_eq!(ids(found.clone()), ["m0", "m1", "m2", "m3", "m9", "o1"]);
        assert_eq!(found[5].1, 1.0, "its ranking values read: {found:?}");
    }
    /// The words held with the codes rank the current memories of a namespace as LanceDB's
    /// full-text index does (same rows, same BM25 scores), follow a new version's words,
    /// and step aside while a current memory is not held (of another model).
    #[tokio::test]
    async fn the_words_held_rank_as_the_full_text_index_does() {
        use crate::store::filter::current;
        use crate::store::sql::col;
        use crate::store::WriteOp;
        let dir = tempfile::tempdir().unwrap();
        let held = crate::held::tests::held_store(dir.path()).await;
        let store = held.store();
        let texts = [
            ("a", "The dog runs in the park"),
            ("a", "Running dogs chase dogs"),
            ("a", "A cat sleeps all day in the sun"),
            ("a", "Parks close at dusk; dogs must leave the park"),
            ("a", "We ran a long way"),
            ("b", "dog dog dog"),
            ("b", "A park bench"),
        ];
        let rows: Vec<MemoryRecord> = texts
            .iter()
            .enumerate()
            .map(|(i, (namespace, text))| {
                let mut r = row(&format!("m{i}"), i % 4);
                r.namespace = namespace.to_string();
                r.content = text.to_string();
                r
            })
            .collect();
        let writer = store.writer();
        writer.submit(WriteOp::Insert(rows.clone())).await.unwrap();
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(7));
        let held_text = |query: &str, namespace: Option<&str>| {
            let words = store.sealing().words(query);
            let found = held
                .nearest
                .text(&words, namespace, 10, store.current_memories(), false);
            found.map(|hits| {
                hits.into_iter()
                    .map(|s| (s.record.id, s.raw))
                    .collect::<Vec<_>>()
            })
        };
        for query in [
            "dog",
            "running dogs in the park",
            "The CATS!",
            "sun dusk",
            "moon",
        ] {
            for namespace in [Some("a"), None] {
                let filter = match namespace {
                    Some(n) => col("namespace").eq(n).and(current()),
                    None => current(),
                };
                let indexed = store
                    .full_text(query, &filter, 10, TextColumns::Id)
                    .await
                    .unwrap();
                let found = held_text(query, namespace).expect("every memory held");
                assert_eq!(found.len(), indexed.len(), "{query:?} in {namespace:?}");
                for ((id, score), hit) in found.iter().zip(&indexed) {
                    assert_eq!(*id, hit.record.id, "{query:?}: {found:?}");
                    assert!((score - hit.raw).abs() < 1e-4, "{query:?}: {found:?}");
                }
            }
        }
        // Words held plain answer no query hashed (an encrypted store's).
        let dog = store.sealing().words("dog");
        let total = store.current_memories();
        assert!(held.nearest.text(&dog, None, 10, total, true).is_none());
        // A new version is found by its words, its past version no longer.
        let mut new = rows[2].clone();
        new.id = "m2v2".into();
        new.content = "A cat hunts at night".into();
        writer.submit(next_version(&rows[2], new)).await.unwrap();
        let ids = |found: Option<Vec<(String, f32)>>| -> Vec<String> {
            found.unwrap().into_iter().map(|h| h.0).collect()
        };
        assert_eq!(ids(held_text("cat", Some("a"))), ["m2v2"]);
        assert!(ids(held_text("sleeps", Some("a"))).is_empty());
        // A current memory of another model is found only by the full-text index.
        let mut other = row("o1", 1);
        other.content = "dog".into();
        other.embed_model = "another model".into();
        writer.submit(WriteOp::Insert(vec![other])).await.unwrap();
        assert!(held_text("dog", None).is_none());
    }

    /// Asked of the index for its namespace alone, a text search admits the current
    /// memories of it only — not a past version — with the scores and order the filtered
    /// query gives, and within the limit the best of them.
    #[tokio::test]
    async fn a_text_search_asked_of_its_namespace_admits_its_current_memories_alone() {
        use crate::store::filter::current;
        use crate::store::sql::col;
        use crate::store::WriteOp;
        let dir = tempfile::tempdir().unwrap();
        let held = crate::held::tests::held_store(dir.path()).await;
        let store = held.store();
        let walnut = |id: &str, namespace: &str, i: usize| {
            let mut r = row(id, i % 4);
            r.namespace = namespace.into();
            r.content = format!("walnut {}", "tree ".repeat(i));
            r
        };
        let mut rows: Vec<MemoryRecord> =
            (0..6).map(|i| walnut(&format!("a{i}"), "a", i)).collect();
        // Words unlike any of a's, so no two scores tie.
        rows.extend((0..2).map(|i| walnut(&format!("b{i}"), "b", i + 6)));
        let writer = store.writer();
        writer.submit(WriteOp::Insert(rows.clone())).await.unwrap();
        // a1's past version keeps its words; its new version has others.
        let mut new = walnut("a1v2", "a", 1);
        new.content = "hazelnut".into();
        writer.submit(next_version(&rows[1], new)).await.unwrap();
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(8));

        let of_a = col("namespace").eq("a").and(current());
        let answer = |hits: Vec<Scored>| -> Vec<(String, u32)> {
            hits.into_iter()
                .map(|s| (s.record.id, (s.raw * 1e4) as u32))
                .collect()
        };
        for limit in [3, 10] {
            let filtered = answer(
                store
                    .full_text("walnut", &of_a, limit, TextColumns::Id)
                    .await
                    .unwrap(),
            );
            let alone = held
                .text_by_namespace("walnut", Some("a"), limit)
                .await
                .unwrap()
                .expect("the values held are exact");
            assert_eq!(answer(alone), filtered, "limit {limit}");
        }
        let ids: Vec<String> = answer(
            held.text_search("walnut", &of_a, 10, Some(Some("a")))
                .await
                .unwrap(),
        )
        .into_iter()
        .map(|(id, _)| id)
        .collect();
        let mut ids_sorted = ids.clone();
        ids_sorted.sort();
        assert_eq!(ids_sorted, ["a0", "a2", "a3", "a4", "a5"]);
        // Many rows of another namespace that score higher than any of a's: a is still
        // answered of itself alone, as the filtered query answers it; so is the small b.
        writer
            .submit(WriteOp::Insert(
                (10..30)
                    .map(|i| {
                        let mut r = walnut(&format!("c{i}"), "c", 0);
                        r.content = "walnut walnut".into();
                        r
                    })
                    .collect(),
            ))
            .await
            .unwrap();
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(28));
        let filtered = answer(
            store
                .full_text("walnut", &of_a, 3, TextColumns::Id)
                .await
                .unwrap(),
        );
        let alone = held.text_by_namespace("walnut", Some("a"), 3).await;
        assert_eq!(answer(alone.unwrap().expect("asked of a alone")), filtered);
        let of_b = held.text_by_namespace("walnut", Some("b"), 10).await;
        let of_b: Vec<String> = of_b
            .unwrap()
            .unwrap()
            .into_iter()
            .map(|s| s.record.id)
            .collect();
        assert_eq!(of_b, ["b0", "b1"]);
    }
}
