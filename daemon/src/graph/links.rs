//! The edges a new memory brings: MENTIONS to each entity it names, and TEMPORAL_SEQUENCE
//! from the memory before it in the same session (so a conversation is a chain a walk can
//! follow). The last memory of each session is kept here, looked up in the store the first
//! time a session is seen after a start.

use std::collections::HashMap;
use std::sync::Arc;

use mnemo_protocol::graph::{EdgeType, Node};
use tokio::sync::Mutex;

use crate::store::edges::EdgeRecord;
use crate::store::filter::current;
use crate::store::{col, MemoryRecord, Store, StoreError};

/// Who wrote the edges formed as memories arrive.
pub const BY_INGEST: &str = "ingest";
/// A conversation's order starts at half strength: recalling two turns together moves their
/// edge towards 1 (consolidation's Hebbian phase), disuse brings it back.
pub const SEQUENCE_WEIGHT: f32 = 0.5;
/// A turn that asks something and the turn after it (most often the answer) are closer: a
/// recall that finds the question lends more to its reply.
pub const REPLY_WEIGHT: f32 = 0.8;

/// Whether a turn asks something: what follows it in the conversation likely answers.
pub fn asks(text: &str) -> bool {
    text.contains('?')
}

pub struct Linker {
    store: Arc<Store>,
    /// (namespace, session) → the lineage of its latest memory, and whether it asks.
    tails: Mutex<HashMap<(String, String), (String, bool)>>,
}

/// The MENTIONS edges of `r`: one to each entity it names, by `key` (the store's
/// [`Store::entity_key`], so an encrypted store's edges hold keyed hashes, never names).
pub fn mentions(r: &MemoryRecord, now: i64, key: &dyn Fn(&str) -> String) -> Vec<EdgeRecord> {
    r.entities
        .iter()
        .map(|name| {
            EdgeRecord::new(
                &r.namespace,
                Node::memory(&r.lineage),
                Node::entity(key(name)),
                EdgeType::Mentions,
                1.0,
                BY_INGEST,
                now,
            )
        })
        .collect()
}

impl Linker {
    pub fn new(store: Arc<Store>) -> Self {
        Self {
            store,
            tails: Mutex::default(),
        }
    }

    /// The edges of `records`, new memories in the order they were said. Sessions are
    /// serialised here, so two adds to one session cannot both follow the same memory.
    pub async fn link(
        &self,
        records: &[MemoryRecord],
        now: i64,
    ) -> Result<Vec<EdgeRecord>, StoreError> {
        let mut edges: Vec<EdgeRecord> =
            records.iter().flat_map(|r| self.mentions(r, now)).collect();
        let mut tails = self.tails.lock().await;
        for r in records {
            let Some(session) = &r.session_id else {
                continue;
            };
            let key = (r.namespace.clone(), session.clone());
            let before = match tails.get(&key) {
                Some(t) => Some(t.clone()),
                None => self.stored_tail(r).await?,
            };
            if let Some((before, asked)) = before.filter(|b| b.0 != r.lineage) {
                edges.push(EdgeRecord::new(
                    &r.namespace,
                    Node::memory(before),
                    Node::memory(&r.lineage),
                    EdgeType::TemporalSequence,
                    if asked { REPLY_WEIGHT } else { SEQUENCE_WEIGHT },
                    BY_INGEST,
                    now,
                ));
            }
            tails.insert(key, (r.lineage.clone(), asks(&r.content)));
        }
        Ok(edges)
    }

    /// The MENTIONS edges of `r`, keyed as the store keys names.
    pub fn mentions(&self, r: &MemoryRecord, now: i64) -> Vec<EdgeRecord> {
        mentions(r, now, &|k| self.store.entity_key(k))
    }

    /// The latest stored memory of `r`'s session other than `r` itself, and whether it asks.
    async fn stored_tail(&self, r: &MemoryRecord) -> Result<Option<(String, bool)>, StoreError> {
        let Some(session) = &r.session_id else {
            return Ok(None);
        };
        let rows = self
            .store
            .columns_of(
                &current()
                    .and(col("namespace").eq(&r.namespace))
                    .and(col("session_id").eq(session))
                    .and(col("lineage").ne(&r.lineage)),
                &["lineage", "created_at", "content"],
            )
            .await?;
        Ok(rows
            .into_iter()
            .max_by(|a, b| (a.created_at, &a.lineage).cmp(&(b.created_at, &b.lineage)))
            .map(|r| (r.lineage, asks(&r.content))))
    }

    /// Forgets what it knows of sessions whose memories were deleted (the next add there
    /// looks its tail up again).
    pub async fn forget_sessions(&self) {
        self.tails.lock().await.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{test_store, WriteOp};

    fn said(session: Option<&str>, text: &str, at: i64, entities: &[&str]) -> MemoryRecord {
        let mut r = MemoryRecord::new("chat".into(), text.into(), Default::default(), at);
        r.session_id = session.map(str::to_string);
        r.entities = entities.iter().map(|e| e.to_string()).collect();
        r.vector = vec![0.0; 4];
        r
    }

    fn sequence(edges: &[EdgeRecord]) -> Vec<(String, String)> {
        edges
            .iter()
            .filter(|e| e.edge_type == EdgeType::TemporalSequence)
            .map(|e| (e.src_id.clone(), e.dst_id.clone()))
            .collect()
    }

    #[tokio::test]
    async fn a_session_is_a_chain_that_continues_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let store = test_store(dir.path()).await;
        let first = [
            said(Some("s1"), "Mel: hi Caroline", 1, &["mel", "caroline"]),
            said(Some("s1"), "Caroline: hi", 2, &["caroline"]),
            said(None, "a loose note", 3, &[]),
            said(Some("s2"), "another chat", 4, &[]),
        ];
        let linker = Linker::new(store.clone());
        let edges = linker.link(&first, 10).await.unwrap();
        let mentions: Vec<_> = edges
            .iter()
            .filter(|e| e.edge_type == EdgeType::Mentions)
            .map(|e| (e.src_id.as_str(), e.dst_id.as_str()))
            .collect();
        assert_eq!(
            mentions,
            vec![
                (first[0].lineage.as_str(), "mel"),
                (first[0].lineage.as_str(), "caroline"),
                (first[1].lineage.as_str(), "caroline"),
            ]
        );
        assert_eq!(
            sequence(&edges),
            vec![(first[0].lineage.clone(), first[1].lineage.clone())]
        );
        store
            .writer()
            .submit(WriteOp::Insert(first.to_vec()))
            .await
            .unwrap();

        // A new linker (a restart) finds the session's last memory in the store.
        let next = [said(Some("s1"), "Mel: bye", 5, &["mel"])];
        let edges = Linker::new(store).link(&next, 11).await.unwrap();
        assert_eq!(
            sequence(&edges),
            vec![(first[1].lineage.clone(), next[0].lineage.clone())]
        );
    }

    #[tokio::test]
    async fn the_reply_to_a_question_is_linked_closer() {
        let dir = tempfile::tempdir().unwrap();
        let store = test_store(dir.path()).await;
        let turns = [
            said(Some("s"), "Caroline: what concert was it?", 1, &[]),
            said(Some("s"), "Melanie: Matt Patterson, so talented", 2, &[]),
            said(Some("s"), "Caroline: wow", 3, &[]),
        ];
        let edges = Linker::new(store.clone()).link(&turns, 10).await.unwrap();
        let weights: Vec<f32> = edges.iter().map(|e| e.weight).collect();
        assert_eq!(weights, vec![REPLY_WEIGHT, SEQUENCE_WEIGHT]);

        // After a restart the stored question still counts.
        store
            .writer()
            .submit(WriteOp::Insert(turns[..1].to_vec()))
            .await
            .unwrap();
        let edges = Linker::new(store).link(&turns[1..2], 11).await.unwrap();
        assert_eq!(edges[0].weight, REPLY_WEIGHT);
    }
}
