//! `mnemo`: the command line for mnemod.

mod agent;
mod bench;
mod consolidate;
mod doctor;
mod encrypt;
mod entity;
mod formats;
mod graph;
mod launch;
mod mcp;
mod memory;
mod output;
mod private;
use mnemo_client::progress;
mod project;
mod session;
mod system;
mod transfer;
mod usermodel;

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use mnemo_client::{Client, ClientError};
use mnemo_protocol::daemon::{Hello, HelloParams, Shutdown, Status};
use mnemo_protocol::paths;
use mnemo_protocol::{NoParams, PROTOCOL_VERSION};

use output::Output;

/// mnemo: a local memory service for personal AI.
///
/// Talks to mnemod over its local socket. Every command takes --json for scripts.
/// Exit codes: 0 success, 1 the request failed, 2 a usage error, 69 mnemod is not running.
#[derive(Parser, Debug)]
#[command(name = "mnemo", version, about, long_about)]
pub struct Cli {
    /// mnemod's socket [default: $XDG_RUNTIME_DIR/mnemo/mnemod.sock].
    #[arg(long, env = "MNEMO_SOCKET", global = true)]
    socket: Option<PathBuf>,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Show the daemon's state: version, uptime, components, queues.
    Status,
    /// Check that mnemod answers, and how fast.
    Ping,
    /// Stop the daemon gracefully.
    Shutdown,
    /// Print shell completions (bash, zsh, fish, elvish, powershell).
    Completions { shell: clap_complete::Shell },
    #[command(flatten)]
    Memory(memory::MemoryCommand),
    /// The machine: profile, live snapshot, history, processes, budget.
    #[command(subcommand)]
    System(system::SystemCommand),
    /// What a memory or an entity is linked to (`mnemo graph <id>`, `mnemo graph entity:Maria`),
    /// and the strongest path between two (`mnemo graph path A B`).
    Graph(graph::GraphArgs),
    /// Who and what the memories mention, most mentioned first (`--type person`,
    /// `--prefix ma`, `--sort recent`).
    Entities(entity::EntitiesArgs),
    /// One entity: its forms, the memories that mention it, the entities mentioned with it.
    Entity(entity::EntityArgs),
    /// What the memories say about the person and the people they mention: facts,
    /// preferences, rules, constraints, goals (`--type`, `--subject Maria`, `--all` for
    /// superseded ones, `--as-of` for a past time).
    Beliefs(usermodel::BeliefsArgs),
    /// One belief: its evidence and how it changed.
    Belief(usermodel::BeliefArgs),
    /// Preferences, strongest first; `mnemo prefs set coding.indentation tabs` records one
    /// that memories cannot override, `mnemo prefs forget ID|DOMAIN.KEY` removes one.
    Prefs(usermodel::PrefsArgs),
    /// Who the person is, as the memories tell: name, roles, places, languages, people.
    Whoami(usermodel::WhoamiArgs),
    /// The projects memories point into (by their `cwd` or file paths), most recent first.
    Projects(project::ProjectsArgs),
    /// One project (by id or a path inside it): languages, frameworks, build system, README,
    /// remote, its recent memories and beliefs.
    Project(project::ProjectArgs),
    /// Conversations whose messages are memories: `start` one, `say` messages into it, `end`
    /// it (its summary is written), `show` or `list` them.
    #[command(subcommand)]
    Session(session::SessionCommand),
    /// The package an AI starts a conversation from: who the person is, what is going on,
    /// the session, and what is relevant to QUERY — under a token budget.
    Context(session::ContextArgs),
    /// The living summaries consolidation keeps: commitments, people, projects, tensions,
    /// mood, narrative, goals, beliefs.
    Summaries(session::SummariesArgs),
    /// Episodes: what an action (edit, command, tool call, task) did, recorded so later
    /// actions are warned (`mnemo episode record --help` shows a shell hook).
    #[command(subcommand)]
    Episode(agent::EpisodeCommand),
    /// Warnings before acting: past failures on these files or this command, what worked
    /// afterwards, and learned procedures that start here. Nothing when nothing matches.
    Triggers(agent::TriggersArgs),
    /// Procedures learned from repeated episodes: what worked, and what kept failing.
    Procedures(agent::ProceduresArgs),
    /// Implicit memory: active hours, session lengths, most used tools, commands and
    /// projects, typical durations, topics by time of day.
    Stats(agent::StatsArgs),
    /// Measure ingest, search latency and retrieval quality through the socket (runs
    /// mnemo-bench, built beside mnemo from source).
    Bench(bench::BenchArgs),
    /// Consolidate now (fold accesses, decay, merge duplicates, summarise, compact storage);
    /// `status` and `runs` show the idle state and past runs.
    Consolidate(consolidate::ConsolidateArgs),
    /// Encrypt memories at rest: content and metadata sealed with a key kept in a 0600 file
    /// (created if missing; back it up). Vectors, times and tags stay plain: see the README.
    /// New stores are encrypted from the start with `[security] encrypt = true`.
    Encrypt,
    /// Write every memory, every version, to a JSONL file (mnemo's own format, lossless).
    Export(transfer::ExportArgs),
    /// Read a `mnemo export` file back: ids, versions and times kept, vectors made again;
    /// what is already stored is skipped, a malformed line is reported with its number.
    Import(transfer::ImportArgs),
    /// Serve MCP on stdio for Claude, Cursor, VS Code and other MCP clients: tools to remember,
    /// recall, update and forget, forwarded to mnemod (started when nothing answers).
    Mcp(mcp::McpArgs),
    /// Check the installation (binaries, config, data dir, model, service, daemon, GPU) and
    /// say how to fix each problem.
    Doctor,
}

/// Content from the argument, or from stdin when it is absent or `-`.
pub fn content_or_stdin(arg: Option<String>) -> anyhow::Result<String> {
    match arg.as_deref() {
        Some("-") | None => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text)?;
            let text = text.trim_end_matches('\n').to_string();
            if text.trim().is_empty() {
                anyhow::bail!("no content: give it as an argument or pipe it on stdin");
            }
            Ok(text)
        }
        Some(text) => Ok(text.to_string()),
    }
}

pub async fn connect(socket: &std::path::Path) -> Result<Client, ClientError> {
    Client::connect(socket).await
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let out = Output { json: cli.json };
    let socket = cli
        .socket
        .clone()
        .unwrap_or_else(paths::default_socket_path);
    match cli.command {
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "mnemo", &mut std::io::stdout());
        }
        Command::Status => {
            let status = connect(&socket).await?.call::<Status>(&NoParams {}).await?;
            out.status(&status);
        }
        Command::Ping => {
            let mut client = connect(&socket).await?;
            let started = std::time::Instant::now();
            let hello = client
                .call::<Hello>(&HelloParams {
                    client: Some("mnemo".into()),
                    protocol_version: Some(PROTOCOL_VERSION),
                })
                .await?;
            out.ping(&hello, started.elapsed());
        }
        Command::Shutdown => {
            let result = connect(&socket)
                .await?
                .call::<Shutdown>(&NoParams {})
                .await?;
            out.value(&result, || "mnemod is stopping".into());
        }
        Command::Memory(cmd) => memory::run(cmd, &socket, &out).await?,
        Command::System(cmd) => system::run(cmd, &socket, &out).await?,
        Command::Bench(args) => bench::run(args, &socket)?,
        Command::Consolidate(args) => consolidate::run(args, &socket, &out).await?,
        Command::Graph(args) => graph::run(args, &socket, &out).await?,
        Command::Entities(args) => entity::list(args, &socket, &out).await?,
        Command::Entity(args) => entity::get(args, &socket, &out).await?,
        Command::Beliefs(args) => usermodel::beliefs(args, &socket, &out).await?,
        Command::Belief(args) => usermodel::belief(args, &socket, &out).await?,
        Command::Prefs(args) => usermodel::prefs(args, &socket, &out).await?,
        Command::Whoami(args) => usermodel::whoami(args, &socket, &out).await?,
        Command::Projects(args) => project::list(args, &socket, &out).await?,
        Command::Project(args) => project::get(args, &socket, &out).await?,
        Command::Session(cmd) => session::run(cmd, &socket, &out).await?,
        Command::Context(args) => session::context(args, &socket, &out).await?,
        Command::Summaries(args) => session::summaries(args, &socket, &out).await?,
        Command::Episode(cmd) => agent::episode(cmd, &socket, &out).await?,
        Command::Triggers(args) => agent::triggers(args, &socket, &out).await?,
        Command::Procedures(args) => agent::procedures(args, &socket, &out).await?,
        Command::Stats(args) => agent::stats(args, &socket, &out).await?,
        Command::Encrypt => encrypt::run(&socket, &out).await?,
        Command::Doctor => doctor::run(&socket, out.json).await?,
        Command::Mcp(args) => mcp::run(args, &socket).await?,
        Command::Export(args) => transfer::export(args, &socket, &out).await?,
        Command::Import(args) => transfer::import(args, &socket, &out).await?,
    }
    Ok(())
}

fn main() -> ExitCode {
    restore_default_sigpipe();
    mnemo_protocol::manpage::print_if_asked(Cli::command);
    let cli = Cli::parse();
    // `mnemo mcp` owns stdout for the protocol: its errors go to stderr as text.
    let json = cli.json && !matches!(cli.command, Command::Mcp(_));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            output::error(json, &e);
            ExitCode::from(mnemo_client::exit_status(&e))
        }
    }
}

/// Rust starts with SIGPIPE ignored, so printing to a closed pipe (`mnemo entities | head`)
/// panics; the default action ends the command quietly, as any Unix tool does.
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first in `main`, before any thread starts; SIG_DFL is a valid action.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
