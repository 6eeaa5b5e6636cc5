//! `mnemo entities` and `mnemo entity NAME`: who and what the memories mention.

use std::path::Path;

use clap::Args;
use mnemo_protocol::entity::{
    Entity, EntitySort, EntityType, Get, GetParams, GetResult, List, ListParams,
};

use crate::connect;
use crate::output::Output;

#[derive(Args, Debug)]
pub struct EntitiesArgs {
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// person, place, organization, project, event, concept or time.
    #[arg(long = "type")]
    entity_type: Option<EntityType>,
    /// Names starting with this (any case).
    #[arg(long)]
    prefix: Option<String>,
    /// mentions (most first), recent or name.
    #[arg(long, default_value = "mentions")]
    sort: EntitySort,
    /// Page size, 1–500.
    #[arg(long, default_value_t = 50)]
    limit: usize,
    /// `next_cursor` of the previous page.
    #[arg(long)]
    cursor: Option<String>,
}

#[derive(Args, Debug)]
pub struct EntityArgs {
    /// Its name or any form of it, in any case.
    name: String,
    #[arg(long, short = 'n')]
    namespace: Option<String>,
}

fn entity_line(e: &Entity) -> String {
    format!(
        "{:<24} {:<12} {:>5}×  last {}  {}",
        e.name,
        e.entity_type,
        e.mention_count,
        &e.last_seen[..e.last_seen.len().min(10)],
        e.namespace
    )
}

pub async fn list(a: EntitiesArgs, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let r = connect(socket)
        .await?
        .call::<List>(&ListParams {
            namespace: a.namespace,
            entity_type: a.entity_type,
            prefix: a.prefix,
            sort: a.sort,
            limit: Some(a.limit),
            cursor: a.cursor,
        })
        .await?;
    out.value(&r, || {
        let mut lines: Vec<String> = r.entities.iter().map(entity_line).collect();
        if lines.is_empty() {
            lines.push("(no entities)".into());
        }
        lines.push(format!("{} of {} entities", r.entities.len(), r.total));
        if let Some(c) = &r.next_cursor {
            lines.push(format!("(more: --cursor {c})"));
        }
        lines.join("\n")
    });
    Ok(())
}

pub async fn get(a: EntityArgs, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let r: GetResult = connect(socket)
        .await?
        .call::<Get>(&GetParams {
            name: a.name,
            namespace: a.namespace,
        })
        .await?;
    out.value(&r, || {
        let e = &r.entity;
        let mut lines = vec![
            format!("{} ({}) in {}", e.name, e.entity_type, e.namespace),
            format!("  aliases    {}", e.aliases.join(", ")),
            format!(
                "  mentioned  {}× from {} to {}, salience {:.1}",
                e.mention_count, e.first_seen, e.last_seen, e.salience
            ),
        ];
        if let Some(rel) = &e.relation {
            lines.push(format!("  relation   {rel}"));
        }
        lines.push("Mentioned in (newest first):".into());
        for m in &r.mentions {
            lines.push(format!(
                "  {}  {}  {}",
                m.memory_id,
                &m.at[..10.min(m.at.len())],
                m.preview
            ));
        }
        if !r.related.is_empty() {
            lines.push("Mentioned with:".into());
            for rel in &r.related {
                let edge = rel
                    .edge_weight
                    .map(|w| format!(", RELATES_TO {w:.2}"))
                    .unwrap_or_default();
                lines.push(format!(
                    "  {:<24} {:<12} {}× together ({:.2}{edge})",
                    rel.name, rel.entity_type, rel.together, rel.weight
                ));
            }
        }
        lines.join("\n")
    });
    Ok(())
}
