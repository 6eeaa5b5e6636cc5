//! Belief vectors: each statement is embedded with the configured model soon after it is
//! written — by a background task, so ingest never waits for it, and by context building
//! for any still due — so context finds the beliefs a query is about by meaning, not only by
//! the words they share. A person's beliefs are thousands, not millions: they are compared in memory,
//! not indexed, and stored as plain lists, so a change of embedder needs no new schema.

use std::collections::{HashMap, HashSet};

use super::{Changes, UserModel};
use crate::error::Result;
use mnemo_protocol::time::now_micros;

use crate::linalg::cosine;
use crate::shutdown::Shutdown;
use crate::store::beliefs::BeliefRecord;
use crate::store::Floats;
use crate::understand::beliefs::observed::is_observed;

/// Statements embedded per call.
const CHUNK: usize = 256;
/// How long writes must pause before the background task embeds what they left due: ingest
/// keeps the machine's cores while it runs (context building embeds what it needs at once).
const QUIET: std::time::Duration = std::time::Duration::from_secs(1);
/// The longest the background task waits for that pause once something is due.
const MOST_DELAY: std::time::Duration = std::time::Duration::from_secs(20);

impl UserModel {
    /// Whether `b` is due a vector. A statement kept as said (an event, a feeling) has none:
    /// its memory's own vector finds it, and a person has thousands.
    pub(super) fn lacks_vector(&self, b: &BeliefRecord) -> bool {
        !is_observed(&b.predicate)
            && (b.vector.0.is_empty()
                || b.embed_model.as_deref() != Some(self.embed.embedder().model_id()))
    }

    /// Embeds the statements among `ids` that hold no vector of the configured model. A
    /// failed embedding leaves them without one, to be tried again at the next change or
    /// start: a belief is never lost for want of a vector.
    async fn embed_statements(&self, ids: &HashSet<String>) {
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

    /// The background task: embeds what is due at start (older stores, another embedder),
    /// then shortly after each write that left statements without vectors, until shutdown.
    pub async fn keep_embedded(self: std::sync::Arc<Self>, shutdown: Shutdown) {
        loop {
            match self.embed_missing().await {
                Ok(0) => {}
                Ok(n) => tracing::debug!("embedded the statements of {n} beliefs"),
                Err(e) => tracing::warn!("embedding the beliefs' statements failed: {e}"),
            }
            tokio::select! {
                _ = shutdown.requested() => return,
                _ = self.vectors_due.notified() => {}
            }
            // Writes come in runs: wait for a pause, and embed what they left together.
            let due = tokio::time::Instant::now();
            loop {
                tokio::select! {
                    _ = shutdown.requested() => return,
                    _ = tokio::time::sleep(QUIET) => break,
                    _ = self.vectors_due.notified() => {}
                }
                if due.elapsed() >= MOST_DELAY {
                    break;
                }
            }
        }
    }

    /// Embeds and writes the statements held without a vector of the configured model, a
    /// chunk at a time so ingest's own beliefs are never held up for long. Answers how many.
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
            // Embedded without the change lock, so adds are not held up meanwhile: a vector
            // is kept only for the statement it was made from.
            let rows: HashSet<String> = chunk.iter().cloned().collect();
            self.embed_statements(&rows).await;
            // The new beliefs are weighed by meaning too, once their topics have vectors.
            let topics = self.topic_vectors(&rows).await;
            let pending = {
                let _one = self.changing.lock().await;
                let mut changes = Changes {
                    embedded: true,
                    ..Default::default()
                };
                super::meaning::reconcile(
                    &mut self.lock(),
                    &rows,
                    &topics,
                    now_micros(),
                    &mut changes,
                );
                changes.rows.extend(rows);
                self.queue(changes).await?
            };
            pending.committed().await?;
        }
        Ok(ids.len())
    }
}

impl UserModel {
    /// The vectors of the topics `ids` (new beliefs) are weighed on, theirs and their rivals'
    /// ([`super::meaning::topic`]); kept between calls, since a person's topics recur. A
    /// failed embedding leaves them out: those beliefs are weighed by their slots alone.
    async fn topic_vectors(&self, ids: &HashSet<String>) -> HashMap<String, Vec<f32>> {
        use super::meaning::{rivals_of, topic, weighed};
        let wanted: HashSet<String> = {
            let beliefs = self.lock();
            ids.iter()
                .filter_map(|id| beliefs.get(id))
                .filter(|b| weighed(b))
                .flat_map(|b| {
                    let mut t = vec![topic(b)];
                    t.extend(rivals_of(&beliefs, b).into_iter().map(topic));
                    t
                })
                .collect()
        };
        let missing: Vec<String> = {
            let known = self.topics.lock().unwrap_or_else(|p| p.into_inner());
            wanted
                .iter()
                .filter(|t| !known.contains_key(*t))
                .cloned()
                .collect()
        };
        for chunk in missing.chunks(CHUNK) {
            match self.embed.embed(chunk.to_vec()).await {
                Ok(vectors) => {
                    let mut known = self.topics.lock().unwrap_or_else(|p| p.into_inner());
                    known.extend(chunk.iter().cloned().zip(vectors));
                }
                Err(e) => tracing::warn!("beliefs weighed without their topics' meaning: {e}"),
            }
        }
        let known = self.topics.lock().unwrap_or_else(|p| p.into_inner());
        wanted
            .into_iter()
            .filter_map(|t| known.get(&t).map(|v| (t, v.clone())))
            .collect()
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
    async fn a_belief_without_a_vector_gets_one_and_new_ones_get_theirs_in_the_background() {
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
        let embed = EmbedService::start(Arc::new(HashedEmbedder::chosen()), 8, 1).unwrap();
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

        // A new belief is answered without its vector; the background task embeds it.
        let usermodel = Arc::new(usermodel);
        let shutdown = Shutdown::default();
        tokio::spawn(usermodel.clone().keep_embedded(shutdown.clone()));
        let (set, _) = usermodel
            .set_preference(mnemo_protocol::belief::PreferenceSetParams {
                domain: "writing".into(),
                key: "tone".into(),
                value: "plain".into(),
                namespace: None,
            })
            .await
            .unwrap();
        let mut waited = 0;
        while usermodel.get(&set.id).unwrap().vector.0.is_empty() {
            assert!(waited < 100, "embedded in the background within 10 s");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            waited += 1;
        }
        shutdown.request();
    }
}
