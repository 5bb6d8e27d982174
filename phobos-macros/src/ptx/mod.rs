//! Compiling each kernel to PTX at expansion time (feature `ptx`): one
//! variant per (config that survives pruning) x (chip in `PHOBOS_CHIPS`) x
//! index width, in parallel, through the on-disk [`cache`]; the result is
//! compressed for the kernel module's `ARTIFACT`.

pub mod cache;

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use phobos_build::back::fingerprint;
use phobos_build::back::host::{EmbeddedPtx, EmbeddedVariant, PrunedVariant};
use phobos_build::back::mlir::{self, MlirError};
use phobos_build::ir::{Config, Kernel};

use self::cache::{Cache, Entry};

/// Index widths embedded per (config, chip). 32-bit offsets cover tensors of
/// up to 2^31 elements and are what the runtime launches; `phobos-compile
/// --index-bits 64` produces the wide form on demand.
pub const EMBEDDED_INDEX_BITS: [u32; 1] = [32];

/// What a build compiles for and where it caches.
#[derive(Clone, Debug)]
pub struct Settings {
    pub chips: Vec<String>,
    pub index_bits: Vec<u32>,
    /// `None`: no cache (nothing read, nothing written, no log).
    pub cache: Option<Cache>,
    /// Compilations running at once.
    pub jobs: usize,
}

impl Settings {
    /// `PHOBOS_CHIPS`, the cache dir from the environment, one job per core.
    pub fn from_env() -> Settings {
        Settings {
            chips: mlir::chips_from_env(),
            index_bits: EMBEDDED_INDEX_BITS.to_vec(),
            cache: cache::dir_from_env().map(Cache::new),
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// One kernel's PTX, and how it was obtained.
#[derive(Clone, Debug)]
pub struct KernelBuild {
    pub embedded: EmbeddedPtx,
    /// Variants run through MLIR in this build.
    pub compiled: usize,
    /// Variants read from the cache.
    pub cached: usize,
    /// (config, chip) pairs that do not fit.
    pub pruned: usize,
}

/// A kernel that cannot become PTX: the first failure, with where it happened.
#[derive(Clone, Debug)]
pub struct BuildError(pub String);

enum Outcome {
    Built { entry: Entry, from_cache: bool },
    Pruned(String),
    Failed(MlirError),
}

struct Job {
    config: Config,
    chip: String,
    index_bits: u32,
}

/// Compiles (or loads) every variant of `kernel` whose source text hashes
/// to `source_hash`, and logs one line to the cache's log.
pub fn build_kernel(
    kernel: &Kernel,
    source_hash: u64,
    settings: &Settings,
) -> Result<KernelBuild, BuildError> {
    let jobs: Vec<Job> = settings
        .chips
        .iter()
        .flat_map(|chip| {
            kernel.configs().into_iter().flat_map(move |config| {
                settings.index_bits.iter().map(move |&index_bits| Job {
                    config: config.clone(),
                    chip: chip.clone(),
                    index_bits,
                })
            })
        })
        .collect();
    let outcomes = run_jobs(kernel, source_hash, settings, &jobs);

    let mut embedded = EmbeddedPtx::default();
    let (mut compiled, mut cached, mut pruned) = (0, 0, 0);
    for (job, outcome) in jobs.iter().zip(outcomes) {
        match outcome {
            Outcome::Built { entry, from_cache } => {
                if from_cache {
                    cached += 1;
                } else {
                    compiled += 1;
                }
                embedded.variants.push(EmbeddedVariant {
                    config: job.config.clone(),
                    chip: job.chip.clone(),
                    index_bits: job.index_bits,
                    ptx_lz4: lz4_flex::block::compress_prepend_size(entry.ptx.as_bytes()),
                    ptx_len_bytes: entry.ptx.len(),
                    threads: entry.threads,
                    shared_bytes: entry.shared_bytes,
                });
            }
            Outcome::Pruned(reason) => {
                pruned += 1;
                let already = embedded
                    .pruned
                    .iter()
                    .any(|p| p.config == job.config && p.chip == job.chip);
                if !already {
                    embedded.pruned.push(PrunedVariant {
                        config: job.config.clone(),
                        chip: job.chip.clone(),
                        reason,
                    });
                }
            }
            Outcome::Failed(error) => {
                return Err(BuildError(format!(
                    "kernel `{}` [{}] for {} (index bits {}): {error}",
                    kernel.name, job.config, job.chip, job.index_bits
                )));
            }
        }
    }
    let build = KernelBuild {
        embedded,
        compiled,
        cached,
        pruned,
    };
    let line = build.log_line(&kernel.name, source_hash, &settings.chips);
    tracing::info!("{line}");
    if let Some(cache) = &settings.cache {
        cache.log(&line);
    }
    Ok(build)
}

impl KernelBuild {
    /// The cache log's line for this build (what the rebuild test counts).
    pub fn log_line(&self, kernel: &str, source_hash: u64, chips: &[String]) -> String {
        format!(
            "kernel={kernel} source={source_hash:016x} compiled={} cached={} pruned={} chips={}",
            self.compiled,
            self.cached,
            self.pruned,
            chips.join(",")
        )
    }
}

/// The content key of one variant: everything the PTX depends on.
fn cache_key(kernel: &Kernel, source_hash: u64, job: &Job) -> String {
    format!(
        "kernel {} source {source_hash:016x} config [{}] chip {} index_bits {} compiler {}",
        kernel.name,
        job.config,
        job.chip,
        job.index_bits,
        fingerprint::compiler_fingerprint()
    )
}

/// Runs `jobs` on up to `settings.jobs` threads; outcomes in job order.
fn run_jobs(kernel: &Kernel, source_hash: u64, settings: &Settings, jobs: &[Job]) -> Vec<Outcome> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Outcome>>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
    let workers = settings.jobs.clamp(1, jobs.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(index) else { break };
                    let outcome = run_job(kernel, source_hash, settings, job);
                    if let Ok(mut slots) = results.lock() {
                        slots[index] = Some(outcome);
                    }
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .into_iter()
        .map(|slot| {
            slot.unwrap_or_else(|| {
                Outcome::Failed(MlirError::NoPtx("a compile thread did not finish".into()))
            })
        })
        .collect()
}

fn run_job(kernel: &Kernel, source_hash: u64, settings: &Settings, job: &Job) -> Outcome {
    let key = cache_key(kernel, source_hash, job);
    if let Some(cache) = &settings.cache
        && let Some(entry) = cache.load(&kernel.name, &key)
    {
        return Outcome::Built {
            entry,
            from_cache: true,
        };
    }
    match mlir::compile_ptx(kernel, &job.config, &job.chip, job.index_bits) {
        Ok(variant) => {
            let entry = Entry {
                ptx: variant.ptx,
                threads: variant.threads,
                shared_bytes: variant.shared_bytes,
            };
            if let Some(cache) = &settings.cache {
                cache.store(&kernel.name, &key, &entry);
            }
            Outcome::Built {
                entry,
                from_cache: false,
            }
        }
        Err(MlirError::DoesNotFit(reason)) => Outcome::Pruned(reason),
        Err(error) => Outcome::Failed(error),
    }
}

#[cfg(test)]
mod tests;
