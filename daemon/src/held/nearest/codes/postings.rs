//! One term's postings for the words held (`words.rs`): each a varint of its row's distance
//! from the one before, its count and its generation, 3–4 bytes a posting rather than 8 (the
//! words of `mnemo bench search`'s 100k memories, 2.2M postings and 100k terms, 16.7 MB →
//! 10.9). A long list keeps a skip every [`SKIP_EVERY`] postings, so a search that only needs
//! a few rows of it (the rows that can still reach its best results) decodes near those rows
//! alone.

use smallvec::SmallVec;

/// Postings between skips: a seek decodes at most this many. 8 bytes a skip, ~1/200 of
/// what the postings take.
pub(super) const SKIP_EVERY: u32 = 64;

/// One row's occurrences of a term.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Posting {
    pub(super) row: u32,
    /// The row's generation when these words were held (see `Words::generation`).
    pub(super) generation: u16,
    pub(super) count: u16,
}

/// A term's postings, encoded one after another (see the module's doc).
#[derive(Default)]
pub(super) struct Postings {
    /// Inline up to 16 bytes: most terms are held by a row or two (a name, a number), and a
    /// vector each had cost a heap block besides (~32 MB at 1M memories naming one each).
    pub(super) bytes: SmallVec<[u8; 16]>,
    pub(super) len: u32,
    /// The row of the last posting, which the next one's distance is from.
    last: u32,
}

/// Where decoding can start part way through a term's postings: the row of the posting
/// before and the byte the next one starts at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Skip {
    before: u32,
    at: u32,
}

fn push_varint(bytes: &mut SmallVec<[u8; 16]>, mut v: u64) {
    while v >= 0x80 {
        bytes.push(v as u8 | 0x80);
        v >>= 7;
    }
    bytes.push(v as u8);
}

fn read_varint(bytes: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = bytes[*at];
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// The posting at byte `at` after one of row `row`, and the byte after it; None at the end.
fn decode(bytes: &[u8], mut at: usize, row: i64) -> Option<(Posting, usize)> {
    if at == bytes.len() {
        return None;
    }
    let zigzag = read_varint(bytes, &mut at);
    let row = row + ((zigzag >> 1) as i64 ^ -((zigzag & 1) as i64));
    let count = read_varint(bytes, &mut at) as u16;
    let generation = read_varint(bytes, &mut at) as u16;
    let posting = Posting {
        row: row as u32,
        generation,
        count,
    };
    Some((posting, at))
}

impl Postings {
    /// Whether a posting for `row` would come before the last one: a row replaced in place.
    /// Such a list can no longer be entered at its skips.
    pub(super) fn goes_back(&self, row: u32) -> bool {
        self.len > 0 && row < self.last
    }

    /// The skip the next posting starts, when one is due.
    pub(super) fn skip_due(&self) -> Option<Skip> {
        (self.len > 0 && self.len.is_multiple_of(SKIP_EVERY)).then_some(Skip {
            before: self.last,
            at: self.bytes.len() as u32,
        })
    }

    pub(super) fn push(&mut self, p: Posting) {
        // Rows come in order but for a row replaced in place: a distance back is zigzagged.
        let distance = i64::from(p.row) - i64::from(self.last);
        push_varint(&mut self.bytes, ((distance << 1) ^ (distance >> 63)) as u64);
        push_varint(&mut self.bytes, u64::from(p.count));
        push_varint(&mut self.bytes, u64::from(p.generation));
        self.last = p.row;
        self.len += 1;
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = Posting> + '_ {
        let (mut at, mut row) = (0usize, 0i64);
        std::iter::from_fn(move || {
            let (posting, next) = decode(&self.bytes, at, row)?;
            (at, row) = (next, i64::from(posting.row));
            Some(posting)
        })
    }

    /// A cursor for rows asked in ascending order, entering at `skips` (those of a list
    /// whose rows never went back).
    pub(super) fn cursor<'a>(&'a self, skips: &'a [Skip]) -> Cursor<'a> {
        Cursor {
            bytes: &self.bytes,
            skips,
            at: 0,
            row: 0,
        }
    }
}

/// A position in a term's postings, moved forward by [`Cursor::count_at`].
pub(super) struct Cursor<'a> {
    bytes: &'a [u8],
    skips: &'a [Skip],
    at: usize,
    /// The row of the posting before `at`.
    row: i64,
}

impl Cursor<'_> {
    /// How often the term occurs in row `row` as held at `generation` (0 if not), from the
    /// postings past the cursor; leaves the cursor after the postings of rows up to `row`.
    /// Rows are asked in ascending order.
    pub(super) fn count_at(&mut self, row: u32, generation: u16) -> u16 {
        // The last skip whose row before is below `row`: no posting of `row` lies before it.
        let k = self.skips.partition_point(|s| s.before < row);
        if let Some(skip) = k.checked_sub(1).map(|k| self.skips[k]) {
            if skip.at as usize > self.at {
                (self.at, self.row) = (skip.at as usize, i64::from(skip.before));
            }
        }
        let mut count = 0;
        while let Some((posting, next)) = decode(self.bytes, self.at, self.row) {
            if posting.row > row {
                break;
            }
            if posting.row == row && posting.generation == generation {
                count = posting.count;
            }
            (self.at, self.row) = (next, i64::from(posting.row));
        }
        count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postings_read_back_as_pushed_in_any_row_order() {
        let pushed = [
            (0, 0, 1),
            (1, 0, 3),
            (200, 1, 1),
            (70_000, 0, u16::MAX),
            (5, 2, 2),
            (u32::MAX, u16::MAX, 1),
            (0, 0, 1),
        ]
        .map(|(row, generation, count)| Posting {
            row,
            generation,
            count,
        });
        let mut postings = Postings::default();
        pushed.iter().for_each(|&p| postings.push(p));
        assert_eq!(postings.iter().collect::<Vec<_>>(), pushed);
        assert_eq!(postings.len, 7);
        // Near rows, counted once, generation 0: three bytes a posting.
        let mut near = Postings::default();
        (0..100).for_each(|row| {
            near.push(Posting {
                row: row * 3,
                generation: 0,
                count: 1,
            })
        });
        assert_eq!(near.bytes.len(), 300);
    }

    /// Postings of every third row (count the row's remainder by 5, plus 1), with the skips
    /// they keep.
    fn every_third(rows: u32) -> (Postings, Vec<Skip>) {
        let (mut postings, mut skips) = (Postings::default(), Vec::new());
        for row in (0..rows).step_by(3) {
            assert!(!postings.goes_back(row));
            skips.extend(postings.skip_due());
            let count = (row % 5 + 1) as u16;
            postings.push(Posting {
                row,
                generation: 0,
                count,
            });
        }
        (postings, skips)
    }

    #[test]
    fn a_cursor_finds_each_rows_count_entering_at_the_skips() {
        let (postings, skips) = every_third(3000);
        assert_eq!(skips.len(), (1000 - 1) / SKIP_EVERY as usize);
        let asked = [0u32, 1, 3, 190, 192, 193, 1500, 2997, 2998, 5000];
        for skips in [&skips[..], &[]] {
            let mut cursor = postings.cursor(skips);
            let found: Vec<u16> = asked.iter().map(|&r| cursor.count_at(r, 0)).collect();
            let expected: Vec<u16> = asked
                .iter()
                .map(|&r| {
                    if r % 3 == 0 && r < 3000 {
                        (r % 5 + 1) as u16
                    } else {
                        0
                    }
                })
                .collect();
            assert_eq!(found, expected);
        }
        // A posting of an older generation of the row counts for nothing.
        assert_eq!(postings.cursor(&skips).count_at(6, 1), 0);
        // Skips seek forward only: a cursor past a row finds nothing more of it.
        let mut cursor = postings.cursor(&skips);
        assert_eq!(cursor.count_at(2400, 0), 1);
        assert_eq!(cursor.count_at(3, 0), 0);
    }

    #[test]
    fn a_row_before_the_last_goes_back() {
        let (postings, _) = every_third(30);
        assert!(postings.goes_back(5) && !postings.goes_back(27) && !postings.goes_back(40));
        assert!(!Postings::default().goes_back(0));
    }
}
