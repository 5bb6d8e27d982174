//! Per-thread reuse of B's packed panels across the programs of a launch.
//!
//! Every program of a tiled gemm in one grid column reads the same column
//! block of B, and a pool thread runs several of them (a chunk of programs
//! is consecutive `program_id(0)`s, so it shares one column block). Packing
//! that block once per thread instead of once per program removes most of
//! the packing: at 2048^3 with 256-wide tiles, eight programs share each.
//!
//! A packing is only reused under the same [`RawView::plain_id`]: an id that
//! one [`PlainRead`](crate::host::PlainRead) guard holds while no writer
//! can enter the allocation, and that no other guard ever gets, so the
//! elements it was packed from cannot have changed. Entries of another id
//! (an earlier launch) go back to the thread's arena on the next lookup.

use crate::host::arena;
use crate::host::view::RawView;
use std::cell::RefCell;

/// Bytes of packed B a thread keeps: all four 256-column blocks of a
/// 1024-deep B (1 MiB each), or two of a 2048-deep one; larger packings
/// are not kept.
const CAP_BYTES: usize = 4 << 20;

/// What a packing was made from: the view (by its plain-read id), the
/// tile's columns, the `k` range and the panel width.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Key {
    plain_id: u64,
    col0: i64,
    tn: usize,
    k: (usize, usize),
    nr: usize,
}

impl Key {
    /// The key for B's columns `col0 .. col0 + tn` over `k_lo..k_hi`, or
    /// `None` when the view has no plain-read id (atomic reads, or
    /// borrowed memory whose address a later borrow may reuse).
    pub(super) fn of(
        b: &RawView<'_, f32>,
        (col0, tn): (i64, usize),
        k: (usize, usize),
        nr: usize,
    ) -> Option<Key> {
        (b.plain_id != 0).then_some(Key {
            plain_id: b.plain_id,
            col0,
            tn,
            k,
            nr,
        })
    }
}

struct Entry {
    key: Key,
    data: Vec<f32>,
}

thread_local! {
    /// Least recently used first.
    static CACHE: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
}

/// Storage of `len` floats for `key`'s packing, and whether it already
/// holds that packing (made by an earlier program on this thread); `None`
/// when it is too large to keep. Hand it back with [`put`] once packed.
pub(super) fn take(key: &Key, len: usize) -> Option<(Vec<f32>, bool)> {
    if len.saturating_mul(size_of::<f32>()) > CAP_BYTES {
        return None;
    }
    let found = CACHE
        .try_with(|cache| {
            let mut cache = cache.try_borrow_mut().ok()?;
            // An id is never seen again once its guard is gone, so other
            // ids' packings can only be another launch's: give them back.
            let mut i = 0;
            while i < cache.len() {
                if cache[i].key.plain_id == key.plain_id {
                    i += 1;
                } else {
                    arena::give(cache.remove(i).data);
                }
            }
            let at = cache.iter().position(|e| e.key == *key)?;
            Some(cache.remove(at).data)
        })
        .ok()
        .flatten();
    Some(match found {
        Some(data) if data.len() == len => (data, true),
        Some(data) => {
            arena::give(data);
            (arena::filled(len, 0.0), false)
        }
        None => (arena::filled(len, 0.0), false),
    })
}

/// Keeps `data`, now holding `key`'s packing, as the most recently used
/// entry; the least recently used ones go back to the arena past
/// [`CAP_BYTES`].
pub(super) fn put(key: Key, data: Vec<f32>) {
    let refused = CACHE
        .try_with(|cache| {
            let Ok(mut cache) = cache.try_borrow_mut() else {
                return Some(data);
            };
            cache.push(Entry { key, data });
            let mut bytes: usize = cache.iter().map(|e| e.data.len() * size_of::<f32>()).sum();
            while bytes > CAP_BYTES && !cache.is_empty() {
                let oldest = cache.remove(0);
                bytes -= oldest.data.len() * size_of::<f32>();
                arena::give(oldest.data);
            }
            None
        })
        .ok()
        .flatten();
    if let Some(data) = refused {
        arena::give(data);
    }
}
