//! The runtime autotuner, shared by every backend.
//!
//! A kernel's `launch` asks [`Tuner::lookup`] which config to run for its
//! [`TuneKey`] (kernel fingerprint, backend, device, shape bucket). The
//! answer comes from, in order:
//!
//! 1. this process's memory (every key is resolved once per process);
//! 2. the user's cache ([`store`], one file per key; a damaged, stale or
//!    foreign entry is a miss);
//! 3. the table embedded at build time (`PHOBOS_TUNE_TABLE`, [`table`]);
//!    an entry whose fingerprint, backend, device or bucket differs is
//!    ignored;
//! 4. tuning ([`Lookup::Tune`]): the launcher makes scratch copies of the
//!    tensors it writes and hands [`TuneSession::tune`] a closure that runs
//!    one config on them; every config is timed ([`measure`]) with the
//!    backend's [`VariantTimer`], configs that fail are skipped, and the
//!    winner is stored in the cache;
//! 5. the default config (the first of the tune space), also for a kernel
//!    with one config or a launch with an empty dim (nothing to time).
//!
//! `PHOBOS_TUNE` picks the mode ([`TuneMode`]): `on` (default) is the
//! order above; `off` skips the cache and tuning (the embedded table, else
//! the default: what the binary was built with); `force` skips the cache
//! and the embedded table and tunes every key once per process, storing
//! the new winners.

pub mod device_id;
pub mod entry;
pub mod key;
pub mod measure;
pub mod store;
pub mod table;

#[cfg(test)]
mod tests;

pub use entry::TuneEntry;
pub use key::{TuneKey, bucket};
pub use measure::{HostTimer, Measured, Plan, VariantTimer};
pub use store::Store;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::{Device, Result};

/// The environment variable that picks the [`TuneMode`].
pub const TUNE_ENV: &str = "PHOBOS_TUNE";

/// When the tuner times configs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TuneMode {
    /// Cache, embedded table, tuning, default.
    #[default]
    On,
    /// Embedded table, default: never times, never reads the cache.
    Off,
    /// Tuning first (once per key and process), ignoring stored winners.
    Force,
}

/// A `PHOBOS_TUNE` value other than `on`, `off` or `force`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("PHOBOS_TUNE={value:?} is not a tune mode; expected `on`, `off` or `force`")]
pub struct BadTuneMode {
    pub value: String,
}

impl TuneMode {
    /// Parses a `PHOBOS_TUNE` value (`None` or blank: [`TuneMode::On`]).
    pub fn from_value(value: Option<&str>) -> Result<TuneMode, BadTuneMode> {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("") | Some("on") | Some("1") => Ok(TuneMode::On),
            Some("off") | Some("0") => Ok(TuneMode::Off),
            Some("force") => Ok(TuneMode::Force),
            Some(_) => Err(BadTuneMode {
                value: value.unwrap_or_default().to_string(),
            }),
        }
    }
}

/// What a launch asks the tuner.
#[derive(Debug, Clone, Copy)]
pub struct TuneRequest<'a> {
    /// The kernel's name.
    pub kernel: &'static str,
    /// `KERNEL.source_hash`.
    pub source_hash: u64,
    /// The compiler's version (`ARTIFACT.fingerprint.compiler_version`).
    pub compiler_version: &'static str,
    /// Each config of the tune space as `NAME=value,...`, the default first.
    pub configs: &'static [&'static str],
    /// The kernel's embedded table lines (`TUNE_TABLE`).
    pub embedded: &'static [&'static str],
    pub device: &'a Device,
    /// The symbolic dims' extents in `KERNEL.dims` order.
    pub dims: &'a [usize],
}

/// Where a config came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Memory,
    Cache,
    Embedded,
    Tuned,
    Default,
}

/// Counters of what the tuner did, for tests and `phobos-kbench`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TuneStats {
    /// Keys answered from the user's cache.
    pub cache_hits: usize,
    /// Keys answered from an embedded table.
    pub embedded_hits: usize,
    /// Keys that were tuned.
    pub tuned: usize,
    /// Timed variant runs, over all tuning.
    pub timed_runs: usize,
    /// Keys that fell back to the default config.
    pub defaults: usize,
}

#[derive(Default)]
struct Counters {
    cache_hits: AtomicUsize,
    embedded_hits: AtomicUsize,
    tuned: AtomicUsize,
    timed_runs: AtomicUsize,
    defaults: AtomicUsize,
}

/// Process memory: (kernel, source hash, backend, bucket) -> config index.
/// The device is the one this process runs on, so it is not part of it.
type MemoryKey = (&'static str, u64, &'static str, Vec<usize>);

/// The autotuner. [`Tuner::global`] is the one `launch` uses.
pub struct Tuner {
    mode: TuneMode,
    store: Option<Store>,
    plan: Plan,
    memory: Mutex<HashMap<MemoryKey, (usize, Source)>>,
    counters: Counters,
}

impl std::fmt::Debug for Tuner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tuner")
            .field("mode", &self.mode)
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

static GLOBAL: OnceLock<Tuner> = OnceLock::new();

/// A tuning to do: the launcher runs [`TuneSession::tune`] with a closure
/// that launches one config (by index) on scratch copies of its tensors.
#[derive(Debug)]
pub struct TuneSession<'t> {
    tuner: &'t Tuner,
    key: TuneKey,
    memory_key: MemoryKey,
    configs: &'static [&'static str],
    device: Device,
}

/// The tuner's answer.
#[derive(Debug)]
pub enum Lookup<'t> {
    /// Run this config (index into the tune space).
    Use(usize, Source),
    /// Nothing stored: tune first.
    Tune(Box<TuneSession<'t>>),
}

impl Tuner {
    /// A tuner with `mode`, storing winners in `store` (`None`: memory only).
    pub fn new(mode: TuneMode, store: Option<Store>) -> Tuner {
        Tuner {
            mode,
            store,
            plan: Plan::default(),
            memory: Mutex::new(HashMap::new()),
            counters: Counters::default(),
        }
    }

    /// The same, with another timing plan (tests use short ones).
    pub fn with_plan(mut self, plan: Plan) -> Tuner {
        self.plan = plan;
        self
    }

    /// The process-wide tuner: `PHOBOS_TUNE` (a bad value is reported once
    /// and `on` used), the cache in [`store::default_dir`].
    pub fn global() -> &'static Tuner {
        GLOBAL.get_or_init(|| {
            let value = std::env::var(TUNE_ENV).ok();
            let mode = TuneMode::from_value(value.as_deref()).unwrap_or_else(|err| {
                tracing::warn!(%err, "autotuning stays on");
                TuneMode::On
            });
            Tuner::new(mode, store::default_dir().map(Store::new))
        })
    }

    pub fn mode(&self) -> TuneMode {
        self.mode
    }

    pub fn store(&self) -> Option<&Store> {
        self.store.as_ref()
    }

    /// What this tuner has done so far.
    pub fn stats(&self) -> TuneStats {
        let c = &self.counters;
        TuneStats {
            cache_hits: c.cache_hits.load(Ordering::Relaxed),
            embedded_hits: c.embedded_hits.load(Ordering::Relaxed),
            tuned: c.tuned.load(Ordering::Relaxed),
            timed_runs: c.timed_runs.load(Ordering::Relaxed),
            defaults: c.defaults.load(Ordering::Relaxed),
        }
    }

    /// The config for `request`, or a [`TuneSession`] when it must be tuned.
    pub fn lookup(&self, request: &TuneRequest<'_>) -> Lookup<'_> {
        let bucket = key::bucket(request.dims);
        let memory_key: MemoryKey = (
            request.kernel,
            request.source_hash,
            request.device.name(),
            bucket,
        );
        if let Some(&(index, _)) = self.memory().get(&memory_key) {
            return Lookup::Use(index, Source::Memory);
        }
        let key = TuneKey {
            kernel: request.kernel.to_string(),
            source_hash: request.source_hash,
            compiler_version: request.compiler_version.to_string(),
            backend: request.device.name().to_string(),
            device: device_id::device_id(request.device),
            bucket: memory_key.3.clone(),
        };
        let find = |entry: &TuneEntry| request.configs.iter().position(|c| *c == entry.config);
        let mut answer = None;
        if self.mode == TuneMode::On {
            answer = self
                .store
                .as_ref()
                .and_then(|store| store.get(&key))
                .and_then(|entry| find(&entry))
                .map(|index| (index, Source::Cache));
        }
        if answer.is_none() && self.mode != TuneMode::Force {
            answer = request
                .embedded
                .iter()
                .filter_map(|line| TuneEntry::parse(line))
                .find(|entry| entry.key == key)
                .and_then(|entry| find(&entry))
                .map(|index| (index, Source::Embedded));
        }
        // Nothing to choose between, or nothing to time (an empty dim).
        let untunable = request.configs.len() < 2 || request.dims.contains(&0);
        if answer.is_none() && (self.mode == TuneMode::Off || untunable) {
            answer = Some((0, Source::Default));
        }
        match answer {
            Some((index, source)) => {
                let counter = match source {
                    Source::Cache => &self.counters.cache_hits,
                    Source::Embedded => &self.counters.embedded_hits,
                    _ => &self.counters.defaults,
                };
                counter.fetch_add(1, Ordering::Relaxed);
                self.remember(memory_key, index, source);
                Lookup::Use(index, source)
            }
            None => Lookup::Tune(Box::new(TuneSession {
                tuner: self,
                key,
                memory_key,
                configs: request.configs,
                device: request.device.clone(),
            })),
        }
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, HashMap<MemoryKey, (usize, Source)>> {
        self.memory.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn remember(&self, key: MemoryKey, index: usize, source: Source) {
        self.memory().insert(key, (index, source));
    }

    /// Forgets what this process resolved (the next launch of each key
    /// reads the cache again, as a new process would).
    pub fn forget(&self) {
        self.memory().clear();
    }
}

impl TuneSession<'_> {
    /// Times every config with `run(index)` (on scratch tensors), stores
    /// the winner and returns its index; the default when none ran.
    pub fn tune(self, run: &mut dyn FnMut(usize) -> Result<()>) -> usize {
        let tuner = self.tuner;
        let candidates: Vec<usize> = (0..self.configs.len()).collect();
        let mut timer = measure::timer_for(&self.device);
        let start = Instant::now();
        let mut announced = false;
        let kernel = self.key.kernel.as_str();
        let bucket = &self.key.bucket;
        let mut progress = |done: usize, planned: usize| {
            if !announced && start.elapsed() > Duration::from_secs(1) {
                announced = true;
                tracing::info!(
                    "autotuning `{kernel}` for dims {bucket:?}: {} configs, {done}/{planned} runs done",
                    candidates.len()
                );
            }
        };
        let measured =
            measure::measure(&candidates, &tuner.plan, timer.as_mut(), run, &mut progress);
        tuner
            .counters
            .timed_runs
            .fetch_add(measured.runs, Ordering::Relaxed);
        tuner.counters.tuned.fetch_add(1, Ordering::Relaxed);
        for (index, error) in &measured.failed {
            tracing::debug!(kernel, config = self.configs[*index], %error, "config skipped while tuning");
        }
        let Some((winner, median)) = measured.winner() else {
            tracing::warn!(kernel, "no config ran while tuning; using the default");
            tuner.remember(self.memory_key, 0, Source::Default);
            return 0;
        };
        let elapsed = start.elapsed();
        let log_line = format!(
            "autotuned `{kernel}` for dims {bucket:?}: {} ({:.1} us median) of {} configs in {:.2} s",
            self.configs[winner],
            median.as_secs_f64() * 1e6,
            measured.medians.len(),
            elapsed.as_secs_f64()
        );
        if announced {
            tracing::info!("{log_line}");
        } else {
            tracing::debug!("{log_line}");
        }
        let entry = TuneEntry::new(
            self.key,
            self.configs[winner].to_string(),
            u64::try_from(median.as_nanos()).unwrap_or(u64::MAX),
            measured.medians.len(),
        );
        if let Some(store) = &tuner.store
            && let Err(err) = store.put(&entry)
        {
            tracing::warn!(%err, "could not store the tuned config");
        }
        tuner.remember(self.memory_key, winner, Source::Tuned);
        winner
    }
}
