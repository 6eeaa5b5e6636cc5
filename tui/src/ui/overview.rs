//! Overview: the machine (gauges and a chart over the last minutes), its GPUs, the adaptive
//! budget, the memory counts and rates, and consolidation at a glance.

use mnemo_protocol::daemon::EncryptionMode;
use mnemo_protocol::system::Snapshot;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style, Stylize};
use ratatui::symbols;
use ratatui::text::Line;
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, LineGauge, Paragraph, Wrap};
use ratatui::Frame;

use super::{bytes, pct, titled};
use crate::app::App;

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(area);
    let gpus = app.latest().map(|s| s.gpus.len()).unwrap_or(0);
    let gpu_height = 2 + (gpus.max(1) as u16) * if gpus > 0 { 2 } else { 1 };
    let [machine, chart, gpu] = Layout::vertical([
        Constraint::Length(7),
        Constraint::Min(4),
        Constraint::Length(gpu_height),
    ])
    .areas(left);
    draw_machine(frame, machine, app);
    draw_chart(frame, chart, app);
    draw_gpus(frame, gpu, app);
    let [memory, budget, consolidation] = Layout::vertical([
        Constraint::Min(6),
        Constraint::Length(6),
        Constraint::Length(5),
    ])
    .areas(right);
    draw_memory(frame, memory, app);
    draw_budget(frame, budget, app);
    draw_consolidation(frame, consolidation, app);
}

fn ratio(used: Option<u64>, total: Option<u64>) -> Option<f64> {
    match (used, total) {
        (Some(u), Some(t)) if t > 0 => Some((u as f64 / t as f64).clamp(0.0, 1.0)),
        _ => None,
    }
}

fn gauge<'a>(label: String, value: Option<f64>) -> LineGauge<'a> {
    let value = value.unwrap_or(0.0).clamp(0.0, 1.0);
    let color = if value > 0.9 {
        Color::Red
    } else if value > 0.7 {
        Color::Yellow
    } else {
        Color::Green
    };
    LineGauge::default()
        .ratio(value)
        .label(label)
        .filled_style(Style::new().fg(color))
}

fn draw_machine(frame: &mut Frame, area: Rect, app: &App) {
    let block = titled("Machine");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(s) = app.latest() else {
        frame.render_widget(Paragraph::new("waiting for the first snapshot…"), inner);
        return;
    };
    let rows = Layout::vertical([Constraint::Length(1); 5]).split(inner);
    let swap_used = s.swap_used_bytes;
    let disk_total = match (s.disk_used_bytes, s.disk_free_bytes) {
        (Some(u), Some(f)) => Some(u + f),
        _ => None,
    };
    frame.render_widget(
        gauge(
            format!("CPU  {:>5}", pct(s.cpu_pct)),
            s.cpu_pct.map(|p| p as f64 / 100.0),
        ),
        rows[0],
    );
    frame.render_widget(
        gauge(
            format!(
                "RAM  {:>5} {}/{}",
                pct(s.ram_pct),
                s.ram_used_bytes.map(bytes).unwrap_or_default(),
                s.ram_total_bytes.map(bytes).unwrap_or_default()
            ),
            s.ram_pct.map(|p| p as f64 / 100.0),
        ),
        rows[1],
    );
    frame.render_widget(
        gauge(
            format!(
                "Swap {}/{}",
                swap_used.map(bytes).unwrap_or("–".into()),
                s.swap_total_bytes.map(bytes).unwrap_or("–".into())
            ),
            ratio(swap_used, s.swap_total_bytes),
        ),
        rows[2],
    );
    frame.render_widget(
        gauge(
            format!(
                "Disk {} free",
                s.disk_free_bytes.map(bytes).unwrap_or("–".into())
            ),
            ratio(s.disk_used_bytes, disk_total),
        ),
        rows[3],
    );
    let load = |v: Option<f32>| v.map_or("–".into(), |v| format!("{v:.2}"));
    frame.render_widget(
        Paragraph::new(format!(
            "Load {} {} {} · mnemod {} CPU, {}",
            load(s.load_1),
            load(s.load_5),
            load(s.load_15),
            pct(s.daemon_cpu_pct),
            s.daemon_rss_bytes.map(bytes).unwrap_or("–".into())
        )),
        rows[4],
    );
}

fn series(snapshots: &[&Snapshot], f: impl Fn(&Snapshot) -> Option<f32>) -> Vec<(f64, f64)> {
    snapshots
        .iter()
        .enumerate()
        .filter_map(|(i, s)| f(s).map(|v| (i as f64, v as f64)))
        .collect()
}

fn draw_chart(frame: &mut Frame, area: Rect, app: &App) {
    let points: Vec<&Snapshot> = app.snapshots.iter().collect();
    let cpu = series(&points, |s| s.cpu_pct);
    let ram = series(&points, |s| s.ram_pct);
    let minutes = (points.len() as f64 * 5.0 / 60.0).ceil();
    let datasets = vec![
        Dataset::default()
            .name("CPU %")
            .marker(symbols::Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::new().fg(Color::Cyan))
            .data(&cpu),
        Dataset::default()
            .name("RAM %")
            .marker(symbols::Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::new().fg(Color::Magenta))
            .data(&ram),
    ];
    let chart = Chart::new(datasets)
        .block(titled(format!("CPU · RAM, last {minutes:.0} min")))
        .x_axis(Axis::default().bounds([0.0, points.len().max(2) as f64 - 1.0]))
        .y_axis(
            Axis::default()
                .bounds([0.0, 100.0])
                .labels(["0", "50", "100"]),
        );
    frame.render_widget(chart, area);
}

fn draw_gpus(frame: &mut Frame, area: Rect, app: &App) {
    let block = titled("GPU");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let gpus = app.latest().map(|s| s.gpus.as_slice()).unwrap_or_default();
    if gpus.is_empty() {
        frame.render_widget(Paragraph::new("no NVIDIA GPU detected".dark_gray()), inner);
        return;
    }
    let rows = Layout::vertical(vec![Constraint::Length(1); gpus.len() * 2]).split(inner);
    for (i, g) in gpus.iter().enumerate() {
        frame.render_widget(
            gauge(
                format!("{} {} util", g.index, pct(g.utilization_pct)),
                g.utilization_pct.map(|p| p as f64 / 100.0),
            ),
            rows[i * 2],
        );
        let temp = g.temperature_c.map_or("–".into(), |t| format!("{t:.0}°C"));
        let power = g.power_watts.map_or("–".into(), |w| format!("{w:.0} W"));
        frame.render_widget(
            gauge(
                format!(
                    "  VRAM {}/{} · {temp} · {power}",
                    g.memory_used_bytes.map(bytes).unwrap_or("–".into()),
                    g.memory_total_bytes.map(bytes).unwrap_or("–".into())
                ),
                ratio(g.memory_used_bytes, g.memory_total_bytes),
            ),
            rows[i * 2 + 1],
        );
    }
}

fn draw_memory(frame: &mut Frame, area: Rect, app: &App) {
    let mut lines = Vec::new();
    if let Some(s) = &app.status {
        lines.push(Line::from(format!("{} memories", s.memories.total).bold()));
        let kinds: Vec<String> = s
            .memories
            .by_kind
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        if !kinds.is_empty() {
            lines.push(Line::from(kinds.join(" · ")));
        }
        let rate = |r: Option<f64>| r.map_or("–".into(), |r| format!("{r:.1}/min"));
        lines.push(Line::from(format!(
            "ingest {} · search {}",
            rate(app.rates.adds_per_min),
            rate(app.rates.searches_per_min)
        )));
        lines.push(Line::from(format!(
            "queues: {} writes, {} embeds, {} requests",
            s.queues.pending_writes, s.queues.pending_embeds, s.queues.in_flight_requests
        )));
        if let Some(r) = &s.reembed {
            lines.push(Line::from(
                format!("re-embedding {}/{} with {}", r.done, r.total, r.model).cyan(),
            ));
        }
        for w in &s.watch {
            lines.push(watched_folder(w));
        }
        let e = &s.encryption;
        lines.push(match e.mode {
            EncryptionMode::On => Line::from("encrypted at rest"),
            EncryptionMode::Converting => {
                Line::from(format!("encrypting {}/{}", e.done, e.total).cyan())
            }
            EncryptionMode::Off if e.asked => {
                Line::from("not encrypted: run `mnemo encrypt`".yellow())
            }
            EncryptionMode::Off => Line::from("not encrypted at rest"),
        });
        if s.degraded() {
            for c in s
                .components
                .iter()
                .filter(|c| c.state != mnemo_protocol::daemon::ComponentHealth::Ok)
            {
                lines.push(Line::from(format!("{}: {}", c.name, c.detail).yellow()));
            }
        }
    } else {
        lines.push(Line::from("…"));
    }
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(titled("Memory")),
        area,
    );
}

/// A notes folder: its first scan's progress, what it holds, or why it is not followed.
fn watched_folder(w: &mnemo_protocol::daemon::WatchedFolder) -> Line<'static> {
    match w.state.as_str() {
        "scanning" => {
            Line::from(format!("notes {}: scanning {}/{}", w.path, w.scanned, w.files).cyan())
        }
        "failed" => Line::from(
            format!(
                "notes {}: {}",
                w.path,
                w.error.as_deref().unwrap_or("failed")
            )
            .yellow(),
        ),
        _ => Line::from(format!(
            "notes {}: {} memories from {} files",
            w.path, w.memories, w.files
        )),
    }
}

/// The adaptive budget, the sessions open now, and how the last package used its budget.
fn draw_budget(frame: &mut Frame, area: Rect, app: &App) {
    let budget = app.budget.as_ref().map_or("…".to_string(), |b| {
        format!("{} tokens of context", b.total_tokens)
    });
    let mut lines = Vec::new();
    match &app.status {
        Some(s) => {
            let n = s.active_sessions;
            lines.push(Line::from(vec![
                budget.bold(),
                format!(" · {n} session{} active", if n == 1 { "" } else { "s" }).into(),
            ]));
            match &s.last_context {
                Some(c) => {
                    lines.push(Line::from(format!(
                        "last package {}/{} ({}) · {} left out",
                        c.tokens, c.budget, c.profile, c.dropped
                    )));
                    let names: Vec<&str> = c.tiers.iter().map(|t| t.tier.as_str()).collect();
                    let used: Vec<String> = c.tiers.iter().map(|t| t.tokens.to_string()).collect();
                    lines.push(Line::from(format!(
                        "{} {}",
                        names.join("/"),
                        used.join("/")
                    )));
                }
                None => lines.push(Line::from("no package built yet".dark_gray())),
            }
        }
        None => lines.push(Line::from(budget.bold())),
    }
    if let Some(b) = &app.budget {
        lines.push(Line::from(b.reason.clone().dark_gray()));
    }
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(titled("Context")),
        area,
    );
}

fn draw_consolidation(frame: &mut Frame, area: Rect, app: &App) {
    let mut lines = Vec::new();
    match &app.consolidation {
        Some(c) => {
            let state = match (&c.progress, c.state.as_str()) {
                (Some(p), _) => format!("running: {} {}/{}", p.phase.as_str(), p.done, p.total),
                (None, s) => s.to_string(),
            };
            lines.push(Line::from(state.bold()));
            lines.push(Line::from(if c.idle.idle {
                "machine idle".to_string()
            } else if c.idle.blockers.is_empty() {
                "idle check pending".to_string()
            } else {
                format!("waiting: {}", c.idle.blockers.join("; "))
            }));
            if let Some(last) = &c.last_completed {
                lines.push(Line::from(format!(
                    "last run {}",
                    last.completed_at.as_deref().unwrap_or(&last.started_at)
                )));
            }
        }
        None => lines.push(Line::from("…")),
    }
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(titled("Consolidation")),
        area,
    );
}

#[cfg(test)]
mod tests {
    use mnemo_protocol::system::GpuReading;

    use super::*;
    use crate::app::{Link, Update};
    use crate::ui::tests::render;

    fn snapshot(at: &str, cpu: f32) -> Snapshot {
        Snapshot {
            at: at.into(),
            cpu_pct: Some(cpu),
            ram_pct: Some(50.0),
            ram_used_bytes: Some(12 << 30),
            ram_total_bytes: Some(24 << 30),
            swap_total_bytes: Some(0),
            disk_free_bytes: Some(100 << 30),
            disk_used_bytes: Some(50 << 30),
            load_1: Some(0.5),
            ..Default::default()
        }
    }

    fn connected() -> App {
        let mut app = App::new("/tmp/s".into());
        app.link = Link::Up {
            version: "0.1.0".into(),
        };
        app
    }

    #[test]
    fn overview_shows_figures_and_the_no_gpu_message() {
        let mut app = connected();
        app.apply(Update::History(vec![
            snapshot("2026-11-22T10:00:00Z", 10.0),
            snapshot("2026-11-22T10:00:05Z", 37.0),
        ]));
        let screen = render(&app, 80, 24);
        assert!(screen.contains("CPU    37%"), "{screen}");
        assert!(screen.contains("RAM    50% 12.0 GiB/24.0 GiB"), "{screen}");
        assert!(screen.contains("Disk 100.0 GiB free"), "{screen}");
        assert!(screen.contains("no NVIDIA GPU detected"), "{screen}");
        assert!(screen.contains("CPU · RAM, last 1 min"), "{screen}");
    }

    #[test]
    fn each_gpu_gets_its_readings() {
        let mut app = connected();
        let mut s = snapshot("2026-11-22T10:00:00Z", 5.0);
        s.gpus = vec![GpuReading {
            index: 0,
            name: "RTX".into(),
            utilization_pct: Some(81.0),
            memory_used_bytes: Some(6 << 30),
            memory_total_bytes: Some(8 << 30),
            temperature_c: Some(64.0),
            power_watts: Some(180.0),
            ..Default::default()
        }];
        app.apply(Update::History(vec![s]));
        let screen = render(&app, 100, 30);
        assert!(screen.contains("0 81% util"), "{screen}");
        assert!(
            screen.contains("VRAM 6.0 GiB/8.0 GiB · 64°C · 180 W"),
            "{screen}"
        );
        assert!(!screen.contains("no NVIDIA GPU"), "{screen}");
    }

    #[test]
    fn memory_counts_and_budget_are_shown() {
        let mut app = connected();
        let status = serde_json::from_value(serde_json::json!({
            "pid": 1, "uptime_secs": 1.0, "version": "0", "protocol_version": 1,
            "data_dir": "", "socket": "", "components": [],
            "queues": {"in_flight_requests": 0, "pending_writes": 0, "pending_embeds": 0, "connections": 1},
            "memories": {"total": 42, "by_kind": {"episodic": 40, "summary": 2}},
            "counters": {"memories_added": 3, "searches": 1}
        }))
        .unwrap();
        app.apply(Update::Status(Box::new(status)));
        app.apply(Update::Budget(mnemo_protocol::system::Budget {
            total_tokens: 8192,
            core_tokens: 1000,
            session_tokens: 2000,
            retrieved_tokens: 5192,
            reason: "plenty of RAM".into(),
            ..Default::default()
        }));
        let screen = render(&app, 110, 24);
        assert!(screen.contains("42 memories"), "{screen}");
        assert!(screen.contains("episodic 40 · summary 2"), "{screen}");
        assert!(screen.contains("8192 tokens of context"), "{screen}");
        assert!(
            screen.contains("8192 tokens of context · 0 sessions active"),
            "{screen}"
        );
        assert!(screen.contains("no package built yet"), "{screen}");
    }

    #[test]
    fn sessions_and_the_last_package_are_shown() {
        let mut app = connected();
        let status = serde_json::from_value(serde_json::json!({
            "pid": 1, "uptime_secs": 1.0, "version": "0", "protocol_version": 1,
            "data_dir": "", "socket": "", "components": [],
            "queues": {"in_flight_requests": 0, "pending_writes": 0, "pending_embeds": 0, "connections": 1},
            "active_sessions": 2,
            "last_context": {"at": "2026-11-24T10:00:00Z", "profile": "work", "budget": 2000,
                "tokens": 812, "dropped": 12, "tiers": [
                {"tier": "core", "allotted": 300, "tokens": 40, "items": 2},
                {"tier": "living", "allotted": 200, "tokens": 0, "items": 0},
                {"tier": "session", "allotted": 600, "tokens": 300, "items": 9},
                {"tier": "retrieved", "allotted": 900, "tokens": 472, "items": 14}]}
        }))
        .unwrap();
        app.apply(Update::Status(Box::new(status)));
        let screen = render(&app, 110, 30);
        assert!(screen.contains("2 sessions active"), "{screen}");
        assert!(
            screen.contains("last package 812/2000 (work) · 12 left out"),
            "{screen}"
        );
        assert!(
            screen.contains("core/living/session/retrieved 40/0/300/472"),
            "{screen}"
        );
    }

    #[test]
    fn re_embedding_encryption_and_notes_scan_progress_are_shown() {
        let mut app = connected();
        let status = serde_json::from_value(serde_json::json!({
            "pid": 1, "uptime_secs": 1.0, "version": "0", "protocol_version": 1,
            "data_dir": "", "socket": "", "components": [],
            "queues": {"in_flight_requests": 0, "pending_writes": 0, "pending_embeds": 0, "connections": 1},
            "memories": {"total": 42, "by_kind": {"episodic": 42}},
            "counters": {"memories_added": 3, "searches": 1},
            "reembed": {"model": "minilm:all-MiniLM-L6-v2", "done": 10, "total": 42},
            "encryption": {"mode": "converting", "done": 7, "total": 42},
            "watch": [
                {"path": "/home/me/notes", "namespace": "default", "state": "scanning",
                 "scanned": 120, "files": 2000, "memories": 900, "skipped": 1},
                {"path": "/gone", "namespace": "default", "state": "failed", "scanned": 0,
                 "files": 0, "memories": 0, "skipped": 0, "error": "/gone: not found"}
            ]
        }))
        .unwrap();
        app.apply(Update::Status(Box::new(status)));
        let screen = render(&app, 100, 30);
        assert!(
            screen.contains("notes /home/me/notes: scanning 120/2000"),
            "{screen}"
        );
        assert!(screen.contains("notes /gone: /gone: not found"), "{screen}");
        assert!(screen.contains("re-embedding 10/42"), "{screen}");
        assert!(screen.contains("encrypting 7/42"), "{screen}");
    }
}
