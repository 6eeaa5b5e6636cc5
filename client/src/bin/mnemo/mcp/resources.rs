//! The resources `mnemo mcp` offers: what a client may read into a conversation without a
//! tool call — the recent memories, the entities, who the user is, what is going on lately
//! (the living summaries), one memory with its history.

use mnemo_protocol::belief::{IdentityGet, IdentityParams, PreferenceList, PreferenceListParams};
use mnemo_protocol::entity;
use mnemo_protocol::memory::{History, HistoryParams, List, ListParams};
use mnemo_protocol::{session, summary};
use rmcp::model::{ErrorData, Resource, ResourceContents, ResourceTemplate};

use super::link::Link;
use super::render;

pub const RECENT: &str = "mnemo://memories/recent";
pub const ENTITIES: &str = "mnemo://entities";
pub const IDENTITY: &str = "mnemo://identity";
pub const LATELY: &str = "mnemo://summaries";
pub const LAST_SESSION: &str = "mnemo://sessions/last";
const MEMORY_PREFIX: &str = "mnemo://memory/";
/// Memories the recent resource holds.
const RECENT_COUNT: usize = 20;
/// Entities the entities resource holds.
const ENTITY_COUNT: usize = 50;
/// Preferences the identity resource holds.
const PREFERENCE_COUNT: usize = 30;

pub fn list() -> Vec<Resource> {
    vec![
        Resource::new(RECENT, "recent memories")
            .with_title("Recent memories")
            .with_description("The 20 memories added last, newest first, with day and id.")
            .with_mime_type("text/markdown"),
        Resource::new(ENTITIES, "entities")
            .with_title("People, places and things")
            .with_description("The 50 entities the memories mention most, with their aliases.")
            .with_mime_type("text/markdown"),
        Resource::new(IDENTITY, "identity")
            .with_title("Who the user is")
            .with_description(
                "Name, roles, places, languages and people as the memories tell, then the \
                 user's preferences and standing rules, strongest first.",
            )
            .with_mime_type("text/markdown"),
        Resource::new(LATELY, "summaries")
            .with_title("What is going on lately")
            .with_description(
                "The living summaries: commitments, people, projects, tensions, mood, \
                 narrative, goals and beliefs, as consolidation last wrote them.",
            )
            .with_mime_type("text/markdown"),
        Resource::new(LAST_SESSION, "last session")
            .with_title("The last session")
            .with_description(
                "The summary of the most recent session that ended: what it was about, who \
                 it named, how it felt, what the user took on.",
            )
            .with_mime_type("text/markdown"),
    ]
}

pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(format!("{MEMORY_PREFIX}{{id}}"), "memory")
            .with_title("One memory")
            .with_description("A memory by id, with every earlier version of it.")
            .with_mime_type("text/markdown"),
    ]
}

fn markdown(uri: &str, text: String) -> ResourceContents {
    ResourceContents::TextResourceContents {
        uri: uri.into(),
        mime_type: Some("text/markdown".into()),
        text,
        meta: None,
    }
}

/// The text of the resource at `uri`.
pub async fn read(link: &Link, uri: &str) -> Result<ResourceContents, ErrorData> {
    let unavailable = |e: String| ErrorData::internal_error(e, None);
    let text = if uri == RECENT {
        let params = ListParams {
            limit: Some(RECENT_COUNT),
            ..Default::default()
        };
        let page = link.call::<List>(&params).await.map_err(unavailable)?;
        format!("# Recent memories\n\n{}", render::listing(&page.memories))
    } else if uri == ENTITIES {
        let params = entity::ListParams {
            limit: Some(ENTITY_COUNT),
            ..Default::default()
        };
        let page = link
            .call::<entity::List>(&params)
            .await
            .map_err(unavailable)?;
        format!(
            "# People, places and things\n\n{}",
            render::entities(&page.entities, page.total)
        )
    } else if uri == IDENTITY {
        let me = link
            .call::<IdentityGet>(&IdentityParams::default())
            .await
            .map_err(unavailable)?;
        let prefs = link
            .call::<PreferenceList>(&PreferenceListParams {
                limit: Some(PREFERENCE_COUNT),
                ..Default::default()
            })
            .await
            .map_err(unavailable)?;
        let mut text = format!("# Who the user is\n\n{}\n", render::identity(&me));
        if !prefs.beliefs.is_empty() {
            text.push_str("\n## Preferences and rules\n\n");
            for b in &prefs.beliefs {
                text.push_str(&format!(
                    "- {} ({}, {:.2})\n",
                    b.statement, b.source, b.confidence
                ));
            }
        }
        text
    } else if uri == LATELY {
        let r = link
            .call::<summary::List>(&summary::ListParams::default())
            .await
            .map_err(unavailable)?;
        let mut text = "# What is going on lately\n".to_string();
        for s in &r.summaries {
            text.push_str(&format!(
                "\n## {} ({})\n\n{}\n",
                s.category, s.namespace, s.content
            ));
        }
        if let Some(note) = r.note {
            text.push_str(&format!("\n{note}\n"));
        }
        text
    } else if uri == LAST_SESSION {
        let page = link
            .call::<session::List>(&session::ListParams {
                active: Some(false),
                limit: Some(1),
                ..Default::default()
            })
            .await
            .map_err(unavailable)?;
        match page.sessions.first() {
            Some(s) => {
                let mut text = format!(
                    "# The last session\n\n{} session, {} – {}, {} messages\n",
                    s.kind,
                    s.started_at,
                    s.ended_at.as_deref().unwrap_or_default(),
                    s.message_count
                );
                if let Some(summary) = &s.summary {
                    text.push_str(&format!("\n{}\n", summary.text));
                }
                text
            }
            None => "# The last session\n\nNo session has ended yet.\n".into(),
        }
    } else if let Some(id) = uri.strip_prefix(MEMORY_PREFIX).filter(|id| !id.is_empty()) {
        let params = HistoryParams { id: id.into() };
        let history = link
            .call::<History>(&params)
            .await
            .map_err(|e| ErrorData::resource_not_found(e, None))?;
        let mut lines = vec![format!("# Memory {id}\n")];
        for version in &history.versions {
            let label = if version.valid_to.is_none() {
                "current"
            } else {
                "earlier"
            };
            lines.push(format!("- {label}: {}", render::line(version)));
        }
        lines.join("\n")
    } else {
        return Err(ErrorData::resource_not_found(
            format!(
                "no resource at {uri}; mnemo serves {RECENT}, {ENTITIES}, {IDENTITY}, {LATELY}, {LAST_SESSION} and {MEMORY_PREFIX}<id>"
            ),
            None,
        ));
    };
    Ok(markdown(uri, text))
}
