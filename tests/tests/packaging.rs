//! The packaging: the systemd units pass `systemd-analyze verify`, socket activation and the
//! watchdog work with the real binary, the launchd plist parses, man pages come from the
//! binaries, `mnemo doctor` reports a working install, and install.sh upgrades in place.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use mnemo_tests::{workspace_bin, Daemon, Embedder};

fn repo() -> PathBuf {
    let tests = mnemo_tests::tests_dir();
    tests
        .parent()
        .expect("the workspace holds the tests crate")
        .to_path_buf()
}

fn need(tool: &str, package: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "this test needs {tool}: install {package} (scripts/test.sh does)"
    );
}

#[test]
fn systemd_units_verify() {
    need("systemd-analyze", "systemd");
    let dir = tempfile::tempdir().unwrap();
    let bin = workspace_bin("mnemod");
    let bin_dir = bin.parent().unwrap().display().to_string();
    for unit in ["mnemod.service", "mnemod.socket"] {
        let text = std::fs::read_to_string(repo().join("packaging/systemd").join(unit)).unwrap();
        std::fs::write(
            dir.path().join(unit),
            text.replace("%h/.local/bin", &bin_dir),
        )
        .unwrap();
    }
    let runtime = tempfile::tempdir().unwrap();
    let out = Command::new("systemd-analyze")
        .args(["--user", "verify", "--man=no"])
        .arg(dir.path().join("mnemod.socket"))
        .arg(dir.path().join("mnemod.service"))
        .env("XDG_RUNTIME_DIR", runtime.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.trim().is_empty(), "warnings: {stderr}");
    let service = std::fs::read_to_string(dir.path().join("mnemod.service")).unwrap();
    for line in [
        "Type=notify",
        "WatchdogSec=",
        "Restart=on-failure",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
    ] {
        assert!(service.contains(line), "{line} missing");
    }
}

#[test]
fn socket_activation_hands_mnemod_its_listener() {
    need("systemd-socket-activate", "systemd");
    let home = tempfile::tempdir().unwrap();
    let socket = home.path().join("mnemod.sock");
    let mut activator = Command::new("systemd-socket-activate")
        .arg("-l")
        .arg(&socket)
        .arg(workspace_bin("mnemod"))
        .arg("--data-dir")
        .arg(home.path().join("data"))
        .arg("--socket")
        .arg(&socket)
        .args(["--embedder", "hashed", "run"])
        .env_remove("NOTIFY_SOCKET")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The socket exists before mnemod runs; the first connection starts it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        assert!(
            Instant::now() < deadline,
            "systemd-socket-activate did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let ping = Command::new(workspace_bin("mnemo"))
        .arg("--socket")
        .arg(&socket)
        .arg("status")
        .output()
        .unwrap();
    assert!(
        ping.status.success(),
        "{}",
        String::from_utf8_lossy(&ping.stderr)
    );
    let _ = Command::new(workspace_bin("mnemo"))
        .arg("--socket")
        .arg(&socket)
        .arg("shutdown")
        .output();
    let _ = activator.kill();
    let _ = activator.wait();
}

#[cfg(target_os = "linux")]
#[test]
fn mnemod_pings_the_systemd_watchdog() {
    use std::os::unix::net::UnixDatagram;
    let home = mnemo_tests::private_dir();
    let notify = home.path().join("notify.sock");
    let listener = UnixDatagram::bind(&notify).unwrap();
    listener
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut child = Command::new(workspace_bin("mnemod"))
        .arg("--data-dir")
        .arg(home.path().join("data"))
        .arg("--socket")
        .arg(home.path().join("mnemod.sock"))
        .args(["--embedder", "hashed", "run"])
        .env("NOTIFY_SOCKET", &notify)
        .env("WATCHDOG_USEC", "400000")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while seen
        .iter()
        .filter(|m: &&String| m.as_str() == "WATCHDOG=1")
        .count()
        < 2
    {
        let n = listener.recv(&mut buf).expect("a notification within 20 s");
        seen.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    assert!(seen.iter().any(|m| m == "READY=1"), "{seen:?}");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(child.wait().unwrap().success());
}

#[test]
fn launchd_plist_parses_with_the_keys_launchd_needs() {
    need("python3", "python3");
    let plist = repo().join("packaging/launchd/io.mnemo.mnemod.plist");
    let script = r#"
import plistlib, sys
p = plistlib.load(open(sys.argv[1], 'rb'))
assert p['Label'] == 'io.mnemo.mnemod', p
assert p['RunAtLoad'] is True
assert p['KeepAlive'] == {'SuccessfulExit': False}
assert p['ProgramArguments'][1] == 'run'
assert 'Library/Logs/mnemo' in p['StandardOutPath']
print('ok')
"#;
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(plist)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_binary_prints_its_man_page() {
    for bin in ["mnemod", "mnemo", "mnemo-top"] {
        let out = Command::new(workspace_bin(bin))
            .arg("--generate-man")
            .output()
            .unwrap();
        assert!(out.status.success());
        let page = String::from_utf8_lossy(&out.stdout);
        assert!(page.contains(&format!(".TH {bin} 1")), "{bin}: {page}");
        // Its commands are on the page itself: it refers to no page that is not shipped.
        assert!(!page.contains("(1)"), "{bin}: {page}");
        // NAME says what the program is, as `-h` does; not what its crate holds.
        let help = Command::new(workspace_bin(bin)).arg("-h").output().unwrap();
        let help = String::from_utf8_lossy(&help.stdout);
        let first = help.lines().next().unwrap_or_default();
        assert!(first.starts_with(&format!("{bin}: ")), "{bin} -h: {first}");
        assert!(!first.contains("protocol types"), "{bin} -h: {first}");
    }
}

#[test]
fn doctor_reports_a_working_install_and_names_fixes() {
    let daemon = Daemon::start_with(Embedder::Hashed, &[]);
    let run = |socket: &Path| {
        Command::new(workspace_bin("mnemo"))
            .args(["doctor", "--json", "--socket"])
            .arg(socket)
            .env("MNEMO_DATA_DIR", &daemon.data_dir)
            .env("MNEMO_EMBEDDER", "hashed")
            .env("MNEMO_CONFIG", daemon.home.path().join("config.toml"))
            .output()
            .unwrap()
    };
    let out = run(&daemon.socket);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let checks: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = checks
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for name in [
        "binaries",
        "config",
        "data dir",
        "model",
        "service",
        "daemon",
        "hardware/NVML",
    ] {
        assert!(names.contains(&name), "{name} not checked: {names:?}");
    }
    // Nothing at a socket: a failure that says how to start mnemod.
    let out = run(&daemon.home.path().join("nobody.sock"));
    assert!(!out.status.success());
    let checks: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let daemon_check = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "daemon")
        .unwrap();
    assert_eq!(daemon_check["verdict"], "fail");
    assert!(daemon_check["fix"].as_str().unwrap().contains("mnemod"));
}

#[test]
fn install_script_twice_upgrades_in_place_and_keeps_the_data() {
    let home = tempfile::tempdir().unwrap();
    let prefix = home.path().join("prefix");
    let socket = home.path().join("run").join("mnemod.sock");
    let bin_dir = workspace_bin("mnemod").parent().unwrap().to_path_buf();
    let install = || {
        let out = Command::new(repo().join("packaging/install.sh"))
            .arg("--prefix")
            .arg(&prefix)
            .arg("--prebuilt")
            .arg(&bin_dir)
            .arg("--no-service")
            .env("MNEMO_DATA_DIR", home.path().join("data"))
            .env("MNEMO_SOCKET", &socket)
            .env("MNEMO_EMBEDDER", "hashed")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "install.sh failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let mnemo = |args: &[&str]| {
        Command::new(prefix.join("bin/mnemo"))
            .args(args)
            .env("MNEMO_SOCKET", &socket)
            .output()
            .unwrap()
    };
    install();
    for file in [
        "bin/mnemod",
        "bin/mnemo",
        "bin/mnemo-top",
        "share/man/man1/mnemod.1",
        "share/bash-completion/completions/mnemo",
    ] {
        assert!(prefix.join(file).exists(), "{file} not installed");
    }
    let added = mnemo(&["add", "kept across an upgrade"]);
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let id = String::from_utf8_lossy(&added.stdout).trim().to_string();
    install();
    let got = mnemo(&["get", &id]);
    assert!(
        got.status.success(),
        "{}",
        String::from_utf8_lossy(&got.stderr)
    );
    assert!(String::from_utf8_lossy(&got.stdout).contains("kept across an upgrade"));
    let _ = mnemo(&["shutdown"]);
}
