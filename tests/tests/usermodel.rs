//! The user model end to end through the real daemon: beliefs read from memories, a move
//! that supersedes an old address (history, UPDATES edge, recall order, `as_of`), an explicit
//! preference that a contrary memory does not override, forgetting the only evidence, the
//! identity the memories assemble, and bad requests answered with what to do.

use mnemo_client::Client;
use mnemo_protocol::belief::*;
use mnemo_protocol::graph::{EdgeType, Neighbors, NeighborsParams, Node};
use mnemo_protocol::memory::{Add, AddParams, Forget, ForgetParams, Memory, Search, SearchParams};
use mnemo_tests::{Daemon, Embedder};

async fn say(c: &mut Client, content: &str, occurred_at: Option<&str>) -> Memory {
    c.call::<Add>(&AddParams {
        content: content.into(),
        occurred_at: occurred_at.map(str::to_string),
        ..Default::default()
    })
    .await
    .unwrap()
}

async fn beliefs(c: &mut Client, p: ListParams) -> Vec<Belief> {
    c.call::<List>(&p).await.unwrap().beliefs
}

fn about(subject: &str) -> ListParams {
    ListParams {
        subject: Some(subject.into()),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_move_supersedes_the_old_address_in_beliefs_history_graph_and_recall() {
    let daemon = Daemon::start_with(Embedder::Minilm, &[]);
    let mut c = daemon.client().await;
    let lisbon = say(
        &mut c,
        "Maria lives in Lisbon.",
        Some("2025-01-10T10:00:00Z"),
    )
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    // What the store knew between the two: the move not yet told.
    let between = mnemo_protocol::time::format_micros(mnemo_protocol::time::now_micros());
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    say(&mut c, "We had pasta for dinner with friends.", None).await;
    let porto = say(
        &mut c,
        "Maria moved to Porto.",
        Some("2025-06-01T10:00:00Z"),
    )
    .await;

    let now = beliefs(&mut c, about("maria")).await;
    assert_eq!(now.len(), 1, "{now:#?}");
    assert_eq!(
        (now[0].predicate.as_str(), now[0].object.as_str()),
        ("lives_in", "Porto")
    );

    let all = beliefs(
        &mut c,
        ListParams {
            all: true,
            ..about("Maria")
        },
    )
    .await;
    assert_eq!(all.len(), 2);
    let old = all
        .iter()
        .find(|b| b.object == "Lisbon")
        .expect("Lisbon kept");
    assert_eq!(old.superseded_by.as_deref(), Some(now[0].id.as_str()));
    assert!(
        old.valid_to
            .as_deref()
            .is_some_and(|t| t.starts_with("2025-06-01T10:00:00")),
        "{old:#?}"
    );

    let got = c
        .call::<Get>(&GetParams {
            id: now[0].id.clone(),
        })
        .await
        .unwrap();
    let objects: Vec<&str> = got.history.iter().map(|b| b.object.as_str()).collect();
    assert_eq!(objects, ["Lisbon", "Porto"]);
    assert_eq!(got.evidence[0].memory_id, porto.id);

    let around = c
        .call::<Neighbors>(&NeighborsParams {
            node: Node::memory(porto.id.clone()),
            types: vec![EdgeType::Updates],
            namespace: None,
            min_weight: None,
            depth: None,
            limit: None,
        })
        .await
        .unwrap();
    assert!(
        around
            .edges
            .iter()
            .any(|e| e.src.id == porto.lineage && e.dst.id == lisbon.lineage),
        "{:#?}",
        around.edges
    );

    let found = c
        .call::<Search>(&SearchParams {
            query: "where does Maria live".into(),
            k: Some(5),
            explain: true,
            ..Default::default()
        })
        .await
        .unwrap();
    let ids: Vec<&str> = found.hits.iter().map(|h| h.memory.id.as_str()).collect();
    assert_eq!(ids[0], porto.id, "{ids:?}");
    let stale = found
        .hits
        .iter()
        .find(|h| h.memory.id == lisbon.id)
        .expect("Lisbon found");
    let why = stale
        .explain
        .as_ref()
        .unwrap()
        .superseded
        .as_ref()
        .expect("explained");
    assert_eq!(
        (why.was.as_str(), why.now.as_str()),
        ("Maria lives in Lisbon", "Maria lives in Porto")
    );

    // As the store was before it heard of the move, the old address is no stale fact.
    let before = c
        .call::<Search>(&SearchParams {
            query: "where does Maria live".into(),
            k: Some(5),
            explain: true,
            filter: mnemo_protocol::memory::Filter {
                as_of: Some(between),
                ..Default::default()
            },
            ..Default::default()
        })
        .await
        .unwrap();
    let lisbon_then = before
        .hits
        .iter()
        .find(|h| h.memory.id == lisbon.id)
        .expect("Lisbon found as it was");
    assert!(lisbon_then.explain.as_ref().unwrap().superseded.is_none());

    let then = beliefs(
        &mut c,
        ListParams {
            as_of: Some("2025-03-01T00:00:00Z".into()),
            ..about("Maria")
        },
    )
    .await;
    assert_eq!(then.len(), 1);
    assert_eq!(then[0].object, "Lisbon");
}

#[tokio::test]
async fn an_explicit_preference_survives_a_contrary_memory_and_can_be_forgotten() {
    let daemon = Daemon::start();
    let mut c = daemon.client().await;
    let set = c
        .call::<PreferenceSet>(&PreferenceSetParams {
            domain: "coding".into(),
            key: "indentation".into(),
            value: "tabs".into(),
            namespace: None,
        })
        .await
        .unwrap();
    assert_eq!(set.preference.source, BeliefSource::Explicit);
    say(&mut c, "I prefer spaces for indentation.", None).await;
    let prefs = c
        .call::<PreferenceList>(&PreferenceListParams::default())
        .await
        .unwrap()
        .beliefs;
    assert_eq!(prefs.len(), 2, "{prefs:#?}");
    assert_eq!(
        (prefs[0].object.as_str(), prefs[0].source),
        ("tabs", BeliefSource::Explicit)
    );
    assert!(prefs[0].valid_to.is_none());
    assert_eq!(prefs[1].object, "spaces");
    assert_eq!(prefs[1].contradicts, vec![prefs[0].id.clone()]);

    // A newer explicit choice replaces the old one and the contrary memory's.
    let again = c
        .call::<PreferenceSet>(&PreferenceSetParams {
            domain: "coding".into(),
            key: "Indentation".into(),
            value: "spaces".into(),
            namespace: None,
        })
        .await
        .unwrap();
    assert_eq!(again.superseded.len(), 1, "{again:#?}");
    let forgot = c
        .call::<PreferenceForget>(&PreferenceForgetParams {
            domain: Some("coding".into()),
            key: Some("indentation".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(forgot.forgotten, 2);
}

#[tokio::test]
async fn forgetting_a_memory_removes_the_beliefs_that_rested_only_on_it() {
    let daemon = Daemon::start();
    let mut c = daemon.client().await;
    let nuts = say(&mut c, "I'm allergic to peanuts.", None).await;
    let tea = say(&mut c, "I love tea.", None).await;
    say(&mut c, "Honestly, I love tea", None).await;
    let held = beliefs(&mut c, ListParams::default()).await;
    let tea_belief = held.iter().find(|b| b.predicate == "tea").expect("tea");
    assert_eq!(tea_belief.evidence_count, 2);
    assert_eq!(
        tea_belief.source_memory_id.as_deref(),
        Some(tea.id.as_str())
    );
    let sure = tea_belief.confidence;
    say(&mut c, "I speak French.", None).await;
    let again = say(&mut c, "Yes, I speak French.", None).await;

    let forgotten = c
        .call::<Forget>(&ForgetParams {
            ids: vec![nuts.id.clone(), tea.id.clone(), again.id.clone()],
            filter: None,
        })
        .await
        .unwrap();
    assert_eq!(forgotten.deleted, 3);
    let french = beliefs(&mut c, ListParams::default())
        .await
        .into_iter()
        .find(|b| b.predicate == "speaks")
        .expect("French stays");
    assert_eq!(french.evidence_count, 1);
    assert!(
        french.source_memory_id.is_some(),
        "the memory it was read from is still there"
    );
    let held = beliefs(&mut c, ListParams::default()).await;
    assert!(
        !held.iter().any(|b| b.predicate == "allergic_to"),
        "{held:#?}"
    );
    let tea_belief = held
        .iter()
        .find(|b| b.predicate == "tea")
        .expect("tea stays");
    assert_eq!(tea_belief.evidence_count, 1);
    assert_eq!(tea_belief.source_memory_id, None, "its first memory went");
    assert!(tea_belief.confidence < sure);
}

/// What the scripted model answers: a belief the rules cannot read from the lake-house
/// line, the rules' own reading of the Porto line, prose for the garbled one.
fn reading(message: &str) -> String {
    if message.contains("lake house") {
        r#"Here you go:
```json
{"beliefs": [{"subject": "user", "predicate": "spends summers at", "object": "the lake house in Maine", "type": "behavior", "statement": "The user spends every summer at the lake house in Maine", "confidence": 0.8},
             {"subject": "user", "predicate": "likes", "object": "lakes", "type": "feeling"}],
 "entities": [{"name": "the lake house", "type": "place"}, {"name": "Maine", "type": "place"}]}
```"#
        .into()
    } else if message.contains("Porto") {
        r#"{"beliefs": [{"subject": "user", "predicate": "lives_in", "object": "Porto", "type": "identity", "statement": "The user lives in Porto"}]}"#.into()
    } else if message.contains("garbled") {
        "I'm sorry, I can't read that.".into()
    } else if message.contains("silent") {
        // Nothing at all, as a thinking model's reply can be.
        String::new()
    } else {
        r#"{"beliefs": []}"#.into()
    }
}

fn phase_counts(
    run: &mnemo_protocol::consolidate::RunRecord,
) -> std::collections::BTreeMap<String, u64> {
    run.phases
        .iter()
        .find(|p| p.phase == mnemo_protocol::consolidate::Phase::Refine)
        .expect("a refine phase")
        .counts
        .clone()
}

#[tokio::test]
async fn a_configured_llm_reads_what_the_rules_missed_while_idle_and_a_forget_undoes_it() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let down = std::sync::Arc::new(AtomicBool::new(true));
    let llm = {
        let down = down.clone();
        mnemo_tests::chat::ChatEndpoint::start(move |m| {
            (!down.load(Ordering::Relaxed)).then(|| reading(m))
        })
    };
    let config = format!(
        "[llm]\nurl = \"{}\"\napi = \"openai\"\nmodel = \"reader-7b\"\n\n[consolidate]\nenabled = false\n",
        llm.url()
    );
    let daemon = Daemon::start_configured(Embedder::Hashed, &config, &[]);
    let mut c = daemon.client().await;
    let lake = say(
        &mut c,
        "Every summer we go back to the lake house in Maine, it's tradition.",
        None,
    )
    .await;
    say(&mut c, "I live in Porto.", None).await;
    say(&mut c, "garbled ##", None).await;
    say(&mut c, "silent ##", None).await;
    let gone = say(&mut c, "The lake house in Vermont sold last year.", None).await;
    c.call::<Forget>(&ForgetParams {
        ids: vec![gone.id.clone()],
        filter: None,
    })
    .await
    .unwrap();
    // Ingest answered without asking the model; the rules read only the Porto line.
    assert!(llm.asked().is_empty());
    let ruled = beliefs(&mut c, ListParams::default()).await;
    assert_eq!(ruled.len(), 1, "{ruled:#?}");
    assert_eq!(ruled[0].read_by.as_deref(), Some("rules"));

    // The endpoint is down: the phase stops at the first memory and keeps its place.
    let run = daemon.consolidate_now();
    let counts = phase_counts(&run);
    assert_eq!(counts.get("llm_failures"), Some(&1), "{counts:?}");
    assert_eq!(counts.get("read"), None, "{counts:?}");
    assert_eq!(beliefs(&mut c, ListParams::default()).await.len(), 1);

    down.store(false, Ordering::Relaxed);
    let run = daemon.consolidate_now();
    let counts = phase_counts(&run);
    assert_eq!(counts.get("read"), Some(&4), "{counts:?}");
    assert_eq!(counts.get("beliefs_added"), Some(&1), "{counts:?}");
    assert_eq!(
        counts.get("unreadable_replies"),
        Some(&2),
        "prose and nothing: {counts:?}"
    );
    assert_eq!(counts.get("dropped_items"), Some(&1), "{counts:?}");
    // "Maine" the rules found themselves; the lower-case place only the model named.
    assert_eq!(counts.get("entities_added"), Some(&1), "{counts:?}");
    let house = c
        .call::<mnemo_protocol::entity::Get>(&mnemo_protocol::entity::GetParams {
            name: "the lake house".into(),
            namespace: None,
        })
        .await
        .unwrap();
    assert_eq!(
        house.entity.entity_type,
        mnemo_protocol::entity::EntityType::Place
    );
    let mentioned: Vec<&str> = house
        .mentions
        .iter()
        .map(|m| m.memory_id.as_str())
        .collect();
    assert_eq!(mentioned, [lake.id.as_str()]);
    let asked: Vec<serde_json::Value> = llm
        .asked()
        .into_iter()
        .filter(|a| mnemo_tests::chat::user_message(a).starts_with("Message:"))
        .collect();
    let messages: Vec<String> = asked.iter().map(mnemo_tests::chat::user_message).collect();
    // The forgotten memory was never sent; the system prompt asks for JSON.
    assert!(
        !messages.iter().any(|m| m.contains("Vermont")),
        "{messages:?}"
    );
    assert!(asked[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("JSON"));
    assert_eq!(asked[0]["model"], "reader-7b");

    let held = beliefs(&mut c, ListParams::default()).await;
    assert_eq!(
        held.len(),
        2,
        "the rules' Porto is repeated, not doubled: {held:#?}"
    );
    let summers = held
        .iter()
        .find(|b| b.predicate == "spends_summers_at")
        .expect("the model's reading");
    assert_eq!(summers.object, "the lake house in Maine");
    assert_eq!(summers.read_by.as_deref(), Some("llm:reader-7b"));
    assert_eq!(summers.source, BeliefSource::Extracted);
    assert_eq!(summers.belief_type, BeliefType::Behavior);
    assert!(summers.confidence <= 0.7, "{}", summers.confidence);
    assert_eq!(summers.source_memory_id.as_deref(), Some(lake.id.as_str()));
    let shown = daemon.cli(&["belief", &summers.id], "");
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("read by llm:reader-7b"), "{shown}");

    // Read once: the next run asks nothing more of the memories (living summaries, which
    // the model also writes when configured, are asked for again).
    let readings = || {
        llm.asked()
            .iter()
            .filter(|a| mnemo_tests::chat::user_message(a).starts_with("Message:"))
            .count()
    };
    let before = readings();
    assert_eq!(before, 5, "one failed ask, then four memories");
    let counts = phase_counts(&daemon.consolidate_now());
    assert_eq!(counts.get("read"), None, "{counts:?}");
    assert_eq!(readings(), before);

    // What the model read rests on its memory like any other belief.
    c.call::<Forget>(&ForgetParams {
        ids: vec![lake.id.clone()],
        filter: None,
    })
    .await
    .unwrap();
    let held = beliefs(&mut c, ListParams::default()).await;
    assert!(
        !held.iter().any(|b| b.predicate == "spends_summers_at"),
        "{held:#?}"
    );
    // So does the name it found: no memory mentions the lake house any more.
    let gone = c
        .call::<mnemo_protocol::entity::Get>(&mnemo_protocol::entity::GetParams {
            name: "the lake house".into(),
            namespace: None,
        })
        .await;
    assert!(gone.is_err(), "{gone:?}");
}

#[tokio::test]
async fn whoami_assembles_identity_and_questions_state_nothing() {
    let daemon = Daemon::start();
    let mut c = daemon.client().await;
    for line in [
        "My name is Alex Moreau.",
        "I'm a software engineer.",
        "I live in Lisbon and I work at Farfetch.",
        "I speak French and Spanish.",
        "Maria is my sister.",
        "Do I like tea?",
        "If I move to Berlin, I'll learn German.",
    ] {
        say(&mut c, line, None).await;
    }
    let out = daemon.cli(&["whoami", "--json"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let me: Identity = serde_json::from_slice(&out.stdout).unwrap();
    let values = |t: &[Trait]| t.iter().map(|t| t.value.clone()).collect::<Vec<_>>();
    assert_eq!(values(&me.name), ["Alex Moreau"]);
    assert_eq!(values(&me.roles), ["software engineer"]);
    assert_eq!(values(&me.places), ["lives in Lisbon"]);
    assert_eq!(values(&me.workplaces), ["Farfetch"]);
    let mut languages = values(&me.languages);
    languages.sort();
    assert_eq!(languages, ["French", "Spanish"]);
    assert_eq!(values(&me.relations), ["Maria (sister)"]);
    let all = beliefs(&mut c, ListParams::default()).await;
    assert!(
        !all.iter()
            .any(|b| b.predicate == "tea" || b.object.contains("German")),
        "{all:#?}"
    );

    let text = daemon.cli(&["whoami"], "");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Alex Moreau (0.70, extracted)"), "{text}");
}

#[tokio::test]
async fn bad_requests_say_what_to_do() {
    let daemon = Daemon::start();
    let mut c = daemon.client().await;
    let e = c
        .call::<PreferenceSet>(&PreferenceSetParams {
            domain: " ".into(),
            key: "indentation".into(),
            value: "tabs".into(),
            namespace: None,
        })
        .await
        .unwrap_err();
    assert!(e.to_string().contains("domain is empty"), "{e}");
    let e = c
        .call::<Get>(&GetParams { id: "nope".into() })
        .await
        .unwrap_err();
    assert!(e.to_string().contains("no belief with id `nope`"), "{e}");
    let out = daemon.cli(&["beliefs", "--type", "opinion"], "");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("expected one of fact, preference"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = daemon.cli(&["prefs", "set", "indentation", "tabs"], "");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("DOMAIN.KEY"));
    let out = daemon.cli(&["prefs", "forget", "no-such-id"], "");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no preference matches"));
}

#[tokio::test]
async fn a_memory_from_inside_a_git_repository_makes_a_project_with_its_languages() {
    let daemon = Daemon::start();
    let repo = daemon.home.path().join("code").join("atlas");
    for (path, text) in [
        (
            ".git/config",
            "[remote \"origin\"]\n\turl = https://example.com/ana/atlas.git\n",
        ),
        (
            "Cargo.toml",
            "[package]\nname = \"atlas\"\n[dependencies]\naxum = \"0.8\"\n",
        ),
        ("README.md", "# Atlas\n\nOffline maps for hikers.\n"),
        ("src/main.rs", "fn main() {}\n"),
        ("src/tiles.rs", "\n"),
        ("web/app.ts", "\n"),
    ] {
        let p = repo.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let mut c = daemon.client().await;
    let m = c
        .call::<Add>(&AddParams {
            content: "I love small commits.".into(),
            metadata: Some(serde_json::json!({ "cwd": repo.join("src").display().to_string() })),
            ..Default::default()
        })
        .await
        .unwrap();
    use mnemo_protocol::project;
    let list = c
        .call::<project::List>(&project::ListParams::default())
        .await
        .unwrap();
    assert_eq!(list.projects.len(), 1, "{list:#?}");
    let p = &list.projects[0];
    assert_eq!(
        (p.name.as_str(), p.path.as_str()),
        ("atlas", repo.to_str().unwrap())
    );
    let langs: Vec<(&str, u64)> = p
        .languages
        .iter()
        .map(|l| (l.language.as_str(), l.files))
        .collect();
    assert_eq!(langs, [("Rust", 2), ("TypeScript", 1)]);
    assert_eq!(p.build_system.as_deref(), Some("cargo"));
    assert_eq!(p.frameworks, ["axum"]);
    assert_eq!(p.description.as_deref(), Some("Offline maps for hikers."));
    assert_eq!(
        p.repo_url.as_deref(),
        Some("https://example.com/ana/atlas.git")
    );
    assert_eq!(p.detection_source, "cwd");

    // By a path inside it, with the memory and the belief read from it.
    let got = c
        .call::<project::Get>(&project::GetParams {
            path: Some(repo.join("web").display().to_string()),
            id: None,
        })
        .await
        .unwrap();
    assert_eq!(got.project.id, p.id);
    assert_eq!(got.recent[0].memory_id, m.id);
    assert_eq!(got.beliefs[0].statement, "User likes small commits");
    let e = c
        .call::<project::Get>(&project::GetParams {
            path: Some("/no/such/place".into()),
            id: None,
        })
        .await
        .unwrap_err();
    assert!(e.to_string().contains("does not exist"), "{e}");

    // `mnemo add --cwd` says where a memory was made, as a tool would.
    let web = repo.join("web").display().to_string();
    let out = daemon.cli(
        &["add", "Tiles now load lazily.", "--cwd", &web, "--json"],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let added: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(added["metadata"]["cwd"], web.as_str());
    let got = c
        .call::<project::Get>(&project::GetParams {
            path: Some(web.clone()),
            id: None,
        })
        .await
        .unwrap();
    let recent: Vec<&str> = got.recent.iter().map(|r| r.memory_id.as_str()).collect();
    assert!(
        recent.contains(&added["id"].as_str().unwrap()),
        "{recent:?}"
    );
    let out = daemon.cli(&["add", "Lost.", "--cwd", "/no/such/place"], "");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--cwd /no/such/place: no such directory"),
        "{err}"
    );

    // Who the person is includes what they work on; a forgotten memory counts no more.
    let me = c
        .call::<IdentityGet>(&IdentityParams::default())
        .await
        .unwrap();
    let worked: Vec<(&str, u64)> = me
        .projects
        .iter()
        .map(|p| (p.name.as_str(), p.interaction_count))
        .collect();
    assert_eq!(worked, [("atlas", 2)]);
    let text = String::from_utf8_lossy(&daemon.cli(&["whoami"], "").stdout).to_string();
    assert!(text.contains("projects: atlas ("), "{text}");
    c.call::<Forget>(&ForgetParams {
        ids: vec![m.id.clone()],
        filter: None,
    })
    .await
    .unwrap();
    let by_id = project::GetParams {
        id: Some(p.id.clone()),
        path: None,
    };
    let got = c.call::<project::Get>(&by_id).await.unwrap();
    assert_eq!(got.project.interaction_count, 1);

    // Its directory gone, consolidation marks it missing and identity leaves it out.
    std::fs::rename(&repo, daemon.home.path().join("code").join("atlas-old")).unwrap();
    let run = daemon.consolidate_now();
    let living = run
        .phases
        .iter()
        .find(|ph| ph.phase == mnemo_protocol::consolidate::Phase::Living)
        .unwrap();
    assert_eq!(
        living.counts.get("projects_changed"),
        Some(&1),
        "{living:?}"
    );
    let got = c.call::<project::Get>(&by_id).await.unwrap();
    assert_eq!(got.project.status, "missing");
    let me = c
        .call::<IdentityGet>(&IdentityParams::default())
        .await
        .unwrap();
    assert!(me.projects.is_empty(), "{:?}", me.projects);
}
