//! The quantized matmuls of `kernels/quant/qmatmul.ph` (SPEC.md §14's ggml
//! form, every format with an integer form) on the device against the
//! host's generated body, bit for bit, at every config: `BM` of 4 and 8
//! sum with `dp4a`, 16 and 32 on the int8 tensor cores (sm_80+). The weights are
//! phobos-quant's quantizations of random values; the shape is ragged (no
//! extent a multiple of a tile) so masked rows and blocks are covered.
//!
//! A dry run checks the host side: every config gives the same bits (the
//! terms add in block order whatever the tile), and every variant the
//! device would run is embedded, with `mma.sync` in its PTX exactly where
//! the chip has int8 tensor cores and the tile is whole mma shapes.

use anyhow::{Context, Result, ensure};
use phobos::artifact::KernelArtifact;
use phobos::cuda::select;
use phobos::{CudaDevice, Device, QTensor};
use phobos_examples::kernels;
use phobos_examples::random::SplitMix64;

use crate::run::Row;

/// Rows of X (partner rows), weight rows and the contracted extent: ragged
/// against every BM (4..32) and BN (16), two 256-element blocks.
const M: usize = 37;
const N: usize = 45;
const K: usize = 512;

/// Runs config `config` (an index into the tune space) on a device with X
/// and the weights' float values; returns Y's bits.
type RunConfig = fn(&Device, usize, &[f32], &[f32]) -> Result<Vec<u32>>;

/// One format's kernel: its artifact and a runner for one config on one
/// device, returning Y's bits.
struct QuantKernel {
    artifact: &'static KernelArtifact,
    /// The config's (BM, BN), per config of the tune space.
    configs: Vec<(i64, i64)>,
    run: RunConfig,
}

macro_rules! quant_kernel {
    ($kernel:ident, $format:ty) => {
        QuantKernel {
            artifact: &kernels::$kernel::ARTIFACT,
            configs: kernels::$kernel::CONFIGS
                .iter()
                .map(|c| (c.BM, c.BN))
                .collect(),
            run: |device, config, x_values, w_values| {
                let cfg = &kernels::$kernel::CONFIGS[config];
                let w = QTensor::<$format>::quantize(w_values, [N, K])?;
                let x = device.tensor_from(x_values, [M, K])?;
                let mut y = device.zeros::<f32>([M, N])?;
                kernels::$kernel::launch_with(device, cfg, &x, &w, &mut y)?;
                Ok(y.to_vec()?.iter().map(|v| v.to_bits()).collect())
            },
        }
    };
}

fn quant_kernels() -> Vec<QuantKernel> {
    use phobos::quant::{Iq4Nl, Q2K, Q3K, Q4_0, Q4_1, Q4K, Q5_0, Q5_1, Q5K, Q6K, Q8_0};
    vec![
        quant_kernel!(qmm_q4_0, Q4_0),
        quant_kernel!(qmm_q4_1, Q4_1),
        quant_kernel!(qmm_q5_0, Q5_0),
        quant_kernel!(qmm_q5_1, Q5_1),
        quant_kernel!(qmm_q8_0, Q8_0),
        quant_kernel!(qmm_iq4_nl, Iq4Nl),
        quant_kernel!(qmm_q2_k, Q2K),
        quant_kernel!(qmm_q3_k, Q3K),
        quant_kernel!(qmm_q4_k, Q4K),
        quant_kernel!(qmm_q5_k, Q5K),
        quant_kernel!(qmm_q6_k, Q6K),
    ]
}

/// Every quantized kernel at every config of `device_chip`'s variants.
pub fn check(device: Option<&CudaDevice>, device_chip: &str) -> Vec<Row> {
    let mut rng = SplitMix64::new(0x0051_4D4D);
    let x_values: Vec<f32> = (0..M * K).map(|_| rng.uniform(-2.0, 2.0)).collect();
    let w_values: Vec<f32> = (0..N * K).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let host = Device::host();
    let gpu = device.map(|d| Device::from_cuda(d.clone()));
    let mut rows = Vec::new();
    for kernel in quant_kernels() {
        let name = kernel.artifact.name;
        let chip = match select::pick_chip(kernel.artifact, device_chip) {
            Ok(chip) => chip,
            Err(error) => {
                rows.push(failed_row(name, &format!("{error:#}")));
                continue;
            }
        };
        // The host's bits, once per config: they must agree.
        let expected: Result<Vec<Vec<u32>>> = (0..kernel.configs.len())
            .map(|c| (kernel.run)(&host, c, &x_values, &w_values))
            .collect();
        let expected = match expected {
            Ok(e) => e,
            Err(error) => {
                rows.push(failed_row(name, &format!("host oracle: {error:#}")));
                continue;
            }
        };
        for (config, &(bm, bn)) in kernel.configs.iter().enumerate() {
            let mut row = Row {
                kernel: name,
                chip,
                variant: 0,
                config: format!("BM={bm} BN={bn}"),
                grid: [M.div_ceil(bm as usize), N.div_ceil(bn as usize), 1],
                passed: false,
                worst_ratio: 0.0,
                time_ms: None,
                note: String::new(),
            };
            let outcome = check_config(
                &kernel,
                gpu.as_ref(),
                chip,
                config,
                (bm, bn),
                &expected,
                &x_values,
                &w_values,
                &mut row,
            );
            match outcome {
                Ok(()) => row.passed = true,
                Err(error) => row.note = format!("{error:#}"),
            }
            rows.push(row);
        }
    }
    rows
}

#[allow(clippy::too_many_arguments)]
fn check_config(
    kernel: &QuantKernel,
    gpu: Option<&Device>,
    chip: &'static str,
    config: usize,
    (bm, bn): (i64, i64),
    expected: &[Vec<u32>],
    x_values: &[f32],
    w_values: &[f32],
    row: &mut Row,
) -> Result<()> {
    ensure!(
        expected[config] == expected[0],
        "the host gives different bits at BM={bm} BN={bn} than at the default config"
    );
    let (index, variant) = kernel
        .artifact
        .variants
        .iter()
        .enumerate()
        .find(|(_, v)| {
            v.chip == chip && v.config_value("BM") == Some(bm) && v.config_value("BN") == Some(bn)
        })
        .with_context(|| format!("no {chip} variant embedded for BM={bm} BN={bn}"))?;
    row.variant = index;
    let ptx = variant.ptx()?;
    let sm = select::chip_number(chip).unwrap_or(0);
    let tensor_cores = sm >= 80 && bm % 16 == 0 && bn % 8 == 0;
    ensure!(
        ptx.contains("mma.sync.aligned.m16n8k") == tensor_cores,
        "mma.sync {} the PTX (expected {})",
        if tensor_cores { "missing from" } else { "in" },
        if tensor_cores {
            "int8 tensor cores"
        } else {
            "dp4a"
        }
    );
    let Some(gpu) = gpu else {
        row.note = "dry run: host configs agree, PTX checked".to_string();
        return Ok(());
    };
    let got = (kernel.run)(gpu, config, x_values, w_values)?;
    let mismatches: Vec<usize> = (0..got.len())
        .filter(|&i| got[i] != expected[config][i])
        .collect();
    if let Some(&first) = mismatches.first() {
        row.worst_ratio = f64::INFINITY;
        anyhow::bail!(
            "{} of {} outputs differ from the host; first at [{}, {}]: device {} host {}",
            mismatches.len(),
            got.len(),
            first / N,
            first % N,
            f32::from_bits(got[first]),
            f32::from_bits(expected[config][first])
        );
    }
    Ok(())
}

fn failed_row(kernel: &'static str, note: &str) -> Row {
    Row {
        kernel,
        chip: "",
        variant: 0,
        config: String::new(),
        grid: [0; 3],
        passed: false,
        worst_ratio: 0.0,
        time_ms: None,
        note: note.to_string(),
    }
}
