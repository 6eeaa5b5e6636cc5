//! The link to mnemod: connects (and reconnects every second while it is away), loads the
//! history and state at connect, then follows `subscribe` events on one connection and polls
//! the slower-changing state on another. Everything it learns goes to the app as [`Update`]s.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mnemo_client::{Client, ClientError};
use mnemo_protocol::consolidate::{self, RunsParams};
use mnemo_protocol::daemon::{Hello, HelloParams, Status};
use mnemo_protocol::events::{Subscribe, TopicsParams};
use mnemo_protocol::graph;
use mnemo_protocol::memory::{History, HistoryParams, List, ListParams, Search, SearchParams};
use mnemo_protocol::system::{
    Processes, ProcessesParams, Profile, SystemBudget, SystemHistory, SystemHistoryParams,
};
use mnemo_protocol::time::{format_micros, now_micros};
use mnemo_protocol::{NoParams, PROTOCOL_VERSION};
use tokio::sync::mpsc;

use crate::app::{Command, Detail, Update, HISTORY_POINTS};

pub struct Settings {
    pub socket: PathBuf,
    /// How often status, budget and consolidation state are polled.
    pub refresh: Duration,
}

/// Runs until the app goes away (its receiver is dropped).
pub async fn run(
    settings: Settings,
    updates: mpsc::Sender<Update>,
    mut commands: mpsc::Receiver<Command>,
) {
    loop {
        let error = match session(&settings, &updates, &mut commands).await {
            Ok(()) => return,
            Err(e) => e,
        };
        if updates
            .send(Update::Disconnected(error.to_string()))
            .await
            .is_err()
        {
            return;
        }
        // Keys still work while away; commands sent meanwhile are answered with the reason.
        let retry = tokio::time::sleep(Duration::from_secs(1));
        tokio::pin!(retry);
        loop {
            tokio::select! {
                _ = &mut retry => break,
                command = commands.recv() => match command {
                    None => return,
                    Some(_) => {
                        let _ = updates.send(Update::Message("mnemod is not running; the command was not sent".into())).await;
                    }
                },
            }
        }
    }
}

async fn connect(socket: &Path) -> Result<Client, ClientError> {
    Client::connect(socket).await
}

/// One connected session; returns `Ok` only when the app has gone.
async fn session(
    settings: &Settings,
    updates: &mpsc::Sender<Update>,
    commands: &mut mpsc::Receiver<Command>,
) -> Result<(), ClientError> {
    let mut calls = connect(&settings.socket).await?;
    let hello = calls
        .call::<Hello>(&HelloParams {
            client: Some("mnemo-top".into()),
            protocol_version: Some(PROTOCOL_VERSION),
        })
        .await?;
    let send = |u: Update| async move { updates.send(u).await.is_ok() };
    if !send(Update::Connected {
        version: hello.version,
    })
    .await
    {
        return Ok(());
    }
    // Events first, so nothing between the history load and the subscription is missed
    // (the app drops snapshots it already has).
    let mut events = connect(&settings.socket).await?;
    events
        .call::<Subscribe>(&TopicsParams { topics: Vec::new() })
        .await?;
    let (event_tx, mut event_rx) = mpsc::channel(256);
    let follower = tokio::spawn(async move {
        loop {
            match events.next_event().await {
                Ok(e) => {
                    if event_tx.send(Ok(e.event)).await.is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let _ = event_tx.send(Err(e)).await;
                    return;
                }
            }
        }
    });
    let result = follow(settings, &mut calls, updates, commands, &mut event_rx).await;
    follower.abort();
    result
}

async fn follow(
    settings: &Settings,
    calls: &mut Client,
    updates: &mpsc::Sender<Update>,
    commands: &mut mpsc::Receiver<Command>,
    events: &mut mpsc::Receiver<Result<mnemo_protocol::events::Event, ClientError>>,
) -> Result<(), ClientError> {
    let profile = calls.call::<Profile>(&NoParams {}).await?;
    let step = 5;
    let since = now_micros() - (HISTORY_POINTS as i64 * step as i64) * 1_000_000;
    let history = calls
        .call::<SystemHistory>(&SystemHistoryParams {
            since: Some(format_micros(since)),
            until: None,
            step: Some(step),
            fields: None,
        })
        .await?;
    let snapshots = history
        .points
        .into_iter()
        .filter_map(|p| serde_json::from_value(p).ok())
        .collect();
    let recent = calls
        .call::<List>(&ListParams {
            limit: Some(30),
            ..Default::default()
        })
        .await?;
    for u in [
        Update::Profile(Box::new(profile)),
        Update::History(snapshots),
        Update::Recent(recent.memories),
    ] {
        if updates.send(u).await.is_err() {
            return Ok(());
        }
    }
    let mut poll = tokio::time::interval(settings.refresh);
    let mut polls: u64 = 0;
    loop {
        let update = tokio::select! {
            _ = poll.tick() => {
                polls += 1;
                if !poll_state(calls, updates, polls, settings.refresh).await? {
                    return Ok(());
                }
                continue;
            }
            event = events.recv() => match event {
                Some(Ok(e)) => {
                    let ended = matches!(e, mnemo_protocol::events::Event::Consolidation { status, .. }
                        if status != consolidate::RunStatus::Running);
                    if ended {
                        // A run ended: its record and the state are worth fetching now.
                        poll_consolidation(calls, updates).await?;
                    }
                    Update::Event(Box::new(e))
                }
                Some(Err(e)) => return Err(e),
                None => return Err(ClientError::Closed),
            },
            command = commands.recv() => match command {
                None => return Ok(()),
                Some(c) => execute(calls, c).await?,
            },
        };
        if updates.send(update).await.is_err() {
            return Ok(());
        }
    }
}

/// The state that changes without events: status (counts, rates), budget, consolidation, and
/// every few polls the process inventory. Returns false when the app has gone.
async fn poll_state(
    calls: &mut Client,
    updates: &mpsc::Sender<Update>,
    polls: u64,
    refresh: Duration,
) -> Result<bool, ClientError> {
    let status = calls.call::<Status>(&NoParams {}).await?;
    let budget = calls.call::<SystemBudget>(&NoParams {}).await?;
    let mut list = vec![Update::Status(Box::new(status)), Update::Budget(budget)];
    // Processes change slowly and cost more to draw: every ~5 s.
    let every = (5_000 / refresh.as_millis().max(1) as u64).max(1);
    if (polls - 1).is_multiple_of(every) {
        let p = calls
            .call::<Processes>(&ProcessesParams {
                limit: Some(200),
                ..Default::default()
            })
            .await?;
        list.push(Update::Processes(p.processes, p.inference));
    }
    for u in list {
        if updates.send(u).await.is_err() {
            return Ok(false);
        }
    }
    poll_consolidation(calls, updates).await?;
    Ok(true)
}

async fn poll_consolidation(
    calls: &mut Client,
    updates: &mpsc::Sender<Update>,
) -> Result<(), ClientError> {
    let status = calls
        .call::<consolidate::ConsolidateStatus>(&NoParams {})
        .await?;
    let runs = calls
        .call::<consolidate::ConsolidateRuns>(&RunsParams { limit: Some(20) })
        .await?;
    let _ = updates.send(Update::Consolidation(Box::new(status))).await;
    let _ = updates.send(Update::Runs(runs.runs)).await;
    Ok(())
}

/// Carries out a command; a refusal from the daemon is shown, a broken connection returned.
async fn execute(calls: &mut Client, command: Command) -> Result<Update, ClientError> {
    let shown = |e: ClientError| match e {
        ClientError::Rpc(e) => Ok(e.message),
        other => Err(other),
    };
    Ok(match command {
        Command::Search(query) => {
            let result = calls
                .call::<Search>(&SearchParams {
                    query,
                    k: Some(20),
                    explain: true,
                    ..Default::default()
                })
                .await;
            match result {
                Ok(r) => Update::Search(Ok(r)),
                Err(e) => Update::Search(Err(shown(e)?)),
            }
        }
        Command::Open(id) => match calls
            .call::<History>(&HistoryParams { id: id.clone() })
            .await
        {
            Ok(h) => {
                let memory = h
                    .versions
                    .iter()
                    .find(|m| m.id == id)
                    .or(h.versions.last())
                    .cloned();
                match memory {
                    Some(memory) => Update::Detail(Ok(Box::new(Detail {
                        links: links(calls, &memory.id).await,
                        memory,
                        history: h.versions,
                    }))),
                    None => Update::Detail(Err(format!("memory {id} is gone"))),
                }
            }
            Err(e) => Update::Detail(Err(shown(e)?)),
        },
        Command::Consolidate => match calls
            .call::<consolidate::ConsolidateRun>(&NoParams {})
            .await
        {
            Ok(r) => Update::Message(if r.already_running {
                format!("consolidation run {} is already running", r.run_id)
            } else {
                format!("consolidation run {} started", r.run_id)
            }),
            Err(e) => Update::Message(shown(e)?),
        },
    })
}

/// A memory's edges for its detail view, strongest first; none when the graph cannot say.
async fn links(calls: &mut Client, id: &str) -> Vec<(String, f32, String)> {
    let params = graph::NeighborsParams {
        node: graph::Node::memory(id),
        namespace: None,
        types: Vec::new(),
        min_weight: None,
        depth: None,
        limit: Some(20),
    };
    let Ok(r) = calls.call::<graph::Neighbors>(&params).await else {
        return Vec::new();
    };
    let start = r.nodes.first().map(|n| n.node.clone());
    let label = |node: &graph::Node| {
        r.nodes
            .iter()
            .find(|n| n.node == *node)
            .map(|n| n.label.clone())
            .unwrap_or_else(|| node.id.clone())
    };
    let mut links: Vec<(String, f32, String)> = r
        .edges
        .iter()
        .map(|e| {
            let other = if Some(&e.src) == start.as_ref() {
                &e.dst
            } else {
                &e.src
            };
            (e.edge_type.to_string(), e.weight, label(other))
        })
        .collect();
    links.sort_by(|a, b| b.1.total_cmp(&a.1));
    links
}
