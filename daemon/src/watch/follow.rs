//! One watched folder's follower: the first scan (which steps aside for requests), then
//! file events, debounced, taken in as the paragraphs that changed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mnemo_protocol::daemon::WatchedFolder;
use mnemo_protocol::memory::{AddParams, ForgetParams, UpdateParams, MAX_BATCH_ITEMS};
use mnemo_protocol::time::{format_micros, now_micros};
use notify::Watcher as _;
use tokio::sync::{mpsc, watch};

use super::folder::Folder;
use super::plan::{self, Owned, Paragraph};
use crate::config::WatchConfig;
use crate::error::Error;
use crate::ingest::Ingest;
use crate::shutdown::Shutdown;
use crate::store::filter::current;
use crate::store::{col, MemoryRecord, Store, StoreError};

/// A first scan's next note waits until this long after the last request.
const QUIET: Duration = Duration::from_millis(200);
/// New notes are added together once they hold this many paragraphs: a few commits for a
/// folder instead of one per note, and still a short hold on the embedder.
const FRESH_BATCH: usize = 64;
/// How often a folder that does not exist (yet), or that is away, is looked for again.
const RETRY: Duration = Duration::from_secs(10);

/// `why` the folder is not followed, and that it is looked for again.
fn looked_for_again(why: String) -> String {
    format!("{why}; looked for again every {} s", RETRY.as_secs())
}

/// Why following stopped.
enum Stop {
    Shutdown,
    Failed(String),
    /// The folder is away (deleted, or its drive not mounted): following pauses, and
    /// nothing it holds is forgotten until it is back.
    Away(String),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        match e {
            Error::Store(StoreError::Closed) => Stop::Shutdown,
            other => Stop::Failed(other.to_string()),
        }
    }
}

impl From<StoreError> for Stop {
    fn from(e: StoreError) -> Self {
        Error::Store(e).into()
    }
}

pub struct Follower {
    config: WatchConfig,
    ingest: Arc<Ingest>,
    store: Arc<Store>,
    status: Arc<Mutex<WatchedFolder>>,
    activity: watch::Receiver<Option<Instant>>,
    shutdown: Shutdown,
    /// The current memories of each note, by the path their source names.
    notes: BTreeMap<PathBuf, Vec<Owned>>,
    /// The notes there are now (some hold no paragraph).
    files: BTreeSet<PathBuf>,
    /// Notes never seen before, waiting to be added together.
    fresh: Vec<(PathBuf, Vec<AddParams>)>,
}

fn heading_of(item: &AddParams) -> String {
    item.metadata
        .as_ref()
        .and_then(|m| m["heading"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The update that makes a memory say what `item` says (its text too when `content`).
fn restate(id: &str, item: &AddParams, content: bool) -> UpdateParams {
    UpdateParams {
        id: id.to_string(),
        content: content.then(|| item.content.clone()),
        occurred_at: item.occurred_at.clone(),
        tags: Some(item.tags.clone()),
        metadata: item.metadata.clone(),
        ..Default::default()
    }
}

fn owned(record: &MemoryRecord, item: &AddParams) -> Owned {
    Owned {
        id: record.id.clone(),
        hash: record.content_hash.clone(),
        heading: heading_of(item),
        path: record
            .source
            .as_deref()
            .and_then(|s| s.strip_prefix("file:"))
            .unwrap_or_default()
            .to_string(),
    }
}

/// The memories `records` (one per item) made for a note's own paragraphs, each once: text
/// stored already from elsewhere stays that memory's, not the note's.
fn ours(records: &[Option<MemoryRecord>], items: &[AddParams]) -> Vec<Owned> {
    let mut now: Vec<Owned> = Vec::new();
    for (record, item) in records.iter().zip(items) {
        let Some(record) = record else {
            continue;
        };
        if record.source == item.source && !now.iter().any(|m| m.id == record.id) {
            now.push(owned(record, item));
        }
    }
    now
}

/// Whether an event only says a file was read (ours, too): nothing to take in.
fn is_read(kind: &notify::EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode};
    matches!(kind, notify::EventKind::Access(a) if *a != AccessKind::Close(AccessMode::Write))
}

impl Follower {
    pub fn new(
        config: WatchConfig,
        ingest: Arc<Ingest>,
        store: Arc<Store>,
        status: Arc<Mutex<WatchedFolder>>,
        activity: watch::Receiver<Option<Instant>>,
        shutdown: Shutdown,
    ) -> Self {
        Self {
            config,
            ingest,
            store,
            status,
            activity,
            shutdown,
            notes: BTreeMap::new(),
            files: BTreeSet::new(),
            fresh: Vec::new(),
        }
    }

    fn set(&self, change: impl FnOnce(&mut WatchedFolder)) {
        change(&mut self.status.lock().expect("watch status lock"));
    }

    fn fail(&self, error: String) {
        tracing::warn!("watch {}: {error}", self.config.path.display());
        self.set(|s| {
            s.state = "failed".into();
            s.error = Some(error);
        });
    }

    /// Follows the folder until shutdown: waits for it to be there, scans it, takes in its
    /// changes; when it goes away, pauses and waits for it again.
    pub async fn run(mut self) {
        loop {
            let Some(folder) = self.wait_for_folder().await else {
                return;
            };
            match self.watch(&folder).await {
                Err(Stop::Failed(e)) => return self.fail(e),
                Err(Stop::Away(why)) => self.pause(looked_for_again(why)),
                Ok(()) | Err(Stop::Shutdown) => return,
            }
        }
    }

    /// The folder once it exists, looked for every [`RETRY`]; None at shutdown.
    async fn wait_for_folder(&mut self) -> Option<Folder> {
        loop {
            let error = match Folder::open(&self.config) {
                Ok(folder) => match self.away(&folder) {
                    None => return Some(folder),
                    Some(why) => why,
                },
                Err(e) => e,
            };
            let error = looked_for_again(error);
            let told = self.status.lock().expect("watch status lock").error.clone();
            if told.as_ref() != Some(&error) {
                if self.notes.is_empty() {
                    self.fail(error);
                } else {
                    self.pause(error);
                }
            }
            tokio::select! {
                _ = self.shutdown.requested() => return None,
                _ = tokio::time::sleep(RETRY) => {}
            }
        }
    }

    /// Why the folder is away, if it is: gone, or empty while notes of it are remembered (a
    /// drive not mounted leaves its mount point empty). A folder emptied while watched was
    /// emptied note by note, each forgotten as it went, so it is never taken for away.
    fn away(&self, folder: &Folder) -> Option<String> {
        if !folder.root.is_dir() {
            return Some(self.gone());
        }
        let empty = std::fs::read_dir(&folder.root).is_ok_and(|mut d| d.next().is_none());
        (empty && !self.notes.is_empty()).then(|| {
            format!(
                "{} is empty, but {} memories came from its notes (a drive not mounted?)",
                self.config.path.display(),
                self.memories()
            )
        })
    }

    fn gone(&self) -> String {
        format!(
            "{} is gone (deleted, moved, or its drive not mounted)",
            self.config.path.display()
        )
    }

    /// Following pauses: the status says why, and nothing is forgotten.
    fn pause(&self, why: String) {
        tracing::warn!(
            "watch {}: paused: {why}; nothing is forgotten until it is back",
            self.config.path.display()
        );
        self.set(|s| {
            s.state = "paused".into();
            s.error = Some(why);
        });
    }

    /// Watches `folder`: events from before the scan on, the scan, then its changes.
    async fn watch(&mut self, folder: &Folder) -> Result<(), Stop> {
        // Watching starts before the scan, so a change made during it is not missed.
        let (tx, mut events) = mpsc::unbounded_channel();
        let watcher =
            notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
                Ok(event) if !is_read(&event.kind) => {
                    for path in event.paths {
                        let _ = tx.send(path);
                    }
                }
                Ok(_) => {}
                Err(e) => tracing::warn!("watch: {e}"),
            })
            .and_then(|mut w| {
                w.watch(&folder.root, notify::RecursiveMode::Recursive)
                    .map(|_| w)
            });
        let _watcher = watcher.map_err(|e| {
            Stop::Failed(format!(
                "cannot watch it: {e} (on Linux, a folder of many subfolders may need a higher fs.inotify.max_user_watches)"
            ))
        })?;
        self.scan(folder).await?;
        self.follow(folder, &mut events).await
    }

    /// The memories the folder's notes made before, from the store.
    async fn load(&mut self, folder: &Folder) -> Result<(), Stop> {
        let prefix = format!("file:{}/", folder.root.display());
        let predicate = current()
            .and(col("namespace").eq(self.config.namespace.as_str()))
            .and(col("source").starts_with(&prefix));
        let rows = self
            .store
            .columns_of(&predicate, &["id", "source", "content_hash", "metadata"])
            .await?;
        self.notes.clear();
        for r in rows {
            let Some(path) = r
                .source
                .as_deref()
                .filter(|s| s.starts_with(&prefix))
                .and_then(|s| s.strip_prefix("file:"))
            else {
                continue;
            };
            let heading = serde_json::from_str::<serde_json::Value>(&r.metadata)
                .ok()
                .and_then(|m| m["heading"].as_str().map(str::to_string))
                .unwrap_or_default();
            self.notes
                .entry(PathBuf::from(path))
                .or_default()
                .push(Owned {
                    id: r.id,
                    hash: r.content_hash,
                    heading,
                    path: path.to_string(),
                });
        }
        Ok(())
    }

    /// Every note read against what the store holds: what changed while mnemod was down is
    /// taken in, and notes gone since are forgotten.
    async fn scan(&mut self, folder: &Folder) -> Result<(), Stop> {
        let started = Instant::now();
        self.load(folder).await?;
        if let Some(why) = self.away(folder) {
            return Err(Stop::Away(why));
        }
        let listing = folder.list(&folder.root);
        for (path, why) in &listing.skipped {
            tracing::info!("watch: skipping {}: {why}", path.display());
        }
        self.set(|s| {
            s.state = "scanning".into();
            s.files = listing.notes.len() as u64;
            s.scanned = 0;
            s.skipped = listing.skipped.len() as u64;
            s.error = None;
        });
        let present: BTreeSet<&PathBuf> = listing.notes.iter().collect();
        let mut vanished: Vec<PathBuf> = self
            .notes
            .keys()
            .filter(|p| !present.contains(p))
            .cloned()
            .collect();
        for (done, path) in listing.notes.iter().enumerate() {
            self.step_aside().await?;
            self.sync(folder, path, &mut vanished).await?;
            let memories = self.memories();
            self.set(|s| {
                s.scanned = done as u64 + 1;
                s.memories = memories;
            });
        }
        self.add_fresh().await?;
        self.forget_notes(vanished).await?;
        let (files, memories) = (self.files.len() as u64, self.memories());
        self.set(|s| {
            s.state = "watching".into();
            s.files = files;
            s.scanned = files;
            s.memories = memories;
        });
        tracing::info!(
            "watch {}: {files} notes, {memories} memories, scanned in {:.1} s",
            folder.root.display(),
            started.elapsed().as_secs_f64()
        );
        Ok(())
    }

    /// Gives the person's requests the machine: after a recent request the next note waits
    /// until `QUIET` has passed since it. Once per note, so a client polling without pause
    /// slows the scan but never stops it.
    async fn step_aside(&mut self) -> Result<(), Stop> {
        if self.shutdown.is_requested() {
            return Err(Stop::Shutdown);
        }
        let last = *self.activity.borrow();
        if let Some(since) = last.map(|t| t.elapsed()).filter(|s| *s < QUIET) {
            tokio::time::sleep(QUIET - since).await;
        }
        Ok(())
    }

    fn memories(&self) -> u64 {
        self.notes.values().map(|m| m.len() as u64).sum()
    }

    /// File events, taken in once the folder has been quiet for the debounce time.
    async fn follow(
        &mut self,
        folder: &Folder,
        events: &mut mpsc::UnboundedReceiver<PathBuf>,
    ) -> Result<(), Stop> {
        let debounce = Duration::from_millis(self.config.debounce_ms);
        // A drive unmounted sends no event for its notes: the folder is looked at now and then.
        let mut look = tokio::time::interval(RETRY);
        look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let first = tokio::select! {
                biased;
                _ = self.shutdown.requested() => return Ok(()),
                path = events.recv() => match path {
                    Some(path) => path,
                    None => return Ok(()),
                },
                _ = look.tick() => match self.away(folder) {
                    Some(why) => return Err(Stop::Away(why)),
                    None => continue,
                },
            };
            let mut changed = BTreeSet::from([first]);
            while let Ok(Some(path)) = tokio::time::timeout(debounce, events.recv()).await {
                changed.insert(path);
            }
            self.take_in(folder, changed).await?;
        }
    }

    async fn take_in(&mut self, folder: &Folder, changed: BTreeSet<PathBuf>) -> Result<(), Stop> {
        // The folder itself gone (deleted, or unmounted): its notes are away, not deleted.
        if !folder.root.is_dir() {
            return Err(Stop::Away(self.gone()));
        }
        let mut touched = BTreeSet::new();
        let mut vanished = Vec::new();
        for path in changed {
            if folder.visible(&path).is_none() {
                continue;
            }
            if path.is_dir() {
                touched.extend(folder.list(&path).notes);
            } else if path.exists() {
                if folder.wants(&path) {
                    touched.insert(path);
                }
            } else {
                // A file, or a folder of them, is gone (deleted, or renamed away).
                vanished.extend(self.notes.keys().filter(|n| n.starts_with(&path)).cloned());
                self.files.retain(|f| !f.starts_with(&path));
            }
        }
        if touched.is_empty() && vanished.is_empty() {
            return Ok(());
        }
        for path in &touched {
            self.sync(folder, path, &mut vanished).await?;
        }
        self.add_fresh().await?;
        self.forget_notes(vanished).await?;
        let (files, memories) = (self.files.len() as u64, self.memories());
        self.set(|s| {
            s.files = files;
            s.memories = memories;
            s.scanned = files;
            s.last_change = Some(format_micros(now_micros()));
        });
        Ok(())
    }

    /// Takes in the note at `path` as it is now. A note not seen before that holds most of a
    /// `vanished` one's paragraphs is that note renamed: its memories move instead of being
    /// forgotten and added again.
    async fn sync(
        &mut self,
        folder: &Folder,
        path: &Path,
        vanished: &mut Vec<PathBuf>,
    ) -> Result<(), Stop> {
        let items = match folder.read(path, &self.config.namespace) {
            Ok(items) => items,
            Err(why) => {
                tracing::info!("watch: skipping {}: {why}", path.display());
                self.set(|s| s.skipped += 1);
                return Ok(());
            }
        };
        self.files.insert(path.to_path_buf());
        let paragraphs: Vec<Paragraph> = items
            .iter()
            .map(|i| Paragraph {
                hash: self.store.content_hash(&i.content),
                heading: heading_of(i),
            })
            .collect();
        let old = match self.notes.remove(path) {
            Some(old) => old,
            None => {
                let moved = vanished.iter().position(|v| {
                    self.notes
                        .get(v)
                        .is_some_and(|o| plan::is_move(o, &paragraphs))
                });
                match moved {
                    Some(i) => {
                        let from = vanished.remove(i);
                        tracing::info!("watch: {} moved to {}", from.display(), path.display());
                        self.files.remove(&from);
                        self.notes.remove(&from).unwrap_or_default()
                    }
                    None => Vec::new(),
                }
            }
        };
        if old.is_empty() {
            self.fresh.push((path.to_path_buf(), items));
            if self.fresh.iter().map(|(_, i)| i.len()).sum::<usize>() >= FRESH_BATCH {
                self.add_fresh().await?;
            }
            return Ok(());
        }
        let plan = plan::plan(&old, &paragraphs, &path.display().to_string());
        let mut now: Vec<Owned> = plan.keep.iter().map(|(o, _)| old[*o].clone()).collect();
        let mut add = plan.add.clone();
        let restates = plan
            .restamp
            .iter()
            .map(|p| (p, false))
            .chain(plan.update.iter().map(|p| (p, true)));
        for (&(o, n), content) in restates {
            let item = &items[n];
            let source = item.source.clone();
            match self
                .ingest
                .update_shaped(restate(&old[o].id, item, content), |r| r.source = source)
                .await
            {
                Ok(record) => now.push(owned(&record, item)),
                // Changed meanwhile (merged by consolidation, updated by hand): add it afresh.
                Err(Error::Conflict(_) | Error::NotFound(_)) => add.push(n),
                Err(e) => return Err(e.into()),
            }
        }
        let new: Vec<AddParams> = add.iter().map(|&n| items[n].clone()).collect();
        let records = self.add_all(&new).await?;
        now.extend(ours(&records, &new));
        let gone: Vec<String> = plan.forget.iter().map(|&o| old[o].id.clone()).collect();
        self.forget_ids(gone).await?;
        let mut seen = BTreeSet::new();
        now.retain(|m| seen.insert(m.id.clone()));
        if !now.is_empty() {
            self.notes.insert(path.to_path_buf(), now);
        }
        Ok(())
    }

    /// Adds the new notes waiting, in batches, and records which memories are theirs.
    async fn add_fresh(&mut self) -> Result<(), Stop> {
        let fresh = std::mem::take(&mut self.fresh);
        let items: Vec<AddParams> = fresh.iter().flat_map(|(_, i)| i.iter().cloned()).collect();
        let records = self.add_all(&items).await?;
        let mut at = 0;
        for (path, items) in fresh {
            let now = ours(&records[at..at + items.len()], &items);
            at += items.len();
            if !now.is_empty() {
                self.notes.insert(path, now);
            }
        }
        Ok(())
    }

    /// Adds `items` in batches ingest accepts: one memory per item, in order.
    /// Adds `items` in batches: the record of each, in order, or `None` for one mnemod
    /// refused. A batch with a bad paragraph is added one by one, so that paragraph alone is
    /// skipped (and named, with its note) rather than its batch or the watch.
    async fn add_all(&self, items: &[AddParams]) -> Result<Vec<Option<MemoryRecord>>, Stop> {
        let mut records = Vec::with_capacity(items.len());
        for batch in items.chunks(MAX_BATCH_ITEMS) {
            match self.ingest.add(batch.to_vec(), true).await {
                Ok(added) => records.extend(added.into_iter().map(Some)),
                Err(Error::Invalid(_)) => {
                    for item in batch {
                        match self.ingest.add(vec![item.clone()], false).await {
                            Ok(added) => records.push(added.into_iter().next()),
                            Err(Error::Invalid(why)) => {
                                let note = item.source.as_deref().unwrap_or("a note");
                                tracing::warn!("watch: skipping a paragraph of {note}: {why}");
                                self.set(|s| s.skipped += 1);
                                records.push(None);
                            }
                            Err(e) => return Err(e.into()),
                        }
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(records)
    }

    async fn forget_notes(&mut self, paths: Vec<PathBuf>) -> Result<(), Stop> {
        for path in paths {
            self.files.remove(&path);
            if let Some(memories) = self.notes.remove(&path) {
                tracing::info!(
                    "watch: {} is gone; forgetting its {} memories",
                    path.display(),
                    memories.len()
                );
                self.forget_ids(memories.into_iter().map(|m| m.id).collect())
                    .await?;
            }
        }
        Ok(())
    }

    /// Forgets these memories; one already forgotten by hand is no error.
    async fn forget_ids(&self, ids: Vec<String>) -> Result<(), Stop> {
        if ids.is_empty() {
            return Ok(());
        }
        let all = ForgetParams {
            ids: ids.clone(),
            filter: None,
        };
        match self.ingest.forget(all).await {
            Err(Error::NotFound(_)) => {
                for id in ids {
                    let one = ForgetParams {
                        ids: vec![id],
                        filter: None,
                    };
                    match self.ingest.forget(one).await {
                        Ok(_) | Err(Error::NotFound(_)) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                Ok(())
            }
            other => other.map(|_| ()).map_err(Stop::from),
        }
    }
}
