//! ggml's quantized contraction written in the kernel language itself
//! (SPEC.md §14, "Writable quantized tensors" and "Block access"): one
//! kernel quantizes the activations into a `tensor<q8_0>` (bit for bit
//! phobos-quant's ggml-exact quantizer), another sums integer level
//! products block by block with `qlevels` and scales with `qscales`. The
//! result equals the generated ggml-form contraction and the reference in
//! phobos-rt/tests/support, bit for bit, on ragged shapes.
//!
//! Host-only for now: `make test` runs this suite with
//! `--no-default-features` (the quantizing store and block access also
//! lower to PTX; they are assembled by build-support/tests/mlir_quant.rs).
#![cfg(not(feature = "ptx"))]

#[path = "../phobos-rt/tests/support/ggml_reference.rs"]
mod ggml_reference;

use phobos::quant::{GgmlType, Q4_0, Q8_0, QuantFormat};
use phobos::{Device, QTensor};
use proptest::prelude::*;

phobos::kernel! {
    // ggml's quantize_row_q8_0, one block per program.
    @grid(M, cdiv(K, 32))
    kernel quantize_q8_0(X: tensor<f32>[M, K], XQ: tensor<q8_0>[M, K]) {
      let m = program_id(0)
      let k = program_id(1) * 32
      XQ[m :+ 1, k :+ 32] = X[m :+ 1, k :+ 32]
    }

    // ggml's q4_0 x q8_0 dot product, block by block, in the language.
    @grid(M, N)
    kernel reference_q4_0(XQ: tensor<q8_0>[M, K], W: tensor<q4_0>[N, K], Y: tensor<f32>[M, N]) {
      let m = program_id(0)
      let n = program_id(1)
      var acc: tile<f32>[1, 1] = 0.0
      for k in range(0, K, 32) {
        let x = XQ[m :+ 1, k :+ 32]
        let w = W[n :+ 1, k :+ 32]
        let sumi = dot_t(qlevels(x), qlevels(w))
        acc += f32(sumi) * (qscales(w) * qscales(x))
      }
      Y[m :+ 1, n :+ 1] = acc
    }

    // The same for q8_0 weights.
    @grid(M, N)
    kernel reference_q8_0(XQ: tensor<q8_0>[M, K], W: tensor<q8_0>[N, K], Y: tensor<f32>[M, N]) {
      let m = program_id(0)
      let n = program_id(1)
      var acc: tile<f32>[1, 1] = 0.0
      for k in range(0, K, 32) {
        let x = XQ[m :+ 1, k :+ 32]
        let w = W[n :+ 1, k :+ 32]
        acc += f32(dot_t(qlevels(x), qlevels(w))) * (qscales(w) * qscales(x))
      }
      Y[m :+ 1, n :+ 1] = acc
    }

    // The generated ggml form, for comparison.
    @grid(cdiv(M, 2), cdiv(N, 4))
    kernel generated_q4_0(X: tensor<f32>[M, K], W: tensor<q4_0>[N, K], Y: tensor<f32>[M, N]) {
      let pm = program_id(0) * 2
      let pn = program_id(1) * 4
      var acc: tile<f32>[2, 4] = 0.0
      for k in range(0, K, 32) {
        acc += dot_t(X[pm :+ 2, k :+ 32], W[pn :+ 4, k :+ 32])
      }
      Y[pm :+ 2, pn :+ 4] = acc
    }
}

fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let unit = ((state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as f32;
            // Blocks of very different magnitudes, and an all-zero block.
            match (i / 32) % 5 {
                0 => unit * 0.01,
                1 => unit * 40.0,
                2 => 0.0,
                _ => unit,
            }
        })
        .collect()
}

fn quantize_in_kernel(device: &Device, x: &[f32], m: usize, k: usize) -> QTensor<'static, Q8_0> {
    let x = device.tensor_from(x, [m, k]).unwrap();
    let mut xq = QTensor::<Q8_0>::zeroed([m, k]).unwrap();
    quantize_q8_0::launch(device, &x, &mut xq).unwrap();
    xq
}

fn check_reference<F: QuantFormat>(m: usize, n: usize, k_blocks: usize, seed: u64) {
    let device = Device::host();
    let k = 32 * k_blocks;
    let w = QTensor::<F>::quantize(&values(seed, n * k), [n, k]).unwrap();
    let x = values(seed ^ 0xA5, m * k);
    let xq = quantize_in_kernel(&device, &x, m, k);
    let mut y = device.zeros::<f32>([m, n]).unwrap();
    match F::GGML {
        GgmlType::Q4_0 => {
            let w = QTensor::<Q4_0>::borrowed(w.bytes(), [n, k]).unwrap();
            reference_q4_0::launch(&device, &xq, &w, &mut y).unwrap();
        }
        _ => {
            let w = QTensor::<Q8_0>::borrowed(w.bytes(), [n, k]).unwrap();
            reference_q8_0::launch(&device, &xq, &w, &mut y).unwrap();
        }
    }
    let expected = ggml_reference::contract(F::GGML, w.bytes(), n, &x, k);
    let got = y.to_vec().unwrap();
    for i in 0..m {
        for j in 0..n {
            assert_eq!(
                got[i * n + j].to_bits(),
                expected[i][j].to_bits(),
                "{} m={m} n={n} k={k} [{i},{j}]: {} vs {}",
                F::NAME,
                got[i * n + j],
                expected[i][j]
            );
        }
    }
}

#[test]
fn a_kernel_quantizes_to_q8_0_bit_for_bit() {
    let device = Device::host();
    for (m, k) in [(1, 32), (3, 96), (5, 256)] {
        let x = values(m as u64 * 7 + k as u64, m * k);
        let xq = quantize_in_kernel(&device, &x, m, k);
        let expected = QTensor::<Q8_0>::quantize(&x, [m, k]).unwrap();
        assert_eq!(xq.bytes(), expected.bytes(), "m={m} k={k}");
    }
}

#[test]
fn the_language_reference_matches_the_generated_ggml_form() {
    let device = Device::host();
    let (m, n, k) = (3, 5, 96);
    let w = QTensor::<Q4_0>::quantize(&values(3, n * k), [n, k]).unwrap();
    let x_values = values(4, m * k);
    let x = device.tensor_from(&x_values, [m, k]).unwrap();
    let mut generated = device.zeros::<f32>([m, n]).unwrap();
    generated_q4_0::launch(&device, &x, &w, &mut generated).unwrap();
    let xq = quantize_in_kernel(&device, &x_values, m, k);
    let mut reference = device.zeros::<f32>([m, n]).unwrap();
    reference_q4_0::launch(&device, &xq, &w, &mut reference).unwrap();
    let (g, r) = (generated.to_vec().unwrap(), reference.to_vec().unwrap());
    for (i, (a, b)) in g.iter().zip(&r).enumerate() {
        assert_eq!(
            a.to_bits(),
            b.to_bits(),
            "[{i}]: generated {a}, reference {b}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn reference_kernels_follow_ggml_on_ragged_shapes(
        m in 1usize..5,
        n in 1usize..7,
        k_blocks in 1usize..5,
        seed in any::<u64>(),
    ) {
        check_reference::<Q4_0>(m, n, k_blocks, seed);
        check_reference::<Q8_0>(m, n, k_blocks, seed);
    }
}
