//! An acknowledged write survives SIGKILL: a writer records every id the daemon acknowledged,
//! the daemon is killed mid-stream, and after a restart every one of them is there, intact.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mnemo_client::Client;
use mnemo_protocol::memory::{Add, AddParams, Get, GetParams, List, ListParams};
use mnemo_tests::Daemon;

/// Every current memory, id to content, read page by page.
async fn all_memories(c: &mut Client) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut cursor = None;
    loop {
        let page = c
            .call::<List>(&ListParams {
                limit: Some(1000),
                cursor,
                ..Default::default()
            })
            .await
            .unwrap();
        out.extend(page.memories.into_iter().map(|m| (m.id, m.content)));
        cursor = page.next_cursor;
        if cursor.is_none() {
            return out;
        }
    }
}

/// Acknowledged writes each cycle waits for before the kill (four cycles: over 100 in all).
const WRITES_BEFORE_THE_KILL: usize = 30;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_writes_survive_sigkill() {
    let mut daemon = Daemon::start();
    let mut acknowledged: Vec<(String, String)> = Vec::new();
    for cycle in 0..4 {
        // Four writers add as fast as they can; the daemon is killed under them.
        let acked_this_cycle = Arc::new(AtomicUsize::new(0));
        let writers: Vec<_> = (0..4)
            .map(|w| {
                let socket = daemon.socket.clone();
                let acked_this_cycle = acked_this_cycle.clone();
                tokio::spawn(async move {
                    let mut acked = Vec::new();
                    let Ok(mut c) = Client::connect(&socket).await else {
                        return acked;
                    };
                    for i in 0.. {
                        let content = format!(
                            "cycle {cycle} writer {w} memory {i}: {}",
                            "detail ".repeat(i % 7)
                        );
                        match c
                            .call::<Add>(&AddParams {
                                content: content.clone(),
                                ..Default::default()
                            })
                            .await
                        {
                            Ok(m) => {
                                acked.push((m.id, content));
                                acked_this_cycle.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(_) => break,
                        }
                    }
                    acked
                })
            })
            .collect();
        // Killed once enough writes are acknowledged to mean something, however fast this
        // machine writes (a fixed wait saw 72 on a slow hour), a little later each cycle.
        for _ in 0..6000 {
            if acked_this_cycle.load(Ordering::Relaxed) >= WRITES_BEFORE_THE_KILL {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(50 * cycle)).await;
        daemon.crash();
        for w in writers {
            acknowledged.extend(w.await.unwrap());
        }
        daemon.restart();
        let stored = all_memories(&mut daemon.client().await).await;
        for (id, content) in &acknowledged {
            let found = stored
                .get(id)
                .unwrap_or_else(|| panic!("cycle {cycle}: lost acknowledged {id}"));
            assert_eq!(found, content, "cycle {cycle}: {id} changed");
        }
        // One spot check through memory.get as well.
        let (id, content) = acknowledged.last().expect("some writes were acknowledged");
        let m = daemon
            .client()
            .await
            .call::<Get>(&GetParams { id: id.clone() })
            .await
            .unwrap();
        assert_eq!(&m.content, content);
    }
    eprintln!(
        "{} acknowledged writes survived 4 SIGKILLs",
        acknowledged.len()
    );
    assert!(
        acknowledged.len() > 100,
        "too few writes to mean anything: {}",
        acknowledged.len()
    );
}
