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

/// A pastime in a few words, lower case.
fn pastime_value(v: &str) -> Option<String> {
    value(v, true, 5).map(|v| v.to_lowercase())
}
