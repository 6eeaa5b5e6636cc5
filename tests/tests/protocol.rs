//! JSON-RPC over the real socket: framing, batches, notifications, every error code, and many
//! clients at once.

use std::collections::HashSet;

use mnemo_client::Client;
use mnemo_protocol::daemon::Status;
use mnemo_protocol::NoParams;
use mnemo_tests::{Daemon, Embedder};
use serde_json::{json, Value};

async fn exchange(client: &mut Client, line: &str) -> Value {
    client.send_line(line).await.unwrap();
    serde_json::from_str(&client.recv_line().await.unwrap()).unwrap()
}

fn code(reply: &Value) -> i64 {
    reply["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no error in {reply}"))
}

#[tokio::test]
async fn malformed_json_is_a_parse_error_and_the_connection_lives_on() {
    let daemon = Daemon::start();
    let mut c = daemon.client().await;
    let reply = exchange(&mut c, r#"{"jsonrpc":"2.0","method":"#).await;
    assert_eq!(code(&reply), -32700);
    assert_eq!(reply["id"], Value::Null);
    assert!(reply["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not valid JSON"));
    c.call::<Status>(&NoParams {})
        .await
        .expect("same connection still works");
}

#[tokio::test]
async fn invalid_requests_are_explained() {
    let daemon = Daemon::start();
    let mut c = daemon.client().await;
    let cases = [
        (
            r#"{"jsonrpc":"1.0","method":"daemon.status","id":1}"#,
            "jsonrpc",
        ),
        (r#"{"jsonrpc":"2.0","id":2}"#, "method"),
        (
            r#"{"jsonrpc":"2.0","method":"daemon.status","params":5,"id":3}"#,
            "params",
        ),
        (
            r#"{"jsonrpc":"2.0","method":"daemon.status","id":{"a":1}}"#,
            "id",
        ),
        ("42", "object"),
        ("[]", "empty batch"),
    ];
    for (line, word) in cases {
        let reply = exchange(&mut c, line).await;
        assert_eq!(code(&reply), -32600, "{line}");
        assert!(
            reply["error"]["message"].as_str().unwrap().contains(word),
            "{line}: {reply}"
        );
    }
}

#[tokio::test]
async fn unknown_method_and_invalid_params() {
    let daemon = Daemon::start();
    let mut c = daemon.client().await;
    let reply = exchange(
        &mut c,
        r#"{"jsonrpc":"2.0","method":"memory.frobnicate","id":"x"}"#,
    )
    .await;
    assert_eq!(code(&reply), -32601);
    assert_eq!(reply["id"], "x");
    assert!(reply["error"]["message"]
        .as_str()
        .unwrap()
        .contains("memory.frobnicate"));

    let reply = exchange(
        &mut c,
        r#"{"jsonrpc":"2.0","method":"memory.get","params":{"idd":"x"},"id":7}"#,
    )
    .await;
    assert_eq!(code(&reply), -32602);
    assert!(
        reply["error"]["message"].as_str().unwrap().contains("idd"),
        "{reply}"
    );
    let reply = exchange(
        &mut c,
        r#"{"jsonrpc":"2.0","method":"memory.add","params":{"content":"x","kind":"dream"},"id":8}"#,
    )
    .await;
    assert_eq!(code(&reply), -32602);
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("dream"),
        "{reply}"
    );
}

#[tokio::test]
async fn frame_over_the_limit_is_refused_without_killing_the_connection() {
    let daemon = Daemon::start_configured(Embedder::Hashed, "max_frame_bytes = 4096\n", &[]);
    let mut c = daemon.client().await;
    let big = format!(
        r#"{{"jsonrpc":"2.0","method":"memory.add","params":{{"content":"{}"}},"id":1}}"#,
        "x".repeat(100_000)
    );
    let reply = exchange(&mut c, &big).await;
    assert_eq!(code(&reply), -32600);
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limit of 4096"),
        "{reply}"
    );
    c.call::<Status>(&NoParams {})
        .await
        .expect("the next frame is read normally");
}

#[tokio::test]
async fn batch_mixing_good_bad_and_notifications() {
    let daemon = Daemon::start();
    let mut c = daemon.client().await;
    let batch = json!([
        {"jsonrpc": "2.0", "method": "daemon.status", "id": 1},
        {"jsonrpc": "2.0", "method": "nope", "id": 2},
        {"jsonrpc": "2.0", "method": "daemon.hello"},
        {"jsonrpc": "2.0", "method": "memory.get", "params": {}, "id": 3},
        5,
    ]);
    let reply = exchange(&mut c, &batch.to_string()).await;
    let replies = reply.as_array().expect("a batch answers with an array");
    assert_eq!(replies.len(), 4, "the notification gets no reply: {reply}");
    let by_id = |id: Value| replies.iter().find(|r| r["id"] == id).unwrap().clone();
    assert!(by_id(json!(1))["result"]["pid"].is_number());
    assert_eq!(code(&by_id(json!(2))), -32601);
    assert_eq!(code(&by_id(json!(3))), -32602);
    assert_eq!(code(&by_id(Value::Null)), -32600);

    // A batch of notifications only: no reply at all, so the next reply is the next request's.
    c.send_line(&json!([{"jsonrpc": "2.0", "method": "daemon.hello"}]).to_string())
        .await
        .unwrap();
    c.send_line(r#"{"jsonrpc":"2.0","method":"daemon.hello"}"#)
        .await
        .unwrap();
    let reply = exchange(
        &mut c,
        r#"{"jsonrpc":"2.0","method":"daemon.hello","id":99}"#,
    )
    .await;
    assert_eq!(reply["id"], 99);
}

#[tokio::test]
async fn pipelined_requests_on_one_connection_are_all_answered() {
    let daemon = Daemon::start();
    let mut c = daemon.client().await;
    for id in 0..50 {
        c.send_line(&json!({"jsonrpc": "2.0", "method": "daemon.hello", "id": id}).to_string())
            .await
            .unwrap();
    }
    let mut seen = HashSet::new();
    for _ in 0..50 {
        let reply: Value = serde_json::from_str(&c.recv_line().await.unwrap()).unwrap();
        assert!(seen.insert(reply["id"].as_i64().unwrap()));
    }
    assert_eq!(seen.len(), 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_clients_two_hundred_calls_each() {
    let daemon = Daemon::start();
    let tasks: Vec<_> = (0..32)
        .map(|n| {
            let socket = daemon.socket.clone();
            tokio::spawn(async move {
                let mut c = Client::connect(&socket).await.unwrap();
                for i in 0..200 {
                    let id = format!("c{n}-{i}");
                    c.send_line(
                        &json!({"jsonrpc": "2.0", "method": "daemon.status", "id": id}).to_string(),
                    )
                    .await
                    .unwrap();
                    let reply: Value = serde_json::from_str(&c.recv_line().await.unwrap()).unwrap();
                    assert_eq!(reply["id"], id.as_str());
                    assert!(reply["result"]["pid"].is_number(), "{reply}");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::test]
async fn subscribers_get_events_until_they_unsubscribe() {
    use mnemo_protocol::events::{Event, Subscribe, Topic, TopicsParams, Unsubscribe};
    use mnemo_protocol::memory::{Add, AddParams};
    let daemon = Daemon::start();
    let mut events = daemon.client().await;
    let subscribed = events
        .call::<Subscribe>(&TopicsParams {
            topics: vec![Topic::Memory],
        })
        .await
        .unwrap();
    assert_eq!(subscribed.topics, vec![Topic::Memory]);
    let mut writer = daemon.client().await;
    let added = writer
        .call::<Add>(&AddParams {
            content: "an event worth seeing".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    // Index maintenance reports on the same topic, whenever it does something.
    let event = loop {
        let event = tokio::time::timeout(std::time::Duration::from_secs(10), events.next_event())
            .await
            .expect("an event within 10 s")
            .unwrap();
        assert_eq!(event.topic, Topic::Memory);
        if !matches!(event.event, Event::IndexMaintained { .. }) {
            break event;
        }
    };
    match event.event {
        Event::MemoryAdded { id, preview, .. } => {
            assert_eq!(id, added.id);
            assert_eq!(preview, "an event worth seeing");
        }
        other => panic!("expected memory_added, got {other:?}"),
    }
    let left = events
        .call::<Unsubscribe>(&TopicsParams::default())
        .await
        .unwrap();
    assert!(left.topics.is_empty());
    writer
        .call::<Add>(&AddParams {
            content: "nobody is listening".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let quiet =
        tokio::time::timeout(std::time::Duration::from_millis(500), events.next_event()).await;
    assert!(quiet.is_err(), "no events after unsubscribe: {quiet:?}");
}
