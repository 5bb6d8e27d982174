//! Host GFLOP/s of the gemm_f32 example kernel (through its
//! `kernel_file!`-generated launcher) against the `matrixmultiply` crate's
//! sgemm, same shapes, same run. Every config of the kernel's tune space is
//! timed; the default and the fastest are reported.
//!
//! Run: `cargo run --release -p phobos-examples --example gemm_bench [SIZE]`

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use phobos_examples::kernels::gemm_f32;
use phobos_examples::random::SplitMix64;

/// Best of this many runs, to skip one-off noise from other processes.
const REPEATS: usize = 3;

fn best_time(mut run: impl FnMut() -> Result<()>) -> Result<Duration> {
    let mut best = Duration::MAX;
    for _ in 0..REPEATS {
        let start = Instant::now();
        run()?;
        best = best.min(start.elapsed());
    }
    Ok(best)
}

fn gflops(size: usize, time: Duration) -> f64 {
    2.0 * (size as f64).powi(3) / time.as_secs_f64() / 1e9
}

fn main() -> Result<()> {
    let size: usize = match std::env::args().nth(1) {
        Some(arg) => arg
            .parse()
            .with_context(|| format!("SIZE must be a positive integer, got {arg:?}"))?,
        None => 1024,
    };
    let mut rng = SplitMix64::new(9);
    let (a, b) = (
        rng.vec(size * size, -1.0, 1.0),
        rng.vec(size * size, -1.0, 1.0),
    );
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("gemm f32 {size}x{size}x{size}, {threads} threads, best of {REPEATS}");

    let mut reference = vec![0.0f32; size * size];
    let outside = best_time(|| {
        // SAFETY: the pointers cover size*size row-major f32 matrices with
        // row stride `size` and column stride 1, as sgemm's contract requires.
        unsafe {
            matrixmultiply::sgemm(
                size,
                size,
                size,
                1.0,
                a.as_ptr(),
                size as isize,
                1,
                b.as_ptr(),
                size as isize,
                1,
                0.0,
                reference.as_mut_ptr(),
                size as isize,
                1,
            );
        }
        Ok(())
    })?;
    println!(
        "matrixmultiply::sgemm         {:8.2} GFLOP/s",
        gflops(size, outside)
    );

    let device = phobos::Device::host();
    let ta = device.tensor_from(&a, [size, size])?;
    let tb = device.tensor_from(&b, [size, size])?;
    let mut tc = device.zeros::<f32>([size, size])?;
    let mut results = Vec::new();
    for config in gemm_f32::CONFIGS {
        let time = best_time(|| {
            Ok(gemm_f32::launch_with(
                &device, config, &ta, &tb, &mut tc, 1.0, 0.0,
            )?)
        })?;
        results.push((*config, time));
    }
    let default_time = results[0].1;
    let (best_config, best) = results
        .iter()
        .min_by_key(|(_, time)| *time)
        .copied()
        .context("empty tune space")?;
    println!(
        "phobos gemm_f32, default      {:8.2} GFLOP/s  {:?}",
        gflops(size, default_time),
        results[0].0
    );
    println!(
        "phobos gemm_f32, best config  {:8.2} GFLOP/s  {:?}",
        gflops(size, best),
        best_config
    );

    // The last launch's output must be the product (same bound as the tests).
    let got = tc.to_vec()?;
    let bound = (size as f64 + 3.0) * size as f64 / (1u64 << 24) as f64;
    let max_error = got
        .iter()
        .zip(&reference)
        .map(|(g, r)| f64::from((g - r).abs()))
        .fold(0.0, f64::max);
    ensure!(
        max_error <= bound,
        "gemm_f32 differs from sgemm by {max_error:e} > {bound:e}"
    );
    Ok(())
}
