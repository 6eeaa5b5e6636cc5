//! What ingest writes from `understand`: a memory's entities, emotion, event time and
//! salience factors, and its salience unless the caller gave one. Novelty needs the vector,
//! so salience is scored twice: from the text at validation, again once embedded.

use crate::config::SalienceConfig;
use crate::store::{MemoryRecord, StoreError};
use crate::understand::{self, emotion::words, salience};

use super::Ingest;

/// Reads `r`'s text and writes what it finds. `given_salience`: the caller set the salience,
/// which is then kept and no factors are stored.
pub fn apply(
    r: &mut MemoryRecord,
    mentions: &[understand::entities::Mention],
    given_salience: bool,
    weights: &SalienceConfig,
) {
    let reading = understand::read(&r.content, r.event_time(), mentions);
    r.entities = mentions.iter().map(|m| m.key.clone()).collect();
    r.set_emotion(&reading.emotion);
    r.event_start = reading.date.as_ref().map(|d| d.start);
    r.event_end = reading.date.as_ref().map(|d| d.end);
    if given_salience {
        r.set_salience_factors(None);
    } else {
        r.salience = salience::score(&reading.factors, weights, words(&r.content).len());
        r.set_salience_factors(Some(&reading.factors));
    }
}

impl Ingest {
    /// The names `text` mentions, with every name the store already knows in `namespace`.
    pub fn mentions(&self, namespace: &str, text: &str) -> Vec<understand::entities::Mention> {
        self.names.extract(namespace, text)
    }

    /// The entities `r`'s text names, then [`apply`]; answers the mentions, for the entity
    /// book once the memory is stored.
    pub(super) fn read_into(
        &self,
        r: &mut MemoryRecord,
        given_salience: bool,
    ) -> Vec<understand::entities::Mention> {
        let mentions = self.mentions(&r.namespace, &r.content);
        apply(r, &mentions, given_salience, &self.salience);
        mentions
    }

    /// Scores the novelty of embedded records against their namespaces and rescores their
    /// salience with it.
    pub(super) async fn rescore_novelty(
        &self,
        records: &mut [MemoryRecord],
    ) -> Result<(), StoreError> {
        let mut namespaces: Vec<String> = records.iter().map(|r| r.namespace.clone()).collect();
        namespaces.sort();
        namespaces.dedup();
        for namespace in namespaces {
            let (indexes, vectors): (Vec<usize>, Vec<&[f32]>) = records
                .iter()
                .enumerate()
                .filter(|(_, r)| r.namespace == namespace)
                .map(|(i, r)| (i, r.vector.as_slice()))
                .unzip();
            let scores = self
                .novelty
                .score(&self.store, &namespace, &vectors)
                .await?;
            for (i, novelty) in indexes.into_iter().zip(scores) {
                let r = &mut records[i];
                let Some(mut factors) = r.salience_factors() else {
                    continue;
                };
                factors.novelty = novelty;
                r.salience = salience::score(&factors, &self.salience, words(&r.content).len());
                r.set_salience_factors(Some(&factors));
            }
        }
        Ok(())
    }
}
