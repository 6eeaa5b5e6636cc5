//! What a speaker says to the one they talk with: in a chat between two people, "you" is
//! the other. "I'm so proud of you" tells how the speaker feels about them, "You're so
//! talented" what the speaker thinks of them, "Keep pushing for your dreams!" that the
//! speaker encourages them. Each is told as a clause about the speaker with the listener
//! named ("I encourage Jon to keep pushing for Jon's dreams"), so it reads like any other.

use super::who::{Person, Subjected};
use super::words::{
    is_adverb_between, is_content_word, is_conversation_verb, is_empty_word, is_plain_present,
    lower_first, plain, third_person,
};

/// Verbs whose order to the listener is advice or encouragement ("Keep going", "Stay
/// positive"), not a turn of the talk ("Tell me more", "Check this out", "Have fun").
const ADVICE: &[&str] = &[
    "keep",
    "stay",
    "go",
    "believe",
    "trust",
    "remember",
    "focus",
    "try",
    "be",
    "follow",
    "chase",
    "hang",
    "push",
    "do",
    "make",
    "find",
    "start",
    "consider",
    "stick",
    "dream",
    "aim",
    "reach",
    "fight",
    "embrace",
    "celebrate",
    "rest",
    "relax",
    "treat",
    "breathe",
    "always",
    "think",
    "plan",
    "build",
    "create",
    "practice",
    "learn",
    "protect",
    "prioritize",
    "value",
    "surround",
    "lean",
    "pursue",
    "continue",
];

/// Words after "you're" that answer the talk ("You're welcome", "You're right").
const REPLIES: &[&str] = &["welcome", "right", "kidding", "joking", "so", "too", "the"];

/// `s` as a clause about the speaker and `listener`, when it is addressed to them and tells
/// something; the person it is then about (the speaker, or a view of the speaker's).
pub fn toward(s: &Subjected, listener: &str) -> Option<(String, Person)> {
    let words: Vec<&str> = s.clause.split_whitespace().collect();
    let lower: Vec<String> = words.iter().map(|w| plain(w)).collect();
    let first = lower.first()?.as_str();
    let rest = |from: usize| named(&words[from.min(words.len())..], listener);
    let (clause, person, told) = match (&s.person, first) {
        // "Congrats on finishing your degree!", "Thanks for offering to help": what the
        // speaker thanks or congratulates the listener for; not "Thanks for sharing".
        (_, "congrats" | "congratulations" | "thanks" | "thank") => {
            let congrats = matches!(first, "congrats" | "congratulations");
            let at = lower.iter().position(|w| {
                if congrats {
                    matches!(w.as_str(), "on" | "for")
                } else {
                    w == "for"
                }
            })?;
            let reason = &lower[at + 1..];
            let said_to = &lower[1..at];
            if said_to.iter().any(|w| !is_you(w) && !is_empty_word(w))
                || content(reason) < if congrats { 1 } else { 2 }
            {
                return None;
            }
            let verb = if congrats { "congratulate" } else { "thank" };
            let reason = named(&words[at..], listener);
            (
                format!("I {verb} {listener} {reason}"),
                Person::Speaker,
                at + 1,
            )
        }
        // "I'm so proud of you": the speaker, the listener named after the verb.
        // "Let me know if you need help" is the talk, not news.
        (Person::Speaker, _)
            if matches!(lower.get(1).map(String::as_str), Some("let" | "lemme")) =>
        {
            return None
        }
        (Person::Speaker, _) if lower[1..].iter().any(|w| is_you(w)) => {
            (named(&words, listener), Person::Speaker, 1)
        }
        (Person::Speaker, _) => return None,
        (_, "you're" | "you've" | "you'll" | "you'd") => {
            let verb = match first {
                "you're" => "is",
                "you've" => "has",
                "you'll" => "will",
                _ => "would",
            };
            if REPLIES.contains(&lower.get(1)?.as_str()) && lower.len() <= 3 {
                return None;
            }
            (format!("{listener} {verb} {}", rest(1)), Person::View, 1)
        }
        (_, "you" | "u") => {
            // "You never shy away": the adverbs stay before the verb they change.
            let at = 1 + lower[1..]
                .iter()
                .take_while(|w| is_adverb_between(w) || w.ends_with("ly"))
                .count();
            let verb = lower.get(at)?.as_str();
            let adverbs = words[1..at].join(" ");
            let listener_adverbs = if adverbs.is_empty() {
                listener.to_string()
            } else {
                format!("{listener} {adverbs}")
            };
            let listener = listener_adverbs.as_str();
            let rest = |from: usize| rest(from + at - 1);
            match verb {
                "should" | "must" | "gotta" => (
                    format!("I encourage {listener} to {}", rest(2)),
                    Person::Speaker,
                    2,
                ),
                "can" | "could" | "will" => {
                    (format!("{listener} {verb} {}", rest(2)), Person::View, 2)
                }
                "are" | "have" | "were" | "did" | "do" => {
                    let verb = third_person(verb);
                    (format!("{listener} {verb} {}", rest(2)), Person::View, 2)
                }
                _ if is_conversation_verb(verb) || !is_plain_present(verb) => return None,
                _ => {
                    let verb = third_person(verb);
                    (format!("{listener} {verb} {}", rest(2)), Person::View, 2)
                }
            }
        }
        (_, "your") => (format!("{listener}'s {}", rest(1)), Person::View, 1),
        // "Keep pushing!", "Don't give up": an order to the listener.
        (Person::Unknown, "don't" | "never") => (
            format!("I encourage {listener} not to {}", rest(1)),
            Person::Speaker,
            1,
        ),
        (Person::Unknown, verb) if ADVICE.contains(&verb) => {
            let order = lower_first(&named(&words, listener));
            (
                format!("I encourage {listener} to {order}"),
                Person::Speaker,
                0,
            )
        }
        _ => return None,
    };
    tells(&lower[told.min(lower.len())..]).then_some((clause, person))
}

/// Whether the words after the subject carry something of their own: a content word that
/// does not point back at what was said before ("You got this", "Keep it up").
fn tells(rest: &[String]) -> bool {
    let points_back = rest.iter().take(3).any(|w| {
        matches!(
            w.as_str(),
            "it" | "that" | "this" | "them" | "those" | "these"
        )
    });
    !points_back && content(rest) >= 1
}

/// The words that carry content: three letters or more, not "you", not empty.
fn content(words: &[String]) -> usize {
    words
        .iter()
        .filter(|w| !is_you(w) && is_content_word(w))
        .count()
}

fn is_you(word: &str) -> bool {
    matches!(
        word,
        "you" | "your" | "yours" | "yourself" | "u" | "ya" | "you're" | "you've" | "you'll"
    )
}

/// `words` with the listener named where "you" stands.
fn named(words: &[&str], listener: &str) -> String {
    words
        .iter()
        .map(|w| {
            let core = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’');
            let tail = &w[w.find(core).map_or(w.len(), |at| at + core.len())..];
            let with = match plain(core).as_str() {
                "you" | "u" | "ya" | "yourself" => listener.to_string(),
                "your" | "yours" => format!("{listener}'s"),
                "you're" => format!("{listener} is"),
                "you've" => format!("{listener} has"),
                "you'll" => format!("{listener} will"),
                _ => return w.to_string(),
            };
            format!("{with}{tail}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::super::who::{subject, Context};
    use super::*;

    fn to_jon(clause: &str) -> Option<String> {
        let s = subject(clause, false, &mut Context::default())?;
        toward(&s, "Jon").map(|(c, _)| c)
    }

    #[test]
    fn what_is_said_to_the_listener_names_them() {
        assert_eq!(
            to_jon("Keep pushing for your dreams!").as_deref(),
            Some("I encourage Jon to keep pushing for Jon's dreams!")
        );
        assert_eq!(
            to_jon("Don't give up on the studio").as_deref(),
            Some("I encourage Jon not to give up on the studio")
        );
        assert_eq!(
            to_jon("I'm so proud of you").as_deref(),
            Some("I'm so proud of Jon")
        );
        assert_eq!(
            to_jon("You're such a talented dancer").as_deref(),
            Some("Jon is such a talented dancer")
        );
        assert_eq!(
            to_jon("Your studio looks amazing").as_deref(),
            Some("Jon's studio looks amazing")
        );
        assert_eq!(
            to_jon("Congrats on finishing your degree!").as_deref(),
            Some("I congratulate Jon on finishing Jon's degree!")
        );
        assert_eq!(
            to_jon("Thank you for offering to help with the food drive").as_deref(),
            Some("I thank Jon for offering to help with the food drive")
        );
    }

    #[test]
    fn the_talk_itself_is_not_addressed_news() {
        for c in [
            "You're welcome",
            "You got this!",
            "Keep it up",
            "Tell me more about it",
            "Have fun!",
            "You know what I mean",
            "I went to the park",
            "Thanks for sharing!",
            "Thank you so much",
            "Congrats!",
        ] {
            assert_eq!(to_jon(c), None, "{c}");
        }
    }
}
