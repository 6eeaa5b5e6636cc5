//! JSON-RPC 2.0 envelopes and error codes shared by the daemon and every client.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A request id. JSON-RPC allows strings, numbers and (discouraged) null.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    Num(i64),
    Str(String),
    Null,
}

/// A request as a client sends it. The daemon parses frames from `Value` instead, so that it
/// can tell an absent id (a notification) from `"id": null` and report each fault precisely.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    pub jsonrpc: String,
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Id>,
}

impl Request {
    pub fn new(id: Id, method: impl Into<String>, params: Value) -> Self {
        Self {
            jsonrpc: "2.0".into(),
            method: method.into(),
            params: Some(params),
            id: Some(id),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Response {
    pub jsonrpc: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
    pub id: Id,
}

impl Response {
    pub fn ok(id: Id, result: Value) -> Self {
        Self {
            jsonrpc: "2.0".into(),
            result: Some(result),
            error: None,
            id,
        }
    }
    pub fn err(id: Id, error: RpcError) -> Self {
        Self {
            jsonrpc: "2.0".into(),
            result: None,
            error: Some(error),
            id,
        }
    }
}

/// The error object of a response. `message` is written for a person: it says what was wrong
/// and, where there is one, what to do about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message} (code {code})")]
pub struct RpcError {
    pub code: i32,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
    pub fn parse(message: impl Into<String>) -> Self {
        Self::new(codes::PARSE_ERROR, message)
    }
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_REQUEST, message)
    }
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            codes::METHOD_NOT_FOUND,
            format!("unknown method `{method}`; `daemon.hello` lists the methods this daemon has"),
        )
    }
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_PARAMS, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(codes::INTERNAL_ERROR, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(codes::NOT_FOUND, message)
    }
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(codes::CONFLICT, message)
    }
    pub fn overloaded(message: impl Into<String>) -> Self {
        Self::new(codes::OVERLOADED, message)
    }
    pub fn storage(message: impl Into<String>) -> Self {
        Self::new(codes::STORAGE, message)
    }
    pub fn embedder_unavailable(message: impl Into<String>) -> Self {
        Self::new(codes::EMBEDDER_UNAVAILABLE, message)
    }
    pub fn shutting_down() -> Self {
        Self::new(
            codes::SHUTTING_DOWN,
            "mnemod is shutting down; retry once it is back",
        )
    }
}

/// Error codes: the standard ones, then mnemo's application range (-32001 ..= -32099).
pub mod codes {
    pub const PARSE_ERROR: i32 = -32700;
    pub const INVALID_REQUEST: i32 = -32600;
    pub const METHOD_NOT_FOUND: i32 = -32601;
    pub const INVALID_PARAMS: i32 = -32602;
    pub const INTERNAL_ERROR: i32 = -32603;
    pub const NOT_FOUND: i32 = -32001;
    pub const CONFLICT: i32 = -32002;
    pub const OVERLOADED: i32 = -32003;
    pub const STORAGE: i32 = -32004;
    pub const EMBEDDER_UNAVAILABLE: i32 = -32005;
    pub const SHUTTING_DOWN: i32 = -32006;
}
