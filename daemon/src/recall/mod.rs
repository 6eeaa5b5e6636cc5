//! Recall: vector and full-text candidates, fused, then ranked by relevance, salience,
//! strength and recency, with every component kept for `explain`.

mod rank;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use mnemo_client::protocol::memory::{SearchHit, SearchMode, SearchParams, SearchResult};
use mnemo_client::protocol::time::now_micros;
use mnemo_client::protocol::RpcError;

pub use rank::{fuse_and_rank, Candidate, RankSettings};

use crate::engine::Engine;
use crate::ingest::{embed_error, store_error};
use crate::store::filter::predicate;

pub const MAX_K: usize = 200;
pub const MAX_QUERY_BYTES: usize = 8 * 1024;

/// Appends one access event per result, folded into the rows later by consolidation. It
/// does not delay the answer; an access lost in a crash only costs a little strength.
pub fn record_access(engine: &Arc<Engine>, ids: Vec<String>) {
    if ids.is_empty() {
        return;
    }
    let engine = engine.clone();
    tokio::spawn(async move {
        let batch = match crate::store::runs::access_batch(&ids, now_micros()) {
            Ok(b) => b,
            Err(e) => return tracing::warn!("access events: {e}"),
        };
        let op = crate::store::WriteOp::Append {
            table: engine.store.runs().access_log.clone(),
            batch,
        };
        if let Err(e) = engine.store.writer().submit(op).await {
            tracing::debug!("access events not recorded: {e}");
        }
    });
}

pub async fn search(engine: &Arc<Engine>, p: SearchParams) -> Result<SearchResult, RpcError> {
    let started = Instant::now();
    if p.query.trim().is_empty() {
        return Err(RpcError::invalid_params(
            "query is empty; say what to search for",
        ));
    }
    if p.query.len() > MAX_QUERY_BYTES {
        return Err(RpcError::invalid_params(format!(
            "query is over {MAX_QUERY_BYTES} bytes"
        )));
    }
    let k = p.k.unwrap_or(engine.config.search.default_k);
    if k == 0 || k > MAX_K {
        return Err(RpcError::invalid_params(format!(
            "k is {k}; it must be 1–{MAX_K}"
        )));
    }
    let predicate = predicate(&p.filter).map_err(|e| RpcError::invalid_params(e.to_string()))?;
    let pool = (k * engine.config.search.candidate_factor).max(50);
    let store = &engine.store;

    let vector_hits = async {
        if p.mode == SearchMode::Text {
            return Ok(Vec::new());
        }
        let vector = engine
            .embed
            .embed_one(p.query.clone())
            .await
            .map_err(embed_error)?;
        store
            .vector_search(&vector, &predicate, pool)
            .await
            .map_err(store_error)
    };
    let text_hits = async {
        if p.mode == SearchMode::Vector || !store.ensure_text_index().await.map_err(store_error)? {
            return Ok(Vec::new());
        }
        store
            .text_search(&p.query, &predicate, pool)
            .await
            .map_err(store_error)
    };
    let (vector_hits, text_hits) = tokio::try_join!(vector_hits, text_hits)?;

    let mut candidates: HashMap<String, Candidate> = HashMap::new();
    for (rank, hit) in vector_hits.into_iter().enumerate() {
        let c = candidates
            .entry(hit.record.id.clone())
            .or_insert_with(|| Candidate::new(hit.record));
        c.vector_rank = Some(rank + 1);
        c.vector_similarity = Some(1.0 - hit.raw);
    }
    for (rank, hit) in text_hits.into_iter().enumerate() {
        let c = candidates
            .entry(hit.record.id.clone())
            .or_insert_with(|| Candidate::new(hit.record));
        c.text_rank = Some(rank + 1);
        c.text_score = Some(hit.raw);
    }
    let settings = RankSettings::from_config(&engine.config.search, p.mode);
    let ranked = fuse_and_rank(candidates.into_values().collect(), &settings, now_micros());
    let hits = ranked
        .into_iter()
        .take(k)
        .map(|(candidate, explain)| SearchHit {
            memory: candidate.record.to_protocol(),
            score: explain.score,
            explain: p.explain.then_some(explain),
        })
        .collect::<Vec<SearchHit>>();
    record_access(engine, hits.iter().map(|h| h.memory.id.clone()).collect());
    engine
        .searches
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Ok(SearchResult {
        hits,
        mode: p.mode,
        embedder: engine.embedder_label(),
        took_ms: started.elapsed().as_secs_f64() * 1000.0,
    })
}
