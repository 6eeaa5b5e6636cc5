//! Hostile frames for mnemod, generated from the protocol's types and methods with proptest:
//! valid requests, wrong types, truncations, byte flips, deep nesting and batches of them.
//! The suite's fuzz test and `mnemo bench fuzz` send the same frames through [`run`], which
//! checks that every reply is a well-formed JSON-RPC response and that mnemod stays up.

use std::path::Path;
use std::time::Duration;

use mnemo_protocol::daemon::HelloParams;
use mnemo_protocol::memory::{
    AddParams, ForgetParams, GetParams, ListParams, SearchMode, SearchParams, UpdateParams,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{json, Value};

use mnemo_client::{Client, ClientError};

/// Member names the protocol uses, so arbitrary params hit real fields with wrong values.
const FIELDS: &[&str] = &[
    "content",
    "query",
    "k",
    "mode",
    "id",
    "ids",
    "filter",
    "namespace",
    "kind",
    "tags",
    "metadata",
    "limit",
    "cursor",
    "salience",
    "occurred_at",
    "items",
    "since",
    "until",
    "as_of",
    "explain",
    "domain",
    "source",
    "session_id",
    "client",
    "protocol_version",
    "category",
    "sort",
    "step_secs",
];

/// Every method but those that would end the run or change the store for good (encrypting
/// it makes a key the person never asked for).
fn methods() -> Vec<&'static str> {
    mnemo_protocol::all_methods()
        .into_iter()
        .filter(|m| !["daemon.shutdown", "daemon.encrypt"].contains(m))
        .collect()
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,24}",
        any::<String>(),
        Just(String::new()),
        "[0-9a-f-]{36}",
    ]
}

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 5, |inner| {
        let key = prop_oneof![
            proptest::sample::select(FIELDS).prop_map(String::from),
            text()
        ];
        prop_oneof![
            vec(inner.clone(), 0..5).prop_map(Value::Array),
            vec((key, inner), 0..5)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

fn to_json(value: impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// A method and params of the right shape, from the protocol's own types.
fn typed_call() -> impl Strategy<Value = (String, Value)> {
    let search = (
        text(),
        proptest::option::of(0usize..300),
        any::<bool>(),
        0..3u8,
    )
        .prop_map(|(query, k, explain, mode)| {
            let mode = [SearchMode::Hybrid, SearchMode::Vector, SearchMode::Text][mode as usize];
            let params = SearchParams {
                query,
                k,
                mode,
                explain,
                ..Default::default()
            };
            ("memory.search", to_json(params))
        });
    let add = (
        text(),
        vec(text(), 0..4),
        proptest::option::of(-2.0f32..12.0),
    )
        .prop_map(|(content, tags, salience)| {
            let params = AddParams {
                content,
                tags,
                salience,
                namespace: Some("fuzz".into()),
                ..Default::default()
            };
            ("memory.add", to_json(params))
        });
    let list = (
        proptest::option::of(0usize..2000),
        proptest::option::of(text()),
    )
        .prop_map(|(limit, cursor)| {
            let params = ListParams {
                limit,
                cursor,
                ..Default::default()
            };
            ("memory.list", to_json(params))
        });
    let get = text().prop_map(|id| ("memory.get", to_json(GetParams { id })));
    let update = (text(), text()).prop_map(|(id, content)| {
        let params = UpdateParams {
            id,
            content: Some(content),
            ..Default::default()
        };
        ("memory.update", to_json(params))
    });
    let forget = vec(text(), 0..3).prop_map(|ids| {
        let params = ForgetParams { ids, filter: None };
        ("memory.forget", to_json(params))
    });
    let hello = proptest::option::of(0u32..5).prop_map(|protocol_version| {
        let params = HelloParams {
            client: Some("fuzz".into()),
            protocol_version,
        };
        ("daemon.hello", to_json(params))
    });
    let any_method = (proptest::sample::select(methods()), json_value());
    prop_oneof![search, add, list, get, update, forget, hello, any_method]
        .prop_map(|(method, params)| (method.to_string(), params))
}

/// A request object: sometimes a notification, sometimes with an id or envelope that is wrong.
fn request() -> impl Strategy<Value = Value> {
    let id = prop_oneof![
        4 => any::<i32>().prop_map(|n| Some(json!(n))),
        2 => text().prop_map(|s| Some(json!(s))),
        1 => Just(Some(Value::Null)),
        1 => Just(None),
        1 => json_value().prop_map(Some),
    ];
    let envelope = prop_oneof![
        6 => Just(json!("2.0")),
        1 => json_value(),
    ];
    (typed_call(), id, envelope).prop_map(|((method, params), id, jsonrpc)| {
        let mut request = json!({"jsonrpc": jsonrpc, "method": method, "params": params});
        if let Some(id) = id {
            request["id"] = id;
        }
        request
    })
}

/// One of the ways a request is spoiled on its way to the daemon.
#[derive(Debug, Clone)]
enum Spoil {
    Nothing,
    /// The `n`th node (of all nodes, by position) replaced with another value.
    WrongType(f64, Value),
    Truncate(f64),
    Flip(Vec<(f64, u8)>),
    /// Params wrapped in this many arrays (or objects).
    Nest(usize, bool),
}

fn spoil() -> impl Strategy<Value = Spoil> {
    prop_oneof![
        2 => Just(Spoil::Nothing),
        3 => (0.0..1.0, json_value()).prop_map(|(at, v)| Spoil::WrongType(at, v)),
        2 => (0.0..1.0).prop_map(Spoil::Truncate),
        3 => vec((0.0..1.0, 1..=255u8), 1..8).prop_map(Spoil::Flip),
        1 => (100usize..20_000, any::<bool>()).prop_map(|(depth, array)| Spoil::Nest(depth, array)),
    ]
}

fn node_count(v: &Value) -> usize {
    1 + match v {
        Value::Array(items) => items.iter().map(node_count).sum(),
        Value::Object(members) => members.values().map(node_count).sum(),
        _ => 0,
    }
}

/// Replaces the `n`th node in depth-first order; true once done.
fn replace_node(v: &mut Value, n: &mut usize, with: &Value) -> bool {
    if *n == 0 {
        *v = with.clone();
        return true;
    }
    *n -= 1;
    match v {
        Value::Array(items) => items.iter_mut().any(|i| replace_node(i, n, with)),
        Value::Object(members) => members.values_mut().any(|i| replace_node(i, n, with)),
        _ => false,
    }
}

fn spoiled(mut request: Value, spoil: Spoil) -> Vec<u8> {
    let at = |frac: f64, len: usize| ((frac * len as f64) as usize).min(len.saturating_sub(1));
    match spoil {
        Spoil::Nothing => request.to_string().into_bytes(),
        Spoil::WrongType(frac, with) => {
            let mut n = at(frac, node_count(&request));
            replace_node(&mut request, &mut n, &with);
            request.to_string().into_bytes()
        }
        Spoil::Truncate(frac) => {
            let mut bytes = request.to_string().into_bytes();
            bytes.truncate(at(frac, bytes.len()));
            bytes
        }
        Spoil::Flip(flips) => {
            let mut bytes = request.to_string().into_bytes();
            for (frac, mask) in flips {
                let i = at(frac, bytes.len());
                bytes[i] ^= mask;
            }
            bytes
        }
        Spoil::Nest(depth, array) => {
            let (open, close) = if array { ("[", "]") } else { ("{\"a\":", "}") };
            request["params"] = json!("PLACEHOLDER");
            let nested = format!("{}{{}}{}", open.repeat(depth), close.repeat(depth));
            request
                .to_string()
                .replace("\"PLACEHOLDER\"", &nested)
                .into_bytes()
        }
    }
}

/// One frame (a line without its newline): a request or a batch of them, each perhaps spoiled.
pub fn frame() -> impl Strategy<Value = Vec<u8>> {
    let one = (request(), spoil())
        .prop_map(|(r, s)| spoiled(r, s))
        .boxed();
    prop_oneof![
        6 => one.clone(),
        1 => vec(one, 0..6).prop_map(|items| {
            let mut batch = b"[".to_vec();
            batch.extend(items.join(&b","[..]));
            batch.push(b']');
            batch
        }),
    ]
}

/// Frames drawn from [`frame`] with a fixed seed: the same run every time.
pub fn frames(seed: u64) -> impl Iterator<Item = Vec<u8>> {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let strategy = frame();
    std::iter::from_fn(move || strategy.new_tree(&mut runner).ok().map(|t| t.current()))
}

/// What a reply line is, or why it is not a proper one.
pub fn check_reply(line: &str) -> Result<(), String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e})"))?;
    let check_one = |r: &Value| -> Result<(), String> {
        if r["jsonrpc"] != "2.0" {
            return Err("jsonrpc is not \"2.0\"".into());
        }
        if r.get("method").is_some() && r.get("id").is_none() {
            return Ok(()); // an event notification after events.subscribe
        }
        if !matches!(
            r.get("id"),
            Some(Value::Null | Value::Number(_) | Value::String(_))
        ) {
            return Err("no id".into());
        }
        match (r.get("result"), r.get("error")) {
            (Some(_), None) => Ok(()),
            (None, Some(e))
                if e["code"].is_i64() && e["message"].as_str().is_some_and(|m| !m.is_empty()) =>
            {
                Ok(())
            }
            _ => Err("neither a result nor an error with a code and a message".into()),
        }
    };
    match &value {
        Value::Array(items) if !items.is_empty() => items.iter().try_for_each(check_one),
        Value::Object(_) => check_one(&value),
        _ => Err("neither a response nor a batch of them".into()),
    }
}

/// What a fuzz run saw.
#[derive(Debug, Default)]
pub struct Report {
    pub frames: usize,
    pub replies: usize,
    /// Replies that were not well-formed JSON-RPC, with the frame that drew them (first 10).
    pub improper: Vec<String>,
    pub improper_count: usize,
    /// Times mnemod closed the connection (a client is never cut off for a bad frame).
    pub dropped: usize,
}

const PROBE: &str = "fuzz-probe";

/// Sends `count` frames from `frames`, each followed by a `daemon.hello` probe, and checks
/// every line that comes back until the probe's reply. Fails when mnemod stops answering.
pub async fn run(
    socket: &Path,
    frames: impl Iterator<Item = Vec<u8>>,
    count: usize,
    mut progress: impl FnMut(usize),
) -> Result<Report, ClientError> {
    let mut report = Report::default();
    let mut client = Client::connect(socket).await?;
    for (n, frame) in frames.take(count).enumerate() {
        report.frames += 1;
        let probe =
            json!({"jsonrpc": "2.0", "id": format!("{PROBE}-{n}"), "method": "daemon.hello"});
        let answered = tokio::time::timeout(Duration::from_secs(60), async {
            client.send_line(&frame).await?;
            client.send_line(probe.to_string()).await?;
            loop {
                let line = client.recv_line().await?;
                if line.contains(&format!("\"{PROBE}-{n}\"")) {
                    return Ok::<_, ClientError>(());
                }
                report.replies += 1;
                if let Err(why) = check_reply(&line) {
                    report.improper_count += 1;
                    if report.improper.len() < 10 {
                        let shown =
                            String::from_utf8_lossy(&frame[..frame.len().min(200)]).into_owned();
                        report
                            .improper
                            .push(format!("{why}: {line:.200} (for {shown})"));
                    }
                }
            }
        })
        .await;
        match answered {
            Ok(Ok(())) => {}
            Ok(Err(ClientError::Closed | ClientError::Io(_))) | Err(_) => {
                report.dropped += 1;
                // A dead daemon ends the run here, with the error.
                client = Client::connect(socket).await?;
            }
            Ok(Err(e)) => return Err(e),
        }
        progress(n + 1);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_varied_and_the_same_for_a_seed() {
        let a: Vec<Vec<u8>> = frames(7).take(300).collect();
        let b: Vec<Vec<u8>> = frames(7).take(300).collect();
        assert_eq!(a, b);
        let parses = a
            .iter()
            .filter(|f| serde_json::from_slice::<Value>(f).is_ok())
            .count();
        assert!(parses > 30 && parses < 290, "{parses} of 300 parse");
        assert!(a.iter().any(|f| f.starts_with(b"[")));
        assert!(a.iter().any(|f| f.len() > 20_000), "no deep nesting");
    }

    #[test]
    fn replies_are_judged() {
        assert!(check_reply(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#).is_ok());
        assert!(check_reply(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#
        )
        .is_ok());
        assert!(check_reply(r#"[{"jsonrpc":"2.0","id":"a","result":1}]"#).is_ok());
        assert!(check_reply(r#"{"jsonrpc":"2.0","id":1}"#).is_err());
        assert!(
            check_reply(r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":""}}"#).is_err()
        );
        assert!(check_reply("[]").is_err());
        assert!(check_reply("garbage").is_err());
    }
}
