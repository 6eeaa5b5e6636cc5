//! Contradictions found by meaning: a new belief is compared with the current beliefs about
//! the same person that no slot put beside it, by what each is about — its topic: a taste's
//! thing, a choice's value, a habit's activity — embedded like any text. MiniLM puts a thing
//! near its siblings (tea near coffee, cats near dogs) as much as near its paraphrases, so
//! meaning alone closes a belief only when the topics are nearly one ("running", "jogging")
//! and the two disagree (one for, one against) or are rival choices of one preference; two
//! that disagree on topics merely alike are marked CONTRADICTS and shown, never silently kept
//! as two truths. Two things meaning cannot see are read from what the person said: a
//! preference stated against another in one breath ("tabs over spaces") falls with it, and a
//! diet rules out the foods it excludes ("I stopped eating meat" closes "my favourite dish is
//! steak"). The newer belief wins unless the older is stronger (set by the person). Statements
//! kept as said (events, feelings) are many and compatible: they are never weighed.

use std::collections::{HashMap, HashSet};

use mnemo_protocol::belief::BeliefType;
use mnemo_protocol::graph::EdgeType;

use super::slots::{slot, Beliefs};
use super::{close, link, Changes};
use crate::linalg::cosine;
use crate::store::beliefs::BeliefRecord;
use crate::understand::beliefs::observed::is_observed;
use crate::understand::beliefs::rules_out;
use crate::understand::entities::fold;

/// Topics this alike are one thing said two ways.
pub const SAME_THING: f32 = 0.8;
/// Rival choices this alike choose for one thing ("dark mode", "light mode").
pub const RIVALS: f32 = 0.7;
/// Disagreeing beliefs on topics this alike are marked as contradicting.
pub const RELATED: f32 = 0.62;

/// Whether a preference's object is a stance on its key ("like", "avoid") rather than a
/// value chosen for it ("tabs").
pub fn is_stance(object: &str) -> bool {
    matches!(
        object.to_lowercase().as_str(),
        "like" | "dislike" | "prefer" | "avoid" | "always" | "never"
    )
}

/// What a belief is about, in a few words.
pub fn topic(b: &BeliefRecord) -> String {
    match b.belief_type {
        BeliefType::Preference | BeliefType::Rule if is_stance(&b.object) => b.predicate.clone(),
        _ => b.object.clone(),
    }
}

/// Which way a belief leans on its topic: for it (true) or against it.
fn leans_for(b: &BeliefRecord) -> bool {
    if b.negated {
        return false;
    }
    let object = b.object.to_lowercase();
    if matches!(b.belief_type, BeliefType::Preference | BeliefType::Rule) {
        return !matches!(object.as_str(), "dislike" | "avoid" | "never");
    }
    let s = format!(" {} ", b.statement.to_lowercase());
    ![
        " no longer ",
        " stopped ",
        " quit ",
        " gave up ",
        " given up ",
        " doesn't ",
        " does not ",
        " not ",
        " never ",
        " anymore ",
        " dislikes ",
        " hates ",
        " avoids ",
    ]
    .iter()
    .any(|w| s.contains(w))
}

/// A choice among alternatives ("prefers spaces for indentation"), rather than a taste.
fn is_choice(b: &BeliefRecord) -> bool {
    b.belief_type == BeliefType::Preference
        && !matches!(
            b.object.to_lowercase().as_str(),
            "like" | "dislike" | "avoid" | "never"
        )
}

/// Whether meaning weighs this belief at all.
pub fn weighed(b: &BeliefRecord) -> bool {
    b.valid_to.is_none() && !is_observed(&b.predicate)
}

/// What `new` makes of `old`, two current beliefs about one person.
#[derive(Debug, PartialEq)]
enum Outcome {
    Compatible,
    /// They cannot both hold: the newer one (if at least as strong) closes the other.
    Replaces,
    /// They may not both hold, and meaning cannot tell: both stay, marked.
    Contradicts,
}

fn outcome(new: &BeliefRecord, old: &BeliefRecord, alike: f32) -> Outcome {
    let diet = |d: &BeliefRecord, food: &BeliefRecord| {
        d.predicate == "diet"
            && leans_for(d)
            && leans_for(food)
            && rules_out(&d.object, &topic(food))
    };
    if diet(new, old) {
        return Outcome::Replaces;
    }
    if diet(old, new) {
        return Outcome::Contradicts;
    }
    let opposed = leans_for(new) != leans_for(old);
    let rivals = is_choice(new) && is_choice(old) && !new.object.eq_ignore_ascii_case(&old.object);
    match () {
        _ if opposed && alike >= SAME_THING => Outcome::Replaces,
        _ if rivals && alike >= RIVALS => Outcome::Replaces,
        _ if opposed && alike >= RELATED => Outcome::Contradicts,
        _ => Outcome::Compatible,
    }
}

/// The current beliefs each of `ids` is weighed against: the same person's, not of its slot.
pub(super) fn rivals_of<'a>(beliefs: &'a Beliefs, new: &BeliefRecord) -> Vec<&'a BeliefRecord> {
    let (who, key) = (fold(&new.subject), slot(new));
    beliefs
        .values()
        .filter(|b| b.id != new.id && weighed(b) && b.namespace == new.namespace)
        .filter(|b| fold(&b.subject) == who && slot(b) != key)
        .collect()
}

/// Weighs each of `ids` (new beliefs) against the current beliefs about its person; `topics`
/// holds the vector of every topic involved.
pub(super) fn reconcile(
    beliefs: &mut Beliefs,
    ids: &HashSet<String>,
    topics: &HashMap<String, Vec<f32>>,
    now: i64,
    changes: &mut Changes,
) {
    let mut order: Vec<(i64, String)> = ids
        .iter()
        .filter_map(|id| {
            beliefs
                .get(id)
                .filter(|b| weighed(b))
                .map(|b| (b.valid_from, id.clone()))
        })
        .collect();
    order.sort();
    for (_, id) in order {
        let Some(new) = beliefs.get(&id).filter(|b| weighed(b)).cloned() else {
            continue;
        };
        let Some(mine) = topics.get(&topic(&new)) else {
            continue;
        };
        let found: Vec<(String, Outcome)> = rivals_of(beliefs, &new)
            .into_iter()
            .filter(|b| !b.contradicts.contains(&new.id))
            .filter_map(|b| {
                let theirs = topics.get(&topic(b)).filter(|v| v.len() == mine.len())?;
                let o = outcome(&new, b, cosine(mine, theirs));
                (o != Outcome::Compatible).then(|| (b.id.clone(), o))
            })
            .collect();
        for (old_id, o) in found {
            let Some(old) = beliefs
                .get(&old_id)
                .filter(|b| b.valid_to.is_none())
                .cloned()
            else {
                continue;
            };
            if o == Outcome::Replaces && super::policy::outranks(&new, &old) {
                close(
                    beliefs,
                    &old_id,
                    &new.id,
                    new.valid_from.max(old.valid_from),
                    changes,
                );
                link(&mut changes.edges, &new, &old, EdgeType::Updates, now);
                // "tabs over spaces": what was preferred against the closed one falls with it.
                for partner in stated_against(beliefs, &old) {
                    close(beliefs, &partner, &new.id, new.valid_from, changes);
                }
                continue;
            }
            mark(beliefs, &new.id, &old_id, changes);
            link(&mut changes.edges, &new, &old, EdgeType::Contradicts, now);
        }
    }
}

/// Current preferences read from the same memory as `b` that lean the other way: said
/// against it ("I prefer tabs over spaces": tabs, against spaces).
fn stated_against(beliefs: &Beliefs, b: &BeliefRecord) -> Vec<String> {
    if b.belief_type != BeliefType::Preference || b.source_memory_id.is_none() {
        return Vec::new();
    }
    beliefs
        .values()
        .filter(|o| o.id != b.id && o.valid_to.is_none() && o.belief_type == BeliefType::Preference)
        .filter(|o| {
            o.source_memory_id == b.source_memory_id && fold(&o.subject) == fold(&b.subject)
        })
        .filter(|o| leans_for(o) != leans_for(b))
        .map(|o| o.id.clone())
        .collect()
}

/// Marks two current beliefs as contradicting each other.
fn mark(beliefs: &mut Beliefs, a: &str, b: &str, changes: &mut Changes) {
    for (one, other) in [(a, b), (b, a)] {
        if let Some(x) = beliefs.get_mut(one) {
            if !x.contradicts.iter().any(|c| c == other) {
                x.contradicts.push(other.to_string());
            }
        }
        changes.rows.insert(one.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_protocol::belief::BeliefSource;

    fn belief(id: &str, kind: BeliefType, predicate: &str, object: &str, at: i64) -> BeliefRecord {
        BeliefRecord {
            id: id.into(),
            subject: "user".into(),
            predicate: predicate.into(),
            object: object.into(),
            statement: format!("User {predicate} {object}"),
            belief_type: kind,
            valid_from: at,
            source: BeliefSource::Extracted,
            source_memory_id: Some(format!("m-{id}")),
            evidence: vec![format!("m-{id}")],
            ..Default::default()
        }
    }

    /// Topic vectors: each topic a direction, or near one another as the test says.
    fn topics(list: &[(&str, [f32; 3])]) -> HashMap<String, Vec<f32>> {
        list.iter()
            .map(|(t, v)| {
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                (t.to_string(), v.iter().map(|x| x / n).collect())
            })
            .collect()
    }

    fn run(list: Vec<BeliefRecord>, new: &[&str], t: &HashMap<String, Vec<f32>>) -> Beliefs {
        let mut beliefs: Beliefs = list.into_iter().collect();
        let ids = new.iter().map(|s| s.to_string()).collect();
        reconcile(&mut beliefs, &ids, t, 9, &mut Changes::default());
        beliefs
    }

    #[test]
    fn a_diet_closes_the_foods_it_rules_out() {
        let steak = belief("a", BeliefType::Preference, "favorite dish", "steak", 1);
        let veg = belief("b", BeliefType::Constraint, "diet", "vegetarian", 2);
        let t = topics(&[("steak", [1.0, 0.0, 0.0]), ("vegetarian", [0.0, 1.0, 0.0])]);
        let b = run(vec![steak, veg], &["b"], &t);
        assert_eq!(b["a"].superseded_by.as_deref(), Some("b"));
    }

    #[test]
    fn one_thing_said_against_closes_and_siblings_stay() {
        let running = belief("a", BeliefType::Preference, "running", "like", 1);
        let jogging = belief("b", BeliefType::Preference, "jogging", "dislike", 2);
        let tea = belief("c", BeliefType::Preference, "tea", "like", 1);
        let coffee = belief("d", BeliefType::Preference, "coffee", "dislike", 2);
        let t = topics(&[
            ("running", [1.0, 0.0, 0.0]),
            ("jogging", [1.0, 0.3, 0.0]),
            ("tea", [0.0, 1.0, 0.0]),
            ("coffee", [1.0, 0.6, 0.0]),
        ]);
        let b = run(vec![running, jogging, tea, coffee], &["b", "d"], &t);
        assert_eq!(b["a"].superseded_by.as_deref(), Some("b"), "one thing");
        assert!(
            b["c"].valid_to.is_none() && b["c"].contradicts.is_empty(),
            "siblings"
        );
    }

    #[test]
    fn what_was_preferred_against_a_closed_preference_falls_with_it() {
        let mut tabs = belief("a", BeliefType::Preference, "tabs", "prefer", 1);
        let mut spaces = belief("b", BeliefType::Preference, "spaces", "avoid", 1);
        tabs.source_memory_id = Some("m1".into());
        spaces.source_memory_id = Some("m1".into());
        let four = belief("c", BeliefType::Preference, "indentation", "4 spaces", 2);
        let t = topics(&[
            ("tabs", [0.0, 1.0, 0.0]),
            ("spaces", [1.0, 0.1, 0.0]),
            ("4 spaces", [1.0, 0.0, 0.0]),
        ]);
        let b = run(vec![tabs, spaces, four], &["c"], &t);
        assert_eq!(b["b"].superseded_by.as_deref(), Some("c"));
        assert_eq!(
            b["a"].superseded_by.as_deref(),
            Some("c"),
            "tabs fell with spaces"
        );
    }

    #[test]
    fn what_cannot_be_decided_is_marked_contradicting() {
        let mut set = belief("a", BeliefType::Preference, "dark mode", "like", 5);
        set.source = BeliefSource::Explicit;
        let read = belief("b", BeliefType::Preference, "dark theme", "dislike", 6);
        let cats = belief("c", BeliefType::Preference, "cats", "like", 1);
        let dogs = belief("d", BeliefType::Preference, "dogs", "dislike", 6);
        let t = topics(&[
            ("dark mode", [1.0, 0.0, 0.0]),
            ("dark theme", [1.0, 0.1, 0.0]),
            ("cats", [0.0, 1.0, 0.0]),
            ("dogs", [0.0, 1.0, 1.0]),
        ]);
        let b = run(vec![set, read, cats, dogs], &["b", "d"], &t);
        assert_eq!(b["a"].contradicts, ["b"], "the stronger stays, marked");
        assert!(b["a"].valid_to.is_none() && b["b"].valid_to.is_none());
        assert_eq!(b["c"].contradicts, ["d"], "alike topics, undecided");
    }

    #[test]
    fn events_are_never_weighed() {
        let a = belief("a", BeliefType::Fact, "event", "went to Paris", 1);
        let b = belief("b", BeliefType::Fact, "event", "did not go to Paris", 2);
        let t = topics(&[
            ("went to Paris", [1.0, 0.0, 0.0]),
            ("did not go to Paris", [1.0, 0.0, 0.0]),
        ]);
        let b = run(vec![a, b], &["b"], &t);
        assert!(b["a"].valid_to.is_none());
    }
}
