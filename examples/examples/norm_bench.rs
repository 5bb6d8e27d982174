//! Host bandwidth of the row-wise kernels (softmax, rmsnorm, layernorm)
//! against a STREAM-style copy measured in the same run, on the same
//! threads (rayon's pool, as the kernels' grid uses).
//!
//! Each kernel reads X and writes Y once from memory (its second pass over a
//! row hits the cache: a row of 4096 f32 is 16 KiB), so its bytes moved are
//! `2 * R * C * 4`, the same as the copy of X into Y. Every config of each
//! kernel is timed; the fastest is reported with its ratio to the copy.
//!
//! Run: `cargo run --release -p phobos-examples --no-default-features --example norm_bench [ROWS [COLS]]`

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use copy_reference::copy_parallel;
use phobos_examples::kernels::{layernorm, rmsnorm, softmax};
use phobos_examples::random::SplitMix64;

/// Best of this many runs, to skip one-off noise from other processes.
const REPEATS: usize = 5;

fn best_time(mut run: impl FnMut() -> Result<()>) -> Result<Duration> {
    run()?;
    let mut best = Duration::MAX;
    for _ in 0..REPEATS {
        let start = Instant::now();
        run()?;
        best = best.min(start.elapsed());
    }
    Ok(best)
}

/// The copy reference: `dst = src` split into one contiguous chunk per
/// thread, each a `copy_from_slice` (a vectorized memcpy).
mod copy_reference {
    pub fn copy_parallel(dst: &mut [f32], src: &[f32], threads: usize) {
        let chunk = src.len().div_ceil(threads.max(1)).max(1);
        std::thread::scope(|scope| {
            for (d, s) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
                scope.spawn(move || d.copy_from_slice(s));
            }
        });
    }
}

fn gbps(bytes: usize, time: Duration) -> f64 {
    bytes as f64 / time.as_secs_f64() / 1e9
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mut dim = |default: usize| -> Result<usize> {
        match args.next() {
            Some(arg) => arg
                .parse()
                .with_context(|| format!("ROWS and COLS must be positive integers, got {arg:?}")),
            None => Ok(default),
        }
    };
    let rows = dim(4096)?;
    let cols = dim(4096)?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let bytes = 2 * rows * cols * size_of::<f32>();
    println!("{rows}x{cols} f32, {threads} threads, best of {REPEATS}");

    let mut rng = SplitMix64::new(11);
    let x = rng.vec(rows * cols, -3.0, 3.0);
    let (w, b) = (rng.vec(cols, -2.0, 2.0), rng.vec(cols, -1.0, 1.0));
    let mut copy = vec![0.0f32; rows * cols];
    let copy_time = best_time(|| {
        copy_parallel(&mut copy, &x, threads);
        Ok(())
    })?;
    let copy_gbps = gbps(bytes, copy_time);
    println!("copy (reference)        {copy_gbps:8.2} GB/s");

    let device = phobos::Device::host();
    let tx = device.tensor_from(&x, [rows, cols])?;
    let tw = device.tensor_from(&w, [cols])?;
    let tb = device.tensor_from(&b, [cols])?;
    let mut ty = device.zeros::<f32>([rows, cols])?;

    let report = |name: &str, times: Vec<(String, Duration)>| -> Result<()> {
        let (config, time) = times
            .into_iter()
            .min_by_key(|(_, t)| *t)
            .context("empty tune space")?;
        let rate = gbps(bytes, time);
        println!(
            "{name:<22}  {rate:8.2} GB/s  {:5.1}% of copy  {config}",
            100.0 * rate / copy_gbps
        );
        Ok(())
    };

    let mut times = Vec::new();
    for config in softmax::CONFIGS {
        let time = best_time(|| Ok(softmax::launch_with(&device, config, &tx, &mut ty)?))?;
        times.push((format!("{config:?}"), time));
    }
    report("softmax", times)?;

    let mut times = Vec::new();
    for config in rmsnorm::CONFIGS {
        let time = best_time(|| {
            Ok(rmsnorm::launch_with(
                &device, config, &tx, &tw, &mut ty, 1e-5,
            )?)
        })?;
        times.push((format!("{config:?}"), time));
    }
    report("rmsnorm", times)?;

    let mut times = Vec::new();
    for config in layernorm::CONFIGS {
        let time = best_time(|| {
            Ok(layernorm::launch_with(
                &device, config, &tx, &tw, &tb, &mut ty, 1e-5,
            )?)
        })?;
        times.push((format!("{config:?}"), time));
    }
    report("layernorm", times)?;
    Ok(())
}
