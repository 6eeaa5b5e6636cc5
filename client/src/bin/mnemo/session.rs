//! `mnemo session start|say|end|show|list`: conversations whose messages are memories, and
//! `mnemo context`: the package an AI starts from.

use std::path::Path;

use clap::{Args, Subcommand};
use mnemo_protocol::context::{Build, BuildParams, Format, Package};
use mnemo_protocol::session::{
    End, EndParams, Get, GetParams, List, ListParams, MessageParams, Role, SendMessage, Session,
    SessionKind, SessionSummary, Start, StartParams,
};
use mnemo_protocol::summary::{self, SummaryCategory};

use crate::output::Output;
use crate::{connect, content_or_stdin};

#[derive(Subcommand, Debug)]
pub enum SessionCommand {
    /// Open a session; prints its id (for `say`, `end` and `mnemo context --session`).
    Start {
        /// chat, task or coding.
        #[arg(long, default_value = "chat")]
        kind: SessionKind,
        /// The tool that opens it.
        #[arg(long, default_value = "mnemo")]
        source: String,
        /// Where its messages are stored [default: default].
        #[arg(long)]
        namespace: Option<String>,
        /// A project id (`mnemo projects`).
        #[arg(long)]
        project: Option<String>,
        /// The working directory whose project the session works in (`.` for here).
        #[arg(long)]
        cwd: Option<std::path::PathBuf>,
        /// The context profile: general, work, personal, creative, or one from the config.
        #[arg(long)]
        profile: Option<String>,
    },
    /// Add a message to an active session (the text, or stdin when absent or `-`).
    Say {
        session: String,
        text: Option<String>,
        /// user, assistant or tool.
        #[arg(long, default_value = "user")]
        role: Role,
    },
    /// End a session: its summary is written and consolidation of it queued.
    End { session: String },
    /// A session, its last messages and its (running) summary.
    Show {
        session: String,
        /// Messages to show, 0–1000.
        #[arg(long, default_value_t = 20)]
        messages: usize,
    },
    /// Sessions, most recently started first.
    List {
        /// Only active ones.
        #[arg(long, conflicts_with = "ended")]
        active: bool,
        /// Only ended ones.
        #[arg(long)]
        ended: bool,
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[arg(long)]
        cursor: Option<String>,
    },
}

fn session_line(s: &Session) -> String {
    let state = match &s.ended_at {
        None => "active".to_string(),
        Some(at) => format!("ended {}", &at[..at.len().min(16)]),
    };
    format!(
        "{}  {:<6} {:>4} msgs  started {}  {state}{}",
        s.id,
        s.kind,
        s.message_count,
        &s.started_at[..s.started_at.len().min(16)],
        s.project_id
            .as_deref()
            .map(|p| format!("  {p}"))
            .unwrap_or_default()
    )
}

fn summary_lines(s: &SessionSummary, lines: &mut Vec<String>) {
    lines.push(format!("Summary ({}):", s.written_by));
    lines.extend(s.text.lines().map(|l| format!("  {l}")));
    if !s.emotional_arc.is_empty() {
        lines.push(format!("  arc: {}", s.emotional_arc.join(" → ")));
    }
}

pub async fn run(cmd: SessionCommand, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let mut client = connect(socket).await?;
    match cmd {
        SessionCommand::Start {
            kind,
            source,
            namespace,
            project,
            cwd,
            profile,
        } => {
            let cwd = cwd
                .map(std::path::absolute)
                .transpose()?
                .map(|p| p.display().to_string());
            let r = client
                .call::<Start>(&StartParams {
                    kind: Some(kind),
                    source: Some(source),
                    namespace,
                    project,
                    cwd,
                    profile,
                })
                .await?;
            out.value(&r, || r.session.id.clone());
        }
        SessionCommand::Say {
            session,
            text,
            role,
        } => {
            let r = client
                .call::<SendMessage>(&MessageParams {
                    session_id: session,
                    role,
                    content: content_or_stdin(text)?,
                    ..Default::default()
                })
                .await?;
            out.value(&r, || format!("turn {}  {}", r.turn, r.memory_id));
        }
        SessionCommand::End { session } => {
            let r = client
                .call::<End>(&EndParams {
                    session_id: session,
                })
                .await?;
            out.value(&r, || {
                let mut lines = vec![session_line(&r.session)];
                if let Some(s) = &r.session.summary {
                    summary_lines(s, &mut lines);
                }
                lines.join("\n")
            });
        }
        SessionCommand::Show { session, messages } => {
            let r = client
                .call::<Get>(&GetParams {
                    id: session,
                    messages: Some(messages),
                })
                .await?;
            out.value(&r, || {
                let mut lines = vec![session_line(&r.session)];
                for m in &r.messages {
                    lines.push(format!("  {:>3} {:<9} {}", m.turn, m.role, m.content));
                }
                if let Some(s) = &r.running_summary {
                    summary_lines(s, &mut lines);
                }
                lines.join("\n")
            });
        }
        SessionCommand::List {
            active,
            ended,
            limit,
            cursor,
        } => {
            let r = client
                .call::<List>(&ListParams {
                    active: (active || ended).then_some(active),
                    limit: Some(limit),
                    cursor,
                    ..Default::default()
                })
                .await?;
            out.value(&r, || {
                let mut lines: Vec<String> = r.sessions.iter().map(session_line).collect();
                if lines.is_empty() {
                    lines.push("(no sessions: `mnemo session start` opens one)".into());
                }
                lines.push(format!("{} of {} sessions", r.sessions.len(), r.total));
                if let Some(c) = &r.next_cursor {
                    lines.push(format!("(more: --cursor {c})"));
                }
                lines.join("\n")
            });
        }
    }
    Ok(())
}

#[derive(Args, Debug)]
pub struct ContextArgs {
    /// What the conversation or task is about (retrieval uses it).
    query: Option<String>,
    /// Tokens; default: the profile's, else the adaptive budget (`mnemo system budget`).
    #[arg(long)]
    budget: Option<u32>,
    /// general, work, personal, creative, or one from the config.
    #[arg(long)]
    profile: Option<String>,
    /// A session: its recent messages and running summary join the package.
    #[arg(long)]
    session: Option<String>,
    /// Default: the session's, else `default`.
    #[arg(long)]
    namespace: Option<String>,
    /// markdown or json (the package's text; --json prints the whole answer).
    #[arg(long)]
    format: Option<Format>,
    /// A file about to be edited: warnings from its history join the package (repeatable).
    #[arg(long = "file")]
    files: Vec<String>,
    /// A command about to run, for the same.
    #[arg(long)]
    command: Option<String>,
    /// Say why each item is in, and list what was left out.
    #[arg(long)]
    explain: bool,
}

pub async fn context(a: ContextArgs, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let cwd = std::env::current_dir()
        .ok()
        .map(|d| d.display().to_string());
    let p = connect(socket)
        .await?
        .call::<Build>(&BuildParams {
            query: a.query,
            session_id: a.session,
            profile: a.profile,
            budget: a.budget,
            format: a.format,
            namespace: a.namespace,
            cwd,
            files: a.files,
            command: a.command,
            explain: a.explain,
        })
        .await?;
    out.value(&p, || package_text(&p, a.explain));
    Ok(())
}

fn package_text(p: &Package, explain: bool) -> String {
    let mut lines = vec![p.text.trim_end().to_string(), String::new()];
    lines.push(format!(
        "── {} of {} tokens ({}, profile {}; budget from {})",
        p.tokens, p.budget, p.tokenizer, p.profile, p.budget_source
    ));
    for t in &p.tiers {
        let empty: Vec<String> = t
            .sources
            .iter()
            .filter_map(|s| s.note.as_ref().map(|n| format!("{}: {n}", s.source)))
            .collect();
        lines.push(format!(
            "   {:<9} {:>5} / {:<5} tokens  {:>3} items{}",
            t.tier,
            t.tokens,
            t.allotted,
            t.items.len(),
            if empty.is_empty() {
                String::new()
            } else {
                format!("  ({})", empty.join("; "))
            }
        ));
        if explain {
            for i in &t.items {
                lines.push(format!(
                    "     {:>4}  {:.2}  {}",
                    i.tokens,
                    i.score,
                    i.why.as_deref().unwrap_or_default()
                ));
            }
        }
    }
    if p.dropped_count > 0 {
        lines.push(format!("   {} left out", p.dropped_count));
        if explain {
            for d in &p.dropped {
                lines.push(format!(
                    "     {:<9} {:>4}  {:.2}  {}  — {}",
                    d.tier,
                    d.tokens,
                    d.score,
                    d.preview.as_deref().unwrap_or_default(),
                    d.reason
                ));
            }
        }
    }
    lines.join("\n")
}

#[derive(Args, Debug)]
pub struct SummariesArgs {
    /// Only this namespace's (default: every namespace's).
    #[arg(long)]
    namespace: Option<String>,
    /// commitments, people, projects, tensions, mood, narrative, goals or beliefs.
    #[arg(long)]
    category: Option<SummaryCategory>,
}

pub async fn summaries(a: SummariesArgs, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let r = connect(socket)
        .await?
        .call::<summary::List>(&summary::ListParams {
            namespace: a.namespace,
            category: a.category,
        })
        .await?;
    out.value(&r, || {
        let mut lines = Vec::new();
        for s in &r.summaries {
            lines.push(format!(
                "{} [{}] ({} observations, {}, {})",
                s.category, s.namespace, s.observation_count, s.written_by, s.updated_at
            ));
            lines.extend(s.content.lines().map(|l| format!("  {l}")));
        }
        if let Some(note) = &r.note {
            lines.push(format!("({note})"));
        }
        lines.join("\n")
    });
    Ok(())
}
