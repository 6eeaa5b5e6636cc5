//! `mnemo projects` and `mnemo project ID|PATH`: the projects memories point into.

use std::path::Path;

use clap::Args;
use mnemo_protocol::project::{Get, GetParams, List, ListParams, Project};

use crate::connect;
use crate::output::Output;

#[derive(Args, Debug)]
pub struct ProjectsArgs {
    /// Page size, 1–500.
    #[arg(long, default_value_t = 50)]
    limit: usize,
    /// `next_cursor` of the previous page.
    #[arg(long)]
    cursor: Option<String>,
}

#[derive(Args, Debug)]
pub struct ProjectArgs {
    /// The project's id (`proj-…`), or a path inside it (`.` for here).
    id_or_path: String,
}

fn languages(p: &Project) -> String {
    p.languages
        .iter()
        .take(3)
        .map(|l| format!("{} {}", l.language, l.files))
        .collect::<Vec<_>>()
        .join(", ")
}

fn project_line(p: &Project) -> String {
    format!(
        "{:<22} {:<20} {:>4}×  last {}  {}  {}",
        p.id,
        p.name,
        p.interaction_count,
        &p.last_active[..p.last_active.len().min(10)],
        languages(p),
        p.path
    )
}

pub async fn list(a: ProjectsArgs, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let r = connect(socket)
        .await?
        .call::<List>(&ListParams {
            limit: Some(a.limit),
            cursor: a.cursor,
        })
        .await?;
    out.value(&r, || {
        let mut lines: Vec<String> = r.projects.iter().map(project_line).collect();
        if lines.is_empty() {
            lines.push(
                "(no projects: memories with a `cwd` or file path inside a repository make them)"
                    .into(),
            );
        }
        lines.push(format!("{} of {} projects", r.projects.len(), r.total));
        if let Some(c) = &r.next_cursor {
            lines.push(format!("(more: --cursor {c})"));
        }
        lines.join("\n")
    });
    Ok(())
}

pub async fn get(a: ProjectArgs, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let params = if a.id_or_path.starts_with("proj-") {
        GetParams {
            id: Some(a.id_or_path),
            path: None,
        }
    } else {
        let path = std::path::absolute(&a.id_or_path)?;
        GetParams {
            id: None,
            path: Some(path.display().to_string()),
        }
    };
    let r = connect(socket).await?.call::<Get>(&params).await?;
    out.value(&r, || {
        let p = &r.project;
        let mut lines = vec![format!("{} ({})  {}", p.name, p.id, p.path)];
        if let Some(d) = &p.description {
            lines.push(format!("  {d}"));
        }
        lines.push(format!("  languages   {}", languages(p)));
        if !p.frameworks.is_empty() {
            lines.push(format!("  frameworks  {}", p.frameworks.join(", ")));
        }
        if let Some(b) = &p.build_system {
            lines.push(format!("  build       {b}"));
        }
        if let Some(u) = &p.repo_url {
            lines.push(format!("  remote      {u}"));
        }
        lines.push(format!(
            "  {} memories from {} to {} (found by {})",
            p.interaction_count, p.first_seen, p.last_active, p.detection_source
        ));
        if !r.recent.is_empty() {
            lines.push("Recent memories:".into());
            for m in &r.recent {
                lines.push(format!(
                    "  {}  {}  {}",
                    m.memory_id,
                    &m.at[..10.min(m.at.len())],
                    m.preview
                ));
            }
        }
        if !r.beliefs.is_empty() {
            lines.push("Beliefs:".into());
            for b in &r.beliefs {
                lines.push(format!("  {} ({:.2})", b.statement, b.confidence));
            }
        }
        lines.join("\n")
    });
    Ok(())
}
