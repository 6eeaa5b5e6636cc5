//! Living summaries: per namespace and category (commitments, people, projects, tensions,
//! mood, narrative, goals, beliefs) a short current text, written by consolidation
//! ([`compose`]) and read by `summary.list` and context packages. Each write replaces a
//! namespace's summaries whole; in an encrypted store the text is sealed to its row.

pub mod compose;

use std::sync::{Arc, Mutex};

use mnemo_protocol::summary::{LivingSummary, SummaryCategory};
use mnemo_protocol::time::{format_micros, parse_micros};

use crate::store::summaries::SummaryRecord;
use crate::store::{Pred, Store, StoreError};

pub struct Living {
    store: Arc<Store>,
    /// Every summary, read once after each change: every context package reads them.
    cache: Mutex<Option<Vec<LivingSummary>>>,
}

impl Living {
    pub fn new(store: Arc<Store>) -> Self {
        Self {
            store,
            cache: Mutex::default(),
        }
    }

    fn cached(&self) -> std::sync::MutexGuard<'_, Option<Vec<LivingSummary>>> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The summaries of `namespace` (all when none), in category order.
    pub async fn list(
        &self,
        namespace: Option<&str>,
        category: Option<SummaryCategory>,
    ) -> Result<Vec<LivingSummary>, StoreError> {
        let cached = self.cached().clone();
        let all = match cached {
            Some(all) => all,
            None => {
                let all = self.read_all().await?;
                *self.cached() = Some(all.clone());
                all
            }
        };
        Ok(all
            .into_iter()
            .filter(|s| namespace.is_none_or(|n| s.namespace == n))
            .filter(|s| category.is_none_or(|c| s.category == c))
            .collect())
    }

    async fn read_all(&self) -> Result<Vec<LivingSummary>, StoreError> {
        let sealing = self.store.sealing();
        let mut out = Vec::new();
        for r in self.store.summaries().rows(&Pred::All).await? {
            let Ok(category) = r.category.parse() else {
                continue;
            };
            out.push(LivingSummary {
                content: sealing.open_label(&r.id, "content", &r.content, r.sealed)?,
                namespace: r.namespace,
                category,
                observation_count: r.observation_count as u64,
                updated_at: format_micros(r.updated_at),
                written_by: r.written_by,
            });
        }
        out.sort_by(|a, b| (&a.namespace, a.category).cmp(&(&b.namespace, b.category)));
        Ok(out)
    }

    /// Makes `summaries` the namespace's whole set: categories absent from it are removed.
    pub async fn replace(
        &self,
        namespace: &str,
        summaries: &[LivingSummary],
    ) -> Result<(), StoreError> {
        *self.cached() = None;
        let table = self.store.summaries();
        let kept: Vec<String> = summaries
            .iter()
            .map(|s| row_id(namespace, s.category))
            .collect();
        let gone: Vec<String> = SummaryCategory::ALL
            .iter()
            .map(|c| row_id(namespace, *c))
            .filter(|id| !kept.contains(id))
            .collect();
        self.store.writer().submit(table.delete_ids(&gone)).await?;
        if !summaries.is_empty() {
            let op = table.upsert(&self.sealed(summaries))?;
            self.store.writer().submit(op).await?;
        }
        *self.cached() = None;
        Ok(())
    }

    fn sealed(&self, summaries: &[LivingSummary]) -> Vec<SummaryRecord> {
        let sealing = self.store.sealing();
        summaries
            .iter()
            .map(|s| {
                let id = row_id(&s.namespace, s.category);
                let (content, sealed) = sealing.seal_label(&id, "content", &s.content);
                SummaryRecord {
                    content,
                    sealed,
                    namespace: s.namespace.clone(),
                    category: s.category.to_string(),
                    observation_count: s.observation_count as i64,
                    updated_at: parse_micros(&s.updated_at).unwrap_or_default(),
                    written_by: s.written_by.clone(),
                    id,
                }
            })
            .collect()
    }

    /// Every summary removed (a forget may have taken what they quote).
    pub async fn clear(&self) -> Result<(), StoreError> {
        *self.cached() = None;
        let op = self.store.summaries().delete_all();
        self.store.writer().submit(op).await?;
        *self.cached() = None;
        Ok(())
    }

    /// After `mnemo encrypt`: every row written again, sealed.
    pub async fn reseal(&self) -> Result<(), StoreError> {
        let all = self.list(None, None).await?;
        if !all.is_empty() {
            let op = self.store.summaries().upsert(&self.sealed(&all))?;
            self.store.writer().submit(op).await?;
        }
        Ok(())
    }
}

fn row_id(namespace: &str, category: SummaryCategory) -> String {
    format!("{namespace}/{category}")
}
