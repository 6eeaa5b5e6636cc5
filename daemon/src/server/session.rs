//! Handlers of `session.*`: conversations and tasks whose messages are memories.

use std::sync::Arc;

use mnemo_protocol::session::{
    End, EndParams, Get, GetParams, GetResult, List, ListParams, ListResult, MessageParams,
    MessageResult, SendMessage, SessionResult, Start, StartParams, MAX_MESSAGES,
};
use mnemo_protocol::RpcError;

use super::router::Router;
use super::state::{rpc_error, State};

/// Messages `session.get` returns when the request names no number.
const DEFAULT_MESSAGES: usize = 50;

pub fn register(r: &mut Router) {
    r.register::<Start, _, _>(start)
        .register::<SendMessage, _, _>(message)
        .register::<End, _, _>(end)
        .register::<Get, _, _>(get)
        .register::<List, _, _>(list);
}

async fn start(engine: Arc<State>, p: StartParams) -> Result<SessionResult, RpcError> {
    let session = engine.sessions.start(p).await.map_err(rpc_error)?;
    Ok(SessionResult { session })
}

async fn message(engine: Arc<State>, p: MessageParams) -> Result<MessageResult, RpcError> {
    let (memory_id, turn) = engine.sessions.message(p).await.map_err(rpc_error)?;
    Ok(MessageResult { memory_id, turn })
}

async fn end(engine: Arc<State>, p: EndParams) -> Result<SessionResult, RpcError> {
    let session = engine
        .sessions
        .end(&p.session_id)
        .await
        .map_err(rpc_error)?;
    Ok(SessionResult { session })
}

async fn get(engine: Arc<State>, p: GetParams) -> Result<GetResult, RpcError> {
    let n = p.messages.unwrap_or(DEFAULT_MESSAGES);
    if n > MAX_MESSAGES {
        return Err(RpcError::invalid_params(format!(
            "messages is {n}; it must be 0–{MAX_MESSAGES}"
        )));
    }
    let short = engine.sessions.get(&p.id, n).await.map_err(rpc_error)?;
    Ok(GetResult {
        session: short.session,
        messages: short.recent,
        running_summary: short.summary,
    })
}

async fn list(engine: Arc<State>, p: ListParams) -> Result<ListResult, RpcError> {
    let (sessions, total, next_cursor) =
        engine.sessions.list(&p).map_err(RpcError::invalid_params)?;
    Ok(ListResult {
        sessions,
        next_cursor,
        total,
    })
}
