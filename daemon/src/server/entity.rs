//! Handlers of `entity.*`: the entity book's pages, and one entity with the memories that
//! mention it and the entities mentioned with it.

use std::collections::HashMap;
use std::sync::Arc;

use mnemo_protocol::entity::{
    Entity, Get, GetParams, GetResult, List, ListParams, ListResult, MentionedIn, Related,
    MAX_MENTIONS_SHOWN,
};
use mnemo_protocol::graph::{EdgeType, NodeKind};
use mnemo_protocol::memory::MAX_LABEL_BYTES;
use mnemo_protocol::time::format_micros;
use mnemo_protocol::RpcError;

use super::router::Router;
use super::state::{rpc_error, store_error, State};
use crate::error::Error;
use crate::ingest::preview;
use crate::store::edges::EdgeFilter;
use crate::store::filter::current;
use crate::store::{col, MemoryRecord};
use crate::understand::entities::fold;

pub fn register(r: &mut Router) {
    r.register::<List, _, _>(list).register::<Get, _, _>(get);
}

async fn list(engine: Arc<State>, p: ListParams) -> Result<ListResult, RpcError> {
    if p.prefix.as_ref().is_some_and(|x| x.len() > MAX_LABEL_BYTES) {
        return Err(RpcError::invalid_params(format!(
            "prefix is over {MAX_LABEL_BYTES} bytes"
        )));
    }
    let (entities, total, next_cursor) =
        engine.entities.list(&p).map_err(RpcError::invalid_params)?;
    Ok(ListResult {
        entities,
        next_cursor,
        total,
    })
}

async fn get(engine: Arc<State>, p: GetParams) -> Result<GetResult, RpcError> {
    if fold(&p.name).is_empty() || p.name.len() > MAX_LABEL_BYTES {
        return Err(RpcError::invalid_params(format!(
            "`{}` is not an entity name (a name is 1–{MAX_LABEL_BYTES} bytes with a letter or digit)",
            p.name
        )));
    }
    let mut found = engine.entities.named(p.namespace.as_deref(), &p.name);
    let entity = match found.len() {
        0 => {
            return Err(rpc_error(Error::NotFound(format!(
                "no memory{} mentions `{}`; `mnemo entities` lists the names known",
                p.namespace
                    .as_deref()
                    .map(|ns| format!(" in namespace `{ns}`"))
                    .unwrap_or_default(),
                p.name
            ))))
        }
        1 => found.remove(0),
        _ => {
            let namespaces: Vec<String> = found.iter().map(|e| e.namespace.clone()).collect();
            return Err(RpcError::invalid_params(format!(
                "`{}` is known in several namespaces ({}); name one with namespace",
                p.name,
                namespaces.join(", ")
            )));
        }
    };
    let filter = EdgeFilter {
        namespace: Some(&entity.namespace),
        types: &[EdgeType::Mentions],
        min_weight: 0.0,
    };
    // The entity's own mentions and its aliases'.
    let keys = engine.entities.same_as(Some(&entity.namespace), &entity.id);
    let edges = engine
        .store
        .edges()
        .touching(&keys, &filter)
        .await
        .map_err(store_error)?;
    let lineages: Vec<String> = edges
        .iter()
        .filter(|e| e.src_kind == NodeKind::Memory)
        .map(|e| e.src_id.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut memories: Vec<MemoryRecord> = Vec::new();
    for chunk in lineages.chunks(500) {
        let predicate = current().and(col("lineage").one_of(chunk));
        let columns = [
            "id",
            "lineage",
            "content",
            "entities",
            "occurred_at",
            "created_at",
        ];
        memories.extend(
            engine
                .store
                .columns_of(&predicate, &columns)
                .await
                .map_err(store_error)?,
        );
    }
    memories.sort_by_key(|m| std::cmp::Reverse(m.event_time()));
    // Keyed by the entity each key stands for: an alias counts for its entity.
    let mut together: HashMap<String, (Entity, u64)> = HashMap::new();
    for m in &memories {
        let named: HashMap<String, Entity> = m
            .entities
            .iter()
            .filter(|k| !keys.contains(k))
            .filter_map(|k| engine.entities.by_key(&entity.namespace, k))
            .filter(|e| e.id != entity.id)
            .map(|e| (e.id.clone(), e))
            .collect();
        for (id, e) in named {
            together.entry(id).or_insert((e, 0)).1 += 1;
        }
    }
    let relates = EdgeFilter {
        namespace: Some(&entity.namespace),
        types: &[EdgeType::RelatesTo],
        min_weight: 0.0,
    };
    let mut edge_weight: HashMap<String, f32> = HashMap::new();
    for e in engine
        .store
        .edges()
        .touching(std::slice::from_ref(&entity.id), &relates)
        .await
        .map_err(store_error)?
    {
        let other = if e.src_id == entity.id {
            e.dst_id
        } else {
            e.src_id
        };
        edge_weight.insert(other, e.weight);
    }
    let mentions_total = memories.len().max(1) as f32;
    let mut related: Vec<Related> = together
        .into_values()
        .map(|(other, n)| Related {
            edge_weight: edge_weight.get(&other.id).copied(),
            id: other.id,
            name: other.name,
            entity_type: other.entity_type,
            together: n,
            weight: n as f32 / mentions_total,
        })
        .collect();
    related.sort_by(|a, b| b.together.cmp(&a.together).then(a.name.cmp(&b.name)));
    related.truncate(MAX_MENTIONS_SHOWN);
    let mentions = memories
        .iter()
        .take(MAX_MENTIONS_SHOWN)
        .map(|m| MentionedIn {
            memory_id: m.id.clone(),
            at: format_micros(m.event_time()),
            preview: preview(&m.content),
        })
        .collect();
    Ok(GetResult {
        entity,
        mentions,
        related,
    })
}
