//! `mnemo bench load`: many clients doing mixed work at once, then a check of what the
//! store says afterwards against what each client was told.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use mnemo_client::{Client, ClientError};
use mnemo_protocol::memory::{
    Add, AddParams, Filter, Forget, ForgetParams, Get, GetParams, List, ListParams, Search,
    SearchMode, SearchParams, Update, UpdateParams,
};
use mnemo_protocol::Method;
use proptest::prelude::RngExt;
use proptest::test_runner::{RngAlgorithm, TestRng};

use super::{chat_text, percentile};

/// A memory a client added, by its current version; `token` is a word only it holds.
struct Owned {
    id: String,
    versions: Vec<String>,
    token: String,
}

#[derive(Default)]
struct Outcome {
    took: BTreeMap<&'static str, Vec<Duration>>,
    errors: BTreeMap<&'static str, Vec<String>>,
    live: Vec<Owned>,
    forgotten: Vec<Owned>,
}

impl Outcome {
    /// Calls `M`, timing it; an error is counted against the method and returned as `None`.
    async fn call<M: Method>(
        &mut self,
        client: &mut Client,
        params: &M::Params,
    ) -> Option<M::Result> {
        let started = Instant::now();
        let result = client.call::<M>(params).await;
        self.took
            .entry(M::NAME)
            .or_default()
            .push(started.elapsed());
        match result {
            Ok(r) => Some(r),
            Err(e) => {
                self.errors.entry(M::NAME).or_default().push(e.to_string());
                None
            }
        }
    }

    fn merge(&mut self, other: Outcome) {
        for (method, took) in other.took {
            self.took.entry(method).or_default().extend(took);
        }
        for (method, errors) in other.errors {
            self.errors.entry(method).or_default().extend(errors);
        }
        self.live.extend(other.live);
        self.forgotten.extend(other.forgotten);
    }
}

fn rng(seed: u64, client: usize) -> TestRng {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..16].copy_from_slice(&(client as u64).to_le_bytes());
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

fn filter(namespace: &str) -> Filter {
    Filter {
        namespace: Some(namespace.into()),
        ..Default::default()
    }
}

async fn one_client(
    socket: &Path,
    namespace: &str,
    c: usize,
    ops: usize,
    seed: u64,
) -> Result<Outcome, ClientError> {
    let mut client = Client::connect(socket).await?;
    let mut rng = rng(seed, c);
    let mut out = Outcome::default();
    for i in 0..ops {
        let roll = if out.live.is_empty() {
            0
        } else {
            rng.random_range(0..100)
        };
        match roll {
            0..35 => {
                let token = format!("lt{c}x{i}q{seed}");
                let content = format!(
                    "{} Reference {token}.",
                    chat_text(rng.random_range(0..10_000))
                );
                let params = AddParams {
                    content,
                    namespace: Some(namespace.into()),
                    ..Default::default()
                };
                if let Some(m) = out.call::<Add>(&mut client, &params).await {
                    out.live.push(Owned {
                        id: m.id.clone(),
                        versions: vec![m.id],
                        token,
                    });
                }
            }
            35..65 => {
                let mode = [SearchMode::Hybrid, SearchMode::Vector, SearchMode::Text][i % 3];
                let params = SearchParams {
                    query: chat_text(rng.random_range(0..10_000)),
                    k: Some(10),
                    mode,
                    filter: filter(namespace),
                    ..Default::default()
                };
                out.call::<Search>(&mut client, &params).await;
            }
            65..78 => {
                let id = out.live[rng.random_range(0..out.live.len())].id.clone();
                out.call::<Get>(&mut client, &GetParams { id }).await;
            }
            78..88 => {
                let at = rng.random_range(0..out.live.len());
                let owned = &out.live[at];
                let params = UpdateParams {
                    id: owned.id.clone(),
                    content: Some(format!(
                        "{} (updated) Reference {}.",
                        chat_text(rng.random_range(0..10_000)),
                        owned.token
                    )),
                    ..Default::default()
                };
                if let Some(m) = out.call::<Update>(&mut client, &params).await {
                    let owned = &mut out.live[at];
                    owned.versions.push(m.id.clone());
                    owned.id = m.id;
                }
            }
            88..94 => {
                let owned = out.live.swap_remove(rng.random_range(0..out.live.len()));
                let params = ForgetParams {
                    ids: vec![owned.id.clone()],
                    filter: None,
                };
                match out.call::<Forget>(&mut client, &params).await {
                    Some(_) => out.forgotten.push(owned),
                    None => out.live.push(owned),
                }
            }
            _ => {
                let params = ListParams {
                    filter: filter(namespace),
                    limit: Some(20),
                    cursor: None,
                };
                out.call::<List>(&mut client, &params).await;
            }
        }
    }
    Ok(out)
}

/// What the store says afterwards, against what the clients were told.
#[derive(Default)]
struct Check {
    unreadable: Vec<String>,
    missed: BTreeMap<&'static str, usize>,
    forgotten_found: Vec<String>,
}

const MODES: [(SearchMode, &str); 3] = [
    (SearchMode::Text, "text"),
    (SearchMode::Hybrid, "hybrid"),
    (SearchMode::Vector, "vector"),
];

async fn found(
    client: &mut Client,
    namespace: &str,
    token: &str,
    mode: SearchMode,
) -> Result<Vec<String>, ClientError> {
    let params = SearchParams {
        query: token.into(),
        k: Some(10),
        mode,
        filter: filter(namespace),
        ..Default::default()
    };
    let result = client.call::<Search>(&params).await?;
    Ok(result.hits.into_iter().map(|h| h.memory.id).collect())
}

async fn check(socket: &Path, namespace: &str, all: &Outcome) -> anyhow::Result<Check> {
    let mut client = Client::connect(socket).await?;
    let mut check = Check::default();
    for owned in &all.live {
        match client
            .call::<Get>(&GetParams {
                id: owned.id.clone(),
            })
            .await
        {
            Ok(m) if m.content.contains(&owned.token) && m.valid_to.is_none() => {}
            Ok(m) => check
                .unreadable
                .push(format!("{} reads back as {:?}", owned.id, m.content)),
            Err(e) => check.unreadable.push(format!("{}: {e}", owned.id)),
        }
        // Only the words are sure to find a token; the vector figure is for information.
        for (mode, name) in MODES {
            if !found(&mut client, namespace, &owned.token, mode)
                .await?
                .contains(&owned.id)
            {
                *check.missed.entry(name).or_default() += 1;
            }
        }
    }
    for owned in &all.forgotten {
        for id in &owned.versions {
            match client.call::<Get>(&GetParams { id: id.clone() }).await {
                Err(ClientError::Rpc(e)) if e.code == -32001 => {}
                other => check.forgotten_found.push(format!(
                    "get {id} after forget: {:?}",
                    other.map(|m| m.content)
                )),
            }
        }
        for (mode, name) in MODES {
            let hits = found(&mut client, namespace, &owned.token, mode).await?;
            if let Some(id) = hits.iter().find(|id| owned.versions.contains(id)) {
                check
                    .forgotten_found
                    .push(format!("{name} search still finds forgotten {id}"));
            }
        }
    }
    Ok(check)
}

pub async fn load(socket: &Path, clients: usize, ops: usize, seed: u64) -> anyhow::Result<()> {
    let namespace = format!("bench-load-{}", std::process::id());
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let (socket, namespace) = (socket.to_path_buf(), namespace.clone());
            tokio::spawn(async move { one_client(&socket, &namespace, c, ops, seed).await })
        })
        .collect();
    let mut all = Outcome::default();
    for task in tasks {
        all.merge(task.await??);
    }
    let secs = started.elapsed().as_secs_f64();
    let total: usize = all.took.values().map(Vec::len).sum();
    println!(
        "load: {clients} clients × {ops} operations in {secs:.1} s = {:.0} operations/s",
        total as f64 / secs
    );
    println!(
        "  {:<16} {:>7} {:>7} {:>9} {:>9}",
        "method", "calls", "errors", "p50 ms", "p99 ms"
    );
    for (method, took) in &mut all.took {
        took.sort_unstable();
        let errors = all.errors.get(method).map_or(0, Vec::len);
        println!(
            "  {method:<16} {:>7} {errors:>7} {:>9.1} {:>9.1}",
            took.len(),
            percentile(took, 0.5),
            percentile(took, 0.99)
        );
    }
    let errors: usize = all.errors.values().map(Vec::len).sum();
    println!("  errors: {errors}");
    for (method, messages) in &all.errors {
        for m in messages.iter().take(3) {
            println!("    {method}: {m}");
        }
    }

    eprintln!(
        "checking {} live and {} forgotten memories…",
        all.live.len(),
        all.forgotten.len()
    );
    let check = check(socket, &namespace, &all).await?;
    println!(
        "final check: {} live memories, {} unreadable; missed by their own word: text {}, hybrid {}, vector {} (vector is for information)",
        all.live.len(),
        check.unreadable.len(),
        check.missed.get("text").unwrap_or(&0),
        check.missed.get("hybrid").unwrap_or(&0),
        check.missed.get("vector").unwrap_or(&0),
    );
    println!(
        "  {} forgotten memories, still found: {}",
        all.forgotten.len(),
        check.forgotten_found.len()
    );
    for line in check
        .unreadable
        .iter()
        .chain(&check.forgotten_found)
        .take(5)
    {
        println!("    {line}");
    }
    Ok(())
}
