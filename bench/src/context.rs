//! `mnemo bench context`: how much of what answers each LoCoMo question a context package
//! holds at each budget, against the top search results that fit in the same tokens; the
//! tokens packages take; and `context.build` latency at a store size.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use mnemo_client::Client;
use mnemo_protocol::context::{Build, BuildParams};
use mnemo_protocol::memory::{Filter, Search, SearchParams};

use super::{bench_query, load_locomo, percentile, read_locomo, top_up};
use mnemo_client::locomo;

pub struct ContextBench<'a> {
    pub path: &'a Path,
    pub load: bool,
    pub budgets: &'a [u32],
    /// Memories the latency namespace is topped up to (0: no latency run).
    pub size: usize,
    pub queries: usize,
}

/// Per category: (sum of per-question coverage by the package, by search, questions).
type Coverage = BTreeMap<i64, (f64, f64, usize)>;

/// A search result as a package would write it, so both are counted alike.
fn line(content: &str) -> String {
    format!("- {content}\n")
}

pub async fn run(client: &mut Client, socket: &Path, b: ContextBench<'_>) -> anyhow::Result<()> {
    let count = |text: &str| tiktoken_rs::o200k_base_singleton().count_ordinary(text) as u32;
    let samples = read_locomo(b.path)?;
    if b.load {
        load_locomo(client, &samples, true).await?;
    }
    let mut coverage: BTreeMap<u32, Coverage> = BTreeMap::new();
    let mut package_tokens: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let mut took: Vec<Duration> = Vec::new();
    for sample in &samples {
        let ns = locomo::namespace(sample);
        // dia_id → the turn's text as stored.
        let text_of: HashMap<String, String> = locomo::turns(sample, &ns)
            .into_iter()
            .filter_map(|t| {
                let id = t.metadata.as_ref()?["dia_id"].as_str()?.trim().to_string();
                Some((id, t.content))
            })
            .collect();
        for qa in sample["qa"].as_array().into_iter().flatten() {
            let evidence: Vec<&String> = locomo::evidence(qa)
                .iter()
                .filter_map(|e| text_of.get(e))
                .collect();
            if evidence.is_empty() {
                continue;
            }
            let question = qa["question"].as_str().unwrap_or("").to_string();
            let category = qa["category"].as_i64().unwrap_or(0);
            let hits = client
                .call::<Search>(&SearchParams {
                    query: question.clone(),
                    k: Some(200),
                    filter: Filter {
                        namespace: Some(ns.clone()),
                        ..Default::default()
                    },
                    ..Default::default()
                })
                .await?
                .hits;
            for &budget in b.budgets {
                let started = Instant::now();
                let package = client
                    .call::<Build>(&BuildParams {
                        query: Some(question.clone()),
                        namespace: Some(ns.clone()),
                        budget: Some(budget),
                        ..Default::default()
                    })
                    .await?;
                took.push(started.elapsed());
                package_tokens
                    .entry(budget)
                    .or_default()
                    .push(package.tokens);
                // The top results that fit in the tokens the package took.
                let (mut searched, mut used) = (String::new(), 0);
                for h in &hits {
                    let next = line(&h.memory.content);
                    used += count(&next);
                    if used > package.tokens {
                        break;
                    }
                    searched.push_str(&next);
                }
                let share = |text: &str| {
                    evidence
                        .iter()
                        .filter(|e| text.contains(e.as_str()))
                        .count() as f64
                        / evidence.len() as f64
                };
                let cell = coverage
                    .entry(budget)
                    .or_default()
                    .entry(category)
                    .or_insert((0.0, 0.0, 0));
                cell.0 += share(&package.text);
                cell.1 += share(&searched);
                cell.2 += 1;
            }
        }
    }
    println!("evidence turns inside the package vs the top search results in the same tokens");
    println!("(category: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial)");
    for (budget, by_cat) in &coverage {
        let mut all = (0.0, 0.0, 0);
        for (cat, (p, s, n)) in by_cat {
            println!(
                "  budget {budget:>5}  cat {cat} (n={n:>3}): package {:.3}  search {:.3}",
                p / *n as f64,
                s / *n as f64
            );
            if (1..=4).contains(cat) {
                all = (all.0 + p, all.1 + s, all.2 + n);
            }
        }
        let tokens = &package_tokens[budget];
        println!(
            "  budget {budget:>5}  cats 1-4 (n={:>3}): package {:.3}  search {:.3}   tokens per package: mean {:.0}, max {}",
            all.2,
            all.0 / all.2.max(1) as f64,
            all.1 / all.2.max(1) as f64,
            tokens.iter().sum::<u32>() as f64 / tokens.len().max(1) as f64,
            tokens.iter().max().unwrap_or(&0)
        );
    }
    took.sort();
    if !took.is_empty() {
        println!(
            "context.build on LoCoMo ({} builds): p50 {:.1} ms  p95 {:.1} ms",
            took.len(),
            percentile(&took, 0.5),
            percentile(&took, 0.95)
        );
    }
    if b.size > 0 {
        latency(client, socket, b.size, b.queries, b.budgets).await?;
    }
    Ok(())
}

/// `context.build` p50/p95 at `size` memories, per budget, through the socket.
async fn latency(
    client: &mut Client,
    socket: &Path,
    size: usize,
    queries: usize,
    budgets: &[u32],
) -> anyhow::Result<()> {
    const NS: &str = "bench-search";
    top_up(client, socket, NS, size, false).await?;
    for &budget in budgets {
        let mut took = Vec::with_capacity(queries);
        for q in 0..queries {
            let started = Instant::now();
            client
                .call::<Build>(&BuildParams {
                    query: Some(bench_query(q)),
                    namespace: Some(NS.into()),
                    budget: Some(budget),
                    ..Default::default()
                })
                .await?;
            took.push(started.elapsed());
        }
        took.sort();
        println!(
            "context.build at {size} memories, budget {budget}: p50 {:.1} ms  p95 {:.1} ms  ({queries} builds, through the socket)",
            percentile(&took, 0.5),
            percentile(&took, 0.95)
        );
    }
    Ok(())
}
