//! Memory for agents that act, end to end through the real daemon: episodes recorded over
//! the socket and from the command line, warnings before acting (with what fixed the last
//! failure), nothing for a state with no history, procedures learned by consolidation that
//! gain and lose confidence, stats from recorded sessions, the package's warnings, a forget
//! that takes an episode out of the warnings, and bad requests answered with what to do.

use mnemo_client::Client;
use mnemo_protocol::agent::*;
use mnemo_protocol::context::{Build, BuildParams, ItemKind, Tier};
use mnemo_protocol::memory::{Filter, Forget, ForgetParams, List, ListParams};
use mnemo_protocol::session::{End, EndParams, MessageParams, SendMessage, Start, StartParams};
use mnemo_tests::Daemon;

async fn record(
    c: &mut Client,
    action: Action,
    target: &str,
    outcome: Outcome,
    error: Option<&str>,
    cwd: &str,
    at: &str,
) -> Episode {
    c.call::<RecordEpisode>(&RecordParams {
        action,
        targets: vec![target.into()],
        outcome,
        error: error.map(str::to_string),
        duration_ms: Some(1500),
        state: ActionState {
            cwd: Some(cwd.into()),
            ..Default::default()
        },
        at: Some(at.into()),
        ..Default::default()
    })
    .await
    .unwrap()
    .episode
}

async fn triggers(c: &mut Client, p: TriggersParams) -> TriggersResult {
    c.call::<Triggers>(&p).await.unwrap()
}

fn for_files(files: &[&str], cwd: &str) -> TriggersParams {
    TriggersParams {
        files: files.iter().map(|f| f.to_string()).collect(),
        state: ActionState {
            cwd: Some(cwd.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[tokio::test]
async fn failed_edits_warn_the_next_one_with_the_error_and_the_fix() {
    let daemon = Daemon::start();
    let mut c = daemon.client().await;
    let repo = daemon.home.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let cwd = repo.display().to_string();

    // A state with no history: nothing, and nothing is invented.
    let none = triggers(&mut c, for_files(&["src/auth.py"], &cwd)).await;
    assert!(none.warnings.is_empty(), "{none:?}");

    for (i, at) in [
        "2026-11-20T09:00:00Z",
        "2026-11-20T09:05:00Z",
        "2026-11-20T09:10:00Z",
    ]
    .into_iter()
    .enumerate()
    {
        let e = record(
            &mut c,
            Action::Edit,
            "src/auth.py",
            Outcome::Failure,
            Some(&format!(
                "test_login failed: expected 200, got 500 (try {i})"
            )),
            &cwd,
            at,
        )
        .await;
        assert_eq!(e.targets, [format!("{cwd}/src/auth.py")], "made absolute");
        assert!(
            e.content.starts_with("Edit of src/auth.py failed"),
            "{}",
            e.content
        );
    }
    record(
        &mut c,
        Action::Command,
        "make migrate",
        Outcome::Success,
        None,
        &cwd,
        "2026-11-20T09:12:00Z",
    )
    .await;
    record(
        &mut c,
        Action::Edit,
        "./src/auth.py",
        Outcome::Success,
        None,
        &cwd,
        "2026-11-20T09:15:00Z",
    )
    .await;

    let got = triggers(&mut c, for_files(&["src/auth.py", "src/other.py"], &cwd)).await;
    assert_eq!(got.warnings.len(), 1, "{got:#?}");
    let w = &got.warnings[0];
    assert_eq!(w.kind, WarningKind::Failure);
    assert!(
        w.text.contains("expected 200, got 500 (try 2)"),
        "the last error: {}",
        w.text
    );
    assert!(w.text.contains("3 of 4 tries failed"), "{}", w.text);
    let fix = w.fixed_by.as_deref().expect("what worked afterwards");
    assert!(
        fix.contains("`make migrate`") && fix.contains("auth.py"),
        "{fix}"
    );
    assert_eq!(w.episodes.len(), 3);
    assert!(w.confidence > 0.0 && w.confidence <= 1.0);

    // The episodes are memories with typed columns: listed by outcome, found by search.
    let failures = c
        .call::<List>(&ListParams {
            filter: Filter {
                action: Some(Action::Edit),
                outcome: Some(Outcome::Failure),
                ..Default::default()
            },
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(failures.memories.len(), 3);
    assert!(failures
        .memories
        .iter()
        .all(|m| m.outcome.as_deref() == Some("failure") && m.duration_ms == Some(1500)));

    // The package for the edit carries the warning in its retrieved tier.
    let package = c
        .call::<Build>(&BuildParams {
            query: Some("change how login is checked".into()),
            files: vec![format!("{cwd}/src/auth.py")],
            budget: Some(800),
            ..Default::default()
        })
        .await
        .unwrap();
    let retrieved = package
        .tiers
        .iter()
        .find(|t| t.tier == Tier::Retrieved)
        .unwrap();
    assert!(
        retrieved
            .items
            .iter()
            .any(|i| i.kind == ItemKind::Warning && i.text.contains("got 500")),
        "{:#?}",
        retrieved.items
    );

    // Forgotten episodes warn no more.
    let ids: Vec<String> = failures.memories.iter().map(|m| m.id.clone()).collect();
    c.call::<Forget>(&ForgetParams { ids, filter: None })
        .await
        .unwrap();
    let after = triggers(&mut c, for_files(&["src/auth.py"], &cwd)).await;
    assert!(after.warnings.is_empty(), "{after:#?}");
}

#[tokio::test]
async fn a_repeated_sequence_becomes_a_procedure_that_gains_and_loses_confidence() {
    let daemon = Daemon::start();
    let mut c = daemon.client().await;
    let cwd = daemon.home.path().display().to_string();
    // One run of work a day, the same three steps.
    let run = |day: u32, last: Outcome| {
        let cwd = cwd.clone();
        let socket = daemon.client();
        async move {
            let mut c = socket.await;
            let at = |minute: u32| format!("2026-11-{day:02}T10:{minute:02}:00Z");
            record(
                &mut c,
                Action::Edit,
                "db/schema.sql",
                Outcome::Success,
                None,
                &cwd,
                &at(0),
            )
            .await;
            record(
                &mut c,
                Action::Command,
                "make migrate",
                Outcome::Success,
                None,
                &cwd,
                &at(2),
            )
            .await;
            let error = (last == Outcome::Failure).then_some("relation \"users\" does not exist");
            record(
                &mut c,
                Action::Command,
                "cargo test",
                last,
                error,
                &cwd,
                &at(4),
            )
            .await;
        }
    };
    run(1, Outcome::Success).await;
    run(2, Outcome::Success).await;
    daemon.consolidate_now();
    let learned = c
        .call::<ListProcedures>(&ProcedureListParams {
            kind: Some(ProcedureKind::Success),
            ..Default::default()
        })
        .await
        .unwrap()
        .procedures;
    let p = learned
        .iter()
        .find(|p| p.steps.len() == 3)
        .unwrap_or_else(|| panic!("a three-step procedure in {learned:#?}"));
    assert_eq!(p.trigger.target, format!("{cwd}/db/schema.sql"));
    assert_eq!(p.steps[1].target, "make migrate");
    assert_eq!((p.success_count, p.failure_count), (2, 0));
    assert_eq!(p.learned_from.len(), 6);

    // Its trigger now advises what comes next.
    let advice = triggers(&mut c, for_files(&["db/schema.sql"], &cwd)).await;
    let w = advice
        .warnings
        .iter()
        .find(|w| w.kind == WarningKind::Procedure)
        .unwrap_or_else(|| panic!("{advice:#?}"));
    assert!(
        w.text.contains("`make migrate`, then command `cargo test`"),
        "{}",
        w.text
    );

    run(3, Outcome::Success).await;
    daemon.consolidate_now();
    let again = c
        .call::<GetProcedure>(&ProcedureGetParams { id: p.id.clone() })
        .await
        .unwrap()
        .procedure;
    assert_eq!(again.success_count, 3);
    assert!(
        again.confidence > p.confidence,
        "{} > {}",
        again.confidence,
        p.confidence
    );

    run(4, Outcome::Failure).await;
    daemon.consolidate_now();
    let failed = c
        .call::<GetProcedure>(&ProcedureGetParams { id: p.id.clone() })
        .await
        .unwrap()
        .procedure;
    assert_eq!((failed.success_count, failed.failure_count), (3, 1));
    assert!(failed.confidence < again.confidence);

    let e = c
        .call::<GetProcedure>(&ProcedureGetParams {
            id: "proc-nope".into(),
        })
        .await
        .unwrap_err();
    assert!(e.to_string().contains("mnemo procedures"), "{e}");
}

#[tokio::test]
async fn stats_reflect_recorded_sessions_and_commands() {
    let daemon = Daemon::start();
    let mut c = daemon.client().await;
    for _ in 0..3 {
        let s = c
            .call::<Start>(&StartParams::default())
            .await
            .unwrap()
            .session;
        for text in [
            "The garden needs watering today",
            "Watering the garden tomorrow too",
        ] {
            c.call::<SendMessage>(&MessageParams {
                session_id: s.id.clone(),
                content: text.into(),
                ..Default::default()
            })
            .await
            .unwrap();
        }
        let cwd = daemon.home.path().display().to_string();
        let e = c
            .call::<RecordEpisode>(&RecordParams {
                action: Action::Command,
                targets: vec!["cargo build --release".into()],
                outcome: Outcome::Success,
                duration_ms: Some(60_000),
                state: ActionState {
                    session_id: Some(s.id.clone()),
                    cwd: Some(cwd),
                    ..Default::default()
                },
                ..Default::default()
            })
            .await
            .unwrap()
            .episode;
        assert_eq!(e.state.session_id.as_deref(), Some(s.id.as_str()));
        c.call::<End>(&EndParams { session_id: s.id })
            .await
            .unwrap();
    }
    let empty = c
        .call::<ListStats>(&StatsListParams::default())
        .await
        .unwrap();
    assert!(empty.stats.is_empty() && empty.note.is_some());
    daemon.consolidate_now();
    let stats = c
        .call::<ListStats>(&StatsListParams::default())
        .await
        .unwrap()
        .stats;
    let find = |category: StatCategory, metric: &str| {
        stats
            .iter()
            .find(|s| s.category == category && s.metric == metric)
            .unwrap_or_else(|| panic!("{category} {metric} in {stats:#?}"))
    };
    let count = find(StatCategory::Sessions, "count");
    assert_eq!((count.value, count.sample_size), (3.0, 3));
    // Two messages and one episode each.
    assert_eq!(find(StatCategory::Sessions, "messages.median").value, 3.0);
    assert_eq!(find(StatCategory::Commands, "cargo build").value, 3.0);
    let took = find(StatCategory::Durations, "command: cargo build");
    assert_eq!((took.value, took.sample_size), (60.0, 3));
    assert!(stats
        .iter()
        .any(|s| s.category == StatCategory::ActiveHours));
}

#[tokio::test]
async fn bad_requests_say_what_to_do_and_the_cli_records_and_warns() {
    let daemon = Daemon::start();
    let mut c = daemon.client().await;
    let bad = |p: RecordParams| {
        let socket = daemon.client();
        async move {
            socket
                .await
                .call::<RecordEpisode>(&p)
                .await
                .unwrap_err()
                .to_string()
        }
    };
    let e = bad(RecordParams::default()).await;
    assert!(e.contains("targets is empty"), "{e}");
    for (state, says) in [
        (
            ActionState {
                cwd: Some("relative".into()),
                ..Default::default()
            },
            "not absolute",
        ),
        (
            ActionState {
                session_id: Some("nope".into()),
                ..Default::default()
            },
            "nope",
        ),
    ] {
        let e = bad(RecordParams {
            targets: vec!["a.py".into()],
            state,
            ..Default::default()
        })
        .await;
        assert!(e.contains(says), "{e}");
    }
    let e = c
        .call::<Triggers>(&TriggersParams::default())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("name the state"), "{e}");

    // A shell hook's two lines: record a failed command, then ask before running it again.
    let dir = daemon.home.path().display().to_string();
    let out = daemon.cli(
        &[
            "episode",
            "record",
            "--action",
            "command",
            "--target",
            "npm run deploy",
            "--outcome",
            "failure",
            "--error",
            "-",
            "--cwd",
            &dir,
        ],
        "Error: missing API_TOKEN\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = daemon.cli(
        &[
            "triggers",
            "--command",
            "npm  run deploy",
            "--cwd",
            &dir,
            "--fail-on-warning",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(3), "a warning stops the hook");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("missing API_TOKEN"), "{text}");
    let out = daemon.cli(
        &["triggers", "--command", "ls", "--cwd", &dir, "--json"],
        "",
    );
    assert!(out.status.success());
    let quiet: TriggersResult = serde_json::from_slice(&out.stdout).unwrap();
    assert!(quiet.warnings.is_empty());
}

#[tokio::test]
async fn the_triggered_layer_can_be_turned_off() {
    let daemon = mnemo_tests::Daemon::start_configured(
        mnemo_tests::Embedder::Hashed,
        "[agent]\ntriggered = []\n",
        &[],
    );
    let mut c = daemon.client().await;
    let cwd = daemon.home.path().display().to_string();
    record(
        &mut c,
        Action::Edit,
        "x.py",
        Outcome::Failure,
        Some("boom"),
        &cwd,
        "2026-11-20T09:00:00Z",
    )
    .await;
    let got = triggers(&mut c, for_files(&["x.py"], &cwd)).await;
    assert!(got.warnings.is_empty(), "{got:#?}");
    assert_eq!(got.episodes_known, 1);
}

#[tokio::test]
async fn exported_episodes_warn_again_after_import() {
    let from = Daemon::start();
    let mut c = from.client().await;
    let cwd = from.home.path().display().to_string();
    record(
        &mut c,
        Action::Command,
        "terraform apply",
        Outcome::Failure,
        Some("state lock held"),
        &cwd,
        "2026-11-20T09:00:00Z",
    )
    .await;
    let file = from.home.path().join("export.jsonl");
    let out = from.cli(&["export", file.to_str().unwrap()], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let to = Daemon::start();
    let out = to.cli(&["import", file.to_str().unwrap()], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut c = to.client().await;
    let got = triggers(
        &mut c,
        TriggersParams {
            command: Some("terraform apply".into()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(got.warnings.len(), 1, "{got:#?}");
    assert!(got.warnings[0].text.contains("state lock held"));
}
