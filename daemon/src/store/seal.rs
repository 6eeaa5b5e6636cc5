//! Encryption at rest (opt-in, `[security] encrypt = true` or `mnemo encrypt`).
//!
//! A sealed row keeps its content and metadata as XChaCha20-Poly1305 ciphertext bound to the
//! row's id and column; its full-text terms as keyed hashes of the terms LanceDB's own
//! analyzer would index (so search finds the same rows, and the index holds no word); and its
//! content hash keyed (so equal texts cannot be probed from outside). Every key comes from one
//! 32-byte master key (kept by `keystore`). What stays plain: ids, namespaces, tags, times, scores
//! and vectors (the README says what vectors reveal).

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

use base64::Engine as _;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use lance_index::scalar::inverted::tokenizer::document_tokenizer::LanceTokenizer;
use lance_tokenizer::TokenStream;
use lancedb::index::scalar::{FtsIndexBuilder, FullTextSearchQuery};
use mnemo_protocol::daemon::KeyLocation;

use super::error::StoreError;
use super::keystore::MasterKey;
use super::schema::{hex, normalized_for_hash, MemoryRecord};

const NONCE_BYTES: usize = 24;
/// Hex digits of a term hash: 64 bits, no collision in any vocabulary a person has.
const TERM_HEX: usize = 16;

/// The keys of one store, all derived from its master key.
pub struct Keys {
    aead: XChaCha20Poly1305,
    terms: [u8; 32],
    hashes: [u8; 32],
    entities: [u8; 32],
}

thread_local! {
    /// LanceDB's default analyzer, as the full-text index of a plain store has it: one a
    /// thread, since a clone of it for each text (reading the words of 100k memories) cost
    /// more than the analysis.
    static ANALYZER: std::cell::RefCell<Box<dyn LanceTokenizer>> = std::cell::RefCell::new(
        FtsIndexBuilder::default()
            .build()
            .expect("LanceDB's default analyzer builds"),
    );
}

/// The tokens LanceDB's default analyzer finds in `text`, in order and with repeats.
fn analyzed(text: &str) -> Vec<String> {
    ANALYZER.with_borrow_mut(|analyzer| {
        let mut stream = analyzer.token_stream_for_doc(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push(stream.token().text.clone());
        }
        out
    })
}

/// What `meta` records of a master key: tells the right key from a wrong one without
/// decrypting rows (and without deriving every key).
pub fn key_check(master: &[u8; 32]) -> String {
    hex(&blake3::derive_key("mnemo 2026-11 key check", master)[..16])
}

impl Keys {
    pub fn from_master(master: &[u8; 32]) -> Self {
        let derive = |context: &str| blake3::derive_key(context, master);
        let aead_key = derive("mnemo 2026-11 memory content encryption");
        Self {
            aead: XChaCha20Poly1305::new(&aead_key.into()),
            terms: derive("mnemo 2026-11 full-text term hashing"),
            hashes: derive("mnemo 2026-11 content hashing"),
            entities: derive("mnemo 2026-11 entity name hashing"),
        }
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

    /// An entity's folded name, keyed: `#` and 16 hex digits (a folded name never starts
    /// with `#`, so a row sealed twice keeps its keys).
    pub fn entity_key(&self, folded: &str) -> String {
        if folded.starts_with('#') {
            return folded.to_string();
        }
        let hash = blake3::keyed_hash(&self.entities, folded.as_bytes());
        format!("#{}", hex(&hash.as_bytes()[..TERM_HEX / 2]))
    }

    /// The terms LanceDB's analyzer finds in `text` (lower-cased, stemmed, stop words out),
    /// each as a keyed hash, in order and with repeats (so BM25 sees the same frequencies).
    pub fn terms(&self, text: &str) -> String {
        self.hashed_terms(text).join(" ")
    }

    /// [`Keys::terms`], one by one.
    fn hashed_terms(&self, text: &str) -> Vec<String> {
        analyzed(text)
            .into_iter()
            .map(|t| hex(&blake3::keyed_hash(&self.terms, t.as_bytes()).as_bytes()[..TERM_HEX / 2]))
            .collect()
    }
}

/// Whether this store seals, and with which keys. Keys can arrive while running (`mnemo
/// encrypt`); sealing, once on, stays on.
#[derive(Default)]
pub struct Sealing {
    keys: OnceLock<(Keys, KeyLocation)>,
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
        self.keys.get().map(|(keys, _)| keys)
    }

    /// Where the master key is kept, once the store has one.
    pub fn key_location(&self) -> Option<&KeyLocation> {
        self.keys.get().map(|(_, location)| location)
    }

    /// Takes the store's keys (a second call with other keys is ignored: one store, one key).
    pub fn set_keys(&self, master: &MasterKey) {
        let _ = self
            .keys
            .set((Keys::from_master(&master.bytes), master.location.clone()));
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

    /// The tokens the full-text index finds in `text` (a query, or a row's plain content):
    /// LanceDB's analyzer's, hashed in an encrypted store.
    pub fn words(&self, text: &str) -> Vec<String> {
        match self.sealing_keys() {
            Some(keys) => keys.hashed_terms(text),
            None => analyzed(text),
        }
    }

    /// The tokens the full-text index finds in `record` as read from the table with the
    /// column [`Sealing::text_index`] names (the hashed terms of an encrypted store).
    pub fn stored_words(&self, record: &MemoryRecord) -> Vec<String> {
        if self.is_on() {
            let terms = record.terms.as_deref().unwrap_or_default();
            terms.split_whitespace().map(str::to_string).collect()
        } else {
            analyzed(&record.content)
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

    /// How an entity's folded name is stored here: keyed in an encrypted store.
    pub fn entity_key(&self, folded: &str) -> String {
        match self.sealing_keys() {
            Some(keys) => keys.entity_key(folded),
            None => folded.to_string(),
        }
    }

    /// A short text of another table's row (an entity's name) as stored: sealed to that row
    /// and column when sealing is on, else as it is. The flag says which.
    pub fn seal_label(&self, row: &str, column: &str, plain: &str) -> (String, bool) {
        match self.sealing_keys() {
            Some(keys) => (keys.seal_text(row, column, plain), true),
            None => (plain.to_string(), false),
        }
    }

    /// A text [`Sealing::seal_label`] stored, in the clear.
    pub fn open_label(
        &self,
        row: &str,
        column: &str,
        stored: &str,
        sealed: bool,
    ) -> Result<String, StoreError> {
        if !sealed {
            return Ok(stored.to_string());
        }
        let keys = self.keys().ok_or_else(|| {
            StoreError::Key(format!("{column} of {row} is sealed and no key is loaded"))
        })?;
        keys.open_text(row, column, stored)
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
            sealed.entities = r.entities.iter().map(|e| keys.entity_key(e)).collect();
            sealed.targets = r.targets.iter().map(|t| keys.entity_key(t)).collect();
            sealed.content = keys.seal_text(&r.id, "content", &r.content);
            sealed.metadata = keys.seal_text(&r.id, "metadata", &r.metadata);
            sealed.sealed = true;
            sealed
        })
        .collect()
}

#[cfg(test)]
pub mod tests {
    use super::*;

    pub fn test_key(byte: u8) -> MasterKey {
        MasterKey {
            bytes: [byte; 32],
            location: KeyLocation::File {
                path: "test".into(),
            },
        }
    }

    fn sealing() -> Sealing {
        let s = Sealing::default();
        s.set_keys(&test_key(7));
        s.turn_on();
        s
    }

    /// The words held for a row are the tokens its full-text index holds: LanceDB's
    /// analyzer's of its content, or in an encrypted store the hashed terms stored.
    #[test]
    fn a_rows_words_as_stored_are_the_words_of_its_text() {
        let plain = Sealing::default();
        let r = MemoryRecord::new(
            "default".into(),
            "The Quokkas were eating leaves".into(),
            Default::default(),
            1,
        );
        assert_eq!(plain.words(&r.content), ["quokka", "eat", "leav"]);
        assert_eq!(plain.stored_words(&r), plain.words(&r.content));
        let s = sealing();
        let sealed = s.seal(std::slice::from_ref(&r)).into_owned();
        let words = s.stored_words(&sealed[0]);
        assert_eq!(words, s.words(&r.content));
        assert_eq!(words.len(), 3);
        assert!(words
            .iter()
            .all(|w| w.len() == TERM_HEX && !w.contains("quokka")));
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
        r.entities = vec!["rottnest island".into()];
        let sealed = s.seal(std::slice::from_ref(&r)).into_owned();
        let stored = format!("{:?}", sealed[0]);
        for word in ["Quokka", "quokka", "leaves", "leav", "wombat", "rottnest"] {
            assert!(!stored.contains(word), "{word} in {stored}");
        }
        assert_eq!(
            sealed[0].entities,
            vec![s.entity_key("rottnest island")],
            "entity names are stored as the keys a query looks them up by"
        );
        let twice = s.seal(&sealed).into_owned();
        assert_eq!(twice[0].entities, sealed[0].entities, "sealing keeps keys");
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
        wrong.set_keys(&test_key(8));
        let sealed = s.seal(std::slice::from_ref(&r)).into_owned();
        assert!(wrong.open(sealed).is_err());
    }
}
