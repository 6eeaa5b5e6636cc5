//! Walks over the edges: the nodes near a node, the strongest path between two, and the
//! spread recall uses: a result lends part of its score to what sits beside it (the turns
//! around it in its conversation), so the answer said a line later is found with the question.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use mnemo_protocol::graph::{EdgeType, Node};

use crate::held::{Held, Steps};
use crate::store::edges::{EdgeFilter, EdgeRecord};
use crate::store::{Store, StoreError};

/// Most nodes a path search gathers before it gives up (a name every memory mentions
/// connects everything within two steps).
pub const MAX_PATH_SEARCH_NODES: usize = 20_000;
/// Nodes a spread gathers per seed and step at most, so a memory with many neighbours
/// cannot make a search slow.
const SPREAD_FAN_OUT: usize = 8;

pub struct Graph {
    store: Arc<Store>,
    held: Arc<Held>,
}

/// The nodes a walk reached, each with its depth, the start first.
#[derive(Debug, Default)]
pub struct Reached {
    pub nodes: Vec<(Node, usize)>,
    /// Edges among the reached nodes.
    pub edges: Vec<EdgeRecord>,
    /// More nodes were in reach than the limit allowed.
    pub truncated: bool,
}

/// What a node drew from the results beside it: the best of `score × edge weights ×
/// decay^(steps-1)` over the seeds, and the seed it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Spread {
    pub value: f32,
    pub via: String,
}

impl Graph {
    pub fn new(held: Arc<Held>) -> Self {
        Self {
            store: held.store().clone(),
            held,
        }
    }

    /// Breadth first from `starts` over edges `filter` allows, `depth` steps, at most
    /// `limit` nodes (the starts included).
    pub async fn reach(
        &self,
        starts: &[Node],
        filter: &EdgeFilter<'_>,
        depth: usize,
        limit: usize,
    ) -> Result<Reached, StoreError> {
        let mut reached = Reached::default();
        let mut seen: HashSet<String> = HashSet::new();
        for s in starts {
            if seen.insert(s.id.clone()) {
                reached.nodes.push((s.clone(), 0));
            }
        }
        let mut frontier: Vec<String> = seen.iter().cloned().collect();
        let mut edges: HashMap<String, EdgeRecord> = HashMap::new();
        for d in 1..=depth {
            if frontier.is_empty() {
                break;
            }
            let from: HashSet<&str> = frontier.iter().map(String::as_str).collect();
            let mut next = Vec::new();
            for e in self.store.edges().touching(&frontier, filter).await? {
                let other = if from.contains(e.src_id.as_str()) {
                    e.dst()
                } else {
                    e.src()
                };
                if !seen.contains(&other.id) {
                    if reached.nodes.len() >= limit {
                        reached.truncated = true;
                        continue;
                    }
                    seen.insert(other.id.clone());
                    next.push(other.id.clone());
                    reached.nodes.push((other, d));
                }
                edges.insert(e.id.clone(), e);
            }
            frontier = next;
        }
        let mut edges: Vec<EdgeRecord> = edges
            .into_values()
            .filter(|e| seen.contains(&e.src_id) && seen.contains(&e.dst_id))
            .collect();
        edges.sort_by(|a, b| b.weight.total_cmp(&a.weight).then(a.id.cmp(&b.id)));
        reached.edges = edges;
        Ok(reached)
    }

    /// The cheapest path of at most `max_depth` steps from `from` to `to`, each step costing
    /// `1 - ln(weight)`: the nodes, the edge of each step, and the cost. `Ok(None)` when there
    /// is none; an error when the search would gather more than it may.
    pub async fn path(
        &self,
        from: &Node,
        to: &Node,
        filter: &EdgeFilter<'_>,
        max_depth: usize,
    ) -> Result<Option<(Vec<Node>, Vec<EdgeRecord>, f32)>, PathError> {
        let reached = self
            .reach(
                std::slice::from_ref(from),
                filter,
                max_depth,
                MAX_PATH_SEARCH_NODES,
            )
            .await?;
        if reached.truncated {
            return Err(PathError::TooLarge);
        }
        Ok(cheapest_path(&reached.edges, from, to, max_depth))
    }

    /// What the nodes near `seeds` (lineage, score) draw from them over edges of `types`
    /// (between memories) at least `min_weight` strong, `hops` steps out.
    pub async fn spread(
        &self,
        seeds: &[(String, f32)],
        types: &[EdgeType],
        hops: usize,
        decay: f32,
        min_weight: f32,
    ) -> Result<HashMap<String, Spread>, StoreError> {
        if seeds.is_empty() || hops == 0 || types.is_empty() {
            return Ok(HashMap::new());
        }
        // A conversation has two neighbours a step; similar memories a few more.
        let limit = seeds.len() * (SPREAD_FAN_OUT * hops + 1) + 1;
        let lineages: Vec<String> = seeds.iter().map(|(id, _)| id.clone()).collect();
        let steps = Steps {
            types,
            min_weight,
            depth: hops,
            limit,
        };
        if let Some(edges) = self.held.edges_near(&lineages, &steps) {
            return Ok(spread(seeds, &edges, hops, decay));
        }
        tracing::debug!("spread: the edges are not held in memory; walking them in Lance");
        let starts: Vec<Node> = lineages.into_iter().map(Node::memory).collect();
        let filter = EdgeFilter {
            namespace: None,
            types,
            min_weight,
        };
        let reached = self.reach(&starts, &filter, hops, limit).await?;
        let edges: Vec<(String, String, f32)> = reached
            .edges
            .into_iter()
            .map(|e| (e.src_id, e.dst_id, e.weight))
            .collect();
        Ok(spread(seeds, &edges, hops, decay))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("too large")]
    TooLarge,
}

/// Bellman–Ford bounded by steps: the cheapest way to `to` in at most `max_depth` edges.
fn cheapest_path(
    edges: &[EdgeRecord],
    from: &Node,
    to: &Node,
    max_depth: usize,
) -> Option<(Vec<Node>, Vec<EdgeRecord>, f32)> {
    let cost = |e: &EdgeRecord| 1.0 - e.weight.clamp(0.01, 1.0).ln();
    // best[node] = (cost, steps back: (previous node, edge index))
    let mut best: HashMap<String, (f32, Option<(String, usize)>)> = HashMap::new();
    best.insert(from.id.clone(), (0.0, None));
    for _ in 0..max_depth {
        let mut improved = best.clone();
        for (i, e) in edges.iter().enumerate() {
            for (a, b) in [(&e.src_id, &e.dst_id), (&e.dst_id, &e.src_id)] {
                let Some((c, _)) = best.get(a) else { continue };
                let through = c + cost(e);
                if improved.get(b).is_none_or(|(old, _)| through < *old) {
                    improved.insert(b.clone(), (through, Some((a.clone(), i))));
                }
            }
        }
        best = improved;
    }
    let (total, _) = best.get(&to.id)?;
    let mut nodes = vec![to.clone()];
    let mut steps = Vec::new();
    let mut at = to.id.clone();
    while let Some((_, Some((prev, i)))) = best.get(&at) {
        let e = &edges[*i];
        nodes.push(e.other_end(nodes.last().expect("a node")));
        steps.push(e.clone());
        at = prev.clone();
        if steps.len() > max_depth {
            return None;
        }
    }
    nodes.reverse();
    steps.reverse();
    Some((nodes, steps, *total))
}

/// What every node within `hops` of a seed draws from it (see [`Spread`]); seeds draw from
/// each other too. Edges are walked both ways.
pub fn spread(
    seeds: &[(String, f32)],
    edges: &[(String, String, f32)],
    hops: usize,
    decay: f32,
) -> HashMap<String, Spread> {
    let mut next_to: HashMap<&str, Vec<(&str, f32)>> = HashMap::new();
    for (src, dst, weight) in edges {
        next_to.entry(src).or_default().push((dst, *weight));
        next_to.entry(dst).or_default().push((src, *weight));
    }
    let mut out: HashMap<String, Spread> = HashMap::new();
    for (seed, score) in seeds {
        let mut frontier: Vec<(&str, f32)> = vec![(seed, *score)];
        let mut visited: HashSet<&str> = HashSet::from([seed.as_str()]);
        for step in 0..hops {
            let factor = if step == 0 { 1.0 } else { decay };
            let mut next = Vec::new();
            for (node, value) in frontier {
                for (other, weight) in next_to.get(node).into_iter().flatten() {
                    if !visited.insert(other) {
                        continue;
                    }
                    let v = value * weight * factor;
                    next.push((*other, v));
                    let slot = out.entry(other.to_string()).or_insert(Spread {
                        value: 0.0,
                        via: seed.clone(),
                    });
                    if v > slot.value {
                        *slot = Spread {
                            value: v,
                            via: seed.clone(),
                        };
                    }
                }
            }
            frontier = next;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(a: &str, b: &str, w: f32) -> EdgeRecord {
        let mut e = EdgeRecord::new(
            "ns",
            Node::memory(a),
            Node::memory(b),
            EdgeType::TemporalSequence,
            w,
            "test",
            0,
        );
        e.weight = w;
        e
    }

    fn mention(m: &str, entity: &str) -> EdgeRecord {
        EdgeRecord::new(
            "ns",
            Node::memory(m),
            Node::entity(entity),
            EdgeType::Mentions,
            1.0,
            "test",
            0,
        )
    }

    #[test]
    fn spread_fades_with_steps_and_weights_and_keeps_the_best_seed() {
        // a - b - c - d, and e - f weakly.
        let edges: Vec<(String, String, f32)> = [
            seq("a", "b", 1.0),
            seq("b", "c", 1.0),
            seq("c", "d", 1.0),
            seq("e", "f", 0.5),
        ]
        .into_iter()
        .map(|e| (e.src_id, e.dst_id, e.weight))
        .collect();
        let seeds = [
            ("a".to_string(), 0.8),
            ("d".to_string(), 0.4),
            ("e".into(), 1.0),
        ];
        let s = spread(&seeds, &edges, 2, 0.5);
        let v = |n: &str| s.get(n).map(|x| (x.value, x.via.as_str()));
        assert_eq!(v("b"), Some((0.8, "a")));
        // c: two steps from a (0.8 × 0.5) or one from d (0.4): a's is as good, first kept.
        assert_eq!(v("c"), Some((0.4, "a")));
        assert_eq!(v("f"), Some((0.5, "e")));
        // Seeds lend to each other only through edges: a and d are three steps apart.
        assert_eq!(v("a"), None);
        assert_eq!(v("d"), None);
        assert!(spread(&seeds, &edges, 0, 0.5).is_empty());
    }

    #[test]
    fn the_cheapest_path_prefers_strong_edges_within_the_depth() {
        let edges = [
            mention("m1", "maria"),
            mention("m2", "maria"),
            seq("m1", "m3", 0.2),
            seq("m3", "m2", 0.2),
        ];
        let (nodes, steps, cost) =
            cheapest_path(&edges, &Node::memory("m1"), &Node::memory("m2"), 3).unwrap();
        let ids: Vec<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, ["m1", "maria", "m2"]);
        assert_eq!(nodes[1], Node::entity("maria"));
        assert_eq!(steps.len(), 2);
        assert!((cost - 2.0).abs() < 1e-6, "{cost}");
        assert!(cheapest_path(&edges, &Node::memory("m1"), &Node::memory("m2"), 1).is_none());
        assert!(cheapest_path(&edges, &Node::memory("m1"), &Node::memory("zz"), 3).is_none());
    }
}
