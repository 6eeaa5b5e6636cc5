//! The memory graph through the real daemon: a conversation becomes MENTIONS and
//! TEMPORAL_SEQUENCE edges, walks and paths follow them, recall lifts the turns beside its
//! best result, bad walks are refused with the reason, and forget takes a memory's edges.

use mnemo_client::{Client, ClientError};
use mnemo_protocol::graph::*;
use mnemo_protocol::memory::*;
use mnemo_tests::{Daemon, Embedder};

const NS: &str = "chat";

async fn say(c: &mut Client, session: Option<&str>, content: &str) -> String {
    c.call::<Add>(&AddParams {
        content: content.into(),
        namespace: Some(NS.into()),
        session_id: session.map(str::to_string),
        ..Default::default()
    })
    .await
    .unwrap()
    .id
}

async fn neighbors(
    c: &mut Client,
    node: Node,
    depth: usize,
) -> Result<NeighborsResult, ClientError> {
    c.call::<Neighbors>(&NeighborsParams {
        node,
        namespace: Some(NS.into()),
        types: Vec::new(),
        min_weight: None,
        depth: Some(depth),
        limit: None,
    })
    .await
}

fn edges_of(r: &NeighborsResult, t: EdgeType) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = r
        .edges
        .iter()
        .filter(|e| e.edge_type == t)
        .map(|e| (e.src.id.clone(), e.dst.id.clone()))
        .collect();
    found.sort();
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_becomes_a_graph_that_recall_walks_and_forget_cleans() {
    let daemon = Daemon::start_with(Embedder::Hashed, &[]);
    let mut c = daemon.client().await;
    let s = Some("evening");
    let q = say(&mut c, s, "Mel: how was the pottery workshop on Saturday?").await;
    let a = say(&mut c, s, "Caroline: wonderful, my sister Maria came along").await;
    let l = say(&mut c, s, "Mel: lovely! Is Maria still living in Lisbon?").await;
    let loose = say(&mut c, None, "Maria sent a postcard").await;

    // The answer turn: its place in the conversation and the names it mentions.
    let r = neighbors(&mut c, Node::memory(&a), 1).await.unwrap();
    let mut sequence = vec![(q.clone(), a.clone()), (a.clone(), l.clone())];
    sequence.sort();
    assert_eq!(edges_of(&r, EdgeType::TemporalSequence), sequence);
    assert_eq!(
        edges_of(&r, EdgeType::Mentions),
        vec![(a.clone(), "caroline".into()), (a.clone(), "maria".into())]
    );
    assert_eq!(r.nodes[0].node, Node::memory(&a));
    assert!(
        r.nodes[0].label.contains("my sister Maria"),
        "{:?}",
        r.nodes[0]
    );
    // A note outside any session has no sequence edge.
    let r = neighbors(&mut c, Node::memory(&loose), 1).await.unwrap();
    assert!(edges_of(&r, EdgeType::TemporalSequence).is_empty());

    // An entity, named in any case, reaches every memory that mentions it.
    let r = neighbors(&mut c, Node::entity("MARIA"), 1).await.unwrap();
    let mentioning: Vec<String> = edges_of(&r, EdgeType::Mentions)
        .into_iter()
        .map(|e| e.0)
        .collect();
    let mut want = vec![a.clone(), l.clone(), loose.clone()];
    want.sort();
    assert_eq!(mentioning, want);

    // Two hops: the question and the postcard meet through Maria's turn and name.
    let p = c
        .call::<Path>(&PathParams {
            from: Node::memory(&a),
            to: Node::memory(&loose),
            namespace: None,
            types: Vec::new(),
            max_depth: None,
        })
        .await
        .unwrap();
    let ids: Vec<&str> = p.nodes.iter().map(|n| n.node.id.as_str()).collect();
    assert_eq!(ids, [a.as_str(), "maria", loose.as_str()]);
    assert_eq!(p.edges.len(), 2);

    // Recall: the answer is lifted by the question it follows, and says so.
    let found = c
        .call::<Search>(&SearchParams {
            query: "pottery workshop Saturday".into(),
            k: Some(5),
            mode: SearchMode::Hybrid,
            filter: Filter {
                namespace: Some(NS.into()),
                ..Default::default()
            },
            explain: true,
            exact: false,
        })
        .await
        .unwrap();
    assert_eq!(found.hits[0].memory.id, q);
    let answer = found
        .hits
        .iter()
        .find(|h| h.memory.id == a)
        .expect("the answer turn");
    let explain = answer.explain.as_ref().unwrap();
    assert!(explain.graph > 0.0, "{explain:?}");
    assert_eq!(explain.graph_via.as_deref(), Some(q.as_str()));

    // Bad walks say what is wrong.
    let err = neighbors(&mut c, Node::memory(&a), 4)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("depth is 4") && err.contains("1–3"), "{err}");
    let err = neighbors(&mut c, Node::memory("no-such-id"), 1)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("no-such-id"), "{err}");
    let err = neighbors(&mut c, Node::entity("Lisbonne"), 1)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("mentions `Lisbonne`"), "{err}");

    // Forget takes the memory's edges; a name only it mentioned is gone from the graph.
    c.call::<Forget>(&ForgetParams {
        ids: vec![l.clone()],
        filter: None,
    })
    .await
    .unwrap();
    let r = neighbors(&mut c, Node::memory(&a), 1).await.unwrap();
    assert_eq!(
        edges_of(&r, EdgeType::TemporalSequence),
        vec![(q.clone(), a.clone())]
    );
    assert!(neighbors(&mut c, Node::entity("Lisbon"), 1).await.is_err());
    // The next turn of the session follows the last one still there.
    let next = say(&mut c, s, "Caroline: she moved to Porto actually").await;
    let r = neighbors(&mut c, Node::memory(&next), 1).await.unwrap();
    assert_eq!(
        edges_of(&r, EdgeType::TemporalSequence),
        vec![(a.clone(), next.clone())]
    );

    // The CLI shows the same walk.
    let out = daemon.cli(&["graph", "entity:maria", "-n", NS, "--json"], "");
    assert!(out.status.success(), "{out:?}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["nodes"][0]["kind"], "entity");
    let out = daemon.cli(&["graph", "path", &q, &loose], "");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("entity Maria") && text.contains("MENTIONS"),
        "{text}"
    );
}

async fn sequence_edge(c: &mut Client, from: &str) -> Edge {
    let r = neighbors(c, Node::memory(from), 1).await.unwrap();
    r.edges
        .into_iter()
        .find(|e| e.edge_type == EdgeType::TemporalSequence)
        .expect("a sequence edge")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recalled_together_strengthens_an_edge_and_disuse_fades_it() {
    use mnemo_protocol::consolidate::Phase;
    // What use adds halves in about 2.6 s, so disuse can be waited for.
    let config = "[consolidate]\nenabled = false\nedge_half_life_days = 0.00003\n";
    let daemon = Daemon::start_configured(Embedder::Hashed, config, &["--test-clock"]);
    let mut c = daemon.client().await;
    let s = Some("kitchen");
    let first = say(&mut c, s, "Mel: the sourdough starter smells of apples").await;
    say(
        &mut c,
        s,
        "Caroline: feed the sourdough starter twice a day",
    )
    .await;
    let made = sequence_edge(&mut c, &first).await;
    assert_eq!((made.weight, made.activation_count), (0.5, 0));

    // Both turns answer one recall, twice.
    for _ in 0..2 {
        let found = c
            .call::<Search>(&SearchParams {
                query: "sourdough starter".into(),
                k: Some(2),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(found.hits.len(), 2);
    }
    let run = daemon.consolidate_now();
    assert_eq!(run.count(Phase::Edges, "recalls"), 2);
    assert_eq!(run.count(Phase::Edges, "strengthened"), 1);
    let used = sequence_edge(&mut c, &first).await;
    assert_eq!(used.activation_count, 2);
    // Twice a tenth of the way to 1 (0.595), less what faded since (fast, here).
    assert!(used.weight > 0.55 && used.weight <= 0.595, "{used:?}");

    // Fading needs time to pass: about three half-lives, on the daemon's clock.
    daemon.advance_clock(8.0).await;
    let run = daemon.consolidate_now();
    assert!(run.count(Phase::Edges, "faded") >= 1, "{run:?}");
    let faded = sequence_edge(&mut c, &first).await;
    assert!(faded.weight < 0.52 && faded.weight >= 0.5, "{faded:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consolidation_links_similar_memories_and_relates_names_said_together() {
    use mnemo_protocol::consolidate::Phase;
    let config = "[consolidate]\nenabled = false\nsimilar_threshold = 0.5\n";
    let daemon = Daemon::start_configured(Embedder::Hashed, config, &[]);
    let mut c = daemon.client().await;
    let alps = say(
        &mut c,
        None,
        "Last summer Maria and Caroline went hiking in the Alps",
    )
    .await;
    let dolomites = say(
        &mut c,
        None,
        "This summer Maria and Caroline went hiking in the Dolomites",
    )
    .await;
    let bike = say(&mut c, None, "Oscar repaired a bicycle chain yesterday").await;

    let run = daemon.consolidate_now();
    assert_eq!(run.count(Phase::Dedup, "merged"), 0, "{run:?}");
    assert!(run.count(Phase::Dedup, "similar") >= 1, "{run:?}");
    // Maria and Caroline, each with the place of their hike.
    assert!(run.count(Phase::Entities, "related") >= 1, "{run:?}");

    // memory.get shows the strongest links: the similar hike, not the bicycle.
    let got = c
        .call::<Get>(&GetParams { id: alps.clone() })
        .await
        .unwrap();
    let similar: Vec<&Edge> = got
        .edges
        .iter()
        .filter(|e| e.edge_type == EdgeType::Similar)
        .collect();
    assert_eq!(similar.len(), 1, "{:?}", got.edges);
    let other = if similar[0].src.id == alps {
        &similar[0].dst.id
    } else {
        &similar[0].src.id
    };
    assert_eq!(other, &dolomites);
    assert!(similar[0].weight >= 0.5 && similar[0].weight < 0.95);
    assert!(got
        .edges
        .iter()
        .all(|e| e.src.id != bike && e.dst.id != bike));

    let related = neighbors(&mut c, Node::entity("maria"), 1).await.unwrap();
    let pair: Vec<&Edge> = related
        .edges
        .iter()
        .filter(|e| e.edge_type == EdgeType::RelatesTo && e.src.id == "caroline")
        .collect();
    assert_eq!(pair.len(), 1, "{related:?}");
    assert_eq!(pair[0].dst.id, "maria");
    // Made at 0.3 by the first memory, a tenth of the way to 1 by the second.
    assert!((pair[0].weight - 0.37).abs() < 1e-4, "{:?}", pair[0]);
    assert_eq!(pair[0].activation_count, 2);

    // The entity page shows the edge's weight beside the count.
    let maria = c
        .call::<mnemo_protocol::entity::Get>(&mnemo_protocol::entity::GetParams {
            name: "Maria".into(),
            namespace: Some(NS.into()),
        })
        .await
        .unwrap();
    let caroline = maria
        .related
        .iter()
        .find(|r| r.name == "Caroline")
        .expect("Caroline is related");
    assert_eq!(caroline.together, 2);
    assert!(
        (caroline.edge_weight.unwrap() - 0.37).abs() < 1e-4,
        "{caroline:?}"
    );

    // A second run counts nothing twice.
    let again = daemon.consolidate_now();
    assert_eq!(again.count(Phase::Entities, "related"), 0, "{again:?}");

    // Once no memory names them, what related them goes (the entity book writes every few
    // seconds, so this polls).
    for id in [&alps, &dolomites] {
        c.call::<Forget>(&ForgetParams {
            ids: vec![id.clone()],
            ..Default::default()
        })
        .await
        .unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let left = neighbors(&mut c, Node::entity("caroline"), 1).await;
        let gone = match left {
            Err(_) => true,
            Ok(r) => r.edges.iter().all(|e| e.edge_type != EdgeType::RelatesTo),
        };
        if gone {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "RELATES_TO outlived its entities"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}
