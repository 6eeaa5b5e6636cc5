//! The dashboard's state and how keys and daemon updates change it. No I/O and no drawing:
//! [`crate::link`] feeds it [`Update`]s, [`crate::ui`] draws it, and keys become [`Command`]s.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Instant;

use mnemo_protocol::consolidate::{ConsolidationStatus, RunRecord};
use mnemo_protocol::daemon::StatusResult;
use mnemo_protocol::events::Event;
use mnemo_protocol::memory::{Memory, SearchResult};
use mnemo_protocol::system::{Budget, InferenceServer, ProcessEntry, Snapshot, SystemProfile};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Snapshots kept for the charts (at 5 s, ten minutes).
pub const HISTORY_POINTS: usize = 120;
pub const FEED_ITEMS: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    Overview,
    Memories,
    Processes,
    Consolidation,
}

impl Screen {
    pub const ALL: [Screen; 4] = [
        Screen::Overview,
        Screen::Memories,
        Screen::Processes,
        Screen::Consolidation,
    ];
    pub fn title(self) -> &'static str {
        match self {
            Screen::Overview => "Overview",
            Screen::Memories => "Memories",
            Screen::Processes => "Processes",
            Screen::Consolidation => "Consolidation",
        }
    }
    fn index(self) -> usize {
        Self::ALL.iter().position(|s| *s == self).unwrap_or(0)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Link {
    Connecting,
    Up { version: String },
    Down { error: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessSort {
    Cpu,
    Memory,
    Name,
    Category,
}

impl ProcessSort {
    fn next(self) -> Self {
        match self {
            ProcessSort::Cpu => ProcessSort::Memory,
            ProcessSort::Memory => ProcessSort::Name,
            ProcessSort::Name => ProcessSort::Category,
            ProcessSort::Category => ProcessSort::Cpu,
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            ProcessSort::Cpu => "cpu",
            ProcessSort::Memory => "memory",
            ProcessSort::Name => "name",
            ProcessSort::Category => "category",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct FeedItem {
    pub id: String,
    pub kind: String,
    pub preview: String,
}

#[derive(Debug, Default)]
pub struct SearchState {
    /// The search box has the keyboard.
    pub editing: bool,
    pub query: String,
    pub results: Option<SearchResult>,
    pub error: Option<String>,
    pub selected: usize,
}

#[derive(Debug, Clone)]
pub struct Detail {
    pub memory: Memory,
    pub history: Vec<Memory>,
    /// Its edges, strongest first: type, weight and what is at the other end (an entity's
    /// name, a memory's first line).
    pub links: Vec<(String, f32, String)>,
}

/// Adds and searches per minute, from the daemon's counters between two status polls.
#[derive(Debug, Default, Clone, Copy)]
pub struct Rates {
    pub adds_per_min: Option<f64>,
    pub searches_per_min: Option<f64>,
}

/// What the link reports.
#[derive(Debug)]
pub enum Update {
    Connected { version: String },
    Disconnected(String),
    Profile(Box<SystemProfile>),
    History(Vec<Snapshot>),
    Status(Box<StatusResult>),
    Budget(Budget),
    Processes(Vec<ProcessEntry>, Vec<InferenceServer>),
    Event(Box<Event>),
    Consolidation(Box<ConsolidationStatus>),
    Runs(Vec<RunRecord>),
    Recent(Vec<Memory>),
    Search(Result<SearchResult, String>),
    Detail(Result<Box<Detail>, String>),
    Message(String),
}

/// What a key asks the link to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Search(String),
    Open(String),
    Consolidate,
}

pub struct App {
    pub screen: Screen,
    pub link: Link,
    pub socket: PathBuf,
    pub profile: Option<SystemProfile>,
    pub snapshots: VecDeque<Snapshot>,
    pub status: Option<StatusResult>,
    pub budget: Option<Budget>,
    pub rates: Rates,
    last_counters: Option<(Instant, u64, u64)>,
    pub feed: VecDeque<FeedItem>,
    pub search: SearchState,
    pub detail: Option<Detail>,
    pub processes: Vec<ProcessEntry>,
    pub inference: Vec<InferenceServer>,
    pub sort: ProcessSort,
    pub consolidation: Option<ConsolidationStatus>,
    pub runs: Vec<RunRecord>,
    pub help: bool,
    pub message: Option<String>,
    pub quit: bool,
}

impl App {
    pub fn new(socket: PathBuf) -> Self {
        Self {
            screen: Screen::Overview,
            link: Link::Connecting,
            socket,
            profile: None,
            snapshots: VecDeque::new(),
            status: None,
            budget: None,
            rates: Rates::default(),
            last_counters: None,
            feed: VecDeque::new(),
            search: SearchState::default(),
            detail: None,
            processes: Vec::new(),
            inference: Vec::new(),
            sort: ProcessSort::Cpu,
            consolidation: None,
            runs: Vec::new(),
            help: false,
            message: None,
            quit: false,
        }
    }

    pub fn latest(&self) -> Option<&Snapshot> {
        self.snapshots.back()
    }

    fn push_snapshot(&mut self, s: Snapshot) {
        if self.snapshots.back().is_some_and(|last| last.at >= s.at) {
            return;
        }
        self.snapshots.push_back(s);
        while self.snapshots.len() > HISTORY_POINTS {
            self.snapshots.pop_front();
        }
    }

    fn push_feed(&mut self, item: FeedItem) {
        if self.feed.iter().any(|f| f.id == item.id) {
            return;
        }
        self.feed.push_front(item);
        self.feed.truncate(FEED_ITEMS);
    }

    /// The processes in the chosen order.
    pub fn sorted_processes(&self) -> Vec<&ProcessEntry> {
        let mut list: Vec<&ProcessEntry> = self.processes.iter().collect();
        match self.sort {
            ProcessSort::Cpu => list.sort_by(|a, b| b.cpu_pct.total_cmp(&a.cpu_pct)),
            ProcessSort::Memory => list.sort_by_key(|p| std::cmp::Reverse(p.rss_bytes)),
            ProcessSort::Name => list.sort_by_key(|p| p.name.to_lowercase()),
            ProcessSort::Category => list.sort_by(|a, b| {
                (a.category.as_str(), -(a.cpu_pct as f64))
                    .partial_cmp(&(b.category.as_str(), -(b.cpu_pct as f64)))
                    .unwrap_or(std::cmp::Ordering::Equal)
            }),
        }
        list
    }

    pub fn apply(&mut self, update: Update) {
        match update {
            Update::Connected { version } => {
                self.link = Link::Up { version };
                // Fresh history comes with the new connection.
                self.snapshots.clear();
                self.last_counters = None;
            }
            Update::Disconnected(error) => {
                if !matches!(self.link, Link::Down { .. }) {
                    self.rates = Rates::default();
                }
                self.link = Link::Down { error };
            }
            Update::Profile(p) => self.profile = Some(*p),
            Update::History(list) => {
                for s in list {
                    self.push_snapshot(s);
                }
            }
            Update::Status(s) => {
                let now = Instant::now();
                let (adds, searches) = (s.counters.memories_added, s.counters.searches);
                if let Some((then, a0, s0)) = self.last_counters {
                    let mins = now.duration_since(then).as_secs_f64() / 60.0;
                    if mins > 0.0 {
                        self.rates = Rates {
                            adds_per_min: Some(adds.saturating_sub(a0) as f64 / mins),
                            searches_per_min: Some(searches.saturating_sub(s0) as f64 / mins),
                        };
                    }
                }
                self.last_counters = Some((now, adds, searches));
                self.status = Some(*s);
            }
            Update::Budget(b) => self.budget = Some(b),
            Update::Processes(p, i) => {
                self.processes = p;
                self.inference = i;
            }
            Update::Event(e) => match *e {
                Event::Snapshot(s) => self.push_snapshot(*s),
                Event::MemoryAdded {
                    id, kind, preview, ..
                } => self.push_feed(FeedItem { id, kind, preview }),
                Event::Consolidation {
                    status,
                    phase,
                    done,
                    total,
                    ..
                } => {
                    if let Some(c) = &mut self.consolidation {
                        c.progress = phase.filter(|_| total > 0).map(|phase| {
                            mnemo_protocol::consolidate::Progress { phase, done, total }
                        });
                        if status != mnemo_protocol::consolidate::RunStatus::Running {
                            c.progress = None;
                        }
                    }
                }
                _ => {}
            },
            Update::Consolidation(c) => self.consolidation = Some(*c),
            Update::Runs(r) => self.runs = r,
            Update::Recent(list) => {
                for m in list.into_iter().rev() {
                    self.push_feed(FeedItem {
                        id: m.id,
                        kind: m.kind.to_string(),
                        preview: m.content.lines().next().unwrap_or_default().to_string(),
                    });
                }
            }
            Update::Search(r) => {
                self.search.selected = 0;
                match r {
                    Ok(r) => {
                        self.search.results = Some(r);
                        self.search.error = None;
                    }
                    Err(e) => self.search.error = Some(e),
                }
            }
            Update::Detail(d) => match d {
                Ok(d) => self.detail = Some(*d),
                Err(e) => self.message = Some(e),
            },
            Update::Message(m) => self.message = Some(m),
        }
    }

    /// The ids the Memories screen lists, in order: search results, else the feed.
    fn listed_ids(&self) -> Vec<String> {
        match &self.search.results {
            Some(r) => r.hits.iter().map(|h| h.memory.id.clone()).collect(),
            None => self.feed.iter().map(|f| f.id.clone()).collect(),
        }
    }

    pub fn on_key(&mut self, key: KeyEvent) -> Option<Command> {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            self.quit = true;
            return None;
        }
        if self.search.editing {
            return self.on_search_key(key);
        }
        self.message = None;
        if self.help {
            self.help = false;
            return None;
        }
        if self.detail.is_some() {
            if matches!(key.code, KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q')) {
                self.detail = None;
            }
            return None;
        }
        match key.code {
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Char('?') => self.help = true,
            KeyCode::Tab => self.screen = Screen::ALL[(self.screen.index() + 1) % 4],
            KeyCode::BackTab => self.screen = Screen::ALL[(self.screen.index() + 3) % 4],
            KeyCode::Char(c @ '1'..='4') => {
                self.screen = Screen::ALL[c as usize - '1' as usize];
            }
            KeyCode::Char('/') => {
                self.screen = Screen::Memories;
                self.search.editing = true;
            }
            KeyCode::Esc if self.search.results.is_some() => {
                self.search = SearchState::default();
            }
            KeyCode::Char('s') if self.screen == Screen::Processes => self.sort = self.sort.next(),
            KeyCode::Char('c') if self.screen == Screen::Consolidation => {
                return Some(Command::Consolidate)
            }
            KeyCode::Down | KeyCode::Char('j') if self.screen == Screen::Memories => {
                let n = self.listed_ids().len();
                if n > 0 {
                    self.search.selected = (self.search.selected + 1).min(n - 1);
                }
            }
            KeyCode::Up | KeyCode::Char('k') if self.screen == Screen::Memories => {
                self.search.selected = self.search.selected.saturating_sub(1);
            }
            KeyCode::Enter if self.screen == Screen::Memories => {
                return self
                    .listed_ids()
                    .get(self.search.selected)
                    .cloned()
                    .map(Command::Open);
            }
            _ => {}
        }
        None
    }

    fn on_search_key(&mut self, key: KeyEvent) -> Option<Command> {
        match key.code {
            KeyCode::Esc => self.search.editing = false,
            KeyCode::Enter => {
                self.search.editing = false;
                let query = self.search.query.trim().to_string();
                if !query.is_empty() {
                    return Some(Command::Search(query));
                }
            }
            KeyCode::Backspace => {
                self.search.query.pop();
            }
            KeyCode::Char(c) => self.search.query.push(c),
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn tabs_numbers_and_quit() {
        let mut app = App::new("/tmp/s".into());
        app.on_key(key(KeyCode::Tab));
        assert_eq!(app.screen, Screen::Memories);
        app.on_key(key(KeyCode::Char('4')));
        assert_eq!(app.screen, Screen::Consolidation);
        app.on_key(key(KeyCode::BackTab));
        assert_eq!(app.screen, Screen::Processes);
        assert_eq!(app.on_key(key(KeyCode::Char('q'))), None);
        assert!(app.quit);
    }

    #[test]
    fn typing_a_search_sends_it_on_enter() {
        let mut app = App::new("/tmp/s".into());
        app.on_key(key(KeyCode::Char('/')));
        assert!(app.search.editing);
        for c in "tea".chars() {
            app.on_key(key(KeyCode::Char(c)));
        }
        // While typing, keys are text, not commands.
        app.on_key(key(KeyCode::Char('q')));
        app.on_key(key(KeyCode::Backspace));
        assert_eq!(
            app.on_key(key(KeyCode::Enter)),
            Some(Command::Search("tea".into()))
        );
        assert!(!app.search.editing && !app.quit);
    }

    #[test]
    fn rates_come_from_counter_differences() {
        let mut app = App::new("/tmp/s".into());
        let mut status: StatusResult = serde_json::from_value(serde_json::json!({
            "pid": 1, "uptime_secs": 1.0, "version": "0", "protocol_version": 1,
            "data_dir": "", "socket": "", "components": [],
            "queues": {"in_flight_requests": 0, "pending_writes": 0, "pending_embeds": 0, "connections": 1}
        }))
        .unwrap();
        app.apply(Update::Status(Box::new(status.clone())));
        assert!(app.rates.adds_per_min.is_none());
        std::thread::sleep(std::time::Duration::from_millis(20));
        status.counters.memories_added = 5;
        app.apply(Update::Status(Box::new(status)));
        assert!(app.rates.adds_per_min.unwrap() > 0.0);
    }

    #[test]
    fn processes_sort_by_the_chosen_key() {
        let mut app = App::new("/tmp/s".into());
        let p = |name: &str, cpu: f32, rss: u64| ProcessEntry {
            name: name.into(),
            cpu_pct: cpu,
            rss_bytes: rss,
            ..Default::default()
        };
        app.processes = vec![p("b", 1.0, 300), p("a", 9.0, 100), p("c", 5.0, 200)];
        app.screen = Screen::Processes;
        let names = |app: &App| -> String {
            app.sorted_processes()
                .iter()
                .map(|p| p.name.as_str())
                .collect()
        };
        assert_eq!(names(&app), "acb");
        app.on_key(key(KeyCode::Char('s')));
        assert_eq!(names(&app), "bca");
        app.on_key(key(KeyCode::Char('s')));
        assert_eq!(names(&app), "abc");
    }
}
