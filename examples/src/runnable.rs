//! The body of the runnable examples that differ only in their kernel
//! (`gemm_f16`, `gemm_f16_tc`, `gemm_f16_tc_pipe`; `flash_attn_f16`,
//! `flash_attn_f16_tc`): each example keeps its inline `phobos::kernel!`
//! and passes its typed launcher here, which makes the data, launches on
//! the default device, checks against the reference and prints the error.

use anyhow::{Context, Result, ensure};
use half::f16;
use phobos::{Device, Tensor};

use crate::bounds::attention::{HEAD_DIM, Problem};
use crate::bounds::gemm::f16_inputs;
use crate::check::{F16_UNIT_ROUNDOFF, F32_UNIT_ROUNDOFF, max_abs_error};
use crate::random::SplitMix64;
use crate::reference;

/// Runs an f16-input gemm launcher (`C = A @ B`, f32 output) named `name`
/// on ragged M, N, K and checks it against the f64 reference.
pub fn gemm_f16(
    name: &str,
    launch: impl FnOnce(&Device, &Tensor<f16>, &Tensor<f16>, &mut Tensor<f32>) -> phobos::Result<()>,
) -> Result<()> {
    let (m, n, k) = (200, 150, 333);
    let (a, b) = f16_inputs(&mut SplitMix64::new(3), m, n, k);

    let device = Device::default().context("opening the default device")?;
    let ta = device.tensor_from(&a, [m, k])?;
    let tb = device.tensor_from(&b, [k, n])?;
    let mut tc = device.zeros::<f32>([m, n])?;
    launch(&device, &ta, &tb, &mut tc).with_context(|| format!("launching {name}"))?;
    let got = tc.to_vec()?;

    // Products of f16 values are exact in f32; only the K-term f32
    // accumulation rounds: error <= (K + 1) * 2^-24 * sum|a||b| <= (K + 1) K 2^-24.
    let want: Vec<f32> = reference::gemm::matmul(m, n, k, &a, &b)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    let bound = (k as f64 + 2.0) * k as f64 * F32_UNIT_ROUNDOFF;
    let max_error = max_abs_error(&got, &want);
    ensure!(
        max_error <= bound,
        "{name}: max error {max_error:e} above {bound:e}"
    );
    println!(
        "{name} {m}x{n}x{k} on {}: max error {max_error:e} (bound {bound:e})",
        device.name()
    );
    Ok(())
}

fn to_f16(values: &[f32]) -> Vec<f16> {
    values.iter().map(|&x| f16::from_f32(x)).collect()
}

/// Runs an f16 flash-attention launcher named `name` on ragged sequence
/// lengths and checks it against plain attention per head in f64.
pub fn flash_attn_f16(
    name: &str,
    launch: impl FnOnce(
        &Device,
        &Tensor<f16>,
        &Tensor<f16>,
        &Tensor<f16>,
        &mut Tensor<f16>,
        f32,
    ) -> phobos::Result<()>,
) -> Result<()> {
    let (heads, seq_q, seq_k) = (3, 100, 203);
    let problem = Problem::random(heads, seq_q, seq_k, 7, true);
    let scale = problem.scale;

    let device = Device::default().context("opening the default device")?;
    let tq = device.tensor_from(&to_f16(&problem.q), [heads, seq_q, HEAD_DIM])?;
    let tk = device.tensor_from(&to_f16(&problem.k), [heads, seq_k, HEAD_DIM])?;
    let tv = device.tensor_from(&to_f16(&problem.v), [heads, seq_k, HEAD_DIM])?;
    let mut to = device.zeros::<f16>([heads, seq_q, HEAD_DIM])?;
    launch(&device, &tq, &tk, &tv, &mut to, scale).with_context(|| format!("launching {name}"))?;
    let got: Vec<f32> = to.to_vec()?.into_iter().map(f32::from).collect();

    let want: Vec<f32> = problem.reference().into_iter().map(|x| x as f32).collect();
    // Outputs are convex combinations of values in [-1, 1]; rounding the
    // probabilities to f16 before P @ V and the output to f16 each cost
    // 2^-11 of the largest value; the f32 part is as in flash_attn_f32.
    let bound = 2.0 * F16_UNIT_ROUNDOFF
        + (4.0 * 66.0 * 8.0 + 2.0 * seq_k as f64 + 64.0) * F32_UNIT_ROUNDOFF;
    let max_error = max_abs_error(&got, &want);
    ensure!(
        max_error <= bound,
        "{name}: max error {max_error:e} above {bound:e}"
    );
    println!(
        "{name} H={heads} S={seq_q} T={seq_k} on {}: max error {max_error:e} (bound {bound:e})",
        device.name()
    );
    Ok(())
}
