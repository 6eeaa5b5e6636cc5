//! The files `mnemo import` reads besides its own JSONL: each format turned into memories to
//! add, so mnemod checks and stores them like any other (and a second import of the same file
//! finds them already there).

pub mod locomo;
pub mod mcp_memory;
pub mod text;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// What a file to import holds.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Decide from the path and the first line.
    Auto,
    /// `mnemo export`'s JSONL: every version, lossless.
    Mnemo,
    /// The MCP reference memory server's knowledge graph (memory.jsonl).
    McpMemory,
    /// LoCoMo-style dialogue JSON.
    Locomo,
    /// `.md` / `.txt` notes: a file or a folder of them.
    Text,
}

/// The format of `path`: a folder or a note by extension is text; otherwise the first
/// non-blank line says which JSON it is.
pub fn detect(path: &Path) -> anyhow::Result<Format> {
    if path.is_dir() || text::is_note(path) {
        return Ok(Format::Text);
    }
    let file = std::fs::File::open(path)?;
    let mut head = String::new();
    BufReader::new(file.take(64 * 1024))
        .read_to_string(&mut head)
        .ok();
    let first = head
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let kind = serde_json::from_str::<serde_json::Value>(first)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string));
    Ok(match kind.as_deref() {
        Some("memory") => Format::Mnemo,
        Some("entity" | "relation") => Format::McpMemory,
        _ if first.starts_with('[') && head.contains("\"conversation\"") => Format::Locomo,
        _ => anyhow::bail!(
            "cannot tell what {} holds; name it with --format (mnemo, mcp-memory, locomo, text)",
            path.display()
        ),
    })
}

/// Whether the first bytes of a file hold a NUL: binary, not a note.
pub fn looks_binary(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut reader = BufReader::new(file.take(8192));
    reader.fill_buf().map(|b| b.contains(&0)).unwrap_or(false)
}
