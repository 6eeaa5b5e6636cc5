//! Projects: found at ingest from the paths a memory points at (its `cwd`, file paths in its
//! metadata or text), analysed once and again when a day old, and counted as memories point
//! into them. Every memory that points into one gets its `project_id`.

pub mod detect;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mnemo_protocol::project::{LanguageCount, Project};
use mnemo_protocol::time::{format_micros, now_micros};

use crate::store::projects::ProjectRecord;
use crate::store::schema::hex;
use crate::store::{MemoryRecord, Pred, Store, StoreError};
use crate::understand::paths::{pointed_at, PathSource};

/// A project whose root is there, and one whose root is gone (moved or deleted).
pub const ACTIVE: &str = "active";
pub const MISSING: &str = "missing";

/// Analyses older than this are made again when a memory points into the project.
const STALE_AFTER_MICROS: i64 = 24 * 3600 * 1_000_000;

pub struct Projects {
    store: Arc<Store>,
    /// Every project by id; texts in the clear.
    book: Mutex<HashMap<String, ProjectRecord>>,
    home: Option<PathBuf>,
}

/// What the file system said about one memory's paths.
struct Found {
    root: PathBuf,
    source: PathSource,
}

impl Projects {
    pub fn new(store: Arc<Store>) -> Self {
        Self {
            store,
            book: Mutex::default(),
            home: std::env::var_os("HOME").map(PathBuf::from),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, ProjectRecord>> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub async fn load(&self) -> Result<usize, StoreError> {
        let rows = self.store.projects().rows(&Pred::All).await?;
        let sealing = self.store.sealing();
        let mut book = HashMap::with_capacity(rows.len());
        for mut r in rows {
            let open = |column: &str, text: &str| sealing.open_label(&r.id, column, text, r.sealed);
            r.path = open("path", &r.path)?;
            r.name = open("name", &r.name)?;
            r.description = r
                .description
                .as_deref()
                .map(|d| open("description", d))
                .transpose()?;
            r.repo_url = r
                .repo_url
                .as_deref()
                .map(|u| open("repo_url", u))
                .transpose()?;
            r.sealed = false;
            book.insert(r.id.clone(), r);
        }
        let n = book.len();
        *self.lock() = book;
        Ok(n)
    }

    /// The id of the project rooted at `root` (keyed in an encrypted store, so the id does not
    /// give the path away).
    pub fn id_of(&self, root: &Path) -> String {
        use sha2::{Digest, Sha256};
        let keyed = self.store.entity_key(&root.to_string_lossy());
        format!("proj-{}", hex(&Sha256::digest(keyed.as_bytes())[..8]))
    }

    /// The root of the project `path` lies in, if any (the path must exist).
    pub async fn root_of(&self, path: &str) -> Option<PathBuf> {
        let (path, home) = (PathBuf::from(path), self.home.clone());
        tokio::task::spawn_blocking(move || {
            path.exists()
                .then(|| detect::root_of(&path, home.as_deref()))
                .flatten()
        })
        .await
        .ok()
        .flatten()
    }

    /// Sets the `project_id` of each record that points into a project, creating, analysing
    /// and counting projects on the way; writes what changed before the memories are.
    pub async fn assign(&self, records: &mut [MemoryRecord]) -> Result<(), StoreError> {
        let home = self.home.as_ref().map(|h| h.to_string_lossy().to_string());
        let pointed: Vec<Vec<(String, PathSource)>> = records
            .iter()
            .map(|r| pointed_at(&r.metadata, &r.content, home.as_deref()))
            .collect();
        if pointed.iter().all(Vec::is_empty) {
            return Ok(());
        }
        let now = now_micros();
        let fresh: HashSet<String> = self
            .lock()
            .values()
            .filter(|p| now - p.analyzed_at < STALE_AFTER_MICROS)
            .map(|p| p.path.clone())
            .collect();
        let home = self.home.clone();
        // Stat calls and reading project files: off the reactor.
        let (found, facts) = tokio::task::spawn_blocking(move || {
            let mut facts = HashMap::new();
            let found: Vec<Option<Found>> = pointed
                .into_iter()
                .map(|paths| {
                    let found = paths.into_iter().find_map(|(p, source)| {
                        let p = PathBuf::from(p);
                        let root = p.exists().then(|| detect::root_of(&p, home.as_deref()))??;
                        Some(Found { root, source })
                    })?;
                    let key = found.root.to_string_lossy().to_string();
                    if !fresh.contains(&key) && !facts.contains_key(&found.root) {
                        facts.insert(found.root.clone(), detect::analyze(&found.root));
                    }
                    Some(found)
                })
                .collect();
            (found, facts)
        })
        .await
        .map_err(|e| StoreError::Lance(format!("reading a project's files failed: {e}")))?;
        let mut changed = HashSet::new();
        {
            let mut book = self.lock();
            for (record, found) in records.iter_mut().zip(found) {
                let Some(found) = found else { continue };
                let id = self.id_of(&found.root);
                let at = record.event_time();
                let p = book.entry(id.clone()).or_insert_with(|| ProjectRecord {
                    id: id.clone(),
                    path: found.root.to_string_lossy().to_string(),
                    status: ACTIVE.into(),
                    first_seen: at,
                    last_active: at,
                    detection_source: found.source.as_str().to_string(),
                    languages: "[]".into(),
                    ..Default::default()
                });
                if let Some(f) = facts.get(&found.root) {
                    p.name = f.name.clone();
                    p.description = f.description.clone();
                    p.repo_url = f.repo_url.clone();
                    p.languages = serde_json::to_string(&f.languages).expect("names and counts");
                    p.frameworks = f.frameworks.clone();
                    p.build_system = f.build_system.clone();
                    p.analyzed_at = now;
                    p.status = ACTIVE.into();
                }
                p.interaction_count += 1;
                p.first_seen = p.first_seen.min(at);
                p.last_active = p.last_active.max(at);
                record.project_id = Some(id.clone());
                changed.insert(id);
            }
        }
        self.write(&changed).await
    }

    /// Current memories that were forgotten: the projects they pointed into count them no
    /// more.
    pub async fn forgotten<'a>(
        &self,
        records: impl IntoIterator<Item = &'a MemoryRecord>,
    ) -> Result<(), StoreError> {
        let mut changed = HashSet::new();
        {
            let mut book = self.lock();
            for id in records.into_iter().filter_map(|r| r.project_id.as_ref()) {
                if let Some(p) = book.get_mut(id) {
                    p.interaction_count = p.interaction_count.saturating_sub(1);
                    changed.insert(id.clone());
                }
            }
        }
        self.write(&changed).await
    }

    /// Marks projects whose root is gone `missing`, and those back again `active`: a stat
    /// per project, off the reactor. Answers how many changed.
    pub async fn check_roots(&self) -> Result<usize, StoreError> {
        let roots: Vec<(String, String, String)> = self
            .lock()
            .values()
            .map(|p| (p.id.clone(), p.path.clone(), p.status.clone()))
            .collect();
        let changed: HashSet<String> = tokio::task::spawn_blocking(move || {
            roots
                .into_iter()
                .filter(|(_, path, status)| {
                    let there = Path::new(path).is_dir();
                    there != (status == ACTIVE)
                })
                .map(|(id, ..)| id)
                .collect()
        })
        .await
        .map_err(|e| StoreError::Lance(format!("looking at the projects' roots failed: {e}")))?;
        {
            let mut book = self.lock();
            for id in &changed {
                if let Some(p) = book.get_mut(id) {
                    p.status = if p.status == ACTIVE { MISSING } else { ACTIVE }.into();
                }
            }
        }
        self.write(&changed).await?;
        Ok(changed.len())
    }

    /// Writes the rows of `ids` (sealed in an encrypted store).
    async fn write(&self, ids: &HashSet<String>) -> Result<(), StoreError> {
        let sealing = self.store.sealing();
        let rows: Vec<ProjectRecord> = {
            let book = self.lock();
            ids.iter()
                .filter_map(|id| book.get(id))
                .map(|p| {
                    let mut row = p.clone();
                    let (path, sealed) = sealing.seal_label(&p.id, "path", &p.path);
                    row.path = path;
                    row.name = sealing.seal_label(&p.id, "name", &p.name).0;
                    row.description = p
                        .description
                        .as_deref()
                        .map(|d| sealing.seal_label(&p.id, "description", d).0);
                    row.repo_url = p
                        .repo_url
                        .as_deref()
                        .map(|u| sealing.seal_label(&p.id, "repo_url", u).0);
                    row.sealed = sealed;
                    row
                })
                .collect()
        };
        if !rows.is_empty() {
            let op = self.store.projects().upsert(&rows)?;
            self.store.writer().submit(op).await?;
        }
        Ok(())
    }

    /// After `mnemo encrypt`: every row written again, sealed.
    pub async fn reseal(&self) -> Result<(), StoreError> {
        let ids: HashSet<String> = self.lock().keys().cloned().collect();
        self.store
            .writer()
            .submit(self.store.projects().delete_all())
            .await?;
        self.write(&ids).await
    }

    /// Every project, most recently active first.
    pub fn all(&self) -> Vec<Project> {
        let mut rows: Vec<ProjectRecord> = self.lock().values().cloned().collect();
        rows.sort_by(|a, b| b.last_active.cmp(&a.last_active).then(a.id.cmp(&b.id)));
        rows.iter().map(to_protocol).collect()
    }

    pub fn get(&self, id: &str) -> Option<Project> {
        self.lock().get(id).map(to_protocol)
    }
}

fn to_protocol(p: &ProjectRecord) -> Project {
    let languages: Vec<LanguageCount> = serde_json::from_str(&p.languages).unwrap_or_default();
    Project {
        id: p.id.clone(),
        path: p.path.clone(),
        name: p.name.clone(),
        description: p.description.clone(),
        repo_url: p.repo_url.clone(),
        languages,
        frameworks: p.frameworks.clone(),
        build_system: p.build_system.clone(),
        status: p.status.clone(),
        first_seen: format_micros(p.first_seen),
        last_active: format_micros(p.last_active),
        interaction_count: p.interaction_count.max(0) as u64,
        detection_source: p.detection_source.clone(),
        analyzed_at: format_micros(p.analyzed_at),
    }
}
