//! What a write asks of the writer: one commit's worth of change to one table.

use lancedb::arrow::arrow_array::{Array, RecordBatch, StringArray};
use lancedb::Table;

use super::filter::current;
use super::group::Reach;
use super::schema::MemoryRecord;
use super::sql::{Expr, Pred};

pub enum WriteOp {
    /// New rows, appended.
    Insert(Vec<MemoryRecord>),
    /// Rows replaced by id or added (summaries rewritten after a crash).
    Upsert(Vec<MemoryRecord>),
    /// Closes `old` (already marked closed) and adds `new`, only if `old` is still current:
    /// two updates of the same version cannot both win; the later gets `Conflict`.
    Supersede {
        old: Box<MemoryRecord>,
        new: Box<MemoryRecord>,
    },
    /// Deletes the memories `predicate` matches; answers the number of rows deleted.
    Delete(Pred),
    /// Some columns of existing memories, keyed by `id` (a partial-schema merge: the other
    /// columns, vectors included, are left as they are). Rows matching no id, or failing
    /// `only_if` (over [`Expr::Target`] and [`Expr::Source`] columns), are left alone.
    /// Answers rows updated.
    Patch {
        batch: RecordBatch,
        only_if: Option<Pred>,
    },
    /// Folds new rows into the memories' indexes, between commits: the last try of a fold
    /// whose commits writes kept voiding (`Store::fold_beside`).
    FoldIndexes,
    /// Builds the memories' full-text index (the writer also builds it after the first rows).
    BuildTextIndex,
    /// Builds the scalar indexes of the memories that are missing (fast: a column each).
    BuildScalarIndexes,
    /// Sets `columns` (name, expression over the old row) where `predicate` holds; answers
    /// the number of rows updated. Bookkeeping only: content changes are versions.
    Update {
        predicate: Pred,
        columns: Vec<(&'static str, Expr)>,
    },
    /// Rows for another table; consecutive appends to one table commit together.
    Append { table: Table, batch: RecordBatch },
    /// Rows replacing those with the same `on` key in another table, or added.
    Merge {
        table: Table,
        on: &'static str,
        batch: RecordBatch,
    },
    /// Deletes from another table.
    DeleteWhere { table: Table, predicate: Pred },
    /// Encrypts plain rows with the store's keys, a chunk at a time so other writes go
    /// between; answers rows sealed. With `finish`, seals every plain row left, turns sealing
    /// on (later writes are sealed) and moves the full-text index to the hashed terms.
    Seal { finish: bool },
}

impl WriteOp {
    /// What the op does, for the log.
    pub(super) fn name(&self) -> &'static str {
        match self {
            WriteOp::Insert(_) => "adding memories",
            WriteOp::Upsert(_) => "replacing memories",
            WriteOp::Supersede { .. } => "a new version",
            WriteOp::Delete(_) => "deleting memories",
            WriteOp::Patch { .. } => "patching memories",
            WriteOp::FoldIndexes => "folding into indexes",
            WriteOp::BuildTextIndex => "building the full-text index",
            WriteOp::BuildScalarIndexes => "building scalar indexes",
            WriteOp::Update { .. } => "updating memories",
            WriteOp::Append { .. } => "appending",
            WriteOp::Merge { .. } => "merging rows",
            WriteOp::DeleteWhere { .. } => "deleting rows",
            WriteOp::Seal { .. } => "sealing",
        }
    }

    pub(super) fn rows(&self) -> usize {
        match self {
            WriteOp::Insert(r) | WriteOp::Upsert(r) => r.len(),
            WriteOp::Supersede { .. } => 2,
            WriteOp::Append { batch, .. } | WriteOp::Merge { batch, .. } => batch.num_rows(),
            WriteOp::Patch { batch, .. } => batch.num_rows(),
            WriteOp::Delete(_)
            | WriteOp::DeleteWhere { .. }
            | WriteOp::Update { .. }
            | WriteOp::FoldIndexes
            | WriteOp::BuildTextIndex
            | WriteOp::BuildScalarIndexes
            | WriteOp::Seal { .. } => 1,
        }
    }
    pub(super) fn table_name(&self) -> Option<&str> {
        match self {
            WriteOp::Append { table, .. }
            | WriteOp::Merge { table, .. }
            | WriteOp::DeleteWhere { table, .. } => Some(table.name()),
            _ => None,
        }
    }
    /// Appends of one sort to one table commit together, and so do merges into one table
    /// (the same key column: a table has one); anything else commits on its own, in order.
    pub(super) fn reach(&self) -> Reach<'_> {
        match self {
            WriteOp::Insert(_) => Reach::Joins {
                table: super::tables::MEMORIES,
                sort: 0,
            },
            WriteOp::Upsert(_) => Reach::Joins {
                table: super::tables::MEMORIES,
                sort: 1,
            },
            WriteOp::Append { table, .. } => Reach::Joins {
                table: table.name(),
                sort: 2,
            },
            WriteOp::Merge { table, .. } => Reach::Joins {
                table: table.name(),
                sort: 3,
            },
            _ => Reach::Barrier,
        }
    }

    /// Whether the op can change which memories are current (and so the counts). Supersede
    /// keeps its own count; bookkeeping updates of other columns change nothing.
    pub(crate) fn changes_counts(&self) -> bool {
        matches!(self, WriteOp::Delete(_)) || self.patches("valid_to")
    }

    /// Whether the op changes memories already stored (rather than adding rows).
    pub(super) fn alters_memories(&self) -> bool {
        matches!(
            self,
            WriteOp::Delete(_) | WriteOp::Patch { .. } | WriteOp::Update { .. }
        )
    }

    /// The ids a patch closes, when closing them is all it does to the counts: it sets
    /// `valid_to` of each, on the condition that the row is current.
    pub(crate) fn closes(&self) -> Option<Vec<&str>> {
        let WriteOp::Patch { batch, only_if } = self else {
            return None;
        };
        if only_if.as_ref() != Some(&current().on_target()) {
            return None;
        }
        let valid_to = batch.column_by_name("valid_to")?;
        if valid_to.null_count() != 0 {
            return None;
        }
        // Past that many ids, one scan of the counted columns is cheaper than the list.
        if batch.num_rows() > 16_384 {
            return None;
        }
        let ids = batch.column_by_name("id")?;
        let ids = ids.as_any().downcast_ref::<StringArray>()?;
        Some(ids.iter().flatten().collect())
    }

    /// Whether the op sets `column` of existing memories. A patch carries each column its
    /// condition reads (Lance sees only the patch's columns): one it writes all null while
    /// its condition reads it is carried for the condition (`current()` admits only rows
    /// where it is null already), not set. Taken as set, every decay patch at 1M memories
    /// counted the memories again and dropped the codes held for searches.
    pub(crate) fn patches(&self, column: &str) -> bool {
        match self {
            WriteOp::Patch { batch, only_if } => {
                batch.column_by_name(column).is_some_and(|values| {
                    let for_condition = values.null_count() == values.len()
                        && only_if
                            .as_ref()
                            .is_some_and(|p| p.target_columns().contains(&column));
                    !for_condition
                })
            }
            WriteOp::Update { columns, .. } => columns.iter().any(|(c, _)| *c == column),
            _ => false,
        }
    }
}
