//! Belief vectors: each statement is embedded with the configured model when it is written,
//! so context building finds the beliefs a query is about by meaning, not only by the words
//! they share. A person's beliefs are thousands, not millions: they are compared in memory,
//! not indexed, and stored as plain lists, so a change of embedder needs no new schema.

use std::collections::HashSet;

use super::{Changes, UserModel};
use crate::error::Result;
use crate::linalg::cosine;
use crate::store::beliefs::BeliefRecord;
use crate::store::Floats;

/// Statements embedded per call at start.
const CHUNK: usize = 256;

impl UserModel {
    fn lacks_vector(&self, b: &BeliefRecord) -> bool {
        b.vector.0.is_empty() || b.embed_model.as_deref() != Some(self.embed.embedder().model_id())
    }

    /// Embeds the statements among `ids` that hold no vector of the configured model. A
    /// failed embedding leaves them without one — written anyway, and embedded at the next
    /// start ([`UserModel::embed_missing`]): a belief is never lost for want of a vector.
    pub(super) async fn embed_statements(&self, ids: &HashSet<String>) {
        let wanted: Vec<(String, String)> = {
            let beliefs = self.lock();
            ids.iter()
                .filter_map(|id| beliefs.get(id))
                .filter(|b| self.lacks_vector(b))
                .map(|b| (b.id.clone(), b.statement.clone()))
                .collect()
        };
        if wanted.is_empty() {
            return;
        }
        let texts = wanted.iter().map(|(_, s)| s.clone()).collect();
        match self.embed.embed(texts).await {
            Ok(vectors) => {
                let model = self.embed.embedder().model_id().to_string();
                let mut beliefs = self.lock();
                for ((id, statement), vector) in wanted.into_iter().zip(vectors) {
                    // A statement changed meanwhile keeps waiting for its own vector.
                    if let Some(b) = beliefs.get_mut(&id).filter(|b| b.statement == statement) {
                        b.vector = Floats(vector);
                        b.embed_model = Some(model.clone());
                    }
                }
            }
            Err(e) => tracing::warn!("beliefs written without their vectors for now: {e}"),
        }
    }

    /// At start: embeds the beliefs stored without a vector of the configured model (older
    /// stores, another embedder, a failed embedding), a chunk at a time so ingest's own
    /// beliefs are never held up for long. Answers how many.
    pub async fn embed_missing(&self) -> Result<usize> {
        let ids: Vec<String> = {
            let beliefs = self.lock();
            beliefs
                .values()
                .filter(|b| self.lacks_vector(b))
                .map(|b| b.id.clone())
                .collect()
        };
        for chunk in ids.chunks(CHUNK) {
            let _one = self.changing.lock().await;
            let rows: HashSet<String> = chunk.iter().cloned().collect();
            self.write(Changes {
                rows,
                ..Default::default()
            })
            .await?;
        }
        Ok(ids.len())
    }
}

/// How alike a belief's statement is to a query (its cosine); none without a vector of the
/// query's width.
pub fn similarity(b: &BeliefRecord, query: &[f32]) -> Option<f32> {
    (b.vector.0.len() == query.len() && !query.is_empty()).then(|| cosine(&b.vector.0, query))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::config::UserModelConfig;
    use crate::embed::{EmbedService, HashedEmbedder};
    use crate::store::Pred;

    #[tokio::test]
    async fn a_belief_stored_without_a_vector_gets_one_at_start_and_new_ones_are_written_with_theirs(
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::test_store(dir.path()).await;
        let older = BeliefRecord {
            id: "older".into(),
            statement: "User lives in Porto".into(),
            ..Default::default()
        };
        store
            .writer()
            .submit(store.beliefs().upsert(&[older]).unwrap())
            .await
            .unwrap();
        let embed = EmbedService::start(Arc::new(HashedEmbedder::chosen()), 8, 1);
        let model = embed.embedder().model_id().to_string();
        let usermodel = UserModel::new(store.clone(), embed, &UserModelConfig::default());
        usermodel.load().await.unwrap();
        assert_eq!(usermodel.embed_missing().await.unwrap(), 1);
        assert_eq!(usermodel.embed_missing().await.unwrap(), 0, "done once");
        let stored = store.beliefs().rows(&Pred::All).await.unwrap();
        assert_eq!(stored[0].embed_model.as_deref(), Some(model.as_str()));
        assert_eq!(stored[0].vector, usermodel.get("older").unwrap().vector);
        assert!(!stored[0].vector.0.is_empty());
        let query = usermodel
            .embed
            .embed_one("User lives in Porto".into())
            .await
            .unwrap();
        let held = usermodel.get("older").unwrap();
        assert!(similarity(&held, &query).unwrap() > 0.99);
        // Another width (a query of another model) is no comparison at all.
        assert_eq!(similarity(&held, &[1.0, 0.0]), None);
    }
}
