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

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_some_resident_memory() {
        let m = super::own_memory().unwrap();
        assert!(m.rss_bytes > 0 && m.anon_bytes <= m.rss_bytes);
    }
}
