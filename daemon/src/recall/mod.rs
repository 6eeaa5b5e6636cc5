//! Recall: vector and full-text candidates, fused, then ranked by relevance, salience,
//! strength, recency, the entities the query names and the time it names; then the best few lend part of their
//! score to the memories beside them in the graph (which may join the candidates), and all
//! are ranked again. Every component is kept for `explain`.

mod asked;
mod rank;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use mnemo_protocol::memory::{
    Filter, ScoreExplain, SearchHit, SearchMode, SearchParams, SearchResult,
};
use mnemo_protocol::time::{now_micros, parse_micros};

pub use rank::{fuse_and_rank, time_match, Candidate, RankSettings};

use crate::access::AccessRecorder;
use crate::config::SearchConfig;
use crate::embed::EmbedService;
use crate::error::{Error, Result};
use crate::graph::{entity_match, subject_match, EntityBook, Gazetteer, Graph};
use crate::held::Held;
use crate::knowledge::Knowledge;
use crate::store::filter::predicate;
use crate::store::{Pred, Store};
use crate::understand::dates;
use crate::usermodel::UserModel;

pub const MAX_K: usize = 200;
pub const MAX_QUERY_BYTES: usize = 8 * 1024;

/// Retrieval and what it needs: the store, the embedder for queries, the ranking settings
/// and the recorder every answered memory is reported to.
pub struct Recall {
    store: Arc<Store>,
    /// What is held in memory of the current memories: each leg asks it first.
    held: Arc<Held>,
    embed: EmbedService,
    access: AccessRecorder,
    /// The entities a query names, and how rare each is.
    names: Arc<Gazetteer>,
    /// The aliases of each.
    entities: Arc<EntityBook>,
    graph: Arc<Graph>,
    /// Which memories state facts newer ones replaced.
    usermodel: Arc<UserModel>,
    config: SearchConfig,
    /// Searches answered since start.
    searches: AtomicU64,
    /// The last queries' vectors: context building asks for the vector of the query it just
    /// searched for, and agents repeat queries.
    recent_queries: std::sync::Mutex<std::collections::VecDeque<(String, Vec<f32>)>>,
}

/// Query vectors kept.
const RECENT_QUERIES: usize = 32;

impl Recall {
    pub fn new(
        held: Arc<Held>,
        embed: EmbedService,
        access: AccessRecorder,
        knowledge: Knowledge,
        graph: Arc<Graph>,
        config: SearchConfig,
    ) -> Self {
        let Knowledge {
            names,
            entities,
            usermodel,
        } = knowledge;
        Self {
            store: held.store().clone(),
            held,
            embed,
            access,
            names,
            entities,
            graph,
            usermodel,
            config,
            searches: AtomicU64::new(0),
            recent_queries: Default::default(),
        }
    }

    /// The configured embedder's vector of `query`, embedded once for a few repeats.
    pub async fn query_vector(&self, query: &str) -> Result<Vec<f32>> {
        let recent = |q: &str| {
            let held = self
                .recent_queries
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            held.iter().find(|(t, _)| t == q).map(|(_, v)| v.clone())
        };
        if let Some(v) = recent(query) {
            return Ok(v);
        }
        let vector = self.embed.embed_one(query.to_string()).await?;
        let mut held = self
            .recent_queries
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if held.len() >= RECENT_QUERIES {
            held.pop_front();
        }
        held.push_back((query.to_string(), vector.clone()));
        Ok(vector)
    }

    pub fn searches(&self) -> u64 {
        self.searches.load(Ordering::Relaxed)
    }

    pub async fn search(&self, p: SearchParams) -> Result<SearchResult> {
        let started = Instant::now();
        if p.query.trim().is_empty() {
            return Err(Error::invalid("query is empty; say what to search for"));
        }
        if p.query.len() > MAX_QUERY_BYTES {
            return Err(Error::invalid(format!(
                "query is over {MAX_QUERY_BYTES} bytes"
            )));
        }
        let k = p.k.unwrap_or(self.config.default_k);
        if k == 0 || k > MAX_K {
            return Err(Error::invalid(format!("k is {k}; it must be 1–{MAX_K}")));
        }
        let predicate = predicate(&p.filter).map_err(|e| Error::invalid(e.to_string()))?;
        let pool = candidate_pool(k, self.config.candidate_factor);
        let (store, held) = (&self.store, &self.held);
        // The values held in memory answer for current memories by namespace; other
        // filters and the past go through Lance.
        let plain_filter = Filter {
            namespace: None,
            ..p.filter.clone()
        }
        .is_empty();
        let held_namespace = plain_filter.then_some(p.filter.namespace.as_deref());

        let namespace = p.filter.namespace.as_deref();
        let mut named = if self.config.entity_weight > 0.0 || self.config.subject_weight > 0.0 {
            self.names.query_entities(namespace, &p.query)
        } else {
            Vec::new()
        };
        for q in &mut named {
            q.aliases = self.entities.same_as(namespace, &q.key);
        }
        // Both retrievers are asked without the names most memories mention; the entity
        // component ranks by them.
        let bare = asked::without_common_names(&p.query, &named, self.config.common_name_share);
        let legs_query = bare.as_deref().unwrap_or(&p.query);
        if let Some(bare) = &bare {
            tracing::debug!("search: the retrievers are asked {bare:?}");
        }
        // Vectors of the configured model only (rows waiting to be re-embedded are found by
        // their words meanwhile).
        let vector_hits = async {
            if p.mode == SearchMode::Text {
                return Ok::<_, Error>(Vec::new());
            }
            let vector = self.query_vector(legs_query).await?;
            let embedded = started.elapsed();
            let hits = if plain_filter && !p.exact {
                held.nearest_current(&vector, namespace, &predicate, pool)
                    .await?
            } else {
                store
                    .vector_search(&vector, &predicate, pool, p.exact)
                    .await?
            };
            tracing::debug!(
                "search: query embedded in {:.1} ms, vector leg done at {:.1} ms",
                ms(embedded),
                ms(started.elapsed())
            );
            Ok(hits)
        };
        // The writer builds the full-text index with the first rows; a search never does.
        let text_hits = async {
            if p.mode == SearchMode::Vector || !store.text_index_ready() {
                return Ok::<_, Error>(Vec::new());
            }
            let words = asked::without_question_words(legs_query);
            let words = words.as_deref().unwrap_or(legs_query);
            let hits = held
                .text_search(words, &predicate, pool, held_namespace)
                .await?;
            tracing::debug!("search: text leg done at {:.1} ms", ms(started.elapsed()));
            Ok(hits)
        };
        let (vector_hits, text_hits) = tokio::try_join!(vector_hits, text_hits)?;
        let retrieved = started.elapsed();

        let mut candidates: HashMap<String, Candidate> = HashMap::new();
        for (rank, hit) in vector_hits.into_iter().enumerate() {
            let c = candidates
                .entry(hit.record.id.clone())
                .or_insert_with(|| Candidate::found(hit.record, hit.row_id));
            c.vector_rank = Some(rank + 1);
            c.vector_similarity = Some(1.0 - hit.raw);
        }
        for (rank, hit) in text_hits.into_iter().enumerate() {
            let c = candidates
                .entry(hit.record.id.clone())
                .or_insert_with(|| Candidate::found(hit.record, hit.row_id));
            c.text_rank = Some(rank + 1);
            c.text_score = Some(hit.raw);
        }
        // "last week" in a query means the week before the time the store is seen at.
        let now = now_micros();
        let seen_at = p.filter.as_of.as_deref().and_then(|t| parse_micros(t).ok());
        let asked = if self.config.time_weight > 0.0 {
            dates::find(&p.query, seen_at.unwrap_or(now))
        } else {
            None
        };
        let name_them = |c: &mut Candidate| {
            if !named.is_empty() {
                c.entity = entity_match(&named, &c.record.entities);
                c.subject = subject_match(&named, &c.record.entities);
            }
            if let Some(span) = &asked {
                c.time = time_match(span.start, span.end, &c.record);
            }
        };
        candidates.values_mut().for_each(name_them);
        let settings = RankSettings::from_config(&self.config, p.mode);
        let mut ranked = fuse_and_rank(candidates.into_values().collect(), &settings, now);
        let wanted = |ranked: &[(Candidate, ScoreExplain)]| -> Vec<(String, Option<u64>)> {
            ranked
                .iter()
                .take(k)
                .map(|(c, _)| (c.record.id.clone(), c.row_id))
                .collect()
        };
        // The rows of the best k are read while the graph is walked: most stay among the
        // best, and the few the graph brings in are read after.
        let mut rows = HashMap::new();
        if self.config.graph_weight > 0.0 && !ranked.is_empty() {
            let first = wanted(&ranked);
            let (spread, first_rows) = tokio::join!(
                async {
                    let spread = self.spread(ranked, &predicate, held_namespace).await;
                    tracing::debug!("search: graph spread at {:.1} ms", ms(started.elapsed()));
                    spread
                },
                async {
                    let rows = held.complete(&first).await;
                    tracing::debug!("search: best rows read at {:.1} ms", ms(started.elapsed()));
                    rows
                }
            );
            let mut candidates = spread?;
            rows = first_rows?;
            candidates
                .iter_mut()
                .filter(|c| c.vector_rank.is_none() && c.text_rank.is_none())
                .for_each(name_them);
            ranked = fuse_and_rank(candidates, &settings, now);
        }
        let mut ranked = self.lower_superseded(ranked, seen_at.is_some());
        tracing::debug!(
            "search: retrieved at {:.1} ms, ranked with the graph at {:.1} ms",
            ms(retrieved),
            ms(started.elapsed())
        );
        ranked.truncate(k);
        let unread: Vec<(String, Option<u64>)> = wanted(&ranked)
            .into_iter()
            .filter(|(id, _)| !rows.contains_key(id))
            .collect();
        if !unread.is_empty() {
            rows.extend(held.complete(&unread).await?);
        }
        tracing::debug!("search: rows read at {:.1} ms", ms(started.elapsed()));
        let hits = ranked
            .into_iter()
            // A row forgotten since it was found is no answer.
            .filter_map(|(candidate, mut explain)| {
                let row = rows.remove(&candidate.record.id)?;
                // Candidates ranked from the values held in memory carry no factors.
                explain.salience_factors = explain.salience_factors.or(row.salience_factors());
                Some(SearchHit {
                    memory: row.to_protocol(),
                    score: explain.score,
                    explain: p.explain.then_some(explain),
                })
            })
            .collect::<Vec<SearchHit>>();
        self.access.record(hits.iter().map(|h| h.memory.id.clone()));
        self.searches.fetch_add(1, Ordering::Relaxed);
        Ok(SearchResult {
            hits,
            mode: p.mode,
            embedder: self.embed.label(),
            took_ms: ms(started.elapsed()),
            retrievers_asked: bare,
        })
    }

    /// Memories stating a fact a newer memory replaced keep a share of their
    /// score (`usermodel::SUPERSEDED_FACTOR`), and never rank above the memory that replaced it
    /// — in a search `as_of` the past, only when the replacing memory was stored by then.
    fn lower_superseded(
        &self,
        mut ranked: Vec<(Candidate, ScoreExplain)>,
        past: bool,
    ) -> Vec<(Candidate, ScoreExplain)> {
        let lineages: HashSet<&str> = ranked
            .iter()
            .map(|(c, _)| c.record.lineage.as_str())
            .collect();
        let mut stale = self.usermodel.superseded(&lineages);
        if past {
            stale.retain(|_, (_, by)| lineages.contains(by.as_str()));
        }
        if stale.is_empty() {
            return ranked;
        }
        let scores: HashMap<String, f32> = ranked
            .iter()
            .map(|(c, e)| (c.record.lineage.clone(), e.score))
            .collect();
        for (c, e) in &mut ranked {
            if let Some((fact, by)) = stale.remove(&c.record.lineage) {
                e.score *= fact.factor;
                if let Some(&above) = scores.get(&by) {
                    e.score = e.score.min(above * 0.99);
                }
                e.superseded = Some(fact);
            }
        }
        ranked.sort_by(|a, b| {
            b.1.score
                .total_cmp(&a.1.score)
                .then_with(|| a.0.record.id.cmp(&b.0.record.id))
        });
        ranked
    }

    /// The candidates with what each draws from the best few beside it (`graph::spread`);
    /// memories reached that no retriever found join them, if the search's filter admits them
    /// (with a plain filter, `held_namespace`, ranked from the values held in memory).
    async fn spread(
        &self,
        ranked: Vec<(Candidate, mnemo_protocol::memory::ScoreExplain)>,
        predicate: &Pred,
        held_namespace: Option<Option<&str>>,
    ) -> Result<Vec<Candidate>> {
        let best = &ranked[..ranked.len().min(self.config.graph_seeds)];
        let seeds: Vec<(String, f32)> = best
            .iter()
            .map(|(c, e)| (c.record.lineage.clone(), e.score))
            .collect();
        // Spread names a seed by lineage; explain names the result's own id.
        let seed_ids: HashMap<String, String> = best
            .iter()
            .map(|(c, _)| (c.record.lineage.clone(), c.record.id.clone()))
            .collect();
        let mut spread = self
            .graph
            .spread(
                &seeds,
                &self.config.graph_edges,
                self.config.graph_hops,
                SPREAD_DECAY,
                MIN_SPREAD_WEIGHT,
            )
            .await?;
        tracing::debug!("search: graph walked ({} reached)", spread.len());
        let mut candidates: Vec<Candidate> = ranked.into_iter().map(|(c, _)| c).collect();
        for c in &mut candidates {
            if let Some(s) = spread.remove(&c.record.lineage) {
                c.graph = s.value;
                c.graph_via = seed_ids.get(&s.via).cloned();
            }
        }
        if !spread.is_empty() {
            let lineages: Vec<String> = spread.keys().cloned().collect();
            let reached = self
                .held
                .current_of_lineages(&lineages, held_namespace, predicate)
                .await?;
            for row in reached {
                let Some(s) = spread.get(&row.record.lineage) else {
                    continue;
                };
                let mut c = Candidate::found(row.record, row.row_id);
                c.graph = s.value;
                c.graph_via = seed_ids.get(&s.via).cloned();
                candidates.push(c);
            }
        }
        Ok(candidates)
    }
}

/// Candidates each retriever contributes for `k` results: `factor` times k, at least 50 —
/// and for a long list (a context package asks for up to 200) at most k + [`MAX_EXTRA_CANDIDATES`]:
/// what ranks below that in both lists rarely climbs into the top k, and every candidate
/// is a row read.
fn candidate_pool(k: usize, factor: usize) -> usize {
    (k * factor).min(k + MAX_EXTRA_CANDIDATES).max(50)
}

/// See [`candidate_pool`].
const MAX_EXTRA_CANDIDATES: usize = 250;

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Each step past the first along a conversation keeps this share of what a result lends.
const SPREAD_DECAY: f32 = 0.7;
/// Edges weaker than this carry nothing (consolidation prunes them at 0.1 too).
const MIN_SPREAD_WEIGHT: f32 = 0.1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_candidate_pool_is_a_multiple_of_k_at_least_50_and_bounded_for_long_lists() {
        assert_eq!(candidate_pool(1, 5), 50);
        assert_eq!(candidate_pool(10, 5), 50);
        assert_eq!(candidate_pool(20, 5), 100);
        assert_eq!(candidate_pool(50, 5), 250);
        assert_eq!(candidate_pool(100, 5), 100 + MAX_EXTRA_CANDIDATES);
        assert_eq!(candidate_pool(MAX_K, 5), MAX_K + MAX_EXTRA_CANDIDATES);
        assert_eq!(candidate_pool(10, 1), 50);
    }
}
