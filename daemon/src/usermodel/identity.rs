//! `identity.get`: who someone is, assembled from their current beliefs.

use mnemo_protocol::belief::{BeliefType, Identity, ProjectWorkedOn, Trait, USER};
use mnemo_protocol::time::format_micros;

use super::projects::ACTIVE;
use super::UserModel;
use crate::store::beliefs::BeliefRecord;
use crate::understand::entities::fold;

/// Projects an identity names at most: the most recently active.
const MAX_PROJECTS: usize = 5;

fn trait_of(b: &BeliefRecord, value: String) -> Trait {
    Trait {
        value,
        confidence: b.confidence,
        source: b.source,
        belief_id: b.id.clone(),
        since: format_micros(b.valid_from),
    }
}

impl UserModel {
    pub fn identity(&self, namespace: &str, subject: Option<&str>) -> Identity {
        let who = fold(subject.unwrap_or(USER));
        let mut id = Identity {
            namespace: namespace.to_string(),
            subject: subject.unwrap_or(USER).to_string(),
            ..Default::default()
        };
        for b in self.current(namespace, None) {
            if b.negated {
                continue;
            }
            // "Maria is my sister": a relation of the speaker, stated with Maria as subject;
            // another speaker's relation names them ("sister of Caroline").
            if b.predicate == "relation" {
                let (relation, owner) = match b.object.rsplit_once(" of ") {
                    Some((relation, owner)) => (relation, fold(owner)),
                    None => (b.object.as_str(), USER.to_string()),
                };
                if owner == who {
                    id.relations
                        .push(trait_of(&b, format!("{} ({relation})", b.subject)));
                }
                continue;
            }
            if fold(&b.subject) != who {
                continue;
            }
            let list = match (b.belief_type, b.predicate.as_str()) {
                (_, "name") => &mut id.name,
                (_, "age") => &mut id.age,
                (_, "pronouns") => &mut id.pronouns,
                (_, "occupation") => &mut id.roles,
                (_, "works_at") => &mut id.workplaces,
                (_, "lives_in") | (_, "from") => &mut id.places,
                (_, "speaks") => &mut id.languages,
                (BeliefType::Goal, _) => &mut id.works_on,
                _ => continue,
            };
            let value = match b.predicate.as_str() {
                "from" => format!("from {}", b.object),
                "lives_in" => format!("lives in {}", b.object),
                _ => b.object.clone(),
            };
            list.push(trait_of(&b, value));
        }
        if who == USER {
            id.projects = self
                .projects
                .all()
                .into_iter()
                .filter(|p| p.status == ACTIVE)
                .take(MAX_PROJECTS)
                .map(|p| ProjectWorkedOn {
                    id: p.id,
                    name: p.name,
                    path: p.path,
                    last_active: p.last_active,
                    interaction_count: p.interaction_count,
                })
                .collect();
        }
        id
    }
}
