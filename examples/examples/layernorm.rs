//! Layer normalisation on random data, checked against a plain Rust version
//! computed in f64.
//!
//! Run: `cargo run --release -p phobos-examples --example layernorm`

use anyhow::{Context, Result, ensure};
use phobos_examples::check::F32_UNIT_ROUNDOFF;
use phobos_examples::check::max_abs_error;
use phobos_examples::random::SplitMix64;
use phobos_examples::reference;

phobos::kernel! {
    // Y = (X - mean) / sqrt(var + eps) * W + B per row of X[R, C], ROWS rows
    // per program. The loop that stores a row also sums the next row of the
    // block, so reading that row from memory overlaps writing this one
    // instead of taking turns with it; the variance pass reads the row again
    // from cache. Both passes sum into a scalar: `sum` of an elementwise
    // expression is computed without writing the expression's tile, where a
    // `tile<f32>[BLOCK_C]` accumulator is loaded and stored every block (on
    // Zen 1 that store made the variance pass a third of the kernel). Every
    // row's sums are added in the same order as with one row per program.
    @autotune(ROWS in [1, 8], BLOCK_C in [64, 4096])
    @grid(cdiv(R, ROWS))
    kernel layernorm(X: tensor<f32>[R, C], W: tensor<f32>[C], B: tensor<f32>[C],
                     Y: tensor<f32>[R, C], eps: f32) {
      let r0 = program_id(0) * ROWS
      var total: f32 = 0.0
      for c in range(0, C, BLOCK_C) {
        total += sum(X[r0, c :+ BLOCK_C])
      }
      let end = min(r0 + ROWS, R)
      for r in range(r0, r0 + ROWS) {
        if r < end {
          let mean = total / f32(C)
          var sq_dev: f32 = 0.0
          for c in range(0, C, BLOCK_C) {
            // Masked columns read as the mean, so they add nothing to the variance.
            let x = load(X[r, c :+ BLOCK_C], mean)
            sq_dev += sum((x - mean) * (x - mean))
          }
          let rstd = rsqrt(sq_dev / f32(C) + eps)
          total = 0.0
          let next = r + 1 < end
          for c in range(0, C, BLOCK_C) {
            Y[r, c :+ BLOCK_C] = (X[r, c :+ BLOCK_C] - mean) * rstd * W[c :+ BLOCK_C] + B[c :+ BLOCK_C]
            if next {
              total += sum(X[r + 1, c :+ BLOCK_C])
            }
          }
        }
      }
    }
}

fn main() -> Result<()> {
    let (rows, cols) = (19, 4099);
    let eps = 1e-5f32;
    let mut rng = SplitMix64::new(6);
    let x = rng.vec(rows * cols, -3.0, 3.0);
    let (w, b) = (rng.vec(cols, -2.0, 2.0), rng.vec(cols, -1.0, 1.0));

    let device = phobos::Device::default().context("opening the default device")?;
    let tx = device.tensor_from(&x, [rows, cols])?;
    let tw = device.tensor_from(&w, [cols])?;
    let tb = device.tensor_from(&b, [cols])?;
    let mut ty = device.zeros::<f32>([rows, cols])?;
    layernorm::launch(&device, &tx, &tw, &tb, &mut ty, eps).context("launching layernorm")?;
    let got = ty.to_vec()?;

    // Inputs in [-3, 3] have variance near 3, so rstd < 1, |x - mean| < 6 and
    // |w| <= 2: an error of C * 2^-24 relative in mean and variance moves each
    // output by at most about 4 * 6 * 2 * C * 2^-24 (tests/kernels/norms.rs
    // derives the per-element bound).
    let want = reference::norm::layernorm(rows, cols, &x, &w, &b, eps);
    let bound = 48.0 * (cols as f64 + 16.0) * F32_UNIT_ROUNDOFF;
    let max_error = max_abs_error(&got, &want);
    ensure!(
        max_error <= bound,
        "layernorm: max error {max_error:e} above {bound:e}"
    );
    println!(
        "layernorm {rows}x{cols} on {}: max error {max_error:e} (bound {bound:e})",
        device.name()
    );
    Ok(())
}
