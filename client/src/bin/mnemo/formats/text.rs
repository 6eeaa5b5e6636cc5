//! Plain `.md` and `.txt` notes: a file is split at its headings and blank lines, each
//! paragraph one memory, its source the file and the heading it sits under. The date comes
//! from the front matter's `date:` or a `YYYY-MM-DD` at the start of the file name; tags from
//! the front matter's `tags:` and the `#tags` in the text.

use std::path::{Path, PathBuf};

use mnemo_protocol::memory::{AddParams, MAX_CONTENT_BYTES};
use serde_json::json;

/// Files larger than this are not notes (logs, dumps): skipped with a message.
pub const MAX_NOTE_BYTES: u64 = 4 * 1024 * 1024;

/// Whether `path` names a note by its extension.
pub fn is_note(path: &Path) -> bool {
    matches!(
        path.extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Some("md" | "markdown" | "txt")
    )
}

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

/// Whether the first bytes of a file hold a NUL: binary, not a note.
fn looks_binary(path: &Path) -> bool {
    use std::io::{BufRead, Read};
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut reader = std::io::BufReader::new(file.take(8192));
    reader.fill_buf().map(|b| b.contains(&0)).unwrap_or(false)
}

/// The memories of the note at `path` (see [`memories`]), or why it is not read: too large,
/// binary, or not UTF-8.
pub fn read_note(path: &Path) -> Result<(Vec<AddParams>, Vec<String>), String> {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if size > MAX_NOTE_BYTES {
        let limit = MAX_NOTE_BYTES / (1024 * 1024);
        return Err(format!("over {limit} MB: not a note, not read"));
    }
    if looks_binary(path) {
        return Err("binary, not text".into());
    }
    let content =
        std::fs::read_to_string(path).map_err(|e| format!("cannot read it as UTF-8 text: {e}"))?;
    Ok(memories(path, &content))
}

/// The header and body of a `---` front matter, when the text opens with one.
fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---")?;
    Some((&rest[..end], &rest[end + 4..]))
}

/// `date:` and `tags:` of a `---` front matter, and the text after it.
fn front_matter(text: &str) -> (Option<String>, Vec<String>, &str) {
    let Some((header, body)) = split_front_matter(text) else {
        return (None, Vec::new(), text);
    };
    let (mut date, mut tags) = (None, Vec::new());
    let mut in_tags = false;
    for line in header.lines() {
        let clean = |s: &str| s.trim().trim_matches(['"', '\'']).to_string();
        if let Some(v) = line.strip_prefix("date:") {
            date = Some(clean(v));
            in_tags = false;
        } else if let Some(v) = line.strip_prefix("tags:") {
            let v = v.trim().trim_start_matches('[').trim_end_matches(']');
            tags.extend(v.split(',').map(clean).filter(|t| !t.is_empty()));
            in_tags = true;
        } else if let (true, Some(item)) = (in_tags, line.trim().strip_prefix("- ")) {
            tags.push(clean(item));
        } else {
            in_tags = false;
        }
    }
    (date, tags, body.trim_start_matches('\n'))
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

/// `2024-05-01-standup.md` -> `2024-05-01`.
fn date_in_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let head = name.get(..10)?;
    chrono::NaiveDate::parse_from_str(head, "%Y-%m-%d")
        .ok()
        .map(|_| head.to_string())
}

/// The `#tags` of a paragraph (a `#` starting a word, followed by letters).
fn hashtags(paragraph: &str) -> Vec<String> {
    paragraph
        .split_whitespace()
        .filter_map(|w| w.strip_prefix('#'))
        .map(|t| t.trim_end_matches(|c: char| !c.is_alphanumeric()))
        .filter(|t| t.chars().next().is_some_and(char::is_alphabetic))
        .map(str::to_string)
        .collect()
}

/// The memories of one note: each paragraph with the heading it sits under, or the reasons
/// paragraphs were left out.
pub fn memories(path: &Path, text: &str) -> (Vec<AddParams>, Vec<String>) {
    if let Some(export) = mnemo_export(text) {
        let source = format!("file:{}", path.display());
        return (
            super::markdown::memories(export.1, export.0, &source),
            Vec::new(),
        );
    }
    let (date, file_tags, body) = front_matter(text);
    let date = date.or_else(|| date_in_name(path));
    let (mut items, mut problems) = (Vec::new(), Vec::new());
    let mut heading = String::new();
    let mut paragraph: Vec<&str> = Vec::new();
    let mut flush = |heading: &str, paragraph: &mut Vec<&str>| {
        let content = paragraph.join("\n").trim().to_string();
        paragraph.clear();
        if content.is_empty() {
            return;
        }
        if content.len() > MAX_CONTENT_BYTES {
            problems.push(format!(
                "a paragraph under `{heading}` is over {MAX_CONTENT_BYTES} bytes"
            ));
            return;
        }
        let mut tags = file_tags.clone();
        tags.extend(hashtags(&content));
        tags.dedup();
        items.push(AddParams {
            content,
            source: Some(format!("file:{}", path.display())),
            occurred_at: date.clone(),
            tags,
            metadata: Some(json!({ "path": path, "heading": heading })),
            ..Default::default()
        });
    };
    for line in body.lines() {
        let trimmed = line.trim_start();
        if let Some(title) = trimmed
            .strip_prefix('#')
            .filter(|t| t.starts_with(['#', ' ']))
        {
            flush(&heading, &mut paragraph);
            heading = title.trim_start_matches('#').trim().to_string();
        } else if trimmed.is_empty() {
            flush(&heading, &mut paragraph);
        } else {
            paragraph.push(line);
        }
    }
    flush(&heading, &mut paragraph);
    (items, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_splits_at_headings_and_blank_lines_with_its_date_and_tags() {
        let text = "---\ndate: 2024-05-01\ntags: [work, ideas]\n---\n# Standup\nShipped the parser.\nIt was hard.\n\n## Next #planning\nWrite the #docs today.\n";
        let (items, problems) = memories(Path::new("notes/a.md"), text);
        assert!(problems.is_empty());
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].content, "Shipped the parser.\nIt was hard.");
        assert_eq!(items[0].occurred_at.as_deref(), Some("2024-05-01"));
        assert_eq!(items[0].tags, vec!["work", "ideas"]);
        assert_eq!(items[1].tags, vec!["work", "ideas", "docs"]);
        assert_eq!(
            items[1].metadata.as_ref().unwrap()["heading"],
            "Next #planning"
        );
        assert_eq!(items[1].source.as_deref(), Some("file:notes/a.md"));
    }

    #[test]
    fn the_date_can_come_from_the_file_name() {
        let (items, _) = memories(Path::new("2023-01-02-retro.txt"), "One thing.\n");
        assert_eq!(items[0].occurred_at.as_deref(), Some("2023-01-02"));
        let (items, _) = memories(Path::new("retro.txt"), "#1 is not a tag nor a heading\n");
        assert_eq!(items[0].occurred_at, None);
        assert!(items[0].tags.is_empty());
    }
}
