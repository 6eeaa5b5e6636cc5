//! `mnemo bench triggers`: a scripted history of episodes in a made-up project — one file in
//! ten and one command in six fragile (they fail more often than not), the rest sound (they
//! rarely fail) — then `memory.triggers` for each file and command: latency through the
//! socket, and the precision of the warnings: a warning is right when every episode it rests
//! on was recorded on the target asked about (or, for a similar state, on the same program).

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use mnemo_client::Client;
use mnemo_protocol::agent::{
    Action, ActionState, Outcome, RecordEpisode, RecordParams, Triggers, TriggersParams,
    WarningKind,
};
use mnemo_protocol::time::{format_micros, now_micros};

use super::percentile;

const NAMESPACE: &str = "bench-triggers";
const CWD: &str = "/bench/project";
const FILES: usize = 400;
const COMMANDS: usize = 30;
const CLIENTS: usize = 8;

/// A cheap, seeded sequence: the same seed scripts the same history.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() % 10_000) as f64 / 10_000.0 < p
    }
}

fn file(i: usize) -> String {
    format!("{CWD}/src/module_{i}.rs")
}

fn command(i: usize) -> String {
    format!("cargo test -p crate_{i}")
}

/// The i-th scripted episode: its action, target and outcome.
fn scripted(i: usize, rng: &mut Lcg) -> (Action, String, Outcome) {
    if i.is_multiple_of(3) {
        let c = rng.next() as usize % COMMANDS;
        let fails = rng.chance(if c.is_multiple_of(6) { 0.6 } else { 0.03 });
        (Action::Command, command(c), outcome(fails))
    } else {
        let f = rng.next() as usize % FILES;
        let fails = rng.chance(if f.is_multiple_of(10) { 0.6 } else { 0.02 });
        (Action::Edit, file(f), outcome(fails))
    }
}

fn outcome(fails: bool) -> Outcome {
    if fails {
        Outcome::Failure
    } else {
        Outcome::Success
    }
}

pub async fn run(socket: &Path, episodes: usize, queries: usize, seed: u64) -> anyhow::Result<()> {
    let mut client = Client::connect(socket).await?;
    let known = client
        .call::<Triggers>(&TriggersParams {
            command: Some("true".into()),
            namespace: Some(NAMESPACE.into()),
            ..Default::default()
        })
        .await?
        .episodes_known as usize;
    // Which target each episode was recorded on: the ground truth.
    let mut truth: HashMap<String, String> = HashMap::new();
    if known < episodes {
        let started = Instant::now();
        let now = now_micros();
        let mut tasks = Vec::new();
        for c in 0..CLIENTS {
            let socket = socket.to_path_buf();
            tasks.push(tokio::spawn(async move {
                let mut client = Client::connect(&socket).await?;
                let mut rng = Lcg(seed);
                let mut mine = Vec::new();
                for i in 0..episodes {
                    let step = scripted(i, &mut rng);
                    if i % CLIENTS != c {
                        continue;
                    }
                    let (action, target, outcome) = step;
                    // Spread over the last 60 days, oldest first.
                    let at = now - ((episodes - i) as i64 * 60 * 86_400_000_000 / episodes as i64);
                    let r = client
                        .call::<RecordEpisode>(&RecordParams {
                            action,
                            targets: vec![target.clone()],
                            outcome,
                            error: (outcome == Outcome::Failure)
                                .then(|| format!("error[E0{}]: scripted failure {i}", i % 600)),
                            state: ActionState {
                                cwd: Some(CWD.into()),
                                ..Default::default()
                            },
                            namespace: Some(NAMESPACE.into()),
                            at: Some(format_micros(at)),
                            ..Default::default()
                        })
                        .await?;
                    mine.push((r.episode.id, target));
                }
                anyhow::Ok(mine)
            }));
        }
        for t in tasks {
            truth.extend(t.await??);
        }
        println!(
            "recorded {episodes} episodes in {:.1} s ({:.0}/s, {CLIENTS} clients)",
            started.elapsed().as_secs_f64(),
            episodes as f64 / started.elapsed().as_secs_f64()
        );
    } else {
        println!("{known} episodes already recorded; asking only (precision needs a fresh store)");
    }

    let mut took: Vec<Duration> = Vec::with_capacity(queries);
    let (mut warnings, mut right, mut asked_failed, mut warned_failed) = (0, 0, 0, 0);
    for q in 0..queries {
        let is_command = q % 4 == 0;
        let target = if is_command {
            command(q / 4 % COMMANDS)
        } else {
            file(q % FILES)
        };
        let p = TriggersParams {
            files: if is_command {
                vec![]
            } else {
                vec![target.clone()]
            },
            command: is_command.then(|| target.clone()),
            state: ActionState {
                cwd: Some(CWD.into()),
                ..Default::default()
            },
            namespace: Some(NAMESPACE.into()),
            ..Default::default()
        };
        let started = Instant::now();
        let r = client.call::<Triggers>(&p).await?;
        took.push(started.elapsed());
        if truth.is_empty() {
            continue;
        }
        for w in &r.warnings {
            warnings += 1;
            let on_target = w.episodes.iter().all(|id| match w.kind {
                WarningKind::Similar => truth.get(id).is_some_and(|t| t.starts_with("cargo test")),
                _ => truth.get(id) == Some(&target),
            });
            right += usize::from(on_target && w.target == target);
        }
        let fragile = if is_command {
            (q / 4 % COMMANDS).is_multiple_of(6)
        } else {
            (q % FILES).is_multiple_of(10)
        };
        if fragile {
            asked_failed += 1;
            warned_failed += usize::from(r.warnings.iter().any(|w| w.kind == WarningKind::Failure));
        }
    }
    took.sort();
    println!(
        "memory.triggers at {} episodes: p50 {:.2} ms  p95 {:.2} ms  p99 {:.2} ms  ({queries} lookups, through the socket)",
        known.max(episodes),
        percentile(&took, 0.50),
        percentile(&took, 0.95),
        percentile(&took, 0.99)
    );
    if !truth.is_empty() {
        println!(
            "warnings: {warnings}; about the right target: {right} (precision {:.3}); fragile targets warned: {warned_failed} of {asked_failed}",
            right as f64 / warnings.max(1) as f64
        );
    }
    Ok(())
}
