//! `out = alpha * x + y` on random data, checked against a plain Rust loop.
//!
//! Run: `cargo run --release -p phobos-examples --example saxpy`

use anyhow::{Context, Result, ensure};
use phobos_examples::random::SplitMix64;
use phobos_examples::reference;

phobos::kernel! {
    // out = alpha * x + y, one BLOCK-element span per program.
    @autotune(BLOCK in [256, 4096])
    @grid(cdiv(N, BLOCK))
    kernel saxpy(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[N], alpha: f32) {
      let base = program_id(0) * BLOCK
      out[base :+ BLOCK] = alpha * x[base :+ BLOCK] + y[base :+ BLOCK]
    }
}

fn main() -> Result<()> {
    let len = 1_000_003; // not a multiple of any BLOCK: the last program is masked
    let alpha = 2.5f32;
    let mut rng = SplitMix64::new(1);
    let (xs, ys) = (rng.vec(len, -1.0, 1.0), rng.vec(len, -1.0, 1.0));

    let device = phobos::Device::default().context("opening the default device")?;
    let x = device.tensor_from(&xs, [len])?;
    let y = device.tensor_from(&ys, [len])?;
    let mut out = device.zeros::<f32>([len])?;
    saxpy::launch(&device, &x, &y, &mut out, alpha).context("launching saxpy")?;
    let got = out.to_vec()?;

    // One multiply and one add in f32 on both sides: bit-for-bit equal.
    let want = reference::saxpy::saxpy(alpha, &xs, &ys);
    ensure!(got == want, "saxpy differs from the reference");
    println!(
        "saxpy: {len} elements on {} match the reference exactly",
        device.name()
    );
    Ok(())
}
