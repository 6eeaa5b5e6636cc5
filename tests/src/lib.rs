//! End-to-end fixtures: start the real `mnemod` binary with every path in a temp dir, wait
//! until its socket answers, talk to it with the real client, and stop it on `Drop`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use mnemo_client::Client;
use mnemo_protocol::daemon::{Hello, HelloParams};
use mnemo_protocol::Method;
use tempfile::TempDir;

pub mod chat;
pub mod mcp;
mod secret_service;
pub use secret_service::SecretService;

/// Every entry under `dir` (directories too, not followed through symlinks), with its
/// metadata.
pub fn entries_under(dir: &Path) -> Vec<(PathBuf, std::fs::Metadata)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
                continue;
            };
            if meta.is_dir() {
                stack.push(entry.path());
            }
            out.push((entry.path(), meta));
        }
    }
    out
}

/// Whether any file under `dir` contains `needle`.
pub fn disk_holds(dir: &Path, needle: &[u8]) -> bool {
    entries_under(dir).iter().any(|(path, meta)| {
        meta.is_file()
            && std::fs::read(path)
                .map(|bytes| bytes.windows(needle.len()).any(|w| w == needle))
                .unwrap_or(false)
    })
}

/// A temporary directory only this user may enter, as mnemod requires of its socket's.
pub fn private_dir() -> TempDir {
    tempfile::Builder::new()
        .prefix("mnemo-e2e")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()
        .expect("temp dir")
}

/// The tests crate's directory in the checkout under test. Cargo names it to each test it
/// runs; the path built in is the checkout the binary was built in, which a target dir shared
/// between checkouts (CI's fresh clones) may hold from one since deleted.
pub fn tests_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// A test that cannot run here says so and passes, except under `CI=true`, where what it
/// needs is installed (`packaging/deps.sh --test`) and its absence fails the run.
pub fn cannot_run(test: &str, why: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test} cannot run under CI: {why}");
    }
    eprintln!("SKIPPED {test}: {why}");
}

/// A binary of this workspace, next to the test executable's `deps` directory.
pub fn workspace_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let bin = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} is missing: build it first with `cargo build --workspace --bins`",
        bin.display()
    );
    bin
}

/// Which embedder a test daemon uses. MiniLM needs the model from packaging/fetch-model.sh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Embedder {
    Minilm,
    Hashed,
}

/// Where the MiniLM model is. A test that needs it fails when it is missing, saying how to
/// fetch it (the README's test command does), rather than passing without having run.
pub fn model_dir() -> PathBuf {
    let dir = std::env::var("MNEMO_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            mnemo_protocol::paths::default_data_dir()
                .join("models")
                .join("all-MiniLM-L6-v2")
        });
    assert!(
        dir.join("model.safetensors").is_file(),
        "the MiniLM model is not in {}; run packaging/fetch-model.sh (scripts/test.sh does)",
        dir.display()
    );
    dir
}

/// Polls `check` until it gives a value or `timeout` passes (then panics with `what`).
pub async fn wait_for<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub struct Daemon {
    child: Option<Child>,
    pub home: TempDir,
    pub data_dir: PathBuf,
    pub socket: PathBuf,
    pub log: PathBuf,
    embedder: Embedder,
    extra_args: Vec<String>,
    /// A command mnemod runs under (e.g. `setpriv …`), from the next (re)start on.
    launcher: Vec<String>,
    /// The session bus mnemod sees; none by default, so no test touches the developer's
    /// own keyring.
    session_bus: Option<String>,
}

impl Daemon {
    /// A daemon with the hashed embedder: fast to start, for protocol and lifecycle tests.
    pub fn start() -> Daemon {
        Self::start_with(Embedder::Hashed, &[])
    }

    pub fn start_with(embedder: Embedder, extra_args: &[&str]) -> Daemon {
        Self::start_configured(embedder, "", extra_args)
    }

    /// With `config` as the content of its config file.
    pub fn start_configured(embedder: Embedder, config: &str, extra_args: &[&str]) -> Daemon {
        let mut daemon = Self::configured(embedder, config, extra_args);
        daemon.restart();
        daemon
    }

    /// Like `start_configured`, but not started yet: `restart` starts it.
    pub fn configured(embedder: Embedder, config: &str, extra_args: &[&str]) -> Daemon {
        let home = private_dir();
        let daemon = Daemon {
            child: None,
            data_dir: home.path().join("data"),
            socket: home.path().join("run").join("mnemod.sock"),
            log: home.path().join("mnemod.log"),
            home,
            embedder,
            extra_args: extra_args.iter().map(|s| s.to_string()).collect(),
            launcher: Vec::new(),
            session_bus: None,
        };
        std::fs::write(daemon.home.path().join("config.toml"), config).expect("config");
        daemon
    }

    /// The command that starts this daemon (for tests that start a second one by hand).
    pub fn command(&self) -> Command {
        let mut cmd = match self.launcher.split_first() {
            Some((program, args)) => {
                let mut cmd = Command::new(program);
                cmd.args(args).arg(workspace_bin("mnemod"));
                cmd
            }
            None => Command::new(workspace_bin("mnemod")),
        };
        cmd.arg("--data-dir")
            .arg(&self.data_dir)
            .arg("--socket")
            .arg(&self.socket);
        cmd.arg("--config")
            .arg(self.home.path().join("config.toml"));
        match self.embedder {
            Embedder::Hashed => {
                cmd.args(["--embedder", "hashed"]);
            }
            Embedder::Minilm => {
                cmd.args(["--embedder", "minilm"])
                    .arg("--model-dir")
                    .arg(model_dir());
            }
        }
        cmd.args(&self.extra_args);
        cmd.env_remove("MNEMO_CONFIG")
            .env_remove("NOTIFY_SOCKET")
            .env("MNEMO_LOG_LEVEL", "info");
        // Without a bus of the test's own, one that cannot answer (an unset address would
        // let libdbus find the developer's at $XDG_RUNTIME_DIR/bus).
        let bus = self
            .session_bus
            .clone()
            .unwrap_or_else(|| format!("unix:path={}", self.home.path().join("no-bus").display()));
        cmd.env("DBUS_SESSION_BUS_ADDRESS", bus);
        cmd
    }

    /// mnemod sees this session bus (a `SecretService`'s) from the next (re)start on.
    pub fn set_session_bus(&mut self, address: Option<&str>) {
        self.session_bus = address.map(str::to_string);
    }

    /// Arguments added after the embedder's on the next (re)start.
    pub fn set_extra_args(&mut self, args: &[&str]) {
        self.extra_args = args.iter().map(|s| s.to_string()).collect();
    }

    /// Runs mnemod under `launcher` (a program and its arguments) from the next (re)start on.
    pub fn set_launcher(&mut self, launcher: &[&str]) {
        self.launcher = launcher.iter().map(|s| s.to_string()).collect();
    }

    /// Starts (again) on the same data dir and socket, and waits until it answers.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "stop the daemon before restarting it");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("log");
        let child = self
            .command()
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn mnemod");
        self.child = Some(child);
        self.wait_ready();
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "mnemod exited during start-up ({status}):\n{}",
                    self.log_text()
                );
            }
            if hello_answers(&self.socket) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "mnemod not ready after 120 s:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Runs the real `mnemo` CLI against this daemon, with `stdin` piped in.
    pub fn cli(&self, args: &[&str], stdin: &str) -> std::process::Output {
        use std::io::Write;
        let mut child = Command::new(workspace_bin("mnemo"))
            .args(args)
            .arg("--socket")
            .arg(&self.socket)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mnemo");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(stdin.as_bytes())
            .expect("write stdin");
        child.wait_with_output().expect("mnemo output")
    }

    /// Moves the daemon's clock `seconds` ahead (one started with `--test-clock`), so what
    /// time does (decay, fading) is tested without sleeping.
    pub async fn advance_clock(&self, seconds: f64) {
        use mnemo_protocol::daemon::{AdvanceClock, AdvanceClockParams};
        self.client()
            .await
            .call::<AdvanceClock>(&AdvanceClockParams { seconds })
            .await
            .expect("a mnemod started with --test-clock");
    }

    /// `mnemo doctor --json` about this daemon and its data dir: the check named `name`
    /// (null when there is none), and the whole report.
    pub fn doctor_check(&self, name: &str) -> (serde_json::Value, serde_json::Value) {
        let out = Command::new(workspace_bin("mnemo"))
            .args(["doctor", "--json", "--socket"])
            .arg(&self.socket)
            .env("MNEMO_DATA_DIR", &self.data_dir)
            .env("MNEMO_EMBEDDER", "hashed")
            .env("MNEMO_CONFIG", self.home.path().join("config.toml"))
            .output()
            .expect("mnemo doctor");
        let report: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("doctor's checks as JSON");
        let check = report
            .as_array()
            .and_then(|checks| checks.iter().find(|c| c["name"] == name))
            .cloned()
            .unwrap_or_default();
        (check, report)
    }

    /// `mnemo consolidate --wait --json`: a run now, to its end.
    pub fn consolidate_now(&self) -> mnemo_protocol::consolidate::RunRecord {
        let out = self.cli(&["consolidate", "--wait", "--json"], "");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("a run record")
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    pub async fn client(&self) -> Client {
        Client::connect(&self.socket)
            .await
            .expect("connect to mnemod")
    }

    pub fn signal(&self, signal: i32) {
        // SAFETY: kill with a pid we own and a valid signal number.
        let rc = unsafe { libc::kill(self.pid() as i32, signal) };
        assert_eq!(rc, 0, "kill failed");
    }

    /// Waits for the daemon to exit on its own, up to `timeout`.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        let child = self.child.as_mut()?;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                self.child = None;
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGTERM, and waits for a clean exit.
    pub fn stop(&mut self) {
        self.signal(libc::SIGTERM);
        let status = self.wait_exit(Duration::from_secs(15));
        assert!(
            status.is_some_and(|s| s.success()),
            "mnemod did not stop cleanly: {status:?}\n{}",
            self.log_text()
        );
    }

    /// SIGKILL: a crash, with no chance to clean up.
    pub fn crash(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A blocking hello, usable from sync and async tests alike.
fn hello_answers(socket: &Path) -> bool {
    use std::io::{BufRead, BufReader, Write};
    let Ok(mut stream) = std::os::unix::net::UnixStream::connect(socket) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request = serde_json::json!({"jsonrpc": "2.0", "method": Hello::NAME, "params": HelloParams::default(), "id": 1});
    if writeln!(stream, "{request}").is_err() {
        return false;
    }
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).is_ok() && line.contains("\"result\"")
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: as in `signal`.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(5);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
