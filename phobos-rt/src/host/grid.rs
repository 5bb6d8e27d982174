//! Running a launch grid of programs on the host.

use crate::{Error, Result};
use rayon::prelude::*;

/// Runs `program([pid0, pid1, pid2])` once for every point of `grid`, in
/// parallel on rayon's pool. `pid0` varies fastest. An empty grid runs
/// nothing. Errors only when a grid dim does not fit an `i32` program id.
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
    let max = i32::MAX as usize;
    let too_large = || Error::GridTooLarge { grid, max };
    if grid.iter().any(|&g| g > max) {
        return Err(too_large());
    }
    let [g0, g1, g2] = grid;
    let plane = g0.checked_mul(g1).ok_or_else(too_large)?;
    let total = plane.checked_mul(g2).ok_or_else(too_large)?;
    // Every coordinate is below its grid dim, which fits i32 (checked above).
    let pid_of = |linear: usize| {
        [
            (linear % g0) as i32,
            ((linear / g0) % g1) as i32,
            (linear / plane) as i32,
        ]
    };
    match total {
        0 => Ok(()),
        1 => program([0, 0, 0]),
        _ => (0..total)
            .into_par_iter()
            .try_for_each(|linear| program(pid_of(linear))),
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
}
