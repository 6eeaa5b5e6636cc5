//! What the bridge's tools and resources say, written for a model to read: one memory per
//! line with its day and id (so it can be recalled, corrected or forgotten by id), and the
//! same facts as JSON beside it.

use mnemo_protocol::entity::Entity;
use mnemo_protocol::memory::{Memory, SearchResult};
use serde_json::{json, Value};

use crate::output::day;

/// "1 memory", "3 memories".
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `[2026-11-20] content (episodic, id …)`, the content on one line.
pub fn line(m: &Memory) -> String {
    format!(
        "[{}] {} ({}, id {})",
        day(m),
        m.content.replace('\n', " "),
        m.kind,
        m.id
    )
}

pub fn memory_json(m: &Memory) -> Value {
    json!({
        "id": m.id,
        "content": m.content,
        "kind": m.kind,
        "namespace": m.namespace,
        "when": m.occurred_at.as_deref().unwrap_or(&m.created_at),
        "created_at": m.created_at,
        "tags": m.tags,
        "session_id": m.session_id,
        "salience": m.salience,
    })
}

pub fn remembered(m: &Memory) -> String {
    format!(
        "Remembered as {} ({}, salience {:.1} of 10).",
        m.id, m.kind, m.salience
    )
}

pub fn recalled(query: &str, found: &SearchResult) -> String {
    let mut text = if found.hits.is_empty() {
        format!("No memory matches \u{201c}{query}\u{201d}.")
    } else {
        let mut lines = vec![format!(
            "{} for \u{201c}{query}\u{201d}, best first:",
            count(found.hits.len(), "memory", "memories")
        )];
        for (i, hit) in found.hits.iter().enumerate() {
            lines.push(format!(
                "{}. {} score {:.2}",
                i + 1,
                line(&hit.memory),
                hit.score
            ));
        }
        lines.join("\n")
    };
    // A degraded embedder matches words, not meaning: the model should know to rephrase.
    if found.embedder.contains("hashed") {
        text.push_str(&format!(
            "\n(Searched with the {} embedder: matches words more than meaning.)",
            found.embedder
        ));
    }
    text
}

pub fn listing(memories: &[Memory]) -> String {
    if memories.is_empty() {
        return "No memories yet.".into();
    }
    let mut lines = vec![format!(
        "The {} most recent, newest first:",
        count(memories.len(), "memory", "memories")
    )];
    lines.extend(memories.iter().map(line));
    lines.join("\n")
}

pub fn entities(list: &[Entity], total: u64) -> String {
    if list.is_empty() {
        return "No entities known yet.".into();
    }
    let mut lines = vec![format!(
        "{} of {total} entities, most mentioned first:",
        list.len()
    )];
    for e in list {
        let others: Vec<&str> = e
            .aliases
            .iter()
            .map(String::as_str)
            .filter(|a| *a != e.name)
            .collect();
        let mut entry = format!(
            "- {} ({}, {})",
            e.name,
            e.entity_type,
            count(e.mention_count as usize, "mention", "mentions")
        );
        if let Some(relation) = &e.relation {
            entry.push_str(&format!(", the user's {relation}"));
        }
        if !others.is_empty() {
            entry.push_str(&format!("; also written {}", others.join(", ")));
        }
        lines.push(entry);
    }
    lines.join("\n")
}

/// Who the user is, one line per known part ("Name: Alex"), or a line saying nothing is.
pub fn identity(me: &mnemo_protocol::belief::Identity) -> String {
    let lines: Vec<String> = me
        .parts()
        .into_iter()
        .filter(|(_, list)| !list.is_empty())
        .map(|(label, list)| {
            let values: Vec<&str> = list.iter().map(|t| t.value.as_str()).collect();
            let mut label = label.to_string();
            label[..1].make_ascii_uppercase();
            format!("{label}: {}", values.join("; "))
        })
        .collect();
    if lines.is_empty() {
        "Nothing is known about the user yet.".to_string()
    } else {
        lines.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(content: &str, occurred: Option<&str>) -> Memory {
        serde_json::from_value(json!({
            "id": "m1", "lineage": "m1", "namespace": "default", "content": content,
            "kind": "episodic", "domain": null, "source": null, "session_id": null,
            "salience": 6.0, "strength": 1.0, "created_at": "2026-11-23T10:00:00Z",
            "occurred_at": occurred, "valid_from": "2026-11-23T10:00:00Z", "valid_to": null,
            "superseded_by": null, "tags": [], "metadata": {}, "content_hash": "h"
        }))
        .expect("memory")
    }

    #[test]
    fn a_line_has_the_day_it_speaks_of_and_the_id() {
        let m = memory("Maria moved\nto Porto", Some("2026-05-01"));
        assert_eq!(
            line(&m),
            "[2026-05-01] Maria moved to Porto (episodic, id m1)"
        );
        let m = memory("tea", None);
        assert!(line(&m).starts_with("[2026-11-23] tea"));
    }

    #[test]
    fn a_recall_with_the_hashed_embedder_says_so() {
        let found = |embedder: &str| SearchResult {
            hits: vec![],
            mode: Default::default(),
            embedder: embedder.into(),
            took_ms: 1.0,
            retrievers_asked: None,
        };
        assert_eq!(
            recalled("tea", &found("minilm")),
            "No memory matches \u{201c}tea\u{201d}."
        );
        assert!(recalled("tea", &found("hashed (degraded)")).contains("matches words"));
    }
}
