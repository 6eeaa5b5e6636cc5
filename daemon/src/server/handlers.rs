//! One typed handler per method. Adding a method is one `register` line and its function.

use std::sync::Arc;

use mnemo_client::protocol::daemon::{
    Hello, HelloParams, HelloResult, Shutdown, ShutdownResult, Status, StatusResult,
};
use mnemo_client::protocol::memory::{
    Add, AddBatch, AddBatchParams, AddBatchResult, AddParams, Forget, ForgetParams, ForgetResult,
    Get, GetParams, History, HistoryParams, HistoryResult, List, ListParams, ListResult, Memory,
    Search, SearchParams, SearchResult, Update, UpdateParams,
};
use mnemo_client::protocol::{NoParams, RpcError, PROTOCOL_VERSION};

use super::router::Router;
use crate::engine::Engine;
use crate::ingest::{self, not_found, store_error};
use crate::recall;
use crate::store::filter::predicate;

pub const DAEMON_NAME: &str = "mnemod";

/// Every method the daemon answers.
pub fn router() -> Router {
    let mut r = Router::default();
    r.register::<Status, _, _>(status)
        .register::<Shutdown, _, _>(shutdown)
        .register::<Add, _, _>(add)
        .register::<AddBatch, _, _>(add_batch)
        .register::<Get, _, _>(get)
        .register::<List, _, _>(list)
        .register::<Search, _, _>(search)
        .register::<Update, _, _>(update)
        .register::<History, _, _>(history)
        .register::<Forget, _, _>(forget);
    let mut methods = r.methods();
    methods.push(<Hello as mnemo_client::protocol::Method>::NAME.to_string());
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

async fn status(engine: Arc<Engine>, _: NoParams) -> Result<StatusResult, RpcError> {
    Ok(StatusResult {
        pid: std::process::id(),
        uptime_secs: engine.started.elapsed().as_secs_f64(),
        version: env!("CARGO_PKG_VERSION").into(),
        protocol_version: PROTOCOL_VERSION,
        data_dir: engine.config.data_dir.display().to_string(),
        socket: engine.config.socket.display().to_string(),
        components: engine.components(),
        queues: engine.queues(),
    })
}

async fn shutdown(engine: Arc<Engine>, _: NoParams) -> Result<ShutdownResult, RpcError> {
    tracing::info!("shutdown requested by a client");
    // Stop after this reply is on its way: requests in flight, this one included, finish.
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        engine.request_shutdown();
    });
    Ok(ShutdownResult { stopping: true })
}

async fn add(engine: Arc<Engine>, p: AddParams) -> Result<Memory, RpcError> {
    let mut added = ingest::add(&engine, vec![p], false).await?;
    Ok(added.remove(0).to_protocol())
}

async fn add_batch(engine: Arc<Engine>, p: AddBatchParams) -> Result<AddBatchResult, RpcError> {
    let added = ingest::add(&engine, p.items, true).await?;
    Ok(AddBatchResult {
        ids: added.into_iter().map(|r| r.id).collect(),
    })
}

async fn get(engine: Arc<Engine>, p: GetParams) -> Result<Memory, RpcError> {
    match engine.store.get(&p.id).await.map_err(store_error)? {
        Some(r) => Ok(r.to_protocol()),
        None => Err(not_found(&p.id)),
    }
}

async fn list(engine: Arc<Engine>, p: ListParams) -> Result<ListResult, RpcError> {
    let limit = p.limit.unwrap_or(50);
    if !(1..=1000).contains(&limit) {
        return Err(RpcError::invalid_params(format!(
            "limit is {limit}; it must be 1–1000"
        )));
    }
    let predicate = predicate(&p.filter).map_err(|e| RpcError::invalid_params(e.to_string()))?;
    let rows = engine
        .store
        .page(&predicate, p.cursor.as_deref(), limit)
        .await
        .map_err(store_error)?;
    let next_cursor = (rows.len() == limit)
        .then(|| rows.last().map(|r| r.id.clone()))
        .flatten();
    Ok(ListResult {
        memories: rows.iter().map(|r| r.to_protocol()).collect(),
        next_cursor,
    })
}

async fn search(engine: Arc<Engine>, p: SearchParams) -> Result<SearchResult, RpcError> {
    recall::search(&engine, p).await
}

async fn update(engine: Arc<Engine>, p: UpdateParams) -> Result<Memory, RpcError> {
    Ok(ingest::update(&engine, p).await?.to_protocol())
}

async fn history(engine: Arc<Engine>, p: HistoryParams) -> Result<HistoryResult, RpcError> {
    let record = engine
        .store
        .get(&p.id)
        .await
        .map_err(store_error)?
        .ok_or_else(|| not_found(&p.id))?;
    let versions = engine
        .store
        .lineage(&record.lineage)
        .await
        .map_err(store_error)?;
    Ok(HistoryResult {
        versions: versions.iter().map(|r| r.to_protocol()).collect(),
    })
}

async fn forget(engine: Arc<Engine>, p: ForgetParams) -> Result<ForgetResult, RpcError> {
    Ok(ForgetResult {
        deleted: ingest::forget(&engine, p).await?,
    })
}
