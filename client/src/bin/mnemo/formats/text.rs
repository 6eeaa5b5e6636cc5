//! Plain `.md` and `.txt` notes, a file or a folder of them, split as mnemod's watched folders
//! split them ([`mnemo_protocol::notes`]); a file of mnemo's own Markdown export is read back
//! section by section instead.

use std::path::{Path, PathBuf};

use mnemo_protocol::memory::AddParams;
use mnemo_protocol::notes::{self, split_front_matter, MAX_NOTE_BYTES};

pub use mnemo_protocol::notes::is_note;

/// The notes under `dir`, sorted; hidden directories (`.git`) and symlinks are not entered.
pub fn notes_under(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            let hidden = entry.file_name().to_string_lossy().starts_with('.');
            if kind.is_dir() && !hidden {
                stack.push(entry.path());
            } else if kind.is_file() && is_note(&entry.path()) {
                found.push(entry.path());
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The memories of the note at `path` (see [`memories`]), or why it is not read: too large,
/// binary, or not UTF-8.
pub fn read_note(path: &Path) -> Result<(Vec<AddParams>, Vec<String>), String> {
    let content = notes::read_text(path, MAX_NOTE_BYTES)?;
    Ok(memories(path, &content))
}

/// A file of mnemo's Markdown export: its namespace and body (read section by section).
fn mnemo_export(text: &str) -> Option<(Option<&str>, &str)> {
    let (header, body) = split_front_matter(text)?;
    header
        .lines()
        .any(|l| l.trim() == super::markdown::MARK)
        .then(|| {
            let namespace = header
                .lines()
                .find_map(|l| l.strip_prefix("namespace: "))
                .map(str::trim);
            (namespace, body.trim_start_matches('\n'))
        })
}

/// The memories of one note, or of one file of mnemo's Markdown export.
pub fn memories(path: &Path, text: &str) -> (Vec<AddParams>, Vec<String>) {
    match mnemo_export(text) {
        Some((namespace, body)) => (
            super::markdown::memories(body, namespace, &notes::source(path)),
            Vec::new(),
        ),
        None => notes::memories(path, text),
    }
}
