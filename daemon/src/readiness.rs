//! Telling a supervisor the daemon is ready, once the socket accepts: `READY=1` to systemd's
//! `NOTIFY_SOCKET` when set, and a line on `--ready-fd` for scripts and tests.

pub fn announce(ready_fd: Option<i32>) {
    sd_notify("READY=1");
    #[cfg(unix)]
    if let Some(fd) = ready_fd {
        use std::io::Write;
        // SAFETY: F_GETFD only reads the descriptor's flags.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            tracing::warn!("--ready-fd {fd} is not an open file descriptor; not announcing on it");
            return;
        }
        use std::os::fd::FromRawFd;
        // SAFETY: the fd was handed to us for this purpose by our parent; we own and close it.
        let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
        if let Err(e) = file.write_all(b"READY=1\n") {
            tracing::warn!("cannot write readiness to fd {fd}: {e}");
        }
    }
    #[cfg(not(unix))]
    let _ = ready_fd;
}

/// The interval systemd expects `WATCHDOG=1` at (half its `WatchdogSec`), when it watches us.
pub fn watchdog_interval() -> Option<std::time::Duration> {
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    if let Ok(pid) = std::env::var("WATCHDOG_PID") {
        if pid.parse::<u32>().ok()? != std::process::id() {
            return None;
        }
    }
    (usec > 0).then(|| std::time::Duration::from_micros(usec / 2))
}

/// Pings systemd's watchdog from the runtime until shutdown: if the runtime stops making
/// progress, the pings stop and systemd restarts the daemon.
pub async fn watchdog(shutdown: crate::shutdown::Shutdown) {
    let Some(every) = watchdog_interval() else {
        return;
    };
    tracing::info!("systemd watchdog: pinging every {} ms", every.as_millis());
    let mut tick = tokio::time::interval(every);
    loop {
        tokio::select! {
            _ = shutdown.requested() => return,
            _ = tick.tick() => sd_notify("WATCHDOG=1"),
        }
    }
}

pub fn stopping() {
    sd_notify("STOPPING=1");
}

/// Sends one state line to systemd; silent when not run by systemd.
pub fn sd_notify(state: &str) {
    #[cfg(target_os = "linux")]
    {
        use std::os::linux::net::SocketAddrExt;
        use std::os::unix::net::{SocketAddr, UnixDatagram};
        let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
            return;
        };
        let path = path.to_string_lossy().to_string();
        let addr = match path.strip_prefix('@') {
            Some(name) => SocketAddr::from_abstract_name(name.as_bytes()),
            None => SocketAddr::from_pathname(&path),
        };
        let sent =
            addr.and_then(|addr| UnixDatagram::unbound()?.send_to_addr(state.as_bytes(), &addr));
        if let Err(e) = sent {
            tracing::warn!("sd_notify {state} to {path} failed: {e}");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = state;
}
