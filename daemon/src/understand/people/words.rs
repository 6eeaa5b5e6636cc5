//! The small closed classes of English the people reader leans on: subject words, verb forms
//! (past, third person, modal), the adverbs that sit between a subject and its verb, and the
//! words that carry no content. Open classes (nouns, most verbs) are recognised by shape.

use std::collections::HashSet;
use std::sync::LazyLock;

type WordSet = LazyLock<HashSet<&'static str>>;

fn set(words: &'static str) -> HashSet<&'static str> {
    words.split_whitespace().collect()
}

/// A word lower-cased, without the punctuation around it, apostrophes straight.
pub fn plain(word: &str) -> String {
    word.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’')
        .replace('’', "'")
        .to_lowercase()
}

/// Words (as written, apostrophes straight) that open a clause as its subject.
pub fn is_subject_word(word: &str) -> bool {
    let lower = word.to_lowercase();
    SUBJECTS.contains(lower.as_str()) || is_name_like(word)
}

static SUBJECTS: WordSet = LazyLock::new(|| {
    set(
        "i i'm im i've ive i'd i'll we we're we've we'd we'll my our she he she's he's \
         they they're they've it it's that's there's you you're you've this",
    )
});

/// A pronoun or possessive that opens a clause (not a name).
pub fn is_subject_word_strict(word: &str) -> bool {
    SUBJECTS.contains(word.to_lowercase().as_str())
}

/// The words before "and I" when they can name the speaker's company ("Some friends from
/// church and I", "My sister and I"): no subject of their own ("She and I"), no verb ("I
/// went and I"), no comma ("Yes, and I").
pub fn is_company(before: &[&str]) -> bool {
    !before.is_empty()
        && before.iter().all(|w| {
            let b = plain(w);
            (!is_subject_word_strict(&b) || matches!(b.as_str(), "my" | "our"))
                && !is_past_verb(&b)
                && !is_third_person_verb(&b)
                && !w.ends_with(',')
        })
}

/// `text` with its first letter in lower case: a sentence's opening put inside another.
pub fn lower_first(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_lowercase().chain(chars).collect())
        .unwrap_or_default()
}

/// A capitalised word that is not a common one and not "I": a name, perhaps.
pub fn is_name_like(word: &str) -> bool {
    let mut chars = word.chars();
    let capital = chars.next().is_some_and(char::is_uppercase);
    let lower = word.to_lowercase();
    capital
        && word.chars().count() >= 2
        && !lower.starts_with("i'")
        && !crate::understand::entities::is_common_word(&lower)
        && !NOT_NAMES.contains(lower.as_str())
}

/// Capitalised words that open sentences and name nobody, beside the entities' common words.
static NOT_NAMES: WordSet = LazyLock::new(|| {
    set(
        "gonna wanna gotta btw omg aww awww ugh hmm hm yay woah whoa bro dude man girl \
         congrats thx ty np idk imo tbh fyi ps nope yep yup sounds seems looks totally \
         same agreed true nah anyways besides plus lots alright also guess anyhow super \
         wishing hoping thinking looking feeling glad can't couldn't won't isn't",
    )
});

/// Past forms of common irregular verbs.
static IRREGULAR_PAST: WordSet = LazyLock::new(|| {
    set(
        "went got had made took saw found left began became bought brought came did felt \
         gave grew heard held kept knew led lost met paid put ran read said sat sent sold \
         spent stood taught thought told understood wore won wrote ate drove flew forgot \
         fell fought hung hid hurt let lit meant quit rode rang rose sang shot shut slept \
         spoke stole swam threw woke broke chose built caught drew dug fed hit been gone \
         done seen taken given known begun become was were slid bit blew bent bled bound \
         clung crept dealt dove dreamt drank fled flung forgave froze knelt laid leapt lent \
         sank shook shone sought spun sprang stuck stung struck swept swore swung tore wept \
         wove arose awoke beat bore learnt burnt spelt overcame",
    )
});

/// A past tense or past participle: irregular, or ending in "ed" ("moved", "started").
pub fn is_past_verb(word: &str) -> bool {
    // "retook", "overcame", "rebuilt": an irregular past behind a prefix.
    let prefixed = ["re", "over", "under", "out", "mis", "with", "up"]
        .iter()
        .filter_map(|p| word.strip_prefix(p))
        .any(|rest| rest.len() >= 3 && IRREGULAR_PAST.contains(rest));
    IRREGULAR_PAST.contains(word)
        || (prefixed && !NOT_PAST.contains(word))
        || (word.len() > 4 && word.ends_with("ed") && !NOT_PAST.contains(word))
}

/// Words ending in "ed" that are no verbs.
static NOT_PAST: WordSet = LazyLock::new(|| {
    set(
        "need bed red shed seed feed speed bred breed weed hundred sacred outlet relent \
         rebound outbound",
    )
});

/// Verbs in the third person that follow a shared subject ("… and works as an architect").
static THIRD_PERSON: WordSet = LazyLock::new(|| {
    set(
        "works lives loves likes enjoys plays teaches studies speaks has does goes wants \
         needs hates owns writes makes takes gets thinks feels knows helps uses keeps gives \
         comes stays travels paints cooks reads sings dances trains volunteers visits misses \
         spends runs manages leads builds designs prefers is was",
    )
});

pub fn is_third_person_verb(word: &str) -> bool {
    THIRD_PERSON.contains(word)
}

/// What may follow a name as its verb: a past form, a third person ("lives", "is"), a
/// modal, a negation ("doesn't", "no longer"), or an adverb before one ("Maria just moved").
pub fn looks_like_a_verb(word: &str) -> bool {
    let third = word.len() > 2
        && word.ends_with('s')
        && !word.ends_with("ss")
        && !word.ends_with("us")
        && word != "news";
    third
        || is_past_verb(word)
        || is_modal(word)
        || is_adverb_between(word)
        || matches!(
            word,
            "is" | "has"
                | "does"
                | "'s"
                | "and"
                | "doesn't"
                | "isn't"
                | "wasn't"
                | "hasn't"
                | "no"
                | "won't"
                | "can't"
                | "didn't"
        )
}

/// Verbs that take a bare verb after them and never change with the person.
static MODALS: WordSet = LazyLock::new(|| {
    set(
        "can could will would should might must may shall can't couldn't won't wouldn't \
         shouldn't mustn't didn't used cannot",
    )
});

pub fn is_modal(word: &str) -> bool {
    MODALS.contains(word)
}

/// Adverbs that sit between a subject and its verb ("I now work at", "I just started").
static BETWEEN: WordSet = LazyLock::new(|| {
    set(
        "now currently also still actually just recently finally really officially already \
         even totally definitely honestly literally basically seriously kinda truly \
         absolutely mostly only sometimes often usually always never rarely recently \
         eventually suddenly soon lately again both all originally",
    )
});

pub fn is_adverb_between(word: &str) -> bool {
    BETWEEN.contains(word)
}

/// An adverb of manner by its shape ("slowly", "honestly"), not one of the verbs that end
/// the same way ("rely", "apply").
pub fn is_manner_adverb(word: &str) -> bool {
    word.len() >= 5
        && word.ends_with("ly")
        && word.chars().all(|c| c.is_ascii_alphabetic())
        && !matches!(
            word,
            "reply" | "apply" | "supply" | "comply" | "imply" | "multiply" | "rally" | "bully"
        )
}

/// Adverbs a slot rule reads past: they change no fact ("I now work at" is "I work at").
/// Frequency words ("always", "never", "usually") stay: a habit is read from them.
pub fn is_droppable_adverb(word: &str) -> bool {
    BETWEEN.contains(word)
        && !matches!(
            word,
            "always" | "never" | "usually" | "rarely" | "sometimes" | "often"
        )
}

/// Words that tell nothing of a person on their own: function words, reactions,
/// intensifiers and chat. A clause needs other words to say something.
static EMPTY: WordSet = LazyLock::new(|| {
    set(
        "a an the and or but so to of in on at by for with from up out about into over \
         after before as than then that this these those there here it its it's is am are \
         was were be been being do does did done have has had having i me my mine myself \
         we us our ours you your yours he him his she her they them their what which who \
         how when where why not no yes yeah yep nope ok okay oh ah wow aww hey hi hello \
         thanks thank really very so too much many lot lots just also still even actually \
         totally definitely absolutely super pretty quite kinda sorta such all some any \
         every each more most less least other another same own one ones thing things \
         stuff something anything everything nothing way ways time times good great nice \
         cool awesome amazing fantastic wonderful lovely fun happy glad sure right well \
         bad sad hard tough crazy wild insane incredible exciting excited interesting \
         like love lol haha hahaha omg can could will would should might must may shall \
         can't won't don't didn't doesn't isn't wasn't aren't i'm i've i'd i'll it'll \
         that's what's there's here's let let's get got go going gonna wanna gotta make \
         made see seen look looks looking feel feels felt think thought know knew mean \
         guess bet hope wish seems sounds want need keep keeps now today tonight always \
         never again soon ever yet though although because cause cuz if while since \
         until can totally forward glad wait hear heard tell told say said thing \
         dream dreams goal goals journey passion hardest best better life stuff work \
         working happen happening means matter matters doing done moment moments vibe \
         vibes blast pumped stoked thrilled awesome super tons ton bit kind sort truly",
    )
});

pub fn is_empty_word(word: &str) -> bool {
    EMPTY.contains(word) || word.chars().all(|c| !c.is_alphabetic())
}

/// A word (plain, lower case) that carries content: three letters or more, not empty.
pub fn is_content_word(word: &str) -> bool {
    word.chars().count() >= 3 && !is_empty_word(word)
}

/// Verbs after "I" that are the conversation itself, not news of the speaker ("I agree",
/// "I mean", "I hope you …").
static CONVERSATION_VERBS: WordSet = LazyLock::new(|| {
    set(
        "agree know see mean guess bet understand hear wonder appreciate promise suppose \
         admire respect imagine doubt apologize apologise swear talked chatted talk chat \
         agreed",
    )
});

pub fn is_conversation_verb(word: &str) -> bool {
    CONVERSATION_VERBS.contains(word)
}

/// The third person of a verb in the present: "go" → "goes", "try" → "tries".
pub fn third_person(verb: &str) -> String {
    match verb {
        "have" => return "has".into(),
        "do" => return "does".into(),
        "am" | "are" | "be" => return "is".into(),
        "were" => return "was".into(),
        "don't" => return "doesn't".into(),
        "haven't" => return "hasn't".into(),
        "aren't" => return "isn't".into(),
        "weren't" => return "wasn't".into(),
        _ => {}
    }
    let vowel = |c: char| matches!(c, 'a' | 'e' | 'i' | 'o' | 'u');
    if let Some(stem) = verb.strip_suffix('y') {
        if stem.chars().last().is_some_and(|c| !vowel(c)) {
            return format!("{stem}ies");
        }
    }
    if ["s", "sh", "ch", "x", "z", "o"]
        .iter()
        .any(|end| verb.ends_with(end))
    {
        return format!("{verb}es");
    }
    format!("{verb}s")
}

/// Whether a word may be a verb in the present after "I": alphabetic, not a form that never
/// changes (past, "-ing", a modal) and not a word that is no verb.
pub fn is_plain_present(word: &str) -> bool {
    word.chars().all(|c| c.is_ascii_alphabetic())
        && !is_past_verb(word)
        && !word.ends_with("ing")
        && !is_modal(word)
        && !is_manner_adverb(word)
        && !NOT_VERBS.contains(word)
}

/// Words that follow "I" and are no verbs in the present ("I too", "I myself").
static NOT_VERBS: WordSet =
    LazyLock::new(|| set("too myself alone also a an the and or but to not"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_third_person_of_a_verb() {
        for (verb, third) in [
            ("go", "goes"),
            ("try", "tries"),
            ("play", "plays"),
            ("have", "has"),
            ("watch", "watches"),
            ("miss", "misses"),
            ("love", "loves"),
            ("don't", "doesn't"),
        ] {
            assert_eq!(third_person(verb), third, "{verb}");
        }
    }

    #[test]
    fn past_forms_and_names_by_shape() {
        assert!(is_past_verb("moved") && is_past_verb("went") && !is_past_verb("need"));
        assert!(is_name_like("Maria") && !is_name_like("Gonna") && !is_name_like("The"));
        assert!(is_subject_word("I'm") && is_subject_word("she") && !is_subject_word("salt"));
    }

    #[test]
    fn an_irregular_past_behind_a_prefix_is_past() {
        assert!(is_past_verb("retook") && is_past_verb("overcame") && is_past_verb("rebuilt"));
        assert!(!is_past_verb("outlet") && !is_past_verb("relent") && !is_past_verb("retake"));
    }

    #[test]
    fn company_before_and_i() {
        assert!(is_company(&["Some", "friends", "from", "church"]));
        assert!(is_company(&["My", "sister"]));
        assert!(!is_company(&["She"]) && !is_company(&["I", "went"]) && !is_company(&["Yes,"]));
    }

    #[test]
    fn an_adverb_of_manner_is_no_verb() {
        assert!(is_manner_adverb("slowly") && !is_plain_present("slowly"));
        assert!(
            !is_manner_adverb("rely") && !is_manner_adverb("apply") && is_plain_present("rely")
        );
    }
}
