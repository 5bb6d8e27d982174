#!/usr/bin/env python3
"""Tiny random-weight models of every architecture phobos runs (qwen35 and
qwen35moe with one gated-DeltaNet and one full-attention layer), and what
llama.cpp computes on them (tests/golden/arch/, read by phobos-models/tests/engine_archs.rs).

For each architecture this writes:

- `<arch>.skeleton.gguf`: the model without its vocabulary-sized parts: the
  arch's exact metadata and every layer tensor (fixed seed; weights in a mix
  of F32, F16, Q8_0 and Q4_K), plus `phobos.test.*` keys naming the
  llama.cpp vocab file (models/llama-vocabs/ggml-vocab-NAME.gguf) and the
  seeds of the embedding (and, when untied, output) matrix;
- `<arch>.json`: the prompts, their token ids, 32 greedy steps (argmax and
  the gap between the two largest logits) and a checksum of the generated
  embedding;
- `<arch>.logits.bin`: llama.cpp's full logits (little-endian f32) at the
  first and last position of each prompt, in prompt order.

The full model (skeleton + tokenizer.* keys of the vocab file + the
generated F16 embedding) is rebuilt by the test with the project's GGUF
writer, so only the small skeleton is committed. The embedding element at
flat index i (row-major [n_vocab][n_embd]) is `splitmix64(seed + (i + 1) *
0x9E3779B97F4A7C15)`'s top 24 bits mapped to [-1, 1) times 0.5, rounded to
F16 (every step exact in f32, so both sides agree bit for bit).

usage: scripts/gen_arch_goldens.py [--harness BIN] [--arch NAME ...]
The harness is scripts/arch_golden_harness.c built against libllama:
  gcc -O2 -o /var/tmp/arch_golden_harness scripts/arch_golden_harness.c \
      -I$LCP/include -I$LCP/ggml/include -L/tmp/lcp/build/bin \
      -lllama -lggml -lggml-base -Wl,-rpath,/tmp/lcp/build/bin
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import gguf
from gguf import GGMLQuantizationType as QT
from gguf import GGUFValueType as VT

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "golden", "arch")
N_PREDICT = 32
PROMPTS = [
    "The quick brown fox jumps over the lazy dog. 1234",
    "Hello",
]
EMBD_AMPLITUDE = 0.5
GOLDEN_RATIO_64 = 0x9E3779B97F4A7C15


def generated_matrix_f16(seed: int, n_rows: int, n_cols: int) -> np.ndarray:
    """The embedding/output generator shared with the Rust test."""
    with np.errstate(over="ignore"):
        i = np.arange(1, n_rows * n_cols + 1, dtype=np.uint64)
        z = np.uint64(seed) + i * np.uint64(GOLDEN_RATIO_64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    top24 = (z >> np.uint64(40)).astype(np.float32)
    values = (top24 / np.float32(1 << 24) * np.float32(2.0) - np.float32(1.0)) * np.float32(EMBD_AMPLITUDE)
    return values.astype(np.float16).reshape(n_rows, n_cols)


def quantize_q4_k(values: np.ndarray) -> np.ndarray:
    """A plain Q4_K quantizer (per 32-value sub-block min and scale, 6-bit
    super-block codes); any valid Q4_K bytes do for a random model."""
    rows, cols = values.shape
    blocks = values.reshape(-1, 8, 32).astype(np.float32)
    lo = np.minimum(blocks.min(axis=2), 0.0)
    hi = blocks.max(axis=2)
    scale = np.maximum((hi - lo) / 15.0, 1e-8)
    mins = -lo
    d = (scale.max(axis=1) / 63.0).astype(np.float16)
    dmin = (mins.max(axis=1) / 63.0).astype(np.float16)
    d32 = np.maximum(d.astype(np.float32), 1e-8)[:, None]
    dmin32 = np.maximum(dmin.astype(np.float32), 1e-8)[:, None]
    sc = np.clip(np.rint(scale / d32), 1, 63).astype(np.uint8)
    m = np.clip(np.rint(mins / dmin32), 0, 63).astype(np.uint8)
    eff_scale = d32 * sc
    eff_min = dmin32 * m
    q = np.clip(np.rint((blocks + eff_min[:, :, None]) / eff_scale[:, :, None]), 0, 15).astype(np.uint8)
    n = blocks.shape[0]
    packed = np.zeros((n, 12), dtype=np.uint8)
    packed[:, 0:4] = (sc[:, 0:4] & 63) | ((sc[:, 4:8] >> 4) << 6)
    packed[:, 4:8] = (m[:, 0:4] & 63) | ((m[:, 4:8] >> 4) << 6)
    packed[:, 8:12] = (sc[:, 4:8] & 15) | ((m[:, 4:8] & 15) << 4)
    qs = np.zeros((n, 4, 32), dtype=np.uint8)
    for pair in range(4):
        qs[:, pair, :] = q[:, 2 * pair, :] | (q[:, 2 * pair + 1, :] << 4)
    out = np.concatenate(
        [d.view(np.uint8).reshape(n, 2), dmin.view(np.uint8).reshape(n, 2), packed, qs.reshape(n, 128)], axis=1
    )
    out = out.reshape(rows, cols // 256 * 144)
    back = gguf.quants.dequantize(out, QT.Q4_K)
    assert np.abs(back - values).max() < 0.5 * np.abs(values).max(), "Q4_K quantizer is broken"
    return out


class Tensors:
    """Collects (name, array, raw dtype) in ggml's naming, numpy order."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.items = []

    def matrix(self, name, rows, cols, qtype, n_expert=None):
        shape = (rows, cols) if n_expert is None else (n_expert, rows, cols)
        values = self.rng.uniform(-1.0, 1.0, size=shape).astype(np.float32) * np.float32(np.sqrt(3.0 / cols))
        flat = values.reshape(-1, cols)
        if qtype == QT.F32:
            data = values
        elif qtype == QT.F16:
            data = values.astype(np.float16)
        elif qtype == QT.Q8_0:
            data = gguf.quants.quantize(flat, QT.Q8_0).reshape(shape[:-1] + (-1,))
        elif qtype == QT.Q4_K:
            data = quantize_q4_k(flat).reshape(shape[:-1] + (-1,))
        else:
            raise ValueError(qtype)
        self.items.append((name, data, qtype))

    def vector(self, name, length, center=1.0, spread=0.2):
        values = center + self.rng.uniform(-spread, spread, size=(length,)).astype(np.float32)
        self.items.append((name, values.astype(np.float32), QT.F32))


# Per-layer weight formats: cycled so every format meets every role.
FORMATS = [
    {"q": QT.Q8_0, "k": QT.F16, "v": QT.F32, "o": QT.Q8_0, "gate": QT.Q8_0, "up": QT.F16, "down": QT.Q4_K},
    {"q": QT.F16, "k": QT.Q8_0, "v": QT.Q8_0, "o": QT.F16, "gate": QT.F32, "up": QT.Q8_0, "down": QT.Q4_K},
]

N_EMBD = 64
N_FF = 256  # Q4_K needs 256-wide rows: the down projections use it.


def spec(arch):
    """Metadata and shape choices per architecture."""
    base = {
        "n_layer": 2,
        "n_head": 4,
        "n_head_kv": 2,
        "head_dim": 16,
        "eps": 1e-6,
        "rope_base": 1e6,
        "untied_output": False,
        "biases": False,
        "qk_norm": False,
        "moe": None,
        "extra": {},
    }
    if arch == "llama":
        # rope.freq_base absent: llama.cpp's default 10000.
        return {**base, "vocab": "llama-spm", "eps": 1e-5, "rope_base": None, "untied_output": True}
    if arch == "qwen2":
        return {**base, "vocab": "qwen2", "biases": True}
    if arch == "qwen3":
        # Head dim 32 with 4 heads: Q is wider than the model (as in Qwen3).
        return {**base, "vocab": "gpt-2", "qk_norm": True, "head_dim": 32, "key_length": True}
    if arch == "qwen3moe":
        return {
            **base,
            "vocab": "gpt-2",
            "qk_norm": True,
            "untied_output": True,
            "moe": {"n_expert": 8, "n_used": 2, "n_ff_exp": 256},
        }
    if arch == "minicpm":
        # embedding_scale and logit_scale absent: defaults 12 and 256/n_embd.
        # Untied: with tied weights the scaled embedding makes every token
        # predict itself.
        return {
            **base,
            "vocab": "llama-spm",
            "eps": 1e-5,
            "rope_base": 10000.0,
            "untied_output": True,
            "extra": {"residual_scale": 1.5},
        }
    if arch == "gemma3":
        # Layer 0 local (window 4, its own RoPE base), layer 1 global;
        # logits soft-capped. Any real vocab serves the numerics.
        return {
            **base,
            "vocab": "llama-spm",
            "qk_norm": True,
            "post_norms": True,
            "untied_output": True,
            "extra": {"final_logit_softcapping": 15.0, "rope.freq_base_swa": 10000.0},
            "extra_u32": {"attention.sliding_window": 4, "attention.sliding_window_pattern": 2},
        }
    if arch in ("qwen35", "qwen35moe"):
        # Layer 0 gated DeltaNet (2 key heads, 4 value heads of 16, conv
        # kernel 4), layer 1 gated full attention (Q/K norms, interleaved
        # multi-section RoPE over 8 of 16 dims).
        deltanet = {"d_conv": 4, "d_state": 16, "n_group": 2, "dt_rank": 4}
        moe = {"n_expert": 8, "n_used": 2, "n_ff_exp": 256, "n_ff_shexp": 256} if arch == "qwen35moe" else None
        return {
            **base,
            "vocab": "gpt-2",
            "qk_norm": True,
            "untied_output": True,
            "deltanet": deltanet,
            "moe": moe,
            "n_rot": 8,
            "extra_u32": {"full_attention_interval": 2},
        }
    raise ValueError(arch)


ARCHES = ["llama", "qwen2", "qwen3", "qwen3moe", "minicpm", "gemma3", "qwen35", "qwen35moe"]


def arch_seed(arch: str) -> int:
    return sum((i + 1) * ord(c) for i, c in enumerate(arch)) + 1000


def build_tensors(arch, s):
    t = Tensors(arch_seed(arch))
    n_head, n_kv, hd = s["n_head"], s["n_head_kv"], s["head_dim"]
    dn = s.get("deltanet")
    for il in range(s["n_layer"]):
        f = FORMATS[il % len(FORMATS)]
        p = f"blk.{il}."
        t.vector(p + "attn_norm.weight", N_EMBD)
        if dn:
            build_qwen35_block(t, p, il, s, f)
            continue
        t.matrix(p + "attn_q.weight", n_head * hd, N_EMBD, f["q"])
        t.matrix(p + "attn_k.weight", n_kv * hd, N_EMBD, f["k"])
        t.matrix(p + "attn_v.weight", n_kv * hd, N_EMBD, f["v"])
        if s["biases"]:
            t.vector(p + "attn_q.bias", n_head * hd, 0.0, 0.5)
            t.vector(p + "attn_k.bias", n_kv * hd, 0.0, 0.5)
            t.vector(p + "attn_v.bias", n_kv * hd, 0.0, 0.5)
        if s["qk_norm"]:
            t.vector(p + "attn_q_norm.weight", hd)
            t.vector(p + "attn_k_norm.weight", hd)
        t.matrix(p + "attn_output.weight", N_EMBD, n_head * hd, f["o"])
        if s.get("post_norms"):
            t.vector(p + "post_attention_norm.weight", N_EMBD)
            t.vector(p + "post_ffw_norm.weight", N_EMBD)
        t.vector(p + "ffn_norm.weight", N_EMBD)
        moe = s["moe"]
        if moe:
            ne, nf = moe["n_expert"], moe["n_ff_exp"]
            t.matrix(p + "ffn_gate_inp.weight", ne, N_EMBD, QT.F32)
            t.matrix(p + "ffn_gate_exps.weight", nf, N_EMBD, f["gate"], n_expert=ne)
            t.matrix(p + "ffn_up_exps.weight", nf, N_EMBD, f["up"], n_expert=ne)
            t.matrix(p + "ffn_down_exps.weight", N_EMBD, nf, f["down"], n_expert=ne)
        else:
            t.matrix(p + "ffn_gate.weight", N_FF, N_EMBD, f["gate"])
            t.matrix(p + "ffn_up.weight", N_FF, N_EMBD, f["up"])
            t.matrix(p + "ffn_down.weight", N_EMBD, N_FF, f["down"])
    t.vector("output_norm.weight", N_EMBD)
    return t.items


def build_qwen35_block(t, p, il, s, f):
    """qwen35/qwen35moe: DeltaNet on layers with (il + 1) % 2 != 0, gated
    attention on the others; post_attention_norm is the FFN's pre-norm."""
    dn = s["deltanet"]
    n_head, n_kv, hd = s["n_head"], s["n_head_kv"], s["head_dim"]
    if (il + 1) % s["extra_u32"]["full_attention_interval"] != 0:
        key_dim = dn["d_state"] * dn["n_group"]
        value_dim = dn["d_state"] * dn["dt_rank"]
        t.matrix(p + "attn_qkv.weight", 2 * key_dim + value_dim, N_EMBD, f["q"])
        t.matrix(p + "attn_gate.weight", value_dim, N_EMBD, f["k"])
        t.matrix(p + "ssm_conv1d.weight", 2 * key_dim + value_dim, dn["d_conv"], QT.F32)
        t.vector(p + "ssm_dt.bias", dn["dt_rank"], 0.0, 0.5)
        # ssm_a holds -exp(A_log): negative decay rates.
        t.items.append((p + "ssm_a", (-np.exp(t.rng.uniform(-1.0, 0.5, size=(dn["dt_rank"],)))).astype(np.float32), QT.F32))
        t.matrix(p + "ssm_beta.weight", dn["dt_rank"], N_EMBD, QT.F32)
        t.matrix(p + "ssm_alpha.weight", dn["dt_rank"], N_EMBD, QT.F32)
        t.vector(p + "ssm_norm.weight", dn["d_state"])
        t.matrix(p + "ssm_out.weight", N_EMBD, value_dim, f["o"])
    else:
        # Q carries the output gate: 2 * heads * head_dim rows.
        t.matrix(p + "attn_q.weight", 2 * n_head * hd, N_EMBD, f["q"])
        t.matrix(p + "attn_k.weight", n_kv * hd, N_EMBD, f["k"])
        t.matrix(p + "attn_v.weight", n_kv * hd, N_EMBD, f["v"])
        t.vector(p + "attn_q_norm.weight", hd)
        t.vector(p + "attn_k_norm.weight", hd)
        t.matrix(p + "attn_output.weight", N_EMBD, n_head * hd, f["o"])
    t.vector(p + "post_attention_norm.weight", N_EMBD)
    moe = s["moe"]
    if moe:
        ne, nf, ns = moe["n_expert"], moe["n_ff_exp"], moe["n_ff_shexp"]
        t.matrix(p + "ffn_gate_inp.weight", ne, N_EMBD, QT.F32)
        t.matrix(p + "ffn_gate_exps.weight", nf, N_EMBD, f["gate"], n_expert=ne)
        t.matrix(p + "ffn_up_exps.weight", nf, N_EMBD, f["up"], n_expert=ne)
        t.matrix(p + "ffn_down_exps.weight", N_EMBD, nf, f["down"], n_expert=ne)
        t.vector(p + "ffn_gate_inp_shexp.weight", N_EMBD, 0.0, 0.3)
        t.matrix(p + "ffn_gate_shexp.weight", ns, N_EMBD, f["gate"])
        t.matrix(p + "ffn_up_shexp.weight", ns, N_EMBD, f["up"])
        t.matrix(p + "ffn_down_shexp.weight", N_EMBD, ns, f["down"])
    else:
        t.matrix(p + "ffn_gate.weight", N_FF, N_EMBD, f["gate"])
        t.matrix(p + "ffn_up.weight", N_FF, N_EMBD, f["up"])
        t.matrix(p + "ffn_down.weight", N_EMBD, N_FF, f["down"])


def add_metadata(w, arch, s):
    w.add_string("general.name", f"phobos tiny {arch}")
    k = lambda suffix: f"{arch}.{suffix}"  # noqa: E731
    w.add_uint32(k("block_count"), s["n_layer"])
    w.add_uint32(k("context_length"), 4096)
    w.add_uint32(k("embedding_length"), N_EMBD)
    w.add_uint32(k("feed_forward_length"), N_FF)
    w.add_uint32(k("attention.head_count"), s["n_head"])
    w.add_uint32(k("attention.head_count_kv"), s["n_head_kv"])
    w.add_float32(k("attention.layer_norm_rms_epsilon"), s["eps"])
    if s.get("key_length"):
        w.add_uint32(k("attention.key_length"), s["head_dim"])
        w.add_uint32(k("attention.value_length"), s["head_dim"])
    if s["rope_base"] is not None:
        w.add_float32(k("rope.freq_base"), s["rope_base"])
    dn = s.get("deltanet")
    if dn:
        w.add_uint32(k("rope.dimension_count"), s["n_rot"])
        sections = [s["n_rot"] // 4, s["n_rot"] // 8, s["n_rot"] // 8, 0]
        w.add_array(k("rope.dimension_sections"), sections)
        w.add_uint32(k("ssm.conv_kernel"), dn["d_conv"])
        w.add_uint32(k("ssm.state_size"), dn["d_state"])
        w.add_uint32(k("ssm.group_count"), dn["n_group"])
        w.add_uint32(k("ssm.time_step_rank"), dn["dt_rank"])
        w.add_uint32(k("ssm.inner_size"), dn["d_state"] * dn["dt_rank"])
    if s["moe"] and "n_ff_shexp" in s["moe"]:
        w.add_uint32(k("expert_shared_feed_forward_length"), s["moe"]["n_ff_shexp"])
    if s["moe"]:
        w.add_uint32(k("expert_count"), s["moe"]["n_expert"])
        w.add_uint32(k("expert_used_count"), s["moe"]["n_used"])
        w.add_uint32(k("expert_feed_forward_length"), s["moe"]["n_ff_exp"])
    for key, value in s["extra"].items():
        w.add_float32(k(key), value)
    for key, value in s.get("extra_u32", {}).items():
        w.add_uint32(k(key), value)


def add_tensor(w, name, data, qtype):
    if qtype in (QT.F32, QT.F16):
        w.add_tensor(name, data)
    else:
        w.add_tensor(name, data, raw_shape=data.shape, raw_dtype=qtype)


def vocab_path(name):
    return os.path.join(ROOT, "models", "llama-vocabs", f"ggml-vocab-{name}.gguf")


def copy_tokenizer(w, vocab_file):
    reader = gguf.GGUFReader(vocab_file)
    n_vocab = None
    for key, field in reader.fields.items():
        if not key.startswith("tokenizer."):
            continue
        main = field.types[0]
        value = field.contents()
        if main == VT.ARRAY:
            w.add_key_value(key, value, main, sub_type=field.types[-1])
        else:
            w.add_key_value(key, value, main)
        if key == "tokenizer.ggml.tokens":
            n_vocab = len(value)
    return n_vocab


def write_models(arch, s, skeleton_path, full_path):
    items = build_tensors(arch, s)
    embd_seed = arch_seed(arch) * 7 + 1
    output_seed = arch_seed(arch) * 7 + 2 if s["untied_output"] else None

    sk = gguf.GGUFWriter(skeleton_path, arch)
    add_metadata(sk, arch, s)
    sk.add_string("phobos.test.vocab", s["vocab"])
    sk.add_uint64("phobos.test.embd_seed", embd_seed)
    if output_seed is not None:
        sk.add_uint64("phobos.test.output_seed", output_seed)
    for name, data, qtype in items:
        add_tensor(sk, name, data, qtype)
    sk.write_header_to_file()
    sk.write_kv_data_to_file()
    sk.write_tensors_to_file()
    sk.close()

    full = gguf.GGUFWriter(full_path, arch)
    add_metadata(full, arch, s)
    n_vocab = copy_tokenizer(full, vocab_path(s["vocab"]))
    embd = generated_matrix_f16(embd_seed, n_vocab, N_EMBD)
    full.add_tensor("token_embd.weight", embd)
    if output_seed is not None:
        full.add_tensor("output.weight", generated_matrix_f16(output_seed, n_vocab, N_EMBD))
    for name, data, qtype in items:
        add_tensor(full, name, data, qtype)
    full.write_header_to_file()
    full.write_kv_data_to_file()
    full.write_tensors_to_file()
    full.close()
    checksum = {
        "embd_sum": float(embd.astype(np.float64).sum()),
        "embd_first_bits": [int(x) for x in embd.reshape(-1)[:8].view(np.uint16)],
        "embd_last_bits": [int(x) for x in embd.reshape(-1)[-8:].view(np.uint16)],
    }
    return n_vocab, checksum


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--harness", default="/var/tmp/arch_golden_harness")
    ap.add_argument("--arch", action="append")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    for arch in args.arch or ARCHES:
        s = spec(arch)
        skeleton = os.path.join(OUT, f"{arch}.skeleton.gguf")
        with tempfile.TemporaryDirectory() as tmp:
            full = os.path.join(tmp, f"{arch}.gguf")
            n_vocab, checksum = write_models(arch, s, skeleton, full)
            logits_path = os.path.join(OUT, f"{arch}.logits.bin")
            run = subprocess.run(
                [args.harness, full, logits_path, str(N_PREDICT), *PROMPTS],
                check=True,
                capture_output=True,
                text=True,
            )
        lines = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
        record = {
            "command": "made by scripts/gen_arch_goldens.py (llama.cpp via scripts/arch_golden_harness.c, libllama of /tmp/lcp/build)",
            "arch": arch,
            "vocab": s["vocab"],
            "n_vocab": n_vocab,
            "n_embd": N_EMBD,
            "embd_amplitude": EMBD_AMPLITUDE,
            **checksum,
            "logits_file": f"{arch}.logits.bin",
            "logits_rows": "first and last position of each prompt, little-endian f32",
            "prompts": [
                {
                    "text": text,
                    "prompt_ids": line["prompt_ids"],
                    "greedy_ids": [g[0] for g in line["generated"]],
                    "greedy_gaps": [g[1] for g in line["generated"]],
                }
                for text, line in zip(PROMPTS, lines)
            ],
        }
        with open(os.path.join(OUT, f"{arch}.json"), "w") as f:
            json.dump(record, f, indent=1)
            f.write("\n")
        print(f"{arch}: vocab {s['vocab']} ({n_vocab}), skeleton {os.path.getsize(skeleton)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
