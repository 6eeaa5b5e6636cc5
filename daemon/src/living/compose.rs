//! The living summaries by rule, from a namespace's recent memories, current beliefs, people
//! and projects. Each category is a few short lines; a category with nothing to say is left
//! out (and its old text removed), so an empty store has no summaries rather than empty ones.

use std::collections::HashMap;

use mnemo_protocol::belief::BeliefType;
use mnemo_protocol::entity::Entity;
use mnemo_protocol::memory::MemoryKind;
use mnemo_protocol::project::Project;
use mnemo_protocol::summary::{LivingSummary, SummaryCategory};
use mnemo_protocol::time::format_micros;
use mnemo_protocol::understanding::EmotionKind;

use crate::store::beliefs::BeliefRecord;
use crate::store::MemoryRecord;
use crate::understand::sentences::{clip, first_sentence, is_commitment, sentences};

/// Lines a category holds at most.
const MAX_LINES: usize = 5;
const MAX_LINE_CHARS: usize = 160;
const DAY_US: i64 = 86_400_000_000;
/// The window mood compares with the one before it.
const MOOD_WINDOW_US: i64 = 7 * DAY_US;

pub struct Inputs<'a> {
    pub namespace: &'a str,
    pub now: i64,
    /// Current memories of the recent past, any order.
    pub recent: &'a [MemoryRecord],
    /// Current beliefs of the namespace.
    pub beliefs: &'a [BeliefRecord],
    /// People of the namespace, most mentioned first.
    pub people: &'a [Entity],
    /// Projects, most recently active first.
    pub projects: &'a [Project],
}

fn day(micros: i64) -> String {
    format_micros(micros).chars().take(10).collect()
}

fn newest_first(recent: &[MemoryRecord]) -> Vec<&MemoryRecord> {
    let mut rows: Vec<&MemoryRecord> = recent.iter().collect();
    rows.sort_by_key(|r| std::cmp::Reverse((r.event_time(), r.id.clone())));
    rows
}

pub fn compose(i: &Inputs) -> Vec<LivingSummary> {
    let newest = newest_first(i.recent);
    let parts: [(SummaryCategory, Option<(String, usize)>); 8] = [
        (SummaryCategory::Commitments, commitments(&newest)),
        (SummaryCategory::People, people(i.people)),
        (SummaryCategory::Projects, projects(i.projects)),
        (SummaryCategory::Tensions, tensions(i.beliefs, &newest)),
        (SummaryCategory::Mood, mood(&newest, i.now)),
        (SummaryCategory::Narrative, narrative(&newest)),
        (
            SummaryCategory::Goals,
            beliefs_of(i.beliefs, &[BeliefType::Goal]),
        ),
        (
            SummaryCategory::Beliefs,
            beliefs_of(
                i.beliefs,
                &[BeliefType::Fact, BeliefType::Value, BeliefType::Behavior],
            ),
        ),
    ];
    parts
        .into_iter()
        .filter_map(|(category, part)| {
            let (content, observed) = part?;
            Some(LivingSummary {
                namespace: i.namespace.to_string(),
                category,
                content,
                observation_count: observed as u64,
                updated_at: format_micros(i.now),
                written_by: "rules".into(),
            })
        })
        .collect()
}

fn lines(lines: Vec<String>) -> String {
    lines
        .iter()
        .map(|l| format!("- {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the person said they would do, newest first.
fn commitments(newest: &[&MemoryRecord]) -> Option<(String, usize)> {
    let mut seen = std::collections::HashSet::new();
    let found: Vec<String> = newest
        .iter()
        .filter(|r| r.kind != MemoryKind::Summary && r.is_the_persons())
        .flat_map(|r| {
            sentences(&r.content)
                .into_iter()
                .filter(|s| is_commitment(s))
                .map(|s| format!("{} ({})", clip(s, MAX_LINE_CHARS), day(r.event_time())))
                .collect::<Vec<_>>()
        })
        .filter(|l| seen.insert(l.to_lowercase()))
        .collect();
    let n = found.len();
    (n > 0).then(|| (lines(found.into_iter().take(MAX_LINES).collect()), n))
}

fn people(people: &[Entity]) -> Option<(String, usize)> {
    let shown: Vec<String> = people
        .iter()
        .take(MAX_LINES)
        .map(|p| {
            let relation = p
                .relation
                .as_deref()
                .filter(|r| *r != "speaker")
                .map(|r| format!("{r}, "))
                .unwrap_or_default();
            format!(
                "{} ({relation}{} mentions, last {})",
                p.name,
                p.mention_count,
                &p.last_seen.chars().take(10).collect::<String>()
            )
        })
        .collect();
    (!shown.is_empty()).then(|| (lines(shown), people.len()))
}

fn projects(projects: &[Project]) -> Option<(String, usize)> {
    let shown: Vec<String> = projects
        .iter()
        .filter(|p| p.status == "active")
        .take(MAX_LINES)
        .map(|p| {
            let mut what: Vec<String> = p
                .languages
                .iter()
                .take(2)
                .map(|l| l.language.clone())
                .collect();
            what.extend(p.build_system.clone());
            format!(
                "{} ({}{} memories, active {})",
                p.name,
                if what.is_empty() {
                    String::new()
                } else {
                    format!("{}; ", what.join(", "))
                },
                p.interaction_count,
                &p.last_active.chars().take(10).collect::<String>()
            )
        })
        .collect();
    (!shown.is_empty()).then(|| (lines(shown), projects.len()))
}

/// Beliefs that contradict each other, then what has weighed on the person lately.
fn tensions(beliefs: &[BeliefRecord], newest: &[&MemoryRecord]) -> Option<(String, usize)> {
    let by_id: HashMap<&str, &BeliefRecord> = beliefs.iter().map(|b| (b.id.as_str(), b)).collect();
    let mut found = Vec::new();
    for b in beliefs {
        for other in b.contradicts.iter().filter_map(|id| by_id.get(id.as_str())) {
            // Each pair once.
            if b.id < other.id {
                found.push(format!("\"{}\" vs \"{}\"", b.statement, other.statement));
            }
        }
    }
    found.extend(
        newest
            .iter()
            .filter(|r| r.kind != MemoryKind::Summary && r.is_the_persons())
            .filter(|r| {
                r.emotion()
                    .is_some_and(|e| e.valence <= -0.4 && e.intensity >= 0.4)
            })
            .map(|r| {
                format!(
                    "{} ({})",
                    first_sentence(&r.content, MAX_LINE_CHARS),
                    day(r.event_time())
                )
            }),
    );
    let n = found.len();
    (n > 0).then(|| (lines(found.into_iter().take(MAX_LINES).collect()), n))
}

/// The most felt emotion of the last week and its valence, against the week before.
fn mood(newest: &[&MemoryRecord], now: i64) -> Option<(String, usize)> {
    let window = |from: i64, to: i64| -> Vec<(EmotionKind, f32, f32)> {
        newest
            .iter()
            .filter(|r| r.kind != MemoryKind::Summary && r.is_the_persons())
            .filter(|r| (from..to).contains(&r.event_time()))
            .filter_map(|r| r.emotion())
            .map(|e| (e.primary, e.intensity, e.valence))
            .collect()
    };
    // The last week of what is stored, so an imported past has a mood too.
    let end = newest.first().map_or(now, |r| r.event_time().min(now) + 1);
    let this = window(end - MOOD_WINDOW_US, end);
    if this.is_empty() {
        return None;
    }
    let mut felt: Vec<(EmotionKind, f32)> = Vec::new();
    for (kind, intensity, _) in this.iter().filter(|(k, ..)| *k != EmotionKind::Neutral) {
        match felt.iter_mut().find(|(k, _)| k == kind) {
            Some(f) => f.1 += intensity,
            None => felt.push((*kind, *intensity)),
        }
    }
    felt.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mean = |v: &[(EmotionKind, f32, f32)]| v.iter().map(|x| x.2).sum::<f32>() / v.len() as f32;
    let valence = mean(&this);
    let mostly = match felt.as_slice() {
        [] => "Mostly neutral".to_string(),
        [(a, _)] => format!("Mostly {a}"),
        [(a, _), (b, _), ..] => format!("Mostly {a}, then {b}"),
    };
    let before = window(end - 2 * MOOD_WINDOW_US, end - MOOD_WINDOW_US);
    let trend = if before.is_empty() {
        String::new()
    } else {
        let was = mean(&before);
        let word = match valence - was {
            d if d > 0.1 => "up",
            d if d < -0.1 => "down",
            _ => "about the same as",
        };
        format!(", {word} from {was:+.2} the week before")
    };
    Some((
        format!(
            "{mostly} in the week to {} (valence {valence:+.2} over {} memories{trend}).",
            day(end - 1),
            this.len()
        ),
        this.len() + before.len(),
    ))
}

/// What has been happening: the last session summaries' first lines, then the most salient
/// recent memories, newest first.
fn narrative(newest: &[&MemoryRecord]) -> Option<(String, usize)> {
    let sessions = newest
        .iter()
        .filter(|r| r.kind == MemoryKind::Summary && r.session_id.is_some())
        .take(3);
    let mut salient: Vec<&&MemoryRecord> = newest
        .iter()
        .filter(|r| r.kind != MemoryKind::Summary && r.is_the_persons())
        .take(200)
        .collect();
    salient.sort_by(|a, b| b.salience.total_cmp(&a.salience));
    salient.truncate(MAX_LINES);
    salient.sort_by_key(|r| std::cmp::Reverse(r.event_time()));
    let mut seen = std::collections::HashSet::new();
    let shown: Vec<String> = sessions
        .chain(salient)
        .map(|r| {
            format!(
                "{} ({})",
                first_sentence(&r.content, MAX_LINE_CHARS),
                day(r.event_time())
            )
        })
        .filter(|l| seen.insert(l.clone()))
        .take(MAX_LINES)
        .collect();
    (!shown.is_empty()).then(|| (lines(shown), newest.len()))
}

/// The most confident current beliefs of `types`.
fn beliefs_of(beliefs: &[BeliefRecord], types: &[BeliefType]) -> Option<(String, usize)> {
    let mut of: Vec<&BeliefRecord> = beliefs
        .iter()
        .filter(|b| types.contains(&b.belief_type) && b.valid_to.is_none())
        .collect();
    of.sort_by(|a, b| {
        b.confidence
            .total_cmp(&a.confidence)
            .then(b.valid_from.cmp(&a.valid_from))
    });
    let n = of.len();
    let shown = of
        .iter()
        .take(MAX_LINES)
        .map(|b| b.statement.clone())
        .collect();
    (n > 0).then(|| (lines(shown), n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_protocol::understanding::Emotion;

    const NOW: i64 = 1_800_000_000_000_000;

    fn memory(
        id: &str,
        content: &str,
        days_ago: i64,
        felt: Option<(EmotionKind, f32)>,
    ) -> MemoryRecord {
        let mut r = MemoryRecord {
            id: id.into(),
            content: content.into(),
            created_at: NOW - days_ago * DAY_US,
            salience: 5.0,
            metadata: "{}".into(),
            ..Default::default()
        };
        if let Some((primary, valence)) = felt {
            r.set_emotion(&Emotion {
                primary,
                intensity: 0.7,
                valence,
                arousal: 0.5,
            });
        }
        r
    }

    fn belief(id: &str, statement: &str, kind: BeliefType, contradicts: &[&str]) -> BeliefRecord {
        BeliefRecord {
            id: id.into(),
            statement: statement.into(),
            belief_type: kind,
            confidence: 0.8,
            contradicts: contradicts.iter().map(|c| c.to_string()).collect(),
            ..Default::default()
        }
    }

    fn category(all: &[LivingSummary], c: SummaryCategory) -> Option<&LivingSummary> {
        all.iter().find(|s| s.category == c)
    }

    #[test]
    fn each_category_says_what_the_sources_hold_and_empty_ones_are_left_out() {
        let recent = [
            memory("a", "I'll send Maria the contract by Friday.", 1, None),
            memory(
                "b",
                "I'm so stressed and afraid about the audit.",
                2,
                Some((EmotionKind::Fear, -0.7)),
            ),
            memory(
                "c",
                "What a lovely day at the beach!",
                3,
                Some((EmotionKind::Joy, 0.8)),
            ),
            memory(
                "d",
                "The old flat was gloomy.",
                10,
                Some((EmotionKind::Sadness, -0.6)),
            ),
        ];
        let beliefs = [
            belief("b1", "I want to run a marathon", BeliefType::Goal, &[]),
            belief("b2", "I eat meat", BeliefType::Fact, &["b3"]),
            belief("b3", "I am vegetarian", BeliefType::Fact, &["b2"]),
        ];
        let all = compose(&Inputs {
            namespace: "default",
            now: NOW,
            recent: &recent,
            beliefs: &beliefs,
            people: &[],
            projects: &[],
        });
        let commitments = category(&all, SummaryCategory::Commitments).unwrap();
        assert!(commitments
            .content
            .starts_with("- I'll send Maria the contract by Friday. ("));
        let tensions = &category(&all, SummaryCategory::Tensions).unwrap().content;
        assert!(
            tensions.contains("\"I eat meat\" vs \"I am vegetarian\""),
            "{tensions}"
        );
        assert!(
            tensions.contains("stressed and afraid about the audit"),
            "{tensions}"
        );
        assert_eq!(tensions.matches(" vs ").count(), 1, "each pair once");
        let mood = &category(&all, SummaryCategory::Mood).unwrap().content;
        assert!(
            mood.starts_with("Mostly joy, then fear") || mood.starts_with("Mostly fear, then joy"),
            "{mood}"
        );
        assert!(mood.contains("up from -0.60 the week before"), "{mood}");
        assert_eq!(
            category(&all, SummaryCategory::Goals).unwrap().content,
            "- I want to run a marathon"
        );
        assert_eq!(
            category(&all, SummaryCategory::Beliefs)
                .unwrap()
                .observation_count,
            2
        );
        assert!(category(&all, SummaryCategory::People).is_none());
        assert!(category(&all, SummaryCategory::Projects).is_none());
        assert!(category(&all, SummaryCategory::Narrative).is_some());
    }

    #[test]
    fn an_empty_store_has_no_summaries() {
        let all = compose(&Inputs {
            namespace: "default",
            now: NOW,
            recent: &[],
            beliefs: &[],
            people: &[],
            projects: &[],
        });
        assert!(all.is_empty());
    }
}
