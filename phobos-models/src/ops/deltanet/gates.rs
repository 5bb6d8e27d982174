//! The linear-attention mixer's elementwise steps launched as Phobos
//! kernels through their typed handles (`gates.ph`): the per-head gates
//! (`sigmoid`, `softplus`), the SiLU after the convolution, the L2 norm of
//! queries and keys and the output gate, in place on the engine's buffers
//! (`HostDevice::with_borrowed`, nothing copied). On the host each handle's
//! body is the hand-written op below (`@host_impl`), ggml's numerics; the
//! generated bodies are compared with them in `gates_tests.rs`.

use phobos::{Device, Tensor};

use super::l2_norm_rows;
use crate::ops::activation::silu;
use crate::ops::rows::{Body, RowOpError, check_lengths};

phobos::kernel_file!("src/ops/deltanet/gates.ph");

fn failed(op: &'static str) -> impl Fn(phobos::Error) -> RowOpError {
    move |source| RowOpError {
        op,
        source: Box::new(source),
    }
}

/// Each `width`-wide row of `x` divided by `sqrt(sum(row^2) + eps)`, in
/// place ([`l2_norm_rows`]'s numerics).
pub fn l2_norm(x: &mut [f32], width: usize, eps: f32) -> Result<(), RowOpError> {
    l2_norm_with(x, width, eps, Body::Launch)
}

/// [`l2_norm`] running `body`.
pub fn l2_norm_with(x: &mut [f32], width: usize, eps: f32, body: Body) -> Result<(), RowOpError> {
    if width == 0 || x.is_empty() {
        return Ok(());
    }
    let rows = x.len() / width;
    let device = Device::host();
    device
        .with_borrowed_write(x, [rows, width], |xt| match body {
            Body::Launch => l2_norm::launch(&device, xt, eps),
            Body::Generated => {
                l2_norm::launch_generated(&device, &l2_norm::Config::default(), xt, eps)
            }
        })
        .and_then(|launched| launched)
        .map_err(failed("l2_norm"))
}

/// `x = silu(x)`, in place.
pub fn silu_in_place(x: &mut [f32]) -> Result<(), RowOpError> {
    silu_in_place_with(x, Body::Launch)
}

/// [`silu_in_place`] running `body`.
pub fn silu_in_place_with(x: &mut [f32], body: Body) -> Result<(), RowOpError> {
    if x.is_empty() {
        return Ok(());
    }
    let device = Device::host();
    let n = x.len();
    device
        .with_borrowed_write(x, [n], |xt| match body {
            Body::Launch => silu_in_place::launch(&device, xt),
            Body::Generated => {
                silu_in_place::launch_generated(&device, &silu_in_place::Config::default(), xt)
            }
        })
        .and_then(|launched| launched)
        .map_err(failed("silu_in_place"))
}

/// `x *= silu(z)`, in place.
pub fn mul_silu(x: &mut [f32], z: &[f32]) -> Result<(), RowOpError> {
    mul_silu_with(x, z, Body::Launch)
}

/// [`mul_silu`] running `body`.
pub fn mul_silu_with(x: &mut [f32], z: &[f32], body: Body) -> Result<(), RowOpError> {
    if x.is_empty() && z.is_empty() {
        return Ok(());
    }
    let device = Device::host();
    let n = x.len();
    device
        .with_borrowed(z, [z.len()], x, [n], |zt, xt| match body {
            Body::Launch => mul_silu::launch(&device, xt, zt),
            Body::Generated => {
                mul_silu::launch_generated(&device, &mul_silu::Config::default(), xt, zt)
            }
        })
        .and_then(|launched| launched)
        .map_err(failed("mul_silu"))
}

/// The delta rule's per-head gates for every token, in place:
/// `beta = sigmoid(beta)` (write strength) and
/// `alpha = softplus(alpha + dt_bias) * a` (log decay), where `beta` and
/// `alpha` are `[tokens][heads]` and `dt_bias`, `a` one value per head.
pub fn deltanet_gates(
    beta: &mut [f32],
    alpha: &mut [f32],
    dt_bias: &[f32],
    a: &[f32],
) -> Result<(), RowOpError> {
    deltanet_gates_with(beta, alpha, dt_bias, a, Body::Launch)
}

/// [`deltanet_gates`] running `body`.
pub fn deltanet_gates_with(
    beta: &mut [f32],
    alpha: &mut [f32],
    dt_bias: &[f32],
    a: &[f32],
    body: Body,
) -> Result<(), RowOpError> {
    let heads = a.len();
    if heads == 0 || beta.is_empty() {
        return Ok(());
    }
    let tokens = beta.len() / heads;
    // The runtime checks each tensor against the shape it is given; these
    // make a short alpha or bias an error that names the buffer.
    check_lengths(&[
        ("deltanet_gates (beta)", beta.len(), tokens * heads),
        ("deltanet_gates (alpha)", alpha.len(), tokens * heads),
        ("deltanet_gates (dt_bias)", dt_bias.len(), heads),
    ])?;
    let device = Device::host();
    let gates = [tokens, heads];
    device
        .with_borrowed(dt_bias, [heads], beta, gates, |bias_t, beta_t| {
            device.with_borrowed_read(a, [heads], |a_t| {
                device.with_borrowed_write(alpha, gates, |g_t| match body {
                    Body::Launch => deltanet_gates::launch(&device, beta_t, g_t, bias_t, a_t),
                    Body::Generated => deltanet_gates::launch_generated(
                        &device,
                        &deltanet_gates::Config::default(),
                        beta_t,
                        g_t,
                        bias_t,
                        a_t,
                    ),
                })
            })
        })
        .and_then(|r| r)
        .and_then(|r| r)
        .and_then(|r| r)
        .map_err(failed("deltanet_gates"))
}

/// `1 / (1 + e^-x)` with libm's `exp`, as the engine has always computed
/// the write strength.
pub(crate) fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// ggml's softplus: `log(1 + exp(x))`, the identity above 20.
pub(crate) fn softplus(x: f32) -> f32 {
    if x > 20.0 { x } else { (1.0 + x.exp()).ln() }
}

/// `l2_norm`'s `@host_impl`: [`l2_norm_rows`] over the tensor's rows.
fn l2_norm_host(_device: &Device, x: &mut Tensor<f32>, eps: f32) -> phobos::Result<()> {
    let width = x.shape().get(1).copied().unwrap_or(0);
    phobos::host::with_host_slice_mut(x, |x| l2_norm_rows(x, width, eps))
}

/// `silu_in_place`'s `@host_impl`.
fn silu_in_place_host(_device: &Device, x: &mut Tensor<f32>) -> phobos::Result<()> {
    phobos::host::with_host_slice_mut(x, |x| x.iter_mut().for_each(|v| *v = silu(*v)))
}

/// `mul_silu`'s `@host_impl`.
fn mul_silu_host(_device: &Device, x: &mut Tensor<f32>, z: &Tensor<f32>) -> phobos::Result<()> {
    phobos::host::with_host_slice(z, |z| {
        phobos::host::with_host_slice_mut(x, |x| {
            for (o, &zv) in x.iter_mut().zip(z) {
                *o *= silu(zv);
            }
        })
    })?
}

/// `deltanet_gates`' `@host_impl`: [`sigmoid`] of each beta, and
/// [`softplus`] of each alpha plus its head's bias, times the head's `a`.
fn deltanet_gates_host(
    _device: &Device,
    beta: &mut Tensor<f32>,
    g: &mut Tensor<f32>,
    dt_bias: &Tensor<f32>,
    a: &Tensor<f32>,
) -> phobos::Result<()> {
    use phobos::host::{with_host_slice as read, with_host_slice_mut as write};
    write(beta, |beta| beta.iter_mut().for_each(|b| *b = sigmoid(*b)))?;
    read(dt_bias, |dt_bias| {
        read(a, |a| {
            write(g, |g| {
                for row in g.chunks_mut(a.len().max(1)) {
                    for ((x, &bias), &a) in row.iter_mut().zip(dt_bias).zip(a) {
                        *x = softplus(*x + bias) * a;
                    }
                }
            })
        })
    })??
}

#[cfg(test)]
#[path = "gates_tests.rs"]
mod tests;
