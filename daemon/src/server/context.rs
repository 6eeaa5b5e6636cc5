//! Handlers of `context.build` and `summary.list`.

use std::sync::Arc;

use mnemo_protocol::context::{Build, BuildParams, Package};
use mnemo_protocol::summary::{List, ListParams, ListResult};
use mnemo_protocol::RpcError;

use super::router::Router;
use super::state::{rpc_error, store_error, State};

pub fn register(r: &mut Router) {
    r.register::<Build, _, _>(build)
        .register::<List, _, _>(summaries);
}

async fn build(engine: Arc<State>, p: BuildParams) -> Result<Package, RpcError> {
    engine.context.build(p).await.map_err(rpc_error)
}

async fn summaries(engine: Arc<State>, p: ListParams) -> Result<ListResult, RpcError> {
    let summaries = engine
        .living
        .list(p.namespace.as_deref(), p.category)
        .await
        .map_err(store_error)?;
    let note = summaries.is_empty().then(|| {
        "no living summaries yet: consolidation writes them while the machine is idle (`mnemo consolidate run` writes them now)".to_string()
    });
    Ok(ListResult { summaries, note })
}
