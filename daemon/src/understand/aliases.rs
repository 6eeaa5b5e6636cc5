//! Aliases a text proves, by rules: a name it states as another's ("call me Mel", "Margaret
//! goes by Maggie", "Robert, aka Bob", "Liz is short for Elizabeth"), and the name a chat
//! line greets its listener by ("Hey Mel!", "Thanks, Mel."), which consolidation matches
//! against the other speakers of the session. Names come back folded ([`fold`]).

use super::entities::{fold, speaker_line};

/// `alias` is another name of `of` (both folded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stated {
    pub alias: String,
    pub of: String,
}

/// Words a chat line may open with before greeting someone by name.
const GREETINGS: &[&str] = &[
    "hey",
    "hi",
    "hello",
    "thanks",
    "thank you",
    "wow",
    "oh",
    "aw",
    "aww",
    "yay",
    "congrats",
    "congratulations",
    "good morning",
    "good evening",
    "good night",
    "morning",
    "dear",
    "yes",
    "yeah",
    "no",
    "sure",
    "ok",
    "okay",
    "sorry",
    "bye",
    "cheers",
    "omg",
];

/// A capitalised name word: "Mel", not "I", not "The".
fn name_word(w: &str) -> Option<&str> {
    let w = w.trim_matches(|c: char| !c.is_alphanumeric());
    let mut chars = w.chars();
    let first = chars.next()?;
    let plain = chars.all(|c| c.is_alphabetic() || c == '-' || c == '\'');
    (first.is_uppercase() && plain && w.chars().count() >= 2 && !COMMON.contains(&w)).then_some(w)
}

/// Capitalised words that are not names where a name is expected.
const COMMON: &[&str] = &[
    "The",
    "A",
    "An",
    "My",
    "Your",
    "Our",
    "That",
    "This",
    "It",
    "Im",
    "You",
    "We",
    "They",
    "He",
    "She",
    "Me",
    "Us",
    "Everyone",
    "Everybody",
    "Sir",
    "Madam",
    "Mom",
    "Mum",
    "Dad",
    "Buddy",
    "Friend",
    "Guys",
    "Man",
    "Dude",
    "Girl",
    "Bro",
    "Sis",
    "Honey",
    "Love",
    "Babe",
];

/// The text after a `Speaker: ` prefix, and the speaker (folded), if the line has one.
fn spoken(text: &str) -> (Option<String>, &str) {
    match speaker_line(text) {
        // Stricter than a speaker line alone: "The: …" or "Mom: …" names no one.
        Some((head, rest)) if head.split(' ').all(|w| name_word(w).is_some()) => {
            (Some(fold(head)), rest)
        }
        _ => (None, text),
    }
}

/// Lower-cased words of `text` with their raw forms, for phrase matching.
fn tokens(text: &str) -> Vec<(String, &str)> {
    text.split_whitespace()
        .map(|raw| {
            let bare = raw.trim_matches(|c: char| !c.is_alphanumeric() && c != '.');
            (bare.trim_end_matches('.').to_lowercase(), raw)
        })
        .collect()
}

/// The name (one or two capitalised words) starting at `at`, folded.
fn name_at(tokens: &[(String, &str)], at: usize) -> Option<String> {
    let first = name_word(tokens.get(at)?.1)?;
    let ends = |raw: &str| raw.ends_with([',', '.', '!', '?', ';', ':', ')']);
    let mut name = first.to_string();
    if !ends(tokens[at].1) {
        if let Some(second) = tokens.get(at + 1).and_then(|t| name_word(t.1)) {
            name = format!("{name} {second}");
        }
    }
    Some(fold(&name))
}

/// The name (one or two capitalised words) ending at `at`, folded.
fn name_before(tokens: &[(String, &str)], at: usize) -> Option<String> {
    let last = name_word(tokens.get(at)?.1)?;
    let ends = |raw: &str| raw.ends_with([',', '.', '!', '?', ';', ':']);
    if at >= 1 && !ends(tokens[at - 1].1) {
        if let Some(first) = name_word(tokens[at - 1].1) {
            return Some(fold(&format!("{first} {last}")));
        }
    }
    Some(fold(last))
}

/// The speaker of a `Name: words` line, folded.
pub fn speaker(text: &str) -> Option<String> {
    spoken(text).0
}

/// Aliases `text` states outright. "call me X" names the line's speaker.
pub fn stated(text: &str) -> Vec<Stated> {
    let (speaker, said) = spoken(text);
    let t = tokens(said);
    let word = |i: usize| t.get(i).map(|w| w.0.as_str());
    let mut found = Vec::new();
    let mut claim = |alias: Option<String>, of: Option<String>| {
        if let (Some(alias), Some(of)) = (alias, of) {
            if alias != of
                && !found
                    .iter()
                    .any(|s: &Stated| s.alias == alias && s.of == of)
            {
                found.push(Stated { alias, of });
            }
        }
    };
    for i in 0..t.len() {
        match (word(i), word(i + 1)) {
            // "call me Mel", "everyone calls me Mel", "I go by Mel"
            (Some("call" | "calls"), Some("me")) => claim(name_at(&t, i + 2), speaker.clone()),
            (Some("go"), Some("by")) if i >= 1 && word(i - 1) == Some("i") => {
                claim(name_at(&t, i + 2), speaker.clone())
            }
            // "Margaret goes by Maggie"
            (Some("goes"), Some("by")) if i >= 1 => {
                claim(name_at(&t, i + 2), name_before(&t, i - 1))
            }
            // "Robert, aka Bob", "Robert (a.k.a. Bob)", "Robert, also known as Bob"
            (Some("aka" | "a.k.a"), _) if i >= 1 => {
                claim(name_at(&t, i + 1), name_before(&t, i - 1))
            }
            (Some("also"), Some("known")) if i >= 1 && word(i + 2) == Some("as") => {
                claim(name_at(&t, i + 3), name_before(&t, i - 1))
            }
            // "Liz is short for Elizabeth"
            (Some("is"), Some("short")) if i >= 1 && word(i + 2) == Some("for") => {
                claim(name_before(&t, i - 1), name_at(&t, i + 3))
            }
            _ => {}
        }
    }
    found
}

/// The name a chat line greets its listener by, folded: "Hey Mel!", "Thanks, Mel.",
/// "Mel, that's great", "... see you soon, Mel!". `None` when it greets no one by name.
pub fn addressed(text: &str) -> Option<String> {
    let (_, said) = spoken(text);
    let t = tokens(said);
    let ends = |raw: &str| raw.ends_with([',', '.', '!', '?']);
    // Opening: an optional greeting, then the name and a pause.
    let mut at = 0;
    for g in GREETINGS {
        let n = g.split(' ').count();
        let words: Vec<&str> = t.iter().take(n).map(|w| w.0.as_str()).collect();
        if words.join(" ") == *g {
            at = n;
            break;
        }
    }
    if let Some((_, raw)) = t.get(at) {
        if name_word(raw).is_some() && ends(raw) && (at > 0 || raw.ends_with([',', '!'])) {
            return name_at(&t, at);
        }
    }
    // Closing: ", Mel!" at the end of the line, after a word that is not a name itself
    // ("in Paris, France!" names a place).
    let last = t.len().checked_sub(1)?;
    let (_, raw) = t[last];
    let before = last.checked_sub(1).map(|b| t[b].1);
    if before.is_some_and(|b| b.ends_with(',') && name_word(b).is_none())
        && raw.ends_with(['!', '.', '?'])
    {
        return name_word(raw).map(fold);
    }
    None
}

/// Whether `short` is a shortening of `long` (both folded): a prefix of its first word,
/// three letters or more ("mel" of "melanie", "jon" of "jonathan smith").
pub fn shortens(short: &str, long: &str) -> bool {
    let first = long.split(' ').next().unwrap_or(long);
    short.chars().count() >= 3 && short != first && first.starts_with(short)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        stated(text).into_iter().map(|s| (s.alias, s.of)).collect()
    }

    #[test]
    fn stated_aliases() {
        let cases: &[(&str, &[(&str, &str)])] = &[
            (
                "Melanie: please call me Mel, everyone does",
                &[("mel", "melanie")],
            ),
            ("Robert: my friends call me Bob.", &[("bob", "robert")]),
            ("Jonathan: I go by Jon at work", &[("jon", "jonathan")]),
            ("My aunt Margaret goes by Maggie", &[("maggie", "margaret")]),
            (
                "We met Robert Smith, aka Bob, at the fair",
                &[("bob", "robert smith")],
            ),
            (
                "Elizabeth, also known as Liz, is coming",
                &[("liz", "elizabeth")],
            ),
            ("Liz is short for Elizabeth", &[("liz", "elizabeth")]),
            // No speaker: "call me" names no one.
            ("please call me Mel", &[]),
            // Not names.
            ("Caroline: call me when you land", &[]),
            ("Caroline: they call me crazy", &[]),
            ("Tom: the train goes by the river", &[]),
            ("Ann: my name is short for nothing", &[]),
        ];
        for (text, want) in cases {
            let want: Vec<(String, String)> = want
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect();
            assert_eq!(pairs(text), want, "{text}");
        }
    }

    #[test]
    fn greeted_by_name() {
        let cases: &[(&str, Option<&str>)] = &[
            ("Caroline: Hey Mel! How was the trip?", Some("mel")),
            ("Caroline: Thanks, Mel. That means a lot", Some("mel")),
            ("Caroline: Thank you Mel!", Some("mel")),
            ("Caroline: Mel, that's amazing news", Some("mel")),
            ("Caroline: Good morning, Mel!", Some("mel")),
            ("Caroline: See you soon, Mel!", Some("mel")),
            ("Caroline: Congrats Melanie!", Some("melanie")),
            // Not greetings.
            ("Caroline: Mel went to the park", None),
            ("Caroline: Hey, how are you?", None),
            // A place after a place.
            ("Caroline: I went to Paris, France!", None),
            ("Caroline: The trip was fun.", None),
            ("Caroline: Thanks, I will.", None),
            ("Caroline: Wow, Sweden sounds lovely", None),
        ];
        for (text, want) in cases {
            assert_eq!(addressed(text).as_deref(), *want, "{text}");
        }
    }

    #[test]
    fn shortenings() {
        assert!(shortens("mel", "melanie"));
        assert!(shortens("jon", "jonathan smith"));
        assert!(!shortens("me", "melanie"), "too short to prove anything");
        assert!(!shortens("melanie", "melanie"));
        assert!(!shortens("ann", "joanna"));
    }
}
