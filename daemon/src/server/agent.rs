//! Handlers of `episode.record`, `memory.triggers`, `procedure.list|get` and `stats.list`.

use std::sync::Arc;

use mnemo_protocol::agent::{
    GetProcedure, ListProcedures, ListStats, ProcedureGetParams, ProcedureGetResult,
    ProcedureListParams, ProcedureListResult, RecordEpisode, RecordParams, RecordResult,
    StatsListParams, StatsListResult, Triggers, TriggersParams, TriggersResult,
};
use mnemo_protocol::RpcError;

use super::router::Router;
use super::state::{rpc_error, store_error, State};

pub fn register(r: &mut Router) {
    r.register::<RecordEpisode, _, _>(record)
        .register::<Triggers, _, _>(triggers)
        .register::<ListProcedures, _, _>(list_procedures)
        .register::<GetProcedure, _, _>(get_procedure)
        .register::<ListStats, _, _>(list_stats);
}

/// An episode of a session joins it: its namespace, and its working directory unless the
/// episode names one.
async fn record(engine: Arc<State>, mut p: RecordParams) -> Result<RecordResult, RpcError> {
    if let Some(id) = &p.state.session_id {
        let (namespace, cwd) = engine.sessions.place_of(id).map_err(rpc_error)?;
        match &p.namespace {
            Some(n) if *n != namespace => {
                return Err(RpcError::invalid_params(format!(
                    "session {id} is in namespace `{namespace}`, not `{n}`; leave namespace out"
                )))
            }
            _ => p.namespace = Some(namespace),
        }
        if p.state.cwd.is_none() {
            p.state.cwd = cwd;
        }
    }
    let episode = engine.agent.record(p).await.map_err(rpc_error)?;
    Ok(RecordResult { episode })
}

async fn triggers(engine: Arc<State>, p: TriggersParams) -> Result<TriggersResult, RpcError> {
    engine.agent.triggers(p).await.map_err(rpc_error)
}

async fn list_procedures(
    engine: Arc<State>,
    p: ProcedureListParams,
) -> Result<ProcedureListResult, RpcError> {
    let procedures = engine.agent.procedures(&p);
    let note = procedures.is_empty().then(|| {
        "no procedures yet: consolidation learns them from episodes that repeat (`mnemo episode record`, then `mnemo consolidate run`)".to_string()
    });
    Ok(ProcedureListResult { procedures, note })
}

async fn get_procedure(
    engine: Arc<State>,
    p: ProcedureGetParams,
) -> Result<ProcedureGetResult, RpcError> {
    let procedure = engine.agent.procedure(&p.id).map_err(rpc_error)?;
    Ok(ProcedureGetResult { procedure })
}

async fn list_stats(engine: Arc<State>, p: StatsListParams) -> Result<StatsListResult, RpcError> {
    let stats = engine.agent.stats(&p).await.map_err(store_error)?;
    let note = stats.is_empty().then(|| {
        "no stats yet: consolidation writes them while the machine is idle (`mnemo consolidate run` writes them now)".to_string()
    });
    Ok(StatsListResult { stats, note })
}
