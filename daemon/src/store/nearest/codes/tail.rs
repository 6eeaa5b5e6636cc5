//! The part of each row's codes only ranking reads (the bottom bits and what rounding left):
//! a scan never touches it, and ranking reads it for a few hundred rows a search, so it is
//! kept in a file of its own in the store's directory, read a row at a time. The kernel keeps
//! the file's pages in its cache, reclaimable under pressure, rather than the daemon holding
//! them (38 MB at 100k MiniLM memories). Rows gather in memory until a write's worth of them
//! goes to the file at once; without a file (none could be made, or a write failed) they all
//! stay in memory.

use std::fs::File;
use std::path::Path;

/// Bytes of rows gathered in memory before they are written to the file.
const WRITE_BYTES: usize = 1 << 20;

#[derive(Default)]
pub(super) struct Tail {
    /// Bytes a row.
    width: usize,
    /// Unlinked (it goes with the daemon): the rows before `pending`.
    file: Option<File>,
    /// Rows in the file.
    written: usize,
    /// The rows after them.
    pending: Vec<u8>,
    /// Set when a write failed: no more are tried.
    stopped: bool,
}

impl Tail {
    pub(super) fn new(width: usize) -> Self {
        Self {
            width,
            ..Default::default()
        }
    }

    /// Rows go to an unnamed file in `dir`, the store's directory: on the store's disk, where
    /// a system's temporary directory may be held in memory. Where none can be made, they
    /// stay in memory and the log says so.
    pub(super) fn writing_to(mut self, dir: &Path) -> Self {
        match file_in(dir) {
            Some(Ok(file)) => self.file = Some(file),
            Some(Err(e)) => tracing::warn!(
                "the vectors' codes stay wholly in memory: no file for their ranking part in {}: {e}",
                dir.display()
            ),
            None => {}
        }
        self
    }

    /// Bytes a row.
    pub(super) fn width(&self) -> usize {
        self.width
    }

    /// Whether rows go to a file (or all stay in memory).
    pub(super) fn in_file(&self) -> bool {
        self.file.is_some()
    }

    /// Bytes allocated in memory (for the rows not yet written).
    pub(super) fn bytes(&self) -> usize {
        self.pending.capacity()
    }

    pub(super) fn reserve(&mut self, rows: usize) {
        if self.file.is_none() {
            self.pending.reserve_exact(rows * self.width);
        }
    }

    pub(super) fn shrink_to_fit(&mut self) {
        self.pending.shrink_to_fit();
    }

    pub(super) fn push(&mut self, row: &[u8]) {
        debug_assert_eq!(row.len(), self.width);
        self.pending.extend_from_slice(row);
        if self.pending.len() >= WRITE_BYTES && !self.stopped {
            self.write_pending();
        }
    }

    /// Writes the rows gathered to the file. After a failed write (a full disk) the rows
    /// written are still read from it, and every later row stays in memory.
    fn write_pending(&mut self) {
        let Some(file) = &self.file else { return };
        match write_at(file, &self.pending, (self.written * self.width) as u64) {
            Ok(()) => {
                self.written += self.pending.len() / self.width;
                self.pending.clear();
            }
            Err(e) => {
                tracing::warn!("the vectors' newer codes stay in memory: writing them failed: {e}");
                self.stopped = true;
            }
        }
    }

    /// Puts `row` in place of row `i`.
    pub(super) fn set(&mut self, i: usize, row: &[u8]) {
        if i >= self.written {
            let at = (i - self.written) * self.width;
            self.pending[at..at + self.width].copy_from_slice(row);
        } else if let Some(file) = &self.file {
            if let Err(e) = write_at(file, row, (i * self.width) as u64) {
                tracing::warn!("a row of the vectors' codes could not be rewritten: {e}");
            }
        }
    }

    /// Row `i` into `out`; false where the file could not be read.
    pub(super) fn read(&self, i: usize, out: &mut [u8]) -> bool {
        if i >= self.written {
            let at = (i - self.written) * self.width;
            out.copy_from_slice(&self.pending[at..at + self.width]);
            return true;
        }
        match &self.file {
            Some(file) => read_at(file, out, (i * self.width) as u64).is_ok(),
            None => false,
        }
    }
}

/// A file with no name in `dir` (O_TMPFILE on Linux; elsewhere made and unlinked at once),
/// so nothing is left behind after a crash. None where there are no positioned reads.
#[cfg(unix)]
fn file_in(dir: &Path) -> Option<std::io::Result<File>> {
    Some(tempfile::tempfile_in(dir))
}

#[cfg(not(unix))]
fn file_in(_: &Path) -> Option<std::io::Result<File>> {
    None
}

#[cfg(unix)]
fn write_at(file: &File, bytes: &[u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, at)
}

#[cfg(unix)]
fn read_at(file: &File, out: &mut [u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, out, at)
}

#[cfg(not(unix))]
fn write_at(_: &File, _: &[u8], _: u64) -> std::io::Result<()> {
    Err(std::io::Error::other("no positioned writes here"))
}

#[cfg(not(unix))]
fn read_at(_: &File, _: &mut [u8], _: u64) -> std::io::Result<()> {
    Err(std::io::Error::other("no positioned reads here"))
}
