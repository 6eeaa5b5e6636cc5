//! How results look: JSON for scripts, short readable text for people.

use std::time::Duration;

pub use mnemo_client::runs::process_memory_text;
use mnemo_client::ClientError;
use mnemo_protocol::daemon::{
    ComponentHealth, EncryptionMode, EncryptionStatus, HelloResult, StatusResult,
};
use mnemo_protocol::memory::{Memory, SearchResult};
use mnemo_protocol::understanding::SalienceFactors;
use serde::Serialize;

pub struct Output {
    pub json: bool,
}

impl Output {
    /// Prints `value` as JSON, or `text()` for a person.
    pub fn value<T: Serialize>(&self, value: &T, text: impl FnOnce() -> String) {
        if self.json {
            println!(
                "{}",
                serde_json::to_string_pretty(value).unwrap_or_default()
            );
        } else {
            println!("{}", text());
        }
    }

    pub fn status(&self, s: &StatusResult) {
        self.value(s, || {
            let mut lines = vec![
                format!(
                    "mnemod {} (protocol {}), pid {}, up {}",
                    s.version,
                    s.protocol_version,
                    s.pid,
                    human_duration(s.uptime_secs)
                ),
                format!("  data dir   {}", s.data_dir),
                format!("  socket     {}", s.socket),
            ];
            for c in &s.components {
                let mark = match c.state {
                    ComponentHealth::Ok => "ok",
                    ComponentHealth::Degraded => "DEGRADED",
                    ComponentHealth::Starting => "starting",
                    ComponentHealth::Failed => "FAILED",
                };
                lines.push(format!("  {:<10} {:<8} {}", c.name, mark, c.detail));
            }
            let q = &s.queues;
            lines.push(format!(
                "  queues     {} in flight, {} writes pending, {} embeds pending, {} connections",
                q.in_flight_requests, q.pending_writes, q.pending_embeds, q.connections
            ));
            if let Some(m) = &s.memory {
                lines.push(format!("  memory     {}", process_memory_text(m)));
            }
            lines.push(format!("  encryption {}", encryption_text(&s.encryption)));
            if let Some(r) = &s.reembed {
                lines.push(format!(
                    "  re-embed   {}/{} memories with {} (found by their words meanwhile)",
                    r.done, r.total, r.model
                ));
            }
            if let Some(i) = &s.indexes {
                let vector = if let Some(n) = i.held_vectors {
                    let form = if i.held_vector_signs {
                        "2 bits a component; their 8-bit codes in a file"
                    } else {
                        "8-bit"
                    };
                    format!("vectors of {n} current memories held in memory ({form})")
                } else if i.ann {
                    "vector index ANN".to_string()
                } else {
                    format!(
                        "vector search exact (ANN index past {} rows)",
                        i.ann_min_rows
                    )
                };
                lines.push(format!(
                    "  indexes    {vector}; {} rows, {} waiting to be folded in",
                    i.rows, i.unindexed_rows
                ));
            }
            for w in &s.watch {
                let what = match w.state.as_str() {
                    "scanning" => format!("scanning {}/{} notes", w.scanned, w.files),
                    "failed" => format!("FAILED: {}", w.error.as_deref().unwrap_or("?")),
                    "paused" => format!(
                        "PAUSED: {}; its {} memories are kept",
                        w.error.as_deref().unwrap_or("the folder is away"),
                        w.memories
                    ),
                    state => format!("{state}: {} memories from {} notes", w.memories, w.files),
                };
                let skipped = match w.skipped {
                    0 => String::new(),
                    n => format!(", {n} files skipped (see mnemod's log)"),
                };
                lines.push(format!(
                    "  notes      {} → {}: {what}{skipped}",
                    w.path, w.namespace
                ));
            }
            if s.degraded() {
                lines
                    .push("  (degraded: see the lines marked above for why and what to do)".into());
            }
            lines.join("\n")
        });
    }

    pub fn ping(&self, hello: &HelloResult, took: Duration) {
        #[derive(Serialize)]
        struct Ping<'a> {
            #[serde(flatten)]
            hello: &'a HelloResult,
            round_trip_ms: f64,
        }
        let ms = took.as_secs_f64() * 1000.0;
        self.value(
            &Ping {
                hello,
                round_trip_ms: ms,
            },
            || format!("{} {} answered in {ms:.2} ms", hello.name, hello.version),
        );
    }

    pub fn memory(&self, m: &Memory) {
        self.value(m, || memory_text(m));
    }

    pub fn memories(&self, list: &[Memory], next: Option<&str>) {
        if self.json {
            println!(
                "{}",
                serde_json::json!({ "memories": list, "next_cursor": next })
            );
            return;
        }
        for m in list {
            println!("{}", memory_line(m));
        }
        if let Some(cursor) = next {
            println!("(more: --cursor {cursor})");
        } else if list.is_empty() {
            println!("(no memories)");
        }
    }

    pub fn search(&self, r: &SearchResult) {
        self.value(r, || {
            let mut lines = Vec::new();
            for (i, hit) in r.hits.iter().enumerate() {
                lines.push(format!("{:>2}. {:.3}  {}", i + 1, hit.score, memory_line(&hit.memory)));
                if let Some(e) = &hit.explain {
                    let rank = |r: Option<usize>| r.map_or("-".to_string(), |r| format!("#{r}"));
                    lines.push(format!(
                        "      vector {} sim {}  text {} bm25 {}  relevance {:.3}  salience {:.1}  strength {:.2}  recency {:.2}  entities {:.2}",
                        rank(e.vector_rank),
                        e.vector_similarity.map_or("-".into(), |s| format!("{s:.3}")),
                        rank(e.text_rank),
                        e.text_score.map_or("-".into(), |s| format!("{s:.2}")),
                        e.relevance,
                        e.salience,
                        e.strength,
                        e.recency,
                        e.entity
                    ));
                    if e.subject > 0.0 {
                        lines.push("      subject: by (or first about) a name the query names".into());
                    }
                    if e.graph > 0.0 {
                        lines.push(format!(
                            "      graph {:.3} beside {}",
                            e.graph,
                            e.graph_via.as_deref().unwrap_or("?")
                        ));
                    }
                    if e.time > 0.0 {
                        lines.push(format!("      time {:.2} (the time the query names)", e.time));
                    }
                    if let Some(f) = &e.salience_factors {
                        lines.push(format!("      salience from {}", factors_text(f)));
                    }
                }
            }
            if r.hits.is_empty() {
                lines.push("(nothing found)".into());
            }
            if let Some(asked) = &r.retrievers_asked {
                lines.push(format!(
                    "meaning and words asked as \u{201c}{asked}\u{201d}: names most memories mention rank through `entities` alone"
                ));
            }
            lines.push(format!("{} results in {:.1} ms ({:?}, embedder {})", r.hits.len(), r.took_ms, r.mode, r.embedder));
            lines.join("\n")
        });
    }
}

/// The day a memory speaks of: when it happened, else when it was added (YYYY-MM-DD).
pub fn day(m: &Memory) -> &str {
    let when = m.occurred_at.as_deref().unwrap_or(&m.created_at);
    &when[..when.len().min(10)]
}

fn memory_line(m: &Memory) -> String {
    let mut content: String = m.content.chars().take(100).collect();
    if content.len() < m.content.len() {
        content.push('…');
    }
    format!(
        "{}  {}  {:<9} {}",
        m.id,
        day(m),
        m.kind.as_str(),
        content.replace('\n', " ")
    )
}

fn memory_text(m: &Memory) -> String {
    let mut lines = vec![
        format!("id          {}", m.id),
        format!("kind        {}    namespace {}", m.kind, m.namespace),
        format!("content     {}", m.content),
    ];
    let opt = |label: &str, v: &Option<String>| v.as_ref().map(|v| format!("{label:<12}{v}"));
    lines.extend(opt("domain", &m.domain));
    lines.extend(opt("source", &m.source));
    lines.extend(opt("session", &m.session_id));
    lines.extend(opt("occurred", &m.occurred_at));
    lines.push(format!("created     {}", m.created_at));
    lines.push(format!(
        "valid       {} .. {}",
        m.valid_from,
        m.valid_to.as_deref().unwrap_or("now")
    ));
    lines.extend(opt("replaced by", &m.superseded_by));
    lines.push(format!(
        "salience    {:.1}    strength {:.2}",
        m.salience, m.strength
    ));
    if let Some(f) = &m.salience_factors {
        lines.push(format!("  factors   {}", factors_text(f)));
    }
    if let Some(e) = &m.emotion {
        lines.push(format!(
            "emotion     {} (intensity {:.2}, valence {:+.2}, arousal {:.2})",
            e.primary, e.intensity, e.valence, e.arousal
        ));
    }
    if let Some(t) = &m.event {
        lines.push(format!("speaks of   {} .. {}", t.start, t.end));
    }
    if !m.entities.is_empty() {
        lines.push(format!("mentions    {}", m.entities.join(", ")));
    }
    for (i, e) in m.edges.iter().enumerate() {
        // The memory is one end (by its lineage, the id of its first version).
        let other = if e.src.id == m.lineage {
            &e.dst
        } else {
            &e.src
        };
        let label = if i == 0 { "links" } else { "" };
        lines.push(format!(
            "{label:<12}{} {:.2} {}",
            e.edge_type, e.weight, other.id
        ));
    }
    if !m.tags.is_empty() {
        lines.push(format!("tags        {}", m.tags.join(", ")));
    }
    if m.metadata.as_object().is_some_and(|o| !o.is_empty()) {
        lines.push(format!("metadata    {}", m.metadata));
    }
    lines.join("\n")
}

/// The salience factors that are not 0, strongest first: "novelty 0.82, self_reference 1.00".
pub fn factors_text(f: &SalienceFactors) -> String {
    let mut named: Vec<(&str, f32)> = f.named().into_iter().filter(|(_, v)| *v > 0.0).collect();
    named.sort_by(|a, b| b.1.total_cmp(&a.1));
    if named.is_empty() {
        return "no factor".into();
    }
    named
        .iter()
        .map(|(n, v)| format!("{n} {v:.2}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether memories are encrypted at rest, and what to do when that is not what was asked.
pub fn encryption_text(e: &EncryptionStatus) -> String {
    let key = e
        .key
        .as_ref()
        .map_or_else(|| "-".to_string(), ToString::to_string);
    match e.mode {
        EncryptionMode::On => format!("on (key {key}; back it up: without it nothing opens)"),
        EncryptionMode::Converting => format!(
            "converting, {}/{} memories sealed (key {key}); if it was interrupted, run `mnemo encrypt`",
            e.done, e.total
        ),
        EncryptionMode::Off if e.asked => {
            "off, though the config asks for it: run `mnemo encrypt`".into()
        }
        EncryptionMode::Off => "off".into(),
    }
}

fn human_duration(secs: f64) -> String {
    let s = secs as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{}s", s / 60, s % 60),
        _ => format!("{}h{}m", s / 3600, (s % 3600) / 60),
    }
}

/// Errors go to stderr for people, to stdout as JSON for scripts.
/// A failure the command's `--json` output already tells (an import's refused records): only
/// the exit status is left to say there, and the message is for a person reading text.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Reported(pub String);

pub fn error(json: bool, e: &anyhow::Error) {
    if json && e.downcast_ref::<Reported>().is_some() {
        return;
    }
    if json {
        let value = match e.downcast_ref::<ClientError>() {
            Some(ClientError::Rpc(rpc)) => serde_json::json!({ "error": rpc }),
            _ => serde_json::json!({ "error": { "message": format!("{e:#}") } }),
        };
        println!("{value}");
    } else {
        eprintln!("mnemo: {e:#}");
    }
}
