//! Decode's parallel split: one contiguous share of weight rows per
//! thread, worked front to back in chunks (half of what is left, so the
//! first is long and the last are short), and taken from the back by any
//! thread that finishes its own share first.
//!
//! Why not fixed tiles: at M = 1 a matrix of Gemma 3 270M takes 15 to 150
//! us, so one tile per thread suits the kernel's prefetch (one stream per
//! thread; each further tile cost a hand-out and a restart of the stream:
//! about 3 us of 18 on 640x1024 Q4_K, two threads, Zen 2, eight tiles
//! against two), but then the launch waits on the slower thread. On a VM
//! whose two vCPUs ran the same half of 1024x640 Q5_0 in 60 and 80 us, or
//! where one vCPU stalled for tens of microseconds, the launch took as long
//! as one thread doing all of it. Here the owner of a share keeps its one
//! stream (its chunks follow each other, and the kernel's prefetch runs
//! past a chunk's end within the matrix), and the rows a slow thread has
//! not reached yet go to the fast one.
//!
//! A share's unclaimed rows are one `AtomicU64`, `front << 32 | back`, in
//! 16-row units (the kernels' passes stay whole): the owner claims from
//! the front, thieves from the back, each with one compare-exchange, so a
//! unit is claimed exactly once.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

/// Rows per unit: every chunk starts on a 16-row boundary, as the kernels'
/// passes (4 rows for AVX2, 16 for AVX-512 and AMX) need.
pub(super) const UNIT_ROWS: usize = 16;

/// Fewest units an owner claims at once (64 rows, ggml's decode chunk):
/// each claim is a kernel call that packs the activation row again.
const MIN_OWNER_UNITS: usize = 4;

/// An owner's smallest claim is at least this fraction (1/N) of its share,
/// so a large matrix is not worked in thousands of 64-row calls.
const SHARE_FRACTION_PER_CLAIM: usize = 16;

/// One share's unclaimed units, on a cache line pair of its own: the owner
/// claims from it while thieves claim from the others' cells.
#[repr(align(128))]
struct Cell(AtomicU64);

/// The shares of one launch.
pub(super) struct Shares {
    rows: usize,
    /// Rows per unit: [`UNIT_ROWS`], or a multiple of it for a matrix of
    /// more than `u32::MAX` such units (the cells hold unit counts in 32
    /// bits each).
    unit_rows: usize,
    cells: Vec<Cell>,
    owner_units: usize,
    thief_units: usize,
}

impl Shares {
    /// `rows` weight rows in `threads` shares of whole units, within one
    /// unit of each other.
    pub(super) fn new(rows: usize, threads: usize) -> Shares {
        let max_units = u32::MAX as usize;
        let unit_rows = UNIT_ROWS * rows.div_ceil(UNIT_ROWS).div_ceil(max_units).max(1);
        let units = rows.div_ceil(unit_rows);
        let threads = threads.clamp(1, units.max(1));
        let cells = (0..threads)
            .map(|t| {
                let front = (t * units / threads) as u64;
                let back = ((t + 1) * units / threads) as u64;
                Cell(AtomicU64::new((front << 32) | back))
            })
            .collect();
        let share_units = units.div_ceil(threads);
        let owner_units = share_units
            .div_ceil(SHARE_FRACTION_PER_CLAIM)
            .max(MIN_OWNER_UNITS);
        Shares {
            rows,
            unit_rows,
            cells,
            owner_units,
            // Half an owner's chunk: the launch ends within about one
            // thief chunk of the faster thread's time.
            thief_units: owner_units.div_ceil(2),
        }
    }

    /// How many shares (pool programs) there are.
    pub(super) fn len(&self) -> usize {
        self.cells.len()
    }

    /// Runs `work` on every row range of share `own` from its front, then
    /// on what is left of the other shares from their backs; returns when
    /// nothing is left unclaimed (other threads may still be running what
    /// they claimed).
    pub(super) fn work(&self, own: usize, mut work: impl FnMut(Range<usize>)) {
        if let Some(cell) = self.cells.get(own) {
            while let Some(units) = claim(&cell.0, self.owner_units, End::Front) {
                work(self.to_rows(units));
            }
        }
        let shares = self.cells.len();
        for other in (1..shares).map(|k| (own + k) % shares) {
            while let Some(units) = claim(&self.cells[other].0, self.thief_units, End::Back) {
                work(self.to_rows(units));
            }
        }
    }

    fn to_rows(&self, units: Range<u64>) -> Range<usize> {
        let row = |unit: u64| {
            (unit as usize)
                .saturating_mul(self.unit_rows)
                .min(self.rows)
        };
        row(units.start)..row(units.end)
    }
}

#[derive(Clone, Copy)]
enum End {
    Front,
    Back,
}

/// Claims up to `units` units from one end of `cell`'s range, or None
/// when it is empty.
fn claim(cell: &AtomicU64, units: usize, end: End) -> Option<Range<u64>> {
    let units = units as u64;
    let mut current = cell.load(Ordering::Acquire);
    loop {
        let (front, back) = (current >> 32, current & u64::from(u32::MAX));
        if front >= back {
            return None;
        }
        let (claimed, left) = match end {
            End::Front => {
                // Half of what is left, so the owner's stream is long at
                // first and its last claims short enough to share.
                let units = ((back - front) / 2).max(units);
                let stop = front.saturating_add(units).min(back);
                (front..stop, (stop << 32) | back)
            }
            End::Back => {
                let start = back.saturating_sub(units).max(front);
                (start..back, (front << 32) | start)
            }
        };
        match cell.compare_exchange_weak(current, left, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return Some(claimed),
            Err(now) => current = now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn covered_once(rows: usize, ranges: &[Range<usize>]) {
        let mut seen = vec![0u8; rows];
        for range in ranges {
            assert!(!range.is_empty(), "{ranges:?}");
            assert_eq!(range.start % UNIT_ROWS, 0, "{ranges:?}");
            for row in range.clone() {
                seen[row] += 1;
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "{rows}: {ranges:?}");
    }

    #[test]
    fn one_thread_works_every_row_once_in_order() {
        for rows in [1, 15, 16, 17, 256, 640, 1000, 262_144] {
            for threads in [1, 2, 3, 8] {
                let shares = Shares::new(rows, threads);
                let mut ranges = Vec::new();
                shares.work(0, |r| ranges.push(r));
                covered_once(rows, &ranges);
                // Its own share first, from the front, in one stream.
                let units = rows.div_ceil(UNIT_ROWS);
                let own_end = (units / threads.min(units) * UNIT_ROWS).min(rows);
                let mut next = 0;
                for range in ranges.iter().take_while(|r| r.start < own_end) {
                    assert_eq!(range.start, next, "{ranges:?}");
                    next = range.end;
                }
                assert_eq!(next, own_end, "{ranges:?}");
            }
        }
    }

    #[test]
    fn shares_are_even_and_contiguous() {
        let shares = Shares::new(1024, 2);
        assert_eq!(shares.len(), 2);
        let mut first = Vec::new();
        // The owner's chunks, one stream: half of what is left, down to 64 rows.
        while let Some(units) = claim(&shares.cells[0].0, shares.owner_units, End::Front) {
            first.push(shares.to_rows(units));
        }
        assert_eq!(first, vec![0..256, 256..384, 384..448, 448..512]);
        // Fewer units than threads: one share per unit.
        assert_eq!(Shares::new(20, 4).len(), 2);
        // More 16-row units than a cell's 32 bits count: wider units, still
        // whole 16-row groups, and every row inside one of them.
        let huge = (u32::MAX as usize + 5) * UNIT_ROWS;
        let shares = Shares::new(huge, 2);
        assert_eq!(shares.unit_rows, 2 * UNIT_ROWS);
        let last = claim(&shares.cells[1].0, 1, End::Back).map(|u| shares.to_rows(u));
        assert_eq!(last, Some(huge - 2 * UNIT_ROWS..huge));
    }

    #[test]
    fn a_thief_takes_from_the_back_and_the_owner_stops_where_it_began() {
        let shares = Shares::new(1024, 2);
        let stolen = claim(&shares.cells[0].0, 2, End::Back).map(|u| shares.to_rows(u));
        assert_eq!(stolen, Some(480..512));
        let mut owner = Vec::new();
        while let Some(units) = claim(&shares.cells[0].0, shares.owner_units, End::Front) {
            owner.push(shares.to_rows(units));
        }
        assert_eq!(owner, vec![0..240, 240..352, 352..416, 416..480]);
    }

    #[test]
    fn racing_threads_claim_every_row_exactly_once() {
        for (rows, threads) in [(1024, 2), (640, 3), (262_144, 4), (100, 8)] {
            for _ in 0..20 {
                let shares = Shares::new(rows, threads);
                let ranges = Mutex::new(Vec::new());
                std::thread::scope(|scope| {
                    for own in 0..shares.len() {
                        let (shares, ranges) = (&shares, &ranges);
                        scope.spawn(move || {
                            shares.work(own, |r| {
                                ranges.lock().unwrap_or_else(|p| p.into_inner()).push(r);
                            });
                        });
                    }
                });
                covered_once(
                    rows,
                    &ranges.into_inner().unwrap_or_else(|p| p.into_inner()),
                );
            }
        }
    }
}
