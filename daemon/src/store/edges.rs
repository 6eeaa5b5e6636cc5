//! The `edges` table (ARCHITECTURE §3): typed, weighted links between memories and the
//! entities they mention. A memory node is its lineage, so an update keeps its links; an
//! entity node is its stored key (a keyed hash in an encrypted store), scoped by the
//! namespace column. Lookups go through B-tree indexes on both ends, upserts through one on
//! the id.

use lancedb::index::scalar::BTreeIndexBuilder;
use lancedb::index::Index;
use lancedb::{Connection, Table};
use mnemo_protocol::graph::{Edge, EdgeType, Node, NodeKind};
use mnemo_protocol::time::format_micros;

use super::column::table_rows;
use super::error::StoreError;
use super::op::WriteOp;
use super::sql::{col, matching, Pred};
use super::tables::open_or_create;

/// The edge types with an entity end, whose ends an encryption keys.
pub const REKEYED: [EdgeType; 2] = [EdgeType::Mentions, EdgeType::RelatesTo];
pub const EDGES: &str = "edges";
/// Most ends one lookup names (larger sets are looked up in chunks).
const LOOKUP_CHUNK: usize = 500;

table_rows! {
    /// One edge as stored. Times are UTC microseconds.
    EdgeRecord {
        /// The namespace, type and both ends ([`EdgeRecord::new`]): one row per such edge.
        id: String,
        namespace: String,
        src_kind: NodeKind,
        src_id: String,
        dst_kind: NodeKind,
        dst_id: String,
        edge_type: EdgeType,
        weight: f32,
        initial_weight: f32,
        activation_count: i64,
        last_activated_at: Option<i64>,
        /// When consolidation last let it fade (it fades from the latest of this, its last
        /// activation and its creation).
        decayed_at: Option<i64>,
        created_at: i64,
        created_by: String,
    }
}

/// An edge's id: one row per namespace, type and pair of ends.
pub fn edge_id(namespace: &str, edge_type: EdgeType, src: &Node, dst: &Node) -> String {
    let (s, d) = (src.kind.as_str(), dst.kind.as_str());
    format!("{namespace}|{edge_type}|{s}:{}|{d}:{}", src.id, dst.id)
}

impl EdgeRecord {
    pub fn new(
        namespace: &str,
        src: Node,
        dst: Node,
        edge_type: EdgeType,
        weight: f32,
        created_by: &str,
        now: i64,
    ) -> Self {
        Self {
            id: edge_id(namespace, edge_type, &src, &dst),
            namespace: namespace.to_string(),
            src_kind: src.kind,
            src_id: src.id,
            dst_kind: dst.kind,
            dst_id: dst.id,
            edge_type,
            weight,
            initial_weight: weight,
            activation_count: 0,
            last_activated_at: None,
            decayed_at: None,
            created_at: now,
            created_by: created_by.to_string(),
        }
    }

    pub fn src(&self) -> Node {
        Node {
            kind: self.src_kind,
            id: self.src_id.clone(),
        }
    }

    pub fn dst(&self) -> Node {
        Node {
            kind: self.dst_kind,
            id: self.dst_id.clone(),
        }
    }

    /// The end that is not `from` (the destination of a loop).
    pub fn other_end(&self, from: &Node) -> Node {
        if self.src_kind == from.kind && self.src_id == from.id {
            self.dst()
        } else {
            self.src()
        }
    }

    pub fn to_protocol(&self) -> Edge {
        Edge {
            src: self.src(),
            dst: self.dst(),
            edge_type: self.edge_type,
            weight: self.weight,
            initial_weight: self.initial_weight,
            activation_count: self.activation_count,
            last_activated_at: self.last_activated_at.map(format_micros),
            created_at: format_micros(self.created_at),
            created_by: self.created_by.clone(),
        }
    }
}

/// Which edges a lookup wants.
#[derive(Debug, Clone, Default)]
pub struct EdgeFilter<'a> {
    pub namespace: Option<&'a str>,
    /// All types when empty.
    pub types: &'a [EdgeType],
    pub min_weight: f32,
}

impl EdgeFilter<'_> {
    fn predicate(&self) -> Pred {
        let mut p = Pred::All;
        if let Some(ns) = self.namespace {
            p = p.and(col("namespace").eq(ns));
        }
        if !self.types.is_empty() {
            let names: Vec<&str> = self.types.iter().map(|t| t.as_str()).collect();
            p = p.and(col("edge_type").one_of(&names));
        }
        if self.min_weight > 0.0 {
            p = p.and(col("weight").ge(self.min_weight as f64));
        }
        p
    }
}

pub struct EdgeTable {
    table: Table,
}

impl EdgeTable {
    pub async fn open(db: &Connection, names: &[String]) -> Result<Self, StoreError> {
        let table = open_or_create(db, names, EDGES, EdgeRecord::schema()).await?;
        let indexed = table.list_indices().await?;
        // The ends for lookups; the id for upserts, which otherwise join against every edge
        // (at 1M memories a 3-edge upsert held the writer for 0.3–1 s).
        for column in ["src_id", "dst_id", "id"] {
            if !indexed
                .iter()
                .any(|i| i.columns.iter().any(|c| c == column))
            {
                table
                    .create_index(&[column], Index::BTree(BTreeIndexBuilder::default()))
                    .train(false)
                    .execute()
                    .await?;
            }
        }
        Ok(Self { table })
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    /// New edges (their ids must be new: a new memory's links). Commits with other appends.
    pub fn append(&self, rows: &[EdgeRecord]) -> Result<WriteOp, StoreError> {
        Ok(WriteOp::Append {
            table: self.table.clone(),
            batch: EdgeRecord::to_batch(rows)?,
        })
    }

    /// Edges written again keep one row each (weights and counts as given).
    pub fn upsert(&self, rows: &[EdgeRecord]) -> Result<WriteOp, StoreError> {
        Ok(WriteOp::Merge {
            table: self.table.clone(),
            on: "id",
            batch: EdgeRecord::to_batch(rows)?,
        })
    }

    /// Deletes every edge with an end among `ids` (memory lineages or entity keys).
    pub fn delete_touching(&self, ids: &[String]) -> WriteOp {
        WriteOp::DeleteWhere {
            table: self.table.clone(),
            predicate: touching(ids),
        }
    }

    /// Deletes the edges of `edge_type` going out of `src` (a memory's mentions, before its
    /// new text's are written).
    pub fn delete_from(&self, src: &str, edge_type: EdgeType) -> WriteOp {
        WriteOp::DeleteWhere {
            table: self.table.clone(),
            predicate: col("src_id")
                .eq(src)
                .and(col("edge_type").eq(edge_type.as_str())),
        }
    }

    /// Deletes the edges with these ids.
    pub fn delete_ids(&self, ids: &[String]) -> WriteOp {
        WriteOp::DeleteWhere {
            table: self.table.clone(),
            predicate: col("id").one_of(ids),
        }
    }

    /// Deletes every edge of `edge_type`.
    pub fn delete_type(&self, edge_type: EdgeType) -> WriteOp {
        WriteOp::DeleteWhere {
            table: self.table.clone(),
            predicate: col("edge_type").eq(edge_type.as_str()),
        }
    }

    /// Every edge with an entity end again with that end keyed by `key` (idempotent): an
    /// encryption leaves no name in the edges either. A pair of entities keeps its lower key
    /// first, as consolidation makes it. Written by deleting each type (`delete_type`) and
    /// appending these (`Store::encrypt`).
    pub async fn rekeyed_entities(
        &self,
        key: &(dyn Fn(&str) -> String + Sync),
    ) -> Result<Vec<EdgeRecord>, StoreError> {
        let mut rekeyed = Vec::new();
        for edge_type in REKEYED {
            let rows = self.rows(&col("edge_type").eq(edge_type.as_str())).await?;
            rekeyed.extend(rows.iter().map(|e| {
                let mut again = e.clone();
                if e.dst_kind == NodeKind::Entity {
                    again.dst_id = key(&e.dst_id);
                }
                if e.src_kind == NodeKind::Entity {
                    again.src_id = key(&e.src_id);
                }
                if again.src_kind == again.dst_kind && again.src_id > again.dst_id {
                    std::mem::swap(&mut again.src_id, &mut again.dst_id);
                }
                again.id = edge_id(&e.namespace, e.edge_type, &again.src(), &again.dst());
                again
            }));
        }
        Ok(rekeyed)
    }

    /// Deletes the RELATES_TO edges of these entities (keys) of `namespace`: entities no
    /// memory mentions any more.
    pub fn delete_related(&self, namespace: &str, keys: &[String]) -> WriteOp {
        WriteOp::DeleteWhere {
            table: self.table.clone(),
            predicate: col("namespace")
                .eq(namespace)
                .and(col("edge_type").eq(EdgeType::RelatesTo.as_str()))
                .and(touching(keys)),
        }
    }

    /// Edges with an end among `ids`, as `filter` allows.
    pub async fn touching(
        &self,
        ids: &[String],
        filter: &EdgeFilter<'_>,
    ) -> Result<Vec<EdgeRecord>, StoreError> {
        let mut found = Vec::new();
        for chunk in ids.chunks(LOOKUP_CHUNK) {
            found.extend(self.rows(&touching(chunk).and(filter.predicate())).await?);
        }
        // An edge whose ends fall in two chunks is found twice.
        if ids.len() > LOOKUP_CHUNK {
            let mut seen = std::collections::HashSet::new();
            found.retain(|e| seen.insert(e.id.clone()));
        }
        Ok(found)
    }

    pub async fn rows(&self, predicate: &Pred) -> Result<Vec<EdgeRecord>, StoreError> {
        let batches = matching(&self.table, predicate, None).await?;
        Ok(batches.iter().flat_map(EdgeRecord::from_batch).collect())
    }
}

fn touching(ids: &[String]) -> Pred {
    col("src_id").one_of(ids).or(col("dst_id").one_of(ids))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_survive_a_batch_and_an_edge_has_one_id() {
        let mention = |weight: f32, now: i64| {
            let (m, maria) = (Node::memory("m1"), Node::entity("maria"));
            EdgeRecord::new("ns", m, maria, EdgeType::Mentions, weight, "ingest", now)
        };
        let (e, again) = (mention(1.0, 7), mention(0.5, 9));
        assert_eq!(e.id, again.id);
        let batch = EdgeRecord::to_batch(std::slice::from_ref(&e)).unwrap();
        assert_eq!(EdgeRecord::from_batch(&batch), vec![e.clone()]);
        assert_eq!(e.other_end(&Node::memory("m1")), Node::entity("maria"));
        assert_eq!(e.other_end(&Node::entity("maria")), Node::memory("m1"));
    }

    #[tokio::test]
    async fn an_edge_between_two_lookup_chunks_is_found_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::test_store(dir.path()).await;
        let ids: Vec<String> = (0..LOOKUP_CHUNK + 2).map(|i| format!("m{i:04}")).collect();
        // From the first chunk to the second.
        let edge = EdgeRecord::new(
            "ns",
            Node::memory(&ids[0]),
            Node::memory(&ids[LOOKUP_CHUNK + 1]),
            EdgeType::TemporalSequence,
            0.5,
            "test",
            1,
        );
        let edges = store.edges();
        store
            .writer()
            .submit(edges.append(std::slice::from_ref(&edge)).unwrap())
            .await
            .unwrap();
        let found = edges.touching(&ids, &EdgeFilter::default()).await.unwrap();
        assert_eq!(found, vec![edge]);
    }
}
