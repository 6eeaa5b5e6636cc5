//! `mnemo beliefs`, `mnemo belief ID`, `mnemo prefs [set|forget]` and `mnemo whoami`: what the
//! memories say about the person, and the preferences they set.

use std::path::Path;

use clap::{Args, Subcommand};
use mnemo_protocol::belief::{
    Belief, BeliefSource, BeliefType, Get, GetParams, IdentityGet, IdentityParams, List,
    ListParams, ListResult, PreferenceForget, PreferenceForgetParams, PreferenceList,
    PreferenceListParams, PreferenceSet, PreferenceSetParams, Trait,
};

use crate::connect;
use crate::output::Output;

#[derive(Args, Debug)]
pub struct BeliefsArgs {
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// fact, preference, constraint, goal, behavior, value, rule or identity.
    #[arg(long = "type")]
    belief_type: Option<BeliefType>,
    /// `user` (the person) or a name, in any case.
    #[arg(long)]
    subject: Option<String>,
    #[arg(long)]
    domain: Option<String>,
    /// explicit, extracted or inferred.
    #[arg(long)]
    source: Option<BeliefSource>,
    /// Superseded beliefs too.
    #[arg(long)]
    all: bool,
    /// The beliefs that held at this time (RFC 3339, e.g. 2026-05-01T00:00:00Z).
    #[arg(long)]
    as_of: Option<String>,
    /// Page size, 1–500.
    #[arg(long, default_value_t = 50)]
    limit: usize,
    /// `next_cursor` of the previous page.
    #[arg(long)]
    cursor: Option<String>,
}

#[derive(Args, Debug)]
pub struct BeliefArgs {
    /// The belief's id (`mnemo beliefs` shows them).
    id: String,
}

#[derive(Args, Debug)]
pub struct PrefsArgs {
    #[command(subcommand)]
    action: Option<PrefsAction>,
    #[arg(long, short = 'n', global = true)]
    namespace: Option<String>,
    /// Only this domain (coding, food, writing, …).
    #[arg(long, global = true)]
    domain: Option<String>,
    /// Superseded preferences too.
    #[arg(long)]
    all: bool,
}

#[derive(Subcommand, Debug)]
enum PrefsAction {
    /// Record a preference: `mnemo prefs set coding.indentation tabs`. It replaces any
    /// preference of the same key, and one read from a memory can no longer override it.
    Set {
        /// DOMAIN.KEY, e.g. `coding.indentation`, `food.tea`, `writing.emojis`.
        key: String,
        /// The choice: `tabs`, `dislike`, `never`.
        value: String,
    },
    /// Forget a preference by id, or every version of DOMAIN.KEY.
    Forget { id_or_key: String },
}

#[derive(Args, Debug)]
pub struct WhoamiArgs {
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// Someone else's identity, by name.
    #[arg(long)]
    subject: Option<String>,
}

fn date(t: &str) -> &str {
    &t[..t.len().min(10)]
}

fn belief_line(b: &Belief) -> String {
    let state = match &b.valid_to {
        Some(end) => format!("  (until {})", date(end)),
        None if !b.contradicts.is_empty() => "  (contradicted)".into(),
        None => String::new(),
    };
    format!(
        "{:<11} {:<9} {:.2} ×{:<3} {}{state}  [{}]",
        b.belief_type.as_str(),
        b.source.as_str(),
        b.confidence,
        b.evidence_count,
        b.statement,
        b.id
    )
}

fn page(r: &ListResult, what: &str) -> String {
    let mut lines: Vec<String> = r.beliefs.iter().map(belief_line).collect();
    if lines.is_empty() {
        lines.push(format!("(no {what})"));
    }
    lines.push(format!("{} of {} {what}", r.beliefs.len(), r.total));
    if let Some(c) = &r.next_cursor {
        lines.push(format!("(more: --cursor {c})"));
    }
    lines.join("\n")
}

pub async fn beliefs(a: BeliefsArgs, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let r = connect(socket)
        .await?
        .call::<List>(&ListParams {
            namespace: a.namespace,
            belief_type: a.belief_type,
            subject: a.subject,
            domain: a.domain,
            source: a.source,
            all: a.all,
            as_of: a.as_of,
            limit: Some(a.limit),
            cursor: a.cursor,
        })
        .await?;
    out.value(&r, || page(&r, "beliefs"));
    Ok(())
}

pub async fn belief(a: BeliefArgs, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let r = connect(socket)
        .await?
        .call::<Get>(&GetParams { id: a.id })
        .await?;
    out.value(&r, || {
        let b = &r.belief;
        let mut lines = vec![
            b.statement.clone(),
            format!(
                "  {} {} · {}{} · confidence {:.2} from {} memor{}",
                b.belief_type,
                b.domain.as_deref().unwrap_or(""),
                b.source,
                b.read_by
                    .as_deref()
                    .map(|r| format!(" (read by {r})"))
                    .unwrap_or_default(),
                b.confidence,
                b.evidence_count,
                if b.evidence_count == 1 { "y" } else { "ies" }
            ),
            format!(
                "  held from {}{}",
                b.valid_from,
                b.valid_to
                    .as_deref()
                    .map(|t| format!(" to {t}"))
                    .unwrap_or_default()
            ),
        ];
        if !r.evidence.is_empty() {
            lines.push("Evidence (newest first):".into());
            for e in &r.evidence {
                lines.push(format!("  {}  {}  {}", e.memory_id, date(&e.at), e.preview));
            }
        }
        if r.history.len() > 1 {
            lines.push("History (oldest first):".into());
            lines.extend(r.history.iter().map(|h| format!("  {}", belief_line(h))));
        }
        lines.join("\n")
    });
    Ok(())
}

/// `coding.indentation` → ("coding", "indentation").
fn domain_key(s: &str) -> anyhow::Result<(String, String)> {
    match s.split_once('.') {
        Some((d, k)) if !d.trim().is_empty() && !k.trim().is_empty() => {
            Ok((d.trim().to_string(), k.trim().to_string()))
        }
        _ => anyhow::bail!(
            "`{s}` names no domain: write DOMAIN.KEY, e.g. `coding.indentation` or `food.tea`"
        ),
    }
}

pub async fn prefs(a: PrefsArgs, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let mut client = connect(socket).await?;
    match a.action {
        None => {
            let r = client
                .call::<PreferenceList>(&PreferenceListParams {
                    namespace: a.namespace,
                    domain: a.domain,
                    all: a.all,
                    ..Default::default()
                })
                .await?;
            out.value(&r, || page(&r, "preferences"));
        }
        Some(PrefsAction::Set { key, value }) => {
            let (domain, key) = domain_key(&key)?;
            let r = client
                .call::<PreferenceSet>(&PreferenceSetParams {
                    domain,
                    key,
                    value,
                    namespace: a.namespace,
                })
                .await?;
            out.value(&r, || {
                let mut s = format!("set: {}  [{}]", r.preference.statement, r.preference.id);
                if !r.superseded.is_empty() {
                    s.push_str(&format!("\nreplaces {}", r.superseded.join(", ")));
                }
                s
            });
        }
        Some(PrefsAction::Forget { id_or_key }) => {
            let params = if id_or_key.contains('.') {
                let (domain, key) = domain_key(&id_or_key)?;
                PreferenceForgetParams {
                    domain: Some(domain),
                    key: Some(key),
                    namespace: a.namespace,
                    ..Default::default()
                }
            } else {
                PreferenceForgetParams {
                    id: Some(id_or_key),
                    ..Default::default()
                }
            };
            let r = client.call::<PreferenceForget>(&params).await?;
            out.value(&r, || {
                format!("forgot {} preference version(s)", r.forgotten)
            });
        }
    }
    Ok(())
}

fn traits(label: &str, list: &[Trait]) -> Option<String> {
    (!list.is_empty()).then(|| {
        let items: Vec<String> = list
            .iter()
            .map(|t| format!("{} ({:.2}, {})", t.value, t.confidence, t.source))
            .collect();
        format!("{label:<11} {}", items.join("; "))
    })
}

pub async fn whoami(a: WhoamiArgs, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let r = connect(socket)
        .await?
        .call::<IdentityGet>(&IdentityParams {
            namespace: a.namespace,
            subject: a.subject,
        })
        .await?;
    out.value(&r, || {
        let mut lines: Vec<String> = r
            .parts()
            .into_iter()
            .filter_map(|(label, list)| traits(label, list))
            .collect();
        if !r.projects.is_empty() {
            let projects: Vec<String> = r
                .projects
                .iter()
                .map(|p| {
                    format!(
                        "{} (active {}, {} memories)",
                        p.name,
                        date(&p.last_active),
                        p.interaction_count
                    )
                })
                .collect();
            lines.push(format!("projects: {}", projects.join("; ")));
        }
        if lines.is_empty() {
            format!(
                "nothing known of {} in `{}` yet: say it (\"my name is …\", \"I live in …\") with `mnemo add`",
                r.subject, r.namespace
            )
        } else {
            lines.join("\n")
        }
    });
    Ok(())
}
