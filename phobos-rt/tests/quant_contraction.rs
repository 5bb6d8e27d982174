//! Quantized operands of the host tile library against plain references:
//! `dequant` against phobos-quant's dequantizer (bit for bit), ggml's form
//! of `dot`/`dot_t` against `support/ggml_reference.rs` (bit for bit), and
//! the exact form against an f64 matmul of the dequantized weights within
//! the f32 rounding bound derived in `exact_bound`.

#[path = "support/ggml_reference.rs"]
mod ggml_reference;

use phobos_quant::GgmlType;
use phobos_rt::host::{
    QuantRead, Slice, Tile, dequant, dot_quant_lhs, dot_quant_rhs, dot_t, dot_t_quant_lhs,
    dot_t_quant_rhs, load_quant, transpose,
};
use phobos_rt::quant::*;
use phobos_rt::{Error, QTensor};
use proptest::prelude::*;

/// Deterministic values with a spread of magnitudes and signs, and the
/// occasional outlier (what weights and activations look like).
fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let unit = (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
            let scale = if i % 97 == 13 { 8.0 } else { 1.0 };
            (unit * scale) as f32
        })
        .collect()
}

/// Runs `$body` with `$F` bound to the marker type of each `GgmlType` listed.
macro_rules! each_format {
    ($ty:expr, |$F:ident| $body:block) => {{
        use GgmlType as G;
        match $ty {
            G::Q4_0 => {
                type $F = Q4_0;
                $body
            }
            G::Q4_1 => {
                type $F = Q4_1;
                $body
            }
            G::Q5_0 => {
                type $F = Q5_0;
                $body
            }
            G::Q5_1 => {
                type $F = Q5_1;
                $body
            }
            G::Q8_0 => {
                type $F = Q8_0;
                $body
            }
            G::Q2_K => {
                type $F = Q2K;
                $body
            }
            G::Q3_K => {
                type $F = Q3K;
                $body
            }
            G::Q4_K => {
                type $F = Q4K;
                $body
            }
            G::Q5_K => {
                type $F = Q5K;
                $body
            }
            G::Q6_K => {
                type $F = Q6K;
                $body
            }
            G::IQ1_S => {
                type $F = Iq1S;
                $body
            }
            G::IQ1_M => {
                type $F = Iq1M;
                $body
            }
            G::IQ2_XXS => {
                type $F = Iq2Xxs;
                $body
            }
            G::IQ2_XS => {
                type $F = Iq2Xs;
                $body
            }
            G::IQ2_S => {
                type $F = Iq2S;
                $body
            }
            G::IQ3_XXS => {
                type $F = Iq3Xxs;
                $body
            }
            G::IQ3_S => {
                type $F = Iq3S;
                $body
            }
            G::IQ4_NL => {
                type $F = Iq4Nl;
                $body
            }
            G::IQ4_XS => {
                type $F = Iq4Xs;
                $body
            }
            G::TQ1_0 => {
                type $F = Tq1_0;
                $body
            }
            G::TQ2_0 => {
                type $F = Tq2_0;
                $body
            }
            other => panic!("{other} is not a kernel-language format"),
        }
    }};
}

/// Every quantized element type of the kernel language.
const FORMATS: [GgmlType; 21] = [
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q5_1,
    GgmlType::Q8_0,
    GgmlType::Q2_K,
    GgmlType::Q3_K,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::IQ1_S,
    GgmlType::IQ1_M,
    GgmlType::IQ2_XXS,
    GgmlType::IQ2_XS,
    GgmlType::IQ2_S,
    GgmlType::IQ3_XXS,
    GgmlType::IQ3_S,
    GgmlType::IQ4_NL,
    GgmlType::IQ4_XS,
    GgmlType::TQ1_0,
    GgmlType::TQ2_0,
];

/// Random valid blocks: `rows x k` values through phobos-quant's quantizer.
fn weights(ty: GgmlType, rows: usize, k: usize, seed: u64) -> Vec<u8> {
    let mut bytes = Vec::new();
    phobos_quant::quantize(ty, &values(seed, rows * k), &mut bytes).unwrap();
    bytes
}

fn dequantized(ty: GgmlType, bytes: &[u8]) -> Vec<f32> {
    let n = bytes.len() / ty.info().block_bytes * ty.info().block_len;
    let mut out = vec![0f32; n];
    phobos_quant::dequantize(ty, bytes, &mut out).unwrap();
    out
}

/// The f32 rounding bound of a length-`k` dot product, elementwise: any
/// summation order, with or without fused multiply-adds, gives
/// `|fl(sum a_i b_i) - sum a_i b_i| <= gamma_k * sum |a_i b_i|` with
/// `gamma_k = k u / (1 - k u)` and `u = 2^-24` (Higham, Accuracy and
/// Stability, eq. 3.5: each of the at most `k` roundings on a path to the
/// result contributes a factor `(1 + d)`, `|d| <= u`). The inputs are the
/// exact f32 values on both sides, so nothing else contributes.
fn exact_bound(k: usize, abs_products: f64) -> f64 {
    let u = f64::powi(2.0, -24);
    let ku = k as f64 * u;
    ku / (1.0 - ku) * abs_products
}

fn bits(t: &Tile<f32>) -> Vec<u32> {
    t.as_slice().iter().map(|v| v.to_bits()).collect()
}

fn assert_ggml_exact(ty: GgmlType, m: usize, n: usize, k_blocks: usize, seed: u64) {
    let k = k_blocks * ty.info().block_len;
    let w = weights(ty, n, k, seed);
    let x = values(seed ^ 0xABCD, m * k);
    let expected = ggml_reference::contract(ty, &w, n, &x, k);
    each_format!(ty, |F| {
        let tensor = QTensor::<F>::owned(w.clone(), [n, k]).unwrap();
        let view = QuantRead::new(&tensor).unwrap();
        let q = load_quant(&view, &[Slice::Full, Slice::Full]).unwrap();
        let xt = Tile::from_vec(&[m, k], x.clone()).unwrap();
        // dot_t(x, w): [m, n]
        let got = dot_t_quant_rhs(&xt, &q).unwrap();
        for (i, row) in expected.iter().enumerate() {
            for (j, &e) in row.iter().enumerate() {
                let g = got.as_slice()[i * n + j];
                assert_eq!(
                    g.to_bits(),
                    e.to_bits(),
                    "{ty} m={m} n={n} k={k}: [{i},{j}] {g} vs {e}"
                );
            }
        }
        // dot_t(w, x) and dot(w, x^T) are the same numbers transposed.
        let lhs_t = dot_t_quant_lhs(&q, &xt).unwrap();
        assert_eq!(
            bits(&lhs_t),
            bits(&transpose(&got).unwrap()),
            "{ty} dot_t(w, x)"
        );
        let lhs = dot_quant_lhs(&q, &transpose(&xt).unwrap()).unwrap();
        assert_eq!(bits(&lhs), bits(&lhs_t), "{ty} dot(w, x^T)");
    });
}

fn assert_exact_form(ty: GgmlType, m: usize, n: usize, k_blocks: usize, seed: u64) {
    let k = k_blocks * ty.info().block_len;
    let w = weights(ty, n, k, seed);
    let wf = dequantized(ty, &w);
    let x = values(seed ^ 0x1234, m * k);
    each_format!(ty, |F| {
        let tensor = QTensor::<F>::owned(w.clone(), [n, k]).unwrap();
        let view = QuantRead::new(&tensor).unwrap();
        let q = load_quant(&view, &[Slice::Full, Slice::Full]).unwrap();
        let xt = Tile::from_vec(&[m, k], x.clone()).unwrap();
        // The exact form as a kernel spells it: dot_t(x, dequant(w)).
        let got = dot_t(&xt, &dequant(&q).unwrap()).unwrap();
        for i in 0..m {
            for j in 0..n {
                let (mut exact, mut abs) = (0f64, 0f64);
                for e in 0..k {
                    let p = f64::from(x[i * k + e]) * f64::from(wf[j * k + e]);
                    exact += p;
                    abs += p.abs();
                }
                let g = f64::from(got.as_slice()[i * n + j]);
                let bound = exact_bound(k, abs);
                assert!(
                    (g - exact).abs() <= bound,
                    "{ty} [{i},{j}]: {g} vs {exact}, bound {bound}"
                );
            }
        }
        // Without a partner type, dot_t itself is the exact form.
        if ggml_reference::partner(ty).is_none() {
            let plain = dot_t_quant_rhs(&xt, &q).unwrap();
            assert_eq!(bits(&plain), bits(&got), "{ty}");
        }
    });
}

#[test]
fn dequant_of_a_masked_slice_is_phobos_quants_dequantizer() {
    for ty in FORMATS {
        let block = ty.info().block_len;
        let (rows, k) = (3, 2 * block);
        let w = weights(ty, rows, k, 7);
        let full = dequantized(ty, &w);
        each_format!(ty, |F| {
            let tensor = QTensor::<F>::borrowed(&w, [rows, k]).unwrap();
            assert!(
                std::ptr::eq(tensor.bytes(), w.as_slice()),
                "borrowed, not copied"
            );
            let view = QuantRead::new(&tensor).unwrap();
            // Rows 2..5 (3 and 4 are past the end), blocks -1..2 (block -1 is before the start).
            let start = -(block as i64);
            let q = load_quant(
                &view,
                &[
                    Slice::Span { start: 2, len: 3 },
                    Slice::Span {
                        start,
                        len: 3 * block,
                    },
                ],
            )
            .unwrap();
            let got = dequant(&q).unwrap();
            assert_eq!(got.shape(), &[3, 3 * block]);
            for r in 0..3 {
                for c in 0..3 * block {
                    let col = c as i64 + start;
                    let expected = if r == 0 && (0..k as i64).contains(&col) {
                        full[2 * k + col as usize]
                    } else {
                        0.0
                    };
                    let g = got.as_slice()[r * 3 * block + c];
                    assert_eq!(g.to_bits(), expected.to_bits(), "{ty} [{r},{c}]");
                }
            }
        });
    }
}

#[test]
fn ggml_form_is_bit_exact_for_every_format_with_a_partner_type() {
    for ty in FORMATS {
        if ggml_reference::partner(ty).is_some() {
            assert_ggml_exact(ty, 3, 5, 2, 11);
        }
    }
}

#[test]
fn exact_form_is_within_the_f32_bound_for_every_format() {
    for ty in FORMATS {
        assert_exact_form(ty, 2, 3, 2, 5);
    }
}

#[test]
fn dot_with_blocks_along_the_free_dim_is_the_exact_form() {
    let ty = GgmlType::Q4_K;
    let (k, n) = (4, 256);
    let w = weights(ty, k, n, 3);
    let x = values(9, 2 * k);
    let tensor = QTensor::<Q4K>::owned(w.clone(), [k, n]).unwrap();
    let q = load_quant(
        &QuantRead::new(&tensor).unwrap(),
        &[Slice::Full, Slice::Full],
    )
    .unwrap();
    let xt = Tile::from_vec(&[2, k], x).unwrap();
    let got = dot_quant_rhs(&xt, &q).unwrap();
    let expected = phobos_rt::host::dot(&xt, &dequant(&q).unwrap()).unwrap();
    assert_eq!(bits(&got), bits(&expected));
}

#[test]
fn masked_weight_rows_contribute_zero() {
    let ty = GgmlType::Q8_0;
    let w = weights(ty, 2, 64, 1);
    let tensor = QTensor::<Q8_0>::owned(w, [2, 64]).unwrap();
    let view = QuantRead::new(&tensor).unwrap();
    let q = load_quant(&view, &[Slice::Span { start: 1, len: 3 }, Slice::Full]).unwrap();
    let x = Tile::from_vec(&[1, 64], values(2, 64)).unwrap();
    let got = dot_t_quant_rhs(&x, &q).unwrap();
    assert_ne!(got.as_slice()[0], 0.0);
    assert_eq!(&got.as_slice()[1..], &[0.0, 0.0]);
}

#[test]
fn shapes_that_do_not_fit_the_blocks_are_clear_errors() {
    let err = QTensor::<Q4K>::owned(vec![0; 144], [1, 128]).unwrap_err();
    assert!(
        matches!(err, Error::QuantShape { format: "q4_k", .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("multiple of the block length 256"),
        "{err}"
    );
    let err = QTensor::<Q8_0>::owned(vec![0; 33], [1, 32]).unwrap_err();
    assert!(err.to_string().contains("needs 34 bytes"), "{err}");
    let tensor = QTensor::<Q8_0>::owned(vec![0; 68], [1, 64]).unwrap();
    let view = QuantRead::new(&tensor).unwrap();
    let err = load_quant(&view, &[Slice::Full, Slice::Span { start: 16, len: 32 }]).unwrap_err();
    assert!(
        err.to_string().contains("not aligned to blocks of 32"),
        "{err}"
    );
    let err = load_quant(&view, &[Slice::Full, Slice::Point(0)]).unwrap_err();
    assert!(err.to_string().contains("sliced with a span"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn ggml_form_matches_the_reference_on_ragged_shapes(
        format in 0usize..FORMATS.len(),
        m in 1usize..8,
        n in 1usize..6,
        k_blocks in 1usize..4,
        seed in any::<u64>(),
    ) {
        let ty = FORMATS[format];
        if ggml_reference::partner(ty).is_some() {
            assert_ggml_exact(ty, m, n, k_blocks, seed);
        } else {
            assert_exact_form(ty, m, n, k_blocks.min(2), seed);
        }
    }
}
