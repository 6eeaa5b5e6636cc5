//! Tastes and instructions: likes, dislikes and preferences, favourites, the assistant's
//! corrections ("always …", "never …", "please stop …") and habits ("I usually …").

use mnemo_protocol::belief::BeliefType;

use super::*;

/// Words after "I love" that are not tastes ("I love you", "I like how …").
const NOT_TASTES: &[&str] = &[
    "you", "it", "that", "this", "them", "him", "her", "how", "when", "what", "those", "these",
];

/// Words after "I never" that are surprise, not habit ("I never knew").
const NOT_HABITS: &[&str] = &[
    "knew", "thought", "expected", "imagined", "realized", "realised",
];

fn taste(c: &Captures, w: &Who) -> Vec<Signal> {
    let verb = group(c, "verb").to_lowercase();
    let v = group(c, "v");
    if NOT_TASTES.contains(&first_word(v).as_str()) {
        return vec![];
    }
    let Some(key) = value(v, false, 6) else {
        return vec![];
    };
    let key = key.strip_prefix("to ").map(str::to_string).unwrap_or(key);
    if key.eq_ignore_ascii_case("to") {
        return vec![];
    }
    let positive = matches!(
        verb.as_str(),
        "love" | "like" | "enjoy" | "adore" | "prefer"
    );
    let likes = positive != negated(c);
    let val = match (likes, verb.as_str()) {
        (true, "prefer") => "prefer",
        (true, _) => "like",
        (false, _) => "dislike",
    };
    vec![preference(w.speaker, key, val)]
}

fn correction(c: &Captures, w: &Who) -> Vec<Signal> {
    let v = group(c, "v");
    let verb = first_word(v);
    if is_idiom_after_dont(&verb)
        || verb == "be" && v.to_lowercase().contains("sorry")
        || !instructs(w, v)
    {
        return vec![];
    }
    one(value(v, false, 10), |v| {
        instruction(BeliefType::Rule, w.speaker, v, false)
    })
}

fn habit(c: &Captures, w: &Who) -> Vec<Signal> {
    let how = group(c, "how").to_lowercase();
    let Some(v) = value(group(c, "v"), false, 8) else {
        return vec![];
    };
    if NOT_HABITS.contains(&first_word(&v).as_str()) {
        return vec![];
    }
    let always = matches!(how.as_str(), "always" | "usually");
    vec![instruction(BeliefType::Behavior, w.speaker, v, always)]
}

pub fn rules() -> Vec<Rule> {
    vec![
        rule(
            r"(?i:i)\s+(?i:(?:really |absolutely |totally |much )?(?:would rather|prefer))\s+(?P<a>.+?)\s+(?i:over|to|rather than|instead of)\s+(?P<b>.+)",
            prefer_over,
        ),
        rule(
            r"(?i:i)\s+(?i:(?:really |much )?prefer)\s+(?P<a>.+?)\s+(?i:for|when it comes to|in)\s+(?P<key>.+)",
            |c, w| match pair(c, ("a", 4), ("key", 4)) {
                Some((a, key)) => vec![preference(w.speaker, key, &a)],
                None => vec![],
            },
        ),
        rule(
            r"(?i:(?:please\s+)?(?:use|go with))\s+(?P<a>.+?)\s+(?i:instead of|rather than|over|not)\s+(?P<b>.+)",
            prefer_over,
        ),
        rule(
            r"(?i:my)\s+(?i:favou?rite)\s+(?P<what>[\p{L} ]+?)\s+(?i:is|are)\s+(?P<v>.+)",
            favourite,
        ),
        rule(
            &format!(
                r"{I}\s+(?i:really\s+|honestly\s+|just\s+)?(?P<neg>(?i:don't|don’t|do not|no longer|never|didn't|didn’t)\s+(?i:really\s+)?)?(?i:really\s+|absolutely\s+|totally\s+|just\s+|still\s+)?(?P<verb>(?i:love|like|enjoy|adore|prefer|hate|dislike|detest|loathe|can't stand|can’t stand|cannot stand))\s+(?P<v>.+)"
            ),
            taste,
        ),
        rule(
            r"(?i:i'm|i’m|i am)\s+(?P<neg>(?i:not)\s+)?(?i:(?:a\s+)?(?:big\s+|huge\s+|massive\s+)?(?:fan of|into|obsessed with|crazy about))\s+(?P<v>.+)",
            |c, w| {
                let val = if negated(c) { "dislike" } else { "like" };
                one(value(group(c, "v"), false, 6), |k| {
                    preference(w.speaker, k, val)
                })
            },
        ),
        rule(
            r"(?P<v>[^,]+?)\s+(?i:is|are)\s+(?i:my)\s+(?i:favou?rite)\s+(?P<what>[\p{L} ]+)",
            favourite,
        ),
        // Corrections for the assistant: "always …", "never …", "don't …", "please stop …".
        rule(r"(?i:please\s+)?(?i:always)\s+(?P<v>.+)", |c, w| {
            if !instructs(w, group(c, "v")) {
                return vec![];
            }
            one(value(group(c, "v"), false, 10), |v| {
                instruction(BeliefType::Rule, w.speaker, v, true)
            })
        }),
        rule(
            r"(?i:please\s+)?(?:(?i:never|don't|don’t|do not|stop)\s+)(?P<v>.+)",
            correction,
        ),
        rule(
            &format!(r"{I}\s+(?P<how>(?i:always|never|usually|rarely))\s+(?P<v>.+)"),
            habit,
        ),
    ]
}
