//! The living summaries phase: each namespace's summaries written again by rule from its
//! memories of the last 30 days, its current beliefs, its people and the projects — and, when
//! an LLM is configured, each rewritten by it (the rule's text stays when it fails). One
//! namespace is one unit; redoing it after a stop writes the same rows again.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};

use mnemo_protocol::consolidate::{Phase, PhaseRecord};
use mnemo_protocol::entity::{EntitySort, EntityType, ListParams};
use mnemo_protocol::time::now_micros;

use super::bump;
use super::pace::{Pace, Stop};
use crate::living::compose::{compose, Inputs};
use crate::store::filter::{current, event_time};
use crate::store::MemoryRecord;
use crate::usermodel::projects::ACTIVE;

/// How far back the summaries look.
const WINDOW_US: i64 = 30 * 86_400_000_000;
/// People a summary weighs at most.
const PEOPLE: usize = 20;
/// Memories of the window a namespace's summaries read at most, the newest: a month of a
/// person's life is far fewer, and a store loaded in bulk held 1M at once (2.9 GB).
const MAX_RECENT: usize = 20_000;

/// The newest rows of each namespace, by event time, kept as they are read.
#[derive(Default)]
struct Newest(HashMap<String, BinaryHeap<Reverse<ByTime>>>);

struct ByTime(MemoryRecord);

impl ByTime {
    fn key(&self) -> (i64, &str) {
        (self.0.event_time(), &self.0.id)
    }
}

impl PartialEq for ByTime {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for ByTime {}
impl PartialOrd for ByTime {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ByTime {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

impl Newest {
    fn add(&mut self, row: MemoryRecord, max: usize) {
        let heap = self.0.entry(row.namespace.clone()).or_default();
        heap.push(Reverse(ByTime(row)));
        if heap.len() > max {
            heap.pop();
        }
    }

    fn rows(self) -> Vec<MemoryRecord> {
        self.0
            .into_values()
            .flat_map(|heap| heap.into_iter().map(|Reverse(ByTime(r))| r))
            .collect()
    }
}
const LLM_SYSTEM: &str = "You keep a short living summary about a person for their assistant. \
Rewrite the notes you are given as 1 to 3 plain sentences. Keep names, dates and numbers; add \
nothing that the notes do not say.";

pub async fn run(pace: &mut Pace, record: &mut PhaseRecord) -> Result<(), Stop> {
    let ctx = pace.ctx().clone();
    let now = now_micros();
    let mut newest = Newest::default();
    let window = current().and(event_time().ge(now - WINDOW_US));
    let read = ctx.store.each_with_columns(
        &window,
        &[
            "id",
            "namespace",
            "content",
            "kind",
            "session_id",
            "metadata",
            "salience",
            "created_at",
            "occurred_at",
            "emotion_primary",
            "emotion_intensity",
            "emotion_valence",
        ],
        |r| newest.add(r, MAX_RECENT),
    );
    pace.guard(read).await??;
    let recent = newest.rows();
    let beliefs = ctx.usermodel.matching(|b| b.valid_to.is_none());
    let namespaces: BTreeSet<String> = recent
        .iter()
        .map(|r| r.namespace.clone())
        .chain(beliefs.iter().map(|b| b.namespace.clone()))
        .collect();
    // A project whose directory went is not written about as current work.
    bump(
        record,
        "projects_changed",
        ctx.usermodel.projects().check_roots().await? as u64,
    );
    let projects: Vec<_> = ctx
        .usermodel
        .projects()
        .all()
        .into_iter()
        .filter(|p| p.status == ACTIVE)
        .collect();
    let llm = crate::llm::Llm::from_config(&ctx.llm).map(std::sync::Arc::new);
    for (i, namespace) in namespaces.iter().enumerate() {
        pace.checkpoint().await?;
        pace.progress(Phase::Living, i as u64, namespaces.len() as u64);
        let people = ctx
            .entities
            .list(&ListParams {
                namespace: Some(namespace.clone()),
                entity_type: Some(EntityType::Person),
                sort: EntitySort::Mentions,
                limit: Some(PEOPLE),
                ..Default::default()
            })
            .map(|(people, ..)| people)
            .unwrap_or_default();
        let in_namespace: Vec<_> = recent
            .iter()
            .filter(|r| &r.namespace == namespace)
            .cloned()
            .collect();
        let their_beliefs: Vec<_> = beliefs
            .iter()
            .filter(|b| &b.namespace == namespace)
            .cloned()
            .collect();
        let mut summaries = compose(&Inputs {
            namespace,
            now,
            recent: &in_namespace,
            beliefs: &their_beliefs,
            people: &people,
            projects: &projects,
        });
        if let Some(llm) = &llm {
            for s in summaries.iter_mut() {
                pace.checkpoint().await?;
                let prompt = format!("{}:\n{}", s.category, s.content);
                match pace.ask(llm, LLM_SYSTEM, prompt).await? {
                    Ok(text) => {
                        s.content = text;
                        s.written_by = "llm".into();
                    }
                    Err(e) => {
                        tracing::warn!("living summary by LLM failed, keeping the rule's: {e}");
                        bump(record, "llm_failures", 1);
                    }
                }
            }
        }
        ctx.living.replace(namespace, &summaries).await?;
        bump(record, "summaries", summaries.len() as u64);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::tests::record;

    #[test]
    fn the_newest_rows_of_each_namespace_are_kept() {
        let mut newest = Newest::default();
        for (i, namespace) in ["a", "b", "a", "a", "b", "a"].into_iter().enumerate() {
            let mut r = record(&format!("m{i}"), "text", 4);
            r.namespace = namespace.into();
            r.occurred_at = Some(100 - i as i64);
            newest.add(r, 2);
        }
        let mut kept: Vec<String> = newest.rows().into_iter().map(|r| r.id).collect();
        kept.sort();
        // a said m0, m2, m3, m5 (newest first); b said m1, m4.
        assert_eq!(kept, ["m0", "m1", "m2", "m4"]);
    }
}
