//! The kbench CUDA rows (`phobos-kbench --backend cuda` folds this in):
//! saxpy, the GEMMs (f32, f16, f16 on tensor cores with and without
//! `@pipeline`) next to cuBLAS loaded at run time, and flash attention
//! f32/f16. Every config of the chip's tune space is timed with CUDA
//! events; the fastest is reported.

use anyhow::{Context, Result};
use phobos::{CudaDevice, Device, Tensor, f16};
use phobos_examples::kernels;

/// What to run.
pub struct BenchOptions {
    /// GEMM side (M = N = K); attention sequence length is size / 4.
    pub size: usize,
    pub reps: u32,
    pub peak_f32_tflops: Option<f64>,
    pub peak_f16_tflops: Option<f64>,
}

impl Default for BenchOptions {
    fn default() -> BenchOptions {
        BenchOptions {
            size: 4096,
            reps: 20,
            peak_f32_tflops: None,
            peak_f16_tflops: None,
        }
    }
}

/// One benchmark result.
#[derive(Debug, Clone, Default)]
pub struct BenchRow {
    pub name: &'static str,
    pub shape: String,
    /// Fastest config, `K=V` separated by spaces.
    pub config: String,
    pub time_ms: Option<f64>,
    /// GFLOP/s (GB/s for saxpy, see `unit`).
    pub rate: Option<f64>,
    pub unit: &'static str,
    pub cublas_rate: Option<f64>,
    pub peak_fraction: Option<f64>,
    pub note: String,
}

impl BenchRow {
    fn ratio(&self) -> Option<f64> {
        Some(self.rate? / self.cublas_rate?)
    }
}

/// The rows a run would produce, unmeasured (dry run).
pub fn plan(options: &BenchOptions) -> Vec<BenchRow> {
    let n = options.size;
    NAMES
        .iter()
        .map(|&(name, unit)| BenchRow {
            name,
            shape: shape_text(name, n),
            unit,
            note: "dry run".into(),
            ..BenchRow::default()
        })
        .collect()
}

const NAMES: &[(&str, &str)] = &[
    ("saxpy", "GB/s"),
    ("gemm_f32", "GFLOP/s"),
    ("gemm_f16", "GFLOP/s"),
    ("gemm_f16_tc", "GFLOP/s"),
    ("gemm_f16_tc_pipe", "GFLOP/s"),
    ("flash_attn_f32", "GFLOP/s"),
    ("flash_attn_f16", "GFLOP/s"),
];

fn shape_text(name: &str, n: usize) -> String {
    if name == "saxpy" {
        format!("N={}", n * n)
    } else if name.starts_with("flash") {
        format!("H=16 S=T={} D=64", n / 4)
    } else {
        format!("{n}x{n}x{n}")
    }
}

/// Times `configs` of one kernel through `run(config)`; the fastest.
fn fastest<C: std::fmt::Debug>(
    device: &CudaDevice,
    reps: u32,
    configs: &[C],
    mut run: impl FnMut(&C) -> phobos::Result<()>,
) -> Result<(String, f64)> {
    let timer = phobos::cuda::EventTimer::new(device)?;
    let mut best: Option<(String, f64)> = None;
    let mut errors = Vec::new();
    for config in configs {
        match timer.time_ms(reps, || run(config)) {
            Ok(ms) => {
                let ms = f64::from(ms);
                if best.as_ref().is_none_or(|(_, b)| ms < *b) {
                    best = Some((format!("{config:?}"), ms));
                }
            }
            Err(err) => errors.push(format!("{config:?}: {err}")),
        }
    }
    best.with_context(|| format!("no config ran: {}", errors.join("; ")))
}

/// Runs every row on `device`; a row that fails carries its error.
pub fn run(device: &CudaDevice, options: &BenchOptions) -> Result<Vec<BenchRow>> {
    let n = options.size;
    let mut rows = Vec::new();
    for &(name, unit) in NAMES {
        let mut row = BenchRow {
            name,
            shape: shape_text(name, n),
            unit,
            ..BenchRow::default()
        };
        if let Err(err) = measure(device, options, &mut row) {
            row.note = format!("{err:#}");
        }
        println!("{}", summary_line(&row));
        rows.push(row);
    }
    Ok(rows)
}

fn random_vec<T>(len: usize, seed: u64, make: impl Fn(f32) -> T) -> Vec<T> {
    let mut rng = phobos_examples::random::SplitMix64::new(seed);
    (0..len).map(|_| make(rng.uniform(-1.0, 1.0))).collect()
}

fn measure(device: &CudaDevice, options: &BenchOptions, row: &mut BenchRow) -> Result<()> {
    let gpu = Device::from_cuda(device.clone());
    let n = options.size;
    let reps = options.reps;
    let gemm_flops = 2.0 * (n as f64).powi(3);
    let peak = |tflops: Option<f64>, rate: f64| tflops.map(|p| rate / (p * 1000.0));
    macro_rules! gemm_f16 {
        ($kernel:ident) => {{
            let a = gpu.tensor_from(&random_vec(n * n, 1, f16::from_f32), [n, n])?;
            let b = gpu.tensor_from(&random_vec(n * n, 2, f16::from_f32), [n, n])?;
            let mut c = gpu.zeros::<f32>([n, n])?;
            let (config, ms) = fastest(device, reps, kernels::$kernel::CONFIGS, |cfg| {
                kernels::$kernel::launch_with(&gpu, cfg, &a, &b, &mut c)
            })?;
            row.config = config;
            row.time_ms = Some(ms);
            let rate = gemm_flops / (ms * 1e6);
            row.rate = Some(rate);
            row.peak_fraction = peak(options.peak_f16_tflops, rate);
            row.cublas_rate = crate::cublas::gemm_f16_rate(device, reps, &a, &b, &mut c, n)
                .map_err(|e| row.note = format!("cuBLAS: {e:#}"))
                .ok();
        }};
    }
    match row.name {
        "saxpy" => {
            let len = n * n;
            let x = gpu.tensor_from(&random_vec(len, 1, |v| v), [len])?;
            let y = gpu.tensor_from(&random_vec(len, 2, |v| v), [len])?;
            let mut out = gpu.zeros::<f32>([len])?;
            let (config, ms) = fastest(device, reps, kernels::saxpy::CONFIGS, |cfg| {
                kernels::saxpy::launch_with(&gpu, cfg, &x, &y, &mut out, 2.0)
            })?;
            row.config = config;
            row.time_ms = Some(ms);
            row.rate = Some(3.0 * 4.0 * len as f64 / (ms * 1e6));
        }
        "gemm_f32" => {
            let a = gpu.tensor_from(&random_vec(n * n, 1, |v| v), [n, n])?;
            let b = gpu.tensor_from(&random_vec(n * n, 2, |v| v), [n, n])?;
            let mut c = gpu.zeros::<f32>([n, n])?;
            let (config, ms) = fastest(device, reps, kernels::gemm_f32::CONFIGS, |cfg| {
                kernels::gemm_f32::launch_with(&gpu, cfg, &a, &b, &mut c, 1.0, 0.0)
            })?;
            row.config = config;
            row.time_ms = Some(ms);
            let rate = gemm_flops / (ms * 1e6);
            row.rate = Some(rate);
            row.peak_fraction = peak(options.peak_f32_tflops, rate);
            row.cublas_rate = crate::cublas::gemm_f32_rate(device, reps, &a, &b, &mut c, n)
                .map_err(|e| row.note = format!("cuBLAS: {e:#}"))
                .ok();
        }
        "gemm_f16" => gemm_f16!(gemm_f16),
        "gemm_f16_tc" => gemm_f16!(gemm_f16_tc),
        "gemm_f16_tc_pipe" => gemm_f16!(gemm_f16_tc_pipe),
        "flash_attn_f32" => attention::<f32, _>(
            device,
            &gpu,
            options,
            row,
            |v| v,
            kernels::flash_attn_f32::CONFIGS,
            kernels::flash_attn_f32::launch_with,
        )?,
        "flash_attn_f16" => attention::<f16, _>(
            device,
            &gpu,
            options,
            row,
            f16::from_f32,
            kernels::flash_attn_f16::CONFIGS,
            kernels::flash_attn_f16::launch_with,
        )?,
        other => anyhow::bail!("unknown bench {other}"),
    }
    Ok(())
}

type AttentionLaunchWith<T, C> =
    fn(&Device, &C, &Tensor<T>, &Tensor<T>, &Tensor<T>, &mut Tensor<T>, f32) -> phobos::Result<()>;

fn attention<T: phobos::Element, C: std::fmt::Debug>(
    device: &CudaDevice,
    gpu: &Device,
    options: &BenchOptions,
    row: &mut BenchRow,
    make: impl Fn(f32) -> T + Copy,
    configs: &[C],
    launch_with: AttentionLaunchWith<T, C>,
) -> Result<()> {
    let (heads, seq, dim) = (16usize, (options.size / 4).max(1), 64usize);
    let len = heads * seq * dim;
    let q = gpu.tensor_from(&random_vec(len, 1, make), [heads, seq, dim])?;
    let k = gpu.tensor_from(&random_vec(len, 2, make), [heads, seq, dim])?;
    let v = gpu.tensor_from(&random_vec(len, 3, make), [heads, seq, dim])?;
    let mut o = gpu.zeros::<T>([heads, seq, dim])?;
    let (config, ms) = fastest(device, options.reps, configs, |cfg| {
        launch_with(gpu, cfg, &q, &k, &v, &mut o, 0.125)
    })?;
    row.config = config;
    row.time_ms = Some(ms);
    // Two matmuls of S x T x D per head.
    let flops = 4.0 * heads as f64 * (seq as f64).powi(2) * dim as f64;
    row.rate = Some(flops / (ms * 1e6));
    Ok(())
}

/// One line for the summary.
pub fn summary_line(row: &BenchRow) -> String {
    let rate = row
        .rate
        .map_or_else(|| "-".into(), |r| format!("{r:.1} {}", row.unit));
    let cublas = match (row.cublas_rate, row.ratio()) {
        (Some(c), Some(ratio)) => format!(", cuBLAS {c:.1} {} (ratio {ratio:.2})", row.unit),
        _ => String::new(),
    };
    let note = if row.note.is_empty() {
        String::new()
    } else {
        format!(" [{}]", row.note)
    };
    format!("bench {} {}: {rate}{cublas}{note}", row.name, row.shape)
}

/// The rows as CSV.
pub fn csv(rows: &[BenchRow]) -> String {
    let opt = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v:.3}"));
    let mut out = String::from(
        "name,shape,config,time_ms,rate,unit,cublas_rate,ratio_to_cublas,peak_fraction,note\n",
    );
    for row in rows {
        out.push_str(&format!(
            "{},{},\"{}\",{},{},{},{},{},{},\"{}\"\n",
            row.name,
            row.shape,
            row.config.replace('"', "'"),
            opt(row.time_ms),
            opt(row.rate),
            row.unit,
            opt(row.cublas_rate),
            opt(row.ratio()),
            opt(row.peak_fraction),
            row.note.replace('"', "'")
        ));
    }
    out
}
