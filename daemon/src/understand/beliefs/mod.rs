//! Beliefs a text states, read clause by clause ([`people`]: who each clause is about, in
//! the third person). Slot rules read identity ("my name is", "I'm a … engineer", "I live
//! in"), preferences and corrections ("I love", "never use", "use X instead of Y"),
//! constraints ("I'm allergic to", "I can't", deadlines), goals ("I want to") and facts about
//! people ("Maria is my sister", "Maria moved to Porto"), first and third person, negation
//! handled. A `Name: words` line speaks for Name; otherwise "I" is the person (`user`).
//! Questions, conditionals and turns of phrase ("I can't wait") state nothing. A telling
//! clause no rule reads is kept as its statement ([`observed`]): an event, a feeling, a plan.

mod lexicon;
mod rules;
#[cfg(test)]
mod tests;

use mnemo_protocol::belief::{BeliefType, USER};

use super::people::{self, Person};

pub use lexicon::{domain_of, key_stems, rules_out};
pub use people::display;
pub use rules::{preference_statement, statement, LEFT, OPEN};

/// One belief a text states, before the store weighs it against what it already holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Signal {
    /// `user`, or a name (or "user's sister") as written.
    pub subject: String,
    /// `lives_in`, …; for a preference or rule its key.
    pub predicate: String,
    pub object: String,
    pub negated: bool,
    pub kind: BeliefType,
    pub domain: Option<String>,
    pub statement: String,
    /// How sure the wording is: 0.7 said of oneself, 0.6 of another, less when hedged.
    pub confidence: f32,
}

/// Predicates that hold one value at a time for a subject: a new value replaces the old.
/// Preferences and rules are single-valued per key.
pub fn single_valued(kind: BeliefType, predicate: &str) -> bool {
    matches!(kind, BeliefType::Preference | BeliefType::Rule)
        || matches!(
            predicate,
            "name"
                | "age"
                | "pronouns"
                | "lives_in"
                | "works_at"
                | "from"
                | "birthday"
                | "married_to"
                | "relation"
                | "diet"
        )
}

/// Most beliefs one text yields: a pasted document must not flood the model.
pub const MAX_SIGNALS: usize = 16;
/// Clauses one statement kept as said joins, at most: a text's most telling about a person
/// make one statement about them ("Caroline went to a support group on 7 May 2023, and
/// found the stories inspiring"), as a reader would note it.
pub const CLAUSES_PER_STATEMENT: usize = 2;
/// Least weight ([`people::Said::weight`]) of a clause kept as said: a few words of content.
pub const MIN_WEIGHT: f32 = 2.75;
/// Least weight of what a speaker says to the listener kept as said: most of it is the
/// talk's warmth ("Keep going!"), so only the telling rest is kept.
pub const MIN_TOWARD_WEIGHT: f32 = 5.5;
/// Least weight of a view kept as said: one needs more words than a fact to tell anything.
pub const MIN_VIEW_WEIGHT: f32 = 6.0;

/// The predicates of statements kept as said, by what they tell.
pub mod observed {
    /// Something that happened, or was done ("Caroline went to a support group on 7 May").
    pub const EVENT: &str = "event";
    /// How someone feels about something.
    pub const FEELING: &str = "feeling";
    /// Anything else true of someone ("Gina's store sells fashion pieces").
    pub const FACT: &str = "fact";
    /// What someone means to do ("Caroline is going to continue her education").
    pub const PLAN: &str = "plan";
    /// What someone thinks of the world ("Melanie thinks family moments make life awesome").
    pub const VIEW: &str = "view";

    /// Whether `predicate` is one of a statement kept as said (many-valued, never a slot).
    pub fn is_observed(predicate: &str) -> bool {
        matches!(predicate, EVENT | FEELING | FACT | PLAN | VIEW)
    }
}

/// The beliefs `text`, said at `said_at` (UTC microseconds), states.
pub fn extract(text: &str, said_at: i64) -> Vec<Signal> {
    extract_to(text, said_at, None)
}

/// The beliefs a turn of a chat states, said to `listener` (the other speaker, when known).
pub fn extract_to(text: &str, said_at: i64, listener: Option<&str>) -> Vec<Signal> {
    let Reading { mut slots, kept } = reading(text, said_at, listener);
    // Per person, one statement of their most telling clauses, in the order said; what they
    // said to the listener apart, its most telling clause alone.
    let mut by_subject: Vec<((String, bool), Vec<Kept>)> = Vec::new();
    let enough = |k: &Kept| {
        let floor = match (k.toward, k.signal.predicate == observed::VIEW) {
            (_, true) => MIN_VIEW_WEIGHT,
            (true, false) => MIN_TOWARD_WEIGHT,
            (false, false) => MIN_WEIGHT,
        };
        k.weight >= floor
    };
    for k in kept.into_iter().filter(enough) {
        let key = (k.signal.subject.clone(), k.toward);
        match by_subject.iter_mut().find(|(s, _)| *s == key) {
            Some((_, list)) => list.push(k),
            None => by_subject.push((key, vec![k])),
        }
    }
    for ((_, toward), mut list) in by_subject {
        list.sort_by(|a, b| b.weight.total_cmp(&a.weight).then(a.clause.cmp(&b.clause)));
        list.truncate(if toward { 1 } else { CLAUSES_PER_STATEMENT });
        list.sort_by_key(|k| k.clause);
        push(&mut slots, joined(list));
    }
    slots.truncate(MAX_SIGNALS);
    slots
}

/// One statement of clauses about one person: the first as it is, the others after ", and"
/// without the subject they share ("Caroline went …, and found …"); the first's kind. When
/// one opens with something else ("Rob invited Caroline …"), they do not join: the most
/// telling alone is the statement.
fn joined(list: Vec<Kept>) -> Signal {
    let shown = people::display(&list[0].signal.subject);
    let prefix = format!("{shown} ");
    if !list.iter().all(|k| k.signal.statement.starts_with(&prefix)) {
        let heaviest = list
            .into_iter()
            .reduce(|a, b| if b.weight > a.weight { b } else { a })
            .expect("a clause");
        return heaviest.signal;
    }
    let mut list = list.into_iter();
    let mut first = list.next().expect("a clause").signal;
    for k in list {
        let rest = &k.signal.statement[prefix.len()..];
        first.statement = format!("{}, and {rest}", first.statement);
        first.object = format!("{}, and {rest}", first.object);
    }
    first
}

/// A statement kept as said, before the most telling of a text are chosen.
pub(crate) struct Kept {
    /// Which clause of the text it is.
    pub clause: usize,
    /// How much it tells ([`people::Said::weight`]).
    pub weight: f32,
    /// Said to the listener ([`people::Said::toward`]).
    pub toward: bool,
    pub signal: Signal,
}

/// What a text states: the slot rules' beliefs, and every clause no rule read that tells
/// something, each with its weight.
pub(crate) struct Reading {
    pub slots: Vec<Signal>,
    pub kept: Vec<Kept>,
}

/// Adds `s` unless the same subject, predicate and object is there.
fn push(out: &mut Vec<Signal>, s: Signal) {
    if !out
        .iter()
        .any(|o| o.subject == s.subject && o.predicate == s.predicate && o.object == s.object)
    {
        out.push(s);
    }
}

pub(crate) fn reading(text: &str, said_at: i64, listener: Option<&str>) -> Reading {
    let heard = people::read(text, said_at, listener);
    let shown = people::display(&heard.speaker);
    let mut slots: Vec<Signal> = Vec::new();
    let mut kept = Vec::new();
    for (i, said) in heard.said.iter().enumerate() {
        if let (Person::Named(name), Some(rel)) = (&said.person, &said.relation) {
            push(&mut slots, rules::kin(name, rel, &heard.speaker));
        }
        let mut found = rules::read(&said.clause, &heard.speaker);
        if found.is_empty() && said.undated != said.clause {
            found = rules::read(&said.undated, &heard.speaker);
        }
        // What no rule read is kept as said; so is a dated change a rule read ("I lost my
        // job as a banker yesterday"): the slot holds the fact, the statement the event.
        // Not when a rule's value already says the clause ("wants to volunteer at shelters"
        // for "I'm going to volunteer at shelters next month"): that would be said twice.
        let restated = found.iter().any(|s| covers(&s.object, &said.clause));
        if said.weight > 0.0 && (found.is_empty() || (said.date.is_some() && !restated)) {
            kept.push(Kept {
                clause: i,
                weight: said.weight,
                toward: said.toward,
                signal: observation(said),
            });
        }
        let pets = match said.person {
            Person::Speaker | Person::Touched => {
                rules::pets_mentioned(&said.clause, &heard.speaker)
            }
            _ => Vec::new(),
        };
        // "wants to continue doing it": a value that points back names nothing.
        let found = found
            .into_iter()
            .filter(|s| !people::points_back(&s.object));
        for mut s in found.chain(pets) {
            if said.hedged {
                s.confidence = (s.confidence - 0.3).max(0.2);
            }
            // "wants to continue my studies": the rule's words, in the third person too.
            s.object = people::their(&s.object, &said.person, &shown);
            s.statement = people::their(&s.statement, &said.person, &shown);
            // "wants to volunteer next month": a plan's statement tells its time as a date,
            // as a statement kept as said does (the value, its slot's key, stays as said).
            let dated = said.date.as_ref().filter(|d| !d.phrase.is_empty());
            if let (Some(d), BeliefType::Goal) = (dated, s.kind) {
                s.statement = s.statement.replacen(&d.phrase, &people::when(d), 1);
            }
            push(&mut slots, s);
        }
    }
    Reading { slots, kept }
}

/// Whether `value` holds most of the content words of `clause` (a rule's value that says
/// what the clause does).
fn covers(value: &str, clause: &str) -> bool {
    let content = |t: &str| -> Vec<String> {
        t.split_whitespace()
            .map(people::words::plain)
            .filter(|w| people::words::is_content_word(w))
            .collect()
    };
    let said = content(clause);
    let value = content(value);
    let held = said.iter().filter(|w| value.contains(w)).count();
    !said.is_empty() && held * 10 >= said.len() * 7
}

/// Words of a plan: what is to come.
const PLAN_WORDS: &[&str] = &[
    "going to",
    "gonna",
    "plan to",
    "planning",
    "plans to",
    "want to",
    "wants to",
    "wanna",
    "hope to",
    "hoping to",
    "would love to",
    "would like to",
    "will ",
    "'ll ",
    "thinking of",
    "thinking about",
    "aim to",
    "aiming to",
    "trying to",
    "looking to",
    "keen on",
    "considering",
    "next week",
    "next month",
    "next year",
    "someday",
    "one day",
    "dream of",
    "dreams of",
    "about to",
];

/// A clause no slot rule read, kept as the statement it makes.
fn observation(said: &people::Said) -> Signal {
    let lower = said.clause.to_lowercase();
    let after_subject: Vec<String> = lower
        .split_whitespace()
        .skip(1)
        .take(4)
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
                .to_string()
        })
        .collect();
    let emotion = super::emotion::read(&said.clause);
    let (predicate, kind) = if said.person == Person::View {
        (observed::VIEW, BeliefType::Value)
    } else if PLAN_WORDS.iter().any(|p| lower.contains(p)) {
        (observed::PLAN, BeliefType::Goal)
    } else if after_subject.iter().any(|w| people::words::is_past_verb(w))
        && !after_subject
            .iter()
            .any(|w| matches!(w.as_str(), "was" | "were" | "been") && emotion.intensity >= 0.5)
    {
        (observed::EVENT, BeliefType::Fact)
    } else if emotion.intensity >= 0.5
        && emotion.primary != mnemo_protocol::understanding::EmotionKind::Neutral
    {
        (observed::FEELING, BeliefType::Fact)
    } else {
        (observed::FACT, BeliefType::Fact)
    };
    let shown = people::display(&said.subject);
    let object = said
        .statement
        .strip_prefix(&shown)
        .map(|rest| rest.trim_start_matches("'s").trim().to_string())
        .filter(|rest| !rest.is_empty())
        .unwrap_or_else(|| said.statement.clone());
    let base = if said.subject == USER { 0.6 } else { 0.5 };
    Signal {
        subject: said.subject.clone(),
        predicate: predicate.to_string(),
        object,
        negated: false,
        kind,
        domain: None,
        statement: said.statement.clone(),
        confidence: if said.hedged { base - 0.3 } else { base },
    }
}
