//! One job handed to the pool: a sequence of steps (launches), each a range
//! of programs handed out in contiguous chunks through an atomic counter.
//! A participant finishes a step's chunks, waits until every program of the
//! step is done (the barrier between launches), then moves to the next.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::{Error, Result};

/// Runs program `linear` of a step.
pub type Task<'a> = dyn Fn(usize) -> Result<()> + Sync + 'a;

/// Chunks per participant: enough that a slow thread (preempted, on a
/// busier core) leaves work for the others, few enough that the counter is
/// not contended.
const CHUNKS_PER_THREAD: usize = 4;

/// One launch within a job.
pub struct Step<'a> {
    total: usize,
    chunk: usize,
    next: AtomicUsize,
    done: AtomicUsize,
    task: &'a Task<'a>,
}

impl<'a> Step<'a> {
    pub fn new(total: usize, threads: usize, task: &'a Task<'a>) -> Step<'a> {
        let chunk = total.div_ceil(threads.max(1) * CHUNKS_PER_THREAD).max(1);
        Step {
            total,
            chunk,
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            task,
        }
    }
}

/// The steps and what went wrong in them.
pub struct Job<'a> {
    steps: &'a [Step<'a>],
    abort: AtomicBool,
    failure: Mutex<Option<Error>>,
}

impl<'a> Job<'a> {
    pub fn new(steps: &'a [Step<'a>]) -> Job<'a> {
        Job {
            steps,
            abort: AtomicBool::new(false),
            failure: Mutex::new(None),
        }
    }

    /// Works on the job until every step is done (or it failed).
    pub fn participate(&self) {
        for step in self.steps {
            loop {
                if self.abort.load(Ordering::Relaxed) {
                    return;
                }
                let begin = step.next.fetch_add(step.chunk, Ordering::Relaxed);
                if begin >= step.total {
                    break;
                }
                let end = (begin + step.chunk).min(step.total);
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    (begin..end).try_for_each(|linear| (step.task)(linear))
                }));
                // Before the chunk counts as done (or the launch as failed):
                // another thread may read what it streamed once it does.
                crate::host::fence_streamed_stores();
                let failure = match outcome {
                    Ok(Ok(())) => None,
                    Ok(Err(error)) => Some(error),
                    Err(payload) => Some(Error::ProgramPanicked {
                        message: panic_message(payload.as_ref()),
                    }),
                };
                if let Some(error) = failure {
                    self.fail(error);
                    return;
                }
                step.done.fetch_add(end - begin, Ordering::AcqRel);
            }
            // The barrier: later steps may read what this one wrote.
            let mut spins = 0u32;
            while step.done.load(Ordering::Acquire) < step.total {
                if self.abort.load(Ordering::Relaxed) {
                    return;
                }
                spins += 1;
                if spins < 1 << 10 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
    }

    fn fail(&self, error: Error) {
        let mut failure = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        failure.get_or_insert(error);
        self.abort.store(true, Ordering::Relaxed);
    }

    /// The first failure, once every participant has left.
    pub fn into_result(self) -> Result<()> {
        match self.failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_string()
    }
}
