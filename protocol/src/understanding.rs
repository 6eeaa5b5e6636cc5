//! What ingest reads in a memory's text: its emotion, the factors its salience is made of and
//! the time it speaks about. Written once at add, returned with the memory.

use serde::{Deserialize, Serialize};

/// Plutchik's eight primary emotions, and none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum EmotionKind {
    Joy,
    Trust,
    Fear,
    Surprise,
    Sadness,
    Disgust,
    Anger,
    Anticipation,
    #[default]
    Neutral,
}

impl EmotionKind {
    pub const ALL: [EmotionKind; 9] = [
        Self::Joy,
        Self::Trust,
        Self::Fear,
        Self::Surprise,
        Self::Sadness,
        Self::Disgust,
        Self::Anger,
        Self::Anticipation,
        Self::Neutral,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Joy => "joy",
            Self::Trust => "trust",
            Self::Fear => "fear",
            Self::Surprise => "surprise",
            Self::Sadness => "sadness",
            Self::Disgust => "disgust",
            Self::Anger => "anger",
            Self::Anticipation => "anticipation",
            Self::Neutral => "neutral",
        }
    }
}

impl std::str::FromStr for EmotionKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|k| k.as_str()).collect();
                format!(
                    "unknown emotion `{s}`; expected one of {}",
                    names.join(", ")
                )
            })
    }
}

impl std::fmt::Display for EmotionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
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
