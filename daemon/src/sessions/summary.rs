//! A session's summary by rule: what it was about (its most frequent content words and
//! names), who it named, how it felt from beginning to end, what the person took on, and its
//! most salient lines.

use std::collections::HashMap;

use mnemo_protocol::session::{Message, Role, SessionSummary};
use mnemo_protocol::understanding::EmotionKind;

use crate::understand::entities::Mention;
use crate::understand::sentences::{
    clip, first_sentence, frequent_words, is_commitment, sentences,
};

/// Topics, names and commitments a summary lists at most.
const MAX_LISTED: usize = 6;
/// Lines a summary quotes at most.
const MAX_LINES: usize = 5;
const MAX_LINE_CHARS: usize = 160;

/// A message with what ingest read in it.
#[derive(Debug, Clone)]
pub struct Said {
    pub message: Message,
    pub salience: f32,
    pub emotion: Option<(EmotionKind, f32)>,
}

/// The summary of `said` (in turn order); `what` names the session ("Coding session");
/// `names_in` finds the names a text mentions.
pub fn summarize(
    what: &str,
    said: &[Said],
    names_in: &dyn Fn(&str) -> Vec<Mention>,
) -> SessionSummary {
    let topics = topics(said);
    let entities = names(said, names_in);
    let commitments: Vec<String> = said
        .iter()
        .filter(|s| s.message.role == Role::User)
        .flat_map(|s| sentences(&s.message.content))
        .filter(|s| is_commitment(s))
        .map(|s| clip(s, MAX_LINE_CHARS))
        .take(MAX_LISTED)
        .collect();
    let emotional_arc = arc(said);
    let mut text = format!("{what} of {} messages", said.len());
    if !topics.is_empty() {
        text.push_str(&format!(
            " about {}",
            topics[..topics.len().min(3)].join(", ")
        ));
    }
    text.push('.');
    if !entities.is_empty() {
        text.push_str(&format!(" Named {}.", entities.join(", ")));
    }
    for line in salient_lines(said) {
        text.push_str(&format!("\n- {line}"));
    }
    if !commitments.is_empty() {
        text.push_str(&format!("\nOpen: {}", commitments.join(" / ")));
    }
    SessionSummary {
        text,
        topics,
        entities,
        emotional_arc,
        commitments,
        written_by: "rules".into(),
    }
}

/// Content words said more than once, most frequent first (ties: first said).
fn topics(said: &[Said]) -> Vec<String> {
    frequent_words(said.iter().map(|s| s.message.content.as_str()), MAX_LISTED)
}

/// The names the messages mention, most mentioned first.
fn names(said: &[Said], names_in: &dyn Fn(&str) -> Vec<Mention>) -> Vec<String> {
    let mut counts: HashMap<String, (usize, usize, String)> = HashMap::new();
    for (i, s) in said.iter().enumerate() {
        for m in names_in(&s.message.content) {
            counts.entry(m.key).or_insert((0, i, m.name)).0 += 1;
        }
    }
    let mut ranked: Vec<_> = counts.into_values().collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    ranked
        .into_iter()
        .take(MAX_LISTED)
        .map(|(_, _, name)| name)
        .collect()
}

/// The dominant emotion of each third of the session (of each message when fewer than
/// three), by summed intensity; `neutral` where nothing was felt.
fn arc(said: &[Said]) -> Vec<String> {
    if said.is_empty() {
        return Vec::new();
    }
    let parts = said.len().min(3);
    (0..parts)
        .map(|p| {
            let (from, to) = (p * said.len() / parts, (p + 1) * said.len() / parts);
            let mut felt: Vec<(EmotionKind, f32)> = Vec::new();
            for (kind, intensity) in said[from..to].iter().filter_map(|s| s.emotion) {
                if kind == EmotionKind::Neutral {
                    continue;
                }
                match felt.iter_mut().find(|(k, _)| *k == kind) {
                    Some(f) => f.1 += intensity,
                    None => felt.push((kind, intensity)),
                }
            }
            felt.into_iter()
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .map_or(EmotionKind::Neutral, |(k, _)| k)
                .to_string()
        })
        .collect()
}

/// The first sentences of the most salient messages of the person (of anyone when the
/// person said nothing), in turn order.
fn salient_lines(said: &[Said]) -> Vec<String> {
    let person: Vec<&Said> = said
        .iter()
        .filter(|s| s.message.role == Role::User)
        .collect();
    let mut pool: Vec<&Said> = if person.is_empty() {
        said.iter().collect()
    } else {
        person
    };
    pool.sort_by(|a, b| {
        b.salience
            .total_cmp(&a.salience)
            .then(a.message.turn.cmp(&b.message.turn))
    });
    pool.truncate(MAX_LINES);
    pool.sort_by_key(|s| s.message.turn);
    let mut seen = std::collections::HashSet::new();
    pool.into_iter()
        .map(|s| first_sentence(&s.message.content, MAX_LINE_CHARS))
        .filter(|l| seen.insert(l.to_lowercase()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(turn: u64, role: Role, content: &str) -> Message {
        Message {
            memory_id: format!("m{turn}"),
            role,
            turn,
            content: content.into(),
            at: "2026-01-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn a_session_summary_says_what_who_how_and_what_is_open() {
        let messages = [
            message(
                1,
                Role::User,
                "I'm worried the database migration will break the release.",
            ),
            message(
                2,
                Role::Assistant,
                "The migration can run in a transaction.",
            ),
            message(
                3,
                Role::User,
                "Maria reviewed the migration script yesterday.",
            ),
            message(4, Role::Assistant, "Then the release can go ahead."),
            message(
                5,
                Role::User,
                "Great, I'll tag the release tonight. I'm so happy it worked!",
            ),
        ];
        let emotions = [
            Some((EmotionKind::Fear, 0.6)),
            None,
            Some((EmotionKind::Neutral, 0.0)),
            None,
            Some((EmotionKind::Joy, 0.8)),
        ];
        let said: Vec<Said> = messages
            .iter()
            .zip(emotions)
            .map(|(message, emotion)| Said {
                message: message.clone(),
                salience: 5.0,
                emotion,
            })
            .collect();
        let known = |text: &str| crate::understand::entities::extract(text, &|key| key == "maria");
        let s = summarize("Coding session", &said, &known);
        assert_eq!(s.topics[..2], ["migration", "release"]);
        assert_eq!(s.entities, ["Maria"]);
        assert_eq!(s.emotional_arc, ["fear", "neutral", "joy"]);
        assert_eq!(s.commitments, ["Great, I'll tag the release tonight."]);
        assert!(
            s.text
                .starts_with("Coding session of 5 messages about migration, release"),
            "{}",
            s.text
        );
        assert!(s
            .text
            .contains("- Maria reviewed the migration script yesterday."));
        assert!(
            !s.text.contains("transaction"),
            "the person's lines are quoted"
        );
        assert_eq!(s.written_by, "rules");
    }

    #[test]
    fn an_empty_session_has_an_empty_summary() {
        let s = summarize("Chat", &[], &|_| Vec::new());
        assert_eq!(s.text, "Chat of 0 messages.");
        assert!(s.topics.is_empty() && s.emotional_arc.is_empty());
    }
}
