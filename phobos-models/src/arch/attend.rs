//! The attention step every architecture shares: rotate the new queries
//! and keys, append keys and values to each sequence's cache, attend.

use half::f16;
use half::slice::HalfFloatSliceExt;

use crate::engine::{Result, Session};
use crate::ops::attention::{AttentionShape, attention_launch};
use crate::ops::rope::Rope;
use crate::ops::rows::{self, RowOpError};

/// One sequence's rows in a batch: rows `row0..row0 + n_tokens` of the
/// batch's activations are its new tokens at positions `pos0..`.
pub(crate) struct SeqSlot<'s> {
    pub row0: usize,
    pub n_tokens: usize,
    pub pos0: usize,
    pub session: &'s mut Session,
}

/// `q`, `k`, `v` are the batch's projected rows (`[rows][n_head * hd]`,
/// `[rows][n_head_kv * hd]`); returns `[rows][n_head * head_dim_v]`.
/// Queries are multiplied by `q_scale` after the rotation.
#[allow(clippy::too_many_arguments)]
pub(crate) fn attend(
    layer: usize,
    shape: &AttentionShape,
    rope: &Rope,
    q_scale: f32,
    q: &mut [f32],
    k: &mut [f32],
    v: &[f32],
    slots: &mut [SeqSlot<'_>],
) -> Result<Vec<f32>> {
    let q_width = shape.n_head * shape.head_dim_k;
    let k_width = shape.n_head_kv * shape.head_dim_k;
    let v_width = shape.n_head_kv * shape.head_dim_v;
    let out_width = shape.n_head * shape.head_dim_v;
    let n_rows = q.len() / q_width.max(1);
    let mut out = vec![0f32; n_rows * out_width];
    for slot in slots.iter_mut() {
        let rows = slot.row0..slot.row0 + slot.n_tokens;
        // One launch each for the slot's queries (scaled) and keys, on the
        // same angles.
        let angles = rope.angles_launch(slot.pos0, slot.n_tokens)?;
        rope.rotate(
            &mut q[rows.start * q_width..rows.end * q_width],
            shape.head_dim_k,
            &angles,
            q_scale,
        )?;
        rope.rotate(
            &mut k[rows.start * k_width..rows.end * k_width],
            shape.head_dim_k,
            &angles,
            1.0,
        )?;
        let cache = &mut slot.session.kv[layer];
        cache.k_width = k_width;
        cache.v_width = v_width;
        cache.truncate(slot.pos0);
        let n_ctx = slot.session.n_ctx;
        append_f16(
            &mut cache.k,
            &k[rows.start * k_width..rows.end * k_width],
            n_ctx * k_width,
        );
        append_f16(
            &mut cache.v,
            &v[rows.start * v_width..rows.end * v_width],
            n_ctx * v_width,
        );
        attention_launch(
            shape,
            &q[rows.start * q_width..rows.end * q_width],
            slot.pos0,
            &cache.k,
            &cache.v,
            &mut out[rows.start * out_width..rows.end * out_width],
        )?;
    }
    Ok(out)
}

/// Rounds `rows` to f16 onto the end of `cache` (in bulk: F16C where the
/// CPU has it). The cache grows by doubling, as a `Vec` does, but never
/// past `max_len` (the session's context): a full context holds no slack.
fn append_f16(cache: &mut Vec<f16>, rows: &[f32], max_len: usize) {
    let start = cache.len();
    let needed = start + rows.len();
    if needed > cache.capacity() {
        let grown = (2 * cache.capacity()).clamp(needed, max_len.max(needed));
        cache.reserve_exact(grown - start);
    }
    cache.resize(needed, f16::ZERO);
    cache[start..].convert_from_f32_slice(rows);
}

/// `a[i] += b[i]` (the residual add), as a kernel launch.
pub(crate) fn add_in_place(a: &mut [f32], b: &[f32]) -> Result<(), RowOpError> {
    rows::add(a, b)
}

/// Adds `bias` to every row of `x`, as a kernel launch.
pub(crate) fn add_bias(x: &mut [f32], bias: &[f32]) -> Result<(), RowOpError> {
    rows::add_bias(x, bias)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_grows_by_doubling_up_to_the_context_and_no_further() {
        let row = [0.5f32; 6];
        let max_len = 100 * row.len();
        let mut cache = Vec::new();
        let mut reallocations = 0;
        for _ in 0..100 {
            let before = cache.capacity();
            append_f16(&mut cache, &row, max_len);
            reallocations += usize::from(cache.capacity() != before);
            assert!(cache.capacity() <= max_len, "{}", cache.capacity());
        }
        assert_eq!(cache.len(), max_len);
        assert_eq!(cache.capacity(), max_len);
        assert!(reallocations <= 9, "{reallocations} reallocations");
        assert!(cache.iter().all(|&x| x == f16::from_f32(0.5)));
        // A batch larger than the context left (a caller's bug elsewhere)
        // still fits.
        append_f16(&mut cache, &row, max_len);
        assert_eq!(cache.len(), max_len + row.len());
    }
}
