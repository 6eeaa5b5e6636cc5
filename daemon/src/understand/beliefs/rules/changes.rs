//! Life changes, however they are worded: where someone lives now ("I'm based in", "we're in
//! Munich now", "relocated to"), where they work ("started a new job at", "got hired by",
//! "I left / quit …", "I was laid off"), what they became ("I became a nurse", "work as an
//! SRE"), diets ("I stopped eating meat", "went vegan") and habits taken up or given up. A
//! change that names no new value ("I quit my job") closes the current one: its object is
//! left empty for the user model to fill from what it holds ([`OPEN`]).

use mnemo_protocol::belief::BeliefType::{Behavior, Constraint, Identity};

use super::*;

/// The object of a change that ends the current value without naming it ("I quit my job"),
/// and of "I left X", which ends whichever of the subject's places or workplaces X is.
pub const OPEN: &str = "";
/// The predicate of "I left X": a workplace or a home, whichever X is ([`OPEN`]).
pub const LEFT: &str = "left";

/// "I quit my job": the current workplace ends.
fn job_ended(_: &Captures, w: &Who) -> Vec<Signal> {
    vec![fact(w.speaker, Identity, "works_at", OPEN.into(), true)]
}

/// "I work at Google as an SRE": the workplace and the role.
fn work_as(c: &Captures, w: &Who) -> Vec<Signal> {
    let mut out = Vec::new();
    if let Some(org) = c.name("org").and_then(|o| where_value(o.as_str())) {
        out.push(fact(w.speaker, Identity, "works_at", org, false));
    }
    if let Some(role) = value(group(c, "v"), true, 4) {
        out.push(fact(
            w.speaker,
            Identity,
            "occupation",
            role.to_lowercase(),
            false,
        ));
    }
    out
}

/// "I became a nurse", "got promoted to senior engineer": a role, when it is one.
fn became(c: &Captures, w: &Who) -> Vec<Signal> {
    let v = clean(group(c, "v"), true);
    if !is_role(&v) || v.split_whitespace().count() > 4 {
        return vec![];
    }
    vec![fact(
        w.speaker,
        Identity,
        "occupation",
        v.to_lowercase(),
        false,
    )]
}

/// A habit or pastime in a few words ("running", "pottery", "playing the guitar").
fn pastime(v: &str) -> Option<String> {
    value(v, true, 4).map(|v| v.to_lowercase())
}

pub fn rules() -> Vec<Rule> {
    let am = r"(?i:i'm|i’m|i am)";
    vec![
        // Where someone lives now.
        rule(
            &format!(
                r"{am}\s+(?i:based|living|settled|located|staying)\s+(?i:in|out of)\s+(?P<v>.+)"
            ),
            own(Identity, "lives_in", PLACE),
        ),
        rule(
            &format!(r"{am}\s+(?i:in)\s+(?P<v>[A-Z][^,]*?)\s+(?i:now)\b"),
            own(Identity, "lives_in", PLACE),
        ),
        rule(
            &format!(
                r"{I}(?:\s+|'ve\s+|’ve\s+|\s+have\s+)(?i:moved|relocated)\s+(?i:(?:back|over|out|here|there|all the way)\s+)?(?i:to)\s+(?P<v>.+)"
            ),
            own(Identity, "lives_in", PLACE),
        ),
        rule(
            &format!(r"{I}\s+(?i:call)\s+(?P<v>[A-Z].+?)\s+(?i:home)\b"),
            own(Identity, "lives_in", PLACE),
        ),
        rule(
            &format!(r"{I}\s+(?i:moved out of|moved away from)\s+(?P<v>[A-Z].+)"),
            |c, w| {
                one(where_value(group(c, "v")), |v| {
                    fact(w.speaker, Identity, "lives_in", v, true)
                })
            },
        ),
        // Where someone works now, and the role said with it.
        rule(
            &format!(
                r"{I}\s+(?i:work|am working|'m working|’m working)\s+(?i:at|for)\s+(?P<org>[A-Z][^,]*?)\s+(?i:as)\s+(?i:an?\s+)?(?P<v>[^,.;]+)"
            ),
            work_as,
        ),
        rule(
            &format!(
                r"{I}\s+(?i:work|am working|'m working|’m working)\s+(?i:as)\s+(?i:an?\s+)?(?P<v>[^,.;]+?)(?:\s+(?i:at|for)\s+(?P<org>.+))?$"
            ),
            work_as,
        ),
        rule(
            &format!(
                r"{I}\s+(?i:started|began|got|landed|accepted|took|found|have|'ve got|’ve got)\s+(?i:a\s+|an\s+|my\s+|the\s+)?(?i:new\s+|first\s+|full-time\s+|part-time\s+)?(?i:job|position|role|gig|internship|offer|contract)\s+(?i:at|with|from|in)\s+(?P<v>.+)"
            ),
            own(Identity, "works_at", PLACE),
        ),
        rule(
            &format!(
                r"{I}(?:'m|’m| am|\s+was|\s+got|\s+have been|'ve been|’ve been)\s+(?i:hired|employed|recruited|taken on)\s+(?i:at|by)\s+(?P<v>.+)"
            ),
            own(Identity, "works_at", PLACE),
        ),
        rule(
            &format!(
                r"{I}\s+(?i:started working|began working|started|switched jobs|moved)\s+(?i:at|for|to)\s+(?P<v>[A-Z].+)"
            ),
            |c, w| {
                // "I moved to Berlin" is a home; "started at Acme" a workplace.
                if group(c, "v").is_empty() {
                    return vec![];
                }
                let said = c.get(0).map_or("", |m| m.as_str()).to_lowercase();
                if said.contains("moved") {
                    return vec![];
                }
                one(where_value(group(c, "v")), |v| {
                    fact(w.speaker, Identity, "works_at", v, false)
                })
            },
        ),
        // A job ended.
        rule(
            &format!(
                r"{I}\s+(?P<neg>(?i:quit|left|resigned from|lost)\s+(?i:my\s+)?(?i:job|position|role|post)\s+(?i:at|with)|(?i:resigned from|retired from|was laid off from|got laid off from|was fired from|got fired from|was let go from|got let go from))\s+(?P<v>.+)"
            ),
            own(Identity, "works_at", PLACE),
        ),
        rule(
            &format!(
                r"{I}\s+(?i:quit|left|lost|gave up)\s+(?i:my\s+)(?i:job|position|role|day job|9-5|nine-to-five)\b"
            ),
            job_ended,
        ),
        rule(
            &format!(
                r"{I}(?:\s+was|\s+got|\s+have been|'ve been|’ve been)\s+(?i:laid off|fired|let go|made redundant)\b"
            ),
            job_ended,
        ),
        rule(&format!(r"{I}\s+(?i:retired)\s*$"), job_ended),
        rule(
            &format!(r"{I}\s+(?i:don't|don’t|do not|no longer)\s+(?i:work)\s+(?i:there)\b"),
            job_ended,
        ),
        rule(
            &format!(
                r"{I}\s+(?i:quit|left)\s+(?P<v>[A-Z][\p{{L}}&.'’-]*(?:\s+[A-Z][\p{{L}}&.'’-]*)*)"
            ),
            |c, w| {
                one(where_value(group(c, "v")), |v| {
                    fact(w.speaker, Identity, LEFT, v, true)
                })
            },
        ),
        // A marriage ended ("I got divorced", "Chris and I split up": the speaker, with Chris).
        rule(
            &format!(
                r"{I}(?:'m|’m|\s+am|\s+got|\s+have got|'ve got|\s+are|\s+were|\s+just got)\s+(?i:divorced|separated)\b"
            ),
            |_, w| vec![fact(w.speaker, Identity, "married_to", OPEN.into(), true)],
        ),
        rule(
            &format!(
                r"{I}\s+(?i:divorced|split up with|separated from|broke up with)\s+(?P<v>[A-Z][\p{{L}}'’-]+)"
            ),
            |c, w| {
                vec![fact(
                    w.speaker,
                    Identity,
                    "married_to",
                    group(c, "v").to_string(),
                    true,
                )]
            },
        ),
        // Still working somewhere ("I've been working at Pixar for ten years").
        rule(
            &format!(
                r"{I}(?:'ve|’ve|\s+have)\s+(?i:been working|worked)\s+(?i:at|for)\s+(?P<v>.+)"
            ),
            own(Identity, "works_at", PLACE),
        ),
        // What someone became.
        rule(
            &format!(
                r"{I}(?:\s+|'ve\s+|’ve\s+|\s+have\s+)(?i:became|become|got promoted to|was promoted to|qualified as|trained as|graduated as)\s+(?i:an?\s+)?(?P<v>[^,.;]+)"
            ),
            became,
        ),
        // Diets.
        rule(
            &format!(
                r"{I}\s+(?i:stopped|quit|gave up|no longer|don't|don’t|do not)\s+(?i:eating\s+|eat\s+)?(?i:meat)\b"
            ),
            |_, w| {
                vec![fact(
                    w.speaker,
                    Constraint,
                    "diet",
                    "vegetarian".into(),
                    false,
                )]
            },
        ),
        rule(
            &format!(
                r"{I}(?:\s+|'ve\s+|’ve\s+|\s+have\s+)(?i:went|gone|became|become|turned|switched to|going)\s+(?i:fully\s+)?(?P<v>(?i:vegetarian|vegan|pescatarian|keto|gluten-free))\b"
            ),
            own(Constraint, "diet", Take::Lower),
        ),
        rule(
            &format!(
                r"{I}(?:\s+|'m\s+|’m\s+|\s+am\s+)(?i:started eating|eat|eating)\s+(?i:meat)\s+(?i:again)\b"
            ),
            |_, w| {
                vec![fact(
                    w.speaker,
                    Constraint,
                    "diet",
                    "vegetarian".into(),
                    true,
                )]
            },
        ),
        // Habits and pastimes taken up and given up.
        rule(
            &format!(
                r"{I}\s+(?i:quit|stopped|gave up|no longer)\s+(?P<v>[a-z]+ing\b.*|smoking|drinking)"
            ),
            |c, w| {
                one(pastime(group(c, "v")), |v| {
                    fact(w.speaker, Behavior, "does", v, true)
                })
            },
        ),
        rule(
            &format!(
                r"{I}\s+(?i:took up|picked up|got into|started)\s+(?P<v>[a-z]+ing\b.*|(?:the\s+)?[a-z]+)$"
            ),
            |c, w| {
                let v = group(c, "v");
                if !v
                    .split_whitespace()
                    .next()
                    .is_some_and(|f| f.ends_with("ing") || v.split_whitespace().count() <= 2)
                {
                    return vec![];
                }
                one(pastime(v), |v| fact(w.speaker, Behavior, "does", v, false))
            },
        ),
    ]
}
