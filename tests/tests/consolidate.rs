//! Consolidation against the real daemon: each phase's effect on a seeded store, yielding to
//! a request and finishing later, and a SIGKILL mid-run that the next run recovers from.

use std::time::{Duration, Instant};

use mnemo_client::Client;
use mnemo_protocol::consolidate::{
    ConsolidateRun, ConsolidateRuns, ConsolidateStatus, ConsolidationStatus, Phase, PhaseState,
    RunRecord, RunStatus, RunsParams,
};
use mnemo_protocol::memory::{
    Add, AddParams, Get, GetParams, History, HistoryParams, List, ListParams, Memory, MemoryKind,
    Search, SearchParams,
};
use mnemo_protocol::NoParams;
use mnemo_tests::{wait_for, Daemon, Embedder};

async fn add(c: &mut Client, content: &str, f: impl FnOnce(&mut AddParams)) -> Memory {
    let mut p = AddParams {
        content: content.into(),
        ..Default::default()
    };
    f(&mut p);
    c.call::<Add>(&p).await.unwrap()
}

async fn get(c: &mut Client, id: &str) -> Memory {
    c.call::<Get>(&GetParams { id: id.into() }).await.unwrap()
}

async fn status(c: &mut Client) -> ConsolidationStatus {
    c.call::<ConsolidateStatus>(&NoParams {}).await.unwrap()
}

async fn run_record(c: &mut Client, id: &str) -> Option<RunRecord> {
    let runs = c
        .call::<ConsolidateRuns>(&RunsParams { limit: Some(50) })
        .await
        .unwrap();
    runs.runs.into_iter().find(|r| r.id == id)
}

/// Polls until `done` holds, failing with `what` after a minute.
async fn until<T>(
    c: &mut Client,
    what: &str,
    mut done: impl FnMut(&ConsolidationStatus) -> Option<T>,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s = status(c).await;
        if let Some(v) = done(&s) {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {s:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// SIGKILLs `daemon` once its run has done `done` items of `phase` (a client `c` watches),
/// starts it again and returns a client of the new one.
async fn kill_once(
    daemon: &mut Daemon,
    c: &mut Client,
    what: &str,
    phase: Phase,
    done: u64,
) -> Client {
    until(c, what, |s| {
        let p = s.progress.as_ref()?;
        (p.phase == phase && p.done >= done).then_some(())
    })
    .await;
    daemon.crash();
    daemon.restart();
    daemon.client().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_shows_what_each_phase_did() {
    // Strength halves every ~2.6 s here, so a few seconds age a memory by months.
    let daemon = Daemon::start_configured(
        Embedder::Hashed,
        "[consolidate]\nenabled = false\nhalf_life_days = 0.00003\nsummary_min_age_days = 1\n",
        &["--test-clock"],
    );
    let mut c = daemon.client().await;

    // Re-adding the same fact does not grow the store.
    let tea = add(&mut c, "I like green tea in the morning", |_| {}).await;
    for _ in 0..2 {
        let again = add(&mut c, "I like  green tea in the MORNING", |_| {}).await;
        assert_eq!(again.id, tea.id);
    }
    // Near-duplicates (same words, other punctuation) merge in the dedup phase.
    let birthday = add(&mut c, "Ann's birthday is on May 3rd", |_| {}).await;
    let birthday_again = add(&mut c, "Ann's birthday is on May 3rd!", |_| {}).await;
    assert_ne!(birthday.id, birthday_again.id);
    // An old, unremarkable trip: a cluster to summarise.
    let mut trip = Vec::new();
    for (day, text) in [
        (
            "2026-01-01",
            "Went hiking with Ann on the ridge trail. It rained.",
        ),
        ("2026-01-02", "Ann found a bird nest near the hut."),
        ("2026-01-02", "We ate sandwiches at the top."),
        ("2026-01-03", "Drove back home in the evening."),
    ] {
        let m = add(&mut c, text, |p| {
            p.session_id = Some("trip".into());
            p.occurred_at = Some(day.into());
            p.salience = Some(2.0);
        })
        .await;
        trip.push(m.id);
    }
    let vital = add(&mut c, "My passport number is in the blue folder", |p| {
        p.salience = Some(9.0)
    })
    .await;
    let trivia = add(&mut c, "The cafe had a new cup design", |p| {
        p.salience = Some(1.0)
    })
    .await;
    c.call::<Search>(&SearchParams {
        query: "green tea".into(),
        k: Some(1),
        ..Default::default()
    })
    .await
    .unwrap();
    let before = c
        .call::<List>(&ListParams {
            limit: Some(100),
            ..Default::default()
        })
        .await
        .unwrap()
        .memories
        .len();
    assert_eq!(before, 9);
    // Decay is what is tested, and it needs time to pass: about four half-lives of the 2.6 s
    // configured above, on the daemon's clock.
    daemon.advance_clock(10.0).await;

    let run = daemon.consolidate_now();
    assert_eq!(run.status, RunStatus::Completed);
    assert!(run.phases.iter().all(|p| p.state == PhaseState::Done));

    // Access folding: two re-adds and one search result.
    assert_eq!(run.count(Phase::Access, "events"), 3);
    assert_eq!(get(&mut c, &tea.id).await.access_count, 3);
    // Decay: salience sets the rate, accesses lift, the weak are marked faded, not deleted.
    assert!(run.count(Phase::Decay, "weakened") >= 6, "{run:#?}");
    let (vital, trivia) = (get(&mut c, &vital.id).await, get(&mut c, &trivia.id).await);
    assert!(vital.strength > trivia.strength, "{vital:?} {trivia:?}");
    assert!(
        trivia.strength < 0.1 && trivia.faded_at.is_some(),
        "{trivia:?}"
    );
    assert!(get(&mut c, &tea.id).await.strength > trivia.strength);
    // Dedup: the newer birthday closed into the older, which keeps it in its history.
    assert_eq!(run.count(Phase::Dedup, "merged"), 1);
    let merged = get(&mut c, &birthday_again.id).await;
    assert_eq!(merged.superseded_by.as_deref(), Some(birthday.id.as_str()));
    assert!(merged.valid_to.is_some());
    let history = c
        .call::<History>(&HistoryParams {
            id: birthday.id.clone(),
        })
        .await
        .unwrap();
    let ids: Vec<_> = history.versions.iter().map(|m| m.id.as_str()).collect();
    assert!(ids.contains(&birthday_again.id.as_str()), "{ids:?}");
    assert_eq!(get(&mut c, &birthday.id).await.access_count, 1);
    // Summaries: one summary listing the trip, whose memories are demoted, not deleted.
    assert_eq!(run.count(Phase::Summaries, "summaries"), 1);
    assert_eq!(run.count(Phase::Summaries, "demoted"), 4);
    let summaries = c
        .call::<List>(&ListParams {
            filter: mnemo_protocol::memory::Filter {
                kind: Some(MemoryKind::Summary),
                ..Default::default()
            },
            ..Default::default()
        })
        .await
        .unwrap()
        .memories;
    assert_eq!(summaries.len(), 1);
    let summary = &summaries[0];
    let mut sources = summary.summarizes.clone();
    sources.sort();
    let mut expected = trip.clone();
    expected.sort();
    assert_eq!(sources, expected);
    assert!(summary
        .content
        .contains("Summary of 4 memories from session trip"));
    assert!(summary
        .content
        .contains("- Ann found a bird nest near the hut."));
    for id in &trip {
        let m = get(&mut c, id).await;
        assert_eq!(m.summarized_by.as_deref(), Some(summary.id.as_str()));
        assert!(m.valid_to.is_none(), "demoted, still current");
    }
    // A search answers with the demotion too.
    let nest = c
        .call::<Search>(&SearchParams {
            query: "Ann found a bird nest near the hut".into(),
            k: Some(1),
            ..Default::default()
        })
        .await
        .unwrap()
        .hits;
    assert_eq!(nest[0].memory.id, trip[1]);
    assert_eq!(
        nest[0].memory.summarized_by.as_deref(),
        Some(summary.id.as_str())
    );
    // Storage: compaction leaves fewer fragments than the many small commits made.
    let (before, after) = (
        run.count(Phase::Storage, "fragments_before"),
        run.count(Phase::Storage, "fragments_after"),
    );
    assert!(after < before, "fragments {before} -> {after}");

    // A second run finds nothing new to merge or summarise.
    let second = daemon.consolidate_now();
    assert_eq!(second.count(Phase::Dedup, "merged"), 0);
    assert_eq!(second.count(Phase::Summaries, "summaries"), 0);

    // Forgetting a trip memory removes the summary quoting it and frees the others.
    let forgot = daemon.cli(&["forget", &trip[0]], "");
    assert!(
        forgot.status.success(),
        "{}",
        String::from_utf8_lossy(&forgot.stderr)
    );
    let gone = c
        .call::<Get>(&GetParams {
            id: summary.id.clone(),
        })
        .await;
    assert!(gone.is_err(), "the summary quoted a forgotten memory");
    assert_eq!(get(&mut c, &trip[1]).await.summarized_by, None);

    // The text report names every phase.
    let text = daemon.cli(&["consolidate", "runs", "--limit", "1"], "");
    let text = String::from_utf8_lossy(&text.stdout);
    for phase in ["access", "decay", "dedup", "summaries", "storage"] {
        assert!(text.contains(phase), "{text}");
    }
}

/// Dedup's pass holds no merges from one block to the next: a memory merged in one block is
/// closed, so a later block neither reads nor finds it again. A copy added one block past
/// the others merges with them in the first block, as the nearest of the first copy, and the
/// oldest counts every copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_across_dedup_blocks_merge_once_into_the_oldest() {
    copies_merge_once_into_the_oldest("[consolidate]\nenabled = false\n", None).await;
}

/// The same with the vectors' signs held (past `store.advanced.vectors_in_memory_max_rows`, here
/// 10), where one scan of them finds the neighbours of a block's memories at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_found_by_the_scan_of_signs_merge_once_into_the_oldest() {
    let config =
        "[consolidate]\nenabled = false\n[store.advanced]\nvectors_in_memory_max_rows = 10\n";
    copies_merge_once_into_the_oldest(config, Some("two bits a component of their vectors")).await;
}

/// Three copies of a memory, a block's worth of others (256) between the second and the
/// third; dedup after a restart whose log says `held` of the codes read, when asked.
async fn copies_merge_once_into_the_oldest(config: &str, held: Option<&str>) {
    let mut daemon = Daemon::start_configured(Embedder::Hashed, config, &[]);
    let mut c = daemon.client().await;
    let first = add(&mut c, "Ann's birthday is on May 3rd", |_| {}).await;
    let second = add(&mut c, "Ann's birthday is on May 3rd!", |_| {}).await;
    // Past one block of 256 new memories (dedup's unit), none near another.
    for i in 0..256 {
        add(
            &mut c,
            &format!("item{i} alpha{i} beta{i} gamma{i}"),
            |_| {},
        )
        .await;
    }
    let third = add(&mut c, "Ann's birthday is on May 3rd!!", |_| {}).await;
    if let Some(held) = held {
        drop(c);
        daemon.stop();
        daemon.restart();
        let log = || std::future::ready(daemon.log_text().contains(held).then_some(()));
        wait_for(Duration::from_secs(60), held, log).await;
        c = daemon.client().await;
    }

    let run = daemon.consolidate_now();
    // The 256 of the first block, and of the three new memories of the second the two
    // still current.
    assert_eq!(run.count(Phase::Dedup, "compared"), 258, "{run:#?}");
    assert_eq!(run.count(Phase::Dedup, "merged"), 2, "{run:#?}");
    for copy in [&second, &third] {
        let merged = get(&mut c, &copy.id).await;
        assert_eq!(merged.superseded_by.as_deref(), Some(first.id.as_str()));
    }
    assert_eq!(get(&mut c, &first.id).await.access_count, 2);
}

/// Seeds `n` memories and one search that returns them all: `n` access events to fold, one
/// unit of work each at `batch_rows = 1`.
async fn seed_accesses(c: &mut Client, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(add(c, &format!("walnut note number {i}"), |_| {}).await.id);
    }
    let hits = c
        .call::<Search>(&SearchParams {
            query: "walnut note".into(),
            k: Some(n),
            ..Default::default()
        })
        .await
        .unwrap()
        .hits;
    assert_eq!(hits.len(), n);
    ids
}

/// A run paced at 300 ms per unit, so there is time to interrupt it.
const SLOW: &str =
    "batch_rows = 1\nthrottle_ms = 300\nmax_other_cpu_pct = 100.0\nmax_ram_pct = 100.0\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_run_yields_to_a_request_and_completes_later() {
    let config = format!(
        "[consolidate]\nidle_after_secs = 1\ncheck_interval_secs = 1\nmin_interval_secs = 0\n{SLOW}"
    );
    let daemon = Daemon::start_configured(Embedder::Hashed, &config, &[]);
    let mut c = daemon.client().await;
    seed_accesses(&mut c, 12).await;
    // Idle for a second: a run starts by itself.
    let run_id = until(&mut c, "an idle run to start", |s| {
        let run = s.current.as_ref()?;
        (run.status == RunStatus::Running && s.progress.as_ref()?.done >= 1).then(|| run.id.clone())
    })
    .await;
    let st = status(&mut c).await;
    assert_eq!(
        st.current.as_ref().unwrap().trigger,
        mnemo_protocol::consolidate::RunTrigger::Idle
    );

    // A request for memory work is answered, and the run steps aside.
    let hits = c
        .call::<Search>(&SearchParams {
            query: "walnut".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(!hits.hits.is_empty());
    until(&mut c, "the run to yield", |s| {
        s.current
            .as_ref()
            .filter(|r| r.id == run_id && r.status == RunStatus::Yielded)
            .map(|_| ())
    })
    .await;
    // Idle again: the same run resumes where it stopped and completes.
    let done = until(&mut c, "the run to complete", |s| {
        s.last_completed.clone().filter(|r| r.id == run_id)
    })
    .await;
    assert!(done.yields >= 1);
    assert_eq!(done.yield_latency_ms.len() as u32, done.yields);
    println!(
        "yield latency (ms from request to the run standing still): {:?}",
        done.yield_latency_ms
    );
    // The 12 seeded, and those of the request it yielded to when that came before the access
    // phase began (the edges phase runs first).
    assert!(done.count(Phase::Access, "events") >= 12, "{done:?}");
    assert!(done.phases.iter().all(|p| p.state == PhaseState::Done));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_run_is_recovered_by_the_next_run() {
    let config = format!("[consolidate]\nenabled = false\n{SLOW}");
    let mut daemon = Daemon::start_configured(Embedder::Hashed, &config, &[]);
    let mut c = daemon.client().await;
    let ids = seed_accesses(&mut c, 12).await;
    let started = c.call::<ConsolidateRun>(&NoParams {}).await.unwrap();
    let what = "the run to fold a few accesses";
    let mut c = kill_once(&mut daemon, &mut c, what, Phase::Access, 3).await;

    // Consistent: every memory is there, and the run waits to resume.
    for id in &ids {
        let m = get(&mut c, id).await;
        assert!(m.valid_to.is_none());
        assert!(m.access_count <= 1, "{m:?}");
    }
    let s = status(&mut c).await;
    let waiting = s.current.expect("the interrupted run");
    assert_eq!(waiting.id, started.run_id);
    assert_eq!(waiting.status, RunStatus::Interrupted);

    // The next run is that run, resumed, and it folds each access exactly once.
    let run = daemon.consolidate_now();
    assert_eq!(run.id, started.run_id);
    assert_eq!(run.status, RunStatus::Completed);
    for id in &ids {
        assert_eq!(get(&mut c, id).await.access_count, 1, "{id}");
    }
    assert!(run_record(&mut c, &run.id).await.is_some());
}

/// A run killed while it writes summaries, resumed, summarises each cluster once: no second
/// summary of the same memories, and every source points at its cluster's one summary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_while_summarising_leaves_each_cluster_summarised_once() {
    let config = format!(
        "[consolidate]\nenabled = false\nsummary_min_age_days = 1\nsummary_max_strength = 1.5\n\
         summary_min_cluster = 3\n{SLOW}"
    );
    let mut daemon = Daemon::start_configured(Embedder::Hashed, &config, &[]);
    let mut c = daemon.client().await;
    const WORDS: [&str; 12] = [
        "harbor", "violin", "granite", "meadow", "lantern", "orchid", "falcon", "copper",
        "glacier", "saffron", "canyon", "velvet",
    ];
    let mut trips: Vec<Vec<String>> = Vec::new();
    for (t, place) in WORDS.iter().enumerate() {
        let mut ids = Vec::new();
        for (day, thing) in ["tickets", "weather", "dinner"].iter().enumerate() {
            let text = format!("{place} trip: {thing} on day {day}");
            let m = add(&mut c, &text, |p| {
                p.session_id = Some(format!("trip {t}"));
                p.occurred_at = Some(format!("2026-01-0{}", day + 1));
                p.salience = Some(2.0);
            })
            .await;
            ids.push(m.id);
        }
        trips.push(ids);
    }
    daemon
        .client()
        .await
        .call::<ConsolidateRun>(&NoParams {})
        .await
        .unwrap();
    let what = "the run to summarise most trips";
    let mut c = kill_once(&mut daemon, &mut c, what, Phase::Summaries, 9).await;
    let run = daemon.consolidate_now();
    assert_eq!(run.status, RunStatus::Completed);

    let summaries = c
        .call::<List>(&ListParams {
            filter: mnemo_protocol::memory::Filter {
                kind: Some(MemoryKind::Summary),
                ..Default::default()
            },
            limit: Some(100),
            ..Default::default()
        })
        .await
        .unwrap()
        .memories;
    assert_eq!(summaries.len(), trips.len(), "one summary a trip");
    for trip in &trips {
        let by = get(&mut c, &trip[0]).await.summarized_by.expect("demoted");
        let summary = summaries.iter().find(|s| s.id == by).expect("its summary");
        let mut sources = summary.summarizes.clone();
        sources.sort();
        let mut expected = trip.clone();
        expected.sort();
        assert_eq!(sources, expected);
        for id in &trip[1..] {
            assert_eq!(get(&mut c, id).await.summarized_by.as_deref(), Some(&*by));
        }
    }
}
