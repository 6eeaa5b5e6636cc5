//! `[[watch]]`: notes folders mnemod keeps remembered. Each is scanned at start and then
//! followed as files are created, edited, renamed and deleted.

use std::path::PathBuf;

use mnemo_protocol::notes::MAX_NOTE_BYTES;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WatchConfig {
    /// The folder; `~/` stands for the home directory.
    pub path: PathBuf,
    /// Which files under it are notes, as a glob over the path relative to the folder
    /// (`**/*.md`); by default every `.md`, `.markdown` and `.txt`.
    #[serde(default)]
    pub glob: Option<String>,
    /// The namespace its memories go to.
    #[serde(default = "default_namespace")]
    pub namespace: String,
    /// Larger files are skipped with a log line.
    #[serde(default = "default_max_file_bytes")]
    pub max_file_bytes: u64,
    /// Changes are taken in once the folder has been quiet this long, so an editor's save
    /// (write, rename, chmod) is one change.
    #[serde(default = "default_debounce_ms")]
    pub debounce_ms: u64,
}

fn default_namespace() -> String {
    "default".into()
}

fn default_max_file_bytes() -> u64 {
    MAX_NOTE_BYTES
}

fn default_debounce_ms() -> u64 {
    500
}

impl WatchConfig {
    /// `path` with a leading `~/` made the home directory.
    pub fn expand_home(&mut self) {
        let Ok(rest) = self.path.strip_prefix("~") else {
            return;
        };
        if let Some(home) = directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf()) {
            self.path = home.join(rest);
        }
    }

    /// The glob, compiled; `None` means notes by extension.
    pub fn pattern(&self) -> Result<Option<glob::Pattern>, String> {
        self.glob
            .as_deref()
            .map(|g| {
                glob::Pattern::new(g).map_err(|e| {
                    format!(
                        "watch {}: glob `{g}` is not a glob: {e}",
                        self.path.display()
                    )
                })
            })
            .transpose()
    }

    pub fn validate(&self) -> Result<(), String> {
        let name = self.path.display();
        if !self.path.is_absolute() {
            return Err(format!(
                "watch path `{name}` is relative; give an absolute path or one starting with ~/"
            ));
        }
        if self.namespace.is_empty() || self.namespace.len() > 128 {
            return Err(format!("watch {name}: namespace must be 1–128 bytes"));
        }
        if self.max_file_bytes == 0 || self.debounce_ms > 60_000 {
            return Err(format!(
                "watch {name}: max_file_bytes must be at least 1 and debounce_ms at most 60000"
            ));
        }
        self.pattern().map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_watch_entry_reads_with_its_defaults_and_a_home_path() {
        let config =
            crate::config::Config::from_toml("[[watch]]\npath = \"~/notes\"\nglob = \"**/*.md\"\n")
                .unwrap();
        let mut w = config.watch[0].clone();
        assert_eq!(w.namespace, "default");
        assert_eq!(w.debounce_ms, 500);
        w.expand_home();
        assert!(w.path.is_absolute() && w.path.ends_with("notes"));
        assert!(w.validate().is_ok());
        let glob = w.pattern().unwrap().unwrap();
        let opts = glob::MatchOptions {
            require_literal_separator: true,
            ..Default::default()
        };
        assert!(glob.matches_with("a.md", opts));
        assert!(glob.matches_with("deep/er/a.md", opts));
        assert!(!glob.matches_with("a.txt", opts));
    }

    #[test]
    fn a_bad_watch_entry_is_refused_by_name() {
        let mut w = crate::config::Config::from_toml("[[watch]]\npath = \"notes\"\n")
            .unwrap()
            .watch
            .remove(0);
        assert!(w.validate().unwrap_err().contains("relative"));
        w.path = "/n".into();
        w.glob = Some("[".into());
        assert!(w.validate().unwrap_err().contains("not a glob"));
    }
}
