//! Continuous batching: a bounded queue of generation jobs and `--parallel`
//! slots, driven by one engine thread. Each turn of the loop admits queued
//! jobs into free slots (prefill, preferring the slot whose cache shares the
//! longest prefix with the prompt), then advances every active slot by one
//! token in a single batched decode step. A job whose receiver is gone (the
//! client disconnected, or the handler stopped at a stop string) is dropped
//! at the next turn and its slot is free again.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use tokio::sync::mpsc;

use super::backend::{InferenceBackend, SamplingParams, StepOutput};
use super::error::ApiError;
use super::metrics::Metrics;

/// One generation request, as the handlers hand it over.
pub struct Job {
    pub prompt: Vec<u32>,
    pub params: SamplingParams,
    /// Tokens to generate at most (already capped by the context).
    pub max_tokens: usize,
    /// Keep generating past end-of-generation tokens (up to `max_tokens`).
    pub ignore_eos: bool,
    pub events: mpsc::UnboundedSender<Event>,
}

#[derive(Debug)]
pub enum Event {
    /// The prompt is in the cache; `cached_tokens` of it were reused.
    Started {
        cached_tokens: usize,
    },
    Token(StepOutput),
    /// No more tokens: the model ended (`Stop`) or a limit was reached.
    Finished(FinishReason),
    Failed(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    Length,
}

#[derive(Debug, thiserror::Error)]
#[error("the queue is full ({0} waiting)")]
pub struct QueueFull(pub usize);

struct Queue {
    jobs: VecDeque<Job>,
    shutdown: bool,
}

/// The handlers' side: submit jobs.
#[derive(Clone)]
pub struct Scheduler {
    shared: Arc<(Mutex<Queue>, Condvar)>,
    max_queue: usize,
    metrics: Arc<Metrics>,
}

impl Scheduler {
    /// Refuses a request of more generations than the queue holds: it
    /// could never be queued whole, so a 503 (retry later) would lie.
    pub fn check_fits(&self, generations: usize) -> Result<(), ApiError> {
        let max_queue = self.max_queue.max(1);
        if generations <= max_queue {
            return Ok(());
        }
        Err(ApiError::invalid(
            "n",
            format!(
                "the request asks for {generations} generations but this server queues at most \
                 {max_queue} at once (its --queue); ask for fewer"
            ),
        ))
    }

    /// Queues a job, or refuses it when `max_queue` jobs already wait.
    pub fn submit(&self, job: Job) -> Result<(), QueueFull> {
        let (lock, wake) = &*self.shared;
        let mut queue = lock.lock().unwrap_or_else(|e| e.into_inner());
        // A job always passes through the queue, so it holds at least one.
        if queue.jobs.len() >= self.max_queue.max(1) {
            return Err(QueueFull(queue.jobs.len()));
        }
        queue.jobs.push_back(job);
        self.metrics
            .queue_depth
            .store(queue.jobs.len() as u64, Ordering::Relaxed);
        wake.notify_one();
        Ok(())
    }

    /// Stops the engine thread after the current turn.
    pub fn shutdown(&self) {
        let (lock, wake) = &*self.shared;
        lock.lock().unwrap_or_else(|e| e.into_inner()).shutdown = true;
        wake.notify_all();
    }
}

struct Active {
    job: Job,
    generated: usize,
}

/// Creates the slots and starts the engine thread.
pub fn start<B: InferenceBackend>(
    backend: Arc<B>,
    n_slots: usize,
    max_queue: usize,
    metrics: Arc<Metrics>,
) -> anyhow::Result<Scheduler> {
    let mut slots = Vec::with_capacity(n_slots);
    for _ in 0..n_slots {
        slots.push(backend.new_slot()?);
    }
    metrics.kv_capacity_tokens.store(
        (n_slots * backend.context_len_per_slot()) as u64,
        Ordering::Relaxed,
    );
    metrics.slots_total.store(n_slots as u64, Ordering::Relaxed);
    let shared = Arc::new((
        Mutex::new(Queue {
            jobs: VecDeque::new(),
            shutdown: false,
        }),
        Condvar::new(),
    ));
    let scheduler = Scheduler {
        shared: shared.clone(),
        max_queue,
        metrics: metrics.clone(),
    };
    std::thread::Builder::new()
        .name("phobos-engine".into())
        .spawn(move || run_loop(&*backend, slots, &shared, &metrics))?;
    Ok(scheduler)
}

fn run_loop<B: InferenceBackend>(
    backend: &B,
    mut slots: Vec<B::Slot>,
    shared: &(Mutex<Queue>, Condvar),
    metrics: &Metrics,
) {
    let mut active: Vec<Option<Active>> = slots.iter().map(|_| None).collect();
    loop {
        // Drop jobs nobody listens to any more.
        for entry in active.iter_mut() {
            if entry.as_ref().is_some_and(|a| a.job.events.is_closed()) {
                *entry = None;
            }
        }
        let admitted = {
            let (lock, wake) = shared;
            let mut queue = lock.lock().unwrap_or_else(|e| e.into_inner());
            while queue.jobs.is_empty() && active.iter().all(Option::is_none) && !queue.shutdown {
                queue = wake.wait(queue).unwrap_or_else(|e| e.into_inner());
            }
            if queue.shutdown {
                return;
            }
            let mut admitted = Vec::new();
            let free = active.iter().filter(|a| a.is_none()).count();
            while admitted.len() < free {
                let Some(job) = queue.jobs.pop_front() else {
                    break;
                };
                if !job.events.is_closed() {
                    admitted.push(job);
                }
            }
            metrics
                .queue_depth
                .store(queue.jobs.len() as u64, Ordering::Relaxed);
            admitted
        };
        admit(backend, &mut slots, &mut active, admitted, metrics);
        step_active(backend, &mut slots, &mut active, metrics);
        metrics.active_slots.store(
            active.iter().filter(|a| a.is_some()).count() as u64,
            Ordering::Relaxed,
        );
        let kv_used: usize = slots.iter().map(|s| backend.cached_tokens(s).len()).sum();
        metrics
            .kv_used_tokens
            .store(kv_used as u64, Ordering::Relaxed);
    }
}

/// Prompt tokens one batched prefill takes at most; more admitted prompts
/// go in further passes (this bounds the forward pass's activations).
const PREFILL_BATCH_TOKENS: usize = 2048;

/// Puts each admitted job in a free slot, then fills the slots' caches in
/// batched prefills (one forward pass for several prompts).
fn admit<B: InferenceBackend>(
    backend: &B,
    slots: &mut [B::Slot],
    active: &mut [Option<Active>],
    admitted: Vec<Job>,
    metrics: &Metrics,
) {
    let mut placed: Vec<(usize, Job)> = Vec::with_capacity(admitted.len());
    for job in admitted {
        let taken: Vec<usize> = placed.iter().map(|(index, _)| *index).collect();
        let Some(index) = best_free_slot(backend, slots, active, &taken, &job.prompt) else {
            // Cannot happen (jobs are admitted for free slots only); the
            // client still gets an answer.
            let _ = job
                .events
                .send(Event::Failed("no free slot for the request".into()));
            continue;
        };
        placed.push((index, job));
    }
    let mut group: Vec<(usize, Job)> = Vec::new();
    let mut group_tokens = 0;
    for (index, job) in placed {
        if !group.is_empty() && group_tokens + job.prompt.len() > PREFILL_BATCH_TOKENS {
            prefill(backend, slots, active, std::mem::take(&mut group), metrics);
            group_tokens = 0;
        }
        group_tokens += job.prompt.len();
        group.push((index, job));
    }
    if !group.is_empty() {
        prefill(backend, slots, active, group, metrics);
    }
}

fn prefill<B: InferenceBackend>(
    backend: &B,
    slots: &mut [B::Slot],
    active: &mut [Option<Active>],
    group: Vec<(usize, Job)>,
    metrics: &Metrics,
) {
    let started = Instant::now();
    let result = {
        let mut by_index: Vec<Option<&mut B::Slot>> = slots.iter_mut().map(Some).collect();
        let mut batch = Vec::with_capacity(group.len());
        for (index, job) in &group {
            if let Some(slot) = by_index.get_mut(*index).and_then(Option::take) {
                batch.push((slot, job.prompt.as_slice(), &job.params));
            }
        }
        backend.ingest(&mut batch)
    };
    let reused = match result {
        Ok(reused) if reused.len() == group.len() => reused,
        Ok(reused) => {
            let message = format!(
                "the engine prefilled {} prompts of {}",
                reused.len(),
                group.len()
            );
            for (_, job) in group {
                let _ = job.events.send(Event::Failed(message.clone()));
            }
            return;
        }
        Err(e) => {
            for (_, job) in group {
                let _ = job.events.send(Event::Failed(e.to_string()));
            }
            return;
        }
    };
    let (mut computed, mut cached) = (0, 0);
    for ((index, job), reused) in group.into_iter().zip(reused) {
        let reused = reused.min(job.prompt.len());
        computed += job.prompt.len() - reused;
        cached += reused;
        let _ = job.events.send(Event::Started {
            cached_tokens: reused,
        });
        active[index] = Some(Active { job, generated: 0 });
    }
    metrics.record_prefill(computed, cached, started.elapsed());
}

/// The free slot (not active, not in `taken`) whose cache shares the
/// longest prefix with `prompt`.
fn best_free_slot<B: InferenceBackend>(
    backend: &B,
    slots: &[B::Slot],
    active: &[Option<Active>],
    taken: &[usize],
    prompt: &[u32],
) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (index, slot) in slots.iter().enumerate() {
        if active[index].is_some() || taken.contains(&index) {
            continue;
        }
        let common = backend
            .cached_tokens(slot)
            .iter()
            .zip(prompt)
            .take_while(|(a, b)| a == b)
            .count();
        if best.is_none_or(|(best_common, _)| common > best_common) {
            best = Some((common, index));
        }
    }
    best.map(|(_, index)| index)
}

fn step_active<B: InferenceBackend>(
    backend: &B,
    slots: &mut [B::Slot],
    active: &mut [Option<Active>],
    metrics: &Metrics,
) {
    let indices: Vec<usize> = (0..active.len()).filter(|&i| active[i].is_some()).collect();
    if indices.is_empty() {
        return;
    }
    let started = Instant::now();
    let result = {
        let mut batch = Vec::with_capacity(indices.len());
        for (index, slot) in slots.iter_mut().enumerate() {
            if let Some(entry) = &active[index] {
                batch.push((slot, &entry.job.params));
            }
        }
        backend.decode_step(&mut batch)
    };
    let outputs = match result {
        Ok(outputs) if outputs.len() == indices.len() => outputs,
        Ok(outputs) => {
            fail_all(
                active,
                &indices,
                &format!(
                    "the engine returned {} outputs for {} slots",
                    outputs.len(),
                    indices.len()
                ),
            );
            return;
        }
        Err(e) => {
            fail_all(active, &indices, &e.to_string());
            return;
        }
    };
    metrics.record_decode(indices.len(), started.elapsed());
    let context_len = backend.context_len_per_slot();
    for (&index, output) in indices.iter().zip(outputs) {
        let Some(entry) = active[index].as_mut() else {
            continue;
        };
        let output = match output {
            Ok(output) => output,
            Err(e) => {
                let _ = entry.job.events.send(Event::Failed(e.to_string()));
                active[index] = None;
                continue;
            }
        };
        let is_end =
            !entry.job.ignore_eos && backend.tokenizer().is_end_of_generation(output.token);
        if is_end {
            let _ = entry.job.events.send(Event::Finished(FinishReason::Stop));
            active[index] = None;
            continue;
        }
        entry.generated += 1;
        let sent = entry.job.events.send(Event::Token(output));
        let full = backend.cached_tokens(&slots[index]).len() >= context_len;
        if sent.is_err() {
            active[index] = None;
        } else if entry.generated >= entry.job.max_tokens || full {
            let _ = entry.job.events.send(Event::Finished(FinishReason::Length));
            active[index] = None;
        }
    }
}

fn fail_all(active: &mut [Option<Active>], indices: &[usize], message: &str) {
    for &index in indices {
        if let Some(entry) = active[index].take() {
            let _ = entry.job.events.send(Event::Failed(message.to_owned()));
        }
    }
}
