//! Progress of long commands (import, export, consolidate --wait, encrypt) on stderr: a bar
//! redrawn in place on a terminal; elsewhere (a log, a pipe, a service's journal) a plain
//! line now and then, so a long run is not silent there; nothing with `--json`.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How often a line is written where no bar can be drawn.
const LINE_EVERY: Duration = Duration::from_secs(10);

enum Shown {
    Bar,
    /// When the last line was written, if one was.
    Lines(Option<Instant>),
    Off,
}

/// Where a command's progress goes; the bar is cleared when this is dropped.
pub struct ProgressReport {
    shown: Shown,
}

impl ProgressReport {
    /// A bar on a terminal, lines elsewhere, nothing for `json` output.
    pub fn new(json: bool) -> Self {
        let shown = match (json, std::io::stderr().is_terminal()) {
            (true, _) => Shown::Off,
            (false, true) => Shown::Bar,
            (false, false) => Shown::Lines(None),
        };
        Self { shown }
    }

    /// Reports nothing (a command whose work is too short to show).
    pub fn off() -> Self {
        Self { shown: Shown::Off }
    }

    /// Whether anything is shown (what it would show need not be asked for otherwise).
    pub fn shows(&self) -> bool {
        !matches!(self.shown, Shown::Off)
    }

    /// Clears the bar, before the command prints its result.
    pub fn finish(self) {}

    /// `done` of `total` of what `label` names.
    pub fn show(&mut self, label: &str, done: u64, total: u64) {
        match &mut self.shown {
            Shown::Bar => {
                eprint!("\r\x1b[2K{}", bar(label, done, total));
                let _ = std::io::stderr().flush();
            }
            Shown::Lines(last) => {
                let now = Instant::now();
                if line_due(*last, now) {
                    *last = Some(now);
                    eprintln!("{}", line(label, done, total));
                }
            }
            Shown::Off => {}
        }
    }
}

impl Drop for ProgressReport {
    fn drop(&mut self) {
        if let Shown::Bar = self.shown {
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
        }
    }
}

fn line_due(last: Option<Instant>, now: Instant) -> bool {
    last.is_none_or(|last| now.duration_since(last) >= LINE_EVERY)
}

fn bar(label: &str, done: u64, total: u64) -> String {
    let width = 30;
    let filled = (done.min(total) * width).checked_div(total).unwrap_or(0) as usize;
    format!(
        "{label:<10} [{}{}] {done}/{total}",
        "#".repeat(filled),
        ".".repeat(width as usize - filled),
    )
}

fn line(label: &str, done: u64, total: u64) -> String {
    match (done.min(total) * 100).checked_div(total) {
        Some(percent) => format!("{label}: {done}/{total} ({percent}%)"),
        None => format!("{label}: {done}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bar_fills_with_what_is_done() {
        assert_eq!(
            bar("sealing", 5, 10),
            format!("sealing    [{}{}] 5/10", "#".repeat(15), ".".repeat(15))
        );
        assert_eq!(
            bar("notes", 3, 0),
            format!("notes      [{}] 3/0", ".".repeat(30))
        );
    }

    #[test]
    fn lines_come_first_at_once_then_at_most_every_ten_seconds() {
        let start = Instant::now();
        assert!(line_due(None, start));
        assert!(!line_due(Some(start), start + Duration::from_secs(9)));
        assert!(line_due(Some(start), start + LINE_EVERY));
        assert_eq!(line("importing", 250, 1000), "importing: 250/1000 (25%)");
        assert_eq!(line("dedup", 7, 0), "dedup: 7");
    }
}
