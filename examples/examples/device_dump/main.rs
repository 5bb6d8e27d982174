//! Writes what `scripts/device_check.py` needs to check every embedded PTX
//! variant of every example kernel (and of SPEC.md's edge-case table,
//! `edge.rs`, compared bit for bit) on a GPU against the host back end: per
//! kernel, deterministic ragged inputs, the host oracle's outputs with a
//! per-element tolerance, the PTX of each variant for one chip, and a
//! `manifest.json` with the ABI, the grid of each variant and its launch
//! shape.
//!
//! Run: `cargo run -p phobos-examples --example device_dump -- [OUT_DIR] [CHIP]`
//! (defaults `.device`, `sm_90`; `scripts/device-check.sh` says more).
//!
//! Files are raw little-endian, row-major; tolerances are f32, one per
//! output element, bounding `|device - oracle|`.

mod case;
mod edge;
mod table;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};
use phobos::artifact::{AbiParamKind, KernelArtifact, PtxVariant};
use phobos_examples::grid::eval_grid_entry;
use serde_json::{Map, Value, json};

use case::{Buffer, Case};

/// Side length of the square GEMMs timed on the device.
const MATMUL_BENCH_SIZE: i64 = 4096;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let out_dir = PathBuf::from(args.next().unwrap_or_else(|| ".device".into()));
    let chip = args.next().unwrap_or_else(|| "sm_90".into());
    let started = Instant::now();
    prepare_out_dir(&out_dir)?;

    let mut kernels = Vec::new();
    // Kernels that cannot be checked, with why; the GPU check reports each
    // as a failure, and this program exits non-zero after writing the rest.
    let mut skipped = Vec::new();
    let mut variant_count = 0;
    for entry in table::entries() {
        let artifact = entry.artifact;
        match dump_entry(&out_dir, &chip, &entry) {
            Ok(kernel) => {
                let variants = kernel["variants"].as_array().map_or(0, Vec::len);
                variant_count += variants;
                println!("{}: {variants} variants for {chip}", artifact.name);
                kernels.push(kernel);
            }
            Err(error) => {
                eprintln!("{}: skipped: {error:#}", artifact.name);
                skipped.push(json!({"name": artifact.name, "reason": format!("{error:#}")}));
            }
        }
    }
    let manifest = json!({
        "format": 1,
        "chip": chip,
        "generated_by": "cargo run -p phobos-examples --example device_dump",
        "tolerance": "per element, |device - oracle| <= tolerance[i]: twice the proptest bound on |result - exact|, since the host oracle (checked against the exact reference at dump time) and the device are each within it",
        "kernels": kernels,
        "skipped": skipped,
    });
    let manifest_path = out_dir.join("manifest.json");
    std::fs::write(&manifest_path, serde_json::to_string_pretty(&manifest)?)
        .with_context(|| format!("writing {}", manifest_path.display()))?;
    println!(
        "{variant_count} variants of {} kernels for {chip} in {} ({:.1} s)",
        manifest["kernels"].as_array().map_or(0, Vec::len),
        out_dir.display(),
        started.elapsed().as_secs_f64()
    );
    ensure!(
        skipped.is_empty(),
        "{} kernels skipped (listed above and in the manifest)",
        skipped.len()
    );
    Ok(())
}

/// One kernel's case and files, or why it cannot be checked on `chip`.
fn dump_entry(out_dir: &Path, chip: &str, entry: &table::Entry) -> Result<Value> {
    let artifact = entry.artifact;
    ensure!(
        artifact.ptx_built,
        "built without PTX: build with the `ptx` feature (the default)"
    );
    if artifact.variants_for(chip).next().is_none() {
        let reasons: Vec<&str> = artifact
            .pruned
            .iter()
            .filter(|p| p.chip == chip)
            .map(|p| p.reason)
            .collect();
        bail!("no variant for {chip} (PHOBOS_CHIPS must include it); pruned: {reasons:?}");
    }
    let case = (entry.build)(artifact).context("building the case")?;
    dump_kernel(out_dir, chip, artifact, &case, entry.matmul_bench)
}

/// Empties a previous dump (recognised by its manifest) or creates the
/// folder; refuses a non-empty folder that is not a dump.
fn prepare_out_dir(out_dir: &Path) -> Result<()> {
    if out_dir.join("manifest.json").exists() {
        std::fs::remove_dir_all(out_dir)
            .with_context(|| format!("clearing {}", out_dir.display()))?;
    } else if out_dir
        .read_dir()
        .is_ok_and(|mut entries| entries.next().is_some())
    {
        bail!(
            "{} is not empty and holds no previous dump",
            out_dir.display()
        );
    }
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))
}

fn write(out_dir: &Path, relative: &str, bytes: &[u8]) -> Result<()> {
    let path = out_dir.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))
}

fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for axis in (0..shape.len().saturating_sub(1)).rev() {
        strides[axis] = strides[axis + 1] * shape[axis + 1];
    }
    strides
}

fn buffer_json(file: &str, buffer: &Buffer) -> Value {
    json!({
        "file": file,
        "dtype": buffer.dtype,
        "shape": buffer.shape,
        "strides": row_major_strides(&buffer.shape),
    })
}

fn params_json(artifact: &KernelArtifact) -> Vec<Value> {
    artifact
        .params
        .iter()
        .map(|param| match param.kind {
            AbiParamKind::Pointer { elem, dims, written } => json!({
                "name": param.name, "kind": "tensor", "dtype": elem, "dims": dims, "written": written,
            }),
            AbiParamKind::Value { dtype } => json!({
                "name": param.name, "kind": "scalar", "dtype": dtype,
            }),
        })
        .collect()
}

fn dump_kernel(
    out_dir: &Path,
    chip: &str,
    artifact: &KernelArtifact,
    case: &Case,
    matmul_bench: bool,
) -> Result<Value> {
    let name = artifact.name;
    for param in artifact.params {
        let known = match param.kind {
            AbiParamKind::Pointer { .. } => case.tensors.iter().any(|(n, _)| *n == param.name),
            AbiParamKind::Value { .. } => case.scalars.iter().any(|(n, _)| *n == param.name),
        };
        ensure!(
            known,
            "the case gives no value for parameter {}",
            param.name
        );
    }
    for dim in artifact.dims {
        ensure!(
            case.dims.iter().any(|(n, _)| n == dim),
            "the case gives no value for dim {dim}"
        );
    }

    let mut tensors = Map::new();
    for (tensor, buffer) in &case.tensors {
        let file = format!("{name}/{tensor}.bin");
        write(out_dir, &file, &buffer.bytes)?;
        tensors.insert(tensor.to_string(), buffer_json(&file, buffer));
    }
    let mut outputs = Map::new();
    for output in &case.outputs {
        let oracle_file = format!("{name}/{}.oracle.bin", output.name);
        let tolerance_file = format!("{name}/{}.tolerance.f32", output.name);
        write(out_dir, &oracle_file, &output.oracle.bytes)?;
        let tolerance_bytes: Vec<u8> = output
            .tolerance
            .iter()
            .flat_map(|t| t.to_le_bytes())
            .collect();
        write(out_dir, &tolerance_file, &tolerance_bytes)?;
        let mut json = buffer_json(&oracle_file, &output.oracle);
        json["tolerance_file"] = json!(tolerance_file);
        json["tolerance_max"] = json!(output.tolerance.iter().copied().fold(0.0f32, f32::max));
        json["rule"] = json!(output.rule);
        if output.exact {
            json["exact"] = json!(true);
        }
        outputs.insert(output.name.to_string(), json);
    }

    let default_variant = artifact.default_variant(chip);
    let mut variants = Vec::new();
    for (index, variant) in artifact.variants.iter().enumerate() {
        if variant.chip != chip {
            continue;
        }
        let ptx_file = format!("{name}/{chip}_{index}.ptx");
        write(out_dir, &ptx_file, variant.ptx()?.as_bytes())?;
        variants.push(json!({
            "index": index,
            "config": config_json(variant),
            "default": default_variant == Some(variant),
            "index_bits": variant.index_bits,
            "threads": variant.threads,
            "shared_bytes": variant.shared_bytes,
            "ptx": ptx_file,
            "grid": grid(artifact, variant, &case.dims)?,
        }));
    }
    let pruned: Vec<Value> = artifact
        .pruned
        .iter()
        .filter(|p| p.chip == chip)
        .map(|p| json!({"config": p.config.iter().map(|(n, v)| (n.to_string(), json!(v))).collect::<Map<_, _>>(), "reason": p.reason}))
        .collect();
    let bench = if matmul_bench {
        json!({"kind": "matmul", "dims": {"M": MATMUL_BENCH_SIZE, "N": MATMUL_BENCH_SIZE, "K": MATMUL_BENCH_SIZE}})
    } else {
        Value::Null
    };
    Ok(json!({
        "name": name,
        "params": params_json(artifact),
        "dims": artifact.dims,
        "grid_rule": artifact.grid,
        "case": {
            "dims": case.dims.iter().map(|(n, v)| (n.to_string(), json!(v))).collect::<Map<_, _>>(),
            "scalars": case.scalars.iter().map(|(n, v)| (n.to_string(), json!(v))).collect::<Map<_, _>>(),
            "tensors": tensors,
            "outputs": outputs,
        },
        "variants": variants,
        "pruned": pruned,
        "bench": bench,
    }))
}

fn config_json(variant: &PtxVariant) -> Map<String, Value> {
    variant
        .config
        .iter()
        .map(|(n, v)| (n.to_string(), json!(v)))
        .collect()
}

/// The variant's grid, padded to three axes.
fn grid(artifact: &KernelArtifact, variant: &PtxVariant, dims: &[(&str, i64)]) -> Result<[i64; 3]> {
    ensure!(
        (1..=3).contains(&artifact.grid.len()),
        "a grid of {} axes",
        artifact.grid.len()
    );
    let lookup = |name: &str| {
        dims.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
            .or_else(|| variant.config_value(name))
    };
    let mut grid = [1; 3];
    for (axis, expr) in artifact.grid.iter().enumerate() {
        grid[axis] = eval_grid_entry(expr, lookup)?;
    }
    Ok(grid)
}
