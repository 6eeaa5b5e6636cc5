//! `mnemo-bench` (run as `mnemo bench`): figures measured through the socket against a running
//! mnemod. It prints and asserts nothing. Run it against a daemon on a scratch data dir: it
//! adds memories.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Parser, Subcommand};
use mnemo_client::Client;
use mnemo_protocol::consolidate::ConsolidateRun;
use mnemo_protocol::daemon::Status;
use mnemo_protocol::memory::{
    AddBatch, AddBatchParams, AddParams, Filter, Search, SearchMode, SearchParams,
};
use mnemo_protocol::system::Profile;
use mnemo_protocol::NoParams;
use serde_json::Value;

use mnemo_client::locomo;

mod changes;
mod context;
mod hostile;
mod load;
mod search;
mod triggers;
mod understanding;

/// Figures for mnemod measured through its socket, and the hostile-frame fuzz harness. Run
/// against a daemon on a scratch data dir: the benches add memories.
#[derive(Parser, Debug)]
#[command(name = "mnemo bench", bin_name = "mnemo bench", version)]
struct BenchArgs {
    /// mnemod's socket (default: the per-user socket).
    #[arg(long, global = true, env = "MNEMO_SOCKET")]
    socket: Option<PathBuf>,
    #[command(subcommand)]
    what: BenchWhat,
}

fn main() -> ExitCode {
    let args = BenchArgs::parse();
    let socket = args
        .socket
        .clone()
        .unwrap_or_else(mnemo_protocol::paths::default_socket_path);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match runtime.block_on(run(args, &socket)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mnemo bench: {e:#}");
            ExitCode::from(mnemo_client::exit_status(&e))
        }
    }
}

#[derive(Subcommand, Debug)]
enum BenchWhat {
    /// Ingest throughput: chat-length texts added one request at a time by concurrent clients,
    /// then in batches.
    Ingest {
        #[arg(long, default_value_t = 2000)]
        count: usize,
        #[arg(long, default_value_t = 8)]
        clients: usize,
        #[arg(long, default_value_t = 100)]
        batch: usize,
    },
    /// Search latency (p50/p95/p99, query embedding included) at each store size.
    Search {
        /// Store sizes; the bench namespace is topped up to each in turn.
        #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
        sizes: Vec<usize>,
        #[arg(long, default_value_t = 200)]
        queries: usize,
        #[arg(long, default_value = "hybrid")]
        mode: SearchMode,
        /// Top up with single `memory.add` requests from 8 clients (one small commit each, as
        /// a live store grows) instead of batches of 500.
        #[arg(long)]
        singles: bool,
        /// Skip the exact scans, and so the vector leg's recall against them: each reads
        /// every vector (at 1M memories 200 of them take ~7 minutes).
        #[arg(long)]
        no_exact: bool,
    },
    /// Retrieval quality on LoCoMo: evidence recall@k per category and mode.
    Locomo {
        #[arg(long, default_value = "../shared/data/locomo/locomo-dev.json")]
        path: PathBuf,
        /// Skip ingesting (the namespaces are already loaded).
        #[arg(long)]
        no_ingest: bool,
        /// Ask without a consolidation run after loading. By default one runs first, so the
        /// figures are those of a store as it is between sessions (indexes folded, similar
        /// memories linked), not of one caught mid-ingest.
        #[arg(long)]
        no_consolidate: bool,
    },
    /// Understanding people: the beliefs mnemo reads from each annotated LoCoMo conversation
    /// against what its authors observed about each speaker, session by session (recall and
    /// precision, matched one to one by meaning).
    Understanding {
        #[arg(long, default_value = "../shared/data/locomo/annotated")]
        dir: PathBuf,
        /// Skip ingesting (the namespaces are already loaded).
        #[arg(long)]
        no_ingest: bool,
        /// Least cosine between a belief and an observation that counts as a match.
        #[arg(long, default_value_t = 0.6)]
        threshold: f32,
        /// Print this many unmatched beliefs and observations, to judge by reading.
        #[arg(long, default_value_t = 0)]
        show: usize,
    },
    /// Context packages on LoCoMo: the share of each question's evidence turns inside a
    /// package of each budget, against the top search results in the same tokens; then
    /// `context.build` latency at `--size` memories.
    Context {
        #[arg(long, default_value = "../shared/data/locomo/locomo-dev.json")]
        path: PathBuf,
        /// Skip ingesting (the namespaces are already loaded).
        #[arg(long)]
        no_ingest: bool,
        #[arg(long, value_delimiter = ',', default_value = "1000,2000,4000")]
        budgets: Vec<u32>,
        /// Memories for the latency run (0 skips it).
        #[arg(long, default_value_t = 10_000)]
        size: usize,
        #[arg(long, default_value_t = 100)]
        queries: usize,
    },
    /// The triggered layer: a scripted history of episodes (fragile and sound files and
    /// commands) recorded in namespace `bench-triggers`, then `memory.triggers` latency and
    /// the precision of its warnings.
    Triggers {
        #[arg(long, default_value_t = 10_000)]
        episodes: usize,
        #[arg(long, default_value_t = 1000)]
        queries: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Hostile frames (wrong types, truncations, byte flips, deep nesting, batches): every
    /// reply must be proper JSON-RPC and mnemod must stay up. Adds memories in namespace `fuzz`.
    Fuzz {
        #[arg(long, default_value_t = 10_000)]
        frames: usize,
        /// The same seed sends the same frames.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Many clients doing mixed work at once (add, search, get, list, update, forget):
    /// errors and p50/p99 per method, then a check that every acknowledged write reads back
    /// and is found by its words, and every forgotten memory is gone from every search mode.
    Load {
        #[arg(long, default_value_t = 64)]
        clients: usize,
        /// Operations per client.
        #[arg(long, default_value_t = 1000)]
        ops: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// What an idle mnemod costs: its CPU (share of one core) over a quiet window, its
    /// resident memory and the memories it holds. Send it no work meanwhile. Linux only.
    Idle {
        #[arg(long, default_value_t = 30)]
        secs: u64,
    },
}

async fn run(args: BenchArgs, socket: &Path) -> anyhow::Result<()> {
    let mut client = Client::connect(socket).await?;
    let status = client.call::<Status>(&NoParams {}).await?;
    let embedder = status
        .components
        .iter()
        .find(|c| c.name == "embedder")
        .map(|c| c.detail.clone())
        .unwrap_or_default();
    let machine = client.call::<Profile>(&NoParams {}).await?;
    println!(
        "mnemod {} ({} build) at {}; embedder: {embedder}",
        status.version,
        if status.build.is_empty() {
            "unknown"
        } else {
            &status.build
        },
        status.socket
    );
    println!("machine: {}", machine.machine_line());
    match args.what {
        BenchWhat::Ingest {
            count,
            clients,
            batch,
        } => ingest(socket, count, clients, batch).await,
        BenchWhat::Search {
            sizes,
            queries,
            mode,
            singles,
            no_exact,
        } => {
            search::run(
                &mut client,
                socket,
                &sizes,
                queries,
                mode,
                singles,
                !no_exact,
            )
            .await
        }
        BenchWhat::Locomo {
            path,
            no_ingest,
            no_consolidate,
        } => locomo(&mut client, &path, !no_ingest, !no_consolidate).await,
        BenchWhat::Understanding {
            dir,
            no_ingest,
            threshold,
            show,
        } => {
            understanding::run(
                &mut client,
                understanding::UnderstandingBench {
                    dir: &dir,
                    load: !no_ingest,
                    threshold,
                    show,
                },
            )
            .await
        }
        BenchWhat::Context {
            path,
            no_ingest,
            budgets,
            size,
            queries,
        } => {
            context::run(
                &mut client,
                socket,
                context::ContextBench {
                    path: &path,
                    load: !no_ingest,
                    budgets: &budgets,
                    size,
                    queries,
                },
            )
            .await
        }
        BenchWhat::Triggers {
            episodes,
            queries,
            seed,
        } => triggers::run(socket, episodes, queries, seed).await,
        BenchWhat::Fuzz { frames, seed } => hostile::fuzz(socket, frames, seed).await,
        BenchWhat::Load { clients, ops, seed } => load::load(socket, clients, ops, seed).await,
        BenchWhat::Idle { secs } => idle(&mut client, status.pid, secs).await,
    }
}

/// Chat-like sentences, varied enough that neither retriever has it easy.
pub(crate) fn chat_text(i: usize) -> String {
    const WHO: [&str; 8] = [
        "I",
        "My sister",
        "Jordan",
        "Our team",
        "The neighbours",
        "Grandma",
        "Priya",
        "My manager",
    ];
    const DID: [&str; 10] = [
        "finally booked the trip to",
        "keeps talking about",
        "was really stressed about",
        "had a great time at",
        "is thinking of moving to",
        "wrote a long post about",
        "got tickets for",
        "can't stop cooking food from",
        "started volunteering at",
        "spent the weekend fixing things in",
    ];
    const WHAT: [&str; 12] = [
        "Lisbon",
        "the community garden",
        "the new climbing gym",
        "a jazz festival",
        "the old farmhouse",
        "the pottery class",
        "Kyoto",
        "the marathon route",
        "the animal shelter",
        "the lake cabin",
        "the downtown library",
        "a vegan bakery",
    ];
    const WHEN: [&str; 6] = [
        "last Tuesday",
        "this morning",
        "over the holidays",
        "two weeks ago",
        "yesterday",
        "in the spring",
    ];
    format!(
        "{} {} {} {}, and honestly it made me think about {} again (note {i}).",
        WHO[i % 8],
        DID[(i / 8) % 10],
        WHAT[(i / 80) % 12],
        WHEN[(i / 7) % 6],
        WHAT[(i * 7 + 3) % 12]
    )
}

fn item(content: String, namespace: &str) -> AddParams {
    AddParams {
        content,
        namespace: Some(namespace.into()),
        ..Default::default()
    }
}

async fn ingest(socket: &Path, count: usize, clients: usize, batch: usize) -> anyhow::Result<()> {
    let run = format!("bench-ingest-{}", std::process::id());
    let mut client = Client::connect(socket).await?;
    let status = client.call::<Status>(&NoParams {}).await?;
    println!(
        "store: {} current memories before the run",
        status.memories.total
    );
    // One client, one add at a time: the latency a user's add sees.
    let mut took = Vec::new();
    for i in 0..count.min(200) {
        let started = Instant::now();
        let text = chat_text(i + 2 * count);
        client
            .call::<mnemo_protocol::memory::Add>(&item(text, &run))
            .await?;
        took.push(started.elapsed());
    }
    took.sort();
    println!(
        "one add at a time: {}  ({} adds, one client)",
        latency(&took),
        took.len()
    );
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let (socket, run) = (socket.to_path_buf(), run.clone());
            tokio::spawn(async move {
                let mut client = Client::connect(&socket).await?;
                let mut took = Vec::new();
                for i in (c..count).step_by(clients) {
                    let started = Instant::now();
                    client
                        .call::<mnemo_protocol::memory::Add>(&item(chat_text(i), &run))
                        .await?;
                    took.push(started.elapsed());
                }
                anyhow::Ok(took)
            })
        })
        .collect();
    let mut took = Vec::new();
    for t in tasks {
        took.extend(t.await??);
    }
    took.sort();
    let secs = started.elapsed().as_secs_f64();
    println!(
        "single adds: {count} texts by {clients} clients in {secs:.2} s = {:.1} texts/s; each {}",
        count as f64 / secs,
        latency(&took)
    );

    let started = Instant::now();
    for chunk in (0..count).collect::<Vec<_>>().chunks(batch) {
        let items = chunk
            .iter()
            .map(|&i| item(chat_text(i + count), &run))
            .collect();
        client.call::<AddBatch>(&AddBatchParams { items }).await?;
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "add_batch of {batch}: {count} texts in {secs:.2} s = {:.1} texts/s",
        count as f64 / secs
    );
    Ok(())
}

/// Adds `chat_text(i)` for each `i` in `range` one request at a time from 8 clients.
async fn add_singles(
    socket: &Path,
    range: std::ops::Range<usize>,
    namespace: &str,
) -> anyhow::Result<()> {
    const CLIENTS: usize = 8;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (socket, ns, range, done) = (
                socket.to_path_buf(),
                namespace.to_string(),
                range.clone(),
                done.clone(),
            );
            tokio::spawn(async move {
                let mut client = Client::connect(&socket).await?;
                for i in range.skip(c).step_by(CLIENTS) {
                    client
                        .call::<mnemo_protocol::memory::Add>(&item(chat_text(i), &ns))
                        .await?;
                    let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                    if n % 1000 == 0 {
                        eprint!("\rone at a time: {n}");
                    }
                }
                anyhow::Ok(())
            })
        })
        .collect();
    for t in tasks {
        t.await??;
    }
    Ok(())
}

/// Current memories in `namespace`, from the counts mnemod keeps (paging through a million
/// ids took minutes).
async fn count_namespace(client: &mut Client, namespace: &str) -> anyhow::Result<usize> {
    let status = client.call::<Status>(&NoParams {}).await?;
    Ok(status
        .memories
        .by_namespace
        .get(namespace)
        .copied()
        .unwrap_or(0) as usize)
}

pub(crate) fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// The `q`th of the questions latency benches ask of the chat texts: 400 distinct ones (none naming a time) before any repeats, so a run of a
/// few hundred embeds every query (mnemod keeps the last few queries' vectors, and a repeat
/// would skip the embedding).
pub(crate) fn bench_query(q: usize) -> String {
    format!(
        "who {} {} {}",
        ["went to", "talked about", "is moving to", "volunteers at"][q % 4],
        [
            "Kyoto",
            "the garden",
            "the shelter",
            "the lake cabin",
            "jazz"
        ][q % 5],
        [
            "with friends",
            "again",
            "for the first time",
            "with the kids",
            "before the move",
            "in the rain",
            "with Maria",
            "with a colleague",
            "after the wedding",
            "on foot",
            "by train",
            "with a guide",
            "alone",
            "with the team",
            "for a workshop",
            "with my sister",
            "to volunteer",
            "with a camera",
            "for the concert",
            "with Tom",
        ][q / 20 % 20]
    )
}

/// Adds chat texts to `namespace` until it holds `size` memories: in batches of 500, or
/// with `singles` one request at a time from 8 clients.
pub(crate) async fn top_up(
    client: &mut Client,
    socket: &Path,
    namespace: &str,
    size: usize,
    singles: bool,
) -> anyhow::Result<()> {
    let have = count_namespace(client, namespace).await?;
    if have >= size {
        return Ok(());
    }
    let started = Instant::now();
    let mut added = have;
    if singles {
        add_singles(socket, have..size, namespace).await?;
        added = size;
    }
    while added < size {
        let n = (size - added).min(500);
        let items = (added..added + n)
            .map(|i| item(chat_text(i), namespace))
            .collect();
        client.call::<AddBatch>(&AddBatchParams { items }).await?;
        added += n;
        eprint!("\rtopping up to {size}: {added}");
    }
    eprintln!(" in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// CPU seconds (user + system) process `pid` has used, from `/proc/<pid>/stat`.
fn cpu_secs(pid: u32) -> anyhow::Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).with_context(|| {
        format!("reading /proc/{pid}/stat (the idle bench needs Linux and mnemod on this machine)")
    })?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    Ok((ticks(11) + ticks(12)) / USER_HZ)
}

/// The unit of `/proc/<pid>/stat`'s times: Linux fixes USER_HZ at 100 on every architecture.
const USER_HZ: f64 = 100.0;

async fn idle(client: &mut Client, pid: u32, secs: u64) -> anyhow::Result<()> {
    let status = client.call::<Status>(&NoParams {}).await?;
    let before = cpu_secs(pid)?;
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let used = cpu_secs(pid)? - before;
    let wall = started.elapsed().as_secs_f64();
    println!(
        "idle over {wall:.0} s at {} memories: CPU {:.2}% of one core; {}",
        status.memories.total,
        100.0 * used / wall,
        resident(client).await?
    );
    Ok(())
}

/// mnemod's resident memory now: in all, and what it allocated apart from its mapped code.
pub(crate) async fn resident(client: &mut Client) -> anyhow::Result<String> {
    let status = client.call::<Status>(&NoParams {}).await?;
    Ok(match status.memory {
        Some(m) => mnemo_client::runs::process_memory_text(&m),
        None => "RSS not reported on this system".into(),
    })
}

/// p50, p95, p99 and the slowest of sorted durations (a write held up by a commit shows in
/// the slowest long before it moves a percentile).
pub(crate) fn latency(sorted: &[Duration]) -> String {
    format!(
        "p50 {:.1} ms  p95 {:.1} ms  p99 {:.1} ms  max {:.1} ms",
        percentile(sorted, 0.5),
        percentile(sorted, 0.95),
        percentile(sorted, 0.99),
        percentile(sorted, 1.0)
    )
}

const KS: [usize; 4] = [1, 5, 10, 20];

/// The samples of a LoCoMo-style file.
pub(crate) fn read_locomo(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).context("LoCoMo file is not a JSON list")
}

/// Adds every turn of `samples` (each sample in its namespace), then runs a consolidation
/// when asked, printing how long each took.
pub(crate) async fn load_locomo(
    client: &mut Client,
    samples: &[Value],
    consolidate: bool,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut turns = 0;
    for sample in samples {
        let ns = locomo::namespace(sample);
        let items = locomo::turns(sample, &ns);
        turns += items.len();
        for chunk in items.chunks(200) {
            client
                .call::<AddBatch>(&AddBatchParams {
                    items: chunk.to_vec(),
                })
                .await?;
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "loaded {turns} turns in {secs:.1} s ({:.1} turns/s)",
        turns as f64 / secs
    );
    if consolidate {
        let started = Instant::now();
        let run = client.call::<ConsolidateRun>(&NoParams {}).await?;
        let run = mnemo_client::runs::wait_for(
            client,
            &run.run_id,
            mnemo_client::progress::ProgressReport::off(),
        )
        .await?;
        println!(
            "consolidated in {:.1} s ({})",
            started.elapsed().as_secs_f64(),
            mnemo_client::runs::status_name(run.status)
        );
    }
    Ok(())
}

/// The `dia_id`s of the LoCoMo turns a search of `namespace` finds, best first (top 20).
async fn turns_found(
    client: &mut Client,
    namespace: &str,
    query: &str,
    mode: SearchMode,
) -> anyhow::Result<Vec<String>> {
    let r = client
        .call::<Search>(&SearchParams {
            query: query.to_string(),
            k: Some(20),
            mode,
            filter: Filter {
                namespace: Some(namespace.to_string()),
                ..Default::default()
            },
            ..Default::default()
        })
        .await?;
    Ok(r.hits
        .iter()
        .map(|h| {
            h.memory.metadata["dia_id"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect())
}

async fn locomo(
    client: &mut Client,
    path: &Path,
    load: bool,
    consolidate: bool,
) -> anyhow::Result<()> {
    let samples = read_locomo(path)?;
    if load {
        load_locomo(client, &samples, consolidate).await?;
    }
    // recall[mode][category][k] = (sum of per-question recall, questions)
    let mut recall: BTreeMap<String, BTreeMap<i64, [(f64, usize); 4]>> = BTreeMap::new();
    for mode in [SearchMode::Vector, SearchMode::Text, SearchMode::Hybrid] {
        for sample in &samples {
            let ns = locomo::namespace(sample);
            for qa in sample["qa"].as_array().into_iter().flatten() {
                let evidence = locomo::evidence(qa);
                if evidence.is_empty() {
                    continue;
                }
                let category = qa["category"].as_i64().unwrap_or(0);
                let question = qa["question"].as_str().unwrap_or("");
                let found = turns_found(client, &ns, question, mode).await?;
                let cell = recall
                    .entry(format!("{mode:?}"))
                    .or_default()
                    .entry(category)
                    .or_insert([(0.0, 0); 4]);
                for (slot, k) in KS.iter().enumerate() {
                    let top = &found[..found.len().min(*k)];
                    let hit = evidence.iter().filter(|e| top.contains(e)).count();
                    cell[slot].0 += hit as f64 / evidence.len() as f64;
                    cell[slot].1 += 1;
                }
            }
        }
    }
    println!("evidence recall@1/5/10/20 (category: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial)");
    for (mode, by_cat) in &recall {
        for (cat, cells) in by_cat {
            let values: Vec<String> = cells
                .iter()
                .map(|(s, n)| format!("{:.3}", s / *n as f64))
                .collect();
            println!(
                "  {mode:<6} cat {cat} (n={:>3}): {}",
                cells[0].1,
                values.join("  ")
            );
        }
        let mut overall = [(0.0, 0); 4];
        for (_, cells) in by_cat.iter().filter(|(c, _)| (1..=4).contains(*c)) {
            for i in 0..4 {
                overall[i].0 += cells[i].0;
                overall[i].1 += cells[i].1;
            }
        }
        let values: Vec<String> = overall
            .iter()
            .map(|(s, n)| format!("{:.3}", s / (*n).max(1) as f64))
            .collect();
        println!(
            "  {mode:<6} cats 1-4 (n={:>3}): {}",
            overall[0].1,
            values.join("  ")
        );
    }
    changes::report(client, &samples).await
}
