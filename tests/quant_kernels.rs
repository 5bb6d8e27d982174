//! Kernels with quantized operands, compiled by `kernel!` and run on the
//! host: `dequant` is phobos-quant's dequantizer bit for bit, `dot_t` with a
//! GGUF weight follows ggml's numerics bit for bit (against the reference
//! in phobos-rt/tests/support), and `dot_t(x, dequant(w))` is the exact
//! form within the f32 bound. Shapes are ragged (masked edges).
//!
//! Host-only until the MLIR back end lowers quantized tensors (a kernel
//! with one is a build error under `ptx`): `make test` runs this suite with
//! `--no-default-features`.
#![cfg(not(feature = "ptx"))]

#[path = "../phobos-rt/tests/support/ggml_reference.rs"]
mod ggml_reference;

use phobos::quant::{GgmlType, Q4K, Q8_0, QuantFormat};
use phobos::{Device, QTensor};
use proptest::prelude::*;

phobos::kernel! {
    @autotune(BM in [4], BN in [8])
    @grid(cdiv(M, BM), cdiv(N, BN))
    kernel q4k_matmul(X: tensor<f32>[M, K], W: tensor<q4_k>[N, K], Y: tensor<f32>[M, N]) {
      let pm = program_id(0) * BM
      let pn = program_id(1) * BN
      var acc: tile<f32>[BM, BN] = 0.0
      for k in range(0, K, 256) {
        acc += dot_t(X[pm :+ BM, k :+ 256], W[pn :+ BN, k :+ 256])
      }
      Y[pm :+ BM, pn :+ BN] = acc
    }

    @grid(cdiv(N, 8))
    kernel q8_matmul_exact(X: tensor<f32>[M, K], W: tensor<q8_0>[N, K], Y: tensor<f32>[M, N]) {
      let pn = program_id(0) * 8
      var acc: tile<f32>[8, 8] = 0.0
      for k in range(0, K, 64) {
        acc += dot_t(X[0 :+ 8, k :+ 64], dequant(W[pn :+ 8, k :+ 64]))
      }
      Y[0 :+ 8, pn :+ 8] = acc
    }

    @grid(cdiv(N, 4), cdiv(K, 256))
    kernel q4k_dequant(W: tensor<q4_k>[N, K], Y: tensor<f32>[N, K]) {
      let w = W[program_id(0) * 4 :+ 4, program_id(1) * 256 :+ 256]
      Y[program_id(0) * 4 :+ 4, program_id(1) * 256 :+ 256] = dequant(w)
    }
}

fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as f32
        })
        .collect()
}

fn quantized<F: QuantFormat>(n: usize, k: usize, seed: u64) -> QTensor<'static, F> {
    QTensor::<F>::quantize(&values(seed, n * k), [n, k]).unwrap()
}

fn run_q4k_matmul(m: usize, n: usize, k_blocks: usize, seed: u64) {
    let device = Device::host();
    let k = 256 * k_blocks;
    let w = quantized::<Q4K>(n, k, seed);
    let x_values = values(seed ^ 0x55, m * k);
    let x = device.tensor_from(&x_values, [m, k]).unwrap();
    let mut y = device.zeros::<f32>([m, n]).unwrap();
    q4k_matmul::launch(&device, &x, &w, &mut y).unwrap();
    let expected = ggml_reference::contract(GgmlType::Q4_K, w.bytes(), n, &x_values, k);
    let got = y.to_vec().unwrap();
    for i in 0..m {
        for j in 0..n {
            assert_eq!(
                got[i * n + j].to_bits(),
                expected[i][j].to_bits(),
                "m={m} n={n} [{i},{j}]"
            );
        }
    }
}

#[test]
fn a_q4_k_matmul_kernel_follows_ggml_bit_for_bit() {
    run_q4k_matmul(5, 10, 2, 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn q4_k_matmul_on_ragged_shapes(m in 1usize..10, n in 1usize..20, k_blocks in 1usize..3, seed in any::<u64>()) {
        run_q4k_matmul(m, n, k_blocks, seed);
    }
}

#[test]
fn dequant_in_a_kernel_is_phobos_quants_dequantizer() {
    let device = Device::host();
    let (n, k) = (6, 512);
    let w = quantized::<Q4K>(n, k, 3);
    let mut y = device.zeros::<f32>([n, k]).unwrap();
    q4k_dequant::launch(&device, &w, &mut y).unwrap();
    let mut expected = vec![0f32; n * k];
    phobos_quant::dequantize(GgmlType::Q4_K, w.bytes(), &mut expected).unwrap();
    let got: Vec<u32> = y.to_vec().unwrap().iter().map(|v| v.to_bits()).collect();
    let expected: Vec<u32> = expected.iter().map(|v| v.to_bits()).collect();
    assert_eq!(got, expected);
}

#[test]
fn the_exact_form_is_within_the_f32_bound() {
    let device = Device::host();
    let (m, n, k) = (3, 13, 128);
    let w = quantized::<Q8_0>(n, k, 8);
    let mut wf = vec![0f32; n * k];
    phobos_quant::dequantize(GgmlType::Q8_0, w.bytes(), &mut wf).unwrap();
    let x_values = values(4, m * k);
    let x = device.tensor_from(&x_values, [m, k]).unwrap();
    let mut y = device.zeros::<f32>([m, n]).unwrap();
    q8_matmul_exact::launch(&device, &x, &w, &mut y).unwrap();
    let got = y.to_vec().unwrap();
    for i in 0..m {
        for j in 0..n {
            let (mut exact, mut abs) = (0f64, 0f64);
            for e in 0..k {
                let p = f64::from(x_values[i * k + e]) * f64::from(wf[j * k + e]);
                exact += p;
                abs += p.abs();
            }
            // gamma_K * sum |x w| with u = 2^-24 (derived in
            // phobos-rt/tests/quant_contraction.rs, `exact_bound`); the
            // two 64-wide steps add one more rounding, so K + 1.
            let ku = (k + 1) as f64 * f64::powi(2.0, -24);
            let bound = ku / (1.0 - ku) * abs;
            let g = f64::from(got[i * n + j]);
            assert!(
                (g - exact).abs() <= bound,
                "[{i},{j}] {g} vs {exact} (bound {bound})"
            );
        }
    }
}

#[test]
fn a_tensor_whose_last_dim_is_not_whole_blocks_is_refused() {
    let err = QTensor::<Q4K>::owned(vec![0; 144], [1, 255]).unwrap_err();
    assert!(err.to_string().contains("block length 256"), "{err}");
}
