//! The memory subcommands: add, get, list, search, update, history, forget.

use std::path::Path;

use clap::{Args, Subcommand};
use mnemo_protocol::memory::{
    Add, AddParams, Filter, Forget, ForgetParams, Get, GetParams, History, HistoryParams, List,
    ListParams, MemoryKind, Search, SearchMode, SearchParams, Update, UpdateParams,
};
use mnemo_protocol::understanding::EmotionKind;

use crate::output::Output;
use crate::{connect, content_or_stdin};

#[derive(Subcommand, Debug)]
pub enum MemoryCommand {
    /// Remember something. Content from the argument, or stdin when absent or `-`.
    Add(AddArgs),
    /// Show one memory by id.
    Get { id: String },
    /// List memories, newest first.
    List {
        #[command(flatten)]
        filter: FilterArgs,
        /// Page size (1–1000).
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Continue after a previous page (its `next_cursor`).
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Search by meaning and words.
    Search {
        query: String,
        /// How many results.
        #[arg(short, long, default_value_t = 10)]
        k: usize,
        /// hybrid (default), vector or text.
        #[arg(long, default_value = "hybrid")]
        mode: SearchMode,
        /// Show how each score was made.
        #[arg(long)]
        explain: bool,
        /// Compare the query with every stored vector rather than asking the approximate
        /// index (slower on a large store; shows what the index misses).
        #[arg(long)]
        exact: bool,
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// Change a memory: the old version is kept in its history.
    Update {
        id: String,
        /// New content (`-` reads stdin).
        #[arg(long)]
        content: Option<String>,
        #[arg(long)]
        kind: Option<MemoryKind>,
        #[arg(long)]
        domain: Option<String>,
        #[arg(long)]
        occurred_at: Option<String>,
        /// Replaces all tags (repeat for several).
        #[arg(long = "tag")]
        tags: Option<Vec<String>>,
        #[arg(long)]
        salience: Option<f32>,
    },
    /// Every version of a memory, oldest first.
    History { id: String },
    /// Delete for real: every version of the memories named or matched.
    Forget {
        ids: Vec<String>,
        #[command(flatten)]
        filter: FilterArgs,
        /// Needed to forget by filter, which may match many memories.
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Args, Debug)]
pub struct AddArgs {
    content: Option<String>,
    /// episodic (default), semantic, procedural, preference, belief, identity, goal, summary.
    #[arg(long)]
    kind: Option<MemoryKind>,
    #[arg(long)]
    domain: Option<String>,
    #[arg(long)]
    source: Option<String>,
    #[arg(long)]
    session: Option<String>,
    /// When it happened (RFC 3339 or YYYY-MM-DD).
    #[arg(long)]
    occurred_at: Option<String>,
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// A JSON object.
    #[arg(long)]
    metadata: Option<String>,
    /// The directory the memory was made in (the current one when no DIR is given): mnemod
    /// links it to the project around it (the enclosing git repository or project marker).
    /// Stored as `cwd` in its metadata.
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = ".")]
    cwd: Option<std::path::PathBuf>,
    #[arg(long, short)]
    namespace: Option<String>,
    /// 0–10; scored from the text when absent.
    #[arg(long)]
    salience: Option<f32>,
}

#[derive(Args, Debug, Default)]
pub struct FilterArgs {
    /// Only memories of this namespace (all namespaces when not given).
    #[arg(long, short)]
    namespace: Option<String>,
    /// Only memories of this kind.
    #[arg(long)]
    kind: Option<MemoryKind>,
    /// Only memories of this domain (e.g. work, health).
    #[arg(long)]
    domain: Option<String>,
    /// Only memories recorded in this session (its id).
    #[arg(long)]
    session: Option<String>,
    /// Only memories from this source (as stored, e.g. `file:/home/me/notes/a.md`).
    #[arg(long)]
    source: Option<String>,
    /// Happened at or after this time.
    #[arg(long)]
    since: Option<String>,
    /// Happened before this time.
    #[arg(long)]
    until: Option<String>,
    /// See the memories as they were at this time.
    #[arg(long)]
    as_of: Option<String>,
    /// Only memories whose primary emotion is this (joy, trust, fear, surprise, sadness,
    /// disgust, anger, anticipation, neutral).
    #[arg(long)]
    emotion: Option<EmotionKind>,
    /// Only memories at least this pleasant (valence −1–1).
    #[arg(long, allow_negative_numbers = true)]
    min_valence: Option<f32>,
    /// Only memories at most this pleasant (valence −1–1).
    #[arg(long, allow_negative_numbers = true)]
    max_valence: Option<f32>,
    /// Only episodes of this action (edit, command, tool, task).
    #[arg(long)]
    action: Option<mnemo_protocol::agent::Action>,
    /// Only episodes with this outcome (success, failure, partial).
    #[arg(long)]
    outcome: Option<mnemo_protocol::agent::Outcome>,
}

impl FilterArgs {
    fn into_filter(self) -> Filter {
        Filter {
            namespace: self.namespace,
            kind: self.kind,
            domain: self.domain,
            session_id: self.session,
            source: self.source,
            since: self.since,
            until: self.until,
            as_of: self.as_of,
            emotion: self.emotion,
            min_valence: self.min_valence,
            max_valence: self.max_valence,
            action: self.action,
            outcome: self.outcome,
        }
    }
}

pub async fn run(cmd: MemoryCommand, socket: &Path, out: &Output) -> anyhow::Result<()> {
    match cmd {
        MemoryCommand::Add(a) => {
            let mut metadata = a
                .metadata
                .as_deref()
                .map(serde_json::from_str)
                .transpose()
                .map_err(|e| anyhow::anyhow!("--metadata is not valid JSON: {e}"))?;
            if let Some(dir) = a.cwd {
                metadata = Some(with_cwd(metadata, &dir)?);
            }
            let params = AddParams {
                content: content_or_stdin(a.content)?,
                kind: a.kind,
                domain: a.domain,
                source: a.source,
                session_id: a.session,
                occurred_at: a.occurred_at,
                tags: a.tags,
                metadata,
                namespace: a.namespace,
                salience: a.salience,
            };
            let m = connect(socket).await?.call::<Add>(&params).await?;
            out.value(&m, || m.id.clone());
        }
        MemoryCommand::Get { id } => {
            out.memory(
                &connect(socket)
                    .await?
                    .call::<Get>(&GetParams { id })
                    .await?,
            );
        }
        MemoryCommand::List {
            filter,
            limit,
            cursor,
        } => {
            let params = ListParams {
                filter: filter.into_filter(),
                limit: Some(limit),
                cursor,
            };
            let page = connect(socket).await?.call::<List>(&params).await?;
            out.memories(&page.memories, page.next_cursor.as_deref());
        }
        MemoryCommand::Search {
            query,
            k,
            mode,
            explain,
            exact,
            filter,
        } => {
            let params = SearchParams {
                query,
                k: Some(k),
                mode,
                filter: filter.into_filter(),
                explain,
                exact,
            };
            out.search(&connect(socket).await?.call::<Search>(&params).await?);
        }
        MemoryCommand::Update {
            id,
            content,
            kind,
            domain,
            occurred_at,
            tags,
            salience,
        } => {
            let content = match content {
                Some(c) => Some(content_or_stdin(Some(c))?),
                None => None,
            };
            let params = UpdateParams {
                id,
                content,
                kind,
                domain,
                occurred_at,
                tags,
                metadata: None,
                salience,
            };
            let m = connect(socket).await?.call::<Update>(&params).await?;
            out.value(&m, || format!("{} (replaces {})", m.id, params.id));
        }
        MemoryCommand::History { id } => {
            let h = connect(socket)
                .await?
                .call::<History>(&HistoryParams { id })
                .await?;
            out.value(&h, || {
                h.versions
                    .iter()
                    .map(|m| {
                        format!(
                            "{}  {} .. {}  {}",
                            m.id,
                            m.valid_from,
                            m.valid_to.as_deref().unwrap_or("now"),
                            m.content
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        MemoryCommand::Forget { ids, filter, yes } => {
            let filter = filter.into_filter();
            let filter = (!filter.is_empty()).then_some(filter);
            if filter.is_some() && !yes {
                anyhow::bail!(
                    "forgetting by filter deletes every match for good; add --yes to confirm"
                );
            }
            let r = connect(socket)
                .await?
                .call::<Forget>(&ForgetParams { ids, filter })
                .await?;
            out.value(&r, || format!("forgot {} rows (all versions)", r.deleted));
        }
    }
    Ok(())
}

/// `metadata` (a JSON object, or none) with `cwd` set to `dir`, made absolute.
fn with_cwd(
    metadata: Option<serde_json::Value>,
    dir: &std::path::Path,
) -> anyhow::Result<serde_json::Value> {
    if !dir.is_dir() {
        anyhow::bail!("--cwd {}: no such directory", dir.display());
    }
    let dir = std::path::absolute(dir)?.display().to_string();
    let mut metadata = metadata.unwrap_or_else(|| serde_json::json!({}));
    let Some(fields) = metadata.as_object_mut() else {
        anyhow::bail!("--metadata must be a JSON object to take --cwd too");
    };
    fields.insert("cwd".into(), dir.into());
    Ok(metadata)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_joins_the_metadata_as_an_absolute_path() {
        let dir = std::env::temp_dir();
        let given = Some(serde_json::json!({ "ticket": 7 }));
        let m = with_cwd(given, &dir).unwrap();
        assert_eq!(m["ticket"], 7);
        assert_eq!(
            m["cwd"],
            std::path::absolute(&dir).unwrap().display().to_string()
        );
        let here = with_cwd(None, std::path::Path::new(".")).unwrap();
        let cwd = std::env::current_dir().unwrap().display().to_string();
        assert_eq!(here["cwd"], cwd);
    }

    #[test]
    fn a_missing_directory_or_metadata_that_is_no_object_is_refused() {
        let e = with_cwd(None, std::path::Path::new("/no/such/dir")).unwrap_err();
        assert_eq!(e.to_string(), "--cwd /no/such/dir: no such directory");
        let e = with_cwd(Some(serde_json::json!([1])), &std::env::temp_dir()).unwrap_err();
        assert!(e.to_string().contains("JSON object"), "{e}");
    }
}
