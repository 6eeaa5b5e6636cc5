//! `mnemo-top`: a live terminal dashboard for mnemod — the machine, the memory and
//! consolidation, from the daemon's events.

mod app;
mod link;
mod ui;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use ratatui::crossterm::event::{self, Event as TermEvent, KeyEventKind};
use tokio::sync::mpsc;

use app::App;

#[derive(Parser, Debug)]
#[command(name = "mnemo-top", version, about, long_about = None)]
struct Args {
    /// mnemod's socket [default: $XDG_RUNTIME_DIR/mnemo/mnemod.sock].
    #[arg(long, env = "MNEMO_SOCKET")]
    socket: Option<PathBuf>,
    /// Milliseconds between polls of the slower state (status, budget, processes); snapshots
    /// and memories arrive as events whatever this is.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(250..=60_000))]
    refresh_ms: u64,
}

/// Terminal events, read on a thread of their own (crossterm's read blocks).
fn spawn_terminal_reader(tx: mpsc::Sender<TermEvent>) {
    std::thread::spawn(move || loop {
        match event::read() {
            Ok(e) => {
                if tx.blocking_send(e).is_err() {
                    return;
                }
            }
            Err(_) => return,
        }
    });
}

async fn run(args: Args) -> anyhow::Result<()> {
    let socket = args
        .socket
        .unwrap_or_else(mnemo_protocol::paths::default_socket_path);
    let mut app = App::new(socket.clone());
    let (update_tx, mut updates) = mpsc::channel(512);
    let (command_tx, commands) = mpsc::channel(16);
    let link = tokio::spawn(link::run(
        link::Settings {
            socket,
            refresh: Duration::from_millis(args.refresh_ms),
        },
        update_tx,
        commands,
    ));
    // ratatui::init installs a panic hook that restores the terminal before the message.
    let mut terminal = ratatui::init();
    let (key_tx, mut keys) = mpsc::channel(64);
    spawn_terminal_reader(key_tx);
    let result: anyhow::Result<()> = async {
        loop {
            terminal.draw(|f| ui::draw(f, &app)).context("drawing")?;
            tokio::select! {
                Some(update) = updates.recv() => {
                    app.apply(update);
                    // Apply whatever else queued before drawing again.
                    while let Ok(more) = updates.try_recv() {
                        app.apply(more);
                    }
                }
                Some(e) = keys.recv() => {
                    if let TermEvent::Key(key) = e {
                        if key.kind == KeyEventKind::Press {
                            if let Some(command) = app.on_key(key) {
                                let _ = command_tx.send(command).await;
                            }
                        }
                    }
                    // Resizes need nothing but the redraw at the top of the loop.
                }
            }
            if app.quit {
                return Ok(());
            }
        }
    }
    .await;
    ratatui::restore();
    link.abort();
    result
}

fn main() -> anyhow::Result<()> {
    mnemo_protocol::manpage::print_if_asked(<Args as clap::CommandFactory>::command);
    let args = Args::parse();
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "mnemo-top draws in a terminal and reads its keys; run it in one (`mnemo status` \
             prints the same figures once, `--json` for scripts)"
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(run(args))
}
