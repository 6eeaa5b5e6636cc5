//! The listening socket: a private directory, a 0600 socket, a stale socket from a crash
//! replaced, and a live one never stolen.

use std::path::{Path, PathBuf};

use interprocess::local_socket::tokio::{prelude::*, Listener, Stream};
use interprocess::local_socket::ListenerOptions;
use mnemo_client::client::socket_name;

#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    #[error("another mnemod is already listening on {0}; stop it with `mnemo shutdown`, or use another --socket")]
    InUse(PathBuf),
    #[error("cannot prepare the socket directory {}: {source}", dir.display())]
    Dir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot listen on {}: {source}", path.display())]
    Bind {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The listening socket systemd passed for socket activation (`LISTEN_PID` is ours and
/// `LISTEN_FDS` ≥ 1: descriptor 3), if any. The variables are cleared so children do not
/// take it for theirs.
#[cfg(unix)]
pub fn inherited() -> Result<Option<Listener>, SocketError> {
    use std::os::fd::{FromRawFd, OwnedFd};
    const SD_LISTEN_FDS_START: i32 = 3;
    let ours = std::env::var("LISTEN_PID")
        .ok()
        .and_then(|p| p.parse::<u32>().ok())
        == Some(std::process::id());
    let count: i32 = std::env::var("LISTEN_FDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    if !ours || count < 1 {
        return Ok(None);
    }
    std::env::remove_var("LISTEN_PID");
    std::env::remove_var("LISTEN_FDS");
    std::env::remove_var("LISTEN_FDNAMES");
    // SAFETY: systemd hands us descriptor 3 open and ours alone when LISTEN_PID is our pid.
    let fd = unsafe { OwnedFd::from_raw_fd(SD_LISTEN_FDS_START) };
    let listener = interprocess::os::unix::uds_local_socket::tokio::Listener::try_from(fd)
        .map_err(|source| SocketError::Bind {
            path: "LISTEN_FDS (descriptor 3)".into(),
            source,
        })?;
    Ok(Some(listener.into()))
}

#[cfg(not(unix))]
pub fn inherited() -> Result<Option<Listener>, SocketError> {
    Ok(None)
}

/// Binds the socket at `path`, creating its directory 0700 when it does not exist.
pub async fn bind(path: &Path) -> Result<Listener, SocketError> {
    #[cfg(unix)]
    prepare_dir(path)?;
    if path.exists() {
        let name = socket_name(path).map_err(|source| SocketError::Bind {
            path: path.into(),
            source,
        })?;
        if Stream::connect(name).await.is_ok() {
            return Err(SocketError::InUse(path.into()));
        }
        tracing::info!(
            "replacing stale socket {} (left by a crash?)",
            path.display()
        );
        let _ = std::fs::remove_file(path);
    }
    let name = socket_name(path).map_err(|source| SocketError::Bind {
        path: path.into(),
        source,
    })?;
    let options = ListenerOptions::new().name(name).reclaim_name(true);
    #[cfg(unix)]
    let options = {
        use interprocess::os::unix::local_socket::ListenerOptionsExt;
        options.mode(0o600)
    };
    options.create_tokio().map_err(|source| SocketError::Bind {
        path: path.into(),
        source,
    })
}

#[cfg(unix)]
fn prepare_dir(path: &Path) -> Result<(), SocketError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let Some(dir) = path.parent() else {
        return Ok(());
    };
    let fail = |source| SocketError::Dir {
        dir: dir.into(),
        source,
    };
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(fail)?;
        // DirBuilder's mode passes through the umask; make sure.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(fail)?;
    } else {
        let mode = std::fs::metadata(dir).map_err(fail)?.permissions().mode();
        if mode & 0o022 != 0 && mode & 0o1000 == 0 {
            tracing::warn!(
                "socket directory {} is writable by others (mode {:o})",
                dir.display(),
                mode & 0o777
            );
        }
    }
    Ok(())
}

/// True when the peer runs as the same user as the daemon.
#[cfg(unix)]
pub fn peer_is_same_user(stream: &Stream) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    match stream.peer_creds() {
        Ok(creds) => creds.euid() == Some(me),
        Err(e) => {
            tracing::warn!("cannot read peer credentials ({e}); refusing the connection");
            false
        }
    }
}

/// Named pipes are per-session on Windows; the pipe's default ACL already limits peers.
#[cfg(not(unix))]
pub fn peer_is_same_user(_stream: &Stream) -> bool {
    true
}
