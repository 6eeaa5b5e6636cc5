//! JSON-RPC 2.0 envelopes: a frame is one request or a batch; notifications get no reply.
//! Parsed from `Value` so an absent id (notification) and `"id": null` stay distinct.

use std::sync::Arc;

use futures::future::join_all;
use mnemo_protocol::{Id, Response, RpcError};
use serde_json::Value;

use tokio::sync::OwnedSemaphorePermit;

use super::budget::Budget;
use super::router::Router;
use super::state::{InFlight, State};
use super::subscriptions::Subscriptions;

/// Most calls in one batch.
pub const MAX_BATCH: usize = 256;

/// Answers one frame, as the line to send; `None` when nothing is to be sent (only
/// notifications). The frame's bytes, and the budget `frame_bytes` holds for them, are let
/// go as soon as it is parsed.
pub async fn handle_frame(
    router: &Router,
    engine: &Arc<State>,
    subscriptions: &Arc<Subscriptions>,
    budget: &Budget,
    frame: Vec<u8>,
    frame_bytes: Option<OwnedSemaphorePermit>,
) -> Option<String> {
    let parsed = serde_json::from_slice::<Value>(&frame);
    drop(frame);
    drop(frame_bytes);
    let value = match parsed {
        Ok(v) => v,
        Err(e) => {
            return Some(reply(Response::err(
                Id::Null,
                RpcError::parse(format!("not valid JSON: {e}")),
            )));
        }
    };
    match value {
        Value::Array(items) if items.is_empty() => Some(reply(Response::err(
            Id::Null,
            RpcError::invalid_request("empty batch: send at least one request"),
        ))),
        Value::Array(items) if items.len() > MAX_BATCH => Some(reply(Response::err(
            Id::Null,
            RpcError::invalid_request(format!(
                "a batch of {} requests is over the limit of {MAX_BATCH}; split it into smaller batches",
                items.len()
            )),
        ))),
        Value::Array(items) => {
            let replies: Vec<String> = join_all(
                items
                    .into_iter()
                    .map(|item| handle_one(router, engine, subscriptions, budget, item)),
            )
            .await
            .into_iter()
            .flatten()
            .map(reply)
            .collect();
            (!replies.is_empty()).then(|| format!("[{}]", replies.join(",")))
        }
        single => handle_one(router, engine, subscriptions, budget, single)
            .await
            .map(reply),
    }
}

/// The reply's line, written from the response as it is (not through a `Value`, a copy of a
/// search's whole answer).
fn reply(response: Response) -> String {
    serde_json::to_string(&response).unwrap_or_else(|e| {
        let error = RpcError::internal(format!("the reply could not be written as JSON: {e}"));
        serde_json::to_string(&Response::err(Id::Null, error)).unwrap_or_default()
    })
}

async fn handle_one(
    router: &Router,
    engine: &Arc<State>,
    subscriptions: &Arc<Subscriptions>,
    budget: &Budget,
    item: Value,
) -> Option<Response> {
    let Value::Object(mut object) = item else {
        return Some(Response::err(
            Id::Null,
            RpcError::invalid_request("a request must be a JSON object"),
        ));
    };
    let id = match object.remove("id") {
        None => None,
        Some(raw) => match serde_json::from_value::<Id>(raw) {
            Ok(id) => Some(id),
            Err(_) => {
                return Some(Response::err(
                    Id::Null,
                    RpcError::invalid_request("id must be a string, a number or null"),
                ))
            }
        },
    };
    let fail = |error: RpcError| Some(Response::err(id.clone().unwrap_or(Id::Null), error));
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return fail(RpcError::invalid_request("jsonrpc must be \"2.0\""));
    }
    let Some(Value::String(method)) = object.remove("method") else {
        return fail(RpcError::invalid_request(
            "method must be a string such as \"daemon.status\"",
        ));
    };
    let params = object.remove("params").unwrap_or(Value::Null);
    if !matches!(params, Value::Object(_) | Value::Array(_) | Value::Null) {
        return fail(RpcError::invalid_request("params must be an object"));
    }
    if let Some(extra) = object.keys().find(|k| *k != "jsonrpc") {
        return fail(RpcError::invalid_request(format!(
            "unexpected member `{extra}` in the request"
        )));
    }

    if engine.shutdown.is_requested() {
        return id.map(|id| Response::err(id, RpcError::shutting_down()));
    }
    if crate::consolidate::idle::is_user_work(&method) {
        engine.consolidation.activity.touch();
    }
    // This connection's turn first, so one connection cannot take every slot below.
    let _turn = budget.call().await;
    let result = match InFlight::acquire(&engine.in_flight, engine.limits.max_in_flight) {
        None => Err(RpcError::overloaded(format!(
            "more than {} requests in flight; retry shortly",
            engine.limits.max_in_flight
        ))),
        Some(_slot) => {
            router
                .call(engine.clone(), subscriptions.clone(), &method, params)
                .await
        }
    };
    if let Err(e) = &result {
        tracing::debug!(method, code = e.code, "request failed: {}", e.message);
    }
    let id = id?; // a notification: done, no reply
    Some(match result {
        Ok(value) => Response::ok(id, value),
        Err(error) => Response::err(id, error),
    })
}
