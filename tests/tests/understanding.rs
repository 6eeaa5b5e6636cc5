//! What ingest reads in a text, through the real daemon: the emotion, the salience factors
//! and the time a memory speaks about are stored and returned; the emotion and valence
//! filters narrow; a query naming a time lifts the memories of that time; a given salience
//! is kept as given.

use mnemo_client::Client;
use mnemo_protocol::memory::*;
use mnemo_protocol::understanding::EmotionKind;
use mnemo_tests::{Daemon, Embedder};

async fn add(c: &mut Client, content: &str, occurred_at: &str) -> Memory {
    c.call::<Add>(&AddParams {
        content: content.into(),
        occurred_at: Some(occurred_at.into()),
        namespace: Some("life".into()),
        ..Default::default()
    })
    .await
    .unwrap()
}

async fn list(c: &mut Client, filter: Filter) -> Vec<String> {
    let filter = Filter {
        namespace: Some("life".into()),
        ..filter
    };
    c.call::<List>(&ListParams {
        filter,
        ..Default::default()
    })
    .await
    .unwrap()
    .memories
    .into_iter()
    .map(|m| m.content)
    .collect()
}

#[tokio::test]
async fn ingest_reads_feeling_importance_and_time() {
    let daemon = Daemon::start_with(Embedder::Hashed, &[]);
    let mut c = daemon.client().await;
    // Wednesday 10 May 2023.
    let wedding = add(
        &mut c,
        "I'm so excited, my sister Maria got married last Saturday!",
        "2023-05-10T15:00:00Z",
    )
    .await;
    let sad = add(
        &mut c,
        "I was really sad when the old bakery closed two weeks ago",
        "2023-05-10T16:00:00Z",
    )
    .await;
    let plain = add(&mut c, "The bus timetable changed", "2023-05-10T17:00:00Z").await;

    let got = c
        .call::<Get>(&GetParams {
            id: wedding.id.clone(),
        })
        .await
        .unwrap();
    let emotion = got.emotion.expect("the emotion is returned");
    assert_eq!(emotion.primary, EmotionKind::Joy);
    assert!(
        emotion.valence > 0.5 && emotion.intensity > 0.8,
        "{emotion:?}"
    );
    let event = got.event.expect("last Saturday is resolved");
    assert_eq!(event.start, "2023-05-06T00:00:00.000Z");
    assert_eq!(event.end, "2023-05-07T00:00:00.000Z");
    assert!(
        got.entities.contains(&"Maria".to_string()),
        "memory.get names what it mentions: {:?}",
        got.entities
    );
    let f = got.salience_factors.expect("the factors are returned");
    assert_eq!(f.self_reference, 1.0);
    assert_eq!(f.relationship, 1.0);
    assert!(f.temporal > 0.0 && f.novelty > 0.0, "{f:?}");
    assert!(
        wedding.salience > plain.salience + 2.0,
        "a wedding matters more than a timetable: {} vs {}",
        wedding.salience,
        plain.salience
    );
    assert_eq!(
        sad.emotion.map(|e| e.primary),
        Some(EmotionKind::Sadness),
        "the add answer carries it too"
    );
    assert_eq!(plain.emotion.map(|e| e.primary), Some(EmotionKind::Neutral));

    // Filters.
    let joyful = list(
        &mut c,
        Filter {
            emotion: Some(EmotionKind::Joy),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(joyful, vec![wedding.content.clone()]);
    let unpleasant = list(
        &mut c,
        Filter {
            max_valence: Some(-0.2),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(unpleasant, vec![sad.content.clone()]);
    let err = c
        .call::<List>(&ListParams {
            filter: Filter {
                min_valence: Some(2.0),
                ..Default::default()
            },
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("min_valence"), "{err}");

    // A query naming a time lifts what that time holds.
    let r = c
        .call::<Search>(&SearchParams {
            query: "what happened on 26 April 2023".into(),
            k: Some(3),
            filter: Filter {
                namespace: Some("life".into()),
                ..Default::default()
            },
            explain: true,
            ..Default::default()
        })
        .await
        .unwrap();
    let time_of = |id: &str| {
        r.hits
            .iter()
            .find(|h| h.memory.id == id)
            .and_then(|h| h.explain.as_ref())
            .map(|e| e.time)
            .unwrap_or_else(|| panic!("{id} not in {r:?}"))
    };
    assert_eq!(time_of(&sad.id), 1.0, "the bakery closed in that week");
    assert!(
        time_of(&plain.id) < 0.01,
        "the timetable changed two weeks later"
    );
    assert_eq!(r.hits[0].memory.id, sad.id, "{r:?}");
    let explain = r.hits[0].explain.as_ref().unwrap();
    assert!(explain.weights.time > 0.0);
    assert!(
        explain.salience_factors.is_some(),
        "explain shows the factors"
    );

    // A salience given is kept, with no factors to explain it.
    let given = c
        .call::<Add>(&AddParams {
            content: "I'm thrilled!".into(),
            salience: Some(1.5),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(given.salience, 1.5);
    assert!(given.salience_factors.is_none());
}
