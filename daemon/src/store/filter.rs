//! Turns the protocol's [`Filter`] into a typed predicate over the memories.

use mnemo_protocol::memory::Filter;
use mnemo_protocol::time::parse_micros;

use super::sql::{col, Expr, Pred};

/// Versions current now (not closed by an update, a merge or a summary).
pub fn current() -> Pred {
    col("valid_to").null()
}

/// Rows that have not taken the accesses a patch folds: their last access is older than the
/// patch's `last_accessed_at`, or they have none. Folding the same events twice (after a
/// crash) changes nothing.
pub fn unfolded_accesses() -> Pred {
    col("last_accessed_at")
        .null()
        .or(col("last_accessed_at").lt(Expr::Source("last_accessed_at")))
}

/// [`unfolded_accesses`] for one row: whether a row last accessed at `last` takes accesses
/// folded up to `at`.
pub fn takes_accesses(last: Option<i64>, at: i64) -> bool {
    last.is_none_or(|last| last < at)
}

/// When a memory happened: its event time, or when it was added.
/// Rows not yet sealed (null in rows older than schema 3).
pub fn plain_rows() -> Pred {
    col("sealed").eq(false).or(col("sealed").null())
}

pub fn event_time() -> Expr {
    col("occurred_at").coalesce(col("created_at"))
}

/// A bad filter value, named by its field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FilterError {
    pub field: &'static str,
    pub message: String,
}

fn time(field: &'static str, value: &Option<String>) -> Result<Option<i64>, FilterError> {
    value
        .as_deref()
        .map(parse_micros)
        .transpose()
        .map_err(|message| FilterError { field, message })
}

/// The predicate for `filter` without its validity window (every version).
pub fn predicate_all_versions(filter: &Filter) -> Result<Pred, FilterError> {
    let mut p = Pred::All;
    let fields = [
        ("namespace", &filter.namespace),
        ("domain", &filter.domain),
        ("session_id", &filter.session_id),
        ("source", &filter.source),
    ];
    for (column, value) in fields {
        if let Some(v) = value {
            p = p.and(col(column).eq(v));
        }
    }
    if let Some(kind) = filter.kind {
        p = p.and(col("kind").eq(kind.as_str()));
    }
    if let Some(t) = time("since", &filter.since)? {
        p = p.and(event_time().ge(t));
    }
    if let Some(t) = time("until", &filter.until)? {
        p = p.and(event_time().lt(t));
    }
    if let Some(action) = filter.action {
        p = p.and(col("action").eq(action.as_str()));
    }
    if let Some(outcome) = filter.outcome {
        p = p.and(col("outcome").eq(outcome.as_str()));
    }
    if let Some(emotion) = filter.emotion {
        p = p.and(col("emotion_primary").eq(emotion.as_str()));
    }
    let valence = [
        ("min_valence", filter.min_valence),
        ("max_valence", filter.max_valence),
    ];
    for (field, value) in valence {
        let Some(v) = value else { continue };
        if !(-1.0..=1.0).contains(&v) {
            return Err(FilterError {
                field,
                message: format!("{v} is outside −1 (unpleasant) – 1 (pleasant)"),
            });
        }
        let column = col("emotion_valence");
        p = p.and(if field == "min_valence" {
            column.ge(v)
        } else {
            column.le(v)
        });
    }
    // Read here too so a bad `as_of` is named whatever the caller does with it.
    time("as_of", &filter.as_of)?;
    Ok(p)
}

/// The predicate for `filter`, seeing only versions current at `as_of` (or now).
pub fn predicate(filter: &Filter) -> Result<Pred, FilterError> {
    let p = predicate_all_versions(filter)?;
    Ok(match time("as_of", &filter.as_of)? {
        Some(t) => p
            .and(col("valid_from").le(t))
            .and(col("valid_to").null().or(col("valid_to").gt(t))),
        None => p.and(current()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_protocol::memory::MemoryKind;

    #[test]
    fn quotes_are_doubled() {
        let f = Filter {
            namespace: Some("o'brien".into()),
            ..Default::default()
        };
        assert_eq!(
            predicate(&f).unwrap().sql(),
            "(namespace = 'o''brien') AND (valid_to IS NULL)"
        );
    }

    #[test]
    fn every_field_narrows() {
        let f = Filter {
            namespace: Some("n".into()),
            kind: Some(MemoryKind::Semantic),
            since: Some("2024-01-01".into()),
            as_of: Some("2024-02-01".into()),
            ..Default::default()
        };
        let p = predicate(&f).unwrap().sql();
        assert!(p.contains("kind = 'semantic'"), "{p}");
        assert!(
            p.contains("COALESCE(occurred_at, created_at) >= 1704067200000000"),
            "{p}"
        );
        assert!(p.contains("valid_from <= 1706745600000000"), "{p}");
        assert!(
            p.contains("(valid_to IS NULL) OR (valid_to > 1706745600000000)"),
            "{p}"
        );
    }

    #[test]
    fn bad_time_names_the_field() {
        let f = Filter {
            until: Some("soon".into()),
            ..Default::default()
        };
        let e = predicate(&f).unwrap_err();
        assert_eq!(e.field, "until");
        assert!(e.to_string().starts_with("until: cannot read `soon`"));
    }

    #[test]
    fn emotion_and_valence_narrow_and_are_checked() {
        let f = Filter {
            emotion: Some(mnemo_protocol::understanding::EmotionKind::Joy),
            min_valence: Some(0.25),
            max_valence: Some(1.0),
            ..Default::default()
        };
        let p = predicate(&f).unwrap().sql();
        assert!(p.contains("emotion_primary = 'joy'"), "{p}");
        assert!(p.contains("emotion_valence >= 0.25"), "{p}");
        assert!(p.contains("emotion_valence <= 1"), "{p}");
        let bad = Filter {
            max_valence: Some(3.0),
            ..Default::default()
        };
        assert_eq!(predicate(&bad).unwrap_err().field, "max_valence");
    }

    #[test]
    fn forget_sees_all_versions() {
        let f = Filter {
            namespace: Some("n".into()),
            ..Default::default()
        };
        assert_eq!(predicate_all_versions(&f).unwrap().sql(), "namespace = 'n'");
        assert_eq!(
            predicate_all_versions(&Filter::default()).unwrap(),
            Pred::All
        );
    }
}
