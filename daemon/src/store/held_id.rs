//! A memory's id as held in memory for every current memory (the codes' rows, the known
//! texts): a UUID written as the store writes ids (all it makes) in its 16 bytes, any other
//! id (an import keeps its own) as text. 24 bytes a row, where the text took 36 plus its
//! place (8) laid end to end, or 48 boxed on the heap.

/// See the module's doc.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HeldId {
    Uuid([u8; 16]),
    Text(Box<str>),
}

impl HeldId {
    pub fn new(id: &str) -> Self {
        match uuid::Uuid::try_parse(id) {
            Ok(u)
                if *u
                    .hyphenated()
                    .encode_lower(&mut uuid::Uuid::encode_buffer())
                    == *id =>
            {
                Self::Uuid(u.into_bytes())
            }
            _ => Self::Text(id.into()),
        }
    }

    /// Whether this is `id`, as written.
    pub fn is(&self, id: &str) -> bool {
        match self {
            Self::Uuid(bytes) => {
                *uuid::Uuid::from_bytes(*bytes)
                    .hyphenated()
                    .encode_lower(&mut uuid::Uuid::encode_buffer())
                    == *id
            }
            Self::Text(text) => **text == *id,
        }
    }

    /// The id as it was written.
    pub fn text(&self) -> String {
        match self {
            Self::Uuid(bytes) => uuid::Uuid::from_bytes(*bytes).hyphenated().to_string(),
            Self::Text(id) => id.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_kept_as_written() {
        assert_eq!(std::mem::size_of::<HeldId>(), 24);
        let made = uuid::Uuid::now_v7().to_string();
        assert!(matches!(HeldId::new(&made), HeldId::Uuid(_)));
        assert!(HeldId::new(&made).is(&made));
        // Forms a UUID parses from but the store does not write stay text, so the id
        // looked up is the one stored.
        for id in [made.to_uppercase(), made.replace('-', ""), "b".to_string()] {
            assert_eq!(HeldId::new(&id), HeldId::Text(id.as_str().into()));
            assert!(!HeldId::new(&made).is(&id));
        }
        for id in [made.clone(), made.to_uppercase(), "b".to_string()] {
            assert_eq!(HeldId::new(&id).text(), id);
            assert!(HeldId::new(&id).is(&id));
        }
    }
}
