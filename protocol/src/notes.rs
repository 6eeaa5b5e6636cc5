//! Notes as memories: a `.md` or `.txt` file split at its headings and blank lines, each
//! paragraph one memory whose source is the file and whose metadata names the heading it
//! sits under (and that heading's anchor). The date comes from the front matter's `date:` or
//! a `YYYY-MM-DD` at the start of the file name; tags from the front matter's `tags:` and the
//! `#tags` in the text. `mnemo import` and mnemod's watched folders both split notes here, so
//! a note imported and then watched is the same memories, not twice as many.

use std::path::Path;

use serde_json::json;

use crate::memory::{AddParams, MAX_CONTENT_BYTES};

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

/// Opens `path` for reading without waiting: a named pipe opened plainly blocks until
/// something writes to it, and a watched folder may hold one.
fn open_at_once(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    options.open(path)
}

/// The text of the note at `path`, or why it is not read: not a regular file (a pipe, a
/// socket, a device), over `max_bytes`, binary (a NUL in its first 8 KiB), or not UTF-8.
pub fn read_text(path: &Path, max_bytes: u64) -> Result<String, String> {
    use std::io::Read;
    let file = open_at_once(path).map_err(|e| format!("cannot open it: {e}"))?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file (a pipe, socket or device); not read".into());
    }
    if meta.len() > max_bytes {
        return Err(format!(
            "{} bytes is over the {max_bytes}-byte limit of a note; not read",
            meta.len()
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!(
            "grew over the {max_bytes}-byte limit of a note while read; not read"
        ));
    }
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return Err("binary, not text".into());
    }
    String::from_utf8(bytes).map_err(|e| format!("cannot read it as UTF-8 text: {e}"))
}

/// The header and body of a `---` front matter, when the text opens with one.
pub fn split_front_matter(text: &str) -> Option<(&str, &str)> {
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

/// A heading's anchor as Markdown renderers make it: lower case, spaces to `-`, punctuation
/// dropped (`## Next steps!` -> `next-steps`).
pub fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The source every memory of the note at `path` carries.
pub fn source(path: &Path) -> String {
    format!("file:{}", path.display())
}

/// The memories of one note: each paragraph with the heading it sits under, or the reasons
/// paragraphs were left out.
pub fn memories(path: &Path, text: &str) -> (Vec<AddParams>, Vec<String>) {
    // A note saved with CRLF line ends reads as one saved with LF (its front matter too).
    let text = text.replace("\r\n", "\n");
    let (date, file_tags, body) = front_matter(&text);
    let (mut items, mut problems) = (Vec::new(), Vec::new());
    // A template's placeholder ("{{date}}") is no date: the note is read without it.
    let date = date.filter(|d| match crate::time::parse_micros(d) {
        Ok(_) => true,
        Err(e) => {
            problems.push(format!(
                "its front matter's `date: {d}` is not a date ({e}); read without it"
            ));
            false
        }
    });
    let date = date.or_else(|| date_in_name(path));
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
            source: Some(source(path)),
            occurred_at: date.clone(),
            tags,
            metadata: Some(json!({ "path": path, "heading": heading, "anchor": anchor(heading) })),
            ..Default::default()
        });
    };
    // The fence a fenced code block opened with, while inside one: its lines are the block's,
    // never headings, and its blank lines split nothing.
    let mut fence: Option<String> = None;
    for line in body.lines() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let trimmed = line.trim_start();
        if let Some(open) = &fence {
            paragraph.push(line);
            if indent <= 3 && closes(trimmed, open) {
                fence = None;
            }
            continue;
        }
        if let (true, Some(open)) = (indent <= 3, opens_fence(trimmed)) {
            fence = Some(open);
            paragraph.push(line);
        } else if let Some(title) = trimmed
            .strip_prefix('#')
            .filter(|t| indent <= 3 && (t.is_empty() || t.starts_with(['#', ' '])))
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

/// The fence (three or more backticks or tildes) a line opens a fenced code block with.
fn opens_fence(line: &str) -> Option<String> {
    let c = line.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let run: String = line.chars().take_while(|&x| x == c).collect();
    // An info string after backticks holds no backtick (CommonMark).
    let backtick_in_info = c == '`' && line[run.len()..].contains('`');
    (run.len() >= 3 && !backtick_in_info).then_some(run)
}

/// Whether `line` closes the block `open` opened: the same character, at least as many,
/// nothing after but spaces.
fn closes(line: &str, open: &str) -> bool {
    let c = open.chars().next().unwrap_or('`');
    let run = line.chars().take_while(|&x| x == c).count();
    run >= open.len() && line[run..].trim().is_empty()
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
        let meta = items[1].metadata.as_ref().unwrap();
        assert_eq!(meta["heading"], "Next #planning");
        assert_eq!(meta["anchor"], "next-planning");
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

    #[test]
    fn binary_and_oversized_files_are_not_read() {
        let dir = std::env::temp_dir().join(format!("mnemo-notes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let binary = dir.join("b.md");
        std::fs::write(&binary, b"a\0b").unwrap();
        assert_eq!(read_text(&binary, 100).unwrap_err(), "binary, not text");
        let big = dir.join("big.md");
        std::fs::write(&big, "x".repeat(200)).unwrap();
        assert!(read_text(&big, 100)
            .unwrap_err()
            .contains("over the 100-byte limit"));
        assert_eq!(read_text(&big, 1000).unwrap().len(), 200);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn fenced_code_stays_whole_and_crlf_front_matter_is_read() {
        let text = "---\r\ndate: 2024-05-01\r\n---\r\n# Setup\r\nRun this:\r\n```sh\r\n# install\r\n\r\nmake\r\n```\r\nDone.\r\n";
        let (items, problems) = memories(Path::new("a.md"), text);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(items.len(), 1, "{items:#?}");
        assert_eq!(
            items[0].content,
            "Run this:\n```sh\n# install\n\nmake\n```\nDone."
        );
        assert_eq!(items[0].occurred_at.as_deref(), Some("2024-05-01"));
        assert_eq!(items[0].metadata.as_ref().unwrap()["heading"], "Setup");
    }

    #[test]
    fn a_template_placeholder_date_is_named_and_left_out() {
        let text = "---\ndate: \"{{date}}\"\n---\nA note from a template.\n";
        let (items, problems) = memories(Path::new("t.md"), text);
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].occurred_at, None);
        assert!(problems[0].contains("{{date}}"), "{problems:?}");
    }

    /// A named pipe nothing writes to: read plainly, it would block its reader for good.
    #[cfg(unix)]
    #[test]
    fn a_named_pipe_is_refused_without_waiting() {
        let dir = std::env::temp_dir().join(format!("mnemo-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("pipe.md");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo reads it and keeps nothing.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let err = read_text(&fifo, 100).unwrap_err();
        assert!(err.contains("not a regular file"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
