//! Turns the protocol's [`Filter`] into a LanceDB SQL predicate. Every value is quoted here,
//! and only here, so no caller builds SQL from user text.

use mnemo_protocol::memory::Filter;
use mnemo_protocol::time::parse_micros;

/// Versions current now (not closed by an update, a merge or a summary).
pub const CURRENT: &str = "valid_to IS NULL";

/// A SQL string literal, quotes doubled.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
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

/// The predicate for `filter`, seeing only versions current at `as_of` (or now).
pub fn predicate(filter: &Filter) -> Result<String, FilterError> {
    let mut parts = Vec::new();
    let eq = |column: &str, value: &Option<String>, parts: &mut Vec<String>| {
        if let Some(v) = value {
            parts.push(format!("{column} = {}", quote(v)));
        }
    };
    eq("namespace", &filter.namespace, &mut parts);
    eq("domain", &filter.domain, &mut parts);
    eq("session_id", &filter.session_id, &mut parts);
    eq("source", &filter.source, &mut parts);
    if let Some(kind) = filter.kind {
        parts.push(format!("kind = {}", quote(kind.as_str())));
    }
    if let Some(t) = time("since", &filter.since)? {
        parts.push(format!("coalesce(occurred_at, created_at) >= {t}"));
    }
    if let Some(t) = time("until", &filter.until)? {
        parts.push(format!("coalesce(occurred_at, created_at) < {t}"));
    }
    match time("as_of", &filter.as_of)? {
        Some(t) => parts.push(format!(
            "valid_from <= {t} AND (valid_to IS NULL OR valid_to > {t})"
        )),
        None => parts.push(CURRENT.into()),
    }
    Ok(parts.join(" AND "))
}

/// The predicate for forget: every version, whatever its validity.
pub fn predicate_all_versions(filter: &Filter) -> Result<String, FilterError> {
    let current = predicate(&Filter {
        as_of: None,
        ..filter.clone()
    })?;
    Ok(current
        .trim_end_matches(CURRENT)
        .trim_end_matches(" AND ")
        .to_string())
}

pub fn id_list(column: &str, ids: &[String]) -> String {
    let quoted: Vec<String> = ids.iter().map(|id| quote(id)).collect();
    format!("{column} IN ({})", quoted.join(", "))
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
            predicate(&f).unwrap(),
            "namespace = 'o''brien' AND valid_to IS NULL"
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
        let p = predicate(&f).unwrap();
        assert!(p.contains("kind = 'semantic'"), "{p}");
        assert!(
            p.contains("coalesce(occurred_at, created_at) >= 1704067200000000"),
            "{p}"
        );
        assert!(p.contains("valid_from <= 1706745600000000"), "{p}");
        assert!(!p.contains("valid_to IS NULL AND"), "{p}");
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
        assert_eq!(predicate_all_versions(&f).unwrap(), "namespace = 'n'");
        assert_eq!(predicate_all_versions(&Filter::default()).unwrap(), "");
    }
}
