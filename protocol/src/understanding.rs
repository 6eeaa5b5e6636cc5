//! What ingest reads in a memory's text: its emotion, the factors its salience is made of and
//! the time it speaks about. Written once at add, returned with the memory.

use serde::{Deserialize, Serialize};

crate::name_set! {
    /// Plutchik's eight primary emotions, and none.
    EmotionKind, "emotion" {
        Joy = "joy",
        Trust = "trust",
        Fear = "fear",
        Surprise = "surprise",
        Sadness = "sadness",
        Disgust = "disgust",
        Anger = "anger",
        Anticipation = "anticipation",
        #[default]
        Neutral = "neutral",
    }
}

/// How a memory felt, from its words.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Emotion {
    pub primary: EmotionKind,
    /// 0 (none) – 1.
    pub intensity: f32,
    /// −1 (unpleasant) – 1 (pleasant).
    pub valence: f32,
    /// 0 (calm) – 1 (excited).
    pub arousal: f32,
}

/// The eight factors salience is made of, each 0–1; salience is their weighted mean scaled to
/// 0–10, with the weights of the config's `[salience]` section.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct SalienceFactors {
    /// How strongly it is felt.
    pub emotional_intensity: f32,
    /// How unlike what is already stored it is.
    pub novelty: f32,
    /// About the person themselves ("I", "my").
    pub self_reference: f32,
    /// About the people close to them.
    pub relationship: f32,
    /// Names a date or a deadline.
    pub temporal: f32,
    /// Marked as mattering ("remember", "important").
    pub explicit_marking: f32,
    /// Commitments and things to do.
    pub action_density: f32,
    /// Concrete detail: names, numbers, specifics.
    pub context_richness: f32,
}

impl SalienceFactors {
    /// `(name, value)` in a fixed order, for display.
    pub fn named(&self) -> [(&'static str, f32); 8] {
        [
            ("emotional_intensity", self.emotional_intensity),
            ("novelty", self.novelty),
            ("self_reference", self.self_reference),
            ("relationship", self.relationship),
            ("temporal", self.temporal),
            ("explicit_marking", self.explicit_marking),
            ("action_density", self.action_density),
            ("context_richness", self.context_richness),
        ]
    }
}

/// The time a memory's text speaks about ("last Saturday"), resolved against when it was said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventTime {
    /// RFC 3339, inclusive.
    pub start: String,
    /// RFC 3339, exclusive.
    pub end: String,
}
