//! Where a tile gemm's time goes: the `gemm_f32` example kernel's host
//! shape (`acc += dot(a, b)` over `TILE_K` steps, each step copying an A
//! and a B tile out of the tensors) timed three ways on the host pool:
//!
//! - `full`: as the generated code runs it;
//! - `no-reload`: each program copies its tiles once and reuses them for
//!   every `k` step, so the same `dot_acc` calls run without the per-step
//!   tile copies (the result is wrong; only the time matters);
//! - `whole`: the loop as the host back end lowers it now, one
//!   `dot_acc_k_loop` call per program (B packed per `k` block, A read in
//!   place, the accumulator's micro-tiles in registers across the block);
//! - `dot`: one `dot_acc` on one tile triple, repeated on one thread, with
//!   the tiles in cache: the micro-kernel's own rate.
//!
//! Run: `PHOBOS_THREADS=2 cargo run --release -p phobos-rt --example
//! gemm_breakdown -- 2048 256 256 128` (N, then TILE_M TILE_N TILE_K).

use phobos_rt::host::{self, PlainRead, Slice, TensorRead, TensorWrite, Tile};
use phobos_rt::{Device, Tensor};
use std::time::Instant;

#[derive(Clone, Copy)]
struct Shape {
    n: usize,
    tile_m: usize,
    tile_n: usize,
    tile_k: usize,
}

fn span(start: usize, len: usize) -> Slice {
    Slice::Span {
        start: start as i64,
        len,
    }
}

fn tile_gemm(
    shape: Shape,
    reload: bool,
    a: &Tensor<f32>,
    b: &Tensor<f32>,
    c: &mut Tensor<f32>,
) -> phobos_rt::Result<()> {
    let Shape {
        n,
        tile_m,
        tile_n,
        tile_k,
    } = shape;
    let (a, b, c) = (
        TensorRead::new(a)?,
        TensorRead::new(b)?,
        TensorWrite::new(c)?,
    );
    host::try_run_grid([n.div_ceil(tile_m), n.div_ceil(tile_n), 1], |pid| {
        let row = pid[0] as usize * tile_m;
        let col = pid[1] as usize * tile_n;
        let mut acc = Tile::<f32>::zeros(&[tile_m, tile_n])?;
        let mut a_tile = host::load(&a, &[span(row, tile_m), span(0, tile_k)], 0.0)?;
        let mut b_tile = host::load(&b, &[span(0, tile_k), span(col, tile_n)], 0.0)?;
        for kt in (0..n).step_by(tile_k) {
            if reload {
                a_tile = host::load(&a, &[span(row, tile_m), span(kt, tile_k)], 0.0)?;
                b_tile = host::load(&b, &[span(kt, tile_k), span(col, tile_n)], 0.0)?;
            }
            host::dot_acc(&mut acc, &a_tile, &b_tile)?;
        }
        host::store(&c, &[span(row, tile_m), span(col, tile_n)], &acc)
    })
}

/// The program body the host back end generates for the kernel's loop.
fn whole_gemm(
    shape: Shape,
    a: &Tensor<f32>,
    b: &Tensor<f32>,
    c: &mut Tensor<f32>,
) -> phobos_rt::Result<()> {
    let Shape {
        n,
        tile_m,
        tile_n,
        tile_k,
    } = shape;
    let c = TensorWrite::new(c)?;
    let (a, b) = (PlainRead::new(a)?, PlainRead::new(b)?);
    let (a, b) = (a.view(), b.view());
    host::try_run_grid([n.div_ceil(tile_m), n.div_ceil(tile_n), 1], |pid| {
        let row = pid[0] as usize * tile_m;
        let col = pid[1] as usize * tile_n;
        let mut acc = Tile::<f32>::zeros(&[tile_m, tile_n])?;
        let k = span(0, tile_k);
        let done = host::dot_acc_k_loop(
            &mut acc,
            (&a, &[span(row, tile_m), k]),
            (&b, &[k, span(col, tile_n)]),
            (0, n as i64, tile_k as i64),
        )?;
        assert!(done, "the loop has the lowered shape");
        host::store(&c, &[span(row, tile_m), span(col, tile_n)], &acc)
    })
}

fn best_seconds(mut run: impl FnMut() -> phobos_rt::Result<()>) -> phobos_rt::Result<f64> {
    run()?;
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let start = Instant::now();
        run()?;
        best = best.min(start.elapsed().as_secs_f64());
    }
    Ok(best)
}

fn values(len: usize, seed: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((i * 7 + seed) % 11) as f32 - 5.0)
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = std::env::args()
        .skip(1)
        .map(|s| s.parse::<usize>())
        .collect::<Result<Vec<_>, _>>()?;
    let [n, tile_m, tile_n, tile_k] = args[..] else {
        return Err("usage: gemm_breakdown N TILE_M TILE_N TILE_K".into());
    };
    let shape = Shape {
        n,
        tile_m,
        tile_n,
        tile_k,
    };
    let dev = Device::host();
    let a = dev.tensor_from(&values(n * n, 3), [n, n])?;
    let b = dev.tensor_from(&values(n * n, 1), [n, n])?;
    let mut c = dev.zeros::<f32>([n, n])?;
    let gemm_flop = 2.0 * (n * n * n) as f64;
    let threads = phobos_rt::HostDevice.threads();
    // Alternated, so drift of a shared machine hits every variant alike.
    let mut best = [f64::INFINITY; 3];
    for _ in 0..3 {
        best[0] = best[0].min(best_seconds(|| tile_gemm(shape, true, &a, &b, &mut c))?);
        best[1] = best[1].min(best_seconds(|| whole_gemm(shape, &a, &b, &mut c))?);
        best[2] = best[2].min(best_seconds(|| tile_gemm(shape, false, &a, &b, &mut c))?);
    }
    for (label, seconds) in ["full", "whole", "no-reload"].into_iter().zip(best) {
        println!(
            "{label:>9} {n}^3 {tile_m}x{tile_n}x{tile_k}, {threads} threads: {:.1} GFLOP/s",
            gemm_flop / seconds / 1e9
        );
    }
    let a_tile = Tile::from_vec(&[tile_m, tile_k], values(tile_m * tile_k, 3))?;
    let b_tile = Tile::from_vec(&[tile_k, tile_n], values(tile_k * tile_n, 1))?;
    let mut acc = Tile::<f32>::zeros(&[tile_m, tile_n])?;
    let reps = 64;
    let seconds = best_seconds(|| {
        for _ in 0..reps {
            host::dot_acc(&mut acc, &a_tile, &b_tile)?;
        }
        Ok(())
    })?;
    let dot_flop = 2.0 * (tile_m * tile_n * tile_k * reps) as f64;
    println!(
        "      dot {tile_m}x{tile_k} @ {tile_k}x{tile_n}, 1 thread: {:.1} GFLOP/s",
        dot_flop / seconds / 1e9
    );
    Ok(())
}
