//! `prefetch(T[..])`: cache-line prefetches of a tensor slice, spread over
//! the elementwise loops a program runs after asking for them.
//!
//! Asked for all at once, a slice's lines (16-64 KiB for a row kernel's
//! next rows) fill the core's miss queues and stall the loop behind them
//! until they arrive, which costs what the prefetch was meant to hide (a
//! row kernel moved 0.48x of a copy's bandwidth that way where it moved
//! 0.73x without; see `slice::load_in_place`). So the lines are queued,
//! and each generated loop over a tile fetches one line per
//! [`ELEMENTS_PER_LINE`] elements it computes ([`Prefetcher::pump`]): a
//! softmax that queues the next rows while it computes the exps of these
//! keeps the memory busy during its compute, which on one thread per core
//! nothing else does.

use super::slice::contiguous_runs;
use super::view::Readable;
use crate::Element;
use crate::host::Slice;

const LINE_BYTES: usize = 64;

/// Runs the queue holds; a slice with more rows than this has the rest
/// fetched at once, as a plain prefetch would.
const MAX_RUNS: usize = 16;

/// Elements of loop work per line fetched: one 64-byte line per 16 `f32`
/// results, so a queued slice the size of the tile being computed arrives
/// over that tile's loop.
pub const ELEMENTS_PER_LINE: usize = 16;

/// One program's queue of lines to prefetch (made per program by the code
/// `kernel!` generates when the kernel has a `prefetch` statement).
#[derive(Debug, Default)]
pub struct Prefetcher {
    /// `(next line address, end address)` per queued run, oldest at `head`.
    runs: [(usize, usize); MAX_RUNS],
    head: usize,
    len: usize,
}

impl Prefetcher {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues the in-bounds lines of `slices` of `view`. Slices a load
    /// would refuse queue nothing: the statement is a hint and never fails.
    pub fn push<T: Element, V: Readable<T>>(&mut self, view: &V, slices: &[Slice]) {
        contiguous_runs(view, slices, |first, len| {
            let start = first as usize & !(LINE_BYTES - 1);
            let end = first as usize + len * size_of::<T>();
            if self.len < MAX_RUNS {
                self.runs[(self.head + self.len) % MAX_RUNS] = (start, end);
                self.len += 1;
            } else {
                (start..end).step_by(LINE_BYTES).for_each(prefetch_line);
            }
        });
    }

    /// Lines still queued.
    pub fn queued_lines(&self) -> usize {
        (0..self.len)
            .map(|i| {
                let (next, end) = self.runs[(self.head + i) % MAX_RUNS];
                end.saturating_sub(next).div_ceil(LINE_BYTES)
            })
            .sum()
    }

    /// Fetches the queue's next lines for `elements` elements of loop work
    /// (one line per [`ELEMENTS_PER_LINE`]).
    #[inline(always)]
    pub fn pump(&mut self, elements: usize) {
        if self.len != 0 {
            self.fetch(elements.div_ceil(ELEMENTS_PER_LINE));
        }
    }

    fn fetch(&mut self, mut lines: usize) {
        while lines > 0 && self.len > 0 {
            let (next, end) = &mut self.runs[self.head];
            prefetch_line(*next);
            *next += LINE_BYTES;
            lines -= 1;
            if *next >= *end {
                self.head = (self.head + 1) % MAX_RUNS;
                self.len -= 1;
            }
        }
    }
}

#[inline(always)]
fn prefetch_line(address: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE is part of the x86_64 baseline, and a prefetch of any
        // address is harmless (it never faults).
        unsafe { _mm_prefetch::<_MM_HINT_T0>(address as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;

    #[test]
    fn queues_the_in_bounds_lines_and_pumps_them_out() {
        let device = Device::host();
        let x = device
            .tensor_from(&vec![1.0f32; 64 * 100], [64, 100])
            .unwrap();
        let guard = crate::host::PlainRead::new(&x).unwrap();
        let view = guard.view();
        let mut queue = Prefetcher::new();
        // Rows 62..66 of 64: two rows in bounds, columns 90..110 of 100:
        // ten columns, 40 bytes, one or two lines per row by alignment.
        queue.push(
            &view,
            &[
                Slice::Span { start: 62, len: 4 },
                Slice::Span { start: 90, len: 20 },
            ],
        );
        let lines = queue.queued_lines();
        assert!((2..=4).contains(&lines), "{lines}");
        queue.pump(ELEMENTS_PER_LINE * lines);
        assert_eq!(queue.queued_lines(), 0);
        // Out of bounds entirely, and a slice a load refuses: nothing.
        queue.push(&view, &[Slice::Span { start: 70, len: 4 }, Slice::Full]);
        queue.push(&view, &[Slice::Full]);
        assert_eq!(queue.queued_lines(), 0);
    }

    #[test]
    fn a_whole_tile_is_fetched_over_a_loop_of_its_size() {
        let device = Device::host();
        let x = device
            .tensor_from(&vec![0.5f32; 32 * 1024], [32, 1024])
            .unwrap();
        let guard = crate::host::PlainRead::new(&x).unwrap();
        let view = guard.view();
        let mut queue = Prefetcher::new();
        queue.push(&view, &[Slice::Span { start: 0, len: 32 }, Slice::Full]);
        // 32 rows of 4 KiB; more than MAX_RUNS rows: the rest went at once.
        assert_eq!(queue.queued_lines(), MAX_RUNS * 1024 * 4 / LINE_BYTES);
        for _ in 0..MAX_RUNS * 1024 / 256 {
            assert!(queue.queued_lines() > 0);
            queue.pump(256);
        }
        assert_eq!(queue.queued_lines(), 0);
    }
}
