//! Header counts cannot make the reader allocate more than a small multiple
//! of the file's size. A file of nested arrays where every level claims as
//! many elements as the remaining bytes could hold once made each level
//! reserve that much at the same time (80x the file at 30 levels);
//! counts are now checked against the bytes left after every entry still
//! to come, so the second level is refused before it allocates.
//!
//! Its own test binary: the counting global allocator sees every thread of
//! the process, so no other test may run beside this one.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use phobos_models::gguf::{Gguf, GgufError};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = CURRENT.fetch_add(by, Ordering::SeqCst) + by;
    PEAK.fetch_max(now, Ordering::SeqCst);
}

// SAFETY: every call forwards to the system allocator unchanged; the
// counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::SeqCst);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            CURRENT.fetch_sub(layout.size(), Ordering::SeqCst);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const FILE_LEN: usize = 1 << 20;
const DEPTH: usize = 30;

/// One metadata key whose value is an array of arrays, `DEPTH` levels
/// deep, each level claiming as many elements as the bytes after it could
/// hold at 12 bytes (an array header) each; the rest of the file is 0xFF.
fn nested_claims() -> Vec<u8> {
    let mut b = b"GGUF\x03\0\0\0".to_vec();
    b.extend_from_slice(&0u64.to_le_bytes());
    b.extend_from_slice(&1u64.to_le_bytes());
    b.extend_from_slice(&1u64.to_le_bytes());
    b.push(b'k');
    b.extend_from_slice(&9u32.to_le_bytes());
    for _ in 0..DEPTH {
        b.extend_from_slice(&9u32.to_le_bytes());
        let after_count = FILE_LEN - b.len() - 8;
        b.extend_from_slice(&(after_count as u64 / 12).to_le_bytes());
    }
    b.resize(FILE_LEN, 0xFF);
    b
}

#[test]
fn nested_counts_allocate_a_small_multiple_of_the_file() {
    let bytes = nested_claims();
    let before = CURRENT.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let err = Gguf::from_vec(bytes).unwrap_err();
    let peak = PEAK.load(Ordering::SeqCst) - before;
    eprintln!(
        "peak allocation while parsing: {peak} bytes ({:.2}x the file)",
        peak as f64 / FILE_LEN as f64
    );
    // The outermost level's claim is honest (its elements would fit), so
    // its vector is allocated; the next level's is refused at once.
    assert!(
        matches!(&err, GgufError::CountTooLarge { offset, .. } if *offset == 8 + 8 + 8 + 9 + 4 + 4 + 12),
        "{err}"
    );
    // The file itself (moved in, counted before) plus one level's vector:
    // under 4x the file (2.67x measured). Before the fix: 80x.
    assert!(
        peak < 4 * FILE_LEN,
        "peak allocation {peak} bytes for a {FILE_LEN}-byte file"
    );
}
