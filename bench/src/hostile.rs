//! `mnemo bench fuzz`: hostile frames from `mnemo_bench::fuzz`, against a running mnemod.

use std::path::Path;
use std::time::Instant;

use anyhow::Context;

pub async fn fuzz(socket: &Path, count: usize, seed: u64) -> anyhow::Result<()> {
    let started = Instant::now();
    let report = mnemo_bench::fuzz::run(socket, mnemo_bench::fuzz::frames(seed), count, |n| {
        if n % 1000 == 0 {
            eprintln!("  {n}/{count} frames");
        }
    })
    .await
    .context("mnemod stopped answering during the fuzz run")?;
    println!(
        "fuzz (seed {seed}): {} frames, {} replies in {:.1} s; improper replies: {}; connections dropped: {}; mnemod alive: yes",
        report.frames,
        report.replies,
        started.elapsed().as_secs_f64(),
        report.improper_count,
        report.dropped
    );
    for line in &report.improper {
        println!("  improper: {line}");
    }
    Ok(())
}
