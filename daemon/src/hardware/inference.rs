//! Local inference servers: found by process name and by asking their model-list endpoints,
//! with short timeouts, on a task of its own so a slow server never delays a snapshot.

use std::time::Duration;

use mnemo_protocol::system::InferenceServer;
use serde_json::Value;

use super::probe::ProcessReading;

pub struct Backend {
    pub kind: &'static str,
    pub url: &'static str,
    pub models_path: &'static str,
    pub process_names: &'static [&'static str],
}

pub const BACKENDS: [Backend; 4] = [
    Backend {
        kind: "ollama",
        url: "http://127.0.0.1:11434",
        models_path: "/api/tags",
        process_names: &["ollama"],
    },
    Backend {
        kind: "lmstudio",
        url: "http://127.0.0.1:1234",
        models_path: "/v1/models",
        process_names: &["lm studio", "lmstudio", "lms"],
    },
    Backend {
        kind: "llamacpp",
        url: "http://127.0.0.1:8080",
        models_path: "/v1/models",
        process_names: &["llama-server", "llama.cpp", "llamafile"],
    },
    Backend {
        kind: "vllm",
        url: "http://127.0.0.1:8000",
        models_path: "/v1/models",
        process_names: &["vllm"],
    },
];

/// Model names from either reply shape: Ollama's `models[].name` or OpenAI's `data[].id`.
pub fn model_names(body: &Value) -> Vec<String> {
    let from = |list: &str, key: &str| -> Vec<String> {
        body.get(list)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|m| m.get(key).and_then(Value::as_str).map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut names = from("models", "name");
    names.extend(from("data", "id"));
    names
}

fn probe(agent: &ureq::Agent, backend: &Backend) -> Option<Vec<String>> {
    let mut resp = agent
        .get(format!("{}{}", backend.url, backend.models_path))
        .call()
        .ok()?;
    let body: Value = resp.body_mut().read_json().ok()?;
    Some(model_names(&body))
}

/// Every backend seen by process or endpoint. Blocking: run it off the reactor.
pub fn detect(processes: &[ProcessReading], timeout: Duration) -> Vec<InferenceServer> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .build()
        .into();
    BACKENDS
        .iter()
        .filter_map(|b| {
            let by_process = processes.iter().any(|p| {
                let text = format!("{} {}", p.name.to_lowercase(), p.cmdline.to_lowercase());
                b.process_names.iter().any(|n| text.contains(n))
            });
            let models = probe(&agent, b);
            let mut detected_by = Vec::new();
            if by_process {
                detected_by.push("process".to_string());
            }
            if models.is_some() {
                detected_by.push("endpoint".to_string());
            }
            (!detected_by.is_empty()).then(|| InferenceServer {
                kind: b.kind.into(),
                url: b.url.into(),
                models: models.unwrap_or_default(),
                detected_by,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_both_model_lists() {
        assert_eq!(
            model_names(&json!({"models": [{"name": "llama3:8b"}, {"name": "qwen2"}]})),
            ["llama3:8b", "qwen2"]
        );
        assert_eq!(
            model_names(&json!({"object": "list", "data": [{"id": "mistral-7b"}]})),
            ["mistral-7b"]
        );
        assert!(model_names(&json!({"error": "nope"})).is_empty());
    }

    #[test]
    fn found_by_process_even_when_the_endpoint_is_silent() {
        let procs = vec![ProcessReading {
            name: "ollama".into(),
            cmdline: "ollama serve".into(),
            ..Default::default()
        }];
        let found = detect(&procs, Duration::from_millis(200));
        let ollama = found
            .iter()
            .find(|s| s.kind == "ollama")
            .expect("ollama by process");
        assert!(ollama.detected_by.contains(&"process".to_string()));
    }
}
