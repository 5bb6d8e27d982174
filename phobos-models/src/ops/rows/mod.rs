//! The engine's row-wise ops launched as Phobos kernels through their typed
//! handles (`rows.ph`): RMSNorm, GeGLU, SwiGLU, residual and bias adds and
//! the router's softmax, in place on the engine's buffers (`HostDevice::with_borrowed`, nothing copied). On the host each
//! handle's body is the hand-written op of `ops::norm` / `ops::activation`
//! / `ops::softmax` (`@host_impl`); the generated bodies are compared with them in the tests.

use phobos::quant::Q8_0;
use phobos::{Device, QTensor, Tensor};

use super::activation::{geglu_in_place, swiglu_in_place};
use super::norm::rms_norm_rows;
use super::softmax::softmax_in_place;

phobos::kernel_file!("src/ops/rows/rows.ph");

/// A launch that failed: which op, and the runtime's reason (a shape the
/// kernel refuses, such as a buffer that is not whole rows).
#[derive(Debug, thiserror::Error)]
#[error("{op}: {source}")]
pub struct RowOpError {
    pub op: &'static str,
    #[source]
    pub source: Box<phobos::Error>,
}

fn failed(op: &'static str) -> impl Fn(phobos::Error) -> RowOpError {
    move |source| RowOpError {
        op,
        source: Box::new(source),
    }
}

/// The first of `lengths` (`(op (buffer), length, expected)`) that is
/// wrong, as a `LenMismatch` naming the op and buffer.
pub(crate) fn check_lengths(lengths: &[(&'static str, usize, usize)]) -> Result<(), RowOpError> {
    match lengths.iter().find(|(_, len, want)| len != want) {
        Some(&(op, actual, expected)) => Err(RowOpError {
            op,
            source: Box::new(phobos::Error::LenMismatch {
                shape: vec![expected],
                expected,
                actual,
            }),
        }),
        None => Ok(()),
    }
}

/// Which body a launch runs on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// The handle's `launch`: the hand-written op.
    Launch,
    /// `launch_generated`: the kernel's generated body.
    Generated,
}

/// RMSNorm of each `w.len()`-wide row of `x`, in place.
pub fn rms_norm(x: &mut [f32], w: &[f32], eps: f32) -> Result<(), RowOpError> {
    rms_norm_with(x, w, eps, Body::Launch)
}

/// [`rms_norm`] running `body`.
pub fn rms_norm_with(x: &mut [f32], w: &[f32], eps: f32, body: Body) -> Result<(), RowOpError> {
    let width = w.len();
    if width == 0 || x.is_empty() {
        return Ok(());
    }
    let rows = x.len() / width;
    let device = Device::host();
    device
        .with_borrowed(w, [width], x, [rows, width], |wt, xt| match body {
            Body::Launch => rms_norm::launch(&device, xt, wt, eps),
            Body::Generated => {
                rms_norm::launch_generated(&device, &rms_norm::Config::default(), xt, wt, eps)
            }
        })
        .and_then(|launched| launched)
        .map_err(failed("rms_norm"))
}

/// `gate = gelu(gate) * up` (ggml's f16-rounded GELU), in place.
pub fn geglu(gate: &mut [f32], up: &[f32]) -> Result<(), RowOpError> {
    gated_with(gate, up, Gate::Gelu, Body::Launch)
}

/// `gate = silu(gate) * up`, in place.
pub fn swiglu(gate: &mut [f32], up: &[f32]) -> Result<(), RowOpError> {
    gated_with(gate, up, Gate::Silu, Body::Launch)
}

/// The activation of a gated feed-forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    Gelu,
    Silu,
}

/// [`geglu`] or [`swiglu`] running `body`.
pub fn gated_with(gate: &mut [f32], up: &[f32], act: Gate, body: Body) -> Result<(), RowOpError> {
    let op = match act {
        Gate::Gelu => "geglu",
        Gate::Silu => "swiglu",
    };
    if gate.is_empty() && up.is_empty() {
        return Ok(());
    }
    let n = gate.len();
    let device = Device::host();
    device
        .with_borrowed(up, [up.len()], gate, [n], |ut, gt| match (act, body) {
            (Gate::Gelu, Body::Launch) => geglu::launch(&device, gt, ut),
            (Gate::Gelu, Body::Generated) => {
                geglu::launch_generated(&device, &geglu::Config::default(), gt, ut)
            }
            (Gate::Silu, Body::Launch) => swiglu::launch(&device, gt, ut),
            (Gate::Silu, Body::Generated) => {
                swiglu::launch_generated(&device, &swiglu::Config::default(), gt, ut)
            }
        })
        .and_then(|launched| launched)
        .map_err(failed(op))
}

/// `x += y`, in place (a residual add).
pub fn add(x: &mut [f32], y: &[f32]) -> Result<(), RowOpError> {
    add_with(x, y, Body::Launch)
}

/// [`add`] running `body`.
pub fn add_with(x: &mut [f32], y: &[f32], body: Body) -> Result<(), RowOpError> {
    if x.is_empty() && y.is_empty() {
        return Ok(());
    }
    let device = Device::host();
    let n = x.len();
    device
        .with_borrowed(y, [y.len()], x, [n], |yt, xt| match body {
            Body::Launch => add::launch(&device, xt, yt),
            Body::Generated => add::launch_generated(&device, &add::Config::default(), xt, yt),
        })
        .and_then(|launched| launched)
        .map_err(failed("add"))
}

/// `bias` added to every `bias.len()`-wide row of `x`, in place.
pub fn add_bias(x: &mut [f32], bias: &[f32]) -> Result<(), RowOpError> {
    add_bias_with(x, bias, Body::Launch)
}

/// [`add_bias`] running `body`.
pub fn add_bias_with(x: &mut [f32], bias: &[f32], body: Body) -> Result<(), RowOpError> {
    let width = bias.len();
    if width == 0 || x.is_empty() {
        return Ok(());
    }
    let rows = x.len() / width;
    let device = Device::host();
    device
        .with_borrowed(bias, [width], x, [rows, width], |bt, xt| match body {
            Body::Launch => add_bias::launch(&device, xt, bt),
            Body::Generated => {
                add_bias::launch_generated(&device, &add_bias::Config::default(), xt, bt)
            }
        })
        .and_then(|launched| launched)
        .map_err(failed("add_bias"))
}

/// Softmax of each `width`-wide row of `x`, in place; a row that is all
/// -inf stays so.
pub fn softmax(x: &mut [f32], width: usize) -> Result<(), RowOpError> {
    softmax_with(x, width, Body::Launch)
}

/// [`softmax`] running `body`.
pub fn softmax_with(x: &mut [f32], width: usize, body: Body) -> Result<(), RowOpError> {
    if width == 0 || x.is_empty() {
        return Ok(());
    }
    let rows = x.len() / width;
    let device = Device::host();
    device
        .with_borrowed_write(x, [rows, width], |xt| match body {
            Body::Launch => softmax::launch(&device, xt),
            Body::Generated => softmax::launch_generated(&device, &softmax::Config::default(), xt),
        })
        .and_then(|launched| launched)
        .map_err(failed("softmax"))
}

/// RMSNorm of each `w.len()`-wide row of `x` quantized to q8_0 blocks
/// (ggml's layout, rows back to back) in one kernel: the fusion of
/// [`rms_norm`] into the activation quantization of a q8_0-partnered
/// weight product. The row width must be whole blocks of 32.
pub fn rms_norm_q8_0_with(
    x: &[f32],
    w: &[f32],
    eps: f32,
    body: Body,
) -> Result<QTensor<'static, Q8_0>, RowOpError> {
    let fail = failed("rms_norm_q8_0");
    let width = w.len();
    let rows = x.len().checked_div(width).unwrap_or(0);
    let mut q = QTensor::<Q8_0>::zeroed([rows, width]).map_err(&fail)?;
    if rows == 0 {
        return Ok(q);
    }
    let device = Device::host();
    let xt = device.tensor_from(x, [rows, width]).map_err(&fail)?;
    let wt = device.tensor_from(w, [width]).map_err(&fail)?;
    match body {
        Body::Launch => rms_norm_q8_0::launch(&device, &xt, &wt, &mut q, eps),
        Body::Generated => rms_norm_q8_0::launch_generated(
            &device,
            &rms_norm_q8_0::Config::default(),
            &xt,
            &wt,
            &mut q,
            eps,
        ),
    }
    .map_err(&fail)?;
    Ok(q)
}

/// `add`'s `@host_impl`.
fn add_host(_device: &Device, x: &mut Tensor<f32>, y: &Tensor<f32>) -> phobos::Result<()> {
    phobos::host::with_host_slice(y, |y| {
        phobos::host::with_host_slice_mut(x, |x| {
            for (a, &b) in x.iter_mut().zip(y) {
                *a += b;
            }
        })
    })?
}

/// `add_bias`'s `@host_impl`.
fn add_bias_host(_device: &Device, x: &mut Tensor<f32>, b: &Tensor<f32>) -> phobos::Result<()> {
    phobos::host::with_host_slice(b, |b| {
        phobos::host::with_host_slice_mut(x, |x| {
            for row in x.chunks_mut(b.len().max(1)) {
                for (a, &v) in row.iter_mut().zip(b) {
                    *a += v;
                }
            }
        })
    })?
}

/// `rms_norm`'s `@host_impl`: the engine's RMSNorm (ggml's statement).
fn rms_norm_host(
    _device: &Device,
    x: &mut Tensor<f32>,
    w: &Tensor<f32>,
    eps: f32,
) -> phobos::Result<()> {
    phobos::host::with_host_slice(w, |w| {
        phobos::host::with_host_slice_mut(x, |x| rms_norm_rows(x, w, eps))
    })?
}

/// `geglu`'s `@host_impl`: ggml's f16-table GELU.
fn geglu_host(_device: &Device, g: &mut Tensor<f32>, u: &Tensor<f32>) -> phobos::Result<()> {
    phobos::host::with_host_slice(u, |u| {
        phobos::host::with_host_slice_mut(g, |g| geglu_in_place(g, u))
    })?
}

/// `swiglu`'s `@host_impl`.
fn swiglu_host(_device: &Device, g: &mut Tensor<f32>, u: &Tensor<f32>) -> phobos::Result<()> {
    phobos::host::with_host_slice(u, |u| {
        phobos::host::with_host_slice_mut(g, |g| swiglu_in_place(g, u))
    })?
}

#[cfg(test)]
mod tests;

/// `softmax`'s `@host_impl`: the engine's softmax, row by row.
fn softmax_host(_device: &Device, x: &mut Tensor<f32>) -> phobos::Result<()> {
    let width = x.shape().get(1).copied().unwrap_or(0);
    phobos::host::with_host_slice_mut(x, |x| {
        for row in x.chunks_mut(width.max(1)) {
            softmax_in_place(row);
        }
    })
}

/// `rms_norm_q8_0`'s `@host_impl`: the engine's RMSNorm of a copy of the
/// rows, then phobos-quant's q8_0 quantizer (ggml's reference rounding,
/// what the kernel's store does).
fn rms_norm_q8_0_host(
    _device: &Device,
    x: &Tensor<f32>,
    w: &Tensor<f32>,
    q: &mut QTensor<'_, Q8_0>,
    eps: f32,
) -> phobos::Result<()> {
    let mut rows = x.to_vec()?;
    phobos::host::with_host_slice(w, |w| rms_norm_rows(&mut rows, w, eps))?;
    let mut blocks = Vec::with_capacity(q.bytes().len());
    phobos_quant::quantize(phobos_quant::GgmlType::Q8_0, &rows, &mut blocks).map_err(|e| {
        phobos::Error::QuantShape {
            format: "q8_0",
            shape: x.shape().to_vec(),
            reason: e.to_string(),
        }
    })?;
    let out = q.bytes_mut();
    if blocks.len() == out.len() {
        out.copy_from_slice(&blocks);
    }
    Ok(())
}
