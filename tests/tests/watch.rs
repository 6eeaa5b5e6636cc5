//! A watched notes folder end to end through the real daemon: the first scan remembers what
//! is there (and leaves out what is not a note), then the memories follow each change — a
//! new file, one edited paragraph, a rename, a delete — and a restart catches up on what
//! changed while mnemod was down.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mnemo_client::Client;
use mnemo_protocol::daemon::{Status, WatchedFolder};
use mnemo_protocol::memory::*;
use mnemo_protocol::NoParams;
use mnemo_tests::{wait_for, Daemon, Embedder};

const WAIT: Duration = Duration::from_secs(30);

async fn listed(c: &mut Client, source: Option<String>) -> Vec<Memory> {
    c.call::<List>(&ListParams {
        filter: Filter {
            namespace: Some("notes".into()),
            source,
            ..Default::default()
        },
        limit: Some(1000),
        ..Default::default()
    })
    .await
    .unwrap()
    .memories
}

async fn of_note(c: &mut Client, path: &Path) -> Vec<Memory> {
    listed(c, Some(format!("file:{}", path.display()))).await
}

async fn folder_status(c: &mut Client) -> WatchedFolder {
    let status = c.call::<Status>(&NoParams {}).await.unwrap();
    status.watch.into_iter().next().expect("one watched folder")
}

/// Waits until the note at `path` holds memories with exactly these texts.
async fn wait_note(daemon: &Daemon, path: &Path, texts: &[&str]) -> Vec<Memory> {
    let mut want: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
    want.sort();
    wait_for(
        WAIT,
        &format!("{} to hold {want:?}", path.display()),
        || async {
            let mut c = daemon.client().await;
            let found = of_note(&mut c, path).await;
            let mut have: Vec<String> = found.iter().map(|m| m.content.clone()).collect();
            have.sort();
            (have == want).then_some(found)
        },
    )
    .await
}

fn config(dir: &Path) -> String {
    format!(
        "[consolidate]\nenabled = false\n\n[[watch]]\npath = \"{}\"\nnamespace = \"notes\"\ndebounce_ms = 100\n",
        dir.display()
    )
}

#[tokio::test]
async fn a_watched_folder_is_remembered_and_its_memories_follow_every_change() {
    let notes = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root: PathBuf = notes.path().canonicalize().unwrap();
    let a = root.join("plans.md");
    std::fs::write(
        &a,
        "---\ntags: [life]\n---\n# Plans\nShip the parser on Friday.\n\nCall Maria about the trip.\n",
    )
    .unwrap();
    std::fs::write(root.join("photo.md"), b"\x89PNG\0\0binary").unwrap();
    std::fs::write(outside.path().join("secret.md"), "Not in the folder.\n").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.md"), root.join("link.md")).unwrap();

    let mut daemon = Daemon::start_configured(Embedder::Hashed, &config(&root), &[]);
    let mut c = daemon.client().await;
    let first = wait_note(
        &daemon,
        &a,
        &["Ship the parser on Friday.", "Call Maria about the trip."],
    )
    .await;
    let folder = wait_for(WAIT, "the first scan to end", || async {
        let s = folder_status(&mut daemon.client().await).await;
        (s.state == "watching").then_some(s)
    })
    .await;
    assert_eq!((folder.files, folder.memories, folder.skipped), (1, 2, 2));
    let shown = daemon.cli(&["status"], "");
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("watching: 2 memories from 1 notes, 2 files skipped"),
        "{shown}"
    );
    assert_eq!(
        listed(&mut c, None).await.len(),
        2,
        "no memory from the skipped files"
    );
    let ship = first
        .iter()
        .find(|m| m.content.starts_with("Ship"))
        .unwrap();
    assert_eq!(ship.tags, vec!["life"]);
    assert_eq!(ship.metadata["heading"], "Plans");
    assert_eq!(ship.metadata["anchor"], "plans");

    // A new note.
    let b = root.join("sub").join("shopping.md");
    std::fs::create_dir_all(b.parent().unwrap()).unwrap();
    std::fs::write(&b, "Buy oat milk. #errands\n").unwrap();
    let shopping = wait_note(&daemon, &b, &["Buy oat milk. #errands"]).await;
    assert_eq!(shopping[0].tags, vec!["errands"]);

    // One paragraph edited: that memory is superseded, the other is untouched.
    std::fs::write(
        &a,
        "---\ntags: [life]\n---\n# Plans\nShip the parser on Friday.\n\nCall Maria about the trip to Lisbon.\n",
    )
    .unwrap();
    let edited = wait_note(
        &daemon,
        &a,
        &[
            "Ship the parser on Friday.",
            "Call Maria about the trip to Lisbon.",
        ],
    )
    .await;
    let kept = edited
        .iter()
        .find(|m| m.content.starts_with("Ship"))
        .unwrap();
    assert_eq!(
        kept.id, ship.id,
        "the unchanged paragraph is the same version"
    );
    let call = edited
        .iter()
        .find(|m| m.content.starts_with("Call"))
        .unwrap();
    let history = c
        .call::<History>(&HistoryParams {
            id: call.id.clone(),
        })
        .await
        .unwrap();
    let texts: Vec<&str> = history
        .versions
        .iter()
        .map(|v| v.content.as_str())
        .collect();
    assert_eq!(
        texts,
        vec![
            "Call Maria about the trip.",
            "Call Maria about the trip to Lisbon."
        ]
    );

    // Renamed: the memories move (same lineages), nothing is forgotten and added again.
    let renamed = root.join("trip-plans.md");
    std::fs::rename(&a, &renamed).unwrap();
    let moved = wait_note(
        &daemon,
        &renamed,
        &[
            "Ship the parser on Friday.",
            "Call Maria about the trip to Lisbon.",
        ],
    )
    .await;
    assert!(of_note(&mut c, &a).await.is_empty());
    let mut before: Vec<&str> = edited.iter().map(|m| m.lineage.as_str()).collect();
    let mut after: Vec<&str> = moved.iter().map(|m| m.lineage.as_str()).collect();
    before.sort();
    after.sort();
    assert_eq!(before, after);

    // Deleted: its memories are forgotten, every version.
    std::fs::remove_file(&renamed).unwrap();
    wait_note(&daemon, &renamed, &[]).await;
    let history = c
        .call::<History>(&HistoryParams {
            id: call.id.clone(),
        })
        .await;
    assert!(
        history.is_err(),
        "a deleted note's old versions are gone too"
    );
    assert_eq!(listed(&mut c, None).await.len(), 1);

    // Changed while mnemod was down: the next start's scan catches up.
    daemon.stop();
    std::fs::remove_file(&b).unwrap();
    let c_note = root.join("2024-05-01-standup.md");
    std::fs::write(&c_note, "Demoed the dashboard.\n").unwrap();
    daemon.restart();
    let standup = wait_note(&daemon, &c_note, &["Demoed the dashboard."]).await;
    assert!(standup[0]
        .occurred_at
        .as_deref()
        .is_some_and(|t| t.starts_with("2024-05-01")));
    wait_note(&daemon, &b, &[]).await;
}

#[tokio::test]
async fn a_missing_folder_is_reported_not_fatal() {
    let home = tempfile::tempdir().unwrap();
    let missing = home.path().join("not-yet");
    let daemon = Daemon::start_configured(Embedder::Hashed, &config(&missing), &[]);
    let mut c = daemon.client().await;
    let folder = wait_for(WAIT, "the folder to be reported", || async {
        let s = folder_status(&mut daemon.client().await).await;
        (s.state == "failed").then_some(s)
    })
    .await;
    assert!(folder.error.unwrap().contains("not-yet"));
    // `mnemo doctor` names it too.
    let (watch, report) = daemon.doctor_check("watch");
    assert_eq!(watch["verdict"], "fail", "{report}");
    assert!(
        watch["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("not-yet"),
        "{watch}"
    );
    // mnemod serves on.
    c.call::<Add>(&AddParams {
        content: "still here".into(),
        ..Default::default()
    })
    .await
    .unwrap();
}

/// A named pipe in the folder (at the first scan and made while watching) and a template
/// note whose `date:` is a placeholder: mnemod keeps answering, the template is read without
/// its date, and a note written after them is still taken in.
#[tokio::test]
async fn a_pipe_or_a_template_note_cannot_stop_the_watch() {
    let notes = tempfile::tempdir().unwrap();
    let root: PathBuf = notes.path().canonicalize().unwrap();
    let mkfifo = |path: &Path| {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("mkfifo runs");
        assert!(status.success());
    };
    mkfifo(&root.join("early.md"));
    let template = root.join("daily.md");
    std::fs::write(
        &template,
        "---\ndate: \"{{date}}\"\n---\nWater the plants.\n",
    )
    .unwrap();

    let daemon = Daemon::start_configured(Embedder::Hashed, &config(&root), &[]);
    let from_template = wait_note(&daemon, &template, &["Water the plants."]).await;
    assert!(from_template[0].occurred_at.is_none(), "{from_template:?}");
    mkfifo(&root.join("late.md"));
    let after = root.join("after.md");
    std::fs::write(&after, "Book the dentist.\n").unwrap();
    wait_note(&daemon, &after, &["Book the dentist."]).await;
    let mut c = daemon.client().await;
    let folder = folder_status(&mut c).await;
    assert_eq!(folder.state, "watching", "{folder:?}");
    assert!(folder.error.is_none(), "{folder:?}");
}

/// A folder emptied while mnemod was down (a drive not mounted leaves its mount point empty),
/// or deleted while watched, pauses: its memories are kept, status and doctor say why, and
/// watching resumes by itself once the folder is back; a recreated folder is watched again.
#[tokio::test]
async fn a_folder_that_is_away_pauses_and_forgets_nothing_until_it_is_back() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().canonicalize().unwrap().join("notes");
    let aside = home.path().canonicalize().unwrap().join("aside");
    std::fs::create_dir(&root).unwrap();
    std::fs::create_dir(&aside).unwrap();
    let a = root.join("trip.md");
    std::fs::write(&a, "Book the ferry to Naxos.\n").unwrap();
    let mut daemon = Daemon::start_configured(Embedder::Hashed, &config(&root), &[]);
    let kept = wait_note(&daemon, &a, &["Book the ferry to Naxos."]).await;

    // Unmounted while mnemod was down: an empty mount point.
    daemon.stop();
    std::fs::rename(&a, aside.join("trip.md")).unwrap();
    daemon.restart();
    let paused = wait_for(WAIT, "the watch to pause", || async {
        let s = folder_status(&mut daemon.client().await).await;
        (s.state == "paused").then_some(s)
    })
    .await;
    assert!(paused.error.unwrap_or_default().contains("empty"));
    let (watch, report) = daemon.doctor_check("watch");
    assert_eq!(watch["verdict"], "warn", "{report}");
    let mut c = daemon.client().await;
    let still = of_note(&mut c, &a).await;
    assert_eq!(still.len(), 1, "nothing forgotten while away");
    assert_eq!(still[0].id, kept[0].id);

    // Mounted again: watching resumes, and the note is the same memory.
    std::fs::rename(aside.join("trip.md"), &a).unwrap();
    wait_for(Duration::from_secs(60), "watching to resume", || async {
        let s = folder_status(&mut daemon.client().await).await;
        (s.state == "watching").then_some(())
    })
    .await;
    assert_eq!(of_note(&mut c, &a).await[0].id, kept[0].id);

    // Deleted while watched: paused, memories kept; recreated: watched again.
    std::fs::remove_dir_all(&root).unwrap();
    wait_for(WAIT, "the watch to pause", || async {
        let s = folder_status(&mut daemon.client().await).await;
        (s.state == "paused").then_some(())
    })
    .await;
    assert_eq!(of_note(&mut c, &a).await.len(), 1, "nothing forgotten");
    std::fs::create_dir(&root).unwrap();
    let b = root.join("garden.md");
    std::fs::write(&b, "Plant the tomatoes in May.\n").unwrap();
    wait_note(&daemon, &b, &["Plant the tomatoes in May."]).await;
    // Back with other notes: the note that is gone is forgotten now.
    wait_note(&daemon, &a, &[]).await;
}
