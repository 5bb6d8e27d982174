//! Gemma 3 270M's matmuls in its Q4_K_M file's formats, through
//! `phobos_rt::host::qmatmul`, next to ggml's `test-backend-ops perf` for
//! the same shapes and types in the same run.
//!
//! Each phobos case rotates through copies of the weight (`pool_mib` in
//! all, larger than the L3) so every call streams its weights from memory;
//! `pool_mib = 0` keeps one copy, cache-warm like test-backend-ops, which
//! reruns one tensor. test-backend-ops takes the shapes from a test file
//! (`--test-file`, one MUL_MAT per line) and runs the CPU backend with
//! `hardware_concurrency / 2` threads, which it does not let a caller
//! change; its column is filled only for that thread count.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use phobos_quant::GgmlType;
use phobos_rt::host::qmatmul::{QMatrixRef, matmul, matmul_threaded};

/// Gemma 3 270M: (name, weight type in the Q4_K_M file, rows N, cols K).
/// v and down come in two types (the file alternates them by layer).
pub const SHAPES: [(&str, GgmlType, usize, usize); 10] = [
    ("q", GgmlType::Q5_0, 1024, 640),
    ("k", GgmlType::Q5_0, 256, 640),
    ("v", GgmlType::Q8_0, 256, 640),
    ("v", GgmlType::Q5_0, 256, 640),
    ("o", GgmlType::Q4_K, 640, 1024),
    ("gate", GgmlType::Q5_0, 2048, 640),
    ("up", GgmlType::Q5_0, 2048, 640),
    ("down", GgmlType::Q6_K, 640, 2048),
    ("down", GgmlType::Q4_K, 640, 2048),
    ("output", GgmlType::Q8_0, 262_144, 640),
];

#[derive(clap::Args, Debug, Clone)]
pub struct Options {
    /// Activation rows (tokens) to measure.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 512])]
    pub m: Vec<usize>,
    /// Thread counts for phobos (a rayon pool of each size).
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 2])]
    pub threads: Vec<usize>,
    /// MiB of weight copies each phobos case rotates through (0: one copy).
    #[arg(long, default_value_t = 640)]
    pub pool_mib: usize,
    /// Minimum measuring time per case.
    #[arg(long, default_value_t = 300)]
    pub min_time_ms: u64,
    /// llama.cpp's test-backend-ops; the ggml column is empty when absent.
    #[arg(long, default_value = "/tmp/lcp/build/bin/test-backend-ops")]
    pub ggml: PathBuf,
    /// Only these shapes, by name (q, k, v, o, gate, up, down, output).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
}

/// One measured case.
#[derive(Debug, Clone)]
pub struct Row {
    pub name: &'static str,
    pub ty: GgmlType,
    pub n: usize,
    pub k: usize,
    pub m: usize,
    pub threads: usize,
    pub us: f64,
    pub weight_gbs: f64,
    pub gmacs: f64,
    /// ggml's microseconds for the same case, at `ggml_threads`.
    pub ggml_us: Option<f64>,
}

/// Threads test-backend-ops gives the CPU backend.
pub fn ggml_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

pub fn run(opts: &Options) -> Result<Vec<Row>> {
    let shapes: Vec<_> = SHAPES
        .iter()
        .filter(|s| opts.only.is_empty() || opts.only.iter().any(|name| name == s.0))
        .collect();
    let ggml = ggml_times(opts, &shapes)?;
    let mut rows = Vec::new();
    for (index, &&(name, ty, n, k)) in shapes.iter().enumerate() {
        let copies = weight_copies(ty, n, k, opts.pool_mib)?;
        for (mi, &m) in opts.m.iter().enumerate() {
            let x: Vec<f32> = (0..m * k)
                .map(|i| ((i * 7919) % 2001) as f32 / 1000.0 - 1.0)
                .collect();
            let mut out = vec![0.0f32; m * n];
            for &threads in &opts.threads {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .context("building the rayon pool")?;
                let secs =
                    pool.install(|| time_calls(opts, &copies, ty, n, k, &x, m, threads, &mut out))?;
                let weight_bytes = copies[0].len() as f64;
                let ggml_us = (threads == ggml_threads())
                    .then(|| ggml.as_ref().map(|t| t[index * opts.m.len() + mi]))
                    .flatten();
                rows.push(Row {
                    name,
                    ty,
                    n,
                    k,
                    m,
                    threads,
                    us: secs * 1e6,
                    weight_gbs: weight_bytes / secs / 1e9,
                    gmacs: (m * n * k) as f64 / secs / 1e9,
                    ggml_us,
                });
            }
        }
    }
    Ok(rows)
}

/// Copies of one weight (random floats quantized, 64 distinct rows tiled)
/// filling `pool_mib`.
fn weight_copies(ty: GgmlType, n: usize, k: usize, pool_mib: usize) -> Result<Vec<Vec<u8>>> {
    let seed_rows = n.min(64);
    let floats: Vec<f32> = (0..seed_rows * k)
        .map(|i| (((i as u64).wrapping_mul(2654435761) % 10007) as f32 / 10007.0 - 0.5) * 0.1)
        .collect();
    let mut seed = Vec::new();
    phobos_quant::quantize(ty, &floats, &mut seed).with_context(|| format!("quantizing {ty}"))?;
    let one: Vec<u8> = seed
        .iter()
        .copied()
        .cycle()
        .take(seed.len() / seed_rows * n)
        .collect();
    let count = (pool_mib << 20).div_ceil(one.len()).clamp(1, 4096);
    Ok(vec![one; count])
}

#[allow(clippy::too_many_arguments)]
fn time_calls(
    opts: &Options,
    copies: &[Vec<u8>],
    ty: GgmlType,
    n: usize,
    k: usize,
    x: &[f32],
    m: usize,
    threads: usize,
    out: &mut [f32],
) -> Result<f64> {
    let call = |data: &[u8], out: &mut [f32]| -> Result<()> {
        let w = QMatrixRef {
            ty,
            rows: n,
            cols: k,
            data,
        };
        if threads == 1 {
            matmul(&w, x, m, out)?;
        } else {
            matmul_threaded(&w, x, m, out)?;
        }
        Ok(())
    };
    call(&copies[0], out)?;
    let min_time = Duration::from_millis(opts.min_time_ms);
    let start = Instant::now();
    let mut calls = 0usize;
    while calls < 2 || start.elapsed() < min_time {
        call(&copies[calls % copies.len()], out)?;
        calls += 1;
    }
    Ok(start.elapsed().as_secs_f64() / calls as f64)
}

/// ggml's microseconds per case, in `shapes` x `opts.m` order, or None when
/// the binary is absent.
fn ggml_times(
    opts: &Options,
    shapes: &[&(&str, GgmlType, usize, usize)],
) -> Result<Option<Vec<f64>>> {
    if !opts.ggml.exists() {
        return Ok(None);
    }
    let mut file = String::new();
    for &&(_, ty, n, k) in shapes {
        let info = ty.info();
        let row_bytes = k / info.block_len * info.block_bytes;
        for &m in &opts.m {
            // op MUL_MAT (29), dst f32 [n, m], no params, two sources with
            // their strides: the weight [k, n] and f32 activations [k, m].
            writeln!(
                file,
                "29 0 {n} {m} 1 1 0 2 {} {k} {n} 1 1 {} {row_bytes} {} {} 0 {k} {m} 1 1 4 {} {} {} -",
                ty.id(),
                info.block_bytes,
                row_bytes * n,
                row_bytes * n,
                4 * k,
                4 * k * m,
                4 * k * m,
            )?;
        }
    }
    let path =
        std::env::temp_dir().join(format!("phobos-kbench-qmatmul-{}.txt", std::process::id()));
    std::fs::write(&path, file).with_context(|| format!("writing {}", path.display()))?;
    let output = Command::new(&opts.ggml)
        .args(["perf", "-b", "CPU", "--test-file"])
        .arg(&path)
        .output()
        .with_context(|| format!("running {}", opts.ggml.display()))?;
    let _ = std::fs::remove_file(&path);
    let text = String::from_utf8_lossy(&output.stdout);
    let times: Vec<f64> = text
        .lines()
        .filter(|l| l.contains("MUL_MAT(") && l.contains("us/run"))
        .filter_map(|l| {
            let before = l.split(" us/run").next()?;
            before.rsplit(' ').next()?.trim().parse().ok()
        })
        .collect();
    if times.len() != shapes.len() * opts.m.len() {
        bail!(
            "test-backend-ops reported {} MUL_MAT times, expected {}:\n{text}",
            times.len(),
            shapes.len() * opts.m.len()
        );
    }
    Ok(Some(times))
}

/// The Markdown table of `rows`.
pub fn markdown(rows: &[Row]) -> String {
    let mut s = String::from(
        "| op | type | N x K | M | threads | phobos us | weight GB/s | GMAC/s | ggml us | phobos / ggml speed |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let (ggml, ratio) = match r.ggml_us {
            Some(g) => (format!("{g:.1}"), format!("{:.2}x", g / r.us)),
            None => ("-".into(), "-".into()),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {}x{} | {} | {} | {:.1} | {:.2} | {:.1} | {} | {} |",
            r.name, r.ty, r.n, r.k, r.m, r.threads, r.us, r.weight_gbs, r.gmacs, ggml, ratio
        );
    }
    s
}
