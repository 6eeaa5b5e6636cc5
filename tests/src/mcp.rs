//! An MCP client this project did not write — the official MCP Python SDK, installed by
//! `packaging/mcp-client.sh` — driving `mnemo mcp` one step at a time (`tests/mcp/driver.py`).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

use crate::workspace_bin;

/// Where `packaging/mcp-client.sh` installed the SDK.
fn sdk_dir() -> PathBuf {
    let dir = std::env::var_os("MNEMO_MCP_CLIENT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/mnemo/mcp-client")
        });
    assert!(
        dir.join("mcp").is_dir(),
        "the MCP Python SDK is not in {}; run packaging/mcp-client.sh (scripts/test.sh does)",
        dir.display()
    );
    dir
}

/// One `mnemo mcp` process under the SDK's `ClientSession`, initialized.
pub struct McpSession {
    driver: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// The bridge's stderr (its logs), for failure messages.
    pub stderr_log: PathBuf,
    /// The `initialize` result, in its wire form.
    pub initialized: Value,
}

impl McpSession {
    /// Starts `mnemo mcp ARGS` with `env` (the SDK passes only a few variables of its own:
    /// HOME, PATH, USER…) and completes the handshake.
    pub fn start(args: &[&str], env: &[(&str, String)], stderr_log: PathBuf) -> McpSession {
        let mut bridge_args = vec!["mcp".to_string()];
        bridge_args.extend(args.iter().map(|a| a.to_string()));
        let env: serde_json::Map<String, Value> = env
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.clone())))
            .collect();
        let spec = json!({
            "command": workspace_bin("mnemo"),
            "args": bridge_args,
            "env": env,
            "stderr": stderr_log,
        });
        let mut driver = Command::new("python3")
            .arg(crate::tests_dir().join("mcp/driver.py"))
            .arg(spec.to_string())
            .env("PYTHONPATH", sdk_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("run python3 with the MCP SDK");
        let stdin = driver.stdin.take();
        let stdout = BufReader::new(driver.stdout.take().expect("stdout"));
        let mut session = McpSession {
            driver,
            stdin,
            stdout,
            stderr_log,
            initialized: Value::Null,
        };
        session.initialized = session.read_line();
        session
    }

    fn read_line(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("driver output");
        assert!(
            !line.is_empty(),
            "the MCP driver ended early; bridge log:\n{}",
            self.bridge_log()
        );
        serde_json::from_str(&line).expect("driver output is JSON")
    }

    pub fn bridge_log(&self) -> String {
        std::fs::read_to_string(&self.stderr_log).unwrap_or_default()
    }

    /// One step (see driver.py) and what came of it: its result, or `{"exception": …}` when
    /// the client raised (a protocol error).
    pub fn try_step(&mut self, step: &Value) -> Value {
        let stdin = self.stdin.as_mut().expect("open");
        writeln!(stdin, "{step}").expect("write step");
        stdin.flush().expect("flush");
        self.read_line()
    }

    /// One step, which must succeed at the protocol level, and its result.
    pub fn step(&mut self, step: Value) -> Value {
        let result = self.try_step(&step);
        assert!(
            result.get("exception").is_none(),
            "step {step} failed in the client: {result}\nbridge log:\n{}",
            self.bridge_log()
        );
        result
    }

    /// A tool call's result: `content`, `structuredContent`, `isError`.
    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        self.step(json!({ "op": "call", "tool": tool, "args": args }))
    }

    /// A tool call's first text block.
    pub fn call_text(&mut self, tool: &str, args: Value) -> (String, Value) {
        let result = self.call(tool, args);
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        (text, result)
    }
}

impl Drop for McpSession {
    fn drop(&mut self) {
        // End of input ends the session, the bridge with it.
        self.stdin.take();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        while self.driver.try_wait().ok().flatten().is_none() {
            if std::time::Instant::now() > deadline {
                let _ = self.driver.kill();
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.driver.wait();
    }
}
