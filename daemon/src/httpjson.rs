//! JSON over HTTP to local model servers (Ollama, OpenAI-compatible): the embedder and the
//! LLM client share this, so timeouts, auth and error texts are the same for both.

use std::time::Duration;

use serde_json::Value;

pub fn agent(timeout_ms: u64) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_millis(timeout_ms)))
        .http_status_as_error(false)
        .build()
        .into()
}

/// POSTs `body`; a non-2xx status or an unreadable reply is an error saying which.
pub fn post(
    agent: &ureq::Agent,
    url: &str,
    api_key: Option<&str>,
    body: &Value,
) -> Result<Value, String> {
    let mut req = agent.post(url);
    if let Some(key) = api_key {
        req = req.header("Authorization", &format!("Bearer {key}"));
    }
    let mut resp = req
        .send_json(body)
        .map_err(|e| format!("{e} (is the server running?)"))?;
    let status = resp.status();
    let reply: Value = resp
        .body_mut()
        .read_json()
        .map_err(|e| format!("HTTP {status}, unreadable body: {e}"))?;
    if !status.is_success() {
        return Err(format!("HTTP {status}: {reply}"));
    }
    Ok(reply)
}
