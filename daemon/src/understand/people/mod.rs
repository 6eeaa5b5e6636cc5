//! What a memory tells about people, clause by clause, the way a reader follows a
//! conversation: who says it (the person, or the speaker of a `Name: …` line), who each
//! clause is about (`who`: "I", "we", "my sister Maria", "she" for the one person named
//! before), whether it tells anything (`worth`), and the clause told in the third person
//! with its time resolved (`voice`). The slot rules ([`super::beliefs`]) read the clauses
//! with their subjects made explicit; what no rule reads is kept as the statement itself.

mod clauses;
mod toward;
mod voice;
mod who;
pub mod words;
mod worth;

use mnemo_protocol::belief::USER;

pub use clauses::{clauses, Clause};
pub use voice::{their, when};
pub use who::Person;
pub use worth::points_back;

use super::dates::{self, DateSpan};
use super::entities::speaker_line;

/// One clause about someone.
#[derive(Debug, Clone)]
pub struct Said {
    pub person: Person,
    /// Whom the belief is about: `user`, a speaker's or a person's name, "user's sister".
    pub subject: String,
    /// The clause with its subject explicit and the adverbs that change no fact left out
    /// ("I now work at Stripe" → "I work at Stripe"): what the slot rules read.
    pub clause: String,
    /// The same without the time it names ("I took up yoga last year" → "I took up yoga"),
    /// for a rule whose value ends where the clause does.
    pub undated: String,
    /// The clause in the third person, its time resolved.
    pub statement: String,
    pub hedged: bool,
    /// "my sister Maria": the named person's relation to the speaker.
    pub relation: Option<String>,
    /// How much it tells; 0 when nothing (`worth`).
    pub weight: f32,
    pub date: Option<DateSpan>,
    /// Said to the listener ("Keep pushing for your dreams!"): about the speaker and them,
    /// with no clause for the slot rules.
    pub toward: bool,
}

/// A memory read for people.
#[derive(Debug, Clone)]
pub struct Heard {
    /// `user`, or the name of a `Name: …` line's speaker.
    pub speaker: String,
    pub said: Vec<Said>,
}

/// Reads `text`, said at `said_at` (UTC microseconds), to `listener` when it is a turn of
/// a chat whose other speaker is known: "you" is then them.
pub fn read(text: &str, said_at: i64, listener: Option<&str>) -> Heard {
    let (speaker, body) = match speaker_line(text) {
        Some((head, said)) => (head.to_string(), said),
        None => (USER.to_string(), text),
    };
    let shown = display(&speaker);
    let mut cx = who::Context::default();
    let mut said = Vec::new();
    for clause in clauses(&unbracketed(body)) {
        if clause.question || clause.condition {
            cx.last = None;
            continue;
        }
        let Some(s) = who::subject(&clause.text, clause.carried, &mut cx) else {
            cx.last = None;
            continue;
        };
        let to = listener.filter(|l| !fold_eq(l, &speaker));
        if let Some((told, person)) = to.and_then(|l| toward::toward(&s, l)) {
            let date = dates::find(&told, said_at);
            let subjected = who::Subjected {
                person,
                clause: told,
                ..s
            };
            said.push(Said {
                statement: voice::third(
                    &subjected.clause,
                    &subjected.person,
                    &shown,
                    date.as_ref(),
                ),
                weight: worth::weight(&subjected, date.is_some()),
                subject: speaker.clone(),
                clause: String::new(),
                undated: String::new(),
                person: subjected.person,
                hedged: subjected.hedged,
                relation: None,
                date,
                toward: true,
            });
            continue;
        }
        let subject = match &s.person {
            Person::Speaker | Person::Touched | Person::Unknown | Person::View => speaker.clone(),
            Person::Named(name) if fold_eq(name, &speaker) => speaker.clone(),
            // "My colleague Rob invited me to a yoga class": what happened to the speaker.
            Person::Named(name) if acts_on_the_speaker(&s.clause, name) => speaker.clone(),
            Person::Named(name) => name.clone(),
            Person::Kin(rel) => format!("{speaker}'s {rel}"),
        };
        let date = dates::find(&s.clause, said_at);
        let statement = voice::third(&s.clause, &s.person, &shown, date.as_ref());
        // A clause about no one it can name tells nothing of anyone; the rules still read it.
        let weight = match s.person {
            Person::Unknown => 0.0,
            _ => worth::weight(&s, date.is_some()),
        };
        // The rules read the clause without its time ("I took up yoga last year"): the
        // time is the date's, not the value's.
        let undated = match &date {
            Some(d) if !d.phrase.is_empty() => s.clause.replacen(&d.phrase, "", 1),
            _ => s.clause.clone(),
        };
        said.push(Said {
            clause: for_rules(&s.clause, &s.person),
            undated: for_rules(&undated, &s.person),
            person: s.person,
            subject,
            statement,
            hedged: s.hedged,
            relation: s.relation,
            weight,
            date,
            toward: false,
        });
    }
    Heard { speaker, said }
}

/// How a statement names its subject: "User" for the person, "User's sister".
pub fn display(subject: &str) -> String {
    match subject.strip_prefix(USER) {
        Some(rest) => format!("User{rest}"),
        None => subject.to_string(),
    }
}

/// The text without what brackets hold ("[shares a photo: …]"): notes about the turn, not
/// what was said.
fn unbracketed(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '[' => depth += 1,
            ']' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// Whether `clause`, about `name`, tells what they did to the speaker: their verb, then "me"
/// or "us" ("Rob invited me", "Mom always calls me").
fn acts_on_the_speaker(clause: &str, name: &str) -> bool {
    let lower: Vec<String> = clause
        .split_whitespace()
        .skip(name.split_whitespace().count())
        .map(words::plain)
        .collect();
    let Some(at) = lower.iter().position(|w| !words::is_adverb_between(w)) else {
        return false;
    };
    let verb = lower[at].as_str();
    let acts = words::is_past_verb(verb) || (verb.ends_with('s') && words::looks_like_a_verb(verb));
    acts && !matches!(verb, "was" | "is" | "has" | "had")
        && lower.get(at + 1).is_some_and(|o| o == "me" || o == "us")
}

fn fold_eq(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// The clause without the adverbs right after its subject that change no fact.
fn for_rules(clause: &str, person: &Person) -> String {
    let words: Vec<&str> = clause.split_whitespace().collect();
    let skip = match person {
        Person::Speaker => 1,
        Person::Touched | Person::Unknown | Person::View => 0,
        Person::Named(n) => n.split_whitespace().count(),
        Person::Kin(rel) => 1 + rel.split_whitespace().count(),
    };
    let skip = skip.min(words.len());
    let mut out: Vec<&str> = words[..skip].to_vec();
    let mut rest = words[skip..].iter().peekable();
    while let Some(w) = rest.peek() {
        if words::is_droppable_adverb(&words::plain(w)) && !w.ends_with(',') {
            rest.next();
        } else {
            break;
        }
    }
    out.extend(rest);
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn said_at() -> i64 {
        Utc.with_ymd_and_hms(2023, 5, 8, 13, 56, 0)
            .unwrap()
            .timestamp_micros()
    }

    #[test]
    fn a_turn_is_read_for_its_speaker_clause_by_clause() {
        let heard = read(
            "Caroline: Hey Mel! I went to a LGBTQ support group yesterday and it was so powerful. How are you?",
            said_at(),
            None,
        );
        assert_eq!(heard.speaker, "Caroline");
        let kept: Vec<&str> = heard
            .said
            .iter()
            .filter(|s| s.weight > 0.0)
            .map(|s| s.statement.as_str())
            .collect();
        assert_eq!(
            kept,
            ["Caroline went to a LGBTQ support group on 7 May 2023"]
        );
    }

    #[test]
    fn a_note_label_is_no_speaker() {
        let heard = read("Important: I am allergic to shellfish", said_at(), None);
        assert_eq!(heard.speaker, USER);
        let about: Vec<&Said> = heard
            .said
            .iter()
            .filter(|s| s.person != Person::Unknown)
            .collect();
        assert_eq!(about[0].clause, "I am allergic to shellfish");
    }

    #[test]
    fn subjects_are_explicit_for_the_rules() {
        let heard = read(
            "My sister Maria lives in Lisbon and works as an architect. Big news: I now work at Stripe",
            said_at(),
            None,
        );
        let clauses: Vec<(&str, &str)> = heard
            .said
            .iter()
            .filter(|s| s.person != Person::Unknown)
            .map(|s| (s.subject.as_str(), s.clause.as_str()))
            .collect();
        assert_eq!(
            clauses,
            [
                ("Maria", "Maria lives in Lisbon"),
                ("Maria", "Maria works as an architect"),
                ("user", "I work at Stripe"),
            ]
        );
        assert_eq!(heard.said[0].relation.as_deref(), Some("sister"));
    }

    #[test]
    fn what_a_speaker_says_to_the_listener_is_about_both() {
        let heard = read(
            "Gina: Wow, your studio looks great! Keep pushing for your dreams, Jon!",
            said_at(),
            Some("Jon"),
        );
        let told: Vec<&str> = heard
            .said
            .iter()
            .filter(|s| s.toward && s.weight > 0.0)
            .map(|s| s.statement.as_str())
            .collect();
        assert_eq!(
            told,
            [
                "Gina thinks Jon's studio looks great",
                "Gina encourages Jon to keep pushing for Jon's dreams"
            ]
        );
        // Without a listener, "you" is no one.
        let alone = read("Gina: Keep pushing for your dreams!", said_at(), None);
        assert!(alone.said.iter().all(|s| !s.toward));
    }

    #[test]
    fn what_someone_did_to_the_speaker_is_about_the_speaker() {
        let heard = read(
            "John: My colleague Rob invited me to a beginner's yoga class. Rob lives in Leeds.",
            said_at(),
            None,
        );
        let about: Vec<(&str, &str)> = heard
            .said
            .iter()
            .map(|s| (s.subject.as_str(), s.statement.as_str()))
            .collect();
        assert_eq!(
            about,
            [
                ("John", "Rob invited John to a beginner's yoga class"),
                ("Rob", "Rob lives in Leeds")
            ]
        );
        assert_eq!(heard.said[0].relation.as_deref(), Some("colleague"));
    }

    #[test]
    fn small_talk_tells_nothing() {
        for text in [
            "haha same!",
            "How are you?",
            "Thanks, that's so sweet!",
            "Wow, love that painting!",
        ] {
            let heard = read(text, said_at(), None);
            assert!(
                heard.said.iter().all(|s| s.weight == 0.0),
                "{text}: {:?}",
                heard.said
            );
        }
    }
}
