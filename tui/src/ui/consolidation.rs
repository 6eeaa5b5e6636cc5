//! Consolidation: whether the machine is idle enough, the run going on with its progress, and
//! past runs with what each phase did. `c` starts a run.

use mnemo_protocol::consolidate::{Phase, RunRecord};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Gauge, Paragraph, Row, Table, Wrap};
use ratatui::Frame;

use super::titled;
use crate::app::App;

/// A run's phases in a few words: what changed (counts of 0 left out).
pub fn phase_summary(run: &RunRecord) -> String {
    let c = |p, k| run.count(p, k);
    let mut parts: Vec<String> = [
        ("acc", c(Phase::Access, "events")),
        ("weaker", c(Phase::Decay, "weakened")),
        ("faded", c(Phase::Decay, "faded")),
        ("merged", c(Phase::Dedup, "merged")),
        ("similar", c(Phase::Dedup, "similar")),
        ("aliases", c(Phase::Entities, "aliases")),
        ("beliefs by LLM", c(Phase::Refine, "beliefs_added")),
        ("names by LLM", c(Phase::Refine, "entities_added")),
        ("summaries", c(Phase::Summaries, "summaries")),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
    .map(|(what, n)| format!("{what} {n}"))
    .collect();
    let (before, after) = (
        c(Phase::Storage, "fragments_before"),
        c(Phase::Storage, "fragments_after"),
    );
    if before != after {
        parts.push(format!("frags {before}→{after}"));
    }
    if parts.is_empty() {
        return "nothing changed".into();
    }
    parts.join(" · ")
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let [state, progress, runs] = Layout::vertical([
        Constraint::Length(4),
        Constraint::Length(3),
        Constraint::Min(4),
    ])
    .areas(area);
    let Some(c) = &app.consolidation else {
        frame.render_widget(Paragraph::new("…").block(titled("Consolidation")), area);
        return;
    };
    let idle = if c.idle.idle {
        "the machine is idle enough to consolidate".to_string()
    } else if c.idle.blockers.is_empty() {
        "the first idle check is pending".to_string()
    } else {
        format!("waiting: {}", c.idle.blockers.join("; "))
    };
    let mut lines = vec![
        Line::from(
            format!(
                "state: {}{}",
                c.state,
                if c.enabled {
                    ""
                } else {
                    " (automatic runs off)"
                }
            )
            .bold(),
        ),
        Line::from(idle),
    ];
    if let Some(t) = &c.next_scheduled {
        lines[1] = Line::from(format!("{} · next scheduled {t}", lines[1]));
    }
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(titled("Consolidation · c runs now")),
        state,
    );
    let (ratio, label) = match &c.progress {
        Some(p) if p.total > 0 => (
            (p.done as f64 / p.total as f64).clamp(0.0, 1.0),
            format!("{} {}/{}", p.phase.as_str(), p.done, p.total),
        ),
        Some(p) => (0.0, format!("{} …", p.phase.as_str())),
        None => (0.0, "no run in progress".to_string()),
    };
    frame.render_widget(
        Gauge::default()
            .ratio(ratio)
            .label(label)
            .gauge_style(Style::new().fg(Color::Cyan))
            .block(titled("Progress")),
        progress,
    );
    let rows: Vec<Row> = app
        .runs
        .iter()
        .map(|r| {
            Row::new(vec![
                r.started_at
                    .chars()
                    .take(19)
                    .collect::<String>()
                    .replace('T', " "),
                format!("{:?}", r.trigger).to_lowercase(),
                format!("{:?}", r.status).to_lowercase(),
                phase_summary(r),
            ])
        })
        .collect();
    frame.render_widget(
        Table::new(
            rows,
            [
                Constraint::Length(19),
                Constraint::Length(8),
                Constraint::Length(11),
                Constraint::Min(20),
            ],
        )
        .header(Row::new(["started", "trigger", "status", "what it did"]).bold())
        .block(titled(format!("Runs ({})", app.runs.len()))),
        runs,
    );
}

#[cfg(test)]
mod tests {
    use mnemo_protocol::consolidate::{ConsolidationStatus, RunRecord};

    use crate::app::{App, Link, Screen, Update};
    use crate::ui::tests::render;

    #[test]
    fn runs_and_progress_are_shown() {
        let mut app = App::new("/tmp/s".into());
        app.link = Link::Up {
            version: "0".into(),
        };
        app.screen = Screen::Consolidation;
        let run: RunRecord = serde_json::from_value(serde_json::json!({
            "id": "r1", "trigger": "idle", "status": "completed",
            "started_at": "2026-11-22T03:00:00.000Z", "updated_at": "2026-11-22T03:00:09.000Z",
            "phases": [
                {"phase": "access", "state": "done", "counts": {"events": 7}},
                {"phase": "entities", "state": "done", "counts": {"aliases": 1}},
                {"phase": "dedup", "state": "done", "counts": {"merged": 2, "similar": 5}},
                {"phase": "storage", "state": "done", "counts": {"fragments_before": 40, "fragments_after": 3}}
            ]
        }))
        .unwrap();
        let status: ConsolidationStatus = serde_json::from_value(serde_json::json!({
            "enabled": true, "state": "running",
            "idle": {"idle": false, "blockers": ["a request 3 s ago (idle after 120 s)"],
                     "seconds_since_request": 3, "other_cpu_pct": null, "ram_pct": null, "on_battery": null},
            "progress": {"phase": "dedup", "done": 64, "total": 128}
        }))
        .unwrap();
        app.apply(Update::Consolidation(Box::new(status)));
        app.apply(Update::Runs(vec![run]));
        let screen = render(&app, 100, 24);
        assert!(screen.contains("state: running"), "{screen}");
        assert!(screen.contains("a request 3 s ago"), "{screen}");
        assert!(screen.contains("dedup 64/128"), "{screen}");
        assert!(screen.contains("2026-11-22 03:00:00"), "{screen}");
        assert!(screen.contains("acc 7"), "{screen}");
        assert!(
            screen.contains("merged 2 · similar 5 · aliases 1"),
            "{screen}"
        );
        assert!(screen.contains("frags 40→3"), "{screen}");
    }
}
