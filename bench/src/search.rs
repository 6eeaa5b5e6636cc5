//! `mnemo bench search`: latency through the socket at each store size, mnemod's memory,
//! and what the approximate vector leg gives up against an exact scan.

use std::path::Path;
use std::time::{Duration, Instant};

use mnemo_client::Client;
use mnemo_protocol::daemon::Status;
use mnemo_protocol::memory::{Filter, Search, SearchMode, SearchParams};
use mnemo_protocol::NoParams;

use super::{bench_query, latency, resident, top_up};

/// `scan_exactly`: scan exactly too, for the vector leg's recall against it.
pub(super) async fn run(
    client: &mut Client,
    socket: &Path,
    sizes: &[usize],
    queries: usize,
    mode: SearchMode,
    singles: bool,
    scan_exactly: bool,
) -> anyhow::Result<()> {
    const NS: &str = "bench-search";
    for &size in sizes {
        top_up(client, socket, NS, size, singles).await?;
        let leg = wait_for_indexes(client, size).await?;
        let ask = |q: usize, mode: SearchMode, exact: bool| SearchParams {
            query: bench_query(q),
            k: Some(10),
            mode,
            filter: Filter {
                namespace: Some(NS.into()),
                ..Default::default()
            },
            exact,
            ..Default::default()
        };
        let (took, _) = timed_searches(client, queries, |q| ask(q, mode, false)).await?;
        println!(
            "search {mode:?} at {size} memories: {}  ({queries} queries, k=10, through the socket)",
            latency(&took)
        );
        // Memory as searching leaves it, before the exact scans below read every vector.
        let searching = resident(client).await?;
        // What the approximate index gives up: its top 10 against the exact top 10. A text
        // search has no vector leg (and the exact scans would hide its own memory use).
        let mut after_exact = String::new();
        if mode != SearchMode::Text {
            let (ann_took, ann) =
                timed_searches(client, queries, |q| ask(q, SearchMode::Vector, false)).await?;
            if scan_exactly {
                let (exact_took, exact) =
                    timed_searches(client, queries, |q| ask(q, SearchMode::Vector, true)).await?;
                let found: usize = ann
                    .iter()
                    .zip(&exact)
                    .map(|(a, e)| e.iter().filter(|id| a.contains(id)).count())
                    .sum();
                let wanted: usize = exact.iter().map(Vec::len).sum();
                println!(
                    "  vector leg at {size}: {leg} {}; exact {}; recall@10 of the {leg} against exact {:.3}",
                    latency(&ann_took),
                    latency(&exact_took),
                    found as f64 / wanted.max(1) as f64
                );
                after_exact = format!("; {} after the exact scans", resident(client).await?);
            } else {
                println!(
                    "  vector leg at {size}: {leg} {}; exact scans skipped (--no-exact)",
                    latency(&ann_took)
                );
            }
        }
        println!("  mnemod at {size}: {searching} after the searches{after_exact}");
    }
    Ok(())
}

/// Waits (up to 10 minutes) until index maintenance has built and folded in what it would,
/// so figures are of a store at rest rather than one caught mid-build. mnemod looks at its
/// indexes once a maintenance pass (every 20 s), so a settled state counts once it has held
/// past the next pass: the one seen first may predate the last rows added (and a retraining
/// they make due). Answers what serves the vector leg.
async fn wait_for_indexes(client: &mut Client, rows: usize) -> anyhow::Result<&'static str> {
    const PAST_A_PASS: Duration = Duration::from_secs(25);
    let started = Instant::now();
    let mut settled_since: Option<Instant> = None;
    loop {
        let status = client.call::<Status>(&NoParams {}).await?;
        let Some(indexes) = status.indexes else {
            // A mnemod just started has not looked at its indexes yet (its first pass
            // does); one that never says is older than the index status.
            if started.elapsed() < PAST_A_PASS * 3 {
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            return Ok("approximate leg");
        };
        let leg = match (indexes.held_vectors, indexes.ann) {
            (Some(_), _) if indexes.held_vector_signs => "two bits a component in memory",
            (Some(_), _) => "codes in memory",
            (None, true) => "ANN index",
            (None, false) => "exact scan",
        };
        let settled = indexes.settled && indexes.rows >= rows as u64;
        let since = settled.then(|| *settled_since.get_or_insert_with(Instant::now));
        settled_since = since;
        if since.is_some_and(|t| t.elapsed() >= PAST_A_PASS) {
            eprintln!(
                "indexes settled after {:.0} s: vector leg {leg}, {} rows",
                started.elapsed().as_secs_f64(),
                indexes.rows
            );
            return Ok(leg);
        }
        if started.elapsed() > Duration::from_secs(600) {
            eprintln!("indexes still not settled after 10 minutes; measuring anyway");
            return Ok(leg);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Runs `queries` searches one after another: how long each took and the ids each found.
async fn timed_searches(
    client: &mut Client,
    queries: usize,
    params: impl Fn(usize) -> SearchParams,
) -> anyhow::Result<(Vec<Duration>, Vec<Vec<String>>)> {
    let mut took = Vec::with_capacity(queries);
    let mut found = Vec::with_capacity(queries);
    for q in 0..queries {
        let params = params(q);
        let started = Instant::now();
        let result = client.call::<Search>(&params).await?;
        took.push(started.elapsed());
        found.push(result.hits.into_iter().map(|h| h.memory.id).collect());
    }
    took.sort();
    Ok((took, found))
}
