//! Real Gemma 3 270M weights (Q8_0, Q5_0, Q4_K, Q6_K) as quantized kernel
//! operands: borrowed from the mapped file without a copy, dequantized bit
//! for bit, contracted in ggml's form bit for bit against the reference in
//! phobos-rt/tests/support, and in the exact form within the f32 bound.
//! Skips when the model file is absent (see tests/gguf_gemma.rs).

mod common;

#[path = "../../phobos-rt/tests/support/ggml_reference.rs"]
mod ggml_reference;

use phobos_models::gguf::{Gguf, TensorView};
use phobos_models::quant::GgmlType;
use phobos_rt::host::{QuantRead, Slice, Tile, dequant, dot_t, dot_t_quant_rhs, load_quant};
use phobos_rt::quant::{Q4K, Q5_0, Q6K, Q8_0, QuantFormat};

const PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../models/gemma-3-270m-q4_k_m.gguf"
);

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

/// The first rows of `view` through the kernel path, against the references.
fn check<F: QuantFormat>(view: &TensorView<'_>) {
    let tensor = view.to_qtensor::<F>().unwrap();
    assert!(
        std::ptr::eq(tensor.bytes(), view.data),
        "{}: borrowed from the map",
        view.name()
    );
    let [rows, k] = *tensor.shape() else {
        panic!("{}: rank 2 expected", view.name())
    };
    let n = rows.min(40);
    let q = load_quant(
        &QuantRead::new(&tensor).unwrap(),
        &[Slice::Span { start: 0, len: n }, Slice::Full],
    )
    .unwrap();
    let row_bytes = k / F::GGML.info().block_len * F::GGML.info().block_bytes;
    let weights = &view.data[..n * row_bytes];

    let mut wf = vec![0f32; n * k];
    phobos_models::quant::dequantize(F::GGML, weights, &mut wf).unwrap();
    let got = dequant(&q).unwrap();
    assert!(
        got.as_slice()
            .iter()
            .zip(&wf)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "{}: dequant",
        view.name()
    );

    let m = 3;
    let x = values(k as u64, m * k);
    let xt = Tile::from_vec(&[m, k], x.clone()).unwrap();
    let ggml = dot_t_quant_rhs(&xt, &q).unwrap();
    let expected = ggml_reference::contract(F::GGML, weights, n, &x, k);
    for (i, expected_row) in expected.iter().enumerate().take(m) {
        for (j, want) in expected_row.iter().enumerate().take(n) {
            assert_eq!(
                ggml.as_slice()[i * n + j].to_bits(),
                want.to_bits(),
                "{} [{i},{j}]",
                view.name()
            );
        }
    }

    // Exact form, bound derived in phobos-rt/tests/quant_contraction.rs.
    let exact = dot_t(&xt, &got).unwrap();
    let ku = k as f64 * f64::powi(2.0, -24);
    for i in 0..m {
        for j in 0..n {
            let (mut sum, mut abs) = (0f64, 0f64);
            for e in 0..k {
                let p = f64::from(x[i * k + e]) * f64::from(wf[j * k + e]);
                sum += p;
                abs += p.abs();
            }
            let g = f64::from(exact.as_slice()[i * n + j]);
            assert!(
                (g - sum).abs() <= ku / (1.0 - ku) * abs,
                "{} [{i},{j}]",
                view.name()
            );
        }
    }
}

#[test]
fn gemma_weights_are_kernel_operands_in_every_format_of_the_file() {
    if !std::path::Path::new(PATH).exists() {
        common::missing_test_data(PATH);
        return;
    }
    let file = Gguf::open(PATH).unwrap();
    let mut seen = Vec::new();
    for view in file.tensor_views() {
        if view.dims().len() != 2 || seen.contains(&view.ty()) {
            continue;
        }
        match view.ty() {
            GgmlType::Q8_0 => check::<Q8_0>(&view),
            GgmlType::Q5_0 => check::<Q5_0>(&view),
            GgmlType::Q4_K => check::<Q4K>(&view),
            GgmlType::Q6_K => check::<Q6K>(&view),
            _ => continue,
        }
        seen.push(view.ty());
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            GgmlType::Q5_0,
            GgmlType::Q8_0,
            GgmlType::Q4_K,
            GgmlType::Q6_K
        ]
    );
    let wrong = file
        .tensor_views()
        .find(|v| v.ty() == GgmlType::Q6_K)
        .unwrap();
    let err = wrong.to_qtensor::<Q4K>().unwrap_err();
    assert!(err.to_string().contains("is stored as Q6_K"), "{err}");
}
