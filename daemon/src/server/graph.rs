//! Handlers of `graph.*`: requests name nodes as people do (any version's id, an entity's
//! name in any case); answers label them.

use std::collections::HashMap;
use std::sync::Arc;

use mnemo_protocol::graph::{
    EdgeType, Neighbors, NeighborsParams, NeighborsResult, Node, NodeInfo, NodeKind, Path,
    PathParams, PathResult, MAX_DEPTH, MAX_NODES,
};
use mnemo_protocol::memory::{DEFAULT_NAMESPACE, MAX_LABEL_BYTES};
use mnemo_protocol::RpcError;

use super::router::Router;
use super::state::{rpc_error, store_error, State};
use crate::error::Error;
use crate::graph::walk::{PathError, MAX_PATH_SEARCH_NODES};
use crate::ingest::preview;
use crate::store::edges::EdgeFilter;
use crate::store::filter::current;
use crate::store::{col, MemoryRecord};
use crate::understand::entities::fold;

pub fn register(r: &mut Router) {
    r.register::<Neighbors, _, _>(neighbors)
        .register::<Path, _, _>(path);
}

fn invalid(message: String) -> RpcError {
    RpcError::invalid_params(message)
}

fn check_depth(what: &str, depth: usize) -> Result<usize, RpcError> {
    if (1..=MAX_DEPTH).contains(&depth) {
        Ok(depth)
    } else {
        Err(invalid(format!(
            "{what} is {depth}; graph walks take 1–{MAX_DEPTH} steps"
        )))
    }
}

fn check_weight(min_weight: Option<f32>) -> Result<f32, RpcError> {
    match min_weight {
        None => Ok(0.0),
        Some(w) if (0.0..=1.0).contains(&w) => Ok(w),
        Some(w) => Err(invalid(format!("min_weight is {w}; edge weights are 0–1"))),
    }
}

/// A node as stored, with its namespace: a memory by its lineage, an entity by its key.
async fn resolve(
    engine: &State,
    node: &Node,
    namespace: Option<&str>,
) -> Result<(Node, String), RpcError> {
    match node.kind {
        NodeKind::Memory => {
            let found = engine.store.get(&node.id).await.map_err(store_error)?;
            let r = found.ok_or_else(|| rpc_error(Error::memory_not_found(&node.id)))?;
            Ok((Node::memory(r.lineage), r.namespace))
        }
        NodeKind::Entity => {
            let folded = fold(&node.id);
            if folded.is_empty() || node.id.len() > MAX_LABEL_BYTES {
                return Err(invalid(format!(
                    "`{}` is not an entity name (a name is 1–{MAX_LABEL_BYTES} bytes with a letter or digit)",
                    node.id
                )));
            }
            let key = if node.id.starts_with('#') {
                node.id.clone()
            } else {
                engine.store.entity_key(&folded)
            };
            let ns = namespace.unwrap_or(DEFAULT_NAMESPACE).to_string();
            Ok((Node::entity(key), ns))
        }
    }
}

/// Labels and depths for the nodes of a walk: a memory's first line, an entity's name.
async fn describe(
    engine: &State,
    namespace: &str,
    nodes: &[(Node, usize)],
) -> Result<Vec<NodeInfo>, RpcError> {
    let lineages: Vec<String> = nodes
        .iter()
        .filter(|(n, _)| n.kind == NodeKind::Memory)
        .map(|(n, _)| n.id.clone())
        .collect();
    let mut texts: HashMap<String, String> = HashMap::new();
    for chunk in lineages.chunks(500) {
        let rows: Vec<MemoryRecord> = engine
            .store
            .columns_of(
                &current().and(col("lineage").one_of(chunk)),
                &["lineage", "content"],
            )
            .await
            .map_err(store_error)?;
        texts.extend(rows.into_iter().map(|r| (r.lineage, preview(&r.content))));
    }
    Ok(nodes
        .iter()
        .map(|(node, depth)| NodeInfo {
            label: match node.kind {
                NodeKind::Memory => texts.get(&node.id).cloned().unwrap_or_default(),
                NodeKind::Entity => engine
                    .entities
                    .by_key(namespace, &node.id)
                    .map_or_else(|| node.id.clone(), |e| e.name),
            },
            node: node.clone(),
            depth: *depth,
        })
        .collect())
}

async fn neighbors(engine: Arc<State>, p: NeighborsParams) -> Result<NeighborsResult, RpcError> {
    let depth = check_depth("depth", p.depth.unwrap_or(1))?;
    let limit = p.limit.unwrap_or(100);
    if !(1..=MAX_NODES).contains(&limit) {
        return Err(invalid(format!(
            "limit is {limit}; it must be 1–{MAX_NODES}"
        )));
    }
    let min_weight = check_weight(p.min_weight)?;
    let (start, namespace) = resolve(&engine, &p.node, p.namespace.as_deref()).await?;
    let filter = EdgeFilter {
        namespace: Some(&namespace),
        types: &p.types,
        min_weight,
    };
    let reached = engine
        .graph
        .reach(&[start], &filter, depth, limit)
        .await
        .map_err(store_error)?;
    if p.node.kind == NodeKind::Entity && reached.nodes.len() == 1 && reached.edges.is_empty() {
        return Err(rpc_error(Error::NotFound(format!(
            "no memory in namespace `{namespace}` mentions `{}` (or no edge of the asked types reaches it)",
            p.node.id
        ))));
    }
    Ok(NeighborsResult {
        nodes: describe(&engine, &namespace, &reached.nodes).await?,
        edges: reached.edges.iter().map(|e| e.to_protocol()).collect(),
        truncated: reached.truncated,
    })
}

async fn path(engine: Arc<State>, p: PathParams) -> Result<PathResult, RpcError> {
    let max_depth = check_depth("max_depth", p.max_depth.unwrap_or(MAX_DEPTH))?;
    let (from, namespace) = resolve(&engine, &p.from, p.namespace.as_deref()).await?;
    let (to, other) = resolve(&engine, &p.to, Some(&namespace)).await?;
    if other != namespace {
        return Err(invalid(format!(
            "the two nodes are in different namespaces (`{namespace}` and `{other}`); the graph does not cross namespaces"
        )));
    }
    let filter = EdgeFilter {
        namespace: Some(&namespace),
        types: &p.types,
        min_weight: 0.0,
    };
    let found = match engine.graph.path(&from, &to, &filter, max_depth).await {
        Ok(found) => found,
        Err(PathError::Store(e)) => return Err(store_error(e)),
        Err(PathError::TooLarge) => {
            return Err(invalid(format!(
                "more than {MAX_PATH_SEARCH_NODES} nodes lie within {max_depth} steps of `{}`; ask for fewer steps (max_depth) or name edge types (e.g. {})",
                p.from.id,
                EdgeType::TemporalSequence
            )))
        }
    };
    let Some((nodes, edges, cost)) = found else {
        return Ok(PathResult {
            nodes: Vec::new(),
            edges: Vec::new(),
            cost: None,
        });
    };
    let with_depth: Vec<(Node, usize)> =
        nodes.into_iter().enumerate().map(|(i, n)| (n, i)).collect();
    Ok(PathResult {
        nodes: describe(&engine, &namespace, &with_depth).await?,
        edges: edges.iter().map(|e| e.to_protocol()).collect(),
        cost: Some(cost),
    })
}
