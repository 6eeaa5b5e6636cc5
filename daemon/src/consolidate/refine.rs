//! Refine: with an LLM endpoint configured (`[llm] url`) and `[usermodel] llm_refine` on,
//! the person's memories added since the last run are read again by the LLM, oldest first,
//! at most `llm_refine_per_run` a run. Beliefs the rules missed join the user model
//! (`read_by` = `llm:<model>`), weighed like the rules' own; names the rules missed ("the
//! lake house", "my dentist") join the memory's entities, with their MENTIONS edges, the
//! entity book and the names later memories are read with. Ingest never waits for this: it
//! runs only while the machine is idle, and steps aside mid-call when a request arrives.
//!
//! Where it is kept: the creation time through which memories were read (a `meta`
//! watermark), advanced only past whole groups of one creation time, so a stop re-reads at
//! most one group, which only repeats beliefs already held. An endpoint that does not answer
//! ends the phase without moving the watermark (the next run tries again); a reply that
//! cannot be read is counted and passed over.

use mnemo_protocol::consolidate::{Phase, PhaseRecord};
use mnemo_protocol::memory::MemoryKind;

use mnemo_protocol::time::now_micros;

use super::pace::{Pace, Stop};
use super::{bump, done_through, time_blocks, Consolidator};
use crate::graph::links::mentions as mentions_edges;
use crate::llm::{Llm, LlmError};
use crate::store::filter::current;
use crate::store::{col, MemoryRecord};
use crate::understand::entities::{Mention, MAX_MENTIONS};
use crate::understand::llm::{parse, prompt, SYSTEM};

const WATERMARK: &str = "refine.done_through";

pub async fn run(pace: &mut Pace, record: &mut PhaseRecord) -> Result<(), Stop> {
    let ctx = pace.ctx().clone();
    let usermodel = &ctx.usermodel;
    let llm = match Llm::from_config(&ctx.llm) {
        Some(llm) if usermodel.refines() => std::sync::Arc::new(llm),
        _ => return Ok(()),
    };
    let read_by = format!("llm:{}", llm.model());
    let store = &ctx.store;
    let watermark = done_through(store, WATERMARK).await?;
    let predicate = current()
        .and(col("is_summary").eq(false))
        .and(col("created_at").gt(watermark));
    let mut rows = pace
        .guard(store.columns_of(&predicate, &["id", "kind", "metadata", "created_at"]))
        .await??;
    rows.retain(|r| r.kind != MemoryKind::Summary && r.is_the_persons());
    rows.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    let times: Vec<i64> = rows.iter().map(|r| r.created_at).collect();
    let mut blocks = Vec::new();
    let mut taken = 0;
    for block in time_blocks(&times, 1) {
        if taken >= usermodel.refine_per_run() {
            break;
        }
        taken += block.len();
        blocks.push(block);
    }
    bump(record, "waiting", (rows.len() - taken) as u64);
    let total = taken as u64;
    let mut done = 0;
    for block in blocks {
        let ids: Vec<String> = rows[block.clone()].iter().map(|r| r.id.clone()).collect();
        // Whole rows now: the texts (opened in an encrypted store), lineage, namespace.
        let memories = pace
            .guard(store.plain_rows(&col("id").one_of(&ids), None))
            .await??;
        for memory in memories {
            pace.checkpoint().await?;
            match pace.ask(&llm, SYSTEM, prompt(&memory.content)).await? {
                Err(LlmError::Unreachable(e)) => {
                    tracing::warn!("refine: the LLM did not answer, trying again next run: {e}");
                    bump(record, "llm_failures", 1);
                    return Ok(());
                }
                // Some models answer some texts with nothing (a thinking model's reply can be
                // all reasoning): asking again would block every later memory.
                Err(e @ LlmError::Empty(_)) => {
                    tracing::debug!("refine: memory {}: {e}", memory.id);
                    bump(record, "unreadable_replies", 1);
                }
                Ok(reply) => match parse(&reply) {
                    Err(e) => {
                        tracing::debug!("refine: memory {}: {e}", memory.id);
                        bump(record, "unreadable_replies", 1);
                    }
                    Ok(reading) => {
                        bump(record, "dropped_items", reading.dropped as u64);
                        let added = usermodel
                            .refine(&memory, reading.signals, &read_by)
                            .await
                            .map_err(|e| Stop::Failed(format!("refining beliefs: {e}")))?;
                        bump(record, "beliefs_added", added as u64);
                        let named = add_mentions(&ctx, &memory, reading.mentions).await?;
                        bump(record, "entities_added", named as u64);
                    }
                },
            }
            bump(record, "read", 1);
            done += 1;
            pace.progress(Phase::Refine, done, total);
        }
        let through = times[block.end - 1];
        store.meta_set(WATERMARK, &through.to_string()).await?;
    }
    Ok(())
}

/// Names the LLM found in `memory` that its entities lack, added where the rules' own go:
/// the memory's `entities` (only while it is current), MENTIONS edges, the entity book and
/// the names later memories are read with. Answers how many were added.
async fn add_mentions(
    ctx: &Consolidator,
    memory: &MemoryRecord,
    mentions: Vec<Mention>,
) -> Result<usize, Stop> {
    let store = &ctx.store;
    let new: Vec<Mention> = mentions
        .into_iter()
        .filter(|m| !memory.entities.contains(&store.entity_key(&m.key)))
        .take(MAX_MENTIONS.saturating_sub(memory.entities.len()))
        .collect();
    if new.is_empty() {
        return Ok(0);
    }
    // The memory as mentioning only what is new, for the edges and what counts mentions.
    let mut named = memory.clone();
    named.entities = new.iter().map(|m| m.key.clone()).collect();
    let edges = mentions_edges(&named, now_micros(), &|k| store.entity_key(k));
    // Edges first: a forget from here on deletes them with the memory's others.
    let writer = store.writer();
    writer.submit(store.edges().append(&edges)?).await?;
    let mut all = memory.entities.clone();
    all.extend(new.iter().map(|m| store.entity_key(&m.key)));
    let patched = writer
        .submit(store.entities_patch(&[(memory.id.clone(), all)])?)
        .await?;
    if patched == 0 {
        // Replaced or forgotten since it was read: its new edges go too.
        let ids: Vec<String> = edges.iter().map(|e| e.id.clone()).collect();
        writer.submit(store.edges().delete_ids(&ids)).await?;
        return Ok(0);
    }
    ctx.entities
        .added(std::slice::from_ref(&named), std::slice::from_ref(&new));
    ctx.names.add([&named]);
    Ok(new.len())
}
