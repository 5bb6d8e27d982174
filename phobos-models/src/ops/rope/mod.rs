//! Rotary position embedding, in ggml's two layouts: `Normal` rotates
//! adjacent pairs `(2i, 2i+1)` (llama), `Neox` rotates `(i, i + n_rot/2)`
//! (Gemma, Qwen). Angle of pair `i` at position `p`:
//! `p * freq_scale * base^(-2i/n_rot)`.
//!
//! The rotation launches as a Phobos kernel (`rope.ph`, one per layout)
//! through its typed handle, in place on the engine's rows
//! (`with_borrowed`), the query scale fused in. On the host each handle's
//! body is [`rotate_rows`], the hand-written op (`@host_impl`). The angle
//! table is a kernel too (`rope_angles`), launched once per batch and
//! shared by its queries and keys.

use phobos::{Device, Tensor};

use super::rows::{Body, RowOpError};

phobos::kernel_file!("src/ops/rope/rope.ph");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    Normal,
    Neox,
}

#[derive(Debug, Clone, Copy)]
pub struct Rope {
    pub style: RopeStyle,
    /// Dimensions rotated at the start of each head (the rest pass through).
    pub n_rot: usize,
    pub freq_base: f32,
    pub freq_scale: f32,
}

impl Rope {
    /// Rotates every head of one token's row (`head_dim`-wide heads) at
    /// `pos` (the host op, no launch).
    pub fn apply(&self, row: &mut [f32], head_dim: usize, pos: usize) {
        rotate_rows(self.style, row, 1, head_dim, &self.angles(pos), 1.0);
    }

    /// `(cos, sin)` of each rotated pair's angle at `pos`, interleaved
    /// (`[n_rot / 2][2]`), shared by every head and by a token's queries
    /// and keys.
    pub fn angles(&self, pos: usize) -> Vec<f32> {
        self.angles_from(pos, 1)
    }

    /// [`Rope::angles`] of `n_tokens` consecutive positions from `pos0`
    /// (`[n_tokens][n_rot / 2][2]`), computed here (the host op).
    pub fn angles_from(&self, pos0: usize, n_tokens: usize) -> Vec<f32> {
        let half = self.n_rot / 2;
        let mut cos_sin = vec![0.0; n_tokens * half * 2];
        angles_into(
            &mut cos_sin,
            half,
            pos0,
            self.freq_scale,
            self.theta_scale(),
        );
        cos_sin
    }

    /// Each pair's angle is the previous one's times this.
    fn theta_scale(&self) -> f32 {
        self.freq_base.powf(-2.0 / self.n_rot as f32)
    }

    /// [`Rope::angles_from`] as a launch of the `rope_angles` kernel.
    pub fn angles_launch(&self, pos0: usize, n_tokens: usize) -> Result<Vec<f32>, RowOpError> {
        self.angles_with(pos0, n_tokens, Body::Launch)
    }

    /// [`Rope::angles_launch`] running `body`.
    pub fn angles_with(
        &self,
        pos0: usize,
        n_tokens: usize,
        body: Body,
    ) -> Result<Vec<f32>, RowOpError> {
        const OP: &str = "rope_angles";
        let fail = |source: phobos::Error| RowOpError {
            op: OP,
            source: Box::new(source),
        };
        let half = self.n_rot / 2;
        let mut cos_sin = vec![0.0; n_tokens * half * 2];
        if cos_sin.is_empty() {
            return Ok(cos_sin);
        }
        let last = pos0.checked_add(n_tokens);
        let pos0 = match (i32::try_from(pos0), last.map(i32::try_from)) {
            (Ok(pos0), Some(Ok(_))) => pos0,
            _ => {
                return Err(fail(phobos::Error::BadShape {
                    op: OP,
                    shape: vec![pos0, n_tokens],
                    expected: "positions below 2^31",
                }));
            }
        };
        let (freq_scale, theta_scale) = (self.freq_scale, self.theta_scale());
        let device = Device::host();
        device
            .with_borrowed_write(&mut cos_sin, [n_tokens, half, 2], |cs| match body {
                Body::Launch => rope_angles::launch(&device, cs, pos0, freq_scale, theta_scale),
                Body::Generated => rope_angles::launch_generated(
                    &device,
                    &rope_angles::Config::default(),
                    cs,
                    pos0,
                    freq_scale,
                    theta_scale,
                ),
            })
            .and_then(|launched| launched)
            .map_err(fail)?;
        Ok(cos_sin)
    }

    /// Rotates `x` (`[tokens][n_head * head_dim]`) with `cos_sin` (from
    /// [`Rope::angles_from`], one entry per token), then multiplies every
    /// element by `scale`: one kernel launch.
    pub fn rotate(
        &self,
        x: &mut [f32],
        head_dim: usize,
        cos_sin: &[f32],
        scale: f32,
    ) -> Result<(), RowOpError> {
        self.rotate_with(x, head_dim, cos_sin, scale, Body::Launch)
    }

    /// [`Rope::rotate`] running `body`.
    pub fn rotate_with(
        &self,
        x: &mut [f32],
        head_dim: usize,
        cos_sin: &[f32],
        scale: f32,
        body: Body,
    ) -> Result<(), RowOpError> {
        let op = match self.style {
            RopeStyle::Neox => "rope_neox",
            RopeStyle::Normal => "rope_normal",
        };
        let bad = |expected: &'static str| RowOpError {
            op,
            source: Box::new(phobos::Error::BadShape {
                op,
                shape: vec![x.len(), head_dim, self.n_rot],
                expected,
            }),
        };
        if head_dim == 0 || self.n_rot > head_dim || !self.n_rot.is_multiple_of(2) {
            return Err(bad("an even n_rot no wider than a nonzero head_dim"));
        }
        if self.style == RopeStyle::Normal && !head_dim.is_multiple_of(2) {
            return Err(bad("an even head_dim for adjacent pairs"));
        }
        let half = self.n_rot / 2;
        // Tokens from the angles: `x` must then hold whole heads for each.
        let n_tokens = if half == 0 {
            x.len() / head_dim
        } else {
            cos_sin.len() / (2 * half)
        };
        if n_tokens == 0 || x.is_empty() {
            return Ok(());
        }
        let n_head = x.len() / (n_tokens * head_dim);
        let cs_shape = [n_tokens, half, 2];
        let device = Device::host();
        let launched = match self.style {
            RopeStyle::Neox => device.with_borrowed(
                cos_sin,
                cs_shape,
                x,
                [n_tokens, n_head, head_dim],
                |cs, xt| match body {
                    Body::Launch => rope_neox::launch(&device, xt, cs, scale),
                    Body::Generated => rope_neox::launch_generated(
                        &device,
                        &rope_neox::Config::default(),
                        xt,
                        cs,
                        scale,
                    ),
                },
            ),
            RopeStyle::Normal => device.with_borrowed(
                cos_sin,
                cs_shape,
                x,
                [n_tokens, n_head, head_dim / 2, 2],
                |cs, xt| match body {
                    Body::Launch => rope_normal::launch(&device, xt, cs, scale),
                    Body::Generated => rope_normal::launch_generated(
                        &device,
                        &rope_normal::Config::default(),
                        xt,
                        cs,
                        scale,
                    ),
                },
            ),
        };
        launched
            .and_then(|launched| launched)
            .map_err(|source| RowOpError {
                op,
                source: Box::new(source),
            })
    }
}

/// The rotation on the host: `x` is `n_tokens` rows of `head_dim`-wide
/// heads, `cos_sin` `[n_tokens][half][2]`. Each rotated element is
/// `(x0 * c - x1 * s) * scale` (or `(x0 * s + x1 * c) * scale`), each
/// passed-through one `x * scale`: the kernels' statement, pair by pair.
/// A pair member past the head reads 0 and is not written, as the kernels'
/// masked loads and stores do (the launcher refuses such an `n_rot`).
pub fn rotate_rows(
    style: RopeStyle,
    x: &mut [f32],
    n_tokens: usize,
    head_dim: usize,
    cos_sin: &[f32],
    scale: f32,
) {
    if n_tokens == 0 || head_dim == 0 {
        return;
    }
    let half = cos_sin.len() / (2 * n_tokens);
    let row_width = x.len() / n_tokens;
    for (t, row) in x.chunks_mut(row_width.max(1)).take(n_tokens).enumerate() {
        let angles = &cos_sin[t * 2 * half..(t + 1) * 2 * half];
        for head in row.chunks_mut(head_dim) {
            for (i, cs) in angles.chunks_exact(2).enumerate() {
                let (c, s) = (cs[0], cs[1]);
                let (a, b) = match style {
                    RopeStyle::Normal => (2 * i, 2 * i + 1),
                    RopeStyle::Neox => (i, i + half),
                };
                let x0 = head.get(a).copied().unwrap_or(0.0);
                let x1 = head.get(b).copied().unwrap_or(0.0);
                if let Some(v) = head.get_mut(a) {
                    *v = (x0 * c - x1 * s) * scale;
                }
                if let Some(v) = head.get_mut(b) {
                    *v = (x0 * s + x1 * c) * scale;
                }
            }
            if scale != 1.0 {
                for v in head.iter_mut().skip(2 * half) {
                    *v *= scale;
                }
            }
        }
    }
}

fn rope_host(
    style: RopeStyle,
    x: &mut Tensor<f32>,
    cs: &Tensor<f32>,
    scale: f32,
) -> phobos::Result<()> {
    let n_tokens = x.shape().first().copied().unwrap_or(0);
    // Neox's head is `[D]`, Normal's `[DP, 2]`.
    let head_dim = x.shape().iter().skip(2).product::<usize>();
    phobos::host::with_host_slice(cs, |cs| {
        phobos::host::with_host_slice_mut(x, |x| {
            rotate_rows(style, x, n_tokens, head_dim, cs, scale)
        })
    })?
}

/// Fills `cos_sin` (`[tokens][half][2]`) with each pair's `(cos, sin)`,
/// token `t` at position `pos0 + t`: ggml's order, the angle scaled by one
/// f32 multiply per pair, so pair i's angle carries i roundings.
fn angles_into(cos_sin: &mut [f32], half: usize, pos0: usize, freq_scale: f32, theta_scale: f32) {
    if half == 0 {
        return;
    }
    for (t, row) in cos_sin.chunks_exact_mut(2 * half).enumerate() {
        let mut theta = (pos0 + t) as f32 * freq_scale;
        for cs in row.chunks_exact_mut(2) {
            cs[0] = theta.cos();
            cs[1] = theta.sin();
            theta *= theta_scale;
        }
    }
}

/// `rope_angles`'s `@host_impl`.
fn rope_angles_host(
    _device: &Device,
    cs: &mut Tensor<f32>,
    pos0: i32,
    freq_scale: f32,
    theta_scale: f32,
) -> phobos::Result<()> {
    let half = cs.shape().get(1).copied().unwrap_or(0);
    // The launcher passes positions checked non-negative.
    let pos0 = usize::try_from(pos0).unwrap_or(0);
    phobos::host::with_host_slice_mut(cs, |cs| {
        angles_into(cs, half, pos0, freq_scale, theta_scale)
    })
}

/// `rope_neox`'s `@host_impl`.
fn rope_neox_host(
    _device: &Device,
    x: &mut Tensor<f32>,
    cs: &Tensor<f32>,
    scale: f32,
) -> phobos::Result<()> {
    rope_host(RopeStyle::Neox, x, cs, scale)
}

/// `rope_normal`'s `@host_impl`.
fn rope_normal_host(
    _device: &Device,
    x: &mut Tensor<f32>,
    cs: &Tensor<f32>,
    scale: f32,
) -> phobos::Result<()> {
    rope_host(RopeStyle::Normal, x, cs, scale)
}

#[cfg(test)]
mod tests;
