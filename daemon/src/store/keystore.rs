//! Where an encrypted store's master key is kept: the OS keyring where one answers (Secret
//! Service, macOS Keychain, Windows Credential Manager), else a 0600 file; never the config.
//!
//! `security.key_store` chooses: `auto` (default) finds the key in the file or the keyring and
//! creates a new one in the keyring when it answers, else in the file; `keyring` and `file` use
//! only that place. A key file that exists always wins under `auto`, so a store keeps the key
//! it was created with.

use std::io::Write;
use std::path::{Path, PathBuf};

use chacha20poly1305::aead::{KeyInit, OsRng};
use chacha20poly1305::XChaCha20Poly1305;
use mnemo_protocol::daemon::KeyLocation;

use super::error::StoreError;
use super::schema::hex;
use crate::config::KeyStoreKind;

/// The keyring service every mnemo key is filed under; the account names the store.
const SERVICE: &str = "mnemo";

/// Whether new stores are encrypted, and where the key is kept.
#[derive(Debug, Clone)]
pub struct KeySettings {
    pub encrypt: bool,
    pub key_store: KeyStoreKind,
    pub key_file: PathBuf,
}

impl Default for KeySettings {
    /// Plain, with the key (should `mnemo encrypt` make one) in the default places.
    fn default() -> Self {
        Self {
            encrypt: false,
            key_store: KeyStoreKind::Auto,
            key_file: mnemo_protocol::paths::default_key_path(),
        }
    }
}

/// A store's master key and where it was found or put.
pub struct MasterKey {
    pub bytes: [u8; 32],
    pub location: KeyLocation,
}

impl KeySettings {
    /// The existing key of the store in `db_dir`, or an error that says every place looked.
    pub async fn find(&self, db_dir: &Path) -> Result<MasterKey, StoreError> {
        let (settings, db_dir) = (self.clone(), db_dir.to_path_buf());
        blocking(move || settings.find_now(&db_dir)).await
    }

    /// The existing key, or a new one kept where `key_store` says.
    pub async fn find_or_create(&self, db_dir: &Path) -> Result<MasterKey, StoreError> {
        let (settings, db_dir) = (self.clone(), db_dir.to_path_buf());
        blocking(move || settings.find_or_create_now(&db_dir)).await
    }

    fn find_now(&self, db_dir: &Path) -> Result<MasterKey, StoreError> {
        let (found, looked) = self.look(db_dir)?;
        found.ok_or_else(|| {
            StoreError::Key(format!(
                "this store is encrypted and its key is not where mnemo looked ({}); put the key \
                 back (or set security.key_store / security.key_file to where it is). Nothing \
                 was changed.",
                looked.join("; ")
            ))
        })
    }

    fn find_or_create_now(&self, db_dir: &Path) -> Result<MasterKey, StoreError> {
        let (found, looked) = self.look(db_dir)?;
        if let Some(key) = found {
            return Ok(key);
        }
        let keyring = Keyring::for_store(db_dir);
        if self.key_store != KeyStoreKind::File {
            match keyring.create() {
                Ok(key) => return Ok(key),
                Err(e) if self.key_store == KeyStoreKind::Keyring => return Err(e),
                Err(e) => tracing::info!("{e}; keeping the key in a file instead"),
            }
        }
        tracing::debug!("no key yet ({})", looked.join("; "));
        Ok(MasterKey {
            bytes: create_key_file(&self.key_file)?,
            location: file_location(&self.key_file),
        })
    }

    /// The key if found, and what each place said.
    fn look(&self, db_dir: &Path) -> Result<(Option<MasterKey>, Vec<String>), StoreError> {
        let mut looked = Vec::new();
        if self.key_store != KeyStoreKind::Keyring {
            if let Some(bytes) = read_key_file(&self.key_file)? {
                let location = file_location(&self.key_file);
                return Ok((Some(MasterKey { bytes, location }), looked));
            }
            looked.push(format!("no key file {}", self.key_file.display()));
        }
        if self.key_store != KeyStoreKind::File {
            let keyring = Keyring::for_store(db_dir);
            match keyring.read() {
                Ok(Some(key)) => return Ok((Some(key), looked)),
                Ok(None) => looked.push(format!("nothing in the {}", keyring.location())),
                Err(e) if self.key_store == KeyStoreKind::Keyring => return Err(e),
                Err(e) => looked.push(e.to_string()),
            }
        }
        Ok((None, looked))
    }
}

/// Keyring calls are synchronous D-Bus (or OS) calls: off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::Key(format!("looking for the key failed: {e}")))?
}

fn file_location(path: &Path) -> KeyLocation {
    KeyLocation::File {
        path: path.display().to_string(),
    }
}

/// One store's entry in the OS keyring.
struct Keyring {
    account: String,
}

impl Keyring {
    /// Each store has its own key, so the account is the store's directory.
    fn for_store(db_dir: &Path) -> Self {
        let dir = std::fs::canonicalize(db_dir).unwrap_or_else(|_| db_dir.to_path_buf());
        Self {
            account: format!("store key {}", dir.display()),
        }
    }

    fn location(&self) -> KeyLocation {
        KeyLocation::Keyring {
            backend: BACKEND.into(),
            service: SERVICE.into(),
            account: self.account.clone(),
        }
    }

    fn entry(&self) -> Result<keyring::Entry, StoreError> {
        keyring::Entry::new(SERVICE, &self.account).map_err(|e| self.failed(e))
    }

    fn failed(&self, e: keyring::Error) -> StoreError {
        StoreError::Key(format!(
            "the {BACKEND} keyring did not answer ({e}): is it running and unlocked? \
             (security.key_store = \"file\" keeps the key in a file instead)"
        ))
    }

    /// The key if the keyring holds one; an error when the keyring cannot be reached.
    fn read(&self) -> Result<Option<MasterKey>, StoreError> {
        match self.entry()?.get_password() {
            Ok(text) => {
                let bytes = parse_key(&text).ok_or_else(|| {
                    StoreError::Key(format!(
                        "the {} does not hold a mnemo key (64 hex digits)",
                        self.location()
                    ))
                })?;
                Ok(Some(MasterKey {
                    bytes,
                    location: self.location(),
                }))
            }
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(self.failed(e)),
        }
    }

    /// A new key, stored and read back (a keyring that forgets would lose the memories).
    fn create(&self) -> Result<MasterKey, StoreError> {
        let bytes = new_key();
        self.entry()?
            .set_password(&hex(&bytes))
            .map_err(|e| self.failed(e))?;
        match self.read()? {
            Some(stored) if stored.bytes == bytes => Ok(stored),
            _ => Err(StoreError::Key(format!(
                "the {} did not keep the new key",
                self.location()
            ))),
        }
    }
}

#[cfg(target_os = "macos")]
const BACKEND: &str = "macOS Keychain";
#[cfg(target_os = "windows")]
const BACKEND: &str = "Windows Credential Manager";
#[cfg(not(any(target_os = "macos", target_os = "windows")))]
const BACKEND: &str = "Secret Service";

fn new_key() -> [u8; 32] {
    XChaCha20Poly1305::generate_key(&mut OsRng).into()
}

fn parse_key(text: &str) -> Option<[u8; 32]> {
    let digits = text.trim();
    let bytes: Option<Vec<u8>> = (0..digits.len())
        .step_by(2)
        .map(|i| {
            digits
                .get(i..i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
        })
        .collect();
    bytes.and_then(|b| <[u8; 32]>::try_from(b).ok())
}

/// The master key in `path` (64 hex digits), if the file exists. A key others can read is
/// refused: it would protect nothing.
pub fn read_key_file(path: &Path) -> Result<Option<[u8; 32]>, StoreError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(StoreError::Key(format!(
                "cannot read the key file {}: {e}",
                path.display()
            )))
        }
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map(|m| m.permissions().mode())
            .unwrap_or(0);
        if mode & 0o077 != 0 {
            return Err(StoreError::Key(format!(
                "the key file {} can be read by others (mode {:o}); run `chmod 600 {}`",
                path.display(),
                mode & 0o777,
                path.display()
            )));
        }
    }
    parse_key(&text).map(Some).ok_or_else(|| {
        StoreError::Key(format!(
            "the key file {} is not a mnemo key (64 hex digits)",
            path.display()
        ))
    })
}

/// A new random master key, written to `path` (created 0600, never over an existing file).
pub fn create_key_file(path: &Path) -> Result<[u8; 32], StoreError> {
    let failed = |e: std::io::Error| {
        StoreError::Key(format!(
            "cannot create the key file {}: {e}",
            path.display()
        ))
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir).map_err(failed)?;
    }
    let key = new_key();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(failed)?;
    file.write_all(format!("{}\n", hex(&key)).as_bytes())
        .and_then(|_| file.sync_all())
        .map_err(failed)?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_only(dir: &Path) -> KeySettings {
        KeySettings {
            encrypt: true,
            key_store: KeyStoreKind::File,
            key_file: dir.join("sub/mnemo.key"),
        }
    }

    #[test]
    fn a_key_file_is_created_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/mnemo.key");
        let key = create_key_file(&path).unwrap();
        assert_eq!(read_key_file(&path).unwrap(), Some(key));
        assert!(
            create_key_file(&path).is_err(),
            "never over an existing key"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            assert!(read_key_file(&path).is_err());
        }
    }

    #[tokio::test]
    async fn file_only_finds_nothing_then_creates_the_file_and_finds_it_again() {
        let dir = tempfile::tempdir().unwrap();
        let settings = file_only(dir.path());
        let missing = settings.find(dir.path()).await.err().unwrap().to_string();
        assert!(missing.contains("no key file"), "{missing}");
        assert!(
            !missing.contains("keyring"),
            "file-only never asks the keyring: {missing}"
        );
        let made = settings.find_or_create(dir.path()).await.unwrap();
        assert_eq!(made.location, file_location(&settings.key_file));
        let found = settings.find(dir.path()).await.unwrap();
        assert_eq!(found.bytes, made.bytes);
    }

    #[tokio::test]
    async fn auto_prefers_an_existing_key_file() {
        let dir = tempfile::tempdir().unwrap();
        let settings = KeySettings {
            key_store: KeyStoreKind::Auto,
            ..file_only(dir.path())
        };
        let bytes = create_key_file(&settings.key_file).unwrap();
        let found = settings.find_or_create(dir.path()).await.unwrap();
        assert_eq!(found.bytes, bytes);
        assert_eq!(found.location, file_location(&settings.key_file));
    }

    #[test]
    fn keys_parse_only_as_64_hex_digits() {
        assert_eq!(
            parse_key(&format!("{}\n", "ab".repeat(32))),
            Some([0xab; 32])
        );
        assert_eq!(parse_key(&"ab".repeat(31)), None);
        assert_eq!(parse_key(&"zz".repeat(32)), None);
        assert_eq!(parse_key("é"), None);
    }
}
