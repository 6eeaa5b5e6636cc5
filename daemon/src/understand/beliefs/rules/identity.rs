//! Who someone is: name, age, pronouns, occupation, diet, where they live and work,
//! where they come from, languages, birthday, spouse; and the people close to them.

use mnemo_protocol::belief::BeliefType::{Constraint, Identity};

use super::*;

/// "I'm Sam": a name, unless it is a word or a role.
fn introduced(c: &Captures, w: &Who) -> Vec<Signal> {
    let v = group(c, "v");
    if is_common_word(&first_word(v)) || is_role(v) {
        return vec![];
    }
    vec![fact(w.speaker, Identity, "name", v.to_string(), false)]
}

/// "I'm a nurse at St Mary's": an occupation (and a workplace), or a diet.
fn occupation(c: &Captures, w: &Who) -> Vec<Signal> {
    let v = clean(group(c, "v"), true);
    let lower = v.to_lowercase();
    if matches!(lower.as_str(), "vegetarian" | "vegan" | "pescatarian") {
        return vec![fact(w.speaker, Constraint, "diet", lower, negated(c))];
    }
    if !is_role(&v) || v.split_whitespace().count() > 4 {
        return vec![];
    }
    let mut out = vec![fact(w.speaker, Identity, "occupation", lower, negated(c))];
    if let Some(org) = c.name("org").and_then(|o| value(o.as_str(), true, 5)) {
        out.push(fact(w.speaker, Identity, "works_at", org, false));
    }
    out
}

/// "Maria is my sister", "my brother's name is Tom".
fn relation(c: &Captures, w: &Who) -> Vec<Signal> {
    let rel = group(c, "rel").to_lowercase();
    // "best friend", "older sister": the relation is its last word, said as written.
    let kin = rel.rsplit(' ').next().unwrap_or_default();
    match w.subject(group(c, "name")) {
        Some(name) if is_relation(kin) => vec![super::kin(&name, &rel, w.speaker)],
        _ => vec![],
    }
}

/// Languages said in any case ("i speak spanish"); a capitalised word is taken as one too
/// ("I speak Tagalog"), "I speak my mind" is not.
fn languages(said: Vec<Signal>) -> Vec<Signal> {
    const KNOWN: &[&str] = &[
        "english",
        "spanish",
        "french",
        "german",
        "italian",
        "portuguese",
        "dutch",
        "russian",
        "polish",
        "ukrainian",
        "chinese",
        "mandarin",
        "cantonese",
        "japanese",
        "korean",
        "arabic",
        "hindi",
        "urdu",
        "bengali",
        "turkish",
        "greek",
        "hebrew",
        "swedish",
        "norwegian",
        "danish",
        "finnish",
        "czech",
        "hungarian",
        "romanian",
        "vietnamese",
        "thai",
        "indonesian",
        "tagalog",
        "swahili",
        "persian",
        "farsi",
        "catalan",
        "irish",
        "welsh",
        "sign language",
        "asl",
    ];
    said.into_iter()
        .filter_map(|mut s| {
            let lower = s.object.to_lowercase();
            let lower = lower
                .trim_start_matches("a little ")
                .trim_start_matches("a bit of ");
            let known = KNOWN.contains(&lower);
            if known {
                let mut c = lower.chars();
                s.object = c
                    .next()
                    .map_or(String::new(), |f| f.to_uppercase().chain(c).collect());
                s.statement = statement(&s.subject, &s.predicate, &s.object, s.negated);
                return Some(s);
            }
            s.object.starts_with(char::is_uppercase).then_some(s)
        })
        .collect()
}

/// Words that qualify a relation ("my best friend", "my older sister").
const KIN_QUALIFIERS: &str =
    "(?:best |closest |oldest |old |older |younger |little |big |baby |twin |eldest |youngest |step)";

pub fn rules() -> Vec<Rule> {
    let neg = r"(?P<neg>(?i:don't|don’t|do not|didn't|didn’t|never|no longer)\s+)?";
    vec![
        rule(
            r"(?i:my name is|my name's|call me|i go by)\s+(?P<v>[A-Z][\p{L}'’-]+(?:\s+[A-Z][\p{L}'’-]+){0,2})",
            own(Identity, "name", Take::AsIs),
        ),
        // Chat written in lower case: "my name is jenna" names her all the same.
        rule(
            r"(?i:my name is|my name's)\s+(?P<v>[\p{L}'’-]+)\s*$",
            |c, w| {
                let v = group(c, "v");
                if is_common_word(&v.to_lowercase()) || is_role(v) {
                    return vec![];
                }
                vec![fact(w.speaker, Identity, "name", v.to_string(), false)]
            },
        ),
        rule(
            r"(?i:i'm|i’m|i am)\s+(?P<v>[A-Z][\p{L}'’-]+(?:\s+[A-Z][\p{L}'’-]+)?)\s*$",
            introduced,
        ),
        rule(
            r"(?i:i'm|i’m|i am|i just turned|i turned|i'll be|i’ll be)\s+(?P<v>\d{1,3})(?i:\s+years?\s+old|\s+yo)?\s*$",
            own(Identity, "age", Take::AsIs),
        ),
        rule(
            r"(?i:my pronouns are|i use)\s+(?P<v>[a-z]+/[a-z]+(?:/[a-z]+)?)",
            own(Identity, "pronouns", Take::Lower),
        ),
        rule(
            r"(?i:i work as|i'm working as|i’m working as|my job is|i'm|i’m|i am)\s+(?P<neg>(?i:not)\s+)?(?i:an?\s+)(?P<v>[^,.;]+?)(?:\s+(?i:at|for)\s+(?P<org>.+))?$",
            occupation,
        ),
        rule(
            r"(?i:i'm|i’m|i am)\s+(?P<neg>(?i:not)\s+)?(?P<v>(?i:vegetarian|vegan|pescatarian))\b",
            own(Constraint, "diet", Take::Lower),
        ),
        rule(
            r"(?i:i'm|i’m|i am)\s+(?P<v>(?i:lactose intolerant|celiac|coeliac|diabetic|colorblind|colourblind))\b",
            own(Constraint, "condition", Take::Lower),
        ),
        rule(
            &format!(
                r"{I}(?:\s+{neg}(?i:live|am living|'m living|’m living)|(?i:'ve|’ve|\s+have)\s+(?i:lived|been living))\s+(?i:in)\s+(?P<v>.+)"
            ),
            own(Identity, "lives_in", PLACE),
        ),
        rule(
            &format!(
                r"{I}\s+(?i:(?:just |recently |finally )?(?:moved|relocated|have moved|'ve moved|’ve moved))\s+(?i:back\s+)?(?i:to)\s+(?P<v>.+)"
            ),
            own(Identity, "lives_in", PLACE),
        ),
        rule(
            &format!(
                r"{I}\s+{neg}(?i:work|am working|'m working|’m working)\s+(?i:(?:remotely|part-time|full-time|freelance)\s+)?(?i:at|for)\s+(?P<v>.+)"
            ),
            own(Identity, "works_at", PLACE),
        ),
        rule(
            &format!(
                r"{I}\s+(?i:(?:just |recently )?(?:got a job at|started working at|started at|joined))\s+(?P<v>[A-Z].+)"
            ),
            own(Identity, "works_at", PLACE),
        ),
        rule(
            r"(?i:i'm from|i’m from|i am from|i come from|i grew up in)\s+(?P<v>.+)",
            own(Identity, "from", PLACE),
        ),
        rule(
            &format!(r"{I}(?:'m|’m|\s+am)\s+(?i:fluent in|a native speaker of)\s+(?P<v>.+)"),
            |c, w| languages(each(Identity, "speaks")(c, w)),
        ),
        rule(
            &format!(r"{I}\s+{neg}(?i:speak|can speak)\s+(?P<v>.+)"),
            |c, w| languages(each(Identity, "speaks")(c, w)),
        ),
        rule(
            r"(?i:my birthday is|my birthday's|i was born on)\s+(?P<v>.+)",
            own(
                Identity,
                "birthday",
                Take::Clean {
                    cut_at_and: false,
                    words: 5,
                },
            ),
        ),
        rule(
            r"(?i:i'm married to|i’m married to|i am married to)\s+(?:[^,.;]*?\s(?i:named|called)\s+)?(?P<v>[A-Z][\p{L}'’-]+(?:\s+[A-Z][\p{L}'’-]+)?)",
            own(Identity, "married_to", Take::AsIs),
        ),
        rule(
            &format!(
                r"(?P<name>[A-Z][\p{{L}}'’-]+(?:\s+[A-Z][\p{{L}}'’-]+)?)\s+(?i:is my)\s+(?P<rel>{KIN_QUALIFIERS}?[a-z]+)\b"
            ),
            relation,
        ),
        rule(
            r"(?i:my)\s+(?P<rel>[a-z]+)(?:'s|’s)?\s+(?i:name is|is called|is named|is)\s+(?P<name>[A-Z][\p{L}'’-]+)\s*$",
            |c, w| {
                let (rel, name) = (group(c, "rel").to_lowercase(), group(c, "name"));
                if !is_relation(&rel) || is_common_word(&name.to_lowercase()) {
                    return vec![];
                }
                vec![super::kin(name, &rel, w.speaker)]
            },
        ),
    ]
}
