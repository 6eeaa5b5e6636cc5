//! Entities through the real daemon: names found at ingest (the speaker, relations, names
//! learned earlier and written in lower case later) lift the memories that mention what a
//! query names, rare names more than common ones, and a speaker's own lines above the replies
//! to them, in a plain and in an encrypted store.

use mnemo_client::Client;
use mnemo_protocol::memory::*;
use mnemo_tests::{Daemon, Embedder};

async fn add(c: &mut Client, namespace: &str, content: &str) -> String {
    c.call::<Add>(&AddParams {
        content: content.into(),
        namespace: Some(namespace.into()),
        ..Default::default()
    })
    .await
    .unwrap()
    .id
}

async fn search(c: &mut Client, namespace: &str, query: &str) -> SearchResult {
    c.call::<Search>(&SearchParams {
        query: query.into(),
        k: Some(10),
        mode: SearchMode::Hybrid,
        filter: Filter {
            namespace: Some(namespace.into()),
            ..Default::default()
        },
        explain: true,
        exact: false,
    })
    .await
    .unwrap()
}

/// How the hit `id` of `r` was scored.
fn explain_of<'a>(r: &'a SearchResult, id: &str) -> &'a ScoreExplain {
    r.hits
        .iter()
        .find(|h| h.memory.id == id)
        .and_then(|h| h.explain.as_ref())
        .unwrap_or_else(|| panic!("{id} not found in {r:?}"))
}

fn entity_of(r: &SearchResult, id: &str) -> f32 {
    explain_of(r, id).entity
}

async fn names_lift_the_memories_that_mention_them(daemon: &Daemon) {
    let mut c = daemon.client().await;
    let ns = "chat";
    for i in 0..12 {
        add(
            &mut c,
            ns,
            &format!("Caroline: the garden needs water again, day {i} of the heat"),
        )
        .await;
    }
    let sister = add(
        &mut c,
        ns,
        "Caroline: my sister Maria finally moved to Uppsala for her garden design job",
    )
    .await;
    // Lower case: found because "Maria" is known by now.
    let later = add(
        &mut c,
        ns,
        "Caroline: visited maria, her new garden is tiny",
    )
    .await;
    let plain = add(&mut c, ns, "Caroline: a garden design book arrived today").await;

    let r = search(&mut c, ns, "what does maria do in her garden?").await;
    let (named, lower, unnamed) = (
        entity_of(&r, &sister),
        entity_of(&r, &later),
        entity_of(&r, &plain),
    );
    assert!(named > 0.99, "the memory naming Maria: {named}");
    assert!(
        lower > 0.99,
        "Maria written in lower case is the same name: {lower}"
    );
    assert_eq!(unnamed, 0.0, "a memory that does not name Maria");
    let top: Vec<&str> = r.hits[..2].iter().map(|h| h.memory.id.as_str()).collect();
    assert!(
        top.contains(&sister.as_str()) && top.contains(&later.as_str()),
        "the two memories naming Maria rank first: {r:?}"
    );
    let w = r.hits[0].explain.as_ref().unwrap().weights;
    assert!(w.entity > 0.0, "the entity weight is reported: {w:?}");

    // The speaker is in every memory: naming her tells little, a rare name much more.
    let both = search(&mut c, ns, "did Caroline tell Maria about the garden?").await;
    let speaker_only = both
        .hits
        .iter()
        .find(|h| ![sister.as_str(), later.as_str()].contains(&h.memory.id.as_str()))
        .and_then(|h| h.explain.as_ref())
        .map(|e| e.entity)
        .unwrap();
    assert!(
        speaker_only > 0.0 && speaker_only < 0.35,
        "Caroline alone carries a small share: {speaker_only}"
    );
    assert!(entity_of(&both, &sister) > 0.99);
    // Named in every memory, Caroline is left out of what the retrievers are asked (the
    // entity component weighs her); Maria, in 2 of 15, is kept.
    assert_eq!(
        both.retrievers_asked.as_deref(),
        Some("did tell Maria about the garden?")
    );
    assert_eq!(r.retrievers_asked, None, "{r:?}");

    // Forgotten, the name is unlearned: a new lower-case mention is not an entity.
    c.call::<Forget>(&ForgetParams {
        ids: vec![sister, later],
        ..Default::default()
    })
    .await
    .unwrap();
    let r = search(&mut c, ns, "maria garden").await;
    assert!(
        r.hits
            .iter()
            .all(|h| h.explain.as_ref().unwrap().entity == 0.0),
        "no memory names Maria any more: {r:?}"
    );
}

/// A question about someone is answered by what they said: their own lines rank above the
/// other side's lines that greet them or speak of them.
async fn a_speakers_own_lines_rank_above_the_lines_to_or_about_them(daemon: &Daemon) {
    let mut c = daemon.client().await;
    let ns = "talk";
    let hers = add(
        &mut c,
        ns,
        "Maria: I grow tomatoes and basil on the balcony",
    )
    .await;
    let reply = add(
        &mut c,
        ns,
        "John: Hey Maria, what do you grow on the balcony?",
    )
    .await;
    let about = add(&mut c, ns, "John: Maria grows tomatoes and basil").await;
    add(&mut c, ns, "John: my basil died in the heat").await;
    let r = search(&mut c, ns, "what does Maria grow on the balcony?").await;
    let explain = |id: &str| explain_of(&r, id);
    assert_eq!(r.hits[0].memory.id, hers, "her own line first: {r:?}");
    assert_eq!(explain(&hers).subject, 1.0, "{r:?}");
    // Greeted or spoken of: mentions of Maria, not by her.
    for other in [&reply, &about] {
        assert_eq!(explain(other).subject, 0.0, "{r:?}");
        assert!(explain(other).entity > 0.99, "{r:?}");
    }
    assert!(
        explain(&hers).weights.subject > 0.0,
        "the weight is reported"
    );
}

#[tokio::test]
async fn entities_in_a_plain_store() {
    let daemon = Daemon::start_with(Embedder::Hashed, &[]);
    names_lift_the_memories_that_mention_them(&daemon).await;
    a_speakers_own_lines_rank_above_the_lines_to_or_about_them(&daemon).await;
}

#[tokio::test]
async fn entities_in_an_encrypted_store_hold_no_name_on_disk() {
    let daemon = Daemon::start_configured(
        Embedder::Hashed,
        "[security]\nencrypt = true\nkey_store = \"file\"\n",
        &[],
    );
    names_lift_the_memories_that_mention_them(&daemon).await;
    a_speakers_own_lines_rank_above_the_lines_to_or_about_them(&daemon).await;
    let mut c = daemon.client().await;
    add(&mut c, "chat", "Caroline: Quintessaria from Uppsala called").await;
    let db = daemon.data_dir.join("db");
    for name in ["quintessaria", "Quintessaria", "uppsala"] {
        assert!(
            !mnemo_tests::disk_holds(&db, name.as_bytes()),
            "{name} is on disk"
        );
    }
}

async fn list(
    c: &mut Client,
    p: mnemo_protocol::entity::ListParams,
) -> mnemo_protocol::entity::ListResult {
    c.call::<mnemo_protocol::entity::List>(&p).await.unwrap()
}

fn entity_names(r: &mnemo_protocol::entity::ListResult) -> Vec<&str> {
    r.entities.iter().map(|e| e.name.as_str()).collect()
}

#[tokio::test]
async fn the_entity_book_lists_describes_survives_a_restart_and_forgets() {
    use mnemo_protocol::entity::{self, EntitySort, EntityType};
    let mut daemon = Daemon::start_with(Embedder::Hashed, &[]);
    let mut c = daemon.client().await;
    let ns = "chat";
    let first = add(&mut c, ns, "Caroline: my sister Maria moved to Lisbon").await;
    add(&mut c, ns, "Caroline: maria's new flat in Lisbon is tiny").await;
    add(&mut c, ns, "Caroline: Maria and Tomas are painting it").await;
    add(&mut c, "other", "I talked to Maria from work").await;

    let all = list(
        &mut c,
        entity::ListParams {
            namespace: Some(ns.into()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(
        entity_names(&all)[..2],
        ["Caroline", "Maria"],
        "most mentioned first: {all:?}"
    );
    let maria = &all.entities[1];
    assert_eq!(maria.mention_count, 3);
    assert_eq!(maria.entity_type, EntityType::Person);
    assert_eq!(maria.relation.as_deref(), Some("sister"));
    assert!(
        maria.aliases.contains(&"maria".to_string()),
        "the lower-case form is an alias: {maria:?}"
    );
    let people = list(
        &mut c,
        entity::ListParams {
            namespace: Some(ns.into()),
            entity_type: Some(EntityType::Person),
            prefix: Some("MA".into()),
            sort: EntitySort::Name,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(entity_names(&people), ["Maria"]);
    let paged = list(
        &mut c,
        entity::ListParams {
            namespace: Some(ns.into()),
            limit: Some(1),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(paged.entities.len(), 1);
    assert!(paged.next_cursor.is_some() && paged.total >= 4, "{paged:?}");

    let ambiguous = c
        .call::<entity::Get>(&entity::GetParams {
            name: "maria".into(),
            namespace: None,
        })
        .await
        .unwrap_err();
    assert!(
        ambiguous.to_string().contains("several namespaces"),
        "{ambiguous}"
    );
    let got = c
        .call::<entity::Get>(&entity::GetParams {
            name: "MARIA".into(),
            namespace: Some(ns.into()),
        })
        .await
        .unwrap();
    assert_eq!(got.mentions.len(), 3);
    assert!(got.mentions.iter().any(|m| m.memory_id == first));
    let with: Vec<(&str, u64)> = got
        .related
        .iter()
        .map(|r| (r.name.as_str(), r.together))
        .collect();
    assert!(with.contains(&("Lisbon", 2)), "{with:?}");
    assert!(with.contains(&("Tomas", 1)), "{with:?}");

    // Written to the entities table: a restart knows them.
    daemon.stop();
    daemon.restart();
    let mut c = daemon.client().await;
    let again = list(
        &mut c,
        entity::ListParams {
            namespace: Some(ns.into()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(again.entities, all.entities);

    // Forgotten, Tomas is mentioned by nothing and goes; Maria counts one mention fewer.
    let tomas_turn = c
        .call::<Search>(&SearchParams {
            query: "Tomas painting".into(),
            k: Some(1),
            filter: Filter {
                namespace: Some(ns.into()),
                ..Default::default()
            },
            ..Default::default()
        })
        .await
        .unwrap()
        .hits[0]
        .memory
        .id
        .clone();
    c.call::<Forget>(&ForgetParams {
        ids: vec![tomas_turn],
        ..Default::default()
    })
    .await
    .unwrap();
    let after = list(
        &mut c,
        entity::ListParams {
            namespace: Some(ns.into()),
            ..Default::default()
        },
    )
    .await;
    assert!(!entity_names(&after).contains(&"Tomas"), "{after:?}");
    let maria = after.entities.iter().find(|e| e.name == "Maria").unwrap();
    assert_eq!(maria.mention_count, 2);
    let gone = c
        .call::<entity::Get>(&entity::GetParams {
            name: "tomas".into(),
            namespace: Some(ns.into()),
        })
        .await
        .unwrap_err();
    assert!(gone.to_string().contains("no memory"), "{gone}");
}

async fn say(c: &mut Client, session: &str, content: &str) -> String {
    c.call::<Add>(&AddParams {
        content: content.into(),
        namespace: Some("chat".into()),
        session_id: Some(session.into()),
        ..Default::default()
    })
    .await
    .unwrap()
    .id
}

#[tokio::test]
async fn consolidation_merges_the_aliases_a_chat_proves_and_recall_uses_them() {
    use mnemo_protocol::consolidate::Phase;
    use mnemo_protocol::entity;
    let daemon =
        Daemon::start_configured(Embedder::Hashed, "[consolidate]\nenabled = false\n", &[]);
    let mut c = daemon.client().await;
    say(&mut c, "s1", "Melanie: I finished the lake painting today").await;
    let greeting = say(&mut c, "s1", "Caroline: Wow Mel! Send me a photo of it").await;
    say(&mut c, "s1", "Melanie: Sure, tomorrow").await;
    say(&mut c, "s2", "Robert: hi all, my friends call me Bob.").await;
    let bob = say(&mut c, "s2", "Caroline: Bob brought the pottery kiln").await;
    // Mel could be Melanie or Melissa here: nothing merges on a guess.
    say(&mut c, "s3", "Melissa: hello").await;
    say(&mut c, "s3", "Melanie: hello").await;
    say(&mut c, "s3", "Caroline: Hi Mel!").await;

    let names = |r: &entity::ListResult| -> Vec<String> {
        r.entities.iter().map(|e| e.name.clone()).collect()
    };
    let before = list(&mut c, entity::ListParams::default()).await;
    assert!(names(&before).contains(&"Mel".to_string()), "{before:?}");

    let run = daemon.consolidate_now();
    assert_eq!(run.count(Phase::Entities, "aliases"), 2, "{run:?}");
    let after = list(&mut c, entity::ListParams::default()).await;
    let after_names = names(&after);
    assert!(!after_names.contains(&"Mel".to_string()), "{after:?}");
    assert!(!after_names.contains(&"Bob".to_string()), "{after:?}");

    // Either name finds the entity, with the alias's mentions.
    let mel = c
        .call::<entity::Get>(&entity::GetParams {
            name: "mel".into(),
            namespace: Some("chat".into()),
        })
        .await
        .unwrap();
    assert_eq!(mel.entity.name, "Melanie");
    assert!(mel.entity.aliases.contains(&"Mel".to_string()));
    assert!(
        mel.mentions.iter().any(|m| m.memory_id == greeting),
        "{mel:?}"
    );
    let got = c.call::<Get>(&GetParams { id: bob.clone() }).await.unwrap();
    assert_eq!(got.entities, vec!["Caroline", "Robert"]);

    // Names said together relate under the entity's key, not the alias's.
    let caroline = mel
        .related
        .iter()
        .find(|r| r.name == "Caroline")
        .expect("Caroline is related to Melanie");
    assert!(caroline.edge_weight.is_some(), "{caroline:?}");
    use mnemo_protocol::graph::{EdgeType, Neighbors, NeighborsParams, Node};
    let from_alias = c
        .call::<Neighbors>(&NeighborsParams {
            node: Node::entity("mel"),
            namespace: Some("chat".into()),
            types: vec![EdgeType::RelatesTo],
            min_weight: None,
            depth: Some(1),
            limit: None,
        })
        .await;
    assert!(
        from_alias.as_ref().map_or(true, |r| r.edges.is_empty()),
        "{from_alias:?}"
    );

    // A query naming Robert lifts the memory that says Bob.
    let found = search(&mut c, "chat", "what did Robert bring").await;
    assert!(entity_of(&found, &bob) > 0.0, "{found:?}");
}
