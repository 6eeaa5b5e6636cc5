//! Processes: the inventory by category, sortable, and the local inference servers.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Stylize;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Row, Table, Wrap};
use ratatui::Frame;

use super::{bytes, titled};
use crate::app::App;

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let servers = app.inference.len().max(1) as u16;
    let [table, inference] =
        Layout::vertical([Constraint::Min(5), Constraint::Length(servers + 2)]).areas(area);
    let rows: Vec<Row> = app
        .sorted_processes()
        .into_iter()
        .map(|p| {
            Row::new(vec![
                p.pid.to_string(),
                p.name.clone(),
                p.category.clone(),
                format!("{:.1}", p.cpu_pct),
                bytes(p.rss_bytes),
                p.gpu_memory_bytes.map(bytes).unwrap_or_default(),
            ])
        })
        .collect();
    let title = format!(
        "Processes ({}) · sorted by {} · s changes",
        app.processes.len(),
        app.sort.label()
    );
    frame.render_widget(
        Table::new(
            rows,
            [
                Constraint::Length(7),
                Constraint::Min(16),
                Constraint::Length(10),
                Constraint::Length(6),
                Constraint::Length(9),
                Constraint::Length(9),
            ],
        )
        .header(Row::new(["pid", "name", "category", "cpu%", "memory", "gpu mem"]).bold())
        .block(titled(title)),
        table,
    );
    let lines: Vec<Line> = if app.inference.is_empty() {
        vec![Line::from(
            "no local inference server found (Ollama, LM Studio, llama.cpp, vLLM)".dark_gray(),
        )]
    } else {
        app.inference
            .iter()
            .map(|s| {
                Line::from(format!(
                    "{} at {}: {}",
                    s.kind,
                    s.url,
                    if s.models.is_empty() {
                        "no models listed".to_string()
                    } else {
                        s.models.join(", ")
                    }
                ))
            })
            .collect()
    };
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(titled("Inference servers")),
        inference,
    );
}

#[cfg(test)]
mod tests {
    use mnemo_protocol::system::{InferenceServer, ProcessEntry};

    use crate::app::{App, Link, Screen, Update};
    use crate::ui::tests::render;

    #[test]
    fn processes_and_servers_are_listed() {
        let mut app = App::new("/tmp/s".into());
        app.link = Link::Up {
            version: "0".into(),
        };
        app.screen = Screen::Processes;
        let p = |pid, name: &str, category: &str, cpu| ProcessEntry {
            pid,
            name: name.into(),
            category: category.into(),
            cpu_pct: cpu,
            rss_bytes: 300 << 20,
            ..Default::default()
        };
        app.apply(Update::Processes(
            vec![
                p(10, "ollama", "inference", 3.0),
                p(11, "code", "ide", 12.5),
            ],
            vec![InferenceServer {
                kind: "ollama".into(),
                url: "http://127.0.0.1:11434".into(),
                models: vec!["llama3.2:3b".into()],
                detected_by: vec![],
            }],
        ));
        let screen = render(&app, 80, 24);
        let (code, ollama) = (
            screen.find("code").unwrap(),
            screen.find(" ollama ").unwrap(),
        );
        assert!(code < ollama, "sorted by cpu: {screen}");
        assert!(screen.contains("12.5"), "{screen}");
        assert!(
            screen.contains("ollama at http://127.0.0.1:11434: llama3.2:3b"),
            "{screen}"
        );
        assert!(screen.contains("sorted by cpu"), "{screen}");
    }
}
