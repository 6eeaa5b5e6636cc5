//! How a text feels, by lexicon and rules: each word of `LEXICON` lends its emotion a
//! weight; an intensifier before it ("so happy") strengthens it, a diminisher ("a bit sad")
//! weakens it, and a negation up to three words before it ("not happy", "never felt safe")
//! turns it into Plutchik's opposite at half strength. The lexicon is this project's own
//! (same licence as the code), written for everyday first-person remarks.

use std::collections::HashMap;
use std::sync::LazyLock;

use mnemo_protocol::understanding::{Emotion, EmotionKind};

use EmotionKind::*;

/// Words by emotion and how strongly they carry it (0–1).
const LEXICON: &[(EmotionKind, f32, &str)] = &[
    (Joy, 0.6, "happy glad pleased enjoy enjoyed enjoying enjoys fun nice good great lovely cheerful smile smiled smiling laugh laughed laughing delighted"),
    (Joy, 0.8, "love loved loving loves excited exciting thrilled wonderful amazing awesome fantastic joy joyful celebrate celebrated celebrating proud blessed grateful thankful yay hooray"),
    (Joy, 1.0, "ecstatic overjoyed elated euphoric blissful incredible"),
    (Trust, 0.6, "trust trusted reliable safe support supported supportive honest loyal faithful depend count confident friendly kind caring"),
    (Trust, 0.8, "believe admire respect devoted secure comforted reassured"),
    (Fear, 0.6, "worried worry worrying nervous anxious uneasy concerned unsure afraid scary scared risk"),
    (Fear, 0.8, "fear feared frightened terrified panic panicked dread dreading threatened alarmed"),
    (Fear, 1.0, "horrified petrified terror"),
    (Surprise, 0.6, "surprise surprised unexpected unexpectedly suddenly sudden wow whoa"),
    (Surprise, 0.8, "shocked astonished amazed stunned speechless"),
    (Sadness, 0.6, "sad unhappy down lonely miss missed missing sorry disappointed disappointing tired hurt cry cried crying tears lost"),
    (Sadness, 0.8, "depressed grief grieving heartbroken upset miserable gloomy loss mourning passed died"),
    (Sadness, 1.0, "devastated despair hopeless"),
    (Disgust, 0.6, "gross yuck dislike awkward"),
    (Disgust, 0.8, "disgusting disgusted nasty revolting sick awful"),
    (Disgust, 1.0, "vile repulsive"),
    (Anger, 0.6, "annoyed annoying irritated frustrated frustrating mad bothered unfair"),
    (Anger, 0.8, "angry hate hated hates furious outraged resent hostile terrible"),
    (Anger, 1.0, "rage enraged livid"),
    (Anticipation, 0.6, "hope hoping hoped plan planning expect expecting soon upcoming curious wonder"),
    (Anticipation, 0.8, "eager await awaiting anticipate looking forward can't wait cannot wait"),
];

/// Words that make the next emotion word stronger or weaker, and by how much.
const INTENSIFIERS: &[(&str, f32)] = &[
    ("very", 1.5),
    ("so", 1.5),
    ("really", 1.4),
    ("extremely", 1.8),
    ("incredibly", 1.8),
    ("super", 1.5),
    ("totally", 1.4),
    ("absolutely", 1.6),
    ("deeply", 1.6),
    ("truly", 1.4),
    ("slightly", 0.5),
    ("somewhat", 0.6),
    ("bit", 0.5),
    ("little", 0.6),
    ("kinda", 0.6),
];

const NEGATIONS: &[&str] = &[
    "not", "no", "never", "don't", "didn't", "doesn't", "isn't", "wasn't", "aren't", "weren't",
    "can't", "couldn't", "won't", "hardly", "nor", "without",
];

/// How far back a negation reaches.
const NEGATION_REACH: usize = 3;

/// Plutchik's wheel: the emotion across from each one.
fn opposite(kind: EmotionKind) -> EmotionKind {
    match kind {
        Joy => Sadness,
        Sadness => Joy,
        Trust => Disgust,
        Disgust => Trust,
        Fear => Anger,
        Anger => Fear,
        Surprise => Anticipation,
        Anticipation => Surprise,
        Neutral => Neutral,
    }
}

/// Valence (−1–1) and arousal (0–1) of each primary emotion, after Russell's circumplex.
fn affect(kind: EmotionKind) -> (f32, f32) {
    match kind {
        Joy => (0.8, 0.6),
        Trust => (0.6, 0.3),
        Anticipation => (0.4, 0.6),
        Surprise => (0.1, 0.8),
        Fear => (-0.6, 0.8),
        Sadness => (-0.7, 0.3),
        Disgust => (-0.6, 0.5),
        Anger => (-0.7, 0.9),
        Neutral => (0.0, 0.0),
    }
}

/// One-word entries, and two-word phrases keyed by their first word.
struct Lexicon {
    words: HashMap<&'static str, (EmotionKind, f32)>,
    phrases: HashMap<(&'static str, &'static str), (EmotionKind, f32)>,
}

static WORDS: LazyLock<Lexicon> = LazyLock::new(|| {
    let mut lexicon = Lexicon {
        words: HashMap::new(),
        phrases: HashMap::new(),
    };
    for &(kind, weight, list) in LEXICON {
        let tokens: Vec<&str> = list.split_whitespace().collect();
        let mut i = 0;
        while i < tokens.len() {
            // The two-word entries are written with their second word right after.
            let pair = tokens.get(i + 1).map(|next| (tokens[i], *next));
            match pair {
                Some(p @ (("looking", "forward") | ("can't", "wait") | ("cannot", "wait"))) => {
                    lexicon.phrases.insert(p, (kind, weight));
                    i += 2;
                }
                _ => {
                    lexicon.words.insert(tokens[i], (kind, weight));
                    i += 1;
                }
            }
        }
    }
    lexicon
});

/// The text's words, lower case, apostrophes kept ("can't").
pub fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .replace('’', "'")
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .map(|w| w.trim_matches('\'').to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

/// The text's emotion: the primary one with the most weight, its intensity, and the valence
/// and arousal of everything felt, weighted.
pub fn read(text: &str) -> Emotion {
    let words = words(text);
    let lexicon = &*WORDS;
    let mut totals: HashMap<EmotionKind, f32> = HashMap::new();
    let mut i = 0;
    while i < words.len() {
        let phrase = words
            .get(i + 1)
            .and_then(|next| lexicon.phrases.get(&(words[i].as_str(), next.as_str())));
        let (hit, width) = match phrase {
            Some(hit) => (Some(*hit), 2),
            None => (lexicon.words.get(words[i].as_str()).copied(), 1),
        };
        let Some((mut kind, mut weight)) = hit else {
            i += 1;
            continue;
        };
        let before = &words[i.saturating_sub(NEGATION_REACH)..i];
        if let Some(scale) = i
            .checked_sub(1)
            .and_then(|j| INTENSIFIERS.iter().find(|(w, _)| *w == words[j]))
            .map(|(_, s)| *s)
        {
            weight *= scale;
        }
        if before.iter().any(|w| NEGATIONS.contains(&w.as_str())) {
            kind = opposite(kind);
            weight *= 0.5;
        }
        *totals.entry(kind).or_default() += weight;
        i += width;
    }
    let exclamations = text.matches('!').count().min(3) as f32;
    let total: f32 = totals.values().sum();
    let Some((&primary, &strongest)) = totals
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.as_str().cmp(a.0.as_str())))
    else {
        return Emotion::default();
    };
    let (mut valence, mut arousal) = (0.0, 0.0);
    for (&kind, &weight) in &totals {
        let (v, a) = affect(kind);
        valence += v * weight / total;
        arousal += a * weight / total;
    }
    Emotion {
        primary,
        intensity: (strongest * (1.0 + 0.1 * exclamations)).min(1.0),
        valence: valence.clamp(-1.0, 1.0),
        arousal: (arousal + 0.05 * exclamations).min(1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_primary_emotion_with_negation_and_intensity() {
        // (text, primary, lowest intensity, highest intensity)
        let cases = [
            ("I'm so happy for you!", Joy, 0.85, 1.0),
            (
                "We finally got the keys to the new house, I'm thrilled",
                Joy,
                0.7,
                1.0,
            ),
            ("I am not happy with how the review went", Sadness, 0.2, 0.4),
            ("I was terrified before the surgery", Fear, 0.7, 1.0),
            (
                "Honestly a bit sad that the trip got cancelled",
                Sadness,
                0.2,
                0.4,
            ),
            (
                "My grandmother passed away last week and I'm devastated",
                Sadness,
                0.9,
                1.0,
            ),
            (
                "I'm furious that they cancelled without telling anyone",
                Anger,
                0.7,
                1.0,
            ),
            ("That smell in the fridge is disgusting", Disgust, 0.7, 0.9),
            ("Wow, I did not expect that at all", Surprise, 0.5, 1.0),
            (
                "Can't wait for the concert next month",
                Anticipation,
                0.7,
                0.9,
            ),
            (
                "I'm looking forward to seeing Maria",
                Anticipation,
                0.7,
                0.9,
            ),
            (
                "I trust her completely, she has always been honest",
                Trust,
                0.6,
                1.0,
            ),
            ("never felt safe in that neighbourhood", Disgust, 0.2, 0.4),
            ("The meeting is at 3pm in room 4", Neutral, 0.0, 0.0),
            ("Buy milk and eggs", Neutral, 0.0, 0.0),
        ];
        for (text, primary, lo, hi) in cases {
            let e = read(text);
            assert_eq!(e.primary, primary, "{text}: {e:?}");
            assert!(
                (lo..=hi).contains(&e.intensity),
                "{text}: intensity {} not in {lo}..={hi}",
                e.intensity
            );
        }
    }

    #[test]
    fn valence_and_arousal_follow_the_feeling() {
        let glad = read("I love this, it was wonderful");
        let angry = read("I'm angry and frustrated");
        let calm = read("the report is on the shared drive");
        assert!(glad.valence > 0.5, "{glad:?}");
        assert!(angry.valence < -0.5 && angry.arousal > 0.7, "{angry:?}");
        assert_eq!(calm.valence, 0.0);
        assert_eq!(calm.arousal, 0.0);
        assert!(read("I'm sad").valence < 0.0);
    }
}
