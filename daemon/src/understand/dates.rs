//! The time a text speaks about: relative and absolute expressions ("yesterday", "last
//! Saturday", "two weeks ago", "in May", "next month", "on the 12th", "May 7, 2023") found
//! by word patterns and resolved against the time the text was said. Resolving a phrase is
//! `interim`'s work (a kept fork of chrono-english); finding the phrase in running text,
//! words for numbers, and the span an expression covers (a day, a week, a month, a year) are
//! done here.

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use interim::{parse_date_string, Dialect};

/// The time range an expression covers, in UTC microseconds, end exclusive.
#[derive(Debug, Clone, PartialEq)]
pub struct DateSpan {
    pub start: i64,
    pub end: i64,
    /// The words it was read from, as written.
    pub phrase: String,
    /// Said as a limit ("by Friday", "due on the 12th").
    pub deadline: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Grain {
    Day,
    Weekend,
    Week,
    Month,
    Year,
}

/// Weekday names, Monday first (as chrono counts from Monday).
pub const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];
const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const NUMBER_WORDS: [&str; 13] = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve",
];
/// Words before a weekday or month that make it a time ("on Friday", "in May").
const PREPOSITIONS: [&str; 9] = [
    "on", "in", "since", "by", "until", "till", "during", "before", "after",
];
const DEADLINE_WORDS: [&str; 5] = ["by", "until", "till", "due", "deadline"];
/// Words that put a text in the future, so a bare weekday or month is the coming one.
const FUTURE_WORDS: [&str; 8] = [
    "will", "going", "gonna", "plan", "planning", "tomorrow", "next", "upcoming",
];

fn weekday(w: &str) -> Option<usize> {
    WEEKDAYS.iter().position(|d| *d == w)
}

/// Month names, and the short forms that are not also English words.
fn month(w: &str) -> Option<u32> {
    let short = ["jan", "feb", "aug", "sept", "oct", "nov", "dec"];
    MONTHS
        .iter()
        .position(|m| *m == w || (short.contains(&w) && m.starts_with(w)))
        .map(|i| i as u32 + 1)
}

/// "2", "two", "a", "an", "couple" and "few" as a count.
fn count(w: &str) -> Option<i64> {
    if let Ok(n) = w.parse::<i64>() {
        return (0..=1000).contains(&n).then_some(n);
    }
    match w {
        "a" | "an" => Some(1),
        "couple" => Some(2),
        "few" => Some(3),
        _ => NUMBER_WORDS.iter().position(|n| *n == w).map(|n| n as i64),
    }
}

/// "12th", "1st", "12" as a day of the month.
fn day_of_month(w: &str) -> Option<u32> {
    let digits = w.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &w[digits.len()..];
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

fn year(w: &str) -> Option<i32> {
    (w.len() == 4)
        .then(|| w.parse().ok())
        .flatten()
        .filter(|y| (1900..=2100).contains(y))
}

fn unit(w: &str) -> Option<(&'static str, Grain)> {
    match w.trim_end_matches('s') {
        "day" => Some(("day", Grain::Day)),
        "week" => Some(("week", Grain::Week)),
        "month" => Some(("month", Grain::Month)),
        "year" => Some(("year", Grain::Year)),
        "weekend" => Some(("week", Grain::Weekend)),
        _ => None,
    }
}

/// A word of the text: lower case without punctuation, and where it sits.
struct Token {
    word: String,
    start: usize,
    end: usize,
}

fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
        let inside = c.is_alphanumeric() || c == '\'' || c == '’' || c == '-';
        match (inside, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                let raw = &text[s..i];
                let word = raw
                    .trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase();
                if !word.is_empty() {
                    out.push(Token {
                        word,
                        start: s,
                        end: i,
                    });
                }
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// What interim is asked, how many words it came from, and how wide a span it names.
struct Reading {
    query: String,
    width: usize,
    grain: Grain,
}

fn reading(words: &[&str], future: bool) -> Option<Reading> {
    let w = |i: usize| words.get(i).copied().unwrap_or("");
    let r = |query: String, width: usize, grain: Grain| {
        Some(Reading {
            query,
            width,
            grain,
        })
    };
    let first = w(0);
    match first {
        "today" | "tonight" => return r("today".into(), 1, Grain::Day),
        "yesterday" => return r("yesterday".into(), 1, Grain::Day),
        "tomorrow" => return r("tomorrow".into(), 1, Grain::Day),
        "last" | "next" | "this" | "past" | "coming" => {
            let direction = match first {
                "past" => "last",
                "coming" => "next",
                d => d,
            };
            if w(1) == "night" && first == "last" {
                return r("yesterday".into(), 2, Grain::Day);
            }
            if matches!(w(1), "morning" | "afternoon" | "evening") && first == "this" {
                return r("today".into(), 2, Grain::Day);
            }
            if let Some(d) = weekday(w(1)) {
                return r(format!("{direction} {}", WEEKDAYS[d]), 2, Grain::Day);
            }
            if let Some(m) = month(w(1)) {
                return r(
                    format!("{direction} {}", MONTHS[m as usize - 1]),
                    2,
                    Grain::Month,
                );
            }
            if let Some((u, grain)) = unit(w(1)) {
                return r(format!("{direction} {u}"), 2, grain);
            }
        }
        _ => {}
    }
    // "two weeks ago", "a few days ago", "in 3 months"
    let (lead, n_at) = if first == "in" { (1, 1) } else { (0, 0) };
    let skip =
        usize::from(matches!(w(n_at), "a" | "an") && matches!(w(n_at + 1), "couple" | "few"));
    if let Some(n) = count(w(n_at + skip)) {
        let of = usize::from(w(n_at + skip + 1) == "of");
        if let Some((u, grain)) = unit(w(n_at + skip + 1 + of)) {
            let after = n_at + skip + 2 + of;
            let grain = if grain == Grain::Weekend {
                Grain::Week
            } else {
                grain
            };
            if lead == 0 && w(after) == "ago" {
                return r(format!("{n} {u}s ago"), after + 1, grain);
            }
            if lead == 1 {
                return r(format!("{n} {u}s"), after, grain);
            }
        }
    }
    let preposition = PREPOSITIONS.contains(&first);
    let at = usize::from(preposition || first == "the");
    let at = at + usize::from(preposition && w(at) == "the");
    // "on the 12th", "the 3rd of May 2023", "12 May", "May 12th, 2023", "May 2023"
    if let Some(day) = day_of_month(w(at)).filter(|_| w(at).len() <= 4) {
        let of = usize::from(w(at + 1) == "of");
        if let Some(m) = month(w(at + 1 + of)) {
            let y = year(w(at + 2 + of));
            let query = match y {
                Some(y) => format!("{day} {} {y}", MONTHS[m as usize - 1]),
                None => format!("{day} {}", MONTHS[m as usize - 1]),
            };
            return r(query, at + 2 + of + usize::from(y.is_some()), Grain::Day);
        }
        if at > 0 && w(at).len() > 2 && !w(at).chars().all(|c| c.is_ascii_digit()) {
            return r(format!("__day {day}"), at + 1, Grain::Day);
        }
    }
    // "May" and "March" are words too: a month alone needs a preposition before it.
    let at = if first == "the" { 0 } else { at };
    if let Some(m) = month(w(at)) {
        let name = MONTHS[m as usize - 1];
        if let Some(day) = day_of_month(w(at + 1)).filter(|_| year(w(at + 1)).is_none()) {
            return match year(w(at + 2)) {
                Some(y) => r(format!("{day} {name} {y}"), at + 3, Grain::Day),
                None => r(format!("{day} {name}"), at + 2, Grain::Day),
            };
        }
        if let Some(y) = year(w(at + 1)) {
            return r(format!("1 {name} {y}"), at + 2, Grain::Month);
        }
        if preposition {
            let direction = if future { "next" } else { "last" };
            return r(format!("__month {direction} {m}"), at + 1, Grain::Month);
        }
    }
    if let Some(d) = weekday(w(at)).filter(|_| preposition) {
        let direction = if future { "" } else { "last " };
        return r(format!("{direction}{}", WEEKDAYS[d]), at + 1, Grain::Day);
    }
    if let Some(y) = year(w(at)).filter(|_| preposition) {
        return r(format!("1 january {y}"), at + 1, Grain::Year);
    }
    if first.len() == 10 && first.as_bytes()[4] == b'-' {
        return r(first.to_string(), 1, Grain::Day);
    }
    None
}

fn midnight(date: NaiveDate) -> i64 {
    Utc.from_utc_datetime(&date.and_hms_opt(0, 0, 0).expect("midnight exists"))
        .timestamp_micros()
}

fn add_months(date: NaiveDate, months: i32) -> NaiveDate {
    let total = date.year() * 12 + date.month0() as i32 + months;
    NaiveDate::from_ymd_opt(total.div_euclid(12), total.rem_euclid(12) as u32 + 1, 1)
        .expect("the first of a month exists")
}

/// The start of the span of `grain` around `date`, and its end.
fn span(date: NaiveDate, grain: Grain) -> (i64, i64) {
    let (start, end) = match grain {
        Grain::Day => (date, date + Duration::days(1)),
        Grain::Weekend => {
            let saturday = date + Duration::days(5 - date.weekday().num_days_from_monday() as i64);
            (saturday, saturday + Duration::days(2))
        }
        Grain::Week => {
            let monday = date - Duration::days(date.weekday().num_days_from_monday() as i64);
            (monday, monday + Duration::days(7))
        }
        Grain::Month => {
            let first = date.with_day(1).expect("day 1 exists");
            (first, add_months(first, 1))
        }
        Grain::Year => {
            let first = NaiveDate::from_ymd_opt(date.year(), 1, 1).expect("1 January exists");
            (
                first,
                NaiveDate::from_ymd_opt(date.year() + 1, 1, 1).expect("exists"),
            )
        }
    };
    (midnight(start), midnight(end))
}

/// The date a reading names, said at `now`.
fn resolve(query: &str, now: DateTime<Utc>, future: bool) -> Option<NaiveDate> {
    let today = now.date_naive();
    if let Some(day) = query.strip_prefix("__day ") {
        let day: u32 = day.parse().ok()?;
        // "on the 12th": this month's, unless that is still to come and the text is past.
        let this = today.with_day(day);
        return match this {
            Some(d) if d <= today || future => Some(d),
            _ => add_months(today, -1).with_day(day),
        };
    }
    if let Some(rest) = query.strip_prefix("__month ") {
        let (direction, m) = rest.split_once(' ')?;
        let m: u32 = m.parse().ok()?;
        let this_year = NaiveDate::from_ymd_opt(today.year(), m, 1)?;
        let this_month = today.with_day(1)?;
        return Some(match direction {
            "last" if this_year > this_month => add_months(this_year, -12),
            "next" if this_year < this_month => add_months(this_year, 12),
            _ => this_year,
        });
    }
    let resolved = parse_date_string(query, now, Dialect::Uk).ok()?;
    let date = resolved.date_naive();
    // "12 May" with no year and no future in the text: the last one, not the coming one.
    let parts: Vec<&str> = query.split_whitespace().collect();
    let day_month = parts.len() == 2 && month(parts[1]).is_some() && !future;
    if day_month && date > today {
        return NaiveDate::from_ymd_opt(date.year() - 1, date.month(), date.day());
    }
    Some(date)
}

/// The first date expression of `text`, resolved against `said_at` (UTC microseconds).
pub fn find(text: &str, said_at: i64) -> Option<DateSpan> {
    let now = Utc.timestamp_micros(said_at).single()?;
    let tokens = tokens(text);
    let words: Vec<&str> = tokens.iter().map(|t| t.word.as_str()).collect();
    let future = words
        .iter()
        .any(|w| FUTURE_WORDS.contains(w) || w.ends_with("'ll"));
    for i in 0..words.len() {
        let deadline = words[i.saturating_sub(2)..=i]
            .iter()
            .any(|w| DEADLINE_WORDS.contains(w));
        // A limit lies ahead: "by Friday" is the coming one.
        let future = future || deadline;
        let Some(reading) = reading(&words[i..], future) else {
            continue;
        };
        let Some(date) = resolve(&reading.query, now, future) else {
            continue;
        };
        let (start, end) = span(date, reading.grain);
        let last = (i + reading.width).min(tokens.len()) - 1;
        return Some(DateSpan {
            start,
            end,
            phrase: text[tokens[i].start..tokens[last].end].to_string(),
            deadline,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> i64 {
        midnight(NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap())
    }

    #[test]
    fn resolves_expressions_against_when_they_were_said() {
        // Said on Wednesday 2023-05-10 at 15:00 UTC. (text, first day, end day exclusive)
        let said = Utc
            .with_ymd_and_hms(2023, 5, 10, 15, 0, 0)
            .unwrap()
            .timestamp_micros();
        let cases = [
            ("I went to the gym yesterday", "2023-05-09", "2023-05-10"),
            ("we talked about it today", "2023-05-10", "2023-05-11"),
            ("Tomorrow I'll call the bank", "2023-05-11", "2023-05-12"),
            (
                "Last Saturday we hiked up the hill",
                "2023-05-06",
                "2023-05-07",
            ),
            (
                "I started painting two weeks ago",
                "2023-04-24",
                "2023-05-01",
            ),
            ("She moved here 3 days ago", "2023-05-07", "2023-05-08"),
            ("We adopted the dog a year ago", "2022-01-01", "2023-01-01"),
            ("I ran a charity race last week", "2023-05-01", "2023-05-08"),
            ("Next month I start the new job", "2023-06-01", "2023-07-01"),
            (
                "The camping trip in June will be great",
                "2023-06-01",
                "2023-07-01",
            ),
            ("We went to Rome in March", "2023-03-01", "2023-04-01"),
            (
                "In September we visited my aunt",
                "2022-09-01",
                "2022-10-01",
            ),
            ("The party was on the 12th", "2023-04-12", "2023-04-13"),
            ("My birthday was on the 3rd", "2023-05-03", "2023-05-04"),
            ("I graduated on 7 May 2021", "2021-05-07", "2021-05-08"),
            (
                "Our wedding is on June 17, 2024",
                "2024-06-17",
                "2024-06-18",
            ),
            ("That was in May 2022", "2022-05-01", "2022-06-01"),
            ("We met back in 2019", "2019-01-01", "2020-01-01"),
            ("I saw a concert on Friday", "2023-05-05", "2023-05-06"),
            ("I will see her on Friday", "2023-05-12", "2023-05-13"),
            ("Last night I couldn't sleep", "2023-05-09", "2023-05-10"),
            (
                "This morning the train was late",
                "2023-05-10",
                "2023-05-11",
            ),
            (
                "The report is due by 2023-05-19",
                "2023-05-19",
                "2023-05-20",
            ),
            ("A couple of months ago I quit", "2023-03-01", "2023-04-01"),
            ("in 3 weeks we fly to Lisbon", "2023-05-29", "2023-06-05"),
            ("last weekend we went camping", "2023-05-06", "2023-05-08"),
        ];
        for (text, start, end) in cases {
            let span = find(text, said).unwrap_or_else(|| panic!("{text}: no date found"));
            assert_eq!(
                (span.start, span.end),
                (day(start), day(end)),
                "{text}: read `{}`",
                span.phrase
            );
        }
    }

    #[test]
    fn words_that_only_look_like_dates_are_not_dates() {
        let said = Utc::now().timestamp_micros();
        for text in [
            "May I ask you something?",
            "I have 3 cats and 2 dogs",
            "Room 12 is on the second floor",
            "The march for climate was loud",
            "I like the color of the sunset",
            "Version 2.0 of the app",
        ] {
            assert_eq!(find(text, said), None, "{text}");
        }
    }

    #[test]
    fn a_limit_is_a_deadline() {
        let said = Utc::now().timestamp_micros();
        assert!(find("Send the draft by Friday", said).unwrap().deadline);
        assert!(!find("We met on Friday", said).unwrap().deadline);
    }
}
