//! `mnemo export` and `mnemo import`: a store's memories, beliefs and sessions to mnemo's
//! JSONL format (one record per line, every version) and back, streamed page by page with a progress bar, so a file of
//! any size never sits in memory whole; and other tools' files (see `formats`) brought in as
//! new memories.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use mnemo_client::Client;
use mnemo_protocol::transfer::{Export, ExportParams, ExportPart, Record};

use crate::connect;
use crate::formats::{markdown, Format};
use crate::output::Output;
use crate::private;
use crate::progress::ProgressReport;

mod import;
pub use import::import;

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

/// Every page of `memory.export` of one part (memories, beliefs or sessions), each handed to
/// `each` as it arrives.
async fn export_pages(
    client: &mut Client,
    part: ExportPart,
    namespace: Option<String>,
    progress: &mut ProgressReport,
    mut each: impl FnMut(&[Record]) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    let mut params = ExportParams {
        part: Some(part),
        namespace,
        limit: None,
        cursor: None,
    };
    let label = match part {
        ExportPart::Memories => "exporting memories",
        ExportPart::Beliefs => "exporting beliefs",
        ExportPart::Sessions => "exporting sessions",
    };
    let (mut seen, mut total) = (0u64, 0u64);
    loop {
        let page = client.call::<Export>(&params).await?;
        total = page.total.unwrap_or(total);
        each(&page.records)?;
        seen += page.records.len() as u64;
        progress.show(label, seen, total);
        match page.next_cursor {
            Some(cursor) => params.cursor = Some(cursor),
            None => break,
        }
    }
    Ok(seen)
}

/// Says on stderr that an export of an encrypted store is plaintext: mnemod opens what it
/// exports, so the file needs the care the store's key had.
async fn warn_if_sealed(client: &mut Client) {
    use mnemo_protocol::daemon::{EncryptionMode, Status};
    let Ok(status) = client.call::<Status>(&mnemo_protocol::NoParams {}).await else {
        return;
    };
    if status.encryption.mode != EncryptionMode::Off {
        eprintln!(
            "note: the store is encrypted, but an export is plaintext; the file is readable by \
             you alone (0600): keep it as safe as the key"
        );
    }
}

/// A new file beside `target`, created exclusively (never one already there, nor through a
/// link) and readable by its owner alone: the export is written there, then renamed.
fn partial_beside(target: &Path) -> std::io::Result<(std::fs::File, PathBuf)> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "export".into());
    let dir = target.parent().filter(|p| !p.as_os_str().is_empty());
    let dir = dir.unwrap_or(Path::new("."));
    let mut tries = 0;
    loop {
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = dir.join(format!(
            ".{name}.{}.{nonce:08x}.partial",
            std::process::id()
        ));
        match private::options().create_new(true).open(&path) {
            Ok(file) => return Ok((file, path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 8 => tries += 1,
            Err(e) => return Err(e),
        }
    }
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
    warn_if_sealed(client).await;
    let mut files: std::collections::HashMap<String, std::io::BufWriter<std::fs::File>> =
        Default::default();
    let mut written = 0u64;
    let mut progress = ProgressReport::new(out.json);
    export_pages(
        client,
        ExportPart::Memories,
        args.namespace,
        &mut progress,
        |records| {
            for record in records {
                let Record::Memory(m) = record else {
                    continue;
                };
                if m.valid_to.is_some() {
                    continue;
                }
                let name = markdown::file_of(m);
                if !files.contains_key(&name) {
                    let path = dir.join(&name);
                    if let Some(parent) = path.parent() {
                        private::dir(parent)
                            .with_context(|| format!("cannot create {}", parent.display()))?;
                    }
                    let mut file = std::io::BufWriter::new(
                        private::options()
                            .create(true)
                            .truncate(true)
                            .open(&path)
                            .and_then(|f| private::owner_only(&f).map(|()| f))
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
        },
    )
    .await?;
    progress.finish();
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
    warn_if_sealed(&mut client).await;
    // Written beside the target and renamed at the end: an interrupted export leaves no
    // half file under the name.
    let (mut sink, partial): (Box<dyn Write>, Option<PathBuf>) = if to_stdout {
        (Box::new(std::io::stdout().lock()), None)
    } else {
        let target = args.file.clone().expect("a file");
        let (file, partial) = partial_beside(&target)
            .with_context(|| format!("cannot create a file beside {}", target.display()))?;
        (Box::new(std::io::BufWriter::new(file)), Some(partial))
    };
    let mut progress = match to_stdout {
        true => ProgressReport::off(),
        false => ProgressReport::new(out.json),
    };
    let mut written = 0;
    for part in ExportPart::ALL {
        let namespace = args.namespace.clone();
        written += export_pages(&mut client, part, namespace, &mut progress, |records| {
            for record in records {
                serde_json::to_writer(&mut sink, record)?;
                sink.write_all(b"\n")?;
            }
            Ok(())
        })
        .await?;
    }
    progress.finish();
    sink.flush()?;
    drop(sink);
    if let (Some(partial), Some(target)) = (partial, &args.file) {
        std::fs::rename(&partial, target)
            .with_context(|| format!("cannot move the export to {}", target.display()))?;
        out.value(
            &serde_json::json!({ "file": target, "records": written }),
            || {
                format!(
                    "exported {written} records (memory and belief versions, sessions) to {}",
                    target.display()
                )
            },
        );
    }
    Ok(())
}
