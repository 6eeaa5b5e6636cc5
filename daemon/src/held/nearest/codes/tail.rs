//! The part of each row's codes only ranking reads (the bottom bits and what rounding left):
//! a scan never touches it, and ranking reads it for a few hundred rows a search, so it is
//! kept in a file of its own in the store's directory, read a row at a time. The kernel keeps
//! the file's pages in its cache, reclaimable under pressure, rather than the daemon holding
//! them (38 MB at 100k MiniLM memories). Rows gather in memory until a write's worth of them
//! goes to the file at once; without a file (none could be made, or a write failed) they all
//! stay in memory. What a search answers with of each row past the memories held whole
//! (`answers.rs`) lies in such files too: its records, and its text as rows of one byte.

use std::fs::File;
use std::path::Path;

/// Bytes of rows gathered in memory before they are written to the file.
const WRITE_BYTES: usize = 1 << 20;

#[derive(Default)]
pub(super) struct Tail {
    /// What the rows are, for the log.
    what: &'static str,
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
    /// Rows of `width` bytes, of `what` (for the log).
    pub(super) fn new(what: &'static str, width: usize) -> Self {
        Self {
            what,
            width,
            ..Default::default()
        }
    }

    /// Rows go to an unnamed file in `dir`, the store's directory: on the store's disk, where
    /// a system's temporary directory may be held in memory. Where none can be made, the log
    /// says so, and the rows stay in memory (the owner may let them go instead).
    pub(super) fn writing_to(mut self, dir: &Path) -> Self {
        match file_in(dir) {
            Some(Ok(file)) => self.file = Some(file),
            Some(Err(e)) => tracing::warn!("no file for {} in {}: {e}", self.what, dir.display()),
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

    /// Rows held, in the file and in memory.
    pub(super) fn rows(&self) -> usize {
        self.written + self.pending.len() / self.width
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

    /// Appends `rows` (whole rows, one or more).
    pub(super) fn push(&mut self, rows: &[u8]) {
        debug_assert_eq!(rows.len() % self.width, 0);
        self.pending.extend_from_slice(rows);
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
                tracing::warn!(
                    "newer {} stay in memory: writing them failed: {e}",
                    self.what
                );
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
                tracing::warn!("a row of {} could not be rewritten: {e}", self.what);
            }
        }
    }

    /// Asks the kernel to bring back into its cache whatever of the file it let go of, and
    /// returns the bytes asked for. The kernel reclaims pages no read has touched for a
    /// while even with memory to spare: after loading 1M MiniLM memories (95 min) 307 MB of
    /// the 549 MB of ranking parts were left in the cache, and the bench's first searches
    /// waited on the disk for the rest (p95 82 ms against 24–26 with the file cached).
    /// Pages already cached cost only a look-up (~12 ms for 750 MB). Only while the file
    /// fits in `room` (bytes), which it then takes from.
    pub(super) fn keep_cached(&self, room: &mut u64) -> u64 {
        let Some(file) = &self.file else { return 0 };
        let bytes = (self.written * self.width) as u64;
        if bytes > *room {
            return 0;
        }
        *room -= bytes;
        will_need(file, bytes);
        bytes
    }

    /// Row `i` into `out` (and the rows after it that `out` has room for), with `wait`
    /// saying whether for the disk.
    pub(super) fn read_as(&self, i: usize, out: &mut [u8], wait: Wait) -> Read {
        if i >= self.written {
            let at = (i - self.written) * self.width;
            out.copy_from_slice(&self.pending[at..at + out.len()]);
            return Read::Done;
        }
        let Some(file) = &self.file else {
            return Read::Failed;
        };
        // Rows from the file, and any past it from memory.
        let in_file = out.len().min((self.written - i) * self.width);
        let (filed, held) = out.split_at_mut(in_file);
        held.copy_from_slice(&self.pending[..held.len()]);
        let at = (i * self.width) as u64;
        let read = match wait {
            Wait::Yes => read_at(file, filed, at).map(|()| true),
            Wait::No => read_cached_at(file, filed, at),
        };
        match read {
            Ok(true) => Read::Done,
            Ok(false) => Read::Pending,
            Err(_) => Read::Failed,
        }
    }
}

/// Whether a read of a row may wait for the disk.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Wait {
    Yes,
    /// Only the bytes in the kernel's cache are read; the rest is sent for and left.
    No,
}

/// What a read of a row gave.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Read {
    Done,
    /// Not in the kernel's cache: its read from disk is under way (a read that waits finds
    /// it sooner).
    Pending,
    /// The file could not be read.
    Failed,
}

/// A file with no name in `dir` (O_TMPFILE on Linux; elsewhere made and unlinked at once),
/// so nothing is left behind after a crash. None where there are no positioned reads.
#[cfg(unix)]
fn file_in(dir: &Path) -> Option<std::io::Result<File>> {
    Some(tempfile::tempfile_in(dir).inspect(read_at_random))
}

/// Tells the kernel the file is read a row at a time, anywhere: its read-ahead around each
/// page not cached (32 pages and more) would read what no search asks for, and a search
/// would wait for it. At 1M MiniLM memories the file is 576 MB, and a kernel that reclaims
/// pages left unread (as it may while memory is plenty) keeps only part of it.
#[cfg(target_os = "linux")]
fn read_at_random(file: &File) {
    let advised = advise(file, 0, 0, libc::POSIX_FADV_RANDOM);
    if advised != 0 {
        tracing::debug!("the codes' file takes no advice on its reads: error {advised}");
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
fn read_at_random(_: &File) {}

/// Bytes of one advice to read ahead: the kernel reads at most its read-ahead window a call
/// (128 KB by default; a whole-file advice brought back only the first 8 MB here), so the
/// file is asked for in pieces no larger.
const WILL_NEED_BYTES: u64 = 128 << 10;

/// Tells the kernel the first `bytes` of `file` will be read: it sends for the pages it does
/// not hold, without waiting for them.
#[cfg(target_os = "linux")]
fn will_need(file: &File, bytes: u64) {
    for at in (0..bytes).step_by(WILL_NEED_BYTES as usize) {
        let len = WILL_NEED_BYTES.min(bytes - at);
        let advised = advise(file, at, len, libc::POSIX_FADV_WILLNEED);
        if advised != 0 {
            tracing::debug!("the codes' file takes no advice to read ahead: error {advised}");
            return;
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn will_need(_: &File, _: u64) {}

/// `posix_fadvise` of `len` bytes of `file` from `at` (0: to its end); 0 or the error.
#[cfg(target_os = "linux")]
fn advise(file: &File, at: u64, len: u64, advice: libc::c_int) -> libc::c_int {
    use std::os::fd::AsRawFd;
    // SAFETY: an advice on an open descriptor; it changes no memory of ours.
    unsafe {
        libc::posix_fadvise(
            file.as_raw_fd(),
            at as libc::off_t,
            len as libc::off_t,
            advice,
        )
    }
}

/// `out` from `at` if the kernel holds those bytes in its cache (true); false if not, where
/// Linux has then sent for the pages it lacks without waiting for them, so reads that wait
/// for several rows after find them all on their way at once rather than one after another.
#[cfg(target_os = "linux")]
fn read_cached_at(file: &File, out: &mut [u8], at: u64) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    let buffer = libc::iovec {
        iov_base: out.as_mut_ptr().cast(),
        iov_len: out.len(),
    };
    // SAFETY: the one buffer is `out`, writable for its length, for the call's duration.
    let read = unsafe {
        libc::preadv2(
            file.as_raw_fd(),
            &buffer,
            1,
            at as libc::off_t,
            libc::RWF_NOWAIT,
        )
    };
    match read {
        n if n >= 0 => Ok(n as usize == out.len()),
        _ => match std::io::Error::last_os_error() {
            e if e.kind() == std::io::ErrorKind::WouldBlock => Ok(false),
            // A kernel or file system without positioned reads that need not wait (before
            // Linux 4.14, or one that refuses the flag) is read as it is anywhere else.
            e if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL)
            ) =>
            {
                read_at(file, out, at).map(|()| true)
            }
            e => Err(e),
        },
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
fn read_cached_at(file: &File, out: &mut [u8], at: u64) -> std::io::Result<bool> {
    read_at(file, out, at).map(|()| true)
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

#[cfg(not(unix))]
fn read_cached_at(_: &File, _: &mut [u8], _: u64) -> std::io::Result<bool> {
    Err(std::io::Error::other("no positioned reads here"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tail of `rows` rows of `width` bytes, each row's bytes its index and place.
    fn filled(dir: &Path, rows: usize, width: usize) -> Tail {
        let mut tail = Tail::new("rows", width).writing_to(dir);
        for i in 0..rows {
            let row: Vec<u8> = (0..width).map(|b| (i * 7 + b) as u8).collect();
            tail.push(&row);
        }
        tail
    }

    fn row_of(tail: &Tail, i: usize, wait: Wait) -> (Read, Vec<u8>) {
        let mut out = vec![0; tail.width()];
        (tail.read_as(i, &mut out, wait), out)
    }

    #[test]
    fn rows_read_back_from_the_file_and_from_memory_whether_or_not_they_wait() {
        let dir = tempfile::tempdir().unwrap();
        let (rows, width) = (5000, 576);
        let tail = filled(dir.path(), rows, width);
        assert!(tail.in_file() && tail.written > 0 && tail.written < rows);
        for i in [0, 1, tail.written - 1, tail.written, rows - 1] {
            let expected: Vec<u8> = (0..width).map(|b| (i * 7 + b) as u8).collect();
            assert_eq!(
                row_of(&tail, i, Wait::Yes),
                (Read::Done, expected.clone()),
                "{i}"
            );
            // Just written, the file's pages are in the kernel's cache.
            assert_eq!(row_of(&tail, i, Wait::No), (Read::Done, expected), "{i}");
        }
    }

    /// Pages of the first `bytes` of `file` that the kernel holds in its cache.
    #[cfg(target_os = "linux")]
    fn cached_pages(file: &File, bytes: usize) -> usize {
        use std::os::fd::AsRawFd;
        // SAFETY: sysconf reads a constant of the system.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        // SAFETY: a read-only shared mapping of the open file that is never touched, only
        // asked which pages are cached, and unmapped before returning.
        let map = unsafe {
            let prot = libc::PROT_READ;
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                prot,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        assert_ne!(map, libc::MAP_FAILED);
        let mut cached = vec![0u8; bytes.div_ceil(page)];
        // SAFETY: `cached` has a byte for each page of the mapping, which lives until munmap.
        let asked = unsafe { libc::mincore(map, bytes, cached.as_mut_ptr()) };
        // SAFETY: the mapping made above, of that length.
        unsafe { libc::munmap(map, bytes) };
        assert_eq!(asked, 0);
        cached.iter().filter(|b| *b & 1 == 1).count()
    }

    /// Once the kernel let go of the file's pages, they are asked back if the file fits in
    /// the room given, and left if not.
    #[cfg(target_os = "linux")]
    #[test]
    fn pages_the_kernel_let_go_of_are_asked_back_while_they_fit() {
        let dir = tempfile::tempdir().unwrap();
        let tail = filled(dir.path(), 5000, 576);
        let file = tail.file.as_ref().unwrap();
        file.sync_all().unwrap();
        let bytes = tail.written * tail.width();
        let pages = cached_pages(file, bytes);
        // Its clean pages leave the cache.
        assert_eq!(super::advise(file, 0, 0, libc::POSIX_FADV_DONTNEED), 0);
        if cached_pages(file, bytes) == pages {
            return; // A file system in memory: its pages are never let go of.
        }
        let mut room = bytes as u64 - 1;
        assert_eq!(tail.keep_cached(&mut room), 0, "no room");
        assert_eq!(room, bytes as u64 - 1);
        assert_eq!(cached_pages(file, bytes), 0, "left alone");
        let mut room = 2 * bytes as u64;
        assert_eq!(tail.keep_cached(&mut room), bytes as u64);
        assert_eq!(room, bytes as u64, "the file took its room");
        // The kernel reads them without being waited for.
        let mut cached = 0;
        for _ in 0..1000 {
            cached = cached_pages(file, bytes);
            if cached == pages {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(cached, pages, "every page of the file back");
    }

    /// Rows of one byte (text) read back across the end of the file and into memory.
    #[test]
    fn a_read_of_many_rows_spans_the_file_and_memory() {
        let dir = tempfile::tempdir().unwrap();
        let mut tail = Tail::new("text", 1).writing_to(dir.path());
        let text: Vec<u8> = (0..WRITE_BYTES + 5000).map(|b| (b % 251) as u8).collect();
        tail.push(&text[..WRITE_BYTES - 10]);
        tail.push(&text[WRITE_BYTES - 10..WRITE_BYTES + 20]);
        tail.push(&text[WRITE_BYTES + 20..]);
        assert_eq!(tail.written, WRITE_BYTES + 20, "the first two in the file");
        for (at, len) in [(0, 100), (WRITE_BYTES - 50, 300), (WRITE_BYTES + 30, 400)] {
            let mut out = vec![0; len];
            assert_eq!(tail.read_as(at, &mut out, Wait::Yes), Read::Done);
            assert_eq!(out, text[at..at + len], "{at}");
        }
    }

    /// The pages a read that does not wait misses are sent for, and a read that waits
    /// finds the row.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_row_the_kernel_no_longer_caches_is_pending_then_read() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let (rows, width) = (5000, 576);
        let tail = filled(dir.path(), rows, width);
        let file = tail.file.as_ref().unwrap();
        file.sync_all().unwrap();
        // Its clean pages leave the cache.
        assert_eq!(super::advise(file, 0, 0, libc::POSIX_FADV_DONTNEED), 0);
        let in_memory_fs = {
            // SAFETY: statfs of an open descriptor into a zeroed struct it fills.
            let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
            assert_eq!(unsafe { libc::fstatfs(file.as_raw_fd(), &mut stat) }, 0);
            stat.f_type == libc::TMPFS_MAGIC
        };
        let i = tail.written / 2;
        let expected: Vec<u8> = (0..width).map(|b| (i * 7 + b) as u8).collect();
        let (first, _) = row_of(&tail, i, Wait::No);
        if !in_memory_fs {
            assert_eq!(first, Read::Pending);
        }
        assert_eq!(row_of(&tail, i, Wait::Yes), (Read::Done, expected));
    }
}
