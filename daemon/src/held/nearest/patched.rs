//! Writes whose whole change to the rows held the codes take as it commits. Dedup's merges
//! close rows by id and lift their survivors' salience and accesses; decay sets strengths.
//! Each patches a few columns of rows all over the table, and the next maintenance pass read
//! again every fragment such a patch had touched: at 1M memories, a whole read (~12 s of a
//! core) every pass of a first consolidation. Now rows closed by id leave the codes as they
//! are closed (`retired`), the values of [`SET_IN_PLACE`] a patch of current rows sets are set
//! in them here, and the fragments such a write touched are then taken as read. The access
//! fold's patch, of any row whose last access is older, is taken the same way: the codes
//! hold the last access of each row whose accesses they hold, and check it as Lance does.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use lance::table::format::Fragment;
use lance::Dataset;
use lancedb::arrow::arrow_array::{
    Array, ArrayRef, Float32Array, Int64Array, RecordBatch, StringArray,
};

use super::codes::Codes;
use super::{Meanwhile, Nearest};
use crate::held::ranking::{Patched, SET_IN_PLACE};
use crate::store::filter::{current, unfolded_accesses};
use crate::store::WriteOp;

/// The values a patch by id of current rows sets in held columns, all of [`SET_IN_PLACE`];
/// or the access fold's patch.
#[derive(Clone)]
pub struct HeldPatch {
    ids: StringArray,
    salience: Option<Float32Array>,
    strength: Option<Float32Array>,
    faded_at: Option<Int64Array>,
    summarized_by: Option<StringArray>,
    access_count: Option<Int64Array>,
    /// The access fold's: set with the count where a row's last access is older.
    last_accessed_at: Option<Int64Array>,
}

/// `column` as an array of `T`: Some(None) when there is none, None when it is of another
/// type or holds a null (a value the codes could not hold).
fn typed<T: Array + Clone + 'static>(column: Option<&ArrayRef>) -> Option<Option<T>> {
    match column {
        None => Some(None),
        Some(c) if c.null_count() > 0 => None,
        Some(c) => c.as_any().downcast_ref::<T>().cloned().map(Some),
    }
}

impl HeldPatch {
    /// What `op`, a patch of current rows or the access fold's, sets in held columns, when
    /// the codes can set all of it in place.
    pub fn of_op(op: &WriteOp) -> Option<Self> {
        let WriteOp::Patch {
            batch,
            only_if: Some(only_if),
        } = op
        else {
            return None;
        };
        if *only_if == current().on_target() {
            Self::of(batch, |c| op.patches(c))
        } else if *only_if == unfolded_accesses().on_target() {
            Self::access_fold(batch)
        } else {
            None
        }
    }

    /// What `batch`, a patch by id of current rows, sets in held columns; None when it sets
    /// any column but those of [`SET_IN_PLACE`] (its id aside). `sets` says whether it sets
    /// a column, rather than carrying it for its condition.
    pub fn of(batch: &RecordBatch, sets: impl Fn(&str) -> bool) -> Option<Self> {
        let schema = batch.schema();
        let others = schema.fields().iter().map(|f| f.name().as_str());
        if others
            .filter(|c| *c != "id" && sets(c))
            .any(|c| !SET_IN_PLACE.contains(&c))
        {
            return None;
        }
        let set = |c: &str| batch.column_by_name(c).filter(|_| sets(c));
        // A null unfades a row (or leaves it unsummarised): only whether each is set is
        // held.
        let faded_at = match set("faded_at") {
            Some(c) => Some(c.as_any().downcast_ref::<Int64Array>()?.clone()),
            None => None,
        };
        let summarized_by = match set("summarized_by") {
            Some(c) => Some(c.as_any().downcast_ref::<StringArray>()?.clone()),
            None => None,
        };
        Some(Self {
            ids: typed(batch.column_by_name("id"))??,
            salience: typed(set("salience"))?,
            strength: typed(set("strength"))?,
            faded_at,
            summarized_by,
            access_count: typed(set("access_count"))?,
            last_accessed_at: None,
        })
    }

    /// What `batch`, the access fold's patch by id under `filter::unfolded_accesses`, sets:
    /// the access count and last access of each row whose last access is older. None unless
    /// it sets those two alone, without nulls.
    pub fn access_fold(batch: &RecordBatch) -> Option<Self> {
        if batch.num_columns() != 3 {
            return None;
        }
        let column = |c: &str| batch.column_by_name(c);
        Some(Self {
            ids: typed(column("id"))??,
            access_count: Some(typed(column("access_count"))??),
            last_accessed_at: Some(typed(column("last_accessed_at"))??),
            salience: None,
            strength: None,
            faded_at: None,
            summarized_by: None,
        })
    }

    /// What the patch sets of its `k`th row.
    fn values(&self, k: usize) -> Patched {
        Patched {
            salience: self.salience.as_ref().map(|a| a.value(k)),
            strength: self.strength.as_ref().map(|a| a.value(k)),
            faded: self.faded_at.as_ref().map(|a| a.is_valid(k)),
            summarized: self.summarized_by.as_ref().map(|a| a.is_valid(k)),
            access_count: self.access_count.as_ref().map(|a| a.value(k)),
            last_accessed_at: self.last_accessed_at.as_ref().map(|a| a.value(k)),
        }
    }
}

impl HeldPatch {
    /// Sets in `codes` the values the patch set of each row they hold.
    pub(super) fn set_in(&self, codes: &mut Codes) {
        for (k, id) in self.ids.iter().enumerate() {
            if let Some(i) = id.and_then(|id| codes.index_of(id)) {
                codes.patch(i, &self.values(k));
            }
        }
    }
}

impl Nearest {
    /// Sets in the rows held what `patch`, just committed, set. A read of the codes under
    /// way may have met the rows before the patch: it sets them again when it ends.
    pub fn patched(&self, patch: &HeldPatch) {
        let mut guard = self.codes.write().unwrap_or_else(|e| e.into_inner());
        if let Some(codes) = guard.as_mut() {
            patch.set_in(codes);
        }
        if self.reading.load(Ordering::Acquire) {
            let mut meanwhile = self.meanwhile.lock().unwrap_or_else(|e| e.into_inner());
            meanwhile.push(Meanwhile::Patched(Box::new(patch.clone())));
        }
    }

    /// Takes the fragments one commit changed (`before` it and `after`) as read, where the
    /// codes had read them as they were before it: for a commit whose whole change to the
    /// rows held is in the codes already (rows closed by id, values set in place). A read
    /// under way takes them when it ends, from the fragments it read.
    pub fn take_as_read(&self, before: &Dataset, after: &Dataset) {
        let (was, now) = (before.version().version, after.version().version);
        if now != was + 1 {
            return;
        }
        let old: HashMap<u64, &Fragment> = before.fragments().iter().map(|f| (f.id, f)).collect();
        let changed: Vec<(Fragment, Fragment)> = after
            .fragments()
            .iter()
            .filter_map(|f| Some(((*old.get(&f.id)?).clone(), f.clone())))
            .filter(|(old, new)| old != new)
            .collect();
        // Under the codes' lock, which a read holds as it ends.
        let _codes = self.codes.read().unwrap_or_else(|e| e.into_inner());
        if self.reading.load(Ordering::Acquire) {
            let mut meanwhile = self.meanwhile.lock().unwrap_or_else(|e| e.into_inner());
            meanwhile.push(Meanwhile::Taken(changed));
            return;
        }
        if self.take_fragments(&changed) {
            // Read at the version before, and all it changed taken: as a read after it.
            let _ = self
                .read_at
                .compare_exchange(was, now, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// Takes each fragment of `changed` (before and after a commit) as read where it was
    /// read as it was before: true when every one was.
    pub(super) fn take_fragments(&self, changed: &[(Fragment, Fragment)]) -> bool {
        let mut read_from = self.read_from.lock().unwrap_or_else(|e| e.into_inner());
        let mut all = true;
        for (old, new) in changed {
            if read_from.get(&old.id) == Some(old) {
                read_from.insert(new.id, new.clone());
            } else {
                all = false;
            }
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use lancedb::arrow::arrow_array::{ArrayRef, Float32Array, Int64Array, StringArray};

    use super::*;
    use crate::store::schema::{memories_schema, patch_batch};

    fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
        let ids: ArrayRef = Arc::new(StringArray::from(vec!["a", "b"]));
        let mut all = vec![("id", ids)];
        all.extend(columns);
        patch_batch(&memories_schema(4), all).unwrap()
    }

    /// Every column set counts; one carried for the condition does not.
    fn sets_all_but_valid_to(column: &str) -> bool {
        column != "valid_to"
    }

    #[test]
    fn a_patch_is_set_in_place_only_when_the_codes_can_hold_all_it_sets() {
        let strengths: ArrayRef = Arc::new(Float32Array::from(vec![0.25, 0.5]));
        let faded: ArrayRef = Arc::new(Int64Array::from(vec![Some(3), None]));
        let open: ArrayRef = Arc::new(Int64Array::from(vec![None::<i64>, None]));
        let summary: ArrayRef = Arc::new(StringArray::from(vec![Some("s"), None]));
        let decay = batch(vec![
            ("strength", strengths.clone()),
            ("faded_at", faded),
            ("summarized_by", summary),
            ("valid_to", open),
        ]);
        let patch = HeldPatch::of(&decay, sets_all_but_valid_to).unwrap();
        let first = Patched {
            strength: Some(0.25),
            faded: Some(true),
            summarized: Some(true),
            ..Default::default()
        };
        assert_eq!(patch.values(0), first);
        assert_eq!(patch.values(1).faded, Some(false), "a null unfades");
        assert_eq!(patch.values(1).summarized, Some(false));

        // A column held that is not set in place, a null where a value must be held, a
        // value of another type: the values held go stale instead.
        let valence: ArrayRef = Arc::new(Float32Array::from(vec![0.5, 0.5]));
        let with_valence = batch(vec![("strength", strengths), ("emotion_valence", valence)]);
        assert!(HeldPatch::of(&with_valence, sets_all_but_valid_to).is_none());
        let loose = |column: ArrayRef| {
            let ids: ArrayRef = Arc::new(StringArray::from(vec!["a", "b"]));
            RecordBatch::try_from_iter(vec![("id", ids), ("salience", column)]).unwrap()
        };
        let no_salience = Arc::new(Float32Array::from(vec![Some(1.0), None]));
        assert!(HeldPatch::of(&loose(no_salience), sets_all_but_valid_to).is_none());
        let accesses = Arc::new(Int64Array::from(vec![4, 5]));
        assert!(HeldPatch::of(&loose(accesses), sets_all_but_valid_to).is_none());
        let saliences = Arc::new(Float32Array::from(vec![4.0, 5.0]));
        assert!(HeldPatch::of(&loose(saliences), sets_all_but_valid_to).is_some());
    }

    /// The access fold's patch leaves no fragment to read: the codes set each count where
    /// the row's last access is older, as Lance does, and answer as after a whole read.
    #[tokio::test]
    async fn the_access_folds_patch_is_taken_as_it_commits() {
        use super::super::tests::{nearest_wanted, row};
        use crate::store::filter::current;
        use crate::store::WriteOp;
        let dir = tempfile::tempdir().unwrap();
        let held = crate::held::tests::held_store(dir.path()).await;
        let store = held.store();
        let writer = store.writer();
        let rows: Vec<_> = ["a", "b", "c"]
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let mut r = row(id, i);
                // As the store writes them, so the answered columns are held too.
                r.content_hash = crate::store::schema::content_hash(&r.content);
                r.set_salience_factors(None);
                (r.access_count, r.last_accessed_at) = (1, Some(100));
                r
            })
            .collect();
        writer.submit(WriteOp::Insert(rows)).await.unwrap();
        // With an index on the id, Lance patches columns in place, as maintenance leaves it.
        writer.submit(WriteOp::BuildScalarIndexes).await.unwrap();
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(3));
        let to_read = || async {
            let dataset = store.snapshot().await.unwrap();
            held.nearest.to_read(&dataset, true)
        };
        let accesses = || async {
            let wanted = nearest_wanted(&held, 0, 3).await;
            let answered = held.complete(&wanted).await.unwrap();
            let mut counts: Vec<_> = answered
                .values()
                .map(|r| (r.id.clone(), r.access_count, r.last_accessed_at))
                .collect();
            counts.sort();
            counts
        };

        // a takes accesses up to 200; b has taken those up to 100 already (a fold again
        // after a crash), so its count stays.
        let fold = store
            .accesses_patch(&[("a", 4, 200), ("b", 9, 100)])
            .unwrap();
        assert_eq!(writer.submit(fold).await.unwrap(), 1);
        assert!(held.nearest.holds_ranking());
        assert_eq!(to_read().await, Some((0, 0)));
        let in_place = accesses().await;
        let wanted = [
            ("a".to_string(), 4, Some(200)),
            ("b".to_string(), 1, Some(100)),
            ("c".to_string(), 1, Some(100)),
        ];
        assert_eq!(in_place, wanted);
        let stored = store
            .columns_of(&current(), &["id", "access_count", "last_accessed_at"])
            .await
            .unwrap();
        let mut stored: Vec<_> = stored
            .into_iter()
            .map(|r| (r.id, r.access_count, r.last_accessed_at))
            .collect();
        stored.sort();
        assert_eq!(stored, wanted, "as Lance has them");
        held.nearest.invalidate();
        assert_eq!(held.refresh_nearest().await.unwrap(), Some(3));
        assert_eq!(accesses().await, in_place);
    }
}
