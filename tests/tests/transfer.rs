//! `mnemo export` and `mnemo import` end to end: a store with versions, a forget, sessions and
//! two namespaces goes out to JSONL and into an empty data dir, and comes back the same.

use mnemo_client::Client;
use mnemo_protocol::memory::*;
use mnemo_tests::Daemon;
use serde_json::Value;

async fn add(
    c: &mut Client,
    content: &str,
    session: Option<&str>,
    namespace: Option<&str>,
) -> Memory {
    c.call::<Add>(&AddParams {
        content: content.into(),
        session_id: session.map(str::to_string),
        namespace: namespace.map(str::to_string),
        tags: vec!["t".into()],
        metadata: Some(serde_json::json!({ "from": "test" })),
        ..Default::default()
    })
    .await
    .unwrap()
}

async fn all_current(c: &mut Client) -> Vec<Memory> {
    c.call::<List>(&ListParams {
        limit: Some(1000),
        ..Default::default()
    })
    .await
    .unwrap()
    .memories
}

async fn search_ids(c: &mut Client, query: &str) -> Vec<String> {
    let found = c
        .call::<Search>(&SearchParams {
            query: query.into(),
            k: Some(5),
            ..Default::default()
        })
        .await
        .unwrap();
    found.hits.into_iter().map(|h| h.memory.id).collect()
}

fn cli_json(daemon: &Daemon, args: &[&str]) -> Value {
    let out = daemon.cli(args, "");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// `mnemo … --json` that imported part of its input: exit 1, and the summary (with what was
/// refused) on stdout.
fn cli_json_refused(daemon: &Daemon, args: &[&str]) -> Value {
    let out = daemon.cli(args, "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    serde_json::from_slice(&out.stdout).expect("one JSON summary")
}

#[tokio::test]
async fn an_export_imported_into_an_empty_store_gives_the_same_memories_history_and_search() {
    let source = Daemon::start();
    let mut c = source.client().await;
    add(
        &mut c,
        "My sister Maria moved to Lisbon to teach piano",
        None,
        None,
    )
    .await;
    let first = add(
        &mut c,
        "Alice: did you book the train to Porto?",
        Some("trip"),
        None,
    )
    .await;
    add(&mut c, "Bob: yes, the 9:10 on Saturday", Some("trip"), None).await;
    add(&mut c, "The sprint demo is on Thursday", None, Some("work")).await;
    let gone = add(&mut c, "a secret to forget", None, None).await;
    let moved = c
        .call::<Update>(&UpdateParams {
            id: first.id.clone(),
            content: Some("Alice: did you book the train to Porto for Saturday?".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    c.call::<Forget>(&ForgetParams {
        ids: vec![gone.id.clone()],
        filter: None,
    })
    .await
    .unwrap();

    let file = source.home.path().join("backup.jsonl");
    let file_arg = file.to_str().unwrap();
    // Five memory versions (four current, the question's first), and every version of the
    // beliefs they were read for ("Maria lives in Lisbon").
    let beliefs = c
        .call::<mnemo_protocol::belief::List>(&mnemo_protocol::belief::ListParams {
            all: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .beliefs
        .len();
    assert!(beliefs > 0, "no belief was read from Maria's move");
    let records = 5 + beliefs;
    let exported = cli_json(&source, &["export", file_arg, "--json"]);
    assert_eq!(exported["records"], records, "{exported}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.lines().count(), records);
    assert!(!text.contains("a secret to forget"));
    // The export holds what the store holds: readable by its owner alone, and no partial
    // file left beside it.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{mode:o}");
    let beside: Vec<_> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".partial"))
        .collect();
    assert!(beside.is_empty(), "{beside:?}");

    let target = Daemon::start();
    let imported = cli_json(&target, &["import", file_arg, "--json"]);
    assert_eq!(imported["added"], records, "{imported}");
    assert_eq!(imported["rejected"], serde_json::json!([]));

    let mut t = target.client().await;
    let strip = |list: Vec<Memory>| -> Vec<Value> {
        list.into_iter()
            .map(|m| serde_json::to_value(m).unwrap())
            .collect()
    };
    assert_eq!(
        strip(all_current(&mut t).await),
        strip(all_current(&mut c).await)
    );
    let history = |id: String| HistoryParams { id };
    let before = c.call::<History>(&history(moved.id.clone())).await.unwrap();
    let after = t.call::<History>(&history(moved.id.clone())).await.unwrap();
    assert_eq!(after.versions.len(), 2);
    assert_eq!(strip(after.versions), strip(before.versions));
    for query in ["train to Porto", "piano in Lisbon", "demo"] {
        assert_eq!(
            search_ids(&mut t, query).await,
            search_ids(&mut c, query).await,
            "{query}"
        );
    }
    // What the text names is read again: the entities and the session's order come back.
    let maria = mnemo_protocol::entity::GetParams {
        name: "Maria".into(),
        namespace: None,
    };
    let found = t.call::<mnemo_protocol::entity::Get>(&maria).await.unwrap();
    assert_eq!(found.entity.mention_count, 1);
    assert_eq!(found.entity.relation.as_deref(), Some("sister"));
    // The question updated after the reply still comes before it in its session.
    let sequence = |links: mnemo_protocol::graph::NeighborsResult| -> Vec<(String, String, f32)> {
        links
            .edges
            .into_iter()
            .filter(|e| e.edge_type == mnemo_protocol::graph::EdgeType::TemporalSequence)
            .map(|e| (e.src.id, e.dst.id, e.weight))
            .collect()
    };
    let neighbours = mnemo_protocol::graph::NeighborsParams {
        node: mnemo_protocol::graph::Node::memory(first.id.clone()),
        namespace: None,
        types: vec![],
        min_weight: None,
        depth: None,
        limit: None,
    };
    let imported = sequence(
        t.call::<mnemo_protocol::graph::Neighbors>(&neighbours)
            .await
            .unwrap(),
    );
    let original = sequence(
        c.call::<mnemo_protocol::graph::Neighbors>(&neighbours)
            .await
            .unwrap(),
    );
    assert_eq!(imported.len(), 1, "{imported:?}");
    assert_eq!(imported, original);
    assert_eq!(imported[0].0, first.id, "the question first: {imported:?}");

    // The same file again adds nothing.
    let again = cli_json(&target, &["import", file_arg, "--json"]);
    assert_eq!(
        (again["added"].as_u64(), again["skipped"].as_u64()),
        (Some(0), Some(records as u64))
    );
}

/// What the user model and the sessions hold, as JSON (each list in its own order).
async fn model_and_sessions(c: &mut Client) -> Vec<Value> {
    use mnemo_protocol::{belief, session};
    let beliefs = c
        .call::<belief::List>(&belief::ListParams {
            all: true,
            limit: Some(100),
            ..Default::default()
        })
        .await
        .unwrap();
    let preferences = c
        .call::<belief::PreferenceList>(&belief::PreferenceListParams {
            all: true,
            ..Default::default()
        })
        .await
        .unwrap();
    let sessions = c
        .call::<session::List>(&session::ListParams::default())
        .await
        .unwrap();
    vec![
        serde_json::to_value(beliefs.beliefs).unwrap(),
        serde_json::to_value(preferences.beliefs).unwrap(),
        serde_json::to_value(sessions.sessions).unwrap(),
    ]
}

#[tokio::test]
async fn beliefs_preferences_and_sessions_come_back_with_the_memories() {
    use mnemo_protocol::{belief, session};
    let source = Daemon::start();
    let mut c = source.client().await;
    for value in ["green", "jasmine"] {
        c.call::<belief::PreferenceSet>(&belief::PreferenceSetParams {
            domain: "food".into(),
            key: "tea".into(),
            value: value.into(),
            namespace: None,
        })
        .await
        .unwrap();
    }
    add(&mut c, "I live in Porto.", None, None).await;
    add(&mut c, "I moved to Lisbon last year.", None, None).await;
    let opened = c
        .call::<session::Start>(&session::StartParams {
            source: Some("test".into()),
            cwd: Some(source.home.path().display().to_string()),
            ..Default::default()
        })
        .await
        .unwrap()
        .session;
    for said in [
        "We fixed the login bug today.",
        "Next we write the release notes.",
    ] {
        c.call::<session::SendMessage>(&session::MessageParams {
            session_id: opened.id.clone(),
            role: session::Role::User,
            content: said.into(),
            metadata: None,
            occurred_at: None,
        })
        .await
        .unwrap();
    }
    c.call::<session::End>(&session::EndParams {
        session_id: opened.id.clone(),
    })
    .await
    .unwrap();
    let before = model_and_sessions(&mut c).await;
    assert!(before[0].as_array().unwrap().len() >= 2, "{before:?}");
    assert_eq!(before[1].as_array().unwrap().len(), 2, "both tea versions");
    assert!(before[2][0]["summary"]["text"].is_string(), "{before:?}");

    let file = source.home.path().join("all.jsonl");
    let file_arg = file.to_str().unwrap();
    cli_json(&source, &["export", file_arg, "--json"]);
    let text = std::fs::read_to_string(&file).unwrap();
    let count = |kind: &str| {
        text.lines()
            .filter(|l| serde_json::from_str::<Value>(l).unwrap()["type"] == kind)
            .count()
    };
    assert_eq!(count("session"), 1);
    assert!(count("belief") >= 4, "{text}");

    let target = Daemon::start();
    let imported = cli_json(&target, &["import", file_arg, "--json"]);
    assert_eq!(imported["rejected"], serde_json::json!([]));
    let mut t = target.client().await;
    assert_eq!(model_and_sessions(&mut t).await, before);
    let again = cli_json(&target, &["import", file_arg, "--json"]);
    assert_eq!(again["added"], 0, "{again}");
}

#[tokio::test]
async fn malformed_lines_are_reported_by_number_and_skipped_or_stop_a_strict_import() {
    let source = Daemon::start();
    let mut c = source.client().await;
    add(&mut c, "a good memory", None, None).await;
    let file = source.home.path().join("one.jsonl");
    let file_arg = file.to_str().unwrap();
    cli_json(&source, &["export", file_arg, "--json"]);
    let good = std::fs::read_to_string(&file).unwrap();
    let mut bad_id: Value = serde_json::from_str(good.trim()).unwrap();
    bad_id["id"] = "not-a-uuid".into();
    let mut empty: Value = serde_json::from_str(good.trim()).unwrap();
    empty["id"] = "0192a000-0000-7000-8000-000000000001".into();
    empty["content"] = "  ".into();
    let broken = source.home.path().join("broken.jsonl");
    std::fs::write(
        &broken,
        format!(
            "{}\n{{\"type\": \"memory\", \"id\": 3\n\n{bad_id}\n{empty}\n",
            good.trim()
        ),
    )
    .unwrap();

    let target = Daemon::start();
    let broken_arg = broken.to_str().unwrap();
    let out = target.cli(&["import", broken_arg, "--strict"], "");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 2: not a mnemo record"), "{stderr}");
    assert!(
        stderr.contains("the 1 versions before it were imported"),
        "{stderr}"
    );

    let target = Daemon::start();
    // The good line goes in; the refused ones make the import fail, each named.
    let out = Daemon::start().cli(&["import", broken_arg], "");
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("3 records were refused") && said.contains("line 4"),
        "{said}"
    );
    let summary = cli_json_refused(&target, &["import", broken_arg, "--json"]);
    assert_eq!(summary["added"], 1, "{summary}");
    let rejected = summary["rejected"].as_array().unwrap();
    let at: Vec<&str> = rejected.iter().map(|r| r["at"].as_str().unwrap()).collect();
    assert_eq!(at, vec!["line 2", "line 4", "line 5"], "{summary}");
    assert!(
        rejected[1]["error"]
            .as_str()
            .unwrap()
            .contains("not a memory id"),
        "{summary}"
    );
    assert!(
        rejected[2]["error"]
            .as_str()
            .unwrap()
            .contains("content is empty"),
        "{summary}"
    );
    let mut t = target.client().await;
    assert_eq!(all_current(&mut t).await.len(), 1);
}

#[tokio::test]
async fn a_backup_of_large_memories_imports_whole_and_a_line_not_utf8_costs_only_itself() {
    // 150 memories of 40–60 KB: more than one request may carry, so the import must split them.
    let source = Daemon::start();
    let mut c = source.client().await;
    let items: Vec<AddParams> = (0..150)
        .map(|i| AddParams {
            content: (0..6000)
                .map(|k| format!("m{i}w{k}"))
                .collect::<Vec<_>>()
                .join(" "),
            ..Default::default()
        })
        .collect();
    for chunk in items.chunks(50) {
        c.call::<AddBatch>(&AddBatchParams {
            items: chunk.to_vec(),
        })
        .await
        .unwrap();
    }
    let file = source.home.path().join("big.jsonl");
    cli_json(&source, &["export", file.to_str().unwrap(), "--json"]);
    let mut lines: Vec<Vec<u8>> = std::fs::read(&file)
        .unwrap()
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    assert_eq!(lines.len(), 150);
    lines.insert(
        75,
        b"{\"type\": \"memory\", \"content\": \"caf\xe9\"}".to_vec(),
    );
    let damaged = source.home.path().join("damaged.jsonl");
    std::fs::write(&damaged, lines.join(&b'\n')).unwrap();

    let target = Daemon::start();
    let summary = cli_json_refused(&target, &["import", damaged.to_str().unwrap(), "--json"]);
    assert_eq!(summary["added"], 150, "{summary}");
    let rejected = summary["rejected"].as_array().unwrap();
    assert_eq!(rejected.len(), 1, "{summary}");
    assert_eq!(rejected[0]["at"], "line 76", "{summary}");
    assert!(
        rejected[0]["error"].as_str().unwrap().contains("not UTF-8"),
        "{summary}"
    );
    let mut t = target.client().await;
    let held = t
        .call::<List>(&ListParams {
            limit: Some(1000),
            ..Default::default()
        })
        .await
        .unwrap()
        .memories;
    let mut held: Vec<String> = held.into_iter().map(|m| m.content).collect();
    let mut sent: Vec<String> = items.into_iter().map(|i| i.content).collect();
    held.sort();
    sent.sort();
    assert!(
        held == sent,
        "the memories came back other than they went out"
    );
}

#[tokio::test]
async fn notes_the_mcp_memory_graph_and_dialogues_import_once_each() {
    let daemon = Daemon::start();
    let input = daemon.home.path().join("in");
    std::fs::create_dir_all(input.join("notes/sub")).unwrap();
    std::fs::create_dir_all(input.join("notes/.git")).unwrap();

    let graph = input.join("memory.jsonl");
    std::fs::write(
        &graph,
        concat!(
            r#"{"type":"entity","name":"John_Smith","entityType":"person","observations":["Speaks fluent Spanish","Graduated in 2019"]}"#, "\n",
            r#"{"type":"relation","from":"John_Smith","to":"Anthropic","relationType":"works_at"}"#, "\n",
            r#"{"type":"gossip"}"#, "\n",
        ),
    )
    .unwrap();
    let notes = input.join("notes");
    std::fs::write(
        notes.join("2024-05-01-standup.md"),
        "---\ntags: [work]\n---\n# Standup\nShipped the importer.\n\n## Next\nWrite the #docs.\n",
    )
    .unwrap();
    std::fs::write(notes.join("sub/idea.txt"), "A garden on the balcony.\n").unwrap();
    std::fs::write(notes.join(".git/ignored.md"), "never read\n").unwrap();
    std::fs::write(notes.join("bin.txt"), b"\x00\x01binary").unwrap();
    let dialogue = input.join("dialogue.json");
    std::fs::write(
        &dialogue,
        serde_json::json!([{ "sample_id": "c1", "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                { "speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Miso!" },
                { "speaker": "Bo", "dia_id": "D1:2", "text": "Congrats, what colour is Miso?" }
            ]
        }}])
        .to_string(),
    )
    .unwrap();

    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let from_graph = cli_json_refused(&daemon, &["import", &path(&graph), "--json"]);
    assert_eq!(from_graph["added"], 3, "{from_graph}");
    assert_eq!(from_graph["rejected"][0]["at"], "line 3", "{from_graph}");
    let from_notes = cli_json_refused(&daemon, &["import", &path(&notes), "--json", "-n", "notes"]);
    assert_eq!(from_notes["added"], 3, "{from_notes}");
    let rejected = from_notes["rejected"].as_array().unwrap();
    assert_eq!(rejected.len(), 1, "{from_notes}");
    assert!(
        rejected[0]["at"].as_str().unwrap().ends_with("bin.txt"),
        "{from_notes}"
    );
    let from_dialogue = cli_json(&daemon, &["import", &path(&dialogue), "--json"]);
    assert_eq!(from_dialogue["added"], 2, "{from_dialogue}");

    let mut c = daemon.client().await;
    let hits = search_ids(&mut c, "who speaks Spanish").await;
    let top = c
        .call::<Get>(&GetParams {
            id: hits[0].clone(),
        })
        .await
        .unwrap();
    assert_eq!(top.content, "John Smith: Speaks fluent Spanish");
    assert_eq!(top.source.as_deref(), Some("mcp-memory"));

    let listed = |namespace: &str| ListParams {
        filter: Filter {
            namespace: Some(namespace.into()),
            ..Default::default()
        },
        limit: Some(100),
        cursor: None,
    };
    let notes_in = c.call::<List>(&listed("notes")).await.unwrap().memories;
    let standup = notes_in
        .iter()
        .find(|m| m.content == "Write the #docs.")
        .expect("a paragraph");
    assert_eq!(
        standup.occurred_at.as_deref().map(|t| &t[..10]),
        Some("2024-05-01")
    );
    assert_eq!(standup.tags, vec!["work", "docs"]);
    assert!(standup
        .source
        .as_deref()
        .unwrap()
        .ends_with("2024-05-01-standup.md"));
    assert!(!notes_in.iter().any(|m| m.content.contains("never read")));
    let turns = c.call::<List>(&listed("locomo-c1")).await.unwrap().memories;
    assert_eq!(turns.len(), 2);
    assert!(turns
        .iter()
        .all(|m| m.session_id.as_deref() == Some("session_1")));

    // Each file again adds nothing (and refuses again what it refused).
    for (file, namespace, refuses) in [
        (&graph, None, true),
        (&notes, Some("notes"), true),
        (&dialogue, None, false),
    ] {
        let mut args = vec!["import".to_string(), path(file), "--json".into()];
        if let Some(ns) = namespace {
            args.extend(["-n".into(), ns.into()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let again = match refuses {
            true => cli_json_refused(&daemon, &args),
            false => cli_json(&daemon, &args),
        };
        assert_eq!(again["added"], 0, "{file:?}: {again}");
    }
}

#[tokio::test]
async fn chatgpt_and_claude_exports_become_sessions_of_their_conversations() {
    let daemon = Daemon::start();
    let chatgpt = daemon.home.path().join("chatgpt.json");
    // Saved with a byte-order mark, as Windows tools do.
    std::fs::write(
        &chatgpt,
        "\u{feff}".to_string()
            + &serde_json::json!([
            { "id": "c1", "title": "Porto", "current_node": "n2", "mapping": {
                "n0": { "parent": null, "message": null },
                "n1": { "parent": "n0", "message": { "author": { "role": "user" }, "create_time": 1700000000.0,
                        "content": { "parts": ["Plan a weekend in Porto for me"] } } },
                "n2": { "parent": "n1", "message": { "author": { "role": "assistant" }, "create_time": 1700000005.0,
                        "content": { "parts": ["Day one: the Ribeira and a port cellar."] } } }
            }},
            { "title": "no id, no mapping" }
        ])
        .to_string(),
    )
    .unwrap();
    let claude = daemon.home.path().join("claude.json");
    std::fs::write(
        &claude,
        serde_json::json!([{ "uuid": "u1", "name": "Garden", "chat_messages": [
            { "sender": "human", "text": "What grows on a north balcony?", "created_at": "2024-05-01T10:00:00Z" },
            { "sender": "assistant", "text": "Ferns, mint and lettuce.", "created_at": "2024-05-01T10:00:05Z" }
        ]}])
        .to_string(),
    )
    .unwrap();
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let from_chatgpt = cli_json_refused(&daemon, &["import", &path(&chatgpt), "--json"]);
    assert_eq!(from_chatgpt["added"], 2, "{from_chatgpt}");
    assert_eq!(
        from_chatgpt["rejected"][0]["at"], "element 2",
        "{from_chatgpt}"
    );
    // Without --json, where stderr is no terminal, the import says how far it got.
    let out = daemon.cli(&["import", &path(&claude)], "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("importing: "), "{stderr}");
    let from_claude = cli_json(&daemon, &["import", &path(&claude), "--json"]);
    assert_eq!(from_claude["added"], 0, "{from_claude}");

    let mut c = daemon.client().await;
    let session = |id: &str| ListParams {
        filter: Filter {
            session_id: Some(id.into()),
            ..Default::default()
        },
        limit: Some(10),
        cursor: None,
    };
    let porto = c
        .call::<List>(&session("chatgpt:c1"))
        .await
        .unwrap()
        .memories;
    assert_eq!(porto.len(), 2);
    assert!(porto
        .iter()
        .any(|m| m.content == "user: Plan a weekend in Porto for me"));
    assert!(porto.iter().all(|m| m
        .occurred_at
        .as_deref()
        .is_some_and(|t| t.starts_with("2023-11-14"))));
    let garden = c
        .call::<List>(&session("claude:u1"))
        .await
        .unwrap()
        .memories;
    assert!(garden
        .iter()
        .any(|m| m.content == "assistant: Ferns, mint and lettuce."));
    let again = cli_json(&daemon, &["import", &path(&claude), "--json"]);
    assert_eq!(again["added"], 0, "{again}");
}

#[tokio::test]
async fn a_markdown_export_reads_as_notes_and_imports_back() {
    let source = Daemon::start();
    let mut c = source.client().await;
    // A heading inside a memory is its text: the round trip keeps it whole.
    c.call::<Add>(&AddParams {
        content: "Maria's birthday is on 3 June\n\n## Gifts\nShe likes orchids".into(),
        kind: Some(MemoryKind::Semantic),
        occurred_at: Some("2024-06-03".into()),
        tags: vec!["family".into()],
        ..Default::default()
    })
    .await
    .unwrap();
    add(&mut c, "The sprint demo is on Thursday", None, Some("work")).await;
    let folder = source.home.path().join("md");
    let folder_arg = folder.to_str().unwrap();
    let done = cli_json(&source, &["export", "--markdown", folder_arg, "--json"]);
    assert_eq!(done["memories"], 2, "{done}");
    let june = std::fs::read_to_string(folder.join("default/2024-06.md")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&folder.join("default/2024-06.md")), 0o600);
        assert_eq!(mode(&folder.join("default")), 0o700);
    }
    assert!(june.contains("## 2024-06-03 · semantic · id "), "{june}");
    assert!(
        june.contains(
            "tags: family\n\nMaria's birthday is on 3 June\n\n## Gifts\nShe likes orchids"
        ),
        "{june}"
    );
    // Where stderr is no terminal (a log, a pipe), progress comes as plain lines; with
    // --json, none.
    for (json, shown) in [(false, true), (true, false)] {
        let again = source.home.path().join(format!("md-{json}"));
        let mut args = vec!["export", "--markdown", again.to_str().unwrap()];
        if json {
            args.push("--json");
        }
        let out = source.cli(&args, "");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let line = stderr.contains("exporting memories: 2/2 (100%)\n");
        assert_eq!(line, shown, "json {json}: {stderr:?}");
    }

    let target = Daemon::start();
    let back = cli_json(&target, &["import", folder_arg, "--json"]);
    assert_eq!(back["added"], 2, "{back}");
    let mut t = target.client().await;
    let all = all_current(&mut t).await;
    let maria = all
        .iter()
        .find(|m| m.content.starts_with("Maria's"))
        .expect("Maria's note");
    assert_eq!(
        maria.content,
        "Maria's birthday is on 3 June\n\n## Gifts\nShe likes orchids"
    );
    assert_eq!(
        (maria.kind, maria.namespace.as_str()),
        (MemoryKind::Semantic, "default")
    );
    assert_eq!(maria.tags, vec!["family"]);
    assert!(maria
        .occurred_at
        .as_deref()
        .unwrap()
        .starts_with("2024-06-03"));
    assert!(all
        .iter()
        .any(|m| m.namespace == "work" && m.content.contains("sprint demo")));
}
