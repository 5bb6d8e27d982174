//! The gated delta rule as a Phobos kernel launched through its typed
//! handle (`deltanet.ph`), over the caller's buffers without copying
//! them. On the host the handle's body is [`super::gated_delta_rule`]
//! (`@host_impl`); `launch_generated` runs the kernel's own code (compared
//! in the tests), which is what the GPU runs.

use phobos::{Device, Tensor};

use super::{DeltaNetShape, gated_delta_rule};
use crate::ops::rows::{Body, RowOpError, check_lengths};

phobos::kernel_file!("src/ops/deltanet/deltanet.ph");

const OP: &str = "gated_delta_rule";

/// [`super::gated_delta_rule`] through the kernel handle, with the same
/// buffers; a buffer of the wrong length is an error naming it.
#[allow(clippy::too_many_arguments)]
pub fn gated_delta_rule_launch(
    shape: &DeltaNetShape,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    g: &[f32],
    beta: &[f32],
    state: &mut [f32],
    out: &mut [f32],
    body: Body,
) -> Result<(), RowOpError> {
    let d = shape.head_dim;
    let (n_k, n_v) = (shape.n_k_heads, shape.n_v_heads);
    if d == 0 || n_k == 0 || n_v == 0 {
        return Ok(());
    }
    let n_tokens = v.len() / (n_v * d);
    // Each buffer's length, named in the error as `op (buffer)`.
    let lengths = [
        ("gated_delta_rule (q)", q.len(), n_tokens * n_k * d),
        ("gated_delta_rule (k)", k.len(), n_tokens * n_k * d),
        ("gated_delta_rule (v)", v.len(), n_tokens * n_v * d),
        ("gated_delta_rule (g)", g.len(), n_tokens * n_v),
        ("gated_delta_rule (beta)", beta.len(), n_tokens * n_v),
        ("gated_delta_rule (state)", state.len(), shape.state_len()),
        ("gated_delta_rule (out)", out.len(), n_tokens * n_v * d),
    ];
    check_lengths(&lengths)?;
    if n_tokens == 0 {
        return Ok(());
    }
    let device = Device::host();
    let keys = [n_tokens, n_k, d];
    let values = [n_tokens, n_v, d];
    let gates = [n_tokens, n_v];
    device
        .with_borrowed(q, keys, out, values, |qt, ot| {
            device.with_borrowed_read(k, keys, |kt| {
                device.with_borrowed_read(v, values, |vt| {
                    device.with_borrowed_read(g, gates, |gt| {
                        device.with_borrowed_read(beta, gates, |bt| {
                            device.with_borrowed_write(state, [n_v, d, d], |st| match body {
                                Body::Launch => {
                                    gated_delta_rule::launch(&device, qt, kt, vt, gt, bt, st, ot)
                                }
                                Body::Generated => gated_delta_rule::launch_generated(
                                    &device,
                                    &gated_delta_rule::Config::default(),
                                    qt,
                                    kt,
                                    vt,
                                    gt,
                                    bt,
                                    st,
                                    ot,
                                ),
                            })
                        })
                    })
                })
            })
        })
        .and_then(|r| r)
        .and_then(|r| r)
        .and_then(|r| r)
        .and_then(|r| r)
        .and_then(|r| r)
        .and_then(|r| r)
        .map_err(|source| RowOpError {
            op: OP,
            source: Box::new(source),
        })
}

/// `gated_delta_rule`'s `@host_impl`: the engine's recurrence on the
/// tensors' elements.
#[allow(clippy::too_many_arguments)]
fn gated_delta_rule_host(
    _device: &Device,
    q: &Tensor<f32>,
    k: &Tensor<f32>,
    v: &Tensor<f32>,
    g: &Tensor<f32>,
    beta: &Tensor<f32>,
    state: &mut Tensor<f32>,
    out: &mut Tensor<f32>,
) -> phobos::Result<()> {
    let (&[_, n_k_heads, head_dim], &[_, n_v_heads, _]) = (q.shape(), v.shape()) else {
        return Err(phobos::Error::Backend {
            backend: "host gated_delta_rule",
            message: "q and v must be rank 3".into(),
        });
    };
    let shape = DeltaNetShape {
        n_k_heads,
        n_v_heads,
        head_dim,
    };
    use phobos::host::{with_host_slice as read, with_host_slice_mut as write};
    read(q, |q| {
        read(k, |k| {
            read(v, |v| {
                read(g, |g| {
                    read(beta, |beta| {
                        write(state, |state| {
                            write(out, |out| {
                                gated_delta_rule(&shape, q, k, v, g, beta, state, out)
                            })
                        })
                    })
                })
            })
        })
    })??????
}

#[cfg(test)]
#[path = "handle_tests.rs"]
mod tests;
