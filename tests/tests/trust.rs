//! Another local user can neither take the daemon's socket nor read its files.
#![cfg(unix)]

use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use mnemo_tests::{entries_under, workspace_bin, Daemon};

const SQUATTER: &str = "mnemo-squatter";

/// A second local user (uid, gid) for the tests that need one: created when running as
/// root. Otherwise `None`, and the test says it did not run.
fn other_user(test: &str) -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        mnemo_tests::cannot_run(
            test,
            "it needs a second uid, and only root can create one here",
        );
        return None;
    }
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, SQUATTER]).output().ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    if id("-u").is_none() {
        // Another test may create it meanwhile; `id` below is the judge.
        let _ = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
            ])
            .arg(SQUATTER)
            .status();
    }
    Some((
        id("-u").expect("squatter uid"),
        id("-g").expect("squatter gid"),
    ))
}

/// Starting mnemod with its socket in `dir`: what it printed, after it refused.
fn refused_start(daemon: &Daemon, dir: &Path) -> String {
    let out = daemon
        .command()
        .arg("--socket")
        .arg(dir.join("mnemod.sock"))
        .arg("--data-dir")
        .arg(daemon.home.path().join("other-data"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "mnemod started: {stderr}");
    assert!(stderr.contains("refusing the socket directory"), "{stderr}");
    assert!(!dir.join("mnemod.sock").exists(), "{stderr}");
    stderr
}

#[test]
fn a_socket_directory_that_is_a_symlink_is_refused() {
    let daemon = Daemon::start();
    let real = daemon.home.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).unwrap();
    let link = daemon.home.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let stderr = refused_start(&daemon, &link);
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert!(!real.join("mnemod.sock").exists());
}

#[test]
fn a_socket_directory_open_to_others_is_refused() {
    let daemon = Daemon::start();
    let open = daemon.home.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let stderr = refused_start(&daemon, &open);
    assert!(stderr.contains("mode 777"), "{stderr}");
}

#[test]
fn a_socket_directory_someone_else_owns_is_refused() {
    let Some((uid, gid)) = other_user("a_socket_directory_someone_else_owns_is_refused") else {
        return;
    };
    let daemon = Daemon::start();
    let squatted = daemon.home.path().join("squatted");
    std::fs::create_dir(&squatted).unwrap();
    std::os::unix::fs::chown(&squatted, Some(uid), Some(gid)).unwrap();
    std::fs::set_permissions(&squatted, std::fs::Permissions::from_mode(0o700)).unwrap();
    let stderr = refused_start(&daemon, &squatted);
    assert!(
        stderr.contains(&format!("belongs to uid {uid}")),
        "{stderr}"
    );
}

/// The daemon creates a missing socket directory for its user alone.
#[test]
fn a_new_socket_directory_is_private() {
    let daemon = Daemon::start();
    let dir = daemon.socket.parent().unwrap();
    let meta = std::fs::symlink_metadata(dir).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o700);
}

/// A client run by one user, finding a socket another user serves, sends it nothing.
#[test]
fn the_client_sends_nothing_to_a_socket_another_user_serves() {
    let Some((uid, gid)) = other_user("the_client_sends_nothing_to_a_socket_another_user_serves")
    else {
        return;
    };
    // Here the "attacker" is this (root) process and the client runs as the other user; the
    // check is the same either way: the uid answering is not the client's.
    let home = tempfile::tempdir().unwrap();
    let shared = home.path();
    std::fs::set_permissions(shared, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mnemo = shared.join("mnemo");
    std::fs::copy(workspace_bin("mnemo"), &mnemo).unwrap();
    let run = shared.join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o777)).unwrap();
    let socket = run.join("mnemod.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o777)).unwrap();
    let received = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut got = Vec::new();
        let _ = conn.read_to_end(&mut got);
        got
    });
    let out = Command::new("setpriv")
        .args([
            format!("--reuid={uid}"),
            format!("--regid={gid}"),
            "--clear-groups".into(),
        ])
        .arg(&mnemo)
        .arg("--socket")
        .arg(&socket)
        .args(["add", "victim secret zq7-untold"])
        .env("HOME", shared)
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("refusing to talk to"), "{stderr}");
    assert!(stderr.contains("uid 0"), "{stderr}");
    let got = received.join().unwrap();
    assert!(
        got.is_empty(),
        "the client sent {} bytes: {}",
        got.len(),
        String::from_utf8_lossy(&got)
    );
}

/// Every directory and file under `dir` that others could enter or read.
fn open_to_others(dir: &Path) -> Vec<String> {
    entries_under(dir)
        .into_iter()
        .filter(|(_, meta)| meta.mode() & 0o077 != 0 && !meta.file_type().is_symlink())
        .map(|(path, meta)| format!("{} {:o}", path.display(), meta.mode() & 0o777))
        .collect()
}

#[tokio::test]
async fn the_database_is_readable_by_its_user_alone() {
    let daemon = Daemon::start();
    let out = daemon.cli(&["add", "a private thought about zq7-untold"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta = std::fs::metadata(&daemon.data_dir).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o700);
    let open = open_to_others(&daemon.data_dir);
    assert!(open.is_empty(), "open to others: {open:#?}");
}

/// `mnemo doctor` warns about the data dir, naming `what`.
fn doctor_warns_of(daemon: &Daemon, what: &str) {
    let (data_check, _) = daemon.doctor_check("data dir");
    assert_eq!(data_check["verdict"], "warn", "{data_check}");
    let detail = data_check["detail"].as_str().unwrap_or_default();
    assert!(detail.contains(what), "{data_check}");
}

#[test]
fn an_open_data_dir_is_narrowed_at_start_and_doctor_says_so() {
    let mut daemon = Daemon::start();
    let open = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(&daemon.data_dir, open.clone()).unwrap();
    doctor_warns_of(&daemon, "open to other users (mode 755)");
    // A file in a private data dir that others may read is named too.
    std::fs::set_permissions(&daemon.data_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let leaked = daemon.data_dir.join("copied-by-hand.txt");
    std::fs::write(&leaked, "x").unwrap();
    std::fs::set_permissions(&leaked, std::fs::Permissions::from_mode(0o644)).unwrap();
    doctor_warns_of(&daemon, "copied-by-hand.txt");
    std::fs::remove_file(&leaked).unwrap();
    std::fs::set_permissions(&daemon.data_dir, open).unwrap();
    daemon.stop();
    daemon.restart();
    let meta = std::fs::metadata(&daemon.data_dir).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o700);
    assert!(
        daemon.log_text().contains("narrowed it to 700"),
        "{}",
        daemon.log_text()
    );
}
