//! The device check in Rust: every embedded PTX variant of every example
//! kernel (and SPEC.md's edge-case table, bit for bit; the quantized
//! matmuls of every format, bit for bit, `quant.rs`) launched through
//! `phobos_rt::cuda` on the cases `device_dump` builds, against the host
//! back end as oracle; then the kbench CUDA rows (GEMMs against cuBLAS).
//!
//! Run: `cargo run --release -p phobos-examples --bin device_check -- [--out DIR] [--chip sm_XY] [--dry-run] [--no-bench]
//! [--size N] [--reps N] [--peak-f32-tflops X] [--peak-f16-tflops X]`.
//! Writes `DIR/rust_check.csv`, `DIR/rust_bench.csv` and
//! `DIR/rust_summary.txt`; exits non-zero when any variant fails.
//!
//! `--dry-run` needs no GPU: it builds every case, evaluates every
//! variant's grid and packs its arguments against the ABI with stand-in
//! device addresses, so the check's logic is exercised on build machines.

// Shared with device_dump, which reads every field.
#[allow(dead_code)]
#[path = "../../../examples/device_dump/case.rs"]
mod case;
#[path = "../../../examples/device_dump/edge.rs"]
mod edge;
#[allow(dead_code)]
#[path = "../../../examples/device_dump/table.rs"]
mod table;

mod bench;
mod compare;
mod cublas;
mod quant;
mod run;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use phobos::cuda::select;

/// Options from the command line.
pub struct Options {
    pub out: PathBuf,
    pub chip: Option<String>,
    pub dry_run: bool,
    pub bench: bench::BenchOptions,
    pub run_bench: bool,
}

fn parse_args() -> Result<Options> {
    let mut options = Options {
        out: std::env::var_os("OUT")
            .map_or_else(|| PathBuf::from("device-check-out"), PathBuf::from),
        chip: None,
        dry_run: false,
        bench: bench::BenchOptions::default(),
        run_bench: true,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().with_context(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--out" => options.out = PathBuf::from(value("--out")?),
            "--chip" => options.chip = Some(value("--chip")?),
            "--dry-run" => options.dry_run = true,
            "--no-bench" => options.run_bench = false,
            "--size" => options.bench.size = value("--size")?.parse().context("--size")?,
            "--reps" => options.bench.reps = value("--reps")?.parse().context("--reps")?,
            "--peak-f32-tflops" => {
                options.bench.peak_f32_tflops = Some(
                    value("--peak-f32-tflops")?
                        .parse()
                        .context("--peak-f32-tflops")?,
                )
            }
            "--peak-f16-tflops" => {
                options.bench.peak_f16_tflops = Some(
                    value("--peak-f16-tflops")?
                        .parse()
                        .context("--peak-f16-tflops")?,
                )
            }
            "-h" | "--help" => {
                println!("{}", include_str!("usage.txt"));
                std::process::exit(0);
            }
            other => bail!("unknown argument `{other}` (see --help)"),
        }
    }
    Ok(options)
}

fn main() -> Result<()> {
    let options = parse_args()?;
    let started = Instant::now();
    std::fs::create_dir_all(&options.out)
        .with_context(|| format!("creating {}", options.out.display()))?;
    let device = if options.dry_run {
        None
    } else {
        // PHOBOS_BACKEND as everywhere (unset: CUDA, which this check needs).
        let backend = std::env::var("PHOBOS_BACKEND")
            .ok()
            .filter(|b| !b.trim().is_empty());
        let device = phobos::Device::from_backend_name(Some(backend.as_deref().unwrap_or("cuda")))
            .context("opening CUDA device 0 (use --dry-run on a machine without a GPU)")?;
        let Some(cuda) = device.as_cuda() else {
            bail!(
                "PHOBOS_BACKEND={}: the device check needs a CUDA device (or --dry-run)",
                device.name()
            );
        };
        Some(cuda.clone())
    };
    let chip = match (&device, &options.chip) {
        (Some(device), _) => device.info().chip.clone(),
        (None, Some(chip)) => chip.clone(),
        (None, None) => "sm_90".to_string(),
    };
    if select::chip_number(&chip).is_none() {
        bail!("--chip {chip}: expected sm_XY");
    }
    let gpu = device.as_ref().map_or_else(
        || format!("none (dry run for {chip})"),
        |d| {
            format!(
                "{} ({}, driver {})",
                d.info().name,
                d.info().chip,
                d.info().driver_version
            )
        },
    );
    println!("device check on {gpu}");

    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for entry in table::entries() {
        let name = entry.artifact.name;
        match run::check_kernel(device.as_ref(), &chip, &entry) {
            Ok(kernel_rows) => {
                let of_kernel: Vec<&run::Row> = kernel_rows.iter().collect();
                tally(name, "variants", &of_kernel, &mut failures, |row| {
                    format!("variant {}", row.variant)
                });
                rows.extend(kernel_rows);
            }
            Err(error) => {
                println!("{name}: FAILED: {error:#}");
                failures.push(format!("{name}: {error:#}"));
            }
        }
    }
    // The quantized matmuls (SPEC.md §14), bit for bit against the host.
    let quant_rows = quant::check(device.as_ref(), &chip);
    let mut quant_kernels: Vec<&str> = quant_rows.iter().map(|r| r.kernel).collect();
    quant_kernels.dedup();
    for name in quant_kernels {
        let of_kernel: Vec<&run::Row> = quant_rows.iter().filter(|r| r.kernel == name).collect();
        tally(name, "configs", &of_kernel, &mut failures, |row| {
            row.config.clone()
        });
    }
    rows.extend(quant_rows);
    let check_csv = options.out.join("rust_check.csv");
    std::fs::write(&check_csv, run::csv(&rows))
        .with_context(|| format!("writing {}", check_csv.display()))?;

    let mut summary = String::new();
    writeln!(summary, "device: {gpu}")?;
    writeln!(
        summary,
        "correctness: {} variants checked, {} failures{}",
        rows.len(),
        failures.len(),
        if options.dry_run {
            " (dry run: packed, not launched)"
        } else {
            ""
        }
    )?;
    for failure in &failures {
        writeln!(summary, "  FAIL {failure}")?;
    }

    if options.run_bench {
        let bench_rows = match &device {
            Some(device) => bench::run(device, &options.bench)?,
            None => bench::plan(&options.bench),
        };
        let bench_csv = options.out.join("rust_bench.csv");
        std::fs::write(&bench_csv, bench::csv(&bench_rows))
            .with_context(|| format!("writing {}", bench_csv.display()))?;
        for row in &bench_rows {
            writeln!(summary, "  {}", bench::summary_line(row))?;
        }
    }
    writeln!(summary, "took {:.1} s", started.elapsed().as_secs_f64())?;
    print!("{summary}");
    let summary_path = options.out.join("rust_summary.txt");
    std::fs::write(&summary_path, &summary)
        .with_context(|| format!("writing {}", summary_path.display()))?;
    if !failures.is_empty() {
        bail!(
            "{} device check failures (see {})",
            failures.len(),
            summary_path.display()
        );
    }
    Ok(())
}

/// Prints how many of one kernel's rows passed (`unit`: what a row is)
/// and records each failing row, named by `describe`.
fn tally(
    name: &str,
    unit: &str,
    rows: &[&run::Row],
    failures: &mut Vec<String>,
    describe: impl Fn(&run::Row) -> String,
) {
    for row in rows.iter().filter(|r| !r.passed) {
        failures.push(format!("{name} {}: {}", describe(row), row.note));
    }
    let passed = rows.iter().filter(|r| r.passed).count();
    println!("{name}: {passed}/{} {unit} pass", rows.len());
}
