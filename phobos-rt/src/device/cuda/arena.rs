//! Reuse of device allocations. `cuMemAlloc`/`cuMemFree` synchronize and
//! cost microseconds, so freed blocks are kept per size class and handed
//! out again; the cache is bounded and trimmed (blocks actually freed) when
//! it grows past its limit or an allocation fails.
//!
//! The arena only does the bookkeeping; the caller allocates and frees.

use std::collections::HashMap;

/// Smallest block handed out: small tensors share one class.
const MIN_BLOCK_BYTES: usize = 512;
/// Above this, classes are multiples of it instead of powers of two, so a
/// large tensor wastes at most this much.
const LARGE_STEP_BYTES: usize = 2 << 20;

/// The block size an allocation of `len_bytes` gets.
pub fn size_class(len_bytes: usize) -> usize {
    let len = len_bytes.max(1);
    if len <= LARGE_STEP_BYTES {
        len.next_power_of_two().max(MIN_BLOCK_BYTES)
    } else {
        len.div_ceil(LARGE_STEP_BYTES) * LARGE_STEP_BYTES
    }
}

/// Free blocks by size class.
#[derive(Debug, Default)]
pub struct Arena {
    free: HashMap<usize, Vec<u64>>,
    cached_bytes: usize,
    limit_bytes: usize,
    /// Blocks served from the cache, for tests and tracing.
    pub reused: u64,
}

impl Arena {
    /// An arena that keeps at most `limit_bytes` of free blocks.
    pub fn new(limit_bytes: usize) -> Arena {
        Arena {
            limit_bytes,
            ..Arena::default()
        }
    }

    /// A cached block of exactly `class` bytes, if one is free.
    pub fn take(&mut self, class: usize) -> Option<u64> {
        let ptr = self.free.get_mut(&class)?.pop()?;
        self.cached_bytes -= class;
        self.reused += 1;
        Some(ptr)
    }

    /// Returns a block; yields the blocks to free for real (the oldest of
    /// the largest classes first) when the cache is over its limit.
    #[must_use]
    pub fn give(&mut self, ptr: u64, class: usize) -> Vec<u64> {
        self.free.entry(class).or_default().push(ptr);
        self.cached_bytes += class;
        let mut evicted = Vec::new();
        while self.cached_bytes > self.limit_bytes {
            let Some(largest) = self
                .free
                .iter()
                .filter(|(_, blocks)| !blocks.is_empty())
                .map(|(&c, _)| c)
                .max()
            else {
                break;
            };
            let blocks = self.free.entry(largest).or_default();
            evicted.push(blocks.remove(0));
            self.cached_bytes -= largest;
        }
        evicted
    }

    /// Every cached block, emptied (to free before retrying a failed
    /// allocation, or at shutdown).
    #[must_use]
    pub fn drain(&mut self) -> Vec<u64> {
        self.cached_bytes = 0;
        self.free.drain().flat_map(|(_, blocks)| blocks).collect()
    }

    /// Bytes held in free blocks.
    pub fn cached_bytes(&self) -> usize {
        self.cached_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_round_up_without_much_waste() {
        assert_eq!(size_class(0), 512);
        assert_eq!(size_class(1), 512);
        assert_eq!(size_class(513), 1024);
        assert_eq!(size_class(LARGE_STEP_BYTES), LARGE_STEP_BYTES);
        assert_eq!(size_class(LARGE_STEP_BYTES + 1), 2 * LARGE_STEP_BYTES);
        assert_eq!(size_class(5 * LARGE_STEP_BYTES - 3), 5 * LARGE_STEP_BYTES);
        for len in [1usize, 700, 4096, 3 << 20, 1 << 30] {
            assert!(size_class(len) >= len);
        }
    }

    #[test]
    fn freed_blocks_are_reused_by_class() {
        let mut arena = Arena::new(1 << 20);
        assert_eq!(arena.take(1024), None);
        assert!(arena.give(0xa000, 1024).is_empty());
        assert!(arena.give(0xb000, 2048).is_empty());
        assert_eq!(arena.cached_bytes(), 3072);
        assert_eq!(arena.take(512), None);
        assert_eq!(arena.take(1024), Some(0xa000));
        assert_eq!(arena.take(1024), None);
        assert_eq!(arena.reused, 1);
        assert_eq!(arena.cached_bytes(), 2048);
        assert_eq!(arena.drain(), vec![0xb000]);
        assert_eq!(arena.cached_bytes(), 0);
    }

    #[test]
    fn the_cache_stays_under_its_limit() {
        let mut arena = Arena::new(4096);
        assert!(arena.give(1, 2048).is_empty());
        assert!(arena.give(2, 1024).is_empty());
        assert!(arena.give(3, 1024).is_empty());
        // Over the limit: the largest class goes first.
        assert_eq!(arena.give(4, 1024), vec![1]);
        assert_eq!(arena.cached_bytes(), 3072);
        assert_eq!(arena.give(5, 8192).len(), 1);
        assert!(arena.cached_bytes() <= 4096);
    }
}
