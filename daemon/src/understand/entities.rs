//! Who and what a text names, by rules (no model, no network): the speaker of a
//! `Name: words` line, possessive relations ("my sister Maria"), @handles, URLs and paths,
//! runs of capitalised words ("New York", "Bank of America"), and any name the store already
//! knows, in any case ("thanks mel"). Each mention carries a folded key (lower case, no
//! possessive, single spaces) under which aliases and later mentions meet.

use std::collections::HashSet;
use std::sync::LazyLock;

type WordSet = LazyLock<HashSet<&'static str>>;

fn word_set(words: &'static str) -> HashSet<&'static str> {
    words.split_whitespace().collect()
}

/// What kind of thing an entity is (ARCHITECTURE §3): the protocol's type.
pub use mnemo_protocol::entity::EntityType as EntityKind;

#[derive(Debug, Clone, PartialEq)]
pub struct Mention {
    /// As written (possessive removed).
    pub name: String,
    /// What mentions of the same entity share: see [`fold`].
    pub key: String,
    pub kind: EntityKind,
    /// How the text relates it to its author: "speaker", "sister", …
    pub relation: Option<String>,
}

/// At most this many entities per memory: a pasted list must not flood the graph.
pub const MAX_MENTIONS: usize = 32;
/// The longest name a run of capitalised words makes.
const MAX_NAME_WORDS: usize = 4;

/// The key a name is known by: lower case, without a possessive or surrounding punctuation,
/// single spaces. "Melanie's" and "MELANIE" fold to "melanie".
pub fn fold(name: &str) -> String {
    let words: Vec<String> = name
        .split_whitespace()
        .map(|w| {
            let w = w.trim_matches(|c: char| !c.is_alphanumeric());
            let w = w
                .strip_suffix("'s")
                .or_else(|| w.strip_suffix("’s"))
                .unwrap_or(w);
            w.trim_end_matches(['\'', '’']).to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect();
    words.join(" ")
}

/// One word of the text, with what surrounds it.
struct Word<'a> {
    /// Without surrounding punctuation.
    text: &'a str,
    /// The raw token (for URLs, paths and handles).
    raw: &'a str,
    /// First word of a sentence (or of the text).
    starts_sentence: bool,
    /// Punctuation after it breaks a run of names (",", ".", ":", …).
    ends_run: bool,
}

fn words(text: &str) -> Vec<Word<'_>> {
    let mut out = Vec::new();
    let mut starts_sentence = true;
    for raw in text.split_whitespace() {
        let word = raw.trim_matches(|c: char| !c.is_alphanumeric());
        let last = raw.chars().last().unwrap_or(' ');
        let first = raw.chars().next().unwrap_or(' ');
        // "Dr. Chen": a title's full stop neither ends the name nor the sentence.
        let title =
            last == '.' && TITLES.contains(word.to_lowercase().as_str()) && capitalised(word);
        let word = if title {
            &raw[raw.len() - word.len() - 1..]
        } else {
            word
        };
        out.push(Word {
            text: word,
            raw,
            starts_sentence: starts_sentence || matches!(first, '"' | '(' | '“'),
            ends_run: !last.is_alphanumeric() && !title,
        });
        starts_sentence = !title
            && (matches!(last, '.' | '!' | '?' | ':' | ';' | '"' | '”')
                || raw.ends_with("...")
                || word.is_empty());
    }
    out
}

fn capitalised(w: &str) -> bool {
    let mut chars = w.chars();
    matches!(chars.next(), Some(c) if c.is_uppercase()) && w != "I" && !w.starts_with("I'")
}

/// Finds the entities `text` names. `known` says whether a folded key is a name the store
/// has already learned (it finds them in any case).
pub fn extract(text: &str, known: &dyn Fn(&str) -> bool) -> Vec<Mention> {
    let mut found = Found::default();
    let words = words(text);
    speaker(text, &mut found);
    for (i, w) in words.iter().enumerate() {
        if let Some(kind) = token_entity(w.raw) {
            let name = w.raw.trim_end_matches(['.', ',', ';', ':', ')', '!', '?']);
            found.push(name, kind, None);
            continue;
        }
        let lower = w.text.to_lowercase();
        if i >= 1 && RELATIONS.contains(&lower.as_str()) {
            let before = words[i - 1].text.to_lowercase();
            if matches!(before.as_str(), "my" | "our") && !w.ends_run {
                if let Some(next) = words.get(i + 1).filter(|n| capitalised(n.text)) {
                    found.push(next.text, EntityKind::Person, Some(&lower));
                }
            }
        }
    }
    runs(&words, known, &mut found);
    known_names(&words, known, &mut found);
    found.mentions.truncate(MAX_MENTIONS);
    found.mentions
}

#[derive(Default)]
struct Found {
    mentions: Vec<Mention>,
    keys: HashSet<String>,
}

impl Found {
    fn push(&mut self, name: &str, kind: EntityKind, relation: Option<&str>) {
        let key = fold(name);
        if key.len() < 2 || STOP.contains(&key.as_str()) || !self.keys.insert(key.clone()) {
            return;
        }
        let name = name
            .strip_suffix("'s")
            .or_else(|| name.strip_suffix("’s"))
            .unwrap_or(name);
        self.mentions.push(Mention {
            name: name.to_string(),
            key,
            kind,
            relation: relation.map(str::to_string),
        });
    }
}

/// "Caroline: …" or "Dr Smith: …" at the start: the author.
fn speaker(text: &str, found: &mut Found) {
    if let Some((head, _)) = speaker_line(text) {
        found.push(head, EntityKind::Person, Some("speaker"));
    }
}

/// A `Name: words` line split into its speaker (one to three capitalised words) and what
/// they said.
pub fn speaker_line(text: &str) -> Option<(&str, &str)> {
    let (head, said) = text.trim_start().split_once(": ")?;
    let names: Vec<&str> = head.split(' ').collect();
    let label = NOTE_LABELS.contains(&head.to_lowercase().as_str());
    (!label && names.len() <= 3 && names.iter().all(|w| capitalised(w) && w.len() < 30))
        .then_some((head, said))
}

/// Words that open a note or a line, not a speaker's turn ("Important: …", "TODO: …").
const NOTE_LABELS: &[&str] = &[
    "important",
    "note",
    "notes",
    "remember",
    "reminder",
    "todo",
    "to do",
    "update",
    "updates",
    "fyi",
    "ps",
    "p.s",
    "edit",
    "tip",
    "pro tip",
    "fact",
    "news",
    "big news",
    "warning",
    "caution",
    "attention",
    "question",
    "answer",
    "summary",
    "idea",
    "hint",
    "context",
    "goal",
    "goals",
    "task",
    "problem",
    "issue",
    "fix",
    "solution",
    "status",
    "result",
    "decision",
    "action",
    "next",
    "done",
    "bug",
    "lesson",
    "quote",
    "source",
    "title",
    "subject",
    "re",
    "fwd",
    "info",
    "disclaimer",
    "spoiler",
    "side note",
    "quick note",
    "heads up",
    "also",
    "today",
    "tomorrow",
    "yesterday",
    "later",
    "correction",
    "meeting",
    "agenda",
    "plan",
];

/// URLs, paths and @handles: recognised by their shape alone.
fn token_entity(raw: &str) -> Option<EntityKind> {
    let raw = raw.trim_start_matches(['(', '"', '\'', '“']);
    if raw.starts_with("http://") || raw.starts_with("https://") {
        return Some(EntityKind::Concept);
    }
    let is_path = (raw.starts_with('/') || raw.starts_with("~/") || raw.starts_with("./"))
        && raw[1..].contains('/');
    if is_path {
        return Some(EntityKind::Project);
    }
    let handle = raw.strip_prefix('@')?;
    let handle = handle.trim_end_matches(|c: char| !c.is_alphanumeric());
    (handle.len() >= 2
        && handle
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
    .then_some(EntityKind::Person)
}

/// Runs of capitalised words, joined by "of", "de", "van", … inside a run. A run at the start
/// of a sentence loses its first word when that word is a common one ("Yesterday Mel" is Mel).
fn runs(words: &[Word], known: &dyn Fn(&str) -> bool, found: &mut Found) {
    let mut i = 0;
    while i < words.len() {
        if !capitalised(words[i].text) || words[i].raw.starts_with(['@', '/', '~']) {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = i + 1;
        while end < words.len() && end - start < MAX_NAME_WORDS && !words[end - 1].ends_run {
            let w = words[end].text;
            if capitalised(w) {
                end += 1;
            } else if CONNECTORS.contains(&w)
                && words
                    .get(end + 1)
                    .is_some_and(|n| capitalised(n.text) && !words[end].ends_run)
            {
                end += 2;
            } else {
                break;
            }
        }
        i = end;
        let mut run: Vec<&str> = words[start..end].iter().map(|w| w.text).collect();
        if words[start].starts_sentence {
            let first = run[0].to_lowercase();
            if COMMON.contains(&first.as_str()) || STOP.contains(&first.as_str()) {
                run.remove(0);
            } else if run.len() == 1 && !known(&first) && !looks_like_a_name(run[0]) {
                continue;
            }
        }
        while run.last().is_some_and(|w| CONNECTORS.contains(w)) {
            run.pop();
        }
        if run.is_empty() {
            continue;
        }
        let name = run.join(" ");
        let before: Vec<String> = (start.saturating_sub(3)..start)
            .map(|b| words[b].text.to_lowercase())
            .collect();
        found.push(&name, kind_of(&run, &before), None);
    }
}

/// A capitalised word at the start of a sentence is a name only when it is not a common word
/// and does not look like one (mixed case or digits, as product names have, count as names).
fn looks_like_a_name(word: &str) -> bool {
    word.chars()
        .skip(1)
        .any(|c| c.is_uppercase() || c.is_ascii_digit())
}

/// What a run of capitalised words names, from its own words and the (up to three, lower
/// case) words before it: "work at X" is an organisation, "live in X" a place, "my friend
/// X", "with X", "Dr. X" a person.
fn kind_of(run: &[&str], before: &[String]) -> EntityKind {
    let last = run.last().map(|w| w.to_lowercase()).unwrap_or_default();
    let first = run[0].to_lowercase();
    let at = |back: usize| {
        before
            .len()
            .checked_sub(back)
            .map_or("", |i| before[i].as_str())
    };
    let titled = TITLES.contains(&first.trim_end_matches('.'));
    if run.len() == 1 && (DAYS.contains(&first.as_str()) || MONTHS.contains(&first.as_str())) {
        EntityKind::Time
    } else if titled || PERSON_BEFORE.contains(&at(1)) || RELATIONS.contains(&at(1)) {
        EntityKind::Person
    } else if ORGANIZATIONS.contains(&last.as_str())
        || ORGANIZATIONS.contains(&first.as_str())
        // "joined Stripe", "work at Google", "a job at Acme": what follows is an organisation.
        || JOINING.contains(&at(1))
        || (matches!(at(1), "at" | "for" | "by" | "with" | "from" | "in")
            && WORKING.contains(&at(2)))
        || (at(1) == "at" && WORKING.contains(&at(3)))
    {
        EntityKind::Organization
    } else if EVENTS.contains(&last.as_str()) {
        EntityKind::Event
    } else if PLACE_WORDS.contains(&at(1)) {
        EntityKind::Place
    } else if matches!(at(2), "name" | "named" | "called") && at(1) == "is"
        || matches!(at(1), "named" | "me")
    {
        EntityKind::Person
    } else {
        EntityKind::Concept
    }
}

/// Titles a person's name keeps ("Dr. Chen").
static TITLES: WordSet = LazyLock::new(|| word_set("dr mr mrs ms prof sir dame"));

/// Words after which a name is a person's: "with Jon", "met Ana", "told Sam".
static PERSON_BEFORE: WordSet = LazyLock::new(|| {
    word_set(
        "with met meet meeting told tell asked ask called call texted text emailed email      thanked thank hugged hug married marry dating date miss missed love loved named",
    )
});

/// Verbs whose object is an organisation: "joined Stripe", "left Google".
static JOINING: WordSet = LazyLock::new(|| word_set("joined join joining quit"));

/// Words before "at", "for", "by" that make what follows an organisation: "work at X",
/// "job with X", "hired by X".
static WORKING: WordSet = LazyLock::new(|| {
    word_set(
        "work works working worked job jobs hired employed intern internship interning      position role offer interview interviewed contract engineer developer manager      designer analyst consultant",
    )
});

/// Names the store knows, written in any case ("went hiking with mel").
fn known_names(words: &[Word], known: &dyn Fn(&str) -> bool, found: &mut Found) {
    for n in (1..=3).rev() {
        for window in words.windows(n) {
            if window[..n - 1].iter().any(|w| w.ends_run) {
                continue;
            }
            let phrase = window.iter().map(|w| w.text).collect::<Vec<_>>().join(" ");
            let key = fold(&phrase);
            if key.len() >= 3
                && !COMMON.contains(&key.as_str())
                && !found.keys.contains(&key)
                && known(&key)
            {
                found.push(&phrase, EntityKind::Concept, None);
            }
        }
    }
}

static RELATIONS: WordSet = LazyLock::new(|| {
    word_set(
        "sister brother mother mom mum father dad wife husband partner son daughter friend \
     boss colleague coworker cousin aunt uncle grandma grandmother grandpa grandfather \
     niece nephew girlfriend boyfriend fiance fiancé fiancée roommate neighbor neighbour \
     manager teacher doctor therapist mentor dog cat kid child baby",
    )
});

/// A word (lower case) that opens sentences and never names anyone ("the", "maybe").
pub fn is_common_word(word: &str) -> bool {
    COMMON.contains(word) || STOP.contains(word)
}

/// A word naming someone close ("sister", "boss", "dog").
pub fn is_relation(word: &str) -> bool {
    RELATIONS.contains(word)
}

// Not "and": "Maria and Tomas" is two people far more often than one firm.
static CONNECTORS: WordSet = LazyLock::new(|| word_set("of de del da van von der la le"));

/// Sentence-start words that are never names.
static COMMON: WordSet = LazyLock::new(|| {
    word_set(
        "a about after again also although an and any anyway are as at awesome because before \
     both but by can congrats congratulations could did do does during each even every \
     finally for from glad good great had has have he hello her here hey hi his how \
     however if in is it its just last let lol maybe me my next nice no not now of oh ok \
     okay on once one or our really right she since so some sometimes sorry sounds still \
     sure thank thanks that the their then there these they this those though to today \
     tomorrow totally two um until wait was we well were what when where which while who \
     why will with wow yeah yes yesterday yet you your yup absolutely amazing cool \
     definitely exactly haha honestly indeed love lately recently speaking talking went \
     been being having getting got go going make made take took see saw look looking \
     check think thought know feel feeling hope hoping happy please anyone everyone \
     nothing something everything all many more most much other such than too very would \
     should might must shall may new old first what's that's it's i'm i've i'll i'd don't \
     can't won't didn't isn't wasn't aren't let's here's there's",
    )
});

/// Never an entity on its own, whatever the case.
static STOP: WordSet = LazyLock::new(|| word_set("i im ive ill id ok okay hey hi oh lol"));

static DAYS: WordSet =
    LazyLock::new(|| word_set("monday tuesday wednesday thursday friday saturday sunday"));

static MONTHS: WordSet = LazyLock::new(|| {
    word_set(
        "january february march april may june july august september october november \
     december",
    )
});

static ORGANIZATIONS: WordSet = LazyLock::new(|| {
    word_set(
        "inc corp corporation ltd llc gmbh university college school academy company bank \
     hospital church club foundation institute center centre museum library team group \
     agency association society",
    )
});

static EVENTS: WordSet = LazyLock::new(|| {
    word_set(
        "festival conference summit wedding party marathon concert parade fair championship \
     tournament race show day",
    )
});

static PLACE_WORDS: WordSet =
    LazyLock::new(|| word_set("in at from to near visit visited visiting into around"));

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<String> {
        extract(text, &|_| false)
            .into_iter()
            .map(|m| m.key)
            .collect()
    }

    fn kinds(text: &str) -> Vec<(String, EntityKind)> {
        extract(text, &|_| false)
            .into_iter()
            .map(|m| (m.key, m.kind))
            .collect()
    }

    #[test]
    fn folding_meets_cases_possessives_and_spacing() {
        assert_eq!(fold("Melanie's"), "melanie");
        assert_eq!(fold("MELANIE"), "melanie");
        assert_eq!(fold("  New   York, "), "new york");
        assert_eq!(fold("Chris’"), "chris");
    }

    #[test]
    fn the_speaker_and_names_in_the_text() {
        let found = extract(
            "Caroline: Hey Mel! Yesterday I went to the LGBTQ support group with Melanie's friend Jon.",
            &|_| false,
        );
        let speaker = &found[0];
        assert_eq!(
            (
                speaker.key.as_str(),
                speaker.kind,
                speaker.relation.as_deref()
            ),
            ("caroline", EntityKind::Person, Some("speaker"))
        );
        let keys: Vec<&str> = found.iter().map(|m| m.key.as_str()).collect();
        for name in ["mel", "lgbtq", "melanie", "jon"] {
            assert!(keys.contains(&name), "{name} in {keys:?}");
        }
        for word in ["hey", "yesterday", "i", "the"] {
            assert!(!keys.contains(&word), "{word} in {keys:?}");
        }
    }

    #[test]
    fn possessive_relations_name_people() {
        let found = extract("Remember that my sister Maria is allergic to nuts", &|_| {
            false
        });
        let maria = found.iter().find(|m| m.key == "maria").expect("Maria");
        assert_eq!(maria.kind, EntityKind::Person);
        assert_eq!(maria.relation.as_deref(), Some("sister"));
    }

    #[test]
    fn multi_word_names_kinds_and_shapes() {
        let found = kinds(
            "We flew to New York for the Tribeca Film Festival, then met @jdoe from the \
             Bank of America on Friday; notes in ~/work/trip/plan.md and https://example.org/x.",
        );
        let has = |key: &str, kind: EntityKind| {
            assert!(
                found.iter().any(|(k, t)| k == key && *t == kind),
                "{key} {kind:?} in {found:?}"
            )
        };
        has("new york", EntityKind::Place);
        has("tribeca film festival", EntityKind::Event);
        has("bank of america", EntityKind::Organization);
        has("friday", EntityKind::Time);
        has("jdoe", EntityKind::Person);
        has("work/trip/plan.md", EntityKind::Project);
        has("https://example.org/x", EntityKind::Concept);
    }

    #[test]
    fn a_common_word_opening_a_sentence_is_not_a_name() {
        assert_eq!(
            keys("Thanks. Great to hear. Sounds good!"),
            Vec::<String>::new()
        );
        assert_eq!(keys("Yesterday Jon called."), vec!["jon"]);
    }

    #[test]
    fn known_names_are_found_in_any_case() {
        let known = |k: &str| k == "mel" || k == "pottery class";
        let found: Vec<String> = extract("went to pottery class with mel today", &known)
            .into_iter()
            .map(|m| m.key)
            .collect();
        assert_eq!(found, vec!["pottery class", "mel"]);
    }

    #[test]
    fn a_flood_of_names_is_capped() {
        let text: String = (0..100).map(|i| format!("Name{i} and ")).collect();
        assert!(extract(&text, &|_| false).len() <= MAX_MENTIONS);
    }
}
