//! Memories: the live feed of new memories, or the results of a search with each score's
//! parts; Enter opens one (content, metadata, history).

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, List, ListItem, ListState, Paragraph, Wrap};
use ratatui::Frame;

use super::{centered, titled};
use crate::app::{App, Detail};

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let [search, list] = Layout::vertical([Constraint::Length(3), Constraint::Min(0)]).areas(area);
    let cursor = if app.search.editing { "▏" } else { "" };
    let prompt = if app.search.query.is_empty() && !app.search.editing {
        "press / to search".dark_gray()
    } else {
        Span::raw(format!("{}{cursor}", app.search.query))
    };
    frame.render_widget(
        Paragraph::new(Line::from(vec!["/ ".bold(), prompt])).block(titled("Search")),
        search,
    );
    let selected = Style::new().add_modifier(Modifier::REVERSED);
    let mut state = ListState::default().with_selected(Some(app.search.selected));
    if let Some(error) = &app.search.error {
        frame.render_widget(
            Paragraph::new(error.as_str().red())
                .wrap(Wrap { trim: true })
                .block(titled("Results")),
            list,
        );
        return;
    }
    match &app.search.results {
        Some(r) => {
            let items: Vec<ListItem> = r
                .hits
                .iter()
                .map(|h| {
                    let mut lines = vec![Line::from(vec![
                        format!("{:.3} ", h.score).bold(),
                        Span::raw(h.memory.content.lines().next().unwrap_or_default().to_string()),
                    ])];
                    if let Some(e) = &h.explain {
                        let rank = |r: Option<usize>| r.map_or("–".into(), |r| format!("#{r}"));
                        lines.push(Line::from(
                            format!(
                                "    vector {} {}  text {} {}  relevance {:.2}  salience {:.1}  strength {:.2}  recency {:.2}  entities {:.2}{}  graph {:.2}",
                                rank(e.vector_rank),
                                e.vector_similarity.map_or("–".into(), |s| format!("{s:.2}")),
                                rank(e.text_rank),
                                e.text_score.map_or("–".into(), |s| format!("{s:.2}")),
                                e.relevance,
                                e.salience,
                                e.strength,
                                e.recency,
                                e.entity,
                                if e.subject > 0.0 { " (by them)" } else { "" },
                                e.graph
                            )
                            .dark_gray(),
                        ));
                    }
                    ListItem::new(lines)
                })
                .collect();
            let title = format!(
                "{} results for “{}” ({:.0} ms) · Esc clears",
                r.hits.len(),
                app.search.query,
                r.took_ms
            );
            frame.render_stateful_widget(
                List::new(items)
                    .block(titled(title))
                    .highlight_style(selected),
                list,
                &mut state,
            );
        }
        None => {
            let items: Vec<ListItem> = app
                .feed
                .iter()
                .map(|f| {
                    ListItem::new(Line::from(vec![
                        format!("{:<10} ", f.kind).dark_gray(),
                        Span::raw(f.preview.clone()),
                    ]))
                })
                .collect();
            let title = if app.feed.is_empty() {
                "New memories (none yet)".to_string()
            } else {
                "New memories, live".to_string()
            };
            frame.render_stateful_widget(
                List::new(items)
                    .block(titled(title))
                    .highlight_style(selected),
                list,
                &mut state,
            );
        }
    }
}

pub fn draw_detail(frame: &mut Frame, area: Rect, detail: &Detail) {
    let m = &detail.memory;
    let mut lines = vec![Line::from(m.content.clone()), Line::from("")];
    let field = |k: &str, v: String| Line::from(vec![format!("{k:>12}  ").bold(), Span::raw(v)]);
    lines.push(field("id", m.id.clone()));
    lines.push(field("kind", m.kind.to_string()));
    lines.push(field(
        "when",
        m.occurred_at.clone().unwrap_or(m.created_at.clone()),
    ));
    lines.push(field(
        "salience",
        format!(
            "{:.1}  strength {:.2}  accessed {}×",
            m.salience, m.strength, m.access_count
        ),
    ));
    if let Some(f) = &m.salience_factors {
        let mut named: Vec<(&str, f32)> = f.named().into_iter().filter(|(_, v)| *v > 0.0).collect();
        named.sort_by(|a, b| b.1.total_cmp(&a.1));
        let text: Vec<String> = named.iter().map(|(n, v)| format!("{n} {v:.2}")).collect();
        lines.push(field("factors", text.join(", ")));
    }
    if let Some(e) = &m.emotion {
        lines.push(field(
            "emotion",
            format!(
                "{}  intensity {:.2}  valence {:+.2}  arousal {:.2}",
                e.primary, e.intensity, e.valence, e.arousal
            ),
        ));
    }
    if let Some(t) = &m.event {
        lines.push(field("speaks of", format!("{} .. {}", t.start, t.end)));
    }
    if let Some(s) = &m.session_id {
        lines.push(field("session", s.clone()));
    }
    if let Some(d) = &m.domain {
        lines.push(field("domain", d.clone()));
    }
    if !m.tags.is_empty() {
        lines.push(field("tags", m.tags.join(", ")));
    }
    if let Some(by) = &m.summarized_by {
        lines.push(field("summarised", format!("in {by}")));
    }
    if m.is_summary {
        lines.push(field(
            "summarises",
            format!("{} memories", m.summarizes.len()),
        ));
    }
    if m.metadata.as_object().is_some_and(|o| !o.is_empty()) {
        lines.push(field("metadata", m.metadata.to_string()));
    }
    if !detail.links.is_empty() {
        lines.push(Line::from(""));
        lines.push(Line::from(
            format!("Linked ({})", detail.links.len()).bold(),
        ));
        for (edge_type, weight, other) in &detail.links {
            lines.push(Line::from(format!(
                "  {edge_type:<18} {weight:.2}  {other}"
            )));
        }
    }
    lines.push(Line::from(""));
    lines.push(Line::from(
        format!("History ({} versions)", detail.history.len()).bold(),
    ));
    for v in &detail.history {
        let state = match (&v.valid_to, &v.superseded_by) {
            (None, _) => "current".to_string(),
            (Some(_), Some(next)) => format!("replaced by {}", &next[..next.len().min(13)]),
            (Some(t), None) => format!("closed {t}"),
        };
        lines.push(Line::from(format!(
            "  {}  {}  {}",
            v.valid_from,
            state,
            v.content.lines().next().unwrap_or_default()
        )));
    }
    let popup = centered(
        area,
        area.width.saturating_sub(4),
        area.height.saturating_sub(2),
    );
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(titled("Memory · Esc closes")),
        popup,
    );
}

#[cfg(test)]
mod tests {
    use mnemo_protocol::events::Event;
    use mnemo_protocol::memory::{Memory, SearchResult};

    use crate::app::{App, Link, Screen, Update};
    use crate::ui::tests::render;

    fn app() -> App {
        let mut app = App::new("/tmp/s".into());
        app.link = Link::Up {
            version: "0.1.0".into(),
        };
        app.screen = Screen::Memories;
        app
    }

    fn memory(id: &str, content: &str) -> Memory {
        serde_json::from_value(serde_json::json!({
            "id": id, "lineage": id, "namespace": "default", "content": content,
            "kind": "episodic", "domain": null, "source": null, "session_id": null,
            "salience": 6.0, "strength": 0.8, "created_at": "2026-11-22T10:00:00Z",
            "occurred_at": null, "valid_from": "2026-11-22T10:00:00Z", "valid_to": null,
            "superseded_by": null, "tags": [], "metadata": {}, "content_hash": "h"
        }))
        .unwrap()
    }

    #[test]
    fn the_feed_shows_new_memories_first() {
        let mut app = app();
        for (id, text) in [("a", "first memory"), ("b", "second memory")] {
            app.apply(Update::Event(Box::new(Event::MemoryAdded {
                id: id.into(),
                namespace: "default".into(),
                kind: "semantic".into(),
                preview: text.into(),
            })));
        }
        let screen = render(&app, 80, 24);
        let (first, second) = (
            screen.find("second memory").unwrap(),
            screen.find("first memory").unwrap(),
        );
        assert!(first < second, "{screen}");
        assert!(screen.contains("semantic"), "{screen}");
    }

    #[test]
    fn search_results_show_their_score_parts() {
        let mut app = app();
        app.search.query = "tea".into();
        let result: SearchResult = serde_json::from_value(serde_json::json!({
            "hits": [{"memory": memory("a", "I like green tea"), "score": 0.912,
                      "explain": {"vector_rank": 1, "vector_similarity": 0.71, "text_rank": 2,
                                  "text_score": 1.5, "relevance": 0.88, "salience": 6.0,
                                  "strength": 0.8, "recency": 1.0, "entity": 1.0, "subject": 1.0,
                                  "weights": {"relevance": 0.9, "salience": 0.04, "strength": 0.03, "recency": 0.03},
                                  "score": 0.912}}],
            "mode": "hybrid", "embedder": "minilm", "took_ms": 12.0
        }))
        .unwrap();
        app.apply(Update::Search(Ok(result)));
        let screen = render(&app, 120, 24);
        assert!(screen.contains("1 results for “tea”"), "{screen}");
        assert!(screen.contains("0.912 I like green tea"), "{screen}");
        assert!(
            screen.contains("vector #1 0.71  text #2 1.50  relevance 0.88"),
            "{screen}"
        );
        assert!(screen.contains("entities 1.00 (by them)"), "{screen}");
    }

    #[test]
    fn detail_shows_content_metadata_and_history() {
        let mut app = app();
        let mut current = memory("b", "I like green tea, now");
        current.emotion = Some(mnemo_protocol::understanding::Emotion {
            primary: mnemo_protocol::understanding::EmotionKind::Joy,
            intensity: 0.6,
            valence: 0.8,
            arousal: 0.6,
        });
        let mut old = memory("a", "I like tea");
        old.valid_to = Some("2026-11-22T11:00:00Z".into());
        old.superseded_by = Some("b".into());
        app.apply(Update::Detail(Ok(Box::new(crate::app::Detail {
            memory: current.clone(),
            history: vec![old, current],
            links: vec![("MENTIONS".into(), 1.0, "Maria".into())],
        }))));
        let screen = render(&app, 80, 24);
        assert!(screen.contains("I like green tea, now"), "{screen}");
        assert!(screen.contains("History (2 versions)"), "{screen}");
        assert!(screen.contains("replaced by b"), "{screen}");
        assert!(screen.contains("salience  6.0  strength 0.80"), "{screen}");
        assert!(
            screen.contains("emotion  joy  intensity 0.60  valence +0.80"),
            "{screen}"
        );
        assert!(screen.contains("MENTIONS"), "{screen}");
        assert!(screen.contains("1.00  Maria"), "{screen}");
    }
}
