//! The short causal convolution as a Phobos kernel launched through its
//! typed handle (`conv.ph`), over the caller's buffers without copying
//! them. On the host the handle's body is [`super::causal_conv1d`]
//! (`@host_impl`); `launch_generated` runs the kernel's own code (equal bit
//! for bit, compared in the tests), which is what the GPU runs.

use phobos::{Device, Tensor};

use super::{causal_conv1d, conv_state_len};
use crate::ops::rows::{Body, RowOpError, check_lengths};

phobos::kernel_file!("src/ops/conv/conv.ph");

/// [`super::causal_conv1d`] through the kernel handle, with the same
/// buffers; a buffer of the wrong length is an error naming it.
pub fn causal_conv1d_launch(
    state: &mut [f32],
    x: &[f32],
    weights: &[f32],
    kernel: usize,
    out: &mut [f32],
    body: Body,
) -> Result<(), RowOpError> {
    let channels = weights.len().checked_div(kernel).unwrap_or(0);
    if channels == 0 {
        return Ok(());
    }
    let n_tokens = x.len() / channels;
    let history = kernel - 1;
    let lengths = [
        ("causal_conv1d (weights)", weights.len(), channels * kernel),
        ("causal_conv1d (x)", x.len(), n_tokens * channels),
        (
            "causal_conv1d (state)",
            state.len(),
            conv_state_len(channels, kernel),
        ),
        ("causal_conv1d (out)", out.len(), n_tokens * channels),
    ];
    check_lengths(&lengths)?;
    if n_tokens == 0 {
        return Ok(());
    }
    let device = Device::host();
    let rows = [n_tokens, channels];
    device
        .with_borrowed(x, rows, out, rows, |xt, ot| {
            device.with_borrowed_read(weights, [channels, kernel], |wt| {
                device.with_borrowed_write(state, [channels, history], |st| match body {
                    Body::Launch => causal_conv1d::launch(&device, xt, wt, st, ot),
                    Body::Generated => causal_conv1d::launch_generated(
                        &device,
                        &causal_conv1d::Config::default(),
                        xt,
                        wt,
                        st,
                        ot,
                    ),
                })
            })
        })
        .and_then(|r| r)
        .and_then(|r| r)
        .and_then(|r| r)
        .map_err(|source| RowOpError {
            op: "causal_conv1d",
            source: Box::new(source),
        })
}

/// `causal_conv1d`'s `@host_impl`: the engine's convolution on the
/// tensors' elements.
fn causal_conv1d_host(
    _device: &Device,
    x: &Tensor<f32>,
    w: &Tensor<f32>,
    state: &mut Tensor<f32>,
    out: &mut Tensor<f32>,
) -> phobos::Result<()> {
    let kernel = w.shape().get(1).copied().unwrap_or(0);
    use phobos::host::{with_host_slice as read, with_host_slice_mut as write};
    read(x, |x| {
        read(w, |w| {
            write(state, |state| {
                write(out, |out| causal_conv1d(state, x, w, kernel, out))
            })
        })
    })???
}

#[cfg(test)]
#[path = "handle_tests.rs"]
mod tests;
