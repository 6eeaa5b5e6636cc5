//! Understanding people through the real daemon, as a new user tries it: a job and a home
//! changed in ordinary words, a relative's facts read clause by clause, entities typed from
//! context, a note label that is no speaker, and an update whose old belief stays in history.

use mnemo_client::Client;
use mnemo_protocol::belief::*;
use mnemo_protocol::entity::{self, EntityType};
use mnemo_protocol::memory::{Add, AddParams, Memory, Search, SearchParams, Update, UpdateParams};
use mnemo_tests::{Daemon, Embedder};

async fn say(c: &mut Client, content: &str, occurred_at: &str) -> Memory {
    c.call::<Add>(&AddParams {
        content: content.into(),
        occurred_at: Some(occurred_at.into()),
        ..Default::default()
    })
    .await
    .unwrap()
}

async fn current(c: &mut Client, subject: &str) -> Vec<Belief> {
    c.call::<List>(&ListParams {
        subject: Some(subject.into()),
        ..Default::default()
    })
    .await
    .unwrap()
    .beliefs
}

fn values(traits: &[Trait]) -> Vec<String> {
    traits.iter().map(|t| t.value.clone()).collect()
}

async fn whoami(c: &mut Client) -> Identity {
    c.call::<IdentityGet>(&IdentityParams::default())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_new_job_and_a_move_in_ordinary_words_replace_the_old_ones() {
    let daemon = Daemon::start_with(Embedder::Minilm, &[]);
    let mut c = daemon.client().await;
    let google = say(
        &mut c,
        "Hi, my name is Alex and I work at Google as an SRE",
        "2026-03-01T10:00:00Z",
    )
    .await;
    say(&mut c, "I'm based in Berlin.", "2026-03-02T10:00:00Z").await;
    let stripe = say(
        &mut c,
        "Big news: I left Google, I now work at Stripe on payments infra",
        "2026-09-01T10:00:00Z",
    )
    .await;
    say(
        &mut c,
        "We moved to Munich in October",
        "2026-11-20T10:00:00Z",
    )
    .await;

    let me = whoami(&mut c).await;
    assert_eq!(values(&me.name), ["Alex"]);
    assert_eq!(values(&me.workplaces), ["Stripe"], "{me:#?}");
    assert_eq!(values(&me.places), ["lives in Munich"], "{me:#?}");
    assert_eq!(values(&me.roles), ["sre"], "{me:#?}");

    let found = c
        .call::<Search>(&SearchParams {
            query: "where do I work".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let rank = |id: &str| found.hits.iter().position(|h| h.memory.id == id);
    let (now, before) = (rank(&stripe.id), rank(&google.id));
    assert!(
        now.is_some() && (before.is_none() || now < before),
        "Stripe at {now:?}, Google at {before:?}"
    );

    // The history keeps the old job, closed.
    let all = c
        .call::<List>(&ListParams {
            all: true,
            subject: Some("user".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .beliefs;
    let old = all
        .iter()
        .find(|b| b.predicate == "works_at" && b.object == "Google" && !b.negated)
        .expect("Google kept in history");
    assert!(old.valid_to.is_some(), "{old:#?}");
}

#[tokio::test]
async fn a_relatives_facts_are_read_clause_by_clause_and_a_move_supersedes() {
    let daemon = Daemon::start_with(Embedder::Minilm, &[]);
    let mut c = daemon.client().await;
    say(
        &mut c,
        "My sister Maria lives in Lisbon and works as an architect",
        "2026-01-10T10:00:00Z",
    )
    .await;
    say(
        &mut c,
        "Maria moved to Porto last month for a new job",
        "2026-06-10T10:00:00Z",
    )
    .await;
    let maria = current(&mut c, "Maria").await;
    let has = |p: &str, o: &str| maria.iter().any(|b| b.predicate == p && b.object == o);
    assert!(has("lives_in", "Porto"), "{maria:#?}");
    assert!(!has("lives_in", "Lisbon"), "{maria:#?}");
    assert!(has("occupation", "architect"), "{maria:#?}");
    assert!(has("relation", "sister"), "{maria:#?}");
    let me = whoami(&mut c).await;
    assert_eq!(values(&me.relations), ["Maria (sister)"]);
}

#[tokio::test]
async fn a_new_job_said_as_a_start_replaces_the_workplace_in_whoami() {
    let daemon = Daemon::start_with(Embedder::Minilm, &[]);
    let mut c = daemon.client().await;
    say(&mut c, "I work at Acme", "2026-01-10T10:00:00Z").await;
    say(
        &mut c,
        "I just started a new job at Globex",
        "2026-02-10T10:00:00Z",
    )
    .await;
    let me = whoami(&mut c).await;
    assert_eq!(values(&me.workplaces), ["Globex"]);
    let cli = daemon.cli(&["whoami"], "");
    assert!(String::from_utf8_lossy(&cli.stdout).contains("Globex"));
}

#[tokio::test]
async fn entities_are_typed_from_context_and_a_note_label_is_no_speaker() {
    let daemon = Daemon::start_with(Embedder::Hashed, &[]);
    let mut c = daemon.client().await;
    say(
        &mut c,
        "Hi, my name is Alex and I work at Google as an SRE",
        "2026-03-01T10:00:00Z",
    )
    .await;
    say(
        &mut c,
        "I joined Stripe after talking to Dr. Chen",
        "2026-03-02T10:00:00Z",
    )
    .await;
    say(
        &mut c,
        "I moved to Lisbon with my friend Ana",
        "2026-03-03T10:00:00Z",
    )
    .await;
    say(
        &mut c,
        "Important: I am allergic to shellfish",
        "2026-03-04T10:00:00Z",
    )
    .await;

    let mut typed = Vec::new();
    for _ in 0..100 {
        typed = c
            .call::<entity::List>(&entity::ListParams::default())
            .await
            .unwrap()
            .entities;
        if typed.iter().any(|e| e.name == "Ana") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let kind = |name: &str| typed.iter().find(|e| e.name == name).map(|e| e.entity_type);
    assert_eq!(kind("Google"), Some(EntityType::Organization), "{typed:#?}");
    assert_eq!(kind("Stripe"), Some(EntityType::Organization));
    assert_eq!(kind("Alex"), Some(EntityType::Person));
    assert_eq!(kind("Dr. Chen"), Some(EntityType::Person));
    assert_eq!(kind("Lisbon"), Some(EntityType::Place));
    assert_eq!(kind("Ana"), Some(EntityType::Person));
    assert!(kind("Important").is_none(), "{typed:#?}");

    let mine = current(&mut c, "user").await;
    assert!(
        mine.iter()
            .any(|b| b.predicate == "allergic_to" && b.object == "shellfish"),
        "{mine:#?}"
    );
    assert!(current(&mut c, "Important").await.is_empty());
}

#[tokio::test]
async fn an_update_closes_the_old_versions_beliefs_and_get_shows_the_chain() {
    let daemon = Daemon::start_with(Embedder::Minilm, &[]);
    let mut c = daemon.client().await;
    let m = say(&mut c, "I work at Acme", "2026-01-10T10:00:00Z").await;
    c.call::<Update>(&UpdateParams {
        id: m.id.clone(),
        content: Some("I work at Globex".into()),
        ..Default::default()
    })
    .await
    .unwrap();
    let now = current(&mut c, "user").await;
    let globex = now
        .iter()
        .find(|b| b.predicate == "works_at")
        .expect("a workplace");
    assert_eq!(globex.object, "Globex");
    let got = c
        .call::<Get>(&GetParams {
            id: globex.id.clone(),
        })
        .await
        .unwrap();
    let chain: Vec<(&str, bool)> = got
        .history
        .iter()
        .map(|b| (b.object.as_str(), b.valid_to.is_some()))
        .collect();
    assert_eq!(
        chain,
        [("Acme", true), ("Globex", false)],
        "{:#?}",
        got.history
    );
}

#[tokio::test]
async fn a_chat_turn_tells_facts_about_its_speaker_in_the_third_person() {
    let daemon = Daemon::start_with(Embedder::Minilm, &[]);
    let mut c = daemon.client().await;
    for (line, at) in [
        (
            "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
            "2023-05-08T13:56:00Z",
        ),
        ("Melanie: haha same!", "2023-05-08T13:57:00Z"),
        ("Melanie: How are you?", "2023-05-08T13:58:00Z"),
    ] {
        say(&mut c, line, at).await;
    }
    let caroline = current(&mut c, "Caroline").await;
    assert!(
        caroline
            .iter()
            .any(|b| b.statement == "Caroline went to a LGBTQ support group on 7 May 2023"),
        "{caroline:#?}"
    );
    assert!(current(&mut c, "Melanie").await.is_empty());
    let all = c
        .call::<List>(&ListParams::default())
        .await
        .unwrap()
        .beliefs;
    assert!(
        all.iter()
            .all(|b| !b.statement.contains(" my ") && !b.statement.contains(" I ")),
        "{all:#?}"
    );
}

/// Four indentation preferences in different words, each contradicting the one before: one
/// stays current (the newest), the rest are closed or marked as contradicted, never four
/// current truths; and a context package carries the current one alone.
#[tokio::test]
async fn contradictory_preferences_in_other_words_leave_one_current() {
    use mnemo_protocol::context::{Build, BuildParams};
    let daemon = Daemon::start_with(Embedder::Minilm, &[]);
    let mut c = daemon.client().await;
    for (i, line) in [
        "I prefer tabs for indentation.",
        "Please indent my code with 2 spaces.",
        "I like 4-space indentation better.",
        "I've switched back to tabs for indenting.",
    ]
    .iter()
    .enumerate()
    {
        say(&mut c, line, &format!("2026-0{}-01T10:00:00Z", i + 1)).await;
    }
    let prefs: Vec<Belief> = c
        .call::<PreferenceList>(&PreferenceListParams::default())
        .await
        .unwrap()
        .beliefs
        .into_iter()
        .filter(|b| b.object.contains("tab") || b.object.contains("space"))
        .collect();
    let standing: Vec<&Belief> = prefs
        .iter()
        .filter(|b| b.valid_to.is_none() && b.contradicts.is_empty())
        .collect();
    assert_eq!(standing.len(), 1, "{prefs:#?}");
    assert!(standing[0].object.contains("tabs"), "{prefs:#?}");

    let package = c
        .call::<Build>(&BuildParams {
            query: Some("how should I format this code?".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    // The core tier carries beliefs; the retrieved tier may quote the memories themselves.
    let core: Vec<String> = package
        .tiers
        .iter()
        .filter(|t| t.tier == mnemo_protocol::context::Tier::Core)
        .flat_map(|t| t.items.iter().map(|i| i.text.to_lowercase()))
        .collect();
    let indentation: Vec<&String> = core
        .iter()
        .filter(|t| t.contains("tab") || t.contains("space"))
        .collect();
    assert_eq!(indentation.len(), 1, "{core:#?}");
    assert!(indentation[0].contains("tabs"), "{core:#?}");
}

/// A chat between two people, imported turn by turn in one session: "you" in one speaker's
/// turn is the other, so what is said to them is read about both.
#[tokio::test]
async fn what_one_speaker_says_to_the_other_is_read_about_both() {
    let daemon = Daemon::start_with(Embedder::Minilm, &[]);
    let mut c = daemon.client().await;
    for (i, line) in [
        "Jon: Hey Gina! I lost my job, so I'm starting my own dance studio.",
        "Gina: That's a big step. Keep pushing for your dreams, and don't give up on the studio!",
        "Jon: Thanks, I'm so grateful for your support with the studio launch and the flyers.",
    ]
    .iter()
    .enumerate()
    {
        c.call::<Add>(&AddParams {
            content: line.to_string(),
            session_id: Some("chat-1".into()),
            occurred_at: Some(format!("2026-05-01T10:0{i}:00Z")),
            ..Default::default()
        })
        .await
        .unwrap();
    }
    let statements = |beliefs: Vec<Belief>| -> Vec<String> {
        beliefs.into_iter().map(|b| b.statement).collect()
    };
    let gina = statements(current(&mut c, "Gina").await);
    assert!(
        gina.iter()
            .any(|s| s.starts_with("Gina encourages Jon to keep pushing for Jon's dreams")),
        "{gina:#?}"
    );
    let jon = statements(current(&mut c, "Jon").await);
    assert!(
        jon.iter()
            .any(|s| s.contains("grateful for Gina's support")),
        "{jon:#?}"
    );
    assert!(
        gina.iter().chain(&jon).all(|s| !s.contains(" you")),
        "{gina:#?} {jon:#?}"
    );
}
