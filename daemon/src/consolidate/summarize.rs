//! Summaries: old, weak, unremarkable memories are grouped by namespace, session (else
//! domain) and week; each group of at least `summary_min_cluster` becomes one summary memory
//! that lists its sources in `summarizes`. The sources are demoted (strength halved,
//! `summarized_by` set), never deleted. The text is extractive by rule, or written by the
//! configured LLM (falling back to the rule if it fails).
//!
//! A summary's id is derived from its sources, so redoing a cluster after a crash finds its
//! summary written and adds no second one. Summaries are written, and their sources demoted,
//! a few dozen to a commit.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use lancedb::arrow::arrow_array::{Float32Array, StringArray};

use mnemo_protocol::consolidate::{Phase, PhaseRecord};
use mnemo_protocol::memory::MemoryKind;
use mnemo_protocol::time::{format_micros, now_micros};
use sha2::{Digest, Sha256};

use super::bump;
use super::pace::{Pace, Stop, SAVE_EVERY};
use crate::store::filter::{current, event_time};
use crate::store::{col, MemoryRecord, Store, StoreError, WriteOp};
use crate::understand::sentences::first_sentence;

const WEEK_US: i64 = 7 * 86_400_000_000;
/// Lines an extractive summary quotes at most.
const MAX_LINES: usize = 8;
/// Characters of each quoted line at most.
const MAX_LINE_CHARS: usize = 200;
/// Candidates read per pass; the next run takes the rest.
const MAX_CANDIDATES: usize = 20_000;

/// Groups candidates into clusters of at least `min`, split into chunks of at most `max`,
/// each in time order.
pub fn clusters(mut rows: Vec<MemoryRecord>, min: usize, max: usize) -> Vec<Vec<MemoryRecord>> {
    rows.sort_by_key(|r| (r.event_time(), r.id.clone()));
    let mut by_key: BTreeMap<(String, String, i64), Vec<MemoryRecord>> = BTreeMap::new();
    for r in rows {
        let context = match (&r.session_id, &r.domain) {
            (Some(s), _) => format!("session {s}"),
            (None, Some(d)) => format!("domain {d}"),
            (None, None) => String::new(),
        };
        let week = r.event_time().div_euclid(WEEK_US);
        by_key
            .entry((r.namespace.clone(), context, week))
            .or_default()
            .push(r);
    }
    let mut out = Vec::new();
    for (_, members) in by_key {
        if members.len() < min {
            continue;
        }
        // Even chunks: 10 members at most 4 a chunk are 4, 3, 3 (not 4, 4, 2).
        let chunks = members.len().div_ceil(max);
        let (base, extra) = (members.len() / chunks, members.len() % chunks);
        let mut rest = members.as_slice();
        for c in 0..chunks {
            let (chunk, tail) = rest.split_at(base + usize::from(c < extra));
            rest = tail;
            if chunk.len() >= min {
                out.push(chunk.to_vec());
            }
        }
    }
    out
}

fn day(micros: i64) -> String {
    format_micros(micros).chars().take(10).collect()
}

fn heading(cluster: &[MemoryRecord]) -> String {
    let first = &cluster[0];
    let context = match (&first.session_id, &first.domain) {
        (Some(s), _) => format!(" from session {s}"),
        (None, Some(d)) => format!(" about {d}"),
        _ => String::new(),
    };
    let (from, to) = (
        day(first.event_time()),
        day(cluster[cluster.len() - 1].event_time()),
    );
    let span = if from == to {
        format!("on {from}")
    } else {
        format!("{from} to {to}")
    };
    format!("Summary of {} memories{context}, {span}:", cluster.len())
}

/// The rule: the first sentence of the most salient members (ties: earlier first), quoted in
/// time order under a heading that says what and when.
pub fn extractive(cluster: &[MemoryRecord]) -> String {
    let mut picked: Vec<usize> = (0..cluster.len()).collect();
    picked.sort_by(|&a, &b| {
        cluster[b]
            .salience
            .total_cmp(&cluster[a].salience)
            .then(a.cmp(&b))
    });
    picked.truncate(MAX_LINES);
    picked.sort();
    let mut text = heading(cluster);
    let mut seen = std::collections::HashSet::new();
    for i in picked {
        let line = first_sentence(&cluster[i].content, MAX_LINE_CHARS);
        if seen.insert(line.to_lowercase()) {
            text.push_str(&format!("\n- {line}"));
        }
    }
    let rest = cluster.len().saturating_sub(MAX_LINES);
    if rest > 0 {
        text.push_str(&format!("\n(and {rest} more)"));
    }
    text
}

const LLM_SYSTEM: &str = "You condense a person's memories into a short factual summary. \
Keep names, dates, decisions and feelings. Write 2 to 4 plain sentences, no preamble.";

/// A summary's id: the same sources always give the same id.
fn summary_id(sources: &[String]) -> String {
    let mut ids = sources.to_vec();
    ids.sort();
    let digest = Sha256::digest(ids.join("\n").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes)
        .into_uuid()
        .to_string()
}

fn summary_record(cluster: &[MemoryRecord], content: String, by_llm: bool) -> MemoryRecord {
    let now = now_micros();
    let sources: Vec<String> = cluster.iter().map(|r| r.id.clone()).collect();
    let id = summary_id(&sources);
    let first = &cluster[0];
    let mut summary = MemoryRecord::new(first.namespace.clone(), content, MemoryKind::Summary, now);
    summary.lineage = id.clone();
    summary.id = id;
    summary.domain = first.domain.clone();
    summary.source = Some(
        if by_llm {
            "consolidation:llm"
        } else {
            "consolidation:rule"
        }
        .into(),
    );
    summary.session_id = first.session_id.clone();
    summary.salience = cluster.iter().map(|r| r.salience).fold(0.0, f32::max);
    summary.occurred_at = Some(first.event_time());
    summary.is_summary = true;
    summary.summarizes = sources;
    summary.tags = vec!["summary".into()];
    summary.metadata = serde_json::json!({ "sources": cluster.len() }).to_string();
    summary
}

/// Summaries written in one commit at most. Written one at a time, each with its sources'
/// demotion, 500 summaries of 1M memories took 8 min: each was an upsert, a merge by id that
/// read the whole table (~0.7 s, RSS up by ~0.6 GiB while it ran), and each demotion an
/// update that left the values held for searches stale.
const SUMMARIES_A_COMMIT: usize = 64;

/// A cluster's summary, to write, with its sources' strengths as read.
struct Drafted {
    summary: MemoryRecord,
    by_llm: bool,
    strengths: Vec<f32>,
}

pub async fn run(pace: &mut Pace, record: &mut PhaseRecord) -> Result<(), Stop> {
    let ctx = pace.ctx().clone();
    let config = ctx.state.config.clone();
    let old_before = now_micros() - (config.summary_min_age_days * 86_400_000_000.0) as i64;
    let predicate = current()
        .and(col("is_summary").eq(false))
        .and(col("summarized_by").null())
        .and(col("strength").lt(config.summary_max_strength))
        .and(col("salience").lt(config.summary_max_salience))
        .and(event_time().lt(old_before));
    let candidates = pace
        .guard(ctx.store.plain_rows(&predicate, Some(MAX_CANDIDATES)))
        .await??;
    bump(record, "candidates", candidates.len() as u64);
    let groups = clusters(
        candidates,
        config.summary_min_cluster,
        config.summary_max_cluster,
    );
    let total = groups.len() as u64;
    let llm = crate::llm::Llm::from_config(&ctx.llm).map(Arc::new);
    let mut unwritten: Vec<Drafted> = Vec::new();
    let mut written_at = Instant::now();
    for (i, cluster) in groups.into_iter().enumerate() {
        match summarize(pace, record, llm.as_ref(), &cluster).await {
            Ok(summary) => unwritten.push(summary),
            Err(stop) => {
                if let Err(e) = write(pace, record, std::mem::take(&mut unwritten)).await {
                    tracing::debug!("summaries stopped without writing the last ones: {e:?}");
                }
                return Err(stop);
            }
        }
        let last = i as u64 + 1 == total;
        // Redoing a summary changes nothing: its id comes from its sources, and its sources
        // are demoted only with it.
        if last || unwritten.len() >= SUMMARIES_A_COMMIT || written_at.elapsed() >= SAVE_EVERY {
            write(pace, record, std::mem::take(&mut unwritten)).await?;
            written_at = Instant::now();
        }
        pace.progress(Phase::Summaries, i as u64 + 1, total);
    }
    Ok(())
}

/// One cluster's summary, by the LLM when one is configured (the rule if it fails).
async fn summarize(
    pace: &mut Pace,
    record: &mut PhaseRecord,
    llm: Option<&Arc<crate::llm::Llm>>,
    cluster: &[MemoryRecord],
) -> Result<Drafted, Stop> {
    pace.checkpoint().await?;
    let rule = extractive(cluster);
    let (content, by_llm) = match llm {
        Some(llm) => match pace.ask(llm, LLM_SYSTEM, rule.clone()).await? {
            Ok(text) => (format!("{}\n{text}", heading(cluster)), true),
            Err(e) => {
                tracing::warn!("summary by LLM failed, using the rule: {e}");
                bump(record, "llm_failures", 1);
                (rule, false)
            }
        },
        None => (rule, false),
    };
    Ok(Drafted {
        summary: summary_record(cluster, content, by_llm),
        by_llm,
        strengths: cluster.iter().map(|r| r.strength).collect(),
    })
}

/// Adds the `summaries` not written before (a run stopped between a summary and its
/// demotion wrote it), embedded at once, then demotes their sources: strength halved and
/// `summarized_by` set, where a source is still current.
async fn write(
    pace: &mut Pace,
    record: &mut PhaseRecord,
    summaries: Vec<Drafted>,
) -> Result<(), Stop> {
    if summaries.is_empty() {
        return Ok(());
    }
    let ctx = pace.ctx().clone();
    let ids: Vec<String> = summaries.iter().map(|w| w.summary.id.clone()).collect();
    let written: HashSet<String> = pace
        .guard(ctx.store.columns_of(&col("id").one_of(&ids), &["id"]))
        .await??
        .into_iter()
        .map(|r| r.id)
        .collect();
    let mut new: Vec<MemoryRecord> = summaries
        .iter()
        .filter(|w| !written.contains(&w.summary.id))
        .map(|w| w.summary.clone())
        .collect();
    let writer = ctx.store.writer();
    if !new.is_empty() {
        let texts = new.iter().map(|s| s.content.clone()).collect();
        let vectors = pace
            .guard(ctx.embed.embed(texts))
            .await?
            .map_err(|e| Stop::Failed(format!("embedding summaries: {e}")))?;
        let model = ctx.embed.embedder().model_id();
        for (summary, vector) in new.iter_mut().zip(vectors) {
            summary.vector = vector;
            summary.embed_model = model.to_string();
        }
        writer.submit(WriteOp::Insert(new)).await?;
    }
    let demoted = writer.submit(demotion(&ctx.store, &summaries)?).await?;
    bump(record, "summaries", summaries.len() as u64);
    bump(record, "demoted", demoted);
    let by_llm = summaries.iter().filter(|w| w.by_llm).count() as u64;
    if by_llm > 0 {
        bump(record, "by_llm", by_llm);
    }
    Ok(())
}

/// The patch demoting the sources of `summaries`: a patch by id of current rows, which the
/// codes held for searches take in place. Only this phase sets `summarized_by`, and it read
/// each source unsummarised, so the strength halved is the one it read.
fn demotion(store: &Store, summaries: &[Drafted]) -> Result<WriteOp, StoreError> {
    let sources = summaries.iter().flat_map(|w| {
        w.summary
            .summarizes
            .iter()
            .zip(&w.strengths)
            .map(|(id, strength)| (id.as_str(), w.summary.id.as_str(), *strength))
    });
    let (mut ids, mut by, mut strengths) = (Vec::new(), Vec::new(), Vec::new());
    for (id, summary, strength) in sources {
        ids.push(id);
        by.push(summary);
        strengths.push(strength * 0.5);
    }
    store.patch_current(vec![
        ("id", Arc::new(StringArray::from(ids))),
        ("summarized_by", Arc::new(StringArray::from(by))),
        ("strength", Arc::new(Float32Array::from(strengths))),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::tests::record;

    fn memory(id: &str, content: &str, session: &str, day: i64, salience: f32) -> MemoryRecord {
        let mut r = record(id, content, 4);
        r.session_id = Some(session.into());
        r.occurred_at = Some(day * 86_400_000_000);
        r.salience = salience;
        r
    }

    #[test]
    fn clusters_by_session_and_week_with_a_minimum() {
        let rows = vec![
            memory("a", "x", "s1", 0, 3.0),
            memory("b", "x", "s1", 1, 3.0),
            memory("c", "x", "s1", 2, 3.0),
            memory("d", "x", "s2", 1, 3.0),
            memory("e", "x", "s2", 2, 3.0),
            memory("f", "x", "s1", 30, 3.0),
        ];
        let groups = clusters(rows, 3, 40);
        assert_eq!(groups.len(), 1);
        let ids: Vec<_> = groups[0].iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
    }

    #[test]
    fn big_clusters_split_evenly() {
        let rows = (0..10)
            .map(|i| memory(&format!("m{i}"), "x", "s", 0, 3.0))
            .collect();
        let sizes: Vec<_> = clusters(rows, 3, 4).iter().map(Vec::len).collect();
        assert_eq!(sizes, [4, 3, 3]);
    }

    #[test]
    fn extractive_summary_quotes_first_sentences_in_time_order() {
        let cluster = vec![
            memory("a", "Went to the market. Bought apples.", "s1", 0, 2.0),
            memory("b", "Called Ann about the trip! It was long.", "s1", 1, 4.0),
            memory("c", "Went to the market. Again.", "s1", 2, 1.0),
        ];
        let text = extractive(&cluster);
        assert!(
            text.starts_with("Summary of 3 memories from session s1, 1970-01-01 to 1970-01-03:"),
            "{text}"
        );
        assert_eq!(
            text.lines().skip(1).collect::<Vec<_>>(),
            ["- Went to the market.", "- Called Ann about the trip!"]
        );
    }

    #[test]
    fn summary_ids_depend_only_on_the_sources() {
        let a = summary_id(&["x".into(), "y".into()]);
        assert_eq!(a, summary_id(&["y".into(), "x".into()]));
        assert_ne!(a, summary_id(&["x".into()]));
    }
}
