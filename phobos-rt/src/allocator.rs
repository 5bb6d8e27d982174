//! glibc's allocator settings for the engine's working set, applied by
//! the project's binaries (`phobos`, `phobos-kbench`) at start; a library
//! user's process keeps its own unless it calls [`keep_freed_memory`].
//!
//! A prompt batch allocates activations of a few MiB per layer and frees
//! them again. Left at its defaults, glibc hands such blocks to `mmap` or
//! trims them off the heap's top as soon as they are freed, so the next
//! layer's allocation faults every page in afresh (and unmapping memory two
//! threads touched costs a TLB shootdown). Keeping freed memory in the heap
//! measured pp512 490 -> 618-633 t/s on Gemma 3 270M, two threads, Zen 4
//! (BENCHMARKS.md, session 17). A user's own `MALLOC_MMAP_THRESHOLD_`,
//! `MALLOC_TRIM_THRESHOLD_` or `GLIBC_TUNABLES` wins: nothing is set then.

/// Allocations below this come from the heap (glibc's largest allowed
/// value on 64-bit targets).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD_BYTES: libc::c_int = 32 << 20;
/// Free memory at the heap's top kept before glibc returns it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD_BYTES: libc::c_int = 256 << 20;

/// The environment variables through which a user tunes glibc's allocator.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
const USER_VARIABLES: [&str; 3] = [
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "GLIBC_TUNABLES",
];

/// Whether any of the user's allocator variables is set (`is_set` asks the
/// environment; a test passes its own).
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
fn user_configured(is_set: impl Fn(&str) -> bool) -> bool {
    USER_VARIABLES.iter().any(|name| is_set(name))
}

/// Applies the settings above unless the environment sets the allocator's.
/// Call it once, before other threads allocate.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        if user_configured(|name| std::env::var_os(name).is_some()) {
            return;
        }
        // SAFETY: `mallopt` only changes allocator parameters; it runs
        // before the engine's threads start allocating.
        let applied = unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1
        };
        if !applied {
            tracing::debug!("glibc refused the allocator settings; keeping its defaults");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_glibc_allocator_variable_leaves_the_settings_alone() {
        assert!(!user_configured(|_| false));
        for variable in USER_VARIABLES {
            assert!(user_configured(|name| name == variable), "{variable}");
        }
        assert!(!user_configured(|name| name == "MALLOC_ARENA_MAX"));
    }
}
