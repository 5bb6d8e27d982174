//! What autotuning on a CUDA device needs, behind a small trait until the
//! shared backend-neutral tuner (`phobos_rt::tune`) takes it over: the
//! cache key parts (GPU name, chip, driver version, kernel fingerprint,
//! shape bucket), timing a variant with CUDA events, and the rule that the
//! winner is checked once against the host oracle before it is stored.
//!
//! The cache is a text file, one line per entry ending in a checksum of the
//! line; a line that does not parse or whose checksum fails is ignored (a
//! miss), as is every line of a file of another format version. A changed
//! kernel, compiler, GPU or driver changes the key, so stale entries are
//! misses too.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::GpuInfo;
use crate::artifact::KernelArtifact;
use crate::{Error, Result};

/// First line of a cache file; another line there makes the whole file a miss.
pub const CACHE_HEADER: &str = "phobos-cuda-tune v1";

/// Everything a tuned choice depends on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TuneKey {
    pub gpu_name: String,
    pub chip: String,
    pub driver_version: i32,
    pub kernel: String,
    /// The artifact's fingerprint (source, compiler, back end, MLIR).
    pub fingerprint: String,
    /// Each symbolic dim rounded up to a power of two.
    pub shape_bucket: Vec<u64>,
}

impl TuneKey {
    pub fn new(gpu: &GpuInfo, artifact: &KernelArtifact, dims: &[usize]) -> TuneKey {
        let f = &artifact.fingerprint;
        TuneKey {
            gpu_name: gpu.name.clone(),
            chip: gpu.chip.clone(),
            driver_version: gpu.driver_version,
            kernel: artifact.name.to_string(),
            fingerprint: format!(
                "{:016x}-{}-{:016x}-mlir{}",
                f.source_hash, f.compiler_version, f.backend_hash, f.mlir_version
            ),
            shape_bucket: shape_bucket(dims),
        }
    }

    /// The key as one tab-free text field.
    pub fn text(&self) -> String {
        let bucket: Vec<String> = self.shape_bucket.iter().map(u64::to_string).collect();
        format!(
            "{}|{}|{}|{}|{}|{}",
            self.gpu_name.replace(['|', '\t', '\n'], "_"),
            self.chip,
            self.driver_version,
            self.kernel,
            self.fingerprint,
            bucket.join("x")
        )
    }
}

/// Dims rounded up to powers of two: shapes in one bucket share a winner.
pub fn shape_bucket(dims: &[usize]) -> Vec<u64> {
    dims.iter()
        .map(|&d| (d.max(1) as u64).next_power_of_two())
        .collect()
}

/// A stored winner.
#[derive(Debug, Clone, PartialEq)]
pub struct Tuned {
    /// Tune values by name, in `Config` order.
    pub config: Vec<(String, i64)>,
    pub time_ms: f64,
}

/// Times one variant on the device (CUDA events) and checks one against
/// the host oracle: what [`tune`] needs from a backend.
pub trait VariantRunner {
    /// Mean milliseconds of a launch of variant `variant`.
    fn time_ms(&mut self, variant: usize) -> Result<f64>;
    /// Whether variant `variant`'s output matches the host oracle.
    fn matches_host(&mut self, variant: usize) -> Result<bool>;
}

/// Times every candidate (failures skipped and logged), then checks the
/// fastest against the host; a winner that disagrees is dropped (logged)
/// and the next fastest checked. `None` when no candidate both runs and
/// matches.
pub fn tune(candidates: &[usize], runner: &mut dyn VariantRunner) -> Option<(usize, f64)> {
    let mut timed: Vec<(usize, f64)> = candidates
        .iter()
        .filter_map(|&variant| match runner.time_ms(variant) {
            Ok(ms) if ms.is_finite() => Some((variant, ms)),
            Ok(ms) => {
                tracing::warn!(variant, ms, "variant timing is not finite; skipped");
                None
            }
            Err(err) => {
                tracing::warn!(variant, %err, "variant failed to run; skipped");
                None
            }
        })
        .collect();
    timed.sort_by(|a, b| a.1.total_cmp(&b.1));
    timed
        .into_iter()
        .find(|&(variant, _)| match runner.matches_host(variant) {
            Ok(true) => true,
            Ok(false) => {
                tracing::warn!(
                    variant,
                    "fastest variant disagrees with the host oracle; dropped"
                );
                false
            }
            Err(err) => {
                tracing::warn!(variant, %err, "checking against the host failed; dropped");
                false
            }
        })
}

/// Winners on disk, keyed by [`TuneKey::text`].
#[derive(Debug, Default)]
pub struct TuneCache {
    path: PathBuf,
    entries: HashMap<String, Tuned>,
    /// Lines ignored at load (corrupt, or of another format).
    pub ignored_lines: usize,
}

impl TuneCache {
    /// Reads `path`; a missing file is an empty cache.
    pub fn load(path: &Path) -> Result<TuneCache> {
        let mut cache = TuneCache {
            path: path.to_path_buf(),
            ..TuneCache::default()
        };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(cache),
            // Unreadable (not UTF-8, say): start over rather than fail the run.
            Err(err) if err.kind() == std::io::ErrorKind::InvalidData => {
                cache.ignored_lines = 1;
                return Ok(cache);
            }
            Err(err) => return Err(io_error(path, &err)),
        };
        let mut lines = text.lines();
        if lines.next() != Some(CACHE_HEADER) {
            cache.ignored_lines = text.lines().count();
            return Ok(cache);
        }
        for line in lines {
            match parse_line(line) {
                Some((key, tuned)) => {
                    cache.entries.insert(key, tuned);
                }
                None => cache.ignored_lines += 1,
            }
        }
        if cache.ignored_lines > 0 {
            tracing::warn!(path = %path.display(), lines = cache.ignored_lines, "corrupt tune cache lines ignored");
        }
        Ok(cache)
    }

    pub fn get(&self, key: &TuneKey) -> Option<&Tuned> {
        self.entries.get(&key.text())
    }

    /// Stores a winner (already checked against the host by [`tune`]) and
    /// rewrites the file (temp file + rename, so readers never see half).
    pub fn store(&mut self, key: &TuneKey, tuned: Tuned) -> Result<()> {
        self.entries.insert(key.text(), tuned);
        let mut text = format!("{CACHE_HEADER}\n");
        let mut keys: Vec<&String> = self.entries.keys().collect();
        keys.sort();
        for key in keys {
            text.push_str(&format_line(key, &self.entries[key]));
            text.push('\n');
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io_error(dir, &e))?;
        }
        let temp = self.path.with_extension("tmp");
        std::fs::write(&temp, text).map_err(|e| io_error(&temp, &e))?;
        std::fs::rename(&temp, &self.path).map_err(|e| io_error(&self.path, &e))
    }
}

fn format_line(key: &str, tuned: &Tuned) -> String {
    let config: Vec<String> = tuned
        .config
        .iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    let body = format!("{key}\t{}\t{}", config.join(","), tuned.time_ms);
    format!("{body}\t{:016x}", fnv1a(&body))
}

fn parse_line(line: &str) -> Option<(String, Tuned)> {
    let (body, checksum) = line.rsplit_once('\t')?;
    if u64::from_str_radix(checksum, 16).ok()? != fnv1a(body) {
        return None;
    }
    let mut fields = body.split('\t');
    let key = fields.next()?.to_string();
    let config = fields
        .next()?
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=')?;
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect::<Option<Vec<_>>>()?;
    let time_ms = fields.next()?.parse().ok()?;
    fields
        .next()
        .is_none()
        .then_some((key, Tuned { config, time_ms }))
}

fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn io_error(path: &Path, err: &std::io::Error) -> Error {
    Error::Backend {
        backend: "cuda",
        message: format!("tune cache {}: {err}", path.display()),
    }
}

#[cfg(test)]
mod tests;
