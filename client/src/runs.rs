//! Consolidation runs as a client sees them: waiting for one to end, and their statuses and
//! mnemod's memory in words, as `mnemo` and `mnemo-bench` print them.

use std::time::Duration;

use mnemo_protocol::consolidate::{
    ConsolidateRuns, ConsolidateStatus, RunRecord, RunStatus, RunsParams,
};
use mnemo_protocol::daemon::ProcessMemory;
use mnemo_protocol::NoParams;

use crate::progress::ProgressReport;
use crate::{Client, ClientError};

/// Waits for run `run_id` to end, its progress shown on `progress`; its record.
pub async fn wait_for(
    client: &mut Client,
    run_id: &str,
    mut progress: ProgressReport,
) -> Result<RunRecord, ClientError> {
    let run = loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let status = client.call::<ConsolidateStatus>(&NoParams {}).await?;
        let current = status.current.as_ref().filter(|r| r.id == run_id);
        if current.is_some_and(|r| r.status == RunStatus::Running) {
            if let Some(p) = &status.progress {
                progress.show(p.phase.as_str(), p.done, p.total);
            }
            continue;
        }
        let runs = client
            .call::<ConsolidateRuns>(&RunsParams { limit: Some(20) })
            .await?;
        if let Some(run) = runs
            .runs
            .into_iter()
            .find(|r| r.id == run_id && r.status != RunStatus::Running)
        {
            break run;
        }
    };
    progress.finish();
    Ok(run)
}

pub fn status_name(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Running => "running",
        RunStatus::Yielded => "yielded (resumes when idle)",
        RunStatus::Interrupted => "interrupted (resumes when idle)",
        RunStatus::Completed => "completed",
        RunStatus::Failed => "failed",
    }
}

/// A process's resident memory: in all, what it allocated (and of that what it says it
/// holds for searches and in LanceDB's caches) and its mapped code.
pub fn process_memory_text(m: &ProcessMemory) -> String {
    let mb = |b: u64| b as f64 / 1e6;
    let parts: Vec<String> = [
        m.held_bytes
            .map(|b| format!("{:.0} MB held for searches", mb(b))),
        m.lance_cache_bytes
            .map(|b| format!("{:.0} MB LanceDB's caches", mb(b))),
    ]
    .into_iter()
    .flatten()
    .collect();
    let of_it = if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    };
    format!(
        "RSS {:.0} MB: {:.0} MB allocated{of_it}, {:.0} MB mapped files (its own code)",
        mb(m.rss_bytes),
        mb(m.anon_bytes),
        mb(m.file_bytes)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_memory_names_the_parts_mnemod_reports_and_only_those() {
        let mut m = ProcessMemory {
            rss_bytes: 300_000_000,
            anon_bytes: 190_000_000,
            file_bytes: 110_000_000,
            ..Default::default()
        };
        assert_eq!(
            process_memory_text(&m),
            "RSS 300 MB: 190 MB allocated, 110 MB mapped files (its own code)"
        );
        m.held_bytes = Some(36_000_000);
        m.lance_cache_bytes = Some(12_400_000);
        assert_eq!(
            process_memory_text(&m),
            "RSS 300 MB: 190 MB allocated (36 MB held for searches, 12 MB LanceDB's caches), 110 MB mapped files (its own code)"
        );
    }
}
