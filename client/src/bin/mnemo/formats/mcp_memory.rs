//! The MCP reference memory server's knowledge graph (`memory.jsonl`): one object per line,
//! an entity `{"type":"entity","name","entityType","observations":[…]}` or a relation
//! `{"type":"relation","from","to","relationType"}`. Each observation becomes a memory about
//! its entity, each relation a memory stating it; names keep their words ("John_Smith" reads
//! "John Smith") so mnemo's own entity reading finds them.

use mnemo_protocol::memory::{AddParams, MemoryKind};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Line {
    Entity {
        name: String,
        #[serde(rename = "entityType", default)]
        entity_type: Option<String>,
        #[serde(default)]
        observations: Vec<String>,
    },
    Relation {
        from: String,
        to: String,
        #[serde(rename = "relationType")]
        relation_type: String,
    },
}

fn words(name: &str) -> String {
    name.replace('_', " ").trim().to_string()
}

fn fact(content: String, tags: Vec<String>) -> AddParams {
    AddParams {
        content,
        kind: Some(MemoryKind::Semantic),
        source: Some("mcp-memory".into()),
        tags,
        ..Default::default()
    }
}

/// The memories of one line, or why it is not one of the graph's lines.
pub fn memories(line: &str) -> Result<Vec<AddParams>, String> {
    let parsed: Line = serde_json::from_str(line)
        .map_err(|e| format!("not an entity or relation of the MCP memory graph ({e})"))?;
    Ok(match parsed {
        Line::Entity {
            name,
            entity_type,
            observations,
        } => {
            let tags: Vec<String> = entity_type.into_iter().collect();
            observations
                .iter()
                .filter(|o| !o.trim().is_empty())
                .map(|o| fact(format!("{}: {}", words(&name), o.trim()), tags.clone()))
                .collect()
        }
        Line::Relation {
            from,
            to,
            relation_type,
        } => vec![fact(
            format!("{} {} {}", words(&from), words(&relation_type), words(&to)),
            vec!["relation".into()],
        )],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_and_relations_become_statements() {
        let entity = r#"{"type":"entity","name":"John_Smith","entityType":"person","observations":["Speaks fluent Spanish","  "]}"#;
        let items = memories(entity).unwrap();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].content, "John Smith: Speaks fluent Spanish");
        assert_eq!(items[0].tags, vec!["person"]);
        let relation =
            r#"{"type":"relation","from":"John_Smith","to":"Anthropic","relationType":"works_at"}"#;
        assert_eq!(
            memories(relation).unwrap()[0].content,
            "John Smith works at Anthropic"
        );
        assert!(memories(r#"{"type":"memory"}"#)
            .unwrap_err()
            .contains("MCP memory graph"));
    }
}
