//! The listening socket: a private directory, a 0600 socket, a stale socket from a crash
//! replaced, and a live one never stolen.

use std::path::{Path, PathBuf};

use interprocess::local_socket::tokio::{prelude::*, Listener, Stream};
use interprocess::local_socket::ListenerOptions;
use mnemo_protocol::socket::name as socket_name;

#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    #[error("another mnemod is already listening on {0}; stop it with `mnemo shutdown`, or use another --socket")]
    InUse(PathBuf),
    #[error("cannot prepare the socket directory {}: {source}", dir.display())]
    Dir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "refusing the socket directory {}: {why}. Remove it or make it yours with mode 700 \
         (`chmod 700`), or pass --socket in a directory of your own",
        dir.display()
    )]
    UnsafeDir { dir: PathBuf, why: String },
    #[error("cannot listen on {}: {source}", path.display())]
    Bind {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The listening descriptor systemd passed for socket activation, taken out of the
/// environment.
#[cfg(unix)]
pub type ActivationFd = std::os::fd::OwnedFd;
#[cfg(not(unix))]
pub type ActivationFd = ();

/// Reads and clears `LISTEN_PID`/`LISTEN_FDS` (so children do not take the socket for
/// theirs). Call before any thread starts: changing the environment while other threads may
/// read it is a data race. `Some` when `LISTEN_PID` is ours and `LISTEN_FDS` ≥ 1 (fd 3).
#[cfg(unix)]
pub fn activation_fd() -> Option<ActivationFd> {
    use std::os::fd::FromRawFd;
    const SD_LISTEN_FDS_START: i32 = 3;
    let pid = std::env::var("LISTEN_PID").ok();
    let fds = std::env::var("LISTEN_FDS").ok();
    if pid.is_none() && fds.is_none() {
        return None;
    }
    // Sound only while single-threaded: `main` calls this before the runtime starts.
    std::env::remove_var("LISTEN_PID");
    std::env::remove_var("LISTEN_FDS");
    std::env::remove_var("LISTEN_FDNAMES");
    if !activation_is_ours(pid.as_deref(), fds.as_deref(), std::process::id()) {
        return None;
    }
    // SAFETY: systemd hands us descriptor 3 open and ours alone when LISTEN_PID is our pid.
    Some(unsafe { ActivationFd::from_raw_fd(SD_LISTEN_FDS_START) })
}

#[cfg(not(unix))]
pub fn activation_fd() -> Option<ActivationFd> {
    None
}

/// True when the variables pass a socket to process `me`.
fn activation_is_ours(pid: Option<&str>, fds: Option<&str>, me: u32) -> bool {
    let ours = pid.and_then(|p| p.parse::<u32>().ok()) == Some(me);
    let count: i32 = fds.and_then(|n| n.parse().ok()).unwrap_or(0);
    ours && count >= 1
}

/// The listener for an activation descriptor (needs the runtime).
#[cfg(unix)]
pub fn from_activation(fd: ActivationFd) -> Result<Listener, SocketError> {
    let listener = interprocess::os::unix::uds_local_socket::tokio::Listener::try_from(fd)
        .map_err(|source| SocketError::Bind {
            path: "LISTEN_FDS (descriptor 3)".into(),
            source,
        })?;
    Ok(listener.into())
}

#[cfg(not(unix))]
pub fn from_activation(_: ActivationFd) -> Result<Listener, SocketError> {
    unreachable!("socket activation is systemd's")
}

/// Binds the socket at `path` in a directory that is this user's alone (see `prepare_dir`).
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

/// Makes sure the socket's directory is this user's alone: created 0700 when absent; refused
/// when it is a symbolic link, belongs to someone else, or admits group or others (whoever
/// controls the directory can put their own socket in ours' place). Checked on a handle
/// opened without following links, so the directory cannot be swapped between check and use.
#[cfg(unix)]
fn prepare_dir(path: &Path) -> Result<(), SocketError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
    let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(());
    };
    let fail = |source| SocketError::Dir {
        dir: dir.into(),
        source,
    };
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(fail)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(fail(e)),
    }
    let unsafe_dir = |why: String| SocketError::UnsafeDir {
        dir: dir.into(),
        why,
    };
    let handle = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(dir)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) | Some(libc::ENOTDIR) => {
                unsafe_dir("it is a symbolic link or not a directory".into())
            }
            _ => fail(e),
        })?;
    let meta = handle.metadata().map_err(fail)?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(unsafe_dir(format!(
            "it belongs to uid {}, not to you (uid {me})",
            meta.uid()
        )));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(unsafe_dir(format!(
            "its mode {mode:o} lets others in (it must be 700)"
        )));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activation_is_for_our_pid_with_a_descriptor() {
        assert!(activation_is_ours(Some("42"), Some("1"), 42));
        assert!(!activation_is_ours(Some("43"), Some("1"), 42));
        assert!(!activation_is_ours(Some("42"), Some("0"), 42));
        assert!(!activation_is_ours(None, Some("1"), 42));
        assert!(!activation_is_ours(Some("x"), Some("1"), 42));
    }
}
