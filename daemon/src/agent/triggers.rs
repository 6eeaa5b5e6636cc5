//! The triggered layer: warnings and advice for a state before acting. Past failures on the
//! same target (and what worked afterwards), failures in a similar state (the same kind of
//! command in the same place, a task like this one), and learned procedures and failure
//! patterns that start here. Pure: the index and the procedures in, warnings out, so a
//! lookup costs hash probes and a sort of what matched — nothing when nothing matches.

use std::collections::HashSet;

use mnemo_protocol::agent::{Action, Outcome, Procedure, ProcedureKind, Warning, WarningKind};
use mnemo_protocol::time::format_micros;

use super::book::{task_words, Index};
use super::episode::{doing, first_line, program, Brief};

const DAY_US: f64 = 86_400_000_000.0;
/// A failure's weight halves every this many days.
const HALF_LIFE_DAYS: f64 = 30.0;
/// Episodes a warning lists at most.
const MAX_EPISODES: usize = 10;
/// Similar tasks: the share of words two tasks must have in common.
const TASK_OVERLAP: f32 = 0.3;

/// A state to look up, its targets normalised like stored ones.
pub struct Ask<'a> {
    pub namespace: &'a str,
    pub files: Vec<String>,
    pub command: Option<String>,
    pub tool: Option<String>,
    pub task: Option<String>,
    /// The project (else the working directory) the action is about to run in.
    pub place: Option<String>,
    pub now: i64,
    pub failures: bool,
    pub rules: bool,
}

/// Every warning that applies, most confident first.
pub fn warnings(index: &Index, procedures: &[Procedure], ask: &Ask) -> Vec<Warning> {
    let mut out = Vec::new();
    let asked: Vec<(Action, &str)> = ask
        .files
        .iter()
        .map(|f| (Action::Edit, f.as_str()))
        .chain(ask.command.iter().map(|c| (Action::Command, c.as_str())))
        .chain(ask.tool.iter().map(|t| (Action::Tool, t.as_str())))
        .collect();
    if ask.failures {
        for &(action, target) in &asked {
            let history: Vec<&Brief> = index
                .on_target(ask.namespace, target)
                .into_iter()
                .filter(|b| action != Action::Command || same_place(b, ask))
                .collect();
            if let Some(w) = on_target(index, action, target, &history, ask.now) {
                out.push(w);
            }
        }
        if let Some(command) = &ask.command {
            if !out.iter().any(|w| w.target == *command) {
                out.extend(similar_command(index, command, ask));
            }
        }
        if let Some(task) = &ask.task {
            out.extend(similar_task(index, task, ask, &out));
        }
    }
    if ask.rules {
        for p in procedures.iter().filter(|p| p.namespace == ask.namespace) {
            if asked
                .iter()
                .any(|&(a, t)| p.trigger.action == a && p.trigger.target == t)
            {
                out.push(from_procedure(p));
            }
        }
    }
    out.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
    out
}

/// A command's history counts where the action runs: the same project, else directory.
fn same_place(b: &Brief, ask: &Ask) -> bool {
    match (&ask.place, b.place()) {
        (Some(here), Some(there)) => here == there,
        _ => true,
    }
}

fn failed(b: &Brief) -> bool {
    b.outcome != Outcome::Success
}

/// How much a failure this old still counts (1 now, ½ after the half-life).
fn recency(at: i64, now: i64) -> f32 {
    let days = ((now - at).max(0) as f64) / DAY_US;
    0.5f64.powf(days / HALF_LIFE_DAYS) as f32
}

/// "just now", "5 minutes ago", "3 hours ago", "2 days ago".
pub fn ago(at: i64, now: i64) -> String {
    let minutes = (now - at).max(0) / 60_000_000;
    let plural = |n: i64, unit: &str| format!("{n} {unit}{} ago", if n == 1 { "" } else { "s" });
    match minutes {
        0 => "just now".into(),
        m if m < 60 => plural(m, "minute"),
        m if m < 48 * 60 => plural(m / 60, "hour"),
        m => plural(m / (24 * 60), "day"),
    }
}

/// Newest first, at most [`MAX_EPISODES`].
fn ids<'a>(episodes: impl DoubleEndedIterator<Item = &'a Brief>) -> Vec<String> {
    episodes
        .rev()
        .take(MAX_EPISODES)
        .map(|b| b.id.clone())
        .collect()
}

/// Past failures on this very target, and what worked after the last of them.
fn on_target(
    index: &Index,
    action: Action,
    target: &str,
    history: &[&Brief],
    now: i64,
) -> Option<Warning> {
    let failures: Vec<&Brief> = history.iter().copied().filter(|b| failed(b)).collect();
    let last = *failures.last()?;
    let fix = history
        .iter()
        .copied()
        .find(|b| b.at > last.at && !failed(b));
    let n = failures.len();
    let mut text = format!(
        "last {} failed {}",
        doing(last.action, &[target.into()]),
        ago(last.at, now)
    );
    if let Some(e) = last
        .error
        .as_deref()
        .map(first_line)
        .filter(|e| !e.is_empty())
    {
        text.push_str(&format!(": {e}"));
    }
    if n > 1 {
        text.push_str(&format!(" ({n} of {} tries failed)", history.len()));
    }
    let fail_rate = n as f32 / history.len() as f32;
    let mut confidence =
        (1.0 - 0.6f32.powi(n as i32)) * (0.5 + 0.5 * fail_rate) * recency(last.at, now).max(0.25);
    let fixed_by = fix.map(|fix| {
        confidence *= 0.8;
        what_worked(index, last, fix)
    });
    Some(Warning {
        kind: WarningKind::Failure,
        target: target.to_string(),
        text,
        reason: format!(
            "{n} past failure{} on this {}",
            if n == 1 { "" } else { "s" },
            noun(action)
        ),
        confidence: confidence.clamp(0.0, 1.0),
        episodes: ids(failures.iter().copied()),
        fixed_by,
        procedure_id: None,
        last_seen: format_micros(last.at),
    })
}

fn noun(action: Action) -> &'static str {
    match action {
        Action::Edit => "file",
        Action::Command => "command",
        Action::Tool => "tool",
        Action::Task => "task",
    }
}

/// The successful steps between the last failure and the fix, in the same run of work, and
/// the fix: "`make migrate`, then edit of src/auth.py, succeeded 2 days ago".
fn what_worked(index: &Index, failure: &Brief, fix: &Brief) -> String {
    let same_run = |b: &Brief| match (&failure.session_id, &b.session_id) {
        (Some(a), Some(b)) => a == b,
        _ => b.place() == failure.place(),
    };
    let mut steps: Vec<&Brief> = index
        .episodes
        .iter()
        .map(|b| b.as_ref())
        .filter(|b| {
            b.namespace == failure.namespace
                && b.at > failure.at
                && b.at < fix.at
                && !failed(b)
                && b.targets != fix.targets
                && same_run(b)
        })
        .collect();
    steps.sort_by_key(|b| b.at);
    let mut said: Vec<String> = steps
        .iter()
        .rev()
        .take(3)
        .rev()
        .map(|b| doing(b.action, &b.targets))
        .collect();
    said.push(doing(fix.action, &fix.targets));
    format!("{} worked afterwards", said.join(", then "))
}

/// The same kind of command failing in the same place, when this exact line has no history.
fn similar_command(index: &Index, command: &str, ask: &Ask) -> Option<Warning> {
    let kind = program(command);
    let history: Vec<&Brief> = index
        .running(ask.namespace, &kind)
        .into_iter()
        .filter(|b| same_place(b, ask))
        .collect();
    let failures: Vec<&Brief> = history.iter().copied().filter(|b| failed(b)).collect();
    let last = *failures.last()?;
    let n = failures.len();
    let mut text = format!(
        "`{kind}` failed {n} of {} times here, last {}",
        history.len(),
        ago(last.at, ask.now)
    );
    if let Some(e) = last
        .error
        .as_deref()
        .map(first_line)
        .filter(|e| !e.is_empty())
    {
        text.push_str(&format!(" (`{}`: {e})", last.targets[0]));
    }
    let fail_rate = n as f32 / history.len() as f32;
    Some(Warning {
        kind: WarningKind::Similar,
        target: command.to_string(),
        text,
        reason: format!("other `{kind}` command lines failed in this place"),
        confidence: ((1.0 - 0.6f32.powi(n as i32)) * fail_rate * recency(last.at, ask.now) * 0.7)
            .clamp(0.0, 1.0),
        episodes: ids(failures.iter().copied()),
        fixed_by: None,
        procedure_id: None,
        last_seen: format_micros(last.at),
    })
}

/// Failed episodes whose task reads like this one (words in common), at most three.
fn similar_task(index: &Index, task: &str, ask: &Ask, already: &[Warning]) -> Vec<Warning> {
    let asked = task_words(Some(task)).len();
    let warned: HashSet<&str> = already
        .iter()
        .flat_map(|w| w.episodes.iter().map(String::as_str))
        .collect();
    let mut like: Vec<(&Brief, f32)> = index
        .failed_like(ask.namespace, task)
        .into_iter()
        .filter(|(b, _)| !warned.contains(b.id.as_str()))
        .filter_map(|(b, shared)| {
            let theirs = task_words(b.task.as_deref()).len();
            let overlap = shared as f32 / (asked + theirs - shared).max(1) as f32;
            (shared >= 2.min(asked) && overlap >= TASK_OVERLAP).then_some((b, overlap))
        })
        .collect();
    like.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.at.cmp(&a.0.at)));
    like.into_iter()
        .take(3)
        .map(|(b, overlap)| {
            let mut text = format!(
                "a similar task failed {}: {} on \"{}\"",
                ago(b.at, ask.now),
                doing(b.action, &b.targets),
                b.task.as_deref().unwrap_or_default()
            );
            if let Some(e) = b.error.as_deref().map(first_line).filter(|e| !e.is_empty()) {
                text.push_str(&format!(": {e}"));
            }
            Warning {
                kind: WarningKind::Similar,
                target: task.to_string(),
                text,
                reason: format!("{:.0}% of the task's words in common", overlap * 100.0),
                confidence: (0.6 * overlap * recency(b.at, ask.now)).clamp(0.0, 1.0),
                episodes: vec![b.id.clone()],
                fixed_by: None,
                procedure_id: None,
                last_seen: format_micros(b.at),
            }
        })
        .collect()
}

fn from_procedure(p: &Procedure) -> Warning {
    let runs = p.success_count + p.failure_count;
    let (kind, text, reason) = match p.kind {
        ProcedureKind::Success => {
            let rest: Vec<String> = p.steps[1..]
                .iter()
                .map(|s| doing(s.action, std::slice::from_ref(&s.target)))
                .collect();
            (
                WarningKind::Procedure,
                format!(
                    "after this, what worked {} of {runs} times: {}",
                    p.success_count,
                    rest.join(", then ")
                ),
                "a learned procedure starts with this action".to_string(),
            )
        }
        ProcedureKind::Failure => (
            WarningKind::Pattern,
            format!("{} failed {} of {runs} times", p.name, p.failure_count),
            "a learned failure pattern starts with this action".to_string(),
        ),
    };
    Warning {
        kind,
        target: p.trigger.target.clone(),
        text,
        reason,
        confidence: p.confidence,
        episodes: p.learned_from.clone(),
        fixed_by: None,
        procedure_id: Some(p.id.clone()),
        last_seen: p.last_used.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::book::tests::brief;

    const H: i64 = 3_600_000_000;

    fn ask<'a>(files: &[&str], command: Option<&str>) -> Ask<'a> {
        Ask {
            namespace: "default",
            files: files.iter().map(|f| f.to_string()).collect(),
            command: command.map(str::to_string),
            tool: None,
            task: None,
            place: None,
            now: 100 * H,
            failures: true,
            rules: true,
        }
    }

    #[test]
    fn failures_on_a_file_warn_with_the_error_and_what_fixed_them() {
        let mut history = Vec::new();
        for i in 0..3 {
            let mut b = brief(
                &format!("f{i}"),
                Action::Edit,
                "/r/auth.py",
                Outcome::Failure,
                i * H,
            );
            b.error = Some("tests broke: test_login".into());
            b.session_id = Some("s".into());
            history.push(b);
        }
        let mut migrate = brief(
            "m",
            Action::Command,
            "make migrate",
            Outcome::Success,
            4 * H,
        );
        migrate.session_id = Some("s".into());
        history.push(migrate);
        let mut fix = brief("ok", Action::Edit, "/r/auth.py", Outcome::Success, 5 * H);
        fix.session_id = Some("s".into());
        history.push(fix);
        let index = Index::build(history);
        let got = warnings(&index, &[], &ask(&["/r/auth.py"], None));
        assert_eq!(got.len(), 1, "{got:#?}");
        let w = &got[0];
        assert_eq!(w.kind, WarningKind::Failure);
        assert!(
            w.text.contains("tests broke") && w.text.contains("3 of 4"),
            "{}",
            w.text
        );
        assert_eq!(w.episodes, ["f2", "f1", "f0"]);
        let fixed = w.fixed_by.as_deref().unwrap();
        assert!(
            fixed.contains("`make migrate`") && fixed.contains("auth.py"),
            "{fixed}"
        );
        assert!(w.confidence > 0.3 && w.confidence < 1.0, "{}", w.confidence);
    }

    #[test]
    fn nothing_matches_nothing_is_said() {
        let index = Index::build(vec![brief(
            "a",
            Action::Edit,
            "/r/a.py",
            Outcome::Success,
            H,
        )]);
        assert!(warnings(&index, &[], &ask(&["/r/a.py", "/r/b.py"], Some("ls"))).is_empty());
    }

    #[test]
    fn the_same_kind_of_command_failing_here_is_a_similar_state() {
        let mut here = brief("t", Action::Command, "cargo test -p a", Outcome::Failure, H);
        here.project_id = Some("p1".into());
        let mut elsewhere = brief("u", Action::Command, "cargo test -p b", Outcome::Failure, H);
        elsewhere.project_id = Some("p2".into());
        let index = Index::build(vec![here, elsewhere]);
        let mut a = ask(&[], Some("cargo test -p c"));
        a.place = Some("p1".into());
        let got = warnings(&index, &[], &a);
        assert_eq!(got.len(), 1, "{got:#?}");
        assert_eq!(got[0].kind, WarningKind::Similar);
        assert_eq!(got[0].episodes, ["t"], "only this project's history");
    }

    #[test]
    fn a_similar_failed_task_is_found_by_its_words() {
        let mut b = brief("x", Action::Task, "upgrade", Outcome::Failure, H);
        b.task = Some("upgrade the parser crate to 2.0".into());
        let index = Index::build(vec![b]);
        let mut a = ask(&[], None);
        a.task = Some("parser crate upgrade".into());
        assert_eq!(warnings(&index, &[], &a).len(), 1);
        a.task = Some("write the release notes".into());
        assert!(warnings(&index, &[], &a).is_empty());
    }

    #[test]
    fn ages_read_like_people_say_them() {
        assert_eq!(ago(0, 59_000_000), "just now");
        assert_eq!(ago(0, H), "1 hour ago");
        assert_eq!(ago(0, 72 * H), "3 days ago");
    }
}
