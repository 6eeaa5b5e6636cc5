//! The optional chat endpoint (Ollama or OpenAI-compatible) that consolidation uses to write
//! summaries and read memories again for beliefs when configured. Without one, everything
//! works by rule.

use serde_json::{json, Value};

use crate::config::{HttpApi, LlmConfig};

/// Why no text came back: the server did not answer (try again later), or it answered
/// without any (this request will not do better by being asked again).
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("{0}")]
    Unreachable(String),
    #[error("{0}: the reply has no message text")]
    Empty(String),
}

pub struct Llm {
    agent: ureq::Agent,
    url: String,
    api: HttpApi,
    model: String,
    api_key: Option<String>,
}

impl Llm {
    /// `None` when no endpoint is configured.
    pub fn from_config(config: &LlmConfig) -> Option<Self> {
        let base = config.url.as_deref()?.trim_end_matches('/');
        let url = match config.api {
            HttpApi::Ollama => format!("{base}/api/chat"),
            HttpApi::Openai => format!("{base}/v1/chat/completions"),
        };
        Some(Self {
            agent: crate::httpjson::agent(config.timeout_ms.unwrap_or(60_000)),
            url,
            api: config.api,
            model: config.model.clone().unwrap_or_else(|| "llama3.2".into()),
            api_key: config
                .api_key_env
                .as_deref()
                .and_then(|k| std::env::var(k).ok()),
        })
    }

    /// The model asked, as configured.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// One reply to `prompt` under `system`. Blocking: call from the blocking pool.
    pub fn complete(&self, system: &str, prompt: &str) -> Result<String, LlmError> {
        let messages = json!([
            { "role": "system", "content": system },
            { "role": "user", "content": prompt },
        ]);
        let body = match self.api {
            HttpApi::Ollama => {
                json!({ "model": self.model, "messages": messages, "stream": false })
            }
            HttpApi::Openai => json!({ "model": self.model, "messages": messages }),
        };
        let reply = crate::httpjson::post(&self.agent, &self.url, self.api_key.as_deref(), &body)
            .map_err(|e| LlmError::Unreachable(format!("{}: {e}", self.url)))?;
        reply_text(self.api, &reply)
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| LlmError::Empty(self.url.clone()))
    }
}

fn reply_text(api: HttpApi, reply: &Value) -> Option<String> {
    let message = match api {
        HttpApi::Ollama => reply.get("message")?,
        HttpApi::Openai => reply.get("choices")?.get(0)?.get("message")?,
    };
    Some(message.get("content")?.as_str()?.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_reply_shapes_are_read() {
        let ollama = json!({ "message": { "role": "assistant", "content": " A summary. " } });
        assert_eq!(
            reply_text(HttpApi::Ollama, &ollama).as_deref(),
            Some("A summary.")
        );
        let openai = json!({ "choices": [ { "message": { "content": "B" } } ] });
        assert_eq!(reply_text(HttpApi::Openai, &openai).as_deref(), Some("B"));
        assert_eq!(reply_text(HttpApi::Openai, &json!({})), None);
    }

    #[test]
    fn no_url_means_no_llm() {
        assert!(Llm::from_config(&LlmConfig::default()).is_none());
    }
}
