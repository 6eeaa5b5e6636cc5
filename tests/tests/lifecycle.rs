//! Start-up, readiness, shutdown and the socket's safety rules, on the real binary.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use mnemo_protocol::daemon::{Hello, HelloParams, Shutdown, Status};
use mnemo_protocol::{NoParams, PROTOCOL_VERSION};
use mnemo_tests::{workspace_bin, Daemon};

#[tokio::test]
async fn hello_and_status_describe_the_daemon() {
    let daemon = Daemon::start();
    let mut client = daemon.client().await;
    let hello = client
        .call::<Hello>(&HelloParams {
            client: Some("test".into()),
            protocol_version: Some(PROTOCOL_VERSION),
        })
        .await
        .unwrap();
    assert_eq!(hello.name, "mnemod");
    assert_eq!(hello.protocol_version, PROTOCOL_VERSION);
    for method in [
        "daemon.hello",
        "daemon.status",
        "daemon.shutdown",
        "daemon.encrypt",
        "memory.add",
        "memory.search",
    ] {
        assert!(
            hello.capabilities.iter().any(|c| c == method),
            "{method} missing from {:?}",
            hello.capabilities
        );
    }
    let status = client.call::<Status>(&NoParams {}).await.unwrap();
    assert_eq!(status.pid, daemon.pid());
    assert_eq!(status.socket, daemon.socket.display().to_string());
    assert_eq!(status.data_dir, daemon.data_dir.display().to_string());
    // The hashed embedder was chosen: reported as degraded, with the reason.
    let embedder = status
        .components
        .iter()
        .find(|c| c.name == "embedder")
        .unwrap();
    assert!(
        status.degraded() && embedder.detail.contains("hashed"),
        "{embedder:?}"
    );
    assert!(status.queues.connections >= 1);
    // The build it runs and, on Linux, its memory split into allocated and mapped code, and
    // of the allocated the parts mnemod can name.
    assert!(
        ["debug", "release"].contains(&status.build.as_str()),
        "{}",
        status.build
    );
    if cfg!(target_os = "linux") {
        let m = status.memory.expect("Linux reports mnemod's memory");
        assert!(m.anon_bytes > 0 && m.file_bytes > 0, "{m:?}");
        assert!(
            m.anon_bytes + m.file_bytes <= m.rss_bytes + (1 << 20),
            "{m:?}"
        );
        // Of the allocated, what it holds for searches and in LanceDB's caches.
        let caches = m
            .lance_cache_bytes
            .expect("mnemod reports LanceDB's caches");
        assert!(m.held_bytes.unwrap_or(0) + caches < m.anon_bytes, "{m:?}");
    }
}

#[tokio::test]
async fn a_client_speaking_another_protocol_is_told_so() {
    let daemon = Daemon::start();
    let err = daemon
        .client()
        .await
        .call::<Hello>(&HelloParams {
            client: None,
            protocol_version: Some(PROTOCOL_VERSION + 1),
        })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("protocol"), "{err}");
}

fn assert_clean_exit(daemon: &mut Daemon, how: &str) {
    let status = daemon
        .wait_exit(Duration::from_secs(2))
        .unwrap_or_else(|| panic!("still running 2 s after {how}"));
    assert!(
        status.success(),
        "{how}: exit {status}\n{}",
        daemon.log_text()
    );
    assert!(!daemon.socket.exists(), "{how}: socket left behind");
}

#[test]
fn sigterm_and_sigint_stop_it_cleanly() {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let mut daemon = Daemon::start();
        daemon.signal(signal);
        assert_clean_exit(&mut daemon, &format!("signal {signal}"));
    }
}

#[tokio::test]
async fn shutdown_method_answers_then_stops() {
    let mut daemon = Daemon::start();
    let reply = daemon
        .client()
        .await
        .call::<Shutdown>(&NoParams {})
        .await
        .unwrap();
    assert!(reply.stopping);
    assert_clean_exit(&mut daemon, "daemon.shutdown");
}

#[test]
fn stale_socket_from_a_crash_is_replaced() {
    let mut daemon = Daemon::start();
    daemon.crash();
    assert!(
        daemon.socket.exists(),
        "a SIGKILLed daemon leaves its socket"
    );
    daemon.restart(); // waits until the new daemon answers on the same path
}

#[test]
fn second_daemon_on_the_same_data_dir_is_refused() {
    let daemon = Daemon::start();
    let other_socket = daemon.home.path().join("other.sock");
    let out = daemon
        .command()
        .arg("--socket")
        .arg(&other_socket)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("pid {}", daemon.pid())),
        "{stderr}"
    );
    assert!(!other_socket.exists());
}

#[test]
fn second_daemon_on_the_same_socket_is_refused() {
    let daemon = Daemon::start();
    let out = daemon
        .command()
        .arg("--data-dir")
        .arg(daemon.home.path().join("other-data"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("already listening"), "{stderr}");
}

#[test]
fn socket_is_0600_in_a_0700_directory() {
    let daemon = Daemon::start();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&daemon.socket), 0o600);
    assert_eq!(mode(daemon.socket.parent().unwrap()), 0o700);
}

#[test]
fn ready_fd_is_written_once_the_socket_accepts() {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let daemon = Daemon::start();
    let (mut read, write) = std::io::pipe().unwrap();
    let socket = daemon.home.path().join("ready.sock");
    let mut cmd = daemon.command();
    cmd.arg("--data-dir")
        .arg(daemon.home.path().join("ready-data"))
        .arg("--socket")
        .arg(&socket);
    let fd = write.as_raw_fd();
    cmd.arg("--ready-fd").arg(fd.to_string());
    // SAFETY: fcntl is async-signal-safe; it makes only the child inherit the write end.
    unsafe {
        cmd.pre_exec(move || {
            libc::fcntl(fd, libc::F_SETFD, 0);
            Ok(())
        });
    }
    let log = daemon.home.path().join("ready.log");
    let mut child = cmd
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    drop(write);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut read, &mut text);
        let _ = tx.send(text);
    });
    let text = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("no readiness within 60 s");
    assert_eq!(
        text,
        "READY=1\n",
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    assert!(socket.exists(), "ready before the socket exists");
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "{status}: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
}

#[test]
fn unknown_config_key_is_named_with_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "max_frame_byte = 10\n").unwrap();
    let out = std::process::Command::new(workspace_bin("mnemod"))
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("max_frame_byte") && stderr.contains(&config.display().to_string()),
        "{stderr}"
    );
}

#[test]
fn cli_without_a_daemon_says_how_to_start_it() {
    let dir = tempfile::tempdir().unwrap();
    for args in [&["status"][..], &["ping"], &["--json", "status"]] {
        let out = std::process::Command::new(workspace_bin("mnemo"))
            .args(args)
            .arg("--socket")
            .arg(dir.path().join("none.sock"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(69), "not running: {args:?}");
        let text = String::from_utf8_lossy(&out.stderr).to_string()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("not running") && text.contains("mnemod"),
            "{text}"
        );
        assert!(
            !text.contains("panicked") && !text.contains("backtrace"),
            "{text}"
        );
    }
}

#[test]
fn cli_status_ping_and_shutdown_work() {
    let mut daemon = Daemon::start();
    let mnemo = |args: &[&str]| {
        let out = daemon.cli(args, "");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let status: serde_json::Value = serde_json::from_str(&mnemo(&["status", "--json"])).unwrap();
    assert_eq!(status["pid"], daemon.pid());
    assert!(mnemo(&["status"]).contains("DEGRADED"));
    assert!(mnemo(&["ping"]).contains("answered in"));
    assert!(mnemo(&["completions", "bash"]).contains("mnemo"));
    mnemo(&["shutdown"]);
    assert!(daemon.wait_exit(Duration::from_secs(2)).unwrap().success());
}

/// `mnemo status | head -0`: the reader is gone before mnemo writes; it ends quietly, killed by
/// SIGPIPE as any Unix tool is, with no panic or backtrace.
#[test]
fn a_closed_pipe_ends_the_cli_quietly() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    let daemon = Daemon::start();
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = Command::new(workspace_bin("mnemo"))
        .args(["status", "--socket"])
        .arg(&daemon.socket)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("run mnemo");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGPIPE),
        "{:?}: {stderr}",
        out.status
    );
}

/// Clients busy at SIGTERM get an answer to everything they sent — a result, or "shutting
/// down" (-32006) for what arrived after — and then a clean end, never a reset.
#[test]
fn clients_busy_at_sigterm_are_answered_not_reset() {
    use std::io::{BufRead, BufReader, Write};
    let mut daemon = Daemon::start();
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let mut stream = std::os::unix::net::UnixStream::connect(&daemon.socket).unwrap();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                for id in 0.. {
                    let request = format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"method":"memory.list","params":{{"limit":1}}}}"#
                    );
                    if let Err(e) = writeln!(stream, "{request}") {
                        return format!("write failed: {e}");
                    }
                    let mut line = String::new();
                    match reader.read_line(&mut line) {
                        Ok(0) => return "closed".to_string(),
                        Err(e) => return format!("read failed: {e}"),
                        Ok(_) => {}
                    }
                    let reply: serde_json::Value = serde_json::from_str(&line).unwrap();
                    assert_eq!(reply["id"], id, "{reply}");
                    if let Some(code) = reply["error"]["code"].as_i64() {
                        return format!("error {code}");
                    }
                }
                unreachable!()
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    daemon.signal(libc::SIGTERM);
    let ends: Vec<String> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    assert!(
        ends.iter().all(|e| e == "error -32006" || e == "closed"),
        "{ends:?}"
    );
    assert!(ends.iter().any(|e| e == "error -32006"), "{ends:?}");
    assert_clean_exit(&mut daemon, "SIGTERM with busy clients");
}
