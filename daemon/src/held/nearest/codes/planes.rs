//! The held vectors' codes: each vector divided by its largest component, times 127, as
//! signed bytes (plus 128, so unsigned), with what rounding left. They lie in two planes of
//! half-bytes: the top four bits of every code, which a scan streams (at 100k MiniLM rows
//! 19 MB rather than 38, and the scan is bound by memory bandwidth), and the bottom four,
//! which only the ranking of the scan's best rows reads; the remainders lie alike. The
//! bottom bits and the remainders of a row lie together in the tail (`tail.rs`), which the
//! daemon keeps in a file where it can.
//!
//! Signed planes (past `store.advanced.vectors_in_memory_max_rows`, with `store.advanced.vector_signs`) hold
//! only two bits for each component of a row's rotation in memory (`signs.rs`), 128 bytes a
//! MiniLM row where the top bits took 192, and keep the top bits in the tail too: at 1M
//! rows the scan then streams the 64 MB of sign bits, the magnitude bits are read for its
//! best rows, and the file holds the rest.

use std::path::Path;

use super::prefetch::prefetch;
use super::signs::{sign_words, RowSigns};
use super::tail::{Read, Tail, Wait};
use crate::linalg::lane_sum;

/// What the tail holds, for the log.
const RANKING_PARTS: &str = "the vectors' codes' ranking parts";

/// Appends `vector`'s codes to `out` and returns its scale: the product of two rows'
/// scales turns the dot product of their codes into their cosine (a query's own scale moves
/// every score alike, so a search leaves it out). `rest`, when given, is told what rounding
/// left of each component, in code steps.
pub(super) fn quantize(vector: &[f32], out: &mut Vec<i8>, mut rest: Option<&mut Vec<f32>>) -> f32 {
    let largest = vector.iter().fold(0f32, |m, x| m.max(x.abs()));
    let length = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    let zero = largest == 0.0 || length == 0.0;
    for x in vector {
        let step = if zero { 0.0 } else { x / largest * 127.0 };
        out.push(step.round() as i8);
        if let Some(rest) = rest.as_mut() {
            rest.push(step - step.round());
        }
    }
    if zero {
        return 0.0;
    }
    largest / 127.0 / length
}

/// Bytes a row of `dim` components takes in each plane: byte `j` holds component `j` in
/// its low half and component `j + plane_bytes(dim)` in its high half, so a scan reads both
/// halves of a byte against two runs of the query.
pub(super) fn plane_bytes(dim: usize) -> usize {
    dim.div_ceil(2)
}

/// Rows' codes and remainders, row after row, [`plane_bytes`] a row in each plane.
#[derive(Default)]
pub(super) struct Planes {
    /// Bytes a row.
    width: usize,
    /// The codes' top four bits, where held in memory (empty in signed planes).
    highs: Vec<u8>,
    /// In signed planes, each row's sign bits ([`sign_words`] a row), which a scan reads
    /// in place of the top bits.
    signs: Vec<u64>,
    /// In signed planes, which of each row's components lie past its threshold (see
    /// [`RowSigns`]), which weigh the scan's best rows again.
    magnitudes: Vec<u64>,
    /// In signed planes, what turns each row's product with a query into an estimated
    /// cosine: by its signs, and by its levels (see [`RowSigns`]).
    sign_scales: Vec<f32>,
    fine_scales: Vec<f32>,
    signed: bool,
    /// Each row's bottom four bits, then what rounding to its codes left in fifteenths of a
    /// code step (8 is none); in signed planes, after its top bits.
    tail: Tail,
}

impl Planes {
    pub(super) fn new(dim: usize) -> Self {
        let width = plane_bytes(dim);
        Self {
            width,
            tail: Tail::new(RANKING_PARTS, 2 * width),
            ..Default::default()
        }
    }

    /// Planes that hold two bits a component of each row in memory, and the whole of its
    /// codes in the tail.
    pub(super) fn signed(dim: usize) -> Self {
        let width = plane_bytes(dim);
        Self {
            width,
            signed: true,
            tail: Tail::new(RANKING_PARTS, 3 * width),
            ..Default::default()
        }
    }

    /// Whether the planes hold sign bits (a scan reads [`Planes::signs`]) rather than top
    /// bits.
    pub(super) fn is_signed(&self) -> bool {
        self.signed
    }

    /// Whether the tails lie in a file (or all in memory).
    pub(super) fn tail_in_file(&self) -> bool {
        self.tail.in_file()
    }

    /// Asks the kernel to hold the tails' file in its cache ([`Tail::keep_cached`]).
    pub(super) fn keep_cached(&self, room: &mut u64) -> u64 {
        self.tail.keep_cached(room)
    }

    /// Every row's sign bits, row after row (signed planes).
    pub(super) fn signs(&self) -> &[u64] {
        &self.signs
    }

    /// Every row's magnitude bits, row after row (signed planes).
    pub(super) fn magnitudes(&self) -> &[u64] {
        &self.magnitudes
    }

    /// Every row's scale for its sign bits (see [`RowSigns`]).
    pub(super) fn sign_scales(&self) -> &[f32] {
        &self.sign_scales
    }

    /// Every row's scale for its levels (see [`RowSigns`]).
    pub(super) fn fine_scales(&self) -> &[f32] {
        &self.fine_scales
    }

    /// Planes whose tails lie in a file in `dir` where one can be made.
    pub(super) fn writing_to(self, dir: &Path) -> Self {
        Self {
            tail: self.tail.writing_to(dir),
            ..self
        }
    }

    /// The top bits of every row, row after row: what a scan reads.
    pub(super) fn highs(&self) -> &[u8] {
        &self.highs
    }

    pub(super) fn reserve(&mut self, rows: usize) {
        if self.signed {
            let words = rows * sign_words(2 * self.width);
            self.signs.reserve_exact(words);
            self.magnitudes.reserve_exact(words);
            self.sign_scales.reserve_exact(rows);
            self.fine_scales.reserve_exact(rows);
        } else {
            self.highs.reserve_exact(rows * self.width);
        }
        self.tail.reserve(rows);
    }

    pub(super) fn shrink_to_fit(&mut self) {
        self.highs.shrink_to_fit();
        self.signs.shrink_to_fit();
        self.magnitudes.shrink_to_fit();
        self.sign_scales.shrink_to_fit();
        self.fine_scales.shrink_to_fit();
        self.tail.shrink_to_fit();
    }

    /// Lets every row go.
    pub(super) fn clear(&mut self) {
        *self = Self::new(0);
    }

    /// Bytes allocated in memory.
    pub(super) fn bytes(&self) -> usize {
        self.highs.capacity()
            + (self.signs.capacity() + self.magnitudes.capacity()) * 8
            + (self.sign_scales.capacity() + self.fine_scales.capacity()) * 4
            + self.tail.bytes()
    }

    /// Appends `vector`'s row (of the planes' dimension); returns its scale (see
    /// [`quantize`]).
    pub(super) fn push(&mut self, vector: &[f32]) -> f32 {
        let (highs, tail, scale) = self.row(vector);
        if self.signed {
            let row = RowSigns::of(vector);
            self.signs.extend(row.signs);
            self.magnitudes.extend(row.magnitudes);
            self.sign_scales.push(row.scale);
            self.fine_scales.push(row.fine_scale);
            self.tail.push(&[highs, tail].concat());
        } else {
            self.highs.extend_from_slice(&highs);
            self.tail.push(&tail);
        }
        scale
    }

    /// `vector`'s top bits, the rest of its codes (bottom bits and remainders), and its
    /// scale.
    fn row(&self, vector: &[f32]) -> (Vec<u8>, Vec<u8>, f32) {
        let (mut codes, mut rests) = (Vec::new(), Vec::new());
        let scale = quantize(vector, &mut codes, Some(&mut rests));
        let half = self.width;
        let code = |j: usize| codes.get(j).map_or(128, |&c| (i16::from(c) + 128) as u8);
        // Each remainder as 1..=15 (8 is none): a half-byte.
        let rest = |j: usize| {
            rests
                .get(j)
                .map_or(8, |r| ((r * 15.0).round().clamp(-7.0, 7.0) as i8 + 8) as u8)
        };
        let mut highs = Vec::with_capacity(half);
        let mut tail = vec![0; 2 * half];
        for b in 0..half {
            let (first, second) = (code(b), code(b + half));
            highs.push(first >> 4 | second & 0xf0);
            tail[b] = first & 15 | second << 4;
            tail[half + b] = rest(b) | rest(b + half) << 4;
        }
        (highs, tail, scale)
    }

    /// Puts `vector`'s row in place of row `i`; returns its scale.
    pub(super) fn set(&mut self, i: usize, vector: &[f32]) -> f32 {
        let (highs, tail, scale) = self.row(vector);
        if self.signed {
            let words = sign_words(2 * self.width);
            let row = RowSigns::of(vector);
            self.signs[i * words..][..words].copy_from_slice(&row.signs);
            self.magnitudes[i * words..][..words].copy_from_slice(&row.magnitudes);
            self.sign_scales[i] = row.scale;
            self.fine_scales[i] = row.fine_scale;
            self.tail.set(i, &[highs, tail].concat());
        } else {
            self.highs[i * self.width..][..self.width].copy_from_slice(&highs);
            self.tail.set(i, &tail);
        }
        scale
    }

    /// Row `i`'s product with `query`, its components in code steps: its codes and what
    /// rounding left. Where its tail cannot be read (the file failed), from its top bits
    /// alone, each taken at the middle of its step (in signed planes, whose top bits lie in
    /// the tail, every component at the middle code). The tail is read into `tail`, which a
    /// search's ranking reuses for each of its thousands of rows. None where `wait` is
    /// [`Wait::No`] and the tail is not in the kernel's cache (its read is then under way).
    pub(super) fn product_as(
        &self,
        i: usize,
        query: &[f32],
        tail: &mut Vec<u8>,
        wait: Wait,
    ) -> Option<f32> {
        tail.resize(self.tail.width(), 0);
        match self.tail.read_as(i, tail, wait) {
            Read::Done => {}
            Read::Pending => return None,
            Read::Failed => tail.fill(0x88),
        }
        let (highs, tail) = if self.signed {
            tail.split_at(self.width)
        } else {
            (&self.highs[i * self.width..][..self.width], &tail[..])
        };
        let (lows, rests) = tail.split_at(self.width);
        // The product of `query` with the components the halves `shift` of the bytes hold.
        let part = |query: &[f32], shift: u8| {
            let n = query.len().min(self.width);
            let (highs, lows, rests) = (&highs[..n], &lows[..n], &rests[..n]);
            lane_sum(n, |i| {
                let code = (highs[i] >> shift & 15) << 4 | (lows[i] >> shift & 15);
                let rest = (rests[i] >> shift & 15) as i8 - 8;
                query[i] * (f32::from(i16::from(code) - 128) + f32::from(rest) / 15.0)
            })
        };
        let (first, second) = query.split_at(self.width.min(query.len()));
        Some(part(first, 0) + part(second, 4))
    }

    /// [`Planes::product_as`], waiting for the disk.
    #[cfg(test)]
    pub(super) fn product(&self, i: usize, query: &[f32], tail: &mut Vec<u8>) -> f32 {
        self.product_as(i, query, tail, Wait::Yes)
            .expect("a read that waits is never pending")
    }

    /// Asks the CPU to bring row `i`'s top bits into its caches (in signed planes they lie
    /// in the tail, read when asked for).
    pub(super) fn prefetch(&self, i: usize) {
        if !self.signed {
            prefetch(self.highs.as_ptr().wrapping_add(i * self.width), self.width);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_component_reads_back_within_a_fifteenth_of_a_code_step_whatever_the_dimension() {
        for dim in [7, 384] {
            let vector: Vec<f32> = (0..dim)
                .map(|j| ((j * 37 % 23) as f32 - 11.0) / 7.0)
                .collect();
            let largest = vector.iter().fold(0f32, |m, x| m.max(x.abs()));
            let length = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
            let mut planes = Planes::new(dim);
            planes.push(&vec![0.0; dim]);
            let scale = planes.push(&vector);
            let component = |planes: &Planes, row: usize, j: usize| {
                let mut unit = vec![0.0; dim];
                unit[j] = 1.0;
                planes.product(row, &unit, &mut Vec::new()) * scale * length
            };
            for (j, &x) in vector.iter().enumerate() {
                let back = component(&planes, 1, j);
                let step = largest / 127.0;
                assert!(
                    (back - x).abs() <= step / 15.0,
                    "dim {dim}, component {j}: {back} for {x}"
                );
                assert_eq!(component(&planes, 0, j), 0.0, "a zero row stays zero");
            }
            // A row put in place of another reads back as the same row pushed.
            assert_eq!(planes.set(0, &vector), scale);
            for j in 0..dim {
                assert_eq!(component(&planes, 0, j), component(&planes, 1, j));
            }
            assert_eq!(planes.bytes(), 3 * 2 * plane_bytes(dim));
        }
    }

    #[test]
    fn rows_whose_tails_lie_in_a_file_read_back_as_rows_held_in_memory() {
        let dim = 384;
        let dir = tempfile::tempdir().unwrap();
        let (mut held, mut filed) = (Planes::new(dim), Planes::new(dim).writing_to(dir.path()));
        let vector = |i: usize| -> Vec<f32> {
            (0..dim)
                .map(|j| ((i * 31 + j * 17) % 101) as f32 / 50.0 - 1.0)
                .collect()
        };
        // Past four writes' worth of rows, so the first lie in the file and the last in memory.
        let rows = 12_000;
        for i in 0..rows {
            assert_eq!(held.push(&vector(i)), filed.push(&vector(i)));
        }
        // Most of the tails are in the file: memory holds under two writes' worth.
        assert!(held.tail.bytes() >= rows * 2 * plane_bytes(dim));
        assert!(filed.tail.bytes() < 2 << 20, "{}", filed.tail.bytes());
        // A row in the file and a row still in memory, each put in place of another.
        for (i, from) in [(5, 2999), (2990, 7)] {
            assert_eq!(held.set(i, &vector(from)), filed.set(i, &vector(from)));
        }
        let query = vector(12345);
        let mut tail = Vec::new();
        for i in 0..rows {
            assert_eq!(
                held.product(i, &query, &mut tail),
                filed.product(i, &query, &mut tail),
                "row {i}"
            );
        }
        assert_eq!(
            filed.product(5, &query, &mut tail),
            filed.product(2999, &query, &mut tail)
        );
    }

    #[test]
    fn signed_planes_read_back_as_whole_planes_and_hold_each_components_sign() {
        let dim = 401;
        let dir = tempfile::tempdir().unwrap();
        let (mut whole, mut signed) =
            (Planes::new(dim), Planes::signed(dim).writing_to(dir.path()));
        let vector = |i: usize| -> Vec<f32> {
            (0..dim)
                .map(|j| ((i * 29 + j * 13) % 97) as f32 / 48.0 - 1.0)
                .collect()
        };
        for i in 0..6000 {
            assert_eq!(whole.push(&vector(i)), signed.push(&vector(i)));
        }
        assert_eq!(whole.set(3, &vector(9)), signed.set(3, &vector(9)));
        let query = vector(777);
        let mut tail = Vec::new();
        for i in 0..6000 {
            assert_eq!(
                whole.product(i, &query, &mut tail),
                signed.product(i, &query, &mut tail),
                "row {i}"
            );
        }
        let words = sign_words(dim);
        assert_eq!(signed.signs().len(), 6000 * words);
        assert!(!whole.highs().is_empty() && signed.highs().is_empty());
        for (i, from) in [(0, 0), (3, 9), (5999, 5999)] {
            let row = &signed.signs()[i * words..][..words];
            let turned = super::super::signs::rotated(&vector(from));
            assert_eq!(turned.len(), 512);
            for (j, &x) in turned.iter().enumerate() {
                let bit = row[j / 64] >> (j % 64) & 1 == 1;
                assert_eq!(bit, x > 0.0, "row {i}, component {j}");
            }
        }
    }
}
