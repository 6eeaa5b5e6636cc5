//! A clause told in the third person: "I went to a support group yesterday", said by
//! Caroline on 8 May 2023, is "Caroline went to a support group on 7 May 2023". The subject
//! takes the person's name and its verb agrees ("I'm" → "is", "I love" → "loves"); later
//! first-person words become "they", "their", "them" for the speaker, or the speaker's name
//! in a clause about someone else ("Maria helped me" → "Maria helped Gina"); a relative time
//! becomes the date it names; chat spelling is made plain ("gonna", "sooo", "haha").

use chrono::{Datelike, TimeZone, Utc};

use super::who::Person;
use super::words::{is_adverb_between, is_manner_adverb, is_plain_present, plain, third_person};
use crate::understand::dates::DateSpan;

/// `clause` (its subject explicit, see [`super::who`]) about `person`, said by `speaker`
/// (as a sentence names them: "User", "Caroline"), with `date` the time it names.
pub fn third(clause: &str, person: &Person, speaker: &str, date: Option<&DateSpan>) -> String {
    let clause = match date {
        Some(d) if !d.phrase.is_empty() => clause.replacen(&d.phrase, &when(d), 1),
        _ => clause.to_string(),
    };
    let words: Vec<String> = plainer(&clause);
    let mut out: Vec<String> = Vec::with_capacity(words.len() + 2);
    let mut i = 0;
    match person {
        Person::Speaker => i = speaker_subject(&words, speaker, &mut out),
        // "Family moments make life awesome": what the speaker thinks.
        Person::View => {
            out.push(format!("{speaker} thinks"));
            // The view's first word no longer opens the sentence: lower case, unless a name.
            if let Some(first) = words.first() {
                let lower = first.to_lowercase();
                let plain_word = lower.ends_with("ing")
                    || crate::understand::entities::is_common_word(&plain(first))
                    || !super::words::is_name_like(first);
                if plain_word {
                    out.push(lower);
                    i = 1;
                }
            }
        }
        _ => {}
    }
    out.extend(others(&words[i..], person, speaker));
    finish(out.join(" "))
}

/// `text` (a rule's value, a statement) with its first-person words told as `third` tells
/// them after the subject: "continue my studies" → "continue their studies".
pub fn their(text: &str, person: &Person, speaker: &str) -> String {
    let words: Vec<String> = text.split_whitespace().map(str::to_string).collect();
    let told = others(&words, person, speaker);
    if told == words {
        return text.to_string();
    }
    told.join(" ")
}

/// Words after a clause's subject, first-person ones in the third person: "they", "their",
/// "them" for the speaker, the speaker's name in a clause about someone else.
fn others(words: &[String], person: &Person, speaker: &str) -> Vec<String> {
    let mut out = Vec::with_capacity(words.len());
    let possessive = format!("{speaker}'s");
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        let p = plain(w);
        let (head, tail) = split_punct(w);
        let said = |s: &str| format!("{}{tail}", keep_case(head, s));
        let mapped = match (person, p.as_str()) {
            (Person::Speaker, "i") => {
                // A later "I" is "they": "the festival I told …" → "the festival they told …".
                let next = words.get(i + 1).map(|n| plain(n)).unwrap_or_default();
                let verb = match next.as_str() {
                    "am" => Some("are"),
                    "was" => Some("were"),
                    _ => None,
                };
                if let Some(verb) = verb {
                    out.push(said("they"));
                    out.push(verb.to_string());
                    i += 2;
                    continue;
                }
                said("they")
            }
            (Person::Speaker, "i'm") => said("they're"),
            (Person::Speaker, "i've") => said("they've"),
            (Person::Speaker, "i'd") => said("they'd"),
            (Person::Speaker, "i'll") => said("they'll"),
            (Person::Speaker, "my" | "our") => said("their"),
            (Person::Speaker, "me" | "us") => said("them"),
            (Person::Speaker, "myself" | "ourselves") => said("themselves"),
            (Person::Speaker, "mine" | "ours") => said("theirs"),
            (Person::Speaker, "we") => said("they"),
            (Person::Speaker, "we're") => said("they're"),
            (Person::Speaker, "we've") => said("they've"),
            (Person::Speaker, "we'll") => said("they'll"),
            (Person::Speaker, "we'd") => said("they'd"),
            (_, "my" | "our" | "mine" | "ours") => said(&possessive),
            (_, "me" | "us" | "i" | "myself" | "ourselves") => said(speaker),
            // "…made me feel like I'm part of something": the speaker, with the verb.
            (_, "i'm") => said(&format!("{speaker} is")),
            (_, "i've") => said(&format!("{speaker} has")),
            (_, "i'll") => said(&format!("{speaker} will")),
            (_, "i'd") => said(&format!("{speaker} would")),
            // "a trip we took" in a clause about something else: the speaker was in it.
            (_, "we" | "we're" | "we've" | "we'll" | "we'd") => {
                let next = words.get(i + 1).map(|n| plain(n)).unwrap_or_default();
                let verb = match (p.as_str(), next.as_str()) {
                    ("we're", _) => Some(("is", 1)),
                    ("we've", _) => Some(("has", 1)),
                    ("we'll", _) => Some(("will", 1)),
                    ("we'd", _) => Some(("would", 1)),
                    (_, "are") => Some(("is", 2)),
                    (_, "were") => Some(("was", 2)),
                    (_, "have") => Some(("has", 2)),
                    _ => None,
                };
                match verb {
                    Some((verb, took)) => {
                        out.push(keep_case(head, speaker));
                        let last = &words[i + took - 1];
                        out.push(format!("{verb}{}", split_punct(last).1));
                        i += took;
                        continue;
                    }
                    None => said(speaker),
                }
            }
            _ => w.clone(),
        };
        out.push(mapped);
        i += 1;
    }
    out
}

/// The speaker's subject words in the third person, pushed to `out`; answers where the rest
/// of the clause starts.
fn speaker_subject(words: &[String], speaker: &str, out: &mut Vec<String>) -> usize {
    let Some(first) = words.first() else {
        return 0;
    };
    let p = plain(first);
    if p == "my" || p == "our" {
        out.push(format!("{speaker}'s"));
        return 1;
    }
    out.push(speaker.to_string());
    match p.as_str() {
        "i'm" => {
            out.push("is".into());
            return 1;
        }
        "i've" => {
            out.push("has".into());
            return 1;
        }
        "i'll" => {
            out.push("will".into());
            return 1;
        }
        "i'd" => {
            let next = words.get(1).map(|w| plain(w)).unwrap_or_default();
            let had = matches!(
                next.as_str(),
                "been" | "had" | "gone" | "done" | "never" | "just" | "already"
            );
            out.push(if had { "had" } else { "would" }.into());
            return 1;
        }
        "i" => {}
        _ => return 0,
    }
    // The verb after "I" (past the adverbs between) agrees with the name.
    let mut i = 1;
    while i < words.len() && {
        let w = plain(&words[i]);
        is_adverb_between(&w) || is_manner_adverb(&w)
    } {
        out.push(words[i].clone());
        i += 1;
    }
    if let Some(verb) = words.get(i) {
        let p = plain(verb);
        let (_, tail) = split_punct(verb);
        let agreed = match p.as_str() {
            "am" | "are" | "be" => Some("is".to_string()),
            "was" | "were" => Some("was".to_string()),
            "have" | "do" | "don't" | "haven't" | "aren't" | "weren't" => Some(third_person(&p)),
            _ if is_plain_present(&p) => Some(third_person(&p)),
            _ => None,
        };
        if let Some(a) = agreed {
            out.push(format!("{a}{tail}"));
            i += 1;
        }
    }
    i
}

/// A date as a statement says it: "on 7 May 2023", "in May 2023", "in 2022".
pub fn when(d: &DateSpan) -> String {
    let start = Utc.timestamp_micros(d.start).single();
    let Some(start) = start else {
        return d.phrase.clone();
    };
    let days = (d.end - d.start) / 86_400_000_000;
    let lead = d
        .phrase
        .split_whitespace()
        .next()
        .map(|w| w.to_lowercase())
        .filter(|w| matches!(w.as_str(), "by" | "until" | "before" | "after" | "since"));
    let day = format!("{} {}", start.day(), start.format("%B %Y"));
    let said = match days {
        0..=1 => format!("on {day}"),
        2..=3 => format!("on the weekend of {day}"),
        4..=7 => format!("in the week of {day}"),
        8..=31 => format!("in {}", start.format("%B %Y")),
        _ if d.phrase.to_lowercase().contains("ago") => format!("around {}", start.year()),
        _ => format!("in {}", start.year()),
    };
    match lead {
        Some(prep) => {
            let bare = said.split_once(' ').map_or(said.as_str(), |(_, b)| b);
            format!("{prep} {bare}")
        }
        None => said,
    }
}

/// Words of `clause` with chat spelling made plain: "gonna" → "going to", "sooo" → "so",
/// interjections and emoji dropped.
fn plainer(clause: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let all: Vec<&str> = clause.split_whitespace().collect();
    for (k, w) in all.iter().enumerate() {
        let w: String = w.chars().filter(|c| !is_emoji(*c)).collect();
        if w.is_empty() {
            continue;
        }
        let p = plain(&w);
        let (head, tail) = split_punct(&w);
        let replaced = match p.as_str() {
            "gonna" => Some("going to"),
            "wanna" => Some("want to"),
            "gotta" => Some("have to"),
            "kinda" => Some("kind of"),
            "sorta" => Some("sort of"),
            "'cause" | "cuz" | "coz" => Some("because"),
            // "a shared cause" is the noun; "cause I was tired" the conjunction.
            "cause" if opens_a_clause(all.get(k + 1)) => Some("because"),
            "haha" | "hahaha" | "lol" | "lmao" | "omg" | "xd" => Some(""),
            _ => None,
        };
        match replaced {
            Some("") => {}
            // One word each, so the verb in "have to" agrees like any other.
            Some(r) => {
                let r = format!("{}{tail}", keep_case(head, r));
                out.extend(r.split(' ').map(str::to_string));
            }
            None => out.push(squeeze(&w)),
        }
    }
    out
}

/// Whether `next` opens a clause: a subject pronoun ("cause I was tired").
fn opens_a_clause(next: Option<&&str>) -> bool {
    next.is_some_and(|n| {
        matches!(
            plain(n).as_str(),
            "i" | "i'm"
                | "i've"
                | "we"
                | "we're"
                | "you"
                | "you're"
                | "he"
                | "she"
                | "it"
                | "it's"
                | "they"
                | "they're"
                | "that's"
                | "there's"
                | "my"
                | "our"
        )
    })
}

/// Letters said three times or more said once: "sooo" → "so", "yesss" → "yes".
fn squeeze(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let chars: Vec<char> = word.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let mut run = 1;
        while i + run < chars.len() && chars[i + run] == c {
            run += 1;
        }
        let keep = if run >= 3 && c.is_alphabetic() {
            1
        } else {
            run
        };
        out.extend(std::iter::repeat_n(c, keep));
        i += run;
    }
    out
}

fn is_emoji(c: char) -> bool {
    matches!(c as u32, 0x1F000..=0x1FAFF | 0x2600..=0x27BF | 0xFE0F | 0x200D)
}

/// A word and the punctuation after it: ("store", "!").
fn split_punct(word: &str) -> (&str, &str) {
    let end = word
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_alphanumeric() || *c == '\'' || *c == '’')
        .map_or(0, |(i, c)| i + c.len_utf8());
    word.split_at(end)
}

/// `new` capitalised as `old` was.
fn keep_case(old: &str, new: &str) -> String {
    let trimmed = old.trim_start_matches(|c: char| !c.is_alphanumeric());
    let lead = &old[..old.len() - trimmed.len()];
    if trimmed.chars().next().is_some_and(char::is_uppercase)
        && trimmed != "I"
        && !trimmed.starts_with("I'")
    {
        let mut chars = new.chars();
        match chars.next() {
            Some(c) => format!("{lead}{}{}", c.to_uppercase(), chars.as_str()),
            None => lead.to_string(),
        }
    } else {
        format!("{lead}{new}")
    }
}

/// The statement tidied: no closing marks or doubled spaces, a capital first letter.
fn finish(s: String) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let s =
        s.trim_end_matches(|c: char| !c.is_alphanumeric() && !matches!(c, ')' | '"' | '”' | '\''));
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => format!("{}{}", c.to_uppercase(), chars.as_str()),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::understand::dates;

    fn said_on(y: i32, m: u32, d: u32) -> i64 {
        Utc.with_ymd_and_hms(y, m, d, 13, 56, 0)
            .unwrap()
            .timestamp_micros()
    }

    #[test]
    fn the_speaker_is_named_and_the_verb_agrees() {
        let s = |c: &str| third(c, &Person::Speaker, "Caroline", None);
        assert_eq!(
            s("I'm keen on counseling"),
            "Caroline is keen on counseling"
        );
        assert_eq!(
            s("I love painting with my kids"),
            "Caroline loves painting with their kids"
        );
        assert_eq!(s("I really try to run"), "Caroline really tries to run");
        assert_eq!(
            s("I slowly formed connections"),
            "Caroline slowly formed connections"
        );
        assert_eq!(
            s("I ran for a shared cause"),
            "Caroline ran for a shared cause"
        );
        assert_eq!(
            s("I left cause I was tired"),
            "Caroline left because they were tired"
        );
        assert_eq!(
            s("I've been to Rome once"),
            "Caroline has been to Rome once"
        );
        assert_eq!(s("I have two dogs"), "Caroline has two dogs");
        assert_eq!(
            s("I don't eat meat anymore!"),
            "Caroline doesn't eat meat anymore"
        );
        assert_eq!(
            s("I went there and I was sooo happy haha"),
            "Caroline went there and they were so happy"
        );
        assert_eq!(
            s("My store is doing great"),
            "Caroline's store is doing great"
        );
        assert_eq!(
            s("I am going to continue my edu"),
            "Caroline is going to continue their edu"
        );
        assert_eq!(
            s("I'd love to support those with similar issues"),
            "Caroline would love to support those with similar issues"
        );
    }

    #[test]
    fn others_keep_their_verbs_and_the_speakers_words_become_the_speakers_name() {
        let s = third(
            "Maria helped me move my couch",
            &Person::Named("Maria".into()),
            "Gina",
            None,
        );
        assert_eq!(s, "Maria helped Gina move Gina's couch");
        let trip = third(
            "That picture was from a trip we took for my daughter's birthday, we were tired",
            &Person::Touched,
            "John",
            None,
        );
        assert_eq!(
            trip,
            "That picture was from a trip John took for John's daughter's birthday, John was tired"
        );
        let kin = third(
            "my sister works at Acme",
            &Person::Kin("sister".into()),
            "User",
            None,
        );
        assert_eq!(kin, "User's sister works at Acme");
    }

    #[test]
    fn relative_times_become_dates() {
        let said = said_on(2023, 5, 8);
        let clause = "I went to a LGBTQ support group yesterday";
        let d = dates::find(clause, said).unwrap();
        assert_eq!(
            third(clause, &Person::Speaker, "Caroline", Some(&d)),
            "Caroline went to a LGBTQ support group on 7 May 2023"
        );
        let clause = "I painted that lake sunrise last year";
        let d = dates::find(clause, said).unwrap();
        assert_eq!(
            third(clause, &Person::Speaker, "Melanie", Some(&d)),
            "Melanie painted that lake sunrise in 2022"
        );
        let clause = "I moved to Munich in October";
        let d = dates::find(clause, said_on(2026, 12, 1)).unwrap();
        assert_eq!(
            third(clause, &Person::Speaker, "User", Some(&d)),
            "User moved to Munich in October 2026"
        );
    }
}
