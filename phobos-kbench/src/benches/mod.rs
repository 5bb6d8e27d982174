//! The benches, one module per kernel family, behind a small registry:
//! a new family adds its module and one line in [`registry`].

mod attention;
mod bandwidth;
mod gemm;
mod latency;
pub mod qmatmul;
mod rowwise;

use std::sync::Mutex;

use anyhow::{Context, Result, bail};

use crate::cli::Cli;
use crate::report::Row;

/// One benchmark: a kernel at one size per call, with its references.
pub trait Bench {
    /// The `--bench` name.
    fn name(&self) -> &'static str;
    /// The sizes run when `--size` is not given.
    fn default_sizes(&self) -> &'static [&'static str];
    /// Rows for `size` (in this bench's `--size` form): the Phobos kernel
    /// with its ratios to the references, and the references.
    fn run(&self, ctx: &Ctx, size: &str) -> Result<Vec<Row>>;
}

/// Every bench, in the order they run.
pub fn registry() -> Vec<Box<dyn Bench>> {
    let mut benches: Vec<Box<dyn Bench>> = Vec::new();
    benches.extend(gemm::benches());
    benches.extend(rowwise::benches());
    benches.extend(attention::benches());
    benches.extend(bandwidth::benches());
    benches.extend(latency::benches());
    benches
}

/// What every bench shares: the device, the thread count, the pinned
/// config, whether numpy is there, the copy bandwidth.
pub struct Ctx {
    pub device: phobos::Device,
    pub threads: usize,
    pinned: Option<Vec<(String, i64)>>,
    pub numpy: bool,
    copy: Mutex<Option<bandwidth::CopyReference>>,
}

impl Ctx {
    pub fn new(device: phobos::Device, cli: &Cli) -> Result<Ctx> {
        let threads = match device.backend() {
            phobos::Backend::Host(host) => host.threads(),
            phobos::Backend::Cuda(_) => 1,
        };
        let pinned = cli.autotune.as_deref().map(parse_pins).transpose()?;
        let numpy = device.is_host() && !cli.no_numpy && crate::numpy::available();
        Ok(Ctx {
            device,
            threads,
            pinned,
            numpy,
            copy: Mutex::new(None),
        })
    }

    /// One line saying where and how this run measures.
    pub fn header(&self) -> String {
        let model = phobos::tune::device_id::cpu_model();
        let tuning = match &self.pinned {
            Some(_) => "configs pinned by --autotune".to_string(),
            None => format!(
                "tuned configs (PHOBOS_TUNE mode {:?})",
                phobos::tune::Tuner::global().mode()
            ),
        };
        format!(
            "backend {}, {model}, {} threads, {tuning}, numpy reference {}",
            self.device.name(),
            self.threads,
            if self.numpy { "on" } else { "off" }
        )
    }

    /// The config to run: the one `--autotune` pins (every pair must name a
    /// parameter of this kernel, and some config must have them all), else
    /// `tuned()`. Returns its index in `texts` and a label.
    pub fn choose(
        &self,
        texts: &[&str],
        tuned: impl FnOnce() -> Result<usize>,
    ) -> Result<(usize, String)> {
        match &self.pinned {
            None => {
                let index = tuned()?;
                Ok((
                    index,
                    format!("{} (tuned)", texts.get(index).unwrap_or(&"?")),
                ))
            }
            Some(pins) => {
                let index = texts
                    .iter()
                    .position(|text| {
                        pins.iter().all(|(name, value)| {
                            text.split(',')
                                .any(|pair| pair == format!("{name}={value}"))
                        })
                    })
                    .with_context(|| {
                        format!(
                            "--autotune: no config of this kernel has {pins:?}; its configs are {}",
                            texts.join(" | ")
                        )
                    })?;
                Ok((index, format!("{} (pinned)", texts[index])))
            }
        }
    }

    /// Runs `f` with the STREAM-style copy (64 MiB over the run's
    /// threads) that bandwidth-bound kernels are timed in turns with; its
    /// buffers are made on first use and kept for the run.
    pub fn with_copy_reference<R>(&self, f: impl FnOnce(&mut bandwidth::CopyReference) -> R) -> R {
        let mut guard = self
            .copy
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f(guard.get_or_insert_with(|| bandwidth::CopyReference::new(self.threads, 64 << 20)))
    }
}

/// `"K=V K=V"` (spaces or commas between pairs).
fn parse_pins(text: &str) -> Result<Vec<(String, i64)>> {
    text.split([' ', ','])
        .filter(|part| !part.is_empty())
        .map(|pair| {
            let (name, value) = pair
                .split_once('=')
                .with_context(|| format!("--autotune: {pair:?} is not NAME=VALUE"))?;
            let value = value
                .parse()
                .with_context(|| format!("--autotune: {pair:?}: the value is not an integer"))?;
            Ok((name.to_string(), value))
        })
        .collect()
}

/// `AxBxC..` with exactly `count` positive dims.
pub fn parse_dims(size: &str, count: usize, form: &str) -> Result<Vec<usize>> {
    let dims: Vec<usize> = size
        .split(['x', 'X'])
        .map(|d| d.trim().parse::<usize>().ok().filter(|&d| d > 0))
        .collect::<Option<_>>()
        .with_context(|| format!("size {size:?}: expected {form}"))?;
    if dims.len() != count {
        bail!("size {size:?}: expected {form}");
    }
    Ok(dims)
}

/// Deterministic inputs in [-1, 1).
pub fn random(len: usize, seed: u64) -> Vec<f32> {
    phobos_examples::random::SplitMix64::new(seed).vec(len, -1.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_and_sizes_parse() {
        assert_eq!(
            parse_pins("TILE_M=64 TILE_N=128,TILE_K=8").unwrap(),
            [
                ("TILE_M".into(), 64),
                ("TILE_N".into(), 128),
                ("TILE_K".into(), 8)
            ]
        );
        assert!(parse_pins("TILE_M").is_err());
        assert!(parse_pins("TILE_M=big").is_err());
        assert_eq!(parse_dims("4096x4096", 2, "RxC").unwrap(), [4096, 4096]);
        assert!(parse_dims("4096", 2, "RxC").is_err());
        assert!(parse_dims("0x3", 2, "RxC").is_err());
    }

    #[test]
    fn every_bench_has_a_unique_name_and_default_sizes() {
        let benches = registry();
        let mut names: Vec<&str> = benches.iter().map(|b| b.name()).collect();
        assert!(benches.iter().all(|b| !b.default_sizes().is_empty()));
        names.sort();
        names.dedup();
        assert_eq!(names.len(), benches.len());
    }
}
