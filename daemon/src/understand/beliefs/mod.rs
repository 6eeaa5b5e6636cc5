//! Beliefs a text states, by rules: identity ("my name is", "I'm a … engineer", "I live
//! in"), preferences and corrections ("I love", "never use", "use X instead of Y"),
//! constraints ("I'm allergic to", "I can't", deadlines), goals ("I want to") and facts about
//! people ("Maria is my sister", "Maria moved to Porto"), first and third person, negation
//! handled. A `Name: words` line speaks for Name; otherwise "I" is the person (`user`).
//! Questions, conditionals and turns of phrase ("I can't wait") state nothing.

mod lexicon;
mod rules;
#[cfg(test)]
mod tests;

use mnemo_protocol::belief::{BeliefType, USER};
use regex::Regex;

use super::entities::speaker_line;

pub use lexicon::domain_of;
pub use rules::{display, preference_statement};

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

/// The beliefs `text` states.
pub fn extract(text: &str) -> Vec<Signal> {
    let (speaker, said) = match speaker_line(text) {
        Some((head, said)) => (head.to_string(), said),
        None => (USER.to_string(), text),
    };
    let mut out: Vec<Signal> = Vec::new();
    for clause in clauses(said) {
        if out.len() >= MAX_SIGNALS {
            break;
        }
        let Some((clause, hedged)) = statement_clause(&clause) else {
            continue;
        };
        for mut s in rules::read(&clause, &speaker) {
            if hedged {
                s.confidence = (s.confidence - 0.3).max(0.2);
            }
            if !out.iter().any(|o| {
                o.subject == s.subject && o.predicate == s.predicate && o.object == s.object
            }) {
                out.push(s);
            }
        }
    }
    out.truncate(MAX_SIGNALS);
    out
}

/// A clause and whether it ends in a question mark.
struct Clause {
    text: String,
    question: bool,
}

static SPLIT: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
    Regex::new(r"(?i)(?:(?:,\s*|\s+)(?:and|but|so|because|although|though|while)\s+|,\s+)(i\b|i'm\b|i’m\b|my\b|i've\b)")
        .expect("valid pattern")
});

/// Sentences, and within them the clauses a conjunction or a comma starts anew in the first
/// person ("I live in Porto and I work at Acme", "I'm not a developer, I'm a designer"); a
/// condition stays whole, so its consequence is not read as a statement.
fn clauses(text: &str) -> Vec<Clause> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes: Vec<(usize, char)> = text.char_indices().collect();
    let mut push = |piece: &str, question: bool| {
        let opening = piece.trim_start().to_lowercase();
        if CONDITIONS.iter().any(|c| opening.starts_with(c)) {
            out.push(Clause {
                text: piece.trim().to_string(),
                question,
            });
            return;
        }
        let mut from = 0;
        for m in SPLIT.captures_iter(piece) {
            let (whole, next) = (m.get(0).expect("match"), m.get(1).expect("group"));
            out.push(Clause {
                text: piece[from..whole.start()].trim().to_string(),
                question: false,
            });
            from = next.start();
        }
        out.push(Clause {
            text: piece[from..].trim().to_string(),
            question,
        });
    };
    for (i, &(at, c)) in bytes.iter().enumerate() {
        let next = bytes.get(i + 1).map(|&(_, n)| n);
        // "3.5" and "e.g." are not sentence ends; a full stop before a space or the end is.
        let ends = matches!(c, '!' | '?' | ';' | '\n')
            || (c == '.' && next.is_none_or(char::is_whitespace));
        if ends {
            push(&text[start..at], c == '?');
            start = at + c.len_utf8();
        }
    }
    push(&text[start..], false);
    out.retain(|c| !c.text.is_empty());
    out
}

/// Openings of a condition: what follows the comma holds only if it holds.
const CONDITIONS: &[&str] = &["if ", "when ", "unless ", "whenever ", "once ", "in case "];

static FILLER: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:(?:well|actually|btw|by the way|also|oh|so|and|but|honestly|anyway|yeah|yes|no|ok|okay|hey|hi|hello|lol|haha|fyi|just so you know|for the record|just a reminder|reminder|remember|note|fun fact|to be honest|tbh|these days|nowadays|now|lately|recently)\b(?: that)?[,:!]?\s+)+",
    )
    .expect("valid pattern")
});

static HEDGE: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:i think|i guess|i believe|i suppose|maybe|probably|perhaps)\s+(?:that\s+)?",
    )
    .expect("valid pattern")
});

/// Words that open a question (or a condition) rather than a statement.
const NOT_STATEMENTS: &[&str] = &[
    "do", "does", "did", "is", "are", "am", "was", "were", "can", "could", "would", "should",
    "will", "what", "where", "who", "whom", "when", "why", "how", "which", "have", "has", "if",
    "whether", "unless", "in case", "wonder", "i wonder", "imagine",
];

/// The clause as a statement (fillers off) and whether it was hedged; `None` for a question
/// or a condition.
fn statement_clause(c: &Clause) -> Option<(String, bool)> {
    if c.question {
        return None;
    }
    let text = c
        .text
        .trim_matches(|ch: char| matches!(ch, '"' | '“' | '”' | '(' | ')' | '*' | '-' | ' '));
    let text = FILLER.replace(text, "");
    let lower = text.to_lowercase();
    let first = lower.split_whitespace().next().unwrap_or_default();
    if NOT_STATEMENTS.contains(&first) || lower.starts_with("i wonder") {
        return None;
    }
    let hedged = HEDGE.is_match(&text);
    let text = HEDGE.replace(&text, "").to_string();
    Some((text, hedged))
}
