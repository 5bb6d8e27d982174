//! Timing a closure the same way for every implementation: one warm-up
//! run, then runs until at least `MIN_TOTAL` has passed and `MIN_RUNS`
//! were made (at most `MAX_RUNS`); the median is reported.

use std::time::{Duration, Instant};

use anyhow::Result;

const MIN_TOTAL: Duration = Duration::from_millis(500);
const MIN_RUNS: usize = 5;
const MAX_RUNS: usize = 200;

/// The median of the timed runs of `run`.
pub fn median_time(mut run: impl FnMut() -> Result<()>) -> Result<Duration> {
    run()?;
    let start = Instant::now();
    let mut times = Vec::new();
    while times.len() < MAX_RUNS && (times.len() < MIN_RUNS || start.elapsed() < MIN_TOTAL) {
        let begin = Instant::now();
        run()?;
        times.push(begin.elapsed());
    }
    times.sort();
    Ok(times[times.len() / 2])
}

/// Mean time of one call over `count` back-to-back calls (for launch
/// latency, where one call is too short to time alone), best of 5 batches.
pub fn mean_time(count: usize, mut run: impl FnMut() -> Result<()>) -> Result<Duration> {
    for _ in 0..count.min(1000) {
        run()?;
    }
    let mut best = Duration::MAX;
    for _ in 0..5 {
        let begin = Instant::now();
        for _ in 0..count {
            run()?;
        }
        best = best.min(begin.elapsed() / count.max(1) as u32);
    }
    Ok(best)
}
