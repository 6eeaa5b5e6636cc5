//! One client cannot starve the rest: a client that sends without reading holds a bounded
//! share of the daemon's memory, and a huge batch neither locks others out nor runs at once.
#![cfg(unix)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use mnemo_client::Client;
use mnemo_protocol::daemon::Status;
use mnemo_protocol::memory::{Add, AddParams, Search, SearchParams};
use mnemo_protocol::NoParams;
use mnemo_tests::{wait_for, Daemon, Embedder};
use serde_json::{json, Value};

/// mnemod's resident memory in MiB.
fn rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kib / 1024
}

#[tokio::test]
async fn a_client_that_sends_without_reading_holds_bounded_memory() {
    let daemon = Daemon::start();
    let pid = daemon.pid();
    let before = rss_mib(pid);
    // 100 pipelined frames of 7.9 MB (each an add whose content is far over the limit); the
    // client never reads a reply.
    let content = "x".repeat(7_900_000);
    let frame = json!({"jsonrpc": "2.0", "id": 1, "method": "memory.add",
        "params": {"content": content}})
    .to_string()
        + "\n";
    let mut stream = UnixStream::connect(&daemon.socket).unwrap();
    let sender = tokio::task::spawn_blocking(move || {
        for _ in 0..100 {
            if stream.write_all(frame.as_bytes()).is_err() {
                break;
            }
        }
        stream
    });
    let mut peak = before;
    while !sender.is_finished() {
        peak = peak.max(rss_mib(pid));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stream = sender.await.unwrap();
    peak = peak.max(rss_mib(pid));
    // Meanwhile the daemon serves others.
    let mut other = daemon.client().await;
    other.call::<Status>(&NoParams {}).await.unwrap();
    drop(stream);
    // After the client leaves, its memory goes back.
    let after = wait_for(
        Duration::from_secs(30),
        "the connection's memory to be given back",
        || async {
            let now = rss_mib(pid);
            (now < before + 100).then_some(now)
        },
    )
    .await;
    eprintln!("RSS: {before} MiB before, peak {peak} MiB, {after} MiB after the client left");
    // Unbounded, the 790 MB sent would all be held; the budget keeps a small multiple of a frame.
    assert!(
        peak < before + 400,
        "mnemod grew from {before} to {peak} MiB"
    );
}

#[test]
fn a_batch_over_the_limit_gets_one_clear_error() {
    let daemon = Daemon::start();
    let calls: Vec<Value> = (0..10_000)
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "daemon.status"}))
        .collect();
    let mut stream = UnixStream::connect(&daemon.socket).unwrap();
    writeln!(stream, "{}", Value::Array(calls)).unwrap();
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line).unwrap();
    let reply: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("batch of 10000 requests is over the limit of 256"),
        "{message}"
    );
}

/// Batches as large as allowed, pipelined on one connection, leave room for everyone else:
/// no other client is refused as overloaded, and neither is the batch's own calls.
#[tokio::test]
async fn one_connection_cannot_take_every_request_slot() {
    // A small global limit: a batch of 256 is far over it, and the connection must wait
    // for its own turns instead of being refused or starving the other client.
    let daemon = Daemon::start_configured(Embedder::Hashed, "max_in_flight = 8\n", &[]);
    let mut seed = daemon.client().await;
    for i in 0..20 {
        seed.call::<Add>(&AddParams {
            content: format!("note {i} about gardens and tomatoes"),
            ..Default::default()
        })
        .await
        .unwrap();
    }
    let socket = daemon.socket.clone();
    let greedy = tokio::task::spawn_blocking(move || {
        let mut stream = UnixStream::connect(&socket).unwrap();
        let batches = 1;
        for b in 0..batches {
            let calls: Vec<Value> = (0..256)
                .map(|i| {
                    json!({"jsonrpc": "2.0", "id": b * 1000 + i, "method": "memory.list",
                    "params": {"limit": 5}})
                })
                .collect();
            writeln!(stream, "{}", Value::Array(calls)).unwrap();
        }
        let mut reader = BufReader::new(&stream);
        let mut overloaded = 0;
        let mut answered = 0;
        for _ in 0..batches {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let replies: Vec<Value> = serde_json::from_str(&line).unwrap();
            answered += replies.len();
            overloaded += replies
                .iter()
                .filter(|r| r["error"]["code"] == -32003)
                .count();
        }
        (answered, overloaded)
    });
    let mut other = Client::connect(&daemon.socket).await.unwrap();
    let mut refused = 0;
    while !greedy.is_finished() {
        let result = other
            .call::<Search>(&SearchParams {
                query: "tomatoes".into(),
                k: Some(3),
                ..Default::default()
            })
            .await;
        if let Err(e) = result {
            assert!(e.to_string().contains("in flight"), "{e}");
            refused += 1;
        }
    }
    let (answered, overloaded) = greedy.await.unwrap();
    assert_eq!(answered, 256);
    assert_eq!(overloaded, 0, "the batches were refused their own slots");
    assert_eq!(
        refused, 0,
        "another client was refused while one connection pipelined"
    );
}
