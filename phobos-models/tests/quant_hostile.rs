//! Quantizing non-finite input (NaN, infinities, f32::MAX) still appends
//! exactly one block per block of input, for every type. The i-quant
//! searches kept the best candidate by `err < best`, which no NaN or
//! infinite error satisfies, so such a block lost its rows (found by the
//! dequant fuzz target: IQ2_XS wrote 10 bytes instead of 74).

use phobos_models::quant::{ALL_TYPES, can_dequantize, can_quantize, dequantize, quantize};

fn hostile_blocks(block_len: usize) -> Vec<Vec<f32>> {
    let mixed: Vec<f32> = (0..block_len)
        .map(|i| match i % 5 {
            0 => f32::NAN,
            1 => f32::INFINITY,
            2 => f32::NEG_INFINITY,
            3 => f32::MAX,
            _ => i as f32,
        })
        .collect();
    let mut one_nan = vec![0.5f32; block_len];
    one_nan[block_len / 2] = f32::NAN;
    vec![
        vec![f32::NAN; block_len],
        vec![f32::INFINITY; block_len],
        vec![f32::NEG_INFINITY; block_len],
        vec![f32::MAX; block_len],
        vec![-f32::MAX; block_len],
        mixed,
        one_nan,
    ]
}

#[test]
fn non_finite_input_quantizes_to_whole_blocks() {
    let mut checked = 0;
    for info in ALL_TYPES.iter().filter(|t| can_quantize(t.ty)) {
        for block in hostile_blocks(info.block_len) {
            let mut out = Vec::new();
            quantize(info.ty, &block, &mut out).unwrap();
            assert_eq!(
                out.len(),
                info.block_bytes,
                "{} on {:?}",
                info.name,
                &block[..4]
            );
            if can_dequantize(info.ty) {
                let mut back = vec![0f32; info.block_len];
                dequantize(info.ty, &out, &mut back).unwrap();
            }
            checked += 1;
        }
    }
    assert!(checked >= 20 * 7, "{checked} cases");
}
