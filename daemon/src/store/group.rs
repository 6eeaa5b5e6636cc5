//! How the writer orders what it gathered in one interval into commits.
//!
//! Writes to different tables that arrive interleaved (one client's memories, another's
//! beliefs, a third's edges) would each take a commit of their own if committed in arrival
//! order. They are independent: a caller queues a write that depends on another only once
//! that one is committed. So a write may move up to join an earlier one of its sort, past
//! writes to other tables, but never past one to its own table (each table keeps its order)
//! nor past a barrier (index builds, optimizes, in-turn commits).

/// Where a queued job may move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach<'a> {
    /// A write that joins others of its sort; it touches only `table`.
    Joins { table: &'a str, sort: u8 },
    /// Anything else: nothing moves past it.
    Barrier,
}

/// `items` in runs: each run starts at the first item not yet taken and gathers the later
/// items of its sort that can move up to it. Within a table the order is kept.
pub fn runs<T>(items: Vec<T>, reach: impl Fn(&T) -> Reach<'_>) -> Vec<Vec<T>> {
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    let mut out = Vec::new();
    for i in 0..slots.len() {
        let Some(head) = slots[i].take() else {
            continue;
        };
        let (table, sort) = match reach(&head) {
            Reach::Joins { table, sort } => (table.to_string(), sort),
            Reach::Barrier => {
                out.push(vec![head]);
                continue;
            }
        };
        let mut run = vec![head];
        for slot in slots.iter_mut().skip(i + 1) {
            let Some(item) = slot.as_ref() else {
                continue;
            };
            match reach(item) {
                Reach::Joins { table: t, sort: s } if t == table && s == sort => {
                    run.extend(slot.take());
                }
                // Another sort on the same table: what follows may not pass it.
                Reach::Joins { table: t, .. } if t == table => break,
                Reach::Joins { .. } => {}
                Reach::Barrier => break,
            }
        }
        out.push(run);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reach<'a>(item: &'a (&'static str, u8)) -> Reach<'a> {
        match item {
            ("barrier", _) => Reach::Barrier,
            (table, sort) => Reach::Joins { table, sort: *sort },
        }
    }

    fn names(runs: Vec<Vec<(&'static str, u8)>>) -> Vec<String> {
        runs.into_iter()
            .map(|run| {
                run.iter()
                    .map(|(t, s)| format!("{t}{s}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    #[test]
    fn interleaved_tables_commit_once_each() {
        let items = vec![("m", 0), ("b", 0), ("m", 0), ("e", 0), ("b", 0), ("m", 0)];
        assert_eq!(names(runs(items, reach)), ["m0 m0 m0", "b0 b0", "e0"]);
    }

    #[test]
    fn a_table_keeps_its_order() {
        // An append, a merge, then an append again on one table: the last cannot move up
        // past the merge.
        let items = vec![("b", 0), ("b", 1), ("b", 0), ("m", 0)];
        assert_eq!(names(runs(items, reach)), ["b0", "b1", "b0", "m0"]);
    }

    #[test]
    fn nothing_moves_past_a_barrier() {
        let items = vec![("m", 0), ("barrier", 0), ("m", 0), ("b", 0)];
        assert_eq!(names(runs(items, reach)), ["m0", "barrier0", "m0", "b0"]);
    }

    #[test]
    fn other_tables_are_passed_but_stay_in_order() {
        let items = vec![("b", 0), ("m", 0), ("m", 1), ("b", 0), ("m", 0)];
        assert_eq!(names(runs(items, reach)), ["b0 b0", "m0", "m1", "m0"]);
    }
}
