//! Handlers of `memory.export` (every version of the memories, then the beliefs and the
//! sessions, page by page) and `memory.import`.

use std::sync::Arc;

use mnemo_protocol::memory::{Filter, MAX_LABEL_BYTES};
use mnemo_protocol::transfer::{
    Export, ExportParams, ExportPart, ExportResult, Import, ImportParams, ImportResult, Record,
    MAX_TRANSFER_RECORDS,
};
use mnemo_protocol::RpcError;

use super::router::Router;
use super::state::memory_page;
use super::state::{rpc_error, store_error, State};
use crate::paging::Page;
use crate::sessions::Sessions;
use crate::store::filter::predicate_all_versions;
use crate::usermodel::UserModel;

/// Versions one export page holds unless asked otherwise.
const DEFAULT_PAGE: usize = 500;

pub fn register(r: &mut Router) {
    r.register::<Export, _, _>(export)
        .register::<Import, _, _>(import);
}

async fn export(engine: Arc<State>, p: ExportParams) -> Result<ExportResult, RpcError> {
    let limit = p.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_TRANSFER_RECORDS).contains(&limit) {
        return Err(RpcError::invalid_params(format!(
            "limit is {limit}; it must be 1–{MAX_TRANSFER_RECORDS}"
        )));
    }
    if p.namespace
        .as_ref()
        .is_some_and(|n| n.len() > MAX_LABEL_BYTES)
    {
        return Err(RpcError::invalid_params(format!(
            "namespace is over {MAX_LABEL_BYTES} bytes"
        )));
    }
    let part = p.part.unwrap_or_default();
    if part != ExportPart::Memories {
        let namespace = p.namespace.as_deref();
        let records = match part {
            ExportPart::Beliefs => engine.usermodel.exported(namespace),
            _ => engine.sessions.exported(namespace),
        };
        let total = records.len() as u64;
        let page = Page::new(Some(limit), MAX_TRANSFER_RECORDS, p.cursor.as_deref())
            .map_err(RpcError::invalid_params)?;
        let first = p.cursor.is_none();
        let (records, next_cursor) = page.of(records);
        return Ok(ExportResult {
            records,
            next_cursor,
            total: first.then_some(total),
        });
    }
    let filter = Filter {
        namespace: p.namespace,
        ..Default::default()
    };
    let predicate =
        predicate_all_versions(&filter).map_err(|e| RpcError::invalid_params(e.to_string()))?;
    let total = match p.cursor {
        None => Some(engine.store.count(&predicate).await.map_err(store_error)? as u64),
        Some(_) => None,
    };
    let (rows, next_cursor) = memory_page(&engine, &predicate, p.cursor.as_deref(), limit).await?;
    Ok(ExportResult {
        records: rows
            .iter()
            .map(|r| Record::Memory(Box::new(r.to_protocol())))
            .collect(),
        next_cursor,
        total,
    })
}

/// Memories, beliefs and sessions each go to their component. Imported episodes join the
/// triggered layer's index at once.
async fn import(engine: Arc<State>, p: ImportParams) -> Result<ImportResult, RpcError> {
    let episodes = p
        .records
        .iter()
        .any(|r| matches!(r, Record::Memory(m) if m.action.is_some()));
    // Beliefs and sessions are checked before anything is written (ingest checks the
    // memories before it writes them), so a refused import has written nothing.
    let beliefs = UserModel::checked(&p.records).map_err(rpc_error)?;
    let sessions = Sessions::checked(&p.records).map_err(rpc_error)?;
    let memories = engine.ingest.import(&p.records).await.map_err(rpc_error)?;
    let beliefs = engine.usermodel.import(beliefs).await.map_err(rpc_error)?;
    let sessions = engine.sessions.import(sessions).await.map_err(rpc_error)?;
    if episodes {
        engine.agent.load().await.map_err(store_error)?;
    }
    Ok(ImportResult {
        added: memories.added + beliefs.added + sessions.added,
        skipped: memories.skipped + beliefs.skipped + sessions.skipped,
    })
}
