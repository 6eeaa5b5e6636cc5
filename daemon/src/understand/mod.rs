//! Ingest-time analysis: pure functions of the text and when it was said. Rules at ingest;
//! each part is small and named so a score can be explained and tuned. [`llm`] reads the
//! configured model's second reading (consolidation's refine phase) under the same limits.

pub mod aliases;
pub mod beliefs;
pub mod dates;
pub mod emotion;
pub mod entities;
pub mod llm;
pub mod paths;
pub mod salience;
pub mod sentences;

use mnemo_protocol::understanding::{Emotion, SalienceFactors};

use dates::DateSpan;
use entities::Mention;

/// The entities `text` names ([`entities::extract`]) but the listener a chat line greets
/// ([`aliases::addressed`]: "Hey Mel!", "Thanks, Mel."), unless the line names them again. A
/// greeting says who hears the remark, not what it is about: kept, every reply to Mel
/// mentioned Mel as much as what Mel said herself, and a question about Mel found the
/// replies first.
pub fn mentions(text: &str, known: &dyn Fn(&str) -> bool) -> Vec<Mention> {
    let mut found = entities::extract(text, known);
    if let Some(listener) = aliases::addressed(text) {
        let said = entities::speaker_line(text).map_or(text, |(_, said)| said);
        if times_named(said, &listener) == 1 {
            found.retain(|m| m.key != listener || m.relation.is_some());
        }
    }
    found
}

/// How often the folded name `key` occurs in `text`, word for word.
fn times_named(text: &str, key: &str) -> usize {
    let name: Vec<&str> = key.split(' ').collect();
    let words: Vec<String> = text.split_whitespace().map(entities::fold).collect();
    words
        .windows(name.len())
        .filter(|w| w.iter().zip(&name).all(|(a, b)| a == b))
        .count()
}

/// What ingest reads in one text.
#[derive(Debug, Clone)]
pub struct Reading {
    pub emotion: Emotion,
    /// Novelty is 0.5 (unknown) until the vector is compared with the store's.
    pub factors: SalienceFactors,
    pub date: Option<DateSpan>,
}

/// Reads `text`, said at `said_at` (UTC microseconds), naming `mentions`.
pub fn read(text: &str, said_at: i64, mentions: &[Mention]) -> Reading {
    let emotion = emotion::read(text);
    let date = dates::find(text, said_at);
    let factors = salience::factors(&salience::Evidence {
        text,
        emotion: &emotion,
        mentions,
        date: date.as_ref(),
        novelty: 0.5,
    });
    Reading {
        emotion,
        factors,
        date,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<String> {
        mentions(text, &|_| false)
            .into_iter()
            .map(|m| m.key)
            .collect()
    }

    #[test]
    fn the_listener_a_line_greets_is_not_what_it_mentions() {
        let cases: &[(&str, &[&str])] = &[
            // Greeted and nothing more: the speaker and what the line is about.
            (
                "Maria: Hey John, how was the trip to Porto?",
                &["maria", "porto"],
            ),
            ("Maria: Thanks, John! I loved it.", &["maria"]),
            ("Maria: That sounds great, see you soon, John!", &["maria"]),
            // Greeted and spoken of again: it is about them too.
            ("Maria: Hey John, John's sister called.", &["maria", "john"]),
            // Spoken of, not greeted.
            ("Maria: I met John at the station.", &["maria", "john"]),
            // A line without a speaker greets in the same way.
            ("Hi Anna, the Berlin office is open.", &["berlin"]),
        ];
        for (text, want) in cases {
            assert_eq!(keys(text), *want, "{text}");
        }
    }
}
