#!/usr/bin/env python3
"""Writes small valid GGUF files into fuzz/seeds/ as a starting corpus for
the gguf_reader fuzz target (gguf-py's writer, so the seeds are not made by
the code under test).

    pip install gguf==0.19.0 numpy
    python3 scripts/gen_fuzz_seeds.py
"""
import pathlib

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T, quants

OUT = pathlib.Path(__file__).resolve().parent.parent / "fuzz/seeds/gguf_reader"
OUT.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(7)


def write(name, arch, fill):
    path = OUT / name
    w = gguf.GGUFWriter(str(path), arch)
    fill(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def small(w):
    w.add_block_count(2)
    w.add_uint8("t.u8", 7)
    w.add_int16("t.i16", -3)
    w.add_float64("t.f64", 0.25)
    w.add_bool("t.b", True)
    w.add_string("t.s", "héllo")
    w.add_array("t.arr", [1, 2, 3])
    w.add_array("t.strs", ["a", "bc"])
    w.add_array("t.nested", [[1, 2], [3]])
    w.add_tensor("f32", rng.standard_normal((2, 8)).astype(np.float32))
    w.add_tensor("f16", rng.standard_normal(16).astype(np.float16))


def quantized(w):
    w.add_custom_alignment(64)
    for qt in (T.Q8_0, T.Q4_0, T.TQ2_0, T.MXFP4):
        block_len = gguf.GGML_QUANT_SIZES[qt][0]
        row = max(block_len, 32)
        data = quants.quantize(rng.standard_normal((1, row)).astype(np.float32), qt)
        w.add_tensor(f"w.{qt.name}", data, raw_dtype=qt)
    q4k = rng.integers(0, 256, size=(1, 144), dtype=np.uint8)
    w.add_tensor("w.q4k", q4k, raw_dtype=T.Q4_K)


def empty(w):
    pass


write("small.gguf", "llama", small)
write("quantized.gguf", "gemma3", quantized)
write("empty.gguf", "gpt2", empty)
print("wrote", sorted(p.name for p in OUT.iterdir()))
