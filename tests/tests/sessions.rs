//! Sessions and context packages end to end through the real daemon: a conversation whose
//! messages are memories, a package that holds who the person is, the session and the
//! relevant older memory under a budget the tokenizer confirms, a summary written at the end
//! that a later package uses, living summaries from consolidation, profiles, an empty store,
//! and bad requests answered with what to do.

use mnemo_client::Client;
use mnemo_protocol::context::{Build, BuildParams, Format, ItemKind, Package, Tier};
use mnemo_protocol::daemon::Status;
use mnemo_protocol::memory::{Add, AddParams, Search, SearchParams};
use mnemo_protocol::session::*;
use mnemo_protocol::summary::{self, SummaryCategory};
use mnemo_protocol::NoParams;
use mnemo_tests::{Daemon, Embedder};

/// Counted as the daemon counts (its default tokenizer).
fn tokens(text: &str) -> u32 {
    tiktoken_rs::o200k_base_singleton().count_ordinary(text) as u32
}

async fn remember(c: &mut Client, content: &str, domain: Option<&str>, at: &str) {
    c.call::<Add>(&AddParams {
        content: content.into(),
        domain: domain.map(str::to_string),
        occurred_at: Some(at.into()),
        ..Default::default()
    })
    .await
    .unwrap();
}

async fn say(c: &mut Client, session: &str, role: Role, content: &str) -> MessageResult {
    c.call::<SendMessage>(&MessageParams {
        session_id: session.into(),
        role,
        content: content.into(),
        ..Default::default()
    })
    .await
    .unwrap()
}

/// A new chat session's id.
async fn open(c: &mut Client) -> String {
    c.call::<Start>(&StartParams::default())
        .await
        .unwrap()
        .session
        .id
}

async fn build(c: &mut Client, p: BuildParams) -> Package {
    c.call::<Build>(&p).await.unwrap()
}

fn tier(p: &Package, t: Tier) -> &mnemo_protocol::context::TierReport {
    p.tiers.iter().find(|r| r.tier == t).unwrap()
}

const CONVERSATION: [(Role, &str); 12] = [
    (
        Role::User,
        "Morning! Today I want to finish the invoice export for the bakery app.",
    ),
    (
        Role::Assistant,
        "Sure. Where did you leave the invoice export yesterday?",
    ),
    (
        Role::User,
        "The CSV writer works, but totals are off by a few cents.",
    ),
    (
        Role::Assistant,
        "That sounds like floating point rounding in the totals.",
    ),
    (
        Role::User,
        "Right, the totals are summed as f64 before rounding.",
    ),
    (
        Role::Assistant,
        "Summing integer cents instead would make the totals exact.",
    ),
    (
        Role::User,
        "Good idea, I'll switch the totals to integer cents.",
    ),
    (
        Role::Assistant,
        "Want a test that compares totals against the ledger?",
    ),
    (Role::User, "Yes, a ledger test would catch it next time."),
    (
        Role::Assistant,
        "I added a test that sums twenty invoices in cents.",
    ),
    (
        Role::User,
        "It passes now. I'm relieved, the bakery owner was getting anxious.",
    ),
    (
        Role::User,
        "I'll send the export to the bakery owner on Friday.",
    ),
];

#[tokio::test]
async fn a_session_feeds_the_package_and_its_summary_outlives_it() {
    // The last session's summary joins packages when the automatic layer is told to carry it.
    let daemon = Daemon::start_configured(
        Embedder::Minilm,
        "[agent]\nautomatic = [\"preferences\", \"corrections\", \"recent_session\"]\n",
        &[],
    );
    let mut c = daemon.client().await;
    remember(
        &mut c,
        "My name is Ana and I work at Crumb Labs.",
        None,
        "2026-01-05",
    )
    .await;
    remember(
        &mut c,
        "The bakery app stores invoice amounts in a Postgres numeric column.",
        Some("work"),
        "2026-02-01",
    )
    .await;
    remember(
        &mut c,
        "We adopted a rescue dog called Pixel.",
        Some("personal"),
        "2026-02-10",
    )
    .await;
    for i in 0..20 {
        remember(
            &mut c,
            &format!("Garden note {i}: watered the tomatoes and trimmed the basil."),
            Some("personal"),
            "2026-03-01",
        )
        .await;
    }

    let session = c
        .call::<Start>(&StartParams {
            kind: Some(SessionKind::Coding),
            source: Some("test".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .session;
    assert!(session.is_active());
    for (i, (role, text)) in CONVERSATION.iter().enumerate() {
        let m = say(&mut c, &session.id, *role, text).await;
        assert_eq!(m.turn, i as u64 + 1);
    }
    // The conversation is the memory: recall finds a message without any memory.add.
    let hits = c
        .call::<Search>(&SearchParams {
            query: "integer cents totals".into(),
            k: Some(3),
            ..Default::default()
        })
        .await
        .unwrap()
        .hits;
    assert_eq!(
        hits[0].memory.session_id.as_deref(),
        Some(session.id.as_str())
    );
    let status = c.call::<Status>(&NoParams {}).await.unwrap();
    assert_eq!(status.active_sessions, 1);

    let budget = 400;
    let package = build(
        &mut c,
        BuildParams {
            query: Some("how are invoice amounts stored in the bakery app".into()),
            session_id: Some(session.id.clone()),
            budget: Some(budget),
            explain: true,
            ..Default::default()
        },
    )
    .await;
    assert!(package.tokens <= budget, "{} > {budget}", package.tokens);
    assert_eq!(
        package.tokens,
        tokens(&package.text),
        "the tokenizer's own count"
    );
    assert!(package.text.contains("Name: Ana"), "{}", package.text);
    assert!(package
        .text
        .contains("I'll send the export to the bakery owner on Friday."));
    assert!(
        package.text.contains("Postgres numeric column"),
        "{}",
        package.text
    );
    let session_tier = tier(&package, Tier::Session);
    assert!(session_tier
        .items
        .iter()
        .any(|i| i.kind == ItemKind::Message));
    assert!(package.dropped_count > 0, "the garden notes do not all fit");
    assert!(package.dropped.iter().all(|d| !d.reason.is_empty()));
    assert!(package
        .tiers
        .iter()
        .flat_map(|t| &t.items)
        .all(|i| i.why.is_some()));
    // Each message at most once, though recall finds them too.
    assert_eq!(package.text.matches("Good idea, I'll switch").count(), 1);
    let living = tier(&package, Tier::Living);
    assert!(living.items.is_empty());
    assert!(living.sources[0]
        .note
        .as_deref()
        .unwrap()
        .contains("consolidation"));

    let ended = c
        .call::<End>(&EndParams {
            session_id: session.id.clone(),
        })
        .await
        .unwrap()
        .session;
    let summary = ended.summary.expect("a summary at the end");
    assert_eq!(ended.message_count, 12);
    assert!(summary.topics.iter().any(|t| t == "totals"), "{summary:?}");
    assert!(summary
        .commitments
        .iter()
        .any(|c| c.contains("send the export to the bakery owner")));
    assert_eq!(summary.emotional_arc.len(), 3);
    let e = c
        .call::<SendMessage>(&MessageParams {
            session_id: session.id.clone(),
            content: "one more thing".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("ended at") && e.to_string().contains("session.start"),
        "{e}"
    );

    // A later package without the session starts from its summary.
    let later = build(
        &mut c,
        BuildParams {
            query: Some("what was I doing on the bakery app".into()),
            budget: Some(600),
            ..Default::default()
        },
    )
    .await;
    let last = tier(&later, Tier::Session);
    assert!(
        last.items
            .iter()
            .any(|i| i.kind == ItemKind::SessionSummary && i.text.contains(&summary.topics[0])),
        "{:#?}",
        last.items
    );
    let listed = c.call::<List>(&ListParams::default()).await.unwrap();
    assert_eq!(listed.total, 1);
    assert_eq!(listed.sessions[0].consolidation_status, "queued");

    // Consolidation writes the living summaries, which the next package holds.
    daemon.consolidate_now();
    let summaries = c
        .call::<summary::List>(&summary::ListParams::default())
        .await
        .unwrap()
        .summaries;
    let commitments = summaries
        .iter()
        .find(|s| s.category == SummaryCategory::Commitments)
        .expect("commitments");
    assert!(
        commitments.content.contains("send the export"),
        "{}",
        commitments.content
    );
    let after = build(
        &mut c,
        BuildParams {
            query: Some("bakery".into()),
            budget: Some(2000),
            ..Default::default()
        },
    )
    .await;
    assert!(!tier(&after, Tier::Living).items.is_empty());
    let listed = c.call::<List>(&ListParams::default()).await.unwrap();
    assert_eq!(listed.sessions[0].consolidation_status, "done");
}

#[tokio::test]
async fn profiles_change_what_is_included() {
    let daemon = Daemon::start_with(Embedder::Minilm, &[]);
    let mut c = daemon.client().await;
    remember(
        &mut c,
        "Standup moved to 9:30 for the payments team.",
        Some("work"),
        "2026-04-01",
    )
    .await;
    remember(
        &mut c,
        "Dinner with my sister on Thursday at 9:30.",
        Some("family"),
        "2026-04-02",
    )
    .await;
    let of = |p: &Package| p.text.clone();
    let general = build(
        &mut c,
        BuildParams {
            query: Some("what is at 9:30".into()),
            budget: Some(500),
            ..Default::default()
        },
    )
    .await;
    assert!(of(&general).contains("Standup") && of(&general).contains("sister"));
    let work = build(
        &mut c,
        BuildParams {
            query: Some("what is at 9:30".into()),
            budget: Some(500),
            profile: Some("work".into()),
            explain: true,
            ..Default::default()
        },
    )
    .await;
    assert!(of(&work).contains("Standup"));
    assert!(!of(&work).contains("sister"), "{}", of(&work));
    assert!(work
        .dropped
        .iter()
        .any(|d| d.reason.contains("leaves out domain family")));
    let json = build(
        &mut c,
        BuildParams {
            query: Some("what is at 9:30".into()),
            budget: Some(500),
            format: Some(Format::Json),
            ..Default::default()
        },
    )
    .await;
    let parsed: serde_json::Value = serde_json::from_str(&json.text).unwrap();
    assert!(parsed["retrieved"].as_array().unwrap().len() >= 2);
}

#[tokio::test]
async fn a_belief_joins_the_package_of_a_query_about_it_in_other_words() {
    let daemon = Daemon::start_with(Embedder::Minilm, &[]);
    let mut c = daemon.client().await;
    remember(&mut c, "I want to learn Japanese.", None, "2026-04-01").await;
    remember(&mut c, "I like hiking.", None, "2026-04-02").await;
    let asked = |query: &str| BuildParams {
        query: Some(query.into()),
        budget: Some(400),
        explain: true,
        ..Default::default()
    };
    let beliefs_in = |p: &Package| -> Vec<(String, String)> {
        tier(p, Tier::Retrieved)
            .items
            .iter()
            .filter(|i| i.kind == ItemKind::Belief)
            .map(|i| (i.text.clone(), i.why.clone().unwrap_or_default()))
            .collect()
    };
    // No word in common with the goal, only its meaning.
    let trip = build(&mut c, asked("plan my trip to Tokyo")).await;
    let found = beliefs_in(&trip);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "User wants to learn Japanese");
    assert!(
        found[0].1.contains("near the query in meaning"),
        "{found:?}"
    );
    // A query about something else brings neither belief.
    let parser = build(&mut c, asked("fix the failing test in the parser")).await;
    assert!(beliefs_in(&parser).is_empty(), "{:?}", beliefs_in(&parser));
}

#[tokio::test]
async fn an_empty_store_gives_a_small_valid_package_and_bad_requests_say_what_to_do() {
    let daemon = Daemon::start_with(Embedder::Minilm, &[]);
    let mut c = daemon.client().await;
    let empty = build(&mut c, BuildParams::default()).await;
    assert!(empty.tokens <= 20, "{}", empty.text);
    assert!(
        empty.budget >= 64,
        "the adaptive budget: {}",
        empty.budget_source
    );
    assert!(empty.budget_source.starts_with("adaptive"));
    for t in &empty.tiers {
        assert!(t.items.is_empty());
        assert!(t.sources.iter().all(|s| s.note.is_some()), "{t:?}");
    }
    for (params, says) in [
        (
            BuildParams {
                session_id: Some("nope".into()),
                ..Default::default()
            },
            "mnemo session list",
        ),
        (
            BuildParams {
                profile: Some("holiday".into()),
                ..Default::default()
            },
            "the profiles are creative, general, personal, work",
        ),
        (
            BuildParams {
                budget: Some(10),
                ..Default::default()
            },
            "ask for at least 64",
        ),
    ] {
        let e = c.call::<Build>(&params).await.unwrap_err();
        assert!(e.to_string().contains(says), "{e}");
    }
    let e = c
        .call::<Start>(&StartParams {
            profile: Some("holiday".into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(e.to_string().contains("unknown profile"), "{e}");
    let e = c
        .call::<End>(&EndParams {
            session_id: "nope".into(),
        })
        .await
        .unwrap_err();
    assert!(e.to_string().contains("no session `nope`"), "{e}");

    // The CLI: a session from start to end, and the package as text.
    let out = daemon.cli(&["session", "start", "--kind", "task"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let out = daemon.cli(
        &["session", "say", &id, "-"],
        "I'll book the train tickets tonight.",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = daemon.cli(
        &[
            "context",
            "train tickets",
            "--session",
            &id,
            "--budget",
            "200",
        ],
        "",
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("Person: I'll book the train tickets tonight."),
        "{text}"
    );
    assert!(text.contains("tokens (o200k_base"), "{text}");
    let out = daemon.cli(&["session", "end", &id], "");
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("book the train tickets"));
    let out = daemon.cli(&["session", "list", "--json"], "");
    let listed: ListResult = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.sessions.len(), 1);
    assert!(!listed.sessions[0].is_active());
}

#[tokio::test]
async fn an_active_session_survives_a_crash() {
    let mut daemon = Daemon::start_with(Embedder::Minilm, &[]);
    let mut c = daemon.client().await;
    let id = open(&mut c).await;
    for text in ["First message.", "Second message."] {
        say(&mut c, &id, Role::User, text).await;
    }
    daemon.crash();
    daemon.restart();
    let mut c = daemon.client().await;
    let got = c
        .call::<Get>(&GetParams {
            id: id.clone(),
            messages: None,
        })
        .await
        .unwrap();
    assert!(got.session.is_active());
    assert_eq!(got.session.message_count, 2);
    assert_eq!(got.messages[1].content, "Second message.");
    let third = say(&mut c, &id, Role::User, "Third message.").await;
    assert_eq!(third.turn, 3, "turns go on after the restart");
}

#[tokio::test]
async fn forgetting_a_message_takes_it_out_of_the_session_summary_and_the_package() {
    let daemon = Daemon::start_with(Embedder::Minilm, &[]);
    let mut c = daemon.client().await;
    let id = open(&mut c).await;
    let secret = say(
        &mut c,
        &id,
        Role::User,
        "The alarm code for the studio is 4417, I'll change it tomorrow.",
    )
    .await;
    say(&mut c, &id, Role::User, "The studio lease runs until June.").await;
    let ended = c
        .call::<End>(&EndParams {
            session_id: id.clone(),
        })
        .await
        .unwrap()
        .session;
    assert!(ended.summary.unwrap().text.contains("4417"));
    c.call::<mnemo_protocol::memory::Forget>(&mnemo_protocol::memory::ForgetParams {
        ids: vec![secret.memory_id],
        filter: None,
    })
    .await
    .unwrap();
    let got = c
        .call::<Get>(&GetParams {
            id: id.clone(),
            messages: None,
        })
        .await
        .unwrap();
    assert_eq!(got.session.message_count, 1);
    let summary = got.session.summary.expect("rewritten from what remains");
    assert!(!summary.text.contains("4417"), "{}", summary.text);
    assert!(summary.text.contains("lease"), "{}", summary.text);
    let package = build(
        &mut c,
        BuildParams {
            query: Some("studio alarm code".into()),
            budget: Some(1000),
            ..Default::default()
        },
    )
    .await;
    assert!(!package.text.contains("4417"), "{}", package.text);
    assert!(package.text.contains("lease"), "{}", package.text);
}
