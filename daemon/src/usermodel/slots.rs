//! Every belief held, by id and by slot: what a new belief is weighed against is found by its
//! slot (namespace, subject, predicate) without a pass over the whole model. A statement
//! kept as said (an event, a feeling) is many-valued and only meets its own words again, so
//! its slot includes its object: a person's thousands of events never share one list.

use std::collections::HashMap;
use std::ops::Deref;

use crate::store::beliefs::BeliefRecord;
use crate::understand::beliefs::observed::is_observed;
use crate::understand::entities::fold;

/// The namespace, subject and predicate (and, for a statement kept as said, its object)
/// beliefs are compared under.
pub type Slot = (String, String, String, String);

pub fn slot(b: &BeliefRecord) -> Slot {
    let predicate = b.predicate.to_lowercase();
    let object = if is_observed(&predicate) {
        b.object.to_lowercase()
    } else {
        String::new()
    };
    (b.namespace.clone(), fold(&b.subject), predicate, object)
}

/// The beliefs held, current and past, by id; reads go through `Deref`, changes through the
/// methods here, which keep the slots current. A change through [`Beliefs::get_mut`] must
/// leave the slot's fields as they were.
#[derive(Default)]
pub struct Beliefs {
    by_id: HashMap<String, BeliefRecord>,
    by_slot: HashMap<Slot, Vec<String>>,
}

impl Deref for Beliefs {
    type Target = HashMap<String, BeliefRecord>;

    fn deref(&self) -> &Self::Target {
        &self.by_id
    }
}

impl FromIterator<BeliefRecord> for Beliefs {
    fn from_iter<I: IntoIterator<Item = BeliefRecord>>(rows: I) -> Self {
        let mut out = Self::default();
        for b in rows {
            out.insert(b);
        }
        out
    }
}

impl Beliefs {
    pub fn insert(&mut self, b: BeliefRecord) {
        if let Some(old) = self.by_id.get(&b.id) {
            let key = slot(old);
            self.unslot(&key, &b.id);
        }
        self.by_slot.entry(slot(&b)).or_default().push(b.id.clone());
        self.by_id.insert(b.id.clone(), b);
    }

    pub fn remove(&mut self, id: &str) -> Option<BeliefRecord> {
        let gone = self.by_id.remove(id)?;
        self.unslot(&slot(&gone), id);
        Some(gone)
    }

    fn unslot(&mut self, key: &Slot, id: &str) {
        if let Some(ids) = self.by_slot.get_mut(key) {
            ids.retain(|i| i != id);
            if ids.is_empty() {
                self.by_slot.remove(key);
            }
        }
    }

    pub fn get_mut(&mut self, id: &str) -> Option<&mut BeliefRecord> {
        self.by_id.get_mut(id)
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut BeliefRecord> {
        self.by_id.values_mut()
    }

    /// The current beliefs of `key`'s slot.
    pub fn current_in(&self, key: &Slot) -> Vec<&BeliefRecord> {
        self.by_slot
            .get(key)
            .into_iter()
            .flatten()
            .filter_map(|id| self.by_id.get(id))
            .filter(|b| b.valid_to.is_none())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn belief(id: &str, predicate: &str, object: &str) -> BeliefRecord {
        BeliefRecord {
            id: id.into(),
            namespace: "default".into(),
            subject: "Maria".into(),
            predicate: predicate.into(),
            object: object.into(),
            ..Default::default()
        }
    }

    #[test]
    fn slots_follow_inserts_and_removals_and_events_meet_only_their_own_words() {
        let mut held: Beliefs = [
            belief("a", "lives_in", "Lisbon"),
            belief("b", "lives_in", "Porto"),
            belief("c", "event", "went to Paris"),
            belief("d", "event", "went to Rome"),
        ]
        .into_iter()
        .collect();
        let lives = slot(&belief("x", "lives_in", "Braga"));
        assert_eq!(held.current_in(&lives).len(), 2);
        let paris = slot(&belief("x", "event", "went to Paris"));
        assert_eq!(held.current_in(&paris).len(), 1);
        held.remove("a");
        assert_eq!(held.current_in(&lives).len(), 1);
        held.get_mut("b").unwrap().valid_to = Some(5);
        assert!(held.current_in(&lives).is_empty(), "closed");
        assert_eq!(held.len(), 3);
    }
}
