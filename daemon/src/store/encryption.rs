//! Which stores are encrypted and with what key: decided at open (before anything is written,
//! so a wrong key changes nothing), and the conversion of a plain store (`mnemo encrypt`).
//!
//! `meta` records `security.key_check` as soon as any row may be sealed (so a start without the
//! key refuses), and `security.mode = sealed` once every row is.

use std::path::Path;
use std::sync::atomic::Ordering;

use lancedb::Table;
use mnemo_protocol::daemon::{EncryptionMode, EncryptionStatus, KeyLocation};

use super::error::StoreError;
use super::filter::plain_rows;
use super::keystore::KeySettings;
use super::seal::{key_check, Sealing};
use super::{read_meta, write_meta, Store, WriteOp};

const KEY_CHECK: &str = "security.key_check";
const MODE: &str = "security.mode";
const SEALED: &str = "sealed";

/// The store's sealing as `meta` and the key say. Runs before any write of the open.
pub(super) async fn sealing_at_open(
    db_dir: &Path,
    meta: &Table,
    memories: &Table,
    settings: &KeySettings,
) -> Result<Sealing, StoreError> {
    let sealing = Sealing::default();
    match read_meta(meta, KEY_CHECK).await? {
        Some(check) => {
            let master = settings.find(db_dir).await?;
            if key_check(&master.bytes) != check {
                return Err(StoreError::Key(format!(
                    "the key in the {} is not this store's key; put the right key there. \
                     Nothing was changed.",
                    master.location
                )));
            }
            sealing.set_keys(&master);
            if read_meta(meta, MODE).await?.as_deref() == Some(SEALED) {
                sealing.turn_on();
            } else {
                tracing::warn!("encrypting this store was interrupted: run `mnemo encrypt` again");
            }
        }
        None if settings.encrypt && memories.count_rows(None).await? == 0 => {
            let master = settings.find_or_create(db_dir).await?;
            let check = key_check(&master.bytes);
            write_meta(meta, KEY_CHECK, &check).await?;
            write_meta(meta, MODE, SEALED).await?;
            sealing.set_keys(&master);
            sealing.turn_on();
            tracing::info!(
                "new store encrypted with the key in the {}",
                master.location
            );
        }
        None if settings.encrypt => tracing::warn!(
            "security.encrypt is set but this store holds plain memories: run `mnemo encrypt` \
             to convert it"
        ),
        None => {}
    }
    Ok(sealing)
}

impl Store {
    pub fn encryption_status(&self) -> EncryptionStatus {
        let sealing = self.sealing();
        let progress = &self.seal_progress;
        let mode = if sealing.is_on() {
            EncryptionMode::On
        } else if sealing.keys().is_some() {
            EncryptionMode::Converting
        } else {
            EncryptionMode::Off
        };
        EncryptionStatus {
            mode,
            key: sealing.key_location().cloned(),
            asked: self.key.encrypt && mode != EncryptionMode::On,
            done: progress.done.load(Ordering::Relaxed),
            total: progress.total.load(Ordering::Relaxed),
        }
    }

    /// Encrypts every memory (a plain store, or one whose conversion was interrupted), then
    /// purges the plain text from old versions and index files. Answers the rows sealed.
    pub async fn encrypt(&self) -> Result<u64, StoreError> {
        if self.sealing().is_on() {
            return Ok(0);
        }
        if self.seal_progress.running.swap(true, Ordering::AcqRel) {
            return Err(StoreError::Conflict(
                "the store is already being encrypted; `mnemo status` shows how far".into(),
            ));
        }
        let result = self.convert().await;
        self.seal_progress.running.store(false, Ordering::Release);
        result
    }

    async fn convert(&self) -> Result<u64, StoreError> {
        if self.sealing().keys().is_none() {
            let master = self.key.find_or_create(&self.db_dir).await?;
            let check = key_check(&master.bytes);
            // Recorded first: from here a start without this key refuses.
            self.meta_set(KEY_CHECK, &check).await?;
            self.sealing().set_keys(&master);
        }
        let progress = &self.seal_progress;
        progress.done.store(0, Ordering::Relaxed);
        let plain = self.memories.count_rows(plain_rows().filter()).await? as u64;
        progress.total.store(plain, Ordering::Relaxed);
        let mut sealed = 0;
        // Chunk by chunk, so adds and searches go on meanwhile; the last op seals what
        // arrived in between and switches sealing on, with no write between the two.
        loop {
            let n = self
                .writer()
                .submit(WriteOp::Seal { finish: false })
                .await?;
            sealed += n;
            if n == 0 {
                break;
            }
        }
        sealed += self.writer().submit(WriteOp::Seal { finish: true }).await?;
        self.meta_set(MODE, SEALED).await?;
        let rekeyed = self.edges.rekeyed_entities(&|k| self.entity_key(k)).await?;
        for edge_type in super::edges::REKEYED {
            self.writer()
                .submit(self.edges.delete_type(edge_type))
                .await?;
        }
        for chunk in rekeyed.chunks(10_000) {
            self.writer().submit(self.edges.append(chunk)?).await?;
        }
        self.purge().await?;
        tracing::info!(
            "encrypted {sealed} memories with the key in the {}",
            self.key_location()
        );
        Ok(sealed)
    }

    /// Where the key is (after `encrypt`, always somewhere).
    pub fn key_location(&self) -> KeyLocation {
        self.sealing()
            .key_location()
            .cloned()
            .unwrap_or_else(|| KeyLocation::File {
                path: self.key.key_file.display().to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::super::keystore::create_key_file;
    use super::super::rewrite::tests::{assert_all_found, files_holding, files_under, memory};
    use super::super::writer::SEAL_CHUNK;
    use super::*;
    use crate::config::KeyStoreKind;
    use crate::store::schema::MemoryRecord;
    use std::path::PathBuf;

    async fn open(dir: &Path, key: &KeySettings) -> Result<std::sync::Arc<Store>, StoreError> {
        Store::open(dir, 4, "test", &Default::default(), key).await
    }

    /// Every file name and length under `dir`: what a refused start must leave as it was.
    fn listing(dir: &Path) -> Vec<(PathBuf, u64)> {
        let mut out: Vec<(PathBuf, u64)> = files_under(dir)
            .into_iter()
            .map(|p| {
                let len = std::fs::metadata(&p).unwrap().len();
                (p, len)
            })
            .collect();
        out.sort();
        out
    }

    /// A plain store in `dir`/db holding `n` memories, its key to be `dir`/mnemo.key.
    async fn plain_store(
        dir: &Path,
        n: usize,
    ) -> (
        PathBuf,
        KeySettings,
        Vec<MemoryRecord>,
        std::sync::Arc<Store>,
    ) {
        let db = dir.join("db");
        let key = KeySettings {
            encrypt: false,
            key_store: KeyStoreKind::File,
            key_file: dir.join("mnemo.key"),
        };
        let rows: Vec<MemoryRecord> = (0..n).map(memory).collect();
        let store = open(&db, &key).await.unwrap();
        store
            .writer()
            .submit(WriteOp::Insert(rows.clone()))
            .await
            .unwrap();
        (db, key, rows, store)
    }

    #[tokio::test]
    async fn a_plain_store_converts_and_then_opens_only_with_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let (db, key, rows, store) = plain_store(dir.path(), 30).await;
        assert!(!files_holding(&db, "garden").is_empty(), "plain before");
        assert_eq!(store.encryption_status().mode, EncryptionMode::Off);

        assert_eq!(store.encrypt().await.unwrap(), 30);
        let status = store.encryption_status();
        assert_eq!(
            (status.mode, status.done, status.total),
            (EncryptionMode::On, 30, 30)
        );
        assert_all_found(&store, &rows, "after converting").await;
        let later = memory(31);
        store
            .writer()
            .submit(WriteOp::Insert(vec![later.clone()]))
            .await
            .unwrap();
        assert_all_found(&store, std::slice::from_ref(&later), "added after").await;
        assert_eq!(files_holding(&db, "garden"), Vec::<String>::new());
        store.close().await;
        drop(store);

        let before = listing(&db);
        let wrong = KeySettings {
            key_file: dir.path().join("other.key"),
            ..key.clone()
        };
        let missing = open(&db, &wrong).await.err().expect("no key file");
        assert!(missing.to_string().contains("no key file"), "{missing}");
        create_key_file(&wrong.key_file).unwrap();
        let refused = open(&db, &wrong).await.err().expect("wrong key");
        assert!(
            refused.to_string().contains("not this store's key"),
            "{refused}"
        );
        assert_eq!(listing(&db), before, "a refused start changes nothing");

        let store = open(&db, &key).await.unwrap();
        assert_eq!(store.encryption_status().mode, EncryptionMode::On);
        assert_all_found(&store, &rows, "after a restart").await;
        let read = store.get("m3").await.unwrap().unwrap();
        assert_eq!(read.content, rows[3].content);
        assert_eq!(read.metadata, rows[3].metadata);
    }

    /// A conversion cut off after its first chunk: the store opens as converting, reads
    /// the rows sealed so far, and a second `encrypt` finishes the job.
    #[tokio::test]
    async fn an_interrupted_conversion_opens_and_finishes() {
        let dir = tempfile::tempdir().unwrap();
        let (db, key, rows, store) = plain_store(dir.path(), SEAL_CHUNK + 20).await;
        let master = key.find_or_create(&db).await.unwrap();
        let check = key_check(&master.bytes);
        store.meta_set(KEY_CHECK, &check).await.unwrap();
        store.sealing().set_keys(&master);
        let first = store
            .writer()
            .submit(WriteOp::Seal { finish: false })
            .await
            .unwrap();
        assert_eq!(first, SEAL_CHUNK as u64);
        store.close().await;
        drop(store);

        let store = open(&db, &key).await.unwrap();
        assert_eq!(store.encryption_status().mode, EncryptionMode::Converting);
        let read = store.get("m0").await.unwrap().unwrap();
        assert_eq!(read.content, rows[0].content, "sealed rows open meanwhile");
        assert_eq!(store.encrypt().await.unwrap(), 20);
        assert_eq!(store.encryption_status().mode, EncryptionMode::On);
        assert_all_found(&store, &rows, "after finishing").await;
        assert_eq!(files_holding(&db, "garden"), Vec::<String>::new());
    }
}
