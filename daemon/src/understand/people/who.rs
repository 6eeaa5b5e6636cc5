//! Who a clause is about, and the clause with that person made explicit: "I …" for the
//! speaker (also for "we …" and for chat that drops the "I": "Gonna continue my studies"),
//! a name for a named person ("my sister Maria lives …" is about Maria, the speaker's
//! sister; "she …" is the one person named before it, when there is exactly one), "my sister
//! …" for a relative with no name. Anything else ("It was fun", "You rock") is about nobody.

use std::sync::LazyLock;

use regex::Regex;

use super::words::{
    is_adverb_between, is_company, is_name_like, is_past_verb, looks_like_a_verb, lower_first,
    plain,
};
use crate::understand::entities::is_relation;

/// The person a clause is about.
#[derive(Debug, Clone, PartialEq)]
pub enum Person {
    /// The one who says it ("I", "we").
    Speaker,
    /// Someone named: "Maria", "Dr. Chen".
    Named(String),
    /// The speaker's relative, unnamed: "sister" ("my sister lives in Madrid").
    Kin(String),
    /// The speaker, named in a clause whose subject is something else: "The support group
    /// made me feel accepted", "Dancing brings me joy".
    Touched,
    /// No one the clause names: an instruction ("Never use emojis"), a note ("The report is
    /// due Friday"), a pronoun with nothing before it. The slot rules still read it.
    Unknown,
    /// A view the speaker states about the world ("Family moments make life awesome"): a
    /// clause with a subject of its own that is neither a person nor a pointer back.
    View,
}

/// A clause with its subject made explicit.
#[derive(Debug, Clone, PartialEq)]
pub struct Subjected {
    pub person: Person,
    /// The clause opening with "I", the name, or "my `<relation>`".
    pub clause: String,
    /// "Maybe", "I think": said with less than certainty.
    pub hedged: bool,
    /// "my sister Maria": the relation the clause names for a named person.
    pub relation: Option<String>,
}

/// What was said before a clause, for the clauses after it.
#[derive(Debug, Default)]
pub struct Context {
    /// The subject of the clause before, for one that opens with its verb.
    pub last: Option<(Person, String)>,
    /// People named as subjects so far ("she" is one of them, when there is one).
    pub named: Vec<String>,
}

static FILLER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:(?:well|actually|btw|by the way|also|oh|so|and|but|honestly|anyway|anyways|yeah|yes|yep|no|nope|ok|okay|hey|hi|hello|lol|haha|hahaha|fyi|just so you know|for the record|just a reminder|reminder|remember|note|fun fact|to be honest|tbh|these days|nowadays|now|lately|recently|wow|whoa|woah|omg|aww|awww|ugh|um|uh|hmm|guess what|plus|besides|luckily|sadly|unfortunately|fortunately|thankfully|anyhow|speaking of which|oh man|man|dude|big news|good news|bad news|update|important|news|ps|p\.s\.)\b(?: that)?[,:!.]*\s+)+",
    )
    .expect("valid pattern")
});

/// A frame that announces news rather than being it ("Wanted to let you know that I'm
/// running again", "I'm so excited to tell you I started yoga", "Just wanted to give you the
/// heads up on what's been happening lately- I took a class"): the news is what follows.
static REPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)^
        (?:i\s+)?(?:just\s+|really\s+|also\s+)?
        (?:
            (?:wanted|want|had|have|needed|need|got)\s+to
          | (?:i'm|i’m|i\s+am|am)\s+(?:so\s+|really\s+|super\s+|just\s+)?
            (?:excited|happy|glad|thrilled|stoked|pumped|proud|pleased|sad|sorry)\s+to
        )\s+
        (?:let\s+you\s+know|tell\s+you|say|share(?:\s+with\s+you)?|update\s+you
          | give\s+you\s+(?:a|the)\s+(?:quick\s+)?heads[\s-]?up
          | announce|report)
        (?:\s+(?:on|about)\s+[^-–—:]*[-–—:])?
        (?:\s+that\b|\s*[-–—:,]+)?\s+",
    )
    .expect("valid pattern")
});

static HEDGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:i think|i guess|i believe|i suppose|i feel like|it seems like|seems like|it seems|maybe|probably|perhaps)\s+(?:that\s+)?",
    )
    .expect("valid pattern")
});

/// Words that open a question rather than a statement.
const ASKING: &[&str] = &[
    "do", "does", "did", "is", "are", "am", "was", "were", "can", "could", "would", "should",
    "will", "what", "where", "who", "whom", "when", "why", "how", "which", "have", "has",
    "whether", "wonder", "imagine", "what's", "how's", "where's", "who's",
];

/// Past forms that are feelings or states: "Excited to …" is "I am excited to …".
const STATE_ADJECTIVES: &[&str] = &[
    "excited",
    "thrilled",
    "stoked",
    "pumped",
    "tired",
    "exhausted",
    "bored",
    "stressed",
    "worried",
    "scared",
    "interested",
    "amazed",
    "surprised",
    "blessed",
    "determined",
    "motivated",
    "inspired",
    "overwhelmed",
    "swamped",
    "obsessed",
    "hooked",
    "married",
    "engaged",
    "divorced",
    "retired",
    "pleased",
    "impressed",
    "relieved",
    "delighted",
    "devastated",
    "heartbroken",
    "exhausted",
    "frustrated",
    "annoyed",
    "done",
    "psyched",
    "based",
    "settled",
];

/// Verbs in "-ing" that chat opens with for "I am …": "Thinking of getting a dog".
const ING_OPENERS: &[&str] = &[
    "thinking",
    "planning",
    "hoping",
    "trying",
    "working",
    "looking",
    "heading",
    "going",
    "starting",
    "taking",
    "getting",
    "learning",
    "reading",
    "watching",
    "training",
    "studying",
    "volunteering",
    "considering",
    "saving",
    "moving",
    "preparing",
    "living",
    "staying",
];

/// Words chat opens with for "I …": "Just got back", "Never had a chance", "Finally did it".
const DROPPED_I_ADVERBS: &[&str] = &[
    "just", "never", "finally", "also", "recently", "still", "already", "really", "totally",
    "always", "actually",
];

/// The clause made explicit; [`Person::Unknown`] when it is about no one it can name, and
/// `None` when it asks.
pub fn subject(clause: &str, carried: bool, cx: &mut Context) -> Option<Subjected> {
    let text = clause.trim_matches(|ch: char| {
        matches!(ch, '"' | '“' | '”' | '(' | ')' | '*' | '-' | ' ' | '\'')
    });
    let text = FILLER.replace(text, "");
    let hedged = HEDGE.is_match(&text);
    let text = HEDGE.replace(&text, "").trim().to_string();
    // "Maria, since we last spoke I went …": the name spoken to is not part of the clause.
    let text = match text.split_once(", ") {
        Some((head, rest)) if !head.contains(' ') && is_name_like(head) && !rest.is_empty() => {
            rest.to_string()
        }
        _ => text,
    };
    // "… with my business, Jon!": nor is a name spoken to at the end (but "my sister, Maria"
    // names her).
    let text = match text.rsplit_once(", ") {
        Some((head, name))
            if is_name_like(name.trim_end_matches(|c: char| !c.is_alphanumeric()))
                && !name
                    .trim_end_matches(|c: char| !c.is_alphanumeric())
                    .contains(' ')
                && head.split_whitespace().count() >= 3
                && !head.split_whitespace().last().is_some_and(|w| {
                    is_relation(&plain(w))
                        || is_name_like(w.trim_matches(|c: char| !c.is_alphanumeric()))
                }) =>
        {
            let end: String = name
                .chars()
                .filter(|c| matches!(c, '.' | '!' | '?'))
                .collect();
            format!("{head}{end}")
        }
        _ => text,
    };
    let text = REPORT.replace(&text, "").to_string();
    // "After years of classes I finally became a lawyer": the subject after a fronted phrase
    // goes first, the phrase after it.
    let text = {
        let words: Vec<&str> = text.split_whitespace().collect();
        match fronted(&words) {
            Some(k) => {
                let phrase = words[..k].join(" ");
                let phrase = phrase.trim_end_matches(',');
                let phrase = if is_name_like(words[0].trim_end_matches(',')) {
                    phrase.to_string()
                } else {
                    lower_first(phrase)
                };
                format!("{}, {phrase}", words[k..].join(" "))
            }
            None => text.clone(),
        }
    };
    let words: Vec<&str> = text.split_whitespace().collect();
    let first = words.first().map(|w| plain(w))?;
    if ASKING.contains(&first.as_str()) && !carried {
        return None;
    }
    let found = explicit(&text, &words, &first, hedged, carried, cx);
    Some(found.unwrap_or_else(|| {
        cx.last = None;
        let view = !carried && states_a_view(&words);
        Subjected {
            person: if view { Person::View } else { Person::Unknown },
            clause: text.clone(),
            hedged,
            relation: None,
        }
    }))
}

/// Words that open a phrase put before its clause's subject ("After years of classes I …").
pub(super) const FRONTING: &[&str] = &[
    "after",
    "before",
    "since",
    "during",
    "while",
    "in",
    "on",
    "at",
    "for",
    "last",
    "this",
    "next",
    "yesterday",
    "today",
    "tonight",
    "tomorrow",
    "finally",
    "recently",
    "lately",
    "eventually",
    "once",
    "over",
    "through",
    "earlier",
    "later",
    "back",
];

/// Where the subject of a clause that opens with a fronted phrase starts: "I" or "we" after
/// a phrase of two words or more, or after its comma ("Yesterday, I went …"); "my" after the
/// comma ("Last week, my grandma passed away").
fn fronted(words: &[&str]) -> Option<usize> {
    let first = plain(words.first()?);
    if !FRONTING.contains(&first.as_str()) {
        return None;
    }
    words
        .iter()
        .enumerate()
        .skip(1)
        .find(|&(k, w)| {
            let after_comma = words[k - 1].ends_with(',');
            match plain(w).as_str() {
                "i" | "i'm" | "i've" | "i'd" | "we" | "we're" | "we've" => k >= 2 || after_comma,
                "my" | "our" => after_comma,
                _ => false,
            }
        })
        .map(|(k, _)| k)
}

/// A clause that opens with a subject of its own ("Family moments make life awesome", "Events
/// like these are great"): not a pronoun pointing back, an order, chat, or a bare verb.
fn states_a_view(words: &[&str]) -> bool {
    let lower: Vec<String> = words.iter().map(|w| plain(w)).collect();
    let first = lower.first().cloned().unwrap_or_default();
    // "It's so important to teach kids …": "it" holds the place of what follows.
    let placeholder = (first == "it's"
        || (first == "it" && lower.get(1).is_some_and(|w| w == "is")))
        && lower[2..]
            .iter()
            .any(|w| matches!(w.as_str(), "to" | "that" | "how"));
    if placeholder {
        return words.len() >= 5;
    }
    let verb_first = first.len() > 3 && first.ends_with('s') && looks_like_a_verb(&first);
    let determiner = is_determiner_phrase(&lower);
    // "Going to be a great night", "Gonna be fun": about something said before.
    let to_come = matches!(first.as_str(), "going" | "gonna")
        && lower.get(1).is_some_and(|w| w == "to" || w == "be");
    if to_come {
        return false;
    }
    words.len() >= 4
        && (determiner || !UNRESOLVED.contains(&first.as_str()))
        && !IMPERATIVES.contains(&first.as_str())
        && !verb_first
        && (determiner || !crate::understand::entities::is_common_word(&first))
        && !is_past_verb(&first)
        && lower[1..].iter().any(|w| {
            looks_like_a_verb(w) || matches!(w.as_str(), "are" | "make" | "bring" | "can" | "help")
        })
}

/// "These figurines …", "That trip …": a determiner before a noun, not a pronoun.
fn is_determiner_phrase(lower: &[String]) -> bool {
    let first = lower.first().map(String::as_str).unwrap_or_default();
    let next = lower.get(1).map(String::as_str).unwrap_or_default();
    matches!(first, "this" | "that" | "these" | "those")
        && !next.is_empty()
        && !looks_like_a_verb(next)
        && !matches!(
            next,
            "is" | "was"
                | "are"
                | "were"
                | "one"
                | "ones"
                | "will"
                | "would"
                | "must"
                | "sounds"
                | "looks"
                | "seems"
                | "means"
        )
}

/// [`subject`] once the clause is trimmed: `None` when it names no one.
fn explicit(
    text: &str,
    words: &[&str],
    first: &str,
    hedged: bool,
    carried: bool,
    cx: &mut Context,
) -> Option<Subjected> {
    let rest = |n: usize| words[n.min(words.len())..].join(" ");
    let made = |person: Person, clause: String, relation: Option<String>| Subjected {
        person,
        clause,
        hedged,
        relation,
    };
    if carried {
        let (person, phrase) = cx.last.clone()?;
        return Some(made(person, format!("{phrase} {text}"), None));
    }
    let out = match with_the_speaker(words) {
        // "Chris and I got divorced", "Some friends from church and I went camping": the
        // speaker, with them.
        Some((with, at)) => made(Person::Speaker, format!("I {} with {with}", rest(at)), None),
        None => match first {
            "i" | "i'm" | "im" | "i've" | "ive" | "i'd" | "i'll" => {
                let opener = match first {
                    "im" => "I'm",
                    "ive" => "I've",
                    _ => &capital_i(words[0]),
                };
                made(Person::Speaker, format!("{opener} {}", rest(1)), None)
            }
            "we" | "we're" | "we've" | "we'd" | "we'll" => {
                let opener = match first {
                    "we" => "I",
                    "we're" => "I'm",
                    "we've" => "I've",
                    "we'd" => "I'd",
                    _ => "I'll",
                };
                let mut tail: Vec<String> = words[1..].iter().map(|w| w.to_string()).collect();
                // "we all had great ideas": the speaker had them too.
                if tail
                    .first()
                    .is_some_and(|w| matches!(plain(w).as_str(), "all" | "both"))
                {
                    tail.remove(0);
                }
                // "we are" is "I am", "we were" "I was"; a word between may come first.
                let verb = tail.iter().position(|w| !is_adverb_between(&plain(w)));
                if let Some(v) = verb.filter(|_| first == "we") {
                    match plain(&tail[v]).as_str() {
                        "are" => tail[v] = "am".into(),
                        "were" => tail[v] = "was".into(),
                        _ => {}
                    }
                }
                made(
                    Person::Speaker,
                    format!("{opener} {}", tail.join(" ")),
                    None,
                )
            }
            "my" | "our" => {
                let (rel, at) = relation_at(words, 1)?;
                match rel {
                    // "my sister Maria lives …": Maria, the sister.
                    Some(rel) => match name_at(words, at) {
                        Some((name, after)) => made(
                            Person::Named(name.clone()),
                            format!("{name} {}", rest(after)),
                            Some(rel),
                        ),
                        None => made(
                            Person::Kin(rel.clone()),
                            format!("my {rel} {}", rest(at)),
                            None,
                        ),
                    },
                    // "my store is doing well": the speaker's.
                    None => made(Person::Speaker, text.to_string(), None),
                }
            }
            "she" | "he" | "she's" | "he's" => {
                let [only] = cx.named.as_slice() else {
                    return None;
                };
                let name = only.clone();
                let verb = if first.ends_with("'s") { " is" } else { "" };
                made(
                    Person::Named(name.clone()),
                    format!("{name}{verb} {}", rest(1)),
                    None,
                )
            }
            _ => {
                let named = name_at(words, 0).filter(|&(_, after)| {
                    // "Jon, you rock": a name spoken to, not a subject; a verb must follow.
                    after < words.len()
                        && !words[after - 1].ends_with(',')
                        && words[after].chars().next().is_some_and(char::is_lowercase)
                        && looks_like_a_verb(&plain(words[after]))
                });
                match named {
                    Some((name, after)) => made(
                        Person::Named(name.clone()),
                        format!("{name} {}", rest(after)),
                        None,
                    ),
                    None => match dropped_i(words) {
                        Some(clause) => made(Person::Speaker, clause, None),
                        None if touches_the_speaker(words) => {
                            made(Person::Touched, text.to_string(), None)
                        }
                        None => return None,
                    },
                }
            }
        },
    };
    if let Person::Named(name) = &out.person {
        if !cx.named.contains(name) {
            cx.named.push(name.clone());
        }
    }
    cx.last = match &out.person {
        Person::Speaker => Some((Person::Speaker, "I".to_string())),
        Person::Named(n) => Some((out.person.clone(), n.clone())),
        Person::Kin(rel) => Some((out.person.clone(), format!("my {rel}"))),
        // "…made me feel accepted and gave me courage": what follows shares no person subject.
        Person::Touched | Person::Unknown | Person::View => None,
    };
    Some(out)
}

/// "Chris and I …", "Some friends from church and I …": who the speaker did it with, and
/// where the words after "and I" start.
fn with_the_speaker(words: &[&str]) -> Option<(String, usize)> {
    let at = (1..words.len().min(7))
        .find(|&k| plain(words[k]) == "and" && words.get(k + 1).is_some_and(|w| plain(w) == "i"))?;
    let before = &words[..at];
    if !is_company(before) || words.len() <= at + 2 {
        return None;
    }
    let with = before.join(" ");
    let with = if is_name_like(before[0]) {
        with
    } else {
        lower_first(&with)
    };
    Some((with, at + 2))
}

/// Subjects that point at something said before the clause.
const UNRESOLVED: &[&str] = &[
    "it", "it's", "its", "they", "they're", "them", "this", "that", "that's", "these", "those",
    "he", "she", "he's", "she's", "there", "there's", "which", "who", "what", "what's", "you",
    "your", "you're", "here", "here's",
];

/// Verbs that open an order or a request, not a statement.
const IMPERATIVES: &[&str] = &[
    "let", "let's", "thanks", "thank", "please", "check", "look", "see", "take", "have", "come",
    "guess", "imagine", "picture", "meet", "say", "tell", "get", "give", "keep", "try", "remember",
    "enjoy", "wish", "send", "show", "call", "text", "bring", "join", "hit", "hang", "stay",
    "wait", "hold", "use", "go", "do", "be", "start", "focus", "consider", "find", "ask", "think",
    "believe", "don't", "never", "always", "reach", "post", "share", "build", "create", "follow",
    "plan", "make", "put", "set", "read", "watch", "listen",
];

/// A clause about something else that names the speaker past its subject ("…made me feel
/// accepted", "…brings me joy"): about the speaker too. Not one addressed to the listener.
fn touches_the_speaker(words: &[&str]) -> bool {
    let lower: Vec<String> = words.iter().map(|w| plain(w)).collect();
    let first = lower.first().map(String::as_str).unwrap_or_default();
    // A pronoun subject points at what was said before it ("It reminded me …"), which this
    // clause alone cannot name; a bare verb gives an order ("Check out my studio").
    // "Reminds me how …": a verb first, its subject ("it") left out.
    let verb_first = first.len() > 3 && first.ends_with('s') && looks_like_a_verb(first);
    (is_determiner_phrase(&lower) || !UNRESOLVED.contains(&first))
        && !IMPERATIVES.contains(&first)
        && !verb_first
        && lower
            .iter()
            .skip(1)
            .any(|w| matches!(w.as_str(), "me" | "my" | "myself" | "mine"))
}

/// "i'm" as "I'm".
fn capital_i(word: &str) -> String {
    let w = word.replace('’', "'");
    let mut chars = w.chars();
    match chars.next() {
        Some(_) => format!("I{}", chars.as_str()),
        None => w,
    }
}

/// Qualifiers of a relation ("best friend", "older sister").
const KIN_QUALIFIERS: &[&str] = &[
    "best",
    "closest",
    "oldest",
    "old",
    "older",
    "younger",
    "little",
    "big",
    "baby",
    "twin",
    "eldest",
    "youngest",
    "step",
    "new",
    "dear",
    "childhood",
    "college",
    "school",
];

/// After "my" at `at`: `Some(relation)` and where the words after it start, `None` for a
/// possession ("my store"); nothing at all when the clause ends there.
fn relation_at(words: &[&str], at: usize) -> Option<(Option<String>, usize)> {
    let mut i = at;
    let mut said = Vec::new();
    while let Some(w) = words.get(i) {
        let p = plain(w);
        if KIN_QUALIFIERS.contains(&p.as_str()) {
            said.push(p);
            i += 1;
            continue;
        }
        let kin = p.trim_end_matches("'s").to_string();
        if is_relation(&kin) && !p.ends_with("'s") {
            said.push(kin);
            return Some((Some(said.join(" ")), i + 1));
        }
        return Some((None, at));
    }
    None
}

/// A name at `at` (one to three capitalised words, a title kept: "Dr. Chen"), and where the
/// words after it start.
fn name_at(words: &[&str], at: usize) -> Option<(String, usize)> {
    let mut i = at;
    let mut parts = Vec::new();
    while let Some(w) = words.get(i) {
        let bare = w.trim_matches(|c: char| !c.is_alphanumeric() && c != '.');
        let title = matches!(
            bare.to_lowercase().trim_end_matches('.'),
            "dr" | "mr" | "mrs" | "ms" | "prof" | "aunt" | "uncle"
        ) && bare.chars().next().is_some_and(char::is_uppercase);
        let bare = bare.trim_end_matches('.');
        if parts.len() < 3 && (title || is_name_like(bare)) {
            parts.push(if title && w.contains('.') {
                format!("{bare}.")
            } else {
                bare.to_string()
            });
            i += 1;
            if w.ends_with(',') || (!title && w.ends_with('.')) {
                break;
            }
            continue;
        }
        break;
    }
    let only_title = parts.len() == 1 && parts[0].ends_with('.');
    (!parts.is_empty() && !only_title).then(|| (parts.join(" "), i))
}

/// Chat that drops its "I": "Gonna continue my studies", "Just got back", "Excited to start".
fn dropped_i(words: &[&str]) -> Option<String> {
    let first = plain(words.first()?);
    // The opening word goes after "I": lower case ("Just got back" is "I just got back").
    let all = format!("{first}{}", &words.join(" ")[words[0].len()..]);
    let all = all.trim().to_string();
    let after = |n: usize| words[n.min(words.len())..].join(" ");
    // "Gonna be a great night" is about the night ("it's gonna be").
    let next = words.get(1).map(|w| plain(w)).unwrap_or_default();
    let then = words.get(2).map(|w| plain(w)).unwrap_or_default();
    // "Taking risks is scary": a gerund that is the subject, not a dropped "I am".
    let gerund_subject = words[1..].iter().any(|w| {
        matches!(
            plain(w).as_str(),
            "is" | "was"
                | "are"
                | "were"
                | "makes"
                | "helps"
                | "gives"
                | "brings"
                | "keeps"
                | "means"
                | "sounds"
                | "seems"
                | "takes"
                | "feels"
                | "can"
                | "could"
                | "will"
                | "would"
                | "might"
                | "should"
                | "must"
        )
    });
    if first == "gonna"
        && next == "be"
        && matches!(
            then.as_str(),
            "a" | "an"
                | "the"
                | "so"
                | "awesome"
                | "great"
                | "fun"
                | "amazing"
                | "epic"
                | "tough"
                | "hard"
        )
    {
        return None;
    }
    if first == "gonna" {
        return Some(format!("I am going to {}", after(1)));
    }
    if first == "wanna" {
        return Some(format!("I want to {}", after(1)));
    }
    if first == "gotta" {
        return Some(format!("I have to {}", after(1)));
    }
    // "Been rehearsing", "Been to Rome"; not "Been a busy week" (it has).
    if first == "been" {
        let next = words.get(1).map(|w| plain(w)).unwrap_or_default();
        let fits = next == "to"
            || next.ends_with("ing")
            || is_past_verb(&next)
            || is_adverb_between(&next);
        return fits.then(|| format!("I have {all}"));
    }
    if ING_OPENERS.contains(&first.as_str()) && gerund_subject {
        return None;
    }
    if STATE_ADJECTIVES.contains(&first.as_str())
        || (ING_OPENERS.contains(&first.as_str()) && !gerund_subject)
    {
        return Some(format!("I am {all}"));
    }
    if first == "off" && words.get(1).is_some_and(|w| plain(w) == "to") {
        return Some(format!("I am {all}"));
    }
    let verb = if DROPPED_I_ADVERBS.contains(&first.as_str()) {
        plain(words.get(1)?)
    } else {
        first.clone()
    };
    // "Never use emojis" is an instruction: only a past opens a dropped "I".
    (is_past_verb(&verb) && !STATE_ADJECTIVES.contains(&verb.as_str()) && verb != "been")
        .then(|| format!("I {all}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(clause: &str) -> Option<(Person, String)> {
        subject(clause, false, &mut Context::default()).map(|s| (s.person, s.clause))
    }

    #[test]
    fn first_person_and_we_are_the_speaker() {
        assert_eq!(
            read("I now work at Stripe"),
            Some((Person::Speaker, "I now work at Stripe".into()))
        );
        assert_eq!(
            read("We moved to Munich in October"),
            Some((Person::Speaker, "I moved to Munich in October".into()))
        );
        assert_eq!(
            read("we are in Munich now"),
            Some((Person::Speaker, "I am in Munich now".into()))
        );
        assert_eq!(
            read("Big news: I left Google"),
            Some((Person::Speaker, "I left Google".into()))
        );
        assert_eq!(
            read("Important I am allergic"),
            Some((Person::Speaker, "I am allergic".into()))
        );
    }

    #[test]
    fn a_relative_with_a_name_is_that_person() {
        let got = subject(
            "My sister Maria lives in Lisbon",
            false,
            &mut Context::default(),
        )
        .unwrap();
        assert_eq!(got.person, Person::Named("Maria".into()));
        assert_eq!(got.clause, "Maria lives in Lisbon");
        assert_eq!(got.relation.as_deref(), Some("sister"));
        assert_eq!(
            read("my older brother works at a bank"),
            Some((
                Person::Kin("older brother".into()),
                "my older brother works at a bank".into()
            ))
        );
        assert_eq!(
            read("My store is doing great"),
            Some((Person::Speaker, "My store is doing great".into()))
        );
    }

    #[test]
    fn she_is_the_one_person_named_before_and_a_carried_clause_shares_its_subject() {
        let mut cx = Context::default();
        subject("Maria moved to Porto", false, &mut cx).unwrap();
        let she = subject("she loves it there", false, &mut cx).unwrap();
        assert_eq!(she.clause, "Maria loves it there");
        let carried = subject("works as an architect", true, &mut cx).unwrap();
        assert_eq!(carried.clause, "Maria works as an architect");
        subject("Tom joined Acme", false, &mut cx).unwrap();
        let he = subject("he likes it", false, &mut cx).unwrap();
        assert_eq!(he.person, Person::Unknown, "two people named");
        assert_eq!(
            read("She lives in Rome").unwrap().0,
            Person::Unknown,
            "nobody named before"
        );
    }

    #[test]
    fn a_name_spoken_to_at_the_end_is_dropped_but_an_apposition_stays() {
        assert_eq!(
            read("I've had some tough times with my business, Jon!").map(|(_, c)| c),
            Some("I've had some tough times with my business!".into())
        );
        assert_eq!(
            read("I moved in with my sister, Maria").map(|(_, c)| c),
            Some("I moved in with my sister, Maria".into())
        );
    }

    #[test]
    fn titles_stay_with_names_and_names_spoken_to_are_no_subjects() {
        assert_eq!(
            read("Dr. Chen moved to Boston"),
            Some((
                Person::Named("Dr. Chen".into()),
                "Dr. Chen moved to Boston".into()
            ))
        );
        for said in ["Jon, you rock", "Looks like a blast", "It was so much fun"] {
            assert_eq!(read(said).unwrap().0, Person::Unknown, "{said}");
        }
        assert!(read("Do you like it").is_none(), "a question");
    }

    #[test]
    fn chat_that_drops_its_i_is_the_speaker() {
        for (said, meant) in [
            ("Gonna continue my edu", "I am going to continue my edu"),
            ("Just got back from Paris", "I just got back from Paris"),
            (
                "Excited to start the new job",
                "I am excited to start the new job",
            ),
            ("Been only to Rome once", "I have been only to Rome once"),
            (
                "Got the tattoo a few years ago",
                "I got the tattoo a few years ago",
            ),
            (
                "Thinking of getting a dog",
                "I am thinking of getting a dog",
            ),
        ] {
            assert_eq!(read(said), Some((Person::Speaker, meant.into())), "{said}");
        }
        assert_eq!(read("Sounds great").unwrap().0, Person::Unknown);
        assert_eq!(read("Love the tattoo").unwrap().0, Person::Unknown);
    }

    #[test]
    fn a_frame_that_announces_news_leaves_the_news() {
        assert_eq!(
            read("Wanted to let you know that I'm running for office again"),
            Some((Person::Speaker, "I'm running for office again".into()))
        );
        assert_eq!(
            read("Maria, I'm so excited to tell you I started a yoga class"),
            Some((Person::Speaker, "I started a yoga class".into()))
        );
        assert_eq!(
            read("Just wanted to give you the heads up on what's been happening lately- I took a class"),
            Some((Person::Speaker, "I took a class".into()))
        );
    }

    #[test]
    fn the_subject_after_a_phrase_put_first_opens_the_clause() {
        assert_eq!(
            read("Last week, my grandma passed away"),
            Some((
                Person::Kin("grandma".into()),
                "my grandma passed away, last week".into()
            ))
        );
        assert_eq!(
            read("Yesterday, I went to the park"),
            Some((Person::Speaker, "I went to the park, yesterday".into()))
        );
    }

    #[test]
    fn people_and_i_are_the_speaker_with_them() {
        assert_eq!(
            read("Some friends from church and I went camping"),
            Some((
                Person::Speaker,
                "I went camping with some friends from church".into()
            ))
        );
        assert_eq!(
            read("Chris and I got divorced"),
            Some((Person::Speaker, "I got divorced with Chris".into()))
        );
    }
}
