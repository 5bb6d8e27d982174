//! Timing the candidates of one launch: every candidate once to warm up
//! (a candidate that fails is skipped from then on), the clear losers
//! dropped, then interleaved rounds (each round runs every survivor once,
//! starting at a different one), and the median per candidate. Interleaving
//! spreads slow phases of a busy machine over all candidates instead of
//! charging them to whichever ran then.

use std::time::{Duration, Instant};

use crate::{Backend, Device, Result};

/// Times one run of a variant with the backend's own clock: the host reads
/// the wall clock around the launch; the CUDA runtime plugs in events on its
/// stream (record, launch, record, synchronize, elapsed).
pub trait VariantTimer {
    fn time(&mut self, run: &mut dyn FnMut() -> Result<()>) -> Result<Duration>;
}

/// The host's timer: launches are synchronous, so the wall clock is exact.
#[derive(Debug, Default)]
pub struct HostTimer;

impl VariantTimer for HostTimer {
    fn time(&mut self, run: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        let start = Instant::now();
        run()?;
        Ok(start.elapsed())
    }
}

/// Times a CUDA variant between two events on the device's stream, so
/// only device time counts (launches are asynchronous).
pub struct CudaTimer {
    device: crate::CudaDevice,
}

impl VariantTimer for CudaTimer {
    fn time(&mut self, run: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        let timer = crate::cuda::EventTimer::new(&self.device)?;
        timer.start()?;
        run()?;
        let ms = timer.stop_ms()?;
        Ok(Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
    }
}

/// The timer for `device`'s backend.
pub fn timer_for(device: &Device) -> Box<dyn VariantTimer> {
    match device.backend() {
        Backend::Host(_) => Box::new(HostTimer),
        Backend::Cuda(cuda) => Box::new(CudaTimer {
            device: cuda.clone(),
        }),
    }
}

/// How many times to run what.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Timed rounds after the warm-up (the median is over these).
    pub rounds: usize,
    /// Candidates slower than this many times the fastest warm-up are
    /// dropped before the rounds.
    pub keep_within: f64,
    /// At most this many of the fastest warm-ups go on to the rounds.
    pub finalists: usize,
    /// Once this much time was spent, stop after at least `min_rounds`.
    pub budget: Duration,
    pub min_rounds: usize,
}

impl Default for Plan {
    fn default() -> Plan {
        Plan {
            rounds: 7,
            keep_within: 3.0,
            finalists: 8,
            budget: Duration::from_secs(20),
            min_rounds: 3,
        }
    }
}

/// The outcome of timing.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// `(candidate, median)` of every candidate that survived, fastest first.
    pub medians: Vec<(usize, Duration)>,
    /// Timed runs, warm-up included (each one a launch).
    pub runs: usize,
    /// Candidates whose run failed, with the error.
    pub failed: Vec<(usize, String)>,
}

impl Measured {
    /// The fastest candidate and its median.
    pub fn winner(&self) -> Option<(usize, Duration)> {
        self.medians.first().copied()
    }
}

/// Times `candidates` (indices passed to `run`) under `plan`. `progress`
/// is called after every timed run with (runs done, runs planned).
pub fn measure(
    candidates: &[usize],
    plan: &Plan,
    timer: &mut dyn VariantTimer,
    run: &mut dyn FnMut(usize) -> Result<()>,
    progress: &mut dyn FnMut(usize, usize),
) -> Measured {
    let start = Instant::now();
    let mut failed = Vec::new();
    let mut runs = 0;
    let mut planned = candidates.len() * (1 + plan.rounds);
    let mut warm = Vec::new();
    for &candidate in candidates {
        runs += 1;
        match timer.time(&mut || run(candidate)) {
            Ok(time) => warm.push((candidate, time)),
            Err(err) => failed.push((candidate, err.to_string())),
        }
        progress(runs, planned);
    }
    warm.sort_by_key(|&(candidate, time)| (time, candidate));
    let fastest = warm.first().map(|(_, t)| *t).unwrap_or_default();
    let limit = fastest.mul_f64(plan.keep_within.max(1.0));
    let mut alive: Vec<(usize, Vec<Duration>)> = warm
        .iter()
        .filter(|(_, t)| *t <= limit)
        .take(plan.finalists.max(1))
        .map(|(c, _)| (*c, Vec::new()))
        .collect();
    planned = runs + alive.len() * plan.rounds;
    for round in 0..plan.rounds {
        if round >= plan.min_rounds && start.elapsed() > plan.budget {
            break;
        }
        let count = alive.len();
        let mut dead = Vec::new();
        for offset in 0..count {
            let slot = (round + offset) % count;
            let candidate = alive[slot].0;
            runs += 1;
            match timer.time(&mut || run(candidate)) {
                Ok(time) => alive[slot].1.push(time),
                Err(err) => {
                    failed.push((candidate, err.to_string()));
                    dead.push(candidate);
                }
            }
            progress(runs, planned);
        }
        alive.retain(|(candidate, _)| !dead.contains(candidate));
    }
    let mut medians: Vec<(usize, Duration)> = alive
        .into_iter()
        .filter(|(_, times)| !times.is_empty())
        .map(|(candidate, mut times)| {
            times.sort();
            (candidate, times[times.len() / 2])
        })
        .collect();
    medians.sort_by_key(|&(candidate, median)| (median, candidate));
    Measured {
        medians,
        runs,
        failed,
    }
}
