//! What each tier could hold: candidates with a score (0–1, within the tier), the key that
//! makes two of them the same thing, and a report per source — so an empty source says why.

use mnemo_protocol::agent::TriggersResult;
use mnemo_protocol::belief::{BeliefSource, BeliefType, USER};
use mnemo_protocol::context::{ItemKind, SourceReport, Tier};
use mnemo_protocol::memory::{Filter, SearchHit, SearchParams};
use mnemo_protocol::project::Project;
use mnemo_protocol::session::Role;
use mnemo_protocol::summary::{LivingSummary, SummaryCategory};

use super::Request;
use crate::config::{AgentConfig, AutomaticSource, ProfileConfig};
use crate::error::Result;
use crate::recall::{Recall, MAX_K};
use crate::sessions::ShortTerm;
use crate::store::beliefs::BeliefRecord;
use crate::understand::emotion::words;
use crate::understand::entities::is_common_word;
use crate::understand::sentences::clip;
use crate::usermodel::vectors::similarity;

#[derive(Debug, Clone)]
pub struct Candidate {
    pub tier: Tier,
    pub kind: ItemKind,
    pub id: Option<String>,
    /// What makes two candidates one thing: a memory's lineage, a belief's id.
    pub key: String,
    pub text: String,
    /// The day a memory is of: the package writes its memories under a heading per day.
    pub day: Option<String>,
    pub score: f32,
    pub why: String,
}

/// What a tier's sources found; `left_out` are candidates the profile filtered.
#[derive(Default)]
pub struct Found {
    pub candidates: Vec<Candidate>,
    pub sources: Vec<SourceReport>,
    pub left_out: Vec<(Candidate, String)>,
}

impl Found {
    fn report(&mut self, source: &str, found: usize, empty_because: &str) {
        self.sources.push(SourceReport {
            source: source.into(),
            found: found as u64,
            note: (found == 0).then(|| empty_because.to_string()),
        });
    }
}

/// Whether the profile keeps something of `domain` (none: always).
fn domain_kept(profile: &ProfileConfig, domain: Option<&str>) -> bool {
    profile.domains.is_empty() || domain.is_none_or(|d| profile.domains.iter().any(|p| p == d))
}

/// Identity, then what the automatic layer is configured to carry: the person's standing
/// rules, corrections and constraints, preferences, and conventions.
pub fn core(
    r: &Request,
    profile: &ProfileConfig,
    beliefs: &[BeliefRecord],
    identity: &mnemo_protocol::belief::Identity,
    layers: &AgentConfig,
) -> Found {
    let mut found = Found::default();
    let mut traits = 0;
    for (i, (label, values)) in identity.parts().iter().enumerate() {
        if values.is_empty() {
            continue;
        }
        traits += 1;
        let shown: Vec<&str> = values.iter().take(4).map(|t| t.value.as_str()).collect();
        found.candidates.push(Candidate {
            day: None,
            tier: Tier::Core,
            kind: ItemKind::Identity,
            id: Some(values[0].belief_id.clone()),
            key: format!("identity:{label}"),
            text: format!("{}: {}", capitalised(label), shown.join(", ")),
            // Name first, then in reading order.
            score: 1.0 - i as f32 * 0.02,
            why: format!(
                "who the person is ({label}, confidence {:.2})",
                values[0].confidence
            ),
        });
    }
    found.report(
        "identity",
        traits,
        "nothing is known yet of who the person is (\"my name is …\", \"I work at …\")",
    );
    let mut standing = 0;
    for b in beliefs
        .iter()
        .filter(|b| b.subject == USER || b.belief_type == BeliefType::Rule)
    {
        let (kind, source) = match b.belief_type {
            BeliefType::Rule => (ItemKind::Rule, AutomaticSource::Corrections),
            BeliefType::Constraint => (ItemKind::Constraint, AutomaticSource::Corrections),
            BeliefType::Preference => (ItemKind::Preference, AutomaticSource::Preferences),
            BeliefType::Behavior | BeliefType::Value => {
                (ItemKind::Preference, AutomaticSource::Conventions)
            }
            _ => continue,
        };
        if !layers.automatic(source) {
            continue;
        }
        let candidate = Candidate {
            day: None,
            tier: Tier::Core,
            kind,
            id: Some(b.id.clone()),
            key: format!("belief:{}", b.id),
            text: b.statement.clone(),
            // Corrections and constraints before tastes; said outright before read.
            score: b.confidence
                * match kind {
                    ItemKind::Preference => 0.8,
                    _ => 0.95,
                }
                * if b.source == BeliefSource::Explicit {
                    1.0
                } else {
                    0.9
                },
            why: format!("{} {kind}, confidence {:.2}", b.source, b.confidence),
        };
        if !domain_kept(profile, b.domain.as_deref()) {
            let why = format!(
                "profile `{}` leaves out domain {}",
                r.profile,
                b.domain.as_deref().unwrap_or_default()
            );
            found.left_out.push((candidate, why));
            continue;
        }
        standing += 1;
        found.candidates.push(candidate);
    }
    found.report(
        "preferences",
        standing,
        if layers.automatic.is_empty() {
            "the automatic layer is off ([agent] automatic = [] in the config)"
        } else {
            "no preferences, corrections or constraints yet (`mnemo prefs set`, or say \"I prefer …\")"
        },
    );
    found
}

fn capitalised(label: &str) -> String {
    let mut c = label.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The living summaries, most actionable first.
pub fn living(summaries: &[LivingSummary]) -> Found {
    let mut found = Found::default();
    for s in summaries {
        let rank = SummaryCategory::ALL
            .iter()
            .position(|c| *c == s.category)
            .unwrap_or(0);
        found.candidates.push(Candidate {
            day: None,
            tier: Tier::Living,
            kind: ItemKind::Summary,
            id: None,
            key: format!("living:{}", s.category),
            text: format!("{}:\n{}", capitalised(s.category.as_str()), s.content),
            score: 1.0 - rank as f32 * 0.05,
            why: format!(
                "living summary of {} observations, updated {}",
                s.observation_count, s.updated_at
            ),
        });
    }
    found.report(
        "summaries",
        summaries.len(),
        "no living summaries yet: consolidation writes them while the machine is idle (`mnemo consolidate run`)",
    );
    found
}

/// The session's running summary and recent messages (else the last session's summary), and
/// the active project.
pub fn session(
    short: Option<&ShortTerm>,
    last: std::result::Result<
        (
            &mnemo_protocol::session::Session,
            &mnemo_protocol::session::SessionSummary,
        ),
        &str,
    >,
    project: Option<&Project>,
) -> Found {
    let mut found = Found::default();
    match short {
        Some(s) => {
            let n = s.recent.len();
            // The running summary tells what the recent messages no longer hold.
            let beyond_recent = s.session.message_count > n as u64 || s.session.ended_at.is_some();
            if let Some(summary) = s.summary.as_ref().filter(|_| beyond_recent) {
                found.candidates.push(Candidate {
                    day: None,
                    tier: Tier::Session,
                    kind: ItemKind::SessionSummary,
                    id: Some(s.session.id.clone()),
                    key: format!("session:{}", s.session.id),
                    text: format!("So far: {}", summary.text),
                    score: 1.0,
                    why: "the session's running summary".into(),
                });
            }
            for (i, m) in s.recent.iter().enumerate() {
                found.candidates.push(Candidate {
                    day: None,
                    tier: Tier::Session,
                    kind: ItemKind::Message,
                    id: Some(m.memory_id.clone()),
                    key: format!("memory:{}", m.memory_id),
                    text: format!("{}: {}", role_label(m.role), m.content),
                    // The newest matter most.
                    score: 0.5 + 0.45 * (i + 1) as f32 / n as f32,
                    why: format!(
                        "turn {} of {} in the session",
                        m.turn, s.session.message_count
                    ),
                });
            }
            found.report("messages", n, "the session has no messages yet");
        }
        None => {
            if let Ok((session, summary)) = last {
                found.candidates.push(Candidate {
                    day: None,
                    tier: Tier::Session,
                    kind: ItemKind::SessionSummary,
                    id: Some(session.id.clone()),
                    key: format!("session:{}", session.id),
                    text: format!(
                        "Last session ({}): {}",
                        session
                            .ended_at
                            .as_deref()
                            .unwrap_or_default()
                            .get(..10)
                            .unwrap_or_default(),
                        summary.text
                    ),
                    score: 0.9,
                    why: "the summary of the last session that ended".into(),
                });
            }
            found.report(
                "session",
                usize::from(last.is_ok()),
                last.err().unwrap_or_default(),
            );
        }
    }
    if let Some(p) = project {
        let mut what: Vec<String> = p
            .languages
            .iter()
            .take(3)
            .map(|l| l.language.clone())
            .collect();
        what.extend(p.build_system.clone());
        what.extend(p.frameworks.iter().take(3).cloned());
        let mut text = format!("Project {} at {}", p.name, p.path);
        if !what.is_empty() {
            text.push_str(&format!(" ({})", what.join(", ")));
        }
        if let Some(d) = &p.description {
            text.push_str(&format!(": {}", clip(d, 200)));
        }
        found.candidates.push(Candidate {
            day: None,
            tier: Tier::Session,
            kind: ItemKind::Project,
            id: Some(p.id.clone()),
            key: format!("project:{}", p.id),
            text,
            score: 0.97,
            why: "the active project".into(),
        });
    }
    found.report(
        "project",
        usize::from(project.is_some()),
        "no active project: the session names none and no cwd was given",
    );
    found
}

/// The triggered layer's warnings for the state: first in the retrieved tier, most
/// confident first.
pub fn warnings(found: Option<&TriggersResult>) -> Found {
    let mut out = Found::default();
    let warnings = found.map(|f| f.warnings.as_slice()).unwrap_or_default();
    for w in warnings {
        let mut text = format!("Warning: {}", w.text);
        if let Some(fix) = &w.fixed_by {
            text.push_str(&format!(" — {fix}"));
        }
        out.candidates.push(Candidate {
            day: None,
            tier: Tier::Retrieved,
            kind: ItemKind::Warning,
            id: w.episodes.first().cloned(),
            key: format!("warning:{}:{}", w.kind, w.target),
            text,
            score: 0.9 + 0.1 * w.confidence,
            why: format!("{} (confidence {:.2})", w.reason, w.confidence),
        });
    }
    out.report(
        "warnings",
        warnings.len(),
        if found.is_none() {
            "the triggered layer is off, or the request names no files, command or query"
        } else {
            "nothing in the recorded episodes matches this state"
        },
    );
    out
}

fn role_label(role: Role) -> &'static str {
    match role {
        Role::User => "Person",
        Role::Assistant => "Assistant",
        Role::Tool => "Tool",
    }
}

/// How many memories retrieval asks for: enough to fill the budget with short ones.
pub fn recall_k(budget: u32) -> usize {
    (budget as usize / 20).clamp(10, MAX_K)
}

/// Recall for the query in each namespace the profile reads, ranked with the profile's
/// recency weight and filtered by its domains, kinds, salience and strength.
pub async fn retrieved(
    recall: &Recall,
    r: &Request,
    profile: &ProfileConfig,
    beliefs: &[BeliefRecord],
    project: Option<&Project>,
) -> Result<Found> {
    let mut found = Found::default();
    let Some(query) = r.query.as_deref() else {
        found.report(
            "recall",
            0,
            "no query given: say what the conversation is about",
        );
        return Ok(found);
    };
    let namespaces = if profile.namespaces.is_empty() {
        vec![r.namespace.clone()]
    } else {
        profile.namespaces.clone()
    };
    let mut hits: Vec<SearchHit> = Vec::new();
    for namespace in namespaces {
        let result = recall
            .search(SearchParams {
                query: query.to_string(),
                k: Some(recall_k(r.budget)),
                filter: Filter {
                    namespace: Some(namespace),
                    kind: (profile.kinds.len() == 1).then(|| profile.kinds[0]),
                    ..Default::default()
                },
                explain: true,
                ..Default::default()
            })
            .await?;
        hits.extend(result.hits);
    }
    let top = hits
        .iter()
        .map(|h| h.score)
        .fold(f32::MIN, f32::max)
        .max(f32::EPSILON);
    let mut recalled = 0;
    for h in hits {
        let m = &h.memory;
        let recency = h.explain.as_ref().map_or(0.0, |e| e.recency);
        let score =
            (1.0 - profile.recency_weight) * (h.score / top) + profile.recency_weight * recency;
        let session_summary = m.metadata.get("session_summary").is_some();
        let candidate = Candidate {
            day: m
                .occurred_at
                .as_deref()
                .unwrap_or(&m.created_at)
                .get(..10)
                .map(str::to_string),
            tier: Tier::Retrieved,
            kind: ItemKind::Memory,
            id: Some(m.id.clone()),
            key: match (&m.session_id, session_summary) {
                (Some(s), true) => format!("session:{s}"),
                _ => format!("memory:{}", m.id),
            },
            text: m.content.clone(),
            score,
            why: explain_hit(&h, recency),
        };
        let left_out = if !domain_kept(profile, m.domain.as_deref()) {
            Some(format!(
                "profile `{}` leaves out domain {}",
                r.profile,
                m.domain.as_deref().unwrap_or_default()
            ))
        } else if !profile.kinds.is_empty() && !profile.kinds.contains(&m.kind) {
            Some(format!(
                "profile `{}` leaves out kind {}",
                r.profile, m.kind
            ))
        } else if m.salience < profile.min_salience {
            Some(format!(
                "salience {:.1} is below the profile's {:.1}",
                m.salience, profile.min_salience
            ))
        } else if m.strength < profile.min_strength {
            Some(format!(
                "strength {:.2} is below the profile's {:.2}",
                m.strength, profile.min_strength
            ))
        } else {
            None
        };
        match left_out {
            Some(why) => found.left_out.push((candidate, why)),
            None => {
                recalled += 1;
                found.candidates.push(candidate);
            }
        }
    }
    found.report("recall", recalled, "nothing stored matches the query");
    let query_vector = recall.query_vector(query).await?;
    let touched = beliefs_touched(query, &query_vector, beliefs, project, profile);
    found.report(
        "beliefs",
        touched.len(),
        "no current belief is near the query in meaning or words, or about the project",
    );
    found.candidates.extend(touched);
    Ok(found)
}

fn explain_hit(h: &SearchHit, recency: f32) -> String {
    let Some(e) = &h.explain else {
        return format!("recall score {:.2}", h.score);
    };
    let mut parts = vec![format!("recall score {:.2}", h.score)];
    if let Some(rank) = e.vector_rank {
        parts.push(format!("meaning #{rank}"));
    }
    if let Some(rank) = e.text_rank {
        parts.push(format!("words #{rank}"));
    }
    if e.entity > 0.0 {
        parts.push(format!("names {:.2}", e.entity));
    }
    if e.subject > 0.0 {
        parts.push("by whom it names".into());
    }
    parts.push(format!("recency {recency:.2}"));
    parts.join(", ")
}

/// The cosine from which a belief's statement counts as being about the query. With MiniLM, a
/// belief and a query about the same thing in other words score 0.28–0.69 ("The user wants to
/// learn Japanese" / "plan my trip to Tokyo" 0.42, "likes hiking" / "weekend plans outdoors"
/// 0.28), unrelated ones at most 0.13 ("Maria lives in Porto" / "the capital of France").
const NEAR_IN_MEANING: f32 = 0.25;

/// Current beliefs whose statement is near the query in meaning or shares a content word with
/// it, and those scoped to the active project: what the store believes that bears on the task.
fn beliefs_touched(
    query: &str,
    query_vector: &[f32],
    beliefs: &[BeliefRecord],
    project: Option<&Project>,
    profile: &ProfileConfig,
) -> Vec<Candidate> {
    let asked: std::collections::HashSet<String> = words(query)
        .into_iter()
        .filter(|w| w.len() > 2 && !is_common_word(w))
        .collect();
    let mut out = Vec::new();
    for b in beliefs {
        if !domain_kept(profile, b.domain.as_deref()) {
            continue;
        }
        let said = words(&b.statement);
        let shared = said.iter().filter(|w| asked.contains(*w)).count();
        let in_project = project.is_some_and(|p| b.scope.as_deref() == Some(p.id.as_str()));
        let near = similarity(b, query_vector).filter(|s| *s >= NEAR_IN_MEANING);
        if shared == 0 && near.is_none() && !in_project {
            continue;
        }
        let overlap = shared as f32 / asked.len().max(1) as f32;
        // Both say how much of the query the belief answers, on one 0–1 scale.
        let closeness = near.map_or(0.0, |s| (s - NEAR_IN_MEANING) / (1.0 - NEAR_IN_MEANING));
        let relevance = overlap.max(closeness).min(1.0);
        out.push(Candidate {
            day: None,
            tier: Tier::Retrieved,
            kind: ItemKind::Belief,
            id: Some(b.id.clone()),
            key: format!("belief:{}", b.id),
            text: b.statement.clone(),
            score: b.confidence
                * if in_project {
                    0.9
                } else {
                    0.5 + 0.4 * relevance
                },
            why: match (in_project, near) {
                (true, _) => "believed about the active project".into(),
                (false, Some(s)) if closeness >= overlap => {
                    format!("a current belief near the query in meaning ({s:.2})")
                }
                _ => format!("a current belief sharing {shared} word(s) with the query"),
            },
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_asks_for_enough_to_fill_the_budget() {
        assert_eq!(recall_k(64), 10);
        assert_eq!(recall_k(2000), 100);
        assert_eq!(recall_k(100_000), MAX_K);
    }

    #[test]
    fn a_profile_keeps_its_domains_and_what_has_none() {
        let work = ProfileConfig {
            domains: vec!["work".into()],
            ..Default::default()
        };
        assert!(domain_kept(&work, Some("work")));
        assert!(domain_kept(&work, None));
        assert!(!domain_kept(&work, Some("family")));
        assert!(domain_kept(&ProfileConfig::default(), Some("family")));
    }
}
