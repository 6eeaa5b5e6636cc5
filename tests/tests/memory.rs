//! The memory store end to end through the real daemon and the real MiniLM model.

use mnemo_client::{Client, ClientError};
use mnemo_protocol::memory::*;
use mnemo_protocol::Method;
use mnemo_tests::{Daemon, Embedder};

fn ids(r: &SearchResult) -> Vec<&str> {
    r.hits.iter().map(|h| h.memory.id.as_str()).collect()
}

async fn search(c: &mut Client, query: &str, mode: SearchMode, filter: Filter) -> SearchResult {
    c.call::<Search>(&SearchParams {
        query: query.into(),
        k: Some(5),
        mode,
        filter,
        explain: true,
        exact: false,
    })
    .await
    .unwrap()
}

fn rpc_code<M: Method>(r: Result<M::Result, ClientError>) -> (i32, String) {
    match r {
        Err(ClientError::Rpc(e)) => (e.code, e.message),
        Err(other) => panic!("expected an RPC error, got {other}"),
        Ok(_) => panic!("expected an error, got a result"),
    }
}

#[tokio::test]
async fn add_get_search_update_history_as_of_forget() {
    let daemon = Daemon::start_with(Embedder::Minilm, &[]);
    let mut c = daemon.client().await;
    let filler = [
        "The quarterly budget review moved to Thursday afternoon",
        "Sam recommended a sci-fi novel about generation ships",
        "The bike needs new brake pads before the spring ride",
    ];
    for text in filler {
        c.call::<Add>(&AddParams {
            content: text.into(),
            ..Default::default()
        })
        .await
        .unwrap();
    }
    let added = c
        .call::<Add>(&AddParams {
            content: "My sister Maria lives in Lisbon and teaches piano".into(),
            kind: Some(MemoryKind::Semantic),
            domain: Some("family".into()),
            tags: vec!["family".into()],
            occurred_at: Some("2024-03-01".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(added.kind, MemoryKind::Semantic);

    let got = c
        .call::<Get>(&GetParams {
            id: added.id.clone(),
        })
        .await
        .unwrap();
    assert_eq!(
        got.entities,
        ["Maria", "Lisbon"],
        "get names what it mentions"
    );
    assert_eq!(
        Memory {
            entities: Vec::new(),
            ..got
        },
        added
    );

    // Meaning, not words: no query word appears in the memory.
    let by_meaning = search(
        &mut c,
        "Which relative is a music teacher in Portugal?",
        SearchMode::Vector,
        Filter::default(),
    )
    .await;
    assert_eq!(by_meaning.hits[0].memory.id, added.id, "{by_meaning:#?}");
    assert!(by_meaning.embedder.starts_with("minilm"));
    let by_words = search(&mut c, "Maria piano", SearchMode::Text, Filter::default()).await;
    assert_eq!(by_words.hits[0].memory.id, added.id);
    let hybrid = search(
        &mut c,
        "where does my sister live",
        SearchMode::Hybrid,
        Filter::default(),
    )
    .await;
    assert_eq!(hybrid.hits[0].memory.id, added.id);
    let explain = hybrid.hits[0].explain.as_ref().unwrap();
    assert!(
        explain.vector_rank == Some(1) && explain.relevance > 0.0,
        "{explain:?}"
    );

    let before_update = mnemo_protocol::time::format_micros(mnemo_protocol::time::now_micros());
    let updated = c
        .call::<Update>(&UpdateParams {
            id: added.id.clone(),
            content: Some("My sister Maria moved to Porto and teaches violin".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_ne!(updated.id, added.id);
    assert_eq!(updated.lineage, added.id);
    assert_eq!(updated.tags, added.tags, "unchanged fields carry over");

    let history = c
        .call::<History>(&HistoryParams {
            id: updated.id.clone(),
        })
        .await
        .unwrap();
    let versions: Vec<_> = history
        .versions
        .iter()
        .map(|m| (m.id.as_str(), m.superseded_by.as_deref()))
        .collect();
    assert_eq!(
        versions,
        [
            (added.id.as_str(), Some(updated.id.as_str())),
            (updated.id.as_str(), None)
        ]
    );
    assert!(history.versions[0].valid_to.is_some());

    // Now: only the new version. As of before the update: only the old one.
    let now = search(&mut c, "Maria", SearchMode::Text, Filter::default()).await;
    assert_eq!(ids(&now), [updated.id.as_str()]);
    let then = search(
        &mut c,
        "Maria",
        SearchMode::Text,
        Filter {
            as_of: Some(before_update),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(ids(&then), [added.id.as_str()]);
    let err = rpc_code::<Update>(
        c.call::<Update>(&UpdateParams {
            id: added.id.clone(),
            content: Some("x".into()),
            ..Default::default()
        })
        .await,
    );
    assert_eq!(
        err.0, -32002,
        "updating a replaced version is a conflict: {}",
        err.1
    );

    let forgotten = c
        .call::<Forget>(&ForgetParams {
            ids: vec![updated.id.clone()],
            filter: None,
        })
        .await
        .unwrap();
    assert_eq!(forgotten.deleted, 2, "both versions go");
    for mode in [SearchMode::Vector, SearchMode::Text, SearchMode::Hybrid] {
        let r = search(
            &mut c,
            "my sister Maria in Porto teaching violin",
            mode,
            Filter::default(),
        )
        .await;
        assert!(
            r.hits.iter().all(|h| !h.memory.content.contains("Maria")),
            "{mode:?}: {r:#?}"
        );
        let old = search(
            &mut c,
            "Maria",
            mode,
            Filter {
                as_of: Some("2100-01-01".into()),
                ..Default::default()
            },
        )
        .await;
        assert!(
            old.hits.iter().all(|h| !h.memory.content.contains("Maria")),
            "as_of still sees it: {old:#?}"
        );
    }
    let (code, _) = rpc_code::<Get>(
        c.call::<Get>(&GetParams {
            id: added.id.clone(),
        })
        .await,
    );
    assert_eq!(code, -32001);
}

#[tokio::test]
async fn filters_and_pages() {
    let daemon = Daemon::start();
    let mut c = daemon.client().await;
    let items: Vec<AddParams> = (0..25)
        .map(|i| AddParams {
            content: format!("note number {i} about gardening"),
            namespace: Some(if i % 2 == 0 { "even" } else { "odd" }.into()),
            occurred_at: Some(format!("2024-01-{:02}", i + 1)),
            ..Default::default()
        })
        .collect();
    let added = c.call::<AddBatch>(&AddBatchParams { items }).await.unwrap();
    assert_eq!(added.ids.len(), 25);

    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = c
            .call::<List>(&ListParams {
                filter: Filter {
                    namespace: Some("even".into()),
                    ..Default::default()
                },
                limit: Some(5),
                cursor,
            })
            .await
            .unwrap();
        seen.extend(page.memories.iter().map(|m| m.id.clone()));
        assert!(page.memories.iter().all(|m| m.namespace == "even"));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    let mut want: Vec<String> = added.ids.iter().step_by(2).cloned().collect();
    want.reverse();
    assert_eq!(seen, want, "newest first, every one once");

    let r = c
        .call::<Search>(&SearchParams {
            query: "gardening".into(),
            k: Some(50),
            mode: SearchMode::Text,
            filter: Filter {
                since: Some("2024-01-10".into()),
                until: Some("2024-01-15".into()),
                ..Default::default()
            },
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(r.hits.len(), 5, "days 10 to 14");

    let gone = c
        .call::<Forget>(&ForgetParams {
            ids: vec![],
            filter: Some(Filter {
                namespace: Some("odd".into()),
                ..Default::default()
            }),
        })
        .await
        .unwrap();
    assert_eq!(gone.deleted, 12);
}

#[tokio::test]
async fn bad_input_is_refused_clearly_and_nothing_half_written() {
    let daemon = Daemon::start();
    let mut c = daemon.client().await;
    let cases: Vec<(AddParams, &str)> = vec![
        (
            AddParams {
                content: "".into(),
                ..Default::default()
            },
            "empty",
        ),
        (
            AddParams {
                content: "x".repeat(MAX_CONTENT_BYTES + 1),
                ..Default::default()
            },
            "limit",
        ),
        (
            AddParams {
                content: "x".into(),
                occurred_at: Some("yesterday-ish".into()),
                ..Default::default()
            },
            "occurred_at",
        ),
        (
            AddParams {
                content: "x".into(),
                namespace: Some("n".repeat(1 << 20)),
                ..Default::default()
            },
            "namespace is 1048576 bytes",
        ),
        (
            AddParams {
                content: "x".into(),
                tags: (0..10_000).map(|i| format!("t{i}")).collect(),
                ..Default::default()
            },
            "10000 tags",
        ),
        (
            AddParams {
                content: "x".into(),
                metadata: Some(serde_json::json!({"blob": "m".repeat(7 << 20)})),
                ..Default::default()
            },
            "metadata is",
        ),
    ];
    for (params, word) in cases {
        let (code, message) = rpc_code::<Add>(c.call::<Add>(&params).await);
        assert_eq!(code, -32602);
        assert!(message.contains(word), "{message}");
    }
    let (code, message) = rpc_code::<Get>(
        c.call::<Get>(&GetParams {
            id: "no-such-id".into(),
        })
        .await,
    );
    assert_eq!(code, -32001);
    assert!(message.contains("no-such-id"));
    let (code, _) = rpc_code::<Forget>(
        c.call::<Forget>(&ForgetParams {
            ids: vec!["no-such-id".into()],
            filter: None,
        })
        .await,
    );
    assert_eq!(code, -32001);
    let (code, message) = rpc_code::<Forget>(c.call::<Forget>(&ForgetParams::default()).await);
    assert_eq!(code, -32602, "{message}");
    let (code, message) = rpc_code::<Search>(
        c.call::<Search>(&SearchParams {
            query: "x".into(),
            filter: Filter {
                as_of: Some("nope".into()),
                ..Default::default()
            },
            ..Default::default()
        })
        .await,
    );
    assert_eq!(code, -32602);
    assert!(message.contains("as_of"), "{message}");

    let mut items: Vec<AddParams> = (0..5)
        .map(|i| AddParams {
            content: format!("fine item {i}"),
            ..Default::default()
        })
        .collect();
    items[3].content = "   ".into();
    let (code, message) = rpc_code::<AddBatch>(c.call::<AddBatch>(&AddBatchParams { items }).await);
    assert_eq!(code, -32602);
    assert!(
        message.contains("items[3]") && message.contains("nothing was added"),
        "{message}"
    );
    let listed = c.call::<List>(&ListParams::default()).await.unwrap();
    assert!(
        listed.memories.is_empty(),
        "a refused batch leaves nothing behind"
    );
}

#[test]
fn cli_memory_commands() {
    let daemon = Daemon::start();
    let mnemo = |args: &[&str], stdin: Option<&str>| {
        let out = daemon.cli(args, stdin.unwrap_or(""));
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (code, id, err) = mnemo(
        &[
            "add",
            "--kind",
            "preference",
            "I prefer green tea over coffee",
        ],
        None,
    );
    assert_eq!(code, Some(0), "{err}");
    let id = id.trim().to_string();
    let (code, _, err) = mnemo(
        &["add"],
        Some("Piped from stdin: the wifi password is on the fridge\n"),
    );
    assert_eq!(code, Some(0), "{err}");
    let (_, out, _) = mnemo(&["search", "green tea", "--json"], None);
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["hits"][0]["memory"]["id"], id.as_str());
    let (_, out, _) = mnemo(&["search", "fridge", "--explain"], None);
    assert!(
        out.contains("wifi password") && out.contains("relevance"),
        "{out}"
    );
    let (_, out, _) = mnemo(&["get", &id], None);
    assert!(
        out.contains("preference") && out.contains("green tea"),
        "{out}"
    );
    let (code, _, err) = mnemo(&["add", "--kind", "dream", "x"], None);
    assert_eq!(code, Some(2), "clap refuses an unknown kind: {err}");
    assert!(err.contains("dream"));
    let (code, _, err) = mnemo(&["forget", "--namespace", "default"], None);
    assert_eq!(code, Some(1));
    assert!(err.contains("--yes"), "{err}");
    let (code, out, _) = mnemo(&["forget", &id], None);
    assert_eq!(code, Some(0));
    assert!(out.contains("forgot 1"), "{out}");
}

/// The duplicate check holds when the same text arrives many times at once.
#[tokio::test]
async fn the_same_text_added_concurrently_is_stored_once() {
    let daemon = Daemon::start();
    let adds: Vec<_> = (0..48)
        .map(|_| {
            let socket = daemon.socket.clone();
            tokio::spawn(async move {
                let mut c = Client::connect(&socket).await.unwrap();
                c.call::<Add>(&AddParams {
                    content: "Maria's birthday is on the fourth of May".into(),
                    namespace: Some("family".into()),
                    ..Default::default()
                })
                .await
                .unwrap()
                .id
            })
        })
        .collect();
    let mut ids = std::collections::BTreeSet::new();
    for add in adds {
        ids.insert(add.await.unwrap());
    }
    assert_eq!(ids.len(), 1, "48 adds answered {ids:?}");
    let mut c = daemon.client().await;
    let listed = c
        .call::<List>(&ListParams {
            filter: Filter {
                namespace: Some("family".into()),
                ..Default::default()
            },
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.memories.len(), 1);
}
