//! `mnemo export` and `mnemo import`: a store's memories to mnemo's JSONL format (one record
//! per line, every version) and back, streamed page by page with a progress bar, so a file of
//! any size never sits in memory whole; and other tools' files (see `formats`) brought in as
//! new memories.

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use mnemo_client::{Client, ClientError};
use mnemo_protocol::daemon::Status;
use mnemo_protocol::memory::{AddBatch, AddBatchParams, AddParams};
use mnemo_protocol::transfer::{Export, ExportParams, Import, ImportParams, ImportResult, Record};
use mnemo_protocol::NoParams;
use serde::Serialize;

use crate::connect;
use crate::formats::{self, chats, locomo, markdown, mcp_memory, text, Format};
use crate::output::{draw_progress, Output};

/// Records sent per `memory.import` call: large enough to embed in batches, small enough
/// that a refused batch is cheap to retry one by one.
const IMPORT_BATCH: usize = 200;

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Where to write (JSONL); `-` or absent writes to stdout. With --markdown, a folder.
    file: Option<PathBuf>,
    /// Only this namespace.
    #[arg(long, short)]
    namespace: Option<String>,
    /// Markdown for people to read instead: the current memories, one file per namespace and
    /// month (`<namespace>/<YYYY-MM>.md`), importable back with `mnemo import FOLDER`.
    #[arg(long)]
    markdown: bool,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// A `mnemo export` file (`-` reads stdin), the MCP memory server's memory.jsonl, a
    /// ChatGPT or Claude data export's conversations.json, a LoCoMo-style dialogue JSON, or
    /// `.md`/`.txt` notes (a file or a folder).
    file: PathBuf,
    /// What the file holds; told from its name and first line by default.
    #[arg(long, value_enum, default_value = "auto")]
    format: Format,
    /// The namespace foreign memories go to (a mnemo export keeps its own; LoCoMo samples
    /// go to `locomo-<sample_id>` unless this is given).
    #[arg(long, short)]
    namespace: Option<String>,
    /// Stop at the first malformed or refused line instead of skipping it.
    #[arg(long)]
    strict: bool,
}

#[derive(Debug, Default, Serialize)]
struct ImportSummary {
    added: u64,
    skipped: u64,
    /// Lines not imported, each with its number and why.
    rejected: Vec<Rejected>,
}

#[derive(Debug, Serialize)]
struct Rejected {
    /// Where: `line 12`, or a file of a folder of notes.
    at: String,
    error: String,
}

fn progress_bar(json: bool) -> bool {
    std::io::stderr().is_terminal() && !json
}

/// Every page of `memory.export`, each handed to `each` as it arrives.
async fn export_pages(
    client: &mut Client,
    namespace: Option<String>,
    bar: bool,
    mut each: impl FnMut(&[Record]) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    let mut params = ExportParams {
        namespace,
        limit: None,
        cursor: None,
    };
    let (mut seen, mut total) = (0u64, 0u64);
    loop {
        let page = client.call::<Export>(&params).await?;
        total = page.total.unwrap_or(total);
        each(&page.records)?;
        seen += page.records.len() as u64;
        if bar {
            draw_progress("exporting", seen, total);
        }
        match page.next_cursor {
            Some(cursor) => params.cursor = Some(cursor),
            None => break,
        }
    }
    if bar {
        eprint!("\r\x1b[2K");
    }
    Ok(seen)
}

/// The current memories as Markdown files under `dir`, appended to as pages arrive.
async fn export_markdown(
    client: &mut Client,
    args: ExportArgs,
    out: &Output,
) -> anyhow::Result<()> {
    let dir =
        args.file.clone().filter(|f| f != Path::new("-")).context(
            "--markdown writes a folder: name it (mnemo export --markdown ~/mnemo-notes)",
        )?;
    let mut files: std::collections::HashMap<String, std::io::BufWriter<std::fs::File>> =
        Default::default();
    let mut written = 0u64;
    export_pages(client, args.namespace, progress_bar(out.json), |records| {
        for Record::Memory(m) in records {
            if m.valid_to.is_some() {
                continue;
            }
            let name = markdown::file_of(m);
            if !files.contains_key(&name) {
                let path = dir.join(&name);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .with_context(|| format!("cannot create {}", parent.display()))?;
                }
                let mut file = std::io::BufWriter::new(
                    std::fs::File::create(&path)
                        .with_context(|| format!("cannot create {}", path.display()))?,
                );
                file.write_all(markdown::header(m).as_bytes())?;
                files.insert(name.clone(), file);
            }
            let file = files.get_mut(&name).expect("opened above");
            file.write_all(markdown::section(m).as_bytes())?;
            written += 1;
        }
        Ok(())
    })
    .await?;
    for file in files.values_mut() {
        file.flush()?;
    }
    out.value(
        &serde_json::json!({ "folder": dir, "memories": written, "files": files.len() }),
        || {
            format!(
                "exported {written} memories to {} files under {}",
                files.len(),
                dir.display()
            )
        },
    );
    Ok(())
}

pub async fn export(args: ExportArgs, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let mut client = connect(socket).await?;
    if args.markdown {
        return export_markdown(&mut client, args, out).await;
    }
    let to_stdout = args.file.as_deref().is_none_or(|f| f == Path::new("-"));
    // Written beside the target and renamed at the end: an interrupted export leaves no
    // half file under the name.
    let (mut sink, partial): (Box<dyn Write>, Option<PathBuf>) = if to_stdout {
        (Box::new(std::io::stdout().lock()), None)
    } else {
        let target = args.file.clone().expect("a file");
        let partial = target.with_extension("partial");
        let file = std::fs::File::create(&partial)
            .with_context(|| format!("cannot create {}", partial.display()))?;
        (Box::new(std::io::BufWriter::new(file)), Some(partial))
    };
    let bar = !to_stdout && progress_bar(out.json);
    let written = export_pages(&mut client, args.namespace.clone(), bar, |records| {
        for record in records {
            serde_json::to_writer(&mut sink, record)?;
            sink.write_all(b"\n")?;
        }
        Ok(())
    })
    .await?;
    sink.flush()?;
    drop(sink);
    if let (Some(partial), Some(target)) = (partial, &args.file) {
        std::fs::rename(&partial, target)
            .with_context(|| format!("cannot move the export to {}", target.display()))?;
        out.value(
            &serde_json::json!({ "file": target, "records": written }),
            || format!("exported {written} memory versions to {}", target.display()),
        );
    }
    Ok(())
}

/// Sends one batch; a batch mnemod refuses is sent again record by record, so only the
/// lines at fault are rejected (each with its own line number).
async fn send(
    client: &mut Client,
    batch: Vec<(u64, Record)>,
    strict: bool,
    summary: &mut ImportSummary,
) -> anyhow::Result<()> {
    let records = batch.iter().map(|(_, r)| r.clone()).collect();
    match client.call::<Import>(&ImportParams { records }).await {
        Ok(done) => {
            add(summary, &done);
            return Ok(());
        }
        Err(ClientError::Rpc(_)) if batch.len() > 1 => {}
        Err(e) => return Err(e.into()),
    }
    for (line, record) in batch {
        let params = ImportParams {
            records: vec![record],
        };
        match client.call::<Import>(&params).await {
            Ok(done) => add(summary, &done),
            Err(ClientError::Rpc(e)) => {
                let error = e.message.replace("records[0]: ", "");
                if strict {
                    anyhow::bail!("line {line}: {error}");
                }
                summary.rejected.push(Rejected {
                    at: format!("line {line}"),
                    error,
                });
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn add(summary: &mut ImportSummary, done: &ImportResult) {
    summary.added += done.added;
    summary.skipped += done.skipped;
}

pub async fn import(args: ImportArgs, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let mut client = connect(socket).await?;
    let stdin = args.file == Path::new("-");
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
    Ok(())
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
    let bar = size > 0 && progress_bar(out.json);
    let mut summary = ImportSummary::default();
    let mut batch = Vec::with_capacity(IMPORT_BATCH);
    let mut read = 0u64;
    for (n, line) in reader.lines().enumerate() {
        let number = n as u64 + 1;
        let line = line.with_context(|| format!("reading line {number}"))?;
        read += line.len() as u64 + 1;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(&line) {
            Ok(record) => batch.push((number, record)),
            Err(e) => {
                let error = format!("not a mnemo record ({e}); each line must be a JSON object like mnemo export writes");
                if args.strict {
                    send(client, std::mem::take(&mut batch), true, &mut summary).await?;
                    anyhow::bail!(
                        "line {number}: {error}; the {} versions before it were imported, \
                         nothing after it",
                        summary.added + summary.skipped
                    );
                }
                summary.rejected.push(Rejected {
                    at: format!("line {number}"),
                    error,
                });
            }
        }
        if batch.len() == IMPORT_BATCH {
            send(
                client,
                std::mem::take(&mut batch),
                args.strict,
                &mut summary,
            )
            .await?;
            if bar {
                draw_progress("importing", read, size);
            }
        }
    }
    if !batch.is_empty() {
        send(client, batch, args.strict, &mut summary).await?;
    }
    if bar {
        eprint!("\r\x1b[2K");
    }
    Ok(summary)
}

/// Memories of another tool's files on their way to `memory.add_batch`, in batches; a batch
/// mnemod refuses is sent again item by item, so only the items at fault are rejected.
struct Adder<'a> {
    client: &'a mut Client,
    namespace: Option<String>,
    strict: bool,
    pending: Vec<(String, AddParams)>,
    sent: u64,
    summary: ImportSummary,
}

impl Adder<'_> {
    async fn push(&mut self, at: String, mut item: AddParams) -> anyhow::Result<()> {
        if self.namespace.is_some() {
            item.namespace = self.namespace.clone();
        }
        self.pending.push((at, item));
        if self.pending.len() == IMPORT_BATCH {
            self.flush().await?;
        }
        Ok(())
    }

    /// A part of the input that is not one of the format's: stops a strict import (after
    /// what came before it), else is listed and skipped.
    async fn reject(&mut self, at: String, error: String) -> anyhow::Result<()> {
        if self.strict {
            self.flush().await?;
            anyhow::bail!("{at}: {error}; what came before it was imported, nothing after it");
        }
        self.summary.rejected.push(Rejected { at, error });
        Ok(())
    }

    async fn flush(&mut self) -> anyhow::Result<()> {
        let batch = std::mem::take(&mut self.pending);
        if batch.is_empty() {
            return Ok(());
        }
        self.sent += batch.len() as u64;
        let items = batch.iter().map(|(_, item)| item.clone()).collect();
        match self
            .client
            .call::<AddBatch>(&AddBatchParams { items })
            .await
        {
            Ok(_) => return Ok(()),
            Err(ClientError::Rpc(_)) if batch.len() > 1 => {}
            Err(e) => return Err(e.into()),
        }
        for (at, item) in batch {
            let items = vec![item];
            match self
                .client
                .call::<AddBatch>(&AddBatchParams { items })
                .await
            {
                Ok(_) => {}
                Err(ClientError::Rpc(e)) => {
                    self.sent -= 1;
                    let error = e
                        .message
                        .replace("items[0]: ", "")
                        .replace("; nothing was added", "");
                    if self.strict {
                        anyhow::bail!("{at}: {error}");
                    }
                    self.summary.rejected.push(Rejected { at, error });
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

async fn import_foreign(
    client: &mut Client,
    args: &ImportArgs,
    format: Format,
    out: &Output,
) -> anyhow::Result<ImportSummary> {
    let before = client.call::<Status>(&NoParams {}).await?.memories.total;
    let mut adder = Adder {
        client,
        namespace: args.namespace.clone(),
        strict: args.strict,
        pending: Vec::new(),
        sent: 0,
        summary: ImportSummary::default(),
    };
    let path = &args.file;
    match format {
        Format::McpMemory => {
            let file = std::fs::File::open(path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            for (n, line) in BufReader::new(file).lines().enumerate() {
                let at = format!("line {}", n + 1);
                let line = line.with_context(|| format!("reading {at}"))?;
                if line.trim().is_empty() {
                    continue;
                }
                match mcp_memory::memories(&line) {
                    Ok(items) => {
                        for item in items {
                            adder.push(at.clone(), item).await?;
                        }
                    }
                    Err(error) => adder.reject(at, error).await?,
                }
            }
        }
        Format::Locomo | Format::Chatgpt | Format::Claude => {
            let mut elements = formats::array_elements(path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            let mut n = 0;
            while let Some(element) = elements.recv().await {
                n += 1;
                let at = format!("element {n}");
                let element = match element {
                    Ok(element) => element,
                    Err(e) => {
                        adder
                            .reject(
                                at,
                                format!("not valid JSON ({e}); nothing after it was read"),
                            )
                            .await?;
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
                            adder.push(at.clone(), item).await?;
                        }
                    }
                    Err(error) => adder.reject(at, error).await?,
                }
            }
        }
        Format::Text => {
            let notes = if path.is_dir() {
                text::notes_under(path)
                    .with_context(|| format!("cannot read the folder {}", path.display()))?
            } else {
                vec![path.clone()]
            };
            let bar = progress_bar(out.json) && notes.len() > 1;
            for (i, note) in notes.iter().enumerate() {
                let at = note.display().to_string();
                let size = std::fs::metadata(note).map(|m| m.len()).unwrap_or(0);
                if size > text::MAX_NOTE_BYTES {
                    let limit = text::MAX_NOTE_BYTES / (1024 * 1024);
                    adder
                        .reject(at, format!("over {limit} MB: not a note, not read"))
                        .await?;
                } else if formats::looks_binary(note) {
                    adder.reject(at, "binary, not text".into()).await?;
                } else {
                    match std::fs::read_to_string(note) {
                        Ok(content) => {
                            let (items, problems) = text::memories(note, &content);
                            for item in items {
                                adder.push(at.clone(), item).await?;
                            }
                            for problem in problems {
                                adder.reject(at.clone(), problem).await?;
                            }
                        }
                        Err(e) => {
                            adder
                                .reject(at, format!("cannot read it as UTF-8 text: {e}"))
                                .await?
                        }
                    }
                }
                if bar {
                    draw_progress("notes", i as u64 + 1, notes.len() as u64);
                }
            }
            if bar {
                eprint!("\r\x1b[2K");
            }
        }
        Format::Auto | Format::Mnemo => unreachable!("handled by import_mnemo"),
    }
    adder.flush().await?;
    let after = adder
        .client
        .call::<Status>(&NoParams {})
        .await?
        .memories
        .total;
    let mut summary = adder.summary;
    // What was already stored (the same text again) is found, not added: the count says so.
    summary.added = after.saturating_sub(before);
    summary.skipped = adder.sent.saturating_sub(summary.added);
    Ok(summary)
}
