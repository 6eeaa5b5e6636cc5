//! Prefetches: the scans know which rows they read next before they read them.

/// Asks the CPU to bring the `bytes` from `start` into its caches, so that reads which
/// would each wait for memory overlap. A prefetch reads nothing and never faults, wherever
/// it points. Nothing on CPUs other than x86-64, whose own prefetchers are left to it.
#[inline(always)]
pub(super) fn prefetch<T>(start: *const T, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    for line in (0..bytes).step_by(64) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // Safe to call in the Rust this is built with; unsafe in older ones.
        #[allow(unused_unsafe)]
        // SAFETY: a prefetch never faults.
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(start.cast::<i8>().wrapping_add(line))
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (start, bytes);
}
