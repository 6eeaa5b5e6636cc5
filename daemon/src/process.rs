//! The daemon's own process: its resident memory by kind, and handing freed memory back.

use mnemo_protocol::daemon::ProcessMemory;

/// This process's resident memory split by kind, from `/proc/self/status` (Linux only:
/// elsewhere `None`). The split matters because the kernel counts the program's mapped code
/// pages in RSS (often whole large folios of them), which are shared with the page cache and
/// dropped under pressure, unlike what the process allocated.
pub fn own_memory() -> Option<ProcessMemory> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_proc_status(&status)
}

/// Hands memory the allocator holds free back to the system (glibc keeps freed heap pages
/// for reuse: loading the model makes and drops ~300 MB of copies, a large read as much).
/// A no-op elsewhere.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages; it is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Lets go of the pages of mnemod's own code and constants mapped into it, returning the
/// bytes advised. The program is large (~150 MB of code and constants, mostly LanceDB's,
/// DataFusion's and candle's) and the kernel maps it in 64 KB runs around each page run, so
/// whatever ran once stays counted in RSS: start-up, and each maintenance pass or
/// consolidation phase (Lance's reads, SQL filters, index folds) brought back 60-100 MB of
/// code where serving searches needs ~20 MB. The pages stay in the page cache: what runs
/// again is mapped back by a minor fault, with no read from disk (paging out, as before,
/// made the first search after it take 120 ms rather than 20). Linux only; elsewhere
/// nothing happens.
pub fn drop_code_pages() -> u64 {
    #[cfg(target_os = "linux")]
    {
        // Read once: the program's mappings do not change while it runs.
        static CLEAN: std::sync::OnceLock<Vec<(usize, usize)>> = std::sync::OnceLock::new();
        let clean = CLEAN.get_or_init(|| {
            let (Ok(smaps), Ok(exe)) = (
                std::fs::read_to_string("/proc/self/smaps"),
                std::env::current_exe(),
            ) else {
                return Vec::new();
            };
            clean_mappings_of(&smaps, &exe.to_string_lossy())
        });
        let mut advised = 0;
        for &(start, len) in clean {
            // SAFETY: the range is a whole mapping of this process's own file that it never
            // wrote (no write access, no anonymous page: not the constants the loader
            // relocated), so dropping its pages changes no content: a later access maps the
            // file's page again.
            if unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_DONTNEED) } == 0 {
                advised += len as u64;
            }
        }
        advised
    }
    #[cfg(not(target_os = "linux"))]
    0
}

/// The address ranges of `/proc/self/smaps` entries that map `path` with neither write
/// access nor an anonymous page: the file's own pages, which can be dropped and mapped
/// again. A read-only mapping with anonymous pages (the constants the loader relocated
/// before making them read-only) holds the process's own copies and is left.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn clean_mappings_of(smaps: &str, path: &str) -> Vec<(usize, usize)> {
    let mut clean = Vec::new();
    // The mapping the lines read belong to, while it may still be clean.
    let mut current: Option<(usize, usize)> = None;
    for line in smaps.lines() {
        if let Some(mapping) = mapping_header(line) {
            clean.extend(current.take());
            current =
                (mapping.path == path && !mapping.writable).then_some((mapping.start, mapping.len));
        } else if let Some(kib) = line.strip_prefix("Anonymous:") {
            if kib.trim().trim_end_matches("kB").trim() != "0" {
                current = None;
            }
        }
    }
    clean.extend(current);
    clean
}

struct Mapping<'a> {
    start: usize,
    len: usize,
    writable: bool,
    path: &'a str,
}

/// The mapping a line starts the entry of (`start-end perms offset dev inode path`, the path
/// empty for one that maps no file), `None` for any other line.
fn mapping_header(line: &str) -> Option<Mapping<'_>> {
    let mut fields = line.splitn(6, ' ');
    let (start, end) = fields.next()?.split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    let perms = fields.next()?;
    let path = fields.nth(3).map_or("", str::trim_start);
    (end > start).then_some(Mapping {
        start,
        len: end - start,
        writable: perms.contains('w'),
        path,
    })
}

fn parse_proc_status(status: &str) -> Option<ProcessMemory> {
    let kib = |key: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(key))?;
        let value = line[key.len()..].trim().trim_end_matches("kB").trim();
        value.parse::<u64>().ok().map(|k| k * 1024)
    };
    Some(ProcessMemory {
        rss_bytes: kib("VmRSS:")?,
        anon_bytes: kib("RssAnon:")?,
        file_bytes: kib("RssFile:")?,
        held_bytes: None,
        lance_cache_bytes: None,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn resident_memory_is_read_by_kind_from_proc_status() {
        let status = "Name:\tmnemod\nVmRSS:\t  363252 kB\nRssAnon:\t  215564 kB\nRssFile:\t  147688 kB\nRssShmem:\t       0 kB\n";
        let m = super::parse_proc_status(status).unwrap();
        assert_eq!(m.rss_bytes, 363252 * 1024);
        assert_eq!(m.anon_bytes, 215564 * 1024);
        assert_eq!(m.file_bytes, 147688 * 1024);
        assert_eq!(super::parse_proc_status("Name:\tx\n"), None);
    }

    #[test]
    fn the_programs_clean_mappings_are_found_in_proc_smaps() {
        let smaps = "\
55a2774d3000-55a27a59e000 r--p 00000000 fe:00 10010674                   /usr/bin/mnemod
Rss:                4208 kB
Anonymous:             0 kB
VmFlags: rd mr mw me sd
55a27a59e000-55a28099e000 r-xp 030ca000 fe:00 10010674                   /usr/bin/mnemod
Rss:               55780 kB
Anonymous:             0 kB
55a280f00000-55a280f3a000 r--p 09a2a000 fe:00 10010674                   /usr/bin/mnemod
Rss:                6300 kB
Anonymous:          6300 kB
55a280f3a000-55a280f4c000 rw-p 09a64000 fe:00 10010674                   /usr/bin/mnemod
Anonymous:             0 kB
55a280f4c000-55a280f5c000 r-xp 00000000 fe:00 10010675                   /usr/bin/mnemod-old
Anonymous:             0 kB
7f0000000000-7f0000001000 r--p 00000000 fe:00 10010676                   /usr/lib/my lib.so
Anonymous:             0 kB
7f0000002000-7f0000003000 rw-p 00000000 00:00 0
Anonymous:             4 kB
";
        assert_eq!(
            super::clean_mappings_of(smaps, "/usr/bin/mnemod"),
            vec![
                (0x55a2774d3000, 0x55a27a59e000 - 0x55a2774d3000),
                (0x55a27a59e000, 0x55a28099e000 - 0x55a27a59e000),
            ]
        );
        assert_eq!(
            super::clean_mappings_of(smaps, "/usr/lib/my lib.so"),
            vec![(0x7f0000000000, 0x1000)]
        );
        assert!(super::clean_mappings_of(smaps, "/usr/bin/other").is_empty());
    }

    /// Dropping the test binary's own pages, again and again, leaves it running: its code
    /// and constants are mapped back as needed, and the relocated ones (vtables, which a
    /// call through `dyn` reads) are its own copies, left alone.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_programs_code_pages_can_be_handed_back_while_it_runs() {
        let say: Vec<Box<dyn Fn(f64) -> String>> = vec![
            Box::new(|x| format!("{x:.1}")),
            Box::new(|x| format!("{x:e}")),
        ];
        for _ in 0..3 {
            assert!(super::drop_code_pages() > 0);
            assert_eq!(say[0](1.25), "1.2");
            assert_eq!(say[1](1500.0), "1.5e3");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_some_resident_memory() {
        let m = super::own_memory().unwrap();
        assert!(m.rss_bytes > 0 && m.anon_bytes <= m.rss_bytes);
    }
}
