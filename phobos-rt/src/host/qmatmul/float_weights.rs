//! F32 / F16 / BF16 weights times f32 activations: eight f32 lanes, element
//! `k` into lane `k % 8` by FMA, then the AVX horizontal sum.

use half::{bf16, f16};
use phobos_quant::GgmlType;

use super::portable::hsum8;

/// Weight element `k` of a float row.
pub(super) fn weight_at(ty: GgmlType, row: &[u8], k: usize) -> f32 {
    match ty {
        GgmlType::F16 => f16::from_bits(u16::from_le_bytes([row[2 * k], row[2 * k + 1]])).to_f32(),
        GgmlType::BF16 => {
            bf16::from_bits(u16::from_le_bytes([row[2 * k], row[2 * k + 1]])).to_f32()
        }
        _ => f32::from_le_bytes([row[4 * k], row[4 * k + 1], row[4 * k + 2], row[4 * k + 3]]),
    }
}

pub(super) fn row_dot_float(ty: GgmlType, w_row: &[u8], x: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    for (k, &v) in x.iter().enumerate() {
        acc[k % 8] = weight_at(ty, w_row, k).mul_add(v, acc[k % 8]);
    }
    hsum8(acc)
}
