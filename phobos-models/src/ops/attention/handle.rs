//! Attention as a Phobos kernel launched through its typed handle
//! (`attention.ph`), over the caller's buffers without copying them. On
//! the host the handle's body is [`super::attention`], the hand-written
//! flash kernel (`@host_impl`); `launch_generated` runs the kernel's own
//! code (compared in the tests), which is what the GPU runs.

use half::f16;
use phobos::{Device, Tensor};

use super::{AttentionError, AttentionShape, attention};
use crate::ops::rows::Body;

phobos::kernel_file!("src/ops/attention/attention.ph");

/// [`super::attention`] through the kernel handle: `q` is
/// `[n_tokens][n_head * head_dim_k]`, `out` `[n_tokens][n_head *
/// head_dim_v]`, the caches hold rows `0..pos0 + n_tokens` (more rows are
/// allowed and never read).
pub fn attention_launch(
    shape: &AttentionShape,
    q: &[f32],
    pos0: usize,
    k_cache: &[f16],
    v_cache: &[f16],
    out: &mut [f32],
) -> Result<(), AttentionError> {
    attention_launch_with(shape, q, pos0, k_cache, v_cache, out, Body::Launch)
}

/// [`attention_launch`] running `body`.
pub fn attention_launch_with(
    shape: &AttentionShape,
    q: &[f32],
    pos0: usize,
    k_cache: &[f16],
    v_cache: &[f16],
    out: &mut [f32],
    body: Body,
) -> Result<(), AttentionError> {
    let dims = Dims::of(shape, q, pos0, k_cache, v_cache, out)?;
    if dims.n_tokens == 0 {
        return Ok(());
    }
    let window = match shape.window {
        Some(w) => i32::try_from(w.max(1)).unwrap_or(i32::MAX),
        None => 0,
    };
    let softcap = shape.softcap.filter(|c| *c > 0.0).unwrap_or(0.0);
    let pos0 = i32::try_from(pos0).map_err(|_| AttentionError::Length {
        what: "the position",
        len: pos0,
        expected: "at most i32::MAX".into(),
    })?;
    let device = Device::host();
    let (q_shape, out_shape) = (
        [dims.n_tokens, shape.n_head, shape.head_dim_k],
        [dims.n_tokens, shape.n_head, shape.head_dim_v],
    );
    let k_shape = [dims.cache_rows, shape.n_head_kv, shape.head_dim_k];
    let v_shape = [dims.cache_rows, shape.n_head_kv, shape.head_dim_v];
    let k_cache = &k_cache[..k_shape.iter().product::<usize>()];
    let v_cache = &v_cache[..v_shape.iter().product::<usize>()];
    device
        .with_borrowed(q, q_shape, out, out_shape, |qt, ot| {
            device.with_borrowed_read(k_cache, k_shape, |kt| {
                device.with_borrowed_read(v_cache, v_shape, |vt| match body {
                    Body::Launch => {
                        attention::launch(&device, qt, kt, vt, ot, pos0, window, softcap)
                    }
                    Body::Generated => attention::launch_generated(
                        &device,
                        &attention::Config::default(),
                        qt,
                        kt,
                        vt,
                        ot,
                        pos0,
                        window,
                        softcap,
                    ),
                })
            })
        })
        .and_then(|r| r)
        .and_then(|r| r)
        .and_then(|r| r)
        .map_err(AttentionError::from)
}

/// The extents a call's buffers give, checked against `shape`.
struct Dims {
    n_tokens: usize,
    /// Whole cache rows both caches hold (at least `pos0 + n_tokens`).
    cache_rows: usize,
}

impl Dims {
    fn of(
        shape: &AttentionShape,
        q: &[f32],
        pos0: usize,
        k_cache: &[f16],
        v_cache: &[f16],
        out: &[f32],
    ) -> Result<Dims, AttentionError> {
        if shape.n_head_kv == 0 || !shape.n_head.is_multiple_of(shape.n_head_kv) {
            return Err(AttentionError::Heads {
                n_head: shape.n_head,
                n_head_kv: shape.n_head_kv,
            });
        }
        let q_row = shape.n_head * shape.head_dim_k;
        let out_row = shape.n_head * shape.head_dim_v;
        let (k_row, v_row) = (
            shape.n_head_kv * shape.head_dim_k,
            shape.n_head_kv * shape.head_dim_v,
        );
        if q_row == 0 || out_row == 0 || k_row == 0 || v_row == 0 {
            return Err(AttentionError::Length {
                what: "a head",
                len: 0,
                expected: "head dims and head counts of at least 1".into(),
            });
        }
        let n_tokens = q.len() / q_row;
        if q.len() != n_tokens * q_row {
            return Err(AttentionError::Length {
                what: "q",
                len: q.len(),
                expected: format!("whole rows of {q_row}"),
            });
        }
        if out.len() != n_tokens * out_row {
            return Err(AttentionError::Length {
                what: "out",
                len: out.len(),
                expected: format!("{n_tokens} rows of {out_row}"),
            });
        }
        let cache_rows = (k_cache.len() / k_row).min(v_cache.len() / v_row);
        let needed = pos0.saturating_add(n_tokens);
        if cache_rows < needed {
            return Err(AttentionError::Length {
                what: "the KV cache",
                len: cache_rows,
                expected: format!("at least {needed} rows"),
            });
        }
        Ok(Dims {
            n_tokens,
            cache_rows,
        })
    }
}

/// `attention`'s `@host_impl`: the engine's flash kernel on the tensors'
/// elements.
#[allow(clippy::too_many_arguments)]
fn attention_host(
    _device: &Device,
    q: &Tensor<f32>,
    k: &Tensor<f16>,
    v: &Tensor<f16>,
    o: &mut Tensor<f32>,
    pos0: i32,
    window: i32,
    softcap: f32,
) -> phobos::Result<()> {
    let (&[_, n_head, head_dim_k], &[_, n_head_kv, _], &[_, _, head_dim_v]) =
        (q.shape(), k.shape(), v.shape())
    else {
        return Err(host_error("q, k and v must be rank 3"));
    };
    let shape = AttentionShape {
        n_head,
        n_head_kv,
        head_dim_k,
        head_dim_v,
        window: usize::try_from(window).ok().filter(|w| *w > 0),
        softcap: (softcap > 0.0).then_some(softcap),
    };
    let pos0 = usize::try_from(pos0).map_err(|_| host_error("a negative position"))?;
    let ran = phobos::host::with_host_slice(q, |q| {
        phobos::host::with_host_slice(k, |k| {
            phobos::host::with_host_slice(v, |v| {
                phobos::host::with_host_slice_mut(o, |o| attention(&shape, q, pos0, k, v, o))
            })
        })
    })????;
    ran.map_err(|e| match e {
        AttentionError::Pool(e) => e,
        other => host_error(&other.to_string()),
    })
}

fn host_error(message: &str) -> phobos::Error {
    phobos::Error::Backend {
        backend: "host attention",
        message: message.to_string(),
    }
}

#[cfg(test)]
#[path = "handle_tests.rs"]
mod tests;
