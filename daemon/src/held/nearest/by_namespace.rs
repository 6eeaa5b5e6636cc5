//! Index queries asked of a namespace alone and sorted out after from the values held.
//! Lance's prefilter on the current memories (`valid_to IS NULL`) goes through the B-tree
//! on `valid_to`, which hands back every current row's address, sorted, for each query: at
//! 1M memories a full-text query took ~16.5 ms that way, against ~3.2 ms asked of its
//! namespace alone (a bitmap) and ~2.5 ms with no filter. Asked with no filter and a share
//! of the rows in proportion to the namespace's, a namespace whose rows score lower than a
//! smaller one's fell short and was asked again with the whole filter (191 of `mnemo bench
//! search`'s 200 text queries at 1M, beside the 4,200 memories another bench left). A
//! filter costs the text leg ~3 ms more at 1M (text-only p50 8.4–10.4 ms beside 2,200
//! memories of another namespace, 5.8–6.1 with those gone), a bitmap for each fragment (the
//! small ones folds leave are merged once writes pause: `maintenance.rs`). Leaving the
//! others' rows out (`namespace <> …`) rather than keeping the namespace's made the text
//! leg ~4.6 times slower at 1M: Lance joins the rows to leave out with every row it may
//! read by building that list whole, each query.

use std::collections::HashMap;

use lancedb::query::Select;

use super::{taken_columns, Nearest};
use crate::held::Held;
use crate::store::memories::{scored, Scored, TextColumns};
use crate::store::sql::{col, Pred};
use crate::store::MemoryRecord;
use crate::store::StoreError;

impl Nearest {
    /// How many hits to ask an index for, of a namespace alone, for `limit` current
    /// memories: half again for the past versions among them. None — ask with the whole
    /// filter — while the values held are not exact or a row waits for its row id.
    pub(super) fn namespace_ask(&self, limit: usize) -> Option<usize> {
        (self.holds_ranking() && self.placed()).then_some(limit + limit / 2)
    }
}

impl Held {
    /// The `limit` best current memories of `namespace` (all when None) for `text`, asked of
    /// the full-text index for the namespace alone and sorted out after
    /// ([`Store::by_namespace`]).
    pub(super) async fn text_by_namespace(
        &self,
        text: &str,
        namespace: Option<&str>,
        limit: usize,
    ) -> Result<Option<Vec<Scored>>, StoreError> {
        let ask = |of: Pred, asked| async move {
            self.store
                .full_text(text, &of, asked, TextColumns::None)
                .await
        };
        self.by_namespace(namespace, limit, false, ask).await
    }

    /// The `limit` current memories of `namespace` (all when None) and of the configured
    /// model nearest `vector`, asked of the ANN index for the namespace alone and sorted
    /// out after ([`Store::by_namespace`]), for when the values are held but not the vectors.
    pub(super) async fn vector_by_namespace(
        &self,
        vector: &[f32],
        namespace: Option<&str>,
        limit: usize,
    ) -> Result<Option<Vec<Scored>>, StoreError> {
        let ask = |of: Pred, asked| async move {
            let distances = Select::columns(&["_distance"]);
            self.store
                .nearest_rows(vector, &of, asked, false, distances)
                .await
        };
        self.by_namespace(namespace, limit, true, ask).await
    }

    /// The hits `ask` gives of `namespace` alone (every row when None) for as many rows as
    /// [`Nearest::namespace_ask`] says, sorted out by [`Store::admitted`]; None — the
    /// caller asks with the whole filter — where either says so.
    async fn by_namespace<Hits>(
        &self,
        namespace: Option<&str>,
        limit: usize,
        of_model: bool,
        ask: impl FnOnce(Pred, usize) -> Hits,
    ) -> Result<Option<Vec<Scored>>, StoreError>
    where
        Hits: std::future::Future<Output = Result<Vec<Scored>, StoreError>>,
    {
        let Some(asked) = self.nearest.namespace_ask(limit) else {
            return Ok(None);
        };
        let hits = ask(self.asked_of(namespace), asked).await?;
        self.admitted(hits, namespace, asked, limit, of_model).await
    }

    /// The filter an index is asked with for the rows of `namespace` (all when None): none
    /// while it holds every current memory (a row of another written meanwhile is sorted
    /// out by [`Store::admitted`], past versions are anyway).
    fn asked_of(&self, namespace: Option<&str>) -> Pred {
        match namespace {
            Some(n) if !self.store.all_of(n) => col("namespace").eq(n),
            _ => Pred::All,
        }
    }

    /// `hits` (scores and row ids, best first) of an index asked for `asked` rows of
    /// `namespace` (or all), sorted out: the first `limit` that are current memories of it
    /// and, with `of_model`, of the configured model. Hits held at their row ids are current
    /// and of the model; the others (past versions, rows of another model) are taken by row
    /// id to see.
    /// None — the caller asks with the filter — when a hit not held has moved or gone since,
    /// or when too few were admitted while the index had more: they are then not surely
    /// the best.
    async fn admitted(
        &self,
        hits: Vec<Scored>,
        namespace: Option<&str>,
        asked: usize,
        limit: usize,
        of_model: bool,
    ) -> Result<Option<Vec<Scored>>, StoreError> {
        let Some(held) = self.nearest.held_at_each(&hits) else {
            return Ok(None);
        };
        let unheld: Vec<u64> = hits
            .iter()
            .zip(&held)
            .filter(|(_, held)| held.is_none())
            .filter_map(|(hit, _)| hit.row_id)
            .collect();
        let mut taken: HashMap<u64, MemoryRecord> = HashMap::new();
        if !unheld.is_empty() {
            let mut columns = taken_columns(false);
            columns.extend(["embed_model", "_rowid"]);
            if let Some(batch) = self.store.take_rows(&unheld, &columns).await? {
                for s in scored(self.store.sealing(), &[batch], None)? {
                    taken.extend(s.row_id.map(|r| (r, s.record)));
                }
            }
        }
        let exhausted = hits.len() < asked;
        let mut found = Vec::with_capacity(limit);
        for (hit, held) in hits.into_iter().zip(held) {
            if found.len() == limit {
                break;
            }
            // Rows held are current and of the configured model.
            let (record, admitted) = match (held, hit.row_id) {
                (Some(held), _) => (held.record, true),
                (None, Some(row_id)) => match taken.remove(&row_id) {
                    Some(r) => {
                        let admitted = r.valid_to.is_none()
                            && (!of_model || r.embed_model == self.store.embed_model());
                        (r, admitted)
                    }
                    None => return Ok(None),
                },
                (None, None) => return Ok(None),
            };
            if admitted && namespace.is_none_or(|n| record.namespace == n) {
                found.push(Scored { record, ..hit });
            }
        }
        Ok((found.len() == limit || exhausted).then_some(found))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{next_version, row};
    use super::*;
    use crate::store::filter::current;
    use crate::store::sql::col;
    use crate::store::WriteOp;

    /// A store holding the ranking values of up to `max_rows` current memories, and their
    /// vectors up to `max_vector_rows` (past it their signs, with `signs`).
    async fn store_holding(
        dir: &std::path::Path,
        max_vector_rows: usize,
        signs: bool,
        max_rows: usize,
    ) -> std::sync::Arc<Held> {
        let config = crate::config::StoreConfig {
            advanced: crate::config::StoreTuning {
                vectors_in_memory_max_rows: max_vector_rows,
                vector_signs: signs,
                ranking_in_memory_max_rows: max_rows,
                ..Default::default()
            },
            ..Default::default()
        };
        let store = crate::store::Store::open(dir, 4, "test", &config, &Default::default())
            .await
            .unwrap();
        Held::over(store)
    }

    /// Row `i` of `namespace`, its cosine with [`QUERY`] falling as `i` grows.
    fn ranked(id: &str, namespace: &str, i: usize) -> MemoryRecord {
        let mut r = row(id, 0);
        r.namespace = namespace.into();
        r.vector = vec![1.0, 0.3 * i as f32, 0.2, 0.1];
        r
    }

    const QUERY: [f32; 4] = [1.0, 0.0, 0.0, 0.0];

    fn ids(hits: Vec<Scored>) -> Vec<(String, u32)> {
        hits.into_iter()
            .map(|s| (s.record.id, (s.raw * 1e5) as u32))
            .collect()
    }

    /// With the values held but not the vectors, the vector leg asks the ANN index with no
    /// filter and admits the current memories of its namespace and model only — not a past
    /// version, another namespace's or another model's — at the distances and in the order
    /// the filtered query gives.
    #[tokio::test]
    async fn a_vector_search_asked_of_its_namespace_admits_its_current_memories_alone() {
        let dir = tempfile::tempdir().unwrap();
        let held = store_holding(dir.path(), 0, false, 100).await;
        let store = held.store();
        let mut rows: Vec<MemoryRecord> =
            (0..6).map(|i| ranked(&format!("a{i}"), "a", i)).collect();
        rows.push(ranked("b0", "b", 20));
        let mut other = ranked("o0", "a", 7);
        other.embed_model = "another model".into();
        rows.push(other);
        let writer = store.writer();
        writer.submit(WriteOp::Insert(rows.clone())).await.unwrap();
        // a1's past version is nearer the query than its new version.
        let new = ranked("a1v2", "a", 9);
        writer.submit(next_version(&rows[1], new)).await.unwrap();
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(7));
        assert_eq!(held.nearest.vector_rows(), None, "no vectors held");

        let of_a = col("namespace").eq("a").and(current());
        for limit in [3, 10] {
            let filtered = ids(store
                .vector_search(&QUERY, &of_a, limit, false)
                .await
                .unwrap());
            let alone = held
                .nearest_held(&QUERY, Some("a"), limit)
                .await
                .unwrap()
                .expect("namespace a is most of the rows held");
            assert_eq!(ids(alone), filtered, "limit {limit}");
        }
        let found = ids(held
            .nearest_held(&QUERY, Some("a"), 3)
            .await
            .unwrap()
            .unwrap());
        let found: Vec<&str> = found.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(found, ["a0", "a2", "a3"]);
        // A namespace of few rows is asked of itself alone all the same.
        let found = held.nearest_held(&QUERY, Some("b"), 3).await.unwrap();
        let found: Vec<String> = found.unwrap().into_iter().map(|s| s.record.id).collect();
        assert_eq!(found, ["b0"]);
    }

    /// A namespace that holds every current memory is asked of an index with no filter,
    /// another once a row of another namespace is current; a hit of another namespace the
    /// index gives all the same (written after the filter was chosen) is not admitted.
    #[tokio::test]
    async fn a_namespace_holding_every_memory_is_asked_with_no_filter() {
        let dir = tempfile::tempdir().unwrap();
        let held = store_holding(dir.path(), 0, false, 100).await;
        let store = held.store();
        let writer = store.writer();
        let rows = (1..5).map(|i| ranked(&format!("a{i}"), "a", i)).collect();
        writer.submit(WriteOp::Insert(rows)).await.unwrap();
        assert_eq!(held.asked_of(Some("a")), Pred::All);
        assert_eq!(held.asked_of(Some("b")), col("namespace").eq("b"));
        // b0 is nearer the query than any of a's.
        let b0 = ranked("b0", "b", 0);
        writer.submit(WriteOp::Insert(vec![b0])).await.unwrap();
        assert_eq!(held.asked_of(Some("a")), col("namespace").eq("a"));
        assert_eq!(held.asked_of(None), Pred::All);
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(5));

        let distances = Select::columns(&["_distance"]);
        let unfiltered = store
            .nearest_rows(&QUERY, &Pred::All, 5, false, distances)
            .await
            .unwrap();
        let admitted = |namespace| {
            let hits = unfiltered.clone();
            let held = &*held;
            async move { held.admitted(hits, namespace, 5, 3, true).await.unwrap() }
        };
        let of_a: Vec<String> = admitted(Some("a"))
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.record.id)
            .collect();
        assert_eq!(of_a, ["a1", "a2", "a3"]);
        let of_all = admitted(None).await.unwrap();
        assert_eq!(of_all[0].record.id, "b0");
        // Asked for more of b than it has: short, and the index had no more; answered.
        let of_b = held
            .admitted(unfiltered.clone(), Some("b"), 6, 3, true)
            .await;
        assert_eq!(of_b.unwrap().map(|hits| hits.len()), Some(1));
        // Short while the index had more: not surely b's best, so asked again.
        let of_b = held.admitted(unfiltered, Some("b"), 5, 3, true).await;
        assert!(of_b.unwrap().is_none());
    }

    /// Past the vectors' limit the codes let the vectors go and keep the ranking values,
    /// and are read again without vectors, or signed (two bits a component) with
    /// `store.advanced.vector_signs`; past the values' limit nothing is held.
    #[tokio::test]
    async fn past_each_limit_less_is_held() {
        for signs in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let held = store_holding(dir.path(), 2, signs, 4).await;
            let writer = held.store().writer();
            let insert = |ids: &[&str]| {
                let rows: Vec<MemoryRecord> = ids
                    .iter()
                    .enumerate()
                    .map(|(i, id)| ranked(id, "a", i))
                    .collect();
                writer.submit(WriteOp::Insert(rows))
            };
            insert(&["m0"]).await.unwrap();
            assert_eq!(held.refresh_nearest().await.unwrap(), Some(1));
            assert_eq!(held.nearest.vector_rows(), Some(1));
            insert(&["m1", "m2"]).await.unwrap();
            assert_eq!(held.nearest.vector_rows(), None, "past 2, no vectors");
            assert_eq!(held.nearest.rows(), Some(3), "the values stay held");
            assert_eq!(held.refresh_nearest().await.unwrap(), Some(3));
            let expected = if signs { Some(3) } else { None };
            assert_eq!(held.nearest.vector_rows(), expected, "read again");
            assert_eq!(held.nearest.signed(), signs);
            // From the signs, or the ANN index asked of the namespace alone.
            let found = held.nearest_held(&QUERY, Some("a"), 3).await.unwrap();
            let mut found: Vec<String> = found.unwrap().into_iter().map(|s| s.record.id).collect();
            // m0 and m1 hold one vector; m2 is farther.
            found[..2].sort();
            assert_eq!(found, ["m0", "m1", "m2"], "nearest first");
            insert(&["m3", "m4"]).await.unwrap();
            assert_eq!(held.nearest.rows(), None, "past 4, nothing held");
            assert!(held
                .nearest_held(&QUERY, Some("a"), 3)
                .await
                .unwrap()
                .is_none());
            assert_eq!(held.refresh_nearest().await.unwrap(), None);
            assert!(held.nearest.placed(), "nothing waits for a row id");
        }
    }
}
