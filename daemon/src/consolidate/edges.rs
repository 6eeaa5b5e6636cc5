//! Edges: Hebbian strengthening and fading. Memories one recall answered together (their
//! access events share a time) strengthen the edges between them, each time a share
//! (`hebbian_rate`) of the way to 1. Unused, what use added fades with `edge_half_life_days`:
//! an edge that records structure (a mention, a conversation's order, an update) fades back to
//! the weight it was made with; a learned one (SIMILAR, ASSOCIATED, RELATES_TO) fades to
//! nothing and is pruned below 0.1. Fading is computed from the time since the latest of the
//! last fade, activation and creation, so a resumed phase fades nothing twice.

use std::collections::{HashMap, HashSet};

use mnemo_protocol::consolidate::{Phase, PhaseRecord};
use mnemo_protocol::graph::EdgeType;

use super::pace::{Pace, Stop};
use super::{bump, events_cutoff};
use crate::store::col;
use crate::store::edges::{EdgeFilter, EdgeRecord};

const MICROS_PER_DAY: f64 = 86_400_000_000.0;
/// Learned edges weaker than this are deleted.
pub const PRUNE_BELOW: f32 = 0.1;
/// Edges learned from use, which fade to nothing; every other type records structure.
const LEARNED: [EdgeType; 3] = [EdgeType::Similar, EdgeType::Associated, EdgeType::RelatesTo];

fn learned(t: EdgeType) -> bool {
    LEARNED.contains(&t)
}

/// The edges among each group of co-recalled memories (lineages), strengthened once per
/// recall that held both ends.
pub fn strengthened(
    groups: &[(i64, Vec<String>)],
    edges: &[EdgeRecord],
    rate: f32,
) -> Vec<EdgeRecord> {
    let mut by_end: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, e) in edges.iter().enumerate() {
        by_end.entry(&e.src_id).or_default().push(i);
    }
    let mut activations: HashMap<usize, (i64, i64)> = HashMap::new();
    for (at, members) in groups {
        let set: HashSet<&str> = members.iter().map(String::as_str).collect();
        for m in members {
            for &i in by_end.get(m.as_str()).into_iter().flatten() {
                if set.contains(edges[i].dst_id.as_str()) {
                    let a = activations.entry(i).or_insert((0, *at));
                    a.0 += 1;
                    a.1 = a.1.max(*at);
                }
            }
        }
    }
    let mut out: Vec<EdgeRecord> = activations
        .into_iter()
        .map(|(i, (times, last))| {
            let mut e = edges[i].clone();
            let kept = (1.0 - rate).powi(times as i32);
            e.weight = 1.0 - (1.0 - e.weight) * kept;
            e.activation_count += times;
            e.last_activated_at = Some(e.last_activated_at.map_or(last, |l| l.max(last)));
            e
        })
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

/// `e` faded to `now`: what lies above its floor (its first weight, or nothing for a learned
/// edge) halves every `half_life_days`.
pub fn faded(e: &EdgeRecord, now: i64, half_life_days: f64) -> EdgeRecord {
    let since = [e.decayed_at, e.last_activated_at, Some(e.created_at)]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(now);
    let days = (now - since).max(0) as f64 / MICROS_PER_DAY;
    let floor = if learned(e.edge_type) {
        0.0
    } else {
        e.initial_weight.min(e.weight)
    };
    let kept = 0.5f64.powf(days / half_life_days) as f32;
    let mut out = e.clone();
    out.weight = floor + (e.weight - floor) * kept;
    out.decayed_at = Some(now);
    out
}

pub async fn run(pace: &mut Pace, record: &mut PhaseRecord) -> Result<(), Stop> {
    let ctx = pace.ctx().clone();
    let config = &ctx.state.config;
    // The access phase after this one clears the events.
    let now = events_cutoff(pace, record).await?;
    let store = &ctx.store;
    let edges = store.edges();

    // Recalled together: events name versions; edges join lineages.
    let groups = store.runs().co_accessed(now).await?;
    bump(record, "recalls", groups.len() as u64);
    let ids: Vec<String> = groups
        .iter()
        .flat_map(|(_, g)| g.iter().cloned())
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let mut lineage_of: HashMap<String, String> = HashMap::new();
    for chunk in ids.chunks(config.batch_rows.max(1)) {
        pace.checkpoint().await?;
        let rows = store
            .columns_of(&col("id").one_of(chunk), &["id", "lineage"])
            .await?;
        lineage_of.extend(rows.into_iter().map(|r| (r.id, r.lineage)));
    }
    let groups: Vec<(i64, Vec<String>)> = groups
        .into_iter()
        .map(|(at, g)| {
            (
                at,
                g.iter()
                    .filter_map(|id| lineage_of.get(id).cloned())
                    .collect(),
            )
        })
        .collect();
    let lineages: Vec<String> = lineage_of
        .values()
        .cloned()
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let touching = edges.touching(&lineages, &EdgeFilter::default()).await?;
    let stronger = strengthened(&groups, &touching, config.hebbian_rate);
    bump(record, "strengthened", stronger.len() as u64);
    for chunk in stronger.chunks(config.batch_rows.max(1)) {
        pace.checkpoint().await?;
        store.writer().submit(edges.upsert(chunk)?).await?;
    }
    pace.progress(Phase::Edges, 1, 2);

    // Fading: only edges above their floor change.
    let learned_names: Vec<&str> = LEARNED.iter().map(|t| t.as_str()).collect();
    let fading = col("weight")
        .gt(col("initial_weight"))
        .or(col("edge_type").one_of(&learned_names));
    let rows = edges.rows(&fading).await?;
    let half_life = config.edge_half_life_days;
    let (gone, kept): (Vec<EdgeRecord>, Vec<EdgeRecord>) = rows
        .iter()
        .map(|e| faded(e, now, half_life))
        .partition(|e| learned(e.edge_type) && e.weight < PRUNE_BELOW);
    for chunk in kept.chunks(config.batch_rows.max(1)) {
        pace.checkpoint().await?;
        store.writer().submit(edges.upsert(chunk)?).await?;
        bump(record, "faded", chunk.len() as u64);
    }
    let gone: Vec<String> = gone.into_iter().map(|e| e.id).collect();
    for chunk in gone.chunks(config.batch_rows.max(1)) {
        pace.checkpoint().await?;
        store.writer().submit(edges.delete_ids(chunk)).await?;
        bump(record, "pruned", chunk.len() as u64);
    }
    pace.progress(Phase::Edges, 2, 2);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_protocol::graph::Node;

    fn edge(t: EdgeType, a: &str, b: &str, w: f32) -> EdgeRecord {
        EdgeRecord::new("ns", Node::memory(a), Node::memory(b), t, w, "test", 0)
    }

    #[test]
    fn recalled_together_strengthens_only_the_edges_between_them() {
        let edges = [
            edge(EdgeType::TemporalSequence, "a", "b", 0.5),
            edge(EdgeType::TemporalSequence, "b", "c", 0.5),
        ];
        let groups = [
            (10, vec!["a".into(), "b".into()]),
            (20, vec!["b".into(), "a".into(), "x".into()]),
        ];
        let out = strengthened(&groups, &edges, 0.1);
        assert_eq!(out.len(), 1);
        let e = &out[0];
        assert_eq!((e.src_id.as_str(), e.dst_id.as_str()), ("a", "b"));
        // Twice a tenth of the way to 1: 0.5 → 0.55 → 0.595.
        assert!((e.weight - 0.595).abs() < 1e-6, "{}", e.weight);
        assert_eq!((e.activation_count, e.last_activated_at), (2, Some(20)));
    }

    #[test]
    fn what_use_added_fades_to_the_floor_and_learned_edges_to_nothing() {
        let day = MICROS_PER_DAY as i64;
        let mut used = edge(EdgeType::TemporalSequence, "a", "b", 0.5);
        used.weight = 0.9;
        used.last_activated_at = Some(0);
        let f = faded(&used, 30 * day, 30.0);
        assert!((f.weight - 0.7).abs() < 1e-5, "{}", f.weight);
        // Fading again at the same time changes nothing (a resumed phase).
        assert!((faded(&f, 30 * day, 30.0).weight - f.weight).abs() < 1e-6);
        // Never below the weight it was made with.
        assert!((faded(&f, 3000 * day, 30.0).weight - 0.5).abs() < 1e-5);
        let learned = edge(EdgeType::Similar, "a", "c", 0.4);
        let f = faded(&learned, 60 * day, 30.0);
        assert!((f.weight - 0.1).abs() < 1e-5, "{}", f.weight);
        assert!(faded(&f, 61 * day, 30.0).weight < PRUNE_BELOW);
    }
}
