//! Finding mnemo's other binaries, and starting mnemod for a client that needs it running
//! (`mnemo mcp`, which an MCP client launches on its own schedule).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mnemo_client::{Client, ClientError};
use mnemo_protocol::paths;

/// How long a freshly started mnemod may take to answer on its socket (opening a large store
/// takes a few seconds; the model loads after the socket answers).
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A sibling binary (installed together) or one on PATH.
pub fn find_bin(name: &str) -> Option<PathBuf> {
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    let beside = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(&file)))
        .filter(|p| p.exists());
    beside.or_else(|| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(&file))
                .find(|p| p.exists())
        })
    })
}

/// Whether this process points mnemo somewhere of its own (a socket, data dir or config the
/// environment names); then the user's service, which serves the defaults, is not the one to
/// start.
fn custom_paths(socket: &Path) -> bool {
    ["MNEMO_SOCKET", "MNEMO_DATA_DIR", "MNEMO_CONFIG"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
        || socket != paths::default_socket_path()
}

/// Starts mnemod for `socket` and waits until it answers there: through the systemd user
/// service when the paths are the defaults and the unit exists, else by running the `mnemod`
/// binary detached (its log goes to `mnemod.log` in the data dir). Says how, or why not.
pub async fn start_daemon(socket: &Path) -> Result<String, String> {
    if !custom_paths(socket) && systemd_start() {
        wait_for_socket(socket, None).await?;
        return Ok("started the mnemod user service (systemctl --user start mnemod)".into());
    }
    let mnemod = find_bin("mnemod").ok_or_else(|| {
        "the mnemod binary is not beside mnemo or on PATH; install mnemo again \
         (packaging/install.sh)"
            .to_string()
    })?;
    let data_dir = std::env::var_os("MNEMO_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(paths::default_data_dir);
    crate::private::dir(&data_dir)
        .map_err(|e| format!("cannot create {}: {e}", data_dir.display()))?;
    // The log may quote what the store holds: 0600, as every file of the data dir.
    let log_path = data_dir.join("mnemod.log");
    let log = crate::private::options()
        .create(true)
        .append(true)
        .open(&log_path)
        .and_then(|f| crate::private::owner_only(&f).map(|()| f))
        .map_err(|e| format!("cannot open {}: {e}", log_path.display()))?;
    let mut cmd = Command::new(&mnemod);
    cmd.arg("--socket")
        .arg(socket)
        // Never the caller's stdout: for `mnemo mcp` it carries the protocol.
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    // Its own process group, so the signal that ends the client does not end the daemon.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", mnemod.display()))?;
    wait_for_socket(socket, Some((child, &log_path))).await?;
    Ok(format!(
        "started {} (log: {})",
        mnemod.display(),
        log_path.display()
    ))
}

fn systemd_start() -> bool {
    cfg!(target_os = "linux")
        && Command::new("systemctl")
            .args(["--user", "start", "mnemod"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

/// Polls the socket until mnemod answers; a child that exits first is reported with its log.
async fn wait_for_socket(
    socket: &Path,
    mut child: Option<(std::process::Child, &Path)>,
) -> Result<(), String> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        match Client::connect(socket).await {
            Ok(_) => return Ok(()),
            Err(ClientError::NotRunning { .. }) => {}
            Err(e) => return Err(e.to_string()),
        }
        if let Some((process, log)) = child.as_mut() {
            if let Ok(Some(status)) = process.try_wait() {
                return Err(format!(
                    "mnemod exited ({status}) before it answered; see {}",
                    log.display()
                ));
            }
        }
        if Instant::now() > deadline {
            return Err(format!(
                "mnemod did not answer at {} within {}s",
                socket.display(),
                START_TIMEOUT.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
