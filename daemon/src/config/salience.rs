//! `[salience]`: how far each factor alone lifts a memory's salience from an ordinary
//! remark's (2.5) toward 10, each 0–1. 0 turns a factor off. See `understand::salience`.

use mnemo_protocol::understanding::SalienceFactors;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SalienceConfig {
    pub emotional_intensity: f32,
    pub novelty: f32,
    pub self_reference: f32,
    pub relationship: f32,
    pub temporal: f32,
    pub explicit_marking: f32,
    pub action_density: f32,
    pub context_richness: f32,
}

impl Default for SalienceConfig {
    fn default() -> Self {
        Self {
            emotional_intensity: 0.5,
            novelty: 0.2,
            self_reference: 0.3,
            relationship: 0.35,
            temporal: 0.3,
            explicit_marking: 0.6,
            action_density: 0.3,
            context_richness: 0.25,
        }
    }
}

impl SalienceConfig {
    /// The weights in the shape of the factors they weigh.
    pub fn as_factors(&self) -> SalienceFactors {
        SalienceFactors {
            emotional_intensity: self.emotional_intensity,
            novelty: self.novelty,
            self_reference: self.self_reference,
            relationship: self.relationship,
            temporal: self.temporal,
            explicit_marking: self.explicit_marking,
            action_density: self.action_density,
            context_richness: self.context_richness,
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        match self
            .as_factors()
            .named()
            .into_iter()
            .find(|(_, w)| !(0.0..=1.0).contains(w))
        {
            Some((name, w)) => Err(format!(
                "salience.{name} is {w}; each salience weight is 0–1 (0 turns the factor off)"
            )),
            None => Ok(()),
        }
    }
}
