//! Encryption at rest (opt-in, `[security] encrypt = true` or `mnemo encrypt`).
//!
//! A sealed row keeps its content and metadata as XChaCha20-Poly1305 ciphertext bound to the
//! row's id and column; its full-text terms as keyed hashes of the terms LanceDB's own
//! analyzer would index (so search finds the same rows, and the index holds no word); and its
//! content hash keyed (so equal texts cannot be probed from outside). Every key comes from one
//! 32-byte master key in a 0600 file. What stays plain: ids, namespaces, tags, times, scores
//! and vectors (the README says what vectors reveal).

use std::borrow::Cow;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

use base64::Engine as _;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use lance_index::scalar::inverted::tokenizer::document_tokenizer::LanceTokenizer;
use lance_tokenizer::TokenStream;
use lancedb::index::scalar::{FtsIndexBuilder, FullTextSearchQuery};

use super::schema::{hex, normalized_for_hash, MemoryRecord};
use super::StoreError;

const NONCE_BYTES: usize = 24;
/// Hex digits of a term hash: 64 bits, no collision in any vocabulary a person has.
const TERM_HEX: usize = 16;

/// The keys of one store, all derived from its master key.
pub struct Keys {
    aead: XChaCha20Poly1305,
    terms: [u8; 32],
    hashes: [u8; 32],
    /// Recorded in `meta`: tells the right key from a wrong one without decrypting rows.
    check: String,
    analyzer: Box<dyn LanceTokenizer>,
}

impl Keys {
    pub fn from_master(master: &[u8; 32]) -> Self {
        let derive = |context: &str| blake3::derive_key(context, master);
        let aead_key = derive("mnemo 2026-11 memory content encryption");
        Self {
            aead: XChaCha20Poly1305::new(&aead_key.into()),
            terms: derive("mnemo 2026-11 full-text term hashing"),
            hashes: derive("mnemo 2026-11 content hashing"),
            check: hex(&derive("mnemo 2026-11 key check")[..16]),
            analyzer: FtsIndexBuilder::default()
                .build()
                .expect("LanceDB's default analyzer builds"),
        }
    }

    pub fn check(&self) -> &str {
        &self.check
    }

    fn seal_text(&self, id: &str, column: &str, plain: &str) -> String {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let aad = format!("{id}\0{column}");
        let sealed = self
            .aead
            .encrypt(
                &nonce,
                Payload {
                    msg: plain.as_bytes(),
                    aad: aad.as_bytes(),
                },
            )
            .expect("XChaCha20-Poly1305 seals any length we store");
        let mut out = nonce.to_vec();
        out.extend(sealed);
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(out)
    }

    fn open_text(&self, id: &str, column: &str, sealed: &str) -> Result<String, StoreError> {
        let broken = || {
            StoreError::Key(format!(
                "the {column} of memory {id} does not decrypt with this store's key \
                 (damaged, or written under another key)"
            ))
        };
        let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(sealed)
            .map_err(|_| broken())?;
        if bytes.len() < NONCE_BYTES {
            return Err(broken());
        }
        let (nonce, body) = bytes.split_at(NONCE_BYTES);
        let aad = format!("{id}\0{column}");
        let plain = self
            .aead
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: body,
                    aad: aad.as_bytes(),
                },
            )
            .map_err(|_| broken())?;
        String::from_utf8(plain).map_err(|_| broken())
    }

    /// What makes two texts the same memory, keyed.
    pub fn content_hash(&self, content: &str) -> String {
        let digest = blake3::keyed_hash(&self.hashes, normalized_for_hash(content).as_bytes());
        hex(&digest.as_bytes()[..16])
    }

    /// The terms LanceDB's analyzer finds in `text` (lower-cased, stemmed, stop words out),
    /// each as a keyed hash, in order and with repeats (so BM25 sees the same frequencies).
    pub fn terms(&self, text: &str) -> String {
        let mut analyzer = self.analyzer.box_clone();
        let mut stream = analyzer.token_stream_for_doc(text);
        let mut out = String::new();
        while stream.advance() {
            let hash = blake3::keyed_hash(&self.terms, stream.token().text.as_bytes());
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&hex(&hash.as_bytes()[..TERM_HEX / 2]));
        }
        out
    }
}

/// Whether this store seals, and with which keys. Keys can arrive while running (`mnemo
/// encrypt`); sealing, once on, stays on.
#[derive(Default)]
pub struct Sealing {
    keys: OnceLock<Keys>,
    on: AtomicBool,
}

/// How far a conversion has come (rows sealed of rows to seal).
#[derive(Default)]
pub struct SealProgress {
    pub running: AtomicBool,
    pub done: AtomicU64,
    pub total: AtomicU64,
}

/// The full-text index of a sealed store: over hashed terms, which must reach it unchanged.
pub const TERMS: &str = "terms";

impl Sealing {
    pub fn keys(&self) -> Option<&Keys> {
        self.keys.get()
    }

    /// Takes the store's keys (a second call with other keys is ignored: one store, one key).
    pub fn set_keys(&self, keys: Keys) {
        let _ = self.keys.set(keys);
    }

    pub fn is_on(&self) -> bool {
        self.on.load(Ordering::Acquire)
    }

    pub fn turn_on(&self) {
        assert!(self.keys().is_some(), "sealing needs keys");
        self.on.store(true, Ordering::Release);
    }

    fn sealing_keys(&self) -> Option<&Keys> {
        self.keys().filter(|_| self.is_on())
    }

    /// The column the full-text index covers, and how it is analysed.
    pub fn text_index(&self) -> (&'static str, FtsIndexBuilder) {
        if self.is_on() {
            let verbatim = FtsIndexBuilder::default()
                .base_tokenizer("whitespace".into())
                .lower_case(false)
                .stem(false)
                .remove_stop_words(false)
                .ascii_folding(false);
            (TERMS, verbatim)
        } else {
            ("content", FtsIndexBuilder::default())
        }
    }

    /// A full-text query for `text` over the indexed column; none when an encrypted store's
    /// analyzer leaves no term of it (only stop words), which matches nothing.
    pub fn text_query(&self, text: &str) -> Option<FullTextSearchQuery> {
        match self.sealing_keys() {
            Some(keys) => {
                let terms = keys.terms(text);
                (!terms.is_empty()).then(|| {
                    FullTextSearchQuery::new(terms)
                        .with_column(TERMS.into())
                        .expect("a column name is a valid column")
                })
            }
            None => Some(FullTextSearchQuery::new(text.to_string())),
        }
    }

    /// What makes two texts the same memory in this store.
    pub fn content_hash(&self, content: &str) -> String {
        match self.sealing_keys() {
            Some(keys) => keys.content_hash(content),
            None => super::schema::content_hash(content),
        }
    }

    /// Rows as they are written: sealed when sealing is on, else as they are.
    pub fn seal<'a>(&self, rows: &'a [MemoryRecord]) -> Cow<'a, [MemoryRecord]> {
        match self.sealing_keys() {
            Some(keys) => Cow::Owned(seal_rows(keys, rows)),
            None => Cow::Borrowed(rows),
        }
    }

    /// Rows sealed with the store's keys whether or not sealing is on yet (a conversion).
    pub fn seal_with_keys(&self, rows: &[MemoryRecord]) -> Result<Vec<MemoryRecord>, StoreError> {
        let keys = self
            .keys()
            .ok_or_else(|| StoreError::Key("sealing rows needs the store's key".into()))?;
        Ok(seal_rows(keys, rows))
    }

    /// Rows as they were read, opened: content and metadata in the clear.
    pub fn open(&self, rows: Vec<MemoryRecord>) -> Result<Vec<MemoryRecord>, StoreError> {
        if !rows.iter().any(|r| r.sealed) {
            return Ok(rows);
        }
        let keys = self.keys().ok_or_else(|| {
            StoreError::Key("a sealed memory was read but no key is loaded".into())
        })?;
        rows.into_iter()
            .map(|mut r| {
                if r.sealed {
                    // Columns a read did not ask for stay empty; only sealed text is opened.
                    if !r.content.is_empty() {
                        r.content = keys.open_text(&r.id, "content", &r.content)?;
                    }
                    if !r.metadata.is_empty() {
                        r.metadata = keys.open_text(&r.id, "metadata", &r.metadata)?;
                    }
                    r.terms = None;
                    r.sealed = false;
                }
                Ok(r)
            })
            .collect()
    }
}

fn seal_rows(keys: &Keys, rows: &[MemoryRecord]) -> Vec<MemoryRecord> {
    rows.iter()
        .map(|r| {
            let mut sealed = r.clone();
            sealed.content_hash = keys.content_hash(&r.content);
            sealed.terms = Some(keys.terms(&r.content));
            sealed.content = keys.seal_text(&r.id, "content", &r.content);
            sealed.metadata = keys.seal_text(&r.id, "metadata", &r.metadata);
            sealed.sealed = true;
            sealed
        })
        .collect()
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
    let digits = text.trim();
    let bytes: Option<Vec<u8>> = (0..digits.len())
        .step_by(2)
        .map(|i| {
            digits
                .get(i..i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
        })
        .collect();
    match bytes.and_then(|b| <[u8; 32]>::try_from(b).ok()) {
        Some(key) => Ok(Some(key)),
        None => Err(StoreError::Key(format!(
            "the key file {} is not a mnemo key (64 hex digits)",
            path.display()
        ))),
    }
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
    let key: [u8; 32] = XChaCha20Poly1305::generate_key(&mut OsRng).into();
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

/// The key in `path`, or a new one there when there is none.
pub fn read_or_create_key_file(path: &Path) -> Result<[u8; 32], StoreError> {
    match read_key_file(path)? {
        Some(key) => Ok(key),
        None => create_key_file(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealing() -> Sealing {
        let s = Sealing::default();
        s.set_keys(Keys::from_master(&[7; 32]));
        s.turn_on();
        s
    }

    #[test]
    fn a_sealed_row_holds_no_word_and_opens_to_what_was_written() {
        let s = sealing();
        let mut r = MemoryRecord::new(
            "default".into(),
            "Quokkas eat leaves".into(),
            Default::default(),
            1,
        );
        r.metadata = r#"{"secret":"wombat"}"#.into();
        let sealed = s.seal(std::slice::from_ref(&r)).into_owned();
        let stored = format!("{:?}", sealed[0]);
        for word in ["Quokka", "quokka", "leaves", "leav", "wombat"] {
            assert!(!stored.contains(word), "{word} in {stored}");
        }
        let opened = s.open(sealed).unwrap().pop().unwrap();
        assert_eq!(opened.content, r.content);
        assert_eq!(opened.metadata, r.metadata);
        assert!(!opened.sealed);
    }

    #[test]
    fn query_terms_hash_like_the_document_terms_after_analysis() {
        let keys = Keys::from_master(&[1; 32]);
        let doc = keys.terms("The quokkas were eating leaves");
        // Stemmed and lower-cased like the plain index: "Quokka" and "eats" match.
        for query in ["Quokka", "eats", "LEAVES"] {
            let q = keys.terms(query);
            assert!(doc.split(' ').any(|t| t == q), "{query}: {q} not in {doc}");
        }
        // Another key hashes to other terms.
        assert_ne!(
            Keys::from_master(&[2; 32]).terms("quokka"),
            keys.terms("quokka")
        );
    }

    #[test]
    fn a_row_moved_to_another_id_or_a_wrong_key_does_not_open() {
        let s = sealing();
        let r = MemoryRecord::new("default".into(), "text".into(), Default::default(), 1);
        let mut sealed = s.seal(std::slice::from_ref(&r)).into_owned();
        sealed[0].id = "another".into();
        assert!(matches!(s.open(sealed), Err(StoreError::Key(_))));
        let wrong = Sealing::default();
        wrong.set_keys(Keys::from_master(&[8; 32]));
        let sealed = s.seal(std::slice::from_ref(&r)).into_owned();
        assert!(wrong.open(sealed).is_err());
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
}
