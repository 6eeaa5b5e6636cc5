//! `mnemo import`: mnemo's own JSONL into `memory.import`, other tools' files (see `formats`)
//! into `memory.add_batch`, both through one [`Importer`] that sends in batches and, when
//! mnemod refuses a batch, sends it again item by item so only the items at fault are
//! rejected, each named by where it stood in the input.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::atomic::Ordering;

use anyhow::Context;
use mnemo_client::{Client, ClientError};
use mnemo_protocol::daemon::Status;
use mnemo_protocol::memory::{AddBatch, AddBatchParams, AddParams};
use mnemo_protocol::transfer::{Import, ImportParams, Record};
use mnemo_protocol::{Method, NoParams};
use serde::Serialize;

use super::ImportArgs;
use crate::connect;
use crate::formats::{self, chats, locomo, mcp_memory, text, Format};
use crate::output::Output;
use crate::progress::ProgressReport;

/// Items sent per call: large enough to embed in batches, small enough that a refused batch
/// is cheap to send again one by one.
const IMPORT_BATCH: usize = 200;
/// Bytes of items sent per call, at most (one item may be more): well inside the frame a
/// request may fill, so a backup of large memories goes in as it came out.
const IMPORT_BATCH_BYTES: usize = mnemo_protocol::DEFAULT_MAX_FRAME_BYTES / 4;

#[derive(Debug, Default, Serialize)]
struct ImportSummary {
    added: u64,
    skipped: u64,
    /// Parts of the input not imported, each with where it stood and why.
    rejected: Vec<Rejected>,
}

#[derive(Debug, Serialize)]
struct Rejected {
    /// Where: `line 12`, `element 3`, or a file of a folder of notes.
    at: String,
    error: String,
}

/// What an [`Importer`] sends: its method, and how a reply and a refusal read.
trait Item: Clone + Serialize {
    type Method: Method;
    /// What the input calls these, for "the N … before it were imported".
    const NOUN: &'static str;
    /// The position prefix a refusal of a one-item batch carries.
    const POSITION: &'static str;
    fn params(items: Vec<Self>) -> <Self::Method as Method>::Params;
    /// (added, skipped) as the reply counts them.
    fn counted(reply: &<Self::Method as Method>::Result, sent: u64) -> (u64, u64);
}

impl Item for Record {
    type Method = Import;
    const NOUN: &'static str = "versions";
    const POSITION: &'static str = "records[0]: ";
    fn params(records: Vec<Self>) -> ImportParams {
        ImportParams { records }
    }
    fn counted(reply: &mnemo_protocol::transfer::ImportResult, _: u64) -> (u64, u64) {
        (reply.added, reply.skipped)
    }
}

impl Item for AddParams {
    type Method = AddBatch;
    const NOUN: &'static str = "memories";
    const POSITION: &'static str = "items[0]: ";
    fn params(items: Vec<Self>) -> AddBatchParams {
        AddBatchParams { items }
    }
    /// An add answers ids whether new or found again: the store's count tells them apart
    /// (see `import_foreign`).
    fn counted(_: &mnemo_protocol::memory::AddBatchResult, sent: u64) -> (u64, u64) {
        (sent, 0)
    }
}

struct Importer<'a, T: Item> {
    client: &'a mut Client,
    strict: bool,
    pending: Vec<(String, T)>,
    /// The size of `pending`, as JSON.
    pending_bytes: usize,
    summary: ImportSummary,
}

impl<'a, T: Item> Importer<'a, T> {
    fn new(client: &'a mut Client, strict: bool) -> Self {
        Self {
            client,
            strict,
            pending: Vec::with_capacity(IMPORT_BATCH),
            pending_bytes: 0,
            summary: ImportSummary::default(),
        }
    }

    /// Queues an item; answers whether a batch went out with it (for progress).
    async fn push(&mut self, at: String, item: T) -> anyhow::Result<bool> {
        self.pending_bytes += serde_json::to_vec(&item).map_or(0, |v| v.len());
        self.pending.push((at, item));
        if self.pending.len() < IMPORT_BATCH && self.pending_bytes < IMPORT_BATCH_BYTES {
            return Ok(false);
        }
        self.flush().await?;
        Ok(true)
    }

    /// A part of the input that is not one of the format's: stops a strict import (after
    /// what came before it), else is listed and skipped.
    async fn reject(&mut self, at: String, error: String) -> anyhow::Result<()> {
        if self.strict {
            self.flush().await?;
            anyhow::bail!(
                "{at}: {error}; the {} {} before it were imported, nothing after it",
                self.summary.added + self.summary.skipped,
                T::NOUN
            );
        }
        self.summary.rejected.push(Rejected { at, error });
        Ok(())
    }

    async fn send(&mut self, items: Vec<T>) -> Result<(), ClientError> {
        let sent = items.len() as u64;
        let reply = self.client.call::<T::Method>(&T::params(items)).await?;
        let (added, skipped) = T::counted(&reply, sent);
        self.summary.added += added;
        self.summary.skipped += skipped;
        Ok(())
    }

    async fn flush(&mut self) -> anyhow::Result<()> {
        let batch = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        if batch.is_empty() {
            return Ok(());
        }
        let items = batch.iter().map(|(_, item)| item.clone()).collect();
        match self.send(items).await {
            Ok(()) => return Ok(()),
            Err(ClientError::Rpc(_)) if batch.len() > 1 => {}
            Err(ClientError::Rpc(e)) => return self.refused(batch[0].0.clone(), &e.message),
            Err(e) => return Err(e.into()),
        }
        for (at, item) in batch {
            match self.send(vec![item]).await {
                Ok(()) => {}
                Err(ClientError::Rpc(e)) => self.refused(at, &e.message)?,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// An item mnemod refused: its error, without the batch position, stops a strict import.
    fn refused(&mut self, at: String, message: &str) -> anyhow::Result<()> {
        let error = message
            .replace(T::POSITION, "")
            .replace("; nothing was added", "")
            .replace("; nothing was imported", "");
        if self.strict {
            anyhow::bail!("{at}: {error}");
        }
        self.summary.rejected.push(Rejected { at, error });
        Ok(())
    }

    /// A line as read: its text, or `None` when it is not UTF-8 (rejected, as any bad line
    /// is). A read that fails sends what was read before it, then stops the import.
    async fn line(
        &mut self,
        at: &str,
        read: std::io::Result<Vec<u8>>,
    ) -> anyhow::Result<Option<String>> {
        let bytes = match read {
            Ok(bytes) => bytes,
            Err(e) => {
                self.flush().await?;
                return Err(e).with_context(|| format!("reading {at}"));
            }
        };
        match String::from_utf8(bytes) {
            Ok(mut line) => {
                if line.ends_with('\r') {
                    line.pop();
                }
                Ok(Some(line))
            }
            Err(e) => {
                let error = format!(
                    "not UTF-8 text (a bad byte at column {}); save the file as UTF-8",
                    e.utf8_error().valid_up_to() + 1
                );
                self.reject(at.to_string(), error).await?;
                Ok(None)
            }
        }
    }

    async fn finish(mut self) -> anyhow::Result<ImportSummary> {
        self.flush().await?;
        Ok(self.summary)
    }
}

pub async fn import(mut args: ImportArgs, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let mut client = connect(socket).await?;
    let stdin = args.file == Path::new("-");
    // Notes keep their path as their source: absolute, so a watch of the same folder, or a
    // note deleted later, finds them whatever directory the import ran from.
    if !stdin {
        args.file = std::fs::canonicalize(&args.file)
            .with_context(|| format!("cannot open {}", args.file.display()))?;
    }
    let format = match args.format {
        Format::Auto if stdin => Format::Mnemo,
        Format::Auto => formats::detect(&args.file)?,
        given => given,
    };
    let summary = match format {
        Format::Mnemo | Format::Auto => import_mnemo(&mut client, &args, out).await?,
        foreign => import_foreign(&mut client, &args, foreign, out).await?,
    };
    out.value(&summary, || {
        let mut lines = vec![format!(
            "imported {} memories or versions ({} already there)",
            summary.added, summary.skipped
        )];
        for r in &summary.rejected {
            lines.push(format!("  {}: {}", r.at, r.error));
        }
        if !summary.rejected.is_empty() {
            lines.push(format!(
                "{} skipped (--strict stops at the first)",
                summary.rejected.len()
            ));
        }
        lines.join("\n")
    });
    // Part of a backup missing is a failure a script must see, even when the rest went in.
    if !summary.rejected.is_empty() {
        let (refused, taken) = (summary.rejected.len(), summary.added + summary.skipped);
        return Err(crate::output::Reported(if taken == 0 {
            format!("nothing was imported: all {refused} records were refused (each named above)")
        } else {
            format!(
                "{refused} records were refused (each named above); the other {taken} were \
                 imported or already there"
            )
        })
        .into());
    }
    Ok(())
}

/// Progress through an input of `size` bytes; none when its size is unknown (stdin).
fn sized_progress(size: u64, out: &Output) -> ProgressReport {
    match size {
        0 => ProgressReport::off(),
        _ => ProgressReport::new(out.json),
    }
}

/// mnemo's own JSONL, streamed line by line into `memory.import`.
async fn import_mnemo(
    client: &mut Client,
    args: &ImportArgs,
    out: &Output,
) -> anyhow::Result<ImportSummary> {
    let (reader, size): (Box<dyn BufRead>, u64) = if args.file == Path::new("-") {
        (Box::new(std::io::stdin().lock()), 0)
    } else {
        let file = std::fs::File::open(&args.file)
            .with_context(|| format!("cannot open {}", args.file.display()))?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        (Box::new(BufReader::new(file)), size)
    };
    let mut reader = reader;
    formats::skip_bom(&mut reader);
    let mut progress = sized_progress(size, out);
    let mut importer = Importer::<Record>::new(client, args.strict);
    let mut read = 0u64;
    for (n, line) in reader.split(b'\n').enumerate() {
        let at = format!("line {}", n + 1);
        let Some(line) = importer.line(&at, line).await? else {
            continue;
        };
        read += line.len() as u64 + 1;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(&line) {
            Ok(record) => {
                if importer.push(at, record).await? {
                    progress.show("importing", read, size);
                }
            }
            Err(e) => {
                let error = format!(
                    "not a mnemo record ({e}); each line must be a JSON object like mnemo \
                     export writes"
                );
                importer.reject(at, error).await?;
            }
        }
    }
    let summary = importer.finish().await?;
    progress.finish();
    Ok(summary)
}

/// Another tool's files, as new memories. What was already stored (the same text again) is
/// found, not added: the store's count before and after says how many were new.
async fn import_foreign(
    client: &mut Client,
    args: &ImportArgs,
    format: Format,
    out: &Output,
) -> anyhow::Result<ImportSummary> {
    let before = client.call::<Status>(&NoParams {}).await?.memories.total;
    let mut importer = Importer::<AddParams>::new(client, args.strict);
    // The namespace asked for, over the one the format chose.
    let placed = |at: &str, mut item: AddParams| {
        if args.namespace.is_some() {
            item.namespace = args.namespace.clone();
        }
        (at.to_string(), item)
    };
    let path = &args.file;
    match format {
        Format::McpMemory => {
            let file = std::fs::File::open(path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            for (n, line) in BufReader::new(file).split(b'\n').enumerate() {
                let at = format!("line {}", n + 1);
                let Some(line) = importer.line(&at, line).await? else {
                    continue;
                };
                if line.trim().is_empty() {
                    continue;
                }
                match mcp_memory::memories(&line) {
                    Ok(items) => {
                        for item in items {
                            let (at, item) = placed(&at, item);
                            importer.push(at, item).await?;
                        }
                    }
                    Err(error) => importer.reject(at, error).await?,
                }
            }
        }
        Format::Locomo | Format::Chatgpt | Format::Claude => {
            let (mut elements, read) = formats::array_elements(path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            let size = std::fs::metadata(path).map_or(0, |m| m.len());
            let mut progress = sized_progress(size, out);
            let mut n = 0;
            while let Some(element) = elements.recv().await {
                progress.show("importing", read.load(Ordering::Relaxed).min(size), size);
                n += 1;
                let at = format!("element {n}");
                let element = match element {
                    Ok(element) => element,
                    Err(e) => {
                        let error = format!("not valid JSON ({e}); nothing after it was read");
                        importer.reject(at, error).await?;
                        break;
                    }
                };
                let items = match format {
                    Format::Chatgpt => chats::chatgpt(&element),
                    Format::Claude => chats::claude(&element),
                    _ => Ok(locomo::turns(&element, &locomo::namespace(&element))),
                };
                match items {
                    Ok(items) => {
                        for item in items {
                            let (at, item) = placed(&at, item);
                            importer.push(at, item).await?;
                        }
                    }
                    Err(error) => importer.reject(at, error).await?,
                }
            }
            progress.finish();
        }
        Format::Text => {
            let notes = if path.is_dir() {
                text::notes_under(path)
                    .with_context(|| format!("cannot read the folder {}", path.display()))?
            } else {
                vec![path.clone()]
            };
            let mut progress = match notes.len() {
                0 | 1 => ProgressReport::off(),
                _ => ProgressReport::new(out.json),
            };
            for (i, note) in notes.iter().enumerate() {
                let at = note.display().to_string();
                match text::read_note(note) {
                    Ok((items, problems)) => {
                        for item in items {
                            let (at, item) = placed(&at, item);
                            importer.push(at, item).await?;
                        }
                        for problem in problems {
                            importer.reject(at.clone(), problem).await?;
                        }
                    }
                    Err(why) => importer.reject(at, why).await?,
                }
                progress.show("notes", i as u64 + 1, notes.len() as u64);
            }
            progress.finish();
        }
        Format::Auto | Format::Mnemo => unreachable!("handled by import_mnemo"),
    }
    let mut summary = importer.finish().await?;
    let after = client.call::<Status>(&NoParams {}).await?.memories.total;
    let sent = summary.added;
    summary.added = after.saturating_sub(before);
    summary.skipped = sent.saturating_sub(summary.added);
    Ok(summary)
}
