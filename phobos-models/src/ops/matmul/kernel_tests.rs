//! Every format's weight-product kernel, on random valid blocks from
//! phobos-quant's quantizers and ragged shapes: the generated body
//! (`launch_generated`) is bit-exact with the plain ggml-form reference
//! (phobos-rt/tests/support/ggml_reference.rs: q8 partner quantizers,
//! integer sums, one term per block in block order); the hand-written host
//! path (`launch`, `host::qmatmul`) and the generated body are each within
//! the derived f32 bound of the exact value of their own operands, so they
//! agree within the sum of the two bounds (plus the exact difference that
//! ggml's x86 q8 quantizer's rounding of exact ties can make).

#[path = "../../../../phobos-rt/tests/support/ggml_reference.rs"]
mod ggml_reference;

use proptest::prelude::*;

use super::kernels::{Body, launch};
use super::{QMatrixRef, matmul};
use crate::quant::{self, GgmlType};

/// Every format with a kernel in `qmatmul.ph`.
const KERNEL_FORMATS: [GgmlType; 12] = [
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q5_1,
    GgmlType::Q8_0,
    GgmlType::IQ4_NL,
    GgmlType::Q2_K,
    GgmlType::Q3_K,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::IQ4_XS,
];

/// Unit roundoff of f32.
const U: f64 = f32::EPSILON as f64 / 2.0;

fn gamma(n: f64) -> f64 {
    n * U / (1.0 - n * U)
}

/// Pseudo-random floats with a spread of magnitudes per 37-element run.
fn floats(seed: u64, len: usize) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let unit = (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            unit * [0.02f32, 0.3, 1.0, 4.0][(i / 37) % 4]
        })
        .collect()
}

struct Case {
    ty: GgmlType,
    m: usize,
    n: usize,
    k: usize,
    weights: Vec<u8>,
    x: Vec<f32>,
}

impl Case {
    fn new(ty: GgmlType, m: usize, n: usize, k_blocks: usize, seed: u64) -> Case {
        let k = ty.info().block_len * k_blocks;
        let mut weights = Vec::new();
        quant::quantize(ty, &floats(seed, n * k), &mut weights).unwrap();
        let x = floats(seed ^ 0x5555, m * k);
        Case {
            ty,
            m,
            n,
            k,
            weights,
            x,
        }
    }

    fn w(&self) -> QMatrixRef<'_> {
        QMatrixRef {
            ty: self.ty,
            rows: self.n,
            cols: self.k,
            data: &self.weights,
        }
    }

    fn run(&self, body: Body) -> Vec<f32> {
        let mut out = vec![f32::NAN; self.m * self.n];
        assert!(launch(&self.w(), &self.x, self.m, &mut out, body).unwrap());
        out
    }

    /// Per output, the exact value of the ggml form on activations `acts`
    /// (partner blocks, rows back to back) and its f32 error bound for an
    /// evaluation with `depth` roundings on the longest path.
    fn ggml_exact(&self, acts: &[u8], depth: f64) -> Vec<(f64, f64)> {
        let info = self.ty.info();
        let blocks = self.k / info.block_len;
        let partner = ggml_reference::partner(self.ty).unwrap().info();
        let x_block = partner.block_bytes * info.block_len / partner.block_len;
        let mut out = Vec::new();
        for m in 0..self.m {
            for n in 0..self.n {
                let (mut exact, mut magnitude) = (0.0, 0.0);
                for b in 0..blocks {
                    let w_at = (n * blocks + b) * info.block_bytes;
                    let x_at = (m * blocks + b) * x_block;
                    let (e, mag) = ggml_reference::block_exact(
                        self.ty,
                        &self.weights[w_at..w_at + info.block_bytes],
                        &acts[x_at..x_at + x_block],
                    );
                    exact += e;
                    magnitude += mag;
                }
                // f64's own rounding of the exact value: far below 2^-40.
                out.push((exact, gamma(depth) * magnitude + magnitude * 2f64.powi(-40)));
            }
        }
        out
    }

    /// The exact form: `sum_k w_k x_k` over the dequantized weights and
    /// `x` (f64), and the f32 bound of an evaluation `depth` deep.
    fn float_exact(&self, x: &[f64], depth: f64) -> Vec<(f64, f64)> {
        let mut w = vec![0f32; self.n * self.k];
        quant::dequantize(self.ty, &self.weights, &mut w).unwrap();
        let mut out = Vec::new();
        for m in 0..self.m {
            for n in 0..self.n {
                let (mut exact, mut magnitude) = (0.0, 0.0);
                for k in 0..self.k {
                    let p = f64::from(w[n * self.k + k]) * x[m * self.k + k];
                    exact += p;
                    magnitude += p.abs();
                }
                out.push((exact, gamma(depth) * magnitude));
            }
        }
        out
    }

    /// The partner blocks the hand-written path multiplies (ggml's x86
    /// quantizer for q8_0/q8_1, the reference one for q8_K).
    fn hand_acts(&self) -> Vec<u8> {
        phobos_rt::host::qmatmul::quantize_activations(self.ty, &self.x, self.m, self.k)
            .unwrap()
            .blocks()
            .to_vec()
    }

    /// The partner blocks of SPEC.md's ggml form (phobos-quant's ggml-exact
    /// reference quantizers, per row).
    fn reference_acts(&self) -> Vec<u8> {
        let partner = ggml_reference::partner(self.ty).unwrap();
        let mut out = Vec::new();
        for row in self.x.chunks_exact(self.k) {
            let mut blocks = Vec::new();
            quant::quantize(partner, row, &mut blocks).unwrap();
            out.extend(blocks);
        }
        out
    }
}

/// Q8_K activations (256-element blocks: f32 d, 256 i8, 16 i16 sums)
/// dequantized in f64.
fn q8k_values(blocks: &[u8]) -> Vec<f64> {
    let mut out = Vec::new();
    for block in blocks.chunks_exact(292) {
        let d = f64::from(f32::from_le_bytes([block[0], block[1], block[2], block[3]]));
        out.extend(block[4..260].iter().map(|&q| d * f64::from(q as i8)));
    }
    out
}

fn check_within(what: &str, case: &Case, got: &[f32], want: &[(f64, f64)]) {
    for (i, (g, (exact, bound))) in got.iter().zip(want).enumerate() {
        let error = (f64::from(*g) - exact).abs();
        assert!(
            error <= *bound,
            "{what} {:?} m={} n={} k={} at {i}: {g} vs exact {exact}, error {error} > bound {bound}",
            case.ty,
            case.m,
            case.n,
            case.k
        );
    }
}

/// The bounds' depths (roundings on the longest path of one block's part,
/// `nb` blocks per row): the generated body forms each block's term with at
/// most 4 roundings (scale product, f32 of the integer sum, product, the
/// min part's subtraction) and adds it to the row's sum (`nb`): `nb + 4`.
/// The hand-written path (ggml's AVX2 order) rounds the scale product, the
/// lane's f32 conversion and the FMA into the lane's accumulator (`nb`
/// deep), folds eight lanes (3), and keeps the min or offset part in a
/// second accumulator folded in at the end (3 more): `nb + 9`.
fn check_format(ty: GgmlType, m: usize, n: usize, k_blocks: usize, seed: u64) {
    let case = Case::new(ty, m, n, k_blocks, seed);
    let hand = case.run(Body::Launch);
    let generated = case.run(Body::Generated);
    let blocks = k_blocks as f64;
    if ty == GgmlType::IQ4_XS {
        // No integer form in the language: the generated body is the exact
        // form, one 256-wide f32 contraction per step added to the
        // accumulator (K + blocks roundings deep).
        let x: Vec<f64> = case.x.iter().map(|&v| f64::from(v)).collect();
        check_within(
            "generated",
            &case,
            &generated,
            &case.float_exact(&x, (case.k + k_blocks) as f64),
        );
        // The hand-written path is ggml's integer form on Q8_K activations.
        // Its exact value differs from the dequantized weights' by their
        // own two f32 roundings (`d * (ls - 32)`, then times the level).
        let x_hand = q8k_values(&case.hand_acts());
        check_within(
            "hand-written",
            &case,
            &hand,
            &case.float_exact(&x_hand, blocks + 11.0),
        );
        return;
    }
    let reference = ggml_reference::contract(ty, &case.weights, n, &case.x, case.k);
    for (i, g) in generated.iter().enumerate() {
        let want = reference[i / n][i % n];
        assert_eq!(
            g.to_bits(),
            want.to_bits(),
            "{ty:?} m={m} n={n} at {i}: {g} vs {want}"
        );
    }
    let generated_bound = case.ggml_exact(&case.reference_acts(), blocks + 4.0);
    check_within("generated", &case, &generated, &generated_bound);
    let hand_bound = case.ggml_exact(&case.hand_acts(), blocks + 9.0);
    check_within("hand-written", &case, &hand, &hand_bound);
    // Hence the two paths agree within both bounds and the exact difference
    // of their operands (0 unless an activation sat on a rounding tie).
    for (i, (h, g)) in hand.iter().zip(&generated).enumerate() {
        let ((e_h, b_h), (e_g, b_g)) = (hand_bound[i], generated_bound[i]);
        let apart = (f64::from(*h) - f64::from(*g)).abs();
        assert!(
            apart <= b_h + b_g + (e_h - e_g).abs(),
            "{ty:?} at {i}: {h} vs {g}"
        );
    }
}

#[test]
fn every_format_hand_written_against_generated() {
    for ty in KERNEL_FORMATS {
        // Three 4x16 tiles along each dim, the last ones partial.
        check_format(ty, 9, 37, 3, 11);
        // Decode: one activation row.
        check_format(ty, 1, 20, 2, 12);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn ragged_shapes_on_every_format(m in 1usize..10, n in 1usize..40, k_blocks in 1usize..4, seed in any::<u64>()) {
        for ty in KERNEL_FORMATS {
            check_format(ty, m, n, k_blocks, seed);
        }
    }
}

/// The engine's entry point launches the kernel: bit-exact with
/// phobos-rt's quantized matmul called directly (what the Gemma goldens
/// were made against).
#[test]
fn engine_matmul_is_the_kernel_and_equals_the_direct_call() {
    for ty in KERNEL_FORMATS {
        let case = Case::new(ty, 5, 23, 2, 21);
        let mut via_matmul = vec![0f32; case.m * case.n];
        matmul(&case.w(), &case.x, case.m, &mut via_matmul).unwrap();
        let mut direct = vec![0f32; case.m * case.n];
        phobos_rt::host::qmatmul::matmul_threaded(
            &phobos_rt::host::qmatmul::QMatrixRef {
                ty,
                rows: case.n,
                cols: case.k,
                data: &case.weights,
            },
            &case.x,
            case.m,
            &mut direct,
        )
        .unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&via_matmul), bits(&direct), "{ty:?}");
        assert_eq!(bits(&via_matmul), bits(&case.run(Body::Launch)), "{ty:?}");
    }
}

#[test]
fn formats_without_a_kernel_are_not_launched() {
    let bytes = vec![0u8; 4 * 32];
    let w = QMatrixRef {
        ty: GgmlType::F32,
        rows: 1,
        cols: 32,
        data: &bytes,
    };
    let mut out = vec![0f32; 1];
    assert!(!launch(&w, &[0.0; 32], 1, &mut out, Body::Launch).unwrap());
}

#[test]
fn a_weight_of_the_wrong_size_is_an_error() {
    let bytes = vec![0u8; 33];
    let w = QMatrixRef {
        ty: GgmlType::Q8_0,
        rows: 1,
        cols: 32,
        data: &bytes,
    };
    let mut out = vec![0f32; 1];
    assert!(launch(&w, &[0.0; 32], 1, &mut out, Body::Launch).is_err());
}
