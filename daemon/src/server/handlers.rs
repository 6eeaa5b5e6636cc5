//! One typed handler per method. Adding a method is one `register` line and its function.

use std::sync::Arc;

use mnemo_protocol::daemon::{
    AdvanceClock, AdvanceClockParams, AdvanceClockResult, Encrypt, EncryptResult, Hello,
    HelloParams, HelloResult, ProcessMemory, Shutdown, ShutdownResult, Status, StatusResult,
};
use mnemo_protocol::graph::EdgeType;
use mnemo_protocol::memory::MAX_CONTENT_BYTES;
use mnemo_protocol::memory::{
    Add, AddBatch, AddBatchParams, AddBatchResult, AddParams, Forget, ForgetParams, ForgetResult,
    Get, GetParams, History, HistoryParams, HistoryResult, List, ListParams, ListResult, Memory,
    Search, SearchParams, SearchResult, Update, UpdateParams, MAX_EDGES_SHOWN,
};
use mnemo_protocol::system::{
    self, Budget, EmbedParams, EmbedResult, ProcessesParams, ProcessesResult, Snapshot,
    SnapshotResult, SystemProfile, MAX_EMBED_TEXTS,
};
use mnemo_protocol::time::{now_micros, parse_micros};
use mnemo_protocol::{NoParams, RpcError, PROTOCOL_VERSION};
use serde_json::Value;

use super::router::Router;
use super::state::State;
use super::state::{memory_page, rpc_error, store_error};
use crate::error::Error;
use crate::store::edges::EdgeFilter;
use crate::store::filter::predicate;
use mnemo_protocol::events::{Subscribe, TopicsParams, Unsubscribe};

pub const DAEMON_NAME: &str = "mnemod";

/// Every method the daemon answers.
pub fn router() -> Router {
    let mut r = Router::default();
    r.register::<Status, _, _>(status)
        .register::<Shutdown, _, _>(shutdown)
        .register::<AdvanceClock, _, _>(advance_clock)
        .register::<Encrypt, _, _>(encrypt)
        .register::<Add, _, _>(add)
        .register::<AddBatch, _, _>(add_batch)
        .register::<Get, _, _>(get)
        .register::<List, _, _>(list)
        .register::<Search, _, _>(search)
        .register::<Update, _, _>(update)
        .register::<History, _, _>(history)
        .register::<Forget, _, _>(forget)
        .register::<system::Embed, _, _>(system_embed)
        .register::<system::Profile, _, _>(system_profile)
        .register::<system::SnapshotNow, _, _>(system_snapshot)
        .register::<system::SystemHistory, _, _>(system_history)
        .register::<system::Processes, _, _>(system_processes)
        .register::<system::SystemBudget, _, _>(system_budget);
    super::consolidate::register(&mut r);
    super::graph::register(&mut r);
    super::entity::register(&mut r);
    super::transfer::register(&mut r);
    super::usermodel::register(&mut r);
    super::project::register(&mut r);
    super::session::register(&mut r);
    super::context::register(&mut r);
    super::agent::register(&mut r);
    r.register_subscriber::<Subscribe, _, _>(|_state, subscriptions, p: TopicsParams| async move {
        Ok::<_, RpcError>(subscriptions.subscribe(p))
    })
    .register_subscriber::<Unsubscribe, _, _>(
        |_state, subscriptions, p: TopicsParams| async move {
            Ok::<_, RpcError>(subscriptions.unsubscribe(p))
        },
    );
    let mut methods = r.methods();
    methods.push(<Hello as mnemo_protocol::Method>::NAME.to_string());
    methods.sort();
    let methods = Arc::new(methods);
    r.register::<Hello, _, _>(move |_engine, p: HelloParams| {
        let methods = methods.clone();
        async move { hello(p, &methods) }
    });
    r
}

fn hello(p: HelloParams, methods: &[String]) -> Result<HelloResult, RpcError> {
    if let Some(v) = p.protocol_version {
        if v != PROTOCOL_VERSION {
            return Err(RpcError::invalid_params(format!(
                "this mnemod speaks protocol {PROTOCOL_VERSION}, the client {v}; install matching versions of mnemo and mnemod"
            )));
        }
    }
    if let Some(client) = p.client {
        tracing::debug!(client, "hello");
    }
    Ok(HelloResult {
        name: DAEMON_NAME.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        protocol_version: PROTOCOL_VERSION,
        capabilities: methods.to_vec(),
    })
}

async fn status(engine: Arc<State>, _: NoParams) -> Result<StatusResult, RpcError> {
    let lance_cache_bytes = engine.store.lance_cache_bytes().await;
    let memory = crate::process::own_memory().map(|m| ProcessMemory {
        held_bytes: engine.held.bytes(),
        lance_cache_bytes: Some(lance_cache_bytes),
        ..m
    });
    Ok(StatusResult {
        pid: std::process::id(),
        uptime_secs: engine.health.started.elapsed().as_secs_f64(),
        version: env!("CARGO_PKG_VERSION").into(),
        protocol_version: PROTOCOL_VERSION,
        data_dir: engine.limits.data_dir.clone(),
        socket: engine.limits.socket.clone(),
        components: engine.health.components(),
        queues: engine.queues(),
        memories: engine.store.memory_counts(),
        counters: engine.counters(),
        reembed: engine.health.reembed(),
        encryption: engine.store.encryption_status(),
        active_sessions: engine.sessions.active(),
        last_context: engine.context.last(),
        watch: engine.watch.status(),
        indexes: engine.maintenance.last_index_state(),
        build: crate::BUILD_PROFILE.into(),
        memory,
    })
}

/// Encrypts the store at rest; answers once every memory is sealed (status shows progress).
async fn encrypt(engine: Arc<State>, _: NoParams) -> Result<EncryptResult, RpcError> {
    let sealed = engine.encrypt().await.map_err(rpc_error)?;
    Ok(EncryptResult {
        sealed,
        key: engine.store.key_location(),
    })
}

/// The configured embedder's vectors of the texts given.
async fn system_embed(engine: Arc<State>, p: EmbedParams) -> Result<EmbedResult, RpcError> {
    if p.texts.len() > MAX_EMBED_TEXTS {
        return Err(RpcError::invalid_params(format!(
            "{} texts; send at most {MAX_EMBED_TEXTS} a request",
            p.texts.len()
        )));
    }
    if let Some(i) = p.texts.iter().position(|t| t.len() > MAX_CONTENT_BYTES) {
        return Err(RpcError::invalid_params(format!(
            "texts[{i}] is over {MAX_CONTENT_BYTES} bytes"
        )));
    }
    let embedder = engine.embed.embedder();
    let (model, dimensions) = (embedder.model_id().to_string(), embedder.dim());
    let vectors = engine
        .embed
        .embed(p.texts)
        .await
        .map_err(|e| rpc_error(e.into()))?;
    Ok(EmbedResult {
        model,
        dimensions,
        vectors,
    })
}

async fn shutdown(engine: Arc<State>, _: NoParams) -> Result<ShutdownResult, RpcError> {
    tracing::info!("shutdown requested by a client");
    // Stop after this reply is on its way: requests in flight, this one included, finish.
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        engine.shutdown.request();
    });
    Ok(ShutdownResult { stopping: true })
}

/// The most a test may move the clock in one call: a year.
const MOST_CLOCK_MOVE_SECS: f64 = 365.0 * 86_400.0;

async fn advance_clock(
    _: Arc<State>,
    p: AdvanceClockParams,
) -> Result<AdvanceClockResult, RpcError> {
    if !(0.0..=MOST_CLOCK_MOVE_SECS).contains(&p.seconds) {
        return Err(RpcError::invalid_params(format!(
            "seconds must be between 0 and {MOST_CLOCK_MOVE_SECS} (a year), not {}",
            p.seconds
        )));
    }
    if !mnemo_protocol::time::advance_clock((p.seconds * 1e6) as i64) {
        return Err(RpcError::invalid_request(
            "this mnemod's clock cannot be moved: daemon.advance_clock is for tests, and is \
             answered only by a mnemod started with --test-clock",
        ));
    }
    Ok(AdvanceClockResult {
        now: mnemo_protocol::time::format_micros(now_micros()),
    })
}

async fn add(engine: Arc<State>, p: AddParams) -> Result<Memory, RpcError> {
    let mut added = engine.ingest.add(vec![p], false).await.map_err(rpc_error)?;
    Ok(added.remove(0).to_protocol())
}

async fn add_batch(engine: Arc<State>, p: AddBatchParams) -> Result<AddBatchResult, RpcError> {
    let added = engine.ingest.add(p.items, true).await.map_err(rpc_error)?;
    Ok(AddBatchResult {
        ids: added.into_iter().map(|r| r.id).collect(),
    })
}

async fn get(engine: Arc<State>, p: GetParams) -> Result<Memory, RpcError> {
    match engine.store.get(&p.id).await.map_err(store_error)? {
        Some(r) => {
            let mut m = r.to_protocol();
            // Names as the entity book knows them (the column holds keys).
            m.entities = r
                .entities
                .iter()
                .filter_map(|key| engine.entities.by_key(&r.namespace, key))
                .map(|e| e.name)
                .collect();
            // Links to other memories; its mentions are the names above.
            let filter = EdgeFilter {
                namespace: Some(&r.namespace),
                types: &[],
                min_weight: 0.0,
            };
            let mut edges = engine
                .store
                .edges()
                .touching(std::slice::from_ref(&r.lineage), &filter)
                .await
                .map_err(store_error)?;
            edges.retain(|e| e.edge_type != EdgeType::Mentions);
            edges.sort_by(|a, b| b.weight.total_cmp(&a.weight).then(a.id.cmp(&b.id)));
            m.edges = edges
                .iter()
                .take(MAX_EDGES_SHOWN)
                .map(|e| e.to_protocol())
                .collect();
            Ok(m)
        }
        None => Err(rpc_error(Error::memory_not_found(&p.id))),
    }
}

async fn list(engine: Arc<State>, p: ListParams) -> Result<ListResult, RpcError> {
    let limit = p.limit.unwrap_or(50);
    if !(1..=1000).contains(&limit) {
        return Err(RpcError::invalid_params(format!(
            "limit is {limit}; it must be 1–1000"
        )));
    }
    let predicate = predicate(&p.filter).map_err(|e| RpcError::invalid_params(e.to_string()))?;
    let (rows, next_cursor) = memory_page(&engine, &predicate, p.cursor.as_deref(), limit).await?;
    Ok(ListResult {
        memories: rows.iter().map(|r| r.to_protocol()).collect(),
        next_cursor,
    })
}

async fn search(engine: Arc<State>, p: SearchParams) -> Result<SearchResult, RpcError> {
    engine.recall.search(p).await.map_err(rpc_error)
}

async fn update(engine: Arc<State>, p: UpdateParams) -> Result<Memory, RpcError> {
    Ok(engine
        .ingest
        .update(p)
        .await
        .map_err(rpc_error)?
        .to_protocol())
}

async fn history(engine: Arc<State>, p: HistoryParams) -> Result<HistoryResult, RpcError> {
    let record = engine
        .store
        .get(&p.id)
        .await
        .map_err(store_error)?
        .ok_or_else(|| rpc_error(Error::memory_not_found(&p.id)))?;
    let versions = engine
        .store
        .lineage(&record.lineage)
        .await
        .map_err(store_error)?;
    Ok(HistoryResult {
        versions: versions.iter().map(|r| r.to_protocol()).collect(),
    })
}

async fn forget(engine: Arc<State>, p: ForgetParams) -> Result<ForgetResult, RpcError> {
    let deleted = engine.ingest.forget(p).await.map_err(rpc_error)?;
    if deleted > 0 {
        engine.forgotten().await.map_err(rpc_error)?;
    }
    Ok(ForgetResult { deleted })
}

async fn system_profile(engine: Arc<State>, _: NoParams) -> Result<SystemProfile, RpcError> {
    if let Some(p) = engine.hardware.profile() {
        return Ok(p);
    }
    // In the first moments after start the sampler may not have finished detecting.
    let monitor = engine.hardware.clone();
    tokio::task::spawn_blocking(move || monitor.detect_profile())
        .await
        .map_err(|e| RpcError::internal(format!("detecting the profile: {e}")))
}

async fn system_snapshot(engine: Arc<State>, _: NoParams) -> Result<SnapshotResult, RpcError> {
    Ok(SnapshotResult {
        snapshot: engine.hardware.snapshot(),
        gpu_status: engine.hardware.gpu_status(),
    })
}

fn time_param(field: &str, value: &Option<String>, default: i64) -> Result<i64, RpcError> {
    match value {
        Some(v) => parse_micros(v).map_err(|e| RpcError::invalid_params(format!("{field}: {e}"))),
        None => Ok(default),
    }
}

async fn system_history(
    engine: Arc<State>,
    p: system::SystemHistoryParams,
) -> Result<system::SystemHistoryResult, RpcError> {
    let now = now_micros();
    let until = time_param("until", &p.until, now + 1)?;
    let since = time_param("since", &p.since, until - 3_600_000_000)?;
    if since >= until {
        return Err(RpcError::invalid_params("since must be before until"));
    }
    if p.step == Some(0) {
        return Err(RpcError::invalid_params("step must be at least 1 second"));
    }
    let mut points = engine
        .store
        .system()
        .snapshots_between(since, until)
        .await
        .map_err(store_error)?;
    let stored: std::collections::HashSet<String> = points.iter().map(|s| s.at.clone()).collect();
    points.extend(engine.hardware.unflushed().into_iter().filter(|s| {
        parse_micros(&s.at).is_ok_and(|t| t >= since && t < until) && !stored.contains(&s.at)
    }));
    points.sort_by_key(|s| parse_micros(&s.at).unwrap_or_default());
    let (step, points) = match p.step {
        Some(step) => (step, crate::hardware::downsample::downsample(&points, step)),
        None => (engine.hardware.config.snapshot_interval_secs as u32, points),
    };
    let points = points
        .iter()
        .map(|s| select_fields(s, p.fields.as_deref()))
        .collect::<Result<_, _>>()?;
    Ok(system::SystemHistoryResult { step, points })
}

/// The snapshot as JSON, cut down to `fields` (plus `at`) when given.
fn select_fields(snapshot: &Snapshot, fields: Option<&[String]>) -> Result<Value, RpcError> {
    let Value::Object(all) = serde_json::to_value(snapshot).unwrap_or_default() else {
        return Ok(Value::Null);
    };
    let Some(fields) = fields else {
        return Ok(Value::Object(all));
    };
    let mut out = serde_json::Map::new();
    out.insert("at".into(), all["at"].clone());
    for f in fields {
        let v = all.get(f).ok_or_else(|| {
            let known: Vec<&String> = all.keys().collect();
            RpcError::invalid_params(format!("unknown field `{f}`; snapshots have {known:?}"))
        })?;
        out.insert(f.clone(), v.clone());
    }
    Ok(Value::Object(out))
}

async fn system_processes(
    engine: Arc<State>,
    p: ProcessesParams,
) -> Result<ProcessesResult, RpcError> {
    let (taken_at, mut processes, inference) = engine.hardware.processes();
    if let Some(cat) = &p.category {
        processes.retain(|e| &e.category == cat);
    }
    match p.sort.as_deref().unwrap_or("cpu") {
        "cpu" => processes.sort_by(|a, b| b.cpu_pct.total_cmp(&a.cpu_pct)),
        "memory" => processes.sort_by_key(|p| std::cmp::Reverse(p.rss_bytes)),
        "name" => processes.sort_by(|a, b| a.name.cmp(&b.name)),
        other => {
            return Err(RpcError::invalid_params(format!(
                "sort `{other}`: use cpu, memory or name"
            )))
        }
    }
    processes.truncate(p.limit.unwrap_or(50));
    Ok(ProcessesResult {
        taken_at,
        processes,
        inference,
    })
}

async fn system_budget(engine: Arc<State>, _: NoParams) -> Result<Budget, RpcError> {
    Ok(engine.hardware.budget())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_daemon_answers_exactly_the_declared_methods() {
        let registered = super::router().methods();
        let declared: Vec<String> = mnemo_protocol::all_methods()
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(registered, declared);
    }
}
