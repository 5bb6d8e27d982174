//! The weight-product kernels (`qmatmul.ph`, one per format with a kernel)
//! and [`launch`], which runs the one for a weight's format through its
//! typed handle. On the host the handle runs the hand-written
//! `phobos_rt::host::qmatmul::qmatmul_host` (`@host_impl`); the generated
//! body is `launch_generated`, which the tests compare against it.

use phobos::quant::{Iq4Nl, Iq4Xs, Q2K, Q3K, Q4_0, Q4_1, Q4K, Q5_0, Q5_1, Q5K, Q6K, Q8_0};
use phobos::{Device, QTensor};
// The kernels' `@host_impl`: the generated modules call `super::qmatmul_host`.
use phobos::host::qmatmul::qmatmul_host;

use super::QMatrixRef;
use crate::quant::GgmlType;

phobos::kernel_file!("src/ops/matmul/qmatmul.ph");

/// Which body a launch runs on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// The handle's `launch`: the hand-written host path (unless
    /// `PHOBOS_HOST_IMPL=generated`).
    Launch,
    /// `launch_generated`: the kernel's generated body.
    Generated,
}

/// Runs the kernel for `w`'s format on `x` (`m_rows` rows of `w.cols`)
/// into `out` (`m_rows` rows of `w.rows`) through its typed handle; `false`
/// (nothing run) when the format has no kernel. The lengths are the
/// caller's to check.
///
/// Nothing is copied: the launch's `X` and `Y` are `x` and `out` themselves
/// (`HostDevice::with_borrowed`), so the hand-written body reads `x` and
/// writes `out` in place, and `out` needs no zeroing (every element is
/// stored).
pub fn launch(
    w: &QMatrixRef<'_>,
    x: &[f32],
    m_rows: usize,
    out: &mut [f32],
    body: Body,
) -> phobos::Result<bool> {
    macro_rules! run {
        ($kernel:ident, $format:ty) => {{
            let device = Device::host();
            let weights = QTensor::<$format>::borrowed(w.data, [w.rows, w.cols])?;
            device.with_borrowed(
                x,
                [m_rows, w.cols],
                out,
                [m_rows, w.rows],
                |xt, yt| match body {
                    Body::Launch => $kernel::launch(&device, xt, &weights, yt),
                    Body::Generated => $kernel::launch_generated(
                        &device,
                        &$kernel::Config::default(),
                        xt,
                        &weights,
                        yt,
                    ),
                },
            )??;
            Ok(true)
        }};
    }
    match w.ty {
        GgmlType::Q4_0 => run!(qmatmul_q4_0, Q4_0),
        GgmlType::Q4_1 => run!(qmatmul_q4_1, Q4_1),
        GgmlType::Q5_0 => run!(qmatmul_q5_0, Q5_0),
        GgmlType::Q5_1 => run!(qmatmul_q5_1, Q5_1),
        GgmlType::Q8_0 => run!(qmatmul_q8_0, Q8_0),
        GgmlType::IQ4_NL => run!(qmatmul_iq4_nl, Iq4Nl),
        GgmlType::Q2_K => run!(qmatmul_q2_k, Q2K),
        GgmlType::Q3_K => run!(qmatmul_q3_k, Q3K),
        GgmlType::Q4_K => run!(qmatmul_q4_k, Q4K),
        GgmlType::Q5_K => run!(qmatmul_q5_k, Q5K),
        GgmlType::Q6_K => run!(qmatmul_q6_k, Q6K),
        GgmlType::IQ4_XS => run!(qmatmul_iq4_xs, Iq4Xs),
        _ => Ok(false),
    }
}
