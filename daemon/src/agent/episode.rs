//! An episode as stored: an episodic memory whose action, outcome, duration and targets are
//! columns, with the rest of its state (error, actor, branch, task, note, the targets as
//! given) in the metadata under `episode`. Pure functions: validation, how targets are
//! normalised, the sentence the memory says, and the brief the triggered layer keeps.

use std::path::{Component, Path, PathBuf};

use mnemo_protocol::agent::{
    Action, ActionState, Episode, Outcome, RecordParams, MAX_ERROR_CHARS, MAX_TARGETS,
};
use mnemo_protocol::time::format_micros;
use serde::{Deserialize, Serialize};

use crate::ingest::validate_label;
use crate::store::MemoryRecord;
use crate::understand::sentences::{clip, first_sentence};

/// Longest target, in bytes.
const MAX_TARGET_BYTES: usize = 2048;
/// Longest task or note, in bytes.
const MAX_TEXT_BYTES: usize = 4096;

/// What an episode's metadata keeps under `episode`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EpisodeMeta {
    pub targets: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What the triggered layer keeps of an episode.
#[derive(Debug, Clone, PartialEq)]
pub struct Brief {
    pub id: String,
    pub namespace: String,
    pub at: i64,
    pub action: Action,
    /// Normalised: what lookups compare.
    pub targets: Vec<String>,
    pub outcome: Outcome,
    pub error: Option<String>,
    pub duration_ms: Option<u64>,
    pub actor: Option<String>,
    pub cwd: Option<String>,
    pub branch: Option<String>,
    pub task: Option<String>,
    pub note: Option<String>,
    pub project_id: Option<String>,
    pub session_id: Option<String>,
}

/// Checks what a record says before anything is stored; errors say what to fix.
pub fn validate(p: &RecordParams) -> Result<(), String> {
    if p.targets.is_empty() {
        return Err(format!(
            "targets is empty; name what the {} was about (a file, a command line, a tool, a task)",
            p.action
        ));
    }
    if p.targets.len() > MAX_TARGETS {
        return Err(format!(
            "{} targets; the limit is {MAX_TARGETS} per episode",
            p.targets.len()
        ));
    }
    if let Some(t) = p.targets.iter().find(|t| t.trim().is_empty()) {
        return Err(format!("a target is empty ({t:?}); leave it out"));
    }
    if let Some(t) = p.targets.iter().find(|t| t.len() > MAX_TARGET_BYTES) {
        return Err(format!(
            "a target is {} bytes; the limit is {MAX_TARGET_BYTES}",
            t.len()
        ));
    }
    for (what, v) in [
        ("actor", &p.actor),
        ("branch", &p.state.branch),
        ("namespace", &p.namespace),
        ("session_id", &p.state.session_id),
    ] {
        validate_label(what, v.as_deref())?;
    }
    for (what, v) in [("task", &p.state.task), ("note", &p.note)] {
        if v.as_ref().is_some_and(|v| v.len() > MAX_TEXT_BYTES) {
            return Err(format!("{what} is over {MAX_TEXT_BYTES} bytes"));
        }
    }
    validate_cwd(p.state.cwd.as_deref())?;
    if p.outcome == Outcome::Success && p.error.is_some() {
        return Err("an error was given with outcome success; say failure or partial".into());
    }
    Ok(())
}

/// A working directory must be absolute (it is what relative paths are read against).
pub fn validate_cwd(cwd: Option<&str>) -> Result<(), String> {
    match cwd {
        Some(c) if !Path::new(c).is_absolute() => {
            Err(format!("cwd `{c}` is not absolute; give the full path"))
        }
        _ => Ok(()),
    }
}

/// Targets as lookups compare them: file paths of an edit made absolute against `cwd` and
/// cleaned (`.`, `..`, doubled slashes); command lines with their spacing collapsed; the
/// rest trimmed.
pub fn normalize_targets(action: Action, targets: &[String], cwd: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = targets
        .iter()
        .map(|t| match action {
            Action::Edit => normalize_path(t, cwd),
            Action::Command => normalize_command(t),
            Action::Tool | Action::Task => t.trim().to_string(),
        })
        .collect();
    out.dedup();
    out
}

pub fn normalize_path(path: &str, cwd: Option<&str>) -> String {
    let path = path.trim();
    let joined = match cwd {
        Some(cwd) if !Path::new(path).is_absolute() => Path::new(cwd).join(path),
        _ => PathBuf::from(path),
    };
    let mut clean = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                clean.pop();
            }
            other => clean.push(other.as_os_str()),
        }
    }
    clean.to_string_lossy().to_string()
}

pub fn normalize_command(command: &str) -> String {
    command.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What kind of command a line runs: its program and first word that is not an option, a
/// path or a variable (`cargo test`, `npm run`, `./deploy.sh`) — what "the same command in
/// a similar state" compares.
pub fn program(command: &str) -> String {
    let mut words = command
        .split_whitespace()
        .skip_while(|w| w.contains('=') && !w.starts_with('-'))
        .skip_while(|w| matches!(*w, "sudo" | "env" | "time" | "nice" | "exec"));
    let Some(first) = words.next() else {
        return String::new();
    };
    let first = first
        .rsplit('/')
        .next()
        .filter(|_| !first.starts_with('.'))
        .unwrap_or(first);
    match words.next() {
        Some(w)
            if !w.starts_with('-')
                && !w.contains('/')
                && !w.contains('=')
                && !w.contains('.')
                && w.len() <= 24 =>
        {
            format!("{first} {w}")
        }
        _ => first.to_string(),
    }
}

/// How a target is named in a sentence: a file by its last two path parts, a command in
/// backquotes, clipped.
pub fn shown(action: Action, target: &str) -> String {
    match action {
        Action::Edit => {
            let parts: Vec<&str> = target.rsplit('/').take(2).collect();
            parts.into_iter().rev().collect::<Vec<_>>().join("/")
        }
        Action::Command => format!("`{}`", clip(target, 80)),
        Action::Tool | Action::Task => clip(target, 80),
    }
}

/// The verb phrase of an action on its targets: "edit of src/auth.py", "`cargo test`".
pub fn doing(action: Action, targets: &[String]) -> String {
    let mut names: Vec<String> = targets.iter().take(3).map(|t| shown(action, t)).collect();
    if targets.len() > 3 {
        names.push(format!("{} more", targets.len() - 3));
    }
    let names = names.join(", ");
    match action {
        Action::Edit => format!("edit of {names}"),
        Action::Command => format!("command {names}"),
        Action::Tool => format!("tool call {names}"),
        Action::Task => format!("task \"{names}\""),
    }
}

/// The sentence an episode's memory says: what was done, how it went, why, and in aid of
/// what ("Edit of src/auth.py failed: 3 tests failed (task: fix login).").
pub fn sentence(p: &RecordParams, targets: &[String]) -> String {
    let mut text = doing(p.action, targets);
    if let Some(first) = text.get(..1) {
        text = first.to_uppercase() + &text[1..];
    }
    match p.outcome {
        Outcome::Success => text.push_str(" succeeded"),
        Outcome::Failure => text.push_str(" failed"),
        Outcome::Partial => text.push_str(" partly succeeded"),
    }
    if let Some(e) = p.error.as_deref().map(first_line).filter(|e| !e.is_empty()) {
        text.push_str(&format!(": {e}"));
    }
    if let Some(task) = &p.state.task {
        text.push_str(&format!(" (task: {})", clip(task.trim(), 160)));
    }
    text.push('.');
    if let Some(note) = p.note.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        text.push(' ');
        text.push_str(note);
    }
    text
}

/// The first non-empty line of an error, clipped: what a warning quotes.
pub fn first_line(error: &str) -> String {
    let line = error
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    first_sentence(line, 200)
}

/// The metadata an episode's memory carries: its state, and `cwd` where project detection
/// looks.
pub fn metadata(p: &RecordParams, targets: &[String]) -> serde_json::Value {
    let meta = EpisodeMeta {
        targets: targets.to_vec(),
        error: p.error.as_deref().map(|e| clip(e, MAX_ERROR_CHARS)),
        actor: p.actor.clone(),
        branch: p.state.branch.clone(),
        task: p.state.task.clone(),
        note: p.note.clone(),
    };
    let mut m = serde_json::json!({ "episode": meta });
    if let Some(cwd) = &p.state.cwd {
        m["cwd"] = serde_json::json!(cwd);
    }
    m
}

/// The brief of a stored (opened) episode; none for a memory that is no episode.
pub fn brief(r: &MemoryRecord) -> Option<Brief> {
    let action: Action = r.action.as_deref()?.parse().ok()?;
    let outcome: Outcome = r.outcome.as_deref()?.parse().ok()?;
    let metadata: serde_json::Value = serde_json::from_str(&r.metadata).unwrap_or_default();
    let meta: EpisodeMeta = metadata
        .get("episode")
        .and_then(|e| serde_json::from_value(e.clone()).ok())
        .unwrap_or_default();
    Some(Brief {
        id: r.id.clone(),
        namespace: r.namespace.clone(),
        at: r.event_time(),
        action,
        targets: meta.targets,
        outcome,
        error: meta.error,
        duration_ms: r.duration_ms.map(|d| d.max(0) as u64),
        actor: meta.actor,
        cwd: metadata
            .get("cwd")
            .and_then(|c| c.as_str())
            .map(str::to_string),
        branch: meta.branch,
        task: meta.task,
        note: meta.note,
        project_id: r.project_id.clone(),
        session_id: r.session_id.clone(),
    })
}

impl Brief {
    pub fn to_protocol(&self, content: &str) -> Episode {
        Episode {
            id: self.id.clone(),
            namespace: self.namespace.clone(),
            action: self.action,
            targets: self.targets.clone(),
            outcome: self.outcome,
            error: self.error.clone(),
            duration_ms: self.duration_ms,
            actor: self.actor.clone(),
            state: ActionState {
                cwd: self.cwd.clone(),
                session_id: self.session_id.clone(),
                branch: self.branch.clone(),
                task: self.task.clone(),
            },
            project_id: self.project_id.clone(),
            at: format_micros(self.at),
            content: content.to_string(),
        }
    }

    /// Where it ran, for "the same command in a similar state": its project, else its
    /// working directory.
    pub fn place(&self) -> Option<&str> {
        self.project_id.as_deref().or(self.cwd.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_made_absolute_and_clean() {
        assert_eq!(
            normalize_path("src/../src/./auth.py", Some("/repo")),
            "/repo/src/auth.py"
        );
        assert_eq!(normalize_path("/etc//hosts", Some("/repo")), "/etc/hosts");
        assert_eq!(normalize_path("a.py", None), "a.py");
        assert_eq!(
            normalize_targets(Action::Command, &["  cargo   test\t--all ".into()], None),
            ["cargo test --all"]
        );
    }

    #[test]
    fn a_command_is_known_by_its_program_and_subcommand() {
        assert_eq!(program("cargo test --release -p x"), "cargo test");
        assert_eq!(program("RUST_LOG=debug cargo build"), "cargo build");
        assert_eq!(program("sudo apt-get install foo"), "apt-get install");
        assert_eq!(program("/usr/bin/make"), "make");
        assert_eq!(program("./deploy.sh --prod"), "./deploy.sh");
        assert_eq!(program("python manage.py migrate"), "python");
        assert_eq!(program("pytest tests/test_auth.py"), "pytest");
    }

    #[test]
    fn the_sentence_says_what_was_done_how_it_went_and_why() {
        let p = RecordParams {
            action: Action::Edit,
            targets: vec!["src/auth.py".into()],
            outcome: Outcome::Failure,
            error: Some("\n3 tests failed\nat line 4".into()),
            state: ActionState {
                task: Some("fix login".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let targets = normalize_targets(p.action, &p.targets, Some("/repo"));
        assert_eq!(
            sentence(&p, &targets),
            "Edit of src/auth.py failed: 3 tests failed (task: fix login)."
        );
    }

    #[test]
    fn bad_records_say_what_to_fix() {
        let mut p = RecordParams {
            action: Action::Command,
            targets: vec![],
            ..Default::default()
        };
        assert!(validate(&p).unwrap_err().contains("targets is empty"));
        p.targets = vec!["make".into()];
        p.state.cwd = Some("relative/dir".into());
        assert!(validate(&p).unwrap_err().contains("not absolute"));
        p.state.cwd = None;
        p.error = Some("boom".into());
        assert!(validate(&p).unwrap_err().contains("outcome success"));
        p.outcome = Outcome::Failure;
        assert!(validate(&p).is_ok());
    }

    #[test]
    fn a_stored_episode_reads_back_as_its_brief() {
        let p = RecordParams {
            action: Action::Command,
            targets: vec!["cargo test".into()],
            outcome: Outcome::Failure,
            error: Some("boom".into()),
            state: ActionState {
                cwd: Some("/repo".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut r = MemoryRecord::new("default".into(), "x".into(), Default::default(), 7);
        r.metadata = metadata(&p, &p.targets).to_string();
        r.action = Some("command".into());
        r.outcome = Some("failure".into());
        let b = brief(&r).unwrap();
        assert_eq!(b.targets, ["cargo test"]);
        assert_eq!(b.error.as_deref(), Some("boom"));
        assert_eq!(b.place(), Some("/repo"));
        r.action = None;
        assert!(brief(&r).is_none(), "a plain memory is no episode");
    }
}
