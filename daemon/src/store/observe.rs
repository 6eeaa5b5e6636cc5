//! What the store tells of each commit to whatever holds something derived from its tables
//! (the search index over current memories, `crate::held`). The writer and the builds that
//! move rows call the observer; the store never calls into what is derived from it.

use std::sync::{Arc, OnceLock, Weak};

use lance::Dataset;

use super::beside::Moved;
use super::edges::EdgeRecord;
use super::op::WriteOp;
use super::schema::MemoryRecord;

/// Told of every commit that changes the memories or their edges, in commit order, from the
/// writer's task (each call holds writes meanwhile, so it is brief and never blocks).
pub trait CommitObserver: Send + Sync {
    /// Memories appended, or replaced by id, as committed.
    fn memories_written(&self, rows: &[MemoryRecord]);

    /// `op`, a patch, delete or update of existing memories, is about to commit (`closes`:
    /// the ids it closes, when closing them is all it does). What to do once it has, if
    /// anything; nothing is done when the commit fails.
    fn memories_altering(&self, op: &WriteOp, closes: Option<&[String]>) -> Option<AfterCommit>;

    /// Rows a rewrite (compaction, fragment merge) moved, told before it commits.
    fn memories_moved(&self, moves: Vec<Moved>);

    /// Edges appended or merged, as committed.
    fn edges_written(&self, edges: &[EdgeRecord]);

    /// Edges deleted by a condition: which ones is Lance's to say.
    fn edges_deleted(&self);
}

/// Called once an alteration has committed: with the memories' versions before and after it
/// when `wants_versions` (and both could be read), so the observer can take the fragments the
/// commit touched as it knows them.
pub struct AfterCommit {
    pub wants_versions: bool,
    #[allow(clippy::type_complexity)]
    pub then: Box<dyn FnOnce(Option<(&Dataset, &Dataset)>) + Send>,
}

/// The observer a store tells, once one is registered (a store opened by a tool or a test
/// may have none). Held weakly: the observer owns the store, not the other way round.
#[derive(Clone, Default)]
pub(crate) struct Observers(Arc<OnceLock<Weak<dyn CommitObserver>>>);

impl Observers {
    /// Registers `observer`; false when one was registered already.
    pub fn register(&self, observer: Weak<dyn CommitObserver>) -> bool {
        self.0.set(observer).is_ok()
    }

    /// The observer, while it lives.
    pub fn get(&self) -> Option<Arc<dyn CommitObserver>> {
        self.0.get().and_then(Weak::upgrade)
    }
}
