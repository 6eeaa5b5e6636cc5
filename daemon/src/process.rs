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

/// Hands back the pages of mnemod's own code and constants that start-up read, returning
/// the bytes advised. The program is large (~150 MB of code and constants, mostly LanceDB's,
/// DataFusion's and candle's), the kernel maps it in 64 KB runs around each page touched,
/// and start-up runs much that nothing runs again (opening and migrating the store, loading
/// the model): at 100k memories 108 MB of a 222 MB RSS were the program's own pages, where
/// serving searches needs ~50 MB of them. What is needed again is read back from the file
/// (the first search after this took 120 ms rather than 20). Linux only; elsewhere, and on
/// kernels before 5.4, nothing happens.
pub fn drop_code_pages() -> u64 {
    #[cfg(target_os = "linux")]
    {
        let (Ok(maps), Ok(exe)) = (
            std::fs::read_to_string("/proc/self/maps"),
            std::env::current_exe(),
        ) else {
            return 0;
        };
        let mut advised = 0;
        for (start, len) in read_only_mappings_of(&maps, &exe.to_string_lossy()) {
            // SAFETY: the range is a whole read-only mapping of this process's own file, and
            // paging it out changes no content: a later read faults the page back in.
            if unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_PAGEOUT) } == 0 {
                advised += len as u64;
            }
        }
        advised
    }
    #[cfg(not(target_os = "linux"))]
    0
}

/// The address ranges of `/proc/self/maps` lines that map `path` without write access
/// (written pages are the process's own copies, which paging out would not give back).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn read_only_mappings_of(maps: &str, path: &str) -> Vec<(usize, usize)> {
    maps.lines()
        .filter_map(|line| {
            let mut fields = line.splitn(6, ' ');
            let range = fields.next()?;
            let perms = fields.next()?;
            let mapped = fields.nth(3)?.trim_start();
            if mapped != path || perms.contains('w') {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            let start = usize::from_str_radix(start, 16).ok()?;
            let end = usize::from_str_radix(end, 16).ok()?;
            (end > start).then_some((start, end - start))
        })
        .collect()
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
    fn the_read_only_mappings_of_the_program_are_found_in_proc_maps() {
        let maps = "\
55a2774d3000-55a27a59e000 r--p 00000000 fe:00 10010674                   /usr/bin/mnemod
55a27a59e000-55a28099e000 r-xp 030ca000 fe:00 10010674                   /usr/bin/mnemod
55a280f3a000-55a280f4c000 rw-p 09a64000 fe:00 10010674                   /usr/bin/mnemod
55a280f4c000-55a280f5c000 r-xp 00000000 fe:00 10010675                   /usr/bin/mnemod-old
7f0000000000-7f0000001000 r--p 00000000 fe:00 10010676                   /usr/lib/my lib.so
7f0000002000-7f0000003000 rw-p 00000000 00:00 0
";
        assert_eq!(
            super::read_only_mappings_of(maps, "/usr/bin/mnemod"),
            vec![
                (0x55a2774d3000, 0x55a27a59e000 - 0x55a2774d3000),
                (0x55a27a59e000, 0x55a28099e000 - 0x55a27a59e000),
            ]
        );
        assert_eq!(
            super::read_only_mappings_of(maps, "/usr/lib/my lib.so"),
            vec![(0x7f0000000000, 0x1000)]
        );
        assert!(super::read_only_mappings_of(maps, "/usr/bin/other").is_empty());
    }

    /// Paging out the test binary's own code leaves it running (each page is read back
    /// from the file as it is needed).
    #[cfg(target_os = "linux")]
    #[test]
    fn the_programs_code_pages_can_be_handed_back_while_it_runs() {
        assert!(super::drop_code_pages() > 0);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_some_resident_memory() {
        let m = super::own_memory().unwrap();
        assert!(m.rss_bytes > 0 && m.anon_bytes <= m.rss_bytes);
    }
}
