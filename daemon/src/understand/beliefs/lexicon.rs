//! The words the belief rules lean on: what a role is, which domain a preference belongs to,
//! and the verbs after "I can't" or "don't" that are turns of phrase, not facts.

use std::collections::HashSet;
use std::sync::LazyLock;

type WordSet = LazyLock<HashSet<&'static str>>;

fn word_set(words: &'static str) -> HashSet<&'static str> {
    words.split_whitespace().collect()
}

/// Last words of an occupation or role ("software engineer", "nurse", "vegetarian" is a
/// diet, not a role).
static ROLES: WordSet = LazyLock::new(|| {
    word_set(
        "engineer developer programmer designer teacher nurse doctor student writer manager \
     scientist researcher artist musician lawyer accountant consultant architect analyst \
     chef cook photographer journalist editor professor lecturer pharmacist therapist \
     counselor counsellor mechanic electrician plumber carpenter farmer pilot driver \
     firefighter officer soldier veteran entrepreneur founder cofounder co-founder \
     freelancer intern barista cashier librarian translator dentist surgeon vet \
     veterinarian paramedic coach trainer producer director actor actress dancer singer \
     painter sculptor poet novelist author blogger streamer youtuber parent mom mother dad \
     father retiree runner volunteer activist advocate scientist administrator admin \
     sysadmin devops cto ceo cfo lead principal physicist chemist biologist mathematician \
     economist historian psychologist social worker counselor caregiver homemaker",
    )
});

/// "software engineer", "a nurse": ends in a role word.
pub fn is_role(phrase: &str) -> bool {
    phrase
        .split_whitespace()
        .last()
        .is_some_and(|w| ROLES.contains(w.to_lowercase().as_str()))
}

/// Verbs after "I can't" that express feeling, not inability ("I can't wait").
static IDIOM_AFTER_CANT: WordSet = LazyLock::new(|| {
    word_set(
        "believe wait imagine thank stop help tell say express describe decide remember \
     stand figure complain argue deny resist",
    )
});

pub fn is_idiom_after_cant(verb: &str) -> bool {
    IDIOM_AFTER_CANT.contains(verb)
}

/// Verbs after "don't" / "never" at the start that are comfort, not corrections.
static IDIOM_AFTER_DONT: WordSet = LazyLock::new(|| {
    word_set("worry worried forget mind know think care panic hesitate fret stress apologize sweat")
});

pub fn is_idiom_after_dont(verb: &str) -> bool {
    IDIOM_AFTER_DONT.contains(verb)
}

/// Verbs after "I want to" that are conversation, not goals.
static NOT_GOALS: WordSet = LazyLock::new(|| {
    word_set("say thank know ask tell share see mention add check hear let remind apologize")
});

pub fn is_not_goal(verb: &str) -> bool {
    NOT_GOALS.contains(verb)
}

/// Words that place a preference or rule in a domain.
const DOMAINS: &[(&str, &str)] = &[
    (
        "coding",
        "code coding tabs spaces indentation indent rust python javascript typescript java \
         golang go kotlin swift ruby php haskell c++ vim neovim emacs vscode editor ide git \
         commit commits tests test testing unit function functions variable variables types \
         typing linter lint formatter compiler framework frameworks library libraries api \
         sql database docker kubernetes terminal shell bash zsh npm pnpm yarn cargo \
         snake_case camelcase semicolons comments refactor refactoring debugging async \
         programming branch branches rebase merge pr prs review dependencies",
    ),
    (
        "food",
        "tea coffee food eat eating pizza pasta sushi cheese meat vegetarian vegan chocolate \
         spicy cooking cook bake baking breakfast lunch dinner wine beer fruit vegetables \
         dessert restaurant restaurants nuts peanuts gluten dairy milk shellfish seafood \
         fish eggs soup salad burgers tacos curry ramen cake cookies ice cream",
    ),
    (
        "writing",
        "emojis emoji bullet bullets tone formal informal concise verbose answers answer \
         responses response replies prose markdown headings exclamation jargon summaries \
         explanations writing essay paragraphs comma wording sentences",
    ),
    (
        "music",
        "music song songs jazz rock pop guitar piano concert concerts band bands playlist \
         classical violin singing drums album albums",
    ),
    (
        "fitness",
        "running run hiking hike yoga gym swimming cycling football soccer basketball tennis \
         climbing skiing workout workouts marathon sports exercise",
    ),
    (
        "media",
        "books book reading novels novel movies movie films film tv shows podcasts podcast \
         series anime fantasy sci-fi documentaries games gaming",
    ),
    (
        "travel",
        "travel traveling travelling flights flying beach beaches mountains camping trips \
         hotels",
    ),
    (
        "art",
        "painting paintings drawing pottery photography art museums sculpture crafts",
    ),
    (
        "nature",
        "dogs dog cats cat pets pet animals gardening plants flowers nature birds",
    ),
];

static DOMAIN_WORDS: LazyLock<Vec<(&'static str, HashSet<&'static str>)>> = LazyLock::new(|| {
    DOMAINS
        .iter()
        .map(|(domain, words)| (*domain, words.split_whitespace().collect()))
        .collect()
});

/// The domain a preference's words place it in; `general` when none does.
pub fn domain_of(text: &str) -> &'static str {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '+' | '_' | '-')))
        .filter(|w| !w.is_empty())
        .collect();
    DOMAIN_WORDS
        .iter()
        .find(|(_, set)| words.iter().any(|w| set.contains(w)))
        .map_or("general", |(domain, _)| domain)
}

/// Foods by what a diet leaves out of them.
static MEAT: WordSet = LazyLock::new(|| {
    word_set(
        "meat meats beef steak steaks pork bacon ham chicken turkey lamb veal sausage sausages \
     burger burgers hamburger hamburgers ribs brisket salami pepperoni prosciutto duck \
     venison meatballs meatball hotdog hotdogs chorizo kebab kebabs jerky",
    )
});
static FISH: WordSet = LazyLock::new(|| {
    word_set(
        "fish salmon tuna cod shrimp shrimps prawn prawns lobster crab seafood shellfish \
     oysters oyster anchovies sardines mussels clams squid calamari",
    )
});
static ANIMAL: WordSet = LazyLock::new(|| {
    word_set("cheese milk butter yogurt yoghurt cream eggs egg omelette omelet honey dairy")
});

/// Whether `diet` ("vegetarian", "vegan", "pescatarian") leaves out the food `food` names
/// ("steak", "a cheese burger", "sushi with salmon").
pub fn rules_out(diet: &str, food: &str) -> bool {
    let lower = food.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let any = |set: &HashSet<&str>| words.iter().any(|w| set.contains(w));
    match diet.to_lowercase().as_str() {
        "vegetarian" => any(&MEAT) || any(&FISH),
        "vegan" => any(&MEAT) || any(&FISH) || any(&ANIMAL),
        "pescatarian" => any(&MEAT),
        _ => false,
    }
}

/// Words a preference's key carries that name nothing ("my code", "the tabs").
const KEY_FILLER: &[&str] = &["a", "an", "the", "my", "our", "your", "his", "her", "their"];

/// One word of a key reduced to its stem: "indentation", "indenting" and "indent" are one
/// stem, as are "spaces" and "space", "formatting" and "format".
fn stem(word: &str) -> String {
    let mut w = word.to_lowercase();
    for suffix in [
        "ations", "ation", "ments", "ment", "ings", "ing", "es", "s", "ed",
    ] {
        if let Some(rest) = w.strip_suffix(suffix) {
            // "process", "class": the "s" is the word's own.
            if rest.chars().count() >= 3 && !(suffix == "s" && rest.ends_with('s')) {
                w = rest.to_string();
                break;
            }
        }
    }
    let mut chars: Vec<char> = w.chars().collect();
    let n = chars.len();
    if n >= 4 && chars[n - 1] == chars[n - 2] && !"aeiouls".contains(chars[n - 1]) {
        chars.pop();
    }
    if chars.len() >= 4 && chars.last() == Some(&'e') {
        chars.pop();
    }
    chars.into_iter().collect()
}

/// A preference's key as the stems of its words, so one thing said in several forms
/// ("indentation", "indenting", "the indent") is one key.
pub fn key_stems(key: &str) -> Vec<String> {
    key.split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .filter(|w| !w.is_empty() && !KEY_FILLER.contains(&w.to_lowercase().as_str()))
        .map(stem)
        .collect()
}

/// The "-ing" form of a verb, naming its activity: "indent" → "indenting", "write" →
/// "writing", "run" → "running".
pub fn gerund(verb: &str) -> String {
    let v = verb.to_lowercase();
    let vowel = |c: char| "aeiou".contains(c);
    let chars: Vec<char> = v.chars().collect();
    let n = chars.len();
    if n >= 3 && v.ends_with('e') && !v.ends_with("ee") && !vowel(chars[n - 2]) {
        return format!("{}ing", &v[..v.len() - 1]);
    }
    let vowel_groups = chars
        .iter()
        .zip(std::iter::once(&' ').chain(chars.iter()))
        .filter(|(c, before)| vowel(**c) && !vowel(**before))
        .count();
    let short_cvc = n >= 3
        && vowel_groups == 1
        && !vowel(chars[n - 1])
        && !"wxy".contains(chars[n - 1])
        && vowel(chars[n - 2])
        && !vowel(chars[n - 3]);
    if short_cvc {
        return format!("{v}{}ing", chars[n - 1]);
    }
    format!("{v}ing")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_thing_in_several_forms_is_one_key() {
        let indentation = key_stems("indentation");
        assert_eq!(key_stems("indenting"), indentation);
        assert_eq!(key_stems("the indent"), indentation);
        assert_eq!(key_stems("spaces"), key_stems("space"));
        assert_eq!(key_stems("formatting"), key_stems("format"));
        assert_ne!(key_stems("coffee"), key_stems("tea"));
        assert_ne!(key_stems("iced coffee"), key_stems("coffee"));
    }

    #[test]
    fn gerunds_follow_the_spelling_rules() {
        assert_eq!(gerund("indent"), "indenting");
        assert_eq!(gerund("write"), "writing");
        assert_eq!(gerund("run"), "running");
        assert_eq!(gerund("see"), "seeing");
        assert_eq!(gerund("play"), "playing");
    }
}
