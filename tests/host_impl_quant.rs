//! `phobos_rt::host::qmatmul::qmatmul_host` as the `@host_impl` of the
//! quantized formats the engine has no kernels for (the PTX back end does
//! not lower them yet, so these kernels are host-only, like
//! quant_kernels.rs): `iq1_s iq1_m iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s tq1_0
//! tq2_0`. Neither path has an integer form for them (SPEC.md §14): both
//! are the exact form, so each is within the f32 bound of the f64 product
//! of the dequantized weights and the activations, and they agree within
//! the sum of the two bounds. phobos-models' `ops/matmul/kernel_tests.rs`
//! does the same for the formats the engine launches.
#![cfg(not(feature = "ptx"))]

use phobos::host::qmatmul::qmatmul_host;
use phobos::quant::{
    GgmlType, Iq1M, Iq1S, Iq2S, Iq2Xs, Iq2Xxs, Iq3S, Iq3Xxs, QuantFormat, Tq1_0, Tq2_0,
};
use phobos::{Device, QTensor};
use proptest::prelude::*;

phobos::kernel! {
    @host_impl(qmatmul_host)
    @grid(cdiv(M, 4), cdiv(N, 16))
    kernel qmatmul_iq1_s(X: tensor<f32>[M, K], W: tensor<iq1_s>[N, K], Y: tensor<f32>[M, N]) {
      let m0 = program_id(0) * 4
      let n0 = program_id(1) * 16
      var acc: tile<f32>[4, 16] = 0.0
      for k in range(0, K, 256) {
        acc += dot_t(X[m0 :+ 4, k :+ 256], W[n0 :+ 16, k :+ 256])
      }
      Y[m0 :+ 4, n0 :+ 16] = acc
    }

    @host_impl(qmatmul_host)
    @grid(cdiv(M, 4), cdiv(N, 16))
    kernel qmatmul_iq1_m(X: tensor<f32>[M, K], W: tensor<iq1_m>[N, K], Y: tensor<f32>[M, N]) {
      let m0 = program_id(0) * 4
      let n0 = program_id(1) * 16
      var acc: tile<f32>[4, 16] = 0.0
      for k in range(0, K, 256) {
        acc += dot_t(X[m0 :+ 4, k :+ 256], W[n0 :+ 16, k :+ 256])
      }
      Y[m0 :+ 4, n0 :+ 16] = acc
    }

    @host_impl(qmatmul_host)
    @grid(cdiv(M, 4), cdiv(N, 16))
    kernel qmatmul_iq2_xxs(X: tensor<f32>[M, K], W: tensor<iq2_xxs>[N, K], Y: tensor<f32>[M, N]) {
      let m0 = program_id(0) * 4
      let n0 = program_id(1) * 16
      var acc: tile<f32>[4, 16] = 0.0
      for k in range(0, K, 256) {
        acc += dot_t(X[m0 :+ 4, k :+ 256], W[n0 :+ 16, k :+ 256])
      }
      Y[m0 :+ 4, n0 :+ 16] = acc
    }

    @host_impl(qmatmul_host)
    @grid(cdiv(M, 4), cdiv(N, 16))
    kernel qmatmul_iq2_xs(X: tensor<f32>[M, K], W: tensor<iq2_xs>[N, K], Y: tensor<f32>[M, N]) {
      let m0 = program_id(0) * 4
      let n0 = program_id(1) * 16
      var acc: tile<f32>[4, 16] = 0.0
      for k in range(0, K, 256) {
        acc += dot_t(X[m0 :+ 4, k :+ 256], W[n0 :+ 16, k :+ 256])
      }
      Y[m0 :+ 4, n0 :+ 16] = acc
    }

    @host_impl(qmatmul_host)
    @grid(cdiv(M, 4), cdiv(N, 16))
    kernel qmatmul_iq2_s(X: tensor<f32>[M, K], W: tensor<iq2_s>[N, K], Y: tensor<f32>[M, N]) {
      let m0 = program_id(0) * 4
      let n0 = program_id(1) * 16
      var acc: tile<f32>[4, 16] = 0.0
      for k in range(0, K, 256) {
        acc += dot_t(X[m0 :+ 4, k :+ 256], W[n0 :+ 16, k :+ 256])
      }
      Y[m0 :+ 4, n0 :+ 16] = acc
    }

    @host_impl(qmatmul_host)
    @grid(cdiv(M, 4), cdiv(N, 16))
    kernel qmatmul_iq3_xxs(X: tensor<f32>[M, K], W: tensor<iq3_xxs>[N, K], Y: tensor<f32>[M, N]) {
      let m0 = program_id(0) * 4
      let n0 = program_id(1) * 16
      var acc: tile<f32>[4, 16] = 0.0
      for k in range(0, K, 256) {
        acc += dot_t(X[m0 :+ 4, k :+ 256], W[n0 :+ 16, k :+ 256])
      }
      Y[m0 :+ 4, n0 :+ 16] = acc
    }

    @host_impl(qmatmul_host)
    @grid(cdiv(M, 4), cdiv(N, 16))
    kernel qmatmul_iq3_s(X: tensor<f32>[M, K], W: tensor<iq3_s>[N, K], Y: tensor<f32>[M, N]) {
      let m0 = program_id(0) * 4
      let n0 = program_id(1) * 16
      var acc: tile<f32>[4, 16] = 0.0
      for k in range(0, K, 256) {
        acc += dot_t(X[m0 :+ 4, k :+ 256], W[n0 :+ 16, k :+ 256])
      }
      Y[m0 :+ 4, n0 :+ 16] = acc
    }

    @host_impl(qmatmul_host)
    @grid(cdiv(M, 4), cdiv(N, 16))
    kernel qmatmul_tq1_0(X: tensor<f32>[M, K], W: tensor<tq1_0>[N, K], Y: tensor<f32>[M, N]) {
      let m0 = program_id(0) * 4
      let n0 = program_id(1) * 16
      var acc: tile<f32>[4, 16] = 0.0
      for k in range(0, K, 256) {
        acc += dot_t(X[m0 :+ 4, k :+ 256], W[n0 :+ 16, k :+ 256])
      }
      Y[m0 :+ 4, n0 :+ 16] = acc
    }

    @host_impl(qmatmul_host)
    @grid(cdiv(M, 4), cdiv(N, 16))
    kernel qmatmul_tq2_0(X: tensor<f32>[M, K], W: tensor<tq2_0>[N, K], Y: tensor<f32>[M, N]) {
      let m0 = program_id(0) * 4
      let n0 = program_id(1) * 16
      var acc: tile<f32>[4, 16] = 0.0
      for k in range(0, K, 256) {
        acc += dot_t(X[m0 :+ 4, k :+ 256], W[n0 :+ 16, k :+ 256])
      }
      Y[m0 :+ 4, n0 :+ 16] = acc
    }
}

const FORMATS: [GgmlType; 9] = [
    GgmlType::IQ1_S,
    GgmlType::IQ1_M,
    GgmlType::IQ2_XXS,
    GgmlType::IQ2_XS,
    GgmlType::IQ2_S,
    GgmlType::IQ3_XXS,
    GgmlType::IQ3_S,
    GgmlType::TQ1_0,
    GgmlType::TQ2_0,
];

fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let unit = (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            unit * [0.02f32, 0.3, 1.0, 4.0][(i / 37) % 4]
        })
        .collect()
}

/// `(hand-written, generated)` outputs of the kernel for `ty`.
fn run(
    ty: GgmlType,
    weights: &[u8],
    x: &[f32],
    m: usize,
    n: usize,
    k: usize,
) -> (Vec<f32>, Vec<f32>) {
    fn both<F: QuantFormat>(
        launch: impl Fn(
            &Device,
            &phobos::Tensor<f32>,
            &QTensor<'_, F>,
            &mut phobos::Tensor<f32>,
            bool,
        ) -> phobos::Result<()>,
        weights: &[u8],
        x: &[f32],
        m: usize,
        n: usize,
        k: usize,
    ) -> (Vec<f32>, Vec<f32>) {
        let device = Device::host();
        let w = QTensor::<F>::borrowed(weights, [n, k]).unwrap();
        let xt = device.tensor_from(x, [m, k]).unwrap();
        let mut out = [true, false].map(|hand| {
            let mut y = device.zeros::<f32>([m, n]).unwrap();
            launch(&device, &xt, &w, &mut y, hand).unwrap();
            y.to_vec().unwrap()
        });
        (std::mem::take(&mut out[0]), std::mem::take(&mut out[1]))
    }
    macro_rules! run {
        ($kernel:ident, $format:ty) => {
            both::<$format>(
                |device, x, w, y, hand| {
                    if hand {
                        $kernel::launch(device, x, w, y)
                    } else {
                        $kernel::launch_generated(device, &$kernel::Config::default(), x, w, y)
                    }
                },
                weights,
                x,
                m,
                n,
                k,
            )
        };
    }
    match ty {
        GgmlType::IQ1_S => run!(qmatmul_iq1_s, Iq1S),
        GgmlType::IQ1_M => run!(qmatmul_iq1_m, Iq1M),
        GgmlType::IQ2_XXS => run!(qmatmul_iq2_xxs, Iq2Xxs),
        GgmlType::IQ2_XS => run!(qmatmul_iq2_xs, Iq2Xs),
        GgmlType::IQ2_S => run!(qmatmul_iq2_s, Iq2S),
        GgmlType::IQ3_XXS => run!(qmatmul_iq3_xxs, Iq3Xxs),
        GgmlType::IQ3_S => run!(qmatmul_iq3_s, Iq3S),
        GgmlType::TQ1_0 => run!(qmatmul_tq1_0, Tq1_0),
        GgmlType::TQ2_0 => run!(qmatmul_tq2_0, Tq2_0),
        other => panic!("no kernel for {other:?} in this test"),
    }
}

fn check(ty: GgmlType, m: usize, n: usize, k_blocks: usize, seed: u64) {
    let k = 256 * k_blocks;
    let mut weights = Vec::new();
    phobos_quant::quantize(ty, &values(seed, n * k), &mut weights).unwrap();
    let mut w = vec![0f32; n * k];
    phobos_quant::dequantize(ty, &weights, &mut w).unwrap();
    let x = values(seed ^ 0x77, m * k);
    let (hand, generated) = run(ty, &weights, &x, m, n, k);
    let u = f64::from(f32::EPSILON) / 2.0;
    let gamma = |depth: usize| depth as f64 * u / (1.0 - depth as f64 * u);
    for i in 0..m {
        for j in 0..n {
            let (mut exact, mut magnitude) = (0f64, 0f64);
            for e in 0..k {
                let p = f64::from(w[j * k + e]) * f64::from(x[i * k + e]);
                exact += p;
                magnitude += p.abs();
            }
            // The hand-written path folds the K products left to right (K
            // roundings deep); the generated body contracts each 256-wide
            // step in some order and adds it to its accumulator (K + steps).
            let (hand_bound, generated_bound) =
                (gamma(k) * magnitude, gamma(k + k_blocks) * magnitude);
            let (h, g) = (f64::from(hand[i * n + j]), f64::from(generated[i * n + j]));
            assert!(
                (h - exact).abs() <= hand_bound,
                "{ty:?} hand [{i},{j}]: {h} vs {exact}"
            );
            assert!(
                (g - exact).abs() <= generated_bound,
                "{ty:?} generated [{i},{j}]: {g} vs {exact}"
            );
            assert!(
                (h - g).abs() <= hand_bound + generated_bound,
                "{ty:?} [{i},{j}]: {h} vs {g}"
            );
        }
    }
}

#[test]
fn every_format_without_an_engine_kernel_hand_written_against_generated() {
    for ty in FORMATS {
        check(ty, 5, 21, 2, 3);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn ragged_shapes(m in 1usize..9, n in 1usize..35, k_blocks in 1usize..3, seed in any::<u64>()) {
        for ty in FORMATS {
            check(ty, m, n, k_blocks, seed);
        }
    }
}
