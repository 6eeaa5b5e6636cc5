//! `mnemo mcp` driven end to end by the official MCP Python SDK against a real mnemod:
//! handshake, tool listing, remember → recall → update → forget, resources, bad input, and
//! what happens when no mnemod answers.

use mnemo_client::Client;
use mnemo_protocol::daemon::{Shutdown, Status};
use mnemo_protocol::memory::{Get, GetParams};
use mnemo_protocol::NoParams;
use mnemo_tests::mcp::McpSession;
use mnemo_tests::{private_dir, Daemon, Embedder};
use serde_json::{json, Value};

fn session_for(daemon: &Daemon) -> McpSession {
    McpSession::start(
        &["--no-start"],
        &[("MNEMO_SOCKET", daemon.socket.display().to_string())],
        daemon.home.path().join("bridge.log"),
    )
}

fn names(list: &Value, key: &str, field: &str) -> Vec<String> {
    list[key]
        .as_array()
        .expect(key)
        .iter()
        .map(|t| t[field].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn an_mcp_client_remembers_recalls_updates_and_forgets_through_the_bridge() {
    let daemon = Daemon::start_with(Embedder::Minilm, &[]);
    let mut mcp = session_for(&daemon);
    assert_eq!(mcp.initialized["serverInfo"]["name"], "mnemo");
    assert!(mcp.initialized["instructions"]
        .as_str()
        .is_some_and(|i| i.contains("recall")));

    let tools = mcp.step(json!({ "op": "list_tools" }));
    let tool_names = names(&tools, "tools", "name");
    for wanted in [
        "remember",
        "recall",
        "forget",
        "update",
        "list_recent",
        "entities",
        "preferences",
        "set_preference",
        "whoami",
        "context",
        "record_episode",
        "warnings",
    ] {
        assert!(
            tool_names.iter().any(|n| n == wanted),
            "{wanted} in {tool_names:?}"
        );
    }
    let remember = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "remember")
        .unwrap();
    assert_eq!(remember["inputSchema"]["required"], json!(["content"]));
    assert!(remember["inputSchema"]["properties"]["kind"]["enum"]
        .as_array()
        .is_some_and(|kinds| kinds.contains(&json!("preference"))));
    assert!(remember["description"].as_str().unwrap().len() > 40);

    let (text, stored) = mcp.call_text(
        "remember",
        json!({ "content": "Maria prefers green tea to coffee in the morning", "kind": "preference", "tags": ["drinks"] }),
    );
    assert_ne!(stored["isError"], json!(true), "{stored}");
    let id = stored["structuredContent"]["id"]
        .as_str()
        .expect("id")
        .to_string();
    assert!(text.contains(&id), "{text}");
    mcp.call(
        "remember",
        json!({ "content": "The quarterly report is due on Friday" }),
    );

    let (text, found) = mcp.call_text(
        "recall",
        json!({ "query": "what does Maria like to drink?", "k": 2 }),
    );
    assert_ne!(found["isError"], json!(true), "{found}");
    assert_eq!(
        found["structuredContent"]["hits"][0]["id"],
        json!(id),
        "{found}"
    );
    assert!(text.contains("green tea") && text.contains(&id), "{text}");

    // The user model: what a remembered line says of the person, and a stated preference.
    mcp.call(
        "remember",
        json!({ "content": "My name is Alex and I live in Lisbon" }),
    );
    let (text, me) = mcp.call_text("whoami", json!({}));
    assert!(
        text.contains("Name: Alex") && text.contains("lives in Lisbon"),
        "{text}"
    );
    assert_eq!(me["structuredContent"]["name"][0]["value"], json!("Alex"));
    let (text, _) = mcp.call_text(
        "set_preference",
        json!({ "domain": "writing", "key": "emojis", "value": "never" }),
    );
    assert!(text.contains("User never wants emojis"), "{text}");
    let (text, _) = mcp.call_text("preferences", json!({ "domain": "writing" }));
    assert!(
        text.contains("emojis") && text.contains("explicit"),
        "{text}"
    );
    let last = mcp.step(json!({ "op": "read", "uri": "mnemo://sessions/last" }));
    assert!(
        last.to_string().contains("No session has ended yet"),
        "{last}"
    );
    let lately = mcp.step(json!({ "op": "read", "uri": "mnemo://summaries" }));
    assert!(
        lately.to_string().contains("no living summaries yet"),
        "{lately}"
    );
    let who = mcp.step(json!({ "op": "read", "uri": "mnemo://identity" }));
    let who = who.to_string();
    assert!(
        who.contains("Name: Alex") && who.contains("User never wants emojis"),
        "{who}"
    );
    // The package an assistant starts from: the person, their rules, the relevant memory.
    let (text, package) = mcp.call_text(
        "context",
        json!({ "query": "what should I drink in the morning", "budget": 300 }),
    );
    assert_ne!(package["isError"], json!(true), "{package}");
    assert!(
        text.contains("Name: Alex")
            && text.contains("User never wants emojis")
            && text.contains("green tea"),
        "{text}"
    );
    assert!(package["structuredContent"]["tokens"].as_u64().unwrap() <= 300);
    let (text, refused) = mcp.call_text("context", json!({ "budget": 5 }));
    assert_eq!(refused["isError"], json!(true));
    assert!(text.contains("ask for at least 64"), "{text}");
    let (text, refused) = mcp.call_text(
        "set_preference",
        json!({ "domain": "", "key": "x", "value": "y" }),
    );
    assert_eq!(refused["isError"], json!(true));
    assert!(text.contains("domain is empty"), "{text}");

    // An agent records what an action did; the next action on the same file is warned.
    let (text, recorded) = mcp.call_text(
        "record_episode",
        json!({
            "action": "edit", "targets": ["/srv/demo/app.py"], "outcome": "failure",
            "error": "SyntaxError: invalid syntax", "task": "add the login form"
        }),
    );
    assert_ne!(recorded["isError"], json!(true), "{recorded}");
    assert!(text.contains("app.py failed"), "{text}");
    let (text, _) = mcp.call_text("warnings", json!({ "files": ["/srv/demo/app.py"] }));
    assert!(text.contains("SyntaxError: invalid syntax"), "{text}");
    let (text, _) = mcp.call_text("warnings", json!({ "files": ["/srv/demo/other.py"] }));
    assert_eq!(text, "Nothing to warn about.");
    let (text, refused) = mcp.call_text(
        "record_episode",
        json!({ "action": "jump", "targets": ["x"], "outcome": "success" }),
    );
    assert_eq!(refused["isError"], json!(true));
    assert!(text.contains("unknown action `jump`"), "{text}");

    // What the client remembered is recorded as coming from it.
    let mut client = daemon.client().await;
    let memory = client
        .call::<Get>(&GetParams { id: id.clone() })
        .await
        .unwrap();
    assert!(
        memory
            .source
            .as_deref()
            .is_some_and(|s| s.starts_with("mcp")),
        "{:?}",
        memory.source
    );

    let resources = mcp.step(json!({ "op": "list_resources" }));
    assert!(names(&resources, "resources", "uri").contains(&"mnemo://memories/recent".to_string()));
    let recent = mcp.step(json!({ "op": "read", "uri": "mnemo://memories/recent" }));
    let recent_text = recent["contents"][0]["text"].as_str().unwrap();
    assert!(
        recent_text.contains("quarterly report") && recent_text.contains("green tea"),
        "{recent_text}"
    );

    let (text, updated) = mcp.call_text(
        "update",
        json!({ "id": id, "content": "Maria prefers jasmine tea to coffee in the morning" }),
    );
    assert_ne!(updated["isError"], json!(true), "{updated}");
    assert!(text.contains("jasmine"), "{text}");
    let one = mcp.step(json!({ "op": "read", "uri": format!("mnemo://memory/{id}") }));
    let one_text = one["contents"][0]["text"].as_str().unwrap();
    assert!(
        one_text.contains("earlier: [") && one_text.contains("green tea"),
        "{one_text}"
    );
    assert!(
        one_text.contains("current: [") && one_text.contains("jasmine"),
        "{one_text}"
    );

    let (text, forgot) = mcp.call_text("forget", json!({ "ids": [id] }));
    assert_ne!(forgot["isError"], json!(true), "{forgot}");
    assert!(text.starts_with("Forgot 1 memory"), "{text}");
    let (_, found) = mcp.call_text("recall", json!({ "query": "Maria tea", "k": 5 }));
    assert!(!found.to_string().contains("jasmine"), "{found}");
}

#[tokio::test]
async fn bad_arguments_are_tool_errors_that_say_what_to_fix() {
    let daemon = Daemon::start();
    let mut mcp = session_for(&daemon);
    let (text, result) = mcp.call_text("remember", json!({ "content": "x", "kind": "gossip" }));
    assert_eq!(result["isError"], json!(true));
    assert!(
        text.contains("unknown kind `gossip`") && text.contains("preference"),
        "{text}"
    );

    let (text, result) = mcp.call_text("remember", json!({ "content": "   " }));
    assert_eq!(result["isError"], json!(true), "{result}");
    assert!(text.contains("content"), "{text}");

    let (text, result) = mcp.call_text("recall", json!({ "query": "tea", "k": 500 }));
    assert_eq!(result["isError"], json!(true));
    assert!(text.contains("at most 50"), "{text}");

    let (text, result) = mcp.call_text("forget", json!({ "ids": [] }));
    assert_eq!(result["isError"], json!(true));
    assert!(text.contains("by id"), "{text}");

    let missing = mcp.try_step(&json!({ "op": "read", "uri": "mnemo://nothing" }));
    let why = missing["exception"].as_str().expect("a protocol error");
    assert!(
        why.contains("no resource at mnemo://nothing") && why.contains("mnemo://memories/recent"),
        "{why}"
    );
    // The bridge is still serving after every refusal.
    let (_, result) = mcp.call_text("list_recent", json!({}));
    assert_ne!(result["isError"], json!(true), "{result}");
}

#[tokio::test]
async fn without_mnemod_the_handshake_answers_and_calls_say_it_is_not_running() {
    let home = private_dir();
    let socket = home.path().join("run").join("mnemod.sock");
    let mut mcp = McpSession::start(
        &["--no-start"],
        &[("MNEMO_SOCKET", socket.display().to_string())],
        home.path().join("bridge.log"),
    );
    assert_eq!(mcp.initialized["serverInfo"]["name"], "mnemo");
    let (text, result) = mcp.call_text("recall", json!({ "query": "anything" }));
    assert_eq!(result["isError"], json!(true), "{result}");
    assert!(
        text.contains("mnemod is not running") && text.contains(&socket.display().to_string()),
        "{text}"
    );
    // Nothing but protocol on stdout: the SDK would have failed to parse anything else.
    let tools = mcp.step(json!({ "op": "list_tools" }));
    assert!(!names(&tools, "tools", "name").is_empty());
}

/// Stops the mnemod the bridge started, even when the test fails.
struct StartedDaemon(std::path::PathBuf);

impl Drop for StartedDaemon {
    fn drop(&mut self) {
        let socket = self.0.clone();
        let _ = std::thread::spawn(move || {
            tokio::runtime::Runtime::new().unwrap().block_on(async {
                if let Ok(mut c) = Client::connect(&socket).await {
                    let _ = c.call::<Shutdown>(&NoParams {}).await;
                }
            })
        })
        .join();
    }
}

#[tokio::test]
async fn the_bridge_starts_mnemod_when_nothing_answers() {
    let home = private_dir();
    let socket = home.path().join("run").join("mnemod.sock");
    let data_dir = home.path().join("data");
    let config = home.path().join("config.toml");
    std::fs::write(&config, "").unwrap();
    let _stop = StartedDaemon(socket.clone());
    let mut mcp = McpSession::start(
        &[],
        &[
            ("MNEMO_SOCKET", socket.display().to_string()),
            ("MNEMO_DATA_DIR", data_dir.display().to_string()),
            ("MNEMO_CONFIG", config.display().to_string()),
            ("MNEMO_EMBEDDER", "hashed".into()),
            (
                "DBUS_SESSION_BUS_ADDRESS",
                format!("unix:path={}", home.path().join("no-bus").display()),
            ),
        ],
        home.path().join("bridge.log"),
    );
    let (text, result) = mcp.call_text(
        "remember",
        json!({ "content": "the bridge started its daemon" }),
    );
    assert_ne!(
        result["isError"],
        json!(true),
        "{result}\n{}",
        mcp.bridge_log()
    );
    assert!(text.starts_with("Remembered"), "{text}");

    let mut client = Client::connect(&socket)
        .await
        .expect("the started mnemod answers");
    let status = client.call::<Status>(&NoParams {}).await.unwrap();
    assert_eq!(std::path::Path::new(&status.data_dir), data_dir);
    assert_eq!(status.memories.total, 1);
    assert!(data_dir.join("mnemod.log").is_file());
    // Its log may quote the store: 0600, in a data dir of 0700, as every file there.
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data_dir.join("mnemod.log")), 0o600);
    assert_eq!(mode(&data_dir), 0o700);
    // It outlives the bridge: it is the user's daemon now, not the session's.
    drop(mcp);
    assert!(Client::connect(&socket).await.is_ok());
}

#[tokio::test]
async fn the_bridge_reconnects_when_mnemod_restarts() {
    let mut daemon = Daemon::start();
    let mut mcp = session_for(&daemon);
    mcp.call("remember", json!({ "content": "kept across a restart" }));
    daemon.stop();
    daemon.restart();
    let (text, result) = mcp.call_text("recall", json!({ "query": "kept across a restart" }));
    assert_ne!(
        result["isError"],
        json!(true),
        "{result}\n{}",
        mcp.bridge_log()
    );
    assert!(text.contains("kept across a restart"), "{text}");
    // The old connection broke and the read went again on a new one.
    assert!(
        mcp.bridge_log().contains("reconnecting"),
        "{}",
        mcp.bridge_log()
    );
}
