//! How a socket path becomes a local-socket name: a file path on Unix, a pipe name on Windows.

use std::path::Path;

use interprocess::local_socket::{GenericFilePath, GenericNamespaced, Name, ToFsName, ToNsName};

/// The interprocess name for a socket path.
pub fn name(path: &Path) -> std::io::Result<Name<'_>> {
    if cfg!(windows) {
        let text = path.to_string_lossy();
        let pipe = text.trim_start_matches(r"\\.\pipe\").to_string();
        pipe.to_ns_name::<GenericNamespaced>()
    } else {
        path.to_fs_name::<GenericFilePath>()
    }
}
