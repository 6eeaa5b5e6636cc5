//! The file system paths a memory points at: its metadata's working directory (`cwd`) and file
//! paths (`path`, `file`, `files`, `project_path`), then absolute or home-relative paths in its
//! text. Pure: whether they exist is for the caller to see.

use serde_json::Value;

/// Where a path came from, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathSource {
    Cwd,
    MetadataPath,
    TextPath,
}

impl PathSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cwd => "cwd",
            Self::MetadataPath => "metadata path",
            Self::TextPath => "text path",
        }
    }
}

/// Most paths read from one memory.
const MAX_PATHS: usize = 8;

/// The paths `metadata` (JSON text) and `text` name, strongest source first, `~/` expanded
/// against `home`.
pub fn pointed_at(metadata: &str, text: &str, home: Option<&str>) -> Vec<(String, PathSource)> {
    let mut out = Vec::new();
    let meta: Value = serde_json::from_str(metadata).unwrap_or(Value::Null);
    let mut push = |raw: &str, source| {
        if let Some(p) = absolute(raw, home) {
            if out.len() < MAX_PATHS && !out.iter().any(|(q, _)| q == &p) {
                out.push((p, source));
            }
        }
    };
    if let Some(cwd) = meta.get("cwd").and_then(Value::as_str) {
        push(cwd, PathSource::Cwd);
    }
    for key in ["project_path", "path", "file"] {
        if let Some(p) = meta.get(key).and_then(Value::as_str) {
            push(p, PathSource::MetadataPath);
        }
    }
    if let Some(files) = meta.get("files").and_then(Value::as_array) {
        for f in files.iter().filter_map(Value::as_str) {
            push(f, PathSource::MetadataPath);
        }
    }
    for token in text.split_whitespace() {
        let token = token
            .trim_start_matches(['(', '"', '\'', '`', '“'])
            .trim_end_matches(|c: char| {
                matches!(
                    c,
                    ')' | '"' | '\'' | '`' | '”' | ',' | ';' | ':' | '.' | '!' | '?'
                )
            });
        if (token.starts_with('/') || token.starts_with("~/")) && token[1..].contains('/') {
            push(token, PathSource::TextPath);
        }
    }
    out
}

/// An absolute path without `.`/`..` steps, or nothing.
fn absolute(raw: &str, home: Option<&str>) -> Option<String> {
    let raw = raw.trim();
    let expanded = match raw.strip_prefix("~/") {
        Some(rest) => format!("{}/{rest}", home?.trim_end_matches('/')),
        None => raw.to_string(),
    };
    if !expanded.starts_with('/') || expanded.split('/').any(|s| s == ".." || s == ".") {
        return None;
    }
    let trimmed = expanded.trim_end_matches('/');
    Some(if trimmed.is_empty() {
        "/".into()
    } else {
        trimmed.into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_comes_before_text_and_home_is_expanded() {
        let found = pointed_at(
            r#"{"cwd": "/work/app", "files": ["/work/app/src/main.rs"]}"#,
            "I edited ~/notes/todo.md and (/etc/hosts).",
            Some("/home/ana"),
        );
        assert_eq!(
            found,
            vec![
                ("/work/app".to_string(), PathSource::Cwd),
                (
                    "/work/app/src/main.rs".to_string(),
                    PathSource::MetadataPath
                ),
                ("/home/ana/notes/todo.md".to_string(), PathSource::TextPath),
                ("/etc/hosts".to_string(), PathSource::TextPath),
            ]
        );
    }

    #[test]
    fn relative_and_climbing_paths_are_not_taken() {
        let found = pointed_at(
            r#"{"cwd": "src/app", "path": "/a/../b"}"#,
            "see ./x/y and a/b",
            None,
        );
        assert!(found.is_empty(), "{found:?}");
        assert!(pointed_at("{}", "~/x/y", None).is_empty());
    }
}
