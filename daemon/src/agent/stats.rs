//! Implicit memory: behavioural aggregates, each with the number of observations it rests
//! on — active hours by weekday, session lengths, the most used tools, commands and projects,
//! typical durations of actions, and what is talked about by time of day. Pure: what
//! consolidation read in, stats out. Hours and weekdays are the machine's local time.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Datelike, Local, Timelike};
use mnemo_protocol::agent::{Action, Outcome, Stat, StatCategory};
use mnemo_protocol::project::Project;
use mnemo_protocol::time::format_micros;

use super::episode::{program, Brief};
use crate::understand::dates::WEEKDAYS;
use crate::understand::sentences::frequent_words;

/// Tools, commands and projects listed at most.
const TOP: usize = 10;
/// Durations need this many samples to say what is typical.
const MIN_DURATIONS: usize = 3;

/// One ended session: its length and messages.
pub struct SessionSpan {
    pub started_at: i64,
    pub ended_at: i64,
    pub messages: u64,
}

pub struct Inputs<'a> {
    pub namespace: &'a str,
    pub now: i64,
    /// When the person was active: the creation times of memories and episodes.
    pub activity: &'a [i64],
    /// Recent memories' creation times and texts, for topics by time of day.
    pub texts: &'a [(i64, String)],
    pub sessions: &'a [SessionSpan],
    pub episodes: &'a [Arc<Brief>],
    pub projects: &'a [Project],
}

fn local(micros: i64) -> Option<DateTime<Local>> {
    DateTime::from_timestamp_micros(micros).map(|t| t.with_timezone(&Local))
}

struct Builder<'a> {
    namespace: &'a str,
    updated_at: String,
    out: Vec<Stat>,
}

impl Builder<'_> {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        category: StatCategory,
        metric: impl Into<String>,
        value: f64,
        unit: &str,
        detail: Option<String>,
        sample_size: usize,
    ) {
        self.out.push(Stat {
            namespace: self.namespace.to_string(),
            category,
            metric: metric.into(),
            value: (value * 100.0).round() / 100.0,
            unit: unit.into(),
            detail,
            sample_size: sample_size as u64,
            updated_at: self.updated_at.clone(),
        });
    }
}

pub fn aggregate(i: &Inputs) -> Vec<Stat> {
    let mut b = Builder {
        namespace: i.namespace,
        updated_at: format_micros(i.now),
        out: Vec::new(),
    };
    active_hours(&mut b, i.activity);
    sessions(&mut b, i.sessions);
    uses(&mut b, i.episodes);
    projects(&mut b, i.projects);
    durations(&mut b, i.episodes);
    topics(&mut b, i.texts);
    b.out
}

/// What one weekday saw: the days, the (day, hour)s, the events per hour, the events.
type Weekday = (BTreeSet<i32>, BTreeSet<(i32, u32)>, [usize; 24], usize);

/// Per weekday: the distinct hours active on an active day, on average, and the busiest hour.
fn active_hours(b: &mut Builder, activity: &[i64]) {
    let mut by_day: BTreeMap<u32, Weekday> = BTreeMap::new();
    for t in activity.iter().filter_map(|&t| local(t)) {
        let day = t.num_days_from_ce();
        let e = by_day
            .entry(t.weekday().num_days_from_monday())
            .or_insert_with(|| (BTreeSet::new(), BTreeSet::new(), [0; 24], 0));
        e.0.insert(day);
        e.1.insert((day, t.hour()));
        e.2[t.hour() as usize] += 1;
        e.3 += 1;
    }
    for (weekday, (days, hours, per_hour, events)) in by_day {
        let busiest = (0..24).max_by_key(|h| (per_hour[*h], 24 - h)).unwrap_or(0);
        b.push(
            StatCategory::ActiveHours,
            WEEKDAYS[weekday as usize],
            hours.len() as f64 / days.len().max(1) as f64,
            "hours",
            Some(format!(
                "busiest {busiest:02}:00–{:02}:00 over {} day{}",
                busiest + 1,
                days.len(),
                if days.len() == 1 { "" } else { "s" }
            )),
            events,
        );
    }
}

fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

fn sessions(b: &mut Builder, spans: &[SessionSpan]) {
    if spans.is_empty() {
        return;
    }
    let minutes = sorted(
        spans
            .iter()
            .map(|s| (s.ended_at - s.started_at).max(0) as f64 / 60e6)
            .collect(),
    );
    let messages = sorted(spans.iter().map(|s| s.messages as f64).collect());
    let n = spans.len();
    b.push(
        StatCategory::Sessions,
        "count",
        n as f64,
        "sessions",
        None,
        n,
    );
    b.push(
        StatCategory::Sessions,
        "length_minutes.median",
        median(&minutes),
        "minutes",
        Some(format!("longest {:.0} minutes", minutes[n - 1])),
        n,
    );
    b.push(
        StatCategory::Sessions,
        "messages.median",
        median(&messages),
        "messages",
        None,
        n,
    );
}

/// The most used tools (by name) and commands (by program), with their failures.
fn uses(b: &mut Builder, episodes: &[Arc<Brief>]) {
    for (action, category, unit) in [
        (Action::Tool, StatCategory::Tools, "calls"),
        (Action::Command, StatCategory::Commands, "runs"),
    ] {
        let mut counts: HashMap<String, (usize, usize)> = HashMap::new();
        for e in episodes.iter().filter(|e| e.action == action) {
            for t in &e.targets {
                let name = match action {
                    Action::Command => program(t),
                    _ => t.clone(),
                };
                let c = counts.entry(name).or_default();
                c.0 += 1;
                c.1 += usize::from(e.outcome == Outcome::Failure);
            }
        }
        let mut ranked: Vec<_> = counts.into_iter().collect();
        ranked.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(&b.0)));
        for (name, (n, failed)) in ranked.into_iter().take(TOP) {
            let detail = (failed > 0).then(|| format!("{failed} failed"));
            b.push(category, name, n as f64, unit, detail, n);
        }
    }
}

fn projects(b: &mut Builder, projects: &[Project]) {
    let mut ranked: Vec<&Project> = projects
        .iter()
        .filter(|p| p.interaction_count > 0)
        .collect();
    ranked.sort_by_key(|p| std::cmp::Reverse(p.interaction_count));
    for p in ranked.into_iter().take(TOP) {
        b.push(
            StatCategory::Projects,
            p.name.clone(),
            p.interaction_count as f64,
            "memories",
            Some(format!(
                "{}, last active {}",
                p.path,
                p.last_active.get(..10).unwrap_or_default()
            )),
            p.interaction_count as usize,
        );
    }
}

/// Median seconds per action, and per command program run often enough.
fn durations(b: &mut Builder, episodes: &[Arc<Brief>]) {
    let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for e in episodes {
        let Some(ms) = e.duration_ms else { continue };
        let seconds = ms as f64 / 1000.0;
        by.entry(e.action.to_string()).or_default().push(seconds);
        if e.action == Action::Command {
            for t in &e.targets {
                by.entry(format!("command: {}", program(t)))
                    .or_default()
                    .push(seconds);
            }
        }
    }
    for (metric, values) in by {
        if values.len() < MIN_DURATIONS {
            continue;
        }
        let v = sorted(values);
        let p90 = v[((v.len() - 1) as f64 * 0.9).round() as usize];
        b.push(
            StatCategory::Durations,
            metric,
            median(&v),
            "seconds",
            Some(format!("p90 {p90:.1} s")),
            v.len(),
        );
    }
}

/// What is talked about in the night, morning, afternoon and evening.
fn topics(b: &mut Builder, texts: &[(i64, String)]) {
    const PERIODS: [(&str, u32); 4] = [
        ("night", 0),
        ("morning", 6),
        ("afternoon", 12),
        ("evening", 18),
    ];
    let mut by: [Vec<&str>; 4] = Default::default();
    for (t, text) in texts {
        if let Some(t) = local(*t) {
            by[(t.hour() / 6) as usize].push(text);
        }
    }
    for ((name, _), said) in PERIODS.iter().zip(by) {
        if said.is_empty() {
            continue;
        }
        let words = frequent_words(said.iter().copied(), 5);
        b.push(
            StatCategory::Topics,
            *name,
            said.len() as f64,
            "memories",
            (!words.is_empty()).then(|| words.join(", ")),
            said.len(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::book::tests::brief;

    fn at(day: u32, hour: u32) -> i64 {
        chrono::NaiveDate::from_ymd_opt(2026, 11, day)
            .unwrap()
            .and_hms_opt(hour, 15, 0)
            .unwrap()
            .and_local_timezone(Local)
            .unwrap()
            .timestamp_micros()
    }

    #[test]
    fn aggregates_say_what_they_rest_on() {
        // Monday 16 and 23 November 2026: 2 hours, then 1 hour.
        let activity = [at(16, 9), at(16, 9), at(16, 14), at(23, 9)];
        let mut episodes = Vec::new();
        for (i, ok) in [true, false, true].into_iter().enumerate() {
            let mut e = brief(
                &i.to_string(),
                Action::Command,
                "cargo test -p x",
                if ok {
                    Outcome::Success
                } else {
                    Outcome::Failure
                },
                at(16, 10),
            );
            e.duration_ms = Some(1000 * (i as u64 + 1));
            episodes.push(Arc::new(e));
        }
        let sessions = [SessionSpan {
            started_at: at(16, 9),
            ended_at: at(16, 9) + 30 * 60_000_000,
            messages: 12,
        }];
        let texts = [
            (at(16, 9), "the garden needs watering".to_string()),
            (at(16, 10), "watering the garden again".to_string()),
        ];
        let stats = aggregate(&Inputs {
            namespace: "default",
            now: 0,
            activity: &activity,
            texts: &texts,
            sessions: &sessions,
            episodes: &episodes,
            projects: &[],
        });
        let find = |c: StatCategory, m: &str| {
            stats
                .iter()
                .find(|s| s.category == c && s.metric == m)
                .unwrap_or_else(|| panic!("{c} {m} in {stats:#?}"))
        };
        let monday = find(StatCategory::ActiveHours, "monday");
        assert_eq!((monday.value, monday.sample_size), (1.5, 4));
        assert!(monday
            .detail
            .as_deref()
            .unwrap()
            .starts_with("busiest 09:00"));
        let tests = find(StatCategory::Commands, "cargo test");
        assert_eq!(
            (tests.value, tests.detail.as_deref()),
            (3.0, Some("1 failed"))
        );
        assert_eq!(
            find(StatCategory::Durations, "command: cargo test").value,
            2.0
        );
        assert_eq!(
            find(StatCategory::Sessions, "length_minutes.median").value,
            30.0
        );
        let morning = find(StatCategory::Topics, "morning");
        assert_eq!(morning.detail.as_deref(), Some("garden, watering"));
    }
}
