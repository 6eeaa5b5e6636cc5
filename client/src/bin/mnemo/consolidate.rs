//! `mnemo consolidate`: run consolidation now, watch it, read past runs.

use std::path::Path;

use clap::{Args, Subcommand};
use mnemo_protocol::consolidate::{
    ConsolidateRun, ConsolidateRuns, ConsolidateStatus, ConsolidationStatus, PhaseState, RunRecord,
    RunStatus, RunsParams,
};
use mnemo_protocol::NoParams;

use crate::connect;
use crate::output::Output;
use crate::progress::ProgressReport;
pub use mnemo_client::runs::{status_name, wait_for};

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ConsolidateArgs {
    #[command(subcommand)]
    command: Option<ConsolidateCommand>,
    /// Wait for the run to finish, showing progress, then print what each phase did.
    #[arg(long)]
    wait: bool,
}

#[derive(Subcommand, Debug)]
enum ConsolidateCommand {
    /// Whether the machine is idle enough, the run going on and the last one completed.
    Status,
    /// Past runs, newest first, with what each phase did.
    Runs {
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
}

pub async fn run(args: ConsolidateArgs, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let mut client = connect(socket).await?;
    match args.command {
        Some(ConsolidateCommand::Status) => {
            let status = client.call::<ConsolidateStatus>(&NoParams {}).await?;
            out.value(&status, || status_text(&status));
        }
        Some(ConsolidateCommand::Runs { limit }) => {
            let runs = client
                .call::<ConsolidateRuns>(&RunsParams { limit: Some(limit) })
                .await?;
            out.value(&runs, || {
                if runs.runs.is_empty() {
                    return "no consolidation runs yet (`mnemo consolidate` starts one)".into();
                }
                runs.runs
                    .iter()
                    .map(report)
                    .collect::<Vec<_>>()
                    .join("\n\n")
            });
        }
        None => {
            let started = client.call::<ConsolidateRun>(&NoParams {}).await?;
            if !args.wait {
                out.value(&started, || {
                    let what = if started.already_running {
                        "already running"
                    } else if started.resumed {
                        "resumed"
                    } else {
                        "started"
                    };
                    format!(
                        "consolidation run {} {what}; `mnemo consolidate status` shows its progress",
                        started.run_id
                    )
                });
                return Ok(());
            }
            let progress = ProgressReport::new(out.json);
            let run = wait_for(&mut client, &started.run_id, progress).await?;
            out.value(&run, || report(&run));
            if run.status == RunStatus::Failed {
                anyhow::bail!(
                    "consolidation failed: {}",
                    run.error.as_deref().unwrap_or("see mnemod's log")
                );
            }
        }
    }
    Ok(())
}

/// A run and what each of its phases did.
pub fn report(run: &RunRecord) -> String {
    let mut lines = vec![format!(
        "run {} ({:?}, {}) started {}{}",
        run.id,
        run.trigger,
        status_name(run.status),
        run.started_at,
        run.completed_at
            .as_deref()
            .map(|t| format!(", completed {t}"))
            .unwrap_or_default()
    )
    .to_lowercase()];
    for p in &run.phases {
        let state = match p.state {
            PhaseState::Done => "done",
            // A run still going is in this phase now; any other left it there.
            PhaseState::Running if run.status == RunStatus::Running => "running",
            PhaseState::Running => "stopped",
            PhaseState::Pending => "pending",
        };
        let counts: Vec<String> = p.counts.iter().map(|(k, v)| format!("{k}={v}")).collect();
        lines.push(format!(
            "  {:<10} {:<8} {}",
            p.phase.as_str(),
            state,
            counts.join(" ")
        ));
    }
    if run.yields > 0 {
        lines.push(format!(
            "  yielded {} time(s); ms from request to yield: {:?}",
            run.yields, run.yield_latency_ms
        ));
    }
    if let Some(e) = &run.error {
        lines.push(format!("  error: {e}"));
    }
    lines.join("\n")
}

fn status_text(s: &ConsolidationStatus) -> String {
    let mut lines = vec![format!(
        "consolidation: {}{}",
        s.state,
        if s.enabled {
            ""
        } else {
            " (automatic runs disabled)"
        }
    )];
    lines.push(if s.idle.idle {
        "machine: idle enough to consolidate".into()
    } else {
        format!("machine: busy ({})", s.idle.blockers.join("; "))
    });
    if let Some(p) = &s.progress {
        lines.push(format!(
            "phase: {} {}/{}",
            p.phase.as_str(),
            p.done,
            p.total
        ));
    }
    if let Some(run) = &s.current {
        lines.push(report(run));
    }
    if let Some(run) = &s.last_completed {
        lines.push(format!("last completed:\n{}", report(run)));
    }
    if let Some(t) = &s.next_scheduled {
        lines.push(format!("next scheduled run: {t}"));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use mnemo_protocol::consolidate::{Phase, PhaseRecord, RunTrigger};

    use super::*;

    fn run_in_dedup(status: RunStatus) -> RunRecord {
        let mut dedup = PhaseRecord::pending(Phase::Dedup);
        dedup.state = PhaseState::Running;
        RunRecord {
            id: "r".into(),
            trigger: RunTrigger::Manual,
            status,
            started_at: "t".into(),
            updated_at: "t".into(),
            completed_at: None,
            phases: vec![dedup, PhaseRecord::pending(Phase::Refine)],
            yields: 0,
            yield_latency_ms: Vec::new(),
            error: None,
        }
    }

    #[test]
    fn the_phase_a_run_is_in_reads_running_while_it_runs_and_stopped_after() {
        let dedup_line = |status| {
            report(&run_in_dedup(status))
                .lines()
                .find(|l| l.trim_start().starts_with("dedup"))
                .unwrap()
                .to_string()
        };
        assert!(dedup_line(RunStatus::Running).contains("running"));
        assert!(dedup_line(RunStatus::Yielded).contains("stopped"));
        assert!(dedup_line(RunStatus::Interrupted).contains("stopped"));
    }
}
