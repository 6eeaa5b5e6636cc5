//! Recall needs no writable disk: with the database read-only or the disk full, searches
//! still answer, writes fail with a clear storage error, and status says why.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Command;

use mnemo_client::{Client, ClientError};
use mnemo_protocol::daemon::{ComponentHealth, ComponentState, Status};
use mnemo_protocol::memory::{Add, AddParams, List, ListParams, Search, SearchMode, SearchParams};
use mnemo_protocol::NoParams;
use mnemo_tests::Daemon;

fn root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

async fn add(c: &mut Client, content: &str) -> Result<String, ClientError> {
    c.call::<Add>(&AddParams {
        content: content.into(),
        ..Default::default()
    })
    .await
    .map(|m| m.id)
}

/// The ids each search mode finds for `query`.
async fn found_by_every_mode(c: &mut Client, query: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for mode in [SearchMode::Hybrid, SearchMode::Vector, SearchMode::Text] {
        let result = c
            .call::<Search>(&SearchParams {
                query: query.into(),
                k: Some(5),
                mode,
                ..Default::default()
            })
            .await
            .unwrap_or_else(|e| panic!("{mode:?} search failed: {e}"));
        found.push(result.hits.into_iter().map(|h| h.memory.id).collect());
    }
    found
}

async fn store_state(c: &mut Client) -> ComponentState {
    let status = c.call::<Status>(&NoParams {}).await.unwrap();
    status
        .components
        .into_iter()
        .find(|s| s.name == "store")
        .expect("a store component")
}

/// A write refused for the disk: a storage error (-32004) that names no source file.
fn assert_storage_error(result: Result<String, ClientError>) {
    match result {
        Err(ClientError::Rpc(e)) => {
            assert_eq!(e.code, -32004, "{}", e.message);
            assert!(!e.message.contains(".rs:"), "{}", e.message);
        }
        other => panic!("expected a storage error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_read_only_database_still_answers_searches() {
    // Root writes through permissions; only without its capabilities can it be kept out.
    let setpriv = Command::new("setpriv").arg("--version").output().is_ok();
    assert!(
        !root() || setpriv,
        "as root this test needs setpriv (util-linux; packaging/deps.sh --test installs it)"
    );
    let mut daemon = Daemon::start();
    let mut c = daemon.client().await;
    let token = format!("quokka{}", std::process::id());
    let id = add(&mut c, &format!("the {token} lives on Rottnest island"))
        .await
        .unwrap();
    add(&mut c, "tea with lemon in the afternoon")
        .await
        .unwrap();
    drop(c);
    daemon.stop();

    let db = daemon.data_dir.join("db");
    let chmod = |mode: &str| {
        let ok = Command::new("chmod").args(["-R", mode]).arg(&db).status();
        assert!(ok.unwrap().success());
    };
    chmod("a-w");
    if root() {
        daemon.set_launcher(&["setpriv", "--bounding-set=-all"]);
    }
    daemon.restart();
    let mut c = daemon.client().await;
    for ids in found_by_every_mode(&mut c, &token).await {
        assert_eq!(ids.first(), Some(&id), "{ids:?}");
    }
    let listed = c.call::<List>(&ListParams::default()).await.unwrap();
    assert_eq!(listed.memories.len(), 2);
    let store = store_state(&mut c).await;
    assert_eq!(store.state, ComponentHealth::Degraded, "{}", store.detail);
    assert!(store.detail.contains("read-only"), "{}", store.detail);
    assert_storage_error(add(&mut c, "a new thought").await);
    drop(c);
    daemon.stop();
    chmod("u+w");
}

/// A tmpfs of its own, unmounted when dropped.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(at: &Path, megabytes: u32) -> Option<Self> {
        std::fs::create_dir_all(at).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o"])
            .arg(format!("size={megabytes}m,mode=0700"))
            .arg("tmpfs")
            .arg(at)
            .status()
            .ok()?;
        status.success().then(|| Self(at.to_path_buf()))
    }

    /// Writes until the disk is full; returns the file that holds the space.
    fn fill(&self) -> PathBuf {
        use std::io::Write;
        let path = self.0.join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let block = vec![7u8; 1 << 20];
        while file.write_all(&block).is_ok() {}
        let _ = file.sync_all();
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[tokio::test]
async fn a_full_disk_still_answers_searches_and_recovers_without_a_restart() {
    if !root() {
        mnemo_tests::cannot_run("a_full_disk_…", "mounting a small disk needs root");
        return;
    }
    let mut daemon = Daemon::start();
    daemon.stop();
    let Some(disk) = SmallDisk::mount(&daemon.data_dir, 256) else {
        mnemo_tests::cannot_run("a_full_disk_…", "mounting a tmpfs was refused here");
        return;
    };
    daemon.restart();
    let mut c = daemon.client().await;
    let token = format!("axolotl{}", std::process::id());
    let id = add(&mut c, &format!("the {token} smiles in its tank"))
        .await
        .unwrap();
    assert_eq!(store_state(&mut c).await.state, ComponentHealth::Ok);

    let filler = disk.fill();
    for ids in found_by_every_mode(&mut c, &token).await {
        assert_eq!(ids.first(), Some(&id), "{ids:?}");
    }
    let store = store_state(&mut c).await;
    assert_eq!(store.state, ComponentHealth::Degraded, "{}", store.detail);
    assert!(store.detail.contains("disk is full"), "{}", store.detail);
    assert_storage_error(add(&mut c, "one more axolotl fact").await);

    std::fs::remove_file(filler).unwrap();
    let later = add(&mut c, "axolotls regrow their limbs").await.unwrap();
    assert_eq!(store_state(&mut c).await.state, ComponentHealth::Ok);
    let found = found_by_every_mode(&mut c, "axolotls regrow limbs").await;
    assert!(found.iter().all(|ids| ids.contains(&later)), "{found:?}");
    drop(c);
    daemon.stop();
    drop(disk);
}
