//! The outside reference: ggml's own `from_float` + `vec_dot` (the CPU
//! backend of the pinned llama.cpp build) through the harness in
//! scripts/ggml-vecdot, bit for bit at M = 1 for the formats that follow
//! `vec_dot` (the 256-element ones follow ggml's batch order at every M;
//! `mulmat_check.c` checks those). Runs when `PHOBOS_GGML_VECDOT` names
//! the built harness; skips otherwise.

use std::io::Write;
use std::process::{Command, Stdio};

use phobos_quant::{GgmlType, quantize};

use super::tests::floats;
use super::*;

const QUANT_FORMATS: [GgmlType; 12] = [
    GgmlType::Q8_0,
    GgmlType::Q5_0,
    GgmlType::Q4_K,
    GgmlType::Q6_K,
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_1,
    GgmlType::Q2_K,
    GgmlType::Q3_K,
    GgmlType::Q5_K,
    GgmlType::IQ4_NL,
    GgmlType::IQ4_XS,
];

#[test]
fn single_rows_equal_ggml_vec_dot() {
    let Ok(harness) = std::env::var("PHOBOS_GGML_VECDOT") else {
        eprintln!("skipping: PHOBOS_GGML_VECDOT is not set (scripts/ggml-vecdot/build.sh)");
        return;
    };
    let mut input = Vec::new();
    let mut ours = Vec::new();
    let mut labels = Vec::new();
    for ty in QUANT_FORMATS {
        if portable::batch_order(ty) {
            continue;
        }
        let block = ty.info().block_len;
        for (case, blocks) in [1usize, 2, 3, 5, 8].into_iter().enumerate() {
            let cols = block * blocks;
            let seed = case as u64 * 97 + ty.id() as u64;
            let mut w = Vec::new();
            quantize(ty, &floats(seed, cols), &mut w).unwrap();
            let x = floats(seed + 5, cols);
            let mut out = [0.0f32];
            matmul(
                &QMatrixRef {
                    ty,
                    rows: 1,
                    cols,
                    data: &w,
                },
                &x,
                1,
                &mut out,
            )
            .unwrap();
            input.extend_from_slice(&ty.id().to_le_bytes());
            input.extend_from_slice(&(cols as u32).to_le_bytes());
            input.extend_from_slice(&w);
            input.extend(x.iter().flat_map(|v| v.to_le_bytes()));
            ours.push(out[0]);
            labels.push(format!("{ty} cols={cols}"));
        }
    }
    let theirs = run_harness(Command::new(&harness), &input);
    assert_bit_equal(&labels, &ours, &theirs);
}

/// Runs a harness on `input` (its stdin) and reads back its f32 results.
fn run_harness(mut command: Command, input: &[u8]) -> Vec<f32> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    output
        .stdout
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

/// Asserts `ours` equals `theirs` bit for bit, naming up to 20 differences.
fn assert_bit_equal(labels: &[String], ours: &[f32], theirs: &[f32]) {
    assert_eq!(theirs.len(), ours.len());
    let mismatches: Vec<String> = labels
        .iter()
        .zip(ours.iter().zip(theirs))
        .filter(|(_, (a, b))| a.to_bits() != b.to_bits())
        .map(|(l, (a, b))| format!("{l}: ours {a:e} ggml {b:e}"))
        .collect();
    assert!(
        mismatches.is_empty(),
        "{} of {} differ:\n{}",
        mismatches.len(),
        ours.len(),
        mismatches[..mismatches.len().min(20)].join("\n")
    );
}

/// The batch order against ggml's own MUL_MAT (its `ggml-cpu/tiled`
/// kernels, forced at every row count with `GGML_CPU_TILED_MM_FORCE=1`)
/// through scripts/ggml-vecdot/mulmat_check.c, built against an AVX2 + FMA
/// ggml by build-check.sh: bit for bit. Runs when `PHOBOS_GGML_MULMAT`
/// names the built harness; skips otherwise.
#[test]
fn batch_order_equals_ggml_tiled_mul_mat() {
    let Ok(harness) = std::env::var("PHOBOS_GGML_MULMAT") else {
        eprintln!("skipping: PHOBOS_GGML_MULMAT is not set (scripts/ggml-vecdot/build-check.sh)");
        return;
    };
    let mut input = Vec::new();
    let mut ours = Vec::new();
    let mut labels = Vec::new();
    for ty in QUANT_FORMATS
        .into_iter()
        .filter(|&ty| portable::batch_order(ty))
    {
        for (case, (rows, blocks, m_rows)) in [(16, 1, 1), (17, 3, 2), (33, 2, 8), (40, 8, 19)]
            .into_iter()
            .enumerate()
        {
            let cols = 256 * blocks;
            let seed = case as u64 * 131 + ty.id() as u64;
            let mut w = Vec::new();
            quantize(ty, &floats(seed, rows * cols), &mut w).unwrap();
            let x = floats(seed + 7, m_rows * cols);
            let mut out = vec![0.0f32; m_rows * rows];
            let matrix = QMatrixRef {
                ty,
                rows,
                cols,
                data: &w,
            };
            matmul_threaded(&matrix, &x, m_rows, &mut out).unwrap();
            for value in [ty.id(), rows as u32, cols as u32, m_rows as u32] {
                input.extend_from_slice(&value.to_le_bytes());
            }
            input.extend_from_slice(&w);
            input.extend(x.iter().flat_map(|v| v.to_le_bytes()));
            for m in 0..m_rows {
                for n in 0..rows {
                    labels.push(format!("{ty} {rows}x{cols} m={m_rows} [{m}, {n}]"));
                }
            }
            ours.extend_from_slice(&out);
        }
    }
    let mut command = Command::new(&harness);
    command.env("GGML_CPU_TILED_MM_FORCE", "1");
    let theirs = run_harness(command, &input);
    assert_bit_equal(&labels, &ours, &theirs);
}
