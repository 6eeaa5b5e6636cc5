//! The engine's guarantees seen from outside: forgotten text leaves the data directory, vectors
//! of another model are re-embedded instead of mixed, concurrent updates of one version
//! conflict while updates of different memories do not, and counts are current at once.

use std::time::Duration;

use mnemo_client::ClientError;
use mnemo_protocol::daemon::Status;
use mnemo_protocol::memory::*;
use mnemo_protocol::NoParams;
use mnemo_tests::{disk_holds, wait_for, Daemon, Embedder};

fn add(content: &str) -> AddParams {
    AddParams {
        content: content.into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn forgotten_text_leaves_the_data_directory() {
    let daemon = Daemon::start_configured(
        Embedder::Hashed,
        "[store]\npurge_after_forget_secs = 1\n",
        &[],
    );
    let mut c = daemon.client().await;
    let token = format!("zebracorn{}", std::process::id());
    let secret = c
        .call::<Add>(&add(&format!(
            "my bank PIN hint is {token} tucked in the atlas"
        )))
        .await
        .unwrap();
    for i in 0..5 {
        c.call::<Add>(&add(&format!(
            "an ordinary remark number {i} about the weather"
        )))
        .await
        .unwrap();
    }
    // Updated once, so an older version holds the text too.
    let secret = c
        .call::<Update>(&UpdateParams {
            id: secret.id,
            tags: Some(vec!["private".into()]),
            ..Default::default()
        })
        .await
        .unwrap();
    let db = daemon.data_dir.join("db");
    assert!(
        disk_holds(&db, token.as_bytes()),
        "the text should be on disk before the forget (else this test proves nothing)"
    );
    let forgotten = c
        .call::<Forget>(&ForgetParams {
            ids: vec![secret.id],
            filter: None,
        })
        .await
        .unwrap();
    assert_eq!(forgotten.deleted, 2, "both versions go");
    wait_for(
        Duration::from_secs(60),
        "the forgotten text to leave the disk",
        || async { (!disk_holds(&db, token.as_bytes())).then_some(()) },
    )
    .await;
    // The rest is intact and still found by its words.
    let r = c
        .call::<Search>(&SearchParams {
            query: "weather remark".into(),
            k: Some(10),
            mode: SearchMode::Text,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(r.hits.len(), 5);
}

#[tokio::test]
async fn vectors_of_another_model_are_re_embedded_not_mixed() {
    // First without the model: the daemon falls back to the hashed embedder.
    let no_model = tempfile::tempdir().unwrap();
    let missing = no_model.path().to_string_lossy().to_string();
    let mut daemon = Daemon::start_with(Embedder::Minilm, &["--model-dir", &missing]);
    let mut c = daemon.client().await;
    let status = c.call::<Status>(&NoParams {}).await.unwrap();
    assert!(status.degraded(), "started without the model: {status:?}");
    let target = "My sister Maria plays the cello in the city orchestra";
    let filler = [
        "The quarterly budget review moved to Thursday afternoon",
        "Sam recommended a novel about generation ships",
        "The bike needs new brake pads before the spring ride",
        "Our flight to Lisbon leaves at seven in the morning",
        "The tomato seedlings went into the greenhouse today",
        "I renewed the car insurance for another year",
        "The dentist appointment is on the fifth of March",
        "We painted the spare bedroom a pale green",
    ];
    let id = c.call::<Add>(&add(target)).await.unwrap().id;
    for f in filler {
        c.call::<Add>(&add(f)).await.unwrap();
    }
    drop(c);
    daemon.stop();

    // Then with it: the hashed vectors are replaced in the background.
    daemon.set_extra_args(&[]);
    daemon.restart();
    let mut c = daemon.client().await;
    let status = c.call::<Status>(&NoParams {}).await.unwrap();
    assert!(!status.degraded(), "{status:?}");
    wait_for(Duration::from_secs(120), "re-embedding to finish", || {
        let log = daemon.log_text();
        async move { log.contains("re-embedded 9 memories").then_some(()) }
    })
    .await;
    let status = c.call::<Status>(&NoParams {}).await.unwrap();
    assert_eq!(status.reembed, None, "nothing left to re-embed");
    // A question sharing no word with the memory: only meaning finds it.
    let r = c
        .call::<Search>(&SearchParams {
            query: "which instrument does my sibling perform".into(),
            k: Some(3),
            mode: SearchMode::Vector,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(r.hits[0].memory.id, id, "{:?}", r.hits);
}

#[tokio::test]
async fn one_version_updated_twice_at_once_conflicts_once() {
    let daemon = Daemon::start();
    let mut a = daemon.client().await;
    let mut b = daemon.client().await;
    let m = a
        .call::<Add>(&add("the meeting is on Monday"))
        .await
        .unwrap();
    let other = a.call::<Add>(&add("the gym opens at six")).await.unwrap();
    let edit = |id: &str, text: &str| UpdateParams {
        id: id.into(),
        content: Some(text.into()),
        ..Default::default()
    };
    let (tuesday, wednesday) = (
        edit(&m.id, "the meeting is on Tuesday"),
        edit(&m.id, "the meeting is on Wednesday"),
    );
    let (first, second) = tokio::join!(a.call::<Update>(&tuesday), b.call::<Update>(&wednesday),);
    let outcomes = [first, second];
    let wins = outcomes.iter().filter(|r| r.is_ok()).count();
    assert_eq!(wins, 1, "{outcomes:?}");
    let loss = outcomes.into_iter().find_map(|r| r.err()).unwrap();
    match loss {
        ClientError::Rpc(e) => assert_eq!(e.code, mnemo_protocol::codes::CONFLICT, "{e}"),
        other => panic!("expected a conflict, got {other}"),
    }
    // Different memories at once: both succeed.
    let current = a
        .call::<List>(&ListParams::default())
        .await
        .unwrap()
        .memories
        .into_iter()
        .find(|x| x.lineage == m.lineage)
        .unwrap();
    let (friday, seven) = (
        edit(&current.id, "the meeting is on Friday"),
        edit(&other.id, "the gym opens at seven"),
    );
    let (x, y) = tokio::join!(a.call::<Update>(&friday), b.call::<Update>(&seven));
    assert!(x.is_ok() && y.is_ok(), "{x:?} {y:?}");
    // Counts are current the moment a write is acknowledged.
    let status = a.call::<Status>(&NoParams {}).await.unwrap();
    assert_eq!(status.memories.total, 2);
    assert_eq!(status.memories.by_kind.get("episodic"), Some(&2));
}
