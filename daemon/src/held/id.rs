//! A memory's id as held in memory for every current memory (the codes' rows, the known
//! texts): a UUID written as the store writes ids (all it makes) in its 16 bytes, any other
//! id (an import keeps its own) as text on the heap. 16 bytes a row, where the text took 36
//! plus its place (8) laid end to end, or 48 boxed on the heap.

use std::num::NonZeroU64;

/// See the module's doc.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HeldId {
    /// The UUID's bytes as two big-endian halves. The first half of every UUID the store
    /// makes holds its time, so is never 0: that spare value tells the text apart, which
    /// makes the whole 16 bytes rather than 24 (at 1M memories 16 MB less, held twice).
    Uuid(NonZeroU64, u64),
    /// Any other id; boxed twice so its place takes 8 bytes.
    Text(Box<Box<str>>),
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
                let (high, low) = u.as_u64_pair();
                match NonZeroU64::new(high) {
                    Some(high) => Self::Uuid(high, low),
                    None => Self::boxed(id),
                }
            }
            _ => Self::boxed(id),
        }
    }

    fn boxed(id: &str) -> Self {
        Self::Text(Box::new(id.into()))
    }

    /// Whether this is `id`, as written.
    pub fn is(&self, id: &str) -> bool {
        match self {
            Self::Uuid(high, low) => {
                *uuid::Uuid::from_u64_pair(high.get(), *low)
                    .hyphenated()
                    .encode_lower(&mut uuid::Uuid::encode_buffer())
                    == *id
            }
            Self::Text(text) => ***text == *id,
        }
    }

    /// The id as it was written.
    pub fn text(&self) -> String {
        match self {
            Self::Uuid(high, low) => uuid::Uuid::from_u64_pair(high.get(), *low)
                .hyphenated()
                .to_string(),
            Self::Text(id) => id.to_string(),
        }
    }

    /// What it holds on the heap beside its 16 bytes.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Self::Uuid(..) => 0,
            Self::Text(id) => std::mem::size_of::<Box<str>>() + id.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_kept_as_written() {
        assert_eq!(std::mem::size_of::<HeldId>(), 16);
        let made = uuid::Uuid::now_v7().to_string();
        assert!(matches!(HeldId::new(&made), HeldId::Uuid(..)));
        assert!(HeldId::new(&made).is(&made));
        assert_eq!(HeldId::new(&made).heap_bytes(), 0);
        // Forms a UUID parses from but the store does not write stay text, so the id
        // looked up is the one stored; so do UUIDs whose first half is 0, which the
        // store never makes.
        let zero_first_half = "00000000-0000-0000-0000-00000000002a".to_string();
        let others = [
            made.to_uppercase(),
            made.replace('-', ""),
            "b".to_string(),
            zero_first_half.clone(),
            uuid::Uuid::nil().to_string(),
        ];
        for id in &others {
            assert_eq!(HeldId::new(id), HeldId::Text(Box::new(id.as_str().into())));
            assert_eq!(HeldId::new(id).heap_bytes(), 16 + id.len());
            assert!(!HeldId::new(&made).is(id));
        }
        assert!(!HeldId::new(&zero_first_half).is(&uuid::Uuid::nil().to_string()));
        for id in others.iter().chain([&made]) {
            assert_eq!(HeldId::new(id).text(), *id);
            assert!(HeldId::new(id).is(id));
        }
    }
}
