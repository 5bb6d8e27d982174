//! Timing a closure the same way for every implementation: one warm-up
//! run, then runs until at least `MIN_TOTAL` has passed and `MIN_RUNS`
//! were made (at most `MAX_RUNS`); the median is reported. A kernel and
//! the references it is a ratio of can be timed in turns
//! ([`median_turns`]), so both medians see the same memory traffic from
//! the rest of the machine.

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

/// The median time of `run(i)` for each `i` in `0..count`, timed in turns
/// (each `i` once, then each again, ...) under the same rules as [`median_time`] for the round. On
/// a machine whose memory bandwidth and 300 MiB L3 other tenants share, a
/// reference timed once at the start moved a bandwidth-bound kernel's
/// ratio to it by a third between runs (0.36x to 0.50x of copy for one
/// softmax build, session 31), and back-to-back runs of a 128 MiB copy
/// found their data in L3 where the kernel, whose streaming stores leave
/// the cache, did not; taken in turns, every run starts from the others'
/// traffic.
pub fn median_turns(
    count: usize,
    mut run: impl FnMut(usize) -> Result<()>,
) -> Result<Vec<Duration>> {
    for i in 0..count {
        run(i)?;
    }
    let start = Instant::now();
    let mut times = vec![Vec::new(); count];
    let mut rounds = 0;
    while rounds < MAX_RUNS && (rounds < MIN_RUNS || start.elapsed() < count as u32 * MIN_TOTAL) {
        for (i, times) in times.iter_mut().enumerate() {
            let begin = Instant::now();
            run(i)?;
            times.push(begin.elapsed());
        }
        rounds += 1;
    }
    Ok(times
        .into_iter()
        .map(|mut times| {
            times.sort();
            times[times.len() / 2]
        })
        .collect())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every run is called in turn, the same number of times, and each
    /// gets the median of its own times.
    #[test]
    fn turns_alternate_and_keep_each_runs_median() {
        let mut calls = Vec::new();
        let medians = median_turns(3, |i| {
            calls.push(i);
            if i == 2 {
                std::thread::sleep(Duration::from_millis(2));
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(medians.len(), 3);
        assert!(calls.len() >= 3 * (MIN_RUNS + 1), "{}", calls.len());
        assert!(
            calls.iter().enumerate().all(|(at, &i)| i == at % 3),
            "{calls:?}"
        );
        assert!(medians[2] >= Duration::from_millis(2), "{medians:?}");
        assert!(medians[0] < Duration::from_millis(2), "{medians:?}");
    }

    #[test]
    fn an_error_in_any_run_ends_the_timing() {
        let result = median_turns(2, |i| {
            if i == 1 {
                anyhow::bail!("copy failed");
            }
            Ok(())
        });
        assert!(result.is_err_and(|err| err.to_string() == "copy failed"));
    }
}
