//! A hostile or busy world: fuzzed frames each get a proper JSON-RPC reply and never take
//! mnemod down; many clients at once lose nothing and find everything by its words.

use mnemo_protocol::daemon::Status;
use mnemo_protocol::NoParams;
use mnemo_tests::Daemon;

#[tokio::test]
async fn fuzzed_frames_get_proper_replies_and_mnemod_stays_up() {
    let mut daemon = Daemon::start();
    // A fixed seed, so a failure here is the same failure on every run.
    let frames = mnemo_bench::fuzz::frames(17);
    let report = mnemo_bench::fuzz::run(&daemon.socket, frames, 3000, |_| {})
        .await
        .expect("mnemod stopped answering");
    assert_eq!(report.frames, 3000);
    assert_eq!(report.improper_count, 0, "{:#?}", report.improper);
    assert_eq!(
        report.dropped, 0,
        "mnemod dropped a connection over a frame"
    );
    assert!(report.replies > 2000, "{report:?}");
    assert!(daemon.wait_exit(std::time::Duration::ZERO).is_none());
    let status = daemon.client().await.call::<Status>(&NoParams {}).await;
    assert!(status.is_ok(), "{status:?}");
}

/// `mnemo bench idle` reads mnemod's CPU time and memory at rest and names the machine and
/// the build it measures.
#[cfg(target_os = "linux")]
#[test]
fn bench_idle_reports_cpu_and_memory_at_rest() {
    let daemon = Daemon::start();
    let out = daemon.cli(&["bench", "idle", "--secs", "1"], "");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("build) at "), "{text}");
    assert!(text.contains("machine: "), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("idle over"))
        .expect(&text);
    assert!(
        line.contains("% of one core") && line.contains("MB allocated"),
        "{line}"
    );
}

/// `mnemo bench search --no-exact` times the searches and the vector leg through the socket
/// and leaves out the exact scans (minutes at 1M memories), saying so.
#[test]
fn bench_search_without_exact_scans_says_it_skipped_them() {
    let daemon = Daemon::start();
    let args = [
        "bench",
        "search",
        "--sizes",
        "300",
        "--queries",
        "5",
        "--no-exact",
    ];
    let out = daemon.cli(&args, "");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("search Hybrid at 300 memories: p50 "),
        "{text}"
    );
    assert!(text.contains("exact scans skipped (--no-exact)"), "{text}");
    assert!(!text.contains("recall@10"), "{text}");
    assert!(text.contains("mnemod at 300: RSS "), "{text}");
}

#[test]
fn concurrent_clients_lose_nothing_and_forgotten_memories_are_gone() {
    let daemon = Daemon::start();
    let out = daemon.cli(
        &[
            "bench",
            "load",
            "--clients",
            "8",
            "--ops",
            "40",
            "--seed",
            "3",
        ],
        "",
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for expected in [
        "  errors: 0\n",
        " 0 unreadable;",
        "missed by their own word: text 0, hybrid 0,",
        "still found: 0\n",
    ] {
        assert!(text.contains(expected), "no {expected:?} in:\n{text}");
    }
}
