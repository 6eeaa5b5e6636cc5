//! Rows a compaction moved, held at their new row ids. A compaction's merge rewrites its
//! fragments' rows into new ones and changes none of their values, so where the codes had
//! read every fragment it merged as it was, its rows are held where they went and its new
//! fragments are taken as read. The storage phase's compaction at 1M memories rewrote most
//! of the table, and the codes were read whole again: 9.75 s of a core, with the old codes
//! held for searches meanwhile (RSS 1.33 GB at its top).

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use super::codes::Codes;
use super::{Meanwhile, Nearest};
use crate::store::beside::Moved;

impl Nearest {
    /// Holds the rows `moves` moved (a compaction just committed) at their new row ids. A
    /// read of the codes under way takes them when it ends, from the fragments it read.
    pub fn moved(&self, moves: Vec<Moved>) {
        if moves.is_empty() {
            return;
        }
        let mut guard = self.codes.write().unwrap_or_else(|e| e.into_inner());
        if self.reading.load(Ordering::Acquire) {
            let mut meanwhile = self.meanwhile.lock().unwrap_or_else(|e| e.into_inner());
            meanwhile.push(Meanwhile::Moved(moves));
            return;
        }
        if let Some(codes) = guard.as_mut() {
            self.take_moves(codes, &moves);
        }
    }

    /// Moves the rows of `codes` in each merge of `moves` whose fragments they were read
    /// from as the merge found them, and takes its new fragments as read in their place.
    /// Another merge's fragments are read as any changed are.
    pub(super) fn take_moves(&self, codes: &mut Codes, moves: &[Moved]) {
        let mut read_from = self.read_from.lock().unwrap_or_else(|e| e.into_inner());
        let taken: Vec<&Moved> = moves
            .iter()
            .filter(|m| m.merged.iter().all(|f| read_from.get(&f.id) == Some(f)))
            .collect();
        if taken.is_empty() {
            return;
        }
        let by_fragment: HashMap<u64, &Moved> = taken
            .iter()
            .flat_map(|m| m.merged.iter().map(move |f| (f.id, *m)))
            .collect();
        let started = std::time::Instant::now();
        let moved =
            codes.move_rows(|row_id| Some(by_fragment.get(&(row_id >> 32))?.row_id_now(row_id)));
        tracing::debug!(
            "codes moved with a compaction: {moved} rows in {:.2} s",
            started.elapsed().as_secs_f64()
        );
        for m in taken {
            m.merged.iter().for_each(|f| drop(read_from.remove(&f.id)));
            read_from.extend(m.written.iter().map(|f| (f.id, f.clone())));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::refresh::tests::{held_rows, read_whole_at, sorted, to_read};
    use super::super::tests::{next_version, row};
    use crate::held::Held;
    use crate::store::WriteOp;

    /// A store of small fragments, one a closed row left a deletion in, its codes read.
    async fn small_fragments(dir: &std::path::Path) -> std::sync::Arc<Held> {
        let held = crate::held::tests::held_store(dir).await;
        let store = held.store();
        let writer = store.writer();
        for (i, id) in ["a", "b", "c", "d"].iter().enumerate() {
            writer
                .submit(WriteOp::Insert(vec![row(id, i)]))
                .await
                .unwrap();
        }
        // Lance keeps the addresses of the rows a compaction reads only to move an index's.
        writer.submit(WriteOp::BuildScalarIndexes).await.unwrap();
        writer
            .submit(next_version(&row("c", 2), row("c2", 2)))
            .await
            .unwrap();
        held
    }

    /// After a compaction merges every fragment, the codes hold each row where it went and
    /// read nothing again, as a whole read would hold them.
    #[tokio::test]
    async fn rows_a_compaction_moved_are_held_where_they_went() {
        let dir = tempfile::tempdir().unwrap();
        let held = small_fragments(dir.path()).await;
        let store = held.store();
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(4));
        let before = sorted(store).await;
        assert_eq!(held_rows(&held).0, before);

        assert!(store.compact(store.memories_table()).await.unwrap() > 1);
        let after = sorted(store).await;
        assert_ne!(before, after, "the compaction moved rows");
        assert_eq!(held_rows(&held).0, after);
        assert_eq!(to_read(&held).await, Some((0, 0)), "nothing to read again");
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(4));
        assert_eq!(held_rows(&held).0, after);

        held.nearest.invalidate();
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(4));
        assert_eq!(held_rows(&held), (after, 0), "read whole");
    }

    /// A compaction while the codes are read whole, from the table before it: the read
    /// ends with the rows where the compaction moved them.
    #[tokio::test]
    async fn a_read_under_way_ends_with_the_rows_moved() {
        let dir = tempfile::tempdir().unwrap();
        let held = small_fragments(dir.path()).await;
        let store = held.store();
        let begun = held.nearest.begin_read();
        let dataset = store.snapshot().await.unwrap();
        store.compact(store.memories_table()).await.unwrap();
        read_whole_at(&held, &dataset, begun).await;
        assert_eq!(held_rows(&held).0, sorted(store).await);
        assert_eq!(to_read(&held).await, Some((0, 0)));
    }
}
