//! RMS normalisation on random data, checked against a plain Rust version
//! computed in f64.
//!
//! Run: `cargo run --release -p phobos-examples --example rmsnorm`

use anyhow::{Context, Result, ensure};
use phobos_examples::check::F32_UNIT_ROUNDOFF;
use phobos_examples::check::max_relative_error;
use phobos_examples::random::SplitMix64;
use phobos_examples::reference;

phobos::kernel! {
    // Y = X / sqrt(mean(X^2) + eps) * W per row of X[R, C], ROWS rows per
    // program. The loop that scales and stores a row also sums the squares of
    // the next row of the block, so reading that row from memory overlaps
    // writing this one (one stream in and one out, as in a copy) instead of
    // taking turns with it. The squares are summed into a scalar (`sum` of an
    // elementwise expression writes no tile), as in layernorm: a
    // `tile<f32>[BLOCK_C]` accumulator was loaded and stored every block, and
    // with it 4096-column blocks ran slower than 1024, without it faster
    // (BENCHMARKS.md, session 31). Every row's sum is added in the same order
    // as with one row per program.
    @autotune(ROWS in [1, 8], BLOCK_C in [64, 4096])
    @grid(cdiv(R, ROWS))
    kernel rmsnorm(X: tensor<f32>[R, C], W: tensor<f32>[C], Y: tensor<f32>[R, C], eps: f32) {
      let r0 = program_id(0) * ROWS
      var ss: f32 = 0.0
      for c in range(0, C, BLOCK_C) {
        let x = X[r0, c :+ BLOCK_C]
        ss += sum(x * x)
      }
      let end = min(r0 + ROWS, R)
      for r in range(r0, r0 + ROWS) {
        if r < end {
          let rstd = rsqrt(ss / f32(C) + eps)
          ss = 0.0
          let next = r + 1 < end
          for c in range(0, C, BLOCK_C) {
            Y[r, c :+ BLOCK_C] = X[r, c :+ BLOCK_C] * rstd * W[c :+ BLOCK_C]
            if next {
              let x = X[r + 1, c :+ BLOCK_C]
              ss += sum(x * x)
            }
          }
        }
      }
    }
}

fn main() -> Result<()> {
    let (rows, cols) = (19, 4099);
    let eps = 1e-5f32;
    let mut rng = SplitMix64::new(5);
    let (x, w) = (rng.vec(rows * cols, -3.0, 3.0), rng.vec(cols, -2.0, 2.0));

    let device = phobos::Device::default().context("opening the default device")?;
    let tx = device.tensor_from(&x, [rows, cols])?;
    let tw = device.tensor_from(&w, [cols])?;
    let mut ty = device.zeros::<f32>([rows, cols])?;
    rmsnorm::launch(&device, &tx, &tw, &mut ty, eps).context("launching rmsnorm")?;
    let got = ty.to_vec()?;

    // The mean square sums C rounded squares; rsqrt halves its relative error.
    let want = reference::norm::rmsnorm(rows, cols, &x, &w, eps);
    let relative = ((cols as f64 + 2.0) / 2.0 + 5.0) * F32_UNIT_ROUNDOFF;
    let worst = max_relative_error(&got, &want);
    ensure!(
        worst <= relative,
        "rmsnorm: max relative error {worst:e} above {relative:e}"
    );
    println!(
        "rmsnorm {rows}x{cols} on {}: max relative error {worst:e}",
        device.name()
    );
    Ok(())
}
