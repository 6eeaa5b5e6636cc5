//! What ranking reads of each memory whose codes are held (`nearest.rs`), kept beside them
//! so a search ranks its candidates without reading their rows: at 100k memories the read
//! of the vector leg's 50 candidates took ~5 ms of a ~16 ms search, and the text leg's
//! ranking columns ~2 ms more.
//!
//! The values follow the writer's inserts and upserts, which carry whole rows. A bulk update
//! or patch of one of these columns (consolidation's decay, the LLM's reading of names) says
//! only how it changed them, so it marks them stale, and until the codes are read again the
//! candidates' rows are read as before.

use super::MemoryRecord;

/// The columns held. A write that sets one of them other than by whole rows makes the held
/// values stale.
pub const HELD_COLUMNS: &[&str] = &[
    "lineage",
    "entities",
    "salience",
    "strength",
    "occurred_at",
    "created_at",
    "event_start",
    "event_end",
];

/// Columns a search answers with that most rows leave empty (None, no items, false). A held
/// row keeps which of them it fills, and its row is read without the others: at 100k
/// memories each column a take of 10 rows reads costs ~0.1 ms, an empty one as much as any.
/// Like [`HELD_COLUMNS`], a write that sets one other than by whole rows makes what is held
/// stale.
pub const SPARSE_COLUMNS: &[&str] = &[
    "domain",
    "source",
    "session_id",
    "superseded_by",
    "summarizes",
    "tags",
    "last_accessed_at",
    "summarized_by",
    "faded_at",
    "action",
    "outcome",
    "duration_ms",
    "is_summary",
    "sealed",
];

/// Which of [`SPARSE_COLUMNS`] a row fills, a bit each.
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub struct Filled(u16);

impl Filled {
    fn of(record: &MemoryRecord) -> Self {
        Self(
            SPARSE_COLUMNS
                .iter()
                .enumerate()
                .filter(|(_, c)| record.fills(c))
                .fold(0, |bits, (i, _)| bits | 1 << i),
        )
    }

    /// What either row fills.
    pub fn or(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Whether `column` must be read: it is not sparse, or a row fills it.
    pub fn must_read(self, column: &str) -> bool {
        SPARSE_COLUMNS
            .iter()
            .position(|c| *c == column)
            .is_none_or(|i| self.0 & 1 << i != 0)
    }
}

/// The columns a write that sets one other than by whole rows makes what is held stale by:
/// the held ones, and the sparse ones (a row held as not filling one would be answered
/// without it).
pub fn staling_held() -> impl Iterator<Item = &'static str> {
    HELD_COLUMNS.iter().chain(SPARSE_COLUMNS).copied()
}

/// Whether a held row's `column` is known without reading it: a held column, its namespace
/// (the codes hold it) or its end of validity (only current rows are held).
pub fn known_when_held(column: &str) -> bool {
    HELD_COLUMNS.contains(&column) || matches!(column, "namespace" | "valid_to")
}

/// `taken` (a row read without the columns [`known_when_held`]) with the values held for it
/// (`values`, as [`Held::record`] gives them).
pub fn with_held(taken: MemoryRecord, values: MemoryRecord) -> MemoryRecord {
    MemoryRecord {
        lineage: values.lineage,
        namespace: values.namespace,
        salience: values.salience,
        strength: values.strength,
        created_at: values.created_at,
        occurred_at: values.occurred_at,
        event_start: values.event_start,
        event_end: values.event_end,
        valid_to: None,
        ..taken
    }
}

/// An absent time (64 bytes a row rather than 88 with `Option`s).
const NO_TIME: i64 = i64::MIN;

struct Fields {
    /// None when it is the id (a first version).
    lineage: Option<Box<str>>,
    /// Where the row's entities lie in [`Held::entity_of`].
    entities_at: u32,
    /// At most `u16::MAX` names are held (ranking reads no more).
    entities_len: u16,
    filled: Filled,
    salience: f32,
    strength: f32,
    created_at: i64,
    occurred_at: i64,
    event_start: i64,
    event_end: i64,
}

/// The ranking values of each held row, by row.
#[derive(Default)]
pub(super) struct Held {
    rows: Vec<Fields>,
    /// Each row's entities, as indexes into `names`, one row after another.
    entity_of: Vec<u32>,
    /// Each entity name (as stored: keyed in an encrypted store) once.
    names: Vec<Box<str>>,
    name_index: std::collections::HashMap<Box<str>, u32>,
}

fn time(t: Option<i64>) -> i64 {
    t.unwrap_or(NO_TIME)
}

fn maybe(t: i64) -> Option<i64> {
    (t != NO_TIME).then_some(t)
}

impl Held {
    pub fn reserve(&mut self, rows: usize) {
        self.rows.reserve_exact(rows);
    }

    pub fn shrink_to_fit(&mut self) {
        self.rows.shrink_to_fit();
        self.entity_of.shrink_to_fit();
        self.names.shrink_to_fit();
    }

    /// The values of `record`, whose entities are stored as `entities`.
    fn fields(&mut self, record: &MemoryRecord, entities: &[String]) -> Fields {
        let entities_at = self.entity_of.len() as u32;
        let entities = &entities[..entities.len().min(u16::MAX as usize)];
        for name in entities {
            let index = match self.name_index.get(name.as_str()) {
                Some(&i) => i,
                None => {
                    let i = self.names.len() as u32;
                    self.names.push(name.as_str().into());
                    self.name_index.insert(name.as_str().into(), i);
                    i
                }
            };
            self.entity_of.push(index);
        }
        Fields {
            lineage: (record.lineage != record.id).then(|| record.lineage.as_str().into()),
            entities_at,
            entities_len: entities.len() as u16,
            filled: Filled::of(record),
            salience: record.salience,
            strength: record.strength,
            created_at: record.created_at,
            occurred_at: time(record.occurred_at),
            event_start: time(record.event_start),
            event_end: time(record.event_end),
        }
    }

    /// Holds the values of a new row (the next index).
    pub fn push(&mut self, record: &MemoryRecord, entities: &[String]) {
        let fields = self.fields(record, entities);
        self.rows.push(fields);
    }

    /// Holds the values of a new version of row `i` (its old entities stay unused until the
    /// codes are read again).
    pub fn set(&mut self, i: usize, record: &MemoryRecord, entities: &[String]) {
        let fields = self.fields(record, entities);
        self.rows[i] = fields;
    }

    /// Row `i`'s lineage, when it is not its id (a later version).
    pub fn lineage(&self, i: usize) -> Option<&str> {
        self.rows[i].lineage.as_deref()
    }

    /// Which of [`SPARSE_COLUMNS`] row `i` fills.
    pub fn filled(&self, i: usize) -> Filled {
        self.rows[i].filled
    }

    /// Row `i` as ranking reads it: these columns, its id and namespace, current.
    pub fn record(&self, i: usize, id: &str, namespace: &str) -> MemoryRecord {
        let f = &self.rows[i];
        let at = f.entities_at as usize;
        let entities = self.entity_of[at..at + f.entities_len as usize]
            .iter()
            .map(|&n| self.names[n as usize].to_string())
            .collect();
        MemoryRecord {
            id: id.to_string(),
            lineage: f.lineage.as_deref().unwrap_or(id).to_string(),
            namespace: namespace.to_string(),
            entities,
            salience: f.salience,
            strength: f.strength,
            created_at: f.created_at,
            occurred_at: maybe(f.occurred_at),
            event_start: maybe(f.event_start),
            event_end: maybe(f.event_end),
            ..Default::default()
        }
    }

    /// Bytes held, for the log.
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        let lineages: usize = self
            .rows
            .iter()
            .filter_map(|f| f.lineage.as_ref().map(|l| l.len()))
            .sum();
        let names: usize = self.names.iter().map(|n| 2 * (n.len() + 24)).sum();
        self.rows.len() * size_of::<Fields>() + lineages + self.entity_of.len() * 4 + names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_must_be_read_for_the_sparse_columns_it_fills_only() {
        let schema = crate::store::schema::memories_schema(4);
        for column in SPARSE_COLUMNS {
            assert!(
                schema.field_with_name(column).is_ok(),
                "{column} is a column"
            );
        }
        let plain = MemoryRecord {
            id: "a".into(),
            content: "text".into(),
            ..Default::default()
        };
        let mut full = plain.clone();
        full.domain = Some("work".into());
        full.source = Some("chat".into());
        full.session_id = Some("s1".into());
        full.superseded_by = Some("b".into());
        full.summarizes = vec!["c".into()];
        full.tags = vec!["t".into()];
        full.last_accessed_at = Some(1);
        full.summarized_by = Some("d".into());
        full.faded_at = Some(2);
        full.action = Some("edit".into());
        full.outcome = Some("ok".into());
        full.duration_ms = Some(3);
        full.is_summary = true;
        full.sealed = true;
        let (plain, full) = (Filled::of(&plain), Filled::of(&full));
        for column in SPARSE_COLUMNS {
            assert!(full.must_read(column), "{column} filled");
        }
        let dense = ["id", "content", "kind", "metadata", "access_count"];
        for column in dense {
            assert!(plain.must_read(column), "{column} is always read");
        }
        let tagged = MemoryRecord {
            tags: vec!["t".into()],
            ..Default::default()
        };
        let either = plain.or(Filled::of(&tagged));
        let read: Vec<&&str> = SPARSE_COLUMNS
            .iter()
            .filter(|c| either.must_read(c))
            .collect();
        assert_eq!(read, [&"tags"]);
    }

    #[test]
    fn a_held_row_reads_back_as_ranking_reads_it() {
        let mut r = crate::store::schema::tests::record("v2", "text", 4);
        r.lineage = "v1".into();
        r.salience = 7.5;
        r.strength = 0.8;
        r.created_at = 100;
        r.occurred_at = Some(90);
        r.event_start = Some(-5);
        r.event_end = Some(0);
        r.entities = vec!["maria".into(), "porto".into()];
        let mut first = crate::store::schema::tests::record("a", "text", 4);
        first.entities = vec!["porto".into()];
        first.occurred_at = None;
        let mut held = Held::default();
        held.push(&first, &first.entities);
        held.push(&r, &r.entities);
        let back = held.record(1, "v2", &r.namespace);
        assert_eq!(
            (back.lineage.as_str(), back.salience, back.strength),
            ("v1", 7.5, 0.8)
        );
        assert_eq!(
            (
                back.created_at,
                back.occurred_at,
                back.event_start,
                back.event_end
            ),
            (100, Some(90), Some(-5), Some(0))
        );
        assert_eq!(back.entities, ["maria", "porto"]);
        assert_eq!(held.names.len(), 2, "a name is held once");
        let a = held.record(0, "a", "default");
        assert_eq!((a.lineage.as_str(), a.occurred_at), ("a", None));
        assert_eq!(a.entities, ["porto"]);

        // A new version of row 0 in place, with entities as stored.
        first.strength = 0.5;
        held.set(0, &first, &["#keyed".to_string()]);
        let a = held.record(0, "a", "default");
        assert_eq!((a.strength, a.entities), (0.5, vec!["#keyed".to_string()]));
    }
}
