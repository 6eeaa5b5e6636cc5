//! Embeddings from a local server: Ollama (`/api/embed`) or any OpenAI-compatible
//! `/v1/embeddings` (LM Studio, llama.cpp server, vLLM).

use serde_json::{json, Value};

use super::{l2_normalize, EmbedError, Embedder};
use crate::config::{EmbedderConfig, HttpApi};

pub struct HttpEmbedder {
    agent: ureq::Agent,
    url: String,
    api: HttpApi,
    model: String,
    api_key: Option<String>,
    model_id: String,
    dim: usize,
}

impl HttpEmbedder {
    /// Builds the client and embeds one probe text to learn the dimension, so a wrong URL or
    /// model is reported at start, not at the first write.
    pub fn connect(config: &EmbedderConfig) -> Result<Self, EmbedError> {
        let base = config.http_url.clone().unwrap_or_default();
        let base = base.trim_end_matches('/');
        let url = match config.http_api {
            HttpApi::Ollama => format!("{base}/api/embed"),
            HttpApi::Openai => format!("{base}/v1/embeddings"),
        };
        let model = config
            .http_model
            .clone()
            .unwrap_or_else(|| "all-minilm".into());
        let agent = crate::httpjson::agent(config.http_timeout_ms);
        let api_key = config
            .http_api_key_env
            .as_deref()
            .and_then(|k| std::env::var(k).ok());
        let mut embedder = Self {
            agent,
            model_id: format!("http:{model}"),
            url,
            api: config.http_api,
            model,
            api_key,
            dim: 0,
        };
        embedder.dim = embedder.embed(&["dimension probe"])?[0].len();
        Ok(embedder)
    }

    fn request(&self, texts: &[&str]) -> Result<Value, EmbedError> {
        let fail = |message: String| EmbedError::Endpoint {
            url: self.url.clone(),
            message,
        };
        let body = crate::httpjson::post(
            &self.agent,
            &self.url,
            self.api_key.as_deref(),
            &json!({ "model": self.model, "input": texts }),
        )
        .map_err(fail)?;
        Ok(body)
    }
}

/// Pulls the vectors out of either API's reply.
fn parse_vectors(api: HttpApi, body: &Value) -> Option<Vec<Vec<f32>>> {
    let rows: Vec<&Value> = match api {
        HttpApi::Ollama => body.get("embeddings")?.as_array()?.iter().collect(),
        HttpApi::Openai => body
            .get("data")?
            .as_array()?
            .iter()
            .map(|d| d.get("embedding"))
            .collect::<Option<_>>()?,
    };
    rows.into_iter()
        .map(|row| {
            row.as_array()?
                .iter()
                .map(|x| x.as_f64().map(|x| x as f32))
                .collect()
        })
        .collect()
}

impl Embedder for HttpEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = self.request(texts)?;
        let mut vectors = parse_vectors(self.api, &body).ok_or_else(|| EmbedError::Endpoint {
            url: self.url.clone(),
            message: "reply has no embeddings in the expected shape".into(),
        })?;
        if vectors.len() != texts.len()
            || (self.dim > 0 && vectors.iter().any(|v| v.len() != self.dim))
        {
            return Err(EmbedError::Endpoint {
                url: self.url.clone(),
                message: format!(
                    "asked for {} vectors of {}, got another shape",
                    texts.len(),
                    self.dim
                ),
            });
        }
        vectors.iter_mut().for_each(|v| l2_normalize(v));
        Ok(vectors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_reply_shapes() {
        let ollama = json!({"model": "m", "embeddings": [[1.0, 0.0], [0.0, 2.0]]});
        assert_eq!(
            parse_vectors(HttpApi::Ollama, &ollama).unwrap()[1],
            vec![0.0, 2.0]
        );
        let openai = json!({"data": [{"embedding": [3.0, 4.0], "index": 0}]});
        assert_eq!(
            parse_vectors(HttpApi::Openai, &openai).unwrap()[0],
            vec![3.0, 4.0]
        );
        assert!(parse_vectors(HttpApi::Openai, &ollama).is_none());
    }

    #[test]
    fn unreachable_endpoint_is_a_clear_error() {
        let config = EmbedderConfig {
            http_url: Some("http://127.0.0.1:9".into()),
            http_timeout_ms: 500,
            ..Default::default()
        };
        let err = HttpEmbedder::connect(&config).err().unwrap().to_string();
        assert!(
            err.contains("127.0.0.1:9/api/embed") && err.contains("running"),
            "{err}"
        );
    }
}
