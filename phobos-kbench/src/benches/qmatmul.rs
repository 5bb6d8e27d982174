//! Gemma 3 270M's matmuls in its Q4_K_M file's formats, through
//! `phobos_rt::host::qmatmul`, next to ggml's own MUL_MAT for the same
//! shapes, types and thread count in the same run.
//!
//! Each case rotates through copies of the weight (`pool_mib` in all,
//! larger than the L3) so every call streams its weights from memory, on
//! both sides: the ggml harness is given the same pool and points its
//! mul_mat at the next copy before each call. `pool_mib = 0` keeps one
//! copy on both sides, cache-warm. ggml's side is
//! scripts/ggml-vecdot/mulmat_bench.c (built by
//! `build-bench.sh`): ggml's CPU backend at a chosen thread count on a
//! persistent threadpool, plain buffers (no weight repacking, llama.cpp's
//! `--no-repack`). Both sides report the median call.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use phobos_quant::GgmlType;
use phobos_rt::host::qmatmul::{
    QMatrixRef, matmul, matmul_quantized, matmul_quantized_threaded, matmul_threaded,
    quantize_activations,
};

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
    /// Thread counts. 1 runs `matmul` on the calling thread; more runs
    /// `matmul_threaded` on the host pool, which must have that many
    /// threads (`PHOBOS_THREADS`).
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 2])]
    pub threads: Vec<usize>,
    /// MiB of weight copies each case rotates through, phobos and ggml
    /// alike (0: one copy, cache-warm).
    #[arg(long, default_value_t = 640)]
    pub pool_mib: usize,
    /// Minimum measuring time per case.
    #[arg(long, default_value_t = 300)]
    pub min_time_ms: u64,
    /// ggml's MUL_MAT harness (scripts/ggml-vecdot/build-bench.sh); the
    /// ggml column is empty when absent.
    #[arg(long, default_value = "target/ggml-mulmat-bench")]
    pub ggml: PathBuf,
    /// Time only the integer kernels (activations quantized once, outside
    /// the timed calls); the ggml column still times the whole mul_mat.
    #[arg(long)]
    pub kernel_only: bool,
    /// Only these shapes, by name (q, k, v, o, gate, up, down, output).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Times each case is measured, ggml and phobos alternating (each side
    /// first in every other round); each side reports its round with the
    /// median wall time, that round's CPU time beside it. On a shared VM
    /// whose speed drifts over seconds, one ggml run and one phobos run can
    /// land in different phases; alternating rounds puts both sides in each.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
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
    /// Median wall-clock microseconds per call.
    pub us: f64,
    /// Median process CPU microseconds per call (all threads).
    pub cpu_us: f64,
    pub weight_gbs: f64,
    pub gmacs: f64,
    /// ggml's median (wall, CPU) microseconds for the same case and thread
    /// count.
    pub ggml_us: Option<(f64, f64)>,
}

pub fn run(opts: &Options) -> Result<Vec<Row>> {
    let shapes: Vec<_> = SHAPES
        .iter()
        .filter(|s| opts.only.is_empty() || opts.only.iter().any(|name| name == s.0))
        .collect();
    if !opts.ggml.exists() {
        tracing::warn!(path = %opts.ggml.display(), "no ggml harness; the ggml column stays empty");
    }
    for &threads in &opts.threads {
        let pool_threads = phobos_rt::pool::global().threads();
        if threads > 1 && threads != pool_threads {
            bail!(
                "--threads {threads}: the host pool has {pool_threads} threads; set PHOBOS_THREADS={threads}"
            );
        }
    }
    let mut rows = Vec::new();
    for &&(name, ty, n, k) in &shapes {
        let copies = weight_copies(ty, n, k, opts.pool_mib)?;
        for &m in &opts.m {
            let x: Vec<f32> = (0..m * k)
                .map(|i| ((i * 7919) % 2001) as f32 / 1000.0 - 1.0)
                .collect();
            let mut out = vec![0.0f32; m * n];
            for &threads in &opts.threads {
                // ggml right before phobos, case by case and round by
                // round, so both see the same load on a shared machine.
                let mut ggml_rounds = Vec::new();
                let mut phobos_rounds = Vec::new();
                for round in 0..opts.rounds {
                    // Each side goes first in every other round, so
                    // neither always runs in the other's wake.
                    let ggml_first = round % 2 == 0;
                    if ggml_first && let Some(times) = ggml_time(opts, ty, n, k, m, threads)? {
                        ggml_rounds.push(times);
                    }
                    phobos_rounds.push(time_calls(
                        opts, &copies, ty, n, k, &x, m, threads, &mut out,
                    )?);
                    if !ggml_first && let Some(times) = ggml_time(opts, ty, n, k, m, threads)? {
                        ggml_rounds.push(times);
                    }
                }
                let ggml_us = median_pair(&mut ggml_rounds);
                let (secs, cpu_secs) = median_pair(&mut phobos_rounds)
                    .context("--rounds is at least 1, so phobos has a round")?;
                let weight_bytes = copies[0].len() as f64;
                rows.push(Row {
                    name,
                    ty,
                    n,
                    k,
                    m,
                    threads,
                    us: secs * 1e6,
                    cpu_us: cpu_secs * 1e6,
                    weight_gbs: weight_bytes / secs / 1e9,
                    gmacs: (m * n * k) as f64 / secs / 1e9,
                    ggml_us,
                });
            }
        }
    }
    Ok(rows)
}

/// The round with the median wall time (its CPU time with it), or None
/// for no rounds.
fn median_pair(rounds: &mut [(f64, f64)]) -> Option<(f64, f64)> {
    rounds.sort_by(|a, b| a.0.total_cmp(&b.0));
    rounds.get(rounds.len() / 2).copied()
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
) -> Result<(f64, f64)> {
    let acts = quantize_activations(ty, x, m, k)?;
    let call = |data: &[u8], out: &mut [f32]| -> Result<()> {
        let w = QMatrixRef {
            ty,
            rows: n,
            cols: k,
            data,
        };
        if opts.kernel_only {
            if threads == 1 {
                matmul_quantized(&w, &acts, out)?;
            } else {
                matmul_quantized_threaded(&w, &acts, out)?;
            }
        } else if threads == 1 {
            matmul(&w, x, m, out)?;
        } else {
            matmul_threaded(&w, x, m, out)?;
        }
        Ok(())
    };
    call(&copies[0], out)?;
    let min_time = Duration::from_millis(opts.min_time_ms);
    let start = Instant::now();
    let mut times = Vec::new();
    let mut cpu_times = Vec::new();
    while times.len() < 3 || start.elapsed() < min_time {
        let (t0, c0) = (Instant::now(), process_cpu_secs());
        call(&copies[times.len() % copies.len()], out)?;
        cpu_times.push(process_cpu_secs() - c0);
        times.push(t0.elapsed().as_secs_f64());
    }
    // The median call: on a shared machine a mean is decided by stalls.
    times.sort_by(f64::total_cmp);
    cpu_times.sort_by(f64::total_cmp);
    Ok((times[times.len() / 2], cpu_times[cpu_times.len() / 2]))
}

/// CPU seconds used by this process so far (every thread).
fn process_cpu_secs() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if status != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// ggml's median microseconds for one case at `threads`, or None when
/// the harness is absent.
fn ggml_time(
    opts: &Options,
    ty: GgmlType,
    n: usize,
    k: usize,
    m: usize,
    threads: usize,
) -> Result<Option<(f64, f64)>> {
    if !opts.ggml.exists() {
        return Ok(None);
    }
    let mut child = Command::new(&opts.ggml)
        .args([
            threads.to_string(),
            opts.min_time_ms.to_string(),
            opts.pool_mib.to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {}", opts.ggml.display()))?;
    child
        .stdin
        .take()
        .context("the harness's stdin")?
        .write_all(format!("{} {n} {k} {m}\n", ty.id()).as_bytes())
        .context("writing the case to the harness")?;
    let output = child
        .wait_with_output()
        .context("waiting for the harness")?;
    let text = String::from_utf8_lossy(&output.stdout);
    let time = text.lines().find_map(|l| {
        let mut fields = l.split_whitespace().skip(4);
        let wall: f64 = fields.next()?.parse().ok()?;
        let cpu: f64 = fields.next()?.parse().ok()?;
        Some((wall, cpu))
    });
    match time {
        Some(us) if output.status.success() => Ok(Some(us)),
        _ => bail!(
            "the ggml harness ({}) gave no time for {ty} {n}x{k} m={m}:\n{text}",
            output.status
        ),
    }
}

/// The Markdown table of `rows`: wall-clock medians and their ratio, then
/// CPU-time medians and theirs (the work done, which a loaded machine does
/// not inflate the way it inflates wall time).
pub fn markdown(rows: &[Row]) -> String {
    let mut s = String::from(
        "| op | type | N x K | M | threads | phobos us | ggml us | speed vs ggml | phobos CPU us | ggml CPU us | CPU-time ratio | weight GB/s | GMAC/s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let (ggml, ratio, ggml_cpu, cpu_ratio) = match r.ggml_us {
            Some((wall, cpu)) => (
                format!("{wall:.1}"),
                format!("{:.2}x", wall / r.us),
                format!("{cpu:.1}"),
                format!("{:.2}x", cpu / r.cpu_us),
            ),
            None => ("-".into(), "-".into(), "-".into(), "-".into()),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {}x{} | {} | {} | {:.1} | {} | {} | {:.1} | {} | {} | {:.2} | {:.1} |",
            r.name,
            r.ty,
            r.n,
            r.k,
            r.m,
            r.threads,
            r.us,
            ggml,
            ratio,
            r.cpu_us,
            ggml_cpu,
            cpu_ratio,
            r.weight_gbs,
            r.gmacs
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::median_pair;

    #[test]
    fn median_round_is_chosen_by_wall_time_with_its_own_cpu_time() {
        let mut rounds = [
            (3.0, 30.0),
            (1.0, 10.0),
            (5.0, 50.0),
            (2.0, 99.0),
            (4.0, 40.0),
        ];
        assert_eq!(median_pair(&mut rounds), Some((3.0, 30.0)));
        let mut one = [(7.0, 8.0)];
        assert_eq!(median_pair(&mut one), Some((7.0, 8.0)));
        assert_eq!(median_pair(&mut []), None);
    }
}
