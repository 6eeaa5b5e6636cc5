//! Filling a package: each tier takes its best candidates up to its share of the budget,
//! what a tier leaves passes to the others, nothing is in twice, and the written text is
//! counted again by the tokenizer — the package is never over its budget by the model's own
//! count.

use std::collections::HashMap;

use mnemo_protocol::context::{Dropped, Format, Item, ItemKind, SourceReport, Tier, TierReport};

use super::tiers::Candidate;
use super::tokens::Tokenizer;
use crate::config::TierShares;
use crate::understand::sentences::clip;

/// Dropped items a package lists at most.
const MAX_DROPPED: usize = 50;
const TITLE: &str = "# What you know about the person\n";

/// Tiers in the order they are filled: who the person is, then the conversation, then what
/// is going on, then what retrieval found.
const PRIORITY: [Tier; 4] = [Tier::Core, Tier::Session, Tier::Living, Tier::Retrieved];

fn heading(tier: Tier) -> &'static str {
    match tier {
        Tier::Core => "## About the person\n",
        Tier::Living => "## Lately\n",
        Tier::Session => "## This conversation\n",
        Tier::Retrieved => "## Relevant memories\n",
    }
}

fn share(shares: &TierShares, tier: Tier) -> f32 {
    match tier {
        Tier::Core => shares.core,
        Tier::Living => shares.living,
        Tier::Session => shares.session,
        Tier::Retrieved => shares.retrieved,
    }
}

/// How an item is written: a Markdown bullet (later lines indented under it; its day is the
/// heading it is under), or a JSON string in its tier's list (its day before it).
fn written(format: Format, c: &Candidate) -> String {
    match (format, &c.day) {
        (Format::Markdown, _) => format!("- {}\n", c.text.replace('\n', "\n  ")),
        (Format::Json, None) => json_string(&c.text),
        (Format::Json, Some(day)) => json_string(&format!("({day}) {}", c.text)),
    }
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).expect("a string") + ","
}

/// The heading the memories of one day are written under.
fn day_heading(day: &str) -> String {
    format!("### {day}\n")
}

pub struct Filled {
    pub text: String,
    pub tokens: u32,
    pub tiers: Vec<TierReport>,
    pub dropped: Vec<Dropped>,
    pub dropped_count: u64,
}

pub struct Settings<'a> {
    pub budget: u32,
    pub shares: &'a TierShares,
    pub format: Format,
    pub tokenizer: &'a Tokenizer,
    pub explain: bool,
}

struct Taken {
    candidate: Candidate,
    tokens: u32,
}

pub fn fill(
    candidates: Vec<Candidate>,
    mut sources: HashMap<Tier, Vec<SourceReport>>,
    left_out: Vec<(Candidate, String)>,
    s: &Settings,
) -> Filled {
    let count = |text: &str| s.tokenizer.count(text);
    let mut dropped: Vec<(Candidate, u32, String)> = left_out
        .into_iter()
        .map(|(c, why)| {
            let t = count(&written(s.format, &c));
            (c, t, why)
        })
        .collect();
    // One thing found by two tiers stays in the one read first (a message the session holds
    // is not repeated as a retrieved memory).
    let rank = |t: Tier| PRIORITY.iter().position(|p| *p == t);
    let mut home: HashMap<String, Tier> = HashMap::new();
    for c in &candidates {
        let tier = home.entry(c.key.clone()).or_insert(c.tier);
        if rank(c.tier) < rank(*tier) {
            *tier = c.tier;
        }
    }
    let mut by_tier: HashMap<Tier, Vec<(Candidate, u32)>> = HashMap::new();
    for c in candidates {
        let t = count(&written(s.format, &c));
        match home[&c.key] {
            tier if tier == c.tier => by_tier.entry(c.tier).or_default().push((c, t)),
            tier => dropped.push((c, t, format!("already in the {tier} tier"))),
        }
    }
    for list in by_tier.values_mut() {
        list.sort_by(|a, b| b.0.score.total_cmp(&a.0.score));
    }
    let frame = count(&frame(s.format));
    let room = s.budget.saturating_sub(frame);
    let total_share: f32 = PRIORITY.iter().map(|t| share(s.shares, *t)).sum();
    let allotted: HashMap<Tier, u32> = PRIORITY
        .iter()
        .map(|t| (*t, (room as f32 * share(s.shares, *t) / total_share) as u32))
        .collect();

    let mut taken: HashMap<Tier, Vec<Taken>> = HashMap::new();
    let mut used_by: HashMap<Tier, u32> = HashMap::new();
    let mut used = 0u32;
    let mut seen: HashMap<String, Tier> = HashMap::new();
    let mut days: HashMap<Tier, std::collections::HashSet<String>> = HashMap::new();
    let mut pending: Vec<(Candidate, u32)> = Vec::new();
    // First each tier within its share, then anyone within what is left.
    for pass in 0..2 {
        let queue: Vec<(Candidate, u32)> = if pass == 0 {
            PRIORITY
                .iter()
                .flat_map(|t| by_tier.remove(t).unwrap_or_default())
                .collect()
        } else {
            std::mem::take(&mut pending)
        };
        for (c, tokens) in queue {
            if let Some(tier) = seen.get(&c.key) {
                let why = format!("already in the {tier} tier");
                dropped.push((c, tokens, why));
                continue;
            }
            let head = if taken.get(&c.tier).is_none_or(|t| t.is_empty()) {
                count(heading_for(s.format, c.tier))
            } else {
                0
            };
            let new_day = match (&c.day, s.format) {
                (Some(day), Format::Markdown) => {
                    !days.get(&c.tier).is_some_and(|d| d.contains(day))
                }
                _ => false,
            };
            let day_cost = match (&c.day, new_day) {
                (Some(day), true) => count(&day_heading(day)),
                _ => 0,
            };
            let cost = tokens + head + day_cost;
            let tier_used = used_by.get(&c.tier).copied().unwrap_or(0);
            let fits = used + cost <= room && (pass == 1 || tier_used + cost <= allotted[&c.tier]);
            if !fits {
                if pass == 0 {
                    pending.push((c, tokens));
                } else {
                    let why = format!(
                        "over the budget: {} of {} tokens were taken by better items",
                        used, s.budget
                    );
                    dropped.push((c, tokens, why));
                }
                continue;
            }
            used += cost;
            *used_by.entry(c.tier).or_default() += cost;
            seen.insert(c.key.clone(), c.tier);
            if let Some(day) = &c.day {
                days.entry(c.tier).or_default().insert(day.clone());
            }
            taken.entry(c.tier).or_default().push(Taken {
                candidate: c,
                tokens,
            });
        }
        pending.sort_by(|a, b| {
            rank(a.0.tier)
                .cmp(&rank(b.0.tier))
                .then(b.0.score.total_cmp(&a.0.score))
        });
    }
    for list in taken.values_mut() {
        arrange(list);
    }
    // The model's count of the whole text decides: drop the weakest until it fits.
    let (text, tokens) = loop {
        let text = render(s.format, &taken);
        let tokens = count(&text);
        if tokens <= s.budget {
            break (text, tokens);
        }
        let weakest = PRIORITY.iter().rev().find_map(|t| {
            let list = taken.get(t)?;
            let i = (0..list.len()).min_by(|a, b| {
                list[*a]
                    .candidate
                    .score
                    .total_cmp(&list[*b].candidate.score)
            })?;
            Some((*t, i))
        });
        let Some((tier, i)) = weakest else {
            break (text, tokens);
        };
        let t = taken.get_mut(&tier).expect("found above").remove(i);
        dropped.push((
            t.candidate,
            t.tokens,
            "over the budget once the text was counted whole".into(),
        ));
    };
    dropped.sort_by(|a, b| b.0.score.total_cmp(&a.0.score));
    let dropped_count = dropped.len() as u64;
    let tiers = Tier::ALL
        .iter()
        .map(|tier| {
            let items: Vec<Item> = taken
                .remove(tier)
                .unwrap_or_default()
                .into_iter()
                .map(|t| Item {
                    kind: t.candidate.kind,
                    id: t.candidate.id,
                    text: t.candidate.text,
                    tokens: t.tokens,
                    score: t.candidate.score,
                    why: s.explain.then_some(t.candidate.why),
                })
                .collect();
            TierReport {
                tier: *tier,
                allotted: allotted[tier],
                tokens: used_by.get(tier).copied().unwrap_or(0),
                items,
                sources: sources.remove(tier).unwrap_or_default(),
            }
        })
        .collect();
    Filled {
        text,
        tokens,
        tiers,
        dropped: dropped
            .into_iter()
            .take(MAX_DROPPED)
            .map(|(c, tokens, reason)| Dropped {
                tier: c.tier,
                kind: c.kind,
                id: c.id,
                tokens,
                score: c.score,
                reason,
                preview: s.explain.then(|| clip(&c.text, 120)),
            })
            .collect(),
        dropped_count,
    }
}

/// A tier's items in reading order: the conversation's messages as they were said, the rest
/// best first.
fn arrange(list: &mut [Taken]) {
    list.sort_by(|a, b| {
        let message = |t: &Taken| t.candidate.kind == ItemKind::Message;
        match (message(a), message(b)) {
            (true, true) => a.candidate.score.total_cmp(&b.candidate.score),
            (false, true) => std::cmp::Ordering::Less,
            (true, false) => std::cmp::Ordering::Greater,
            (false, false) => b.candidate.score.total_cmp(&a.candidate.score),
        }
    });
}

fn frame(format: Format) -> String {
    match format {
        Format::Markdown => TITLE.to_string(),
        Format::Json => "{}".to_string(),
    }
}

fn heading_for(format: Format, tier: Tier) -> &'static str {
    match format {
        Format::Markdown => heading(tier),
        Format::Json => match tier {
            Tier::Core => "\"core\":[],",
            Tier::Living => "\"living\":[],",
            Tier::Session => "\"session\":[],",
            Tier::Retrieved => "\"retrieved\":[],",
        },
    }
}

fn render(format: Format, taken: &HashMap<Tier, Vec<Taken>>) -> String {
    let filled = || {
        Tier::ALL
            .iter()
            .filter_map(|t| Some((*t, taken.get(t).filter(|l| !l.is_empty())?)))
    };
    match format {
        Format::Markdown => {
            let mut text = TITLE.to_string();
            for (tier, items) in filled() {
                text.push_str(heading(tier));
                for t in items.iter().filter(|t| t.candidate.day.is_none()) {
                    text.push_str(&written(format, &t.candidate));
                }
                // Then the memories by day, oldest day first.
                let mut by_day: Vec<&Taken> =
                    items.iter().filter(|t| t.candidate.day.is_some()).collect();
                by_day.sort_by(|a, b| a.candidate.day.cmp(&b.candidate.day));
                let mut day = None;
                for t in by_day {
                    if day != t.candidate.day.as_ref() {
                        day = t.candidate.day.as_ref();
                        text.push_str(&day_heading(day.expect("grouped by day")));
                    }
                    text.push_str(&written(format, &t.candidate));
                }
            }
            text
        }
        Format::Json => {
            let object: serde_json::Map<String, serde_json::Value> = filled()
                .map(|(tier, items)| {
                    let texts = items
                        .iter()
                        .map(|t| {
                            let written = written(Format::Json, &t.candidate);
                            serde_json::from_str(written.trim_end_matches(','))
                                .expect("a JSON string")
                        })
                        .collect();
                    (tier.to_string(), serde_json::Value::Array(texts))
                })
                .collect();
            serde_json::Value::Object(object).to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TokenizerKind;

    fn candidate(tier: Tier, key: &str, text: &str, score: f32) -> Candidate {
        Candidate {
            day: None,
            tier,
            kind: ItemKind::Memory,
            id: Some(key.into()),
            key: key.into(),
            text: text.into(),
            score,
            why: "test".into(),
        }
    }

    fn settings(tokenizer: &Tokenizer, budget: u32, format: Format) -> Settings<'_> {
        static SHARES: TierShares = TierShares {
            core: 0.25,
            living: 0.25,
            session: 0.25,
            retrieved: 0.25,
        };
        Settings {
            budget,
            shares: &SHARES,
            format,
            tokenizer,
            explain: true,
        }
    }

    #[test]
    fn best_first_each_once_never_over_the_budget() {
        let tokenizer = Tokenizer::load(TokenizerKind::O200k);
        let mut candidates = vec![
            candidate(Tier::Core, "name", "Name: Sam", 1.0),
            candidate(
                Tier::Session,
                "m1",
                "Person: the migration failed again",
                0.9,
            ),
        ];
        for i in 0..40 {
            candidates.push(candidate(
                Tier::Retrieved,
                &format!("r{i}"),
                &format!("memory number {i} about the database migration and its rollback plan"),
                1.0 - i as f32 / 100.0,
            ));
        }
        // Also found by retrieval: kept once, in the session tier.
        candidates.push(candidate(
            Tier::Retrieved,
            "m1",
            "(2026-01-01) the migration failed again",
            0.99,
        ));
        for budget in [64, 120, 300] {
            let filled = fill(
                candidates.clone(),
                HashMap::new(),
                Vec::new(),
                &settings(&tokenizer, budget, Format::Markdown),
            );
            assert!(filled.tokens <= budget, "{} > {budget}", filled.tokens);
            assert_eq!(filled.tokens, tokenizer.count(&filled.text));
            let retrieved = &filled.tiers[3].items;
            let scores: Vec<f32> = retrieved.iter().map(|i| i.score).collect();
            assert!(scores.windows(2).all(|w| w[0] >= w[1]), "best first");
            if let Some(last) = retrieved.last() {
                assert!(filled
                    .dropped
                    .iter()
                    .filter(|d| d.reason.starts_with("over"))
                    .all(|d| d.score <= last.score));
            }
            assert!(filled.text.contains("Name: Sam"));
            assert_eq!(filled.text.matches("the migration failed again").count(), 1);
            assert!(filled
                .dropped
                .iter()
                .any(|d| d.reason == "already in the session tier"));
            assert_eq!(filled.dropped_count as usize, 41 - retrieved.len());
        }
    }

    #[test]
    fn unused_shares_pass_to_the_other_tiers() {
        let tokenizer = Tokenizer::load(TokenizerKind::O200k);
        let candidates: Vec<Candidate> = (0..30)
            .map(|i| {
                candidate(
                    Tier::Retrieved,
                    &format!("r{i}"),
                    &format!("a retrieved memory, number {i}"),
                    0.5,
                )
            })
            .collect();
        let filled = fill(
            candidates,
            HashMap::new(),
            Vec::new(),
            &settings(&tokenizer, 400, Format::Markdown),
        );
        let retrieved = &filled.tiers[3];
        assert!(
            retrieved.tokens > retrieved.allotted,
            "{} ≤ {}",
            retrieved.tokens,
            retrieved.allotted
        );
        assert_eq!(retrieved.items.len(), 30);
        assert_eq!(filled.dropped_count, 0);
    }

    #[test]
    fn memories_are_written_under_their_day_oldest_first() {
        let tokenizer = Tokenizer::load(TokenizerKind::O200k);
        let on = |key: &str, day: &str, score: f32| Candidate {
            day: Some(day.into()),
            ..candidate(Tier::Retrieved, key, &format!("memory {key}"), score)
        };
        let candidates = vec![
            on("a", "2026-03-02", 0.9),
            on("b", "2026-01-05", 0.8),
            on("c", "2026-03-02", 0.7),
        ];
        let filled = fill(
            candidates.clone(),
            HashMap::new(),
            Vec::new(),
            &settings(&tokenizer, 200, Format::Markdown),
        );
        assert!(
            filled.text.ends_with(
                "## Relevant memories\n### 2026-01-05\n- memory b\n### 2026-03-02\n- memory a\n- memory c\n"
            ),
            "{}",
            filled.text
        );
        assert_eq!(filled.tokens, tokenizer.count(&filled.text));
        let json = fill(
            candidates,
            HashMap::new(),
            Vec::new(),
            &settings(&tokenizer, 200, Format::Json),
        );
        assert!(
            json.text.contains("\"(2026-01-05) memory b\""),
            "{}",
            json.text
        );
    }

    #[test]
    fn json_packages_are_json_and_counted_too() {
        let tokenizer = Tokenizer::load(TokenizerKind::Cl100k);
        let candidates = vec![
            candidate(Tier::Core, "name", "Name: Sam", 1.0),
            candidate(Tier::Retrieved, "r", "said \"hi\"", 0.5),
        ];
        let filled = fill(
            candidates,
            HashMap::new(),
            Vec::new(),
            &settings(&tokenizer, 100, Format::Json),
        );
        let v: serde_json::Value = serde_json::from_str(&filled.text).unwrap();
        assert_eq!(v["core"][0], "Name: Sam");
        assert_eq!(v["retrieved"][0], "said \"hi\"");
        assert_eq!(filled.tokens, tokenizer.count(&filled.text));
    }

    #[test]
    fn an_empty_package_is_just_its_frame() {
        let tokenizer = Tokenizer::load(TokenizerKind::O200k);
        let filled = fill(
            Vec::new(),
            HashMap::new(),
            Vec::new(),
            &settings(&tokenizer, 64, Format::Markdown),
        );
        assert_eq!(filled.text, TITLE);
        assert_eq!(filled.tiers.len(), 4);
        assert_eq!(filled.dropped_count, 0);
    }
}
