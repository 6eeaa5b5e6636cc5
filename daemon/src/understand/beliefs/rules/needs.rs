//! Constraints and goals: allergies, inabilities, deadlines; wants, plans, dreams, learning.

use mnemo_protocol::belief::BeliefType;

use super::*;

fn goal(c: &Captures, w: &Who) -> Vec<Signal> {
    let v = group(c, "v");
    if is_not_goal(&first_word(v)) {
        return vec![];
    }
    one(value(v, false, 10), |v| {
        fact(w.speaker, BeliefType::Goal, "goal", v, negated(c))
    })
}

pub fn rules() -> Vec<Rule> {
    vec![
        rule(
            &format!(
                r"{I}(?i:'m|’m| am)\s+(?P<neg>(?i:not)\s+)?(?i:(?:severely |very |deathly )?allergic to)\s+(?P<v>.+)"
            ),
            each(BeliefType::Constraint, "allergic_to"),
        ),
        rule(
            &format!(r"{I}\s+(?i:can't|can’t|cannot|can not)\s+(?P<v>.+)"),
            |c, w| {
                let v = group(c, "v");
                if is_idiom_after_cant(&first_word(v)) {
                    return vec![];
                }
                one(value(v, false, 8), |v| {
                    fact(w.speaker, BeliefType::Constraint, "cannot", v, false)
                })
            },
        ),
        rule(
            r"(?P<what>(?i:the|my|our)\s+[\p{L} ]+?)\s+(?i:is|are)\s+(?i:due)\s+(?P<when>(?i:on|by|next|this|tomorrow|in)\b.+)",
            deadline,
        ),
        rule(
            r"(?i:the|my|our)\s+(?i:deadline)\s+(?:(?i:for)\s+(?P<what>.+?)\s+)?(?i:is)\s+(?P<when>.+)",
            deadline,
        ),
        rule(
            &format!(r"{I}\s+(?i:have to|need to|must)\s+(?P<what>.+?)\s+(?i:by)\s+(?P<when>.+)"),
            deadline,
        ),
        rule(
            &format!(
                r"{I}(?:\s+|'|’)(?P<neg>(?i:don't|don’t|do not)\s+)?(?i:want|would like|d like|wanna|hope|plan|intend|aim|am planning|m planning|am going|m going|am hoping|m hoping|am trying|m trying|would love|d love)\s+(?i:to)\s+(?P<v>.+)"
            ),
            goal,
        ),
        rule(
            r"(?i:my)\s+(?i:goal|dream|plan|aim|resolution)\s+(?i:is|this year is)\s+(?i:to)\s+(?P<v>.+)",
            goal,
        ),
        rule(
            &format!(
                r"{I}(?i:'m|’m| am)\s+(?i:(?:currently\s+)?(?:learning|studying|trying to learn))\s+(?P<v>.+)"
            ),
            |c, w| {
                one(value(group(c, "v"), true, 4), |v| {
                    fact(
                        w.speaker,
                        BeliefType::Goal,
                        "goal",
                        format!("learn {v}"),
                        false,
                    )
                })
            },
        ),
    ]
}
