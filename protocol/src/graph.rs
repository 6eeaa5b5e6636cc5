//! `graph.*` methods: the typed, weighted links between memories and the entities they
//! mention. A memory node is its lineage (every version of a memory is one node); an entity
//! node is the entity's key within its namespace.

use serde::{Deserialize, Serialize};

/// Deepest walk `graph.neighbors` and `graph.path` take.
pub const MAX_DEPTH: usize = 3;
/// Most nodes one graph answer holds.
pub const MAX_NODES: usize = 500;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    #[default]
    Memory,
    Entity,
}

impl NodeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Entity => "entity",
        }
    }
}

impl std::str::FromStr for NodeKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "memory" => Ok(Self::Memory),
            "entity" => Ok(Self::Entity),
            _ => Err(format!(
                "unknown node kind `{s}`; expected memory or entity"
            )),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Node {
    pub kind: NodeKind,
    /// A memory's lineage (any version's id is accepted in requests), or an entity's key.
    pub id: String,
}

impl Node {
    pub fn memory(id: impl Into<String>) -> Self {
        Self {
            kind: NodeKind::Memory,
            id: id.into(),
        }
    }
    pub fn entity(id: impl Into<String>) -> Self {
        Self {
            kind: NodeKind::Entity,
            id: id.into(),
        }
    }
}

crate::name_set! {
    /// What an edge says about its two ends.
    EdgeType, "edge type" {
        /// A memory names an entity.
        Mentions = "MENTIONS",
        /// Two entities named together.
        RelatesTo = "RELATES_TO",
        Supports = "SUPPORTS",
        Contradicts = "CONTRADICTS",
        /// A newer statement replaces an older one.
        Updates = "UPDATES",
        Extends = "EXTENDS",
        /// A memory made from others (a summary).
        Derives = "DERIVES",
        /// One memory follows another in the same session.
        TemporalSequence = "TEMPORAL_SEQUENCE",
        Causal = "CAUSAL",
        /// Close in meaning (formed by consolidation).
        Similar = "SIMILAR",
        /// Recalled together; also the least specific type, for a stored value this build
        /// does not know.
        #[default]
        Associated = "ASSOCIATED",
    }
}

/// One edge as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Edge {
    pub src: Node,
    pub dst: Node,
    #[serde(rename = "type")]
    pub edge_type: EdgeType,
    pub weight: f32,
    pub initial_weight: f32,
    pub activation_count: i64,
    pub last_activated_at: Option<String>,
    pub created_at: String,
    /// `ingest`, `consolidation`, …
    pub created_by: String,
}

/// A node reached by a walk, with what it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeInfo {
    #[serde(flatten)]
    pub node: Node,
    /// Steps from the start.
    pub depth: usize,
    /// A memory's first line, or an entity's name where the store can read it (an encrypted
    /// store keeps only a keyed hash of a name).
    pub label: String,
}

/// The nodes within `depth` steps of `node`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeighborsParams {
    pub node: Node,
    /// Needed for an entity (its key is per namespace); a memory knows its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Only these edge types (all when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub types: Vec<EdgeType>,
    /// Only edges at least this strong, 0–1 (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_weight: Option<f32>,
    /// 1–3 (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<usize>,
    /// Most nodes answered, 1–500 (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NeighborsResult {
    /// The start first, then by depth.
    pub nodes: Vec<NodeInfo>,
    pub edges: Vec<Edge>,
    /// More nodes were in reach than `limit`.
    pub truncated: bool,
}

/// The strongest chain of edges between two nodes: each step costs `1 - ln(weight)`, so a
/// short path of strong edges wins.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathParams {
    pub from: Node,
    pub to: Node,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub types: Vec<EdgeType>,
    /// Longest path looked for, 1–3 steps (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<usize>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PathResult {
    /// From `from` to `to`; empty when no path within `max_depth` exists.
    pub nodes: Vec<NodeInfo>,
    /// The edge of each step, in order.
    pub edges: Vec<Edge>,
    pub cost: Option<f32>,
}

crate::methods! {
    Neighbors = "graph.neighbors" (NeighborsParams) -> NeighborsResult;
    Path = "graph.path" (PathParams) -> PathResult;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_types_read_in_any_case_and_travel_upper() {
        assert_eq!(
            "temporal-sequence".parse::<EdgeType>(),
            Ok(EdgeType::TemporalSequence)
        );
        assert_eq!(
            serde_json::to_value(EdgeType::Mentions).unwrap(),
            serde_json::json!("MENTIONS")
        );
        assert!("LIKES"
            .parse::<EdgeType>()
            .unwrap_err()
            .contains("MENTIONS"));
    }
}
