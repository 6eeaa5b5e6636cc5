//! The bridge's one connection to mnemod: opened on first use, started when nothing answers
//! (once per bridge, unless `--no-start`), dropped when it breaks so the next call reopens it.

use std::path::PathBuf;

use mnemo_client::{Client, ClientError};
use mnemo_protocol::daemon::{Hello, HelloParams};
use mnemo_protocol::{Method, PROTOCOL_VERSION};
use tokio::sync::{Mutex, OnceCell};

use crate::launch;

/// Methods that change the store: never sent twice.
const WRITES: &[&str] = &[
    mnemo_protocol::memory::Add::NAME,
    mnemo_protocol::memory::Update::NAME,
    mnemo_protocol::memory::Forget::NAME,
];

/// Why a call failed: the connection broke under it, or anything else (said as is).
enum Failure {
    Broken(String),
    Other(String),
}
use Failure::Broken;

impl From<Failure> for String {
    fn from(f: Failure) -> String {
        match f {
            Broken(e) => format!("{e}; mnemod may have restarted: call again"),
            Failure::Other(e) => e,
        }
    }
}

pub struct Link {
    socket: PathBuf,
    autostart: bool,
    /// The outcome of the one attempt to start mnemod, shared by every call waiting on it.
    started: OnceCell<Result<String, String>>,
    client: Mutex<Option<Client>>,
}

impl Link {
    pub fn new(socket: PathBuf, autostart: bool) -> Self {
        Self {
            socket,
            autostart,
            started: OnceCell::new(),
            client: Mutex::new(None),
        }
    }

    /// Calls a method; the error is a sentence for the model and the person reading along.
    /// A connection that broke (mnemod restarted since the last call) is reopened, and a
    /// read is sent again on it; a write is not, since it may have been applied.
    pub async fn call<M: Method>(&self, params: &M::Params) -> Result<M::Result, String> {
        let mut slot = self.client.lock().await;
        match self.call_on::<M>(&mut slot, params).await {
            Err(Broken(e)) if !WRITES.contains(&M::NAME) => {
                tracing::info!("connection to mnemod broke ({e}); reconnecting");
                self.call_on::<M>(&mut slot, params)
                    .await
                    .map_err(String::from)
            }
            other => other.map_err(String::from),
        }
    }

    /// One call on the connection in `slot`, opened first if there is none; a broken
    /// connection is dropped so the next call reopens it.
    async fn call_on<M: Method>(
        &self,
        slot: &mut Option<Client>,
        params: &M::Params,
    ) -> Result<M::Result, Failure> {
        if slot.is_none() {
            *slot = Some(self.open().await.map_err(Failure::Other)?);
        }
        let client = slot.as_mut().expect("opened above");
        match client.call::<M>(params).await {
            Ok(result) => Ok(result),
            Err(e @ (ClientError::Io(_) | ClientError::Closed)) => {
                *slot = None;
                Err(Broken(e.to_string()))
            }
            Err(e) => Err(Failure::Other(e.to_string())),
        }
    }

    /// Connects (starting mnemod when allowed and nothing answers) and says hello, so a
    /// daemon of another protocol version is named rather than misread.
    async fn open(&self) -> Result<Client, String> {
        let mut client = match Client::connect(&self.socket).await {
            Ok(client) => client,
            Err(e @ ClientError::NotRunning { .. }) if !self.autostart => return Err(e.to_string()),
            Err(ClientError::NotRunning { .. }) => {
                self.start().await?;
                Client::connect(&self.socket)
                    .await
                    .map_err(|e| e.to_string())?
            }
            Err(e) => return Err(e.to_string()),
        };
        let hello = client
            .call::<Hello>(&HelloParams {
                client: Some("mnemo mcp".into()),
                protocol_version: Some(PROTOCOL_VERSION),
            })
            .await
            .map_err(|e| e.to_string())?;
        tracing::info!(version = %hello.version, "connected to mnemod");
        Ok(client)
    }

    /// Starts mnemod once; later callers share the outcome.
    async fn start(&self) -> Result<(), String> {
        let outcome = self
            .started
            .get_or_init(|| async {
                let outcome = launch::start_daemon(&self.socket).await;
                match &outcome {
                    Ok(how) => tracing::info!("{how}"),
                    Err(why) => tracing::warn!("could not start mnemod: {why}"),
                }
                outcome
            })
            .await;
        outcome.as_ref().map(|_| ()).map_err(|why| {
            format!(
                "mnemod is not running (nothing answers at {}) and could not be started: {why}. \
                 Start it with `mnemod` in a terminal or `systemctl --user start mnemod`.",
                self.socket.display()
            )
        })
    }

    /// Opens the connection ahead of the first call (starting mnemod if needed), so the
    /// first tool call does not pay for it. Failures are left for that call to report.
    pub async fn warm(&self) {
        let mut slot = self.client.lock().await;
        if slot.is_none() {
            *slot = self.open().await.ok();
        }
    }
}
