//! `mnemo episode record`, `mnemo triggers`, `mnemo procedures` and `mnemo stats`: memory for
//! agents that act — what an action did, warnings before acting, what repetition taught.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use mnemo_protocol::agent::{
    Action, ActionState, Episode, GetProcedure, ListProcedures, ListStats, Outcome, Procedure,
    ProcedureGetParams, ProcedureKind, ProcedureListParams, RecordEpisode, RecordParams,
    StatCategory, StatsListParams, Triggers, TriggersParams, Warning,
};

use crate::connect;
use crate::output::Output;

#[derive(Subcommand, Debug)]
pub enum EpisodeCommand {
    /// Record what an action did, so later ones are warned: `mnemo episode record --action
    /// command --target "cargo test" --outcome failure --error "2 tests failed"`.
    Record(RecordArgs),
}

#[derive(Args, Debug)]
pub struct RecordArgs {
    /// edit, command, tool or task.
    #[arg(long)]
    action: Action,
    /// What it was about: a file (edit), the command line (command), the tool's name, the
    /// task. Repeat for several.
    #[arg(long = "target", required = true)]
    targets: Vec<String>,
    /// success, failure or partial.
    #[arg(long)]
    outcome: Outcome,
    /// What went wrong (`-` reads it from stdin).
    #[arg(long)]
    error: Option<String>,
    /// How long it took, in milliseconds.
    #[arg(long)]
    duration_ms: Option<u64>,
    /// Who acted [default: none; `user` for the person].
    #[arg(long)]
    actor: Option<String>,
    /// The working directory relative paths are read in [default: here].
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// The session it belongs to.
    #[arg(long)]
    session: Option<String>,
    #[arg(long)]
    branch: Option<String>,
    /// What the actor was trying to do.
    #[arg(long)]
    task: Option<String>,
    /// A note kept with it.
    #[arg(long)]
    note: Option<String>,
    #[arg(long)]
    namespace: Option<String>,
    /// When it happened (RFC 3339) [default: now].
    #[arg(long)]
    at: Option<String>,
}

#[derive(Args, Debug)]
pub struct TriggersArgs {
    /// A file about to be edited (repeat for several).
    #[arg(long = "file")]
    files: Vec<String>,
    /// A command line about to run.
    #[arg(long)]
    command: Option<String>,
    /// A tool about to be called.
    #[arg(long)]
    tool: Option<String>,
    /// The task, in words.
    #[arg(long)]
    task: Option<String>,
    /// Where it runs [default: here].
    #[arg(long)]
    cwd: Option<PathBuf>,
    #[arg(long)]
    namespace: Option<String>,
    /// Warnings at most, 1–50.
    #[arg(long, default_value_t = 10)]
    limit: usize,
    /// Exit with status 3 when there is a warning (for hooks that should stop and ask).
    #[arg(long)]
    fail_on_warning: bool,
}

#[derive(Args, Debug)]
pub struct ProceduresArgs {
    /// One procedure, by id, with its steps and the episodes it was learned from.
    id: Option<String>,
    /// success (what worked) or failure (what went wrong repeatedly).
    #[arg(long)]
    kind: Option<ProcedureKind>,
    #[arg(long)]
    namespace: Option<String>,
    /// Only procedures at least this confident (0–1).
    #[arg(long)]
    min_confidence: Option<f32>,
}

#[derive(Args, Debug)]
pub struct StatsArgs {
    /// active_hours, sessions, tools, commands, projects, durations or topics.
    #[arg(long)]
    category: Option<StatCategory>,
    #[arg(long)]
    namespace: Option<String>,
}

/// A path as the daemon wants it: absolute.
fn absolute(dir: Option<PathBuf>) -> anyhow::Result<String> {
    let dir = match dir {
        Some(d) => std::path::absolute(d)?,
        None => std::env::current_dir()?,
    };
    Ok(dir.display().to_string())
}

pub async fn episode(cmd: EpisodeCommand, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let EpisodeCommand::Record(a) = cmd;
    let error = match a.error.as_deref() {
        Some("-") => Some(crate::content_or_stdin(None)?),
        _ => a.error,
    };
    let params = RecordParams {
        action: a.action,
        targets: a.targets,
        outcome: a.outcome,
        error,
        duration_ms: a.duration_ms,
        actor: a.actor,
        state: ActionState {
            cwd: Some(absolute(a.cwd)?),
            session_id: a.session,
            branch: a.branch,
            task: a.task,
        },
        namespace: a.namespace,
        at: a.at,
        note: a.note,
    };
    let r = connect(socket)
        .await?
        .call::<RecordEpisode>(&params)
        .await?;
    out.value(&r, || episode_line(&r.episode));
    Ok(())
}

fn episode_line(e: &Episode) -> String {
    format!("{}  {}", e.id, e.content)
}

pub async fn triggers(a: TriggersArgs, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let params = TriggersParams {
        files: a.files,
        command: a.command,
        tool: a.tool,
        state: ActionState {
            cwd: Some(absolute(a.cwd)?),
            task: a.task,
            ..Default::default()
        },
        namespace: a.namespace,
        limit: Some(a.limit),
    };
    let r = connect(socket).await?.call::<Triggers>(&params).await?;
    out.value(&r, || {
        if r.warnings.is_empty() {
            return format!(
                "nothing to warn about ({} episodes known)",
                r.episodes_known
            );
        }
        r.warnings
            .iter()
            .map(warning_text)
            .collect::<Vec<_>>()
            .join("\n")
    });
    if a.fail_on_warning && !r.warnings.is_empty() {
        std::process::exit(3);
    }
    Ok(())
}

pub fn warning_text(w: &Warning) -> String {
    let mut lines = vec![format!("[{} {:.2}] {}", w.kind, w.confidence, w.text)];
    if let Some(fix) = &w.fixed_by {
        lines.push(format!("    {fix}"));
    }
    lines.push(format!(
        "    why: {}; episodes {}",
        w.reason,
        w.episodes.join(", ")
    ));
    lines.join("\n")
}

fn procedure_text(p: &Procedure, full: bool) -> String {
    let mut lines = vec![format!(
        "{}  [{} {:.2}] {} ({} ok, {} failed, last {})",
        p.id,
        p.kind,
        p.confidence,
        p.name,
        p.success_count,
        p.failure_count,
        p.last_used.get(..10).unwrap_or_default()
    )];
    if full {
        for (i, s) in p.steps.iter().enumerate() {
            lines.push(format!("  {}. {} {}", i + 1, s.action, s.target));
        }
        lines.push(format!("  learned from {}", p.learned_from.join(", ")));
    }
    lines.join("\n")
}

pub async fn procedures(a: ProceduresArgs, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let mut client = connect(socket).await?;
    if let Some(id) = a.id {
        let r = client
            .call::<GetProcedure>(&ProcedureGetParams { id })
            .await?;
        out.value(&r, || procedure_text(&r.procedure, true));
        return Ok(());
    }
    let r = client
        .call::<ListProcedures>(&ProcedureListParams {
            namespace: a.namespace,
            kind: a.kind,
            min_confidence: a.min_confidence,
        })
        .await?;
    out.value(&r, || match &r.note {
        Some(note) => note.clone(),
        None => r
            .procedures
            .iter()
            .map(|p| procedure_text(p, false))
            .collect::<Vec<_>>()
            .join("\n"),
    });
    Ok(())
}

pub async fn stats(a: StatsArgs, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let r = connect(socket)
        .await?
        .call::<ListStats>(&StatsListParams {
            namespace: a.namespace,
            category: a.category,
        })
        .await?;
    out.value(&r, || {
        if let Some(note) = &r.note {
            return note.clone();
        }
        let mut lines = Vec::new();
        let mut last = None;
        for s in &r.stats {
            if last != Some((&s.namespace, s.category)) {
                lines.push(format!("{} ({})", s.category, s.namespace));
                last = Some((&s.namespace, s.category));
            }
            lines.push(format!(
                "  {:<28} {:>8} {:<8} n={}{}",
                s.metric,
                s.value,
                s.unit,
                s.sample_size,
                s.detail
                    .as_deref()
                    .map(|d| format!("  {d}"))
                    .unwrap_or_default()
            ));
        }
        lines.join("\n")
    });
    Ok(())
}
