//! The real `mnemo-top` in a real terminal (tmux) against a real mnemod: figures change
//! between two captures, and a search typed into it finds a memory added with the CLI.

use std::process::Command;
use std::time::{Duration, Instant};

use mnemo_tests::{workspace_bin, Daemon, Embedder};

struct Tmux {
    session: String,
}

impl Tmux {
    fn start(command: &str) -> Tmux {
        let available = Command::new("tmux").arg("-V").output();
        assert!(
            available.is_ok_and(|o| o.status.success()),
            "this test drives mnemo-top in tmux: install it (`apt-get install tmux`; scripts/test.sh does)"
        );
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let session = format!("mnemo-top-{}-{n}", std::process::id());
        let status = Command::new("tmux")
            .args([
                "new-session",
                "-d",
                "-s",
                &session,
                "-x",
                "100",
                "-y",
                "30",
                command,
            ])
            .status()
            .unwrap();
        assert!(status.success());
        Tmux { session }
    }

    fn capture(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.session])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            let status = Command::new("tmux")
                .args(["send-keys", "-t", &self.session, k])
                .status()
                .unwrap();
            assert!(status.success());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The screen once `ready` holds for it, or a failure showing the last screen.
    fn wait_for(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.capture();
            if ready(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.session])
            .status();
    }
}

/// The Machine panel's rows: CPU, RAM, swap, disk, load.
fn machine_figures(screen: &str) -> String {
    screen
        .lines()
        .filter(|l| l.contains("│CPU") || l.contains("│RAM") || l.contains("│Load"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn live_figures_change_and_a_typed_search_finds_a_cli_memory() {
    let daemon = Daemon::start_configured(
        Embedder::Hashed,
        "[hardware]\nsnapshot_interval_secs = 1\n",
        &[],
    );
    let added = daemon.cli(&["add", "Walnut trees take ten years to bear nuts"], "");
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let top = Tmux::start(&format!(
        "{} --socket {}",
        workspace_bin("mnemo-top").display(),
        daemon.socket.display()
    ));
    let first = top.wait_for("the overview with figures", |s| {
        s.contains("mnemod 0.1.0") && s.contains("│CPU") && s.contains("1 memories")
    });
    assert!(
        first.contains("no NVIDIA GPU detected") || first.contains("VRAM"),
        "{first}"
    );
    // Snapshots arrive every second: the chart and the readings move.
    let before = machine_figures(&first);
    let second = top.wait_for("the figures to change", |s| {
        machine_figures(s) != before
            || s.lines().skip(8).take(10).collect::<String>()
                != first.lines().skip(8).take(10).collect::<String>()
    });
    assert_ne!(first, second);

    top.keys(&["/", "walnut", "Enter"]);
    let results = top.wait_for("search results", |s| s.contains("results for “walnut”"));
    assert!(
        results.contains("Walnut trees take ten years to bear nuts"),
        "{results}"
    );
    assert!(results.contains("relevance"), "score parts: {results}");

    // Enter opens the memory with its history; Esc closes it; q quits.
    top.keys(&["Enter"]);
    top.wait_for("the detail view", |s| s.contains("History (1 versions)"));
    top.keys(&["Escape"]);
    top.keys(&["q"]);
}

#[test]
fn a_missing_daemon_is_explained_and_found_when_it_starts() {
    let mut daemon = Daemon::start();
    let socket = daemon.socket.clone();
    daemon.signal(libc::SIGTERM);
    daemon
        .wait_exit(Duration::from_secs(10))
        .expect("mnemod stops");
    let top = Tmux::start(&format!(
        "{} --socket {}",
        workspace_bin("mnemo-top").display(),
        socket.display()
    ));
    let down = top.wait_for("the disconnected screen", |s| {
        s.contains("mnemod is not running")
    });
    assert!(down.contains("systemctl --user start mnemod"), "{down}");
    daemon.restart();
    top.wait_for("the reconnection", |s| {
        s.contains("mnemod 0.1.0") && s.contains("│CPU")
    });
}

/// Run where there is no terminal (a pipe, a service), it says so and fails, never panics.
#[test]
fn without_a_terminal_it_says_so() {
    let out = Command::new(workspace_bin("mnemo-top"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("mnemo-top runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("draws in a terminal"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
