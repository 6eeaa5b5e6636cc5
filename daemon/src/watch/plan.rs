//! What a note's new text changes among the memories it made before: paragraphs whose text is
//! unchanged are kept (restamped when their heading or file moved), a changed paragraph
//! supersedes the old one under the same heading, new ones are added and vanished ones
//! forgotten. Pure, so every case is a unit test.

/// A current memory made from a paragraph of a note.
#[derive(Debug, Clone, PartialEq)]
pub struct Owned {
    pub id: String,
    /// The stored content hash (keyed in an encrypted store).
    pub hash: String,
    pub heading: String,
    /// The file it came from, as its source says.
    pub path: String,
}

/// A paragraph of the note as it is now.
#[derive(Debug, Clone, PartialEq)]
pub struct Paragraph {
    pub hash: String,
    pub heading: String,
}

#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    /// Unchanged text whose heading or file is not what the memory says: `(old, new)` indexes.
    pub restamp: Vec<(usize, usize)>,
    /// Unchanged and where it was: `(old, new)`.
    pub keep: Vec<(usize, usize)>,
    /// Changed text under the same heading: the old memory is superseded by the new paragraph.
    pub update: Vec<(usize, usize)>,
    /// New paragraphs.
    pub add: Vec<usize>,
    /// Old memories whose paragraph is gone.
    pub forget: Vec<usize>,
}

pub fn plan(old: &[Owned], new: &[Paragraph], path: &str) -> Plan {
    let mut plan = Plan::default();
    let mut old_taken = vec![false; old.len()];
    let mut new_taken = vec![false; new.len()];
    // The same text: prefer the same heading, so two identical paragraphs keep their places.
    for same_heading in [true, false] {
        for (n, p) in new.iter().enumerate() {
            if new_taken[n] {
                continue;
            }
            let found = old.iter().enumerate().position(|(o, m)| {
                !old_taken[o] && m.hash == p.hash && (!same_heading || m.heading == p.heading)
            });
            if let Some(o) = found {
                old_taken[o] = true;
                new_taken[n] = true;
                if old[o].heading == p.heading && old[o].path == path {
                    plan.keep.push((o, n));
                } else {
                    plan.restamp.push((o, n));
                }
            }
        }
    }
    // Changed text: the first leftover memory under the same heading, in order.
    for (n, p) in new.iter().enumerate() {
        if new_taken[n] {
            continue;
        }
        let found = (0..old.len()).find(|&o| !old_taken[o] && old[o].heading == p.heading);
        match found {
            Some(o) => {
                old_taken[o] = true;
                plan.update.push((o, n));
            }
            None => plan.add.push(n),
        }
    }
    plan.forget = (0..old.len()).filter(|&o| !old_taken[o]).collect();
    plan
}

/// Whether a note that appeared is the one that vanished, moved: at least half of the
/// vanished note's paragraphs are in it.
pub fn is_move(vanished: &[Owned], appeared: &[Paragraph]) -> bool {
    if vanished.is_empty() {
        return false;
    }
    let shared = vanished
        .iter()
        .filter(|m| appeared.iter().any(|p| p.hash == m.hash))
        .count();
    shared * 2 >= vanished.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(id: &str, hash: &str, heading: &str) -> Owned {
        Owned {
            id: id.into(),
            hash: hash.into(),
            heading: heading.into(),
            path: "a.md".into(),
        }
    }

    fn para(hash: &str, heading: &str) -> Paragraph {
        Paragraph {
            hash: hash.into(),
            heading: heading.into(),
        }
    }

    #[test]
    fn editing_one_paragraph_updates_exactly_that_one() {
        let old = [
            owned("1", "a", "H"),
            owned("2", "b", "H"),
            owned("3", "c", "J"),
        ];
        let new = [para("a", "H"), para("b2", "H"), para("c", "J")];
        let p = plan(&old, &new, "a.md");
        assert_eq!(p.keep, vec![(0, 0), (2, 2)]);
        assert_eq!(p.update, vec![(1, 1)]);
        assert!(p.add.is_empty() && p.forget.is_empty() && p.restamp.is_empty());
    }

    #[test]
    fn inserted_and_removed_paragraphs_are_added_and_forgotten() {
        let old = [owned("1", "a", ""), owned("2", "b", "Old")];
        let new = [para("x", ""), para("a", "")];
        let p = plan(&old, &new, "a.md");
        assert_eq!(p.keep, vec![(0, 1)]);
        assert_eq!(p.add, vec![0]);
        assert_eq!(p.forget, vec![1]);
    }

    #[test]
    fn a_paragraph_under_a_renamed_heading_or_in_a_moved_file_is_restamped() {
        let old = [owned("1", "a", "Todo")];
        let p = plan(&old, &[para("a", "Done")], "a.md");
        assert_eq!(p.restamp, vec![(0, 0)]);
        let p = plan(&old, &[para("a", "Todo")], "b.md");
        assert_eq!(p.restamp, vec![(0, 0)]);
    }

    #[test]
    fn a_move_is_told_by_shared_paragraphs() {
        let old = [owned("1", "a", ""), owned("2", "b", "")];
        assert!(is_move(&old, &[para("a", ""), para("z", "")]));
        assert!(!is_move(&old, &[para("y", ""), para("z", "")]));
        assert!(!is_move(&[], &[para("a", "")]));
    }
}
