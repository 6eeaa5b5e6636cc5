//! How a new belief meets the current ones about the same subject and predicate, as a pure
//! function so the policy can be read and tested by table: the same statement again is more
//! evidence; on a single-valued predicate a different value replaces the old one when its
//! source is at least as strong (explicit > extracted > inferred) and it is at least as
//! recent, and is kept beside it, marked as contradicting, when not; on a many-valued
//! predicate another value extends, and the same value negated closes it when newer (and
//! contradicts it when older or weaker).

use crate::store::beliefs::BeliefRecord;
use crate::understand::beliefs::observed::is_observed;
use crate::understand::beliefs::single_valued;

/// What to do with a new belief.
#[derive(Debug, Default, PartialEq)]
pub struct Verdict {
    /// The current belief it repeats (no new row: more evidence for that one).
    pub repeats: Option<String>,
    /// Current beliefs it replaces: they close when it begins.
    pub supersedes: Vec<String>,
    /// Current beliefs that replace it at once (they are more recent, or stronger): it is
    /// stored as history, closed where they begin.
    pub superseded_by: Option<(String, i64)>,
    /// Current beliefs it cannot hold with; both stay current.
    pub contradicts: Vec<String>,
    /// A current belief it adds to (another value of a many-valued predicate).
    pub extends: Option<String>,
}

/// `new` against the `current` beliefs of its namespace, subject and predicate.
pub fn judge(new: &BeliefRecord, current: &[&BeliefRecord]) -> Verdict {
    let mut v = Verdict::default();
    let same_value = |b: &BeliefRecord| b.object.eq_ignore_ascii_case(&new.object);
    v.repeats = current
        .iter()
        .find(|b| same_value(b) && b.negated == new.negated)
        .map(|b| b.id.clone());
    let others = current.iter().filter(|b| Some(&b.id) != v.repeats.as_ref());
    if single_valued(new.belief_type, &new.predicate) {
        // Said again, it still replaces the other values it now outranks ("spaces" set
        // explicitly after an explicit "tabs" and an extracted "spaces").
        for old in others {
            let (rank_new, rank_old) = (new.source.rank(), old.source.rank());
            if outranks(new, old) {
                v.supersedes.push(old.id.clone());
            } else if v.repeats.is_some() {
                // A repeat adds no row: nothing to mark.
            } else if rank_new == rank_old {
                // Said earlier than what holds now (an import out of order): history.
                v.superseded_by = Some((old.id.clone(), old.valid_from));
            } else {
                v.contradicts.push(old.id.clone());
            }
        }
        if v.superseded_by.is_some() {
            v.supersedes.clear();
            v.contradicts.clear();
        }
        return v;
    }
    if v.repeats.is_some() {
        return v;
    }
    // The same value negated ("no longer", "anymore", "quit"): a newer saying at least as
    // strong closes the old one; an older or weaker one contradicts it.
    for old in others {
        if same_value(old) {
            if outranks(new, old) {
                v.supersedes.push(old.id.clone());
            } else {
                v.contradicts.push(old.id.clone());
            }
        }
    }
    if v.contradicts.is_empty() && v.supersedes.is_empty() && !is_observed(&new.predicate) {
        v.extends = current
            .iter()
            .max_by_key(|b| b.valid_from)
            .map(|b| b.id.clone());
    }
    v
}

/// Whether `new` replaces `old`: a stronger source, or as strong and at least as recent.
pub(super) fn outranks(new: &BeliefRecord, old: &BeliefRecord) -> bool {
    let (rank_new, rank_old) = (new.source.rank(), old.source.rank());
    rank_new > rank_old || (rank_new == rank_old && new.valid_from >= old.valid_from)
}

/// Confidence from the source's own and the number of independent memories saying it:
/// each one more removes part of the remaining doubt.
pub fn confidence(base: f32, evidence: usize) -> f32 {
    let n = evidence.max(1) as i32;
    (1.0 - (1.0 - base.clamp(0.0, 0.99)).powi(n)).min(0.99)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_protocol::belief::{BeliefSource, BeliefType};

    fn belief(
        id: &str,
        predicate: &str,
        object: &str,
        source: BeliefSource,
        at: i64,
    ) -> BeliefRecord {
        BeliefRecord {
            id: id.into(),
            subject: "Maria".into(),
            predicate: predicate.into(),
            object: object.into(),
            belief_type: if predicate == "tea" {
                BeliefType::Preference
            } else {
                BeliefType::Fact
            },
            source,
            valid_from: at,
            ..Default::default()
        }
    }

    use BeliefSource::{Explicit, Extracted};

    #[test]
    fn a_new_value_of_a_single_valued_predicate_replaces_the_old() {
        let old = belief("a", "lives_in", "Lisbon", Extracted, 1);
        let new = belief("b", "lives_in", "Porto", Extracted, 2);
        let v = judge(&new, &[&old]);
        assert_eq!(v.supersedes, vec!["a".to_string()]);
        assert!(v.contradicts.is_empty() && v.repeats.is_none());
    }

    #[test]
    fn the_same_statement_again_is_evidence() {
        let old = belief("a", "lives_in", "Lisbon", Extracted, 1);
        let new = belief("b", "lives_in", "lisbon", Extracted, 2);
        assert_eq!(judge(&new, &[&old]).repeats.as_deref(), Some("a"));
    }

    #[test]
    fn an_older_statement_arriving_late_becomes_history() {
        let now = belief("a", "lives_in", "Porto", Extracted, 10);
        let late = belief("b", "lives_in", "Lisbon", Extracted, 5);
        let v = judge(&late, &[&now]);
        assert_eq!(v.superseded_by, Some(("a".to_string(), 10)));
        assert!(v.supersedes.is_empty());
    }

    #[test]
    fn explicit_beats_extracted_whatever_the_order() {
        let set = belief("a", "tea", "dislike", Explicit, 1);
        let read = belief("b", "tea", "like", Extracted, 2);
        let v = judge(&read, &[&set]);
        assert_eq!(v.contradicts, vec!["a".to_string()]);
        assert!(v.supersedes.is_empty());
        let v = judge(&set, &[&read]);
        assert_eq!(v.supersedes, vec!["b".to_string()]);
    }

    #[test]
    fn a_value_said_again_with_more_authority_replaces_the_others() {
        let tabs = belief("a", "tea", "tabs", Explicit, 1);
        let spaces = belief("b", "tea", "spaces", Extracted, 2);
        let set = belief("c", "tea", "spaces", Explicit, 3);
        let v = judge(&set, &[&tabs, &spaces]);
        assert_eq!(v.repeats.as_deref(), Some("b"));
        assert_eq!(v.supersedes, vec!["a".to_string()]);
    }

    #[test]
    fn many_valued_predicates_extend_and_a_newer_negation_closes() {
        let french = belief("a", "speaks", "French", Extracted, 1);
        let spanish = belief("b", "speaks", "Spanish", Extracted, 2);
        assert_eq!(judge(&spanish, &[&french]).extends.as_deref(), Some("a"));
        let mut no_french = belief("c", "speaks", "French", Extracted, 3);
        no_french.negated = true;
        let v = judge(&no_french, &[&french, &spanish]);
        assert_eq!(v.supersedes, vec!["a".to_string()], "no longer: closed");
        assert!(v.extends.is_none() && v.contradicts.is_empty());
        // Said before the positive one (an import out of order), it contradicts instead.
        let mut early = belief("d", "speaks", "French", Extracted, 0);
        early.negated = true;
        assert_eq!(judge(&early, &[&french]).contradicts, vec!["a".to_string()]);
    }

    #[test]
    fn confidence_grows_with_independent_evidence() {
        assert!((confidence(0.7, 1) - 0.7).abs() < 1e-6);
        assert!(confidence(0.7, 2) > 0.9);
        assert!(confidence(0.7, 50) <= 0.99);
    }
}
