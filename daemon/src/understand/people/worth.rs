//! Whether a clause about a person tells something a reader would keep: not the conversation
//! itself ("I agree", "I'm so happy for you", "I can't wait"), not a bare reaction ("I love
//! that!"), but news, plans, feelings about something named, what someone has or does. A
//! clause worth keeping gets a weight, so a long turn keeps its most telling clauses.

use super::who::{Person, Subjected};
use super::words::{
    is_content_word, is_conversation_verb, is_empty_word, is_name_like, is_past_verb, plain,
};

/// Words that put a clause in the listener's hands: it is about them, or the talk.
const LISTENER: &[&str] = &[
    "you", "your", "yours", "yourself", "u", "ya", "y'all", "you're", "you've", "you'll", "you'd",
];

/// Words that stand for something said before rather than name it.
const POINTERS: &[&str] = &[
    "it",
    "them",
    "something",
    "anything",
    "everything",
    "stuff",
    "things",
    "they",
    "there",
];

/// Words of the events a life is told by (a job, a home, a family, health, school): a
/// clause with one tells more than its length says ("I got promoted at work").
const LIFE_EVENTS: &[&str] = &[
    "promoted",
    "promotion",
    "hired",
    "fired",
    "laid",
    "married",
    "engaged",
    "divorced",
    "wedding",
    "graduated",
    "graduation",
    "degree",
    "retired",
    "adopted",
    "born",
    "baby",
    "pregnant",
    "died",
    "passed",
    "funeral",
    "moved",
    "relocated",
    "quit",
    "resigned",
    "job",
    "diagnosed",
    "injured",
    "surgery",
    "hospital",
    "accident",
    "elected",
    "enrolled",
    "admitted",
    "launched",
    "opened",
    "published",
    "won",
    "lost",
    "broke",
];

/// Forms of "be", "do" and "have" that carry no meaning of their own before a verb.
const AUXILIARIES: &[&str] = &["do", "does", "did", "don't", "doesn't", "totally", "really"];

/// How much `s` tells (0 when nothing): its content words, more for a time, a name, an event.
pub fn weight(s: &Subjected, dated: bool) -> f32 {
    let words: Vec<&str> = s.clause.split_whitespace().collect();
    let lower: Vec<String> = words.iter().map(|w| plain(w)).collect();
    // A view may say "you" of anyone ("friends you can rely on"); elsewhere it is the listener.
    let listener = match s.person {
        Person::View => lower
            .first()
            .is_some_and(|w| LISTENER.contains(&w.as_str())),
        _ => lower.iter().any(|w| LISTENER.contains(&w.as_str())),
    };
    if listener {
        return 0.0;
    }
    let skip = subject_words(s, &lower);
    let rest = &lower[skip.min(lower.len())..];
    // The verb that says what happens: past the adverbs and auxiliaries ("couldn't agree").
    let Some(verb) = rest.iter().find(|w| {
        !super::words::is_adverb_between(w)
            && !super::words::is_modal(w)
            && !AUXILIARIES.contains(&w.as_str())
    }) else {
        return 0.0;
    };
    // "I agree that education is key" states a view; "I agree" alone does not.
    let verb_at = rest.iter().position(|w| w == verb).unwrap_or(0);
    let with_clause = rest.get(verb_at + 1).is_some_and(|w| w == "that");
    if (is_conversation_verb(verb) && !with_clause) || turn_of_phrase(rest) {
        return 0.0;
    }
    let content = rest.iter().filter(|w| is_content_word(w)).count();
    let named = words[skip.min(words.len())..]
        .iter()
        .skip(1)
        .any(|w| is_name_like(w.trim_matches(|c: char| !c.is_alphanumeric())));
    let event = rest.iter().any(|w| is_past_verb(w));
    // "did it", "tried it yet": what the verb acts on was said before, and is not here.
    let points_back = rest.get(verb_at + 1).is_some_and(|o| {
        matches!(
            o.as_str(),
            "it" | "that" | "this" | "them" | "those" | "these"
        )
    });
    // "I like those": the verb's object alone, said before and not here, tells nothing.
    if points_back && rest.len() <= verb_at + 2 && !dated {
        return 0.0;
    }
    // Not one denied or only possible ("I won't quit").
    let life_event = rest.iter().any(|w| LIFE_EVENTS.contains(&w.as_str()))
        && !rest
            .iter()
            .any(|w| super::words::is_modal(w) || w == "not" || w == "never" || w.ends_with("n't"));
    // A life event's word says as much as two ("I got promoted at work").
    let content = content + usize::from(life_event);
    let needed = if dated || named { 1 } else { 2 };
    if content < needed {
        return 0.0;
    }
    // "pass it on to others", "make something like this": words that stand for what was
    // said before tell less, wherever they are.
    let pointers = (verb_at + 1..rest.len())
        .filter(|&i| is_pointer(rest, i))
        .count();
    let weight = content as f32
        + 2.0 * f32::from(u8::from(dated))
        + f32::from(u8::from(named))
        + 0.5 * f32::from(u8::from(event))
        + f32::from(u8::from(life_event))
        - pointers as f32;
    if points_back {
        weight / 2.0
    } else {
        weight
    }
}

/// A value that stands for what was said before more than it names anything ("to continue
/// doing it", "to get it fixed", "to pass it on to others"): a pointer, and at most two
/// words of content beside it.
pub fn points_back(value: &str) -> bool {
    let lower: Vec<String> = value.split_whitespace().map(plain).collect();
    let pointers = (0..lower.len()).filter(|&i| is_pointer(&lower, i)).count();
    let content = (0..lower.len())
        .filter(|&i| {
            let w = &lower[i];
            is_content_word(w) && !is_pointer(&lower, i)
        })
        .count();
    pointers > 0 && content <= 2
}

/// Whether the word at `i` stands for something said before: a pointer, or a determiner
/// with no noun after it ("that lake" names what it means).
fn is_pointer(lower: &[String], i: usize) -> bool {
    match lower[i].as_str() {
        "this" | "that" | "these" | "those" => {
            lower.get(i + 1).is_none_or(|next| is_empty_word(next))
        }
        w => POINTERS.contains(&w),
    }
}

/// How many words the clause's subject takes: "I", "I'm", "Maria", "my sister".
fn subject_words(s: &Subjected, lower: &[String]) -> usize {
    match &s.person {
        Person::Speaker => {
            usize::from(!lower.is_empty()) + usize::from(lower.first().is_some_and(|w| w == "my"))
        }
        Person::Named(name) => name.split_whitespace().count(),
        Person::Kin(rel) => 1 + rel.split_whitespace().count(),
        Person::Touched | Person::Unknown | Person::View => 0,
    }
}

/// Sayings that carry no news: "can't wait", "can't believe", "thank …", "miss …" (the
/// listener), "love it".
fn turn_of_phrase(rest: &[String]) -> bool {
    let two = |a: &str, b: &str| rest.windows(2).any(|w| w[0] == a && w[1] == b);
    let first = rest
        .iter()
        .find(|w| !super::words::is_adverb_between(w))
        .map(String::as_str);
    two("can't", "wait")
        || two("cannot", "wait")
        || two("can't", "believe")
        // "Thanks!", but not what someone is thanked for ("thank Jon for offering to help").
        || (matches!(first, Some("thank" | "thanks")) && !rest.iter().any(|w| w == "for"))
        || (matches!(first, Some("love" | "like" | "loved" | "adore"))
            && rest
                .iter()
                .skip_while(|w| !matches!(w.as_str(), "love" | "like" | "loved" | "adore"))
                .nth(1)
                .is_some_and(|o| {
                    matches!(
                        o.as_str(),
                        "it" | "that" | "this" | "those" | "these" | "them"
                    )
                }))
}

#[cfg(test)]
mod tests {
    use super::super::who::{subject, Context};
    use super::*;

    fn tells(clause: &str) -> bool {
        let s = subject(clause, false, &mut Context::default()).expect("about someone");
        weight(&s, false) > 0.0
    }

    #[test]
    fn news_plans_and_things_had_are_kept() {
        for c in [
            "I went to a LGBTQ support group",
            "I'm keen on counseling or working in mental health",
            "I painted that lake sunrise",
            "I have two dogs and a cat",
            "I'm off to go swimming with the kids",
            "My sister Maria lives in Lisbon",
            "I was so happy and thankful for all the support",
        ] {
            assert!(tells(c), "{c}");
        }
    }

    #[test]
    fn the_conversation_itself_is_not() {
        for c in [
            "I agree",
            "I'm so happy for you",
            "I can't wait to see it",
            "I love that",
            "I know right",
            "I'm glad",
            "I totally agree with that",
            "I hope you have a great time",
            "I really like those!",
            "I already tried it",
        ] {
            assert!(!tells(c), "{c}");
        }
    }

    #[test]
    fn a_life_event_tells_in_few_words_unless_denied() {
        assert!(tells("I got promoted at work"));
        assert!(!tells("I won't quit"));
    }

    #[test]
    fn a_value_that_points_back_names_nothing() {
        assert!(points_back("to continue doing it"));
        assert!(points_back("to get it fixed"));
        assert!(!points_back("to run a marathon in Berlin"));
        assert!(!points_back("to visit that lake"));
    }
}
