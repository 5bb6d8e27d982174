//! The llama family (`llama`, `qwen2`, `qwen3`, `qwen3moe`, `minicpm`):
//! pre-norm blocks, GQA attention with RoPE, SwiGLU. The members differ:
//! llama and minicpm rotate adjacent pairs (ggml's normal RoPE) where Qwen
//! rotates halves (NeoX); qwen2 adds biases to Q, K and V; qwen3 and
//! qwen3moe RMS-normalise each query and key head before the rotation;
//! qwen3moe's feed-forward is a mixture of experts (`ops::moe`: softmax
//! router, top `expert_used_count` of `expert_count`, weights renormalised);
//! minicpm scales the embedding (`embedding_scale`, 12), each block's
//! output before the residual add (`residual_scale`, 1.4 / sqrt(layers))
//! and divides the logits by `logit_scale` (256 / d), and may carry an
//! attention output bias.
//!
//! Metadata (llama.cpp's defaults where absent): `{arch}.block_count`,
//! `embedding_length`, `feed_forward_length`, `attention.head_count`,
//! `attention.head_count_kv` (= heads; these three may be per-layer
//! arrays, read per layer), `attention.key_length` and
//! `value_length` (= d / heads), `attention.layer_norm_rms_epsilon`,
//! `rope.freq_base` (10000), `rope.dimension_count` (= head dim),
//! `rope.scaling.factor` (1), `context_length`; qwen3moe also
//! `expert_count`, `expert_used_count`, `expert_feed_forward_length`
//! (= feed_forward_length / used); minicpm the three scales above. The
//! output projection is
//! `output.weight`, or the embedding when absent (tied).

use super::attend::{SeqSlot, add_bias, add_in_place, attend};
use super::experts::MoeFfn;
use super::hparams::Meta;
use super::{Architecture, ModelShape};
use crate::engine::Result;
use crate::engine::weights::{
    Linear, load_qkv, load_qkv_biases, load_vector, load_vector_optional,
};
use crate::gguf::Gguf;
use crate::ops::attention::AttentionShape;
use crate::ops::embed::embed_rows;
use crate::ops::moe::Routing;
use crate::ops::rope::{Rope, RopeStyle};
use crate::ops::rows::rms_norm;
use crate::ops::rows::swiglu;

struct Layer {
    /// Query and key/value heads of this layer (per-layer metadata arrays).
    n_head: usize,
    n_head_kv: usize,
    attn_norm: Vec<f32>,
    q: Linear,
    k: Linear,
    v: Linear,
    q_bias: Option<Vec<f32>>,
    k_bias: Option<Vec<f32>>,
    v_bias: Option<Vec<f32>>,
    q_norm: Option<Vec<f32>>,
    k_norm: Option<Vec<f32>>,
    out: Linear,
    out_bias: Option<Vec<f32>>,
    ffn_norm: Vec<f32>,
    ffn: Ffn,
}

enum Ffn {
    Dense {
        gate: Linear,
        up: Linear,
        down: Linear,
    },
    Experts(MoeFfn),
}

/// minicpm's three scales (all 1 for the others).
#[derive(Debug, Clone, Copy)]
struct Scales {
    embedding: f32,
    residual: f32,
    /// The logits are multiplied by its inverse.
    logit: f32,
}

pub struct LlamaLike {
    shape: ModelShape,
    head_dim_k: usize,
    head_dim_v: usize,
    rms_eps: f32,
    rope: Rope,
    scales: Option<Scales>,
    token_embd: Linear,
    output_norm: Vec<f32>,
    output: Linear,
    layers: Vec<Layer>,
}

impl LlamaLike {
    pub(crate) fn load(gguf: &Gguf, arch: &str) -> Result<LlamaLike> {
        let meta = Meta { gguf, arch };
        let n_layer = meta.u32("block_count")? as usize;
        let n_embd = meta.u32("embedding_length")? as usize;
        meta.require("feed_forward_length")?;
        let n_ffs = meta.u32_per_layer("feed_forward_length", n_layer, 0)?;
        meta.require("attention.head_count")?;
        let n_heads = meta.u32_per_layer("attention.head_count", n_layer, 0)?;
        let n_heads_kv = meta.u32_per_layer_or("attention.head_count_kv", &n_heads)?;
        // llama.cpp sizes the default head from layer 0's head count.
        let default_head = n_embd as u32 / n_heads.first().copied().unwrap_or(1).max(1);
        let head_dim_k = meta.u32_or("attention.key_length", default_head)? as usize;
        let head_dim_v = meta.u32_or("attention.value_length", default_head)? as usize;
        let rms_eps = meta.f32("attention.layer_norm_rms_epsilon")?;
        let scale = meta.f32_or("rope.scaling.factor", 0.0)?;
        let rope = Rope {
            style: if arch == "llama" || arch == "minicpm" {
                RopeStyle::Normal
            } else {
                RopeStyle::Neox
            },
            n_rot: meta.u32_or("rope.dimension_count", head_dim_k as u32)? as usize,
            freq_base: meta.f32_or("rope.freq_base", 10_000.0)?,
            freq_scale: if scale == 0.0 { 1.0 } else { 1.0 / scale },
        };
        let n_vocab = super::n_vocab(gguf)?;
        let token_embd = Linear::load(gguf, "token_embd.weight", n_embd, n_vocab)?;
        let output = Linear::load_optional(gguf, "output.weight", n_embd, n_vocab)?
            .unwrap_or_else(|| token_embd.clone());
        let qk_norms = arch == "qwen3" || arch == "qwen3moe";
        let experts = if arch == "qwen3moe" {
            let n_expert = meta.u32("expert_count")? as usize;
            let n_used = meta.u32("expert_used_count")? as usize;
            if n_expert == 0 || n_used == 0 || n_used > n_expert {
                return Err(crate::engine::EngineError::Metadata {
                    key: format!("{arch}.expert_used_count"),
                    reason: format!("{n_used} experts used of {n_expert}: need 0 < used <= count"),
                });
            }
            let n_ff_exp = meta.u32_or(
                "expert_feed_forward_length",
                n_ffs.first().copied().unwrap_or(0) / n_used as u32,
            )? as usize;
            let routing = Routing {
                n_expert_used: n_used,
                normalize: true,
                scale: 1.0,
            };
            Some((n_expert, n_ff_exp, routing))
        } else {
            None
        };
        let scales = if arch == "minicpm" {
            Some(Scales {
                embedding: meta.f32_or("embedding_scale", 12.0)?,
                residual: meta.f32_or("residual_scale", 1.4 / (n_layer as f32).sqrt())?,
                logit: meta.f32_or(
                    "logit_scale",
                    if n_embd == 0 {
                        1.0
                    } else {
                        256.0 / n_embd as f32
                    },
                )?,
            })
        } else {
            None
        };
        let layers = (0..n_layer)
            .map(|il| {
                let (n_head, n_head_kv, n_ff) = (
                    n_heads[il] as usize,
                    n_heads_kv[il] as usize,
                    n_ffs[il] as usize,
                );
                let (q_width, k_width, v_width) = (
                    n_head * head_dim_k,
                    n_head_kv * head_dim_k,
                    n_head_kv * head_dim_v,
                );
                let name = |t: &str| format!("blk.{il}.{t}.weight");
                let bias =
                    |t: &str, len| load_vector_optional(gguf, &format!("blk.{il}.{t}.bias"), len);
                let head_norm = |t: &str| -> Result<Option<Vec<f32>>> {
                    if qk_norms {
                        load_vector(gguf, &name(t), head_dim_k).map(Some)
                    } else {
                        Ok(None)
                    }
                };
                let widths = [q_width, k_width, v_width];
                let [q, k, v] = load_qkv(gguf, il, n_embd, widths)?;
                let [q_bias, k_bias, v_bias] = load_qkv_biases(gguf, il, widths)?;
                Ok(Layer {
                    n_head,
                    n_head_kv,
                    attn_norm: load_vector(gguf, &name("attn_norm"), n_embd)?,
                    q,
                    k,
                    v,
                    q_bias,
                    k_bias,
                    v_bias,
                    q_norm: head_norm("attn_q_norm")?,
                    k_norm: head_norm("attn_k_norm")?,
                    out: Linear::load(gguf, &name("attn_output"), n_head * head_dim_v, n_embd)?,
                    out_bias: if scales.is_some() {
                        bias("attn_output", n_embd)?
                    } else {
                        None
                    },
                    ffn_norm: load_vector(gguf, &name("ffn_norm"), n_embd)?,
                    ffn: match experts {
                        Some((n_expert, n_ff_exp, routing)) => Ffn::Experts(MoeFfn::load(
                            gguf, il, n_embd, n_ff_exp, n_expert, routing,
                        )?),
                        None => Ffn::Dense {
                            gate: Linear::load(gguf, &name("ffn_gate"), n_embd, n_ff)?,
                            up: Linear::load(gguf, &name("ffn_up"), n_embd, n_ff)?,
                            down: Linear::load(gguf, &name("ffn_down"), n_ff, n_embd)?,
                        },
                    },
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let shape = ModelShape {
            arch: arch.to_owned(),
            n_layer,
            n_embd,
            n_vocab,
            n_ctx_train: meta.u32_or("context_length", 0)? as usize,
            kv_widths: layers
                .iter()
                .map(|l| (l.n_head_kv * head_dim_k, l.n_head_kv * head_dim_v))
                .collect(),
            recurrent_state_lens: vec![(0, 0); n_layer],
        };
        Ok(LlamaLike {
            shape,
            head_dim_k,
            head_dim_v,
            rms_eps,
            rope,
            scales,
            token_embd,
            output_norm: load_vector(gguf, "output_norm.weight", n_embd)?,
            output,
            layers,
        })
    }
}

impl LlamaLike {
    /// `x += block_out`, the block's output first scaled for minicpm.
    fn add_residual(&self, x: &mut [f32], block_out: &mut [f32]) -> Result<()> {
        if let Some(scales) = self.scales {
            block_out.iter_mut().for_each(|v| *v *= scales.residual);
        }
        add_in_place(x, block_out)?;
        Ok(())
    }
}

impl Architecture for LlamaLike {
    fn shape(&self) -> &ModelShape {
        &self.shape
    }

    fn embed(&self, gguf: &Gguf, tokens: &[u32], out: &mut [f32]) -> Result<()> {
        embed_rows(&self.token_embd.view(gguf), tokens, out)?;
        if let Some(scales) = self.scales {
            out.iter_mut().for_each(|x| *x *= scales.embedding);
        }
        Ok(())
    }

    fn layer(
        &self,
        gguf: &Gguf,
        il: usize,
        x: &mut [f32],
        slots: &mut [SeqSlot<'_>],
    ) -> Result<()> {
        let layer = &self.layers[il];
        let m = x.len() / self.shape.n_embd;

        let mut h = x.to_vec();
        rms_norm(&mut h, &layer.attn_norm, self.rms_eps)?;
        let mut q = layer.q.apply(gguf, &h, m)?;
        let mut k = layer.k.apply(gguf, &h, m)?;
        let mut v = layer.v.apply(gguf, &h, m)?;
        for (t, b) in [
            (&mut q, &layer.q_bias),
            (&mut k, &layer.k_bias),
            (&mut v, &layer.v_bias),
        ] {
            if let Some(b) = b {
                add_bias(t, b)?;
            }
        }
        if let (Some(qn), Some(kn)) = (&layer.q_norm, &layer.k_norm) {
            rms_norm(&mut q, qn, self.rms_eps)?;
            rms_norm(&mut k, kn, self.rms_eps)?;
        }
        let shape = AttentionShape {
            n_head: layer.n_head,
            n_head_kv: layer.n_head_kv,
            head_dim_k: self.head_dim_k,
            head_dim_v: self.head_dim_v,
            window: None,
            softcap: None,
        };
        let q_scale = 1.0 / (self.head_dim_k as f32).sqrt();
        let attn = attend(il, &shape, &self.rope, q_scale, &mut q, &mut k, &v, slots)?;
        let mut attn_out = layer.out.apply(gguf, &attn, m)?;
        if let Some(b) = &layer.out_bias {
            add_bias(&mut attn_out, b)?;
        }
        self.add_residual(x, &mut attn_out)?;

        let mut h = x.to_vec();
        rms_norm(&mut h, &layer.ffn_norm, self.rms_eps)?;
        let mut ffn_out = match &layer.ffn {
            Ffn::Dense { gate, up, down } => {
                let mut g = gate.apply(gguf, &h, m)?;
                let u = up.apply(gguf, &h, m)?;
                swiglu(&mut g, &u)?;
                down.apply(gguf, &g, m)?
            }
            Ffn::Experts(moe) => moe.apply(gguf, &h, m)?,
        };
        self.add_residual(x, &mut ffn_out)?;
        Ok(())
    }

    fn logits(&self, gguf: &Gguf, x: &mut [f32], m: usize) -> Result<Vec<f32>> {
        rms_norm(x, &self.output_norm, self.rms_eps)?;
        let mut logits = self.output.apply(gguf, x, m)?;
        if let Some(scales) = self.scales {
            let inv = 1.0 / scales.logit;
            logits.iter_mut().for_each(|l| *l *= inv);
        }
        Ok(logits)
    }
}
