//! `mnemod`: the mnemo memory daemon.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use mnemo_daemon::config::{Config, EmbedderKind, LogFormat, Overrides};
use mnemo_daemon::daemon::{self, RunOptions};

/// mnemod keeps your memories for local AI tools and answers them over a local socket.
///
/// Runs in the foreground; stop it with Ctrl-C, SIGTERM or `mnemo shutdown`.
/// Configuration: defaults, then the config file, then MNEMO_* variables and flags.
#[derive(Parser, Debug)]
#[command(name = "mnemod", version, about, long_about, args_override_self = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    args: RunArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the daemon in the foreground (the default).
    Run,
    /// Print the effective configuration as TOML and exit.
    Config,
}

#[derive(clap::Args, Debug, Clone, Default)]
struct RunArgs {
    /// Config file [default: $XDG_CONFIG_HOME/mnemo/config.toml].
    #[arg(long, env = "MNEMO_CONFIG", global = true)]
    config: Option<PathBuf>,
    /// Data directory: database, model, lock [default: $XDG_DATA_HOME/mnemo].
    #[arg(long, env = "MNEMO_DATA_DIR", global = true)]
    data_dir: Option<PathBuf>,
    /// Socket path [default: $XDG_RUNTIME_DIR/mnemo/mnemod.sock].
    #[arg(long, env = "MNEMO_SOCKET", global = true)]
    socket: Option<PathBuf>,
    /// Log level or tracing filter (error, warn, info, debug, trace).
    #[arg(long, env = "MNEMO_LOG_LEVEL", global = true)]
    log_level: Option<String>,
    #[arg(long, env = "MNEMO_LOG_FORMAT", value_enum, global = true)]
    log_format: Option<LogFormat>,
    /// Embedder: minilm (default), hashed (no model, lexical only) or http.
    #[arg(long, env = "MNEMO_EMBEDDER", value_enum, global = true)]
    embedder: Option<EmbedderKind>,
    /// Directory holding model.safetensors, config.json and tokenizer.json.
    #[arg(long, env = "MNEMO_MODEL_DIR", global = true)]
    model_dir: Option<PathBuf>,
    /// Write `READY=1` to this file descriptor once the socket accepts, then close it.
    #[arg(long, global = true)]
    ready_fd: Option<i32>,
    /// For tests: answer `daemon.advance_clock`, which moves this mnemod's clock ahead.
    #[arg(long, global = true, hide = true)]
    test_clock: bool,
}

impl RunArgs {
    fn overrides(&self) -> Overrides {
        Overrides {
            data_dir: self.data_dir.clone(),
            socket: self.socket.clone(),
            log_level: self.log_level.clone(),
            log_format: self.log_format,
            embedder: self.embedder,
            model_dir: self.model_dir.clone(),
        }
    }
}

/// LanceDB logs every file it writes at info; keep it to warnings unless asked for. Its vector
/// index builder warns of each IVF partition a fold finds empty or past a delta's count, which
/// a fold of a few hundred new rows does for most of them (37,853 lines loading 1M memories):
/// both are expected and handled there, so only its errors show.
const QUIET_DEPENDENCIES: &str = ",lance=warn,lancedb=warn,lance_index=warn,lance_io=warn,lance_file=warn,lance_table=warn,datafusion=warn,lance::index::vector::builder=error";

/// The log filter for `--log-level`: a bare level quiets the dependencies; a value naming
/// targets (`mnemo_daemon=debug,lance=info`) is taken whole. Anything else is refused, since
/// tracing would read an unknown word as a target to log and so log nothing else.
fn log_filter(log_level: &str) -> Result<tracing_subscriber::EnvFilter, String> {
    const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];
    let directives = if log_level.contains('=') {
        log_level.to_string()
    } else if LEVELS.contains(&log_level.trim().to_ascii_lowercase().as_str()) {
        format!("{}{QUIET_DEPENDENCIES}", log_level.trim())
    } else {
        return Err(format!(
            "log level {log_level:?} is not one of {} nor a tracing filter naming targets \
             (e.g. mnemo_daemon=debug,lance=info)",
            LEVELS.join(", ")
        ));
    };
    tracing_subscriber::EnvFilter::try_new(&directives)
        .map_err(|e| format!("log level {log_level:?} is not a tracing filter: {e}"))
}

fn init_logging(config: &Config, filter: tracing_subscriber::EnvFilter) {
    use std::io::IsTerminal;
    // Colours only on a terminal: a log file (install.sh's, launchd's) gets plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    match config.log_format {
        LogFormat::Human => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// glibc's allocator tuning for the whole process: set before any thread starts.
fn tune_memory() {
    // glibc gives every thread that allocates an arena of its own and keeps what each freed;
    // with Lance's and Tokio's threads that is hundreds of MB held for nothing, and two arenas
    // search as fast (`docs/benchmarks.md`, process tuning). A user's own MALLOC_ARENA_MAX
    // wins.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only changes the allocator's tuning; no allocation is in flight on
        // another thread yet.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
    // glibc raises its mmap threshold to the largest block freed (up to 32 MB), after which
    // the large transient buffers of Lance's reads come from the arenas and stay there; a
    // fixed threshold gives them back. A user's own MALLOC_MMAP_THRESHOLD_ wins.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
        // SAFETY: as above.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
        }
    }
    // Lance reads up to 2 GiB ahead of a scan's consumer by default; 32 MiB keeps a large
    // compaction's memory down and searches as fast. Lance reads it at its first scan.
    lance_default("LANCE_DEFAULT_IO_BUFFER_SIZE", 32 << 20);
    // Lance holds up to 128 MiB of an ANN fold's new rows, assigned to partitions, before it
    // writes them out; 16 MiB halves what a large fold adds to the resident memory, in the
    // same time.
    lance_default("LANCE_SHUFFLE_BATCH_BYTES", 16 << 20);
    // Lance scores a full-text index's partitions 16 to a task, so the segments of a large
    // store's index (`store.advanced.text_index_segment_rows`) were scored one after another
    // on one core; a task each lets them run at once.
    lance_default("LANCE_FTS_SEARCH_CHUNK", 1);
}

/// Sets Lance's environment variable `name` to `value` unless the user set it: before any
/// thread starts, so no other thread reads the environment meanwhile.
fn lance_default(name: &str, value: u64) {
    if std::env::var_os(name).is_none() {
        std::env::set_var(name, value.to_string());
    }
}

fn main() -> std::process::ExitCode {
    // Everything mnemod creates (database, lock, socket) is for this user alone.
    #[cfg(unix)]
    // SAFETY: umask has no preconditions and cannot fail.
    unsafe {
        libc::umask(0o077);
    }
    tune_memory();
    mnemo_protocol::manpage::print_if_asked(<Cli as clap::CommandFactory>::command);
    let cli = Cli::parse();
    let args = cli.args;
    if args.test_clock {
        mnemo_protocol::time::allow_clock_moves();
    }
    let print_config = matches!(cli.command, Some(Command::Config));
    let config = match Config::load(args.config.as_deref(), &args.overrides()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mnemod: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    if print_config {
        print!("{}", toml::to_string_pretty(&config).unwrap_or_default());
        return std::process::ExitCode::SUCCESS;
    }
    let filter = match log_filter(&config.log_level) {
        Ok(filter) => filter,
        Err(e) => {
            eprintln!("mnemod: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    init_logging(&config, filter);
    for warning in &config.warnings {
        tracing::warn!("config: {warning}");
    }
    // Before any thread exists: the environment may only change while single-threaded.
    let activation = mnemo_daemon::activation_fd();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("mnemod")
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mnemod: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(daemon::run(
        config,
        RunOptions {
            ready_fd: args.ready_fd,
            activation,
        },
    ));
    // Do not wait for blocking tasks (an embedding batch) past shutdown.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("mnemod: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// What a subscriber with `log_filter(level)` writes of four events: a warning from
    /// Lance's vector index builder, from `lance::dataset` and from mnemod, info from `lance::io`.
    /// One test at a time: the events' callsites are shared, and tracing caches whether a
    /// callsite is wanted across the subscribers alive, so a test whose filter drops one
    /// could hide it for a while from another's that keeps it (a CI run lost the builder's
    /// warning so).
    fn logged(level: &str) -> String {
        static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
        let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        #[derive(Clone, Default)]
        struct Sink(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Sink {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let sink = Sink::default();
        let writer = sink.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(log_filter(level).unwrap())
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(target: "lance::index::vector::builder", "from lance::index::vector::builder");
            tracing::warn!(target: "lance::dataset", "from lance::dataset");
            tracing::info!(target: "lance::io", "from lance::io");
            tracing::warn!("from mnemod");
        });
        let bytes = sink.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn a_bare_level_drops_the_vector_builders_partition_warnings_but_keeps_lances_others() {
        let text = logged("info");
        assert!(
            !text.contains("from lance::index::vector::builder"),
            "{text}"
        );
        assert!(
            !text.contains("from lance::io"),
            "info from Lance is quiet: {text}"
        );
        assert!(text.contains("from lance::dataset"), "{text}");
        assert!(text.contains("from mnemod"), "{text}");
    }

    #[test]
    fn a_word_that_is_no_level_is_refused_and_says_what_would_do() {
        let e = log_filter("verbose").unwrap_err();
        assert!(e.contains("\"verbose\"") && e.contains("debug"), "{e}");
        assert!(log_filter("lance=loud").is_err());
        assert!(log_filter("DEBUG").is_ok());
    }

    #[test]
    fn a_filter_naming_targets_is_taken_whole() {
        let text = logged("info,lance=info");
        assert!(text.contains("from lance::io"), "{text}");
        assert!(
            text.contains("from lance::index::vector::builder"),
            "{text}"
        );
    }
}
