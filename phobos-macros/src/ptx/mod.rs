//! Compiling each kernel to PTX at expansion time (feature `ptx`): one
//! variant per (config that survives pruning) x (chip in `PHOBOS_CHIPS`) x
//! index width, in parallel, through the on-disk [`cache`]; the result is
//! compressed for the kernel module's `ARTIFACT`.
//!
//! With a ptxas (`phobos_build::back::mlir::ptxas::find`), every variant is
//! also assembled with `ptxas -v`: its registers and spills go into the
//! artifact, a CTA that does not fit the register file is pruned with the
//! numbers, and PTX that ptxas rejects is a build error (emitted PTX must
//! always assemble). Without one, the build log says register pruning was
//! skipped.

pub mod cache;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use phobos_build::back::fingerprint;
use phobos_build::back::host::{EmbeddedPtx, EmbeddedVariant, PrunedVariant};
use phobos_build::back::mlir::ptxas::{self, Ptxas};
use phobos_build::back::mlir::{self, MlirError};
use phobos_build::ir::{Config, Kernel};

use self::cache::{Cache, Entry, Measured};

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
    /// The ptxas measuring registers; `Ok(None)`: none found, register
    /// pruning skipped (and logged); `Err`: one was named but does not run,
    /// which fails every kernel's build rather than skip the check.
    pub ptxas: Result<Option<Ptxas>, String>,
}

impl Settings {
    /// `PHOBOS_CHIPS`, the cache dir from the environment, one job per core.
    pub fn from_env() -> Settings {
        Settings {
            chips: mlir::chips_from_env(),
            index_bits: EMBEDDED_INDEX_BITS.to_vec(),
            cache: cache::dir_from_env().map(Cache::new),
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            ptxas: ptxas_from_env(),
        }
    }
}

/// [`Ptxas::detect`], once per process (the macro expands many kernels).
fn ptxas_from_env() -> Result<Option<Ptxas>, String> {
    static DETECTED: OnceLock<Result<Option<Ptxas>, String>> = OnceLock::new();
    DETECTED
        .get_or_init(|| Ptxas::detect().map_err(|e| e.to_string()))
        .clone()
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
    /// Of `pruned`, those whose CTA does not fit the register file.
    pub pruned_by_registers: usize,
    /// Variants run through `ptxas -v` in this build (fresh ones, and
    /// cached ones measured by no ptxas or another release).
    pub measured: usize,
    /// The ptxas release registers were checked with; `None`: not checked.
    pub ptxas_version: Option<String>,
}

/// A kernel that cannot become PTX: the first failure, with where it happened.
#[derive(Clone, Debug)]
pub struct BuildError(pub String);

enum Outcome {
    Built {
        entry: Entry,
        from_cache: bool,
        measured_now: bool,
    },
    Pruned {
        reason: String,
        by_registers: bool,
    },
    Failed(String),
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
    let ptxas = settings.ptxas.as_ref().map_err(|why| {
        BuildError(format!(
            "kernel `{}`: the ptxas for register pruning does not run: {why}",
            kernel.name
        ))
    })?;
    let ptxas = ptxas.as_ref();
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
    let outcomes = run_jobs(kernel, source_hash, settings, ptxas, &jobs);

    let mut embedded = EmbeddedPtx::default();
    let (mut compiled, mut cached, mut pruned, mut pruned_by_registers, mut measured) =
        (0, 0, 0, 0, 0);
    for (job, outcome) in jobs.iter().zip(outcomes) {
        match outcome {
            Outcome::Built {
                entry,
                from_cache,
                measured_now,
            } => {
                if from_cache {
                    cached += 1;
                } else {
                    compiled += 1;
                }
                measured += usize::from(measured_now);
                // Only a measurement by this build's ptxas is embedded.
                let usage = entry
                    .measured
                    .as_ref()
                    .filter(|m| ptxas.is_some_and(|p| p.version == m.ptxas_version));
                embedded.variants.push(EmbeddedVariant {
                    config: job.config.clone(),
                    chip: job.chip.clone(),
                    index_bits: job.index_bits,
                    ptx_lz4: lz4_flex::block::compress_prepend_size(entry.ptx.as_bytes()),
                    ptx_len_bytes: entry.ptx.len(),
                    threads: entry.threads,
                    shared_bytes: entry.shared_bytes,
                    registers: usage.map(|m| m.registers),
                    spill_bytes: usage.map(|m| m.spill_bytes),
                });
            }
            Outcome::Pruned {
                reason,
                by_registers,
            } => {
                pruned += 1;
                pruned_by_registers += usize::from(by_registers);
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
        pruned_by_registers,
        measured,
        ptxas_version: ptxas.map(|p| p.version.clone()),
    };
    let line = build.log_line(&kernel.name, source_hash, &settings.chips);
    if ptxas.is_none() {
        tracing::warn!(
            kernel = %kernel.name,
            "no ptxas found ({}, PATH, pip package nvidia-cuda-nvcc-cu12): register pruning skipped",
            ptxas::PTXAS_ENV
        );
    }
    tracing::info!("{line}");
    if let Some(cache) = &settings.cache {
        cache.log(&line);
    }
    Ok(build)
}

impl KernelBuild {
    /// The cache log's line for this build (what the rebuild test counts).
    pub fn log_line(&self, kernel: &str, source_hash: u64, chips: &[String]) -> String {
        let registers = match &self.ptxas_version {
            Some(version) => format!(
                "registers=checked measured={} pruned_by_registers={} ptxas=\"{version}\"",
                self.measured, self.pruned_by_registers
            ),
            None => format!(
                "registers=skipped (no ptxas: set {} or put ptxas on PATH)",
                ptxas::PTXAS_ENV
            ),
        };
        format!(
            "kernel={kernel} source={source_hash:016x} compiled={} cached={} pruned={} chips={} {registers}",
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
fn run_jobs(
    kernel: &Kernel,
    source_hash: u64,
    settings: &Settings,
    ptxas: Option<&Ptxas>,
    jobs: &[Job],
) -> Vec<Outcome> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Outcome>>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
    let workers = settings.jobs.clamp(1, jobs.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(index) else { break };
                    let outcome = run_job(kernel, source_hash, settings, ptxas, job);
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
            slot.unwrap_or_else(|| Outcome::Failed("a compile thread did not finish".into()))
        })
        .collect()
}

fn run_job(
    kernel: &Kernel,
    source_hash: u64,
    settings: &Settings,
    ptxas: Option<&Ptxas>,
    job: &Job,
) -> Outcome {
    let key = cache_key(kernel, source_hash, job);
    let loaded = settings
        .cache
        .as_ref()
        .and_then(|cache| cache.load(&kernel.name, &key));
    let from_cache = loaded.is_some();
    let mut entry = match loaded {
        Some(entry) => entry,
        None => match mlir::compile_ptx(kernel, &job.config, &job.chip, job.index_bits) {
            Ok(variant) => Entry {
                ptx: variant.ptx,
                threads: variant.threads,
                shared_bytes: variant.shared_bytes,
                measured: None,
            },
            Err(MlirError::DoesNotFit(reason)) => {
                return Outcome::Pruned {
                    reason,
                    by_registers: false,
                };
            }
            Err(error) => return Outcome::Failed(error.to_string()),
        },
    };
    let mut measured_now = false;
    if let Some(ptxas) = ptxas {
        let current = entry
            .measured
            .as_ref()
            .is_some_and(|m| m.ptxas_version == ptxas.version);
        if !current {
            match ptxas.measure(&entry.ptx, &job.chip, &kernel.name) {
                Ok(usage) => {
                    entry.measured = Some(Measured {
                        ptxas_version: ptxas.version.clone(),
                        registers: usage.registers,
                        spill_bytes: usage.spill_bytes(),
                    });
                    measured_now = true;
                }
                Err(error) => return Outcome::Failed(error.to_string()),
            }
        }
    }
    if (!from_cache || measured_now)
        && let Some(cache) = &settings.cache
    {
        cache.store(&kernel.name, &key, &entry);
    }
    // Only a measurement by this build's ptxas decides (and `measured` is
    // that one whenever `ptxas` is set).
    if let (Some(_), Some(m)) = (ptxas, &entry.measured)
        && let Some(reason) = ptxas::register_file_overflow(m.registers, entry.threads)
    {
        return Outcome::Pruned {
            reason,
            by_registers: true,
        };
    }
    Outcome::Built {
        entry,
        from_cache,
        measured_now,
    }
}

#[cfg(test)]
mod tests;
