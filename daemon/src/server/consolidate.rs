//! Handlers of `consolidate.*`.

use std::sync::Arc;

use mnemo_client::protocol::consolidate::{
    Run, RunStarted, Runs, RunsParams, RunsResult, Status, StatusResult,
};
use mnemo_client::protocol::{NoParams, RpcError};

use super::router::Router;
use crate::engine::Engine;
use crate::ingest::store_error;

const MAX_RUNS: usize = 500;

pub fn register(r: &mut Router) {
    r.register::<Run, _, _>(run)
        .register::<Status, _, _>(status)
        .register::<Runs, _, _>(runs);
}

async fn run(engine: Arc<Engine>, _: NoParams) -> Result<RunStarted, RpcError> {
    if engine.is_shutting_down() {
        return Err(RpcError::shutting_down());
    }
    Ok(engine.consolidation.request_run())
}

async fn status(engine: Arc<Engine>, _: NoParams) -> Result<StatusResult, RpcError> {
    Ok(engine.consolidation.status())
}

async fn runs(engine: Arc<Engine>, p: RunsParams) -> Result<RunsResult, RpcError> {
    let limit = p.limit.unwrap_or(20);
    if limit == 0 || limit > MAX_RUNS {
        return Err(RpcError::invalid_params(format!(
            "limit is {limit}; it must be 1–{MAX_RUNS}"
        )));
    }
    let runs = engine
        .store
        .runs()
        .recent(limit)
        .await
        .map_err(store_error)?;
    Ok(RunsResult { runs })
}
