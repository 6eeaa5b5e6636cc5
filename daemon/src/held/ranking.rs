//! What ranking reads of each memory whose codes are held (`nearest.rs`), kept beside them
//! so a search ranks its candidates without reading their rows, which was a third of a
//! search's time at 100k memories (`docs/benchmarks.md`, held in memory).
//!
//! The values follow the writer's inserts and upserts, which carry whole rows. A bulk update
//! or patch of one of these columns (consolidation's decay, the LLM's reading of names) says
//! only how it changed them, so it marks them stale, and until the codes are read again the
//! candidates' rows are read as before.

use crate::store::MemoryRecord;

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
    "summarized_by",
    "faded_at",
    "action",
    "outcome",
    "duration_ms",
    "is_summary",
    "sealed",
];

/// Columns a search answers with that are held beside the codes while the vectors are
/// (whole or signed, 24 bytes a row), so the take of the rows answered skips them: at 100k
/// memories a search's take of 10 rows took 1.7–1.8 ms rather than 2.5; at 1M, with the
/// [`HELD_ANSWERS`] in files, a search takes nothing.
/// Like [`HELD_COLUMNS`], a write that sets one other than by whole rows makes what is held
/// stale.
pub const HELD_WITH_VECTORS: &[&str] = &[
    "kind",
    "valid_from",
    "emotion_primary",
    "emotion_intensity",
    "emotion_valence",
    "emotion_arousal",
];

/// Columns a search answers with that are held with the words, in a plain store, for the
/// rows whose values fit (`nearest/codes/answers.rs`): a search whose rows hold them all
/// takes none from Lance. Like [`HELD_COLUMNS`], a write that sets one other than by whole
/// rows makes what is held stale.
pub const HELD_ANSWERS: &[&str] = &[
    "content",
    "metadata",
    "content_hash",
    "access_count",
    "last_accessed_at",
    "salience_factors",
];

/// The held columns whose values a patch by id of current rows sets in the codes in place
/// (`nearest/patched.rs`), rather than making every value held stale.
pub const SET_IN_PLACE: &[&str] = &[
    "salience",
    "strength",
    "faded_at",
    "summarized_by",
    "access_count",
];

/// One row's values of [`SET_IN_PLACE`] a patch sets, or those the access fold sets; None
/// where it leaves them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Patched {
    pub salience: Option<f32>,
    pub strength: Option<f32>,
    /// Whether `faded_at` is set (only which sparse columns a row fills is held).
    pub faded: Option<bool>,
    /// Whether `summarized_by` is set (likewise).
    pub summarized: Option<bool>,
    pub access_count: Option<i64>,
    /// Accesses folded up to then: the access count and this last access are set only
    /// where the row's last access is older (`filter::unfolded_accesses`).
    pub last_accessed_at: Option<i64>,
}

/// Which of [`SPARSE_COLUMNS`] a row fills, a bit each, whether its [`HELD_WITH_VECTORS`]
/// are not held ([`UNHELD_WITH_VECTORS`]) and whether its [`HELD_ANSWERS`] are not
/// ([`UNHELD_ANSWERS`]).
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub struct Filled(u16);

/// The bit of [`Filled`] for a row whose [`HELD_WITH_VECTORS`] are not held.
const UNHELD_WITH_VECTORS: u16 = 1 << 15;

/// The bit of [`Filled`] for a row whose [`HELD_ANSWERS`] are not held: set for every row
/// until the codes say they hold them ([`Filled::with_answers`]).
const UNHELD_ANSWERS: u16 = 1 << 14;

impl Filled {
    fn of(record: &MemoryRecord) -> Self {
        Self(
            SPARSE_COLUMNS
                .iter()
                .enumerate()
                .filter(|(_, c)| record.fills(c))
                .fold(UNHELD_ANSWERS, |bits, (i, _)| bits | 1 << i),
        )
    }

    /// The same, for a row whose [`HELD_ANSWERS`] are held.
    pub fn with_answers(self) -> Self {
        Self(self.0 & !UNHELD_ANSWERS)
    }

    /// The same, with sparse `column` filled or not.
    fn with(self, column: &str, filled: bool) -> Self {
        match SPARSE_COLUMNS.iter().position(|c| *c == column) {
            Some(i) if filled => Self(self.0 | 1 << i),
            Some(i) => Self(self.0 & !(1 << i)),
            None => self,
        }
    }

    /// What either row fills.
    pub fn or(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Whether `column` must be read: it is not sparse, or a row fills it; for a column
    /// held with the vectors, whether a row does not hold it.
    pub fn must_read(self, column: &str) -> bool {
        if HELD_WITH_VECTORS.contains(&column) {
            return self.0 & UNHELD_WITH_VECTORS != 0;
        }
        if HELD_ANSWERS.contains(&column) {
            return self.0 & UNHELD_ANSWERS != 0;
        }
        SPARSE_COLUMNS
            .iter()
            .position(|c| *c == column)
            .is_none_or(|i| self.0 & 1 << i != 0)
    }

    /// Whether the row's [`HELD_WITH_VECTORS`] are held.
    pub fn holds_with_vectors(self) -> bool {
        self.0 & UNHELD_WITH_VECTORS == 0
    }

    /// Whether the row's [`HELD_ANSWERS`] are held.
    pub fn holds_answers(self) -> bool {
        self.0 & UNHELD_ANSWERS == 0
    }
}

/// The columns a write that sets one other than by whole rows makes what is held stale by:
/// those held, with or without the vectors, the answers held, and the sparse ones (a row
/// held as not filling one would be answered without it).
pub fn staling_held() -> impl Iterator<Item = &'static str> {
    HELD_COLUMNS
        .iter()
        .chain(SPARSE_COLUMNS)
        .chain(HELD_WITH_VECTORS)
        .chain(HELD_ANSWERS)
        .copied()
}

/// Whether a held row's `column` is known without reading it: a held column, its id and
/// namespace (the codes hold them) or its end of validity (only current rows are held).
pub fn known_when_held(column: &str) -> bool {
    HELD_COLUMNS.contains(&column) || matches!(column, "id" | "namespace" | "valid_to")
}

/// `taken` (a row read without the columns [`known_when_held`], and without the
/// [`HELD_WITH_VECTORS`] and [`HELD_ANSWERS`] where `held` holds them) with the values held
/// for it (`values`, as the codes answer with them).
pub fn with_held(taken: MemoryRecord, values: MemoryRecord, held: Filled) -> MemoryRecord {
    let mut row = MemoryRecord {
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
    };
    if held.holds_answers() {
        row.content = values.content;
        row.metadata = values.metadata;
        row.content_hash = values.content_hash;
        row.access_count = values.access_count;
        row.last_accessed_at = values.last_accessed_at;
        row.salience_factors = values.salience_factors;
    }
    if held.holds_with_vectors() {
        row.kind = values.kind;
        row.valid_from = values.valid_from;
        row.emotion_primary = values.emotion_primary;
        row.emotion_intensity = values.emotion_intensity;
        row.emotion_valence = values.emotion_valence;
        row.emotion_arousal = values.emotion_arousal;
    }
    row
}

/// An absent time (48 bytes a row rather than 72 with `Option`s).
const NO_TIME: i64 = i64::MIN;

struct Fields {
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

/// A row's [`HELD_WITH_VECTORS`].
struct WithVectors {
    valid_from: i64,
    /// [`NO_VALUE`] for None.
    intensity: f32,
    valence: f32,
    arousal: f32,
    /// Index into [`Held::primaries`] plus one; 0 for None, [`UNHELD`] where the row does
    /// not hold its columns held with the vectors.
    primary: u8,
    kind: mnemo_protocol::memory::MemoryKind,
}

/// An absent emotion value: a NaN no computation makes (compared by its bits, so any other
/// value, NaNs too, is held as it is).
const NO_VALUE: u32 = 0x7fc0_dead;

/// [`WithVectors::primary`] of a row that does not hold its columns held with the vectors.
const UNHELD: u8 = u8::MAX;

fn value(v: Option<f32>) -> f32 {
    v.unwrap_or(f32::from_bits(NO_VALUE))
}

fn maybe_value(v: f32) -> Option<f32> {
    (v.to_bits() != NO_VALUE).then_some(v)
}

/// The ranking values of each held row, by row.
#[derive(Default)]
pub(super) struct Held {
    rows: Vec<Fields>,
    /// Each row's [`HELD_WITH_VECTORS`], while held (see [`Held::with_vectors`]); a row past
    /// its end does not hold them.
    with_vectors: Vec<WithVectors>,
    /// Whether new rows hold their [`HELD_WITH_VECTORS`].
    holds_with_vectors: bool,
    /// The emotions named, each once (a row naming one past the first 254 does not hold its
    /// columns held with the vectors).
    primaries: Vec<Box<str>>,
    /// Each row's entities, as indexes into `names`, one row after another.
    entity_of: Vec<u32>,
    /// Each entity name (as stored: keyed in an encrypted store) once.
    names: Vec<Box<str>>,
    name_index: std::collections::HashMap<Box<str>, u32>,
    /// The lineage of each row that is a later version (a first version's is its id), by
    /// row: few rows have one, and an `Option<Box<str>>` in every row's [`Fields`] took 16
    /// bytes of its 64 (16 MB at 1M memories).
    lineages: std::collections::HashMap<u32, Box<str>>,
    /// Bytes of the rows' lineages, kept as rows come and go so that counting the bytes
    /// held (status asks each time it is polled) does not walk every row.
    lineage_bytes: usize,
}

fn time(t: Option<i64>) -> i64 {
    t.unwrap_or(NO_TIME)
}

fn maybe(t: i64) -> Option<i64> {
    (t != NO_TIME).then_some(t)
}

impl Held {
    /// Held values whose rows hold their [`HELD_WITH_VECTORS`] too when `with_vectors`.
    pub fn with_vectors(with_vectors: bool) -> Self {
        Self {
            holds_with_vectors: with_vectors,
            ..Default::default()
        }
    }

    /// Whether rows' [`HELD_WITH_VECTORS`] are held.
    pub fn holds_with_vectors(&self) -> bool {
        self.holds_with_vectors
    }

    /// Lets every row's [`HELD_WITH_VECTORS`] go, and holds none from now.
    pub fn drop_with_vectors(&mut self) {
        self.holds_with_vectors = false;
        self.with_vectors = Vec::new();
    }

    pub fn reserve(&mut self, rows: usize) {
        self.rows.reserve_exact(rows);
        if self.holds_with_vectors {
            self.with_vectors.reserve_exact(rows);
        }
    }

    pub fn shrink_to_fit(&mut self) {
        self.rows.shrink_to_fit();
        self.with_vectors.shrink_to_fit();
        self.entity_of.shrink_to_fit();
        self.names.shrink_to_fit();
        self.lineages.shrink_to_fit();
    }

    /// The values of `record`, whose entities are stored as `entities`.
    /// `held` is where the row's entities lie now, if it is held: they are written over
    /// where they fit, so a row read again adds nothing.
    fn fields(
        &mut self,
        record: &MemoryRecord,
        entities: &[String],
        held: Option<(u32, u16)>,
    ) -> Fields {
        let entities = &entities[..entities.len().min(u16::MAX as usize)];
        let entities_at = match held {
            Some((at, len)) if entities.len() <= usize::from(len) => at,
            _ => {
                let at = self.entity_of.len();
                self.entity_of.resize(at + entities.len(), 0);
                at as u32
            }
        };
        for (slot, name) in entities.iter().enumerate() {
            self.entity_of[entities_at as usize + slot] = self.name_index_of(name);
        }
        Fields {
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

    /// The index of entity `name` in `names`, added if new.
    fn name_index_of(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.name_index.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.into());
        self.name_index.insert(name.into(), i);
        i
    }

    /// `record`'s [`HELD_WITH_VECTORS`] as held.
    fn with_vectors_of(&mut self, record: &MemoryRecord) -> WithVectors {
        let primary = match record.emotion_primary.as_deref() {
            None => 0,
            Some(name) => match self.primaries.iter().position(|p| **p == *name) {
                Some(i) => i as u8 + 1,
                None if self.primaries.len() < UNHELD as usize - 1 => {
                    self.primaries.push(name.into());
                    self.primaries.len() as u8
                }
                None => UNHELD,
            },
        };
        WithVectors {
            valid_from: record.valid_from,
            intensity: value(record.emotion_intensity),
            valence: value(record.emotion_valence),
            arousal: value(record.emotion_arousal),
            primary,
            kind: record.kind,
        }
    }

    /// Holds the values of a new row (the next index).
    pub fn push(&mut self, record: &MemoryRecord, entities: &[String]) {
        let fields = self.fields(record, entities, None);
        self.set_lineage(self.rows.len(), record);
        self.rows.push(fields);
        if self.holds_with_vectors {
            let values = self.with_vectors_of(record);
            self.with_vectors.push(values);
        }
    }

    /// Holds the values of a new version of row `i` (its old entities stay unused until the
    /// codes are read again).
    pub fn set(&mut self, i: usize, record: &MemoryRecord, entities: &[String]) {
        let held = (self.rows[i].entities_at, self.rows[i].entities_len);
        let fields = self.fields(record, entities, Some(held));
        self.set_lineage(i, record);
        self.rows[i] = fields;
        if i < self.with_vectors.len() {
            self.with_vectors[i] = self.with_vectors_of(record);
        }
    }

    /// Sets row `i`'s values a patch set in place (`nearest/patched.rs`).
    pub fn patch(&mut self, i: usize, values: &Patched) {
        let row = &mut self.rows[i];
        if let Some(salience) = values.salience {
            row.salience = salience;
        }
        if let Some(strength) = values.strength {
            row.strength = strength;
        }
        if let Some(faded) = values.faded {
            row.filled = row.filled.with("faded_at", faded);
        }
        if let Some(summarized) = values.summarized {
            row.filled = row.filled.with("summarized_by", summarized);
        }
    }

    /// Row `i`'s [`HELD_WITH_VECTORS`], where held.
    fn with_vectors_at(&self, i: usize) -> Option<&WithVectors> {
        self.with_vectors.get(i).filter(|a| a.primary != UNHELD)
    }

    /// Row `i`'s lineage, when it is not its id (a later version).
    pub fn lineage(&self, i: usize) -> Option<&str> {
        if self.lineages.is_empty() {
            return None;
        }
        self.lineages.get(&(i as u32)).map(|l| &**l)
    }

    /// Holds `record`'s lineage as row `i`'s, where it is not its id.
    fn set_lineage(&mut self, i: usize, record: &MemoryRecord) {
        let old = if record.lineage != record.id {
            let lineage = record.lineage.as_str().into();
            self.lineages.insert(i as u32, lineage)
        } else {
            self.lineages.remove(&(i as u32))
        };
        let new = self.lineage(i).map_or(0, str::len);
        self.lineage_bytes = self.lineage_bytes - old.map_or(0, |l| l.len()) + new;
    }

    /// Which of [`SPARSE_COLUMNS`] row `i` fills, and whether it holds its
    /// [`HELD_WITH_VECTORS`].
    pub fn filled(&self, i: usize) -> Filled {
        let Filled(bits) = self.rows[i].filled;
        Filled(match self.with_vectors_at(i) {
            Some(_) => bits,
            None => bits | UNHELD_WITH_VECTORS,
        })
    }

    /// Row `i` as a search answers with it: as ranking reads it ([`Held::record`]), with its
    /// [`HELD_WITH_VECTORS`] where held.
    pub fn answered(&self, i: usize, id: &str, namespace: &str) -> MemoryRecord {
        let mut record = self.record(i, id, namespace);
        if let Some(a) = self.with_vectors_at(i) {
            record.kind = a.kind;
            record.valid_from = a.valid_from;
            record.emotion_primary = a
                .primary
                .checked_sub(1)
                .map(|p| self.primaries[p as usize].to_string());
            record.emotion_intensity = maybe_value(a.intensity);
            record.emotion_valence = maybe_value(a.valence);
            record.emotion_arousal = maybe_value(a.arousal);
        }
        record
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
            lineage: self.lineage(i).unwrap_or(id).to_string(),
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

    /// Bytes allocated (by capacity), for the log and status.
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        let names: usize = self.names.iter().map(|n| 2 * (n.len() + 24)).sum();
        self.rows.capacity() * size_of::<Fields>()
            + self.with_vectors.capacity() * size_of::<WithVectors>()
            + self.lineages.capacity() * (size_of::<(u32, Box<str>)>() + 1)
            + self.lineage_bytes
            + self.entity_of.capacity() * 4
            + names
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
        let dense = ["id", "content", "metadata", "access_count"];
        for column in dense {
            assert!(plain.must_read(column), "{column} is always read");
        }
        // Held with the vectors: read only for a row that does not hold them.
        let unheld = plain.or(Filled(UNHELD_WITH_VECTORS));
        for column in HELD_WITH_VECTORS {
            assert!(
                !plain.must_read(column) && unheld.must_read(column),
                "{column}"
            );
        }
        assert!(plain.holds_with_vectors() && !unheld.holds_with_vectors());
        // Answers are read until the codes say a row holds them; the id always is.
        let answering = plain.with_answers();
        for column in HELD_ANSWERS {
            assert!(
                plain.must_read(column) && !answering.must_read(column),
                "{column}"
            );
        }
        assert!(answering.must_read("id") && answering.holds_answers());
        assert!(!plain.holds_answers() && !answering.or(plain).holds_answers());
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
        // The lineages' bytes follow the rows: "v1" of the second, none of a first version.
        assert_eq!(held.lineage_bytes, 2);
        assert_eq!((held.lineage(0), held.lineage(1)), (None, Some("v1")));
        held.set(1, &first, &first.entities);
        assert_eq!(held.lineage_bytes, 0);
        assert_eq!(held.lineage(1), None);
        assert_eq!(std::mem::size_of::<Fields>(), 48);
        let a = held.record(0, "a", "default");
        assert_eq!((a.lineage.as_str(), a.occurred_at), ("a", None));
        assert_eq!(a.entities, ["porto"]);

        // A new version of row 0 in place, with entities as stored.
        first.strength = 0.5;
        held.set(0, &first, &["#keyed".to_string()]);
        let a = held.record(0, "a", "default");
        assert_eq!((a.strength, a.entities), (0.5, vec!["#keyed".to_string()]));

        // Set again with as many entities or fewer, a row takes no more room.
        held.set(1, &r, &r.entities);
        let entity_slots = held.entity_of.len();
        held.set(1, &r, &r.entities);
        held.set(1, &r, &["porto".to_string()]);
        assert_eq!(held.entity_of.len(), entity_slots);
        assert_eq!(held.record(1, "v2", &r.namespace).entities, ["porto"]);
        assert_eq!(held.record(0, "a", "default").entities, ["#keyed"]);
        held.set(1, &r, &["maria".into(), "porto".into(), "lisbon".into()]);
        let back = held.record(1, "v2", &r.namespace).entities;
        assert_eq!(back, ["maria", "porto", "lisbon"]);
    }

    #[test]
    fn values_held_with_the_vectors_read_back_exactly_or_are_not_held() {
        let mut held = Held::with_vectors(true);
        let emotion = |i: usize| {
            let mut r = crate::store::schema::tests::record(&format!("r{i}"), "text", 4);
            r.emotion_primary = Some(format!("feeling {i}"));
            r.emotion_arousal = Some(f32::from_bits(0x7fc0_0001 + i as u32));
            r.valid_from = r.created_at + i as i64;
            r
        };
        let mut plain = crate::store::schema::tests::record("plain", "text", 4);
        plain.emotion_primary = None;
        (plain.emotion_intensity, plain.emotion_valence) = (None, Some(-1.0));
        held.push(&plain, &[]);
        // Past the first 254 emotions named, a row does not hold its values.
        for i in 1..300 {
            held.push(&emotion(i), &[]);
        }
        let back = held.answered(0, "plain", "default");
        assert_eq!(
            (
                back.emotion_primary,
                back.emotion_intensity,
                back.emotion_valence
            ),
            (None, None, Some(-1.0))
        );
        let back = held.answered(7, "r7", "default");
        let r7 = emotion(7);
        assert_eq!(
            (back.emotion_primary, back.valid_from, back.kind),
            (r7.emotion_primary, r7.valid_from, r7.kind)
        );
        assert_eq!(
            back.emotion_arousal.map(f32::to_bits),
            r7.emotion_arousal.map(f32::to_bits),
            "a NaN other than the one meaning None is held as it is"
        );
        assert!(held.filled(254).holds_with_vectors() && !held.filled(255).holds_with_vectors());
        assert_eq!(held.answered(255, "r255", "default").emotion_primary, None);
        held.drop_with_vectors();
        assert!(!held.filled(7).holds_with_vectors());
        assert_eq!(held.answered(7, "r7", "default").emotion_primary, None);
        held.push(&emotion(7), &[]);
        assert!(!held.filled(300).holds_with_vectors(), "none held after");
    }
}
