//! Gemma 3 (`gemma3`): pre- and post-norms around both blocks, Q/K RMSNorm,
//! NeoX RoPE with a local and a global base, sliding-window attention on
//! five of every six layers, GeGLU, tied embeddings scaled by sqrt(d).
//!
//! Metadata (llama.cpp's defaults where absent): `gemma3.block_count`,
//! `embedding_length`, `feed_forward_length`, `attention.head_count`,
//! `attention.head_count_kv` (= heads), `attention.key_length` and
//! `value_length` (= d / heads), `attention.layer_norm_rms_epsilon`,
//! `rope.freq_base` (10000), `rope.freq_base_swa` (10000),
//! `rope.scaling.factor` (1), `attention.sliding_window` (none),
//! `attention.sliding_window_pattern` (6: layer `il` is local when
//! `il % 6 < 5`; or an array of per-layer flags, set for local),
//! `final_logit_softcapping` (none), `context_length`. Head counts and
//! `feed_forward_length` may be per-layer arrays.
//! The GGUF norms already hold Gemma's `1 + w`.

use super::attend::{SeqSlot, add_in_place, attend};
use super::hparams::Meta;
use super::{Architecture, ModelShape};
use crate::engine::Result;
use crate::engine::weights::{Linear, load_qkv, load_vector};
use crate::gguf::Gguf;
use crate::ops::attention::AttentionShape;
use crate::ops::embed::embed_rows;
use crate::ops::rope::{Rope, RopeStyle};
use crate::ops::rows::geglu;
use crate::ops::rows::rms_norm;

struct Layer {
    n_head: usize,
    n_head_kv: usize,
    attn_norm: Vec<f32>,
    q: Linear,
    k: Linear,
    v: Linear,
    q_norm: Vec<f32>,
    k_norm: Vec<f32>,
    out: Linear,
    post_attn_norm: Vec<f32>,
    ffn_norm: Vec<f32>,
    gate: Linear,
    up: Linear,
    down: Linear,
    post_ffn_norm: Vec<f32>,
    /// Sliding-window (local) layer: its window and RoPE base.
    local: bool,
}

pub struct Gemma3 {
    shape: ModelShape,
    head_dim: usize,
    rms_eps: f32,
    rope_global: Rope,
    rope_local: Rope,
    window: Option<usize>,
    attn_scale: f32,
    softcap: Option<f32>,
    token_embd: Linear,
    output_norm: Vec<f32>,
    output: Linear,
    layers: Vec<Layer>,
}

impl Gemma3 {
    pub(crate) fn load(gguf: &Gguf) -> Result<Gemma3> {
        let meta = Meta {
            gguf,
            arch: "gemma3",
        };
        let n_layer = meta.u32("block_count")? as usize;
        let n_embd = meta.u32("embedding_length")? as usize;
        meta.require("feed_forward_length")?;
        let n_ffs = meta.u32_per_layer("feed_forward_length", n_layer, 0)?;
        meta.require("attention.head_count")?;
        let n_heads = meta.u32_per_layer("attention.head_count", n_layer, 0)?;
        let n_heads_kv = meta.u32_per_layer_or("attention.head_count_kv", &n_heads)?;
        // llama.cpp sizes the default head (and the 27B's query scale) from
        // layer 0's head count.
        let n_head0 = n_heads.first().copied().unwrap_or(1).max(1) as usize;
        let head_dim = meta.u32_or("attention.key_length", (n_embd / n_head0) as u32)? as usize;
        let rms_eps = meta.f32("attention.layer_norm_rms_epsilon")?;
        let scale = meta.f32_or("rope.scaling.factor", 0.0)?;
        let freq_scale = if scale == 0.0 { 1.0 } else { 1.0 / scale };
        let n_rot = meta.u32_or("rope.dimension_count", head_dim as u32)? as usize;
        let rope_global = Rope {
            style: RopeStyle::Neox,
            n_rot,
            freq_base: meta.f32_or("rope.freq_base", 10_000.0)?,
            freq_scale,
        };
        // llama.cpp gives local layers their own base and no scaling.
        let rope_local = Rope {
            freq_base: meta.f32_or("rope.freq_base_swa", 10_000.0)?,
            freq_scale: 1.0,
            ..rope_global
        };
        let window = match meta.u32_or("attention.sliding_window", 0)? {
            0 => None,
            w => Some(w as usize),
        };
        // The pattern is a per-layer array of flags (set: local), or a
        // period (layer `il` local when `il % period < period - 1`).
        let local_flags = meta.flag_per_layer("attention.sliding_window_pattern", n_layer)?;
        let pattern = match local_flags {
            Some(_) => 0,
            None => meta.u32_or("attention.sliding_window_pattern", 6)? as usize,
        };
        // Gemma 3 27B scales queries by d / heads, the others by the head dim.
        let attn_scale = if n_layer == 62 {
            1.0 / ((n_embd / n_head0) as f32).sqrt()
        } else {
            1.0 / (head_dim as f32).sqrt()
        };
        let softcap = Some(meta.f32_or("final_logit_softcapping", 0.0)?).filter(|&c| c != 0.0);
        let n_vocab = super::n_vocab(gguf)?;
        let token_embd = Linear::load(gguf, "token_embd.weight", n_embd, n_vocab)?;
        let output = Linear::load_optional(gguf, "output.weight", n_embd, n_vocab)?
            .unwrap_or_else(|| token_embd.clone());
        let layers = (0..n_layer)
            .map(|il| {
                let (n_head, n_head_kv, n_ff) = (
                    n_heads[il] as usize,
                    n_heads_kv[il] as usize,
                    n_ffs[il] as usize,
                );
                let (q_width, kv_width) = (n_head * head_dim, n_head_kv * head_dim);
                let name = |t: &str| format!("blk.{il}.{t}.weight");
                let local = match &local_flags {
                    Some(flags) => flags[il],
                    None => pattern == 0 || il % pattern < pattern - 1,
                };
                let [q, k, v] = load_qkv(gguf, il, n_embd, [q_width, kv_width, kv_width])?;
                Ok(Layer {
                    n_head,
                    n_head_kv,
                    attn_norm: load_vector(gguf, &name("attn_norm"), n_embd)?,
                    q,
                    k,
                    v,
                    q_norm: load_vector(gguf, &name("attn_q_norm"), head_dim)?,
                    k_norm: load_vector(gguf, &name("attn_k_norm"), head_dim)?,
                    out: Linear::load(gguf, &name("attn_output"), q_width, n_embd)?,
                    post_attn_norm: load_vector(gguf, &name("post_attention_norm"), n_embd)?,
                    ffn_norm: load_vector(gguf, &name("ffn_norm"), n_embd)?,
                    gate: Linear::load(gguf, &name("ffn_gate"), n_embd, n_ff)?,
                    up: Linear::load(gguf, &name("ffn_up"), n_embd, n_ff)?,
                    down: Linear::load(gguf, &name("ffn_down"), n_ff, n_embd)?,
                    post_ffn_norm: load_vector(gguf, &name("post_ffw_norm"), n_embd)?,
                    local: window.is_some() && local,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let shape = ModelShape {
            arch: "gemma3".into(),
            n_layer,
            n_embd,
            n_vocab,
            n_ctx_train: meta.u32_or("context_length", 0)? as usize,
            kv_widths: layers
                .iter()
                .map(|l| (l.n_head_kv * head_dim, l.n_head_kv * head_dim))
                .collect(),
            recurrent_state_lens: vec![(0, 0); n_layer],
        };
        Ok(Gemma3 {
            shape,
            head_dim,
            rms_eps,
            rope_global,
            rope_local,
            window,
            attn_scale,
            softcap,
            token_embd,
            output_norm: load_vector(gguf, "output_norm.weight", n_embd)?,
            output,
            layers,
        })
    }
}

impl Architecture for Gemma3 {
    fn shape(&self) -> &ModelShape {
        &self.shape
    }

    fn embed(&self, gguf: &Gguf, tokens: &[u32], out: &mut [f32]) -> Result<()> {
        let scale = (self.shape.n_embd as f32).sqrt();
        embed_rows(&self.token_embd.view(gguf), tokens, out)?;
        out.iter_mut().for_each(|x| *x *= scale);
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
        let d = self.shape.n_embd;
        let m = x.len() / d;

        // Attention block: pre-norm, projections, per-head Q/K norms.
        let mut h = x.to_vec();
        rms_norm(&mut h, &layer.attn_norm, self.rms_eps)?;
        let [mut q, mut k, v] = Linear::apply_all([&layer.q, &layer.k, &layer.v], gguf, &h, m)?;
        rms_norm(&mut q, &layer.q_norm, self.rms_eps)?;
        rms_norm(&mut k, &layer.k_norm, self.rms_eps)?;
        let (rope, window) = if layer.local {
            (&self.rope_local, self.window)
        } else {
            (&self.rope_global, None)
        };
        let shape = AttentionShape {
            n_head: layer.n_head,
            n_head_kv: layer.n_head_kv,
            head_dim_k: self.head_dim,
            head_dim_v: self.head_dim,
            window,
            softcap: None,
        };
        let attn = attend(il, &shape, rope, self.attn_scale, &mut q, &mut k, &v, slots)?;
        let mut attn_out = layer.out.apply(gguf, &attn, m)?;
        rms_norm(&mut attn_out, &layer.post_attn_norm, self.rms_eps)?;
        add_in_place(x, &attn_out)?;

        // Feed-forward block: pre-norm, GeGLU, post-norm, residual.
        let mut h = x.to_vec();
        rms_norm(&mut h, &layer.ffn_norm, self.rms_eps)?;
        let [mut gate, up] = Linear::apply_all([&layer.gate, &layer.up], gguf, &h, m)?;
        geglu(&mut gate, &up)?;
        let mut ffn_out = layer.down.apply(gguf, &gate, m)?;
        rms_norm(&mut ffn_out, &layer.post_ffn_norm, self.rms_eps)?;
        add_in_place(x, &ffn_out)?;
        Ok(())
    }

    fn logits(&self, gguf: &Gguf, x: &mut [f32], m: usize) -> Result<Vec<f32>> {
        rms_norm(x, &self.output_norm, self.rms_eps)?;
        let mut logits = self.output.apply(gguf, x, m)?;
        if let Some(cap) = self.softcap {
            logits.iter_mut().for_each(|l| *l = cap * (*l / cap).tanh());
        }
        Ok(logits)
    }
}
