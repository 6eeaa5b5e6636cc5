//! Wiring: builds the components in order, serves, and runs the one shutdown path (signal or
//! `daemon.shutdown`): stop accepting, finish requests in flight, flush the writer, remove
//! the socket, exit 0.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use crate::config::Config;
use crate::embed::{self, EmbedService};
use crate::engine::Engine;
use crate::events::{self, Event};
use crate::hardware::nvml::NvmlProbe;
use crate::hardware::probe::SysinfoProbe;
use crate::hardware::{self, Monitor};
use crate::lock::DataDirLock;
use crate::store::Store;
use crate::{consolidate, readiness, server};

/// How often index maintenance looks for new rows to fold in.
const MAINTENANCE_EVERY: Duration = Duration::from_secs(20);
/// Unindexed rows past which the full-text index is refreshed.
const FOLD_AFTER_ROWS: usize = 2_000;

pub struct RunOptions {
    pub ready_fd: Option<i32>,
}

pub async fn run(config: Config, options: RunOptions) -> anyhow::Result<()> {
    let _lock = DataDirLock::acquire(&config.data_dir)?;
    tracing::info!(data_dir = %config.data_dir.display(), "starting mnemod {}", env!("CARGO_PKG_VERSION"));

    let embed_config = config.clone();
    let embedder = tokio::task::spawn_blocking(move || embed::from_config(&embed_config))
        .await
        .context("embedder start-up panicked")??;
    match embedder.degraded() {
        Some(why) => tracing::warn!("embedder degraded: {why}"),
        None => tracing::info!(
            "embedder {} ready ({} dimensions)",
            embedder.model_id(),
            embedder.dim()
        ),
    }
    let store = Store::open(
        &config.db_dir(),
        embedder.dim(),
        embedder.model_id(),
        &config.store,
    )
    .await
    .with_context(|| format!("opening the database in {}", config.db_dir().display()))?;
    let embed = EmbedService::start(
        embedder,
        config.embedder.batch_size,
        config.embedder.workers,
    );
    let events = events::bus();
    let monitor = Arc::new(Monitor::new(
        Box::new(SysinfoProbe::new(&config.data_dir)),
        Box::new(
            tokio::task::spawn_blocking(NvmlProbe::load)
                .await
                .context("NVML probe panicked")?,
        ),
        config.hardware.clone(),
    ));
    let engine = Engine::new(config.clone(), store.clone(), embed, events, monitor);
    let known = engine
        .known
        .load(&store)
        .await
        .context("reading the stored memories")?;
    tracing::debug!("{known} current memories");
    let router = Arc::new(server::router());

    // Socket activation: systemd holds the socket and passes it; else we bind our own.
    let (listener, activated) = match server::inherited()? {
        Some(listener) => (listener, true),
        None => (server::bind(&config.socket).await?, false),
    };
    tracing::info!(
        socket = %config.socket.display(),
        activated,
        "listening"
    );
    // Signal handlers exist before anyone is told we are ready, so a prompt SIGTERM is graceful.
    tokio::spawn(stop_on_signal(engine.clone(), Signals::install()?));
    readiness::announce(options.ready_fd);

    let maintenance = tokio::spawn(maintain(engine.clone()));
    let hardware = tokio::spawn(hardware::run(engine.clone()));
    let consolidation = tokio::spawn(consolidate::run(engine.clone()));
    tokio::spawn(readiness::watchdog(engine.clone()));
    server::serve(listener, engine.clone(), router).await;

    readiness::stopping();
    maintenance.abort();
    // The sampler writes the snapshots it still holds, then ends.
    let _ = tokio::time::timeout(Duration::from_millis(800), hardware).await;
    // A run in progress records itself as interrupted, to resume after the restart.
    let _ = tokio::time::timeout(Duration::from_millis(800), consolidation).await;
    store.close().await;
    // An activated socket belongs to systemd, which keeps listening for the next start.
    if !activated {
        let _ = std::fs::remove_file(&config.socket);
    }
    tracing::info!("stopped");
    Ok(())
}

struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Self {
                term: signal(SignalKind::terminate()).context("installing the SIGTERM handler")?,
                int: signal(SignalKind::interrupt()).context("installing the SIGINT handler")?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }
}

async fn stop_on_signal(engine: Arc<Engine>, mut signals: Signals) {
    #[cfg(unix)]
    {
        let name = tokio::select! {
            _ = signals.term.recv() => "SIGTERM",
            _ = signals.int.recv() => "SIGINT",
        };
        tracing::info!("{name}: shutting down");
    }
    #[cfg(not(unix))]
    {
        let _ = &mut signals;
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("Ctrl-C: shutting down");
    }
    engine.request_shutdown();
}

async fn maintain(engine: Arc<Engine>) {
    let mut tick = tokio::time::interval(MAINTENANCE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match engine.store.maintain_indexes(FOLD_AFTER_ROWS).await {
            Ok(done) => {
                for what in done {
                    tracing::info!("index maintenance: {what}");
                    let _ = engine
                        .events
                        .send(Event::IndexMaintained { what: what.into() });
                }
            }
            Err(e) => tracing::warn!("index maintenance failed: {e}"),
        }
    }
}
