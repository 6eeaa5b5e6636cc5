//! The rest of a life: pets ("I have a dog named Max", "my cat Luna"), education ("I studied
//! biology at Leeds", "I graduated from MIT", "I have a degree in law") and pastimes ("my
//! hobby is knitting", "I play the guitar", "in my free time I paint").

use mnemo_protocol::belief::BeliefType::{Behavior, Fact, Identity};

use super::*;

/// Animals people keep.
const PETS: &str = "dogs?|cats?|puppy|puppies|kittens?|rabbits?|bunny|bunnies|hamsters?|parrots?|birds?|fish|turtles?|tortoises?|snakes?|lizards?|horses?|guinea pigs?|ferrets?|chickens?|geckos?|budgies?";

/// "two dogs" → "dog"; "a cat named Luna" → "cat"; singular, lower case.
fn pet(kind: &str) -> String {
    let k = kind.to_lowercase();
    match k.as_str() {
        "puppy" | "puppies" => "dog".into(),
        "kitten" | "kittens" => "cat".into(),
        "bunny" | "bunnies" => "rabbit".into(),
        "fish" => "fish".into(),
        "guinea pigs" => "guinea pig".into(),
        _ => k.strip_suffix('s').unwrap_or(&k).to_string(),
    }
}

fn has_pet(c: &Captures, w: &Who) -> Vec<Signal> {
    let mut out = vec![fact(
        w.speaker,
        Fact,
        "has_pet",
        pet(group(c, "kind")),
        negated(c),
    )];
    if let Some(name) = c.name("name").map(|n| n.as_str().to_string()) {
        if !is_common_word(&name.to_lowercase()) {
            out.push(fact(w.speaker, Fact, "pet_name", name, false));
        }
    }
    out
}

pub fn rules() -> Vec<Rule> {
    let neg = r"(?P<neg>(?i:don't|don’t|do not|no longer)\s+)?";
    vec![
        // Pets.
        rule(
            &format!(
                r"{I}(?:\s+|'ve\s+|’ve\s+){neg}(?i:have|have got|got|own|adopted|rescued)\s+(?i:(?:a|an|two|three|four|2|3|4|some|an old|a new|a little|a big|a rescue)\s+)?(?i:(?:little|big|old|young|new|rescue|black|white|ginger|tabby|golden|pet)\s+)?(?P<kind>(?i:{PETS}))\b(?:\s+(?i:named|called)\s+(?P<name>[A-Z][\p{{L}}'’-]+))?"
            ),
            has_pet,
        ),
        rule(
            &format!(
                r"(?i:my)\s+(?i:(?:little|big|old|young|new|rescue)\s+)?(?P<kind>(?i:{PETS}))(?:'s\s+name\s+is|\s+is\s+(?:named|called)|,)?\s+(?P<name>[A-Z][\p{{L}}'’-]+)\b"
            ),
            has_pet,
        ),
        // Education.
        rule(
            &format!(
                r"{I}(?:'m|’m| am)\s+(?i:studying|majoring in|doing a degree in|doing a masters in|doing a phd in|doing my phd in)\s+(?P<v>[^,.;]+?)(?:\s+(?i:at)\s+(?P<org>.+))?$"
            ),
            |c, w| {
                let mut out: Vec<Signal> = one(value(group(c, "v"), true, 5), |v| {
                    fact(w.speaker, Identity, "studies", v.to_lowercase(), false)
                });
                if let Some(org) = c.name("org").and_then(|o| where_value(o.as_str())) {
                    out.push(fact(w.speaker, Identity, "studies_at", org, false));
                }
                out
            },
        ),
        rule(
            &format!(
                r"{I}\s+(?i:studied|majored in|did a degree in|got a degree in|have a degree in|'ve got a degree in|hold a degree in)\s+(?P<v>[^,.;]+?)(?:\s+(?i:at)\s+(?P<org>.+))?$"
            ),
            |c, w| {
                let mut out: Vec<Signal> = one(value(group(c, "v"), true, 5), |v| {
                    fact(w.speaker, Identity, "studied", v.to_lowercase(), false)
                });
                if let Some(org) = c.name("org").and_then(|o| where_value(o.as_str())) {
                    out.push(fact(w.speaker, Identity, "studied_at", org, false));
                }
                out
            },
        ),
        rule(
            &format!(
                r"{I}(?:\s+|'ve\s+|’ve\s+|\s+have\s+|\s+just\s+)(?i:graduated|graduate)\s+(?i:from)\s+(?P<v>.+)"
            ),
            own(Identity, "studied_at", PLACE),
        ),
        rule(
            &format!(
                r"{I}(?:'m|’m| am)\s+(?i:a|an)\s+(?i:(?:first|second|third|fourth|final)[- ]year\s+|(?:grad|graduate|phd|masters|undergrad|undergraduate|college|university|high school|med|law)\s+)*(?i:student)\s+(?i:at|in)\s+(?P<v>.+)"
            ),
            own(Identity, "studies_at", PLACE),
        ),
        rule(
            &format!(
                r"{I}\s+(?i:go to|attend|am at|'m at)\s+(?P<v>[A-Z][^,]*?(?i:university|college|school|academy|institute|uni)\b.*)"
            ),
            own(Identity, "studies_at", PLACE),
        ),
        // Pastimes.
        rule(
            r"(?i:my)\s+(?i:hobby is|hobbies are|favou?rite hobby is|passion is|favou?rite pastime is)\s+(?P<v>.+)",
            |c, w| {
                items(group(c, "v"))
                    .into_iter()
                    .map(|v| fact(w.speaker, Behavior, "does", v.to_lowercase(), false))
                    .collect()
            },
        ),
        rule(
            r"(?i:in my (?:free|spare) time,?\s+)(?i:i)\s+(?i:like to\s+|love to\s+|enjoy\s+)?(?P<v>.+)",
            |c, w| {
                one(pastime_value(group(c, "v")), |v| {
                    fact(w.speaker, Behavior, "does", v, false)
                })
            },
        ),
        rule(
            &format!(
                r"{I}\s+{neg}(?i:play)\s+(?P<v>(?i:the\s+)?(?i:guitar|piano|violin|drums|bass|cello|flute|saxophone|ukulele|chess|tennis|football|soccer|basketball|golf|volleyball|baseball|hockey|rugby|cricket|badminton|squash|video games|board games|poker|the guitar|the piano|the violin|the drums))\b"
            ),
            |c, w| {
                one(pastime_value(group(c, "v")), |v| {
                    fact(
                        w.speaker,
                        Behavior,
                        "does",
                        format!("playing {v}"),
                        negated(c),
                    )
                })
            },
        ),
        // An activity the speaker does: "I'm doing kickboxing", "I'm off to do some
        // taekwondo", "I practise yoga".
        rule(
            &format!(
                r"{I}(?:'m|’m|\s+am|'ve been|’ve been|\s+have been)?\s+(?i:off to\s+)?(?P<how>(?i:doing|do|practicing|practising|practice|practise))\s+(?P<some>(?i:some\s+|a bit of\s+|a little\s+|a lot of\s+|lots of\s+))?(?P<v>[a-z][a-z-]+.*)"
            ),
            |c, w| {
                let v = activity_words(group(c, "v"));
                // "I do eat meat", "I do wonder": a bare "do" stresses a verb.
                let bare_do =
                    group(c, "how").eq_ignore_ascii_case("do") && c.name("some").is_none();
                let stressed = bare_do
                    && (v.split_whitespace().count() > 1
                        || [
                            "eat", "wonder", "hate", "try", "say", "go", "make", "take", "worry",
                        ]
                        .contains(&first_word(v).as_str()));
                if is_activity(v) && !stressed {
                    one(value(v, true, 2).map(|v| v.to_lowercase()), |v| {
                        fact(w.speaker, Behavior, "does", v, false)
                    })
                } else {
                    vec![]
                }
            },
        ),
    ]
}

/// Pets a clause mentions as the speaker's anywhere in it ("I live in Chicago with my two
/// cats"): read beside what the rules read from its start.
pub fn pets_mentioned(clause: &str, speaker: &str) -> Vec<Signal> {
    static MENTION: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(&format!(
            r"(?i)\b(?:my|our)\s+(?:(?:two|three|four|2|3|4|little|old|new|rescue|pet)\s+)?(?P<kind>{PETS})\b"
        ))
        .expect("valid pattern")
    });
    MENTION
        .captures_iter(clause)
        .map(|c| fact(speaker, Fact, "has_pet", pet(group(&c, "kind")), false))
        .collect()
}

/// What is done, without when, where or with whom ("yoga every morning" → "yoga").
fn activity_words(v: &str) -> &str {
    const AFTER: &[&str] = &[
        " every ",
        " each ",
        " on ",
        " at ",
        " with ",
        " in ",
        " for ",
        " twice",
        " once",
        " a few ",
        " daily",
        " weekly",
        " together",
        " after ",
        " before ",
        " to ",
        " three ",
        " two ",
        " and ",
        ",",
        "!",
        ".",
    ];
    let lower = v.to_lowercase();
    let end = AFTER
        .iter()
        .filter_map(|a| lower.find(a))
        .min()
        .unwrap_or(v.len());
    v.get(..end).unwrap_or(v).trim()
}

/// Whether what follows "I'm doing" names an activity ("kickboxing", "yoga"), not how
/// the speaker is ("great", "well"), a pointer ("it") or a verb ("do think").
fn is_activity(v: &str) -> bool {
    const NOT: &[&str] = &[
        "well",
        "great",
        "good",
        "fine",
        "ok",
        "okay",
        "alright",
        "better",
        "worse",
        "awesome",
        "amazing",
        "fantastic",
        "wonderful",
        "terrible",
        "bad",
        "badly",
        "nothing",
        "something",
        "anything",
        "everything",
        "stuff",
        "things",
        "thing",
        "it",
        "that",
        "this",
        "them",
        "those",
        "these",
        "the",
        "a",
        "an",
        "my",
        "your",
        "his",
        "her",
        "our",
        "their",
        "you",
        "same",
        "what",
        "whatever",
        "much",
        "more",
        "lot",
        "lots",
        "so",
        "too",
        "really",
        "pretty",
        "super",
        "just",
        "not",
        "think",
        "love",
        "like",
        "want",
        "need",
        "know",
        "feel",
        "hope",
        "believe",
        "agree",
        "miss",
        "have",
        "get",
        "appreciate",
        "enjoy",
        "wish",
        "care",
        "mind",
        "see",
        "mean",
        "understand",
        "remember",
        "okay",
        "ok",
        "right",
        "fun",
        "all",
        "everything",
        "my",
        "some",
        "work",
        "things",
        "anymore",
        "now",
        "again",
    ];
    let first = first_word(v);
    !first.is_empty()
        && !NOT.contains(&first.as_str())
        && !first.ends_with("ly")
        && !v
            .to_lowercase()
            .split_whitespace()
            .any(|w| w == "you" || w == "it")
}

/// A pastime in a few words, lower case.
fn pastime_value(v: &str) -> Option<String> {
    value(v, true, 5).map(|v| v.to_lowercase())
}
