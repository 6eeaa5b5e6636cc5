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
pub mod people;
pub mod salience;
pub mod sentences;

use mnemo_protocol::understanding::{Emotion, SalienceFactors};

use dates::DateSpan;
use entities::Mention;

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
