//! A scripted chat endpoint speaking the OpenAI-compatible `POST /v1/chat/completions` on
//! loopback, for the paths where mnemod asks a configured LLM. It stands in for the person's
//! own model server (Ollama, LM Studio, llama.cpp), which the test machine does not have: the
//! daemon, its HTTP client and everything it does with a reply are the real ones. Each
//! request is recorded; `reply` decides each answer from the user message, and `None` answers
//! HTTP 503 (a server that is down or still loading).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

type Reply = dyn Fn(&str) -> Option<String> + Send + Sync;

pub struct ChatEndpoint {
    url: String,
    asked: Arc<Mutex<Vec<serde_json::Value>>>,
    stopping: Arc<AtomicBool>,
}

impl ChatEndpoint {
    pub fn start(reply: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let asked = Arc::new(Mutex::new(Vec::new()));
        let stopping = Arc::new(AtomicBool::new(false));
        let reply: Arc<Reply> = Arc::new(reply);
        {
            let (asked, stopping) = (asked.clone(), stopping.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stopping.load(Ordering::Relaxed) {
                        break;
                    }
                    if let Ok(stream) = stream {
                        let _ = answer(stream, &*reply, &asked);
                    }
                }
            });
        }
        Self {
            url,
            asked,
            stopping,
        }
    }

    /// What `[llm] url` is set to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The request bodies received so far.
    pub fn asked(&self) -> Vec<serde_json::Value> {
        self.asked.lock().unwrap().clone()
    }
}

impl Drop for ChatEndpoint {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::Relaxed);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
    }
}

/// The user message of a chat request.
pub fn user_message(body: &serde_json::Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn answer(
    stream: TcpStream,
    reply: &Reply,
    asked: &Mutex<Vec<serde_json::Value>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut length = 0;
    let mut first = true;
    let mut path = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let line = line.trim_end();
        if first {
            path = line.split(' ').nth(1).unwrap_or_default().to_string();
            first = false;
        } else if line.is_empty() {
            break;
        } else if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    asked.lock().unwrap().push(body.clone());
    let answered = (path == "/v1/chat/completions")
        .then(|| reply(&user_message(&body)))
        .flatten();
    let (status, payload) = match answered {
        Some(text) => (
            "200 OK",
            serde_json::json!({
                "object": "chat.completion",
                "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            }),
        ),
        None => (
            "503 Service Unavailable",
            serde_json::json!({"error": {"message": "model is loading"}}),
        ),
    };
    let payload = payload.to_string();
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}",
        payload.len()
    )?;
    stream.flush()
}
