//! Hardware self-awareness through the real daemon: profile, snapshots stored and returned at
//! the asked step, processes, budget; on a machine without an NVIDIA driver nothing fails.

use std::time::{Duration, Instant};

use mnemo_client::ClientError;
use mnemo_protocol::system::*;
use mnemo_protocol::time::parse_micros;
use mnemo_protocol::NoParams;
use mnemo_tests::{Daemon, Embedder};

const FAST: &str = "[hardware]\nsnapshot_interval_secs = 1\nprocess_interval_secs = 1\nflush_every = 2\nprobe_inference = false\n";

#[tokio::test]
async fn snapshots_are_stored_and_returned_at_the_asked_step() {
    let mut daemon = Daemon::start_configured(Embedder::Hashed, FAST, &[]);
    let mut c = daemon.client().await;
    // Snapshots come every second; wait for a few.
    let deadline = Instant::now() + Duration::from_secs(30);
    while c
        .call::<SystemHistory>(&SystemHistoryParams::default())
        .await
        .unwrap()
        .points
        .len()
        < 4
    {
        assert!(Instant::now() < deadline, "no 4 snapshots in 30 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let raw = c
        .call::<SystemHistory>(&SystemHistoryParams::default())
        .await
        .unwrap();
    assert_eq!(raw.step, 1);
    assert!(
        raw.points.len() >= 4,
        "{} points after 5.5 s at 1 s",
        raw.points.len()
    );
    assert!(raw
        .points
        .iter()
        .all(|p| p["cpu_pct"].is_number() && p["span_secs"] == 1));

    let stepped = c
        .call::<SystemHistory>(&SystemHistoryParams {
            step: Some(2),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(stepped.step, 2);
    let times: Vec<i64> = stepped
        .points
        .iter()
        .map(|p| parse_micros(p["at"].as_str().unwrap()).unwrap())
        .collect();
    assert!(
        times.len() >= 2 && times.len() < raw.points.len(),
        "{times:?}"
    );
    for t in &times {
        assert_eq!(t % 2_000_000, 0, "points sit on 2 s boundaries");
    }
    assert!(stepped.points.iter().all(|p| p["span_secs"] == 2));

    let only = c
        .call::<SystemHistory>(&SystemHistoryParams {
            fields: Some(vec!["ram_pct".into()]),
            ..Default::default()
        })
        .await
        .unwrap();
    let keys: Vec<&String> = only.points[0].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["at", "ram_pct"]);
    let err = c
        .call::<SystemHistory>(&SystemHistoryParams {
            fields: Some(vec!["bogus".into()]),
            ..Default::default()
        })
        .await;
    assert!(
        matches!(err, Err(ClientError::Rpc(e)) if e.code == -32602 && e.message.contains("bogus"))
    );

    // Stored, not just in memory: they are there after a restart.
    let before = raw.points.len();
    drop(c);
    daemon.signal(libc::SIGTERM);
    assert!(daemon.wait_exit(Duration::from_secs(2)).unwrap().success());
    daemon.restart();
    let after = daemon
        .client()
        .await
        .call::<SystemHistory>(&SystemHistoryParams::default())
        .await
        .unwrap();
    assert!(
        after.points.len() >= before,
        "{} stored of {before}",
        after.points.len()
    );
}

#[tokio::test]
async fn profile_snapshot_processes_and_budget() {
    let daemon = Daemon::start_configured(Embedder::Hashed, FAST, &[]);
    let mut c = daemon.client().await;
    // A snapshot comes every second, the inventory too; wait for both.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let snapshot = c.call::<SnapshotNow>(&NoParams {}).await.unwrap();
        let procs = c
            .call::<Processes>(&ProcessesParams::default())
            .await
            .unwrap();
        if snapshot.snapshot.is_some() && procs.taken_at.is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no snapshot or inventory in 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let p = c.call::<Profile>(&NoParams {}).await.unwrap();
    assert!(p.ram_total_bytes > 0 && p.cpu_threads >= 1);
    assert!(p.constraints.recommended_context_tokens >= 2048 && !p.constraints.reason.is_empty());

    let now = c.call::<SnapshotNow>(&NoParams {}).await.unwrap();
    let s = now.snapshot.expect("a snapshot after 2.5 s");
    assert!(s.ram_pct.is_some() && s.daemon_rss_bytes.is_some() && s.sampler_cpu_us.is_some());
    if now.gpu_status.starts_with("no NVML") {
        // This machine: no driver. No GPU rows, a status saying why, nothing failed.
        assert!(s.gpus.is_empty() && p.gpus.is_empty() && !p.capabilities.cuda);
    }

    let procs = c
        .call::<Processes>(&ProcessesParams {
            sort: Some("name".into()),
            limit: Some(10_000),
            ..Default::default()
        })
        .await
        .unwrap();
    let me = procs
        .processes
        .iter()
        .find(|e| e.pid == daemon.pid())
        .expect("mnemod in its own inventory");
    assert_eq!(me.name, "mnemod");
    assert!(procs
        .processes
        .iter()
        .all(|e| ["inference", "ide", "browser", "system", "user_app"]
            .contains(&e.category.as_str())));
    let err = c
        .call::<Processes>(&ProcessesParams {
            sort: Some("size".into()),
            ..Default::default()
        })
        .await;
    assert!(matches!(err, Err(ClientError::Rpc(e)) if e.code == -32602));

    let b = c.call::<SystemBudget>(&NoParams {}).await.unwrap();
    assert_eq!(b.base_tokens, p.constraints.recommended_context_tokens);
    assert_eq!(
        b.core_tokens + b.session_tokens + b.retrieved_tokens,
        b.total_tokens
    );
    assert!(b.reason.contains("RAM at"), "{}", b.reason);

    let status = c
        .call::<mnemo_protocol::daemon::Status>(&NoParams {})
        .await
        .unwrap();
    let hw = status
        .components
        .iter()
        .find(|c| c.name == "hardware")
        .unwrap();
    assert!(hw.detail.contains("GPU:"), "{}", hw.detail);
}

#[test]
fn cli_system_commands() {
    let daemon = Daemon::start_configured(Embedder::Hashed, FAST, &[]);
    // Snapshots and the inventory come every second; poll until the CLI shows both.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let ready = |args: &[&str], want: &str| {
        let out = daemon.cli(args, "");
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains(want)
    };
    while !(ready(&["system", "processes"], "CATEGORY") && ready(&["system", "now"], "ram")) {
        assert!(
            std::time::Instant::now() < deadline,
            "no snapshot or inventory in 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    for (args, want) in [
        (&["system", "profile"][..], "fits"),
        (&["system", "now"], "ram"),
        (&["system", "history", "--step", "2"], "2 s apart"),
        (&["system", "processes", "--sort", "memory"], "CATEGORY"),
        (&["system", "budget"], "tokens"),
    ] {
        let out = daemon.cli(args, "");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains(want),
            "{args:?}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = daemon.cli(&["system", "now", "--json"], "");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["snapshot"]["cpu_pct"].is_number());
}
