//! The host device's persistent thread pool.
//!
//! Workers are started once (pinned one per physical core, best effort,
//! only with `PHOBOS_PIN_THREADS=1`: `topology`), spin for a short while after each job and then park, so back-to-back
//! launches (a model's decode step) find them awake. The launching thread
//! works too. A launch is a [`Job`] of steps; each step's programs are handed
//! out in contiguous chunks through an atomic counter, and a step finishes
//! (a barrier) before the next starts, so a recorded sequence of launches
//! ([`Graph`]) runs with one wake-up.
//!
//! A program that panics fails the launch with [`Error::ProgramPanicked`](crate::Error::ProgramPanicked);
//! it never takes a worker down or hangs the launch. A launch from inside a
//! program (or while the pool is busy with this thread's own launch) runs
//! on the calling thread alone.
//!
//! How a worker finds a job without ever touching a finished one: it counts
//! itself `inside` before reading the job pointer, and the launcher clears
//! the pointer before waiting for `inside` to drop to zero (all `SeqCst`),
//! so a worker either sees the pointer cleared or is waited for.

mod graph;
mod job;
pub mod topology;

#[cfg(test)]
mod tests;

pub use graph::{Graph, Recorder};
use job::{Job, Step, Task};

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::Result;

/// How long an idle worker spins (then yields) before it parks.
const SPIN: Duration = Duration::from_micros(300);

thread_local! {
    /// Set on pool workers and on a launcher while it works on its job.
    static IN_POOL: Cell<bool> = const { Cell::new(false) };
}

struct Shared {
    generation: AtomicU64,
    job: AtomicPtr<Job<'static>>,
    inside: AtomicUsize,
    sleepers: AtomicUsize,
    shutdown: AtomicBool,
    park: Mutex<()>,
    wake: Condvar,
}

/// A fixed set of worker threads plus the launching thread.
pub struct ThreadPool {
    shared: Arc<Shared>,
    threads: usize,
    /// The count asked for (`threads` can be lower if a spawn failed).
    requested: usize,
    launch: Mutex<()>,
    workers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadPool")
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

static GLOBAL: OnceLock<ThreadPool> = OnceLock::new();

/// The process-wide pool of the host device, created on first use with
/// `PHOBOS_THREADS` threads (default: the physical cores this process may
/// use). A bad `PHOBOS_THREADS` is reported once and the default is used.
pub fn global() -> &'static ThreadPool {
    GLOBAL.get_or_init(|| {
        let (cpus, cores) = topology::host_cpus();
        let value = std::env::var(topology::THREADS_ENV).ok();
        let threads = topology::thread_count_from(value.as_deref(), cores).unwrap_or_else(|err| {
            tracing::warn!(%err, cores, "using the physical core count");
            cores
        });
        ThreadPool::new(threads, &pinned_cpus(cpus))
    })
}

/// `cpus` when `PHOBOS_PIN_THREADS` asks for pinned workers, else none.
/// A bad value is reported and leaves them unpinned.
fn pinned_cpus(cpus: Vec<usize>) -> Vec<usize> {
    let value = std::env::var(topology::PIN_ENV).ok();
    match topology::pinning_from(value.as_deref()) {
        Ok(true) => cpus,
        Ok(false) => Vec::new(),
        Err(err) => {
            tracing::warn!(%err, "leaving pool workers unpinned");
            Vec::new()
        }
    }
}

/// The global pool was already started with another thread count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the host thread pool already runs {running} threads (asked for {requested}); it is sized once per process, before its first use"
)]
pub struct PoolAlreadyStarted {
    pub running: usize,
    pub requested: usize,
}

/// Starts the process-wide pool with `threads` participants (an explicit
/// count, e.g. a CLI's `-t`, which wins over `PHOBOS_THREADS`). Calling it
/// again with the same count, or after the pool started with that count,
/// is fine; another count once the pool runs is an error (the pool is
/// sized once per process).
pub fn init_global(threads: usize) -> std::result::Result<&'static ThreadPool, PoolAlreadyStarted> {
    let requested = threads.max(1);
    let pool = GLOBAL.get_or_init(|| {
        let (cpus, _) = topology::host_cpus();
        ThreadPool::new(requested, &pinned_cpus(cpus))
    });
    // A pool may come up short when the OS refuses a thread; that is not
    // a conflict with the request.
    if pool.requested == requested {
        Ok(pool)
    } else {
        Err(PoolAlreadyStarted {
            running: pool.threads,
            requested,
        })
    }
}

impl ThreadPool {
    /// A pool of `threads` participants (the launcher counts as one, so
    /// `threads - 1` workers), worker `i` pinned to `cpus[i + 1]` when given
    /// (`cpus` empty: none pinned).
    pub fn new(threads: usize, cpus: &[usize]) -> ThreadPool {
        let threads = threads.max(1);
        let shared = Arc::new(Shared {
            generation: AtomicU64::new(0),
            job: AtomicPtr::new(std::ptr::null_mut()),
            inside: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            shutdown: AtomicBool::new(false),
            park: Mutex::new(()),
            wake: Condvar::new(),
        });
        let mut workers = Vec::new();
        for index in 1..threads {
            let shared = Arc::clone(&shared);
            let cpu = cpus.get(index).copied();
            let spawned = std::thread::Builder::new()
                .name(format!("phobos-worker-{index}"))
                .spawn(move || worker_loop(&shared, cpu));
            match spawned {
                Ok(handle) => workers.push(handle),
                Err(err) => tracing::warn!(%err, "could not start a pool worker"),
            }
        }
        ThreadPool {
            shared,
            threads: workers.len() + 1,
            requested: threads,
            launch: Mutex::new(()),
            workers,
        }
    }

    /// Participants in a launch: the workers plus the launching thread.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `task(i)` for every `i < total`; the first error (or panic) is
    /// returned, after which programs not yet started are skipped.
    pub fn run(&self, total: usize, task: &Task<'_>) -> Result<()> {
        match total {
            0 => Ok(()),
            1 => run_inline(&[(1, task)]),
            _ => self.run_steps(&[(total, task)]),
        }
    }

    /// Runs each `(total, task)` in order, with a barrier between them, in one
    /// wake-up of the workers.
    pub fn run_steps(&self, launches: &[(usize, &Task<'_>)]) -> Result<()> {
        if self.threads == 1 || IN_POOL.with(Cell::get) {
            return run_inline(launches);
        }
        let _serial = self.launch.lock().unwrap_or_else(|p| p.into_inner());
        let steps: Vec<Step<'_>> = launches
            .iter()
            .map(|&(total, task)| Step::new(total, self.threads, task))
            .collect();
        let job = Job::new(&steps);
        let shared = &*self.shared;
        // Workers only reach the job through this pointer, which is cleared
        // below before the job goes out of scope.
        let job_ptr: *const Job<'_> = &job;
        shared
            .job
            .store(job_ptr.cast::<Job<'static>>().cast_mut(), Ordering::SeqCst);
        shared.generation.fetch_add(1, Ordering::SeqCst);
        if shared.sleepers.load(Ordering::SeqCst) > 0 {
            let _park = shared.park.lock().unwrap_or_else(|p| p.into_inner());
            shared.wake.notify_all();
        }
        IN_POOL.with(|flag| flag.set(true));
        job.participate();
        IN_POOL.with(|flag| flag.set(false));
        shared.job.store(std::ptr::null_mut(), Ordering::SeqCst);
        let mut spins = 0u32;
        while shared.inside.load(Ordering::SeqCst) != 0 {
            spins += 1;
            if spins < 1 << 10 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        job.into_result()
    }
}

/// Every step on the calling thread, in order.
fn run_inline(launches: &[(usize, &Task<'_>)]) -> Result<()> {
    let steps: Vec<Step<'_>> = launches
        .iter()
        .map(|&(total, task)| Step::new(total, 1, task))
        .collect();
    let job = Job::new(&steps);
    let was_in_pool = IN_POOL.with(|flag| flag.replace(true));
    job.participate();
    IN_POOL.with(|flag| flag.set(was_in_pool));
    job.into_result()
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        let shared = &*self.shared;
        shared.shutdown.store(true, Ordering::SeqCst);
        shared.generation.fetch_add(1, Ordering::SeqCst);
        {
            let _park = shared.park.lock().unwrap_or_else(|p| p.into_inner());
            shared.wake.notify_all();
        }
        for worker in self.workers.drain(..) {
            if worker.join().is_err() {
                tracing::warn!("a pool worker ended with a panic");
            }
        }
    }
}

fn worker_loop(shared: &Shared, cpu: Option<usize>) {
    if let Some(cpu) = cpu {
        topology::pin_current_thread(cpu);
    }
    IN_POOL.with(|flag| flag.set(true));
    let mut seen = 0;
    loop {
        seen = wait_for_generation(shared, seen);
        if shared.shutdown.load(Ordering::SeqCst) {
            return;
        }
        shared.inside.fetch_add(1, Ordering::SeqCst);
        let job = shared.job.load(Ordering::SeqCst);
        // SAFETY: a non-null pointer is a job whose launcher has not yet
        // cleared it, and the launcher waits for `inside` to reach zero
        // after clearing it (module doc), so the job outlives this use.
        if let Some(job) = unsafe { job.as_ref() } {
            job.participate();
        }
        shared.inside.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Spins, then yields, then parks until the generation moves past `seen`.
fn wait_for_generation(shared: &Shared, seen: u64) -> u64 {
    let start = Instant::now();
    let mut spins = 0u32;
    loop {
        let generation = shared.generation.load(Ordering::Acquire);
        if generation != seen {
            return generation;
        }
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(64) {
            if start.elapsed() > SPIN {
                break;
            }
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
    let mut guard = shared.park.lock().unwrap_or_else(|p| p.into_inner());
    shared.sleepers.fetch_add(1, Ordering::SeqCst);
    loop {
        let generation = shared.generation.load(Ordering::SeqCst);
        if generation != seen {
            shared.sleepers.fetch_sub(1, Ordering::SeqCst);
            return generation;
        }
        guard = shared.wake.wait(guard).unwrap_or_else(|p| p.into_inner());
    }
}
