//! Little-endian field reads inside a block whose length the caller has
//! already checked.

use half::f16;

pub(super) fn f16_at(block: &[u8], offset: usize) -> f32 {
    f16::from_le_bytes([block[offset], block[offset + 1]]).to_f32()
}

pub(super) fn u16_at(block: &[u8], offset: usize) -> u16 {
    u16::from_le_bytes([block[offset], block[offset + 1]])
}

pub(super) fn u32_at(block: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes([
        block[offset],
        block[offset + 1],
        block[offset + 2],
        block[offset + 3],
    ])
}

pub(super) fn f32_at(block: &[u8], offset: usize) -> f32 {
    f32::from_bits(u32_at(block, offset))
}

pub(super) fn put_f16(out: &mut Vec<u8>, value: f32) {
    out.extend_from_slice(&f16::from_f32(value).to_le_bytes());
}
