//! One kernel's variants on the device, each against the host oracle.

use anyhow::{Context, Result, bail, ensure};
use phobos::artifact::{AbiParamKind, KernelArtifact, PtxVariant};
use phobos::cuda::{KernelArg, ScalarArg, TensorArg, args::pack, select};
use phobos::{CudaDevice, DType, Device, Tensor};
use phobos_examples::grid::eval_grid_entry;

use crate::case::Case;
use crate::compare::{Verdict, compare};
use crate::table::Entry;

/// One variant's result.
pub struct Row {
    pub kernel: &'static str,
    pub chip: &'static str,
    pub variant: usize,
    pub config: String,
    pub grid: [usize; 3],
    pub passed: bool,
    /// Largest `|device - oracle| / tolerance` over the outputs (0 when exact).
    pub worst_ratio: f64,
    pub time_ms: Option<f64>,
    pub note: String,
}

/// Builds the case with the host oracle, then runs every variant of the
/// chip `device_chip` picks (its own, else the nearest lower one).
pub fn check_kernel(
    device: Option<&CudaDevice>,
    device_chip: &str,
    entry: &Entry,
) -> Result<Vec<Row>> {
    let artifact = entry.artifact;
    ensure!(
        artifact.ptx_built,
        "built without PTX: build with the `ptx` feature and PHOBOS_CHIPS={device_chip}"
    );
    let chip = select::pick_chip(artifact, device_chip)?;
    let case = (entry.build)(artifact).context("building the case on the host")?;
    let mut rows = Vec::new();
    for (index, variant) in artifact.variants.iter().enumerate() {
        if variant.chip != chip {
            continue;
        }
        let mut row = Row {
            kernel: artifact.name,
            chip,
            variant: index,
            config: config_text(variant),
            grid: [0; 3],
            passed: false,
            worst_ratio: 0.0,
            time_ms: None,
            note: String::new(),
        };
        match check_variant(device, artifact, index, &case, &mut row) {
            Ok(()) => {}
            Err(error) => row.note = format!("{error:#}"),
        }
        rows.push(row);
    }
    ensure!(!rows.is_empty(), "no variant for {chip}");
    Ok(rows)
}

fn check_variant(
    device: Option<&CudaDevice>,
    artifact: &'static KernelArtifact,
    index: usize,
    case: &Case,
    row: &mut Row,
) -> Result<()> {
    let variant = &artifact.variants[index];
    row.grid = grid(artifact, variant, &case.dims)?;
    let dims = dims(artifact, case)?;
    let Some(device) = device else {
        // Dry run: the arguments at stand-in addresses, packed against the ABI.
        let args = arguments(artifact, case, |i, _| Ok(0x1000_0000 * (i as u64 + 1)))?;
        let packed = pack(artifact, variant, &dims, &args)?;
        row.passed = true;
        row.note = format!("dry run: {} argument slots packed", packed.slots.len());
        return Ok(());
    };
    let gpu = Device::from_cuda(device.clone());
    let mut buffers: Vec<(&'static str, Tensor<u8>)> = Vec::new();
    for (name, buffer) in &case.tensors {
        let tensor = gpu.tensor_from(&buffer.bytes, [buffer.bytes.len()])?;
        buffers.push((name, tensor));
    }
    let args = arguments(artifact, case, |i, name| {
        let (_, tensor) = buffers
            .iter()
            .find(|(n, _)| *n == name)
            .with_context(|| format!("no buffer for `{name}`"))?;
        match tensor.cuda_arg(device, true)? {
            KernelArg::Tensor(t) => Ok(t.device_ptr),
            KernelArg::Scalar(_) => bail!("tensor {i} packed as a scalar"),
            KernelArg::Quant(_) => bail!("tensor {i} packed as a quantized tensor"),
        }
    })?;
    let timer = phobos::cuda::EventTimer::new(device)?;
    timer.start()?;
    device.launch(artifact, index, row.grid, &dims, &args)?;
    row.time_ms = Some(f64::from(timer.stop_ms()?));
    device.synchronize().context("the kernel failed")?;
    let mut worst: f64 = 0.0;
    let mut problems = Vec::new();
    for output in &case.outputs {
        let (_, tensor) = buffers
            .iter()
            .find(|(n, _)| *n == output.name)
            .with_context(|| format!("no buffer for output `{}`", output.name))?;
        let got = tensor.to_vec()?;
        match compare(output, &got)? {
            Verdict::Pass { worst_ratio } => worst = worst.max(worst_ratio),
            Verdict::Fail(message) => problems.push(format!("{}: {message}", output.name)),
        }
    }
    row.worst_ratio = worst;
    row.passed = problems.is_empty();
    row.note = problems.join("; ");
    Ok(())
}

/// Symbolic dims in ABI order with the case's values.
fn dims(artifact: &KernelArtifact, case: &Case) -> Result<Vec<(&'static str, usize)>> {
    artifact
        .dims
        .iter()
        .map(|&dim| {
            let value = case
                .dims
                .iter()
                .find(|(n, _)| *n == dim)
                .map(|(_, v)| *v)
                .with_context(|| format!("the case gives no value for dim {dim}"))?;
            Ok((dim, usize::try_from(value).context("negative dim")?))
        })
        .collect()
}

/// One argument per parameter: tensors at `address(i, name)`, row-major,
/// scalars converted from the case's f64 to the declared type.
fn arguments(
    artifact: &KernelArtifact,
    case: &Case,
    mut address: impl FnMut(usize, &'static str) -> Result<u64>,
) -> Result<Vec<KernelArg>> {
    let mut args = Vec::new();
    for (i, param) in artifact.params.iter().enumerate() {
        match param.kind {
            AbiParamKind::Pointer { elem, .. } => {
                let (_, buffer) = case
                    .tensors
                    .iter()
                    .find(|(n, _)| *n == param.name)
                    .with_context(|| format!("the case gives no tensor `{}`", param.name))?;
                ensure!(
                    buffer.dtype == elem,
                    "`{}` is {elem}, the case holds {}",
                    param.name,
                    buffer.dtype
                );
                args.push(KernelArg::Tensor(TensorArg {
                    elem: DType::from_name(elem)
                        .with_context(|| format!("unknown dtype {elem}"))?,
                    device_ptr: address(i, param.name)?,
                    shape: buffer.shape.clone(),
                    strides: row_major(&buffer.shape),
                    writable: true,
                }));
            }
            AbiParamKind::Value { dtype } => {
                let value = case
                    .scalars
                    .iter()
                    .find(|(n, _)| *n == param.name)
                    .map(|(_, v)| *v)
                    .with_context(|| format!("the case gives no scalar `{}`", param.name))?;
                args.push(KernelArg::Scalar(scalar(dtype, value)?));
            }
        }
    }
    Ok(args)
}

fn scalar(dtype: &str, value: f64) -> Result<ScalarArg> {
    Ok(match dtype {
        "f32" => ScalarArg::of(value as f32),
        "f64" => ScalarArg::of(value),
        "f16" => ScalarArg::of(phobos::f16::from_f64(value)),
        "bf16" => ScalarArg::of(phobos::bf16::from_f64(value)),
        "i32" => ScalarArg::of(value as i32),
        "u32" => ScalarArg::of(value as u32),
        "i64" => ScalarArg::of(value as i64),
        "i16" => ScalarArg::of(value as i16),
        "u16" => ScalarArg::of(value as u16),
        "i8" => ScalarArg::of(value as i8),
        "u8" => ScalarArg::of(value as u8),
        "bool" => ScalarArg::of(value != 0.0),
        other => bail!("scalar of type {other}"),
    })
}

fn row_major(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for axis in (0..shape.len().saturating_sub(1)).rev() {
        strides[axis] = strides[axis + 1] * shape[axis + 1];
    }
    strides
}

/// The variant's grid, padded to three axes.
pub fn grid(
    artifact: &KernelArtifact,
    variant: &PtxVariant,
    dims: &[(&str, i64)],
) -> Result<[usize; 3]> {
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
        grid[axis] =
            usize::try_from(eval_grid_entry(expr, lookup)?).context("negative grid extent")?;
    }
    Ok(grid)
}

fn config_text(variant: &PtxVariant) -> String {
    let parts: Vec<String> = variant
        .config
        .iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    parts.join(" ")
}

/// The rows as CSV.
pub fn csv(rows: &[Row]) -> String {
    let mut out = String::from("kernel,chip,variant,config,grid,passed,worst_ratio,time_ms,note\n");
    for row in rows {
        out.push_str(&format!(
            "{},{},{},{},{}x{}x{},{},{:.4},{},\"{}\"\n",
            row.kernel,
            row.chip,
            row.variant,
            row.config,
            row.grid[0],
            row.grid[1],
            row.grid[2],
            row.passed,
            row.worst_ratio,
            row.time_ms.map_or_else(String::new, |t| format!("{t:.4}")),
            row.note.replace('"', "'")
        ));
    }
    out
}
