//! Related entities: two entities one memory names together are linked by a RELATES_TO edge.
//! The first memory to name both makes it at [`FIRST_WEIGHT`]; each further one moves it
//! `hebbian_rate` of the way to 1, like a recall does for memories. It is a learned edge: a
//! pair no longer named together fades away (the edges phase).

use std::collections::HashMap;

use mnemo_protocol::graph::{EdgeType, Node};

use super::BY_CONSOLIDATION;
use crate::store::edges::{edge_id, EdgeRecord};
use crate::store::{col, MemoryRecord, Store, StoreError};

/// A pair first named together.
pub const FIRST_WEIGHT: f32 = 0.3;
/// Names a memory counts pairs among: a long list of names says little about each pair, and
/// pairs grow with the square.
const MAX_NAMES: usize = 12;

/// Pairs of entity keys (namespace, lower key, higher key) each memory names together, with
/// how many memories did and the latest of their times.
pub fn co_mentions(rows: &[MemoryRecord]) -> HashMap<(String, String, String), (i64, i64)> {
    let mut pairs: HashMap<(String, String, String), (i64, i64)> = HashMap::new();
    for r in rows {
        let mut keys: Vec<&String> = r.entities.iter().take(MAX_NAMES).collect();
        keys.sort();
        keys.dedup();
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                let slot = pairs
                    .entry((r.namespace.clone(), (*a).clone(), (*b).clone()))
                    .or_insert((0, r.created_at));
                slot.0 += 1;
                slot.1 = slot.1.max(r.created_at);
            }
        }
    }
    pairs
}

/// The RELATES_TO edge of a pair: `old` (if it exists) strengthened by `times` more
/// co-mentions, or a new one that counts its first at [`FIRST_WEIGHT`].
pub fn related(
    (namespace, a, b): &(String, String, String),
    old: Option<&EdgeRecord>,
    (times, last): (i64, i64),
    rate: f32,
) -> EdgeRecord {
    let (mut e, more) = match old {
        Some(e) => (e.clone(), times),
        None => {
            let e = EdgeRecord::new(
                namespace,
                Node::entity(a),
                Node::entity(b),
                EdgeType::RelatesTo,
                FIRST_WEIGHT,
                BY_CONSOLIDATION,
                last,
            );
            (e, times - 1)
        }
    };
    e.weight = 1.0 - (1.0 - e.weight) * (1.0 - rate).powi(more as i32);
    e.activation_count += times;
    e.last_activated_at = Some(e.last_activated_at.map_or(last, |l| l.max(last)));
    e
}

/// The RELATES_TO edges of the pairs `rows` name together, each existing edge read and
/// strengthened, new ones made.
pub async fn relate(
    store: &Store,
    rows: &[MemoryRecord],
    rate: f32,
) -> Result<Vec<EdgeRecord>, StoreError> {
    let pairs = co_mentions(rows);
    if pairs.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<String> = pairs
        .keys()
        .map(|(ns, a, b)| edge_id(ns, EdgeType::RelatesTo, &Node::entity(a), &Node::entity(b)))
        .collect();
    let mut old: HashMap<String, EdgeRecord> = HashMap::new();
    for chunk in ids.chunks(500) {
        let found = store.edges().rows(&col("id").one_of(chunk)).await?;
        old.extend(found.into_iter().map(|e| (e.id.clone(), e)));
    }
    Ok(pairs
        .iter()
        .zip(&ids)
        .map(|((pair, counts), id)| related(pair, old.get(id), *counts, rate))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::tests::record;

    fn naming(id: &str, at: i64, keys: &[&str]) -> MemoryRecord {
        let mut r = record(id, id, 4);
        r.created_at = at;
        r.entities = keys.iter().map(|k| k.to_string()).collect();
        r
    }

    #[test]
    fn names_said_together_relate_more_each_time() {
        let rows = [
            naming("1", 10, &["melanie", "caroline"]),
            naming("2", 20, &["caroline", "melanie", "melanie"]),
            naming("3", 30, &["caroline"]),
            naming("4", 40, &["oscar", "caroline", "melanie"]),
        ];
        let pairs = co_mentions(&rows);
        let key = |a: &str, b: &str| ("default".to_string(), a.to_string(), b.to_string());
        assert_eq!(pairs.len(), 3);
        assert_eq!(pairs[&key("caroline", "melanie")], (3, 40));
        assert_eq!(pairs[&key("caroline", "oscar")], (1, 40));

        let pair = key("caroline", "melanie");
        let e = related(&pair, None, pairs[&pair], 0.5);
        assert_eq!(e.edge_type, EdgeType::RelatesTo);
        assert_eq!(
            (e.src_id.as_str(), e.dst_id.as_str()),
            ("caroline", "melanie")
        );
        // 0.3, then twice half of the way to 1: 0.65, 0.825.
        assert!((e.weight - 0.825).abs() < 1e-6, "{}", e.weight);
        assert_eq!((e.initial_weight, e.activation_count), (FIRST_WEIGHT, 3));
        // A later block strengthens the same edge.
        let again = related(&pair, Some(&e), (1, 50), 0.5);
        assert_eq!(again.id, e.id);
        assert!((again.weight - 0.9125).abs() < 1e-6, "{}", again.weight);
        assert_eq!(
            (again.activation_count, again.last_activated_at),
            (4, Some(50))
        );
    }

    #[test]
    fn a_long_list_of_names_counts_only_its_first_names() {
        let names: Vec<String> = (0..30).map(|i| format!("n{i:02}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let pairs = co_mentions(&[naming("1", 1, &refs)]);
        assert_eq!(pairs.len(), MAX_NAMES * (MAX_NAMES - 1) / 2);
    }
}
