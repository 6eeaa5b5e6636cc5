//! Method dispatch: each method is one typed handler registered against its [`Method`] type;
//! params are decoded here, so a handler only ever sees well-formed params.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use mnemo_protocol::{Method, RpcError};
use serde_json::Value;

use super::state::State;
use super::subscriptions::Subscriptions;

type Handler = Box<
    dyn Fn(Arc<State>, Arc<Subscriptions>, Value) -> BoxFuture<'static, Result<Value, RpcError>>
        + Send
        + Sync,
>;

#[derive(Default)]
pub struct Router {
    handlers: BTreeMap<&'static str, Handler>,
}

impl Router {
    pub fn register<M, F, Fut>(&mut self, handler: F) -> &mut Self
    where
        M: Method,
        F: Fn(Arc<State>, M::Params) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<M::Result, RpcError>> + Send + 'static,
    {
        self.register_subscriber::<M, _, _>(move |engine, _subscriptions, params| {
            handler(engine, params)
        })
    }

    /// A handler that also sees its connection's [`Subscriptions`].
    pub fn register_subscriber<M, F, Fut>(&mut self, handler: F) -> &mut Self
    where
        M: Method,
        F: Fn(Arc<State>, Arc<Subscriptions>, M::Params) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<M::Result, RpcError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let erased: Handler = Box::new(move |engine, subscriptions, params| {
            let handler = handler.clone();
            async move {
                let params: M::Params = decode_params(M::NAME, params)?;
                let result = handler(engine, subscriptions, params).await?;
                serde_json::to_value(result)
                    .map_err(|e| RpcError::internal(format!("encoding the result: {e}")))
            }
            .boxed()
        });
        assert!(
            self.handlers.insert(M::NAME, erased).is_none(),
            "{} registered twice",
            M::NAME
        );
        self
    }

    pub fn methods(&self) -> Vec<String> {
        self.handlers.keys().map(|k| k.to_string()).collect()
    }

    pub async fn call(
        &self,
        engine: Arc<State>,
        subscriptions: Arc<Subscriptions>,
        method: &str,
        params: Value,
    ) -> Result<Value, RpcError> {
        match self.handlers.get(method) {
            Some(handler) => guarded(method, handler(engine, subscriptions, params)).await,
            None => Err(RpcError::method_not_found(method)),
        }
    }
}

/// `handling`'s answer, or, when it panics (a bug, in mnemod or in a library it calls), an
/// internal error: without one the client would wait for an answer that never comes.
async fn guarded(
    method: &str,
    handling: impl Future<Output = Result<Value, RpcError>>,
) -> Result<Value, RpcError> {
    match std::panic::AssertUnwindSafe(handling).catch_unwind().await {
        Ok(answer) => answer,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            tracing::error!(method, "a request handler panicked: {what}");
            Err(RpcError::internal(format!(
                "{method} failed inside mnemod ({what}) and was not completed; this is a bug \
                 — mnemod's log has it; retry, and report it if it happens again"
            )))
        }
    }
}

/// Params by name only; absent or null means `{}`.
fn decode_params<T: serde::de::DeserializeOwned>(
    method: &str,
    params: Value,
) -> Result<T, RpcError> {
    let params = match params {
        Value::Null => Value::Object(Default::default()),
        Value::Array(_) => {
            return Err(RpcError::invalid_params(format!(
                "{method} takes its params by name, as a JSON object, not as an array"
            )))
        }
        other => other,
    };
    serde_json::from_value(params).map_err(|e| RpcError::invalid_params(format!("{method}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_protocol::memory::GetParams;

    #[tokio::test]
    async fn a_handler_that_panics_is_answered_with_an_internal_error() {
        let fine = guarded("memory.get", async { Ok(Value::Bool(true)) }).await;
        assert_eq!(fine.unwrap(), Value::Bool(true));
        let failed = guarded("memory.get", async {
            Err(RpcError::invalid_params("no such thing"))
        })
        .await;
        assert_eq!(failed.unwrap_err().code, -32602);
        let panicked = guarded("memory.search", async {
            let parts: Vec<u32> = Vec::new();
            Ok(Value::from(parts[3]))
        })
        .await
        .unwrap_err();
        assert_eq!(panicked.code, -32603);
        assert!(
            panicked
                .message
                .starts_with("memory.search failed inside mnemod (index out of bounds"),
            "{}",
            panicked.message
        );
        let panicked = guarded("memory.add", async { panic!("the {} fell over", "writer") })
            .await
            .unwrap_err();
        assert!(
            panicked.message.contains("(the writer fell over)"),
            "{}",
            panicked.message
        );
    }

    #[test]
    fn params_errors_say_what_is_wrong() {
        let e =
            decode_params::<GetParams>("memory.get", serde_json::json!({"idd": "x"})).unwrap_err();
        assert_eq!(e.code, -32602);
        assert!(e.message.contains("unknown field `idd`"), "{}", e.message);
        let e = decode_params::<GetParams>("memory.get", serde_json::json!(["x"])).unwrap_err();
        assert!(e.message.contains("by name"), "{}", e.message);
        let e = decode_params::<GetParams>("memory.get", Value::Null).unwrap_err();
        assert!(e.message.contains("missing field `id`"), "{}", e.message);
    }
}
