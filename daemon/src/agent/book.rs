//! The episodes the triggered layer looks through, kept in memory and indexed by what a
//! lookup names — a target, a command's program, a word of a failed task — so a lookup is a
//! few hash probes, not a query. Loaded once at start (one pass over the episode columns),
//! grown by each record, read again after a forget.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use mnemo_protocol::agent::{Action, Outcome};

use super::episode::{program, Brief};
use crate::understand::sentences::content_words;

/// The index: every episode once, and postings into it.
#[derive(Default)]
pub struct Index {
    pub episodes: Vec<Arc<Brief>>,
    ids: std::collections::HashSet<String>,
    /// (namespace, target) → episodes naming it.
    by_target: HashMap<(String, String), Vec<usize>>,
    /// (namespace, program) → command episodes running it.
    by_program: HashMap<(String, String), Vec<usize>>,
    /// (namespace, word) → failed episodes whose task says it.
    failed_tasks: HashMap<(String, String), Vec<usize>>,
}

impl Index {
    pub fn build(briefs: Vec<Brief>) -> Self {
        let mut index = Index::default();
        for b in briefs {
            index.push(b);
        }
        index
    }

    /// Adds an episode (once: recording the same one again adds nothing).
    pub fn push(&mut self, b: Brief) {
        if !self.ids.insert(b.id.clone()) {
            return;
        }
        let i = self.episodes.len();
        for t in &b.targets {
            self.by_target
                .entry((b.namespace.clone(), t.clone()))
                .or_default()
                .push(i);
            if b.action == Action::Command {
                self.by_program
                    .entry((b.namespace.clone(), program(t)))
                    .or_default()
                    .push(i);
            }
        }
        if b.outcome != Outcome::Success {
            for w in task_words(b.task.as_deref()) {
                self.failed_tasks
                    .entry((b.namespace.clone(), w))
                    .or_default()
                    .push(i);
            }
        }
        self.episodes.push(Arc::new(b));
    }

    fn get(&self, postings: Option<&Vec<usize>>) -> Vec<&Brief> {
        postings
            .map(|p| p.iter().map(|&i| self.episodes[i].as_ref()).collect())
            .unwrap_or_default()
    }

    /// Episodes naming `target`, oldest first.
    pub fn on_target(&self, namespace: &str, target: &str) -> Vec<&Brief> {
        let mut found = self.get(self.by_target.get(&(namespace.into(), target.into())));
        found.sort_by_key(|b| b.at);
        found
    }

    /// Command episodes running `program`, oldest first.
    pub fn running(&self, namespace: &str, program: &str) -> Vec<&Brief> {
        let mut found = self.get(self.by_program.get(&(namespace.into(), program.into())));
        found.sort_by_key(|b| b.at);
        found
    }

    /// Failed episodes whose task shares words with `task`, with how many of the task's
    /// words each shares.
    pub fn failed_like(&self, namespace: &str, task: &str) -> Vec<(&Brief, usize)> {
        let mut shared: HashMap<usize, usize> = HashMap::new();
        for w in task_words(Some(task)) {
            for &i in self
                .failed_tasks
                .get(&(namespace.to_string(), w))
                .into_iter()
                .flatten()
            {
                *shared.entry(i).or_default() += 1;
            }
        }
        shared
            .into_iter()
            .map(|(i, n)| (self.episodes[i].as_ref(), n))
            .collect()
    }

    /// The episodes of `namespace` (all when none).
    pub fn of(&self, namespace: Option<&str>) -> Vec<Arc<Brief>> {
        self.episodes
            .iter()
            .filter(|b| namespace.is_none_or(|n| b.namespace == n))
            .cloned()
            .collect()
    }
}

/// The distinct content words of a task.
pub fn task_words(task: Option<&str>) -> Vec<String> {
    let mut words = task.map(content_words).unwrap_or_default();
    words.sort();
    words.dedup();
    words
}

/// The index behind a lock: lookups share it, a record or a reload takes it briefly.
#[derive(Default)]
pub struct Book {
    index: RwLock<Index>,
}

impl Book {
    pub fn read(&self) -> std::sync::RwLockReadGuard<'_, Index> {
        self.index.read().unwrap_or_else(|p| p.into_inner())
    }

    pub fn push(&self, b: Brief) {
        self.index
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(b);
    }

    pub fn replace(&self, index: Index) {
        *self.index.write().unwrap_or_else(|p| p.into_inner()) = index;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn brief(id: &str, action: Action, target: &str, outcome: Outcome, at: i64) -> Brief {
        Brief {
            id: id.into(),
            namespace: "default".into(),
            at,
            action,
            targets: vec![target.into()],
            outcome,
            error: None,
            duration_ms: None,
            actor: None,
            cwd: None,
            branch: None,
            task: None,
            note: None,
            project_id: None,
            session_id: None,
        }
    }

    #[test]
    fn lookups_find_by_target_program_and_task_words() {
        let mut failed = brief(
            "c",
            Action::Command,
            "cargo test --all",
            Outcome::Failure,
            3,
        );
        failed.task = Some("upgrade the parser crate".into());
        let index = Index::build(vec![
            brief("b", Action::Edit, "/r/a.py", Outcome::Success, 2),
            brief("a", Action::Edit, "/r/a.py", Outcome::Failure, 1),
            failed,
        ]);
        let ids: Vec<&str> = index
            .on_target("default", "/r/a.py")
            .iter()
            .map(|b| b.id.as_str())
            .collect();
        assert_eq!(ids, ["a", "b"], "oldest first");
        assert_eq!(index.running("default", "cargo test").len(), 1);
        assert!(index.on_target("other", "/r/a.py").is_empty());
        let like = index.failed_like("default", "parser upgrade for the new crate");
        assert_eq!(like.len(), 1);
        assert_eq!(like[0].1, 3, "parser, upgrade, crate");
    }
}
