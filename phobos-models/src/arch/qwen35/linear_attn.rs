//! Qwen3.5's linear-attention mixer (llama.cpp's `build_layer_attn_linear`):
//!
//! 1. `attn_qkv` projects the normed input to the mixed Q|K|V channels and
//!    `attn_gate` to the output gate `z`; `ssm_beta` gives the write
//!    strength `sigmoid(.)` and `ssm_alpha` the log decay
//!    `softplus(. + ssm_dt.bias) * ssm_a` per value head;
//! 2. the mixed channels run through the short causal convolution
//!    (`ssm_conv1d`, with the session's conv state) and SiLU;
//! 3. Q and K (per key head) are L2-normalised, and the gated delta rule
//!    runs with the session's state;
//! 4. each value head's output is RMS-normed (`ssm_norm`), multiplied by
//!    `silu(z)` and projected back by `ssm_out`.

use crate::arch::attend::SeqSlot;
use crate::engine::weights::{Linear, load_vector};
use crate::engine::{EngineError, Result};
use crate::gguf::Gguf;
use crate::ops::conv::{causal_conv1d_launch, conv_state_len};
use crate::ops::deltanet::{
    DeltaNetShape, deltanet_gates, gated_delta_rule_launch, l2_norm, mul_silu, silu_in_place,
};
use crate::ops::rows::Body;
use crate::ops::rows::rms_norm;

/// The recurrence's sizes (`ssm.*` metadata).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeltaNetDims {
    /// Taps of the short convolution (`ssm.conv_kernel`).
    pub d_conv: usize,
    pub shape: DeltaNetShape,
}

impl DeltaNetDims {
    fn key_dim(&self) -> usize {
        self.shape.n_k_heads * self.shape.head_dim
    }

    fn value_dim(&self) -> usize {
        self.shape.n_v_heads * self.shape.head_dim
    }

    /// Channels of the convolution: Q, K and V side by side.
    pub fn conv_channels(&self) -> usize {
        2 * self.key_dim() + self.value_dim()
    }

    /// Floats of one sequence's state: (conv, delta rule).
    pub fn state_lens(&self) -> (usize, usize) {
        (
            conv_state_len(self.conv_channels(), self.d_conv),
            self.shape.state_len(),
        )
    }
}

pub(crate) struct LinearAttention {
    qkv: Linear,
    gate: Linear,
    beta: Linear,
    alpha: Linear,
    /// `[channels][d_conv]`.
    conv: Vec<f32>,
    dt_bias: Vec<f32>,
    /// `-exp(A_log)` per value head.
    a: Vec<f32>,
    norm: Vec<f32>,
    out: Linear,
}

/// A 2-D tensor of ggml dims `dims` read to f32 (the conv filters).
fn load_matrix_f32(gguf: &Gguf, name: &str, dims: [usize; 2]) -> Result<Vec<f32>> {
    let info = gguf
        .tensor_info(name)
        .ok_or_else(|| EngineError::MissingTensor {
            name: name.to_owned(),
        })?;
    let expected = dims.map(|d| d as u64);
    if info.dims != expected {
        return Err(EngineError::TensorShape {
            name: name.to_owned(),
            expected: expected.to_vec(),
            found: info.dims.clone(),
            ty: info.ty.name(),
        });
    }
    Ok(gguf.dequantize_tensor(name)?)
}

impl LinearAttention {
    pub fn load(gguf: &Gguf, il: usize, n_embd: usize, dims: &DeltaNetDims) -> Result<Self> {
        let name = |t: &str| format!("blk.{il}.{t}.weight");
        let n_v = dims.shape.n_v_heads;
        let channels = dims.conv_channels();
        Ok(LinearAttention {
            qkv: Linear::load(gguf, &name("attn_qkv"), n_embd, channels)?,
            gate: Linear::load(gguf, &name("attn_gate"), n_embd, dims.value_dim())?,
            beta: Linear::load(gguf, &name("ssm_beta"), n_embd, n_v)?,
            alpha: Linear::load(gguf, &name("ssm_alpha"), n_embd, n_v)?,
            conv: load_matrix_f32(gguf, &name("ssm_conv1d"), [dims.d_conv, channels])?,
            dt_bias: load_vector(gguf, &format!("blk.{il}.ssm_dt.bias"), n_v)?,
            a: load_vector(gguf, &format!("blk.{il}.ssm_a"), n_v)?,
            norm: load_vector(gguf, &name("ssm_norm"), dims.shape.head_dim)?,
            out: Linear::load(gguf, &name("ssm_out"), dims.value_dim(), n_embd)?,
        })
    }

    /// `h` is the normed input `[m][n_embd]`; returns the mixer's output
    /// `[m][n_embd]`, advancing each slot's state in layer `il`.
    #[allow(clippy::too_many_arguments)]
    pub fn apply(
        &self,
        gguf: &Gguf,
        il: usize,
        dims: &DeltaNetDims,
        rms_eps: f32,
        h: &[f32],
        m: usize,
        slots: &mut [SeqSlot<'_>],
    ) -> Result<Vec<f32>> {
        let [mixed, z] = Linear::apply_all([&self.qkv, &self.gate], gguf, h, m)?;
        let [mut beta, mut g] = Linear::apply_all([&self.beta, &self.alpha], gguf, h, m)?;
        let n_v = dims.shape.n_v_heads;
        // beta = sigmoid(beta), g = softplus(alpha + dt_bias) * a.
        deltanet_gates(&mut beta, &mut g, &self.dt_bias, &self.a)?;

        let channels = dims.conv_channels();
        let (key_dim, value_dim) = (dims.key_dim(), dims.value_dim());
        let d = dims.shape.head_dim;
        let mut core = vec![0f32; m * value_dim];
        for slot in slots.iter_mut() {
            let rows = slot.row0..slot.row0 + slot.n_tokens;
            let n = slot.n_tokens;
            let state = &mut slot.session.recurrent[il];
            let mut conv_out = vec![0f32; n * channels];
            causal_conv1d_launch(
                &mut state.conv,
                &mixed[rows.start * channels..rows.end * channels],
                &self.conv,
                dims.d_conv,
                &mut conv_out,
                Body::Launch,
            )?;
            silu_in_place(&mut conv_out)?;
            // Split the channels into Q, K, V runs per token.
            let mut q = Vec::with_capacity(n * key_dim);
            let mut k = Vec::with_capacity(n * key_dim);
            let mut v = Vec::with_capacity(n * value_dim);
            for row in conv_out.chunks(channels) {
                q.extend_from_slice(&row[..key_dim]);
                k.extend_from_slice(&row[key_dim..2 * key_dim]);
                v.extend_from_slice(&row[2 * key_dim..]);
            }
            l2_norm(&mut q, d, rms_eps)?;
            l2_norm(&mut k, d, rms_eps)?;
            gated_delta_rule_launch(
                &dims.shape,
                &q,
                &k,
                &v,
                &g[rows.start * n_v..rows.end * n_v],
                &beta[rows.start * n_v..rows.end * n_v],
                &mut state.ssm,
                &mut core[rows.start * value_dim..rows.end * value_dim],
                Body::Launch,
            )?;
        }
        // Gated norm per value head: rms_norm(o) * silu(z).
        rms_norm(&mut core, &self.norm, rms_eps)?;
        mul_silu(&mut core, &z)?;
        self.out.apply(gguf, &core, m)
    }
}
