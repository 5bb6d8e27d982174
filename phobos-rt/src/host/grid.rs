//! Running a launch grid of programs on the host, on the host device's
//! persistent thread pool ([`crate::pool`]).

use crate::{Error, Result};

/// Runs `program([pid0, pid1, pid2])` once for every point of `grid`, in
/// parallel on the host pool. `pid0` varies fastest. An empty grid runs
/// nothing. Errors when a grid dim does not fit an `i32` program id, or
/// when a program panics ([`Error::ProgramPanicked`]).
pub fn run_grid(grid: [usize; 3], program: impl Fn([i32; 3]) + Sync) -> Result<()> {
    try_run_grid(grid, |pid| {
        program(pid);
        Ok(())
    })
}

/// [`run_grid`] for programs that can fail: the first error returned by any
/// program is returned (other programs may or may not have run).
pub fn try_run_grid(
    grid: [usize; 3],
    program: impl Fn([i32; 3]) -> Result<()> + Sync,
) -> Result<()> {
    let index = GridIndex::new(grid)?;
    crate::pool::global().run(index.total(), &|linear| program(index.program_id(linear)))
}

/// Maps a linear program index to its 3-D program id, `pid0` fastest.
#[derive(Debug, Clone, Copy)]
pub struct GridIndex {
    g0: usize,
    g1: usize,
    plane: usize,
    total: usize,
}

impl GridIndex {
    /// Checks that every dim fits an `i32` program id and the count `usize`.
    pub fn new(grid: [usize; 3]) -> Result<GridIndex> {
        let max = i32::MAX as usize;
        let too_large = || Error::GridTooLarge { grid, max };
        if grid.iter().any(|&g| g > max) {
            return Err(too_large());
        }
        let [g0, g1, g2] = grid;
        let plane = g0.checked_mul(g1).ok_or_else(too_large)?;
        let total = plane.checked_mul(g2).ok_or_else(too_large)?;
        Ok(GridIndex {
            g0,
            g1,
            plane,
            total,
        })
    }

    /// Number of programs.
    pub fn total(&self) -> usize {
        self.total
    }

    /// The program id of program `linear` (below [`GridIndex::total`]).
    pub fn program_id(&self, linear: usize) -> [i32; 3] {
        // Every coordinate is below its grid dim, which fits i32 (checked in `new`).
        [
            (linear % self.g0) as i32,
            ((linear / self.g0) % self.g1) as i32,
            (linear / self.plane) as i32,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn every_program_runs_once() {
        let seen = Mutex::new(Vec::new());
        run_grid([3, 2, 2], |pid| seen.lock().unwrap().push(pid)).unwrap();
        let mut seen = seen.into_inner().unwrap();
        seen.sort();
        let mut expected = Vec::new();
        for a in 0..3 {
            for b in 0..2 {
                for c in 0..2 {
                    expected.push([a, b, c]);
                }
            }
        }
        assert_eq!(seen, expected);
    }

    #[test]
    fn empty_grid_runs_nothing_and_huge_grid_is_an_error() {
        run_grid([0, 5, 1], |_| unreachable!()).unwrap();
        let err = run_grid([1 << 40, 1, 1], |_| {}).unwrap_err();
        assert!(matches!(err, Error::GridTooLarge { .. }));
        let err = run_grid([1 << 30, 1 << 30, 1 << 30], |_| {}).unwrap_err();
        assert!(matches!(err, Error::GridTooLarge { .. }));
    }

    #[test]
    fn program_errors_propagate() {
        let err = try_run_grid([4, 1, 1], |pid| {
            if pid[0] == 2 {
                Err(Error::TileRank { rank: 9, max: 4 })
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert_eq!(err, Error::TileRank { rank: 9, max: 4 });
    }

    #[test]
    fn a_panicking_program_is_an_error_not_a_hang() {
        for grid in [[1, 1, 1], [1000, 1, 1]] {
            let err = run_grid(grid, |pid| {
                if pid[0] == grid[0] as i32 - 1 {
                    panic!("program {} gave up", pid[0]);
                }
            })
            .unwrap_err();
            let Error::ProgramPanicked { message } = err else {
                panic!("expected ProgramPanicked, got {err:?}");
            };
            assert!(message.contains("gave up"), "{message}");
        }
        // The pool still works afterwards.
        let count = std::sync::atomic::AtomicUsize::new(0);
        run_grid([77, 3, 1], |_| {
            count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(count.into_inner(), 231);
    }
}
