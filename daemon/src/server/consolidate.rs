//! Handlers of `consolidate.*`.

use std::sync::Arc;

use mnemo_protocol::consolidate::{
    ConsolidateRun, ConsolidateRuns, ConsolidateStatus, ConsolidationStatus, RunStarted,
    RunsParams, RunsResult,
};
use mnemo_protocol::{NoParams, RpcError};

use super::router::Router;
use super::state::store_error;
use super::state::State;

const MAX_RUNS: usize = 500;

pub fn register(r: &mut Router) {
    r.register::<ConsolidateRun, _, _>(run)
        .register::<ConsolidateStatus, _, _>(status)
        .register::<ConsolidateRuns, _, _>(runs);
}

async fn run(engine: Arc<State>, _: NoParams) -> Result<RunStarted, RpcError> {
    if engine.shutdown.is_requested() {
        return Err(RpcError::shutting_down());
    }
    Ok(engine.consolidation.request_run())
}

async fn status(engine: Arc<State>, _: NoParams) -> Result<ConsolidationStatus, RpcError> {
    Ok(engine.consolidation.status())
}

async fn runs(engine: Arc<State>, p: RunsParams) -> Result<RunsResult, RpcError> {
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
