//! Salience from eight named factors, each 0–1 and each read by a small rule, combined by the
//! weights of the config's `[salience]` section. A weight is how far its factor alone lifts
//! salience from an ordinary remark's toward 10; factors combine like independent reasons
//! (1 − Π(1 − wᵢ·fᵢ)), so no one of them can push past 10 and each one more still counts.

use mnemo_protocol::understanding::{Emotion, SalienceFactors};

use super::dates::DateSpan;
use super::emotion::words;
use super::entities::{is_relation, EntityKind, Mention};
use crate::config::SalienceConfig;

/// Where an ordinary remark starts, 0–1 (× 10 for salience).
const BASE: f32 = 0.25;

const FIRST_PERSON: &[&str] = &[
    "i", "i'm", "i've", "i'd", "i'll", "me", "my", "mine", "myself",
];
const FIRST_PERSON_PLURAL: &[&str] = &["we", "we're", "we've", "us", "our", "ours", "ourselves"];
/// The closest relations: family and partners.
const CLOSE: &[&str] = &[
    "wife",
    "husband",
    "partner",
    "mother",
    "mom",
    "mum",
    "father",
    "dad",
    "son",
    "daughter",
    "sister",
    "brother",
    "kid",
    "kids",
    "child",
    "children",
    "baby",
    "girlfriend",
    "boyfriend",
    "fiance",
    "fiancé",
    "fiancée",
    "grandma",
    "grandmother",
    "grandpa",
    "grandfather",
    "family",
    "parents",
];
const MARKERS: &[&str] = &[
    "remember",
    "important",
    "don't forget",
    "never forget",
    "note that",
    "make sure",
    "keep in mind",
    "crucial",
    "essential",
    "always",
    "never",
    "from now on",
];
const ACTIONS: &[&str] = &[
    "need to",
    "needs to",
    "have to",
    "has to",
    "must",
    "should",
    "will",
    "i'll",
    "we'll",
    "going to",
    "gonna",
    "plan to",
    "planning to",
    "promise",
    "promised",
    "remind",
    "todo",
    "to-do",
    "schedule",
    "book",
    "call",
    "buy",
    "send",
    "finish",
    "submit",
    "fix",
    "pay",
];
const DEADLINE_WORDS: &[&str] = &["deadline", "due", "expires", "appointment"];

/// Everything salience is read from.
pub struct Evidence<'a> {
    pub text: &'a str,
    pub emotion: &'a Emotion,
    pub mentions: &'a [Mention],
    pub date: Option<&'a DateSpan>,
    /// 0–1, from the vector (see `ingest::novelty`); 0.5 when unknown.
    pub novelty: f32,
}

/// Whole-word (or whole-phrase) occurrences of `phrases` in the padded lower-case text.
fn occurrences(padded: &str, phrases: &[&str]) -> usize {
    phrases
        .iter()
        .map(|p| padded.matches(&format!(" {p} ")).count())
        .sum()
}

pub fn factors(e: &Evidence) -> SalienceFactors {
    let words = words(e.text);
    let padded = format!(" {} ", words.join(" "));
    let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    let self_reference = if has(FIRST_PERSON) {
        1.0
    } else if has(FIRST_PERSON_PLURAL) {
        0.5
    } else {
        0.0
    };
    let named_person = e
        .mentions
        .iter()
        .any(|m| m.kind == EntityKind::Person && m.relation.as_deref() != Some("speaker"));
    let relationship = if has(CLOSE) {
        1.0
    } else if words.iter().any(|w| is_relation(w)) {
        0.7
    } else if named_person {
        0.4
    } else {
        0.0
    };
    let temporal = match e.date {
        Some(d) if d.deadline => 1.0,
        _ if has(DEADLINE_WORDS) => 0.8,
        Some(_) => 0.6,
        None => 0.0,
    };
    let explicit_marking = if occurrences(&padded, MARKERS) > 0 || e.text.contains("!!") {
        1.0
    } else {
        0.0
    };
    let action_density = (occurrences(&padded, ACTIONS) as f32 / 2.0).min(1.0);
    let numbers = words
        .iter()
        .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
        .count();
    let details = (e.mentions.len() + numbers) as f32 / 4.0;
    let context_richness = 0.7 * details.min(1.0) + 0.3 * (words.len() as f32 / 30.0).min(1.0);
    SalienceFactors {
        emotional_intensity: e.emotion.intensity,
        novelty: e.novelty.clamp(0.0, 1.0),
        self_reference,
        relationship,
        temporal,
        explicit_marking,
        action_density,
        context_richness,
    }
}

/// Salience 0–10 from the factors. Very short texts ("ok", "lol") are scaled down: they
/// carry too little to matter whatever their words.
pub fn score(f: &SalienceFactors, weights: &SalienceConfig, word_count: usize) -> f32 {
    let w = weights.as_factors();
    let keep: f32 = f
        .named()
        .iter()
        .zip(w.named())
        .map(|((_, value), (_, weight))| 1.0 - (weight * value).clamp(0.0, 1.0))
        .product();
    let brevity = (0.5 + word_count as f32 / 8.0).min(1.0);
    (10.0 * (1.0 - (1.0 - BASE) * keep) * brevity).clamp(0.0, 10.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::understand::{read, Reading};

    fn salience(text: &str) -> (f32, Reading) {
        let reading = read(text, 1_683_730_800_000_000, &[]);
        let words = words(text).len();
        (
            score(&reading.factors, &SalienceConfig::default(), words),
            reading,
        )
    }

    #[test]
    fn salience_orders_as_a_person_would() {
        let cases = [
            ("ok", 0.0, 3.0),
            ("The weather report says rain tomorrow", 3.0, 5.5),
            ("Remember: my daughter is allergic to peanuts", 7.0, 10.0),
            (
                "I'm so excited, my wife and I got married on 12 May!",
                7.5,
                10.0,
            ),
            ("I have to send the tax forms by Friday", 6.0, 9.0),
        ];
        for (text, lo, hi) in cases {
            let (s, _) = salience(text);
            assert!((lo..=hi).contains(&s), "{text}: {s} not in {lo}..={hi}");
        }
    }

    #[test]
    fn each_factor_reads_its_own_signal() {
        // (text, factor, lowest, highest)
        let cases: [(&str, &str, f32, f32); 14] = [
            ("I'm devastated", "emotional_intensity", 0.9, 1.0),
            ("The bus leaves at noon", "emotional_intensity", 0.0, 0.0),
            ("I think so", "self_reference", 1.0, 1.0),
            ("We think so", "self_reference", 0.5, 0.5),
            ("They think so", "self_reference", 0.0, 0.0),
            ("my wife loves jazz", "relationship", 1.0, 1.0),
            ("my boss called", "relationship", 0.7, 0.7),
            ("the report is due by 2023-05-19", "temporal", 1.0, 1.0),
            ("we met yesterday", "temporal", 0.6, 0.6),
            ("I have 3 cats", "temporal", 0.0, 0.0),
            (
                "Important: the key is under the mat",
                "explicit_marking",
                1.0,
                1.0,
            ),
            ("the key is under the mat", "explicit_marking", 0.0, 0.0),
            (
                "I need to call the dentist and buy milk",
                "action_density",
                1.0,
                1.0,
            ),
            ("the sky is blue", "action_density", 0.0, 0.0),
        ];
        for (text, name, lo, hi) in cases {
            let (_, reading) = salience(text);
            let value = reading
                .factors
                .named()
                .into_iter()
                .find(|(n, _)| *n == name)
                .unwrap()
                .1;
            assert!(
                (lo..=hi).contains(&value),
                "{text}: {name} = {value}, not in {lo}..={hi}"
            );
        }
    }

    #[test]
    fn weights_come_from_the_config() {
        let text = "Remember the code is 4417";
        let reading = read(text, 0, &[]);
        let mut weights = SalienceConfig::default();
        let with = score(&reading.factors, &weights, 5);
        weights.explicit_marking = 0.0;
        let without = score(&reading.factors, &weights, 5);
        assert!(with > without + 1.0, "{with} vs {without}");
    }
}
