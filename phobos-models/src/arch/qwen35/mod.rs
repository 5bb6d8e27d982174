//! Qwen3.5 (`qwen35`, `qwen35moe`): a hybrid of linear-attention layers
//! (a gated delta rule over a short causal convolution, with per-session
//! recurrent state: [`linear_attn`]) and gated full-attention layers.
//!
//! Every block: `x += mixer(rms_norm(x, attn_norm))`, then
//! `x += ffn(rms_norm(x, post_attention_norm))`. The full-attention mixer
//! projects Q together with an output gate (per head: `head_dim` query
//! values, then `head_dim` gate values), RMS-normalises each query and key
//! head, rotates them with interleaved multi-section RoPE (for text all
//! sections carry the token's position, which makes it NeoX RoPE over
//! `rope.dimension_count` dims), attends over the KV cache, multiplies by
//! `sigmoid(gate)` and projects out. `qwen35` has a SwiGLU feed-forward;
//! `qwen35moe` routed SwiGLU experts (softmax router, top
//! `expert_used_count`, weights renormalised) plus a shared expert scaled
//! by `sigmoid(ffn_gate_inp_shexp . x)`.
//!
//! Which layers are linear attention: `attention.recurrent_layers` (a
//! per-layer flag array) when present, else every layer but each
//! `full_attention_interval`-th (default 4: layers 3, 7, ... attend).
//! Multi-token-prediction blocks (`nextn_predict_layers`, the last ones)
//! are not run.
//!
//! Metadata (llama.cpp's defaults where absent): `{arch}.block_count`,
//! `embedding_length`, `feed_forward_length`, `attention.head_count`,
//! `attention.head_count_kv` (= heads; all three may be per-layer arrays),
//! `attention.key_length` (= d / heads), `attention.layer_norm_rms_epsilon`,
//! `attention.scale` (1 / sqrt(head dim)), `rope.freq_base` (10000),
//! `rope.dimension_count` (= head dim), `rope.dimension_sections`,
//! `rope.scaling.factor` (1), `ssm.conv_kernel`, `ssm.inner_size`,
//! `ssm.state_size`, `ssm.group_count`, `ssm.time_step_rank`,
//! `context_length`; qwen35moe also `expert_count`, `expert_used_count`,
//! `expert_feed_forward_length` (= feed_forward_length / used) and
//! `expert_shared_feed_forward_length` (= feed_forward_length).

mod linear_attn;

use super::attend::{SeqSlot, add_in_place, attend};
use super::experts::MoeFfn;
use super::hparams::{Meta, uniform};
use super::{Architecture, ModelShape};
use crate::engine::weights::{Linear, load_qkv, load_vector};
use crate::engine::{EngineError, Result};
use crate::gguf::Gguf;
use crate::ops::attention::AttentionShape;
use crate::ops::deltanet::DeltaNetShape;
use crate::ops::embed::embed_rows;
use crate::ops::moe::Routing;
use crate::ops::rope::{Rope, RopeStyle};
use crate::ops::rows;
use crate::ops::rows::rms_norm;
use linear_attn::{DeltaNetDims, LinearAttention};

struct FullAttention {
    n_head: usize,
    n_head_kv: usize,
    /// Query and gate, interleaved per head.
    q_gate: Linear,
    k: Linear,
    v: Linear,
    q_norm: Vec<f32>,
    k_norm: Vec<f32>,
    out: Linear,
}

enum Mixer {
    Linear(LinearAttention),
    Full(FullAttention),
}

struct SharedExpert {
    /// The shared expert's scalar gate per token: `sigmoid(w . x)`.
    gate_inp: Vec<f32>,
    gate: Linear,
    up: Linear,
    down: Linear,
}

enum Ffn {
    Dense {
        gate: Linear,
        up: Linear,
        down: Linear,
    },
    Experts {
        moe: Box<MoeFfn>,
        shared: SharedExpert,
    },
}

struct Layer {
    attn_norm: Vec<f32>,
    mixer: Mixer,
    post_attention_norm: Vec<f32>,
    ffn: Ffn,
}

pub struct Qwen35 {
    shape: ModelShape,
    rms_eps: f32,
    head_dim: usize,
    attn_scale: f32,
    rope: Rope,
    deltanet: DeltaNetDims,
    token_embd: Linear,
    output_norm: Vec<f32>,
    output: Linear,
    layers: Vec<Layer>,
}

fn bad(key: String, reason: String) -> EngineError {
    EngineError::Metadata { key, reason }
}

/// Interleaved M-RoPE for text: pair `p` takes the position of section
/// `t`, `h` or `w` (all the token's position) unless ggml's interleaving
/// leaves it to the fourth section, whose position is 0 for text. Those
/// pairs would not rotate; no released model has them, so they are
/// refused rather than half supported.
fn check_rope_sections(arch: &str, sections: &[i64], n_rot: usize) -> Result<()> {
    let key = format!("{arch}.rope.dimension_sections");
    let s: Vec<i64> = sections.iter().copied().chain([0; 4]).take(4).collect();
    if s.iter().any(|&v| v < 0) || s[..3].iter().all(|&v| v == 0) {
        return Err(bad(
            key,
            format!("sections {sections:?}: need non-negative values, one of the first three set"),
        ));
    }
    let sect_dims = s.iter().sum::<i64>();
    for pair in 0..(n_rot / 2) as i64 {
        let sector = pair % sect_dims;
        let text = match sector % 3 {
            1 => sector < 3 * s[1],
            2 => sector < 3 * s[2],
            _ => sector < 3 * s[0],
        };
        if !text {
            return Err(bad(
                key,
                format!(
                    "sections {sections:?} leave rotary pair {pair} of {} to the fourth (vision) section, which this engine does not run",
                    n_rot / 2
                ),
            ));
        }
    }
    Ok(())
}

impl Qwen35 {
    pub(crate) fn load(gguf: &Gguf, arch: &str) -> Result<Qwen35> {
        let meta = Meta { gguf, arch };
        let n_layer_all = meta.u32("block_count")? as usize;
        let n_nextn = meta.u32_or("nextn_predict_layers", 0)? as usize;
        let n_layer = n_layer_all.checked_sub(n_nextn).ok_or_else(|| {
            bad(
                format!("{arch}.nextn_predict_layers"),
                format!("{n_nextn} prediction layers of {n_layer_all} blocks"),
            )
        })?;
        let n_embd = meta.u32("embedding_length")? as usize;
        meta.require("feed_forward_length")?;
        let n_ffs = meta.u32_per_layer("feed_forward_length", n_layer_all, 0)?;
        meta.require("attention.head_count")?;
        let n_heads = meta.u32_per_layer("attention.head_count", n_layer_all, 0)?;
        let n_heads_kv = meta.u32_per_layer_or("attention.head_count_kv", &n_heads)?;
        let n_head0 = n_heads.first().copied().unwrap_or(1).max(1) as usize;
        let head_dim = meta.u32_or("attention.key_length", (n_embd / n_head0) as u32)? as usize;
        let head_dim_v = meta.u32_or("attention.value_length", (n_embd / n_head0) as u32)? as usize;
        if head_dim_v != head_dim {
            return Err(bad(
                format!("{arch}.attention.value_length"),
                format!("value heads of {head_dim_v} and key heads of {head_dim}: must be equal"),
            ));
        }
        let rms_eps = meta.f32("attention.layer_norm_rms_epsilon")?;
        let attn_scale = Some(meta.f32_or("attention.scale", 0.0)?)
            .filter(|&s| s != 0.0)
            .unwrap_or(1.0 / (head_dim as f32).sqrt());
        let n_rot = meta.u32_or("rope.dimension_count", head_dim as u32)? as usize;
        if n_rot > head_dim || !n_rot.is_multiple_of(2) {
            return Err(bad(
                format!("{arch}.rope.dimension_count"),
                format!("{n_rot} rotary dims for heads of {head_dim}"),
            ));
        }
        let sections = meta.i64_array("rope.dimension_sections")?.ok_or_else(|| {
            bad(
                format!("{arch}.rope.dimension_sections"),
                "required key is missing".into(),
            )
        })?;
        check_rope_sections(arch, &sections, n_rot)?;
        let scale = meta.f32_or("rope.scaling.factor", 0.0)?;
        let rope = Rope {
            style: RopeStyle::Neox,
            n_rot,
            freq_base: meta.f32_or("rope.freq_base", 10_000.0)?,
            freq_scale: if scale == 0.0 { 1.0 } else { 1.0 / scale },
        };
        let deltanet = deltanet_dims(&meta, arch)?;
        let recurrent = layer_schedule(&meta, arch, n_layer, n_layer_all)?;

        let experts = if arch == "qwen35moe" {
            Some(expert_config(&meta, arch, &n_ffs, n_layer_all)?)
        } else {
            None
        };

        let n_vocab = super::n_vocab(gguf)?;
        let token_embd = Linear::load(gguf, "token_embd.weight", n_embd, n_vocab)?;
        let output = Linear::load_optional(gguf, "output.weight", n_embd, n_vocab)?
            .unwrap_or_else(|| token_embd.clone());
        let layers = (0..n_layer)
            .map(|il| {
                let name = |t: &str| format!("blk.{il}.{t}.weight");
                let mixer = if recurrent[il] {
                    Mixer::Linear(LinearAttention::load(gguf, il, n_embd, &deltanet)?)
                } else {
                    let (n_head, n_head_kv) = (n_heads[il] as usize, n_heads_kv[il] as usize);
                    if n_head == 0 || n_head_kv == 0 || n_head % n_head_kv != 0 {
                        return Err(bad(
                            format!("{arch}.attention.head_count_kv"),
                            format!(
                                "layer {il}: {n_head} query heads over {n_head_kv} key/value heads"
                            ),
                        ));
                    }
                    let q_width = n_head * head_dim;
                    let kv_width = n_head_kv * head_dim;
                    let [q_gate, k, v] =
                        load_qkv(gguf, il, n_embd, [2 * q_width, kv_width, kv_width])?;
                    Mixer::Full(FullAttention {
                        n_head,
                        n_head_kv,
                        q_gate,
                        k,
                        v,
                        q_norm: load_vector(gguf, &name("attn_q_norm"), head_dim)?,
                        k_norm: load_vector(gguf, &name("attn_k_norm"), head_dim)?,
                        out: Linear::load(gguf, &name("attn_output"), q_width, n_embd)?,
                    })
                };
                let ffn = match &experts {
                    Some((n_expert, n_ff_exp, n_ff_shexp, routing)) => Ffn::Experts {
                        moe: Box::new(MoeFfn::load(
                            gguf, il, n_embd, *n_ff_exp, *n_expert, *routing,
                        )?),
                        shared: SharedExpert {
                            gate_inp: load_vector(gguf, &name("ffn_gate_inp_shexp"), n_embd)?,
                            gate: Linear::load(gguf, &name("ffn_gate_shexp"), n_embd, *n_ff_shexp)?,
                            up: Linear::load(gguf, &name("ffn_up_shexp"), n_embd, *n_ff_shexp)?,
                            down: Linear::load(gguf, &name("ffn_down_shexp"), *n_ff_shexp, n_embd)?,
                        },
                    },
                    None => {
                        let n_ff = n_ffs[il] as usize;
                        Ffn::Dense {
                            gate: Linear::load(gguf, &name("ffn_gate"), n_embd, n_ff)?,
                            up: Linear::load(gguf, &name("ffn_up"), n_embd, n_ff)?,
                            down: Linear::load(gguf, &name("ffn_down"), n_ff, n_embd)?,
                        }
                    }
                };
                Ok(Layer {
                    attn_norm: load_vector(gguf, &name("attn_norm"), n_embd)?,
                    mixer,
                    post_attention_norm: load_vector(gguf, &name("post_attention_norm"), n_embd)?,
                    ffn,
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
                .map(|l| match &l.mixer {
                    Mixer::Full(a) => (a.n_head_kv * head_dim, a.n_head_kv * head_dim),
                    Mixer::Linear(_) => (0, 0),
                })
                .collect(),
            recurrent_state_lens: layers
                .iter()
                .map(|l| match &l.mixer {
                    Mixer::Full(_) => (0, 0),
                    Mixer::Linear(_) => deltanet.state_lens(),
                })
                .collect(),
        };
        Ok(Qwen35 {
            shape,
            rms_eps,
            head_dim,
            attn_scale,
            rope,
            deltanet,
            token_embd,
            output_norm: load_vector(gguf, "output_norm.weight", n_embd)?,
            output,
            layers,
        })
    }

    fn full_attention(
        &self,
        gguf: &Gguf,
        il: usize,
        attn: &FullAttention,
        h: &[f32],
        m: usize,
        slots: &mut [SeqSlot<'_>],
    ) -> Result<Vec<f32>> {
        let hd = self.head_dim;
        let [q_gate, mut k, v] = Linear::apply_all([&attn.q_gate, &attn.k, &attn.v], gguf, h, m)?;
        let q_width = attn.n_head * hd;
        let mut q = Vec::with_capacity(m * q_width);
        let mut gate = Vec::with_capacity(m * q_width);
        for head in q_gate.chunks(2 * hd) {
            q.extend_from_slice(&head[..hd]);
            gate.extend_from_slice(&head[hd..]);
        }
        rms_norm(&mut q, &attn.q_norm, self.rms_eps)?;
        rms_norm(&mut k, &attn.k_norm, self.rms_eps)?;
        let shape = AttentionShape {
            n_head: attn.n_head,
            n_head_kv: attn.n_head_kv,
            head_dim_k: hd,
            head_dim_v: hd,
            window: None,
            softcap: None,
        };
        let mut out = attend(
            il,
            &shape,
            &self.rope,
            self.attn_scale,
            &mut q,
            &mut k,
            &v,
            slots,
        )?;
        for (o, &g) in out.iter_mut().zip(&gate) {
            *o *= 1.0 / (1.0 + (-g).exp());
        }
        attn.out.apply(gguf, &out, m)
    }
}

/// The recurrence's sizes from `ssm.*`.
fn deltanet_dims(meta: &Meta<'_>, arch: &str) -> Result<DeltaNetDims> {
    let d_conv = meta.u32("ssm.conv_kernel")? as usize;
    let d_inner = meta.u32("ssm.inner_size")? as usize;
    let d_state = meta.u32("ssm.state_size")? as usize;
    let n_k_heads = meta.u32("ssm.group_count")? as usize;
    let n_v_heads = meta.u32("ssm.time_step_rank")? as usize;
    if d_conv == 0 || d_state == 0 || n_k_heads == 0 || !n_v_heads.is_multiple_of(n_k_heads) {
        return Err(bad(
            format!("{arch}.ssm.group_count"),
            format!(
                "conv kernel {d_conv}, state {d_state}, {n_k_heads} key heads, {n_v_heads} value heads: need non-zero sizes and value heads a multiple of key heads"
            ),
        ));
    }
    if d_inner != d_state * n_v_heads {
        return Err(bad(
            format!("{arch}.ssm.inner_size"),
            format!(
                "{d_inner} is not {n_v_heads} value heads of {d_state} (value and key heads must be as wide)"
            ),
        ));
    }
    Ok(DeltaNetDims {
        d_conv,
        shape: DeltaNetShape {
            n_k_heads,
            n_v_heads,
            head_dim: d_state,
        },
    })
}

/// Which of the first `n_layer` blocks are linear attention.
fn layer_schedule(
    meta: &Meta<'_>,
    arch: &str,
    n_layer: usize,
    n_layer_all: usize,
) -> Result<Vec<bool>> {
    if let Some(flags) = meta.flag_per_layer("attention.recurrent_layers", n_layer_all)? {
        return Ok(flags[..n_layer].to_vec());
    }
    let interval = meta.u32_or("full_attention_interval", 4)? as usize;
    if interval == 0 {
        return Err(bad(
            format!("{arch}.full_attention_interval"),
            "must be at least 1".into(),
        ));
    }
    Ok((0..n_layer).map(|il| (il + 1) % interval != 0).collect())
}

/// qwen35moe: (experts, expert width, shared expert width, routing).
fn expert_config(
    meta: &Meta<'_>,
    arch: &str,
    n_ffs: &[u32],
    n_layer_all: usize,
) -> Result<(usize, usize, usize, Routing)> {
    let n_expert = meta.u32("expert_count")? as usize;
    let n_used = meta.u32("expert_used_count")? as usize;
    if n_expert == 0 || n_used == 0 || n_used > n_expert {
        return Err(bad(
            format!("{arch}.expert_used_count"),
            format!("{n_used} experts used of {n_expert}: need 0 < used <= count"),
        ));
    }
    let n_ff = n_ffs.first().copied().unwrap_or(0);
    let n_ff_exps = meta.u32_per_layer(
        "expert_feed_forward_length",
        n_layer_all,
        n_ff / n_used as u32,
    )?;
    let n_ff_exp = uniform(&n_ff_exps, &format!("{arch}.expert_feed_forward_length"))? as usize;
    let n_ff_shexp = meta.u32_or("expert_shared_feed_forward_length", n_ff)? as usize;
    let routing = Routing {
        n_expert_used: n_used,
        normalize: true,
        scale: 1.0,
    };
    Ok((n_expert, n_ff_exp, n_ff_shexp, routing))
}

impl Architecture for Qwen35 {
    fn shape(&self) -> &ModelShape {
        &self.shape
    }

    fn embed(&self, gguf: &Gguf, tokens: &[u32], out: &mut [f32]) -> Result<()> {
        embed_rows(&self.token_embd.view(gguf), tokens, out)?;
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
        let mixed = match &layer.mixer {
            Mixer::Linear(lin) => {
                lin.apply(gguf, il, &self.deltanet, self.rms_eps, &h, m, slots)?
            }
            Mixer::Full(attn) => self.full_attention(gguf, il, attn, &h, m, slots)?,
        };
        add_in_place(x, &mixed)?;

        let mut h = x.to_vec();
        rms_norm(&mut h, &layer.post_attention_norm, self.rms_eps)?;
        let ffn_out = match &layer.ffn {
            Ffn::Dense { gate, up, down } => swiglu(gguf, gate, up, down, &h, m)?,
            Ffn::Experts { moe, shared } => {
                let mut out = moe.apply(gguf, &h, m)?;
                let shared_out = swiglu(gguf, &shared.gate, &shared.up, &shared.down, &h, m)?;
                let d = self.shape.n_embd;
                for ((o, s), row) in out.chunks_mut(d).zip(shared_out.chunks(d)).zip(h.chunks(d)) {
                    let logit = crate::ops::matmul::dot_f32(row, &shared.gate_inp);
                    let weight = 1.0 / (1.0 + (-logit).exp());
                    for (a, &b) in o.iter_mut().zip(s) {
                        *a += b * weight;
                    }
                }
                out
            }
        };
        add_in_place(x, &ffn_out)?;
        Ok(())
    }

    fn logits(&self, gguf: &Gguf, x: &mut [f32], m: usize) -> Result<Vec<f32>> {
        rms_norm(x, &self.output_norm, self.rms_eps)?;
        self.output.apply(gguf, x, m)
    }
}

/// `down(silu(gate x) * up x)`.
fn swiglu(
    gguf: &Gguf,
    gate: &Linear,
    up: &Linear,
    down: &Linear,
    h: &[f32],
    m: usize,
) -> Result<Vec<f32>> {
    let [mut g, u] = Linear::apply_all([gate, up], gguf, h, m)?;
    rows::swiglu(&mut g, &u)?;
    down.apply(gguf, &g, m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn released_section_layouts_rotate_every_pair_by_the_position() {
        // Qwen3.5: 64 rotary dims in sections [11, 11, 10, 0].
        check_rope_sections("qwen35", &[11, 11, 10, 0], 64).unwrap();
        check_rope_sections("qwen35", &[2, 1, 1, 0], 8).unwrap();
    }

    #[test]
    fn sections_that_reach_the_fourth_position_are_refused() {
        // Sector 3 of [1, 1, 1, 1] goes to the extra (vision) position.
        let err = check_rope_sections("qwen35", &[1, 1, 1, 1], 8)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("rope.dimension_sections") && err.contains("pair 3"),
            "{err}"
        );
        let err = check_rope_sections("qwen35", &[0, 0, 0, 4], 8)
            .unwrap_err()
            .to_string();
        assert!(err.contains("one of the first three"), "{err}");
    }
}
