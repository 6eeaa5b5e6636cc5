//! Timestamps on the wire are strings; in storage they are UTC microseconds.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use chrono::{DateTime, NaiveDate, NaiveDateTime, SecondsFormat, TimeZone, Utc};

pub const ACCEPTED_FORMATS: &str =
    "RFC 3339 (2024-05-01T12:00:00Z), a date (2024-05-01) or a UTC date and time (2024-05-01 12:00[:00])";

/// Parses a wire timestamp into UTC microseconds.
pub fn parse_micros(text: &str) -> Result<i64, String> {
    let text = text.trim();
    let parsed = DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .ok()
        .or_else(|| {
            [
                "%Y-%m-%d %H:%M:%S",
                "%Y-%m-%d %H:%M",
                "%Y-%m-%dT%H:%M:%S",
                "%Y-%m-%dT%H:%M",
            ]
            .iter()
            .find_map(|f| NaiveDateTime::parse_from_str(text, f).ok())
            .map(|t| Utc.from_utc_datetime(&t))
        })
        .or_else(|| {
            NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map(|t| Utc.from_utc_datetime(&t))
        });
    parsed
        .map(|t| t.timestamp_micros())
        .ok_or_else(|| format!("cannot read `{text}` as a time; use {ACCEPTED_FORMATS}"))
}

/// RFC 3339 in UTC, with milliseconds, or microseconds when the time has them: every stored
/// time reads back exactly (an export imported keeps the order of versions a millisecond
/// apart).
pub fn format_micros(micros: i64) -> String {
    let digits = if micros % 1000 == 0 {
        SecondsFormat::Millis
    } else {
        SecondsFormat::Micros
    };
    DateTime::<Utc>::from_timestamp_micros(micros)
        .map(|t| t.to_rfc3339_opts(digits, true))
        .unwrap_or_else(|| micros.to_string())
}

/// Microseconds the clock has been moved ahead of the wall clock: none, unless a test moved
/// it (`daemon.advance_clock`, answered only by a mnemod started with `--test-clock`).
static AHEAD_MICROS: AtomicI64 = AtomicI64::new(0);
/// Whether this process lets its clock be moved.
static MOVABLE: AtomicBool = AtomicBool::new(false);

/// Now, in UTC microseconds: the wall clock, plus what a test moved it ahead.
pub fn now_micros() -> i64 {
    Utc::now().timestamp_micros() + AHEAD_MICROS.load(Ordering::Relaxed)
}

/// Lets [`advance_clock`] move this process's clock (for tests of what time does: decay,
/// fading), so they need not sleep.
pub fn allow_clock_moves() {
    MOVABLE.store(true, Ordering::Relaxed);
}

/// Moves the clock ahead by `micros`; false (and no move) unless moves were allowed.
pub fn advance_clock(micros: i64) -> bool {
    if !MOVABLE.load(Ordering::Relaxed) {
        return false;
    }
    AHEAD_MICROS.fetch_add(micros.max(0), Ordering::Relaxed);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_accepted_form() {
        let want = 1_714_564_800_000_000; // 2024-05-01T12:00:00Z
        for text in [
            "2024-05-01T12:00:00Z",
            "2024-05-01T14:00:00+02:00",
            "2024-05-01 12:00:00",
            "2024-05-01 12:00",
            "2024-05-01T12:00",
        ] {
            assert_eq!(parse_micros(text), Ok(want), "{text}");
        }
        assert_eq!(parse_micros("2024-05-01"), Ok(want - 12 * 3_600_000_000));
    }

    #[test]
    fn refuses_nonsense_with_the_formats() {
        let err = parse_micros("last tuesday").unwrap_err();
        assert!(
            err.contains("last tuesday") && err.contains("RFC 3339"),
            "{err}"
        );
    }

    #[test]
    fn formats_round_trip() {
        let t = parse_micros("2024-05-01T12:00:00.123Z").unwrap();
        assert_eq!(format_micros(t), "2024-05-01T12:00:00.123Z");
        let t = parse_micros("2024-05-01T12:00:00.123456Z").unwrap();
        assert_eq!(format_micros(t), "2024-05-01T12:00:00.123456Z");
    }
}
