//! Where mnemo keeps things by default. Daemon and clients agree through these functions.

use std::path::{Path, PathBuf};

use directories::ProjectDirs;

pub const SOCKET_FILE: &str = "mnemod.sock";

fn project_dirs() -> Option<ProjectDirs> {
    ProjectDirs::from("", "", "mnemo")
}

/// `$XDG_DATA_HOME/mnemo` (or the platform's equivalent).
pub fn default_data_dir() -> PathBuf {
    project_dirs()
        .map(|d| d.data_dir().to_path_buf())
        .unwrap_or_else(|| {
            std::env::temp_dir()
                .join(format!("mnemo-{}", user_tag()))
                .join("data")
        })
}

/// Where `packaging/fetch-model.sh` puts all-MiniLM-L6-v2 for a data dir.
pub fn model_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("models").join("all-MiniLM-L6-v2")
}

/// The model tests and benchmarks use: `$MNEMO_MODEL_DIR`, else the default data dir's.
pub fn test_model_dir() -> PathBuf {
    std::env::var_os("MNEMO_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| model_dir(&default_data_dir()))
}

/// `$XDG_CONFIG_HOME/mnemo/config.toml`.
pub fn default_config_path() -> PathBuf {
    project_dirs()
        .map(|d| d.config_dir().join("config.toml"))
        .unwrap_or_else(|| PathBuf::from("mnemo.toml"))
}

/// Where the key of an encrypted store lives by default: beside the config (not in it), so a
/// copy of the data dir alone does not carry its key.
pub fn default_key_path() -> PathBuf {
    project_dirs()
        .map(|d| d.config_dir().join("mnemo.key"))
        .unwrap_or_else(|| PathBuf::from("mnemo.key"))
}

/// `$XDG_RUNTIME_DIR/mnemo/mnemod.sock`; where there is no runtime dir, a per-user directory
/// under the temp dir (`/tmp/mnemo-<uid>/mnemod.sock`), which the daemon creates 0700.
pub fn default_socket_path() -> PathBuf {
    if let Ok(path) = std::env::var("MNEMO_SOCKET") {
        if !path.is_empty() {
            return PathBuf::from(path);
        }
    }
    #[cfg(windows)]
    {
        PathBuf::from(format!(r"\\.\pipe\mnemo-{}", user_tag()))
    }
    #[cfg(not(windows))]
    {
        project_dirs()
            .and_then(|d| d.runtime_dir().map(|r| r.to_path_buf()))
            .unwrap_or_else(|| std::env::temp_dir().join(format!("mnemo-{}", user_tag())))
            .join(SOCKET_FILE)
    }
}

#[cfg(unix)]
fn user_tag() -> String {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }.to_string()
}

#[cfg(not(unix))]
fn user_tag() -> String {
    std::env::var("USERNAME").unwrap_or_else(|_| "user".into())
}
