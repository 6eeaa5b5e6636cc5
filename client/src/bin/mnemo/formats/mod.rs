//! The files `mnemo import` reads besides its own JSONL: each format turned into memories to
//! add, so mnemod checks and stores them like any other (and a second import of the same file
//! finds them already there).

pub mod chats;
pub use mnemo_client::locomo;
pub mod markdown;
pub mod mcp_memory;
pub mod text;

use std::io::{BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

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
    /// ChatGPT's data export (`conversations.json`).
    Chatgpt,
    /// Claude's data export (`conversations.json`).
    Claude,
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
    // Windows tools save UTF-8 with a byte-order mark before the first character.
    let head = head.trim_start_matches('\u{feff}');
    let first = head
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let kind = serde_json::from_str::<serde_json::Value>(first)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string));
    Ok(match kind.as_deref() {
        Some("memory" | "belief" | "session") => Format::Mnemo,
        Some("entity" | "relation") => Format::McpMemory,
        _ if first.starts_with('[') && head.contains("\"mapping\"") => Format::Chatgpt,
        _ if first.starts_with('[') && head.contains("\"chat_messages\"") => Format::Claude,
        _ if first.starts_with('[') && head.contains("\"conversation\"") => Format::Locomo,
        _ => anyhow::bail!(
            "cannot tell what {} holds; name it with --format (mnemo, mcp-memory, locomo, \
             chatgpt, claude, text)",
            path.display()
        ),
    })
}

/// Moves `reader` past a UTF-8 byte-order mark at its start, if there is one.
pub fn skip_bom(reader: &mut impl std::io::BufRead) {
    if reader
        .fill_buf()
        .is_ok_and(|b| b.starts_with(&[0xEF, 0xBB, 0xBF]))
    {
        reader.consume(3);
    }
}

/// The elements of a JSON array as they are read, or the error that ended the reading.
pub type Elements = tokio::sync::mpsc::Receiver<Result<serde_json::Value, String>>;

/// The elements of the JSON array in `path`, one at a time, read on a blocking thread: a file
/// of any size is never held whole. An element that is not valid JSON ends the stream with
/// its error (JSON cannot be resynchronised after it). Also answers how many bytes of the
/// file have been read so far, for progress.
pub fn array_elements(path: &Path) -> anyhow::Result<(Elements, Arc<AtomicU64>)> {
    use serde::de::{DeserializeSeed, SeqAccess, Visitor};

    struct Each(tokio::sync::mpsc::Sender<Result<serde_json::Value, String>>);
    impl<'de> Visitor<'de> for Each {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON array")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while let Some(element) = seq.next_element::<serde_json::Value>()? {
                if self.0.blocking_send(Ok(element)).is_err() {
                    break;
                }
            }
            Ok(())
        }
    }
    impl<'de> DeserializeSeed<'de> for Each {
        type Value = ();
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_seq(self)
        }
    }

    let file = std::fs::File::open(path)?;
    let read = Arc::new(AtomicU64::new(0));
    let counted = Counted {
        inner: file,
        read: read.clone(),
    };
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    std::thread::spawn(move || {
        let mut buffered = BufReader::new(counted);
        skip_bom(&mut buffered);
        let mut reader = serde_json::Deserializer::from_reader(buffered);
        if let Err(e) = Each(tx.clone()).deserialize(&mut reader) {
            let _ = tx.blocking_send(Err(e.to_string()));
        }
    });
    Ok((rx, read))
}

/// A reader that counts the bytes read through it.
struct Counted<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: std::io::Read> std::io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}
