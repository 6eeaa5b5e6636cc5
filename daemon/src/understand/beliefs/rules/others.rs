//! Facts about other people: "Maria lives in Porto", "my sister works at Acme".

use mnemo_protocol::belief::BeliefType::{Constraint, Fact};

use super::*;

/// Words after "Maria loves" that are not tastes ("Maria loves you").
const NOT_TASTES: &[&str] = &[
    "you", "it", "that", "this", "him", "her", "them", "me", "those", "these", "to",
];

fn taste(c: &Captures, w: &Who) -> Vec<Signal> {
    let verb = group(c, "verb").to_lowercase();
    // "Maria like …" is no sentence unless negated ("Maria doesn't like"): "Looks like a blast".
    if !verb.ends_with('s') && !negated(c) {
        return vec![];
    }
    let positive = !verb.contains("hate") && !verb.contains("dislike");
    let likes = positive != negated(c);
    third(c, w, |s, v, _| {
        if NOT_TASTES.contains(&first_word(v).as_str()) {
            return None;
        }
        let val = if likes { "like" } else { "dislike" };
        value(v, false, 6).map(|k| preference(s, k, val))
    })
}

fn occupation(c: &Captures, w: &Who) -> Vec<Signal> {
    third(c, w, |s, v, n| {
        let v = clean(v, true);
        (is_role(&v) && v.split_whitespace().count() <= 4)
            .then(|| fact(s, Fact, "occupation", v.to_lowercase(), n))
    })
}

pub fn rules() -> Vec<Rule> {
    let neg3 = r"(?P<neg>(?i:doesn't|doesn’t|does not|no longer|never)\s+)?";
    vec![
        rule(
            &format!(r"{SUBJECT}\s+{neg3}(?i:lives|live|is living)\s+(?i:in)\s+(?P<v>.+)"),
            theirs(Fact, "lives_in", PLACE),
        ),
        rule(
            &format!(
                r"{SUBJECT}\s+(?i:(?:just |recently |finally )?(?:moved|has moved|relocated))\s+(?i:back\s+)?(?i:to)\s+(?P<v>.+)"
            ),
            theirs(Fact, "lives_in", PLACE),
        ),
        rule(
            &format!(r"{SUBJECT}\s+{neg3}(?i:works|work|is working)\s+(?i:at|for)\s+(?P<v>.+)"),
            theirs(Fact, "works_at", PLACE),
        ),
        rule(
            &format!(
                r"{SUBJECT}\s+(?i:(?:just |recently )?(?:got a job at|started working at|joined))\s+(?P<v>[A-Z].+)"
            ),
            theirs(Fact, "works_at", PLACE),
        ),
        rule(
            &format!(
                r"{SUBJECT}\s+(?i:is married to)\s+(?P<v>[A-Z][\p{{L}}'’-]+(?:\s+[A-Z][\p{{L}}'’-]+)?)"
            ),
            theirs(Fact, "married_to", Take::AsIs),
        ),
        rule(
            &format!(r"{SUBJECT}(?:'s|’s)\s+(?i:birthday is)\s+(?P<v>.+)"),
            theirs(
                Fact,
                "birthday",
                Take::Clean {
                    cut_at_and: false,
                    words: 5,
                },
            ),
        ),
        rule(
            &format!(
                r"{SUBJECT}\s+(?i:is|was)\s+(?P<neg>(?i:not)\s+)?(?i:allergic to)\s+(?P<v>.+)"
            ),
            each(Constraint, "allergic_to"),
        ),
        rule(
            &format!(
                r"{SUBJECT}\s+{neg3}(?P<verb>(?i:loves|likes|enjoys|adores|hates|dislikes|love|like|enjoy))\s+(?P<v>.+)"
            ),
            taste,
        ),
        rule(
            &format!(
                r"{SUBJECT}\s+(?i:is|works as)\s+(?P<neg>(?i:not)\s+)?(?i:an?)\s+(?P<v>[^,.;]+)"
            ),
            occupation,
        ),
    ]
}
