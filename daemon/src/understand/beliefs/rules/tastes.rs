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

/// Words that tie a phrase together rather than name a kind of its last word ("tea with
/// milk", "working from home").
const LINKS: &[&str] = &[
    "with", "without", "from", "of", "for", "to", "in", "on", "at", "and", "or", "by", "than",
];

/// A thing chosen among alternatives: a kind and its thing ("4-space indentation", "dark
/// roast coffee") is the thing's chosen value; a bare thing ("tabs") is preferred.
fn choice(subject: &str, phrase: String) -> Signal {
    let words: Vec<&str> = phrase.split_whitespace().collect();
    let linked = words
        .iter()
        .any(|w| LINKS.contains(&w.to_lowercase().as_str()));
    match words.split_last() {
        Some((thing, kind)) if !kind.is_empty() && kind.len() <= 3 && !linked => {
            preference(subject, thing.to_lowercase(), &kind.join(" "))
        }
        _ => preference(subject, phrase, "prefer"),
    }
}

/// "I like 4-space indentation better", "I prefer oat milk now", "… more for espresso":
/// a choice that replaces another, on the thing's key when the phrase names one.
fn comparative(c: &Captures, w: &Who) -> Vec<Signal> {
    let said = if c.name("v").is_some() { "v" } else { "pv" };
    let Some(v) = value(group(c, said), false, 5) else {
        return vec![];
    };
    if NOT_TASTES.contains(&first_word(&v).as_str()) {
        return vec![];
    }
    match value(group(c, "key"), false, 4) {
        Some(key) => vec![preference(w.speaker, key, &v)],
        None => vec![choice(w.speaker, v)],
    }
}

/// "I've switched back to tabs for indenting", "I switched from Vim to Helix": the newer
/// choice, on the key named after it when there is one.
fn switched(c: &Captures, w: &Who) -> Vec<Signal> {
    let Some(to) = value(group(c, "a"), false, 4) else {
        return vec![];
    };
    match value(group(c, "key"), false, 4) {
        Some(key) => vec![preference(w.speaker, key, &to)],
        None => vec![preference(w.speaker, to, "prefer")],
    }
}

/// Verbs whose "with" names a companion or a topic, not the way a thing is done ("help me
/// with", "deal with").
const WITH_A_COMPANION: &[&str] = &[
    "help", "deal", "go", "come", "stay", "bear", "play", "talk", "speak", "share", "meet", "work",
    "agree", "stick", "hang", "check", "be", "keep", "continue", "start", "begin", "get", "join",
    "chat", "bring",
];

/// "Please indent my code with 2 spaces": how the person wants a thing done, keyed on the
/// doing ("indenting").
fn done_with(c: &Captures, w: &Who) -> Vec<Signal> {
    let verb = group(c, "verb").to_lowercase();
    if WITH_A_COMPANION.contains(&verb.as_str()) || !instructs(w, &verb) {
        return vec![];
    }
    one(value(group(c, "a"), false, 4), |how| {
        preference(w.speaker, gerund(&verb), &how)
    })
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
                r"{I}\s+(?i:now\s+|actually\s+|really\s+|much\s+)?(?:(?i:like|love|enjoy)\s+(?P<v>.+?)\s+(?i:better|more|instead)|(?i:prefer)\s+(?P<pv>.+?)\s+(?i:now|these days|nowadays|instead))\b(?:\s+(?i:for|when it comes to)\s+(?P<key>.+))?"
            ),
            comparative,
        ),
        rule(
            &format!(
                r"{I}(?:'ve|’ve|\s+have|\s+had)?\s+(?i:just\s+|finally\s+|now\s+|recently\s+)?(?i:switched|reverted|migrated)(?:\s+(?i:back|over))?\s+(?:(?i:from)\s+(?P<b>.+?)\s+)?(?i:to)\s+(?P<a>.+?)(?:\s+(?i:for|when)\s+(?P<key>.+))?$"
            ),
            switched,
        ),
        rule(
            r"(?i:please)\s+(?P<verb>[a-zA-Z]+)\s+(?:[\p{L}'’-]+\s+){0,3}?(?i:with|using)\s+(?P<a>.+)",
            done_with,
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
