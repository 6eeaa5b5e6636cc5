//! Turns the protocol's [`Filter`] into a typed predicate over the memories.

use mnemo_protocol::memory::Filter;
use mnemo_protocol::time::parse_micros;

use super::sql::{col, Expr, Pred};

/// Versions current now (not closed by an update, a merge or a summary).
pub fn current() -> Pred {
    col("valid_to").null()
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
