//! Reading the model: belief pages, one belief's history, and the facts recall should rank
//! lower because newer memories replaced them.

use std::cmp::Reverse;

use mnemo_protocol::belief::{Belief, BeliefType, ListParams, MAX_LIST};
use mnemo_protocol::memory::SupersededFact;
use mnemo_protocol::time::{format_micros, parse_micros};

use super::{slot, UserModel, SUPERSEDED_FACTOR};
use crate::paging::Page;
use crate::store::beliefs::BeliefRecord;
use crate::understand::entities::fold;

pub fn to_protocol(b: &BeliefRecord) -> Belief {
    Belief {
        id: b.id.clone(),
        namespace: b.namespace.clone(),
        subject: b.subject.clone(),
        predicate: b.predicate.clone(),
        object: b.object.clone(),
        negated: b.negated,
        statement: b.statement.clone(),
        belief_type: b.belief_type,
        domain: b.domain.clone(),
        scope: b.scope.clone(),
        confidence: b.confidence,
        evidence_count: b.evidence.len() as u64,
        source: b.source,
        read_by: b.read_by.clone(),
        source_memory_id: b.source_memory_id.clone(),
        valid_from: format_micros(b.valid_from),
        valid_to: b.valid_to.map(format_micros),
        superseded_by: b.superseded_by.clone(),
        contradicts: b.contradicts.clone(),
    }
}

/// Held at `t`: begun by then and not yet ended.
fn held_at(b: &BeliefRecord, t: i64) -> bool {
    b.valid_from <= t && b.valid_to.is_none_or(|end| end > t)
}

/// Stronger first: explicit before extracted before inferred, then more confident, newer.
pub fn strongest_first(beliefs: &mut [BeliefRecord]) {
    beliefs.sort_by(|a, b| {
        (Reverse(a.source.rank()), Reverse(a.valid_to.is_none()))
            .cmp(&(Reverse(b.source.rank()), Reverse(b.valid_to.is_none())))
            .then(b.confidence.total_cmp(&a.confidence))
            .then(b.valid_from.cmp(&a.valid_from))
            .then(a.id.cmp(&b.id))
    });
}

impl UserModel {
    /// A page of beliefs, strongest first, and how many match over all pages.
    pub fn list(&self, p: &ListParams) -> Result<(Vec<Belief>, u64, Option<String>), String> {
        let page = Page::new(p.limit, MAX_LIST, p.cursor.as_deref())?;
        let as_of = p
            .as_of
            .as_deref()
            .map(parse_micros)
            .transpose()
            .map_err(|e| format!("as_of: {e}"))?;
        let subject = p.subject.as_deref().map(fold);
        let domain = p.domain.as_deref().map(str::to_lowercase);
        let mut found = self.matching(|b| {
            p.namespace.as_ref().is_none_or(|ns| &b.namespace == ns)
                && p.belief_type.is_none_or(|t| b.belief_type == t)
                && subject.as_ref().is_none_or(|s| &fold(&b.subject) == s)
                && domain.as_ref().is_none_or(|d| b.domain.as_ref() == Some(d))
                && p.source.is_none_or(|s| b.source == s)
                && match as_of {
                    Some(t) => held_at(b, t),
                    None => p.all || b.valid_to.is_none(),
                }
        });
        strongest_first(&mut found);
        let total = found.len() as u64;
        let (shown, next) = page.of(found);
        Ok((shown.iter().map(to_protocol).collect(), total, next))
    }

    /// Every version in the belief's slot (namespace, subject, predicate), oldest first.
    pub fn history(&self, b: &BeliefRecord) -> Vec<Belief> {
        let key = slot(b);
        let mut all = self.matching(|o| slot(o) == key);
        all.sort_by_key(|o| (o.valid_from, o.id.clone()));
        all.iter().map(to_protocol).collect()
    }

    /// The current beliefs of a namespace and type, strongest first (context, identity).
    pub fn current(&self, namespace: &str, kind: Option<BeliefType>) -> Vec<BeliefRecord> {
        let mut found = self.matching(|b| {
            b.valid_to.is_none()
                && b.namespace == namespace
                && kind.is_none_or(|k| b.belief_type == k)
        });
        strongest_first(&mut found);
        found
    }

    /// For each of `lineages` (memories) that states a fact a newer memory replaced: the
    /// fact, and the lineage of the memory whose belief holds now, at the end of the chain
    /// of replacements. One
    /// pass over the closed beliefs, whatever the number of memories asked about.
    pub fn superseded(
        &self,
        lineages: &std::collections::HashSet<&str>,
    ) -> std::collections::HashMap<String, (SupersededFact, String)> {
        let beliefs = self.lock();
        let mut found = std::collections::HashMap::new();
        for old in beliefs.values().filter(|b| b.valid_to.is_some()) {
            let Some(lineage) = old.evidence.iter().find(|l| lineages.contains(l.as_str())) else {
                continue;
            };
            // What replaced it may itself have been replaced ("no longer at Google", then
            // "works at Stripe"): the belief that holds now ends the chain.
            let mut new = old.superseded_by.as_ref().and_then(|id| beliefs.get(id));
            for _ in 0..8 {
                match new {
                    Some(n) if n.valid_to.is_some() => {
                        new = n.superseded_by.as_ref().and_then(|id| beliefs.get(id));
                    }
                    _ => break,
                }
            }
            let Some(new) = new else {
                continue;
            };
            let Some(by) = new.evidence.first() else {
                continue;
            };
            if new.valid_to.is_some() || new.evidence.contains(lineage) {
                continue;
            }
            found.entry(lineage.clone()).or_insert_with(|| {
                (
                    SupersededFact {
                        was: old.statement.clone(),
                        now: new.statement.clone(),
                        by_memory: new.source_memory_id.clone().unwrap_or_else(|| by.clone()),
                        factor: SUPERSEDED_FACTOR,
                    },
                    by.clone(),
                )
            });
        }
        found
    }
}
