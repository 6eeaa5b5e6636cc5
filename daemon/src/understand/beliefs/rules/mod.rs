//! The patterns, each a regex over one statement clause and what the match says. First
//! person patterns speak for the speaker; third person ones for a name or "my sister".

use std::sync::LazyLock;

use mnemo_protocol::belief::{BeliefType, USER};
use regex::{Captures, Regex};

mod changes;
pub use changes::{LEFT, OPEN};
pub use life::pets_mentioned;
mod identity;
mod life;
mod needs;
mod others;
mod tastes;

use super::lexicon::{
    domain_of, gerund, is_idiom_after_cant, is_idiom_after_dont, is_not_goal, is_role,
};
use super::Signal;
use crate::understand::entities::{is_common_word, is_relation};
use crate::understand::people::display;

/// Who a clause is about, as written before the verb.
const SUBJECT: &str = r"(?P<subj>(?i:my\s+)[a-z]+|[A-Z][\p{L}'’-]+(?:\s+[A-Z][\p{L}'’-]+)?)";
/// First person: "I", "I'm", "I've".
const I: &str = r"(?i:i)";

/// What a match says.
type Read = Box<dyn Fn(&Captures, &Who) -> Vec<Signal> + Send + Sync>;

struct Rule {
    pattern: Regex,
    read: Read,
}

/// The speaker "I" stands for, and the owner "my" names.
pub struct Who<'a> {
    speaker: &'a str,
}

impl Who<'_> {
    /// "my sister" → "user's sister"; a name stays as written; `None` for a pronoun or a word
    /// that opens sentences.
    fn subject(&self, raw: &str) -> Option<String> {
        let lower = raw.to_lowercase();
        if let Some(rel) = lower.strip_prefix("my ") {
            let rel = rel.trim();
            return is_relation(rel).then(|| format!("{}'s {rel}", self.speaker));
        }
        let first = lower.split_whitespace().next().unwrap_or_default();
        (!is_common_word(first) && !matches!(first, "he" | "she" | "they" | "it" | "i"))
            .then(|| raw.to_string())
    }
}

fn rule(
    pattern: &str,
    read: impl Fn(&Captures, &Who) -> Vec<Signal> + Send + Sync + 'static,
) -> Rule {
    Rule {
        pattern: Regex::new(&format!("^{pattern}")).unwrap_or_else(|e| panic!("{pattern}: {e}")),
        read: Box::new(read),
    }
}

/// How a rule reads its value (group `v`): as matched (a name, a number), lower-cased, or
/// cleaned ([`clean`]) and at most so many words.
#[derive(Debug, Clone, Copy)]
enum Take {
    AsIs,
    Lower,
    Clean {
        cut_at_and: bool,
        words: usize,
    },
    /// A place or organisation ([`where_value`]).
    Where,
}

fn take(raw: &str, how: Take) -> Option<String> {
    match how {
        Take::AsIs => Some(raw.to_string()),
        Take::Lower => Some(raw.to_lowercase()),
        Take::Clean { cut_at_and, words } => value(raw, cut_at_and, words),
        Take::Where => where_value(raw),
    }
}

/// A place or organisation.
const PLACE: Take = Take::Where;

/// Words that open what comes after a place or organisation: "Stripe on payments",
/// "a startup in Berlin since May".
const AFTER_A_PLACE: &[&str] = &[
    "on",
    "in",
    "as",
    "for",
    "with",
    "since",
    "last",
    "this",
    "next",
    "because",
    "after",
    "before",
    "from",
    "until",
    "during",
    "where",
    "doing",
    "working",
    "today",
    "yesterday",
    "tomorrow",
    "now",
    "full-time",
    "part-time",
    "remotely",
    "again",
    "recently",
    "soon",
];

/// A place or organisation at the start of `raw`: a name's capitalised words ("Bank of
/// America", "St Mary's Hospital", "Google" of "Google as an SRE"), or the words up to what
/// opens the rest ("the city council", "a startup" of "a startup in Berlin"); six words at most.
fn where_value(raw: &str) -> Option<String> {
    let words: Vec<&str> = raw.split_whitespace().collect();
    let ends = |w: &str| w.ends_with([',', '.', '!', '?', ';', ':', ')']);
    fn bare(w: &str) -> &str {
        w.trim_matches(|c: char| matches!(c, ',' | '.' | '!' | '?' | ';' | ':' | '"' | '(' | ')'))
    }
    let proper = words
        .first()
        .is_some_and(|w| bare(w).starts_with(char::is_uppercase));
    let mut n = 0;
    while n < words.len() {
        let w = bare(words[n]);
        let keep = if proper {
            let connector = matches!(
                w,
                "of" | "de" | "do" | "da" | "del" | "von" | "van" | "la" | "le" | "&"
            ) && words
                .get(n + 1)
                .is_some_and(|x| bare(x).starts_with(char::is_uppercase));
            w.starts_with(char::is_uppercase) || w.starts_with(char::is_numeric) || connector
        } else {
            !AFTER_A_PLACE.contains(&w.to_lowercase().as_str()) && w.to_lowercase() != "and"
        };
        if !keep {
            break;
        }
        n += 1;
        if ends(words[n - 1]) {
            break;
        }
    }
    value(&words[..n].join(" "), true, 6)
}

/// A belief of the speaker: `predicate` is group `v`, negated when group `neg` matched.
fn own(
    kind: BeliefType,
    predicate: &'static str,
    how: Take,
) -> impl Fn(&Captures, &Who) -> Vec<Signal> + Send + Sync {
    move |c, w| {
        one(take(group(c, "v"), how), |v| {
            fact(w.speaker, kind, predicate, v, negated(c))
        })
    }
}

/// The same of the rule's subject (a name, "my sister").
fn theirs(
    kind: BeliefType,
    predicate: &'static str,
    how: Take,
) -> impl Fn(&Captures, &Who) -> Vec<Signal> + Send + Sync {
    move |c, w| {
        third(c, w, |s, v, n| {
            take(v, how).map(|v| fact(s, kind, predicate, v, n))
        })
    }
}

/// One belief per item of group `v` ("shellfish and eggs"), of the speaker or, with a
/// `subj` group, of the subject.
fn each(
    kind: BeliefType,
    predicate: &'static str,
) -> impl Fn(&Captures, &Who) -> Vec<Signal> + Send + Sync {
    move |c, w| {
        let subject = match c.name("subj") {
            Some(s) => match w.subject(s.as_str()) {
                Some(s) => s,
                None => return vec![],
            },
            None => w.speaker.to_string(),
        };
        items(group(c, "v"))
            .into_iter()
            .map(|item| fact(&subject, kind, predicate, item, negated(c)))
            .collect()
    }
}

/// The text of group `name`, or "".
fn group<'a>(c: &'a Captures, name: &str) -> &'a str {
    c.name(name).map_or("", |m| m.as_str())
}

/// Ends a value at what starts another thought: ", because …", " and I …", "now".
/// How long something has held ("for ten years", "for a while"): not part of the value.
static DURATION: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
    Regex::new(r"(?i)\s+for\s+(?:(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|many|several|some|the last|the past|over|almost|nearly|about)\s+)+(?:years?|months?|weeks?|days?|decades?|while|ages)\b")
        .expect("valid pattern")
});

pub fn clean(value: &str, cut_at_and: bool) -> String {
    let mut v = value.trim().to_string();
    let lower = v.to_lowercase();
    let mut cuts = vec![
        ",",
        " because ",
        " but ",
        " since ",
        " when ",
        " which ",
        " who ",
        " so that ",
        " so ",
        " as ",
        " if ",
        " though ",
        " although ",
        " where ",
        " with my ",
        " — ",
        " - ",
        " (",
        ":",
    ];
    if cut_at_and {
        cuts.push(" and ");
    }
    let duration = DURATION.find(&v).map(|m| m.start());
    if let Some(at) = cuts
        .iter()
        .filter_map(|c| lower.find(c))
        .chain(duration)
        .min()
    {
        v.truncate(at);
    }
    let tails = [
        " now",
        " anymore",
        " any more",
        " these days",
        " nowadays",
        " at the moment",
        " right now",
        " currently",
        " too",
        " as well",
        " a lot",
        " so much",
        " very much",
        " lately",
        " recently",
        " again",
        " though",
        " forever",
        " tbh",
        " lol",
        " haha",
        " actually",
        " really",
    ];
    loop {
        let trimmed = v.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '+' && c != ')');
        let lower = trimmed.to_lowercase();
        match tails.iter().find(|t| lower.ends_with(*t)) {
            Some(t) => v = trimmed[..trimmed.len() - t.len()].to_string(),
            None => {
                v = trimmed.to_string();
                break;
            }
        }
    }
    // A quotation's closing mark went with the punctuation: put it back.
    for (open, close) in [('"', '"'), ('“', '”')] {
        let opened = v.chars().filter(|c| *c == open).count();
        let closed = v.chars().filter(|c| *c == close).count();
        if (open == close && opened % 2 == 1) || (open != close && opened > closed) {
            v.push(close);
        }
    }
    v.trim().to_string()
}

/// A value of at most `words` words, or nothing.
fn value(raw: &str, cut_at_and: bool, words: usize) -> Option<String> {
    let v = clean(raw, cut_at_and);
    let n = v.split_whitespace().count();
    (n >= 1 && n <= words).then_some(v)
}

/// The first word of `v`, lower case.
fn first_word(v: &str) -> String {
    let word = v.split_whitespace().next().unwrap_or_default();
    word.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
        .to_lowercase()
}

/// Words after "always" / "never" that make no instruction: a past ("never saw"), a state
/// ("always here").
const NOT_INSTRUCTIONS: &[&str] = &[
    "saw", "had", "was", "were", "did", "knew", "thought", "got", "felt", "went", "came", "made",
    "took", "been", "here", "there", "so", "such", "a", "the", "good", "great",
];

/// An instruction for the assistant: "always …" / "never …" said by the person (a line of
/// someone else's chat encourages its listener, it does not instruct the assistant).
fn instructs(w: &Who, action: &str) -> bool {
    let first = first_word(action);
    w.speaker == USER && !NOT_INSTRUCTIONS.contains(&first.as_str()) && !first.ends_with("ed")
}

/// Whether the rule's `neg` group matched ("don't", "not", "no longer").
fn negated(c: &Captures) -> bool {
    c.name("neg").is_some()
}

/// Groups `a` and `b` cleaned, each at most its number of words; nothing unless both are.
fn pair(c: &Captures, a: (&str, usize), b: (&str, usize)) -> Option<(String, String)> {
    Some((
        value(group(c, a.0), false, a.1)?,
        value(group(c, b.0), false, b.1)?,
    ))
}

/// The belief `make` forms from one value, when there is one.
fn one(v: Option<String>, make: impl FnOnce(String) -> Signal) -> Vec<Signal> {
    v.map(make).into_iter().collect()
}

/// "I prefer A over B", "use A instead of B": A preferred, B avoided.
fn prefer_over(c: &Captures, w: &Who) -> Vec<Signal> {
    let Some((a, b)) = pair(c, ("a", 5), ("b", 5)) else {
        return vec![];
    };
    vec![
        preference(w.speaker, a, "prefer"),
        preference(w.speaker, b, "avoid"),
    ]
}

/// "my favourite WHAT is V", "V is my favourite WHAT".
fn favourite(c: &Captures, w: &Who) -> Vec<Signal> {
    let Some((what, v)) = pair(c, ("what", 3), ("v", 5)) else {
        return vec![];
    };
    let key = format!("favorite {}", what.to_lowercase());
    vec![preference(w.speaker, key, &v)]
}

/// "WHAT is due WHEN", "the deadline for WHAT is WHEN", "I have to WHAT by WHEN".
fn deadline(c: &Captures, w: &Who) -> Vec<Signal> {
    let Some(when) = value(group(c, "when"), false, 5) else {
        return vec![];
    };
    let what = value(group(c, "what"), false, 8).unwrap_or_else(|| "it".into());
    let object = format!("{what} due {when}");
    vec![fact(
        w.speaker,
        BeliefType::Constraint,
        "deadline",
        object,
        false,
    )]
}

/// What a predicate says in words, and its negation.
fn phrase(predicate: &str) -> (&'static str, &'static str) {
    match predicate {
        "lives_in" => ("lives in", "no longer lives in"),
        "works_at" => ("works at", "no longer works at"),
        "left" => ("left", "left"),
        "studies" => ("studies", "no longer studies"),
        "studied" => ("studied", "did not study"),
        "studies_at" => ("studies at", "no longer studies at"),
        "studied_at" => ("studied at", "did not study at"),
        "from" => ("is from", "is not from"),
        "speaks" => ("speaks", "does not speak"),
        "married_to" => ("is married to", "is no longer married to"),
        "allergic_to" => ("is allergic to", "is not allergic to"),
        "cannot" => ("cannot", "can"),
        "occupation" => ("is a", "is not a"),
        "goal" => ("wants to", "does not want to"),
        "diet" => ("is", "is not"),
        "condition" => ("has", "does not have"),
        _ => ("is", "is not"),
    }
}

/// "Maria is my sister", said by `speaker`: Maria's relation to them. The user's relations
/// are the bare word ("sister"); another speaker's name them ("sister of Caroline"), so each
/// person's relations stay apart.
pub fn kin(name: &str, relation: &str, speaker: &str) -> Signal {
    let object = if speaker == USER {
        relation.to_string()
    } else {
        format!("{relation} of {speaker}")
    };
    Signal {
        subject: name.to_string(),
        predicate: "relation".into(),
        statement: format!("{name} is {}'s {relation}", display(speaker)),
        object,
        negated: false,
        kind: BeliefType::Fact,
        domain: None,
        confidence: 0.6,
    }
}

/// A fact, identity item, constraint or goal about `subject`.
fn fact(subject: &str, kind: BeliefType, predicate: &str, object: String, negated: bool) -> Signal {
    Signal {
        subject: subject.to_string(),
        predicate: predicate.to_string(),
        statement: statement(subject, predicate, &object, negated),
        object,
        negated,
        kind,
        domain: None,
        confidence: if subject == USER { 0.7 } else { 0.6 },
    }
}

/// A fact in words: "User lives in Porto", "Maria no longer works at Acme".
pub fn statement(subject: &str, predicate: &str, object: &str, negated: bool) -> String {
    let who = display(subject);
    match predicate {
        "name" => format!("{who}'s name is {object}"),
        "age" => format!("{who} is {object} years old"),
        "pronouns" => format!("{who}'s pronouns are {object}"),
        "birthday" => format!("{who}'s birthday is {object}"),
        "deadline" => format!("{who} has a deadline: {object}"),
        "pet_name" => format!("{who}'s pet is named {object}"),
        "does" if negated => format!("{who} has given up {object}"),
        "does" => format!("{who}'s pastimes include {object}"),
        "has_pet" => {
            let article = if object.starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            };
            let verb = if negated { "no longer has" } else { "has" };
            format!("{who} {verb} {article} {object}")
        }
        "occupation" => {
            let (yes, no) = phrase(predicate);
            let verb = if negated { no } else { yes };
            let article = if object.starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            };
            format!(
                "{who} {} {object}",
                verb.replace(" a", &format!(" {article}"))
            )
        }
        _ => {
            let (yes, no) = phrase(predicate);
            format!("{who} {} {object}", if negated { no } else { yes })
        }
    }
}

/// A preference in words: like, dislike, prefer, avoid, always, never, or a chosen value.
pub fn preference_statement(subject: &str, key: &str, value: &str) -> String {
    let who = display(subject);
    match value.to_lowercase().as_str() {
        "like" | "likes" | "love" => format!("{who} likes {key}"),
        "dislike" | "dislikes" | "hate" => format!("{who} dislikes {key}"),
        "prefer" => format!("{who} prefers {key}"),
        "avoid" => format!("{who} avoids {key}"),
        "always" => format!("{who} always wants {key}"),
        "never" => format!("{who} never wants {key}"),
        _ => format!("{who} prefers {value} for {key}"),
    }
}

/// A preference of `subject` about `key`: like, dislike, prefer, avoid, or a chosen value.
fn preference(subject: &str, key: String, value: &str) -> Signal {
    let statement = preference_statement(subject, &key, value);
    Signal {
        subject: subject.to_string(),
        domain: Some(domain_of(&format!("{key} {value}")).to_string()),
        predicate: key,
        object: value.to_string(),
        negated: false,
        kind: BeliefType::Preference,
        statement,
        confidence: if subject == USER { 0.7 } else { 0.6 },
    }
}

/// A standing instruction: always or never do `action`.
fn instruction(kind: BeliefType, subject: &str, action: String, always: bool) -> Signal {
    let word = if always { "always" } else { "never" };
    let statement = match kind {
        BeliefType::Rule => {
            let mut s = format!("{word} {action}");
            s[..1].make_ascii_uppercase();
            s
        }
        // "John usually works nights": the habit's verb agrees with its subject.
        _ => {
            let (verb, rest) = action.split_once(' ').unwrap_or((action.as_str(), ""));
            let verb = if crate::understand::people::words::is_plain_present(verb) {
                crate::understand::people::words::third_person(verb)
            } else {
                verb.to_string()
            };
            format!("{} {word} {verb} {rest}", display(subject))
                .trim_end()
                .to_string()
        }
    };
    Signal {
        subject: subject.to_string(),
        domain: Some(domain_of(&action).to_string()),
        predicate: action,
        object: word.to_string(),
        negated: false,
        kind,
        statement,
        confidence: 0.7,
    }
}

/// Splits "French and Spanish" / "nuts, shellfish and eggs" into items.
fn items(list: &str) -> Vec<String> {
    list.split([','])
        .flat_map(|p| p.split(" and "))
        .flat_map(|p| p.split(" or "))
        .map(|p| clean(p, true))
        .filter(|p| !p.is_empty() && p.split_whitespace().count() <= 4)
        .collect()
}

fn negative(word: &str) -> bool {
    let w = word.to_lowercase();
    w.contains("n't")
        || w.contains("n’t")
        || w.contains("not")
        || w.contains("never")
        || w.contains("no longer")
}

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    // The first rule of a family that yields wins, so the order matters.
    [
        changes::rules(),
        life::rules(),
        identity::rules(),
        tastes::rules(),
        needs::rules(),
        others::rules(),
    ]
    .into_iter()
    .flatten()
    .collect()
});

/// A third-person rule's subject resolved (a pronoun or common word states nothing).
fn third(c: &Captures, w: &Who, make: impl Fn(&str, &str, bool) -> Option<Signal>) -> Vec<Signal> {
    let Some(subject) = w.subject(group(c, "subj")) else {
        return vec![];
    };
    let negated = c.name("neg").is_some_and(|n| negative(n.as_str()));
    make(&subject, group(c, "v"), negated).into_iter().collect()
}

/// Every rule that matches `clause` (said by `speaker`); the first rule of a family wins.
pub fn read(clause: &str, speaker: &str) -> Vec<Signal> {
    let who = Who { speaker };
    for r in RULES.iter() {
        if let Some(c) = r.pattern.captures(clause) {
            let found = (r.read)(&c, &who);
            if !found.is_empty() {
                return found;
            }
        }
    }
    Vec::new()
}
