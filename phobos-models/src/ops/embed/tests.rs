//! Every format's generated lookup against its hand-written host body and
//! against phobos-models' dequantizer, on rows quantized by phobos-quant.

use super::*;
use crate::ops::test_data::values;

const FORMATS: [GgmlType; 15] = [
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
    // Host path only.
    GgmlType::F16,
    GgmlType::F32,
    GgmlType::BF16,
];

/// Both bodies give every row bit for bit as the dequantizer does, at
/// widths that are not a multiple of a program's 256 columns where the
/// format allows it.
#[test]
fn every_format_looks_up_the_dequantized_rows() {
    for ty in FORMATS {
        let block = ty.info().block_len.max(1);
        for cols in [256usize, 640, 1024].into_iter().filter(|c| c % block == 0) {
            let rows = 7;
            let floats = values(u64::from(cols as u32) ^ ty as u64, rows * cols, 3.0);
            let mut data = Vec::new();
            crate::quant::quantize(ty, &floats, &mut data).unwrap();
            let table = QMatrixRef {
                ty,
                rows,
                cols,
                data: &data,
            };
            let tokens = [3u32, 0, 6, 3];
            let mut want = vec![0f32; tokens.len() * cols];
            for (&t, row) in tokens.iter().zip(want.chunks_mut(cols)) {
                let row_bytes = table.row_bytes().unwrap();
                let bytes = &data[t as usize * row_bytes..][..row_bytes];
                crate::quant::dequantize(ty, bytes, row).unwrap();
            }
            for body in [Body::Launch, Body::Generated] {
                let mut got = vec![f32::NAN; tokens.len() * cols];
                embed_rows_with(&table, &tokens, &mut got, body).unwrap();
                let same = got
                    .iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{ty:?} {cols} columns {body:?}");
            }
        }
    }
}

#[test]
fn an_id_outside_the_table_and_a_short_output_are_errors() {
    let data = vec![0u8; 2 * 34];
    let table = QMatrixRef {
        ty: GgmlType::Q8_0,
        rows: 2,
        cols: 32,
        data: &data,
    };
    let mut out = vec![0f32; 32];
    assert!(matches!(
        embed_rows(&table, &[2], &mut out),
        Err(EmbedError::Id { id: 2, rows: 2 })
    ));
    assert!(matches!(
        embed_rows(&table, &[0, 1], &mut out),
        Err(EmbedError::Output { .. })
    ));
}

/// The host body of a launch on an empty table gives the masked load's
/// zeros, never a panic (the launcher accepts `V = 0`).
#[test]
fn an_empty_table_looks_up_zeros_on_both_bodies() {
    let device = Device::host();
    let table = QTensor::<Q8_0>::borrowed(&[], [0, 32]).unwrap();
    let ids = device.tensor_from(&[0i32, 3], [2]).unwrap();
    for generated in [false, true] {
        let mut out: Tensor<f32> = device.tensor_from(&[1.0f32; 64], [2, 32]).unwrap();
        if generated {
            embed_q8_0::launch_generated(
                &device,
                &embed_q8_0::Config::default(),
                &ids,
                &table,
                &mut out,
            )
            .unwrap();
        } else {
            embed_q8_0::launch(&device, &ids, &table, &mut out).unwrap();
        }
        assert_eq!(
            out.to_vec().unwrap(),
            vec![0.0; 64],
            "generated: {generated}"
        );
    }
}
