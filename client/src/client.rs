//! An async client for `mnemod` over its local socket.

use std::path::{Path, PathBuf};

use interprocess::local_socket::tokio::{prelude::*, Stream};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, ReadHalf, WriteHalf};

use mnemo_protocol::events::{EventParams, EVENT};
use mnemo_protocol::{Id, Method, Request, Response, RpcError};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "mnemod is not running (nothing answers at {}).\n  Start it in the foreground with `mnemod`, \
         or as a service with `systemctl --user start mnemod`.",
        socket.display()
    )]
    NotRunning {
        socket: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "refusing to talk to {}: it is served by {}, not by you (uid {me}). Another user may have \
         taken the socket's place; check the directory's owner, or pass --socket",
        socket.display(),
        served_by.map(|u| format!("uid {u}")).unwrap_or_else(|| "an unknown user".into())
    )]
    Impostor {
        socket: PathBuf,
        served_by: Option<u32>,
        me: u32,
    },
    #[error("lost the connection to mnemod: {0}")]
    Io(#[from] std::io::Error),
    #[error("mnemod closed the connection")]
    Closed,
    /// Shown once: as the whole message, not also as its own cause.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    #[error("mnemod sent a reply this client cannot read: {0}")]
    Protocol(String),
}

pub struct Client {
    reader: BufReader<ReadHalf<Stream>>,
    writer: WriteHalf<Stream>,
    next_id: i64,
    /// Event notifications that arrived while a call waited for its reply.
    events: std::collections::VecDeque<EventParams>,
}

/// An `event` notification, or `None` for any other message (a reply). Each line is parsed
/// once: a reply is read into its `Response` from the same value.
fn parse_event(message: &Value) -> Option<EventParams> {
    if message.get("id").is_some() || message.get("method")?.as_str()? != EVENT {
        return None;
    }
    serde_json::from_value(message.get("params")?.clone()).ok()
}

fn parse_message(line: &str) -> Result<Value, ClientError> {
    serde_json::from_str(line).map_err(|e| ClientError::Protocol(e.to_string()))
}

/// Checks, before a byte is sent, that the process answering runs as this user: a socket
/// in a directory someone else controls could be theirs.
#[cfg(unix)]
fn served_by_me(stream: &Stream, socket: &Path) -> Result<(), ClientError> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let served_by = stream.peer_creds().ok().and_then(|c| c.euid());
    if served_by == Some(me) {
        return Ok(());
    }
    Err(ClientError::Impostor {
        socket: socket.to_path_buf(),
        served_by,
        me,
    })
}

/// Named pipes are per-session on Windows and their default ACL admits only this user.
#[cfg(not(unix))]
fn served_by_me(_: &Stream, _: &Path) -> Result<(), ClientError> {
    Ok(())
}

impl Client {
    pub async fn connect(socket: &Path) -> Result<Self, ClientError> {
        let not_running = |source| ClientError::NotRunning {
            socket: socket.to_path_buf(),
            source,
        };
        let name = mnemo_protocol::socket::name(socket).map_err(not_running)?;
        let stream = Stream::connect(name).await.map_err(not_running)?;
        served_by_me(&stream, socket)?;
        let (read, writer) = tokio::io::split(stream);
        Ok(Self {
            reader: BufReader::new(read),
            writer,
            next_id: 1,
            events: Default::default(),
        })
    }

    /// Calls a typed method and waits for its reply.
    pub async fn call<M: Method>(&mut self, params: &M::Params) -> Result<M::Result, ClientError> {
        let params =
            serde_json::to_value(params).map_err(|e| ClientError::Protocol(e.to_string()))?;
        let value = self.call_raw(M::NAME, params).await?;
        serde_json::from_value(value)
            .map_err(|e| ClientError::Protocol(format!("{} result: {e}", M::NAME)))
    }

    /// Calls a method by name with untyped params.
    pub async fn call_raw(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let request = Request::new(Id::Num(id), method, params);
        let line =
            serde_json::to_string(&request).map_err(|e| ClientError::Protocol(e.to_string()))?;
        self.send_line(&line).await?;
        let reply = loop {
            let message = parse_message(&self.recv_line().await?)?;
            match parse_event(&message) {
                Some(event) => self.events.push_back(event),
                None => break message,
            }
        };
        let response: Response =
            serde_json::from_value(reply).map_err(|e| ClientError::Protocol(e.to_string()))?;
        if response.id != Id::Num(id) {
            return Err(ClientError::Protocol(format!(
                "reply to id {:?} while waiting for {id}",
                response.id
            )));
        }
        match (response.result, response.error) {
            (_, Some(error)) => Err(ClientError::Rpc(error)),
            (Some(result), None) => Ok(result),
            (None, None) => Err(ClientError::Protocol(
                "reply with neither result nor error".into(),
            )),
        }
    }

    /// The next `event` notification (after `subscribe`), waiting for it if none is queued.
    pub async fn next_event(&mut self) -> Result<EventParams, ClientError> {
        if let Some(event) = self.events.pop_front() {
            return Ok(event);
        }
        loop {
            let line = self.recv_line().await?;
            let event = parse_message(&line).ok().and_then(|m| parse_event(&m));
            if let Some(event) = event {
                return Ok(event);
            }
            // A stray reply (its request timed out on our side): nothing waits for it.
        }
    }

    /// Sends one frame as it is (a newline is added); for tools and tests that speak raw JSON.
    pub async fn send_line(&mut self, line: impl AsRef<[u8]>) -> Result<(), ClientError> {
        self.writer.write_all(line.as_ref()).await?;
        self.writer.write_all(b"\n").await?;
        self.writer.flush().await?;
        Ok(())
    }

    /// Reads one frame, without its newline.
    pub async fn recv_line(&mut self) -> Result<String, ClientError> {
        let mut line = String::new();
        if self.reader.read_line(&mut line).await? == 0 {
            return Err(ClientError::Closed);
        }
        while line.ends_with('\n') || line.ends_with('\r') {
            line.pop();
        }
        Ok(line)
    }
}
