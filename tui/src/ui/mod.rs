//! Drawing: a pure function of [`App`], so every screen can be rendered into ratatui's
//! `TestBackend` and checked cell by cell.

mod consolidation;
mod memories;
mod overview;
mod processes;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Tabs, Wrap};
use ratatui::Frame;

use crate::app::{App, Link, Screen};

pub fn draw(frame: &mut Frame, app: &App) {
    let [header, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    draw_header(frame, header, app);
    match &app.link {
        Link::Down { error } => draw_down(frame, body, app, error),
        Link::Connecting if app.status.is_none() => {
            frame.render_widget(
                Paragraph::new(format!(
                    "connecting to mnemod at {} …",
                    app.socket.display()
                )),
                body,
            );
        }
        _ => match app.screen {
            Screen::Overview => overview::draw(frame, body, app),
            Screen::Memories => memories::draw(frame, body, app),
            Screen::Processes => processes::draw(frame, body, app),
            Screen::Consolidation => consolidation::draw(frame, body, app),
        },
    }
    draw_footer(frame, footer, app);
    if app.help {
        draw_help(frame, body);
    }
    if let Some(detail) = &app.detail {
        memories::draw_detail(frame, body, detail);
    }
}

fn draw_header(frame: &mut Frame, area: Rect, app: &App) {
    let [tabs, state] =
        Layout::horizontal([Constraint::Min(0), Constraint::Length(20)]).areas(area);
    let titles = Screen::ALL
        .iter()
        .enumerate()
        .map(|(i, s)| format!("{} {}", i + 1, s.title()));
    let selected = Screen::ALL
        .iter()
        .position(|s| *s == app.screen)
        .unwrap_or(0);
    frame.render_widget(
        Tabs::new(titles)
            .select(selected)
            .highlight_style(Style::new().add_modifier(Modifier::REVERSED))
            .divider("│"),
        tabs,
    );
    let link = match &app.link {
        Link::Up { version } => Span::styled(format!("mnemod {version} ●"), Color::Green),
        Link::Connecting => Span::styled("connecting…", Color::Yellow),
        Link::Down { .. } => Span::styled("mnemod down ○", Color::Red),
    };
    frame.render_widget(Paragraph::new(Line::from(link)).right_aligned(), state);
}

fn draw_footer(frame: &mut Frame, area: Rect, app: &App) {
    let text = if app.search.editing {
        "type a search · Enter run it · Esc cancel".to_string()
    } else if let Some(m) = &app.message {
        m.clone()
    } else {
        let screen_keys = match app.screen {
            Screen::Overview => "",
            Screen::Memories => " · ↑↓ select · Enter open · Esc clear",
            Screen::Processes => " · s sort",
            Screen::Consolidation => " · c consolidate now",
        };
        format!("1-4/Tab screens · / search{screen_keys} · ? help · q quit")
    };
    frame.render_widget(Paragraph::new(text).reversed(), area);
}

fn draw_down(frame: &mut Frame, area: Rect, app: &App, error: &str) {
    let text = vec![
        Line::from("mnemod is not running".bold().red()),
        Line::from(""),
        Line::from(format!("Nothing answers at {}.", app.socket.display())),
        Line::from("Start it in the foreground with `mnemod`,"),
        Line::from("or as a service with `systemctl --user start mnemod`."),
        Line::from(""),
        Line::from("mnemo-top reconnects by itself as soon as it is back.".italic()),
        Line::from(""),
        Line::from(format!("({error})").dark_gray()),
    ];
    frame.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: true })
            .block(Block::bordered().title(" disconnected ")),
        area,
    );
}

fn draw_help(frame: &mut Frame, area: Rect) {
    let lines = [
        (
            "1 2 3 4, Tab",
            "switch screen (Overview, Memories, Processes, Consolidation)",
        ),
        ("/", "search memories; Enter runs the search, Esc cancels"),
        ("↑ ↓, j k", "select a memory"),
        (
            "Enter",
            "open the selected memory (content, metadata, history)",
        ),
        ("Esc", "close a view, clear a search"),
        (
            "s",
            "Processes: change the sort (cpu, memory, name, category)",
        ),
        ("c", "Consolidation: start a run now"),
        ("?", "this help (any key closes it)"),
        ("q, Ctrl-C", "quit"),
    ];
    let text: Vec<Line> = lines
        .iter()
        .map(|(k, v)| Line::from(vec![format!("{k:>14}  ").bold(), Span::raw(*v)]))
        .collect();
    let popup = centered(area, 76, lines.len() as u16 + 2);
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: false })
            .block(Block::bordered().title(" keys ")),
        popup,
    );
}

/// A `width`×`height` rectangle in the middle of `area` (clipped to it).
pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width);
    let h = height.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

pub fn titled(title: impl std::fmt::Display) -> Block<'static> {
    Block::new()
        .borders(Borders::ALL)
        .title(format!(" {title} "))
}

pub fn bytes(b: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    const MIB: f64 = (1u64 << 20) as f64;
    if b as f64 >= GIB {
        format!("{:.1} GiB", b as f64 / GIB)
    } else {
        format!("{:.0} MiB", b as f64 / MIB)
    }
}

pub fn pct(v: Option<f32>) -> String {
    v.map_or("–".into(), |v| format!("{v:.0}%"))
}

#[cfg(test)]
pub(crate) mod tests {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use super::*;

    /// Renders `app` at `width`×`height` and returns the screen as text, one line per row.
    pub fn render(app: &App, width: u16, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|f| draw(f, app)).unwrap();
        let buffer = terminal.backend().buffer();
        (0..height)
            .map(|y| {
                (0..width)
                    .map(|x| buffer[(x, y)].symbol().to_string())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn disconnected_says_how_to_start_the_daemon() {
        let mut app = App::new("/run/user/1000/mnemo/mnemod.sock".into());
        app.link = Link::Down {
            error: "connection refused".into(),
        };
        let screen = render(&app, 80, 24);
        assert!(screen.contains("mnemod is not running"), "{screen}");
        assert!(screen.contains("systemctl --user start mnemod"), "{screen}");
        assert!(screen.contains("reconnects by itself"), "{screen}");
        assert!(
            screen.contains("/run/user/1000/mnemo/mnemod.sock"),
            "{screen}"
        );
    }

    #[test]
    fn help_lists_the_keys() {
        let mut app = App::new("/tmp/s".into());
        app.link = Link::Up {
            version: "0.1.0".into(),
        };
        app.help = true;
        let screen = render(&app, 80, 24);
        for key in [
            "switch screen",
            "search memories",
            "start a run now",
            "quit",
        ] {
            assert!(screen.contains(key), "{key} is not in the help: {screen}");
        }
        assert!(screen.contains("mnemod 0.1.0"), "{screen}");
    }

    #[test]
    fn units_read_naturally() {
        assert_eq!(bytes(3 << 30), "3.0 GiB");
        assert_eq!(bytes(200 << 20), "200 MiB");
        assert_eq!(pct(None), "–");
        assert_eq!(pct(Some(42.4)), "42%");
    }
}
