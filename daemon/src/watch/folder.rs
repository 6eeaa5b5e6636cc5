//! Which files of a watched folder are notes, and reading one: hidden files and folders
//! (`.git`, editors' swap files) are never notes; a symlink out of the folder, a binary file
//! and a file over the size limit are skipped with the reason.

use std::path::{Component, Path, PathBuf};

use mnemo_protocol::memory::AddParams;
use mnemo_protocol::notes;

use crate::config::WatchConfig;

pub struct Folder {
    /// The folder with its symlinks resolved, so every path under it compares as a prefix.
    pub root: PathBuf,
    pattern: Option<glob::Pattern>,
    max_bytes: u64,
}

/// What listing a folder finds: the notes, and the files left out with why.
#[derive(Debug, Default)]
pub struct Listing {
    pub notes: Vec<PathBuf>,
    pub skipped: Vec<(PathBuf, String)>,
}

impl Folder {
    /// The folder `config` names; an error when it does not exist (yet).
    pub fn open(config: &WatchConfig) -> Result<Self, String> {
        let root = config
            .path
            .canonicalize()
            .map_err(|e| format!("{}: {e}", config.path.display()))?;
        if !root.is_dir() {
            return Err(format!("{} is not a folder", config.path.display()));
        }
        Ok(Self {
            root,
            pattern: config.pattern()?,
            max_bytes: config.max_file_bytes,
        })
    }

    /// Whether `path` (under the folder) names a note: no hidden part, and the glob (or the
    /// note extensions) matches.
    pub fn wants(&self, path: &Path) -> bool {
        let Some(relative) = self.visible(path) else {
            return false;
        };
        match &self.pattern {
            Some(glob) => glob.matches_path_with(
                relative,
                glob::MatchOptions {
                    require_literal_separator: true,
                    ..Default::default()
                },
            ),
            None => notes::is_note(path),
        }
    }

    /// `path` relative to the folder, unless it is outside it or has a hidden part.
    pub fn visible<'p>(&self, path: &'p Path) -> Option<&'p Path> {
        let relative = path.strip_prefix(&self.root).ok()?;
        let hidden = relative.components().any(|c| match c {
            Component::Normal(n) => n.to_string_lossy().starts_with('.'),
            _ => true,
        });
        (!hidden).then_some(relative)
    }

    /// The notes under `dir` (the folder or a folder in it), sorted. Symlinked folders are not
    /// entered (what they hold inside the folder is listed where it is).
    pub fn list(&self, dir: &Path) -> Listing {
        let mut listing = Listing::default();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            let entries = match std::fs::read_dir(&d) {
                Ok(entries) => entries,
                Err(e) => {
                    listing.skipped.push((d, format!("cannot list it: {e}")));
                    continue;
                }
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    if !entry.file_name().to_string_lossy().starts_with('.') {
                        stack.push(path);
                    }
                } else if self.wants(&path) {
                    match self.outside(&path) {
                        Some(why) => listing.skipped.push((path, why)),
                        None if path.is_file() => listing.notes.push(path),
                        None => {}
                    }
                }
            }
        }
        listing.notes.sort();
        listing
    }

    /// Why the file at `path` is out of bounds: a symlink that leads out of the folder.
    fn outside(&self, path: &Path) -> Option<String> {
        let is_link = path.symlink_metadata().ok()?.file_type().is_symlink();
        if !is_link {
            return None;
        }
        match path.canonicalize() {
            Ok(target) if target.starts_with(&self.root) => None,
            Ok(target) => Some(format!(
                "a symlink out of the folder (to {}), not followed",
                target.display()
            )),
            Err(e) => Some(format!("a broken symlink: {e}")),
        }
    }

    /// The paragraphs of the note at `path` as memories to add to `namespace`, or why it is
    /// skipped.
    pub fn read(&self, path: &Path, namespace: &str) -> Result<Vec<AddParams>, String> {
        if let Some(why) = self.outside(path) {
            return Err(why);
        }
        let text = notes::read_text(path, self.max_bytes)?;
        let (mut items, problems) = notes::memories(path, &text);
        for problem in problems {
            tracing::info!("watch: {}: {problem}; left out", path.display());
        }
        for item in &mut items {
            item.namespace = Some(namespace.to_string());
        }
        Ok(items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(dir: &Path, glob: Option<&str>) -> Folder {
        Folder::open(&WatchConfig {
            path: dir.to_path_buf(),
            glob: glob.map(str::to_string),
            namespace: "notes".into(),
            max_file_bytes: 100,
            debounce_ms: 10,
        })
        .unwrap()
    }

    #[test]
    fn notes_are_listed_and_the_rest_left_out_with_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join("a.md"), "A.").unwrap();
        std::fs::write(root.join("sub/b.txt"), "B.").unwrap();
        std::fs::write(root.join("c.rs"), "fn").unwrap();
        std::fs::write(root.join(".git/d.md"), "D.").unwrap();
        std::fs::write(root.join(".e.md"), "E.").unwrap();
        std::fs::write(outside.path().join("secret.md"), "S.").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.md"), root.join("s.md")).unwrap();
        let f = folder(root, None);
        let listing = f.list(&f.root);
        let names: Vec<_> = listing
            .notes
            .iter()
            .map(|p| {
                p.strip_prefix(&f.root)
                    .unwrap()
                    .to_string_lossy()
                    .to_string()
            })
            .collect();
        assert_eq!(names, vec!["a.md", "sub/b.txt"]);
        assert_eq!(listing.skipped.len(), 1);
        assert!(listing.skipped[0].1.contains("symlink out of the folder"));
        assert!(f.read(&f.root.join("s.md"), "notes").is_err());
    }

    #[test]
    fn a_glob_picks_the_notes_and_big_or_binary_files_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a.md"), "A.\n\nB.").unwrap();
        std::fs::write(root.join("b.txt"), "B.").unwrap();
        std::fs::write(root.join("big.md"), "x".repeat(200)).unwrap();
        std::fs::write(root.join("bin.md"), b"\0\x01").unwrap();
        let f = folder(root, Some("**/*.md"));
        assert_eq!(f.list(&f.root).notes.len(), 3);
        let items = f.read(&f.root.join("a.md"), "notes").unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].namespace.as_deref(), Some("notes"));
        assert!(f
            .read(&f.root.join("big.md"), "notes")
            .unwrap_err()
            .contains("limit"));
        assert!(f
            .read(&f.root.join("bin.md"), "notes")
            .unwrap_err()
            .contains("binary"));
        assert!(!f.wants(&f.root.join("b.txt")));
    }
}
