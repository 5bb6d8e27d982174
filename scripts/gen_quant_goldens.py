#!/usr/bin/env python3
"""Writes tests/golden/quant/dequant.json: for every ggml quant type, a few
blocks and what gguf-py's numpy code dequantizes them to (f32 bits).

Where gguf-py can quantize a type, the blocks are gguf-py's quantization
of seeded random data and the input floats are kept, so the Rust test also
checks that Phobos's quantizer reproduces gguf-py's bytes. Where it cannot,
the blocks are seeded random bytes with the scale fields set to finite
values (every bit pattern of the other fields is a valid block).

Q1_0, Q8_1 and Q8_K are not in gguf-py; their goldens come from llama.cpp's
own C code, in tests/golden/quant/ggml.json (scripts/gen_ggml_quant_goldens.py).

    pip install gguf==0.19.0 numpy
    python3 scripts/gen_quant_goldens.py
"""
import importlib.metadata
import json
import pathlib

import numpy as np
from gguf import GGMLQuantizationType as T, GGML_QUANT_SIZES, quants

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests/golden/quant/dequant.json"
rng = np.random.default_rng(20261129)


def random_rows(n_blocks, block_len):
    # Per-block scales spanning a few decades, like real weights and activations.
    scale = np.exp(rng.normal(0, 1.5, size=(n_blocks, 1))).astype(np.float32)
    x = (rng.standard_normal((n_blocks, block_len)) * scale).astype(np.float32)
    return x


def edge_rows(block_len):
    rows = [np.zeros(block_len, np.float32)]
    # Levels exactly halfway between integers after scaling by 127/amax, so
    # round-half-away-from-zero and round-half-even disagree.
    halves = (np.arange(block_len) % 9 - 4 + 0.5).astype(np.float32)
    halves[0] = 127.0
    rows.append(halves)
    rows.append(-halves)
    return np.stack(rows)


def f16_bits(values):
    return np.asarray(values, np.float32).astype(np.float16).view(np.uint16)


def random_blocks(qtype, n_blocks):
    block_len, block_bytes = GGML_QUANT_SIZES[qtype]
    b = rng.integers(0, 256, size=(n_blocks, block_bytes), dtype=np.uint8)

    def set_f16(offset, lo=1e-3, hi=1.0):
        vals = rng.uniform(lo, hi, size=n_blocks) * rng.choice([-1, 1], size=n_blocks)
        b[:, offset:offset + 2] = f16_bits(vals).reshape(n_blocks, 1).view(np.uint8).reshape(n_blocks, 2)

    if qtype == T.Q2_K:
        set_f16(80); set_f16(82)
    elif qtype == T.Q3_K:
        set_f16(108)
    elif qtype in (T.Q4_K, T.Q5_K):
        set_f16(0); set_f16(2)
    elif qtype == T.Q6_K:
        set_f16(208)
    elif qtype in (T.IQ2_XXS, T.IQ2_XS, T.IQ2_S, T.IQ3_XXS, T.IQ3_S, T.IQ1_S, T.IQ4_XS):
        set_f16(0)
    elif qtype == T.IQ1_M:
        # The f16 super-scale lives in the top nibble of each of the four
        # scale words (bytes 48..56).
        d = f16_bits(rng.uniform(1e-3, 1.0, size=n_blocks))
        words = b[:, 48:56].copy().view(np.uint16).reshape(n_blocks, 4)
        for i, shift in enumerate((12, 8, 4, 0)):
            nib = ((d >> (4 * i)) & 0xF).astype(np.uint16)
            words[:, i] = (words[:, i] & 0x0FFF) | (nib << 12)
        b[:, 48:56] = words.view(np.uint8).reshape(n_blocks, 8)
    elif qtype == T.NVFP4:
        # E4M3 scale bytes: avoid nothing; 0x7F and 0 both decode to 0.
        pass
    return b


def hexs(a):
    return np.ascontiguousarray(a).tobytes().hex()


def case(qtype, source, blocks, values, inputs=None):
    return {
        "type": qtype.name,
        "source": source,
        "input_f32": None if inputs is None else hexs(inputs.astype("<f4")),
        "blocks": hexs(blocks),
        "dequant_f32": hexs(np.asarray(values, "<f4")),
    }


GGUF_PY_QUANTIZES = [T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0,
                     T.TQ1_0, T.TQ2_0, T.MXFP4]
RANDOM_BYTES = [T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.IQ2_XXS, T.IQ2_XS,
                T.IQ2_S, T.IQ3_XXS, T.IQ3_S, T.IQ1_S, T.IQ1_M, T.IQ4_NL,
                T.IQ4_XS, T.NVFP4]

cases = []
for qtype in GGUF_PY_QUANTIZES:
    block_len, _ = GGML_QUANT_SIZES[qtype]
    row_len = max(block_len, 32)
    n_rows = 6 if row_len == 32 else 2
    x = np.concatenate([random_rows(n_rows, row_len), edge_rows(row_len)])
    blocks = quants.quantize(x, qtype)
    values = quants.dequantize(blocks, qtype)
    cases.append(case(qtype, "gguf-py quantize + dequantize", blocks, values, x))
for qtype in RANDOM_BYTES:
    block_len, _ = GGML_QUANT_SIZES[qtype]
    n_blocks = 6 if block_len <= 64 else 3
    blocks = random_blocks(qtype, n_blocks)
    values = quants.dequantize(blocks, qtype)
    cases.append(case(qtype, "random blocks, gguf-py dequantize", blocks, values))


doc = {
    "generated_by": "python3 scripts/gen_quant_goldens.py",
    "gguf_version": importlib.metadata.version("gguf"),
    "numpy_version": np.__version__,
    "cases": cases,
}
OUT.parent.mkdir(parents=True, exist_ok=True)
OUT.write_text(json.dumps(doc, indent=1) + "\n")
print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(cases)} cases)")
