//! Wiring: builds the components in order, serves, and runs the one shutdown path (signal or
//! `daemon.shutdown`): stop accepting, finish requests in flight, flush the writer, remove
//! the socket, exit 0.

use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::access::AccessRecorder;
use crate::agent::Agent;
use crate::config::Config;
use crate::consolidate::{Consolidation, Consolidator};
use crate::context::tokens::Tokenizer;
use crate::context::ContextBuilder;
use crate::embed::{self, EmbedService, ReembedProgress};
use crate::events;
use crate::graph::{EntityBook, Gazetteer, Graph};
use crate::hardware::{Monitor, Sampler};
use crate::held::Held;
use crate::ingest::Ingest;
use crate::knowledge::Knowledge;
use crate::living::Living;
use crate::lock::DataDirLock;
use crate::maintenance::Maintenance;
use crate::readiness;
use crate::recall::Recall;
use crate::server::{self, ActivationFd, Limits, State};
use crate::sessions::Sessions;
use crate::shutdown::Shutdown;
use crate::status::Health;
use crate::store::{KeySettings, Store};
use crate::usermodel::UserModel;
use crate::watch::Watch;
use mnemo_protocol::daemon::EncryptionMode;

pub struct RunOptions {
    pub ready_fd: Option<i32>,
    /// The socket systemd passed, taken from the environment before the runtime started.
    pub activation: Option<ActivationFd>,
}

/// Builds every component, giving each only the handles it uses, serves until shutdown,
/// then stops them in order.
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
        &KeySettings {
            encrypt: config.security.encrypt,
            key_store: config.security.key_store,
            key_file: config.key_file(),
        },
    )
    .await
    .with_context(|| format!("opening the database in {}", config.db_dir().display()))?;
    let held = Held::over(store.clone());
    let embed = EmbedService::start(
        embedder,
        config.embedder.batch_size,
        config.embedder.workers,
    )
    .context("starting the embedding workers")?;
    let events = events::bus();
    let shutdown = Shutdown::default();
    let (data_dir, hardware) = (config.data_dir.clone(), config.hardware.clone());
    let monitor = Arc::new(
        tokio::task::spawn_blocking(move || Monitor::of_this_machine(&data_dir, hardware))
            .await
            .context("NVML probe panicked")?,
    );
    let (access, access_task) = AccessRecorder::start(store.clone());
    let names = Arc::new(Gazetteer::new(store.clone()));
    let entities = Arc::new(EntityBook::new(store.clone()));
    let usermodel = Arc::new(UserModel::new(
        store.clone(),
        embed.clone(),
        &config.usermodel,
    ));
    let knowledge = Knowledge {
        names: names.clone(),
        entities: entities.clone(),
        usermodel: usermodel.clone(),
    };
    let ingest = Arc::new(
        Ingest::start(
            store.clone(),
            embed.clone(),
            events.clone(),
            access.clone(),
            knowledge.clone(),
            config.salience.clone(),
        )
        .await
        .context("reading the stored memories")?,
    );
    let graph = Arc::new(Graph::new(held.clone()));
    let recall = Arc::new(Recall::new(
        held.clone(),
        embed.clone(),
        access.clone(),
        knowledge,
        graph.clone(),
        config.search.clone(),
    ));
    let consolidation = Arc::new(Consolidation::new(config.consolidate.clone()));
    let active_sessions = Arc::new(AtomicU64::new(0));
    let profiles = config.context.profiles();
    let sessions = Arc::new(Sessions::new(
        store.clone(),
        ingest.clone(),
        usermodel.clone(),
        consolidation.clone(),
        config.sessions.clone(),
        config.llm.clone(),
        profiles.keys().cloned().collect(),
        active_sessions.clone(),
    ));
    sessions.load().await.context("reading the sessions")?;
    let agent = Arc::new(Agent::new(
        store.clone(),
        ingest.clone(),
        usermodel.clone(),
        config.agent.clone(),
    ));
    let episodes = agent.load().await.context("reading the episodes")?;
    tracing::debug!("{episodes} episodes");
    let living = Arc::new(Living::new(store.clone()));
    let kind = config.context.tokenizer;
    let tokenizer = tokio::task::spawn_blocking(move || Tokenizer::load(kind))
        .await
        .context("loading the tokenizer panicked")?;
    let context = Arc::new(ContextBuilder {
        recall: recall.clone(),
        usermodel: usermodel.clone(),
        sessions: sessions.clone(),
        living: living.clone(),
        agent: agent.clone(),
        hardware: monitor.clone(),
        tokenizer,
        profiles,
        last: Default::default(),
    });
    let reembed = Arc::new(ReembedProgress::default());
    let (watch, watchers) = Watch::start(
        &config.watch,
        ingest.clone(),
        store.clone(),
        consolidation.activity.watch(),
        shutdown.clone(),
    );
    let maintenance = Maintenance::new(held.clone(), events.clone());
    let state = Arc::new(State {
        limits: Limits {
            max_frame_bytes: config.max_frame_bytes,
            max_in_flight: config.max_in_flight,
            data_dir: config.data_dir.display().to_string(),
            socket: config.socket.display().to_string(),
        },
        ingest,
        recall,
        graph,
        entities: entities.clone(),
        usermodel: usermodel.clone(),
        sessions: sessions.clone(),
        agent: agent.clone(),
        watch,
        context,
        living: living.clone(),
        store: store.clone(),
        held: held.clone(),
        maintenance: maintenance.clone(),
        embed: embed.clone(),
        hardware: monitor.clone(),
        consolidation: consolidation.clone(),
        health: Health {
            started: Instant::now(),
            writes: store.writer().clone(),
            embed: embed.clone(),
            reembed: reembed.clone(),
            hardware: monitor.clone(),
            db_dir: config.db_dir(),
            shutdown: shutdown.clone(),
        },
        events: events.clone(),
        shutdown: shutdown.clone(),
        in_flight: AtomicUsize::new(0),
        connections: AtomicUsize::new(0),
    });
    let router = Arc::new(server::router());

    consolidation.recover(&store).await;
    // Socket activation: systemd holds the socket and passes it; else we bind our own.
    let activated = options.activation.is_some();
    let listener = match options.activation {
        Some(fd) => server::from_activation(fd)?,
        None => server::bind(&config.socket).await?,
    };
    tracing::info!(
        socket = %config.socket.display(),
        activated,
        "listening"
    );
    // Signal handlers exist before anyone is told we are ready, so a prompt SIGTERM is graceful.
    tokio::spawn(stop_on_signal(shutdown.clone(), Signals::install()?));
    // Start-up made and dropped copies of the model's weights and passes over every memory.
    crate::process::release_freed_memory();
    readiness::announce(options.ready_fd);

    let entity_writer = tokio::spawn(crate::graph::entities::keep_written(
        entities,
        shutdown.clone(),
    ));
    let available_memory = {
        let monitor = monitor.clone();
        move || monitor.snapshot().and_then(|s| s.ram_available_bytes)
    };
    let maintenance = tokio::spawn(maintenance.run(
        Duration::from_secs(config.consolidate.version_retention_hours * 3600),
        available_memory,
        shutdown.clone(),
    ));
    tokio::spawn(usermodel.clone().keep_embedded(shutdown.clone()));
    let reembedding = tokio::spawn(embed::reembed(
        store.clone(),
        embed.clone(),
        shutdown.clone(),
        reembed,
    ));
    let hardware = tokio::spawn(
        Sampler {
            monitor: monitor.clone(),
            store: store.clone(),
            embed: embed.clone(),
            events: events.clone(),
            shutdown: shutdown.clone(),
            active_sessions,
        }
        .run(),
    );
    let consolidation = tokio::spawn(crate::consolidate::run(Arc::new(Consolidator {
        state: consolidation,
        store: store.clone(),
        held: held.clone(),
        embed: embed.clone(),
        events,
        hardware: monitor,
        shutdown: shutdown.clone(),
        llm: config.llm.clone(),
        db_dir: config.db_dir(),
        access,
        entities: state.entities.clone(),
        names,
        usermodel,
        living,
        agent,
    })));
    tokio::spawn(sessions.end_silent(shutdown.clone()));
    tokio::spawn(readiness::watchdog(shutdown.clone()));
    if state.store.encryption_status().mode == EncryptionMode::Converting {
        // An encryption was interrupted: finish it, so no memory stays half findable.
        let engine = state.clone();
        tokio::spawn(async move {
            tracing::info!("resuming the interrupted encryption");
            if let Err(e) = engine.encrypt().await {
                tracing::warn!("resuming the encryption failed (run `mnemo encrypt`): {e}");
            }
        });
    }
    server::serve(listener, state.clone(), router).await;

    readiness::stopping();
    reembedding.abort();
    // A note being taken in finishes its write; the rest waits for the next start's scan.
    for watcher in watchers {
        let _ = tokio::time::timeout(Duration::from_secs(2), watcher).await;
    }
    // The sampler writes the snapshots it still holds, then ends.
    let _ = tokio::time::timeout(Duration::from_millis(800), hardware).await;
    // A run in progress records itself as interrupted, to resume after the restart.
    let _ = tokio::time::timeout(Duration::from_millis(800), consolidation).await;
    // Accesses still queued are written; a purge a forget asked for runs now.
    drop(state);
    let _ = tokio::time::timeout(Duration::from_millis(500), access_task).await;
    let _ = tokio::time::timeout(Duration::from_secs(2), entity_writer).await;
    let _ = tokio::time::timeout(Duration::from_secs(5), maintenance).await;
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

async fn stop_on_signal(shutdown: Shutdown, mut signals: Signals) {
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
    shutdown.request();
}
